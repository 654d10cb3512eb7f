/* kube_call.c - the kube store's operations on a loop (kop, kube_int.h)
 * and its synchronous forms: sessionctl's calls run the same operations
 * on a private loop until they end, so both share one implementation,
 * with kube_http's retries on timers instead of sleeps. */
#include "controller/store/kube/kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>

const kube_http_opts kstore_call_opts = {CALL_TIMEOUT_MS, RESP_MAX, RETRIES,
                                         true};

/* Run the private loop of the synchronous calls until *done. false when
 * the loop ran dry first (a bug): what it had in flight is dropped. */
static bool sync_run(kube_store *k, const bool *done)
{
  while(!*done)
    if(event_base_loop(k->sbase, EVLOOP_ONCE) != 0)
      break;
  if(*done)
    return true;
  kube_http_abort_all(k->shttp);
  return false;
}

typedef struct kwait {
  kube_store *k;
  const char *method, *path;
  bool done;
  sc_err err;
  long code;
  json_object *resp;
  sc_errbuf eb;
} kwait;

static void on_kwait(const kube_http_result *raw, void *ud)
{
  kwait *w = ud;
  kube_http_result r, *res = &r;
  json_object *own;
  kstore_strict_body(w->k, raw, &r, &own);
  w->done = true;
  w->code = res->status;
  w->err = kstore_reply_err(w->k, res, w->method, w->path, &w->eb);
  if(!w->err && res->body)
    w->resp = json_object_get(res->body);
  json_object_put(own);
}

/* One synchronous call (sessionctl's apply, update spec, delete): sent on
 * the private loop, which runs until it ends. *code is the HTTP status;
 * *resp the parsed body (NULL when empty; the caller puts it). The
 * retries are kube_http's (kstore_call_opts). */
sc_err kstore_sync_call(kube_store *k, const char *method, const char *path,
                        const char *ctype, const char *body, long *code,
                        json_object **resp, sc_errbuf *eb)
{
  kwait w;
  sc_err err;
  memset(&w, 0, sizeof(w));
  w.k = k;
  w.method = method;
  w.path = path;
  *code = 0;
  *resp = NULL;
  err = kube_http_request_ex(k->shttp, method, path, ctype, body,
                             &kstore_call_opts,
                             on_kwait, &w, eb);
  if(err)
    return err;
  if(!sync_run(k, &w.done))
    return sc_errf(eb, SC_ERR_INTERNAL, "kube %s %s: the call was lost",
                   method, path);
  if(w.err) {
    json_object_put(w.resp);
    return sc_errf(eb, w.err, "%s", w.eb.msg);
  }
  *code = w.code;
  *resp = w.resp;
  return SC_OK;
}

void kop_free(kop *o)
{
  kop **pp;
  for(pp = &o->k->ops; *pp; pp = &(*pp)->next)
    if(*pp == o) {
      *pp = o->next;
      break;
    }
  o->k->n_ops--;
  session_free(o->cur);
  store_list_result_free(&o->list);
  free(o->new_version);
  free(o->ns);
  free(o->name);
  free(o->version);
  free(o->cont);
  free(o);
}

kop *kop_new(kube_store *k, kube_http *h, store_reply_cb cb, void *ud)
{
  kop *o = calloc(1, sizeof(*o));
  if(!o)
    return NULL;
  o->k = k;
  o->h = h;
  o->cb = cb;
  o->ud = ud;
  o->eb.msg[0] = '\0';
  o->next = k->ops;
  k->ops = o;
  k->n_ops++;
  return o;
}

static void on_kop_reply(const kube_http_result *res, void *ud)
{
  kop *o = ud;
  kube_http_result r;
  json_object *own;
  kstore_strict_body(o->k, res, &r, &own);
  o->step(o, &r);
  json_object_put(own); /* o may be gone: only the body is left */
}

