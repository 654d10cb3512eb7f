/* events.c - Kubernetes Events through kube_http (see
 * kube_events.h). */
#include "controller/kubeclient/events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <json-c/json.h>
#include <openssl/rand.h>
#include "lib/sctime.h"
#include "controller/kubeclient/evcache.h"

#define EV_TIMEOUT_MS 10000
#define KEY_MAX 2048

typedef struct ev_item {
  char *api_version, *kind, *ns, *name, *uid, *rv;
  char *reason, *message;
  recorder_type type;
  sc_time when;
} ev_item;

struct kube_events {
  kube_http *h;
  metrics *m;
  logger *lg;
  char *component, *host;
  char *fb_av, *fb_kind, *fb_ns, *fb_name;
  evcache *cache;
  ev_item *q;            /* ring */
  size_t q_start, q_n, q_max;
  bool busy;             /* a call in flight for q[q_start] */
  bool patching;         /* ... and it is a PATCH */
  bool failing;          /* the last call failed (logged once) */
  char cur_key[KEY_MAX];
  char cur_name[300];
  char cur_first[SCTIME_RFC3339_MAX];
  int64_t cur_count;
};

static void send_head(kube_events *ev);

static void item_clear(ev_item *it)
{
  free(it->api_version);
  free(it->kind);
  free(it->ns);
  free(it->name);
  free(it->uid);
  free(it->rv);
  free(it->reason);
  free(it->message);
  memset(it, 0, sizeof(*it));
}

sc_err kube_events_declare_metrics(metrics *m)
{
  sc_err err = metrics_declare(m, "session_controller_events_total",
                               METRIC_COUNTER, "Kubernetes Events sent, by "
                               "call (create, patch) and result.", NULL, 0);
  if(!err)
    err = metrics_declare(m, "session_controller_events_dropped_total",
                          METRIC_COUNTER, "Kubernetes Events dropped: the "
                          "queue was full.", NULL, 0);
  return err;
}

static char *sdup(const char *s, bool *oom)
{
  char *d = strdup(s ? s : "");
  if(!d)
    *oom = true;
  return d;
}

kube_events *kube_events_new(kube_http *h, metrics *m, logger *lg,
                             const kube_events_opts *o, sc_errbuf *eb)
{
  kube_events *ev = calloc(1, sizeof(*ev));
  bool oom = false;
  if(!ev) {
    sc_errf(eb, SC_ERR_NOMEM, "out of memory");
    return NULL;
  }
  ev->h = h;
  ev->m = m;
  ev->lg = lg;
  ev->component = sdup(o->component ? o->component : "session-controller",
                       &oom);
  ev->host = sdup(o->host, &oom);
  if(o->fallback_kind && o->fallback_name && o->fallback_ns) {
    ev->fb_av = sdup(o->fallback_api_version, &oom);
    ev->fb_kind = sdup(o->fallback_kind, &oom);
    ev->fb_ns = sdup(o->fallback_ns, &oom);
    ev->fb_name = sdup(o->fallback_name, &oom);
  }
  ev->q_max = o->queue_max ? o->queue_max : 256;
  ev->q = calloc(ev->q_max, sizeof(*ev->q));
  ev->cache = evcache_new(o->cache_max ? o->cache_max : 1024,
                          o->window_ms ? o->window_ms : 600000);
  if(oom || !ev->q || !ev->cache) {
    sc_errf(eb, SC_ERR_NOMEM, "out of memory");
    kube_events_free(ev);
    return NULL;
  }
  return ev;
}

void kube_events_free(kube_events *ev)
{
  size_t i;
  if(!ev)
    return;
  for(i = 0; ev->q && i < ev->q_n; i++)
    item_clear(&ev->q[(ev->q_start + i) % ev->q_max]);
  free(ev->q);
  evcache_free(ev->cache);
  free(ev->component);
  free(ev->host);
  free(ev->fb_av);
  free(ev->fb_kind);
  free(ev->fb_ns);
  free(ev->fb_name);
  free(ev);
}

bool kube_events_idle(const kube_events *ev)
{
  return !ev || (!ev->busy && ev->q_n == 0);
}

