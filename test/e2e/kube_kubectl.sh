#!/bin/sh
# End-to-end: plain kubectl against kube-apiserver-fake with the CRD of
# deploy/crd.yaml applied, as against a real API server: apply of the CRD
# (created, unchanged, configured), an object stored before it read through
# its schema, apply of deploy/examples/ with kubectl's default validation
# (no --validate=false), the schema's defaults, unknown fields and wrong
# types refused naming the field, get -w printing every
# change under the CRD's printer columns, the ENDAT column showing a time,
# kubectl explain from the OpenAPI v3 document, CRDs the fake cannot serve
# refused; and the controller (--store kube, against cubesim) writing a
# status the CRD's schema takes whole. Skipped when kubectl is absent.
. "$(dirname "$0")/lib/common.sh"

if ! command -v kubectl >/dev/null 2>&1; then
  echo "skip kube_kubectl.sh: kubectl is not installed"
  finish
  exit
fi
REPO=$(cd "$(dirname "$0")/../.." && pwd)
CRD=${CRD:-$REPO/deploy/crd.yaml}   # CRD=FILE: run with another copy

start_kube_fake k
kubeconfig "$T/kc"
# every kubectl call: this fake, a cache of its own, bounded in time
k() { timeout 30 kubectl --kubeconfig "$T/kc" --cache-dir "$T/kcache" "$@"; }
api() { curl -sf "$API$1"; }
obj() { api "/apis/lea.io/v1alpha1/namespaces/$1/sessions/$2"; }
# out NAME CMD...: run CMD, its stdout and stderr into $T/NAME.out
out() { n=$1; shift; "$@" >"$T/$n.out" 2>&1; }
has() { grep -q -- "$2" "$T/$1.out"; }
# reqlog JQ: the fake's request log (JSON) through jq -e JQ; false on no
# log or a false/null answer
reqlog() { api '/_fake/requests?format=json' >"$T/reqlog.json" && [ -s "$T/reqlog.json" ] &&
  jq -e "$1" "$T/reqlog.json" >/dev/null; }
