/*
 * kube_int.h - the parts of the kube store (docs/store.md, "The kube
 * backend") that its files share; internal to the files of controller/store/kube/.
 *
 *   kube.c         the backend table, open and close
 *   kube_decode.c  bodies and objects: strict JSON, object <-> session,
 *                  errors of answers, objects that do not decode
 *   kube_call.c    operations on a loop (kop) and the synchronous forms
 *   kube_crud.c    get, create/apply, update spec and status, set one
 *                  annotation, delete, purge
 *   kube_list.c    lists in pages
 *   kube_fin.c     the controller's finalizer
 *   kube_watch.c   the watch (a stream of kube_http)
 *   kube_name.c    the controller name on the CRD
 *   kube_members.c the member Leases of --shards auto (members_int.h)
 *
 * Ownership: a kube_store is the backend's store (store.h); it owns its
 * connection, both kube_http clients, its operations in flight (kop) and
 * its watches, all freed by store_close(). A kop is owned by the store's
 * list k->ops from kop_new() to kop_free(); kop_finish() calls the
 * caller's callback once and frees it.
 */
#ifndef SC_STORE_KUBE_INT_H
#define SC_STORE_KUBE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>
#include "controller/store/backend.h"
#include "controller/kubeclient/config.h"
#include "controller/kubeclient/http.h"

#define GROUP_PATH "/apis/lea.io/v1alpha1"
#define FINALIZER "lea.io/sandbox-cleanup"
#define RESP_MAX (64 * 1024 * 1024)
#define LINE_MAX_ (4 * 1024 * 1024)
#define KJSON_DEPTH 64          /* levels of a body (managedFields nest) */
/* lists are read in pages (limit + continue, as client-go's pager):
 * PAGE_LIMIT objects per page, fewer when a page body passes PAGE_BYTES
 * (the limit is divided by 4 and the page asked again, down to 1, whose
 * cap is RESP_MAX), so a list of any length holds one page body at a
 * time; its objects are decoded as they come */
#define PAGE_LIMIT 500
#define PAGE_BYTES (8 * 1024 * 1024)
#define PAGES_MAX 100000        /* pages followed by one list */
#define LIST_ITEMS_MAX 1000000  /* objects in one list */
#define CONTINUE_MAX 600        /* bytes of a continue token */
#define RELISTS_MAX 3           /* 410 on a continue: relists per list */
#define MARK_MSG_MAX 900        /* bytes of the InvalidObject message */
/* each call: 4 more attempts after a 429, a 5xx or a lost connection,
 * waiting 100 ms doubling or the server's Retry-After (at most 5 s,
 * KUBE_HTTP_RETRY_AFTER_MAX_MS) on a timer of the loop */
#define RETRIES 4
#define CALL_TIMEOUT_MS 30000
#define WATCH_BACKOFF_MAX_MS 30000

typedef struct kube_watch kube_watch;
typedef struct kop kop;

typedef struct kube_store {
  store base;
  kube_conn conn;
  char *ns;                /* list/watch filter; NULL = all */
  int watch_timeout_s;
  struct event_base *evbase;
  kube_http *http;         /* the controller's calls and watches, on evbase */
  struct event_base *sbase;/* the private loop of the synchronous calls */
  kube_http *shttp;        /* the synchronous calls, on sbase */
  kop *ops;                /* operations in flight (both loops) */
  size_t n_ops;            /* of them, the callers' (not sub-operations) */
  kube_watch *watches;
  /* the backoff of the last failed watch request, 0 once a watch got
   * its 200: a watch started after a failure (the reconciler stops a
   * failed watch and starts a new one) waits this long, so a server
   * failing every watch is not asked again in a tight loop */
  int watch_backoff_ms;
  int watch_retry_after_ms;  /* the server's last Retry-After on a watch */
  bool mark_invalid;       /* store_open_opts.mark_invalid */
  int page_limit;          /* objects asked per list page (adapts) */
  char why[160];           /* why the last 2xx body is not JSON */
  /* kube_members.c: the member Leases (store/members.h) */
  char *mgroup, *mns;      /* their label value (--name), namespace */
  char mwhere[400];        /* where they are, for messages */
  struct kmop *mops;       /* member calls in flight */
  char *mself;             /* the member whose Lease version is mrv */
  char mrv[64];
  int64_t mbeat;           /* the last lea.io/member-beat written */
} kube_store;

/* --- kube_decode.c --- */

/* the message of a Status body, or "" */
const char *kstore_status_msg(json_object *o);
/* Parse a body strictly (RFC 8259, UTF-8 checked, at most KJSON_DEPTH
 * levels, nothing after the value but white space, no raw NUL); why says
 * what is wrong. */
