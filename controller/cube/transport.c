/*
 * transport.c - the Cube client's requests on the wire: libcurl multi on a
 * libevent loop (lib/curlev.c, curl's docs/examples/multi-event.c model),
 * a FIFO of requests beyond max_inflight, a token bucket toward Cube, the
 * curl easy setup of each request (headers, TLS, timeouts), the headers
 * kept from an answer (Date, Retry-After, X-Next-Token), and the page
 * retries of cube_list. See cube_int.h and docs/cube-client.md.
 */
#include "controller/cube/cube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* --- the token bucket --- */

/* force: take it even into debt (a negative balance delays the calls
 * after it, so the rate over time stays qps) */
static bool take_token(cube_client *c, bool force)
{
  int64_t now;
  double burst;
  if(c->qps <= 0)
    return true;
  burst = c->qps < 1 ? 1 : c->qps;
  now = sctime_mono_ms();
  if(now > c->refill_ms) {
    c->tokens += (double)(now - c->refill_ms) * c->qps / 1000.0;
    if(c->tokens > burst)
      c->tokens = burst;
    c->refill_ms = now;
  }
  if(c->tokens >= 1.0 || force) {
    c->tokens -= 1.0;
    return true;
  }
  if(!evtimer_pending(c->bucket_timer, NULL)) {
    double wait = (1.0 - c->tokens) * 1000.0 / c->qps;
    long ms;
    if(!(wait < 86400000.0)) /* a day at most: the cast stays defined */
      wait = 86400000.0;
    ms = (long)wait + 1;
    struct timeval tv;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    evtimer_add(c->bucket_timer, &tv);
  }
  return false;
}

/* a token taken for a request that did not go goes back */
static void refund_token(cube_client *c)
{
  double burst;
  if(c->qps <= 0)
    return;
  burst = c->qps < 1 ? 1 : c->qps;
  c->tokens += 1.0;
  if(c->tokens > burst)
    c->tokens = burst;
}

void cube_reserve_cancel(cube_client *c)
{
  if(!c)
    return;
  if(c->reserved > 0)
    c->reserved--; /* the slot back */
  refund_token(c);
  cube_pump(c); /* the slot or the token may start a waiting call */
}

/* --- curl callbacks --- */

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
  cube_call *k = ud;
  size_t n = size * nmemb;
  sc_err err = dynbuf_add(&k->resp, ptr, n);
  if(err) {
    k->over_cap = (err == SC_ERR_TOO_LARGE);
    return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
  }
  return n;
}

static char *trimdup(const char *v, size_t len)
{
  char *s;
  while(len && (*v == ' ' || *v == '\t')) {
    v++;
    len--;
  }
  while(len && (v[len - 1] == '\r' || v[len - 1] == '\n' ||
                v[len - 1] == ' ' || v[len - 1] == '\t'))
    len--;
  if(len > 4096)
    len = 4096;
  s = malloc(len + 1);
  if(s) {
    memcpy(s, v, len);
    s[len] = '\0';
  }
  return s;
}

static bool hdr_is(const char *line, size_t len, const char *name,
                   const char **val, size_t *vlen)
{
  size_t n = strlen(name);
  if(len <= n || line[n] != ':' || strncasecmp(line, name, n))
    return false;
  *val = line + n + 1;
  *vlen = len - n - 1;
  return true;
}

static size_t header_cb(char *line, size_t size, size_t nmemb, void *ud)
{
  cube_call *k = ud;
  size_t len = size * nmemb;
  const char *v;
  size_t vlen;
  if(len >= 5 && !strncmp(line, "HTTP/", 5)) {
    /* a new response (after a 100 Continue, say): forget the last one */
    k->date = 0;
    free(k->retry_after);
    k->retry_after = NULL;
    free(k->next_tok);
    k->next_tok = NULL;
    k->total_running = false;
  }
  else if(hdr_is(line, len, "Date", &v, &vlen)) {
    char *s = trimdup(v, vlen);
    if(!s || sctime_parse_http_date(s, &k->date))
      k->date = 0;
    free(s);
  }
  else if(hdr_is(line, len, "Retry-After", &v, &vlen)) {
    free(k->retry_after);
    k->retry_after = trimdup(v, vlen);
  }
  else if(hdr_is(line, len, "X-Next-Token", &v, &vlen)) {
    free(k->next_tok);
    k->next_tok = trimdup(v, vlen);
    if(k->next_tok && !k->next_tok[0]) {
      free(k->next_tok);
      k->next_tok = NULL;
    }
  }
  else if(hdr_is(line, len, "X-Total-Running", &v, &vlen))
    k->total_running = true;
  return len;
}

