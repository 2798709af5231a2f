#!/usr/bin/env bash
# Tests the image scripts/build-image.sh built, with `buildah run` (chroot
# isolation; the container shares the host's network):
#   1. `facet version` prints this tree's version, as the non-root user;
#   2. `facet validate` accepts examples/ and rejects an invalid fixture;
#   3. `facet controller` in the image watches the test Kubernetes API server
#      (test/kube_api_server, on the host, TLS and a bearer token), kubectl
#      applies XdsResources for two real gRPC backends, and the real gRPC C++
#      xDS client (test/e2e) is routed through the controller to the backend
#      its node metadata selects.
#
#   scripts/test-image.sh [TAG]          # default TAG: localhost/facet:dev
#
# The host binaries come from FACET_BUILD_DIR (default build/), built here if
# missing. Exits non-zero with the reason on the first failure, and keeps its
# work directory (logs, kubeconfig, manifests) then.
set -Eeuo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${FACET_BUILD_DIR:-${repo}/build}
tag=${1:-localhost/facet:dev}

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
buildah_cmd=(${sudo} buildah --storage-driver vfs)
if [[ -n "${FACET_BUILDAH_ROOT:-}" ]]; then
  buildah_cmd+=(--root "${FACET_BUILDAH_ROOT}")
fi
b() { "${buildah_cmd[@]}" "$@"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/facet-image-test.XXXXXX")
container=""
pids=()
keep_work=1
log() { echo "test-image: $*"; }
fail() {
  trap - ERR
  echo "test-image: FAIL: $*" >&2
  for file in "${work}"/logs/*; do
    [[ -s ${file} ]] || continue
    echo "--- ${file##*/} (last lines)" >&2
    tail -15 "${file}" >&2
  done
  echo "test-image: logs and inputs are in ${work}" >&2
  exit 1
}
trap 'fail "line ${LINENO}: \"${BASH_COMMAND}\" exited with status $?"' ERR
# Ends a process this script started and everything below it (buildah run's
# children), by pid.
stop_tree() {
  local pid=$1 child
  for child in $(cat /proc/"${pid}"/task/*/children 2>/dev/null); do stop_tree "${child}"; done
  kill -TERM "${pid}" 2>/dev/null || true
}
# Prints the pid of the first process named NAME below PID.
descendant_named() {
  local pid=$1 name=$2 child found
  for child in $(cat /proc/"${pid}"/task/*/children 2>/dev/null); do
    if [[ $(cat /proc/"${child}"/comm 2>/dev/null) == "${name}" ]]; then
      echo "${child}"
      return 0
    fi
    found=$(descendant_named "${child}" "${name}") && { echo "${found}"; return 0; }
  done
  return 1
}
cleanup() {
  local status=$? pid
  trap - ERR
  set +e
  for pid in "${pids[@]}"; do stop_tree "${pid}"; done
  for pid in "${pids[@]}"; do wait "${pid}" 2>/dev/null || true; done
  if [[ -n ${container} ]]; then b rm "${container}" >/dev/null 2>&1 || true; fi
  if ((keep_work == 0)); then rm -rf "${work}"; fi
  exit "${status}"
}
trap cleanup EXIT

# Waits up to SECONDS for FILE to be non-empty while PID lives.
wait_for_file() {
  local file=$1 pid=$2 seconds=$3 what=$4
  for _ in $(seq $((seconds * 20))); do
    [[ -s ${file} ]] && return 0
    kill -0 "${pid}" 2>/dev/null || fail "${what} exited before writing ${file##*/}"
    sleep 0.05
  done
  fail "${what} wrote no ${file##*/} within ${seconds} s"
}

command -v kubectl >/dev/null 2>&1 ||
  fail "kubectl is not installed; the controller test applies XdsResources with it"
"${repo}/scripts/build.sh" kube_test_server e2e_backend e2e_cpp_client >/dev/null
mkdir -p "${work}/logs" "${work}/in" "${work}/out" "${work}/home"
# The image runs as uid 65532: it reads in/ and writes its ready file to out/.
chmod 0755 "${work}" "${work}/in"
chmod 0777 "${work}/out"

