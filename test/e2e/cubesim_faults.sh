#!/bin/sh
# cubesim_faults.sh - seeded faults over HTTP: the same seed gives the same
# faults; each fault kind is observed; bad specs are refused clearly.
cd "$(dirname "$0")/../.." || exit 1
. test/e2e/lib/cubesim_lib.sh

seq_of() {
  start_sim --dialect e2b --seed "$1" --faults 'get:error=0.3@500,list:error=0.2@429+retry=3'
  create '{"templateID":"t","timeout":600}' > "$TMP/id"
  id=$(cat "$TMP/id")
  i=0; s=""
  while [ $i -lt 40 ]; do
    s="$s$(curl -s -o /dev/null -w '%{http_code}' "$URL/sandboxes/$id")"
    s="$s$(curl -s -o /dev/null -w '%{http_code}' "$URL/v2/sandboxes")"
    i=$((i + 1))
  done
  stop_sim
  echo "$s"
}
a=$(seq_of 11); b=$(seq_of 11); c=$(seq_of 12)
check "same seed same faults" is "$a" "$b"
check "other seed other faults" sh -c "[ '$a' != '$c' ]"
check "errors seen" sh -c "echo '$a' | grep -q 500"
check "429 seen" sh -c "echo '$a' | grep -q 429"

start_sim --dialect e2b --seed 5 --faults 'pause:error=1@503,list:truncate=0.5,get:latency=300ms,create:capacity=2,pause:droplabels=1' --pause-duration 0
A=$(create '{"templateID":"t","metadata":{"k":"v"}}')
B=$(create '{"templateID":"t","metadata":{"k":"v"}}')
req POST /sandboxes '{"templateID":"t"}'
check "capacity e2b 429" is_error 429
req POST /sandboxes/$A/pause
check "injected 503" is_error 503
check "503 retry-after" is "$(hdr Retry-After)" 1
check "error fault audited" sh -c "curl -s '$URL/_sim/audit' | jq -s -e 'map(select(.fault==\"error\" and .status==503)) | length==1'"
t0=$(date +%s%N); req GET /sandboxes/$A; t1=$(date +%s%N)
check "latency >= 300ms" sh -c "[ \$(( ($t1 - $t0) / 1000000 )) -ge 290 ]"
i=0; short=0
while [ $i -lt 10 ]; do
  n=$(curl -s "$URL/v2/sandboxes" | jq length)
  [ "$n" -lt 2 ] && short=$((short + 1))
  i=$((i + 1))
done
check "truncation seen" sh -c "[ $short -ge 1 ]"
req POST /_sim/faults '{"spec":"pause:droplabels=1"}'
check "set faults" is "$STATUS" 200
req POST /sandboxes/$B/pause
check "pause ok" is "$STATUS" 204
check "labels dropped" is "$(truth $B '.metadata | length')" 0
req POST /_sim/faults 'list:eror=1@500'
check "bad spec 400" is_error 400
check "bad spec says why" jqt '.message|test("unknown effect .eror.")'
req POST /_sim/faults 'create:reset=1'
STATUS=$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{"templateID":"t"}' "$URL/sandboxes"); rc=$?
check "reset cuts reply" sh -c "[ $rc -ne 0 ]"
req POST /_sim/faults ''
check "faults cleared" jqt '.rules==0'
check "SIGTERM exits 0" stop_sim

"$BIN" --listen 127.0.0.1:0 --faults 'list:error=2@500' > "$TMP/o" 2> "$TMP/e"; rc=$?
check "bad --faults exits 2" is "$rc" 2
check "bad --faults message" grep -q 'not a number in \[0,1\]' "$TMP/e"
"$BIN" --dialect e3b > "$TMP/o" 2> "$TMP/e"; rc=$?
check "bad --dialect" sh -c "[ $rc -eq 2 ] && grep -q 'want cube or e2b' '$TMP/e'"
finish
