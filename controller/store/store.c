/* store.c - the store URL dispatch and the helpers backends share. */
#include "controller/store/backend.h"
#include "lib/hmap.h"
#include "lib/scstr.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include "lib/sctime.h"
#include "controller/ops/log.h"
#include "controller/ops/metrics.h"

/* --- objects that do not decode (store.h) --- */

#define STORE_SKIP_LOG_INTERVAL_MS (10 * 60 * 1000)
#define STORE_SKIP_SEEN_MAX 1024 /* objects remembered for the rate limit */

/* what was logged about one object, and when (monotonic) */
typedef struct store_skip_seen {
  char *key;     /* ns/name, or the reason when the object has no name */
  char *reason;
  int64_t at_ms;
} store_skip_seen;

static void skip_seen_free(store *st)
{
  size_t i;
  for(i = 0; i < st->n_seen; i++) {
    free(st->seen[i].key);
    free(st->seen[i].reason);
  }
  free(st->seen);
  st->seen = NULL;
  st->n_seen = 0;
}

sc_err store_declare_metrics(metrics *m)
{
  sc_err err = metrics_declare(m, "session_controller_objects_skipped_total",
                               METRIC_COUNTER, "Store objects left out "
                               "because they do not decode, by store and "
                               "where (list, watch, get).", NULL, 0);
  if(!err)
    err = metrics_declare(m, "session_controller_objects_invalid",
                          METRIC_GAUGE, "Objects the last list of every "
                          "namespace left out because they do not decode.",
                          NULL, 0);
  return err;
}

/* true when key was not logged with this reason within the interval; the
 * table then says it was, now */
static bool skip_due(store *st, const char *key, const char *reason)
{
  int64_t now = sctime_mono_ms();
  store_skip_seen *e = NULL;
  size_t i, oldest = 0;
  for(i = 0; i < st->n_seen; i++) {
    if(!strcmp(st->seen[i].key, key)) {
      e = &st->seen[i];
      break;
    }
    if(st->seen[i].at_ms < st->seen[oldest].at_ms)
      oldest = i;
  }
  if(e && !strcmp(e->reason, reason) && now - e->at_ms < st->skip_interval_ms)
    return false;
  if(!e && st->n_seen < STORE_SKIP_SEEN_MAX) {
    store_skip_seen *n = realloc(st->seen, (st->n_seen + 1) * sizeof(*n));
    if(!n)
      return true; /* logged, not remembered */
    st->seen = n;
    e = &st->seen[st->n_seen++];
    e->key = e->reason = NULL;
  }
  else if(!e)
    e = &st->seen[oldest]; /* full: forget the oldest */
  free(e->key);
  free(e->reason);
  e->key = strdup(key);
  e->reason = strdup(reason);
  e->at_ms = now;
  if(!e->key || !e->reason) { /* out of memory: drop the entry */
    free(e->key);
    free(e->reason);
    *e = st->seen[--st->n_seen];
  }
  return true;
}

sc_err store_skip_report(store *st, store_list_result *res,
                         const char *where, const char *ns,
                         const char *name, const char *uid,
                         const char *reason, bool *logged)
{
  char key[2 * STORE_KEY_MAX + 2], labels[96];
  bool due;
  if(logged)
    *logged = false;
  if(ns && name)
    snprintf(key, sizeof(key), "%s/%s", ns, name);
  else
    snprintf(key, sizeof(key), "%s", reason);
  snprintf(labels, sizeof(labels), "store=\"%s\",where=\"%s\"",
           st->ops->name, where);
  metrics_add(st->metrics, "session_controller_objects_skipped_total",
              labels, 1);
  due = skip_due(st, key, reason);
  if(due && st->log) {
    char every[32];
    snprintf(every, sizeof(every), "%llds",
             (long long)(st->skip_interval_ms / 1000));
    log_kv(st->log, LOG_WARN, "store object skipped: it does not decode, "
           "so it is not reconciled", "store", store_url(st), "object",
           ns && name ? key : "(no usable name)", "uid", uid ? uid : "",
           "seen_in", where, "reason", reason, "repeats_every", every,
           NULL);
  }
  if(logged)
    *logged = due;
  if(res) {
    store_skipped *n = realloc(res->skipped,
                               (res->n_skipped + 1) * sizeof(*n));
    bool oom = false;
    if(!n)
      return SC_ERR_NOMEM;
    res->skipped = n;
    n += res->n_skipped;
    n->ns = sc_strdup_opt(ns, &oom);
    n->name = sc_strdup_opt(name, &oom);
    n->uid = sc_strdup_opt(uid, &oom);
    n->reason = sc_strdup_opt(reason, &oom);
    res->n_skipped++; /* freed whole by store_list_result_free */
    if(oom)
      return SC_ERR_NOMEM;
  }
  return SC_OK;
}

