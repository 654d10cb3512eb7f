/* curlev.c - a libcurl multi handle driven by libevent (see curlev.h). */
#include "lib/curlev.h"

#include <stdlib.h>
#include <event2/event.h>

typedef struct sockev {
  struct sockev *prev, *next;
  curl_socket_t fd;
  struct event *ev;
} sockev;

struct curlev {
  struct event_base *base;
  CURLM *multi;
  struct event *timer;
  sockev *socks;           /* every socket event, for curlev_free() */
  curlev_done_fn done;
  curlev_after_fn after;
  void *ud;
};

/* Hand every finished transfer back, then run after(). */
static void check_done(curlev *c)
{
  CURLMsg *m;
  int left;
  while((m = curl_multi_info_read(c->multi, &left))) {
    CURL *e;
    CURLcode cc;
    if(m->msg != CURLMSG_DONE)
      continue;
    e = m->easy_handle;
    cc = m->data.result;
    curl_multi_remove_handle(c->multi, e); /* m is invalid from here */
    c->done(e, cc, c->ud);
  }
  if(c->after)
    c->after(c->ud);
}

static void on_socket(evutil_socket_t fd, short what, void *arg)
{
  curlev *c = arg;
  int running = 0;
  int flags = ((what & EV_READ) ? CURL_CSELECT_IN : 0) |
              ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0);
  curl_multi_socket_action(c->multi, fd, flags, &running);
  check_done(c);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
  curlev *c = arg;
  int running = 0;
  (void)fd;
  (void)what;
  curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
  check_done(c);
}

static void sock_unlink_free(curlev *c, sockev *s)
{
  if(s->prev)
    s->prev->next = s->next;
  else
    c->socks = s->next;
  if(s->next)
    s->next->prev = s->prev;
  event_free(s->ev);
  free(s);
}

static int sock_cb(CURL *e, curl_socket_t fd, int what, void *userp,
                   void *socketp)
{
  curlev *c = userp;
  sockev *s = socketp;
  short kind;
  (void)e;
  if(what == CURL_POLL_REMOVE) {
    if(s) {
      sock_unlink_free(c, s);
      curl_multi_assign(c->multi, fd, NULL);
    }
    return 0;
  }
  kind = EV_PERSIST | ((what & CURL_POLL_IN) ? EV_READ : 0) |
         ((what & CURL_POLL_OUT) ? EV_WRITE : 0);
  if(!s) {
    s = calloc(1, sizeof(*s));
    if(!s)
      return -1;
    s->fd = fd;
    s->ev = event_new(c->base, fd, kind, on_socket, c);
    if(!s->ev) {
      free(s);
      return -1;
    }
    s->next = c->socks;
    if(c->socks)
      c->socks->prev = s;
    c->socks = s;
    curl_multi_assign(c->multi, fd, s);
  }
  else {
    event_del(s->ev);
    event_assign(s->ev, c->base, fd, kind, on_socket, c);
  }
  event_add(s->ev, NULL);
  return 0;
}

static int timer_cb(CURLM *m, long timeout_ms, void *userp)
{
  curlev *c = userp;
  struct timeval tv;
  (void)m;
  if(timeout_ms < 0) {
    evtimer_del(c->timer);
    return 0;
  }
  tv.tv_sec = timeout_ms / 1000;
  tv.tv_usec = (timeout_ms % 1000) * 1000;
  evtimer_add(c->timer, &tv);
  return 0;
}

curlev *curlev_new(struct event_base *base, curlev_done_fn done,
                   curlev_after_fn after, void *ud, sc_errbuf *eb)
{
  curlev *c;
  if(!base || !done) {
    sc_errf(eb, SC_ERR_INVALID, "curlev: no event base or callback");
    return NULL;
  }
  c = calloc(1, sizeof(*c));
  if(!c) {
    sc_errf(eb, SC_ERR_NOMEM, "curlev: out of memory");
    return NULL;
  }
  c->base = base;
  c->done = done;
  c->after = after;
  c->ud = ud;
  c->multi = curl_multi_init();
  c->timer = evtimer_new(base, on_timeout, c);
  if(!c->multi || !c->timer) {
    sc_errf(eb, SC_ERR_NOMEM, "curlev: cannot create the multi handle");
    curlev_free(c);
    return NULL;
  }
  curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
  curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
  curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
  curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
  return c;
}

void curlev_free(curlev *c)
{
  if(!c)
    return;
  if(c->timer)
    evtimer_del(c->timer);
  if(c->multi)
    curl_multi_cleanup(c->multi);
  while(c->socks) /* anything curl did not REMOVE */
    sock_unlink_free(c, c->socks);
  if(c->timer)
    event_free(c->timer);
  free(c);
}

CURLM *curlev_multi(curlev *c)
{
  return c ? c->multi : NULL;
}

sc_err curlev_add(curlev *c, CURL *easy)
{
  CURLMcode mc;
  if(!c || !easy)
    return SC_ERR_INVALID;
  mc = curl_multi_add_handle(c->multi, easy);
  if(mc == CURLM_OK)
    return SC_OK;
  return mc == CURLM_OUT_OF_MEMORY ? SC_ERR_NOMEM : SC_ERR_INTERNAL;
}

void curlev_remove(curlev *c, CURL *easy)
{
  if(c && easy)
    curl_multi_remove_handle(c->multi, easy);
}
