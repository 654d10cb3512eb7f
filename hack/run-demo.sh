#!/bin/sh
# run-demo.sh - the local demo behind `make run` (which builds bin/ first).
# For now: apply the example sessions (deploy/examples/) to a fresh SQLite
# store and list them the way an operator would.
#
# Environment: STORE_DIR (default .run) holds the store, sessions.db; it is
# created if missing and the database in it is started afresh. BINDIR
# (default bin) holds the binaries.
set -eu
cd "$(dirname "$0")/.."
bindir=${BINDIR:-bin}
dir=${STORE_DIR:-.run}
ctl="$bindir/sessionctl"
if [ ! -x "$ctl" ]; then
  echo "run-demo: $ctl is missing; run 'make' (or 'make run') first" >&2
  exit 1
fi
mkdir -p "$dir"
rm -f "$dir/sessions.db" "$dir/sessions.db-wal" "$dir/sessions.db-shm"
store="sqlite:$dir/sessions.db"
echo "+ sessionctl --store $store apply -f deploy/examples/"
"$ctl" --store "$store" apply -f deploy/examples/
echo
echo "+ sessionctl --store $store get sessions -A"
"$ctl" --store "$store" get sessions -A