void kube_events_record(kube_events *ev, const session *s,
                        recorder_type type, const char *reason,
                        const char *message)
{
  ev_item it;
  bool oom = false;
  if(!ev)
    return;
  memset(&it, 0, sizeof(it));
  if(s) {
    it.api_version = sdup(SESSION_API_VERSION, &oom);
    it.kind = sdup("Session", &oom);
    it.ns = sdup(s->meta.namespace_, &oom);
    it.name = sdup(s->meta.name, &oom);
    it.uid = sdup(s->meta.uid, &oom);
    it.rv = sdup(s->meta.resource_version, &oom);
  }
  else if(ev->fb_kind) {
    it.api_version = sdup(ev->fb_av, &oom);
    it.kind = sdup(ev->fb_kind, &oom);
    it.ns = sdup(ev->fb_ns, &oom);
    it.name = sdup(ev->fb_name, &oom);
    it.uid = sdup("", &oom);
    it.rv = sdup("", &oom);
  }
  else
    return; /* about nothing we can name */
  it.reason = sdup(reason, &oom);
  it.message = sdup(message, &oom);
  it.type = type;
  it.when = sctime_wall_ms();
  if(oom || !it.ns[0] || !it.name[0] || ev->q_n == ev->q_max) {
    item_clear(&it);
    metrics_add(ev->m, "session_controller_events_dropped_total", NULL, 1);
    return;
  }
  ev->q[(ev->q_start + ev->q_n++) % ev->q_max] = it;
  if(!ev->busy)
    send_head(ev);
}

static void on_recorder(void *ud, const session *s, recorder_type type,
                        const char *reason, const char *message)
{
  kube_events_record(ud, s, type, reason, message);
}

recorder kube_events_recorder(kube_events *ev)
{
  recorder r;
  r.record = on_recorder;
  r.ud = ev;
  return r;
}

/* ------------------------------------------------------------------ */

static void events_path(char *buf, size_t len, const char *ns,
                        const char *name)
{
  char *ens = curl_easy_escape(NULL, ns, 0);
  char *en = name ? curl_easy_escape(NULL, name, 0) : NULL;
  snprintf(buf, len, "/api/v1/namespaces/%s/events%s%s", ens ? ens : "",
           name ? "/" : "", en ? en : "");
  curl_free(ens);
  curl_free(en);
}

static void pop_head(kube_events *ev)
{
  item_clear(&ev->q[ev->q_start]);
  ev->q_start = (ev->q_start + 1) % ev->q_max;
  ev->q_n--;
}

static void count(kube_events *ev, const char *call, const char *result)
{
  char l[64];
  snprintf(l, sizeof(l), "call=\"%s\",result=\"%s\"", call, result);
  metrics_add(ev->m, "session_controller_events_total", l, 1);
}

static void on_sent(const kube_http_result *res, void *ud)
{
  kube_events *ev = ud;
  ev_item *it = &ev->q[ev->q_start];
  bool patch = ev->patching;
  bool ok = !res->err && res->status >= 200 && res->status < 300;
  ev->busy = false;
  if(patch && !res->err && res->status == 404) {
    /* the Event expired on the server: create a new one */
    evcache_forget(ev->cache, ev->cur_key);
    count(ev, "patch", "gone");
    send_head(ev);
    return;
  }
  count(ev, patch ? "patch" : "create", ok ? "ok" : "error");
  if(ok) {
    (void)evcache_put(ev->cache, ev->cur_key, ev->cur_name, ev->cur_count,
                      ev->cur_first, sctime_mono_ms());
    if(ev->failing)
      log_kv(ev->lg, LOG_INFO, "events: sending works again", NULL);
    ev->failing = false;
  }
  else if(!ev->failing) {
    ev->failing = true;
    log_kv(ev->lg, LOG_WARN, "events: cannot send an Event (best effort: "
           "dropped; logged once until one succeeds)", "reason", it->reason,
           "error", res->message, NULL);
  }
  pop_head(ev);
  if(ev->q_n)
    send_head(ev);
}

static void set_s(json_object *o, const char *k, const char *v)
{
  json_object_object_add(o, k, json_object_new_string(v));
}

