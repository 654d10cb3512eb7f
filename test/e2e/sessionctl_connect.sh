#!/bin/sh
# sessionctl_connect.sh - `sessionctl connect` (docs/sessionctl.md,
# "connect"): the lea.io/connect annotation set to a new nonce by
# compare-and-set (no new generation), the wait for status.connect with
# that nonce, and the exit codes: 0 Served (the block, -o json|yaml|name),
# 1 Refused (the message), absent without -f, deleted while waiting,
# 2 usage, 3 no answer in time (a stale answer or a Served without a
# running sandbox is no answer). The controller's answer is written here
# as the controller writes it (a new revision, the objects row and a
# MODIFIED history entry), on SQLite and on a kube store
# (kube-apiserver-fake); then the real session-controller against cubesim,
# skipped while the controller does not serve connect yet.
. "$(dirname "$0")/lib/common.sh"

DB="$T/sessions.db"
# run CMD...: stdout in $T/out, stderr in $T/err, status in $rc
run() { "$@" >"$T/out" 2>"$T/err"; rc=$?; }
# bg NAME ARGS...: sessionctl ARGS in the background on $STORE; stdout,
# stderr and exit status in $T/NAME.out, .err, .rc
bg() {
  bgn=$1; shift
  rm -f "$T/$bgn.rc"
  ( "$BINDIR/sessionctl" --store "$STORE" "$@" >"$T/$bgn.out" 2>"$T/$bgn.err"
    echo $? >"$T/$bgn.rc" ) &
  PIDS="$PIDS $!"
}
# rc_of NAME: the exit status of bg NAME, once it ended (20 s at most)
rc_of() { wait_until 20 test -s "$T/$1.rc" && cat "$T/$1.rc"; }
# annot NS NAME: the session's lea.io/connect annotation in the SQLite store
# (json_each: json-c writes the key as "lea.io\/connect", which a
# json_extract path does not match)
annot() { sqlite3 "$DB" "SELECT j.value FROM objects, json_each(objects.annotations) j WHERE namespace='$1' AND name='$2' AND j.key='lea.io/connect'"; }
# answer NS NAME STATUS: write status STATUS (JSON) as the controller
# does: a new revision, the objects row and a MODIFIED history entry (the
# key's last one with the new status), in one transaction
answer() {
  sqlite3 "$DB" "BEGIN IMMEDIATE;
UPDATE meta SET revision = revision + 1;
UPDATE objects SET status = json('$3'), revision = (SELECT revision FROM meta)
  WHERE namespace = '$1' AND name = '$2';
INSERT INTO history(revision, type, namespace, name, object)
  SELECT m.revision, 'MODIFIED', '$1', '$2',
         json_set(h.object, '\$.status', json('$3'),
                  '\$.metadata.resourceVersion', CAST(m.revision AS TEXT))
  FROM meta m, (SELECT object FROM history WHERE namespace = '$1' AND
                name = '$2' ORDER BY revision DESC LIMIT 1) h;
COMMIT;"
}
# served NONCE ID: a status answering NONCE with sandbox ID, Running
served() {
  printf '{"phase":"Running","sandboxID":"%s","sandboxState":"running","domain":"cube.test","envdAddress":"https://49983-%s.cube.test","connect":{"nonce":"%s","result":"Served"}}' "$2" "$2" "$1"
}
# annot_not NS NAME OLD: the annotation is set and is not OLD
annot_not() { a=$(annot "$1" "$2"); [ -n "$a" ] && [ "$a" != "$3" ]; }
gen() { sqlite3 "$DB" "SELECT generation FROM objects WHERE namespace='$1' AND name='$2'"; }

cat >"$T/s1.yaml" <<YAML
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: s1, namespace: tenant-a}
spec: {template: python-data}
YAML
# the store must exist (only apply creates one): a seed session
printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: seed}\nspec: {template: shell}\n' |
  ctl apply -f - >/dev/null 2>&1 || fail "seed the store"

