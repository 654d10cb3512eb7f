/*
 * exec.c - the executor: one run of a plan's actions through Cube (see
 * run.h). Every action leaves by act_end(), the one exit, which audits
 * the destructive ones (rule 10) whatever their outcome.
 *
 * Order: the links the plan adopted are written first (act/status.c),
 * then every action starts (ps->pending held while they start, so an
 * answer that comes at once cannot end the run early); a session whose
 * actions have all ended gets its status written once (rule 7).
 */
#include "controller/act/call.h"
#include "controller/observe/observe.h"
#include "controller/act/status.h"
#include "lib/hmap.h"
#include "lib/scstr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* the run's session index */

static uint64_t ptr_hash(const void *p)
{
  return sc_hash_fin(sc_hash_word(SC_HASH_INIT, (uint64_t)(uintptr_t)p));
}

static bool sess_eq(const void *v, const void *key, void *ud)
{
  const plan *p = ud;
  return p->sessions[SC_HMAP_IDX_OF(v)].s == key;
}

/* Built when the plan has actions: n puts, then one probe per action
 * (the scan it replaces cost n per action: 6-8 s at 100k x 15k). */
static sc_err index_build(act_run *run)
{
  size_t i;
  sc_err err;
  if(!(run->index = sc_hmap_new(run->p->n_sessions)))
    return SC_ERR_NOMEM;
  for(i = 0; i < run->p->n_sessions; i++) {
    err = sc_hmap_put(run->index, ptr_hash(run->p->sessions[i].s),
                      SC_HMAP_IDX(i));
    if(err)
      return err;
  }
  return SC_OK;
}

size_t act_run_find(const act_run *run, const session *s)
{
  void *v;
  if(!s || !run->index)
    return (size_t)-1;
  v = sc_hmap_get(run->index, ptr_hash(s), sess_eq, s, run->p);
  return v ? SC_HMAP_IDX_OF(v) : (size_t)-1;
}

const session_status *act_run_status(const act_run *run, size_t si)
{
  return run->sess[si].own ? &run->sess[si].st : &run->p->sessions[si].status;
}

sc_err act_run_init(act_run *run, const act_env *env, plan *p,
                    sc_time cube_now)
{
  size_t i;
  memset(run, 0, sizeof(*run));
  run->env = env;
  run->p = p;
  run->cube_now = cube_now;
  run->start_mono = sctime_mono_ms();
  run->sess = calloc(p->n_sessions ? p->n_sessions : 1, sizeof(*run->sess));
  if(!run->sess)
    return SC_ERR_NOMEM;
  for(i = 0; i < p->n_sessions; i++) {
    run->sess[i].wants_write = p->sessions[i].status_changed;
    run->sess[i].pending = 1; /* held until every action has started */
    run->sess[i].retry_after_ms = 0;
  }
  if(p->n_actions && index_build(run))
    return SC_ERR_NOMEM;
  return SC_OK;
}

void act_run_clear(act_run *run)
{
  size_t i;
  if(!run)
    return;
  for(i = 0; run->sess && run->p && i < run->p->n_sessions; i++) {
    session_status_clear(&run->sess[i].st);
    session_status_clear(&run->sess[i].stored);
    free(run->sess[i].rv);
    free(run->sess[i].created);
  }
  free(run->sess);
  sc_hmap_free(run->index);
  run->sess = NULL;
  run->index = NULL;
}

void act_run_release(act_run *run)
{
  if(--run->pending == 0)
    run->finished(run);
}

/* ------------------------------------------------------------------ */
/* the one exit */

static void count_action(const act_env *env, const plan_action *a,
                         const char *result)
{
  char l[128];
  snprintf(l, sizeof(l), "action=\"%s\",result=\"%s\"",
           a->type == PLAN_DELETE ? plan_delete_kind_name(a->del_kind)
                                  : plan_action_type_name(a->type),
           result);
  metrics_add(env->m, "session_controller_actions_total", l, 1);
  if(a->type == PLAN_DELETE && !strcmp(result, "ok")) {
    if(a->del_kind == PLAN_DEL_RECLAIM)
      act_ledger_note(env->reclaims_done, a->cube_now);
    if(a->del_kind == PLAN_DEL_ORPHAN) {
      act_ledger_note(env->orphans_done, a->cube_now);
      metrics_add(env->m, "session_controller_orphans_reclaimed_total", NULL,
                  1);
    }
    else if(a->del_kind == PLAN_DEL_DUPLICATE)
      metrics_add(env->m, "session_controller_duplicates_deleted_total",
                  NULL, 1);
  }
}