sc_err kstore_json_parse(const char *body, size_t len, json_object **out,
                         char *why, size_t whylen);
/* One object of the API server checked and decoded (at most
 * STORE_OBJECT_MAX bytes, numbers in range, a Session the strict decoder
 * takes, a usable key and a resourceVersion); why (no prefix) says what
 * is wrong. SC_ERR_PROTOCOL or SC_ERR_NOMEM. */
sc_err kstore_obj_decode(json_object *o, session **out, char *why,
                         size_t whylen);
/* The same with a message "kube: WHAT does not decode: WHY". */
sc_err kstore_decode(json_object *o, const char *what, session **out,
                     sc_errbuf *eb);
/* *r = *res with a 2xx body parsed strictly (the calls ask kube_http for
 * it raw); *own is the caller's to put; k->why says why it is not JSON. */
void kstore_strict_body(kube_store *k, const kube_http_result *res,
                        kube_http_result *r, json_object **own);
/* The error no status code of the operation explains (no answer, 429/5xx
 * after the retries, 401, 403, a 2xx body not JSON); SC_OK otherwise. */
sc_err kstore_reply_err(const kube_store *k, const kube_http_result *res,
                        const char *method, const char *path,
                        sc_errbuf *eb);
/* The error of HTTP status code for op on ns/name: 404 SC_ERR_NOT_FOUND,
 * 409 SC_ERR_EXISTS (AlreadyExists) or SC_ERR_CONFLICT, ... */
sc_err kstore_http_err(long code, json_object *resp, const char *op,
                       const char *ns, const char *name, sc_errbuf *eb);
/* GROUP_PATH/namespaces/NS/sessions[/NAME][SUB], escaped */
void kstore_obj_path(char *buf, size_t len, const char *ns,
                     const char *name, const char *sub);
bool kstore_has_finalizer(const session *s);
/* the JSON of part key ("spec") of s's encoding (inside *whole, the
 * caller's to put), or NULL */
json_object *kstore_part_of(const session *s, const char *key,
                            json_object **whole);
void kstore_set_or_del(json_object *o, const char *key, json_object *v);
/* the merge patch of metadata.finalizers with (add) or without ours,
 * guarded by s's resourceVersion; the caller frees it; NULL: no memory */
char *kstore_finalizer_patch(const session *s, bool add);
/* One object of an answer did not decode (why): reported
 * (store_skip_report) and, with mark_invalid, marked InvalidObject. */
sc_err kstore_skip_obj(kube_store *k, store_list_result *res,
                       const char *where, json_object *raw,
                       const char *what, const char *why);

/* --- kube_call.c: operations on a loop ---
 *
 * list, get, update status, purge and the finalizer are small state
 * machines on kube_http: the controller's on its event loop (k->http),
 * sessionctl's the same on the private loop run until they end
 * (k->shttp). A kop holds one operation; its step is what the next
 * answer is for. */

typedef void (*kop_step)(kop *o, const kube_http_result *res);

struct kop {
  kube_store *k;
  kube_http *h;
  kop_step step;
  const char *method;      /* of the request in flight, for messages */
  char path[2048];
  char *ns, *name, *version;
  store_reply_cb cb;       /* the caller's */
  void *ud;
  bool include_deleted;
  session *cur;            /* get, purge: the object */
  store_list_result list;  /* list */
  char base[600];          /* list: the path without the query */
  char *cont;              /* list: the continue token of the next page */
  int limit;               /* list: objects asked per page */
  size_t pages;            /* list: pages read */
  int relists;             /* list: relists after a 410 on a continue */
  bool whole;              /* list: of every namespace the store sees */
  sc_err err;
  sc_errbuf eb;
  char *new_version;
  kop *next;               /* k->ops */
};

/* every call: CALL_TIMEOUT_MS, RESP_MAX, RETRIES, the 2xx body raw */
extern const kube_http_opts kstore_call_opts;

/* One synchronous call on the private loop: *code the HTTP status, *resp
 * the parsed body (NULL when empty; the caller puts it). */
sc_err kstore_sync_call(kube_store *k, const char *method, const char *path,
                        const char *ctype, const char *body, long *code,
                        json_object **resp, sc_errbuf *eb);

kop *kop_new(kube_store *k, kube_http *h, store_reply_cb cb,
             void *ud);
void kop_free(kop *o);
/* a new root operation *out on ns/name/version (copied); SC_ERR_INVALID
 * when h is NULL (no loop) */
