#!/bin/sh
# test-slow
# End-to-end: the safety rules of docs/architecture.md "Safety rules" against cubesim:
# orphans and their grace, the blast-radius guard, dry-run, duplicates
# resolved alike by two replicas, metadata lost on pause, injected faults,
# and a controller whose local clock is hours off.
. "$(dirname "$0")/lib/common.sh"

# sim_create SESSION [TIMEOUT] [TENANT] [UID]: a sandbox made behind our
# back (sim_sandbox in lib/common.sh); with UID, the session's own
sim_create() { sim_sandbox "$1" session-controller "${4:-}" "${2:-600}" "${3:-default}"; }
uid_of() { sess_field "$1" default .metadata.uid; }
sim_state_id() { sb_field "$1" state; }
count_state() { sim_truth | jq --arg s "$1" '[.[] | select(.state==$s)] | length'; }
deletes_in_audit() { sim_audit | jq -s '[.[] | select(.method=="DELETE" and .source=="api")] | length'; }
stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
apply_n() { # apply_n PREFIX N [STATE] [IDLE]
  i=0
  : >"$T/many.yaml"
  while [ $i -lt "$2" ]; do
    printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s-%d}\nspec: {template: shell, state: %s, idleTimeout: %s}\n---\n' \
      "$1" $i "${3:-Active}" "${4:-1m}" >>"$T/many.yaml"
    i=$((i + 1))
  done
  ctl apply -f "$T/many.yaml" >/dev/null
}

