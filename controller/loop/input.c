/*
 * input.c - a pass's observation made into the planner's input (see
 * pass.h): the objects validated (the manifest rules), the tenants whose
 * orphans an undecodable object holds.
 */
#include "controller/loop/input.h"
#include "api/manifest.h"
#include "lib/scstr.h"

#include <stdlib.h>
#include <string.h>

/* The E2B API has no host directory mounts (its volumeMounts name volumes
 * of its own): a workspace cannot be given, so the session is refused
 * rather than created without its persistent files. */
#define E2B_NO_WORKSPACE                                                   \
  "spec.workspace: the sandbox service speaks the E2B dialect, which has "  \
  "no host directory mounts (Cube's host-mount metadata); remove "        \
  "spec.workspace or use spec.volumeMounts with an E2B volume"

/* Cube's dialect probe got no answer (Cube down at start, say): a
 * workspace is held until one comes, rather than created where E2B would
 * drop it; the probe is asked again at every full pass (reconciler.c) */
#define DIALECT_UNKNOWN_WORKSPACE                                          \
  "spec.workspace: waiting for Cube's dialect (its probe has not "        \
  "answered; see the log): a workspace needs Cube's host mounts, which "   \
  "the E2B dialect lacks"

/* Objects from the store meet the manifest rules here (rule: validated
 * before the controller acts): written straight to the API server or the
 * SQLite file, they never met sessionctl's. An array of n reasons (NULL:
 * valid), or NULL when every object is valid (or out of memory: then the
 * planner sees all as valid, as before this check existed, and the
 * decoders' own checks still hold). A newly invalid object is logged once
 * (its stored Ready says InvalidSpec afterwards). Cost: about 0.3 us an
 * object, validated again every pass (docs/controller.md). */
char **loop_check_objects(logger *lg, metrics *mt, session *const *ss,
                          size_t n, cube_dialect dialect,
                          bool dialect_unanswered)
{
  char **why = NULL;
  size_t i, bad = 0;
  for(i = 0; i < n; i++) {
    char *m = session_invalid_reason(ss[i]);
    if(!m && dialect == CUBE_DIALECT_E2B && ss[i]->spec.workspace_mount_path)
      m = strdup(E2B_NO_WORKSPACE);
    else if(!m && dialect_unanswered && ss[i]->spec.workspace_mount_path)
      m = strdup(DIALECT_UNKNOWN_WORKSPACE);
    const session_condition *c;
    if(!m)
      continue;
    if(!why && !(why = calloc(n, sizeof(*why)))) {
      free(m);
      return NULL;
    }
    why[i] = m;
    bad++;
    c = session_status_get_condition(&ss[i]->status, "Ready");
    if(!c || (!sc_str_eq0(c->reason, "InvalidSpec") &&
              !sc_str_eq0(c->reason, "PolicyDenied")))
      log_kv(lg, LOG_WARN, "session is invalid: nothing is done for it "
             "until it is fixed", "session", ss[i]->meta.name, "namespace",
             session_eff_namespace(ss[i]), "error", m, NULL);
  }
  if(n > 1 || bad) /* full passes (and a bad single one) set the gauge */
    metrics_set(mt, "session_controller_sessions_invalid", NULL,
                (double)bad);
  return why;
}

/* The namespaces of the objects a list skipped (pointers into it), whose
 * tenant's orphans the planner holds. *all: they cannot be narrowed (an
 * object with no namespace, or out of memory): hold every orphan. */
const char **loop_held_tenants(const store_list_result *l, size_t *n,
                               bool *all)
{
  const char **v;
  size_t i;
  *n = 0;
  *all = false;
  if(!l->n_skipped)
    return NULL;
  if(!(v = calloc(l->n_skipped, sizeof(*v)))) {
    *all = true;
    return NULL;
  }
  for(i = 0; i < l->n_skipped; i++) {
    if(!l->skipped[i].ns)
      *all = true;
    else
      v[(*n)++] = l->skipped[i].ns;
  }
  return v;
}

void loop_free_invalid(char **why, size_t n)
{
  size_t i;
  for(i = 0; why && i < n; i++)
    free(why[i]);
  free(why);
}
