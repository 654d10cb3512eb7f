/* kube_crud.c - the kube store's operations on one object (get, apply,
 * update spec, update status, set one annotation, delete, purge) and the
 * store ops of the backend table, synchronous (sessionctl's, on the
 * private loop) and asynchronous (the controller's, on its loop). */
#include "controller/store/kube/kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/session_json.h"

/* GET the raw object (*raw) and decoded (*s, may be NULL) */
static sc_err get_raw(kube_store *k, const char *ns, const char *name,
                      json_object **raw, session **s, sc_errbuf *eb)
{
  char path[1200];
  long code;
  sc_err err;
  *raw = NULL;
  if(s)
    *s = NULL;
  kstore_obj_path(path, sizeof(path), ns, name, NULL);
  err = kstore_sync_call(k, "GET", path, NULL, NULL, &code, raw, eb);
  if(err)
    return err;
  if(code != 200) {
    err = kstore_http_err(code, *raw, "get", ns, name, eb);
    json_object_put(*raw);
    *raw = NULL;
    return err;
  }
  if(s) {
    err = kstore_decode(*raw, "the object", s, eb);
    if(err) {
      json_object_put(*raw);
      *raw = NULL;
    }
  }
  return err;
}

/* --- get --- */

static void get_end(kop *o)
{
  if(!o->cur) {
    kop_finish(o, sc_errf(&o->eb, SC_ERR_NOT_FOUND, "kube: get %s/%s: not "
                          "found", o->ns, o->name));
    return;
  }
  kop_finish(o, SC_OK);
}

static void get_got(kop *o, const kube_http_result *res)
{
  sc_err err = kstore_reply_err(o->k, res, o->method, o->path, &o->eb);
  if(!err && res->status != 200)
    err = kstore_http_err(res->status, res->body, "get", o->ns, o->name,
                          &o->eb);
  if(!err) {
    char why[SC_ERRBUF_SIZE];
    err = kstore_obj_decode(res->body, &o->cur, why, sizeof(why));
    if(err == SC_ERR_PROTOCOL) {
      /* reported as any skipped object; the get fails with the reason */
      if(kstore_skip_obj(o->k, NULL, "get", res->body, "the object", why) ==
         SC_ERR_NOMEM)
        err = sc_errf(&o->eb, SC_ERR_NOMEM, "out of memory");
      else
        sc_errf(&o->eb, err, "kube %s %s%s: the object does not decode: "
                "%s", o->method, o->k->conn.server, o->path, why);
    }
    else if(err)
      sc_errf(&o->eb, err, "out of memory");
  }
  if(err) {
    kop_finish(o, err);
    return;
  }
  get_end(o);
}

sc_err kstore_get_start(kube_store *k, kube_http *h, const char *ns,
                        const char *name, store_reply_cb cb,
                        void *ud, sc_errbuf *eb)
{
  kop *o;
  sc_err err = kop_root(k, h, ns, name, NULL, cb, ud, &o, eb);
  if(err)
    return err;
  kstore_obj_path(o->path, sizeof(o->path), ns, name, NULL);
  err = kop_send(o, "GET", NULL, NULL, get_got, eb);
  if(err)
    kop_free(o);
  return err;
}

/* --- update status --- */

static void status_put(kop *o, const kube_http_result *res)
{
  json_object *m, *rv;
  sc_err err = kstore_reply_err(o->k, res, o->method, o->path, &o->eb);
  if(!err && res->status != 200 && res->status != 201)
    err = kstore_http_err(res->status, res->body, "update status", o->ns,
                          o->name,
                   &o->eb);
  if(!err) {
    if(json_object_object_get_ex(res->body, "metadata", &m) &&
       json_object_object_get_ex(m, "resourceVersion", &rv) &&
       json_object_is_type(rv, json_type_string)) {
      o->new_version = strdup(json_object_get_string(rv));
      if(!o->new_version)
        err = sc_errf(&o->eb, SC_ERR_NOMEM, "out of memory");
    }
    else
      err = sc_errf(&o->eb, SC_ERR_PROTOCOL, "kube PUT %s%s: the reply has "
                    "no metadata.resourceVersion string", o->k->conn.server,
                    o->path);
  }
  kop_finish(o, err);
}

/* One PUT of the /status subresource guarded by expected_version (the
 * server answers 409 when it moved; it keeps everything but the status
 * and writes nothing when the status is equal). */
