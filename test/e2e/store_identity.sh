#!/bin/sh
# test-slow
# End-to-end: the store is the one you meant (docs/store.md "Which store",
# docs/controller.md "The store it serves"), on SQLite with cubesim:
#  1. a store path that does not exist: the controller exits 1 naming it
#     (unless --create-store), sessionctl get/describe/plan/delete/wake fail
#     naming it; nothing is created (no file, no -wal, no -shm); apply
#     creates the store and says so, but not from an empty input;
#     sessionctl store init makes an empty store, and nothing else;
#  2. the database moved away under a running controller: /readyz 503 with
#     the reason, no Cube mutation (a sandbox deleted behind its back is
#     not re-created, a session set to Ended through the moved file keeps
#     its sandbox) until the file is moved back; a new file at the path is
#     not adopted until a restart;
#  3. one controller name per store: a second name refuses to start naming
#     the first; replicas of one name work; --adopt-from renames: sessions
#     keep their sandboxes (no creates), an Ended session's old-name
#     sandbox is deleted, the old name's running controller stops acting.
. "$(dirname "$0")/lib/common.sh"

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
readyz() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$(metrics_port "$1")/readyz"; }
readyz_body() { curl -s "http://127.0.0.1:$(metrics_port "$1")/readyz"; }
# nothing at PATH, PATH-wal, PATH-shm
none_of() { ! ls "$1" "$1-wal" "$1-shm" >/dev/null 2>&1; }
sb_of() { sim_truth | jq -r --arg s "$1" '[.[] | select(.state != "deleted" and .metadata["lea.session_id"] == $s)][0].sandboxID // "none"'; }
created_total() { sim_truth | jq 'length'; }
mb_of() { sb_field "$1" 'metadata["lea.managed-by"]'; }
sess_yaml() { # sess_yaml NAME [STATE]
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s}\nspec: {template: shell, state: %s, idleTimeout: 10m}\n' "$1" "${2:-Active}"
}
# sim_create_mb SESSION MANAGED-BY [UID]: a sandbox made behind our back
# (sim_sandbox in lib/common.sh)
sim_create_mb() { sim_sandbox "$1" "$2" "${3:-}"; }
mv3() { for x in "" -wal -shm; do [ -e "$1$x" ] && mv "$1$x" "$2$x"; done; return 0; }

start_cubesim --dialect cube --clock-speed 1

# --- 1. a store that does not exist ----------------------------------
typo="$T/sesions.db"
timeout 10 "$BINDIR/session-controller" --store "sqlite:$typo" --cube-url "$SIM" \
  --metrics-addr "" --replica typo 2>"$T/typo.log"
rc=$?
check "missing store: controller exits 1" test "$rc" = 1
check "missing store: the error names the path" grep -q "cannot open the store.*sqlite:$typo.*no store at $typo" "$T/typo.log"
check "missing store: the hint names --create-store" grep -q -- '--create-store creates an empty store' "$T/typo.log"
check "missing store: nothing created" none_of "$typo"
timeout 10 "$BINDIR/session-controller" --store "sqlite:$T/no-dir/s.db" --cube-url "$SIM" \
  --metrics-addr "" --replica typo2 2>"$T/typo2.log"
check "missing directory: controller exits 1" test "$?" = 1
check "missing directory: nothing created" test ! -e "$T/no-dir"
check "--help documents --create-store" sh -c "'$BINDIR/session-controller' --help | grep -q -- '--create-store'"

k=0
for c in "get sessions" "get sessions -A -o wide" "describe session x" \
         "delete session x" "wake x" "plan --cube-url $SIM" "get sessions -w"; do
  k=$((k + 1))
  # shellcheck disable=SC2086 # the command's words
  timeout 10 "$BINDIR/sessionctl" --store "sqlite:$typo" $c >"$T/c$k.out" 2>"$T/c$k.err"
  rc=$?
  check "sessionctl $c on a missing store: exit 1" test "$rc" = 1
  check "sessionctl $c: the error names the path" grep -q "error: cannot open store sqlite:$typo: .*no store at $typo" "$T/c$k.err"
  check "sessionctl $c: nothing created" none_of "$typo"
