/* kf_server.c - the fake API server itself (see kf.h and
 * docs/kube-apiserver-fake.md): it binds, authenticates each request
 * (client certificate or bearer token), logs it, applies the injected
 * faults and delays, and hands it to discovery, the resources or /_fake/. */
#include "cmd/kube-apiserver-fake/kf_server.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>
#include <event2/http.h>
#include "lib/sctime.h"

static bool read_token(kf_server *s, char *buf, size_t len)
{
  FILE *f;
  size_t n;
  if(s->o.token) {
    snprintf(buf, len, "%s", s->o.token);
    return true;
  }
  if(!s->o.token_file)
    return false;
  f = fopen(s->o.token_file, "r");
  if(!f) {
    buf[0] = 0;
    return true; /* nothing matches */
  }
  n = fread(buf, 1, len - 1, f);
  fclose(f);
  buf[n] = 0;
  while(n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
    buf[--n] = 0;
  return true;
}

/* like an API server's authenticators: a verified client certificate
 * (with --client-ca) or the bearer token (with --token/--token-file);
 * nothing configured lets everyone in. *user: the certificate's CN,
 * "token" or "" */
static bool authorized(kf_server *s, struct evhttp_request *req,
                       char *user, size_t ulen)
{
  char tok[4096];
  const char *h;
  bool certs = s->o.bev && kf_tls_client_ca(s->o.bev_arg);
  user[0] = 0;
  if(certs && kf_tls_peer(req, user, ulen))
    return true;
  if(!read_token(s, tok, sizeof(tok)))
    return !certs;
  h = evhttp_find_header(evhttp_request_get_input_headers(req),
                         "Authorization");
  if(h && !strncmp(h, "Bearer ", 7) && tok[0] && !strcmp(h + 7, tok)) {
    snprintf(user, ulen, "token");
    return true;
  }
  return false;
}

static void serve_api(kf_server *s, struct evhttp_request *req)
{
  const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
  kf_route rt;
  if(!path)
    path = "/";
  if(kf_parse_route(req, &rt)) {
    kf_serve_resource(s, req, &rt);
    return;
  }
  kf_serve_discovery(s, req, path);
}

static void delayed_free(kf_delayed *d)
{
  kf_delayed **pp;
  for(pp = &d->s->delayed; *pp; pp = &(*pp)->next)
    if(*pp == d) {
      *pp = d->next;
      break;
    }
  event_free(d->ev);
  free(d);
}

static void on_delayed(evutil_socket_t fd, short what, void *arg)
{
  kf_delayed *d = arg;
  kf_server *s = d->s;
  struct evhttp_request *req = d->req;
  int status = d->status, retry_after = d->retry_after;
  (void)fd;
  (void)what;
  delayed_free(d);
  if(status)
    kf_reply_fault(req, status, retry_after);
  else
    serve_api(s, req);
}

/* hold req for f->delay_ms; false when it cannot (answered at once) */
static bool delay_request(kf_server *s, struct evhttp_request *req,
                          const kf_fault *f)
{
  kf_delayed *d = calloc(1, sizeof(*d));
  struct timeval tv;
  if(!d)
    return false;
  d->s = s;
  d->req = req;
  d->status = f->status;
  d->retry_after = f->retry_after;
  d->ev = evtimer_new(s->base, on_delayed, d);
  tv.tv_sec = f->delay_ms / 1000;
  tv.tv_usec = (f->delay_ms % 1000) * 1000;
  if(!d->ev || evtimer_add(d->ev, &tv)) {
    if(d->ev)
      event_free(d->ev);
    free(d);
    return false;
  }
  d->next = s->delayed;
  s->delayed = d;
  return true;
}

static void on_request(struct evhttp_request *req, void *arg)
{
  kf_server *s = arg;
  const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
  const kf_fault *f;
  kf_reqlog *l;
  char user[64];
  if(!path)
    path = "/";
  if(!strncmp(path, "/_fake/", 7)) {
    kf_serve_admin(s, req, path);
    return;
  }
  s->requests++;
  l = kf_log_request(s, req, path);
  if(!authorized(s, req, user, sizeof(user))) {
    kf_reply_status(req, 401, "Unauthorized", "Unauthorized");
    return;
  }
  if(l)
    snprintf(l->user, sizeof(l->user), "%s", user);
  if((f = kf_fault_take(s, req, path))) {
    if(l)
      l->fault = f->status;
    if(f->delay_ms && delay_request(s, req, f))
      return;
    if(f->status) {
      kf_reply_fault(req, f->status, f->retry_after);
      return;
    }
  }
  s->cur_log = l;
  serve_api(s, req);
  s->cur_log = NULL;
}

kf_server *kf_server_new(struct event_base *base, const char *host,
                         int port, const kf_opts *o, int *bound_port)
{
  kf_server *s = calloc(1, sizeof(*s));
  struct evhttp_bound_socket *bs;
  if(!s)
    return NULL;
  s->base = base;
  s->o = *o;
  s->started_ms = sctime_mono_ms();
  if(s->o.history_keep <= 0)
    s->o.history_keep = 1000;
  if(s->o.bookmark_ms <= 0)
    s->o.bookmark_ms = 1000;
  s->hist = calloc((size_t)s->o.history_keep, sizeof(*s->hist));
  s->http = evhttp_new(base);
  if(!s->hist || !s->http) {
    kf_server_free(s);
    return NULL;
  }
  evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
                             EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH |
                             EVHTTP_REQ_DELETE);
  evhttp_set_max_body_size(s->http, KF_BODY_MAX);
  evhttp_set_gencb(s->http, on_request, s);
  if(s->o.bev)
    evhttp_set_bevcb(s->http, s->o.bev, s->o.bev_arg);
  bs = evhttp_bind_socket_with_handle(s->http, host, (ev_uint16_t)port);
  if(!bs) {
    kf_server_free(s);
    return NULL;
  }
  {
    struct sockaddr_storage ss;
    ev_socklen_t sl = sizeof(ss);
    evutil_socket_t fd = evhttp_bound_socket_get_fd(bs);
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    if(ss.ss_family == AF_INET6)
      *bound_port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    else
      *bound_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
  }
  return s;
}

void kf_server_free(kf_server *s)
{
  if(!s)
    return;
  while(s->watches)
    kf_watch_end(s->watches);
  while(s->delayed)
    delayed_free(s->delayed);
  if(s->http)
    evhttp_free(s->http);
  kf_store_free(s);
  kf_reqlog_clear(s);
  free(s);
}
