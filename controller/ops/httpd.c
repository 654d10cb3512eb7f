#define _GNU_SOURCE /* accept4 */
/* httpd.c - /metrics, /healthz, /readyz: a guarded HTTP/1.x responder on
 * the controller's loop (see httpd.h for the rules it keeps).
 *
 * Not libevent's evhttp: in libevent 2.1 evhttp reads a whole request body
 * before the request callback can refuse it, has no cap on connections
 * and no hook when an idle one closes, and its listener retries accept()
 * at once on EMFILE (spinning, with a warning line each time). Here the
 * listening socket, the accept loop and each connection are ours; a
 * connection is a bufferevent and a deadline timer, and never more than
 * HTTPD_HEAD_MAX bytes of what the peer sends are held. */
#include "controller/ops/httpd.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/util.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/sctime.h"

#define ACCEPT_BATCH 32 /* accepts per wake-up: the loop has other work */
#define METRICS_BODY_MAX (64u * 1024 * 1024)

typedef enum conn_state {
  C_HEAD,   /* reading the request head */
  C_WRITE,  /* writing the answer */
  C_LINGER  /* answer sent, write side shut: discarding what still comes */
} conn_state;

typedef struct conn conn;
struct conn {
  httpd *h;
  struct bufferevent *bev;
  struct event *deadline;
  conn *prev, *next; /* in accept order: the oldest first */
  conn_state state;
  size_t scanned;    /* head bytes searched for its end so far */
  size_t drained;    /* bytes discarded while lingering */
  bool head_only;    /* HEAD: headers without the body */
};

/* one kind of log line, at most once per HTTPD_LOG_INTERVAL_MS */
typedef struct limiter {
  int64_t next_ms;
  unsigned long suppressed;
} limiter;

struct httpd {
  struct event_base *base;
  metrics *m;
  httpd_hooks hooks;
  logger *lg;
  evutil_socket_t fd;       /* the listening socket */
  struct event *lev;        /* readable: connections to accept */
  struct event *resume;     /* end of an accept back-off */
  bool listening;           /* lev is added */
  bool backing_off;         /* accept failed: resume pending */
  bool full;                /* at the cap with no idle connection */
  int max_conns, n_conns, timeout_ms;
  conn *first, *last;
  limiter accept_log, cap_log;
};

static void conn_free(conn *c);

static bool limiter_pass(limiter *l, unsigned long *suppressed)
{
  int64_t now = sctime_mono_ms();
  if(l->next_ms && now < l->next_ms) {
    l->suppressed++;
    return false;
  }
  *suppressed = l->suppressed;
  l->suppressed = 0;
  l->next_ms = now + HTTPD_LOG_INTERVAL_MS;
  return true;
}

static void listen_on(httpd *h)
{
  if(!h->listening && !h->backing_off && !h->full) {
    event_add(h->lev, NULL);
    h->listening = true;
  }
}

static void listen_off(httpd *h)
{
  if(h->listening) {
    event_del(h->lev);
    h->listening = false;
  }
}

static void dropped(httpd *h, const char *reason)
{
  char l[48];
  snprintf(l, sizeof(l), "reason=\"%s\"", reason);
  metrics_add(h->m, "session_controller_http_connections_dropped_total", l,
              1);
}

static const char *reason_phrase(int code)
{
  switch(code) {
  case 200: return "OK";
  case 400: return "Bad Request";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 431: return "Request Header Fields Too Large";
  case 500: return "Internal Server Error";
  case 503: return "Service Unavailable";
  case 505: return "HTTP Version Not Supported";
  }
  return "Error";
}

/* Queue the whole answer, stop reading, and close once it is written. */
static void respond(conn *c, int code, const char *ctype, const char *body,
                    size_t len)
{
  char head[512], l[32];
  int n = snprintf(head, sizeof(head),
                   "HTTP/1.1 %d %s\r\n"
                   "Content-Type: %s\r\n"
                   "Content-Length: %zu\r\n"
                   "%s"
                   "Cache-Control: no-store\r\n"
                   "Connection: close\r\n\r\n",
                   code, reason_phrase(code), ctype, len,
                   code == 405 ? "Allow: GET, HEAD\r\n" : "");
  snprintf(l, sizeof(l), "code=\"%d\"", code);
  metrics_add(c->h->m, "session_controller_http_requests_total", l, 1);
  bufferevent_disable(c->bev, EV_READ);
  c->state = C_WRITE;
  if(n < 0 || (size_t)n >= sizeof(head) ||
     bufferevent_write(c->bev, head, (size_t)n) ||
     (!c->head_only && len && bufferevent_write(c->bev, body, len))) {
    conn_free(c);
    return;
  }
  bufferevent_enable(c->bev, EV_WRITE);
}

