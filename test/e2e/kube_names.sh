#!/bin/sh
# End-to-end: one controller name per store on the kube store. The name is
# recorded on the CRD sessions.lea.io (annotations lea.io/served-by...): a
# second name refuses to start and names the first; --adopt-from renames;
# an API server without the CRD (or without the right to it) records
# nothing, as before, and says so.
. "$(dirname "$0")/lib/common.sh"

if ! command -v kubectl >/dev/null 2>&1; then
  echo "skip kube_names.sh: kubectl is not installed (it applies the CRD)"
  finish
  exit $?
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
start_cubesim --clock-speed 1
start_kube_fake names
kubeconfig "$T/kc"
export KUBECONFIG="$T/kc"
STORE=kube
served_by() { curl -sf "$API/apis/apiextensions.k8s.io/v1/customresourcedefinitions/sessions.lea.io" | jq -r --arg k "$1" '.metadata.annotations[$k] // "none"'; }

# --- no CRD yet: nothing to record on; the controller starts and says so
start_controller nocrd --name a --watch-timeout 2s
check "no CRD: the controller starts" wait_until 10 grep -q 'records no controller name' "$T/nocrd.log"
kill "$CTL_PID"; wait "$CTL_PID" 2>/dev/null

timeout 30 kubectl apply -f "$root/deploy/crd.yaml" >"$T/crd.out" 2>&1 || fail "apply the CRD" "$(cat "$T/crd.out")"
start_controller a1 --name a --watch-timeout 2s; pa=$CTL_PID
check "a: recorded on the CRD" wait_eq 10 a served_by lea.io/served-by
check "a: since when" sh -c "served_by lea.io/served-by-since >/dev/null; [ \"\$(curl -sf '$API/apis/apiextensions.k8s.io/v1/customresourcedefinitions/sessions.lea.io' | jq -r '.metadata.annotations[\"lea.io/served-by-since\"]')\" != null ]"
"$BINDIR/session-controller" --store kube --cube-url "$SIM" --metrics-addr 127.0.0.1:0 --name b --once 2>"$T/b.log"
rc=$?
check "b: refused while a serves the store (exit 1)" test "$rc" = 1
check "b: the refusal names a and the way to rename" grep -q "served by controller 'a'.*refusing to start as 'b'; to rename use --adopt-from a" "$T/b.log"
check "a: still the record" test "$(served_by lea.io/served-by)" = a
kill "$pa"; wait "$pa" 2>/dev/null

# --- the rename
start_controller b1 --name b --adopt-from a --watch-timeout 2s; pb=$CTL_PID
check "rename: b recorded" wait_eq 10 b served_by lea.io/served-by
check "rename: a kept as a former name" test "$(served_by lea.io/former-names)" = a
check "rename: b logs a's sandboxes as its own" wait_until 5 grep -q 'former_name=a' "$T/b1.log"
kill "$pb"; wait "$pb" 2>/dev/null
start_controller b2 --name b --watch-timeout 2s; pb=$CTL_PID
check "rename: b starts again without the flag" wait_until 10 grep -q 'former_name=a' "$T/b2.log"
kill "$pb"; wait "$pb" 2>/dev/null
"$BINDIR/session-controller" --store kube --cube-url "$SIM" --metrics-addr 127.0.0.1:0 --name a --once 2>"$T/a2.log"
check "rename: a is now refused" grep -q "served by controller 'b'" "$T/a2.log"
finish
