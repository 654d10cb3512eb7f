/*
 * sqlite.c - the sqlite:PATH store backend (docs/store.md): open and
 * close, the schema, the file's identity, the row codec, and the backend
 * table (sq_ops, at the end). The other sqlite_*.c files hold the rest;
 * sqlite_int.h says which.
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
 *
 * test/fuzz/fuzz_store_decode.c includes this file to reach the static
 * labels decoder (kv_from_json): keep the codec here.
 */
#include "controller/store/sqlite/sqlite_int.h"
#include "api/session_json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>

#define SQ_SCHEMA_VERSION 1
#define SQ_DEFAULT_BUSY_MS 5000
#define SQ_DEFAULT_POLL_MS 100
#define SQ_DEFAULT_KEEP 10000

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

static const store_ops sq_ops;

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
static sc_err kv_from_json_tok(json_tokener *tok, const char *txt,
                               sc_kvlist *out)
{
  json_object *o;
  sc_err err = SC_OK;
  if(!tok)
    o = json_tokener_parse(txt ? txt : "");
  else { /* as json_tokener_parse, without a tokener of its own */
    json_tokener_reset(tok);
    json_tokener_set_flags(tok, 0);
    o = json_tokener_parse_ex(tok, txt ? txt : "", -1);
    if(json_tokener_get_error(tok) != json_tokener_success) {
      json_object_put(o);
      o = NULL;
    }
  }
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

/* (test/fuzz/fuzz_store_decode.c calls it) */
static sc_err kv_from_json(const char *txt, sc_kvlist *out)
  __attribute__((unused));
static sc_err kv_from_json(const char *txt, sc_kvlist *out)
{
  return kv_from_json_tok(NULL, txt, out);
}

/* --- rows --- */

sc_err sq_row_to_session(sq_store *s, sqlite3_stmt *q, bool fill,
                         bool share, session **out, char *why,
                         size_t whylen, sc_errbuf *eb)
{
  session *o;
  char rev[STORE_REV_LEN];
  sc_errbuf e;
  sc_err err;
  const char *part = "";
  const session *hit;
  int64_t revision = sqlite3_column_int64(q, 4);
  uint64_t content = sq_row_content(s, q);
  *out = NULL;
  /* unchanged since it was decoded: a copy (or the object itself, to a
   * reader that shares), no JSON */
  hit = sq_cache_get(s, (const char *)sqlite3_column_text(q, 0),
                     (const char *)sqlite3_column_text(q, 1),
                     (const char *)sqlite3_column_text(q, 2), revision,
                     content);
  if(hit) {
    *out = fill && share ? session_ref(hit) : session_dup(hit);
    if(!*out)
      return sc_errf(eb, SC_ERR_NOMEM, "%s: out of memory reading an "
                     "object", s->label);
    return SC_OK;
  }
  o = session_new();
  if(!o)
    return SC_ERR_NOMEM;
  e.msg[0] = 0;
  err = sq_dup_col(q, 0, &o->meta.namespace_);
  if(!err)
    err = sq_dup_col(q, 1, &o->meta.name);
  if(!err)
    err = sq_dup_col(q, 2, &o->meta.uid);
  if(err)
    goto out;
  o->meta.generation = sqlite3_column_int64(q, 3);
  store_rev_format(revision, rev);
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
  err = kv_from_json_tok(s->tok, (const char *)sqlite3_column_text(q, 7),
                         &o->meta.labels);
  if(!err) {
    part = "annotations";
    err = kv_from_json_tok(s->tok, (const char *)sqlite3_column_text(q, 8),
                           &o->meta.annotations);
  }
  if(!err) {
    part = "spec";
    err = session_spec_from_json_tok(
      s->tok, (const char *)sqlite3_column_text(q, 9), &o->spec, &e);
  }
  if(!err) {
    part = "status";
    err = session_status_from_json_tok(
      s->tok, (const char *)sqlite3_column_text(q, 10), &o->status, &e);
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
  if(fill && s->lists)
    sq_cache_put(s, o, revision, content, share);
  *out = o;
  return SC_OK;
}

sc_err sq_row_encode(const session *o, sq_row_text *t)
{
  memset(t, 0, sizeof(*t));
  if(kv_to_json(&o->meta.labels, &t->labels) ||
     kv_to_json(&o->meta.annotations, &t->annotations) ||
     session_spec_to_json(&o->spec, &t->spec) ||
     session_status_to_json(&o->status, &t->status) ||
     session_to_json(o, &t->whole))
    return SC_ERR_NOMEM;
  return SC_OK;
}

void sq_row_text_free(sq_row_text *t)
{
  free(t->labels);
  free(t->annotations);
  free(t->spec);
  free(t->status);
  free(t->whole);
}

/* --- open and close --- */

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
  sc_err err = sq_pragma_int(s, "SELECT count(*) FROM sqlite_master", &tables,
                             eb);
  if(!err)
    err = sq_pragma_int(s, "PRAGMA user_version", &v, eb);
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
      err = sq_prep_once(s, "PRAGMA journal_mode = WAL", &q, "enable WAL",
                         eb);
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
  err = sq_tx_begin(s, "create the schema", eb);
  if(err)
    return err;
  err = check_schema(s, &version, eb);
  if(!err && version == 0) {
    err = sq_exec(s, sq_schema, "create the schema", eb);
    if(!err)
      err = sq_exec(s, "PRAGMA user_version = 1", "create the schema", eb);
    s->base.created = !err;
  }
  err = sq_tx_end(s, err, "create the schema", eb);
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
  s->tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
  if(!s->path || !s->tok || sq_cache_init(s)) {
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

static void sq_close(store *base)
{
  sq_store *s = (sq_store *)base;
  while(s->watches)
    sq_watch_free(s->watches);
  sq_group_close(s);
  sq_own_free(s);
  sq_stmts_free(s);
  sqlite3_close_v2(s->db);
  sq_cache_free(s);
  if(s->tok)
    json_tokener_free(s->tok);
  free(s->label);
  free(s->path);
  free(s->claimed);
  free(s);
}

/* --- the file's identity (and the name claimed, sqlite_name.c) --- */

static sc_err sq_check_identity(store *base, sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  struct stat sb;
  sqlite3_stmt *q = NULL;
  sc_errbuf ignored;
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
  if(!sq_prep(s, "SELECT name FROM controller WHERE id = 1", &q,
              "check the controller name", &ignored)) {
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
  sq_release(s, q);
  return err;
}

static const store_ops sq_ops = {
  "sqlite",          sq_close,         sq_list,   sq_get,
  sq_apply,          sq_update_spec,   sq_update_status,
  sq_delete,         sq_purge,         sq_watch_start,
  sq_watch_stop,
  /* list, get and purge: no I/O to wait for, store.c answers; status
   * writes are queued and committed in groups (sqlite_group.c) */
  NULL, NULL, sq_update_status_async, NULL, sq_async_inflight,
  sq_check_identity, sq_claim_name, sq_served_by_get,
  NULL, NULL, /* no finalizers: store_finalizer.c answers with a get */
  sq_write_probe,
  sq_set_annotation,
};
