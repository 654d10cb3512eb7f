#!/bin/sh
# sessionctl_wait.sh - `sessionctl wait` (docs/sessionctl.md, "wait"), as
# kubectl wait for one session: --for=condition=TYPE[=VALUE] (a condition
# about an older generation is not met), --for=jsonpath='{EXPR}'=VALUE,
# --for=delete; "session.lea.io/NAME condition met"; exit 0 met, 1 absent
# or deleted, 2 usage, 3 timed out. On SQLite (the status written as the
# controller writes it) and on a kube store; and plain kubectl wait and
# kubectl annotate against kube-apiserver-fake (its field selector: a
# wait for one session is not met by another), the kubectl equivalent of
# sessionctl connect.
. "$(dirname "$0")/lib/common.sh"

DB="$T/sessions.db"
run() { "$@" >"$T/out" 2>"$T/err"; rc=$?; }
bg() {
  bgn=$1; shift
  rm -f "$T/$bgn.rc"
  ( "$BINDIR/sessionctl" --store "$STORE" "$@" >"$T/$bgn.out" 2>"$T/$bgn.err"
    echo $? >"$T/$bgn.rc" ) &
  PIDS="$PIDS $!"
}
rc_of() { wait_until 20 test -s "$T/$1.rc" && cat "$T/$1.rc"; }
# answer NS NAME STATUS: the status written as the controller does (a new
# revision, the row, a MODIFIED history entry)
answer() {
  sqlite3 "$DB" "BEGIN IMMEDIATE;
UPDATE meta SET revision = revision + 1;
UPDATE objects SET status = json('$3'), revision = (SELECT revision FROM meta)
  WHERE namespace = '$1' AND name = '$2';
INSERT INTO history(revision, type, namespace, name, object)
  SELECT m.revision, 'MODIFIED', '$1', '$2',
         json_set(h.object, '\$.status', json('$3'),
                  '\$.metadata.resourceVersion', CAST(m.revision AS TEXT))
  FROM meta m, (SELECT object FROM history WHERE namespace = '$1' AND
                name = '$2' ORDER BY revision DESC LIMIT 1) h;
COMMIT;"
}
# ready STATUS [OBSERVED]: a status with the condition Ready=STATUS
ready() {
  printf '{"phase":"Running","sandboxID":"sb-1","connect":{"nonce":"n-1","result":"Served"},"conditions":[{"type":"Ready","status":"%s","reason":"SandboxRunning","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"%s}]}' \
    "$1" "${2:+,\"observedGeneration\":$2}"
}
sess() {
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s, namespace: %s}\nspec: {template: %s}\n' "$1" "$2" "${3:-shell}"
}

sess w1 tenant-a | ctl apply -f - >/dev/null 2>&1 || fail "apply w1"

# --- usage: exit 2
for args in "w1" "w1 --for=ready" "w1 --for=condition=" "w1 --for=jsonpath=.status.phase=Running" \
            "w1 --for='jsonpath={.status.phase'" "w1 --for=delete --timeout=x" "w1 w2 --for=delete" \
            "--for=delete" "pods/w1 --for=delete"; do
  eval "run ctl wait $args"
  check "usage: wait $args: exit 2" test "$rc" = 2
done
run ctl wait w1 --for=jsonpath=.status.phase=Running
check "usage: --for=jsonpath without braces says the form" grep -q "want jsonpath='{EXPR}'=VALUE" "$T/err"

