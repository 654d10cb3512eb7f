#!/bin/sh
# test-slow
# End-to-end: Kubernetes Events and leader election of the controller on
# --store kube, against kube-apiserver-fake and cubesim.
#  - events for create, pause, delete with the Session as involvedObject
#    and the documented reasons; a repeated identical event bumps count;
#  - two replicas with --leader-elect: only the Lease holder calls
#    mutating Cube endpoints (cubesim's audit shows the User-Agent, which
#    names the replica); kill -9 of the leader: the other takes over
#    within the lease duration; SIGTERM of the leader: released at once;
#  - --leader-elect with the SQLite store is a clear config error;
#  - kubectl get events / leases against the fake when kubectl exists.
. "$(dirname "$0")/lib/common.sh"

start_fake() {
  FAKE_N=$(( ${FAKE_N:-0} + 1 ))
  start_kube_fake "$FAKE_N" "$@"
}

# --- --leader-elect needs the kube store
"$BINDIR/session-controller" --store "sqlite:$T/x.db" --leader-elect >/dev/null 2>"$T/le.err"
rc=$?
check "--leader-elect with sqlite: exit 2" test "$rc" = 2
check "--leader-elect with sqlite: says why" grep -q -- "--leader-elect needs --store kube" "$T/le.err"
check "--help lists the leader election flags" sh -c \
  "'$BINDIR/session-controller' --help | grep -q -- '--leader-elect-namespace'"

# no token: kubectl (plain HTTP) can read the same fake
start_fake --bookmark-ms 300
kubeconfig "$T/kc"
export KUBECONFIG="$T/kc"
STORE=kube
api() { curl -sf "$API$1"; }
events() { api "/api/v1/namespaces/$1/events"; }
# ev_count NS REASON: Event objects with that reason
ev_count() { events "$1" | jq --arg r "$2" '[.items[] | select(.reason == $r)] | length'; }
# ev_sum NS REASON: the sum of their counts
ev_sum() { events "$1" | jq --arg r "$2" '[.items[] | select(.reason == $r) | .count] | add // 0'; }

session_yaml() { # NAME NS [EXTRA-SPEC]
  cat <<Y
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: $1, namespace: $2}
spec: {template: python-data, idleTimeout: 15m$3}
Y
}

start_cubesim --clock-speed 1
start_controller ev1 --watch-timeout 2s
EV1=$CTL_PID
session_yaml e1 team-a >"$T/e1.yaml"
ctl apply -f "$T/e1.yaml" >/dev/null
check "create: sandbox created" wait_eq 15 1 sim_live_for e1
check "create: a SandboxCreated event" wait_eq 10 1 ev_count team-a SandboxCreated
uid=$(api /apis/lea.io/v1alpha1/namespaces/team-a/sessions/e1 | jq -r .metadata.uid)
ev=$(events team-a | jq -c '.items[] | select(.reason == "SandboxCreated")')
check "create: involvedObject is the Session" test \
  "$(echo "$ev" | jq -r '[.involvedObject.apiVersion, .involvedObject.kind, .involvedObject.namespace, .involvedObject.name, .involvedObject.uid] | join(" ")')" \
  = "lea.io/v1alpha1 Session team-a e1 $uid"
check "create: involvedObject has a resourceVersion" test -n "$(echo "$ev" | jq -r '.involvedObject.resourceVersion // empty')"
check "create: type Normal, source session-controller, count 1" test \
  "$(echo "$ev" | jq -r '[.type, .source.component, .count] | join(" ")')" = "Normal session-controller 1"
check "create: the message names the sandbox" sh -c "echo '$ev' | jq -r .message | grep -q '^created sandbox '"
session_yaml e1 team-a ", state: Paused" >"$T/e1p.yaml"
ctl apply -f "$T/e1p.yaml" >/dev/null
check "pause: paused" wait_eq 10 paused sim_state_of e1
check "pause: a SandboxPaused event" wait_eq 10 1 ev_count team-a SandboxPaused
ctl delete session e1 -n team-a >/dev/null
check "delete: sandbox deleted" wait_eq 15 0 sim_live_for e1
check "delete: a SandboxDeleted event" wait_eq 10 1 ev_count team-a SandboxDeleted
check "delete: the Session is gone (finalizer removed)" wait_eq 10 404 \
  curl -s -o /dev/null -w '%{http_code}' "$API/apis/lea.io/v1alpha1/namespaces/team-a/sessions/e1"

# repeated identical events: a Cube create that keeps failing with the
# same message gives one CubeError Event whose count grows
curl -sf -X POST -d 'create:error=1@503' "$SIM/_sim/faults" >/dev/null
session_yaml e2 team-b >"$T/e2.yaml"
ctl apply -f "$T/e2.yaml" >/dev/null
check "repeat: a CubeError event (Warning)" wait_eq 15 Warning sh -c \
  "curl -sf '$API/api/v1/namespaces/team-b/events' | jq -r '[.items[] | select(.reason == \"CubeError\")][0].type'"
check "repeat: its count grows past 1" wait_until 20 test "$(ev_sum team-b CubeError)" -ge 2
check "repeat: still one CubeError object" test "$(ev_count team-b CubeError)" = 1
check "repeat: the fake served PATCHes of that Event" sh -c \
  "curl -sf '$API/_fake/requests' | grep -q '^PATCH /api/v1/namespaces/team-b/events/e2\\.'"
curl -sf -X POST -d '' "$SIM/_sim/faults" >/dev/null
check "repeat: created once Cube works" wait_eq 20 1 sim_live_for e2
check "events: none dropped" sh -c "! grep -q 'events: cannot send' '$T/ev1.log'"
kill "$EV1"; wait "$EV1" 2>/dev/null

