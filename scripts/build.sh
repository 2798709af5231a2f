#!/usr/bin/env bash
# Configures and builds Facet in BUILD_DIR (default: build/) with Ninja and
# ccache. Extra arguments are passed to ninja (e.g. a target name).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${FACET_BUILD_DIR:-${repo}/build}
# Let ccache share results between build directories and checkouts.
export CCACHE_BASEDIR=${repo} CCACHE_NOHASHDIR=true
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
if [[ ! -f "${build_dir}/build.ninja" ]]; then
  cmake -S "${repo}" -B "${build_dir}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
ninja -C "${build_dir}" "$@"
