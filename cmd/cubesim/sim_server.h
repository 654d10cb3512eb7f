/*
 * sim_server.h - cubesim's HTTP server (libevent evhttp): the options, the
 * server object, and the request context shared by the handler files
 * (sim_http.c: plumbing and routing; sim_api.c: the E2B/Cube API;
 * sim_admin.c: /_sim/).
 *
 * Ownership: sim_server_new() makes a server bound to a socket on the
 * caller's event_base; sim_server_free() (NULL ok) frees everything it
 * made, answering delayed replies first. Option strings are copied.
 */
#ifndef SIM_SERVER_H
#define SIM_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <event2/event.h>
#include <event2/http.h>
#include <json-c/json.h>
#include "lib/dynbuf.h"
#include "lib/sc_err.h"
#include "lib/sctime.h"
#include "cmd/cubesim/sim_audit.h"
#include "cmd/cubesim/sim_clock.h"
#include "cmd/cubesim/sim_conn.h"
#include "cmd/cubesim/sim_faults.h"
#include "cmd/cubesim/sim_state.h"

#define SIM_BODY_CAP (1 << 20)        /* JSON bodies: 413 past this */
#define SIM_HARD_BODY_CAP (8 << 20)   /* evhttp's own (HTML) 413 past this */

typedef struct sim_server_opts {
  const char *host;        /* default 127.0.0.1 */
  int port;                /* 0: any free port */
  sim_dialect dialect;
  const char *api_key;     /* NULL: no auth */
  double clock_speed;
  sc_time start;           /* virtual start time; 0: the wall clock */
  uint64_t seed;
  const char *faults;      /* NULL: none */
  const char *audit_log;   /* NULL: memory only */
  size_t max_sandboxes;    /* 0: unlimited */
  int64_t pause_ms;
  size_t body_cap;         /* 0: SIM_BODY_CAP */
  const char *host_mount_allow; /* cube: host-mount hostPath prefixes,
                                   comma-separated; NULL: any */
} sim_server_opts;

typedef struct sim_server sim_server;

sc_err sim_server_new(struct event_base *base, const sim_server_opts *o,
                      sim_server **out, sc_errbuf *eb);
void sim_server_free(sim_server *s);
/* The port actually bound. */
int sim_server_port(const sim_server *s);

/* ---- internal to cmd/cubesim ---- */

typedef struct sim_pending sim_pending;

struct sim_server {
  struct event_base *base;
  struct evhttp *http;
  struct event *timer;
  int port;
  char *host;
  char *api_key;
  char *faults_cli;   /* the --faults spec, restored by /_sim/reset */
  char *host_mount_allow; /* --host-mount-allow, or NULL */
  uint64_t seed;
  size_t body_cap;
  sim_conn_limits limits; /* the request framer's caps (sim_conn.h) */
  sim_clock clock;
  sim_state *state;
  sim_faults *faults;
  sim_audit *audit;
  sim_pending *pending; /* replies held back by a latency fault */
  uint64_t reqno;
  /* public API requests by operation, whatever their answer (faults
   * included): GET /_sim/stats, to count what clients cost Cube */
  uint64_t op_calls[SIM_OP__COUNT];
  /* the last X-Total-Running count: valid while the state's version and
   * the metadata filter are the same (a 100-page e2b list counted every
   * sandbox on every page: 1,000,000 filter matches at 10k, most of
   * cubesim's time for the list) */
  int tr_valid;
  uint64_t tr_version;
  char *tr_filter;
  size_t tr_count;
};

typedef struct sim_req {
  sim_server *srv;
  struct evhttp_request *req;
  sc_time now;
  const char *method;     /* "GET", "POST", ... */
  const char *path;       /* raw, as received */
  const char *query;      /* raw, NULL when none */
  const char *user_agent;
  char request_id[80];
  char id[SIM_ID_MAX + 1];/* the {sandboxID} of the route ("" none) */
  int id_too_long;
  dynbuf body;
  /* the response */
  int status;
  dynbuf out;
  const char *content_type;
  sim_fault_plan plan;
  /* the audit line (mutating routes) */
  int audit;
  const char *source;
  const char *event;
  const char *fault;
  char audit_id[SIM_ID_MAX];
  const char *before, *after;
} sim_req;

/* Error reply: {"code":status,"message":...}. */
void sim_reply_error(sim_req *r, int status, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
void sim_reply_empty(sim_req *r, int status);
/* r->out already holds the JSON body. */
void sim_reply_json(sim_req *r, int status);
void sim_add_header(sim_req *r, const char *name, const char *value);
const char *sim_req_header(sim_req *r, const char *name);
/* Parse the body as a JSON object. An empty body gives *out = NULL and 0
 * when allow_empty, else a 400. On failure the 400 is already set and -1
 * returned. */
int sim_req_json(sim_req *r, int allow_empty, json_object **out);
/* Look up r->id: 404 (already replied) and NULL when unknown or deleted. */
sim_sandbox *sim_req_sandbox(sim_req *r);
/* Note the sandbox for the audit line before/after an operation. */
void sim_audit_before(sim_req *r, const sim_sandbox *sb);
void sim_audit_after(sim_req *r, const sim_sandbox *sb);
/* Rearm the libevent timer for the next due sandbox timer. */
void sim_server_rearm(sim_server *s);
/* A sandbox as the Sandbox schema into r->out (create, resume, connect);
 * -1 (a 500 set) when out of memory. */
int sim_write_sandbox(sim_req *r, const sim_sandbox *sb);

/* handlers */
void sim_api_health(sim_req *r);
void sim_api_create(sim_req *r);
void sim_api_list_v1(sim_req *r);
void sim_api_list_v2(sim_req *r);
void sim_api_get(sim_req *r);
void sim_api_delete(sim_req *r);
void sim_api_pause(sim_req *r);
void sim_api_resume(sim_req *r);
void sim_api_connect(sim_req *r);
void sim_api_timeout(sim_req *r);
void sim_api_refresh(sim_req *r);
void sim_admin_clock_get(sim_req *r);
void sim_admin_clock_post(sim_req *r);
void sim_admin_sandboxes(sim_req *r);
void sim_admin_traffic(sim_req *r);
void sim_admin_audit(sim_req *r);
void sim_admin_faults_get(sim_req *r);
void sim_admin_faults_post(sim_req *r);
void sim_admin_reset(sim_req *r);
void sim_admin_key(sim_req *r);
void sim_admin_stats(sim_req *r);

#endif
