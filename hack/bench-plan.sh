#!/bin/sh
# bench-plan.sh [N...] - time the pure planner for N sessions (default
# 1000 10000 100000): builds test/bench/bench_plan.c with the project's
# flags against build/libsc.a and prints the best/median of 5 rounds and
# the peak RSS of each run (one process per size).
#
# BEFORE=DIR also builds the same bench_plan.c against DIR/build/libsc.a
# (an older checkout, built; its include paths from before the rooms,
# controller/plan.h, are mapped) into build/bench/bench_plan_before, and
# runs the two alternately: before, after, before, after... RUNS=N pairs
# per size (default 1). ROUNDS=N passes per run (default 5).
# BENCH_DUMP=PREFIX is passed on (bench_plan.c writes the plans as text).
set -eu
cd "$(dirname "$0")/.."
CC=${CC:-cc}
FLAGS="-std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -Wall -Wextra
  -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
  -Wno-format-nonliteral -O2 -g"
LIBS="$(pkg-config --libs openssl yaml-0.1 2>/dev/null || echo -lssl -lcrypto -lyaml) -lm"
make -s build/libsc.a
mkdir -p build/bench
# shellcheck disable=SC2086
$CC $FLAGS -I. -o build/bench/bench_plan test/bench/bench_plan.c \
  build/libsc.a $LIBS
if [ -n "${BEFORE:-}" ]; then
  [ -f "$BEFORE/build/libsc.a" ] ||
    { echo "bench-plan: $BEFORE/build/libsc.a is missing" >&2; exit 2; }
  src=test/bench/bench_plan.c
  if [ ! -f "$BEFORE/controller/plan/plan.h" ]; then
    sed -e 's|"controller/plan/plan.h"|"controller/plan.h"|' \
        -e 's|"controller/cube/sandbox.h"|"controller/sandbox.h"|' \
        "$src" >build/bench/bench_plan_before.c
    src=build/bench/bench_plan_before.c
  fi
  # shellcheck disable=SC2086
  $CC $FLAGS -I"$BEFORE" -o build/bench/bench_plan_before "$src" \
    "$BEFORE/build/libsc.a" $LIBS
fi
[ $# -gt 0 ] || set -- 1000 10000 100000
for n in "$@"; do
  k=0
  while [ "$k" -lt "${RUNS:-1}" ]; do
    if [ -n "${BEFORE:-}" ]; then
      printf 'before: '
      build/bench/bench_plan_before "$n" "${ROUNDS:-5}"
      printf 'after:  '
    fi
    build/bench/bench_plan "$n" "${ROUNDS:-5}"
    k=$((k + 1))
  done
done
