/*
 * answers.c - what the Cube client makes of an answer: a curl error or an
 * HTTP status and body mapped to the call's result (docs/cube-client.md,
 * "Results and the error model"), the idempotent answers (a pause already
 * done, a delete of what is gone), list pages followed to the end, the
 * dialect probe's two steps, and the count of 401/403 answers in a row.
 * See cube_int.h.
 */
#include "controller/cube/cube_int.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* --- messages --- */

/* needle (lower case) in the len bytes of p, ignoring ASCII case */
static bool mem_has_nocase(const char *p, size_t len, const char *needle)
{
  size_t i, j, n = strlen(needle);
  for(i = 0; i + n <= len; i++) {
    for(j = 0; j < n; j++)
      if(tolower((unsigned char)p[i + j]) != needle[j])
        break;
    if(j == n)
      return true;
  }
  return false;
}

/* The first bytes of a body, printable, for messages. A body that names
 * an access token (E2B's envdAccessToken, trafficAccessToken: secrets that
 * open the sandbox) is withheld whole: no message shows a token. */
static void body_snippet(const dynbuf *b, char *out, size_t outlen)
{
  size_t i, o = 0, len = dynbuf_len(b);
  const char *p = dynbuf_ptr(b);
  if(mem_has_nocase(p, len, "accesstoken")) {
    snprintf(out, outlen, "(%zu bytes withheld: the body carries an access "
             "token)", len);
    return;
  }
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
    cube_call_msg(k, err, "HTTP %ld: %s", st, snip);
  else
    cube_call_msg(k, err, "HTTP %ld (empty body)", st);
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

/* The list's next page may be asked for now: a token, not the one before
 * (a paging loop) and not past CUBE_MAX_PAGES (both reported once the page
 * in hand is read, as they always were). */
static bool next_page_due(const cube_call *k)
{
  return k->op == CUBE_OP_LIST && k->next_tok &&
         !(k->prev_token && !strcmp(k->prev_token, k->next_tok)) &&
         k->r.pages < CUBE_MAX_PAGES;
}

/* A list page arrived. true: the call goes on with another page.
 *
 * A long list is pages in sequence (E2B: 100 rows each), so each page's
 * round trip waits on Cube. The next page's token is in this page's
 * headers: the next request is built and sent (cube_start_now) before
 * this page is read, and Cube makes the next page while this one is
 * parsed. The page read goes to k->page; the next one comes into k->resp.
 * A page that fails to read takes the request back (cube_take_back): no
 * answer of it is ever read. */
static bool on_list_page(cube_call *k, int body_code)
{
  sc_errbuf eb;
  cube_sandbox *rows;
  size_t n;
  sc_err err, next_err = SC_OK;
  dynbuf swap;
  bool asked = false, ahead = false;
  if(k->status < 200 || k->status > 299) {
    http_error(k, body_code);
    return false;
  }
  k->retries = 0; /* the retry budget is per page */
  k->r.pages++;
  swap = k->page; /* the page to k->page, its old buffer to the next one */
  k->page = k->resp;
  k->resp = swap;
  if(next_page_due(k)) {
    free(k->prev_token);
    k->prev_token = k->next_tok;
    k->next_tok = NULL;
    asked = true;
    next_err = cube_list_request(k, k->prev_token);
    ahead = !next_err && cube_start_now(k);
  }
  err = cube_parse_list(dynbuf_ptr(&k->page), dynbuf_len(&k->page), &rows,
                        &n, &eb);
  if(err) {
    if(ahead)
      cube_take_back(k);
    cube_call_msg(k, err, "page %zu: %s", k->r.pages, eb.msg);
    return false;
  }
  k->list_bytes += dynbuf_len(&k->page);
  if(k->r.n_sandboxes + n > k->c->list_max_rows ||
     k->list_bytes > k->c->list_max_bytes) {
    size_t i;
    for(i = 0; i < n; i++)
      cube_sandbox_clear(&rows[i]);
    free(rows);
    if(ahead)
      cube_take_back(k);
    cube_call_msg(k, SC_ERR_TOO_LARGE, "page %zu: the list passed %zu rows "
                  "or %zu bytes across its pages: giving up (a list that "
                  "large is not believed)", k->r.pages,
                  k->c->list_max_rows, k->c->list_max_bytes);
    return false;
  }
  if(append_rows(k, rows, n)) {
    if(ahead)
      cube_take_back(k);
    cube_call_msg(k, SC_ERR_NOMEM, "out of memory");
    return false;
  }
  if(ahead)
    return true;
  if(asked) { /* built but not started: no slot or token yet */
    if(next_err) {
      cube_call_msg(k, next_err, "page %zu: %s", k->r.pages + 1,
                    sc_strerror(next_err));
      return false;
    }
    cube_submit(k, true);
    return true;
  }
  if(!k->next_tok) {
    /* A full page and no X-Next-Token: Cube ignores paging (its `limit`
     * counts compute nodes), so the list may be silently short. E2B pages
     * and sends the token while more rows exist: there a last page of
     * exactly `limit` rows is the end (at N * limit sandboxes every list
     * ends so). A server pages when the probe said e2b, an earlier page
     * of this list carried a token, or this page has X-Total-Running. */
    bool pages = k->c->dialect == CUBE_DIALECT_E2B || k->prev_token ||
                 k->total_running;
    if(n >= (size_t)k->limit && !pages)
      k->r.truncated_suspect = true;
    return false;
  }
  if(k->op == CUBE_OP_LIST_PAGE) {
    k->page_token = k->next_tok;
    k->next_tok = NULL;
    return false;
  }
  if(k->prev_token && !strcmp(k->prev_token, k->next_tok)) {
    cube_call_msg(k, SC_ERR_PROTOCOL, "page %zu: X-Next-Token repeats the "
                  "previous one: paging loop", k->r.pages);
    return false;
  }
  if(k->r.pages >= CUBE_MAX_PAGES) {
    cube_call_msg(k, SC_ERR_PROTOCOL, "more than %d pages: giving up",
                  CUBE_MAX_PAGES);
    return false;
  }
  /* next_page_due() asks early in every other case; this is the way a
   * page is asked for without it */
  free(k->prev_token);
  k->prev_token = k->next_tok;
  k->next_tok = NULL;
  err = cube_list_request(k, k->prev_token);
  if(err) {
    cube_call_msg(k, err, "page %zu: %s", k->r.pages + 1, sc_strerror(err));
    return false;
  }
  cube_submit(k, true);
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
    err = cube_set_request(k, "GET", "/v2/sandboxes", "limit=5", NULL, false,
                           false, k->c->list_cap);
    if(err) {
      cube_call_msg(k, err, "%s", sc_strerror(err));
      return false;
    }
    cube_submit(k, true);
    return true;
  }
  err = cube_parse_list(dynbuf_ptr(&k->resp), dynbuf_len(&k->resp), &rows,
                        &n, &eb);
  if(err) {
    cube_call_msg(k, err, "%s", eb.msg);
    return false;
  }
  probe_decide(k, rows, n);
  if(k->r.dialect != CUBE_DIALECT_UNKNOWN)
    k->c->dialect = k->r.dialect; /* how list pages are read from now on */
  for(i = 0; i < n; i++)
    cube_sandbox_clear(&rows[i]);
  free(rows);
  return false;
}

