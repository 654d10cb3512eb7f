/* store_kube.c - the store on a Kubernetes API server: the Session custom
 * resource lea.io/v1alpha1 (docs/store.md "The kube backend").
 *
 * Every call is a request of kube_http (kube_http.h): the asynchronous
 * ones (store.h, the controller's) on the libevent loop of
 * store_open_opts.base, the synchronous ones (sessionctl's) on a private
 * loop run until the call ends, so both share one implementation, with
 * retries on timers instead of sleeps. Watches are streaming GETs on a
 * libcurl multi handle driven by the loop of store_open_opts.base. */
#include "controller/store/backend.h"
#include "controller/store/kube_name.h"
#include "lib/curlev.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>
#include <event2/event.h>
#include <json-c/json.h>
#include <openssl/rand.h>
#include "api/session_json.h"
#include "lib/dynbuf.h"
#include "lib/sctime.h"
#include "controller/kube/http.h"
#include "controller/kube/config.h"
#include "controller/ops/log.h"

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

typedef struct kube_store {
  store base;
  kube_conn conn;
  char *ns;                /* list/watch filter; NULL = all */
  bool add_finalizer;
  int watch_timeout_s;
  struct event_base *evbase;
  kube_http *http;         /* the controller's calls, on evbase */
  struct event_base *sbase;/* the private loop of the synchronous calls */
  kube_http *shttp;        /* the synchronous calls, on sbase */
  struct kop *ops;         /* operations in flight (both loops) */
  size_t n_ops;            /* of them, the callers' (not sub-operations) */
  curlev *ev;              /* watches: the multi handle on the loop */
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
} kube_store;

struct kube_watch {
  store_watch base;
  kube_store *k;
  store_watch_cb cb;
  store_watch_err_cb err_cb;
  void *ud;
  char *pos;               /* the resourceVersion we have seen */
  CURL *easy;
  struct curl_slist *hdrs;
  kube_auth auth;          /* the credential of the running request */
  dynbuf line;             /* bytes of the stream not yet a whole line */
  size_t cur_line;         /* of them, the bytes after the last newline */
  bool skipping;           /* dropping an event over LINE_MAX_ */
  unsigned oversized;      /* events dropped so, not reported yet */
  long code;               /* HTTP status of the running request */
  char errbuf[CURL_ERROR_SIZE];
  bool expired, stopped, failing, in_cb;
  int backoff_ms;
  struct event *retry;
  char **deleted;          /* uids whose DELETED we reported */
  size_t n_deleted;
  kube_watch *next;
};

/* ------------------------------------------------------------------ */
/* HTTP */

/* the headers of a watch request: its credential's token */
static struct curl_slist *watch_headers(const kube_auth *a)
{
  struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json");
  struct curl_slist *t;
  char *buf;
  size_t len;
  if(!h || !a->token)
    return h;
  len = strlen(a->token) + 24;
  buf = malloc(len);
  t = NULL;
  if(buf) {
    snprintf(buf, len, "Authorization: Bearer %s", a->token);
    t = curl_slist_append(h, buf);
    free(buf);
  }
  if(!t)
    curl_slist_free_all(h);
  return t;
}

/* the message of a Status body, or "" */
static const char *status_msg(json_object *o)
{
  json_object *m;
  if(o && json_object_object_get_ex(o, "message", &m) &&
     json_object_is_type(m, json_type_string))
    return json_object_get_string(m);
  return "";
}

/* ------------------------------------------------------------------ */
/* bodies and objects, strictly */

/* Parse a body of the API server as controller/cube/json.c parses Cube's:
 * strict JSON (RFC 8259, no comments or single quotes), UTF-8 checked, at
 * most KJSON_DEPTH levels, nothing after the value but white space, no
 * raw NUL byte (an escaped \u0000 inside a string is JSON; the decoder
 * decides about it). why says what is wrong. */
static sc_err kjson_parse(const char *body, size_t len, json_object **out,
                          char *why, size_t whylen)
{
  json_tokener *tok;
  json_object *o;
  enum json_tokener_error jerr;
  const char *nul;
  size_t end;
  *out = NULL;
  if(len > INT32_MAX) {
    snprintf(why, whylen, "%zu bytes", len);
    return SC_ERR_TOO_LARGE;
  }
  if((nul = memchr(body, '\0', len)) != NULL) {
    snprintf(why, whylen, "a NUL byte at offset %zu",
             (size_t)(nul - body));
    return SC_ERR_PROTOCOL;
  }
  tok = json_tokener_new_ex(KJSON_DEPTH);
  if(!tok)
    return SC_ERR_NOMEM;
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
                                JSON_TOKENER_ALLOW_TRAILING_CHARS |
                                JSON_TOKENER_VALIDATE_UTF8);
  o = json_tokener_parse_ex(tok, body, (int)len);
  jerr = json_tokener_get_error(tok);
  end = json_tokener_get_parse_end(tok);
  if(!o && jerr == json_tokener_continue && len) {
    o = json_tokener_parse_ex(tok, "", 1); /* a top-level literal */
    jerr = json_tokener_get_error(tok);
  }
  json_tokener_free(tok);
  if(jerr != json_tokener_success) {
    json_object_put(o);
    if(jerr == json_tokener_continue || jerr == json_tokener_error_parse_eof)
      snprintf(why, whylen, "truncated JSON (%zu bytes)", len);
    else
      snprintf(why, whylen, "invalid JSON at offset %zu: %s", end,
               json_tokener_error_desc(jerr));
    return SC_ERR_PROTOCOL;
  }
  for(; end < len; end++)
    if(body[end] != ' ' && body[end] != '\t' && body[end] != '\r' &&
       body[end] != '\n') {
      json_object_put(o);
      snprintf(why, whylen, "data after the JSON value at offset %zu", end);
      return SC_ERR_PROTOCOL;
    }
  *out = o;
  return SC_OK;
}

/* The JSON text o stands for, at least (strings, keys, numbers and the
 * punctuation, without escapes), counted up to a little past stop; *bad
 * is set on a number json-c could not hold (1e999, an integer past
 * int64). */
static size_t json_size(json_object *o, size_t stop, bool *bad)
{
  size_t n = 0;
  switch(json_object_get_type(o)) {
  case json_type_null:
    return 4;
  case json_type_boolean:
    return 5;
  case json_type_double:
    if(!isfinite(json_object_get_double(o)))
      *bad = true;
    return 8;
  case json_type_int: {
    int64_t v = json_object_get_int64(o);
    if(v == INT64_MAX || v == INT64_MIN)
      *bad = true;
    return 8;
  }
  case json_type_string:
    return (size_t)json_object_get_string_len(o) + 2;
  case json_type_array: {
    size_t i, len = json_object_array_length(o);
    n = 2;
    for(i = 0; i < len && n <= stop && !*bad; i++)
      n += json_size(json_object_array_get_idx(o, i), stop - n, bad) + 1;
    return n;
  }
  case json_type_object: {
    struct json_object_iterator it = json_object_iter_begin(o);
    struct json_object_iterator e = json_object_iter_end(o);
    n = 2;
    for(; !json_object_iter_equal(&it, &e) && n <= stop && !*bad;
        json_object_iter_next(&it))
      n += strlen(json_object_iter_peek_name(&it)) + 4 +
           json_size(json_object_iter_peek_value(&it), stop - n, bad);
    return n;
  }
  }
  return n;
}

/* metadata.FIELD of a raw object when it is a string without NUL */
static const char *raw_meta(json_object *o, const char *field)
{
  json_object *m, *v;
  if(!json_object_object_get_ex(o, "metadata", &m) ||
     !json_object_object_get_ex(m, field, &v) ||
     !json_object_is_type(v, json_type_string) ||
     strlen(json_object_get_string(v)) !=
       (size_t)json_object_get_string_len(v))
    return NULL;
  return json_object_get_string(v);
}

/* The namespace, name and uid of a raw object, as far as they are usable
 * (a key store_check_key accepts; NULL otherwise). */
static void raw_ident(json_object *o, const char **ns, const char **name,
                      const char **uid)
{
  sc_errbuf e;
  *ns = raw_meta(o, "namespace");
  *name = raw_meta(o, "name");
  *uid = raw_meta(o, "uid");
  if(!*ns || !*name || store_check_key(*ns, *name, "", &e))
    *ns = *name = NULL;
}

/* Check and decode one object of the API server: a JSON object of at most
 * STORE_OBJECT_MAX bytes, numbers in range, a Session the strict decoder
 * takes (SESSION_JSON_IGNORE_UNKNOWN_METADATA | _LENIENT_METADATA: labels,
 * annotations and metadata we do not read never refuse it), with a usable
 * namespace and name and a resourceVersion. why (no prefix) says what is
 * wrong: "spec.state: expected a string, got an integer". */
static sc_err obj_decode(json_object *o, session **out, char *why,
                         size_t whylen)
{
  sc_errbuf e2;
  bool bad = false;
  size_t size;
  sc_err err;
  *out = NULL;
  if(!json_object_is_type(o, json_type_object)) {
    snprintf(why, whylen, "not a JSON object");
    return SC_ERR_PROTOCOL;
  }
  size = json_size(o, STORE_OBJECT_MAX, &bad);
  if(size > STORE_OBJECT_MAX) {
    snprintf(why, whylen, "the object is more than %d bytes of JSON (the "
             "store's cap on one object, STORE_OBJECT_MAX)",
             STORE_OBJECT_MAX);
    return SC_ERR_PROTOCOL;
  }
  if(bad) {
    snprintf(why, whylen, "a number out of range");
    return SC_ERR_PROTOCOL;
  }
  e2.msg[0] = '\0';
  err = session_from_json_object_flags(o,
                                       SESSION_JSON_IGNORE_UNKNOWN_METADATA |
                                         SESSION_JSON_LENIENT_METADATA,
                                       out, &e2);
  if(err == SC_ERR_NOMEM)
    return err;
  if(!err && (err = store_check_key((*out)->meta.namespace_,
                                    (*out)->meta.name, "the object",
                                    &e2)) == SC_OK &&
     (!(*out)->meta.resource_version || !*(*out)->meta.resource_version))
    err = sc_errf(&e2, SC_ERR_PROTOCOL, "metadata.resourceVersion: "
                  "required field missing");
  if(err) {
    session_free(*out);
    *out = NULL;
    snprintf(why, whylen, "%s", !strncmp(e2.msg, "the object: ", 12)
                                ? e2.msg + 12 : e2.msg);
    return SC_ERR_PROTOCOL;
  }
  return SC_OK;
}

