#!/bin/sh
# cubesim_api_e2b.sh - conformance of the E2B dialect: status codes, bodies,
# headers, metadata decoding, state filters, paging, errors.
cd "$(dirname "$0")/../.." || exit 1
. test/e2e/lib/cubesim_lib.sh

enc() { printf '%s' "$1" | jq -sRr @uri; }
# the metadata parameter as the E2B SDK builds it: k=v pairs, each part
# encoded, the whole encoded twice more (E2B decodes three times)
mq() {
  out=""
  while [ $# -ge 2 ]; do
    pair="$(enc "$1")=$(enc "$2")"
    if [ -n "$out" ]; then out="$out&$pair"; else out="$pair"; fi
    shift 2
  done
  enc "$(enc "$out")"
}

start_sim --dialect e2b --seed 1

req GET /health
check "health 204" is "$STATUS" 204
check "date header" sh -c "grep -qiE '^Date: [A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9:]{8} GMT' '$HDR_FILE'"
check "request id" has_hdr X-Request-Id

req POST /sandboxes '{"templateID":"base","timeout":60,"metadata":{"a&b":"c=d","p%":"100%","sp ace":"x y","lang":"été","lea.session_id":"s1"}}'
check "create 201" is "$STATUS" 201
check "create body" jqt '(.templateID=="base") and (.sandboxID|test("^i[a-z0-9]{20}$")) and (.clientID|type=="string") and (.envdVersion|type=="string") and has("domain")'
check "create json" sh -c "grep -qi '^Content-Type: application/json' '$HDR_FILE'"
A=$(jq -r .sandboxID "$BODY_FILE")
req POST /v2/sandboxes '{"templateID":"base","timeout":60,"metadata":{"a&b":"other","lea.session_id":"s2"},"autoPause":true,"autoResume":{"enabled":true}}' -H 'Transfer-Encoding: chunked'
check "create v2 chunked 201" is "$STATUS" 201
B=$(jq -r .sandboxID "$BODY_FILE")

# ---- create validation ----
req POST /sandboxes '{"timeout":60}'
check "missing templateID 400" is_error 400
check "names templateID" jqt '.message|test("templateID")'
req POST /sandboxes '{"templateID":"base","metadata":{"k":1}}'
check "metadata non-string 400" is_error 400
check "names metadata.k" jqt '.message|test("metadata.k")'
req POST /sandboxes '{"templateID":"base","timeout":"60"}'
check "timeout string 400" is_error 400
req POST /sandboxes '{"templateID":"base","timeout":1.5}'
check "timeout float 400" is_error 400
req POST /sandboxes '{"templateID":"base","timeout":-1}'
check "e2b negative timeout 400" is_error 400
req POST /sandboxes '{"templateID":"base","autoPause":"yes"}'
check "autoPause type 400" is_error 400
req POST /sandboxes '{"templateID":"base","autoResume":true,"envVars":{"A":2}}'
check "envVars type 400" is_error 400
req POST /sandboxes '{"templateID":"base",'
check "malformed 400" is_error 400
req POST /sandboxes '[1,2]'
check "non-object 400" is_error 400
req POST /sandboxes '{"templateID":"base","metadata":{"x":"\377"}}'
check "invalid utf8 400" is_error 400
deep=$(printf '%0.s[' $(seq 1 200))
req POST /sandboxes "{\"templateID\":\"base\",\"x\":$deep}"
check "deep nesting 400" is_error 400

# ---- get ----
req GET /sandboxes/$A
check "get 200" is "$STATUS" 200
check "get detail" jqt '.templateID=="base" and .sandboxID and .clientID and (.startedAt|test("Z$")) and (.endAt|test("Z$")) and .cpuCount>=1 and .memoryMB>=128 and .diskSizeMB>=0 and .state=="running" and .envdVersion and .lifecycle.onTimeout=="kill" and .lifecycle.autoResume==false and .metadata["a&b"]=="c=d"'
req GET /sandboxes/$B
check "lifecycle from flat fields" jqt '.lifecycle.onTimeout=="pause" and .lifecycle.autoResume==true'
req GET /sandboxes/inothere0000000000000
check "get unknown 404" is_error 404

# ---- list + metadata decoding ----
req GET /v2/sandboxes
check "list 200" is "$STATUS" 200
check "list rows" jqt 'length==2 and all(.[]; has("templateID") and has("sandboxID") and has("clientID") and has("startedAt") and has("endAt") and has("cpuCount") and has("memoryMB") and has("diskSizeMB") and has("metadata") and has("state") and has("envdVersion"))'
req GET "/v2/sandboxes?metadata=$(mq 'a&b' 'c=d')"
check "meta & and =" jqt "length==1 and .[0].sandboxID==\"$A\""
req GET "/v2/sandboxes?metadata=$(mq 'p%' '100%' 'sp ace' 'x y')"
check "meta % and space" jqt "length==1 and .[0].sandboxID==\"$A\""
req GET "/v2/sandboxes?metadata=$(mq lang 'été')"
check "meta utf8" jqt "length==1 and .[0].sandboxID==\"$A\""
req GET "/v2/sandboxes?metadata=$(mq 'a&b' 'c=d' lea.session_id s2)"
check "meta AND" jqt 'length==0'
req GET "/sandboxes?metadata=$(mq lea.session_id s2)"
check "v1 list meta" jqt "length==1 and .[0].sandboxID==\"$B\""
req GET "/v2/sandboxes?metadata=%25zz"
check "meta bad escape 400" is_error 400

# ---- pause / state filter ----
req POST /sandboxes/$A/pause
check "pause 204" is "$STATUS" 204
req POST /sandboxes/$A/pause
check "pause again 409" is_error 409
req GET "/v2/sandboxes?state=paused"
check "state=paused" jqt "length==1 and .[0].sandboxID==\"$A\" and .[0].state==\"paused\""
req GET "/v2/sandboxes?state=running"
check "state=running" jqt "length==1 and .[0].sandboxID==\"$B\""
req GET "/v2/sandboxes?state=running,paused"
check "state list" jqt 'length==2'
req GET "/v2/sandboxes?state=bogus"
check "state bogus 400" is_error 400
req GET /sandboxes
check "v1 lists running only" jqt "length==1 and .[0].sandboxID==\"$B\""
req GET /sandboxes/$A
check "paused endAt is pause time" sh -c "jq -e '.state==\"paused\"' '$BODY_FILE'"
req POST /sandboxes/$A/timeout '{"timeout":30}'
check "timeout on paused 404" is_error 404
req POST /sandboxes/$A/refreshes '{"duration":30}'
check "refresh on paused 404" is_error 404

# ---- resume / connect ----
req POST /sandboxes/$A/resume '{"timeout":100}'
check "resume 201" is "$STATUS" 201
check "resume body" jqt ".sandboxID==\"$A\" and .envdVersion"
req POST /sandboxes/$A/resume '{}'
check "resume running 409" is_error 409
req POST /sandboxes/$A/connect '{"timeout":10}'
check "connect running 200" is "$STATUS" 200
req POST /sandboxes/$A/connect '{}'
check "connect needs timeout 400" is_error 400
req POST /sandboxes/$A/pause
req POST /v2/sandboxes/$A/connect '{"timeout":10}'
check "connect paused 201" is "$STATUS" 201
req POST /sandboxes/$A/timeout '{"timeout":30}'
check "timeout 204" is "$STATUS" 204
req POST /sandboxes/$A/timeout '{}'
check "timeout missing 400" is_error 400
req POST /sandboxes/$A/refreshes '{"duration":3601}'
check "refresh too long 400" is_error 400
req POST /sandboxes/$A/refreshes '{"duration":60}'
check "refresh 204" is "$STATUS" 204

# ---- paging ----
i=0
while [ $i -lt 7 ]; do create '{"templateID":"page","metadata":{"grp":"p"}}' >/dev/null; i=$((i + 1)); done
q="metadata=$(mq grp p)&limit=3"
req GET "/v2/sandboxes?$q"
check "page 1" jqt 'length==3'
t1=$(hdr X-Next-Token)
check "next token" test -n "$t1"
check "X-Total-Running: all 7 matches, before paging" is "$(hdr X-Total-Running)" 7
ids1=$(jq -r '.[].sandboxID' "$BODY_FILE")
req GET "/v2/sandboxes?$q&nextToken=$t1"
check "page 2" jqt 'length==3'
t2=$(hdr X-Next-Token)
ids2=$(jq -r '.[].sandboxID' "$BODY_FILE")
req GET "/v2/sandboxes?$q&nextToken=$t2"
check "page 3 last" jqt 'length==1'
check "no token at end" sh -c "! grep -qi '^X-Next-Token' '$HDR_FILE'"
ids3=$(jq -r '.[].sandboxID' "$BODY_FILE")
req GET "/v2/sandboxes?metadata=$(mq grp p)&state=paused"
check "no X-Total-Running unless running asked for" sh -c "! grep -qi '^X-Total-Running' '$HDR_FILE'"
check "pages disjoint, complete" is "$(printf '%s\n%s\n%s\n' "$ids1" "$ids2" "$ids3" | sort -u | wc -l | tr -d ' ')" 7
# the count is taken once per change of the fleet and filter (not on
# every page): a pause, another filter and a create each show at once
p1=$(printf '%s\n' "$ids1" | head -n 1)
req POST /sandboxes/$p1/pause
req GET "/v2/sandboxes?$q&nextToken=$t1"
check "X-Total-Running after a pause: 6" is "$(hdr X-Total-Running)" 6
req GET "/v2/sandboxes?metadata=$(mq grp none)&limit=3"
check "X-Total-Running of another filter: 0" is "$(hdr X-Total-Running)" 0
req GET "/v2/sandboxes?$q"
check "X-Total-Running of the first filter again: 6" is "$(hdr X-Total-Running)" 6
create '{"templateID":"page","metadata":{"grp":"p"}}' >/dev/null
req GET "/v2/sandboxes?$q&nextToken=$t1"
check "X-Total-Running after a create: 7" is "$(hdr X-Total-Running)" 7
req GET "/v2/sandboxes?limit=0"
check "limit 0 400" is_error 400
req GET "/v2/sandboxes?limit=101"
check "limit 101 400" is_error 400
req GET "/v2/sandboxes?nextToken=garbage"
check "bad token 400" is_error 400

# ---- delete, routes ----
req DELETE /sandboxes/$B
check "delete 204" is "$STATUS" 204
req DELETE /sandboxes/$B
check "delete again 404" is_error 404
req GET /sandboxes/$B
check "deleted get 404" is_error 404
req GET /nope
check "unknown route 404" is_error 404
req PUT /sandboxes
check "wrong method 405" is_error 405
check "allow header" sh -c "grep -qi '^Allow: GET, POST' '$HDR_FILE'"
req PATCH /sandboxes/$A
check "patch 405" is_error 405
big=$(head -c 1100000 /dev/zero | tr '\0' 'a')
printf '{"templateID":"%s"}' "$big" > "$TMP/big.json"
STATUS=$(curl -s -o "$BODY_FILE" -D "$HDR_FILE" -w '%{http_code}' -X POST --data-binary @"$TMP/big.json" "$URL/sandboxes")
check "413 json" is_error 413
req GET /health
check "still serving" is "$STATUS" 204

# ---- audit mirrors the calls ----
# 9 creates above, and the one of the count checks
curl -s "$URL/_sim/audit" > "$TMP/audit"
check "audit creates" sh -c "[ \$(jq -s '[.[] | select(.event==\"create\" and .status==201)] | length' '$TMP/audit') -eq 10 ]"
check "audit pause 409" sh -c "jq -s -e '[.[] | select(.event==\"pause\" and .status==409 and (.stateBefore==\"pausing\" or .stateBefore==\"paused\"))] | length >= 1' '$TMP/audit'"
check "audit seq in order" sh -c "jq -s -e '[.[].seq] == ([.[].seq] | sort) and .[0].seq==1' '$TMP/audit'"
check "audit no gets" sh -c "! grep -q '\"method\":\"GET\"' '$TMP/audit'"

# ---- auto-resume off: traffic to a paused sandbox gets 502, it stays paused ----
# the E2B SDK's body, then the session-controller's (both dialects' fields)
for body in '{"templateID":"base","timeout":600,"autoPause":true,"autoResume":{"enabled":false}}' \
    '{"templateID":"base","timeout":600,"autoPause":true,"autoResume":{"enabled":false},"lifecycle":{"onTimeout":"pause","autoResume":false}}'; do
  req POST /sandboxes "$body"
  check "no-resume create 201" is "$STATUS" 201
  check "create answer has the domain" jqt '.domain=="cubesim.local"'
  N=$(jq -r .sandboxID "$BODY_FILE")
  check "truth: autoResume false" is "$(truth "$N" .autoResume)" false
  req POST /sandboxes/$N/pause
  check "no-resume pause 204" is "$STATUS" 204
  advance 1
  check "no-resume paused" is "$(truth "$N" .state)" paused
  req POST /_sim/sandboxes/$N/traffic
  check "traffic, auto-resume off: 502" is_error 502
  check "502 names the sandbox" jqt ".message|test(\"$N\")"
  check "still paused after traffic" is "$(truth "$N" .state)" paused
  req GET /sandboxes/$N
  check "get: paused, autoResume false, domain" jqt '.state=="paused" and .lifecycle.autoResume==false and .domain=="cubesim.local"'
done
# auto-resume on (the controller's body): traffic resumes it
req POST /sandboxes '{"templateID":"base","timeout":600,"autoPause":true,"autoResume":{"enabled":true},"lifecycle":{"onTimeout":"pause","autoResume":true}}'
Y=$(jq -r .sandboxID "$BODY_FILE")
check "truth: autoResume true" is "$(truth "$Y" .autoResume)" true
req POST /sandboxes/$Y/pause
advance 1
check "resume-on paused" is "$(truth "$Y" .state)" paused
req POST /_sim/sandboxes/$Y/traffic
check "traffic, auto-resume on: 200" is "$STATUS" 200
check "traffic resumed it" jqt '.resumed==true and .state=="running"'
check "running after traffic" is "$(truth "$Y" .state)" running

check "SIGTERM exits 0" stop_sim
finish
