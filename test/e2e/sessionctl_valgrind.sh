#!/bin/sh
# test-slow
# sessionctl_valgrind.sh - sessionctl's commands under valgrind
# (--leak-check=full --error-exitcode=9): no leaks, no memory errors, on
# success and failure paths, including a watch ended by SIGTERM. Skipped
# (with a message, counted as passed: nothing to run) when valgrind is
# missing. Prints "N passed, N failed"; exits 1 on any failure.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
BINDIR=${BINDIR:-$root/bin}
CTL="$BINDIR/sessionctl"
if ! command -v valgrind >/dev/null 2>&1; then
  echo "sessionctl_valgrind: valgrind not installed; skipped"
  echo "0 passed, 0 failed"
  exit 0
fi
# ASan binaries cannot run under valgrind
if nm "$CTL" 2>/dev/null | grep -q __asan_init; then
  echo "sessionctl_valgrind: $CTL is built with ASan; skipped"
  echo "0 passed, 0 failed"
  exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sessionctl-e2e.XXXXXX")
# valgrind 3.19 cannot read the DWARF 5 that clang 14 writes: probe first
if ! valgrind -q --error-exitcode=9 "$CTL" --version >/dev/null 2>"$tmp/probe" ||
   grep -q "debuginfo reader" "$tmp/probe"; then
  echo "sessionctl_valgrind: valgrind cannot run $CTL here (build with gcc,"
  echo "  or CFLAGS=-gdwarf-4); skipped:"; head -n 3 "$tmp/probe"
  rm -rf "$tmp"
  echo "0 passed, 0 failed"
  exit 0
fi
wpid=""
trap '[ -n "$wpid" ] && kill "$wpid" 2>/dev/null; rm -rf "$tmp"' EXIT
S="sqlite:$tmp/s.db"
pass=0
fail=0
VG="valgrind -q --leak-check=full --error-exitcode=9"

# vg WANT_RC DESC ARGS...: sessionctl ARGS under valgrind
vg() {
  want=$1; desc=$2; shift 2
  $VG --log-file="$tmp/vg.log" "$CTL" --store "$S" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -eq "$want" ] && [ ! -s "$tmp/vg.log" ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: $desc: exit $rc (want $want; 9 = valgrind errors)"
    sed 's/^/  | /' "$tmp/vg.log" "$tmp/err" | head -n 60
  fi
}

mkdir "$tmp/bad"
printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: b}\nspec: {idleTimeout: nope}\n' \
  >"$tmp/bad/bad.yaml"

vg 0 "apply" apply -f "$root/deploy/examples/"
vg 0 "apply unchanged" apply -f "$root/deploy/examples/"
vg 1 "apply invalid" apply -f "$tmp/bad"
vg 0 "get -A" get sessions -A
vg 0 "get -o wide" get sessions -n tenant-a -o wide
vg 0 "get -o json" get sessions -A -o json
vg 0 "get -o yaml" get sessions -A -o yaml
vg 0 "get NAME -o yaml" get session chat-7f3a -n tenant-a -o yaml
vg 0 "get -o name" get sessions -A -o name
vg 0 "get -o jsonpath range" get sessions -A \
  -o 'jsonpath={range .items[*]}{.metadata.name}{"\t"}{.spec.state}{"\n"}{end}'
vg 0 "get -o jsonpath filter" get session chat-7f3a -n tenant-a \
  -o 'jsonpath={.spec.envVars[*]}{.metadata.labels['"'course'"']}{.x[?(@.a>=1)]}'
vg 2 "get bad jsonpath" get sessions -o 'jsonpath={range .items[?(@.a=='
vg 2 "get bad jsonpath, then a bad flag" get sessions -o 'jsonpath={.a}' --bogus
"$CTL" --store "$S" get sessions -A -o json >"$tmp/all.json"
vg 0 "apply its own JSON" apply -f "$tmp/all.json"
vg 1 "get missing" get sessions nope
vg 0 "describe" describe session chat-7f3a -n tenant-a
vg 0 "wake" wake chat-91bd -n tenant-a
vg 0 "wake --force" wake --force chat-91bd -n tenant-a
vg 0 "delete" delete session scratch -n tenant-b
vg 1 "delete missing" delete session scratch -n tenant-b
vg 0 "validate" validate -f "$root/deploy/examples/"
vg 1 "validate invalid" validate -f "$tmp/bad"
vg 2 "usage error" get sessions --bogus
vg 0 "help" get --help
# connect and wait with no controller to answer: the annotation write, the
# watch, the timeout
vg 3 "connect: no answer, timeout" connect chat-7f3a -n tenant-a --timeout 1s
vg 1 "connect: absent, no -f" connect nope -n tenant-a --timeout 1s
vg 3 "wait: condition, timeout" wait session/chat-7f3a -n tenant-a --for=condition=Ready --timeout=1s
vg 0 "wait: delete of an absent one" wait nope -n tenant-a --for=delete --timeout=1s
vg 2 "wait: bad --for" wait chat-7f3a -n tenant-a --for=bogus

# a watch that sees a change and is ended by SIGTERM
$VG --log-file="$tmp/vgw.log" "$CTL" --store "$S" get sessions -A -w \
  --output-watch-events >"$tmp/w" 2>"$tmp/w.err" &
wpid=$!
i=0
while ! grep -q chat-7f3a "$tmp/w" 2>/dev/null && [ "$i" -lt 100 ]; do
  sleep 0.1; i=$((i + 1)); done
"$CTL" --store "$S" wake --force chat-7f3a -n tenant-a >/dev/null
i=0
while ! grep -q '^MODIFIED' "$tmp/w" 2>/dev/null && [ "$i" -lt 50 ]; do
  sleep 0.1; i=$((i + 1)); done
kill "$wpid"
wait "$wpid"
rc=$?
wpid=""
if [ "$rc" -eq 0 ] && [ ! -s "$tmp/vgw.log" ] && grep -q '^MODIFIED' "$tmp/w"
then pass=$((pass + 1))
else
  fail=$((fail + 1))
  echo "FAIL: watch under valgrind: exit $rc"
  sed 's/^/  | /' "$tmp/vgw.log" "$tmp/w" "$tmp/w.err" | head -n 60
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