/* The body of a finished call, parsed strictly (kjson_parse): a 2xx body
 * comes raw from kube_http (call_opts.raw_2xx), others parsed for their
 * Status. r is *res with body set; *own is the caller's to put. k->why
 * says why a 2xx body is not JSON (reply_err names it). */
static void strict_body(kube_store *k, const kube_http_result *res,
                        kube_http_result *r, json_object **own)
{
  *r = *res;
  *own = NULL;
  k->why[0] = '\0';
  if(r->body || r->err || r->status < 200 || r->status > 299 ||
     !r->body_len || !r->raw)
    return;
  if(kjson_parse(r->raw, r->body_len, own, k->why, sizeof(k->why)) ==
     SC_ERR_NOMEM)
    snprintf(k->why, sizeof(k->why), "out of memory");
  r->body = *own;
}

/* The error of a finished call that no status code of the operation
 * explains: no answer, 429/5xx after the retries, 401, 403, a 2xx body
 * that is not JSON. SC_OK otherwise. */
static sc_err reply_err(const kube_store *k, const kube_http_result *res,
                        const char *method, const char *path, sc_errbuf *eb)
{
  if(res->err)
    return sc_errf(eb, res->err == SC_ERR_TOO_LARGE ? SC_ERR_TOO_LARGE
                   : SC_ERR_UNAVAILABLE, "%s", res->message);
  if(res->status == 429 || res->status >= 500)
    return sc_errf(eb, SC_ERR_UNAVAILABLE, "%s", res->message);
  if(res->status == 401)
    return sc_errf(eb, SC_ERR_INVALID, "kube %s %s%s: 401 Unauthorized "
                   "(check the credentials of %s)", method, k->conn.server,
                   path, k->conn.source);
  if(res->status == 403)
    return sc_errf(eb, SC_ERR_INVALID, "kube %s %s%s: 403 Forbidden: %s",
                   method, k->conn.server, path, status_msg(res->body));
  if(res->status < 300 && res->body_len && !res->body)
    return sc_errf(eb, SC_ERR_PROTOCOL, "kube %s %s%s: HTTP %ld with a body "
                   "that is not JSON%s%s%s", method, k->conn.server, path,
                   res->status, k->why[0] ? " (" : "", k->why,
                   k->why[0] ? ")" : "");
  return SC_OK;
}

static const kube_http_opts call_opts = {CALL_TIMEOUT_MS, RESP_MAX, RETRIES,
                                         true};

/* Run the private loop of the synchronous calls until *done. false when
 * the loop ran dry first (a bug): what it had in flight is dropped. */
static bool sync_run(kube_store *k, const bool *done)
{
  while(!*done)
    if(event_base_loop(k->sbase, EVLOOP_ONCE) != 0)
      break;
  if(*done)
    return true;
  kube_http_abort_all(k->shttp);
  return false;
}

typedef struct kwait {
  kube_store *k;
  const char *method, *path;
  bool done;
  sc_err err;
  long code;
  json_object *resp;
  sc_errbuf eb;
} kwait;

static void on_kwait(const kube_http_result *raw, void *ud)
{
  kwait *w = ud;
  kube_http_result r, *res = &r;
  json_object *own;
  strict_body(w->k, raw, &r, &own);
  w->done = true;
  w->code = res->status;
  w->err = reply_err(w->k, res, w->method, w->path, &w->eb);
  if(!w->err && res->body)
    w->resp = json_object_get(res->body);
  json_object_put(own);
}

/* One synchronous call (sessionctl's apply, update spec, delete): sent on
 * the private loop, which runs until it ends. *code is the HTTP status;
 * *resp the parsed body (NULL when empty; the caller puts it). The
 * retries are kube_http's (call_opts). */
static sc_err kreq(kube_store *k, const char *method, const char *path,
                   const char *ctype, const char *body, long *code,
                   json_object **resp, sc_errbuf *eb)
{
  kwait w;
  sc_err err;
  memset(&w, 0, sizeof(w));
  w.k = k;
  w.method = method;
  w.path = path;
  *code = 0;
  *resp = NULL;
  err = kube_http_request_ex(k->shttp, method, path, ctype, body, &call_opts,
                             on_kwait, &w, eb);
  if(err)
    return err;
  if(!sync_run(k, &w.done))
    return sc_errf(eb, SC_ERR_INTERNAL, "kube %s %s: the call was lost",
                   method, path);
  if(w.err) {
    json_object_put(w.resp);
    return sc_errf(eb, w.err, "%s", w.eb.msg);
  }
  *code = w.code;
  *resp = w.resp;
  return SC_OK;
}

/* ------------------------------------------------------------------ */
/* objects */

static void obj_path(char *buf, size_t len, const char *ns, const char *name,
                     const char *sub)
{
  char *ens = curl_easy_escape(NULL, ns, 0);
  char *en = name ? curl_easy_escape(NULL, name, 0) : NULL;
  snprintf(buf, len, GROUP_PATH "/namespaces/%s/sessions%s%s%s",
           ens ? ens : "", name ? "/" : "", name ? (en ? en : "") : "",
           sub ? sub : "");
  curl_free(ens);
  curl_free(en);
}

static sc_err decode(json_object *o, const char *what, session **out,
                     sc_errbuf *eb)
{
  char why[SC_ERRBUF_SIZE];
  sc_err err = obj_decode(o, out, why, sizeof(why));
  if(err == SC_ERR_NOMEM)
    return sc_errf(eb, err, "out of memory");
  if(err)
    return sc_errf(eb, SC_ERR_PROTOCOL, "kube: %s does not decode: %s", what,
                   why);
  return SC_OK;
}

static sc_err http_err(long code, json_object *resp, const char *op,
                       const char *ns, const char *name, sc_errbuf *eb)
{
  const char *m = status_msg(resp);
  if(code == 404)
    return sc_errf(eb, SC_ERR_NOT_FOUND, "kube: %s %s/%s: not found", op, ns,
                   name);
  if(code == 409) {
    json_object *r;
    if(json_object_object_get_ex(resp, "reason", &r) &&
       !strcmp(json_object_get_string(r), "AlreadyExists"))
      return sc_errf(eb, SC_ERR_EXISTS, "kube: %s %s/%s: %s", op, ns, name,
                     m);
    return sc_errf(eb, SC_ERR_CONFLICT, "kube: %s %s/%s: conflict: %s", op,
                   ns, name, m);
  }
  return sc_errf(eb, code >= 500 ? SC_ERR_UNAVAILABLE : SC_ERR_INVALID,
                 "kube: %s %s/%s: HTTP %ld: %s", op, ns, name, code, m);
}

/* GET the raw object (*raw) and decoded (*s, may be NULL) */
static sc_err get_raw(kube_store *k, const char *ns, const char *name,
                      json_object **raw, session **s, sc_errbuf *eb)
{
  char path[1200];
  long code;
  sc_err err;
  *raw = NULL;
  if(s)
    *s = NULL;
  obj_path(path, sizeof(path), ns, name, NULL);
  err = kreq(k, "GET", path, NULL, NULL, &code, raw, eb);
  if(err)
    return err;
  if(code != 200) {
    err = http_err(code, *raw, "get", ns, name, eb);
    json_object_put(*raw);
    *raw = NULL;
    return err;
  }
  if(s) {
    err = decode(*raw, "the object", s, eb);
    if(err) {
      json_object_put(*raw);
      *raw = NULL;
    }
  }
  return err;
}

static bool has_finalizer(const session *s)
{
  size_t i;
  for(i = 0; i < s->meta.n_finalizers; i++)
    if(!strcmp(s->meta.finalizers[i], FINALIZER))
      return true;
  return false;
}

/* the JSON of part `key` ("spec") of s's encoding, or NULL */
static json_object *part_of(const session *s, const char *key,
                            json_object **whole)
{
  json_object *v;
  *whole = session_to_json_object(s);
  if(*whole && json_object_object_get_ex(*whole, key, &v))
    return v;
  return NULL;
}

static void set_or_del(json_object *o, const char *key, json_object *v)
{
  if(v)
    json_object_object_add(o, key, json_object_get(v));
  else
    json_object_object_del(o, key);
}

/* the merge patch of metadata.finalizers with or without ours, guarded
 * by s's resourceVersion (the caller frees it) */
static char *finalizer_patch(const session *s, bool add)
{
  json_object *p = json_object_new_object(), *m = json_object_new_object(),
              *a = json_object_new_array();
  char *out;
  size_t i;
  for(i = 0; i < s->meta.n_finalizers; i++)
    if(strcmp(s->meta.finalizers[i], FINALIZER))
      json_object_array_add(a, json_object_new_string(s->meta.finalizers[i]));
  if(add)
    json_object_array_add(a, json_object_new_string(FINALIZER));
  json_object_object_add(m, "resourceVersion",
                         json_object_new_string(s->meta.resource_version));
  json_object_object_add(m, "finalizers", a);
  json_object_object_add(p, "metadata", m);
  out = strdup(json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN));
  json_object_put(p);
  return out;
}

static bool needs_finalizer(const kube_store *k, const session *s)
{
  return k->add_finalizer && s && !s->meta.deletion_timestamp &&
         !has_finalizer(s);
}

/* ------------------------------------------------------------------ */
/* operations on a loop
 *
 * list, get, update status and purge are small state machines on
 * kube_http: the controller's on its event loop (k->http), sessionctl's
 * the same on the private loop run until they end (k->shttp). A kop
 * holds one operation; its step is what the next answer is for. Adding
 * the finalizer to an object is a sub-operation (parent set) that
 * patches, and on a conflict reads again and patches again (3 tries). */

typedef struct kop kop;
typedef void (*kop_step)(kop *o, const kube_http_result *res);

