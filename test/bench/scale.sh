#!/bin/sh
# scale.sh - linear in sessions and idle cost (issue 16, targets 3 and 4).
# Measures, never asserts; prints a table with the load average of each
# row. For each N of BENCH_SCALE_NS, against a fresh cubesim (cube
# dialect, or BENCH_SCALE_DIALECT) and a fresh SQLite store:
#
#  apply     `sessionctl apply` of N sessions (state Running) from a
#            directory of files of BENCH_SCALE_CHUNK sessions each (one
#            manifest is capped at 1 MiB): wall time. When sessionctl's
#            apply cannot take a directory, every file is given with its
#            own -f in the same single invocation (the table says which)
#  first     the first pass (all creates), --cube-qps 0: time from the
#            controller's start to N Running with a sandbox in the store,
#            the controller's peak RSS (VmHWM) and CPU (utime+stime)
#  restart   the controller restarted on the converged store with
#            --resync BENCH_SCALE_RESYNC: the status writes of its first
#            full pass (the store's revision before and after; a converged
#            store should see none)
#  settled   the same controller: BENCH_SCALE_PASSES more full passes,
#            their durations from its debug line "full pass done" (min,
#            median, max) and the mean of session_controller_pass_duration
#            _seconds on /metrics, its CPU per pass and peak RSS
#  idle      the controller restarted at the default --resync (60s), after
#            its first pass: CPU as % of one core over BENCH_IDLE_SECONDS,
#            RSS and peak RSS
#
# usage: sh test/bench/scale.sh   (after make; BINDIR, BENCH_SCALE_NS
#        ("10000 50000 100000"), BENCH_IDLE_SECONDS (120),
#        BENCH_SCALE_PASSES (5), BENCH_SCALE_RESYNC (1s),
#        BENCH_SCALE_CHUNK (5000), BENCH_SCALE_TIMEOUT (1800: seconds any
#        one step may take), BENCH_SCALE_PERF=DIR: `perf record
#        --call-graph dwarf` of the controller during 2 settled passes
#        after the timed ones, DIR/perf-N.data, at BENCH_SCALE_PERF_FREQ
#        (499) samples a second; BENCH_SCALE_APPLY=files: the -f per file
#        way even when apply takes a directory (dir: always -f DIR; auto);
#        BENCH_SCALE_AB=PATH: after the settled step, that other
#        session-controller binary and ours, alternating for
#        BENCH_SCALE_AB_ROUNDS (2) rounds on the same converged store:
#        settled pass median, CPU a pass and peak RSS of each, side by
#        side in one run; BENCH_SCALE_DIALECT (cube): cubesim's
#        --dialect, cube or e2b (100-row pages with X-Next-Token);
#        KEEP_TMP=1 keeps the logs)
# A failed step is reported with the tail of the log concerned and ends
# that N; the next N is still run and
# the exit status is 1. Every process it starts is stopped by PID.
set -u
cd "$(dirname "$0")/../.." || exit 2
B=${BINDIR:-$(pwd)/bin}
CC=${CC:-cc}
NS=${BENCH_SCALE_NS:-10000 50000 100000}
IDLE_S=${BENCH_IDLE_SECONDS:-120}
NPASS=${BENCH_SCALE_PASSES:-5}
RESYNC=${BENCH_SCALE_RESYNC:-1s}
CHUNK=${BENCH_SCALE_CHUNK:-5000}
TMO=${BENCH_SCALE_TIMEOUT:-1800}
PERF_DIR=${BENCH_SCALE_PERF:-}
PERF_FREQ=${BENCH_SCALE_PERF_FREQ:-499}
APPLY_MODE=${BENCH_SCALE_APPLY:-auto}
AB_BIN=${BENCH_SCALE_AB:-}
AB_ROUNDS=${BENCH_SCALE_AB_ROUNDS:-2}
DIALECT=${BENCH_SCALE_DIALECT:-cube}
CTLBIN=""

say() { echo "scale: $*"; }
die() { echo "scale: $*" >&2; exit 2; }
for t in curl awk timeout; do
  command -v $t >/dev/null || die "$t not found"
