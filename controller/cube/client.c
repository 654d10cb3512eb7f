/*
 * cube.c - the Cube client transport: libcurl multi on a libevent loop
 * (curlev.c, curl's docs/examples/multi-event.c model), a FIFO of calls
 * beyond max_inflight, a token bucket toward Cube, and the per-operation handling
 * of answers. See cube.h for the ownership rules and docs/cube-client.md.
 *
 * A "call" is what the user asked for (cube_list ...); a call makes one or
 * more HTTP requests in sequence (list pages, the probe's two steps). Each
 * request waits in c->wait for a transfer slot and a token, then runs as
 * one curl easy handle in the multi. Completions reach the callback from
 * the loop only: from on_transfer() after curl finished, or from the
 * deferred `deliver` event for calls that ended before any transfer.
 */
#include "controller/cube/cube.h"
#include "lib/curlev.h"
#include "lib/redact.h"

#include <curl/curl.h>
#include <event2/event.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <strings.h>

typedef struct cube_call cube_call;

struct cube_client {
  struct event_base *base;
  curlev *ev;                 /* the multi handle on the loop */
  struct event *bucket_timer; /* a token comes due */
  struct event *deliver;      /* completions that never reached curl */
  char *base_url;             /* no trailing '/' */
  char peer[160];
  char *api_key;              /* kept only to scrub it out of messages */
  struct curl_slist *hdr_plain, *hdr_json, *hdr_empty_post;
  char *ca_file;
  bool insecure;
  char *user_agent;
  int max_inflight;
  double qps, tokens;
  int64_t refill_ms;
  long timeout_ms, long_timeout_ms, connect_timeout_ms;
  size_t list_cap, body_cap;
  size_t list_max_rows, list_max_bytes;
  cube_call *wait_head, *wait_tail; /* requests waiting to start */
  cube_call *done_head, *done_tail; /* finished without a transfer */
  cube_call *all;                   /* every live call */
  int inflight;
  size_t pending;
  unsigned auth_failures;     /* answers in a row that were 401 or 403 */
  long auth_status;           /* the last of them */
  bool closing;
};

struct cube_call {
  cube_client *c;
  cube_call *next;             /* in wait or done */
  cube_call *all_prev, *all_next;
  cube_op op;
  cube_cb cb;
  void *ud;
  /* the current request */
  const char *method;
  char path[200];              /* for messages: no query */
  char *url;
  char *body;                  /* NULL: none */
  bool post;
  long timeout_ms;
  size_t cap;
  CURL *easy;
  dynbuf resp;
  char curl_err[CURL_ERROR_SIZE];
  bool over_cap;
  /* captured from the current response */
  long status;
  sc_time date;
  char *retry_after;
  char *next_tok;
  bool total_running;          /* X-Total-Running seen (an E2B tell) */
  bool date_taken;             /* cube_now set from the first response */
  /* per-op state */
  char *id;
  char *list_query;            /* "metadata=..&state=..&limit=N" */
  int limit;
  char *prev_token;
  int step;                    /* probe */
  size_t rows_alloc;
  size_t list_bytes;           /* cube_list: page bodies read so far */
  /* the result being built */
  cube_result r;
  char msg[SC_ERRBUF_SIZE];
  char detail[256];
  char *created_id;
  char *page_token;
  bool urgent;                 /* cube_delete_now: ahead of the queue and
                                  the token bucket */
  int retries;                 /* cube_list: transient page failures retried */
  struct event *retry_ev;      /* cube_list: a page retry waiting */
};

static const char *const op_names[] = {
  "list", "list-page", "get", "create", "pause", "connect", "set-timeout",
  "delete", "probe"};

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

void cube_client_opts_init(cube_client_opts *opts)
{
  memset(opts, 0, sizeof(*opts));
  opts->base_url = CUBE_DEFAULT_URL;
  opts->max_inflight = CUBE_DEFAULT_MAX_INFLIGHT;
  opts->qps = CUBE_DEFAULT_QPS;
}

/* --- messages --- */

/* Replace every occurrence of the API key in s (in place) by "***". */
static void scrub(const cube_client *c, char *s, size_t size)
{
  sc_redact(s, size, c->api_key);
}

