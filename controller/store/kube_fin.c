/* kube_fin.c - the controller's finalizer lea.io/sandbox-cleanup on the
 * kube store's objects (docs/store.md, "The finalizer"): added to one
 * object at a time by store_ensure_finalizer_async(), or, with
 * store_open_opts.add_finalizer, by the store's own list and get (the
 * older way, kept until every caller uses the first). */
#include "controller/store/kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool kstore_wants_finalizer(const kube_store *k, const session *s)
{
  return k->add_finalizer && s && !s->meta.deletion_timestamp &&
         !kstore_has_finalizer(s);
}

/* --- the finalizer, on the controller's first visit --- */

static sc_err fin_patch(kop *f);

void kstore_fin_end(kop *f, sc_err err)
{
  kop *p = f->parent;
  kop_error(p, err, f->eb.msg);
  kop_free(f);
  p->fin_running--;
  p->after_fin(p);
}

static void fin_reread(kop *f, const kube_http_result *res)
{
  const session *s = *f->slot;
  session *n = NULL;
  sc_err err = kstore_reply_err(f->k, res, f->method, f->path, &f->eb);
  if(!err && res->status == 404) {
    /* deleted meanwhile: nothing to guard */
    session_free(*f->slot);
    *f->slot = NULL;
    kstore_fin_end(f, SC_OK);
    return;
  }
  if(!err && res->status != 200)
    err = kstore_http_err(res->status, res->body, "get", s->meta.namespace_,
                   s->meta.name, &f->eb);
  if(!err)
    err = kop_decode(f, res->body, "the object", &n);
  if(err) {
    kstore_fin_end(f, err);
    return;
  }
  session_free(*f->slot);
  *f->slot = n;
  if(!kstore_wants_finalizer(f->k, n))
    kstore_fin_end(f, SC_OK);
  else if((err = fin_patch(f)) != SC_OK)
    kstore_fin_end(f, err);
}

static void fin_patched(kop *f, const kube_http_result *res)
{
  const session *s = *f->slot;
  session *n = NULL;
  sc_err err = kstore_reply_err(f->k, res, f->method, f->path, &f->eb);
  if(!err && res->status != 200)
    err = kstore_http_err(res->status, res->body, "add finalizer",
                   s->meta.namespace_, s->meta.name, &f->eb);
  if(!err) {
    err = kop_decode(f, res->body, "the patched object", &n);
    if(!err) {
      session_free(*f->slot);
      *f->slot = n;
    }
    kstore_fin_end(f, err);
    return;
  }
  if(err != SC_ERR_CONFLICT && err != SC_ERR_NOT_FOUND) {
    kstore_fin_end(f, err);
    return;
  }
  if(++f->tries >= 3) {
    kstore_fin_end(f, sc_errf(&f->eb, SC_ERR_CONFLICT, "kube: adding the "
                              "finalizer "
                       "to %s/%s kept conflicting", s->meta.namespace_,
                       s->meta.name));
    return;
  }
  kstore_obj_path(f->path, sizeof(f->path), s->meta.namespace_,
                  s->meta.name, NULL);
  err = kop_send(f, "GET", NULL, NULL, fin_reread, &f->eb);
  if(err)
    kstore_fin_end(f, err);
}

/* send the patch; an error means nothing was sent (f->eb says why) */
static sc_err fin_patch(kop *f)
{
  const session *s = *f->slot;
  char *body = kstore_finalizer_patch(s, true);
  sc_err err;
  if(!body)
    return sc_errf(&f->eb, SC_ERR_NOMEM, "out of memory");
  kstore_obj_path(f->path, sizeof(f->path), s->meta.namespace_,
                  s->meta.name, NULL);
  err = kop_send(f, "PATCH", "application/merge-patch+json", body,
                 fin_patched, &f->eb);
  free(body);
  return err;
}

/* start adding the finalizer to *slot for p (p->fin_running counts it);
 * false when it could not start (p's error is set). Never finishes p
 * itself: the caller decides what comes next. */
bool kstore_fin_start(kop *p, session **slot)
{
  kop *f = kop_new(p->k, p->h, p, NULL, NULL);
  sc_err err;
  if(!f) {
    kop_error(p, SC_ERR_NOMEM, "out of memory");
    return false;
  }
  f->slot = slot;
  err = fin_patch(f);
  if(err) {
    kop_error(p, err, f->eb.msg);
    kop_free(f);
    return false;
  }
  p->fin_running++;
  return true;
}

/* --- store_ensure_finalizer_async: one object, one patch --- */

bool kstore_needs_finalizer(const store *st, const session *s)
{
  (void)st;
  return s && !s->meta.deletion_timestamp && !kstore_has_finalizer(s);
}

static void ensure_patched(kop *o, const kube_http_result *res)
{
  sc_err err = kstore_reply_err(o->k, res, o->method, o->path, &o->eb);
  if(!err && res->status != 200)
    err = kstore_http_err(res->status, res->body, "add finalizer", o->ns,
                          o->name, &o->eb);
  if(!err)
    err = kop_decode(o, res->body, "the patched object", &o->cur);
  if(!err && !(o->new_version = strdup(o->cur->meta.resource_version)))
    err = sc_errf(&o->eb, SC_ERR_NOMEM, "out of memory");
  kop_finish(o, err);
}

/* A merge patch of metadata.finalizers guarded by s's resourceVersion:
 * the API server answers 409 when the object moved on, 404 when it is
 * gone; neither is retried here (the caller has the newer version from
 * its next event or list). An object that needs nothing is read. */
sc_err kstore_ensure_finalizer_async(store *st, const session *s,
                                     store_reply_cb cb, void *ud,
                                     sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  const char *ns = s->meta.namespace_, *name = s->meta.name;
  char *body;
  kop *o;
  sc_err err;
  if(!kstore_needs_finalizer(st, s))
    return kstore_get_start(k, k->http, ns, name, false, cb, ud, eb);
  if(!s->meta.resource_version || !*s->meta.resource_version)
    return sc_errf(eb, SC_ERR_INVALID, "kube: add finalizer %s/%s: the "
                   "object has no resourceVersion to guard the patch", ns,
                   name);
  err = kop_root(k, k->http, ns, name, s->meta.resource_version, cb, ud, &o,
                 eb);
  if(err)
    return err;
  body = kstore_finalizer_patch(s, true);
  if(!body) {
    kop_free(o);
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  kstore_obj_path(o->path, sizeof(o->path), ns, name, NULL);
  err = kop_send(o, "PATCH", "application/merge-patch+json", body,
                 ensure_patched, eb);
  free(body);
  if(err)
    kop_free(o);
  return err;
}
