/*
 * decide.c - per session, what its spec.state asks given the sandboxes
 * the join gave it (docs/planner.md, "Per state"); then the orphans.
 *
 * decide_session(): a conflict found by the join (rules 4, 5, 12, a
 * claimed link, a shared sessionID) blocks every action but the ones an
 * ended session asks for; an invalid spec gets Failed; otherwise
 * decide_ended() or decide_live(). Each fills a want (status.c) and adds
 * actions (pass.c); times and durations in reasons are Cube's clock and
 * the spec's values, formatted by sctime and api/duration.c.
 */
#include "controller/plan/plan_int.h"

#include <stdio.h>
#include <string.h>

#include "api/duration.h"
#include "api/policy.h"
#include "lib/sctext.h"

static int64_t timeout_secs(int64_t ms)
{
  return (ms + 999) / 1000;
}

static const char *ns_of(const sess_rec *r)
{
  return session_eff_namespace(r->s);
}

static const char *name_of(const sess_rec *r)
{
  return r->s->meta.name ? r->s->meta.name : "";
}

/* a tag (text from Cube) as it may stand in a message: control, C1 and
 * bidi characters escaped (lib/sctext.h), "(none)" for NULL */
static const char *tag_shown(char *buf, const char *tag)
{
  return sc_text_escape(buf, PLAN_TAG_SHOWN, tag ? tag : "(none)");
}

/* The Reclaimed rule: a reclaim recorded reclaimedGeneration = generation
 * (at least 1); the session gets a new sandbox only once its generation
 * grows past that. */
static bool is_reclaimed(const session *s)
{
  return s->status.reclaimed_generation > 0 &&
         session_eff_generation(s) <= s->status.reclaimed_generation;
}

static bool is_ended(const session *s)
{
  return s->meta.deletion_timestamp != 0 ||
         s->spec.state == SESSION_STATE_ENDED;
}

/* The executor recorded that Cube refused this generation's create for
 * good (Ready=False/CreateFailed at the current generation). */
static bool create_refused_now(const session *s)
{
  const session_condition *c =
    session_status_get_condition(&s->status, "Ready");
  return c && c->reason && !strcmp(c->reason, "CreateFailed") &&
         c->observed_generation == s->meta.generation;
}

static sc_err add_confirm(planner *pl, const sess_rec *r)
{
  plan_action *a = plan_add_action(
    pl, PLAN_CONFIRM, PLAN_DEL_NONE, r, NULL, 0,
    "status.sandboxID %s is missing from Cube's lists: confirm with GET "
    "before concluding anything (absence is not evidence)", r->link);
  if(!a || !(a->sandbox_id = plan_strdup(pl, r->link)))
    return SC_ERR_NOMEM;
  return SC_OK;
}

/* ---------- conflicts ---------- */

