/* Tests of the SQLite store's speed machinery (docs/store.md, "Cost"):
 * the statement cache, the decode cache, the group commit of status
 * writes, the watch's own writes, and apply's duplicate check at scale.
 * They look under the hood (sqlite_int.h) where a cache is the point. */
#include "test/harness.h"
#include "test/unit/store_fixture.h"
#include "controller/store/store.h"
#include "controller/store/sqlite/sqlite_int.h"
#include "api/manifest.h"
#include "api/session_json.h"

#include <dirent.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>
#include <event2/event.h>

/* --- fixtures --- */

static int tmp_make(tmp *t)
{
  return tmp_make_named(t, "sc-sqst");
}

static store *open_busy(const tmp *t, struct event_base *b, int busy_ms)
{
  store_open_opts o = {0};
  o.base = b;
  o.busy_timeout_ms = busy_ms;
  return fx_open(t, o);
}

static store *open_store(const tmp *t, struct event_base *b)
{
  return open_busy(t, b, 0);
}

static sq_store *sq(store *st)
{
  return (sq_store *)st;
}

static session *mk(const char *ns, const char *name)
{
  return fx_session(ns, name, "tmpl");
}

static sc_err apply_names(store *st, const char *const *names, size_t n)
{
  session *objs[8] = {NULL};
  sc_errbuf eb;
  size_t i;
  sc_err err;
  if(n > 8)
    return SC_ERR_INVALID;
  for(i = 0; i < n; i++)
    objs[i] = mk("ns", names[i]);
  err = store_apply(st, objs, n, NULL, &eb);
  if(err)
    fprintf(stderr, "  apply: %s\n", eb.msg);
  for(i = 0; i < n; i++)
    session_free(objs[i]);
  return err;
}

/* a scratch directory t with a store opened on it (open_busy) holding
 * ns/NAME for each of names; NULL (and nothing open) on any failure */
static store *open_with(tmp *t, struct event_base *b, int busy_ms,
                        const char *const *names, size_t n)
{
  store *st;
  if(tmp_make(t))
    return NULL;
  st = open_busy(t, b, busy_ms);
  if(st && apply_names(st, names, n)) {
    store_close(st);
    st = NULL;
  }
  return st;
}

/* the resourceVersion of ns/name now (caller frees), NULL when absent */
static char *version_of(store *st, const char *name)
{
  session *s = NULL;
  sc_errbuf eb;
  char *v = NULL;
  if(!store_get(st, "ns", name, &s, &eb))
    v = strdup(s->meta.resource_version);
  session_free(s);
  return v;
}

static void status_running(session_status *ss, const char *sandbox)
{
  memset(ss, 0, sizeof(*ss));
  ss->phase = SESSION_PHASE_RUNNING;
  ss->sandbox_id = strdup(sandbox);
}

static sc_err write_status(store *st, const char *name, const char *sandbox)
{
  session_status ss;
  sc_errbuf eb;
  char *v = version_of(st, name), *nv = NULL;
  sc_err err;
  status_running(&ss, sandbox);
  err = store_update_status(st, "ns", name, v ? v : "0", &ss, &nv, &eb);
  if(err)
    fprintf(stderr, "  update status: %s\n", eb.msg);
  session_status_clear(&ss);
  free(v);
  free(nv);
  return err;
}

static int sql_exec(const char *path, const char *sql)
{
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
  if(rc == SQLITE_OK)
    rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
  sqlite3_close(db);
  return rc;
}

/* ns/name taken on (a status written), deleted and purged */
static sc_err purge_taken_on(store *st, const char *name)
{
  session *got = NULL;
  sc_errbuf eb;
  sc_err err = write_status(st, name, "sb-taken");
  if(!err)
    err = store_delete(st, "ns", name, &eb);
  if(!err)
    err = store_get(st, "ns", name, &got, &eb);
  if(!err)
    err = store_purge(st, "ns", name, got->meta.resource_version, &eb);
  if(err)
    fprintf(stderr, "  purge %s: %s\n", name, eb.msg);
  session_free(got);
  return err;
}

/* another connection to the file at path holding the write lock (rc of
 * SQLite; *other to COMMIT and close) */
