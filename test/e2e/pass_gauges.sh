#!/bin/sh
# End-to-end: the gauges a full pass sets, session_controller_sessions
# {phase} and session_controller_sandboxes{state}, count every session and
# every observed sandbox (the pass tallies them and makes one metrics call
# a label: each label's value must still be its count, none left out).
#  7 sessions Running, then 2 of them set Paused: phase="Running" 5,
#  phase="Paused" 2, state="running" 5, state="paused" 2; then one more
#  Running and one Paused set Running again: 7 and 1, 7 and 1.
. "$(dirname "$0")/lib/common.sh"

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
# gauges: the four values as one line, 0 for a missing label
gauges() {
  curl -sf "http://127.0.0.1:$(metrics_port g)/metrics" | awk '
    $1 == "session_controller_sessions{phase=\"Running\"}" { a = $2 }
    $1 == "session_controller_sessions{phase=\"Paused\"}" { b = $2 }
    $1 == "session_controller_sandboxes{state=\"running\"}" { c = $2 }
    $1 == "session_controller_sandboxes{state=\"paused\"}" { d = $2 }
    END { printf "%d %d %d %d\n", a, b, c, d }'
}
manifest() { # NAME STATE
  printf -- '---\napiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s}\nspec: {template: shell, state: %s}\n' "$1" "$2"
}

start_cubesim --dialect e2b --clock-speed 1
start_controller g --resync 1s
: >"$T/m.yaml"
for i in 1 2 3 4 5; do manifest "r$i" Running >>"$T/m.yaml"; done
for i in 1 2; do manifest "p$i" Running >>"$T/m.yaml"; done
ctl apply -f "$T/m.yaml" >/dev/null
check "7 Running" wait_eq 10 "7 0 7 0" gauges
{ manifest p1 Paused; manifest p2 Paused; } >"$T/m1.yaml"
ctl apply -f "$T/m1.yaml" >/dev/null
check "5 Running, 2 Paused: sessions and sandboxes by label" \
  wait_eq 10 "5 2 5 2" gauges
{ manifest r6 Running; manifest p1 Running; } >"$T/m2.yaml"
ctl apply -f "$T/m2.yaml" >/dev/null
check "7 Running, 1 Paused after two changes" wait_eq 10 "7 1 7 1" gauges
stop_pid "$CTL_PID"; stop_pid "$SIM_PID"
finish
