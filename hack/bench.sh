#!/bin/sh
# bench.sh - the benchmarks of issue 4 (`make bench`). Measures, never
# asserts; prints a summary table at the end. Takes several minutes.
#
#  1. planner: 1k/10k/100k sessions (hack/bench-plan.sh)
#  2. 10k sessions applied at once with state Running (one file), from an
#     empty cubesim: time until all have phase Running and a sandbox;
#     --cube-qps 0, no injected latency. The same controller then runs
#     with --resync 2s --log-level debug: steady-state full passes.
#  3. idle controller with the 10k converged sessions, default --resync
#     60s: CPU (utime+stime from /proc/PID/stat) over BENCH_IDLE_SECONDS,
#     and RSS
#  4. the same as 2 with 20 ms latency on every Cube call
#  5. the same as 2 with the default --cube-qps 50 (BENCH_QPS50_N sessions)
#  6. reaction: sessionctl apply of state Paused -> Cube's pause call, for
#     BENCH_REACT_N converged Active sessions one at a time
#  7. executor: the cost per action of looking up and dispatching 0.15 N
#     actions for 1k/10k/100k sessions (test/bench/bench_exec.c), with the
#     old per-action scan measured the same way; under a minute
#
# Environment: BENCH_N (10000), BENCH_QPS50_N (2000), BENCH_REACT_N (200),
# BENCH_IDLE_SECONDS (60), BENCH_STEADY_SECONDS (20), BENCH_SKIP (a list
# of step numbers to skip, e.g. "1 5"). Results are in docs/benchmarks.md.
# Builds only through make; every process it starts is stopped by PID.
set -eu
cd "$(dirname "$0")/.."
CC=${CC:-cc}
N=${BENCH_N:-10000}
N50=${BENCH_QPS50_N:-2000}
NREACT=${BENCH_REACT_N:-200}
IDLE_S=${BENCH_IDLE_SECONDS:-60}
STEADY_S=${BENCH_STEADY_SECONDS:-20}
SKIP=" ${BENCH_SKIP:-} "

for t in jq curl awk; do
  command -v $t >/dev/null || { echo "bench: $t not found" >&2; exit 2; }
done
make -s all
mkdir -p build/bench
# shellcheck disable=SC2046
$CC -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -Wall -Wextra \
  -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 \
  -Wno-format-nonliteral -O2 -g -I. $(pkg-config --cflags sqlite3) \
  -o build/bench/bench_converge test/bench/bench_converge.c build/libsc.a \
  $(pkg-config --libs sqlite3)

B=$(pwd)/bin
CONV=$(pwd)/build/bench/bench_converge
T=$(mktemp -d "${TMPDIR:-/tmp}/sc-bench.XXXXXX")
PIDS=""
RES="$T/results"
: >"$RES"
cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null || true; done
  for p in $PIDS; do wait "$p" 2>/dev/null || true; done
  [ -n "${KEEP_TMP:-}" ] && echo "bench: kept $T" || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

skip() { case "$SKIP" in *" $1 "*) return 0 ;; esac; return 1; }
now_ms() { date +%s%3N; }
say() { echo "bench: $*"; }
# result NAME TARGET RESULT MET
result() { printf '%s|%s|%s|%s\n' "$1" "$2" "$3" "$4" >>"$RES"; }

stop() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  np=""
  for p in $PIDS; do [ "$p" = "$1" ] || np="$np $p"; done
  PIDS=$np
}

# start_sim LABEL [ARGS...]: sets SIM, SIM_PID
start_sim() {
  l=$1; shift
  "$B/cubesim" --listen 127.0.0.1:0 "$@" >"$T/$l-sim.out" 2>"$T/$l-sim.log" &
  SIM_PID=$!
  PIDS="$PIDS $SIM_PID"
  SIM=""
  i=0
  while [ -z "$SIM" ] && [ $i -lt 200 ]; do
    SIM=$(sed -n 's/^cubesim listening on //p' "$T/$l-sim.out")
    [ -n "$SIM" ] || { sleep 0.05; i=$((i + 1)); }
  done
  [ -n "$SIM" ] || { echo "bench: cubesim did not start" >&2; exit 1; }
}

