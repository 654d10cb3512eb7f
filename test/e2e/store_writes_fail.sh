#!/bin/sh
# End-to-end: no destructive call without a written intent (rule 11).
#  1. The store and the audit log on a 2 MB tmpfs that fills up while the
#     controller runs: the reclaims that come due make no DELETE while the
#     disk is full; /readyz is 503 and says why; the failures are logged
#     at ERROR and counted. Freed, the reclaims go, every one audited, and
#     no reclaimed session gets a new sandbox afterwards.
#  2. The same with the store's files made immutable (chattr +i).
#  3. SIGKILL while a reclaim's DELETE is in flight (its intent written):
#     the next controller finishes it from the intent; the session is
#     Reclaimed and gets no new sandbox.
#  4. The crash after the DELETE, before the outcome, written by hand into
#     the store (pendingAction, sandbox gone): Reclaimed, never re-created.
# Part 1 mounts a tmpfs, part 2 uses chattr: without the right to (not
# root), they are skipped and say so.
. "$(dirname "$0")/lib/common.sh"

N=12
stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
metric() { curl -sf "http://127.0.0.1:$(metrics_port "$1")/metrics" | sed -n "s/^$2 //p"; }
readyz() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$(metrics_port "$1")/readyz"; }
readyz_says() { curl -s "http://127.0.0.1:$(metrics_port "$1")/readyz" | grep -q "$2"; }
sess_yaml() { # NAME: Active, idles out after 10m, reclaimed 1h after
  printf -- '---\napiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s}\nspec: {template: shell, idleTimeout: 10m, reclaimAfter: 1h}\n' "$1"
}
phases() { ctl get sessions -o json 2>/dev/null | jq -r '[.items[].status.phase] | sort | unique | join(",")'; }
count_phase() { ctl get sessions -o json 2>/dev/null | jq --arg p "$1" '[.items[] | select(.status.phase == $p)] | length'; }
paused_total() { sim_truth | jq '[.[] | select(.state=="paused")] | length'; }
deletes() { sim_audit | jq -s '[.[] | select(.event=="delete")] | length'; }
creates() { sim_audit | jq -s '[.[] | select(.event=="create")] | length'; }
gt0() { v=$("$@" 2>/dev/null); [ -n "$v" ] && [ "${v%.*}" -gt 0 ]; }
audit_reclaims() { if [ -f "$1" ]; then grep -c '"kind":"reclaim".*"outcome":"done"' "$1"; else echo 0; fi; }
fill() { dd if=/dev/zero of="$1/fill" bs=16k 2>/dev/null; sync; }

# apply_paused PREFIX N: N Active sessions, running, then idle-paused by
# Cube (its clock moved past the idle timeout)
apply_paused() {
  i=1; : >"$T/m.yaml"
  while [ $i -le "$2" ]; do sess_yaml "$1$i" >>"$T/m.yaml"; i=$((i + 1)); done
  ctl apply -f "$T/m.yaml" >/dev/null 2>&1 || return 1
  wait_eq 20 "$2" count_phase Running || return 1
  sim_advance 660
  wait_eq 20 "$2" count_phase Paused
}

# part 1, part 2 and parts 3-4 at once, each in a run of its own
# (e2e_split, lib/common.sh; PART=full, ro or crash runs one)
e2e_split PART full ro crash

# a disk that fills: part 1 needs a tmpfs
D="$T/disk"
MOUNTED=0
if [ "$PART" = full ]; then
  mkdir -p "$D"
  if mount -t tmpfs -o size=2m tmpfs "$D" 2>/dev/null; then
    MOUNTED=1
    trap 'umount "$D" 2>/dev/null; e2e_cleanup' EXIT
  fi
fi

if [ "$PART" != full ]; then
  :
elif [ "$MOUNTED" = 1 ]; then
  STORE="sqlite:$D/sessions.db"
  start_cubesim --clock-speed 1
  start_controller ctl-full --audit-log "$D/audit.jsonl"
  check "full: $N sessions paused by Cube" apply_paused s "$N"
  check "full: ready" wait_eq 15 200 readyz ctl-full
  c0=$(creates)
  fill "$D"
  sim_advance 7200 # past reclaimAfter: every one is due
  check "full: the writes fail and are counted" wait_until 10 gt0 metric ctl-full session_controller_store_write_failures_total
  check "full: the intents that could not be written are counted" wait_until 10 gt0 metric ctl-full session_controller_intent_write_failures_total
  # three resyncs with every reclaim due: a sleep, not wait_passes, since
  # the /readyz checks below must not land just after a pass: there a
  # write that loses its compare-and-set counts as the store answering
  # and would turn the store's health to "works" until the next intent
  # write fails (the write probe no longer does: store_full_readyz.sh)
  sleep 3
  check "full: no DELETE while the intents cannot be written" test "$(deletes)" = 0
  check "full: every sandbox still paused" test "$(paused_total)" = "$N"
  check "full: /readyz is 503" wait_eq 5 503 readyz ctl-full
  check "full: /readyz says the store takes no writes" readyz_says ctl-full 'store writes fail'
  check "full: logged at ERROR" grep -q 'level=error.*store write failed' "$T/ctl-full.log"
  rm -f "$D/fill"
  check "full: freed, the reclaims go" wait_eq 20 "$N" count_phase Reclaimed
  check "full: every sandbox deleted" wait_eq 10 0 live_total
  check "full: each reclaim audited once" wait_eq 5 "$N" audit_reclaims "$D/audit.jsonl"
  check "full: /readyz is 200 again" wait_eq 5 200 readyz ctl-full
  check "full: logged that writes work again" grep -q 'store writes work again' "$T/ctl-full.log"
  wait_passes 3 ctl-full
  check "full: no reclaimed session got a new sandbox" test "$(creates)" = "$c0"
  check "full: still none live" test "$(live_total)" = 0
  check "full: reclaimedGeneration recorded, no intent left" test "$(ctl get sessions -o json | jq '[.items[] | select(.status.reclaimedGeneration == 1 and .status.pendingAction == null and .status.sandboxID == null)] | length')" = "$N"

  stop_pid "$CTL_PID"
  stop_pid "$SIM_PID"
  umount "$D"
