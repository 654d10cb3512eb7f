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
#  8. connect latency (issue 14): `sessionctl connect` of an idle-paused
#     session until Running (BENCH_CONNECT_N, resume latency 0 and 42
#     ms), `connect -f` of a new one (BENCH_CONNECT_NEW_N, create latency
#     0 and 48 ms), on sqlite and kube-apiserver-fake, 1 and 3 replicas
#     (test/bench/bench_connect.c); about 3 minutes
#  9. churn (issue 15): 600 sessions arriving at 30/s, 3 replicas, one
#     SIGKILLed or SIGTERMed every 4 s, Cube at 20 ms: apply -> running
#     per session, duplicates (test/bench/churn.sh); about 40 s
# 10. scale (issue 16, targets 3 and 4): for N in BENCH_SCALE_NS, apply
#     from a directory, first pass (creates), status writes after a
#     restart, settled passes, idle CPU and RSS (test/bench/scale.sh,
#     which reads BENCH_IDLE_SECONDS too); about 10 minutes at the default Ns
#
# Environment: BENCH_N (10000), BENCH_QPS50_N (2000), BENCH_REACT_N (200),
# BENCH_IDLE_SECONDS (60), BENCH_STEADY_SECONDS (20), BENCH_CONNECT_N
# (200), BENCH_CONNECT_NEW_N (100), BENCH_CONNECT_CFGS ("sqlite/1 sqlite/3
# kube/1 kube/3"), BENCH_CONNECT_TIMEOUT (5: seconds a connect may wait),
# BENCH_CONNECT_GIVEUP (3: a phase stops after that many failed connects),
# BENCH_CONNECT_SQLITE (sessionctl's store URL options, e.g. "?poll_ms=5";
# the controllers keep theirs), BENCH_SKIP (a list
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
NCONN=${BENCH_CONNECT_N:-200}
NNEW=${BENCH_CONNECT_NEW_N:-100}
NFLOOR=50
CONNECT_TMO=${BENCH_CONNECT_TIMEOUT:-5}
CONNECT_GIVEUP=${BENCH_CONNECT_GIVEUP:-3}
NSTART=0
CONNECT_CFGS=${BENCH_CONNECT_CFGS:-sqlite/1 sqlite/3 kube/1 kube/3}

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
BENCH_NAME=bench
. hack/bench-lib.sh
trap bench_cleanup EXIT
trap 'exit 1' INT TERM

say() { echo "bench: $*"; }
# result NAME TARGET RESULT MET
result() { printf '%s|%s|%s|%s\n' "$1" "$2" "$3" "$4" >>"$RES"; }

# start_sim LABEL [ARGS...]: sets SIM, SIM_PID
start_sim() {
  l=$1; shift
  "$B/cubesim" --listen 127.0.0.1:0 "$@" >"$T/$l-sim.out" 2>"$T/$l-sim.log" &
  SIM_PID=$!
  PIDS="$PIDS $SIM_PID"
  sim_wait "$l"
}

# start_ctl LABEL DB [ARGS...]: sets CTL_PID, MET (base URL of /metrics);
# waits for /readyz
start_ctl() {
  l=$1; db=$2; shift 2
  "$B/session-controller" --store "sqlite:$db" --cube-url "$SIM" \
    --metrics-addr 127.0.0.1:0 --replica "bench-$l" --create-store "$@" 2>"$T/$l.log" &
  CTL_PID=$!
  PIDS="$PIDS $CTL_PID"
  ready_wait "$l" "$CTL_PID"
}

