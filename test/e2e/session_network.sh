#!/bin/sh
# End-to-end: the network policy, volume mounts and workspace of a Session
# reach Cube's create request (cubesim's truth shows what each create
# carried under the wire names): a session applied with sessionctl and one
# written straight into the SQLite store with every optional field absent
# (its internet access from --default-internet-access) and one applied
# with kubectl on the kube fake (the CRD's schema, the kube store); a host name in
# allowOut without the deny-all refused at apply with file:line; a change
# on a live session said in UpToDate and carried by the next sandbox after
# a reclaim and a wake; a workspace refused under the E2B dialect.
. "$(dirname "$0")/lib/common.sh"

start_cubesim --clock-speed 1 --host-mount-allow /srv/nfs
# the tenant policy this script's sessions keep (tenant_policy.sh tests the
# policy itself): the NFS root, the models volume, egress as written
cat >"$T/policy.yaml" <<'EOF'
apiVersion: lea.io/v1alpha1
kind: TenantPolicy
defaults:
  workspaceRoots: [/srv/nfs]
  volumePolicy: file
  volumes: [models]
  egressCeiling: internet
EOF
start_controller c1 --default-internet-access false \
  --default-deny-out 169.254.169.254/32 --policy "$T/policy.yaml"

# refused as the service refuses: status code and {"code","message"}
# refused NAME BODY CODE MESSAGE-PART: a create of BODY answers CODE with
# the error shape and a message holding MESSAGE-PART, and makes nothing
refused() {
  before=$(sim_truth | jq length)
  got=$(curl -s -o "$T/refused.json" -w '%{http_code}' -X POST \
    -H 'Content-Type: application/json' -d "$2" "$SIM/sandboxes")
  check "$1: $3" test "$got" = "$3"
  check "$1: the error shape names it" jq -e --argjson c "$3" --arg m "$4" \
    '.code == $c and (.message | contains($m))' "$T/refused.json" >/dev/null
  check "$1: no sandbox" test "$(sim_truth | jq length)" = "$before"
}
refused "cube: a domain with egress open" '{"templateID":"t","network":{"allowOut":["pypi.org"]}}' 400 "allowed domain pypi.org requires all other egress to be denied"
refused "cube: a volume name twice" '{"templateID":"t","volumeMounts":[{"name":"v","path":"/a"},{"name":"v","path":"/b"}]}' 400 "duplicate volume name v"
refused "cube: a host-mount outside the allowlist" '{"templateID":"t","metadata":{"host-mount":"[{\"hostPath\":\"/etc\",\"mountPath\":\"/x\"}]"}}' 400 "not in the host mount allowlist"

# --- via sessionctl: internet off, a package index, a volume, a workspace
cat >"$T/a.yaml" <<'EOF'
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: ws-a, namespace: tenant-a}
spec:
  template: python-data
  idleTimeout: 1m
  reclaimAfter: 2m
  network:
    allowInternetAccess: false
    allowOut: [pypi.org]
  volumeMounts:
  - {name: models, path: /models, readOnly: true}
  workspace: {hostPath: /srv/nfs/tenant-a/ws-a, mountPath: /workspace}
EOF
ctl apply -f "$T/a.yaml" >/dev/null || fail "apply ws-a"
# create SESSION JQ: the create of the live sandbox of SESSION through JQ
create() { sim_truth | jq -c --arg s "$1" "[.[] | select(.state != \"deleted\" and .metadata[\"lea.session_id\"] == \$s)][0].create | $2"; }
check "sessionctl: a sandbox is made" wait_eq 10 1 sim_live_for ws-a
check "sessionctl: the create says allow_internet_access false" \
  test "$(create ws-a .allow_internet_access)" = false
check "sessionctl: the create carries network.allowOut" \
  test "$(create ws-a .network)" = '{"allowOut":["pypi.org"],"denyOut":["169.254.169.254/32"]}'
check "sessionctl: the create carries volumeMounts" \
  test "$(create ws-a .volumeMounts)" = '[{"name":"models","path":"/models","readOnly":true}]'
check "sessionctl: the create carries the workspace as host-mount" \
  test "$(create ws-a '.["host-mount"] | fromjson')" = '[{"hostPath":"/srv/nfs/tenant-a/ws-a","mountPath":"/workspace","readOnly":false}]'
# a session's own allowInternetAccess wins over the controller's default
printf '%s\n' "apiVersion: lea.io/v1alpha1" "kind: Session" \
  "metadata: {name: open-c, namespace: tenant-a}" \
  "spec: {template: shell, network: {allowInternetAccess: true}}" >"$T/c.yaml"
