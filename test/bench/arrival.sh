#!/bin/sh
# arrival.sh - time from apply to a running sandbox under arrival, at the
# controller's default settings (issue 16, target 0). Measures, never
# asserts.
#
# For each replica count (1 and 3): a fresh cubesim with 20 ms on every
# call and its clock at real speed, R replicas on one SQLite store with
# nothing but the store, Cube URL and a metrics port set (default
# --cube-qps, --max-inflight, --resync), and N sessions applied one at a
# time through `sessionctl apply` at RATE a second. bench_arrival watches
# the store and notes when each session first shows phase Running with a
# sandboxID; the latency of a session is that minus the wall time taken
# right before its apply. Nearest-rank p50, p99, max; the Cube calls of
# all replicas by operation (session_controller_cube_requests_total)
# during the arrivals, per new session; the load average at start and
# end.
#
# usage: sh test/bench/arrival.sh
#   env: BINDIR (binaries under test, default ./bin), ARRIVAL_N (300),
#   ARRIVAL_RATE (30), ARRIVAL_REPLICAS ("1 3"), ARRIVAL_LATENCY (20ms),
#   ARRIVAL_CTL_ARGS (more controller flags, e.g. "--cube-qps 0"),
#   ARRIVAL_DIALECT (cube)
set -u
cd "$(dirname "$0")/../.."
B=${BINDIR:-$(pwd)/bin}
N=${ARRIVAL_N:-300}
RATE=${ARRIVAL_RATE:-30}
REPLICAS=${ARRIVAL_REPLICAS:-1 3}
LAT=${ARRIVAL_LATENCY:-20ms}
T=$(mktemp -d "${TMPDIR:-/tmp}/sc-arrival.XXXXXX")
PIDS=""
cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null; done
  for p in $PIDS; do wait "$p" 2>/dev/null; done
  [ -n "${KEEP_TMP:-}" ] && echo "arrival: kept $T" || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
for t in jq curl awk; do
  command -v $t >/dev/null || { echo "arrival: $t not found" >&2; exit 2; }
done
make -s build/libsc.a >/dev/null || exit 2
mkdir -p build/bench
# shellcheck disable=SC2046
${CC:-cc} -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -Wall -Wextra \
  -Werror -O2 -I. $(pkg-config --cflags sqlite3) \
  -o build/bench/bench_arrival test/bench/bench_arrival.c build/libsc.a \
  $(pkg-config --libs sqlite3) || exit 2
W=$(pwd)/build/bench/bench_arrival

cube_calls() { # the sum of session_controller_cube_requests_total by op, all replicas
  for port in $PORTS; do curl -sf "http://127.0.0.1:$port/metrics"; done |
    awk '/^session_controller_cube_requests_total\{/ {
      match($0, /op="[^"]*"/); op = substr($0, RSTART + 4, RLENGTH - 5); c[op] += $2 }
      END { for(o in c) printf "%s=%d ", o, c[o]; print "" }'
}
sum_calls() { echo "$1" | tr ' ' '\n' | awk -F= -v o="$2" '($1 == o || o == "") && NF == 2 { s += $2 } END { print s + 0 }'; }

