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
# Runs a stage and prints its wall time (docs/development.md, "What CI costs").
stage() {
  local name=$1 start=${SECONDS}
  shift
  "$@"
  echo "test.sh: ${name} took $((SECONDS - start)) s"
}
stage "setup" "${repo}/scripts/setup.sh"
stage "node test packages" "${repo}/scripts/setup-node-tests.sh"
stage "host build" "${repo}/scripts/build.sh"
# Fails when a test is skipped as well as when one fails (scripts/run-ctest.sh).
stage "host tests" "${repo}/scripts/run-ctest.sh" "${build_dir}" --timeout 600
if [[ ${FACET_SANITIZER_TEST:-1} == 0 ]]; then
  echo "test.sh: FACET_SANITIZER_TEST=0: the sanitizer and fuzzing stage is NOT run" >&2
else
  stage "sanitizer and fuzzing stage" "${repo}/scripts/test-sanitizers.sh"
fi
if [[ ${FACET_IMAGE_TEST:-1} == 0 ]]; then
  echo "test.sh: FACET_IMAGE_TEST=0: the image is NOT built or tested" >&2
  exit 0
fi
stage "image build" "${repo}/scripts/build-image.sh" --binary "${build_dir}/controller/cli/facet" \
  localhost/facet:dev
stage "image test" "${repo}/scripts/test-image.sh" localhost/facet:dev
echo "test.sh: everything passed in ${SECONDS} s"
