#!/bin/sh
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
  "$BINDIR/kube-apiserver-fake" "$@" >"$T/fake$FAKE_N.out" 2>"$T/fake$FAKE_N.log" &
  API_PID=$!
  PIDS="$PIDS $API_PID"
  API=""
  i=0
  while [ -z "$API" ] && [ $i -lt 100 ]; do
    API=$(sed -n 's/^kube-apiserver-fake listening on //p' "$T/fake$FAKE_N.out" 2>/dev/null)
    [ -n "$API" ] || { sleep 0.05; i=$((i + 1)); }
  done
  [ -n "$API" ] || { echo "kube-apiserver-fake did not start" >&2; exit 1; }
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
cat >"$T/kc" <<KC
apiVersion: v1
kind: Config
current-context: fake
clusters:
- name: fake
  cluster: {server: $API}
contexts:
- name: fake
  context: {cluster: fake, user: u}
users:
- name: u
  user: {}
KC
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
curl -sf -X POST -d '' "$SIM/_sim/faults" >/dev/null
check "repeat: created once Cube works" wait_eq 20 1 sim_live_for e2
check "events: none dropped" sh -c "! grep -q 'events: cannot send' '$T/ev1.log'"
kill "$EV1"; wait "$EV1" 2>/dev/null
finish