static int lock_writes(const char *path, sqlite3 **other)
{
  int rc = sqlite3_open_v2(path, other, SQLITE_OPEN_READWRITE, NULL);
  if(rc == SQLITE_OK)
    rc = sqlite3_exec(*other, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  return rc;
}

/* statements of the store's connection, and how many are mid-step */
static int stmts_of(store *st, int *busy)
{
  sqlite3_stmt *q = NULL;
  int n = 0;
  *busy = 0;
  while((q = sqlite3_next_stmt(sq(st)->db, q))) {
    n++;
    if(sqlite3_stmt_busy(q))
      (*busy)++;
  }
  return n;
}

/* the sandbox ID the list shows for name ("" none, NULL not listed) */
static const char *listed_sandbox(const store_list_result *r,
                                  const char *name)
{
  size_t i;
  for(i = 0; i < r->n; i++)
    if(!strcmp(r->items[i]->meta.name, name))
      return r->items[i]->status.sandbox_id ? r->items[i]->status.sandbox_id
                                            : "";
  return NULL;
}

static const store_list_opts all_opts = {NULL, true, false};

/* a first list: the decode cache fills from a store's second list on */
static sc_err prime(store *st)
{
  store_list_result r;
  sc_errbuf eb;
  sc_err err = store_list(st, &all_opts, &r, &eb);
  store_list_result_free(&r);
  return err;
}

/* --- the statement cache --- */

TEST(stmt_cache_prepares_once)
{
  static const char *const names[] = {"a"};
  tmp t;
  store *st;
  size_t after_one;
  int n, busy, i;
  st = open_with(&t, NULL, 0, names, 1);
  CHECK(st);
  CHECK_OK(write_status(st, "a", "sb-0"));
  after_one = sq_stmts_cached(sq(st));
  CHECK_MSG(after_one >= 6, "only %zu statements cached", after_one);
  for(i = 1; i < 50; i++) {
    char sb[16];
    snprintf(sb, sizeof(sb), "sb-%d", i);
    CHECK_OK(write_status(st, "a", sb));
  }
  /* 49 more writes, reads and lists: the same statements, no new ones */
  CHECK_INT(sq_stmts_cached(sq(st)), after_one);
  n = stmts_of(st, &busy);
  CHECK_INT(n, (int)after_one);
  CHECK_INT(busy, 0); /* every statement reset: no snapshot held */
  CHECK(sqlite3_get_autocommit(sq(st)->db));
  store_close(st);
  tmp_clean(&t);
}

TEST(stmt_cache_reused_after_an_error)
{
  static const char *const names[] = {"a"};
  session_status ss;
  session *got = NULL;
  tmp t;
  store *st;
  sc_errbuf eb;
  char *nv = NULL;
  size_t cached;
  int busy;
  st = open_with(&t, NULL, 0, names, 1);
  CHECK(st);
  CHECK_OK(write_status(st, "a", "sb-1"));
  /* a conflict and a missing object fail inside the transaction */
  status_running(&ss, "sb-2");
  CHECK_INT(store_update_status(st, "ns", "a", "1", &ss, &nv, &eb),
            SC_ERR_CONFLICT);
  CHECK_INT(store_update_status(st, "ns", "zz", "1", &ss, &nv, &eb),
            SC_ERR_NOT_FOUND);
  CHECK_INT(store_get(st, "ns", "zz", &got, &eb), SC_ERR_NOT_FOUND);
  CHECK(sqlite3_get_autocommit(sq(st)->db)); /* rolled back */
  stmts_of(st, &busy);
  CHECK_INT(busy, 0);
  cached = sq_stmts_cached(sq(st)); /* ROLLBACK is one of them now */
  CHECK(cached > 0);
  /* the same statements serve the next writes */
  CHECK_OK(write_status(st, "a", "sb-x"));
  CHECK_INT(store_update_status(st, "ns", "a", "1", &ss, &nv, &eb),
            SC_ERR_CONFLICT);
  CHECK_OK(write_status(st, "a", "sb-3"));
  session_status_clear(&ss);
  CHECK_INT(sq_stmts_cached(sq(st)), cached);
  CHECK_OK(store_get(st, "ns", "a", &got, &eb));
  CHECK_STR(got->status.sandbox_id, "sb-3");
  session_free(got);
  store_close(st);
  tmp_clean(&t);
}

TEST(stmt_cache_reused_after_busy)
{
  static const char *const names[] = {"a"};
  sqlite3 *other = NULL;
  tmp t;
  store *st;
  session_status ss;
  sc_errbuf eb;
  char *v, *nv = NULL;
  size_t cached;
  int busy;
  st = open_with(&t, NULL, 50, names, 1);
  CHECK(st);
  CHECK_OK(write_status(st, "a", "sb-1")); /* statements cached */
  v = version_of(st, "a");
  CHECK(v);
  cached = sq_stmts_cached(sq(st));
  CHECK(cached > 0);
  /* another connection holds the write lock past the busy timeout */
  CHECK_INT(lock_writes(t.path, &other), SQLITE_OK);
  status_running(&ss, "sb-2");
  CHECK_INT(store_update_status(st, "ns", "a", v, &ss, &nv, &eb),
            SC_ERR_BUSY);
  CHECK_MSG(strstr(eb.msg, "locked"), "message: %s", eb.msg);
  CHECK_INT(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(other);
  stmts_of(st, &busy);
  CHECK_INT(busy, 0);
  /* the BEGIN that was refused works now, the same statement */
  CHECK_OK(store_update_status(st, "ns", "a", v, &ss, &nv, &eb));
  CHECK_INT(sq_stmts_cached(sq(st)), cached);
  session_status_clear(&ss);
  free(v);
  free(nv);
  v = NULL;
  {
    session *got = NULL;
    CHECK_OK(store_get(st, "ns", "a", &got, &eb));
    CHECK_STR(got->status.sandbox_id, "sb-2");
    session_free(got);
  }
  store_close(st);
  tmp_clean(&t);
}

/* SQLite's own heap back where it was: every statement finalized and the
 * connection really closed (an unfinalized statement keeps a connection
 * closed with sqlite3_close_v2 alive, and its memory) */
TEST(stmt_cache_finalized_at_close)
{
  static const char *const names[] = {"a", "b"};
  struct event_base *b = event_base_new();
  store_list_result r;
  sc_errbuf eb;
  tmp t;
  store *st;
  sqlite3_int64 before;
  CHECK(b);
  CHECK(!tmp_make(&t));
  /* one round first: what SQLite keeps for the process (the VFS, the
   * file's shared state) is there before we measure */
  st = open_store(&t, b);
  CHECK(st);
  CHECK_OK(apply_names(st, names, 2));
  store_close(st);
  before = sqlite3_memory_used();
  st = open_store(&t, b);
  CHECK(st);
  CHECK_OK(write_status(st, "a", "sb-1"));
  CHECK_OK(store_list(st, &all_opts, &r, &eb));
  store_list_result_free(&r);
  CHECK(sq_stmts_cached(sq(st)) > 0);
  store_close(st);
  CHECK_MSG(sqlite3_memory_used() <= before, "SQLite holds %lld bytes "
            "after close, %lld before open",
            (long long)sqlite3_memory_used(), (long long)before);
  event_base_free(b);
  tmp_clean(&t);
}

/* --- the decode cache --- */

TEST(decode_cache_serves_unchanged_rows)
{
  static const char *const names[] = {"a", "b", "c"};
  store_list_result r1, r2;
  sc_errbuf eb;
  tmp t;
  store *st;
  size_t i;
  st = open_with(&t, NULL, 0, names, 3);
  CHECK(st);
  CHECK_OK(prime(st));
  CHECK_INT(sq_cache_count(sq(st)), 0); /* one list (sessionctl) fills none */
  CHECK_OK(write_status(st, "b", "sb-b"));
  CHECK_OK(store_list(st, &all_opts, &r1, &eb));
  CHECK_INT(sq_cache_count(sq(st)), 3);
  CHECK_OK(store_list(st, &all_opts, &r2, &eb));
  CHECK_INT(r1.n, 3);
  CHECK_INT(r2.n, 3);
  /* a copy from the cache is the object a decode gives, and the
   * caller's own */
  for(i = 0; i < 3; i++) {
    char *j1 = NULL, *j2 = NULL;
    CHECK(r1.items[i] != r2.items[i]);
    CHECK_OK(session_to_json(r1.items[i], &j1));
    CHECK_OK(session_to_json(r2.items[i], &j2));
    CHECK_STR(j2, j1);
    free(j1);
    free(j2);
  }
  store_list_result_free(&r1);
  store_list_result_free(&r2);
  store_close(st);
  tmp_clean(&t);
}


/* A list asked with shared hands out the cache's own objects (one
 * decode, no copy), each freed once by its holder; a write replaces the
 * cache's entry and leaves the holder's object as it was; a list without
 * shared still gets copies of its own. */
TEST(decode_cache_shared_list_hands_out_references)
{
  static const char *const names[] = {"a", "b"};
  store_list_opts shared = {NULL, true, true};
  store_list_result r1, r2, r3, own;
  sc_errbuf eb;
  tmp t;
  store *st;
  size_t i;
  st = open_with(&t, NULL, 0, names, 2);
  CHECK(st);
  CHECK_OK(write_status(st, "a", "sb-a"));
  CHECK_OK(prime(st));
  CHECK_OK(store_list(st, &shared, &r1, &eb)); /* decoded, cached */
  CHECK_INT(sq_cache_count(sq(st)), 2);
  CHECK_OK(store_list(st, &shared, &r2, &eb)); /* the same objects */
  CHECK_INT(r2.n, 2);
  for(i = 0; i < 2; i++) {
    CHECK(r1.items[i] == r2.items[i]);
    CHECK(session_shared(r1.items[i]));
  }
  CHECK_OK(store_list(st, &all_opts, &own, &eb)); /* copies */
  for(i = 0; i < 2; i++) {
    CHECK(own.items[i] != r1.items[i]);
    CHECK(!session_shared(own.items[i]));
  }
  store_list_result_free(&own);
  /* the row changes: a new object in the cache, r1's stays intact */
  CHECK_OK(write_status(st, "a", "sb-new"));
  CHECK_OK(store_list(st, &shared, &r3, &eb));
  CHECK_STR(listed_sandbox(&r3, "a"), "sb-new");
  CHECK_STR(listed_sandbox(&r1, "a"), "sb-a");
  CHECK(r3.items[0] != r1.items[0]);
  CHECK(r3.items[1] == r1.items[1]); /* b did not change */
  store_list_result_free(&r1);
  store_list_result_free(&r2);
  CHECK_STR(listed_sandbox(&r3, "a"), "sb-new");
  /* the cache closes with references out: the holder's stays valid */
  store_close(st);
  CHECK_STR(listed_sandbox(&r3, "b"), "");
  CHECK(!session_shared(r3.items[0]));
  store_list_result_free(&r3);
  tmp_clean(&t);
}
/* The pass's list (every row, shared) handed out again from the last one
 * while nothing changed the file (sq_last_*): the same objects, no row
 * read. Every kind of change shows in the next list: another process
 * rewriting a row without a new revision, another store writing through
 * the rules, this store's own status write, tombstone and purge, another
 * process removing a row; lists of another shape never come from it. */
TEST(last_list_handed_out_until_the_file_changes)
{
  static const char *const names[] = {"a", "b", "c"};
  store_list_opts shared = {NULL, true, true};
  store_list_opts live = {NULL, false, true};
  store_list_result r1, r2, r;
  sc_errbuf eb;
  session *got = NULL;
  tmp t;
  store *st, *other;
  uint64_t hits;
  size_t i;
  st = open_with(&t, NULL, 0, names, 3);
  CHECK(st);
  CHECK_OK(prime(st));
  CHECK_OK(store_list(st, &shared, &r1, &eb)); /* read, kept */
  CHECK_INT(sq(st)->last_hits, 0);
  CHECK_OK(store_list(st, &shared, &r2, &eb)); /* from the last one */
  CHECK_INT(sq(st)->last_hits, 1);
  CHECK_INT(r2.n, 3);
  CHECK_STR(r2.revision, r1.revision);
  for(i = 0; i < 3; i++)
    CHECK(r2.items[i] == r1.items[i]);
  store_list_result_free(&r1);
  store_list_result_free(&r2);

  /* another process rewrites a row and leaves the revision */
  CHECK_INT(sql_exec(t.path, "UPDATE objects SET status = "
                     "'{\"phase\":\"Running\",\"sandboxID\":\"sb-raw\"}' "
                     "WHERE name = 'b'"), SQLITE_OK);
  CHECK_OK(store_list(st, &shared, &r, &eb));
  CHECK_STR(listed_sandbox(&r, "b"), "sb-raw");
  store_list_result_free(&r);
  hits = sq(st)->last_hits;
  CHECK_OK(store_list(st, &shared, &r, &eb)); /* unchanged again */
  CHECK_INT(sq(st)->last_hits, hits + 1);
  CHECK_STR(listed_sandbox(&r, "b"), "sb-raw");
  store_list_result_free(&r);

  /* another store writes through the rules */
  other = open_store(&t, NULL);
  CHECK(other);
  CHECK_OK(write_status(other, "c", "sb-other"));
  store_close(other);
  CHECK_OK(store_list(st, &shared, &r, &eb));
  CHECK_STR(listed_sandbox(&r, "c"), "sb-other");
  store_list_result_free(&r);

  /* this store's own writes */
  CHECK_OK(store_list(st, &shared, &r, &eb));
  store_list_result_free(&r);
  CHECK_OK(write_status(st, "a", "sb-own"));
  CHECK_OK(store_list(st, &shared, &r, &eb));
  CHECK_STR(listed_sandbox(&r, "a"), "sb-own");
  store_list_result_free(&r);
  CHECK_OK(store_delete(st, "ns", "a", &eb));
  CHECK_OK(store_list(st, &shared, &r, &eb));
  CHECK_INT(r.n, 3);
  CHECK(r.items[0]->meta.deletion_timestamp != 0);
  store_list_result_free(&r);
  CHECK_OK(store_get(st, "ns", "a", &got, &eb));
  CHECK_OK(store_purge(st, "ns", "a", got->meta.resource_version, &eb));
  session_free(got);
  CHECK_OK(store_list(st, &shared, &r, &eb));
  CHECK_INT(r.n, 2);
  CHECK(listed_sandbox(&r, "a") == NULL);
  store_list_result_free(&r);

  /* another process removes a row */
  CHECK_INT(sql_exec(t.path, "DELETE FROM objects WHERE name = 'b'"),
            SQLITE_OK);
  CHECK_OK(store_list(st, &shared, &r, &eb));
  CHECK_INT(r.n, 1);
  CHECK_STR(listed_sandbox(&r, "c"), "sb-other");
  store_list_result_free(&r);

  /* other shapes read the rows (and the caller's copies stay its own) */
  hits = sq(st)->last_hits;
  CHECK_OK(store_list(st, &live, &r, &eb));
  store_list_result_free(&r);
  CHECK_OK(store_list(st, &all_opts, &r, &eb));
  CHECK_INT(r.n, 1);
  CHECK(!session_shared(r.items[0]));
  store_list_result_free(&r);
  CHECK_INT(sq(st)->last_hits, hits);
  CHECK_OK(store_list(st, &shared, &r, &eb));
  CHECK_INT(sq(st)->last_hits, hits + 1);
  store_list_result_free(&r);
  store_close(st);
  tmp_clean(&t);
}

TEST(decode_cache_changed_row_decoded_again)
{
  static const char *const names[] = {"a", "b"};
  store_list_result r;
  sc_errbuf eb;
  tmp t;
  store *st;
  st = open_with(&t, NULL, 0, names, 2);
  CHECK(st);
  CHECK_OK(prime(st));
  CHECK_OK(store_list(st, &all_opts, &r, &eb));
  store_list_result_free(&r);
  CHECK_INT(sq_cache_count(sq(st)), 2);
  /* a write through the store: a new revision */
  CHECK_OK(write_status(st, "a", "sb-new"));
  CHECK_OK(store_list(st, &all_opts, &r, &eb));
  CHECK_STR(listed_sandbox(&r, "a"), "sb-new");
  store_list_result_free(&r);
  /* another tool rewriting the row without a new revision: the content
   * differs, so it is decoded again */
  CHECK_INT(sql_exec(t.path, "UPDATE objects SET status = "
                     "'{\"phase\":\"Running\",\"sandboxID\":\"sb-raw\"}' "
                     "WHERE name = 'b'"), SQLITE_OK);
  CHECK_OK(store_list(st, &all_opts, &r, &eb));
  CHECK_STR(listed_sandbox(&r, "b"), "sb-raw");
  CHECK_STR(listed_sandbox(&r, "a"), "sb-new");
  store_list_result_free(&r);
  /* and a get sees it too (the compare-and-set reads the same way) */
  {
    session *got = NULL;
    CHECK_INT(sql_exec(t.path, "UPDATE objects SET generation = 7 "
                       "WHERE name = 'b'"), SQLITE_OK);
    CHECK_OK(store_get(st, "ns", "b", &got, &eb));
    CHECK_INT(got->meta.generation, 7);
    session_free(got);
  }
  store_close(st);
  tmp_clean(&t);
}

TEST(decode_cache_deleted_row_leaves)
{
  static const char *const names[] = {"a", "b", "c"};
  store_list_result r;
  store_list_opts live = {NULL, false, false};
  sc_errbuf eb;
  tmp t;
  store *st;
  st = open_with(&t, NULL, 0, names, 3);
  CHECK(st);
  CHECK_OK(prime(st));
  CHECK_OK(store_list(st, &all_opts, &r, &eb));
  store_list_result_free(&r);
  CHECK_INT(sq_cache_count(sq(st)), 3);
  /* a purge through the store drops its entry at once (its status
   * written first: a tombstone is held only for an object a controller
   * took on) */
  CHECK_OK(purge_taken_on(st, "a"));
  CHECK_INT(sq_cache_count(sq(st)), 2);
  /* a row removed by another process goes at the next full list */
  CHECK_INT(sql_exec(t.path, "DELETE FROM objects WHERE name = 'b'"),
            SQLITE_OK);
  CHECK_OK(store_list(st, &live, &r, &eb));
  CHECK_INT(r.n, 1);
  store_list_result_free(&r);
  CHECK_OK(store_list(st, &all_opts, &r, &eb));
  CHECK_INT(r.n, 1);
  CHECK(listed_sandbox(&r, "c") != NULL);
  store_list_result_free(&r);
  CHECK_INT(sq_cache_count(sq(st)), 1);
  store_close(st);
  tmp_clean(&t);
}

TEST(decode_cache_new_uid_not_stale)
{
  static const char *const names[] = {"a"};
  store_list_result r;
  sc_errbuf eb;
  char *uid1;
  tmp t;
  store *st;
  st = open_with(&t, NULL, 0, names, 1);
  CHECK(st);
  CHECK_OK(prime(st));
  CHECK_OK(store_list(st, &all_opts, &r, &eb));
  CHECK_INT(r.n, 1);
  uid1 = strdup(r.items[0]->meta.uid);
  store_list_result_free(&r);
  /* taken on, deleted, purged and created again with the same name */
  CHECK_OK(purge_taken_on(st, "a"));
  CHECK_OK(apply_names(st, names, 1));
  CHECK_OK(store_list(st, &all_opts, &r, &eb));
  CHECK_INT(r.n, 1);
  CHECK(strcmp(r.items[0]->meta.uid, uid1));
  CHECK_INT(r.items[0]->meta.deletion_timestamp, 0);
  store_list_result_free(&r);
  /* a row whose uid alone changed (same revision, same columns) */
  CHECK_INT(sql_exec(t.path, "UPDATE objects SET uid = "
                     "'11111111-2222-4333-8444-555555555555'"), SQLITE_OK);
  CHECK_OK(store_list(st, &all_opts, &r, &eb));
  CHECK_INT(r.n, 1);
  CHECK_STR(r.items[0]->meta.uid, "11111111-2222-4333-8444-555555555555");
  store_list_result_free(&r);
  free(uid1);
  store_close(st);
  tmp_clean(&t);
}

/* --- group commit --- */

typedef struct answer {
  int calls;
  sc_err err;
  char msg[SC_ERRBUF_SIZE];
  char *new_version;
} answer;

static void on_answer(store_reply *rep, void *ud)
{
  answer *a = ud;
  a->calls++;
  a->err = rep->err;
  snprintf(a->msg, sizeof(a->msg), "%s", rep->message);
  a->new_version = rep->new_version;
  rep->new_version = NULL;
}

static int answered(const answer *a, int n)
{
  int i, k = 0;
  for(i = 0; i < n; i++)
    k += a[i].calls;
  return k;
}

static void run_until(struct event_base *b, const answer *a, int n)
{
  int i;
  for(i = 0; i < 200 && answered(a, n) < n; i++)
    event_base_loop(b, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

/* queues a status write of ns/name (Running on sandbox) at version,
 * answered into *a */
static sc_err queue_status(store *st, const char *name, const char *version,
                           const char *sandbox, answer *a)
{
  session_status ss;
  sc_errbuf eb;
  sc_err err;
  status_running(&ss, sandbox);
  err = store_update_status_async(st, "ns", name, version, &ss, on_answer, a,
                                  &eb);
  if(err)
    fprintf(stderr, "  update status async: %s\n", eb.msg);
  session_status_clear(&ss);
  return err;
}

/* a store on t holding ns/a (its version in *va, the caller frees) with
 * a status write of a (Running on sb-a) queued, answered into *a; NULL
 * on any failure */
static store *open_queued(tmp *t, struct event_base *b, char **va,
                          answer *a)
{
  static const char *const names[] = {"a"};
  store *st = open_with(t, b, 0, names, 1);
  memset(a, 0, sizeof(*a));
  if(st)
    *va = version_of(st, "a");
  if(st && (!*va || queue_status(st, "a", *va, "sb-a", a))) {
    store_close(st);
    st = NULL;
  }
  return st;
}

TEST(group_commit_each_caller_own_result)
{
  static const char *const names[] = {"a", "b", "c"};
  struct event_base *b = event_base_new();
  store_list_result r;
  answer a[5];
  sc_errbuf eb;
  char *va, *vb, *vc;
  uint64_t groups;
  tmp t;
  store *st;
  int i;
  CHECK(b);
  st = open_with(&t, b, 0, names, 3);
  CHECK(st);
  va = version_of(st, "a");
  vb = version_of(st, "b");
  vc = version_of(st, "c");
  CHECK(va && vb && vc);
  memset(a, 0, sizeof(a));
  groups = sq(st)->group_commits;
  /* queued in one turn: a (right), b (stale: a conflict), c (right),
   * a missing object, and a second write of a with a's old version
   * (a conflict: the first write of the group moved it) */
  CHECK_OK(queue_status(st, "a", va, "sb-a", &a[0]));
  CHECK_OK(queue_status(st, "b", "1", "sb-b", &a[1]));
  CHECK_OK(queue_status(st, "c", vc, "sb-c", &a[2]));
  CHECK_OK(queue_status(st, "zz", vc, "sb-c", &a[3]));
  CHECK_OK(queue_status(st, "a", va, "sb-a2", &a[4]));
  CHECK_INT(answered(a, 5), 0); /* never from inside the call */
  CHECK_INT((int)store_async_inflight(st), 5);
  run_until(b, a, 5);
  for(i = 0; i < 5; i++)
    CHECK_INT(a[i].calls, 1);
  CHECK_INT((int)store_async_inflight(st), 0);
  CHECK_INT(a[0].err, SC_OK);
  CHECK_INT(a[1].err, SC_ERR_CONFLICT);
  CHECK_MSG(strstr(a[1].msg, "resourceVersion"), "msg: %s", a[1].msg);
  CHECK_INT(a[2].err, SC_OK);
  CHECK_INT(a[3].err, SC_ERR_NOT_FOUND);
  CHECK_INT(a[4].err, SC_ERR_CONFLICT);
  CHECK(a[0].new_version && a[2].new_version);
  CHECK(!a[1].new_version && !a[3].new_version && !a[4].new_version);
  /* one transaction held the group */
  CHECK_INT((long long)(sq(st)->group_commits - groups), 1);
  CHECK_OK(store_list(st, &all_opts, &r, &eb));
  CHECK_STR(listed_sandbox(&r, "a"), "sb-a");
  CHECK_STR(listed_sandbox(&r, "b"), "");
  CHECK_STR(listed_sandbox(&r, "c"), "sb-c");
  CHECK_STR(r.items[0]->meta.resource_version, a[0].new_version);
  CHECK_STR(r.items[2]->meta.resource_version, a[2].new_version);
  store_list_result_free(&r);
  for(i = 0; i < 5; i++)
    free(a[i].new_version);
  free(va);
  free(vb);
  free(vc);
  store_close(st);
  event_base_free(b);
  tmp_clean(&t);
}

TEST(group_commit_seen_by_the_next_call)
{
  struct event_base *b = event_base_new();
  session *got = NULL;
  answer a[1];
  sc_errbuf eb;
  char *va = NULL;
  tmp t;
  store *st;
  CHECK(b);
  st = open_queued(&t, b, &va, &a[0]);
  CHECK(st);
  /* a call made after the queued write sees it, before any answer */
  CHECK_OK(store_get(st, "ns", "a", &got, &eb));
  CHECK_STR(got->status.sandbox_id, "sb-a");
  CHECK_INT(a[0].calls, 0);
  run_until(b, a, 1);
  CHECK_INT(a[0].err, SC_OK);
  CHECK_STR(a[0].new_version, got->meta.resource_version);
  session_free(got);
  free(a[0].new_version);
  free(va);
  store_close(st);
  event_base_free(b);
  tmp_clean(&t);
}

TEST(group_commit_busy_fails_each_none_written)
{
  static const char *const names[] = {"a", "b"};
  struct event_base *b = event_base_new();
  sqlite3 *other = NULL;
  answer a[2];
  sc_errbuf eb;
  char *va, *vb;
  tmp t;
  store *st;
  session *got = NULL;
  CHECK(b);
  st = open_with(&t, b, 50, names, 2);
  CHECK(st);
  va = version_of(st, "a");
  vb = version_of(st, "b");
  CHECK_INT(lock_writes(t.path, &other), SQLITE_OK);
  memset(a, 0, sizeof(a));
  CHECK_OK(queue_status(st, "a", va, "sb", &a[0]));
  CHECK_OK(queue_status(st, "b", vb, "sb", &a[1]));
  run_until(b, a, 2);
  CHECK_INT(a[0].err, SC_ERR_BUSY);
  CHECK_INT(a[1].err, SC_ERR_BUSY);
  CHECK(a[0].msg[0] && a[1].msg[0]);
  CHECK_INT(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(other);
  CHECK_OK(store_get(st, "ns", "a", &got, &eb));
  CHECK(!got->status.sandbox_id);
  CHECK_STR(got->meta.resource_version, va);
  session_free(got);
  free(va);
  free(vb);
  store_close(st);
  event_base_free(b);
  tmp_clean(&t);
}

TEST(group_commit_close_writes_the_queue)
{
  struct event_base *b = event_base_new();
  session *got = NULL;
  answer a[1];
  sc_errbuf eb;
  char *va = NULL;
  tmp t;
  store *st;
  CHECK(b);
  st = open_queued(&t, b, &va, &a[0]);
  CHECK(st);
  store_close(st); /* the answer is abandoned; the write is not */
  event_base_loop(b, EVLOOP_ONCE | EVLOOP_NONBLOCK);
  CHECK_INT(a[0].calls, 0);
  st = open_store(&t, NULL);
  CHECK(st);
  CHECK_OK(store_get(st, "ns", "a", &got, &eb));
  CHECK_STR(got->status.sandbox_id, "sb-a");
  session_free(got);
  free(va);
  store_close(st);
  event_base_free(b);
  tmp_clean(&t);
}

/* --- the watch and this process's own writes --- */

typedef struct seen {
  int n;
  char json[8][512];
  long long revs[8];
} seen;

static void on_event(const store_event *ev, void *ud)
{
  seen *s = ud;
  char *j = NULL;
  if(s->n >= 8)
    return;
  if(!session_to_json(ev->obj, &j))
    snprintf(s->json[s->n], sizeof(s->json[0]), "%s", j);
  free(j);
  s->revs[s->n] = strtoll(ev->revision, NULL, 10);
  s->n++;
}

/* the history text of revision rev as stored ("" when none) */
static void history_raw(const char *path, long long rev, char *out,
                        size_t len)
{
  sqlite3 *db = NULL;
  sqlite3_stmt *q = NULL;
  out[0] = '\0';
  if(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
     sqlite3_prepare_v2(db, "SELECT object FROM history WHERE revision = ?1",
                        -1, &q, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(q, 1, rev);
    if(sqlite3_step(q) == SQLITE_ROW)
      snprintf(out, len, "%s", (const char *)sqlite3_column_text(q, 0));
  }
  sqlite3_finalize(q);
  sqlite3_close(db);
}

/* the history row of revision rev, decoded and encoded again ("" when
 * none) */
static void history_json(const char *path, long long rev, char *out,
                         size_t len)
{
  char txt[4096];
  session *o = NULL;
  char *j = NULL;
  sc_errbuf eb;
  out[0] = '\0';
  history_raw(path, rev, txt, sizeof(txt));
  if(txt[0] && !session_from_json(txt, strlen(txt), &o, &eb) &&
     !session_to_json(o, &j))
    snprintf(out, len, "%s", j);
  free(j);
  session_free(o);
}

/* dispatches b in turns of 5 ms until s holds n events (2 s at most) */
static void wait_seen(struct event_base *b, const seen *s, int n)
{
  int i;
  for(i = 0; i < 400 && s->n < n; i++) {
    struct timeval tv = {0, 5000};
    event_base_loopexit(b, &tv);
    event_base_dispatch(b);
  }
}

/* 0 when each of the first n events of s is the object its history row
 * in the file at path holds */
static int seen_is_history(const seen *s, int n, const char *path)
{
  char want[512];
  int i;
  for(i = 0; i < n; i++) {
    history_json(path, s->revs[i], want, sizeof(want));
    if(!want[0] || strcmp(s->json[i], want)) {
      fprintf(stderr, "  event %d: %s\n  history: %s\n", i, s->json[i],
              want);
      return -1;
    }
  }
  return 0;
}

TEST(watch_hands_out_own_writes_undecoded)
{
  static const char *const names[] = {"a", "b"};
  struct event_base *b = event_base_new();
  store *st, *other;
  store_watch *w = NULL;
  seen s;
  sc_errbuf eb;
  uint64_t hits;
  tmp t;
  CHECK(b);
  st = open_with(&t, b, 0, names, 2);
  CHECK(st);
  other = open_store(&t, NULL); /* another writer (as another process) */
  CHECK(other);
  memset(&s, 0, sizeof(s));
  CHECK_OK(store_watch_start(st, NULL, on_event, NULL, &s, &w, &eb));
  hits = sq(st)->own_hits;
  CHECK_OK(write_status(st, "a", "sb-a1"));
  CHECK_OK(write_status(other, "b", "sb-b1"));
  CHECK_OK(write_status(st, "a", "sb-a2"));
  /* not plain ASCII: decoded as any other row (the decoder is the judge
   * of such bytes) */
  CHECK_OK(write_status(st, "a", "sb-\xc3\xa9"));
  wait_seen(b, &s, 4);
  CHECK_INT(s.n, 4);
  /* two writes of this store were not decoded; the other's and the
   * non-ASCII one were */
  CHECK_INT((long long)(sq(st)->own_hits - hits), 2);
  /* and every event is the object the history row holds */
  CHECK_OK(seen_is_history(&s, 4, t.path));
  CHECK_INT(sq(st)->n_own, 0); /* passed by the only watch: forgotten */
  store_watch_stop(w);
  store_close(other);
  store_close(st);
  event_base_free(b);
  tmp_clean(&t);
}

/* A queue longer than one transaction (512) is written one transaction
 * a turn of the loop: the first 512 are answered before the rest is
 * written (the watch and Cube's answers are not held up behind them). */
#define LONGQ 600
TEST(group_commit_one_transaction_a_turn)
{
  struct event_base *b = event_base_new();
  session *objs[LONGQ];
  store_list_result r;
  static answer a[LONGQ];
  sc_errbuf eb;
  uint64_t groups;
  tmp t;
  store *st;
  int i;
  CHECK(b);
  CHECK(!tmp_make(&t));
  st = open_store(&t, b);
  CHECK(st);
  for(i = 0; i < LONGQ; i++) {
    char name[16];
    snprintf(name, sizeof(name), "s%03d", i);
    objs[i] = mk("ns", name);
  }
  CHECK_OK(store_apply(st, objs, LONGQ, NULL, &eb));
  for(i = 0; i < LONGQ; i++)
    session_free(objs[i]);
  CHECK_OK(store_list(st, &all_opts, &r, &eb));
  CHECK_INT((long long)r.n, LONGQ);
  memset(a, 0, sizeof(a));
  groups = sq(st)->group_commits;
  for(i = 0; i < LONGQ; i++)
    CHECK_OK(queue_status(st, r.items[i]->meta.name,
                          r.items[i]->meta.resource_version, "sb", &a[i]));
  store_list_result_free(&r);
  event_base_loop(b, EVLOOP_ONCE | EVLOOP_NONBLOCK);
  CHECK_INT((long long)(sq(st)->group_commits - groups), 1);
  CHECK_INT(answered(a, LONGQ), 512);
  CHECK_INT((int)store_async_inflight(st), LONGQ - 512);
  run_until(b, a, LONGQ);
  CHECK_INT(answered(a, LONGQ), LONGQ);
  CHECK_INT((long long)(sq(st)->group_commits - groups), 2);
  for(i = 0; i < LONGQ; i++) {
    CHECK_INT(a[i].err, SC_OK);
    free(a[i].new_version);
  }
  store_close(st);
  event_base_free(b);
  tmp_clean(&t);
}

/* --- the group's writes: what they run --- */

typedef struct stmt_count {
  int meta_updates;          /* statements writing the meta row */
  int whole_rows;            /* INSERT OR REPLACE of a whole object row */
} stmt_count;

static int on_trace(unsigned what, void *ud, void *p, void *x)
{
  stmt_count *c = ud;
  const char *sql = sqlite3_sql((sqlite3_stmt *)p);
  (void)what;
  (void)x;
  if(sql && !strncmp(sql, "UPDATE meta", 11))
    c->meta_updates++;
  if(sql && !strncmp(sql, "INSERT OR REPLACE INTO objects", 30))
    c->whole_rows++;
  return 0;
}

/* the text of column col of ns/name's row ("" when none) */
static void column_of(const char *path, const char *col, const char *name,
                      char *out, size_t len)
{
  sqlite3 *db = NULL;
  sqlite3_stmt *q = NULL;
  char sql[200];
  out[0] = '\0';
  snprintf(sql, sizeof(sql), "SELECT %s FROM objects WHERE namespace = 'ns'"
           " AND name = ?1", col);
  if(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
     sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK) {
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    if(sqlite3_step(q) == SQLITE_ROW)
      snprintf(out, len, "%s", (const char *)sqlite3_column_text(q, 0));
  }
  sqlite3_finalize(q);
  sqlite3_close(db);
}

/* A group writes the meta row once (not once a write) and a status write
 * only the status column (the spec and the labels stay the bytes they
 * were); the revisions stay contiguous around a write that lost its
 * compare-and-set, the status column is what session_status_to_json()
 * gives, every history entry decodes to what the watch handed out, and
 * the savepoints' journal is in memory. */
TEST(group_commit_meta_once_status_column_only)
{
  static const char *const names[] = {"a", "b", "c", "d"};
  struct event_base *b = event_base_new();
  store_watch *w = NULL;
  session_status ss;
  session_condition cond;
  stmt_count cnt;
  answer a[4];
  sc_errbuf eb;
  char *v[4], spec0[512], spec1[512], col[1024], *enc = NULL;
  int64_t rev = 0, temp_store = 0;
  seen sn;
  tmp t;
  store *st;
  int i;
  CHECK(b);
  st = open_with(&t, b, 0, names, 4);
  CHECK(st);
  for(i = 0; i < 4; i++)
    v[i] = version_of(st, names[i]);
  column_of(t.path, "spec", "a", spec0, sizeof(spec0));
  CHECK(spec0[0]);
  memset(&sn, 0, sizeof(sn));
  CHECK_OK(store_watch_start(st, NULL, on_event, NULL, &sn, &w, &eb));
  memset(a, 0, sizeof(a));
  memset(&cnt, 0, sizeof(cnt));
  sqlite3_trace_v2(sq(st)->db, SQLITE_TRACE_STMT, on_trace, &cnt);
  /* a, c and d right; b stale (a conflict, in the middle) */
  for(i = 0; i < 4; i++) {
    status_running(&ss, names[i]);
    memset(&cond, 0, sizeof(cond));
    cond.type = "Ready";
    cond.status = "True";
    cond.reason = "SandboxRunning";
    cond.message = "a/b \"quoted\"";
    cond.last_transition_time = 1764600000000LL;
    ss.end_at = 1764600900123LL;
    CHECK_OK(session_status_set_condition(&ss, &cond));
    CHECK_OK(store_update_status_async(st, "ns", names[i], i == 1 ? "1" : v[i],
                                       &ss, on_answer, &a[i], &eb));
    if(i == 3)
      CHECK_OK(session_status_to_json(&ss, &enc));
    session_status_clear(&ss);
  }
  run_until(b, a, 4);
  sqlite3_trace_v2(sq(st)->db, 0, NULL, NULL);
  CHECK_INT(a[0].err, SC_OK);
  CHECK_INT(a[1].err, SC_ERR_CONFLICT);
  CHECK_INT(a[2].err, SC_OK);
  CHECK_INT(a[3].err, SC_OK);
  CHECK_INT(cnt.meta_updates, 1);
  CHECK_INT(cnt.whole_rows, 0);
  /* contiguous: a, c, d took the next three revisions */
  CHECK_INT(strtoll(a[2].new_version, NULL, 10),
            strtoll(a[0].new_version, NULL, 10) + 1);
  CHECK_INT(strtoll(a[3].new_version, NULL, 10),
            strtoll(a[0].new_version, NULL, 10) + 2);
  CHECK_OK(sq_read_revision(sq(st), &rev, NULL, &eb));
  CHECK_INT(rev, strtoll(a[3].new_version, NULL, 10));
  column_of(t.path, "spec", "a", spec1, sizeof(spec1));
  CHECK_STR(spec1, spec0);
  column_of(t.path, "status", "d", col, sizeof(col));
  CHECK(enc);
  CHECK_STR(col, enc);
  column_of(t.path, "revision", "d", col, sizeof(col));
  CHECK_STR(col, a[3].new_version);
  /* the watch: three events, each the object its history row holds */
  wait_seen(b, &sn, 3);
  CHECK_INT(sn.n, 3);
  CHECK_OK(seen_is_history(&sn, 3, t.path));
  CHECK_INT(sn.revs[2], rev);
  /* the spliced history text: the bytes session_to_json() gives */
  {
    session *d = NULL;
    char *dj = NULL;
    CHECK_OK(store_get(st, "ns", "d", &d, &eb));
    CHECK_OK(session_to_json(d, &dj));
    history_raw(t.path, rev, col, sizeof(col));
    CHECK_STR(col, dj);
    free(dj);
    session_free(d);
    /* an empty status (a synchronous write): "{}", left out of the whole */
    memset(&ss, 0, sizeof(ss));
    CHECK_OK(store_update_status(st, "ns", "d", a[3].new_version, &ss, &dj,
                                 &eb));
    column_of(t.path, "status", "d", col, sizeof(col));
    CHECK_STR(col, "{}");
    CHECK_OK(store_get(st, "ns", "d", &d, &eb));
    CHECK_STR(d->meta.resource_version, dj);
    free(dj);
    CHECK_OK(session_to_json(d, &dj));
    CHECK(!strstr(dj, "\"status\""));
    history_raw(t.path, strtoll(d->meta.resource_version, NULL, 10), col,
                sizeof(col));
    CHECK_STR(col, dj);
    free(dj);
    session_free(d);
  }
  CHECK_OK(sq_pragma_int(sq(st), "PRAGMA temp_store", &temp_store, &eb));
  CHECK_INT(temp_store, 2); /* MEMORY */
  store_watch_stop(w);
  for(i = 0; i < 4; i++) {
    free(v[i]);
    free(a[i].new_version);
  }
  free(enc);
  store_close(st);
  event_base_free(b);
  tmp_clean(&t);
}

/* --- apply: the same key twice among many --- */

#define MANY 20000

TEST(apply_duplicate_found_among_20000)
{
  session **objs = calloc(MANY, sizeof(*objs));
  store_list_result r;
  sc_errbuf eb;
  tmp t;
  store *st;
  size_t i;
  CHECK(objs);
  CHECK(!tmp_make(&t));
  st = open_store(&t, NULL);
  CHECK(st);
  for(i = 0; i < MANY; i++) {
    char name[32];
    snprintf(name, sizeof(name), "s%05zu", i == MANY - 1 ? (size_t)7 : i);
    objs[i] = mk("ns", name);
  }
  eb.msg[0] = '\0';
  CHECK_INT(store_apply(st, objs, MANY, NULL, &eb), SC_ERR_INVALID);
  CHECK_STR(eb.msg, "apply: objects[7] and objects[19999] are both "
                    "ns/s00007");
  CHECK_OK(store_list(st, &all_opts, &r, &eb));
  CHECK_INT(r.n, 0); /* nothing written */
  store_list_result_free(&r);
  /* the same names in another namespace are other keys */
  free(objs[MANY - 1]->meta.namespace_);
  objs[MANY - 1]->meta.namespace_ = strdup("other");
  CHECK_OK(store_apply(st, objs, MANY, NULL, &eb));
  CHECK_OK(store_list(st, &all_opts, &r, &eb));
  CHECK_INT(r.n, MANY);
  store_list_result_free(&r);
  for(i = 0; i < MANY; i++)
    session_free(objs[i]);
  free(objs);
  store_close(st);
  tmp_clean(&t);
}

/* sessionctl's reading: four files of 5,000, the last one repeating a
 * name of the first; the error names both places */
TEST(manifest_duplicate_found_among_20000_files)
{
  manifest_set set;
  char path[400], want[600];
  tmp t;
  int f, i;
  FILE *fp;
  CHECK(!tmp_make(&t));
  for(f = 0; f < 4; f++) {
    snprintf(path, sizeof(path), "%s/part-%d.yaml", t.dir, f);
    fp = fopen(path, "w");
    CHECK(fp);
    fprintf(fp, "apiVersion: v1\nkind: List\nitems:\n");
    for(i = 0; i < 5000; i++) {
      int k = f * 5000 + i;
      if(f == 3 && i == 4321)
        k = 1234; /* line 4 + 4321 of part-3 repeats line 4 + 1234 of part-0 */
      fprintf(fp, "- {apiVersion: lea.io/v1alpha1, kind: Session, "
              "metadata: {name: s%d}, spec: {template: t}}\n", k);
    }
    fclose(fp);
  }
  memset(&set, 0, sizeof(set));
  CHECK_OK(manifest_read_path(t.dir, NULL, &set));
  CHECK_INT(set.n_errors, 1);
  CHECK_INT(set.n, MANY - 1);
  snprintf(want, sizeof(want), "%s/part-3.yaml:%d:", t.dir, 4 + 4321);
  CHECK_MSG(!strncmp(set.errors[0], want, strlen(want)), "error: %s",
            set.errors[0]);
  snprintf(want, sizeof(want), "duplicate object default/s1234, first at "
           "%s/part-0.yaml:%d", t.dir, 4 + 1234);
  CHECK_MSG(strstr(set.errors[0], want), "error: %s", set.errors[0]);
  manifest_set_free(&set);
  tmp_clean(&t);
}

TEST_LIST = {
  T(stmt_cache_prepares_once),
  T(stmt_cache_reused_after_an_error),
  T(stmt_cache_reused_after_busy),
  T(stmt_cache_finalized_at_close),
  T(decode_cache_serves_unchanged_rows),
  T(decode_cache_shared_list_hands_out_references),
  T(decode_cache_changed_row_decoded_again),
  T(last_list_handed_out_until_the_file_changes),
  T(decode_cache_deleted_row_leaves),
  T(decode_cache_new_uid_not_stale),
  T(group_commit_each_caller_own_result),
  T(group_commit_seen_by_the_next_call),
  T(group_commit_busy_fails_each_none_written),
  T(group_commit_close_writes_the_queue),
  T(watch_hands_out_own_writes_undecoded),
  T(group_commit_meta_once_status_column_only),
  T(group_commit_one_transaction_a_turn),
  T(apply_duplicate_found_among_20000),
  T(manifest_duplicate_found_among_20000_files),
  {0},
};
TEST_MAIN()
