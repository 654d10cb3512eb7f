#!/bin/sh
# sessionctl_output.sh - output and errors a script can use, on a SQLite
# store: get -o json|yaml always prints a List (empty too) or the object,
# never a message on stdout; -o name; -o jsonpath=TEMPLATE; get -w -o json
# one object per line; get -o json|yaml | apply -f - changes nothing (the
# generation is kept), from stdin, a file and a directory; JSON input with
# FILE:LINE:COL errors; the validate summary counts every object read;
# wake says what it did and leaves a session that is not Reclaimed alone;
# the round trip on a kube store (kube-apiserver-fake) keeps the server's
# finalizer.
. "$(dirname "$0")/lib/common.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

# jqtrue FILE FILTER: FILE holds one JSON value and FILTER on it is true
# (jq 1.6 -e says 0 for an empty input: check the output itself)
jqtrue() { [ "$(jq -s "length == 1 and (.[0] | $2)" "$1" 2>/dev/null)" = true ]; }
# run CMD...: stdout in $T/out, stderr in $T/err, status in $rc
run() { "$@" >"$T/out" 2>"$T/err"; rc=$?; }
gens() { ctl get sessions -A -o 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}={.metadata.generation} {end}'; }
set_status() { sqlite3 "$T/sessions.db" "UPDATE objects SET status='$3' WHERE namespace='$1' AND name='$2'"; }

# --- an empty store: valid JSON/YAML Lists on stdout, the message on stderr
# (a store that exists and holds no session: made by store init)
ctl store init >/dev/null 2>&1 || fail "store init"
run ctl get sessions -o json
check "empty get -o json: exit 0" test "$rc" = 0
check "empty get -o json: a List with 0 items" \
  jqtrue "$T/out" '.apiVersion == "v1" and .kind == "List" and (.items | length) == 0 and (.metadata | type) == "object"'
check "empty get -o json: nothing but JSON on stdout" sh -c "! grep -q 'No resources' '$T/out'"
check "empty get -o json: the message on stderr" grep -q '^No resources found in default namespace\.$' "$T/err"
run ctl get sessions -A -o json
check "empty get -A -o json: a List with 0 items" jqtrue "$T/out" '.kind == "List" and .items == []'
run ctl get sessions -o yaml
check "empty get -o yaml: kind List" grep -q '^kind: List$' "$T/out"
check "empty get -o yaml: items: []" grep -q '^items: \[\]$' "$T/out"
run ctl get sessions -o name
check "empty get -o name: nothing on stdout" test ! -s "$T/out"
run ctl get sessions -o 'jsonpath={.kind}:{.items[*].metadata.name}.'
check "empty get -o jsonpath: the List is the root" test "$(cat "$T/out")" = "List:."

ctl apply -f "$root/deploy/examples/" >/dev/null || fail "seed apply"

# --- -o name
run ctl get sessions -n tenant-a -o name
check "-o name: session.lea.io/NAME lines" test "$(tr '\n' ' ' <"$T/out")" = \
  "session.lea.io/agent-run-42 session.lea.io/chat-7f3a session.lea.io/chat-91bd "
run ctl get session.lea.io/chat-7f3a -n tenant-a -o name
check "-o name takes its own form back" test "$(cat "$T/out")" = "session.lea.io/chat-7f3a"

# --- -o json: a named get is the object, several names a List
run ctl get session chat-7f3a -n tenant-a -o json
check "named get -o json: the object" jqtrue "$T/out" '.kind == "Session" and .metadata.name == "chat-7f3a"'
run ctl get sessions chat-7f3a nope -n tenant-a -o json
check "found and missing: exit 1" test "$rc" = 1
check "found and missing: a List of the found one" jqtrue "$T/out" '.kind == "List" and (.items | map(.metadata.name)) == ["chat-7f3a"]'
run ctl get sessions nope -n tenant-a -o json
check "one missing NAME: nothing on stdout" test ! -s "$T/out"

