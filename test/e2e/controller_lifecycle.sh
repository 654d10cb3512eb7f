#!/bin/sh
# End-to-end: the Session lifecycle of docs/session-api.md against cubesim,
# in both dialects, on cubesim's virtual clock (moved by the test).
. "$(dirname "$0")/lib/common.sh"

run_dialect() {
  d=$1
  rm -f "$T/sessions.db"*
  start_cubesim --dialect "$d" --clock-speed 1
  start_controller "ctl-$d" --orphan-grace 10m

  # --- create on apply, with tags, lifecycle and sandboxMetadata
  cat >"$T/s1.yaml" <<YAML
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: s1, namespace: tenant-a}
spec:
  template: python-data
  idleTimeout: 15m
  reclaimAfter: 1h
  envVars: {LANG: C.UTF-8}
  sandboxMetadata: {course: cs101}
YAML
  ctl apply -f "$T/s1.yaml" >/dev/null
  check "$d: sandbox created on apply" wait_eq 10 1 sim_live_for s1
  sb=$(sim_truth | jq -r '[.[] | select(.metadata["lea.session_id"]=="s1")][0]')
  id=$(echo "$sb" | jq -r .sandboxID)
  check "$d: tags session/tenant/managed-by" test "$(echo "$sb" | jq -r '[.metadata["lea.session_id"], .metadata["lea.tenant_id"], .metadata["lea.managed-by"], .metadata.course] | join(",")')" = "s1,tenant-a,session-controller,cs101"
  check "$d: created with pause on timeout and auto-resume" test "$(echo "$sb" | jq -r '[.autoPause, .autoResume, .timeout] | join(",")')" = "true,true,900"
  check "$d: status links the sandbox" wait_eq 5 "$id,Running" sess_field s1 tenant-a '.status.sandboxID + "," + .status.phase'

  # --- Cube's idle pause is left alone
  sim_advance 960
  check "$d: Cube paused it when idle" wait_eq 5 paused sim_state_of s1
  wait_passes 3 "ctl-$d"
  check "$d: idle pause left alone (no resume)" test "$(sim_state_of s1)" = paused
  check "$d: no connect call from the controller" test "$(sim_audit | jq -s --arg id "$id" '[.[] | select(.sandboxID==$id and ((.path // "")|test("connect|resume")))] | length')" = 0
  check "$d: phase Paused" wait_eq 5 Paused sess_field s1 tenant-a .status.phase

  # --- user traffic auto-resumes; no second sandbox
  check "$d: traffic auto-resumes" test "$(sim_traffic "$id")" = 200
  wait_passes 2 "ctl-$d"
  check "$d: still one sandbox" test "$(sim_live_for s1)" = 1

  # --- idleTimeout change reaches Cube
  sed 's/idleTimeout: 15m/idleTimeout: 20m/' "$T/s1.yaml" >"$T/s1b.yaml"
  ctl apply -f "$T/s1b.yaml" >/dev/null
  check "$d: idleTimeout change set on the sandbox" wait_eq 10 1200 sb_field "$id" timeout

  # --- state Paused pauses; back to Active resumes the controller's pause
  printf '  state: Paused\n' >>"$T/s1b.yaml"
  ctl apply -f "$T/s1b.yaml" >/dev/null
  check "$d: state Paused pauses it" wait_eq 10 paused sim_state_of s1
  check "$d: pausedByController recorded" wait_eq 5 true sess_field s1 tenant-a .status.pausedByController
  sed 's/idleTimeout: 15m/idleTimeout: 20m/' "$T/s1.yaml" >"$T/s1b.yaml"
  ctl apply -f "$T/s1b.yaml" >/dev/null
  check "$d: Active resumes a controller-paused sandbox" wait_eq 10 running sim_state_of s1
  check "$d: still the same sandbox" test "$(sim_truth | jq -r '[.[] | select(.state!="deleted" and .metadata["lea.session_id"]=="s1")][0].sandboxID')" = "$id"

  # --- reclaim by Cube's clock, not before; wake re-creates
  sim_advance 1300
  check "$d: idle-paused again" wait_eq 5 paused sim_state_of s1
  sim_advance 1800
  wait_passes 3 "ctl-$d"
  check "$d: not reclaimed before reclaimAfter" test "$(sim_state_of s1)" = paused
  sim_advance 1900
  check "$d: reclaimed after reclaimAfter" wait_eq 10 0 sim_live_for s1
  check "$d: phase Reclaimed" wait_eq 5 Reclaimed sess_field s1 tenant-a .status.phase
  wait_passes 2 "ctl-$d"
  check "$d: no new sandbox after a reclaim" test "$(sim_live_for s1)" = 0
  ctl wake s1 -n tenant-a >/dev/null
  check "$d: wake re-creates" wait_eq 10 1 sim_live_for s1

  # --- Ended and deleted sessions lose their sandbox
  cat >"$T/s2.yaml" <<YAML
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: s2, namespace: tenant-a}
spec: {template: shell}
YAML
  ctl apply -f "$T/s2.yaml" >/dev/null
  check "$d: s2 created" wait_eq 10 1 sim_live_for s2
  ctl delete session s2 -n tenant-a >/dev/null
  check "$d: deleted session loses its sandbox" wait_eq 10 0 sim_live_for s2
  check "$d: tombstone purged after cleanup" wait_until 10 sh -c "! \"$BINDIR/sessionctl\" --store $STORE get sessions s2 -n tenant-a >/dev/null 2>&1"
  printf '  state: Ended\n' >>"$T/s1b.yaml"
  ctl apply -f "$T/s1b.yaml" >/dev/null
  check "$d: Ended session loses its sandbox" wait_eq 10 0 sim_live_for s1
  check "$d: phase Ended" wait_eq 5 Ended sess_field s1 tenant-a .status.phase

  # --- a Running session stays running through many idle timeouts
  cat >"$T/s3.yaml" <<YAML
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: s3, namespace: tenant-b}
spec: {template: shell, state: Running, idleTimeout: 1m}
YAML
  ctl apply -f "$T/s3.yaml" >/dev/null
  check "$d: Running session created" wait_eq 10 running sim_state_of s3
  # each step of Cube's clock is seen by a pass begun after it, its
  # actions (the connect) done before the next step: the clock moves just
  # after a pass ends (a full pass waits for its actions), and the next
  # pass begins a resync later
  wait_passes 1 "ctl-$d"
  i=0
  while [ $i -lt 8 ]; do
    sim_advance 20
    wait_passes 1 "ctl-$d"
    i=$((i + 1))
  done
  id3=$(sim_truth | jq -r '[.[] | select(.state!="deleted" and .metadata["lea.session_id"]=="s3")][0].sandboxID')
  check "$d: Running session never paused across 160s of 60s idle timeouts" test "$(sim_audit | jq -s --arg id "$id3" '[.[] | select(.sandboxID==$id and (.stateAfter=="pausing" or .stateAfter=="paused" or .stateAfter=="deleted"))] | length')" = 0
  check "$d: Running session still running" test "$(sim_state_of s3)" = running

  kill "$CTL_PID" "$SIM_PID" 2>/dev/null
  wait "$CTL_PID" 2>/dev/null
  ctl_rc=$?
  check "$d: controller exits 0 on SIGTERM" test "$ctl_rc" = 0
  wait "$SIM_PID" 2>/dev/null
}

# the two dialects at once, each in a run of its own (e2e_split,
# lib/common.sh; ONLY=cube or ONLY=e2b runs one)
e2e_split ONLY cube e2b
run_dialect "$ONLY"
finish
