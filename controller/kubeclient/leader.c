/* leader.c - leader election on a Lease through kube_http (see
 * kube_leader.h). */
#include "controller/kubeclient/leader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <event2/event.h>
#include <json-c/json.h>
#include "lib/sctime.h"

#define SA_NS_FILE "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

struct kube_leader {
  struct event_base *base;
  kube_http *h;
  logger *lg;
  char *ns, *name;
  char identity[LEASE_HOLDER_MAX];
  lease_elector *le;
  kube_leader_cb on_change;
  void *ud;
  struct event *tick;
  bool started, stopping, released, inflight, failing;
  bool release_wanted;     /* release asked while a call was in flight */
  struct lcall *cur;       /* the call in flight (one at a time) */
  bool reported;           /* the leadership on_change last told */
  int64_t retry_ms, timeout_ms;
  char rv[64];             /* the Lease's resourceVersion last read */
  lease_record writing;    /* the record of the write in flight */
  unsigned gen;            /* bumped on free: stale answers are ignored */
};

/* a call in flight; kube_leader_free() frees it (the kube_http client,
 * freed after the leader, never calls back on free) */
struct lcall {
  kube_leader *kl;
  int kind; /* 0 get, 1 write, 2 release */
};
typedef struct lcall lcall;

static void lease_path(const kube_leader *kl, char *buf, size_t len,
                       bool with_name)
{
  char *ens = curl_easy_escape(NULL, kl->ns, 0);
  char *en = curl_easy_escape(NULL, kl->name, 0);
  snprintf(buf, len, "/apis/coordination.k8s.io/v1/namespaces/%s/leases%s%s",
           ens ? ens : "", with_name ? "/" : "", with_name && en ? en : "");
  curl_free(ens);
  curl_free(en);
}

static void report(kube_leader *kl)
{
  bool now = lease_is_leader(kl->le);
  if(now == kl->reported)
    return;
  kl->reported = now;
  log_kv(kl->lg, now ? LOG_INFO : LOG_WARN, now ? "leader election: "
         "became the leader" : "leader election: not the leader any more",
         "lease", kl->name, "namespace", kl->ns, "identity", kl->identity,
         NULL);
  if(kl->on_change)
    kl->on_change(now, kl->ud);
}

static const char *jstr(json_object *o, const char *k)
{
  json_object *v;
  if(o && json_object_object_get_ex(o, k, &v) &&
     json_object_is_type(v, json_type_string))
    return json_object_get_string(v);
  return "";
}

static int64_t jint(json_object *o, const char *k)
{
  json_object *v;
  if(o && json_object_object_get_ex(o, k, &v) &&
     json_object_is_type(v, json_type_int))
    return json_object_get_int64(v);
  return 0;
}

/* the record and resourceVersion of a Lease object */
static bool parse_lease(json_object *o, lease_record *r, char *rv,
                        size_t rvlen)
{
  json_object *m, *spec;
  memset(r, 0, sizeof(*r));
  if(!o || !json_object_object_get_ex(o, "metadata", &m))
    return false;
  snprintf(rv, rvlen, "%s", jstr(m, "resourceVersion"));
  if(!json_object_object_get_ex(o, "spec", &spec))
    return true; /* an empty spec: nobody holds it */
  snprintf(r->holder, sizeof(r->holder), "%s", jstr(spec, "holderIdentity"));
  r->duration_s = jint(spec, "leaseDurationSeconds");
  snprintf(r->acquire_time, sizeof(r->acquire_time), "%s",
           jstr(spec, "acquireTime"));
  snprintf(r->renew_time, sizeof(r->renew_time), "%s",
           jstr(spec, "renewTime"));
  r->transitions = jint(spec, "leaseTransitions");
  return rv[0] != 0;
}

static char *lease_json(const kube_leader *kl, const lease_record *r,
                        const char *rv)
{
  json_object *o = json_object_new_object(), *m = json_object_new_object(),
              *s = json_object_new_object();
  char *txt;
  json_object_object_add(o, "apiVersion",
                         json_object_new_string("coordination.k8s.io/v1"));
  json_object_object_add(o, "kind", json_object_new_string("Lease"));
  json_object_object_add(m, "name", json_object_new_string(kl->name));
  json_object_object_add(m, "namespace", json_object_new_string(kl->ns));
  if(rv && *rv)
    json_object_object_add(m, "resourceVersion", json_object_new_string(rv));
  json_object_object_add(o, "metadata", m);
  json_object_object_add(s, "holderIdentity",
                         json_object_new_string(r->holder));
  json_object_object_add(s, "leaseDurationSeconds",
                         json_object_new_int64(r->duration_s));
  if(r->acquire_time[0])
    json_object_object_add(s, "acquireTime",
                           json_object_new_string(r->acquire_time));
  if(r->renew_time[0])
    json_object_object_add(s, "renewTime",
                           json_object_new_string(r->renew_time));
  json_object_object_add(s, "leaseTransitions",
                         json_object_new_int64(r->transitions));
  json_object_object_add(o, "spec", s);
  txt = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
  json_object_put(o);
  return txt;
}

