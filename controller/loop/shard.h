/*
 * shard.h - splitting the sessions between replicas (docs/controller.md,
 * "Sharding"): which replica plans and acts for which tenant. Pure: no
 * I/O and no clock (the caller passes the local monotonic time).
 *
 * A tenant belongs to one member of a list by rendezvous (highest random
 * weight) hashing: each member scores the tenant with a fixed hash of
 * (member, tenant), the highest score owns it (a tie: the lowest member
 * ID). The hash is FNV-1a over the bytes with a splitmix64 finaliser, so
 * it is the same on every host whatever its byte order. When a member
 * leaves, only its tenants move (to whichever member scores next); when
 * one joins, it takes about 1/N of every other member's tenants and
 * nothing else moves.
 *
 * Sharding only saves work: any overlap (two replicas that both believe
 * they own a tenant) is safe by the rules of docs/architecture.md "Safety
 * rules" (claims and intents by compare-and-set); a gap (a tenant nobody
 * owns) only delays. So a view that cannot be read owns everything.
 *
 * The membership view: the members the store lists (each with a version
 * that changes at every renewal and the period it renews at). A member is
 * live while this replica has seen its version change within
 * SHARD_EXPIRY_HALF_PERIODS halves of that member's period of local
 * monotonic time;
 * its clock, and the store's timestamps, are never compared with ours. A
 * member first seen counts as live (it just renewed, or it expires after
 * the same time), and so does every member at the first read after a
 * failed one (a store that took no writes stopped every renewal). This
 * replica is always live in its own view.
 *
 * Ownership: shard_view_new() copies self; shard_view_free() accepts
 * NULL. Strings given to the functions are only read.
 */
#ifndef SC_LOOP_SHARD_H
#define SC_LOOP_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/sc_err.h"

/* A member whose version has not moved for this many halves of its
 * renewal period (local monotonic time) is no longer live: 2.5 periods. A
 * live member's version moves once a period, and a reader renewing at
 * about the same period sees it move at least every second read, with
 * drift; the half makes the third read after a dead member's last
 * renewal the one that drops it (a whole third period could make it the
 * fourth, read at 3 periods less a little jitter). */
#define SHARD_EXPIRY_HALF_PERIODS 5
/* A replica renews this many times a resync (at least every
 * SHARD_RENEW_MIN_MS): a dead member then expires after 2.5 quarters of
 * a resync and is dropped by the third read, at most 3/4 of a resync
 * after its last renewal, and the survivors' full pass that follows at
 * once takes its tenants: within two resyncs of the death, as the design
 * promises ("within two resyncs"), with a resync's margin for a slow
 * pass. Cost: four small SQLite transactions a resync per replica. */
#define SHARD_RENEWS_PER_RESYNC 4
#define SHARD_RENEW_MIN_MS 100
/* An expired member is removed from the store after this many more
 * expiry times (by compare-and-set on the version it was last seen at, so
 * one that renewed meanwhile stays). 0: at once, so that a replica that
 * starts later never counts a dead member live (it cannot tell a stale
 * row from a fresh one at its first read); a removed replica that was
 * only slow puts its row back at its next renewal, and is live again. */
#define SHARD_PRUNE_EXPIRIES 0

typedef enum shard_mode {
  SHARD_OFF,    /* every replica owns every tenant (the default) */
  SHARD_AUTO,   /* the live members registered in the store */
  SHARD_STATIC  /* --shards N --shard-index I: fixed members "0".."N-1" */
} shard_mode;

#define SHARD_STATIC_MAX 1024

/* Parse --shards ("off", "auto", or N in 1..SHARD_STATIC_MAX; NULL:
 * off) with --shard-index (NULL: not given; required with N, a number in
 * 0..N-1, into *index; refused otherwise). */
sc_err shard_parse(const char *shards, const char *index, shard_mode *mode,
                   int *n, int *index_out, sc_errbuf *eb);