# --- condition: not yet, then met; timeout exit 3 with kubectl's message
run ctl wait w1 -n tenant-a --for=condition=Ready --timeout=1s
check "condition: no status: exit 3" test "$rc" = 3
check "condition: kubectl's timeout message" grep -q '^error: timed out waiting for the condition on sessions/w1$' "$T/err"
check "condition: nothing on stdout" test ! -s "$T/out"
bg a1 wait session/w1 -n tenant-a --for=condition=Ready --timeout=20s
sleep 0.5
answer tenant-a w1 "$(ready False)"
sleep 0.5
check "condition: Ready=False does not meet Ready" test ! -s "$T/a1.rc"
answer tenant-a w1 "$(ready True)"
check "condition: met: exit 0" test "$(rc_of a1)" = 0
check "condition: kubectl's line" test "$(cat "$T/a1.out")" = "session.lea.io/w1 condition met"
run ctl wait w1 -n tenant-a --for=condition=ready=true --timeout=0
check "condition: met already, checked once; case ignored" sh -c "test $rc = 0 && test \"\$(cat '$T/out')\" = 'session.lea.io/w1 condition met'"
run ctl wait w1 -n tenant-a --for=condition=Ready=False --timeout=0
check "condition: Ready=False is not met by True: exit 3" test "$rc" = 3
# a condition about an older spec is not met (kubectl's observedGeneration rule)
sess w1 tenant-a other | ctl apply -f - >/dev/null
answer tenant-a w1 "$(ready True 1)"
run ctl wait w1 -n tenant-a --for=condition=Ready --timeout=1s
check "condition: observedGeneration 1 < generation 2: not met" test "$rc" = 3
answer tenant-a w1 "$(ready True 2)"
run ctl wait w1 -n tenant-a --for=condition=Ready --timeout=5s
check "condition: observedGeneration 2: met" test "$rc" = 0

# --- jsonpath
run ctl wait w1 -n tenant-a --for=jsonpath='{.status.connect.nonce}'=n-1 --timeout=5s
check "jsonpath: met: exit 0" test "$rc" = 0
check "jsonpath: kubectl's line" test "$(cat "$T/out")" = "session.lea.io/w1 condition met"
run ctl wait w1 -n tenant-a --for=jsonpath='{.status.phase}'=Paused --timeout=1s
check "jsonpath: not met: exit 3" test "$rc" = 3

# --- absent, deleted
run ctl wait nope -n tenant-a --for=condition=Ready --timeout=5s
check "absent: exit 1" test "$rc" = 1
check "absent: NotFound" grep -q 'Error from server (NotFound): sessions "nope" not found' "$T/err"
run ctl wait nope -n tenant-a --for=delete --timeout=5s
check "delete of an absent one: met at once, silently" sh -c "test $rc = 0 && test ! -s '$T/out'"
bg d1 wait w1 -n tenant-a --for=delete --timeout=20s
bg d2 wait w1 -n tenant-a --for=condition=Failed --timeout=20s
sleep 0.5
check "delete: waiting while it exists" test ! -s "$T/d1.rc"
ctl delete session w1 -n tenant-a --wait=false >/dev/null # no controller runs
check "delete: met: exit 0" test "$(rc_of d1)" = 0
check "delete: kubectl's line" test "$(cat "$T/d1.out")" = "session.lea.io/w1 condition met"
check "condition, deleted meanwhile: exit 1" test "$(rc_of d2)" = 1
check "condition, deleted meanwhile: says so" grep -q 'session tenant-a/w1 was deleted while waiting for the condition' "$T/d2.err"
sess w2 tenant-a | ctl apply -f - >/dev/null
run ctl wait w2 -n tenant-a --for=delete --timeout=1s
check "delete: not deleted: exit 3" test "$rc" = 3

# --- a kube store and kubectl against kube-apiserver-fake
start_kube_fake k
kubeconfig "$T/kc"
export KUBECONFIG="$T/kc"
STORE=kube
kst() { curl -sf -X PATCH -H 'Content-Type: application/merge-patch+json' \
  -d "{\"status\":$3}" "$API/apis/lea.io/v1alpha1/namespaces/$1/sessions/$2/status" >/dev/null; }
