#!/usr/bin/env bash
# `facet explain`: offline from manifests and online from a running
# `facet serve` and `facet relay` (admin /explain): a complete graph exits 0,
# a broken one 1 (saying where and why), bad usage or unreadable input 2.
set -u
facet=$1
repo=$2
failures=0
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "${pid}" 2>/dev/null; wait "${pid}" 2>/dev/null; done
  rm -rf "${work}"
}
trap cleanup EXIT

# expect CODE WANT... -- ARGS: runs `facet explain ARGS`, checks the exit
# code and that stdout+stderr contain every WANT.
expect() {
  local code=$1
  shift
  local wants=()
  while [[ $1 != "--" ]]; do wants+=("$1"); shift; done
  shift
  local output
  output=$(timeout 30 "${facet}" explain "$@" 2>&1)
  local got=$?
  if [[ ${got} -ne ${code} ]]; then
    echo "FAIL: facet explain $* exited ${got}, want ${code}; output:"
    echo "${output}"
    failures=$((failures + 1))
    return
  fi
  for want in "${wants[@]}"; do
    if [[ ${output} != *"${want}"* ]]; then
      echo "FAIL: facet explain $*: output lacks \"${want}\"; output:"
      echo "${output}"
      failures=$((failures + 1))
    fi
  done
}

examples=${repo}/examples

# --- Offline, complete graphs: the variant each parameter set selects.
expect 0 'route "greeter" (api_listener.api_listener.rds.route_config_name): variant "prod-v2"' \
  'cluster "greeter-canary" (virtual_hosts[0].routes[0].route.weighted_clusters.clusters[1].name)' \
  'virtual host "greeter"' 'endpoint 127.0.0.1:' 'graph complete' \
  -- --target greeter --param env=prod --param version=v2 "${examples}/10-old-style.yaml"
expect 0 'variant "test"' 'cluster "greeter-test"' 'graph complete' \
  -- --target greeter "${examples}/10-old-style.yaml"
expect 0 'listener "xdstp://a.example/envoy.config.listener.v3.Listener/greeter"' 'graph complete' \
  -- --target greeter --authority a.example --param env=prod "${examples}"
expect 0 '"complete": true' '"listener_name": "greeter"' \
  -- --output=json --target=greeter --param=env=prod "${examples}"
# Parameters print in single braces; targets may be written as the URI a
# client dials.
expect 0 'target "greeter" with parameters {env=prod, version=v2} -> listener "greeter"' \
  -- --target greeter --param env=prod --param version=v2 "${examples}/10-old-style.yaml"
expect 0 'target "xds:///greeter" with parameters {} -> listener "greeter"' 'graph complete' \
  -- --target xds:///greeter "${examples}/10-old-style.yaml"
expect 0 'listener "xdstp://a.example/envoy.config.listener.v3.Listener/greeter"' 'graph complete' \
  -- --target xds://a.example/greeter --param env=prod "${examples}"
expect 2 'expected xds:///NAME or xds://AUTHORITY/NAME' -- --target xds:greeter "${examples}"

# --- Offline, broken graphs.
mkdir -p "${work}/broken"
cat >"${work}/broken/listener.yaml" <<'YAML'
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: only-prod-listener, namespace: demo}
spec:
  type: listener
  name: only-prod
  variants:
  - match: {env: prod}
    resource:
      api_listener:
        api_listener:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          rds: {route_config_name: greeter, config_source: {ads: {}}}
          http_filters:
          - name: router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
YAML
cp "${examples}/10-old-style.yaml" "${work}/broken/"
# A route to a cluster that no variant serves for version=v3: the route is
# rejected, and so is the listener that names it; explain says which object
# rejected it and points at the route.
cat >"${work}/broken/v-route.yaml" <<'YAML'
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: v-listener, namespace: demo}
spec:
  type: listener
  name: versioned
  variants:
  - resource:
      api_listener:
        api_listener:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          rds: {route_config_name: versioned, config_source: {ads: {}}}
          http_filters:
          - name: router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
---
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: v-route, namespace: demo}
spec:
  type: route
  name: versioned
  variants:
  - resource:
      virtual_hosts:
      - name: versioned
        domains: ["versioned"]
        routes: [{match: {prefix: ""}, route: {cluster: versioned}}]
---
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: v-cluster, namespace: demo}
spec:
  type: cluster
  name: versioned
  variants:
  - match: {version: v1}
    resource: {type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}
  - match: {version: v2}
    resource: {type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}
YAML
expect 1 'listener "only-prod": BROKEN: does not exist for these parameters' \
  'graph broken (1 problem)' \
  -- --target only-prod --param env=staging --param version=v3 "${work}/broken"
# With env=prod it resolves, but the route it names has no virtual host for
# "only-prod" (its domains are "greeter"): a client dialling xds:///only-prod
# fails its RPCs.
expect 1 'no virtual host matches "only-prod"' -- --target only-prod --param env=prod "${work}/broken"
expect 1 'listener "versioned": BROKEN: does not exist: the object declaring it is rejected: demo/v-listener' \
  'references route "versioned", which is rejected (see demo/v-route)' \
  -- --target versioned --param version=v3 "${work}/broken"
expect 1 'listener "nothing": BROKEN: does not exist: no object serves listener "nothing"' \
  -- --target nothing "${examples}"
expect 0 'virtual host not chosen' 'graph complete' \
  -- --target "xdstp://a.example/envoy.config.listener.v3.Listener/greeter" "${examples}"