static void respond_text(conn *c, int code, const char *text)
{
  respond(c, code, "text/plain; charset=utf-8", text, strlen(text));
}

static void serve(conn *c, const char *path, size_t plen)
{
  httpd *h = c->h;
  if(plen == 8 && !memcmp(path, "/metrics", 8)) {
    dynbuf b;
    dynbuf_init(&b, METRICS_BODY_MAX);
    if(metrics_render(h->m, &b))
      respond_text(c, 500, "metrics too large\n");
    else
      respond(c, 200, "text/plain; version=0.0.4; charset=utf-8",
              dynbuf_ptr(&b), dynbuf_len(&b));
    dynbuf_free(&b);
  }
  else if(plen == 8 && !memcmp(path, "/healthz", 8)) {
    const char *why = NULL;
    char msg[768];
    bool ok = h->hooks.healthy ? h->hooks.healthy(h->hooks.ud, &why) : true;
    if(ok)
      respond_text(c, 200, "ok\n");
    else {
      snprintf(msg, sizeof(msg), "%s\n", why && *why ? why : "unhealthy");
      respond_text(c, 503, msg);
    }
  }
  else if(plen == 7 && !memcmp(path, "/readyz", 7)) {
    const char *why = NULL;
    char msg[768];
    bool ok = h->hooks.ready ? h->hooks.ready(h->hooks.ud, &why) : true;
    if(ok)
      respond_text(c, 200, "ok\n");
    else {
      snprintf(msg, sizeof(msg), "not ready: %s\n",
               why && *why ? why : "no full pass completed yet, or the "
                                   "store is unreachable");
      respond_text(c, 503, msg);
    }
  }
  else
    respond_text(c, 404, "not found\n");
}