b inspect --type image "${tag}" >/dev/null 2>&1 ||
  fail "no image ${tag} in buildah's storage; build it with scripts/build-image.sh"
container=$(b from --quiet --pull-never "${tag}")
run() { b run --isolation chroot "$@"; }

# --- 1. facet version, as the image's user -------------------------------------
want_version=$(sed -n 's/^project(facet VERSION \([0-9.]*\).*/\1/p' "${repo}/CMakeLists.txt")
got=$(run "${container}" -- facet version 2>&1) || fail "facet version failed: ${got}"
[[ ${got} == "facet ${want_version}" ]] || fail "facet version printed \"${got}\", want \"facet ${want_version}\""
user=$(run "${container}" -- id -u 2>&1) || fail "id -u failed: ${user}"
[[ ${user} == 65532 ]] || fail "the image runs as uid ${user}, want the non-root 65532"
log "ok: ${got}, as uid ${user}, from /usr/local/bin/facet"

# --- 2. facet validate ---------------------------------------------------------
cp -r "${repo}/examples" "${work}/in/examples"
chmod -R a+rX "${work}/in"
got=$(run -v "${work}/in:/in:ro" "${container}" -- facet validate /in/examples 2>&1) ||
  fail "facet validate rejected examples/: ${got}"
invalid=${repo}/test/testdata/invalid/overlapping-variants.yaml
[[ -f ${invalid} ]] || invalid=$(find "${repo}/test/testdata/invalid" -name '*.yaml' | sort | head -1)
expect=$(sed -n 's/^# expect: //p' "${invalid}" | head -1)
cp "${invalid}" "${work}/in/invalid.yaml"
chmod a+r "${work}/in/invalid.yaml"
status=0
got=$(run -v "${work}/in:/in:ro" "${container}" -- facet validate /in/invalid.yaml 2>&1) || status=$?
[[ ${status} == 1 ]] || fail "facet validate exited ${status} on ${invalid##*/}, want 1: ${got}"
grep -qF -- "${expect}" <<<"${got}" ||
  fail "facet validate on ${invalid##*/} did not print \"${expect}\": ${got}"
log "ok: facet validate accepts examples/ and rejects ${invalid##*/}"

# --- 3. facet controller against the test API server, with a real client ------
# The API server on the host, with TLS and a token (kubectl sends tokens only
# over TLS); its kubeconfig carries the CA, so the image reads only that file.
"${build_dir}/test/kube_api_server/kube_test_server" --port 0 --port-file "${work}/api.port" \
  --kubeconfig "${work}/in/kubeconfig" --token image-test-token --tls \
  >"${work}/logs/kube_test_server.log" 2>&1 &
pids+=($!)
wait_for_file "${work}/api.port" "${pids[-1]}" 10 kube_test_server
chmod a+r "${work}/in/kubeconfig"
k() {
  HOME=${work}/home kubectl --kubeconfig "${work}/in/kubeconfig" --request-timeout=20s "$@"
}
k create namespace e2e >"${work}/logs/kubectl.log" 2>&1 || fail "kubectl create namespace failed"

# Two backends that answer every call with their id.
declare -A backend_port
for id in prod test; do
  "${build_dir}/test/e2e/e2e_backend" --id "${id}" --port-file "${work}/backend-${id}.port" \
    >"${work}/logs/backend-${id}.log" 2>&1 &
  pids+=($!)
  wait_for_file "${work}/backend-${id}.port" "${pids[-1]}" 10 "backend ${id}"
  backend_port[${id}]=$(cat "${work}/backend-${id}.port")
done

run -v "${work}/in:/in:ro" -v "${work}/out:/out" "${container}" -- \
  facet controller --kubeconfig /in/kubeconfig --xds-address 127.0.0.1:0 \
  --admin-address 127.0.0.1:0 --ready-file /out/ready \
  >"${work}/logs/facet-controller.log" 2>&1 &
