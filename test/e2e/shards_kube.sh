#!/bin/sh
# End-to-end: --shards auto on the kube store (docs/controller.md,
# "Sharding"): a coordination.k8s.io Lease per replica on
# kube-apiserver-fake. Three replicas (--resync 1s: each renews every
# 250 ms) and 60 sessions over 12 tenants:
#  1. each replica has its member Lease (labelled lea.io/member-of=NAME,
#     spec.holderIdentity its member ID), the leader-election Lease of
#     another name is not counted, and all three see 3 members;
#  2. each tenant's sandboxes are created by exactly one replica, every
#     replica makes some, no sandbox twice;
#  3. kill -9 of one replica: 24 sessions applied right after it, over
#     every tenant, are all running within two resyncs (1 s added for
#     date's whole seconds), the survivors see 2 members and the dead
#     one's Lease is deleted (by precondition on its resourceVersion);
#  4. SIGTERM deletes a replica's own Lease at once;
#  5. the fake: a label selector that lists nothing, and a DELETE whose
#     resourceVersion precondition is stale (409, the Lease stays);
#  6. a --name that is not a label value is refused at start.
. "$(dirname "$0")/lib/common.sh"
SHARD_TENANTS=12
. "$(dirname "$0")/lib/shards.sh"

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
LEASES=/apis/coordination.k8s.io/v1/namespaces/default/leases
SEL='labelSelector=lea.io%2Fmember-of%3Dsession-controller'
api() { curl -sf "$API$1"; }
member_leases() { api "$LEASES?$SEL" | jq '.items | length'; }
holders() { api "$LEASES?$SEL" | jq -r '[.items[].spec.holderIdentity | sub("#.*"; "")] | sort | join(" ")'; }
creates_by() { # "TENANT REPLICA" per create (Cube's audit: the User-Agent)
  sim_truth >"$T/truth.json"
  sim_audit | jq -r -s --slurpfile t "$T/truth.json" '
    ($t[0] | map({key: .sandboxID, value: .metadata["lea.tenant_id"]}) | from_entries) as $ten
    | .[] | select(.event == "create" and .status == 201)
    | "\($ten[.sandboxID] // "?") \(.userAgent | capture("replica (?<r>[^)]*)").r)"'
}

start_cubesim --clock-speed 1
start_kube_fake shards
kubeconfig "$T/kc"
export KUBECONFIG="$T/kc"
STORE=kube
# a Lease of another group (a leader election's) in the same namespace
printf '{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"session-controller","labels":{"lea.io/member-of":"other"}},"spec":{"holderIdentity":"x","leaseDurationSeconds":15}}' |
  curl -sf -X POST -H 'Content-Type: application/json' --data-binary @- "$API$LEASES" >/dev/null

# --- 1. three members, each a Lease
start_controller k1 --shards auto; p1=$CTL_PID
start_controller k2 --shards auto; p2=$CTL_PID
start_controller k3 --shards auto; p3=$CTL_PID
check "three replicas see three members" wait_until 10 members_are 3 k1 k2 k3
check "three member Leases, listed by label" test "$(member_leases)" = 3
check "... held by k1 k2 k3" test "$(holders)" = "k1 k2 k3"
check "... the period in an annotation (250 ms at --resync 1s)" test \
  "$(api "$LEASES?$SEL" | jq -r '[.items[].metadata.annotations["lea.io/member-period-ms"]] | unique | join(",")')" = 250

# --- 2. 60 sessions over 12 tenants: one replica per tenant
manifest a 5
ctl apply -f "$T/m.yaml" >/dev/null
check "60 sessions running" wait_eq 20 60 linked
check "one sandbox per session" test "$(live_total)" = 60
creates_by >"$T/creates.txt"
check "60 creates, none twice" test "$(wc -l <"$T/creates.txt")" -eq 60
check "each tenant's creates came from one replica" \
  test "$(sort -u "$T/creates.txt" | awk '{print $1}' | sort | uniq -d | wc -l)" -eq 0
