/*
 * kube_members.c - the kube backend's members (store/members.h): one
 * coordination.k8s.io/v1 Lease per replica, in the namespace the store
 * watches (--namespace) or else the controller's own (the pod's service
 * account namespace, else "default"), named
 * GROUP-member-ID-HASH (GROUP the controller's --name, ID the member ID
 * made a DNS name, HASH 8 hex digits of the exact ID) and labelled
 * lea.io/member-of=GROUP, so that one list by label selector reads them
 * all. spec.holderIdentity is the member ID, the annotation
 * lea.io/member-period-ms its period (spec.leaseDurationSeconds the same,
 * rounded up to whole seconds, for a human), lea.io/member-beat a counter
 * that every renewal adds one to, so that every renewal changes the
 * object (an API server writes no new version for a write that changes
 * nothing).
 *
 * The version of a member is its Lease's resourceVersion: it moves at
 * every renewal, and it is the precondition of the DELETE that removes
 * an expired member (a 409 there: it renewed meanwhile, and stays).
 * spec.renewTime is informational (a human's kubectl): no clock is read
 * back. A renewal is a PUT of the Lease at the resourceVersion last
 * written (a POST when none; a GET after a 409), then the list.
 *
 * Ownership: a kmop is the store's (k->mops) from km_start() until its
 * answer or store_close(); km_detach() drops an answer not yet given.
 */
#include "controller/store/members_int.h"
#include "controller/store/kube/kube_int.h"
#include "controller/kubeclient/leader.h"
#include "controller/kubeclient/lease.h"
#include "lib/sctime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <event2/event.h>

#define MEMBER_LABEL "lea.io/member-of"
#define PERIOD_ANN "lea.io/member-period-ms"
#define BEAT_ANN "lea.io/member-beat"
#define LEASES "/apis/coordination.k8s.io/v1/namespaces/"
#define MEMBERS_MAX 4096
#define PERIOD_MAX_MS (24LL * 3600 * 1000)
#define WRITES_MAX 4   /* writes of one renewal (POST, GET, PUT ...) */

/* a member call must end well within a renewal period's few multiples:
 * 5 s each attempt, 2 more after a 429, a 5xx or a lost connection */
static const kube_http_opts km_opts = {5000, 4 * 1024 * 1024, 2, true};

enum { ST_PUT, ST_POST, ST_GET, ST_LIST, ST_DELETE };

struct kmop {
  kube_store *k;
  kube_http *h;
  km_done cb;         /* NULL: detached, the answer is dropped */
  void *ud;
  kmop **backref;     /* cleared when the op is freed */
  int step;
  char *id, *version;
  int64_t period_ms;  /* 0: a removal */
  int writes;
  char name[260];
  char path[1400];
  kmop *next;
};

static void op_free(kmop *o)
{
  kmop **pp;
  for(pp = &o->k->mops; *pp; pp = &(*pp)->next)
    if(*pp == o) {
      *pp = o->next;
      break;
    }
  if(o->backref)
    *o->backref = NULL;
  free(o->id);
  free(o->version);
  free(o);
}

void km_free_all(kube_store *k)
{
  while(k->mops)
    op_free(k->mops);
  free(k->mgroup);
  free(k->mns);
  free(k->mself);
  k->mgroup = k->mns = k->mself = NULL;
}

void km_detach(kmop *o)
{
  if(o) {
    o->cb = NULL;
    o->backref = NULL;
  }
}

/* a label value: at most 63 of [A-Za-z0-9._-], alphanumeric at both
 * ends */
static bool label_value_ok(const char *v)
{
  size_t i, n = strlen(v);
  if(!n || n > 63)
    return false;
  for(i = 0; i < n; i++) {
    unsigned char c = (unsigned char)v[i];
    bool an = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9');
    if(!an && c != '.' && c != '_' && c != '-')
      return false;
    if(!an && (i == 0 || i == n - 1))
      return false;
  }
  return true;
}

sc_err km_scope(store *st, const char *group, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  char ns[256];
  if(!group || !label_value_ok(group))
    return sc_errf(eb, SC_ERR_INVALID, "kube members: the controller name "
                   "\"%.80s\" is not a label value (1 to 63 of A-Z a-z 0-9 "
                   ". _ -, alphanumeric at both ends): the member Leases are "
                   "listed by the label " MEMBER_LABEL "=NAME",
                   group ? group : "");
  if(k->ns)
    snprintf(ns, sizeof(ns), "%s", k->ns);
  else
    kube_leader_default_namespace(NULL, ns, sizeof(ns));
  free(k->mgroup);
  free(k->mns);
  k->mgroup = strdup(group);
  k->mns = strdup(ns);
  if(!k->mgroup || !k->mns)
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  snprintf(k->mwhere, sizeof(k->mwhere), "Leases in namespace %s labelled "
           MEMBER_LABEL "=%s", k->mns, k->mgroup);
  return SC_OK;
}