static void call_msg(cube_call *k, sc_err err, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

/* Set the result's error and its one-line message:
 * "cube PEER: METHOD PATH: <text>". */
static void call_msg(cube_call *k, sc_err err, const char *fmt, ...)
{
  va_list ap;
  int n;
  size_t i;
  k->r.err = err;
  n = snprintf(k->msg, sizeof(k->msg), "cube %s: %s %s: ", k->c->peer,
               k->method ? k->method : "-", k->path);
  if(n < 0 || (size_t)n >= sizeof(k->msg))
    n = (int)strlen(k->msg);
  va_start(ap, fmt);
  vsnprintf(k->msg + n, sizeof(k->msg) - (size_t)n, fmt, ap);
  va_end(ap);
  for(i = 0; k->msg[i]; i++) /* one line, printable */
    if((unsigned char)k->msg[i] < 0x20 || k->msg[i] == 0x7f)
      k->msg[i] = ' ';
  scrub(k->c, k->msg, sizeof(k->msg));
}

/* The first bytes of a body, printable, for messages. */
static void body_snippet(const dynbuf *b, char *out, size_t outlen)
{
  size_t i, o = 0, len = dynbuf_len(b);
  const char *p = dynbuf_ptr(b);
  for(i = 0; i < len && o + 4 < outlen; i++) {
    unsigned char ch = (unsigned char)p[i];
    out[o++] = (ch < 0x20 || ch == 0x7f) ? ' ' : (char)ch;
  }
  if(i < len && o + 3 < outlen) {
    memcpy(out + o, "...", 3);
    o += 3;
  }
  out[o] = '\0';
}

static void cap_text(size_t cap, char *buf, size_t len)
{
  if(cap >= 1024 * 1024 && cap % (1024 * 1024) == 0)
    snprintf(buf, len, "%zu MiB", cap / (1024 * 1024));
  else
    snprintf(buf, len, "%zu bytes", cap);
}

/* --- call lifetime --- */

static void call_free(cube_call *k)
{
  cube_client *c = k->c;
  size_t i;
  if(k->all_prev)
    k->all_prev->all_next = k->all_next;
  else
    c->all = k->all_next;
  if(k->all_next)
    k->all_next->all_prev = k->all_prev;
  c->pending--;
  if(k->easy)
    curl_easy_cleanup(k->easy);
  dynbuf_free(&k->resp);
  free(k->url);
  free(k->body);
  free(k->retry_after);
  free(k->next_tok);
  free(k->id);
  free(k->list_query);
  free(k->prev_token);
  free(k->created_id);
  free(k->page_token);
  if(k->retry_ev)
    event_free(k->retry_ev);
  for(i = 0; i < k->r.n_sandboxes; i++)
    cube_sandbox_clear(&k->r.sandboxes[i]);
  free(k->r.sandboxes);
  cube_sandbox_clear(&k->r.sandbox);
  free(k);
}

/* Run the callback once, then free the call. */
static void call_complete(cube_call *k)
{
  if(!k->r.err)
    k->msg[0] = '\0';
  else { /* a failed call hands back no payload: no partial lists */
    size_t i;
    for(i = 0; i < k->r.n_sandboxes; i++)
      cube_sandbox_clear(&k->r.sandboxes[i]);
    free(k->r.sandboxes);
    k->r.sandboxes = NULL;
    k->r.n_sandboxes = 0;
    k->r.truncated_suspect = false;
    cube_sandbox_clear(&k->r.sandbox);
    free(k->created_id);
    k->created_id = NULL;
    free(k->page_token);
    k->page_token = NULL;
  }
  k->r.message = k->msg;
  k->r.detail = k->detail;
  k->r.sandbox_id = k->created_id;
  k->r.next_token = k->page_token;
  k->cb(&k->r, k->ud);
  call_free(k);
}

static void deliver_cb(evutil_socket_t fd, short what, void *arg)
{
  cube_client *c = arg;
  (void)fd;
  (void)what;
  while(c->done_head) {
    cube_call *k = c->done_head;
    c->done_head = k->next;
    if(!c->done_head)
      c->done_tail = NULL;
    k->next = NULL;
    call_complete(k);
  }
}

/* End a call that has no transfer running; the callback runs later. */
static void call_defer(cube_call *k)
{
  cube_client *c = k->c;
  k->next = NULL;
  if(c->done_tail)
    c->done_tail->next = k;
  else
    c->done_head = k;
  c->done_tail = k;
  event_active(c->deliver, 0, 0);
}

static cube_call *call_new(cube_client *c, cube_op op, cube_cb cb, void *ud)
{
  cube_call *k;
  if(!c || !cb || c->closing)
    return NULL;
  k = calloc(1, sizeof(*k));
  if(!k)
    return NULL;
  k->c = c;
  k->op = op;
  k->cb = cb;
  k->ud = ud;
  k->r.op = op;
  k->r.retry_after_ms = -1;
  k->timeout_ms = c->timeout_ms;
  k->cap = c->body_cap;
  dynbuf_init(&k->resp, k->cap);
  k->all_next = c->all;
  if(c->all)
    c->all->all_prev = k;
  c->all = k;
  c->pending++;
  return k;
}

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
static int64_t retry_after_ms(const cube_call *k)
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

  dynbuf_free(&k->resp);
  dynbuf_init(&k->resp, k->cap);
  k->over_cap = false;
  k->status = 0;
  k->curl_err[0] = '\0';
  e = curl_easy_init();
  if(!e)
    return SC_ERR_NOMEM;
  h = k->post ? (k->body ? c->hdr_json : c->hdr_empty_post) : c->hdr_plain;
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
static void pump(cube_client *c)
{
  while(!c->closing && c->wait_head && c->inflight < c->max_inflight) {
    cube_call *k;
    sc_err err;
    k = c->wait_head;
    if(!take_token(c, k->urgent))
      return;
    c->wait_head = k->next;
    if(!c->wait_head)
      c->wait_tail = NULL;
    k->next = NULL;
    err = start(k);
    if(err) {
      call_msg(k, err, "cannot start the transfer: %s", sc_strerror(err));
      call_defer(k);
    }
  }
}

/* Queue the call's current request (front: a continuing call). */
static void submit(cube_call *k, bool front)
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
  pump(c);
}