done
check "sessionctl get: no 'No resources found' for a missing store" sh -c "! grep -q 'No resources' '$T/c1.out' '$T/c1.err'"

sess_yaml a1 | "$BINDIR/sessionctl" --store "sqlite:$T/new.db" apply -f - >"$T/ap.out" 2>"$T/ap.err"
check "apply on a missing store: exit 0" test "$?" = 0
check "apply says it created the store (stderr)" grep -qx "created store sqlite:$T/new.db" "$T/ap.err"
check "apply: the object line on stdout" grep -qx 'session/a1 created' "$T/ap.out"
sess_yaml a2 | "$BINDIR/sessionctl" --store "sqlite:$T/new.db" apply -f - >/dev/null 2>"$T/ap2.err"
check "apply on an existing store: no 'created store'" test ! -s "$T/ap2.err"
check "sessionctl on a missing store: the hint names store init" grep -q '(sessionctl store init makes an empty store; apply makes one with its objects)$' "$T/c1.err"

# an empty input to apply: refused, nothing created, store init named
: >"$T/empty.yaml"
"$BINDIR/sessionctl" --store "sqlite:$typo" apply -f "$T/empty.yaml" >"$T/ae.out" 2>"$T/ae.err"
check "apply of an empty file: exit 1" test "$?" = 1
check "apply of an empty file: nothing created" none_of "$typo"
check "apply of an empty file: the error names store init" grep -q '^error: no objects applied (1 error); nothing was written (to make an empty store: sessionctl store init)$' "$T/ae.err"

# store init: an empty store on purpose, and only there
si() { "$BINDIR/sessionctl" --store "$1" store init >"$T/si.out" 2>"$T/si.err"; rc=$?; }
si "sqlite:$T/empty.db"
check "store init: exit 0" test "$rc" = 0
check "store init: says it created the store (stdout)" grep -qx "store sqlite:$T/empty.db created" "$T/si.out"
check "store init: nothing on stderr" test ! -s "$T/si.err"
check "store init: the file is mode 0600" test "$(stat -c %a "$T/empty.db")" = 600
"$BINDIR/sessionctl" --store "sqlite:$T/empty.db" get sessions -A >"$T/ge.out" 2>"$T/ge.err"
check "store init: get on it exits 0" test "$?" = 0
check "store init: get says No resources found" grep -q '^No resources found$' "$T/ge.err"
"$BINDIR/sessionctl" --store "sqlite:$T/empty.db" get sessions -o json >"$T/gj.out" 2>/dev/null
check "store init: get -o json an empty List" test "$(jq -c .items "$T/gj.out")" = "[]"
timeout 10 "$BINDIR/session-controller" --store "sqlite:$T/empty.db" --cube-url "$SIM" \
  --metrics-addr "" --replica init --once 2>"$T/init.log"
