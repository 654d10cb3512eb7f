#!/bin/sh
# End-to-end: the tenant policy (api/policy.h, docs/security.md "Tenant
# policy"). A tenant's spec reaches only its own host workspace, volumes
# and egress: the reproducer (a Session in tenant-a naming tenant-b's
# workspace and volume with internet on) is refused PolicyDenied with no
# Cube call, written through sessionctl, straight into SQLite (every
# optional field absent) and with plain kubectl on the kube fake; the
# own-tenant path, the short form and a narrowed egress are accepted and
# reach the create as the policy makes them; "..", a root's look-alike
# ("tenant-a-evil"), another tenant's volume and an allowOut beyond the
# ceiling are refused; sessionctl apply/validate --policy say the same
# at file:line; a reload that narrows the ceiling shows UpToDate=False and
# reaches the next sandbox; a reload with a syntax error keeps the last
# good policy and says so; a bad file at start refuses to start.
. "$(dirname "$0")/lib/common.sh"

start_cubesim --clock-speed 1 --host-mount-allow /data/ws

cat >"$T/pol.yaml" <<'EOF'
apiVersion: lea.io/v1alpha1
kind: TenantPolicy
defaults:
  workspaceRoots: [/data/ws]
  volumePolicy: tenant-prefix
  egressCeiling: allowlist
  egressAllow: [10.0.0.0/8, pypi.org, "*.example.com"]
tenants:
  "team-*":
    allowedTemplates: ["python-*"]
EOF

# --- a bad policy file refuses to start, naming file, line and field
printf '%s\n' "apiVersion: lea.io/v1alpha1" "kind: TenantPolicy" \
  "defaults:" "  egressCeiling: open" >"$T/bad-pol.yaml"
"$BINDIR/session-controller" --store "sqlite:$T/never.db" --create-store \
  --cube-url "$SIM" --metrics-addr "" --policy "$T/bad-pol.yaml" \
  2>"$T/bad-start.log" &
bpid=$!
PIDS="$PIDS $bpid"
check "a bad policy at start: the controller exits" wait_until 10 sh -c "! kill -0 $bpid"
wait "$bpid" 2>/dev/null; brc=$?
check "a bad policy at start: exit status 1" test "$brc" = 1
check "a bad policy at start: file:line:col and field named" grep -q \
  "bad-pol.yaml:4:18: defaults.egressCeiling: \\\\\"open\\\\\" is not none, allowlist or internet" \
  "$T/bad-start.log"
"$BINDIR/session-controller" --store "sqlite:$T/never.db" --create-store \
  --cube-url "$SIM" --default-internet-access true >/dev/null 2>"$T/bad-flag.log"
check "--default-internet-access true above the default ceiling: refused" \
  grep -q "beyond --egress-ceiling none" "$T/bad-flag.log"

start_controller c1 --policy "$T/pol.yaml"
mport() { metrics_port c1; }
wait_until 10 sh -c "[ -n \"\$(sed -n 's/.*msg=\"serving \/metrics.*port=\([0-9]*\).*/\1/p' '$T/c1.log')\" ]" ||
  fail "c1 did not serve metrics"

# session NAME SPEC-LINES...: a manifest in namespace tenant-a
manifest() {
  n=$1; shift
  { printf '%s\n' "apiVersion: lea.io/v1alpha1" "kind: Session" \
      "metadata: {name: $n, namespace: tenant-a}" "spec:" "  template: python-data"
    for l in "$@"; do printf '  %s\n' "$l"; done; } >"$T/$n.yaml"
}
reason() { sess_field "$1" tenant-a '.status.conditions[]? | select(.type=="Ready") | .reason'; }
message() { sess_field "$1" tenant-a '.status.conditions[]? | select(.type=="Ready") | .message'; }
# ever: sandboxes ever created for session $1 (deleted ones too)
ever() { sim_truth | jq -r --arg s "$1" '[.[] | select(.metadata["lea.session_id"] == $s)] | length'; }
# msg_has NAME PATTERN: the Ready message of NAME matches PATTERN (grep -E)
msg_has() { message "$1" | grep -qE -- "$2"; }
create() { sim_truth | jq -c --arg s "$1" "[.[] | select(.state != \"deleted\" and .metadata[\"lea.session_id\"] == \$s)][0].create | $2"; }

