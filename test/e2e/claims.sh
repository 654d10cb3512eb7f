#!/bin/sh
# End-to-end: no stall when a replica stops or dies with creates queued
# (rule 11, the create claim at dispatch).
#  1. SIGTERM 2 s into a burst of 300 creates at --cube-qps 20: no create
#     is sent after the signal but the few already in flight, no claim is
#     left behind, and a restarted replica makes the rest within seconds
#     (before: creates went on after SIGTERM, 90-second claims were left,
#     and the restart waited them out).
#  2. SIGKILL of a slow replica (--cube-qps 5) in a burst while a fast
#     one runs: every session has a sandbox within a few seconds after the
#     kill (before: the sessions the dead one had claimed waited out its
#     90-second claims); one live sandbox per session.
. "$(dirname "$0")/lib/common.sh"

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
creates() { sim_audit | jq -s '[.[] | select(.event=="create")] | length'; }
linked() { ctl get sessions -o json | jq '[.items[] | select(.status.sandboxID != null)] | length'; }
claims_left() { ctl get sessions -o json | jq '[.items[] | select(.status.createIntent != null and .status.sandboxID == null)] | length'; }
manifest() { # PREFIX N
  i=1; : >"$T/m.yaml"
  while [ $i -le "$2" ]; do
    printf -- '---\napiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s%d}\nspec: {template: shell}\n' "$1" "$i" >>"$T/m.yaml"
    i=$((i + 1))
  done
}

# --- 1. SIGTERM in a burst
start_cubesim --clock-speed 1 --faults '*:latency=20ms'
start_controller ctl-t --cube-qps 20
wait_until 10 test -e "$T/sessions.db"
manifest t 300
ctl apply -f "$T/m.yaml" >/dev/null
sleep 2
kill -TERM "$CTL_PID"
at_term=$(creates)
wait "$CTL_PID" 2>/dev/null
after=$(creates)
check "term: creates were under way at the signal ($at_term)" test "$at_term" -gt 0
check "term: no create sent after SIGTERM but those in flight ($at_term -> $after)" test $((after - at_term)) -le 32
check "term: most were not made" test "$after" -lt 150
check "term: no claim left behind" test "$(claims_left)" = 0
t0=$(date +%s)
start_controller ctl-t2
check "term: a restart makes the rest at once" wait_eq 30 300 linked
t1=$(date +%s)
check "term: ... within seconds, not a claim window ($((t1 - t0)) s)" test $((t1 - t0)) -le 20
check "term: one sandbox per session" test "$(live_total)" = 300
stop_pid "$CTL_PID"; stop_pid "$SIM_PID"

# --- 2. SIGKILL of one of two replicas in a burst
rm -f "$T/sessions.db"*
start_cubesim --clock-speed 1 --faults '*:latency=20ms'
start_controller ctl-k1 --cube-qps 5; p1=$CTL_PID
wait_until 10 test -e "$T/sessions.db"
start_controller ctl-k2; p2=$CTL_PID
sleep 1
manifest k 200
ctl apply -f "$T/m.yaml" >/dev/null
sleep 2
kill -9 "$p1"; wait "$p1" 2>/dev/null
t0=$(date +%s)
check "kill: every session has a sandbox soon after" wait_eq 20 200 linked
t1=$(date +%s)
check "kill: ... within a few seconds ($((t1 - t0)) s)" test $((t1 - t0)) -le 10
check "kill: one live sandbox per session (duplicates deleted)" wait_eq 15 200 live_total
echo "  (creates made: $(creates) for 200 sessions)"
stop_pid "$p2"
finish
