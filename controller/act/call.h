/*
 * call.h - internal to controller/act/: one action in flight, and the one
 * exit every action leaves by (act_end), shared by the executor
 * (exec.c), the delete with its confirmations (delete.c) and the create
 * claim (claim.c).
 *
 * Ownership: an act_call is calloc'd by act_start_action() and freed by
 * act_end(), which every path reaches exactly once.
 */
#ifndef SC_ACT_CALL_H
#define SC_ACT_CALL_H

#include "controller/act/run.h"

typedef struct act_call act_call;
typedef void (*act_then_fn)(act_call *c);

struct act_call {
  act_run *run;
  size_t si;             /* the plan index of the session, or (size_t)-1 */
  const plan_action *a;
  int stage;             /* 0 confirm GET / first call, 1 the mutation */
  int64_t t0;
  cube_op op;
  char observed_state[16];
  char tenant_seen[129];
  int get_status;        /* the confirming GET's HTTP status */
  bool intent;           /* its status.pendingAction is written */
  int64_t intent_mono;   /* when (this process's monotonic clock) */
  act_then_fn then;      /* intent.c: the call once the intent is written */
};

/* How an action ended. */
typedef enum act_result {
  ACT_DONE,        /* it took effect (or was already so) */
  ACT_GONE,        /* a delete whose confirming GET found no sandbox */
  ACT_FAILED,      /* Cube (or the client) failed it */
  ACT_SKIPPED,     /* a confirmation withheld it (rule 3) */
  ACT_DRY_RUN,     /* --dry-run: not called */
  ACT_NOT_STARTED  /* ended before any Cube call (a claim, a wait) */
} act_result;

typedef struct act_outcome {
  act_result res;
  int http_status;        /* Cube's answer; 0: none */
  const char *msg;        /* the log line's detail, the event's message */
  const char *audit_msg;  /* the audit line's message (NULL: none) */
  const char *new_id;     /* create: the new sandbox */
  int64_t retry_after_ms; /* look again after this (-1: the backoff) */
  const char *count_as;   /* ACT_NOT_STARTED: the actions_total result */
  const char *domain;     /* create: the domain Cube answered (or NULL) */
} act_outcome;

/* The one exit (rule 10 lives here): audits every delete and pause
 * whatever the outcome, counts, records, logs, folds a success into the
 * session's status, ends the session's turn after its last action, and
 * frees c. */
void act_end(act_call *c, const act_outcome *o);

/* Shorthands of act_end for the common outcomes. */
void act_fail(act_call *c, int http_status, const char *msg,
              int64_t retry_after_ms);
void act_skip(act_call *c, int http_status, const char *audit_msg,
              const char *msg);
void act_not_started(act_call *c, const char *count_as,
                     int64_t retry_after_ms);

void act_log(const act_run *run, const plan_action *a, log_level lvl,
             const char *msg, const char *detail);

/* cube callback of every mutation (exec.c) */
void act_on_mutation(const cube_result *res, void *ud);

/* delete.c: the confirming GET's answer */
void act_on_delete_confirm(const cube_result *res, void *ud);

/* intent.c (rule 11): write a's intent (status.pendingAction, by
 * compare-and-set on the session's version), then call then(c); a write
 * that fails ends the action with no call. An orphan has no object: its
 * intent is an audit line written before the call, and it goes only while
 * the store takes writes. */
void rule11_intent_written(act_call *c, act_then_fn then);

/* claim.c: a create (the claim first, then the call); a create's answer */
void act_create_start(act_call *c);
void act_create_answered(act_call *c, const cube_result *res);

#endif
