/*
 * sqlite_cache.c - the SQLite backend's decode cache: the object each row
 * decoded to, kept by (namespace, name) with the row's uid and revision,
 * so that a list or a compare-and-set read of a row that did not change
 * since it was last decoded copies the object instead of parsing its
 * JSON columns again. See sqlite_int.h and docs/store.md ("Cost").
 *
 * Every write of a row gives it a new revision (the store's counter), so
 * a row with the uid and revision of an entry holds what the entry was
 * decoded from. A recreated object (new uid) and a rewritten row (new
 * revision) miss. The one way a revision number is given twice is a
 * rolled-back transaction: sq_tx_end() clears the cache then. Another
 * tool may still change a row without a new revision (it bypasses the
 * store's rules, but a list has always shown what the row holds): a hit
 * also needs the same content hash (generation, timestamps and the bytes
 * of the four JSON columns, with a per-process seed), which costs a
 * pass over the row's bytes, far less than parsing them.
 */
#include "controller/store/sqlite/sqlite_int.h"
#include "lib/hmap.h"

#include <stdlib.h>
#include <string.h>

typedef struct sq_centry {
  session *obj;              /* the decoded row (the cache's) */
  int64_t revision;
  uint64_t content;          /* sq_row_content() of the row */
  uint64_t hash;
  uint64_t mark;             /* the sweep that last saw it */
} sq_centry;

typedef struct ckey {
  const char *ns, *name;
} ckey;

static bool centry_eq(const void *value, const void *key, void *ud)
{
  const sq_centry *e = value;
  const ckey *k = key;
  (void)ud;
  return !strcmp(e->obj->meta.name, k->name) &&
         !strcmp(e->obj->meta.namespace_, k->ns);
}

static uint64_t ckey_hash(const sq_store *s, const char *ns,
                          const char *name)
{
  uint64_t h = sc_hash_strn(s->cache_seed, ns, strlen(ns));
  return sc_hash_fin(sc_hash_strn(h, name, strlen(name)));
}

static void centry_free(sq_centry *e)
{
  if(e) {
    session_free(e->obj);
    free(e);
  }
}

uint64_t sq_row_content(const sq_store *s, sqlite3_stmt *q)
{
  uint64_t h = sc_hash_word(s->cache_seed,
                            (uint64_t)sqlite3_column_int64(q, 3));
  int col;
  h = sc_hash_word(h, (uint64_t)sqlite3_column_int64(q, 5));
  h = sc_hash_word(h, (uint64_t)sqlite3_column_int64(q, 6));
  for(col = 7; col <= 10; col++) {
    const char *txt = (const char *)sqlite3_column_text(q, col);
    size_t n = (size_t)sqlite3_column_bytes(q, col);
    h = sc_hash_strn(h, txt ? txt : "", txt ? n : 0);
  }
  return sc_hash_fin(h);
}

sc_err sq_cache_init(sq_store *s)
{
  s->cache = sc_hmap_new(0);
  s->cache_seed = sc_hash_seed();
  return s->cache ? SC_OK : SC_ERR_NOMEM;
}

void sq_cache_clear(sq_store *s)
{
  size_t it = 0;
  sq_centry *e;
  sq_last_forget(s);
  if(!s->cache)
    return;
  while((e = sc_hmap_each(s->cache, &it)))
    centry_free(e);
  sc_hmap_clear(s->cache);
}

void sq_cache_free(sq_store *s)
{
  sq_cache_clear(s);
  sc_hmap_free(s->cache);
  s->cache = NULL;
}

size_t sq_cache_count(const sq_store *s)
{
  return s->cache ? sc_hmap_count(s->cache) : 0;
}

const session *sq_cache_get(sq_store *s, const char *ns, const char *name,
                            const char *uid, int64_t revision,
                            uint64_t content)
{
  ckey k = {ns, name};
  sq_centry *e;
  if(!s->cache || !ns || !name || !uid)
    return NULL;
  e = sc_hmap_get(s->cache, ckey_hash(s, ns, name), centry_eq, &k, NULL);
  if(!e || e->revision != revision || e->content != content ||
     strcmp(e->obj->meta.uid, uid))
    return NULL;
  e->mark = s->cache_mark;
  return e->obj;
}

