# Sourced by the usage tests: expect_usage_error WANT ARGS... runs
# "${program}" ARGS... and counts a failure in ${failures} unless it exits
# with status 2 and its stderr contains WANT.
failures=0
expect_usage_error() {
  local want=$1
  shift
  local output
  output=$("${program}" "$@" 2>&1 >/dev/null)
  local got=$?
  if [[ ${got} -ne 2 ]]; then
    echo "FAIL: $(basename "${program}") $* exited ${got}, want 2"
    failures=$((failures + 1))
  elif [[ ${output} != *"${want}"* ]]; then
    echo "FAIL: $(basename "${program}") $*: message \"${output}\" lacks \"${want}\""
    failures=$((failures + 1))
  fi
}
