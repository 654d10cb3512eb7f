/* reflector.c - list, then watch from the list's revision, list again
 * when the watch ends, with a jittered, capped backoff on failures (see
 * reflector.h). */
#include "controller/store/reflector.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>
#include <openssl/rand.h>
#include "lib/sctime.h"

#define BACKOFF_MS 1000
#define BACKOFF_MAX_MS 30000

struct reflector {
  store *st;
  struct event_base *base;
  char *ns;
  bool include_deleted;
  int backoff_ms, backoff_max_ms;
  reflector_cbs cb;
  void *ud;
  bool started, stopped;
  bool freed;              /* reflector_free() came: free when safe */
  bool in_cb;              /* inside one of the owner's callbacks */
  bool listing;            /* a list is in flight */
  store_watch *watch;
  int64_t watch_since_ms;  /* when the watch started (sctime_mono_ms) */
  int failures;            /* in a row */
  uint64_t lists;
  char *revision;
  struct event *timer;     /* the next list */
};

static void do_list(reflector *r);
static void fail(reflector *r, reflector_phase ph, sc_err err, const char *msg,
                 int64_t delay_ms);

static void reflector_destroy(reflector *r)
{
  if(r->timer)
    event_free(r->timer);
  free(r->ns);
  free(r->revision);
  free(r);
}

/* after an owner's callback: false when r must not be used any more
 * (stopped; freed here when it was freed from inside the callback) */
static bool back_from_cb(reflector *r)
{
  r->in_cb = false;
  if(r->freed && !r->listing) {
    reflector_destroy(r);
    return false;
  }
  return !r->stopped;
}

static void set_revision(reflector *r, const char *rev)
{
  char *c = strdup(rev ? rev : "");
  if(c) {
    free(r->revision);
    r->revision = c;
  }
}

/* the wait before the next list after one more failure: the n-th in a
 * row waits d = backoff * 2^(n-1) capped, at random in [d/2, d] */
static int64_t next_backoff(reflector *r)
{
  int64_t d = r->backoff_ms;
  uint32_t x = 0;
  int i;
  r->failures++;
  for(i = 1; i < r->failures && d < r->backoff_max_ms; i++)
    d *= 2;
  if(d > r->backoff_max_ms)
    d = r->backoff_max_ms;
  (void)RAND_bytes((unsigned char *)&x, sizeof(x));
  return d / 2 + (int64_t)((double)(d - d / 2) * (x / 4294967295.0));
}

/* tell the owner, then list again after delay_ms (0: now) */
static void fail(reflector *r, reflector_phase ph, sc_err err,
                 const char *msg, int64_t delay_ms)
{
  struct timeval tv;
  if(r->cb.error) {
    r->in_cb = true;
    r->cb.error(ph, err, msg, delay_ms, r->ud);
    if(!back_from_cb(r))
      return;
  }
  if(!delay_ms) {
    do_list(r);
    return;
  }
  tv.tv_sec = (time_t)(delay_ms / 1000);
  tv.tv_usec = (suseconds_t)(delay_ms % 1000) * 1000;
  evtimer_add(r->timer, &tv);
}

static void on_event(const store_event *ev, void *ud)
{
  reflector *r = ud;
  if(r->stopped)
    return;
  set_revision(r, ev->revision);
  r->in_cb = true;
  r->cb.event(ev, r->ud);
  (void)back_from_cb(r);
}

static void on_watch_err(sc_err err, const char *msg, void *ud)
{
  reflector *r = ud;
  int64_t lived = sctime_mono_ms() - r->watch_since_ms;
  if(r->stopped)
    return;
  store_watch_stop(r->watch); /* store.h: allowed from its callback */
  r->watch = NULL;
  fail(r, REFLECTOR_WATCH_ENDED, err, msg,
       lived >= r->backoff_ms ? 0 : next_backoff(r));
}

