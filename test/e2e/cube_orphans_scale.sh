#!/bin/sh
# End-to-end: orphans at Cube's real scale. Cube's list does not page: it
# scans the first 100 sandboxes of its store and filters those, never
# sends X-Next-Token, and so a list of 100 rows may be short (cubesim's
# cube dialect lists the same way, docs/cubesim.md). The controller used
# to hold orphan deletion for every pass with such a list, that is for
# good once Cube holds 100 sandboxes or more. An orphan is concluded from
# its session's absence in the store, not from the list: listed orphans
# are deleted (each after its own GET) and nothing is concluded from a
# sandbox's absence in the list.
#
# Per dialect (cube: short lists; e2b: paged, the same outcome):
#  1. bulk: 105 paused orphans past the grace beside 3 real sessions
#     (running, idle-paused, Paused): all 105 deleted (--force: the
#     blast-radius guard would hold a bulk deletion), no session's sandbox
#     touched, though in cube those sandboxes are in no list until 100
#     orphans are gone;
#  2. a handful: 5 paused orphans among 110 sessions' paused sandboxes,
#     without --force: the 5 deleted, the 110 kept (in cube 15 of them are
#     in no list and are confirmed by GET).
# In cube the short list is still counted
# (session_controller_list_truncated_total) and does not stop any of it.
. "$(dirname "$0")/lib/common.sh"

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
# apply_n PREFIX N STATE IDLE: N sessions PREFIX-0.., reclaimAfter 24h
apply_n() {
  i=0
  : >"$T/many.yaml"
  while [ $i -lt "$2" ]; do
    printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s-%d}\nspec: {template: shell, state: %s, idleTimeout: %s, reclaimAfter: 24h}\n---\n' \
      "$1" $i "$3" "$4" >>"$T/many.yaml"
    i=$((i + 1))
  done
  ctl apply -f "$T/many.yaml" >/dev/null
}
# make_orphans N FILE: N sandboxes tagged as the controller tags its own
# (lea.managed-by, lea.tenant_id, lea.session_id) for sessions that do not
# exist, 1 s timeout with pause: paused a second later; IDs into FILE
make_orphans() {
  : >"$2"
  i=0
  while [ $i -lt "$1" ]; do
    sim_sandbox "lost-$i" session-controller "" 1 default >>"$2"
    i=$((i + 1))
  done
}
linked() { ctl get sessions -o json | jq '[.items[] | select((.status.sandboxID // "") != "")] | length'; }
# the sessions' linked sandbox IDs, sorted
links() { ctl get sessions -o json | jq -r '.items[].status.sandboxID // empty' | sort; }
# how many of the IDs in FILE are not deleted in Cube
live_of() { sim_truth | jq --rawfile ids "$1" \
  '($ids | split("\n") | map(select(length > 0))) as $w |
   [.[] | select(.state != "deleted" and (.sandboxID | IN($w[])))] | length'; }
paused_of() { sim_truth | jq --rawfile ids "$1" \
  '($ids | split("\n") | map(select(length > 0))) as $w |
   [.[] | select(.state == "paused" and (.sandboxID | IN($w[])))] | length'; }
# the IDs Cube was asked to DELETE (answered 204), sorted
deleted_ids() { sim_audit | jq -r 'select(.event == "delete" and .source == "api" and .status == 204) | .sandboxID' | sort; }
# every DELETE Cube was asked (whatever its answer) was of an ID in FILE
only_orphans_asked() {
  sim_audit | jq -r 'select(.event == "delete" and .source == "api") | .sandboxID' |
    sort -u >"$T/asked"
  sort "$1" >"$T/allowed"
  [ -z "$(comm -23 "$T/asked" "$T/allowed")" ]
}
creates() { sim_audit | jq -s '[.[] | select(.event == "create" and .status == 201)] | length'; }
metric() { curl -sf "http://127.0.0.1:$(metrics_port "$1")/metrics" | awk -v m="$2" '$1 == m {print $2}'; }
# orphan deletions the controller's audit log has done, with the fact of
# its confirming GET (observed paused)
orphans_done() { jq -s '[.[] | select(.kind == "orphan" and .outcome == "done" and .observedState == "paused")] | length' "$1" 2>/dev/null; }

# the premise of the cube case: Cube's list of our sandboxes is the 100
# newest, all orphans: none of the sessions' sandboxes, and no next token
short_list_premise() {
  curl -s -D "$T/hdr" "$SIM/v2/sandboxes?metadata=lea.managed-by%3Dsession-controller&limit=100" |
    jq -r '.[].sandboxID' | sort >"$T/listed"
  [ "$(grep -c . "$T/listed")" -eq 100 ] && [ -z "$(comm -12 "$T/listed" "$T/links")" ] &&
    ! grep -qi '^X-Next-Token' "$T/hdr"
}

# the premise of the cube case with a handful: the paused list is 100
# rows (5 orphans, 95 sessions' sandboxes), 15 sessions' sandboxes in
# no list, no next token
few_premise() {
  curl -s -D "$T/hdr" "$SIM/v2/sandboxes?metadata=lea.managed-by%3Dsession-controller&state=paused&limit=100" |
    jq -r '.[].sandboxID' | sort >"$T/listed"
  sort "$T/orphans" >"$T/orph.sorted"
  [ "$(grep -c . "$T/listed")" -eq 100 ] &&
    [ "$(comm -12 "$T/listed" "$T/orph.sorted" | grep -c .)" -eq 5 ] &&
    [ "$(comm -13 "$T/listed" "$T/links" | grep -c .)" -eq 15 ] &&
    ! grep -qi '^X-Next-Token' "$T/hdr"
}

# check_outcome D NAME ORPHANS N_ORPH LINKS N_SESS: every orphan deleted
# and nothing else; every session keeps its sandbox
check_outcome() {
  co_d=$1; co_n=$2; orph=$3; norph=$4; lk=$5; nsess=$6
  check "$co_d/$co_n: all $norph orphans deleted" wait_eq 60 0 live_of "$orph"
  sort "$orph" >"$T/orph.sorted"
  deleted_ids >"$T/deleted"
  check "$co_d/$co_n: Cube was asked to delete exactly the $norph orphans" \
    cmp -s "$T/orph.sorted" "$T/deleted"
  check "$co_d/$co_n: no DELETE asked of any other sandbox" only_orphans_asked "$orph"
  check "$co_d/$co_n: no session's sandbox deleted: all $nsess live" \
    test "$(live_of "$lk")" = "$nsess"
  links >"$T/links.after"
  check "$co_d/$co_n: every session still linked to its own sandbox" \
    cmp -s "$lk" "$T/links.after"
  check "$co_d/$co_n: no sandbox made again" test "$(creates)" = $((nsess + norph))
  check "$co_d/$co_n: $norph orphan deletions audited, each after its GET" \
    wait_eq 10 "$norph" orphans_done "$T/audit-$co_d-$co_n.jsonl"
}

for d in cube e2b; do
  # --- 1. bulk: 105 orphans past the grace beside 3 sessions, --force
  rm -f "$T/sessions.db"*
  start_cubesim --dialect "$d"
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: run}\nspec: {template: shell, idleTimeout: 1h, reclaimAfter: 24h}\n---\napiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: idle}\nspec: {template: shell, idleTimeout: 1m, reclaimAfter: 24h}\n---\napiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: held}\nspec: {template: shell, reclaimAfter: 24h}\n' |
    ctl apply -f - >/dev/null
  start_controller "bulk-$d" --orphan-grace 1m --force \
    --audit-log "$T/audit-$d-bulk.jsonl"
  cp=$CTL_PID
  check "$d/bulk: 3 sessions linked" wait_eq 20 3 linked
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: held}\nspec: {template: shell, state: Paused, reclaimAfter: 24h}\n' |
    ctl apply -f - >/dev/null
  check "$d/bulk: the Paused session's sandbox paused" wait_eq 20 paused sim_state_of held
  links >"$T/links"
  make_orphans 105 "$T/orphans"
  check "$d/bulk: 105 orphans made" test "$(grep -c . "$T/orphans")" = 105
  check "$d/bulk: the orphans pause" wait_eq 20 105 paused_of "$T/orphans"
  sleep 2
  check "$d/bulk: no orphan deleted within the grace" test "$(live_of "$T/orphans")" = 105
  if [ "$d" = cube ]; then
    check "$d/bulk: Cube lists 100 of our sandboxes, all orphans, no token" short_list_premise
  fi
  sim_advance 120  # past the 1m grace; idle pauses at 1m
  check_outcome "$d" bulk "$T/orphans" 105 "$T/links" 3
  check "$d/bulk: the idle session's sandbox idle-paused, kept" test "$(sim_state_of idle)" = paused
  check "$d/bulk: the running session's sandbox still running" test "$(sim_state_of run)" = running
  check "$d/bulk: orphans reclaimed metric is 105" test "$(metric "bulk-$d" session_controller_orphans_reclaimed_total)" = 105
  if [ "$d" = cube ]; then
    # Cube's list of the first 100 sandboxes, all orphans: the sessions'
    # sandboxes were in no list; the short list is still counted
    check "$d/bulk: the short lists were counted" \
      test "$(metric "bulk-$d" session_controller_list_truncated_total)" -ge 1
  fi
  stop_pid "$cp"; stop_pid "$SIM_PID"

  # --- 2. a handful: 5 orphans among 110 sessions' paused sandboxes, no
  # --force (5 of 100 listed: within the blast-radius guard)
  rm -f "$T/sessions.db"*
  start_cubesim --dialect "$d"
  apply_n s 110 Active 1m
  start_controller "few-$d" --orphan-grace 1m \
    --audit-log "$T/audit-$d-few.jsonl"
  cp=$CTL_PID
  check "$d/few: 110 sessions linked" wait_eq 60 110 linked
  links >"$T/links"
  sim_advance 90   # every session's sandbox idle-paused at 1m
  paused_total() { sim_truth | jq '[.[] | select(.state == "paused")] | length'; }
  check "$d/few: the 110 sandboxes idle-paused" wait_eq 20 110 paused_total
  make_orphans 5 "$T/orphans"
  check "$d/few: the 5 orphans pause" wait_eq 20 5 paused_of "$T/orphans"
  sleep 2
  check "$d/few: no orphan deleted within the grace" test "$(live_of "$T/orphans")" = 5
  [ "$d" != cube ] ||
    check "$d/few: Cube lists 100 paused: the 5 orphans and 95 of 110, no token" few_premise
  sim_advance 120  # past the grace
  check_outcome "$d" few "$T/orphans" 5 "$T/links" 110
  check "$d/few: the guard did not trip" sh -c "! grep -q 'delete guard tripped' '$T/few-$d.log'"
  if [ "$d" = cube ]; then
    check "$d/few: the short lists were counted" \
      test "$(metric "few-$d" session_controller_list_truncated_total)" -ge 1
  fi
  sleep 2
  check "$d/few: 2 s later, no DELETE of anything but the orphans" only_orphans_asked "$T/orphans"
  stop_pid "$cp"; stop_pid "$SIM_PID"
done
finish