void act_log(const act_run *run, const plan_action *a, log_level lvl,
             const char *msg, const char *detail)
{
  char key[300] = "";
  if(a->ns && a->name)
    snprintf(key, sizeof(key), "%s/%s", a->ns, a->name);
  log_kv(run->env->lg, lvl, msg, "action", plan_action_type_name(a->type),
         "session", key[0] ? key : "-", "sandbox",
         a->sandbox_id ? a->sandbox_id : "-", "reason", a->reason, "detail",
         detail ? detail : "", NULL);
}

static const char *audit_outcome(act_result r)
{
  switch(r) {
  case ACT_DONE:
    return "done";
  case ACT_GONE:
    return "already-gone";
  case ACT_SKIPPED:
    return "skipped";
  case ACT_DRY_RUN:
    return "dry-run";
  case ACT_FAILED:
  case ACT_NOT_STARTED:
    break;
  }
  return "failed";
}

/* rule 10: one line per delete and pause attempt, whatever came of it */
static void rule10_audit_action(const act_call *c, const act_outcome *o)
{
  const plan_action *a = c->a;
  char key[300] = "";
  audit_entry e;
  if(a->type != PLAN_DELETE && a->type != PLAN_PAUSE)
    return;
  if(a->ns && a->name)
    snprintf(key, sizeof(key), "%s/%s", a->ns, a->name);
  memset(&e, 0, sizeof(e));
  e.replica = c->run->env->replica;
  e.session = a->ns ? key : NULL;
  e.sandbox_id = a->sandbox_id;
  e.action = plan_action_type_name(a->type);
  e.kind = a->type != PLAN_DELETE ? NULL
           : a->capacity ? "capacity" : plan_delete_kind_name(a->del_kind);
  e.budget = a->capacity;
  e.reason = a->reason;
  e.observed_state = c->observed_state[0] ? c->observed_state : NULL;
  e.tenant = c->tenant_seen[0] ? c->tenant_seen : NULL;
  e.cube_now = a->cube_now;
  e.end_at = a->end_at;
  e.http_status = o->http_status;
  e.outcome = audit_outcome(o->res);
  e.message = o->audit_msg;
  audit_record(c->run->env->au, &e);
}

/* a success folded into the session's status (st carries the effects of
 * its earlier actions); a copy that fails makes the session's status
 * unknown: nothing is written for it (act_status_own) */
static void fold(act_run *run, size_t si, const plan_action *a,
                 const act_outcome *o)
{
  act_sess *sa = &run->sess[si];
  if(act_status_own(run, si))
    return;
  if(plan_status_after(run->p->sessions[si].s, a, o->new_id, &sa->st) ||
     (a->type == PLAN_CREATE && plan_status_set_domain(&sa->st, o->domain)))
    act_status_broken(run, si); /* the effect is unknown: write nothing */
  else
    sa->wants_write = true;
  if(a->type == PLAN_CREATE && o->new_id && !sa->broken &&
     sa->st.end_at && a->timeout_s > 0) {
    /* Cube's endAt is the create's arrival plus the timeout: the plan's
     * Cube clock is older by the create's wait for its turn (seconds, in
     * a burst of thousands under --cube-qps), so add the time since the
     * run began; the next list confirms it to within PLAN_END_AT_SLACK_MS
     * and writes nothing */
    int64_t waited = sctime_mono_ms() - run->start_mono;
    sa->st.end_at = a->cube_now + (waited > 0 ? waited : 0) +
                    a->timeout_s * 1000;
  }
  if(a->type == PLAN_CREATE && o->new_id && run->env->plan->link_key &&
     !sa->broken) {
    /* the link proof with the link: this create tagged the sandbox ours.
     * Left to the next pass that lists it tagged, a pause that drops the
     * tags first (Cube #1843) would leave the link unprovable for good;
     * with sharding only one replica makes that pass. */
    char proof[PLAN_PROOF_LEN + 1];
    plan_link_proof(run->env->plan->link_key,
                    run->p->sessions[si].s->meta.uid, o->new_id, proof);
    free(sa->st.sandbox_proof);
    if(!(sa->st.sandbox_proof = strdup(proof)))
      act_status_broken(run, si);
  }
}

