#!/usr/bin/env bash
# Loads the console's overview (/ui/) from a running `facet serve` in Debian's
# headless Chromium and checks the DOM its scripts built: authorities, an
# accepted object, a rejected one with its reason, one whose previous revision
# keeps serving, and a file that does not parse with file:line:column. Saves
# a screenshot as OUT_DIR/overview.png. With the overview open (live_update.js,
# the DevTools protocol), a rejected edit must show within 2 s without a
# reload (OUT_DIR/overview-live.png). Then, with a real gRPC xDS client
# connected, loads the clients page (/ui/clients) and checks that the client's
# resources name the object and variant that served them (OUT_DIR/clients.png),
# and the explain page (/ui/explain) for env=prod, version=v2 draws the graph
# with boxes labelled by object and variant, the route's edges by their rule
# and weight share (90 % and 10 %), within a 1280 px window
# (OUT_DIR/explain.png). Last, a
# check in Debian's Firefox ESR (headless, WebDriver BiDi): each page's
# scripts draw what they read, and its screenshot (OUT_DIR/firefox-*.png) is
# not blank.
#
# Usage: console_browser_test.sh FACET_BINARY SOURCE_DIR OUT_DIR CPP_CLIENT_BINARY
set -u
facet=$1
source_dir=$2
out_dir=$3
cpp_client=$4
browser=${FACET_BROWSER:-$(command -v chromium-headless-shell || true)}
if [[ -z ${browser} ]]; then
  echo "FAIL: chromium-headless-shell not found (scripts/setup.sh installs it)"
  exit 1
fi
mkdir -p "${out_dir}"
work=$(mktemp -d)
serve=
client=
cleanup() {
  [[ -n ${client} ]] && kill -TERM "${client}" 2>/dev/null && wait "${client}" 2>/dev/null
  [[ -n ${serve} ]] && kill -TERM "${serve}" 2>/dev/null && wait "${serve}" 2>/dev/null
  rm -rf "${work}"
}
trap cleanup EXIT

manifests=${work}/manifests
mkdir "${manifests}"
cp "${source_dir}"/examples/00-authorities.yaml "${source_dir}"/examples/10-old-style.yaml \
  "${source_dir}"/examples/20-authority-a.yaml "${source_dir}"/examples/30-authority-b.yaml \
  "${manifests}/"
cluster() {  # cluster NAME LB_POLICY: an EDS cluster and its endpoints
  printf 'apiVersion: facet.dev/v1alpha1\nkind: XdsResource\nmetadata:\n  name: %s\n  namespace: demo\nspec:\n  type: cluster\n  name: %s\n  variants:\n  - resource:\n      type: EDS\n      eds_cluster_config:\n        eds_config: {ads: {}, resource_api_version: V3}\n      lb_policy: %s\n' \
    "$1" "$1" "$2"
  printf -- '---\napiVersion: facet.dev/v1alpha1\nkind: XdsResource\nmetadata:\n  name: %s-endpoints\n  namespace: demo\nspec:\n  type: endpoint\n  name: %s\n  variants:\n  - resource:\n      endpoints:\n      - lb_endpoints:\n        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 9}}}\n' \
    "$1" "$1"
}
cluster rejected-cluster ROUND_ROBBIN >"${manifests}/60-rejected.yaml"
cluster edited-cluster ROUND_ROBIN >"${manifests}/70-edited.yaml"
cluster live-cluster ROUND_ROBIN >"${manifests}/80-live.yaml"
cluster live-cluster ROUND_ROBBIN >"${work}/80-live-rejected.yaml"
# A listener whose route has no virtual host for its name: valid, served, and
# broken for every client (the explain page's broken edge).
cat >"${manifests}/90-no-host.yaml" <<'YAML'
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: no-host-listener, namespace: demo}
spec:
  type: listener
  name: no-host
  variants:
  - resource:
      api_listener:
        api_listener:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          rds: {config_source: {ads: {}, resource_api_version: V3}, route_config_name: no-host}
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
---
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: no-host-routes, namespace: demo}
spec:
  type: route
  name: no-host
  variants:
  - resource:
      virtual_hosts:
      - name: elsewhere
        domains: [elsewhere]
        routes:
        - match: {prefix: ""}
          route: {cluster: greeter-prod}
