# common.sh - shared helpers of the end-to-end scripts (sourced, not run).
# Every server binds port 0; every process is stopped by PID.
BINDIR=${BINDIR:-$(pwd)/bin}
T=$(mktemp -d "${TMPDIR:-/tmp}/sc-e2e.XXXXXX")
PASS=0
FAIL=0
PIDS=""

e2e_cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null; done
  for p in $PIDS; do wait "$p" 2>/dev/null; done
  if [ "$FAIL" -ne 0 ] && [ -z "${KEEP_TMP:-}" ]; then
    for f in "$T"/*.log; do
      [ -f "$f" ] || continue
      echo "--- last lines of $f"; tail -n 30 "$f"
    done
  fi
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$T"
}
trap e2e_cleanup EXIT
trap 'exit 1' INT TERM

ok() { PASS=$((PASS + 1)); echo "ok   $1"; }
fail() { FAIL=$((FAIL + 1)); echo "FAIL $1${2:+: $2}"; }
check() { n=$1; shift; if "$@"; then ok "$n"; else fail "$n"; fi; }
finish() { echo "$PASS passed, $FAIL failed"; [ "$FAIL" -eq 0 ]; }

# wait_until SECONDS CMD...: poll CMD every 0.1 s; status 0 when it passed
wait_until() {
  limit=$(( $1 * 10 )); shift
  i=0
  while [ $i -lt $limit ]; do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1; i=$((i + 1))
  done
  return 1
}

# start_cubesim [ARGS...]: sets SIM (base URL) and SIM_PID
start_cubesim() {
  # remove the last run's file first: the child truncates it only after
  # the fork, and reading a stale URL would point us at a dead simulator
  rm -f "$T/sim.out"
  "$BINDIR/cubesim" --listen 127.0.0.1:0 "$@" >"$T/sim.out" 2>"$T/sim.log" &
  SIM_PID=$!
  PIDS="$PIDS $SIM_PID"
  SIM=""
  i=0
  while [ -z "$SIM" ] && [ $i -lt 100 ]; do
    SIM=$(sed -n 's/^cubesim listening on //p' "$T/sim.out" 2>/dev/null)
    [ -n "$SIM" ] || { sleep 0.05; i=$((i + 1)); }
  done
  [ -n "$SIM" ] || { echo "cubesim did not start" >&2; cat "$T/sim.log" >&2; exit 1; }
}

sim_advance() { curl -sf -X POST -H 'Content-Type: application/json' \
  -d "{\"advance\":$1}" "$SIM/_sim/clock" >/dev/null; }
sim_truth() { curl -sf "$SIM/_sim/sandboxes"; }
sim_audit() { curl -sf "$SIM/_sim/audit"; }
sim_traffic() { curl -s -o /dev/null -w '%{http_code}' -X POST \
  "$SIM/_sim/sandboxes/$1/traffic"; }
sim_faults() { curl -sf -X POST -H 'Content-Type: application/json' \
  -d "$1" "$SIM/_sim/faults" >/dev/null; }
# live sandboxes (not deleted) tagged with session id $1
sim_live_for() { sim_truth | jq -r --arg s "$1" \
  '[.[] | select(.state != "deleted" and .metadata["lea.session_id"] == $s)] | length'; }
sim_state_of() { sim_truth | jq -r --arg s "$1" \
  '[.[] | select(.state != "deleted" and .metadata["lea.session_id"] == $s)][0].state // "none"'; }

STORE="sqlite:$T/sessions.db"
ctl() { "$BINDIR/sessionctl" --store "$STORE" "$@"; }

# start_controller NAME [ARGS...]: sets CTL_PID (log in $T/NAME.log); the
# tests start on fresh stores: --create-store
start_controller() {
  n=$1; shift
  "$BINDIR/session-controller" --store "$STORE" --cube-url "$SIM" \
    --metrics-addr 127.0.0.1:0 --resync 1s --replica "$n" --create-store "$@" \
    2>"$T/$n.log" &
  CTL_PID=$!
  PIDS="$PIDS $CTL_PID"
}

# metrics_port NAME: the port controller NAME (start_controller) serves
# /metrics, /healthz and /readyz on, from its log
metrics_port() { sed -n 's/.*msg="serving \/metrics.*port=\([0-9]*\).*/\1/p' "$T/$1.log" | head -n 1; }