static sc_err status_start(kube_store *k, kube_http *h, const char *ns,
                           const char *name, const char *expected_version,
                           const session_status *status, store_reply_cb cb,
                           void *ud, sc_errbuf *eb)
{
  kop *o;
  session *tmp;
  json_object *whole = NULL, *body = NULL, *m, *v;
  sc_err err = kop_root(k, h, ns, name, expected_version, cb, ud, &o, eb);
  if(err)
    return err;
  err = SC_ERR_NOMEM;
  tmp = session_new();
  if(tmp && !session_status_copy(&tmp->status, status)) {
    v = kstore_part_of(tmp, "status", &whole);
    body = json_object_new_object();
    m = json_object_new_object();
    json_object_object_add(body, "apiVersion",
                           json_object_new_string(SESSION_API_VERSION));
    json_object_object_add(body, "kind", json_object_new_string(SESSION_KIND));
    json_object_object_add(m, "name", json_object_new_string(name));
    json_object_object_add(m, "namespace", json_object_new_string(ns));
    json_object_object_add(m, "resourceVersion",
                           json_object_new_string(expected_version));
    json_object_object_add(body, "metadata", m);
    kstore_set_or_del(body, "status", v);
    kstore_obj_path(o->path, sizeof(o->path), ns, name, "/status");
    err = kop_send(o, "PUT", "application/json",
                   json_object_to_json_string_ext(body,
                                                  JSON_C_TO_STRING_PLAIN),
                   status_put, eb);
  }
  else
    sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  json_object_put(body);
  json_object_put(whole);
  session_free(tmp);
  if(err)
    kop_free(o);
  return err;
}

/* --- purge: a tombstone's finalizer goes --- */

static void purge_patched(kop *o, const kube_http_result *res)
{
  sc_err err = kstore_reply_err(o->k, res, o->method, o->path, &o->eb);
  if(!err && res->status != 200)
    err = kstore_http_err(res->status, res->body, "remove finalizer", o->ns,
                   o->name, &o->eb);
  kop_finish(o, err);
}

static void purge_got(kop *o, const kube_http_result *res)
{
  char *body;
  sc_err err = kstore_reply_err(o->k, res, o->method, o->path, &o->eb);
  if(!err && res->status != 200)
    err = kstore_http_err(res->status, res->body, "purge", o->ns, o->name,
                          &o->eb);
  if(!err)
    err = kop_decode(o, res->body, "the object", &o->cur);
  if(!err && strcmp(o->cur->meta.resource_version, o->version))
    err = sc_errf(&o->eb, SC_ERR_CONFLICT, "kube: purge %s/%s: version %s is "
                  "not the current %s", o->ns, o->name, o->version,
                  o->cur->meta.resource_version);
  else if(!err && !o->cur->meta.deletion_timestamp)
    err = sc_errf(&o->eb, SC_ERR_INVALID, "kube: purge %s/%s: the object is "
                  "not being deleted", o->ns, o->name);
  if(err || !kstore_has_finalizer(o->cur)) {
    session_free(o->cur); /* nothing to give back */
    o->cur = NULL;
    kop_finish(o, err);
    return;
  }
  body = kstore_finalizer_patch(o->cur, false);
  session_free(o->cur);
  o->cur = NULL;
  if(!body)
    err = sc_errf(&o->eb, SC_ERR_NOMEM, "out of memory");
  else
    err = kop_send(o, "PATCH", "application/merge-patch+json", body,
                   purge_patched, &o->eb);
  free(body);
  if(err)
    kop_finish(o, err);
}

static sc_err purge_start(kube_store *k, kube_http *h, const char *ns,
                          const char *name, const char *expected_version,
                          store_reply_cb cb, void *ud, sc_errbuf *eb)
{
  kop *o;
  sc_err err = kop_root(k, h, ns, name, expected_version, cb, ud, &o, eb);
  if(err)
    return err;
  kstore_obj_path(o->path, sizeof(o->path), ns, name, NULL);
  err = kop_send(o, "GET", NULL, NULL, purge_got, eb);
  if(err)
    kop_free(o);
  return err;
}

/* ------------------------------------------------------------------ */
/* store ops */

