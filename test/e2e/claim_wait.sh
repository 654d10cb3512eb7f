#!/bin/sh
# End-to-end: the replicas that lose a new session's create claim make no
# Cube call for it. Three replicas (no full pass in the test's time) see
# each new object ADDED; one claims and creates, the two others read its
# live claim and wait for it without listing, and once it is linked they
# are done. Before, each of them listed Cube twice per session: 4.86
# calls per new session in all instead of one. The replicas run with
# --share-work=false: sharing (the default without shards) gives each
# session to one member, so nobody would race for the claim; the claim
# is what keeps replicas apart when work is not shared (or while the
# membership changes), and that is the path this test holds.
. "$(dirname "$0")/lib/common.sh"

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
mets() { for n in r0 r1 r2; do curl -sf "http://127.0.0.1:$(metrics_port "$n")/metrics"; done; }
calls() { mets | awk -v o="$1" '/^session_controller_cube_requests_total\{/ && index($0, "op=\"" o "\"") { s += $2 } END { print s + 0 }'; }
waits() { mets | awk -v r="$1" '/^session_controller_reconcile_total\{/ && index($0, "result=\"" r "\"") { s += $2 } END { print s + 0 }'; }
passes_ge() { v=$(curl -sf "http://127.0.0.1:$(metrics_port "$1")/metrics" | sed -n 's/^session_controller_pass_duration_seconds_count //p'); [ -n "$v" ] && [ "$v" -ge 1 ]; }
count_phase() { ctl get sessions -o json 2>/dev/null | jq --arg p "$1" '[.items[] | select(.status.phase == $p)] | length'; }

# 300 ms per Cube call: the losers read the winner's claim while its
# create is out
start_cubesim --dialect cube --clock-speed 1 --faults '*:latency=300ms'
start_controller r0 --resync 1h --share-work=false; p0=$CTL_PID
wait_until 10 test -e "$T/sessions.db"
start_controller r1 --resync 1h --share-work=false; p1=$CTL_PID
start_controller r2 --resync 1h --share-work=false; p2=$CTL_PID
for n in r0 r1 r2; do check "$n: first pass" wait_until 10 passes_ge "$n"; done
l0=$(calls list)
i=0
while [ $i -lt 20 ]; do
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: w%d}\nspec: {template: shell}\n' "$i" |
    ctl apply -f - >/dev/null
  sleep 0.05
  i=$((i + 1))
done
check "20 Running" wait_eq 20 20 count_phase Running
sleep 6 # the claims' TTL (3 s) and a second: the waiting replicas look again
check "one create per session" test "$(calls create)" = 20
l1=$(calls list)
check "no list for the new sessions (got $((l1 - l0)))" test "$((l1 - l0))" -le 2
check "the losers waited for the claims" test "$(waits claim-wait)" -ge 20
check "and found them linked" test "$(waits claimed-elsewhere)" -ge 20
check "one sandbox each" test "$(live_total)" = 20
stop_pid "$p0"; stop_pid "$p1"; stop_pid "$p2"
finish
