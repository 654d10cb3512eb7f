/*
 * rules.c - the safety rules of the reconcile pass (docs/planner.md, "The
 * safety rules and where they are kept"), each kept by a function named
 * after it. The planner
 * keeps its half here; the executor's half (the GET before a delete, the
 * idempotent answers, the audit line) lives in controller/act/.
 *
 * rule, in our words                kept by
 * --------------------------------  ----------------------------------------
 *  1 decisions use Cube's clock and  rule_no_local_clock, hack/checksrc.sh:
 *    store fields, never a local     no clock and no I/O under
 *    clock                           controller/plan/; the planner reads
 *                                    in->cube_now only
 *  2 a sandbox missing from a list   rule2_gone_confirmed() (a link not
 *    is not gone until a GET says    listed is confirmed by GET first),
 *    so; a short list concludes no   rule2_orphan_may_be_concluded()
 *    orphan
 *  3 a delete re-reads the sandbox   rule3_delete_expectations() (what the
 *    first                           GET must find); the GET itself:
 *                                    act/delete.c
 *                                    rule3_confirmed_before_delete()
 *  4 only the link (status.sandbox-  rule4_sandbox_is_ours(),
 *    ID) or our managed-by tag       rule4_judge_link(), rule4_link_proven()
 *    gives grounds to touch one      (an untagged link needs its proof)
 *  5 another tenant's sandbox is     rule5_tenants_never_cross(),
 *    never acted on for a session,   rule5_tenant_is_namespace(),
 *    nor its workspace, volumes or   rule5_tenant_policy_bounds() (the
 *    egress past the operator's      operator's policy, api/policy.h)
 *    policy
 *  6 duplicates: keep the linked     rule6_pick_duplicate_winner(): the one
 *    one, else the oldest startedAt, tie-break order; the others are
 *    then the lowest ID              deleted once the winner is linked
 *  7 store writes compare-and-set    act/status.c (every write carries
 *                                    the version read), controller/store/
 *  8 a repeated answer (gone,        cube/answers.c on_pause(), on_delete();
 *    already paused) is success      act/exec.c rule8_on_already_paused_get()
 *  9 deletions justified by absence  rule9_orphan_guard()
 *    alone are capped
 * 10 every destructive act audited   act/exec.c act_end() (the one exit)
 *                                    -> rule10_audit_action(), act/audit.c
 * 11 the intent is stored before     rule11_create_claim_held() (another's
 *    the act                         fresh create claim is waited for),
 *                                    rule11_resume_intent() (a recorded
 *                                    pendingAction is carried on from the
 *                                    facts, never undone into a create;
 *                                    one the spec no longer asks for is
 *                                    void once rule11_reclaim_void():
 *                                    no DELETE of it can be in flight);
 *                                    act/intent.c rule11_intent_written()
 *                                    writes it before every pause and
 *                                    delete, act/claim.c before a create
 * 12 a sandbox belongs to one        rule12_one_object()
 *    object (its uid)
 * 13 brakes only delay, and say so   rule9_orphan_guard() and
 *                                    rule13_reclaim_brake() withhold and
 *                                    report over a window of Cube's
 *                                    clock, never add an action; the store
 *                                    identity: loop/pump.c
 *                                    rule13_store_still_ours()
 * 14 capacity reclaims the longest-  capacity.c rule14_paused_budget(): over
 *    paused first, as reclaims       --max-paused(-per-tenant), the longest-
 *                                    paused by Cube's clock (endAt, tenant,
 *                                    uid, ID) of live sessions, never a
 *                                    running one nor reclaimAfter 0; each
 *                                    a PLAN_DEL_RECLAIM (rules 3, 11, 13
 *                                    hold) with plan_action.capacity
 * 15 the running quota only delays   capacity.c rule15_running_quota():
 *    creates, in creation order      creates over --max-running-per-tenant
 *                                    (running, resumes and fresh claims
 *                                    counted) wait Pending/QuotaExceeded
 *                                    in creation order; nothing is paused;
 *                                    decided only over the whole fleet
 * 16 evidence acts, absence waits    rule16_superseded(): a sandbox of an
 *                                    earlier object of a name applied
 *                                    again is deleted in the pass that
 *                                    sees it, running or paused, without
 *                                    the orphan grace (decide_orphans);
 *                                    the guard still counts it
 *
 * Tests are named after the rules (test/unit/test_plan*.c: rule2_...,
 * rule5_..., rule12_...).
 */