struct kop {
  kube_store *k;
  kube_http *h;
  kop_step step;
  const char *method;      /* of the request in flight, for messages */
  char path[2048];
  char *ns, *name, *version;
  store_reply_cb cb;       /* the caller's; NULL for a sub-operation */
  void *ud;
  bool include_deleted;
  session *cur;            /* get, purge: the object */
  store_list_result list;  /* list */
  size_t fin_next;         /* list: next item to look at */
  char base[600];          /* list: the path without the query */
  char *cont;              /* list: the continue token of the next page */
  int limit;               /* list: objects asked per page */
  size_t pages;            /* list: pages read */
  int relists;             /* list: relists after a 410 on a continue */
  bool whole;              /* list: of every namespace the store sees */
  int fin_running;         /* finalizer sub-operations in flight */
  void (*after_fin)(kop *o);
  kop *parent;             /* a finalizer sub-operation's */
  session **slot;          /* its object, replaced or NULLed */
  int tries;
  sc_err err;
  sc_errbuf eb;
  char *new_version;
  kop *next;               /* k->ops */
};

#define FIN_PARALLEL 8

static void kop_free(kop *o)
{
  kop **pp;
  for(pp = &o->k->ops; *pp; pp = &(*pp)->next)
    if(*pp == o) {
      *pp = o->next;
      break;
    }
  if(!o->parent)
    o->k->n_ops--;
  session_free(o->cur);
  store_list_result_free(&o->list);
  free(o->new_version);
  free(o->ns);
  free(o->name);
  free(o->version);
  free(o->cont);
  free(o);
}

static kop *kop_new(kube_store *k, kube_http *h, kop *parent,
                    store_reply_cb cb, void *ud)
{
  kop *o = calloc(1, sizeof(*o));
  if(!o)
    return NULL;
  o->k = k;
  o->h = h;
  o->parent = parent;
  o->cb = cb;
  o->ud = ud;
  o->eb.msg[0] = '\0';
  o->next = k->ops;
  k->ops = o;
  if(!parent)
    k->n_ops++;
  return o;
}

static void on_kop_reply(const kube_http_result *res, void *ud)
{
  kop *o = ud;
  kube_http_result r;
  json_object *own;
  strict_body(o->k, res, &r, &own);
  o->step(o, &r);
  json_object_put(own); /* o may be gone: only the body is left */
}

static sc_err kop_send_ex(kop *o, const char *method, const char *ctype,
                          const char *body, const kube_http_opts *ho,
                          kop_step step, sc_errbuf *eb)
{
  o->method = method;
  o->step = step;
  return kube_http_request_ex(o->h, method, o->path, ctype, body, ho,
                              on_kop_reply, o, eb);
}

static sc_err kop_send(kop *o, const char *method, const char *ctype,
                       const char *body, kop_step step, sc_errbuf *eb)
{
  return kop_send_ex(o, method, ctype, body, &call_opts, step, eb);
}

/* --- objects that do not decode (store.h) --- */

static void on_marked(const kube_http_result *res, void *ud)
{
  kube_store *k = ud;
  if(res->err || res->status < 200 || res->status > 299)
    log_kv(k->base.log, LOG_WARN, "could not mark a skipped object "
           "InvalidObject", "store", store_url(&k->base), "error",
           res->message && *res->message ? res->message : "no answer", NULL);
}

/* Does raw already carry our Ready=False/InvalidObject with msg? */
static bool marked_already(json_object *raw, const char *msg)
{
  json_object *st, *cs;
  size_t i, n;
  if(!json_object_object_get_ex(raw, "status", &st) ||
     !json_object_object_get_ex(st, "conditions", &cs) ||
     !json_object_is_type(cs, json_type_array))
    return false;
  n = json_object_array_length(cs);
  for(i = 0; i < n; i++) {
    json_object *c = json_object_array_get_idx(cs, i), *v;
    const char *f[4][2] = {{"type", "Ready"}, {"status", "False"},
                           {"reason", "InvalidObject"}, {"message", msg}};
    size_t j;
    for(j = 0; j < 4; j++)
      if(!json_object_object_get_ex(c, f[j][0], &v) ||
         !json_object_is_type(v, json_type_string) ||
         strcmp(json_object_get_string(v), f[j][1]))
        break;
    if(j == 4)
      return true;
  }
  return false;
}

/* Tell the object's owner (kubectl describe, sessionctl describe of a
 * fixed object) why the controller does not reconcile it: a PUT of its
 * /status with the condition Ready=False/InvalidObject in place of the
 * others, sent on the controller's loop and not waited for (a failure,
 * a 409 included, is logged; the next report tries again). Only
 * with store_open_opts.mark_invalid, for an object with a usable name,
 * when store_skip_report() logged it (so at most once per object per
 * interval: the write's own watch event does not loop). */
static void mark_invalid(kube_store *k, json_object *raw, const char *ns,
                         const char *name, const char *why)
{
  char path[1200], msg[MARK_MSG_MAX + 1], now[SCTIME_RFC3339_MAX];
  json_object *p, *st = NULL, *cs, *c, *m, *old;
  const char *rv = raw_meta(raw, "resourceVersion");
  sc_errbuf eb;
  if(!k->mark_invalid || !k->http || !ns || !name || !rv)
    return;
  snprintf(msg, sizeof(msg), "the controller cannot read this object and "
           "does not reconcile it: %s", why);
  if(marked_already(raw, msg))
    return;
  sctime_format_rfc3339(sctime_wall_ms(), now, sizeof(now));
  /* a PUT of the /status subresource (the verb the controller already
   * has, deploy/rbac.yaml), guarded by the version read: the status as
   * it is, its conditions replaced by the one */
  p = json_object_new_object();
  json_object_object_add(p, "apiVersion",
                         json_object_new_string(SESSION_API_VERSION));
  json_object_object_add(p, "kind", json_object_new_string(SESSION_KIND));
  m = json_object_new_object();
  json_object_object_add(m, "name", json_object_new_string(name));
  json_object_object_add(m, "namespace", json_object_new_string(ns));
  json_object_object_add(m, "resourceVersion", json_object_new_string(rv));
  json_object_object_add(p, "metadata", m);
  if(json_object_object_get_ex(raw, "status", &old) &&
     json_object_is_type(old, json_type_object))
    json_object_deep_copy(old, &st, NULL);
  if(!st)
    st = json_object_new_object();
  cs = json_object_new_array();
  c = json_object_new_object();
  json_object_object_add(c, "type", json_object_new_string("Ready"));
  json_object_object_add(c, "status", json_object_new_string("False"));
  json_object_object_add(c, "reason", json_object_new_string("InvalidObject"));
  json_object_object_add(c, "message", json_object_new_string(msg));
  json_object_object_add(c, "lastTransitionTime", json_object_new_string(now));
  json_object_array_add(cs, c);
  json_object_object_add(st, "conditions", cs);
  json_object_object_add(p, "status", st);
  obj_path(path, sizeof(path), ns, name, "/status");
  eb.msg[0] = '\0';
  {
    /* the answer (the whole object) is not read: not parsed */
    static const kube_http_opts mo = {CALL_TIMEOUT_MS, RESP_MAX, 0, true};
    if(kube_http_request_ex(k->http, "PUT", path, "application/json",
                            json_object_to_json_string_ext(
                              p, JSON_C_TO_STRING_PLAIN),
                            &mo, on_marked, k, &eb))
      log_kv(k->base.log, LOG_WARN, "could not mark a skipped object "
             "InvalidObject", "store", store_url(&k->base), "error", eb.msg,
             NULL);
  }
  json_object_put(p);
}

/* One object of an answer did not decode (why): reported, and marked. */
static sc_err skip_obj(kube_store *k, store_list_result *res,
                       const char *where, json_object *raw, const char *what,
                       const char *why)
{
  const char *ns, *name, *uid;
  char buf[SC_ERRBUF_SIZE];
  bool logged = false;
  sc_err err;
  raw_ident(raw, &ns, &name, &uid);
  if(!name)
    snprintf(buf, sizeof(buf), "%s: %s", what, why);
  err = store_skip_report(&k->base, res, where, ns, name, uid,
                          name ? why : buf, &logged);
  if(logged)
    mark_invalid(k, raw, ns, name, why);
  return err;
}

static void fin_end(kop *f, sc_err err);

/* decode an answer of o's request; the message names the peer and the
 * request ("kube GET https://H/apis/...: list item 3 does not decode:
 * spec.state: ...") */
static sc_err kop_decode(kop *o, json_object *j, const char *what,
                         session **out)
{
  sc_errbuf e2;
  sc_err err;
  e2.msg[0] = '\0';
  err = decode(j, what, out, &e2);
  if(err)
    return sc_errf(&o->eb, err, "kube %s %s%s: %s", o->method,
                   o->k->conn.server, o->path,
                   strncmp(e2.msg, "kube: ", 6) ? e2.msg : e2.msg + 6);
  return SC_OK;
}

/* the end of an operation: the caller's callback, or the parent's turn */
static void kop_finish(kop *o, sc_err err)
{
  store_reply rep;
  if(o->parent) {
    fin_end(o, err);
    return;
  }
  memset(&rep, 0, sizeof(rep));
  rep.err = err;
  rep.message = err ? o->eb.msg : "";
  if(!err) {
    rep.obj = o->cur;
    rep.list = o->list;
    rep.new_version = o->new_version;
    o->cur = NULL;
    memset(&o->list, 0, sizeof(o->list));
    o->new_version = NULL;
  }
  o->cb(&rep, o->ud);
  session_free(rep.obj);
  store_list_result_free(&rep.list);
  free(rep.new_version);
  kop_free(o);
}

/* the first error of an operation wins */
static void kop_error(kop *o, sc_err err, const char *msg)
{
  if(err && !o->err) {
    o->err = err;
    snprintf(o->eb.msg, sizeof(o->eb.msg), "%s", msg);
  }
}

/* --- the finalizer, on the controller's first visit --- */

static sc_err fin_patch(kop *f);

static void fin_end(kop *f, sc_err err)
{
  kop *p = f->parent;
  kop_error(p, err, f->eb.msg);
  kop_free(f);
  p->fin_running--;
  p->after_fin(p);
}

static void fin_reread(kop *f, const kube_http_result *res)
{
  const session *s = *f->slot;
  session *n = NULL;
  sc_err err = reply_err(f->k, res, f->method, f->path, &f->eb);
  if(!err && res->status == 404) {
    /* deleted meanwhile: nothing to guard */
    session_free(*f->slot);
    *f->slot = NULL;
    fin_end(f, SC_OK);
    return;
  }
  if(!err && res->status != 200)
    err = http_err(res->status, res->body, "get", s->meta.namespace_,
                   s->meta.name, &f->eb);
  if(!err)
    err = kop_decode(f, res->body, "the object", &n);
  if(err) {
    fin_end(f, err);
    return;
  }
  session_free(*f->slot);
  *f->slot = n;
  if(!needs_finalizer(f->k, n))
    fin_end(f, SC_OK);
  else if((err = fin_patch(f)) != SC_OK)
    fin_end(f, err);
}

