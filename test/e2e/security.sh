#!/bin/sh
# End-to-end security checks (docs/security.md):
#  - the Cube API key (from CUBE_API_KEY, then from --cube-api-key-file)
#    appears nowhere a run leaves: controller log, audit log, /metrics,
#    /healthz, /readyz, sessionctl output, the store, the command line;
#    --cube-api-key on the command line is refused;
#  - a wrong key (cubesim answers 401): clear log lines, no crash, the
#    controller keeps running, nothing created;
#  - TLS: a self-signed server (openssl s_server) fails without --cube-ca
#    and gets past TLS with it;
#  - the SQLite file is 0600; /metrics binds to loopback by default;
#  - tenants: a forged status link or forged tags never make a session act
#    on another tenant's sandbox.
. "$(dirname "$0")/lib/common.sh"

KEY="sk-e2e-$$-Zq7xVb3NcR9tLmW2"
stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
cond_of() { ctl get sessions "$1" -n "$2" -o json 2>/dev/null | jq -r --arg t "$3" '.status.conditions[]? | select(.type==$t) | .status + "/" + .reason'; }
linked() { v=$(sess_field "$1" "$2" .status.sandboxID); [ -n "$v" ] && [ "$v" != null ] && echo true; }
session_yaml() { # NAME NS [STATE]
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s, namespace: %s}\nspec: {template: shell, state: %s, idleTimeout: 10m}\n---\n' \
    "$1" "$2" "${3:-Active}"
}
# no_key LABEL FILE...: the key is in none of the files
no_key() {
  label=$1; shift
  if grep -F -l -a -e "$KEY" "$@" >/dev/null 2>&1; then
    fail "$label" "key found in: $(grep -F -l -a -e "$KEY" "$@" | tr '\n' ' ')"
  else
    ok "$label"
  fi
}
# collect NAME PID: everything a run produced, into $T/out-NAME/
collect() {
  d="$T/out-$1"; mkdir -p "$d"
  p=$(metrics_port "$1")
  curl -s "http://127.0.0.1:$p/metrics" >"$d/metrics" 2>&1
  curl -s "http://127.0.0.1:$p/healthz" >"$d/healthz" 2>&1
  curl -s "http://127.0.0.1:$p/readyz" >"$d/readyz" 2>&1
  tr '\0' ' ' <"/proc/$2/cmdline" >"$d/cmdline"
  ctl get sessions -A -o json >"$d/get.json" 2>&1
  ctl get sessions -A -o yaml >"$d/get.yaml" 2>&1
  ctl get sessions -A -o wide >"$d/get.wide" 2>&1
  for n in $(ctl get sessions -A -o json | jq -r '.items[] | .metadata.namespace + "/" + .metadata.name'); do
    ctl describe session "${n#*/}" -n "${n%/*}" >>"$d/describe" 2>&1
  done
  ctl plan >"$d/plan" 2>&1
  sqlite3 "$T/sessions.db" .dump >"$d/store.sql" 2>&1
  cp "$T/$1.log" "$d/controller.log"
}