/* Point the call at its next request. query may be NULL. */
static sc_err set_request(cube_call *k, const char *method, const char *path,
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

/* --- finishing requests --- */

/* Map a non-success HTTP answer to an error with a message. */
static void http_error(cube_call *k, int body_code)
{
  char snip[240];
  sc_err err;
  long st = k->status;
  if(st == 404 || body_code == 404)
    err = SC_ERR_NOT_FOUND;
  else if(st == 409 || body_code == 409)
    err = SC_ERR_CONFLICT;
  else if(st == 429)
    err = SC_ERR_BUSY;
  else if(st == 408 || st == 504)
    err = SC_ERR_TIMEOUT;
  else if(st == 400 || st == 401 || st == 403 || st == 405 || st == 422)
    err = SC_ERR_INVALID;
  else if(st >= 500)
    err = SC_ERR_UNAVAILABLE;
  else
    err = SC_ERR_PROTOCOL;
  body_snippet(&k->resp, snip, sizeof(snip));
  if(snip[0])
    call_msg(k, err, "HTTP %ld: %s", st, snip);
  else
    call_msg(k, err, "HTTP %ld (empty body)", st);
}

static sc_err append_rows(cube_call *k, cube_sandbox *rows, size_t n)
{
  size_t i;
  if(k->r.n_sandboxes + n > k->rows_alloc) {
    size_t a = k->rows_alloc ? k->rows_alloc : 16;
    cube_sandbox *p;
    while(a < k->r.n_sandboxes + n)
      a *= 2;
    p = realloc(k->r.sandboxes, a * sizeof(*p));
    if(!p) {
      for(i = 0; i < n; i++)
        cube_sandbox_clear(&rows[i]);
      free(rows);
      return SC_ERR_NOMEM;
    }
    k->r.sandboxes = p;
    k->rows_alloc = a;
  }
  if(n)
    memcpy(k->r.sandboxes + k->r.n_sandboxes, rows, n * sizeof(*rows));
  k->r.n_sandboxes += n;
  free(rows);
  return SC_OK;
}

static sc_err list_request(cube_call *k, const char *token);

/* A list page arrived. true: the call goes on with another page. */
static bool on_list_page(cube_call *k, int body_code)
{
  sc_errbuf eb;
  cube_sandbox *rows;
  size_t n;
  sc_err err;
  if(k->status < 200 || k->status > 299) {
    http_error(k, body_code);
    return false;
  }
  k->retries = 0; /* the retry budget is per page */
  k->r.pages++;
  err = cube_parse_list(dynbuf_ptr(&k->resp), dynbuf_len(&k->resp), &rows,
                        &n, &eb);
  if(err) {
    call_msg(k, err, "page %zu: %s", k->r.pages, eb.msg);
    return false;
  }
  k->list_bytes += dynbuf_len(&k->resp);
  if(k->r.n_sandboxes + n > k->c->list_max_rows ||
     k->list_bytes > k->c->list_max_bytes) {
    size_t i;
    for(i = 0; i < n; i++)
      cube_sandbox_clear(&rows[i]);
    free(rows);
    call_msg(k, SC_ERR_TOO_LARGE, "page %zu: the list passed %zu rows or "
             "%zu bytes across its pages: giving up (a list that large is "
             "not believed)", k->r.pages, k->c->list_max_rows,
             k->c->list_max_bytes);
    return false;
  }
  if(append_rows(k, rows, n)) {
    call_msg(k, SC_ERR_NOMEM, "out of memory");
    return false;
  }
  if(!k->next_tok) {
    if(n >= (size_t)k->limit)
      k->r.truncated_suspect = true;
    return false;
  }
  if(k->op == CUBE_OP_LIST_PAGE) {
    k->page_token = k->next_tok;
    k->next_tok = NULL;
    return false;
  }
  if(k->prev_token && !strcmp(k->prev_token, k->next_tok)) {
    call_msg(k, SC_ERR_PROTOCOL, "page %zu: X-Next-Token repeats the "
             "previous one: paging loop", k->r.pages);
    return false;
  }
  if(k->r.pages >= CUBE_MAX_PAGES) {
    call_msg(k, SC_ERR_PROTOCOL, "more than %d pages: giving up",
             CUBE_MAX_PAGES);
    return false;
  }
  free(k->prev_token);
  k->prev_token = k->next_tok;
  k->next_tok = NULL;
  err = list_request(k, k->prev_token);
  if(err) {
    call_msg(k, err, "page %zu: %s", k->r.pages + 1, sc_strerror(err));
    return false;
  }
  submit(k, true);
  return true;
}

static bool contains_nocase(const char *hay, const char *needle)
{
  size_t n = strlen(needle);
  for(; *hay; hay++)
    if(!strncasecmp(hay, needle, n))
      return true;
  return false;
}

static void probe_decide(cube_call *k, const cube_sandbox *rows, size_t n)
{
  size_t i, ncube = 0, ne2b = 0, nother = 0;
  bool tell = k->next_tok || k->total_running;
  for(i = 0; i < n; i++) {
    switch(cube_id_dialect(rows[i].sandbox_id)) {
    case CUBE_DIALECT_CUBE:
      ncube++;
      break;
    case CUBE_DIALECT_E2B:
      ne2b++;
      break;
    default:
      nother++;
    }
  }
  if((ncube && (ne2b || tell)) || (nother && (ncube || ne2b))) {
    k->r.dialect = CUBE_DIALECT_UNKNOWN;
    snprintf(k->detail, sizeof(k->detail),
             "mixed signs: %zu Cube-like IDs, %zu E2B-like IDs, %zu others, "
             "E2B paging headers %s", ncube, ne2b, nother,
             tell ? "present" : "absent");
  }
  else if(ncube) {
    k->r.dialect = CUBE_DIALECT_CUBE;
    snprintf(k->detail, sizeof(k->detail),
             "%zu sandbox IDs of 32 lowercase hex, no E2B paging headers",
             ncube);
  }
  else if(ne2b || tell) {
    k->r.dialect = CUBE_DIALECT_E2B;
    snprintf(k->detail, sizeof(k->detail),
             "%zu sandbox IDs of i+20 [a-z0-9]%s%s", ne2b,
             k->next_tok ? ", X-Next-Token sent" : "",
             k->total_running ? ", X-Total-Running sent" : "");
  }
  else {
    k->r.dialect = CUBE_DIALECT_UNKNOWN;
    snprintf(k->detail, sizeof(k->detail),
             n ? "%zu sandbox IDs of neither shape and no E2B headers"
               : "no sandboxes to look at and no E2B headers (%zu rows)",
             n);
  }
}

/* The probe's steps. true: another request was submitted. */
static bool on_probe(cube_call *k, int body_code)
{
  sc_errbuf eb;
  cube_sandbox *rows;
  size_t n, i;
  sc_err err;
  if(k->status < 200 || k->status > 299) {
    http_error(k, body_code);
    return false;
  }
  if(k->step == 0) {
    k->step = 1;
    err = set_request(k, "GET", "/v2/sandboxes", "limit=5", NULL, false,
                      false, k->c->list_cap);
    if(err) {
      call_msg(k, err, "%s", sc_strerror(err));
      return false;
    }
    submit(k, true);
    return true;
  }
  err = cube_parse_list(dynbuf_ptr(&k->resp), dynbuf_len(&k->resp), &rows,
                        &n, &eb);
  if(err) {
    call_msg(k, err, "%s", eb.msg);
    return false;
  }
  probe_decide(k, rows, n);
  for(i = 0; i < n; i++)
    cube_sandbox_clear(&rows[i]);
  free(rows);
  return false;
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
  submit(k, true);
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
static bool list_retry(cube_call *k, CURLcode cc)
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
  if(!k->retry_ev || list_request(k, k->prev_token))
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

/* One transfer finished: decide the outcome or the next request. */
static void on_done(cube_call *k, CURLcode cc)
{
  char snip[64];
  int body_code = 0;
  bool again = false;

  curl_easy_getinfo(k->easy, CURLINFO_RESPONSE_CODE, &k->status);
  {
    long sent = 0;
    curl_easy_getinfo(k->easy, CURLINFO_REQUEST_SIZE, &sent);
    /* the request reached the wire but no whole answer came back */
    k->r.maybe_done = cc != CURLE_OK && sent > 0;
  }
  curl_easy_cleanup(k->easy);
  k->easy = NULL;
  k->r.http_status = k->status;
  k->r.retry_after_ms = retry_after_ms(k);
  if(k->status == 401 || k->status == 403) {
    if(k->c->auth_failures < UINT_MAX)
      k->c->auth_failures++;
    k->c->auth_status = k->status;
  }
  else if(k->status > 0)
    k->c->auth_failures = 0; /* Cube answered and took the key */
  if(list_retry(k, cc))
    return;
  if(!k->date_taken) { /* the first response's Date (first page) */
    k->r.cube_now = k->date;
    k->date_taken = true;
  }

  if(cc != CURLE_OK) {
    if(k->over_cap) {
      cap_text(k->cap, snip, sizeof(snip));
      call_msg(k, SC_ERR_TOO_LARGE, "body over %s cap", snip);
    }
    else if(cc == CURLE_OPERATION_TIMEDOUT)
      call_msg(k, SC_ERR_TIMEOUT, "timed out after %ld ms (%s)",
               k->timeout_ms, k->curl_err[0] ? k->curl_err
                                             : curl_easy_strerror(cc));
    else {
      sc_err err;
      switch(cc) {
      case CURLE_OUT_OF_MEMORY:
        err = SC_ERR_NOMEM;
        break;
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_COULDNT_CONNECT:
      case CURLE_GOT_NOTHING:
      case CURLE_SEND_ERROR:
      case CURLE_RECV_ERROR:
      case CURLE_PARTIAL_FILE:
      case CURLE_SSL_CONNECT_ERROR:
      case CURLE_PEER_FAILED_VERIFICATION:
      case CURLE_SSL_CACERT_BADFILE:
        err = SC_ERR_UNAVAILABLE;
        break;
      default:
        err = SC_ERR_IO;
      }
      call_msg(k, err, "curl error %d: %s", (int)cc,
               k->curl_err[0] ? k->curl_err : curl_easy_strerror(cc));
    }
    call_complete(k);
    return;
  }

  if(k->status < 200 || k->status > 299) {
    char m[128];
    cube_parse_error_body(dynbuf_ptr(&k->resp), dynbuf_len(&k->resp),
                          &body_code, m, sizeof(m));
  }

  switch(k->op) {
  case CUBE_OP_LIST:
  case CUBE_OP_LIST_PAGE:
    again = on_list_page(k, body_code);
    break;
  case CUBE_OP_PROBE:
    again = on_probe(k, body_code);
    break;
  case CUBE_OP_GET:
    if(k->status != 200) {
      http_error(k, body_code);
      break;
    }
    {
      sc_errbuf eb;
      sc_err err = cube_parse_sandbox(dynbuf_ptr(&k->resp),
                                      dynbuf_len(&k->resp), &k->r.sandbox,
                                      &eb);
      if(err)
        call_msg(k, err, "%s", eb.msg);
      else if(strcmp(k->r.sandbox.sandbox_id, k->id)) {
        call_msg(k, SC_ERR_PROTOCOL, "asked for %s, got sandboxID %s", k->id,
                 k->r.sandbox.sandbox_id);
        cube_sandbox_clear(&k->r.sandbox);
      }
    }
    break;
  case CUBE_OP_CREATE:
    if(k->status != 200 && k->status != 201) {
      http_error(k, body_code);
      break;
    }
    {
      sc_errbuf eb;
      sc_err err = cube_parse_created(dynbuf_ptr(&k->resp),
                                      dynbuf_len(&k->resp), &k->created_id,
                                      &eb);
      if(err) {
        call_msg(k, err, "HTTP %ld: %s", k->status, eb.msg);
        k->r.maybe_done = true; /* a 2xx whose body we cannot read */
      }
    }
    break;
  case CUBE_OP_PAUSE:
    if(k->status >= 200 && k->status <= 299)
      break;
    if(k->status == 409 || body_code == 409 ||
       (k->status == 500 &&
        contains_nocase(dynbuf_ptr(&k->resp), "already paused")))
      k->r.already = true;
    else
      http_error(k, body_code);
    break;
  case CUBE_OP_CONNECT:
    if(k->status >= 200 && k->status <= 299)
      k->r.resumed = (k->status == 201);
    else
      http_error(k, body_code);
    break;
  case CUBE_OP_SET_TIMEOUT:
    if(k->status < 200 || k->status > 299)
      http_error(k, body_code);
    break;
  case CUBE_OP_DELETE:
    if(k->status >= 200 && k->status <= 299)
      break;
    if(k->status == 404 || body_code == 404)
      k->r.already_gone = true;
    else
      http_error(k, body_code);
    break;
  }
  if(!again)
    call_complete(k);
}

/* --- the loop (curlev: curl multi on libevent) --- */

/* A transfer ended (its handle is out of the multi). */
static void on_transfer(CURL *e, CURLcode cc, void *ud)
{
  cube_client *c = ud;
  cube_call *k = NULL;
  curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&k);
  c->inflight--;
  on_done(k, cc);
}

/* After a batch of ended transfers: start what waits. */
static void on_batch(void *ud)
{
  pump(ud);
}

static void on_bucket(evutil_socket_t fd, short what, void *arg)
{
  (void)fd;
  (void)what;
  pump(arg);
}

/* --- client --- */

static struct curl_slist *hdr_list(const char *key, const char *extra1,
                                   const char *extra2)
{
  struct curl_slist *l = NULL, *t;
  dynbuf b;
  const char *fixed[3] = {"Accept: application/json", extra1, extra2};
  size_t i;
  for(i = 0; i < 3; i++) {
    if(!fixed[i])
      continue;
    t = curl_slist_append(l, fixed[i]);
    if(!t)
      goto fail;
    l = t;
  }
  if(key && *key) {
    for(i = 0; i < 2; i++) {
      char *s;
      dynbuf_init(&b, 16384);
      if(dynbuf_printf(&b, i ? "Authorization: Bearer %s" : "X-API-Key: %s",
                       key)) {
        dynbuf_free(&b);
        goto fail;
      }
      s = dynbuf_take(&b);
      t = s ? curl_slist_append(l, s) : NULL;
      if(s) {
        explicit_bzero(s, strlen(s));
        free(s);
      }
      if(!t)
        goto fail;
      l = t;
    }
  }
  return l;
fail:
  curl_slist_free_all(l);
  return NULL;
}

static void wipe_list(struct curl_slist *l)
{
  struct curl_slist *p;
  for(p = l; p; p = p->next)
    explicit_bzero(p->data, strlen(p->data));
  curl_slist_free_all(l);
}

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
  if(opts->api_key && !header_safe(opts->api_key)) {
    sc_errf(eb, SC_ERR_INVALID,
            "cube: the API key contains a control character (a trailing "
            "newline in the key file?)");
    return NULL;
  }
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

  if(opts->api_key && *opts->api_key && !(c->api_key = strdup(opts->api_key)))
    goto nomem;
  if(opts->ca_file && *opts->ca_file && !(c->ca_file = strdup(opts->ca_file)))
    goto nomem;
  if(opts->user_agent)
    c->user_agent = strdup(opts->user_agent);
  else
    c->user_agent = strdup("session-controller/" SC_VERSION);
  if(!c->user_agent)
    goto nomem;
  c->hdr_plain = hdr_list(c->api_key, NULL, NULL);
  c->hdr_json = hdr_list(c->api_key, "Content-Type: application/json",
                         "Expect:");
  c->hdr_empty_post = hdr_list(c->api_key, "Content-Type:", "Expect:");
  if(!c->hdr_plain || !c->hdr_json || !c->hdr_empty_post)
    goto nomem;

  c->ev = curlev_new(base, on_transfer, on_batch, c, eb);
  if(!c->ev)
    goto fail;
  c->bucket_timer = evtimer_new(base, on_bucket, c);
  c->deliver = event_new(base, -1, 0, deliver_cb, c);
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
    call_msg(k, SC_ERR_UNAVAILABLE, "aborted");
    call_complete(k);
  }
  c->wait_head = c->wait_tail = c->done_head = c->done_tail = NULL;
  curlev_free(c->ev);
  if(c->bucket_timer)
    event_free(c->bucket_timer);
  if(c->deliver)
    event_free(c->deliver);
  wipe_list(c->hdr_plain);
  wipe_list(c->hdr_json);
  wipe_list(c->hdr_empty_post);
  if(c->api_key) {
    explicit_bzero(c->api_key, strlen(c->api_key));
    free(c->api_key);
  }
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

