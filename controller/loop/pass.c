/*
 * pass.c - the pass driver (see pass.h): a full or single-session pass
 * from the store read through the observation and the plan to the
 * executor's run, and each session's turn into the queue (result.h).
 */
#include "controller/loop/pass.h"
#include "controller/loop/capacity.h"
#include "controller/loop/input.h"
#include "controller/loop/result.h"
#include "controller/loop/shard_loop.h"
#include "controller/status/key.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* While Cube refuses the key: at most this many CubeUnauthorized status
 * writes a pass (status_key_refused). */
#define KEY_STATUS_WRITES_MAX 256

static void pass_finish(pass *ps);
static void note_claim_wait(reconciler *r, const char *key);

static void pass_free(pass *ps)
{
  if(!ps)
    return;
  store_list_result_free(&ps->list);
  free(ps->served);
  session_free(ps->single);
  observation_free(ps->obs);
  if(ps->acting)
    act_run_clear(&ps->run);
  plan_free(ps->p);
  free(ps->fail_msg);
  free(ps->key);
  free(ps);
}

static session **pass_sessions(pass *ps, size_t *n)
{
  if(ps->full) {
    *n = ps->list.n;
    return ps->list.items;
  }
  *n = ps->single ? 1 : 0;
  return &ps->single;
}

static void pass_fail(pass *ps, const char *msg, int64_t retry_after_ms)
{
  if(!ps->fail_msg)
    ps->fail_msg = strdup(msg);
  if(retry_after_ms > ps->retry_after_ms)
    ps->retry_after_ms = retry_after_ms;
}

/* ------------------------------------------------------------------ */
/* the end of a session's turn, the end of the run */

/* session_controller_reconcile_total, counted in runs of one result: a
 * settled pass ends 100,000 sessions "ok", one metrics call instead of
 * one each (the label lookup was about 2 % of such a pass) */
static void flush_results(pass *ps)
{
  char l[48];
  if(ps->res_n > 0) {
    snprintf(l, sizeof(l), "result=\"%s\"", ps->res_name);
    metrics_add(ps->r->o.m, "session_controller_reconcile_total", l,
                ps->res_n);
  }
  ps->res_n = 0;
  ps->res_name[0] = '\0';
}

static void count_result(pass *ps, const char *result)
{
  if(ps->res_n > 0 && strcmp(ps->res_name, result))
    flush_results(ps);
  if(!ps->res_n)
    snprintf(ps->res_name, sizeof(ps->res_name), "%s", result);
  ps->res_n++;
}

static void on_session_end(act_run *run, size_t si, const char *result,
                           bool conflict)
{
  pass *ps = run->ud;
  reconciler *r = ps->r;
  const plan_session *pl = &ps->p->sessions[si];
  const act_sess *sa = &run->sess[si];
  char key[300];
  loop_result res = {LOOP_REQUEUE, 0};
  count_result(ps, result);
  if(sa->elsewhere)
    return; /* another replica's share: its timers are that one's */
  if(!conflict)
    res = loop_result_of(sa->failed, sa->retry_after_ms, pl->next_due,
                         ps->cube_now);
  /* done, and the queue holds nothing for any key: nothing to forget (a
   * settled pass ends every session so; the key and the lookup were about
   * 5 % of it) */
  if(!conflict && res.kind == LOOP_DONE && !queue_tracked(r->q))
    return;
  snprintf(key, sizeof(key), "%s/%s", pl->s->meta.namespace_,
           pl->s->meta.name);
  if(conflict && !ps->full && !pl->s->status.sandbox_id)
    /* a new session's claim lost to another replica: when that one has
     * linked its sandbox by the look again, nothing is left to do */
    note_claim_wait(r, key);
  loop_result_apply(r->q, key, res, sctime_mono_ms());
}

static void on_run_finished(act_run *run)
{
  pass_finish(run->ud);
}

/* ------------------------------------------------------------------ */
/* observed: plan, act */

static void say_key_refused(pass *ps)
{
  reconciler *r = ps->r;
  size_t n;
  session **ss = pass_sessions(ps, &n);
  long code = 0;
  char msg[300];
  if(!r->cube_key_refused || r->o.dry_run || r->follower)
    return;
  cube_client_auth_failures(r->o.cube, &code);
  snprintf(msg, sizeof(msg), "Cube %s refuses the API key (HTTP %ld): "
           "check --cube-api-key-file or CUBE_API_KEY; nothing is created, "
           "paused or deleted until it is accepted",
           cube_client_peer(r->o.cube), code);
  status_key_refused(r->o.st, ss, n, msg, KEY_STATUS_WRITES_MAX);
}

