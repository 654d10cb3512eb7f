/*
 * sqlite_crud.c - the SQLite backend's reads and writes (store.h): get,
 * list, apply, update spec and status, set one annotation, delete (a
 * tombstone) and purge.
 * Every change is one BEGIN IMMEDIATE transaction whose write goes
 * through save(): bump the revision, write the object row, append the
 * history row, compact the history. See sqlite_int.h and docs/store.md.
 */
#include "controller/store/sqlite/sqlite_write.h"
#include "api/session_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Read ns/name; *out NULL (and SC_OK) when there is no row. spec_text
 * (may be NULL): the row's spec column too (the caller frees it). */
static sc_err load_why(sq_store *s, const char *ns, const char *name,
                       session **out, char **spec_text, char *why,
                       size_t whylen, sc_errbuf *eb);

static sc_err load(sq_store *s, const char *ns, const char *name,
                   session **out, sc_errbuf *eb)
{
  return load_why(s, ns, name, out, NULL, NULL, 0, eb);
}

/* the same; a row that does not decode says why (no prefix) */
static sc_err load_why(sq_store *s, const char *ns, const char *name,
                       session **out, char **spec_text, char *why,
                       size_t whylen, sc_errbuf *eb)
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
  if(rc == SQLITE_ROW) {
    err = sq_row_to_session(s, q, false, false, out, why, whylen, eb);
    if(!err && spec_text && sq_dup_col(q, 9, spec_text)) /* OBJ_COLS */
      err = sc_errf(eb, SC_ERR_NOMEM, "%s: out of memory", s->label);
  }
  else if(rc != SQLITE_DONE)
    err = sq_fail(s, rc, "read", eb);
  sq_release(s, q);
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

/* The current row of ns/name, inside the write transaction of op:
 * NOT_FOUND when there is none, CONFLICT when expected (NULL: no check)
 * is not its resourceVersion. */
static sc_err load_current(sq_store *s, const char *op, const char *ns,
                           const char *name, const char *expected,
                           session **cur, char **spec_text, sc_errbuf *eb)
{
  sc_err err = load_why(s, ns, name, cur, spec_text, NULL, 0, eb);
  if(!err && !*cur)
    err = not_found(s, op, ns, name, eb);
  if(!err && expected)
    err = check_version(s, *cur, op, expected, eb);
  return err;
}

/* --- the meta row of a group's transaction (sqlite_write.h) --- */

sc_err sq_revs_read(sq_store *s, sq_revs *rv, sc_errbuf *eb)
{
  sc_err err = sq_read_revision(s, &rv->revision, &rv->compacted, eb);
  rv->revision0 = rv->revision;
  rv->compacted0 = rv->compacted;
  return err;
}

sc_err sq_revs_write(sq_store *s, const sq_revs *rv, sc_errbuf *eb)
{
  sqlite3_stmt *q;
  sc_err err;
  if(rv->revision == rv->revision0 && rv->compacted == rv->compacted0)
    return SC_OK;
  err = sq_prep(s, "UPDATE meta SET revision = ?1, compacted = ?2", &q,
                "bump revision", eb);
  if(err)
    return err;
  sqlite3_bind_int64(q, 1, rv->revision);
  sqlite3_bind_int64(q, 2, rv->compacted);
  return sq_done(s, q, "bump revision", eb);
}

/* The next revision: from the group's meta row when rv, else bumped in
 * the meta row itself. */
static sc_err next_revision(sq_store *s, sq_revs *rv, int64_t *revision,
                            int64_t *compacted, sc_errbuf *eb)
{
  sqlite3_stmt *q = NULL;
  sc_err err;
  if(rv) {
    *revision = ++rv->revision;
    *compacted = rv->compacted;
    return SC_OK;
  }
  err = sq_prep(s, "UPDATE meta SET revision = revision + 1"
                   " RETURNING revision, compacted", &q, "bump revision",
                eb);
  if(err)
    return err;
  err = sq_step_meta(s, q, "bump revision", eb);
  if(!err) {
    *revision = sqlite3_column_int64(q, 0);
    *compacted = sqlite3_column_int64(q, 1);
  }
  sq_release(s, q);
  return err;
}

/* Compaction: history keeps at least keep revisions; once it holds more
 * than keep+slack, the oldest go and the compaction mark moves up (in
 * the meta row, or in rv for the group to write). */
