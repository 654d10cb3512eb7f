#!/bin/sh
# End-to-end: a reclaim's intent (status.pendingAction) left in the store
# by a replica that died, for sessions whose spec changed after it was
# written, all written straight into the SQLite store with sqlite3 (the
# way a crashed writer and another tool leave it):
#  - "due": the spec still asks for the reclaim: carried on at once
#    (Reclaimed, one DELETE);
#  - "run": spec.state Running since; "never": reclaimAfter 0 since.
#    Neither sandbox is deleted (before: the next replica carried the
#    DELETE on whatever the spec said) nor resumed while a DELETE of the
#    intent could still be in flight, that is before this replica has
#    seen the intent for --reclaim-void-after; then the intent is void:
#    "run" is resumed, "never" stays paused, both keep their sandbox.
. "$(dirname "$0")/lib/common.sh"

V=8
stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
sess_yaml() { # NAME: Active, idles out after 10m, reclaimed 1h after
  printf -- '---\napiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s}\nspec: {template: shell, idleTimeout: 10m, reclaimAfter: 1h}\n' "$1"
}
count_phase() { ctl get sessions -o json 2>/dev/null | jq --arg p "$1" '[.items[] | select(.status.phase == $p)] | length'; }
paused_total() { sim_truth | jq '[.[] | select(.state=="paused")] | length'; }
deletes_of() { sim_audit | jq -s --arg id "$1" '[.[] | select(.event=="delete" and .sandboxID==$id)] | length'; }
resumes_of() { sim_audit | jq -s --arg id "$1" '[.[] | select(.sandboxID==$id and ((.event // "") | test("connect|resume")))] | length'; }
ready_reason() { sess_field "$1" default '.status.conditions[]? | select(.type=="Ready") | .reason'; }
pending_kind() { sess_field "$1" default '.status.pendingAction.kind // "none"'; }

start_cubesim --clock-speed 1
start_controller ctl-a
for n in due run never; do sess_yaml "$n"; done >"$T/m.yaml"
ctl apply -f "$T/m.yaml" >/dev/null || fail "apply"
check "three sessions running" wait_eq 20 3 count_phase Running
sim_advance 660 # past the idle timeout: Cube pauses them
check "three sandboxes paused" wait_eq 20 3 paused_total
check "recorded as paused" wait_eq 20 3 count_phase Paused
kill -9 "$CTL_PID"; wait "$CTL_PID" 2>/dev/null
sim_advance 3700 # paused past reclaimAfter 1h: the dead replica's reclaims
for n in due run never; do
  eval "id_$n=\$(sess_field $n default .status.sandboxID)"
done
# the dead replica wrote the three intents; then the user changed two specs
intent() { # NAME ID
  sqlite3 -cmd ".timeout 10000" "$T/sessions.db" "UPDATE objects SET status = json_set(status, '\$.phase', 'Reclaiming', '\$.pendingAction', json('{\"kind\":\"reclaim\",\"sandboxID\":\"$2\",\"at\":\"2026-01-01T00:00:00Z\",\"by\":\"dead#01020304\"}')) WHERE namespace='default' AND name='$1'" ||
    fail "sqlite3 intent $1"
}
intent due "$id_due"; intent run "$id_run"; intent never "$id_never"
sqlite3 -cmd ".timeout 10000" "$T/sessions.db" "UPDATE objects SET spec = json_set(spec, '\$.state', 'Running'), generation = generation + 1 WHERE namespace='default' AND name='run';
  UPDATE objects SET spec = json_set(spec, '\$.reclaimAfter', '0s'), generation = generation + 1 WHERE namespace='default' AND name='never'" ||
  fail "sqlite3 spec changes"

t0=$(date +%s)
start_controller ctl-b --cube-timeout 2s --reclaim-void-after ${V}s
check "due: the reclaim is carried on" wait_eq 15 Reclaimed sess_field due default .status.phase
check "due: one DELETE" test "$(deletes_of "$id_due")" = 1
check "run: says it waits to withdraw the reclaim" wait_eq 10 ReclaimWithdrawing ready_reason run
check "never: the same" test "$(ready_reason never)" = ReclaimWithdrawing
check "run: resumed once the intent is void" wait_eq $((V + 15)) running sb_field "$id_run" state
t1=$(date +%s)
check "run: not before --reclaim-void-after (${V}s; took $((t1 - t0))s)" test $((t1 - t0)) -ge $V
check "run: the intent is gone" wait_eq 10 none pending_kind run
check "run: its own sandbox, running" wait_eq 10 "$id_run Running" sess_field run default '"\(.status.sandboxID) \(.status.phase)"'
check "never: the intent is gone" wait_eq 10 none pending_kind never
check "never: still paused, its own sandbox" test "$(sb_field "$id_never" state) $(sess_field never default .status.sandboxID)" = "paused $id_never"
check "never: phase Paused" test "$(sess_field never default .status.phase)" = Paused
wait_passes 2 ctl-b
check "run and never: no DELETE at all" test "$(deletes_of "$id_run") $(deletes_of "$id_never")" = "0 0"
check "never: not resumed (run was: $(resumes_of "$id_run"))" test "$(resumes_of "$id_never")" = 0 -a "$(resumes_of "$id_run")" -ge 1
stop_pid "$CTL_PID"
finish