cube_sandbox *cube_result_take_sandboxes(const cube_result *r, size_t *n)
{
  cube_result *w = (cube_result *)r; /* the client's own, not const */
  cube_sandbox *v = w->sandboxes;
  *n = w->n_sandboxes;
  w->sandboxes = NULL;
  w->n_sandboxes = 0;
  return v;
}

void cube_result_take_sandbox(const cube_result *r, cube_sandbox *out)
{
  cube_result *w = (cube_result *)r;
  *out = w->sandbox;
  memset(&w->sandbox, 0, sizeof(w->sandbox));
}

char *cube_result_take_id(const cube_result *r)
{
  /* r is the `r` member of its call: reach the call to move the string */
  cube_call *k = (cube_call *)(void *)((char *)(uintptr_t)r -
                                       offsetof(cube_call, r));
  char *s = k->created_id;
  k->created_id = NULL;
  k->r.sandbox_id = NULL;
  return s;
}

/* --- the calls --- */

/* Validate an ID argument; false: the call was deferred with an error. */
static bool check_id(cube_call *k, const char *id)
{
  if(!cube_id_valid(id)) {
    call_msg(k, SC_ERR_INVALID, "sandbox ID \"%.64s\" is not 1..%d bytes "
             "of [A-Za-z0-9-]", id ? id : "(null)", CUBE_ID_MAX);
    call_defer(k);
    return false;
  }
  k->id = strdup(id);
  if(!k->id) {
    call_msg(k, SC_ERR_NOMEM, "out of memory");
    call_defer(k);
    return false;
  }
  return true;
}

