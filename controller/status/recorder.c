/* recorder.c - event reasons of the reconciler's outcomes (see
 * recorder.h). */
#include "controller/status/recorder.h"

#include <stdio.h>
#include <string.h>

const char *recorder_type_name(recorder_type t)
{
  return t == RECORDER_WARNING ? "Warning" : "Normal";
}

const char *recorder_action_reason(const plan_action *a, bool ok,
                                   bool skipped, recorder_type *type)
{
  *type = RECORDER_NORMAL;
  if(a->type == PLAN_CONFIRM || !a->s)
    return NULL;
  if(skipped) {
    *type = RECORDER_WARNING;
    return "DeleteSkipped";
  }
  if(!ok) {
    *type = RECORDER_WARNING;
    return "CubeError";
  }
  switch(a->type) {
  case PLAN_CREATE:
    return "SandboxCreated";
  case PLAN_PAUSE:
    return "SandboxPaused";
  case PLAN_RESUME:
    return "SandboxResumed";
  case PLAN_KEEPALIVE:
  case PLAN_SET_TIMEOUT:
    return "TimeoutUpdated";
  case PLAN_DELETE:
    switch(a->del_kind) {
    case PLAN_DEL_RECLAIM:
      return "SandboxReclaimed";
    case PLAN_DEL_DUPLICATE:
      return "DuplicateDeleted";
    default:
      return "SandboxDeleted";
    }
  case PLAN_CONFIRM:
    break;
  }
  return NULL;
}

void recorder_action_message(const plan_action *a, bool ok, bool skipped,
                             const char *new_id, const char *detail,
                             char *buf, size_t len)
{
  const char *id = a->sandbox_id ? a->sandbox_id : "";
  const char *what = a->type == PLAN_DELETE
                       ? plan_delete_kind_name(a->del_kind)
                       : plan_action_type_name(a->type);
  if(skipped) {
    snprintf(buf, len, "did not delete sandbox %s (%s): %s", id, what,
             detail ? detail : "");
    return;
  }
  if(!ok) {
    snprintf(buf, len, "%s%s%s failed: %s", what, *id ? " of sandbox " : "",
             id, detail && *detail ? detail : "no answer");
    return;
  }
  switch(a->type) {
  case PLAN_CREATE:
    snprintf(buf, len, "created sandbox %s from template %s (timeout %llds)",
             new_id ? new_id : "", a->s && a->s->spec.template_id
                                     ? a->s->spec.template_id : "",
             (long long)a->timeout_s);
    break;
  case PLAN_PAUSE:
    snprintf(buf, len, "paused sandbox %s", id);
    break;
  case PLAN_RESUME:
    snprintf(buf, len, "resumed sandbox %s (timeout %llds)", id,
             (long long)a->timeout_s);
    break;
  case PLAN_KEEPALIVE:
  case PLAN_SET_TIMEOUT:
    snprintf(buf, len, "set the timeout of sandbox %s to %llds", id,
             (long long)a->timeout_s);
    break;
  case PLAN_DELETE:
    snprintf(buf, len, "deleted sandbox %s (%s)", id, what);
    break;
  case PLAN_CONFIRM:
    snprintf(buf, len, "confirmed sandbox %s", id);
    break;
  }
}

static void emit(const recorder *rec, logger *lg, const session *s,
                 recorder_type type, const char *reason, const char *msg)
{
  char key[300] = "-";
  if(s)
    snprintf(key, sizeof(key), "%s/%s", s->meta.namespace_, s->meta.name);
  log_kv(lg, rec && rec->record ? LOG_DEBUG : LOG_INFO, "event", "reason",
         reason, "type", recorder_type_name(type), "session", key,
         "message", msg, NULL);
  if(rec && rec->record)
    rec->record(rec->ud, s, type, reason, msg);
}

void recorder_note_action(const recorder *rec, logger *lg,
                          const plan_action *a, bool ok, bool skipped,
                          const char *new_id, const char *detail)
{
  recorder_type t;
  const char *reason = recorder_action_reason(a, ok, skipped, &t);
  char msg[1024];
  if(!reason)
    return;
  recorder_action_message(a, ok, skipped, new_id, detail, msg, sizeof(msg));
  emit(rec, lg, a->s, t, reason, msg);
}

static bool conflict_true(const session_status *st, const char **reason)
{
  const session_condition *c = session_status_get_condition(st, "Conflict");
  if(!c || !c->status || strcmp(c->status, "True"))
    return false;
  *reason = c->reason ? c->reason : "";
  return true;
}

/* Ready says reason with message msg (NULL: any message) */
static bool ready_is(const session_status *st, const char *reason,
                     const char *msg)
{
  const session_condition *c = session_status_get_condition(st, "Ready");
  return c && c->reason && !strcmp(c->reason, reason) &&
         (!msg || (c->message && !strcmp(c->message, msg)));
}

/* A session the tenant policy newly refuses (or refuses for a new
 * reason): a warning Event and a warn log line, once per change. */
static void note_denied(const recorder *rec, logger *lg,
                        const plan_session *ps)
{
  const session_condition *c;
  char key[300];
  if(!ps->status_changed || !ready_is(&ps->status, "PolicyDenied", NULL))
    return;
  c = session_status_get_condition(&ps->status, "Ready");
  if(ready_is(&ps->s->status, "PolicyDenied", c->message))
    return; /* said when it appeared */
  session_key(ps->s, key, sizeof(key));
  log_kv(lg, LOG_WARN, "the tenant policy refuses the session: no sandbox "
         "is made for it", "session", key, "error",
         c->message ? c->message : "", NULL);
  emit(rec, lg, ps->s, RECORDER_WARNING, "PolicyDenied",
       c->message ? c->message : "refused by the tenant policy");
}

void recorder_note_plan(const recorder *rec, logger *lg, const plan *p)
{
  size_t i;
  for(i = 0; i < p->n_sessions; i++)
    note_denied(rec, lg, &p->sessions[i]);
  for(i = 0; i < p->n_sessions; i++) {
    const plan_session *ps = &p->sessions[i];
    const session_condition *ready, *cc;
    const char *nr = NULL, *orr = NULL, *reason = "SandboxConflict";
    if(!ps->status_changed || !conflict_true(&ps->status, &nr))
      continue;
    if(conflict_true(&ps->s->status, &orr) && !strcmp(nr, orr))
      continue; /* not new: reported when it appeared */
    ready = session_status_get_condition(&ps->status, "Ready");
    if(ready && ready->reason && strlen(ready->reason) > 8 &&
       !strcmp(ready->reason + strlen(ready->reason) - 8, "Conflict"))
      reason = ready->reason;
    cc = session_status_get_condition(&ps->status, "Conflict");
    emit(rec, lg, ps->s, RECORDER_WARNING, reason,
         cc && cc->message ? cc->message : nr);
  }
  if(p->guard_tripped)
    emit(rec, lg, NULL, RECORDER_WARNING, "DeleteGuardTripped",
         p->guard_message ? p->guard_message : "orphan deletions withheld");
  if(p->n_reclaims_held)
    emit(rec, lg, NULL, RECORDER_WARNING, "ReclaimBrakeHeld",
         p->brake_message ? p->brake_message : "reclaims held back");
}
