#!/usr/bin/env bash
# The test command: installs what is missing, builds everything, runs every
# test (unit, command-line and end-to-end) through CTest, then builds the
# container image from the Dockerfile and tests it (scripts/build-image.sh,
# scripts/test-image.sh). FACET_IMAGE_TEST=0 leaves the image out, saying so;
# CI always runs it.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${FACET_BUILD_DIR:-${repo}/build}
"${repo}/scripts/setup.sh"
"${repo}/scripts/setup-node-tests.sh"
"${repo}/scripts/build.sh"
(cd "${build_dir}" && ctest --output-on-failure --timeout 600 -j "$(nproc)")
if [[ ${FACET_IMAGE_TEST:-1} == 0 ]]; then
  echo "test.sh: FACET_IMAGE_TEST=0: the image is NOT built or tested" >&2
  exit 0
fi
"${repo}/scripts/build-image.sh" localhost/facet:dev
"${repo}/scripts/test-image.sh" localhost/facet:dev
