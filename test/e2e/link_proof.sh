#!/bin/sh
# End-to-end: the link proof (status.sandboxProof) is written with the
# link of the create that made the sandbox, not left to a later pass that
# lists it tagged. Cube drops the tags of paused sandboxes (droplabels on
# every pause here); a sandbox paused for idleness before that later pass
# left its session unprovable for good (Failed, SandboxConflict), which
# sharding made likelier (one replica's passes instead of every one's: the
# chaos suite at seed 7 with --shards auto, one run in three). --resync
# 60s: no full pass runs between the create and the pause.
. "$(dirname "$0")/lib/common.sh"

start_cubesim --clock-speed 1 --faults 'pause:droplabels=1'
start_controller p --resync 60s
wait_until 10 test -e "$T/sessions.db"
printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: s1}\nspec: {template: shell, idleTimeout: 1m}\n' >"$T/s.yaml"
ctl apply -f "$T/s.yaml" >/dev/null
has_link() { sess_field s1 default '.status.sandboxID // ""' | grep -Eq '^[0-9a-z]+$'; }
check "the session is linked" wait_until 10 has_link
id=$(sess_field s1 default .status.sandboxID)
proof=$(sess_field s1 default '.status.sandboxProof // "none"')
check "the link write carries the proof ($proof)" test "$proof" != none
sim_advance 120
tags() { sim_truth | jq --arg id "$id" '.[] | select(.sandboxID == $id) | .metadata | length'; }
check "Cube paused it" wait_eq 5 paused sb_field "$id" state
check "... and dropped its tags" test "$(tags)" = 0
# a spec change: one single pass, which finds the link by a GET
printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: s1}\nspec: {template: shell, idleTimeout: 2m}\n' >"$T/s.yaml"
ctl apply -f "$T/s.yaml" >/dev/null
check "the next pass proves the link: Paused, not Failed" wait_eq 10 Paused sess_field s1 default .status.phase
check "no SandboxConflict" test "$(sess_field s1 default '[.status.conditions[]? | select(.reason == "SandboxConflict")] | length')" = 0
check "still its one sandbox" test "$(sess_field s1 default .status.sandboxID)" = "$id"
kill "$CTL_PID"; wait "$CTL_PID" 2>/dev/null
finish
