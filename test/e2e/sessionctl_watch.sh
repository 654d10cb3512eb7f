#!/bin/sh
# sessionctl_watch.sh - `sessionctl get sessions -w` end to end: a change
# written by another process shows up within a second; DELETED rows;
# namespace filtering; relist after the store's history expired under a
# stopped watcher; SIGTERM ends it with 0; a closed pipe (| head) ends it.
# Prints "N passed, N failed"; exits 1 on any failure.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
BINDIR=${BINDIR:-$root/bin}
CTL="$BINDIR/sessionctl"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sessionctl-e2e.XXXXXX")
pids=""
cleanup() {
  for p in $pids; do kill "$p" 2>/dev/null; done
  for p in $pids; do kill -CONT "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
S="sqlite:$tmp/s.db"
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# wait_for FILE PATTERN TENTHS: poll until grep -E matches; prints the
# tenths of a second it took; non-zero when it never did
wait_for() {
  i=0
  while [ "$i" -le "$3" ]; do
    if grep -Eq -- "$2" "$1" 2>/dev/null; then echo "$i"; return 0; fi
    sleep 0.1
    i=$((i + 1))
  done
  echo "$i"
  return 1
}
# expect FILE DESC PATTERN TENTHS [MAX_TENTHS]: the pattern appears in FILE
# within TENTHS (polled); when MAX_TENTHS is given it must have taken
# at most that long
expect() {
  if t=$(wait_for "$1" "$3" "$4"); then
    if [ -n "${5:-}" ] && [ "$t" -gt "$5" ]; then
      bad "$2: took ${t}00 ms (limit ${5}00 ms)"
    else ok; fi
  else
    bad "$2: no /$3/ after ${4}00 ms in:"; sed 's/^/  | /' "$1"
  fi
}
alive() { kill -0 "$1" 2>/dev/null; }
# stop PID: SIGTERM, then its exit status in $rc (not in a subshell:
# only this shell can wait for it); 999 if still alive after ~2 s
stop() {
  kill "$1" 2>/dev/null
  i=0
  while [ "$i" -lt 20 ] && ! [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" = Z ] &&
        alive "$1"; do sleep 0.1; i=$((i + 1)); done
  if [ "$i" -ge 20 ]; then kill -9 "$1" 2>/dev/null; wait "$1"; rc=999; return; fi
  wait "$1"
  rc=$?
}

[ -x "$CTL" ] || { echo "no $CTL"; echo "0 passed, 1 failed"; exit 1; }
"$CTL" --store "$S" apply -f "$root/deploy/examples/" >/dev/null ||
  bad "seed apply"

# --- another process's write shows up within a second ---
"$CTL" --store "$S" get sessions -A -w >"$tmp/w1" 2>"$tmp/w1.err" &
w1=$!
pids="$pids $w1"
expect "$tmp/w1" "watch prints the list" '^tenant-b +scratch ' 30
if [ "$(grep -c '^NAMESPACE ' "$tmp/w1")" = 1 ]; then ok; else
  bad "one header"; fi
"$CTL" --store "$S" wake --force chat-91bd -n tenant-a >/dev/null
# a new row for chat-91bd (the list had one): two rows, polled up to 2 s
i=0
while [ "$(grep -c 'chat-91bd' "$tmp/w1")" -lt 2 ] && [ "$i" -lt 20 ]; do
  sleep 0.1; i=$((i + 1)); done
if [ "$(grep -c 'chat-91bd' "$tmp/w1")" -ge 2 ]; then
  if [ "$i" -le 10 ]; then ok; else bad "change took ${i}00 ms (> 1 s)"; fi
else bad "the wake did not show up in the watch"; sed 's/^/  | /' "$tmp/w1"
fi

# a new object, then a delete, from other processes
cat >"$tmp/new.yaml" <<'EOF'
apiVersion: lea.io/v1alpha1
kind: Session
metadata:
  name: late-comer
  namespace: tenant-c
spec:
  template: shell
EOF
"$CTL" --store "$S" apply -f "$tmp/new.yaml" >/dev/null
expect "$tmp/w1" "new object row" '^tenant-c +late-comer +tenant-c +Active' 20 10
# rows stay aligned with the header
h=$(head -n 1 "$tmp/w1" | awk '{print index($0, "STATE")}')
r=$(grep late-comer "$tmp/w1" | awk '{print index($0, "Active")}')
if [ "$h" = "$r" ]; then ok; else bad "watch rows aligned ($r vs $h)"; fi
stop "$w1"
if [ "$rc" = 0 ]; then ok; else bad "SIGTERM exit status $rc"; fi
if [ -s "$tmp/w1.err" ]; then bad "watch stderr:"; sed 's/^/  | /' "$tmp/w1.err"
else ok; fi

# --- events column, DELETED, namespace filter ---
"$CTL" --store "$S" get sessions -n tenant-a -w --output-watch-events \
  >"$tmp/w2" 2>"$tmp/w2.err" &
w2=$!
pids="$pids $w2"
expect "$tmp/w2" "events header" '^EVENT +NAME +TENANT' 30
expect "$tmp/w2" "initial rows are ADDED" '^ADDED +chat-7f3a ' 10
"$CTL" --store "$S" delete session notebook-1 -n tenant-b >/dev/null
"$CTL" --store "$S" delete session agent-run-42 -n tenant-a >/dev/null
expect "$tmp/w2" "DELETED row" '^DELETED +agent-run-42 ' 20 10
if grep -q notebook-1 "$tmp/w2"; then bad "other namespace shown"; else ok; fi
stop "$w2"
if [ "$rc" = 0 ]; then ok; else bad "SIGTERM exit status $rc"; fi

# --- JSON events ---
"$CTL" --store "$S" get sessions -n tenant-c -w -o json --output-watch-events \
  >"$tmp/w3" 2>"$tmp/w3.err" &
w3=$!
pids="$pids $w3"
expect "$tmp/w3" "json event type" '"type":"ADDED"' 30
"$CTL" --store "$S" wake --force late-comer -n tenant-c >/dev/null
expect "$tmp/w3" "json MODIFIED event" '"type":"MODIFIED"' 20 10
stop "$w3"
if [ "$rc" = 0 ]; then ok; else bad "json watch exit status $rc"; fi
if jq -s 'map(.type) | join(",")' "$tmp/w3" 2>/dev/null |
   grep -q '"ADDED,MODIFIED"'; then ok
else bad "json watch output is not the two events:"; sed 's/^/  | /' "$tmp/w3"; fi

# --- relist after the history expired under a stopped watcher ---
"$CTL" --store "$S" get sessions -A -w --output-watch-events \
  >"$tmp/w4" 2>"$tmp/w4.err" &
w4=$!
pids="$pids $w4"
expect "$tmp/w4" "expiry watch started" '^ADDED +tenant-c +late-comer ' 30
kill -STOP "$w4"
# a writer that keeps only 2 revisions of history
SH="$S?history=2"
for k in 1 2 3 4; do "$CTL" --store "$SH" wake --force chat-7f3a -n tenant-a >/dev/null; done
"$CTL" --store "$SH" delete session late-comer -n tenant-c >/dev/null
kill -CONT "$w4"
expect "$tmp/w4" "relisted: chat-7f3a changed" '^MODIFIED +tenant-a +chat-7f3a ' 20
expect "$tmp/w4" "relisted: late-comer gone" '^DELETED +tenant-c +late-comer ' 10
if alive "$w4"; then ok; else bad "watch died on expiry"; fi
if [ "$(grep -c 'MODIFIED.*chat-7f3a' "$tmp/w4")" = 1 ]; then ok; else
  bad "one MODIFIED row per changed object after a relist"; fi
# and the new watch works
"$CTL" --store "$S" wake --force chat-91bd -n tenant-a >/dev/null
expect "$tmp/w4" "watch goes on after relist" '^MODIFIED +tenant-a +chat-91bd ' 20 10
stop "$w4"
if [ "$rc" = 0 ]; then ok; else bad "exit status after relist $rc"; fi

# --- a closed pipe ends the watch (| head must not hang) ---
( "$CTL" --store "$S" get sessions -A -w | head -n 2 >"$tmp/head" ) &
hp=$!
pids="$pids $hp"
i=0
while alive "$hp" && [ "$i" -lt 30 ]; do sleep 0.1; i=$((i + 1)); done
if alive "$hp"; then bad "get -w | head -n 2 still running after 3 s"
else ok; fi
if [ "$(wc -l <"$tmp/head" | tr -d ' ')" = 2 ]; then ok; else
  bad "head got $(wc -l <"$tmp/head") lines"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
