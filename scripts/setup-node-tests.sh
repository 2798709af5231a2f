#!/usr/bin/env bash
# Installs the pinned grpc-js xDS client used by the Node end-to-end tests
# (test/e2e/node, `npm ci` from its package-lock.json). Idempotent: does
# nothing when node_modules already matches the lock file. Without node or
# npm it says so and exits 0; the Node tests then skip themselves.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${repo}/test/e2e/node

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "setup-node-tests: node or npm not found; the Node end-to-end tests will be skipped" >&2
  exit 0
fi

stamp=${dir}/node_modules/.facet-package-lock.sha256
want=$(sha256sum "${dir}/package-lock.json" | cut -d' ' -f1)
if [[ -f ${stamp} && $(cat "${stamp}") == "${want}" ]]; then
  echo "setup-node-tests: test/e2e/node/node_modules is up to date"
  exit 0
fi

echo "setup-node-tests: npm ci in test/e2e/node"
(cd "${dir}" && npm ci --no-audit --no-fund)
echo "${want}" > "${stamp}"
