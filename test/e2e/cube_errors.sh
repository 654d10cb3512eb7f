#!/bin/sh
# End-to-end: a create Cube refuses for good (a 4xx other than 404, 409 and
# 429) is not retried in a tight loop: at most once per resync for the same
# generation; the session shows Ready=False/CreateFailed with Cube's answer
# (on SQLite, which has no Events), and recovers once Cube accepts it. A
# key Cube refuses (401) is said at error level, turns /readyz 503, and the
# sessions' status names the key.
. "$(dirname "$0")/lib/common.sh"

creates() { sim_audit | jq -s '[.[] | select(.event == "create")] | length'; }
ready_of() { sess_field "$1" tenant-a '.status.conditions[]? | select(.type=="Ready") | .reason'; }

cat >"$T/s1.yaml" <<YAML
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: s1, namespace: tenant-a}
spec: {template: no-such-template}
YAML

# --- a 400 on create
start_cubesim --clock-speed 1 --faults 'create:error=1@400'
ctl apply -f "$T/s1.yaml" >/dev/null
start_controller ctl-400 --resync 2s
check "400: Ready=False/CreateFailed within one resync" wait_eq 3 CreateFailed ready_of s1
check "400: phase Failed" test "$(sess_field s1 tenant-a .status.phase)" = Failed
check "400: the message carries Cube's answer" sh -c "'$BINDIR/sessionctl' --store '$STORE' get sessions s1 -n tenant-a -o json | jq -r '.status.conditions[] | select(.type==\"Ready\") | .message' | grep -q 'HTTP 400'"
check "400: no claim is left behind" test "$(sess_field s1 tenant-a '.status.createIntent // "none"')" = none
n0=$(creates)
sleep 6
n1=$(creates)
# at most one try per 2 s resync over 6 s (+1 for a resync at the edge)
check "400: no tight retry (creates in 6 s: $((n1 - n0)), at most 4)" test $((n1 - n0)) -le 4
check "400: but it is tried again" test $((n1 - n0)) -ge 2
check "400: status writes settle (one Ready)" test "$(sess_field s1 tenant-a '[.status.conditions[] | select(.type=="Ready")] | length')" = 1
curl -sf -X POST -d '' "$SIM/_sim/faults" >/dev/null
check "400: Cube accepts again: Running within two resyncs" wait_eq 5 Running sess_field s1 tenant-a .status.phase
check "400: Ready is SandboxRunning" test "$(ready_of s1)" = SandboxRunning
kill "$CTL_PID"; wait "$CTL_PID" 2>/dev/null
kill "$SIM_PID"; wait "$SIM_PID" 2>/dev/null
ctl delete session s1 -n tenant-a --wait=false >/dev/null # no controller: left held

# --- a spec change is tried at once, not after the backoff
rm -f "$T/sessions.db"*
start_cubesim --clock-speed 1 --faults 'create:error=1@422'
ctl apply -f "$T/s1.yaml" >/dev/null
start_controller ctl-422 --resync 30s
check "422: CreateFailed" wait_eq 5 CreateFailed ready_of s1
curl -sf -X POST -d '' "$SIM/_sim/faults" >/dev/null
sed 's/no-such-template/python/' "$T/s1.yaml" >"$T/s1b.yaml"
ctl apply -f "$T/s1b.yaml" >/dev/null
check "422: a new generation is created at once (long before the 30 s resync)" wait_eq 5 Running sess_field s1 tenant-a .status.phase
kill "$CTL_PID"; wait "$CTL_PID" 2>/dev/null
kill "$SIM_PID"; wait "$SIM_PID" 2>/dev/null

# --- Cube down: /healthz means the loop turns (a restart cannot bring Cube
# back), /readyz says why nothing completes
rm -f "$T/sessions.db"*
start_cubesim --clock-speed 1
ctl apply -f "$T/s1b.yaml" >/dev/null
start_controller ctl-down --resync 1s
check "down: Running first" wait_eq 10 Running sess_field s1 tenant-a .status.phase
port=$(metrics_port ctl-down)
kill "$SIM_PID"; wait "$SIM_PID" 2>/dev/null
sleep 13 # over 10 resync periods without a full pass
check "down: /healthz stays 200" test "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")" = 200
check "down: /readyz is 503" test "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 503
check "down: /readyz says no pass completes, and why" sh -c "curl -s 'http://127.0.0.1:$port/readyz' | grep -q 'no full pass has completed for over 10 resync periods: .*cube'"
kill "$CTL_PID"; wait "$CTL_PID" 2>/dev/null

# --- a key Cube refuses
rm -f "$T/sessions.db"*
start_cubesim --clock-speed 1 --api-key right-key
echo wrong-key >"$T/key"
chmod 644 "$T/key"
ctl apply -f "$T/s1b.yaml" >/dev/null
start_controller ctl-401 --resync 1s --cube-api-key-file "$T/key"
check "401: an error-level line says to check the key" wait_until 10 grep -q 'level=error msg="Cube refuses the API key on every call: check --cube-api-key-file or CUBE_API_KEY"' "$T/ctl-401.log"
port=$(metrics_port ctl-401)
check "401: /readyz is 503" wait_eq 5 503 curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz"
check "401: /readyz says why" sh -c "curl -s 'http://127.0.0.1:$port/readyz' | grep -q 'Cube refuses the API key'"
check "401: /healthz stays 200 (the loop turns)" test "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")" = 200
check "401: the session's status names the key" wait_until 5 sh -c "'$BINDIR/sessionctl' --store '$STORE' get sessions s1 -n tenant-a -o json | jq -r '.status.conditions[]? | select(.type==\"Ready\") | .message' | grep -q 'refuses the API key'"
check "secrets: a key file readable by others is warned about" grep -q 'level=warn msg="the Cube API key file is readable by group or others: chmod 600 it".*mode=0644' "$T/ctl-401.log"
check "secrets: no core file can hold the key" sh -c "grep '^Max core file size' /proc/$CTL_PID/limits | grep -q ' 0  *0 '"
finish