void act_end(act_call *c, const act_outcome *o)
{
  act_run *run = c->run;
  const plan_action *a = c->a;
  size_t si = c->si;
  bool ok = o->res == ACT_DONE || o->res == ACT_GONE;
  bool failed = !ok && o->res != ACT_DRY_RUN;
  rule10_audit_action(c, o);
  if(o->res == ACT_DONE && a->capacity) /* not another replica's, found gone */
    metrics_add(run->env->m, "session_controller_capacity_reclaims_total",
                NULL, 1);
  if(o->res == ACT_DRY_RUN)
    count_action(run->env, a, "dry-run");
  else if(o->res == ACT_NOT_STARTED)
    count_action(run->env, a, o->count_as ? o->count_as : "error");
  else {
    count_action(run->env, a, ok ? "ok" : "error");
    /* a delete the confirming GET withheld: it saw the sandbox (stage 0) */
    recorder_note_action(run->env->rec, run->env->lg, a, ok,
                         !ok && a->type == PLAN_DELETE && c->stage == 0 &&
                           c->observed_state[0], o->new_id, o->msg);
    if(ok)
      act_log(run, a, LOG_INFO, "action done", o->new_id);
    else
      act_log(run, a, LOG_WARN, "action failed", o->msg);
  }
  if(si != (size_t)-1) {
    act_sess *sa = &run->sess[si];
    if(ok && a->type != PLAN_CONFIRM)
      fold(run, si, a, o);
    if(o->res == ACT_SKIPPED && c->intent && !act_status_own(run, si)) {
      /* the last look withheld the call: the facts void the intent */
      plan_status_intent_cancel(&sa->st, a);
      sa->wants_write = true;
    }
    if(failed || (ok && a->type == PLAN_CONFIRM)) {
      sa->failed = true;
      if(o->retry_after_ms > sa->retry_after_ms)
        sa->retry_after_ms = o->retry_after_ms;
    }
    if(--sa->pending == 0)
      act_status_session_end(run, si);
  }
  free(c);
  act_run_release(run);
}

void act_fail(act_call *c, int http_status, const char *msg,
              int64_t retry_after_ms)
{
  act_outcome o = {ACT_FAILED, http_status, msg, msg, NULL, retry_after_ms,
                   NULL, NULL};
  act_end(c, &o);
}

void act_skip(act_call *c, int http_status, const char *audit_msg,
              const char *msg)
{
  act_outcome o = {ACT_SKIPPED, http_status, msg, audit_msg, NULL, -1, NULL,
                   NULL};
  act_end(c, &o);
}

void act_not_started(act_call *c, const char *count_as,
                     int64_t retry_after_ms)
{
  static const char why[] = "the Cube client refused the call";
  act_outcome o = {ACT_NOT_STARTED, 0, why, why, NULL, retry_after_ms,
                   count_as, NULL};
  act_end(c, &o);
}

/* ------------------------------------------------------------------ */
/* answers */

/* The GET before a set-timeout: Cube moves the endAt of a paused sandbox
 * when its timeout changes (endAt = last activity + timeout), and endAt is
 * the reclaim clock of a paused sandbox. A plan may be seconds old when
 * its set-timeout runs, and the sandbox may have idle-paused meanwhile:
 * the chaos suite saw reclaims measured from an endAt pulled back by a
 * shorter timeout set on an already paused sandbox. So the timeout is set
 * only on a sandbox this GET saw running, right after it. */
static void on_timeout_confirm(const cube_result *res, void *ud)
{
  act_call *c = ud;
  const act_cube *cube = c->run->env->cube;
  const plan_action *a = c->a;
  observe_count_call(c->run->env->m, CUBE_OP_GET, res, c->t0);
  if(res->err) {
    act_fail(c, (int)res->http_status, res->message, res->retry_after_ms);
    return;
  }
  if(res->sandbox.state != CUBE_SB_RUNNING) {
    /* not a failure of Cube's: look again when it runs */
    act_fail(c, (int)res->http_status,
             "the sandbox is no longer running: its timeout is set when "
             "it runs again (a paused sandbox's endAt is its reclaim "
             "clock)", -1);
    return;
  }
  c->op = CUBE_OP_SET_TIMEOUT;
  c->t0 = sctime_mono_ms();
  if(cube->set_timeout_now(cube->cl, a->sandbox_id, a->timeout_s,
                           act_on_mutation, c))
    act_fail(c, 0, "client refused the call", -1);
}