static sc_err list_request(cube_call *k, const char *token)
{
  dynbuf q;
  sc_err err;
  char *query;
  dynbuf_init(&q, 64 * 1024);
  err = dynbuf_addstr(&q, k->list_query);
  if(!err && token) {
    err = dynbuf_addstr(&q, "&nextToken=");
    if(!err)
      err = cube_pct_encode(token, strlen(token), &q);
  }
  query = err ? NULL : dynbuf_take(&q);
  dynbuf_free(&q);
  if(!err && !query)
    err = SC_ERR_NOMEM;
  if(!err)
    err = set_request(k, "GET", "/v2/sandboxes", query, NULL, false, false,
                      k->c->list_cap);
  free(query);
  return err;
}

static sc_err refused(const cube_client *c, cube_cb cb)
{
  if(!c || !cb)
    return SC_ERR_INVALID;
  return c->closing ? SC_ERR_UNAVAILABLE : SC_ERR_NOMEM;
}

static sc_err list_start(cube_client *c, cube_op op, const sc_kvlist *filter,
                         const char *state, int limit, const char *token,
                         cube_cb cb, void *ud)
{
  cube_call *k = call_new(c, op, cb, ud);
  dynbuf q;
  sc_err err = SC_OK;
  if(!k)
    return refused(c, cb);
  snprintf(k->path, sizeof(k->path), "/v2/sandboxes");
  k->method = "GET";
  if(state && strcmp(state, "running") && strcmp(state, "paused")) {
    call_msg(k, SC_ERR_INVALID, "state \"%.32s\" is not running or paused",
             state);
    call_defer(k);
    return SC_OK;
  }
  if(limit < 0 || limit > CUBE_PAGE_LIMIT) {
    call_msg(k, SC_ERR_INVALID, "limit %d is not 1..%d", limit,
             CUBE_PAGE_LIMIT);
    call_defer(k);
    return SC_OK;
  }
  k->limit = limit ? limit : CUBE_PAGE_LIMIT;
  dynbuf_init(&q, 64 * 1024);
  if(filter && filter->n) {
    err = dynbuf_addstr(&q, "metadata=");
    if(!err)
      err = cube_meta_encode(filter, &q);
    if(!err)
      err = dynbuf_addstr(&q, "&");
  }
  if(!err && state)
    err = dynbuf_printf(&q, "state=%s&", state);
  if(!err)
    err = dynbuf_printf(&q, "limit=%d", k->limit);
  if(!err) {
    k->list_query = dynbuf_take(&q);
    if(!k->list_query)
      err = SC_ERR_NOMEM;
  }
  dynbuf_free(&q);
  if(!err)
    err = list_request(k, token);
  if(err) {
    call_msg(k, err, "cannot build the request: %s%s", sc_strerror(err),
             err == SC_ERR_INVALID ? " (an empty metadata key)" : "");
    call_defer(k);
    return SC_OK;
  }
  submit(k, false);
  return SC_OK;
}

