#!/bin/sh
# bench-cubesim.sh - cubesim throughput and footprint (needs wrk: apt-get
# install wrk). Prints GET/list and create rates with keep-alive clients,
# RSS at N live sandboxes, and the time of one 10,000-row list.
# Usage: sh hack/bench-cubesim.sh [SECONDS] [LIVE]
set -eu
cd "$(dirname "$0")/.."
secs=${1:-5}
live=${2:-100000}
command -v wrk >/dev/null || { echo "bench-cubesim: wrk not found (apt-get install wrk)" >&2; exit 2; }
[ -x bin/cubesim ] || make bin/cubesim >/dev/null
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
start() {
  bin/cubesim --listen 127.0.0.1:0 --dialect e2b "$@" > "$tmp/out" &
  pid=$!
  while ! grep -q listening "$tmp/out" 2>/dev/null; do sleep 0.05; done
  url=$(sed 's/.*listening on //' "$tmp/out")
}
stop() { kill "$pid"; wait "$pid" || true; pid=""; }
rate() { grep 'Requests/sec' "$tmp/wrk" | awk '{print $2}'; }

cat > "$tmp/create.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"templateID":"bench","timeout":3600,"metadata":{"lea.session_id":"s","lea.tenant_id":"t"}}'
wrk.headers["Content-Type"] = "application/json"
LUA

start
for i in $(seq 1 100); do
  curl -s -X POST -d "{\"templateID\":\"b\",\"timeout\":3600,\"metadata\":{\"lea.session_id\":\"s$i\"}}" "$url/sandboxes" >/dev/null
done
id=$(curl -s "$url/v2/sandboxes?limit=1" | jq -r '.[0].sandboxID')
wrk -t2 -c32 -d"${secs}s" "$url/sandboxes/$id" > "$tmp/wrk"; echo "GET /sandboxes/{id}: $(rate) req/s"
q=$(printf 'lea.session_id%%253Ds7' )
wrk -t2 -c32 -d"${secs}s" "$url/v2/sandboxes?metadata=$q&state=running" > "$tmp/wrk"; echo "GET /v2/sandboxes?metadata (100 sandboxes, 1 row): $(rate) req/s"
wrk -t2 -c32 -d"${secs}s" -s "$tmp/create.lua" "$url/sandboxes" > "$tmp/wrk"; echo "POST /sandboxes: $(rate) req/s"
stop

start --clock-speed 0
wrk -t2 -c32 -d60s -s "$tmp/create.lua" "$url/sandboxes" > /dev/null &
wp=$!
while :; do
  cnt=$(curl -s "$url/_sim/audit?since=$(( live - 1 ))" | head -c 1 | wc -c)
  [ "$cnt" -gt 0 ] && break
  sleep 0.5
done
kill $wp 2>/dev/null; wait $wp 2>/dev/null || true
total=$(curl -s "$url/_sim/sandboxes" | jq length)
rss=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status)
echo "live sandboxes: $total, RSS: $((rss / 1024)) MB (audit trail included)"
stop

start --max-sandboxes 10000
wrk -t2 -c16 -d30s -s "$tmp/create.lua" "$url/sandboxes" > /dev/null &
wp=$!
while [ "$(curl -s "$url/_sim/audit?since=9999" | head -c 1 | wc -c)" -eq 0 ]; do sleep 0.2; done
kill $wp; wait $wp 2>/dev/null || true
for i in 1 2 3; do curl -s -o /dev/null -w "GET /sandboxes, 10,000 rows, %{size_download} bytes: %{time_total}s\n" "$url/sandboxes"; done
n=$(curl -s "$url/sandboxes" | jq length)
echo "rows in that list: $n"
stop