sess ka default >"$T/ka.yaml"
sess kb default >"$T/kb.yaml"
ctl apply -f "$T/ka.yaml" >/dev/null
ctl apply -f "$T/kb.yaml" >/dev/null
kst default kb "$(ready True)"
run ctl wait ka --for=condition=Ready --timeout=1s
check "kube: another session's Ready does not meet ka: exit 3" test "$rc" = 3
bg k1 wait ka --for=condition=Ready --timeout=20s
sleep 0.5
kst default ka "$(ready True)"
check "kube: met: exit 0" test "$(rc_of k1)" = 0
check "kube: kubectl's line" test "$(cat "$T/k1.out")" = "session.lea.io/ka condition met"

if ! command -v kubectl >/dev/null 2>&1; then
  echo "skip kubectl wait: kubectl is not installed"
  finish
  exit
fi
REPO=$(cd "$(dirname "$0")/../.." && pwd)
k() { timeout 30 kubectl --kubeconfig "$T/kc" --cache-dir "$T/kcache" "$@"; }
k apply -f "$REPO/deploy/crd.yaml" >/dev/null 2>&1 || fail "kubectl apply the CRD"
sess kc default >"$T/kc.yaml"
k apply -f "$T/kc.yaml" >/dev/null 2>&1 || fail "kubectl apply kc"
# kb is Ready, kc is not: kubectl wait for kc lists and watches with
# fieldSelector=metadata.name=kc, and must not take kb's condition
run k wait --for=condition=Ready session/kc --timeout=2s
check "kubectl wait: another session's Ready does not meet kc" test "$rc" != 0
check "kubectl wait: kubectl's timeout" grep -q 'timed out waiting for the condition on sessions/kc' "$T/err"
check "kubectl wait: not a line about kb" sh -c "! grep -q kb '$T/out'"
( sleep 1; kst default kc "$(ready True)" ) &
PIDS="$PIDS $!"
run k wait --for=condition=Ready session/kc --timeout=15s
check "kubectl wait: met once kc is Ready" test "$rc" = 0
check "kubectl wait: its line" test "$(cat "$T/out")" = "session.lea.io/kc condition met"
# the fake's field selector itself
check "fake: fieldSelector metadata.name" test "$(curl -sf "$API/apis/lea.io/v1alpha1/namespaces/default/sessions?fieldSelector=metadata.name%3Dkb" | jq -c '[.items[].metadata.name]')" = '["kb"]'
check "fake: fieldSelector metadata.name!=" test "$(curl -sf "$API/apis/lea.io/v1alpha1/namespaces/default/sessions?fieldSelector=metadata.name!%3Dkb,metadata.namespace%3Ddefault" | jq -c '[.items[].metadata.name]')" = '["ka","kc"]'
check "fake: another field is 400" test "$(curl -s -o /dev/null -w '%{http_code}' "$API/apis/lea.io/v1alpha1/sessions?fieldSelector=spec.template%3Dshell")" = 400
# the kubectl form of connect: annotate with a new nonce, wait for the answer
nonce=$(openssl rand -hex 8)
run k annotate session/kc "lea.io/connect=$nonce" --overwrite
check "kubectl annotate: exit 0" test "$rc" = 0
check "kubectl annotate: the generation did not move" test "$(curl -sf "$API/apis/lea.io/v1alpha1/namespaces/default/sessions/kc" | jq .metadata.generation)" = 1
( sleep 1; kst default kc "{\"phase\":\"Running\",\"sandboxID\":\"sb-kc\",\"connect\":{\"nonce\":\"$nonce\",\"result\":\"Served\"}}" ) &
PIDS="$PIDS $!"
run k wait "--for=jsonpath={.status.connect.nonce}=$nonce" session/kc --timeout=15s
check "kubectl wait --for=jsonpath the nonce: met" test "$rc" = 0
check "kubectl: the answer" test "$(k get session kc -o jsonpath='{.status.connect.result} {.status.sandboxID}')" = "Served sb-kc"
run ctl wait kc "--for=jsonpath={.status.connect.nonce}=$nonce" --timeout=5s
check "sessionctl wait, the same jsonpath: met" test "$rc" = 0

finish
