/*
 * pass.h - internal to controller/loop/: the reconciler's state and a
 * pass, shared by reconciler.c (public API), pass.c (the pass driver),
 * pump.c (the queue, the timers, the store's identity) and watch.c (the
 * store watch).
 *
 * A unit of work is a "pass": either a full pass over every session, or a
 * single-session pass for one key of the work queue. Both run the same
 * three phases:
 *
 *   OBSERVE  store list/get; Cube lists (running, paused) filtered by our
 *            tags; Cube's clock from the Date header (controller/observe).
 *   PLAN     plan_compute() (controller/plan), pure.
 *   ACT      the executor runs the actions through Cube (controller/act)
 *            and the status writer writes each session's status once, by
 *            compare-and-set (controller/status); each session's turn
 *            ends in one loop_result (result.h) for the queue.
 *
 * A full pass never overlaps single-session passes, so one session is never
 * acted on twice at once by this replica; other replicas are kept safe by
 * the rules themselves.
 *
 * Every store call is asynchronous (store_*_async): a store on the network
 * (kube) never stops the loop.
 *
 * Ownership: a pass is owned by the reconciler from pass_new() until
 * pass_finish() frees it; every callback of the pass ends in
 * pass_finish() exactly once.
 */
#ifndef SC_LOOP_PASS_H
#define SC_LOOP_PASS_H

#include "controller/act/run.h"
#include "controller/loop/intent_seen.h"
#include "controller/loop/queue.h"
#include "controller/loop/reconciler.h"
#include "controller/observe/observe.h"

#define MAX_SINGLE_PASSES 16
#define BURST_TO_FULL_PASS 32 /* ready keys that make a full pass cheaper */
#define HEARTBEAT_MS 1000

#include <event2/util.h>

struct event;

enum pass_phase { PH_OBSERVE, PH_ACT, PH_DONE };

typedef struct pass {
  reconciler *r;
  bool full;
  char *key;             /* single pass: "ns/name" */
  enum pass_phase phase;
  int64_t t0;            /* monotonic start */

  store_list_result list;/* the sessions (full) or one (single) */
  session *single;
  session **served;      /* --share-work: the sessions of this replica's
                            share, whose links the observation GETs */
  size_t n_served;

  observation *obs;      /* Cube as seen by this pass */
  char *fail_msg;
  int64_t retry_after_ms;
  sc_time cube_now;

  plan *p;
  bool skipped_lists;    /* a new session's pass: no Cube list (pass.c) */
  bool by_link;          /* a single pass observing by its link's GET */
  bool acting;           /* run is initialised */
  char res_name[24];     /* reconcile_total: the result being counted */
  double res_n;          /* and how many sessions ended with it so far */
  act_run run;           /* the executor's run of p */
} pass;

struct reconciler {
  reconciler_opts o;
  work_queue *q;
  struct event *heartbeat;
  struct event *resync;
  struct event *qtimer;
  struct reflector *refl; /* the store's list + watch (store/reflector.h) */
  bool stopping;
  bool ready;
  bool done;
  bool failed;         /* --once: the pass did not complete */
  bool full_pending;
  /* the last full pass held creates for --max-running-per-tenant: then a
   * session deleted or changed may free a slot, and asks for a full pass
   * (only a full pass counts a tenant's sandboxes) */
  size_t quota_waiting;
  pass *full;
  int singles;
  int64_t last_beat;
  int64_t last_full_done;
  bool store_ok;
  bool cube_key_refused; /* Cube answered 401/403 to every recent call */
  char last_fail_why[SC_ERRBUF_SIZE + 80]; /* the last full pass's failure */
  cube_dialect dialect;
  bool probing;        /* a dialect probe is in flight (reconciler.c) */
  bool probed;         /* the first probe has answered: full passes wait
                          for it, so the first plan knows the dialect */
  bool probe_failed;   /* the last probe got no answer (Cube down): asked
                          again at each full pass; workspaces wait */
  char identity[96];    /* status.createIntent.by: replica#random */
  recorder rec;        /* events (kube store); none by default */
  bool follower;       /* leader election: not the leader, do not act */
  plan_scratch *scratch; /* the planner's arrays, kept across passes */
  act_cube cube;       /* the executor's Cube calls: the real client */
  act_env env;         /* the executor's environment, for every pass */
  act_health health;   /* whether the store takes writes (act/intent.c) */
  /* while it fails: when the write probe last committed (0: none to wait
   * for), the store write failures counted then, and whether a full pass
   * was in flight then (its end does not count) (pump.c) */
  int64_t probe_ok_mono;
  double probe_ok_fails;
  bool probe_ok_inflight;
  /* Cube's clock as last observed, and when (local monotonic): the
   * estimate a pass that skips Cube's lists starts from (pass.c) */
  sc_time cube_seen;
  int64_t cube_seen_mono;
  /* Keys of objects the watch reported ADDED after the first full pass
   * (created while this process watched): only their first pass may skip
   * Cube's lists (pass.c). A ring; a full one just forgets (they list). */
  char (*fresh)[300];
  size_t n_fresh, fresh_head;
  struct loop_shard *shard; /* sharding (shard_loop.h) */
  /* Keys whose single pass found another replica's live create claim
   * and waited for it without a Cube call (pass.c): when the claim's
   * owner has linked its sandbox meanwhile, the next pass of the key has
   * nothing to do. A ring of its own in the same allocation as `fresh`
   * (slots FRESH_MAX.. of it); a full one forgets (those keys list). */
  size_t n_waits, waits_head;
  act_ledger orphans_done;  /* the brakes' windows (act/ledger.c) */
  act_ledger reclaims_done;
  intent_seen *intent_seen; /* rule 11: intents' ages (intent_seen.h) */
  /* where a full pass's actions start (act_run.rotate): this process's
   * own seed, turned each full pass */
  uint64_t act_seed, full_passes;
  /* store_check_identity() failed: no pass starts (store_still_ours) */
  bool store_lost;
  char store_lost_why[SC_ERRBUF_SIZE];
};

/* pass.c */
void loop_start_full(reconciler *r);
/* the Cube dialect probe: at start, then again while the last one got no
 * answer (none while one is in flight; reconciler.c) */
void loop_probe_dialect(reconciler *r);
/* the watch saw key ADDED (watch.c): its first pass may skip the lists */
void loop_note_fresh(reconciler *r, const char *key);
void loop_start_single(reconciler *r, const char *key);

/* pump.c: start what the queue and the flags ask for; the timers */
void loop_pump(reconciler *r);
bool rule13_store_still_ours(reconciler *r);
void loop_check_cube_key(reconciler *r);
void loop_on_qtimer(evutil_socket_t fd, short what, void *arg);
void loop_on_resync(evutil_socket_t fd, short what, void *arg);
void loop_on_heartbeat(evutil_socket_t fd, short what, void *arg);

/* watch.c: the store watch through a reflector (relist and backoff are
 * the reflector's); new at reconciler_new, started at reconciler_start */
sc_err loop_watch_new(reconciler *r, sc_errbuf *eb);
void loop_watch_start(reconciler *r);

#endif