static sc_err plan_pass(pass *ps)
{
  reconciler *r = ps->r;
  plan_input in;
  size_t n;
  session **ss = pass_sessions(ps, &n);
  char **invalid;
  const char **held;
  size_t n_held;
  bool held_all;
  int64_t *seen = NULL;
  sc_err err;
  memset(&in, 0, sizeof(in));
  in.sessions = ss;
  in.n_sessions = n;
  in.sandboxes = ps->obs->sbs;
  in.n_sandboxes = ps->obs->n_sbs;
  in.gone = (const char *const *)ps->obs->gone;
  in.n_gone = ps->obs->n_gone;
  /* an object the store could not decode is absent from the list, not
   * gone: it holds the orphans of its tenant (its namespace, as
   * --tenant-binding namespace makes it); with free binding its tenant is
   * unknown: no orphan at all this pass */
  held = loop_held_tenants(&ps->list, &n_held, &held_all);
  in.list_complete = ps->full &&
                     (!ps->list.n_skipped ||
                      (r->o.plan.bind_tenant_to_namespace && !held_all));
  in.cube_list_short = ps->obs->truncated;
  in.hold_tenants = held;
  in.n_hold_tenants = n_held;
  in.cube_now = ps->cube_now;
  in.recent_orphan_deletes = act_ledger_count(
    &r->orphans_done, ps->cube_now, r->o.plan.brake_window_ms);
  in.recent_reclaims = act_ledger_count(&r->reclaims_done, ps->cube_now,
                                        r->o.plan.brake_window_ms);
  /* rule 11: how long each written intent has been seen as it is (a
   * table too short of memory says 0: nothing is voided early) */
  if(n && r->intent_seen && !(seen = malloc(n * sizeof(*seen))))
    seen = NULL;
  if(seen && intent_seen_update(r->intent_seen, ss, n, ps->full,
                                sctime_mono_ms(), seen))
    in.intent_seen_ms = seen;
  invalid = loop_check_objects(r->o.lg, r->o.m, ss, n, r->dialect,
                               r->probe_failed);
  in.invalid = (const char *const *)invalid;
  if(!r->scratch) /* NULL (out of memory): one per call instead */
    r->scratch = plan_scratch_new();
  err = plan_compute_ex(&in, &r->o.plan, r->scratch, &ps->p);
  loop_free_invalid(invalid, n);
  free(held);
  free(seen);
  return err;
}

static void single_observe_lists(pass *ps);

