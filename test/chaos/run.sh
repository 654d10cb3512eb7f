#!/bin/sh
# The chaos suite (docs/reliability.md): three controller replicas on one
# SQLite store with skewed local clocks, cubesim with faults at clock x60,
# a workload driver, a replica SIGKILLed every 1-3 s and restarted, then
# faults off and convergence, then the invariant checker. Users reach
# their sandboxes through connect (most) or raw traffic; once per dialect
# the store's files are made immutable for a few seconds (chattr +i; SKIP
# when not permitted) while a watcher records every intent the store holds.
#
# usage: test/chaos/run.sh [--dialect cube|e2b|both] [--seed N]
#          [--sessions N] [--virtual-hours H] [--short] [--faults SPEC]
#          [--skews "-2h +0 +3h"] [--speed X] [--converge-limit S] [--keep]
#          [--parallel]   (the dialects at once, each with its own cubesim)
#          [--shards off|auto]  (the replicas' --shards; default
#                         $CHAOS_SHARDS, else off: the rules must hold
#                         both ways, with any overlap while members churn)
#          [--cube-qps Q]  (the replicas' --cube-qps; default their own)
#          [--replicas N]  (1 to 3, default 3: N=1 against N=3 on one seed
#                         compares what the replicas cost Cube)
#          [--no-kill]     (no SIGKILLs: the calls of a calm fleet)
# Prints a table of counts per dialect and a final "N passed, N failed";
# a failure prints the command that replays it.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
dialects="cube e2b"
seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
sessions=2000
hours=6
speed=60
resync=2
short=0
keep=0
parallel=0
climit=""
cubeqps=""
skews="-2h +0 +3h"
shards=${CHAOS_SHARDS:-off}
nrep=3
nokill=0
faults='*:error=0.1@500,*:error=0.05@503+retry=1,*:reset=0.02,list:truncate=0.05,pause:droplabels=0.05,*:latency=20ms~10ms'
while [ $# -gt 0 ]; do
  case $1 in
  --dialect) case $2 in both) dialects="cube e2b" ;; cube|e2b) dialects=$2 ;;
             *) echo "run.sh: --dialect wants cube, e2b or both" >&2; exit 2 ;; esac; shift ;;
  --seed) seed=$2; shift ;;
  --sessions) sessions=$2; shift ;;
  --virtual-hours) hours=$2; shift ;;
  --speed) speed=$2; shift ;;
  --faults) faults=$2; shift ;;
  --skews) skews=$2; shift ;;
  --short) short=1; sessions=150; hours=0.7 ;;
  --keep) keep=1 ;;
  --parallel) parallel=1 ;;
  --shards) shards=$2; shift ;;
  --converge-limit) climit=$2; shift ;;
  --cube-qps) cubeqps=$2; shift ;;
  --replicas) nrep=$2; shift ;;
  --no-kill) nokill=1 ;;
  -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
  *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
case $seed in ''|*[!0-9]*) echo "run.sh: --seed wants a number" >&2; exit 2 ;; esac
case $shards in off|auto) ;; *) echo "run.sh: --shards wants off or auto" >&2; exit 2 ;; esac
case $nrep in 1|2|3) ;; *) echo "run.sh: --replicas wants 1, 2 or 3" >&2; exit 2 ;; esac
reps=$(seq 0 $((nrep - 1)) | tr '\n' ' ')

# the programs: the product's binaries, and the driver and checker built
# with the project's flags against build/libsc.a. Always the plain build:
# under `make asan` the parent make's BUILD/BINDIR/SANITIZE reach a child
# make through MAKEFLAGS (it built build/asan and left build/libsc.a
# missing), and the replicas run with libfaketime preloaded, which ASan's
# runtime does not allow; so the chaos run tests the -O2 binaries.
[ -x bin/session-controller ] && [ -x bin/cubesim ] && [ -f build/libsc.a ] ||
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s BUILD=build BINDIR=bin \
    SANITIZE= >/dev/null || exit 2
mkdir -p build/chaos
CFL="-std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -O2 -g -I. $(pkg-config --cflags json-c 2>/dev/null)"
LIBS="build/libsc.a -lcurl -lyaml -ljson-c -levent -lssl -lcrypto -lsqlite3 -lm"
for p in driver check; do
  if [ ! -x build/chaos/$p ] || [ test/chaos/$p.c -nt build/chaos/$p ] ||
     [ build/libsc.a -nt build/chaos/$p ]; then
    ${CC:-cc} $CFL -o build/chaos/$p test/chaos/$p.c $LIBS || exit 2
  fi
