/* store_kube.c - the store on a Kubernetes API server: the Session custom
 * resource lea.io/v1alpha1 (docs/store.md "The kube backend").
 *
 * Synchronous calls use one libcurl easy handle (store.h is synchronous);
 * watches are streaming GETs on a libcurl multi handle driven by the
 * libevent loop of store_open_opts.base. */
#include "store_impl.h"
#include "curlev.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>
#include <event2/event.h>
#include <json-c/json.h>
#include <openssl/rand.h>
#include "../api/session_json.h"
#include "../lib/dynbuf.h"
#include "../lib/sctime.h"
#include "kubeconfig.h"

#define GROUP_PATH "/apis/lea.io/v1alpha1"
#define FINALIZER "lea.io/sandbox-cleanup"
#define RESP_MAX (64 * 1024 * 1024)
#define LINE_MAX_ (4 * 1024 * 1024)
#define TOKEN_TTL_MS 60000
#define RETRIES 4
/* a server's Retry-After is honoured up to this (the synchronous calls
 * block the event loop; watches wait at most WATCH_BACKOFF_MAX_MS) */
#define RETRY_AFTER_MAX_MS 5000
#define WATCH_BACKOFF_MAX_MS 30000

typedef struct kube_watch kube_watch;

typedef struct kube_store {
  store base;
  kube_conn conn;
  char *ns;                /* list/watch filter; NULL = all */
  bool add_finalizer;
  int watch_timeout_s;
  char *token;             /* the bearer token in use */
  int64_t token_read_ms;   /* monotonic; 0 = never */
  CURL *easy;
  struct event_base *evbase;
  curlev *ev;              /* watches: the multi handle on the loop */
  kube_watch *watches;
  /* the backoff of the last failed watch request, 0 once a watch got
   * its 200: a watch started after a failure (the reconciler stops a
   * failed watch and starts a new one) waits this long, so a server
   * failing every watch is not asked again in a tight loop */
  int watch_backoff_ms;
  int watch_retry_after_ms;  /* the server's last Retry-After on a watch */
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
  dynbuf line;             /* bytes of the stream not yet a whole line */
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

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
  dynbuf *b = ud;
  return dynbuf_add(b, p, sz * n) ? 0 : sz * n;
}

static sc_err refresh_token(kube_store *k, bool force, sc_errbuf *eb)
{
  int64_t now = sctime_mono_ms();
  char *t = NULL;
  sc_err err;
  if(!force && k->token_read_ms && now - k->token_read_ms < TOKEN_TTL_MS)
    return SC_OK;
  err = kube_conn_token(&k->conn, &t, eb);
  if(err)
    return err;
  free(k->token);
  k->token = t;
  k->token_read_ms = now;
  return SC_OK;
}

static struct curl_slist *headers(kube_store *k, const char *ctype)
{
  struct curl_slist *h = NULL, *t;
  char buf[8300];
  h = curl_slist_append(h, "Accept: application/json");
  if(h && ctype) {
    snprintf(buf, sizeof(buf), "Content-Type: %s", ctype);
    t = curl_slist_append(h, buf);
    if(!t) {
      curl_slist_free_all(h);
      return NULL;
    }
    h = t;
  }
  if(h && k->token) {
    snprintf(buf, sizeof(buf), "Authorization: Bearer %s", k->token);
    t = curl_slist_append(h, buf);
    if(!t) {
      curl_slist_free_all(h);
      return NULL;
    }
    h = t;
  }
  return h;
}