done
for x in cubesim session-controller sessionctl; do
  [ -x "$B/$x" ] || die "$B/$x not found (run make, or set BINDIR)"
done
[ -f build/libsc.a ] || die "build/libsc.a not found (run make)"
for v in "$IDLE_S" "$NPASS" "$CHUNK" "$TMO" "$PERF_FREQ" $NS; do
  case "$v" in ''|*[!0-9]*) die "not a count: \"$v\" (BENCH_SCALE_NS, BENCH_IDLE_SECONDS, BENCH_SCALE_PASSES, BENCH_SCALE_CHUNK, BENCH_SCALE_TIMEOUT, BENCH_SCALE_PERF_FREQ)" ;; esac
done
[ "$CHUNK" -gt 0 ] || die "BENCH_SCALE_CHUNK must be above 0"
[ "$TMO" -gt 0 ] || die "BENCH_SCALE_TIMEOUT must be above 0"
case "$APPLY_MODE" in auto|dir|files) ;; *) die "BENCH_SCALE_APPLY: want auto, dir or files, got \"$APPLY_MODE\"" ;; esac
case "$DIALECT" in cube|e2b) ;; *) die "BENCH_SCALE_DIALECT: want cube or e2b, got \"$DIALECT\"" ;; esac
if [ -n "$PERF_DIR" ]; then
  command -v perf >/dev/null || die "BENCH_SCALE_PERF: perf not found"
  mkdir -p "$PERF_DIR" || die "BENCH_SCALE_PERF: cannot create $PERF_DIR"
  PERF_DIR=$(cd "$PERF_DIR" && pwd)
fi

mkdir -p build/bench
# shellcheck disable=SC2046
$CC -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -Wall -Wextra \
  -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 \
  -Wno-format-nonliteral -O2 -g -I. $(pkg-config --cflags sqlite3) \
  -o build/bench/bench_converge test/bench/bench_converge.c build/libsc.a \
  $(pkg-config --libs sqlite3) || die "cannot build bench_converge"
# shellcheck disable=SC2046
$CC -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -Wall -Wextra \
  -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 \
  -O2 -g $(pkg-config --cflags sqlite3) -o build/bench/bench_revision \
  test/bench/bench_revision.c $(pkg-config --libs sqlite3) ||
  die "cannot build bench_revision"
CONV=$(pwd)/build/bench/bench_converge
BST=$(pwd)/build/bench/bench_revision

T=$(mktemp -d "${TMPDIR:-/tmp}/sc-scale.XXXXXX")
PIDS=""
RES="$T/results"
: >"$RES"
FAILED=0
cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null; done
  for p in $PIDS; do wait "$p" 2>/dev/null; done
  [ -n "${KEEP_TMP:-}" ] && echo "scale: kept $T" || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

