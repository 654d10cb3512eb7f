/* http_stream.c - the streaming GET of kube_http (http.h, "streaming
 * GET"): a long request whose 2xx body is handed over line by line, on a
 * multi handle of the client's own for streams, with the request setup
 * and the result of the calls (http_int.h). */
#include "controller/kubeclient/http_int.h"
#include "lib/curlev.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <event2/event.h>
#include "lib/dynbuf.h"

struct kube_http_stream {
  kube_http *h;
  CURL *easy;
  struct curl_slist *hdrs;
  char *path;
  kube_auth auth;          /* the credential of the running request */
  kube_http_stream_cb cb;
  void *ud;
  long connect_ms, idle_s;
  size_t line_max;
  dynbuf line;             /* bytes of the body not yet a whole line */
  size_t cur_line;         /* of them, the bytes after the last newline */
  bool skipping;           /* dropping a line over line_max */
  size_t oversized;        /* lines dropped so, not reported yet */
  dynbuf errbody;          /* a non-2xx body (capped), for its Status */
  long status;             /* 0 until the first byte of the body */
  bool open_told, reauthed;
  bool ended;              /* the transfer is over: end() is due */
  bool gone;               /* cancelled or ended: no callback any more */
  CURLcode cc;
  char msg[SC_ERRBUF_SIZE + 600];
  char ebuf[CURL_ERROR_SIZE];
  kube_http_stream *prev, *next;
};

static void stream_unlink_free(kube_http_stream *s)
{
  kube_http *h = s->h;
  if(s->prev)
    s->prev->next = s->next;
  else
    h->streams = s->next;
  if(s->next)
    s->next->prev = s->prev;
  if(s->easy) {
    curlev_remove(h->sev, s->easy);
    curl_easy_cleanup(s->easy);
  }
  curl_slist_free_all(s->hdrs);
  kube_auth_clear(&s->auth);
  dynbuf_free(&s->line);
  dynbuf_free(&s->errbody);
  free(s->path);
  free(s);
}

/* The body as it comes (inside libcurl: nothing of the owner runs
 * here). A 2xx body is cut into lines; a line longer than line_max is
 * dropped as it comes, to its end, and counted. */
static size_t on_stream_body(char *p, size_t sz, size_t n, void *ud)
{
  kube_http_stream *s = ud;
  size_t len = sz * n, off = 0;
  if(!s->status)
    curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->status);
  if(s->status < 200 || s->status > 299) {
    (void)dynbuf_add(&s->errbody, p, len); /* past the cap: cut */
    return len;
  }
  while(off < len) {
    const char *nl = memchr(p + off, '\n', len - off);
    size_t seg = nl ? (size_t)(nl - (p + off)) + 1 : len - off;
    if(s->skipping) {
      s->skipping = !nl;
      off += seg;
      continue;
    }
    if(s->cur_line + seg > s->line_max + (nl ? 1 : 0)) {
      /* this line is over the cap: forget what we have of it */
      s->line.len -= s->cur_line;
      if(s->line.mem)
        s->line.mem[s->line.len] = '\0';
      s->cur_line = 0;
      s->oversized++;
      s->skipping = !nl;
      off += seg;
      continue;
    }
    if(dynbuf_add(&s->line, p + off, seg))
      return 0; /* more whole lines than the buffer holds: fail */
    s->cur_line = nl ? 0 : s->cur_line + seg;
    off += seg;
  }
  return len;
}

static sc_err stream_begin(kube_http_stream *s, sc_errbuf *eb)
{
  kube_http *h = s->h;
  sc_err err;
  kube_auth_clear(&s->auth);
  err = kube_conn_auth(&h->conn, h->base, &s->auth, eb);
  if(err)
    return err;
  curl_slist_free_all(s->hdrs);
  s->hdrs = khttp_req_headers(NULL, &s->auth);
  if(!s->hdrs)
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  err = khttp_easy_setup(h, s->easy, s->path, s->hdrs, &s->auth, s->ebuf, s,
                   s->connect_ms, eb);
  if(err)
    return err;
  dynbuf_reset(&s->line);
  dynbuf_reset(&s->errbody);
  s->cur_line = 0;
  s->skipping = false;
  s->status = 0;
  curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, on_stream_body);
  curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
  if(s->idle_s > 0) {
    curl_easy_setopt(s->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(s->easy, CURLOPT_LOW_SPEED_TIME, s->idle_s);
  }
  if(curlev_add(h->sev, s->easy))
    return sc_errf(eb, SC_ERR_INTERNAL, "kube: cannot start GET %s",
                   s->path);
  return SC_OK;
}

/* Hand the owner what came: open, the whole lines, the count of the
 * dropped ones, and the end. From the loop only (after a batch of
 * libcurl's work); stops as soon as the stream is gone. */
