#!/bin/sh
# End-to-end: a Session means the same whatever wrote it. Objects with one
# optional field absent (and one with every optional field absent) are
# written (a) straight into the SQLite store with sqlite3, (b) straight to
# the API server (curl, and kubectl apply when kubectl is installed) and
# (c) through sessionctl. Each must get a sandbox tagged with its effective
# sessionID and tenantID (name and namespace by default) and its effective
# idle timeout, go Running, and on delete lose its sandbox (on kube the
# finalizer goes only after the sandbox). Then rule 12: a session deleted
# while the controller is down holds its name until the controller has
# deleted its sandbox; applied again, it gets a new sandbox, never the old
# object's (test/e2e/name_reuse.sh has the other cases).
. "$(dirname "$0")/lib/common.sh"

# name|spec JSON|effective sessionID tag|effective idle timeout (s)
# (namespace and tenant are tenant-x; sessionID absent means the name)
ROWS='all-absent|{"template":"python"}|all-absent|900
no-state|{"template":"python","idleTimeout":"10m","reclaimAfter":"1h","sessionID":"sid-b","tenantID":"tenant-x","wake":0}|sid-b|600
no-idle|{"template":"python","state":"Active","reclaimAfter":"1h","sessionID":"sid-c","tenantID":"tenant-x","wake":0}|sid-c|900
no-reclaim|{"template":"python","state":"Active","idleTimeout":"5m","sessionID":"sid-d","tenantID":"tenant-x","wake":0}|sid-d|300
no-sid|{"template":"python","state":"Active","idleTimeout":"5m","reclaimAfter":"1h","tenantID":"tenant-x","wake":0}|no-sid|300
no-tenant|{"template":"python","state":"Active","idleTimeout":"5m","reclaimAfter":"1h","sessionID":"sid-f","wake":0}|sid-f|300
no-wake|{"template":"python","state":"Active","idleTimeout":"5m","reclaimAfter":"1h","sessionID":"sid-g","tenantID":"tenant-x"}|sid-g|300'

rows() { echo "$ROWS" | cut -d'|' -f1; }
row() { echo "$ROWS" | grep "^$1|" | cut -d'|' -f"$2"; }

# the one live sandbox tagged with sessionID $1 as "sid,tenant,timeout,uid"
sb_of() { sim_truth | jq -r --arg s "$1" '[.[] | select(.state != "deleted" and .metadata["lea.session_id"] == $s)] | if length == 1 then .[0] | [.metadata["lea.session_id"], .metadata["lea.tenant_id"], (.timeout|tostring), .metadata["lea.session_uid"]] | join(",") else "\(length) sandboxes" end'; }

# check_rows PATH-NAME: every row got its sandbox and went Running
check_rows() {
  for rn in $(rows); do
    sid=$(row "$rn" 3); idle=$(row "$rn" 4)
    uid=$(sess_field "$rn" tenant-x .metadata.uid)
    check "$1: $rn: tags, timeout and uid" wait_eq 15 "$sid,tenant-x,$idle,$uid" sb_of "$sid"
    check "$1: $rn: phase Running" wait_eq 10 Running sess_field "$rn" tenant-x .status.phase
    check "$1: $rn: status.tenantID is the effective tenant" test "$(sess_field "$rn" tenant-x .status.tenantID)" = tenant-x
  done
}

# delete_rows PATH-NAME: delete every row; its sandbox goes
delete_rows() {
  for rn in $(rows); do
    ctl delete session "$rn" -n tenant-x >/dev/null 2>&1
  done
  for rn in $(rows); do
    check "$1: $rn: sandbox deleted with its session" wait_eq 15 0 sim_live_for "$(row "$rn" 3)"
  done
}

