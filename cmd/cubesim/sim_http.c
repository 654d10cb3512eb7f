/* sim_http.c - cubesim's HTTP plumbing: the evhttp server, routing, auth,
 * fault application, audit lines and reply sending (see sim_server.h). */
#include "cmd/cubesim/sim_server.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include "cmd/cubesim/sim_json.h"

struct sim_pending {
  sim_server *srv;
  struct evhttp_request *req;
  struct event *ev;
  struct evbuffer *body;
  int status;
  int reset;
  sim_pending *next, *prev;
};

typedef void (*route_fn)(sim_req *r);

typedef struct route {
  const char *pattern; /* "*" matches one non-empty segment: the ID */
  const char *method;
  route_fn fn;
  sim_op op;           /* fault-injection operation */
  int auth;            /* behind --api-key */
  int mutating;        /* gets an audit line */
  const char *event;
  const char *source;
} route;

static const route routes[] = {
  {"/health", "GET", sim_api_health, SIM_OP_NONE, 0, 0, NULL, NULL},
  {"/sandboxes", "GET", sim_api_list_v1, SIM_OP_LIST, 1, 0, NULL, NULL},
  {"/sandboxes", "POST", sim_api_create, SIM_OP_CREATE, 1, 1, "create", "api"},
  {"/v2/sandboxes", "GET", sim_api_list_v2, SIM_OP_LIST, 1, 0, NULL, NULL},
  {"/v2/sandboxes", "POST", sim_api_create, SIM_OP_CREATE, 1, 1, "create",
   "api"},
  {"/sandboxes/*", "GET", sim_api_get, SIM_OP_GET, 1, 0, NULL, NULL},
  {"/sandboxes/*", "DELETE", sim_api_delete, SIM_OP_DELETE, 1, 1, "delete",
   "api"},
  {"/sandboxes/*/pause", "POST", sim_api_pause, SIM_OP_PAUSE, 1, 1, "pause",
   "api"},
  {"/sandboxes/*/resume", "POST", sim_api_resume, SIM_OP_RESUME, 1, 1,
   "resume", "api"},
  {"/sandboxes/*/connect", "POST", sim_api_connect, SIM_OP_CONNECT, 1, 1,
   "connect", "api"},
  {"/v2/sandboxes/*/connect", "POST", sim_api_connect, SIM_OP_CONNECT, 1, 1,
   "connect", "api"},
  {"/sandboxes/*/timeout", "POST", sim_api_timeout, SIM_OP_TIMEOUT, 1, 1,
   "timeout", "api"},
  {"/sandboxes/*/refreshes", "POST", sim_api_refresh, SIM_OP_REFRESH, 1, 1,
   "refresh", "api"},
  {"/_sim/clock", "GET", sim_admin_clock_get, SIM_OP_NONE, 0, 0, NULL, NULL},
  {"/_sim/clock", "POST", sim_admin_clock_post, SIM_OP_NONE, 0, 0, NULL, NULL},
  {"/_sim/sandboxes", "GET", sim_admin_sandboxes, SIM_OP_NONE, 0, 0, NULL,
   NULL},
  {"/_sim/sandboxes/*/traffic", "POST", sim_admin_traffic, SIM_OP_TRAFFIC, 0,
   1, "traffic", "traffic"},
  {"/_sim/audit", "GET", sim_admin_audit, SIM_OP_NONE, 0, 0, NULL, NULL},
  {"/_sim/faults", "GET", sim_admin_faults_get, SIM_OP_NONE, 0, 0, NULL, NULL},
  {"/_sim/faults", "POST", sim_admin_faults_post, SIM_OP_NONE, 0, 0, NULL,
   NULL},
  {"/_sim/reset", "POST", sim_admin_reset, SIM_OP_NONE, 0, 0, NULL, NULL},
  {"/_sim/key", "POST", sim_admin_key, SIM_OP_NONE, 0, 0, NULL, NULL},
  {"/_sim/stats", "GET", sim_admin_stats, SIM_OP_NONE, 0, 0, NULL, NULL},
};