const char *km_where(const store *st)
{
  const kube_store *k = (const kube_store *)st;
  return k->mgroup ? k->mwhere : "";
}

static uint32_t fnv32(const char *s)
{
  uint32_t h = 2166136261u;
  for(; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 16777619u;
  }
  return h;
}

/* what a DNS name keeps of s: lower-case letters and digits, the rest
 * '-'; at most max bytes */
static void dns_part(const char *s, char *out, size_t max)
{
  size_t n = 0;
  for(; *s && n < max; s++) {
    unsigned char c = (unsigned char)*s;
    if(c >= 'A' && c <= 'Z')
      c = (unsigned char)(c - 'A' + 'a');
    out[n++] = (char)(((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) ?
                      c : '-');
  }
  out[n] = '\0';
}

static void lease_name(const char *group, const char *id, char *out,
                       size_t len)
{
  char g[64], i[151];
  dns_part(group, g, 63);
  dns_part(id, i, 150);
  snprintf(out, len, "%s-member-%s-%08x", g, i, (unsigned)fnv32(id));
}

static void ns_path(const kube_store *k, char *buf, size_t len,
                    const char *name, const char *query)
{
  char *ens = curl_easy_escape(NULL, k->mns, 0);
  char *en = name ? curl_easy_escape(NULL, name, 0) : NULL;
  snprintf(buf, len, LEASES "%s/leases%s%s%s", ens ? ens : "",
           en ? "/" : "", en ? en : "", query ? query : "");
  curl_free(ens);
  curl_free(en);
}

static void finish(kmop *o, sc_err err, const char *msg,
                   store_member_list *list)
{
  store_member_list none = {NULL, 0};
  km_done cb = o->cb;
  /* the owner's handle goes before its callback, which may free it */
  if(o->backref)
    *o->backref = NULL;
  o->backref = NULL;
  if(cb)
    cb(err, err ? msg : NULL, list ? list : &none, o->ud);
  if(list)
    store_member_list_clear(list);
  op_free(o);
}

static void fail_res(kmop *o, const char *method,
                     const kube_http_result *res)
{
  sc_errbuf eb;
  sc_err err;
  eb.msg[0] = '\0';
  err = kstore_reply_err(o->k, res, method, o->path, &eb);
  if(!err)
    err = sc_errf(&eb, SC_ERR_PROTOCOL, "kube %s %s%s: HTTP %ld%s%s",
                  method, o->k->conn.server, o->path, res->status,
                  res->message && *res->message ? ": " : "",
                  res->message ? res->message : "");
  finish(o, err, eb.msg, NULL);
}

static void on_reply(const kube_http_result *raw, void *ud);

static void send_req(kmop *o, int step, const char *method, const char *body)
{
  sc_errbuf eb;
  eb.msg[0] = '\0';
  o->step = step;
  if(kube_http_request_ex(o->h, method, o->path,
                          body ? "application/json" : NULL, body, &km_opts,
                          on_reply, o, &eb))
    finish(o, SC_ERR_INTERNAL, eb.msg, NULL);
}

static const char *jstr(json_object *o, const char *key)
{
  json_object *v;
  if(o && json_object_object_get_ex(o, key, &v) &&
     json_object_is_type(v, json_type_string))
    return json_object_get_string(v);
  return NULL;
}

static json_object *jobj(json_object *o, const char *key)
{
  json_object *v;
  if(o && json_object_object_get_ex(o, key, &v) &&
     json_object_is_type(v, json_type_object))
    return v;
  return NULL;
}

static void remember_rv(kmop *o, json_object *lease)
{
  const char *rv = jstr(jobj(lease, "metadata"), "resourceVersion");
  json_object *ann = jobj(jobj(lease, "metadata"), "annotations");
  const char *beat = jstr(ann, BEAT_ANN);
  int64_t b = 0;
  free(o->k->mself);
  o->k->mself = NULL;
  o->k->mrv[0] = '\0';
  if(rv && *rv && strlen(rv) < sizeof(o->k->mrv)) {
    o->k->mself = strdup(o->id);
    snprintf(o->k->mrv, sizeof(o->k->mrv), "%s", rv);
  }
  if(beat && !store_rev_parse(beat, &b) && b > o->k->mbeat)
    o->k->mbeat = b;
}

static char *lease_body(kmop *o, const char *rv)
{
  json_object *l = json_object_new_object(), *m = json_object_new_object(),
              *lab = json_object_new_object(),
              *ann = json_object_new_object(), *s = json_object_new_object();
  char num[24], now[LEASE_TIME_MAX];
  char *txt;
  json_object_object_add(l, "apiVersion",
                         json_object_new_string("coordination.k8s.io/v1"));
  json_object_object_add(l, "kind", json_object_new_string("Lease"));
  json_object_object_add(m, "name", json_object_new_string(o->name));
  json_object_object_add(m, "namespace", json_object_new_string(o->k->mns));
  if(rv)
    json_object_object_add(m, "resourceVersion", json_object_new_string(rv));
  json_object_object_add(lab, MEMBER_LABEL,
                         json_object_new_string(o->k->mgroup));
  json_object_object_add(m, "labels", lab);
  snprintf(num, sizeof(num), "%lld", (long long)o->period_ms);
  json_object_object_add(ann, PERIOD_ANN, json_object_new_string(num));
  snprintf(num, sizeof(num), "%lld", (long long)++o->k->mbeat);
  json_object_object_add(ann, BEAT_ANN, json_object_new_string(num));
  json_object_object_add(m, "annotations", ann);
  json_object_object_add(l, "metadata", m);
  json_object_object_add(s, "holderIdentity", json_object_new_string(o->id));
  json_object_object_add(s, "leaseDurationSeconds",
                         json_object_new_int64((o->period_ms + 999) / 1000));
  lease_format_microtime(sctime_wall_ms(), now, sizeof(now));
  json_object_object_add(s, "renewTime", json_object_new_string(now));
  json_object_object_add(l, "spec", s);
  txt = strdup(json_object_to_json_string_ext(l, JSON_C_TO_STRING_PLAIN));
  json_object_put(l);
  return txt;
}

static void write_lease(kmop *o)
{
  bool put = o->k->mself && !strcmp(o->k->mself, o->id) && o->k->mrv[0];
  char *body;
  if(++o->writes > WRITES_MAX) {
    char msg[400];
    snprintf(msg, sizeof(msg), "kube: the member Lease %s/%s: conflicts on "
             "every write (%d tries)", o->k->mns, o->name, WRITES_MAX);
    finish(o, SC_ERR_CONFLICT, msg, NULL);
    return;
  }
  body = lease_body(o, put ? o->k->mrv : NULL);
  if(!body) {
    finish(o, SC_ERR_NOMEM, "out of memory", NULL);
    return;
  }
  ns_path(o->k, o->path, sizeof(o->path), put ? o->name : NULL, NULL);
  send_req(o, put ? ST_PUT : ST_POST, put ? "PUT" : "POST", body);
  free(body);
}

static void list_leases(kmop *o)
{
  char q[200], *sel;
  char raw[120];
  snprintf(raw, sizeof(raw), MEMBER_LABEL "=%s", o->k->mgroup);
  sel = curl_easy_escape(NULL, raw, 0);
  snprintf(q, sizeof(q), "?labelSelector=%s", sel ? sel : "");
  curl_free(sel);
  ns_path(o->k, o->path, sizeof(o->path), NULL, q);
  send_req(o, ST_LIST, "GET", NULL);
}

static int cmp_member(const void *a, const void *b)
{
  return strcmp(((const store_member *)a)->id, ((const store_member *)b)->id);
}

/* one item of the list into *m; why says what is wrong */
static bool decode_member(kmop *o, json_object *it, store_member *m,
                          char *why, size_t wl)
{
  json_object *meta = jobj(it, "metadata"), *spec = jobj(it, "spec"), *v;
  const char *name = jstr(meta, "name"), *rv = jstr(meta, "resourceVersion");
  const char *id = jstr(spec, "holderIdentity");
  const char *per = jstr(jobj(meta, "annotations"), PERIOD_ANN);
  const unsigned char *p;
  char want[260];
  int64_t ms = 0;
  memset(m, 0, sizeof(*m));
  if(!name || !rv || !*rv) {
    snprintf(why, wl, "a Lease without metadata.name or resourceVersion");
    return false;
  }
  if(!id || !*id || strlen(id) > STORE_MEMBER_ID_MAX) {
    snprintf(why, wl, "Lease %.200s: spec.holderIdentity is not a member "
             "ID (1 to %d bytes)", name, STORE_MEMBER_ID_MAX);
    return false;
  }
  for(p = (const unsigned char *)id; *p; p++)
    if(*p < 0x20 || *p == 0x7f) {
      snprintf(why, wl, "Lease %.200s: spec.holderIdentity has a control "
               "character", name);
      return false;
    }
  lease_name(o->k->mgroup, id, want, sizeof(want));
  if(strcmp(want, name)) {
    snprintf(why, wl, "Lease %.200s: not the name of its "
             "spec.holderIdentity's member Lease (%.200s)", name, want);
    return false;
  }
  if(per) {
    if(store_rev_parse(per, &ms) || ms <= 0 || ms > PERIOD_MAX_MS) {
      snprintf(why, wl, "Lease %.200s: annotation " PERIOD_ANN " \"%.40s\" "
               "is not a period from 1 to %lld ms", name, per,
               (long long)PERIOD_MAX_MS);
      return false;
    }
  }
  else if(spec && json_object_object_get_ex(spec, "leaseDurationSeconds", &v)
          && json_object_is_type(v, json_type_int) &&
          json_object_get_int64(v) > 0 &&
          json_object_get_int64(v) <= PERIOD_MAX_MS / 1000)
    ms = json_object_get_int64(v) * 1000;
  else {
    snprintf(why, wl, "Lease %.200s: neither the annotation " PERIOD_ANN
             " nor spec.leaseDurationSeconds gives its period", name);
    return false;
  }
  m->id = strdup(id);
  m->version = strdup(rv);
  m->period_ms = ms;
  if(!m->id || !m->version) {
    free(m->id);
    free(m->version);
    snprintf(why, wl, "out of memory");
    return false;
  }
  return true;
}

static void after_list(kmop *o, const kube_http_result *res)
{
  store_member_list l = {NULL, 0};
  json_object *items;
  size_t i, n;
  char why[600], msg[4096];
  if(!res->body || !json_object_object_get_ex(res->body, "items", &items) ||
     !json_object_is_type(items, json_type_array)) {
    snprintf(msg, sizeof(msg), "kube GET %s%s: the answer is not a "
             "LeaseList (no items array)", o->k->conn.server, o->path);
    finish(o, SC_ERR_PROTOCOL, msg, NULL);
    return;
  }
  n = json_object_array_length(items);
  if(n > MEMBERS_MAX) {
    snprintf(msg, sizeof(msg), "kube GET %s%s: %zu member Leases, more "
             "than %d", o->k->conn.server, o->path, n, MEMBERS_MAX);
    finish(o, SC_ERR_PROTOCOL, msg, NULL);
    return;
  }
  l.items = calloc(n ? n : 1, sizeof(*l.items));
  if(!l.items) {
    finish(o, SC_ERR_NOMEM, "out of memory", NULL);
    return;
  }
  for(i = 0; i < n; i++) {
    if(!decode_member(o, json_object_array_get_idx(items, i),
                      &l.items[l.n], why, sizeof(why))) {
      snprintf(msg, sizeof(msg), "kube GET %s%s: item %zu: %s",
               o->k->conn.server, o->path, i, why);
      finish(o, SC_ERR_PROTOCOL, msg, &l);
      return;
    }
    l.n++;
  }
  qsort(l.items, l.n, sizeof(*l.items), cmp_member);
  for(i = 1; i < l.n; i++)
    if(!strcmp(l.items[i - 1].id, l.items[i].id)) {
      snprintf(msg, sizeof(msg), "kube GET %s%s: two Leases of member "
               "%.200s", o->k->conn.server, o->path, l.items[i].id);
      finish(o, SC_ERR_PROTOCOL, msg, &l);
      return;
    }
  finish(o, SC_OK, NULL, &l);
}

static void on_reply(const kube_http_result *raw, void *ud)
{
  kmop *o = ud;
  kube_http_result r, *res = &r;
  json_object *own;
  long st;
  kstore_strict_body(o->k, raw, &r, &own);
  st = res->err ? 0 : res->status;
  if(!o->cb) {
    /* detached (a renewal cancelled at SIGTERM): no further request, or
     * a PUT answered 404 after the replica deleted its own Lease would
     * POST it back */
    op_free(o);
    json_object_put(own);
    return;
  }
  switch(o->step) {
  case ST_PUT:
  case ST_POST:
    if(st == 200 || st == 201) {
      remember_rv(o, res->body);
      list_leases(o);
    }
    else if(st == 409 && o->step == ST_PUT) {
      o->k->mrv[0] = '\0'; /* moved: read it again */
      ns_path(o->k, o->path, sizeof(o->path), o->name, NULL);
      send_req(o, ST_GET, "GET", NULL);
    }
    else if(st == 409) { /* AlreadyExists: read its version */
      ns_path(o->k, o->path, sizeof(o->path), o->name, NULL);
      send_req(o, ST_GET, "GET", NULL);
    }
    else if(st == 404 && o->step == ST_PUT) {
      o->k->mrv[0] = '\0'; /* removed (pruned as expired): again */
      write_lease(o);
    }
    else
      fail_res(o, o->step == ST_PUT ? "PUT" : "POST", res);
    break;
  case ST_GET:
    if(st == 200) {
      remember_rv(o, res->body);
      write_lease(o);
    }
    else if(st == 404) {
      o->k->mrv[0] = '\0';
      write_lease(o);
    }
    else
      fail_res(o, "GET", res);
    break;
  case ST_LIST:
    if(st == 200)
      after_list(o, res);
    else
      fail_res(o, "GET", res);
    break;
  default: /* ST_DELETE: gone, or renewed meanwhile (409): both fine */
    if(st == 200 || st == 202 || st == 404 || (st == 409 && o->version)) {
      if(!o->version && o->k->mself && !strcmp(o->k->mself, o->id))
        o->k->mrv[0] = '\0';
      finish(o, SC_OK, NULL, NULL);
    }
    else
      fail_res(o, "DELETE", res);
    break;
  }
  json_object_put(own); /* o may be gone: only the body is left */
}

sc_err km_start(store *st, bool sync, const char *id, int64_t period_ms,
                const char *version, km_done cb, void *ud, kmop **backref,
                sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  kube_http *h = sync ? k->shttp : k->http;
  kmop *o;
  if(backref)
    *backref = NULL;
  if(!k->mgroup)
    return sc_errf(eb, SC_ERR_INVALID, "kube members: no scope set "
                   "(store_members_scope)");
  if(!h)
    return sc_errf(eb, SC_ERR_INVALID, "kube: asynchronous calls need an "
                   "event loop (store_open_opts.base)");
  o = calloc(1, sizeof(*o));
  if(!o)
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  o->k = k;
  o->h = h;
  o->cb = cb;
  o->ud = ud;
  o->period_ms = period_ms;
  o->id = strdup(id);
  o->version = version ? strdup(version) : NULL;
  if(!o->id || (version && !o->version)) {
    free(o->id);
    free(o->version);
    free(o);
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  lease_name(k->mgroup, id, o->name, sizeof(o->name));
  o->next = k->mops;
  k->mops = o;
  o->backref = backref;
  if(backref)
    *backref = o;
  if(period_ms > 0)
    write_lease(o);
  else {
    char body[300];
    ns_path(k, o->path, sizeof(o->path), o->name, NULL);
    if(version)
      snprintf(body, sizeof(body), "{\"apiVersion\":\"v1\",\"kind\":"
               "\"DeleteOptions\",\"preconditions\":{\"resourceVersion\":"
               "\"%.64s\"}}", version);
    send_req(o, ST_DELETE, "DELETE", version ? body : NULL);
  }
  return SC_OK;
}

/* --- the synchronous forms: the same on the private loop --- */

typedef struct kmwait {
  bool done;
  sc_err err;
  sc_errbuf eb;
  store_member_list list;
} kmwait;

static void on_wait(sc_err err, const char *msg, store_member_list *list,
                    void *ud)
{
  kmwait *w = ud;
  w->done = true;
  w->err = err;
  if(err)
    snprintf(w->eb.msg, sizeof(w->eb.msg), "%s", msg ? msg : "");
  else {
    w->list = *list;
    list->items = NULL;
    list->n = 0;
  }
}

static sc_err run_sync(store *st, const char *id, int64_t period_ms,
                       const char *version, store_member_list *out,
                       sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  kmwait w;
  kmop *o = NULL;
  sc_err err;
  memset(&w, 0, sizeof(w));
  err = km_start(st, true, id, period_ms, version, on_wait, &w, &o, eb);
  if(err)
    return err;
  while(!w.done)
    if(event_base_loop(k->sbase, EVLOOP_ONCE) != 0)
      break;
  if(!w.done) {
    kube_http_abort_all(k->shttp);
    if(o)
      op_free(o);
    return sc_errf(eb, SC_ERR_INTERNAL, "kube: the member call was lost");
  }
  if(w.err)
    return sc_errf(eb, w.err, "%s", w.eb.msg);
  if(out)
    *out = w.list;
  else
    store_member_list_clear(&w.list);
  return SC_OK;
}

sc_err km_renew(store *st, const char *id, int64_t period_ms,
                store_member_list *out, sc_errbuf *eb)
{
  return run_sync(st, id, period_ms, NULL, out, eb);
}

sc_err km_remove(store *st, const char *id, const char *version,
                 sc_errbuf *eb)
{
  return run_sync(st, id, 0, version, NULL, eb);
}