static void fin_patched(kop *f, const kube_http_result *res)
{
  const session *s = *f->slot;
  session *n = NULL;
  sc_err err = reply_err(f->k, res, f->method, f->path, &f->eb);
  if(!err && res->status != 200)
    err = http_err(res->status, res->body, "add finalizer",
                   s->meta.namespace_, s->meta.name, &f->eb);
  if(!err) {
    err = kop_decode(f, res->body, "the patched object", &n);
    if(!err) {
      session_free(*f->slot);
      *f->slot = n;
    }
    fin_end(f, err);
    return;
  }
  if(err != SC_ERR_CONFLICT && err != SC_ERR_NOT_FOUND) {
    fin_end(f, err);
    return;
  }
  if(++f->tries >= 3) {
    fin_end(f, sc_errf(&f->eb, SC_ERR_CONFLICT, "kube: adding the finalizer "
                       "to %s/%s kept conflicting", s->meta.namespace_,
                       s->meta.name));
    return;
  }
  obj_path(f->path, sizeof(f->path), s->meta.namespace_, s->meta.name, NULL);
  err = kop_send(f, "GET", NULL, NULL, fin_reread, &f->eb);
  if(err)
    fin_end(f, err);
}

/* send the patch; an error means nothing was sent (f->eb says why) */
static sc_err fin_patch(kop *f)
{
  const session *s = *f->slot;
  char *body = finalizer_patch(s, true);
  sc_err err;
  if(!body)
    return sc_errf(&f->eb, SC_ERR_NOMEM, "out of memory");
  obj_path(f->path, sizeof(f->path), s->meta.namespace_, s->meta.name, NULL);
  err = kop_send(f, "PATCH", "application/merge-patch+json", body,
                 fin_patched, &f->eb);
  free(body);
  return err;
}

/* start adding the finalizer to *slot for p (p->fin_running counts it);
 * false when it could not start (p's error is set). Never finishes p
 * itself: the caller decides what comes next. */
static bool fin_start(kop *p, session **slot)
{
  kop *f = kop_new(p->k, p->h, p, NULL, NULL);
  sc_err err;
  if(!f) {
    kop_error(p, SC_ERR_NOMEM, "out of memory");
    return false;
  }
  f->slot = slot;
  err = fin_patch(f);
  if(err) {
    kop_error(p, err, f->eb.msg);
    kop_free(f);
    return false;
  }
  p->fin_running++;
  return true;
}

/* --- get --- */

static void get_after_fin(kop *o)
{
  if(o->err) {
    kop_finish(o, o->err);
    return;
  }
  if(!o->cur) {
    kop_finish(o, sc_errf(&o->eb, SC_ERR_NOT_FOUND, "kube: get %s/%s: not "
                          "found", o->ns, o->name));
    return;
  }
  kop_finish(o, SC_OK);
}

static void get_got(kop *o, const kube_http_result *res)
{
  sc_err err = reply_err(o->k, res, o->method, o->path, &o->eb);
  if(!err && res->status != 200)
    err = http_err(res->status, res->body, "get", o->ns, o->name, &o->eb);
  if(!err) {
    char why[SC_ERRBUF_SIZE];
    err = obj_decode(res->body, &o->cur, why, sizeof(why));
    if(err == SC_ERR_PROTOCOL) {
      /* reported as any skipped object; the get fails with the reason */
      if(skip_obj(o->k, NULL, "get", res->body, "the object", why) ==
         SC_ERR_NOMEM)
        err = sc_errf(&o->eb, SC_ERR_NOMEM, "out of memory");
      else
        sc_errf(&o->eb, err, "kube %s %s%s: the object does not decode: "
                "%s", o->method, o->k->conn.server, o->path, why);
    }
    else if(err)
      sc_errf(&o->eb, err, "out of memory");
  }
  if(err) {
    kop_finish(o, err);
    return;
  }
  o->after_fin = get_after_fin;
  if(needs_finalizer(o->k, o->cur) && fin_start(o, &o->cur))
    return;
  get_after_fin(o);
}

