#!/bin/sh
# End-to-end: no sandbox outlives its object. One replica at --cube-qps 1
# makes the creates of 8 new sessions, one a second; the last session is
# deleted while its create still waits for its turn in the token bucket.
# The create's claim (status.createIntent) is written by compare-and-set
# when its turn comes, right before the call: the object changed (a
# deleted object no controller had taken on is removed at once), so the
# claim loses and no create is sent. Before, the
# claim was written at plan time and the create went out anyway when its
# turn came, seconds after the object was gone; its sandbox lived until
# the orphan sweep (10 minutes here). A run's creates go round from a
# session that turns each pass (act_run.rotate): the one whose turn comes
# last is the one before the first made, in name order.
. "$(dirname "$0")/lib/common.sh"

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
absent() { ! ctl get sessions "$last" >/dev/null 2>&1; }
made_for() { sim_truth | jq --arg s "$1" '[.[] | select(.metadata["lea.session_id"]==$s)] | length'; }

start_cubesim --clock-speed 1
i=1; : >"$T/m.yaml"
while [ $i -le 8 ]; do
  printf -- '---\napiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: g%d}\nspec: {template: shell}\n' "$i" >>"$T/m.yaml"
  i=$((i + 1))
done
start_controller ctl-a --cube-qps 1 --orphan-grace 10m
wait_until 10 test -e "$T/sessions.db"
ctl apply -f "$T/m.yaml" >/dev/null
check "the first create is made" wait_until 10 sh -c "[ \$(curl -sf '$SIM/_sim/sandboxes' | jq length) -ge 1 ]"
first=$(sim_truth | jq -r '.[0].metadata["lea.session_id"]')
n=${first#g}
case $n in [1-8]) ;; *) fail "the first sandbox names no session g1-g8 ($first)"; n=1 ;; esac
last=g$(( (n + 6) % 8 + 1 ))
check "$last has no sandbox yet (its create waits for its turn; $first came first)" test "$(made_for "$last")" = 0
ctl delete session "$last" >/dev/null
check "the 7 others get theirs" wait_eq 20 7 live_total
sleep 3
check "no sandbox was ever made for $last" test "$(made_for "$last")" = 0
check "the tombstone is purged" wait_until 10 absent
check "the lost claim is counted" test "$(curl -sf "http://127.0.0.1:$(metrics_port ctl-a)/metrics" | sed -n 's/^session_controller_create_claims_lost_total //p')" -ge 1
stop_pid "$CTL_PID"
finish