void store_skip_list_done(store *st, const store_list_result *res)
{
  char labels[48];
  snprintf(labels, sizeof(labels), "store=\"%s\"", st->ops->name);
  metrics_set(st->metrics, "session_controller_objects_invalid", labels,
              (double)res->n_skipped);
}

sc_err store_open(const char *url, const store_open_opts *opts, store **out,
                  sc_errbuf *eb)
{
  static const store_open_opts no_opts;
  sc_err err;
  *out = NULL;
  if(!url || !*url)
    return sc_errf(eb, SC_ERR_INVALID, "store: empty store URL");
  if(!opts)
    opts = &no_opts;
  if(opts->busy_timeout_ms < 0 || opts->poll_interval_ms < 0 ||
     opts->history_keep < 0 || opts->watch_timeout_s < 0)
    return sc_errf(eb, SC_ERR_INVALID,
                   "store %s: busy timeout, poll interval and history "
                   "size must not be negative", url);
  if(!strncmp(url, "sqlite:", 7)) {
    if(!url[7])
      return sc_errf(eb, SC_ERR_INVALID,
                     "store %s: no database path (want sqlite:PATH)", url);
    err = store_sqlite_open(url + 7, opts, out, eb);
  }
  else if(!strcmp(url, "kube"))
    err = store_kube_open(NULL, opts, out, eb);
  else if(!strncmp(url, "kube:", 5)) {
    if(!url[5])
      return sc_errf(eb, SC_ERR_INVALID,
                     "store %s: no context name (want kube or kube:CONTEXT)",
                     url);
    err = store_kube_open(url + 5, opts, out, eb);
  }
  else
    return sc_errf(eb, SC_ERR_INVALID,
                   "store %s: unknown store URL (want sqlite:PATH, kube or "
                   "kube:CONTEXT)", url);
  if(!err) {
    (*out)->base = opts->base; /* the loop of the asynchronous calls */
    (*out)->log = opts->log;
    (*out)->metrics = opts->metrics;
    (*out)->skip_interval_ms = opts->skip_log_interval_ms > 0
                               ? opts->skip_log_interval_ms
                               : STORE_SKIP_LOG_INTERVAL_MS;
    (*out)->url = strdup(url);
    if(!(*out)->url) {
      store_close(*out);
      *out = NULL;
      return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
    }
  }
  return err;
}

/* an answer of a backend without asynchronous ops, held for the loop */
typedef struct store_deferred {
  store *st;
  struct event *ev;
  store_reply_cb cb;
  void *ud;
  store_reply rep;
  sc_errbuf eb;
  struct store_deferred *prev, *next; /* st->deferred */
} store_deferred;

static void reply_clear(store_reply *rep)
{
  session_free(rep->obj);
  store_list_result_free(&rep->list);
  free(rep->new_version);
  memset(rep, 0, sizeof(*rep));
}

