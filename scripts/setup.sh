#!/usr/bin/env bash
# Installs what Facet needs to build and test on Debian bookworm, idempotently:
# only missing packages are installed, and apt's lists are refreshed only then.
# Run as root (or with sudo available).
set -euo pipefail

# What `facet` itself needs to build: the Dockerfile's build stage installs the
# same list (test/image/dockerfile_packages_test.sh checks it).
facet_packages=(
  build-essential cmake ninja-build ccache pkg-config ca-certificates openssl
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libre2-dev libssl-dev libcpprest-dev libyaml-cpp-dev libspdlog-dev
  # `facet explain`'s HTTP client (and the tests' clients).
  libcpp-httplib-dev
  # Boost.Beast and Boost.Asio (header-only): the admin and webhook ports' server.
  libboost-dev
  # prometheus-cpp's core: the /metrics registry, counters, gauges, histograms
  # and text serializer. xxHash: content digests.
  prometheus-cpp-dev libxxhash-dev
  # libyaml: the fast YAML event parser under the bounded YAML reader.
  libyaml-dev
)
# What the tests, benchmarks and development builds need besides.
test_packages=(
  git libgtest-dev libgmock-dev libbenchmark-dev
  # The test API server's JSON values, merge patch and JSON patch.
  nlohmann-json3-dev
  # /usr/bin/time: test/load/cold_paths.sh's CPU time and peak memory.
  time
  # valgrind (callgrind): test/load/count_instructions.sh's instruction counts.
  valgrind
  # The Helm chart test renders the chart with Go text/template + sprig, as
  # Helm does (Debian has no helm package).
  golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v3-dev
  # scripts/test-sanitizers.sh: clang with the ASan, UBSan, TSan and libFuzzer
  # runtimes, and llvm-symbolizer for their reports.
  clang-14 libclang-rt-14-dev llvm-14
  # test/browser: the console's pages in Debian's headless Chromium
  # (/usr/bin/chromium-headless-shell: --dump-dom, --screenshot).
  chromium-headless-shell
  # test/browser: a smoke test of each page in Firefox ESR (--headless
  # --screenshot).
  firefox-esr
)
packages=("${facet_packages[@]}" "${test_packages[@]}")
# Node.js and npm fetch the pinned Envoy API protos (and run the Node client
# tests). Keep a Node that is already installed (e.g. Node 20); install
# Debian's otherwise.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
# kubectl drives the test API server in the Kubernetes tests (the chart's
# webhook, the controller, the image). Keep a kubectl that is already on the
# PATH (another package may own /usr/bin/kubectl); install Debian's
# (kubernetes-client, 1.20) otherwise. The tests pass with both.
command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "${package}" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("${package}")
  fi
done

if ((${#missing[@]} > 0)); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  ${sudo} apt-get update -qq
  DEBIAN_FRONTEND=noninteractive ${sudo} apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi
echo "setup: all build and test dependencies are installed"
