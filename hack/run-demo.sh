#!/bin/sh
# run-demo.sh - the README's main job (`make run`): cubesim (cube dialect,
# virtual clock x120 so a 15-minute idle timeout passes in 7.5 s), a fresh
# SQLite store with deploy/examples/ applied, the controller, and
# `sessionctl get sessions -A -w` in the foreground. Ctrl-C stops every
# process this script started (by PID).
#
# Environment: BINDIR (default ./bin), STORE_DIR (default ./.run),
# CLOCK_SPEED (default 120), RESYNC (default 2s).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${BINDIR:-$top/bin}
dir=${STORE_DIR:-$top/.run}
speed=${CLOCK_SPEED:-120}
resync=${RESYNC:-2s}
mkdir -p "$dir"
rm -f "$dir/sessions.db" "$dir/sessions.db-wal" "$dir/sessions.db-shm" \
  "$dir/cubesim.out"
store="sqlite:$dir/sessions.db"
sim_pid=""
ctl_pid=""

stop() {
  trap - INT TERM EXIT
  [ -n "$ctl_pid" ] && kill "$ctl_pid" 2>/dev/null
  [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null
  [ -n "$ctl_pid" ] && wait "$ctl_pid" 2>/dev/null
  [ -n "$sim_pid" ] && wait "$sim_pid" 2>/dev/null
  echo
  echo "demo stopped; logs in $dir/"
  exit 0
}
trap stop INT TERM EXIT

"$bin/cubesim" --listen 127.0.0.1:0 --dialect cube --clock-speed "$speed" \
  --audit-log "$dir/cubesim-audit.jsonl" >"$dir/cubesim.out" 2>"$dir/cubesim.log" &
sim_pid=$!
url=""
i=0
while [ -z "$url" ] && [ $i -lt 100 ]; do
  url=$(sed -n 's/^cubesim listening on //p' "$dir/cubesim.out" 2>/dev/null)
  [ -n "$url" ] || { sleep 0.05; i=$((i + 1)); }
done
if [ -z "$url" ]; then
  echo "run-demo: cubesim did not start; see $dir/cubesim.log" >&2
  exit 1
fi

"$bin/sessionctl" --store "$store" apply -f "$top/deploy/examples/" || exit 1

"$bin/session-controller" --store "$store" --cube-url "$url" \
  --resync "$resync" --metrics-addr 127.0.0.1:0 \
  --policy "$top/deploy/tenant-policy.yaml" \
  --audit-log "$dir/audit.jsonl" 2>"$dir/controller.log" &
ctl_pid=$!

echo "cubesim at $url (clock x$speed); controller log: $dir/controller.log"
echo "watching sessions (Ctrl-C to stop):"
"$bin/sessionctl" --store "$store" get sessions -A -w -o wide
