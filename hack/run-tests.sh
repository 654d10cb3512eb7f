#!/bin/sh
# run-tests.sh TESTDIR [E2EDIR] - run every test binary under TESTDIR, then
# every test/e2e/*.sh script, and add up their "N passed, N failed" lines.
# A binary or script that exits non-zero without such a line counts as one
# failure. Ends with the total line; exits 1 if anything failed.
#
# Environment: BINDIR (the binaries under test), TEST_FILTER (run only the
# programs whose path contains it), TEST_VALGRIND=1 (unit tests under
# valgrind --leak-check=full --error-exitcode=1), TEST_JOBS=N (run N unit
# test binaries, then N e2e scripts, at a time; default: the machine's
# online CPUs. Each script has
# its own temporary directory and binds port 0; their windows are the
# design's promises, which hold beside a second script. TEST_JOBS=1 runs
# them one by one). The scripts that carry a line "# test-slow" start
# first, so that the longest do not start last and leave one worker busy
# alone; the output stays one block per script, in that order, each
# printed once it has ended. Ends with the ten slowest programs.
set -u
testdir=${1:-}
e2edir=${2:-}
jobs=${TEST_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)}
case "$jobs" in ''|*[!0-9]*|0) echo "TEST_JOBS: '$jobs' is not a count of 1 or more" >&2; exit 2 ;; esac
total_pass=0
total_fail=0
failed_progs=""
log=$(mktemp)
times=$(mktemp)
pdir=""
trap 'rm -f "$log" "$times"; [ -z "$pdir" ] || rm -rf "$pdir"' EXIT

# account PROG LOG RC SECONDS: print LOG and add its counts to the totals
account() {
  prog=$1; alog=$2; rc=$3
  cat "$alog"
  printf '%s %s\n' "$4" "$prog" >>"$times"
  line=$(grep -E '^([A-Za-z]+: )?[0-9]+ passed, [0-9]+ failed' "$alog" | tail -n 1)
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

run_one() {
  prog=$1; shift
  case "$prog" in *"${TEST_FILTER:-}"*) ;; *) return ;; esac
  printf '== %s\n' "$prog"
  t0=$(date +%s)
  "$@" >"$log" 2>&1
  rc=$?
  t1=$(date +%s)
  account "$prog" "$log" "$rc" "$((t1 - t0))"
}

# worker LIST: take the next unclaimed script of LIST (mkdir is the lock),
# run it, leave its output in $pdir/N.log and "RC SECONDS" in $pdir/N.done
worker() {
  n=0
  while IFS= read -r s; do
    n=$((n + 1))
    mkdir "$pdir/claim.$n" 2>/dev/null || continue
    t0=$(date +%s)
    case "$s" in
      *.sh) sh "$s" ;;
      *) if [ "${TEST_VALGRIND:-0}" = 1 ]; then vg "$s"; else "$s"; fi ;;
    esac </dev/null >"$pdir/$n.log" 2>&1 &
    echo $! >"$pdir/claim.$n/pid"
    wait $!
    rc=$?
    rm -f "$pdir/claim.$n/pid"
    t1=$(date +%s)
    echo "$rc $((t1 - t0))" >"$pdir/$n.tmp" && mv "$pdir/$n.tmp" "$pdir/$n.done"
  done <"$1"
}

# run_e2e_jobs PROG...: the programs (unit test binaries, or e2e scripts
# run by sh) TEST_JOBS at a time, reported in order
run_e2e_jobs() {
  pdir=$(mktemp -d)
  for s in "$@"; do
    case "$s" in *"${TEST_FILTER:-}"*) echo "$s" ;; esac
  done >"$pdir/list"
  # an interrupt stops the workers, then the running scripts (each stops
  # its daemons)
  wpids=""
  trap 'kill $wpids 2>/dev/null; for f in "$pdir"/claim.*/pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done; exit 1' INT TERM
  w=0
  while [ $w -lt "$jobs" ]; do
    worker "$pdir/list" &
    wpids="$wpids $!"
    w=$((w + 1))
  done
  n=0
  while IFS= read -r s; do
    n=$((n + 1))
    printf '== %s\n' "$s"
    while [ ! -f "$pdir/$n.done" ]; do sleep 0.2; done
    read -r rc secs <"$pdir/$n.done"
    account "$s" "$pdir/$n.log" "$rc" "$secs"
  done <"$pdir/list"
  wait
}

vg() { valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=1 "$@"; }
if [ -n "$testdir" ] && [ -d "$testdir" ]; then
  if [ "$jobs" -gt 1 ]; then
    # shellcheck disable=SC2046 # paths without spaces
    run_e2e_jobs $(find "$testdir" -type f -perm -u+x -name 'test_*' | sort)
  else
    for t in $(find "$testdir" -type f -perm -u+x -name 'test_*' | sort); do
      if [ "${TEST_VALGRIND:-0}" = 1 ]; then
        run_one "$t" vg "$t"
      else
        run_one "$t" "$t"
      fi
    done
  fi
fi
if [ -n "$e2edir" ] && [ -d "$e2edir" ]; then
  if [ "$jobs" -gt 1 ]; then
    # the slow ones first (see the top of this file)
    slow=$(grep -l '^# test-slow$' "$e2edir"/*.sh 2>/dev/null | sort)
    rest=$(for s in $(find "$e2edir" -maxdepth 1 -type f -name '*.sh' | sort); do
      case " $(echo $slow) " in *" $s "*) ;; *) echo "$s" ;; esac
    done)
    # shellcheck disable=SC2046,SC2086 # paths without spaces, as in the loop below
    run_e2e_jobs $slow $rest
  else
    for s in $(find "$e2edir" -maxdepth 1 -type f -name '*.sh' | sort); do
      run_one "$s" sh "$s"
    done
  fi
fi
# the wall time of the slowest programs (the CI run has a 20 minute budget)
echo "slowest (s):"
sort -rn "$times" | head -n 10 | sed 's/^/  /'
if [ -n "$failed_progs" ]; then
  echo "failed:$failed_progs"
fi
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