expect 1 '"complete": false' '"status": "no_variant"' \
  -- --output json --target only-prod --param env=staging "${work}/broken"

# --- Offline: a route (or a weighted share) that a fault abort fails for
# every RPC is where the graph ends, not a broken graph, although the
# cluster behind it has no endpoints; named routes show their names.
expect 0 'route "demo/greeter/canary" (virtual_hosts[0].routes[0]): path "/demo.Echo/Echo", header x-env == "prod" -> cluster "greeter.demo.svc.cluster.local:50051"' \
  'weight 30 fails with UNAVAILABLE (fault abort)' \
  'route "facet/no-route" (virtual_hosts[0].routes[2]): prefix "" fails with UNIMPLEMENTED (fault abort)' \
  'graph complete' \
  -- --target greeter.demo.svc.cluster.local:50051 "${repo}/test/testdata/explain/fault-aborts.yaml"

# --- Usage and unreadable input: 2.
expect 2 '--target NAME is required' -- "${examples}"
expect 2 'give either PATH... or --server' -- --target greeter
expect 2 'give either PATH... or --server' -- --target greeter --server http://127.0.0.1:1 "${examples}"
expect 2 '--param "env": expected KEY=VALUE' -- --target greeter --param env "${examples}"
expect 2 '--param env: given twice' -- --target greeter --param env=a --param env=b "${examples}"
expect 2 '--output "yaml": expected text or json' -- --target greeter --output yaml "${examples}"
expect 2 '--authority: not with an xdstp:// --target' \
  -- --target "xdstp://a.example/envoy.config.listener.v3.Listener/greeter" --authority b "${examples}"
expect 2 'unknown flag --bogus' -- --target greeter --bogus "${examples}"
expect 2 '--server "127.0.0.1:1": expected http://HOST:PORT' -- --target greeter --server 127.0.0.1:1
expect 2 "${work}/missing" -- --target greeter "${work}/missing"
expect 2 '--server http://127.0.0.1:1: connect to 127.0.0.1:1: Connection refused' \
  -- --target greeter --server http://127.0.0.1:1

# --- Online: a running facet serve, and a relay in front of it.
"${facet}" serve --manifests "${examples}" --xds-address 127.0.0.1:0 --admin-address 127.0.0.1:0 \
  --ready-file "${work}/serve.ready" >"${work}/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 200); do [[ -s ${work}/serve.ready ]] && break; sleep 0.1; done
ready=$(cat "${work}/serve.ready" 2>/dev/null)
xds=$(sed -n 's/.*"xds_address":"\([^"]*\)".*/\1/p' <<<"${ready}")
admin=$(sed -n 's/.*"admin_address":"\([^"]*\)".*/\1/p' <<<"${ready}")
if [[ -z ${xds} || -z ${admin} ]]; then
  echo "FAIL: facet serve wrote no usable ready file: \"${ready}\""
  cat "${work}/serve.log"
  exit 1
fi
expect 0 'variant "prod-v2"' 'cluster "greeter-canary"' 'graph complete' \
  -- --target greeter --param env=prod --param version=v2 --server "http://${admin}"
expect 1 'listener "nothing": BROKEN: does not exist' \
  -- --target nothing --server "http://${admin}"
expect 0 '"complete": true' -- --target greeter --output json --server "http://${admin}"

# An object whose edit is rejected keeps serving its previous revision, and
# explain says so where it serves, with the reason.
mkdir -p "${work}/live"
cp "${examples}/10-old-style.yaml" "${work}/live/"
"${facet}" serve --manifests "${work}/live" --xds-address 127.0.0.1:0 --admin-address 127.0.0.1:0 \
  --ready-file "${work}/live.ready" >"${work}/live.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 200); do [[ -s ${work}/live.ready ]] && break; sleep 0.1; done
live_admin=$(sed -n 's/.*"admin_address":"\([^"]*\)".*/\1/p' <"${work}/live.ready")
sed 's/port_value: 50052/port_valu: 50052/' "${examples}/10-old-style.yaml" >"${work}/edit.yaml"
mv "${work}/edit.yaml" "${work}/live/10-old-style.yaml"
for _ in $(seq 1 100); do
  [[ $(timeout 10 "${facet}" explain --target greeter --param env=prod \
    --server "http://${live_admin}" 2>&1) == *"previous revision"* ]] && break
  sleep 0.1
done
expect 0 'of demo/greeter-prod-endpoints (its previous revision: the latest is rejected: spec.variants[0].resource' \
  'graph complete' -- --target greeter --param env=prod --server "http://${live_admin}"

echo "{\"xds_servers\": [{\"server_uri\": \"${xds}\", \"channel_creds\": [{\"type\": \"insecure\"}]}]}" \
  >"${work}/relay.json"
"${facet}" relay --config "${work}/relay.json" --xds-address 127.0.0.1:0 \
  --admin-address 127.0.0.1:0 --ready-file "${work}/relay.ready" >"${work}/relay.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 200); do [[ -s ${work}/relay.ready ]] && break; sleep 0.1; done
relay_admin=$(sed -n 's/.*"admin_address":"\([^"]*\)".*/\1/p' <"${work}/relay.ready")
if [[ -z ${relay_admin} ]]; then
  echo "FAIL: facet relay wrote no usable ready file"
  cat "${work}/relay.log"
  exit 1
fi
# No client has asked the relay for anything: its cache is empty.
expect 1 'from a relay' 'not cached' -- --target greeter --server "http://${relay_admin}"

if [[ ${failures} -gt 0 ]]; then exit 1; fi
echo "facet explain: ok"
