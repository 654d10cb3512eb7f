#!/bin/sh
# End-to-end: the brakes hold across passes (rules 9 and 13).
#  1. A wiped store against a staggered fleet: 40 of the controller's
#     sandboxes idle-pause about 5 a minute (Cube's clock) and pass the
#     orphan grace at scattered times; not one is deleted, the guard says
#     why (ERROR, metric). Before, 5 went a pass until all 40 were gone.
#  2. The same with a fleet of 10, all at once: none (before: all 10, the
#     floor was 10).
#  3. A leak in a live fleet (2 orphans beside 12 sessions' sandboxes):
#     both deleted, no guard.
#  4. Cube's clock jumps 3 days: 30 paused sandboxes all due at once; the
#     reclaim brake lets 15 go (50%) and holds 15 (ERROR, metric); they
#     go in the next window.
. "$(dirname "$0")/lib/common.sh"

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
metric() { curl -sf "http://127.0.0.1:$(metrics_port "$1")/metrics" | sed -n "s/^$2 //p"; }
deletes() { sim_audit | jq -s '[.[] | select(.event=="delete")] | length'; }
gt0() { v=$("$@" 2>/dev/null); [ -n "$v" ] && [ "${v%.*}" -gt 0 ]; }
count_phase() { ctl get sessions -o json 2>/dev/null | jq --arg p "$1" '[.items[] | select(.status.phase == $p)] | length'; }

# part 1 and parts 2-4 at once, each in a run of its own (e2e_split,
# lib/common.sh; PART=wiped or PART=rest runs one)
e2e_split PART wiped rest

if [ "$PART" = wiped ]; then

# --- 1. a wiped store, a staggered fleet of 40
start_cubesim --clock-speed 1
i=0
while [ $i -lt 40 ]; do
  # idle timeouts 60 s .. 8 min: about 5 pause each minute
  sim_sandbox "gone$i" session-controller "" $((60 + i * 12)) t1 >/dev/null
  i=$((i + 1))
done
start_controller ctl-w --orphan-grace 2m
wait_until 10 test -e "$T/sessions.db"
# each step is seen by a pass begun after it: the clock moves just after
# a pass ends, and the next begins a resync later
wait_passes 1 ctl-w
step=0
while [ $step -lt 14 ]; do # 14 minutes of Cube's clock, a minute a step
  sim_advance 60; wait_passes 1 ctl-w; step=$((step + 1))
done
check "wiped: every sandbox paused and past its grace" test \
  "$(sim_truth | jq '[.[] | select(.state=="paused")] | length')" = 40
check "wiped: not one deleted" test "$(deletes)" = 0
check "wiped: the guard said why, at ERROR" grep -q 'level=error.*delete guard tripped.*40 of 40 managed sandboxes have no session' "$T/ctl-w.log"
check "wiped: counted" wait_until 3 gt0 metric ctl-w session_controller_delete_guard_tripped_total
stop_pid "$CTL_PID"; stop_pid "$SIM_PID"
finish
exit
fi

# --- 2. a fleet of 10, all due at once
rm -f "$T/sessions.db"*
start_cubesim --clock-speed 1
i=0
while [ $i -lt 10 ]; do sim_sandbox "ten$i" session-controller "" 60 t1 >/dev/null; i=$((i + 1)); done
sim_advance 61
sim_advance 300
start_controller ctl-10 --orphan-grace 2m
check "ten: the guard trips" wait_until 10 grep -q 'delete guard tripped.*10 of 10 managed' "$T/ctl-10.log"
wait_passes 2 ctl-10
check "ten: none of 10 deleted" test "$(deletes)" = 0
stop_pid "$CTL_PID"; stop_pid "$SIM_PID"

# --- 3. a leak of 2 in a live fleet: cleaned
rm -f "$T/sessions.db"*
start_cubesim --clock-speed 1
start_controller ctl-l --orphan-grace 2m
wait_until 10 test -e "$T/sessions.db"
i=0; : >"$T/m.yaml"
while [ $i -lt 12 ]; do
  printf -- '---\napiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: live%d}\nspec: {template: shell, reclaimAfter: 0}\n' "$i" >>"$T/m.yaml"
  i=$((i + 1))
done
ctl apply -f "$T/m.yaml" >/dev/null
check "leak: 12 sessions running" wait_eq 15 12 count_phase Running
a=$(sim_sandbox leak1 session-controller "" 60 default)
b=$(sim_sandbox leak2 session-controller "" 60 default)
sim_advance 61; sim_advance 200
check "leak: both orphans deleted" wait_eq 15 "deleted deleted" sh -c "echo \$(curl -sf '$SIM/_sim/sandboxes' | jq -r '.[] | select(.sandboxID==\"$a\" or .sandboxID==\"$b\") | .state')"
check "leak: no session's sandbox touched" test "$(deletes)" = 2
check "leak: no guard" test -z "$(grep 'delete guard tripped' "$T/ctl-l.log")"
stop_pid "$CTL_PID"; stop_pid "$SIM_PID"

# --- 4. Cube's clock jumps 3 days: the reclaim brake
rm -f "$T/sessions.db"*
start_cubesim --clock-speed 1
start_controller ctl-j --brake-window 20s
wait_until 10 test -e "$T/sessions.db"
i=0; : >"$T/m.yaml"
while [ $i -lt 30 ]; do
  printf -- '---\napiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: j%02d}\nspec: {template: shell, idleTimeout: 1m, reclaimAfter: 24h}\n' "$i" >>"$T/m.yaml"
  i=$((i + 1))
done
ctl apply -f "$T/m.yaml" >/dev/null
check "jump: 30 sessions running" wait_eq 15 30 count_phase Running
sim_advance 70
check "jump: 30 idle-paused" wait_eq 15 30 count_phase Paused
sim_advance 259200 # 3 days
check "jump: half are reclaimed" wait_eq 10 15 count_phase Reclaimed
wait_passes 3 ctl-j
check "jump: the other half wait (still paused)" test "$(count_phase Paused)" = 15
check "jump: the brake said so at ERROR" grep -q 'level=error.*reclaim brake.*30 reclaims due at once.*15 go, 15 wait' "$T/ctl-j.log"
check "jump: counted" test "$(metric ctl-j session_controller_reclaim_brake_held_total)" -ge 15
# the window is Cube's time: moved on 20 s, the rest go in a pass or
# two (a window by the local clock would hold them 20 s more)
sim_advance 20
check "jump: the rest go in the next window (20 s of Cube's clock)" wait_eq 10 30 count_phase Reclaimed
stop_pid "$CTL_PID"
finish
