/* kf_server.c - the fake API server's routes, objects, history and
 * watches (see kf.h and docs/kube-apiserver-fake.md). */
#include "cmd/kube-apiserver-fake/kf.h"

#include <errno.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <sys/queue.h>
#include <event2/keyvalq_struct.h>
#include <openssl/rand.h>
#include "cmd/kube-apiserver-fake/kf_crd.h"
#include "cmd/kube-apiserver-fake/kf_schema.h"
#include "lib/dynbuf.h"
#include "lib/sc_err.h"
#include "lib/sctime.h"

#define BODY_MAX (4 * 1024 * 1024)
#define REQLOG_MAX 4096      /* request lines kept for /_fake/requests */
#define FAULTS_MAX 16        /* rules of /_fake/faults */

typedef struct kf_res {
  const char *group;   /* "" = core */
  const char *version;
  const char *plural;
  const char *kind;
  bool status_sub;     /* has the /status subresource */
  bool namespaced;     /* false: cluster-scoped (objects have ns "") */
} kf_res;

enum { RES_SESSIONS, RES_EVENTS, RES_LEASES, RES_CRDS };
static const kf_res resources[] = {
  {"lea.io", "v1alpha1", "sessions", "Session", true, true},
  {"", "v1", "events", "Event", false, true},
  {"coordination.k8s.io", "v1", "leases", "Lease", false, true},
  {"apiextensions.k8s.io", "v1", "customresourcedefinitions",
   "CustomResourceDefinition", true, false},
};
#define N_RES (sizeof(resources) / sizeof(resources[0]))

/* ?fieldValidation= of a write (the API server's default is Warn) */
enum { FV_WARN, FV_STRICT, FV_IGNORE, FV_BAD };

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

typedef struct kf_watch kf_watch;
struct kf_watch {
  kf_server *s;
  struct evhttp_request *req;
  struct evhttp_connection *conn;
  int res;
  char *ns;            /* NULL = all */
  bool bookmarks;
  bool table;          /* each event's object is a Table (kubectl -w) */
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
  kf_fault faults[FAULTS_MAX]; /* /_fake/faults (and /_fake/fail) */
  size_t n_faults;
  int64_t requests;
  int64_t started_ms;  /* monotonic */
  kf_reqlog reqlog[REQLOG_MAX];  /* ring */
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

/* ------------------------------------------------------------------ */
/* replies */

static void reply_json(struct evhttp_request *req, int code,
                       json_object *o)
{
  struct evbuffer *b = evbuffer_new();
  const char *txt = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
  evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                    "application/json");
  evbuffer_add(b, txt, strlen(txt));
  evbuffer_add(b, "\n", 1);
  evhttp_send_reply(req, code, code < 300 ? "OK" : "Error", b);
  evbuffer_free(b);
}

static json_object *status_obj(int code, const char *reason,
                               const char *msg)
{
  json_object *o = json_object_new_object();
  json_object_object_add(o, "kind", json_object_new_string("Status"));
  json_object_object_add(o, "apiVersion", json_object_new_string("v1"));
  json_object_object_add(o, "metadata", json_object_new_object());
  json_object_object_add(o, "status", json_object_new_string("Failure"));
  json_object_object_add(o, "message", json_object_new_string(msg));
  json_object_object_add(o, "reason", json_object_new_string(reason));
  json_object_object_add(o, "code", json_object_new_int(code));
  return o;
}

static void reply_status(struct evhttp_request *req, int code,
                         const char *reason, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
static void reply_status(struct evhttp_request *req, int code,
                         const char *reason, const char *fmt, ...)
{
  char msg[600];
  va_list ap;
  json_object *o;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  o = status_obj(code, reason, msg);
  reply_json(req, code, o);
  json_object_put(o);
}

/* t: JSON text */
static void reply_text(struct evhttp_request *req, int code, const char *t)
{
  struct evbuffer *b = evbuffer_new();
  evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                    "application/json");
  evbuffer_add(b, t, strlen(t));
  evhttp_send_reply(req, code, "OK", b);
  evbuffer_free(b);
}

/* ------------------------------------------------------------------ */
/* helpers on objects */

static const char *jstr(json_object *o, const char *k)
{
  json_object *v;
  if(o && json_object_object_get_ex(o, k, &v) &&
     json_object_is_type(v, json_type_string))
    return json_object_get_string(v);
  return NULL;
}

static json_object *jobj(json_object *o, const char *k)
{
  json_object *v;
  if(o && json_object_object_get_ex(o, k, &v) &&
     json_object_is_type(v, json_type_object))
    return v;
  return NULL;
}

static json_object *meta_of(json_object *o)
{
  json_object *m = jobj(o, "metadata");
  if(!m) {
    m = json_object_new_object();
    json_object_object_add(o, "metadata", m);
  }
  return m;
}

static void set_str(json_object *o, const char *k, const char *v)
{
  json_object_object_add(o, k, json_object_new_string(v));
}

static void now_rfc3339(char *buf, size_t len)
{
  sctime_format_rfc3339(sctime_wall_ms() / 1000 * 1000, buf, len);
}

