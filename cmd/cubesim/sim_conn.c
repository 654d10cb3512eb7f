/* sim_conn.c - request framing in front of evhttp (see sim_conn.h). */
#include "cmd/cubesim/sim_conn.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <event2/buffer.h>

#define LINE_MAX_CHUNK 1024    /* a chunk-size line */
#define TRAILER_MAX 8192       /* all trailer lines of one request */

enum {
  ST_HEAD,     /* reading a request head */
  ST_BODY,     /* passing a Content-Length body through */
  ST_CSIZE,    /* chunked: a chunk-size line */
  ST_CDATA,    /* chunked: chunk data */
  ST_CCRLF,    /* chunked: the CRLF after chunk data */
  ST_TRAILER,  /* chunked: trailer lines up to the blank line */
  ST_DEAD      /* an error request went out: swallow the rest */
};

typedef struct conn {
  const sim_conn_limits *lim;
  struct bufferevent *bev;    /* the filter evhttp owns */
  struct bufferevent *under;  /* the socket */
  struct event *wev;          /* the socket is writable again */
  struct event *fev;          /* evhttp queued output: write it */
  int st;
  int werr;                   /* a write failed: the connection is dead */
  int kicking;                /* in kick(): conn_out may write */
  uint64_t remain;            /* ST_BODY, ST_CDATA: bytes left */
  uint64_t total;             /* chunked: body bytes declared so far */
  size_t trailer;             /* chunked: trailer bytes so far */
  struct evbuffer *head;      /* chunked: the head to hand on, without
                               * Transfer-Encoding, Content-Length,
                               * Connection and the blank line */
  struct evbuffer *conn_hdrs; /* chunked: the client's Connection lines */
  struct evbuffer *body;      /* chunked: the decoded body */
} conn;

/* ---- errors become requests the handler answers in JSON ---- */

/* The head itself is bad: answer it, then close. */
static void head_error(conn *c, struct evbuffer *dst, int status,
                       const char *msg)
{
  evbuffer_add_printf(dst, "GET /_sim/error HTTP/1.1\r\nHost: cubesim\r\n"
                      SIM_CONN_ERROR_HEADER ": %d head %s\r\n"
                      "Connection: close\r\nContent-Length: 0\r\n\r\n",
                      status, msg);
  c->st = ST_DEAD;
}

/* A chunked body is bad: the request (held in c->head) gets the error;
 * keep the connection only when the body's end was found. */
static void body_error(conn *c, struct evbuffer *dst, int status,
                       const char *msg, int keep)
{
  evbuffer_add_buffer(dst, c->head);
  if(keep)
    evbuffer_add_buffer(dst, c->conn_hdrs);
  else {
    evbuffer_drain(c->conn_hdrs, evbuffer_get_length(c->conn_hdrs));
    evbuffer_add_printf(dst, "Connection: close\r\n");
  }
  evbuffer_add_printf(dst, SIM_CONN_ERROR_HEADER ": %d body %s\r\n"
                      "Content-Length: 0\r\n\r\n", status, msg);
  evbuffer_drain(c->body, evbuffer_get_length(c->body));
  c->st = keep ? ST_HEAD : ST_DEAD;
}

/* ---- head parsing ---- */