/* a pause answered "already paused": the GET decides */
static void rule8_on_already_paused_get(const cube_result *res, void *ud)
{
  act_call *c = ud;
  observe_count_call(c->run->env->m, CUBE_OP_GET, res, c->t0);
  if(!res->err && (res->sandbox.state == CUBE_SB_PAUSED ||
                   res->sandbox.state == CUBE_SB_PAUSING)) {
    act_outcome o = {ACT_DONE, (int)res->http_status, NULL,
                     "already paused (confirmed by GET)", NULL, -1, NULL, NULL};
    snprintf(c->observed_state, sizeof(c->observed_state), "%s",
             cube_sb_state_name(res->sandbox.state));
    act_end(c, &o);
    return;
  }
  act_fail(c, (int)res->http_status,
           res->err ? res->message : "pause refused and not paused",
           res->retry_after_ms);
}

void act_on_mutation(const cube_result *res, void *ud)
{
  act_call *c = ud;
  const act_cube *cube = c->run->env->cube;
  const plan_action *a = c->a;
  act_outcome o = {res->err ? ACT_FAILED : ACT_DONE, (int)res->http_status,
                   res->message, NULL, NULL, res->retry_after_ms, NULL, NULL};
  observe_count_call(c->run->env->m, c->op, res, c->t0);
  switch(a->type) {
  case PLAN_CREATE:
    act_create_answered(c, res);
    return;
  case PLAN_PAUSE:
    if(!res->err && res->already) {
      /* 409 / Cube's 500 "already paused": look before concluding */
      c->t0 = sctime_mono_ms();
      if(cube->get(cube->cl, a->sandbox_id, rule8_on_already_paused_get, c))
        act_fail(c, (int)res->http_status,
                 "already paused, but the Cube client refused the "
                 "confirming GET", -1);
      return;
    }
    o.audit_msg = res->err ? res->message : NULL;
    break;
  case PLAN_DELETE:
    o.audit_msg = res->err ? res->message
                           : res->already_gone ? "already gone" : NULL;
    break;
  case PLAN_SET_TIMEOUT:
  case PLAN_RESUME:
  case PLAN_KEEPALIVE:
  case PLAN_CONFIRM:
    break;
  }
  act_end(c, &o);
}

/* ------------------------------------------------------------------ */
/* starting */

static void pause_now(act_call *c)
{
  const act_cube *cube = c->run->env->cube;
  c->op = CUBE_OP_PAUSE;
  c->t0 = sctime_mono_ms();
  if(cube->pause(cube->cl, c->a->sandbox_id, act_on_mutation, c))
    act_not_started(c, "error", -1);
}

static void start_action(act_run *run, const plan_action *a)
{
  const act_env *env = run->env;
  const act_cube *cube = env->cube;
  act_call *c = calloc(1, sizeof(*c));
  sc_err err = SC_OK;
  if(!c)
    return;
  c->run = run;
  c->a = a;
  c->si = act_run_find(run, a->s);
  c->t0 = sctime_mono_ms();
  run->pending++;
  if(c->si != (size_t)-1) {
    run->sess[c->si].pending++;
    if(a->type == PLAN_CONFIRM)
      run->sess[c->si].has_confirm = true;
  }
  if(env->dry_run && a->type != PLAN_CONFIRM) {
    act_outcome o = {ACT_DRY_RUN, 0, NULL, NULL, NULL, -1, NULL, NULL};
    act_log(run, a, LOG_INFO, "dry-run: not calling Cube", NULL);
    act_end(c, &o);
    return;
  }
  act_log(run, a, LOG_INFO, "action", NULL);
  switch(a->type) {
  case PLAN_CREATE:
    act_create_start(c); /* the claim first (claim.c) */
    return;
  case PLAN_PAUSE:
    rule11_intent_written(c, pause_now); /* the intent first */
    return;
  case PLAN_RESUME:
  case PLAN_KEEPALIVE:
    c->op = CUBE_OP_CONNECT;
    err = cube->connect(cube->cl, a->sandbox_id, a->timeout_s,
                        act_on_mutation, c);
    break;
  case PLAN_SET_TIMEOUT:
    c->op = CUBE_OP_GET;
    err = cube->get(cube->cl, a->sandbox_id, on_timeout_confirm, c);
    break;
  case PLAN_DELETE:
    c->op = CUBE_OP_GET;
    err = cube->get(cube->cl, a->sandbox_id, act_on_delete_confirm, c);
    break;
  case PLAN_CONFIRM:
    c->op = CUBE_OP_GET;
    err = cube->get(cube->cl, a->sandbox_id, act_on_mutation, c);
    break;
  }
  if(err)
    /* the client refused: a failed action, synchronously safe (the run's
     * pending is held while actions start) */
    act_not_started(c, err == SC_ERR_CONFLICT ? "conflict" : "error", -1);
}

