/* http.c - asynchronous Kubernetes API calls on a libcurl multi handle
 * driven by libevent (see http.h); the streams are in http_stream.c. */
#include "controller/kubeclient/http_int.h"
#include "lib/scstr.h"
#include "lib/curlev.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <event2/event.h>
#include "lib/dynbuf.h"
#include "lib/sctime.h"

struct kreq {
  kube_http *h;
  CURL *easy;
  struct curl_slist *hdrs;
  char *method, *path, *ctype, *body;
  long timeout_ms;
  int retries, attempt;
  bool reauthed;
  bool raw_2xx;            /* kube_http_opts.raw_2xx */
  kube_auth auth;          /* the credential of this attempt */
  struct event *retry;     /* the wait before the next attempt */
  char ebuf[CURL_ERROR_SIZE];
  dynbuf resp;
  kube_http_cb cb;
  void *ud;
  int64_t queued_ms;       /* when it was asked for (sctime_mono_ms) */
  long waited_ms;          /* of it, in the wait queue: off the 1st attempt */
  bool waiting;            /* in the wait queue, no easy handle yet */
  kreq *wnext;             /* the wait queue */
  kreq *prev, *next;       /* h->reqs */
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
  kreq *q = ud;
  return dynbuf_add(&q->resp, p, sz * n) ? 0 : sz * n;
}

/* name: value (a token may be up to KUBE_TOKEN_MAX bytes) */
static struct curl_slist *add_hdr(struct curl_slist *h, const char *name,
                                  const char *pfx, const char *value)
{
  size_t len = strlen(name) + strlen(pfx) + strlen(value) + 3;
  char *buf;
  struct curl_slist *t = NULL;
  if(!h)
    return NULL;
  buf = malloc(len);
  if(buf) {
    snprintf(buf, len, "%s: %s%s", name, pfx, value);
    t = curl_slist_append(h, buf);
    free(buf);
  }
  if(!t)
    curl_slist_free_all(h);
  return t;
}

static void req_unlink_free(kreq *q)
{
  kube_http *h = q->h;
  if(q->prev)
    q->prev->next = q->next;
  else
    h->reqs = q->next;
  if(q->next)
    q->next->prev = q->prev;
  h->n_reqs--;
  if(q->waiting) {
    /* the oldest, or one dropped by kube_http_abort_all() */
    kreq **pp, *last = NULL;
    for(pp = &h->wait_head; *pp && *pp != q; pp = &(*pp)->wnext)
      last = *pp;
    if(*pp) {
      *pp = q->wnext;
      if(h->wait_tail == q)
        h->wait_tail = last;
      h->n_waiting--;
    }
  }
  else
    h->active--;
  if(q->easy) {
    curlev_remove(h->ev, q->easy);
    curl_easy_cleanup(q->easy);
  }
  if(q->retry)
    event_free(q->retry);
  curl_slist_free_all(q->hdrs);
  kube_auth_clear(&q->auth);
  dynbuf_free(&q->resp);
  free(q->method);
  free(q->path);
  free(q->ctype);
  free(q->body);
  free(q);
}

/* Accept, the optional Content-Type and the credential's token; NULL
 * when out of memory */
struct curl_slist *khttp_req_headers(const char *ctype, const kube_auth *a)
{
  struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json");
  if(ctype)
    h = add_hdr(h, "Content-Type", "", ctype);
  if(a->token)
    h = add_hdr(h, "Authorization", "Bearer ", a->token);
  return h;
}

/* what every request of the client sets on its easy handle: the URL
 * (server + path), method GET unless set after, headers, User-Agent,
 * TLS, the error buffer and the owner (CURLOPT_PRIVATE) */
sc_err khttp_easy_setup(kube_http *h, CURL *e, const char *path,
                        struct curl_slist *hdrs, const kube_auth *a,
                        char *ebuf, void *owner, long connect_ms,
                        sc_errbuf *eb)
{
  char url[2400];
  if(snprintf(url, sizeof(url), "%s%s", h->conn.server, path) >=
     (int)sizeof(url))
    return sc_errf(eb, SC_ERR_INVALID, "kube: URL too long: %s", path);
  ebuf[0] = '\0';
  curl_easy_reset(e);
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(e, CURLOPT_USERAGENT, h->user_agent);
  curl_easy_setopt(e, CURLOPT_PRIVATE, owner);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, ebuf);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  kube_conn_curl_tls(&h->conn, a, e);
  return SC_OK;
}

