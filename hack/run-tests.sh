#!/bin/sh
# run-tests.sh TESTDIR [E2EDIR] - run every test binary under TESTDIR, then
# every test/e2e/*.sh script, and add up their "N passed, N failed" lines.
# A binary or script that exits non-zero without such a line counts as one
# failure. Ends with the total line; exits 1 if anything failed.
#
# Environment: BINDIR (the binaries under test), TEST_FILTER (run only the
# programs whose path contains it), TEST_VALGRIND=1 (unit tests under
# valgrind --leak-check=full --error-exitcode=1).
set -u
testdir=${1:-}
e2edir=${2:-}
total_pass=0
total_fail=0
failed_progs=""
log=$(mktemp)
times=$(mktemp)
trap 'rm -f "$log" "$times"' EXIT

run_one() {
  prog=$1; shift
  case "$prog" in *"${TEST_FILTER:-}"*) ;; *) return ;; esac
  printf '== %s\n' "$prog"
  t0=$(date +%s)
  "$@" >"$log" 2>&1
  rc=$?
  t1=$(date +%s)
  cat "$log"
  printf '%s %s\n' "$((t1 - t0))" "$prog" >>"$times"
  line=$(grep -E '^([A-Za-z]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  if [ -n "$line" ]; then
    p=$(echo "$line" | sed -E 's/^([A-Za-z]+: )?([0-9]+) passed, ([0-9]+) failed.*/\2/')
    f=$(echo "$line" | sed -E 's/^([A-Za-z]+: )?([0-9]+) passed, ([0-9]+) failed.*/\3/')
  else
    p=0; f=0
  fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1
  fi
  total_pass=$((total_pass + p))
  total_fail=$((total_fail + f))
  if [ "$f" -ne 0 ]; then
    failed_progs="$failed_progs $prog"
  fi
}

if [ -n "$testdir" ] && [ -d "$testdir" ]; then
  for t in $(find "$testdir" -type f -perm -u+x -name 'test_*' | sort); do
    if [ "${TEST_VALGRIND:-0}" = 1 ]; then
      run_one "$t" valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=1 "$t"
    else
      run_one "$t" "$t"
    fi
  done
fi
if [ -n "$e2edir" ] && [ -d "$e2edir" ]; then
  for s in $(find "$e2edir" -maxdepth 1 -type f -name '*.sh' | sort); do
    run_one "$s" sh "$s"
  done
fi
# the wall time of the slowest programs (the CI run has a 20 minute budget)
echo "slowest (s):"
sort -rn "$times" | head -n 8 | sed 's/^/  /'
if [ -n "$failed_progs" ]; then
  echo "failed:$failed_progs"
fi
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
