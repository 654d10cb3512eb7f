/* kube_http.c - asynchronous Kubernetes API calls on a libcurl multi
 * handle driven by libevent (see kube_http.h). */
#include "kube_http.h"
#include "curlev.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <event2/event.h>
#include "../lib/dynbuf.h"
#include "../lib/sctime.h"

#define TOKEN_TTL_MS 60000

typedef struct kreq kreq;

struct kube_http {
  struct event_base *base;
  kube_conn conn;
  char *user_agent;
  char *token;
  int64_t token_read_ms;   /* monotonic; 0 = read again */
  curlev *ev;              /* the multi handle on the loop */
  kreq *reqs;
  int n_reqs;
};

struct kreq {
  kube_http *h;
  CURL *easy;
  struct curl_slist *hdrs;
  char *method, *path, *ctype, *body;
  long timeout_ms;
  bool reauthed;
  dynbuf resp;
  kube_http_cb cb;
  void *ud;
  kreq *next;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
  kreq *q = ud;
  return dynbuf_add(&q->resp, p, sz * n) ? 0 : sz * n;
}

static sc_err refresh_token(kube_http *h, sc_errbuf *eb)
{
  int64_t now = sctime_mono_ms();
  char *t = NULL;
  sc_err err;
  if(h->token_read_ms && now - h->token_read_ms < TOKEN_TTL_MS)
    return SC_OK;
  err = kube_conn_token(&h->conn, &t, eb);
  if(err)
    return err;
  free(h->token);
  h->token = t;
  h->token_read_ms = now;
  return SC_OK;
}

static struct curl_slist *add_hdr(struct curl_slist *h, const char *name,
                                  const char *value)
{
  char buf[8400];
  struct curl_slist *t;
  if(!h)
    return NULL;
  snprintf(buf, sizeof(buf), "%s: %s", name, value);
  t = curl_slist_append(h, buf);
  if(!t)
    curl_slist_free_all(h);
  return t;
}

static void req_unlink_free(kreq *q)
{
  kreq **pp;
  for(pp = &q->h->reqs; *pp; pp = &(*pp)->next)
    if(*pp == q) {
      *pp = q->next;
      q->h->n_reqs--;
      break;
    }
  if(q->easy) {
    curlev_remove(q->h->ev, q->easy);
    curl_easy_cleanup(q->easy);
  }
  curl_slist_free_all(q->hdrs);
  dynbuf_free(&q->resp);
  free(q->method);
  free(q->path);
  free(q->ctype);
  free(q->body);
  free(q);
}

/* (re)start the transfer of q */
static sc_err req_begin(kreq *q, sc_errbuf *eb)
{
  kube_http *h = q->h;
  char url[2400];
  sc_err err = refresh_token(h, eb);
  if(err)
    return err;
  curl_slist_free_all(q->hdrs);
  q->hdrs = curl_slist_append(NULL, "Accept: application/json");
  if(q->ctype)
    q->hdrs = add_hdr(q->hdrs, "Content-Type", q->ctype);
  if(h->token) {
    char auth[8300];
    snprintf(auth, sizeof(auth), "Bearer %s", h->token);
    q->hdrs = add_hdr(q->hdrs, "Authorization", auth);
  }
  if(!q->hdrs)
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  if(snprintf(url, sizeof(url), "%s%s", h->conn.server, q->path) >=
     (int)sizeof(url))
    return sc_errf(eb, SC_ERR_INVALID, "kube: URL too long: %s", q->path);
  dynbuf_reset(&q->resp);
  curl_easy_reset(q->easy);
  curl_easy_setopt(q->easy, CURLOPT_URL, url);
  curl_easy_setopt(q->easy, CURLOPT_CUSTOMREQUEST, q->method);
  curl_easy_setopt(q->easy, CURLOPT_HTTPHEADER, q->hdrs);
  curl_easy_setopt(q->easy, CURLOPT_USERAGENT, h->user_agent);
  curl_easy_setopt(q->easy, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(q->easy, CURLOPT_WRITEDATA, q);
  curl_easy_setopt(q->easy, CURLOPT_PRIVATE, q);
  curl_easy_setopt(q->easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(q->easy, CURLOPT_CONNECTTIMEOUT_MS,
                   q->timeout_ms < 5000 ? q->timeout_ms : 5000L);
  curl_easy_setopt(q->easy, CURLOPT_TIMEOUT_MS, q->timeout_ms);
  curl_easy_setopt(q->easy, CURLOPT_PROTOCOLS_STR, "http,https");
  if(q->body) {
    curl_easy_setopt(q->easy, CURLOPT_POSTFIELDS, q->body);
    curl_easy_setopt(q->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(q->body));
  }
  kube_conn_curl_tls(&h->conn, q->easy);
  if(curlev_add(h->ev, q->easy))
    return sc_errf(eb, SC_ERR_INTERNAL, "kube: cannot start %s %s",
                   q->method, q->path);
  return SC_OK;
}

static void req_done(kreq *q, CURLcode cc)
{
  kube_http *h = q->h;
  kube_http_result res;
  char msg[SC_ERRBUF_SIZE + 300];
  json_object *body = NULL, *m;
  memset(&res, 0, sizeof(res));
  res.message = "";
  if(cc != CURLE_OK) {
    res.err = cc == CURLE_WRITE_ERROR ? SC_ERR_TOO_LARGE
              : cc == CURLE_OPERATION_TIMEDOUT ? SC_ERR_TIMEOUT
                                               : SC_ERR_UNAVAILABLE;
    snprintf(msg, sizeof(msg), "kube %s %s%s: %s", q->method,
             h->conn.server, q->path,
             cc == CURLE_WRITE_ERROR ? "response too large"
                                     : curl_easy_strerror(cc));
    res.message = msg;
  }
  else {
    curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &res.status);
    if(res.status == 401 && !q->reauthed && h->conn.token_file) {
      sc_errbuf eb;
      q->reauthed = true;
      h->token_read_ms = 0; /* rotated? read it again */
      eb.msg[0] = 0;
      if(!req_begin(q, &eb))
        return;
    }
    if(dynbuf_len(&q->resp))
      body = json_tokener_parse(dynbuf_ptr(&q->resp));
    res.body = body;
    if(res.status >= 300) {
      snprintf(msg, sizeof(msg), "kube %s %s: HTTP %ld%s%s", q->method,
               q->path, res.status,
               body && json_object_object_get_ex(body, "message", &m) ? ": "
                                                                      : "",
               body && json_object_object_get_ex(body, "message", &m)
                 ? json_object_get_string(m) : "");
      res.message = msg;
    }
  }
  q->cb(&res, q->ud);
  json_object_put(body);
  req_unlink_free(q);
}

/* a transfer ended (curlev took its handle out of the multi) */
static void on_transfer(CURL *e, CURLcode cc, void *ud)
{
  kreq *q = NULL;
  (void)ud;
  curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&q);
  req_done(q, cc);
}

