#!/usr/bin/env bash
# Checks, without building an image, that the Dockerfile installs what facet
# needs (CI packages its tested binary into the image, so the build stage is
# not run there):
#   1. every package scripts/setup.sh lists in facet_packages (what facet needs
#      to build) is installed by the Dockerfile's build stage;
#   2. every shared library the facet binary links (ldd) comes from a Debian
#      package the runtime stage installs, or from one debian:bookworm-slim
#      already has (libc6, libstdc++6, libgcc-s1).
# Usage: dockerfile_packages_test.sh REPO FACET_BINARY
set -euo pipefail
repo=$1
binary=$2
failed=0

# The packages of the first `apt-get install` after a FROM line matching $1.
stage_packages() {
  awk -v from="$1" '
    $1 == "FROM" { in_stage = ($0 ~ from); next }
    in_stage && /apt-get install/ { installing = 1 }
    installing {
      line = $0
      sub(/.*--no-install-recommends/, "", line)
      n = split(line, words, /[ \t\\]+/)
      for (i = 1; i <= n; i++) {
        if (words[i] == "&&") { exit }
        if (words[i] != "" && words[i] !~ /^-/) print words[i]
      }
    }' "${repo}/Dockerfile"
}

build_stage=$(stage_packages ' AS build$' | sort -u)
runtime_stage=$(stage_packages ' AS runtime$' | sort -u)
[[ -n ${build_stage} ]] || { echo "FAIL: no apt-get install in the Dockerfile's build stage"; exit 1; }
[[ -n ${runtime_stage} ]] || { echo "FAIL: no apt-get install in the runtime stage"; exit 1; }

facet_packages=$(bash -c "source <(sed -n '/^facet_packages=(/,/^)/p' '${repo}/scripts/setup.sh'); \
  printf '%s\n' \"\${facet_packages[@]}\"")
[[ -n ${facet_packages} ]] || { echo "FAIL: no facet_packages in scripts/setup.sh"; exit 1; }
for package in ${facet_packages}; do
  if ! grep -qx -- "${package}" <<<"${build_stage}"; then
    echo "FAIL: scripts/setup.sh's facet_packages has ${package}; the Dockerfile's build stage does not install it"
    failed=1
  fi
done

base_packages="libc6 libstdc++6 libgcc-s1"
# What the runtime stage's packages bring with them (libgrpc29 brings libupb,
# ...): their dependencies, recursively.
# shellcheck disable=SC2086
installed=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances ${runtime_stage} 2>/dev/null |
  awk '$1 == "Depends:" { print $2 }' | sort -u)
# The package of each library facet links, with one dpkg -S for all (dpkg
# knows a library of a merged /usr by either path).
mapfile -t links < <(ldd "${binary}" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }')
declare -A owner_of
while IFS= read -r line; do
  package=${line%%: *}
  path=${line#*: }
  owner_of[/usr${path#/usr}]=${package%%:*}
done < <(for link in "${links[@]}"; do
  real=$(readlink -f "${link#* }")
  echo "${real}"
  echo "${real#/usr}"
done | xargs dpkg -S 2>/dev/null)
for link in "${links[@]}"; do
  library=${link%% *}
  real=$(readlink -f "${link#* }")
  package=${owner_of[/usr${real#/usr}]:-}
  if [[ -z ${package} ]]; then
    echo "FAIL: ${library} (${real}) belongs to no Debian package"
    failed=1
  elif ! grep -qx -- "${package}" <<<"${runtime_stage}"$'\n'"${installed}" &&
    [[ " ${base_packages} " != *" ${package} "* ]]; then
    echo "FAIL: facet links ${library} from ${package}, which the Dockerfile's runtime stage does not install"
    failed=1
  fi
done

if ((failed)); then exit 1; fi
echo "PASS: the build stage installs facet_packages ($(wc -w <<<"${facet_packages}")), the runtime stage every library facet links"
