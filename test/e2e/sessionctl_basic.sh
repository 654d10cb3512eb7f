#!/bin/sh
# sessionctl_basic.sh - sessionctl end to end on a fresh SQLite store:
# apply (created/unchanged/configured, all or nothing), get (table, wide,
# json, yaml round trip, NotFound), describe, wake, delete, validate, usage
# errors and --help. Prints "N passed, N failed"; exits 1 on any failure.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
BINDIR=${BINDIR:-$root/bin}
CTL="$BINDIR/sessionctl"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sessionctl-e2e.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
S="sqlite:$tmp/s.db"
export SESSION_STORE="$S"
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# expect_rc WANT DESC CMD...: run CMD (stdout > $tmp/out, stderr > $tmp/err)
expect_rc() {
  want=$1; desc=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -eq "$want" ]; then ok; else
    bad "$desc: exit $rc, want $want"; sed 's/^/  | /' "$tmp/out" "$tmp/err"
  fi
}
# has FILE DESC PATTERN: grep -E PATTERN in FILE
has() {
  if grep -Eq -- "$3" "$1"; then ok; else
    bad "$2: no /$3/ in:"; sed 's/^/  | /' "$1"
  fi
}
hasnt() {
  if grep -Eq -- "$3" "$1"; then bad "$2: unexpected /$3/"; else ok; fi
}
same() {
  if [ "$2" = "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi
}

[ -x "$CTL" ] || { echo "no $CTL"; echo "0 passed, 1 failed"; exit 1; }

# --- apply: created, unchanged, configured ---
expect_rc 0 "apply examples" "$CTL" apply -f "$root/deploy/examples/"
same "created lines" "$(grep -c ' created$' "$tmp/out")" 5
has "$tmp/out" "created line format" '^session/chat-7f3a created$'
expect_rc 0 "re-apply" "$CTL" apply -f "$root/deploy/examples/"
same "unchanged lines" "$(grep -c ' unchanged$' "$tmp/out")" 5
sed 's/idleTimeout: 15m/idleTimeout: 20m/' "$root/deploy/examples/tenant-a.yaml" \
  >"$tmp/a.yaml"
expect_rc 0 "apply edited" "$CTL" apply -f "$tmp/a.yaml" \
  -f "$root/deploy/examples/tenant-b.yaml"
has "$tmp/out" "configured" '^session/chat-7f3a configured$'
same "others unchanged" "$(grep -c ' unchanged$' "$tmp/out")" 4
# input order is kept
same "input order" "$(sed -n '1p;4p' "$tmp/out" | tr '\n' ' ')" \
  "session/chat-7f3a configured session/notebook-1 unchanged "
expect_rc 0 "apply from stdin" sh -c "\"$CTL\" apply -f - <\"$tmp/a.yaml\""
has "$tmp/out" "stdin unchanged" '^session/chat-7f3a unchanged$'

# --- apply: all or nothing ---
mkdir "$tmp/mixed"
cat >"$tmp/mixed/a-good.yaml" <<'EOF'
apiVersion: lea.io/v1alpha1
kind: Session
metadata:
  name: fresh-one
  namespace: tenant-c
spec:
  template: python-data
EOF
cat >"$tmp/mixed/b-bad.yaml" <<'EOF'
apiVersion: lea.io/v1alpha1
kind: Session
metadata:
  name: broken
  namespace: tenant-c
spec:
  state: Active
---
apiVersion: lea.io/v1alpha1
kind: Session
metadata:
  name: broken-2
  namespace: tenant-c
spec:
  template: python-data
  idleTimeout: soon
EOF
before=$(cksum <"$tmp/s.db")
expect_rc 1 "apply with a bad file" "$CTL" apply -f "$tmp/mixed"
after=$(cksum <"$tmp/s.db")
same "store byte-for-byte unchanged" "$after" "$before"
has "$tmp/err" "error names file:line and the template field" \
  'b-bad\.yaml:[0-9]+.*template'
has "$tmp/err" "error names file:line and idleTimeout" \
  'b-bad\.yaml:[0-9]+.*idleTimeout'
has "$tmp/err" "summary line" '^error: no objects applied \(2 errors\)$'
hasnt "$tmp/out" "nothing printed as applied" 'created|configured'
expect_rc 1 "get the good object of the refused set" \
  "$CTL" get sessions fresh-one -n tenant-c
# a fresh store path is not even created when the input is invalid
expect_rc 1 "invalid apply to a new store" \
  "$CTL" --store "sqlite:$tmp/never.db" apply -f "$tmp/mixed"
if [ -e "$tmp/never.db" ]; then bad "store file created by a refused apply"
else ok; fi
# every malformed manifest of test/data/bad is refused on its own, with a
# FILE:LINE error, and leaves the store byte-for-byte unchanged
if [ -d "$root/test/data/bad" ]; then
  before=$(cksum <"$tmp/s.db")
  nbad=0
  for f in "$root"/test/data/bad/*.yaml; do
    "$CTL" apply -f "$f" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    b=$(basename "$f")
    if [ "$rc" -ne 1 ] || ! grep -q "$b:[0-9][0-9]*:" "$tmp/err" ||
       [ -s "$tmp/out" ]; then
      nbad=$((nbad + 1)); echo "  not refused properly: $b (exit $rc)"
    fi
  done
  same "every bad manifest refused" "$nbad" 0
  same "store unchanged by bad manifests" "$(cksum <"$tmp/s.db")" "$before"
fi
expect_rc 1 "apply a missing file" "$CTL" apply -f "$tmp/nope.yaml"
has "$tmp/err" "missing file named" 'nope\.yaml'

# --- get ---
expect_rc 0 "get default namespace (empty)" "$CTL" get sessions
has "$tmp/err" "empty list message" '^No resources found in default namespace\.$'
expect_rc 0 "get -n tenant-a" "$CTL" get sessions -n tenant-a
has "$tmp/out" "table header" '^NAME +TENANT +STATE +PHASE +SANDBOX +AGE$'
same "tenant-a rows" "$(($(wc -l <"$tmp/out") - 1))" 3
has "$tmp/out" "row" '^chat-7f3a +tenant-a +Active +<none> +<none> +[0-9]+s$'
expect_rc 0 "get -A" "$CTL" get sess -A
has "$tmp/out" "namespace column" '^NAMESPACE +NAME +TENANT'
same "all rows" "$(($(wc -l <"$tmp/out") - 1))" 5
has "$tmp/out" "tenant-b row" '^tenant-b +notebook-1 +tenant-b +Active'
# header columns line up with the rows
hcol=$(head -n 1 "$tmp/out" | awk '{print index($0, "STATE")}')
rcol=$(grep notebook-1 "$tmp/out" | awk '{print index($0, "Active")}')
same "columns aligned" "$rcol" "$hcol"
expect_rc 0 "get -o wide" "$CTL" get session -n tenant-a -o wide
has "$tmp/out" "wide header" 'AGE +ENDAT +GENERATION +OBSERVED$'
has "$tmp/out" "wide generation" '^chat-7f3a .* 2 +<none>$'
expect_rc 0 "get -o json list" "$CTL" get sessions -A -o json
same "json kind" "$(jq -r .kind "$tmp/out")" List
same "json items" "$(jq '.items | length' "$tmp/out")" 5
expect_rc 0 "get NAME -o json" "$CTL" get session chat-7f3a -n tenant-a -o json
same "json object name" "$(jq -r .metadata.name "$tmp/out")" chat-7f3a
same "json idleTimeout" "$(jq -r .spec.idleTimeout "$tmp/out")" 20m
expect_rc 0 "get session/NAME" "$CTL" get session/notebook-1 -n tenant-b
has "$tmp/out" "slash form row" '^notebook-1 '
expect_rc 0 "get -o name" "$CTL" get sessions -n tenant-b -o name
same "name output" "$(tr '\n' ' ' <"$tmp/out")" \
  "session.lea.io/notebook-1 session.lea.io/scratch "
expect_rc 0 "get -A -o yaml" "$CTL" get sessions -A -o yaml
has "$tmp/out" "yaml list" '^kind: List$'
cp "$tmp/out" "$tmp/all.yaml"
expect_rc 0 "yaml re-applies" "$CTL" apply -f "$tmp/all.yaml"
same "yaml round trip unchanged" "$(grep -c ' unchanged$' "$tmp/out")" 5
expect_rc 0 "get NAME -o yaml" "$CTL" get sessions notebook-1 -n tenant-b -o yaml
has "$tmp/out" "yaml object" '^  name: notebook-1$'
expect_rc 1 "get missing NAME" "$CTL" get sessions nope -n tenant-a
has "$tmp/err" "NotFound message" \
  '^Error from server \(NotFound\): sessions "nope" not found$'
expect_rc 1 "get one found one missing" \
  "$CTL" get sessions chat-7f3a nope -n tenant-a
has "$tmp/out" "the found one printed" '^chat-7f3a '

# --- describe ---
expect_rc 0 "describe" "$CTL" describe session chat-7f3a -n tenant-a
has "$tmp/out" "describe name" '^Name: +chat-7f3a$'
has "$tmp/out" "describe labels" '^Labels: +course=cs101$'
has "$tmp/out" "describe spec" '^  Idle Timeout: +20m$'
has "$tmp/out" "describe env" '^  Env Vars: +LANG=C.UTF-8$'
has "$tmp/out" "describe status" '^Status:$'
has "$tmp/out" "describe conditions" '^Conditions: +<none>$'
expect_rc 1 "describe missing" "$CTL" describe session nope -n tenant-a
has "$tmp/err" "describe NotFound" 'NotFound'
# a status as a controller writes it (sqlite3 stands in for the controller)
sqlite3 "$tmp/s.db" "UPDATE objects SET status='{\"phase\":\"Creating\",\"observedGeneration\":1,\"createIntent\":{\"by\":\"r0#1a2b3c4d\",\"at\":\"2026-11-29T10:14:50Z\"}}' WHERE namespace='tenant-a' AND name='chat-7f3a'"
expect_rc 0 "describe with a status" "$CTL" describe session chat-7f3a -n tenant-a
has "$tmp/out" "describe phase" '^  Phase: +Creating$'
has "$tmp/out" "describe create claim by" '^  Create Claimed By: +r0#1a2b3c4d$'
has "$tmp/out" "describe create claim at" '^  Create Claimed At: +2026-11-29T10:14:50Z$'

# --- wake (more in sessionctl_output.sh) ---
gen=$("$CTL" get sessions chat-91bd -n tenant-a -o json | jq .metadata.generation)
expect_rc 0 "wake, not Reclaimed" "$CTL" wake chat-91bd -n tenant-a
has "$tmp/err" "wake, not Reclaimed: says so" 'is not Reclaimed: nothing to wake'
same "wake, not Reclaimed: generation kept" \
  "$("$CTL" get sessions chat-91bd -n tenant-a -o json | jq .metadata.generation)" "$gen"
# a reclaim as a controller records it (sqlite3 stands in for the controller)
sqlite3 "$tmp/s.db" "UPDATE objects SET status='{\"phase\":\"Reclaimed\",\"reclaimedGeneration\":$gen}' WHERE namespace='tenant-a' AND name='chat-91bd'"
expect_rc 0 "wake" "$CTL" wake chat-91bd -n tenant-a
has "$tmp/out" "wake message" '^session/chat-91bd woken \(wake=1\)$'
"$CTL" get sessions chat-91bd -n tenant-a -o json >"$tmp/j"
same "wake bumped generation" "$(jq .metadata.generation "$tmp/j")" $((gen + 1))
same "spec.wake" "$(jq .spec.wake "$tmp/j")" 1
expect_rc 0 "wake again --force" "$CTL" wake session chat-91bd -n tenant-a --force
has "$tmp/out" "wake=2" 'wake=2'
expect_rc 1 "wake missing" "$CTL" wake nope

# --- delete ---
expect_rc 0 "delete" "$CTL" delete session scratch -n tenant-b
has "$tmp/out" "delete message" '^session "scratch" deleted$'
expect_rc 1 "get deleted" "$CTL" get sessions scratch -n tenant-b
expect_rc 0 "list without the deleted" "$CTL" get sessions -n tenant-b
hasnt "$tmp/out" "tombstone not listed" 'scratch'
expect_rc 1 "delete again" "$CTL" delete session scratch -n tenant-b
has "$tmp/err" "delete NotFound" 'NotFound.*"scratch"'
expect_rc 0 "delete --ignore-not-found" \
  "$CTL" delete session scratch -n tenant-b --ignore-not-found
expect_rc 0 "delete -f" "$CTL" delete -f "$root/deploy/examples/tenant-b.yaml" \
  --ignore-not-found
has "$tmp/out" "delete -f message" '^session "notebook-1" deleted$'
expect_rc 0 "re-apply over tombstones" "$CTL" apply -f "$root/deploy/examples/"
same "recreated" "$(grep -c ' created$' "$tmp/out")" 2

# --- validate (offline) ---
expect_rc 0 "validate good" \
  "$CTL" --store "sqlite:$tmp/v.db" validate -f "$root/deploy/examples/"
has "$tmp/out" "validate count" '^5 objects valid$'
expect_rc 1 "validate bad" "$CTL" --store "sqlite:$tmp/v.db" validate -f "$tmp/mixed"
has "$tmp/err" "validate prints every error" 'b-bad\.yaml:[0-9]+.*idleTimeout'
has "$tmp/err" "validate prints every error (2)" 'b-bad\.yaml:[0-9]+.*template'
if [ -e "$tmp/v.db" ]; then bad "validate opened a store"; else ok; fi
printf 'kind: Session\napiVersion: lea.io/v1alpha1\nmetadata: {name: x}\nspec: {template: t}\n' \
  >"$tmp/one.yaml"
expect_rc 0 "validate stdin" sh -c "\"$CTL\" validate -f - <\"$tmp/one.yaml\""

# --- usage errors: exit 2 with the hint ---
for args in "" "bogus" "get" "get pods" "get sessions --bogus" "apply" \
            "get sessions -o xml" "wake" "describe session" "delete" \
            "get sessions -A -n x" "get sessions a -A" "validate" \
            "get sessions -n Bad_NS" "--store"; do
  # shellcheck disable=SC2086
  expect_rc 2 "usage: sessionctl $args" "$CTL" $args
  has "$tmp/err" "usage hint: $args" "Run 'sessionctl --help' for usage\."
done

# --- help and version: exit 0 ---
expect_rc 0 "--help" "$CTL" --help
has "$tmp/out" "top help lists commands" '^  apply -f'
has "$tmp/out" "top help names the sqlite store" '^ +sqlite:PATH +a SQLite'
has "$tmp/out" "top help names the kube store" '^ +kube +the Kubernetes API server'
has "$tmp/out" "top help: how kube finds its kubeconfig" 'KUBECONFIG'
has "$tmp/out" "top help names kube:CONTEXT" '^ +kube:CONTEXT '
for c in get apply delete describe wake plan; do
  expect_rc 0 "$c --help" "$CTL" "$c" --help
  has "$tmp/out" "$c help names both store kinds" 'sqlite:PATH or kube\[:CONTEXT\]'
done
expect_rc 0 "get --help" "$CTL" get --help
has "$tmp/out" "get help names jsonpath" 'jsonpath=TEMPLATE'
has "$tmp/out" "get help: -o name form" 'session\.lea\.io/NAME'
expect_rc 0 "apply --help" "$CTL" apply --help
has "$tmp/out" "apply help: JSON and *.json" '\*\.json'
# --version only before a command, as the top help says
expect_rc 2 "--version after a command" "$CTL" get --version
for c in apply get describe delete validate wake; do
  expect_rc 0 "$c --help" "$CTL" "$c" --help
  has "$tmp/out" "$c help has usage" "sessionctl $c"
done
expect_rc 0 "--version" "$CTL" --version
has "$tmp/out" "version" '^sessionctl [0-9]'

# --- store errors: exit 1 ---
expect_rc 1 "bad store URL" "$CTL" --store "nosuch:x" get sessions
has "$tmp/err" "store error message" '^error: '
expect_rc 1 "bad store URL option" "$CTL" --store "sqlite:$tmp/s.db?bogus=1" get sessions
expect_rc 0 "SESSION_STORE used" "$CTL" get sessions -n tenant-a -o name
same "SESSION_STORE rows" "$(wc -l <"$tmp/out" | tr -d ' ')" 3

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
