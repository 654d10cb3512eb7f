#!/bin/sh
# bench_store.sh - the SQLite store's own costs (docs/store.md, "Cost"):
#  1. sessionctl apply -f DIR of 10k/50k/100k sessions (files of 5,000,
#     each under the 1 MiB manifest cap) into a new store, then the same
#     directory again (every object unchanged)
#  2. test/bench/bench_store.c at 10k and 100k: a settled store_list
#     (first after every row changed, then unchanged), status writes one
#     at a time, and a burst of asynchronous status writes queued in one
#     turn of the loop, 1,000 a turn (as the controller writes during a
#     create burst), and the peak RSS
# Measures, never asserts. Prints the load average beside every figure.
#
# Environment: BENCH_STORE_APPLY ("10000 50000 100000"), BENCH_STORE_LIST
# ("10000 100000"), BENCH_STORE_BASE (a git revision: build it in a
# temporary directory and run every measure with its binaries too, side
# by side, old then new), BENCH_STORE_BASE_APPLY_MAX (50000: the largest
# apply run with the old binaries; an apply that is quadratic takes
# minutes beyond). Builds through make; removes what it made.
set -eu
cd "$(dirname "$0")/../.."
CC=${CC:-cc}
APPLY_NS=${BENCH_STORE_APPLY:-10000 50000 100000}
LIST_NS=${BENCH_STORE_LIST:-10000 100000}
BASE=${BENCH_STORE_BASE:-}
BASE_APPLY_MAX=${BENCH_STORE_BASE_APPLY_MAX:-50000}
PKGS="libcurl yaml-0.1 json-c libevent openssl sqlite3"

make -s all
T=$(mktemp -d "${TMPDIR:-/tmp}/sc-bench-store.XXXXXX")
trap 'rm -rf "$T"' EXIT
trap 'exit 1' INT TERM

# build_bench ROOT OUT: bench_store.c against ROOT's build/libsc.a
build_bench() {
  # shellcheck disable=SC2046
  $CC -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -Wall -Wextra \
    -Werror -O2 -g -I"$1" $(pkg-config --cflags $PKGS) -o "$2" \
    test/bench/bench_store.c "$1/build/libsc.a" $(pkg-config --libs $PKGS) -lm
}

SETS="new"
build_bench . "$T/bench_store.new"
mkdir -p "$T/new"
cp bin/sessionctl "$T/new/sessionctl"
if [ -n "$BASE" ]; then
  echo "bench_store: building $BASE for the side-by-side run"
  mkdir -p "$T/src"
  git archive "$BASE" | tar -x -C "$T/src"
  make -s -C "$T/src" all >/dev/null
  build_bench "$T/src" "$T/bench_store.old"
  mkdir -p "$T/old"
  cp "$T/src/bin/sessionctl" "$T/old/sessionctl"
  SETS="old new"
fi

now_ms() { date +%s%3N; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

# gendir N DIR: N sessions in files of 5,000
gendir() {
  mkdir -p "$2"
  awk -v n="$1" -v d="$2" '
  function b36(x,  s, r) {
    s = ""
    do { r = x % 36; s = substr("0123456789abcdefghijklmnopqrstuvwxyz", r + 1, 1) s; x = int(x / 36) } while(x > 0)
    return s
  }
  BEGIN {
    for(i = 1; i <= n; i++) {
      if((i - 1) % 5000 == 0) {
        if(f) close(f)
        f = sprintf("%s/part-%05d.yaml", d, int((i - 1) / 5000))
        print "apiVersion: v1" > f; print "kind: List" > f; print "items:" > f
      }
      printf("- {apiVersion: lea.io/v1alpha1,kind: Session,metadata: {name: s%s},spec: {template: t,state: Active}}\n", b36(i)) > f
    }
  }'
}

echo "bench_store: 1. sessionctl apply -f DIR"
for n in $APPLY_NS; do
  gendir "$n" "$T/d$n"
  for set in $SETS; do
    if [ "$set" = old ] && [ "$n" -gt "$BASE_APPLY_MAX" ]; then
      echo "apply old n=$n: skipped (over BENCH_STORE_BASE_APPLY_MAX)"
      continue
    fi
    db="$T/$set-$n.db"
    t0=$(now_ms)
    "$T/$set/sessionctl" --store "sqlite:$db" apply -f "$T/d$n" >"$T/out" 2>&1
    t1=$(now_ms)
    "$T/$set/sessionctl" --store "sqlite:$db" apply -f "$T/d$n" >"$T/out2" 2>&1
    t2=$(now_ms)
    c=$(grep -c ' created$' "$T/out" || true)
    u=$(grep -c ' unchanged$' "$T/out2" || true)
    echo "apply $set n=$n: new store $((t1 - t0)) ms ($c created), again $((t2 - t1)) ms ($u unchanged); load $(load)"
    rm -f "$db" "$db-wal" "$db-shm"
  done
  rm -rf "$T/d$n"
done

echo "bench_store: 2. store list and status writes (bench_store.c)"
for n in $LIST_NS; do
  for set in $SETS; do
    "$T/bench_store.$set" "$T/$set-b$n.db" "$n" 5 | sed "s/^/$set n=$n: /; s/\$/; load at start $(load)/"
  done
done