/* the conflict the join found for r, into w; false when there is none */
static bool conflict_of(const sess_rec *r, want *w)
{
  const sb_rec *sb = r->link_sb;
  char t1[PLAN_TAG_SHOWN], t2[PLAN_TAG_SHOWN];
  size_t n = sizeof(w->conflict_msg);
  char *m = w->conflict_msg;
  if(r->ls == LS_CONFLICT_TENANT) {
    w->conflict_reason = "TenantMismatch";
    snprintf(m, n, "status.sandboxID %s carries tenant tag %s, not %s: it is "
             "never adopted, paused, resumed or deleted for this session",
             sb->id, tag_shown(t1, sb->tenant), r->tenant);
  }
  else if(r->ls == LS_CONFLICT_SB) {
    w->conflict_reason = "SandboxMismatch";
    if(rule4_untagged(sb))
      snprintf(m, n, "status.sandboxID %s carries no lea.* tags and "
               "status.sandboxProof does not prove that this controller "
               "linked it to this object: it is never paused, resumed or "
               "deleted for this session", sb->id);
    else if(!rule12_one_object(r->s, sb, true))
      snprintf(m, n, "status.sandboxID %s was created for another object of "
               "this name (uid %s, this object is %s): it is never adopted, "
               "paused, resumed or deleted for this session", sb->id,
               tag_shown(t1, sb->uid), r->s->meta.uid);
    else
      snprintf(m, n, "status.sandboxID %s carries tags of another owner "
               "(session %s, managed-by %s)", sb->id, tag_shown(t1, sb->sid),
               tag_shown(t2, sb->managed_by));
  }
  else if(r->ls == LS_CLAIMED) {
    w->conflict_reason = "SandboxClaimed";
    snprintf(m, n, "status.sandboxID %s is also recorded by session %s/%s",
             r->link, ns_of(r->link_winner), name_of(r->link_winner));
  }
  else if(r->unbound) {
    w->conflict_reason = "TenantNotNamespace";
    snprintf(m, n, "spec.tenantID %s is not the namespace %s: a session acts "
             "only for the tenant of its namespace (--tenant-binding "
             "namespace)", r->tenant, ns_of(r));
  }
  else if(r->pair_owner) {
    w->conflict_reason = "SessionIDInUse";
    snprintf(m, n, "tenant %s sessionID %s is already used by session %s/%s",
             r->tenant, r->sid, ns_of(r->pair_owner),
             name_of(r->pair_owner));
  }
  else
    return false;
  w->conflict = true;
  return true;
}

/* ---------- ended ---------- */

/* Ended or deleted: delete every sandbox of the session (intent, never
 * capped), confirm an unconfirmed link; Ended once none is left. */
static sc_err decide_ended(planner *pl, const sess_rec *r, want *w,
                           sc_time *due)
{
  const sb_rec *sb;
  char td[SCTIME_RFC3339_MAX];
  plan_delete_kind kind = r->tomb ? PLAN_DEL_TOMBSTONE : PLAN_DEL_ENDED;
  sc_err err;
  if(r->tomb)
    plan_time_text(pl, r->s->meta.deletion_timestamp, td, sizeof(td));
  for(sb = r->sbs; sb; sb = sb->next_of_owner) {
    const char *st = cube_sb_state_name(sb->b->state);
    plan_action *a =
      r->tomb ? plan_add_action(pl, PLAN_DELETE, kind, r, sb, 0,
                                "session deleted (deletionTimestamp %s): "
                                "delete its sandbox %s (%s)", td, sb->id, st)
              : plan_add_action(pl, PLAN_DELETE, kind, r, sb, 0,
                                "spec.state Ended: delete sandbox %s (%s)",
                                sb->id, st);
    if(!a)
      return SC_ERR_NOMEM;
  }
  if(r->ls == LS_CONFIRM && (err = add_confirm(pl, r)))
    return err;
  if(!r->n_sbs && r->ls != LS_CONFIRM && rule11_intent_unresolved(pl, r)) {
    /* its recorded delete (or pause) names a sandbox no list shows: a GET
     * asks (observe) before the object is ended, or the sandbox, still
     * there, would outlive it */
    if(w->phase == SESSION_PHASE_NONE)
      w->phase = SESSION_PHASE_PENDING;
    want_ready(w, "False", "Ending", "confirming sandbox %s of the recorded "
               "%s intent before ending", r->s->status.pending_sandbox_id,
               r->s->status.pending_kind);
    *due = pl->in->cube_now + 5000;
    return SC_OK;
  }
  if(!r->n_sbs && r->ls != LS_CONFIRM && rule11_create_claim_held(pl, r->s)) {
    /* another process may still be in its create call for this object:
     * ended (and purged) now, its sandbox would outlive the object */
    char ta[SCTIME_RFC3339_MAX];
    plan_time_text(pl, r->s->status.create_intent_at, ta, sizeof(ta));
    if(w->phase == SESSION_PHASE_NONE)
      w->phase = SESSION_PHASE_PENDING;
    want_ready(w, "False", "Ending", "waiting for the create claimed by %s "
               "at %s (Cube's clock) to be listed, so that its sandbox is "
               "deleted too", r->s->status.create_intent_by
                                ? r->s->status.create_intent_by
                                : "(unnamed)", ta);
    *due = r->s->status.create_intent_at + pl->cfg->create_intent_ttl_ms;
    return SC_OK;
  }
  if(!r->n_sbs && r->ls != LS_CONFIRM) {
    w->phase = SESSION_PHASE_ENDED;
    if(r->ls != LS_CONFLICT_TENANT && r->ls != LS_CONFLICT_SB)
      want_nosandbox(w);
    want_ready(w, "False", "Ended", "%s", status_msg_ended);
  }
  else {
    if(w->phase == SESSION_PHASE_NONE)
      w->phase = SESSION_PHASE_PENDING;
    want_ready(w, "False", "Ending", "deleting %zu sandbox(es)%s", r->n_sbs,
               r->ls == LS_CONFIRM ? ", confirming the linked one" : "");
  }
  return SC_OK;
}

