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
# Each count is also given without Debian gRPC's completion-queue tag scan
# (cq_check_tag, the function at libgrpc.so.29+0x4f1400 of Debian's 1.51.1;
# docs/performance.md, "Re-measured at 1dfbdb8"), which both servers pay in
# proportion to the streams they hold and which valgrind, running one thread
# at a time, inflates unevenly (0 when the library has no such function).
#
# Usage: test/load/count_instructions.sh [--streams=N] [--connections=N]
#            [--services=N] [--changes=N] [--resources=LIST] [--build=DIR]
#            [--keep=DIR] [--cache-sim] [--ll=BYTES,WAYS,LINE]
# Defaults: 1,000 streams over 10 connections, 2,000 services, 4 changes (the
# first is not counted: under valgrind the streams' last ACKs of their sync
# may still be read while it is pushed; nor is the last, which holds the
# shutdown), build/.
# Prints each counted change per server, the medians and their ratio, then
# one JSON line. --keep copies callgrind's files (facet.out.PID.N,
# null.out.PID.N; callgrind_annotate reads them) and the logs to DIR.
# --cache-sim runs callgrind's cache simulator as well (a first-level data
# cache and a last-level cache of the machine's sizes, one thread at a time)
# and prints each counted change's data-cache misses: D1 (first level, read
# and write) and LL (last level, the ones that go to memory). valgrind takes
# the sizes from the processor; a virtual machine may report a last level
# far larger than a core's share of it (seen here: 512 MiB), so --ll sets it
# (valgrind's --LL; --ll=1048576,16,64 is one core's second-level cache).
# Exit status: 0 when both runs delivered every push and every change was
# counted, 1 otherwise, 2 for a usage error.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
streams=1000
connections=10
services=2000
changes=4
resources=""
build=${repo}/build
keep=""
cache_sim=no
last_level=""
for arg in "$@"; do
  case "${arg}" in
    --streams=*) streams=${arg#*=} ;;
    --connections=*) connections=${arg#*=} ;;
    --services=*) services=${arg#*=} ;;
    --changes=*) changes=${arg#*=} ;;
    --resources=*) resources=${arg#*=} ;;
    --build=*) build=${arg#*=} ;;
    --keep=*) keep=${arg#*=} ;;
    --cache-sim) cache_sim=yes ;;
    --ll=*) last_level=--LL=${arg#*=} ;;
    *)
      sed -n '2,35p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
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
if ((changes < 3)); then
  echo "count_instructions.sh: --changes must be at least 3 (the first and the last are not" \
    "counted)" >&2
  exit 2
fi
if ! command -v valgrind >/dev/null 2>&1; then
  echo "count_instructions.sh: valgrind is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi

