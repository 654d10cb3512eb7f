#!/bin/sh
# cubesim_api_cube.sh - the Cube dialect's differences, auth, and SIGTERM.
cd "$(dirname "$0")/../.." || exit 1
. test/e2e/lib/cubesim_lib.sh

start_sim --dialect cube --seed 2 --pause-duration 2 --max-sandboxes 3
req POST /sandboxes '{"templateID":"py","timeout":-1,"lifecycle":{"on_timeout":"pause","auto_resume":true},"autoPause":false}'
check "create 201" is "$STATUS" 201
check "cube id" jqt '.sandboxID|test("^[0-9a-f]{32}$")'
A=$(jq -r .sandboxID "$BODY_FILE")
req GET /sandboxes/$A
check "lifecycle snake-case wins" jqt '.lifecycle.onTimeout=="pause" and .lifecycle.autoResume==true'
check "never: endAt omitted" jqt 'has("endAt")|not'
STATUS=$(curl -s -o "$BODY_FILE" -w '%{http_code}' -A 'e2b-js-sdk/2.51.0' "$URL/sandboxes/$A")
check "never: far endAt for e2b sdk" jqt '.endAt=="9999-12-31T23:59:59Z"'
req POST /sandboxes '{"templateID":"py"}'
B=$(jq -r .sandboxID "$BODY_FILE")
req GET /sandboxes/$B
check "default timeout never, kill" jqt '(has("endAt")|not) and .lifecycle.onTimeout=="kill"'
req POST /sandboxes '{"templateID":"py","timeout":-2}'
check "timeout -2 400" is_error 400
req POST /sandboxes '{"templateID":"py","lifecycle":{"onTimeout":"sleep"}}'
check "bad onTimeout 400" is_error 400

req POST /sandboxes/$A/pause
check "pause 204" is "$STATUS" 204
req DELETE /sandboxes/$A
check "delete while pausing 503" is_error 503
check "retry-after 2" is "$(hdr Retry-After)" 2
req GET "/v2/sandboxes?state=paused"
check "pausing is not paused (state filter)" jqt "length==0"
req GET "/v2/sandboxes?state=running"
check "pausing is not running (state filter)" jqt "length==1 and .[0].sandboxID==\"$B\""
req GET "/v2/sandboxes"
check "pausing listed as pausing" jqt "length==2 and ([.[]|select(.sandboxID==\"$A\")|.state]==[\"pausing\"])"
req GET /sandboxes
check "v1 list: pausing" jqt "length==2 and ([.[]|select(.sandboxID==\"$A\")|.state]==[\"pausing\"])"
req GET /sandboxes/$A
check "get: pausing" jqt ".state==\"pausing\""
advance 3
req POST /sandboxes/$A/pause
check "already paused 500" is_error 500
check "cube message" jqt '.message=="sandbox is already paused"'
req GET "/v2/sandboxes?state=bogus&nextToken=abc&limit=1"
check "bogus state: no filter, no paging" jqt 'length==2'
check "no next token" sh -c "! grep -qi '^X-Next-Token' '$HDR_FILE'"
check "cube: no X-Total-Running" sh -c "! grep -qi '^X-Total-Running' '$HDR_FILE'"
req GET "/v2/sandboxes?state=running"
check "state running" jqt "length==1 and .[0].sandboxID==\"$B\""
req POST /sandboxes/$A/timeout '{"timeout":120}'
check "cube timeout on paused 204" is "$STATUS" 204
req POST /sandboxes/$A/connect '{"timeout":60}'
check "connect paused 200" is "$STATUS" 200
req POST /sandboxes/$A/connect '{"timeout":60}'
check "connect running 200" is "$STATUS" 200
req POST /sandboxes '{"templateID":"py"}'
req POST /sandboxes '{"templateID":"py"}'
check "capacity 409" is_error 409
req DELETE /sandboxes/$A
check "delete 204" is "$STATUS" 204
req POST /sandboxes '{"templateID":"py"}'
check "room again" is "$STATUS" 201
check "SIGTERM exits 0" stop_sim