# --- the reproducer, through sessionctl (no policy given to it: the
# controller is the authority)
manifest repro "workspace: {hostPath: /data/ws/tenant-b/chat-9, mountPath: /workspace}" \
  "volumeMounts: [{name: tenant-b-data, path: /mnt/b}]" \
  "network: {allowInternetAccess: true}"
ctl apply -f "$T/repro.yaml" >/dev/null || fail "apply repro"
check "repro: PolicyDenied" wait_eq 10 PolicyDenied reason repro
check "repro: the message names the field and the rule" test \
  "$(message repro)" = "spec.workspace.hostPath: /data/ws/tenant-b/chat-9 is outside tenant-a's workspace root /data/ws/tenant-a (defaults.workspaceRoots in $T/pol.yaml) (and 2 more)"
check "repro: phase Failed" test "$(sess_field repro tenant-a .status.phase)" = Failed
check "repro: no sandbox was ever created" test "$(ever repro)" = 0
check "repro: a warn log line" grep -q 'level=warn msg="the tenant policy refuses the session.*session=tenant-a/repro' "$T/c1.log"
# each of the three alone
manifest vol-b "volumeMounts: [{name: tenant-b-data, path: /mnt/b}]"
manifest net-open "network: {allowInternetAccess: true}"
manifest wide "network: {allowInternetAccess: false, allowOut: [8.8.8.8]}"
manifest evil "workspace: {hostPath: /data/ws/tenant-a-evil/x, mountPath: /workspace}"
manifest slash "workspace: {hostPath: /data/ws/tenant-a/, mountPath: /workspace}"
manifest tmpl-bad "template: shell"
for n in vol-b net-open wide evil slash; do
  ctl apply -f "$T/$n.yaml" >/dev/null || fail "apply $n"
done
check "another tenant's volume: PolicyDenied" wait_eq 10 PolicyDenied reason vol-b
check "another tenant's volume: the message" test "$(message vol-b)" = \
  "spec.volumeMounts[0].name: tenant-b-data does not begin with \"tenant-a-\": tenant tenant-a mounts only its own volumes (volumes tenant-prefix, defaults.volumePolicy in $T/pol.yaml)"
check "internet true above the allowlist ceiling: PolicyDenied" wait_eq 10 PolicyDenied reason net-open
check "internet true: the message" msg_has net-open \
  "^spec.network.allowInternetAccess: true is beyond tenant tenant-a's egress ceiling allowlist \(defaults.egressCeiling in "
check "an allowOut beyond the ceiling: PolicyDenied" wait_eq 10 PolicyDenied reason wide
check "an allowOut beyond the ceiling: the message" msg_has wide \
  "^spec.network.allowOut\[0\]: 8.8.8.8 is not within tenant tenant-a's egress allowlist \(10.0.0.0/8, pypi.org, \*.example.com; "
check "a root's look-alike (tenant-a-evil): PolicyDenied" wait_eq 10 PolicyDenied reason evil
check "a trailing slash: PolicyDenied" wait_eq 10 PolicyDenied reason slash
for n in vol-b net-open wide evil slash; do
  check "$n: no sandbox was ever created" test "$(ever "$n")" = 0
done

# --- accepted: the own-tenant path, the short form, a narrowed egress,
# a spec that asks nothing (the ceiling's list)
manifest own "workspace: {hostPath: /data/ws/tenant-a/chat-1, mountPath: /workspace}" \
  "volumeMounts: [{name: tenant-a-data, path: /mnt/a}]"
manifest short "workspace: {mountPath: /workspace}"
manifest narrow "network: {allowInternetAccess: false, allowOut: [pypi.org, 10.1.0.0/16, api.example.com]}"
manifest plain
for n in own short narrow plain; do
  ctl apply -f "$T/$n.yaml" >/dev/null || fail "apply $n"
  check "$n: a sandbox" wait_eq 10 1 sim_live_for "$n"
done
check "own: the create mounts the tenant's path" \
  test "$(create own '.["host-mount"] | fromjson | .[0].hostPath')" = '"/data/ws/tenant-a/chat-1"'
check "own: its own volume" test "$(create own '.volumeMounts[0].name')" = '"tenant-a-data"'
check "short: ROOT/<tenant>/<session>" \
  test "$(create short '.["host-mount"] | fromjson | .[0]')" = '{"hostPath":"/data/ws/tenant-a/short","mountPath":"/workspace","readOnly":false}'
