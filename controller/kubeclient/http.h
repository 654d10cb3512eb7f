/*
 * kube_http.h - asynchronous calls to a Kubernetes API server: requests on
 * a libcurl multi handle driven by a libevent loop (the model of cube.c
 * and of the kube store's watches). Nothing blocks the loop except the
 * credential source (kube_cred.h) when it has no valid credential: the
 * re-read of a small token file (at most once a minute, or after a 401),
 * or an exec plugin run (at start, after a 401, or when its refresh ahead
 * of the expiry, which runs on the loop, failed; at most its timeout).
 *
 * The connection settings are those of the kube store (kubeconfig.h): the
 * server, the credential source (a bearer token, or a plugin's client
 * certificate), a client certificate and key, the CA,
 * insecure-skip-tls-verify.
 *
 * Ownership: kube_http_new() takes over the strings of *conn (the
 * caller's struct is left zeroed) and returns a client for
 * kube_http_free() (NULL accepted), which aborts what is in flight without
 * calling the callbacks (its streams too). The result given to a callback
 * (its body and message) is valid only during the callback. Never free
 * the client from one of its callbacks.
 */
#ifndef SC_KUBE_HTTP_H
#define SC_KUBE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <curl/curl.h>
#include <json-c/json.h>
#include "lib/sc_err.h"
#include "controller/kubeclient/config.h"

struct event_base;
typedef struct kube_http kube_http;

/* Calls on the wire at once, per client (and its connections to the
 * server, kept alive). More wait in a queue, oldest first, holding only
 * their request (no curl handle, no buffers): a burst of thousands of
 * status writes costs their bodies, not 20 KB of curl state and a
 * connection each. The wait counts against the first attempt's timeout;
 * a call that waited its whole timeout fails (SC_ERR_TIMEOUT) unsent. */
#define KUBE_HTTP_ACTIVE_MAX 32

/* Response bodies larger than this fail the call (SC_ERR_TOO_LARGE). */
#define KUBE_HTTP_BODY_MAX (4 * 1024 * 1024)

typedef struct kube_http_result {
  sc_err err;          /* SC_OK when an HTTP answer came, whatever status */
  long status;         /* the HTTP status; 0 without an answer */
  json_object *body;   /* the JSON body, or NULL (empty, not JSON) */
  const char *message; /* the transport error or the Status message; "" */
  size_t body_len;     /* bytes of the body (JSON or not) */
  const char *raw;     /* those bytes (NUL-terminated; "" when none) */
  long retry_after_s;  /* the last answer's Retry-After, 0 = none */
  int attempts;        /* requests made (retries included) */
} kube_http_result;

typedef void (*kube_http_cb)(const kube_http_result *res, void *ud);

kube_http *kube_http_new(struct event_base *base, kube_conn *conn,
                         const char *user_agent, sc_errbuf *eb);
void kube_http_free(kube_http *h);

/* Start METHOD server+path (path begins with '/'; the caller escapes it)
 * with an optional body of type ctype. timeout_ms bounds the whole call
 * (0 = 30 s). A 401 is retried once with a new credential (the token
 * file read again, the plugin run again); when there is none, the
 * result is that error (res.err set, status 0). cb
 * is called exactly once, from the loop, never from inside this call;
 * an error return means it will not be called. */
sc_err kube_http_request(kube_http *h, const char *method, const char *path,
                         const char *ctype, const char *body,
                         long timeout_ms, kube_http_cb cb, void *ud,
                         sc_errbuf *eb);

/* The same with more choices. retries: a 429, a 5xx or a transport
 * failure is asked again up to this many times, after 100 ms doubling or
 * the server's Retry-After when longer (capped at KUBE_HTTP_RETRY_AFTER_MAX_MS),
 * waiting on a timer of the loop; failures no retry cures (TLS setup, a
 * body over the cap, a malformed URL) are not retried. The result of a
 * call that failed after retries is the last attempt's, its message
 * ending "(after N attempts)". */
typedef struct kube_http_opts {
  long timeout_ms;     /* each attempt; 0 = 30 s */
  size_t body_max;     /* 0 = KUBE_HTTP_BODY_MAX */
  int retries;         /* 0 = none */
  /* a 2xx body is not parsed (body NULL): the caller parses res.raw
   * itself (the kube store, strictly); other bodies still are, for the
   * Status message */
  bool raw_2xx;
} kube_http_opts;
#define KUBE_HTTP_RETRY_AFTER_MAX_MS 5000

