/*
 * client.c - the Cube client object (cube.h): options checked and copied,
 * the API key (its header lists are key.c's), the curl multi on the
 * caller's loop and its connection cache, and cube_client_free() aborting
 * every call. The work is in the other
 * files of the folder; cube_int.h says which.
 */
#include "controller/cube/cube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_names[] = {
  "list", "list-page", "get", "create", "pause", "connect", "set-timeout",
  "delete", "probe", "reserve"};

const char *cube_op_name(cube_op op)
{
  if((unsigned)op >= sizeof(op_names) / sizeof(op_names[0]))
    return "unknown";
  return op_names[op];
}

const char *cube_dialect_name(cube_dialect d)
{
  switch(d) {
  case CUBE_DIALECT_CUBE:
    return "cube";
  case CUBE_DIALECT_E2B:
    return "e2b";
  default:
    return "unknown";
  }
}

void cube_client_set_dialect(cube_client *c, cube_dialect d)
{
  if(c)
    c->dialect = d;
}

cube_dialect cube_client_dialect(const cube_client *c)
{
  return c ? c->dialect : CUBE_DIALECT_UNKNOWN;
}

void cube_client_opts_init(cube_client_opts *opts)
{
  memset(opts, 0, sizeof(*opts));
  opts->base_url = CUBE_DEFAULT_URL;
  opts->max_inflight = CUBE_DEFAULT_MAX_INFLIGHT;
  opts->qps = CUBE_DEFAULT_QPS;
}

/* --- the loop (curlev: curl multi on libevent) --- */

/* After a batch of ended transfers: start what waits. */
static void on_batch(void *ud)
{
  cube_pump(ud);
}

static void on_bucket(evutil_socket_t fd, short what, void *arg)
{
  (void)fd;
  (void)what;
  cube_pump(arg);
}

/* --- client --- */

static bool header_safe(const char *s)
{
  for(; *s; s++)
    if((unsigned char)*s < 0x20 || *s == 0x7f)
      return false;
  return true;
}