sc_err cube_list(cube_client *c, const sc_kvlist *filter, const char *state,
                 cube_cb cb, void *ud)
{
  return list_start(c, CUBE_OP_LIST, filter, state, CUBE_PAGE_LIMIT, NULL,
                    cb, ud);
}

sc_err cube_list_page(cube_client *c, const sc_kvlist *filter,
                      const char *state, int limit, const char *next_token,
                      cube_cb cb, void *ud)
{
  return list_start(c, CUBE_OP_LIST_PAGE, filter, state, limit, next_token,
                    cb, ud);
}

/* A call on one sandbox: method + "/sandboxes/{id}" + suffix. */
static sc_err id_call_ex(cube_client *c, cube_op op, const char *id,
                         const char *method, const char *suffix, char *body,
                         bool post, bool long_timeout, bool urgent,
                         cube_cb cb, void *ud)
{
  cube_call *k = call_new(c, op, cb, ud);
  char path[200];
  sc_err err;
  if(!k) {
    free(body);
    return refused(c, cb);
  }
  k->method = method;
  snprintf(k->path, sizeof(k->path), "/sandboxes/%.64s%s", id ? id : "",
           suffix);
  if(!check_id(k, id)) {
    free(body);
    return SC_OK;
  }
  snprintf(path, sizeof(path), "/sandboxes/%s%s", id, suffix);
  err = set_request(k, method, path, NULL, body, post, long_timeout,
                    c->body_cap);
  if(err) {
    call_msg(k, err, "cannot build the request: %s", sc_strerror(err));
    call_defer(k);
    return SC_OK;
  }
  k->urgent = urgent;
  submit(k, urgent);
  return SC_OK;
}

