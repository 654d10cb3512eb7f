/*
 * sqlite_stmt.c - the SQLite backend's errors, statements and
 * transactions: an SQLite result code as an sc_err with a message naming
 * the store and the step, the statement cache, BEGIN IMMEDIATE / COMMIT /
 * ROLLBACK, and the meta row's counters. See sqlite_int.h.
 */
#include "controller/store/sqlite/sqlite_int.h"

#include <stdlib.h>
#include <string.h>

/* --- errors and statements --- */

sc_err sq_fail(sq_store *s, int rc, const char *what, sc_errbuf *eb)
{
  sc_err e;
  switch(rc & 0xff) {
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    return sc_errf(eb, SC_ERR_BUSY,
                   "%s: %s: the database stayed locked by another "
                   "connection for more than %d ms (%s)",
                   s->label, what, s->busy_ms, sqlite3_errmsg(s->db));
  case SQLITE_NOMEM:
    e = SC_ERR_NOMEM;
    break;
  case SQLITE_NOTADB:
    return sc_errf(eb, SC_ERR_INVALID,
                   "%s: %s: the file is not an SQLite database (left "
                   "untouched)", s->label, what);
  case SQLITE_CORRUPT:
  case SQLITE_IOERR:
  case SQLITE_FULL:
  case SQLITE_CANTOPEN:
  case SQLITE_READONLY:
  case SQLITE_PERM:
  case SQLITE_PROTOCOL:
    e = SC_ERR_IO;
    break;
  case SQLITE_CONSTRAINT:
  case SQLITE_MISMATCH:
    e = SC_ERR_INVALID;
    break;
  default:
    e = SC_ERR_INTERNAL;
  }
  return sc_errf(eb, e, "%s: %s: %s", s->label, what,
                 s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
}

/* --- the statement cache --- */

/* The cached statement of sql, or NULL (pointer first: the SQL texts are
 * literals; then the text, for a copy of the same literal). */
static sq_stmt *cache_find(sq_store *s, const char *sql)
{
  size_t i;
  for(i = 0; i < s->n_stmts; i++)
    if(s->stmts[i].sql == sql)
      return &s->stmts[i];
  for(i = 0; i < s->n_stmts; i++)
    if(!strcmp(s->stmts[i].sql, sql))
      return &s->stmts[i];
  return NULL;
}

sc_err sq_prep(sq_store *s, const char *sql, sqlite3_stmt **q,
               const char *what, sc_errbuf *eb)
{
  sq_stmt *c = cache_find(s, sql);
  int rc;
  if(c && !c->in_use) {
    c->in_use = true;
    *q = c->q;
    return SC_OK;
  }
  rc = sqlite3_prepare_v2(s->db, sql, -1, q, NULL);
  if(rc != SQLITE_OK) {
    sqlite3_finalize(*q);
    *q = NULL;
    return sq_fail(s, rc, what, eb);
  }
  /* In use already (a statement nested in itself): this one is used
   * once. Else kept, when there is room. */
  if(!c && s->n_stmts < SQ_STMT_MAX) {
    c = &s->stmts[s->n_stmts++];
    c->sql = sql;
    c->q = *q;
    c->in_use = true;
  }
  return SC_OK;
}

void sq_release(sq_store *s, sqlite3_stmt *q)
{
  size_t i;
  if(!q)
    return;
  for(i = 0; i < s->n_stmts; i++)
    if(s->stmts[i].q == q) {
      /* reset ends its read of the database (a statement left stepped
       * would hold its snapshot); the result of the last step was
       * already taken */
      (void)sqlite3_reset(q);
      (void)sqlite3_clear_bindings(q);
      s->stmts[i].in_use = false;
      return;
    }
  sqlite3_finalize(q);
}

void sq_stmts_free(sq_store *s)
{
  size_t i;
  for(i = 0; i < s->n_stmts; i++)
    sqlite3_finalize(s->stmts[i].q);
  s->n_stmts = 0;
}

size_t sq_stmts_cached(const sq_store *s)
{
  return s->n_stmts;
}

sc_err sq_prep_once(sq_store *s, const char *sql, sqlite3_stmt **q,
                    const char *what, sc_errbuf *eb)
{
  int rc = sqlite3_prepare_v2(s->db, sql, -1, q, NULL);
  if(rc != SQLITE_OK) {
    sqlite3_finalize(*q);
    *q = NULL;
    return sq_fail(s, rc, what, eb);
  }
  return SC_OK;
}

sc_err sq_exec(sq_store *s, const char *sql, const char *what,
               sc_errbuf *eb)
{
  int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
  return rc == SQLITE_OK ? SC_OK : sq_fail(s, rc, what, eb);
}

sc_err sq_run(sq_store *s, const char *sql, const char *what,
              sc_errbuf *eb)
{
  sqlite3_stmt *q;
  sc_err err = sq_prep(s, sql, &q, what, eb);
  if(err)
    return err;
  return sq_done(s, q, what, eb);
}

/* Run q to completion (no rows expected); gives q back. */
sc_err sq_done(sq_store *s, sqlite3_stmt *q, const char *what,
               sc_errbuf *eb)
{
  int rc = sqlite3_step(q);
  sc_err err = SC_OK;
  if(rc != SQLITE_DONE && rc != SQLITE_ROW)
    err = sq_fail(s, rc, what, eb);
  sq_release(s, q);
  return err;
}

sc_err sq_tx_begin(sq_store *s, const char *what, sc_errbuf *eb)
{
  return sq_run(s, "BEGIN IMMEDIATE", what, eb);
}

/* Commit when err is SC_OK, else (or when the commit fails) roll back. */
sc_err sq_tx_end(sq_store *s, sc_err err, const char *what,
                 sc_errbuf *eb)
{
  if(!err)
    err = sq_run(s, "COMMIT", what, eb);
  if(err && !sqlite3_get_autocommit(s->db)) {
    sc_errbuf ignored;
    (void)sq_run(s, "ROLLBACK", what, &ignored);
    /* the revisions of the rolled-back writes will be given again, to
     * other content: nothing decoded in this transaction may stay */
    sq_cache_clear(s);
  }
  return err;
}

sc_err sq_dup_col(sqlite3_stmt *q, int col, char **out)
{
  const unsigned char *t = sqlite3_column_text(q, col);
  *out = strdup(t ? (const char *)t : "");
  return *out ? SC_OK : SC_ERR_NOMEM;
}

sc_err sq_pragma_int(sq_store *s, const char *sql, int64_t *out,
                     sc_errbuf *eb)
{
  sqlite3_stmt *q;
  sc_err err = sq_prep_once(s, sql, &q, "read the schema", eb);
  int rc;
  if(err)
    return err;
  rc = sqlite3_step(q);
  if(rc == SQLITE_ROW)
    *out = sqlite3_column_int64(q, 0);
  else
    err = sq_fail(s, rc == SQLITE_DONE ? SQLITE_CORRUPT : rc,
                  "read the schema", eb);
  sqlite3_finalize(q);
  return err;
}

/* --- the meta row --- */

sc_err sq_read_revision(sq_store *s, int64_t *rev, int64_t *compacted,
                        sc_errbuf *eb)
{
  sqlite3_stmt *q;
  sc_err err = sq_prep(s, "SELECT revision, compacted FROM meta", &q,
                       "read the revision", eb);
  if(err)
    return err;
  err = sq_step_meta(s, q, "read the revision", eb);
  if(!err) {
    *rev = sqlite3_column_int64(q, 0);
    if(compacted)
      *compacted = sqlite3_column_int64(q, 1);
  }
  sq_release(s, q);
  return err;
}

sc_err sq_step_meta(sq_store *s, sqlite3_stmt *q, const char *what,
                    sc_errbuf *eb)
{
  int rc = sqlite3_step(q);
  if(rc == SQLITE_ROW)
    return SC_OK;
  return rc == SQLITE_DONE
           ? sc_errf(eb, SC_ERR_IO, "%s: the meta row is missing", s->label)
           : sq_fail(s, rc, what, eb);
}