#include "controller/plan/plan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/duration.h"
#include "api/policy.h"
#include "lib/scstr.h"

/* ---------- rule 2: absence is not evidence ---------- */

static int str_cmp(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Did a GET this pass say 404 for id? Only then is a linked sandbox that
 * the lists miss taken as gone; otherwise the planner asks for the GET
 * (PLAN_CONFIRM) and concludes nothing. pl->gone is sorted. */
bool rule2_gone_confirmed(const planner *pl, const char *id)
{
  return pl->n_gone &&
         bsearch(&id, pl->gone, pl->n_gone, sizeof(*pl->gone), str_cmp);
}

/* May an orphan be concluded from its absence in the store? Not from a
 * store read that is not whole (a single-session pass), and not when the
 * store could not decode an object of its tenant (or it has no tenant
 * tag): that object may be its session. A short Cube list does not stop
 * it: the orphan was listed, so it exists; what its absence from the
 * list would say is not used. */
bool rule2_orphan_may_be_concluded(const planner *pl, const sb_rec *sb)
{
  const plan_input *in = pl->in;
  size_t i;
  if(!in->list_complete)
    return false;
  if(!in->n_hold_tenants)
    return true;
  if(!sb->tenant)
    return false;
  for(i = 0; i < in->n_hold_tenants; i++)
    if(sc_str_eq0(in->hold_tenants[i], sb->tenant))
      return false;
  return true;
}

/* ---------- rule 16: evidence acts, absence waits ---------- */

/* The store refuses a name while its tombstone is held (store_apply), and
 * a uid is never given twice; so when the (tenant, sessionID) of a
 * sandbox tagged with uid U is held by an object of another uid and no
 * object of this store has U, U's object was deleted and the name
 * applied again: the store says so, it is not inferred from absence. The
 * store read must be whole, as for any orphan (rule 2): U's object may be
 * one this pass could not read. A sandbox without a uid tag (made before
 * rule 12, or behind our back) proves nothing and stays an orphan. */
const sess_rec *rule16_superseded(planner *pl, const sb_rec *sb, sc_err *err)
{
  const sess_rec *holder;
  *err = SC_OK;
  if(!sb->uid || !*sb->uid || !sb->tenant || !sb->sid)
    return NULL;
  holder = join_pair_owner(pl, sb->tenant, sb->sid);
  if(!holder || !holder->s->meta.uid || !*holder->s->meta.uid ||
     !strcmp(holder->s->meta.uid, sb->uid))
    return NULL;
  if(!rule2_orphan_may_be_concluded(pl, sb))
    return NULL;
  if(join_session_by_uid(pl, sb->uid, err) || *err)
    return NULL;
  return holder;
}

/* ---------- rule 3: confirm before delete (the planner's half) ---------- */

/* What the executor's GET must still find before this delete: the tenant
 * tag seen now; still paused for a reclaim or an orphan; for an orphan
 * our managed-by as well. */
sc_err rule3_delete_expectations(planner *pl, plan_action *a,
                                 const sb_rec *sb)
{
  if(sb->tenant && !(a->expect_tenant = plan_strdup(pl, sb->tenant)))
    return SC_ERR_NOMEM;
  a->expect_paused = a->del_kind == PLAN_DEL_RECLAIM ||
                     a->del_kind == PLAN_DEL_ORPHAN;
  a->expect_managed_by = a->del_kind == PLAN_DEL_ORPHAN;
  return SC_OK;
}

/* ---------- rule 4: ownership recorded twice ---------- */

bool rule4_sandbox_is_ours(const planner *pl, const char *managed_by)
{
  return managed_by && plan_config_owns(pl->cfg, managed_by);
}

/* no lea.* tag at all: Cube dropped them on pause, or it was never ours */
bool rule4_untagged(const sb_rec *sb)
{
  return !sb->tagged;
}

/* A link to an untagged sandbox is ours only with its proof (plan.h,
 * "link proofs"): a status writer can set status.sandboxID to anything,
 * but cannot make the proof. Without a key, nothing is asked. */
bool rule4_link_proven(const planner *pl, const sess_rec *r)
{
  char want_proof[PLAN_PROOF_LEN + 1];
  if(!pl->cfg->link_key)
    return true;
  if(!r->s->status.sandbox_proof)
    return false;
  plan_link_proof(pl->cfg->link_key, r->s->meta.uid, r->link, want_proof);
  return !strcmp(want_proof, r->s->status.sandbox_proof);
}

/* What a session's link to the observed sandbox sb is worth: its tags,
 * when it has any, must agree with the session (rules 5 and 12); without
 * tags, the proof decides. */
enum link_state rule4_judge_link(const planner *pl, const sess_rec *r,
                                 const sb_rec *sb)
{
  if(rule4_untagged(sb))
    return rule4_link_proven(pl, r) ? LS_OWNED : LS_CONFLICT_SB;
  if(!rule5_tenants_never_cross(r, sb))
    return LS_CONFLICT_TENANT;
  if((sb->sid && r->sid && strcmp(sb->sid, r->sid)) ||
     (sb->managed_by && !sb->ours) || !rule12_one_object(r->s, sb, true))
    return LS_CONFLICT_SB;
  return LS_OWNED;
}

/* ---------- rule 5: tenants never cross ---------- */

/* true unless sb's tenant tag names another tenant than r's */
bool rule5_tenants_never_cross(const sess_rec *r, const sb_rec *sb)
{
  return !sb->tenant || !strcmp(sb->tenant, r->tenant);
}

/* With --tenant-binding namespace (the default), a session acts only for
 * the tenant of its namespace: one whose spec.tenantID is another joins
 * no sandbox by tags and creates none. */
bool rule5_tenant_is_namespace(const planner *pl, const session *s)
{
  const char *tenant = session_eff_tenant_id(s);
  return !pl->cfg->bind_tenant_to_namespace || !tenant ||
         !strcmp(tenant, session_eff_namespace(s));
}

/* Tenants write their own specs and never hold the Cube key: what a spec
 * may reach (host workspace, volumes, egress, templates) is bounded by the
 * operator's policy, and a spec that asks for more gets nothing. */
bool rule5_tenant_policy_bounds(const planner *pl, const session *s,
                                char *buf, size_t len)
{
  return policy_denied(pl->cfg->policy, s, buf, len);
}

/* ---------- rule 6: duplicates resolve deterministically ---------- */

/* The one tie-break order among a session's sandboxes: the oldest
 * startedAt (an unknown startedAt, 0, counts as youngest), then the
 * lowest ID. IDs are unique after the join, so this is a total order. */
static bool rule6_before(const sb_rec *a, const sb_rec *b)
{
  sc_time as = a->b->started_at, bs = b->b->started_at;
  if(as != bs)
    return as && (!bs || as < bs);
  return strcmp(a->id, b->id) < 0;
}

/* The sandbox a session keeps: the linked one when it holds its link,
 * else the first by rule6_before(); NULL when it has none. The others
 * are deleted only once the store links the winner (decide.c). */
const sb_rec *rule6_pick_duplicate_winner(const sess_rec *r)
{
  const sb_rec *best = NULL, *sb;
  if(r->ls == LS_OWNED)
    return r->link_sb;
  for(sb = r->sbs; sb; sb = sb->next_of_owner)
    if(!best || rule6_before(sb, best))
      best = sb;
  return best;
}

/* ---------- rules 9 and 13: the blast-radius guard ---------- */

/* The orphan deletes (the actions from first_orphan on, all of them
 * orphans) are all withheld, unless --force, when either:
 *  - the candidates (ours, joined by nobody, whatever their state or age)
 *    are more than the floor and more than max_delete_fraction of the
 *    managed sandboxes: a store wiped or pointed elsewhere makes every
 *    sandbox a candidate at once, long before any is due, so a fleet that
 *    pauses at scattered times is held whole (the guard of one pass saw
 *    only the few due in it and let a staggered fleet go 5 a pass);
 *  - the deletions of the window (this process's, by Cube's clock) and
 *    the ones due now are more than max(floor, fraction x managed): a
 *    store losing its objects one by one drains no faster than that.
 * The floor (2) lets a small fleet clean a leak or two; a fleet of 10
 * whose store is wiped loses none. The guard only holds back: it drops
 * those actions and says why; it never adds one. */
sc_err rule9_orphan_guard(planner *pl, size_t first_orphan)
{
  plan *p = pl->p;
  const plan_config *cfg = pl->cfg;
  double share = cfg->max_delete_fraction * (double)p->n_managed;
  double budget = share > (double)cfg->max_delete_floor
                    ? share : (double)cfg->max_delete_floor;
  size_t recent = pl->in->recent_orphan_deletes;
  char msg[PLAN_MSG_MAX], win[PLAN_DUR_MAX];
  p->n_orphans = p->n_actions - first_orphan;
  if(cfg->force || !p->n_orphans)
    return SC_OK;
  if(p->n_orphan_candidates > cfg->max_delete_floor &&
     (double)p->n_orphan_candidates > share)
    snprintf(msg, sizeof(msg),
             "guard: %zu of %zu managed sandboxes have no session (more than "
             "%.0f%% and more than %zu): a wiped or mis-pointed store? "
             "withheld %zu orphan deletions; check the store, then --force "
             "deletes them", p->n_orphan_candidates, p->n_managed,
             cfg->max_delete_fraction * 100.0, cfg->max_delete_floor,
             p->n_orphans);
  else if((double)(recent + p->n_orphans) > budget) {
    duration_format(cfg->brake_window_ms, win, sizeof(win));
    snprintf(msg, sizeof(msg),
             "guard: %zu orphans deleted in the last %s (Cube's clock) and "
             "%zu more due: over the budget of %.0f a window (%.0f%% of %zu "
             "managed, at least %zu); withheld; --force deletes them",
             recent, win, p->n_orphans, budget,
             cfg->max_delete_fraction * 100.0, p->n_managed,
             cfg->max_delete_floor);
  }
  else
    return SC_OK;
  if(!(p->guard_message = strdup(msg)))
    return SC_ERR_NOMEM;
  p->guard_tripped = true;
  p->n_actions = first_orphan; /* their strings stay in the arena */
  return SC_OK;
}

/* A reclaim whose intent is already written is carried on, never held:
 * its writer may be in its DELETE (rule 11). */
static bool reclaim_committed(const plan_action *a)
{
  const session_status *st = a->s ? &a->s->status : NULL;
  return st && st->pending_kind && !strcmp(st->pending_kind, "reclaim") &&
         sc_str_eq0(st->pending_sandbox_id, a->sandbox_id);
}

static int reclaim_order(const void *x, const void *y)
{
  const plan_action *a = *(const plan_action *const *)x;
  const plan_action *b = *(const plan_action *const *)y;
  if(a->end_at != b->end_at)
    return a->end_at < b->end_at ? -1 : 1;
  return strcmp(a->sandbox_id, b->sandbox_id);
}

/* Rule 13, the reclaim brake. Reclaims are intent and right by Cube's
 * facts, but a burst far above the usual rate (Cube's clock jumping days
 * ahead makes every paused sandbox due in one pass) is more likely a
 * fault than a policy. Per window of Cube's clock, at most max(floor,
 * fraction x paused sandboxes) reclaims go, this process's recent ones
 * counted; the longest-paused go first (endAt, then ID: every replica
 * picks alike); the others stay due and are planned again on the next
 * look. A steadily fast clock (a simulator at x60) spreads its reclaims
 * as a real one does, since the window is Cube's time too; a jump puts
 * them all in one instant. The brake only delays: it drops actions and
 * says why, never adds one, and decides nothing by a local clock. */
sc_err rule13_reclaim_brake(planner *pl)
{
  plan *p = pl->p;
  const plan_config *cfg = pl->cfg;
  size_t i, k, n = 0, paused = 0, allowed, held;
  const plan_action **due;
  double share;
  char win[PLAN_DUR_MAX], msg[PLAN_MSG_MAX];
  if(cfg->force || cfg->reclaim_brake_fraction <= 0)
    return SC_OK;
  for(i = 0; i < p->n_actions; i++)
    if(p->actions[i].type == PLAN_DELETE &&
       p->actions[i].del_kind == PLAN_DEL_RECLAIM &&
       !reclaim_committed(&p->actions[i]))
      n++;
  if(n <= cfg->reclaim_brake_floor)
    return SC_OK; /* under the floor whatever the window holds */
  for(i = 0; i < pl->n_sbs; i++)
    if(pl->sbs[i].ours && !pl->sbs[i].dup &&
       pl->sbs[i].b->state == CUBE_SB_PAUSED)
      paused++;
  share = cfg->reclaim_brake_fraction * (double)paused;
  allowed = share > (double)cfg->reclaim_brake_floor
              ? (size_t)share : cfg->reclaim_brake_floor;
  allowed = allowed > pl->in->recent_reclaims
              ? allowed - pl->in->recent_reclaims : 0;
  if(n <= allowed)
    return SC_OK;
  if(!(due = malloc(n * sizeof(*due))))
    return SC_ERR_NOMEM;
  for(i = 0, k = 0; i < p->n_actions; i++)
    if(p->actions[i].type == PLAN_DELETE &&
       p->actions[i].del_kind == PLAN_DEL_RECLAIM &&
       !reclaim_committed(&p->actions[i]))
      due[k++] = &p->actions[i];
  qsort(due, n, sizeof(*due), reclaim_order);
  /* the held ones are marked by a NULL reason, then compacted out */
  for(i = allowed; i < n; i++)
    ((plan_action *)due[i])->reason = NULL;
  free(due);
  held = n - allowed;
  for(i = 0, k = 0; i < p->n_actions; i++)
    if(p->actions[i].reason)
      p->actions[k++] = p->actions[i];
  p->n_actions = k;
  duration_format(cfg->brake_window_ms, win, sizeof(win));
  snprintf(msg, sizeof(msg),
           "reclaim brake: %zu reclaims due at once, %zu in the last %s "
           "(Cube's clock); at most %.0f%% of the %zu paused sandboxes (at "
           "least %zu) a window: %zu go, %zu wait (still due; a jump of "
           "Cube's clock?); --force lifts the brake",
           n, pl->in->recent_reclaims, win,
           cfg->reclaim_brake_fraction * 100.0, paused,
           cfg->reclaim_brake_floor, allowed, held);
  if(!(p->brake_message = strdup(msg)))
    return SC_ERR_NOMEM;
  p->n_reclaims_held = held;
  return SC_OK;
}

/* ---------- rule 11: intent before the act (the planner's half) ---------- */

/* Another process claimed this create (status.createIntent) less than
 * the TTL ago by Cube's clock: its sandbox may exist and not be listed
 * yet, so no CREATE. Our own claim means our last attempt failed: go. */
bool rule11_create_claim_held(const planner *pl, const session *s)
{
  const session_status *st = &s->status;
  sc_time now = pl->in->cube_now;
  if(!st->create_intent_at || !now || pl->cfg->create_intent_ttl_ms <= 0)
    return false;
  if(pl->cfg->identity && sc_str_eq0(st->create_intent_by, pl->cfg->identity))
    return false;
  return now - st->create_intent_at < pl->cfg->create_intent_ttl_ms;
}

/* A recorded intent (status.pendingAction: its writer may have died at
 * any step, or still be in its call) is carried on from the facts:
 *  - reclaim: its sandbox paused: the DELETE again (a second DELETE is
 *    harmless, a 404 is success); pausing: wait; running (traffic resumed
 *    it): the intent is void, the session goes on as any; gone: the
 *    outcome, phase Reclaimed, never a new sandbox (a pending connect is
 *    the one thing that makes one, as a wake would). A connect never
 *    cancels a written reclaim: its writer may be between its last GET and
 *    its DELETE, so resuming the sandbox could hand the user one that is
 *    about to die; the connect gets a new sandbox once the reclaim is done.
 *  - pause: paused: done (the controller paused it); otherwise the plan
 *    pauses again while spec.state says Paused.
 *  - ended, tombstone, duplicate: the plan deletes again while the sandbox
 *    is there; once it is gone the intent goes.
 * "Gone": a GET said 404, never a list that misses it.
 * done: the session's decision is made here. */
static bool intent_gone(const planner *pl, const sess_rec *r,
                        const char *id)
{
  /* a GET said 404 (the observation asks for every intent's sandbox the
   * lists missed); a list that misses it is no evidence (rule 2): Cube's
   * lists can be short without a sign, and an injected truncation is */
  if(rule2_gone_confirmed(pl, id))
    return true;
  return r->link && !strcmp(r->link, id) && r->ls == LS_GONE;
}

/* A recorded intent names a sandbox that no list shows and no GET has
 * said is gone: what it says is not known yet (decide_ended waits). */
bool rule11_intent_unresolved(const planner *pl, const sess_rec *r)
{
  const char *id = r->s->status.pending_sandbox_id;
  return r->s->status.pending_kind && id &&
         !join_sandbox_by_id(pl, id) && !intent_gone(pl, r, id);
}

/* A written reclaim the session's spec no longer asks for: why (for the
 * Ready message), or NULL while it still would be reclaimed, or when
 * nothing says otherwise (an unknown endAt is no evidence): spec.state
 * Running, and, for a reclaim by reclaimAfter (not by capacity, which
 * does not wait for it), reclaimAfter 0 or raised past the time the
 * sandbox has been paused. A connect request is not one: the user was
 * idle past reclaimAfter, the reclaim stands, and the connect gets a new
 * sandbox once it is done, in seconds, rather than the old one after
 * the wait below. */
const char *rule11_reclaim_unwanted(const planner *pl, const sess_rec *r,
                                    const sb_rec *sb)
{
  const session *s = r->s;
  int64_t after = session_eff_reclaim_after_ms(s);
  sc_time now = pl->in->cube_now;
  if(s->spec.state == SESSION_STATE_RUNNING)
    return "spec.state is Running";
  if(status_ready_is(&s->status, REASON_RECLAIMING_CAPACITY))
    return NULL; /* rule 14 chose it before its reclaimAfter */
  if(after <= 0)
    return "reclaimAfter is 0: never reclaimed";
  if(sb->b->end_at && now && now - sb->b->end_at < after)
    return "reclaimAfter is longer than the sandbox has been paused";
  return NULL;
}

/* How long this process has seen the session's pendingAction unchanged
 * (plan_input.intent_seen_ms, measured by the loop on its monotonic
 * clock: a duration, not a clock reading). Every DELETE of a written
 * intent is sent within plan_config.reclaim_send_within_ms of the write
 * and ends within Cube's call timeout (act/delete.c), and
 * reclaim_void_after_ms covers both: an intent seen unchanged that long
 * was written that long ago or longer, so no DELETE of it is in flight. A
 * re-recorded intent (another replica carried it on) is a new one. */
static int64_t intent_seen(const planner *pl, const sess_rec *r)
{
  return pl->in->intent_seen_ms ? pl->in->intent_seen_ms[r->idx] : 0;
}

bool rule11_reclaim_void(const planner *pl, const sess_rec *r)
{
  return pl->cfg->reclaim_void_after_ms > 0 &&
         intent_seen(pl, r) >= pl->cfg->reclaim_void_after_ms;
}

int64_t rule11_reclaim_void_in(const planner *pl, const sess_rec *r)
{
  int64_t left = pl->cfg->reclaim_void_after_ms - intent_seen(pl, r);
  return left > 0 ? left : 0;
}

sc_err rule11_resume_intent(planner *pl, const sess_rec *r, want *w,
                            bool *done, sc_time *due)
{
  const session *s = r->s;
  const session_status *st = &s->status;
  const char *id = st->pending_sandbox_id;
  const sb_rec *sb = id ? join_sandbox_by_id(pl, id) : NULL;
  bool reclaim = sc_str_eq0(st->pending_kind, "reclaim");
  const char *unwanted;
  char ta[SCTIME_RFC3339_MAX];
  *done = false;
  if(!st->pending_kind)
    return SC_OK;
  if(!id || (sb && sb->owner != r)) {
    w->clear_pending = true; /* not this session's any more */
    return SC_OK;
  }
  if(!sb) {
    if(!intent_gone(pl, r, id)) {
      *done = reclaim; /* unknown: wait for the facts */
      return SC_OK;
    }
    w->clear_pending = true;
    if(!reclaim)
      return SC_OK;
    want_nosandbox(w);
    w->phase = SESSION_PHASE_RECLAIMED;
    w->reclaimed_generation = session_eff_generation(s);
    w->ready_status = "False";
    if(status_ready_is(st, REASON_RECLAIMING_CAPACITY) ||
       status_ready_is(st, REASON_RECLAIMED_CAPACITY)) {
      char budget[PLAN_MSG_MAX];
      w->ready_reason = REASON_RECLAIMED_CAPACITY; /* rule 14 */
      status_msg_reclaimed_capacity(
        w->ready_msg, sizeof(w->ready_msg),
        status_capacity_budget(st, budget, sizeof(budget)),
        w->reclaimed_generation);
    }
    else {
      w->ready_reason = "Reclaimed";
      status_msg_reclaimed(w->ready_msg, sizeof(w->ready_msg),
                           w->reclaimed_generation);
    }
    /* a connect asks for a new sandbox: decide_create makes it */
    *done = !w->connect_pending;
    return SC_OK;
  }
  if(sc_str_eq0(st->pending_kind, "pause")) {
    if(sb->b->state == CUBE_SB_PAUSED) {
      w->clear_pending = true;
      w->intent_paused = true;
    }
    else if(s->spec.state != SESSION_STATE_PAUSED)
      w->clear_pending = true;
    return SC_OK;
  }
  if(!reclaim)
    return SC_OK; /* the plan deletes it again */
  if(sb->b->state == CUBE_SB_RUNNING) {
    w->clear_pending = true; /* resumed since: the intent is void */
    return SC_OK;
  }
  unwanted = rule11_reclaim_unwanted(pl, r, sb);
  if(unwanted && rule11_reclaim_void(pl, r)) {
    w->clear_pending = true; /* no DELETE of it can be in flight now */
    return SC_OK;
  }
  *done = true;
  want_sandbox(pl, w, s, sb);
  w->phase = SESSION_PHASE_RECLAIMING;
  if(unwanted) {
    /* the session says otherwise now, but a DELETE of the intent may
     * still be on its way: no new one, and no resume, until it cannot */
    char va[PLAN_DUR_MAX];
    duration_format(pl->cfg->reclaim_void_after_ms, va, sizeof(va));
    want_ready(w, "False", "ReclaimWithdrawing", "the reclaim of sandbox "
               "%s recorded by %s is no longer wanted (%s); it is withdrawn "
               "once no DELETE of it can still be in flight (%s after it "
               "was last recorded)", sb->id,
               st->pending_by ? st->pending_by : "(unnamed)", unwanted, va);
    *due = pl->in->cube_now + rule11_reclaim_void_in(pl, r) + 100;
    return SC_OK;
  }
  if(!status_ready_is(st, REASON_RECLAIMING_CAPACITY)) /* else it stays */
    want_ready(w, "False", "Reclaiming", "reclaiming sandbox %s (intent "
               "written by %s)", sb->id,
               st->pending_by ? st->pending_by : "(unnamed)");
  if(sb->b->state != CUBE_SB_PAUSED)
    return SC_OK; /* pausing: the DELETE once it is paused */
  plan_time_text(pl, st->pending_at, ta, sizeof(ta));
  return plan_add_action(pl, PLAN_DELETE, PLAN_DEL_RECLAIM, r, sb, 0,
                         "the reclaim of sandbox %s recorded by %s at %s "
                         "(Cube's clock) is carried on", sb->id,
                         st->pending_by ? st->pending_by : "(unnamed)", ta)
           ? SC_OK : SC_ERR_NOMEM;
}

/* ---------- rule 12: a sandbox belongs to one object ---------- */

/* May session s join sandbox sb? A sandbox whose lea.session_uid is
 * another uid was created for an earlier object of the same name: never
 * joined (a link to it is a conflict; by tags it stays unowned, so the
 * tombstone and orphan rules delete it). A sandbox without the tag
 * predates it: it joins through status.sandboxID (by_link) only, since a
 * new object of an old name has no link. An object without a uid (a store
 * that sets none) is not checked. */
bool rule12_one_object(const session *s, const sb_rec *sb, bool by_link)
{
  const char *uid = s->meta.uid;
  if(!uid || !*uid)
    return true;
  if(!sb->uid)
    return by_link;
  return !strcmp(sb->uid, uid);
}