/* Retry-After as milliseconds: delta-seconds or an HTTP date (relative to
 * the response's Date when there is one). -1 when absent or unusable. */
int64_t cube_retry_after_ms(const cube_call *k)
{
  const char *s = k->retry_after;
  sc_time t;
  if(!s || !*s)
    return -1;
  if(*s >= '0' && *s <= '9') {
    char *end;
    long long v = strtoll(s, &end, 10);
    if(*end || v < 0)
      return -1;
    if(v > 86400)
      v = 86400;
    return (int64_t)v * 1000;
  }
  if(sctime_parse_http_date(s, &t) == SC_OK) {
    sc_time now = k->date ? k->date : sctime_wall_ms();
    int64_t d = t - now;
    if(d < 0)
      d = 0;
    if(d > 86400000)
      d = 86400000;
    return d;
  }
  return -1;
}

/* --- starting requests --- */

static sc_err start(cube_call *k)
{
  cube_client *c = k->c;
  CURL *e;
  struct curl_slist *h;
  sc_err err;

  if(k->resp.cap == k->cap)
    dynbuf_reset(&k->resp); /* a list's next page: the same buffer */
  else {
    dynbuf_free(&k->resp);
    dynbuf_init(&k->resp, k->cap);
  }
  k->over_cap = false;
  k->status = 0;
  k->curl_err[0] = '\0';
  e = curl_easy_init();
  if(!e)
    return SC_ERR_NOMEM;
  /* the key of now (the file looked at when due); the request keeps its
   * key set until the call ends, whatever the client takes next */
  cube_key_poll(c);
  if(k->keys != c->keys) {
    cube_keyset_unref(k->keys);
    k->keys = cube_keyset_ref(c->keys);
  }
  h = k->post ? (k->body ? k->keys->hdr_json : k->keys->hdr_empty_post)
              : k->keys->hdr_plain;
  curl_easy_setopt(e, CURLOPT_URL, k->url);
  curl_easy_setopt(e, CURLOPT_PRIVATE, k);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, k->curl_err);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, k);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, k);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(e, CURLOPT_USERAGENT, c->user_agent);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, k->timeout_ms);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  if(c->ca_file)
    curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, c->insecure ? 0L : 1L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, c->insecure ? 0L : 2L);
  curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
  if(k->post) {
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, k->body ? k->body : "");
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE,
                     (long)(k->body ? strlen(k->body) : 0));
  }
  else if(strcmp(k->method, "GET"))
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, k->method);
  err = curlev_add(c->ev, e);
  if(err) {
    curl_easy_cleanup(e);
    return err;
  }
  k->easy = e;
  c->inflight++;
  return SC_OK;
}

/* Start waiting requests while there are slots and tokens. */
void cube_pump(cube_client *c)
{
  while(!c->closing && c->wait_head &&
        c->inflight + c->reserved < c->max_inflight) {
    cube_call *k;
    sc_err err;
    k = c->wait_head;
    if(!k->prepaid && !take_token(c, k->urgent))
      return;
    c->wait_head = k->next;
    if(!c->wait_head)
      c->wait_tail = NULL;
    k->next = NULL;
    if(k->op == CUBE_OP_RESERVE) {
      c->reserved++; /* its turn: no request, the slot held for its create */
      cube_call_defer(k);
      continue;
    }
    err = start(k);
    if(err) {
      cube_call_msg(k, err, "cannot start the transfer: %s", sc_strerror(err));
      cube_call_defer(k);
    }
  }
}

/* Queue the call's current request (front: a continuing call). */
void cube_submit(cube_call *k, bool front)
{
  cube_client *c = k->c;
  k->next = NULL;
  if(front) {
    k->next = c->wait_head;
    c->wait_head = k;
    if(!c->wait_tail)
      c->wait_tail = k;
  }
  else {
    if(c->wait_tail)
      c->wait_tail->next = k;
    else
      c->wait_head = k;
    c->wait_tail = k;
  }
  cube_pump(c);
}

/* Have curl send the requests just started now. curl writes a new
 * transfer's request from its timer, that is on the loop's next turn,
 * after the callback that started it has returned; a list reading a page
 * while the next one is on its way wants it on the wire first. Not from
 * inside a curl callback (it never is: cube_on_transfer runs after curl
 * has handed the finished transfer back). */
