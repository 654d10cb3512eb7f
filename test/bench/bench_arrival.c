/*
 * bench_arrival.c - when did each session of a sqlite store first show
 * phase Running with a sandboxID? The watcher half of test/bench/
 * arrival.sh (the shell applies the sessions and keeps their apply times).
 *
 * Usage: bench_arrival DBFILE N TIMEOUT_S
 *   DBFILE    the sqlite file behind the store (sqlite:DBFILE)
 *   N         stop once this many sessions are Running
 *   TIMEOUT_S give up after this many seconds
 *
 * Prints "NAME WALL_MS" for each session, in the order they were first
 * seen Running (wall-clock ms since the epoch), then "done N" or
 * "timeout GOT/N" (exit 1). It reads the store's table directly,
 * read-only, every 2 ms (a benchmark tool tied to the sqlite schema of
 * controller/store/sqlite/sqlite.c, like bench_converge), so the time it adds
 * to a measurement is at most 2 ms plus one query.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sqlite3.h>

#include "lib/hmap.h"
#include "lib/sctime.h"

static const char q_running[] =
  "SELECT name FROM objects WHERE deleted_ms = 0"
  " AND json_extract(status, '$.phase') = 'Running'"
  " AND coalesce(json_extract(status, '$.sandboxID'), '') <> ''";

typedef struct seen {
  char **names;
  size_t n, cap;
  sc_hmap *idx;
} seen;

static long long arg_num(const char *s, const char *what)
{
  char *end;
  long long v;
  errno = 0;
  v = strtoll(s, &end, 10);
  if(errno || end == s || *end || v < 0) {
    fprintf(stderr, "bench_arrival: %s: want a number, got \"%s\"\n", what,
            s);
    exit(2);
  }
  return v;
}

static bool name_eq(const void *v, const void *key, void *ud)
{
  const seen *sn = ud;
  return !strcmp(sn->names[SC_HMAP_IDX_OF(v)], key);
}

/* true: name is new (recorded) */
static bool note(seen *sn, const char *name)
{
  uint64_t h = sc_hash_id(name);
  char *d;
  if(sc_hmap_get(sn->idx, h, name_eq, name, sn))
    return false;
  if(sn->n == sn->cap) {
    size_t nc = sn->cap ? sn->cap * 2 : 256;
    char **p = realloc(sn->names, nc * sizeof(*p));
    if(!p)
      return false;
    sn->names = p;
    sn->cap = nc;
  }
  if(!(d = strdup(name)))
    return false;
  sn->names[sn->n] = d;
  if(sc_hmap_put(sn->idx, h, SC_HMAP_IDX(sn->n))) {
    free(d);
    return false;
  }
  sn->n++;
  return true;
}

int main(int argc, char **argv)
{
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  seen sn = {0};
  long long want, deadline;
  struct timespec nap = {0, 2 * 1000 * 1000};
  size_t i;
  int rc = 1;

  if(argc != 4) {
    fprintf(stderr, "usage: bench_arrival DBFILE N TIMEOUT_S\n");
    return 2;
  }
  want = arg_num(argv[2], "N");
  deadline = sctime_wall_ms() + arg_num(argv[3], "TIMEOUT_S") * 1000;
  if(!(sn.idx = sc_hmap_new(0)))
    return 1;
  if(sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    fprintf(stderr, "bench_arrival: %s: %s\n", argv[1], sqlite3_errmsg(db));
    goto out;
  }
  sqlite3_busy_timeout(db, 1000);
  if(sqlite3_prepare_v2(db, q_running, -1, &st, NULL) != SQLITE_OK) {
    fprintf(stderr, "bench_arrival: %s: %s\n", argv[1], sqlite3_errmsg(db));
    goto out;
  }
  for(;;) {
    long long now;
    int r;
    while((r = sqlite3_step(st)) == SQLITE_ROW) {
      const char *name = (const char *)sqlite3_column_text(st, 0);
      if(name && note(&sn, name))
        printf("%s %lld\n", name, (long long)sctime_wall_ms());
    }
    if(r != SQLITE_DONE && r != SQLITE_BUSY && r != SQLITE_LOCKED)
      fprintf(stderr, "bench_arrival: query: %s\n", sqlite3_errmsg(db));
    sqlite3_reset(st);
    now = sctime_wall_ms();
    if((long long)sn.n >= want) {
      printf("done %zu\n", sn.n);
      rc = 0;
      break;
    }
    if(now > deadline) {
      printf("timeout %zu/%lld\n", sn.n, want);
      break;
    }
    nanosleep(&nap, NULL);
  }
out:
  fflush(stdout);
  for(i = 0; i < sn.n; i++)
    free(sn.names[i]);
  free(sn.names);
  sc_hmap_free(sn.idx);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rc;
}
