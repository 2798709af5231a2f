#!/usr/bin/env bash
# Drives the real kubectl against kube_test_server: apply the examples, list
# them, edit one (generation bumps), watch with --raw, delete; apply the
# Gateway API kinds Facet reads (GRPCRoute, ReferenceGrant, Service,
# XdsVariantPolicy), read them back, edit the Service; then a server without
# the Gateway API CRDs.
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
# start_server [ARGS...]: (re)starts kube_test_server with ARGS.
start_server() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; fi
  rm -f "$work/port"
  "$server_binary" --port 0 --port-file "$work/port" --kubeconfig "$work/kubeconfig" \
    --token kubectl-test-token --tls "$@" &
  server_pid=$!
  for _ in $(seq 100); do
    [[ -s "$work/port" ]] && break
    kill -0 "$server_pid" 2>/dev/null || fail "kube_test_server exited early"
    sleep 0.05
  done
  [[ -s "$work/port" ]] || fail "kube_test_server did not write its port"
  # A new server on a new port: forget what kubectl discovered.
  rm -rf "$HOME/.kube/cache"
}

export KUBECONFIG="$work/kubeconfig"
export HOME="$work/home"  # Keep kubectl's discovery cache out of the real home.
mkdir -p "$HOME"
k() { kubectl --request-timeout=20s "$@"; }
start_server

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

# The Gateway API kinds Facet reads, and its policy.
cat >"$work/gateway.yaml" <<'YAML'
apiVersion: v1
kind: Service
metadata: {name: greeter, namespace: demo}
spec:
  selector: {app: greeter}
  ports:
  - {name: grpc, port: 50051, targetPort: 50051}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: greeter, namespace: demo}
spec:
  parentRefs:
  - {group: "", kind: Service, name: greeter, port: 50051}
  rules:
  - name: canary
    matches:
    - method: {service: helloworld.Greeter, method: SayHello}
    backendRefs:
    - {name: greeter, port: 50051}
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: from-clients, namespace: demo}
spec:
  from:
  - {group: gateway.networking.k8s.io, kind: GRPCRoute, namespace: clients}
  to:
  - {group: "", kind: Service}
---
apiVersion: facet.dev/v1alpha1
kind: XdsVariantPolicy
metadata: {name: canary-prod, namespace: demo}
spec:
  targetRefs:
  - {group: gateway.networking.k8s.io, kind: GRPCRoute, name: greeter, sectionName: canary}
  when: {env: prod}
YAML
k apply -f "$work/gateway.yaml" >"$work/gateway.out" ||
  fail "gateway kinds not applied: $(cat "$work/gateway.out")"
for object in service/greeter grpcroute.gateway.networking.k8s.io/greeter \
  referencegrant.gateway.networking.k8s.io/from-clients xdsvariantpolicy.facet.dev/canary-prod; do
  grep -q "^$object created$" "$work/gateway.out" || fail "$object not created: $(cat "$work/gateway.out")"
done
[[ "$(k get grpcroute greeter -n demo -o jsonpath='{.spec.rules[0].name}/{.spec.parentRefs[0].port}/{.metadata.generation}')" == "canary/50051/1" ]] ||
  fail "grpcroute read back wrong: $(k get grpcroute greeter -n demo -o json)"
[[ "$(k get refgrant from-clients -n demo -o jsonpath='{.spec.from[0].namespace}')" == "clients" ]] ||
  fail "referencegrant read back wrong"
[[ "$(k get xvp canary-prod -n demo -o jsonpath='{.spec.when.env}')" == "prod" ]] ||
  fail "xdsvariantpolicy read back wrong"
k get xvp -n demo >"$work/xvp.out"
grep -q "^NAME *TARGET *SECTION *ACCEPTED *AGE$" "$work/xvp.out" || fail "xvp columns: $(cat "$work/xvp.out")"
grep -q "^canary-prod *greeter *canary " "$work/xvp.out" || fail "xvp row: $(cat "$work/xvp.out")"
expect_output "^NAME *HOSTNAMES *AGE" "grpcroute columns" k get grpcroutes -n demo
expect_output "^greeter *ClusterIP *10\.96\.[0-9.]* *<none> *50051/TCP " "service row" k get svc -n demo
expect_output "^kubernetes *ClusterIP *10\.96\.0\.1 " "no default/kubernetes Service" k get svc -n default
[[ "$(k get svc greeter -n demo -o jsonpath='{.spec.type}/{.spec.ports[0].protocol}')" == "ClusterIP/TCP" ]] ||
  fail "service defaults missing: $(k get svc greeter -n demo -o json)"
cluster_ip="$(k get svc greeter -n demo -o jsonpath='{.spec.clusterIP}')"
expect_output "canary-prod" "kubectl get facet does not list the policy" \
  k get facet -n demo -o 'jsonpath={.items[*].metadata.name}'

# kubectl apply sends a strategic merge patch for a Service: add a port.
sed 's/^  - {name: grpc, port: 50051, targetPort: 50051}$/&\n  - {name: admin, port: 9901}/' \
  "$work/gateway.yaml" >"$work/gateway2.yaml"
expect_output "service/greeter configured" "service edit not applied" k apply -f "$work/gateway2.yaml"
[[ "$(k get svc greeter -n demo -o jsonpath='{.spec.ports[*].name}/{.spec.clusterIP}')" == "grpc admin/$cluster_ip" ]] ||
  fail "service edit: $(k get svc greeter -n demo -o json)"
expect_output "grpcroute.gateway.networking.k8s.io/greeter unchanged" "route re-apply not a no-op" \
  k apply -f "$work/gateway2.yaml"

# A cluster without the Gateway API CRDs: the group is not served at all.
start_server --omit-resources gateway.networking.k8s.io
k create namespace demo >/dev/null
if k get --raw /apis/gateway.networking.k8s.io/v1 >"$work/out" 2>&1; then
  fail "gateway.networking.k8s.io/v1 served by a server without it: $(cat "$work/out")"
fi
grep -q "NotFound\|not found" "$work/out" || fail "no 404 for a missing group: $(cat "$work/out")"
if k get grpcroutes -n demo >"$work/out" 2>&1; then fail "grpcroutes listed without their CRD"; fi
grep -q "doesn't have a resource type" "$work/out" || fail "kubectl found grpcroutes: $(cat "$work/out")"
expect_output "^canary-prod " "xvp missing beside an absent group" \
  sh -c "kubectl --request-timeout=20s apply -f - >/dev/null <<'YAML' && kubectl get xvp -n demo
apiVersion: facet.dev/v1alpha1
kind: XdsVariantPolicy
metadata: {name: canary-prod, namespace: demo}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: GRPCRoute, name: greeter}]
  when: {env: prod}
YAML"

echo "PASS: kubectl apply, get, edit, watch and delete against kube_test_server"
