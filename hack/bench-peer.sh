#!/bin/sh
# bench-peer.sh - side by side in one run: session-controller (SQLite store)
# and a peer reconciler written with the official E2B JS SDK
# (test/bench/peer/peer.mjs, a Node poll loop), each against its own fresh
# cubesim in the e2b dialect, N sessions (`make bench-peer`). Measures,
# never asserts; prints a table with the ratios and the load average.
#
# Phases, for ours then the peer (alternating phase by phase):
#  A. N sessions `spec.state: Active` applied at once (one sessionctl apply)
#     with the reconciler already running: rate = N / (time from the end of
#     the apply until cubesim counts N running sandboxes); CPU per created
#     session = the reconciler's CPU over the same time / N. Ours: --cube-qps
#     0 (no token bucket; the peer has none), --max-inflight 32 (default),
#     --resync 5s; the peer: 32 in flight, a pass every 5 s.
#  B. the same with 20 ms on every Cube call (cubesim's latency fault).
#  C. steady: both restarted on phase A's converged store and cubesim, with
#     a full pass every 5 s (ours --resync 5s --log-level debug); after two
#     passes (the first one after a start is not settled), CPU over
#     BENCH_PEER_STEADY_SECONDS and every full pass in that window: its
#     duration (ours: the `full pass done ... seconds=` debug log line; the
#     peer: its own timing of read + list + act, on stdout).
#  D. reaction: BENCH_PEER_REACT_N converged sessions set to `state: Paused`,
#     one sessionctl apply every BENCH_PEER_REACT_GAP_MS without waiting;
#     latency = the pause call's time in cubesim's audit trail (its clock,
#     speed 1, offset to the wall clock measured) - the wall clock before
#     that apply. The same method for both.
#
# "Running" is counted by cubesim for both (`X-Total-Running` of
# `GET /v2/sandboxes?state=running&limit=1`, every 50 ms), not from the
# store: the peer writes no status. CPU is utime+stime+cutime+cstime of
# the reconciler's process from /proc/PID/stat: for the peer that is the
# node process (all its threads) plus every `sessionctl get` child it has
# reaped (node's libuv waits for each child, so the kernel adds the child's
# times to cutime/cstime); ours has no children.
#
# Environment: BENCH_PEER_N (10000), BENCH_PEER_STEADY_SECONDS (60),
# BENCH_PEER_REACT_N (40), BENCH_PEER_REACT_GAP_MS (250),
# BENCH_PEER_TIMEOUT (600: seconds a convergence may take),
# BENCH_PEER_INTERVAL (5: the peer's pass period and ours --resync),
# BENCH_PEER_SKIP (phases to skip, e.g. "B D"; C and D need A).
# Needs node and npm: the pinned `e2b` package is installed with `npm ci`
# into build/bench-peer/ (once; again when the lock file changes). Never
# part of `make test` or CI. Every process it starts is stopped by PID.
set -eu
cd "$(dirname "$0")/.."
N=${BENCH_PEER_N:-10000}
STEADY_S=${BENCH_PEER_STEADY_SECONDS:-60}
NREACT=${BENCH_PEER_REACT_N:-40}
GAP_MS=${BENCH_PEER_REACT_GAP_MS:-250}
TMO=${BENCH_PEER_TIMEOUT:-600}
IV=${BENCH_PEER_INTERVAL:-5}
SKIP=" ${BENCH_PEER_SKIP:-} "

for t in jq curl awk node npm; do
  command -v $t >/dev/null || { echo "bench-peer: $t not found" >&2; exit 2; }
done
make -s all
PEERDIR=$(pwd)/build/bench-peer
mkdir -p "$PEERDIR"
if ! cmp -s test/bench/peer/package-lock.json "$PEERDIR/package-lock.json" ||
   [ ! -f "$PEERDIR/node_modules/e2b/package.json" ]; then
  cp test/bench/peer/package.json test/bench/peer/package-lock.json "$PEERDIR/"
  (cd "$PEERDIR" && npm ci --no-audit --no-fund --loglevel=error) ||
    { echo "bench-peer: npm ci in $PEERDIR failed" >&2; exit 1; }