sc_err kop_root(kube_store *k, kube_http *h, const char *ns,
                const char *name, const char *version, store_reply_cb cb,
                void *ud, kop **out, sc_errbuf *eb);
/* send o's request to o->path; step gets the answer (strictly parsed) */
sc_err kop_send_ex(kop *o, const char *method, const char *ctype,
                   const char *body, const kube_http_opts *ho, kop_step step,
                   sc_errbuf *eb);
sc_err kop_send(kop *o, const char *method, const char *ctype,
                const char *body, kop_step step, sc_errbuf *eb);
/* decode an answer of o's request, the message naming the request */
sc_err kop_decode(kop *o, json_object *j, const char *what, session **out);
/* the end: the caller's callback (o->cur, o->list, o->new_version handed
 * over on SC_OK) then o freed; or the parent's turn (a sub-operation) */
void kop_finish(kop *o, sc_err err);
/* the first error of an operation wins */
void kop_error(kop *o, sc_err err, const char *msg);

/* the synchronous forms: an operation started on k->shttp, waited for */
typedef struct ksync {
  bool done;
  store_reply rep;
  sc_errbuf eb;
} ksync;
void ksync_on_reply(store_reply *rep, void *ud);
/* wait for the operation started (err == SC_OK) into w */
sc_err ksync_wait(kube_store *k, ksync *w, sc_err err, sc_errbuf *eb);

/* --- kube_crud.c, kube_list.c: the store ops --- */

sc_err kstore_get_start(kube_store *k, kube_http *h, const char *ns,
                        const char *name, store_reply_cb cb, void *ud,
                        sc_errbuf *eb);
sc_err kstore_list_start(kube_store *k, kube_http *h,
                         const store_list_opts *opts, store_reply_cb cb,
                         void *ud, sc_errbuf *eb);
sc_err kstore_list(store *st, const store_list_opts *opts,
                   store_list_result *out, sc_errbuf *eb);
sc_err kstore_get(store *st, const char *ns, const char *name,
                  session **out, sc_errbuf *eb);
sc_err kstore_apply(store *st, session *const *objs, size_t n,
                    store_apply_outcome *outcomes, sc_errbuf *eb);
sc_err kstore_update_spec(store *st, const char *ns, const char *name,
                          const char *expected_version,
                          const session_spec *spec, char **new_version,
                          sc_errbuf *eb);
sc_err kstore_update_status(store *st, const char *ns, const char *name,
                            const char *expected_version,
                            const session_status *status,
                            char **new_version, sc_errbuf *eb);
sc_err kstore_delete(store *st, const char *ns, const char *name,
                     sc_errbuf *eb);
sc_err kstore_purge(store *st, const char *ns, const char *name,
                    const char *expected_version, sc_errbuf *eb);
sc_err kstore_set_annotation(store *st, const char *ns, const char *name,
                             const char *expected_version, const char *key,
                             const char *value, char **new_version,
                             sc_errbuf *eb);
sc_err kstore_list_async(store *st, const store_list_opts *opts,
                         store_reply_cb cb, void *ud, sc_errbuf *eb);
sc_err kstore_get_async(store *st, const char *ns, const char *name,
                        store_reply_cb cb, void *ud, sc_errbuf *eb);
sc_err kstore_update_status_async(store *st, const char *ns,
                                  const char *name,
                                  const char *expected_version,
                                  const session_status *status,
                                  store_reply_cb cb, void *ud,
                                  sc_errbuf *eb);
sc_err kstore_purge_async(store *st, const char *ns, const char *name,
                          const char *expected_version, store_reply_cb cb,
                          void *ud, sc_errbuf *eb);
size_t kstore_async_inflight(const store *st);

/* --- kube_fin.c --- */

/* store_needs_finalizer / store_ensure_finalizer_async */
bool kstore_needs_finalizer(const store *st, const session *s);
sc_err kstore_ensure_finalizer_async(store *st, const session *s,
                                     store_reply_cb cb, void *ud,
                                     sc_errbuf *eb);

/* --- kube_members.c (the rest in members_int.h) --- */

/* store_close(): every member call, without callbacks */
void km_free_all(kube_store *k);

/* --- kube_watch.c --- */

sc_err kstore_watch_start(store *st, const char *from_revision,
                          store_watch_cb cb, store_watch_err_cb err_cb,
                          void *ud, store_watch **out, sc_errbuf *eb);
void kstore_watch_stop(store_watch *sw);
/* store_close(): every watch, without callbacks */
void kstore_watch_free_all(kube_store *k);

#endif
