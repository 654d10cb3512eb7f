/*
 * kf_server.h - the inside of kube-apiserver-fake (kf.h is its outside):
 * the server's state and the functions its files share. One concern a
 * file:
 *   kf_server.c     the server: accept, authenticate, held (delayed)
 *                   requests, dispatch; kf_server_new/free
 *   kf_http.c       replies (JSON, Status), request bodies, URL routing
 *   kf_store.c      objects, resourceVersions and the watch history
 *   kf_rest.c       the verbs on a resource: get, create, update, patch
 *                   (merge), delete, the status subresource, the schema
 *   kf_list.c       lists (chunked) and Tables
 *   kf_watch.c      watches: replay from history, events, bookmarks
 *   kf_discovery.c  /version, /api, /apis, /openapi
 *   kf_admin.c      the /_fake/ endpoints: faults, the request log,
 *                   compaction
 *
 * Ownership: a kf_server owns its objects (kf_obj.o, ns, name), its
 * history (kf_hist ns and json), its watches and held requests, and its
 * request log; all are freed by kf_server_free(). Functions here borrow
 * what they are given unless they say otherwise; JSON getters (kf_json.h,
 * kf_sessions_crd) return borrowed pointers.
 */
#ifndef KF_SERVER_H
#define KF_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>
#include <event2/http.h>
#include "cmd/kube-apiserver-fake/kf.h"
#include "cmd/kube-apiserver-fake/kf_json.h"
#include "lib/sc_err.h"

struct evkeyvalq;

#define KF_BODY_MAX (4 * 1024 * 1024)
#define KF_REQLOG_MAX 4096      /* request lines kept for /_fake/requests */
#define KF_FAULTS_MAX 16        /* rules of /_fake/faults */

typedef struct kf_res {
  const char *group;   /* "" = core */
  const char *version;
  const char *plural;
  const char *kind;
  bool status_sub;     /* has the /status subresource */
  bool namespaced;     /* false: cluster-scoped (objects have ns "") */
} kf_res;

/* the resources served, indexes of kf_resources[] */
enum { KF_RES_SESSIONS, KF_RES_EVENTS, KF_RES_LEASES, KF_RES_CRDS, KF_N_RES };
extern const kf_res kf_resources[KF_N_RES];

/* ?fieldValidation= of a write (the API server's default is Warn) */
enum { KF_FV_WARN, KF_FV_STRICT, KF_FV_IGNORE, KF_FV_BAD };

typedef struct kf_obj {
  int res;
  char *ns, *name;
  json_object *o;
} kf_obj;

typedef struct kf_hist {
  int64_t rv;
  int res;
  char *ns;
  const char *type;
  char *json;          /* the object at rv */
} kf_hist;

/* an injected failure (POST /_fake/faults) */
typedef struct kf_fault {
  int status;          /* the HTTP status to answer with; 0 = delay only */
  int delay_ms;        /* answer this much later; 0 = at once */
  int count;           /* requests left to fail; -1 = until cleared */
  int retry_after;     /* Retry-After seconds; -1 = no header */
  int watch;           /* 1 = watches only, 0 = not watches, -1 = both */
  char method[8];      /* "" = any */
  char path[256];      /* a prefix of the URL path; "" = any API path */
} kf_fault;

/* one line of /_fake/requests */
typedef struct kf_reqlog {
  int64_t t_ms;        /* monotonic ms since the server started */
  char *line;          /* "METHOD PATH USER-AGENT" */
  char *query;         /* the query string or NULL */
  int fault;           /* the injected status, 0 = none */
  char user[64];       /* who: a client certificate's CN, "token", "" */
  char *dropped;       /* unknown fields the CRD's schema dropped from the
                        * write (Warn/Ignore), one path a line; or NULL */
} kf_reqlog;

/* ?fieldSelector= of a list or a watch: the field selectors the API
 * server supports for every resource, metadata.name and
 * metadata.namespace, with =, == or !=, terms joined by commas (kubectl
 * wait asks for metadata.name=NAME) */
#define KF_FSEL_MAX 8
typedef struct kf_fsel_term {
  bool ns;             /* metadata.namespace, else metadata.name */
  bool neg;            /* != */
  char value[256];
} kf_fsel_term;
typedef struct kf_fsel {
  kf_fsel_term t[KF_FSEL_MAX];
  size_t n;            /* 0: every object */
} kf_fsel;

/* ?labelSelector= of a list: the equality-based requirements of the
 * API's label selectors (KEY=V, KEY==V, KEY!=V, KEY, !KEY), joined by
 * commas; the set-based ones (in, notin) are refused as unsupported by
 * the fake */
#define KF_LSEL_MAX 8
enum { KF_LSEL_EQ, KF_LSEL_NE, KF_LSEL_EXISTS, KF_LSEL_ABSENT };
typedef struct kf_lsel_term {
  int op;              /* KF_LSEL_* */
  char key[320];
  char value[64];
} kf_lsel_term;
typedef struct kf_lsel {
  kf_lsel_term t[KF_LSEL_MAX];
  size_t n;            /* 0: every object */
} kf_lsel;

typedef struct kf_watch kf_watch;
struct kf_watch {
  kf_server *s;
  struct evhttp_request *req;
  struct evhttp_connection *conn;
  int res;
  char *ns;            /* NULL = all */
  bool bookmarks;
  bool table;          /* each event's object is a Table (kubectl -w) */
  kf_fsel fsel;        /* only the objects it selects */
  int64_t sent_rv;
  struct event *timeout, *bookmark;
  kf_watch *next;
};

