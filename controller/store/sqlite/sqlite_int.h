/*
 * sqlite_int.h - what the files of the sqlite:PATH backend share (not for
 * users of the store: they include store.h). See docs/store.md.
 *
 * The backend is split by concern:
 *   sqlite.c        open and close, the schema, the file's identity, the
 *                   row codec (columns <-> session) and the backend table
 *   sqlite_stmt.c   errors, the statement cache, transactions, the meta
 *                   counters
 *   sqlite_crud.c   get, list, apply, update spec/status, set annotation,
 *                   delete, purge, and the write every change goes
 *                   through (save)
 *   sqlite_watch.c  the watch: a libevent timer checking the history, and
 *                   this process's own writes it hands out undecoded
 *   sqlite_notify.c the watch's wake-up when the file is written (inotify)
 *   sqlite_name.c   the controller name table (claim, served-by)
 *   sqlite_cache.c  the decode cache (rows unchanged since decoded)
 *   sqlite_group.c  asynchronous status writes, committed in groups
 *
 * Ownership: an sq_store is made by store_sqlite_open() and freed by its
 * close op, which first frees the watches still running (s->watches),
 * writes the queued status writes (their answers dropped), finalizes the
 * cached statements and frees the decode cache.
 * Strings in it are its own. One connection per store
 * (SQLITE_OPEN_NOMUTEX): a store is used from one thread.
 */
#ifndef SC_STORE_SQLITE_INT_H
#define SC_STORE_SQLITE_INT_H

#include "controller/store/backend.h"

#include <sys/types.h>
#include <sqlite3.h>
#include <json-c/json.h>

struct sc_hmap;

/* the columns of an objects row, in the order sq_row_to_session reads */
#define OBJ_COLS                                                          \
  "namespace, name, uid, generation, revision, created_ms, deleted_ms, "  \
  "labels, annotations, spec, status"

typedef struct sq_watch sq_watch; /* sqlite_watch.c */
typedef struct sq_qwrite sq_qwrite; /* sqlite_group.c */

/* A write of this connection, kept for this process's watches: the
 * history text it wrote and the object that text encodes, so that the
 * watch hands the object out instead of decoding the text again
 * (sqlite_watch.c). */
typedef struct sq_own {
  int64_t revision;
  char *whole;               /* the history row's text */
  session *obj;              /* the object as written */
} sq_own;
#define SQ_OWN_MAX 4096      /* kept at most; older ones are decoded */

/* One prepared statement kept for the life of the connection (the
 * statement cache, sqlite_stmt.c). */
#define SQ_STMT_MAX 32
typedef struct sq_stmt {
  const char *sql;           /* the text it was prepared from (a literal) */
  sqlite3_stmt *q;
  bool in_use;               /* handed out by sq_prep, not yet released */
} sq_stmt;

typedef struct sq_store {
  store base;
  sqlite3 *db;
  char *label;               /* "sqlite:PATH", for messages */
  struct event_base *evbase;
  int busy_ms;
  bool relaxed_sync;
  int poll_ms;
  int64_t keep;              /* history rows kept */
  int64_t slack;             /* compaction runs once keep+slack is passed */
  sq_watch *watches;         /* running watches, to free on close */
  char *path;                /* as given, for the identity check */
  dev_t dev;                 /* the file opened (stat before and after */
  ino_t ino;                 /* the open agreed) */
  char *claimed;             /* the controller name claimed, or NULL */
  sq_stmt stmts[SQ_STMT_MAX]; /* the statement cache */
  size_t n_stmts;
  json_tokener *tok;         /* the row codec's, reused for every column */
  struct sc_hmap *cache;     /* the decode cache (sqlite_cache.c) */
  uint64_t cache_seed;
  uint64_t cache_mark;
  uint64_t lists;            /* lists done: the cache fills from the 2nd */
  /* queued asynchronous status writes (sqlite_group.c) */
  sq_qwrite *q;
  size_t n_q, cap_q;
  size_t n_written;          /* q[0 .. n_written) are written */
  size_t n_answering;        /* answers of a taken queue not yet given */
  struct event *qev;         /* the loop's turn that writes and answers */
  uint64_t group_commits;    /* groups committed (for tests) */
  sq_own *own;               /* own writes not yet seen by every watch, */
  size_t n_own;              /* oldest first */
  uint64_t own_hits;         /* events handed out from own (for tests) */
  /* the last complete shared list, handed out again while the file did
   * not change (sqlite_cache.c, sq_last_*): one reference to each object,
   * in list order */
  session **last;
  size_t n_last;
  bool last_ok;              /* last holds a list and the marks below */
  int64_t last_revision;     /* the meta row's revision it was read at */
  int64_t last_dv;           /* PRAGMA data_version then */
  int64_t last_changes;      /* sqlite3_total_changes64() then */
  uint64_t last_hits;        /* lists handed out from last (for tests) */
  bool notify_told;          /* a watch said it polls (sqlite_watch.c) */
} sq_store;