/* does path match pattern? the "*" segment is copied into id */
static int match(const char *pattern, const char *path, char *id, size_t idlen,
                 int *too_long)
{
  const char *p = pattern, *q = path;
  while(*p && *q) {
    if(*p == '*') {
      const char *e = strchr(q, '/');
      size_t n = e ? (size_t)(e - q) : strlen(q);
      if(!n)
        return 0;
      if(n >= idlen) {
        *too_long = 1;
        n = idlen - 1;
      }
      memcpy(id, q, n);
      id[n] = '\0';
      q = e ? e : q + strlen(q);
      p++;
      continue;
    }
    if(*p != *q)
      return 0;
    p++;
    q++;
  }
  return !*p && !*q;
}

static const char *method_name(enum evhttp_cmd_type c)
{
  switch(c) {
  case EVHTTP_REQ_GET: return "GET";
  case EVHTTP_REQ_POST: return "POST";
  case EVHTTP_REQ_HEAD: return "HEAD";
  case EVHTTP_REQ_PUT: return "PUT";
  case EVHTTP_REQ_DELETE: return "DELETE";
  case EVHTTP_REQ_OPTIONS: return "OPTIONS";
  case EVHTTP_REQ_TRACE: return "TRACE";
  case EVHTTP_REQ_CONNECT: return "CONNECT";
  case EVHTTP_REQ_PATCH: return "PATCH";
  }
  return "UNKNOWN";
}

static const char *reason(int status)
{
  switch(status) {
  case 200: return "OK";
  case 201: return "Created";
  case 204: return "No Content";
  case 400: return "Bad Request";
  case 401: return "Unauthorized";
  case 403: return "Forbidden";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 408: return "Request Timeout";
  case 409: return "Conflict";
  case 410: return "Gone";
  case 413: return "Payload Too Large";
  case 431: return "Request Header Fields Too Large";
  case 429: return "Too Many Requests";
  case 500: return "Internal Server Error";
  case 501: return "Not Implemented";
  case 502: return "Bad Gateway";
  case 503: return "Service Unavailable";
  case 504: return "Gateway Timeout";
  case 505: return "HTTP Version Not Supported";
  }
  return status < 500 ? "Client Error" : "Server Error";
}

/* ---- reply helpers for the handlers ---- */

void sim_add_header(sim_req *r, const char *name, const char *value)
{
  struct evkeyvalq *h = evhttp_request_get_output_headers(r->req);
  evhttp_remove_header(h, name);
  evhttp_add_header(h, name, value);
}

const char *sim_req_header(sim_req *r, const char *name)
{
  return evhttp_find_header(evhttp_request_get_input_headers(r->req), name);
}

void sim_reply_error(sim_req *r, int status, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  sim_jw w;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  dynbuf_reset(&r->out);
  sim_jw_init(&w, &r->out);
  sim_jw_obj_open(&w);
  sim_jw_kint(&w, "code", status);
  sim_jw_kstr(&w, "message", msg);
  sim_jw_obj_close(&w);
  r->status = status;
  r->content_type = "application/json";
}

void sim_reply_empty(sim_req *r, int status)
{
  dynbuf_reset(&r->out);
  r->status = status;
  r->content_type = NULL;
}

void sim_reply_json(sim_req *r, int status)
{
  r->status = status;
  r->content_type = "application/json";
}