# --- usage: exit 2, nothing written
for args in "s1 --nonce bad/nonce" "s1 --nonce ''" \
            "s1 --nonce 0123456789012345678901234567890123456789012345678901234567890123x" \
            "s1 s2" "" "s1 -o wide" "s1 --timeout 5x" "s1 --timeout -1s" \
            "pods/s1" "s1 -f a.yaml -f b.yaml"; do
  eval "run ctl connect $args"
  check "usage: connect $args: exit 2" test "$rc" = 2
done
run ctl connect s1 --nonce 'a b' -n tenant-a
check "usage: a nonce with a space names the rule" grep -q 'invalid --nonce "a b": 1 to 64 characters of A-Z a-z 0-9 . _ -' "$T/err"
check "usage: nothing was created" test -z "$(sqlite3 "$DB" "SELECT name FROM objects WHERE name='s1'")"

# --- absent without -f: exit 1, NotFound, nothing created
run ctl connect s1 -n tenant-a --timeout 1s
check "absent without -f: exit 1" test "$rc" = 1
check "absent without -f: NotFound and the hint" grep -q 'no session tenant-a/s1 to connect to (give -f MANIFEST to create it)' "$T/err"
check "absent without -f: kubectl's NotFound line" grep -q 'Error from server (NotFound): sessions "s1" not found' "$T/err"

# --- -f that is not that one Session: exit 1 before the store is touched
run ctl connect s1 -f "$T/s1.yaml" --timeout 1s
check "-f naming another namespace: exit 1" test "$rc" = 1
check "-f naming another namespace: says which" grep -q 's1.yaml:[0-9]*: the manifest.s Session is tenant-a/s1, not default/s1 (the NAME argument and -n)' "$T/err"
sed 's/name: s1,/name: other,/' "$T/s1.yaml" >"$T/other.yaml"
run ctl connect s1 -n tenant-a -f "$T/other.yaml" --timeout 1s
check "-f naming another session: exit 1" test "$rc" = 1
{ cat "$T/s1.yaml"; echo ---; cat "$T/other.yaml"; } >"$T/two.yaml"
run ctl connect s1 -n tenant-a -f "$T/two.yaml" --timeout 1s
check "-f with two objects: exit 1" test "$rc" = 1
check "-f with two objects: says so" grep -q 'holds 2 objects; connect creates one Session, tenant-a/s1' "$T/err"
printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: s1, namespace: tenant-a}\nspec: {}\n' >"$T/bad.yaml"
run ctl connect s1 -n tenant-a -f "$T/bad.yaml" --timeout 1s
check "-f invalid: exit 1 with the field" sh -c "test $rc = 1 && grep -q 'spec.template' '$T/err'"
check "-f refused: nothing was created" test -z "$(sqlite3 "$DB" "SELECT name FROM objects WHERE name IN ('s1','other')")"

# --- a new session via -f: created with the annotation, generation 1
bg c1 connect s1 -n tenant-a -f "$T/s1.yaml" --nonce n-1 --timeout 20s
check "new: created with the nonce annotation" wait_eq 10 n-1 annot tenant-a s1
check "new: generation 1" test "$(gen tenant-a s1)" = 1
check "new: 'session/s1 created' on stderr" wait_until 5 grep -q '^session/s1 created$' "$T/c1.err"
check "new: still waiting (no answer yet)" test ! -s "$T/c1.rc"
answer tenant-a s1 "$(served n-1 sb-1)"
check "new: Served: exit 0" test "$(rc_of c1)" = 0
cat >"$T/block.want" <<EOF
session:     tenant-a/s1
sandboxID:   sb-1
domain:      cube.test
envdAddress: https://49983-sb-1.cube.test
template:    python-data
state:       running
EOF
check "new: the block on stdout" cmp -s "$T/block.want" "$T/c1.out"
check "new: stdout is the block alone" test "$(grep -c . "$T/c1.out")" = 6