# --- (a) straight into the SQLite store, as another tool would write it
start_cubesim --clock-speed 1
start_controller ctl-sq --orphan-grace 1m # --create-store: a fresh store
store_made() { sqlite3 "$T/sessions.db" 'SELECT revision FROM meta' >/dev/null 2>&1; }
wait_until 10 store_made || fail "the controller made no store"
i=0
for rn in $(rows); do
  i=$((i + 1))
  spec=$(row "$rn" 2)
  sqlite3 -cmd ".timeout 10000" "$T/sessions.db" "BEGIN; UPDATE meta SET revision = revision + 1;
    INSERT INTO objects(namespace, name, uid, generation, revision, created_ms,
      deleted_ms, labels, annotations, spec, status)
    SELECT 'tenant-x', '$rn', 'raw-uid-$i', 1, revision, 1795946400000, 0,
      '{}', '{}', '$spec', '{}' FROM meta; COMMIT;" || fail "sqlite3 insert $rn"
done
check_rows sqlite-raw
# describe and get say what the controller does with an absent field
ctl describe session all-absent -n tenant-x >"$T/describe.out" 2>&1
check "sqlite-raw: describe shows the default sessionID" grep -q '^  Session ID: *all-absent (default)$' "$T/describe.out"
check "sqlite-raw: describe shows the default tenant" grep -q '^  Tenant ID: *tenant-x (default)$' "$T/describe.out"
check "sqlite-raw: describe shows the default idle timeout" grep -q '^  Idle Timeout: *15m (default)$' "$T/describe.out"
check "sqlite-raw: describe shows the default reclaimAfter" grep -q '^  Reclaim After: *24h (default)$' "$T/describe.out"
check "sqlite-raw: get shows the effective tenant" sh -c "'$BINDIR/sessionctl' --store '$STORE' get sessions all-absent -n tenant-x | grep -q '^all-absent *tenant-x '"
# an object past sessionctl's checks that breaks its rules: reported on
# itself, no sandbox, the others untouched
sqlite3 -cmd ".timeout 10000" "$T/sessions.db" "BEGIN; UPDATE meta SET revision = revision + 1;
  INSERT INTO objects(namespace, name, uid, generation, revision, created_ms,
    deleted_ms, labels, annotations, spec, status)
  SELECT 'tenant-x', 'bad-sid', 'raw-uid-bad', 1, revision, 1795946400000, 0,
    '{}', '{\"note\":\"any text\"}', '{\"template\":\"python\",\"sessionID\":\"no spaces allowed\"}', '{}' FROM meta; COMMIT;" || fail "sqlite3 insert bad-sid"
ready_reason() { sess_field "$1" tenant-x '.status.conditions[]? | select(.type=="Ready") | .reason'; }
check "sqlite-raw: an invalid object gets Ready=False/InvalidSpec" wait_eq 10 InvalidSpec ready_reason bad-sid
check "sqlite-raw: its message names the field" sh -c "'$BINDIR/sessionctl' --store '$STORE' get sessions bad-sid -n tenant-x -o jsonpath='{.status.conditions[0].message}' | grep -q '^spec.sessionID: '"
check "sqlite-raw: no sandbox for it" test "$(sim_live_for 'no spaces allowed')" = 0
check "sqlite-raw: and the others keep theirs" test "$(sim_live_for sid-b)" = 1
check "sqlite-raw: a warning names it once" test "$(grep -c 'session is invalid.*session=bad-sid' "$T/ctl-sq.log")" = 1
ctl delete session bad-sid -n tenant-x >/dev/null
# every optional field absent: 24h reclaim by Cube's clock, as written out
sim_advance 1000
check "sqlite-raw: all-absent idle-paused after the default 15m" wait_eq 10 paused sim_state_of all-absent
sim_advance 86000
sleep 2
check "sqlite-raw: all-absent kept before the default 24h" test "$(sim_state_of all-absent)" = paused
sim_advance 500
check "sqlite-raw: all-absent reclaimed after the default 24h" wait_eq 10 Reclaimed sess_field all-absent tenant-x .status.phase
delete_rows sqlite-raw
kill "$CTL_PID"; wait "$CTL_PID" 2>/dev/null