/* a new root operation *out on ns/name (copied) */
static sc_err kop_root(kube_store *k, kube_http *h, const char *ns,
                       const char *name, const char *version,
                       store_reply_cb cb, void *ud, kop **out, sc_errbuf *eb)
{
  kop *o;
  *out = NULL;
  if(!h)
    return sc_errf(eb, SC_ERR_INVALID, "kube: asynchronous calls need an "
                   "event loop (store_open_opts.base)");
  o = kop_new(k, h, NULL, cb, ud);
  if(o) {
    o->ns = ns ? strdup(ns) : NULL;
    o->name = name ? strdup(name) : NULL;
    o->version = version ? strdup(version) : NULL;
  }
  if(!o || (ns && !o->ns) || (name && !o->name) ||
     (version && !o->version)) {
    if(o)
      kop_free(o);
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  *out = o;
  return SC_OK;
}

static sc_err get_start(kube_store *k, kube_http *h, const char *ns,
                        const char *name, store_reply_cb cb, void *ud,
                        sc_errbuf *eb)
{
  kop *o;
  sc_err err = kop_root(k, h, ns, name, NULL, cb, ud, &o, eb);
  if(err)
    return err;
  obj_path(o->path, sizeof(o->path), ns, name, NULL);
  err = kop_send(o, "GET", NULL, NULL, get_got, eb);
  if(err)
    kop_free(o);
  return err;
}

/* --- list --- */

static int cmp_sess(const void *a, const void *b)
{
  const session *x = *(session *const *)a, *y = *(session *const *)b;
  int c = strcmp(x->meta.namespace_, y->meta.namespace_);
  return c ? c : strcmp(x->meta.name, y->meta.name);
}

static void list_fins(kop *o)
{
  size_t i, n;
  while(!o->err && o->fin_running < FIN_PARALLEL &&
        o->fin_next < o->list.n) {
    i = o->fin_next++;
    if(needs_finalizer(o->k, o->list.items[i]) &&
       !fin_start(o, &o->list.items[i]))
      break;
  }
  if(o->fin_running || (!o->err && o->fin_next < o->list.n))
    return; /* more to come */
  if(o->err) {
    kop_finish(o, o->err);
    return;
  }
  /* drop the objects that vanished and, unless asked, the tombstones */
  for(i = n = 0; i < o->list.n; i++) {
    session *s = o->list.items[i];
    if(s && s->meta.deletion_timestamp && !o->include_deleted) {
      session_free(s);
      s = NULL;
    }
    if(s)
      o->list.items[n++] = s;
  }
  o->list.n = n;
  qsort(o->list.items, o->list.n, sizeof(*o->list.items), cmp_sess);
  kop_finish(o, SC_OK);
}

static void list_got(kop *o, const kube_http_result *res);

/* ask for the next page (o->cont NULL: the first) */
static sc_err list_send(kop *o, sc_errbuf *eb)
{
  kube_http_opts ho = call_opts;
  char *ec = NULL;
  if(o->cont && !(ec = curl_easy_escape(NULL, o->cont, 0)))
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  if(snprintf(o->path, sizeof(o->path), "%s?limit=%d%s%s", o->base,
              o->limit, ec ? "&continue=" : "", ec ? ec : "") >=
     (int)sizeof(o->path)) {
    curl_free(ec);
    return sc_errf(eb, SC_ERR_PROTOCOL, "kube GET %s%s: the continue token "
                   "makes the URL too long", o->k->conn.server, o->base);
  }
  curl_free(ec);
  /* a page of one object may be as large as any answer */
  ho.body_max = o->limit > 1 ? PAGE_BYTES : RESP_MAX;
  return kop_send_ex(o, "GET", NULL, NULL, &ho, list_got, eb);
}

/* the list starts again from its first page (a 410 on a continue token) */
static void list_restart(kop *o)
{
  store_list_result_free(&o->list);
  free(o->cont);
  o->cont = NULL;
  o->pages = 0;
}

/* the objects of one page: decoded, or skipped and reported */
static sc_err list_items(kop *o, json_object *items)
{
  size_t i, n = json_object_array_length(items);
  session **v;
  if(n > LIST_ITEMS_MAX - o->list.n - o->list.n_skipped)
    return sc_errf(&o->eb, SC_ERR_TOO_LARGE, "kube GET %s%s: more than %d "
                   "objects in one list: giving up", o->k->conn.server,
                   o->path, LIST_ITEMS_MAX);
  v = realloc(o->list.items, (o->list.n + n + 1) * sizeof(*v));
  if(!v)
    return sc_errf(&o->eb, SC_ERR_NOMEM, "out of memory");
  o->list.items = v;
  for(i = 0; i < n; i++) {
    json_object *it = json_object_array_get_idx(items, i);
    char why[SC_ERRBUF_SIZE], what[64];
    sc_err err = obj_decode(it, &o->list.items[o->list.n], why, sizeof(why));
    if(!err) {
      o->list.n++;
      continue;
    }
    if(err == SC_ERR_PROTOCOL) {
      snprintf(what, sizeof(what), "list page %zu item %zu", o->pages + 1,
               i);
      err = skip_obj(o->k, &o->list, "list", it, what, why);
    }
    if(err)
      return sc_errf(&o->eb, SC_ERR_NOMEM, "out of memory");
  }
  return SC_OK;
}

static void list_got(kop *o, const kube_http_result *res)
{
  json_object *items, *meta, *rv = NULL, *cv = NULL;
  const char *cont = NULL;
  sc_err err;
  if(res->err == SC_ERR_TOO_LARGE && o->limit > 1) {
    /* a page over PAGE_BYTES: the same page in smaller pieces */
    o->limit = o->limit / 4 > 1 ? o->limit / 4 : 1;
    o->k->page_limit = o->limit;
    err = list_send(o, &o->eb);
    if(err)
      kop_finish(o, err);
    return;
  }
  err = reply_err(o->k, res, o->method, o->path, &o->eb);
  if(!err && res->status == 410 && o->cont) {
    /* the continue token expired (the snapshot it stands for was
     * compacted): the list starts again from scratch, as a new list */
    if(++o->relists > RELISTS_MAX)
      err = sc_errf(&o->eb, SC_ERR_UNAVAILABLE, "kube GET %s%s: the continue "
                    "token expired %d times (410): %s",
                    o->k->conn.server, o->path, o->relists,
                    status_msg(res->body));
    else {
      list_restart(o);
      err = list_send(o, &o->eb);
    }
    if(err)
      kop_finish(o, err);
    return;
  }
  if(!err && res->status != 200)
    err = http_err(res->status, res->body, "list", o->ns ? o->ns : "*", "*",
                   &o->eb);
  if(!err && (!json_object_object_get_ex(res->body, "items", &items) ||
              !json_object_is_type(items, json_type_array) ||
              !json_object_object_get_ex(res->body, "metadata", &meta) ||
              (o->pages == 0 &&
               (!json_object_object_get_ex(meta, "resourceVersion", &rv) ||
                !json_object_is_type(rv, json_type_string))) ||
              (json_object_object_get_ex(meta, "continue", &cv) && cv &&
               !json_object_is_type(cv, json_type_string))))
    err = sc_errf(&o->eb, SC_ERR_PROTOCOL, "kube GET %s%s: not a list (no "
                  "items array or metadata.resourceVersion string, or a "
                  "metadata.continue that is not a string)",
                  o->k->conn.server, o->path);
  if(err) {
    kop_finish(o, err);
    return;
  }
  if(o->pages == 0) {
    /* the version of the list is its first page's: the continued pages
     * are of the same snapshot (client-go's pager keeps the first's) */
    o->list.revision = strdup(json_object_get_string(rv));
    if(!o->list.revision) {
      kop_finish(o, sc_errf(&o->eb, SC_ERR_NOMEM, "out of memory"));
      return;
    }
  }
  err = list_items(o, items);
  if(err) {
    kop_finish(o, err);
    return;
  }
  o->pages++;
  if(cv && *json_object_get_string(cv))
    cont = json_object_get_string(cv);
  if(cont) {
    size_t clen = strlen(cont);
    if(clen > CONTINUE_MAX || clen != (size_t)json_object_get_string_len(cv))
      err = sc_errf(&o->eb, SC_ERR_PROTOCOL, "kube GET %s%s: a continue token "
                    "of %zu bytes (at most %d, no NUL)", o->k->conn.server,
                    o->path, (size_t)json_object_get_string_len(cv),
                    CONTINUE_MAX);
    else if(o->cont && !strcmp(o->cont, cont))
      err = sc_errf(&o->eb, SC_ERR_PROTOCOL, "kube GET %s%s: the continue "
                    "token repeats the previous one: paging loop",
                    o->k->conn.server, o->path);
    else if(o->pages >= PAGES_MAX)
      err = sc_errf(&o->eb, SC_ERR_TOO_LARGE, "kube GET %s%s: more than %d "
                    "pages: giving up", o->k->conn.server, o->path,
                    PAGES_MAX);
    if(!err) {
      free(o->cont);
      o->cont = strdup(cont);
      if(!o->cont)
        err = sc_errf(&o->eb, SC_ERR_NOMEM, "out of memory");
    }
    if(!err) {
      /* pages well under the cap: ask for more objects at a time again */
      if(res->body_len < PAGE_BYTES / 8 && o->limit < PAGE_LIMIT) {
        o->limit = o->limit * 2 < PAGE_LIMIT ? o->limit * 2 : PAGE_LIMIT;
        o->k->page_limit = o->limit;
      }
      err = list_send(o, &o->eb);
    }
    if(err)
      kop_finish(o, err);
    return;
  }
  if(o->whole)
    store_skip_list_done(&o->k->base, &o->list);
  o->after_fin = list_fins;
  list_fins(o);
}

static sc_err list_start(kube_store *k, kube_http *h,
                         const store_list_opts *opts, store_reply_cb cb,
                         void *ud, sc_errbuf *eb)
{
  const char *ns = opts->namespace_ ? opts->namespace_ : k->ns;
  kop *o;
  sc_err err = kop_root(k, h, ns, NULL, NULL, cb, ud, &o, eb);
  if(err)
    return err;
  o->include_deleted = opts->include_deleted;
  o->whole = !opts->namespace_;
  o->limit = k->page_limit > 0 ? k->page_limit : PAGE_LIMIT;
  if(ns)
    obj_path(o->base, sizeof(o->base), ns, NULL, NULL);
  else
    snprintf(o->base, sizeof(o->base), GROUP_PATH "/sessions");
  err = list_send(o, eb);
  if(err)
    kop_free(o);
  return err;
}

/* --- update status --- */

static void status_put(kop *o, const kube_http_result *res)
{
  json_object *m, *rv;
  sc_err err = reply_err(o->k, res, o->method, o->path, &o->eb);
  if(!err && res->status != 200 && res->status != 201)
    err = http_err(res->status, res->body, "update status", o->ns, o->name,
                   &o->eb);
  if(!err) {
    if(json_object_object_get_ex(res->body, "metadata", &m) &&
       json_object_object_get_ex(m, "resourceVersion", &rv) &&
       json_object_is_type(rv, json_type_string)) {
      o->new_version = strdup(json_object_get_string(rv));
      if(!o->new_version)
        err = sc_errf(&o->eb, SC_ERR_NOMEM, "out of memory");
    }
    else
      err = sc_errf(&o->eb, SC_ERR_PROTOCOL, "kube PUT %s%s: the reply has "
                    "no metadata.resourceVersion string", o->k->conn.server,
                    o->path);
  }
  kop_finish(o, err);
}

/* One PUT of the /status subresource guarded by expected_version (the
 * server answers 409 when it moved; it keeps everything but the status
 * and writes nothing when the status is equal). */
static sc_err status_start(kube_store *k, kube_http *h, const char *ns,
                           const char *name, const char *expected_version,
                           const session_status *status, store_reply_cb cb,
                           void *ud, sc_errbuf *eb)
{
  kop *o;
  session *tmp;
  json_object *whole = NULL, *body = NULL, *m, *v;
  sc_err err = kop_root(k, h, ns, name, expected_version, cb, ud, &o, eb);
  if(err)
    return err;
  err = SC_ERR_NOMEM;
  tmp = session_new();
  if(tmp && !session_status_copy(&tmp->status, status)) {
    v = part_of(tmp, "status", &whole);
    body = json_object_new_object();
    m = json_object_new_object();
    json_object_object_add(body, "apiVersion",
                           json_object_new_string(SESSION_API_VERSION));
    json_object_object_add(body, "kind", json_object_new_string(SESSION_KIND));
    json_object_object_add(m, "name", json_object_new_string(name));
    json_object_object_add(m, "namespace", json_object_new_string(ns));
    json_object_object_add(m, "resourceVersion",
                           json_object_new_string(expected_version));
    json_object_object_add(body, "metadata", m);
    set_or_del(body, "status", v);
    obj_path(o->path, sizeof(o->path), ns, name, "/status");
    err = kop_send(o, "PUT", "application/json",
                   json_object_to_json_string_ext(body,
                                                  JSON_C_TO_STRING_PLAIN),
                   status_put, eb);
  }
  else
    sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  json_object_put(body);
  json_object_put(whole);
  session_free(tmp);
  if(err)
    kop_free(o);
  return err;
}

/* --- purge: a tombstone's finalizer goes --- */

static void purge_patched(kop *o, const kube_http_result *res)
{
  sc_err err = reply_err(o->k, res, o->method, o->path, &o->eb);
  if(!err && res->status != 200)
    err = http_err(res->status, res->body, "remove finalizer", o->ns,
                   o->name, &o->eb);
  kop_finish(o, err);
}

static void purge_got(kop *o, const kube_http_result *res)
{
  char *body;
  sc_err err = reply_err(o->k, res, o->method, o->path, &o->eb);
  if(!err && res->status != 200)
    err = http_err(res->status, res->body, "purge", o->ns, o->name, &o->eb);
  if(!err)
    err = kop_decode(o, res->body, "the object", &o->cur);
  if(!err && strcmp(o->cur->meta.resource_version, o->version))
    err = sc_errf(&o->eb, SC_ERR_CONFLICT, "kube: purge %s/%s: version %s is "
                  "not the current %s", o->ns, o->name, o->version,
                  o->cur->meta.resource_version);
  else if(!err && !o->cur->meta.deletion_timestamp)
    err = sc_errf(&o->eb, SC_ERR_INVALID, "kube: purge %s/%s: the object is "
                  "not being deleted", o->ns, o->name);
  if(err || !has_finalizer(o->cur)) {
    session_free(o->cur); /* nothing to give back */
    o->cur = NULL;
    kop_finish(o, err);
    return;
  }
  body = finalizer_patch(o->cur, false);
  session_free(o->cur);
  o->cur = NULL;
  if(!body)
    err = sc_errf(&o->eb, SC_ERR_NOMEM, "out of memory");
  else
    err = kop_send(o, "PATCH", "application/merge-patch+json", body,
                   purge_patched, &o->eb);
  free(body);
  if(err)
    kop_finish(o, err);
}

static sc_err purge_start(kube_store *k, kube_http *h, const char *ns,
                          const char *name, const char *expected_version,
                          store_reply_cb cb, void *ud, sc_errbuf *eb)
{
  kop *o;
  sc_err err = kop_root(k, h, ns, name, expected_version, cb, ud, &o, eb);
  if(err)
    return err;
  obj_path(o->path, sizeof(o->path), ns, name, NULL);
  err = kop_send(o, "GET", NULL, NULL, purge_got, eb);
  if(err)
    kop_free(o);
  return err;
}

/* --- the synchronous forms: the same on the private loop --- */

typedef struct ksync {
  bool done;
  store_reply rep;
  sc_errbuf eb;
} ksync;

static void on_ksync(store_reply *rep, void *ud)
{
  ksync *w = ud;
  w->done = true;
  w->rep = *rep;
  snprintf(w->eb.msg, sizeof(w->eb.msg), "%s", rep->message);
  rep->obj = NULL;
  memset(&rep->list, 0, sizeof(rep->list));
  rep->new_version = NULL;
}

/* wait for the operation started (err == SC_OK) into w */
static sc_err ksync_wait(kube_store *k, ksync *w, sc_err err, sc_errbuf *eb)
{
  if(err)
    return err;
  if(!sync_run(k, &w->done)) {
    /* the calls were dropped: drop the operations of this loop too */
    kop *o = k->ops, *next;
    for(; o; o = next) {
      next = o->next;
      if(o->h == k->shttp)
        kop_free(o);
    }
    return sc_errf(eb, SC_ERR_INTERNAL, "kube: the call was lost");
  }
  if(w->rep.err)
    return sc_errf(eb, w->rep.err, "%s", w->eb.msg);
  return SC_OK;
}

/* ------------------------------------------------------------------ */
/* store ops */

static sc_err k_list(store *st, const store_list_opts *opts,
                     store_list_result *out, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  ksync w;
  sc_err err;
  memset(&w, 0, sizeof(w));
  err = ksync_wait(k, &w, list_start(k, k->shttp, opts, on_ksync, &w, eb),
                   eb);
  if(!err)
    *out = w.rep.list;
  else
    store_list_result_free(&w.rep.list);
  return err;
}

static sc_err k_get(store *st, const char *ns, const char *name,
                    session **out, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  ksync w;
  sc_err err;
  memset(&w, 0, sizeof(w));
  err = ksync_wait(k, &w, get_start(k, k->shttp, ns, name, on_ksync, &w,
                                    eb), eb);
  if(!err)
    *out = w.rep.obj;
  else
    session_free(w.rep.obj);
  return err;
}

static sc_err put_obj(kube_store *k, json_object *raw, const char *ns,
                      const char *name, const char *sub, const char *op,
                      char **new_version, sc_errbuf *eb)
{
  char path[1200];
  long code;
  json_object *resp = NULL, *m, *rv;
  sc_err err;
  obj_path(path, sizeof(path), ns, name, sub);
  err = kreq(k, "PUT", path, "application/json",
             json_object_to_json_string_ext(raw, JSON_C_TO_STRING_PLAIN),
             &code, &resp, eb);
  if(!err && code != 200 && code != 201)
    err = http_err(code, resp, op, ns, name, eb);
  if(!err && new_version) {
    if(json_object_object_get_ex(resp, "metadata", &m) &&
       json_object_object_get_ex(m, "resourceVersion", &rv))
      *new_version = strdup(json_object_get_string(rv));
    else
      err = sc_errf(eb, SC_ERR_PROTOCOL, "kube: %s %s/%s: the reply has no "
                    "metadata.resourceVersion", op, ns, name);
  }
  json_object_put(resp);
  return err;
}

static sc_err apply_one(kube_store *k, const session *o,
                        store_apply_outcome *outcome, sc_errbuf *eb)
{
  const char *ns = o->meta.namespace_, *name = o->meta.name;
  json_object *raw = NULL, *whole = NULL, *meta, *spec;
  session *cur = NULL;
  sc_err err = get_raw(k, ns, name, &raw, &cur, eb);
  if(err == SC_ERR_NOT_FOUND) {
    /* create: apiVersion, kind, metadata (name, namespace, labels,
     * annotations) and spec only */
    char path[1200];
    long code;
    json_object *resp = NULL, *body = json_object_new_object(), *m;
    json_object *nm = json_object_new_object(), *v;
    spec = part_of(o, "spec", &whole);
    json_object_object_add(body, "apiVersion",
                           json_object_new_string(SESSION_API_VERSION));
    json_object_object_add(body, "kind", json_object_new_string(SESSION_KIND));
    json_object_object_add(nm, "name", json_object_new_string(name));
    json_object_object_add(nm, "namespace", json_object_new_string(ns));
    if(json_object_object_get_ex(whole, "metadata", &m)) {
      if(json_object_object_get_ex(m, "labels", &v))
        json_object_object_add(nm, "labels", json_object_get(v));
      if(json_object_object_get_ex(m, "annotations", &v))
        json_object_object_add(nm, "annotations", json_object_get(v));
    }
    json_object_object_add(body, "metadata", nm);
    set_or_del(body, "spec", spec);
    obj_path(path, sizeof(path), ns, NULL, NULL);
    err = kreq(k, "POST", path, "application/json",
               json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN),
               &code, &resp, eb);
    if(!err && code != 201 && code != 200)
      err = http_err(code, resp, "create", ns, name, eb);
    json_object_put(resp);
    json_object_put(body);
    json_object_put(whole);
    *outcome = STORE_APPLY_CREATED;
    return err;
  }
  if(err)
    return err;
  if(cur->meta.deletion_timestamp) {
    err = sc_errf(eb, SC_ERR_CONFLICT, "kube: apply %s/%s: the object is "
                  "being deleted (it waits for its sandbox to go); apply "
                  "again once it is gone", ns, name);
    goto out;
  }
  if(session_spec_equal(&cur->spec, &o->spec) &&
     sc_kvlist_equal(&cur->meta.labels, &o->meta.labels) &&
     sc_kvlist_equal(&cur->meta.annotations, &o->meta.annotations)) {
    *outcome = STORE_APPLY_UNCHANGED;
    goto out;
  }
  spec = part_of(o, "spec", &whole);
  set_or_del(raw, "spec", spec);
  if(json_object_object_get_ex(raw, "metadata", &meta)) {
    json_object *m, *v;
    json_object_object_get_ex(whole, "metadata", &m);
    set_or_del(meta, "labels",
               json_object_object_get_ex(m, "labels", &v) ? v : NULL);
    set_or_del(meta, "annotations",
               json_object_object_get_ex(m, "annotations", &v) ? v : NULL);
  }
  err = put_obj(k, raw, ns, name, NULL, "apply", NULL, eb);
  *outcome = STORE_APPLY_CONFIGURED;
out:
  json_object_put(whole);
  json_object_put(raw);
  session_free(cur);
  return err;
}

