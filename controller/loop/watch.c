/*
 * watch.c - the loop's side of the store watch (see pass.h). The
 * reflector (controller/store/reflector.h) owns list + watch, the relist
 * when a watch ends and the backoff when a list fails; this file only
 * turns what it reports into work: each event queues its session's key,
 * and a relist after a gap (a watch that ended, a list that failed) asks
 * for a full pass, which covers whatever the gap hid.
 */
#include "controller/loop/pass.h"
#include "controller/loop/shard_loop.h"
#include "controller/plan/plan.h"
#include "controller/store/reflector.h"

#include <stdio.h>
#include <string.h>

static void on_relisted(store_list_result *list, void *ud)
{
  reconciler *r = ud;
  (void)list; /* the full pass lists on its own, with the tombstones */
  if(reflector_lists(r->refl) > 1) {
    r->full_pending = true; /* changes while no watch ran */
    loop_pump(r);
  }
}

static void on_event(const store_event *ev, void *ud)
{
  reconciler *r = ud;
  char key[300];
  session_key(ev->obj, key, sizeof(key));
  /* a status-only change (ours or another replica's) needs no reconcile:
   * react to new objects, deletions, spec changes not yet observed, and
   * connect requests not yet answered (an annotation: the generation does
   * not move) */
  if(ev->type == STORE_EVENT_MODIFIED && !ev->obj->meta.deletion_timestamp &&
     ev->obj->meta.generation == ev->obj->status.observed_generation &&
     !plan_connect_pending(ev->obj))
    return;
  if(!loop_shard_owns(r, ev->obj))
    return; /* another replica's tenant (sharding) */
  if(ev->type == STORE_EVENT_ADDED && r->ready)
    loop_note_fresh(r, key);
  log_kv(r->o.lg, LOG_DEBUG, "store event", "type",
         store_event_type_name(ev->type), "session", key, "revision",
         ev->revision, NULL);
  /* a deletion or a spec change (Paused, Ended) may free a slot of a
   * tenant's running budget: the waiting creates are decided over the
   * whole fleet, so ask for a full pass rather than wait for the resync */
  if(r->quota_waiting && ev->type != STORE_EVENT_ADDED)
    r->full_pending = true;
  queue_add(r->q, key);
  loop_pump(r);
}

static void on_error(reflector_phase ph, sc_err err, const char *msg,
                     int64_t delay_ms, void *ud)
{
  reconciler *r = ud;
  char ms[24];
  switch(ph) {
  case REFLECTOR_WATCH_ENDED:
    log_kv(r->o.lg, err == SC_ERR_EXPIRED ? LOG_INFO : LOG_WARN,
           "store watch ended; relisting", "error", msg ? msg : "", NULL);
    r->full_pending = true;
    loop_pump(r);
    break;
  case REFLECTOR_LIST:
    log_kv(r->o.lg, LOG_ERROR, "store list for watch failed", "error",
           msg ? msg : "", NULL);
    break;
  case REFLECTOR_WATCH_START:
    log_kv(r->o.lg, LOG_ERROR, "store watch failed", "error",
           msg ? msg : "", NULL);
    break;
  }
  if(delay_ms > 0) {
    /* the resync passes go on meanwhile; only the reaction is slower */
    snprintf(ms, sizeof(ms), "%lld", (long long)delay_ms);
    log_kv(r->o.lg, LOG_WARN, "store watch not running; trying again",
           "after_ms", ms, NULL);
  }
}

sc_err loop_watch_new(reconciler *r, sc_errbuf *eb)
{
  static const reflector_cbs cbs = {on_relisted, on_event, on_error};
  reflector_opts ro;
  memset(&ro, 0, sizeof(ro));
  ro.base = r->o.base;
  ro.include_deleted = false;
  return reflector_new(r->o.st, &ro, &cbs, r, &r->refl, eb);
}

void loop_watch_start(reconciler *r)
{
  sc_errbuf eb;
  eb.msg[0] = '\0';
  if(reflector_start(r->refl, &eb))
    log_kv(r->o.lg, LOG_ERROR, "store watch not started", "error", eb.msg,
           NULL);
}