static void new_uid(char *buf, size_t len)
{
  unsigned char b[16];
  if(RAND_bytes(b, sizeof(b)) != 1)
    memset(b, 7, sizeof(b));
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
  snprintf(buf, len, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
           "%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5],
           b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static bool has_finalizers(json_object *o)
{
  json_object *f;
  return json_object_object_get_ex(meta_of(o), "finalizers", &f) &&
         json_object_is_type(f, json_type_array) &&
         json_object_array_length(f) > 0;
}

static kf_obj *find_obj(kf_server *s, int res, const char *ns,
                        const char *name)
{
  size_t i;
  for(i = 0; i < s->n_objs; i++)
    if(s->objs[i].res == res && !strcmp(s->objs[i].ns, ns) &&
       !strcmp(s->objs[i].name, name))
      return &s->objs[i];
  return NULL;
}

static void remove_obj(kf_server *s, kf_obj *ob)
{
  size_t i = (size_t)(ob - s->objs);
  free(ob->ns);
  free(ob->name);
  json_object_put(ob->o);
  memmove(&s->objs[i], &s->objs[i + 1],
          (s->n_objs - i - 1) * sizeof(*s->objs));
  s->n_objs--;
}

/* ------------------------------------------------------------------ */
/* history and watches */

static void watch_end(kf_watch *w);
static const char *method_name(enum evhttp_cmd_type c);

static void watch_send(kf_watch *w, const char *type, const char *objjson)
{
  struct evbuffer *b = evbuffer_new();
  evbuffer_add_printf(b, "{\"type\":\"%s\",\"object\":%s}\n", type, objjson);
  evhttp_send_reply_chunk(w->req, b);
  evbuffer_free(b);
}

static json_object *table_of(kf_server *s, int res, json_object **v,
                             size_t n);

/* an event of object o (its JSON text: txt; either may be NULL, not
 * both): as it is, or as a Table of one row on a Table watch */
static void watch_send_obj(kf_watch *w, const char *type, json_object *o,
                           const char *txt)
{
  json_object *parsed = NULL, *t;
  if(!w->table) {
    watch_send(w, type, txt ? txt :
               json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    return;
  }
  if(!o)
    o = parsed = json_tokener_parse(txt);
  t = table_of(w->s, w->res, &o, o ? 1 : 0);
  watch_send(w, type, json_object_to_json_string_ext(t,
                                                     JSON_C_TO_STRING_PLAIN));
  json_object_put(t);
  json_object_put(parsed);
}

static void bump_and_record(kf_server *s, kf_obj *ob, const char *type)
{
  char rv[32];
  kf_hist *h;
  size_t keep = (size_t)s->o.history_keep;
  kf_watch *w;
  const char *txt;
  s->rv++;
  snprintf(rv, sizeof(rv), "%" PRId64, s->rv);
  set_str(meta_of(ob->o), "resourceVersion", rv);
  txt = json_object_to_json_string_ext(ob->o, JSON_C_TO_STRING_PLAIN);
  if(s->hist_n == keep) {
    h = &s->hist[s->hist_start];
    s->compacted = h->rv;
    free(h->ns);
    free(h->json);
    s->hist_start = (s->hist_start + 1) % keep;
    s->hist_n--;
  }
  h = &s->hist[(s->hist_start + s->hist_n) % keep];
  s->hist_n++;
  h->rv = s->rv;
  h->res = ob->res;
  h->ns = strdup(ob->ns);
  h->type = type;
  h->json = strdup(txt);
  for(w = s->watches; w; w = w->next)
    if(w->res == ob->res && (!w->ns || !strcmp(w->ns, ob->ns))) {
      watch_send_obj(w, type, ob->o, txt);
      w->sent_rv = s->rv;
    }
}

static void watch_unlink(kf_watch *w)
{
  kf_watch **pp;
  for(pp = &w->s->watches; *pp; pp = &(*pp)->next)
    if(*pp == w) {
      *pp = w->next;
      break;
    }
  if(w->timeout)
    event_free(w->timeout);
  if(w->bookmark)
    event_free(w->bookmark);
  free(w->ns);
  free(w);
}

static void on_watch_conn_close(struct evhttp_connection *c, void *arg)
{
  kf_watch *w = arg;
  (void)c;
  /* a client that drops its watch leaves libevent a request whose reply
   * is still open: libevent detaches it from the connection and leaves
   * it to us; ending the reply of a detached request frees it (without
   * this, every dropped watch leaked its request) */
  if(!evhttp_request_get_connection(w->req))
    evhttp_send_reply_end(w->req);
  watch_unlink(w);
}

static void watch_end(kf_watch *w)
{
  evhttp_connection_set_closecb(w->conn, NULL, NULL);
  evhttp_send_reply_end(w->req);
  watch_unlink(w);
}

static void on_watch_timeout(evutil_socket_t fd, short what, void *arg)
{
  (void)fd;
  (void)what;
  watch_end(arg);
}

static void on_watch_bookmark(evutil_socket_t fd, short what, void *arg)
{
  kf_watch *w = arg;
  const kf_res *r = &resources[w->res];
  char buf[300];
  (void)fd;
  (void)what;
  snprintf(buf, sizeof(buf), "{\"kind\":\"%s\",\"apiVersion\":\"%s%s%s\","
           "\"metadata\":{\"resourceVersion\":\"%" PRId64 "\"}}", r->kind,
           r->group, *r->group ? "/" : "", r->version, w->s->rv);
  watch_send(w, "BOOKMARK", buf);
}

/* ------------------------------------------------------------------ */
/* request plumbing */

static sc_err read_body(struct evhttp_request *req, json_object **out)
{
  struct evbuffer *in = evhttp_request_get_input_buffer(req);
  size_t len = evbuffer_get_length(in);
  char *buf;
  json_tokener *tok;
  *out = NULL;
  if(len > BODY_MAX)
    return SC_ERR_TOO_LARGE;
  buf = malloc(len + 1);
  if(!buf)
    return SC_ERR_NOMEM;
  evbuffer_copyout(in, buf, len);
  buf[len] = 0;
  tok = json_tokener_new();
  *out = json_tokener_parse_ex(tok, buf, (int)len);
  if(json_tokener_get_error(tok) != json_tokener_success ||
     tok->char_offset != (int)len) {
    json_object_put(*out);
    *out = NULL;
  }
  json_tokener_free(tok);
  free(buf);
  return *out ? SC_OK : SC_ERR_INVALID;
}

static bool read_token(kf_server *s, char *buf, size_t len)
{
  FILE *f;
  size_t n;
  if(s->o.token) {
    snprintf(buf, len, "%s", s->o.token);
    return true;
  }
  if(!s->o.token_file)
    return false;
  f = fopen(s->o.token_file, "r");
  if(!f) {
    buf[0] = 0;
    return true; /* nothing matches */
  }
  n = fread(buf, 1, len - 1, f);
  fclose(f);
  buf[n] = 0;
  while(n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
    buf[--n] = 0;
  return true;
}

/* like an API server's authenticators: a verified client certificate
 * (with --client-ca) or the bearer token (with --token/--token-file);
 * nothing configured lets everyone in. *user: the certificate's CN,
 * "token" or "" */
static bool authorized(kf_server *s, struct evhttp_request *req,
                       char *user, size_t ulen)
{
  char tok[4096];
  const char *h;
  bool certs = s->o.bev && kf_tls_client_ca(s->o.bev_arg);
  user[0] = 0;
  if(certs && kf_tls_peer(req, user, ulen))
    return true;
  if(!read_token(s, tok, sizeof(tok)))
    return !certs;
  h = evhttp_find_header(evhttp_request_get_input_headers(req),
                         "Authorization");
  if(h && !strncmp(h, "Bearer ", 7) && tok[0] && !strcmp(h + 7, tok)) {
    snprintf(user, ulen, "token");
    return true;
  }
  return false;
}

/* the parsed URL: /api/v1/... or /apis/G/V/... */
typedef struct route {
  int res;             /* -1 = not a resource path */
  char ns[256];        /* "" = all namespaces */
  char name[256];
  bool status;
  bool watch;
  bool table;
  bool bookmarks;
  char rv[32];
  long timeout_s;
  int fv;              /* FV_* */
  char fv_text[32];    /* as given, for the error of a bad one */
  bool dry_run;        /* ?dryRun= given (refused: not modelled) */
  long limit;          /* list: ?limit= (0 = all) */
  char cont[600];      /* list: ?continue= */
} route;

static int split(char *path, char **seg, int max)
{
  int n = 0;
  char *p = path, *save = NULL, *t;
  while((t = strtok_r(p, "/", &save)) && n < max) {
    seg[n++] = t;
    p = NULL;
  }
  return n;
}

static const char *qget(struct evkeyvalq *q, const char *k)
{
  return evhttp_find_header(q, k);
}

static bool parse_route(struct evhttp_request *req, route *rt)
{
  const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
  const char *path = evhttp_uri_get_path(u), *query = evhttp_uri_get_query(u);
  char pbuf[1024], *seg[12];
  int n, i = 0, r;
  const char *group = "", *version;
  struct evkeyvalq q;
  const char *v, *accept;
  memset(rt, 0, sizeof(*rt));
  rt->res = -1;
  if(!path || strlen(path) >= sizeof(pbuf))
    return false;
  snprintf(pbuf, sizeof(pbuf), "%s", path);
  n = split(pbuf, seg, 12);
  if(n >= 3 && !strcmp(seg[0], "api")) {
    version = seg[1];
    i = 2;
  }
  else if(n >= 4 && !strcmp(seg[0], "apis")) {
    group = seg[1];
    version = seg[2];
    i = 3;
  }
  else
    return false;
  if(n - i >= 2 && !strcmp(seg[i], "namespaces")) {
    snprintf(rt->ns, sizeof(rt->ns), "%s", seg[i + 1]);
    i += 2;
  }
  if(i >= n)
    return false;
  for(r = 0; r < (int)N_RES; r++)
    if(!strcmp(resources[r].group, group) &&
       !strcmp(resources[r].version, version) &&
       !strcmp(resources[r].plural, seg[i]))
      rt->res = r;
  if(rt->res < 0 || (rt->ns[0] && !resources[rt->res].namespaced))
    return false;
  i++;
  if(i < n) {
    if(!rt->ns[0] && resources[rt->res].namespaced)
      return false;
    snprintf(rt->name, sizeof(rt->name), "%s", seg[i++]);
  }
  if(i < n) {
    if(strcmp(seg[i], "status") || !resources[rt->res].status_sub)
      return false;
    rt->status = true;
    i++;
  }
  if(i != n)
    return false;
  TAILQ_INIT(&q);
  if(query && evhttp_parse_query_str(query, &q) == 0) {
    v = qget(&q, "watch");
    rt->watch = v && (!strcmp(v, "1") || !strcmp(v, "true"));
    v = qget(&q, "allowWatchBookmarks");
    rt->bookmarks = v && (!strcmp(v, "1") || !strcmp(v, "true"));
    v = qget(&q, "resourceVersion");
    if(v)
      snprintf(rt->rv, sizeof(rt->rv), "%s", v);
    v = qget(&q, "timeoutSeconds");
    if(v)
      rt->timeout_s = strtol(v, NULL, 10);
    rt->dry_run = qget(&q, "dryRun") != NULL;
    v = qget(&q, "limit");
    if(v)
      rt->limit = strtol(v, NULL, 10);
    v = qget(&q, "continue");
    if(v)
      snprintf(rt->cont, sizeof(rt->cont), "%s", v);
    v = qget(&q, "fieldValidation");
    if(v) {
      snprintf(rt->fv_text, sizeof(rt->fv_text), "%s", v);
      rt->fv = !strcmp(v, "Strict") ? FV_STRICT : !strcmp(v, "Warn") ?
               FV_WARN : !strcmp(v, "Ignore") ? FV_IGNORE : FV_BAD;
    }
  }
  evhttp_clear_headers(&q);
  accept = evhttp_find_header(evhttp_request_get_input_headers(req),
                              "Accept");
  rt->table = accept && strstr(accept, "as=Table");
  return true;
}

/* ------------------------------------------------------------------ */
/* discovery and OpenAPI */

/* the stored sessions.lea.io CRD (borrowed) or NULL */
static json_object *sessions_crd(kf_server *s)
{
  kf_obj *ob = find_obj(s, RES_CRDS, "", KF_CRD_NAME);
  return ob ? ob->o : NULL;
}

static json_object *str_array(const char *const *v)
{
  json_object *a = json_object_new_array();
  for(; *v; v++)
    json_object_array_add(a, json_object_new_string(*v));
  return a;
}

/* /apis/lea.io/v1alpha1: the names of the applied CRD (singular,
 * shortNames, categories), else the built-in ones */
static json_object *sessions_resource_list(kf_server *s)
{
  static const char *const verbs[] = {"delete", "deletecollection", "get",
                                      "list", "patch", "create", "update",
                                      "watch", NULL};
  static const char *const sverbs[] = {"get", "patch", "update", NULL};
  static const char *const shorts[] = {"sess", NULL};
  json_object *l = json_object_new_object(), *rs = json_object_new_array(),
    *r = json_object_new_object(), *st = json_object_new_object(), *v;
  json_object *names = kf_crd_names(sessions_crd(s));
  set_str(l, "kind", "APIResourceList");
  set_str(l, "apiVersion", "v1");
  set_str(l, "groupVersion", "lea.io/v1alpha1");
  set_str(r, "name", "sessions");
  set_str(r, "singularName", jstr(names, "singular") ?
          jstr(names, "singular") : "session");
  json_object_object_add(r, "namespaced", json_object_new_boolean(1));
  set_str(r, "kind", "Session");
  json_object_object_add(r, "verbs", str_array(verbs));
  if(names && json_object_object_get_ex(names, "shortNames", &v))
    json_object_object_add(r, "shortNames", json_object_get(v));
  else if(!names)
    json_object_object_add(r, "shortNames", str_array(shorts));
  if(names && json_object_object_get_ex(names, "categories", &v))
    json_object_object_add(r, "categories", json_object_get(v));
  json_object_array_add(rs, r);
  set_str(st, "name", "sessions/status");
  set_str(st, "singularName", "");
  json_object_object_add(st, "namespaced", json_object_new_boolean(1));
  set_str(st, "kind", "Session");
  json_object_object_add(st, "verbs", str_array(sverbs));
  json_object_array_add(rs, st);
  json_object_object_add(l, "resources", rs);
  return l;
}

/* FNV-1a of the document's text, as the ?hash= of /openapi/v3 (a new
 * CRD gives a new hash, so clients do not keep a stale copy) */
static void doc_hash(json_object *d, char *buf, size_t len)
{
  const unsigned char *p = (const unsigned char *)
    json_object_to_json_string_ext(d, JSON_C_TO_STRING_PLAIN);
  uint64_t h = 1469598103934665603ULL;
  for(; *p; p++) {
    h ^= *p;
    h *= 1099511628211ULL;
  }
  snprintf(buf, len, "%016" PRIX64, h);
}

static void add_doc_path(json_object *paths, const char *gv, json_object *d)
{
  json_object *e = json_object_new_object();
  char url[200], h[32];
  doc_hash(d, h, sizeof(h));
  snprintf(url, sizeof(url), "/openapi/v3/%s?hash=%s", gv, h);
  set_str(e, "serverRelativeURL", url);
  json_object_object_add(paths, gv, e);
}

/* /openapi/v3 (the index), /openapi/v3/GV, /openapi/v2; false when path
 * is none of them */
static bool serve_openapi(kf_server *s, struct evhttp_request *req,
                          const char *path)
{
  json_object *crd = sessions_crd(s), *d = NULL;
  if(!strcmp(path, "/openapi/v2")) {
    /* an OpenAPI v2 document (protobuf) without definitions: kubectl's
     * client-side validation, which it uses for `kind: List` files,
     * finds no schema there and leaves the checks to this server
     * (kubectl asks for fieldValidation=Strict on every write) */
    struct evbuffer *b = evbuffer_new();
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "application/com.github.proto-openapi.spec.v2"
                      ".v1.0+protobuf");
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
    return true;
  }
  if(!strcmp(path, "/openapi/v3")) {
    json_object *idx = json_object_new_object(),
      *paths = json_object_new_object();
    d = kf_openapi_crds();
    add_doc_path(paths, "apis/apiextensions.k8s.io/v1", d);
    json_object_put(d);
    if(crd) {
      d = kf_openapi_sessions(crd);
      add_doc_path(paths, "apis/lea.io/v1alpha1", d);
      json_object_put(d);
    }
    json_object_object_add(idx, "paths", paths);
    reply_json(req, 200, idx);
    json_object_put(idx);
    return true;
  }
  if(!strcmp(path, "/openapi/v3/apis/apiextensions.k8s.io/v1"))
    d = kf_openapi_crds();
  else if(!strcmp(path, "/openapi/v3/apis/lea.io/v1alpha1") && crd)
    d = kf_openapi_sessions(crd);
  else
    return false;
  reply_json(req, 200, d);
  json_object_put(d);
  return true;
}

static void serve_discovery(kf_server *s, struct evhttp_request *req,
                            const char *path)
{
  if(!strncmp(path, "/openapi/", 9) && serve_openapi(s, req, path))
    return;
  if(!strcmp(path, "/version")) {
    reply_text(req, 200, "{\"major\":\"1\",\"minor\":\"32\",\"gitVersion\":"
               "\"v1.32.0-fake\",\"platform\":\"linux/amd64\"}");
    return;
  }
  if(!strcmp(path, "/api")) {
    reply_text(req, 200, "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],"
               "\"serverAddressByClientCIDRs\":[{\"clientCIDR\":\"0.0.0.0/0\","
               "\"serverAddress\":\"127.0.0.1\"}]}");
    return;
  }
  if(!strcmp(path, "/api/v1")) {
    reply_text(req, 200, "{\"kind\":\"APIResourceList\",\"groupVersion\":"
               "\"v1\",\"resources\":[{\"name\":\"events\",\"singularName\":"
               "\"event\",\"namespaced\":true,\"kind\":\"Event\",\"verbs\":"
               "[\"create\",\"delete\",\"get\",\"list\",\"patch\",\"update\","
               "\"watch\"],\"shortNames\":[\"ev\"]}]}");
    return;
  }
  if(!strcmp(path, "/apis")) {
    reply_text(req, 200, "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\","
               "\"groups\":[{\"name\":\"lea.io\",\"versions\":[{"
               "\"groupVersion\":\"lea.io/v1alpha1\",\"version\":\"v1alpha1\"}"
               "],\"preferredVersion\":{\"groupVersion\":\"lea.io/v1alpha1\","
               "\"version\":\"v1alpha1\"}},{\"name\":\"coordination.k8s.io\","
               "\"versions\":[{\"groupVersion\":\"coordination.k8s.io/v1\","
               "\"version\":\"v1\"}],\"preferredVersion\":{\"groupVersion\":"
               "\"coordination.k8s.io/v1\",\"version\":\"v1\"}},{\"name\":"
               "\"apiextensions.k8s.io\",\"versions\":[{\"groupVersion\":"
               "\"apiextensions.k8s.io/v1\",\"version\":\"v1\"}],"
               "\"preferredVersion\":{\"groupVersion\":\"apiextensions.k8s.io/v1\","
               "\"version\":\"v1\"}}]}");
    return;
  }
  if(!strcmp(path, "/apis/lea.io/v1alpha1")) {
    json_object *l = sessions_resource_list(s);
    reply_json(req, 200, l);
    json_object_put(l);
    return;
  }
  if(!strcmp(path, "/apis/coordination.k8s.io/v1")) {
    reply_text(req, 200, "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\","
               "\"groupVersion\":\"coordination.k8s.io/v1\",\"resources\":[{"
               "\"name\":\"leases\",\"singularName\":\"lease\",\"namespaced\":"
               "true,\"kind\":\"Lease\",\"verbs\":[\"create\",\"delete\",\"get\","
               "\"list\",\"patch\",\"update\",\"watch\"]}]}");
    return;
  }
  if(!strcmp(path, "/apis/apiextensions.k8s.io/v1")) {
    reply_text(req, 200, "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\","
               "\"groupVersion\":\"apiextensions.k8s.io/v1\",\"resources\":[{"
               "\"name\":\"customresourcedefinitions\",\"singularName\":"
               "\"customresourcedefinition\",\"namespaced\":false,\"kind\":"
               "\"CustomResourceDefinition\",\"verbs\":[\"create\",\"delete\","
               "\"get\",\"list\",\"patch\",\"update\",\"watch\"],"
               "\"shortNames\":[\"crd\",\"crds\"]},{\"name\":"
               "\"customresourcedefinitions/status\",\"singularName\":\"\","
               "\"namespaced\":false,\"kind\":\"CustomResourceDefinition\","
               "\"verbs\":[\"get\",\"patch\",\"update\"]}]}");
    return;
  }
  reply_status(req, 404, "NotFound", "the server could not find the "
               "requested resource (%s)", path);
}

/* ------------------------------------------------------------------ */
/* list, table, watch */

static int cmp_obj(const void *a, const void *b)
{
  const kf_obj *x = *(kf_obj *const *)a, *y = *(kf_obj *const *)b;
  int c = strcmp(x->ns, y->ns);
  return c ? c : strcmp(x->name, y->name);
}

/* the built-in Table columns of each resource, as kubectl shows them
 * (sessions: until a CRD with additionalPrinterColumns is applied) */
static const char *const table_cols[N_RES][6] = {
  {"Name", "State", "Phase", "Sandbox", "Age", NULL},
  {"Last Seen", "Type", "Reason", "Object", "Message", NULL},
  {"Name", "Holder", "Age", NULL, NULL, NULL},
  {"Name", "Created At", NULL, NULL, NULL, NULL},
};

static void add_cell(json_object *cells, const char *v)
{
  json_object_array_add(cells, json_object_new_string(v ? v : ""));
}

static void age_of(const char *ts, char *age, size_t len)
{
  sc_time t0 = 0;
  snprintf(age, len, "<unknown>");
  if(ts && !sctime_parse_rfc3339(ts, &t0))
    sctime_format_age(sctime_wall_ms() - t0, age, len);
}

static void row_cells(int res, json_object *o, json_object *cells)
{
  json_object *spec = jobj(o, "spec"), *st = jobj(o, "status"),
    *m = jobj(o, "metadata");
  char age[32], obj[600];
  json_object *io;
  switch(res) {
  case RES_SESSIONS:
    add_cell(cells, jstr(m, "name"));
    add_cell(cells, jstr(spec, "state"));
    add_cell(cells, jstr(st, "phase"));
    add_cell(cells, jstr(st, "sandboxID"));
    age_of(jstr(m, "creationTimestamp"), age, sizeof(age));
    add_cell(cells, age);
    break;
  case RES_EVENTS:
    age_of(jstr(o, "lastTimestamp"), age, sizeof(age));
    add_cell(cells, age);
    add_cell(cells, jstr(o, "type"));
    add_cell(cells, jstr(o, "reason"));
    io = jobj(o, "involvedObject");
    snprintf(obj, sizeof(obj), "%s/%s",
             jstr(io, "kind") ? jstr(io, "kind") : "",
             jstr(io, "name") ? jstr(io, "name") : "");
    add_cell(cells, obj);
    add_cell(cells, jstr(o, "message"));
    break;
  case RES_LEASES:
    add_cell(cells, jstr(m, "name"));
    add_cell(cells, jstr(spec, "holderIdentity"));
    age_of(jstr(m, "creationTimestamp"), age, sizeof(age));
    add_cell(cells, age);
    break;
  default: /* customresourcedefinitions */
    add_cell(cells, jstr(m, "name"));
    add_cell(cells, jstr(m, "creationTimestamp"));
    break;
  }
}

/* the cell of a CRD printer column, as the API server makes it: a string
 * column prints the value (JSON for a non-string), the others keep the
 * value when it has their type; a date becomes an age ("5m"; a time more
 * than a second ahead, or not RFC 3339: "<invalid>"); nothing there:
 * null (kubectl prints an empty cell) */
static json_object *crd_cell(json_object *col, json_object *o)
{
  const char *type = jstr(col, "type"), *jp = jstr(col, "jsonPath");
  json_object *v = kf_jsonpath_get(o, jp);
  if(!v || !type)
    return NULL;
  if(!strcmp(type, "string"))
    return json_object_is_type(v, json_type_string) ? json_object_get(v) :
           json_object_new_string(json_object_to_json_string_ext(
             v, JSON_C_TO_STRING_PLAIN));
  if(!strcmp(type, "integer") && (json_object_is_type(v, json_type_int) ||
                                  json_object_is_type(v, json_type_double)))
    return json_object_new_int64(json_object_get_int64(v));
  if(!strcmp(type, "number") && (json_object_is_type(v, json_type_int) ||
                                 json_object_is_type(v, json_type_double)))
    return json_object_get(v);
  if(!strcmp(type, "boolean") && json_object_is_type(v, json_type_boolean))
    return json_object_get(v);
  if(!strcmp(type, "date") && json_object_is_type(v, json_type_string)) {
    sc_time t;
    char age[32];
    int64_t d;
    if(sctime_parse_rfc3339(json_object_get_string(v), &t))
      return json_object_new_string("<invalid>");
    d = sctime_wall_ms() - t;
    if(d / 1000 < -1)
      return json_object_new_string("<invalid>");
    sctime_format_age(d, age, sizeof(age));
    return json_object_new_string(age);
  }
  return NULL;
}

static json_object *col_def(const char *name, const char *type,
                            const char *format, const char *desc,
                            int priority)
{
  json_object *d = json_object_new_object();
  set_str(d, "name", name);
  set_str(d, "type", type);
  set_str(d, "format", format ? format : "");
  set_str(d, "description", desc ? desc : "");
  json_object_object_add(d, "priority", json_object_new_int(priority));
  return d;
}

/* a Table of objs (v[0..n)) of resource res; the columns of the applied
 * CRD for sessions, else the built-in ones */
static json_object *table_of(kf_server *s, int res, json_object **v,
                             size_t n)
{
  json_object *t = json_object_new_object(), *cols, *rows, *m;
  json_object *crdcols = res == RES_SESSIONS ?
                         kf_crd_columns(sessions_crd(s)) : NULL;
  size_t i, c;
  char rv[32];
  set_str(t, "kind", "Table");
  set_str(t, "apiVersion", "meta.k8s.io/v1");
  m = json_object_new_object();
  snprintf(rv, sizeof(rv), "%" PRId64, s->rv);
  set_str(m, "resourceVersion", rv);
  json_object_object_add(t, "metadata", m);
  cols = json_object_new_array();
  if(crdcols) {
    json_object_array_add(cols, col_def("Name", "string", "name", "Name must "
                                        "be unique within a namespace.", 0));
    for(c = 0; c < json_object_array_length(crdcols); c++) {
      json_object *cd = json_object_array_get_idx(crdcols, c), *pr;
      int prio = json_object_object_get_ex(cd, "priority", &pr) ?
                 json_object_get_int(pr) : 0;
      json_object_array_add(cols, col_def(jstr(cd, "name"), jstr(cd, "type"),
                                          jstr(cd, "format"),
                                          jstr(cd, "description"), prio));
    }
  }
  else
    for(c = 0; c < 6 && table_cols[res][c]; c++) {
      const char *cn = table_cols[res][c];
      json_object_array_add(cols, col_def(cn, !strcmp(cn, "Created At") ?
                                          "date" : "string",
                                          !strcmp(cn, "Name") ? "name" : "",
                                          NULL, 0));
    }
  json_object_object_add(t, "columnDefinitions", cols);
  rows = json_object_new_array();
  for(i = 0; i < n; i++) {
    json_object *row = json_object_new_object(), *cells =
      json_object_new_array(), *po = json_object_new_object(), *pm = NULL;
    if(crdcols) {
      json_object_array_add(cells, json_object_new_string(
        jstr(jobj(v[i], "metadata"), "name") ?
        jstr(jobj(v[i], "metadata"), "name") : ""));
      for(c = 0; c < json_object_array_length(crdcols); c++)
        json_object_array_add(cells, crd_cell(json_object_array_get_idx(
                                                crdcols, c), v[i]));
    }
    else
      row_cells(res, v[i], cells);
    json_object_object_add(row, "cells", cells);
    set_str(po, "kind", "PartialObjectMetadata");
    set_str(po, "apiVersion", "meta.k8s.io/v1");
    if(jobj(v[i], "metadata"))
      json_object_deep_copy(jobj(v[i], "metadata"), &pm, NULL);
    json_object_object_add(po, "metadata", pm ? pm : json_object_new_object());
    json_object_object_add(row, "object", po);
    json_object_array_add(rows, row);
  }
  json_object_object_add(t, "rows", rows);
  return t;
}

static bool parse_rv(const char *s, int64_t *out)
{
  char *end;
  long long v;
  errno = 0;
  v = strtoll(s, &end, 10);
  if(errno || *end || end == s || v < 0)
    return false;
  *out = v;
  return true;
}

/* A continue token: "RV/NS/NAME", the list's version and the last
 * object of the page (names hold no '/'). false when malformed. */
static bool parse_cont(const char *t, int64_t *rv, char *ns, size_t nslen,
                       char *name, size_t namelen)
{
  const char *a = strchr(t, '/'), *b = a ? strchr(a + 1, '/') : NULL;
  char num[32];
  if(!a || !b || (size_t)(a - t) >= sizeof(num) ||
     (size_t)(b - a - 1) >= nslen || strlen(b + 1) >= namelen ||
     strchr(b + 1, '/'))
    return false;
  memcpy(num, t, (size_t)(a - t));
  num[a - t] = '\0';
  memcpy(ns, a + 1, (size_t)(b - a - 1));
  ns[b - a - 1] = '\0';
  snprintf(name, namelen, "%s", b + 1);
  return parse_rv(num, rv);
}

/* A list, by the API's chunking rules: ?limit=N gives at most N objects
 * and, when more are left, metadata.continue and remainingItemCount;
 * ?continue=T the objects after the token's, with the version of the
 * first page (a real API server serves the continued pages from that
 * snapshot; the fake from what it holds now, which a watch from that
 * version makes good). A token older than the kept history (after
 * /_fake/compact) is 410 Expired, a malformed one 400. */
static void serve_list(kf_server *s, struct evhttp_request *req,
                       const route *rt)
{
  kf_obj **v = calloc(s->n_objs + 1, sizeof(*v));
  size_t i, n = 0, from = 0, cnt;
  json_object *o, *items, *m;
  const kf_res *r = &resources[rt->res];
  char rv[32], kind[64], av[64], cns[256] = "", cname[256] = "";
  char cont[600] = "";
  int64_t list_rv = s->rv;
  if(rt->cont[0]) {
    if(!parse_cont(rt->cont, &list_rv, cns, sizeof(cns), cname,
                   sizeof(cname))) {
      reply_status(req, 400, "BadRequest", "continue key is not valid: %s",
                   rt->cont);
      free(v);
      return;
    }
    if(list_rv < s->compacted) {
      reply_status(req, 410, "Expired", "The provided continue parameter is "
                   "too old to display a consistent list result. You can "
                   "start a new list without the continue parameter.");
      free(v);
      return;
    }
  }
  /* rt->name: the Table of that one object (kubectl get KIND NAME) */
  for(i = 0; i < s->n_objs; i++)
    if(s->objs[i].res == rt->res && (!rt->ns[0] ||
                                     !strcmp(s->objs[i].ns, rt->ns)) &&
       (!rt->name[0] || !strcmp(s->objs[i].name, rt->name)))
      v[n++] = &s->objs[i];
  qsort(v, n, sizeof(*v), cmp_obj);
  if(rt->cont[0])
    while(from < n) {
      int c = strcmp(v[from]->ns, cns);
      if(c > 0 || (c == 0 && strcmp(v[from]->name, cname) > 0))
        break;
      from++;
    }
  cnt = n - from;
  if(rt->limit > 0 && (size_t)rt->limit < cnt) {
    cnt = (size_t)rt->limit;
    snprintf(cont, sizeof(cont), "%" PRId64 "/%s/%s", list_rv,
             v[from + cnt - 1]->ns, v[from + cnt - 1]->name);
  }
  snprintf(rv, sizeof(rv), "%" PRId64, list_rv);
  if(rt->table) {
    json_object **jv = calloc(cnt + 1, sizeof(*jv));
    for(i = 0; jv && i < cnt; i++)
      jv[i] = v[from + i]->o;
    o = table_of(s, rt->res, jv, jv ? cnt : 0);
    free(jv);
    m = jobj(o, "metadata");
    set_str(m, "resourceVersion", rv);
  }
  else {
    o = json_object_new_object();
    snprintf(kind, sizeof(kind), "%sList", r->kind);
    snprintf(av, sizeof(av), "%s%s%s", r->group, *r->group ? "/" : "",
             r->version);
    set_str(o, "kind", kind);
    set_str(o, "apiVersion", av);
    m = json_object_new_object();
    set_str(m, "resourceVersion", rv);
    json_object_object_add(o, "metadata", m);
    items = json_object_new_array();
    for(i = 0; i < cnt; i++)
      json_object_array_add(items, json_object_get(v[from + i]->o));
    json_object_object_add(o, "items", items);
  }
  if(cont[0] && m) {
    set_str(m, "continue", cont);
    json_object_object_add(m, "remainingItemCount",
                           json_object_new_int64((int64_t)(n - from - cnt)));
  }
  reply_json(req, 200, o);
  json_object_put(o);
  free(v);
}

static void serve_watch(kf_server *s, struct evhttp_request *req,
                        const route *rt)
{
  kf_watch *w;
  int64_t from = 0;
  bool from_now = false;
  size_t i;
  struct timeval tv;
  if(rt->rv[0] && !parse_rv(rt->rv, &from)) {
    reply_status(req, 400, "BadRequest", "invalid resourceVersion \"%s\"",
                 rt->rv);
    return;
  }
  w = calloc(1, sizeof(*w));
  w->s = s;
  w->req = req;
  w->conn = evhttp_request_get_connection(req);
  w->res = rt->res;
  w->ns = rt->ns[0] ? strdup(rt->ns) : NULL;
  w->bookmarks = rt->bookmarks;
  w->table = rt->table;
  from_now = !rt->rv[0] || from == 0;
  evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                    "application/json");
  evhttp_send_reply_start(req, 200, "OK");
  evhttp_connection_set_closecb(w->conn, on_watch_conn_close, w);
  w->next = s->watches;
  s->watches = w;
  if(from_now) {
    /* no version: synthetic ADDED for what exists, then changes */
    for(i = 0; i < s->n_objs; i++)
      if(s->objs[i].res == w->res && (!w->ns || !strcmp(w->ns,
                                                        s->objs[i].ns)))
        watch_send_obj(w, "ADDED", s->objs[i].o, NULL);
  }
  else if(from < s->compacted) {
    char buf[400];
    snprintf(buf, sizeof(buf), "{\"kind\":\"Status\",\"apiVersion\":\"v1\","
             "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old "
             "resource version: %" PRId64 " (%" PRId64 ")\",\"reason\":"
             "\"Expired\",\"code\":410}", from, s->compacted + 1);
    watch_send(w, "ERROR", buf);
    watch_end(w);
    return;
  }
  else {
    size_t keep = (size_t)s->o.history_keep;
    for(i = 0; i < s->hist_n; i++) {
      kf_hist *h = &s->hist[(s->hist_start + i) % keep];
      if(h->rv > from && h->res == w->res && (!w->ns || !strcmp(w->ns,
                                                                h->ns)))
        watch_send_obj(w, h->type, NULL, h->json);
    }
  }
  w->sent_rv = s->rv;
  if(rt->timeout_s > 0) {
    tv.tv_sec = rt->timeout_s;
    tv.tv_usec = 0;
    w->timeout = event_new(s->base, -1, 0, on_watch_timeout, w);
    event_add(w->timeout, &tv);
  }
  if(w->bookmarks) {
    tv.tv_sec = s->o.bookmark_ms / 1000;
    tv.tv_usec = (s->o.bookmark_ms % 1000) * 1000;
    w->bookmark = event_new(s->base, -1, EV_PERSIST, on_watch_bookmark, w);
    event_add(w->bookmark, &tv);
  }
}

/* ------------------------------------------------------------------ */
/* writes */

/* the resourceVersion precondition of a write: body rv (if any) must be
 * the object's */
static bool rv_ok(json_object *body, kf_obj *ob, struct evhttp_request *req,
                  bool required)
{
  const char *want = jstr(jobj(body, "metadata"), "resourceVersion");
  const char *have = jstr(meta_of(ob->o), "resourceVersion");
  if(!want || !*want) {
    if(!required)
      return true;
    reply_status(req, 422, "Invalid", "%s.%s \"%s\" is invalid: "
                 "metadata.resourceVersion: Invalid value: 0x0: must be "
                 "specified for an update", resources[ob->res].plural,
                 resources[ob->res].group, ob->name);
    return false;
  }
  if(strcmp(want, have)) {
    reply_status(req, 409, "Conflict", "Operation cannot be fulfilled on "
                 "%s.%s \"%s\": the object has been modified; please apply "
                 "your changes to the latest version and try again",
                 resources[ob->res].plural, resources[ob->res].group,
                 ob->name);
    return false;
  }
  return true;
}

/* 422 Invalid with the field errors, as the API server words it:
 * KIND.GROUP "NAME" is invalid: F: D (several: [F: D, F: D]) */
static void reply_invalid(struct evhttp_request *req, int res,
                          const char *name, const kf_errs *e)
{
  const kf_res *r = &resources[res];
  dynbuf b;
  json_object *st, *det, *causes;
  char line[1400];
  size_t i;
  dynbuf_init(&b, 64 * 1024);
  dynbuf_printf(&b, "%s.%s \"%s\" is invalid: %s", r->kind, r->group, name,
                e->n > 1 ? "[" : "");
  for(i = 0; i < e->n; i++) {
    kf_errs_line(e, i, line, sizeof(line));
    dynbuf_printf(&b, "%s%s", i ? ", " : "", line);
  }
  if(e->n > 1)
    dynbuf_addstr(&b, "]");
  st = status_obj(422, "Invalid", dynbuf_ptr(&b));
  det = json_object_new_object();
  set_str(det, "name", name);
  set_str(det, "group", r->group);
  set_str(det, "kind", r->kind);
  causes = json_object_new_array();
  for(i = 0; i < e->n; i++) {
    json_object *c = json_object_new_object();
    set_str(c, "reason", e->v[i].reason);
    set_str(c, "message", e->v[i].detail);
    set_str(c, "field", e->v[i].field);
    json_object_array_add(causes, c);
  }
  json_object_object_add(det, "causes", causes);
  json_object_object_add(st, "details", det);
  reply_json(req, 422, st);
  json_object_put(st);
  dynbuf_free(&b);
}

/* an object as the API server reads it from storage once the CRD exists:
 * fields the schema does not declare dropped, defaults applied (changes
 * o; nothing without the CRD) */
static void as_stored(kf_server *s, int res, json_object *o)
{
  json_object *schema;
  kf_errs unk = {0};
  if(res != RES_SESSIONS || !(schema = kf_crd_schema(sessions_crd(s))))
    return;
  kf_schema_prune(o, schema, true, &unk);
  kf_errs_free(&unk);
  kf_schema_default(o, schema);
}

/* a CRD was written: the stored Sessions from now on read as an API
 * server reads them from storage, pruned and defaulted by its schema
 * (changed in place, without a new resourceVersion: they are the same
 * versions, read through the new schema) */
static void crd_applied(kf_server *s)
{
  size_t i;
  for(i = 0; i < s->n_objs; i++)
    if(s->objs[i].res == RES_SESSIONS)
      as_stored(s, RES_SESSIONS, s->objs[i].o);
}

/* the applied CRD's schema on a session about to be written (changes
 * obj): unknown fields by ?fieldValidation (Strict: 400 naming them;
 * Warn, the default: dropped with a Warning header each; Ignore: dropped),
 * then the defaults, then validation (422 with the field errors). false:
 * the request was answered */
static bool apply_schema(kf_server *s, struct evhttp_request *req,
                         const route *rt, json_object *obj,
                         const char *name)
{
  json_object *schema;
  kf_errs unk = {0}, errs = {0};
  size_t i;
  if(rt->res != RES_SESSIONS || !(schema = kf_crd_schema(sessions_crd(s))))
    return true;
  kf_schema_prune(obj, schema, rt->fv != FV_STRICT, &unk);
  if(unk.n && rt->fv == FV_STRICT) {
    dynbuf b;
    dynbuf_init(&b, 64 * 1024);
    dynbuf_addstr(&b, "Session in version \"v1alpha1\" cannot be handled as "
                  "a Session: strict decoding error: ");
    for(i = 0; i < unk.n; i++)
      dynbuf_printf(&b, "%sunknown field \"%s\"", i ? ", " : "",
                    unk.v[i].field);
    reply_status(req, 400, "BadRequest", "%s", dynbuf_ptr(&b));
    dynbuf_free(&b);
    kf_errs_free(&unk);
    return false;
  }
  for(i = 0; s->cur_log && i < unk.n; i++) {
    dynbuf b;
    dynbuf_init(&b, 64 * 1024);
    if(s->cur_log->dropped)
      dynbuf_printf(&b, "%s\n", s->cur_log->dropped);
    dynbuf_addstr(&b, unk.v[i].field);
    free(s->cur_log->dropped);
    s->cur_log->dropped = dynbuf_take(&b);
  }
  for(i = 0; rt->fv == FV_WARN && i < unk.n; i++) {
    char w[400];
    snprintf(w, sizeof(w), "299 - \"unknown field \\\"%s\\\"\"",
             unk.v[i].field);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Warning", w);
  }
  kf_errs_free(&unk);
  kf_schema_default(obj, schema);
  kf_schema_validate(obj, schema, &errs);
  if(errs.n) {
    reply_invalid(req, rt->res, name, &errs);
    kf_errs_free(&errs);
    return false;
  }
  return true;
}

/* the API server's and the fake's checks of a CRD being written; false:
 * answered with 422 */
static bool crd_ok(struct evhttp_request *req, json_object *crd,
                   const char *name)
{
  kf_errs errs = {0};
  kf_crd_check(crd, &errs);
  if(errs.n) {
    reply_invalid(req, RES_CRDS, name, &errs);
    kf_errs_free(&errs);
    return false;
  }
  return true;
}

static bool check_kind(kf_server *s, int res, json_object *body,
                       struct evhttp_request *req)
{
  const kf_res *r = &resources[res];
  const char *k = jstr(body, "kind"), *av = jstr(body, "apiVersion");
  char want[64];
  (void)s;
  snprintf(want, sizeof(want), "%s%s%s", r->group, *r->group ? "/" : "",
           r->version);
  if(!json_object_is_type(body, json_type_object) || !k || !av ||
     strcmp(k, r->kind) || strcmp(av, want)) {
    reply_status(req, 400, "BadRequest", "the body must be a %s %s object",
                 want, r->kind);
    return false;
  }
  if(json_object_object_get_ex(body, "spec", NULL) && !jobj(body, "spec")) {
    reply_status(req, 422, "Invalid", "spec: Invalid value: must be an "
                 "object");
    return false;
  }
  return true;
}

static void serve_create(kf_server *s, struct evhttp_request *req,
                         const route *rt, json_object *body)
{
  json_object *m, *o;
  const char *name, *bns;
  char uid[40], ts[40];
  kf_obj *ob;
  if(!check_kind(s, rt->res, body, req))
    return;
  m = jobj(body, "metadata");
  name = jstr(m, "name");
  if(!name || !*name || strlen(name) > 253 || strchr(name, '/')) {
    reply_status(req, 422, "Invalid", "metadata.name: Required value: name "
                 "is required (1-253 characters, no '/')");
    return;
  }
  bns = jstr(m, "namespace");
  if(bns && resources[rt->res].namespaced && strcmp(bns, rt->ns)) {
    reply_status(req, 400, "BadRequest", "the namespace of the provided "
                 "object does not match the namespace sent on the request");
    return;
  }
  if(find_obj(s, rt->res, rt->ns, name)) {
    reply_status(req, 409, "AlreadyExists", "%s.%s \"%s\" already exists",
                 resources[rt->res].plural, resources[rt->res].group, name);
    return;
  }
  if(rt->res == RES_CRDS && !crd_ok(req, body, name))
    return;
  if(!apply_schema(s, req, rt, body, name))
    return;
  o = json_object_get(body);
  m = meta_of(o);
  if(resources[rt->res].namespaced)
    set_str(m, "namespace", rt->ns);
  else
    json_object_object_del(m, "namespace");
  new_uid(uid, sizeof(uid));
  set_str(m, "uid", uid);
  now_rfc3339(ts, sizeof(ts));
  set_str(m, "creationTimestamp", ts);
  json_object_object_add(m, "generation", json_object_new_int64(1));
  json_object_object_del(m, "deletionTimestamp");
  json_object_object_del(m, "resourceVersion");
  if(resources[rt->res].status_sub)
    json_object_object_del(o, "status");
  if(rt->res == RES_CRDS)
    kf_crd_set_status(o);
  if(s->n_objs == s->cap_objs) {
    s->cap_objs = s->cap_objs ? s->cap_objs * 2 : 16;
    s->objs = realloc(s->objs, s->cap_objs * sizeof(*s->objs));
  }
  ob = &s->objs[s->n_objs++];
  ob->res = rt->res;
  ob->ns = strdup(rt->ns);
  ob->name = strdup(name);
  ob->o = o;
  bump_and_record(s, ob, "ADDED");
  reply_json(req, 201, ob->o);
  if(rt->res == RES_CRDS)
    crd_applied(s);
}

/* replace ob's object by next (the body after the strategy): bump the
 * generation on spec change, write nothing when equal, delete when
 * terminating with no finalizers left */
static void commit_update(kf_server *s, struct evhttp_request *req,
                          kf_obj *ob, json_object *next)
{
  json_object *m = meta_of(next), *om = meta_of(ob->o), *g;
  json_object *a = jobj(ob->o, "spec"), *b = jobj(next, "spec");
  int64_t gen = 1;
  if(json_object_object_get_ex(om, "generation", &g))
    gen = json_object_get_int64(g);
  if(!json_object_equal(a, b))
    gen++;
  json_object_object_add(m, "generation", json_object_new_int64(gen));
  /* fields only the server sets */
  set_str(m, "uid", jstr(om, "uid"));
  if(resources[ob->res].namespaced)
    set_str(m, "namespace", ob->ns);
  else
    json_object_object_del(m, "namespace");
  set_str(m, "name", ob->name);
  set_str(m, "creationTimestamp", jstr(om, "creationTimestamp"));
  if(jstr(om, "deletionTimestamp"))
    set_str(m, "deletionTimestamp", jstr(om, "deletionTimestamp"));
  else
    json_object_object_del(m, "deletionTimestamp");
  set_str(m, "resourceVersion", jstr(om, "resourceVersion"));
  if(json_object_equal(next, ob->o)) {
    json_object_put(next);
    reply_json(req, 200, ob->o);
    return;
  }
  json_object_put(ob->o);
  ob->o = next;
  if(jstr(m, "deletionTimestamp") && !has_finalizers(next)) {
    json_object *keep = json_object_get(next);
    bump_and_record(s, ob, "DELETED");
    remove_obj(s, ob);
    reply_json(req, 200, keep);
    json_object_put(keep);
    return;
  }
  bump_and_record(s, ob, "MODIFIED");
  reply_json(req, 200, ob->o);
}

/* body is the new object (PUT) or the patched one (PATCH) */
static void serve_update(kf_server *s, struct evhttp_request *req,
                         const route *rt, kf_obj *ob, json_object *body)
{
  json_object *next = NULL, *base = NULL, *st;
  if(!check_kind(s, rt->res, body, req))
    return;
  if(jstr(jobj(body, "metadata"), "name") &&
     strcmp(jstr(jobj(body, "metadata"), "name"), ob->name)) {
    reply_status(req, 400, "BadRequest", "the name of the object (%s) does "
                 "not match the name on the URL (%s)",
                 jstr(jobj(body, "metadata"), "name"), ob->name);
    return;
  }
  /* the stored object as read from storage (a copy: the schema steps
   * below change what they are given, and a refused write must leave
   * the stored one as it was) */
  json_object_deep_copy(ob->o, &base, NULL);
  as_stored(s, rt->res, base);
  if(rt->status) {
    /* status subresource: only status changes */
    next = base;
    base = NULL;
    if(json_object_object_get_ex(body, "status", &st) && st)
      json_object_object_add(next, "status", json_object_get(st));
    else
      json_object_object_del(next, "status");
  }
  else {
    json_object_deep_copy(body, &next, NULL);
    /* the main resource ignores status when the subresource exists */
    if(resources[rt->res].status_sub) {
      if(json_object_object_get_ex(base, "status", &st))
        json_object_object_add(next, "status", json_object_get(st));
      else
        json_object_object_del(next, "status");
    }
  }
  json_object_put(base);
  if((rt->res == RES_CRDS && !rt->status && !crd_ok(req, next, ob->name)) ||
     !apply_schema(s, req, rt, next, ob->name)) {
    json_object_put(next);
    return;
  }
  commit_update(s, req, ob, next);
  if(rt->res == RES_CRDS)
    crd_applied(s);
}

static void serve_delete(kf_server *s, struct evhttp_request *req,
                         kf_obj *ob)
{
  json_object *m = meta_of(ob->o);
  char ts[40];
  if(!has_finalizers(ob->o)) {
    json_object *keep = json_object_get(ob->o);
    bump_and_record(s, ob, "DELETED");
    remove_obj(s, ob);
    reply_json(req, 200, keep);
    json_object_put(keep);
    return;
  }
  if(!jstr(m, "deletionTimestamp")) {
    now_rfc3339(ts, sizeof(ts));
    set_str(m, "deletionTimestamp", ts);
    json_object_object_add(m, "deletionGracePeriodSeconds",
                           json_object_new_int(0));
    bump_and_record(s, ob, "MODIFIED");
  }
  reply_json(req, 202, ob->o);
}

static void serve_resource(kf_server *s, struct evhttp_request *req,
                           const route *rt)
{
  enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
  json_object *body = NULL;
  kf_obj *ob = NULL;
  if(rt->name[0])
    ob = find_obj(s, rt->res, rt->ns, rt->name);
  if(cmd == EVHTTP_REQ_POST || cmd == EVHTTP_REQ_PUT ||
     cmd == EVHTTP_REQ_PATCH) {
    sc_err e;
    if(rt->dry_run) {
      reply_status(req, 400, "BadRequest", "dryRun is not supported by "
                   "kube-apiserver-fake (a dry run here would write)");
      return;
    }
    if(rt->fv == FV_BAD) {
      reply_status(req, 400, "BadRequest", "fieldValidation: invalid value "
                   "\"%s\": must be Ignore, Warn or Strict", rt->fv_text);
      return;
    }
    e = read_body(req, &body);
    if(e) {
      reply_status(req, e == SC_ERR_TOO_LARGE ? 413 : 400, "BadRequest",
                   "the request body is not a JSON document");
      return;
    }
  }
  if(!rt->name[0]) {
    if(cmd == EVHTTP_REQ_GET && rt->watch)
      serve_watch(s, req, rt);
    else if(cmd == EVHTTP_REQ_GET)
      serve_list(s, req, rt);
    else if(cmd == EVHTTP_REQ_POST && !rt->status &&
            (rt->ns[0] || !resources[rt->res].namespaced))
      serve_create(s, req, rt, body);
    else
      reply_status(req, 405, "MethodNotAllowed", "method not allowed");
    json_object_put(body);
    return;
  }
  if(!ob) {
    reply_status(req, 404, "NotFound", "%s.%s \"%s\" not found",
                 resources[rt->res].plural, resources[rt->res].group,
                 rt->name);
    json_object_put(body);
    return;
  }
  switch(cmd) {
  case EVHTTP_REQ_GET:
    if(rt->table)
      serve_list(s, req, rt); /* a Table of one row */
    else
      reply_json(req, 200, ob->o);
    break;
  case EVHTTP_REQ_PUT:
    if(rv_ok(body, ob, req, true))
      serve_update(s, req, rt, ob, body);
    break;
  case EVHTTP_REQ_PATCH: {
    const char *ct = evhttp_find_header(evhttp_request_get_input_headers(req),
                                        "Content-Type");
    json_object *cur = NULL;
    if(!ct || strncmp(ct, "application/merge-patch+json", 28)) {
      reply_status(req, 415, "UnsupportedMediaType", "the body of the "
                   "request was in an unknown format - accepted media "
                   "types include: application/merge-patch+json");
      break;
    }
    if(!rv_ok(body, ob, req, false))
      break;
    json_object_deep_copy(ob->o, &cur, NULL);
    as_stored(s, rt->res, cur);
    cur = kf_merge_patch(cur, body);
    serve_update(s, req, rt, ob, cur);
    json_object_put(cur);
    break;
  }
  case EVHTTP_REQ_DELETE:
    if(rt->dry_run)
      reply_status(req, 400, "BadRequest", "dryRun is not supported by "
                   "kube-apiserver-fake (a dry run here would delete)");
    else
      serve_delete(s, req, ob);
    break;
  default:
    reply_status(req, 405, "MethodNotAllowed", "method not allowed");
  }
  json_object_put(body);
}

/* ------------------------------------------------------------------ */
/* admin: /_fake/compact, /_fake/fail?code=N&n=N, /_fake/faults,
 * /_fake/end-watches, /_fake/stats, /_fake/requests */

static bool is_watch_query(const char *q)
{
  struct evkeyvalq kv;
  const char *v;
  bool w;
  if(!q)
    return false;
  TAILQ_INIT(&kv);
  if(evhttp_parse_query_str(q, &kv))
    return false;
  v = evhttp_find_header(&kv, "watch");
  w = v && (!strcmp(v, "1") || !strcmp(v, "true"));
  evhttp_clear_headers(&kv);
  return w;
}

static json_object *fault_json(const kf_fault *f)
{
  json_object *o = json_object_new_object();
  if(f->status)
    json_object_object_add(o, "status", json_object_new_int(f->status));
  if(f->delay_ms)
    json_object_object_add(o, "delayMs", json_object_new_int(f->delay_ms));
  json_object_object_add(o, "count", json_object_new_int(f->count));
  if(f->retry_after >= 0)
    json_object_object_add(o, "retryAfter",
                           json_object_new_int(f->retry_after));
  if(f->path[0])
    json_object_object_add(o, "path", json_object_new_string(f->path));
  if(f->method[0])
    json_object_object_add(o, "method", json_object_new_string(f->method));
  if(f->watch >= 0)
    json_object_object_add(o, "watch", json_object_new_boolean(f->watch));
  return o;
}

/* one rule of a /_fake/faults body; false with msg on a bad one */
static bool fault_parse(json_object *o, kf_fault *f, char *msg, size_t len)
{
  static const char *const methods[] = {"GET", "POST", "PUT", "PATCH",
                                        "DELETE"};
  json_object *v;
  size_t i;
  memset(f, 0, sizeof(*f));
  f->count = 1;
  f->retry_after = -1;
  f->watch = -1;
  if(!json_object_is_type(o, json_type_object)) {
    snprintf(msg, len, "a fault must be an object");
    return false;
  }
  json_object_object_foreach(o, key, val) {
    if(strcmp(key, "status") && strcmp(key, "count") &&
       strcmp(key, "retryAfter") && strcmp(key, "path") &&
       strcmp(key, "method") && strcmp(key, "watch") &&
       strcmp(key, "delayMs")) {
      snprintf(msg, len, "unknown field \"%.60s\"", key);
      return false;
    }
    (void)val;
  }
  if(json_object_object_get_ex(o, "delayMs", &v)) {
    if(!json_object_is_type(v, json_type_int) ||
       json_object_get_int(v) < 1 || json_object_get_int(v) > 60000) {
      snprintf(msg, len, "delayMs: want milliseconds from 1 to 60000");
      return false;
    }
    f->delay_ms = json_object_get_int(v);
  }
  if(!json_object_object_get_ex(o, "status", &v) && f->delay_ms)
    v = NULL; /* a delay only */
  else if(!v || !json_object_is_type(v, json_type_int) ||
          json_object_get_int(v) < 400 || json_object_get_int(v) > 599) {
    snprintf(msg, len, "status: want an integer from 400 to 599");
    return false;
  }
  f->status = v ? json_object_get_int(v) : 0;
  if(json_object_object_get_ex(o, "count", &v)) {
    if(!json_object_is_type(v, json_type_int) ||
       json_object_get_int(v) < -1 || json_object_get_int(v) == 0 ||
       json_object_get_int(v) > 1000000) {
      snprintf(msg, len, "count: want an integer >= 1, or -1 (until "
               "cleared)");
      return false;
    }
    f->count = json_object_get_int(v);
  }
  if(json_object_object_get_ex(o, "retryAfter", &v)) {
    if(!json_object_is_type(v, json_type_int) ||
       json_object_get_int(v) < 0 || json_object_get_int(v) > 3600) {
      snprintf(msg, len, "retryAfter: want seconds from 0 to 3600");
      return false;
    }
    f->retry_after = json_object_get_int(v);
  }
  if(json_object_object_get_ex(o, "path", &v)) {
    const char *p = json_object_get_string(v);
    if(!json_object_is_type(v, json_type_string) || p[0] != '/' ||
       strlen(p) >= sizeof(f->path)) {
      snprintf(msg, len, "path: want a URL path prefix starting with '/'");
      return false;
    }
    snprintf(f->path, sizeof(f->path), "%s", p);
  }
  if(json_object_object_get_ex(o, "method", &v)) {
    const char *m = json_object_get_string(v);
    for(i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
      if(json_object_is_type(v, json_type_string) && !strcmp(m, methods[i]))
        break;
    if(i == sizeof(methods) / sizeof(methods[0])) {
      snprintf(msg, len, "method: want GET, POST, PUT, PATCH or DELETE");
      return false;
    }
    snprintf(f->method, sizeof(f->method), "%s", m);
  }
  if(json_object_object_get_ex(o, "watch", &v)) {
    if(!json_object_is_type(v, json_type_boolean)) {
      snprintf(msg, len, "watch: want true or false");
      return false;
    }
    f->watch = json_object_get_boolean(v);
  }
  return true;
}

/* POST adds rules (one object or an array), DELETE clears them, GET lists
 * them with their remaining counts */
static void serve_faults(kf_server *s, struct evhttp_request *req)
{
  enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
  json_object *body = NULL, *a;
  kf_fault add[FAULTS_MAX];
  size_t i, n = 0;
  char msg[200];
  if(cmd == EVHTTP_REQ_DELETE)
    s->n_faults = 0;
  else if(cmd == EVHTTP_REQ_POST) {
    if(read_body(req, &body)) {
      reply_status(req, 400, "BadRequest", "/_fake/faults: the body is not "
                   "JSON");
      return;
    }
    if(json_object_is_type(body, json_type_array)) {
      n = json_object_array_length(body);
      if(n > FAULTS_MAX - s->n_faults) {
        json_object_put(body);
        reply_status(req, 400, "BadRequest", "/_fake/faults: at most %d "
                     "rules", FAULTS_MAX);
        return;
      }
      for(i = 0; i < n; i++)
        if(!fault_parse(json_object_array_get_idx(body, i), &add[i], msg,
                        sizeof(msg))) {
          json_object_put(body);
          reply_status(req, 400, "BadRequest", "/_fake/faults: rule %zu: %s",
                       i, msg);
          return;
        }
    }
    else {
      n = 1;
      if(s->n_faults >= FAULTS_MAX ||
         !fault_parse(body, &add[0], msg, sizeof(msg))) {
        json_object_put(body);
        if(s->n_faults >= FAULTS_MAX)
          snprintf(msg, sizeof(msg), "at most %d rules", FAULTS_MAX);
        reply_status(req, 400, "BadRequest", "/_fake/faults: %s", msg);
        return;
      }
    }
    json_object_put(body);
    for(i = 0; i < n; i++)
      s->faults[s->n_faults++] = add[i];
  }
  else if(cmd != EVHTTP_REQ_GET) {
    reply_status(req, 405, "MethodNotAllowed", "/_fake/faults: GET, POST "
                 "or DELETE");
    return;
  }
  a = json_object_new_array();
  for(i = 0; i < s->n_faults; i++)
    json_object_array_add(a, fault_json(&s->faults[i]));
  reply_json(req, 200, a);
  json_object_put(a);
}

/* the first live rule that matches, its count taken; NULL = none */
static const kf_fault *fault_take(kf_server *s, struct evhttp_request *req,
                                  const char *path)
{
  const char *m = NULL, *q;
  size_t i;
  bool watch;
  if(!s->n_faults)
    return NULL;
  q = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
  watch = is_watch_query(q);
  for(i = 0; i < s->n_faults; i++) {
    kf_fault *f = &s->faults[i];
    if(!f->count)
      continue;
    if(f->path[0] ? strncmp(path, f->path, strlen(f->path))
       : (strncmp(path, "/apis/", 6) && strncmp(path, "/api/", 5)))
      continue;
    if(f->watch >= 0 && f->watch != (int)watch)
      continue;
    if(f->method[0]) {
      if(!m)
        m = method_name(evhttp_request_get_command(req));
      if(strcmp(m, f->method))
        continue;
    }
    if(f->count > 0)
      f->count--;
    return f;
  }
  return NULL;
}

static void reqlog_clear(kf_server *s)
{
  size_t i;
  for(i = 0; i < s->reqlog_n; i++) {
    kf_reqlog *l = &s->reqlog[(s->reqlog_start + i) % REQLOG_MAX];
    free(l->line);
    free(l->query);
    free(l->dropped);
  }
  s->reqlog_start = s->reqlog_n = 0;
}

/* GET: text lines, or ?format=json an array of {t, method, path, query,
 * userAgent, fault, user, dropped}; DELETE forgets them */
static void serve_reqlog(kf_server *s, struct evhttp_request *req)
{
  const char *q = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
  struct evbuffer *b;
  size_t i;
  if(evhttp_request_get_command(req) == EVHTTP_REQ_DELETE) {
    reqlog_clear(s);
    reply_text(req, 200, "{}");
    return;
  }
  if(q && strstr(q, "format=json")) {
    json_object *a = json_object_new_array();
    for(i = 0; i < s->reqlog_n; i++) {
      const kf_reqlog *l = &s->reqlog[(s->reqlog_start + i) % REQLOG_MAX];
      json_object *o = json_object_new_object();
      const char *sp1 = strchr(l->line, ' ');
      const char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
      json_object_object_add(o, "t", json_object_new_int64(l->t_ms));
      json_object_object_add(o, "method", json_object_new_string_len(
                               l->line, sp1 ? (int)(sp1 - l->line) : 0));
      json_object_object_add(o, "path", json_object_new_string_len(
                               sp1 ? sp1 + 1 : "", sp2 ?
                               (int)(sp2 - sp1 - 1) : 0));
      json_object_object_add(o, "query", json_object_new_string(
                               l->query ? l->query : ""));
      json_object_object_add(o, "userAgent", json_object_new_string(
                               sp2 ? sp2 + 1 : ""));
      json_object_object_add(o, "fault", json_object_new_int(l->fault));
      json_object_object_add(o, "user", json_object_new_string(l->user));
      {
        json_object *d = json_object_new_array();
        const char *p = l->dropped;
        while(p && *p) {
          const char *nl = strchr(p, '\n');
          size_t n = nl ? (size_t)(nl - p) : strlen(p);
          json_object_array_add(d, json_object_new_string_len(p, (int)n));
          p += n + (nl ? 1 : 0);
        }
        json_object_object_add(o, "dropped", d);
      }
      json_object_array_add(a, o);
    }
    reply_json(req, 200, a);
    json_object_put(a);
    return;
  }
  b = evbuffer_new();
  for(i = 0; i < s->reqlog_n; i++)
    evbuffer_add_printf(b, "%s\n",
                        s->reqlog[(s->reqlog_start + i) % REQLOG_MAX].line);
  evhttp_add_header(evhttp_request_get_output_headers(req),
                    "Content-Type", "text/plain");
  evhttp_send_reply(req, 200, "OK", b);
  evbuffer_free(b);
}

static void serve_admin(kf_server *s, struct evhttp_request *req,
                        const char *path)
{
  char buf[200];
  if(!strcmp(path, "/_fake/compact")) {
    size_t keep = (size_t)s->o.history_keep;
    while(s->hist_n) {
      kf_hist *h = &s->hist[s->hist_start];
      free(h->ns);
      free(h->json);
      s->hist_start = (s->hist_start + 1) % keep;
      s->hist_n--;
    }
    s->compacted = s->rv;
    while(s->watches) /* like an API server restart: watches reconnect */
      watch_end(s->watches);
    reply_text(req, 200, "{}");
    return;
  }
  if(!strcmp(path, "/_fake/fail")) {
    const char *q = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    struct evkeyvalq kv;
    const char *c, *n;
    kf_fault f;
    TAILQ_INIT(&kv);
    if(q)
      evhttp_parse_query_str(q, &kv);
    c = qget(&kv, "code");
    n = qget(&kv, "n");
    memset(&f, 0, sizeof(f));
    f.status = c ? (int)strtol(c, NULL, 10) : 500;
    f.count = n ? (int)strtol(n, NULL, 10) : 1;
    f.retry_after = f.status == 429 ? 1 : -1;
    f.watch = -1;
    evhttp_clear_headers(&kv);
    if(f.status < 400 || f.status > 599 || f.count < 1) {
      reply_status(req, 400, "BadRequest", "/_fake/fail: want code=400..599 "
                   "and n>=1");
      return;
    }
    s->n_faults = 0; /* the old interface: one rule at a time */
    s->faults[s->n_faults++] = f;
    reply_text(req, 200, "{}");
    return;
  }
  if(!strcmp(path, "/_fake/faults")) {
    serve_faults(s, req);
    return;
  }
  if(!strcmp(path, "/_fake/end-watches")) {
    int n = 0;
    while(s->watches) { /* like dropped connections: no compaction */
      watch_end(s->watches);
      n++;
    }
    snprintf(buf, sizeof(buf), "{\"ended\":%d}", n);
    reply_text(req, 200, buf);
    return;
  }
  if(!strcmp(path, "/_fake/stats")) {
    kf_watch *w;
    int nw = 0;
    for(w = s->watches; w; w = w->next)
      nw++;
    snprintf(buf, sizeof(buf), "{\"resourceVersion\":%" PRId64 ",\"objects\""
             ":%zu,\"watches\":%d,\"requests\":%" PRId64 ",\"compacted\":%"
             PRId64 "}", s->rv, s->n_objs, nw, s->requests, s->compacted);
    reply_text(req, 200, buf);
    return;
  }
  if(!strcmp(path, "/_fake/requests")) {
    serve_reqlog(s, req);
    return;
  }
  reply_status(req, 404, "NotFound", "no admin endpoint %s", path);
}

static const char *method_name(enum evhttp_cmd_type c)
{
  switch(c) {
  case EVHTTP_REQ_GET: return "GET";
  case EVHTTP_REQ_POST: return "POST";
  case EVHTTP_REQ_PUT: return "PUT";
  case EVHTTP_REQ_PATCH: return "PATCH";
  case EVHTTP_REQ_DELETE: return "DELETE";
  default: return "OTHER";
  }
}

/* remember "METHOD PATH USER-AGENT" for /_fake/requests; the entry */
static kf_reqlog *log_request(kf_server *s, struct evhttp_request *req,
                              const char *path)
{
  const char *ua = evhttp_find_header(evhttp_request_get_input_headers(req),
                                      "User-Agent");
  const char *q = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
  char line[1400];
  kf_reqlog l, *slot;
  snprintf(line, sizeof(line), "%s %s %s",
           method_name(evhttp_request_get_command(req)), path,
           ua ? ua : "-");
  memset(&l, 0, sizeof(l));
  l.t_ms = sctime_mono_ms() - s->started_ms;
  l.line = strdup(line);
  l.query = q ? strdup(q) : NULL;
  if(!l.line || (q && !l.query)) {
    free(l.line);
    free(l.query);
    return NULL;
  }
  if(s->reqlog_n == REQLOG_MAX) {
    free(s->reqlog[s->reqlog_start].line);
    free(s->reqlog[s->reqlog_start].query);
    free(s->reqlog[s->reqlog_start].dropped);
    s->reqlog_start = (s->reqlog_start + 1) % REQLOG_MAX;
    s->reqlog_n--;
  }
  slot = &s->reqlog[(s->reqlog_start + s->reqlog_n++) % REQLOG_MAX];
  *slot = l;
  return slot;
}

static void reply_fault(struct evhttp_request *req, int status,
                        int retry_after)
{
  char ra[16];
  if(retry_after >= 0) {
    snprintf(ra, sizeof(ra), "%d", retry_after);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After",
                      ra);
  }
  reply_status(req, status, status == 429 ? "TooManyRequests"
               : status == 503 ? "ServiceUnavailable"
               : status >= 500 ? "InternalError" : "BadRequest",
               "injected failure %d", status);
}

static void serve_api(kf_server *s, struct evhttp_request *req)
{
  const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
  route rt;
  if(!path)
    path = "/";
  if(parse_route(req, &rt)) {
    serve_resource(s, req, &rt);
    return;
  }
  serve_discovery(s, req, path);
}

static void delayed_free(kf_delayed *d)
{
  kf_delayed **pp;
  for(pp = &d->s->delayed; *pp; pp = &(*pp)->next)
    if(*pp == d) {
      *pp = d->next;
      break;
    }
  event_free(d->ev);
  free(d);
}

static void on_delayed(evutil_socket_t fd, short what, void *arg)
{
  kf_delayed *d = arg;
  kf_server *s = d->s;
  struct evhttp_request *req = d->req;
  int status = d->status, retry_after = d->retry_after;
  (void)fd;
  (void)what;
  delayed_free(d);
  if(status)
    reply_fault(req, status, retry_after);
  else
    serve_api(s, req);
}

/* hold req for f->delay_ms; false when it cannot (answered at once) */
static bool delay_request(kf_server *s, struct evhttp_request *req,
                          const kf_fault *f)
{
  kf_delayed *d = calloc(1, sizeof(*d));
  struct timeval tv;
  if(!d)
    return false;
  d->s = s;
  d->req = req;
  d->status = f->status;
  d->retry_after = f->retry_after;
  d->ev = evtimer_new(s->base, on_delayed, d);
  tv.tv_sec = f->delay_ms / 1000;
  tv.tv_usec = (f->delay_ms % 1000) * 1000;
  if(!d->ev || evtimer_add(d->ev, &tv)) {
    if(d->ev)
      event_free(d->ev);
    free(d);
    return false;
  }
  d->next = s->delayed;
  s->delayed = d;
  return true;
}

static void on_request(struct evhttp_request *req, void *arg)
{
  kf_server *s = arg;
  const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
  const kf_fault *f;
  kf_reqlog *l;
  char user[64];
  if(!path)
    path = "/";
  if(!strncmp(path, "/_fake/", 7)) {
    serve_admin(s, req, path);
    return;
  }
  s->requests++;
  l = log_request(s, req, path);
  if(!authorized(s, req, user, sizeof(user))) {
    reply_status(req, 401, "Unauthorized", "Unauthorized");
    return;
  }
  if(l)
    snprintf(l->user, sizeof(l->user), "%s", user);
  if((f = fault_take(s, req, path))) {
    if(l)
      l->fault = f->status;
    if(f->delay_ms && delay_request(s, req, f))
      return;
    if(f->status) {
      reply_fault(req, f->status, f->retry_after);
      return;
    }
  }
  s->cur_log = l;
  serve_api(s, req);
  s->cur_log = NULL;
}

kf_server *kf_server_new(struct event_base *base, const char *host,
                         int port, const kf_opts *o, int *bound_port)
{
  kf_server *s = calloc(1, sizeof(*s));
  struct evhttp_bound_socket *bs;
  if(!s)
    return NULL;
  s->base = base;
  s->o = *o;
  s->started_ms = sctime_mono_ms();
  if(s->o.history_keep <= 0)
    s->o.history_keep = 1000;
  if(s->o.bookmark_ms <= 0)
    s->o.bookmark_ms = 1000;
  s->hist = calloc((size_t)s->o.history_keep, sizeof(*s->hist));
  s->http = evhttp_new(base);
  if(!s->hist || !s->http) {
    kf_server_free(s);
    return NULL;
  }
  evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
                             EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH |
                             EVHTTP_REQ_DELETE);
  evhttp_set_max_body_size(s->http, BODY_MAX);
  evhttp_set_gencb(s->http, on_request, s);
  if(s->o.bev)
    evhttp_set_bevcb(s->http, s->o.bev, s->o.bev_arg);
  bs = evhttp_bind_socket_with_handle(s->http, host, (ev_uint16_t)port);
  if(!bs) {
    kf_server_free(s);
    return NULL;
  }
  {
    struct sockaddr_storage ss;
    ev_socklen_t sl = sizeof(ss);
    evutil_socket_t fd = evhttp_bound_socket_get_fd(bs);
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    if(ss.ss_family == AF_INET6)
      *bound_port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    else
      *bound_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
  }
  return s;
}

void kf_server_free(kf_server *s)
{
  size_t i;
  if(!s)
    return;
  while(s->watches)
    watch_end(s->watches);
  while(s->delayed)
    delayed_free(s->delayed);
  if(s->http)
    evhttp_free(s->http);
  for(i = 0; i < s->n_objs; i++) {
    free(s->objs[i].ns);
    free(s->objs[i].name);
    json_object_put(s->objs[i].o);
  }
  free(s->objs);
  if(s->hist)
    for(i = 0; i < s->hist_n; i++) {
      kf_hist *h = &s->hist[(s->hist_start + i) % (size_t)s->o.history_keep];
      free(h->ns);
      free(h->json);
    }
  free(s->hist);
  reqlog_clear(s);
  free(s);
}