# --- (c) through sessionctl, with the fields left out of the manifest
rm -f "$T/sessions.db"*
start_controller ctl-ctl --orphan-grace 1m
for rn in $(rows); do
  printf '{"apiVersion":"lea.io/v1alpha1","kind":"Session","metadata":{"name":"%s","namespace":"tenant-x"},"spec":%s}\n' \
    "$rn" "$(row "$rn" 2)" >"$T/$rn.yaml"
  ctl apply -f "$T/$rn.yaml" >/dev/null || fail "sessionctl apply $rn"
done
check_rows sessionctl
delete_rows sessionctl

# --- a template change on a live session is said, not silent
ctl apply -f "$T/all-absent.yaml" >/dev/null
check "template: sandbox created" wait_eq 15 1 sim_live_for all-absent
sed 's/"template":"python"/"template":"python-v2"/' "$T/all-absent.yaml" >"$T/v2.yaml"
check "template: apply says configured" sh -c "'$BINDIR/sessionctl' --store '$STORE' apply -f '$T/v2.yaml' | grep -q configured"
check "template: UpToDate=False/TemplateChanged" wait_eq 10 "False,TemplateChanged" sess_field all-absent tenant-x '.status.conditions[] | select(.type=="UpToDate") | .status + "," + .reason'
check "template: the sandbox is kept" test "$(sim_live_for all-absent)" = 1
ctl describe session all-absent -n tenant-x >"$T/describe2.out" 2>&1
check "template: describe says it applies to the next sandbox" grep -q 'UpToDate.*TemplateChanged.*next sandbox' "$T/describe2.out"
ctl delete session all-absent -n tenant-x >/dev/null
check "template: cleaned up" wait_eq 15 0 sim_live_for all-absent

# --- rule 12 on SQLite: delete and apply again with the controller down
ctl apply -f "$T/all-absent.yaml" >/dev/null
check "rule 12: sandbox for the first object" wait_eq 15 1 sim_live_for all-absent
old=$(sim_truth | jq -r '[.[] | select(.state != "deleted" and .metadata["lea.session_id"] == "all-absent")][0].sandboxID')
olduid=$(sess_field all-absent tenant-x .metadata.uid)
kill "$CTL_PID"; wait "$CTL_PID" 2>/dev/null
ctl delete session all-absent -n tenant-x --wait=false >/dev/null
# the name is held until the controller confirms the old sandbox gone
check "rule 12: apply of the held name is refused" sh -c "! '$BINDIR/sessionctl' --store '$STORE' apply -f '$T/all-absent.yaml' >/dev/null 2>&1"
start_controller ctl-ctl2 --orphan-grace 1m
check "rule 12: the old sandbox is deleted with its object, running, no grace" wait_eq 15 deleted sb_field "$old" state
name_free() { ! ctl get sessions all-absent -n tenant-x >/dev/null 2>&1; }
check "rule 12: then the name is free" wait_until 10 name_free
ctl apply -f "$T/all-absent.yaml" >/dev/null
newuid=$(sess_field all-absent tenant-x .metadata.uid)
check "rule 12: the new object has a new uid" test "$olduid" != "$newuid"
has_link() { [ -n "$(sess_field all-absent tenant-x '.status.sandboxID // ""')" ]; }
check "rule 12: the new object gets a sandbox of its own" wait_until 15 has_link
new=$(sess_field all-absent tenant-x '.status.sandboxID // ""')
check "rule 12: not the old object's sandbox" sh -c "[ -n '$new' ] && [ '$new' != '$old' ]"
check "rule 12: the new sandbox carries the new uid" test "$(sb_field "$new" 'metadata["lea.session_uid"]')" = "$newuid"
check "rule 12: the new one lives on" test "$(sb_field "$new" state)" = running
kill "$CTL_PID"; wait "$CTL_PID" 2>/dev/null

