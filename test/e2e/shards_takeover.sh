#!/bin/sh
# End-to-end: the takeover pass of sharding (docs/controller.md,
# "Sharding", "Changes"). cubesim in the e2b dialect (pages of 100 rows),
# three replicas with --shards auto, --resync 1s, 900 sessions over 18
# tenants (50 each; the replica killed owns none at odds of (2/3)^18).
# kill -9 of one replica, and 36 sessions applied right after it over
# every tenant:
#  1. a survivor that gained tenants looks at those only in its first
#     full pass after the change (a takeover pass: the tenants it kept
#     were looked at by the pass before): its list line says so, names
#     fewer tenants than its next pass (which looks at every one it owns),
#     and session_controller_shard_takeover_passes_total counts it;
#  2. all 936 sessions run within two resyncs (+1 s for date's whole
#     seconds), each with one sandbox, and the survivors own all of them;
#  3. the pass after the takeover pass looks at every owned tenant again
#     (no two takeover passes in a row);
#  4. the same with --shard-whole-list-every 0 (always whole): the
#     takeover pass lists both states whole.
. "$(dirname "$0")/lib/common.sh"
SHARD_TENANTS=18
. "$(dirname "$0")/lib/shards.sh"

owned_by_both() { [ $(( $(metric "$1" session_controller_shard_sessions) + $(metric "$2" session_controller_shard_sessions) )) -eq "$3" ]; }
# lists_after NAME: the "lists of this full pass" lines of NAME after its
# last "membership changed" line
lists_after() {
  awk '/msg="sharding: membership changed"/ { n = 0; delete l; next }
       /msg="sharding: lists of this full pass"/ { l[++n] = $0 }
       END { for(i = 1; i <= n; i++) print l[i] }' "$T/$1.log"
}
tenants_of() { sed -n 's/.* tenants=\([0-9]*\) .*/\1/p'; }

# scenario P [ARGS...]: replicas P1 P2 P3 with ARGS on a store and a
# cubesim of their own; P2 is killed
scenario() {
  p=$1; shift
  [ -z "${SIM_PID:-}" ] || { kill "$SIM_PID"; wait "$SIM_PID" 2>/dev/null; }
  start_cubesim --dialect e2b --clock-speed 1
  STORE="sqlite:$T/$p.db"
  A="--shards auto --cube-qps 0 --log-level debug $*"
  start_controller "${p}1" $A; p1=$CTL_PID
  wait_until 10 test -e "$T/$p.db"
  start_controller "${p}2" $A; p2=$CTL_PID
  start_controller "${p}3" $A; p3=$CTL_PID
  check "$p: three replicas see three members" wait_until 10 members_are 3 "${p}1" "${p}2" "${p}3"

  manifest a 50
  ctl apply -f "$T/m.yaml" >/dev/null
  check "$p: 900 sessions running" wait_eq 20 900 linked
  sleep 2

  kill -9 "$p2"; wait "$p2" 2>/dev/null
  t0=$(date +%s)
  manifest b 2
  ctl apply -f "$T/m.yaml" >/dev/null
  check "$p: after kill -9: all 936 running" wait_eq 20 936 linked
  t1=$(date +%s)
  echo "  (kill -9 to all 36 new sessions running: $((t1 - t0)) s; bound: two resyncs)"
  check "$p: ... within two resyncs ($((t1 - t0)) s <= 2 s + 1 s of date's rounding)" test $((t1 - t0)) -le 3
  check "$p: the survivors see two members" wait_until 5 members_are 2 "${p}1" "${p}3"
  check "$p: the survivors own all 936 sessions" wait_until 5 owned_by_both "${p}1" "${p}3" 936
  check "$p: no sandbox twice after the takeover" test "$(live_total)" = 936
  sleep 2 # a pass after the takeover on each survivor

  takeovers=0
  for rp in "${p}1" "${p}3"; do
    lists_after "$rp" >"$T/$rp.after"
    first=$(sed -n 1p "$T/$rp.after")
    second=$(sed -n 2p "$T/$rp.after")
    case $first in
    *'scope="takeover: the tenants gained only"'*)
      takeovers=$((takeovers + 1))
      g=$(echo "$first" | tenants_of); a=$(echo "$second" | tenants_of)
      echo "  ($rp: a takeover pass over $g tenants gained, then a pass over all $a it owns: ${first#*running=})"
      check "$rp: the takeover pass lists fewer tenants ($g) than it owns ($a)" test "${g:-0}" -gt 0 -a "${g:-0}" -lt "${a:-0}"
      check "$rp: the pass after it looks at every owned tenant" \
        sh -c 'case $1 in *"scope=\"every owned tenant\""*) exit 0 ;; esac; exit 1' - "$second"
      check "$rp: counted in session_controller_shard_takeover_passes_total" \
        test "$(metric "$rp" session_controller_shard_takeover_passes_total)" -ge 1
      case " $* " in
      *" --shard-whole-list-every 0 "*)
        check "$rp: always whole: the takeover pass lists both states whole" \
          sh -c 'case $1 in *"running=whole paused=whole"*) exit 0 ;; esac; exit 1' - "$first" ;;
      esac ;;
    *) echo "  ($rp: its first pass after the change (it gained nothing?): ${first#*running=})" ;;
    esac
  done
  check "$p: a survivor took its gains over with a takeover pass ($takeovers)" test "$takeovers" -ge 1
  kill "$p1" "$p3" 2>/dev/null; wait "$p1" "$p3" 2>/dev/null
}

scenario s
scenario w --shard-whole-list-every 0
finish
