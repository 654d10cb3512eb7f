/*
 * members.c - store/members.h: the argument checks, the dispatch by
 * backend, and the asynchronous renewal and removal (the SQLite call is
 * local: its answer is held and given on the next turn of the loop, as
 * store.c does for the other synchronous ops; the kube calls are
 * kube_members.c's operations on the loop).
 */
#include "controller/store/members_int.h"
#include "controller/store/backend.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

void store_member_list_clear(store_member_list *l)
{
  size_t i;
  if(!l)
    return;
  for(i = 0; i < l->n; i++) {
    free(l->items[i].id);
    free(l->items[i].version);
  }
  free(l->items);
  l->items = NULL;
  l->n = 0;
}

static bool is_kube(const store *st)
{
  return st && !strcmp(store_backend(st), "kube");
}

bool store_members_supported(const store *st)
{
  return st && (!strcmp(store_backend(st), "sqlite") || is_kube(st));
}

sc_err store_members_scope(store *st, const char *group, sc_errbuf *eb)
{
  if(!is_kube(st))
    return SC_OK;
  return km_scope(st, group, eb);
}

const char *store_members_where(const store *st)
{
  if(is_kube(st))
    return km_where(st);
  return st && !strcmp(store_backend(st), "sqlite") ?
         "the table members of the store file" : "";
}

static sc_err check_id(const char *id, sc_errbuf *eb)
{
  const unsigned char *p;
  if(!id || !*id || strlen(id) > STORE_MEMBER_ID_MAX)
    return sc_errf(eb, SC_ERR_INVALID, "member ID: 1 to %d bytes",
                   STORE_MEMBER_ID_MAX);
  for(p = (const unsigned char *)id; *p; p++)
    if(*p < 0x20 || *p == 0x7f)
      return sc_errf(eb, SC_ERR_INVALID, "member ID: a control character");
  return SC_OK;
}

static sc_err unsupported(const store *st, sc_errbuf *eb)
{
  return sc_errf(eb, SC_ERR_INVALID, "store %s keeps no member list (the "
                 "%s backend)", store_url(st), st ? store_backend(st) : "?");
}

sc_err store_members_renew(store *st, const char *id, int64_t period_ms,
                           store_member_list *out, sc_errbuf *eb)
{
  sc_err err;
  memset(out, 0, sizeof(*out));
  if(!store_members_supported(st))
    return unsupported(st, eb);
  err = check_id(id, eb);
  if(err)
    return err;
  if(period_ms <= 0)
    return sc_errf(eb, SC_ERR_INVALID, "member period: %lld ms",
                   (long long)period_ms);
  if(is_kube(st))
    return km_renew(st, id, period_ms, out, eb);
  return sq_members_renew(st, id, period_ms, out, eb);
}

sc_err store_members_remove(store *st, const char *id, const char *version,
                            sc_errbuf *eb)
{
  sc_err err;
  if(!store_members_supported(st))
    return unsupported(st, eb);
  err = check_id(id, eb);
  if(err)
    return err;
  if(is_kube(st))
    return km_remove(st, id, version, eb);
  return sq_members_remove(st, id, version, eb);
}

struct store_members_req {
  struct event *ev;    /* sqlite: the answer held for the loop */
  kmop *kop;           /* kube: the call in flight (NULL once freed) */
  store_members_cb cb;
  void *ud;
  sc_err err;
  sc_errbuf eb;
  store_member_list list;
};

static void req_free(store_members_req *q)
{
  if(q->ev)
    event_free(q->ev);
  km_detach(q->kop);
  store_member_list_clear(&q->list);
  free(q);
}

static void on_deferred(evutil_socket_t fd, short what, void *arg)
{
  store_members_req *q = arg;
  (void)fd;
  (void)what;
  q->cb(q->err, q->err ? q->eb.msg : NULL, &q->list, q->ud);
  req_free(q);
}

static void on_kube(sc_err err, const char *msg, store_member_list *list,
                    void *ud)
{
  store_members_req *q = ud;
  q->kop = NULL;
  q->cb(err, msg, list, q->ud);
  req_free(q);
}

/* renew (period_ms > 0) or remove */
static sc_err start_async(store *st, const char *id, int64_t period_ms,
                          const char *version, store_members_cb cb,
                          void *ud, store_members_req **req, sc_errbuf *eb)
{
  store_members_req *q;
  struct timeval now = {0, 0};
  sc_err err;
  if(req)
    *req = NULL;
  if(!st || !st->base || !cb)
    return sc_errf(eb, SC_ERR_INVALID, "member call: no event loop");
  q = calloc(1, sizeof(*q));
  if(!q)
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  q->cb = cb;
  q->ud = ud;
  q->eb.msg[0] = '\0';
  if(is_kube(st)) {
    err = check_id(id, eb);
    if(!err && period_ms < 0)
      err = sc_errf(eb, SC_ERR_INVALID, "member period: %lld ms",
                    (long long)period_ms);
    if(!err)
      err = km_start(st, false, id, period_ms, version, on_kube, q, &q->kop,
                     eb);
    if(err) {
      free(q);
      return err;
    }
    if(req)
      *req = q;
    return SC_OK;
  }
  q->ev = evtimer_new(st->base, on_deferred, q);
  if(!q->ev) {
    free(q);
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  q->err = period_ms > 0 ?
           store_members_renew(st, id, period_ms, &q->list, &q->eb) :
           store_members_remove(st, id, version, &q->eb);
  evtimer_add(q->ev, &now);
  if(req)
    *req = q;
  return SC_OK;
}

sc_err store_members_renew_async(store *st, const char *id,
                                 int64_t period_ms, store_members_cb cb,
                                 void *ud, store_members_req **req,
                                 sc_errbuf *eb)
{
  if(period_ms <= 0)
    return sc_errf(eb, SC_ERR_INVALID, "member period: %lld ms",
                   (long long)period_ms);
  return start_async(st, id, period_ms, NULL, cb, ud, req, eb);
}

sc_err store_members_remove_async(store *st, const char *id,
                                  const char *version, store_members_cb cb,
                                  void *ud, store_members_req **req,
                                  sc_errbuf *eb)
{
  return start_async(st, id, 0, version, cb, ud, req, eb);
}

void store_members_req_cancel(store_members_req *req)
{
  if(req)
    req_free(req);
}
