#!/bin/sh
# End-to-end: the audit trail is never lost silently and survives log
# rotation. SIGHUP reopens --audit-log (logrotate moved it) and the
# controller goes on; an audit line that cannot be written (here: the
# audit log is /dev/full, as a full disk answers) is logged at ERROR with
# the line, counted in session_controller_audit_write_failures_total, and
# makes /readyz 503 with the reason.
. "$(dirname "$0")/lib/common.sh"

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
sess_yaml() { # NAME STATE
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s}\nspec: {template: shell, state: %s, idleTimeout: 10m}\n' "$1" "$2"
}
metric() { curl -sf "http://127.0.0.1:$(metrics_port "$1")/metrics" | sed -n "s/^$2 //p"; }
readyz() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$(metrics_port "$1")/readyz"; }
readyz_says() { curl -s "http://127.0.0.1:$(metrics_port "$1")/readyz" | grep -q "$2"; }
lines() { if [ -f "$1" ]; then wc -l <"$1" | tr -d ' '; else echo 0; fi; }
# paused NAME: the session's sandbox was paused by the controller
paused() { test "$(sess_field "$1" default .status.phase)" = Paused; }
# pause_one NAME: create it Active, wait for its sandbox, then ask Paused
pause_one() {
  sess_yaml "$1" Active | ctl apply -f - >/dev/null
  wait_eq 15 Running sess_field "$1" default .status.phase || return 1
  sess_yaml "$1" Paused | ctl apply -f - >/dev/null
  wait_until 15 paused "$1"
}

start_cubesim --clock-speed 1

# --- 1. rotation: mv + SIGHUP, the next line lands in the new file
start_controller ctl-rot --audit-log "$T/audit.jsonl"
check "rot: the first pause is done" pause_one s1
check "rot: ... and audited in the file" wait_eq 5 1 lines "$T/audit.jsonl"
mv "$T/audit.jsonl" "$T/audit.jsonl.1"
kill -HUP "$CTL_PID"
check "rot: SIGHUP is logged as a reopen" wait_until 5 grep -q 'SIGHUP: audit log reopened' "$T/ctl-rot.log"
check "rot: the controller is still running after SIGHUP" kill -0 "$CTL_PID"
check "rot: a new file was opened" test -f "$T/audit.jsonl"
check "rot: the next pause is done" pause_one s2
check "rot: its line is in the new file" wait_eq 5 1 lines "$T/audit.jsonl"
check "rot: the new line is s2's" grep -q '"session":"default/s2"' "$T/audit.jsonl"
check "rot: the rotated file kept its one line" test "$(lines "$T/audit.jsonl.1")" = 1
check "rot: the new file is 0600" test "$(stat -c %a "$T/audit.jsonl")" = 600
check "rot: nothing failed" test "$(metric ctl-rot session_controller_audit_write_failures_total)" = 0
stop_pid "$CTL_PID"

# --- 2. a full disk: /dev/full takes the open and refuses every write
start_controller ctl-full --audit-log /dev/full
check "full: ready before any destructive action" wait_eq 15 200 readyz ctl-full
check "full: the pause is still done" pause_one s3
check "full: the lost line is an ERROR with the line itself" wait_until 5 sh -c \
  "grep 'audit line not written' '$T/ctl-full.log' | grep -q 'level=error.*No space left on device.*default/s3'"
check "full: counted" wait_eq 5 1 metric ctl-full session_controller_audit_write_failures_total
check "full: /readyz is 503" wait_eq 5 503 readyz ctl-full
check "full: /readyz says why" readyz_says ctl-full 'audit-log /dev/full' 
check "full: the controller keeps running" kill -0 "$CTL_PID"
stop_pid "$CTL_PID"
finish
