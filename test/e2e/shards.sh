#!/bin/sh
# End-to-end: --shards auto on SQLite (docs/controller.md, "Sharding").
# Three replicas (--resync 1s: each renews every 250 ms and a member
# expires 625 ms after its last renewal) and 200 sessions over 20 tenants:
#  1. each tenant's sandboxes are created by exactly one replica, every
#     replica makes some, the shares add up to 200 sessions / 20 tenants,
#     and no sandbox is made twice;
#  2. a spec change of 20 sessions runs a single pass (two Cube lists) on
#     the owner only: the others drop the watch event before any call;
#  3. kill -9 of one replica: 40 sessions applied right after it, over
#     every tenant, are all running within two resyncs (the design's
#     promise; 1 s is added for date's whole seconds), the survivors see 2 members; no
#     duplicates;
#  4. a new replica joins: the others see 3 members at their next
#     renewal, and it creates sandboxes for its share of new sessions;
#     SIGTERM takes it out of the membership at once;
#  5. --shards 2 --shard-index 0/1 (static) on a store of its own: every
#     tenant's creates from one of the two;
#  6. usage errors: --shards 3 without an index, --shards auto --once.
# The kube store's form (a Lease per replica) is test/e2e/shards_kube.sh.
. "$(dirname "$0")/lib/common.sh"
SHARD_TENANTS=20
. "$(dirname "$0")/lib/shards.sh"

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
# creates by replica: "TENANT REPLICA" per create, from Cube's audit (the
# User-Agent names the replica) joined with the truth's tags
creates_by() {
  sim_truth >"$T/truth.json"
  sim_audit | jq -r -s --slurpfile t "$T/truth.json" '
    ($t[0] | map({key: .sandboxID, value: .metadata["lea.tenant_id"]}) | from_entries) as $ten
    | .[] | select(.event == "create" and .status == 201)
    | "\($ten[.sandboxID] // "?") \(.userAgent | capture("replica (?<r>[^)]*)").r)"'
}

start_cubesim --clock-speed 1
start_controller s1 --shards auto; p1=$CTL_PID
wait_until 10 test -e "$T/sessions.db"
start_controller s2 --shards auto; p2=$CTL_PID
start_controller s3 --shards auto; p3=$CTL_PID
check "three replicas see three members" wait_until 10 members_are 3 s1 s2 s3

# --- 1. 200 sessions over 20 tenants: one replica per tenant
manifest a 10
ctl apply -f "$T/m.yaml" >/dev/null
check "200 sessions running" wait_eq 20 200 linked
check "one sandbox per session" test "$(live_total)" = 200
creates_by >"$T/creates.txt"
check "200 creates, none twice" test "$(wc -l <"$T/creates.txt")" -eq 200
check "each tenant's creates came from one replica" \
  test "$(sort -u "$T/creates.txt" | awk '{print $1}' | sort | uniq -d | wc -l)" -eq 0
for r in s1 s2 s3; do
  c=$(awk -v r="$r" '$2 == r' "$T/creates.txt" | wc -l)
  check "replica $r made some of the creates ($c)" test "$c" -gt 0
done
sum_of() { echo $(( $(metric s1 "$1") + $(metric s2 "$1") + $(metric s3 "$1") )); }
check "the shares add up to 200 sessions" wait_eq 5 200 sum_of session_controller_shard_sessions
check "... and 20 tenants" wait_eq 5 20 sum_of session_controller_shard_tenants

# --- 2. a spec change runs on the owner only
singles_before=$(sum_of session_controller_reconcile_duration_seconds_count)
skipped_before=$(sum_of session_controller_shard_skipped_total)
t=0
while [ $t -lt 20 ]; do
  printf -- 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: a1, namespace: t%d}\nspec: {template: shell, idleTimeout: 20m}\n' "$t" >"$T/one.yaml"
  ctl apply -f "$T/one.yaml" >/dev/null
  t=$((t + 1))
