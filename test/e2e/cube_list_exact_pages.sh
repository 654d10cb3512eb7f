#!/bin/sh
# test-slow
# End-to-end: an e2b list of exactly N * limit rows is whole. E2B pages and
# sends X-Next-Token while more rows exist, so its last page may hold
# exactly `limit` (100) rows and no token. Before, such a page set "list
# may be short": at exactly 100 or 200 sandboxes every pass counted
# session_controller_list_truncated_total and concluded nothing from an
# absence. The Cube dialect (no paging) still flags a full page. (A list
# that runs before the dialect probe has answered cannot know the dialect
# yet: the first pass may flag one; the passes after it must not.)
. "$(dirname "$0")/lib/common.sh"

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
metric() { curl -sf "http://127.0.0.1:$(metrics_port "$1")/metrics" | sed -n "s/^$2 //p"; }
passes_ge() { v=$(metric "$1" session_controller_pass_duration_seconds_count); [ -n "$v" ] && [ "$v" -ge "$2" ]; }
paused() { sim_truth | jq '[.[] | select(.state=="paused")] | length'; }
make_paused() { # N orphans, paused (idle timeout 60 s)
  i=0
  while [ $i -lt "$1" ]; do sim_sandbox "o$i-$2" session-controller "" 60 t1 >/dev/null; i=$((i + 1)); done
  sim_advance 61
}

for rows in 100 200; do
  rm -f "$T/sessions.db"*
  start_cubesim --dialect e2b
  make_paused "$rows" a
  check "e2b $rows: $rows paused" test "$(paused)" = "$rows"
  start_controller "ctl-$rows" --orphan-grace 1h
  check "e2b $rows: two passes" wait_until 20 passes_ge "ctl-$rows" 2
  t0=$(metric "ctl-$rows" session_controller_list_truncated_total)
  p0=$(metric "ctl-$rows" session_controller_pass_duration_seconds_count)
  check "e2b $rows: three passes more" wait_until 20 passes_ge "ctl-$rows" $((p0 + 3))
  check "e2b $rows: no list flagged as maybe short after the probe" test "$(metric "ctl-$rows" session_controller_list_truncated_total)" = "$t0"
  check "e2b $rows: at most the first pass flagged one" test "${t0%.*}" -le 1
  check "e2b $rows: the probe said e2b" grep -q 'dialect=e2b' "$T/ctl-$rows.log"
  stop_pid "$CTL_PID"; stop_pid "$SIM_PID"
done

# Cube ignores paging: a full page there may be short, and says so
rm -f "$T/sessions.db"*
start_cubesim --dialect cube
make_paused 100 c
start_controller ctl-cube --orphan-grace 1h
check "cube 100: three passes" wait_until 20 passes_ge ctl-cube 3
check "cube 100: the full page is flagged" test "$(metric ctl-cube session_controller_list_truncated_total)" -ge 3
stop_pid "$CTL_PID"; stop_pid "$SIM_PID"
finish
