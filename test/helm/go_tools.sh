# shellcheck shell=bash
# Sourced by the chart tests: builds test/helm's Go tools (render, check) with
# Debian's Go packages in GOPATH mode, offline.
#
# build_go_tools HERE WORK: builds HERE/render and HERE/check into WORK/render
# and WORK/check. Exits 77 (SKIP) when Go or a package is missing, 1 when a
# tool does not build.
build_go_tools() {
  local here=$1 work=$2 gopath=/usr/share/gocode
  if ! command -v go >/dev/null 2>&1; then
    echo "SKIP: go not found; apt-get install golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v3-dev"
    exit 77
  fi
  for package in github.com/Masterminds/sprig gopkg.in/yaml.v3; do
    if [[ ! -d ${gopath}/src/${package} ]]; then
      echo "SKIP: Go package ${package} not found under ${gopath}; apt-get install golang-github-masterminds-sprig-dev golang-gopkg-yaml.v3-dev"
      exit 77
    fi
  done
  mkdir -p "${work}"
  export GO111MODULE=off GOPATH=${gopath} GOCACHE=${work}/go-cache GOFLAGS=
  for tool in render check; do
    if ! (cd "${here}" && go build -o "${work}/${tool}" "./${tool}"); then
      echo "FAIL: could not build test/helm/${tool}"
      exit 1
    fi
  done
}