static sc_err id_call(cube_client *c, cube_op op, const char *id,
                      const char *method, const char *suffix, char *body,
                      bool post, bool long_timeout, cube_cb cb, void *ud)
{
  return id_call_ex(c, op, id, method, suffix, body, post, long_timeout,
                    false, cb, ud);
}

/* {"timeout":N}; NULL when out of memory. */
static char *timeout_body(int64_t timeout_s)
{
  char buf[48];
  snprintf(buf, sizeof(buf), "{\"timeout\":%lld}", (long long)timeout_s);
  return strdup(buf);
}

static sc_err bad_timeout(cube_client *c, cube_op op, const char *path,
                          int64_t t, cube_cb cb, void *ud)
{
  cube_call *k = call_new(c, op, cb, ud);
  if(!k)
    return refused(c, cb);
  k->method = "POST";
  snprintf(k->path, sizeof(k->path), "%s", path);
  call_msg(k, SC_ERR_INVALID, "timeout %lld s is not 0..2147483647",
           (long long)t);
  call_defer(k);
  return SC_OK;
}

sc_err cube_get(cube_client *c, const char *id, cube_cb cb, void *ud)
{
  return id_call(c, CUBE_OP_GET, id, "GET", "", NULL, false, false, cb, ud);
}

sc_err cube_get_now(cube_client *c, const char *id, cube_cb cb, void *ud)
{
  return id_call_ex(c, CUBE_OP_GET, id, "GET", "", NULL, false, false, true,
                    cb, ud);
}

sc_err cube_pause(cube_client *c, const char *id, cube_cb cb, void *ud)
{
  return id_call(c, CUBE_OP_PAUSE, id, "POST", "/pause", NULL, true, true,
                 cb, ud);
}

sc_err cube_connect(cube_client *c, const char *id, int64_t timeout_s,
                    cube_cb cb, void *ud)
{
  char *body;
  if(timeout_s < 0 || timeout_s > 2147483647)
    return bad_timeout(c, CUBE_OP_CONNECT, "/sandboxes/{id}/connect",
                       timeout_s, cb, ud);
  if(!(body = timeout_body(timeout_s)))
    return refused(c, cb);
  return id_call(c, CUBE_OP_CONNECT, id, "POST", "/connect", body, true,
                 true, cb, ud);
}

