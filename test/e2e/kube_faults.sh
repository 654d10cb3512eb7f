#!/bin/sh
# test-slow
# End-to-end: the kube store under API server faults (kube-apiserver-fake's
# POST /_fake/faults). Calls retry 429 and 5xx with backoff and succeed once
# the faults stop; Retry-After is honoured; a persistent 500 fails the call
# with a clear error after the bounded retries while the controller keeps
# running and recovers; the watch reconnects with backoff after 5xx (and
# waits a watch's Retry-After). The timings come from the fake's request
# log (GET /_fake/requests?format=json: t in ms).
. "$(dirname "$0")/lib/common.sh"

start_kube_fake main --bookmark-ms 300
kubeconfig "$T/kc"
export KUBECONFIG="$T/kc"
STORE=kube
SP=/apis/lea.io/v1alpha1

faults() { curl -sf -X POST -H 'Content-Type: application/json' -d "$1" "$API/_fake/faults" >/dev/null; }
nofaults() { curl -sf -X DELETE "$API/_fake/faults" >/dev/null; }
forget() { curl -sf -X DELETE "$API/_fake/requests" >/dev/null; }
# reqs JQFILTER: the logged requests that match, as a JSON array
reqs() { curl -sf "$API/_fake/requests?format=json" | jq -c "[.[] | select($1)]"; }
count() { reqs "$1" | jq length; }
# gaps JQFILTER: the ms between consecutive matching requests, one a line
gaps() { reqs "$1" | jq -r '. as $a | range(1; length) | $a[.].t - $a[. - 1].t'; }

session_yaml() {
  cat >"$T/$1.yaml" <<YAML
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: $1, namespace: tenant-a}
spec: {template: python-data, idleTimeout: 15m}
YAML
}
for s in s1 s2 s3 s4; do session_yaml $s; done

# --- the fault endpoint itself
check "faults: a bad rule is a 400 naming the field" sh -c \
  "curl -s -X POST -d '{\"status\":200}' '$API/_fake/faults' | grep -q 'status: want an integer from 400 to 599'"
check "faults: an unknown field is refused" sh -c \
  "curl -s -X POST -d '{\"status\":500,\"cuont\":2}' '$API/_fake/faults' | grep -q 'unknown field'"
faults '[{"status":503,"count":2,"path":"/apis/lea.io/"},{"status":500,"count":-1,"method":"DELETE"}]'
check "faults: GET lists the rules" test "$(curl -sf "$API/_fake/faults" | jq -c '[.[] | [.status, .count]]')" = '[[503,2],[500,-1]]'
nofaults
check "faults: DELETE clears them" test "$(curl -sf "$API/_fake/faults")" = '[]'

# --- synchronous calls: 429 with Retry-After, then success
ctl apply -f "$T/s1.yaml" >/dev/null
forget
faults '{"status":429,"count":2,"retryAfter":1,"path":"/apis/lea.io/","method":"GET"}'
check "429: get succeeds once the faults stop" test "$(sess_field s1 tenant-a .metadata.name)" = s1
check "429: 2 refused + 1 served GETs" test "$(count '.path | endswith("/sessions/s1")')" = 3
check "429: the refused ones were the faults" test "$(count '.fault == 429')" = 2
G=$(gaps '.path | endswith("/sessions/s1")' | tr '\n' ' ')
set -- $G
check "429: each retry waited the 1 s Retry-After (gaps: $G)" sh -c "[ ${1:-0} -ge 950 ] && [ ${2:-0} -ge 950 ]"

# --- 503 without Retry-After: exponential backoff (100, 200, 400 ms)
forget
faults '{"status":503,"count":3,"path":"/apis/lea.io/v1alpha1/sessions"}'
check "503: list succeeds after 3 faults" sh -c "'$BINDIR/sessionctl' --store kube get sessions -A | grep -q s1"
check "503: 4 list requests" test "$(count ".path == \"$SP/sessions\"")" = 4
G=$(gaps ".path == \"$SP/sessions\"" | tr '\n' ' ')
set -- $G
check "503: backoff grows 100/200/400 ms (gaps: $G)" sh -c "[ ${1:-0} -ge 90 ] && [ ${2:-0} -ge 190 ] && [ ${3:-0} -ge 390 ]"