check "store init: a controller without --create-store runs on it" test "$?" = 0
check "store init: the controller created nothing" sh -c "! grep -q 'created store' '$T/init.log'"
sess_yaml i1 | "$BINDIR/sessionctl" --store "sqlite:$T/empty.db" apply -f - >/dev/null 2>"$T/ai.err"
check "store init: apply on it does not say created store" test ! -s "$T/ai.err"
si "sqlite:$T/empty.db"
check "store init again: exit 0" test "$rc" = 0
check "store init again: unchanged" grep -qx "store sqlite:$T/empty.db unchanged" "$T/si.out"
check "store init again: the session is kept" sh -c "'$BINDIR/sessionctl' --store 'sqlite:$T/empty.db' get session i1 >/dev/null"
si "sqlite:$T/no-dir/s.db"
check "store init in a missing directory: exit 1" test "$rc" = 1
check "store init in a missing directory: the error names the path" grep -q "^error: cannot open store sqlite:$T/no-dir/s.db: " "$T/si.err"
check "store init in a missing directory: nothing created" test ! -e "$T/no-dir"
printf 'notes, not a store\n' >"$T/notes.txt"
cp "$T/notes.txt" "$T/notes.orig"
si "sqlite:$T/notes.txt"
check "store init on another file: exit 1" test "$rc" = 1
check "store init on another file: says it is not a database" grep -q 'not an SQLite database' "$T/si.err"
check "store init on another file: left byte for byte" cmp -s "$T/notes.txt" "$T/notes.orig"
check "store init on another file: no -wal, no -shm" sh -c "! ls '$T/notes.txt-wal' '$T/notes.txt-shm' 2>/dev/null"
si kube
check "store init on kube: exit 1" test "$rc" = 1
check "store init on kube: names the CRD" grep -q 'kubectl apply -f deploy/crd.yaml' "$T/si.err"
"$BINDIR/sessionctl" --store "sqlite:$T/x.db" store >/dev/null 2>"$T/su.err"
check "store without a subcommand: exit 2" test "$?" = 2
check "store without a subcommand: nothing created" none_of "$T/x.db"
"$BINDIR/sessionctl" --store "sqlite:$T/x.db" store inti >/dev/null 2>"$T/su.err"
check "store with a mistyped subcommand: exit 2" test "$?" = 2
check "store with a mistyped subcommand: nothing created" none_of "$T/x.db"
check "--help lists store init" sh -c "'$BINDIR/sessionctl' --help | grep -q '^  store init '"

timeout 10 "$BINDIR/session-controller" --store "sqlite:$T/made.db" --cube-url "$SIM" \
  --metrics-addr "" --replica made --create-store --once 2>"$T/made.log"
check "--create-store: the controller runs on a new store" test "$?" = 0
check "--create-store: creation logged" grep -q "created store.*sqlite:$T/made.db" "$T/made.log"
check "--create-store: the file exists" test -f "$T/made.db"

# --- 2. the database moved away under a running controller -----------
db="$T/sessions.db"
rm -f "$db"*
sess_yaml m1 | ctl apply -f - >/dev/null 2>"$T/m1.err"
sess_yaml m2 | ctl apply -f - >/dev/null
# a long resync: the move must be seen without a pass being due
start_controller mv1 --orphan-grace 10m --resync 60s
p1=$CTL_PID
check "moved: two sandboxes at first" wait_eq 15 2 live_total
check "moved: ready at first" wait_eq 10 200 readyz mv1
id1=$(sb_of m1); id2=$(sb_of m2)
check "moved: m2 Running" wait_eq 10 Running sess_field m2 default .status.phase
mv3 "$db" "$T/moved.db"
check "moved: /readyz 503" wait_eq 5 503 readyz mv1
check "moved: /readyz says why, naming the path" sh -c "readyz_body() { curl -s http://127.0.0.1:$(metrics_port mv1)/readyz; }; readyz_body | grep -q 'not ready: sqlite:$db: the store file is gone from its path'"
check "moved: the error is logged, naming the path" grep -q "level=error.*the store is not the one opened.*store=sqlite:$db" "$T/mv1.log"
sleep 1.5 # a pass that started before the move ends
before=$(created_total)
curl -sf -X DELETE "$SIM/sandboxes/$id1" >/dev/null
check "moved: sandbox of m1 deleted behind the controller's back" wait_eq 5 0 sim_live_for m1
"$BINDIR/sessionctl" --store "sqlite:$T/moved.db" get session m2 >/dev/null 2>&1
sess_yaml m2 Ended | "$BINDIR/sessionctl" --store "sqlite:$T/moved.db" apply -f - >/dev/null
sleep 4 # four resync periods
check "moved: no sandbox created meanwhile" test "$(created_total)" = "$before"
check "moved: the Ended session's sandbox is not deleted meanwhile" test "$(sb_field "$id2" state)" = running
check "moved: still not ready" test "$(readyz mv1)" = 503
mv3 "$T/moved.db" "$db"
check "moved back: /readyz 200 again" wait_eq 10 200 readyz mv1
check "moved back: resuming logged" grep -q 'the store is the one opened again: resuming' "$T/mv1.log"
check "moved back: m1 gets a sandbox again" wait_eq 10 1 sim_live_for m1
check "moved back: the Ended session's sandbox is deleted" wait_eq 10 deleted sb_field "$id2" state