# lines_ge FILE N: FILE has at least N lines (for wait_until: read anew
# at each try)
lines_ge() { [ -f "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ]; }

# an object stored before the CRD, with fields its schema lacks (in spec
# and in status): later writes see it as read from storage, pruned
curl -sf -X POST -H 'Content-Type: application/json' -d '{"apiVersion":"lea.io/v1alpha1","kind":"Session","metadata":{"name":"legacy"},"spec":{"template":"t","legacySpec":1}}' \
  "$API/apis/lea.io/v1alpha1/namespaces/tenant-l/sessions" >/dev/null
curl -sf -X PATCH -H 'Content-Type: application/merge-patch+json' -d '{"status":{"phase":"Pending","legacyStatus":1}}' \
  "$API/apis/lea.io/v1alpha1/namespaces/tenant-l/sessions/legacy/status" >/dev/null

# --- the CRD
out crd1 k apply -f "$CRD"
check "apply crd: created" has crd1 '^customresourcedefinition.apiextensions.k8s.io/sessions.lea.io created$'
check "an object from before the CRD reads pruned and defaulted" test \
  "$(obj tenant-l legacy | jq -c '[.spec.state, .spec.wake, (.spec | has("legacySpec")), (.status | has("legacyStatus")), .status.phase]')" = '["Active",0,false,false,"Pending"]'
out crd2 k apply -f "$CRD"
check "apply crd again: unchanged" has crd2 '^customresourcedefinition.apiextensions.k8s.io/sessions.lea.io unchanged$'
sed 's/^    categories: \[lea\]$/    categories: [lea, sessions-all]/' \
  "$CRD" >"$T/crd-changed.yaml"
out crd3 k apply -f "$T/crd-changed.yaml"
check "apply a changed crd: configured" has crd3 'sessions.lea.io configured$'
check "the change is stored" test \
  "$(k get crd sessions.lea.io -o jsonpath='{.spec.names.categories}')" = '["lea","sessions-all"]'
out crd4 k apply -f "$CRD"
check "apply the original back: configured" has crd4 'sessions.lea.io configured$'
check "the crd is Established" sh -c \
  "timeout 30 kubectl --kubeconfig '$T/kc' --cache-dir '$T/kcache' wait --for condition=established --timeout=10s crd/sessions.lea.io >/dev/null 2>&1"
out getcrd k get crd
check "get crd: NAME and CREATED AT" has getcrd '^sessions.lea.io  *20[0-9-]*T[0-9:]*Z$'

# --- the examples, with kubectl's default validation
out ex1 k apply -f "$REPO/deploy/examples/"
check "apply examples: 5 created" test "$(grep -c ' created$' "$T/ex1.out")" = 5
check "apply examples: no validation error" sh -c "! grep -qi 'error\|validate' '$T/ex1.out'"
out ex2 k apply -f "$REPO/deploy/examples/"
check "apply examples again: 5 unchanged" test "$(grep -c ' unchanged$' "$T/ex2.out")" = 5
check "kubectl asked for strict field validation" reqlog \
  '[.[] | select(.method == "POST" and (.path | endswith("/sessions")) and (.userAgent | startswith("kubectl")))] | length == 5 and all(.query | test("fieldValidation=Strict"))'

# --- the schema's defaults
cat >"$T/minimal.yaml" <<'YAML'
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: minimal, namespace: tenant-c}
spec: {template: python-data}
YAML
out min k apply -f "$T/minimal.yaml"
check "apply a Session with only template" has min 'session.lea.io/minimal created'
k -n tenant-c get session minimal -o json >"$T/minimal.json" 2>&1
check "default spec.state: Active" test "$(jq -r .spec.state "$T/minimal.json")" = Active
check "default spec.idleTimeout: 15m" test "$(jq -r .spec.idleTimeout "$T/minimal.json")" = 15m
check "default spec.reclaimAfter: 24h" test "$(jq -r .spec.reclaimAfter "$T/minimal.json")" = 24h
check "default spec.wake: 0" test "$(jq -r .spec.wake "$T/minimal.json")" = 0
check "no default for sessionID and tenantID (the controller's)" test \
  "$(jq -r '.spec | has("sessionID") or has("tenantID")' "$T/minimal.json")" = false
check "a value given is kept (chat-91bd: Paused, reclaimAfter 2h)" test \
  "$(obj tenant-a chat-91bd | jq -r '"\(.spec.state) \(.spec.reclaimAfter) \(.spec.idleTimeout)"')" = "Paused 2h 15m"
# a merge patch that removes a defaulted field gets the default back
k -n tenant-c patch session minimal --type merge -p '{"spec":{"state":"Paused"}}' >/dev/null 2>&1
k -n tenant-c patch session minimal --type merge -p '{"spec":{"state":null}}' >/dev/null 2>&1
check "state removed by a patch: Active again" test "$(obj tenant-c minimal | jq -r .spec.state)" = Active

check "an object from before the CRD: a strict patch works" test "$(curl -s -o /dev/null -w '%{http_code}' \
  -X PATCH -H 'Content-Type: application/merge-patch+json' -d '{"spec":{"state":"Paused"}}' \
  "$API/apis/lea.io/v1alpha1/namespaces/tenant-l/sessions/legacy?fieldValidation=Strict")" = 200
check "  and stores it without the fields the schema lacks" test \
  "$(obj tenant-l legacy | jq -c '[.spec.state, .spec.wake, (.spec | has("legacySpec")), (.status | has("legacyStatus")), .status.phase]')" = '["Paused",0,false,false,"Pending"]'

# --- refused: unknown fields, wrong types, values out of the schema
session_yaml() { # NAME SPEC (flow mapping body)
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s, namespace: tenant-c}\nspec: {%s}\n' "$1" "$2" >"$T/$1.yaml"
}
session_yaml unknown 'template: t, foo: 1, wakes: 2'
out unknown k apply -f "$T/unknown.yaml"
check "unknown fields: refused" has unknown 'Error from server (BadRequest)'
check "unknown fields: spec.foo named" has unknown 'unknown field "spec.foo"'
check "unknown fields: spec.wakes named" has unknown 'unknown field "spec.wakes"'
check "unknown fields: nothing stored" test \
  "$(curl -s -o /dev/null -w '%{http_code}' "$API/apis/lea.io/v1alpha1/namespaces/tenant-c/sessions/unknown")" = 404