sim_running() { curl -sf "$SIM/_sim/sandboxes" | jq '[.[] | select(.state=="running")] | length'; }
# sim_faults SPEC: cubesim's faults from now on ("" for none)
sim_faults() { curl -sf -X POST --data-binary "$1" "$SIM/_sim/faults" >/dev/null; }
rss_mb() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
hwm_mb() { awk '/^VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }

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

# ---------------------------------------------------------------- 8
# connect latency (issue 14): `sessionctl connect` of an idle-paused
# session until it is Running again (Cube's resume), and `connect -f` of a
# new session until it runs (Cube's create), timed one at a time by
# test/bench/bench_connect.c; on SQLite and on the kube store, with 1 and
# 3 replicas (no --leader-elect: every replica acts)

# start_kube: a fresh kube-apiserver-fake and a kubeconfig for it; sets
# API, API_PID and exports KUBECONFIG
start_kube() {
  kl=$1
  "$B/kube-apiserver-fake" --listen 127.0.0.1:0 >"$T/$kl-kf.out" 2>"$T/$kl-kf.log" &
  API_PID=$!
  PIDS="$PIDS $API_PID"
  API=""
  i=0
  while [ -z "$API" ] && [ $i -lt 200 ]; do
    API=$(sed -n 's/^kube-apiserver-fake listening on //p' "$T/$kl-kf.out")
    [ -n "$API" ] || { sleep 0.05; i=$((i + 1)); }
  done
  [ -n "$API" ] || { echo "bench: kube-apiserver-fake did not start" >&2; exit 1; }
  printf 'apiVersion: v1\nkind: Config\ncurrent-context: fake\nclusters:\n- name: fake\n  cluster:\n    server: %s\ncontexts:\n- name: fake\n  context: {cluster: fake, user: u}\nusers:\n- name: u\n  user: {}\n' \
    "$API" >"$T/$kl.kubeconfig"
  KUBECONFIG=$T/$kl.kubeconfig
  export KUBECONFIG
}

# start_replicas LABEL STORE R [ARGS...]: R controllers on STORE (default
# --resync 60s and --watch-poll, then ARGS); sets CPIDS and METS (their /metrics base URLs),
# waits for every /readyz
start_replicas() {
  rl=$1; rst=$2; rr=$3; shift 3
  CPIDS=""; METS=""
  NSTART=$((NSTART + 1))
  cs=""
  case "$rst" in sqlite:*) cs=--create-store ;; esac
  j=1
  while [ $j -le "$rr" ]; do
    # shellcheck disable=SC2086
    "$B/session-controller" --store "$rst" --cube-url "$SIM" $cs \
      --metrics-addr 127.0.0.1:0 --replica "bench-$rl-$j" "$@" 2>"$T/$rl-$j-$NSTART.log" &
    p=$!
    PIDS="$PIDS $p"; CPIDS="$CPIDS $p"
    m=""
    i=0
    while [ $i -lt 300 ]; do
      if [ -z "$m" ]; then
        port=$(sed -n 's/.*serving \/metrics.* port=\([0-9]*\).*/\1/p' "$T/$rl-$j-$NSTART.log" | tail -n 1)
        [ -n "$port" ] && m="http://127.0.0.1:$port"
      fi
      [ -n "$m" ] && curl -sf -o /dev/null "$m/readyz" && break
      kill -0 "$p" 2>/dev/null || break
      sleep 0.1; i=$((i + 1))
    done
    curl -sf -o /dev/null "$m/readyz" ||
      { echo "bench: controller $rl-$j did not get ready" >&2; tail -n 20 "$T/$rl-$j-$NSTART.log" >&2; exit 1; }
    METS="$METS $m"
    j=$((j + 1))
  done
}
stop_replicas() { for p in $CPIDS; do stop "$p"; done; CPIDS=""; }
# single-pass histogram sums over the replicas: "COUNT SUM"
passes() {
  for m in $METS; do curl -sf "$m/metrics"; done | awk '
    $1 == "session_controller_reconcile_duration_seconds_count" {c += $2}
    $1 == "session_controller_reconcile_duration_seconds_sum" {s += $2}
    END {printf "%d %.6f\n", c, s}'
}
load() { cut -d' ' -f1-3 /proc/loadavg; }
# phase_count STORE PHASE: sessions of the default namespace in PHASE
phase_count() {
  "$B/sessionctl" --store "$1" get sessions -o json |
    jq --arg p "$2" '[.items[] | select(.status.phase == $p)] | length'
}

