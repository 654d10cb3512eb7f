/*
 * status.c - the status a session should show: a want (decide.c) applied
 * onto the old status, and compared with it by api/'s
 * session_status_equal(), the one status comparison of the project; and
 * plan_status_after(), the status after an action succeeded.
 *
 * Both apply their changes to a view: a session_status struct whose
 * strings are borrowed (from the old status, the want, the sandbox
 * record or constants) and whose conditions sit in a borrowed array. A
 * view is never freed or kept: it is compared, and copied with
 * session_status_copy() when it differs. So unknown parts of a status
 * survive, equal values compare equal, and the rules of a condition
 * update (lastTransitionTime kept while the status is the same) exist
 * once, in view_set_cond().
 *
 * Cost, written down: every session's Ready message is formatted with
 * snprintf and the view compared string by string, about 0.1-0.2 us per
 * session; an unchanged status is not copied (plan.h: a shallow view).
 */
#include "controller/plan/plan_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/policy.h"
#include "lib/scstr.h"

#define MSG_RESOLVED "no conflicting sandbox or session"
#define MSG_UPTODATE "the sandbox runs spec.template"

const char status_msg_ended[] = "spec.state Ended: no sandbox left";

void status_msg_running(char *b, size_t n, const char *id)
{
  snprintf(b, n, "sandbox %s is running", id);
}

void status_msg_paused(char *b, size_t n, const char *id)
{
  snprintf(b, n, "sandbox %s is paused as spec.state Paused asks", id);
}

void status_msg_idle(char *b, size_t n, const char *id)
{
  snprintf(b, n, "sandbox %s was paused by Cube for idleness; the next "
           "request resumes it", id);
}

void status_msg_reclaimed(char *b, size_t n, int64_t rg)
{
  snprintf(b, n, "sandbox reclaimed at generation %lld; a connect request "
           "or a bump of spec.wake makes a new one", (long long)rg);
}

void status_msg_reclaimed_capacity(char *b, size_t n, const char *budget,
                                   int64_t rg)
{
  snprintf(b, n, "sandbox reclaimed for capacity (%s) at generation %lld; a "
           "connect request or a bump of spec.wake makes a new one",
           budget ? budget : "the budget its intent recorded", (long long)rg);
}

/* The budget a capacity intent recorded in its Ready message (written by
 * plan_status_intent below: "... for capacity, BUDGET (intent written by
 * ..."), into buf; NULL when st holds none. A replica that carries the
 * intent on, or finds it done, says the same budget. */
#define CAP_MSG_AT "for capacity, "
#define CAP_MSG_END " (intent written by "
const char *status_capacity_budget(const session_status *st, char *buf,
                                   size_t n)
{
  const session_condition *c = session_status_get_condition(st, "Ready");
  const char *b, *e;
  if(!c || !c->message || !sc_str_eq0(c->reason, REASON_RECLAIMING_CAPACITY) ||
     !(b = strstr(c->message, CAP_MSG_AT)))
    return NULL;
  b += strlen(CAP_MSG_AT);
  if(!(e = strstr(b, CAP_MSG_END)) || e == b || (size_t)(e - b) >= n)
    return NULL;
  memcpy(buf, b, (size_t)(e - b));
  buf[e - b] = '\0';
  return buf;
}

bool status_ready_is(const session_status *st, const char *reason)
{
  const session_condition *c = session_status_get_condition(st, "Ready");
  return c && sc_str_eq0(c->reason, reason);
}

/* ---------- the connect request ---------- */

static bool nonce_valid(const char *n)
{
  size_t i;
  for(i = 0; n[i]; i++)
    if(i >= SESSION_CONNECT_NONCE_MAX ||
       !((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= 'A' && n[i] <= 'Z') ||
         (n[i] >= '0' && n[i] <= '9') || n[i] == '.' || n[i] == '_' ||
         n[i] == '-'))
      return false;
  return i > 0;
}

/* A nonce that is not 1..64 of [A-Za-z0-9._-] is no request: status.connect
 * could not echo it (docs/session-api.md says so). */