# start_ctl LABEL DB [ARGS...]: sets CTL_PID, MET (base URL of /metrics);
# waits for /readyz
start_ctl() {
  l=$1; db=$2; shift 2
  "$B/session-controller" --store "sqlite:$db" --cube-url "$SIM" \
    --metrics-addr 127.0.0.1:0 --replica "bench-$l" --create-store "$@" 2>"$T/$l.log" &
  CTL_PID=$!
  PIDS="$PIDS $CTL_PID"
  MET=""
  i=0
  while [ $i -lt 600 ]; do
    if [ -z "$MET" ]; then
      port=$(sed -n 's/.*serving \/metrics.* port=\([0-9]*\).*/\1/p' "$T/$l.log" 2>/dev/null | head -n 1)
      [ -n "$port" ] && MET="http://127.0.0.1:$port"
    fi
    if [ -n "$MET" ] && curl -sf -o /dev/null "$MET/readyz"; then return 0; fi
    kill -0 "$CTL_PID" 2>/dev/null || break
    sleep 0.1; i=$((i + 1))
  done
  echo "bench: controller $l did not get ready" >&2; tail -n 20 "$T/$l.log" >&2
  exit 1
}

# gen_list N STATE PREFIX FILE: one `kind: List` of N sessions in flow
# style, named PREFIX + base-36 number, so that 10k of them fit in the
# 1 MiB manifest limit (about 1,039,000 bytes)
gen_list() {
  awk -v n="$1" -v st="$2" -v p="$3" '
  function b36(x,  s, d) {
    s = ""
    do { d = x % 36; s = substr("0123456789abcdefghijklmnopqrstuvwxyz", d + 1, 1) s; x = int(x / 36) } while(x > 0)
    return s
  }
  BEGIN {
    print "apiVersion: v1"; print "kind: List"; print "items:";
    for(i = 1; i <= n; i++)
      printf("- {apiVersion: lea.io/v1alpha1,kind: Session,metadata: {name: %s%s},spec: {template: t,state: %s}}\n", p, b36(i), st);
  }' >"$4"
}

