#!/bin/sh
# shards.sh - what --shards auto saves (docs/controller.md, "Sharding").
# Measures, never asserts.
#
# SHARDS_N (10000) converged sessions over SHARDS_TENANTS (100) tenants on
# one SQLite store, cubesim (dialect SHARDS_DIALECT: cube, e2b, or both,
# one after the other; default cube) at real clock speed, no injected
# latency. Then, each for SHARDS_WINDOW seconds (30) after the replicas
# settled, with --resync SHARDS_RESYNC (5s):
#   A. 1 replica, --shards off
#   B. 3 replicas, --shards off
#   W. 3 replicas, --shards auto --shard-whole-list-every 0 (each list
#      whole, as sharding listed before the lists by tenant)
#   C. 3 replicas, --shards auto (lists by owned tenant where cheaper);
#      then a burst: SHARDS_BURST (1000) new sessions applied at once, the
#      Cube calls of the three together, by op, until all are running,
#      and the time; then C's window again (now N + BURST sessions: in
#      e2b a tenant of 110 rows takes 2 pages)
# per replica: Cube calls a minute (session_controller_cube_requests_total,
# by op; a list counts each page it took), the list requests by kind
# (session_controller_cube_list_requests_total: whole, tenant, session)
# and CPU (utime+stime from /proc) in s/min and % of a core.
#   D. kill -9 one of C's three: the time until the survivors own all the
#      sessions between them (session_controller_shard_sessions), and the
#      time until SHARDS_NEW (300) sessions applied right after the kill,
#      over every tenant, are all running.
#   DW. the same with three replicas of W (whole lists).
#   E. 3 replicas, --shards off: the burst, as in C.
# Prints the load average next to each figure.
#
# SHARDS_PHASES (default "A B W C D DW E"): the phases to run; D alone
# still starts C's replicas and its burst (the kill finds the same
# N + BURST sessions) but skips C's windows. SHARDS_TRACE=FILE: during D
# and DW, every 0.2 s one line per survivor to FILE: ms since the kill,
# phase, replica, sessions owned, its Cube calls so far by op, its list
# requests by kind. SHARDS_LOG_LEVEL: the replicas' --log-level (their
# logs are in the temporary directory; KEEP_TMP=1 keeps it).
#
# usage: sh test/bench/shards.sh   (BINDIR, SHARDS_N, SHARDS_TENANTS,
#        SHARDS_WINDOW, SHARDS_RESYNC, SHARDS_NEW, SHARDS_BURST,
#        SHARDS_DIALECT, SHARDS_PHASES, SHARDS_TRACE, SHARDS_LOG_LEVEL)
set -u
cd "$(dirname "$0")/../.."
case ${SHARDS_DIALECT:-cube} in
both)
  SHARDS_DIALECT=cube sh "$0" || exit 1
  SHARDS_DIALECT=e2b exec sh "$0" ;;
cube|e2b) ;;
*) echo "shards: SHARDS_DIALECT wants cube, e2b or both" >&2; exit 2 ;;
esac
DIALECT=${SHARDS_DIALECT:-cube}
B=${BINDIR:-$(pwd)/bin}
N=${SHARDS_N:-10000}
NT=${SHARDS_TENANTS:-100}
W=${SHARDS_WINDOW:-30}
RS=${SHARDS_RESYNC:-5s}
NEW=${SHARDS_NEW:-300}
BURST=${SHARDS_BURST:-1000}
PHASES=" ${SHARDS_PHASES:-A B W C D DW E} "
TRACE=${SHARDS_TRACE:-}
LOGLEVEL=${SHARDS_LOG_LEVEL:-info}
phase() { case $PHASES in *" $1 "*) return 0 ;; esac; return 1; }
[ -n "$TRACE" ] && : >"$TRACE"
total=$N
T=$(mktemp -d "${TMPDIR:-/tmp}/sc-shards.XXXXXX")
DB="$T/s.db"
PIDS=""
cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null; done
  for p in $PIDS; do wait "$p" 2>/dev/null; done
  [ -n "${KEEP_TMP:-}" ] && echo "shards: kept $T" || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