/* --- sqlite_stmt.c: errors, statements, transactions --- */

/* An SQLite result code as an sc_err with "LABEL: what: why" in eb. */
sc_err sq_fail(sq_store *s, int rc, const char *what, sc_errbuf *eb);
/* The statement cache. sq_prep hands out the statement of sql (one SQL
 * statement, a string literal: the cache keeps the pointer), prepared
 * once per connection and kept until the store closes; the caller gives
 * it back with sq_release() on every path (reset and bindings cleared,
 * so it holds no read snapshot and no borrowed text), never with
 * sqlite3_finalize(). A statement asked for while it is handed out
 * already (nested use), or once the cache is full (SQ_STMT_MAX), is
 * prepared for that use alone and finalized by sq_release(). A failed
 * step leaves the statement reusable after sq_release() (BUSY, a
 * constraint, I/O). sq_stmts_free() finalizes them all (close). */
sc_err sq_prep(sq_store *s, const char *sql, sqlite3_stmt **q,
               const char *what, sc_errbuf *eb);
void sq_release(sq_store *s, sqlite3_stmt *q); /* NULL accepted */
void sq_stmts_free(sq_store *s);
size_t sq_stmts_cached(const sq_store *s);   /* for tests */
/* A statement used once (open, the schema): the caller finalizes it. */
sc_err sq_prep_once(sq_store *s, const char *sql, sqlite3_stmt **q,
                    const char *what, sc_errbuf *eb);
/* sqlite3_exec of sql (several statements allowed; not cached). */
sc_err sq_exec(sq_store *s, const char *sql, const char *what,
               sc_errbuf *eb);
/* One statement run through the cache, no rows expected. */
sc_err sq_run(sq_store *s, const char *sql, const char *what,
              sc_errbuf *eb);
/* Run q (from sq_prep) to completion (no rows expected); releases q. */
sc_err sq_done(sq_store *s, sqlite3_stmt *q, const char *what,
               sc_errbuf *eb);
/* BEGIN IMMEDIATE: the write lock, taken up front. */
sc_err sq_tx_begin(sq_store *s, const char *what, sc_errbuf *eb);
/* Commit when err is SC_OK, else (or when the commit fails) roll back. */
sc_err sq_tx_end(sq_store *s, sc_err err, const char *what, sc_errbuf *eb);
/* Column col of the current row as a malloc'd string ("" for NULL). */
sc_err sq_dup_col(sqlite3_stmt *q, int col, char **out);
/* The integer of the first row of sql (no row: the schema is broken). */
sc_err sq_pragma_int(sq_store *s, const char *sql, int64_t *out,
                     sc_errbuf *eb);
/* The meta row: the last revision written and the compaction mark
 * (compacted may be NULL). */
sc_err sq_read_revision(sq_store *s, int64_t *rev, int64_t *compacted,
                        sc_errbuf *eb);
/* Step q, a statement on the meta row (revision, compacted): SC_OK with
 * the row current, or an error (no row: "the meta row is missing"). */
sc_err sq_step_meta(sq_store *s, sqlite3_stmt *q, const char *what,
                    sc_errbuf *eb);

/* --- sqlite_cache.c: the decode cache ---
 *
 * Ownership: the cache holds one reference to each of its objects.
 * sq_cache_get() lends one (valid until the next call that changes the
 * cache); a caller hands out a copy (session_dup) or, to a list asked
 * with store_list_opts.shared, a reference (session_ref): shared objects
 * are read-only for everyone, the cache included. sq_cache_put() keeps a
 * copy of o, or o itself (a reference) when share. */
sc_err sq_cache_init(sq_store *s);
void sq_cache_free(sq_store *s);
void sq_cache_clear(sq_store *s);
size_t sq_cache_count(const sq_store *s); /* for tests */
/* The content hash of the current row of q (OBJ_COLS): generation,
 * timestamps and the bytes of the JSON columns. */
uint64_t sq_row_content(const sq_store *s, sqlite3_stmt *q);
/* The object of the row ns/name if it was decoded at this uid, revision
 * and content hash, else NULL. Marks it seen by the current sweep. */
const session *sq_cache_get(sq_store *s, const char *ns, const char *name,
                            const char *uid, int64_t revision,
                            uint64_t content);
void sq_cache_put(sq_store *s, const session *o, int64_t revision,
                  uint64_t content, bool share);
void sq_cache_drop(sq_store *s, const char *ns, const char *name);
/* A list of every row: entries the list did not see (rows deleted or
 * purged, by any process) leave the cache at its end. */
void sq_cache_sweep_begin(sq_store *s);
void sq_cache_sweep_end(sq_store *s);

