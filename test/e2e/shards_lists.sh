#!/bin/sh
# End-to-end: what a sharded full pass lists (docs/controller.md,
# "Sharding"). cubesim in the e2b dialect (pages of 100 rows), three
# replicas with --shards auto, --resync 1s, --shard-whole-list-every 5s,
# and 900 sessions over 9 tenants (100 each):
#  1. the Cube list requests of the three replicas together, per full
#     pass, counted by the replicas (session_controller_cube_list_requests_
#     total, every page): whole lists cost 10 a pass (9 pages running, 1
#     paused); by owned tenant a replica lists 1 page per owned tenant
#     running and the paused list whole, so the three together cost 12
#     for 3 passes (4 a pass), and a whole list every 5 passes: must be
#     under 7 a pass, and lists by tenant must have been made;
#  2. an orphan of a tenant no session is in (a deleted tenant's), paused
#     past --orphan-grace: deleted (only a whole list shows it: within
#     --shard-whole-list-every and a resync), and one of a tenant with
#     sessions (a list by tenant shows it); no session's sandbox touched;
#  3. kill -9 of one replica: 36 sessions applied right after it, over
#     every tenant, are all running within two resyncs (+1 s for date's
#     whole seconds); no sandbox twice.
. "$(dirname "$0")/lib/common.sh"
SHARD_TENANTS=9
. "$(dirname "$0")/lib/shards.sh"

sum_of() { echo $(( $(metric s1 "$@") + $(metric s2 "$@") + $(metric s3 "$@") )); }
live_id() { sim_truth | jq -r --arg id "$1" '[.[] | select(.sandboxID == $id and .state != "deleted")] | length'; }

start_cubesim --dialect e2b --clock-speed 1
A="--shards auto --cube-qps 0 --shard-whole-list-every 5s --orphan-grace 30s --log-level debug"
start_controller s1 $A; p1=$CTL_PID
wait_until 10 test -e "$T/sessions.db"
start_controller s2 $A; p2=$CTL_PID
start_controller s3 $A; p3=$CTL_PID
check "three replicas see three members" wait_until 10 members_are 3 s1 s2 s3

manifest a 100
ctl apply -f "$T/m.yaml" >/dev/null
check "900 sessions running" wait_eq 20 900 linked
sleep 2 # a whole list since: the choice has its counts

# --- 1. list requests per full pass, the three replicas together
r0=$(sum_of session_controller_cube_list_requests_total)
w0=$(sum_of session_controller_cube_list_requests_total 'kind="whole"')
f0=$(sum_of session_controller_cube_list_requests_total 'kind="tenant"')
n0=$(sum_of session_controller_pass_duration_seconds_count)
sleep 6
r1=$(sum_of session_controller_cube_list_requests_total)
w1=$(sum_of session_controller_cube_list_requests_total 'kind="whole"')
f1=$(sum_of session_controller_cube_list_requests_total 'kind="tenant"')
n1=$(sum_of session_controller_pass_duration_seconds_count)
req=$((r1 - r0)); passes=$((n1 - n0))
echo "  (6 s: $passes full passes of the 3 replicas, $req list requests: whole $((w1 - w0)), by tenant $((f1 - f0)); whole lists alone: 10 a pass)"
check "full passes ran ($passes)" test "$passes" -ge 6
check "lists by tenant were made ($((f1 - f0)) requests)" test $((f1 - f0)) -gt 0
check "under 7 list requests a full pass (whole: 10): $req for $passes" test $((req * 10)) -lt $((passes * 70))
check "the choice is in the debug log" grep -q 'msg="sharding: lists of this full pass" replica=s[123] running=by-tenant' "$T/s1.log" "$T/s2.log" "$T/s3.log"

# --- 2. orphans: of a tenant with no session, and of one with sessions
gone=$(sim_sandbox ghost session-controller "" 600 gone-tenant)
owned=$(sim_sandbox ghost0 session-controller "" 600 t0)
curl -sf -X POST "$SIM/sandboxes/$gone/pause" >/dev/null
curl -sf -X POST "$SIM/sandboxes/$owned/pause" >/dev/null
sim_advance 40
t0=$(date +%s)
check "the orphan of a tenant with sessions is deleted" wait_eq 10 0 live_id "$owned"
check "the orphan of a tenant with no session is deleted" wait_eq 10 0 live_id "$gone"
t1=$(date +%s)
echo "  (the unowned tenant's orphan went $((t1 - t0)) s after its grace; bound: --shard-whole-list-every 5s + a resync)"
check "... within --shard-whole-list-every and a resync (+1 s of rounding)" test $((t1 - t0)) -le 7
check "every session keeps its sandbox" test "$(live_total)" = 900

# --- 3. kill -9 one replica; its tenants are taken over
kill -9 "$p2"; wait "$p2" 2>/dev/null
t0=$(date +%s)
manifest b 4
ctl apply -f "$T/m.yaml" >/dev/null
check "after kill -9: all 936 running" wait_eq 20 936 linked
t1=$(date +%s)
echo "  (kill -9 to all 36 new sessions running: $((t1 - t0)) s; bound: two resyncs)"
check "... within two resyncs ($((t1 - t0)) s <= 2 s + 1 s of date's rounding)" test $((t1 - t0)) -le 3
check "the survivors see two members" wait_until 5 members_are 2 s1 s3
check "no sandbox twice after the takeover" test "$(live_total)" = 936
kill "$p1" "$p3" 2>/dev/null; wait "$p1" "$p3" 2>/dev/null
finish
