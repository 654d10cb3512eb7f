#!/bin/sh
# End-to-end: no sandbox outlives its object. Replica A (--cube-qps 1)
# claims the creates of 8 new sessions and sends them one per second;
# replica B waits for A's claims (rule 11). The last session is deleted
# while A's create for it still waits in A's token bucket. Before, B
# purged the tombstone at once, A's create landed afterwards, and that
# sandbox lived until the orphan sweep (10 minutes here). Now the
# tombstone is kept while a fresh claim of another process may still
# create for it; once the create is listed, its sandbox is deleted and the
# tombstone purged.
. "$(dirname "$0")/lib/common.sh"

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
claimed() { ctl get sessions -o json | jq '[.items[] | select(.status.createIntent != null or .status.sandboxID != null)] | length'; }
absent() { ! ctl get sessions g8 >/dev/null 2>&1; }

start_cubesim --clock-speed 1
i=1; : >"$T/m.yaml"
while [ $i -le 8 ]; do
  printf -- '---\napiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: g%d}\nspec: {template: shell}\n' "$i" >>"$T/m.yaml"
  i=$((i + 1))
done
start_controller ctl-a --cube-qps 1 --orphan-grace 10m; pa=$CTL_PID
wait_until 10 test -e "$T/sessions.db"
ctl apply -f "$T/m.yaml" >/dev/null
check "A claims all 8 creates" wait_eq 10 8 claimed
start_controller ctl-b --orphan-grace 10m; pb=$CTL_PID
sleep 1
check "g8 has no sandbox yet (its create waits in A's bucket)" test "$(sim_live_for g8)" = 0
ctl delete session g8 >/dev/null
check "the tombstone is kept while A's claim is fresh" \
  wait_until 5 sh -c "$(command -v sqlite3) '$T/sessions.db' \"SELECT status FROM objects WHERE name='g8'\" | grep -q 'waiting for the create claimed by ctl-a.*to be listed'"
check "A's create for g8 lands" wait_until 20 sh -c \
  "curl -sf '$SIM/_sim/audit' | jq -s -e '[.[] | select(.event==\"create\")] | length == 8' >/dev/null"
check "its sandbox is deleted, not left to the orphan sweep" wait_eq 15 0 sim_live_for g8
check "the tombstone is purged" wait_until 10 absent
check "the 7 others keep theirs" test "$(live_total)" = 7
stop_pid "$pa"; stop_pid "$pb"
finish