# --- -o jsonpath
sqlite_status='{"phase":"Running","sandboxID":"sb-7c8f","observedGeneration":1,"conditions":[{"type":"Ready","status":"True","reason":"SandboxRunning"},{"type":"Conflict","status":"False","reason":"Resolved"}]}'
set_status tenant-a chat-7f3a "$sqlite_status"
run ctl get session chat-7f3a -n tenant-a -o 'jsonpath={.status.sandboxID}'
check "jsonpath {.status.sandboxID}" test "$(cat "$T/out")" = sb-7c8f
check "jsonpath adds no newline" test "$(wc -c <"$T/out" | tr -d ' ')" = 7
run ctl get session chat-91bd -n tenant-a -o 'jsonpath=[{.status.sandboxID}]'
check "jsonpath: a missing field prints nothing" test "$(cat "$T/out")" = "[]"
run ctl get sessions -n tenant-a -o 'jsonpath={.items[*].metadata.name}'
check "jsonpath {.items[*].metadata.name}" test "$(cat "$T/out")" = "agent-run-42 chat-7f3a chat-91bd"
run ctl get sessions -A -o 'jsonpath={range .items[*]}{.metadata.name}{"\t"}{.spec.state}{"\n"}{end}'
printf 'agent-run-42\tRunning\nchat-7f3a\tActive\nchat-91bd\tPaused\nnotebook-1\tActive\nscratch\tEnded\n' >"$T/want"
check "jsonpath range with tab and newline literals" cmp -s "$T/out" "$T/want"
run ctl get sessions -n tenant-a -o 'jsonpath=first={.items[0].metadata.name} last={.items[-1].metadata.name}'
check "jsonpath [N], [-1] and literal text" test "$(cat "$T/out")" = "first=agent-run-42 last=chat-91bd"
run ctl get session chat-7f3a -n tenant-a -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'
check "jsonpath filter" test "$(cat "$T/out")" = True
run ctl get session chat-7f3a -n tenant-a -o "jsonpath={.metadata.labels['course']}"
check "jsonpath ['key']" test "$(cat "$T/out")" = cs101
run ctl get sessions -o 'jsonpath={.items[*].metadata.name'
check "bad jsonpath: exit 2" test "$rc" = 2
check "bad jsonpath: says what is wrong" grep -q '^error: error parsing jsonpath {.items\[\*\].metadata.name: unclosed action at column 1$' "$T/err"
check "bad jsonpath: nothing on stdout" test ! -s "$T/out"
run ctl get sessions -o 'jsonpath={range .items[*]}{.metadata.name}'
check "jsonpath range without end: exit 2" test "$rc" = 2
check "jsonpath range without end: message" grep -q 'without an {end}' "$T/err"
run ctl get sessions -o jsonpath
check "-o jsonpath without a template: exit 2" test "$rc" = 2
check "-o jsonpath without a template: message" grep -q 'no template given' "$T/err"

# --- round trip: get -o json|yaml | apply -f - changes nothing
before=$(gens)
run sh -c "\"$BINDIR/sessionctl\" --store \"$STORE\" get sessions -A -o json | \"$BINDIR/sessionctl\" --store \"$STORE\" apply -f -"
check "json round trip via stdin: exit 0" test "$rc" = 0
check "json round trip via stdin: 5 unchanged" test "$(grep -c ' unchanged$' "$T/out")" = 5
check "json round trip: no error output" test ! -s "$T/err"
check "json round trip: generations unchanged" test "$(gens)" = "$before"
ctl get sessions -A -o json >"$T/all.json"
run ctl apply -f "$T/all.json"
check "json round trip from a file: 5 unchanged" test "$(grep -c ' unchanged$' "$T/out")" = 5
mkdir "$T/dir" && cp "$T/all.json" "$T/dir/all.json"
run ctl apply -f "$T/dir"
check "a directory's *.json is read: 5 unchanged" test "$(grep -c ' unchanged$' "$T/out")" = 5
ctl get session chat-7f3a -n tenant-a -o json >"$T/one.json"
run ctl apply -f "$T/one.json"
check "named object (with a status) round trip: unchanged" test "$(cat "$T/out")" = "session/chat-7f3a unchanged"
ctl get sessions -A -o yaml >"$T/all.yaml"
check "-o yaml keeps the store's fields" grep -q '^    resourceVersion: ' "$T/all.yaml"
run ctl apply -f "$T/all.yaml"
check "yaml round trip: 5 unchanged" test "$(grep -c ' unchanged$' "$T/out")" = 5
check "after every round trip: generations unchanged" test "$(gens)" = "$before"
# a List as the kube API server types it
jq '.kind = "SessionList" | .apiVersion = "lea.io/v1alpha1"' "$T/all.json" >"$T/typed.json"
run ctl apply -f "$T/typed.json"
check "SessionList: 5 unchanged" test "$(grep -c ' unchanged$' "$T/out")" = 5
# an edited spec does change: the round trip would have seen a change
jq '(.items[] | select(.metadata.name == "scratch") | .spec.idleTimeout) = "7m"' \
  "$T/all.json" >"$T/edited.json"