const char *plan_connect_pending(const session *s)
{
  const char *n = sc_kvlist_get(&s->meta.annotations, SESSION_ANNOT_CONNECT);
  if(!n || !nonce_valid(n) || sc_str_eq0(n, s->status.connect_nonce))
    return NULL;
  return n;
}

void want_connect_served(want *w)
{
  if(!w->connect_pending)
    return;
  w->connect_result = SESSION_CONNECT_SERVED;
  w->connect_msg[0] = '\0';
}

void want_connect_refused(want *w, const char *fmt, ...)
{
  va_list ap;
  if(!w->connect_pending)
    return;
  w->connect_result = SESSION_CONNECT_REFUSED;
  va_start(ap, fmt);
  vsnprintf(w->connect_msg, sizeof(w->connect_msg), fmt, ap);
  va_end(ap);
}

/* ---------- the want ---------- */

void want_from_old(const session *s, want *w)
{
  const session_status *o = &s->status;
  memset(w, 0, sizeof(*w));
  w->phase = o->phase;
  w->sandbox_id = o->sandbox_id;
  w->proof = o->sandbox_proof;
  w->sandbox_state = o->sandbox_state;
  w->end_at = o->end_at;
  w->reclaimed_generation = o->reclaimed_generation;
  w->paused_by_controller = o->paused_by_controller;
  w->applied_idle_timeout_ms = o->applied_idle_timeout_ms;
  w->keep_intent = true;
  w->domain = o->domain;
  w->connect_pending = plan_connect_pending(s);
}

void want_ready(want *w, const char *status, const char *reason,
                const char *fmt, ...)
{
  va_list ap;
  w->ready_status = status;
  w->ready_reason = reason;
  va_start(ap, fmt);
  vsnprintf(w->ready_msg, sizeof(w->ready_msg), fmt, ap);
  va_end(ap);
}

/* sb is the session's sandbox: its facts as Cube reports them; what was
 * recorded about another sandbox (paused by us, the applied timeout, the
 * proof) does not carry over */
void want_sandbox(const planner *pl, want *w, const session *s,
                  const sb_rec *sb)
{
  const session_status *o = &s->status;
  bool same = sc_str_eq0(o->sandbox_id, sb->id);
  w->sandbox_id = sb->id;
  if(!same)
    w->proof = NULL; /* made anew for this sandbox, if at all */
  w->sandbox_state = cube_sb_state_name(sb->b->state);
  w->end_at = sb->b->end_at;
  if(same && o->end_at && sb->b->end_at &&
     llabs(o->end_at - sb->b->end_at) <= PLAN_END_AT_SLACK_MS)
    w->end_at = o->end_at; /* close enough: no write for it alone */
  w->applied_idle_timeout_ms = same ? o->applied_idle_timeout_ms : 0;
  w->domain = sb->b->domain ? sb->b->domain : same ? o->domain : NULL;
  w->keep_intent = false; /* a sandbox is found: the claim is done */
  w->paused_by_controller = same && o->paused_by_controller;
  if(sb->b->state == CUBE_SB_RUNNING && s->spec.state != SESSION_STATE_PAUSED)
    w->paused_by_controller = false; /* someone resumed it */
  /* UpToDate: a spec.template changed on a live session cannot reach its
   * running sandbox (Cube has no call for it); said in a condition */
  w->tmpl_stale = sb->tmpl && s->spec.template_id &&
                  strcmp(sb->tmpl, s->spec.template_id);
  if(w->tmpl_stale)
    snprintf(w->uptodate_msg, sizeof(w->uptodate_msg),
             "spec.template is %s but sandbox %s was created from %s: the "
             "new template applies to the next sandbox (after a reclaim and "
             "a wake, or once this one is gone)", s->spec.template_id,
             sb->id, sb->tmpl);
  /* the same for spec.network, spec.volumeMounts and spec.workspace:
   * recorded as a digest at create (lea.config), applied at the next */
  w->cfg_stale = false;
  if(!w->tmpl_stale && sb->cfg) {
    char dg[SESSION_CONFIG_DIGEST_LEN + 1];
    policy_sandbox ps;
    /* the sandbox as the tenant policy makes it (a narrowed egress
     * ceiling, a workspace root moved) */
    policy_sandbox_of(pl->cfg->policy, s, &ps);
    session_sandbox_config_digest(&ps.spec, dg);
    w->cfg_stale = strcmp(dg, sb->cfg) != 0;
    if(w->cfg_stale)
      snprintf(w->uptodate_msg, sizeof(w->uptodate_msg),
               "spec.network, spec.volumeMounts, spec.workspace or the "
               "tenant policy changed after sandbox %s was created: a "
               "running sandbox cannot take them; they apply to the next "
               "sandbox (after a reclaim and a wake, or once this one is "
               "gone)", sb->id);
  }
}

