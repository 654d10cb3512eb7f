#!/bin/sh
# End-to-end: text from Cube (a sandbox's tags) reaches a condition
# message, the log, `sessionctl describe` and `get` as text: ESC/OSC
# sequences, C1 controls, line breaks and bidi overrides are escaped, so
# they cannot retitle a terminal, clear it, fake rows or reorder a line.
. "$(dirname "$0")/lib/common.sh"

start_cubesim --clock-speed 1
start_controller ctl-text --orphan-grace 10m
cat >"$T/s1.yaml" <<YAML
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: s1, namespace: tenant-a}
spec: {template: python, state: Paused}
YAML
ctl apply -f "$T/s1.yaml" >/dev/null
# the forged status goes in once the controller has written its own (a
# raw UPDATE keeps the version, so an earlier one could be overwritten by
# the controller's compare-and-set write, and the test would prove nothing)
settled() { test "$(sess_field "$1" tenant-a '.status.observedGeneration // 0')" = 1; }
wait_until 10 settled s1
# a sandbox whose tenant tag is hostile (ESC ] 0 ; title BEL, a line
# break, CSI as C1, a right-to-left override), linked to s1 by a status
# written straight into the store
evil='evil\u001b]0;pwned\u0007\nrow\u009b2J\u202etxt'
id=$(curl -sf -X POST -H 'Content-Type: application/json' \
  -d "{\"templateID\":\"python\",\"metadata\":{\"lea.tenant_id\":\"$evil\",\"lea.session_id\":\"s1\",\"lea.managed-by\":\"session-controller\"}}" \
  "$SIM/sandboxes" | jq -r .sandboxID)
check "a sandbox with a hostile tag exists" test -n "$id"
sqlite3 -cmd ".timeout 10000" "$T/sessions.db" "UPDATE objects SET status = '{\"sandboxID\":\"$id\"}' WHERE name = 's1'"
has_conflict() { sess_field s1 tenant-a '.status.conditions[]? | select(.type=="Conflict") | .reason' | grep -q TenantMismatch; }
check "the forged link is a tenant conflict" wait_until 10 has_conflict
ctl describe session s1 -n tenant-a >"$T/describe.out" 2>&1
ctl get sessions -A -o wide >"$T/get.out" 2>&1
esc=$(printf '\033')
c1=$(printf '\302\233')
rlo=$(printf '\342\200\256')
for f in describe.out get.out ctl-text.log; do
  check "$f: no raw ESC" sh -c "! grep -q '$esc' '$T/$f'"
  check "$f: no raw C1 CSI" sh -c "! grep -q '$c1' '$T/$f'"
  check "$f: no raw right-to-left override" sh -c "! grep -q '$rlo' '$T/$f'"
done
check "describe shows the tag escaped" grep -q 'evil\\x1b\]0;pwned\\x07\\x0arow\\u009b2J\\u202etxt' "$T/describe.out"
check "the tag's line break fakes no row in describe" test "$(grep -c '^ *row' "$T/describe.out")" = 0
check "the sandbox was not touched" test "$(sb_field "$id" state)" = running

# --- a link alone is not ownership: a status writer points s2 at a
# sandbox with no lea.* tags (another system's); s2 is then Paused and
# Ended: the sandbox is never paused or deleted
foreign=$(curl -sf -X POST -H 'Content-Type: application/json' \
  -d '{"templateID":"python","metadata":{"owner":"another-system"}}' "$SIM/sandboxes" | jq -r .sandboxID)
printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: s2, namespace: tenant-a}\nspec: {template: python, state: Paused}\n' >"$T/s2.yaml"
ctl apply -f "$T/s2.yaml" >/dev/null
wait_until 10 settled s2
sqlite3 -cmd ".timeout 10000" "$T/sessions.db" "UPDATE objects SET status = '{\"sandboxID\":\"$foreign\"}' WHERE name = 's2'"
mismatch() { sess_field s2 tenant-a '.status.conditions[]? | select(.type=="Conflict") | .reason' | grep -q SandboxMismatch; }
check "forged link to an untagged sandbox: a conflict" wait_until 10 mismatch
sleep 2
check "forged link: the foreign sandbox is not paused" test "$(sb_field "$foreign" state)" = running
sed 's/state: Paused/state: Ended/' "$T/s2.yaml" | ctl apply -f - >/dev/null
sleep 3
check "forged link: nor deleted when the session ends" test "$(sb_field "$foreign" state)" = running
check "forged link: no mutating call reached it" test "$(sim_audit | jq -s --arg id "$foreign" '[.[] | select(.sandboxID==$id and .source=="api" and .method!="GET" and .event!="create")] | length')" = 0
finish
