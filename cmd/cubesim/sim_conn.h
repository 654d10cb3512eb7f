/*
 * sim_conn.h - the per-connection request framer that sits between the
 * socket and libevent 2.1's evhttp (evhttp_set_bevcb).
 *
 * Why: evhttp 2.1 refuses a request carrying both Transfer-Encoding and
 * Content-Length (RFC 7230 3.3.3: Transfer-Encoding wins) and answers its
 * own parse errors with HTML. The framer reads each request head itself,
 * checks it, and hands evhttp only well-framed requests:
 *   - Content-Length bodies pass through untouched;
 *   - chunked bodies are de-chunked (Content-Length dropped) and handed on
 *     with a Content-Length, once complete;
 *   - a malformed head, or a body evhttp would refuse, becomes a request
 *     carrying the header SIM_CONN_ERROR_HEADER ("STATUS head|body
 *     message"), which the request handler turns into the JSON error; the
 *     same header sent by a client is removed.
 * Replies are written straight to the socket, so evhttp sees a reply as
 * sent (and may close a `Connection: close` connection) only once the
 * kernel has all of it.
 *
 * Ownership: sim_conn_bev() makes a filter bufferevent over a socket
 * bufferevent for evhttp, which frees it (and the per-connection state)
 * with the connection. `limits` must outlive the evhttp server.
 */
#ifndef SIM_CONN_H
#define SIM_CONN_H

#include <stddef.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#define SIM_CONN_ERROR_HEADER "X-Cubesim-Error"
#define SIM_CONN_HEAD_MAX (64 * 1024)

typedef struct sim_conn_limits {
  size_t body_cap;  /* chunked bodies over this: a "413 body" request */
  size_t hard_cap;  /* any body over this: a "413 head" request, closed */
} sim_conn_limits;

/* evhttp_set_bevcb() callback; arg is a const sim_conn_limits *. */
struct bufferevent *sim_conn_bev(struct event_base *base, void *arg);

#endif
