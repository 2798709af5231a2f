#!/usr/bin/env bash
# Drives the real kubectl against kube_test_server: apply the examples, list
# them, edit one (generation bumps), watch with --raw, delete.
# Usage: kubectl_test.sh KUBE_TEST_SERVER_BINARY REPO_ROOT
# Exits 77 (ctest SKIP_RETURN_CODE) when kubectl is not installed.
set -euo pipefail

server_binary="$1"
repo="$2"

if ! command -v kubectl >/dev/null 2>&1; then
  echo "SKIPPED: no kubectl"
  exit 77
fi

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
# Runs a command and checks its output contains PATTERN (no early-exiting pipes
# under pipefail).
expect_output() {
  local pattern="$1" message="$2"
  shift 2
  local output
  output="$("$@" 2>&1)" || fail "$message: command failed: $output"
  grep -q -- "$pattern" <<<"$output" || fail "$message: $output"
}

# kubectl sends bearer tokens only over TLS, so the server runs with TLS and
# a token; kubectl trusts the server's test CA through the kubeconfig.
"$server_binary" --port 0 --port-file "$work/port" --kubeconfig "$work/kubeconfig" \
  --token kubectl-test-token --tls &
server_pid=$!
for _ in $(seq 100); do
  [[ -s "$work/port" ]] && break
  kill -0 "$server_pid" 2>/dev/null || fail "kube_test_server exited early"
  sleep 0.05
done
[[ -s "$work/port" ]] || fail "kube_test_server did not write its port"

export KUBECONFIG="$work/kubeconfig"
export HOME="$work/home"  # Keep kubectl's discovery cache out of the real home.
mkdir -p "$HOME"
k() { kubectl --request-timeout=20s "$@"; }

# A wrong token is rejected.
if k --token wrong get xr -n demo >"$work/out" 2>&1; then fail "wrong token accepted"; fi
grep -q "Unauthorized\|provide credentials" "$work/out" || fail "no 401 for a wrong token: $(cat "$work/out")"

# As in examples/README.md (kubectl posts this one as protobuf).
expect_output "namespace/demo created" "namespace not created" k create namespace demo

k apply -f "$repo/examples/" >"$work/apply.out"
created="$(grep -c " created$" "$work/apply.out" || true)"
expected="$(cat "$repo"/examples/*.yaml | grep -c "^kind: Xds")"
[[ "$created" == "$expected" ]] || fail "created $created objects, expected $expected: $(cat "$work/apply.out")"

expect_output "^a-example " "kubectl get xa does not list a-example" k get xa
k get xr -n demo >"$work/get.out"
grep -q "^NAME .*TYPE .*AGE" "$work/get.out" || fail "no printer columns: $(head -1 "$work/get.out")"
grep -q "^greeter-listener " "$work/get.out" || fail "greeter-listener missing from kubectl get xr"
rows="$(($(wc -l <"$work/get.out") - 1))"
namespaced="$(cat "$repo"/examples/*.yaml | grep -c "^kind: XdsResource")"
[[ "$rows" == "$namespaced" ]] || fail "kubectl get xr listed $rows rows, expected $namespaced"

generation() { k get xr -n demo greeter-listener -o jsonpath='{.metadata.generation}'; }
[[ "$(generation)" == "1" ]] || fail "new object has generation $(generation)"

# Re-applying unchanged files changes nothing.
expect_output "greeter-listener unchanged" "re-apply was not a no-op" \
  k apply -f "$repo/examples/10-old-style.yaml"

# Edit the listener's spec (spec.name) and apply again: generation bumps.
awk 'BEGIN{doc=0} /^---$/{doc++; next} doc==0' "$repo/examples/10-old-style.yaml" |
  sed 's/^  name: greeter$/  name: greeter-edited/' >"$work/edited.yaml"
grep -q "greeter-edited" "$work/edited.yaml" || fail "could not edit the listener manifest"
expect_output "greeter-listener configured" "edit not applied" k apply -f "$work/edited.yaml"
[[ "$(generation)" == "2" ]] || fail "generation after a spec edit is $(generation), expected 2"
[[ "$(k get xr -n demo greeter-listener -o jsonpath='{.spec.name}')" == "greeter-edited" ]] ||
  fail "spec edit not stored"

# A raw watch ends cleanly at timeoutSeconds with one ADDED event per object.
k get --raw '/apis/facet.dev/v1alpha1/xdsresources?watch=1&timeoutSeconds=1' >"$work/watch.out"
added="$(grep -c '"type":"ADDED"' "$work/watch.out" || true)"
[[ "$added" == "$namespaced" ]] || fail "watch sent $added ADDED events, expected $namespaced"

expect_output "greeter-listener\" deleted" "delete failed" k delete -f "$work/edited.yaml"
if k get xr -n demo greeter-listener >"$work/out" 2>&1; then fail "deleted object still there"; fi
grep -q "NotFound\|not found" "$work/out" || fail "no NotFound after delete: $(cat "$work/out")"
k delete xr --all -n demo >/dev/null
[[ -z "$(k get xr -n demo -o name)" ]] || fail "objects left after delete --all"

echo "PASS: kubectl apply, get, edit, watch and delete against kube_test_server"
