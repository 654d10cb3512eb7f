#!/bin/sh
# End-to-end: the kube store against kube-apiserver-fake. sessionctl on
# --store kube (apply, get, get -w, delete, 409 from a second writer,
# token rotation), the controller on --store kube with cubesim (create on
# apply, pause, the finalizer holds a deleted Session until its sandbox is
# gone, relist after the watch history expired), and kubectl on the fake
# when kubectl is installed.
. "$(dirname "$0")/lib/common.sh"

# start_fake [ARGS...]: sets API (base URL) and API_PID
start_fake() {
  FAKE_N=$(( ${FAKE_N:-0} + 1 ))
  start_kube_fake "$FAKE_N" "$@"
}
api() { curl -sf -H "Authorization: Bearer $(cat "$T/token")" "$API$1"; }
obj() { api "/apis/lea.io/v1alpha1/namespaces/$1/sessions/$2"; }

echo tok-1 >"$T/token"
start_fake --token-file "$T/token" --bookmark-ms 300 --history 50
kubeconfig "$T/kc" "" "    tokenFile: token"
export KUBECONFIG="$T/kc"
STORE=kube

cat >"$T/s1.yaml" <<YAML
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: s1, namespace: tenant-a}
spec: {template: python-data, idleTimeout: 15m}
YAML

# --- sessionctl alone
check "ctl: apply creates" test "$(ctl apply -f "$T/s1.yaml")" = "session/s1 created"
check "ctl: apply again is unchanged" test "$(ctl apply -f "$T/s1.yaml")" = "session/s1 unchanged"
check "ctl: get reads it back" test "$(sess_field s1 tenant-a .spec.template)" = python-data
check "ctl: the server has generation 1" test "$(obj tenant-a s1 | jq .metadata.generation)" = 1
# the binary itself, not the ctl function (a subshell): its PID is the
# watch's, stopped with the others at the end
"$BINDIR/sessionctl" --store "$STORE" get sessions -A -w >"$T/watch.out" 2>&1 &
PIDS="$PIDS $!"
WPID=$!
PIDS="$PIDS $WPID"
sleep 0.5
sed 's/15m/20m/' "$T/s1.yaml" >"$T/s1b.yaml"
check "ctl: apply of a change is configured" test "$(ctl apply -f "$T/s1b.yaml")" = "session/s1 configured"
check "ctl: generation bumped on the spec change" test "$(obj tenant-a s1 | jq .metadata.generation)" = 2
check "ctl: get -w saw the change" wait_until 5 test "$(grep -c s1 "$T/watch.out")" -ge 2
# a second writer: a stale resourceVersion gets 409 from the server
rv=$(obj tenant-a s1 | jq -r .metadata.resourceVersion)
ctl apply -f "$T/s1.yaml" >/dev/null
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H "Authorization: Bearer tok-1" \
  -H 'Content-Type: application/json' \
  -d "{\"apiVersion\":\"lea.io/v1alpha1\",\"kind\":\"Session\",\"metadata\":{\"name\":\"s1\",\"resourceVersion\":\"$rv\"},\"status\":{\"phase\":\"Running\"}}" \
  "$API/apis/lea.io/v1alpha1/namespaces/tenant-a/sessions/s1/status")
check "second writer with a stale version: 409" test "$code" = 409
# token rotation: the file changes, the server wants the new one
echo tok-2 >"$T/token"
check "ctl: works after the token rotated" test "$(sess_field s1 tenant-a .spec.idleTimeout)" = 15m
echo "not-the-token" >"$T/token.bad"
kubeconfig "$T/kc-bad" "" "    token: wrong"
KUBECONFIG="$T/kc-bad" ctl get sessions -A >/dev/null 2>"$T/bad.err"
check "ctl: a wrong token is a clear 401" grep -q "401 Unauthorized" "$T/bad.err"
check "ctl: delete" test "$(ctl delete session s1 -n tenant-a 2>&1)" = 'session "s1" deleted'
check "ctl: gone without a finalizer (the controller never saw it)" test "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer tok-2" "$API/apis/lea.io/v1alpha1/namespaces/tenant-a/sessions/s1")" = 404
check "ctl: get -w saw the deletion" wait_until 5 test "$(grep -c s1 "$T/watch.out")" -ge 3
kill "$WPID" 2>/dev/null