/* The last full list (sqlite_cache.c). A list of every row (no
 * namespace, deleted ones included) asked with store_list_opts.shared
 * whose rows all decoded is kept (sq_last_keep: one more reference to
 * each of its objects, which are read-only). The next such list is
 * handed out from it, without stepping through the rows, when nothing
 * can have changed the file since: the meta row's revision is the same,
 * PRAGMA data_version (which moves when another connection commits,
 * whatever it wrote and whether or not it moved the revision) is the
 * same, and this connection changed no row (sqlite3_total_changes64()
 * is the same: status writes, applies, deletes, purges, the claim). Any
 * one of them moved: the rows are read (the decode cache still saves the
 * decode of the unchanged ones). sq_data_version() reads the pragma
 * inside the list's read transaction, after its first read. Ownership:
 * sq_last_forget() drops the references (the cache's clear and free do
 * it too). */
sc_err sq_data_version(sq_store *s, int64_t *dv, sc_errbuf *eb);
bool sq_last_usable(const sq_store *s, int64_t revision, int64_t dv);
/* out's items: a reference to each of last's objects (SC_ERR_NOMEM: out
 * unchanged) */
sc_err sq_last_hand_out(sq_store *s, store_list_result *out);
/* keep out's items (nothing kept when one is not shared) */
void sq_last_keep(sq_store *s, const store_list_result *out,
                  int64_t revision, int64_t dv);
void sq_last_forget(sq_store *s);

/* --- sqlite.c: the row codec --- */

/* The object of the current row of q (columns OBJ_COLS), the caller's: a
 * copy of the decode cache's when the row did not change since it was
 * decoded, else decoded, and cached when fill (lists: a get or a write's
 * read of a row it is about to change would only pay for a copy) and the
 * store has listed before (a process that lists once, as sessionctl
 * does, pays for no copies). share (fill only: a list asked with
 * store_list_opts.shared): *out may be the cache's own object, shared
 * (session_ref), instead of a copy. A row that does not decode: an
 * error in eb, and (why not NULL) the reason alone. */
sc_err sq_row_to_session(sq_store *s, sqlite3_stmt *q, bool fill,
                         bool share, session **out, char *why, size_t whylen,
                         sc_errbuf *eb);

/* The text columns of an objects row and the history entry of o. */
typedef struct sq_row_text {
  char *labels, *annotations, *spec, *status;
  char *whole;               /* the whole object, for history */
} sq_row_text;
/* SC_OK, or an error (out of memory) with t holding what was made;
 * sq_row_text_free either way. */
sc_err sq_row_encode(const session *o, sq_row_text *t);
void sq_row_text_free(sq_row_text *t);

/* --- the store_ops of the backend (sqlite.c holds the table) --- */

/* sqlite_crud.c */
sc_err sq_list(store *base, const store_list_opts *opts,
               store_list_result *out, sc_errbuf *eb);
sc_err sq_get(store *base, const char *ns, const char *name, session **out,
              sc_errbuf *eb);
sc_err sq_apply(store *base, session *const *objs, size_t n,
                store_apply_outcome *outcomes, sc_errbuf *eb);
sc_err sq_update_spec(store *base, const char *ns, const char *name,
                      const char *expected_version, const session_spec *spec,
                      char **new_version, sc_errbuf *eb);
sc_err sq_update_status(store *base, const char *ns, const char *name,
                        const char *expected_version,
                        const session_status *status, char **new_version,
                        sc_errbuf *eb);
sc_err sq_delete(store *base, const char *ns, const char *name,
                 sc_errbuf *eb);
sc_err sq_purge(store *base, const char *ns, const char *name,
                const char *expected_version, sc_errbuf *eb);
sc_err sq_set_annotation(store *base, const char *ns, const char *name,
                         const char *expected_version, const char *key,
                         const char *value, char **new_version,
                         sc_errbuf *eb);

/* sqlite_group.c: asynchronous status writes, committed in groups */
sc_err sq_update_status_async(store *base, const char *ns, const char *name,
                              const char *expected_version,
                              const session_status *status,
                              store_reply_cb cb, void *ud, sc_errbuf *eb);
size_t sq_async_inflight(const store *base);
/* Write (commit) every queued status write now; the answers still wait
 * for the loop. Every other operation calls it first. */
void sq_group_flush(sq_store *s);
/* The store's close: write what is queued, drop the answers. */
void sq_group_close(sq_store *s);

/* sqlite_watch.c */
sc_err sq_watch_start(store *base, const char *from_revision,
                      store_watch_cb cb, store_watch_err_cb err_cb, void *ud,
                      store_watch **out, sc_errbuf *eb);
void sq_watch_stop(store_watch *base);
/* Free a watch now (the store's close: no callback is running). */
void sq_watch_free(sq_watch *w);
/* save(): the write of revision (history text whole, taken; object o,
 * copied) for the watches of this store; nothing without a watch. */
void sq_own_note(sq_store *s, int64_t revision, char **whole,
                 const session *o);
void sq_own_free(sq_store *s);

/* sqlite_name.c */
sc_err sq_claim_name(store *base, const char *name, const char *adopt_from,
                     store_served_by *out, sc_errbuf *eb);
sc_err sq_served_by_get(store *base, store_served_by *out, sc_errbuf *eb);
sc_err sq_write_probe(store *base, sc_errbuf *eb);

#endif
