#!/usr/bin/env bash
# Checks the exit codes of the real `facet validate` binary: 0 valid,
# 1 rejected, 2 unreadable.
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
expect 2 "${tmp}/broken.yaml"
expect 2 "${tmp}/does-not-exist"
expect 2
"${facet}" version | grep -q '^facet ' || { echo "FAIL: facet version"; failures=$((failures + 1)); }
if [[ ${failures} -gt 0 ]]; then exit 1; fi
echo "validate exit codes: ok"