static sc_err maybe_compact(sq_store *s, int64_t rev, int64_t compacted,
                            sq_revs *rv, sc_errbuf *eb)
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
  if(rv) {
    rv->compacted = to;
    return SC_OK;
  }
  err = sq_prep(s, "UPDATE meta SET compacted = ?1", &q, "compact history",
                eb);
  if(err)
    return err;
  sqlite3_bind_int64(q, 1, to);
  return sq_done(s, q, "compact history", eb);
}

/* The status column and the history text of o after a status-only
 * change, without encoding the spec again: the history text is spliced
 * from the metadata (encoded alone), spec_text (the row's spec column,
 * as read in this transaction: valid JSON, it decoded) and the status,
 * in session_to_json()'s order; with the spec column as this program
 * writes it, the bytes are session_to_json()'s (test_store_sqlite checks
 * both). */
#define SQ_JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
static sc_err encode_status_whole(const session *o, const char *spec_text,
                                  sq_row_text *t)
{
  static const char head[] = "{\"apiVersion\":\"" SESSION_API_VERSION
                             "\",\"kind\":\"" SESSION_KIND
                             "\",\"metadata\":";
  static const char spec_key[] = ",\"spec\":", status_key[] = ",\"status\":";
  session m;
  json_object *j, *meta = NULL;
  const char *mtxt = NULL;
  size_t lm, ls, lt, n;
  sc_err err;
  char *p;
  memset(t, 0, sizeof(*t));
  err = session_status_to_json(&o->status, &t->status);
  if(err)
    return err;
  memset(&m, 0, sizeof(m));
  m.meta = o->meta; /* borrowed: only read */
  j = session_to_json_object(&m);
  if(j && json_object_object_get_ex(j, "metadata", &meta))
    mtxt = json_object_to_json_string_ext(meta, SQ_JSON_FLAGS);
  if(!mtxt) {
    json_object_put(j);
    return SC_ERR_NOMEM;
  }
  lm = strlen(mtxt);
  ls = strlen(spec_text);
  /* an empty status is left out of the whole object */
  lt = strcmp(t->status, "{}") ? strlen(t->status) : 0;
  n = sizeof(head) - 1 + lm + sizeof(spec_key) - 1 + ls +
      (lt ? sizeof(status_key) - 1 + lt : 0) + 1;
  p = t->whole = malloc(n + 1);
  if(p) {
    memcpy(p, head, sizeof(head) - 1);
    p += sizeof(head) - 1;
    memcpy(p, mtxt, lm);
    p += lm;
    memcpy(p, spec_key, sizeof(spec_key) - 1);
    p += sizeof(spec_key) - 1;
    memcpy(p, spec_text, ls);
    p += ls;
    if(lt) {
      memcpy(p, status_key, sizeof(status_key) - 1);
      p += sizeof(status_key) - 1;
      memcpy(p, t->status, lt);
      p += lt;
    }
    *p++ = '}';
    *p = '\0';
  }
  json_object_put(j);
  return t->whole ? SC_OK : SC_ERR_NOMEM;
}

/* Write *op as the new state of its key (inside a write transaction):
 * the next revision (rv: the group's, else the meta row's), the row,
 * the history event, compaction. Sets (*op)->meta.resource_version to
 * the new revision. status_only (the row's spec column as read in this
 * transaction, or NULL): only the status changed since then, and only
 * that column (and the revision) is written. take: the watches may keep *op itself instead of a copy
 * (*op NULL after; the caller frees what is left). */
