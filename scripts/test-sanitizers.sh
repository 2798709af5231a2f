#!/usr/bin/env bash
# The sanitizer and fuzzing stage of CI (scripts/test.sh runs it after the host
# tests). With clang:
#   1. builds everything with ASan+UBSan, the libFuzzer targets and
#      -Werror=thread-safety into build-asan/, and runs every CTest entry there
#      (the end-to-end tests spawn that build's sanitized facet);
#   2. fuzzes each target in test/fuzz for FACET_FUZZ_SECONDS (default 30) on
#      its checked-in corpus; new inputs stay in build-asan/fuzz/, a crash
#      fails the stage and its input is kept there;
#   3. builds the server, relay and controller tests with TSan into
#      build-tsan/ (gRPC's inline headers uninstrumented, abseil's Mutex
#      annotated: see test/sanitizers/) and runs them, after tsan_canary_test,
#      which checks that this build reports a race and follows abseil's locks.
# Any sanitizer report aborts the process that made it, so its test fails.
# Each stage prints how long it took. Suppressions, each with its reason, are
# in test/sanitizers/. Usage: scripts/test-sanitizers.sh [asan|fuzz|tsan]...
# (default: asan fuzz tsan, in that order).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
asan_dir=${FACET_ASAN_BUILD_DIR:-${repo}/build-asan}
tsan_dir=${FACET_TSAN_BUILD_DIR:-${repo}/build-tsan}
fuzz_seconds=${FACET_FUZZ_SECONDS:-30}
jobs=$(nproc)
stages=("$@")
((${#stages[@]} > 0)) || stages=(asan fuzz tsan)

# The fuzzers, in test/fuzz; each has corpus/<name>.
fuzzers=(constraints_fuzzer names_fuzzer proto_json_fuzzer manifest_fuzzer
  stream_state_fuzzer watch_event_fuzzer kubeconfig_fuzzer)
# The tests run under TSan: the build's self-check (tsan_canary_test), then
# the ADS server, the relay and the controller, each
# with its own threads (gRPC reactors, workers, watches, the HTTP server's I/O
# thread and handler pool).
# status_churn_test is left out: it takes about 45 s unsanitized, far longer
# under TSan, and exercises the same code as controller_e2e_test.
tsan_tests=(tsan_canary_test ads_test ads_wire_test server_bounds_test e2e_test tls_e2e_test
  upstream_client_test relay_test relay_command_test serving_runner_test relay_e2e_test
  kube_source_test manifest_dir_source_test reflector_test leader_elector_test status_writer_test
  admin_server_test http_server_test webhook_test cpprest_kube_client_test controller_e2e_test)

# ccache shares objects between checkouts and build directories: paths below
# the common parent of the tree and the build directories are hashed relative
# to it.
common_parent() {
  local a=$1 b
  shift
  for b in "$@"; do
    while [[ "${a}" != / && "${b}/" != "${a}/"* ]]; do a=$(dirname "${a}"); done
  done
  echo "${a}"
}
mkdir -p "${asan_dir}" "${tsan_dir}"
CCACHE_BASEDIR=$(common_parent "${repo}" "$(cd "${asan_dir}" && pwd)" "$(cd "${tsan_dir}" && pwd)")
export CCACHE_BASEDIR CCACHE_NOHASHDIR=true CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}

clang=$(command -v clang++-14 || command -v clang++ || true)
if [[ -z "${clang}" ]]; then
  echo "test-sanitizers.sh: clang++ not found; run scripts/setup.sh" >&2
  exit 1
fi
symbolizer=$(command -v llvm-symbolizer-14 || command -v llvm-symbolizer || echo "")
supp=${repo}/test/sanitizers
common_options="halt_on_error=1:print_summary=1"
[[ -n "${symbolizer}" ]] && common_options+=":external_symbolizer_path=${symbolizer}"
export ASAN_OPTIONS="${common_options}:detect_leaks=1"
export LSAN_OPTIONS="suppressions=${supp}/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="${common_options}:print_stacktrace=1:suppressions=${supp}/ubsan.supp"
# ignore_noninstrumented_modules: accesses inside the uninstrumented Debian
# libraries (gRPC, protobuf, abseil) are not checked (memcpy, free, sendmsg
# called from gRPC core), as TSan cannot see their synchronization either.
export TSAN_OPTIONS="${common_options}:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=${supp}/tsan.supp"

# Both builds link the host build's compiled Envoy API closure (generated code
# is not instrumented in any build) instead of compiling it with clang: it is
# built (or found up to date) there first.
host_dir=${FACET_BUILD_DIR:-${repo}/build}
configure() {  # DIR CMAKE-ARGS...
  local dir=$1
  shift
  "${repo}/scripts/build.sh" facet_envoy_api >/dev/null
  if [[ ! -f "${dir}/build.ninja" ]]; then
    cmake -S "${repo}" -B "${dir}" -G Ninja -DCMAKE_CXX_COMPILER="${clang}" \
      -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only" \
      -DFACET_BUILD_BENCHMARKS=OFF "-DFACET_ENVOY_API_FROM=$(cd "${host_dir}" && pwd)" "$@"
  fi
}

# Runs ctest in DIR (extra arguments are ctest's). A test may ignore the exit
# status of a process it spawned (a facet it stops with SIGTERM, say), so every
# sanitizer report, from any process, is also written to DIR/sanitizer-reports/
# and the stage fails if one is there.
run_ctest() {  # DIR CTEST-ARGS...
  local dir=$1 reports=$1/sanitizer-reports status=0
  shift
  rm -rf "${reports}"
  mkdir -p "${reports}"
  (
    export ASAN_OPTIONS="${ASAN_OPTIONS}:log_path=${reports}/asan"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS}:log_path=${reports}/ubsan"
    export TSAN_OPTIONS="${TSAN_OPTIONS}:log_path=${reports}/tsan"
    "${repo}/scripts/run-ctest.sh" "${dir}" --timeout 900 "$@"
  ) || status=1
  if compgen -G "${reports}/*" >/dev/null; then
    echo "test-sanitizers.sh: sanitizer reports (${reports}):" >&2
    head -n 80 "${reports}"/* >&2
    status=1
  fi
  return "${status}"
}

stage_start=0
begin() {
  stage_start=${SECONDS}
  echo "test-sanitizers.sh: $*"
}
end() { echo "test-sanitizers.sh: $* took $((SECONDS - stage_start)) s"; }

run_asan() {
  begin "ASan+UBSan build (${asan_dir})"
  configure "${asan_dir}" -DFACET_SANITIZE=address,undefined -DFACET_FUZZ=ON
  ninja -C "${asan_dir}"
  end "ASan+UBSan build"
  begin "ASan+UBSan tests"
  # status_churn_test is a load test whose deadlines are sized for the
  # unsanitized build (about 45 s there, 80 s and missed deadlines under
  # ASan); controller_e2e_test covers the same code.
  run_ctest "${asan_dir}" -E '^status_churn_test$'
  end "ASan+UBSan tests"
}

run_fuzz() {
  begin "fuzzing each target for ${fuzz_seconds} s"
  local work=${asan_dir}/fuzz failed=0 name pids=() names=()
  rm -rf "${work}"
  for name in "${fuzzers[@]}"; do
    mkdir -p "${work}/${name}/new"
    # The first corpus directory receives new inputs; the checked-in one is
    # only read. -timeout: one input may not take 10 s; -rss_limit_mb: nor
    # 2 GB.
    "${asan_dir}/test/fuzz/${name}" -max_total_time="${fuzz_seconds}" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="${work}/${name}/" \
      "${work}/${name}/new" "${repo}/test/fuzz/corpus/${name}" >"${work}/${name}/log" 2>&1 &
    pids+=($!)
    names+=("${name}")
    if ((${#pids[@]} >= jobs)); then
      wait "${pids[0]}" || { echo "FUZZ FAILURE: ${names[0]}"; failed=1; }
      pids=("${pids[@]:1}")
      names=("${names[@]:1}")
    fi
  done
  local i
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { echo "FUZZ FAILURE: ${names[$i]}"; failed=1; }
  done
  for name in "${fuzzers[@]}"; do
    echo "${name}: $(grep -E '^(#[0-9]+ *DONE|stat::number_of_executed_units)' "${work}/${name}/log" | tail -1)"
    if grep -q -E "ERROR: (libFuzzer|AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer)|runtime error:" "${work}/${name}/log"; then
      failed=1
      echo "---- ${name}: last lines of ${work}/${name}/log (crash input: ${work}/${name}/crash-*)"
      tail -40 "${work}/${name}/log"
    fi
  done
  end "fuzzing"
  if ((failed)); then
    echo "test-sanitizers.sh: a fuzzer failed; add its input to test/fuzz/regressions/<fuzzer>/ with the fix" >&2
    exit 1
  fi
}

run_tsan() {
  begin "TSan build (${tsan_dir})"
  configure "${tsan_dir}" -DFACET_SANITIZE=thread -DFACET_FUZZ=OFF
  ninja -C "${tsan_dir}" "${tsan_tests[@]}" kube_test_server facet
  end "TSan build"
  begin "TSan tests"
  local regex
  regex="^($(IFS='|'; echo "${tsan_tests[*]}"))\$"
  run_ctest "${tsan_dir}" -R "${regex}"
  end "TSan tests"
}

for stage in "${stages[@]}"; do
  case "${stage}" in
    asan) run_asan ;;
    fuzz) run_fuzz ;;
    tsan) run_tsan ;;
    *) echo "test-sanitizers.sh: unknown stage ${stage} (asan, fuzz or tsan)" >&2; exit 2 ;;
  esac
done
echo "test-sanitizers.sh: all sanitizer stages passed"