now_ms() { date +%s%3N; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
# row N MEASURE RESULT: one line of the table, with the load average now
row() { printf '%s|%s|%s|%s\n' "$1" "$2" "$3" "$(load)" >>"$RES"; }
hwm_mb() { awk '/^VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$1/status" 2>/dev/null; }
rss_mb() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status" 2>/dev/null; }
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12 + $13}'; }
HZ=$(getconf CLK_TCK)
ticks_s() { awk -v t="$1" -v hz="$HZ" 'BEGIN {printf "%.2f", t / hz}'; }

stop() {
  kill "$1" 2>/dev/null
  wait "$1" 2>/dev/null
  np=""
  for p in $PIDS; do [ "$p" = "$1" ] || np="$np $p"; done
  PIDS=$np
}

# fail N STEP WHY [LOG]: report a failed step; the caller returns 1
fail() {
  echo "scale: N=$1: $2 failed: $3" >&2
  [ -n "${4:-}" ] && [ -f "$4" ] && { echo "--- last lines of $4" >&2; tail -n 20 "$4" >&2; }
  row "$1" "$2" "FAILED: $3"
  FAILED=1
}

# start_sim LABEL: a cubesim in the dialect DIALECT; sets SIM, SIM_PID
start_sim() {
  "$B/cubesim" --listen 127.0.0.1:0 --dialect "$DIALECT" >"$T/$1-sim.out" 2>"$T/$1-sim.log" &
  SIM_PID=$!
  PIDS="$PIDS $SIM_PID"
  SIM=""
  i=0
  while [ -z "$SIM" ] && [ $i -lt 200 ]; do
    SIM=$(sed -n 's/^cubesim listening on //p' "$T/$1-sim.out")
    [ -n "$SIM" ] || { sleep 0.05; i=$((i + 1)); }
  done
  [ -n "$SIM" ]
}

# start_ctl LABEL DB [ARGS...]: sets CTL_PID and LOG; waits only for the
# /metrics address (MET), not for the first pass
start_ctl() {
  l=$1; db=$2; shift 2
  LOG="$T/$l.log"
  "${CTLBIN:-$B/session-controller}" --store "sqlite:$db" --cube-url "$SIM" \
    --metrics-addr 127.0.0.1:0 --replica "scale-$l" --create-store \
    --cube-qps 0 "$@" 2>"$LOG" &
  CTL_PID=$!
  PIDS="$PIDS $CTL_PID"
  MET=""
  i=0
  while [ -z "$MET" ] && [ $i -lt 300 ]; do
    port=$(sed -n 's/.*serving \/metrics.* port=\([0-9]*\).*/\1/p' "$LOG" 2>/dev/null | head -n 1)
    [ -n "$port" ] && MET="http://127.0.0.1:$port"
    [ -n "$MET" ] && break
    kill -0 "$CTL_PID" 2>/dev/null || return 1
    sleep 0.1; i=$((i + 1))
  done
  [ -n "$MET" ]
}

# wait_ready SECONDS: until the controller's /readyz answers 200 (its
# first full pass is done)
wait_ready() {
  dl=$(( $(now_ms) + $1 * 1000 ))
  while [ "$(now_ms)" -lt "$dl" ]; do
    curl -sf -o /dev/null "$MET/readyz" && return 0
    kill -0 "$CTL_PID" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# full_passes: how many "full pass done" lines the controller logged
full_passes() { grep -c 'full pass done' "$LOG"; }
# wait_passes K SECONDS: until the log holds K "full pass done" lines
wait_passes() {
  dl=$(( $(now_ms) + $2 * 1000 ))
  while [ "$(now_ms)" -lt "$dl" ]; do
    [ "$(full_passes)" -ge "$1" ] && return 0
    kill -0 "$CTL_PID" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}
metric() { curl -sf "$MET/metrics" | awk -v n="$1" '$1 == n {print $2}'; }

# gen_dir N DIR: N sessions in state Running, named s + base-36 number, in
# files of CHUNK sessions each, in the compact flow style of hack/bench.sh
# (5,000 of them take about 520 kB, well under the 1 MiB manifest cap)
gen_dir() {
  mkdir -p "$2"
  awk -v n="$1" -v c="$CHUNK" -v d="$2" '
  function b36(x,  s, k) {
    s = ""
    do { k = x % 36; s = substr("0123456789abcdefghijklmnopqrstuvwxyz", k + 1, 1) s; x = int(x / 36) } while(x > 0)
    return s
  }
  BEGIN {
    for(i = 1; i <= n; i++) {
      if((i - 1) % c == 0) {
        if(f != "") close(f)
        f = sprintf("%s/s%06d.yaml", d, (i - 1) / c)
        print "apiVersion: v1" > f; print "kind: List" > f; print "items:" > f
      }
      printf("- {apiVersion: lea.io/v1alpha1,kind: Session,metadata: {name: s%s},spec: {template: t,state: Running}}\n", b36(i)) > f
    }
  }'
}

# apply_dir N DB DIR: the timed apply; sets APPLY_HOW
apply_dir() {
  adb=$2; adir=$3
  if [ "$APPLY_MODE" = dir ] ||
     { [ "$APPLY_MODE" = auto ] && "$B/sessionctl" apply --help 2>&1 | grep -q 'a directory'; }; then
    APPLY_HOW="apply -f DIR"
    set -- -f "$adir"
  else
    APPLY_HOW="apply -f FILE per file, one call"
    fl=""
    for f in "$adir"/*.yaml; do fl="$fl -f $f"; done
    # shellcheck disable=SC2086
    set -- $fl
  fi
  timeout "$TMO" "$B/sessionctl" --store "sqlite:$adb" apply "$@" >"$T/apply.out" 2>"$T/apply.err"
}

# run_n N: every step for N; returns 1 at the first failed step
run_n() {
  n=$1
  DB="$T/s$n.db"
  say "N=$n: cubesim and an empty store"
  start_sim "s$n" || { fail "$n" "cubesim" "did not start" "$T/s$n-sim.log"; return 1; }
  # create the store: a controller with --create-store, one empty pass
  start_ctl "init$n" "$DB" || { fail "$n" "store" "controller did not start" "$LOG"; return 1; }
  wait_ready 60 || { fail "$n" "store" "controller not ready" "$LOG"; return 1; }
  stop "$CTL_PID"

  # ------------------------------------------------------------ apply
  gen_dir "$n" "$T/d$n"
  bytes=$(cat "$T/d$n"/*.yaml | wc -c)
  nf=$(ls "$T/d$n" | wc -l)
  say "N=$n: applying $n sessions from $nf files ($bytes bytes)"
  t0=$(now_ms)
  apply_dir "$n" "$DB" "$T/d$n"; rc=$?
  t1=$(now_ms)
  if [ $rc -ne 0 ]; then
    [ $rc -eq 124 ] && why="timed out after $TMO s" || why="exit $rc"
    fail "$n" "apply" "$why" "$T/apply.err"; return 1
  fi
  got=$(grep -c ' created$' "$T/apply.out")
  [ "$got" = "$n" ] || { fail "$n" "apply" "$got of $n created" "$T/apply.err"; return 1; }
  say "N=$n: apply took $((t1 - t0)) ms ($APPLY_HOW)"
  row "$n" "apply ($APPLY_HOW, $nf files)" "$((t1 - t0)) ms"

  # ------------------------------------------------------------ first pass
  say "N=$n: first pass (creates), --cube-qps 0"
  t0=$(now_ms)
  start_ctl "first$n" "$DB" || { fail "$n" "first pass" "controller did not start" "$LOG"; return 1; }
  out=$("$CONV" "$DB" "$n" "$t0" "$TMO" 2>"$T/first$n.progress"); rc=$?
  hwm=$(hwm_mb "$CTL_PID"); tk=$(cpu_ticks "$CTL_PID")
  kill -0 "$CTL_PID" 2>/dev/null || { fail "$n" "first pass" "the controller exited" "$LOG"; return 1; }
  # shellcheck disable=SC2086
  set -- $out
  [ $rc -eq 0 ] && [ "${1:-}" = converged ] ||
    { fail "$n" "first pass" "not all Running within $TMO s (${out:-no output})" "$T/first$n.progress"; return 1; }
  ms=$3
  rate=$(awk -v n="$n" -v ms="$ms" 'BEGIN {printf "%.0f", n * 1000 / ms}')
  per=$(awk -v t="$tk" -v hz="$HZ" -v n="$n" 'BEGIN {printf "%.3f", t * 1000 / hz / n}')
  say "N=$n: all Running $ms ms after the controller's start ($rate/s); peak RSS $hwm MB; CPU $(ticks_s "$tk") s ($per ms per session)"
  row "$n" "first pass: start -> all Running" "$ms ms ($rate/s)"
  row "$n" "first pass: controller peak RSS, CPU" "$hwm MB; $(ticks_s "$tk") s CPU ($per ms/session)"
  stop "$CTL_PID"

  # ------------------------------------------------------------ restart, settled
  rev0=$("$BST" "$DB" rev) || { fail "$n" "restart" "cannot read the store's revision"; return 1; }
  say "N=$n: restart on the converged store (revision $rev0), --resync $RESYNC, $NPASS settled passes"
  start_ctl "settled$n" "$DB" --resync "$RESYNC" --log-level debug ||
    { fail "$n" "restart" "controller did not start" "$LOG"; return 1; }
  wait_passes 1 "$TMO" || { fail "$n" "restart" "no full pass within $TMO s" "$LOG"; return 1; }
  ch=$("$BST" "$DB" changed "$rev0") ||
    { fail "$n" "restart" "cannot read the store's revision"; return 1; }
  # shellcheck disable=SC2086
  set -- $ch
  objs=$1; writes=$2
  fs=$(grep -m 1 'full pass done' "$LOG" | sed -n 's/.* seconds=\([0-9.]*\).*/\1/p')
  say "N=$n: first pass after the restart: ${fs:-?} s, $writes writes, $objs sessions written (want 0)"
  row "$n" "first pass after restart: store writes" "$writes revisions, $objs sessions written (want 0); pass ${fs:-?} s"

  k0=$(full_passes)
  l0=$(wc -l <"$LOG")
  c0=$(metric session_controller_pass_duration_seconds_count)
  s0=$(metric session_controller_pass_duration_seconds_sum)
  a0=$(cpu_ticks "$CTL_PID")
  wait_passes $((k0 + NPASS)) "$TMO"; rc=$?
  a1=$(cpu_ticks "$CTL_PID")
  [ $rc -eq 0 ] || { fail "$n" "settled" "$NPASS passes not done within $TMO s" "$LOG"; return 1; }
  c1=$(metric session_controller_pass_duration_seconds_count)
  s1=$(metric session_controller_pass_duration_seconds_sum)
  tail -n +"$((l0 + 1))" "$LOG" | grep 'full pass done' |
    sed -n 's/.*sessions=\([0-9]*\) actions=\([0-9]*\) seconds=\([0-9.]*\).*/\1 \2 \3/p' >"$T/passes$n"
  st=$(awk '{print $3 * 1000}' "$T/passes$n" | sort -n |
    awk '{a[NR]=$1} END {if (NR) printf "min %d, median %d, max %d ms over %d passes", a[1], a[int((NR+1)/2)], a[NR], NR; else print "no pass logged"}')
  acts=$(awk '{s += $2} END {print s + 0}' "$T/passes$n")
  mean=$(awk -v c0="$c0" -v c1="$c1" -v s0="$s0" -v s1="$s1" 'BEGIN {if (c1 > c0) printf "%.0f ms over %d", (s1 - s0) * 1000 / (c1 - c0), c1 - c0; else print "none"}')
  cpp=$(awk -v t="$((a1 - a0))" -v hz="$HZ" -v k="$NPASS" 'BEGIN {printf "%.0f", t * 1000 / hz / k}')
  hwm=$(hwm_mb "$CTL_PID")
  # shellcheck disable=SC2046
  set -- $("$BST" "$DB" changed "$rev0")
  say "N=$n: settled passes: $st; /metrics mean $mean; CPU $cpp ms per pass; actions $acts; peak RSS $hwm MB; store writes since the restart: ${2:-?}"
  row "$n" "settled full pass (--resync $RESYNC)" "$st; metrics mean $mean"
  row "$n" "settled: CPU per pass, peak RSS" "$cpp ms; $hwm MB (actions $acts, writes since restart ${2:-?})"
  if [ -n "$PERF_DIR" ]; then
    # after the timed passes, so that the sampling does not slow them
    say "N=$n: perf record of 2 more settled passes"
    k1=$(full_passes)
    perf record -F "$PERF_FREQ" --call-graph dwarf,16384 -o "$PERF_DIR/perf-$n.data" \
      -p "$CTL_PID" >"$T/perf$n.log" 2>&1 &
    pp=$!
    PIDS="$PIDS $pp"
    wait_passes $((k1 + 2)) "$TMO" || say "N=$n: perf: the 2 passes did not end within $TMO s"
    kill -INT "$pp" 2>/dev/null; wait "$pp" 2>/dev/null; stop "$pp"
    say "N=$n: perf data in $PERF_DIR/perf-$n.data (perf report -i ... --no-children)"
  fi
  stop "$CTL_PID"

  # ------------------------------------------------------------ side by side
  if [ -n "$AB_BIN" ]; then
    # the same converged store and cubesim, the two binaries alternating
    # round by round (so a drift of the machine's load hits both)
    r=1
    while [ $r -le "$AB_ROUNDS" ]; do
      for side in new old; do
        [ "$side" = new ] && CTLBIN=$B/session-controller || CTLBIN=$AB_BIN
        start_ctl "ab$n-$side$r" "$DB" --resync "$RESYNC" --log-level debug ||
          { fail "$n" "side by side" "$side controller did not start" "$LOG"; CTLBIN=""; return 1; }
        wait_passes 2 "$TMO" || { fail "$n" "side by side" "$side: no settled pass" "$LOG"; CTLBIN=""; return 1; }
        k0=$(full_passes); l0=$(wc -l <"$LOG"); a0=$(cpu_ticks "$CTL_PID")
        wait_passes $((k0 + NPASS)) "$TMO" || { fail "$n" "side by side" "$side: passes not done" "$LOG"; CTLBIN=""; return 1; }
        a1=$(cpu_ticks "$CTL_PID")
        md=$(tail -n +"$((l0 + 1))" "$LOG" | grep 'full pass done' |
          sed -n 's/.* seconds=\([0-9.]*\).*/\1/p' | awk '{print $1 * 1000}' | sort -n |
          awk '{a[NR]=$1} END {if (NR) printf "median %d ms (min %d, max %d)", a[int((NR+1)/2)], a[1], a[NR]; else print "none"}')
        cpp=$(awk -v t="$((a1 - a0))" -v hz="$HZ" -v k="$NPASS" 'BEGIN {printf "%.0f", t * 1000 / hz / k}')
        say "N=$n: side by side, round $r, $side ($CTLBIN): $md; CPU $cpp ms a pass; peak RSS $(hwm_mb "$CTL_PID") MB"
        row "$n" "side by side r$r: $side" "$md; CPU $cpp ms/pass; peak RSS $(hwm_mb "$CTL_PID") MB"
        stop "$CTL_PID"
      done
      r=$((r + 1))
    done
    CTLBIN=""
  fi

  # ------------------------------------------------------------ idle
  say "N=$n: idle at the default --resync, ${IDLE_S}s"
  start_ctl "idle$n" "$DB" || { fail "$n" "idle" "controller did not start" "$LOG"; return 1; }
  wait_ready "$TMO" || { fail "$n" "idle" "controller not ready within $TMO s" "$LOG"; return 1; }
  sleep 1
  a0=$(cpu_ticks "$CTL_PID"); w0=$(now_ms)
  sleep "$IDLE_S"
  a1=$(cpu_ticks "$CTL_PID"); w1=$(now_ms)
  kill -0 "$CTL_PID" 2>/dev/null || { fail "$n" "idle" "the controller exited" "$LOG"; return 1; }
  pct=$(awk -v a="$((a1 - a0))" -v hz="$HZ" -v ms="$((w1 - w0))" 'BEGIN {printf "%.2f", a / hz * 100000 / ms}')
  say "N=$n: idle CPU $((a1 - a0)) ticks in $((w1 - w0)) ms = $pct% of a core; RSS $(rss_mb "$CTL_PID") MB, peak $(hwm_mb "$CTL_PID") MB"
  row "$n" "idle (--resync 60s, ${IDLE_S}s): CPU, RSS" "$pct% of a core; RSS $(rss_mb "$CTL_PID") MB (peak $(hwm_mb "$CTL_PID") MB)"
  stop "$CTL_PID"
  stop "$SIM_PID"
  rm -rf "$T/d$n" "$DB" "$DB-wal" "$DB-shm"
  return 0
}

t00=$(now_ms)
for n in $NS; do
  if ! run_n "$n"; then
    for p in $PIDS; do stop "$p"; done
  fi
done

echo
echo "scale: machine $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); $(( ($(now_ms) - t00) / 1000 )) s in all"
printf '%-7s | %-44s | %-70s | %s\n' N measure result "load (1 5 15 min)"
awk -F'|' '{printf "%-7s | %-44s | %-70s | %s\n", $1, $2, $3, $4}' "$RES"
exit $FAILED