/* (re)start the transfer of q */
static sc_err req_begin(kreq *q, sc_errbuf *eb)
{
  kube_http *h = q->h;
  long tmo = q->timeout_ms - q->waited_ms;
  sc_err err;
  q->waited_ms = 0; /* only the first attempt waited */
  kube_auth_clear(&q->auth);
  err = kube_conn_auth(&h->conn, h->base, &q->auth, eb);
  if(err)
    return err;
  curl_slist_free_all(q->hdrs);
  q->hdrs = khttp_req_headers(q->ctype, &q->auth);
  if(!q->hdrs)
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  err = khttp_easy_setup(h, q->easy, q->path, q->hdrs, &q->auth, q->ebuf, q,
                   tmo < 5000 ? tmo : 5000L, eb);
  if(err)
    return err;
  dynbuf_reset(&q->resp);
  q->attempt++;
  curl_easy_setopt(q->easy, CURLOPT_CUSTOMREQUEST, q->method);
  curl_easy_setopt(q->easy, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(q->easy, CURLOPT_WRITEDATA, q);
  curl_easy_setopt(q->easy, CURLOPT_TIMEOUT_MS, tmo);
  if(q->body) {
    curl_easy_setopt(q->easy, CURLOPT_POSTFIELDS, q->body);
    curl_easy_setopt(q->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(q->body));
  }
  if(curlev_add(h->ev, q->easy))
    return sc_errf(eb, SC_ERR_INTERNAL, "kube: cannot start %s %s",
                   q->method, q->path);
  return SC_OK;
}

bool kube_http_curl_permanent(CURLcode cc)
{
  switch(cc) {
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_CIPHER:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_UNSUPPORTED_PROTOCOL:
  case CURLE_URL_MALFORMAT:
  case CURLE_WRITE_ERROR:
    return true;
  default:
    return false;
  }
}

void kube_http_curl_detail(const kube_conn *c, CURLcode cc, const char *ebuf,
                           char *out, size_t len)
{
  const char *d = ebuf && *ebuf ? ebuf : curl_easy_strerror(cc);
  switch(cc) {
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_ISSUER_ERROR:
    snprintf(out, len, "TLS: the server's certificate is not trusted: %s "
             "(check certificate-authority of %s)", d, c->source);
    break;
  case CURLE_SSL_CERTPROBLEM:
    snprintf(out, len, "TLS: the client certificate or key is not usable: "
             "%s (%s)", d, c->source);
    break;
  case CURLE_WRITE_ERROR:
    snprintf(out, len, "response too large");
    break;
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_SSL_CIPHER:
  case CURLE_RECV_ERROR:
  case CURLE_SEND_ERROR:
  case CURLE_GOT_NOTHING:
    /* TLS 1.3 ends the handshake before the server checks the client's
     * certificate: a refusal shows as a connection dropped while reading */
    if(c->cert_pem && c->server && !strncmp(c->server, "https:", 6))
      snprintf(out, len, "%s%s (TLS: the server may have refused the client "
               "certificate of %s)", cc == CURLE_SSL_CONNECT_ERROR ?
               "TLS handshake failed: " : "", d, c->source);
    else
      snprintf(out, len, "%s%s", cc == CURLE_SSL_CONNECT_ERROR ?
               "TLS handshake failed: " : "", d);
    break;
  default:
    snprintf(out, len, "%s", d);
  }
}

/* Give q its easy handle and put it on the wire (q holds a slot: it is
 * counted in h->active). A call that waited its whole timeout for a
 * slot fails without a request. */
static sc_err req_start(kreq *q, sc_errbuf *eb)
{
  kube_http *h = q->h;
  q->waited_ms = (long)(sctime_mono_ms() - q->queued_ms);
  if(q->waited_ms < 0)
    q->waited_ms = 0;
  if(q->waited_ms >= q->timeout_ms)
    return sc_errf(eb, SC_ERR_TIMEOUT, "kube %s %s%s: timed out after %ld "
                   "ms waiting for one of the %d connections (%d calls "
                   "waiting)", q->method, h->conn.server, q->path,
                   q->waited_ms, KUBE_HTTP_ACTIVE_MAX, kube_http_waiting(h));
  if(!q->easy)
    q->easy = curl_easy_init();
  if(!q->easy)
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  return req_begin(q, eb);
}

/* Start waiting calls while slots are free, oldest first. From the loop
 * only: a call that cannot start gets its callback here. */
static void pump(kube_http *h)
{
  while(h->wait_head && h->active < KUBE_HTTP_ACTIVE_MAX) {
    kreq *q = h->wait_head;
    kube_http_result res;
    sc_errbuf eb;
    sc_err err;
    h->wait_head = q->wnext;
    if(!h->wait_head)
      h->wait_tail = NULL;
    h->n_waiting--;
    q->wnext = NULL;
    q->waiting = false;
    h->active++;
    eb.msg[0] = '\0';
    err = req_start(q, &eb);
    if(!err)
      continue;
    memset(&res, 0, sizeof(res));
    res.raw = "";
    res.err = err == SC_ERR_TIMEOUT ? SC_ERR_TIMEOUT : SC_ERR_UNAVAILABLE;
    res.message = eb.msg;
    res.attempts = q->attempt;
    q->cb(&res, q->ud);
    req_unlink_free(q);
  }
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
  kreq *q = arg;
  kube_http *h = q->h;
  kube_http_result res;
  sc_errbuf eb;
  (void)fd;
  (void)what;
  eb.msg[0] = '\0';
  if(!req_begin(q, &eb))
    return;
  memset(&res, 0, sizeof(res));
  res.raw = "";
  res.err = SC_ERR_UNAVAILABLE;
  res.message = eb.msg;
  res.attempts = q->attempt;
  q->cb(&res, q->ud);
  req_unlink_free(q);
  pump(h);
}

/* another attempt after the backoff (100 ms doubling) or the server's
 * Retry-After when longer; false when no attempt is left */
static bool req_retry(kreq *q, long retry_after_s)
{
  long ms = 100L << (q->attempt - 1 < 10 ? q->attempt - 1 : 10);
  struct timeval tv;
  if(q->attempt > q->retries)
    return false;
  if(retry_after_s > 0) {
    long ra = retry_after_s > KUBE_HTTP_RETRY_AFTER_MAX_MS / 1000
              ? KUBE_HTTP_RETRY_AFTER_MAX_MS : retry_after_s * 1000;
    if(ra > ms)
      ms = ra;
  }
  if(!q->retry)
    q->retry = evtimer_new(q->h->base, on_retry, q);
  if(!q->retry)
    return false;
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  return evtimer_add(q->retry, &tv) == 0;
}

/* The result of a transfer that ended with cc (and, when CURLE_OK, the
 * HTTP status and the body resp): the error, the message naming the
 * request, the body parsed (a 2xx one only with parse_2xx; the caller
 * puts res->body). after ends the messages of failures that were retried
 * ("" when none). */
void khttp_result_fill(kube_http *h, const char *method, const char *path,
                       CURLcode cc, const char *ebuf, long status,
                       const dynbuf *resp, bool parse_2xx,
                       const char *after, kube_http_result *res, char *msg,
                       size_t mlen)
{
  char d[SC_ERRBUF_SIZE + 300];
  json_object *m;
  res->message = "";
  res->raw = "";
  if(cc != CURLE_OK) {
    res->err = cc == CURLE_WRITE_ERROR ? SC_ERR_TOO_LARGE
               : cc == CURLE_OPERATION_TIMEDOUT ? SC_ERR_TIMEOUT
                                                : SC_ERR_UNAVAILABLE;
    kube_http_curl_detail(&h->conn, cc, ebuf, d, sizeof(d));
    snprintf(msg, mlen, "kube %s %s%s: %s%s", method, h->conn.server, path,
             d, after);
    res->message = msg;
    return;
  }
  res->status = status;
  res->body_len = dynbuf_len(resp);
  res->raw = dynbuf_ptr(resp);
  if(res->body_len && (parse_2xx || status < 200 || status > 299))
    res->body = json_tokener_parse(res->raw);
  if(status >= 300) {
    bool has = res->body && json_object_object_get_ex(res->body, "message",
                                                     &m);
    snprintf(msg, mlen, "kube %s %s%s: HTTP %ld%s%s%s", method,
             h->conn.server, path, status, has ? ": " : "",
             has ? json_object_get_string(m) : "",
             status == 429 || status >= 500 ? after : "");
    res->message = msg;
  }
}

static void req_done(kreq *q, CURLcode cc)
{
  kube_http *h = q->h;
  kube_http_result res;
  char msg[SC_ERRBUF_SIZE + 600], after[40] = "";
  curl_off_t ra = 0;
  long status = 0;
  memset(&res, 0, sizeof(res));
  res.attempts = q->attempt;
  if(q->retries > 0)
    snprintf(after, sizeof(after), " (after %d attempt%s)", q->attempt,
             q->attempt > 1 ? "s" : "");
  if(cc != CURLE_OK) {
    if(!kube_http_curl_permanent(cc) && req_retry(q, 0))
      return;
  }
  else {
    curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &status);
    if(status == 401 && !q->reauthed &&
       kube_conn_unauthorized(&h->conn, &q->auth)) {
      /* rotated? read the token file again, or run the plugin again */
      sc_errbuf eb;
      q->reauthed = true;
      q->attempt--; /* not counted against the retries */
      eb.msg[0] = 0;
      if(!req_begin(q, &eb))
        return;
      /* no new credential: that is the answer */
      snprintf(msg, sizeof(msg), "kube %s %s%s: HTTP 401, and no new "
               "credential: %s", q->method, h->conn.server, q->path, eb.msg);
      res.err = SC_ERR_UNAVAILABLE;
      res.message = msg;
      res.raw = "";
      q->cb(&res, q->ud);
      req_unlink_free(q);
      return;
    }
    (void)curl_easy_getinfo(q->easy, CURLINFO_RETRY_AFTER, &ra);
    res.retry_after_s = (long)ra;
    if((status == 429 || status >= 500) && req_retry(q, res.retry_after_s))
      return;
  }
  khttp_result_fill(h, q->method, q->path, cc, q->ebuf, status, &q->resp,
              !q->raw_2xx, after, &res, msg, sizeof(msg));
  q->cb(&res, q->ud);
  json_object_put(res.body);
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

/* after each batch of finished transfers: their slots are free */
static void on_batch(void *ud)
{
  pump(ud);
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
  h->ev = curlev_new(base, on_transfer, on_batch, h, eb);
  if(!h->ev) {
    kube_http_free(h);
    return NULL;
  }
  /* the calls on the wire share these connections (kept alive) */
  curl_multi_setopt(curlev_multi(h->ev), CURLMOPT_MAX_HOST_CONNECTIONS,
                    (long)KUBE_HTTP_ACTIVE_MAX);
  curl_multi_setopt(curlev_multi(h->ev), CURLMOPT_MAXCONNECTS,
                    (long)KUBE_HTTP_ACTIVE_MAX);
  if(!h->user_agent || !h->conn.server) {
    sc_errf(eb, SC_ERR_NOMEM, "kube: cannot set up the HTTP client");
    kube_http_free(h);
    return NULL;
  }
  return h;
}

void kube_http_abort_all(kube_http *h)
{
  while(h && h->wait_head)
    req_unlink_free(h->wait_head);
  while(h && h->reqs)
    req_unlink_free(h->reqs);
}

void kube_http_free(kube_http *h)
{
  if(!h)
    return;
  kube_http_abort_all(h);
  khttp_streams_free(h);
  curlev_free(h->ev);
  kube_cred_detach(h->conn.cred, h->base);
  kube_conn_clear(&h->conn);
  free(h->user_agent);
  free(h);
}

sc_err kube_http_request(kube_http *h, const char *method, const char *path,
                         const char *ctype, const char *body,
                         long timeout_ms, kube_http_cb cb, void *ud,
                         sc_errbuf *eb)
{
  kube_http_opts o;
  memset(&o, 0, sizeof(o));
  o.timeout_ms = timeout_ms;
  return kube_http_request_ex(h, method, path, ctype, body, &o, cb, ud, eb);
}

sc_err kube_http_request_ex(kube_http *h, const char *method,
                            const char *path, const char *ctype,
                            const char *body, const kube_http_opts *o,
                            kube_http_cb cb, void *ud, sc_errbuf *eb)
{
  kreq *q = calloc(1, sizeof(*q));
  bool oom = false;
  sc_err err;
  if(!q)
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  q->h = h;
  q->cb = cb;
  q->ud = ud;
  q->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 30000;
  q->retries = o->retries > 0 ? o->retries : 0;
  q->raw_2xx = o->raw_2xx;
  dynbuf_init(&q->resp, o->body_max ? o->body_max : KUBE_HTTP_BODY_MAX);
  q->method = sc_strdup_opt(method, &oom);
  q->path = sc_strdup_opt(path, &oom);
  q->ctype = sc_strdup_opt(ctype, &oom);
  q->body = sc_strdup_opt(body, &oom);
  q->queued_ms = sctime_mono_ms();
  q->next = h->reqs;
  if(h->reqs)
    h->reqs->prev = q;
  h->reqs = q;
  h->n_reqs++;
  h->active++; /* its slot: handed back below if it must wait */
  if(oom || !q->method || !q->path) {
    req_unlink_free(q);
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  if(h->active > KUBE_HTTP_ACTIVE_MAX || h->wait_head) {
    /* every slot taken, or older calls wait: after them (pump()) */
    h->active--;
    q->waiting = true;
    if(h->wait_tail)
      h->wait_tail->wnext = q;
    else
      h->wait_head = q;
    h->wait_tail = q;
    h->n_waiting++;
    return SC_OK;
  }
  err = req_start(q, eb);
  if(err)
    req_unlink_free(q);
  return err;
}

int kube_http_inflight(const kube_http *h)
{
  return h ? h->n_reqs : 0;
}

int kube_http_waiting(const kube_http *h)
{
  return h ? h->n_waiting : 0;
}

const char *kube_http_server(const kube_http *h)
{
  return h->conn.server;
}
