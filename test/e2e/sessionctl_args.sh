#!/bin/sh
# sessionctl_args.sh - the resource arguments of get, describe, delete and
# wake: every form each command accepts (TYPE NAME..., TYPE/NAME...,
# the five sessions spellings, wake's bare NAME...) and the forms kubectl
# rejects, rejected the same way by all four: a TYPE mixed with TYPE/NAME,
# TYPE/NAME mixed with a bare NAME, "session/", "/a", "session/a/b", and
# a type that is not sessions. A rejected command exits 2 with one error
# text whatever the command, prints nothing on stdout and changes nothing.
# Prints "N passed, N failed"; exits 1 on any failure.
. "$(dirname "$0")/lib/common.sh"

[ -x "$BINDIR/sessionctl" ] || { fail "no $BINDIR/sessionctl"; finish; exit 1; }
# run CMD...: stdout in $T/out, stderr in $T/err, status in $rc
run() { "$@" >"$T/out" 2>"$T/err"; rc=$?; }
# status WANT DESC ARGS...: sessionctl ARGS exits WANT (else its output)
status() {
  want=$1; desc=$2; shift 2
  run ctl "$@"
  if [ "$rc" = "$want" ]; then ok "$desc: exit $want"; else
    fail "$desc" "exit $rc, want $want"; sed 's/^/  | /' "$T/out" "$T/err"
  fi
}
# has FILE DESC PATTERN: grep -E PATTERN in FILE
has() {
  if grep -Eq -- "$3" "$1"; then ok "$2"; else
    fail "$2" "no /$3/ in:"; sed 's/^/  | /' "$1"
  fi
}
same() { if [ "$2" = "$3" ]; then ok "$1"; else fail "$1" "got '$2', want '$3'"; fi; }
# names: the sessions in the store, sorted, on one line
names() { ctl get sessions -o name 2>/dev/null | sed 's|.*/||' | sort | tr '\n' ' '; }
wakes() { ctl get sessions -o jsonpath='{range .items[*]}{.spec.wake}{end}'; }

seed() {
  for n in "$@"; do
    printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s}\nspec: {template: t}\n---\n' "$n"
  done >"$T/seed.yaml"
  ctl apply -f "$T/seed.yaml" >/dev/null 2>&1 || fail "seed $*"
}
seed a b c d e f g h

# --- usage errors: one text for all four commands ---
# rejected DESC PATTERN ARGS...: exit 2, PATTERN on stderr, the hint,
# nothing on stdout, and the store (names and wakes) unchanged
rejected() {
  desc=$1; pat=$2; shift 2
  before="$(names)|$(wakes)"
  status 2 "$desc" "$@"
  has "$T/err" "$desc: error text" "^error: $pat"
  has "$T/err" "$desc: hint" "Run 'sessionctl --help' for usage\."
  same "$desc: nothing on stdout" "$(cat "$T/out")" ""
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
rejected "delete -f with a TYPE" 'delete: give either -f or session NAMEs' delete sessions -f "$T/seed.yaml"
rejected "wake (nothing)" 'wake: give a session NAME' wake

# --- get: every accepted form ---
status 0 "get sessions" get sessions -o name
same "get sessions lists all" "$(wc -l <"$T/out" | tr -d ' ')" 8
for t in sessions session sess sessions.lea.io session.lea.io; do
  status 0 "get $t a" get "$t" a -o name
  same "get $t a: a" "$(cat "$T/out")" "session.lea.io/a"
  status 0 "get $t/a" get "$t/a" -o name
  same "get $t/a: a" "$(cat "$T/out")" "session.lea.io/a"
done
status 0 "get sess a b" get sess a b -o name
same "get sess a b: both" "$(tr '\n' ' ' <"$T/out")" "session.lea.io/a session.lea.io/b "
status 0 "get session/a sess/b" get session/a sess/b -o name
same "get session/a sess/b: both" "$(tr '\n' ' ' <"$T/out")" "session.lea.io/a session.lea.io/b "
status 1 "get session/nope" get session/nope
has "$T/err" "get session/nope: NotFound" 'NotFound.*"nope"'

# --- describe: every accepted form ---
for t in sessions session sess sessions.lea.io session.lea.io; do
  status 0 "describe $t a" describe "$t" a
  same "describe $t a: one" "$(grep -c '^Name:' "$T/out")" 1
  status 0 "describe $t/a" describe "$t/a"
  has "$T/out" "describe $t/a: a" '^Name: +a$'
done
status 0 "describe sess a b" describe sess a b
same "describe sess a b: two" "$(grep -Ec '^Name: +(a|b)$' "$T/out")" 2
status 0 "describe session/a sess/b" describe session/a sess/b
same "describe session/a sess/b: two" "$(grep -Ec '^Name: +(a|b)$' "$T/out")" 2
status 1 "describe session/nope" describe session/nope
has "$T/err" "describe session/nope: NotFound" 'NotFound.*"nope"'

# --- wake: every accepted form (--force, so each one writes) ---
# wake_ok DESC WANT_NAMES ARGS...: exit 0 and one "woken" line per name
wake_ok() {
  desc=$1; woken=$2; shift 2
  status 0 "$desc" wake --force "$@"
  same "$desc: woken" "$(sed -n 's|^session/\(.*\) woken .*|\1|p' "$T/out" | tr '\n' ' ')" "$woken"
}
wake_ok "wake NAME" "a " a
wake_ok "wake NAME NAME" "a b " a b
wake_ok "wake session NAME" "c " session c
wake_ok "wake sess NAME NAME" "c d " sess c d
wake_ok "wake session/NAME" "e " session/e
wake_ok "wake session/NAME session.lea.io/NAME" "e f " session/e session.lea.io/f
wake_ok "wake NAME that is not a type first" "g h " g h
same "wakes counted" "$(wakes)" "21212111"
status 1 "wake session (a NAME alone)" wake --force session
has "$T/err" "wake session: NotFound for the name session" 'NotFound.*"session"'

# --- delete: every accepted form ---
status 0 "delete session a" delete session a
has "$T/out" "delete session a: deleted" '^session "a" deleted$'
status 0 "delete sessions b c" delete sessions b c
same "delete sessions b c: both" "$(grep -c 'deleted$' "$T/out")" 2
status 0 "delete session/d" delete session/d
has "$T/out" "delete session/d: deleted" '^session "d" deleted$'
status 0 "delete session/e sess/f session.lea.io/g" \
  delete session/e sess/f session.lea.io/g
same "delete three slash forms" "$(grep -c 'deleted$' "$T/out")" 3
same "left after the deletes" "$(names)" "h "
status 1 "delete session/nope" delete session/nope
has "$T/err" "delete session/nope: NotFound" 'NotFound.*"nope"'

finish