int sim_req_json(sim_req *r, int allow_empty, json_object **out)
{
  sc_errbuf eb;
  json_object *o;
  size_t i;
  const char *b = dynbuf_ptr(&r->body);
  *out = NULL;
  for(i = 0; i < dynbuf_len(&r->body); i++)
    if(b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n')
      break;
  if(i == dynbuf_len(&r->body)) {
    if(allow_empty)
      return 0;
    sim_reply_error(r, 400, "request body is empty; a JSON object is required");
    return -1;
  }
  eb.msg[0] = '\0';
  if(sim_json_parse(b, dynbuf_len(&r->body), &o, &eb)) {
    sim_reply_error(r, 400, "%s", eb.msg[0] ? eb.msg : "malformed JSON");
    return -1;
  }
  if(!json_object_is_type(o, json_type_object)) {
    json_object_put(o);
    sim_reply_error(r, 400, "request body must be a JSON object");
    return -1;
  }
  *out = o;
  return 0;
}

sim_sandbox *sim_req_sandbox(sim_req *r)
{
  sim_sandbox *sb = r->id_too_long ? NULL : sim_state_find(r->srv->state, r->id);
  if(sb)
    sim_audit_before(r, sb);
  if(!sb || sb->state == SIM_DELETED) {
    sim_reply_error(r, 404, "sandbox \"%s\" doesn't exist or you don't have"
                    " access to it", r->id);
    return NULL;
  }
  return sb;
}

void sim_audit_before(sim_req *r, const sim_sandbox *sb)
{
  snprintf(r->audit_id, sizeof(r->audit_id), "%s", sb->id);
  r->before = sim_state_name((sim_sbx_state)sb->state);
  r->after = r->before;
}

void sim_audit_after(sim_req *r, const sim_sandbox *sb)
{
  snprintf(r->audit_id, sizeof(r->audit_id), "%s", sb->id);
  r->after = sim_state_name((sim_sbx_state)sb->state);
}

/* ---- sending ---- */

static void pending_unlink(sim_server *s, sim_pending *p)
{
  if(p->prev)
    p->prev->next = p->next;
  else
    s->pending = p->next;
  if(p->next)
    p->next->prev = p->prev;
}

/* Cut the reply: send the status line, headers and half the body by hand,
 * then reset the socket. evhttp notices the dead connection and frees it
 * once the (never delivered) reply below is queued. */
static void send_reset(struct evhttp_request *req, int status,
                       struct evbuffer *body)
{
  struct evhttp_connection *evcon = evhttp_request_get_connection(req);
  struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) :
                            NULL;
  evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
  char head[256];
  size_t blen = evbuffer_get_length(body), half = blen / 2;
  int n;
  struct linger lg;
  if(fd < 0 && bev && bufferevent_get_underlying(bev))
    fd = bufferevent_getfd(bufferevent_get_underlying(bev));
  if(fd < 0)
    return;
  n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\nContent-Type: "
               "application/json\r\nContent-Length: %zu\r\n\r\n", status,
               reason(status), blen ? blen : (size_t)16);
  (void)!send(fd, head, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
  if(half)
    (void)!send(fd, evbuffer_pullup(body, (ev_ssize_t)half), half,
                MSG_NOSIGNAL | MSG_DONTWAIT);
  lg.l_onoff = 1;
  lg.l_linger = 0;
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  shutdown(fd, SHUT_RDWR);
}

static void send_now(struct evhttp_request *req, int status,
                     struct evbuffer *body, int reset)
{
  if(reset)
    send_reset(req, status, body);
  evhttp_send_reply(req, status, reason(status), body);
}

static void pending_fire(evutil_socket_t fd, short what, void *arg)
{
  sim_pending *p = arg;
  (void)fd;
  (void)what;
  pending_unlink(p->srv, p);
  send_now(p->req, p->status, p->body, p->reset);
  event_free(p->ev);
  evbuffer_free(p->body);
  free(p);
}

static void finish(sim_req *r)
{
  char date[40], now[SCTIME_RFC3339_MAX];
  struct evbuffer *body;
  sim_server *s = r->srv;

  sctime_format_http_date(r->now, date, sizeof(date));
  sctime_format_rfc3339(r->now, now, sizeof(now));
  sim_add_header(r, "Date", date);
  sim_add_header(r, "X-Sim-Now", now);
  sim_add_header(r, "X-Request-Id", r->request_id);
  if(r->content_type && r->status != 204)
    sim_add_header(r, "Content-Type", r->content_type);
  if(r->status == 204 || r->status == 304)
    dynbuf_reset(&r->out);

  body = evbuffer_new();
  if(body && dynbuf_len(&r->out))
    evbuffer_add(body, dynbuf_ptr(&r->out), dynbuf_len(&r->out));
  if(body && r->plan.latency_ms > 0) {
    sim_pending *p = calloc(1, sizeof(*p));
    struct timeval tv;
    if(p) {
      p->srv = s;
      p->req = r->req;
      p->body = body;
      p->status = r->status;
      p->reset = r->plan.reset;
      p->ev = evtimer_new(s->base, pending_fire, p);
      if(p->ev) {
        tv.tv_sec = (time_t)(r->plan.latency_ms / 1000);
        tv.tv_usec = (suseconds_t)(r->plan.latency_ms % 1000) * 1000;
        evtimer_add(p->ev, &tv);
        p->next = s->pending;
        if(s->pending)
          s->pending->prev = p;
        s->pending = p;
        return;
      }
      free(p);
    }
  }
  send_now(r->req, r->status, body, r->plan.reset);
  if(body)
    evbuffer_free(body);
}