# --- (b) straight to the API server: curl (always) and kubectl (if installed)
start_kube_fake kube
kubeconfig "$T/kc"
export KUBECONFIG="$T/kc"
STORE=kube
start_controller ctl-kube --orphan-grace 1m --watch-timeout 2s
for rn in $(rows); do
  printf '{"apiVersion":"lea.io/v1alpha1","kind":"Session","metadata":{"name":"%s","namespace":"tenant-x"},"spec":%s}' \
    "$rn" "$(row "$rn" 2)" >"$T/$rn.json"
  curl -sf -X POST -H 'Content-Type: application/json' --data-binary @"$T/$rn.json" \
    "$API/apis/lea.io/v1alpha1/namespaces/tenant-x/sessions" >/dev/null || fail "POST $rn"
done
check_rows api-server
# the finalizer goes only after the sandbox: hold deletes at Cube, delete
curl -sf -X POST -d 'delete:error=1@500' "$SIM/_sim/faults" >/dev/null
curl -sf -X DELETE "$API/apis/lea.io/v1alpha1/namespaces/tenant-x/sessions/all-absent" >/dev/null
sleep 3
check "api-server: the sandbox is still there while Cube refuses deletes" test "$(sim_live_for all-absent)" = 1
check "api-server: so the object keeps its finalizer" test "$(curl -s -o /dev/null -w '%{http_code}' "$API/apis/lea.io/v1alpha1/namespaces/tenant-x/sessions/all-absent")" = 200
curl -sf -X POST -d '' "$SIM/_sim/faults" >/dev/null
check "api-server: the sandbox goes once Cube deletes again" wait_eq 15 0 sim_live_for all-absent
check "api-server: then the object is gone" wait_eq 10 404 curl -s -o /dev/null -w '%{http_code}' "$API/apis/lea.io/v1alpha1/namespaces/tenant-x/sessions/all-absent"
delete_rows api-server

if command -v kubectl >/dev/null 2>&1; then
  # as a user does it: the CRD first (its defaults now apply), then plain
  # kubectl apply, validation on
  timeout 30 kubectl apply -f "$(dirname "$0")/../../deploy/crd.yaml" >"$T/kubectl.out" 2>&1 ||
    fail "kubectl apply the CRD" "$(cat "$T/kubectl.out")"
  for rn in $(rows); do
    # the manifest as a user writes it, in YAML
    printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata:\n  name: %s\n  namespace: tenant-x\nspec: %s\n' \
      "$rn" "$(row "$rn" 2)" >"$T/$rn.kube.yaml"
    timeout 20 kubectl apply -f "$T/$rn.kube.yaml" >"$T/kubectl.out" 2>&1 ||
      fail "kubectl apply $rn" "$(cat "$T/kubectl.out")"
  done
  check_rows kubectl
  # the CRD's TENANT column reads status.tenantID: filled for the objects
  # without spec.tenantID too (all-absent, no-tenant)
  timeout 20 kubectl get sessions -A >"$T/kget.out" 2>&1
  check "kubectl get -A: the columns" test \
    "$(head -n 1 "$T/kget.out" | tr -s ' ')" = "NAMESPACE NAME TENANT STATE PHASE SANDBOX AGE"
  check "kubectl get -A: TENANT tenant-x on every row (7 rows)" test \
    "$(awk 'NR > 1 && NF == 7 && $3 == "tenant-x"' "$T/kget.out" | wc -l)" = 7
  check "kubectl get -A: TENANT of an object without spec.tenantID" test \
    "$(awk '$2 == "no-tenant" { print $3 }' "$T/kget.out")" = tenant-x
  for rn in $(rows); do timeout 20 kubectl -n tenant-x delete session "$rn" --wait=false >/dev/null 2>&1; done
  for rn in $(rows); do
    check "kubectl: $rn: sandbox deleted with its session" wait_eq 15 0 sim_live_for "$(row "$rn" 3)"
    check "kubectl: $rn: object gone after its sandbox" wait_eq 10 404 curl -s -o /dev/null -w '%{http_code}' "$API/apis/lea.io/v1alpha1/namespaces/tenant-x/sessions/$rn"
  done
else
  echo "skip kubectl checks: kubectl is not installed"
fi
finish