static void on_list(store_reply *rep, void *ud)
{
  reflector *r = ud;
  char *rev;
  sc_errbuf eb;
  r->listing = false;
  if(r->freed && !r->in_cb) {
    reflector_destroy(r);
    return;
  }
  if(r->stopped)
    return;
  if(rep->err) {
    fail(r, REFLECTOR_LIST, rep->err, rep->message, next_backoff(r));
    return;
  }
  r->failures = 0;
  r->lists++;
  set_revision(r, rep->list.revision);
  rev = strdup(rep->list.revision ? rep->list.revision : "");
  if(!rev) {
    fail(r, REFLECTOR_LIST, SC_ERR_NOMEM, "reflector: out of memory",
         next_backoff(r));
    return;
  }
  r->in_cb = true;
  r->cb.relisted(&rep->list, r->ud);
  if(!back_from_cb(r)) {
    free(rev);
    return;
  }
  eb.msg[0] = '\0';
  r->watch_since_ms = sctime_mono_ms();
  if(store_watch_start(r->st, rev, on_event, on_watch_err, r, &r->watch,
                       &eb)) {
    r->watch = NULL;
    fail(r, REFLECTOR_WATCH_START, SC_ERR_UNAVAILABLE, eb.msg,
         next_backoff(r));
  }
  free(rev);
}

static void do_list(reflector *r)
{
  store_list_opts lo;
  sc_errbuf eb;
  sc_err err;
  memset(&lo, 0, sizeof(lo)); /* every field: shared stays false (the
                                 reflector keeps and changes its copies) */
  lo.namespace_ = r->ns;
  lo.include_deleted = r->include_deleted;
  eb.msg[0] = '\0';
  err = store_list_async(r->st, &lo, on_list, r, &eb);
  if(!err)
    r->listing = true;
  else /* not sent: a failed list */
    fail(r, REFLECTOR_LIST, err, eb.msg, next_backoff(r));
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
  reflector *r = arg;
  (void)fd;
  (void)what;
  if(!r->stopped && !r->listing && !r->watch)
    do_list(r);
}

sc_err reflector_new(store *st, const reflector_opts *opts,
                     const reflector_cbs *cbs, void *ud, reflector **out,
                     sc_errbuf *eb)
{
  static const reflector_opts none;
  reflector *r;
  *out = NULL;
  if(!opts)
    opts = &none;
  if(!st || !cbs || !cbs->relisted || !cbs->event)
    return sc_errf(eb, SC_ERR_INVALID, "reflector: a store and the relisted "
                   "and event callbacks are required");
  r = calloc(1, sizeof(*r));
  if(!r)
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  r->st = st;
  r->base = opts->base;
  r->cb = *cbs;
  r->ud = ud;
  r->include_deleted = opts->include_deleted;
  r->backoff_ms = opts->backoff_ms > 0 ? opts->backoff_ms : BACKOFF_MS;
  r->backoff_max_ms = opts->backoff_max_ms > 0 ? opts->backoff_max_ms
                                               : BACKOFF_MAX_MS;
  if(r->backoff_max_ms < r->backoff_ms)
    r->backoff_max_ms = r->backoff_ms;
  r->revision = strdup("");
  if(opts->namespace_)
    r->ns = strdup(opts->namespace_);
  if(!r->base) {
    reflector_destroy(r);
    return sc_errf(eb, SC_ERR_INVALID, "reflector: no event loop for the "
                   "store %s (reflector_opts.base)", store_url(st));
  }
  r->timer = evtimer_new(r->base, on_timer, r);
  if(!r->timer || !r->revision || (opts->namespace_ && !r->ns)) {
    reflector_destroy(r);
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  *out = r;
  return SC_OK;
}

sc_err reflector_start(reflector *r, sc_errbuf *eb)
{
  struct timeval now = {0, 0};
  if(r->started || r->stopped)
    return sc_errf(eb, SC_ERR_INVALID, "reflector: already started");
  r->started = true;
  /* from the loop: no callback inside this call */
  if(evtimer_add(r->timer, &now))
    return sc_errf(eb, SC_ERR_INTERNAL, "reflector: cannot schedule the "
                   "first list");
  return SC_OK;
}

void reflector_stop(reflector *r)
{
  if(!r || r->stopped)
    return;
  r->stopped = true;
  evtimer_del(r->timer);
  store_watch_stop(r->watch);
  r->watch = NULL;
}

void reflector_free(reflector *r)
{
  if(!r)
    return;
  reflector_stop(r);
  r->freed = true;
  if(!r->in_cb && !r->listing)
    reflector_destroy(r);
  /* else: once the callback returns, or when the list's answer comes */
}

bool reflector_list_in_flight(const reflector *r)
{
  return r && r->listing;
}

bool reflector_watching(const reflector *r)
{
  return r && r->watch;
}

const char *reflector_revision(const reflector *r)
{
  return r && r->revision ? r->revision : "";
}

uint64_t reflector_lists(const reflector *r)
{
  return r ? r->lists : 0;
}

int reflector_failures(const reflector *r)
{
  return r ? r->failures : 0;
}
