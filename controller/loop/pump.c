/*
 * pump.c - what starts passes (see pass.h): the work queue (single
 * passes, or one full pass for a burst), the resync and heartbeat timers,
 * the store's identity checked before every pass and every second, and
 * whether Cube refuses the API key.
 */
#include "controller/loop/pass.h"
#include "controller/loop/shard_loop.h"

#include <event2/event.h>
#include <stdio.h>
#include <string.h>

/* Cube refuses the key when its last CUBE_KEY_REFUSED_AFTER answers in a
 * row were 401 or 403 (one stray 403 is not enough: it may be one
 * sandbox's). Said once, at error level, when it starts and when it
 * ends; /readyz is 503 meanwhile. */
#define CUBE_KEY_REFUSED_AFTER 3

void loop_check_cube_key(reconciler *r)
{
  long st = 0;
  bool bad = cube_client_auth_failures(r->o.cube, &st) >=
             CUBE_KEY_REFUSED_AFTER;
  char code[16];
  if(bad == r->cube_key_refused)
    return;
  r->cube_key_refused = bad;
  snprintf(code, sizeof(code), "%ld", st);
  if(bad)
    log_kv(r->o.lg, LOG_ERROR, "Cube refuses the API key on every call: "
           "check --cube-api-key-file or CUBE_API_KEY", "peer",
           cube_client_peer(r->o.cube), "http_status", code, NULL);
  else
    log_kv(r->o.lg, LOG_INFO, "Cube accepts the API key again", "peer",
           cube_client_peer(r->o.cube), NULL);
}

static void arm_qtimer(reconciler *r)
{
  int64_t d = queue_next_delay(r->q, sctime_mono_ms());
  struct timeval tv;
  if(d < 0) {
    event_del(r->qtimer);
    return;
  }
  tv.tv_sec = d / 1000;
  tv.tv_usec = (d % 1000) * 1000;
  event_add(r->qtimer, &tv);
}

/* The store is still the one opened (store_check_identity: the SQLite
 * file at its path, the controller name it records). If not, no pass
 * starts: no Cube call, no status write, until it is back (also checked
 * each heartbeat); /readyz says why. Passes already running finish. */
bool rule13_store_still_ours(reconciler *r)
{
  sc_errbuf eb;
  eb.msg[0] = '\0';
  if(!store_check_identity(r->o.st, &eb)) {
    if(r->store_lost) {
      r->store_lost = false;
      log_kv(r->o.lg, LOG_WARN, "the store is the one opened again: "
             "resuming", "store", store_url(r->o.st), NULL);
      r->full_pending = true; /* nothing was looked at meanwhile */
      loop_shard_want_all(r);
    }
    return true;
  }
  if(!r->store_lost || strcmp(r->store_lost_why, eb.msg)) {
    log_kv(r->o.lg, LOG_ERROR, "the store is not the one opened: stopped "
           "acting (no Cube call, no store write) until it is back",
           "store", store_url(r->o.st), "error", eb.msg, NULL);
    snprintf(r->store_lost_why, sizeof(r->store_lost_why), "%s", eb.msg);
  }
  r->store_lost = true;
  return false;
}

void loop_pump(reconciler *r)
{
  const char *key;
  if(r->stopping || r->done || !rule13_store_still_ours(r))
    return;
  queue_promote(r->q, sctime_mono_ms());
  if(!r->full && queue_len(r->q) > BURST_TO_FULL_PASS) {
    /* a burst (many sessions applied at once): one full pass reads every
     * session fresh and lists Cube twice, instead of two lists per key;
     * the ready keys it covers are dropped (delayed ones stay) */
    while((key = queue_pop(r->q)) != NULL)
      queue_done(r->q, key);
    r->full_pending = true;
    loop_shard_want_all(r); /* the dropped keys: whatever their tenant */
  }
  if(r->full_pending && !r->full && r->singles == 0) {
    loop_start_full(r);
    if(r->full)
      return;
  }
  while(!r->full && !r->full_pending && !r->o.once && !r->follower &&
        r->singles < MAX_SINGLE_PASSES && (key = queue_pop(r->q)))
    loop_start_single(r, key);
  metrics_set(r->o.m, "session_controller_queue_depth", NULL,
              (double)(queue_len(r->q) + queue_delayed(r->q)));
  arm_qtimer(r);
}

void loop_on_qtimer(evutil_socket_t fd, short what, void *arg)
{
  (void)fd;
  (void)what;
  loop_pump(arg);
}

void loop_on_resync(evutil_socket_t fd, short what, void *arg)
{
  reconciler *r = arg;
  (void)fd;
  (void)what;
  r->full_pending = true;
  loop_pump(r);
}

/* Store writes failed: each second a write probe (store.h) learns
 * whether a write could work again. Its commit alone does not end the
 * failing: the writes that failed were bigger than it (on SQLite it may
 * fit in room a failed write left at the end of the WAL file, where they
 * do not), so it starts a full pass, and the first status or intent
 * write of that pass that works ends it (act_health_note). A full pass
 * begun after the probe's commit that ends with no write failed (it had
 * nothing to write) ends it too: nothing the controller needs to write
 * is refused. Until that pass ends no other probe runs (at most
 * PROBE_WAIT_BEATS heartbeats: a pass that cannot complete does not stop
 * the probing); a probe that fails keeps the writes failing. */
#define PROBE_WAIT_BEATS 10
static void probe_store_writes(reconciler *r)
{
  static const char fails_metric[] =
    "session_controller_store_write_failures_total";
  int64_t now = sctime_mono_ms();
  sc_errbuf eb;
  sc_err err;
  if(r->probe_ok_mono) {
    bool ended = r->last_full_done > r->probe_ok_mono;
    if(ended && r->probe_ok_inflight) {
      /* the pass in flight at the probe has ended: the next one is the
       * test (one that has ended too counts no more: another is asked) */
      r->probe_ok_mono = r->last_full_done;
      r->probe_ok_inflight = false;
      ended = false;
      if(!r->full) {
        r->full_pending = true;
        loop_pump(r);
      }
    }
    else if(ended &&
            metrics_get(r->o.m, fails_metric, NULL) == r->probe_ok_fails) {
      r->probe_ok_mono = 0;
      act_health_note(&r->env, SC_OK, NULL);
      return;
    }
    if(!ended && now - r->probe_ok_mono < PROBE_WAIT_BEATS * HEARTBEAT_MS)
      return; /* the pass that tests it has not ended yet */
    r->probe_ok_mono = 0; /* a write failed meanwhile, or no pass ended */
  }
  eb.msg[0] = '\0';
  err = store_write_probe(r->o.st, &eb);
  if(err) {
    act_health_note(&r->env, err, eb.msg);
    return;
  }
  /* the full pass that follows starts after this: it is the test (one
   * in flight may have made its writes before the probe) */
  r->probe_ok_mono = now;
  r->probe_ok_fails = metrics_get(r->o.m, fails_metric, NULL);
  r->probe_ok_inflight = r->full != NULL;
  r->full_pending = true;
  loop_pump(r);
}

void loop_on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
  reconciler *r = arg;
  (void)fd;
  (void)what;
  r->last_beat = sctime_mono_ms();
  if(!r->stopping) {
    /* the store's identity each second, passes due or not: /readyz turns
     * 503 within a second of a move, and work resumes once it is back */
    bool was_lost = r->store_lost;
    if(rule13_store_still_ours(r) && was_lost)
      loop_pump(r);
    if(r->health.failing && store_has_write_probe(r->o.st))
      probe_store_writes(r);
    else
      r->probe_ok_mono = 0;
  }
}

