#!/usr/bin/env bash
# Instructions per change in `facet serve` and in the null server
# (docs/performance.md, command (s)). Each server runs under callgrind behind
# facet_load, which opens the streams and makes the changes; callgrind writes
# out its counts as each change reaches the server (Facet:
# AdsService::OnSnapshot; the null server: NullAdsService::PushEdit), so each
# part between two changes is one change's whole cost in the server, on every
# thread: the edit's read and build (Facet), the pushes, their writes, the
# ACKs, and the idle gap's timers. Counts do not move with the machine's load
# as times do; the kernel's share (socket reads and writes) is not counted.
#
# Usage: test/load/count_instructions.sh [--streams=N] [--connections=N]
#            [--services=N] [--changes=N] [--resources=LIST] [--build=DIR]
# Defaults: 1,000 streams over 10 connections, 2,000 services, 3 changes (2
# counted: the first change's part also holds the streams' sync), build/.
# Prints each counted change per server, the medians and their ratio, then
# one JSON line. Exit status: 0 when both runs delivered every push and every
# change was counted, 1 otherwise, 2 for a usage error.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
streams=1000
connections=10
services=2000
changes=3
resources=""
build=${repo}/build
for arg in "$@"; do
  case "${arg}" in
    --streams=*) streams=${arg#*=} ;;
    --connections=*) connections=${arg#*=} ;;
    --services=*) services=${arg#*=} ;;
    --changes=*) changes=${arg#*=} ;;
    --resources=*) resources=${arg#*=} ;;
    --build=*) build=${arg#*=} ;;
    *)
      sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
      exit 2
      ;;
  esac
done
for value in "${streams}" "${connections}" "${services}" "${changes}"; do
  if ! [[ "${value}" =~ ^[1-9][0-9]*$ ]]; then
    echo "count_instructions.sh: --streams, --connections, --services and --changes take" \
      "positive whole numbers" >&2
    exit 2
  fi
done
if ((changes < 2)); then
  echo "count_instructions.sh: --changes must be at least 2 (the first is not counted)" >&2
  exit 2
fi
if ! command -v valgrind >/dev/null 2>&1; then
  echo "count_instructions.sh: valgrind is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT

# A wrapper per server: facet_load starts it as it would start the server.
wrap() {  # name binary trigger
  cat >"${work}/$1.sh" <<EOF
#!/bin/sh
exec valgrind --tool=callgrind --dump-before='$3' \\
  --callgrind-out-file=${work}/$1.out.%p "$2" "\$@" 2>>${work}/$1.valgrind.log
EOF
  chmod +x "${work}/$1.sh"
}
wrap facet "${build}/controller/cli/facet" '*AdsService::OnSnapshot*'
wrap null "${build}/test/load/facet_null_server" '*NullAdsService::PushEdit*'

load_args=(--streams="${streams}" --connections="${connections}" --services="${services}"
  --changes="${changes}" --deadline=3600s --stop-timeout=30m)
[[ -n "${resources}" ]] && load_args+=(--resources="${resources}")

status=0
declare -A counts
for target in facet null; do
  binary_flag=--facet_binary
  [[ "${target}" == null ]] && binary_flag=--null_server_binary
  if ! "${build}/test/load/facet_load" "${load_args[@]}" --targets="${target}" \
    "${binary_flag}=${work}/${target}.sh" >"${work}/${target}.load.log" 2>&1; then
    echo "count_instructions.sh: the ${target} run failed:" >&2
    tail -5 "${work}/${target}.load.log" >&2
    status=1
    continue
  fi
  # The parts before the counted changes: Facet's start (to its first
  # snapshot) and the streams' sync (to the first change); the null server's
  # start and sync (to the first change). The part after the last change
  # holds the shutdown and has no number.
  skip=2
  [[ "${target}" == null ]] && skip=1
  list=""
  for ((part = skip + 1; part <= skip + changes - 1; part++)); do
    file=$(ls "${work}/${target}.out."*".${part}" 2>/dev/null | head -1)
    if [[ -z "${file}" ]]; then
      echo "count_instructions.sh: ${target}: no count for change $((part - skip))" >&2
      status=1
      break
    fi
    list+="$(awk '/^totals:/ {print $2}' "${file}") "
  done
  counts[${target}]=${list% }
  pushes=$(grep -o '"expected":[0-9]*' "${work}/${target}.load.log" | head -1 | cut -d: -f2)
  counts[${target}_pushes]=${pushes:-0}
done

median() { tr ' ' '\n' <<<"$1" | sort -n | awk 'NF {v[++n] = $1} END {
  if (n == 0) print 0; else if (n % 2) print v[(n + 1) / 2];
  else printf "%.0f\n", (v[n / 2] + v[n / 2 + 1]) / 2 }'; }
facet_median=$(median "${counts[facet]:-}")
null_median=$(median "${counts[null]:-}")
per_change_pushes=$(( ${counts[facet_pushes]:-0} / changes ))
ratio=$(awk -v f="${facet_median}" -v n="${null_median}" \
  'BEGIN { if (n > 0) printf "%.3f", f / n; else print 0 }')
echo "instructions per change (${streams} streams, ${per_change_pushes} pushes a change):"
echo "  facet: ${counts[facet]:-none} (median ${facet_median})"
echo "  null:  ${counts[null]:-none} (median ${null_median})"
echo "  facet / null: ${ratio}"
json_list() { tr ' ' ',' <<<"$1"; }
echo "{\"streams\":${streams},\"connections\":${connections},\"services\":${services},\"changes\":${changes},\"pushes_per_change\":${per_change_pushes},\"facet\":[$(json_list "${counts[facet]:-}")],\"null\":[$(json_list "${counts[null]:-}")],\"facet_median\":${facet_median},\"null_median\":${null_median},\"ratio\":${ratio}}"
exit "${status}"
