/* store_finalizer.c - store_needs_finalizer() and
 * store_ensure_finalizer_async() (store.h, "the controller's
 * finalizer"): the checks every backend shares, then the backend's op;
 * a backend without finalizers answers with the object as it stands. */
#include "controller/store/backend.h"

bool store_needs_finalizer(const store *st, const session *s)
{
  if(!st || !s || !st->ops->needs_finalizer)
    return false;
  return st->ops->needs_finalizer(st, s);
}

sc_err store_ensure_finalizer_async(store *st, const session *s,
                                    store_reply_cb cb, void *ud,
                                    sc_errbuf *eb)
{
  sc_err err;
  if(!st->base)
    return sc_errf(eb, SC_ERR_INVALID, "store: add finalizer: asynchronous "
                   "calls need an event loop (store_open_opts.base)");
  if(!s)
    return sc_errf(eb, SC_ERR_INVALID, "store: add finalizer: no object");
  err = store_check_key(s->meta.namespace_, s->meta.name, "add finalizer",
                        eb);
  if(err)
    return err;
  if(!st->ops->ensure_finalizer_async)
    /* nothing to do: the object as it stands */
    return store_get_async(st, s->meta.namespace_, s->meta.name, cb, ud,
                           eb);
  return st->ops->ensure_finalizer_async(st, s, cb, ud, eb);
}
