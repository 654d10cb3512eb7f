/*
 * bench_revision.c - read two numbers from a sqlite store for the scale
 * benchmark (test/bench/scale.sh): the store's revision, and how many
 * live objects were written after a given revision.
 *
 * Usage: bench_revision DBFILE rev
 *          prints the global revision (the last revision written)
 *        bench_revision DBFILE changed REV
 *          prints "OBJECTS WRITES": the live objects whose row was last
 *          written after REV, and the revisions written after REV (every
 *          create, update, status write and delete bumps the revision)
 *
 * Exit 0, or 1 with a message naming the file and the query on stderr.
 * It opens the file read-only and waits up to 5 s for a writer's lock.
 * Like bench_converge.c it is a benchmark tool tied to the sqlite schema
 * of controller/store/sqlite/sqlite.c (tables meta and objects), not a client
 * of the store API: store_list would parse every object to count them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>

static const char q_rev[] = "SELECT revision FROM meta WHERE id = 1";
static const char q_changed[] =
  "SELECT count(*) FROM objects WHERE deleted_ms = 0 AND revision > ?1";

static int arg_rev(const char *s, long long *out)
{
  char *end;
  errno = 0;
  *out = strtoll(s, &end, 10);
  if(errno || end == s || *end || *out < 0) {
    fprintf(stderr, "bench_revision: REV: want a revision number, got \"%s\"\n",
            s);
    return -1;
  }
  return 0;
}

/* One integer from q (with ?1 bound to arg when arg >= 0); -1 on error. */
static int query_int(sqlite3 *db, const char *file, const char *q,
                     long long arg, long long *out)
{
  sqlite3_stmt *st = NULL;
  int rc = -1;
  if(sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
    goto out;
  if(arg >= 0 && sqlite3_bind_int64(st, 1, arg) != SQLITE_OK)
    goto out;
  if(sqlite3_step(st) != SQLITE_ROW)
    goto out;
  *out = sqlite3_column_int64(st, 0);
  rc = 0;
out:
  if(rc)
    fprintf(stderr, "bench_revision: %s: \"%s\": %s\n", file, q,
            sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return rc;
}

int main(int argc, char **argv)
{
  sqlite3 *db = NULL;
  long long rev = 0, since = 0, n = 0;
  int rc = 1;

  if(argc < 3 || (strcmp(argv[2], "rev") && strcmp(argv[2], "changed")) ||
     (!strcmp(argv[2], "rev") && argc != 3) ||
     (!strcmp(argv[2], "changed") && argc != 4)) {
    fprintf(stderr, "usage: bench_revision DBFILE rev\n"
                    "       bench_revision DBFILE changed REV\n");
    return 2;
  }
  if(argc == 4 && arg_rev(argv[3], &since))
    return 2;
  if(sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    fprintf(stderr, "bench_revision: %s: %s\n", argv[1], sqlite3_errmsg(db));
    goto out;
  }
  sqlite3_busy_timeout(db, 5000);
  if(query_int(db, argv[1], q_rev, -1, &rev))
    goto out;
  if(argc == 3) {
    printf("%lld\n", rev);
    rc = 0;
    goto out;
  }
  if(query_int(db, argv[1], q_changed, since, &n))
    goto out;
  printf("%lld %lld\n", n, rev > since ? rev - since : 0);
  rc = 0;
out:
  sqlite3_close(db);
  return rc;
}
