/*
 * run.h - one plan being carried out: the executor's run (act/exec.c),
 * shared with the status writer (act/status.c) and the loop
 * (loop/pass.c), which owns it inside a pass.
 *
 *   act_run_init()  takes a plan, sizes one act_sess per plan session
 *   act_run_start() adds the store's finalizer to each live session that
 *                   lacks it (kube: a deletion then waits for the
 *                   sandbox), writes the adopted links (status/), starts
 *                   every action (act/); each session whose actions have
 *                   all ended gets its status written once (status/),
 *                   then run->session_end(); when nothing is in flight any
 *                   more, run->finished()
 *   act_run_clear() frees what the run holds (not the plan)
 *
 * A session's status during the run is act_run_status(): the plan's
 * (a view, not copied) until an effect must be folded into it; then a copy
 * the run owns (act_sess.own). Only the statuses that change are copied.
 *
 * Ownership: the env and everything it points to is borrowed and must
 * outlive the run; the plan and the sessions too. act_run_clear() (NULL
 * ok) frees the per-session state and the index, never the plan.
 */
#ifndef SC_ACT_RUN_H
#define SC_ACT_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include "controller/act/audit.h"
#include "controller/act/cube.h"
#include "controller/ops/log.h"
#include "controller/ops/metrics.h"
#include "controller/plan/plan.h"
#include "controller/status/recorder.h"
#include "controller/store/store.h"

struct sc_hmap;
typedef struct act_claims act_claims; /* act/claim.c */

/* Whether the store takes writes, as this process's writes found it
 * (act/intent.c). A write that fails for another reason than a conflict
 * or a gone object (a full disk, a read-only file, the API server
 * refusing) makes it failing; the next write that works makes it well.
 * While it fails, no destructive call goes out: the intents cannot be
 * written, and an orphan (whose intent has no object to live in) is not
 * deleted either; /readyz says why. Owned by the reconciler. */
typedef struct act_health {
  bool failing;
  char why[256];         /* the last failed write's error */
  int64_t since_mono;    /* when it began failing (local monotonic) */
} act_health;

/* The deletions this process made, by Cube's clock (act/ledger.c): a
 * ring per kind, for the brakes' windows (plan_input.recent_*). Owned by
 * the reconciler; act_ledger_clear() frees it (NULL ok). */
#define ACT_LEDGER_MAX 65536
typedef struct act_ledger {
  sc_time *at;
  size_t head, n;
} act_ledger;
void act_ledger_note(act_ledger *l, sc_time at);
size_t act_ledger_count(const act_ledger *l, sc_time now, int64_t window_ms);
void act_ledger_clear(act_ledger *l);

/* What the executor works with, the same for every run of a reconciler. */
typedef struct act_env {
  const act_cube *cube;
  store *st;
  logger *lg;
  metrics *m;            /* may be NULL */
  audit *au;             /* may be NULL */
  const plan_config *plan;
  const recorder *rec;
  const char *replica;   /* for the audit lines */
  const char *identity;  /* status.createIntent.by of this process */
  int64_t resync_ms;     /* a refused create is tried once per resync */
  bool dry_run;
  const bool *stopping;  /* true after SIGTERM: no action starts */
  act_claims *claims;    /* act_claims_new() */
  act_health *health;    /* the reconciler's; may be NULL (tests) */
  act_ledger *orphans_done;  /* the reconciler's; may be NULL */
  act_ledger *reclaims_done; /* the reconciler's; may be NULL */
} act_env;

/* One plan session's turn in the run. */
typedef struct act_sess {
  session_status st;     /* the status with the effects so far, when own */
  bool own;              /* st is a copy the run owns (else: the plan's) */
  bool broken;           /* a copy failed: the status is unknown, nothing
                            is written for this session this pass */
  bool held;             /* the store's finalizer could not be added, or
                            its early link write lost: no action and no
                            write this pass (also broken) */
  bool conflict;         /* held for a lost compare-and-set: its turn ends
                            as a conflict (looked at again at once) */
  bool elsewhere;        /* another replica serves it (the loop's
                            --share-work): no finalizer, link, action or
                            write here; its turn ends "elsewhere" */
  int pending;           /* actions not finished (+1 while starting) */
  bool failed;
  bool has_confirm;
  int64_t retry_after_ms;
  bool wants_write;
  bool destructive;      /* a pause or delete of it started this run
                            (one per session and run: one intent) */
  char *created;         /* the sandbox a create of this run made */
  char *rv;              /* after an early write: the version it made */
  session_status stored; /* after an early write: the status it wrote */
} act_sess;

typedef struct act_run act_run;

/* session si's turn ended: its status written (or not). result is the
 * reconcile_total label ("ok", "error", "conflict"); conflict: the write
 * lost a compare-and-set, the session must be looked at again now. */
typedef void (*act_session_end_fn)(act_run *run, size_t si,
                                   const char *result, bool conflict);
typedef void (*act_finished_fn)(act_run *run);

struct act_run {
  const act_env *env;
  plan *p;
  act_sess *sess;        /* one per plan session */
  struct sc_hmap *index; /* session pointer -> plan index; NULL: none */
  sc_time cube_now;
  int64_t start_mono;    /* local monotonic ms at act_run_init: a create's
                            endAt estimate adds the time since (fold) */
  int pending;           /* calls and store writes in flight */
  int early;             /* link writes in flight before the actions */
  act_session_end_fn session_end;
  act_finished_fn finished;
  void *ud;              /* the loop's (its pass) */
  /* Where the actions start (set before act_run_start; 0: the plan's
   * order): the sessions' actions in plan order from the session at
   * rotate % (actions but orphans), round to the first, orphans last.
   * Every action is queued at once and Cube's token bucket serves them in
   * that order, so a fixed order serves the same sessions last every
   * pass; a replica killed or a pass cut short before the tail never
   * reaches it, and replicas that plan alike work the same sessions at
   * the same time. The loop turns it each full pass (pass.c). */
  uint64_t rotate;
  /* Set before act_run_start, or NULL (every orphan is this run's): does
   * this replica serve orphan action a? Sessions another replica serves
   * are marked act_sess.elsewhere instead (the loop's --share-work). */
  bool (*serves_orphan)(const plan_action *a, void *ud);
  void *serves_ud;
};

sc_err act_run_init(act_run *run, const act_env *env, plan *p,
                    sc_time cube_now);
void act_run_start(act_run *run);
void act_run_clear(act_run *run);

/* The plan index of the session an action belongs to, by identity (a
 * tombstone and a re-created object may share namespace/name), or
 * (size_t)-1 (orphans). Constant time: a hash of the pointer. */
size_t act_run_find(const act_run *run, const session *s);

/* The status of session si as it stands in this run. */
const session_status *act_run_status(const act_run *run, size_t si);

/* A store write of the run ended (err SC_OK or not): act_health is
 * kept by it (act/intent.c). */
void act_health_note(const act_env *env, sc_err err, const char *msg);
/* Why the store is not taking writes, or NULL. */
const char *act_health_failing(const act_health *h);

/* One call or write of the run ended: finished() when it was the last. */
void act_run_release(act_run *run);

#endif
