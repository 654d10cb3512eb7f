# cubesim_lib.sh - helpers for the cubesim end-to-end scripts (sourced, not
# run). start_sim ARGS... starts bin/cubesim on a free port and sets URL;
# req METHOD PATH [BODY] [curl args...] sets STATUS and leaves the body in
# $BODY_FILE and the headers in $HDR_FILE; check NAME CMD... counts results.
BIN=${BINDIR:-$(pwd)/bin}/cubesim
TMP=$(mktemp -d)
PASS=0
FAIL=0
SIM_PID=""
BODY_FILE=$TMP/body
HDR_FILE=$TMP/hdr

cleanup() {
  if [ -n "$SIM_PID" ]; then kill "$SIM_PID" 2>/dev/null; wait "$SIM_PID" 2>/dev/null; fi
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

check() {
  name=$1; shift
  if "$@" >/dev/null 2>&1; then PASS=$((PASS + 1)); else FAIL=$((FAIL + 1)); echo "FAIL: $name" >&2; fi
}

start_sim() {
  : > "$TMP/out"
  "$BIN" --listen 127.0.0.1:0 "$@" > "$TMP/out" 2> "$TMP/err" &
  SIM_PID=$!
  i=0
  while [ $i -lt 100 ]; do
    line=$(head -n 1 "$TMP/out")
    case "$line" in "cubesim listening on http://"*) break ;; esac
    sleep 0.05; i=$((i + 1))
  done
  URL=${line#cubesim listening on }
  case "$URL" in http://127.0.0.1:[0-9]*) ;; *) echo "cubesim did not start: $(cat "$TMP/err")" >&2; exit 1 ;; esac
}

stop_sim() {
  kill -TERM "$SIM_PID"
  wait "$SIM_PID"
  rc=$?
  SIM_PID=""
  return $rc
}

req() {
  m=$1; p=$2; shift 2
  if [ $# -gt 0 ]; then
    b=$1; shift
    STATUS=$(curl -s -o "$BODY_FILE" -D "$HDR_FILE" -w '%{http_code}' -X "$m" \
      -H 'Content-Type: application/json' --data-binary "$b" "$@" "$URL$p")
  else
    STATUS=$(curl -s -o "$BODY_FILE" -D "$HDR_FILE" -w '%{http_code}' -X "$m" "$URL$p")
  fi
}

# helpers for check
is() { [ "$1" = "$2" ]; }
jqt() { jq -e "$1" "$BODY_FILE"; }
hdr() { grep -i "^$1:" "$HDR_FILE" | head -n 1 | sed 's/^[^:]*: *//' | tr -d '\r'; }
has_hdr() { grep -qi "^$1:" "$HDR_FILE"; }
is_error() { is "$STATUS" "$1" && jq -e ".code == $1 and (.message | type == \"string\" and length > 0)" "$BODY_FILE" && hdr Content-Type | grep -q application/json; }
advance() { curl -s -X POST -d "{\"advance\":$1}" "$URL/_sim/clock" >/dev/null; }
truth() { curl -s "$URL/_sim/sandboxes" | jq -r ".[] | select(.sandboxID == \"$1\") | $2"; }
create() { curl -s -X POST -H 'Content-Type: application/json' -d "$1" "$URL${2:-/sandboxes}" | jq -r .sandboxID; }

finish() {
  echo "$PASS passed, $FAIL failed"
  [ "$FAIL" -eq 0 ]
}