void want_nosandbox(want *w)
{
  w->sandbox_id = NULL;
  w->proof = NULL;
  w->keep_intent = false;
  w->sandbox_state = NULL;
  w->end_at = 0;
  w->applied_idle_timeout_ms = 0;
  w->paused_by_controller = false;
  w->domain = NULL;
}

/* ---------- views ---------- */

/* status.envdAddress of a sandbox under domain, into buf (E2B clients'
 * form); NULL when either is unknown */
static char *envd_address(char *buf, size_t n, const char *id,
                          const char *domain)
{
  if(!id || !*id || !domain || !*domain)
    return NULL;
  snprintf(buf, n, "https://%d-%s.%s", SESSION_ENVD_PORT, id, domain);
  return buf;
}

static session_condition *view_get_cond(session_status *v, const char *type)
{
  size_t i;
  for(i = 0; i < v->n_conditions; i++)
    if(sc_str_eq0(v->conditions[i].type, type))
      return &v->conditions[i];
  return NULL;
}

/* Set the condition of this type in the view, as
 * session_status_set_condition() would: lastTransitionTime is kept while
 * the status stays the same. The view's array has room for one more. */
static void view_set_cond(session_status *v, const char *type,
                          const char *status, const char *reason,
                          const char *msg, int64_t gen, sc_time now)
{
  session_condition *c = view_get_cond(v, type);
  sc_time ltt = now;
  if(c && sc_str_eq0(c->status, status) && c->last_transition_time)
    ltt = c->last_transition_time;
  if(!c)
    c = &v->conditions[v->n_conditions++];
  c->type = (char *)type;
  c->status = (char *)status;
  c->reason = (char *)reason;
  c->message = (char *)msg;
  c->last_transition_time = ltt;
  c->observed_generation = gen;
}

/* v: a view of st with room for extra more conditions in conds */
static void view_of(const session_status *st, session_condition *conds,
                    session_status *v)
{
  *v = *st;
  if(st->n_conditions)
    memcpy(conds, st->conditions, st->n_conditions * sizeof(*conds));
  v->conditions = conds;
}

/* the want w applied onto a view of s->status (room for 3 conditions) */
static void view_apply_want(const session *s, want *w, sc_time now,
                            session_condition *conds, session_status *v)
{
  int64_t og = s->meta.generation;
  view_of(&s->status, conds, v);
  v->phase = w->phase;
  v->sandbox_id = (char *)w->sandbox_id;
  v->sandbox_proof = w->sandbox_id ? (char *)w->proof : NULL;
  v->sandbox_state = (char *)w->sandbox_state;
  v->end_at = w->end_at;
  v->tenant_id = (char *)session_eff_tenant_id(s);
  v->observed_generation = og;
  v->reclaimed_generation = w->reclaimed_generation;
  v->paused_by_controller = w->paused_by_controller;
  v->applied_idle_timeout_ms = w->applied_idle_timeout_ms;
  if(!w->keep_intent) {
    v->create_intent_by = NULL;
    v->create_intent_at = 0;
  }
  v->domain = w->sandbox_id ? (char *)w->domain : NULL;
  v->envd_address = envd_address(w->envd_buf, sizeof(w->envd_buf),
                                 w->sandbox_id, v->domain);
  if(w->clear_pending) {
    v->pending_kind = v->pending_sandbox_id = v->pending_by = NULL;
    v->pending_at = 0;
  }
  if(w->connect_result && w->connect_pending) {
    v->connect_nonce = (char *)w->connect_pending;
    v->connect_result = (char *)w->connect_result;
    v->connect_message = w->connect_msg[0] ? w->connect_msg : NULL;
  }
  if(w->ready_status)
    view_set_cond(v, "Ready", w->ready_status, w->ready_reason,
                  w->ready_msg, og, now);
  if(w->conflict)
    view_set_cond(v, "Conflict", "True", w->conflict_reason,
                  w->conflict_msg, og, now);
  else if(view_get_cond(v, "Conflict"))
    view_set_cond(v, "Conflict", "False", "Resolved", MSG_RESOLVED, og, now);
  if(w->tmpl_stale || w->cfg_stale)
    view_set_cond(v, "UpToDate", "False",
                  w->tmpl_stale ? "TemplateChanged" : "SandboxConfigChanged",
                  w->uptodate_msg, og, now);
  else if(view_get_cond(v, "UpToDate"))
    view_set_cond(v, "UpToDate", "True", "UpToDate", MSG_UPTODATE, og, now);
}

