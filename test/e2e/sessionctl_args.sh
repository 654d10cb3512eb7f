#!/bin/sh
# sessionctl_args.sh - the resource arguments of get, describe, delete and
# wake: every form each command accepts (TYPE NAME..., TYPE/NAME...,
# the five sessions spellings, wake's bare NAME...) and the forms kubectl
# rejects, rejected the same way by all four: a TYPE mixed with TYPE/NAME,
# TYPE/NAME mixed with a bare NAME, "session/", "/a", "session/a/b", and
# a type that is not sessions. A rejected command exits 2 with one error
# text whatever the command, prints nothing on stdout and changes nothing.
# Prints "N passed, N failed"; exits 1 on any failure.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
BINDIR=${BINDIR:-$root/bin}
CTL="$BINDIR/sessionctl"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sessionctl-args.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export SESSION_STORE="sqlite:$tmp/s.db"
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# expect_rc WANT DESC CMD...: run CMD (stdout > $tmp/out, stderr > $tmp/err)
expect_rc() {
  want=$1; desc=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -eq "$want" ]; then ok; else
    bad "$desc: exit $rc, want $want"; sed 's/^/  | /' "$tmp/out" "$tmp/err"
  fi
}
has() {
  if grep -Eq -- "$3" "$1"; then ok; else
    bad "$2: no /$3/ in:"; sed 's/^/  | /' "$1"
  fi
}
same() {
  if [ "$2" = "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi
}
# names: the sessions in the store, sorted, on one line
names() { "$CTL" get sessions -o name 2>/dev/null | sed 's|.*/||' | sort | tr '\n' ' '; }
wakes() { "$CTL" get sessions -o jsonpath='{range .items[*]}{.spec.wake}{end}'; }

[ -x "$CTL" ] || { echo "no $CTL"; echo "0 passed, 1 failed"; exit 1; }

seed() {
  for n in "$@"; do
    printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s}\nspec: {template: t}\n---\n' "$n"
  done >"$tmp/seed.yaml"
  "$CTL" apply -f "$tmp/seed.yaml" >/dev/null 2>&1 || bad "seed $*"
}
seed a b c d e f g h

# --- usage errors: one text for all four commands ---
# rejected DESC PATTERN ARGS...: exit 2, PATTERN on stderr, the hint,
# nothing on stdout, and the store (names and wakes) unchanged
rejected() {
  desc=$1; pat=$2; shift 2
  before="$(names)|$(wakes)"
  expect_rc 2 "$desc" "$CTL" "$@"
  has "$tmp/err" "$desc: error text" "^error: $pat"
  has "$tmp/err" "$desc: hint" "Run 'sessionctl --help' for usage\."
  same "$desc: nothing on stdout" "$(cat "$tmp/out")" ""
  same "$desc: store unchanged" "$(names)|$(wakes)" "$before"
}
mixed='there is no need to specify a resource type as a separate argument when passing arguments in resource/name form'
single='arguments in resource/name form must have a single resource and name'
slashes='arguments in resource/name form may not have more than one slash'
notype='the server doesn.t have a resource type "pods" \(only sessions\)'
for c in get describe delete wake; do
  rejected "$c TYPE TYPE/NAME" "$mixed \(e\.g\. 'sessionctl $c session/NAME'" \
    "$c" sessions session/a
  rejected "$c TYPE/NAME NAME" "$mixed" "$c" session/a b
  rejected "$c NAME TYPE/NAME" "$mixed" "$c" a session/b
  rejected "$c TYPE/" "$single: \"session/\"" "$c" session/
  rejected "$c /NAME" "$single: \"/a\"" "$c" /a
  rejected "$c TYPE/NAME/X" "$slashes: \"session/a/b\"" "$c" session/a/b
  rejected "$c pods/NAME" "$notype" "$c" pods/a
done
for c in get describe delete; do
  rejected "$c pods NAME" "$notype" "$c" pods a
  rejected "$c NAME (no type)" 'the server doesn.t have a resource type "a"' "$c" a
done
rejected "get (nothing)" 'get: you must specify the type of resource' get
rejected "describe (nothing)" 'describe: you must specify the type of resource' describe
rejected "describe TYPE (no name)" 'describe: give a session name' describe session
rejected "delete (nothing)" 'delete: give session NAME\.\.\. or -f FILE' delete
rejected "delete TYPE (no name)" 'delete: resource\(s\) were provided, but no name was specified' delete sessions
rejected "delete -f with a TYPE" 'delete: give either -f or session NAMEs' delete sessions -f "$tmp/seed.yaml"
rejected "wake (nothing)" 'wake: give a session NAME' wake

