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
 * calling the callbacks. The result given to a callback (its body and
 * message) is valid only during the callback. Never free the client from
 * one of its callbacks.
 */
#ifndef SC_KUBE_HTTP_H
#define SC_KUBE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <curl/curl.h>
#include <json-c/json.h>
#include "lib/sc_err.h"
#include "controller/kube/config.h"

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

/* The server URL, for messages. */
const char *kube_http_server(const kube_http *h);

#endif
