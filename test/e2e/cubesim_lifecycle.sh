#!/bin/sh
# cubesim_lifecycle.sh - lifecycle on the virtual clock through HTTP: idle
# pause, kill, auto-resume, endAt/startedAt per dialect, the pausing window,
# timers driven by the real clock at --clock-speed, audit and truth.
cd "$(dirname "$0")/../.." || exit 1
. test/e2e/lib/cubesim_lib.sh

ms() { jq -rn --arg t "$1" '$t | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601'; }

# ---- cube: frozen clock, advance by hand ----
start_sim --dialect cube --clock-speed 0 --start 2026-01-01T00:00:00Z --audit-log "$TMP/audit.log"
req GET /_sim/clock
check "clock start" jqt '.now=="2026-01-01T00:00:00Z"'
check "Date from virtual clock" is "$(hdr Date)" "Thu, 01 Jan 2026 00:00:00 GMT"
P=$(create '{"templateID":"t","timeout":60,"lifecycle":{"onTimeout":"pause","autoResume":true},"metadata":{"lea.session_id":"p"}}')
K=$(create '{"templateID":"t","timeout":60}')
M=$(create '{"templateID":"t","timeout":100}')
R=$(create '{"templateID":"t","timeout":60,"lifecycle":{"onTimeout":"pause"}}')
req GET /sandboxes/$P
check "cube endAt = activity + timeout" jqt '.endAt=="2026-01-01T00:01:00Z"'
advance 30
curl -s -X POST "$URL/_sim/sandboxes/$P/traffic" >/dev/null
req GET /sandboxes/$P
check "traffic slides endAt" jqt '.endAt=="2026-01-01T00:01:30Z"'
req GET /v2/sandboxes
req POST /sandboxes/$M/pause
advance 1
check "manual pause done" is "$(truth $M .state)" paused
advance 30
check "K killed at 60s" is "$(truth $K .state)" deleted
check "K delete reason" is "$(truth $K .deleteReason)" timeout
check "R paused at 60s" is "$(truth $R .state)" paused
check "P still running" is "$(truth $P .state)" running
advance 30
check "P paused at 90s" is "$(truth $P .state)" paused
req GET /sandboxes/$P
check "paused endAt frozen" jqt '.endAt=="2026-01-01T00:01:30Z" and .state=="paused"'
advance 100
req GET /sandboxes/$P
check "still frozen" jqt '.endAt=="2026-01-01T00:01:30Z"'
check "manually paused kill-sandbox killed at timeout" is "$(truth $M .state)" deleted
STATUS=$(curl -s -o "$BODY_FILE" -w '%{http_code}' -X POST "$URL/_sim/sandboxes/$R/traffic")
check "no auto-resume 503" is "$STATUS" 503
STATUS=$(curl -s -o "$BODY_FILE" -w '%{http_code}' -X POST "$URL/_sim/sandboxes/$K/traffic")
check "deleted 410" is "$STATUS" 410
STATUS=$(curl -s -o "$BODY_FILE" -w '%{http_code}' -X POST "$URL/_sim/sandboxes/nope/traffic")
check "unknown 404" is "$STATUS" 404
STATUS=$(curl -s -o "$BODY_FILE" -w '%{http_code}' -X POST "$URL/_sim/sandboxes/$P/traffic")
check "auto-resume 200" is "$STATUS" 200
check "resumed" jqt '.resumed==true and .state=="running"'
req GET /sandboxes/$P
check "fresh countdown" jqt '.endAt=="2026-01-01T00:04:11Z" and .state=="running"'
curl -s "$URL/_sim/audit" > "$TMP/a"
check "audit events in order" sh -c "jq -r 'select(.sandboxID==\"$P\") | .event' '$TMP/a' | tr '\n' ' ' | grep -q '^create traffic timeout-pause pause-complete auto-resume $'"
check "timer lines at due time" sh -c "jq -s -e 'map(select(.sandboxID==\"$K\" and .event==\"timeout-kill\")) | length==1 and .[0].at==\"2026-01-01T00:01:00Z\" and .[0].source==\"timer\"' '$TMP/a'"
check "audit file equals memory" cmp "$TMP/a" "$TMP/audit.log"
check "audit since" sh -c "[ \$(curl -s '$URL/_sim/audit?since=3' | jq -s 'length') -eq \$(( \$(wc -l < '$TMP/a') - 3 )) ]"
check "truth fields" sh -c "curl -s '$URL/_sim/sandboxes' | jq -e 'length==4 and all(.[]; has(\"sandboxID\") and has(\"templateID\") and has(\"state\") and has(\"metadata\") and has(\"createdAt\") and has(\"startedAt\") and has(\"endAt\") and has(\"lastActivity\") and has(\"pausedAt\") and has(\"deletedAt\") and has(\"deleteReason\") and has(\"autoPause\") and has(\"autoResume\") and has(\"timeout\"))'"
req POST /_sim/reset
check "reset 204" is "$STATUS" 204
check "reset empties truth" sh -c "curl -s '$URL/_sim/sandboxes' | jq -e 'length==0'"
check "reset empties audit" sh -c "[ -z \"\$(curl -s '$URL/_sim/audit')\" ]"
check "SIGTERM exits 0" stop_sim

# ---- e2b: endAt is the deadline, then the pause time; startedAt resets ----
start_sim --dialect e2b --clock-speed 0 --start 2026-01-01T00:00:00Z
A=$(create '{"templateID":"t","timeout":30,"autoPause":true,"autoResume":{"enabled":true}}' /v2/sandboxes)
D=$(create '{"templateID":"t","timeout":30}')
advance 10
curl -s -X POST "$URL/_sim/sandboxes/$A/traffic" >/dev/null
req GET /sandboxes/$A
check "e2b traffic does not extend" jqt '.endAt=="2026-01-01T00:00:30Z"'
advance 20
req GET /sandboxes/$A
check "pausing reported paused, endAt = pause time" jqt '.state=="paused" and .endAt=="2026-01-01T00:00:30Z"'
check "truth pausing" is "$(truth $A .state)" pausing
check "D killed" is "$(truth $D .state)" deleted
advance 100
req POST /sandboxes/$A/connect '{"timeout":50}'
check "connect resumes 201" is "$STATUS" 201
req GET /sandboxes/$A
check "startedAt reset, new deadline" jqt '.startedAt=="2026-01-01T00:02:10Z" and .endAt=="2026-01-01T00:03:00Z"'
check "SIGTERM exits 0" stop_sim

# ---- real-time timers at clock speed 100 ----
start_sim --dialect e2b --clock-speed 100 --pause-duration 1
F=$(create '{"templateID":"t","timeout":2,"autoPause":true}')
G=$(create '{"templateID":"t","timeout":2}')
sleep 0.2
check "timer paused F without requests" is "$(truth $F .state)" paused
check "timer killed G" is "$(truth $G .state)" deleted
req GET /_sim/clock
now=$(jq -r .now "$BODY_FILE")
req GET /health
d=$(hdr Date)
check "X-Sim-Now ms" sh -c "hdr() { grep -i \"^\$1:\" '$HDR_FILE' | sed 's/^[^:]*: *//' | tr -d '\r'; }; hdr X-Sim-Now | grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T'"
check "SIGTERM exits 0" stop_sim
finish
