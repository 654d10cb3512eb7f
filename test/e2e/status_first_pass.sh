#!/bin/sh
# End-to-end: the first full pass over sessions that their creates just
# converged writes no status. Before, a create's status lacked two facts
# the next full pass then wrote for every session (10,000 writes at 10k):
# status.sandboxProof (known at the create: the sandbox carries our tags)
# and status.endAt (Cube's create time plus the timeout: now estimated at
# the create, and a listed endAt within 2 s of it is kept).
#  1. controller A (no resync in the test's time) creates 40 sandboxes
#     through single passes; it is stopped before any full pass sees them
#  2. controller B starts on that store: its first full pass (and the
#     next) changes no session's resourceVersion
. "$(dirname "$0")/lib/common.sh"

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
metric() { curl -sf "http://127.0.0.1:$(metrics_port "$1")/metrics" | sed -n "s/^$2 //p"; }
passes_ge() { v=$(metric "$1" session_controller_pass_duration_seconds_count); [ -n "$v" ] && [ "$v" -ge "$2" ]; }
count_phase() { ctl get sessions -o json 2>/dev/null | jq --arg p "$1" '[.items[] | select(.status.phase == $p)] | length'; }
versions() { ctl get sessions -o json | jq -c '[.items[] | [.metadata.name, .metadata.resourceVersion]] | sort'; }
proofs() { ctl get sessions -o json | jq '[.items[] | select(.status.sandboxProof and .status.endAt)] | length'; }
ok_per_pass() {
  curl -sf "http://127.0.0.1:$(metrics_port "$1")/metrics" | awk -v n="$2" '
    /^session_controller_pass_duration_seconds_count / { p = $2 }
    /^session_controller_reconcile_total\{/ && index($0, "result=\"ok\"") { ok = $2 }
    END { exit !(p > 0 && ok == n * p) }'
}

for dialect in cube e2b; do
  rm -f "$T/sessions.db"*
  start_cubesim --dialect "$dialect" --clock-speed 1
  # --cube-qps 8: the 40 creates wait up to 5 s for their turn, longer
  # than the 2 s slack of endAt if the estimate took the plan's clock
  start_controller "a-$dialect" --resync 1h --cube-qps 8
  check "$dialect: A's first (empty) pass" wait_until 10 passes_ge "a-$dialect" 1
  i=0; : >"$T/m.yaml"
  while [ $i -lt 40 ]; do
    printf -- '---\napiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: s%d}\nspec: {template: shell}\n' "$i" >>"$T/m.yaml"
    i=$((i + 1))
  done
  ctl apply -f "$T/m.yaml" >/dev/null
  check "$dialect: 40 Running" wait_eq 20 40 count_phase Running
  sleep 1
  check "$dialect: A made no full pass meanwhile" test "$(metric "a-$dialect" session_controller_pass_duration_seconds_count)" = 1
  stop_pid "$CTL_PID"
  check "$dialect: each create wrote its proof and endAt" test "$(proofs)" = 40
  v0=$(versions)
  start_controller "b-$dialect" --resync 1s
  check "$dialect: B's two passes" wait_until 20 passes_ge "b-$dialect" 2
  check "$dialect: no status written by them" test "$(versions)" = "$v0"
  # every full pass ends each of the 40 sessions once, counted in
  # reconcile_total (in runs of one result: one scrape holds both)
  check "$dialect: reconcile_total{ok} = 40 a full pass" ok_per_pass "b-$dialect" 40
  stop_pid "$CTL_PID"; stop_pid "$SIM_PID"
done
finish
