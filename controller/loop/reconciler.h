/*
 * reconciler.h - the reconcile loop (docs/architecture.md "Safety rules"): observe the
 * store and Cube, plan (pure), act through the Cube client, write status
 * back by compare-and-set.
 *
 * Triggers: a full pass every resync; store watch events reconcile one
 * session at once; a per-session timer for the next due time the planner
 * reports (reclaim, keep-alive); failures back off per session.
 *
 * Ownership: reconciler_new() borrows everything in the opts (they must
 * outlive it) and returns a reconciler for reconciler_free() (NULL ok).
 * All work runs on opts->base; nothing blocks except the store's local
 * calls.
 */
#ifndef SC_RECONCILER_H
#define SC_RECONCILER_H

#include <stdbool.h>
#include "controller/act/audit.h"
#include "controller/cube/cube.h"
#include "controller/ops/log.h"
#include "controller/ops/metrics.h"
#include "controller/plan/plan.h"
#include "controller/status/recorder.h"
#include "controller/store/store.h"

struct event_base;
typedef struct reconciler reconciler;

typedef struct reconciler_opts {
  struct event_base *base;
  store *st;
  cube_client *cube;
  logger *lg;
  metrics *m;          /* may be NULL */
  audit *au;           /* may be NULL */
  plan_config plan;
  const char *replica;
  int64_t resync_ms;
  bool dry_run;
  bool once;           /* one full pass, then reconciler_done() is true */
  const char *shards;  /* --shards: "off" (NULL), "auto", N (loop/shard.h) */
  const char *shard_index; /* --shard-index with --shards N; NULL: none */
  int64_t shard_whole_list_ms; /* sharded: a whole list at least this often (0: always) */
  /* --shards off: split the acting by session among the members
   * registered in the store (--share-work; shard_loop.h) */
  bool share_work;
} reconciler_opts;

reconciler *reconciler_new(const reconciler_opts *opts, sc_errbuf *eb);
void reconciler_free(reconciler *r);

/* Probe Cube's dialect, start the watch and the first full pass. */
sc_err reconciler_start(reconciler *r, sc_errbuf *eb);
/* Stop taking new work; in-flight calls finish. */
void reconciler_stop(reconciler *r);
/* Nothing in flight (after stop, or after a --once pass). */
bool reconciler_idle(const reconciler *r);
/* A --once pass ended: completed with its actions, or failed (then
 * reconciler_failed() is true; --once does not retry). */
bool reconciler_done(const reconciler *r);
bool reconciler_failed(const reconciler *r);

/* Report action outcomes and refusals to rec (copied; NULL: none, only
 * log lines). Set before reconciler_start(). */
void reconciler_set_recorder(reconciler *r, const recorder *rec);
/* Leader election: a non-leader keeps its watch and runs full passes that
 * observe (so /readyz and the gauges stay true) but plans no actions,
 * writes no status and starts no single-session pass. Becoming leader
 * starts a full pass. Default: leader (no election). */
void reconciler_set_leader(reconciler *r, bool leader);
/* The tenant policy (api/policy.h, borrowed: the caller keeps it alive
 * until the next call or reconciler_free()). Set before
 * reconciler_start() through opts->plan.policy; a reload sets the new
 * one here, and a full pass starts. */
struct policy;
void reconciler_set_policy(reconciler *r, const struct policy *p);

/* For /readyz: the store answered, a first full pass completed, and the
 * store is still the one opened (store_check_identity, checked before
 * every pass and every second). */
bool reconciler_ready(const reconciler *r);
/* Why the store takes no writes (no pause, delete or create goes to
 * Cube meanwhile: rule 11), or NULL. */
const char *reconciler_store_writes_failing(const reconciler *r);
/* Why the store is not the one opened (no pass starts), or NULL. */
const char *reconciler_store_lost(const reconciler *r);
/* Why Cube's answers say the API key is refused, or NULL. */
const char *reconciler_cube_key_refused(const reconciler *r);
/* Why no full pass has completed for over 10 resync periods (after the
 * first one did), with the last failure, or NULL. /readyz says it;
 * /healthz does not fail for it (the loop turns). */
const char *reconciler_passes_failing(const reconciler *r);
/* For /healthz: the loop turned recently. *why explains a failure. */
bool reconciler_healthy(const reconciler *r, const char **why);

/* Declare the session_controller_* metric families on m. */
sc_err reconciler_declare_metrics(metrics *m);

#endif