static void attempt_failed(kube_leader *kl, const char *what,
                           const char *msg)
{
  lease_failed(kl->le, sctime_mono_ms());
  if(!kl->failing)
    log_kv(kl->lg, LOG_WARN, "leader election: a Lease call failed "
           "(retried every retry period)", "call", what, "error", msg, NULL);
  kl->failing = true;
  report(kl);
}

static void on_answer(const kube_http_result *res, void *ud);
static void do_release(kube_leader *kl);

static bool start_call(kube_leader *kl, int kind, const char *method,
                       bool named, const char *body)
{
  lcall *c = calloc(1, sizeof(*c));
  char path[800];
  sc_errbuf eb;
  eb.msg[0] = 0;
  if(!c)
    return false;
  c->kl = kl;
  c->kind = kind;
  lease_path(kl, path, sizeof(path), named);
  if(kube_http_request(kl->h, method, path, body ? "application/json" : NULL,
                       body, kl->timeout_ms, on_answer, c, &eb)) {
    free(c);
    attempt_failed(kl, method, eb.msg);
    return false;
  }
  kl->inflight = true;
  kl->cur = c;
  return true;
}

static void after_get(kube_leader *kl, const kube_http_result *res)
{
  lease_record cur, out;
  lease_decision d;
  char *body;
  bool found = res->status == 200;
  if(res->err || (res->status != 200 && res->status != 404)) {
    attempt_failed(kl, "GET", res->message);
    return;
  }
  if(found && !parse_lease(res->body, &cur, kl->rv, sizeof(kl->rv))) {
    attempt_failed(kl, "GET", "the Lease has no metadata.resourceVersion");
    return;
  }
  if(!found)
    kl->rv[0] = 0;
  d = lease_decide(kl->le, found, found ? &cur : NULL, sctime_mono_ms(),
                   sctime_wall_ms(), &out);
  kl->failing = false;
  if(d == LEASE_WAIT) {
    report(kl);
    return;
  }
  kl->writing = out;
  body = lease_json(kl, &out, d == LEASE_UPDATE ? kl->rv : NULL);
  if(!body) {
    attempt_failed(kl, "write", "out of memory");
    return;
  }
  if(d == LEASE_CREATE)
    start_call(kl, 1, "POST", false, body);
  else
    start_call(kl, 1, "PUT", true, body);
  free(body);
}

static void on_answer(const kube_http_result *res, void *ud)
{
  lcall *c = ud;
  kube_leader *kl = c->kl;
  int kind = c->kind;
  free(c);
  kl->cur = NULL;
  kl->inflight = false;
  if(kind == 2) {
    kl->released = true;
    if(res->err || res->status >= 300)
      log_kv(kl->lg, LOG_WARN, "leader election: could not release the "
             "Lease (the successor waits for it to expire)", "error",
             res->message, NULL);
    else
      log_kv(kl->lg, LOG_INFO, "leader election: released the Lease",
             NULL);
    return;
  }
  if(kl->stopping) {
    char rv[64];
    lease_record got;
    /* a write of ours that landed moved the version the release needs */
    if(kind == 1 && !res->err && res->status < 300 &&
       parse_lease(res->body, &got, rv, sizeof(rv))) {
      snprintf(kl->rv, sizeof(kl->rv), "%s", rv);
      /* it made us the holder after the stop: give it up as well */
      lease_written(kl->le, &kl->writing, sctime_mono_ms());
      if(lease_release(kl->le, sctime_wall_ms(), &kl->writing))
        kl->release_wanted = true;
    }
    if(kl->release_wanted)
      do_release(kl);
    else
      kl->released = true;
    return;
  }
  if(kind == 0) {
    after_get(kl, res);
    return;
  }
  if(res->err || res->status >= 300) {
    /* 409: another replica wrote first; the next read shows who */
    attempt_failed(kl, "write", res->message);
    return;
  }
  {
    lease_record got;
    char rv[64];
    if(parse_lease(res->body, &got, rv, sizeof(rv)))
      snprintf(kl->rv, sizeof(kl->rv), "%s", rv);
    lease_written(kl->le, &kl->writing, sctime_mono_ms());
  }
  kl->failing = false;
  report(kl);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
  kube_leader *kl = arg;
  (void)fd;
  (void)what;
  lease_check(kl->le, sctime_mono_ms());
  report(kl);
  if(kl->stopping || kl->inflight)
    return;
  start_call(kl, 0, "GET", true, NULL);
}

