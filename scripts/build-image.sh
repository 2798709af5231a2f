#!/usr/bin/env bash
# Builds the Facet image from the Dockerfile with Debian's buildah (vfs
# storage, chroot isolation: no daemon, no overlay mounts), as CI does.
#
#   scripts/build-image.sh [TAG]        # default TAG: localhost/facet:dev
#   scripts/build-image.sh --binary PATH [TAG]
#
# Without --binary the image's facet is compiled from this tree by the
# Dockerfile's build stage, as `docker build .` does. With --binary (CI:
# scripts/test.sh passes the binary its tests just ran) the Dockerfile's
# `prebuilt` target packages that binary, stripped, on the same runtime stage,
# and the build stage is not run.
#
# The Dockerfile starts FROM debian:bookworm and debian:bookworm-slim. The
# script uses them if they are already in buildah's storage, tries to pull them
# otherwise, and where they cannot be pulled makes them with debootstrap from
# the Debian mirror apt is configured with, tagging them locally under the same
# names (and saying so). The debootstrapped root filesystem is kept as a
# tarball in the cache directory, so a machine whose buildah storage was wiped
# imports it again in seconds instead of bootstrapping (refreshed after 30
# days). The build runs with --pull-never, keeps the build stage's layers for
# the next run (--layers; its last layer is tagged
# localhost/facet-build-stage:cache), and gives the compile a persistent
# ccache, the pinned Envoy API tarball and apt's downloads through bind
# mounts. Afterwards it deletes what the next build cannot reuse.
#
# Environment:
#   FACET_IMAGE_CACHE_DIR  ccache, apt downloads and the base rootfs tarball
#                          (default: ${FACET_CACHE_DIR:-~/.cache/facet}/image)
#   FACET_BUILDAH_ROOT     buildah storage root (default: buildah's own)
#   FACET_IMAGE_PULL_TIMEOUT  seconds to try pulling the base (default: 60)
# Run as root (or with sudo available) on Debian bookworm.
set -Eeuo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
binary=""
if [[ ${1:-} == --binary ]]; then
  binary=${2:?"build-image: --binary needs the path of a facet binary"}
  shift 2
fi
tag=${1:-localhost/facet:dev}
cache=${FACET_IMAGE_CACHE_DIR:-${FACET_CACHE_DIR:-${HOME}/.cache/facet}/image}
readonly BASE=docker.io/library/debian:bookworm
readonly BASE_SLIM=docker.io/library/debian:bookworm-slim
readonly BASE_LABEL=dev.facet.base
readonly BUILD_STAGE_TAG=localhost/facet-build-stage:cache

log() { echo "build-image: $*"; }
die() {
  trap - ERR
  echo "build-image: FAILED: $*" >&2
  exit 1
}

trap 'die "line ${LINENO}: \"${BASH_COMMAND}\" exited with status $?"' ERR

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi

# --- Tools -------------------------------------------------------------------
missing=()
command -v buildah >/dev/null 2>&1 || missing+=(buildah)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if ((${#missing[@]} > 0)); then
  log "installing ${missing[*]}"
  ${sudo} apt-get update -qq
  DEBIAN_FRONTEND=noninteractive ${sudo} apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null || die "could not install ${missing[*]} with apt-get"
fi

buildah_cmd=(${sudo} buildah --storage-driver vfs)
if [[ -n "${FACET_BUILDAH_ROOT:-}" ]]; then
  buildah_cmd+=(--root "${FACET_BUILDAH_ROOT}")
fi
b() { "${buildah_cmd[@]}" "$@"; }
has_image() { b inspect --type image "$1" >/dev/null 2>&1; }
mkdir -p "${cache}/ccache" "${cache}/apt-archives" "${cache}/facet"

# --- The base image ----------------------------------------------------------
# Prints the URI of the first Debian archive apt uses for SUITE (deb822
# .sources or one-line .list entries); empty when there is none.
apt_uri_for() {
  local suite=$1
  local file
  for file in /etc/apt/sources.list.d/*.sources; do
    [[ -f ${file} ]] || continue
    awk -v suite="${suite}" '
      function flush() {
        if (types ~ /(^| )deb( |$)/ && uri != "" && (" " suites " ") ~ (" " suite " ")) {
          print uri; found = 1; exit
        }
        types = ""; uri = ""; suites = ""
      }
      /^[ \t]*$/ { flush(); next }
      /^Types:/ { sub(/^Types:[ \t]*/, ""); types = $0 }
      /^URIs:/ { uri = $2 }
      /^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
      END { if (!found) flush() }' "${file}"
  done
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f ${file} ]] || continue
    sed -E 's/\[[^]]*\]//' "${file}" | awk -v suite="${suite}" '$1 == "deb" && $3 == suite { print $2 }'
  done
}