static void on_observed(observation *obs, void *ud)
{
  pass *ps = ud;
  reconciler *r = ps->r;

  if(ps->by_link && (obs->failed || obs->links_short)) {
    /* the link's GET did not tell enough (gone, failed): list */
    observation_free(obs);
    ps->by_link = false;
    metrics_add(r->o.m, "session_controller_single_observations_total",
                "by=\"link-then-lists\"", 1);
    single_observe_lists(ps);
    return;
  }
  ps->obs = obs;
  if(obs->failed) {
    /* no plan on a partial view: a missing list is no evidence */
    pass_fail(ps, obs->fail_msg ? obs->fail_msg : "observation failed",
              obs->retry_after_ms);
    loop_check_cube_key(r);
    say_key_refused(ps);
    pass_finish(ps);
    return;
  }
  if(ps->full)
    loop_shard_filter_obs(r, obs); /* this replica's tenants' sandboxes */
  ps->cube_now = obs->cube_now;
  if(obs->cube_now && !ps->skipped_lists) {
    r->cube_seen = obs->cube_now;
    r->cube_seen_mono = sctime_mono_ms();
  }
  if(r->stopping || r->follower) {
    pass_finish(ps);
    return;
  }
  ps->phase = PH_ACT;
  if(plan_pass(ps)) {
    pass_fail(ps, "planning failed (out of memory)", -1);
    pass_finish(ps);
    return;
  }
  if(ps->p->guard_tripped) {
    metrics_add(r->o.m, "session_controller_delete_guard_tripped_total",
                NULL, 1);
    log_kv(r->o.lg, LOG_ERROR, "delete guard tripped: orphan deletions "
           "withheld (use --force to override)", "detail",
           ps->p->guard_message ? ps->p->guard_message : "", NULL);
  }
  if(ps->p->n_reclaims_held) {
    metrics_add(r->o.m, "session_controller_reclaim_brake_held_total", NULL,
                (double)ps->p->n_reclaims_held);
    log_kv(r->o.lg, LOG_ERROR, "reclaim brake: reclaims held back (they "
           "stay due; --force lifts the brake)", "detail",
           ps->p->brake_message ? ps->p->brake_message : "", NULL);
  }
  if(ps->p->wants_full_pass)
    r->full_pending = true; /* a create the quota counts over the fleet */
  recorder_note_plan(&r->rec, r->o.lg, ps->p);
  ps->acting = true;
  if(act_run_init(&ps->run, &r->env, ps->p, ps->cube_now)) {
    pass_fail(ps, "out of memory", -1);
    pass_finish(ps);
    return;
  }
  ps->run.session_end = on_session_end;
  ps->run.finished = on_run_finished;
  ps->run.ud = ps;
  if(ps->full) /* a new start each full pass, apart from other replicas' */
    ps->run.rotate = r->act_seed + (r->full_passes++) * 0x9e3779b97f4a7c15ULL;
  if(ps->full && loop_shard_sharing(r)) {
    /* --share-work: the plan saw everything; this replica acts for its
     * share, the others' sessions end here without a call or a write */
    size_t i;
    for(i = 0; i < ps->p->n_sessions; i++)
      if(!loop_shard_serves(r, ps->p->sessions[i].s))
        ps->run.sess[i].held = ps->run.sess[i].elsewhere = true;
    ps->run.serves_orphan = loop_shard_serves_orphan;
    ps->run.serves_ud = r;
  }
  /* the run adds the kube finalizer first (act_run_start) */
  act_run_start(&ps->run);
}

static void start_observe(pass *ps, const sc_kvlist *filter,
                          const observe_lists *lists)
{
  size_t n;
  session **ss = pass_sessions(ps, &n);
  if(ps->served) { /* --share-work: the links of its share only */
    ss = ps->served;
    n = ps->n_served;
  }
  ps->phase = PH_OBSERVE;
  if(observe_start_lists(ps->r->o.cube, ps->r->o.m, ps->r->o.lg, filter,
                         ps->r->o.plan.adopted_names,
                         ps->r->o.plan.n_adopted_names, lists, ss, n,
                         on_observed, ps)) {
    pass_fail(ps, "the Cube client refused the calls", -1);
    pass_finish(ps);
  }
}

/* ------------------------------------------------------------------ */
/* the end of a pass */

/* The gauges by phase and by state: counted here, then one metrics call
 * a label (a call a session and a sandbox was about 3 % of a settled
 * pass), the labels in the order they first appear, as before. */
#define GAUGE_KINDS 16
typedef struct gauge_tally {
  double n[GAUGE_KINDS];
  int order[GAUGE_KINDS];
  int n_order;
} gauge_tally;

static void tally(gauge_tally *t, int k)
{
  if(k < 0 || k >= GAUGE_KINDS)
    k = 0;
  if(!t->n[k])
    t->order[t->n_order++] = k;
  t->n[k]++;
}

static void update_gauges(reconciler *r, pass *ps)
{
  gauge_tally ph, sb;
  size_t i;
  int j;
  char l[64];
  memset(&ph, 0, sizeof(ph));
  memset(&sb, 0, sizeof(sb));
  metrics_reset_family(r->o.m, "session_controller_sessions");
  metrics_reset_family(r->o.m, "session_controller_sandboxes");
  for(i = 0; ps->acting && i < ps->p->n_sessions; i++) {
    const session_status *st = act_run_status(&ps->run, i);
    if(ps->p->sessions[i].s->meta.deletion_timestamp)
      continue;
    tally(&ph, (int)st->phase);
  }
  for(i = 0; ps->obs && i < ps->obs->n_sbs; i++)
    tally(&sb, (int)ps->obs->sbs[i].state);
  for(j = 0; j < ph.n_order; j++) {
    int k = ph.order[j];
    snprintf(l, sizeof(l), "phase=\"%s\"",
             k ? session_phase_name((session_phase)k) : "None");
    metrics_add(r->o.m, "session_controller_sessions", l, ph.n[k]);
  }
  for(j = 0; j < sb.n_order; j++) {
    int k = sb.order[j];
    snprintf(l, sizeof(l), "state=\"%s\"",
             cube_sb_state_name((cube_sb_state)k));
    metrics_add(r->o.m, "session_controller_sandboxes", l, sb.n[k]);
  }
  if(ps->p) {
    loop_capacity_gauges(r->o.m, ps->p, &r->o.plan);
    metrics_set(r->o.m, "session_controller_sessions_policy_denied", NULL,
                (double)ps->p->n_policy_denied);
  }
  if(ps->p && ps->p->capacity_known)
    r->quota_waiting = ps->p->n_quota_waiting;
}