sim_running() { curl -sf "$SIM/_sim/sandboxes" | jq '[.[] | select(.state=="running")] | length'; }
rss_mb() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
hwm_mb() { awk '/^VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
# metric NAME: the value of an unlabelled sample on /metrics
metric() { curl -sf "$MET/metrics" | awk -v n="$1" '$1 == n {print $2}'; }

# create_run LABEL N MIN_RATE SIM_ARGS CTL_ARGS...: apply N Running
# sessions at once, time their convergence; leaves SIM/CTL running
create_run() {
  l=$1; n=$2; target=$3; simargs=$4; shift 4
  DB="$T/$l.db"
  # shellcheck disable=SC2086
  start_sim "$l" $simargs
  start_ctl "$l" "$DB" "$@"
  gen_list "$n" Running r "$T/$l.yaml"
  say "$l: applying $n sessions ($(wc -c <"$T/$l.yaml") bytes), cubesim $simargs, controller $*"
  t0=$(now_ms)
  "$B/sessionctl" --store "sqlite:$DB" apply -f "$T/$l.yaml" >/dev/null
  t1=$(now_ms)
  out=$("$CONV" "$DB" "$n" "$t0" 900 2>"$T/$l.progress") || true
  set -- $out
  running=$(sim_running)
  if [ "$1" = converged ]; then
    ms=$3
    rate=$(awk -v n="$n" -v ms="$ms" 'BEGIN {printf "%.0f", n * 1000 / ms}')
    met=$(awk -v r="$rate" -v t="$target" 'BEGIN {print (t == 0 ? "n/a" : (r >= t ? "yes" : "NO"))}')
    say "$l: all $n Running after $ms ms (apply took $((t1 - t0)) ms): $rate sessions/s; cubesim running: $running; controller RSS $(rss_mb "$CTL_PID") MB, peak $(hwm_mb "$CTL_PID") MB"
    result "$l: $n Running at once" "$( [ "$target" = 0 ] && echo "(report)" || echo ">= $target/s")" \
      "$rate/s ($ms ms; apply $((t1 - t0)) ms)" "$met"
  else
    say "$l: did not converge: $out; cubesim running: $running"
    result "$l: $n Running at once" ">= $target/s" "timeout ($out)" "NO"
  fi
  RUN_MS=${ms:-0}
}

# ---------------------------------------------------------------- 1
if ! skip 1; then
  say "1. planner (hack/bench-plan.sh)"
  sh hack/bench-plan.sh 1000 10000 100000 | tee "$T/plan.out"
  sed -n 's/^sessions=\([0-9]*\) .* steady best=\([0-9.]*\)ms median=\([0-9.]*\)ms.* rss_peak=\([0-9]*\)KB.*/\1 \2 \3 \4/p' \
    "$T/plan.out" | while read -r n best med rss; do
    met=n/a
    [ "$n" = 100000 ] && met=$(awk -v m="$med" -v r="$rss" 'BEGIN {print (m < 50 && r < 102400 ? "yes" : "NO")}')
    result "planner: $n sessions, steady pass" "$( [ "$n" = 100000 ] && echo "< 50 ms, < 100 MB" || echo "linear")" \
      "best $best ms, median $med ms, peak RSS $((rss / 1024)) MB" "$met"
  done
fi

# ---------------------------------------------------------------- 2, 3
if ! skip 2; then
  say "2. $N sessions Running at once, --cube-qps 0, no latency"
  create_run qps0 "$N" 1000 "" --cube-qps 0 --resync 2s --log-level debug
  # steady state: full passes of the converged system
  sleep 3
  c0=$(metric session_controller_pass_duration_seconds_count)
  s0=$(metric session_controller_pass_duration_seconds_sum)
  l0=$(wc -l <"$T/qps0.log")
  say "steady state: $STEADY_S s of full passes every 2s"
  sleep "$STEADY_S"
  c1=$(metric session_controller_pass_duration_seconds_count)
  s1=$(metric session_controller_pass_duration_seconds_sum)
  tail -n +"$((l0 + 1))" "$T/qps0.log" | grep 'full pass done' |
    sed -n 's/.*sessions=\([0-9]*\) actions=\([0-9]*\) seconds=\([0-9.]*\).*/\1 \2 \3/p' >"$T/passes"
  npass=$(wc -l <"$T/passes")
  if [ "$npass" -gt 0 ]; then
    st=$(awk '{print $3 * 1000}' "$T/passes" | sort -n | awk '{a[NR]=$1} END {printf "min %d, median %d, max %d ms over %d passes", a[1], a[int((NR+1)/2)], a[NR], NR}')
    mx=$(awk '{print $3 * 1000}' "$T/passes" | sort -n | tail -n 1)
    acts=$(awk '{s += $2} END {print s}' "$T/passes")
    hist=$(awk -v c0="$c0" -v c1="$c1" -v s0="$s0" -v s1="$s1" 'BEGIN {if (c1 > c0) printf "%.0f ms mean", (s1 - s0) * 1000 / (c1 - c0); else print "none"}')
    say "full passes: $st; actions in them: $acts; /metrics histogram: $hist"
    result "steady full pass, $N converged" "< 500 ms" "$st (metrics: $hist; actions $acts)" \
      "$(awk -v m="$mx" 'BEGIN {print (m < 500 ? "yes" : "NO")}')"
  else
    result "steady full pass, $N converged" "< 500 ms" "no full pass logged" "NO"
  fi
  ctl_hwm=$(hwm_mb "$CTL_PID")
  stop "$CTL_PID"

  if ! skip 3; then
    say "3. idle controller with $N converged sessions, --resync 60s, ${IDLE_S}s"
    start_ctl idle "$T/qps0.db"
    sleep 2
    a0=$(cpu_ticks "$CTL_PID"); w0=$(now_ms)
    sleep "$IDLE_S"
    a1=$(cpu_ticks "$CTL_PID"); w1=$(now_ms)
    hz=$(getconf CLK_TCK)
    pct=$(awk -v a="$((a1 - a0))" -v hz="$hz" -v ms="$((w1 - w0))" 'BEGIN {printf "%.2f", a / hz * 100000 / ms}')
    passes=$(grep -c 'full pass done' "$T/idle.log" || true)
    say "idle CPU: $((a1 - a0)) ticks (1/$hz s) in $((w1 - w0)) ms = $pct% of a core; RSS $(rss_mb "$CTL_PID") MB, peak $(hwm_mb "$CTL_PID") MB; full passes logged: $passes"
    result "idle CPU, $N converged, ${IDLE_S}s" "< 2% of a core" "$pct%" \
      "$(awk -v p="$pct" 'BEGIN {print (p < 2 ? "yes" : "NO")}')"
    result "controller RSS, $N sessions" "(report)" "idle $(rss_mb "$CTL_PID") MB; peak $(hwm_mb "$CTL_PID") MB idle run, $ctl_hwm MB during the create" "n/a"
    stop "$CTL_PID"
  fi
  stop "$SIM_PID"
fi

# ---------------------------------------------------------------- 4
if ! skip 4; then
  say "4. $N sessions Running at once, --cube-qps 0, 20 ms per Cube call"
  create_run lat20 "$N" 500 "--faults *:latency=20ms~0ms" --cube-qps 0
  stop "$CTL_PID"; stop "$SIM_PID"
fi

# ---------------------------------------------------------------- 5
if ! skip 5; then
  say "5. $N50 sessions Running at once, default --cube-qps 50"
  create_run qps50 "$N50" 0 ""
  stop "$CTL_PID"; stop "$SIM_PID"
fi

# ---------------------------------------------------------------- 6
if ! skip 6; then
  say "6. reaction apply -> pause, $NREACT sessions one at a time"
  start_sim react --clock-speed 1
  start_ctl react "$T/react.db"
  gen_list "$NREACT" Active a "$T/react.yaml"
  "$B/sessionctl" --store "sqlite:$T/react.db" apply -f "$T/react.yaml" >/dev/null
  "$CONV" "$T/react.db" "$NREACT" "$(now_ms)" 300 >/dev/null 2>&1 ||
    { echo "bench: the $NREACT Active sessions did not converge" >&2; exit 1; }
  sleep 2
  curl -sf "$SIM/_sim/sandboxes" |
    jq -r '.[] | select(.state=="running") | "\(.metadata["lea.session_id"]) \(.sandboxID)"' >"$T/react.ids"
  # offset of cubesim's virtual clock (speed 1) from our wall clock: a
  # request's midpoint against its nowMs, best (shortest) of 20
  off=$(for i in $(seq 1 20); do
      a=$(now_ms); v=$(curl -sf "$SIM/_sim/clock" | jq .nowMs); b=$(now_ms)
      echo "$((b - a)) $((v - (a + b) / 2))"
    done | sort -n | head -n 1 | awk '{print $2}')
  say "cubesim clock - wall clock: $off ms"
  seq0=$(curl -sf "$SIM/_sim/audit" | tail -n 1 | jq .seq)
  : >"$T/react.lat"
  while read -r name id; do
    printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s}\nspec: {template: t, state: Paused}\n' "$name" >"$T/p.yaml"
    t0=$(now_ms)
    "$B/sessionctl" --store "sqlite:$T/react.db" apply -f "$T/p.yaml" >/dev/null </dev/null
    at=""
    k=0
    while [ -z "$at" ] && [ $k -lt 1000 ]; do
      at=$(curl -sf "$SIM/_sim/audit?since=$seq0" </dev/null | jq -r --arg id "$id" \
        'select(.event=="pause" and .source=="api" and .sandboxID==$id) | .at' | head -n 1)
      [ -n "$at" ] || { sleep 0.005; k=$((k + 1)); }
    done
    [ -n "$at" ] || { echo "bench: no pause for $name ($id)" >&2; continue; }
    at_ms=$(echo "\"$at\"" | jq '(sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601) * 1000 + ((capture("\\.(?<f>[0-9]{3})") | .f | tonumber) // 0)')
    echo $((at_ms - off - t0)) >>"$T/react.lat"
  done <"$T/react.ids"
  n=$(wc -l <"$T/react.lat")
  pr=$(sort -n "$T/react.lat" | awk '{a[NR]=$1} END {
    p50 = a[int(NR * 0.50 + 0.5)]; p99 = a[int(NR * 0.99 + 0.5)];
    printf "%d %d %d %d", a[1], p50, p99, a[NR] }')
  set -- $pr
  say "reaction over $n: min $1, p50 $2, p99 $3, max $4 ms"
  result "reaction apply->pause (n=$n)" "p50 < 50, p99 < 200 ms" \
    "min $1, p50 $2, p99 $3, max $4 ms" \
    "$(awk -v a="$2" -v b="$3" 'BEGIN {print (a < 50 && b < 200 ? "yes" : "NO")}')"
  cp "$T/react.lat" build/bench/react.lat
  stop "$CTL_PID"; stop "$SIM_PID"
