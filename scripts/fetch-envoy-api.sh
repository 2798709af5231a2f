#!/usr/bin/env bash
# Fetches the Envoy API protos from the pinned npm package @grpc/grpc-js-xds,
# checks the tarball against its pinned integrity hash, and unpacks the proto
# trees into DEST. npm downloads it (curl where npm is missing, as in the image
# build). The tarball is cached in FACET_CACHE_DIR (default ~/.cache/facet) so
# a rebuild never downloads it again.
#
# Usage: scripts/fetch-envoy-api.sh DEST
set -euo pipefail

readonly PACKAGE="@grpc/grpc-js-xds"
readonly VERSION="1.14.1"
readonly INTEGRITY="sha512-F2mVXwEeMWw1znPUrp+8ykjsIOVnf7Rv+EyIvXOfz73w5tNolCnzokpLkE/d2Ehx30PJmZXqCQdMpx8DcBJohA=="
readonly TARBALL="grpc-grpc-js-xds-${VERSION}.tgz"

dest=${1:?usage: fetch-envoy-api.sh DEST}
cache=${FACET_CACHE_DIR:-${HOME}/.cache/facet}
mkdir -p "${cache}"

integrity_of() {
  echo "sha512-$(openssl dgst -sha512 -binary "$1" | base64 -w0)"
}

if [[ ! -f "${cache}/${TARBALL}" ]] || [[ "$(integrity_of "${cache}/${TARBALL}")" != "${INTEGRITY}" ]]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "${tmp}"' EXIT
  if command -v npm >/dev/null; then
    (cd "${tmp}" && npm pack --silent "${PACKAGE}@${VERSION}" >/dev/null)
  elif command -v curl >/dev/null; then
    # The registry's tarball URL, as `npm pack` resolves it (the image build has no npm).
    curl -fsSL -o "${tmp}/${TARBALL}" \
      "https://registry.npmjs.org/${PACKAGE}/-/${PACKAGE#*/}-${VERSION}.tgz"
  else
    echo "fetch-envoy-api: npm or curl is required (run scripts/setup.sh)" >&2
    exit 1
  fi
  actual=$(integrity_of "${tmp}/${TARBALL}")
  if [[ "${actual}" != "${INTEGRITY}" ]]; then
    echo "fetch-envoy-api: integrity mismatch for ${PACKAGE}@${VERSION}: got ${actual}, want ${INTEGRITY}" >&2
    exit 1
  fi
  mv "${tmp}/${TARBALL}" "${cache}/${TARBALL}"
fi

rm -rf "${dest}.partial"
mkdir -p "${dest}.partial"
tar -xzf "${cache}/${TARBALL}" -C "${dest}.partial" --strip-components=2 \
  package/deps/envoy-api package/deps/xds package/deps/googleapis \
  package/deps/protoc-gen-validate/validate
echo "${INTEGRITY}" > "${dest}.partial/INTEGRITY"
rm -rf "${dest}"
mv "${dest}.partial" "${dest}"