# a new file at the path is another store: not adopted until a restart
mv3 "$db" "$T/old.db"
sess_yaml m3 | ctl apply -f - >/dev/null 2>"$T/m3.err"
check "replaced: sessionctl created a new store at the path" grep -q 'created store' "$T/m3.err"
check "replaced: /readyz 503 (another file)" wait_eq 5 503 readyz mv1
check "replaced: /readyz names the new file" sh -c "curl -s http://127.0.0.1:$(metrics_port mv1)/readyz | grep -q 'the path now names another file.*a restart adopts the new file'"
sleep 3
check "replaced: no sandbox for the new store's session" test "$(sim_live_for m3)" = 0
stop_pid "$p1"
start_controller mv2 --orphan-grace 10m
p2=$CTL_PID
check "replaced: after a restart the new store is served" wait_eq 15 1 sim_live_for m3
stop_pid "$p2"

# --- 3. one controller name per store ---------------------------------
rm -f "$db"*
curl -sf -X POST "$SIM/_sim/reset" >/dev/null # count this part's creates only
sess_yaml n1 | ctl apply -f - >/dev/null 2>"$T/n1.err"
sess_yaml n2 | ctl apply -f - >/dev/null
start_controller na --name ctl-a --orphan-grace 10m
pa=$CTL_PID
check "names: ctl-a made two sandboxes" wait_eq 15 2 live_total
check "names: ctl-a ready" wait_eq 10 200 readyz na
i1=$(sb_of n1); i2=$(sb_of n2)
check "names: tagged ctl-a" test "$(mb_of "$i1"),$(mb_of "$i2")" = "ctl-a,ctl-a"
check "names: n1 Running" wait_eq 10 Running sess_field n1 default .status.phase
rv=$(sess_field n1 default .metadata.resourceVersion)
timeout 10 "$BINDIR/session-controller" --store "$STORE" --cube-url "$SIM" \
  --metrics-addr "" --replica nb --name ctl-b 2>"$T/nb.log"
check "names: a second name exits 1" test "$?" = 1
check "names: the refusal names the first and the way to rename" grep -q "store sqlite:$db is served by controller 'ctl-a' (since [0-9T:.Z-]*); refusing to start as 'ctl-b'; to rename use --adopt-from ctl-a" "$T/nb.log"
check "names: no status write by the refused name" test "$(sess_field n1 default .metadata.resourceVersion)" = "$rv"
start_controller na2 --name ctl-a --orphan-grace 10m
pa2=$CTL_PID
check "names: a replica of the same name runs and gets ready" wait_eq 10 200 readyz na2
sleep 2
check "names: still two sandboxes with two replicas" test "$(live_total),$(created_total)" = "2,2"
stop_pid "$pa2"