fi

# ---------------------------------------------------------------- 7
if ! skip 7; then
  say "7. executor lookup and dispatch, 1k/10k/100k sessions, 15% with an action"
  # shellcheck disable=SC2046
  $CC -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -Wall -Wextra \
    -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 \
    -Wno-format-nonliteral -O2 -g -I. \
    $(pkg-config --cflags libcurl yaml-0.1 json-c libevent openssl sqlite3) \
    -o build/bench/bench_exec test/bench/bench_exec.c build/libsc.a \
    $(pkg-config --libs libcurl yaml-0.1 json-c libevent openssl sqlite3) -lm
  build/bench/bench_exec 1000 10000 100000 | tee "$T/exec.out"
  sed -n 's/^sessions=\([0-9]*\) actions=\([0-9]*\) before: scan [0-9.]* ms = \([0-9.]*\) us\/action .* lookup \([0-9.]*\) ns\/action | run: [0-9.]* ms = \([0-9.]*\) us\/action.*/\1 \2 \3 \4 \5/p' \
    "$T/exec.out" | while read -r n na old look run; do
    result "executor: $n sessions, $na actions" "per action constant" \
      "run $run us/action (lookup $look ns; old scan $old us)" "n/a"
  done
fi

echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-44s | %-24s | %-60s | %s\n' benchmark target result met
awk -F'|' '{printf "%-44s | %-24s | %-60s | %s\n", $1, $2, $3, $4}' "$RES"
