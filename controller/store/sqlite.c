/*
 * store_sqlite.c - the sqlite:PATH store backend (docs/store.md).
 *
 * One database file shared by any number of processes on one host:
 *   meta     one row: the global revision counter and the compaction mark
 *   objects  one row per (namespace, name): live objects and tombstones
 *   history  one row per revision: the whole object as of that revision,
 *            for watchers; compacted to the last history_keep revisions
 * Every write is one BEGIN IMMEDIATE transaction that bumps the counter,
 * writes the object row and appends the history row, so a process killed
 * at any point leaves either all of a write or none of it. Watches poll
 * the history from a libevent timer.
 *
 * One connection per store (SQLITE_OPEN_NOMUTEX): a store is used from
 * one thread.
 */
#include "controller/store/backend.h"
#include "api/session_json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <event2/event.h>
#include <json-c/json.h>
#include <sqlite3.h>

#define SQ_SCHEMA_VERSION 1
#define SQ_DEFAULT_BUSY_MS 5000
#define SQ_DEFAULT_POLL_MS 100
#define SQ_DEFAULT_KEEP 10000
#define SQ_WATCH_BATCH 1000

static const char sq_schema[] =
  "CREATE TABLE meta("
  " id INTEGER PRIMARY KEY CHECK (id = 1),"
  " revision INTEGER NOT NULL,"  /* the last revision written */
  " compacted INTEGER NOT NULL" /* history holds compacted+1 .. revision */
  ");"
  "INSERT INTO meta(id, revision, compacted) VALUES(1, 0, 0);"
  "CREATE TABLE objects("
  " namespace TEXT NOT NULL,"
  " name TEXT NOT NULL,"
  " uid TEXT NOT NULL,"
  " generation INTEGER NOT NULL,"
  " revision INTEGER NOT NULL,"
  " created_ms INTEGER NOT NULL,"
  " deleted_ms INTEGER NOT NULL DEFAULT 0," /* != 0: a tombstone */
  " labels TEXT NOT NULL,"
  " annotations TEXT NOT NULL,"
  " spec TEXT NOT NULL,"
  " status TEXT NOT NULL,"
  " PRIMARY KEY(namespace, name)"
  ") WITHOUT ROWID;"
  "CREATE TABLE history("
  " revision INTEGER PRIMARY KEY,"
  " type TEXT NOT NULL CHECK (type IN ('ADDED', 'MODIFIED', 'DELETED')),"
  " namespace TEXT NOT NULL,"
  " name TEXT NOT NULL,"
  " object TEXT NOT NULL"
  ");";

#define OBJ_COLS                                                          \
  "namespace, name, uid, generation, revision, created_ms, deleted_ms, "  \
  "labels, annotations, spec, status"

typedef struct sq_watch sq_watch;

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
} sq_store;

struct sq_watch {
  store_watch base;
  sq_store *st;
  sq_watch *prev, *next;
  struct event *timer;
  store_watch_cb cb;
  store_watch_err_cb err_cb;
  void *ud;
  int64_t pos;               /* the last revision delivered */
  bool delivering;           /* inside a callback: stop defers the free */
  bool stop_requested;
  bool dead;                 /* reported EXPIRED: no more polls */
  bool failing;              /* the last poll failed (reported once) */
};

static const store_ops sq_ops;

/* --- errors and statements --- */

static sc_err sq_fail(sq_store *s, int rc, const char *what, sc_errbuf *eb)
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