/* The actions other than orphans come first in plan order (action_cmp
 * sorts orphans last): how many. */
static size_t n_session_actions(const plan *p)
{
  size_t n = p->n_actions;
  while(n && p->actions[n - 1].del_kind == PLAN_DEL_ORPHAN)
    n--;
  return n;
}

static bool same_session(const plan_action *a, const plan_action *b)
{
  return a->s == b->s;
}

/* The first action of the session at run->rotate among the sessions'
 * actions (a session's actions are contiguous in plan order, and stay
 * in their order: the first destructive one of a session is the one that
 * goes, see below) */
static size_t rotation_start(const plan *p, uint64_t rotate)
{
  size_t n = n_session_actions(p), i;
  if(!n || !rotate)
    return 0;
  i = (size_t)(rotate % n);
  while(i > 0 && same_session(&p->actions[i], &p->actions[i - 1]))
    i--;
  return i;
}

/* the k-th action to start: the sessions' from first round to it, then
 * the orphans in plan order */
static size_t action_at(const plan *p, size_t first, size_t k)
{
  size_t n = n_session_actions(p);
  if(k >= n)
    return k;
  return first + k < n ? first + k : first + k - n;
}

static void start_actions(act_run *run)
{
  size_t i, k, first;
  if(*run->env->stopping) {
    run->finished(run); /* no new work after SIGTERM */
    return;
  }
  run->pending = 1; /* held while starting */
  first = rotation_start(run->p, run->rotate);
  for(k = 0; k < run->p->n_actions; k++) {
    const plan_action *a;
    size_t si;
    i = action_at(run->p, first, k);
    a = &run->p->actions[i];
    si = act_run_find(run, a->s);
    if(si != (size_t)-1 && run->sess[si].held)
      continue; /* no finalizer yet: nothing may be made for it */
    if(si == (size_t)-1 && run->serves_orphan &&
       !run->serves_orphan(a, run->serves_ud))
      continue; /* another replica's share (--share-work) */
    if(si != (size_t)-1 && plan_intent_kind(a)) {
      /* one intent per session and run (status.pendingAction holds
       * one): a second pause or delete waits for the next pass, which
       * this one's status write brings */
      if(run->sess[si].destructive)
        continue;
      run->sess[si].destructive = true;
    }
    start_action(run, a);
  }
  for(i = 0; i < run->p->n_sessions; i++)
    if(--run->sess[i].pending == 0)
      act_status_session_end(run, i);
  act_run_release(run);
}

static void on_link_written(act_run *run, size_t si, sc_err err,
                            const char *msg, void *ud)
{
  (void)ud;
  if(err)
    log_kv(run->env->lg, LOG_DEBUG, "early link write failed", "session",
           run->p->sessions[si].s->meta.name, "error", msg, NULL);
  if(err == SC_ERR_CONFLICT) {
    /* another writer came first (most often the replica whose create
     * made the sandbox, writing its own link): this plan of the session
     * is stale, so none of its actions starts (a set-timeout on a sandbox
     * its creator has just set cost two Cube calls per replica); the
     * session is looked at again (a conflict) */
    run->sess[si].held = run->sess[si].broken = true;
    run->sess[si].conflict = true;
  }
  if(--run->early == 0)
    start_actions(run);
}