/* ---------- live, no sandbox ---------- */

/* Rule 15: a create the running quota holds (r->cap), or one this pass
 * cannot count (a single-session pass sees one session's sandboxes):
 * Pending, no create; a full pass decides (plan.wants_full_pass), and a
 * QuotaExceeded it wrote stays until then. A connect stays unanswered. */
static sc_err quota_wait(planner *pl, const sess_rec *r, want *w)
{
  const session_status *old = &r->s->status;
  w->phase = SESSION_PHASE_PENDING;
  w->ready_status = NULL;
  w->connect_result = NULL;
  if(r->cap == CAP_QUOTA_WAIT) {
    want_ready(w, "False", REASON_QUOTA_EXCEEDED, "%s", r->cap_msg);
    return SC_OK;
  }
  if(status_ready_is(old, REASON_QUOTA_EXCEEDED) ||
     status_ready_is(old, REASON_WAITING_FOR_QUOTA))
    return SC_OK;
  want_ready(w, "False", REASON_WAITING_FOR_QUOTA, "the running sandboxes "
             "of tenant %s are counted against --max-running-per-tenant "
             "%zu in a pass over the whole fleet, which decides this create",
             r->tenant, pl->cfg->max_running_per_tenant);
  pl->p->wants_full_pass = true;
  return SC_OK;
}