/* ---- auth ---- */

static int authorized(sim_req *r)
{
  const sim_server *s = r->srv;
  const char *k, *a;
  if(!s->api_key)
    return 1;
  k = sim_req_header(r, "X-API-Key");
  if(k && !strcmp(k, s->api_key))
    return 1;
  a = sim_req_header(r, "Authorization");
  if(a && !strncasecmp(a, "Bearer ", 7)) {
    a += 7;
    while(*a == ' ')
      a++;
    if(!strcmp(a, s->api_key))
      return 1;
  }
  return 0;
}

/* ---- the request entry point ---- */

static void request_id(sim_req *r)
{
  const char *in = sim_req_header(r, "X-Request-Id");
  size_t i, n = in ? strlen(in) : 0;
  if(in && n > 0 && n < sizeof(r->request_id)) {
    for(i = 0; i < n; i++)
      if(in[i] <= 0x20 || in[i] >= 0x7f)
        break;
    if(i == n) {
      memcpy(r->request_id, in, n + 1);
      return;
    }
  }
  snprintf(r->request_id, sizeof(r->request_id), "sim-%08" PRIx64 "-%06" PRIu64,
           r->srv->seed & 0xffffffffu, r->srv->reqno);
}

static void write_audit(sim_req *r)
{
  sim_audit_rec rec;
  memset(&rec, 0, sizeof(rec));
  rec.at = r->now;
  rec.source = r->source;
  rec.event = r->event;
  rec.method = r->method;
  rec.path = r->path;
  rec.status = r->status;
  rec.sandbox_id = r->audit_id[0] ? r->audit_id : NULL;
  rec.state_before = r->before;
  rec.state_after = r->after;
  rec.user_agent = r->user_agent;
  rec.request_id = r->request_id;
  rec.fault = r->fault;
  sim_audit_add(r->srv->audit, &rec);
}

/* The framer's verdict, "STATUS head|body message", for this stage:
 * the JSON error is set and 1 returned. */
static int framing_error(sim_req *r, const char *stage)
{
  const char *v = sim_req_header(r, SIM_CONN_ERROR_HEADER);
  size_t sl = strlen(stage);
  char *end;
  long st;
  if(!v)
    return 0;
  st = strtol(v, &end, 10);
  if(end == v || *end != ' ' || st < 400 || st > 599 ||
     strncmp(end + 1, stage, sl) || end[1 + sl] != ' ')
    return 0;
  sim_reply_error(r, (int)st, "%s", end + 2 + sl);
  return 1;
}

