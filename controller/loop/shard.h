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

#endif
