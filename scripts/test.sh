#!/usr/bin/env bash
# The test command: installs what is missing, builds everything, and runs
# every test (unit, command-line and end-to-end) through CTest.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${FACET_BUILD_DIR:-${repo}/build}
"${repo}/scripts/setup.sh"
"${repo}/scripts/setup-node-tests.sh"
"${repo}/scripts/build.sh"
cd "${build_dir}"
ctest --output-on-failure --timeout 600 -j "$(nproc)"