sc_err kstore_list(store *st, const store_list_opts *opts,
                   store_list_result *out, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  ksync w;
  sc_err err;
  memset(&w, 0, sizeof(w));
  err = ksync_wait(k, &w, kstore_list_start(k, k->shttp, opts,
                                            ksync_on_reply, &w, eb),
                   eb);
  if(!err)
    *out = w.rep.list;
  else
    store_list_result_free(&w.rep.list);
  return err;
}

sc_err kstore_get(store *st, const char *ns, const char *name,
                  session **out, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  ksync w;
  sc_err err;
  memset(&w, 0, sizeof(w));
  err = ksync_wait(k, &w, kstore_get_start(k, k->shttp, ns, name,
                                           ksync_on_reply, &w, eb), eb);
  if(!err)
    *out = w.rep.obj;
  else
    session_free(w.rep.obj);
  return err;
}

static sc_err put_obj(kube_store *k, json_object *raw, const char *ns,
                      const char *name, const char *sub, const char *op,
                      char **new_version, sc_errbuf *eb)
{
  char path[1200];
  long code;
  json_object *resp = NULL, *m, *rv;
  sc_err err;
  kstore_obj_path(path, sizeof(path), ns, name, sub);
  err = kstore_sync_call(k, "PUT", path, "application/json",
             json_object_to_json_string_ext(raw, JSON_C_TO_STRING_PLAIN),
             &code, &resp, eb);
  if(!err && code != 200 && code != 201)
    err = kstore_http_err(code, resp, op, ns, name, eb);
  if(!err && new_version) {
    if(json_object_object_get_ex(resp, "metadata", &m) &&
       json_object_object_get_ex(m, "resourceVersion", &rv))
      *new_version = strdup(json_object_get_string(rv));
    else
      err = sc_errf(eb, SC_ERR_PROTOCOL, "kube: %s %s/%s: the reply has no "
                    "metadata.resourceVersion", op, ns, name);
  }
  json_object_put(resp);
  return err;
}

static sc_err apply_one(kube_store *k, const session *o,
                        store_apply_outcome *outcome, sc_errbuf *eb)
{
  const char *ns = o->meta.namespace_, *name = o->meta.name;
  json_object *raw = NULL, *whole = NULL, *meta, *spec;
  session *cur = NULL;
  sc_err err = get_raw(k, ns, name, &raw, &cur, eb);
  if(err == SC_ERR_NOT_FOUND) {
    /* create: apiVersion, kind, metadata (name, namespace, labels,
     * annotations) and spec only */
    char path[1200];
    long code;
    json_object *resp = NULL, *body = json_object_new_object(), *m;
    json_object *nm = json_object_new_object(), *v;
    spec = kstore_part_of(o, "spec", &whole);
    json_object_object_add(body, "apiVersion",
                           json_object_new_string(SESSION_API_VERSION));
    json_object_object_add(body, "kind", json_object_new_string(SESSION_KIND));
    json_object_object_add(nm, "name", json_object_new_string(name));
    json_object_object_add(nm, "namespace", json_object_new_string(ns));
    if(json_object_object_get_ex(whole, "metadata", &m)) {
      if(json_object_object_get_ex(m, "labels", &v))
        json_object_object_add(nm, "labels", json_object_get(v));
      if(json_object_object_get_ex(m, "annotations", &v))
        json_object_object_add(nm, "annotations", json_object_get(v));
    }
    json_object_object_add(body, "metadata", nm);
    kstore_set_or_del(body, "spec", spec);
    kstore_obj_path(path, sizeof(path), ns, NULL, NULL);
    err = kstore_sync_call(k, "POST", path, "application/json",
               json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN),
               &code, &resp, eb);
    if(!err && code != 201 && code != 200)
      err = kstore_http_err(code, resp, "create", ns, name, eb);
    json_object_put(resp);
    json_object_put(body);
    json_object_put(whole);
    *outcome = STORE_APPLY_CREATED;
    return err;
  }
  if(err)
    return err;
  if(cur->meta.deletion_timestamp) {
    err = sc_errf(eb, SC_ERR_CONFLICT, "kube: apply %s/%s: %s", ns, name,
                  STORE_BEING_DELETED_MSG);
    goto out;
  }
  if(session_spec_equal(&cur->spec, &o->spec) &&
     sc_kvlist_equal(&cur->meta.labels, &o->meta.labels) &&
     sc_kvlist_equal(&cur->meta.annotations, &o->meta.annotations)) {
    *outcome = STORE_APPLY_UNCHANGED;
    goto out;
  }
  spec = kstore_part_of(o, "spec", &whole);
  kstore_set_or_del(raw, "spec", spec);
  if(json_object_object_get_ex(raw, "metadata", &meta)) {
    json_object *m, *v;
    json_object_object_get_ex(whole, "metadata", &m);
    kstore_set_or_del(meta, "labels",
               json_object_object_get_ex(m, "labels", &v) ? v : NULL);
    kstore_set_or_del(meta, "annotations",
               json_object_object_get_ex(m, "annotations", &v) ? v : NULL);
  }
  err = put_obj(k, raw, ns, name, NULL, "apply", NULL, eb);
  *outcome = STORE_APPLY_CONFIGURED;