fi
cp test/bench/peer/peer.mjs "$PEERDIR/peer.mjs"
# bench_converge: waits for N sessions with phase Running in a SQLite store
mkdir -p build/bench
# shellcheck disable=SC2046
${CC:-cc} -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -Wall -Wextra \
  -Werror -O2 -g -I. $(pkg-config --cflags sqlite3) \
  -o build/bench/bench_converge test/bench/bench_converge.c build/libsc.a \
  $(pkg-config --libs sqlite3)
CONV=$(pwd)/build/bench/bench_converge
E2B_VERSION=$(jq -r .version "$PEERDIR/node_modules/e2b/package.json")

B=$(pwd)/bin
T=$(mktemp -d "${TMPDIR:-/tmp}/sc-bench-peer.XXXXXX")
PIDS=""
RES="$T/results"
: >"$RES"
BENCH_NAME=bench-peer
. hack/bench-lib.sh
trap bench_cleanup EXIT
trap 'exit 1' INT TERM

say() { echo "bench-peer: $*"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
hz=$(getconf CLK_TCK)
# cpu_ticks PID: utime+stime+cutime+cstime (fields 14-17 of /proc/PID/stat)
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13 + $14 + $15}'; }
# result KEY VALUE: one figure for the table
result() { printf '%s %s\n' "$1" "$2" >>"$RES"; }

# start_sim LABEL [ARGS...]: a fresh cubesim, e2b dialect; sets SIM, SIM_PID
start_sim() {
  l=$1; shift
  : >"$T/$l-sim.out"
  "$B/cubesim" --listen 127.0.0.1:0 --dialect e2b "$@" >"$T/$l-sim.out" 2>"$T/$l-sim.log" &
  SIM_PID=$!
  PIDS="$PIDS $SIM_PID"
  sim_wait "$l"
}

# start_ours LABEL DB [ARGS...]: sets RPID; waits for /readyz
start_ours() {
  l=$1; db=$2; shift 2
  "$B/session-controller" --store "sqlite:$db" --cube-url "$SIM" --create-store \
    --metrics-addr 127.0.0.1:0 --replica "bench-$l" --cube-qps 0 --resync "${IV}s" \
    "$@" 2>"$T/$l.log" &
  RPID=$!
  PIDS="$PIDS $RPID"
  ready_wait "$l" "$RPID"
}

# start_peer LABEL DB: sets RPID; waits for its first pass line
start_peer() {
  l=$1; db=$2
  E2B_API_KEY=bench-peer-key node "$PEERDIR/peer.mjs" --store "sqlite:$db" \
    --sessionctl "$B/sessionctl" --api-url "$SIM" --interval "$IV" --inflight 32 \
    >"$T/$l.log" 2>"$T/$l.err" &
  RPID=$!
  PIDS="$PIDS $RPID"
  i=0
  while [ $i -lt 600 ]; do
    [ -s "$T/$l.log" ] && return 0
    kill -0 "$RPID" 2>/dev/null || break
    sleep 0.1; i=$((i + 1))
  done
  echo "bench-peer: peer $l did not run a pass" >&2; tail -n 20 "$T/$l.err" >&2
  exit 1
}

# running: cubesim's count of running sandboxes (one cheap list call)
running() {
  curl -s -o /dev/null -D - "$SIM/v2/sandboxes?state=running&limit=1" |
    tr -d '\r' | awk 'tolower($1) == "x-total-running:" {print $2}'
}

# wait_running N: polls every 50 ms; sets DONE_MS (wall clock) or exits
wait_running() {
  lim=$(( $(now_ms) + TMO * 1000 ))
  last=0
  while :; do
    c=$(running); c=${c:-0}
    if [ "$c" -ge "$1" ]; then DONE_MS=$(now_ms); return 0; fi
    nw=$(now_ms)
    [ "$nw" -lt "$lim" ] || { echo "bench-peer: only $c of $1 running after ${TMO}s" >&2; exit 1; }
    if [ $((nw - last)) -ge 5000 ]; then say "  ... $c running"; last=$nw; fi
    sleep 0.05
  done
}