static void on_request(struct evhttp_request *req, void *arg)
{
  sim_server *s = arg;
  sim_req r;
  const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
  struct evbuffer *in = evhttp_request_get_input_buffer(req);
  const route *rt = NULL;
  char allow[64] = "";
  size_t i, inlen;
  int path_matched = 0;

  memset(&r, 0, sizeof(r));
  r.srv = s;
  r.req = req;
  s->reqno++;
  r.now = sim_clock_now(&s->clock);
  sim_state_advance(s->state, r.now);
  r.method = method_name(evhttp_request_get_command(req));
  r.path = uri ? evhttp_uri_get_path(uri) : NULL;
  if(!r.path || !*r.path)
    r.path = "/";
  r.query = uri ? evhttp_uri_get_query(uri) : NULL;
  r.user_agent = sim_req_header(&r, "User-Agent");
  r.plan.capacity = -1;
  request_id(&r);
  dynbuf_init(&r.body, s->body_cap);
  dynbuf_init(&r.out, (size_t)1 << 30);

  /* the request framer (sim_conn.c) found the head malformed */
  if(framing_error(&r, "head"))
    goto done;
  for(i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
    char id[SIM_ID_MAX + 1] = "";
    int too_long = 0;
    if(!match(routes[i].pattern, r.path, id, sizeof(id), &too_long))
      continue;
    path_matched = 1;
    if(strlen(allow) + strlen(routes[i].method) + 3 < sizeof(allow)) {
      if(allow[0])
        memcpy(allow + strlen(allow), ", ", 3);
      memcpy(allow + strlen(allow), routes[i].method,
             strlen(routes[i].method) + 1);
    }
    if(!strcmp(routes[i].method, r.method) ||
       (!strcmp(r.method, "HEAD") && !strcmp(routes[i].method, "GET"))) {
      rt = &routes[i];
      memcpy(r.id, id, sizeof(id));
      r.id_too_long = too_long;
      break;
    }
  }
  if(!rt) {
    if(path_matched) {
      sim_add_header(&r, "Allow", allow);
      sim_reply_error(&r, 405, "method %s is not allowed on %s (allowed: %s)",
                      r.method, r.path, allow);
    }
    else
      sim_reply_error(&r, 404, "no such route: %s %s", r.method, r.path);
    goto done;
  }
  if(rt->op != SIM_OP_NONE && rt->op != SIM_OP_TRAFFIC)
    s->op_calls[rt->op]++;
  if(rt->mutating) {
    r.audit = 1;
    r.event = rt->event;
    r.source = rt->source;
    if(r.id[0] && !r.id_too_long) {
      sim_sandbox *sb = sim_state_find(s->state, r.id);
      if(sb)
        sim_audit_before(&r, sb);
    }
  }
  if(rt->auth && !authorized(&r)) {
    sim_reply_error(&r, 401, "missing or invalid API key (send X-API-Key or"
                    " Authorization: Bearer)");
    goto done;
  }
  if(framing_error(&r, "body"))
    goto done;
  inlen = evbuffer_get_length(in);
  if(inlen > s->body_cap) {
    sim_reply_error(&r, 413, "request body of %zu bytes is over the %zu byte"
                    " limit", inlen, s->body_cap);
    goto done;
  }
  if(inlen && dynbuf_add(&r.body, evbuffer_pullup(in, (ev_ssize_t)inlen),
                         inlen)) {
    sim_reply_error(&r, 500, "out of memory reading the request body");
    goto done;
  }
  if(rt->op != SIM_OP_NONE) {
    sim_faults_plan(s->faults, rt->op, &r.plan);
    if(r.plan.error_status) {
      char ra[24];
      if(r.plan.retry_after) {
        snprintf(ra, sizeof(ra), "%d", r.plan.retry_after);
        sim_add_header(&r, "Retry-After", ra);
      }
      r.fault = "error";
      sim_reply_error(&r, r.plan.error_status, "injected fault: %s failed",
                      sim_op_name(rt->op));
      goto done;
    }
  }
  r.status = 500;
  rt->fn(&r);
  if(r.plan.reset && !r.fault)
    r.fault = "reset";
done:
  if(r.audit)
    write_audit(&r);
  finish(&r);
  dynbuf_free(&r.body);
  dynbuf_free(&r.out);
  sim_server_rearm(s);
}

/* ---- timers ---- */

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
  sim_server *s = arg;
  (void)fd;
  (void)what;
  sim_state_advance(s->state, sim_clock_now(&s->clock));
  sim_server_rearm(s);
}

void sim_server_rearm(sim_server *s)
{
  sc_time next = sim_state_next_due(s->state), now;
  int64_t d;
  struct timeval tv;
  evtimer_del(s->timer);
  if(!next)
    return;
  now = sim_clock_now(&s->clock);
  d = sim_clock_real_delay(&s->clock, now, next);
  if(d < 0)
    return;
  d += 1;
  tv.tv_sec = (time_t)(d / 1000);
  tv.tv_usec = (suseconds_t)(d % 1000) * 1000;
  evtimer_add(s->timer, &tv);
}

/* lifecycle events from the model go to the audit trail */
static void on_event(void *arg, const sim_sandbox *sb, sc_time at,
                     const char *event, sim_sbx_state before,
                     sim_sbx_state after)
{
  sim_server *s = arg;
  sim_audit_rec rec;
  memset(&rec, 0, sizeof(rec));
  rec.at = at;
  rec.source = "timer";
  rec.event = event;
  rec.sandbox_id = sb->id;
  rec.state_before = sim_state_name(before);
  rec.state_after = sim_state_name(after);
  sim_audit_add(s->audit, &rec);
}

static int on_drop_labels(void *arg)
{
  sim_server *s = arg;
  return sim_faults_drop_labels(s->faults);
}

