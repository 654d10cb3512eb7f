#!/bin/sh
# End-to-end: a single-session pass of a session that has its sandbox
# takes Cube's facts from one GET of the linked sandbox instead of listing
# the session's sandboxes (one request per state): a spec change (state
# Paused) and a connect each cost a GET and no list; a linked sandbox that
# is gone behind the controller's back (GET 404) lists as before and gets
# a new sandbox. Counted on /metrics
# (session_controller_single_observations_total by how, and
# session_controller_cube_list_requests_total{kind="session"}). The
# resync is long, so that no full pass runs between the steps.
. "$(dirname "$0")/lib/common.sh"

m() { curl -sf "http://127.0.0.1:$(metrics_port ctl)/metrics"; }
by() { v=$(m | sed -n "s/^session_controller_single_observations_total{by=\"$1\"} //p"); echo "${v:-0}"; }
session_lists() { m | awk '/^session_controller_cube_list_requests_total\{kind="session"/ { n += $2 } END { print n + 0 }'; }
gets() { m | awk '/^session_controller_cube_requests_total\{op="get"/ { n += $2 } END { print n + 0 }'; }
phase() { sess_field s1 default .status.phase; }
ready() { test "$(phase)" = "$1"; }

start_cubesim --clock-speed 1
start_controller ctl --resync 10m
printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: s1}\nspec: {template: shell}\n' >"$T/s1.yaml"
ctl apply -f "$T/s1.yaml" >/dev/null || fail "apply s1"
check "s1 running" wait_eq 20 Running phase
id=$(sess_field s1 default .status.sandboxID)
wait_until 10 test -n "$(metrics_port ctl)" || fail "no metrics port"

# a spec change: state Paused, by its link
l0=$(session_lists); k0=$(by link); g0=$(gets)
printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: s1}\nspec: {template: shell, state: Paused}\n' |
  ctl apply -f - >/dev/null || fail "apply Paused"
check "paused" wait_eq 20 paused sb_field "$id" state
check "recorded Paused" wait_eq 10 Paused phase
check "the pass looked by the link" test "$(by link)" -gt "$k0"
check "and listed nothing (lists $l0 -> $(session_lists))" test "$(session_lists)" = "$l0"
check "one GET or more" test "$(gets)" -gt "$g0"

# a connect: resumed, by its link
printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: s1}\nspec: {template: shell, state: Active}\n' |
  ctl apply -f - >/dev/null || fail "apply Active"
l1=$(session_lists); k1=$(by link)
ctl connect s1 --timeout 20s >"$T/connect.out" 2>&1
check "connect served" grep -q "$id" "$T/connect.out"
check "running again" test "$(sb_field "$id" state)" = running
check "the connect's pass looked by the link" test "$(by link)" -gt "$k1"
check "and listed nothing (lists $l1 -> $(session_lists))" test "$(session_lists)" = "$l1"

# the linked sandbox deleted behind the controller's back: the GET says
# 404, the pass lists and makes a new one
f0=$(by link-then-lists); l2=$(session_lists)
curl -sf -X DELETE "$SIM/sandboxes/$id" >/dev/null || fail "delete behind its back"
printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: s1}\nspec: {template: shell, state: Active, idleTimeout: 20m}\n' |
  ctl apply -f - >/dev/null || fail "apply a spec change"
check "a new sandbox" wait_until 20 sh -c "[ \"\$('$BINDIR/sessionctl' --store '$STORE' get sessions s1 -o json | jq -r .status.sandboxID)\" != '$id' ]"
check "the 404 made it list" test "$(by link-then-lists)" -gt "$f0"
check "lists were made ($l2 -> $(session_lists))" test "$(session_lists)" -gt "$l2"
check "one live sandbox for s1" test "$(sim_live_for s1)" = 1

finish