# create_run SIDE PHASE SIMARGS: apply N Active sessions at once to a fresh
# cubesim and store with SIDE (ours|peer) running; records PHASE.SIDE.rate
# and PHASE.SIDE.cpu; leaves SIM, RPID and the store ($T/PHASE-SIDE.db)
create_run() {
  side=$1; ph=$2; simargs=$3
  l=$ph-$side
  # shellcheck disable=SC2086
  start_sim "$l" $simargs
  db=$T/$l.db
  # the peer needs the store to exist (sessionctl get never creates one)
  "$B/sessionctl" --store "sqlite:$db" store init >/dev/null
  if [ "$side" = ours ]; then start_ours "$l" "$db"; else start_peer "$l" "$db"; fi
  ld0=$(load)
  c0=$(cpu_ticks "$RPID"); a0=$(now_ms)
  "$B/sessionctl" --store "sqlite:$db" apply -f "$T/active.yaml" >/dev/null
  t0=$(now_ms)
  wait_running "$N"
  # the CPU window ends when the side has finished its work: ours when
  # the store shows every session Running (its status writes), the peer
  # when its pass with the creates has ended (its pass line)
  if [ "$side" = ours ]; then
    out=$("$CONV" "$db" "$N" "$t0" "$TMO" 2>/dev/null) ||
      { echo "bench-peer: $l: the store did not show $N Running: $out" >&2; exit 1; }
    st_ms=$(echo "$out" | cut -d" " -f3)
  else
    i=0
    until jq -e 'select(.create > 0)' "$T/$l.log" >/dev/null; do
      i=$((i + 1)); [ $i -lt 600 ] || { echo "bench-peer: $l: no pass with creates logged" >&2; exit 1; }
      sleep 0.05
    done
  fi
  c1=$(cpu_ticks "$RPID")
  ms=$((DONE_MS - t0))
  rate=$(awk -v n="$N" -v ms="$ms" 'BEGIN {printf "%.0f", n * 1000 / ms}')
  cpu=$(awk -v t="$((c1 - c0))" -v hz="$hz" -v n="$N" 'BEGIN {printf "%.3f", t * 1000 / hz / n}')
  # ours sees the apply through its store watch at once; the peer at its
  # next poll: its rate is also taken from the start of the first pass
  # that had creates (its engine, without the poll wait)
  erate=$rate; extra="; the store showed all Running after ${st_ms:-?} ms"
  if [ "$side" = peer ]; then
    first=$(jq -r 'select(.create > 0) | .startMs' "$T/$l.log" | head -n 1)
    erate=$(awk -v n="$N" -v ms="$((DONE_MS - first))" 'BEGIN {printf "%.0f", n * 1000 / ms}')
    extra="; its first pass with creates began $((first - t0)) ms after the apply: $erate/s from there"
  fi
  say "$l: $N running $ms ms after the apply (apply $((t0 - a0)) ms): $rate/s; CPU $((c1 - c0)) ticks = $cpu ms/session$extra; load $ld0 -> $(load)"
  result "$ph.rate.$side" "$erate"
  result "$ph.wrate.$side" "$rate"
  result "$ph.cpu.$side" "$cpu"
  result "$ph.load.$side" "$(load | cut -d' ' -f1)"
}

gen_list "$N" Active r "$T/active.yaml"
say "$N sessions, e2b SDK $E2B_VERSION, node $(node --version), pass period ${IV}s; load $(load)"