sc_err kop_send_ex(kop *o, const char *method, const char *ctype,
                   const char *body, const kube_http_opts *ho,
                   kop_step step, sc_errbuf *eb)
{
  o->method = method;
  o->step = step;
  return kube_http_request_ex(o->h, method, o->path, ctype, body, ho,
                              on_kop_reply, o, eb);
}

sc_err kop_send(kop *o, const char *method, const char *ctype,
                const char *body, kop_step step, sc_errbuf *eb)
{
  return kop_send_ex(o, method, ctype, body, &kstore_call_opts, step, eb);
}

/* decode an answer of o's request; the message names the peer and the
 * request ("kube GET https://H/apis/...: list item 3 does not decode:
 * spec.state: ...") */
sc_err kop_decode(kop *o, json_object *j, const char *what,
                  session **out)
{
  sc_errbuf e2;
  sc_err err;
  e2.msg[0] = '\0';
  err = kstore_decode(j, what, out, &e2);
  if(err)
    return sc_errf(&o->eb, err, "kube %s %s%s: %s", o->method,
                   o->k->conn.server, o->path,
                   strncmp(e2.msg, "kube: ", 6) ? e2.msg : e2.msg + 6);
  return SC_OK;
}

/* the end of an operation: the caller's callback */
void kop_finish(kop *o, sc_err err)
{
  store_reply rep;
  memset(&rep, 0, sizeof(rep));
  rep.err = err;
  rep.message = err ? o->eb.msg : "";
  if(!err) {
    rep.obj = o->cur;
    rep.list = o->list;
    rep.new_version = o->new_version;
    o->cur = NULL;
    memset(&o->list, 0, sizeof(o->list));
    o->new_version = NULL;
  }
  o->cb(&rep, o->ud);
  session_free(rep.obj);
  store_list_result_free(&rep.list);
  free(rep.new_version);
  kop_free(o);
}

/* the first error of an operation wins */
void kop_error(kop *o, sc_err err, const char *msg)
{
  if(err && !o->err) {
    o->err = err;
    snprintf(o->eb.msg, sizeof(o->eb.msg), "%s", msg);
  }
}

/* a new root operation *out on ns/name (copied) */
sc_err kop_root(kube_store *k, kube_http *h, const char *ns,
                const char *name, const char *version,
                store_reply_cb cb, void *ud, kop **out, sc_errbuf *eb)
{
  kop *o;
  *out = NULL;
  if(!h)
    return sc_errf(eb, SC_ERR_INVALID, "kube: asynchronous calls need an "
                   "event loop (store_open_opts.base)");
  o = kop_new(k, h, cb, ud);
  if(o) {
    o->ns = ns ? strdup(ns) : NULL;
    o->name = name ? strdup(name) : NULL;
    o->version = version ? strdup(version) : NULL;
  }
  if(!o || (ns && !o->ns) || (name && !o->name) ||
     (version && !o->version)) {
    if(o)
      kop_free(o);
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  *out = o;
  return SC_OK;
}

/* --- the synchronous forms: the same on the private loop --- */

void ksync_on_reply(store_reply *rep, void *ud)
{
  ksync *w = ud;
  w->done = true;
  w->rep = *rep;
  snprintf(w->eb.msg, sizeof(w->eb.msg), "%s", rep->message);
  rep->obj = NULL;
  memset(&rep->list, 0, sizeof(rep->list));
  rep->new_version = NULL;
}

/* wait for the operation started (err == SC_OK) into w */
sc_err ksync_wait(kube_store *k, ksync *w, sc_err err, sc_errbuf *eb)
{
  if(err)
    return err;
  if(!sync_run(k, &w->done)) {
    /* the calls were dropped: drop the operations of this loop too */
    kop *o = k->ops, *next;
    for(; o; o = next) {
      next = o->next;
      if(o->h == k->shttp)
        kop_free(o);
    }
    return sc_errf(eb, SC_ERR_INTERNAL, "kube: the call was lost");
  }
  if(w->rep.err)
    return sc_errf(eb, w->rep.err, "%s", w->eb.msg);
  return SC_OK;
}