static void full_finish(reconciler *r, pass *ps, double secs)
{
  r->full = NULL;
  metrics_observe(r->o.m, "session_controller_pass_duration_seconds", NULL,
                  secs);
  if(ps->fail_msg && r->o.once) {
    /* no resync timer in --once mode: waiting would hang for ever */
    log_kv(r->o.lg, LOG_ERROR, "--once: full pass incomplete", "error",
           ps->fail_msg, NULL);
    r->done = true;
    r->failed = true;
  }
  else if(ps->fail_msg) {
    snprintf(r->last_fail_why, sizeof(r->last_fail_why), "no full pass has "
             "completed for over 10 resync periods: %s", ps->fail_msg);
    log_kv(r->o.lg, LOG_WARN, "full pass incomplete, retried at the next "
           "resync", "error", ps->fail_msg, NULL);
  }
  else {
    char buf[32], nb[32], na[32];
    r->ready = true;
    r->last_full_done = sctime_mono_ms();
    update_gauges(r, ps);
    snprintf(buf, sizeof(buf), "%.3f", secs);
    snprintf(nb, sizeof(nb), "%zu", ps->list.n);
    snprintf(na, sizeof(na), "%zu", ps->p ? ps->p->n_actions : 0);
    log_kv(r->o.lg, ps->p && ps->p->n_actions ? LOG_INFO : LOG_DEBUG,
           "full pass done", "sessions", nb, "actions", na, "seconds", buf,
           NULL);
    if(r->o.once)
      r->done = true;
  }
}

static void pass_finish(pass *ps)
{
  reconciler *r = ps->r;
  double secs = (double)(sctime_mono_ms() - ps->t0) / 1000.0;
  ps->phase = PH_DONE;
  flush_results(ps);
  loop_check_cube_key(r);
  if(ps->full)
    full_finish(r, ps, secs);
  else {
    r->singles--;
    metrics_observe(r->o.m, "session_controller_reconcile_duration_seconds",
                    NULL, secs);
    if(ps->fail_msg) {
      log_kv(r->o.lg, LOG_WARN, "session reconcile incomplete", "session",
             ps->key, "error", ps->fail_msg, NULL);
      loop_result_apply(r->q, ps->key,
                        loop_result_of(true, ps->retry_after_ms, 0, 0),
                        sctime_mono_ms());
    }
    queue_done(r->q, ps->key);
  }
  pass_free(ps);
  loop_pump(r);
}

/* ------------------------------------------------------------------ */
/* starting passes */

static pass *pass_new(reconciler *r, bool full)
{
  pass *ps = calloc(1, sizeof(*ps));
  if(!ps)
    return NULL;
  ps->r = r;
  ps->full = full;
  ps->t0 = sctime_mono_ms();
  ps->retry_after_ms = -1;
  return ps;
}

static void on_full_list(store_reply *rep, void *ud)
{
  pass *ps = ud;
  reconciler *r = ps->r;
  sc_kvlist filter = {0};
  observe_lists lists;
  if(rep->err) {
    r->store_ok = false;
    log_kv(r->o.lg, LOG_ERROR, "store list failed", "error", rep->message,
           NULL);
    pass_fail(ps, rep->message, -1);
    pass_finish(ps);
    return;
  }
  r->store_ok = true;
  ps->list = rep->list;
  memset(&rep->list, 0, sizeof(rep->list));
  loop_shard_filter_list(r, &ps->list); /* this replica's tenants */
  if(sc_kvlist_set(&filter, SESSION_TAG_MANAGED_BY,
                   r->o.plan.controller_name)) {
    pass_fail(ps, "out of memory", -1);
    pass_finish(ps);
    return;
  }
  loop_shard_lists(r, &lists); /* whole, or by owned tenant if cheaper */
  if(loop_shard_sharing(r)) {
    /* --share-work: the GETs of links (and intents) the lists miss are
     * for the sessions this replica acts for; another's plan is not
     * acted on here, so its facts need no extra call (a missed sandbox
     * of it is only unknown to this pass) */
    size_t i;
    ps->served = calloc(ps->list.n ? ps->list.n : 1, sizeof(*ps->served));
    for(i = 0; ps->served && i < ps->list.n; i++)
      if(loop_shard_serves(r, ps->list.items[i]))
        ps->served[ps->n_served++] = ps->list.items[i];
  }
  start_observe(ps, &filter, &lists);
  sc_kvlist_clear(&filter);
}

