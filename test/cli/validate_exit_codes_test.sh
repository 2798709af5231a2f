#!/usr/bin/env bash
# Checks the exit codes of the real `facet validate` binary: 0 valid,
# 1 rejected, 2 unreadable (with the reason for hostile inputs).
set -u
facet=$1
repo=$2
failures=0
expect() {
  local want=$1
  shift
  "${facet}" validate "$@" >/dev/null 2>&1
  local got=$?
  if [[ ${got} -ne ${want} ]]; then
    echo "FAIL: facet validate $* exited ${got}, want ${want}"
    failures=$((failures + 1))
  fi
}
tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT
printf 'a: [unclosed\n' > "${tmp}/broken.yaml"
expect 0 "${repo}/examples"
expect 1 "${repo}/test/testdata/invalid"
# Each warning fixture is a complete, valid set on its own (together they
# would redefine the same objects).
for file in "${repo}"/test/testdata/warnings/*.yaml; do
  expect 0 "${file}"
done
# A Service defined in two files is a warning; a GRPCRoute defined twice is not.
mkdir "${tmp}/services" "${tmp}/routes"
service='apiVersion: v1
kind: Service
metadata: {name: greeter, namespace: demo}
spec: {ports: [{name: grpc, port: 50051}]}'
route='apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: greeter, namespace: demo}
spec: {parentRefs: [{group: "", kind: Service, name: greeter}]}'
printf '%s\n' "${service}" >"${tmp}/services/a.yaml"
printf '%s\n' "${service}" >"${tmp}/services/b.yaml"
printf '%s\n' "${route}" >"${tmp}/routes/a.yaml"
printf '%s\n' "${route}" >"${tmp}/routes/b.yaml"
expect 0 "${tmp}/services"
expect 1 "${tmp}/routes"
expect 2 "${tmp}/broken.yaml"
expect 2 "${tmp}/does-not-exist"
expect 2
# Hostile inputs are refused at once (a FIFO is not waited on, /dev/zero not
# read), each with its reason.
expect_unreadable() {
  local want=$1
  shift
  local output
  output=$(timeout 20 "${facet}" validate "$@" 2>&1)
  local got=$?
  if [[ ${got} -ne 2 || ${output} != *"${want}"* ]]; then
    echo "FAIL: facet validate $* exited ${got} (want 2) with \"${output}\" (want \"${want}\")"
    failures=$((failures + 1))
  fi
}
mkfifo "${tmp}/fifo.yaml"
expect_unreadable "${tmp}/fifo.yaml: is not a regular file" "${tmp}/fifo.yaml"
expect_unreadable "/dev/zero: is not a regular file" /dev/zero
ln -s "${tmp}/loop-b.yaml" "${tmp}/loop-a.yaml"
ln -s "${tmp}/loop-a.yaml" "${tmp}/loop-b.yaml"
expect_unreadable "${tmp}/loop-a.yaml: too many levels of symbolic links" "${tmp}/loop-a.yaml"
# Nested far past the depth bound (yaml-cpp's own guard would say "bad file").
{
  printf 'a: '
  printf '[%.0s' $(seq 1 5000)
  printf ']%.0s' $(seq 1 5000)
  printf '\n'
} >"${tmp}/deep.yaml"
expect_unreadable "lists and maps nested more than 100 levels deep" "${tmp}/deep.yaml"
"${facet}" version | grep -q '^facet ' || { echo "FAIL: facet version"; failures=$((failures + 1)); }
if [[ ${failures} -gt 0 ]]; then exit 1; fi
echo "validate exit codes: ok"