# --- an existing running session: the annotation only, by compare-and-set
spec_before=$(sqlite3 "$DB" "SELECT spec FROM objects WHERE name='s1'")
bg c2 connect s1 -n tenant-a -o json --timeout 20s
check "existing: a new generated nonce" wait_until 10 annot_not tenant-a s1 n-1
n2=$(annot tenant-a s1)
check "existing: the generated nonce is 16 hex digits" sh -c "echo '$n2' | grep -Eq '^[0-9a-f]{16}\$'"
check "existing: the generation did not move" test "$(gen tenant-a s1)" = 1
check "existing: the spec did not change" test "$(sqlite3 "$DB" "SELECT spec FROM objects WHERE name='s1'")" = "$spec_before"
# a stale answer (the last nonce) is not this request's
answer tenant-a s1 "$(served n-1 sb-1)"
sleep 0.5
check "existing: an answer to the old nonce is not taken" test ! -s "$T/c2.rc"
# Served but not Running is not taken either
answer tenant-a s1 "$(served "$n2" sb-2 | sed 's/"Running"/"Creating"/')"
sleep 0.5
check "existing: Served while Creating is not taken" test ! -s "$T/c2.rc"
answer tenant-a s1 "$(served "$n2" sb-2)"
check "existing: Served: exit 0" test "$(rc_of c2)" = 0
check "existing: -o json" test "$(jq -c . "$T/c2.out")" = '{"session":"tenant-a/s1","sandboxID":"sb-2","domain":"cube.test","envdAddress":"https://49983-sb-2.cube.test","template":"python-data","state":"running"}'

# --- -o name and -o yaml; the manifest is not applied over an existing one
sed 's/python-data/other-template/' "$T/s1.yaml" >"$T/s1b.yaml"
bg c3 connect session/s1 -n tenant-a -f "$T/s1b.yaml" -o name --nonce n-3 --timeout 20s
check "name: the annotation" wait_eq 10 n-3 annot tenant-a s1
answer tenant-a s1 "$(served n-3 sb-3)"
check "name: exit 0" test "$(rc_of c3)" = 0
check "name: the sandboxID alone" test "$(cat "$T/c3.out")" = sb-3
check "name: -f did not change the existing spec" test "$(sqlite3 "$DB" "SELECT json_extract(spec, '\$.template') FROM objects WHERE name='s1'")" = python-data
check "name: nothing said about the manifest" test ! -s "$T/c3.err"
bg c4 connect s1 -n tenant-a -o yaml --nonce n-4 --timeout 20s
check "yaml: the annotation" wait_eq 10 n-4 annot tenant-a s1
answer tenant-a s1 '{"phase":"Running","sandboxID":"sb-4","connect":{"nonce":"n-4","result":"Served"}}'
check "yaml: exit 0" test "$(rc_of c4)" = 0
check "yaml: the object, null for what is unset" sh -c "grep -q '^sandboxID: sb-4\$' '$T/c4.out' && grep -q '^domain: null\$' '$T/c4.out' && grep -q '^session: tenant-a/s1\$' '$T/c4.out'"

# --- a nonce already used: refused, nothing written
rev=$(sqlite3 "$DB" "SELECT revision FROM meta")
run ctl connect s1 -n tenant-a --nonce n-4 --timeout 1s
check "used nonce: exit 1" test "$rc" = 1
check "used nonce: says why" grep -q 'already carries or was answered with that nonce' "$T/err"
check "used nonce: nothing written" test "$(sqlite3 "$DB" "SELECT revision FROM meta")" = "$rev"

# --- another caller's connect after ours: its answer answers ours too;
# an old nonce put back (an apply of an old manifest) is no request
bg c9 connect s1 -n tenant-a --nonce n-9a -o name --timeout 20s
check "superseded: ours written" wait_eq 10 n-9a annot tenant-a s1
cat >"$T/s1-old.yaml" <<YAML
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: s1, namespace: tenant-a, annotations: {lea.io/connect: n-4}}
spec: {template: python-data}
YAML
check "superseded: an apply puts the answered n-4 back" test "$(ctl apply -f "$T/s1-old.yaml")" = "session/s1 configured"
check "superseded: (the annotation is n-4 again)" wait_eq 5 n-4 annot tenant-a s1
sleep 0.5
check "superseded: the old answer to n-4 is not taken" test ! -s "$T/c9.rc"
run ctl connect s1 -n tenant-a --nonce n-9b --timeout 0
check "superseded: another request n-9b written" test "$(annot tenant-a s1)" = n-9b
answer tenant-a s1 "$(served n-9b sb-9)"
check "superseded: the answer to n-9b serves ours: exit 0" test "$(rc_of c9)" = 0
check "superseded: its sandbox" test "$(cat "$T/c9.out")" = sb-9