void sq_cache_drop(sq_store *s, const char *ns, const char *name)
{
  ckey k = {ns, name};
  if(s->cache)
    centry_free(sc_hmap_remove(s->cache, ckey_hash(s, ns, name), centry_eq,
                               &k, NULL));
}

void sq_cache_put(sq_store *s, const session *o, int64_t revision,
                  uint64_t content, bool share)
{
  sq_centry *e;
  if(!s->cache)
    return;
  sq_cache_drop(s, o->meta.namespace_, o->meta.name);
  e = calloc(1, sizeof(*e));
  if(e)
    e->obj = share ? session_ref(o) : session_dup(o);
  if(!e || !e->obj) { /* out of memory: not cached, decoded next time */
    centry_free(e);
    return;
  }
  e->revision = revision;
  e->content = content;
  e->hash = ckey_hash(s, o->meta.namespace_, o->meta.name);
  e->mark = s->cache_mark;
  if(sc_hmap_put(s->cache, e->hash, e))
    centry_free(e);
}

void sq_cache_sweep_begin(sq_store *s)
{
  s->cache_mark++;
}

void sq_cache_sweep_end(sq_store *s)
{
  size_t it = 0, n = 0, i;
  sq_centry *e, **gone;
  if(!s->cache || !sc_hmap_count(s->cache))
    return;
  /* collected first: a removal moves the slots after it */
  gone = malloc(sc_hmap_count(s->cache) * sizeof(*gone));
  if(!gone) { /* out of memory: forget everything (a cache) */
    sq_cache_clear(s);
    return;
  }
  while((e = sc_hmap_each(s->cache, &it)))
    if(e->mark != s->cache_mark)
      gone[n++] = e;
  for(i = 0; i < n; i++) {
    sc_hmap_remove_value(s->cache, gone[i]->hash, gone[i]);
    centry_free(gone[i]);
  }
  free(gone);
}

/* --- the last full list (sqlite_int.h) --- */

sc_err sq_data_version(sq_store *s, int64_t *dv, sc_errbuf *eb)
{
  sqlite3_stmt *q;
  sc_err err = sq_prep(s, "PRAGMA data_version", &q, "list", eb);
  int rc;
  if(err)
    return err;
  rc = sqlite3_step(q);
  if(rc == SQLITE_ROW)
    *dv = sqlite3_column_int64(q, 0);
  else
    err = sq_fail(s, rc == SQLITE_DONE ? SQLITE_CORRUPT : rc,
                  "list: data_version", eb);
  sq_release(s, q);
  return err;
}

bool sq_last_usable(const sq_store *s, int64_t revision, int64_t dv)
{
  return s->last_ok && s->last_revision == revision && s->last_dv == dv &&
         s->last_changes == (int64_t)sqlite3_total_changes64(s->db);
}

sc_err sq_last_hand_out(sq_store *s, store_list_result *out)
{
  session **items;
  size_t i;
  items = malloc((s->n_last ? s->n_last : 1) * sizeof(*items));
  if(!items)
    return SC_ERR_NOMEM;
  for(i = 0; i < s->n_last; i++)
    items[i] = session_ref(s->last[i]);
  free(out->items);
  out->items = items;
  out->n = s->n_last;
  s->last_hits++;
  return SC_OK;
}

void sq_last_forget(sq_store *s)
{
  size_t i;
  for(i = 0; i < s->n_last; i++)
    session_free(s->last[i]);
  free(s->last);
  s->last = NULL;
  s->n_last = 0;
  s->last_ok = false;
}

void sq_last_keep(sq_store *s, const store_list_result *out,
                  int64_t revision, int64_t dv)
{
  size_t i;
  sq_last_forget(s);
  if(out->n_skipped)
    return; /* its skip reports come from reading the rows */
  for(i = 0; i < out->n; i++)
    if(!session_shared(out->items[i]))
      return; /* a copy of the caller's own (the cache did not fill) */
  s->last = malloc((out->n ? out->n : 1) * sizeof(*s->last));
  if(!s->last)
    return; /* out of memory: the next list reads the rows */
  for(i = 0; i < out->n; i++)
    s->last[i] = session_ref(out->items[i]);
  s->n_last = out->n;
  s->last_revision = revision;
  s->last_dv = dv;
  s->last_changes = (int64_t)sqlite3_total_changes64(s->db);
  s->last_ok = true;
}