static sc_err save_ex(sq_store *s, session **op, store_event_type type,
                      sq_revs *rv, const char *status_only, bool take,
                      sc_errbuf *eb)
{
  session *o = *op;
  sqlite3_stmt *q = NULL;
  sq_row_text t;
  char rev[STORE_REV_LEN], *rvs;
  int64_t revision, compacted;
  sc_err err;

  memset(&t, 0, sizeof(t));
  err = next_revision(s, rv, &revision, &compacted, eb);
  if(err)
    return err;
  store_rev_format(revision, rev);
  rvs = strdup(rev);
  if(!rvs)
    return SC_ERR_NOMEM;
  free(o->meta.resource_version);
  o->meta.resource_version = rvs;

  if(status_only ? encode_status_whole(o, status_only, &t)
                  : sq_row_encode(o, &t)) {
    err = sc_errf(eb, SC_ERR_NOMEM, "%s: out of memory encoding %s/%s",
                  s->label, o->meta.namespace_, o->meta.name);
    goto out;
  }

  if(status_only) {
    err = sq_prep(s, "UPDATE objects SET revision = ?3, status = ?4"
                     " WHERE namespace = ?1 AND name = ?2", &q,
                  "write object", eb);
    if(err)
      goto out;
    sqlite3_bind_text(q, 1, o->meta.namespace_, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, o->meta.name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, revision);
    sqlite3_bind_text(q, 4, t.status, -1, SQLITE_STATIC);
  }
  else {
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
    sqlite3_bind_text(q, 8, t.labels, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 9, t.annotations, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 10, t.spec, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 11, t.status, -1, SQLITE_STATIC);
  }
  err = sq_done(s, q, "write object", eb);
  if(!err && status_only && sqlite3_changes(s->db) != 1)
    /* the row was read in this very transaction */
    err = sc_errf(eb, SC_ERR_INTERNAL, "%s: write object %s/%s: the row "
                  "is gone", s->label, o->meta.namespace_, o->meta.name);
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
  sqlite3_bind_text(q, 5, t.whole, -1, SQLITE_STATIC);
  err = sq_done(s, q, "append history", eb);
  if(!err)
    err = maybe_compact(s, revision, compacted, rv, eb);
  if(!err && take)
    sq_own_note_take(s, revision, &t.whole, op);
  else if(!err)
    sq_own_note(s, revision, &t.whole, o);
out:
  sq_row_text_free(&t);
  return err;
}

/* Write o as the new state of its key (inside a write transaction of
 * its own): the whole row, the meta row bumped. */
static sc_err save(sq_store *s, session *o, store_event_type type,
                   sc_errbuf *eb)
{
  return save_ex(s, &o, type, NULL, NULL, false, eb);
}

/* --- reads --- */