out:
  json_object_put(whole);
  json_object_put(raw);
  session_free(cur);
  return err;
}

/* Kubernetes has no transaction over several objects: objects are applied
 * one after the other (a conflict with a concurrent writer is retried);
 * the first error stops the rest (docs/store.md). */
sc_err kstore_apply(store *st, session *const *objs, size_t n,
                    store_apply_outcome *outcomes, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  size_t i;
  for(i = 0; i < n; i++) {
    store_apply_outcome oc = STORE_APPLY_UNCHANGED;
    sc_err err = SC_ERR_CONFLICT;
    int tries;
    for(tries = 0; tries < 3 && (err == SC_ERR_CONFLICT ||
                                 err == SC_ERR_EXISTS); tries++)
      err = apply_one(k, objs[i], &oc, eb);
    if(err)
      return err;
    if(outcomes)
      outcomes[i] = oc;
  }
  return SC_OK;
}

sc_err kstore_update_spec(store *st, const char *ns, const char *name,
                          const char *expected_version,
                          const session_spec *spec, char **new_version,
                          sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  json_object *raw = NULL, *whole = NULL, *v;
  session *cur = NULL, *tmp = NULL;
  sc_err err = get_raw(k, ns, name, &raw, &cur, eb);
  if(err)
    return err;
  if(cur->meta.deletion_timestamp) {
    err = sc_errf(eb, SC_ERR_NOT_FOUND, "kube: update spec %s/%s: the object "
                  "is being deleted", ns, name);
    goto out;
  }
  if(strcmp(cur->meta.resource_version, expected_version)) {
    err = sc_errf(eb, SC_ERR_CONFLICT, "kube: update spec %s/%s: version %s "
                  "is not the current %s", ns, name, expected_version,
                  cur->meta.resource_version);
    goto out;
  }
  if(session_spec_equal(&cur->spec, spec)) {
    if(new_version && !(*new_version = strdup(cur->meta.resource_version)))
      err = SC_ERR_NOMEM;
    goto out;
  }
  tmp = session_new();
  if(!tmp || session_spec_copy(&tmp->spec, spec)) {
    err = SC_ERR_NOMEM;
    goto out;
  }
  v = kstore_part_of(tmp, "spec", &whole);
  kstore_set_or_del(raw, "spec", v);
  err = put_obj(k, raw, ns, name, NULL, "update spec", new_version, eb);
out:
  json_object_put(whole);
  json_object_put(raw);
  session_free(cur);
  session_free(tmp);
  return err;
}

sc_err kstore_update_status(store *st, const char *ns, const char *name,
                            const char *expected_version,
                            const session_status *status,
                            char **new_version, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  ksync w;
  sc_err err;
  memset(&w, 0, sizeof(w));
  err = ksync_wait(k, &w, status_start(k, k->shttp, ns, name,
                                       expected_version, status,
                                       ksync_on_reply,
                                       &w, eb), eb);
  if(!err && new_version)
    *new_version = w.rep.new_version;
  else
    free(w.rep.new_version);
  return err;
}

sc_err kstore_delete(store *st, const char *ns, const char *name,
                     sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  char path[1200];
  long code;
  json_object *resp = NULL;
  sc_err err;
  kstore_obj_path(path, sizeof(path), ns, name, NULL);
  err = kstore_sync_call(k, "DELETE", path, NULL, NULL, &code, &resp, eb);
  if(!err && code != 200 && code != 202)
    err = kstore_http_err(code, resp, "delete", ns, name, eb);
  json_object_put(resp);
  return err;
}

sc_err kstore_purge(store *st, const char *ns, const char *name,
                    const char *expected_version, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  ksync w;
  memset(&w, 0, sizeof(w));
  return ksync_wait(k, &w, purge_start(k, k->shttp, ns, name,
                                       expected_version, ksync_on_reply,
                                       &w, eb),
                    eb);
}

