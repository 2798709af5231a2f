#!/usr/bin/env bash
# Checks that `facet serve`, `facet controller` and `facet relay` refuse bad
# flags (and `facet relay` a bad --config file) with exit status 2 and a
# message naming the flag or field, before starting anything.
set -u
facet=$1
repo=$2
program=${facet}
# shellcheck source=../support/usage_errors.sh
source "$(dirname "$0")/../support/usage_errors.sh"
expect_usage_error '--log-level: unknown level "loud"' serve --manifests "${repo}/examples" --log-level loud
expect_usage_error '--node-metadata-params: node metadata mapping entry ""' \
  serve --manifests "${repo}/examples" --node-metadata-params 'a,,b'
expect_usage_error 'unknown flag --bogus' serve --manifests "${repo}/examples" --bogus
expect_usage_error '--manifests DIR is required' serve
expect_usage_error '--log-level: unknown level "loud"' controller --log-level loud
expect_usage_error 'parameter "a" is listed twice' \
  controller --node-metadata-params 'a,a=b'
expect_usage_error 'unexpected argument' controller extra
expect_usage_error '--cluster-domain is empty' controller --cluster-domain=
expect_usage_error 'flag --gateway-api takes true or false, not "maybe"' controller --gateway-api=maybe
expect_usage_error '--webhook-address needs --webhook-tls-cert and --webhook-tls-key' \
  controller --webhook-address 127.0.0.1:0
expect_usage_error '--grpc-keepalive-time: "soon" is not a duration' \
  serve --manifests "${repo}/examples" --grpc-keepalive-time soon
expect_usage_error '--grpc-max-concurrent-streams: "0" is not a whole number from 1' \
  serve --manifests "${repo}/examples" --grpc-max-concurrent-streams=0
expect_usage_error '--max-request-bytes: "4MiB" is not a whole number' \
  controller --max-request-bytes 4MiB
expect_usage_error '--grpc-keepalive-timeout: must be more than 0' \
  controller --grpc-keepalive-timeout=0
expect_usage_error '--write-stall-timeout: "-1s" is not a duration' \
  controller --write-stall-timeout=-1s
expect_usage_error '--push-walkers: "65" is not a whole number from 0 to 64' \
  serve --manifests "${repo}/examples" --push-walkers=65
expect_usage_error '--target NAME is required' explain "${repo}/examples"
expect_usage_error 'give either PATH... or --server' explain --target greeter
expect_usage_error '--param "env": expected KEY=VALUE' explain --target greeter --param env "${repo}/examples"
work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT
echo '{"xds_servers": [{"server_uri": "127.0.0.1:1", "channel_creds": [{"type": "insecure"}]}]}' \
  >"${work}/relay.json"
echo '{"xds_servers": [{"server_uri": "", "channel_creds": [{"type": "insecure"}]}]}' \
  >"${work}/bad-uri.json"
echo '{"xdsServers": []}' >"${work}/typo.json"
expect_usage_error '--config FILE is required' relay
expect_usage_error '--upstream-protocol: "grpc" is not delta or sotw' \
  relay --config "${work}/relay.json" --upstream-protocol grpc
expect_usage_error '--upstream-linger: "-5s" is not a non-negative duration' \
  relay --config "${work}/relay.json" --upstream-linger=-5s
expect_usage_error 'xds_servers[0].server_uri: must not be empty' relay --config "${work}/bad-uri.json"
expect_usage_error 'did you mean "xds_servers"' relay --config "${work}/typo.json"
expect_usage_error '--log-level: unknown level "loud"' relay --config "${work}/relay.json" --log-level loud
# A configuration file that cannot be read is not a usage error: exit 1.
output=$("${facet}" relay --config "${work}/missing.json" 2>&1 >/dev/null)
got=$?
if [[ ${got} -ne 1 || ${output} != *"missing.json"* ]]; then
  echo "FAIL: facet relay --config missing.json exited ${got} (want 1) with \"${output}\""
  failures=$((failures + 1))
fi
# An address in use is not a usage error either: exit 1, naming the flag.
# A running relay (upstream unreachable, which it waits for) holds the ports.
"${facet}" relay --config "${work}/relay.json" --xds-address 127.0.0.1:0 \
  --admin-address 127.0.0.1:0 --ready-file "${work}/holder.ready" >/dev/null 2>&1 &
holder=$!
for _ in $(seq 1 100); do
  [[ -s ${work}/holder.ready ]] && break
  sleep 0.1
done
ready=$(cat "${work}/holder.ready" 2>/dev/null)
xds_port=$(sed -n 's/.*"xds_address":"[^"]*:\([0-9]*\)".*/\1/p' <<<"${ready}")
admin_port=$(sed -n 's/.*"admin_address":"[^"]*:\([0-9]*\)".*/\1/p' <<<"${ready}")
expect_start_error() {
  local want=$1
  shift
  local output
  output=$(timeout 20 "${facet}" "$@" 2>&1 >/dev/null)
  local got=$?
  if [[ ${got} -ne 1 || ${output} != *"${want}"* ]]; then
    echo "FAIL: facet $* exited ${got} (want 1) with \"${output}\" (want \"${want}\")"
    failures=$((failures + 1))
  fi
  # One line saying why, not gRPC's internal error tree ({"created":...}).
  if [[ ${output} == *'"created"'* || ${output} == *'"description"'* ]]; then
    echo "FAIL: facet $* printed gRPC's internal error: \"${output}\""
    failures=$((failures + 1))
  fi
}
if [[ -z ${xds_port} || -z ${admin_port} ]]; then
  echo "FAIL: the port-holding relay wrote no usable ready file: \"${ready}\""
  failures=$((failures + 1))
else
  expect_start_error "--xds-address: cannot listen on 127.0.0.1:${xds_port}: Address already in use" \
    serve --manifests "${repo}/examples" --xds-address "127.0.0.1:${xds_port}" --admin-address ''
  expect_start_error "--xds-address: cannot listen on 127.0.0.1:${xds_port}: Address already in use" \
    relay --config "${work}/relay.json" --xds-address "127.0.0.1:${xds_port}" --admin-address ''
  expect_start_error '--admin-address: ' relay --config "${work}/relay.json" \
    --xds-address 127.0.0.1:0 --admin-address "127.0.0.1:${admin_port}"
fi
kill "${holder}" 2>/dev/null
wait "${holder}" 2>/dev/null
if [[ ${failures} -gt 0 ]]; then exit 1; fi
echo "command usage errors: ok"