/* The weight of tenant for member: the same on every host. */
uint64_t shard_score(const char *member, const char *tenant);
/* The index of tenant's owner among members[0..n-1] (n > 0); NULL
 * tenant is "". */
size_t shard_owner(const char *const *members, size_t n, const char *tenant);

/* A member as the store lists it (store/members.h fills these). */
typedef struct shard_member_in {
  const char *id;
  const char *version;  /* changes at every renewal */
  int64_t period_ms;    /* its renewal period (> 0) */
} shard_member_in;

typedef struct shard_view shard_view;

/* mode SHARD_OFF: owns everything. SHARD_STATIC: members "0".."n-1",
 * self the index. SHARD_AUTO: self is the replica's member ID; until the
 * first shard_view_update (and after shard_view_fallback) it owns
 * everything. NULL when out of memory. */
shard_view *shard_view_new(shard_mode mode, const char *self, int n,
                           int index);
void shard_view_free(shard_view *v);

/* Fold in a read of the membership (any order, self may be missing)
 * taken at now_mono. true when the set of live members changed. SC_ERR_
 * NOMEM leaves the view as it was. */
sc_err shard_view_update(shard_view *v, const shard_member_in *ms, size_t n,
                         int64_t now_mono, bool *changed);
/* The membership cannot be read: own everything until the next update.
 * true when that is a change. */
bool shard_view_fallback(shard_view *v);
/* A read failed at now_mono: the last view stands while its read is
 * younger than grace_ms, then shard_view_fallback (true when that is a
 * change). While every replica's store fails (a read-only or full disk)
 * nothing can be acted on anyway (no intent, no create); owning every
 * session then only made each replica's failing passes N times the
 * work, and the same when it read again. A replica blind for longer
 * owns everything, as before. Either way every member's expiry starts
 * again at the next read (nobody could renew meanwhile). */
bool shard_view_blind(shard_view *v, int64_t now_mono, int64_t grace_ms);
/* The grace of the loop (shard_loop.c), in resyncs: longer than a store
 * that takes no writes for a while (the chaos run's 3-6 s at --resync 2s),
 * and a replica blind alone is seen to expire by the others, who take its
 * share (an overlap, safe), while it keeps its own. */
#define SHARD_BLIND_RESYNCS 5
/* No read yet (auto), or the last one failed. */
bool shard_view_falling_back(const shard_view *v);

bool shard_view_owns(const shard_view *v, const char *tenant);
/* Live members (1 when owning everything without sharding). */
size_t shard_view_live(const shard_view *v);
/* The i-th live member, sorted (NULL past the end). */
const char *shard_view_member(const shard_view *v, size_t i);

/* Members expired for SHARD_PRUNE_EXPIRIES more expiry times as of the
 * last update: ids[i]/versions[i] point into the view (valid until the
 * next update); at most max. */
size_t shard_view_prunable(const shard_view *v, const char **ids,
                           const char **versions, size_t max);

/* ------------------------------------------------------------------ */
/* One pass's ownership, frozen: the live members and self as they were
 * when the pass read the store, so that its sessions, its lists and its
 * sandboxes are all split by the same view however the membership moves
 * meanwhile. NULL view (or out of memory: NULL result) owns everything. */

typedef struct shard_owners shard_owners;

shard_owners *shard_view_freeze(const shard_view *v);
void shard_owners_free(shard_owners *o);
bool shard_owners_owns(const shard_owners *o, const char *tenant);
/* 1 when owning everything */
size_t shard_owners_live(const shard_owners *o);

/* ------------------------------------------------------------------ */
/* A takeover pass (docs/controller.md, "Sharding", "Changes"): the full
 * pass after the ownership moved looks at the tenants it gained only,
 * when every other tenant it owns was looked at by the passes before it
 * (`covered`: the view of the last pass whose lists came back; it and
 * the passes before covered each of its tenants), the pass before it was
 * not a takeover pass itself (so a tenant kept is skipped by one pass at
 * most, however often the membership moves), and nothing asked for a
 * look at everything since (a burst whose keys it dropped, the store
 * back). */