static bool is_tchar(unsigned char ch)
{
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* The request line "METHOD SP TARGET SP HTTP/1.x" (line: without its
 * line end). Answers it; the headers are not looked at. */
static void handle_line(conn *c, const char *line, size_t n)
{
  const char *sp1 = memchr(line, ' ', n), *sp2, *t, *te, *v;
  size_t i, mlen, vlen;
  for(i = 0; i < n; i++)
    if((unsigned char)line[i] < 0x20 || line[i] == 0x7f) {
      respond_text(c, 400, "bad request line\n");
      return;
    }
  if(!sp1 || sp1 == line || sp1 - line > 32) {
    respond_text(c, 400, "bad request line\n");
    return;
  }
  mlen = (size_t)(sp1 - line);
  for(i = 0; i < mlen; i++)
    if(!is_tchar((unsigned char)line[i])) {
      respond_text(c, 400, "bad request line\n");
      return;
    }
  t = sp1 + 1;
  sp2 = memchr(t, ' ', n - (size_t)(t - line));
  if(!sp2 || sp2 == t) {
    respond_text(c, 400, "bad request line\n");
    return;
  }
  te = sp2;
  v = sp2 + 1;
  vlen = n - (size_t)(v - line);
  if(memchr(v, ' ', vlen) || vlen < 5 || memcmp(v, "HTTP/", 5)) {
    respond_text(c, 400, "bad request line\n");
    return;
  }
  if(vlen != 8 || (memcmp(v, "HTTP/1.1", 8) && memcmp(v, "HTTP/1.0", 8))) {
    respond_text(c, 505, "HTTP/1.0 or HTTP/1.1 only\n");
    return;
  }
  if(mlen == 4 && !memcmp(line, "HEAD", 4))
    c->head_only = true;
  else if(!(mlen == 3 && !memcmp(line, "GET", 3))) {
    respond_text(c, 405, "method not allowed: GET or HEAD only\n");
    return;
  }
  /* absolute-form (http://host/path): the path part */
  if((size_t)(te - t) >= 8 && !memcmp(t, "http", 4)) {
    size_t s = !memcmp(t + 4, "://", 3)    ? 7
               : !memcmp(t + 4, "s://", 4) ? 8
                                           : 0;
    if(s) {
      const char *p = memchr(t + s, '/', (size_t)(te - t) - s);
      t = p ? p : te;
    }
  }
  if(t < te && *t != '/') {
    respond_text(c, 400, "bad request target\n");
    return;
  }
  for(i = 0; t + i < te && t[i] != '?' && t[i] != '#'; i++)
    ;
  serve(c, t == te ? "/" : t, t == te ? 1 : i);
}

/* The end of the head (the empty line) within the first len bytes of p,
 * searching from *from on: its offset past it, or 0. */
static size_t head_end(const char *p, size_t len, size_t *from)
{
  size_t i = *from;
  for(; i < len; i++) {
    if(p[i] != '\n')
      continue;
    if(i + 1 < len && p[i + 1] == '\n')
      return i + 2;
    if(i + 2 < len && p[i + 1] == '\r' && p[i + 2] == '\n')
      return i + 3;
    if(i + 2 >= len) /* the empty line may still come: look here again */
      break;
  }
  *from = i;
  return 0;
}

static void on_read(struct bufferevent *bev, void *arg)
{
  conn *c = arg;
  struct evbuffer *in = bufferevent_get_input(bev);
  size_t len = evbuffer_get_length(in), end, skip = 0, eol;
  const char *p;

  if(c->state == C_LINGER) {
    /* past the budget: read no more, but leave the peer the rest of the
     * linger to read the answer (closing now, with its bytes unread,
     * would reset the connection and could destroy the answer) */
    c->drained += len;
    evbuffer_drain(in, len);
    if(c->drained > HTTPD_LINGER_BYTES)
      bufferevent_disable(bev, EV_READ);
    return;
  }
  if(c->state != C_HEAD)
    return;
  if(len > HTTPD_HEAD_MAX)
    len = HTTPD_HEAD_MAX;
  p = (const char *)evbuffer_pullup(in, (ev_ssize_t)len);
  if(!p) {
    conn_free(c);
    return;
  }
  /* empty lines before the request line are allowed (RFC 9112 2.2) */
  while(skip < len && (p[skip] == '\r' || p[skip] == '\n'))
    skip++;
  if(c->scanned < skip)
    c->scanned = skip;
  end = head_end(p, len, &c->scanned);
  if(!end) {
    if(len >= HTTPD_HEAD_MAX)
      respond_text(c, 431, "request head over 8 KiB\n");
    return;
  }
  for(eol = skip; eol < end && p[eol] != '\n'; eol++)
    ;
  if(eol > skip && p[eol - 1] == '\r')
    eol--;
  handle_line(c, p + skip, eol - skip);
}

/* the answer is out: shut our side, then discard what the peer still
 * sends (a body we never read) for a while, so that closing with unread
 * bytes does not reset the connection before the peer read the answer */
static void on_write(struct bufferevent *bev, void *arg)
{
  conn *c = arg;
  struct timeval tv = {HTTPD_LINGER_MS / 1000,
                       (HTTPD_LINGER_MS % 1000) * 1000};
  if(c->state != C_WRITE ||
     evbuffer_get_length(bufferevent_get_output(bev)))
    return;
  shutdown(bufferevent_getfd(bev), SHUT_WR);
  c->state = C_LINGER;
  bufferevent_disable(bev, EV_WRITE);
  bufferevent_setwatermark(bev, EV_READ, 0, 0);
  bufferevent_enable(bev, EV_READ);
  evtimer_add(c->deadline, &tv); /* at most the linger, from now */
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
  conn *c = arg;
  if((what & BEV_EVENT_EOF) && c->state == C_WRITE) {
    /* the peer shut its side after the request: still answer */
    bufferevent_disable(bev, EV_READ);
    return;
  }
  conn_free(c);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
  conn *c = arg;
  (void)fd;
  (void)what;
  if(c->state != C_LINGER)
    dropped(c->h, "timeout");
  conn_free(c);
}

static void conn_free(conn *c)
{
  httpd *h = c->h;
  if(c->prev)
    c->prev->next = c->next;
  else
    h->first = c->next;
  if(c->next)
    c->next->prev = c->prev;
  else
    h->last = c->prev;
  if(c->deadline)
    event_free(c->deadline);
  if(c->bev)
    bufferevent_free(c->bev); /* closes the socket */
  free(c);
  h->n_conns--;
  metrics_set(h->m, "session_controller_http_connections", NULL,
              h->n_conns);
  if(h->full) {
    h->full = false;
    listen_on(h);
  }
}

static void conn_new(httpd *h, evutil_socket_t fd)
{
  conn *c = calloc(1, sizeof(*c));
  struct timeval tv = {h->timeout_ms / 1000, (h->timeout_ms % 1000) * 1000};
  if(!c) {
    evutil_closesocket(fd);
    return;
  }
  c->h = h;
  c->bev = bufferevent_socket_new(h->base, fd, BEV_OPT_CLOSE_ON_FREE);
  c->deadline = evtimer_new(h->base, on_deadline, c);
  if(!c->bev || !c->deadline) {
    if(c->deadline)
      event_free(c->deadline);
    if(c->bev)
      bufferevent_free(c->bev);
    else
      evutil_closesocket(fd);
    free(c);
    return;
  }
  c->prev = h->last;
  if(h->last)
    h->last->next = c;
  else
    h->first = c;
  h->last = c;
  h->n_conns++;
  metrics_set(h->m, "session_controller_http_connections", NULL,
              h->n_conns);
  bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
  bufferevent_setwatermark(c->bev, EV_READ, 0, HTTPD_HEAD_MAX);
  bufferevent_enable(c->bev, EV_READ);
  evtimer_add(c->deadline, &tv);
}

/* the oldest connection still waiting for its request head or done with
 * its answer (lingering), or NULL */
static conn *oldest_idle(httpd *h)
{
  conn *c;
  for(c = h->first; c; c = c->next)
    if(c->state != C_WRITE)
      return c;
  return NULL;
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
  httpd *h = arg;
  (void)fd;
  (void)what;
  h->backing_off = false;
  listen_on(h);
}

static void accept_failed(httpd *h, int e)
{
  struct timeval tv = {HTTPD_BACKOFF_MS / 1000,
                       (HTTPD_BACKOFF_MS % 1000) * 1000};
  unsigned long sup;
  metrics_add(h->m, "session_controller_http_accept_errors_total", NULL, 1);
  listen_off(h);
  h->backing_off = true;
  evtimer_add(h->resume, &tv);
  if(limiter_pass(&h->accept_log, &sup)) {
    char n[24], open[24];
    snprintf(n, sizeof(n), "%lu", sup);
    snprintf(open, sizeof(open), "%d", h->n_conns);
    log_kv(h->lg, LOG_WARN, "metrics port: accept() failed, not accepting "
           "for 1s", "error", strerror(e), "http_connections", open,
           "suppressed", n, NULL);
  }
}

static void at_cap(httpd *h, const char *what)
{
  unsigned long sup;
  if(limiter_pass(&h->cap_log, &sup)) {
    char n[24], cap[24];
    snprintf(n, sizeof(n), "%lu", sup);
    snprintf(cap, sizeof(cap), "%d", h->max_conns);
    log_kv(h->lg, LOG_WARN, what, "max_connections", cap, "suppressed", n,
           NULL);
  }
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
  httpd *h = arg;
  int i;
  (void)what;
  for(i = 0; i < ACCEPT_BATCH; i++) {
    evutil_socket_t fd;
    if(h->n_conns >= h->max_conns && !oldest_idle(h)) {
      /* all busy answering: the rest waits in the backlog */
      at_cap(h, "metrics port: connection cap reached, all answering: "
                "not accepting until one ends");
      listen_off(h);
      h->full = true;
      return;
    }
    fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if(fd < 0) {
      int e = errno;
      if(e == EAGAIN || e == EWOULDBLOCK)
        return;
      /* a connection that failed before we took it (accept(2), Linux:
       * pending network errors are passed on): try the next one */
      if(e == EINTR || e == ECONNABORTED || e == EPROTO || e == ENETDOWN ||
         e == ENOPROTOOPT || e == EHOSTDOWN || e == ENONET ||
         e == EHOSTUNREACH || e == EOPNOTSUPP || e == ENETUNREACH)
        continue;
      accept_failed(h, e); /* EMFILE, ENFILE, ENOBUFS, ENOMEM, other */
      return;
    }
    if(h->n_conns >= h->max_conns) {
      conn *old = oldest_idle(h);
      at_cap(h, "metrics port: connection cap reached: closing the oldest "
                "idle connection");
      if(old->state == C_HEAD)
        dropped(h, "evicted");
      conn_free(old);
    }
    conn_new(h, fd);
  }
}

static int nofile_limit(void)
{
  struct rlimit rl;
  if(getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
     rl.rlim_cur > 1u << 30)
    return 1 << 30;
  return (int)rl.rlim_cur;
}

static sc_err listen_socket(const char *addr, const char *host,
                            const char *port, evutil_socket_t *out,
                            int *bound_port, sc_errbuf *eb)
{
  struct addrinfo hints, *res = NULL, *ai;
  int rc, e = 0, one = 1;
  evutil_socket_t fd = -1;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  rc = getaddrinfo(host, port, &hints, &res);
  if(rc)
    return sc_errf(eb, SC_ERR_INVALID, "--metrics-addr %s: %s", addr,
                   gai_strerror(rc));
  for(ai = res; ai; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                ai->ai_protocol);
    if(fd < 0) {
      e = errno;
      continue;
    }
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if(!bind(fd, ai->ai_addr, ai->ai_addrlen) && !listen(fd, 128))
      break;
    e = errno;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if(fd < 0)
    return sc_errf(eb, SC_ERR_IO, "--metrics-addr %s: cannot listen there: "
                   "%s", addr, strerror(e ? e : EADDRNOTAVAIL));
  if(bound_port) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    *bound_port = (int)strtol(port, NULL, 10);
    if(!getsockname(fd, (struct sockaddr *)&ss, &sl)) {
      if(ss.ss_family == AF_INET)
        *bound_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
      else if(ss.ss_family == AF_INET6)
        *bound_port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
  }
  *out = fd;
  return SC_OK;
}

static sc_err declare_metrics(metrics *m)
{
  sc_err err = metrics_declare(
    m, "session_controller_http_requests_total", METRIC_COUNTER,
    "Requests answered on --metrics-addr, by HTTP status.", NULL, 0);
  if(!err)
    err = metrics_declare(
      m, "session_controller_http_connections", METRIC_GAUGE,
      "Connections open on --metrics-addr.", NULL, 0);
  if(!err)
    err = metrics_declare(
      m, "session_controller_http_connections_dropped_total", METRIC_COUNTER,
      "Connections on --metrics-addr closed without an answer: evicted "
      "(idle, at the cap) or timeout.", NULL, 0);
  if(!err)
    err = metrics_declare(
      m, "session_controller_http_accept_errors_total", METRIC_COUNTER,
      "accept() failures on --metrics-addr (each pauses accepting 1s).",
      NULL, 0);
  return err;
}

sc_err httpd_start(struct event_base *base, const char *addr, metrics *m,
                   const httpd_hooks *hooks, const httpd_opts *opts,
                   httpd **out, int *bound_port, sc_errbuf *eb)
{
  httpd *h;
  char host[256];
  const char *colon = strrchr(addr, ':');
  char *end;
  long port;
  int limit;
  sc_err err;

  if(!colon || (size_t)(colon - addr) >= sizeof(host))
    return sc_errf(eb, SC_ERR_INVALID,
                   "--metrics-addr \"%s\": expected HOST:PORT", addr);
  memcpy(host, addr, (size_t)(colon - addr));
  host[colon - addr] = '\0';
  if(host[0] == '[') { /* [::1]:9090 */
    size_t l = strlen(host);
    if(l < 2 || host[l - 1] != ']')
      return sc_errf(eb, SC_ERR_INVALID, "--metrics-addr \"%s\": bad IPv6",
                     addr);
    memmove(host, host + 1, l - 2);
    host[l - 2] = '\0';
  }
  port = strtol(colon + 1, &end, 10);
  if(end == colon + 1 || *end || port < 0 || port > 65535)
    return sc_errf(eb, SC_ERR_INVALID, "--metrics-addr \"%s\": bad port",
                   addr);
  h = calloc(1, sizeof(*h));
  if(!h)
    return SC_ERR_NOMEM;
  h->base = base;
  h->m = m;
  h->fd = -1;
  if(hooks)
    h->hooks = *hooks;
  h->max_conns = opts && opts->max_connections > 0
                   ? opts->max_connections : HTTPD_DEFAULT_MAX_CONNECTIONS;
  limit = nofile_limit() / 4;
  if(h->max_conns > limit)
    h->max_conns = limit > 0 ? limit : 1;
  h->timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms
                                               : HTTPD_DEFAULT_TIMEOUT_MS;
  h->lg = opts ? opts->lg : NULL;
  err = declare_metrics(m);
  if(err) {
    free(h);
    return err;
  }
  err = listen_socket(addr, host[0] ? host : "0.0.0.0", colon + 1, &h->fd,
                      bound_port, eb);
  if(err) {
    free(h);
    return err;
  }
  h->lev = event_new(base, h->fd, EV_READ | EV_PERSIST, on_accept, h);
  h->resume = evtimer_new(base, on_resume, h);
  if(!h->lev || !h->resume) {
    httpd_stop(h);
    return SC_ERR_NOMEM;
  }
  metrics_set(m, "session_controller_http_connections", NULL, 0);
  listen_on(h);
  *out = h;
  return SC_OK;
}

void httpd_stop(httpd *h)
{
  if(!h)
    return;
  h->full = false;
  h->backing_off = true; /* conn_free() must not listen again */
  while(h->first)
    conn_free(h->first);
  if(h->lev)
    event_free(h->lev);
  if(h->resume)
    event_free(h->resume);
  if(h->fd >= 0)
    evutil_closesocket(h->fd);
  free(h);
}

int httpd_max_connections(const httpd *h)
{
  return h ? h->max_conns : 0;
}

int httpd_connections(const httpd *h)
{
  return h ? h->n_conns : 0;
}