kube_leader *kube_leader_new(struct event_base *base, kube_http *h,
                             logger *lg, const kube_leader_opts *o,
                             sc_errbuf *eb)
{
  kube_leader *kl = calloc(1, sizeof(*kl));
  if(!kl) {
    sc_errf(eb, SC_ERR_NOMEM, "out of memory");
    return NULL;
  }
  kl->base = base;
  kl->h = h;
  kl->lg = lg;
  kl->ns = strdup(o->ns ? o->ns : "default");
  kl->name = strdup(o->name ? o->name : "session-controller");
  snprintf(kl->identity, sizeof(kl->identity), "%s",
           o->lease.identity ? o->lease.identity : "");
  kl->le = lease_elector_new(&o->lease);
  kl->on_change = o->on_change;
  kl->ud = o->ud;
  kl->retry_ms = o->lease.retry_ms > 0 ? o->lease.retry_ms : 2000;
  /* a call must end well before the renew deadline */
  kl->timeout_ms = 5000;
  kl->tick = event_new(base, -1, EV_PERSIST, on_tick, kl);
  if(!kl->ns || !kl->name || !kl->le || !kl->tick || !kl->identity[0]) {
    sc_errf(eb, SC_ERR_NOMEM, "leader election: cannot set up (identity "
            "empty or out of memory)");
    kube_leader_free(kl);
    return NULL;
  }
  return kl;
}

void kube_leader_free(kube_leader *kl)
{
  if(!kl)
    return;
  /* the calls in flight end with the kube_http client, which is freed
   * after us and does not call back on free: nothing points at kl */
  if(kl->tick)
    event_free(kl->tick);
  free(kl->cur);
  lease_elector_free(kl->le);
  free(kl->ns);
  free(kl->name);
  free(kl);
}

void kube_leader_start(kube_leader *kl)
{
  struct timeval tv;
  tv.tv_sec = kl->retry_ms / 1000;
  tv.tv_usec = (kl->retry_ms % 1000) * 1000;
  kl->started = true;
  event_add(kl->tick, &tv);
  event_active(kl->tick, 0, 0); /* the first attempt at once */
}

bool kube_leader_is_leader(const kube_leader *kl)
{
  return kl && lease_is_leader(kl->le);
}

static void do_release(kube_leader *kl)
{
  char *body;
  kl->release_wanted = false;
  if(!kl->rv[0]) {
    kl->released = true;
    return;
  }
  body = lease_json(kl, &kl->writing, kl->rv);
  if(!body || !start_call(kl, 2, "PUT", true, body))
    kl->released = true;
  free(body);
}

void kube_leader_release(kube_leader *kl)
{
  if(!kl || kl->stopping)
    return;
  kl->stopping = true;
  event_del(kl->tick);
  if(!lease_release(kl->le, sctime_wall_ms(), &kl->writing)) {
    kl->released = !kl->inflight;
    report(kl);
    return;
  }
  report(kl); /* stop acting before the write */
  if(kl->inflight)
    kl->release_wanted = true; /* after the answer: its version */
  else
    do_release(kl);
}

bool kube_leader_released(const kube_leader *kl)
{
  return !kl || kl->released;
}

void kube_leader_default_namespace(const char *dir, char *buf, size_t len)
{
  char path[600];
  FILE *f;
  size_t n = 0;
  snprintf(path, sizeof(path), "%s", dir ? dir : SA_NS_FILE);
  if(dir)
    snprintf(path, sizeof(path), "%s/namespace", dir);
  f = fopen(path, "r");
  if(f) {
    n = fread(buf, 1, len - 1, f);
    fclose(f);
  }
  buf[n] = 0;
  while(n && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\r'))
    buf[--n] = 0;
  if(!buf[0])
    snprintf(buf, len, "default");
}