kube_http *kube_http_new(struct event_base *base, kube_conn *conn,
                         const char *user_agent, sc_errbuf *eb)
{
  kube_http *h;
  if(curl_global_init(CURL_GLOBAL_DEFAULT)) {
    sc_errf(eb, SC_ERR_INTERNAL, "kube: curl_global_init failed");
    return NULL;
  }
  h = calloc(1, sizeof(*h));
  if(!h) {
    sc_errf(eb, SC_ERR_NOMEM, "out of memory");
    return NULL;
  }
  h->base = base;
  h->conn = *conn;
  memset(conn, 0, sizeof(*conn));
  h->user_agent = strdup(user_agent ? user_agent : "session-controller");
  h->ev = curlev_new(base, on_transfer, NULL, h, eb);
  if(!h->ev) {
    kube_http_free(h);
    return NULL;
  }
  if(!h->user_agent || !h->conn.server) {
    sc_errf(eb, SC_ERR_NOMEM, "kube: cannot set up the HTTP client");
    kube_http_free(h);
    return NULL;
  }
  return h;
}

void kube_http_free(kube_http *h)
{
  if(!h)
    return;
  while(h->reqs)
    req_unlink_free(h->reqs);
  curlev_free(h->ev);
  kube_conn_clear(&h->conn);
  free(h->user_agent);
  free(h->token);
  free(h);
}

static char *dup_or_null(const char *s, bool *oom)
{
  char *d;
  if(!s)
    return NULL;
  d = strdup(s);
  if(!d)
    *oom = true;
  return d;
}

sc_err kube_http_request(kube_http *h, const char *method, const char *path,
                         const char *ctype, const char *body,
                         long timeout_ms, kube_http_cb cb, void *ud,
                         sc_errbuf *eb)
{
  kreq *q = calloc(1, sizeof(*q));
  bool oom = false;
  sc_err err;
  if(!q)
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  q->h = h;
  q->cb = cb;
  q->ud = ud;
  q->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
  dynbuf_init(&q->resp, KUBE_HTTP_BODY_MAX);
  q->method = dup_or_null(method, &oom);
  q->path = dup_or_null(path, &oom);
  q->ctype = dup_or_null(ctype, &oom);
  q->body = dup_or_null(body, &oom);
  q->easy = curl_easy_init();
  q->next = h->reqs;
  h->reqs = q;
  h->n_reqs++;
  if(oom || !q->easy || !q->method || !q->path) {
    req_unlink_free(q);
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  err = req_begin(q, eb);
  if(err)
    req_unlink_free(q);
  return err;
}

int kube_http_inflight(const kube_http *h)
{
  return h ? h->n_reqs : 0;
}

const char *kube_http_server(const kube_http *h)
{
  return h->conn.server;
}
