#!/bin/sh
# End-to-end: orphans at Cube's real scale. Cube ignores paging: a list of
# 100 rows or more carries no next token, so it "may be truncated". Before,
# that held orphan deletion for good at any real fleet size (105 paused
# orphans past their grace: none deleted, one warning a pass). Now a listed
# orphan is deleted (its GET first), and nothing is concluded from a
# sandbox's absence in such a list.
#  1. 105 paused orphans, --force (the guard would hold a whole fleet
#     without sessions): all deleted.
#  2. 100 sessions with their sandboxes and 5 orphans (105 listed): the 5
#     are deleted without --force, no session's sandbox is touched.
. "$(dirname "$0")/lib/common.sh"

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
metric() { curl -sf "http://127.0.0.1:$(metrics_port "$1")/metrics" | sed -n "s/^$2 //p"; }
deletes() { sim_audit | jq -s '[.[] | select(.event=="delete")] | length'; }
count_phase() { ctl get sessions -o json 2>/dev/null | jq --arg p "$1" '[.items[] | select(.status.phase == $p)] | length'; }
gt0() { v=$("$@" 2>/dev/null); [ -n "$v" ] && [ "${v%.*}" -gt 0 ]; }

# --- 1. 105 orphans
start_cubesim --dialect cube --clock-speed 1
i=0
while [ $i -lt 105 ]; do sim_sandbox "o$i" session-controller "" 60 t1 >/dev/null; i=$((i + 1)); done
sim_advance 61; sim_advance 120
check "105: all paused" test "$(sim_truth | jq '[.[] | select(.state=="paused")] | length')" = 105
start_controller ctl-o --orphan-grace 1m --force
check "105: the list is flagged as maybe short" wait_until 15 gt0 metric ctl-o session_controller_list_truncated_total
check "105: every orphan deleted" wait_eq 30 0 live_total
check "105: 105 DELETEs" test "$(deletes)" = 105
stop_pid "$CTL_PID"; stop_pid "$SIM_PID"

# --- 2. 5 orphans among 100 sessions' sandboxes, no --force
rm -f "$T/sessions.db"*
start_cubesim --dialect cube --clock-speed 1
start_controller ctl-m --orphan-grace 1m
wait_until 10 test -e "$T/sessions.db"
i=0; : >"$T/m.yaml"
while [ $i -lt 100 ]; do
  printf -- '---\napiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: s%d}\nspec: {template: shell, reclaimAfter: 0}\n' "$i" >>"$T/m.yaml"
  i=$((i + 1))
done
ctl apply -f "$T/m.yaml" >/dev/null
check "mixed: 100 sessions running" wait_eq 30 100 count_phase Running
i=0
while [ $i -lt 5 ]; do sim_sandbox "leak$i" session-controller "" 60 default >/dev/null; i=$((i + 1)); done
sim_advance 61; sim_advance 120
check "mixed: the 5 orphans deleted" wait_until 30 sh -c "[ \$(curl -sf '$SIM/_sim/audit' | jq -s '[.[] | select(.event==\"delete\")] | length') -ge 5 ]"
sleep 2
check "mixed: only those 5" test "$(deletes)" = 5
check "mixed: every session keeps its sandbox" test "$(live_total)" = 100
check "mixed: no guard" test -z "$(grep 'delete guard tripped' "$T/ctl-m.log")"
stop_pid "$CTL_PID"
finish