static sc_err decide_create(planner *pl, const sess_rec *r, want *w,
                            sc_time *due)
{
  const session *s = r->s;
  session_state state = s->spec.state;
  int64_t idle_s = timeout_secs(session_eff_idle_timeout_ms(s));
  want_nosandbox(w);
  if(state == SESSION_STATE_PAUSED)
    want_connect_refused(w, "spec.state is Paused: set it to Active or "
                         "Running to connect");
  if((state == SESSION_STATE_PAUSED || state == SESSION_STATE_ACTIVE) &&
     is_reclaimed(s) && !(w->connect_pending && state != SESSION_STATE_PAUSED)) {
    w->phase = SESSION_PHASE_RECLAIMED;
    if(status_ready_is(&s->status, REASON_RECLAIMED_CAPACITY))
      return SC_OK; /* it says why it went (rule 14): kept */
    w->ready_status = "False";
    w->ready_reason = "Reclaimed";
    status_msg_reclaimed(w->ready_msg, sizeof(w->ready_msg),
                         s->status.reclaimed_generation);
    return SC_OK;
  }
  if(state == SESSION_STATE_PAUSED) {
    w->phase = SESSION_PHASE_PAUSED;
    want_ready(w, "False", "NoSandbox",
               "spec.state Paused: no sandbox is created");
    return SC_OK;
  }
  if(!s->spec.template_id || !*s->spec.template_id) {
    w->phase = SESSION_PHASE_FAILED;
    want_ready(w, "False", "InvalidSpec",
               "spec.template is empty: cannot create a sandbox");
    want_connect_refused(w, "%s", w->ready_msg);
    return SC_OK;
  }
  w->phase = SESSION_PHASE_CREATING;
  w->keep_intent = true; /* the executor writes its own claim first */
  if(rule11_create_claim_held(pl, s)) {
    char ta[SCTIME_RFC3339_MAX];
    sc_time until = s->status.create_intent_at + pl->cfg->create_intent_ttl_ms;
    plan_time_text(pl, s->status.create_intent_at, ta, sizeof(ta));
    want_ready(w, "False", "Creating",
               "waiting for the create claimed by %s at %s (Cube's clock)",
               s->status.create_intent_by ? s->status.create_intent_by
                                          : "(unnamed)", ta);
    if(!*due || until < *due)
      *due = until;
    return capacity_note_claim(pl, r); /* an in-flight create: a slot */
  }
  if(create_refused_now(s)) {
    /* Cube refused this generation's create for good: keep saying so
     * (phase Failed, Ready CreateFailed with Cube's answer) while the
     * executor tries again once per resync; a success or a new
     * generation replaces it */
    const session_condition *rc =
      session_status_get_condition(&s->status, "Ready");
    w->phase = SESSION_PHASE_FAILED;
    want_connect_refused(w, "%s", rc && rc->message ? rc->message
                                                    : "Cube refused the create");
  }
  else
    want_ready(w, "False", "Creating", "creating a sandbox from template %s",
               s->spec.template_id);
  if(pl->cfg->max_running_per_tenant) {
    bool held = r->cap == CAP_QUOTA_WAIT || !capacity_quota_countable(pl);
    sc_err err;
    if(held)
      return quota_wait(pl, r, w);
    if((err = capacity_note_create(pl, r)))
      return err;
  }
  if(!plan_add_action(pl, PLAN_CREATE, PLAN_DEL_NONE, r, NULL, idle_s,
                      "no sandbox for session %s/%s (state %s%s): create "
                      "from template %s with timeout %llds", ns_of(r),
                      name_of(r), session_state_name(state),
                      r->ls == LS_GONE ? ", linked sandbox confirmed gone"
                                       : "",
                      s->spec.template_id, (long long)idle_s))
    return SC_ERR_NOMEM;
  return SC_OK;
}

/* ---------- live, with a sandbox ---------- */

static sc_err decide_running(planner *pl, const sess_rec *r, const sb_rec *sb,
                             want *w, sc_time *due)
{
  const session *s = r->s;
  session_state state = s->spec.state;
  sc_time now = pl->in->cube_now;
  int64_t idle = session_eff_idle_timeout_ms(s);
  long long idle_s = (long long)timeout_secs(idle);
  w->phase = SESSION_PHASE_RUNNING;
  if(state == SESSION_STATE_PAUSED) {
    want_connect_refused(w, "spec.state is Paused: set it to Active or "
                         "Running to connect");
    want_ready(w, "False", "Pausing",
               "pausing sandbox %s: spec.state is Paused", sb->id);
    return plan_add_action(pl, PLAN_PAUSE, PLAN_DEL_NONE, r, sb, 0,
                           "spec.state Paused and sandbox %s is running: "
                           "pause", sb->id) ? SC_OK : SC_ERR_NOMEM;
  }
  w->ready_status = "True";
  w->ready_reason = "SandboxRunning";
  status_msg_running(w->ready_msg, sizeof(w->ready_msg), sb->id);
  want_connect_served(w); /* it runs: the caller may use it now */
  if(w->applied_idle_timeout_ms != idle) {
    char ni[PLAN_DUR_MAX], oi[PLAN_DUR_MAX];
    duration_format(idle, ni, sizeof(ni));
    duration_format(w->applied_idle_timeout_ms, oi, sizeof(oi));
    if(state == SESSION_STATE_RUNNING && sb->b->end_at)
      *due = sb->b->end_at - idle / 2;
    return plan_add_action(pl, PLAN_SET_TIMEOUT, PLAN_DEL_NONE, r, sb,
                           idle_s, "idleTimeout is %s but %s was applied to "
                           "sandbox %s: set its timeout to %llds", ni,
                           w->applied_idle_timeout_ms ? oi : "none known",
                           sb->id, idle_s) ? SC_OK : SC_ERR_NOMEM;
  }
  if(state == SESSION_STATE_RUNNING && sb->b->end_at) {
    /* keep a busy session from idling out, by Cube's clock */
    sc_time at = sb->b->end_at - idle / 2;
    char te[SCTIME_RFC3339_MAX], hi[PLAN_DUR_MAX];
    *due = at;
    if(!now || now < at)
      return SC_OK;
    plan_time_text(pl, sb->b->end_at, te, sizeof(te));
    duration_format(idle / 2, hi, sizeof(hi));
    return plan_add_action(pl, PLAN_KEEPALIVE, PLAN_DEL_NONE, r, sb, idle_s,
                           "spec.state Running: sandbox %s would idle out at "
                           "endAt %s (now %s, within idleTimeout/2 = %s): "
                           "extend by %llds", sb->id, te, pl->now_text, hi,
                           idle_s) ? SC_OK : SC_ERR_NOMEM;
  }
  return SC_OK;
}