# --- the controller on --store kube
start_cubesim --clock-speed 1
start_controller ctl-kube --orphan-grace 10m --watch-timeout 2s
ctl apply -f "$T/s1.yaml" >/dev/null
check "controller: sandbox created on apply" wait_eq 15 1 sim_live_for s1
check "controller: status Running on the server" wait_eq 10 Running sess_field s1 tenant-a .status.phase
check "controller: finalizer added" wait_eq 5 '["lea.io/sandbox-cleanup"]' sh -c "curl -sf -H 'Authorization: Bearer tok-2' '$API/apis/lea.io/v1alpha1/namespaces/tenant-a/sessions/s1' | jq -c .metadata.finalizers"
sed 's/idleTimeout: 15m}/idleTimeout: 15m, state: Paused}/' "$T/s1.yaml" >"$T/s1p.yaml"
ctl apply -f "$T/s1p.yaml" >/dev/null
check "controller: state Paused pauses it" wait_eq 10 paused sim_state_of s1
check "controller: phase Paused" wait_eq 10 Paused sess_field s1 tenant-a .status.phase
# the watch history expires under the controller: it relists
# (stopped, so its watch is behind; compaction ends the open watches)
kill -STOP "$CTL_PID"
curl -sf -X POST "$API/_fake/compact" >/dev/null
ctl apply -f "$T/s1.yaml" >/dev/null
curl -sf -X POST "$API/_fake/compact" >/dev/null
kill -CONT "$CTL_PID"
check "controller: after compaction it still follows (resumed)" wait_eq 15 running sim_state_of s1
check "controller: logged the relist" wait_until 10 grep -q "relisting" "$T/ctl-kube.log"
# delete: the Session stays (deletionTimestamp) until the sandbox is gone
curl -sf -X POST -d 'delete:error=1@500' "$SIM/_sim/faults" >/dev/null
ctl delete session s1 -n tenant-a --wait=false >/dev/null # held: Cube fails the DELETE
sleep 1.5
check "controller: a deleted Session is held while its sandbox lives" test "$(obj tenant-a s1 | jq -r '.metadata.deletionTimestamp != null')" = true
check "controller: its sandbox still lives meanwhile" test "$(sim_live_for s1)" = 1
curl -sf -X POST -d '' "$SIM/_sim/faults" >/dev/null
check "controller: the sandbox is deleted" wait_eq 20 0 sim_live_for s1
check "controller: then the finalizer goes and the Session with it" wait_eq 10 404 curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer tok-2" "$API/apis/lea.io/v1alpha1/namespaces/tenant-a/sessions/s1"
# token rotation under the running controller
echo tok-3 >"$T/token"
sed 's/s1/s2/' "$T/s1.yaml" >"$T/s2.yaml"
ctl apply -f "$T/s2.yaml" >/dev/null
check "controller: works after the token rotated" wait_eq 20 1 sim_live_for s2

# --- kubectl against the fake (kubectl sends no bearer token over plain
# HTTP, so a second fake without a token)
if command -v kubectl >/dev/null 2>&1; then
  TOKFAKE_API=$API
  start_fake
  kubeconfig "$T/kc-open"
  export KUBECONFIG="$T/kc-open"
  ctl apply -f "$T/s1.yaml" >/dev/null
  check "kubectl: get sessions (Table)" sh -c "timeout 20 kubectl get sessions -A 2>&1 | grep -q '^tenant-a *s1 *Active'"
  check "kubectl: merge patch" sh -c "timeout 20 kubectl -n tenant-a patch session s1 --type merge -p '{\"spec\":{\"state\":\"Paused\"}}' >/dev/null 2>&1"
  check "kubectl: the patch is what sessionctl reads" test "$(sess_field s1 tenant-a .spec.state)" = Paused
  check "kubectl: delete" sh -c "timeout 20 kubectl -n tenant-a delete session s1 >/dev/null 2>&1"
  check "kubectl: gone" test "$(curl -s -o /dev/null -w '%{http_code}' "$API/apis/lea.io/v1alpha1/namespaces/tenant-a/sessions/s1")" = 404
  API=$TOKFAKE_API
else
  echo "skip kubectl checks: kubectl is not installed"
fi
finish