check "narrow: internet off, its allowOut" \
  test "$(create narrow '[.allow_internet_access, .network.allowOut]')" = '[false,["pypi.org","10.1.0.0/16","api.example.com"]]'
check "plain: internet off, the ceiling's list" \
  test "$(create plain '[.allow_internet_access, .network.allowOut]')" = '[false,["10.0.0.0/8","pypi.org","*.example.com"]]'
check "plain: Running" wait_eq 10 Running sess_field plain tenant-a .status.phase

# --- templates by tenant glob: team-x may start python-* only
printf '%s\n' "apiVersion: lea.io/v1alpha1" "kind: Session" \
  "metadata: {name: t-shell, namespace: team-x}" "spec: {template: shell}" >"$T/t1.yaml"
ctl apply -f "$T/t1.yaml" >/dev/null || fail "apply t-shell"
check "a template outside the tenant's list: PolicyDenied" wait_eq 10 PolicyDenied \
  sess_field t-shell team-x '.status.conditions[]? | select(.type=="Ready") | .reason'
tmsg() { sess_field t-shell team-x '.status.conditions[]? | select(.type=="Ready") | .message'; }
check "the template's message" sh -c "test \"\$1\" = \"spec.template: shell is not among tenant team-x's allowed templates (python-*; tenants.team-*.allowedTemplates in $T/pol.yaml)\"" - "$(tmsg)"

# --- straight into the SQLite store: the reproducer, every optional field
# absent but the three
sqlite3 -cmd ".timeout 10000" "$T/sessions.db" "BEGIN; UPDATE meta SET revision = revision + 1;
  INSERT INTO objects(namespace, name, uid, generation, revision, created_ms,
    deleted_ms, labels, annotations, spec, status)
  SELECT 'tenant-a', 'raw', 'raw-uid', 1, revision, 1795946400000, 0,
    '{}', '{}', '{\"template\":\"shell\",\"workspace\":{\"hostPath\":\"/data/ws/tenant-b/chat-9\",\"mountPath\":\"/workspace\"},\"volumeMounts\":[{\"name\":\"tenant-b-data\",\"path\":\"/mnt/b\"}],\"network\":{\"allowInternetAccess\":true}}', '{}' FROM meta;
  UPDATE meta SET revision = revision + 1;
  INSERT INTO objects(namespace, name, uid, generation, revision, created_ms,
    deleted_ms, labels, annotations, spec, status)
  SELECT 'tenant-a', 'raw-dots', 'raw-uid-2', 1, revision, 1795946400000, 0,
    '{}', '{}', '{\"template\":\"shell\",\"workspace\":{\"hostPath\":\"/data/ws/tenant-a/../tenant-b\",\"mountPath\":\"/workspace\"}}', '{}' FROM meta;
  UPDATE meta SET revision = revision + 1;
  INSERT INTO objects(namespace, name, uid, generation, revision, created_ms,
    deleted_ms, labels, annotations, spec, status)
  SELECT 'tenant-a', 'raw-short', 'raw-uid-3', 1, revision, 1795946400000, 0,
    '{}', '{}', '{\"template\":\"shell\",\"workspace\":{\"mountPath\":\"/workspace\"}}', '{}' FROM meta; COMMIT;" ||
  fail "sqlite3 insert"
check "sqlite-raw: the reproducer is PolicyDenied" wait_eq 10 PolicyDenied reason raw
check "sqlite-raw: .. is PolicyDenied" wait_eq 10 PolicyDenied reason raw-dots
check "sqlite-raw: .. message" msg_has raw-dots "^spec.workspace.hostPath: .* is not in normal form"
check "sqlite-raw: the short form is accepted" wait_eq 10 1 sim_live_for raw-short
check "sqlite-raw: the short form's path" \
  test "$(create raw-short '.["host-mount"] | fromjson | .[0].hostPath')" = '"/data/ws/tenant-a/raw-short"'
for n in raw raw-dots; do
  check "sqlite-raw: $n: no sandbox was ever created" test "$(ever "$n")" = 0
done
check "the gauge counts the denied sessions" wait_until 10 sh -c \
  "curl -sf http://127.0.0.1:$(mport)/metrics | grep -qx 'session_controller_sessions_policy_denied 9'"
# every create Cube saw made a sandbox: none was tried for a denied spec
creates=$(sim_audit | jq -s '[.[] | select(.event == "create")] | length')
check "no create call beyond the accepted sessions" test "$creates" = "$(sim_truth | jq length)"