/* paused >= reclaimAfter by Cube's clock (endAt known, reclaim on) */
static bool reclaim_due(const planner *pl, const sess_rec *r,
                        const sb_rec *sb)
{
  sc_time now = pl->in->cube_now;
  int64_t after = session_eff_reclaim_after_ms(r->s);
  return sb->b->state == CUBE_SB_PAUSED && after > 0 && sb->b->end_at != 0 &&
         now != 0 && now - sb->b->end_at >= after;
}

static sc_err add_reclaim(planner *pl, const sess_rec *r, const sb_rec *sb)
{
  char te[SCTIME_RFC3339_MAX], age[PLAN_DUR_MAX], ra[PLAN_DUR_MAX];
  plan_time_text(pl, sb->b->end_at, te, sizeof(te));
  duration_format(pl->in->cube_now - sb->b->end_at, age, sizeof(age));
  duration_format(session_eff_reclaim_after_ms(r->s), ra, sizeof(ra));
  return plan_add_action(pl, PLAN_DELETE, PLAN_DEL_RECLAIM, r, sb, 0,
                         "sandbox %s paused for %s by Cube's clock (endAt "
                         "%s, now %s) >= reclaimAfter %s", sb->id, age, te,
                         pl->now_text, ra) ? SC_OK : SC_ERR_NOMEM;
}

/* Rule 14: chosen by capacity_decide() as one of the longest-paused over
 * a budget (r->cap_msg): reclaimed before its reclaimAfter, as a reclaim
 * (intent, brake, confirming GET), audited as kind capacity */
static sc_err add_capacity_reclaim(planner *pl, const sess_rec *r,
                                   const sb_rec *sb)
{
  char te[SCTIME_RFC3339_MAX], age[PLAN_DUR_MAX], ra[PLAN_DUR_MAX];
  plan_action *a;
  plan_time_text(pl, sb->b->end_at, te, sizeof(te));
  duration_format(pl->in->cube_now - sb->b->end_at, age, sizeof(age));
  duration_format(session_eff_reclaim_after_ms(r->s), ra, sizeof(ra));
  a = plan_add_action(pl, PLAN_DELETE, PLAN_DEL_RECLAIM, r, sb, 0,
                      "capacity: sandbox %s paused for %s by Cube's clock "
                      "(endAt %s, now %s) is among the longest-paused over "
                      "%s: reclaimed before its reclaimAfter %s", sb->id, age,
                      te, pl->now_text, r->cap_msg, ra);
  if(!a || !(a->capacity = plan_strdup(pl, r->cap_msg)))
    return SC_ERR_NOMEM;
  return SC_OK;
}