run ctl apply -f "$T/edited.json"
check "edited JSON: configured" grep -q '^session/scratch configured$' "$T/out"
check "edited JSON: the generation moved" test "$(sess_field scratch tenant-b .metadata.generation)" = 2
# JSON errors carry FILE:LINE:COL
jq '.items[0].spec.wake = "x"' "$T/all.json" >"$T/bad.json"
line=$(grep -n '"wake": "x"' "$T/bad.json" | cut -d: -f1)
run ctl apply -f "$T/bad.json"
check "bad JSON: exit 1" test "$rc" = 1
check "bad JSON: FILE:LINE:COL: FIELD" grep -q "bad.json:$line:[0-9]*: items\[0\]\.spec\.wake: expected an integer, got a string" "$T/err"

# --- the validate summary counts every object read
cat >"$T/v.yaml" <<'EOF'
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: v-1}
spec: {template: t, idleTimeout: soon}
---
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: v-2}
spec: {state: Asleep}
---
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: v-3}
spec: {template: t}
EOF
run ctl validate -f "$T/v.yaml"
check "validate with errors: exit 1" test "$rc" = 1
check "validate summary: 3 errors in 3 objects read" grep -q '^error: 3 errors in 3 objects read$' "$T/err"
run ctl validate -f "$T/bad.json"
check "validate summary of a List: 1 error in 5 objects read" grep -q '^error: 1 error in 5 objects read$' "$T/err"

# --- wake says what it did, and leaves a session that is not Reclaimed alone
g0=$(sess_field chat-91bd tenant-a .metadata.generation)
run ctl wake chat-91bd -n tenant-a
check "wake, no status yet: exit 0" test "$rc" = 0
check "wake, no status yet: nothing on stdout" test ! -s "$T/out"
check "wake, no status yet: says so" grep -q '^session tenant-a/chat-91bd has no status yet (no controller has seen it), so it is not Reclaimed: nothing to wake; spec.wake left at 0' "$T/err"
check "wake, no status yet: generation unchanged" test "$(sess_field chat-91bd tenant-a .metadata.generation)" = "$g0"
set_status tenant-a chat-91bd '{"phase":"Paused","sandboxID":"sb-1","observedGeneration":1}'
run ctl wake session chat-91bd -n tenant-a
check "wake a Paused session: says it is not Reclaimed" grep -q '^session tenant-a/chat-91bd is Paused, not Reclaimed: nothing to wake; spec.wake left at 0' "$T/err"
check "wake a Paused session: generation unchanged" test "$(sess_field chat-91bd tenant-a .metadata.generation)" = "$g0"
set_status tenant-a chat-91bd "{\"phase\":\"Reclaimed\",\"observedGeneration\":$g0,\"reclaimedGeneration\":$g0}"
run ctl wake chat-91bd -n tenant-a
check "wake a Reclaimed session: woken" test "$(cat "$T/out")" = "session/chat-91bd woken (wake=1)"
check "wake a Reclaimed session: generation bumped" test "$(sess_field chat-91bd tenant-a .metadata.generation)" = $((g0 + 1))
run ctl wake chat-91bd -n tenant-a
check "wake again: already woken, nothing on stdout" test ! -s "$T/out"
check "wake again: says a wake is pending" grep -q "^session tenant-a/chat-91bd is already woken (generation $((g0 + 1)) is past reclaimedGeneration $g0)" "$T/err"
check "wake again: spec.wake still 1" test "$(sess_field chat-91bd tenant-a .spec.wake)" = 1
run ctl wake chat-7f3a -n tenant-a --force
check "wake --force on a Running session: bumps" test "$(cat "$T/out")" = "session/chat-7f3a woken (wake=1)"
run ctl wake nope -n tenant-a
check "wake a missing session: exit 1" test "$rc" = 1

