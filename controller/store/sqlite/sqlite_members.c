/*
 * sqlite_members.c - the SQLite backend's member table (store/members.h):
 * a row per replica that serves the store, for sharding. The version is a
 * renewal counter: every renewal adds one in the same write transaction
 * as the read of every row, so two readers never see a renewal undone.
 * The wall-clock column is informational (sessionctl, a human): liveness
 * is judged by readers from the counter moving, on their own monotonic
 * clocks (loop/shard.h). The table is made on the first renewal (CREATE
 * TABLE IF NOT EXISTS, as the controller table is): a store file that
 * never served a sharded controller has none. See sqlite_int.h.
 *
 * Only the connection (s->db) and sq_fail() of the backend are used, so
 * the statement helpers of sqlite_stmt.c may change without this file.
 */
#include "controller/store/members_int.h"
#include "controller/store/sqlite/sqlite_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char sq_members_table[] =
  "CREATE TABLE IF NOT EXISTS members("
  " id TEXT PRIMARY KEY,"          /* the replica's member ID */
  " beat INTEGER NOT NULL,"        /* renewals: the version */
  " period_ms INTEGER NOT NULL,"   /* its renewal period */
  " renewed_ms INTEGER NOT NULL"   /* wall clock, informational only */
  ")";

static sc_err run(sq_store *s, const char *sql, const char *what,
                  sc_errbuf *eb)
{
  int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
  return rc == SQLITE_OK ? SC_OK : sq_fail(s, rc, what, eb);
}

static sc_err prep(sq_store *s, const char *sql, sqlite3_stmt **q,
                   const char *what, sc_errbuf *eb)
{
  int rc = sqlite3_prepare_v2(s->db, sql, -1, q, NULL);
  return rc == SQLITE_OK ? SC_OK : sq_fail(s, rc, what, eb);
}

static sc_err read_all(sq_store *s, store_member_list *out, sc_errbuf *eb)
{
  static const char what[] = "list the members";
  sqlite3_stmt *q = NULL;
  size_t cap = 0;
  sc_err err = prep(s, "SELECT id, beat, period_ms FROM members ORDER BY id",
                    &q, what, eb);
  int rc;
  while(!err && (rc = sqlite3_step(q)) == SQLITE_ROW) {
    const char *id = (const char *)sqlite3_column_text(q, 0);
    char ver[24];
    store_member *m;
    if(out->n == cap) {
      size_t nc = cap ? cap * 2 : 8;
      store_member *ni = realloc(out->items, nc * sizeof(*ni));
      if(!ni) {
        err = sc_errf(eb, SC_ERR_NOMEM, "out of memory");
        break;
      }
      out->items = ni;
      cap = nc;
    }
    snprintf(ver, sizeof(ver), "%lld",
             (long long)sqlite3_column_int64(q, 1));
    m = &out->items[out->n];
    m->id = strdup(id ? id : "");
    m->version = strdup(ver);
    m->period_ms = sqlite3_column_int64(q, 2);
    if(!m->id || !m->version) {
      free(m->id);
      free(m->version);
      err = sc_errf(eb, SC_ERR_NOMEM, "out of memory");
      break;
    }
    out->n++;
  }
  if(!err && rc != SQLITE_DONE)
    err = sq_fail(s, rc, what, eb);
  sqlite3_finalize(q);
  return err;
}

sc_err sq_members_renew(store *base, const char *id, int64_t period_ms,
                        store_member_list *out, sc_errbuf *eb)
{
  static const char what[] = "renew this replica's member row";
  sq_store *s = (sq_store *)base;
  sqlite3_stmt *q = NULL;
  sc_err err;
  int rc;
  memset(out, 0, sizeof(*out));
  err = run(s, "BEGIN IMMEDIATE", what, eb);
  if(err)
    return err;
  err = run(s, sq_members_table, what, eb);
  if(!err)
    err = prep(s, "INSERT INTO members(id, beat, period_ms, renewed_ms)"
                  " VALUES(?1, 1, ?2, ?3) ON CONFLICT(id) DO UPDATE SET"
                  " beat = beat + 1, period_ms = ?2, renewed_ms = ?3",
               &q, what, eb);
  if(!err) {
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, period_ms);
    sqlite3_bind_int64(q, 3, sctime_wall_ms());
    rc = sqlite3_step(q);
    if(rc != SQLITE_DONE)
      err = sq_fail(s, rc, what, eb);
    sqlite3_finalize(q);
  }
  if(!err)
    err = read_all(s, out, eb);
  if(!err) {
    rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
    if(rc != SQLITE_OK)
      err = sq_fail(s, rc, what, eb);
  }
  if(err) {
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    store_member_list_clear(out);
  }
  return err;
}

sc_err sq_members_remove(store *base, const char *id, const char *version,
                         sc_errbuf *eb)
{
  static const char what[] = "remove a member row";
  sq_store *s = (sq_store *)base;
  sqlite3_stmt *q = NULL;
  int64_t tables = 0;
  sc_err err;
  int rc;
  err = prep(s, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                " AND name = 'members'", &q, what, eb);
  if(err)
    return err;
  rc = sqlite3_step(q);
  if(rc == SQLITE_ROW)
    tables = sqlite3_column_int64(q, 0);
  else
    err = sq_fail(s, rc, what, eb);
  sqlite3_finalize(q);
  if(err || !tables)
    return err; /* no table: no row */
  err = prep(s, version ? "DELETE FROM members WHERE id = ?1 AND beat = ?2"
                        : "DELETE FROM members WHERE id = ?1",
             &q, what, eb);
  if(err)
    return err;
  sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
  if(version) {
    int64_t v = 0;
    if(store_rev_parse(version, &v)) {
      sqlite3_finalize(q);
      return sc_errf(eb, SC_ERR_INVALID, "%s: member version \"%s\" is not "
                     "a number", s->label, version);
    }
    sqlite3_bind_int64(q, 2, v);
  }
  rc = sqlite3_step(q);
  if(rc != SQLITE_DONE)
    err = sq_fail(s, rc, what, eb);
  sqlite3_finalize(q);
  return err;
}
