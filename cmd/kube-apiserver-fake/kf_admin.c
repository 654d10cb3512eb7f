/* kf_admin.c - the fake API server's /_fake/ endpoints: compact,
 * fail and faults (injected failures and delays), end-watches, stats, and
 * the request log. */
#include "cmd/kube-apiserver-fake/kf_server.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include "lib/sctime.h"


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

/* v is a JSON integer from lo to hi (NULL: no) */
static bool int_between(json_object *v, int lo, int hi)
{
  return json_object_is_type(v, json_type_int) &&
         json_object_get_int(v) >= lo && json_object_get_int(v) <= hi;
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
    if(!int_between(v, 1, 60000)) {
      snprintf(msg, len, "delayMs: want milliseconds from 1 to 60000");
      return false;
    }
    f->delay_ms = json_object_get_int(v);
  }
  if(!json_object_object_get_ex(o, "status", &v) && f->delay_ms)
    v = NULL; /* a delay only */
  else if(!int_between(v, 400, 599)) {
    snprintf(msg, len, "status: want an integer from 400 to 599");
    return false;
  }
  f->status = v ? json_object_get_int(v) : 0;
  if(json_object_object_get_ex(o, "count", &v)) {
    if(!int_between(v, -1, 1000000) || json_object_get_int(v) == 0) {
      snprintf(msg, len, "count: want an integer >= 1, or -1 (until "
               "cleared)");
      return false;
    }
    f->count = json_object_get_int(v);
  }
  if(json_object_object_get_ex(o, "retryAfter", &v)) {
    if(!int_between(v, 0, 3600)) {
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
  kf_fault add[KF_FAULTS_MAX];
  size_t i, n = 0;
  char msg[200];
  if(cmd == EVHTTP_REQ_DELETE)
    s->n_faults = 0;
  else if(cmd == EVHTTP_REQ_POST) {
    if(kf_read_body(req, &body)) {
      kf_reply_status(req, 400, "BadRequest", "/_fake/faults: the body is not "
                      "JSON");
      return;
    }
    if(json_object_is_type(body, json_type_array)) {
      n = json_object_array_length(body);
      if(n > KF_FAULTS_MAX - s->n_faults) {
        json_object_put(body);
        kf_reply_status(req, 400, "BadRequest", "/_fake/faults: at most %d "
                        "rules", KF_FAULTS_MAX);
        return;
      }
      for(i = 0; i < n; i++)
        if(!fault_parse(json_object_array_get_idx(body, i), &add[i], msg,
                        sizeof(msg))) {
          json_object_put(body);
          kf_reply_status(req, 400, "BadRequest",
                          "/_fake/faults: rule %zu: %s", i, msg);
          return;
        }
    }
    else {
      n = 1;
      if(s->n_faults >= KF_FAULTS_MAX ||
         !fault_parse(body, &add[0], msg, sizeof(msg))) {
        json_object_put(body);
        if(s->n_faults >= KF_FAULTS_MAX)
          snprintf(msg, sizeof(msg), "at most %d rules", KF_FAULTS_MAX);
        kf_reply_status(req, 400, "BadRequest", "/_fake/faults: %s", msg);
        return;
      }
    }
    json_object_put(body);
    for(i = 0; i < n; i++)
      s->faults[s->n_faults++] = add[i];
  }
  else if(cmd != EVHTTP_REQ_GET) {
    kf_reply_status(req, 405, "MethodNotAllowed", "/_fake/faults: GET, POST "
                    "or DELETE");
    return;
  }
  a = json_object_new_array();
  for(i = 0; i < s->n_faults; i++)
    json_object_array_add(a, fault_json(&s->faults[i]));
  kf_reply_json(req, 200, a);
  json_object_put(a);
}

/* the first live rule that matches, its count taken; NULL = none */
const kf_fault *kf_fault_take(kf_server *s, struct evhttp_request *req,
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
        m = kf_method_name(evhttp_request_get_command(req));
      if(strcmp(m, f->method))
        continue;
    }
    if(f->count > 0)
      f->count--;
    return f;
  }
  return NULL;
}