# --- leader election: two replicas, one Lease
leader_gauge() { curl -sf "http://127.0.0.1:$(metrics_port "$1")/metrics" | sed -n 's/^session_controller_leader \([0-9]*\).*/\1/p'; }
holder() { api /apis/coordination.k8s.io/v1/namespaces/ctl-ns/leases/session-controller | jq -r '.spec.holderIdentity // ""'; }
# mut_by REPLICA: mutating Cube calls (api source) made by that replica
mut_by() { sim_audit | jq -s --arg r "(replica $1)" '[.[] | select(.source == "api" and (.userAgent // "" | endswith($r)))] | length'; }
LE="--leader-elect --leader-elect-namespace ctl-ns --watch-timeout 2s"
start_controller le1 $LE
LE1=$CTL_PID
check "leader: the first replica takes the Lease" wait_eq 10 le1 holder
start_controller le2 $LE
LE2=$CTL_PID
has_port() { test -n "$(metrics_port "$1")"; }
check "leader: the second replica is up (metrics)" wait_until 10 has_port le2
sleep 3
check "leader: the Lease stays with le1" test "$(holder)" = le1
check "leader: le1's gauge is 1" wait_eq 5 1 leader_gauge le1
check "leader: le2's gauge is 0" test "$(leader_gauge le2)" = 0
check "leader: le2 (follower) is still ready" wait_eq 10 200 \
  curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$(metrics_port le2)/readyz"
for n in l1 l2 l3; do session_yaml $n team-c; echo ---; done >"$T/l.yaml"
ctl apply -f "$T/l.yaml" >/dev/null
live_l() { sim_truth | jq '[.[] | select(.state != "deleted" and (.metadata["lea.session_id"] // "" | test("^l[0-9]$")))] | length'; }
check "leader: three sandboxes created" wait_eq 15 3 live_l
sleep 2
check "leader: le1 made mutating Cube calls" test "$(mut_by le1)" -ge 3
check "leader: le2 made none" test "$(mut_by le2)" = 0
check "leader: each session has exactly one sandbox" test "$(live_l)" = 3

# kill -9 of the leader: the Lease runs out on le2's clock (15 s)
kill -9 "$LE1"; wait "$LE1" 2>/dev/null
t0=$(date +%s)
check "failover: le2 takes the Lease within 22 s of kill -9" wait_eq 22 le2 holder
t1=$(date +%s)
echo "     (failover took $((t1 - t0)) s)"
check "failover: le2's gauge is 1" wait_eq 5 1 leader_gauge le2
session_yaml l4 team-c >"$T/l4.yaml"
ctl apply -f "$T/l4.yaml" >/dev/null
check "failover: le2 acts (creates l4)" wait_eq 15 1 sim_live_for l4
check "failover: the create came from le2" test "$(mut_by le2)" -ge 1
check "failover: le1 logged nothing after its death (sanity)" test -s "$T/le1.log"

# SIGTERM of the leader: it releases the Lease, le3 takes over at once
start_controller le3 $LE
LE3=$CTL_PID
check "handover: le3 up as a follower" wait_eq 10 0 leader_gauge le3
kill -TERM "$LE2"
t0=$(date +%s)
check "handover: le3 holds the Lease within 5 s of SIGTERM" wait_eq 5 le3 holder
t1=$(date +%s)
echo "     (handover took $((t1 - t0)) s)"
wait "$LE2" 2>/dev/null
check "handover: le2 logged the release" grep -q "released the Lease" "$T/le2.log"
session_yaml l5 team-c >"$T/l5.yaml"
ctl apply -f "$T/l5.yaml" >/dev/null
check "handover: l5 created by le3" wait_eq 15 1 sim_live_for l5
check "handover: transitions counted" test "$(api /apis/coordination.k8s.io/v1/namespaces/ctl-ns/leases/session-controller | jq .spec.leaseTransitions)" -ge 2

if command -v kubectl >/dev/null 2>&1; then
  check "kubectl: get events" sh -c "timeout 20 kubectl get events -n team-a 2>&1 | grep -q SandboxCreated"
  check "kubectl: get leases" sh -c "timeout 20 kubectl get leases -n ctl-ns 2>&1 | grep -q 'session-controller *le3'"
else
  echo "skip kubectl checks: kubectl is not installed"
fi
kill "$LE3"; wait "$LE3" 2>/dev/null

# --- without --leader-elect: two replicas both act, and still converge
start_controller nr1 --watch-timeout 2s
NR1=$CTL_PID
start_controller nr2 --watch-timeout 2s
NR2=$CTL_PID
live_n() { sim_truth | jq '[.[] | select(.state != "deleted" and (.metadata["lea.session_id"] // "" | test("^n[0-9]$")))] | length'; }
for n in n1 n2 n3 n4; do session_yaml $n team-d; echo ---; done >"$T/n.yaml"
ctl apply -f "$T/n.yaml" >/dev/null
check "no election: both replicas report leader 1" wait_eq 10 "1 1" sh -c \
  "echo \$(curl -sf http://127.0.0.1:$(metrics_port nr1)/metrics | sed -n 's/^session_controller_leader //p') \$(curl -sf http://127.0.0.1:$(metrics_port nr2)/metrics | sed -n 's/^session_controller_leader //p')"
check "no election: four sandboxes" wait_eq 20 4 live_n
sleep 3
check "no election: still exactly four (no duplicate survives)" wait_eq 10 4 live_n
kill "$NR1" "$NR2"; wait "$NR1" "$NR2" 2>/dev/null
finish