/* GET /sandboxes/{id}: the sandbox, and it must be the one asked for. */
static void on_get(cube_call *k, int body_code)
{
  sc_errbuf eb;
  sc_err err;
  if(k->status != 200) {
    http_error(k, body_code);
    return;
  }
  err = cube_parse_sandbox(dynbuf_ptr(&k->resp), dynbuf_len(&k->resp),
                           &k->r.sandbox, &eb);
  if(err)
    cube_call_msg(k, err, "%s", eb.msg);
  else if(strcmp(k->r.sandbox.sandbox_id, k->id)) {
    cube_call_msg(k, SC_ERR_PROTOCOL, "asked for %s, got sandboxID %s",
                  k->id, k->r.sandbox.sandbox_id);
    cube_sandbox_clear(&k->r.sandbox);
  }
}

/* POST /sandboxes: the new ID. */
static void on_create(cube_call *k, int body_code)
{
  sc_errbuf eb;
  sc_err err;
  if(k->status != 200 && k->status != 201) {
    http_error(k, body_code);
    return;
  }
  err = cube_parse_created_ex(dynbuf_ptr(&k->resp), dynbuf_len(&k->resp),
                              &k->created_id, &k->created_domain, &eb);
  if(err) {
    cube_call_msg(k, err, "HTTP %ld: %s", k->status, eb.msg);
    k->r.maybe_done = true; /* a 2xx whose body we cannot read */
  }
}