static int is_tchar(unsigned char ch)
{
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* header name of line is `name` (case-insensitive)? */
static int is_name(const char *line, size_t len, const char *name)
{
  size_t n = strlen(name);
  return len > n && line[n] == ':' && !strncasecmp(line, name, n);
}

/* the next line of p[pos..end): its length without CR LF; *next after it */
static size_t next_line(const char *p, size_t pos, size_t end, size_t *next)
{
  const char *e = memchr(p + pos, '\n', end - pos);
  size_t len = e ? (size_t)(e - (p + pos)) : end - pos;
  *next = pos + len + (e ? 1 : 0);
  if(len && p[pos + len - 1] == '\r')
    len--;
  return len;
}

/* value of a header line, trimmed */
static void header_value(const char *line, size_t len, const char **v,
                         size_t *vlen)
{
  const char *s = memchr(line, ':', len) + 1, *e = line + len;
  while(s < e && (*s == ' ' || *s == '\t'))
    s++;
  while(e > s && (e[-1] == ' ' || e[-1] == '\t'))
    e--;
  *v = s;
  *vlen = (size_t)(e - s);
}

/* Content-Length "N" or "N, N, ...": -1 when malformed or unequal */
static int parse_cl(const char *v, size_t n, uint64_t *out, int *seen)
{
  size_t i = 0;
  while(i < n) {
    uint64_t x = 0;
    size_t digits = 0;
    while(i < n && v[i] >= '0' && v[i] <= '9') {
      if(++digits > 18)
        return -1;
      x = x * 10 + (uint64_t)(v[i] - '0');
      i++;
    }
    if(!digits || (*seen && x != *out))
      return -1;
    *out = x;
    *seen = 1;
    while(i < n && (v[i] == ' ' || v[i] == '\t'))
      i++;
    if(i < n) {
      if(v[i] != ',')
        return -1;
      i++;
      while(i < n && (v[i] == ' ' || v[i] == '\t'))
        i++;
    }
  }
  return *seen ? 0 : -1;
}

/* is the last coding of a Transfer-Encoding value "chunked"? */
static int te_chunked(const char *v, size_t n)
{
  const char *s = v + n;
  size_t len;
  while(s > v && s[-1] != ',')
    s--;
  while(*s == ' ' || *s == '\t')
    s++;
  len = (size_t)(v + n - s);
  return len == 7 && !strncasecmp(s, "chunked", 7);
}

static const char *const methods[] = {
  "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE",
  "CONNECT"
};

/* check the request line; 0 ok, else an HTTP status and *why */
static int check_request_line(const char *p, size_t len, const char **why)
{
  size_t m = 0, t, i;
  int known = 0;
  while(m < len && is_tchar((unsigned char)p[m]))
    m++;
  if(!m || m > 32 || m >= len || p[m] != ' ') {
    *why = "malformed request line (want METHOD TARGET HTTP/1.1)";
    return 400;
  }
  t = m + 1;
  while(t < len && (unsigned char)p[t] > 0x20 && p[t] != 0x7f)
    t++;
  if(t == m + 1 || t >= len || p[t] != ' ') {
    *why = "malformed request line (want METHOD TARGET HTTP/1.1)";
    return 400;
  }
  t++;
  if(len - t != 8 || memcmp(p + t, "HTTP/", 5) || p[t + 5] < '0' ||
     p[t + 5] > '9' || p[t + 6] != '.' || p[t + 7] < '0' || p[t + 7] > '9') {
    *why = "malformed request line (want METHOD TARGET HTTP/1.1)";
    return 400;
  }
  if(p[t + 5] != '1') {
    *why = "HTTP version not supported (want HTTP/1.0 or HTTP/1.1)";
    return 505;
  }
  for(i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
    if(strlen(methods[i]) == m && !memcmp(p, methods[i], m))
      known = 1;
  if(!known) {
    *why = "method not implemented";
    return 501;
  }
  return 0;
}

enum { KEEP, DROP, CONN };

/* what to do with a header line when handing the head on */
static int line_fate(const char *l, size_t n, int chunked)
{
  if(is_name(l, n, SIM_CONN_ERROR_HEADER))
    return DROP;
  if(!chunked)
    return KEEP;
  if(is_name(l, n, "Transfer-Encoding") || is_name(l, n, "Content-Length"))
    return DROP;
  if(is_name(l, n, "Connection"))
    return CONN;
  return KEEP;
}

/* copy the head p[0..end) to out (and Connection lines to conn_out),
 * lines normalised to CRLF, without the blank line */
static void copy_head(const char *p, size_t end, int chunked,
                      struct evbuffer *out, struct evbuffer *conn_out)
{
  size_t pos = 0, next, len;
  int first = 1;
  while(pos < end) {
    len = next_line(p, pos, end, &next);
    if(!len)
      break;
    if(first) {
      evbuffer_add(out, p + pos, len);
      evbuffer_add(out, "\r\n", 2);
      first = 0;
    }
    else {
      int fate = line_fate(p + pos, len, chunked);
      struct evbuffer *to = fate == KEEP ? out : fate == CONN ? conn_out :
                            NULL;
      if(to) {
        evbuffer_add(to, p + pos, len);
        evbuffer_add(to, "\r\n", 2);
      }
    }
    pos = next;
  }
}

/* a whole head p[0..end) is in src: check it and hand it on */
static void take_head(conn *c, struct evbuffer *src, struct evbuffer *dst,
                      const char *p, size_t end)
{
  size_t pos, next, len, lineno = 1;
  const char *why = NULL;
  char msg[160];
  int status, te_seen = 0, chunked = 0, cl_seen = 0, strip = 0;
  uint64_t cl = 0;

  len = next_line(p, 0, end, &pos);
  status = check_request_line(p, len, &why);
  if(status) {
    head_error(c, dst, status, why);
    evbuffer_drain(src, end);
    return;
  }
  for(;;) {
    const char *l = p + pos, *v;
    size_t i, vlen;
    len = next_line(p, pos, end, &next);
    if(!len)
      break;
    lineno++;
    pos = next;
    if(l[0] == ' ' || l[0] == '\t') {
      snprintf(msg, sizeof(msg), "obsolete line folding in header line %zu",
               lineno);
      status = 400;
      break;
    }
    for(i = 0; i < len && is_tchar((unsigned char)l[i]); i++)
      ;
    if(!i || i == len || l[i] != ':') {
      snprintf(msg, sizeof(msg), "malformed header line %zu (want Name:"
               " value)", lineno);
      status = 400;
      break;
    }
    for(; i < len; i++)
      if(((unsigned char)l[i] < 0x20 && l[i] != '\t') || l[i] == 0x7f)
        break;
    if(i < len) {
      snprintf(msg, sizeof(msg), "control character in header line %zu",
               lineno);
      status = 400;
      break;
    }
    header_value(l, len, &v, &vlen);
    if(is_name(l, len, "Transfer-Encoding")) {
      te_seen = 1;
      chunked = te_chunked(v, vlen);
    }
    else if(is_name(l, len, "Content-Length")) {
      if(parse_cl(v, vlen, &cl, &cl_seen)) {
        snprintf(msg, sizeof(msg), "bad Content-Length in header line %zu",
                 lineno);
        status = 400;
        break;
      }
    }
    else if(is_name(l, len, SIM_CONN_ERROR_HEADER))
      strip = 1;
  }
  if(!status && te_seen && !chunked) {
    snprintf(msg, sizeof(msg), "Transfer-Encoding other than chunked is not"
             " supported");
    status = 501;
  }
  if(!status && !chunked && cl > c->lim->hard_cap) {
    snprintf(msg, sizeof(msg), "request body of %" PRIu64 " bytes is over"
             " the %zu byte limit", cl, c->lim->body_cap);
    status = 413;
  }
  if(status) {
    head_error(c, dst, status, msg);
    evbuffer_drain(src, end);
    return;
  }
  if(chunked) {
    /* Transfer-Encoding wins over Content-Length (RFC 7230 3.3.3) */
    copy_head(p, end, 1, c->head, c->conn_hdrs);
    evbuffer_drain(src, end);
    c->total = 0;
    c->st = ST_CSIZE;
    return;
  }
  if(strip) {
    copy_head(p, end, 0, dst, NULL);
    evbuffer_add(dst, "\r\n", 2);
    evbuffer_drain(src, end);
  }
  else
    evbuffer_remove_buffer(src, dst, end);
  c->remain = cl;
  c->st = cl ? ST_BODY : ST_HEAD;
}

/* ---- the state machine; each returns 1 when it made progress ---- */

static int step_head(conn *c, struct evbuffer *src, struct evbuffer *dst)
{
  size_t len = evbuffer_get_length(src), n, i, end = 0;
  const char *p;
  n = len < SIM_CONN_HEAD_MAX + 4 ? len : SIM_CONN_HEAD_MAX + 4;
  p = (const char *)evbuffer_pullup(src, (ev_ssize_t)n);
  if(!p)
    return 0;
  for(i = 0; i < n && (p[i] == '\r' || p[i] == '\n'); i++)
    ;
  if(i) {                      /* empty lines before a request: skipped */
    evbuffer_drain(src, i);
    return 1;
  }
  for(i = 0; i + 1 < n; i++) {
    if(p[i] != '\n')
      continue;
    if(p[i + 1] == '\n') {
      end = i + 2;
      break;
    }
    if(i + 2 < n && p[i + 1] == '\r' && p[i + 2] == '\n') {
      end = i + 3;
      break;
    }
  }
  if(!end || end > SIM_CONN_HEAD_MAX) {
    if(!end && len <= SIM_CONN_HEAD_MAX)
      return 0;
    head_error(c, dst, 431, "request head over 65536 bytes");
    evbuffer_drain(src, len);
    return 1;
  }
  take_head(c, src, dst, p, end);
  return 1;
}

static void finish_chunked(conn *c, struct evbuffer *dst)
{
  char msg[128];
  if(c->total > c->lim->body_cap) {
    snprintf(msg, sizeof(msg), "request body of %" PRIu64 " bytes is over"
             " the %zu byte limit", c->total, c->lim->body_cap);
    body_error(c, dst, 413, msg, 1);
    return;
  }
  evbuffer_add_buffer(dst, c->head);
  evbuffer_add_buffer(dst, c->conn_hdrs);
  evbuffer_add_printf(dst, "Content-Length: %zu\r\n\r\n",
                      evbuffer_get_length(c->body));
  evbuffer_add_buffer(dst, c->body);
  c->st = ST_HEAD;
}

/* one line (without EOL) of at most max bytes into buf; 0 none yet,
 * -1 too long, else 1 */
static int take_line(struct evbuffer *src, char *buf, size_t max,
                     size_t *len)
{
  size_t eol = 0;
  struct evbuffer_ptr e = evbuffer_search_eol(src, NULL, &eol,
                                              EVBUFFER_EOL_CRLF);
  if(e.pos < 0)
    return evbuffer_get_length(src) > max ? -1 : 0;
  if((size_t)e.pos > max)
    return -1;
  *len = (size_t)e.pos;
  if(buf)
    evbuffer_remove(src, buf, *len);
  else
    evbuffer_drain(src, *len);
  evbuffer_drain(src, eol);
  return 1;
}

static int step_csize(conn *c, struct evbuffer *src, struct evbuffer *dst)
{
  char line[LINE_MAX_CHUNK + 1], msg[128];
  size_t len = 0, i = 0;
  uint64_t size = 0;
  int r = take_line(src, line, LINE_MAX_CHUNK, &len);
  if(!r)
    return 0;
  if(r < 0) {
    body_error(c, dst, 400, "chunk size line over 1024 bytes", 0);
    return 1;
  }
  for(; i < len && i < 16; i++) {
    int d = line[i] >= '0' && line[i] <= '9' ? line[i] - '0' :
            line[i] >= 'a' && line[i] <= 'f' ? line[i] - 'a' + 10 :
            line[i] >= 'A' && line[i] <= 'F' ? line[i] - 'A' + 10 : -1;
    if(d < 0)
      break;
    size = size * 16 + (uint64_t)d;
  }
  if(!i || i == 16 || (i < len && line[i] != ';' && line[i] != ' ' &&
                       line[i] != '\t')) {
    body_error(c, dst, 400, "bad chunk size line in the chunked body", 0);
    return 1;
  }
  if(!size) {
    c->trailer = 0;
    c->st = ST_TRAILER;
    return 1;
  }
  if(size > c->lim->hard_cap || c->total + size > c->lim->hard_cap) {
    snprintf(msg, sizeof(msg), "chunked request body over %zu bytes",
             c->lim->hard_cap);
    body_error(c, dst, 413, msg, 0);
    return 1;
  }
  c->total += size;
  if(c->total > c->lim->body_cap)  /* too big: read on, keep nothing */
    evbuffer_drain(c->body, evbuffer_get_length(c->body));
  c->remain = size;
  c->st = ST_CDATA;
  return 1;
}

static int step(conn *c, struct evbuffer *src, struct evbuffer *dst)
{
  size_t len = evbuffer_get_length(src), n, tl = 0;
  const unsigned char *p;
  int r;
  switch(c->st) {
  case ST_HEAD:
    return step_head(c, src, dst);
  case ST_BODY:
    n = c->remain < len ? (size_t)c->remain : len;
    evbuffer_remove_buffer(src, dst, n);
    c->remain -= n;
    if(!c->remain)
      c->st = ST_HEAD;
    return 1;
  case ST_CSIZE:
    return step_csize(c, src, dst);
  case ST_CDATA:
    n = c->remain < len ? (size_t)c->remain : len;
    if(c->total > c->lim->body_cap)
      evbuffer_drain(src, n);
    else
      evbuffer_remove_buffer(src, c->body, n);
    c->remain -= n;
    if(!c->remain)
      c->st = ST_CCRLF;
    return 1;
  case ST_CCRLF:
    p = evbuffer_pullup(src, len < 2 ? (ev_ssize_t)len : 2);
    if(p[0] == '\n')
      n = 1;
    else if(len < 2)
      return 0;
    else if(p[0] == '\r' && p[1] == '\n')
      n = 2;
    else {
      body_error(c, dst, 400, "chunk data not followed by CRLF", 0);
      return 1;
    }
    evbuffer_drain(src, n);
    c->st = ST_CSIZE;
    return 1;
  case ST_TRAILER:
    r = take_line(src, NULL, TRAILER_MAX, &tl);
    if(!r)
      return 0;
    c->trailer += tl;
    if(r < 0 || c->trailer > TRAILER_MAX) {
      body_error(c, dst, 400, "chunked trailer over 8192 bytes", 0);
      return 1;
    }
    if(!tl)
      finish_chunked(c, dst);
    return 1;
  default:
    evbuffer_drain(src, len);
    return 0;
  }
}

static enum bufferevent_filter_result
conn_in(struct evbuffer *src, struct evbuffer *dst, ev_ssize_t lim,
        enum bufferevent_flush_mode mode, void *arg)
{
  conn *c = arg;
  size_t out0 = evbuffer_get_length(dst);
  (void)lim;
  (void)mode;
  while(evbuffer_get_length(src) && step(c, src, dst))
    ;
  return evbuffer_get_length(dst) > out0 ? BEV_OK : BEV_NEED_MORE;
}

/* ---- output: straight to the socket ---- */

/* Write evhttp's queued output (conn_out) and let evhttp know. Runs from
 * the event loop, after evhttp has enabled writing (it queues a reply
 * first and enables EV_WRITE after, which a filter does not notice). A
 * bufferevent that evhttp freed has no callbacks left: leave it be. */
static void kick(evutil_socket_t fd, short what, void *arg)
{
  conn *c = arg;
  bufferevent_data_cb rcb, wcb;
  bufferevent_event_cb ecb;
  void *cbarg;
  (void)fd;
  (void)what;
  bufferevent_getcb(c->bev, &rcb, &wcb, &ecb, &cbarg);
  if(!ecb)
    return;
  c->kicking = 1;
  bufferevent_flush(c->bev, EV_WRITE, BEV_FLUSH);
  c->kicking = 0;
}

static void on_out_added(struct evbuffer *b, const struct evbuffer_cb_info *i,
                         void *arg)
{
  conn *c = arg;
  (void)b;
  if(i->n_added)
    event_active(c->fev, EV_WRITE, 1);
}

/* Write what evhttp queued to the socket now; keep what the kernel did
 * not take (and wait for writability) instead of handing it to the
 * socket bufferevent, so that an empty output buffer, which evhttp takes
 * as "sent" and may close the connection on, really means sent. */
static enum bufferevent_filter_result
conn_out(struct evbuffer *src, struct evbuffer *dst, ev_ssize_t lim,
         enum bufferevent_flush_mode mode, void *arg)
{
  conn *c = arg;
  size_t before = evbuffer_get_length(src);
  evutil_socket_t fd = bufferevent_getfd(c->under);
  (void)dst;
  (void)lim;
  (void)mode;
  if(!before || !c->kicking)  /* only from the loop: see kick() */
    return BEV_NEED_MORE;
  if(c->werr || fd < 0) {
    evbuffer_drain(src, before);
    return BEV_ERROR;
  }
  while(evbuffer_get_length(src)) {
    int n = evbuffer_write(src, fd);
    if(n > 0)
      continue;
    if(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
      break;
    /* reset by the peer (or by the reset fault): report it to evhttp */
    c->werr = 1;
    evbuffer_drain(src, evbuffer_get_length(src));
    bufferevent_trigger_event(c->bev, BEV_EVENT_ERROR | BEV_EVENT_WRITING,
                              BEV_TRIG_DEFER_CALLBACKS);
    return BEV_ERROR;
  }
  if(evbuffer_get_length(src)) {
    if(!c->wev)
      c->wev = event_new(bufferevent_get_base(c->under), fd, EV_WRITE,
                         kick, c);
    if(c->wev)
      event_add(c->wev, NULL);
  }
  return evbuffer_get_length(src) < before ? BEV_OK : BEV_NEED_MORE;
}

/* ---- lifetime ---- */

static void conn_free(void *arg)
{
  conn *c = arg;
  if(!c)
    return;
  if(c->wev)
    event_free(c->wev);
  if(c->fev)
    event_free(c->fev);
  if(c->head)
    evbuffer_free(c->head);
  if(c->conn_hdrs)
    evbuffer_free(c->conn_hdrs);
  if(c->body)
    evbuffer_free(c->body);
  free(c);
}

struct bufferevent *sim_conn_bev(struct event_base *base, void *arg)
{
  conn *c = calloc(1, sizeof(*c));
  if(!c)
    return NULL;
  c->lim = arg;
  c->head = evbuffer_new();
  c->conn_hdrs = evbuffer_new();
  c->body = evbuffer_new();
  c->fev = event_new(base, -1, 0, kick, c);
  c->under = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
  if(c->head && c->conn_hdrs && c->body && c->fev && c->under)
    c->bev = bufferevent_filter_new(c->under, conn_in, conn_out,
                                    BEV_OPT_CLOSE_ON_FREE, conn_free, c);
  if(!c->bev) {
    if(c->under)
      bufferevent_free(c->under);
    conn_free(c);
    return NULL;
  }
  if(!evbuffer_add_cb(bufferevent_get_output(c->bev), on_out_added, c)) {
    bufferevent_free(c->bev); /* frees c too */
    return NULL;
  }
  return c->bev;
}