sc_err status_settle(planner *pl, const session *s, want *w,
                     plan_session *ps)
{
  plan_scratch *sc = pl->sc;
  size_t need = s->status.n_conditions + 3;
  session_status v;
  sc_err err;
  ps->status = s->status; /* unchanged: a shallow view (plan.h) */
  ps->status_changed = false;
  if(need > sc->cap_conds) {
    session_condition *c = realloc(sc->conds, need * sizeof(*c));
    if(!c)
      return SC_ERR_NOMEM;
    sc->conds = c;
    sc->cap_conds = need;
  }
  view_apply_want(s, w, pl->in->cube_now, sc->conds, &v);
  if(session_status_equal(&v, &s->status))
    return SC_OK;
  if((err = session_status_copy(&ps->status, &v))) {
    ps->status = s->status;
    return err;
  }
  ps->status_changed = true;
  return SC_OK;
}

/* ---------- after an action ---------- */

static void view_no_sandbox(session_status *v)
{
  v->sandbox_id = NULL;
  v->sandbox_proof = NULL;
  v->sandbox_state = NULL;
  v->end_at = 0;
  v->paused_by_controller = false;
  v->applied_idle_timeout_ms = 0;
}

/* the intent of a (rule 11) is done: status.pendingAction goes */
static void view_intent_done(session_status *v, const plan_action *a)
{
  if(v->pending_kind && sc_str_eq0(v->pending_sandbox_id, a->sandbox_id)) {
    v->pending_kind = v->pending_sandbox_id = v->pending_by = NULL;
    v->pending_at = 0;
  }
}

static void view_connect_served(session_status *v, const char *nonce)
{
  v->connect_nonce = (char *)nonce;
  v->connect_result = SESSION_CONNECT_SERVED;
  v->connect_message = NULL;
}

/* what action a changes in the view v of the status (msg: room for the
 * Ready message) */
