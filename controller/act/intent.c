/*
 * intent.c - rule 11 for the destructive calls: the intent is stored
 * before the act, and the store's health as the writes find it.
 *
 * Before a PAUSE or a DELETE of a session's sandbox the executor writes
 * status.pendingAction {kind, sandboxID, at (Cube's clock), by} by
 * compare-and-set on the version the plan read (or the run's own last
 * write), a reclaim also phase Reclaiming; only a written intent lets the
 * call go:
 *   - the write conflicts: the object changed since the plan (a spec
 *     edit, a connect request, another replica): no call, looked at again
 *     now (a stronger check than the generation re-read it replaces);
 *   - the write fails (a full disk, a read-only store, the API server
 *     refusing): no call, an error logged, act_health failing, /readyz
 *     503, session_controller_intent_write_failures_total counted.
 * A crash after the write leaves the intent in the store: every replica's
 * planner carries it on from the facts (plan/rules.c
 * rule11_resume_intent): a reclaim whose sandbox is gone is Reclaimed,
 * never a new sandbox.
 *
 * Orphans have no object to hold an intent. Theirs is the audit trail: a
 * line with outcome "intent" is written before the call (with
 * --audit-log; a line that cannot be written stops the call), and the
 * call goes only while act_health says the store takes writes, so a
 * store that cannot record what happened (a full disk) sees no deletion
 * at all. A crash after the orphan's DELETE needs nothing carried on:
 * the sandbox is gone, and nothing would make it again.
 */
#include "controller/act/call.h"
#include "controller/act/status.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* the store's health */

void act_health_note(const act_env *env, sc_err err, const char *msg)
{
  act_health *h = env->health;
  if(!h)
    return;
  if(!err || err == SC_ERR_CONFLICT || err == SC_ERR_NOT_FOUND) {
    /* the store answered as a store does: it takes writes */
    if(h->failing)
      log_kv(env->lg, LOG_INFO, "store writes work again; destructive "
             "calls resume", NULL);
    h->failing = false;
    return;
  }
  metrics_add(env->m, "session_controller_store_write_failures_total", NULL,
              1);
  if(!h->failing) {
    log_kv(env->lg, LOG_ERROR, "store write failed: no pause, delete or "
           "create goes to Cube until a write works again (their intents "
           "cannot be recorded)", "error", msg ? msg : "", NULL);
    h->since_mono = sctime_mono_ms();
  }
  h->failing = true;
  snprintf(h->why, sizeof(h->why), "store writes fail (%s): no destructive "
           "call is made until one works", msg && *msg ? msg : "error");
}

const char *act_health_failing(const act_health *h)
{
  return h && h->failing ? h->why : NULL;
}

/* ------------------------------------------------------------------ */
/* sessions: status.pendingAction */

static void on_intent_written(act_run *run, size_t si, sc_err err,
                              const char *msg, void *ud)
{
  act_call *c = ud;
  act_then_fn then = c->then;
  (void)si; /* act_health: noted by the write (act/status.c) */
  if(err == SC_ERR_CONFLICT) {
    /* rule 3's store side: what the plan read is no longer so */
    act_skip(c, c->get_status, "the session changed since the plan (the "
             "intent's compare-and-set lost): no call, looked at again",
             "session changed since the plan");
    return;
  }
  if(err) {
    char why[SC_ERRBUF_SIZE + 64];
    metrics_add(run->env->m, "session_controller_intent_write_failures_total",
                NULL, 1);
    snprintf(why, sizeof(why), "intent not written, no call: %s",
             msg ? msg : "");
    act_log(run, c->a, LOG_WARN, "intent not written: no call to Cube", msg);
    act_fail(c, 0, why, -1);
    return;
  }
  c->intent = true;
  c->intent_mono = sctime_mono_ms();
  then(c);
}

static void intent_session(act_call *c, act_then_fn then)
{
  act_run *run = c->run;
  const session *s = run->p->sessions[c->si].s;
  session_status st;
  sc_errbuf eb;
  sc_err err;
  eb.msg[0] = '\0';
  err = session_status_copy(&st, act_run_status(run, c->si));
  if(!err && (err = plan_status_intent(s, c->a, run->env->identity, &st)))
    session_status_clear(&st);
  if(err) {
    act_status_broken(run, c->si);
    act_fail(c, 0, "intent not written (out of memory): no call", -1);
    return;
  }
  c->then = then;
  err = act_status_write_early(run, c->si, &st, on_intent_written, c, &eb);
  if(err)
    on_intent_written(run, c->si, err, eb.msg, c);
}

/* ------------------------------------------------------------------ */
/* orphans: the audit trail */

static void intent_orphan(act_call *c, act_then_fn then)
{
  const act_env *env = c->run->env;
  const plan_action *a = c->a;
  const char *failing = act_health_failing(env->health);
  audit_entry e;
  if(failing) {
    act_skip(c, c->get_status, failing, "withheld: the store takes no "
             "writes, so no deletion is made");
    return;
  }
  memset(&e, 0, sizeof(e));
  e.replica = env->replica;
  e.sandbox_id = a->sandbox_id;
  e.action = plan_action_type_name(a->type);
  e.kind = plan_delete_kind_name(a->del_kind);
  e.reason = a->reason;
  e.observed_state = c->observed_state[0] ? c->observed_state : NULL;
  e.tenant = c->tenant_seen[0] ? c->tenant_seen : NULL;
  e.cube_now = a->cube_now;
  e.end_at = a->end_at;
  e.http_status = c->get_status;
  e.outcome = "intent";
  if(env->au && audit_record(env->au, &e)) {
    act_fail(c, 0, "the orphan's intent could not be written to the audit "
             "log: no call", -1);
    return;
  }
  act_log(c->run, a, LOG_INFO, "orphan delete intended", NULL);
  c->intent = true;
  then(c);
}

void rule11_intent_written(act_call *c, act_then_fn then)
{
  if(c->run->env->dry_run) {
    then(c);
    return;
  }
  if(c->si == (size_t)-1)
    intent_orphan(c, then);
  else
    intent_session(c, then);
}