static void tls_opts(kube_store *k, CURL *e)
{
  kube_conn_curl_tls(&k->conn, e);
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

static void sleep_ms(int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* transport errors that another attempt will not cure: the TLS setup
 * (certificates, keys, the server's certificate not trusted) and URLs */
static bool curl_permanent(CURLcode cc)
{
  switch(cc) {
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_CIPHER:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_UNSUPPORTED_PROTOCOL:
  case CURLE_URL_MALFORMAT:
  case CURLE_WRITE_ERROR:
    return true;
  default:
    return false;
  }
}

/* "TLS: <curl's detail> (check certificate-authority ...)" for TLS
 * failures, else curl's detail or its generic text */
static void curl_detail(const kube_store *k, CURLcode cc, const char *ebuf,
                        char *out, size_t len)
{
  const char *d = ebuf && *ebuf ? ebuf : curl_easy_strerror(cc);
  switch(cc) {
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_ISSUER_ERROR:
    snprintf(out, len, "TLS: the server's certificate is not trusted: %s "
             "(check certificate-authority of %s)", d, k->conn.source);
    break;
  case CURLE_SSL_CERTPROBLEM:
    snprintf(out, len, "TLS: the client certificate or key is not usable: "
             "%s (%s)", d, k->conn.source);
    break;
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_SSL_CIPHER:
  case CURLE_RECV_ERROR:
  case CURLE_SEND_ERROR:
  case CURLE_GOT_NOTHING:
    /* TLS 1.3 ends the handshake before the server checks the client's
     * certificate: a refusal shows as a connection dropped while reading */
    if(k->conn.cert_pem && !strncmp(k->conn.server, "https:", 6))
      snprintf(out, len, "%s%s (TLS: the server may have refused the client "
               "certificate of %s)", cc == CURLE_SSL_CONNECT_ERROR ?
               "TLS handshake failed: " : "", d, k->conn.source);
    else
      snprintf(out, len, "%s%s", cc == CURLE_SSL_CONNECT_ERROR ?
               "TLS handshake failed: " : "", d);
    break;
  default:
    snprintf(out, len, "%s", d);
  }
}

/* the wait before attempt `attempt + 1`: 100 ms doubling, at least the
 * server's Retry-After (seconds; capped at RETRY_AFTER_MAX_MS) */
static int retry_wait_ms(int attempt, long retry_after_s)
{
  int ms = 100 << attempt;
  if(retry_after_s > 0) {
    long ra = retry_after_s > RETRY_AFTER_MAX_MS / 1000
              ? RETRY_AFTER_MAX_MS : retry_after_s * 1000;
    if(ra > ms)
      ms = (int)ra;
  }
  return ms;
}

/* One synchronous call. *code is the HTTP status; *resp the parsed body
 * (NULL when empty or not JSON; the caller puts it). Retries 401 once
 * with a re-read token, and 429/5xx and transport errors RETRIES times
 * with backoff (100 ms doubling, or the server's Retry-After when longer,
 * capped); TLS setup errors are not retried. */
static sc_err kreq(kube_store *k, const char *method, const char *path,
                   const char *ctype, const char *body, long *code,
                   json_object **resp, sc_errbuf *eb)
{
  dynbuf b;
  char url[2048], ebuf[CURL_ERROR_SIZE];
  int attempt;
  bool reauth = false;
  sc_err err = SC_OK;
  *code = 0;
  *resp = NULL;
  snprintf(url, sizeof(url), "%s%s", k->conn.server, path);
  dynbuf_init(&b, RESP_MAX);
  for(attempt = 0; attempt <= RETRIES; attempt++) {
    struct curl_slist *h;
    CURLcode cc;
    curl_off_t ra = 0;
    err = refresh_token(k, false, eb);
    if(err)
      break;
    h = headers(k, ctype);
    if(!h) {
      err = SC_ERR_NOMEM;
      break;
    }
    dynbuf_reset(&b);
    ebuf[0] = 0;
    curl_easy_reset(k->easy);
    curl_easy_setopt(k->easy, CURLOPT_URL, url);
    curl_easy_setopt(k->easy, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(k->easy, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(k->easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(k->easy, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(k->easy, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(k->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(k->easy, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(k->easy, CURLOPT_TIMEOUT_MS, 30000L);
    curl_easy_setopt(k->easy, CURLOPT_PROTOCOLS_STR, "http,https");
    if(body) {
      curl_easy_setopt(k->easy, CURLOPT_POSTFIELDS, body);
      curl_easy_setopt(k->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    tls_opts(k, k->easy);
    cc = curl_easy_perform(k->easy);
    curl_slist_free_all(h);
    if(cc != CURLE_OK) {
      char d[SC_ERRBUF_SIZE];
      curl_detail(k, cc, ebuf, d, sizeof(d));
      err = sc_errf(eb, cc == CURLE_WRITE_ERROR ? SC_ERR_TOO_LARGE
                    : SC_ERR_UNAVAILABLE, "kube %s %s: %s (after %d "
                    "attempt%s)", method, url, d, attempt + 1,
                    attempt ? "s" : "");
      if(curl_permanent(cc))
        break;
    }
    else {
      curl_easy_getinfo(k->easy, CURLINFO_RESPONSE_CODE, code);
      if(*code == 401 && !reauth && (k->conn.token_file)) {
        reauth = true;
        k->token_read_ms = 0; /* rotated? read it again */
        attempt--;
        continue;
      }
      if(*code == 429 || *code >= 500) {
        json_object *st = dynbuf_len(&b) ?
                          json_tokener_parse(dynbuf_ptr(&b)) : NULL;
        err = sc_errf(eb, SC_ERR_UNAVAILABLE, "kube %s %s: HTTP %ld%s%s "
                      "(after %d attempt%s)", method, url, *code,
                      *status_msg(st) ? ": " : "", status_msg(st),
                      attempt + 1, attempt ? "s" : "");
        json_object_put(st);
        (void)curl_easy_getinfo(k->easy, CURLINFO_RETRY_AFTER, &ra);
      }
      else {
        err = SC_OK;
        break;
      }
    }
    if(attempt < RETRIES)
      sleep_ms(retry_wait_ms(attempt, (long)ra));
  }
  if(!err && dynbuf_len(&b)) {
    *resp = json_tokener_parse(dynbuf_ptr(&b));
    if(!*resp && *code < 300)
      err = sc_errf(eb, SC_ERR_PROTOCOL, "kube %s %s: HTTP %ld with a body "
                    "that is not JSON", method, url, *code);
  }
  if(!err && *code == 401)
    err = sc_errf(eb, SC_ERR_INVALID, "kube %s %s: 401 Unauthorized (check "
                  "the credentials of %s)", method, url, k->conn.source);
  else if(!err && *code == 403)
    err = sc_errf(eb, SC_ERR_INVALID, "kube %s %s: 403 Forbidden: %s",
                  method, url, status_msg(*resp));
  dynbuf_free(&b);
  if(err) {
    json_object_put(*resp);
    *resp = NULL;
  }
  return err;
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
  sc_errbuf e2;
  sc_err err;
  e2.msg[0] = 0;
  err = session_from_json_object_flags(o,
                                       SESSION_JSON_IGNORE_UNKNOWN_METADATA,
                                       out, &e2);
  if(err)
    return sc_errf(eb, SC_ERR_PROTOCOL, "kube: %s does not decode: %s", what,
                   e2.msg);
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

/* merge patch of metadata.finalizers (with or without ours) guarded by
 * resourceVersion; *out (may be NULL) the object after */
static sc_err patch_finalizers(kube_store *k, const session *s, bool add,
                               session **out, sc_errbuf *eb)
{
  json_object *p = json_object_new_object(), *m = json_object_new_object(),
              *a = json_object_new_array(), *resp = NULL;
  char path[1200];
  long code;
  size_t i;
  sc_err err;
  if(out)
    *out = NULL;
  for(i = 0; i < s->meta.n_finalizers; i++)
    if(strcmp(s->meta.finalizers[i], FINALIZER))
      json_object_array_add(a, json_object_new_string(s->meta.finalizers[i]));
  if(add)
    json_object_array_add(a, json_object_new_string(FINALIZER));
  json_object_object_add(m, "resourceVersion",
                         json_object_new_string(s->meta.resource_version));
  json_object_object_add(m, "finalizers", a);
  json_object_object_add(p, "metadata", m);
  obj_path(path, sizeof(path), s->meta.namespace_, s->meta.name, NULL);
  err = kreq(k, "PATCH", path, "application/merge-patch+json",
             json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN), &code,
             &resp, eb);
  json_object_put(p);
  if(!err && code != 200)
    err = http_err(code, resp, add ? "add finalizer" : "remove finalizer",
                   s->meta.namespace_, s->meta.name, eb);
  if(!err && out && add)
    err = decode(resp, "the patched object", out, eb);
  json_object_put(resp);
  return err;
}

/* the controller's first visit: make sure the finalizer is there; *s may
 * be replaced by the patched object, or freed and NULLed when it vanished */
static sc_err ensure_finalizer(kube_store *k, session **s, sc_errbuf *eb)
{
  int tries;
  for(tries = 0; tries < 3; tries++) {
    session *n = NULL;
    json_object *raw = NULL;
    sc_err err;
    if(!k->add_finalizer || (*s)->meta.deletion_timestamp ||
       has_finalizer(*s))
      return SC_OK;
    err = patch_finalizers(k, *s, true, &n, eb);
    if(!err) {
      session_free(*s);
      *s = n;
      return SC_OK;
    }
    if(err != SC_ERR_CONFLICT && err != SC_ERR_NOT_FOUND)
      return err;
    err = get_raw(k, (*s)->meta.namespace_, (*s)->meta.name, &raw, &n, eb);
    json_object_put(raw);
    if(err == SC_ERR_NOT_FOUND) {
      session_free(*s);
      *s = NULL;
      return SC_OK;
    }
    if(err)
      return err;
    session_free(*s);
    *s = n;
  }
  return sc_errf(eb, SC_ERR_CONFLICT, "kube: adding the finalizer to %s/%s "
                 "kept conflicting", (*s)->meta.namespace_, (*s)->meta.name);
}

/* ------------------------------------------------------------------ */
/* store ops */

static int cmp_sess(const void *a, const void *b)
{
  const session *x = *(session *const *)a, *y = *(session *const *)b;
  int c = strcmp(x->meta.namespace_, y->meta.namespace_);
  return c ? c : strcmp(x->meta.name, y->meta.name);
}

static sc_err k_list(store *st, const store_list_opts *opts,
                     store_list_result *out, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  const char *ns = opts->namespace_ ? opts->namespace_ : k->ns;
  char path[1200];
  json_object *resp = NULL, *items, *meta, *rv;
  long code;
  size_t i, n;
  sc_err err;
  if(ns)
    obj_path(path, sizeof(path), ns, NULL, NULL);
  else
    snprintf(path, sizeof(path), GROUP_PATH "/sessions");
  err = kreq(k, "GET", path, NULL, NULL, &code, &resp, eb);
  if(err)
    return err;
  if(code != 200) {
    err = http_err(code, resp, "list", ns ? ns : "*", "*", eb);
    goto out;
  }
  if(!json_object_object_get_ex(resp, "items", &items) ||
     !json_object_is_type(items, json_type_array) ||
     !json_object_object_get_ex(resp, "metadata", &meta) ||
     !json_object_object_get_ex(meta, "resourceVersion", &rv)) {
    err = sc_errf(eb, SC_ERR_PROTOCOL, "kube: list %s: not a list (no items "
                  "or metadata.resourceVersion)", path);
    goto out;
  }
  n = json_object_array_length(items);
  out->items = calloc(n + 1, sizeof(*out->items));
  out->revision = strdup(json_object_get_string(rv));
  if(!out->items || !out->revision) {
    err = SC_ERR_NOMEM;
    goto out;
  }
  for(i = 0; i < n; i++) {
    session *s = NULL;
    char what[64];
    snprintf(what, sizeof(what), "list item %zu", i);
    err = decode(json_object_array_get_idx(items, i), what, &s, eb);
    if(err)
      goto out;
    err = ensure_finalizer(k, &s, eb);
    if(err) {
      session_free(s);
      goto out;
    }
    if(!s)
      continue;
    if(s->meta.deletion_timestamp && !opts->include_deleted) {
      session_free(s);
      continue;
    }
    out->items[out->n++] = s;
  }
  qsort(out->items, out->n, sizeof(*out->items), cmp_sess);
out:
  json_object_put(resp);
  if(err)
    store_list_result_free(out);
  return err;
}

static sc_err k_get(store *st, const char *ns, const char *name,
                    session **out, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  json_object *raw = NULL;
  sc_err err = get_raw(k, ns, name, &raw, out, eb);
  json_object_put(raw);
  if(!err)
    err = ensure_finalizer(k, out, eb);
  if(!err && !*out)
    err = sc_errf(eb, SC_ERR_NOT_FOUND, "kube: get %s/%s: not found", ns,
                  name);
  if(err) {
    session_free(*out);
    *out = NULL;
  }
  return err;
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
  json_object *raw = NULL, *whole = NULL, *v;
  session *cur = NULL, *tmp = NULL;
  sc_err err = get_raw(k, ns, name, &raw, &cur, eb);
  if(err)
    return err;
  if(strcmp(cur->meta.resource_version, expected_version)) {
    err = sc_errf(eb, SC_ERR_CONFLICT, "kube: update status %s/%s: version "
                  "%s is not the current %s", ns, name, expected_version,
                  cur->meta.resource_version);
    goto out;
  }
  if(session_status_equal(&cur->status, status)) {
    if(new_version && !(*new_version = strdup(cur->meta.resource_version)))
      err = SC_ERR_NOMEM;
    goto out;
  }
  tmp = session_new();
  if(!tmp || session_status_copy(&tmp->status, status)) {
    err = SC_ERR_NOMEM;
    goto out;
  }
  v = part_of(tmp, "status", &whole);
  set_or_del(raw, "status", v);
  err = put_obj(k, raw, ns, name, "/status", "update status", new_version,
                eb);
out:
  json_object_put(whole);
  json_object_put(raw);
  session_free(cur);
  session_free(tmp);
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
  json_object *raw = NULL;
  session *cur = NULL;
  sc_err err = get_raw(k, ns, name, &raw, &cur, eb);
  json_object_put(raw);
  if(err)
    return err;
  if(strcmp(cur->meta.resource_version, expected_version))
    err = sc_errf(eb, SC_ERR_CONFLICT, "kube: purge %s/%s: version %s is not "
                  "the current %s", ns, name, expected_version,
                  cur->meta.resource_version);
  else if(!cur->meta.deletion_timestamp)
    err = sc_errf(eb, SC_ERR_INVALID, "kube: purge %s/%s: the object is not "
                  "being deleted", ns, name);
  else if(has_finalizer(cur))
    err = patch_finalizers(k, cur, false, NULL, eb);
  session_free(cur);
  return err;
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
static void watch_line(kube_watch *w, const char *line)
{
  json_object *ev = json_tokener_parse(line), *t, *o, *m, *rv;
  const char *type;
  char typebuf[32];
  session *s = NULL;
  sc_errbuf eb;
  store_event se;
  char msg[SC_ERRBUF_SIZE + 256];
  eb.msg[0] = 0;
  if(!ev || !json_object_object_get_ex(ev, "type", &t) ||
     !json_object_object_get_ex(ev, "object", &o)) {
    json_object_put(ev);
    if(w->err_cb) {
      w->in_cb = true;
      w->err_cb(SC_ERR_PROTOCOL, "kube watch: a line that is not a watch "
                "event", w->ud);
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
  if(decode(o, "a watch event", &s, &eb)) {
    snprintf(msg, sizeof(msg), "revision %.200s: %s", w->pos, eb.msg);
    json_object_put(ev);
    if(w->err_cb) {
      w->in_cb = true;
      w->err_cb(SC_ERR_PROTOCOL, msg, w->ud);
      w->in_cb = false;
    }
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
      watch_line(w, buf + off);
    off = (size_t)(nl - buf) + 1;
  }
  if(off < len && !w->stopped && !w->expired)
    (void)dynbuf_add(&w->line, buf + off, len - off);
  free(buf);
}

static size_t on_stream(char *p, size_t sz, size_t n, void *ud)
{
  kube_watch *w = ud;
  if(!w->code) {
    curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &w->code);
    if(w->code == 200) /* the server is watching again */
      w->k->watch_backoff_ms = w->k->watch_retry_after_ms = 0;
  }
  if(w->code != 200)
    return sz * n; /* a Status body; the code says it all */
  if(dynbuf_add(&w->line, p, sz * n))
    return 0; /* a line over the cap: fail the transfer */
  return sz * n;
}

static void drain_all(kube_store *k)
{
  kube_watch *w, *next;
  for(w = k->watches; w; w = next) {
    next = w->next;
    if(w->stopped)
      continue;
    watch_drain(w);
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
    w->k->token_read_ms = 0;
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
    curl_detail(w->k, cc, w->errbuf, d, sizeof(d));
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
  if(refresh_token(k, false, &eb)) {
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
  w->hdrs = headers(k, NULL);
  dynbuf_reset(&w->line);
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
  tls_opts(k, w->easy);
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
  dynbuf_init(&w->line, LINE_MAX_);
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
  curlev_free(k->ev);
  if(k->easy)
    curl_easy_cleanup(k->easy);
  kube_conn_clear(&k->conn);
  free(k->token);
  free(k->ns);
  free(k);
}

static const store_ops kube_ops = {
  "kube", k_close, k_list, k_get, k_apply, k_update_spec, k_update_status,
  k_delete, k_purge, k_watch_start, k_watch_stop
};

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
  k->watch_timeout_s = opts->watch_timeout_s;
  k->evbase = opts->base;
  k->easy = curl_easy_init();
  if(!k->easy) {
    k_close(&k->base);
    return SC_ERR_NOMEM;
  }
  if(k->evbase) {
    k->ev = curlev_new(k->evbase, on_transfer, on_batch, k, eb);
    if(!k->ev) {
      k_close(&k->base);
      return SC_ERR_NOMEM;
    }
  }
  err = refresh_token(k, true, eb);
  if(err) {
    k_close(&k->base);
    return err;
  }
  *out = &k->base;
  return SC_OK;
}