/* ---- lifetime ---- */

sc_err sim_server_new(struct event_base *base, const sim_server_opts *o,
                      sim_server **out, sc_errbuf *eb)
{
  sim_server *s;
  sim_state_config cfg;
  struct evhttp_bound_socket *bs;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  sc_err err;
  const char *host = o->host ? o->host : "127.0.0.1";

  *out = NULL;
  s = calloc(1, sizeof(*s));
  if(!s)
    return SC_ERR_NOMEM;
  s->base = base;
  s->seed = o->seed;
  s->body_cap = o->body_cap ? o->body_cap : SIM_BODY_CAP;
  s->host = strdup(host);
  s->api_key = o->api_key ? strdup(o->api_key) : NULL;
  s->faults_cli = strdup(o->faults ? o->faults : "");
  s->host_mount_allow =
    o->host_mount_allow ? strdup(o->host_mount_allow) : NULL;
  if(o->host_mount_allow && !s->host_mount_allow) {
    err = SC_ERR_NOMEM;
    goto fail;
  }
  if(!s->host || !s->faults_cli || (o->api_key && !s->api_key)) {
    err = SC_ERR_NOMEM;
    goto fail;
  }
  sim_clock_init(&s->clock, o->start ? o->start : sctime_wall_ms(),
                 sctime_mono_ms(), o->clock_speed);
  err = sim_faults_parse(s->faults_cli, o->seed, &s->faults, eb);
  if(err)
    goto fail;
  err = sim_audit_new(o->audit_log, (size_t)512 << 20, &s->audit, eb);
  if(err)
    goto fail;
  memset(&cfg, 0, sizeof(cfg));
  cfg.dialect = o->dialect;
  cfg.pause_ms = o->pause_ms;
  cfg.seed = o->seed;
  cfg.max_live = o->max_sandboxes;
  s->state = sim_state_new(&cfg);
  s->timer = evtimer_new(base, on_timer, s);
  s->http = evhttp_new(base);
  if(!s->state || !s->timer || !s->http) {
    err = SC_ERR_NOMEM;
    goto fail;
  }
  sim_state_set_hooks(s->state, on_event, on_drop_labels, s);
  evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
                             EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                             EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
                             EVHTTP_REQ_PATCH | EVHTTP_REQ_TRACE |
                             EVHTTP_REQ_CONNECT);
  evhttp_set_max_body_size(s->http, SIM_HARD_BODY_CAP);
  evhttp_set_max_headers_size(s->http, 64 * 1024);
  evhttp_set_timeout(s->http, 30);
  evhttp_set_gencb(s->http, on_request, s);
  /* our own framing in front of evhttp's parser (sim_conn.h) */
  s->limits.body_cap = s->body_cap;
  s->limits.hard_cap = SIM_HARD_BODY_CAP;
  evhttp_set_bevcb(s->http, sim_conn_bev, &s->limits);
  bs = evhttp_bind_socket_with_handle(s->http, host, (ev_uint16_t)o->port);
  if(!bs) {
    err = sc_errf(eb, SC_ERR_IO, "cannot listen on %s:%d: %s", host, o->port,
                  strerror(errno));
    goto fail;
  }
  if(getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss,
                 &sl) == 0) {
    if(ss.ss_family == AF_INET)
      s->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    else if(ss.ss_family == AF_INET6)
      s->port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
  }
  *out = s;
  return SC_OK;
fail:
  sim_server_free(s);
  return err;
}

int sim_server_port(const sim_server *s)
{
  return s->port;
}

void sim_server_free(sim_server *s)
{
  if(!s)
    return;
  while(s->pending) {
    sim_pending *p = s->pending;
    pending_unlink(s, p);
    evhttp_send_reply(p->req, p->status, reason(p->status), p->body);
    event_free(p->ev);
    evbuffer_free(p->body);
    free(p);
  }
  if(s->http)
    evhttp_free(s->http);
  if(s->timer)
    event_free(s->timer);
  sim_state_free(s->state);
  sim_faults_free(s->faults);
  sim_audit_free(s->audit);
  free(s->tr_filter);
  free(s->host);
  free(s->api_key);
  free(s->faults_cli);
  free(s->host_mount_allow);
  free(s);
}
