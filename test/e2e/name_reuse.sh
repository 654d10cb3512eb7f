#!/bin/sh
# End-to-end: a name applied again never turns the old object's sandbox
# into an orphan judged by absence (issue 25, 1). The store holds a deleted
# object's name until the controller has confirmed its sandbox gone (an
# apply of it answers "object is being deleted", as the API server does
# while a finalizer is held), `sessionctl delete` waits for the object to
# be gone (--wait=false, --timeout), get and describe show it Terminating.
# Cases, each checked against the old object's sandbox by Cube's truth:
#  stopped  SQLite, the controller stopped during delete and re-apply: the
#           re-apply is refused; once the controller runs, the old sandbox
#           (still running) goes within one resync and the name is free
#  503      SQLite, the controller running and Cube answering 503 to the
#           DELETE: delete --timeout gives up (exit 3), the re-apply is
#           refused, the sandbox goes once Cube answers again
#  raw      SQLite written straight with sqlite3 (the tombstone row removed
#           and the name inserted again by hand): the old sandbox, tagged
#           with a uid the store no longer has while its session is held
#           under another uid, is evidence (rule 16): deleted in the pass
#           that sees it, running, without the orphan grace
#  kube     kubectl on kube-apiserver-fake: kubectl delete --wait=false,
#           kubectl apply refused while the finalizer is held, the old
#           sandbox gone within one resync of the controller's start
. "$(dirname "$0")/lib/common.sh"

RESYNC=2
stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
# the live sandbox of session $1 (its ID), or none
live_id() { sim_truth | jq -r --arg s "$1" '[.[] | select(.state != "deleted" and .metadata["lea.session_id"] == $s)][0].sandboxID // "none"'; }
state_of_id() { sim_truth | jq -r --arg id "$1" '.[] | select(.sandboxID == $id) | .state'; }
running_id() { sim_truth | jq -r --arg s "$1" '[.[] | select(.state == "running" and .metadata["lea.session_id"] == $s)][0].sandboxID // "none"'; }
# new_running NAME OLD: a running sandbox of session NAME that is not OLD
new_running() { id=$(running_id "$1"); [ "$id" != none ] && [ "$id" != "$2" ]; }
name_gone() { ! ctl get sessions "$1" -n "$2" >/dev/null 2>&1; }
created() { ctl apply -f "$1" 2>&1 | grep -q created; }
first_pass() { [ "$(passes "$1")" -ge 1 ]; }
manifest() {
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s, namespace: %s}\nspec: {template: shell}\n' "$1" "$2"
}

start_cubesim --dialect cube --clock-speed 1

# --- stopped: delete and re-apply while no controller runs
manifest r-one default >"$T/r-one.yaml"
start_controller c1 --resync ${RESYNC}s; p=$CTL_PID
ctl apply -f "$T/r-one.yaml" >/dev/null
check "stopped: the first object's sandbox runs" wait_eq 15 running sim_state_of r-one
old=$(live_id r-one)
uid1=$(sess_field r-one default .metadata.uid)
stop_pid "$p"
ctl delete session r-one --wait=false >"$T/del1.out" 2>&1
check "stopped: delete --wait=false returns at once" grep -q 'session "r-one" deleted' "$T/del1.out"
ctl get sessions >"$T/get1.out" 2>&1
check "stopped: get shows it Terminating" grep -q '^r-one .* Terminating ' "$T/get1.out"
ctl describe session r-one >"$T/desc1.out" 2>&1
check "stopped: describe says what it waits for" grep -q '^Terminating: .*delete its sandbox' "$T/desc1.out"
rc=0; ctl apply -f "$T/r-one.yaml" >"$T/apply1.out" 2>&1 || rc=$?
check "stopped: the re-apply is refused (exit $rc)" test "$rc" = 1
check "stopped: ... saying the object is being deleted" grep -q 'being deleted' "$T/apply1.out"
check "stopped: the held object keeps its uid" test "$(sess_field r-one default .metadata.uid)" = "$uid1"
start_controller c2 --resync ${RESYNC}s; p=$CTL_PID
wait_until 15 first_pass c2
check "stopped: the old sandbox is deleted within one resync" wait_eq $((RESYNC + 1)) deleted state_of_id "$old"
check "stopped: then the name is free" wait_until $((RESYNC + 1)) name_gone r-one default
check "stopped: the re-apply is taken" created "$T/r-one.yaml"
check "stopped: the new object runs a new sandbox" wait_until 15 new_running r-one "$old"
check "stopped: ... not the old one" test "$(live_id r-one)" != "$old"
check "stopped: ... under a new uid" test "$(sess_field r-one default .metadata.uid)" != "$uid1"