/* the asynchronous forms (store.h): on the controller's loop */

sc_err kstore_list_async(store *st, const store_list_opts *opts,
                         store_reply_cb cb, void *ud, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  return kstore_list_start(k, k->http, opts, cb, ud, eb);
}

sc_err kstore_get_async(store *st, const char *ns, const char *name,
                        store_reply_cb cb, void *ud, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  return kstore_get_start(k, k->http, ns, name, cb, ud,
                          eb);
}

sc_err kstore_update_status_async(store *st, const char *ns,
                                  const char *name,
                                  const char *expected_version,
                                  const session_status *status,
                                  store_reply_cb cb, void *ud,
                                  sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  return status_start(k, k->http, ns, name, expected_version, status, cb, ud,
                      eb);
}

sc_err kstore_purge_async(store *st, const char *ns, const char *name,
                          const char *expected_version, store_reply_cb cb,
                          void *ud, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  return purge_start(k, k->http, ns, name, expected_version, cb, ud, eb);
}

size_t kstore_async_inflight(const store *st)
{
  return ((const kube_store *)st)->n_ops;
}

/* store_set_annotation: read the object (a tombstone is NOT_FOUND, a
 * stale version CONFLICT, an equal value writes nothing), then one merge
 * patch of metadata.annotations guarded by metadata.resourceVersion: the
 * API server answers 409 when the object moved between the two. */
sc_err kstore_set_annotation(store *st, const char *ns, const char *name,
                             const char *expected_version, const char *key,
                             const char *value, char **new_version,
                             sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  json_object *raw = NULL, *resp = NULL, *p = NULL, *m, *a, *rv;
  session *cur = NULL;
  const char *have;
  char path[1200];
  long code;
  sc_err err = get_raw(k, ns, name, &raw, &cur, eb);
  if(err)
    return err;
  if(cur->meta.deletion_timestamp) {
    err = sc_errf(eb, SC_ERR_NOT_FOUND, "kube: set annotation %s/%s: the "
                  "object is being deleted", ns, name);
    goto out;
  }
  if(strcmp(cur->meta.resource_version, expected_version)) {
    err = sc_errf(eb, SC_ERR_CONFLICT, "kube: set annotation %s/%s: version "
                  "%s is not the current %s", ns, name, expected_version,
                  cur->meta.resource_version);
    goto out;
  }
  have = sc_kvlist_get(&cur->meta.annotations, key);
  if(value ? have && !strcmp(have, value) : !have) {
    if(new_version && !(*new_version = strdup(cur->meta.resource_version)))
      err = sc_errf(eb, SC_ERR_NOMEM, "out of memory");
    goto out;
  }
  p = json_object_new_object();
  m = json_object_new_object();
  a = json_object_new_object();
  if(!p || !m || !a) {
    json_object_put(m);
    json_object_put(a);
    err = sc_errf(eb, SC_ERR_NOMEM, "out of memory");
    goto out;
  }
  json_object_object_add(a, key, value ? json_object_new_string(value)
                                       : NULL); /* null: remove */
  json_object_object_add(m, "resourceVersion",
                         json_object_new_string(expected_version));
  json_object_object_add(m, "annotations", a);
  json_object_object_add(p, "metadata", m);
  kstore_obj_path(path, sizeof(path), ns, name, NULL);
  err = kstore_sync_call(k, "PATCH", path, "application/merge-patch+json",
             json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN),
             &code, &resp, eb);
  if(!err && code != 200)
    err = kstore_http_err(code, resp, "set annotation", ns, name, eb);
  if(!err && new_version) {
    if(json_object_object_get_ex(resp, "metadata", &m) &&
       json_object_object_get_ex(m, "resourceVersion", &rv) &&
       json_object_is_type(rv, json_type_string)) {
      if(!(*new_version = strdup(json_object_get_string(rv))))
        err = sc_errf(eb, SC_ERR_NOMEM, "out of memory");
    }
    else
      err = sc_errf(eb, SC_ERR_PROTOCOL, "kube: set annotation %s/%s: the "
                    "reply has no metadata.resourceVersion string", ns, name);
  }
out:
  json_object_put(resp);
  json_object_put(p);
  json_object_put(raw);
  session_free(cur);
  return err;
}