/* Kubernetes has no transaction over several objects: objects are applied
 * one after the other (a conflict with a concurrent writer is retried);
 * the first error stops the rest (docs/store.md). */
static sc_err k_apply(store *st, session *const *objs, size_t n,
                      store_apply_outcome *outcomes, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  size_t i;
  for(i = 0; i < n; i++) {
    store_apply_outcome oc = STORE_APPLY_UNCHANGED;
    sc_err err = SC_ERR_CONFLICT;
    int tries;
    for(tries = 0; tries < 3 && (err == SC_ERR_CONFLICT ||
                                 err == SC_ERR_EXISTS); tries++)
      err = apply_one(k, objs[i], &oc, eb);
    if(err)
      return err;
    if(outcomes)
      outcomes[i] = oc;
  }
  return SC_OK;
}

static sc_err k_update_spec(store *st, const char *ns, const char *name,
                            const char *expected_version,
                            const session_spec *spec, char **new_version,
                            sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  json_object *raw = NULL, *whole = NULL, *v;
  session *cur = NULL, *tmp = NULL;
  sc_err err = get_raw(k, ns, name, &raw, &cur, eb);
  if(err)
    return err;
  if(cur->meta.deletion_timestamp) {
    err = sc_errf(eb, SC_ERR_NOT_FOUND, "kube: update spec %s/%s: the object "
                  "is being deleted", ns, name);
    goto out;
  }
  if(strcmp(cur->meta.resource_version, expected_version)) {
    err = sc_errf(eb, SC_ERR_CONFLICT, "kube: update spec %s/%s: version %s "
                  "is not the current %s", ns, name, expected_version,
                  cur->meta.resource_version);
    goto out;
  }
  if(session_spec_equal(&cur->spec, spec)) {
    if(new_version && !(*new_version = strdup(cur->meta.resource_version)))
      err = SC_ERR_NOMEM;
    goto out;
  }
  tmp = session_new();
  if(!tmp || session_spec_copy(&tmp->spec, spec)) {
    err = SC_ERR_NOMEM;
    goto out;
  }
  v = part_of(tmp, "spec", &whole);
  set_or_del(raw, "spec", v);
  err = put_obj(k, raw, ns, name, NULL, "update spec", new_version, eb);
out:
  json_object_put(whole);
  json_object_put(raw);
  session_free(cur);
  session_free(tmp);
  return err;
}

static sc_err k_update_status(store *st, const char *ns, const char *name,
                              const char *expected_version,
                              const session_status *status,
                              char **new_version, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  ksync w;
  sc_err err;
  memset(&w, 0, sizeof(w));
  err = ksync_wait(k, &w, status_start(k, k->shttp, ns, name,
                                       expected_version, status, on_ksync,
                                       &w, eb), eb);
  if(!err && new_version)
    *new_version = w.rep.new_version;
  else
    free(w.rep.new_version);
  return err;
}

static sc_err k_delete(store *st, const char *ns, const char *name,
                       sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  char path[1200];
  long code;
  json_object *resp = NULL;
  sc_err err;
  obj_path(path, sizeof(path), ns, name, NULL);
  err = kreq(k, "DELETE", path, NULL, NULL, &code, &resp, eb);
  if(!err && code != 200 && code != 202)
    err = http_err(code, resp, "delete", ns, name, eb);
  json_object_put(resp);
  return err;
}

static sc_err k_purge(store *st, const char *ns, const char *name,
                      const char *expected_version, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  ksync w;
  memset(&w, 0, sizeof(w));
  return ksync_wait(k, &w, purge_start(k, k->shttp, ns, name,
                                       expected_version, on_ksync, &w, eb),
                    eb);
}

/* the asynchronous forms (store.h): on the controller's loop */

static sc_err k_list_async(store *st, const store_list_opts *opts,
                           store_reply_cb cb, void *ud, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  return list_start(k, k->http, opts, cb, ud, eb);
}

static sc_err k_get_async(store *st, const char *ns, const char *name,
                          store_reply_cb cb, void *ud, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  return get_start(k, k->http, ns, name, cb, ud, eb);
}

static sc_err k_update_status_async(store *st, const char *ns,
                                    const char *name,
                                    const char *expected_version,
                                    const session_status *status,
                                    store_reply_cb cb, void *ud,
                                    sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  return status_start(k, k->http, ns, name, expected_version, status, cb, ud,
                      eb);
}

static sc_err k_purge_async(store *st, const char *ns, const char *name,
                            const char *expected_version, store_reply_cb cb,
                            void *ud, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  return purge_start(k, k->http, ns, name, expected_version, cb, ud, eb);
}

static size_t k_async_inflight(const store *st)
{
  return ((const kube_store *)st)->n_ops;
}

/* ------------------------------------------------------------------ */
/* watch */

static void watch_begin(kube_watch *w);
static void watch_free(kube_watch *w);

/* start w's request after its backoff (half to all of it, at random),
 * or after the server's Retry-After when that is longer */
