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

# --- the delete guard: 11 more orphans make 12 of 12 managed sandboxes
# without a session, over the floor of 2 and over 0.2 of them
check "one orphan: the guard line says it is within the limit" \
  grep -q '^guard: 1 orphan deletion, within the limit' "$T/plan.out"
i=0
while [ $i -lt 11 ]; do
  curl -sf -X POST -H 'Content-Type: application/json' "$SIM/sandboxes" -d \
    "{\"templateID\":\"shell\",\"timeout\":60,\"lifecycle\":{\"onTimeout\":\"pause\",\"autoResume\":true},\"metadata\":{\"lea.session_id\":\"ghost-$i\",\"lea.tenant_id\":\"tenant-a\",\"lea.managed-by\":\"session-controller\"}}" >/dev/null
  i=$((i + 1))
done
sim_advance 900
audit_guard=$(sim_audit | wc -l)
ctl plan --cube-url "$SIM" >"$T/guard.out" 2>&1
rc=$?
check "guard tripped: exit 0" test "$rc" = 0
check "guard tripped: the guard line" grep -qx 'guard: 12 of 12 managed sandboxes have no session (more than 20% and more than 2): a wiped or mis-pointed store? withheld 12 orphan deletions; check the store, then --force deletes them' "$T/guard.out"
check "guard tripped: the held-back deletions listed" test "$(grep -Ec '^held:delete/orphan +- ' "$T/guard.out")" = 12
check "guard tripped: no planned orphan deletion" sh -c "! grep -q '^delete/orphan' '$T/guard.out'"
check "guard tripped: the other actions still planned" grep -Eq '^create +tenant-a/p1 ' "$T/guard.out"
check "guard tripped: no 'No actions' line" sh -c "! grep -q '^No actions' '$T/guard.out'"
ctl plan --cube-url "$SIM" --force >"$T/force.out" 2>&1
check "--force: says the guard is overridden" grep -q '^guard: --force: 12 orphan deletions planned that the guard would hold back' "$T/force.out"
check "--force: 12 orphan deletions planned" test "$(grep -c '^delete/orphan ' "$T/force.out")" = 12
ctl plan --cube-url "$SIM" --max-delete-fraction 1 >"$T/frac.out" 2>&1
check "--max-delete-fraction 1: within the limit" grep -q '^guard: 12 orphan deletions, within the limit' "$T/frac.out"
check "plans with the guard made no mutating call" test "$(sim_audit | wc -l)" = "$audit_guard"

ctl plan --cube-url http://127.0.0.1:1 >/dev/null 2>"$T/err.out"
rc=$?
check "unreachable Cube: exit 1" test "$rc" = 1
check "unreachable Cube: a clear error" grep -q '^error: cube 127.0.0.1:1' "$T/err.out"
ctl plan --orphan-grace soon >/dev/null 2>&1
check "bad flag value: exit 2" test $? = 2

# the capacity flags: three new sessions of one tenant under a running
# budget of 2: two creates planned, the third counted as waiting
for q in q1 q2 q3; do
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s, namespace: tenant-q}\nspec: {template: shell}\n' "$q" | ctl apply -f - >/dev/null
  sleep 0.02 # creation order q1, q2, q3
done
audit_q=$(sim_audit | wc -l)
ctl plan --cube-url "$SIM" --max-running-per-tenant 2 >"$T/quota.out" 2>&1
check "--max-running-per-tenant: exit 0" test $? = 0
check "--max-running-per-tenant: two creates for the tenant" \
  test "$(grep -Ec '^create +tenant-q/' "$T/quota.out")" = 2
check "--max-running-per-tenant: the oldest two" \
  sh -c "grep -Eq '^create +tenant-q/q1 ' '$T/quota.out' && grep -Eq '^create +tenant-q/q2 ' '$T/quota.out'"
check "--max-running-per-tenant: the quota line" \
  grep -qx 'quota: tenant tenant-q: 1 create wait for a running slot (--max-running-per-tenant 2, 2 running)' "$T/quota.out"
ctl plan --cube-url "$SIM" >"$T/noquota.out" 2>&1
check "without the budget: three creates, no quota line" \
  sh -c "test \"\$(grep -Ec '^create +tenant-q/' '$T/noquota.out')\" = 3 && ! grep -q '^quota:' '$T/noquota.out'"
check "the capacity plans made no mutating call" test "$(sim_audit | wc -l)" = "$audit_q"
ctl plan --max-paused -1 >/dev/null 2>"$T/bad.err"
check "bad budget: exit 2" test $? = 2
check "bad budget: names the flag and the range" grep -q -- '--max-paused: "-1" is not a number from 0 to 100000' "$T/bad.err"
finish