# --- get: every accepted form ---
expect_rc 0 "get sessions" "$CTL" get sessions -o name
same "get sessions lists all" "$(wc -l <"$tmp/out" | tr -d ' ')" 8
for t in sessions session sess sessions.lea.io session.lea.io; do
  expect_rc 0 "get $t a" "$CTL" get "$t" a -o name
  same "get $t a: a" "$(cat "$tmp/out")" "session.lea.io/a"
  expect_rc 0 "get $t/a" "$CTL" get "$t/a" -o name
  same "get $t/a: a" "$(cat "$tmp/out")" "session.lea.io/a"
done
expect_rc 0 "get sess a b" "$CTL" get sess a b -o name
same "get sess a b: both" "$(tr '\n' ' ' <"$tmp/out")" "session.lea.io/a session.lea.io/b "
expect_rc 0 "get session/a sess/b" "$CTL" get session/a sess/b -o name
same "get session/a sess/b: both" "$(tr '\n' ' ' <"$tmp/out")" "session.lea.io/a session.lea.io/b "
expect_rc 1 "get session/nope" "$CTL" get session/nope
has "$tmp/err" "get session/nope: NotFound" 'NotFound.*"nope"'

# --- describe: every accepted form ---
for t in sessions session sess sessions.lea.io session.lea.io; do
  expect_rc 0 "describe $t a" "$CTL" describe "$t" a
  same "describe $t a: one" "$(grep -c '^Name:' "$tmp/out")" 1
  expect_rc 0 "describe $t/a" "$CTL" describe "$t/a"
  has "$tmp/out" "describe $t/a: a" '^Name: +a$'
done
expect_rc 0 "describe sess a b" "$CTL" describe sess a b
same "describe sess a b: two" "$(grep -Ec '^Name: +(a|b)$' "$tmp/out")" 2
expect_rc 0 "describe session/a sess/b" "$CTL" describe session/a sess/b
same "describe session/a sess/b: two" "$(grep -Ec '^Name: +(a|b)$' "$tmp/out")" 2
expect_rc 1 "describe session/nope" "$CTL" describe session/nope
has "$tmp/err" "describe session/nope: NotFound" 'NotFound.*"nope"'

# --- wake: every accepted form (--force, so each one writes) ---
# wake_ok DESC WANT_NAMES ARGS...: exit 0 and one "woken" line per name
wake_ok() {
  desc=$1; woken=$2; shift 2
  expect_rc 0 "$desc" "$CTL" wake --force "$@"
  same "$desc: woken" "$(sed -n 's|^session/\(.*\) woken .*|\1|p' "$tmp/out" | tr '\n' ' ')" "$woken"
}
wake_ok "wake NAME" "a " a
wake_ok "wake NAME NAME" "a b " a b
wake_ok "wake session NAME" "c " session c
wake_ok "wake sess NAME NAME" "c d " sess c d
wake_ok "wake session/NAME" "e " session/e
wake_ok "wake session/NAME session.lea.io/NAME" "e f " session/e session.lea.io/f
wake_ok "wake NAME that is not a type first" "g h " g h
same "wakes counted" "$(wakes)" "21212111"
expect_rc 1 "wake session (a NAME alone)" "$CTL" wake --force session
has "$tmp/err" "wake session: NotFound for the name session" 'NotFound.*"session"'

# --- delete: every accepted form ---
expect_rc 0 "delete session a" "$CTL" delete session a
has "$tmp/out" "delete session a: deleted" '^session "a" deleted$'
expect_rc 0 "delete sessions b c" "$CTL" delete sessions b c
same "delete sessions b c: both" "$(grep -c 'deleted$' "$tmp/out")" 2
expect_rc 0 "delete session/d" "$CTL" delete session/d
has "$tmp/out" "delete session/d: deleted" '^session "d" deleted$'
expect_rc 0 "delete session/e sess/f session.lea.io/g" \
  "$CTL" delete session/e sess/f session.lea.io/g
same "delete three slash forms" "$(grep -c 'deleted$' "$tmp/out")" 3
same "left after the deletes" "$(names)" "h "
expect_rc 1 "delete session/nope" "$CTL" delete session/nope
has "$tmp/err" "delete session/nope: NotFound" 'NotFound.*"nope"'

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