say() { echo "shards[$DIALECT]: $*"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
now_ms() { date +%s%3N; }
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
HZ=$(getconf CLK_TCK)

"$B/cubesim" --listen 127.0.0.1:0 --dialect "$DIALECT" --clock-speed 1 >"$T/sim.out" 2>"$T/sim.log" &
SIM_PID=$!
PIDS="$PIDS $SIM_PID"
SIM=""
i=0
while [ -z "$SIM" ] && [ $i -lt 100 ]; do
  SIM=$(sed -n 's/^cubesim listening on //p' "$T/sim.out" 2>/dev/null); sleep 0.05; i=$((i + 1))
done
[ -n "$SIM" ] || { echo "shards: cubesim did not start" >&2; exit 1; }
sim_running() { curl -sf "$SIM/_sim/sandboxes" | jq '[.[] | select(.state=="running")] | length'; }

# gen PREFIX COUNT FIRST FILE: COUNT sessions from index FIRST, tenant =
# index mod NT (flow style, so that 2,500 fit one 1 MiB manifest)
gen() {
  awk -v p="$1" -v n="$2" -v f="$3" -v nt="$NT" 'BEGIN {
    print "apiVersion: v1"; print "kind: List"; print "items:";
    for(i = f; i < f + n; i++)
      printf("- {apiVersion: lea.io/v1alpha1,kind: Session,metadata: {name: %s%d,namespace: t%d},spec: {template: t}}\n", p, i, i % nt);
  }' >"$4"
}
apply_n() { # PREFIX COUNT
  a=0
  while [ $a -lt "$2" ]; do
    c=2500; [ $((a + c)) -gt "$2" ] && c=$(($2 - a))
    gen "$1" "$c" "$a" "$T/m.yaml"
    "$B/sessionctl" --store "sqlite:$DB" apply -f "$T/m.yaml" >/dev/null || exit 1
    a=$((a + c))
  done
}

