#!/bin/sh
# End-to-end: capacity (rules 14 and 15).
#  1. Three replicas with --max-paused 20 on one store: 30 sessions whose
#     sandboxes idle-pause a second apart (Cube's clock) become 20 paused
#     and 10 reclaimed, the 10 longest-paused; 10 sandboxes are deleted in
#     Cube, and the audit logs' deleted sandboxes are exactly those chosen
#     for capacity (the budget named; a replica whose confirming GET finds
#     one already gone says already-gone and calls nothing; one carrying
#     another's written intent on may DELETE it again, rule 11), the
#     metric agrees with the audit, the sessions say ReclaimedForCapacity
#     with the budget; a wake of one gets a new sandbox.
#  2. --max-running-per-tenant 2: the third session of a tenant waits,
#     Pending/QuotaExceeded (and the gauge says 1 waiting); once a running
#     one ends, it gets its sandbox.
. "$(dirname "$0")/lib/common.sh"

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
metric() { curl -sf "http://127.0.0.1:$(metrics_port "$1")/metrics" | sed -n "s/^$2 //p"; }
count_phase() { ctl get sessions -o json 2>/dev/null | jq --arg p "$1" '[.items[] | select(.status.phase == $p)] | length'; }
names_in() { ctl get sessions -o json 2>/dev/null | jq -r --arg p "$1" '[.items[] | select(.status.phase == $p) | .metadata.name] | sort | join(" ")'; }

# --- 1. 30 paused under --max-paused 20, three replicas
start_cubesim --clock-speed 1
start_controller cap-a --max-paused 20 --audit-log "$T/audit-a.jsonl"
A=$CTL_PID
start_controller cap-b --max-paused 20 --audit-log "$T/audit-b.jsonl"
B=$CTL_PID
start_controller cap-c --max-paused 20 --audit-log "$T/audit-c.jsonl"
C=$CTL_PID
wait_until 10 test -e "$T/sessions.db"
i=0; : >"$T/m.yaml"
while [ $i -lt 30 ]; do
  # idleTimeout 61 s .. 90 s: j00 pauses first, so it is the longest-paused
  printf -- '---\napiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: j%02d}\nspec: {template: shell, idleTimeout: %ds, reclaimAfter: 24h}\n' "$i" $((61 + i)) >>"$T/m.yaml"
  i=$((i + 1))
done
ctl apply -f "$T/m.yaml" >/dev/null
check "max-paused: 30 sessions running" wait_eq 15 30 count_phase Running
sim_advance 100
check "max-paused: 20 stay paused" wait_eq 15 20 count_phase Paused
check "max-paused: the 10 longest-paused are reclaimed" wait_eq 5 \
  "j00 j01 j02 j03 j04 j05 j06 j07 j08 j09" names_in Reclaimed
sleep 2 # more passes of all three replicas: nothing more goes
check "max-paused: still 20 paused" test "$(count_phase Paused)" = 20
check "max-paused: 10 sandboxes deleted in Cube" test \
  "$(sim_audit | jq -s '[.[] | select(.event=="delete") | .sandboxID] | unique | length')" = 10
cat "$T"/audit-*.jsonl >"$T/audit.jsonl"
# the sandboxes deleted (a DELETE done, by any replica) and the ones chosen
# for capacity (a capacity line that was not withheld): the same 10; a
# replica that carries another's written intent on may DELETE once more
# (rule 11, audited as kind reclaim), never another sandbox
done_ids() { jq -s -c '[.[] | select(.outcome=="done") | .sandboxID] | unique' "$T/audit.jsonl"; }
cap_ids() { jq -s -c '[.[] | select(.kind=="capacity" and .outcome!="skipped") | .sandboxID] | unique' "$T/audit.jsonl"; }
check "max-paused: the audit: 10 sandboxes deleted, the 10 chosen for capacity" test \
  "$(done_ids | jq length) $(done_ids)" = "10 $(cap_ids)"
check "max-paused: each capacity line names the budget" test \
  "$(jq -s '[.[] | select(.kind=="capacity" and (.budget | startswith("--max-paused 20 (") | not))] | length' "$T/audit.jsonl")" = 0
check "max-paused: the session says ReclaimedForCapacity" wait_eq 5 \
  ReclaimedForCapacity sess_field j03 default '.status.conditions[] | select(.type=="Ready") | .reason'
check "max-paused: with the budget" sh -c "'$BINDIR/sessionctl' --store '$STORE' get sessions j03 -o json | jq -r '.status.conditions[] | select(.type==\"Ready\") | .message' | grep -q -- '--max-paused 20 ('"
ncap=$(($(metric cap-a session_controller_capacity_reclaims_total) + $(metric cap-b session_controller_capacity_reclaims_total) + $(metric cap-c session_controller_capacity_reclaims_total)))
check "max-paused: counted as the audit says (capacity DELETEs done)" test \
  "$ncap" = "$(jq -s '[.[] | select(.kind=="capacity" and .outcome=="done")] | length' "$T/audit.jsonl")"
check "max-paused: counted at all" test "$ncap" -ge 1
ctl wake j03 -n default >/dev/null
check "max-paused: a wake of a capacity-reclaimed session gets a sandbox" \
  wait_eq 10 Running sess_field j03 default .status.phase
stop_pid "$A"; stop_pid "$B"; stop_pid "$C"; stop_pid "$SIM_PID"

# --- 2. --max-running-per-tenant 2
rm -f "$T/sessions.db"*
start_cubesim --clock-speed 1
# a resync far beyond the waits below: a freed slot must ask for a full
# pass by itself (the watch event of the deletion), not wait for the timer
start_controller quota --max-running-per-tenant 2 --resync 60s
wait_until 10 test -e "$T/sessions.db"
for q in q1 q2 q3; do
  printf -- 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s}\nspec: {template: shell}\n' "$q" >"$T/q.yaml"
  ctl apply -f "$T/q.yaml" >/dev/null
  sleep 0.05 # creation order q1, q2, q3
done
check "quota: two run" wait_eq 10 "q1 q2" names_in Running
check "quota: the third waits Pending" wait_eq 5 Pending sess_field q3 default .status.phase
check "quota: QuotaExceeded" test \
  "$(sess_field q3 default '.status.conditions[] | select(.type=="Ready") | .reason')" = QuotaExceeded
check "quota: its message names the budget" sh -c "'$BINDIR/sessionctl' --store '$STORE' get sessions q3 -o json | jq -r '.status.conditions[] | select(.type==\"Ready\") | .message' | grep -q -- '--max-running-per-tenant 2'"
check "quota: one sandbox each for q1, q2, none for q3" test \
  "$(sim_live_for q1)$(sim_live_for q2)$(sim_live_for q3)" = 110
check "quota: the gauge says 1 waiting" wait_eq 5 1 metric quota 'session_controller_quota_waiting{tenant="default"}'
check "quota: running per tenant" test "$(metric quota 'session_controller_tenant_sandboxes{tenant="default",state="running"}')" = 2
ctl delete sessions q1 >/dev/null
check "quota: a slot frees, q3 gets its sandbox" wait_eq 10 Running sess_field q3 default .status.phase
check "quota: q3 has one sandbox" test "$(sim_live_for q3)" = 1
check "quota: nothing was paused to make room" test \
  "$(sim_audit | jq -s '[.[] | select(.event=="pause")] | length')" = 0
stop_pid "$CTL_PID"
finish