/* The idempotent answers (rule 8 of docs/architecture.md): a pause of a
 * sandbox already paused (409, or Cube's 500 "already paused") succeeds
 * with `already` (the caller GETs to decide), a delete of a sandbox that
 * is gone (404) succeeds with `already_gone`. */
static void on_pause(cube_call *k, int body_code)
{
  if(k->status >= 200 && k->status <= 299)
    return;
  if(k->status == 409 || body_code == 409 ||
     (k->status == 500 &&
      contains_nocase(dynbuf_ptr(&k->resp), "already paused")))
    k->r.already = true;
  else
    http_error(k, body_code);
}

static void on_delete(cube_call *k, int body_code)
{
  if(k->status >= 200 && k->status <= 299)
    return;
  if(k->status == 404 || body_code == 404)
    k->r.already_gone = true;
  else
    http_error(k, body_code);
}

/* Cube's word on the API key: 401/403 answers in a row (and a 401/403 to
 * the key in use has its file read again, key.c). */
static void count_auth(cube_call *k)
{
  cube_key_answer(k->c, k->keys, k->status);
  if(k->status == 401 || k->status == 403) {
    if(k->c->auth_failures < UINT_MAX)
      k->c->auth_failures++;
    k->c->auth_status = k->status;
  }
  else if(k->status > 0)
    k->c->auth_failures = 0; /* Cube answered and took the key */
}

/* No whole answer came (cc != CURLE_OK): the error and its message. */
static void transfer_failed(cube_call *k, CURLcode cc)
{
  char snip[64];
  sc_err err;
  if(k->over_cap) {
    cap_text(k->cap, snip, sizeof(snip));
    cube_call_msg(k, SC_ERR_TOO_LARGE, "body over %s cap", snip);
    return;
  }
  if(cc == CURLE_OPERATION_TIMEDOUT) {
    cube_call_msg(k, SC_ERR_TIMEOUT, "timed out after %ld ms (%s)",
                  k->timeout_ms, k->curl_err[0] ? k->curl_err
                                                : curl_easy_strerror(cc));
    return;
  }
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
  cube_call_msg(k, err, "curl error %d: %s", (int)cc,
                k->curl_err[0] ? k->curl_err : curl_easy_strerror(cc));
}

/* A whole answer of the call's operation. true: the call goes on. */
static bool on_answer(cube_call *k)
{
  int body_code = 0;
  if(k->status < 200 || k->status > 299) {
    char m[128];
    cube_parse_error_body(dynbuf_ptr(&k->resp), dynbuf_len(&k->resp),
                          &body_code, m, sizeof(m));
  }
  switch(k->op) {
  case CUBE_OP_LIST:
  case CUBE_OP_LIST_PAGE:
    return on_list_page(k, body_code);
  case CUBE_OP_PROBE:
    return on_probe(k, body_code);
  case CUBE_OP_GET:
    on_get(k, body_code);
    break;
  case CUBE_OP_CREATE:
    on_create(k, body_code);
    break;
  case CUBE_OP_PAUSE:
    on_pause(k, body_code);
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
    on_delete(k, body_code);
    break;
  case CUBE_OP_RESERVE: /* never sent: completed by cube_pump */
    break;
  }
  return false;
}

/* --- the loop (curlev: curl multi on libevent) --- */

/* A transfer ended (its handle is out of the multi): decide the outcome
 * or the next request. */
void cube_on_transfer(CURL *e, CURLcode cc, void *ud)
{
  cube_client *c = ud;
  cube_call *k = NULL;
  long sent = 0;
  curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&k);
  c->inflight--;

  curl_easy_getinfo(k->easy, CURLINFO_RESPONSE_CODE, &k->status);
  curl_easy_getinfo(k->easy, CURLINFO_REQUEST_SIZE, &sent);
  /* the request reached the wire but no whole answer came back */
  k->r.maybe_done = cc != CURLE_OK && sent > 0;
  curl_easy_cleanup(k->easy);
  k->easy = NULL;
  k->r.http_status = k->status;
  k->r.retry_after_ms = cube_retry_after_ms(k);
  count_auth(k);
  if(cube_list_retry(k, cc))
    return;
  if(!k->date_taken) { /* the first response's Date (first page) */
    k->r.cube_now = k->date;
    k->date_taken = true;
  }
  if(cc != CURLE_OK)
    transfer_failed(k, cc);
  else if(on_answer(k))
    return;
  cube_call_complete(k);
}