# wait_eq SECONDS WANT CMD...: run CMD every 0.1 s until it prints WANT;
# on a timeout, say what it printed last
wait_eq() {
  limit=$(( $1 * 10 )); want=$2; shift 2
  i=0
  got=""
  while [ $i -lt $limit ]; do
    got=$("$@" 2>/dev/null)
    [ "$got" = "$want" ] && return 0
    sleep 0.1; i=$((i + 1))
  done
  echo "  (waited ${limit}00 ms: got '$got', want '$want')"
  return 1
}

# sess_field NAME NS JQ: a field of a session's JSON, from the store
sess_field() { ctl get sessions "$1" -n "$2" -o json 2>/dev/null | jq -r "$3"; }
# sb_field ID FIELD: a field of a sandbox in cubesim's truth
sb_field() { sim_truth | jq -r --arg id "$1" ".[] | select(.sandboxID==\$id) | .$2"; }
live_total() { sim_truth | jq '[.[] | select(.state!="deleted")] | length'; }

# kubeconfig FILE [CLUSTER_LINES] [USER_LINES]: a kubeconfig for the fake
# at $API, context "fake". CLUSTER_LINES: more lines of the cluster,
# indented 4 spaces (certificate-authority: F); USER_LINES: the user's,
# indented 4 spaces (token: T); none: a user with no credentials
kubeconfig() {
  if [ -n "${3:-}" ]; then kc_user=$3; else kc_user='    {}'; fi
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
current-context: fake
clusters:
- name: fake
  cluster:
    server: $API
${2:-}
contexts:
- name: fake
  context: {cluster: fake, user: u}
users:
- name: u
  user:
$kc_user
EOF
}

# start_kube_fake NAME [ARGS...]: starts kube-apiserver-fake (output in
# $T/fake-NAME.out and .log); sets API (its base URL) and API_PID
start_kube_fake() {
  fname=$1; shift
  rm -f "$T/fake-$fname.out"
  "$BINDIR/kube-apiserver-fake" "$@" >"$T/fake-$fname.out" 2>"$T/fake-$fname.log" &
  API_PID=$!
  PIDS="$PIDS $API_PID"
  API=""
  i=0
  while [ -z "$API" ] && [ $i -lt 100 ]; do
    API=$(sed -n 's/^kube-apiserver-fake listening on //p' "$T/fake-$fname.out" 2>/dev/null)
    [ -n "$API" ] || { sleep 0.05; i=$((i + 1)); }
  done
  [ -n "$API" ] || { echo "kube-apiserver-fake did not start" >&2; cat "$T/fake-$fname.log" >&2; exit 1; }
}

# mkca NAME CN: a CA in $T/NAME.pem and .key (the TLS tests)
mkca() {
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$2" \
    -keyout "$T/$1.key" -out "$T/$1.pem" \
    -addext basicConstraints=critical,CA:TRUE \
    -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
}
# mkcert NAME CN CA EXT: a certificate signed by CA, with extensions EXT
mkcert() {
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$2" -keyout "$T/$1.key" \
    -out "$T/$1.csr" 2>/dev/null &&
  printf '%s\n' "$4" >"$T/$1.ext" &&
  openssl x509 -req -in "$T/$1.csr" -CA "$T/$3.pem" -CAkey "$T/$3.key" \
    -CAcreateserial -days 2 -extfile "$T/$1.ext" -out "$T/$1.pem" 2>/dev/null
}

