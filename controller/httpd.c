/* httpd.c - /metrics, /healthz, /readyz on evhttp. */
#include "httpd.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

struct httpd {
  struct evhttp *http;
  metrics *m;
  httpd_hooks hooks;
};

static void reply(struct evhttp_request *req, int code, const char *reason,
                  const char *ctype, const char *body, size_t len)
{
  struct evbuffer *b = evbuffer_new();
  if(!b) {
    evhttp_send_error(req, 500, NULL);
    return;
  }
  evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                    ctype);
  evbuffer_add(b, body, len);
  evhttp_send_reply(req, code, reason, b);
  evbuffer_free(b);
}

static void on_request(struct evhttp_request *req, void *arg)
{
  httpd *h = arg;
  const char *uri = evhttp_request_get_uri(req);
  const char *path_end = strchr(uri, '?');
  size_t plen = path_end ? (size_t)(path_end - uri) : strlen(uri);
  enum evhttp_cmd_type cmd = evhttp_request_get_command(req);

  if(cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
    reply(req, 405, "Method Not Allowed", "text/plain",
          "method not allowed\n", 19);
    return;
  }
  if(plen == 8 && !strncmp(uri, "/metrics", 8)) {
    dynbuf b;
    dynbuf_init(&b, 64u * 1024 * 1024);
    if(metrics_render(h->m, &b)) {
      dynbuf_free(&b);
      reply(req, 500, "Internal Server Error", "text/plain",
            "metrics too large\n", 18);
      return;
    }
    reply(req, 200, "OK", "text/plain; version=0.0.4; charset=utf-8",
          dynbuf_ptr(&b), dynbuf_len(&b));
    dynbuf_free(&b);
  }
  else if(plen == 8 && !strncmp(uri, "/healthz", 8)) {
    const char *why = "ok";
    char msg[256];
    bool ok = h->hooks.healthy ? h->hooks.healthy(h->hooks.ud, &why) : true;
    int n = snprintf(msg, sizeof(msg), "%s\n", ok ? "ok" : why);
    reply(req, ok ? 200 : 503, ok ? "OK" : "Service Unavailable",
          "text/plain", msg, (size_t)n);
  }
  else if(plen == 7 && !strncmp(uri, "/readyz", 7)) {
    const char *why = NULL;
    char msg[768];
    bool ok = h->hooks.ready ? h->hooks.ready(h->hooks.ud, &why) : true;
    int n = snprintf(msg, sizeof(msg), "not ready: %s\n",
                     why && *why ? why : "no full pass completed yet, or "
                                         "the store is unreachable");
    if(n < 0 || (size_t)n >= sizeof(msg))
      n = (int)sizeof(msg) - 1;
    if(ok)
      reply(req, 200, "OK", "text/plain", "ok\n", 3);
    else
      reply(req, 503, "Service Unavailable", "text/plain", msg, (size_t)n);
  }
  else
    reply(req, 404, "Not Found", "text/plain", "not found\n", 10);
}

sc_err httpd_start(struct event_base *base, const char *addr, metrics *m,
                   const httpd_hooks *hooks, httpd **out, int *bound_port,
                   sc_errbuf *eb)
{
  httpd *h;
  char host[256];
  const char *colon = strrchr(addr, ':');
  char *end;
  long port;
  struct evhttp_bound_socket *bs;

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
  h->m = m;
  if(hooks)
    h->hooks = *hooks;
  h->http = evhttp_new(base);
  if(!h->http) {
    free(h);
    return SC_ERR_NOMEM;
  }
  evhttp_set_gencb(h->http, on_request, h);
  evhttp_set_timeout(h->http, 30);
  bs = evhttp_bind_socket_with_handle(h->http, host[0] ? host : "0.0.0.0",
                                      (unsigned short)port);
  if(!bs) {
    evhttp_free(h->http);
    free(h);
    return sc_errf(eb, SC_ERR_IO, "--metrics-addr %s: cannot listen there",
                   addr);
  }
  if(bound_port) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    *bound_port = (int)port;
    if(!getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss,
                    &sl)) {
      if(ss.ss_family == AF_INET)
        *bound_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
      else if(ss.ss_family == AF_INET6)
        *bound_port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
  }
  *out = h;
  return SC_OK;
}

void httpd_stop(httpd *h)
{
  if(!h)
    return;
  evhttp_free(h->http);
  free(h);
}