# --- sessionctl plan --policy plans as the controller does
ctl plan --cube-url "$SIM" --policy "$T/pol.yaml" >"$T/plan.out" 2>&1 ||
  fail "plan --policy" "$(cat "$T/plan.out")"
check "plan --policy: no create for the refused repro" sh -c "! grep -q 'tenant-a/repro' '$T/plan.out'"
ctl plan --cube-url "$SIM" >"$T/plan0.out" 2>&1
check "plan without the policy would create it (so the flag matters)" grep -q '^create .*tenant-a/repro' "$T/plan0.out"

# --- sessionctl apply / validate --policy: the same refusal at file:line
ctl validate --policy "$T/pol.yaml" -f "$T/repro.yaml" >"$T/v.out" 2>&1 &&
  fail "validate --policy accepted the reproducer"
check "validate --policy: the workspace at its line" grep -qF \
  "$T/repro.yaml:6:25: spec.workspace.hostPath: /data/ws/tenant-b/chat-9 is outside tenant-a's workspace root /data/ws/tenant-a (defaults.workspaceRoots in $T/pol.yaml)" "$T/v.out"
check "validate --policy: the volume at its line" grep -qF \
  "$T/repro.yaml:7:25: spec.volumeMounts[0].name: tenant-b-data does not begin with" "$T/v.out"
check "validate --policy: internet at its line" grep -qF \
  "$T/repro.yaml:8:34: spec.network.allowInternetAccess: true is beyond" "$T/v.out"
sed 's/name: repro/name: repro-2/' "$T/repro.yaml" >"$T/repro2.yaml"
ctl apply --policy "$T/pol.yaml" -f "$T/repro2.yaml" >"$T/a.out" 2>&1 &&
  fail "apply --policy accepted the reproducer"
check "apply --policy: refused, nothing applied" grep -q "^error: no objects applied (3 errors)" "$T/a.out"
check "apply --policy: not stored" sh -c "! '$BINDIR/sessionctl' --store '$STORE' get sessions repro-2 -n tenant-a >/dev/null 2>&1"
check "validate --policy: the own path is valid" sh -c \
  "'$BINDIR/sessionctl' validate --policy '$T/pol.yaml' -f '$T/own.yaml' -f '$T/short.yaml' -f '$T/narrow.yaml' | grep -qx '3 objects valid'"
ctl validate --policy "$T/bad-pol.yaml" -f "$T/own.yaml" >"$T/vb.out" 2>&1 &&
  fail "validate with a bad policy file passed"
check "validate with a bad policy file: file:line" grep -q "bad-pol.yaml:4:18: defaults.egressCeiling" "$T/vb.out"

# --- a reload that narrows the ceiling: live sandboxes out of date, the
# next sandbox under the new ceiling
plain_id=$(sess_field plain tenant-a .status.sandboxID)
narrow_id=$(sess_field narrow tenant-a .status.sandboxID)
sed 's/egressCeiling: allowlist/egressCeiling: none/' "$T/pol.yaml" >"$T/pol.new"
mv "$T/pol.new" "$T/pol.yaml"
uptodate() { sess_field "$1" tenant-a '.status.conditions[]? | select(.type=="UpToDate") | "\(.status) \(.reason)"'; }
check "reload: said in the log" wait_until 10 grep -q 'msg="tenant policy reloaded"' "$T/c1.log"
check "reload: plain's sandbox is out of date" wait_eq 10 "False SandboxConfigChanged" uptodate plain
check "reload: the message names the policy" sh -c "'$BINDIR/sessionctl' --store '$STORE' get sessions plain -n tenant-a -o json | jq -r '.status.conditions[] | select(.type==\"UpToDate\") | .message' | grep -q 'or the tenant policy changed'"
check "reload: plain's sandbox is kept" test "$(sess_field plain tenant-a .status.sandboxID)" = "$plain_id"
check "reload: narrow's allowOut is now beyond the ceiling" wait_eq 10 PolicyDenied reason narrow
check "reload: narrow's sandbox is untouched" test "$(sb_field "$narrow_id" state)" = running
manifest after
ctl apply -f "$T/after.yaml" >/dev/null || fail "apply after"
check "reload: a new sandbox under the new ceiling" wait_eq 10 1 sim_live_for after
check "reload: no internet, no allowOut" \
  test "$(create after '[.allow_internet_access, .network.allowOut]')" = '[false,null]'