work=$(mktemp -d)
finish() {
  if [[ -n "${keep}" ]] &&
    ! { mkdir -p "${keep}" && cp "${work}"/*.out.* "${work}"/*.log "${keep}"/; }; then
    echo "count_instructions.sh: could not keep callgrind's files in ${keep}" >&2
  fi
  rm -rf "${work}"
}
trap finish EXIT

# A wrapper per server: facet_load starts it as it would start the server.
wrap() {  # name binary trigger
  cat >"${work}/$1.sh" <<EOF
#!/bin/sh
exec valgrind --tool=callgrind --cache-sim=${cache_sim} ${last_level} --dump-before='$3' \\
  --callgrind-out-file=${work}/$1.out.%p "$2" "\$@" 2>>${work}/$1.valgrind.log
EOF
  chmod +x "${work}/$1.sh"
}
wrap facet "${build}/controller/cli/facet" '*AdsService::OnSnapshot*'
wrap null "${build}/test/load/facet_null_server" '*NullAdsService::PushEdit*'

# Under valgrind (slower still with --cache-sim) a server may answer its own
# keepalive pings' acknowledgements later than gRPC's 20 s and close the
# connection: the timeout is an hour, which no count depends on.
load_args=(--streams="${streams}" --connections="${connections}" --services="${services}"
  --changes="${changes}" --deadline=3600s --stop-timeout=30m --server-keepalive-timeout=1h)
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
  # Part N holds what ran before the Nth trigger: Facet's first trigger is
  # its first snapshot, before any stream, so its part 2 is the streams' sync
  # and part 2 + k change k; the null server's part 1 is its start and the
  # sync, part 1 + k change k. The part after the last change holds the
  # shutdown and has no number.
  first=3
  [[ "${target}" == null ]] && first=2
  list=""
  rest=""
  for ((part = first + 1; part <= first + changes - 2; part++)); do
    files=("${work}/${target}.out."*".${part}")
    file=${files[0]}
    if [[ ! -f "${file}" ]]; then
      echo "count_instructions.sh: ${target}: no count for change $((part - first + 1))" >&2
      status=1
      break
    fi
    total=$(awk '/^totals:/ {print $2}' "${file}")
    if [[ "${cache_sim}" == yes ]]; then
      misses=$(awk '/^events:/ {for (i = 2; i <= NF; i++) column[$i] = i}
        /^totals:/ {printf "%d %d", $column["D1mr"] + $column["D1mw"],
          $column["DLmr"] + $column["DLmw"]}' "${file}")
      if [[ ! "${misses}" =~ ^[1-9][0-9]*\ [0-9]+$ ]]; then
        echo "count_instructions.sh: ${target}: no cache counts for change" \
          "$((part - first + 1))" >&2
        status=1
      fi
      counts[${target}_d1]+="${misses% *} "
      counts[${target}_ll]+="${misses#* } "
    fi
    scan=$(callgrind_annotate --auto=no --inclusive=yes --threshold=100 "${file}" 2>/dev/null |
      awk '!found && /0x00000000004f1400 \[.*libgrpc\.so\.29/ {gsub(",", "", $1); print $1; found = 1}')
    list+="${total} "
    rest+="$((total - ${scan:-0})) "
  done
  counts[${target}]=${list% }
  counts[${target}_rest]=${rest% }
  pushes=$(grep -m1 -o '"expected":[0-9]*' "${work}/${target}.load.log" | cut -d: -f2)
  counts[${target}_pushes]=${pushes:-0}
done

median() { tr ' ' '\n' <<<"$1" | sort -n | awk 'NF {v[++n] = $1} END {
  if (n == 0) print 0; else if (n % 2) print v[(n + 1) / 2];
  else printf "%.0f\n", (v[n / 2] + v[n / 2 + 1]) / 2 }'; }
facet_median=$(median "${counts[facet]:-}")
null_median=$(median "${counts[null]:-}")
facet_rest_median=$(median "${counts[facet_rest]:-}")
null_rest_median=$(median "${counts[null_rest]:-}")
per_change_pushes=$(( ${counts[facet_pushes]:-${counts[null_pushes]:-0}} / changes ))
ratio() { awk -v f="$1" -v n="$2" 'BEGIN { if (n > 0) printf "%.3f", f / n; else print 0 }'; }
ratio=$(ratio "${facet_median}" "${null_median}")
rest_ratio=$(ratio "${facet_rest_median}" "${null_rest_median}")
echo "instructions per change (${streams} streams, ${per_change_pushes} pushes a change):"
echo "  facet: ${counts[facet]:-none} (median ${facet_median})"
echo "  null:  ${counts[null]:-none} (median ${null_median})"
echo "  facet / null: ${ratio}"
echo "without gRPC's completion-queue tag scan:"
echo "  facet: ${counts[facet_rest]:-none} (median ${facet_rest_median})"
echo "  null:  ${counts[null_rest]:-none} (median ${null_rest_median})"
echo "  facet / null: ${rest_ratio}"
json_list() { tr ' ' ',' <<<"$1"; }
cache_json=""
if [[ "${cache_sim}" == yes ]]; then
  echo "data-cache misses per change (callgrind's simulator):"
  for target in facet null; do
    d1=${counts[${target}_d1]:-}
    ll=${counts[${target}_ll]:-}
    echo "  ${target}: D1 ${d1% } (median $(median "${d1}")), LL ${ll% } (median $(median "${ll}"))"
  done
  d1_ratio=$(ratio "$(median "${counts[facet_d1]:-}")" "$(median "${counts[null_d1]:-}")")
  ll_ratio=$(ratio "$(median "${counts[facet_ll]:-}")" "$(median "${counts[null_ll]:-}")")
  echo "  facet / null: D1 ${d1_ratio}, LL ${ll_ratio}"
  cache_json=",\"facet_d1\":[$(json_list "${counts[facet_d1]% }")],\"null_d1\":[$(json_list "${counts[null_d1]% }")],\"facet_ll\":[$(json_list "${counts[facet_ll]% }")],\"null_ll\":[$(json_list "${counts[null_ll]% }")]"
fi
echo "{\"streams\":${streams},\"connections\":${connections},\"services\":${services},\"changes\":${changes},\"pushes_per_change\":${per_change_pushes},\"facet\":[$(json_list "${counts[facet]:-}")],\"null\":[$(json_list "${counts[null]:-}")],\"facet_median\":${facet_median},\"null_median\":${null_median},\"ratio\":${ratio},\"facet_without_scan\":[$(json_list "${counts[facet_rest]:-}")],\"null_without_scan\":[$(json_list "${counts[null_rest]:-}")],\"ratio_without_scan\":${rest_ratio}${cache_json}}"
exit "${status}"