# sim_sandbox SESSION MANAGED-BY [UID] [TIMEOUT] [TENANT]: a sandbox made
# behind the controller's back in cubesim, tagged as a controller tags its
# own; with UID it carries lea.session_uid as a controller's create for
# that object does (rule 12). Prints the sandbox ID.
sim_sandbox() {
  uidtag=""
  [ -z "${3:-}" ] || uidtag=",\"lea.session_uid\":\"$3\""
  curl -sf -X POST -H 'Content-Type: application/json' "$SIM/sandboxes" -d \
    "{\"templateID\":\"shell\",\"timeout\":${4:-600},\"autoPause\":true,\"autoResume\":{\"enabled\":true},\"lifecycle\":{\"onTimeout\":\"pause\",\"autoResume\":true},\"metadata\":{\"lea.session_id\":\"$1\",\"lea.tenant_id\":\"${5:-default}\",\"lea.managed-by\":\"$2\"$uidtag}}" |
    jq -r .sandboxID
}

# passes NAME: the full passes controller NAME (its log $T/NAME.log) has
# completed, failed ones too; 0 before it serves /metrics
passes() {
  pp=""
  [ ! -f "$T/$1.log" ] || pp=$(metrics_port "$1")
  pv=""
  [ -z "$pp" ] || pv=$(curl -sf "http://127.0.0.1:$pp/metrics" |
    sed -n 's/^session_controller_pass_duration_seconds_count //p')
  echo "${pv:-0}"
}

# wait_passes N NAME...: wait until each controller NAME has completed N
# more full passes (the first may have begun just before the call), at
# most N+10 s: what a check that nothing happened waits for (at --resync
# 1s it ends sooner than "sleep N", and under load it still sees N
# passes). A timeout counts as a failure (fail) naming the controller.
wait_passes() {
  wp_n=$1; shift
  wp_want=""
  for wp_c in "$@"; do wp_want="$wp_want $wp_c=$(( $(passes "$wp_c") + wp_n ))"; done
  wp_i=0
  wp_limit=$(( (wp_n + 10) * 10 ))
  while [ $wp_i -lt $wp_limit ]; do
    wp_short=""
    for wp_w in $wp_want; do
      [ "$(passes "${wp_w%=*}")" -ge "${wp_w##*=}" ] || { wp_short=${wp_w%=*}; break; }
    done
    [ -n "$wp_short" ] || return 0
    sleep 0.1; wp_i=$((wp_i + 1))
  done
  fail "wait_passes $wp_n $*" "$wp_short made $(passes "$wp_short") passes, not the $wp_n more awaited"
  return 1
}

# e2e_split VAR VALUE...: run this script once for each VALUE at once,
# with VAR=VALUE in its environment (each run has its own $T, daemons and
# ports), then print each run's output in turn and finish with their
# summed counts. With VAR already set it returns at once: the caller runs
# that one part. E2E_SERIAL=1 runs the parts one after another.
e2e_split() {
  sp_var=$1; shift
  eval "sp_set=\${$sp_var:-}"
  [ -z "$sp_set" ] || return 0
  sp_pids=""
  for sp_v in "$@"; do
    env "$sp_var=$sp_v" sh "$0" >"$T/part-$sp_v.out" 2>&1 &
    sp_pid=$!
    PIDS="$PIDS $sp_pid"
    if [ "${E2E_SERIAL:-0}" = 1 ]; then wait "$sp_pid"; echo $? >"$T/part-$sp_v.rc"
    else sp_pids="$sp_pids $sp_v=$sp_pid"; fi
  done
  for sp_w in $sp_pids; do
    wait "${sp_w##*=}"; echo $? >"$T/part-${sp_w%=*}.rc"
  done
  for sp_v in "$@"; do
    echo "--- $sp_var=$sp_v"
    cat "$T/part-$sp_v.out"
    sp_rc=$(cat "$T/part-$sp_v.rc")
    # its count line; the logs a failed run dumps come after it
    sp_line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$T/part-$sp_v.out" | tail -n 1)
    sp_f=0
    if [ -n "$sp_line" ]; then
      PASS=$((PASS + ${sp_line%% *}))
      sp_f=${sp_line#* passed, }; sp_f=${sp_f%% *}
      FAIL=$((FAIL + sp_f))
      [ "$sp_rc" = 0 ] || [ "$sp_f" -ne 0 ] ||
        fail "$sp_var=$sp_v: exit $sp_rc with no failure counted"
    else
      fail "$sp_var=$sp_v: no count line (exit $sp_rc)"
    fi
  done
  finish
  exit
}