# ---- auto-resume off: traffic to a paused sandbox gets 503, it stays paused ----
start_sim --dialect cube --seed 4 --clock-speed 0 --pause-duration 2
# Cube's lifecycle body, then the session-controller's (both dialects'
# fields; the flat ones alone say on, lifecycle wins)
for body in '{"templateID":"py","timeout":600,"lifecycle":{"onTimeout":"pause","autoResume":false}}' \
    '{"templateID":"py","timeout":600,"autoPause":true,"autoResume":{"enabled":false},"lifecycle":{"onTimeout":"pause","autoResume":false}}' \
    '{"templateID":"py","timeout":600,"autoPause":true,"autoResume":{"enabled":true},"lifecycle":{"onTimeout":"pause","autoResume":false}}'; do
  req POST /sandboxes "$body"
  check "no-resume create 201" is "$STATUS" 201
  check "create answer has the domain" jqt '.domain=="cubesim.local"'
  N=$(jq -r .sandboxID "$BODY_FILE")
  check "truth: autoResume false" is "$(truth "$N" .autoResume)" false
  req POST /sandboxes/$N/pause
  check "no-resume pause 204" is "$STATUS" 204
  req POST /_sim/sandboxes/$N/traffic
  check "traffic while pausing, auto-resume off: 503" is_error 503
  check "still pausing" is "$(truth "$N" .state)" pausing
  advance 3
  check "no-resume paused" is "$(truth "$N" .state)" paused
  req POST /_sim/sandboxes/$N/traffic
  check "traffic, auto-resume off: 503" is_error 503
  check "still paused after traffic" is "$(truth "$N" .state)" paused
  req GET /sandboxes/$N
  check "get: paused, autoResume false, domain" jqt '.state=="paused" and .lifecycle.autoResume==false and .domain=="cubesim.local"'
done
req POST /sandboxes '{"templateID":"py","timeout":600,"autoPause":true,"autoResume":{"enabled":true},"lifecycle":{"onTimeout":"pause","autoResume":true}}'
Y=$(jq -r .sandboxID "$BODY_FILE")
check "truth: autoResume true" is "$(truth "$Y" .autoResume)" true
req POST /sandboxes/$Y/pause
advance 3
check "resume-on paused" is "$(truth "$Y" .state)" paused
req POST /_sim/sandboxes/$Y/traffic
check "traffic, auto-resume on: 200" is "$STATUS" 200
check "traffic resumed it" jqt '.resumed==true and .state=="running"'
check "running after traffic" is "$(truth "$Y" .state)" running
check "SIGTERM exits 0 (auto-resume)" stop_sim

# ---- auth ----
start_sim --dialect cube --api-key s3cret
req GET /v2/sandboxes
check "no key 401" is_error 401
STATUS=$(curl -s -o "$BODY_FILE" -D "$HDR_FILE" -w '%{http_code}' -H 'X-API-Key: wrong' "$URL/v2/sandboxes")
check "wrong key 401" is_error 401
STATUS=$(curl -s -o "$BODY_FILE" -w '%{http_code}' -H 'x-api-key: s3cret' "$URL/v2/sandboxes")
check "x-api-key lower-case" is "$STATUS" 200
STATUS=$(curl -s -o "$BODY_FILE" -w '%{http_code}' -H 'X-API-KEY: s3cret' "$URL/v2/sandboxes")
check "X-API-KEY upper-case" is "$STATUS" 200
STATUS=$(curl -s -o "$BODY_FILE" -w '%{http_code}' -H 'authorization: Bearer s3cret' "$URL/v2/sandboxes")
check "bearer" is "$STATUS" 200
req GET /health
check "health without key" is "$STATUS" 204
req GET /_sim/clock
check "admin without key" is "$STATUS" 200
req POST /sandboxes '{"templateID":"py"}'
check "create without key 401" is_error 401
check "401 audited" sh -c "curl -s '$URL/_sim/audit' | jq -s -e 'map(select(.status==401 and .event==\"create\")) | length==1'"
kill -INT "$SIM_PID"; wait "$SIM_PID"; rc=$?; SIM_PID=""
check "SIGINT exits 0" is "$rc" 0
finish