static void stream_deliver(kube_http_stream *s)
{
  size_t off = 0, len;
  char *buf, *nl;
  if(!s->open_told && s->status >= 200 && s->status <= 299) {
    s->open_told = true;
    if(s->cb.open)
      s->cb.open(s->status, s->ud);
  }
  len = dynbuf_len(&s->line);
  if(!s->gone && len && (buf = dynbuf_take(&s->line)) != NULL) {
    while(!s->gone && (nl = memchr(buf + off, '\n', len - off))) {
      *nl = '\0';
      if(nl > buf + off)
        s->cb.line(buf + off, (size_t)(nl - (buf + off)), s->ud);
      off = (size_t)(nl - buf) + 1;
    }
    if(off < len && !s->gone)
      (void)dynbuf_add(&s->line, buf + off, len - off);
    free(buf);
    s->cur_line = dynbuf_len(&s->line);
  }
  if(!s->gone && s->oversized) {
    size_t n = s->oversized;
    s->oversized = 0;
    if(s->cb.oversized)
      s->cb.oversized(n, s->ud);
  }
  if(!s->gone && s->ended) {
    kube_http_result res;
    curl_off_t ra = 0;
    memset(&res, 0, sizeof(res));
    res.attempts = 1;
    if(s->msg[0]) { /* a 401 and no new credential */
      res.err = SC_ERR_UNAVAILABLE;
      res.message = s->msg;
      res.raw = "";
    }
    else {
      (void)curl_easy_getinfo(s->easy, CURLINFO_RETRY_AFTER, &ra);
      res.retry_after_s = (long)ra;
      khttp_result_fill(s->h, "GET", s->path, s->cc, s->ebuf, s->status,
                  &s->errbody, false, "", &res, s->msg, sizeof(s->msg));
    }
    s->gone = true;
    s->h->n_streams--;
    s->cb.end(&res, s->ud);
    json_object_put(res.body);
  }
}

/* a stream's transfer ended (taken out of the multi) */
static void on_stream_done(CURL *e, CURLcode cc, void *ud)
{
  kube_http_stream *s = NULL;
  (void)ud;
  curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&s);
  if(s->gone)
    return;
  if(!s->status)
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &s->status);
  s->cc = cc;
  if(cc == CURLE_OK && s->status == 401 && !s->reauthed &&
     kube_conn_unauthorized(&s->h->conn, &s->auth)) {
    /* as a call: once more with a new credential */
    sc_errbuf eb;
    eb.msg[0] = '\0';
    s->reauthed = true;
    if(!stream_begin(s, &eb))
      return;
    snprintf(s->msg, sizeof(s->msg), "kube GET %s%s: HTTP 401, and no new "
             "credential: %s", s->h->conn.server, s->path, eb.msg);
  }
  s->ended = true;
}

/* after each batch of libcurl's work on the streams */
static void on_stream_batch(void *ud)
{
  kube_http *h = ud;
  kube_http_stream *s, *next;
  h->delivering++;
  for(s = h->streams; s; s = s->next)
    if(!s->gone)
      stream_deliver(s);
  h->delivering--;
  if(h->delivering)
    return;
  for(s = h->streams; s; s = next) {
    next = s->next;
    if(s->gone)
      stream_unlink_free(s);
  }
}

sc_err kube_http_stream_start(kube_http *h, const char *path,
                              const kube_http_stream_opts *opts,
                              const kube_http_stream_cb *cb, void *ud,
                              kube_http_stream **out, sc_errbuf *eb)
{
  kube_http_stream *s;
  sc_err err;
  *out = NULL;
  if(!cb || !cb->line || !cb->end)
    return sc_errf(eb, SC_ERR_INVALID, "kube: a stream needs line and end "
                   "callbacks");
  if(!h->sev) {
    h->sev = curlev_new(h->base, on_stream_done, on_stream_batch, h, eb);
    if(!h->sev)
      return SC_ERR_NOMEM;
  }
  s = calloc(1, sizeof(*s));
  if(!s)
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  s->h = h;
  s->cb = *cb;
  s->ud = ud;
  s->line_max = opts && opts->line_max ? opts->line_max : KUBE_HTTP_LINE_MAX;
  s->connect_ms = opts && opts->connect_ms > 0 ? opts->connect_ms : 5000;
  s->idle_s = opts ? opts->idle_s : 0;
  /* whole lines wait here until the batch ends: room for two */
  dynbuf_init(&s->line, 2 * s->line_max + 2);
  dynbuf_init(&s->errbody, KUBE_HTTP_STREAM_ERRBODY_MAX);
  s->path = strdup(path);
  s->easy = curl_easy_init();
  s->next = h->streams;
  if(h->streams)
    h->streams->prev = s;
  h->streams = s;
  if(!s->path || !s->easy) {
    stream_unlink_free(s);
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  err = stream_begin(s, eb);
  if(err) {
    stream_unlink_free(s);
    return err;
  }
  h->n_streams++;
  *out = s;
  return SC_OK;
}

void kube_http_stream_cancel(kube_http_stream *s)
{
  if(!s)
    return;
  if(!s->gone)
    s->h->n_streams--;
  s->gone = true;
  if(!s->h->delivering)
    stream_unlink_free(s);
}

int kube_http_streams(const kube_http *h)
{
  return h ? h->n_streams : 0;
}

void khttp_streams_free(kube_http *h)
{
  while(h->streams)
    stream_unlink_free(h->streams);
  curlev_free(h->sev);
  h->sev = NULL;
}
