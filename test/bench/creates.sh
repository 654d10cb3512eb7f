#!/bin/sh
# creates.sh - N sessions Active at once (issue 16, target 2): the create
# rate and the controller's CPU per created session at several
# --max-inflight values, with no Cube latency and with LAT per call.
# Always --cube-qps 0 (the bucket out of the way). Measures, never asserts.
#
# For each latency and each --max-inflight: a fresh cubesim (--faults
# "*:latency=LAT" or none), one controller on a fresh SQLite store, one
# `kind: List` of N sessions applied by sessionctl; bench_converge waits
# until all are Running with a sandbox. Prints the time from the apply to
# the last Running, the rate, the controller's CPU (utime + stime from
# /proc/PID/stat) divided by N, and the load average.
#
# usage: sh test/bench/creates.sh   (BINDIR, CREATES_N=10000,
#        CREATES_INFLIGHT="8 16 32 64 128", CREATES_LAT="0 20ms")
set -u
cd "$(dirname "$0")/../.."
B=${BINDIR:-$(pwd)/bin}
N=${CREATES_N:-10000}
INFL=${CREATES_INFLIGHT:-8 16 32 64 128}
LATS=${CREATES_LAT:-0 20ms}
T=$(mktemp -d "${TMPDIR:-/tmp}/sc-creates.XXXXXX")
PIDS=""
cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null; done
  for p in $PIDS; do wait "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
make -s build/libsc.a >/dev/null || exit 2
mkdir -p build/bench
# shellcheck disable=SC2046
${CC:-cc} -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -Wall -Wextra \
  -Werror -O2 -I. $(pkg-config --cflags sqlite3) \
  -o build/bench/bench_converge test/bench/bench_converge.c build/libsc.a \
  $(pkg-config --libs sqlite3) || exit 2
CONV=$(pwd)/build/bench/bench_converge
awk -v n="$N" 'BEGIN { print "apiVersion: v1"; print "kind: List"; print "items:";
  for(i = 1; i <= n; i++) printf("- {apiVersion: lea.io/v1alpha1,kind: Session,metadata: {name: c%x},spec: {template: t}}\n", i) }' >"$T/l.yaml"
hz=$(getconf CLK_TCK)
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }

for lat in $LATS; do
  for mi in $INFL; do
    rm -f "$T/s.db"*
    faults=""
    [ "$lat" = 0 ] || faults="*:latency=$lat"
    "$B/cubesim" --listen 127.0.0.1:0 ${faults:+--faults "$faults"} >"$T/sim.out" 2>"$T/sim.log" &
    sim=$!; PIDS="$PIDS $sim"
    SIM=""; i=0
    while [ -z "$SIM" ] && [ $i -lt 100 ]; do
      SIM=$(sed -n 's/^cubesim listening on //p' "$T/sim.out"); sleep 0.05; i=$((i + 1))
    done
    "$B/session-controller" --store "sqlite:$T/s.db" --cube-url "$SIM" --create-store \
      --metrics-addr 127.0.0.1:0 --cube-qps 0 --max-inflight "$mi" 2>"$T/c.log" &
    ctl=$!; PIDS="$PIDS $ctl"
    port=""; i=0
    while [ -z "$port" ] && [ $i -lt 200 ]; do
      port=$(sed -n 's/.*serving \/metrics.* port=\([0-9]*\).*/\1/p' "$T/c.log" | head -n 1)
      sleep 0.05; i=$((i + 1))
    done
    i=0
    until curl -sf -o /dev/null "http://127.0.0.1:$port/readyz"; do
      sleep 0.1; i=$((i + 1))
      [ $i -lt 300 ] || { echo "creates: the controller did not get ready:" >&2; tail -n 5 "$T/c.log" >&2; exit 1; }
    done
    c0=$(cpu_ticks "$ctl")
    load0=$(cut -d' ' -f1 /proc/loadavg)
    t0=$(date +%s%3N)
    "$B/sessionctl" --store "sqlite:$T/s.db" apply -f "$T/l.yaml" >/dev/null
    out=$("$CONV" "$T/s.db" "$N" "$t0" 120 2>"$T/conv.err")
    c1=$(cpu_ticks "$ctl")
    load1=$(cut -d' ' -f1 /proc/loadavg)
    ms=$(echo "$out" | awk '{print $3}')
    echo "latency $lat, --max-inflight $mi: $out; $(awk -v n="$N" -v ms="$ms" 'BEGIN { printf "%.0f/s", n * 1000 / ms }'); CPU $(awk -v t="$((c1 - c0))" -v hz="$hz" -v n="$N" 'BEGIN { printf "%.3f ms", t * 1000 / hz / n }') per session; load $load0 -> $load1"
    kill "$ctl" "$sim" 2>/dev/null; wait "$ctl" "$sim" 2>/dev/null
  done
done
