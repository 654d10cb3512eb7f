#!/bin/sh
# End-to-end: `sessionctl plan` prints the controller's plan with reasons
# and changes nothing, in Cube or in the store.
. "$(dirname "$0")/lib/common.sh"

start_cubesim --dialect cube
cat >"$T/s.yaml" <<YAML
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: p1, namespace: tenant-a}
spec: {template: python-data}
---
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: p2, namespace: tenant-a}
spec: {template: shell, state: Paused}
YAML
ctl apply -f "$T/s.yaml" >/dev/null
# an orphan: our tags, no session, paused past the grace
g=$(curl -sf -X POST -H 'Content-Type: application/json' "$SIM/sandboxes" -d \
  '{"templateID":"shell","timeout":60,"lifecycle":{"onTimeout":"pause","autoResume":true},"metadata":{"lea.session_id":"ghost","lea.tenant_id":"tenant-a","lea.managed-by":"session-controller"}}' | jq -r .sandboxID)
sim_advance 900
audit_before=$(sim_audit | wc -l)
db_before=$(cksum <"$T/sessions.db")

ctl plan --cube-url "$SIM" >"$T/plan.out" 2>"$T/plan.err"
rc=$?
check "plan exits 0" test "$rc" = 0
check "plan names Cube's clock" grep -q '^Cube clock 20' "$T/plan.out"
check "plan creates the Active session" grep -Eq '^create +tenant-a/p1 +- +no sandbox for session tenant-a/p1' "$T/plan.out"
check "plan creates nothing for the Paused session" sh -c "! grep -q 'tenant-a/p2' '$T/plan.out'"
check "plan deletes the paused orphan, with its reason" grep -Eq "^delete/orphan +- +$g +orphan: " "$T/plan.out"
check "plan made no mutating call" test "$(sim_audit | wc -l)" = "$audit_before"
check "plan left the store unchanged" test "$(cksum <"$T/sessions.db")" = "$db_before"

ctl plan --cube-url "$SIM" --orphan-grace 1h >"$T/plan2.out"
check "--orphan-grace is honoured" sh -c "! grep -q 'delete/orphan' '$T/plan2.out'"

ctl plan --cube-url http://127.0.0.1:1 >/dev/null 2>"$T/err.out"
rc=$?
check "unreachable Cube: exit 1" test "$rc" = 1
check "unreachable Cube: a clear error" grep -q '^error: cube 127.0.0.1:1' "$T/err.out"
ctl plan --orphan-grace soon >/dev/null 2>&1
check "bad flag value: exit 2" test $? = 2
finish
