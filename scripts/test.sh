#!/usr/bin/env bash
# The test command: installs what is missing, builds everything, runs every
# test (unit, command-line and end-to-end) through CTest, runs the sanitizer
# and fuzzing stage (scripts/test-sanitizers.sh: the suite under ASan+UBSan,
# each fuzzer for a bounded time, the server, relay and controller tests under
# TSan), then builds the container image from the Dockerfile with the binary
# the tests ran (scripts/build-image.sh --binary; the image's own build stage
# is checked by dockerfile_packages_test) and tests it (scripts/test-image.sh).
# FACET_SANITIZER_TEST=0 and FACET_IMAGE_TEST=0 leave those stages out, saying
# so; CI always runs them.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${FACET_BUILD_DIR:-${repo}/build}
"${repo}/scripts/setup.sh"
"${repo}/scripts/setup-node-tests.sh"
"${repo}/scripts/build.sh"
# Fails when a test is skipped as well as when one fails (scripts/run-ctest.sh).
"${repo}/scripts/run-ctest.sh" "${build_dir}" --timeout 600
if [[ ${FACET_SANITIZER_TEST:-1} == 0 ]]; then
  echo "test.sh: FACET_SANITIZER_TEST=0: the sanitizer and fuzzing stage is NOT run" >&2
else
  "${repo}/scripts/test-sanitizers.sh"
fi
if [[ ${FACET_IMAGE_TEST:-1} == 0 ]]; then
  echo "test.sh: FACET_IMAGE_TEST=0: the image is NOT built or tested" >&2
  exit 0
fi
"${repo}/scripts/build-image.sh" --binary "${build_dir}/controller/cli/facet" localhost/facet:dev
"${repo}/scripts/test-image.sh" localhost/facet:dev