static sc_err view_apply_action(const session *s, const plan_action *a,
                                const char *new_id, session_status *v,
                                char *msg, size_t len)
{
  int64_t og = s->meta.generation;
  const char *connect = plan_connect_pending(s);
  const char *id = a->sandbox_id ? a->sandbox_id : "";
  v->observed_generation = og;
  v->tenant_id = (char *)session_eff_tenant_id(s);
  switch(a->type) {
  case PLAN_CREATE:
    if(!new_id || !*new_id)
      return SC_ERR_INVALID;
    v->sandbox_id = (char *)new_id;
    v->sandbox_proof = NULL;
    v->sandbox_state = "running";
    v->phase = SESSION_PHASE_RUNNING;
    /* Cube's endAt is the create's time plus the timeout (both dialects):
     * the estimate, which the next list confirms to within
     * PLAN_END_AT_SLACK_MS or replaces */
    v->end_at = a->cube_now && a->timeout_s > 0
                  ? a->cube_now + a->timeout_s * 1000 : 0;
    v->paused_by_controller = false;
    v->create_intent_by = NULL; /* the claim is done */
    v->create_intent_at = 0;
    v->applied_idle_timeout_ms = session_eff_idle_timeout_ms(s);
    v->domain = v->envd_address = NULL; /* plan_status_set_domain() */
    if(connect) {
      /* a connect is what made it: the session is reclaimed no more */
      v->reclaimed_generation = 0;
      view_connect_served(v, connect);
    }
    status_msg_running(msg, len, new_id);
    view_set_cond(v, "Ready", "True", "SandboxRunning", msg, og, a->cube_now);
    return SC_OK;
  case PLAN_PAUSE:
    view_intent_done(v, a);
    v->sandbox_state = "paused";
    v->phase = SESSION_PHASE_PAUSED;
    v->paused_by_controller = true;
    status_msg_paused(msg, len, id);
    view_set_cond(v, "Ready", "True", "SandboxPaused", msg, og, a->cube_now);
    return SC_OK;
  case PLAN_RESUME:
    v->sandbox_state = "running";
    v->phase = SESSION_PHASE_RUNNING;
    v->paused_by_controller = false;
    if(connect)
      view_connect_served(v, connect);
    status_msg_running(msg, len, id);
    view_set_cond(v, "Ready", "True", "SandboxRunning", msg, og, a->cube_now);
    return SC_OK;
  case PLAN_KEEPALIVE:
  case PLAN_CONFIRM:
    return SC_OK;
  case PLAN_SET_TIMEOUT:
    v->applied_idle_timeout_ms = session_eff_idle_timeout_ms(s);
    return SC_OK;
  case PLAN_DELETE:
    view_intent_done(v, a);
    break;
  default:
    return SC_ERR_INVALID;
  }
  /* a duplicate or an orphan was not the session's sandbox */
  if((a->del_kind == PLAN_DEL_DUPLICATE || a->del_kind == PLAN_DEL_ORPHAN) &&
     !sc_str_eq0(v->sandbox_id, a->sandbox_id))
    return SC_OK;
  if(!v->sandbox_id || sc_str_eq0(v->sandbox_id, a->sandbox_id))
    view_no_sandbox(v);
  switch(a->del_kind) {
  case PLAN_DEL_RECLAIM:
    v->phase = SESSION_PHASE_RECLAIMED;
    v->reclaimed_generation = session_eff_generation(s);
    if(a->capacity || status_ready_is(v, REASON_RECLAIMING_CAPACITY) ||
       status_ready_is(v, REASON_RECLAIMED_CAPACITY)) {
      /* rule 14: said so, with the budget (a carried-on intent: its own) */
      char budget[PLAN_MSG_MAX];
      status_msg_reclaimed_capacity(
        msg, len, a->capacity ? a->capacity
                              : status_capacity_budget(v, budget,
                                                       sizeof(budget)),
        v->reclaimed_generation);
      view_set_cond(v, "Ready", "False", REASON_RECLAIMED_CAPACITY, msg, og,
                    a->cube_now);
      return SC_OK;
    }
    status_msg_reclaimed(msg, len, v->reclaimed_generation);
    view_set_cond(v, "Ready", "False", "Reclaimed", msg, og, a->cube_now);
    return SC_OK;
  case PLAN_DEL_ENDED:
  case PLAN_DEL_TOMBSTONE:
    v->phase = SESSION_PHASE_ENDED;
    view_set_cond(v, "Ready", "False", "Ended", status_msg_ended, og,
                  a->cube_now);
    return SC_OK;
  default:
    return SC_OK;
  }
}

sc_err plan_status_after(const session *s, const plan_action *a,
                         const char *new_id, session_status *st)
{
  char msg[PLAN_MSG_MAX];
  session_condition *conds;
  session_status v, out;
  sc_err err;
  if(!a || !st)
    return SC_ERR_INVALID;
  if(!s)
    return a->del_kind == PLAN_DEL_ORPHAN ? SC_OK : SC_ERR_INVALID;
  if(!(conds = malloc((st->n_conditions + 1) * sizeof(*conds))))
    return SC_ERR_NOMEM;
  view_of(st, conds, &v);
  err = view_apply_action(s, a, new_id, &v, msg, sizeof(msg));
  if(!err && !(err = session_status_copy(&out, &v))) {
    session_status_clear(st);
    *st = out;
  }
  free(conds);
  return err;
}