# --- an annotation another tool left that is not a nonce is replaced
sed 's/lea.io\/connect: n-4/lea.io\/connect: "not a nonce!", team: blue/' "$T/s1-old.yaml" >"$T/s1-bad.yaml"
ctl apply -f "$T/s1-bad.yaml" >/dev/null
check "bad annotation: stored as given" wait_eq 5 'not a nonce!' annot tenant-a s1
run ctl connect s1 -n tenant-a --timeout 0
check "bad annotation: connect writes a new nonce" sh -c "echo '$(annot tenant-a s1)' | grep -Eq '^[0-9a-f]{16}\$'"
check "bad annotation: then waits (exit 3)" test "$rc" = 3
check "bad annotation: the other annotations kept" test "$(sqlite3 "$DB" "SELECT j.value FROM objects, json_each(objects.annotations) j WHERE name='s1' AND j.key='team'")" = blue

# --- Refused: exit 1, the message (control characters escaped)
bg c5 connect s1 -n tenant-a --nonce n-5 --timeout 20s
check "refused: the annotation" wait_eq 10 n-5 annot tenant-a s1
answer tenant-a s1 '{"phase":"Ended","connect":{"nonce":"n-5","result":"Refused","message":"the session is Ended (spec.state Ended)\u001b[2J"}}'
check "refused: exit 1" test "$(rc_of c5)" = 1
check "refused: the message on stderr" grep -q '^connect refused: the session is Ended (spec.state Ended)\\x1b\[2J$' "$T/c5.err"
check "refused: nothing on stdout" test ! -s "$T/c5.out"

# --- no answer: exit 3 after the timeout, saying what was seen
run ctl connect s1 -n tenant-a --nonce n-6 --timeout 1s
check "timeout: exit 3" test "$rc" = 3
check "timeout: says so" grep -q 'timed out after 1s waiting for the answer to connect request n-6 on session tenant-a/s1 (phase Ended, no answer yet); is a session-controller running on this store?' "$T/err"
check "timeout: the request stays written" test "$(annot tenant-a s1)" = n-6
run ctl connect s1 -n tenant-a --nonce n-7 --timeout 0
check "timeout 0: checked once, exit 3" test "$rc" = 3

# --- deleted while waiting: exit 1
bg c8 connect s1 -n tenant-a --nonce n-8 --timeout 20s
check "deleted: the annotation" wait_eq 10 n-8 annot tenant-a s1
ctl delete session s1 -n tenant-a --wait=false >/dev/null # no controller runs
check "deleted: exit 1" test "$(rc_of c8)" = 1
check "deleted: says so" grep -q 'session tenant-a/s1 was deleted while waiting for the answer to connect request n-8' "$T/c8.err"
run ctl connect s1 -n tenant-a --timeout 1s
check "a tombstone is absent: exit 1" test "$rc" = 1

# --- a kube store (kube-apiserver-fake): the same protocol
start_kube_fake k
kubeconfig "$T/kc"
SQLSTORE=$STORE
STORE=kube
export KUBECONFIG="$T/kc"
kobj() { curl -sf "$API/apis/lea.io/v1alpha1/namespaces/$1/sessions/$2"; }
kanswer() { curl -sf -X PATCH -H 'Content-Type: application/merge-patch+json' \
  -d "{\"status\":$3}" "$API/apis/lea.io/v1alpha1/namespaces/$1/sessions/$2/status" >/dev/null; }