ctl apply -f "$T/c.yaml" >/dev/null || fail "apply open-c"
check "sessionctl: open-c gets a sandbox" wait_eq 10 1 sim_live_for open-c
check "sessionctl: its allowInternetAccess true wins over the default" \
  test "$(create open-c .allow_internet_access)" = true
ida=$(sess_field ws-a tenant-a .status.sandboxID)
check "sessionctl: GET of the sandbox shows its volumeMounts" test \
  "$(curl -sf "$SIM/sandboxes/$ida" | jq -c .volumeMounts)" = '[{"name":"models","path":"/models","readOnly":true}]'

# --- straight into the SQLite store, every optional field absent
sqlite3 -cmd ".timeout 10000" "$T/sessions.db" "BEGIN; UPDATE meta SET revision = revision + 1;
  INSERT INTO objects(namespace, name, uid, generation, revision, created_ms,
    deleted_ms, labels, annotations, spec, status)
  SELECT 'tenant-b', 'raw-b', 'raw-uid-b', 1, revision, 1795946400000, 0,
    '{}', '{}', '{\"template\":\"shell\",\"workspace\":{\"hostPath\":\"/srv/nfs/tenant-b/raw-b\",\"mountPath\":\"/workspace\"}}', '{}' FROM meta; COMMIT;" ||
  fail "sqlite3 insert raw-b"
check "sqlite-raw: a sandbox is made" wait_eq 10 1 sim_live_for raw-b
check "sqlite-raw: internet off by --default-internet-access false" \
  test "$(create raw-b .allow_internet_access)" = false
check "sqlite-raw: denyOut from --default-deny-out" \
  test "$(create raw-b .network)" = '{"denyOut":["169.254.169.254/32"]}'
check "sqlite-raw: no volumeMounts sent" test "$(create raw-b .volumeMounts)" = null
check "sqlite-raw: the workspace as host-mount" \
  test "$(create raw-b '.["host-mount"] | fromjson | .[0].hostPath')" = '"/srv/nfs/tenant-b/raw-b"'

# --- an invalid rule is refused at apply, naming file, line and field
cat >"$T/bad.yaml" <<'EOF'
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: bad-net, namespace: tenant-a}
spec:
  template: python-data
  network:
    allowOut:
    - 10.0.0.0/8
    - pypi.org
    denyOut: [10.1.0.0/16]
EOF
ctl apply -f "$T/bad.yaml" >"$T/bad.out" 2>&1 && fail "apply of bad-net succeeded"
check "apply: a host name without the deny-all refused at file:line" grep -q \
  "^$T/bad.yaml:9:7: spec.network.allowOut\[1\]: \"pypi.org\" is a host name: Cube takes a host name in allowOut only when denyOut holds 0.0.0.0/0 or allowInternetAccess is false" \
  "$T/bad.out"
check "apply: nothing stored" sh -c "! '$BINDIR/sessionctl' --store '$STORE' get sessions bad-net -n tenant-a >/dev/null 2>&1"

# --- a change on a live session: said, and carried by the next sandbox
sed 's/allowOut: \[pypi.org\]/allowOut: [pypi.org, files.pythonhosted.org]/' \
  "$T/a.yaml" >"$T/a2.yaml"
ctl apply -f "$T/a2.yaml" >/dev/null || fail "apply ws-a changed"
uptodate() { sess_field ws-a tenant-a '.status.conditions[]? | select(.type=="UpToDate") | "\(.status) \(.reason)"'; }
check "live change: UpToDate False/SandboxConfigChanged" \
  wait_eq 10 "False SandboxConfigChanged" uptodate
check "live change: the message says it applies to the next sandbox" sh -c \
  "'$BINDIR/sessionctl' --store '$STORE' get sessions ws-a -n tenant-a -o json | jq -r '.status.conditions[] | select(.type==\"UpToDate\") | .message' | grep -q 'apply to the next sandbox'"
check "live change: the running sandbox is kept" \
  test "$(sess_field ws-a tenant-a .status.sandboxID)" = "$ida"
sim_advance 70
check "live change: idle-paused by Cube" wait_eq 10 paused sim_state_of ws-a
sim_advance 130
check "live change: reclaimed" wait_eq 10 Reclaimed sess_field ws-a tenant-a .status.phase
ctl wake ws-a -n tenant-a >/dev/null || fail "wake ws-a"
newid() { id=$(sess_field ws-a tenant-a .status.sandboxID); [ -n "$id" ] && [ "$id" != null ] && [ "$id" != "$ida" ] && echo new; }
check "live change: a new sandbox after the wake" wait_eq 10 new newid
check "live change: the new create carries the new policy" \
  test "$(create ws-a .network.allowOut)" = '["pypi.org","files.pythonhosted.org"]'