done
ftlib=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -n 1)
[ -n "$ftlib" ] || { echo "run.sh: libfaketime not installed (hack/install-deps.sh)" >&2; exit 2; }

T=$(mktemp -d "${TMPDIR:-/tmp}/sc-chaos.XXXXXX")
PIDS=""
cleanup() {
  chattr -i "$T"/*/sessions.db* 2>/dev/null
  for p in $PIDS; do kill "$p" 2>/dev/null; done
  for p in $PIDS; do wait "$p" 2>/dev/null; done
  [ "$keep" = 1 ] && echo "kept $T" || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
PASS=0
FAIL=0

# random numbers for the killer, from the seed (awk's rand)
awk -v s="$seed" 'BEGIN { srand(s); for(i = 0; i < 100000; i++)
  printf "%d %.2f %.2f\n", int(rand() * 3), 1 + rand() * 2, rand() * 0.3 }' >"$T/dice"

sim_get() { curl -sf --max-time 20 "$SIM$1"; }
sim_now_ms() { sim_get /_sim/clock | jq -r .nowMs; }

# start_replica I: (re)starts replica I with its skew; sets RPID_I
start_replica() {
  i=$1
  set -- $skews
  shift "$i"
  sk=$1
  FAKETIME="$sk" LD_PRELOAD="$ftlib" bin/session-controller --store "sqlite:$D/sessions.db" \
    --cube-url "$SIM" --metrics-addr 127.0.0.1:0 --resync "${resync}s" \
    --replica "r$i$sk" --create-store --audit-log "$D/audit-r$i.jsonl" --log-level "${CHAOS_LOG_LEVEL:-warn}" \
    --shards "$shards" ${cubeqps:+--cube-qps "$cubeqps"} \
    2>>"$D/r$i.log" &
  eval "RPID_$i=$!"
  PIDS="$PIDS $!"
}

# store_fault: the store's files immutable for fault_len s, no kills
# meanwhile (a replica restarted then could not open its store); sets SF
# (the checker's --store-fault) and fault_note. The database and its WAL
# are made immutable, not the -shm: SQLite maps the -shm shared, and a
# process that dirties a page of an immutable file's mapping dies of
# SIGBUS (ext4 refuses the page fault; the sqlite3 shell shows it too),
# which is a kill, not a failing write. With the WAL immutable every
# write transaction fails (disk I/O error) and reads go on.
store_fault() {
  fault_done=1
  sleep 1   # a replica just restarted has opened its store
  fa=$(sim_now_ms)
  for i in $reps; do
    eval "nerr0_$i=\$(grep -c 'store write failed' \"\$D/r\$i.log\")"
  done
  if chattr +i "$D/sessions.db" 2>/dev/null; then
    [ -f "$D/sessions.db-wal" ] && chattr +i "$D/sessions.db-wal"
    sleep "$fault_len"
    chattr -i "$D"/sessions.db*
    fb=$(sim_now_ms)
    SF="--store-fault $fa,$fb"
    nerr=0
    for i in $reps; do
      eval "n0=\$nerr0_$i"
      [ "$(grep -c 'store write failed' "$D/r$i.log")" -gt "$n0" ] && nerr=$((nerr + 1))
    done
    dead=0
    for i in $reps; do
      eval "p=\$RPID_$i"
      kill -0 "$p" 2>/dev/null || { dead=$((dead + 1)); start_replica "$i"; }
    done
    fault_note="${fault_len} s real from ${fault_at} s; $nerr of $nrep replicas logged failing writes; $dead exited"
  else
    fault_note="SKIP (chattr +i is not permitted here)"
  fi
}

run_dialect() {
  d=$1
  D="$T/$d"
  mkdir -p "$D"
  start=$(date +%s)
  bin/cubesim --listen 127.0.0.1:0 --dialect "$d" --clock-speed "$speed" \
    --seed "$seed" --faults "$faults" >"$D/sim.out" 2>"$D/sim.log" &
  SIM_PID=$!
  PIDS="$PIDS $SIM_PID"
  SIM=""
  n=0
  while [ -z "$SIM" ] && [ $n -lt 100 ]; do
    SIM=$(sed -n 's/^cubesim listening on //p' "$D/sim.out")
    [ -n "$SIM" ] || { sleep 0.05; n=$((n + 1)); }
  done
  [ -n "$SIM" ] || { echo "cubesim did not start"; cat "$D/sim.log"; return 1; }
  for i in $reps; do start_replica $i; done
  # Cube keeps changing the fleet after quiet by itself: a sandbox idle-
  # pauses up to the longest idleTimeout (30 min) after its last request
  # and is reclaimed up to the longest reclaimAfter (60 min) later, i.e.
  # 90 virtual minutes (90 s at x60). Convergence is due two resync periods
  # after that last change. Nothing allows for create claims: a claim is
  # written when its create is sent and lives 3 s (docs/controller.md), so
  # a replica killed just before quiet leaves nothing to wait out; plus
  # slack for a loaded machine (--converge-limit overrides)
  limit=${climit:-$((2 * resync + (5400 + speed - 1) / speed + 30))}
  # the watcher: every intent (status.pendingAction) the store's history
  # records, and every purge, with cubesim's clock
  build/chaos/driver --watch-db "$D/sessions.db" --sim "$SIM" \
    --out "$D/watch" 2>"$D/watch.log" &
  WPID=$!
  PIDS="$PIDS $WPID"
  build/chaos/driver --store "sqlite:$D/sessions.db" --sim "$SIM" \
    --sessions "$sessions" --virtual-hours "$hours" --seed "$seed" \
    --connect-limit "$limit" \
    --timeline "$D/timeline" >"$D/driver.out" 2>"$D/driver.log" &
  DRV=$!
  PIDS="$PIDS $DRV"
  drv_start=$(date +%s)
  # the store fault: at 30-60% of the workload (from the seed), for 3-6 s
  set -- $(awk -v s="$seed" -v h="$hours" -v sp="$speed" 'BEGIN { srand(s + 1)
    w = h * 3600 / sp; printf "%d %d\n", w * (0.3 + 0.3 * rand()), 3 + int(rand() * 4) }')
  fault_at=$1 fault_len=$2
  fault_done=0 SF="" fault_note="not reached"
  # the killer: every 1-3 s a random replica gets SIGKILL, and comes back
  # after 0-0.3 s; the kills land wherever the replica is, including
  # between a create and its status write and between a confirming GET
  # and its delete (20 ms +- 10 ms per Cube call)
  kills=0
  exec 3<"$T/dice"
  while kill -0 "$DRV" 2>/dev/null; do
    if [ "$fault_done" = 0 ] && [ $(( $(date +%s) - drv_start )) -ge "$fault_at" ]; then
      store_fault
      continue
    fi
    read -r who gap back <&3 || break
    who=$((who % nrep))
    sleep "$gap"
    kill -0 "$DRV" 2>/dev/null || break
    [ "$nokill" = 1 ] && continue
    eval "p=\$RPID_$who"
    kill -9 "$p" 2>/dev/null && kills=$((kills + 1))
    wait "$p" 2>/dev/null
    sleep "$back"
    start_replica "$who"
  done
  exec 3<&-
  [ "$fault_done" = 1 ] || fault_note="SKIP (the workload ended first)"
  wait "$DRV"
  drv_rc=$?
  # what the replicas cost Cube over the workload (cubesim counts every
  # public API request, faults included; the driver makes none)
  sim_get /_sim/stats >"$D/stats-workload.json"
  # quiet: faults off, traffic stopped (the driver is done); converge
  curl -sf -X POST -H 'Content-Type: application/json' -d '{"spec": ""}' \
    "$SIM/_sim/faults" >/dev/null
  quiet=$(date +%s)
  # the checker until it passes or the limit (computed above) is up
  conv=-1
  n=0
  while [ $n -le "$limit" ]; do
    now=$(sim_now_ms)
    sim_get /_sim/sandboxes >"$D/truth.json"
    sim_get /_sim/audit >"$D/audit.jsonl"
    cat "$D"/audit-r*.jsonl >"$D/ctl-audit.jsonl" 2>/dev/null
    # shellcheck disable=SC2086 # SF is empty or one flag and its value
    if build/chaos/check --truth "$D/truth.json" --audit "$D/audit.jsonl" \
        --timeline "$D/timeline" --db "$D/sessions.db" --now-ms "$now" \
        --watch "$D/watch" --ctl-audit "$D/ctl-audit.jsonl" $SF \
        --window-ms $((resync * 1000 * speed)) >"$D/table" 2>"$D/problems"; then
      conv=$(( $(date +%s) - quiet ))
      break
    fi
    sleep 1
    n=$(( $(date +%s) - quiet ))
  done
  rkills=0
  for i in $reps; do eval "p=\$RPID_$i"; kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  kill "$WPID" 2>/dev/null; wait "$WPID" 2>/dev/null
  sim_get /_sim/stats >"$D/stats-end.json"
  kill "$SIM_PID" 2>/dev/null; wait "$SIM_PID" 2>/dev/null
  cat "$D"/audit-r*.jsonl >"$D/ctl-audit.jsonl" 2>/dev/null
  echo "=== chaos $d: seed $seed, $sessions sessions, $hours virtual hours at x$speed, skews $skews, shards $shards, $nrep replicas$([ "$nokill" = 1 ] && echo ", no kills")"
  echo "faults: $faults"
  printf '%-38s %s\n' "duration (s)" "$(( $(date +%s) - start ))"
  printf '%-38s %s\n' "driver" "$(cat "$D/driver.out")"
  printf '%-38s %s\n' "replicas killed (SIGKILL)" "$kills"
  printf '%-38s %s\n' "Cube requests, workload (replicas $nrep)" \
    "$(jq -r '"\(.total): " + (.requests | to_entries | map(select(.value > 0) | "\(.key) \(.value)") | join(", "))' "$D/stats-workload.json" 2>/dev/null)"
  printf '%-38s %s\n' "Cube requests, whole run" \
    "$(jq -r '"\(.total): " + (.requests | to_entries | map(select(.value > 0) | "\(.key) \(.value)") | join(", "))' "$D/stats-end.json" 2>/dev/null)"
  printf '%-38s %s\n' "store fault (writes fail)" "$fault_note"
  printf '%-38s %s\n' "controller audit: deletes done" \
    "$(jq -s '[.[] | select(.action=="delete" and .outcome=="done")] | length' "$D/ctl-audit.jsonl")"
  printf '%-38s %s\n' "controller audit: deletes skipped" \
    "$(jq -s '[.[] | select(.outcome=="skipped")] | length' "$D/ctl-audit.jsonl")"
  printf '%-38s %s\n' "faults by kind" \
    "$(jq -s -c '[.[] | select(.fault) | "\(.fault)@\(.status)"] | group_by(.) | map({(.[0]): length}) | add' "$D/audit.jsonl")"
  cat "$D/table"
  if [ "$conv" -ge 0 ] && [ "$drv_rc" -eq 0 ]; then
    printf '%-38s %s\n' "converged after (s)" "$conv"
    echo "ok   chaos $d seed $seed"
    PASS=$((PASS + 1))
  else
    printf '%-38s %s\n' "converged after (s)" "NOT within $limit"
    [ "$drv_rc" -eq 0 ] || echo "driver failed ($drv_rc): $(tail -n 3 "$D/driver.log")"
    # the rarer kinds first: a status still catching up hides nothing
    { grep -v "status does not match" "$D/problems" | head -n 30
      grep "status does not match" "$D/problems" | head -n 10; }
    echo "FAIL chaos $d seed $seed: replay with: test/chaos/run.sh --dialect $d --seed $seed --sessions $sessions --virtual-hours $hours --shards $shards${cubeqps:+ --cube-qps $cubeqps} --replicas $nrep$([ "$nokill" = 1 ] && echo " --no-kill")"
    FAIL=$((FAIL + 1))
    keep=1
  fi
}

if [ "$parallel" = 1 ]; then
  # each dialect in a subshell of its own (its own cubesim, replicas and
  # directory); the tables are printed in order once both are done
  for d in $dialects; do
    ( PIDS=""
      trap 'for p in $PIDS; do kill "$p" 2>/dev/null; done' EXIT
      trap 'exit 1' INT TERM
      run_dialect "$d"; [ "$FAIL" -eq 0 ] ) >"$T/out-$d" 2>&1 &
    eval "SUB_$d=$!"
    PIDS="$PIDS $!"
  done
  for d in $dialects; do
    if eval "wait \$SUB_$d"; then PASS=$((PASS + 1)); else FAIL=$((FAIL + 1)); keep=1; fi
    cat "$T/out-$d"
  done
else
  for d in $dialects; do run_dialect "$d"; done
fi
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