static void kick(cube_client *c)
{
  int running = 0;
  if(!c->closing)
    curl_multi_socket_action(curlev_multi(c->ev), CURL_SOCKET_TIMEOUT, 0,
                             &running);
}

/* Start the call's current request at once (ahead of the queue, as a
 * continuing call goes) and put it on the wire, when a transfer slot and
 * a token are free. false: nothing was started, the caller submits it
 * later as usual. */
bool cube_start_now(cube_call *k)
{
  cube_client *c = k->c;
  if(c->closing || c->inflight + c->reserved >= c->max_inflight ||
     !take_token(c, false))
    return false;
  if(start(k)) {
    refund_token(c);
    return false;
  }
  kick(c);
  return true;
}

/* Take back the request cube_start_now() started: its transfer is stopped
 * (curl closes the connection or keeps it, no callback runs) and its slot
 * is free again. */
void cube_take_back(cube_call *k)
{
  cube_client *c = k->c;
  if(!k->easy)
    return;
  curlev_remove(c->ev, k->easy);
  curl_easy_cleanup(k->easy);
  k->easy = NULL;
  c->inflight--;
}

/* Point the call at its next request. query may be NULL. */
sc_err cube_set_request(cube_call *k, const char *method, const char *path,
                          const char *query, char *body, bool post,
                          bool long_timeout, size_t cap)
{
  cube_client *c = k->c;
  dynbuf u;
  sc_err err;
  k->method = method;
  snprintf(k->path, sizeof(k->path), "%s", path);
  free(k->body);
  k->body = body;
  k->post = post;
  k->timeout_ms = long_timeout ? c->long_timeout_ms : c->timeout_ms;
  k->cap = cap;
  dynbuf_init(&u, 64 * 1024);
  err = dynbuf_printf(&u, "%s%s%s%s", c->base_url, path,
                      query && *query ? "?" : "", query ? query : "");
  free(k->url);
  k->url = err ? NULL : dynbuf_take(&u);
  dynbuf_free(&u);
  if(!err && !k->url)
    err = SC_ERR_NOMEM;
  return err;
}

/* --- list page retries ---
 * A full list is many pages (E2B: 100 rows each); with a few percent of
 * transient failures per request, a list of 40 pages would almost never
 * succeed if any failed page failed the whole list. A page is a GET and
 * idempotent, so cube_list (not cube_list_page) asks for the same page
 * again, up to CUBE_LIST_PAGE_RETRIES times per page, after Retry-After
 * or a short doubling delay. Rows of the pages already read are kept. */

static void on_retry_timer(evutil_socket_t fd, short what, void *arg)
{
  cube_call *k = arg;
  (void)fd;
  (void)what;
  cube_submit(k, true);
}

static bool transient(const cube_call *k, CURLcode cc)
{
  if(k->over_cap)
    return false;
  switch(cc) {
  case CURLE_OK:
    return k->status == 408 || k->status == 429 || k->status == 500 ||
           k->status == 502 || k->status == 503 || k->status == 504;
  case CURLE_COULDNT_CONNECT:
  case CURLE_GOT_NOTHING:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_PARTIAL_FILE:
    return true; /* not a timeout: a stalled server is not asked again */

  default:
    return false;
  }
}

/* true: the same page was scheduled again and the call goes on */
bool cube_list_retry(cube_call *k, CURLcode cc)
{
  cube_client *c = k->c;
  int64_t delay = k->r.retry_after_ms;
  struct timeval tv;
  if(k->op != CUBE_OP_LIST || c->closing ||
     k->retries >= CUBE_LIST_PAGE_RETRIES || !transient(k, cc))
    return false;
  if(delay < 0)
    delay = 50LL << k->retries;
  if(delay > CUBE_LIST_RETRY_MAX_MS)
    return false; /* the server asks for a long pause: let the caller wait */
  if(!k->retry_ev)
    k->retry_ev = evtimer_new(c->base, on_retry_timer, k);
  if(!k->retry_ev || cube_list_request(k, k->prev_token))
    return false;
  k->retries++;
  k->r.page_retries++;
  dynbuf_reset(&k->resp);
  free(k->retry_after);
  k->retry_after = NULL;
  free(k->next_tok);
  k->next_tok = NULL;
  k->total_running = false;
  k->curl_err[0] = '\0';
  k->status = 0;
  tv.tv_sec = (time_t)(delay / 1000);
  tv.tv_usec = (suseconds_t)(delay % 1000) * 1000;
  evtimer_add(k->retry_ev, &tv);
  return true;
}