struct kf_server {
  struct event_base *base;
  struct evhttp *http;
  kf_opts o;
  int64_t rv;
  kf_obj *objs;
  size_t n_objs, cap_objs;
  kf_hist *hist;       /* ring of o.history_keep */
  size_t hist_start, hist_n;
  int64_t compacted;   /* history holds compacted+1 .. rv */
  kf_watch *watches;
  kf_fault faults[KF_FAULTS_MAX]; /* /_fake/faults (and /_fake/fail) */
  size_t n_faults;
  int64_t requests;
  int64_t started_ms;  /* monotonic */
  kf_reqlog reqlog[KF_REQLOG_MAX];  /* ring */
  size_t reqlog_start, reqlog_n;
  struct kf_delayed *delayed;    /* requests held by a delayMs rule */
  kf_reqlog *cur_log;  /* the log entry of the request being served (not
                        * for delayed ones), for apply_schema */
};

/* a request held by a delayMs fault: answered when its timer fires (the
 * client is expected to wait: a fake for tests, not a server) */
typedef struct kf_delayed {
  kf_server *s;
  struct evhttp_request *req;
  struct event *ev;
  int status;          /* then fail with it; 0 = serve normally */
  int retry_after;
  struct kf_delayed *next;
} kf_delayed;

typedef struct kf_route {
  int res;             /* -1 = not a resource path */
  char ns[256];        /* "" = all namespaces */
  char name[256];
  bool status;
  bool watch;
  bool table;
  bool bookmarks;
  char rv[32];
  long timeout_s;
  int fv;              /* KF_FV_* */
  char fv_text[32];    /* as given, for the error of a bad one */
  bool dry_run;        /* ?dryRun= given (refused: not modelled) */
  long limit;          /* list: ?limit= (0 = all) */
  char cont[600];      /* list: ?continue= */
  kf_fsel fsel;        /* list, watch: ?fieldSelector= */
  char fsel_err[400];  /* why ?fieldSelector= was refused; "" = fine */
  kf_lsel lsel;        /* list: ?labelSelector= */
  char lsel_err[400];  /* why ?labelSelector= was refused; "" = fine */
} kf_route;

/* --- kf_http.c: replies, bodies, routing --- */
void kf_reply_json(struct evhttp_request *req, int code, json_object *o);
/* a new Status object (the caller puts it) */
json_object *kf_status_obj(int code, const char *reason, const char *msg);
void kf_reply_status(struct evhttp_request *req, int code,
                     const char *reason, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
/* t: JSON text */
void kf_reply_text(struct evhttp_request *req, int code, const char *t);
/* The request body as JSON (*out owned by the caller): SC_ERR_TOO_LARGE
 * past KF_BODY_MAX, SC_ERR_INVALID when it is not one JSON document. */
sc_err kf_read_body(struct evhttp_request *req, json_object **out);
const char *kf_qget(struct evkeyvalq *q, const char *k);
/* false when the URL is not a resource path */
bool kf_parse_route(struct evhttp_request *req, kf_route *rt);
/* does f select the object ns/name (ns "" for a cluster-scoped one)? */
bool kf_fsel_match(const kf_fsel *f, const char *ns, const char *name);
/* does l select an object with these metadata.labels (NULL: none)? */
bool kf_lsel_match(const kf_lsel *l, json_object *labels);
const char *kf_method_name(enum evhttp_cmd_type c);

/* --- kf_store.c: objects, revisions, history --- */
/* o's metadata, added when missing */
json_object *kf_meta_of(json_object *o);
void kf_now_rfc3339(char *buf, size_t len);
void kf_new_uid(char *buf, size_t len);
bool kf_has_finalizers(json_object *o);
kf_obj *kf_find_obj(kf_server *s, int res, const char *ns,
                    const char *name);
void kf_remove_obj(kf_server *s, kf_obj *ob);
/* a new resourceVersion for ob, recorded in the history and sent to the
 * watches of its resource and namespace as an event of type */
void kf_bump_and_record(kf_server *s, kf_obj *ob, const char *type);
/* forget the history: watches from before now get 410 Gone */
void kf_store_compact(kf_server *s);
/* free the objects and the history (kf_server_free) */
void kf_store_free(kf_server *s);
/* the stored sessions.lea.io CRD or NULL */
json_object *kf_sessions_crd(kf_server *s);
bool kf_parse_rv(const char *s, int64_t *out);

/* --- kf_rest.c, kf_list.c, kf_watch.c, kf_discovery.c --- */
void kf_serve_resource(kf_server *s, struct evhttp_request *req,
                       const kf_route *rt);
void kf_serve_list(kf_server *s, struct evhttp_request *req,
                   const kf_route *rt);
/* a Table (new, the caller puts it) of v[0..n) of resource res */
json_object *kf_table_of(kf_server *s, int res, json_object **v, size_t n);
void kf_serve_watch(kf_server *s, struct evhttp_request *req,
                    const kf_route *rt);
/* an event of object o (or its JSON text txt; one may be NULL) on w */
void kf_watch_send_obj(kf_watch *w, const char *type, json_object *o,
                       const char *txt);
/* end w's reply and free w */
void kf_watch_end(kf_watch *w);
void kf_serve_discovery(kf_server *s, struct evhttp_request *req,
                        const char *path);

/* --- kf_admin.c: /_fake/ --- */
void kf_serve_admin(kf_server *s, struct evhttp_request *req,
                    const char *path);
/* the first live fault rule matching req, its count taken; NULL = none */
const kf_fault *kf_fault_take(kf_server *s, struct evhttp_request *req,
                              const char *path);
void kf_reply_fault(struct evhttp_request *req, int status, int retry_after);
/* a new /_fake/requests entry for req (owned by s), or NULL */
kf_reqlog *kf_log_request(kf_server *s, struct evhttp_request *req,
                          const char *path);
void kf_reqlog_clear(kf_server *s);

#endif
