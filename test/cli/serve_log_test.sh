#!/usr/bin/env bash
# Checks that `facet serve` logs names and paths a manifest's writer controls
# escaped: a metadata.name and a file name holding a newline and an ESC
# sequence stay on their log line, visible as \n and \x1b.
set -u
facet=$1
work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT
mkdir "${work}/manifests"
evil_file="${work}/manifests/"$'evil\nforged \e[31m.yaml'
object='apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata:
  name: "evil\nforged line \e[31mred"
  namespace: demo
spec:
  type: cluster
  name: evil
  variants:
  - resource: {type: STATIC}'
# Defined twice: the manifest directory reports the second definition.
printf '%s\n---\n%s\n' "${object}" "${object}" >"${evil_file}"
"${facet}" serve --manifests "${work}/manifests" --xds-address 127.0.0.1:0 --admin-address '' \
  --ready-file "${work}/ready" >/dev/null 2>"${work}/stderr" &
serve=$!
# The first snapshot (and its log lines) comes before the ready file.
for _ in $(seq 1 300); do
  [[ -s ${work}/ready ]] && break
  sleep 0.1
done
kill -TERM "${serve}" 2>/dev/null
wait "${serve}" 2>/dev/null
failures=0
fail() {
  echo "FAIL: $1"
  failures=$((failures + 1))
}
[[ -s ${work}/ready ]] || fail "facet serve wrote no ready file"
log=$(cat "${work}/stderr")
escaped_name='demo/evil\nforged line \x1b[31mred'
escaped_file='evil\nforged \x1b[31m.yaml'
[[ ${log} == *"${escaped_name}: defined again"* ]] ||
  fail "the manifest directory's line does not show the name escaped"
[[ ${log} == *"${escaped_name}: metadata.name: "* ]] ||
  fail "the rejection's line does not show the name escaped"
[[ ${log} == *"manifests: read ${work}/manifests/${escaped_file}: "* ]] ||
  fail "the read line does not show the file name escaped"
# Every line is a log line (begins with its timestamp); none holds an ESC.
if grep -qv '^\[' "${work}/stderr"; then
  fail "a line does not begin with a timestamp: $(grep -v '^\[' "${work}/stderr" | head -1)"
fi
if grep -q $'\e' "${work}/stderr"; then fail "the log holds a raw ESC"; fi
if [[ ${failures} -gt 0 ]]; then
  echo "--- stderr:"
  cat -v "${work}/stderr"
  exit 1
fi
echo "serve log escaping: ok"
