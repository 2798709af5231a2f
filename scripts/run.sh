#!/usr/bin/env bash
# The run command: installs what is missing, builds Facet, and runs it on the
# embedded default, the manifests in examples/ (no cluster needed).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${FACET_BUILD_DIR:-${repo}/build}
"${repo}/scripts/setup.sh"
"${repo}/scripts/build.sh" facet
# Put `facet` on PATH (CMAKE_INSTALL_PREFIX, /usr/local by default) when the
# prefix is writable; otherwise it stays at build/controller/cli/facet.
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "${build_dir}/CMakeCache.txt")
if [[ -w "${prefix:-/usr/local}/bin" ]] || [[ -w "${prefix:-/usr/local}" ]]; then
  cmake --install "${build_dir}" >/dev/null && echo "run.sh: installed ${prefix}/bin/facet"
fi
exec "${build_dir}/controller/cli/facet" serve --manifests "${repo}/examples" \
  --xds-address "${FACET_XDS_ADDRESS:-127.0.0.1:18000}" \
  --admin-address "${FACET_ADMIN_ADDRESS:-127.0.0.1:18080}"