# --- get -w -o json: one compact, valid object per line
"$BINDIR/sessionctl" --store "$STORE" get sessions -n tenant-a -w -o json >"$T/w.json" 2>"$T/w.err" &
wp=$!
PIDS="$PIDS $wp"
check "watch -o json: the list, one line per object" wait_until 5 sh -c "[ \$(wc -l <'$T/w.json') -ge 3 ]"
ctl wake chat-7f3a -n tenant-a --force >/dev/null
check "watch -o json: the change as one more line" wait_until 5 sh -c "[ \$(wc -l <'$T/w.json') -ge 4 ]"
kill "$wp"; wait "$wp" 2>/dev/null
nbad=0; nl=0
while IFS= read -r l; do
  nl=$((nl + 1))
  [ "$(printf '%s\n' "$l" | jq '.kind == "Session" and (.metadata.name | type) == "string"' 2>/dev/null)" = true ] || nbad=$((nbad + 1))
done <"$T/w.json"
check "watch -o json: 4 lines, each a whole Session object ($nl lines, $nbad bad)" test "$nl" = 4 -a "$nbad" = 0
check "watch -o json: the last line is the change" test "$(tail -n 1 "$T/w.json" | jq -r '.metadata.name + " " + (.spec.wake | tostring)')" = "chat-7f3a 2"
"$BINDIR/sessionctl" --store "$STORE" get sessions -n tenant-b -w -o json --output-watch-events >"$T/we.json" 2>/dev/null &
wp=$!
PIDS="$PIDS $wp"
check "watch events -o json: one line per object" wait_until 5 sh -c "[ \$(wc -l <'$T/we.json') -ge 2 ]"
kill "$wp"; wait "$wp" 2>/dev/null
check "watch events -o json: each line {type, object}" test "$(jq -c '[.type, .object.metadata.name]' "$T/we.json" | tr '\n' ' ')" = '["ADDED","notebook-1"] ["ADDED","scratch"] '

# --- -o name feeds other commands
run sh -c "\"$BINDIR/sessionctl\" --store \"$STORE\" get sessions -n tenant-b -o name | xargs \"$BINDIR/sessionctl\" --store \"$STORE\" delete -n tenant-b"
check "get -o name | xargs delete: both deleted" test "$(grep -c ' deleted$' "$T/out")" = 2

# --- the round trip on a kube store (kube-apiserver-fake): the server's
# metadata is ignored on the way in and kept on the server (a finalizer
# the controller added survives an apply of a manifest without it)
echo tok-1 >"$T/token"
start_kube_fake out --token-file "$T/token"
kubeconfig "$T/kc" "" "    tokenFile: token"
kctl() { KUBECONFIG="$T/kc" "$BINDIR/sessionctl" --store kube "$@"; }
kapi() { curl -sf -H "Authorization: Bearer tok-1" "$@"; }
kctl apply -f "$root/deploy/examples/" >/dev/null || fail "kube: seed apply"
kapi -X PATCH -H 'Content-Type: application/merge-patch+json' \
  -d '{"metadata":{"finalizers":["lea.io/sandbox-cleanup"]}}' \
  "$API/apis/lea.io/v1alpha1/namespaces/tenant-a/sessions/chat-7f3a" >/dev/null ||
  fail "kube: add a finalizer"
kgens() { kctl get sessions -A -o 'jsonpath={range .items[*]}{.metadata.name}={.metadata.generation} {end}'; }
kbefore=$(kgens)
kctl get sessions -A -o json >"$T/kube.json"
check "kube: get -o json shows the finalizer" jqtrue "$T/kube.json" '.items[] | select(.metadata.name == "chat-7f3a") | .metadata.finalizers == ["lea.io/sandbox-cleanup"]'
run kctl apply -f - <"$T/kube.json"
check "kube: json round trip: 5 unchanged" test "$(grep -c ' unchanged$' "$T/out")" = 5
check "kube: json round trip: generations unchanged" test "$(kgens)" = "$kbefore"
jq '(.items[] | select(.metadata.name == "chat-7f3a") | .spec.idleTimeout) = "25m" | del(.items[].metadata.finalizers)' \
  "$T/kube.json" >"$T/kube-edited.json"
run kctl apply -f "$T/kube-edited.json"
check "kube: edited JSON: configured" grep -q '^session/chat-7f3a configured$' "$T/out"
kctl get session chat-7f3a -n tenant-a -o json >"$T/kube-one.json"
check "kube: the server kept its finalizer" jqtrue "$T/kube-one.json" '.metadata.finalizers == ["lea.io/sandbox-cleanup"] and .spec.idleTimeout == "25m"'

finish