check "reload: counted ok" sh -c "curl -sf http://127.0.0.1:$(mport)/metrics | grep -qx 'session_controller_policy_reloads_total{result=\"ok\"} 1'"

# --- a reload with a syntax error keeps the last good policy, and says so
printf '%s\n' "apiVersion: lea.io/v1alpha1" "kind: TenantPolicy" \
  "defaults:" "  egressCeiling: [internet" >"$T/pol.new"
mv "$T/pol.new" "$T/pol.yaml"
check "bad reload: the log says the last good policy stays" wait_until 10 \
  grep -q 'level=error msg="cannot reload the tenant policy: the last good policy stays in use".*pol.yaml:5:1' "$T/c1.log"
check "bad reload: last_reload_ok 0" sh -c "curl -sf http://127.0.0.1:$(mport)/metrics | grep -qx 'session_controller_policy_last_reload_ok 0'"
manifest after-bad
ctl apply -f "$T/after-bad.yaml" >/dev/null || fail "apply after-bad"
check "bad reload: a new sandbox still under the last good policy" wait_eq 10 1 sim_live_for after-bad
check "bad reload: no internet, no allowOut (ceiling none, not opened)" \
  test "$(create after-bad '[.allow_internet_access, .network.allowOut]')" = '[false,null]'
check "bad reload: the repro stays refused" test "$(reason repro)" = PolicyDenied
kill "$CTL_PID" 2>/dev/null; wait "$CTL_PID" 2>/dev/null

# --- plain kubectl on the kube fake, with the CRD: the reproducer and the
# short form
if command -v kubectl >/dev/null 2>&1; then
  start_kube_fake kube
  kubeconfig "$T/kc"
  kk() { timeout 30 kubectl --kubeconfig "$T/kc" --cache-dir "$T/kcache" "$@"; }
  kk apply -f "$(dirname "$0")/../../deploy/crd.yaml" >"$T/kubectl.out" 2>&1 ||
    fail "kubectl apply the CRD" "$(cat "$T/kubectl.out")"
  printf '%s\n' "apiVersion: lea.io/v1alpha1" "kind: Session" \
    "metadata: {name: kube-repro, namespace: tenant-a}" "spec:" "  template: shell" \
    "  workspace: {hostPath: /data/ws/tenant-b/chat-9, mountPath: /workspace}" \
    "  volumeMounts: [{name: tenant-b-data, path: /mnt/b}]" \
    "  network: {allowInternetAccess: true}" "---" \
    "apiVersion: lea.io/v1alpha1" "kind: Session" \
    "metadata: {name: kube-short, namespace: tenant-a}" "spec:" "  template: shell" \
    "  workspace: {mountPath: /workspace}" >"$T/k.yaml"
  check "kubectl: apply" sh -c \
    "timeout 30 kubectl --kubeconfig '$T/kc' --cache-dir '$T/kcache' apply -f '$T/k.yaml' >'$T/kubectl.out' 2>&1"
  KUBECONFIG="$T/kc" STORE=kube start_controller c2 --watch-timeout 2s \
    --workspace-root /data/ws --volume-policy tenant-prefix
  kreason() { kk get session "$1" -n tenant-a -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}'; }
  check "kubectl: the reproducer is PolicyDenied" wait_eq 10 PolicyDenied kreason kube-repro
  check "kubectl: no sandbox was ever created for it" test "$(ever kube-repro)" = 0
  check "kubectl: an Event says PolicyDenied" wait_until 10 sh -c \
    "timeout 30 kubectl --kubeconfig '$T/kc' --cache-dir '$T/kcache' get events -n tenant-a -o json | jq -e '[.items[] | select(.reason == \"PolicyDenied\" and .involvedObject.name == \"kube-repro\")] | length == 1'"
  check "kubectl: the short form is accepted" wait_eq 10 1 sim_live_for kube-short
  check "kubectl: the short form's path" \
    test "$(create kube-short '.["host-mount"] | fromjson | .[0].hostPath')" = '"/data/ws/tenant-a/kube-short"'
  check "kubectl: the default ceiling none: no internet" \
    test "$(create kube-short '[.allow_internet_access, .network]')" = '[false,null]'
  kill "$CTL_PID" 2>/dev/null; wait "$CTL_PID" 2>/dev/null
else
  echo "skip kubectl checks: kubectl is not installed"
fi
finish
