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
# Each server writes a fresh file: reusing one raced (the previous server's
# "listening" line was read before the new server truncated it, so the
# benchmark talked to a dead port and waited for ever).
n_srv=0
start() {
  n_srv=$((n_srv + 1))
  out="$tmp/out.$n_srv"
  bin/cubesim --listen 127.0.0.1:0 --dialect e2b "$@" > "$out" &
  pid=$!
  while ! grep -q listening "$out" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || { echo "bench-cubesim: cubesim did not start" >&2; exit 1; }
    sleep 0.05
  done
  url=$(sed 's/.*listening on //' "$out")
}
stop() { kill "$pid"; wait "$pid" || true; pid=""; }
# a table row: measure, target, result
row() { printf '| %s | %s | %s |\n' "$1" "$2" "$3" >> "$tmp/table"; }
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
row 'GET /sandboxes/{id}' '20,000/s' "$(rate) req/s"
q=$(printf 'lea.session_id%%253Ds7' )
wrk -t2 -c32 -d"${secs}s" "$url/v2/sandboxes?metadata=$q&state=running" > "$tmp/wrk"; echo "GET /v2/sandboxes?metadata (100 sandboxes, 1 row): $(rate) req/s"
row 'GET /v2/sandboxes?metadata=..&state=running (100 sandboxes)' '20,000/s' "$(rate) req/s"
wrk -t2 -c32 -d"${secs}s" -s "$tmp/create.lua" "$url/sandboxes" > "$tmp/wrk"; echo "POST /sandboxes: $(rate) req/s"
row 'POST /sandboxes (with audit line)' '5,000/s' "$(rate) req/s"
stop

# Fill up to LIVE sandboxes in short wrk rounds (one long wrk in the
# background used to die with its connections on a loaded machine and leave
# the wait below spinning): each round is checked, the server too.
start --clock-speed 0
have() { [ -n "$(curl -s "$url/_sim/audit?since=$(( $1 - 1 ))" | head -c 1)" ]; }
rounds=0
until have "$live"; do
  kill -0 "$pid" 2>/dev/null || { echo "bench-cubesim: cubesim died while filling" >&2; exit 1; }
  rounds=$((rounds + 1))
  [ "$rounds" -le 60 ] || { echo "bench-cubesim: $live sandboxes not reached after 60 rounds" >&2; exit 1; }
  wrk -t2 -c32 -d2s -s "$tmp/create.lua" "$url/sandboxes" > "$tmp/wrk" 2>&1 ||
    echo "bench-cubesim: wrk round $rounds failed: $(tail -1 "$tmp/wrk")" >&2
done
total=$(curl -s "$url/_sim/sandboxes" | jq length)
rss=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status)
echo "live sandboxes: $total, RSS: $((rss / 1024)) MB (audit trail included)"
row "RSS at $total live sandboxes (audit trail included)" '< 200 MB' "$((rss / 1024)) MB"
stop

start --max-sandboxes 10000
rounds=0
until have 10000; do
  rounds=$((rounds + 1))
  [ "$rounds" -le 30 ] || { echo "bench-cubesim: 10000 sandboxes not reached" >&2; exit 1; }
  wrk -t2 -c16 -d1s -s "$tmp/create.lua" "$url/sandboxes" > /dev/null 2>&1 || true
done
times=""
for i in 1 2 3; do
  t=$(curl -s -o "$tmp/list" -w "%{time_total}" "$url/sandboxes")
  echo "GET /sandboxes, 10,000 rows, $(wc -c < "$tmp/list") bytes: ${t}s"
  times="$times $(awk -v t="$t" 'BEGIN { printf "%d", t * 1000 + 0.5 }')"
done
n=$(jq length "$tmp/list")
echo "rows in that list: $n"
row "GET /sandboxes, $n rows ($(( $(wc -c < "$tmp/list") / 1024 )) KiB), curl total" '< 50 ms' "$(echo $times | tr ' ' '/') ms"
stop

echo
echo "| measure | target | result |"
echo "|---|---|---|"
cat "$tmp/table"
