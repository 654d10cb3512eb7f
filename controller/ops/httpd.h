/*
 * httpd.h - the operator endpoints on --metrics-addr: /metrics (Prometheus
 * text), /healthz (the loop turns), /readyz (store answered and a first
 * full pass completed, and the store is still the one opened). A small
 * HTTP/1.x responder of our own on the controller's libevent loop, built
 * so that whoever reaches the port can neither make the process buffer
 * nor make it spin:
 *
 *  - GET and HEAD only (405 with Allow: GET, HEAD otherwise); a request
 *    body is never read: after the answer at most HTTPD_LINGER_BYTES of
 *    it are discarded, and the connection is closed when the peer closes
 *    or HTTPD_LINGER_MS after the answer, whichever comes first;
 *  - the request head (request line and headers) is at most
 *    HTTPD_HEAD_MAX bytes (431 past it);
 *  - one request per connection (Connection: close); a connection has
 *    timeout_ms from its accept to send its request and take the answer,
 *    however it dribbles, then HTTPD_LINGER_MS at most;
 *  - at most max_connections at once, and never more than a quarter of
 *    the descriptor limit (RLIMIT_NOFILE): the rest is Cube's and the
 *    store's. A new connection over the cap closes the oldest idle one
 *    (no request yet, or answered and lingering); when all are busy
 *    answering, accepting stops until one ends;
 *  - accept() failing for want of descriptors or memory (EMFILE, ENFILE,
 *    ENOBUFS, ENOMEM) stops accepting for HTTPD_BACKOFF_MS instead of
 *    retrying at once; such errors are logged once per
 *    HTTPD_LOG_INTERVAL_MS with the count of those not logged.
 *
 * Ownership: httpd_start() -> httpd_stop() (NULL accepted; it closes the
 * listener and every open connection). The metrics, the logger and the
 * callbacks' user data are borrowed.
 */
#ifndef SC_HTTPD_H
#define SC_HTTPD_H

#include <stdbool.h>
#include "controller/ops/log.h"
#include "controller/ops/metrics.h"

#define HTTPD_HEAD_MAX 8192
#define HTTPD_DEFAULT_MAX_CONNECTIONS 64
#define HTTPD_DEFAULT_TIMEOUT_MS 10000
#define HTTPD_BACKOFF_MS 1000
#define HTTPD_LOG_INTERVAL_MS 10000
#define HTTPD_LINGER_MS 1000
#define HTTPD_LINGER_BYTES (256 * 1024)

struct event_base;
typedef struct httpd httpd;

typedef struct httpd_hooks {
  /* false: 503 with *why (NULL: "unhealthy") */
  bool (*healthy)(void *ud, const char **why);
  /* false: 503 with "not ready: " and *why (NULL: the default reason) */
  bool (*ready)(void *ud, const char **why);
  void *ud;
} httpd_hooks;

typedef struct httpd_opts {
  int max_connections; /* 0: HTTPD_DEFAULT_MAX_CONNECTIONS */
  int timeout_ms;      /* a connection's whole life; 0: the default */
  logger *lg;          /* accept errors (rate-limited); NULL: none */
} httpd_opts;

/* addr is HOST:PORT (port 0: any free port; *bound_port tells which).
 * opts may be NULL (the defaults). Declares the
 * session_controller_http_* families on m. */
sc_err httpd_start(struct event_base *base, const char *addr, metrics *m,
                   const httpd_hooks *hooks, const httpd_opts *opts,
                   httpd **out, int *bound_port, sc_errbuf *eb);
void httpd_stop(httpd *h);

/* The cap in force: min(max_connections, RLIMIT_NOFILE soft limit / 4),
 * at least 1. */
int httpd_max_connections(const httpd *h);
/* Connections open now. */
int httpd_connections(const httpd *h);

#endif
