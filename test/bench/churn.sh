#!/bin/sh
# churn.sh - time from apply to a running sandbox while replicas churn
# (issue 15 section 3). Measures, never asserts.
#
# 3 replicas on one SQLite store, cubesim with 20 ms on every call and its
# clock at real speed, default --cube-qps. New sessions arrive at
# CHURN_RATE a second (30: a class opening its notebooks) until
# CHURN_N (600); every 4 s one replica is SIGKILLed or SIGTERMed (in turn)
# and started again. For each session: the time from its apply to
# Cube's answer to its (first successful) create, from cubesim's audit;
# p50, p99, max, how many took over 1 s and over 5 s, and the duplicates
# made (more than one create for a session) and left (more than one live
# sandbox at the end).
#
# usage: sh test/bench/churn.sh     (BINDIR, CHURN_N, CHURN_RATE;
#        CHURN_KILLS=0: the same arrivals with no replica stopped;
#        CHURN_DIALECT=e2b: cubesim speaks E2B, cube by default)
set -u
cd "$(dirname "$0")/../.."
B=${BINDIR:-$(pwd)/bin}
N=${CHURN_N:-600}
RATE=${CHURN_RATE:-30}
T=$(mktemp -d "${TMPDIR:-/tmp}/sc-churn.XXXXXX")
PIDS=""
cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null; done
  for p in $PIDS; do wait "$p" 2>/dev/null; done
  [ -n "${KEEP_TMP:-}" ] && echo "churn: kept $T" || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

"$B/cubesim" --listen 127.0.0.1:0 --dialect "${CHURN_DIALECT:-cube}" --clock-speed 1 --faults '*:latency=20ms' \
  >"$T/sim.out" 2>"$T/sim.log" &
PIDS="$PIDS $!"
SIM=""
i=0
while [ -z "$SIM" ] && [ $i -lt 100 ]; do
  SIM=$(sed -n 's/^cubesim listening on //p' "$T/sim.out"); sleep 0.05; i=$((i + 1))
done
[ -n "$SIM" ] || { echo "churn: cubesim did not start" >&2; exit 1; }
STORE="sqlite:$T/s.db"
start_replica() { # INDEX
  "$B/session-controller" --store "$STORE" --cube-url "$SIM" --create-store \
    --metrics-addr "" --resync 5s --replica "r$1" 2>>"$T/r$1.log" &
  eval "pid$1=$!"
  PIDS="$PIDS $!"
}
start_replica 0; start_replica 1; start_replica 2
while [ ! -e "$T/s.db" ]; do sleep 0.1; done
sleep 1

# the arrivals, paced, in the background; apply times in ms
(
  i=1
  gap=$(awk -v r="$RATE" 'BEGIN { printf "%.4f", 1 / r }')
  while [ $i -le "$N" ]; do
    t=$(date +%s%3N)
    printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: c%d}\nspec: {template: shell}\n' "$i" |
      "$B/sessionctl" --store "$STORE" apply -f - >/dev/null 2>&1
    echo "c$i $t" >>"$T/applied"
    sleep "$gap"
    i=$((i + 1))
  done
) &
drv=$!
PIDS="$PIDS $drv"

# the churn: a replica killed or stopped every 4 s, started again at once
k=0
load0=$(cut -d' ' -f1 /proc/loadavg)
while kill -0 "$drv" 2>/dev/null; do
  sleep 4
  r=$((k % 3))
  [ "${CHURN_KILLS:-1}" = 1 ] || { k=$((k + 1)); continue; }
  eval "p=\$pid$r"
  if [ $((k % 2)) -eq 0 ]; then kill -9 "$p" 2>/dev/null; else kill -TERM "$p" 2>/dev/null; fi
  wait "$p" 2>/dev/null
  start_replica "$r"
  k=$((k + 1))
done
sleep 10 # let the last ones land
load1=$(cut -d' ' -f1 /proc/loadavg)

curl -sf "$SIM/_sim/audit" >"$T/audit"
curl -sf "$SIM/_sim/sandboxes" >"$T/truth"
# first successful create per session, ms since the epoch (Cube's clock
# runs at real speed from the real time); the audit names the sandbox,
# the truth its session
jq -r 'select(.event=="create" and .status>=200 and .status<300) | "\(.sandboxID) \(.at)"' "$T/audit" >"$T/c.ids"
jq -r '.[] | "\(.sandboxID) \(.metadata["lea.session_id"] // "-")"' "$T/truth" >"$T/t.ids"
awk 'NR==FNR { s[$1] = $2; next } ($1 in s) { print s[$1], $2 }' "$T/t.ids" "$T/c.ids" >"$T/creates.raw"
while read -r sid at; do
  printf '%s %s\n' "$sid" "$(date -d "$at" +%s%3N)"
done <"$T/creates.raw" >"$T/creates"
awk 'NR==FNR { a[$1] = $2; next }
     { n[$1]++; if(!($1 in first) || $2 < first[$1]) first[$1] = $2 }
     END {
       for(s in a) if(s in first) { d = first[s] - a[s]; print d }
       for(s in n) if(n[s] > 1) dup += n[s] - 1
       print "DUP", dup + 0 > "/dev/stderr"
     }' "$T/applied" "$T/creates" 2>"$T/dup" | sort -n >"$T/lat"
made=$(wc -l <"$T/lat")
never=$((N - made))
dup=$(sed -n 's/^DUP //p' "$T/dup")
left=$(jq '[.[] | select(.state != "deleted") | .metadata["lea.session_id"]] | group_by(.) | map(select(length > 1)) | length' "$T/truth")
pct() { awk -v p="$1" '{ v[NR] = $1 } END { if(!NR) { print "-"; exit } i = int(NR * p + 0.999999); if(i < 1) i = 1; if(i > NR) i = NR; print v[i] }' "$T/lat"; }
over1=$(awk '$1 > 1000' "$T/lat" | wc -l)
over5=$(awk '$1 > 5000' "$T/lat" | wc -l)
echo "churn: $N sessions at $RATE/s, 3 replicas, one killed or stopped every 4 s ($k churns), Cube 20 ms"
echo "  apply -> running (ms): p50 $(pct 0.5)  p99 $(pct 0.99)  max $(tail -n 1 "$T/lat")"
echo "  over 1 s: $over1   over 5 s: $over5   never: $never"
echo "  duplicates made: $dup   sessions with more than one live sandbox at the end: $left"
echo "  load average: $load0 at start, $load1 at the end"