else
  echo "SKIP part 1 (a full store): cannot mount a tmpfs here (needs root)"
fi

# --- 2. the store's files made immutable (chattr +i) under a running
# controller: its writes fail as on a read-only store
if [ "$PART" = ro ]; then
mkdir -p "$T/ro"
STORE="sqlite:$T/ro/sessions.db"
start_cubesim --clock-speed 1
start_controller ctl-ro
if apply_paused r "$N" && chattr +i "$T/ro/sessions.db" 2>/dev/null; then
  ok "ro: $N sessions paused by Cube"
  for f in "$T/ro/sessions.db-wal" "$T/ro/sessions.db-shm"; do
    [ -f "$f" ] && chattr +i "$f"
  done
  trap 'chattr -i "$T"/ro/* 2>/dev/null; umount "$D" 2>/dev/null; e2e_cleanup' EXIT
  c0=$(creates); d0=$(deletes)
  sim_advance 7200
  check "ro: the writes fail: /readyz 503" wait_eq 10 503 readyz ctl-ro
  check "ro: /readyz says the store takes no writes" readyz_says ctl-ro 'store writes fail'
  # a sleep: a DELETE could come of a retry of the failed intents (backoff)
  sleep 3
  check "ro: no DELETE while the store is read-only" test "$(deletes)" = "$d0"
  check "ro: every sandbox still paused" test "$(paused_total)" = "$N"
  chattr -i "$T"/ro/*
  check "ro: writable again, the reclaims go" wait_eq 20 "$N" count_phase Reclaimed
  check "ro: /readyz is 200 again" wait_eq 5 200 readyz ctl-ro
  wait_passes 3 ctl-ro
  check "ro: no reclaimed session got a new sandbox" test "$(creates)" = "$c0"
  check "ro: none live" test "$(live_total)" = 0
else
  echo "SKIP part 2 (a read-only store): chattr +i is not allowed here"
fi
stop_pid "$CTL_PID"
stop_pid "$SIM_PID"
fi

# --- 3. SIGKILL while the DELETE is in flight
if [ "$PART" = crash ]; then
STORE="sqlite:$T/sessions.db"
start_cubesim --clock-speed 1
start_controller ctl-a
check "kill: one session paused by Cube" apply_paused k 1
sim_faults '{"spec":"delete:latency=3s"}'
sim_advance 7200
check "kill: the intent is written" wait_eq 10 Reclaiming sess_field k1 default .status.phase
check "kill: recorded as a reclaim" test "$(sess_field k1 default .status.pendingAction.kind)" = reclaim
sleep 0.5
kill -9 "$CTL_PID"; wait "$CTL_PID" 2>/dev/null
sim_faults '{"spec":""}'
c0=$(creates)
start_controller ctl-b
check "kill: the next controller finishes it: Reclaimed" wait_eq 15 Reclaimed sess_field k1 default .status.phase
check "kill: the intent is gone" test "$(sess_field k1 default .status.pendingAction)" = null
wait_passes 3 ctl-b
check "kill: no new sandbox for it" test "$(sim_live_for k1)" = 0
check "kill: no create at all" test "$(creates)" = "$c0"
stop_pid "$CTL_PID"

# --- 4. the crash after the DELETE, before the outcome, by hand
start_controller ctl-c
check "hand: a session with a sandbox" apply_paused h 1
stop_pid "$CTL_PID"
id=$(sess_field h1 default .status.sandboxID)
curl -sf -X DELETE "$SIM/sandboxes/$id" >/dev/null
sqlite3 "$T/sessions.db" "UPDATE objects SET status = json_set(status, '\$.phase', 'Reclaiming', '\$.pendingAction', json('{\"kind\":\"reclaim\",\"sandboxID\":\"$id\",\"at\":\"2026-01-01T00:00:00Z\",\"by\":\"gone#01020304\"}')) WHERE name='h1'"
c0=$(creates)
start_controller ctl-d
check "hand: Reclaimed from the intent" wait_eq 15 Reclaimed sess_field h1 default .status.phase
wait_passes 3 ctl-d
check "hand: never re-created" test "$(creates)" = "$c0"
check "hand: reclaimedGeneration set" test "$(sess_field h1 default .status.reclaimedGeneration)" = 1
stop_pid "$CTL_PID"
fi
finish