static sc_err decide_paused(planner *pl, const sess_rec *r, const sb_rec *sb,
                            want *w, sc_time *due)
{
  const session *s = r->s;
  session_state state = s->spec.state;
  int64_t after = session_eff_reclaim_after_ms(s);
  long long idle_s =
    (long long)timeout_secs(session_eff_idle_timeout_ms(s));
  bool paused = sb->b->state == CUBE_SB_PAUSED;
  w->phase = SESSION_PHASE_PAUSED;
  if(state == SESSION_STATE_RUNNING) {
    if(!paused) {
      want_ready(w, "False", "SandboxPausing",
                 "sandbox %s is pausing; it is resumed once paused", sb->id);
      return SC_OK;
    }
    want_ready(w, "False", "Resuming",
               "resuming sandbox %s: spec.state is Running", sb->id);
    return plan_add_action(pl, PLAN_RESUME, PLAN_DEL_NONE, r, sb, idle_s,
                           "spec.state Running and sandbox %s is %s: resume "
                           "with timeout %llds", sb->id,
                           cube_sb_state_name(sb->b->state), idle_s)
             ? SC_OK : SC_ERR_NOMEM;
  }
  if(state == SESSION_STATE_PAUSED)
    want_connect_refused(w, "spec.state is Paused: set it to Active or "
                         "Running to connect");
  else if(w->connect_pending) {
    /* a connect before any reclaim intent: it wins, the sandbox resumes
     * (rule 11: a written reclaim would have been carried on instead) */
    if(!paused) {
      want_ready(w, "False", "SandboxPausing", "sandbox %s is pausing; the "
                 "connect resumes it once paused", sb->id);
      return SC_OK;
    }
    want_ready(w, "False", "Resuming", "resuming sandbox %s for a connect "
               "request", sb->id);
    return plan_add_action(pl, PLAN_RESUME, PLAN_DEL_NONE, r, sb, idle_s,
                           "connect request %s and sandbox %s is paused: "
                           "resume with timeout %llds", w->connect_pending,
                           sb->id, idle_s) ? SC_OK : SC_ERR_NOMEM;
  }
  /* resume before reclaim: back to Active says the user wants it */
  if(state == SESSION_STATE_ACTIVE && w->paused_by_controller && paused) {
    want_ready(w, "False", "Resuming",
               "resuming sandbox %s: the controller paused it and "
               "spec.state is Active again", sb->id);
    return plan_add_action(pl, PLAN_RESUME, PLAN_DEL_NONE, r, sb, idle_s,
                           "sandbox %s was paused by the controller and "
                           "spec.state is Active again: resume with timeout "
                           "%llds", sb->id, idle_s) ? SC_OK : SC_ERR_NOMEM;
  }
  if(state == SESSION_STATE_ACTIVE && w->paused_by_controller)
    want_ready(w, "False", "Resuming",
               "sandbox %s is pausing; it is resumed once paused", sb->id);
  else if(state == SESSION_STATE_PAUSED) {
    w->ready_status = "True";
    w->ready_reason = "SandboxPaused";
    status_msg_paused(w->ready_msg, sizeof(w->ready_msg), sb->id);
  }
  else {
    w->ready_status = "True";
    w->ready_reason = "IdlePaused";
    status_msg_idle(w->ready_msg, sizeof(w->ready_msg), sb->id);
  }
  if(reclaim_due(pl, r, sb))
    return add_reclaim(pl, r, sb);
  if(paused && r->cap == CAP_VICTIM)
    return add_capacity_reclaim(pl, r, sb);
  if(paused && after > 0 && sb->b->end_at)
    *due = sb->b->end_at + after;
  return paused ? capacity_note_paused(pl, r, sb) : SC_OK;
}