pids+=($!)
controller_pid=${pids[-1]}
wait_for_file "${work}/out/ready" "${controller_pid}" 60 "facet controller (in the image)"
ready=$(cat "${work}/out/ready")
xds_address=$(sed -n 's/.*"xds_address": *"\([^"]*\)".*/\1/p' <<<"${ready}")
admin_address=$(sed -n 's/.*"admin_address": *"\([^"]*\)".*/\1/p' <<<"${ready}")
[[ -n ${xds_address} && -n ${admin_address} ]] || fail "unusable ready file: ${ready}"
log "ok: facet controller (in the image) is serving xDS on ${xds_address}"

# The e2e suite's greeter: env=prod -> backend prod, anything else -> test.
sed -e "s/\${port:prod}/${backend_port[prod]}/" -e "s/\${port:test}/${backend_port[test]}/" \
  "${repo}/test/e2e/testdata/greeter.yaml.tmpl" >"${work}/greeter.yaml"
k apply -f "${work}/greeter.yaml" >>"${work}/logs/kubectl.log" 2>&1 || fail "kubectl apply failed"

# The controller writes status: every object Accepted and resolved.
accepted=""
for _ in $(seq 300); do
  kill -0 "${controller_pid}" 2>/dev/null || fail "facet controller (in the image) exited"
  accepted=$(k get xr -n e2e -o \
    jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="ResolvedRefs")].status}{"\n"}{end}' \
    2>>"${work}/logs/kubectl.log" || true)
  if [[ -n ${accepted} ]] && ! grep -qv '=True$' <<<"${accepted}"; then break; fi
  accepted=""
  sleep 0.1
done
[[ -n ${accepted} ]] || fail "the controller did not report ResolvedRefs=True for every XdsResource"
# GET /readyz on the admin port with bash alone (curl may not be installed).
exec 3<>"/dev/tcp/${admin_address%:*}/${admin_address##*:}" ||
  fail "cannot connect to the controller's admin port ${admin_address}"
printf 'GET /readyz HTTP/1.0\r\nHost: %s\r\n\r\n' "${admin_address}" >&3
read -r -t 10 status_line <&3 || true
exec 3<&-
[[ ${status_line} == "HTTP/1."[01]" 200"* ]] ||
  fail "the controller's /readyz answered \"${status_line%$'\r'}\", want 200"

# The real gRPC C++ xDS client, routed through the controller in the image.
for env in prod staging; do
  want=test
  [[ ${env} == prod ]] && want=prod
  cat >"${work}/bootstrap-${env}.json" <<EOF
{
  "xds_servers": [{"server_uri": "${xds_address}", "channel_creds": [{"type": "insecure"}],
                   "server_features": ["xds_v3"]}],
  "node": {"id": "image-test-${env}", "locality": {}, "metadata": {"env": "${env}"}}
}
EOF
  got=$(GRPC_XDS_BOOTSTRAP=${work}/bootstrap-${env}.json \
    "${build_dir}/test/e2e/e2e_cpp_client" --target xds:///greeter --count 3 \
    2>"${work}/logs/client-${env}.log") || fail "the gRPC client (env=${env}) failed: ${got}"
  [[ $(sort -u <<<"${got}") == "${want}" ]] ||
    fail "the gRPC client (env=${env}) reached \"${got//$'\n'/ }\", want backend ${want} only"
  log "ok: gRPC client with env=${env} -> facet controller (in the image) -> backend ${want}"
done

# SIGTERM to facet itself (buildah run passes its exit status on).
facet_pid=$(descendant_named "${controller_pid}" facet) ||
  fail "no facet process below buildah run (pid ${controller_pid})"
kill -TERM "${facet_pid}"
status=0
wait "${controller_pid}" || status=$?
((status == 0)) || fail "facet controller (in the image) exited ${status} on SIGTERM, want 0"
keep_work=0
log "PASS: ${tag}"