# start NAME ARGS...: a replica; its PID in P_NAME, its log in T/NAME.log
start() {
  n=$1; shift
  "$B/session-controller" --store "sqlite:$DB" --create-store --cube-url "$SIM" \
    --metrics-addr 127.0.0.1:0 --replica "$n" --resync "$RS" \
    --log-level "$LOGLEVEL" "$@" 2>"$T/$n.log" &
  eval "P_$n=$!"
  PIDS="$PIDS $!"
}
pid_of() { eval "echo \$P_$1"; }
port_of() { sed -n 's/.*msg="serving \/metrics.*port=\([0-9]*\).*/\1/p' "$T/$1.log" | head -n 1; }
scrape() { curl -sf "http://127.0.0.1:$(port_of "$1")/metrics"; }
msum() { # NAME METRIC
  scrape "$1" | awk -v m="$2" '$1 == m || index($1, m "{") == 1 { s += $2 } END { printf "%d\n", s }'
}
ready() { curl -sf -o /dev/null "http://127.0.0.1:$(port_of "$1")/readyz"; }
wait_for() { # SECONDS CMD...
  lim=$(($1 * 10)); shift; k=0
  while [ $k -lt $lim ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; k=$((k + 1)); done
  return 1
}
stop_all() {
  for n in "$@"; do p=$(pid_of "$n"); kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
}

say "setup: $N sessions over $NT tenants, one replica at --cube-qps 0 (load $(load))"
apply_n s "$N"
start setup --cube-qps 0 --resync 2s
t0=$(now_ms)
running_ge() { [ "$(sim_running)" -ge "$1" ]; }
wait_for 600 running_ge "$N" || { say "setup did not converge"; exit 1; }
say "setup: $N running after $(( $(now_ms) - t0 )) ms"
sleep 3
stop_all setup

# window LABEL NAMES...: measure each replica over W seconds
window() {
  label=$1; shift
  for n in "$@"; do
    eval "c0_$n=$(msum "$n" session_controller_cube_requests_total)"
    scrape "$n" | grep '^session_controller_cube_list_requests_total' >"$T/$n.kinds0"
    scrape "$n" | grep '^session_controller_cube_requests_total' >"$T/$n.ops0"
    eval "u0_$n=$(cpu_ticks "$(pid_of "$n")")"
  done
  w0=$(now_ms); la0=$(load)
  sleep "$W"
  w1=$(now_ms); la1=$(load)
  for n in "$@"; do
    c1=$(msum "$n" session_controller_cube_requests_total)
    u1=$(cpu_ticks "$(pid_of "$n")")
    eval "c0=\$c0_$n; u0=\$u0_$n"
    kinds=$(scrape "$n" | grep '^session_controller_cube_list_requests_total' |
      awk 'NR == FNR { b[$1] = $2; next }
           { match($1, /kind="[^"]*"/); k = substr($1, RSTART + 6, RLENGTH - 7); d[k] += $2 - b[$1] }
           END { for(k in d) if(d[k] > 0) printf("%s=%d ", k, d[k]) }' "$T/$n.kinds0" -)
    ops=$(scrape "$n" | grep '^session_controller_cube_requests_total' |
      awk 'NR == FNR { b[$1] = $2; next }
           { match($1, /op="[^"]*"/); op = substr($1, RSTART + 4, RLENGTH - 5); d[op] += $2 - b[$1] }
           END { for(o in d) if(d[o] > 0) printf("%s=%d ", o, d[o]) }' "$T/$n.ops0" -)
    awk -v l="$label" -v n="$n" -v c="$((c1 - c0))" -v u="$((u1 - u0))" -v hz="$HZ" \
        -v ms="$((w1 - w0))" -v sess="$(msum "$n" session_controller_shard_sessions)" \
        -v ops="$ops" -v la="$la0 -> $la1" -v kinds="$kinds" -v d="$DIALECT" 'BEGIN {
      printf("shards[%s]: %-22s %-4s Cube calls %6.0f/min  CPU %5.2f s/min (%4.1f%% core)  owns %5s  [%s| lists %s]  load %s\n",
             d, l, n, c * 60000 / ms, u / hz * 60000 / ms, u / hz * 100000 / ms,
             sess == 0 ? "all" : sess, ops, kinds, la) }'
  done
}
# burst LABEL PREFIX NAMES...: BURST new sessions at once; the replicas'
# Cube calls together until all are running
burst() {
  label=$1; pfx=$2; shift 2
  for n in "$@"; do scrape "$n" | grep '^session_controller_cube_requests_total'; done >"$T/b0"
  bt0=$(now_ms); bl0=$(load)
  apply_n "$pfx" "$BURST"
  total=$((total + BURST))
  wait_for 300 running_ge "$total" || say "$label: burst did not converge"
  bt1=$(now_ms)
  sleep 1
  for n in "$@"; do scrape "$n" | grep '^session_controller_cube_requests_total'; done >"$T/b1"
  ops=$(awk 'FNR == NR { match($1, /op="[^"]*"/); b[substr($1, RSTART + 4, RLENGTH - 5)] += $2; next }
             { match($1, /op="[^"]*"/); a[substr($1, RSTART + 4, RLENGTH - 5)] += $2 }
             END { for(o in a) if(a[o] - b[o] > 0) { printf("%s=%d ", o, a[o] - b[o]); s += a[o] - b[o] } printf("total=%d", s) }' "$T/b0" "$T/b1")
  say "$label burst of $BURST: all running after $((bt1 - bt0)) ms; Cube calls of the 3 replicas [$ops]  load $bl0 -> $(load)"
}
settle() { # NAMES...: ready, and two full resyncs after it
  for n in "$@"; do wait_for 120 ready "$n" || { say "$n not ready"; tail -5 "$T/$n.log"; exit 1; }; done
  sleep $(( 2 * ${RS%s} + 1 ))
}

if phase A; then
say "A. 1 replica, --shards off"
start a1
settle a1
window "A 1 replica off" a1
stop_all a1
fi

if phase B; then
say "B. 3 replicas, --shards off"
start b1; start b2; start b3
settle b1 b2 b3
window "B 3 replicas off" b1 b2 b3
stop_all b1 b2 b3
fi

W_ARGS="--shards auto --shard-whole-list-every 0"
if phase W; then
say "W. 3 replicas, --shards auto, each list whole (--shard-whole-list-every 0)"
start w1 $W_ARGS; start w2 $W_ARGS; start w3 $W_ARGS
settle w1 w2 w3
window "W 3 auto, whole lists" w1 w2 w3
stop_all w1 w2 w3
fi

if phase C || phase D; then
say "C. 3 replicas, --shards auto"
start c1 --shards auto; start c2 --shards auto; start c3 --shards auto
settle c1 c2 c3
phase C && window "C 3 replicas auto" c1 c2 c3
burst "C 3 replicas auto" cb c1 c2 c3
sleep $(( 2 * ${RS%s} + 1 ))
phase C && window "C after the burst" c1 c2 c3
fi

# trace_line LABEL NAMES...: one line a replica to TRACE (t0: the kill)
trace_line() {
  tl=$1; shift
  for n in "$@"; do
    scrape "$n" | awk -v t="$(( $(now_ms) - t0 ))" -v l="$tl" -v n="$n" '
      $1 ~ /^session_controller_shard_sessions/ { own += $2 }
      $1 ~ /^session_controller_cube_requests_total/ {
        match($1, /op="[^"]*"/); op[substr($1, RSTART + 4, RLENGTH - 5)] += $2 }
      $1 ~ /^session_controller_cube_list_requests_total/ {
        match($1, /kind="[^"]*"/); kd[substr($1, RSTART + 6, RLENGTH - 7)] += $2 }
      END { printf("%6d %s %s owns=%d", t, substr(l, 1, 2), n, own)
            for(o in op) printf(" %s=%d", o, op[o])
            printf(" |"); for(k in kd) printf(" %s=%d", k, kd[k]); printf("\n") }' >>"$TRACE"
  done
}
# takeover R1 R2 R3 PREFIX LABEL: kill -9 of R2; the time until R1 and R3
# own all the sessions, and until NEW sessions applied right after the
# kill, over every tenant, are all running
takeover() {
  say "$5: kill -9 of $2 (load $(load))"
  owned2() { echo $(( $(msum "$1" session_controller_shard_sessions) + $(msum "$3" session_controller_shard_sessions) )); }
  kill -9 "$(pid_of "$2")"; wait "$(pid_of "$2")" 2>/dev/null
  t0=$(now_ms)
  apply_n "$4" "$NEW"
  ta=$(now_ms)
  want=$((total + NEW))
  total=$want
  got_owned="" got_run=""
  while [ -z "$got_owned" ] || [ -z "$got_run" ]; do
    [ $(( $(now_ms) - t0 )) -gt 300000 ] && break
    [ -z "$got_owned" ] && [ "$(owned2 "$1" "$2" "$3")" -ge "$want" ] && got_owned=$(( $(now_ms) - t0 ))
    [ -z "$got_run" ] && [ "$(sim_running)" -ge "$want" ] && got_run=$(( $(now_ms) - t0 ))
    [ -n "$TRACE" ] && trace_line "$5" "$1" "$3"
    sleep 0.2
  done
  say "$5: after kill -9: survivors own all $want sessions after ${got_owned:-?} ms; $NEW new sessions (applied in $((ta - t0)) ms) all running after ${got_run:-?} ms (resync $RS: bound two resyncs; load $(load))"
}
if phase C || phase D; then
phase D && takeover c1 c2 c3 n "D. lists by tenant"
stop_all c1 c2 c3
fi

if phase DW; then
say "DW. 3 replicas, --shards auto, each list whole"
start x1 $W_ARGS; start x2 $W_ARGS; start x3 $W_ARGS
settle x1 x2 x3
takeover x1 x2 x3 nw "DW. whole lists"
stop_all x1 x3
fi

if phase E; then
say "E. 3 replicas, --shards off: a burst"
start b1; start b2; start b3
settle b1 b2 b3
burst "E 3 replicas off" bb b1 b2 b3
stop_all b1 b2 b3
fi
