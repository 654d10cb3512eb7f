/*
 * members.h - the replicas that serve a store, registered in it, for
 * sharding (docs/controller.md, "Sharding"; loop/shard.h decides from
 * what this lists). A store records, per member: its ID, a version that
 * changes at every renewal, and the renewal period it declared. It never
 * decides liveness: a reader judges that from the version moving, by its
 * own monotonic clock.
 *
 *   sqlite:PATH  a row per member in the table `members` of the store
 *                file (sqlite_members.c): version = a renewal counter.
 *   kube         a coordination.k8s.io/v1 Lease per member, labelled
 *                lea.io/member-of=GROUP (kube_members.c): version = the
 *                Lease's resourceVersion, the precondition of a prune's
 *                DELETE. store_members_scope() names GROUP first.
 *
 * Other backends answer SC_ERR_INVALID ("no membership"): the caller then
 * owns everything (safe, more work) and says so.
 *
 * Ownership: store_members_renew_async() answers once through cb, from
 * the store's loop (never from inside the call); the members given to cb
 * are the callee's, valid during the call only. store_members_req_cancel()
 * (NULL ok) drops an answer not yet given, and frees the request; a
 * request that has answered frees itself after cb. Strings passed in are
 * copied.
 */
#ifndef SC_STORE_MEMBERS_H
#define SC_STORE_MEMBERS_H

#include <stdbool.h>
#include <stdint.h>
#include "controller/store/store.h"

#define STORE_MEMBER_ID_MAX 200

typedef struct store_member {
  char *id;
  char *version;      /* changes at every renewal */
  int64_t period_ms;  /* the member's renewal period */
} store_member;

typedef struct store_member_list {
  store_member *items; /* sorted by id */
  size_t n;
} store_member_list;

void store_member_list_clear(store_member_list *l);

/* Does this backend keep members? */
bool store_members_supported(const store *st);

/* The group of members (the controller's --name) before any other call:
 * kube lists its member Leases by the label lea.io/member-of=group, so
 * group must be a label value (SC_ERR_INVALID naming it otherwise);
 * sqlite has no need of it (a store file serves one controller name). */
sc_err store_members_scope(store *st, const char *group, sc_errbuf *eb);
/* Where the members are kept, for a log line ("" before the scope). */
const char *store_members_where(const store *st);

/* Synchronous: register or renew id (bump its version, record period_ms)
 * and list every member, in one write transaction. */
sc_err store_members_renew(store *st, const char *id, int64_t period_ms,
                           store_member_list *out, sc_errbuf *eb);
/* Remove id: when version is non-NULL only if its version is still that
 * (a member seen dead is pruned; one that renewed meanwhile stays). Absent
 * is SC_OK. */
sc_err store_members_remove(store *st, const char *id, const char *version,
                            sc_errbuf *eb);

typedef struct store_members_req store_members_req;
/* err SC_OK: list holds the members (the caller may take its items and
 * zero it). Else msg says why. */
typedef void (*store_members_cb)(sc_err err, const char *msg,
                                 store_member_list *list, void *ud);
/* The renewal, answered on the loop. *req (may be NULL) gets a handle for
 * store_members_req_cancel() until cb runs. */
sc_err store_members_renew_async(store *st, const char *id,
                                 int64_t period_ms, store_members_cb cb,
                                 void *ud, store_members_req **req,
                                 sc_errbuf *eb);
void store_members_req_cancel(store_members_req *req);

/* store_members_remove answered on the loop (the kube DELETE is a
 * network call): cb gets err and msg (the list is empty); the request
 * handle as for the renewal. */
sc_err store_members_remove_async(store *st, const char *id,
                                  const char *version, store_members_cb cb,
                                  void *ud, store_members_req **req,
                                  sc_errbuf *eb);

#endif