kannot() { kobj "$1" "$2" | jq -r '.metadata.annotations["lea.io/connect"] // empty'; }
bg k1 connect s1 -n tenant-a -f "$T/s1.yaml" --nonce k-1 -o name --timeout 20s
check "kube new: created with the annotation" wait_eq 10 k-1 kannot tenant-a s1
kanswer tenant-a s1 "$(served k-1 kb-1)"
check "kube new: Served: exit 0" test "$(rc_of k1)" = 0
check "kube new: the sandboxID" test "$(cat "$T/k1.out")" = kb-1
bg k2 connect s1 -n tenant-a --nonce k-2 -o json --timeout 20s
check "kube existing: the annotation by merge patch" wait_eq 10 k-2 kannot tenant-a s1
check "kube existing: generation 1" test "$(kobj tenant-a s1 | jq .metadata.generation)" = 1
check "kube existing: the status kept" test "$(kobj tenant-a s1 | jq -r .status.sandboxID)" = kb-1
kanswer tenant-a s1 '{"phase":"Running","sandboxID":"kb-1","connect":{"nonce":"k-2","result":"Refused","message":"spec.state is Paused"}}'
check "kube refused: exit 1" test "$(rc_of k2)" = 1
check "kube refused: the message" grep -q '^connect refused: spec.state is Paused$' "$T/k2.err"
run ctl connect s1 -n tenant-a --nonce k-3 --timeout 1s
check "kube timeout: exit 3" test "$rc" = 3
check "kube: the request was written" test "$(kannot tenant-a s1)" = k-3
run ctl connect nope -n tenant-a --timeout 1s
check "kube absent without -f: exit 1" test "$rc" = 1
# a conflict on the annotation's merge patch (another writer between the
# read and the patch: the server's 409) is read again and retried
fault() { curl -sf -X POST -H 'Content-Type: application/json' -d "$1" "$API/_fake/faults" >/dev/null; }
fault '{"status":409,"count":1,"method":"PATCH","path":"/apis/lea.io/v1alpha1/namespaces/tenant-a/sessions/s1"}'
run ctl connect s1 -n tenant-a --nonce k-4 --timeout 1s
check "kube conflict once: retried, the request written" test "$(kannot tenant-a s1)" = k-4
check "kube conflict once: then waits (exit 3)" test "$rc" = 3
fault '{"status":409,"count":5,"method":"PATCH","path":"/apis/lea.io/v1alpha1/namespaces/tenant-a/sessions/s1"}'
run ctl connect s1 -n tenant-a --nonce k-5 --timeout 1s
check "kube conflict every time: exit 1" test "$rc" = 1
check "kube conflict every time: says so" grep -q 'session "s1" kept changing under us (5 conflicts); try again' "$T/err"
check "kube conflict every time: nothing written" test "$(kannot tenant-a s1)" = k-4
STORE=$SQLSTORE