session_yaml wrongtype 'template: t, wake: lots, idleTimeout: 15'
out wrongtype k apply -f "$T/wrongtype.yaml"
check "wrong types: refused (Invalid)" has wrongtype 'The Session "wrongtype" is invalid'
check "wrong types: spec.wake must be an integer" has wrongtype 'spec.wake: Invalid value: "string": spec.wake in body must be of type integer'
check "wrong types: spec.idleTimeout must be a string" has wrongtype 'spec.idleTimeout: Invalid value: "integer": spec.idleTimeout in body must be of type string'
session_yaml badvalues 'template: "two words", state: Sleeping, wake: -1'
out badvalues k apply -f "$T/badvalues.yaml"
check "enum: spec.state Sleeping unsupported" has badvalues 'spec.state: Unsupported value: "Sleeping": supported values: "Active", "Running", "Paused", "Ended"'
check "pattern: spec.template" has badvalues "spec.template: Invalid value: \"two words\": spec.template in body should match"
check "minimum: spec.wake" has badvalues 'spec.wake: Invalid value: -1: spec.wake in body should be greater than or equal to 0'
# kubectl patch sends no fieldValidation (it has no --validate): the API
# server's default, Warn, drops the field and kubectl prints the Warning
out patchunknown k -n tenant-c patch session minimal --type merge -p '{"spec":{"colour":"red"}}'
check "kubectl patch with an unknown field: a Warning naming it" has patchunknown '^Warning: unknown field "spec.colour"$'
check "kubectl patch with an unknown field: nothing else changed" has patchunknown 'patched (no change)$'
# the same from curl: the Warning header, and the fake's request log
curl -s -D "$T/warn.hdr" -o /dev/null -X PATCH -H 'Content-Type: application/merge-patch+json' \
  -d '{"spec":{"colour":"red"}}' "$API/apis/lea.io/v1alpha1/namespaces/tenant-c/sessions/minimal"
check "no fieldValidation: a Warning header names the field" \
  grep -q 'Warning: 299 - "unknown field \\"spec.colour\\""' "$T/warn.hdr"
check "no fieldValidation: the field is dropped" test "$(obj tenant-c minimal | jq -r '.spec | has("colour")')" = false
check "the request log lists the dropped field" reqlog \
  '[.[] | select(.method == "PATCH")] | last | .dropped == ["spec.colour"]'

# --- OpenAPI: kubectl explain reads the CRD's schema
out explain k explain session.spec.state
check "explain session.spec.state: the enum" sh -c \
  "grep -q 'ENUM' '$T/explain.out' && grep -q 'Paused' '$T/explain.out'"

# --- get -w: a row per change, every row under the CRD's columns
cat >"$T/w1.yaml" <<'YAML'
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: w1, namespace: tenant-w}
spec: {template: python-data, tenantID: team-w}
YAML
k apply -f "$T/w1.yaml" >/dev/null 2>&1
status_patch() { # NS NAME JSON
  curl -sf -X PATCH -H 'Content-Type: application/merge-patch+json' -d "$3" \
    "$API/apis/lea.io/v1alpha1/namespaces/$1/sessions/$2/status" >/dev/null
}
# (the TENANT column reads status.tenantID, as the controller writes it)
status_patch tenant-w w1 '{"status":{"phase":"Pending","sandboxID":"sb-w1","tenantID":"team-w"}}'
timeout 30 kubectl --kubeconfig "$T/kc" --cache-dir "$T/kcache" \
  get sessions -n tenant-w -w >"$T/watch.out" 2>&1 &
WPID=$!
PIDS="$PIDS $WPID"
check "get -w: the header and the first row" wait_until 15 lines_ge "$T/watch.out" 2
k -n tenant-w patch session w1 --type merge -p '{"spec":{"state":"Paused"}}' >/dev/null 2>&1
status_patch tenant-w w1 '{"status":{"phase":"Paused"}}'
check "get -w: a row for each of the 2 changes" wait_until 10 lines_ge "$T/watch.out" 4
sleep 0.5
kill "$WPID" 2>/dev/null
wait "$WPID" 2>/dev/null
check "get -w: 4 lines (header, 3 rows)" test "$(wc -l <"$T/watch.out")" = 4
check "get -w: the CRD's columns" test \
  "$(head -n 1 "$T/watch.out" | tr -s ' ')" = "NAME TENANT STATE PHASE SANDBOX AGE"
check "get -w: every row has all 6 columns" test \
  "$(sed 1d "$T/watch.out" | awk 'NF == 6' | wc -l)" = 3
check "get -w: the rows in order" test \
  "$(sed 1d "$T/watch.out" | awk '{print $3 "/" $4}' | tr '\n' ' ')" = "Active/Pending Paused/Pending Paused/Paused "

# --- ENDAT (priority 1: -o wide) shows the time the controller wrote
status_patch tenant-w w1 '{"status":{"endAt":"2031-05-06T07:08:09Z","observedGeneration":2}}'
out wide k -n tenant-w get session w1 -o wide
check "get -o wide: the ENDAT and OBSERVED columns" test \
  "$(head -n 1 "$T/wide.out" | tr -s ' ')" = "NAME TENANT STATE PHASE SANDBOX AGE ENDAT OBSERVED"