static sc_err sq_prep(sq_store *s, const char *sql, sqlite3_stmt **q,
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

static sc_err sq_exec(sq_store *s, const char *sql, const char *what,
                      sc_errbuf *eb)
{
  int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
  return rc == SQLITE_OK ? SC_OK : sq_fail(s, rc, what, eb);
}

/* Run q to completion (no rows expected); finalizes q. */
static sc_err sq_done(sq_store *s, sqlite3_stmt *q, const char *what,
                      sc_errbuf *eb)
{
  int rc = sqlite3_step(q);
  sc_err err = SC_OK;
  if(rc != SQLITE_DONE && rc != SQLITE_ROW)
    err = sq_fail(s, rc, what, eb);
  sqlite3_finalize(q);
  return err;
}

static sc_err tx_begin(sq_store *s, const char *what, sc_errbuf *eb)
{
  return sq_exec(s, "BEGIN IMMEDIATE", what, eb);
}

/* Commit when err is SC_OK, else (or when the commit fails) roll back. */
static sc_err tx_end(sq_store *s, sc_err err, const char *what,
                     sc_errbuf *eb)
{
  if(!err)
    err = sq_exec(s, "COMMIT", what, eb);
  if(err && !sqlite3_get_autocommit(s->db))
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
  return err;
}

static sc_err dup_col(sqlite3_stmt *q, int col, char **out)
{
  const unsigned char *t = sqlite3_column_text(q, col);
  *out = strdup(t ? (const char *)t : "");
  return *out ? SC_OK : SC_ERR_NOMEM;
}

/* --- labels and annotations as JSON objects of strings --- */

static sc_err kv_to_json(const sc_kvlist *l, char **out)
{
  json_object *o = json_object_new_object();
  size_t i;
  *out = NULL;
  if(!o)
    return SC_ERR_NOMEM;
  for(i = 0; i < l->n; i++) {
    json_object *v = json_object_new_string(l->items[i].value);
    if(!v || json_object_object_add(o, l->items[i].key, v)) {
      json_object_put(v);
      json_object_put(o);
      return SC_ERR_NOMEM;
    }
  }
  *out = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
  json_object_put(o);
  return *out ? SC_OK : SC_ERR_NOMEM;
}

/* Labels and annotations, which no decision reads, never make a row
 * unreadable (store.h, "Objects that do not decode"): as the kube store
 * reads them (SESSION_JSON_LENIENT_METADATA), a column that is not a JSON
 * object reads as empty, and an entry that is not a string or holds an
 * escaped NUL (which would silently cut the value short) is left out. */
static sc_err kv_from_json(const char *txt, sc_kvlist *out)
{
  json_object *o = json_tokener_parse(txt ? txt : "");
  sc_err err = SC_OK;
  if(!o || json_object_get_type(o) != json_type_object) {
    json_object_put(o);
    return SC_OK;
  }
  json_object_object_foreach(o, key, v)
  {
    if(json_object_get_type(v) != json_type_string ||
       strlen(json_object_get_string(v)) !=
         (size_t)json_object_get_string_len(v))
      continue;
    err = sc_kvlist_set(out, key, json_object_get_string(v));
    if(err)
      break;
  }
  json_object_put(o);
  return err;
}

/* --- rows --- */

/* The object of the current row of q (columns OBJ_COLS). */
static sc_err row_to_session(sq_store *s, sqlite3_stmt *q, session **out,
                             char *why, size_t whylen, sc_errbuf *eb)
{
  session *o = session_new();
  char rev[STORE_REV_LEN];
  sc_errbuf e;
  sc_err err;
  const char *part = "";
  *out = NULL;
  if(!o)
    return SC_ERR_NOMEM;
  e.msg[0] = 0;
  err = dup_col(q, 0, &o->meta.namespace_);
  if(!err)
    err = dup_col(q, 1, &o->meta.name);
  if(!err)
    err = dup_col(q, 2, &o->meta.uid);
  if(err)
    goto out;
  o->meta.generation = sqlite3_column_int64(q, 3);
  store_rev_format(sqlite3_column_int64(q, 4), rev);
  o->meta.resource_version = strdup(rev);
  if(!o->meta.resource_version) {
    err = SC_ERR_NOMEM;
    goto out;
  }
  o->meta.creation_timestamp = sqlite3_column_int64(q, 5);
  o->meta.deletion_timestamp = sqlite3_column_int64(q, 6);
  if((size_t)sqlite3_column_bytes(q, 7) + sqlite3_column_bytes(q, 8) +
     sqlite3_column_bytes(q, 9) + sqlite3_column_bytes(q, 10) >
     STORE_OBJECT_MAX) {
    part = "the row";
    err = sc_errf(&e, SC_ERR_INVALID, "labels, annotations, spec and status "
                  "are more than %d bytes (the store's cap on one object, "
                  "STORE_OBJECT_MAX)", STORE_OBJECT_MAX);
    goto out;
  }
  part = "labels";
  err = kv_from_json((const char *)sqlite3_column_text(q, 7),
                     &o->meta.labels);
  if(!err) {
    part = "annotations";
    err = kv_from_json((const char *)sqlite3_column_text(q, 8),
                       &o->meta.annotations);
  }
  if(!err) {
    part = "spec";
    err = session_spec_from_json((const char *)sqlite3_column_text(q, 9),
                                 &o->spec, &e);
  }
  if(!err) {
    part = "status";
    err = session_status_from_json((const char *)sqlite3_column_text(q, 10),
                                   &o->status, &e);
  }
out:
  if(err) {
    if(err == SC_ERR_NOMEM)
      sc_errf(eb, err, "%s: out of memory reading an object", s->label);
    else {
      sc_errf(eb, err, "%s: stored object %s/%s: %s: %s", s->label,
              o->meta.namespace_ ? o->meta.namespace_ : "?",
              o->meta.name ? o->meta.name : "?", part, e.msg);
      if(why)
        snprintf(why, whylen, "%s: %s", part, e.msg);
    }
    session_free(o);
    return err;
  }
  *out = o;
  return SC_OK;
}

/* Read ns/name; *out NULL (and SC_OK) when there is no row. */
static sc_err load_why(sq_store *s, const char *ns, const char *name,
                       session **out, char *why, size_t whylen,
                       sc_errbuf *eb);

static sc_err load(sq_store *s, const char *ns, const char *name,
                   session **out, sc_errbuf *eb)
{
  return load_why(s, ns, name, out, NULL, 0, eb);
}

/* the same; a row that does not decode says why (no prefix) */
static sc_err load_why(sq_store *s, const char *ns, const char *name,
                       session **out, char *why, size_t whylen,
                       sc_errbuf *eb)
{
  sqlite3_stmt *q;
  sc_err err;
  int rc;
  *out = NULL;
  err = sq_prep(s, "SELECT " OBJ_COLS " FROM objects"
                   " WHERE namespace = ?1 AND name = ?2", &q, "read", eb);
  if(err)
    return err;
  sqlite3_bind_text(q, 1, ns, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
  rc = sqlite3_step(q);
  if(rc == SQLITE_ROW)
    err = row_to_session(s, q, out, why, whylen, eb);
  else if(rc != SQLITE_DONE)
    err = sq_fail(s, rc, "read", eb);
  sqlite3_finalize(q);
  return err;
}

static sc_err not_found(sq_store *s, const char *op, const char *ns,
                        const char *name, sc_errbuf *eb)
{
  return sc_errf(eb, SC_ERR_NOT_FOUND, "%s: %s %s/%s: no such session",
                 s->label, op, ns, name);
}

static sc_err check_version(sq_store *s, const session *cur, const char *op,
                            const char *expected, sc_errbuf *eb)
{
  if(strcmp(cur->meta.resource_version, expected))
    return sc_errf(eb, SC_ERR_CONFLICT,
                   "%s: %s %s/%s: resourceVersion is %s, not %s (changed "
                   "since it was read)", s->label, op, cur->meta.namespace_,
                   cur->meta.name, cur->meta.resource_version, expected);
  return SC_OK;
}

/* Compaction: history keeps at least keep revisions; once it holds more
 * than keep+slack, the oldest go and meta.compacted moves up. */
static sc_err maybe_compact(sq_store *s, int64_t rev, int64_t compacted,
                            sc_errbuf *eb)
{
  sqlite3_stmt *q;
  int64_t to;
  sc_err err;
  if(rev - compacted <= s->keep + s->slack)
    return SC_OK;
  to = rev - s->keep;
  err = sq_prep(s, "DELETE FROM history WHERE revision <= ?1", &q,
                "compact history", eb);
  if(err)
    return err;
  sqlite3_bind_int64(q, 1, to);
  err = sq_done(s, q, "compact history", eb);
  if(err)
    return err;
  err = sq_prep(s, "UPDATE meta SET compacted = ?1", &q, "compact history",
                eb);
  if(err)
    return err;
  sqlite3_bind_int64(q, 1, to);
  return sq_done(s, q, "compact history", eb);
}

/* Write o as the new state of its key (inside a write transaction): bump
 * the revision, store the row, append the history event. Sets
 * o->meta.resource_version to the new revision. */
static sc_err save(sq_store *s, session *o, store_event_type type,
                   sc_errbuf *eb)
{
  sqlite3_stmt *q = NULL;
  char *labels = NULL, *annotations = NULL, *spec = NULL, *status = NULL;
  char *whole = NULL;
  char rev[STORE_REV_LEN], *rv;
  int64_t revision, compacted;
  sc_err err;
  int rc;

  err = sq_prep(s, "UPDATE meta SET revision = revision + 1"
                   " RETURNING revision, compacted", &q, "bump revision",
                eb);
  if(err)
    return err;
  rc = sqlite3_step(q);
  if(rc != SQLITE_ROW) {
    err = rc == SQLITE_DONE
            ? sc_errf(eb, SC_ERR_IO, "%s: the meta row is missing",
                      s->label)
            : sq_fail(s, rc, "bump revision", eb);
    sqlite3_finalize(q);
    return err;
  }
  revision = sqlite3_column_int64(q, 0);
  compacted = sqlite3_column_int64(q, 1);
  sqlite3_finalize(q);
  q = NULL;

  store_rev_format(revision, rev);
  rv = strdup(rev);
  if(!rv)
    return SC_ERR_NOMEM;
  free(o->meta.resource_version);
  o->meta.resource_version = rv;

  if(kv_to_json(&o->meta.labels, &labels) ||
     kv_to_json(&o->meta.annotations, &annotations) ||
     session_spec_to_json(&o->spec, &spec) ||
     session_status_to_json(&o->status, &status) ||
     session_to_json(o, &whole)) {
    err = sc_errf(eb, SC_ERR_NOMEM, "%s: out of memory encoding %s/%s",
                  s->label, o->meta.namespace_, o->meta.name);
    goto out;
  }

  err = sq_prep(s, "INSERT OR REPLACE INTO objects(" OBJ_COLS ")"
                   " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                &q, "write object", eb);
  if(err)
    goto out;
  sqlite3_bind_text(q, 1, o->meta.namespace_, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 2, o->meta.name, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 3, o->meta.uid, -1, SQLITE_STATIC);
  sqlite3_bind_int64(q, 4, o->meta.generation);
  sqlite3_bind_int64(q, 5, revision);
  sqlite3_bind_int64(q, 6, o->meta.creation_timestamp);
  sqlite3_bind_int64(q, 7, o->meta.deletion_timestamp);
  sqlite3_bind_text(q, 8, labels, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 9, annotations, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 10, spec, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 11, status, -1, SQLITE_STATIC);
  err = sq_done(s, q, "write object", eb);
  if(err)
    goto out;

  err = sq_prep(s, "INSERT INTO history(revision, type, namespace, name,"
                   " object) VALUES(?1, ?2, ?3, ?4, ?5)",
                &q, "append history", eb);
  if(err)
    goto out;
  sqlite3_bind_int64(q, 1, revision);
  sqlite3_bind_text(q, 2, store_event_type_name(type), -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 3, o->meta.namespace_, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 4, o->meta.name, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 5, whole, -1, SQLITE_STATIC);
  err = sq_done(s, q, "append history", eb);
  if(!err)
    err = maybe_compact(s, revision, compacted, eb);
out:
  free(labels);
  free(annotations);
  free(spec);
  free(status);
  free(whole);
  return err;
}

/* --- open and close --- */

static sc_err pragma_int(sq_store *s, const char *sql, int64_t *out,
                         sc_errbuf *eb)
{
  sqlite3_stmt *q;
  sc_err err = sq_prep(s, sql, &q, "read the schema", eb);
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

/* Check what the file holds: SC_OK with *version 0 (empty) or
 * SQ_SCHEMA_VERSION; an error for anything we must not touch. */
static sc_err check_schema(sq_store *s, int64_t *version, sc_errbuf *eb)
{
  int64_t v = 0, tables = 0;
  /* Two reads, outside a transaction when opening: the tables first. The
   * schema and its version are committed together, so a version read
   * after the tables is at least as new; the other order could see the
   * tables of a store another process just created but not yet its
   * version, and refuse a good store as foreign. */
  sc_err err = pragma_int(s, "SELECT count(*) FROM sqlite_master", &tables,
                          eb);
  if(!err)
    err = pragma_int(s, "PRAGMA user_version", &v, eb);
  if(err)
    return err;
  if(v > SQ_SCHEMA_VERSION)
    return sc_errf(eb, SC_ERR_INVALID,
                   "%s: the store has schema version %lld, newer than this "
                   "program knows (%d); use a newer session-controller",
                   s->label, (long long)v, SQ_SCHEMA_VERSION);
  if(v != SQ_SCHEMA_VERSION && (v != 0 || tables))
    return sc_errf(eb, SC_ERR_INVALID,
                   "%s: an SQLite database that is not a session store "
                   "(user_version %lld, %lld schema objects); left untouched",
                   s->label, (long long)v, (long long)tables);
  *version = v;
  return SC_OK;
}

static sc_err init_db(sq_store *s, bool may_create, sc_errbuf *eb)
{
  int64_t version = 0;
  sqlite3_stmt *q;
  const char *mode;
  sc_err err;
  int rc;

  sqlite3_extended_result_codes(s->db, 1);
  sqlite3_busy_timeout(s->db, s->busy_ms);
  if(sqlite3_db_readonly(s->db, "main") == 1)
    return sc_errf(eb, SC_ERR_IO, "%s: the database file is not writable",
                   s->label);
  /* Read before writing anything: a foreign file stays as it is. */
  err = check_schema(s, &version, eb);
  if(err)
    return err;
  if(!version && !may_create)
    return sc_errf(eb, SC_ERR_NOT_FOUND, "%s: the file is empty: no session "
                   "store yet (left untouched)", s->label);

  /* Switching to WAL needs the file to itself, and SQLite answers BUSY at
   * once, without its busy handler, while another process is creating or
   * writing the new file: retry until the busy timeout. */
  {
    int64_t deadline = sctime_mono_ms() + s->busy_ms;
    for(;;) {
      err = sq_prep(s, "PRAGMA journal_mode = WAL", &q, "enable WAL", eb);
      if(err)
        return err;
      rc = sqlite3_step(q);
      mode = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(q, 0)
                              : NULL;
      if(mode && !strcmp(mode, "wal"))
        break;
      if((rc == SQLITE_ROW || (rc & 0xff) == SQLITE_BUSY ||
          (rc & 0xff) == SQLITE_LOCKED) &&
         sctime_mono_ms() < deadline) {
        sqlite3_finalize(q);
        sqlite3_sleep(10);
        continue;
      }
      err = rc == SQLITE_ROW
              ? sc_errf(eb, SC_ERR_IO, "%s: cannot enable WAL (journal mode "
                        "stays %s)", s->label, mode ? mode : "?")
              : sq_fail(s, rc, "enable WAL", eb);
      sqlite3_finalize(q);
      return err;
    }
    sqlite3_finalize(q);
  }
  /* FULL: a commit is on disk before it returns, in WAL mode too. See
   * docs/store.md "Durability". */
  err = sq_exec(s, s->relaxed_sync ? "PRAGMA synchronous = NORMAL"
                                   : "PRAGMA synchronous = FULL",
               "set synchronous", eb);
  if(err || version == SQ_SCHEMA_VERSION)
    return err;

  /* A new file: create the schema, unless another process just did. */
  err = tx_begin(s, "create the schema", eb);
  if(err)
    return err;
  err = check_schema(s, &version, eb);
  if(!err && version == 0) {
    err = sq_exec(s, sq_schema, "create the schema", eb);
    if(!err)
      err = sq_exec(s, "PRAGMA user_version = 1", "create the schema", eb);
    s->base.created = !err;
  }
  err = tx_end(s, err, "create the schema", eb);
  if(err)
    s->base.created = false;
  return err;
}

/* Create the file ourselves so that it gets mode 0600 whatever the umask;
 * SQLite gives the -wal and -shm files the mode of the database. */
static sc_err create_file(const char *label, const char *path,
                          sc_errbuf *eb)
{
  struct stat sb;
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if(fd >= 0) {
    int r = fchmod(fd, 0600);
    int e = errno;
    close(fd);
    if(r) {
      unlink(path);
      return sc_errf(eb, SC_ERR_IO, "%s: cannot set mode 0600: %s", label,
                     strerror(e));
    }
    return SC_OK;
  }
  if(errno != EEXIST)
    return sc_errf(eb, SC_ERR_IO, "%s: cannot create the database: %s",
                   label, strerror(errno));
  if(stat(path, &sb))
    return sc_errf(eb, SC_ERR_IO, "%s: %s", label, strerror(errno));
  if(!S_ISREG(sb.st_mode))
    return sc_errf(eb, SC_ERR_INVALID, "%s: not a regular file", label);
  return SC_OK;
}

/* Without opts->create: the file must be there (a mistyped path must not
 * become an empty store); nothing is created. */
static sc_err must_exist(const char *label, const char *path, sc_errbuf *eb)
{
  struct stat sb;
  if(stat(path, &sb)) {
    if(errno == ENOENT || errno == ENOTDIR)
      return sc_errf(eb, SC_ERR_NOT_FOUND, "%s: no store at %s (%s); "
                     "nothing was created", label, path, strerror(errno));
    return sc_errf(eb, SC_ERR_IO, "%s: %s", label, strerror(errno));
  }
  if(!S_ISREG(sb.st_mode))
    return sc_errf(eb, SC_ERR_INVALID, "%s: not a regular file", label);
  return SC_OK;
}

static void sq_close(store *base);

sc_err store_sqlite_open(const char *path, const store_open_opts *opts,
                         store **out, sc_errbuf *eb)
{
  sq_store *s;
  size_t len = strlen(path) + 8;
  struct stat before, after;
  sc_err err;
  int rc;

  *out = NULL;
  s = calloc(1, sizeof(*s));
  if(!s)
    return SC_ERR_NOMEM;
  s->base.ops = &sq_ops;
  s->label = malloc(len);
  if(!s->label) {
    free(s);
    return SC_ERR_NOMEM;
  }
  snprintf(s->label, len, "sqlite:%s", path);
  s->evbase = opts->base;
  s->relaxed_sync = opts->relaxed_sync;
  s->busy_ms = opts->busy_timeout_ms ? opts->busy_timeout_ms
                                     : SQ_DEFAULT_BUSY_MS;
  s->poll_ms = opts->poll_interval_ms ? opts->poll_interval_ms
                                      : SQ_DEFAULT_POLL_MS;
  s->keep = opts->history_keep ? opts->history_keep : SQ_DEFAULT_KEEP;
  s->slack = s->keep / 10;
  if(s->slack > 100)
    s->slack = 100;

  s->path = strdup(path);
  if(!s->path) {
    err = SC_ERR_NOMEM;
    goto fail;
  }
  if(opts->create)
    err = create_file(s->label, path, eb);
  else
    err = must_exist(s->label, path, eb);
  if(err)
    goto fail;
  /* the file's identity: the same before and after SQLite opened it, so
   * it is the file SQLite has open (store_check_identity compares) */
  if(stat(path, &before)) {
    err = sc_errf(eb, SC_ERR_IO, "%s: %s", s->label, strerror(errno));
    goto fail;
  }
  rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE |
                       SQLITE_OPEN_NOMUTEX, NULL);
  if(rc != SQLITE_OK) {
    err = sq_fail(s, rc, "open", eb);
    goto fail;
  }
  err = init_db(s, opts->create, eb);
  if(err)
    goto fail;
  if(stat(path, &after) || after.st_dev != before.st_dev ||
     after.st_ino != before.st_ino) {
    err = sc_errf(eb, SC_ERR_IO, "%s: the file was moved or replaced while "
                  "it was being opened", s->label);
    goto fail;
  }
  s->dev = before.st_dev;
  s->ino = before.st_ino;
  *out = &s->base;
  return SC_OK;
fail:
  sq_close(&s->base);
  return err;
}

static void watch_free(sq_watch *w);

static void sq_close(store *base)
{
  sq_store *s = (sq_store *)base;
  while(s->watches)
    watch_free(s->watches);
  sqlite3_close_v2(s->db);
  free(s->label);
  free(s->path);
  free(s->claimed);
  free(s);
}

/* --- reads --- */

static sc_err read_revision(sq_store *s, int64_t *rev, int64_t *compacted,
                            sc_errbuf *eb)
{
  sqlite3_stmt *q;
  sc_err err = sq_prep(s, "SELECT revision, compacted FROM meta", &q,
                       "read the revision", eb);
  int rc;
  if(err)
    return err;
  rc = sqlite3_step(q);
  if(rc == SQLITE_ROW) {
    *rev = sqlite3_column_int64(q, 0);
    if(compacted)
      *compacted = sqlite3_column_int64(q, 1);
  }
  else
    err = rc == SQLITE_DONE
            ? sc_errf(eb, SC_ERR_IO, "%s: the meta row is missing",
                      s->label)
            : sq_fail(s, rc, "read the revision", eb);
  sqlite3_finalize(q);
  return err;
}

static sc_err sq_list(store *base, const store_list_opts *opts,
                      store_list_result *out, sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  sqlite3_stmt *q = NULL;
  char rev[STORE_REV_LEN], why[SC_ERRBUF_SIZE];
  int64_t revision = 0;
  size_t alloc = 0;
  sc_err err;
  int rc;

  /* One read transaction: the revision and the rows are one snapshot. */
  err = sq_exec(s, "BEGIN", "list", eb);
  if(err)
    return err;
  err = read_revision(s, &revision, NULL, eb);
  if(!err)
    err = sq_prep(s, "SELECT " OBJ_COLS " FROM objects"
                     " WHERE (?1 IS NULL OR namespace = ?1)"
                     " AND (?2 OR deleted_ms = 0)"
                     " ORDER BY namespace, name", &q, "list", eb);
  if(err)
    goto out;
  if(opts->namespace_)
    sqlite3_bind_text(q, 1, opts->namespace_, -1, SQLITE_STATIC);
  sqlite3_bind_int(q, 2, opts->include_deleted ? 1 : 0);
  while((rc = sqlite3_step(q)) == SQLITE_ROW) {
    session *o;
    if(out->n == alloc) {
      size_t na = alloc ? alloc * 2 : 16;
      session **items = realloc(out->items, na * sizeof(*items));
      if(!items) {
        err = SC_ERR_NOMEM;
        goto out;
      }
      out->items = items;
      alloc = na;
    }
    why[0] = '\0';
    err = row_to_session(s, q, &o, why, sizeof(why), eb);
    if(err && why[0]) {
      /* another tool wrote a row we cannot read: skipped and reported,
       * the others listed (store.h, "Objects that do not decode") */
      err = store_skip_report(base, out, "list",
                              (const char *)sqlite3_column_text(q, 0),
                              (const char *)sqlite3_column_text(q, 1),
                              (const char *)sqlite3_column_text(q, 2), why,
                              NULL);
      if(err) {
        err = sc_errf(eb, err, "%s: out of memory", s->label);
        goto out;
      }
      continue;
    }
    if(err)
      goto out;
    out->items[out->n++] = o;
  }
  if(rc != SQLITE_DONE)
    err = sq_fail(s, rc, "list", eb);
out:
  sqlite3_finalize(q);
  err = tx_end(s, err, "list", eb);
  if(!err) {
    store_rev_format(revision, rev);
    out->revision = strdup(rev);
    if(!out->revision)
      err = SC_ERR_NOMEM;
  }
  if(!err && !opts->namespace_)
    store_skip_list_done(base, out);
  if(err)
    store_list_result_free(out);
  return err;
}

static sc_err sq_get(store *base, const char *ns, const char *name,
                     session **out, sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  char why[SC_ERRBUF_SIZE];
  sc_err err;
  why[0] = '\0';
  err = load_why(s, ns, name, out, why, sizeof(why), eb);
  if(err && why[0]) /* reported as any skipped row; the get fails */
    (void)store_skip_report(base, NULL, "get", ns, name, NULL, why, NULL);
  if(!err && !*out)
    err = not_found(s, "get", ns, name, eb);
  return err;
}

/* --- writes --- */

/* A new object from what apply was given: fresh uid, generation 1, empty
 * status. */
static sc_err new_object(sq_store *s, const session *in, session **out,
                         sc_errbuf *eb)
{
  char uid[STORE_UID_LEN];
  session *o;
  sc_err err = store_uid_new(uid, eb);
  *out = NULL;
  if(err)
    return err;
  o = session_new();
  if(!o)
    return SC_ERR_NOMEM;
  o->meta.namespace_ = strdup(in->meta.namespace_);
  o->meta.name = strdup(in->meta.name);
  o->meta.uid = strdup(uid);
  o->meta.generation = 1;
  o->meta.creation_timestamp = sctime_wall_ms();
  if(!o->meta.namespace_ || !o->meta.name || !o->meta.uid ||
     sc_kvlist_copy(&o->meta.labels, &in->meta.labels) ||
     sc_kvlist_copy(&o->meta.annotations, &in->meta.annotations) ||
     session_spec_copy(&o->spec, &in->spec)) {
    session_free(o);
    return sc_errf(eb, SC_ERR_NOMEM, "%s: out of memory", s->label);
  }
  *out = o;
  return SC_OK;
}

/* Apply one object inside the transaction. */
static sc_err apply_one(sq_store *s, const session *in,
                        store_apply_outcome *outcome, sc_errbuf *eb)
{
  session *cur = NULL, *o = NULL;
  bool spec_changed;
  sc_err err = load(s, in->meta.namespace_, in->meta.name, &cur, eb);
  if(err)
    return err;
  if(!cur || cur->meta.deletion_timestamp) {
    /* New, or over a tombstone: a new object with a new uid. */
    err = new_object(s, in, &o, eb);
    if(!err)
      err = save(s, o, STORE_EVENT_ADDED, eb);
    *outcome = STORE_APPLY_CREATED;
    goto out;
  }
  spec_changed = !session_spec_equal(&cur->spec, &in->spec);
  if(!spec_changed && sc_kvlist_equal(&cur->meta.labels, &in->meta.labels) &&
     sc_kvlist_equal(&cur->meta.annotations, &in->meta.annotations)) {
    *outcome = STORE_APPLY_UNCHANGED;
    goto out;
  }
  sc_kvlist_clear(&cur->meta.labels);
  sc_kvlist_clear(&cur->meta.annotations);
  session_spec_clear(&cur->spec);
  if(sc_kvlist_copy(&cur->meta.labels, &in->meta.labels) ||
     sc_kvlist_copy(&cur->meta.annotations, &in->meta.annotations) ||
     session_spec_copy(&cur->spec, &in->spec)) {
    err = sc_errf(eb, SC_ERR_NOMEM, "%s: out of memory", s->label);
    goto out;
  }
  if(spec_changed)
    cur->meta.generation++;
  err = save(s, cur, STORE_EVENT_MODIFIED, eb);
  *outcome = STORE_APPLY_CONFIGURED;
out:
  session_free(cur);
  session_free(o);
  return err;
}

static sc_err sq_apply(store *base, session *const *objs, size_t n,
                       store_apply_outcome *outcomes, sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  sc_err err = tx_begin(s, "apply", eb);
  size_t i;
  if(err)
    return err;
  for(i = 0; i < n && !err; i++) {
    store_apply_outcome oc = STORE_APPLY_UNCHANGED;
    err = apply_one(s, objs[i], &oc, eb);
    if(!err && outcomes)
      outcomes[i] = oc;
  }
  return tx_end(s, err, "apply", eb);
}

static sc_err give_version(const session *o, char **new_version)
{
  if(!new_version)
    return SC_OK;
  *new_version = strdup(o->meta.resource_version);
  return *new_version ? SC_OK : SC_ERR_NOMEM;
}

static sc_err sq_update_spec(store *base, const char *ns, const char *name,
                             const char *expected_version,
                             const session_spec *spec, char **new_version,
                             sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  session *cur = NULL;
  sc_err err = tx_begin(s, "update spec", eb);
  if(err)
    return err;
  err = load(s, ns, name, &cur, eb);
  if(!err && !cur)
    err = not_found(s, "update spec", ns, name, eb);
  if(!err)
    err = check_version(s, cur, "update spec", expected_version, eb);
  if(!err && cur->meta.deletion_timestamp)
    err = sc_errf(eb, SC_ERR_NOT_FOUND,
                  "%s: update spec %s/%s: the session is deleted", s->label,
                  ns, name);
  if(!err && !session_spec_equal(&cur->spec, spec)) {
    session_spec_clear(&cur->spec);
    if(session_spec_copy(&cur->spec, spec))
      err = sc_errf(eb, SC_ERR_NOMEM, "%s: out of memory", s->label);
    else {
      cur->meta.generation++;
      err = save(s, cur, STORE_EVENT_MODIFIED, eb);
    }
  }
  err = tx_end(s, err, "update spec", eb);
  if(!err)
    err = give_version(cur, new_version);
  session_free(cur);
  return err;
}

static sc_err sq_update_status(store *base, const char *ns, const char *name,
                               const char *expected_version,
                               const session_status *status,
                               char **new_version, sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  session *cur = NULL;
  sc_err err = tx_begin(s, "update status", eb);
  if(err)
    return err;
  err = load(s, ns, name, &cur, eb);
  if(!err && !cur)
    err = not_found(s, "update status", ns, name, eb);
  if(!err)
    err = check_version(s, cur, "update status", expected_version, eb);
  if(!err && !session_status_equal(&cur->status, status)) {
    session_status_clear(&cur->status);
    if(session_status_copy(&cur->status, status))
      err = sc_errf(eb, SC_ERR_NOMEM, "%s: out of memory", s->label);
    else
      err = save(s, cur, STORE_EVENT_MODIFIED, eb);
  }
  err = tx_end(s, err, "update status", eb);
  if(!err)
    err = give_version(cur, new_version);
  session_free(cur);
  return err;
}

static sc_err sq_delete(store *base, const char *ns, const char *name,
                        sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  session *cur = NULL;
  sc_err err = tx_begin(s, "delete", eb);
  if(err)
    return err;
  err = load(s, ns, name, &cur, eb);
  if(!err && !cur)
    err = not_found(s, "delete", ns, name, eb);
  if(!err && !cur->meta.deletion_timestamp) {
    cur->meta.deletion_timestamp = sctime_wall_ms();
    err = save(s, cur, STORE_EVENT_DELETED, eb);
  }
  session_free(cur);
  return tx_end(s, err, "delete", eb);
}

static sc_err sq_purge(store *base, const char *ns, const char *name,
                       const char *expected_version, sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  session *cur = NULL;
  sqlite3_stmt *q;
  sc_err err = tx_begin(s, "purge", eb);
  if(err)
    return err;
  err = load(s, ns, name, &cur, eb);
  if(!err && !cur)
    err = not_found(s, "purge", ns, name, eb);
  if(!err)
    err = check_version(s, cur, "purge", expected_version, eb);
  if(!err && !cur->meta.deletion_timestamp)
    err = sc_errf(eb, SC_ERR_INVALID,
                  "%s: purge %s/%s: the session is not deleted", s->label,
                  ns, name);
  /* No revision and no history: watchers had the DELETED event. */
  if(!err)
    err = sq_prep(s, "DELETE FROM objects WHERE namespace = ?1"
                     " AND name = ?2", &q, "purge", eb);
  if(!err) {
    sqlite3_bind_text(q, 1, ns, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
    err = sq_done(s, q, "purge", eb);
  }
  session_free(cur);
  return tx_end(s, err, "purge", eb);
}

/* --- watch --- */

typedef struct hist_row {
  int64_t revision;
  store_event_type type;
  bool type_ok;
  char *object;
} hist_row;

static void rows_free(hist_row *rows, size_t n)
{
  size_t i;
  for(i = 0; i < n; i++)
    free(rows[i].object);
  free(rows);
}

static bool parse_type(const char *t, store_event_type *out)
{
  static const store_event_type all[] = {
    STORE_EVENT_ADDED, STORE_EVENT_MODIFIED, STORE_EVENT_DELETED};
  size_t i;
  for(i = 0; t && i < sizeof(all) / sizeof(all[0]); i++)
    if(!strcmp(t, store_event_type_name(all[i]))) {
      *out = all[i];
      return true;
    }
  return false;
}

/* Read the counters and, when there is something after pos that history
 * still holds, up to SQ_WATCH_BATCH rows: one snapshot. */
static sc_err read_batch(sq_store *s, int64_t pos, int64_t *rev,
                         int64_t *compacted, hist_row **rows, size_t *n,
                         sc_errbuf *eb)
{
  sqlite3_stmt *q = NULL;
  sc_err err;
  int rc;
  *rows = NULL;
  *n = 0;
  err = read_revision(s, rev, compacted, eb); /* the cheap check */
  if(err || *rev == pos)
    return err;
  err = sq_exec(s, "BEGIN", "watch", eb);
  if(err)
    return err;
  err = read_revision(s, rev, compacted, eb);
  if(err || *rev <= pos || pos < *compacted)
    goto out;
  err = sq_prep(s, "SELECT revision, type, object FROM history"
                   " WHERE revision > ?1 ORDER BY revision LIMIT ?2", &q,
                "watch", eb);
  if(err)
    goto out;
  sqlite3_bind_int64(q, 1, pos);
  sqlite3_bind_int(q, 2, SQ_WATCH_BATCH);
  *rows = calloc(SQ_WATCH_BATCH, sizeof(**rows));
  if(!*rows) {
    err = SC_ERR_NOMEM;
    goto out;
  }
  while((rc = sqlite3_step(q)) == SQLITE_ROW && *n < SQ_WATCH_BATCH) {
    hist_row *r = &(*rows)[*n];
    r->revision = sqlite3_column_int64(q, 0);
    r->type_ok = parse_type((const char *)sqlite3_column_text(q, 1),
                            &r->type);
    err = dup_col(q, 2, &r->object);
    if(err)
      goto out;
    (*n)++;
  }
  if(rc != SQLITE_DONE && rc != SQLITE_ROW)
    err = sq_fail(s, rc, "watch", eb);
out:
  sqlite3_finalize(q);
  err = tx_end(s, err, "watch", eb);
  if(err) {
    rows_free(*rows, *n);
    *rows = NULL;
    *n = 0;
  }
  return err;
}

static void watch_schedule(sq_watch *w, int ms)
{
  struct timeval tv;
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  evtimer_add(w->timer, &tv);
}

/* Report an error to the watcher; EXPIRED ends the watch. */
static void watch_report(sq_watch *w, sc_err err, const char *msg)
{
  if(err == SC_ERR_EXPIRED)
    w->dead = true;
  if(w->err_cb)
    w->err_cb(err, msg, w->ud);
}

static void watch_poll(evutil_socket_t fd, short what, void *arg)
{
  sq_watch *w = arg;
  sq_store *s = w->st;
  hist_row *rows = NULL;
  size_t n = 0, i;
  int64_t rev = 0, compacted = 0;
  sc_errbuf eb;
  char msg[SC_ERRBUF_SIZE * 2];
  sc_err err;
  (void)fd;
  (void)what;

  eb.msg[0] = 0;
  err = read_batch(s, w->pos, &rev, &compacted, &rows, &n, &eb);
  w->delivering = true;
  if(err) {
    /* Transient (busy, I/O): told once per run of failures; retried. */
    if(!w->failing) {
      w->failing = true;
      watch_report(w, err, eb.msg);
    }
    goto out;
  }
  w->failing = false;
  if(rev < w->pos) {
    snprintf(msg, sizeof(msg),
             "%s: watch from revision %lld, but the store is at %lld (was "
             "the database replaced?): relist", s->label,
             (long long)w->pos, (long long)rev);
    watch_report(w, SC_ERR_EXPIRED, msg);
    goto out;
  }
  if(w->pos < compacted) {
    snprintf(msg, sizeof(msg),
             "%s: revision %lld is older than the kept history (compacted "
             "through %lld): relist", s->label, (long long)w->pos,
             (long long)compacted);
    watch_report(w, SC_ERR_EXPIRED, msg);
    goto out;
  }
  if(!n && rev > w->pos) {
    snprintf(msg, sizeof(msg),
             "%s: the revisions after %lld are missing from the history: "
             "relist", s->label, (long long)w->pos);
    watch_report(w, SC_ERR_EXPIRED, msg);
    goto out;
  }
  for(i = 0; i < n && !w->stop_requested && !w->dead; i++) {
    hist_row *r = &rows[i];
    session *o = NULL;
    char rv[STORE_REV_LEN];
    store_event ev;
    if(r->revision != w->pos + 1) {
      /* History is contiguous; a hole means it was compacted past us. */
      snprintf(msg, sizeof(msg),
               "%s: revision %lld is missing from the history (next kept is "
               "%lld): relist", s->label, (long long)(w->pos + 1),
               (long long)r->revision);
      watch_report(w, SC_ERR_EXPIRED, msg);
      break;
    }
    w->pos = r->revision;
    if(!r->type_ok)
      err = sc_errf(&eb, SC_ERR_INVALID, "unknown event type");
    else
      err = session_from_json(r->object, strlen(r->object), &o, &eb);
    if(err == SC_ERR_NOMEM) {
      watch_report(w, err, "out of memory decoding a history entry");
      continue;
    }
    if(err) {
      /* Skipped and reported (store.h, "Objects that do not decode"),
       * not given to err_cb: the watch goes on with the next revision. */
      json_object *raw = json_tokener_parse(r->object);
      json_object *m = NULL, *v;
      const char *f[2] = {NULL, NULL};
      size_t k;
      for(k = 0; k < 2 && json_object_object_get_ex(raw, "metadata", &m);
          k++)
        if(json_object_object_get_ex(m, k ? "name" : "namespace", &v) &&
           json_object_is_type(v, json_type_string))
          f[k] = json_object_get_string(v);
      snprintf(msg, sizeof(msg), "history revision %lld: %s",
               (long long)r->revision, eb.msg);
      (void)store_skip_report(&s->base, NULL, "watch", f[0], f[1], NULL,
                              msg, NULL);
      json_object_put(raw);
      continue;
    }
    store_rev_format(r->revision, rv);
    ev.type = r->type;
    ev.obj = o;
    ev.revision = rv;
    w->cb(&ev, w->ud);
    session_free(o);
  }
out:
  w->delivering = false;
  rows_free(rows, n);
  if(w->stop_requested) {
    watch_free(w);
    return;
  }
  if(!w->dead)
    watch_schedule(w, n == SQ_WATCH_BATCH ? 0 : s->poll_ms);
}

static sc_err sq_watch_start(store *base, const char *from_revision,
                             store_watch_cb cb, store_watch_err_cb err_cb,
                             void *ud, store_watch **out, sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  sq_watch *w;
  int64_t pos = 0;
  sc_err err;

  if(!s->evbase)
    return sc_errf(eb, SC_ERR_INVALID,
                   "%s: watch: the store was opened without an event base",
                   s->label);
  if(!from_revision || !*from_revision)
    err = read_revision(s, &pos, NULL, eb);
  else if(store_rev_parse(from_revision, &pos))
    err = sc_errf(eb, SC_ERR_INVALID,
                  "%s: watch: bad revision \"%s\" (want a decimal number)",
                  s->label, from_revision);
  else
    err = SC_OK;
  if(err)
    return err;
  w = calloc(1, sizeof(*w));
  if(!w)
    return SC_ERR_NOMEM;
  w->base.ops = &sq_ops;
  w->st = s;
  w->cb = cb;
  w->err_cb = err_cb;
  w->ud = ud;
  w->pos = pos;
  w->timer = evtimer_new(s->evbase, watch_poll, w);
  if(!w->timer) {
    free(w);
    return SC_ERR_NOMEM;
  }
  w->next = s->watches;
  if(s->watches)
    s->watches->prev = w;
  s->watches = w;
  watch_schedule(w, 0);
  *out = &w->base;
  return SC_OK;
}

static void watch_free(sq_watch *w)
{
  sq_store *s = w->st;
  if(w->prev)
    w->prev->next = w->next;
  else
    s->watches = w->next;
  if(w->next)
    w->next->prev = w->prev;
  event_free(w->timer);
  free(w);
}

static void sq_watch_stop(store_watch *base)
{
  sq_watch *w = (sq_watch *)base;
  if(w->delivering) {
    /* Called from its own callback: freed when the callback returns. */
    w->stop_requested = true;
    return;
  }
  watch_free(w);
}

/* --- identity and the controller's name --- */

static sc_err sq_check_identity(store *base, sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  struct stat sb;
  sqlite3_stmt *q = NULL;
  sc_err err = SC_OK;
  if(stat(s->path, &sb))
    return sc_errf(eb, SC_ERR_CONFLICT, "%s: the store file is gone from "
                   "its path (moved or removed: %s); this process still "
                   "has the old file open and must not use it", s->label,
                   strerror(errno));
  if(sb.st_dev != s->dev || sb.st_ino != s->ino)
    return sc_errf(eb, SC_ERR_CONFLICT, "%s: the path now names another "
                   "file (device %llu inode %llu; the store opened was "
                   "device %llu inode %llu): the store was replaced; a "
                   "restart adopts the new file", s->label,
                   (unsigned long long)sb.st_dev,
                   (unsigned long long)sb.st_ino,
                   (unsigned long long)s->dev, (unsigned long long)s->ino);
  if(!s->claimed)
    return SC_OK;
  /* a failed read is no evidence of a change: SC_OK */
  if(sqlite3_prepare_v2(s->db, "SELECT name FROM controller WHERE id = 1",
                        -1, &q, NULL) == SQLITE_OK) {
    int rc = sqlite3_step(q);
    const unsigned char *t = rc == SQLITE_ROW ? sqlite3_column_text(q, 0)
                                              : NULL;
    if(rc == SQLITE_DONE || (rc == SQLITE_ROW &&
                             strcmp(t ? (const char *)t : "", s->claimed)))
      err = sc_errf(eb, SC_ERR_CONFLICT, "%s: the store is now served by "
                    "controller '%s', not '%s' (renamed with --adopt-from?)",
                    s->label, rc == SQLITE_ROW && t ? (const char *)t
                                                    : "(none recorded)",
                    s->claimed);
  }
  sqlite3_finalize(q);
  return err;
}

static const char sq_controller_table[] =
  "CREATE TABLE IF NOT EXISTS controller("
  " id INTEGER PRIMARY KEY CHECK (id = 1),"
  " name TEXT NOT NULL,"      /* the controller serving the store */
  " since_ms INTEGER NOT NULL," /* wall clock when name was recorded */
  " adopted TEXT NOT NULL"    /* JSON array of the names it replaced */
  ")";

static sc_err adopted_from_json(sq_store *s, const char *txt,
                                store_served_by *out, sc_errbuf *eb)
{
  json_object *o = json_tokener_parse(txt ? txt : "");
  size_t i, n;
  sc_err err = SC_OK;
  if(!o || json_object_get_type(o) != json_type_array) {
    json_object_put(o);
    return sc_errf(eb, SC_ERR_INVALID, "%s: controller.adopted is not a "
                   "JSON array", s->label);
  }
  n = json_object_array_length(o);
  out->adopted = calloc(n ? n : 1, sizeof(*out->adopted));
  if(!out->adopted)
    err = sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  for(i = 0; !err && i < n; i++) {
    json_object *v = json_object_array_get_idx(o, i);
    if(json_object_get_type(v) != json_type_string) {
      err = sc_errf(eb, SC_ERR_INVALID, "%s: controller.adopted[%zu] is not "
                    "a string", s->label, i);
      break;
    }
    out->adopted[i] = strdup(json_object_get_string(v));
    if(!out->adopted[i])
      err = sc_errf(eb, SC_ERR_NOMEM, "out of memory");
    else
      out->n_adopted++;
  }
  json_object_put(o);
  return err;
}

/* The recorded row into out (out->name NULL: none, or no table yet). */
static sc_err read_served_by(sq_store *s, store_served_by *out,
                             sc_errbuf *eb)
{
  sqlite3_stmt *q;
  int64_t tables = 0;
  sc_err err;
  int rc;
  memset(out, 0, sizeof(*out));
  out->recorded = true;
  err = pragma_int(s, "SELECT count(*) FROM sqlite_master WHERE type = "
                   "'table' AND name = 'controller'", &tables, eb);
  if(err || !tables)
    return err;
  err = sq_prep(s, "SELECT name, since_ms, adopted FROM controller"
                   " WHERE id = 1", &q, "read the controller name", eb);
  if(err)
    return err;
  rc = sqlite3_step(q);
  if(rc == SQLITE_ROW) {
    err = dup_col(q, 0, &out->name);
    if(err)
      err = sc_errf(eb, err, "out of memory");
    out->since_ms = sqlite3_column_int64(q, 1);
    if(!err)
      err = adopted_from_json(s, (const char *)sqlite3_column_text(q, 2),
                              out, eb);
  }
  else if(rc != SQLITE_DONE)
    err = sq_fail(s, rc, "read the controller name", eb);
  sqlite3_finalize(q);
  if(err) {
    store_served_by_clear(out);
    out->recorded = true;
  }
  return err;
}

static sc_err sq_served_by_get(store *base, store_served_by *out,
                               sc_errbuf *eb)
{
  return read_served_by((sq_store *)base, out, eb);
}

static bool name_in(const store_served_by *sb, const char *name)
{
  size_t i;
  for(i = 0; i < sb->n_adopted; i++)
    if(!strcmp(sb->adopted[i], name))
      return true;
  return false;
}

/* Write the row: name, since (0: now), and adopted = old's list + add
 * (when not there), less name itself. */
static sc_err write_served_by(sq_store *s, const char *name, int64_t since,
                              const store_served_by *old, const char *add,
                              sc_errbuf *eb)
{
  json_object *arr = json_object_new_array();
  sqlite3_stmt *q;
  size_t i;
  sc_err err = SC_OK;
  if(!arr)
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  for(i = 0; old && i < old->n_adopted; i++)
    if(strcmp(old->adopted[i], name) &&
       json_object_array_add(arr, json_object_new_string(old->adopted[i])))
      err = SC_ERR_NOMEM;
  if(add && strcmp(add, name) && !(old && name_in(old, add)) &&
     json_object_array_add(arr, json_object_new_string(add)))
    err = SC_ERR_NOMEM;
  if(err) {
    json_object_put(arr);
    return sc_errf(eb, err, "out of memory");
  }
  err = sq_prep(s, "INSERT OR REPLACE INTO controller(id, name, since_ms, "
                   "adopted) VALUES(1, ?1, ?2, ?3)", &q,
                "record the controller name", eb);
  if(!err) {
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, since ? since : sctime_wall_ms());
    sqlite3_bind_text(q, 3, json_object_to_json_string_ext(
                              arr, JSON_C_TO_STRING_PLAIN), -1,
                      SQLITE_TRANSIENT);
    err = sq_done(s, q, "record the controller name", eb);
  }
  json_object_put(arr);
  return err;
}

static sc_err sq_claim_name(store *base, const char *name,
                            const char *adopt_from, store_served_by *out,
                            sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  store_served_by cur;
  const char *what = "claim the store for a controller name";
  sc_err err;
  memset(&cur, 0, sizeof(cur));
  err = tx_begin(s, what, eb);
  if(!err)
    err = sq_exec(s, sq_controller_table, what, eb);
  if(!err)
    err = read_served_by(s, &cur, eb);
  if(!err && cur.name && strcmp(cur.name, name) &&
     !(adopt_from && !strcmp(adopt_from, cur.name))) {
    char since[SCTIME_RFC3339_MAX];
    sctime_format_rfc3339(cur.since_ms, since, sizeof(since));
    err = sc_errf(eb, SC_ERR_CONFLICT, "store %s is served by controller "
                  "'%s' (since %s); refusing to start as '%s'; to rename "
                  "use --adopt-from %s", s->label, cur.name, since, name,
                  cur.name);
  }
  else if(!err && (!cur.name || strcmp(cur.name, name) ||
                   (adopt_from && !name_in(&cur, adopt_from))))
  {
    /* a first claim, the rename, or one more name adopted (the name
     * stays, and so does its since) */
    bool rename = cur.name && strcmp(cur.name, name);
    err = write_served_by(s, name, cur.name && !rename ? cur.since_ms : 0,
                          cur.name ? &cur : NULL,
                          rename ? cur.name : adopt_from, eb);
  }
  err = tx_end(s, err, what, eb);
  store_served_by_clear(&cur);
  if(!err)
    err = read_served_by(s, out, eb);
  if(!err) {
    free(s->claimed);
    s->claimed = strdup(name);
    if(!s->claimed)
      err = sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  return err;
}

static const store_ops sq_ops = {
  "sqlite",          sq_close,         sq_list,   sq_get,
  sq_apply,          sq_update_spec,   sq_update_status,
  sq_delete,         sq_purge,         sq_watch_start,
  sq_watch_stop,
  NULL, NULL, NULL, NULL, NULL, /* no I/O to wait for: store.c answers */
  sq_check_identity, sq_claim_name, sq_served_by_get,
  NULL, NULL, /* no finalizers: store_finalizer.c answers with a get */
};
