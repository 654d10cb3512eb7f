# bench-lib.sh - what hack/bench.sh and hack/bench-peer.sh share; sourced
# from the repository's root after the caller set BENCH_NAME (the prefix
# of its messages), B (the binaries), T (its scratch directory), PIDS
# (every process it starts, by PID) and SKIP (" N M ": steps to skip).

skip() { case "$SKIP" in *" $1 "*) return 0 ;; esac; return 1; }
now_ms() { date +%s%3N; }
# metric NAME: the value of an unlabelled sample on /metrics (MET: its base URL)
metric() { curl -sf "$MET/metrics" | awk -v n="$1" '$1 == n {print $2}'; }

# the EXIT trap: every process started stopped, T removed (KEEP_TMP: kept)
bench_cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null || true; done
  for p in $PIDS; do wait "$p" 2>/dev/null || true; done
  [ -n "${KEEP_TMP:-}" ] && echo "$BENCH_NAME: kept $T" || rm -rf "$T"
}

# stop PID: stopped, waited for and out of PIDS
stop() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  np=""
  for p in $PIDS; do [ "$p" = "$1" ] || np="$np $p"; done
  PIDS=$np
}

# sim_wait LABEL: SIM, the URL the cubesim writing $T/LABEL-sim.out
# listens on, once it says so (10 s at most, else the script ends)
sim_wait() {
  SIM=""
  i=0
  while [ -z "$SIM" ] && [ $i -lt 200 ]; do
    SIM=$(sed -n 's/^cubesim listening on //p' "$T/$1-sim.out" 2>/dev/null || true)
    [ -n "$SIM" ] || { sleep 0.05; i=$((i + 1)); }
  done
  [ -n "$SIM" ] || { echo "$BENCH_NAME: cubesim did not start" >&2; exit 1; }
}

# ready_wait LABEL PID: MET, the base URL of /metrics of the controller
# PID logging to $T/LABEL.log, once its /readyz answers 200 (60 s at
# most, or until it exits; else the script ends)
ready_wait() {
  MET=""
  i=0
  while [ $i -lt 600 ]; do
    if [ -z "$MET" ]; then
      port=$(sed -n 's/.*serving \/metrics.* port=\([0-9]*\).*/\1/p' "$T/$1.log" 2>/dev/null | head -n 1)
      [ -n "$port" ] && MET="http://127.0.0.1:$port"
    fi
    if [ -n "$MET" ] && curl -sf -o /dev/null "$MET/readyz"; then return 0; fi
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1; i=$((i + 1))
  done
  echo "$BENCH_NAME: controller $1 did not get ready" >&2; tail -n 20 "$T/$1.log" >&2
  exit 1
}

# gen_list N STATE PREFIX FILE: one `kind: List` of N sessions in flow
# style, named PREFIX + base-36 number, so that 10k of them fit in the
# 1 MiB manifest limit (about 1,039,000 bytes)
gen_list() {
  awk -v n="$1" -v st="$2" -v p="$3" '
  function b36(x,  s, d) {
    s = ""
    do { d = x % 36; s = substr("0123456789abcdefghijklmnopqrstuvwxyz", d + 1, 1) s; x = int(x / 36) } while(x > 0)
    return s
  }
  BEGIN {
    print "apiVersion: v1"; print "kind: List"; print "items:";
    for(i = 1; i <= n; i++)
      printf("- {apiVersion: lea.io/v1alpha1,kind: Session,metadata: {name: %s%s},spec: {template: t,state: %s}}\n", p, b36(i), st);
  }' >"$4"
}