void kf_reqlog_clear(kf_server *s)
{
  size_t i;
  for(i = 0; i < s->reqlog_n; i++) {
    kf_reqlog *l = &s->reqlog[(s->reqlog_start + i) % KF_REQLOG_MAX];
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
    kf_reqlog_clear(s);
    kf_reply_text(req, 200, "{}");
    return;
  }
  if(q && strstr(q, "format=json")) {
    json_object *a = json_object_new_array();
    for(i = 0; i < s->reqlog_n; i++) {
      const kf_reqlog *l = &s->reqlog[(s->reqlog_start + i) % KF_REQLOG_MAX];
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
    kf_reply_json(req, 200, a);
    json_object_put(a);
    return;
  }
  b = evbuffer_new();
  for(i = 0; i < s->reqlog_n; i++)
    evbuffer_add_printf(b, "%s\n",
                        s->reqlog[(s->reqlog_start + i) % KF_REQLOG_MAX].line);
  evhttp_add_header(evhttp_request_get_output_headers(req),
                    "Content-Type", "text/plain");
  evhttp_send_reply(req, 200, "OK", b);
  evbuffer_free(b);
}

void kf_serve_admin(kf_server *s, struct evhttp_request *req,
                    const char *path)
{
  char buf[200];
  if(!strcmp(path, "/_fake/compact")) {
    kf_store_compact(s);
    while(s->watches) /* like an API server restart: watches reconnect */
      kf_watch_end(s->watches);
    kf_reply_text(req, 200, "{}");
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
    c = kf_qget(&kv, "code");
    n = kf_qget(&kv, "n");
    memset(&f, 0, sizeof(f));
    f.status = c ? (int)strtol(c, NULL, 10) : 500;
    f.count = n ? (int)strtol(n, NULL, 10) : 1;
    f.retry_after = f.status == 429 ? 1 : -1;
    f.watch = -1;
    evhttp_clear_headers(&kv);
    if(f.status < 400 || f.status > 599 || f.count < 1) {
      kf_reply_status(req, 400, "BadRequest", "/_fake/fail: want "
                      "code=400..599 and n>=1");
      return;
    }
    s->n_faults = 0; /* the old interface: one rule at a time */
    s->faults[s->n_faults++] = f;
    kf_reply_text(req, 200, "{}");
    return;
  }
  if(!strcmp(path, "/_fake/faults")) {
    serve_faults(s, req);
    return;
  }
  if(!strcmp(path, "/_fake/end-watches")) {
    int n = 0;
    while(s->watches) { /* like dropped connections: no compaction */
      kf_watch_end(s->watches);
      n++;
    }
    snprintf(buf, sizeof(buf), "{\"ended\":%d}", n);
    kf_reply_text(req, 200, buf);
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
    kf_reply_text(req, 200, buf);
    return;
  }
  if(!strcmp(path, "/_fake/requests")) {
    serve_reqlog(s, req);
    return;
  }
  kf_reply_status(req, 404, "NotFound", "no admin endpoint %s", path);
}

/* remember "METHOD PATH USER-AGENT" for /_fake/requests; the entry */
kf_reqlog *kf_log_request(kf_server *s, struct evhttp_request *req,
                          const char *path)
{
  const char *ua = evhttp_find_header(evhttp_request_get_input_headers(req),
                                      "User-Agent");
  const char *q = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
  char line[1400];
  kf_reqlog l, *slot;
  snprintf(line, sizeof(line), "%s %s %s",
           kf_method_name(evhttp_request_get_command(req)), path,
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
  if(s->reqlog_n == KF_REQLOG_MAX) {
    free(s->reqlog[s->reqlog_start].line);
    free(s->reqlog[s->reqlog_start].query);
    free(s->reqlog[s->reqlog_start].dropped);
    s->reqlog_start = (s->reqlog_start + 1) % KF_REQLOG_MAX;
    s->reqlog_n--;
  }
  slot = &s->reqlog[(s->reqlog_start + s->reqlog_n++) % KF_REQLOG_MAX];
  *slot = l;
  return slot;
}

void kf_reply_fault(struct evhttp_request *req, int status,
                    int retry_after)
{
  char ra[16];
  if(retry_after >= 0) {
    snprintf(ra, sizeof(ra), "%d", retry_after);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After",
                      ra);
  }
  kf_reply_status(req, status, status == 429 ? "TooManyRequests"
                  : status == 503 ? "ServiceUnavailable"
                  : status >= 500 ? "InternalError" : "BadRequest",
                  "injected failure %d", status);
}
