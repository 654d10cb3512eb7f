/*
 * kf.h - kube-apiserver-fake: a small Kubernetes API server for tests
 * (docs/kube-apiserver-fake.md). It serves the Session custom resource
 * (lea.io/v1alpha1) and core/v1 Events by the API conventions: discovery,
 * namespaced list/get/create/update/merge-patch/delete, the status
 * subresource, resourceVersion preconditions (409), generation bumped on
 * spec changes only, finalizers and deletionTimestamp, chunked watches
 * with bookmarks and 410 Gone after compaction, the Table format.
 *
 * Ownership: kf_server_new() returns a server the caller frees with
 * kf_server_free(); strings in kf_opts are only read (kept by pointer:
 * they must outlive the server).
 */
#ifndef KF_H
#define KF_H

#include <stdint.h>
#include <json-c/json.h>

struct event_base;
typedef struct kf_server kf_server;

typedef struct kf_opts {
  const char *token;        /* required bearer token; NULL = none */
  const char *token_file;   /* or: the token, re-read at each request */
  int history_keep;         /* watch events kept; 0 = 1000 */
  int bookmark_ms;          /* bookmark period on watches; 0 = 1000 */
} kf_opts;

kf_server *kf_server_new(struct event_base *base, const char *host,
                         int port, const kf_opts *o, int *bound_port);
void kf_server_free(kf_server *s);

/* RFC 7386 JSON merge patch of patch onto target (modified in place;
 * patch is only read). Returns the new target (a non-object patch
 * replaces it: the old one is put). */
json_object *kf_merge_patch(json_object *target, json_object *patch);

#endif