done
gen_seen() { ctl get sessions -A -o json | jq '[.items[] | select(.metadata.name == "a1" and .status.observedGeneration == 2)] | length'; }
check "the 20 changes are observed" wait_eq 10 20 gen_seen
singles=$(( $(sum_of session_controller_reconcile_duration_seconds_count) - singles_before ))
skipped=$(( $(sum_of session_controller_shard_skipped_total) - skipped_before ))
echo "  (single passes for 20 changes on 3 replicas: $singles; watch events dropped by non-owners: $skipped)"
check "the changes ran single passes on their owners only (fewer than 60: one per replica and change)" test "$singles" -ge 20 -a "$singles" -lt 60
check "the non-owners dropped 40 watch events" test "$skipped" -ge 40

# --- 3. kill -9 one replica; its tenants are taken over
kill -9 "$p2"; wait "$p2" 2>/dev/null
t0=$(date +%s)
manifest b 2
ctl apply -f "$T/m.yaml" >/dev/null
check "after kill -9: all 240 running" wait_eq 20 240 linked
t1=$(date +%s)
echo "  (kill -9 to all 40 new sessions running: $((t1 - t0)) s; bound: two resyncs)"
check "... within two resyncs ($((t1 - t0)) s <= 2 s + 1 s of date's rounding)" test $((t1 - t0)) -le 3
check "the survivors see two members" wait_until 5 members_are 2 s1 s3
check "no sandbox twice after the takeover" test "$(live_total)" = 240
c2=$(creates_by | awk '$1 != "?" && $2 == "s2"' | wc -l)
echo "  (creates by the dead replica before the kill: $c2)"

# --- 4. a new replica joins and takes a share
start_controller s4 --shards auto; p4=$CTL_PID
check "a joining replica is seen by all at their next renewal" wait_until 10 members_are 3 s1 s3 s4
manifest c 2
ctl apply -f "$T/m.yaml" >/dev/null
check "the 40 new sessions are running" wait_eq 20 280 linked
c4=$(creates_by | awk '$2 == "s4"' | wc -l)
check "the new replica created its share ($c4)" test "$c4" -gt 0
check "no sandbox twice" test "$(live_total)" = 280

# --- a clean stop leaves the membership at once (no expiry wait)
stop_pid "$p4"
check "after SIGTERM the others see 2 members within a renewal or two" wait_until 4 members_are 2 s1 s3
stop_pid "$p1"; stop_pid "$p3"

# --- 5. a static split on a store of its own (another controller name,
# so the first store's sandboxes are not its business)
STORE="sqlite:$T/static.db"
start_controller x0 --shards 2 --shard-index 0 --name static-ctl; px0=$CTL_PID
wait_until 10 test -e "$T/static.db"
start_controller x1 --shards 2 --shard-index 1 --name static-ctl; px1=$CTL_PID
manifest x 2
ctl apply -f "$T/m.yaml" >/dev/null
check "static: the 40 sessions are running" wait_eq 20 40 linked
creates_by | awk '$2 == "x0" || $2 == "x1"' >"$T/static.txt"
check "static: 40 creates" test "$(wc -l <"$T/static.txt")" -eq 40
check "static: each tenant's creates from one shard" \
  test "$(sort -u "$T/static.txt" | awk '{print $1}' | sort | uniq -d | wc -l)" -eq 0
check "static: both shards made some" test "$(awk '{print $2}' "$T/static.txt" | sort -u | wc -l)" -eq 2
stop_pid "$px0"; stop_pid "$px1"

# --- 6. usage errors
"$BINDIR/session-controller" --store "$STORE" --shards 3 >"$T/u1.out" 2>&1
check "usage: --shards 3 without --shard-index is a usage error naming it" \
  sh -c "[ $? -eq 2 ] && grep -q 'needs --shard-index from 0 to 2' '$T/u1.out'"
"$BINDIR/session-controller" --store "$STORE" --shards auto --once >"$T/u2.out" 2>&1
check "usage: --shards auto --once is refused" \
  sh -c "[ $? -eq 2 ] && grep -q 'do not go together' '$T/u2.out'"
"$BINDIR/session-controller" --store "$STORE" --shard-index 1 >"$T/u3.out" 2>&1
check "usage: --shard-index without --shards N is refused" \
  sh -c "[ $? -eq 2 ] && grep -q 'goes only with --shards N' '$T/u3.out'"
finish
