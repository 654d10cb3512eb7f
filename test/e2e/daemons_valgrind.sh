#!/bin/sh
# test-slow
# daemons_valgrind.sh - the daemons under valgrind (--leak-check=full):
# session-controller on each store (SQLite, then kube against
# kube-apiserver-fake), cubesim and the fake itself. Each runs a short
# lifecycle (create, pause, delete, a refused store write retried, a
# watch ended by the server) and stops on SIGTERM; each must exit 0 with
# no memory error and no definite or indirect leak. Skipped (counted as
# passed: nothing to run) without valgrind or with ASan binaries.
. "$(dirname "$0")/lib/common.sh"

if ! command -v valgrind >/dev/null 2>&1; then
  echo "daemons_valgrind: valgrind not installed; skipped"
  finish; exit $?
fi
if nm "$BINDIR/session-controller" 2>/dev/null | grep -q __asan_init; then
  echo "daemons_valgrind: the binaries are built with ASan; skipped"
  finish; exit $?
fi
if ! valgrind -q --error-exitcode=9 "$BINDIR/cubesim" --help >/dev/null 2>"$T/probe" ||
   grep -q "debuginfo reader" "$T/probe"; then
  echo "daemons_valgrind: valgrind cannot run the binaries here; skipped"
  finish; exit $?
fi

# $T/vg holds wrappers that exec the daemons under valgrind (the PID the
# helpers record is the daemon's own); sessionctl runs as it is
REAL=$BINDIR
mkdir -p "$T/vg"
for d in session-controller cubesim kube-apiserver-fake; do
  cat >"$T/vg/$d" <<EOF
#!/bin/sh
n=\$(date +%s%N)
exec valgrind --leak-check=full --show-leak-kinds=definite,indirect \\
  --errors-for-leak-kinds=definite,indirect --error-exitcode=9 \\
  --log-file="$T/vg-$d-\$n.txt" "$REAL/$d" "\$@"
EOF
  chmod +x "$T/vg/$d"
done
ln -s "$REAL/sessionctl" "$T/vg/sessionctl"
BINDIR=$T/vg

# stop NAME PID: SIGTERM, then the exit status must be 0
stop() {
  kill "$2" 2>/dev/null
  wait "$2"
  rc=$?
  check "$1: exits 0 after SIGTERM under valgrind (rc $rc)" test "$rc" -eq 0
}

session_yaml() {
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s, namespace: tenant-a}\nspec: {template: python-data, idleTimeout: 15m, state: %s}\n' "$1" "$2" >"$T/$1-$2.yaml"
}
for s in v1 v2 v3; do session_yaml $s Active; session_yaml $s Paused; done

# lifecycle NAME: create three, pause one, delete one
lifecycle() {
  for s in v1 v2 v3; do ctl apply -f "$T/$s-Active.yaml" >/dev/null; done
  check "$1: three sandboxes created" wait_eq 90 3 live_total
  check "$1: v1 Running" wait_eq 60 Running sess_field v1 tenant-a .status.phase
  ctl apply -f "$T/v2-Paused.yaml" >/dev/null
  check "$1: v2 paused" wait_eq 60 paused sim_state_of v2
  ctl delete session v3 -n tenant-a >/dev/null
  check "$1: v3's sandbox deleted" wait_eq 60 0 sim_live_for v3
}

start_cubesim --clock-speed 1
check "cubesim: up under valgrind" test -n "$SIM"

# --- SQLite
STORE="sqlite:$T/s.db"
# sharding (its membership row) and the capacity budgets run under
# valgrind too: one replica owns every tenant, the budgets are not hit
start_controller vg-sqlite --orphan-grace 10m --shards auto --max-paused 5 \
  --max-running-per-tenant 3
lifecycle sqlite
stop sqlite "$CTL_PID"
check "sqlite: controller clean under valgrind" sh -c "grep -q 'ERROR SUMMARY: 0 errors' '$T'/vg-session-controller-*.txt"
mkdir -p "$T/done" && mv "$T"/vg-session-controller-*.txt "$T/done/"

stop cubesim "$SIM_PID"
check "cubesim: clean under valgrind" sh -c "grep -q 'ERROR SUMMARY: 0 errors' '$T'/vg-cubesim-*.txt"
mv "$T"/vg-cubesim-*.txt "$T/done/"

# --- kube (a fresh cubesim)
start_cubesim --clock-speed 1
start_kube_fake main --bookmark-ms 300
check "fake: up under valgrind" test -n "$API"
kubeconfig "$T/kc"
export KUBECONFIG="$T/kc"
STORE=kube
# v1's first status write (its create claim) is refused once: a retry on
# the loop's timer
curl -sf -X POST -H 'Content-Type: application/json' \
  -d '{"status":503,"count":1,"method":"PUT","path":"/apis/lea.io/v1alpha1/namespaces/tenant-a/sessions/v1/status"}' \
  "$API/_fake/faults" >/dev/null
start_controller vg-kube --orphan-grace 10m --watch-timeout 3s \
  --shards auto --max-paused 5 --max-running-per-tenant 3
lifecycle kube
check "kube: v3 purged from the store (finalizer)" wait_until 60 sh -c "! '$REAL/sessionctl' --store kube get sessions v3 -n tenant-a >/dev/null 2>&1"
curl -sf -X POST "$API/_fake/end-watches" >/dev/null
sleep 2
stop kube "$CTL_PID"
check "kube: controller clean under valgrind" sh -c "grep -q 'ERROR SUMMARY: 0 errors' '$T'/vg-session-controller-*.txt"
stop kube-apiserver-fake "$API_PID"
check "kube-apiserver-fake: clean under valgrind" sh -c "grep -q 'ERROR SUMMARY: 0 errors' '$T'/vg-kube-apiserver-fake-*.txt"
stop cubesim "$SIM_PID"
check "cubesim: clean under valgrind" sh -c "grep -q 'ERROR SUMMARY: 0 errors' '$T'/vg-cubesim-*.txt"
if [ "$FAIL" -ne 0 ]; then
  for f in "$T"/vg-*.txt "$T"/done/*.txt; do
    [ -f "$f" ] && { echo "--- $f"; grep -A12 "definitely lost\|Invalid\|uninitialised" "$f" | head -40; }
  done
fi
finish
