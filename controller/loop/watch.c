/*
 * watch.c - the store watch's lifecycle (see pass.h): a cheap list gives
 * the revision to watch from; each event queues its session's key; an
 * ended watch is started again (a full pass covers what it missed), and
 * one that cannot start is tried again with a doubling delay.
 */
#include "controller/loop/pass.h"

#include <event2/event.h>
#include <stdio.h>

static void on_watch_event(const store_event *ev, void *ud)
{
  reconciler *r = ud;
  char key[300];
  session_key(ev->obj, key, sizeof(key));
  /* a status-only change (ours or another replica's) needs no reconcile:
   * react to new objects, deletions, and spec changes not yet observed */
  if(ev->type == STORE_EVENT_MODIFIED && !ev->obj->meta.deletion_timestamp &&
     ev->obj->meta.generation == ev->obj->status.observed_generation)
    return;
  log_kv(r->o.lg, LOG_DEBUG, "store event", "type",
         store_event_type_name(ev->type), "session", key, "revision",
         ev->revision, NULL);
  queue_add(r->q, key);
  loop_pump(r);
}

static void on_watch_error(sc_err err, const char *msg, void *ud)
{
  reconciler *r = ud;
  log_kv(r->o.lg, err == SC_ERR_EXPIRED ? LOG_INFO : LOG_WARN,
         "store watch ended; relisting", "error", msg ? msg : "", NULL);
  store_watch_stop(r->watch);
  r->watch = NULL;
  r->full_pending = true;
  loop_watch_start(r);
  loop_pump(r);
}

/* No watch could be started: try again after 1 s, doubling to 30 s (the
 * resync passes go on meanwhile; only the reaction to changes is slower). */
static void watch_retry(reconciler *r)
{
  struct timeval tv;
  if(r->stopping)
    return;
  r->watch_backoff_ms = r->watch_backoff_ms ? r->watch_backoff_ms * 2 : 1000;
  if(r->watch_backoff_ms > 30000)
    r->watch_backoff_ms = 30000;
  tv.tv_sec = (time_t)(r->watch_backoff_ms / 1000);
  tv.tv_usec = (suseconds_t)(r->watch_backoff_ms % 1000) * 1000;
  {
    char ms[24];
    snprintf(ms, sizeof(ms), "%lld", (long long)r->watch_backoff_ms);
    log_kv(r->o.lg, LOG_WARN, "store watch not running; trying again",
           "after_ms", ms, NULL);
  }
  evtimer_add(r->wtimer, &tv);
}

static void on_watch_list(store_reply *rep, void *ud)
{
  reconciler *r = ud;
  sc_errbuf eb;
  r->watch_starting = false;
  if(r->stopping)
    return;
  if(rep->err) {
    log_kv(r->o.lg, LOG_ERROR, "store list for watch failed", "error",
           rep->message, NULL);
    watch_retry(r);
    return;
  }
  eb.msg[0] = '\0';
  if(store_watch_start(r->o.st, rep->list.revision, on_watch_event,
                       on_watch_error, r, &r->watch, &eb)) {
    log_kv(r->o.lg, LOG_ERROR, "store watch failed", "error", eb.msg, NULL);
    watch_retry(r);
  }
  else
    r->watch_backoff_ms = 0;
}

void loop_watch_start(reconciler *r)
{
  store_list_opts lo = {NULL, false};
  sc_errbuf eb;
  if(r->watch_starting)
    return;
  /* the revision to watch from: a cheap list gives the current one; the
   * full pass that follows covers everything before it */
  eb.msg[0] = '\0';
  if(store_list_async(r->o.st, &lo, on_watch_list, r, &eb)) {
    log_kv(r->o.lg, LOG_ERROR, "store list for watch failed", "error",
           eb.msg, NULL);
    watch_retry(r);
    return;
  }
  r->watch_starting = true;
}

void loop_on_wtimer(evutil_socket_t fd, short what, void *arg)
{
  reconciler *r = arg;
  (void)fd;
  (void)what;
  if(r->watch || r->watch_starting || r->stopping)
    return;
  r->full_pending = true; /* changes while no watch ran: a full pass */
  loop_watch_start(r);
  loop_pump(r);
}

