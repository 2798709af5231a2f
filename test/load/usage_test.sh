#!/usr/bin/env bash
# Checks that facet_load refuses bad flags with exit status 2 and a message
# naming them, before starting a server.
set -u
load=$1
program=${load}
# shellcheck source=../support/usage_errors.sh
source "$(dirname "$0")/../support/usage_errors.sh"
expect_usage_error '--changes must be positive' --changes=0
expect_usage_error '--change-gap not negative' --change-gap=-1s
expect_usage_error '--streams, --connections, --services and --changes must be positive' --streams=0
expect_usage_error '--change-service below --services' --services=5 --change-service=5
expect_usage_error '--targets: facet, null, relay and/or relay2' --targets=facet,envoy
expect_usage_error '--null-push: all or selected' --null-push=some
expect_usage_error '--interleave: at most one target other than null' --interleave --targets=facet,relay,null
expect_usage_error '--interleave: not with --scenario=relay-restart' --interleave --scenario=relay-restart
expect_usage_error '--resources must include the changed route' --resources=lds:*
expect_usage_error '--scenario: change or relay-restart' --scenario=restart
expect_usage_error '--histogram-bucket must be positive' --scenario=relay-restart --histogram-bucket=0s
expect_usage_error '--server-keepalive-timeout must be from 0 to 24h' --server-keepalive-timeout=-1s
expect_usage_error '--server-keepalive-timeout must be from 0 to 24h' --server-keepalive-timeout=25h
expect_usage_error '--stop-timeout must be from 1s to 1h' --stop-timeout=0s
expect_usage_error '--stop-timeout must be from 1s to 1h' --stop-timeout=2h
expect_usage_error '--server-cpus: CPU list "0-x": "0-x" is not a CPU number' --server-cpus=0-x
expect_usage_error '--client-cpus: CPU list "3-1": range "3-1" ends before it starts' --client-cpus=3-1
expect_usage_error '--client-cpus: pinning to CPUs 1000' --client-cpus=1000
if [[ ${failures} -ne 0 ]]; then
  exit 1
fi
echo "all usage errors refused"
