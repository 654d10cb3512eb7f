/*
 * httpd.h - the operator endpoints on --metrics-addr: /metrics (Prometheus
 * text), /healthz (the loop turns), /readyz (store answered and a first
 * full pass completed, and the store is still the one opened). libevent's evhttp on the controller's loop.
 *
 * Ownership: httpd_start() -> httpd_stop() (NULL accepted). The metrics
 * and the callbacks' user data are borrowed.
 */
#ifndef SC_HTTPD_H
#define SC_HTTPD_H

#include <stdbool.h>
#include "metrics.h"

struct event_base;
typedef struct httpd httpd;

typedef struct httpd_hooks {
  bool (*healthy)(void *ud, const char **why);
  /* false: 503 with "not ready: " and *why (NULL: the default reason) */
  bool (*ready)(void *ud, const char **why);
  void *ud;
} httpd_hooks;

/* addr is HOST:PORT (port 0: any free port; *bound_port tells which). */
sc_err httpd_start(struct event_base *base, const char *addr, metrics *m,
                   const httpd_hooks *hooks, httpd **out, int *bound_port,
                   sc_errbuf *eb);
void httpd_stop(httpd *h);

#endif
