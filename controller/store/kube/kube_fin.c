/* kube_fin.c - the controller's finalizer lea.io/sandbox-cleanup on the
 * kube store's objects (docs/store.md, "The finalizer"): added to one
 * object at a time by store_ensure_finalizer_async(), which the executor
 * calls (controller/act/exec.c); the store's list and get never add it. */
#include "controller/store/kube/kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    return kstore_get_start(k, k->http, ns, name, cb, ud, eb);
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
