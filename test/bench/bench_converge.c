/*
 * bench_converge.c - wait until N sessions of a sqlite store show phase
 * Running with a sandboxID, and print how long that took.
 *
 * Usage: bench_converge DBFILE N T0_MS [TIMEOUT_S]
 *   DBFILE   the sqlite file behind the controller's store (sqlite:DBFILE)
 *   N        how many converged sessions to wait for
 *   T0_MS    wall-clock ms since the epoch the measurement started at
 *            (taken by the caller right before `sessionctl apply`)
 *   TIMEOUT_S give up after this many seconds (default 600)
 *
 * Prints one line: "converged N ELAPSED_MS" (exit 0), or
 * "timeout GOT/N ELAPSED_MS" (exit 1). A progress line goes to stderr
 * every second. It reads the store's table directly, read-only, with a
 * cheap COUNT every 20 ms, so that the waiting costs the controller as
 * little CPU as possible (store_list would parse 10k JSON objects each
 * time). It is a benchmark tool tied to the sqlite schema of
 * controller/store/sqlite/sqlite.c, not a client of the store API.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sqlite3.h>

#include "lib/sctime.h"

static const char q_running[] =
  "SELECT count(*) FROM objects WHERE deleted_ms = 0"
  " AND json_extract(status, '$.phase') = 'Running'"
  " AND coalesce(json_extract(status, '$.sandboxID'), '') <> ''";

static long long arg_num(const char *s, const char *what)
{
  char *end;
  long long v;
  errno = 0;
  v = strtoll(s, &end, 10);
  if(errno || end == s || *end || v < 0) {
    fprintf(stderr, "bench_converge: %s: want a number, got \"%s\"\n",
            what, s);
    exit(2);
  }
  return v;
}

static long long count_running(sqlite3 *db, sqlite3_stmt *st)
{
  long long n = -1;
  int rc = sqlite3_step(st);
  if(rc == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  else if(rc != SQLITE_BUSY && rc != SQLITE_LOCKED)
    fprintf(stderr, "bench_converge: query: %s\n", sqlite3_errmsg(db));
  sqlite3_reset(st);
  return n;
}

int main(int argc, char **argv)
{
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  long long want, t0, timeout_ms, got = 0, last_print = 0;
  struct timespec nap = {0, 20 * 1000 * 1000};
  int rc = 1;

  if(argc < 4 || argc > 5) {
    fprintf(stderr, "usage: bench_converge DBFILE N T0_MS [TIMEOUT_S]\n");
    return 2;
  }
  want = arg_num(argv[2], "N");
  t0 = arg_num(argv[3], "T0_MS");
  timeout_ms = (argc == 5 ? arg_num(argv[4], "TIMEOUT_S") : 600) * 1000;
  if(sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    fprintf(stderr, "bench_converge: %s: %s\n", argv[1], sqlite3_errmsg(db));
    goto out;
  }
  sqlite3_busy_timeout(db, 1000);
  if(sqlite3_prepare_v2(db, q_running, -1, &st, NULL) != SQLITE_OK) {
    fprintf(stderr, "bench_converge: %s: %s\n", argv[1], sqlite3_errmsg(db));
    goto out;
  }
  for(;;) {
    long long now = sctime_wall_ms();
    long long n = count_running(db, st);
    if(n > got)
      got = n;
    if(got >= want) {
      printf("converged %lld %lld\n", want, now - t0);
      rc = 0;
      break;
    }
    if(now - t0 > timeout_ms) {
      printf("timeout %lld/%lld %lld\n", got, want, now - t0);
      break;
    }
    if(now - last_print >= 1000) {
      fprintf(stderr, "  %6.1f s: %lld/%lld Running\n",
              (double)(now - t0) / 1000.0, got, want);
      last_print = now;
    }
    nanosleep(&nap, NULL);
  }
out:
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rc;
}