/* constant time: thousands may wait for one turn of the loop */
static void deferred_unlink_free(store_deferred *d)
{
  if(d->prev)
    d->prev->next = d->next;
  else
    d->st->deferred = d->next;
  if(d->next)
    d->next->prev = d->prev;
  d->st->n_deferred--;
  if(d->ev)
    event_free(d->ev);
  reply_clear(&d->rep);
  free(d);
}

void store_close(store *st)
{
  if(!st)
    return;
  while(st->deferred)
    deferred_unlink_free(st->deferred);
  skip_seen_free(st);
  free(st->url);
  st->url = NULL;
  st->ops->close(st);
}

const char *store_backend(const store *st)
{
  return st ? st->ops->name : "";
}

const char *store_url(const store *st)
{
  return st && st->url ? st->url : "";
}

bool store_created(const store *st)
{
  return st && st->created;
}

bool store_has_write_probe(const store *st)
{
  return st && st->ops->write_probe;
}

sc_err store_write_probe(store *st, sc_errbuf *eb)
{
  if(!st || !st->ops->write_probe)
    return sc_errf(eb, SC_ERR_INVALID, "this store has no write probe");
  return st->ops->write_probe(st, eb);
}

sc_err store_check_identity(store *st, sc_errbuf *eb)
{
  if(!st->ops->check_identity)
    return SC_OK;
  return st->ops->check_identity(st, eb);
}

void store_served_by_clear(store_served_by *sb)
{
  size_t i;
  if(!sb)
    return;
  free(sb->name);
  for(i = 0; i < sb->n_adopted; i++)
    free(sb->adopted[i]);
  free(sb->adopted);
  memset(sb, 0, sizeof(*sb));
}

/* A controller name as lea.managed-by carries it: 1..253 bytes, no
 * control characters. */