static sc_err decide_live(planner *pl, const sess_rec *r, want *w,
                          sc_time *due)
{
  const session *s = r->s;
  const sb_rec *win, *sb;
  if(r->ls == LS_CONFIRM) {
    /* keep the status as it is until the GET answers (no flapping) */
    if(!session_status_get_condition(&s->status, "Ready"))
      want_ready(w, "Unknown", "WaitingForConfirm",
                 "linked sandbox %s is missing from Cube's lists; "
                 "confirming", r->link);
    if(w->phase == SESSION_PHASE_NONE)
      w->phase = SESSION_PHASE_PENDING;
    return add_confirm(pl, r);
  }
  if(s->status.pending_kind) {
    bool done;
    sc_err err = rule11_resume_intent(pl, r, w, &done, due);
    if(err || done)
      return err;
  }
  win = rule6_pick_duplicate_winner(r);
  if(!win)
    return decide_create(pl, r, w, due);
  /* Duplicates are deleted only once the store links the winner: without
   * a link, replicas reading the store a moment apart (one before, one
   * after a create's status write) would pick different winners and
   * delete both. This pass links the winner (a compare-and-set status
   * write); the next one, by any replica, deletes the others. */
  for(sb = r->sbs; r->ls == LS_OWNED && sb; sb = sb->next_of_owner)
    if(sb != win &&
       !plan_add_action(pl, PLAN_DELETE, PLAN_DEL_DUPLICATE, r, sb, 0,
                        "session has %zu sandboxes; keeping %s "
                        "(status.sandboxID): delete duplicate %s", r->n_sbs,
                        win->id, sb->id))
      return SC_ERR_NOMEM;
  want_sandbox(pl, w, s, win);
  if(w->intent_paused && win->b->state != CUBE_SB_RUNNING)
    w->paused_by_controller = true; /* the pause its intent recorded */
  if(pl->cfg->link_key && !w->proof && win->ours) {
    /* tagged ours: the evidence of now, kept for when Cube drops it */
    plan_link_proof(pl->cfg->link_key, s->meta.uid, win->id, w->proof_buf);
    w->proof = w->proof_buf;
  }
  switch(win->b->state) {
  case CUBE_SB_RUNNING:
    return decide_running(pl, r, win, w, due);
  case CUBE_SB_PAUSED:
  case CUBE_SB_PAUSING:
    return decide_paused(pl, r, win, w, due);
  default:
    if(w->phase == SESSION_PHASE_NONE)
      w->phase = SESSION_PHASE_PENDING;
    want_ready(w, "Unknown", "SandboxStateUnknown",
               "Cube reports an unknown state for sandbox %s", win->id);
    return SC_OK;
  }
}

sc_err decide_session(planner *pl, sess_rec *r)
{
  const session *s = r->s;
  plan_session *ps = &pl->p->sessions[r->idx];
  const char *invalid = pl->in->invalid ? pl->in->invalid[r->idx] : NULL;
  char denied[POLICY_REASON_MAX];
  sc_time due = 0;
  bool blocked;
  want w;
  sc_err err;

  want_from_old(s, &w);
  blocked = conflict_of(r, &w);
  if(is_ended(s)) {
    err = decide_ended(pl, r, &w, &due);
    want_connect_refused(&w, "the session is %s: no sandbox is made for it",
                         r->tomb ? "deleted" : "Ended (spec.state)");
    if(w.phase == SESSION_PHASE_ENDED)
      w.clear_pending = true; /* nothing is left to act on */
  }
  else if(rule5_tenant_policy_bounds(pl, s, denied, sizeof(denied))) {
    /* before the spec's own rules: a spec that reaches past its tenant
     * is refused as that, whatever else is wrong with it. No Cube call
     * for it; a sandbox it has stays as it is */
    w.phase = SESSION_PHASE_FAILED;
    want_ready(&w, "False", "PolicyDenied", "%s", denied);
    want_connect_refused(&w, "%s", denied);
    pl->p->n_policy_denied++;
    err = SC_OK;
  }
  else if(invalid) {
    /* written straight to the store past sessionctl's checks: the same
     * rules hold here, and nothing is done for it until it is valid */
    w.phase = SESSION_PHASE_FAILED;
    want_ready(&w, "False", "InvalidSpec", "%s", invalid);
    want_connect_refused(&w, "%s", invalid);
    err = SC_OK;
  }
  else if(blocked) {
    w.phase = SESSION_PHASE_FAILED;
    want_ready(&w, "False",
               r->ls == LS_CONFLICT_TENANT || r->unbound ? "TenantConflict"
                                                         : "SandboxConflict",
               "%s", w.conflict_msg);
    want_connect_refused(&w, "%s", w.conflict_msg);
    err = SC_OK;
  }
  else {
    if(r->ls == LS_GONE || r->ls == LS_NONE)
      want_nosandbox(&w);
    err = decide_live(pl, r, &w, &due);
  }
  if(err)
    return err;
  ps->s = s;
  ps->next_due = due;
  return status_settle(pl, s, &w, ps);
}

