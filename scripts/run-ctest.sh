#!/usr/bin/env bash
# Runs every CTest entry of a build directory and fails when any test was
# skipped: a test that skips on a machine set up by scripts/setup.sh means a
# missing install step, not a pass. Skips are found at both levels:
#   - a CTest entry that exits with its SKIP_RETURN_CODE (77 here: a shell
#     test missing a tool), which CTest reports as "Skipped";
#   - a GoogleTest case that calls GTEST_SKIP() inside a binary that passes,
#     which CTest cannot see: every GoogleTest binary writes its results as
#     XML (GTEST_OUTPUT) into DIR/test-results/, and skipped cases are listed
#     from there.
# Usage: scripts/run-ctest.sh DIR [CTEST-ARGS...]   (extra arguments go to
# ctest, e.g. --timeout 600 -R REGEX; the environment is passed through). Exit status:
# ctest's when it failed, 1 when it passed with skips, 0 otherwise.
set -uo pipefail
dir=$(cd "$1" && pwd)
shift
results=${dir}/test-results
rm -rf "${results}"
mkdir -p "${results}"
log=${results}/ctest.log
(cd "${dir}" && GTEST_OUTPUT="xml:${results}/" \
  ctest --output-on-failure -j "$(nproc)" "$@") 2>&1 | tee "${log}"
status=${PIPESTATUS[0]}
if ((status != 0)); then exit "${status}"; fi

skipped=()
while IFS= read -r line; do
  skipped+=("${line}")
done < <(sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .*\*\*\*Skipped.*/\1 (CTest entry skipped; its output says why)/p' "${log}")
for xml in "${results}"/*.xml; do
  [[ -f ${xml} ]] || continue
  # <testcase name="Case" ... classname="Suite"> ... <skipped message="why"/>
  while IFS= read -r line; do
    skipped+=("${line}")
  done < <(awk -v binary="$(basename "${xml}" .xml)" '
    /<testcase / {
      match($0, /name="[^"]*"/); name = substr($0, RSTART + 6, RLENGTH - 7)
      match($0, /classname="[^"]*"/); suite = substr($0, RSTART + 11, RLENGTH - 12)
    }
    /<skipped/ {
      message = ""
      if (match($0, /message="[^"]*"/)) message = substr($0, RSTART + 9, RLENGTH - 10)
      print binary ": " suite "." name " skipped: " message
    }' "${xml}")
done
if ((${#skipped[@]} > 0)); then
  echo "run-ctest.sh: ${#skipped[@]} test(s) skipped in ${dir}; a skip means a missing install" \
    "step (scripts/setup.sh installs everything the tests need):" >&2
  printf '  %s\n' "${skipped[@]}" >&2
  exit 1
fi
echo "run-ctest.sh: no test skipped in ${dir}"