# --- 1. the key, from the environment and from a file
for how in env file; do
  rm -f "$T/sessions.db"*
  start_cubesim --api-key "$KEY" --dialect cube
  { session_yaml k1 tenant-a; session_yaml k2 tenant-a; session_yaml k3 tenant-b; } >"$T/k.yaml"
  ctl apply -f "$T/k.yaml" >/dev/null
  if [ "$how" = env ]; then
    CUBE_API_KEY=$KEY start_controller "key-$how" --audit-log "$T/audit-$how.jsonl" --log-level debug
  else
    printf '%s\n' "$KEY" >"$T/key"
    chmod 600 "$T/key"
    start_controller "key-$how" --cube-api-key-file "$T/key" --audit-log "$T/audit-$how.jsonl" --log-level debug
  fi
  cpid=$CTL_PID
  check "$how: 3 sandboxes created with the key" wait_eq 15 3 live_total
  # destructive actions, so the audit log has lines: end one, delete one
  session_yaml k1 tenant-a Ended | ctl apply -f - >/dev/null
  ctl delete session k2 -n tenant-a >/dev/null
  check "$how: ended and deleted sessions' sandboxes removed" wait_eq 15 1 live_total
  check "$how: audit log written" test -s "$T/audit-$how.jsonl"
  sleep 1.5
  collect "key-$how" "$cpid"
  check "$how: metrics scraped" grep -q '^session_controller_' "$T/out-key-$how/metrics"
  check "$how: the key was really sent (cubesim accepted our calls)" test "$(sim_audit | jq -s '[.[] | select(.status==401)] | length')" = 0
  no_key "$how: key in no log, audit, metrics, health, sessionctl output, store or cmdline" \
    "$T/out-key-$how"/* "$T/audit-$how.jsonl"
  check "$how: the controller's command line has no key" sh -c "! grep -F -q -e '$KEY' /proc/$cpid/cmdline"
  stop_pid "$cpid"
  no_key "$how: key not in the log after shutdown" "$T/key-$how.log"
  stop_pid "$SIM_PID"
done

# --- 2. a key on the command line is refused (it would show in ps)
"$BINDIR/session-controller" --store "$STORE" --cube-api-key "$KEY" --once >"$T/cli.out" 2>"$T/cli.err"
rc=$?
check "--cube-api-key refused with exit 2" test "$rc" = 2
check "--cube-api-key refusal says where the key goes" grep -q 'cube-api-key-file or CUBE_API_KEY' "$T/cli.err"
no_key "--cube-api-key refusal does not echo the key" "$T/cli.out" "$T/cli.err"

# --- 3. a wrong key: 401s, logged clearly, the controller keeps running
rm -f "$T/sessions.db"*
start_cubesim --api-key "$KEY" --dialect e2b
session_yaml w1 tenant-a | ctl apply -f - >/dev/null
WRONG="wrong-$$-key-Hk2pQ"
CUBE_API_KEY=$WRONG start_controller wrong --audit-log "$T/audit-wrong.jsonl"
wpid=$CTL_PID
check "wrong key: 401 logged" wait_until 10 grep -q 'HTTP 401' "$T/wrong.log"
sleep 2.5   # two more resyncs
check "wrong key: controller still running" kill -0 "$wpid"
check "wrong key: /healthz still answers" sh -c "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$(metrics_port wrong)/healthz | grep -q 200"
check "wrong key: /readyz not ready" sh -c "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$(metrics_port wrong)/readyz | grep -q 503"
check "wrong key: nothing created" test "$(live_total)" = 0
check "wrong key: no crash or assertion in the log" sh -c "! grep -E -q 'Assertion|Segmentation|AddressSanitizer|runtime error' '$T/wrong.log'"
if grep -F -q -e "$WRONG" "$T/wrong.log" "$T/audit-wrong.jsonl" 2>/dev/null; then
  fail "wrong key: the wrong key is not logged either"
else
  ok "wrong key: the wrong key is not logged either"
fi
stop_pid "$wpid"
check "wrong key: clean exit on SIGTERM" grep -q 'msg=stopped' "$T/wrong.log"
stop_pid "$SIM_PID"

# --- 4. the store file mode, whatever the umask
rm -f "$T/sessions.db"*
(umask 0; session_yaml m1 tenant-a | ctl apply -f - >/dev/null)
check "store file is 0600 (umask 0)" test "$(stat -c %a "$T/sessions.db")" = 600
for f in "$T/sessions.db-wal" "$T/sessions.db-shm"; do
  [ -e "$f" ] && check "$(basename "$f") is 0600" test "$(stat -c %a "$f")" = 600
done

# --- 5. /metrics binds to loopback by default
check "--help: /metrics default is 127.0.0.1:9090" sh -c "'$BINDIR/session-controller' --help | grep -- '--metrics-addr' | grep -q 'default 127.0.0.1:9090'"
# 9090 = 0x2382: only when nobody else on this machine holds it
if grep -q -i ':2382 ' /proc/net/tcp /proc/net/tcp6 2>/dev/null; then
  echo "skip: port 9090 is in use here; the default bind is checked through --help only"
else
  start_cubesim --dialect cube
  "$BINDIR/session-controller" --store "$STORE" --cube-url "$SIM" --resync 1s \
    --replica defbind 2>"$T/defbind.log" &
  dpid=$!
  PIDS="$PIDS $dpid"
  if wait_until 5 grep -q 'serving /metrics' "$T/defbind.log"; then
    # state 0A = LISTEN; 0100007F = 127.0.0.1
    check "default /metrics listens on 127.0.0.1:9090" grep -q -i '^ *[0-9]*: 0100007F:2382 00000000:0000 0A' /proc/net/tcp
    check "default /metrics listens on no other address" sh -c "! grep -i ':2382 [0-9A-F]*:0000 0A' /proc/net/tcp /proc/net/tcp6 | grep -v -i '0100007F:2382'"
  elif grep -q -i 'in use' "$T/defbind.log"; then
    echo "skip: port 9090 was taken meanwhile"
  else
    fail "default /metrics did not start" "$(tail -n 3 "$T/defbind.log")"
  fi
  stop_pid "$dpid"
  stop_pid "$SIM_PID"
fi

# --- 6. TLS: verification on by default
if command -v openssl >/dev/null 2>&1; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$T/tls.key" -out "$T/tls.crt" -days 1 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1
  openssl s_server -accept 127.0.0.1:0 -cert "$T/tls.crt" -key "$T/tls.key" -www \
    >"$T/s_server.out" 2>"$T/s_server.log" </dev/null &
  spid=$!
  PIDS="$PIDS $spid"
  wait_until 5 grep -q '^ACCEPT' "$T/s_server.out"
  sport=$(sed -n 's/^ACCEPT 127\.0\.0\.1://p' "$T/s_server.out" | head -n 1)
  if [ -z "$sport" ]; then
    fail "openssl s_server started" "$(cat "$T/s_server.log")"
  else
    rm -f "$T/sessions.db"*
    timeout 20 "$BINDIR/session-controller" --store "$STORE" --cube-url "https://127.0.0.1:$sport" \
      --metrics-addr "" --create-store --once 2>"$T/tls-noca.log"
    rc=$?
    check "TLS without --cube-ca: --once fails (exit 1)" test "$rc" = 1
    check "TLS without --cube-ca: certificate error logged" grep -q 'curl error 60: SSL certificate problem: self-signed certificate' "$T/tls-noca.log"
    timeout 20 "$BINDIR/session-controller" --store "$STORE" --cube-url "https://127.0.0.1:$sport" \
      --metrics-addr "" --create-store --once --cube-ca "$T/tls.crt" 2>"$T/tls-ca.log"
    check "TLS with --cube-ca: no certificate error" sh -c "! grep -q 'curl error 60\|SSL' '$T/tls-ca.log'"
    # s_server -www answers with an HTML page: past TLS, refused as JSON
    check "TLS with --cube-ca: the HTTP answer was read" grep -q 'GET /v2/sandboxes: page 1: body: invalid JSON' "$T/tls-ca.log"
    check "TLS with --cube-ca: the probe refused the page as not JSON" grep -q 'cube probe failed.*invalid JSON' "$T/tls-ca.log"
  fi
  stop_pid "$spid"
else
  echo "skip: openssl not installed"
fi

# --- 7. tenants never cross
rm -f "$T/sessions.db"*
start_cubesim --dialect cube
{ session_yaml x tenant-a; session_yaml y tenant-b; } | ctl apply -f - >/dev/null
start_controller ten1 --audit-log "$T/audit-ten.jsonl"
check "tenants: two sandboxes" wait_eq 15 2 live_total
check "tenants: a's sandbox linked" wait_eq 10 true linked x tenant-a
check "tenants: b's sandbox linked" wait_eq 10 true linked y tenant-b
sbB=$(sess_field y tenant-b .status.sandboxID)
stop_pid "$CTL_PID"
# a store that lies: a/x's status link now names tenant-b's sandbox
sqlite3 "$T/sessions.db" "UPDATE objects SET status = json_set(status, '$.sandboxID', '$sbB') WHERE namespace='tenant-a' AND name='x';"
check "tenants: link forged in the store" test "$(sess_field x tenant-a .status.sandboxID)" = "$sbB"
# and the forged session asks for its sandbox to be paused, then ended
session_yaml x tenant-a Paused | ctl apply -f - >/dev/null
start_controller ten2 --audit-log "$T/audit-ten.jsonl"
check "tenants: forged link gives Conflict=True/TenantMismatch" wait_eq 10 "True/TenantMismatch" cond_of x tenant-a Conflict
sleep 2
check "tenants: b's sandbox not paused through a's forged link" test "$(sb_field "$sbB" state)" = running
session_yaml x tenant-a Ended | ctl apply -f - >/dev/null
ctl delete session x -n tenant-a >/dev/null
sleep 3
check "tenants: b's sandbox not deleted through a's forged link" test "$(sb_field "$sbB" state)" = running
check "tenants: b's session still linked to its sandbox" test "$(sess_field y tenant-b .status.sandboxID)" = "$sbB"
check "tenants: no pause or delete of b's sandbox in Cube's audit" test \
  "$(sim_audit | jq -s --arg id "$sbB" '[.[] | select(.sandboxID==$id and (.event=="pause" or .event=="delete"))] | length')" = 0
stop_pid "$CTL_PID"

# forged tags: a sandbox tagged (tenant-b, session x) made behind our back;
# tenant-a's session x must not adopt it
rm -f "$T/sessions.db"*
forged=$(curl -sf -X POST -H 'Content-Type: application/json' "$SIM/sandboxes" -d \
  '{"templateID":"shell","timeout":600,"metadata":{"lea.session_id":"x","lea.tenant_id":"tenant-b","lea.managed-by":"session-controller"}}' | jq -r .sandboxID)
session_yaml x tenant-a | ctl apply -f - >/dev/null
start_controller ten3
check "tenants: a/x got a sandbox" wait_eq 10 true linked x tenant-a
check "tenants: a/x did not adopt tenant-b's sandbox" test "$(sess_field x tenant-a .status.sandboxID)" != "$forged"
check "tenants: tenant-b's tagged sandbox untouched" test "$(sb_field "$forged" state)" = running
check "tenants: a/x's own sandbox carries tenant-a" test \
  "$(sb_field "$(sess_field x tenant-a .status.sandboxID)" 'metadata["lea.tenant_id"]')" = tenant-a
stop_pid "$CTL_PID"

# a writer in tenant-a names tenant-b in spec.tenantID (the sandbox tagged
# tenant-b/y is unlinked: its session is gone); with the default
# --tenant-binding namespace the session joins nothing and creates nothing
rm -f "$T/sessions.db"*
forgedy=$(curl -sf -X POST -H 'Content-Type: application/json' "$SIM/sandboxes" -d \
  '{"templateID":"shell","timeout":600,"metadata":{"lea.session_id":"y","lea.tenant_id":"tenant-b","lea.managed-by":"session-controller"}}' | jq -r .sandboxID)
printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: y, namespace: tenant-a}\nspec: {template: shell, tenantID: tenant-b}\n' | ctl apply -f - >/dev/null
before=$(sim_audit | jq -s '[.[] | select(.event=="create")] | length')
start_controller ten4
check "tenants: tenantID of another namespace: Conflict=True/TenantNotNamespace" \
  wait_eq 10 "True/TenantNotNamespace" cond_of y tenant-a Conflict
check "tenants: ... phase Failed" test "$(sess_field y tenant-a .status.phase)" = Failed
sleep 2
check "tenants: ... tenant-b's sandbox not adopted" test "$(sess_field y tenant-a .status.sandboxID)" = null
check "tenants: ... no sandbox created" test \
  "$(sim_audit | jq -s '[.[] | select(.event=="create")] | length')" = "$before"
stop_pid "$CTL_PID"
# --tenant-binding free: the same session adopts it (one trusted writer)
start_controller ten5 --tenant-binding free
check "tenants: --tenant-binding free: a/y links a sandbox" wait_eq 10 true linked y tenant-a
check "tenants: --tenant-binding free: ... one of tenant-b's, adopted by tags" test \
  "$(sb_field "$(sess_field y tenant-a .status.sandboxID)" 'metadata["lea.tenant_id"]')" = tenant-b
stop_pid "$CTL_PID"
stop_pid "$SIM_PID"
finish