/* ---------- orphans ---------- */

/* Ours, joined by nobody, paused for the orphan grace by Cube's clock:
 * deleted, within the guard (rule 9). Running orphans are left to Cube's
 * idle pause. */
sc_err decide_orphans(planner *pl)
{
  plan *p = pl->p;
  sc_time now = pl->in->cube_now;
  size_t i, first = p->n_actions;
  char grace[PLAN_DUR_MAX];
  duration_format(pl->cfg->orphan_grace_ms, grace, sizeof(grace));
  for(i = 0; i < pl->n_sbs; i++) {
    const sb_rec *sb = &pl->sbs[i];
    char te[SCTIME_RFC3339_MAX], age[PLAN_DUR_MAX];
    char t1[PLAN_TAG_SHOWN], t2[PLAN_TAG_SHOWN], t3[PLAN_TAG_SHOWN];
    sc_time at;
    const sess_rec *holder;
    plan_action *a;
    sc_err err;
    if(!join_is_orphan(sb))
      continue;
    p->n_orphan_candidates++; /* any state or age: the guard's view */
    if((holder = rule16_superseded(pl, sb, &err))) {
      /* evidence, not absence (rule 16): now, running or paused; the
       * guard still counts it, so a mis-pointed store whose names match
       * cannot empty Cube */
      if(!(a = plan_add_action(
             pl, PLAN_DELETE, PLAN_DEL_ORPHAN, NULL, sb, 0,
             "superseded: created for object uid %s of tenant %s session "
             "%s, which was deleted: the store holds that session under "
             "uid %s (%s/%s) now; deleted without the orphan grace",
             tag_shown(t1, sb->uid), tag_shown(t2, sb->tenant),
             tag_shown(t3, sb->sid), holder->s->meta.uid, ns_of(holder),
             name_of(holder))))
        return SC_ERR_NOMEM;
      a->expect_paused = false;
      continue;
    }
    if(err)
      return err;
    if(sb->b->state != CUBE_SB_PAUSED || !sb->b->end_at || !now)
      continue;
    at = sb->b->end_at + pl->cfg->orphan_grace_ms;
    if(now < at) {
      if(!p->next_orphan_due || at < p->next_orphan_due)
        p->next_orphan_due = at;
      continue;
    }
    if(!rule2_orphan_may_be_concluded(pl, sb))
      continue;
    plan_time_text(pl, sb->b->end_at, te, sizeof(te));
    duration_format(now - sb->b->end_at, age, sizeof(age));
    if(!plan_add_action(pl, PLAN_DELETE, PLAN_DEL_ORPHAN, NULL, sb, 0,
                        "orphan: no session or tombstone for tenant %s "
                        "session %s and no status links it; paused for %s by "
                        "Cube's clock (endAt %s, now %s) >= orphan grace %s",
                        tag_shown(t1, sb->tenant), tag_shown(t2, sb->sid), age,
                        te, pl->now_text, grace))
      return SC_ERR_NOMEM;
  }
  return rule9_orphan_guard(pl, first);
}