# the rename, with ctl-a still running (in --dry-run, so that it leaves
# n4's sandbox to the new name): it stops acting (no status writes)
sess_yaml n2 Ended | ctl apply -f - >/dev/null
check "rename: ctl-a deletes n2's sandbox (Ended)" wait_eq 10 deleted sb_field "$i2" state
sess_yaml n4 | ctl apply -f - >/dev/null
check "rename: ctl-a creates n4's" wait_eq 10 1 sim_live_for n4
i4=$(sb_of n4)
stop_pid "$pa"
sess_yaml n4 Ended | ctl apply -f - >/dev/null
start_controller na3 --name ctl-a --orphan-grace 10m --dry-run
pa=$CTL_PID
check "rename: the old name runs (dry-run)" wait_eq 10 200 readyz na3
before=$(created_total)
start_controller nb2 --name ctl-b --adopt-from ctl-a --orphan-grace 10m
pb=$CTL_PID
check "rename: ctl-b ready" wait_eq 10 200 readyz nb2
check "rename: the adoption is logged" grep -q 'sandboxes of a former name are this controller.s too.*former_name=ctl-a' "$T/nb2.log"
check "rename: the running ctl-a stops: /readyz 503" wait_eq 5 503 readyz na3
check "rename: ctl-a says it is served by ctl-b now" sh -c "curl -s http://127.0.0.1:$(metrics_port na3)/readyz | grep -q \"now served by controller 'ctl-b', not 'ctl-a'\""
check "rename: n4's old-name sandbox deleted (Ended)" wait_eq 10 deleted sb_field "$i4" state
sleep 2
check "rename: no sandbox created (n1 keeps its own)" test "$(created_total)" = "$before"
check "rename: n1 still linked to its sandbox" test "$(sess_field n1 default .status.sandboxID)" = "$i1"
check "rename: n1 Running, no conflict" test "$(sess_field n1 default '.status.phase + "," + ([.status.conditions[]? | select(.type=="Conflict" and .status=="True")] | length | tostring)')" = "Running,0"
check "rename: n1's sandbox still running" test "$(sb_field "$i1" state)" = running
sess_yaml n5 | ctl apply -f - >/dev/null
check "rename: a new session gets a ctl-b sandbox" wait_eq 10 1 sim_live_for n5
check "rename: tagged ctl-b" test "$(mb_of "$(sb_of n5)")" = ctl-b
check "rename: n5 Running" wait_eq 10 Running sess_field n5 default .status.phase
sleep 2 # ctl-b's own second write (endAt) lands
rv5=$(sess_field n5 default .metadata.resourceVersion)
sleep 3
check "rename: n5's status does not flap (the old name writes nothing)" test "$(sess_field n5 default .metadata.resourceVersion)" = "$rv5"
# an old-name sandbox no status links (its creator died before the link
# write) is found by the former name's lists and joined by its tags
# (the object is written straight into the store with a uid of its own, so
# the sandbox can carry it before any controller sees the object)
j6=$(sim_create_mb n6 ctl-a uid-n6)
sqlite3 -cmd ".timeout 10000" "${STORE#sqlite:}" "BEGIN; UPDATE meta SET revision = revision + 1;
  INSERT INTO objects(namespace, name, uid, generation, revision, created_ms,
    deleted_ms, labels, annotations, spec, status)
  SELECT 'default', 'n6', 'uid-n6', 1, revision, 1795946400000, 0, '{}', '{}',
    '{\"template\":\"shell\"}', '{}' FROM meta; COMMIT;"
check "rename: n6 joins its unlinked old-name sandbox" wait_eq 10 "$j6" sess_field n6 default .status.sandboxID
check "rename: no sandbox created for n6" test "$(sim_live_for n6)" = 1
stop_pid "$pa"
stop_pid "$pb"

# a restart without the flag keeps the former name's sandboxes
start_controller nb3 --name ctl-b --orphan-grace 10m
pb=$CTL_PID
check "rename: ctl-b restarted without --adopt-from" wait_eq 10 200 readyz nb3
sess_yaml n1 Ended | ctl apply -f - >/dev/null
check "rename: the restarted ctl-b still deletes ctl-a's sandbox of n1" wait_eq 10 deleted sb_field "$i1" state
stop_pid "$pb"
timeout 10 "$BINDIR/session-controller" --store "$STORE" --cube-url "$SIM" \
  --metrics-addr "" --replica na5 --name ctl-a 2>"$T/na5.log"
check "rename: the old name is refused now" test "$?" = 1
check "rename: naming ctl-b" grep -q "served by controller 'ctl-b'" "$T/na5.log"

stop_pid "$SIM_PID"
finish
