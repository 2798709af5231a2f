#!/usr/bin/env bash
# The cold paths on the load world (docs/performance.md): `facet validate` of
# it, and `facet serve` from spawn to /readyz answering, each RUNS times, with
# the same on an empty directory as the null baseline (process start-up, no
# objects). Prints every run and the minimum and median, then one JSON line.
#
# Usage: test/load/cold_paths.sh [--services=N] [--runs=N] [--facet=BINARY]
#                                [--generate-world=BINARY] [--world=DIR]
# Defaults: 2,000 services (12,000 objects), 5 runs, the binaries of build/.
# Exit status: 0 when every run completed (validate exit 0, serve ready and
# stopped with status 0), 1 otherwise, 2 for a usage error.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
services=2000
runs=5
facet=${repo}/build/controller/cli/facet
generate_world=${repo}/build/test/load/generate_world
world=""
for arg in "$@"; do
  case "${arg}" in
    --services=*) services=${arg#*=} ;;
    --runs=*) runs=${arg#*=} ;;
    --facet=*) facet=${arg#*=} ;;
    --generate-world=*) generate_world=${arg#*=} ;;
    --world=*) world=${arg#*=} ;;
    *)
      sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
      exit 2
      ;;
  esac
done
if ! [[ "${services}" =~ ^[0-9]+$ && "${runs}" =~ ^[1-9][0-9]*$ ]]; then
  echo "cold_paths.sh: --services and --runs take positive whole numbers" >&2
  exit 2
fi

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [[ -n "${server_pid}" ]]; then kill "${server_pid}" 2>/dev/null || true; fi
  rm -rf "${work}"
}
trap cleanup EXIT
if [[ -z "${world}" ]]; then
  world=${work}/world
  "${generate_world}" --services="${services}" "${world}" >/dev/null
fi
empty=${work}/empty
mkdir -p "${empty}"

now_ns() { date +%s%N; }

# Prints "wall_ms user_ms sys_ms max_rss_kib" for `facet validate DIR`.
validate_once() {
  local dir=$1 out start end
  start=$(now_ns)
  out=$(/usr/bin/time -f '%U %S %M' "${facet}" validate --no-warnings "${dir}" 2>&1 >/dev/null |
        tail -1)
  end=$(now_ns)
  read -r user sys rss <<<"${out}"
  awk -v w="$(((end - start) / 1000000))" -v u="${user}" -v s="${sys}" -v r="${rss}" \
    'BEGIN { printf "%d %d %d %d\n", w, u * 1000, s * 1000, r }'
}

# Whether GET /readyz on HOST:PORT answers 200 (bash's /dev/tcp: no client
# to install).
readyz() {
  local host=${1%:*} port=${1##*:} status
  exec 3<>"/dev/tcp/${host}/${port}" || return 1
  printf 'GET /readyz HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" >&3
  read -r status <&3 || status=""
  exec 3<&- 3>&-
  [[ "${status}" == *" 200 "* ]]
}

# Prints "ready_ms rss_kib hwm_kib" for `facet serve` on DIR: spawn to the
# first 200 from /readyz, and the server's VmRSS and VmHWM at that moment.
serve_once() {
  local dir=$1 port_file=${work}/ready.json admin start ready status
  rm -f "${port_file}"
  start=$(now_ns)
  "${facet}" serve --manifests="${dir}" --xds-address=127.0.0.1:0 \
    --admin-address=127.0.0.1:0 --ready-file="${port_file}" \
    >/dev/null 2>"${work}/serve.err" &
  server_pid=$!
  # The admin port is known from the ready file, written as /readyz starts
  # answering; /readyz confirms it.
  until [[ -s "${port_file}" ]]; do
    if ! kill -0 "${server_pid}" 2>/dev/null; then
      echo "cold_paths.sh: facet serve exited before it was ready:" >&2
      cat "${work}/serve.err" >&2
      return 1
    fi
    sleep 0.002
  done
  admin=$(sed -E 's/.*"admin_address":"([^"]*)".*/\1/' "${port_file}")
  until readyz "${admin}"; do sleep 0.002; done
  ready=$(now_ns)
  local rss hwm
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/${server_pid}/status")
  hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/${server_pid}/status")
  kill -TERM "${server_pid}"
  status=0
  wait "${server_pid}" || status=$?
  server_pid=""
  if ((status != 0)); then
    echo "cold_paths.sh: facet serve exited with status ${status} after SIGTERM" >&2
    return 1
  fi
  echo "$(((ready - start) / 1000000)) ${rss} ${hwm}"
}

# Prints "min median" of the numbers on standard input.
min_median() {
  sort -n | awk '{ v[NR] = $1 } END { printf "%d %d\n", v[1], v[int((NR + 1) / 2)] }'
}

objects=$(grep -h -c '^kind: XdsResource' "${world}"/*.yaml 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
echo "world: ${world} (${objects} objects); facet: ${facet}"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"

declare -A results
for target in validate serve; do
  for dir in "${world}" "${empty}"; do
    label=$([[ "${dir}" == "${empty}" ]] && echo null || echo world)
    : >"${work}/${target}-${label}"
    for ((i = 1; i <= runs; ++i)); do
      if [[ "${target}" == validate ]]; then
        line=$(validate_once "${dir}")
        read -r wall user sys rss <<<"${line}"
        echo "validate ${label} run ${i}: ${wall} ms wall, ${user} ms user, ${sys} ms sys, ${rss} KiB max RSS"
        echo "${wall} ${rss}" >>"${work}/${target}-${label}"
      else
        line=$(serve_once "${dir}")
        read -r ready rss hwm <<<"${line}"
        echo "serve ${label} run ${i}: ready after ${ready} ms, RSS ${rss} KiB (peak ${hwm} KiB)"
        echo "${ready} ${rss}" >>"${work}/${target}-${label}"
      fi
    done
    read -r tmin tmed < <(cut -d' ' -f1 "${work}/${target}-${label}" | min_median)
    read -r rmin rmed < <(cut -d' ' -f2 "${work}/${target}-${label}" | min_median)
    results[${target}_${label}]="${tmin} ${tmed} ${rmed}"
    echo "${target} ${label}: min ${tmin} ms, median ${tmed} ms; median RSS $((rmed / 1024)) MiB"
  done
done

read -r vmin vmed vrss <<<"${results[validate_world]}"
read -r vnmin vnmed vnrss <<<"${results[validate_null]}"
read -r smin smed srss <<<"${results[serve_world]}"
read -r snmin snmed snrss <<<"${results[serve_null]}"
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
printf '{"objects":%d,"runs":%d,"validate_min_ms":%d,"validate_median_ms":%d,"validate_max_rss_kib":%d,' \
  "${objects}" "${runs}" "${vmin}" "${vmed}" "${vrss}"
printf '"validate_null_min_ms":%d,"serve_ready_min_ms":%d,"serve_ready_median_ms":%d,' \
  "${vnmin}" "${smin}" "${smed}"
printf '"serve_rss_at_ready_kib":%d,"serve_null_ready_min_ms":%d,"serve_null_rss_kib":%d}\n' \
  "${srss}" "${snmin}" "${snrss}"