static sc_err check_controller_name(const char *name, const char *what,
                                    sc_errbuf *eb)
{
  size_t i, len = name ? strlen(name) : 0;
  if(!len)
    return sc_errf(eb, SC_ERR_INVALID, "%s: empty controller name", what);
  if(len > STORE_KEY_MAX)
    return sc_errf(eb, SC_ERR_INVALID, "%s: controller name of %zu bytes "
                   "(at most %d)", what, len, STORE_KEY_MAX);
  for(i = 0; i < len; i++)
    if((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
      return sc_errf(eb, SC_ERR_INVALID, "%s: controller name has a control "
                     "character at byte %zu", what, i);
  return SC_OK;
}

sc_err store_claim_name(store *st, const char *name, const char *adopt_from,
                        store_served_by *out, sc_errbuf *eb)
{
  store_served_by tmp;
  sc_err err;
  if(adopt_from && !*adopt_from)
    adopt_from = NULL;
  memset(&tmp, 0, sizeof(tmp));
  if(!out)
    out = &tmp;
  memset(out, 0, sizeof(*out));
  err = check_controller_name(name, "claim", eb);
  if(!err && adopt_from)
    err = check_controller_name(adopt_from, "--adopt-from", eb);
  if(!err && adopt_from && !strcmp(adopt_from, name))
    err = sc_errf(eb, SC_ERR_INVALID, "--adopt-from %s: the controller's own "
                  "name (nothing to rename)", adopt_from);
  if(err)
    return err;
  if(st->ops->claim_name)
    err = st->ops->claim_name(st, name, adopt_from, out, eb);
  else {
    /* nothing recorded: the flag alone says which names are ours, on
     * every start */
    out->name = strdup(name);
    if(out->name && adopt_from) {
      out->adopted = calloc(1, sizeof(*out->adopted));
      if(out->adopted && (out->adopted[0] = strdup(adopt_from)))
        out->n_adopted = 1;
    }
    if(!out->name || (adopt_from && !out->n_adopted)) {
      store_served_by_clear(out);
      err = sc_errf(eb, SC_ERR_NOMEM, "out of memory");
    }
  }
  store_served_by_clear(&tmp);
  return err;
}

sc_err store_served_by_get(store *st, store_served_by *out, sc_errbuf *eb)
{
  memset(out, 0, sizeof(*out));
  if(!st->ops->served_by_get)
    return SC_OK;
  return st->ops->served_by_get(st, out, eb);
}

sc_err store_list(store *st, const store_list_opts *opts,
                  store_list_result *out, sc_errbuf *eb)
{
  static const store_list_opts all;
  memset(out, 0, sizeof(*out));
  return st->ops->list(st, opts ? opts : &all, out, eb);
}

void store_list_result_free(store_list_result *r)
{
  size_t i;
  if(!r)
    return;
  for(i = 0; i < r->n; i++)
    session_free(r->items[i]);
  free(r->items);
  free(r->revision);
  for(i = 0; i < r->n_skipped; i++) {
    free(r->skipped[i].ns);
    free(r->skipped[i].name);
    free(r->skipped[i].uid);
    free(r->skipped[i].reason);
  }
  free(r->skipped);
  memset(r, 0, sizeof(*r));
}

sc_err store_get(store *st, const char *ns, const char *name, session **out,
                 sc_errbuf *eb)
{
  sc_err err;
  *out = NULL;
  err = store_check_key(ns, name, "get", eb);
  if(err)
    return err;
  return st->ops->get(st, ns, name, out, eb);
}

typedef struct apply_key {
  const char *ns, *name;
} apply_key;

/* value: SC_HMAP_IDX(i) of objs (ud) */
static bool apply_key_eq(const void *value, const void *key, void *ud)
{
  session *const *objs = ud;
  const session *o = objs[SC_HMAP_IDX_OF(value)];
  const apply_key *k = key;
  return !strcmp(o->meta.name, k->name) &&
         !strcmp(o->meta.namespace_, k->ns);
}

sc_err store_apply(store *st, session *const *objs, size_t n,
                   store_apply_outcome *outcomes, sc_errbuf *eb)
{
  sc_hmap *seen;
  uint64_t seed;
  size_t i;
  sc_err err = SC_OK;
  if(!n)
    return SC_OK;
  /* the same key twice: one hash table, linear in n */
  seen = sc_hmap_new(n);
  if(!seen)
    return sc_errf(eb, SC_ERR_NOMEM, "apply: out of memory");
  seed = sc_hash_seed();
  for(i = 0; i < n && !err; i++) {
    char what[48];
    apply_key k;
    uint64_t h;
    void *first;
    if(!objs[i]) {
      err = sc_errf(eb, SC_ERR_INVALID, "apply: objects[%zu] is NULL", i);
      break;
    }
    snprintf(what, sizeof(what), "apply: objects[%zu]", i);
    err = store_check_key(objs[i]->meta.namespace_, objs[i]->meta.name, what,
                          eb);
    if(err)
      break;
    k.ns = objs[i]->meta.namespace_;
    k.name = objs[i]->meta.name;
    h = sc_hash_fin(sc_hash_strn(sc_hash_strn(seed, k.ns, strlen(k.ns)),
                                 k.name, strlen(k.name)));
    first = sc_hmap_get(seen, h, apply_key_eq, &k, (void *)objs);
    if(first)
      err = sc_errf(eb, SC_ERR_INVALID,
                    "apply: objects[%zu] and objects[%zu] are both %s/%s",
                    SC_HMAP_IDX_OF(first), i, k.ns, k.name);
    else if(sc_hmap_put(seen, h, SC_HMAP_IDX(i)))
      err = sc_errf(eb, SC_ERR_NOMEM, "apply: out of memory");
  }
  sc_hmap_free(seen);
  if(err)
    return err;
  return st->ops->apply(st, objs, n, outcomes, eb);
}

static sc_err need_version(const char *v, const char *op, const char *ns,
                           const char *name, sc_errbuf *eb)
{
  if(!v || !*v)
    return sc_errf(eb, SC_ERR_INVALID,
                   "%s %s/%s: no expected resourceVersion given", op, ns,
                   name);
  return SC_OK;
}

sc_err store_update_spec(store *st, const char *ns, const char *name,
                         const char *expected_version,
                         const session_spec *spec, char **new_version,
                         sc_errbuf *eb)
{
  sc_err err;
  if(new_version)
    *new_version = NULL;
  err = store_check_key(ns, name, "update spec", eb);
  if(!err)
    err = need_version(expected_version, "update spec", ns, name, eb);
  if(err)
    return err;
  return st->ops->update_spec(st, ns, name, expected_version, spec,
                              new_version, eb);
}

sc_err store_update_status(store *st, const char *ns, const char *name,
                           const char *expected_version,
                           const session_status *status, char **new_version,
                           sc_errbuf *eb)
{
  sc_err err;
  if(new_version)
    *new_version = NULL;
  err = store_check_key(ns, name, "update status", eb);
  if(!err)
    err = need_version(expected_version, "update status", ns, name, eb);
  if(err)
    return err;
  return st->ops->update_status(st, ns, name, expected_version, status,
                                new_version, eb);
}

/* An annotation key as store_set_annotation takes it (store.h). */
static sc_err check_annotation(const char *ns, const char *name,
                               const char *key, const char *value,
                               sc_errbuf *eb)
{
  size_t i, len = key ? strlen(key) : 0;
  if(!len)
    return sc_errf(eb, SC_ERR_INVALID, "set annotation %s/%s: empty "
                   "annotation key", ns, name);
  if(len > STORE_ANNOTATION_KEY_MAX)
    return sc_errf(eb, SC_ERR_INVALID, "set annotation %s/%s: annotation key "
                   "of %zu bytes (at most %d)", ns, name, len,
                   STORE_ANNOTATION_KEY_MAX);
  for(i = 0; i < len; i++) {
    unsigned char c = (unsigned char)key[i];
    if(c <= 0x20 || c == 0x7f)
      return sc_errf(eb, SC_ERR_INVALID, "set annotation %s/%s: annotation "
                     "key has a forbidden character (0x%02x) at byte %zu", ns,
                     name, c, i);
  }
  if(value && strlen(value) > STORE_ANNOTATION_VALUE_MAX)
    return sc_errf(eb, SC_ERR_INVALID, "set annotation %s/%s: the value of "
                   "%s is %zu bytes (at most %d)", ns, name, key,
                   strlen(value), STORE_ANNOTATION_VALUE_MAX);
  return SC_OK;
}

sc_err store_set_annotation(store *st, const char *ns, const char *name,
                            const char *expected_version, const char *key,
                            const char *value, char **new_version,
                            sc_errbuf *eb)
{
  sc_err err;
  if(new_version)
    *new_version = NULL;
  err = store_check_key(ns, name, "set annotation", eb);
  if(!err)
    err = need_version(expected_version, "set annotation", ns, name, eb);
  if(!err)
    err = check_annotation(ns, name, key, value, eb);
  if(err)
    return err;
  if(!st->ops->set_annotation)
    return sc_errf(eb, SC_ERR_INVALID, "store %s: setting an annotation is "
                   "not supported", st->ops->name);
  return st->ops->set_annotation(st, ns, name, expected_version, key, value,
                                 new_version, eb);
}

sc_err store_delete(store *st, const char *ns, const char *name,
                    sc_errbuf *eb)
{
  sc_err err = store_check_key(ns, name, "delete", eb);
  if(err)
    return err;
  return st->ops->del(st, ns, name, eb);
}

sc_err store_purge(store *st, const char *ns, const char *name,
                   const char *expected_version, sc_errbuf *eb)
{
  sc_err err = store_check_key(ns, name, "purge", eb);
  if(!err)
    err = need_version(expected_version, "purge", ns, name, eb);
  if(err)
    return err;
  return st->ops->purge(st, ns, name, expected_version, eb);
}

sc_err store_watch_start(store *st, const char *from_revision,
                         store_watch_cb cb, store_watch_err_cb err_cb,
                         void *ud, store_watch **out, sc_errbuf *eb)
{
  *out = NULL;
  if(!cb)
    return sc_errf(eb, SC_ERR_INVALID, "watch: no event callback given");
  return st->ops->watch_start(st, from_revision, cb, err_cb, ud, out, eb);
}

void store_watch_stop(store_watch *w)
{
  if(w)
    w->ops->watch_stop(w);
}

/* --- asynchronous calls --- */

static void on_deferred(evutil_socket_t fd, short what, void *arg)
{
  store_deferred *d = arg;
  (void)fd;
  (void)what;
  d->rep.message = d->rep.err ? d->eb.msg : "";
  d->cb(&d->rep, d->ud);
  deferred_unlink_free(d);
}

static sc_err need_loop(store *st, const char *op, sc_errbuf *eb)
{
  if(!st->base)
    return sc_errf(eb, SC_ERR_INVALID, "store: %s: asynchronous calls need "
                   "an event loop (store_open_opts.base)", op);
  return SC_OK;
}

/* a new answer *out to fill in (zeroed: no result, an empty message) */
static sc_err deferred_new(store *st, store_reply_cb cb, void *ud,
                           store_deferred **out, sc_errbuf *eb)
{
  store_deferred *d = calloc(1, sizeof(*d));
  if(d)
    d->ev = evtimer_new(st->base, on_deferred, d);
  if(!d || !d->ev) {
    free(d);
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  d->st = st;
  d->cb = cb;
  d->ud = ud;
  d->next = st->deferred;
  if(d->next)
    d->next->prev = d;
  st->deferred = d;
  st->n_deferred++;
  *out = d;
  return SC_OK;
}

/* the answer is in d: deliver it on the next turn of the loop */
static sc_err deferred_send(store_deferred *d, sc_err err, sc_errbuf *eb)
{
  struct timeval now = {0, 0};
  d->rep.err = err;
  if(evtimer_add(d->ev, &now)) {
    deferred_unlink_free(d);
    return sc_errf(eb, SC_ERR_INTERNAL, "store: cannot schedule an answer");
  }
  return SC_OK;
}

sc_err store_list_async(store *st, const store_list_opts *opts,
                        store_reply_cb cb, void *ud, sc_errbuf *eb)
{
  static const store_list_opts all;
  store_deferred *d;
  sc_err err = need_loop(st, "list", eb);
  if(err)
    return err;
  if(!opts)
    opts = &all;
  if(st->ops->list_async)
    return st->ops->list_async(st, opts, cb, ud, eb);
  err = deferred_new(st, cb, ud, &d, eb);
  if(err)
    return err;
  return deferred_send(d, st->ops->list(st, opts, &d->rep.list, &d->eb), eb);
}

sc_err store_get_async(store *st, const char *ns, const char *name,
                       store_reply_cb cb, void *ud, sc_errbuf *eb)
{
  store_deferred *d;
  sc_err err = need_loop(st, "get", eb);
  if(!err)
    err = store_check_key(ns, name, "get", eb);
  if(err)
    return err;
  if(st->ops->get_async)
    return st->ops->get_async(st, ns, name, cb, ud, eb);
  err = deferred_new(st, cb, ud, &d, eb);
  if(err)
    return err;
  return deferred_send(d, st->ops->get(st, ns, name, &d->rep.obj, &d->eb),
                       eb);
}

sc_err store_update_status_async(store *st, const char *ns,
                                 const char *name,
                                 const char *expected_version,
                                 const session_status *status,
                                 store_reply_cb cb, void *ud, sc_errbuf *eb)
{
  store_deferred *d;
  sc_err err = need_loop(st, "update status", eb);
  if(!err)
    err = store_check_key(ns, name, "update status", eb);
  if(!err)
    err = need_version(expected_version, "update status", ns, name, eb);
  if(err)
    return err;
  if(st->ops->update_status_async)
    return st->ops->update_status_async(st, ns, name, expected_version,
                                        status, cb, ud, eb);
  err = deferred_new(st, cb, ud, &d, eb);
  if(err)
    return err;
  return deferred_send(d, st->ops->update_status(st, ns, name,
                                                 expected_version, status,
                                                 &d->rep.new_version,
                                                 &d->eb), eb);
}

sc_err store_purge_async(store *st, const char *ns, const char *name,
                         const char *expected_version, store_reply_cb cb,
                         void *ud, sc_errbuf *eb)
{
  store_deferred *d;
  sc_err err = need_loop(st, "purge", eb);
  if(!err)
    err = store_check_key(ns, name, "purge", eb);
  if(!err)
    err = need_version(expected_version, "purge", ns, name, eb);
  if(err)
    return err;
  if(st->ops->purge_async)
    return st->ops->purge_async(st, ns, name, expected_version, cb, ud, eb);
  err = deferred_new(st, cb, ud, &d, eb);
  if(err)
    return err;
  return deferred_send(d, st->ops->purge(st, ns, name, expected_version,
                                         &d->eb), eb);
}

size_t store_async_inflight(const store *st)
{
  if(!st)
    return 0;
  return st->n_deferred +
         (st->ops->async_inflight ? st->ops->async_inflight(st) : 0);
}

const char *store_event_type_name(store_event_type t)
{
  switch(t) {
  case STORE_EVENT_ADDED:
    return "ADDED";
  case STORE_EVENT_MODIFIED:
    return "MODIFIED";
  case STORE_EVENT_DELETED:
    return "DELETED";
  }
  return "UNKNOWN";
}

/* --- helpers shared by the backends --- */

static sc_err check_part(const char *s, const char *part, const char *what,
                         sc_errbuf *eb)
{
  size_t i, len;
  if(!s || !*s)
    return sc_errf(eb, SC_ERR_INVALID, "%s: metadata.%s is empty", what,
                   part);
  len = strlen(s);
  if(len > STORE_KEY_MAX)
    return sc_errf(eb, SC_ERR_INVALID,
                   "%s: metadata.%s is %zu bytes long (at most %d)", what,
                   part, len, STORE_KEY_MAX);
  for(i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if(c < 0x20 || c == 0x7f || c == '/')
      return sc_errf(eb, SC_ERR_INVALID,
                     "%s: metadata.%s has a forbidden character (0x%02x) at "
                     "byte %zu", what, part, c, i);
  }
  return SC_OK;
}

sc_err store_check_key(const char *ns, const char *name, const char *what,
                       sc_errbuf *eb)
{
  sc_err err = check_part(ns, "namespace", what, eb);
  if(!err)
    err = check_part(name, "name", what, eb);
  return err;
}

sc_err store_uid_new(char buf[STORE_UID_LEN], sc_errbuf *eb)
{
  unsigned char b[16];
  if(RAND_bytes(b, sizeof(b)) != 1)
    return sc_errf(eb, SC_ERR_INTERNAL,
                   "store: no random bytes for a uid (OpenSSL error %lu)",
                   ERR_get_error());
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
  snprintf(buf, STORE_UID_LEN,
           "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
           "%02x%02x%02x%02x%02x%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
           b[11], b[12], b[13], b[14], b[15]);
  return SC_OK;
}

void store_rev_format(int64_t rev, char buf[STORE_REV_LEN])
{
  snprintf(buf, STORE_REV_LEN, "%" PRId64, rev);
}

sc_err store_rev_parse(const char *s, int64_t *out)
{
  int64_t v = 0;
  size_t i;
  if(!s || !*s || strlen(s) > 19)
    return SC_ERR_INVALID;
  for(i = 0; s[i]; i++) {
    int d;
    if(s[i] < '0' || s[i] > '9')
      return SC_ERR_INVALID;
    d = s[i] - '0';
    if(v > (INT64_MAX - d) / 10)
      return SC_ERR_INVALID;
    v = v * 10 + d;
  }
  *out = v;
  return SC_OK;
}
