/*
 * recorder.h - what the reconciler reports as events: a small interface
 * (a function and its userdata) the reconciler calls when an action
 * completes or is refused, plus the pure mapping from action outcomes and
 * plans to event reasons (docs/deploy.md "Events" lists them).
 *
 * With the kube store, controller/kubeclient/events.c implements the interface (Kubernetes
 * Events); with the SQLite store no recorder is set and the same reasons
 * only reach the log.
 *
 * Ownership: a recorder is plain data, borrowed; the callee copies what it
 * keeps (the session and the strings are valid only during the call).
 * The session may be NULL for an event about no Session (the delete
 * guard); the callee may drop those.
 */
#ifndef SC_RECORDER_H
#define SC_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include "api/session.h"
#include "controller/ops/log.h"
#include "controller/plan/plan.h"

typedef enum recorder_type { RECORDER_NORMAL, RECORDER_WARNING }
  recorder_type;

typedef void (*recorder_fn)(void *ud, const session *s, recorder_type type,
                            const char *reason, const char *message);

typedef struct recorder {
  recorder_fn record;   /* NULL: no recorder (log only) */
  void *ud;
} recorder;

const char *recorder_type_name(recorder_type t); /* "Normal", "Warning" */

/* The reason and type of an action's outcome, or NULL when it has none
 * (a confirm GET; an orphan: no Session). skipped: a delete the
 * confirming GET withheld. */
const char *recorder_action_reason(const plan_action *a, bool ok,
                                   bool skipped, recorder_type *type);

/* The event message of that outcome into buf (detail: the Cube message or
 * why it was skipped; new_id: the created sandbox). */
void recorder_action_message(const plan_action *a, bool ok, bool skipped,
                             const char *new_id, const char *detail,
                             char *buf, size_t len);

/* Report an action's outcome: to rec when set, and a log line (info
 * without a recorder, debug with one). */
void recorder_note_action(const recorder *rec, logger *lg,
                          const plan_action *a, bool ok, bool skipped,
                          const char *new_id, const char *detail);

/* Report what a new plan shows beside actions: a session entering a
 * Conflict (TenantConflict, SandboxConflict) and a tripped delete guard
 * (DeleteGuardTripped, no session). */
void recorder_note_plan(const recorder *rec, logger *lg, const plan *p);

#endif