# --- persistent 500: a clear error after the bounded retries
forget
faults '{"status":500,"count":-1,"path":"/apis/lea.io/v1alpha1/namespaces/tenant-a/sessions/s1"}'
t0=$(date +%s)
ctl get sessions s1 -n tenant-a >/dev/null 2>"$T/p500.err"
rc=$?
t1=$(date +%s)
check "500: the call fails" test "$rc" -ne 0
check "500: ... with a clear error" grep -q "kube GET $API$SP/namespaces/tenant-a/sessions/s1: HTTP 500: injected failure 500 (after 5 attempts)" "$T/p500.err"
check "500: exactly 5 attempts" test "$(count '.path | endswith("/sessions/s1")')" = 5
check "500: bounded in time (under 5 s)" test $((t1 - t0)) -lt 5
nofaults

# --- the controller: a failing status update is retried
start_cubesim --clock-speed 1
faults "{\"status\":503,\"count\":2,\"method\":\"PUT\",\"path\":\"$SP/namespaces/tenant-a/sessions/s2/status\"}"
forget
start_controller ctl-faults --orphan-grace 10m --watch-timeout 2s
ctl apply -f "$T/s2.yaml" >/dev/null
check "status: sandbox created" wait_eq 20 1 sim_live_for s2
check "status: Running despite 2 refused status updates" wait_eq 15 Running sess_field s2 tenant-a .status.phase
check "status: the refused PUTs were retried" test "$(count '.method == "PUT" and (.path | endswith("/s2/status")) and .fault == 503')" = 2

# --- the controller: persistent 500 on every list; it keeps running and
# recovers when the server does
faults "{\"status\":500,\"count\":-1,\"method\":\"GET\",\"watch\":false,\"path\":\"$SP/sessions\"}"
check "list 500: the controller logs the failed list" wait_until 15 grep -q "store list failed.*HTTP 500: injected failure 500 (after 5 attempts)" "$T/ctl-faults.log"
check "list 500: the controller keeps running" kill -0 "$CTL_PID"
nofaults
ctl apply -f "$T/s3.yaml" >/dev/null
check "list 500: recovers: the next session gets its sandbox" wait_eq 20 1 sim_live_for s3
check "list 500: ... and its status" wait_eq 15 Running sess_field s3 tenant-a .status.phase

# --- the watch: 503 on reconnect, backoff, then it watches again
forget
faults '{"status":503,"count":4,"watch":true}'
curl -sf -X POST "$API/_fake/end-watches" >/dev/null
W='(.query | test("watch=1"))'
check "watch 503: reconnected after the faults" wait_until 20 sh -c "[ \$(curl -sf '$API/_fake/stats' | jq .watches) -ge 1 ] && [ \$(curl -sf '$API/_fake/requests?format=json' | jq '[.[] | select(.query | test(\"watch=1\")) | select(.fault == 0)] | length') -ge 1 ]"
check "watch 503: 4 refused watch requests" test "$(count "$W and .fault == 503")" = 4
G=$(gaps "$W" | head -n 4 | tr '\n' ' ')
set -- $G
check "watch 503: no tight loop, growing backoff (gaps: $G)" sh -c "[ ${1:-0} -ge 90 ] && [ ${2:-0} -ge 90 ] && [ ${3:-0} -ge 190 ] && [ ${4:-0} -ge 390 ]"
ctl apply -f "$T/s4.yaml" >/dev/null
check "watch 503: events flow again" wait_eq 20 1 sim_live_for s4

# --- the watch: 429 with Retry-After 2
forget
faults '{"status":429,"count":1,"retryAfter":2,"watch":true}'
curl -sf -X POST "$API/_fake/end-watches" >/dev/null
check "watch 429: reconnected" wait_until 20 sh -c "[ \$(curl -sf '$API/_fake/requests?format=json' | jq '[.[] | select(.query | test(\"watch=1\")) | select(.fault == 0)] | length') -ge 1 ]"
G=$(gaps "$W" | head -n 1)
check "watch 429: waited the Retry-After of 2 s (gap: $G ms)" test "${G:-0}" -ge 1900