/* start the call for the head of the queue; a refused start drops it */
static void send_head(kube_events *ev)
{
  while(ev->q_n && !ev->busy) {
    ev_item *it = &ev->q[ev->q_start];
    const evcache_entry *e;
    char now_s[SCTIME_RFC3339_MAX], path[1200];
    const char *ts = recorder_type_name(it->type);
    json_object *o = json_object_new_object(), *x;
    sc_errbuf eb;
    sc_err err;
    eb.msg[0] = 0;
    sctime_format_rfc3339(it->when / 1000 * 1000, now_s, sizeof(now_s));
    /* uid, or kind/ns/name for an object without one */
    if(it->uid[0])
      evcache_key(it->uid, it->reason, it->message, ts, ev->cur_key,
                  sizeof(ev->cur_key));
    else {
      char id[700];
      snprintf(id, sizeof(id), "%s/%s/%s", it->kind, it->ns, it->name);
      evcache_key(id, it->reason, it->message, ts, ev->cur_key,
                  sizeof(ev->cur_key));
    }
    e = evcache_find(ev->cache, ev->cur_key, sctime_mono_ms());
    if(e) {
      ev->patching = true;
      snprintf(ev->cur_name, sizeof(ev->cur_name), "%s", e->name);
      snprintf(ev->cur_first, sizeof(ev->cur_first), "%s", e->first_ts);
      ev->cur_count = e->count + 1;
      json_object_object_add(o, "count",
                             json_object_new_int64(ev->cur_count));
      set_s(o, "lastTimestamp", now_s);
      events_path(path, sizeof(path), it->ns, ev->cur_name);
      err = kube_http_request(ev->h, "PATCH", path,
                              "application/merge-patch+json",
                              json_object_to_json_string_ext(
                                o, JSON_C_TO_STRING_PLAIN),
                              EV_TIMEOUT_MS, on_sent, ev, &eb);
    }
    else {
      unsigned char r[8];
      char name[220];
      size_t i;
      ev->patching = false;
      if(RAND_bytes(r, sizeof(r)) != 1)
        memset(r, 0, sizeof(r));
      snprintf(name, sizeof(name), "%.180s.", it->name);
      for(i = 0; i < sizeof(r); i++)
        snprintf(name + strlen(name), sizeof(name) - strlen(name), "%02x",
                 r[i]);
      snprintf(ev->cur_name, sizeof(ev->cur_name), "%s", name);
      snprintf(ev->cur_first, sizeof(ev->cur_first), "%s", now_s);
      ev->cur_count = 1;
      set_s(o, "apiVersion", "v1");
      set_s(o, "kind", "Event");
      x = json_object_new_object();
      set_s(x, "name", name);
      set_s(x, "namespace", it->ns);
      json_object_object_add(o, "metadata", x);
      x = json_object_new_object();
      set_s(x, "apiVersion", it->api_version);
      set_s(x, "kind", it->kind);
      set_s(x, "namespace", it->ns);
      set_s(x, "name", it->name);
      if(it->uid[0])
        set_s(x, "uid", it->uid);
      if(it->rv[0])
        set_s(x, "resourceVersion", it->rv);
      json_object_object_add(o, "involvedObject", x);
      set_s(o, "reason", it->reason);
      set_s(o, "message", it->message);
      set_s(o, "type", ts);
      x = json_object_new_object();
      set_s(x, "component", ev->component);
      if(ev->host[0])
        set_s(x, "host", ev->host);
      json_object_object_add(o, "source", x);
      set_s(o, "firstTimestamp", now_s);
      set_s(o, "lastTimestamp", now_s);
      json_object_object_add(o, "count", json_object_new_int64(1));
      set_s(o, "reportingComponent", ev->component);
      set_s(o, "reportingInstance", ev->host);
      events_path(path, sizeof(path), it->ns, NULL);
      err = kube_http_request(ev->h, "POST", path, "application/json",
                              json_object_to_json_string_ext(
                                o, JSON_C_TO_STRING_PLAIN),
                              EV_TIMEOUT_MS, on_sent, ev, &eb);
    }
    json_object_put(o);
    if(!err) {
      ev->busy = true;
      return;
    }
    if(!ev->failing) {
      ev->failing = true;
      log_kv(ev->lg, LOG_WARN, "events: cannot send an Event (best effort: "
             "dropped)", "reason", it->reason, "error", eb.msg, NULL);
    }
    count(ev, ev->patching ? "patch" : "create", "error");
    pop_head(ev);
  }
}