check "get -o wide: ENDAT is the time (not <invalid>)" sh -c \
  "sed -n 2p '$T/wide.out' | grep -q ' 2031-05-06T07:08:09Z  *2$'"
check "AGE is an age" sh -c "sed -n 2p '$T/wide.out' | awk '{print \$6}' | grep -Eq '^[0-9]+[smhdy]'"

# --- CRDs the fake cannot serve, or that a real server would refuse
sed 's/^  group: lea.io$/  group: other.io/; s/^  name: sessions.lea.io$/  name: sessions.other.io/' \
  "$CRD" >"$T/crd-other.yaml"
out crdother k apply -f "$T/crd-other.yaml"
check "a CRD for another resource: refused, saying what the fake serves" has crdother 'serves one custom resource: sessions.lea.io'
sed 's/^                default: Active$/                default: Sleeping/' \
  "$CRD" >"$T/crd-baddefault.yaml"
out crdbad k apply -f "$T/crd-baddefault.yaml"
check "a default outside its enum: refused naming the field" has crdbad \
  'properties\[spec\].properties\[state\].default: Unsupported value: "Sleeping"'

# --- the controller: its status writes fit the CRD's schema
start_cubesim
"$BINDIR/session-controller" --store kube --kubeconfig "$T/kc" \
  --cube-url "$SIM" --metrics-addr 127.0.0.1:0 --resync 1s --replica ctl \
  2>"$T/ctl.log" &
PIDS="$PIDS $!"
phases() { api /apis/lea.io/v1alpha1/namespaces/tenant-a/sessions | jq -r '[.items[] | .status.phase // "-"] | join(" ")'; }
# every tenant-a session has a status the controller wrote
all_observed() { api /apis/lea.io/v1alpha1/namespaces/tenant-a/sessions >"$T/ta.json" && [ -s "$T/ta.json" ] &&
  jq -e '(.items | length) == 3 and all(.items[]; .status.observedGeneration >= 1)' "$T/ta.json" >/dev/null; }
check "controller: wrote the status of the tenant-a sessions" wait_until 20 all_observed
check "controller: it wrote status through the subresource" reqlog \
  '[.[] | select((.userAgent | startswith("session-controller")) and (.path | endswith("/status")))] | length > 0'
check "controller: its writes dropped no field" reqlog \
  '[.[] | select(.userAgent | startswith("session-controller")) | .dropped[]] | length == 0'
out cols k get sessions -n tenant-a
# NAME TENANT STATE PHASE SANDBOX AGE: TENANT is the namespace, from
# status.tenantID (the examples have no spec.tenantID)
check "get: TENANT, PHASE and SANDBOX filled for chat-7f3a" test \
  "$(awk '$1 == "chat-7f3a" && NF == 6 && $2 == "tenant-a" && length($5) > 8 { print "filled" }' "$T/cols.out")" = filled
check "the examples have no spec.tenantID" test \
  "$(obj tenant-a chat-7f3a | jq -r '.spec | has("tenantID")')" = false
# minimal: applied by kubectl above without spec.tenantID
has_tenant_c() { k get sessions -A >"$T/all.out" 2>&1 &&
  [ "$(awk '$1 == "tenant-c" && $2 == "minimal" { print $3 }' "$T/all.out")" = tenant-c ]; }
check "get -A: TENANT of a kubectl-applied Session without spec.tenantID is its namespace" \
  wait_until 20 has_tenant_c
check "get -A: the status says it (status.tenantID)" test \
  "$(obj tenant-c minimal | jq -r .status.tenantID)" = tenant-c
echo "  (tenant-a phases: $(phases))"

# --- connect with plain kubectl: annotate a fresh nonce, wait for the
# answer, as docs/integration.md shows a gateway doing it
nonce=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
out ann k annotate session/chat-7f3a -n tenant-a "lea.io/connect=$nonce" --overwrite
check "connect: kubectl annotate is taken" has ann 'annotated'
out cw k wait session/chat-7f3a -n tenant-a --for="jsonpath={.status.connect.nonce}=$nonce" --timeout=20s
check "connect: kubectl wait sees the answer" has cw 'condition met'
check "connect: Served" test "$(obj tenant-a chat-7f3a | jq -r .status.connect.result)" = Served
check "connect: an envd address to use" test "$(obj tenant-a chat-7f3a | jq -r '.status.envdAddress | startswith("https://49983-")')" = true
out rw k wait --for=condition=Ready session/chat-7f3a -n tenant-a --timeout=20s
check "kubectl wait --for=condition=Ready session/NAME" has rw 'condition met'

finish