/* tenant is owned by now and was not by covered (covered NULL: nothing
 * is known to have been looked at, so nothing counts as gained) */
bool shard_owners_gained(const shard_owners *now, const shard_owners *covered,
                         const char *tenant);
/* May the next full pass be a takeover pass? */
bool shard_takeover_allowed(bool covered_known, bool last_was_takeover,
                            bool everything_asked);

/* ------------------------------------------------------------------ */
/* What a sharded full pass lists (docs/controller.md, "Sharding"): for
 * each state, Cube's whole list (our lea.managed-by tag), or one list per
 * tenant this replica owns a session of (the tag and lea.tenant_id=T:
 * Cube's metadata filter is an AND of exact matches), whichever costs
 * fewer requests as the last lists showed.
 *
 * The cost of a state's whole list is the requests its last whole list
 * took; of its lists by tenant, the sum over the owned tenants of the
 * pages each would take by its row count in the last list that covered
 * it (a server that pages: max(1, ceil(rows / page_rows)); one that does
 * not, Cube: 1 each), times the names listed (--adopt-from). A tenant
 * never seen counts one page. Cube answers a whole list in one request,
 * so there the whole list stays; E2B pages by 100 rows, so at 10,000
 * sandboxes a whole list is 100 requests and 33 owned tenants of 100
 * rows are 33.
 *
 * Safety does not rest on the estimate: the lists by tenant cover every
 * tenant the pass plans sessions of, so its view of those tenants is the
 * whole list's; what they miss are the sandboxes of tenants with no
 * session left (a deleted tenant's orphans) and those without a tenant
 * tag, which only a whole list shows. The caller makes every state whole
 * at least every --shard-whole-list-every (whole_due). */

enum { SHARD_RUNNING = 0, SHARD_PAUSED = 1, SHARD_STATES = 2 };

typedef struct shard_lists shard_lists;

typedef struct shard_list_choice {
  bool by_tenant[SHARD_STATES];
  size_t est_whole[SHARD_STATES];  /* requests; 0: never listed whole */
  size_t est_tenant[SHARD_STATES]; /* requests of the lists by tenant */
  const char *why;                 /* a static phrase, for the log */
} shard_list_choice;

/* NULL when out of memory. */
shard_lists *shard_lists_new(void);
void shard_lists_free(shard_lists *sl);

/* Choose for a pass that owns sessions of tenants[0..n-1] (distinct).
 * page_rows: rows per page of a server that pages (0: it does not);
 * n_names: the managed-by names listed (at least 1); whole_due: a whole
 * list is due (each state whole). At least one list is always chosen: with
 * no tenant, the state whose whole list is cheaper goes whole. A tenant
 * "" (no tag to filter on) makes both states whole. */
void shard_lists_choose(const shard_lists *sl, const char *const *tenants,
                        size_t n, size_t page_rows, size_t n_names,
                        bool whole_due, shard_list_choice *out);

/* A pass's lists came back, as chosen (by_tenant), in requests[s]
 * requests per state, by tenant for tenants[0..n-1]: the row counts they
 * cover are forgotten (every tenant's for a whole state; a pass with both
 * whole forgets every tenant), then shard_lists_count() each row it
 * listed. SC_ERR_NOMEM leaves the counts partly forgotten (an estimate
 * only). */
sc_err shard_lists_begin(shard_lists *sl, const bool by_tenant[SHARD_STATES],
                         const size_t requests[SHARD_STATES],
                         const char *const *tenants, size_t n);
/* One listed row of state (running: SHARD_RUNNING, pausing or paused:
 * SHARD_PAUSED) and tenant tag (NULL: none, counted as ""); a row of a
 * tenant the pass did not list by tenant, in a state it did, is not
 * counted (a GET's answer). */
sc_err shard_lists_count(shard_lists *sl, int state, const char *tenant);
/* The rows last counted for tenant in state (tests, the log). */
size_t shard_lists_rows(const shard_lists *sl, int state,
                        const char *tenant);

#endif