# --- the real controller with cubesim: a new session (-f), a running, a
# paused, a reclaimed one, OnConnect, an Ended one
rm -f "$DB"*
start_cubesim --clock-speed 1
start_controller ctl-connect --orphan-grace 10m
wait_until 10 test -e "$DB"
cat >"$T/live.yaml" <<YAML
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: live, namespace: tenant-c}
spec: {template: python-data}
YAML
run ctl connect live -n tenant-c -f "$T/live.yaml" -o json --timeout 10s
check "controller: Served: exit 0" test "$rc" = 0
if true; then
  id=$(jq -r .sandboxID "$T/out")
  check "controller: the sandbox is running in cubesim" test "$(sb_field "$id" state)" = running
  check "controller: the sandbox is the session's" test "$(sim_truth | jq -r --arg id "$id" '.[] | select(.sandboxID==$id) | .metadata["lea.session_id"]')" = live
  check "controller: envdAddress" test "$(jq -r .envdAddress "$T/out")" = "https://49983-$id.$(jq -r .domain "$T/out")"
  check "controller: the answer is in the status" test "$(sess_field live tenant-c .status.connect.result)" = Served
  ctl describe session live -n tenant-c >"$T/desc" 2>&1
  check "controller: describe shows the envd address" grep -q "^  Envd Address: *https://49983-$id\." "$T/desc"
  check "controller: describe shows the connect answer" grep -q "^  Connect Result: *Served" "$T/desc"
  # the next message: running, served at once with the same sandbox
  run ctl connect live -n tenant-c -o name --timeout 10s
  check "controller: running: exit 0" test "$rc" = 0
  check "controller: running: the same sandbox" test "$(cat "$T/out")" = "$id"
  # idle-paused by Cube: connect resumes it
  sim_advance 960
  wait_eq 10 Paused sess_field live tenant-c .status.phase >/dev/null
  check "controller: paused by Cube" test "$(sb_field "$id" state)" = paused
  run ctl connect live -n tenant-c -o name --timeout 10s
  check "controller: paused: exit 0" test "$rc" = 0
  check "controller: paused: resumed, the same sandbox" test "$(cat "$T/out")" = "$id"
  check "controller: paused: it runs" test "$(sb_field "$id" state)" = running
  # reclaimed (paused past reclaimAfter, 24h): connect makes a new one
  sim_advance 960
  sim_advance 90000
  wait_eq 15 Reclaimed sess_field live tenant-c .status.phase >/dev/null
  check "controller: reclaimed" test "$(sess_field live tenant-c .status.phase)" = Reclaimed
  run ctl connect live -n tenant-c -o name --timeout 10s
  check "controller: reclaimed: exit 0" test "$rc" = 0
  new=$(cat "$T/out")
  check "controller: reclaimed: a new sandbox" test -n "$new" -a "$new" != "$id"
  check "controller: reclaimed: it runs" test "$(sb_field "$new" state)" = running
  check "controller: reclaimed: no longer Reclaimed" test "$(sess_field live tenant-c .status.phase)" = Running
  # OnConnect: raw traffic does not resume its sandbox, a connect does
  sed 's/template: python-data}/template: python-data, resumePolicy: OnConnect}/; s/name: live,/name: oc,/' "$T/live.yaml" >"$T/oc.yaml"
  run ctl connect oc -n tenant-c -f "$T/oc.yaml" -o name --timeout 10s
  check "controller: OnConnect: exit 0" test "$rc" = 0
  oc=$(cat "$T/out")
  check "controller: OnConnect: created with auto-resume off" test "$(sb_field "$oc" autoResume)" = false
  sim_advance 960
  wait_eq 10 paused sb_field "$oc" state >/dev/null
  code=$(sim_traffic "$oc")
  check "controller: OnConnect: traffic refused ($code)" test "$code" = 502 -o "$code" = 503
  sleep 1
  check "controller: OnConnect: still paused after traffic" test "$(sb_field "$oc" state)" = paused
  run ctl connect oc -n tenant-c -o name --timeout 10s
  check "controller: OnConnect: connect resumes it" test "$rc" = 0 -a "$(sb_field "$oc" state)" = running
  # an Ended session is refused
  sed 's/template: python-data}/template: python-data, state: Ended}/' "$T/live.yaml" >"$T/live-ended.yaml"
  ctl apply -f "$T/live-ended.yaml" >/dev/null
  wait_eq 10 Ended sess_field live tenant-c .status.phase >/dev/null
  run ctl connect live -n tenant-c --timeout 10s
  check "controller: Ended: refused, exit 1" test "$rc" = 1
  check "controller: Ended: the message" grep -q '^connect refused: ' "$T/err"
fi
# --- a connect is answered at once, not at the next resync: the
# controller at --resync 60s. Before, the annotation's MODIFIED event (the
# generation does not move) was dropped as a status-only change, and a
# connect to a running or paused session waited for the resync.
kill "$CTL_PID" 2>/dev/null; wait "$CTL_PID" 2>/dev/null
start_controller ctl-slow --resync 60s --orphan-grace 10m
sed 's/name: live,/name: quick,/' "$T/live.yaml" >"$T/quick.yaml"
run ctl connect quick -n tenant-c -f "$T/quick.yaml" -o name --timeout 10s
check "resync 60s: new: served" test "$rc" = 0
q=$(cat "$T/out")
run ctl connect quick -n tenant-c -o name --timeout 3s
check "resync 60s: running: answered within 3 s" test "$rc" = 0 -a "$(cat "$T/out")" = "$q"
sim_advance 960
wait_eq 10 paused sb_field "$q" state >/dev/null
run ctl connect quick -n tenant-c -o name --timeout 3s
check "resync 60s: paused: resumed within 3 s" test "$rc" = 0 -a "$(sb_field "$q" state)" = running

finish