sc_err kube_http_request_ex(kube_http *h, const char *method,
                            const char *path, const char *ctype,
                            const char *body, const kube_http_opts *o,
                            kube_http_cb cb, void *ud, sc_errbuf *eb);

/* A libcurl failure as a message for an operator: TLS failures name
 * what to check in the configuration that `c->source` names. */
void kube_http_curl_detail(const kube_conn *c, CURLcode cc,
                           const char *ebuf, char *out, size_t len);
/* Failures another attempt will not cure (TLS setup, URL, body cap). */
bool kube_http_curl_permanent(CURLcode cc);

/* Calls in flight (on the wire, waiting for a retry or for a slot). */
int kube_http_inflight(const kube_http *h);
/* Of them, those waiting for a slot (KUBE_HTTP_ACTIVE_MAX). */
int kube_http_waiting(const kube_http *h);

/* Drop every call in flight without calling its callback (for a caller
 * that stops waiting). */
void kube_http_abort_all(kube_http *h);

/* --- streaming GET (a watch) ---
 *
 * kube_http_stream_start() sends GET server+path and hands the body of a
 * 2xx answer to cb->line one line at a time (newline-delimited JSON watch
 * events) while it arrives, for as long as the server keeps it open. The
 * request is that of the calls above: the same credential (a 401 before
 * any line is asked again once with a new credential: the token file read
 * again, the plugin run again), headers, User-Agent and TLS settings, and
 * its end is reported as theirs (kube_http_result: err for no answer,
 * status and the Status message of a non-2xx answer, Retry-After).
 * Streams are never retried (their owner decides when to ask again) and
 * never wait for one of the KUBE_HTTP_ACTIVE_MAX slots: they run on a
 * multi handle of their own, so a watch never takes a connection of the
 * calls nor waits behind them.
 *
 * Lines: without their newline (a "\r" before it is kept), NUL-terminated,
 * valid only during the callback; empty lines are not delivered. A line
 * longer than opts.line_max is dropped as it arrives, to its end, and
 * counted: cb->oversized (may be NULL) gets the count of lines dropped
 * since its last call, after the lines before them. Bytes after the last
 * newline when the stream ends are not a line and are dropped.
 *
 * Callbacks run from the loop, never from inside kube_http_stream_start()
 * nor from inside libcurl: cb->open (may be NULL) once, when the first
 * bytes of a 2xx answer came (the server is streaming), then cb->line for
 * each line, cb->oversized as said, and cb->end exactly once (its result
 * valid during the call) unless the stream was cancelled first. A
 * callback may cancel its own stream or any other, start streams and
 * calls; never kube_http_free().
 *
 * Ownership: *out is the caller's handle until cb->end has run or
 * kube_http_stream_cancel() was called, whichever comes first; the
 * stream's memory is the client's (kube_http_free() drops every stream
 * without calling back). */
typedef struct kube_http_stream kube_http_stream;

/* The longest line kept when opts.line_max is 0. */
#define KUBE_HTTP_LINE_MAX (4 * 1024 * 1024)
/* The bytes of a non-2xx body kept for its Status message. */
#define KUBE_HTTP_STREAM_ERRBODY_MAX (64 * 1024)

typedef struct kube_http_stream_opts {
  size_t line_max;     /* 0 = KUBE_HTTP_LINE_MAX */
  long connect_ms;     /* connection (TLS included); 0 = 5000 */
  long idle_s;         /* no byte for this long: the stream ends with
                          SC_ERR_TIMEOUT; 0 = never */
} kube_http_stream_opts;

typedef struct kube_http_stream_cb {
  void (*open)(long status, void *ud);
  void (*line)(const char *line, size_t len, void *ud);
  void (*oversized)(size_t n, void *ud);
  void (*end)(const kube_http_result *res, void *ud);
} kube_http_stream_cb;

/* SC_ERR_NOMEM, SC_ERR_INVALID (a URL too long), or the credential
 * source's error (no credential: nothing was sent); cb is copied and
 * cb->line and cb->end are required. */
sc_err kube_http_stream_start(kube_http *h, const char *path,
                              const kube_http_stream_opts *opts,
                              const kube_http_stream_cb *cb, void *ud,
                              kube_http_stream **out, sc_errbuf *eb);
/* Stop it: no callback of it runs after this returns. NULL accepted;
 * callable from any callback of the client (the stream's own included),
 * never after its end callback returned. */
void kube_http_stream_cancel(kube_http_stream *s);
/* Streams not ended nor cancelled. */
int kube_http_streams(const kube_http *h);

/* The server URL, for messages. */
const char *kube_http_server(const kube_http *h);

#endif
