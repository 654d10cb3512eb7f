/*
 * shard_loop.h - internal to controller/loop/: the reconciler's side of
 * sharding (docs/controller.md, "Sharding"). The membership is renewed in
 * the store at start and every resync (store/members.h) and folded into a
 * view (shard.h); passes keep only the sessions and sandboxes of the
 * tenants this replica owns; watch events of other tenants are dropped.
 *
 * With --shards off every call here is a no-op that owns everything.
 *
 * Ownership: loop_shard_new() makes r->shard for loop_shard_free(); the
 * sessions a full pass does not own are held here until the pass's
 * observation is filtered (or the next pass, or the free), with the
 * pass's frozen view and the tenants it owns; the frozen view of the last
 * pass whose lists came back is kept (for the takeover pass, shard.h)
 * until the next such pass or the free.
 */
#ifndef SC_LOOP_SHARD_LOOP_H
#define SC_LOOP_SHARD_LOOP_H

#include "controller/loop/pass.h"

typedef struct loop_shard loop_shard;

sc_err loop_shard_declare_metrics(metrics *m);
/* After make_identity(): the member ID is r->identity. */
sc_err loop_shard_new(reconciler *r, sc_errbuf *eb);
void loop_shard_free(loop_shard *sh);
/* The first renewal (the first full pass waits for its answer). */
void loop_shard_start(reconciler *r);
/* Leave: this replica's row is removed, the others take its share. */
void loop_shard_stop(reconciler *r);

/* A full pass must wait: the first membership answer has not come. */
bool loop_shard_wait(reconciler *r);
/* The next full pass looks at every owned tenant (a resync, a burst, the
 * store back): not a takeover pass (shard.h). */
void loop_shard_want_all(reconciler *r);
/* Is s (its effective tenant) this replica's? */
bool loop_shard_owns(reconciler *r, const session *s);
/* A full pass's store read: keep the owned sessions (the others are held
 * for the next call, which needs their links). */
void loop_shard_filter_list(reconciler *r, store_list_result *list);
/* After loop_shard_filter_list: how the pass lists Cube (shard.h,
 * "What a sharded full pass lists"): each state whole, or one list per
 * owned tenant where that costs fewer requests, and whole at least every
 * --shard-whole-list-every. out->tenants point into the pass's sessions.
 * Unsharded, owning every tenant, or out of memory: each state whole. */
void loop_shard_lists(reconciler *r, observe_lists *out);
/* The full pass's observation: keep the sandboxes of owned tenants and
 * those linked by owned sessions; drop those linked by other replicas'
 * sessions (not orphans: their owner sees them). */
void loop_shard_filter_obs(reconciler *r, observation *obs);

/* --shards off with --share-work (reconciler_opts.share_work): the
 * members are kept in the store as with auto, every full pass plans the
 * whole store and the whole of Cube's lists (the rules' counts, the
 * capacity and the quota see every tenant whole), and acts only for the
 * sessions the hash of (tenant, session ID) over the pass's frozen view
 * of the live members gives this replica (orphans: by their sandbox ID);
 * watch events and single passes of the others end without a Cube call
 * (loop_shard_owns). Alone, blind (no membership read) or out of memory:
 * everything is served here. loop_shard_sharing: the pass in flight
 * serves a share only; the others answer for it. */
bool loop_shard_sharing(const reconciler *r);
bool loop_shard_serves(const reconciler *r, const session *s);
/* act_run.serves_orphan; ud is the reconciler */
bool loop_shard_serves_orphan(const plan_action *a, void *ud);

#endif