/* Link first: a sandbox this plan adopts (its tags matched, no status
 * named it: its creator died before the status write) is recorded before
 * any action, which may wait seconds for the token bucket. Cube can drop
 * a paused sandbox's tags (#1843): a link written late may be too late,
 * and an untagged, unlinked sandbox is never touched again. The actions
 * start once every such write is answered. */
static void start_links(act_run *run)
{
  size_t i;
  run->early = 1; /* held while starting */
  for(i = 0; i < run->p->n_sessions; i++) {
    const plan_session *pl = &run->p->sessions[i];
    session_status st;
    sc_errbuf eb;
    if(run->sess[i].held)
      continue;
    if(!pl->status_changed || !pl->status.sandbox_id ||
       sc_str_eq0(pl->status.sandbox_id, pl->s->status.sandbox_id))
      continue;
    if(session_status_copy(&st, act_run_status(run, i))) {
      act_status_broken(run, i); /* the final write would be as unsure */
      continue;
    }
    eb.msg[0] = '\0';
    if(!act_status_write_early(run, i, &st, on_link_written, NULL, &eb))
      run->early++;
    else
      log_kv(run->env->lg, LOG_DEBUG, "early link write failed", "session",
             pl->s->meta.name, "error", eb.msg, NULL);
  }
  if(--run->early == 0)
    start_actions(run);
}

/* The finalizer before everything else. The store's list no longer adds
 * it (a store that decides, and one object's failed PATCH failed the whole
 * list): the run adds it to each live session that lacks it, one guarded
 * write per object, before any link, claim or create, so that a session
 * deleted after this pass stays a tombstone until its sandbox is gone. A
 * session whose write fails (a conflict, a refusal) is held: no action
 * and no status write for it this pass, its turn ends as an error (the
 * queue backs it off and the next look reads it again); every other
 * session goes on. The new resourceVersion is where the session's later
 * writes start from (act_sess.rv, as after an early write). */
typedef struct fin_write {
  act_run *run;
  size_t si;
} fin_write;

static void fin_done(act_run *run)
{
  if(--run->early == 0)
    start_links(run);
}

static void on_finalized(store_reply *rep, void *ud)
{
  fin_write *w = ud;
  act_run *run = w->run;
  act_sess *sa = &run->sess[w->si];
  const session *s = run->p->sessions[w->si].s;
  if(!rep->err && rep->new_version) {
    free(sa->rv);
    sa->rv = rep->new_version;
    rep->new_version = NULL;
    session_status_clear(&sa->stored);
    if(session_status_copy(&sa->stored, &s->status))
      act_status_broken(run, w->si);
  }
  else if(rep->err) {
    log_kv(run->env->lg, rep->err == SC_ERR_CONFLICT ? LOG_INFO : LOG_WARN,
           "finalizer not added: no action for the session this pass",
           "session", s->meta.name, "namespace", s->meta.namespace_,
           "error", rep->message, NULL);
    metrics_add(run->env->m, "session_controller_finalizer_failures_total",
                NULL, 1);
    sa->held = sa->broken = sa->failed = true;
  }
  free(w);
  fin_done(run);
}

void act_run_start(act_run *run)
{
  size_t i;
  run->early = 1; /* held while starting */
  for(i = 0; i < run->p->n_sessions; i++) {
    const session *s = run->p->sessions[i].s;
    fin_write *w;
    sc_errbuf eb;
    if(run->sess[i].elsewhere || !store_needs_finalizer(run->env->st, s))
      continue;
    w = calloc(1, sizeof(*w));
    snprintf(eb.msg, sizeof(eb.msg), "out of memory");
    if(w) {
      eb.msg[0] = '\0';
      w->run = run;
      w->si = i;
      if(!store_ensure_finalizer_async(run->env->st, s, on_finalized, w,
                                       &eb)) {
        run->early++;
        continue;
      }
      free(w);
    }
    log_kv(run->env->lg, LOG_WARN,
           "finalizer not added: no action for the session this pass",
           "session", s->meta.name, "namespace", s->meta.namespace_, "error",
           eb.msg, NULL);
    metrics_add(run->env->m, "session_controller_finalizer_failures_total",
                NULL, 1);
    run->sess[i].held = run->sess[i].broken = run->sess[i].failed = true;
  }
  fin_done(run);
}