# --- the watch expires (410) while every list fails: the reconciler must
# try again to start a watch (not wait for its next resync, 60 s here)
stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
stop_pid "$CTL_PID"
start_controller ctl-relist --orphan-grace 10m --watch-timeout 2s --resync 60s
sleep 2 # the first pass
forget
faults "[{\"status\":410,\"count\":1,\"watch\":true},{\"status\":500,\"count\":-1,\"method\":\"GET\",\"watch\":false,\"path\":\"$SP/sessions\"}]"
curl -sf -X POST "$API/_fake/end-watches" >/dev/null
check "relist: the list before a new watch failed" wait_until 20 grep -q "store list for watch failed" "$T/ctl-relist.log"
check "relist: a retry is scheduled" wait_until 10 grep -q "store watch not running; trying again" "$T/ctl-relist.log"
nofaults
printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: s5, namespace: tenant-a}\nspec: {template: shell}\n' | ctl apply -f - >/dev/null
check "relist: the watch runs again and s5 gets its sandbox (no resync needed)" wait_eq 20 1 sim_live_for s5

# --- the loop never waits for the API server: s6's first status write
# (its create claim) is held 4 s by the server; meanwhile /healthz
# answers and s7 is created (a store call on the loop's thread would
# stall all of it for the 4 s)
session_yaml s6
session_yaml s7
P=$(metrics_port ctl-relist)
forget
faults "{\"delayMs\":4000,\"count\":1,\"method\":\"PUT\",\"path\":\"$SP/namespaces/tenant-a/sessions/s6/status\"}"
ctl apply -f "$T/s6.yaml" >/dev/null
check "held call: s6's status write reached the server" wait_until 10 sh -c "[ \$(curl -sf '$API/_fake/requests?format=json' | jq '[.[] | select(.method == \"PUT\" and (.path | endswith(\"/s6/status\")))] | length') -ge 1 ]"
ctl apply -f "$T/s7.yaml" >/dev/null
check "held call: /healthz answers within 1 s meanwhile" curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:$P/healthz"
check "held call: s7 gets its sandbox within 3 s meanwhile" wait_eq 3 1 sim_live_for s7
check "held call: ... while s6 still waits for its claim" test "$(sim_live_for s6)" = 0
check "held call: s6 gets its sandbox once the server answers" wait_eq 20 1 sim_live_for s6

# --- the finalizer is the executor's, one object at a time: the API
# server refuses every PATCH of f1 (its finalizer); f2, applied with it
# while no controller ran (so only a full pass can see either), gets its
# finalizer and its sandbox all the same (when the store's list added
# finalizers, f1's refusal failed the list, and so every full pass for
# every session); f1 gets no sandbox while it has no finalizer (a
# kubectl delete could not wait for it), and both once the server agrees
fin_of() { curl -sf "$API$SP/namespaces/tenant-a/sessions/$1" | jq -r '.metadata.finalizers // [] | join(",")'; }
session_yaml f1
session_yaml f2
faults "{\"status\":403,\"count\":-1,\"method\":\"PATCH\",\"path\":\"$SP/namespaces/tenant-a/sessions/f1\"}"
cat "$T/f1.yaml" >"$T/f12.yaml"; echo --- >>"$T/f12.yaml"; cat "$T/f2.yaml" >>"$T/f12.yaml"
stop_pid "$CTL_PID"
ctl apply -f "$T/f12.yaml" >/dev/null
start_controller ctl-fin --orphan-grace 10m --watch-timeout 2s --resync 1s
check "finalizer: f2 gets its sandbox while f1's PATCH is refused" wait_eq 20 1 sim_live_for f2
check "finalizer: ... and its finalizer" test "$(fin_of f2)" = lea.io/sandbox-cleanup
check "finalizer: the refusal is logged for f1" wait_until 10 grep -q 'finalizer not added.*session=f1' "$T/ctl-fin.log"
sleep 1
check "finalizer: f1 has no sandbox without its finalizer" test "$(sim_live_for f1)" = 0
check "finalizer: ... and no finalizer" test "$(fin_of f1)" = ""
nofaults
check "finalizer: f1 gets its finalizer once the server agrees" wait_until 20 sh -c "[ \"\$(curl -sf '$API$SP/namespaces/tenant-a/sessions/f1' | jq -r '.metadata.finalizers // [] | join(\",\")')\" = lea.io/sandbox-cleanup ]"
check "finalizer: ... and its sandbox" wait_eq 20 1 sim_live_for f1
finish