/* ---------- intent (rule 11) ---------- */

const char *plan_intent_kind(const plan_action *a)
{
  if(a->type == PLAN_PAUSE)
    return "pause";
  if(a->type != PLAN_DELETE)
    return NULL;
  switch(a->del_kind) {
  case PLAN_DEL_RECLAIM:
    return "reclaim";
  case PLAN_DEL_ENDED:
    return "ended";
  case PLAN_DEL_TOMBSTONE:
    return "tombstone";
  case PLAN_DEL_DUPLICATE:
    return "duplicate";
  case PLAN_DEL_ORPHAN: /* no object to hold it: the audit trail does */
  case PLAN_DEL_NONE:
    break;
  }
  return NULL;
}

sc_err plan_status_intent(const session *s, const plan_action *a,
                          const char *by, session_status *st)
{
  const char *kind = a ? plan_intent_kind(a) : NULL;
  char msg[PLAN_MSG_MAX];
  session_condition c;
  char *k, *id, *b;
  sc_err err;
  if(!s || !kind || !st || !by || !a->sandbox_id)
    return SC_ERR_INVALID;
  k = strdup(kind);
  id = strdup(a->sandbox_id);
  b = strdup(by);
  if(!k || !id || !b) {
    free(k);
    free(id);
    free(b);
    return SC_ERR_NOMEM;
  }
  free(st->pending_kind);
  free(st->pending_sandbox_id);
  free(st->pending_by);
  st->pending_kind = k;
  st->pending_sandbox_id = id;
  st->pending_by = b;
  st->pending_at = a->cube_now;
  if(a->del_kind != PLAN_DEL_RECLAIM)
    return SC_OK;
  st->phase = SESSION_PHASE_RECLAIMING;
  if(!a->capacity && status_ready_is(st, REASON_RECLAIMING_CAPACITY))
    return SC_OK; /* another's capacity reclaim carried on: it says so */
  if(a->capacity)
    snprintf(msg, sizeof(msg), "reclaiming sandbox %s " CAP_MSG_AT "%s"
             CAP_MSG_END "%s)", a->sandbox_id, a->capacity, by);
  else
    snprintf(msg, sizeof(msg), "reclaiming sandbox %s (intent written by "
             "%s)", a->sandbox_id, by);
  memset(&c, 0, sizeof(c));
  c.type = "Ready";
  c.status = "False";
  c.reason = a->capacity ? REASON_RECLAIMING_CAPACITY : "Reclaiming";
  c.message = msg;
  c.last_transition_time = a->cube_now;
  c.observed_generation = s->meta.generation;
  err = session_status_set_condition(st, &c);
  return err;
}

void plan_status_intent_cancel(session_status *st, const plan_action *a)
{
  if(!st || !a || !st->pending_kind ||
     !sc_str_eq0(st->pending_sandbox_id, a->sandbox_id))
    return;
  free(st->pending_kind);
  free(st->pending_sandbox_id);
  free(st->pending_by);
  st->pending_kind = st->pending_sandbox_id = st->pending_by = NULL;
  st->pending_at = 0;
}

sc_err plan_status_set_domain(session_status *st, const char *domain)
{
  char buf[320], *d = NULL, *e = NULL;
  if(!st)
    return SC_ERR_INVALID;
  if(domain && *domain && st->sandbox_id) {
    d = strdup(domain);
    e = strdup(envd_address(buf, sizeof(buf), st->sandbox_id, domain));
    if(!d || !e) {
      free(d);
      free(e);
      return SC_ERR_NOMEM;
    }
  }
  free(st->domain);
  free(st->envd_address);
  st->domain = d;
  st->envd_address = e;
  return SC_OK;
}
