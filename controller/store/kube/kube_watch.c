/* kube_watch.c - the kube store's watch (store.h): a streaming GET of
 * kube_http (controller/kubeclient/http.h) on the controller's client, so the
 * credential, the headers and TLS are those of every other call. Each
 * line is a watch event; the position moves with every event and
 * bookmark; a request that ends after its timeoutSeconds goes on from
 * there; an expired position (410) is SC_ERR_EXPIRED and the watch stops;
 * other failures are reported once per run of them and the request is
 * made again after a backoff (200 ms doubling to 30 s, half of it at
 * random, or the server's Retry-After when longer) shared by the watches
 * of the store, so a watch started after a failure waits its turn.
 *
 * Ownership: a watch is the caller's from store_watch_start() to
 * store_watch_stop(); it owns its stream (cancelled when it is freed).
 * A watch stopped from inside one of its callbacks is freed when that
 * callback returns. */
#include "controller/store/kube/kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <event2/event.h>
#include <openssl/rand.h>
#include "lib/sctime.h"

struct kube_watch {
  store_watch base;
  kube_store *k;
  store_watch_cb cb;
  store_watch_err_cb err_cb;
  void *ud;
  char *pos;               /* the resourceVersion we have seen */
  kube_http_stream *stream;/* the request running, or NULL */
  char err_msg[SC_ERRBUF_SIZE + 256]; /* an ERROR event of this stream */
  bool expired, stopped, failing, in_cb;
  int backoff_ms;
  struct event *retry;
  char **deleted;          /* uids whose DELETED we reported */
  size_t n_deleted;
  kube_watch *next;
};

static void watch_begin(kube_watch *w);

static void watch_free(kube_watch *w)
{
  kube_watch **pp;
  size_t i;
  for(pp = &w->k->watches; *pp; pp = &(*pp)->next)
    if(*pp == w) {
      *pp = w->next;
      break;
    }
  kube_http_stream_cancel(w->stream);
  if(w->retry)
    event_free(w->retry);
  for(i = 0; i < w->n_deleted; i++)
    free(w->deleted[i]);
  free(w->deleted);
  free(w->pos);
  free(w);
}

/* err_cb (when there is one); false when the watch is gone (stopped
 * from the callback: freed here) */
static bool tell_err(kube_watch *w, sc_err err, const char *msg)
{
  if(w->err_cb) {
    w->in_cb = true;
    w->err_cb(err, msg, w->ud);
    w->in_cb = false;
  }
  if(!w->stopped)
    return true;
  watch_free(w);
  return false;
}

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
  if(!w->failing) {
    w->failing = true;
    if(!tell_err(w, err, msg))
      return;
  }
  watch_schedule(w);
}