run() { # R
  r=$1
  rm -f "$T/s.db"* "$T/applied" "$T/seen" "$T"/r*.log
  # shellcheck disable=SC2086
  "$B/cubesim" --listen 127.0.0.1:0 --dialect "${ARRIVAL_DIALECT:-cube}" --clock-speed 1 \
    --faults "*:latency=$LAT" >"$T/sim.out" 2>"$T/sim.log" &
  sim=$!; PIDS="$PIDS $sim"
  SIM=""; i=0
  while [ -z "$SIM" ] && [ $i -lt 100 ]; do
    SIM=$(sed -n 's/^cubesim listening on //p' "$T/sim.out"); sleep 0.05; i=$((i + 1))
  done
  [ -n "$SIM" ] || { echo "arrival: cubesim did not start" >&2; exit 1; }
  STORE="sqlite:$T/s.db"
  ctls=""; PORTS=""
  k=0
  while [ $k -lt "$r" ]; do
    # shellcheck disable=SC2086
    "$B/session-controller" --store "$STORE" --cube-url "$SIM" --create-store \
      --metrics-addr 127.0.0.1:0 --replica "a$k" ${ARRIVAL_CTL_ARGS:-} 2>"$T/r$k.log" &
    ctls="$ctls $!"; PIDS="$PIDS $!"
    k=$((k + 1))
  done
  k=0
  while [ $k -lt "$r" ]; do
    port=""; i=0
    while [ -z "$port" ] && [ $i -lt 100 ]; do
      port=$(sed -n 's/.*serving \/metrics.* port=\([0-9]*\).*/\1/p' "$T/r$k.log" | head -n 1)
      [ -n "$port" ] || { sleep 0.05; i=$((i + 1)); }
    done
    until curl -sf -o /dev/null "http://127.0.0.1:$port/readyz"; do sleep 0.1; done
    PORTS="$PORTS $port"
    k=$((k + 1))
  done
  sleep 1
  "$W" "$T/s.db" "$N" 120 >"$T/seen" &
  wpid=$!; PIDS="$PIDS $wpid"
  c0=$(cube_calls)
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  gap=$(awk -v r="$RATE" 'BEGIN { printf "%.4f", 1 / r }')
  t_start=$(date +%s%3N)
  i=1
  while [ $i -le "$N" ]; do
    # paced from the start, not from the last apply: RATE a second on average
    due=$((t_start + (i - 1) * 1000 / RATE))
    now=$(date +%s%3N)
    [ "$now" -lt "$due" ] && sleep "$(awk -v d="$((due - now))" 'BEGIN { printf "%.3f", d / 1000 }')"
    t=$(date +%s%3N)
    printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: c%d}\nspec: {template: shell}\n' "$i" |
      "$B/sessionctl" --store "$STORE" apply -f - >/dev/null 2>&1
    echo "c$i $t" >>"$T/applied"
    i=$((i + 1))
  done
  t_end=$(date +%s%3N)
  wait "$wpid" 2>/dev/null
  c1=$(cube_calls)
  load1=$(cut -d' ' -f1-3 /proc/loadavg)
  awk 'NR == FNR { a[$1] = $2; next } ($1 in a) { print $2 - a[$1] }' \
    "$T/applied" "$T/seen" | sort -n >"$T/lat"
  got=$(wc -l <"$T/lat")
  pct() { awk -v p="$1" '{ v[NR] = $1 } END { if(!NR) { print "-"; exit } i = int(NR * p + 0.999999); if(i < 1) i = 1; if(i > NR) i = NR; print v[i] }' "$T/lat"; }
  echo "arrival: $N sessions at $RATE/s (applied in $(( (t_end - t_start) / 1000 )).$(( (t_end - t_start) % 1000 / 100 )) s), $r replica(s), Cube $LAT per call, controller ${ARRIVAL_CTL_ARGS:-defaults}"
  echo "  apply -> Running (ms): p50 $(pct 0.5)  p99 $(pct 0.99)  max $(tail -n 1 "$T/lat")  (Running: $got/$N)"
  calls=""
  for op in list get create pause delete set-timeout connect probe; do
    d=$(( $(sum_calls "$c1" "$op") - $(sum_calls "$c0" "$op") ))
    [ "$d" -gt 0 ] && calls="$calls $op=$d"
  done
  all=$(( $(sum_calls "$c1" "") - $(sum_calls "$c0" "") ))
  echo "  Cube calls during the arrivals, all replicas:$calls; per new session $(awk -v a="$all" -v n="$N" 'BEGIN { printf "%.2f", a / n }')"
  echo "  load average: $load0 at start, $load1 at the end"
  for p in $ctls $sim; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
}

for r in $REPLICAS; do run "$r"; done