static void watch_schedule(kube_watch *w)
{
  struct timeval tv;
  unsigned char r = 0;
  int ms;
  (void)RAND_bytes(&r, 1);
  ms = w->backoff_ms / 2 + (w->backoff_ms / 2) * r / 255;
  if(w->k->watch_retry_after_ms > ms)
    ms = w->k->watch_retry_after_ms;
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  evtimer_add(w->retry, &tv);
}

static void watch_fail(kube_watch *w, sc_err err, const char *msg)
{
  kube_store *k = w->k;
  /* the backoff doubles across the watches of this store: the watcher
   * may stop this one in err_cb and start another at once */
  w->backoff_ms = w->backoff_ms > k->watch_backoff_ms ? w->backoff_ms
                  : k->watch_backoff_ms;
  w->backoff_ms = w->backoff_ms ? w->backoff_ms * 2 : 200;
  if(w->backoff_ms > WATCH_BACKOFF_MAX_MS)
    w->backoff_ms = WATCH_BACKOFF_MAX_MS;
  k->watch_backoff_ms = w->backoff_ms;
  if(!w->failing && w->err_cb) {
    w->failing = true;
    w->in_cb = true;
    w->err_cb(err, msg, w->ud);
    w->in_cb = false;
    if(w->stopped)
      return;
  }
  w->failing = true;
  watch_schedule(w);
}

static void watch_expire(kube_watch *w, const char *msg)
{
  w->expired = true;
  if(w->err_cb) {
    w->in_cb = true;
    w->err_cb(SC_ERR_EXPIRED, msg, w->ud);
    w->in_cb = false;
  }
}

static bool deleted_seen(kube_watch *w, const char *uid, bool add,
                         bool remove)
{
  size_t i;
  for(i = 0; i < w->n_deleted; i++)
    if(!strcmp(w->deleted[i], uid)) {
      if(remove) {
        free(w->deleted[i]);
        w->deleted[i] = w->deleted[--w->n_deleted];
      }
      return true;
    }
  if(add) {
    char **d = realloc(w->deleted, (w->n_deleted + 1) * sizeof(*d));
    if(d) {
      w->deleted = d;
      d[w->n_deleted] = strdup(uid);
      if(d[w->n_deleted])
        w->n_deleted++;
    }
  }
  return false;
}

/* one line of the stream */
static void watch_line(kube_watch *w, const char *line, size_t len)
{
  json_object *ev = NULL, *t, *o, *m, *rv;
  const char *type;
  char typebuf[32], why[SC_ERRBUF_SIZE];
  session *s = NULL;
  store_event se;
  char msg[SC_ERRBUF_SIZE + 256];
  why[0] = '\0';
  if(kjson_parse(line, len, &ev, why, sizeof(why)) ||
     !json_object_object_get_ex(ev, "type", &t) ||
     !json_object_is_type(t, json_type_string) ||
     !json_object_object_get_ex(ev, "object", &o)) {
    json_object_put(ev);
    snprintf(msg, sizeof(msg), "kube watch %s: a line that is not a watch "
             "event%s%s%s", w->k->conn.server, why[0] ? " (" : "", why,
             why[0] ? ")" : "");
    if(w->err_cb) {
      w->in_cb = true;
      w->err_cb(SC_ERR_PROTOCOL, msg, w->ud);
      w->in_cb = false;
    }
    return;
  }
  /* a copy: the event object is released before the type is looked at */
  snprintf(typebuf, sizeof(typebuf), "%s", json_object_get_string(t));
  type = typebuf;
  rv = NULL;
  if(json_object_object_get_ex(o, "metadata", &m))
    json_object_object_get_ex(m, "resourceVersion", &rv);
  if(!strcmp(type, "ERROR")) {
    json_object *c;
    int code = json_object_object_get_ex(o, "code", &c) ?
               json_object_get_int(c) : 0;
    snprintf(msg, sizeof(msg), "kube watch from %s: %d %s", w->pos, code,
             status_msg(o));
    json_object_put(ev);
    if(code == 410)
      watch_expire(w, msg);
    else
      w->code = -code; /* ends in watch_fail when the stream ends */
    return;
  }
  if(rv && json_object_is_type(rv, json_type_string)) {
    char *p = strdup(json_object_get_string(rv));
    if(p) {
      free(w->pos);
      w->pos = p;
    }
  }
  if(!strcmp(type, "BOOKMARK")) {
    json_object_put(ev);
    return;
  }
  if(obj_decode(o, &s, why, sizeof(why)) == SC_ERR_NOMEM) {
    json_object_put(ev);
    if(w->err_cb) {
      w->in_cb = true;
      w->err_cb(SC_ERR_NOMEM, "kube watch: out of memory decoding an event",
                w->ud);
      w->in_cb = false;
    }
    return;
  }
  if(!s) {
    /* skipped and reported; the watch goes on with the next event (the
     * position moved past this one above) */
    char what[64];
    snprintf(what, sizeof(what), "the %.16s event at %.24s", type,
             w->pos ? w->pos : "?");
    (void)skip_obj(w->k, NULL, "watch", o, what, why);
    json_object_put(ev);
    return;
  }
  json_object_put(ev);
  se.obj = s;
  se.revision = s->meta.resource_version ? s->meta.resource_version : "";
  if(!strcmp(type, "ADDED"))
    se.type = STORE_EVENT_ADDED;
  else if(!strcmp(type, "MODIFIED")) {
    se.type = STORE_EVENT_MODIFIED;
    /* the first sight of deletionTimestamp is the store's DELETED */
    if(s->meta.deletion_timestamp && s->meta.uid &&
       !deleted_seen(w, s->meta.uid, true, false))
      se.type = STORE_EVENT_DELETED;
  }
  else if(!strcmp(type, "DELETED")) {
    if(s->meta.deletion_timestamp) {
      /* the finalizer went: a purge, which watchers do not see */
      if(s->meta.uid)
        deleted_seen(w, s->meta.uid, false, true);
      session_free(s);
      return;
    }
    se.type = STORE_EVENT_DELETED;
    s->meta.deletion_timestamp = sctime_wall_ms();
  }
  else {
    session_free(s);
    return;
  }
  w->in_cb = true;
  w->cb(&se, w->ud);
  w->in_cb = false;
  session_free(s);
}

static void watch_drain(kube_watch *w)
{
  char *buf, *nl;
  size_t off = 0, len = dynbuf_len(&w->line);
  if(!len)
    return;
  buf = dynbuf_take(&w->line);
  if(!buf)
    return;
  while(!w->stopped && !w->expired &&
        (nl = memchr(buf + off, '\n', len - off))) {
    *nl = 0;
    if(nl > buf + off)
      watch_line(w, buf + off, (size_t)(nl - (buf + off)));
    off = (size_t)(nl - buf) + 1;
  }
  if(off < len && !w->stopped && !w->expired)
    (void)dynbuf_add(&w->line, buf + off, len - off);
  free(buf);
  w->cur_line = dynbuf_len(&w->line);
}

/* events over LINE_MAX_ that on_stream dropped: reported */
static void watch_report_oversized(kube_watch *w)
{
  char why[160];
  if(!w->oversized || w->stopped)
    return;
  snprintf(why, sizeof(why), "%u watch event%s of more than %d bytes (the "
           "line cap) after %.24s: skipped", w->oversized,
           w->oversized > 1 ? "s" : "", LINE_MAX_, w->pos ? w->pos : "?");
  w->oversized = 0;
  (void)store_skip_report(&w->k->base, NULL, "watch", NULL, NULL, NULL, why,
                          NULL);
}

/* The bytes of the stream. A line (one event) longer than LINE_MAX_ is
 * dropped as it comes, to its end, and reported: the watch goes on with
 * the next event. */
static size_t on_stream(char *p, size_t sz, size_t n, void *ud)
{
  kube_watch *w = ud;
  size_t len = sz * n, off = 0;
  if(!w->code) {
    curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &w->code);
    if(w->code == 200) /* the server is watching again */
      w->k->watch_backoff_ms = w->k->watch_retry_after_ms = 0;
  }
  if(w->code != 200)
    return len; /* a Status body; the code says it all */
  while(off < len) {
    const char *nl = memchr(p + off, '\n', len - off);
    size_t seg = nl ? (size_t)(nl - (p + off)) + 1 : len - off;
    if(w->skipping) {
      w->skipping = !nl;
      off += seg;
      continue;
    }
    if(w->cur_line + seg > LINE_MAX_ + (nl ? 1 : 0)) {
      /* this event is over the cap: forget what we have of it */
      w->line.len -= w->cur_line;
      if(w->line.mem)
        w->line.mem[w->line.len] = '\0';
      w->cur_line = 0;
      w->oversized++;
      w->skipping = !nl;
      off += seg;
      continue;
    }
    if(dynbuf_add(&w->line, p + off, seg))
      return 0; /* more whole lines than the buffer holds: fail */
    w->cur_line = nl ? 0 : w->cur_line + seg;
    off += seg;
  }
  return len;
}

static void drain_all(kube_store *k)
{
  kube_watch *w, *next;
  for(w = k->watches; w; w = next) {
    next = w->next;
    if(w->stopped)
      continue;
    watch_drain(w);
    watch_report_oversized(w);
  }
  for(w = k->watches; w; w = next) {
    next = w->next;
    if(w->stopped && !w->in_cb)
      watch_free(w);
  }
}

static void watch_done(kube_watch *w, CURLcode cc)
{
  char msg[400];
  long code = w->code;
  if(!code)
    curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &code);
  watch_drain(w);
  watch_report_oversized(w);
  if(w->stopped || w->expired)
    return;
  if(cc == CURLE_OK && code == 200) {
    w->failing = false;
    w->backoff_ms = 0;
    watch_begin(w); /* timeoutSeconds ran out: go on from pos */
    return;
  }
  if(code == 410) {
    snprintf(msg, sizeof(msg), "kube watch from %s: 410 Gone", w->pos);
    watch_expire(w, msg);
    return;
  }
  if(code == 401)
    (void)kube_conn_unauthorized(&w->k->conn, &w->auth);
  w->k->watch_retry_after_ms = 0;
  if(cc == CURLE_OK && (code == 429 || code >= 500)) {
    curl_off_t ra = 0;
    (void)curl_easy_getinfo(w->easy, CURLINFO_RETRY_AFTER, &ra);
    if(ra > 0)
      w->k->watch_retry_after_ms = ra > WATCH_BACKOFF_MAX_MS / 1000
                                   ? WATCH_BACKOFF_MAX_MS : (int)ra * 1000;
  }
  if(cc != CURLE_OK) {
    char d[300];
    kube_http_curl_detail(&w->k->conn, cc, w->errbuf, d, sizeof(d));
    snprintf(msg, sizeof(msg), "kube watch %s: %s", w->k->conn.server, d);
  }
  else
    snprintf(msg, sizeof(msg), "kube watch %s: HTTP %ld", w->k->conn.server,
             code < 0 ? -code : code);
  watch_fail(w, SC_ERR_IO, msg);
}