# Makes the bookworm base from Debian's packages: debootstrap into a rootfs
# (or reuse the cached tarball of one), import it into buildah storage, and
# tag it as debian:bookworm and debian:bookworm-slim.
make_base_with_debootstrap() {
  local tarball=${cache}/debian-bookworm-minbase.tar
  local mirror security
  mirror=$(apt_uri_for bookworm | head -1 || true)
  mirror=${mirror:-http://deb.debian.org/debian}
  security=$(apt_uri_for bookworm-security | head -1 || true)
  security=${security:-http://deb.debian.org/debian-security}
  if [[ -f ${tarball} ]] && [[ -z $(find "${tarball}" -mtime +30) ]]; then
    log "using the cached debootstrap rootfs ${tarball}"
  else
    local rootfs
    rootfs=$(mktemp -d "${TMPDIR:-/tmp}/facet-bookworm-rootfs.XXXXXX")
    log "debootstrap --variant=minbase bookworm from ${mirror} (about a minute)"
    if ! ${sudo} debootstrap --variant=minbase bookworm "${rootfs}" "${mirror}" \
      >"${cache}/debootstrap.log" 2>&1; then
      tail -20 "${cache}/debootstrap.log" >&2
      ${sudo} rm -rf "${rootfs}"
      die "debootstrap from ${mirror} failed (log: ${cache}/debootstrap.log)"
    fi
    ${sudo} rm -rf "${rootfs}"/var/lib/apt/lists/* "${rootfs}"/var/cache/apt/*.bin \
      "${rootfs}"/var/cache/apt/archives/*.deb "${rootfs}"/var/log/*.log
    ${sudo} tar -C "${rootfs}" --numeric-owner -cf "${tarball}.partial" .
    ${sudo} rm -rf "${rootfs}"
    mv "${tarball}.partial" "${tarball}"
  fi
  local container mountpoint
  container=$(b from --quiet scratch)
  mountpoint=$(b mount "${container}")
  ${sudo} tar -C "${mountpoint}" --numeric-owner -xf "${tarball}"
  # What the official image has: the main, updates and security suites, no
  # recommends, and dpkg without an fsync per file (unpacking on vfs is slow
  # enough).
  ${sudo} rm -f "${mountpoint}/etc/apt/sources.list"
  ${sudo} tee "${mountpoint}/etc/apt/sources.list.d/debian.sources" >/dev/null <<EOF
Types: deb
URIs: ${mirror}
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${security}
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  echo 'APT::Install-Recommends "false";' |
    ${sudo} tee "${mountpoint}/etc/apt/apt.conf.d/99-no-recommends" >/dev/null
  echo force-unsafe-io | ${sudo} tee "${mountpoint}/etc/dpkg/dpkg.cfg.d/unsafe-io" >/dev/null
  b unmount "${container}" >/dev/null
  b config --cmd bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --label "${BASE_LABEL}=debootstrap ${mirror}" "${container}"
  b commit --quiet --rm "${container}" "${BASE}" >/dev/null
  b tag "${BASE}" "${BASE_SLIM}"
  log "made ${BASE} and ${BASE_SLIM} locally with debootstrap from ${mirror}" \
    "(the registry could not be reached); the image builds FROM these local tags"
}

if has_image "${BASE}" && has_image "${BASE_SLIM}"; then
  origin=$(b inspect --type image --format "{{index .Docker.Config.Labels \"${BASE_LABEL}\"}}" \
    "${BASE}" 2>/dev/null || true)
  if [[ -n ${origin} ]]; then
    log "using ${BASE} made locally earlier (${origin})"
  else
    log "using ${BASE} from buildah's storage"
  fi
else
  start=${SECONDS}
  log "pulling ${BASE} and ${BASE_SLIM}"
  if timeout "${FACET_IMAGE_PULL_TIMEOUT:-60}" "${buildah_cmd[@]}" pull --quiet "${BASE}" \
    >"${cache}/pull.log" 2>&1 &&
    timeout "${FACET_IMAGE_PULL_TIMEOUT:-60}" "${buildah_cmd[@]}" pull --quiet "${BASE_SLIM}" \
      >>"${cache}/pull.log" 2>&1; then
    log "pulled ${BASE} and ${BASE_SLIM}"
  else
    log "cannot pull ${BASE} ($(tail -1 "${cache}/pull.log")); making it with debootstrap"
    make_base_with_debootstrap
  fi
  log "base images ready in $((SECONDS - start)) s"
fi

# --- The build context ----------------------------------------------------------
if [[ -n ${binary} ]]; then
  [[ -x ${binary} ]] || die "--binary ${binary}: not an executable file"
  # The context is a directory holding only the stripped binary.
  context=$(mktemp -d "${TMPDIR:-/tmp}/facet-image-context.XXXXXX")
  trap 'rm -rf "${context}"' EXIT
  strip --strip-unneeded -o "${context}/facet" "${binary}" || die "cannot strip ${binary}"
  target_args=(--target prebuilt)
  what="the prebuilt binary ${binary}"
else
  # The Envoy API tarball is fetched (and integrity-checked) on the host, where
  # npm is, into the cache directory the build mounts; the build stage then
  # never downloads it.
  FACET_CACHE_DIR=${cache}/facet "${repo}/scripts/fetch-envoy-api.sh" \
    "${cache}/facet/envoy-api-check" >/dev/null
  rm -rf "${cache}/facet/envoy-api-check"
  context=${repo}
  target_args=()
  what="${repo}"
fi

# --- The image -----------------------------------------------------------------
build_log=${cache}/build.log
log "building ${tag} from ${repo}/Dockerfile and ${what} (log: ${build_log})"
start=${SECONDS}
# --format docker: the OCI format drops SHELL (and with it pipefail). The
# output goes through a pipe: buildah and the build's processes writing to
# the file directly overwrite each other's lines.
if ! b bud --format docker --isolation chroot --pull-never --layers --force-rm \
  --volume "${cache}/ccache:/var/cache/facet/ccache" \
  --volume "${cache}/facet:/var/cache/facet/facet" \
  --volume "${cache}/apt-archives:/var/cache/apt/archives" \
  "${target_args[@]}" -f "${repo}/Dockerfile" -t "${tag}" "${context}" 2>&1 |
  cat >"${build_log}"; then
  tail -60 "${build_log}" >&2
  die "buildah bud failed; the last lines of ${build_log} are above"
fi
compile="not run (layer cached)"
[[ -z ${binary} ]] || compile="none (prebuilt binary)"
hits=$(grep -m1 -E '^ +Hits:' "${build_log}" | awk '{print $2 " of " $4}' || true)
if [[ -n ${hits} ]]; then compile="ccache hits ${hits} objects"; fi
log "built ${tag} in $((SECONDS - start)) s;" \
  "$(grep -c 'Using cache' "${build_log}" || true) steps from the layer cache; compile: ${compile}"

# --- Storage that no later build reuses --------------------------------------
# The build stage's last layer is tagged so that it and its parents (the
# package layer above all) serve the next build from the layer cache; then
# untagged images nothing builds on are removed: an earlier ${tag} and
# superseded build-stage layers.
start=${SECONDS}
build_stage=$(awk '
  /^\[[0-9]+\/[0-9]+\] STEP 1\// {
    split(substr($1, 2, length($1) - 2), stage, "/")
    if (stage[1] == stage[2]) exit
  }
  /^--> [0-9a-f]+$/ { id = $2 }
  END { print id }' "${build_log}")
if [[ -z ${binary} && -n ${build_stage} ]]; then
  b tag "${build_stage}" "${BUILD_STAGE_TAG}"
fi
b rmi --prune >/dev/null 2>&1 || true
log "pruned unused images in $((SECONDS - start)) s; buildah storage holds" \
  "$(b images --all --quiet | wc -l) images"
log "$(b images --format '{{.Name}}:{{.Tag}} {{.ID}} {{.Size}}' "${tag}")"
