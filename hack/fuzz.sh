#!/bin/sh
# fuzz.sh [SECONDS] - build the libFuzzer targets test/fuzz/fuzz_*.c with
# clang (-fsanitize=fuzzer,address,undefined) against the sources, then
# run each for SECONDS (default 20) from its seed corpus
# test/fuzz/corpus/<target>/. Exits non-zero if any target crashed, leaked,
# timed out or ran out of memory, and prints the reproducer's path
# (rerun it with: build/fuzz/<target> <file>).
#
# Environment: FUZZ_TARGETS="fuzz_a fuzz_b" runs only those; CC (default
# clang) must support -fsanitize=fuzzer (clang >= 6).
# Inputs libFuzzer finds are kept in build/fuzz/corpus/<target>/ (not in
# the seed directory) so reruns start where the last run stopped.
set -u
cd "$(dirname "$0")/.." || exit 2
secs=${1:-20}
case "$secs" in ''|*[!0-9]*) echo "fuzz.sh: SECONDS must be a number" >&2; exit 2;; esac
CC=${FUZZ_CC:-clang}
out=build/fuzz
pkgs="libcurl yaml-0.1 json-c libevent openssl sqlite3"
pkg_cflags=$(pkg-config --cflags $pkgs) || exit 2
pkg_libs="$(pkg-config --libs $pkgs) -lm"
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cflags="-std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -g -O1 $san -I. $pkg_cflags"

command -v "$CC" >/dev/null 2>&1 || { echo "fuzz.sh: $CC not found (apt-get install clang)" >&2; exit 2; }
mkdir -p "$out/obj" "$out/corpus" "$out/crash" || exit 2

# 1. the library sources, instrumented for coverage (fuzzer-no-link);
# compiled two at a time, each only when its source is newer.
srcs=$(ls lib/*.c api/*.c controller/*/*.c controller/*/*/*.c cmd/cubesim/*.c | grep -v '/main\.c$')
todo=""
for s in $srcs; do
  o="$out/obj/$(echo "$s" | tr / _ | sed 's/\.c$/.o/')"
  if [ ! -f "$o" ] || [ "$s" -nt "$o" ] || [ -n "$(find lib api controller cmd/cubesim -name '*.h' -newer "$o" 2>/dev/null | head -n 1)" ]; then
    todo="$todo $s"
  fi
done
if [ -n "$todo" ]; then
  echo "fuzz.sh: compiling$(echo $todo | wc -w | sed 's/^/ /') sources"
  # shellcheck disable=SC2086
  printf '%s\n' $todo | xargs -P 2 -I{} sh -c \
    'o="$0/obj/$(echo "$1" | tr / _ | sed "s/\.c$/.o/")"; '"$CC"' '"$cflags"' -fsanitize=fuzzer-no-link -c -o "$o" "$1" || exit 255' "$out" {} || exit 1
fi
rm -f "$out/libfz.a"
ar rcs "$out/libfz.a" "$out"/obj/*.o || exit 1

# 2. the targets
targets=${FUZZ_TARGETS:-$(ls test/fuzz/fuzz_*.c | sed 's|.*/||; s|\.c$||')}
for t in $targets; do
  # shellcheck disable=SC2086
  $CC $cflags -fsanitize=fuzzer -o "$out/$t" "test/fuzz/$t.c" "$out/libfz.a" $pkg_libs || {
    echo "fuzz.sh: $t: build failed" >&2; exit 1; }
done

# 3. run
failed=""
for t in $targets; do
  seeds="test/fuzz/corpus/$t"
  work="$out/corpus/$t"
  mkdir -p "$work"
  [ -d "$seeds" ] || { echo "fuzz.sh: $t: no seed corpus $seeds" >&2; failed="$failed $t"; continue; }
  case "$t" in
    fuzz_manifest) maxlen=16384 ;;
    *) maxlen=8192 ;;
  esac
  rm -f "$out/crash/$t-"*
  echo "fuzz.sh: $t for ${secs}s"
  "./$out/$t" -max_total_time="$secs" -rss_limit_mb=2048 -max_len="$maxlen" \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$out/crash/$t-" \
    "$work" "$seeds" >"$out/$t.log" 2>&1
  rc=$?
  grep -E '^stat::number_of_executed_units|^Done|^#[0-9]+.*DONE' "$out/$t.log" | tail -n 2 | sed "s/^/  $t: /"
  if [ "$rc" -ne 0 ]; then
    failed="$failed $t"
    grep -E 'ERROR: |SUMMARY: |runtime error' "$out/$t.log" | head -n 5 | sed "s/^/  $t: /"
    for f in "$out/crash/$t-"*; do
      [ -f "$f" ] && echo "  $t: reproducer: $f (run: $out/$t $f; log: $out/$t.log)"
    done
  fi
done
if [ -n "$failed" ]; then
  echo "fuzz.sh: FAILED:$failed"
  exit 1
fi
echo "fuzz.sh: all targets ran ${secs}s without a finding"
