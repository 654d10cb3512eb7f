#!/bin/sh
# bench-plan.sh [N...] - time the pure planner for N sessions (default
# 1000 10000 100000): builds test/bench/bench_plan.c with the project's
# flags against build/libsc.a and prints the best/median of 5 rounds and
# the peak RSS of each run (one process per size).
set -eu
cd "$(dirname "$0")/.."
CC=${CC:-cc}
make -s build/libsc.a
mkdir -p build/bench
$CC -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -Wall -Wextra \
  -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 \
  -Wno-format-nonliteral -O2 -g -I. \
  -o build/bench/bench_plan test/bench/bench_plan.c build/libsc.a -lm
[ $# -gt 0 ] || set -- 1000 10000 100000
for n in "$@"; do
  build/bench/bench_plan "$n" 5
done
