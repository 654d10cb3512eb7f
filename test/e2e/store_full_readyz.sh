#!/bin/sh
# End-to-end: /readyz on a full disk holds 503 without a flap, and is 200
# again soon after the writes work.
#  1. The store on a 2 MB tmpfs that fills up with every reclaim due: the
#     intent writes fail. For 6 s /readyz is asked every 20 ms and never
#     answers 200, and the log never says "store writes work again" (each
#     turn of the store's health to "works" logs it, even one shorter
#     than the polls' gap).
#  2. A little space freed (8 KB: room for the write probe's frame, not
#     for the reclaims' intent writes): still never 200, and no turn.
#  3. The disk freed: /readyz is 200 again within 5 s (the bound
#     docs/controller.md gives: the probe's next second, then the first
#     write of the full pass it starts), the reclaims go.
#  4. (a run of its own) Nothing left to write: on the full disk a status
#     write fails; with the controller stopped (SIGSTOP) the disk is freed
#     and the session's row deleted by another connection, so once it
#     goes on it has no write to make (the sandbox is an orphan, and
#     orphans wait while writes fail): /readyz is 200 again within 5 s
#     all the same (a full pass begun after the probe's commit ended with
#     no write failed).
# The audit log is off the tmpfs: /readyz answers for the store alone.
# Each part mounts a tmpfs: without the right to (not root), skipped and
# said so.
. "$(dirname "$0")/lib/common.sh"

N=12
stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
readyz() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$(metrics_port "$1")/readyz"; }
readyz_says() { curl -s "http://127.0.0.1:$(metrics_port "$1")/readyz" | grep -q "$2"; }
metric() { curl -sf "http://127.0.0.1:$(metrics_port "$1")/metrics" | sed -n "s/^$2 //p"; }
gt0() { v=$("$@" 2>/dev/null); [ -n "$v" ] && [ "${v%.*}" -gt 0 ]; }
sess_yaml() { # NAME: Active, idles out after 10m, reclaimed 1h after
  printf -- '---\napiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s}\nspec: {template: shell, idleTimeout: 10m, reclaimAfter: 1h}\n' "$1"
}
count_phase() { ctl get sessions -o json 2>/dev/null | jq --arg p "$1" '[.items[] | select(.status.phase == $p)] | length'; }
deletes() { sim_audit | jq -s '[.[] | select(.event=="delete")] | length'; }
recovered() { grep -c 'store writes work again' "$T/ctl.log"; }

# poll_ready SECONDS NAME: /readyz every 20 ms; prints how many were 200
poll_ready() {
  pr_port=$(metrics_port "$2")
  pr_end=$(( $(date +%s) + $1 ))
  pr_n=0
  while [ "$(date +%s)" -lt "$pr_end" ]; do
    c=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$pr_port/readyz")
    [ "$c" != 200 ] || pr_n=$((pr_n + 1))
    sleep 0.02
  done
  echo "$pr_n"
}

# parts 1-3 and part 4 at once, each in a run of its own (e2e_split,
# lib/common.sh; PART=full or quiet runs one)
e2e_split PART full quiet

D="$T/disk"
mkdir -p "$D"
if ! mount -t tmpfs -o size=2m tmpfs "$D" 2>/dev/null; then
  echo "SKIP part $PART (a full store): cannot mount a tmpfs here (needs root)"
  finish
  exit
fi
trap 'umount "$D" 2>/dev/null; e2e_cleanup' EXIT
STORE="sqlite:$D/sessions.db"

if [ "$PART" = quiet ]; then
  start_cubesim --clock-speed 1
  start_controller ctl --audit-log "$T/audit.jsonl"
  sess_yaml q1 >"$T/q.yaml"
  check "quiet: applied" ctl apply -f "$T/q.yaml"
  check "quiet: running" wait_eq 20 1 count_phase Running
  check "quiet: ready" wait_eq 15 200 readyz ctl
  dd if=/dev/zero of="$D/fill" bs=16k 2>/dev/null; sync
  sim_advance 660 # Cube pauses the idle sandbox: a status write to make
  check "quiet: the status write fails" wait_until 10 gt0 metric ctl session_controller_store_write_failures_total
  check "quiet: /readyz is 503" wait_eq 5 503 readyz ctl
  # the controller stopped, the disk freed and the session's row deleted
  # behind its back: once it goes on, it has nothing left to write (the
  # sandbox is an orphan, and those wait while writes fail)
  kill -STOP "$CTL_PID"
  rm -f "$D/fill"
  check "quiet: the row deleted by another connection" sqlite3 "$D/sessions.db" "DELETE FROM objects WHERE namespace = 'default' AND name = 'q1'"
  kill -CONT "$CTL_PID"
  t0=$(date +%s%N)
  if wait_eq 5 200 readyz ctl; then
    ok "quiet: /readyz is 200 again within 5 s with nothing to write (in $(( ($(date +%s%N) - t0) / 1000000 )) ms)"
  else
    fail "quiet: /readyz is 200 again within 5 s with nothing to write"
  fi
  check "quiet: logged that writes work again" grep -q 'store writes work again' "$T/ctl.log"
  stop_pid "$CTL_PID"
  stop_pid "$SIM_PID"
  umount "$D"
  finish
  exit
fi

start_cubesim --clock-speed 1
start_controller ctl --audit-log "$T/audit.jsonl"
i=1; : >"$T/m.yaml"
while [ $i -le $N ]; do sess_yaml "s$i" >>"$T/m.yaml"; i=$((i + 1)); done
check "$N sessions applied" ctl apply -f "$T/m.yaml"
check "$N running" wait_eq 20 "$N" count_phase Running
sim_advance 660
check "$N paused by Cube" wait_eq 20 "$N" count_phase Paused
check "ready" wait_eq 15 200 readyz ctl

# 1. full
dd if=/dev/zero of="$D/fill" bs=16k 2>/dev/null; sync
sim_advance 7200 # past reclaimAfter: every one is due
check "full: the intent writes fail" wait_until 10 gt0 metric ctl session_controller_intent_write_failures_total
check "full: /readyz is 503" wait_eq 5 503 readyz ctl
check "full: it says the store takes no writes" readyz_says ctl 'store writes fail'
r0=$(recovered)
n=$(poll_ready 6 ctl)
check "full: /readyz never 200 in 6 s of polls every 20 ms (got $n)" test "$n" = 0
check "full: the store's health never turned to works ($(( $(recovered) - r0 )) times)" test "$(recovered)" = "$r0"
check "full: no DELETE" test "$(deletes)" = 0

# 2. a little room: the probe's frame fits, the reclaims' writes do not
truncate -s -8K "$D/fill"
n=$(poll_ready 4 ctl)
check "little room: /readyz never 200 (got $n)" test "$n" = 0
check "little room: the health never turned to works ($(( $(recovered) - r0 )) times)" test "$(recovered)" = "$r0"
check "little room: no DELETE" test "$(deletes)" = 0

# 3. freed
rm -f "$D/fill"
t0=$(date +%s%N)
if wait_eq 5 200 readyz ctl; then
  ok "freed: /readyz is 200 within 5 s (in $(( ($(date +%s%N) - t0) / 1000000 )) ms)"
else
  fail "freed: /readyz is 200 within 5 s"
fi
check "freed: logged that writes work again" test "$(recovered)" -gt "$r0"
check "freed: the reclaims go" wait_eq 20 "$N" count_phase Reclaimed
check "freed: still 200" test "$(readyz ctl)" = 200

stop_pid "$CTL_PID"
stop_pid "$SIM_PID"
umount "$D"
finish
