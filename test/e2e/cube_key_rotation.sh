#!/bin/sh
# End-to-end: the Cube API key rotates without a restart. cubesim takes
# key A, the controller reads A from --cube-api-key-file; then
#  - the file is rewritten first (B), then cubesim switches to B;
#  - cubesim switches first (C): the controller's calls get 401s until the
#    file says C;
# and new sessions get sandboxes within a few seconds each time, from the
# same process. An empty key file keeps the key in use and is said once
# (error line, metric). No key is ever in the log or on /metrics.
. "$(dirname "$0")/lib/common.sh"

KA="sk-rot-$$-A-Hq4TzLw8"
KB="sk-rot-$$-B-Nc2VxKp5"
KC="sk-rot-$$-C-Rj7MbGs3"
session_yaml() { # NAME
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s, namespace: tenant-a}\nspec: {template: shell, idleTimeout: 10m}\n' "$1"
}
# the key file, rewritten as a Secret volume does it (a rename)
put_key() { printf '%s\n' "$1" >"$T/key.new" && chmod 600 "$T/key.new" && mv "$T/key.new" "$T/key"; }
sim_key() { curl -sf -X POST -H 'Content-Type: application/json' \
  -d "{\"apiKey\":\"$1\"}" "$SIM/_sim/key" >/dev/null; }
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v n="$1" '$1 == n {print $2}'; }
count_401() { curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^session_controller_cube_requests_total\{.*code="401"/ {s += $2} END {print s + 0}'; }
reloads() { grep -c 'msg="Cube API key reloaded from '"$T"'/key"' "$T/ctl.log"; }
phase() { sess_field "$1" tenant-a .status.phase; }
new_session() { session_yaml "$1" >"$T/$1.yaml"; ctl apply -f "$T/$1.yaml" >/dev/null; }

# --- the start: key A on both sides
start_cubesim --clock-speed 1 --api-key "$KA"
check "cubesim: /_sim/key refuses an empty key" test "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' -d '{"apiKey":""}' "$SIM/_sim/key")" = 400
check "cubesim: /_sim/key refuses a body without apiKey" test "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' -d '{}' "$SIM/_sim/key")" = 400
check "cubesim: key A taken, B refused" test "$(curl -s -o /dev/null -w '%{http_code}' -H "X-API-Key: $KA" "$SIM/sandboxes")/$(curl -s -o /dev/null -w '%{http_code}' -H "X-API-Key: $KB" "$SIM/sandboxes")" = 200/401
put_key "$KA"
new_session s1
start_controller ctl --resync 1s --cube-api-key-file "$T/key"
PID0=$CTL_PID
check "A: s1 Running" wait_eq 15 Running phase s1
PORT=$(metrics_port ctl)

# --- the file first, then cubesim
put_key "$KB"
check "B: the file is read again within a few seconds" wait_until 5 sh -c "[ \$(grep -c 'msg=\"Cube API key reloaded from $T/key\"' '$T/ctl.log') -ge 1 ]"
check "B: said at info level" grep -q 'level=info msg="Cube API key reloaded from '"$T"'/key"' "$T/ctl.log"
check "B: reloads_total{result=\"ok\"} is 1" wait_eq 3 1 metric 'session_controller_cube_key_reloads_total{result="ok"}'
# Cube still takes only A: the controller now sends B and gets 401s
check "B: Cube (still on A) answers the new key 401" wait_until 5 sh -c "[ \$(curl -s http://127.0.0.1:$PORT/metrics | awk '/^session_controller_cube_requests_total\\{.*code=\"401\"/ {s += \$2} END {print s + 0}') -gt 0 ]"
sim_key "$KB"
new_session s2
check "B: a new session gets its sandbox within a few seconds" wait_eq 8 Running phase s2
check "B: s1 stays Running" test "$(phase s1)" = Running
check "B: cubesim saw the new key" test "$(curl -s -o /dev/null -w '%{http_code}' -H "X-API-Key: $KB" "$SIM/sandboxes")" = 200

# --- cubesim first (the controller's calls are refused), then the file
sim_key "$KC"
n401=$(count_401)
new_session s3
check "C: the old key gets 401s" wait_until 8 sh -c "[ \$(curl -s http://127.0.0.1:$PORT/metrics | awk '/^session_controller_cube_requests_total\\{.*code=\"401\"/ {s += \$2} END {print s + 0}') -gt $n401 ]"
check "C: s3 waits meanwhile" test "$(phase s3)" != Running
put_key "$KC"
check "C: the file is read again" wait_until 5 sh -c "[ \$(grep -c 'msg=\"Cube API key reloaded from $T/key\"' '$T/ctl.log') -ge 2 ]"
check "C: s3 gets its sandbox within a few seconds" wait_eq 8 Running phase s3
new_session s4
check "C: and a session made after it too" wait_eq 8 Running phase s4
check "C: reloads_total{result=\"ok\"} is 2" test "$(metric 'session_controller_cube_key_reloads_total{result="ok"}')" = 2

# --- an empty file: the key in use stays, one error line
: >"$T/key"
check "empty: one error line naming the file" wait_until 5 grep -q 'level=error msg="cannot reload the Cube API key" .*error="cube: API key file '"$T"'/key is empty; the key in use stays"' "$T/ctl.log"
check "empty: reloads_total{result=\"error\"} is 1" wait_eq 3 1 metric 'session_controller_cube_key_reloads_total{result="error"}'
new_session s5
check "empty: a new session still gets its sandbox (key C kept)" wait_eq 8 Running phase s5
sleep 3
check "empty: said once while the file stays as it is" test "$(grep -c 'cannot reload the Cube API key' "$T/ctl.log")" = 1
check "empty: no more reloads counted" test "$(metric 'session_controller_cube_key_reloads_total{result="error"}')/$(metric 'session_controller_cube_key_reloads_total{result="ok"}')" = 1/2
put_key "$KC"
sleep 2
check "the same key back: nothing more said" test "$(reloads)/$(grep -c 'cannot reload the Cube API key' "$T/ctl.log")" = 2/1

# --- one process all along, and no key anywhere it wrote
check "no restart: the same process runs" kill -0 "$PID0"
check "no restart: started once" test "$(grep -c 'msg="session-controller starting"' "$T/ctl.log")" = 1
curl -s "http://127.0.0.1:$PORT/metrics" >"$T/metrics.out"
for k in "$KA" "$KB" "$KC"; do
  kn=$(echo "$k" | cut -d- -f4)
  check "no key $kn in the log or on /metrics" sh -c "! grep -F -q -a -e '$k' '$T/ctl.log' '$T/metrics.out'"
done
check "no key part in the log either" sh -c "! grep -q -a 'sk-rot-' '$T/ctl.log'"
check "cubesim: /_sim/key refuses a control character" test "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' -d '{"apiKey":"a\u0001b"}' "$SIM/_sim/key")" = 400
check "cubesim: /_sim/key null turns auth off" test "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' -d '{"apiKey":null}' "$SIM/_sim/key")/$(curl -s -o /dev/null -w '%{http_code}' "$SIM/sandboxes")" = 204/200
finish
