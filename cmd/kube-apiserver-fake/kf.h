/*
 * kf.h - kube-apiserver-fake: a small Kubernetes API server for tests
 * (docs/kube-apiserver-fake.md). It serves the Session custom resource
 * (lea.io/v1alpha1) and core/v1 Events by the API conventions: discovery,
 * namespaced list/get/create/update/merge-patch/delete, the status
 * subresource, resourceVersion preconditions (409), generation bumped on
 * spec changes only, finalizers and deletionTimestamp, chunked watches
 * with bookmarks and 410 Gone after compaction, the Table format (also on
 * watches). Once the CustomResourceDefinition of sessions.lea.io is
 * applied, Session writes go through its schema (kf_schema.h: unknown
 * fields by ?fieldValidation, defaults, validation), Tables use its
 * printer columns and /openapi/v3 publishes it (kf_crd.h), so plain
 * kubectl works as against a cluster.
 *
 * Ownership: kf_server_new() returns a server the caller frees with
 * kf_server_free(); strings in kf_opts are only read (kept by pointer:
 * they must outlive the server).
 */
#ifndef KF_H
#define KF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

struct event_base;
struct bufferevent;
typedef struct kf_server kf_server;
typedef struct kf_tls kf_tls;

typedef struct kf_opts {
  const char *token;        /* required bearer token; NULL = none */
  const char *token_file;   /* or: the token, re-read at each request */
  int history_keep;         /* watch events kept; 0 = 1000 */
  int bookmark_ms;          /* bookmark period on watches; 0 = 1000 */
  /* HTTPS: the bufferevent of each accepted connection (evhttp_set_bevcb);
   * NULL = plain HTTP. kf_tls_bev with a kf_tls as bev_arg. With a
   * kf_tls that has a client CA, a verified client certificate
   * authenticates a request as well as the token does. */
  struct bufferevent *(*bev)(struct event_base *base, void *bev_arg);
  void *bev_arg;
} kf_opts;

kf_server *kf_server_new(struct event_base *base, const char *host,
                         int port, const kf_opts *o, int *bound_port);
void kf_server_free(kf_server *s);

/* A TLS server context from PEM files: the server's certificate chain
 * and key and, when client_ca is not NULL, the CA that must have signed a
 * client certificate (connections without one fail the handshake). NULL
 * on error with a one-line message in err. Freed with kf_tls_free() after
 * the server that uses it. */
kf_tls *kf_tls_new(const char *cert, const char *key, const char *client_ca,
                   char *err, size_t errlen);
void kf_tls_free(kf_tls *t);
/* kf_opts.bev for a kf_tls: a bufferevent_openssl in accepting state */
struct bufferevent *kf_tls_bev(struct event_base *base, void *arg);
/* true when t verifies client certificates (NULL accepted) */
bool kf_tls_client_ca(const kf_tls *t);
/* true when req came with a verified client certificate; its subject CN
 * into buf */
struct evhttp_request;
bool kf_tls_peer(struct evhttp_request *req, char *buf, size_t len);

/* RFC 7386 JSON merge patch of patch onto target (modified in place;
 * patch is only read). Returns the new target (a non-object patch
 * replaces it: the old one is put). */
json_object *kf_merge_patch(json_object *target, json_object *patch);

#endif