# connect_phase LABEL WHAT TARGET MODE STORE NAMES: one bench_connect run,
# its result row (with the controllers' single passes and the load)
connect_phase() {
  pl=$1; what=$2; target=$3; mode=$4; pst=$5; names=$6
  # shellcheck disable=SC2046
  set -- $(passes); c0=$1; s0=$2
  ld0=$(load)
  # shellcheck disable=SC2086
  out=$("$BC" $BCOPTS "$mode" "$B/sessionctl" "$pst" "$SIM" "$names" "$T/$pl.lat" "$T" 2>"$T/$pl.err") || true
  ld1=$(load)
  # shellcheck disable=SC2046
  set -- $(passes); c1=$1; s1=$2
  cp "$T/$pl.lat" "build/bench/connect-$pl.lat" 2>/dev/null || true
  # (connect -f says "session/NAME created" on stderr: not a complaint)
  grep -v "^session/[^ ]* created$" "$T/$pl.err" >"$T/$pl.errs" || true
  [ -s "$T/$pl.errs" ] && { say "$pl: $(wc -l <"$T/$pl.errs") complaints, first:"; head -n 3 "$T/$pl.errs"; }
  # n=.. failed=.. notpaused=.. min=.. p50=.. p90=.. p99=.. max=.. mean=.. ms
  eval "$(echo "$out" | tr ' ' '\n' | grep '=' | sed 's/^/bc_/')"
  np=$(awk -v a="$c0" -v b="$c1" -v n="${bc_n:-0}" 'BEGIN {printf "%.1f", (n ? (b - a) / n : 0)}')
  pm=$(awk -v a="$c0" -v b="$c1" -v x="$s0" -v y="$s1" 'BEGIN {printf "%.1f", (b > a ? (y - x) * 1000 / (b - a) : 0)}')
  say "$pl ($what): $out; controller single passes: $np per connect, mean $pm ms; load $ld0 -> $ld1"
  case "$target" in
    "p50 < "*)
      t50=$(echo "$target" | sed 's/p50 < \([0-9]*\).*/\1/')
      t99=$(echo "$target" | sed -n 's/.*p99 < \([0-9]*\).*/\1/p')
      met=$(awk -v a="${bc_p50:-1e9}" -v b="${bc_p99:-1e9}" -v x="$t50" -v y="${t99:-1e9}" \
        'BEGIN {print (a < x && b < y ? "yes" : "NO")}') ;;
    *) met=n/a ;;
  esac
  result "$what" "$target" \
    "p50 ${bc_p50:-?}, p99 ${bc_p99:-?} (min ${bc_min:-?}, p90 ${bc_p90:-?}, max ${bc_max:-?}) ms, n=${bc_n:-0}/$(wc -l <"$names") failed ${bc_failed:-?} notpaused ${bc_notpaused:-0} skipped ${bc_skipped:-0}; ctl ${np} passes x ${pm} ms; load $ld0" "$met"
  unset bc_n bc_skipped bc_failed bc_notpaused bc_min bc_p50 bc_p90 bc_p99 bc_max bc_mean
}

# connect_run KIND R: on a fresh cubesim (clock speed 1) and a fresh
# store (KIND sqlite or kube), R replicas: NNEW new sessions by connect
# -f (no latency, then create:latency=48ms), the floor (sessionctl get),
# then all sessions idle-paused (the clock pushed past their 15m
# idleTimeout), the replicas restarted so that their statuses say Paused
# (a resync of 60 s is not waited out), and NCONN connects of paused
# sessions (no latency, then connect:latency=42ms)
connect_run() {
  kind=$1; r=$2; l="c-$kind-$r"
  start_sim "$l" --clock-speed 1
  if [ "$kind" = kube ]; then
    start_kube "$l"; st=kube; cst=kube
  else
    st="sqlite:$T/$l.db"; cst="$st${BENCH_CONNECT_SQLITE:-}"
  fi
  # --cube-qps 0: back to back, connects come at 10-100/s with 3-4 Cube
  # calls each, and the default bucket (50/s) would be what is measured
  start_replicas "$l" "$st" "$r" --cube-qps 0
  tag="$kind, $r replica$( [ "$r" = 1 ] || echo s)"
  [ "$cst" = "$st" ] || tag="$tag, sessionctl ${cst#"$st"}"
  seq 1 "$NNEW" | sed 's/^/a-/' >"$T/$l.new0"
  seq 1 "$NNEW" | sed 's/^/b-/' >"$T/$l.new48"
  say "$l: $NNEW connect -f of new sessions, no create latency"
  connect_phase "$l-new0" "connect -f new, $tag, create 0 ms" "p50 < 30 ms" new "$cst" "$T/$l.new0"
  sim_faults "create:latency=48ms"
  say "$l: $NNEW connect -f of new sessions, create:latency=48ms"
  connect_phase "$l-new48" "connect -f new, $tag, create 48 ms" "p50 < 78 ms" new "$cst" "$T/$l.new48"
  sim_faults ""
  head -n "$NFLOOR" "$T/$l.new0" >"$T/$l.floor"
  connect_phase "$l-floor" "floor: sessionctl get, $tag" "(report)" get "$cst" "$T/$l.floor"
  # the sessions to pause: 2 x NCONN more, applied at once (not timed)
  gen_list "$NCONN" Active p "$T/$l-p.yaml"
  gen_list "$NCONN" Active q "$T/$l-q.yaml"
  "$B/sessionctl" --store "$st" apply -f "$T/$l-p.yaml" >/dev/null
  "$B/sessionctl" --store "$st" apply -f "$T/$l-q.yaml" >/dev/null
  tot=$((2 * NNEW + 2 * NCONN))
  i=0
  while [ "$(phase_count "$st" Running)" != "$tot" ] && [ $i -lt 300 ]; do sleep 0.2; i=$((i + 1)); done
  # idle-pause them all: 15m idleTimeout (+ the pause itself)
  curl -sf -X POST -H 'Content-Type: application/json' -d '{"advance": 960}' "$SIM/_sim/clock" >/dev/null
  stop_replicas
  start_replicas "$l" "$st" "$r" --cube-qps 0
  i=0
  while [ "$(phase_count "$st" Paused)" != "$tot" ] && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
  say "$l: $(phase_count "$st" Paused)/$tot sessions Paused; cubesim paused: $(curl -sf "$SIM/_sim/sandboxes" | jq '[.[] | select(.state=="paused")] | length')"
  "$B/sessionctl" --store "$st" get sessions -o json |
    jq -r '.items[] | "\(.metadata.name) \(.status.sandboxID)"' >"$T/$l.ids"
  grep '^p' "$T/$l.ids" >"$T/$l.p0"
  grep '^q' "$T/$l.ids" >"$T/$l.p42"
  say "$l: $(wc -l <"$T/$l.p0") connects of paused sessions, no resume latency"
  connect_phase "$l-p0" "connect paused, $tag, resume 0 ms" "p50 < 30 ms, p99 < 150 ms" paused "$cst" "$T/$l.p0"
  sim_faults "connect:latency=42ms"
  say "$l: $(wc -l <"$T/$l.p42") connects of paused sessions, connect:latency=42ms"
  connect_phase "$l-p42" "connect paused, $tag, resume 42 ms" "p50 < 72 ms, p99 < 150 ms" paused "$cst" "$T/$l.p42"
  stop_replicas
  stop "$SIM_PID"
  [ "$kind" = kube ] && { stop "$API_PID"; unset KUBECONFIG; }
  return 0
}