for r in k1 k2 k3; do
  c=$(awk -v r="$r" '$2 == r' "$T/creates.txt" | wc -l)
  check "replica $r made some of the creates ($c)" test "$c" -gt 0
done

# --- 3. kill -9 one replica; its tenants are taken over
kill -9 "$p2"; wait "$p2" 2>/dev/null
t0=$(date +%s)
manifest b 2
ctl apply -f "$T/m.yaml" >/dev/null
check "after kill -9: all 84 running" wait_eq 20 84 linked
t1=$(date +%s)
echo "  (kill -9 to all 24 new sessions running: $((t1 - t0)) s; bound: two resyncs)"
check "... within two resyncs ($((t1 - t0)) s <= 2 s + 1 s of date's rounding)" test $((t1 - t0)) -le 3
check "the survivors see two members" wait_until 5 members_are 2 k1 k3
check "the dead replica's Lease is deleted" wait_eq 5 "k1 k3" holders
check "no sandbox twice after the takeover" test "$(live_total)" = 84
check "the takeover was logged" sh -c "grep -q 'membership changed' '$T/k1.log' '$T/k3.log'"

# --- 4. SIGTERM deletes the replica's own Lease
stop_pid "$p3"
check "after SIGTERM its Lease is gone at once" test "$(holders)" = "k1"
check "... and k1 sees one member within a renewal or two" wait_until 4 members_are 1 k1
stop_pid "$p1"
check "after the last SIGTERM no member Lease is left" test "$(member_leases)" = 0
check "the other group's Lease is untouched" test \
  "$(api "$LEASES/session-controller" | jq -r .spec.holderIdentity)" = x

# --- 5. the fake: label selectors and DELETE preconditions
check "fake: a selector of another value lists nothing" test \
  "$(api "$LEASES?labelSelector=lea.io%2Fmember-of%3Dnone" | jq '.items | length')" = 0
check "fake: != lists the others" test \
  "$(api "$LEASES?labelSelector=lea.io%2Fmember-of%21%3Dnone" | jq '.items | length')" = 1
check "fake: a set-based selector is refused (400)" test \
  "$(curl -s -o /dev/null -w '%{http_code}' "$API$LEASES?labelSelector=a%20in%20(b)")" = 400
rv=$(api "$LEASES/session-controller" | jq -r .metadata.resourceVersion)
code=$(curl -s -o "$T/del.json" -w '%{http_code}' -X DELETE -H 'Content-Type: application/json' \
  --data '{"apiVersion":"v1","kind":"DeleteOptions","preconditions":{"resourceVersion":"999999"}}' "$API$LEASES/session-controller")
check "fake: DELETE with a stale resourceVersion precondition is 409" sh -c \
  "[ $code = 409 ] && grep -q 'Precondition failed: ResourceVersion in precondition: 999999' '$T/del.json'"
check "... and the Lease stays" test "$(api "$LEASES/session-controller" | jq -r .spec.holderIdentity)" = x
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H 'Content-Type: application/json' \
  --data "{\"apiVersion\":\"v1\",\"kind\":\"DeleteOptions\",\"preconditions\":{\"resourceVersion\":\"$rv\"}}" "$API$LEASES/session-controller")
check "fake: DELETE with the current resourceVersion removes it" sh -c \
  "[ $code = 200 ] && ! curl -sf '$API$LEASES/session-controller' >/dev/null"

# --- 6. a controller name that cannot be a label value
"$BINDIR/session-controller" --store kube --cube-url "$SIM" --metrics-addr 127.0.0.1:0 \
  --shards auto --name 'bad name!' >"$T/u1.out" 2>&1
check "a --name that is not a label value is refused at start, naming it" \
  sh -c "[ $? -eq 1 ] && grep 'is not a label value' '$T/u1.out' | grep -qF 'bad name!'"
finish