void loop_start_full(reconciler *r)
{
  pass *ps;
  store_list_opts lo = {NULL, true, true}; /* the pass only reads */
  sc_errbuf eb;
  if(loop_shard_wait(r))
    return; /* the first membership answer starts it (shard_loop.c) */
  if(!r->probed) {
    r->full_pending = true; /* the first probe's answer starts it */
    return;
  }
  if(!(ps = pass_new(r, true)))
    return;
  loop_probe_dialect(r); /* again, while the dialect is not known */
  r->full_pending = false;
  r->full = ps;
  eb.msg[0] = '\0';
  if(store_list_async(r->o.st, &lo, on_full_list, ps, &eb)) {
    r->store_ok = false;
    log_kv(r->o.lg, LOG_ERROR, "store list failed", "error", eb.msg, NULL);
    pass_fail(ps, eb.msg, -1);
    pass_finish(ps);
  }
}

/* A session never reconciled (no status at all), created while this
 * process watched (the watch said ADDED after the first full pass), that
 * wants a sandbox:
 * its single pass makes no Cube call before the create. No sandbox can be
 * its yet: a replica creates only after writing its claim to the status
 * by compare-and-set, and this pass's claim is a compare-and-set on the
 * empty status it read, so any other replica's claim makes it lose (and a
 * sandbox another one made, or an earlier incarnation with another uid,
 * is no match: rule 12). The two lists it saves were two of the three
 * Cube calls of every new session (the token bucket spent on lists
 * before the create; issue 16's first target). Cube's clock for the claim
 * is the last one observed plus the local interval since (an interval,
 * never a wall clock); a process that has observed nothing yet lists. */
#define FRESH_MAX 4096

/* the two rings (pass.h): fresh keys, then the keys waiting for another
 * replica's claim, in one allocation that reconciler_free frees */
static bool rings_alloc(reconciler *r)
{
  return r->fresh || (r->fresh = calloc(2 * FRESH_MAX, sizeof(*r->fresh)));
}

static void ring_put(char (*ring)[300], size_t *head, size_t *n,
                     const char *key)
{
  snprintf(ring[(*head + *n) % FRESH_MAX], sizeof(ring[0]), "%s", key);
  if(*n < FRESH_MAX)
    (*n)++;
  else
    *head = (*head + 1) % FRESH_MAX;
}

static bool ring_take(char (*ring)[300], size_t head, size_t n,
                      const char *key)
{
  size_t i;
  for(i = 0; i < n; i++) {
    char *k = ring[(head + i) % FRESH_MAX];
    if(!strcmp(k, key)) {
      k[0] = '\0'; /* taken: its slot stays until the ring moves on */
      return true;
    }
  }
  return false;
}

void loop_note_fresh(reconciler *r, const char *key)
{
  if(!rings_alloc(r))
    return; /* out of memory: its pass lists, as any */
  ring_put(r->fresh, &r->fresh_head, &r->n_fresh, key);
}

/* Was key reported ADDED by the watch (and not yet taken)? Taken. */
static bool take_fresh(reconciler *r, const char *key)
{
  return r->fresh && ring_take(r->fresh, r->fresh_head, r->n_fresh, key);
}