check "live change: UpToDate True again" wait_eq 10 "True UpToDate" uptodate

# (c1 is done)
kill "$CTL_PID" 2>/dev/null
wait "$CTL_PID" 2>/dev/null

# --- kubectl on the kube fake, with the CRD: optional fields absent
if command -v kubectl >/dev/null 2>&1; then
  start_kube_fake kube
  kubeconfig "$T/kc"
  kk() { timeout 30 kubectl --kubeconfig "$T/kc" --cache-dir "$T/kcache" "$@"; }
  kk apply -f "$(dirname "$0")/../../deploy/crd.yaml" >"$T/kubectl.out" 2>&1 ||
    fail "kubectl apply the CRD" "$(cat "$T/kubectl.out")"
  printf '%s\n' "apiVersion: lea.io/v1alpha1" "kind: Session" \
    "metadata: {name: kube-d, namespace: tenant-d}" "spec:" \
    "  template: shell" "  network: {allowInternetAccess: false, allowOut: [pypi.org]}" \
    "  workspace: {hostPath: /srv/nfs/tenant-d/kube-d, mountPath: /workspace}" \
    >"$T/d.yaml"
  check "kubectl: apply with validation on" sh -c \
    "timeout 30 kubectl --kubeconfig '$T/kc' --cache-dir '$T/kcache' apply -f '$T/d.yaml' >'$T/kubectl.out' 2>&1"
  KUBECONFIG="$T/kc" STORE=kube start_controller c3 --watch-timeout 2s \
    --policy "$T/policy.yaml"
  check "kubectl: a sandbox is made" wait_eq 10 1 sim_live_for kube-d
  check "kubectl: internet off in the create" \
    test "$(create kube-d .allow_internet_access)" = false
  check "kubectl: the workspace as host-mount" \
    test "$(create kube-d '.["host-mount"] | fromjson | .[0].mountPath')" = '"/workspace"'
  kill "$CTL_PID" 2>/dev/null
  wait "$CTL_PID" 2>/dev/null
else
  echo "skip kubectl checks: kubectl is not installed"
fi
# --- the E2B dialect has no host mounts: the session is refused
start_cubesim --dialect e2b
STORE="sqlite:$T/e2b.db"
start_controller c2 --policy "$T/policy.yaml"
wait_until 10 grep -q 'msg="cube dialect".*dialect=e2b' "$T/c2.log" ||
  fail "the controller did not see the e2b dialect"
ctl apply -f "$T/a.yaml" >/dev/null || fail "apply ws-a (e2b)"
refused "e2b: a domain in denyOut" '{"templateID":"t","network":{"denyOut":["example.com"]}}' 400 "domain names are not supported for deny rules"
refused "e2b: a volume name twice" '{"templateID":"t","volumeMounts":[{"name":"v","path":"/a"},{"name":"v","path":"/b"}]}' 400 "duplicate volume name v"
reason() { sess_field ws-a tenant-a '.status.conditions[]? | select(.type=="Ready") | .reason'; }
check "e2b: a workspace is refused (InvalidSpec)" wait_eq 10 InvalidSpec reason
check "e2b: the message says why" sh -c \
  "'$BINDIR/sessionctl' --store '$STORE' get sessions ws-a -n tenant-a -o json | jq -r '.status.conditions[] | select(.type==\"Ready\") | .message' | grep -q '^spec.workspace: the sandbox service speaks the E2B dialect'"
check "e2b: no sandbox made" test "$(sim_live_for ws-a)" = 0
kill "$CTL_PID" 2>/dev/null; wait "$CTL_PID" 2>/dev/null

# --- Cube down when the controller starts: its dialect probe fails, and
# is asked again at the next full pass, so the E2B refusal still holds
# once Cube is up (before, the dialect stayed unknown for good and a
# workspace session was created without its mount)
dead=$SIM
kill "$SIM_PID" 2>/dev/null; wait "$SIM_PID" 2>/dev/null
STORE="sqlite:$T/e2b-late.db"
start_controller c3 --policy "$T/policy.yaml"
check "cube down: the probe fails" wait_until 10 grep -q 'msg="cube probe failed"' "$T/c3.log"
start_cubesim --dialect e2b --listen "${dead#http://}"
check "cube up again on the same address" test "$SIM" = "$dead"
ctl apply -f "$T/a.yaml" >/dev/null || fail "apply ws-a (e2b, late)"
check "cube up: the dialect probed again" wait_until 10 grep -q 'msg="cube dialect".*dialect=e2b' "$T/c3.log"
check "cube up: the workspace is refused (InvalidSpec)" wait_eq 10 InvalidSpec reason
check "cube up: no sandbox made" test "$(sim_live_for ws-a)" = 0
finish