/* a watch request ended (curlev took its handle out of the multi) */
static void on_transfer(CURL *e, CURLcode cc, void *ud)
{
  kube_watch *w = NULL;
  (void)ud;
  curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&w);
  watch_done(w, cc);
}

/* after a batch of ended transfers */
static void on_batch(void *ud)
{
  drain_all(ud);
}

static void watch_begin(kube_watch *w)
{
  kube_store *k = w->k;
  char url[2400], *epos;
  unsigned char r[2] = {0, 0};
  int timeout = k->watch_timeout_s;
  sc_errbuf eb;
  eb.msg[0] = 0;
  if(!timeout) {
    (void)RAND_bytes(r, 2);
    timeout = 240 + (r[0] | r[1] << 8) % 120;
  }
  kube_auth_clear(&w->auth);
  if(kube_conn_auth(&k->conn, k->evbase, &w->auth, &eb)) {
    watch_fail(w, SC_ERR_IO, eb.msg);
    return;
  }
  epos = curl_easy_escape(NULL, w->pos, 0);
  if(k->ns) {
    char *ens = curl_easy_escape(NULL, k->ns, 0);
    snprintf(url, sizeof(url), "%s" GROUP_PATH "/namespaces/%s/sessions?"
             "watch=1&resourceVersion=%s&allowWatchBookmarks=true&"
             "timeoutSeconds=%d", k->conn.server, ens ? ens : "",
             epos ? epos : "", timeout);
    curl_free(ens);
  }
  else
    snprintf(url, sizeof(url), "%s" GROUP_PATH "/sessions?watch=1&"
             "resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=%d",
             k->conn.server, epos ? epos : "", timeout);
  curl_free(epos);
  curl_slist_free_all(w->hdrs);
  w->hdrs = watch_headers(&w->auth);
  dynbuf_reset(&w->line);
  w->cur_line = 0;
  w->skipping = false;
  w->code = 0;
  w->errbuf[0] = 0;
  curl_easy_reset(w->easy);
  curl_easy_setopt(w->easy, CURLOPT_URL, url);
  curl_easy_setopt(w->easy, CURLOPT_HTTPHEADER, w->hdrs);
  curl_easy_setopt(w->easy, CURLOPT_WRITEFUNCTION, on_stream);
  curl_easy_setopt(w->easy, CURLOPT_WRITEDATA, w);
  curl_easy_setopt(w->easy, CURLOPT_PRIVATE, w);
  curl_easy_setopt(w->easy, CURLOPT_ERRORBUFFER, w->errbuf);
  curl_easy_setopt(w->easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(w->easy, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  curl_easy_setopt(w->easy, CURLOPT_PROTOCOLS_STR, "http,https");
  /* a silent stream (no bookmark, no event) for 2 timeouts is dead */
  curl_easy_setopt(w->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(w->easy, CURLOPT_LOW_SPEED_TIME, (long)timeout * 2);
  kube_conn_curl_tls(&k->conn, &w->auth, w->easy);
  if(curlev_add(k->ev, w->easy))
    watch_fail(w, SC_ERR_IO, "kube watch: cannot start the request");
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
  kube_watch *w = arg;
  (void)fd;
  (void)what;
  if(!w->stopped && !w->expired)
    watch_begin(w);
}

static void watch_free(kube_watch *w)
{
  kube_watch **pp;
  size_t i;
  for(pp = &w->k->watches; *pp; pp = &(*pp)->next)
    if(*pp == w) {
      *pp = w->next;
      break;
    }
  if(w->easy) {
    curlev_remove(w->k->ev, w->easy);
    curl_easy_cleanup(w->easy);
  }
  curl_slist_free_all(w->hdrs);
  kube_auth_clear(&w->auth);
  if(w->retry)
    event_free(w->retry);
  dynbuf_free(&w->line);
  for(i = 0; i < w->n_deleted; i++)
    free(w->deleted[i]);
  free(w->deleted);
  free(w->pos);
  free(w);
}

static void k_watch_stop(store_watch *sw)
{
  kube_watch *w = (kube_watch *)sw;
  w->stopped = true;
  if(w->in_cb)
    return; /* freed by drain_all once the callback returned */
  {
    /* outside a callback, but maybe inside drain: defer if any watch of
     * this store is being delivered */
    kube_watch *x;
    for(x = w->k->watches; x; x = x->next)
      if(x->in_cb)
        return;
  }
  watch_free(w);
}

static sc_err k_watch_start(store *st, const char *from_revision,
                            store_watch_cb cb, store_watch_err_cb err_cb,
                            void *ud, store_watch **out, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  kube_watch *w;
  if(!k->evbase)
    return sc_errf(eb, SC_ERR_INVALID, "kube: watch needs an event loop "
                   "(store_open_opts.base)");
  w = calloc(1, sizeof(*w));
  if(!w)
    return SC_ERR_NOMEM;
  w->base.ops = k->base.ops;
  w->k = k;
  w->cb = cb;
  w->err_cb = err_cb;
  w->ud = ud;
  dynbuf_init(&w->line, 2 * LINE_MAX_ + 2);
  w->easy = curl_easy_init();
  w->retry = evtimer_new(k->evbase, on_retry, w);
  if(from_revision && *from_revision)
    w->pos = strdup(from_revision);
  else {
    /* "from now": the list's version */
    store_list_result r;
    store_list_opts lo = {NULL, false};
    sc_err err;
    memset(&r, 0, sizeof(r));
    err = k_list(st, &lo, &r, eb);
    if(err) {
      store_list_result_free(&r);
      w->next = NULL;
      watch_free(w);
      return err;
    }
    w->pos = r.revision;
    r.revision = NULL;
    store_list_result_free(&r);
  }
  if(!w->easy || !w->retry || !w->pos) {
    watch_free(w);
    return SC_ERR_NOMEM;
  }
  w->next = k->watches;
  k->watches = w;
  if(k->watch_backoff_ms) {
    /* the last watch failed: this one waits its turn */
    w->backoff_ms = k->watch_backoff_ms;
    watch_schedule(w);
  }
  else
    watch_begin(w);
  *out = &w->base;
  return SC_OK;
}

static void k_close(store *st)
{
  kube_store *k = (kube_store *)st;
  while(k->watches)
    watch_free(k->watches);
  /* the clients first: they drop their calls, then the operations */
  kube_http_free(k->http);
  kube_http_free(k->shttp);
  while(k->ops)
    kop_free(k->ops);
  if(k->sbase)
    event_base_free(k->sbase);
  curlev_free(k->ev);
  kube_conn_clear(&k->conn);
  free(k->ns);
  free(k);
}

static const store_ops kube_ops = {
  "kube", k_close, k_list, k_get, k_apply, k_update_spec, k_update_status,
  k_delete, k_purge, k_watch_start, k_watch_stop, k_list_async, k_get_async,
  k_update_status_async, k_purge_async, k_async_inflight,
  NULL, /* no file to lose: the API server is the store */
  kube_claim_name, kube_served_by_get /* on the CRD (store_kube_name.c) */
};

/* a kube_http client on base with a copy of k's connection */
static sc_err new_client(kube_store *k, struct event_base *base,
                         const char *ua, kube_http **out, sc_errbuf *eb)
{
  kube_conn c;
  if(kube_conn_copy(&c, &k->conn))
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  *out = kube_http_new(base, &c, ua, eb);
  kube_conn_clear(&c);
  return *out ? SC_OK : SC_ERR_NOMEM;
}

sc_err store_kube_open(const char *context, const store_open_opts *opts,
                       store **out, sc_errbuf *eb)
{
  kube_store *k;
  sc_err err;
  *out = NULL;
  if(curl_global_init(CURL_GLOBAL_DEFAULT))
    return sc_errf(eb, SC_ERR_INTERNAL, "kube: curl_global_init failed");
  k = calloc(1, sizeof(*k));
  if(!k)
    return SC_ERR_NOMEM;
  k->base.ops = &kube_ops;
  err = kube_conn_resolve(opts->kubeconfig, context, &k->conn, eb);
  if(err) {
    k_close(&k->base);
    return err;
  }
  if(opts->namespace_ && *opts->namespace_) {
    k->ns = strdup(opts->namespace_);
    if(!k->ns) {
      k_close(&k->base);
      return SC_ERR_NOMEM;
    }
  }
  k->add_finalizer = opts->add_finalizer;
  k->mark_invalid = opts->mark_invalid;
  k->page_limit = PAGE_LIMIT;
  k->watch_timeout_s = opts->watch_timeout_s;
  k->evbase = opts->base;
  k->sbase = event_base_new();
  err = k->sbase ? new_client(k, k->sbase, opts->user_agent, &k->shttp, eb)
                 : sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  if(!err && k->evbase)
    err = new_client(k, k->evbase, opts->user_agent, &k->http, eb);
  if(err) {
    k_close(&k->base);
    return err;
  }
  if(k->evbase) {
    k->ev = curlev_new(k->evbase, on_transfer, on_batch, k, eb);
    if(!k->ev) {
      k_close(&k->base);
      return SC_ERR_NOMEM;
    }
  }
  {
    /* the credential must be there now (an exec plugin runs here) */
    kube_auth a;
    err = kube_conn_auth(&k->conn, NULL, &a, eb);
    kube_auth_clear(&a);
  }
  if(err) {
    k_close(&k->base);
    return err;
  }
  *out = &k->base;
  return SC_OK;
}

sc_err store_kube_conn(const store *st, kube_conn *out, sc_errbuf *eb)
{
  memset(out, 0, sizeof(*out));
  if(!st || st->ops != &kube_ops)
    return sc_errf(eb, SC_ERR_INVALID, "store %s: not the kube store",
                   store_backend(st));
  if(kube_conn_copy(out, &((const kube_store *)st)->conn))
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  return SC_OK;
}