/* Another replica's create claim on a session (issue 16, target 0: with
 * three replicas the two that lost the claim listed Cube twice each for
 * every new session, four of the five Cube calls a session cost, past
 * Cube's 100 requests/s per key at 30 arrivals/s). While that claim is
 * live (younger than the create-intent TTL by Cube's clock as last
 * observed) the planner would only wait for it: the pass waits without
 * planning or listing, until the claim's TTL is over (and a second for
 * the clocks' drift). When it runs again and the claimer has linked its
 * sandbox meanwhile (a sandboxID, no claim, no pending action, the spec's
 * generation observed, no connect request, not deleted), that status
 * came from the replica that made the sandbox: nothing is left for this
 * one, as for any status-only change the watch reports (watch.c); the
 * next full pass looks at it as at every session. Otherwise (the claim
 * expired without a sandbox: its replica died) the pass lists and plans
 * as any, and the planner takes the create over. */
static int64_t claim_wait_ms(reconciler *r, const session *s)
{
  const session_status *st = &s->status;
  sc_time now, ttl = r->o.plan.create_intent_ttl_ms;
  if(!r->cube_seen || !st->create_intent_by || !st->create_intent_at ||
     st->sandbox_id || st->pending_kind || s->meta.deletion_timestamp ||
     !strcmp(st->create_intent_by, r->identity) || ttl <= 0)
    return 0;
  now = r->cube_seen + (sctime_mono_ms() - r->cube_seen_mono);
  if(now - st->create_intent_at >= ttl || now < st->create_intent_at - ttl)
    return 0; /* expired, or a clock that makes no sense: list */
  return st->create_intent_at + ttl - now + 1000;
}

static bool claim_done_elsewhere(reconciler *r, const char *key,
                                 bool fresh, const session *s)
{
  const session_status *st = &s->status;
  /* a key that waited for a claim, or a new object another replica
   * claimed and linked before this one's first look */
  if(!r->fresh || (!ring_take(r->fresh + FRESH_MAX, r->waits_head,
                              r->n_waits, key) && !fresh))
    return false;
  return st->sandbox_id && !st->create_intent_by && !st->pending_kind &&
         !s->meta.deletion_timestamp &&
         s->meta.generation == st->observed_generation &&
         !plan_connect_pending(s);
}

static void note_claim_wait(reconciler *r, const char *key)
{
  if(rings_alloc(r))
    ring_put(r->fresh + FRESH_MAX, &r->waits_head, &r->n_waits, key);
}

static void claim_wait(reconciler *r, pass *ps, int64_t ms)
{
  loop_result res = {LOOP_REQUEUE_AFTER, ms};
  note_claim_wait(r, ps->key);
  metrics_add(r->o.m, "session_controller_reconcile_total",
              "result=\"claim-wait\"", 1);
  loop_result_apply(r->q, ps->key, res, sctime_mono_ms());
  pass_finish(ps);
}

static bool new_session_needs_no_list(reconciler *r, bool fresh,
                                      const session *s)
{
  const session_status *st = &s->status;
  /* only an object created while this process watched (after its first
   * full pass): one that was there before may have a sandbox made by
   * another path (a controller before this one), which only a list finds */
  if(!fresh)
    return false;
  if(!r->cube_seen || s->meta.deletion_timestamp ||
     (s->spec.state != SESSION_STATE_ACTIVE &&
      s->spec.state != SESSION_STATE_RUNNING))
    return false;
  return st->phase == SESSION_PHASE_NONE && !st->sandbox_id &&
         !st->create_intent_at && !st->pending_kind && !st->n_conditions;
}

static void skip_observe(pass *ps)
{
  reconciler *r = ps->r;
  observation *obs = calloc(1, sizeof(*obs));
  if(!obs) {
    pass_fail(ps, "out of memory", -1);
    pass_finish(ps);
    return;
  }
  obs->cube_now = r->cube_seen + (sctime_mono_ms() - r->cube_seen_mono);
  obs->retry_after_ms = -1;
  ps->phase = PH_OBSERVE;
  ps->skipped_lists = true;
  on_observed(obs, ps);
}

/* A single pass's lists: the session's sandboxes by its tags, each state */
static void single_observe_lists(pass *ps)
{
  reconciler *r = ps->r;
  sc_kvlist filter = {0};
  if(sc_kvlist_set(&filter, SESSION_TAG_MANAGED_BY,
                   r->o.plan.controller_name) ||
     sc_kvlist_set(&filter, SESSION_TAG_TENANT_ID,
                   session_eff_tenant_id(ps->single)) ||
     sc_kvlist_set(&filter, SESSION_TAG_SESSION_ID,
                   session_eff_session_id(ps->single))) {
    sc_kvlist_clear(&filter);
    pass_fail(ps, "out of memory", -1);
    pass_finish(ps);
    return;
  }
  metrics_add(r->o.m, "session_controller_single_observations_total",
              "by=\"lists\"", 1);
  log_kv(r->o.lg, LOG_DEBUG, "single pass lists", "session", ps->key,
         "linked", ps->single->status.sandbox_id ? "yes" : "no", "claim",
         ps->single->status.create_intent_by ? "yes" : "no", "deleted",
         ps->single->meta.deletion_timestamp ? "yes" : "no", NULL);
  start_observe(ps, &filter, NULL);
  sc_kvlist_clear(&filter);
}

