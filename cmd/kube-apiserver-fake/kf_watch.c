/* kf_watch.c - the fake API server's watches: chunked replies that
 * replay the history from a resourceVersion (410 Gone once compacted),
 * then one event per change, bookmarks and timeouts. */
#include "cmd/kube-apiserver-fake/kf_server.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

static void watch_send(kf_watch *w, const char *type, const char *objjson)
{
  struct evbuffer *b = evbuffer_new();
  evbuffer_add_printf(b, "{\"type\":\"%s\",\"object\":%s}\n", type, objjson);
  evhttp_send_reply_chunk(w->req, b);
  evbuffer_free(b);
}

/* an event of object o (its JSON text: txt; either may be NULL, not
 * both): as it is, or as a Table of one row on a Table watch */
void kf_watch_send_obj(kf_watch *w, const char *type, json_object *o,
                       const char *txt)
{
  json_object *parsed = NULL, *t;
  if(w->fsel.n) {
    json_object *m;
    if(!o)
      o = parsed = json_tokener_parse(txt);
    m = kf_jobj(o, "metadata");
    if(!kf_fsel_match(&w->fsel, kf_jstr(m, "namespace") ? kf_jstr(m,
                      "namespace") : "", kf_jstr(m, "name"))) {
      json_object_put(parsed);
      return; /* not selected */
    }
  }
  if(!w->table) {
    watch_send(w, type, txt ? txt :
               json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(parsed);
    return;
  }
  if(!o)
    o = parsed = json_tokener_parse(txt);
  t = kf_table_of(w->s, w->res, &o, o ? 1 : 0);
  watch_send(w, type, json_object_to_json_string_ext(t,
                                                     JSON_C_TO_STRING_PLAIN));
  json_object_put(t);
  json_object_put(parsed);
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

void kf_watch_end(kf_watch *w)
{
  evhttp_connection_set_closecb(w->conn, NULL, NULL);
  evhttp_send_reply_end(w->req);
  watch_unlink(w);
}

static void on_watch_timeout(evutil_socket_t fd, short what, void *arg)
{
  (void)fd;
  (void)what;
  kf_watch_end(arg);
}

static void on_watch_bookmark(evutil_socket_t fd, short what, void *arg)
{
  kf_watch *w = arg;
  const kf_res *r = &kf_resources[w->res];
  char buf[300];
  (void)fd;
  (void)what;
  snprintf(buf, sizeof(buf), "{\"kind\":\"%s\",\"apiVersion\":\"%s%s%s\","
           "\"metadata\":{\"resourceVersion\":\"%" PRId64 "\"}}", r->kind,
           r->group, *r->group ? "/" : "", r->version, w->s->rv);
  watch_send(w, "BOOKMARK", buf);
}

void kf_serve_watch(kf_server *s, struct evhttp_request *req,
                    const kf_route *rt)
{
  kf_watch *w;
  int64_t from = 0;
  bool from_now = false;
  size_t i;
  struct timeval tv;
  if(rt->rv[0] && !kf_parse_rv(rt->rv, &from)) {
    kf_reply_status(req, 400, "BadRequest", "invalid resourceVersion \"%s\"",
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
  w->fsel = rt->fsel;
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
        kf_watch_send_obj(w, "ADDED", s->objs[i].o, NULL);
  }
  else if(from < s->compacted) {
    char buf[400];
    snprintf(buf, sizeof(buf), "{\"kind\":\"Status\",\"apiVersion\":\"v1\","
             "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old "
             "resource version: %" PRId64 " (%" PRId64 ")\",\"reason\":"
             "\"Expired\",\"code\":410}", from, s->compacted + 1);
    watch_send(w, "ERROR", buf);
    kf_watch_end(w);
    return;
  }
  else {
    size_t keep = (size_t)s->o.history_keep;
    for(i = 0; i < s->hist_n; i++) {
      kf_hist *h = &s->hist[(s->hist_start + i) % keep];
      if(h->rv > from && h->res == w->res && (!w->ns || !strcmp(w->ns,
                                                                h->ns)))
        kf_watch_send_obj(w, h->type, NULL, h->json);
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
