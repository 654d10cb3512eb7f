/* Tests of the SQLite store's write probe (store_write_probe, sqlite_name.c):
 * it must go to disk as a write does, so that a store that cannot grow
 * its files fails it. A full disk is played by RLIMIT_FSIZE at the WAL
 * file's size: a write past it fails (EFBIG; SIGXFSZ ignored) as a write
 * past the last free block fails with ENOSPC. */
#include "test/harness.h"
#include "test/unit/tmp_store.h"
#include "controller/store/store.h"
#include "api/session.h"

#include <dirent.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <event2/event.h>

static int tmp_make(tmp *t)
{
  return tmp_make_named(t, "sc-probe");
}

static long long file_size(const char *path)
{
  struct stat st;
  return stat(path, &st) ? -1 : (long long)st.st_size;
}

/* the meta row's revision, read by a connection of its own */
static long long meta_revision(const tmp *t)
{
  sqlite3 *db = NULL;
  sqlite3_stmt *q = NULL;
  long long v = -1;
  if(sqlite3_open_v2(t->path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
     sqlite3_prepare_v2(db, "SELECT revision FROM meta WHERE id = 1", -1, &q,
                        NULL) == SQLITE_OK &&
     sqlite3_step(q) == SQLITE_ROW)
    v = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(db);
  return v;
}

static store *open_store(const tmp *t, struct event_base *b)
{
  store_open_opts o = {0};
  store *st = NULL;
  sc_errbuf eb;
  o.base = b;
  o.create = true;
  o.poll_interval_ms = 5;
  if(store_open(t->url, &o, &st, &eb)) {
    fprintf(stderr, "  store_open: %s\n", eb.msg);
    return NULL;
  }
  return st;
}

/* quiet: a failure is what the caller expects, not worth a line */
static sc_err apply_one(store *st, const char *name, bool quiet)
{
  session *s = session_new();
  sc_errbuf eb;
  sc_err err;
  s->meta.namespace_ = strdup("ns");
  s->meta.name = strdup(name);
  s->spec.template_id = strdup("tmpl");
  session_apply_defaults(s);
  err = store_apply(st, &s, 1, NULL, &eb);
  if(err && !quiet)
    fprintf(stderr, "  apply: %s\n", eb.msg);
  session_free(s);
  return err;
}

/* Each probe appends to the WAL and leaves the revision as it was. */
TEST(probe_goes_to_disk)
{
  struct event_base *b = event_base_new();
  tmp t;
  store *st;
  sc_errbuf eb;
  long long w0, w1, w2, rev;
  CHECK(b);
  CHECK_OK(tmp_make(&t));
  st = open_store(&t, b);
  CHECK(st);
  CHECK(store_has_write_probe(st));
  CHECK_OK(apply_one(st, "a", false));
  rev = meta_revision(&t);
  CHECK(rev > 0);
  w0 = file_size(t.wal);
  CHECK(w0 > 0);
  CHECK_OK(store_write_probe(st, &eb));
  w1 = file_size(t.wal);
  CHECK_MSG(w1 > w0, "the WAL did not grow (%lld bytes before and after): "
            "the probe committed nothing", w0);
  CHECK_OK(store_write_probe(st, &eb));
  w2 = file_size(t.wal);
  CHECK_MSG(w2 > w1, "the WAL did not grow on the second probe (%lld)", w1);
  CHECK_INT(meta_revision(&t), rev);
  store_close(st);
  tmp_clean(&t);
  event_base_free(b);
}

/* A store that cannot grow its files fails the probe as it fails a
 * write; once it can, the probe works, and so does the write. */
TEST(probe_fails_where_writes_fail)
{
  struct event_base *b = event_base_new();
  struct rlimit old, lim;
  tmp t;
  store *st;
  sc_errbuf eb;
  sc_err perr, werr, perr2, werr2;
  long long w;
  CHECK(b);
  CHECK_OK(tmp_make(&t));
  st = open_store(&t, b);
  CHECK(st);
  CHECK_OK(apply_one(st, "a", false));
  CHECK_OK(getrlimit(RLIMIT_FSIZE, &old));
  w = file_size(t.wal);
  CHECK(w > 0);
  CHECK_MSG(file_size(t.path) <= w, "the database file (%lld) is larger "
            "than the WAL (%lld): the limit would not stop the WAL alone",
            file_size(t.path), w);
  signal(SIGXFSZ, SIG_IGN);
  lim = old;
  lim.rlim_cur = (rlim_t)w;
  CHECK_OK(setrlimit(RLIMIT_FSIZE, &lim));
  eb.msg[0] = '\0';
  werr = apply_one(st, "b", true);
  eb.msg[0] = '\0';
  perr = store_write_probe(st, &eb);
  setrlimit(RLIMIT_FSIZE, &old);
  CHECK_MSG(werr != SC_OK, "a write worked past the limit: the test plays "
            "no full disk");
  CHECK_MSG(perr != SC_OK, "the probe worked where a write failed");
  CHECK_MSG(strstr(eb.msg, "write probe"), "the probe's error: %s", eb.msg);
  /* room again */
  perr2 = store_write_probe(st, &eb);
  CHECK_MSG(perr2 == SC_OK, "the probe failed with room: %s", eb.msg);
  werr2 = apply_one(st, "b", false);
  CHECK_OK(werr2);
  store_close(st);
  tmp_clean(&t);
  event_base_free(b);
}

TEST_LIST = {
  T(probe_goes_to_disk),
  T(probe_fails_where_writes_fail),
  {0},
};
TEST_MAIN()