steady_and_react() {
  side=$1
  # C: restart on the converged store and cubesim
  stop "$RPID"
  l=C-$side
  db=$T/A-$side.db
  if [ "$side" = ours ]; then start_ours "$l" "$db" --log-level debug; else start_peer "$l" "$db"; fi
  # two full passes after the start first
  i=0
  while :; do
    if [ "$side" = ours ]; then np=$(metric session_controller_pass_duration_seconds_count); np=${np:-0}
    else np=$(wc -l <"$T/$l.log"); fi
    [ "$np" -ge 2 ] && break
    i=$((i + 1)); [ $i -lt 1200 ] || { echo "bench-peer: $l: no second pass" >&2; exit 1; }
    sleep 0.1
  done
  ld0=$(load)
  lines0=$(wc -l <"$T/$l.log")
  if [ "$side" = ours ]; then
    hc0=$(metric session_controller_pass_duration_seconds_count); hs0=$(metric session_controller_pass_duration_seconds_sum)
  fi
  c0=$(cpu_ticks "$RPID"); w0=$(now_ms)
  sleep "$STEADY_S"
  c1=$(cpu_ticks "$RPID"); w1=$(now_ms)
  hist=""
  if [ "$side" = ours ]; then
    hc1=$(metric session_controller_pass_duration_seconds_count); hs1=$(metric session_controller_pass_duration_seconds_sum)
    hist=$(awk -v c0="$hc0" -v c1="$hc1" -v s0="$hs0" -v s1="$hs1" 'BEGIN {if (c1 > c0) printf "; /metrics: %d passes, mean %.0f ms", c1 - c0, (s1 - s0) * 1000 / (c1 - c0)}')
    hmean=$(awk -v c0="$hc0" -v c1="$hc1" -v s0="$hs0" -v s1="$hs1" 'BEGIN {if (c1 > c0) printf "%.0f", (s1 - s0) * 1000 / (c1 - c0)}')
  fi
  tail -n +"$((lines0 + 1))" "$T/$l.log" >"$T/$l.window"
  if [ "$side" = ours ]; then
    grep 'full pass done' "$T/$l.window" |
      sed -n 's/.*sessions=\([0-9]*\) actions=\([0-9]*\) seconds=\([0-9.]*\).*/\3/p' |
      awk '{print $1 * 1000}' >"$T/$l.passes"
  else
    jq -r '.totalMs' "$T/$l.window" >"$T/$l.passes"
  fi
  np=$(wc -l <"$T/$l.passes")
  med=$(sort -n "$T/$l.passes" | awk '{a[NR]=$1} END {if (NR) printf "%.0f", a[int((NR+1)/2)]; else print "none"}')
  # ours without a full-pass log line (a changed log): the /metrics mean
  [ "$med" = none ] && [ -n "${hmean:-}" ] && med=$hmean
  mm=$(sort -n "$T/$l.passes" | awk '{a[NR]=$1} END {if (NR) printf "min %.0f, max %.0f", a[1], a[NR]}')
  smin=$(awk -v t="$((c1 - c0))" -v hz="$hz" -v ms="$((w1 - w0))" 'BEGIN {printf "%.2f", t / hz * 60000 / ms}')
  say "$l: $np full passes in ${STEADY_S}s: median $med ms ($mm); CPU $((c1 - c0)) ticks in $((w1 - w0)) ms = $smin s/min$hist; load $ld0 -> $(load)"
  if [ "$side" = peer ]; then
    med_of() { jq -r ".$1" "$T/$l.window" | sort -n | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}'; }
    say "$l: the peer's pass, median of each part: read (sessionctl get) $(med_of readMs) ms, list (SDK) $(med_of listMs) ms, act $(med_of actMs) ms"
  fi
  result "C.pass.$side" "$med"
  result "C.steady.$side" "$smin"
  result "C.load.$side" "$(load | cut -d' ' -f1)"

  skip D && return 0
  # D: reaction, apply -> Cube's pause call
  curl -sf "$SIM/_sim/sandboxes" |
    jq -r '.[] | select(.state=="running") | "\(.metadata["lea.session_id"]) \(.sandboxID)"' |
    head -n "$NREACT" >"$T/D-$side.ids"
  off=$(for i in $(seq 1 20); do
      a=$(now_ms); v=$(curl -sf "$SIM/_sim/clock" | jq .nowMs); b=$(now_ms)
      echo "$((b - a)) $((v - (a + b) / 2))"
    done | sort -n | head -n 1 | awk '{print $2}')
  seq0=$(curl -sf "$SIM/_sim/audit" | tail -n 1 | jq .seq)
  : >"$T/D-$side.t0"
  ld0=$(load)
  while read -r name id; do
    printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s}\nspec: {template: t, state: Paused}\n' "$name" >"$T/p.yaml"
    t0=$(now_ms)
    "$B/sessionctl" --store "sqlite:$db" apply -f "$T/p.yaml" >/dev/null </dev/null
    echo "$id $t0" >>"$T/D-$side.t0"
    t1=$(now_ms)
    w=$((GAP_MS - (t1 - t0)))
    [ "$w" -gt 0 ] && sleep "$(awk -v w="$w" 'BEGIN {printf "%.3f", w / 1000}')"
  done <"$T/D-$side.ids"
  k=0
  while :; do
    curl -sf "$SIM/_sim/audit?since=$seq0" | jq -r \
      'select(.event=="pause" and .source=="api") | "\(.sandboxID) \(.at)"' >"$T/D-$side.pauses"
    [ "$(wc -l <"$T/D-$side.pauses")" -ge "$NREACT" ] && break
    k=$((k + 1)); [ $k -lt 300 ] || break
    sleep 0.1
  done
  # at -> ms since the epoch (cubesim's clock), then minus the offset
  jq -rn --rawfile p "$T/D-$side.pauses" '$p | split("\n")[] | select(length > 0) | split(" ") |
    "\(.[0]) \((.[1] | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601) * 1000 + ((.[1] | capture("\\.(?<f>[0-9]{3})") | .f | tonumber)? // 0))"' \
    >"$T/D-$side.atms"
  awk -v off="$off" 'NR == FNR {t0[$1] = $2; next} ($1 in t0) {print $2 - off - t0[$1]}' \
    "$T/D-$side.t0" "$T/D-$side.atms" | sort -n >"$T/D-$side.lat"
  n=$(wc -l <"$T/D-$side.lat")
  pr=$(awk '{a[NR]=$1} END {if (NR) printf "%d %d %d", a[int(NR * 0.5 + 0.5)], a[int(NR * 0.99 + 0.5)], a[NR]; else print "none none none"}' "$T/D-$side.lat")
  # shellcheck disable=SC2086
  set -- $pr
  say "D-$side: reaction over $n of $NREACT (cubesim clock offset $off ms): p50 $1, p99 $2, max $3 ms; load $ld0 -> $(load)"
  result "D.p50.$side" "$1"
  result "D.load.$side" "$(load | cut -d' ' -f1)"
}