# --- 503: Cube refuses the DELETE while the controller runs
manifest r-two default >"$T/r-two.yaml"
ctl apply -f "$T/r-two.yaml" >/dev/null
check "503: the sandbox runs" wait_eq 15 running sim_state_of r-two
old=$(live_id r-two)
curl -sf -X POST -d 'delete:error=1@503' "$SIM/_sim/faults" >/dev/null
rc=0; ctl delete session r-two --timeout 3s >"$T/del2.out" 2>"$T/del2.err" || rc=$?
check "503: delete --timeout gives up while Cube refuses (exit $rc)" test "$rc" = 3
check "503: ... naming the session" grep -q 'timed out waiting for session "r-two"' "$T/del2.err"
rc=0; ctl apply -f "$T/r-two.yaml" >"$T/apply2.out" 2>&1 || rc=$?
check "503: the re-apply is refused (exit $rc)" test "$rc" = 1
check "503: the old sandbox still lives meanwhile" test "$(state_of_id "$old")" = running
curl -sf -X POST -d '' "$SIM/_sim/faults" >/dev/null
rc=0; ctl delete session r-two --timeout $((2 * RESYNC + 5))s >/dev/null 2>&1 || rc=$?
check "503: delete waits until it is gone once Cube answers (exit $rc)" test "$rc" = 0
check "503: the old sandbox is deleted" test "$(state_of_id "$old")" = deleted
check "503: the re-apply is taken" created "$T/r-two.yaml"
check "503: the new object runs a new sandbox" wait_until 15 new_running r-two "$old"
check "503: ... not the old one" test "$(live_id r-two)" != "$old"

# --- raw: the store written by hand, the tombstone removed
if command -v sqlite3 >/dev/null 2>&1; then
  manifest r-three default >"$T/r-three.yaml"
  ctl apply -f "$T/r-three.yaml" >/dev/null
  check "raw: the sandbox runs" wait_eq 15 running sim_state_of r-three
  old=$(live_id r-three)
  uid3=$(sess_field r-three default .metadata.uid)
  stop_pid "$p"
  # what a hand-written script does: the row replaced by a fresh object
  # of the same name (no status, a new uid)
  check "raw: the row removed by hand" sqlite3 "$T/sessions.db" "DELETE FROM objects WHERE namespace = 'default' AND name = 'r-three'"
  ctl apply -f "$T/r-three.yaml" >/dev/null
  check "raw: the store holds a new uid" test "$(sess_field r-three default .metadata.uid)" != "$uid3"
  start_controller c3 --resync ${RESYNC}s --orphan-grace 1h; p=$CTL_PID
  wait_until 15 first_pass c3
  check "raw: the old sandbox is deleted within one resync, running, no grace" wait_eq $((RESYNC + 1)) deleted state_of_id "$old"
  check "raw: ... said as superseded in its log" grep -q superseded "$T/c3.log"
  check "raw: the new object runs its own sandbox" wait_until 15 new_running r-three "$old"
else
  echo "skip raw: sqlite3 is not installed"
fi
stop_pid "$p"

# --- kube: plain kubectl on the fake API server
if command -v kubectl >/dev/null 2>&1; then
  start_kube_fake k
  kubeconfig "$T/kc"
  REPO=$(cd "$(dirname "$0")/../.." && pwd)
  k() { timeout 30 kubectl --kubeconfig "$T/kc" --cache-dir "$T/kcache" "$@"; }
  k apply -f "$REPO/deploy/crd.yaml" >/dev/null
  STORE=kube
  export KUBECONFIG="$T/kc"
  manifest k-one tenant-k >"$T/k-one.yaml"
  start_controller k1 --resync ${RESYNC}s; p=$CTL_PID
  k apply -f "$T/k-one.yaml" >/dev/null
  check "kube: the sandbox runs" wait_eq 15 running sim_state_of k-one
  old=$(live_id k-one)
  stop_pid "$p"
  k delete session k-one -n tenant-k --wait=false >"$T/kdel.out" 2>&1
  check "kube: kubectl delete --wait=false" grep -q 'deleted' "$T/kdel.out"
  uidk=$(k get session k-one -n tenant-k -o jsonpath='{.metadata.uid}')
  # kubectl apply patches the object it finds (as on a real cluster) and
  # warns; kubectl create is refused
  k apply -f "$T/k-one.yaml" >"$T/kapply.out" 2>&1
  check "kube: kubectl apply warns that it is being deleted" grep -q 'currently being deleted' "$T/kapply.out"
  check "kube: ... and the held object keeps its uid" test "$(k get session k-one -n tenant-k -o jsonpath='{.metadata.uid}')" = "$uidk"
  rc=0; k create -f "$T/k-one.yaml" >"$T/kcreate.out" 2>&1 || rc=$?
  check "kube: kubectl create is refused (exit $rc)" test "$rc" != 0
  check "kube: ... object is being deleted" grep -q 'being deleted' "$T/kcreate.out"
  rc=0; ctl apply -f "$T/k-one.yaml" >"$T/kapply2.out" 2>&1 || rc=$?
  check "kube: sessionctl apply is refused alike (exit $rc)" test "$rc" = 1
  check "kube: ... object is being deleted" grep -q 'being deleted' "$T/kapply2.out"
  ctl get sessions -n tenant-k >"$T/kget.out" 2>&1
  check "kube: sessionctl get shows it Terminating" grep -q '^k-one .* Terminating ' "$T/kget.out"
  start_controller k2 --resync ${RESYNC}s; p=$CTL_PID
  wait_until 15 first_pass k2
  check "kube: the old sandbox is deleted within one resync" wait_eq $((RESYNC + 1)) deleted state_of_id "$old"
  check "kube: then the object is gone" wait_until $((RESYNC + 1)) name_gone k-one tenant-k
  check "kube: kubectl apply is taken" sh -c "timeout 30 kubectl --kubeconfig '$T/kc' --cache-dir '$T/kcache' apply -f '$T/k-one.yaml' | grep -q created"
  check "kube: the new object runs a new sandbox" wait_until 15 new_running k-one "$old"
  check "kube: ... not the old one" test "$(live_id k-one)" != "$old"
  stop_pid "$p"
else
  echo "skip kube: kubectl is not installed"
fi
finish
