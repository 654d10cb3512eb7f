/* kube.c - the store on a Kubernetes API server: the Session custom
 * resource lea.io/v1alpha1 (docs/store.md "The kube backend"). The
 * backend table, open and close; the rest by concern in kube_*.c
 * (kube_int.h lists them).
 *
 * Every call is a request of kube_http (controller/kubeclient/http.h): the
 * asynchronous ones (store.h, the controller's) and the watches on the
 * libevent loop of store_open_opts.base, the synchronous ones
 * (sessionctl's) on a private loop run until the call ends. */
#include "controller/store/kube/kube_int.h"
#include "controller/store/kube/kube_name.h"

#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <event2/event.h>

static void k_close(store *st)
{
  kube_store *k = (kube_store *)st;
  kstore_watch_free_all(k); /* their streams are on k->http */
  /* the clients first: they drop their calls, then the operations */
  kube_http_free(k->http);
  kube_http_free(k->shttp);
  while(k->ops)
    kop_free(k->ops);
  km_free_all(k);
  if(k->sbase)
    event_base_free(k->sbase);
  kube_conn_clear(&k->conn);
  free(k->ns);
  free(k);
}

static const store_ops kube_ops = {
  "kube", k_close, kstore_list, kstore_get, kstore_apply,
  kstore_update_spec, kstore_update_status, kstore_delete, kstore_purge,
  kstore_watch_start, kstore_watch_stop, kstore_list_async, kstore_get_async,
  kstore_update_status_async, kstore_purge_async, kstore_async_inflight,
  NULL, /* no file to lose: the API server is the store */
  kube_claim_name, kube_served_by_get, /* on the CRD (kube_name.c) */
  kstore_needs_finalizer, kstore_ensure_finalizer_async, /* kube_fin.c */
  NULL, /* no write probe: every write is a request that answers itself */
  kstore_set_annotation
};

/* a kube_http client on base with a copy of k's connection */
static sc_err new_client(kube_store *k, struct event_base *base,
                         const char *ua, kube_http **out, sc_errbuf *eb)
{
  kube_conn c;
  if(kube_conn_copy(&c, &k->conn))
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  *out = kube_http_new(base, &c, ua, eb);
  kube_conn_clear(&c);
  return *out ? SC_OK : SC_ERR_NOMEM;
}

sc_err store_kube_open(const char *context, const store_open_opts *opts,
                       store **out, sc_errbuf *eb)
{
  kube_store *k;
  sc_err err;
  *out = NULL;
  if(curl_global_init(CURL_GLOBAL_DEFAULT))
    return sc_errf(eb, SC_ERR_INTERNAL, "kube: curl_global_init failed");
  k = calloc(1, sizeof(*k));
  if(!k)
    return SC_ERR_NOMEM;
  k->base.ops = &kube_ops;
  err = kube_conn_resolve(opts->kubeconfig, context, &k->conn, eb);
  if(err) {
    k_close(&k->base);
    return err;
  }
  if(opts->namespace_ && *opts->namespace_) {
    k->ns = strdup(opts->namespace_);
    if(!k->ns) {
      k_close(&k->base);
      return SC_ERR_NOMEM;
    }
  }
  k->mark_invalid = opts->mark_invalid;
  k->page_limit = PAGE_LIMIT;
  k->watch_timeout_s = opts->watch_timeout_s;
  k->evbase = opts->base;
  k->sbase = event_base_new();
  err = k->sbase ? new_client(k, k->sbase, opts->user_agent, &k->shttp, eb)
                 : sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  if(!err && k->evbase)
    err = new_client(k, k->evbase, opts->user_agent, &k->http, eb);
  if(err) {
    k_close(&k->base);
    return err;
  }
  {
    /* the credential must be there now (an exec plugin runs here) */
    kube_auth a;
    err = kube_conn_auth(&k->conn, NULL, &a, eb);
    kube_auth_clear(&a);
  }
  if(err) {
    k_close(&k->base);
    return err;
  }
  *out = &k->base;
  return SC_OK;
}

sc_err store_kube_conn(const store *st, kube_conn *out, sc_errbuf *eb)
{
  memset(out, 0, sizeof(*out));
  if(!st || st->ops != &kube_ops)
    return sc_errf(eb, SC_ERR_INVALID, "store %s: not the kube store",
                   store_backend(st));
  if(kube_conn_copy(out, &((const kube_store *)st)->conn))
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  return SC_OK;
}