/* the position is too old: SC_ERR_EXPIRED once, and the watch stops */
static void watch_expire(kube_watch *w, const char *msg)
{
  w->expired = true;
  kube_http_stream_cancel(w->stream);
  w->stream = NULL;
  (void)tell_err(w, SC_ERR_EXPIRED, msg);
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

/* one line of the stream: one event */
static void on_line(const char *line, size_t len, void *ud)
{
  kube_watch *w = ud;
  json_object *ev = NULL, *t, *o, *m, *rv;
  const char *type;
  char typebuf[32], why[SC_ERRBUF_SIZE];
  session *s = NULL;
  store_event se;
  char msg[SC_ERRBUF_SIZE + 256];
  why[0] = '\0';
  if(kstore_json_parse(line, len, &ev, why, sizeof(why)) ||
     !json_object_object_get_ex(ev, "type", &t) ||
     !json_object_is_type(t, json_type_string) ||
     !json_object_object_get_ex(ev, "object", &o)) {
    json_object_put(ev);
    snprintf(msg, sizeof(msg), "kube watch %s: a line that is not a watch "
             "event%s%s%s", w->k->conn.server, why[0] ? " (" : "", why,
             why[0] ? ")" : "");
    (void)tell_err(w, SC_ERR_PROTOCOL, msg);
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
             kstore_status_msg(o));
    json_object_put(ev);
    if(code == 410)
      watch_expire(w, msg);
    else if(!w->err_msg[0]) /* the failure of this stream, at its end */
      snprintf(w->err_msg, sizeof(w->err_msg), "%s", msg);
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
  if(kstore_obj_decode(o, &s, why, sizeof(why)) == SC_ERR_NOMEM) {
    json_object_put(ev);
    (void)tell_err(w, SC_ERR_NOMEM, "kube watch: out of memory decoding "
                   "an event");
    return;
  }
  if(!s) {
    /* skipped and reported; the watch goes on with the next event (the
     * position moved past this one above) */
    char what[64];
    snprintf(what, sizeof(what), "the %.16s event at %.24s", type,
             w->pos ? w->pos : "?");
    (void)kstore_skip_obj(w->k, NULL, "watch", o, what, why);
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
  if(w->stopped)
    watch_free(w);
}

/* the server is streaming: it watches again */
static void on_open(long status, void *ud)
{
  kube_watch *w = ud;
  (void)status;
  w->k->watch_backoff_ms = w->k->watch_retry_after_ms = 0;
}

/* events over LINE_MAX_ that the stream dropped: reported */
static void on_oversized(size_t n, void *ud)
{
  kube_watch *w = ud;
  char why[160];
  snprintf(why, sizeof(why), "%zu watch event%s of more than %d bytes (the "
           "line cap) after %.24s: skipped", n, n > 1 ? "s" : "", LINE_MAX_,
           w->pos ? w->pos : "?");
  (void)store_skip_report(&w->k->base, NULL, "watch", NULL, NULL, NULL, why,
                          NULL);
}

/* the request ended */
static void on_end(const kube_http_result *res, void *ud)
{
  kube_watch *w = ud;
  kube_store *k = w->k;
  char msg[SC_ERRBUF_SIZE + 300];
  w->stream = NULL; /* the client frees it */
  if(w->expired)
    return;
  if(!res->err && res->status == 200 && !w->err_msg[0]) {
    w->failing = false;
    w->backoff_ms = 0;
    watch_begin(w); /* timeoutSeconds ran out: go on from pos */
    return;
  }
  if(!res->err && res->status == 410) {
    snprintf(msg, sizeof(msg), "kube watch from %s: 410 Gone", w->pos);
    watch_expire(w, msg);
    return;
  }
  k->watch_retry_after_ms = 0;
  if(!res->err && (res->status == 429 || res->status >= 500) &&
     res->retry_after_s > 0)
    k->watch_retry_after_ms = res->retry_after_s > WATCH_BACKOFF_MAX_MS / 1000
                              ? WATCH_BACKOFF_MAX_MS
                              : (int)res->retry_after_s * 1000;
  snprintf(msg, sizeof(msg), "%s", w->err_msg[0] ? w->err_msg
                                   : res->message[0] ? res->message
                                   : "kube watch: the stream ended");
  watch_fail(w, SC_ERR_IO, msg);
}

static const kube_http_stream_cb watch_cbs = {on_open, on_line, on_oversized,
                                              on_end};

static void watch_begin(kube_watch *w)
{
  kube_store *k = w->k;
  char path[1400], *epos;
  unsigned char r[2] = {0, 0};
  int timeout = k->watch_timeout_s;
  kube_http_stream_opts so;
  sc_errbuf eb;
  eb.msg[0] = 0;
  if(!timeout) {
    (void)RAND_bytes(r, 2);
    timeout = 240 + (r[0] | r[1] << 8) % 120;
  }
  epos = curl_easy_escape(NULL, w->pos, 0);
  if(k->ns)
    kstore_obj_path(path, sizeof(path), k->ns, NULL, NULL);
  else
    snprintf(path, sizeof(path), GROUP_PATH "/sessions");
  snprintf(path + strlen(path), sizeof(path) - strlen(path), "?watch=1&"
           "resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=%d",
           epos ? epos : "", timeout);
  curl_free(epos);
  w->err_msg[0] = '\0';
  memset(&so, 0, sizeof(so));
  so.line_max = LINE_MAX_;
  /* a silent stream (no bookmark, no event) for 2 timeouts is dead */
  so.idle_s = (long)timeout * 2;
  if(kube_http_stream_start(k->http, path, &so, &watch_cbs, w, &w->stream,
                            &eb))
    watch_fail(w, SC_ERR_IO, eb.msg);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
  kube_watch *w = arg;
  (void)fd;
  (void)what;
  if(!w->stopped && !w->expired && !w->stream)
    watch_begin(w);
}

void kstore_watch_free_all(kube_store *k)
{
  while(k->watches)
    watch_free(k->watches);
}

void kstore_watch_stop(store_watch *sw)
{
  kube_watch *w = (kube_watch *)sw;
  if(!w)
    return;
  w->stopped = true;
  if(!w->in_cb)
    watch_free(w); /* else freed once its callback returned */
}

sc_err kstore_watch_start(store *st, const char *from_revision,
                          store_watch_cb cb, store_watch_err_cb err_cb,
                          void *ud, store_watch **out, sc_errbuf *eb)
{
  kube_store *k = (kube_store *)st;
  kube_watch *w;
  struct timeval now = {0, 0};
  if(!k->evbase || !k->http)
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
  w->retry = evtimer_new(k->evbase, on_retry, w);
  if(from_revision && *from_revision)
    w->pos = strdup(from_revision);
  else {
    /* "from now": the list's version */
    store_list_result r;
    store_list_opts lo = {NULL, false, false};
    sc_err err;
    memset(&r, 0, sizeof(r));
    err = kstore_list(st, &lo, &r, eb);
    if(err) {
      store_list_result_free(&r);
      watch_free(w);
      return err;
    }
    w->pos = r.revision;
    r.revision = NULL;
    store_list_result_free(&r);
  }
  if(!w->retry || !w->pos) {
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
    evtimer_add(w->retry, &now); /* from the loop: callbacks never run
                                    inside this call */
  *out = &w->base;
  return SC_OK;
}