static sc_err set_timeout(cube_client *c, const char *id, int64_t timeout_s,
                          bool urgent, cube_cb cb, void *ud)
{
  char *body;
  if(timeout_s < 0 || timeout_s > 2147483647)
    return bad_timeout(c, CUBE_OP_SET_TIMEOUT, "/sandboxes/{id}/timeout",
                       timeout_s, cb, ud);
  if(!(body = timeout_body(timeout_s)))
    return refused(c, cb);
  return id_call_ex(c, CUBE_OP_SET_TIMEOUT, id, "POST", "/timeout", body,
                    true, false, urgent, cb, ud);
}

sc_err cube_set_timeout(cube_client *c, const char *id, int64_t timeout_s,
                        cube_cb cb, void *ud)
{
  return set_timeout(c, id, timeout_s, false, cb, ud);
}

sc_err cube_set_timeout_now(cube_client *c, const char *id,
                            int64_t timeout_s, cube_cb cb, void *ud)
{
  return set_timeout(c, id, timeout_s, true, cb, ud);
}

sc_err cube_delete(cube_client *c, const char *id, cube_cb cb, void *ud)
{
  return id_call(c, CUBE_OP_DELETE, id, "DELETE", "", NULL, false, false, cb,
                 ud);
}

sc_err cube_delete_now(cube_client *c, const char *id, cube_cb cb, void *ud)
{
  return id_call_ex(c, CUBE_OP_DELETE, id, "DELETE", "", NULL, false, false,
                    true, cb, ud);
}

static json_object *kv_object(const sc_kvlist *l)
{
  json_object *o = json_object_new_object();
  size_t i;
  for(i = 0; o && l && i < l->n; i++) {
    json_object *v = json_object_new_string(l->items[i].value);
    if(!v || json_object_object_add(o, l->items[i].key, v)) {
      json_object_put(v);
      json_object_put(o);
      return NULL;
    }
  }
  return o;
}

/* The create body, both dialects' pause-on-timeout fields. */
static char *create_body(const cube_create_req *req)
{
  json_object *o = json_object_new_object(), *ar, *lc;
  char *s = NULL;
  bool ok = o != NULL;
#define ADD(key, val)                                                       \
  do {                                                                      \
    json_object *v_ = (val);                                                \
    if(!ok || !v_ || json_object_object_add(o, key, v_)) {                  \
      json_object_put(v_);                                                  \
      ok = false;                                                           \
    }                                                                       \
  } while(0)
  ADD("templateID", json_object_new_string(req->template_id));
  ADD("timeout", json_object_new_int64(req->timeout_s));
  ADD("autoPause", json_object_new_boolean(1));
  ar = json_object_new_object();
  if(ar && json_object_object_add(ar, "enabled", json_object_new_boolean(1)))
    ok = false;
  ADD("autoResume", ar);
  lc = json_object_new_object();
  if(lc && (json_object_object_add(lc, "onTimeout",
                                   json_object_new_string("pause")) ||
            json_object_object_add(lc, "autoResume",
                                   json_object_new_boolean(1))))
    ok = false;
  ADD("lifecycle", lc);
  ADD("metadata", kv_object(req->metadata));
  ADD("envVars", kv_object(req->env_vars));
#undef ADD
  if(ok)
    s = strdup(json_object_to_json_string_ext(
      o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(o);
  return s;
}

sc_err cube_create(cube_client *c, const cube_create_req *req, cube_cb cb,
                   void *ud)
{
  cube_call *k = call_new(c, CUBE_OP_CREATE, cb, ud);
  char *body;
  sc_err err;
  if(!k)
    return refused(c, cb);
  k->method = "POST";
  snprintf(k->path, sizeof(k->path), "/sandboxes");
  if(!req || !req->template_id || !req->template_id[0]) {
    call_msg(k, SC_ERR_INVALID, "templateID is required");
    call_defer(k);
    return SC_OK;
  }
  if(req->timeout_s < 0 || req->timeout_s > 2147483647) {
    call_msg(k, SC_ERR_INVALID, "timeout %lld s is not 0..2147483647",
             (long long)req->timeout_s);
    call_defer(k);
    return SC_OK;
  }
  body = create_body(req);
  if(!body) {
    call_msg(k, SC_ERR_NOMEM, "cannot build the body: out of memory");
    call_defer(k);
    return SC_OK;
  }
  err = set_request(k, "POST", "/sandboxes", NULL, body, true, false,
                    c->body_cap);
  if(err) {
    call_msg(k, err, "cannot build the request: %s", sc_strerror(err));
    call_defer(k);
    return SC_OK;
  }
  submit(k, false);
  return SC_OK;
}

sc_err cube_probe(cube_client *c, cube_cb cb, void *ud)
{
  cube_call *k = call_new(c, CUBE_OP_PROBE, cb, ud);
  sc_err err;
  if(!k)
    return refused(c, cb);
  err = set_request(k, "GET", "/health", NULL, NULL, false, false,
                    c->body_cap);
  if(err) {
    call_msg(k, err, "cannot build the request: %s", sc_strerror(err));
    call_defer(k);
    return SC_OK;
  }
  submit(k, false);
  return SC_OK;
}
