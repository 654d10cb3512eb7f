/*
 * http_int.h - what the two files of kube_http share (internal to
 * controller/kubeclient/http*.c; the interface is http.h): http.c (the calls:
 * slots, the wait queue, retries) and http_stream.c (the streams). Both
 * build their requests with khttp_req_headers() and khttp_easy_setup()
 * and report their end with khttp_result_fill(), so the credential,
 * headers, TLS and messages of a stream are those of a call.
 *
 * Ownership: the client (struct kube_http) owns its calls, its streams
 * and both multi handles; kube_http_free() frees them all.
 */
#ifndef SC_KUBE_HTTP_INT_H
#define SC_KUBE_HTTP_INT_H

#include <stdbool.h>
#include "controller/kubeclient/http.h"
#include "lib/dynbuf.h"

struct curlev;
typedef struct kreq kreq;

struct kube_http {
  struct event_base *base;
  kube_conn conn;
  char *user_agent;
  struct curlev *ev;              /* the multi handle on the loop */
  kreq *reqs;              /* every call: on the wire, retrying, waiting */
  int n_reqs;
  int active;              /* calls started (an easy handle each) */
  kreq *wait_head, *wait_tail; /* calls waiting for a slot, oldest first */
  int n_waiting;
  struct curlev *sev;             /* streams: a multi handle of their own */
  kube_http_stream *streams;
  int n_streams;           /* of them, not ended nor cancelled */
  int delivering;          /* inside stream callbacks: frees wait */
};

/* Accept, the optional Content-Type and the credential's bearer token;
 * NULL when out of memory (the caller frees the list) */
struct curl_slist *khttp_req_headers(const char *ctype, const kube_auth *a);
/* what every request sets on its easy handle: the URL (server + path),
 * headers, User-Agent, TLS (kube_conn_curl_tls), the error buffer,
 * owner as CURLOPT_PRIVATE, the connect timeout; SC_ERR_INVALID when
 * the URL is too long */
sc_err khttp_easy_setup(kube_http *h, CURL *e, const char *path,
                        struct curl_slist *hdrs, const kube_auth *a,
                        char *ebuf, void *owner, long connect_ms,
                        sc_errbuf *eb);
/* the result of a request that ended with cc (CURLE_OK: status and body
 * resp): error, message naming the request (into msg), the body parsed
 * (a 2xx one with parse_2xx; the caller puts res->body); after ends the
 * messages of failures that were retried ("" when none) */
void khttp_result_fill(kube_http *h, const char *method, const char *path,
                       CURLcode cc, const char *ebuf, long status,
                       const dynbuf *resp, bool parse_2xx,
                       const char *after, kube_http_result *res, char *msg,
                       size_t mlen);
/* kube_http_free(): every stream, without callbacks, and their handle */
void khttp_streams_free(kube_http *h);

#endif