sc_err sq_list(store *base, const store_list_opts *opts,
               store_list_result *out, sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  sqlite3_stmt *q = NULL;
  char rev[STORE_REV_LEN], why[SC_ERRBUF_SIZE];
  int64_t revision = 0, dv = 0;
  size_t alloc = 0;
  sc_err err;
  int rc;
  /* the pass's list: every row, shared (the one kept, sq_last_keep) */
  bool whole = !opts->namespace_ && opts->include_deleted && opts->shared;

  sq_group_flush(s); /* status writes queued before this list */
  /* One read transaction: the revision and the rows are one snapshot. */
  err = sq_run(s, "BEGIN", "list", eb);
  if(err)
    return err;
  err = sq_read_revision(s, &revision, NULL, eb);
  if(!err && whole)
    err = sq_data_version(s, &dv, eb); /* of this snapshot */
  if(!err && whole && sq_last_usable(s, revision, dv)) {
    /* nothing changed the file since the last one: the same objects */
    err = sq_last_hand_out(s, out);
    if(!err)
      s->lists++;
    goto out;
  }
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
  sq_cache_sweep_begin(s);
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
    err = sq_row_to_session(s, q, true, opts->shared, &o, why,
                            sizeof(why), eb);
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
  else if(!opts->namespace_ && opts->include_deleted)
    sq_cache_sweep_end(s); /* every row was seen: the others are gone */
  if(!err)
    s->lists++;
  if(!err && whole)
    sq_last_keep(s, out, revision, dv);
out:
  sq_release(s, q);
  err = sq_tx_end(s, err, "list", eb);
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

sc_err sq_get(store *base, const char *ns, const char *name,
              session **out, sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  char why[SC_ERRBUF_SIZE];
  sc_err err;
  sq_group_flush(s);
  why[0] = '\0';
  err = load_why(s, ns, name, out, NULL, why, sizeof(why), eb);
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
  if(cur && cur->meta.deletion_timestamp) {
    /* A held tombstone: its sandbox is not confirmed gone yet, and the
     * tombstone is the store's only record that the sandbox (tagged with
     * the old uid) must go. Replacing it would turn that sandbox into an
     * orphan judged by absence; so, as the API server answers a create
     * while a finalizer holds the object, the name is refused until the
     * controller purges it (docs/store.md, "A name applied again"). */
    err = sc_errf(eb, SC_ERR_CONFLICT, "%s: apply %s/%s: %s", s->label,
                  in->meta.namespace_, in->meta.name,
                  STORE_BEING_DELETED_MSG);
    goto out;
  }
  if(!cur) {
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

sc_err sq_apply(store *base, session *const *objs, size_t n,
                store_apply_outcome *outcomes, sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  sc_err err;
  size_t i;
  sq_group_flush(s);
  err = sq_tx_begin(s, "apply", eb);
  if(err)
    return err;
  for(i = 0; i < n && !err; i++) {
    store_apply_outcome oc = STORE_APPLY_UNCHANGED;
    err = apply_one(s, objs[i], &oc, eb);
    if(!err && outcomes)
      outcomes[i] = oc;
  }
  return sq_tx_end(s, err, "apply", eb);
}

/* End the transaction of an update (commit when err is SC_OK) and give
 * the version it left (new_version may be NULL); frees cur. */
static sc_err update_end(sq_store *s, sc_err err, const char *op,
                         session *cur, char **new_version, sc_errbuf *eb)
{
  err = sq_tx_end(s, err, op, eb);
  if(!err && new_version) {
    *new_version = strdup(cur->meta.resource_version);
    if(!*new_version)
      err = SC_ERR_NOMEM;
  }
  session_free(cur);
  return err;
}

sc_err sq_update_spec(store *base, const char *ns, const char *name,
                      const char *expected_version,
                      const session_spec *spec, char **new_version,
                      sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  session *cur = NULL;
  sc_err err;
  sq_group_flush(s);
  err = sq_tx_begin(s, "update spec", eb);
  if(err)
    return err;
  err = load_current(s, "update spec", ns, name, expected_version, &cur, NULL,
                     eb);
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
  return update_end(s, err, "update spec", cur, new_version, eb);
}

/* The compare-and-set of a status inside the caller's write transaction
 * (rv: a group's, or NULL); move (or NULL): the status, taken over when
 * it is written (left empty) instead of status copied; *cur (freed by the caller) is the object as
 * it stands after it, or NULL once the watches took it (*new_version
 * has its version then). */
static sc_err status_in_tx(sq_store *s, sq_revs *rv, const char *ns,
                           const char *name, const char *expected_version,
                           const session_status *status,
                           session_status *move, session **cur, bool take,
                           char **new_version, sc_errbuf *eb)
{
  char *spec_text = NULL;
  sc_err err = load_current(s, "update status", ns, name, expected_version,
                            cur, &spec_text, eb);
  if(move)
    status = move;
  if(!err && !session_status_equal(&(*cur)->status, status)) {
    session_status_clear(&(*cur)->status);
    if(move) { /* the queue's copy, taken over */
      (*cur)->status = *move;
      memset(move, 0, sizeof(*move));
    }
    else if(session_status_copy(&(*cur)->status, status))
      err = sc_errf(eb, SC_ERR_NOMEM, "%s: out of memory", s->label);
    if(!err)
      err = save_ex(s, cur, STORE_EVENT_MODIFIED, rv, spec_text,
                    take && rv, eb);
  }
  free(spec_text);
  if(!err && new_version) {
    /* (*cur may have gone to the watches: the version is the one saved) */
    char rev[STORE_REV_LEN];
    if(!*cur) {
      store_rev_format(rv->revision, rev);
      *new_version = strdup(rev);
    }
    else
      *new_version = strdup((*cur)->meta.resource_version);
    if(!*new_version)
      err = sc_errf(eb, SC_ERR_NOMEM, "%s: out of memory", s->label);
  }
  return err;
}

sc_err sq_status_write_group(sq_store *s, sq_revs *rv, const char *ns,
                             const char *name, const char *expected_version,
                             session_status *status, char **new_version,
                             sc_errbuf *eb)
{
  session *cur = NULL;
  sc_err err = status_in_tx(s, rv, ns, name, expected_version, NULL, status,
                            &cur, true, new_version, eb);
  session_free(cur);
  return err;
}

sc_err sq_update_status(store *base, const char *ns, const char *name,
                        const char *expected_version,
                        const session_status *status,
                        char **new_version, sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  session *cur = NULL;
  sc_err err;
  sq_group_flush(s);
  err = sq_tx_begin(s, "update status", eb);
  if(err)
    return err;
  err = status_in_tx(s, NULL, ns, name, expected_version, status, NULL,
                     &cur, false, NULL, eb);
  return update_end(s, err, "update status", cur, new_version, eb);
}

/* Remove the row of ns/name inside the caller's transaction (purge, and
 * delete of an object no controller took on). */
static sc_err remove_row(sq_store *s, const char *op, const char *ns,
                         const char *name, sc_errbuf *eb)
{
  sqlite3_stmt *q;
  sc_err err = sq_prep(s, "DELETE FROM objects WHERE namespace = ?1"
                          " AND name = ?2", &q, op, eb);
  if(err)
    return err;
  sqlite3_bind_text(q, 1, ns, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
  err = sq_done(s, q, op, eb);
  if(!err)
    sq_cache_drop(s, ns, name);
  return err;
}

sc_err sq_delete(store *base, const char *ns, const char *name,
                 sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  session *cur = NULL;
  sc_err err;
  sq_group_flush(s);
  err = sq_tx_begin(s, "delete", eb);
  if(err)
    return err;
  err = load_current(s, "delete", ns, name, NULL, &cur, NULL, eb);
  if(!err && !cur->meta.deletion_timestamp) {
    session_status none;
    bool taken_on;
    memset(&none, 0, sizeof(none));
    /* SQLite's form of the controller's finalizer: a status written. No
     * status, no claim, so no sandbox was made for this uid nor can be
     * (a claim's compare-and-set finds the row gone): the object goes at
     * once, as an object without the finalizer does on Kubernetes. */
    taken_on = !session_status_equal(&cur->status, &none);
    cur->meta.deletion_timestamp = sctime_wall_ms();
    err = save(s, cur, STORE_EVENT_DELETED, eb);
    if(!err && !taken_on)
      err = remove_row(s, "delete", ns, name, eb);
  }
  session_free(cur);
  return sq_tx_end(s, err, "delete", eb);
}

sc_err sq_purge(store *base, const char *ns, const char *name,
                const char *expected_version, sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  session *cur = NULL;
  sc_err err;
  sq_group_flush(s);
  err = sq_tx_begin(s, "purge", eb);
  if(err)
    return err;
  err = load_current(s, "purge", ns, name, expected_version, &cur, NULL, eb);
  if(!err && !cur->meta.deletion_timestamp)
    err = sc_errf(eb, SC_ERR_INVALID,
                  "%s: purge %s/%s: the session is not deleted", s->label,
                  ns, name);
  /* No revision and no history: watchers had the DELETED event. */
  if(!err)
    err = remove_row(s, "purge", ns, name, eb);
  session_free(cur);
  return sq_tx_end(s, err, "purge", eb);
}

/* Take key out of l (sc_kvlist has no removal; l stays sorted). */
static sc_err kv_remove(sc_kvlist *l, const char *key)
{
  size_t i;
  for(i = 0; i < l->n; i++)
    if(!strcmp(l->items[i].key, key)) {
      free(l->items[i].key);
      free(l->items[i].value);
      memmove(l->items + i, l->items + i + 1,
              (l->n - i - 1) * sizeof(*l->items));
      l->n--;
      break;
    }
  return SC_OK;
}

sc_err sq_set_annotation(store *base, const char *ns, const char *name,
                         const char *expected_version, const char *key,
                         const char *value, char **new_version,
                         sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  session *cur = NULL;
  const char *have;
  sc_err err;
  sq_group_flush(s);
  err = sq_tx_begin(s, "set annotation", eb);
  if(err)
    return err;
  err = load_current(s, "set annotation", ns, name, expected_version, &cur, NULL,
                     eb);
  if(!err && cur->meta.deletion_timestamp)
    err = sc_errf(eb, SC_ERR_NOT_FOUND,
                  "%s: set annotation %s/%s: the session is deleted",
                  s->label, ns, name);
  if(err)
    return update_end(s, err, "set annotation", cur, new_version, eb);
  have = sc_kvlist_get(&cur->meta.annotations, key);
  if(value ? have && !strcmp(have, value) : !have)
    return update_end(s, SC_OK, "set annotation", cur, new_version, eb);
  if(value)
    err = sc_kvlist_set(&cur->meta.annotations, key, value);
  else
    err = kv_remove(&cur->meta.annotations, key);
  if(err)
    err = sc_errf(eb, SC_ERR_NOMEM, "%s: out of memory", s->label);
  else /* annotations are not spec: the generation stays */
    err = save(s, cur, STORE_EVENT_MODIFIED, eb);
  return update_end(s, err, "set annotation", cur, new_version, eb);
}
