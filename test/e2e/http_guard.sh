#!/bin/sh
# http_guard.sh - the controller's operator port (--metrics-addr) is no way
# in and no way to starve the loop (controller/ops/httpd.h):
#  1. GET and HEAD of /metrics answer; PUT and POST get 405 with
#     "Allow: GET, HEAD"; a request head over 8 KiB gets 431;
#  2. a 64 MiB POST streamed to /metrics (with a Content-Length, and
#     chunked) gets its 405 within seconds, and the controller's memory
#     (VmRSS, VmHWM) grows by less than 20 MB: the body is never read;
#  3. the soft descriptor limit is raised to the hard one at start (and
#     logged); the connection cap is --metrics-max-connections, at most a
#     quarter of the limit (ulimit -n 100: 25).
# The flood of idle connections past the descriptor limit and accept()
# failing with EMFILE are test/unit/test_httpd.c's (a child process with a
# lowered RLIMIT_NOFILE, its CPU time and log lines counted).
. "$(dirname "$0")/lib/common.sh"

start_cubesim
# start NAME ULIMIT_ARGS [ARGS...]: a controller under `ulimit ULIMIT_ARGS`
start() {
  n=$1; u=$2; shift 2
  (ulimit $u && exec "$BINDIR/session-controller" --store "sqlite:$T/$n.db" \
    --create-store --cube-url "$SIM" --metrics-addr 127.0.0.1:0 --resync 1s \
    --replica "$n" "$@") 2>"$T/$n.log" &
  CTL_PID=$!
  PIDS="$PIDS $CTL_PID"
}
kb() { sed -n "s/^$1:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$2/status"; }
field() { sed -n "s/.*msg=\"$1.* $2=\([0-9]*\).*/\1/p" "$3" | head -n 1; }

hard=$(ulimit -Hn)
start hg "-Sn 256"
HG=$CTL_PID
check "controller starts" wait_until 10 grep -q 'msg="serving /metrics' "$T/hg.log"
P=$(metrics_port hg)
U="http://127.0.0.1:$P"
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@"; }

# ---- 1. methods, the head's size
check "GET /metrics: 200" test "$(code "$U/metrics")" = 200
curl -s "$U/metrics" >"$T/metrics.txt"
check "GET /metrics: the controller's families" grep -q '^session_controller_build_info' "$T/metrics.txt"
check "GET /metrics: the http families" grep -q '^# TYPE session_controller_http_connections gauge' "$T/metrics.txt"
curl -s -I --max-time 10 "$U/metrics" | tr -d '\r' >"$T/head.txt"
check "HEAD /metrics: 200" grep -q '^HTTP/1.1 200 OK$' "$T/head.txt"
check "HEAD /metrics: a Content-Length" grep -Eq '^Content-Length: [1-9][0-9]*$' "$T/head.txt"
check "PUT /metrics: 405" test "$(code -X PUT -d x "$U/metrics")" = 405
curl -s -i -X PUT -d x --max-time 10 "$U/metrics" | tr -d '\r' >"$T/put.txt"
check "PUT /metrics: Allow: GET, HEAD" grep -q '^Allow: GET, HEAD$' "$T/put.txt"
check "POST /healthz: 405" test "$(code -X POST -d x "$U/healthz")" = 405
pad=$(head -c 9000 /dev/zero | tr '\0' a)
check "a 9000-byte header: 431" test "$(code -H "X-Pad: $pad" "$U/healthz")" = 431
check "GET /healthz: 200 after all that" test "$(code "$U/healthz")" = 200

# ---- 2. a 64 MiB POST
rss0=$(kb VmRSS "$HG"); hwm0=$(kb VmHWM "$HG")
out=$(head -c 67108864 /dev/zero | curl -s -o /dev/null -w '%{http_code} %{time_total}' \
  --max-time 30 -H 'Expect:' -X POST --data-binary @- "$U/metrics")
c=${out%% *}; t=${out#* }
check "64 MiB POST (Content-Length): 405 ($out)" test "$c" = 405
check "64 MiB POST (Content-Length): answered within 5 s ($t s)" \
  awk -v t="$t" 'BEGIN { exit !(t < 5) }'
out=$(head -c 67108864 /dev/zero | curl -s -o /dev/null -w '%{http_code} %{time_total}' \
  --max-time 30 -H 'Expect:' -X POST -T - "$U/metrics")
c=${out%% *}; t=${out#* }
check "64 MiB POST (chunked): 405 ($out)" test "$c" = 405
check "64 MiB POST (chunked): answered within 5 s ($t s)" \
  awk -v t="$t" 'BEGIN { exit !(t < 5) }'
sleep 1.5 # past the linger
rss1=$(kb VmRSS "$HG"); hwm1=$(kb VmHWM "$HG")
check "64 MiB POSTs: VmRSS grew by less than 20 MB ($rss0 -> $rss1 kB)" \
  test -n "$rss0" -a -n "$rss1" -a $((${rss1:-0} - ${rss0:-0})) -lt 20480
check "64 MiB POSTs: VmHWM grew by less than 20 MB ($hwm0 -> $hwm1 kB)" \
  test -n "$hwm0" -a -n "$hwm1" -a $((${hwm1:-0} - ${hwm0:-0})) -lt 20480
check "still serving: /healthz 200" test "$(code "$U/healthz")" = 200
check "the controller runs on" kill -0 "$HG"

# ---- 3. descriptor limit and connection cap
if [ "$hard" = unlimited ] || [ "$hard" -gt 256 ]; then
  check "soft limit 256 raised to the hard one ($hard)" \
    grep -q "msg=\"descriptor limit (RLIMIT_NOFILE)\".* limit=$hard was=256" "$T/hg.log"
  lim=$(sed -n 's/^Max open files *\([0-9]*\) .*/\1/p' "/proc/$HG/limits")
  check "/proc/PID/limits: soft limit $lim = $hard" test "$lim" = "$hard"
  want=64; [ "$hard" != unlimited ] && [ $((hard / 4)) -lt 64 ] && want=$((hard / 4))
  check "cap: max_connections=$want" test "$(field serving max_connections "$T/hg.log")" = "$want"
else
  echo "skip the soft-limit raise: the hard limit is $hard"
fi
start lim100 "-n 100"
check "ulimit -n 100: starts" wait_until 10 grep -q 'msg="serving /metrics' "$T/lim100.log"
check "ulimit -n 100: limit 100 logged" grep -q 'msg="descriptor limit (RLIMIT_NOFILE)".* limit=100 was=100' "$T/lim100.log"
check "ulimit -n 100: max_connections=25 (a quarter)" \
  test "$(field serving max_connections "$T/lim100.log")" = 25
start flag "-n 1024" --metrics-max-connections 8
check "--metrics-max-connections 8: max_connections=8" \
  wait_eq 10 8 field serving max_connections "$T/flag.log"
check "--help: --metrics-max-connections N (default 64)" sh -c \
  "'$BINDIR/session-controller' --help | grep -- '--metrics-max-connections N' | grep -q 'default 64'"
check "--metrics-max-connections 0: refused" sh -c \
  "! '$BINDIR/session-controller' --metrics-max-connections 0 --once --store sqlite:$T/x.db 2>/dev/null"
finish