t_start=$(now_ms)
for side in ours peer; do
  skip A && break
  say "A ($side): $N Active at once, no Cube latency"
  create_run "$side" A ""
  skip C || steady_and_react "$side"
  stop "$RPID"; stop "$SIM_PID"
done
if ! skip B; then
  for side in ours peer; do
    say "B ($side): $N Active at once, 20 ms per Cube call"
    create_run "$side" B "--faults *:latency=20ms~0ms"
    stop "$RPID"; stop "$SIM_PID"
  done
fi

# ---------------------------------------------------------------- table
get() { awk -v k="$1" '$1 == k {print $2}' "$RES"; }
# row LABEL UNIT KEY HIGHER_IS_BETTER
row() {
  o=$(get "$3.ours"); p=$(get "$3.peer")
  [ -n "$o" ] || o=-; [ -n "$p" ] || p=-
  r=$(awk -v o="$o" -v p="$p" -v h="$4" 'BEGIN {
    if (o == "-" || p == "-" || o == "none" || p == "none" || o + 0 <= 0 || p + 0 <= 0) { print "-"; exit }
    printf "%.1fx", h ? o / p : p / o }')
  ph=${3%%.*}
  lo=$(get "$ph.load.ours"); lp=$(get "$ph.load.peer")
  printf '| %s | %s %s | %s %s | %s | %s / %s |\n' "$1" "$o" "$2" "$p" "$2" "$r" "${lo:--}" "${lp:--}"
}
echo
echo "session-controller vs the e2b SDK $E2B_VERSION peer, $N sessions, one run of $(( ($(now_ms) - t_start) / 1000 )) s"
echo "(ratio: how many times better ours is; load: 1-minute load average after ours / after the peer;"
echo "rates: ours from the end of the apply, the peer from the start of its first pass with creates)"
echo
echo "| measure | this project | the peer | ratio | load |"
echo "|---|---|---|---|---|"
row "$N Active at once -> running" "/s" A.rate 1
row "  the same from the end of the apply (the peer's poll wait in)" "/s" A.wrate 1
row "create burst, 20 ms per Cube call" "/s" B.rate 1
row "  the same from the end of the apply (the peer's poll wait in)" "/s" B.wrate 1
row "CPU per created session" "ms" A.cpu 0
row "CPU per created session, 20 ms per call" "ms" B.cpu 0
row "one full pass at $N converged (median)" "ms" C.pass 0
row "steady CPU, a full pass every ${IV} s" "s/min" C.steady 0
row "reaction (apply -> Cube call), p50" "ms" D.p50 0
echo
echo "load average at the end: $(load)"