/* May a single pass of s take its facts from its link's GET alone (one
 * Cube request, where the lists take two)? What the GET cannot show is a
 * second sandbox of the session or one not linked yet; they matter only
 * where a sandbox may be made or must all go, so those list: no link; a
 * create claim (a create in flight may have made one); Ended or deleted
 * (every sandbox of it goes). A second sandbox is a full pass's to find
 * (rule 6), as it is today for a pass that lists only this session. The
 * link's GET answering 404 or failing lists as well (on_observed). */
static bool single_by_link(const session *s)
{
  const session_status *st = &s->status;
  return st->sandbox_id && *st->sandbox_id && !st->create_intent_at &&
         !st->create_intent_by && !s->meta.deletion_timestamp &&
         s->spec.state != SESSION_STATE_ENDED;
}

static void on_single_get(store_reply *rep, void *ud)
{
  pass *ps = ud;
  reconciler *r = ps->r;
  bool fresh;
  if(rep->err == SC_ERR_NOT_FOUND) {
    /* purged: nothing left to do for it */
    loop_result done = {LOOP_DONE, 0};
    loop_result_apply(r->q, ps->key, done, sctime_mono_ms());
    pass_finish(ps);
    return;
  }
  if(rep->err) {
    r->store_ok = false;
    pass_fail(ps, rep->message, -1);
    pass_finish(ps);
    return;
  }
  r->store_ok = true;
  ps->single = rep->obj;
  rep->obj = NULL;
  if(!loop_shard_owns(r, ps->single)) {
    /* another replica's tenant (sharding): its owner reconciles it */
    loop_result done = {LOOP_DONE, 0};
    loop_result_apply(r->q, ps->key, done, sctime_mono_ms());
    pass_finish(ps);
    return;
  }
  fresh = take_fresh(r, ps->key);
  if(claim_done_elsewhere(r, ps->key, fresh, ps->single)) {
    loop_result done = {LOOP_DONE, 0};
    metrics_add(r->o.m, "session_controller_reconcile_total",
                "result=\"claimed-elsewhere\"", 1);
    loop_result_apply(r->q, ps->key, done, sctime_mono_ms());
    pass_finish(ps);
    return;
  }
  if(!r->follower && !r->stopping) {
    int64_t ms = claim_wait_ms(r, ps->single);
    if(ms > 0) {
      claim_wait(r, ps, ms);
      return;
    }
  }
  if(new_session_needs_no_list(r, fresh, ps->single)) {
    skip_observe(ps);
    return;
  }
  if(single_by_link(ps->single) &&
     !observe_start_links(r->o.cube, r->o.m, r->o.lg, &ps->single, 1,
                          on_observed, ps)) {
    ps->phase = PH_OBSERVE;
    ps->by_link = true;
    metrics_add(r->o.m, "session_controller_single_observations_total",
                "by=\"link\"", 1);
    return;
  }
  single_observe_lists(ps);
}

void loop_start_single(reconciler *r, const char *key)
{
  pass *ps = pass_new(r, false);
  const char *slash = strchr(key, '/');
  char ns[256];
  sc_errbuf eb;
  if(!ps) {
    queue_done(r->q, key);
    return;
  }
  r->singles++;
  ps->key = strdup(key);
  if(!ps->key || !slash || (size_t)(slash - key) >= sizeof(ns)) {
    pass_fail(ps, "bad queue key", -1);
    pass_finish(ps);
    return;
  }
  memcpy(ns, key, (size_t)(slash - key));
  ns[slash - key] = '\0';
  eb.msg[0] = '\0';
  if(store_get_async(r->o.st, ns, slash + 1, on_single_get, ps, &eb)) {
    r->store_ok = false;
    pass_fail(ps, eb.msg, -1);
    pass_finish(ps);
  }
}