cube_client *cube_client_new(struct event_base *base,
                             const cube_client_opts *opts, sc_errbuf *eb)
{
  cube_client *c;
  cube_client_opts d;
  CURLU *u = NULL;
  char *scheme = NULL, *host = NULL, *port = NULL;
  const char *url;
  size_t n;

  if(!opts) {
    cube_client_opts_init(&d);
    opts = &d;
  }
  if(!base) {
    sc_errf(eb, SC_ERR_INVALID, "cube: no event base");
    return NULL;
  }
  url = opts->base_url && *opts->base_url ? opts->base_url : CUBE_DEFAULT_URL;
  if(opts->max_inflight < 0 || opts->max_inflight > 10000) {
    sc_errf(eb, SC_ERR_INVALID, "cube: max-inflight %d is not 1..10000",
            opts->max_inflight);
    return NULL;
  }
  /* a rate below 0.001/s would wait past what a timer (and a cast to
   * long) can hold: 0 means no limit, anything else is 0.001..1000000 */
  if(!(opts->qps >= 0) || opts->qps > 1e6 ||
     (opts->qps > 0 && opts->qps < 0.001)) {
    sc_errf(eb, SC_ERR_INVALID,
            "cube: qps %g is not 0 (no limit) or 0.001..1000000", opts->qps);
    return NULL;
  }
  if(!opts->api_key_file && cube_key_check(opts->api_key, eb))
    return NULL;
  if(opts->user_agent && !header_safe(opts->user_agent)) {
    sc_errf(eb, SC_ERR_INVALID, "cube: the user agent has a control "
            "character");
    return NULL;
  }
  if(curl_global_init(CURL_GLOBAL_DEFAULT)) {
    sc_errf(eb, SC_ERR_INTERNAL, "cube: curl_global_init failed");
    return NULL;
  }
  c = calloc(1, sizeof(*c));
  if(!c) {
    curl_global_cleanup();
    sc_errf(eb, SC_ERR_NOMEM, "cube: out of memory");
    return NULL;
  }
  c->base = base;
  c->insecure = opts->insecure_skip_verify;
  c->max_inflight = opts->max_inflight ? opts->max_inflight
                                       : CUBE_DEFAULT_MAX_INFLIGHT;
  c->qps = opts->qps;
  c->tokens = c->qps < 1 ? 1 : c->qps;
  c->refill_ms = sctime_mono_ms();
  c->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : CUBE_TIMEOUT_MS;
  c->long_timeout_ms = opts->long_timeout_ms > 0 ? opts->long_timeout_ms
                                                 : CUBE_LONG_TIMEOUT_MS;
  c->connect_timeout_ms = opts->connect_timeout_ms > 0
                            ? opts->connect_timeout_ms
                            : CUBE_CONNECT_TIMEOUT_MS;
  c->list_cap = opts->list_cap ? opts->list_cap : CUBE_LIST_CAP;
  c->list_max_rows = opts->list_max_rows ? opts->list_max_rows
                                         : CUBE_LIST_MAX_ROWS;
  c->list_max_bytes = opts->list_max_bytes ? opts->list_max_bytes
                                           : CUBE_LIST_MAX_BYTES;
  c->body_cap = opts->body_cap ? opts->body_cap : CUBE_BODY_CAP;

  /* the base URL: http or https, a host, no query or fragment */
  u = curl_url();
  if(!u || curl_url_set(u, CURLUPART_URL, url, 0) ||
     curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
     curl_url_get(u, CURLUPART_HOST, &host, 0) ||
     curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT)) {
    sc_errf(eb, SC_ERR_INVALID, "cube: --cube-url \"%.200s\" is not a URL",
            url);
    goto fail;
  }
  if(strcmp(scheme, "http") && strcmp(scheme, "https")) {
    sc_errf(eb, SC_ERR_INVALID,
            "cube: --cube-url \"%.200s\": scheme %s is not http or https",
            url, scheme);
    goto fail;
  }
  {
    char *q = NULL, *f = NULL, *user = NULL;
    bool bad = !curl_url_get(u, CURLUPART_QUERY, &q, 0) ||
               !curl_url_get(u, CURLUPART_FRAGMENT, &f, 0) ||
               !curl_url_get(u, CURLUPART_USER, &user, 0);
    curl_free(q);
    curl_free(f);
    curl_free(user);
    if(bad) {
      sc_errf(eb, SC_ERR_INVALID,
              "cube: --cube-url must not carry credentials, a query or a "
              "fragment");
      goto fail;
    }
  }
  snprintf(c->peer, sizeof(c->peer), "%s:%s", host, port);
  c->base_url = strdup(url);
  if(!c->base_url)
    goto nomem;
  n = strlen(c->base_url);
  while(n && c->base_url[n - 1] == '/')
    c->base_url[--n] = '\0';

  if(opts->api_key_file && *opts->api_key_file) {
    char *key = NULL;
    sc_err err;
    c->key_file = strdup(opts->api_key_file);
    if(!c->key_file)
      goto nomem;
    err = cube_key_file_read(c, &key, &c->key_sig, eb);
    if(!err && !(c->keys = cube_keyset_new(key)))
      err = sc_errf(eb, SC_ERR_NOMEM, "cube: out of memory");
    else if(!err)
      c->keys->gen = ++c->key_gen;
    if(key) {
      explicit_bzero(key, strlen(key));
      free(key);
    }
    if(err)
      goto fail;
    c->key_checked_ms = sctime_mono_ms();
    c->on_key = opts->on_key_reload;
    c->on_key_ud = opts->on_key_reload_ud;
  }
  else if(!(c->keys = cube_keyset_new(opts->api_key)))
    goto nomem;
  else
    c->keys->gen = ++c->key_gen;
  if(opts->ca_file && *opts->ca_file && !(c->ca_file = strdup(opts->ca_file)))
    goto nomem;
  if(opts->user_agent)
    c->user_agent = strdup(opts->user_agent);
  else
    c->user_agent = strdup("session-controller/" SC_VERSION);
  if(!c->user_agent)
    goto nomem;

  c->ev = curlev_new(base, cube_on_transfer, on_batch, c, eb);
  if(!c->ev)
    goto fail;
  c->bucket_timer = evtimer_new(base, on_bucket, c);
  c->deliver = event_new(base, -1, 0, cube_call_deliver, c);
  if(!c->bucket_timer || !c->deliver)
    goto nomem;
  curl_multi_setopt(curlev_multi(c->ev), CURLMOPT_MAX_HOST_CONNECTIONS,
                    (long)c->max_inflight);
  curl_multi_setopt(curlev_multi(c->ev), CURLMOPT_MAXCONNECTS,
                    (long)c->max_inflight);
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  curl_url_cleanup(u);
  return c;
nomem:
  sc_errf(eb, SC_ERR_NOMEM, "cube: out of memory");
fail:
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  curl_url_cleanup(u);
  cube_client_free(c);
  return NULL;
}

void cube_client_free(cube_client *c)
{
  if(!c)
    return;
  c->closing = true;
  if(c->bucket_timer)
    evtimer_del(c->bucket_timer);
  /* abort every call: each callback once, here */
  while(c->all) {
    cube_call *k = c->all;
    if(k->easy) {
      curlev_remove(c->ev, k->easy);
      c->inflight--;
    }
    cube_call_msg(k, SC_ERR_UNAVAILABLE, "aborted");
    cube_call_complete(k);
  }
  c->wait_head = c->wait_tail = c->done_head = c->done_tail = NULL;
  curlev_free(c->ev);
  if(c->bucket_timer)
    event_free(c->bucket_timer);
  if(c->deliver)
    event_free(c->deliver);
  cube_keyset_unref(c->keys);
  free(c->key_file);
  free(c->base_url);
  free(c->ca_file);
  free(c->user_agent);
  free(c);
  curl_global_cleanup();
}

const char *cube_client_peer(const cube_client *c)
{
  return c ? c->peer : "";
}

unsigned cube_client_auth_failures(const cube_client *c, long *status)
{
  if(status)
    *status = c ? c->auth_status : 0;
  return c ? c->auth_failures : 0;
}

size_t cube_client_pending(const cube_client *c)
{
  return c ? c->pending : 0;
}