# the two dialects at once, each in a run of its own (e2e_split,
# lib/common.sh; ONLY=cube or ONLY=e2b runs one)
e2e_split ONLY cube e2b
for d in $ONLY; do
  rm -f "$T/sessions.db"*
  # --- orphans: running ones left alone; paused ones only after the grace
  start_cubesim --dialect "$d"
  start_controller "orph-$d" --orphan-grace 10m --audit-log "$T/audit-$d.jsonl"
  g=$(sim_create ghost 600)
  sim_advance 300
  wait_passes 3 "orph-$d"
  check "$d: running orphan left alone" test "$(sim_state_id "$g")" = running
  sim_advance 360   # idle-paused at 600 s
  check "$d: orphan idle-paused" wait_eq 5 paused sim_state_id "$g"
  sim_advance 300
  wait_passes 3 "orph-$d"
  check "$d: paused orphan kept within the grace" test "$(sim_state_id "$g")" = paused
  sim_advance 360
  check "$d: paused orphan deleted after the grace" wait_eq 10 deleted sim_state_id "$g"
  check "$d: orphan delete audited with its facts" sh -c "jq -e -s 'map(select(.kind==\"orphan\" and .outcome==\"done\" and .sandboxID==\"$g\" and .observedState==\"paused\" and (.cubeNow|length)>0)) | length == 1' '$T/audit-$d.jsonl'"
  stop_pid "$CTL_PID"; stop_pid "$SIM_PID"

  # --- dry-run: plans and logs, no mutating call
  rm -f "$T/sessions.db"*
  start_cubesim --dialect "$d"
  apply_n dry 3
  start_controller "dry-$d" --dry-run
  wait_passes 3 "dry-$d"
  check "$d: dry-run makes no mutating call" test "$(sim_audit | wc -l)" = 0
  check "$d: dry-run logs the creates it would do" test "$(grep -c 'dry-run: not calling Cube.*action=create' "$T/dry-$d.log")" -ge 3
  stop_pid "$CTL_PID"; stop_pid "$SIM_PID"

  # --- the blast-radius guard: a mis-pointed (empty) store never empties Cube
  rm -f "$T/sessions.db"*
  start_cubesim --dialect "$d"
  start_controller "g1-$d"
  apply_n g 15 Active 1m
  check "$d: 15 sandboxes created" wait_eq 15 15 live_total
  stop_pid "$CTL_PID"
  STORE_SAVED=$STORE
  STORE="sqlite:$T/empty.db"
  rm -f "$T/empty.db"*
  sim_advance 120    # all idle-paused
  sim_advance 1200   # past the orphan grace
  start_controller "g2-$d"
  wait_passes 3 "g2-$d"
  check "$d: guard keeps all 15 sandboxes" test "$(live_total)" = 15
  check "$d: guard trip logged" grep -q 'delete guard tripped' "$T/g2-$d.log"
  p=$(metrics_port "g2-$d")
  check "$d: guard metric raised" sh -c "curl -sf http://127.0.0.1:$p/metrics | grep -q '^session_controller_delete_guard_tripped_total [1-9]'"
  stop_pid "$CTL_PID"
  start_controller "g3-$d" --force
  check "$d: --force overrides the guard" wait_eq 10 0 live_total
  stop_pid "$CTL_PID"
  STORE=$STORE_SAVED
  stop_pid "$SIM_PID"

  # --- duplicates from a raced create: two replicas keep the same winner
  rm -f "$T/sessions.db"*
  start_cubesim --dialect "$d"
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: dup1}\nspec: {template: shell}\n' | ctl apply -f - >/dev/null
  a=$(sim_create dup1 600 default "$(uid_of dup1)")
  sim_advance 10
  b=$(sim_create dup1 600 default "$(uid_of dup1)")
  start_controller "r1-$d"; p1=$CTL_PID
  start_controller "r2-$d"; p2=$CTL_PID
  check "$d: duplicate resolved to one sandbox" wait_eq 10 1 sim_live_for dup1
  check "$d: the oldest sandbox wins" test "$(sim_state_id "$a")" = running
  check "$d: the younger one is deleted" test "$(sim_state_id "$b")" = deleted
  check "$d: status links the winner" wait_eq 5 "$a" sess_field dup1 default .status.sandboxID
  wait_passes 2 "r1-$d" "r2-$d"
  check "$d: still one sandbox after both replicas ran" test "$(sim_live_for dup1)" = 1
  stop_pid "$p1"; stop_pid "$p2"; stop_pid "$SIM_PID"

  # --- three replicas see the same new sessions at once: the create
  # claim (status.createIntent, compare-and-set) lets one create each
  rm -f "$T/sessions.db"*
  start_cubesim --dialect "$d"
  # the replicas are up and have listed the empty store first
  start_controller "c1-$d"; p1=$CTL_PID
  start_controller "c2-$d"; p2=$CTL_PID
  start_controller "c3-$d"; p3=$CTL_PID
  wait_passes 1 "c1-$d" "c2-$d" "c3-$d"
  i=0
  : >"$T/many.yaml"
  while [ $i -lt 30 ]; do
    printf -- '---\napiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: m%02d}\nspec: {template: shell}\n' "$i" >>"$T/many.yaml"
    i=$((i + 1))
  done
  ctl apply -f "$T/many.yaml" >/dev/null
  live_running() { sim_truth | jq '[.[] | select(.state=="running")] | length'; }
  linked() { ctl get sessions -o json | jq '[.items[] | select(.status.sandboxID != null)] | length'; }
  check "$d: 30 sessions by 3 replicas: 30 sandboxes" wait_eq 20 30 live_running
  check "$d: all 30 linked" wait_eq 10 30 linked
  # a sleep: a duplicate would come of a claim waited out (a time)
  sleep 2
  check "$d: exactly 30 creates in Cube's audit (no duplicate made)" \
    test "$(sim_audit | jq -s '[.[] | select(.event=="create" and .status==201)] | length')" = 30
  check "$d: no claim left behind" \
    test "$(ctl get sessions -o json | jq '[.items[] | select(.status.createIntent != null)] | length')" = 0
  stop_pid "$p1"; stop_pid "$p2"; stop_pid "$p3"; stop_pid "$SIM_PID"

  # --- a plan gone stale: the reclaim of zz waits behind 20 creates (qps
  # 4: 5 s); meanwhile reclaimAfter is raised. The delete's intent is a
  # compare-and-set on the version the plan read: it loses, and the delete
  # is skipped (rules 3 and 11, the store's side).
  rm -f "$T/sessions.db"*
  start_cubesim --dialect "$d"
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: zz}\nspec: {template: shell, reclaimAfter: 1h}\n' | ctl apply -f - >/dev/null
  z=$(sim_create zz 60 default "$(uid_of zz)")
  sim_advance 120
  sim_advance 3700
  check "$d: zz's sandbox paused for over an hour" test "$(sim_state_id "$z")" = paused
  apply_n a 20
  start_controller "stale-$d" --cube-qps 4 --audit-log "$T/stale-$d.jsonl"; p1=$CTL_PID
  # the plan holds the reclaim and its run has started its creates (the
  # links it adopted are written before them)
  creates_ge() { [ "$(sim_audit | jq -s '[.[] | select(.event=="create")] | length')" -ge "$1" ]; }
  wait_until 10 grep -q 'msg=action .*action=delete session=default/zz' "$T/stale-$d.log"
  wait_until 10 creates_ge 2 # zz's own (made behind our back) and a first
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: zz}\nspec: {template: shell, reclaimAfter: 24h}\n' | ctl apply -f - >/dev/null
  check "$d: reclaimAfter raised while the planned reclaim still waited" \
    sh -c "grep -q 'msg=action .*action=delete session=default/zz' '$T/stale-$d.log' && ! grep -q '$z' '$T/stale-$d.jsonl' 2>/dev/null"
  # the stale plan is never carried out: either its intent loses its
  # compare-and-set (an audit line "skipped ... changed since the plan"),
  # or the plan is dropped before (its early link write lost to a newer
  # look); in no case a DELETE of zz's sandbox
  not_skipped() { jq -s '[.[] | select(.sandboxID=="'"$z"'" and .outcome!="skipped")] | length' "$T/stale-$d.jsonl" 2>/dev/null || echo 0; }
  check "$d: the 20 creates behind which the reclaim waited are done" wait_eq 40 21 live_total
  # the reclaim comes next: its audit line (any outcome) says it ended
  wait_until 10 grep -q "$z" "$T/stale-$d.jsonl"
  check "$d: the stale reclaim was not carried out (no DELETE of zz's sandbox)" \
    test "$(sim_audit | jq -s '[.[] | select(.event=="delete" and .sandboxID=="'"$z"'")] | length')" = 0
  check "$d: no audit line for it but a skip" test "$(not_skipped)" = 0
  check "$d: zz's sandbox is still there" test "$(sim_state_id "$z")" = paused
  stop_pid "$p1"; stop_pid "$SIM_PID"

  # --- link first: zz's sandbox (tags only, no status link: its creator
  # died) is adopted; the link is written before zz's pause, which waits
  # behind 20 creates at qps 4 (5 s; a late link can be lost with the tags)
  rm -f "$T/sessions.db"*
  start_cubesim --dialect "$d"
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: zz}\nspec: {template: shell, state: Paused}\n' | ctl apply -f - >/dev/null
  z=$(sim_create zz 600 default "$(uid_of zz)")
  apply_n a 20
  start_controller "link-$d" --cube-qps 4; p1=$CTL_PID
  check "$d: adopted sandbox linked early" wait_eq 5 "$z" sess_field zz default .status.sandboxID
  check "$d: ... while its pause still waits" test "$(sim_state_id "$z")" = running
  check "$d: ... then paused" wait_eq 40 paused sim_state_id "$z"
  stop_pid "$p1"; stop_pid "$SIM_PID"

  # --- set-timeout only on a sandbox just seen running: zz's timeout change
  # waits behind 20 creates (qps 4: 5 s) while zz idle-pauses; Cube would move
  # a paused sandbox's endAt (its reclaim clock) with a new timeout
  rm -f "$T/sessions.db"*
  start_cubesim --dialect "$d"
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: zz}\nspec: {template: shell, idleTimeout: 30m}\n' | ctl apply -f - >/dev/null
  z=$(sim_create zz 600 default "$(uid_of zz)")
  apply_n a 20
  start_controller "tmo-$d" --cube-qps 4; p1=$CTL_PID
  wait_eq 5 "$z" sess_field zz default .status.sandboxID >/dev/null
  sim_advance 700
  check "$d: zz idle-paused before its set-timeout ran" wait_eq 5 paused sim_state_id "$z"
  created() { sim_audit | jq -s '[.[] | select(.event=="create")] | length'; }
  wait_eq 40 21 created >/dev/null
  # zz's set-timeout comes next: wait for its end (done or failed)
  wait_until 10 grep -Eq 'msg="action (done|failed)" .*action=set-timeout session=default/zz' "$T/tmo-$d.log"
  check "$d: no timeout set on the paused sandbox" test \
    "$(sim_audit | jq -s --arg id "$z" '[.[] | select(.sandboxID==$id and .event=="timeout")] | length')" = 0
  stop_pid "$p1"; stop_pid "$SIM_PID"

  # --- a create whose answer is lost (Cube made the sandbox, the reply was
  # cut): the claim's outcome is unknown, so no second create; the next
  # pass finds the sandbox by its tags and links it
  rm -f "$T/sessions.db"*
  start_cubesim --dialect "$d" --faults 'create:reset=1,list:truncate=1'
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: lost}\nspec: {template: shell}\n' | ctl apply -f - >/dev/null
  start_controller "lost-$d"; p1=$CTL_PID
  creates() { sim_audit | jq -s '[.[] | select(.event=="create")] | length'; }
  linked_lost() { v=$(sess_field lost default .status.sandboxID); [ -n "$v" ] && [ "$v" != null ] && echo 1; }
  # a sleep: a retry storm would come of the requeues (their backoff)
  sleep 4
  check "$d: lists short, create replies lost: one create, not a retry storm" test "$(creates)" = 1
  sim_faults '{"spec": ""}'
  check "$d: the lost create's sandbox is then found by its tags and linked" wait_eq 10 1 linked_lost
  check "$d: the claim is cleared once linked" test \
    "$(sess_field lost default '.status.createIntent // "none"')" = none
  stop_pid "$p1"; stop_pid "$SIM_PID"

  # --- a dead replica's claim, old by Cube's clock: still waited out for
  # the TTL as this replica sees it (a Cube clock running fast against
  # real delays must not let a duplicate through)
  rm -f "$T/sessions.db"*
  start_cubesim --dialect "$d"
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: ghost}\nspec: {template: shell}\n' | ctl apply -f - >/dev/null
  # a claimant name longer than any fixed buffer (the CRD allows 253)
  long=$(printf '%0200d' 0 | tr 0 x)
  sqlite3 "$T/sessions.db" "UPDATE objects SET status='{\"phase\":\"Creating\",\"createIntent\":{\"by\":\"r9#dead$long\",\"at\":\"2020-01-01T00:00:00Z\"}}' WHERE name='ghost'"
  start_controller "ghost-$d" --create-claim-ttl 3s; p1=$CTL_PID
  creates() { sim_audit | jq -s '[.[] | select(.event=="create")] | length'; }
  sleep 1.5
  check "$d: an old foreign claim: no create before the TTL as seen here" test "$(creates)" = 0
  check "$d: ... the wait is logged" grep -q "waiting: the create claim of r9#dead" "$T/ghost-$d.log"
  check "$d: ... then the create" wait_eq 10 1 creates
  stop_pid "$p1"; stop_pid "$SIM_PID"

  # --- metadata lost on pause does not cause a second sandbox
  rm -f "$T/sessions.db"*
  start_cubesim --dialect "$d" --faults 'pause:droplabels=1'
  start_controller "md-$d"
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: md1}\nspec:\n  template: shell\n' >"$T/md1.yaml"
  check "$d: md1 applied" ctl apply -f "$T/md1.yaml"
  check "$d: md1 created" wait_eq 10 1 live_total
  printf '  state: Paused\n' >>"$T/md1.yaml"
  check "$d: md1 set Paused" ctl apply -f "$T/md1.yaml"
  check "$d: md1 paused (its tags dropped)" wait_eq 10 1 count_state paused
  check "$d: Cube lost the tags" test "$(sim_truth | jq '[.[] | select(.state=="paused")][0].metadata | length')" = 0
  wait_passes 3 "md-$d"
  check "$d: no second sandbox after tags were lost" test "$(live_total)" = 1
  sed -i '/  state: Paused/d' "$T/md1.yaml"
  check "$d: md1 set Active" ctl apply -f "$T/md1.yaml"
  check "$d: resumed through the status link" wait_eq 10 1 count_state running
  check "$d: still one sandbox" test "$(live_total)" = 1
  stop_pid "$CTL_PID"; stop_pid "$SIM_PID"

  # --- injected 500/503/429 and truncated lists: retries, never a wrong delete
  rm -f "$T/sessions.db"*
  start_cubesim --dialect "$d" --seed 7 --faults '*:error=0.2@500,pause:error=0.2@503+retry=1,create:error=0.1@429,list:truncate=0.3'
  start_controller "f-$d"
  apply_n f 10 Active 15m
  check "$d: under faults every session gets one sandbox" wait_eq 30 10 live_total
  # a sleep: a wrong delete could come of a retry (its backoff)
  sleep 3
  check "$d: under faults nothing was deleted" test "$(deletes_in_audit)" = 0
  stop_pid "$CTL_PID"; stop_pid "$SIM_PID"

  # --- a controller whose local clock is hours off decides alike
  ftlib=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -n 1)
  if [ -n "$ftlib" ]; then
    for skew in +3h -2h; do
      rm -f "$T/sessions.db"*
      start_cubesim --dialect "$d"
      printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: fk1}\nspec: {template: shell, idleTimeout: 1m, reclaimAfter: 1h}\n' | ctl apply -f - >/dev/null
      # libfaketime preloaded directly, so $! is the controller itself
      # (ASan wants its runtime first; libfaketime comes first here: let it)
      ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
      FAKETIME="$skew" LD_PRELOAD="$ftlib" "$BINDIR/session-controller" --store "$STORE" --cube-url "$SIM" \
        --metrics-addr 127.0.0.1:0 --resync 1s --replica "fk$skew" 2>"$T/fk-$d.log" &
      fpid=$!
      PIDS="$PIDS $fpid"
      check "$d/$skew: created" wait_eq 10 1 sim_live_for fk1
      sim_advance 120
      wait_passes 3 "fk-$d"
      check "$d/$skew: not reclaimed early by a skewed local clock" test "$(sim_live_for fk1)" = 1
      sim_advance 3700
      check "$d/$skew: reclaimed by Cube's clock" wait_eq 10 0 sim_live_for fk1
      stop_pid "$fpid"; stop_pid "$SIM_PID"
    done
  else
    echo "skip: libfaketime not installed (hack/install-deps.sh installs it)"
  fi
done
finish