if ! skip 8; then
  BCOPTS="-t $CONNECT_TMO -g $CONNECT_GIVEUP"
  say "8. connect latency: paused -> Running and new -> Running, sqlite and kube, 1 and 3 replicas"
  # shellcheck disable=SC2046
  $CC -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -Wall -Wextra \
    -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 \
    -Wno-format-nonliteral -O2 -g -I. $(pkg-config --cflags libcurl json-c) \
    -o build/bench/bench_connect test/bench/bench_connect.c \
    $(pkg-config --libs libcurl json-c)
  BC=$(pwd)/build/bench/bench_connect
  for cfg in $CONNECT_CFGS; do
    connect_run "${cfg%/*}" "${cfg#*/}"
  done
fi

if ! skip 9; then
  say "9. churn: 600 sessions at 30/s, a replica killed or stopped every 4 s"
  BINDIR="$B" sh test/bench/churn.sh | tee "$T/churn.out"
  p99=$(sed -n 's/.*p99 \([0-9-]*\).*/\1/p' "$T/churn.out")
  echo "churn apply -> running|p99 < 1000 ms, none > 5 s|$(sed -n 's/^  apply -> running (ms): //p' "$T/churn.out"); $(sed -n 's/^  \(over 1 s.*\)/\1/p' "$T/churn.out")|$( [ -n "$p99" ] && [ "$p99" != - ] && [ "$p99" -lt 1000 ] && echo yes || echo no)" >>"$RES"
fi

if ! skip 10; then
  say "10. scale: apply, first pass, settled pass, idle cost for N in ${BENCH_SCALE_NS:-10000 50000 100000}"
  BINDIR="$B" BENCH_IDLE_SECONDS="${BENCH_IDLE_SECONDS:-120}" sh test/bench/scale.sh | tee "$T/scale.out" || true
  # its table: N | measure | result | load
  awk -F' *[|] *' '$1 ~ /^[0-9]+$/ && NF == 4 {
    t = "(report)"
    if($2 ~ /^apply/) t = "50k < 5 s, 100k < 10 s"
    else if($2 ~ /store writes/) t = "0"
    else if($2 ~ /^settled full pass/) t = "10k < 100 ms, 100k < 1 s"
    else if($2 ~ /peak RSS/) t = "100k < 500 MB"
    else if($2 ~ /^idle/) t = "100k < 5% of a core"
    printf "scale %s: %s|%s|%s; load %s|n/a\n", $1, $2, t, $3, $4 }' \
    "$T/scale.out" >>"$RES"
fi

echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-44s | %-24s | %-60s | %s\n' benchmark target result met
awk -F'|' '{printf "%-44s | %-24s | %-60s | %s\n", $1, $2, $3, $4}' "$RES"