YAML

"${facet}" serve --manifests "${manifests}" --xds-address 127.0.0.1:0 \
  --admin-address 127.0.0.1:0 --ready-file "${work}/ready" >"${work}/stdout" 2>"${work}/stderr" &
serve=$!
for _ in $(seq 1 300); do
  [[ -s ${work}/ready ]] && break
  sleep 0.1
done
if [[ ! -s ${work}/ready ]]; then
  echo "FAIL: facet serve did not become ready"
  cat "${work}/stderr"
  exit 1
fi
admin=$(sed -E 's/.*"admin_address":"([^"]+)".*/\1/' "${work}/ready")
port=${admin##*:}

http_get() {  # http_get PATH: the response body (the admin port closes after one answer)
  exec 3<>"/dev/tcp/127.0.0.1/${port}" || return 1
  printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$1" >&3
  sed '1,/^\r$/d' <&3
  exec 3<&-
}

# An edit that is rejected: its previous revision keeps serving. A file that
# does not parse: its last good read (none) keeps serving.
cluster edited-cluster ROUND_ROBBIN >"${manifests}/70-edited.yaml"
printf 'apiVersion: facet.dev/v1alpha1\nkind: XdsResource\nmetadata:\n  name: [unclosed\n' \
  >"${manifests}/50-broken.yaml"
for _ in $(seq 1 100); do
  status=$(http_get /status)
  [[ ${status} == *'"serving_previous": true'* && ${status} == *'50-broken.yaml'* ]] && break
  sleep 0.1
done

failures=0
fail() {
  echo "FAIL: $1"
  failures=$((failures + 1))
}
[[ ${status} == *'"authorities": ['* ]] || fail "/status lists no authorities"

url="http://${admin}/ui/"
browser_flags=(--headless --no-sandbox --disable-gpu --no-first-run --disable-extensions
  --user-data-dir="${work}/profile" --window-size=1280,1500 --virtual-time-budget=5000)
# load NAME URL: the DOM after the page's scripts ran into OUT_DIR/NAME.html
# (and ${dom}), a screenshot into OUT_DIR/NAME.png.
load() {
  "${browser}" "${browser_flags[@]}" --dump-dom "$2" >"${out_dir}/$1.html" 2>>"${work}/browser.log"
  "${browser}" "${browser_flags[@]}" --screenshot="${out_dir}/$1.png" "$2" \
    >/dev/null 2>>"${work}/browser.log"
  dom=$(cat "${out_dir}/$1.html")
  [[ -s ${out_dir}/$1.png ]] || fail "no screenshot at ${out_dir}/$1.png"
  # A missing part drawn as text instead of left out.
  [[ ${dom} != *'>null<'* && ${dom} != *'>undefined<'* ]] ||
    fail "$1 shows a \"null\" or \"undefined\" where a part is missing"
}
load overview "${url}"

has() {  # has TEXT WHAT
  [[ ${dom} == *"$1"* ]] || fail "the page shows no $2 (${1})"
}
has '<title>Facet console</title>' "title"
has 'live · updated' "live status line (the scripts did not run or /status failed)"
has '<li class="mono">a.example</li>' "authority a.example"
has '<li class="mono">b.example</li>' "authority b.example"
has 'data-object="demo/edited-cluster" data-outcome="previous"' \
  "row for the rejected edit whose previous revision serves"
has 'rejected · previous revision serving' "previous-revision badge"
has 'data-object="demo/rejected-cluster" data-outcome="rejected"' "row for the rejected object"
has 'rejected · not served' "rejected badge"
has 'ROUND_ROBBIN' "rejection reason naming the bad value"
has 'data-outcome="accepted"' "accepted object"
has 'badge accepted">accepted<' "accepted badge"
has '<li data-kind="snapshot">' "snapshot from the server's /events in the timeline"
# Rejections and files that do not parse come from the server's /events,
# from before the page opened, with the time the rejection began.
has 'demo/rejected-cluster rejected: spec.variants[0].resource.lb_policy' \
  "timeline entry for the rejected object with its field (from /events)"
has 'previous revision serving since ' "timeline entry for the rejected edit with when it began"
has '50-broken.yaml does not parse: ' "timeline entry for the file that does not parse"
[[ ${dom} =~ \ since\ \<time\ datetime=\"20[0-9-]+T[0-9:.]+Z\" ]] ||
  fail "the rejected rows show no time their rejection began"
[[ ${dom} =~ 50-broken\.yaml:[1-9][0-9]*:[1-9][0-9]* ]] ||
  fail "the overview shows no file:line:column for the file that does not parse"
# Problems sort first: the first row is not an accepted one.
first_row=$(grep -o 'data-outcome="[a-z]*"' <<<"${dom}" | head -1)
[[ ${first_row} != 'data-outcome="accepted"' ]] || fail "an accepted row sorts before the problems"

# Live: with the overview open, a rejected edit shows within 2 s, no reload.
live=$(node "$(dirname "$0")/live_update.js" "${browser}" "${url}" demo/live-cluster \
  "${manifests}/80-live.yaml" "${work}/80-live-rejected.yaml" ROUND_ROBBIN \
  "${out_dir}/overview-live.png" 2>&1)
echo "${live}"
[[ ${live} == *'live update: '* && ${live} != *FAIL* ]] ||
  fail "the open overview did not show the rejected edit live: ${live}"

# A real client (gRPC C++, the bootstrap facet serve printed: node
# greeter-client-1, env=prod) holds the greeter resources while the clients
# page loads; its call waits for a backend that is not there.
sed '1,/^Client bootstrap/d' "${work}/stdout" >"${work}/bootstrap.json"
GRPC_XDS_BOOTSTRAP="${work}/bootstrap.json" "${cpp_client}" --target xds:///greeter \
  --count 1 --rpc-timeout-ms 60000 >"${work}/client.log" 2>&1 &
client=$!
for _ in $(seq 1 200); do
  clients=$(http_get /clients)
  [[ ${clients} == *'"object":"demo/greeter-prod-endpoints"'*'"status":"ACKED"'* ]] && break
  sleep 0.1
done
[[ ${clients} == *'greeter-client-1'* ]] || fail "/clients shows no greeter-client-1"
load clients "http://${admin}/ui/clients"
has 'data-node="greeter-client-1"' "card for the connected client"
has '{env=prod}' "client's parameters"
has '<th scope="row" class="mono">greeter</th><td class="mono">demo/greeter-routes</td>' \
  "route greeter served by demo/greeter-routes"
has '<span class="mono">prod</span>' "variant prod of the route (env=prod, no version)"
has 'badge accepted">ACKed<' "ACKed resource"
has '<span class="identity hint">no client certificate</span>' \
  "client's identity (none: the xDS port is plaintext)"

# The explain page draws the graph a client with env=prod, version=v2 gets.
load explain "http://${admin}/ui/explain?target=xds:///greeter&param=env=prod&param=version=v2"
has 'class="box accepted" transform="translate(10,' "listener box in the first column"
has 'data-type="listener" data-name="greeter"' "listener box"
has 'data-type="route" data-name="greeter"' "route box"
has 'demo/greeter-routes · prod-v2' "route box labelled with its object and variant"
has 'data-type="endpoint"' "endpoint box"
has 'class="verdict accepted-text"' "verdict: complete"
# The route box names the chosen virtual host; the route's edges to the
# clusters carry its rule and the weight share (90 / 10), the whole rule in
# their title and in the table.
has 'class="box-detail">virtual host greeter<' "route box naming the chosen virtual host"
has 'class="edge-label rule" data-to="greeter-prod"><title>' "rule label on the edge to greeter-prod"
has 'routes[0] prefix / · 90%</text>' "edge to greeter-prod labelled with its rule and 90 %"
has 'routes[0] prefix / · 10%</text>' "edge to greeter-canary labelled with its rule and 10 %"
has 'of virtual host "greeter": prefix "/", weight 90 of 100 (90%)</title>' \
  "edge title with the whole rule and weight"
has 'class="hint rule">from route (virtual_hosts[0].routes[0]) of virtual host "greeter": prefix "/", weight 10 of 100 (10%)<' \
  "table row with the whole rule"
# The graph fits the 1280 px window: no horizontal scrollbar.
graph_width=$(grep -oE '<svg viewBox="0 0 [0-9]+' <<<"${dom}" | head -1 | grep -oE '[0-9]+$')
[[ -n ${graph_width} && ${graph_width} -le 1230 ]] ||
  fail "the explain graph is ${graph_width:-?} px wide: wider than a 1280 px window's page"

# A broken graph: the edge to the route that has no virtual host for the
# name is drawn broken and labelled with the reason; the verdict says broken.
load explain-broken "http://${admin}/ui/explain?target=xds:///no-host"
has 'class="edge broken"' "broken edge to the route without a matching virtual host"
has 'class="edge-label broken" data-to="no-host"><title>' "label on the broken edge"
has 'no virtual host matches "no-host" (domains: [elsewhere]): RPCs fail with UNAVAILABLE</title>' \
  "the broken edge's reason in its title"
has 'class="verdict rejected-text"' "verdict: broken"

# Firefox: each page's scripts run and draw what they read (the pages use
# standard DOM and SVG only), checked over WebDriver BiDi, and the screenshot
# is not blank.
firefox=${FACET_FIREFOX:-$(command -v firefox-esr || true)}
if [[ -z ${firefox} ]]; then
  fail "firefox-esr not found (scripts/setup.sh installs it)"
else
  firefox_page() {  # firefox_page NAME PATH CONDITION
    local shot="${out_dir}/firefox-$1.png"
    rm -f "${shot}"
    local result
    result=$(timeout 90 node --experimental-websocket "$(dirname "$0")/firefox_page.js" \
      "${firefox}" "${work}/firefox-$1" "http://${admin}/$2" "$3" "${shot}" 2>&1)
    echo "${result}"
    [[ ${result} == *'firefox: '* && ${result} != *FAIL* ]] ||
      fail "Firefox did not show /$2 as expected: ${result}"
    result=$(node "$(dirname "$0")/png_not_blank.js" "${shot}" 2>&1) ||
      fail "Firefox drew nothing for /$2: ${result}"
    echo "${result}"
  }
  firefox_page overview ui/ \
    "document.getElementById('live').textContent.startsWith('live') &&
     document.querySelector('tr[data-object=\"demo/edited-cluster\"][data-outcome=\"previous\"]') &&
     document.getElementById('timeline').textContent.includes('demo/rejected-cluster rejected')"
  firefox_page clients ui/clients \
    "document.querySelector('details[data-node=\"greeter-client-1\"] tr[data-name=\"greeter\"]')"
  firefox_page explain 'ui/explain?target=xds:///greeter&param=env=prod&param=version=v2' \
    "document.querySelector('svg [data-type=\"endpoint\"]') &&
     [...document.querySelectorAll('svg text.rule')].some((t) => t.textContent.endsWith(' · 90%')) &&
     document.getElementById('graph').scrollWidth <= document.getElementById('graph').clientWidth"
fi

if [[ ${failures} -gt 0 ]]; then
  echo "--- DOM: ${out_dir}/{overview,clients,explain}.html"
  echo "--- browser log:"
  tail -20 "${work}/browser.log"
  echo "--- facet serve stderr:"
  tail -20 "${work}/stderr"
  exit 1
fi
echo "console in the browser: ok (${out_dir}/{overview,clients,explain}.png)"
