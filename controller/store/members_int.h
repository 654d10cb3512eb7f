/*
 * members_int.h - the backends' side of store/members.h (internal to
 * controller/store/): members.c checks the arguments and dispatches by
 * backend. Semantics and ownership: members.h.
 */
#ifndef SC_STORE_MEMBERS_INT_H
#define SC_STORE_MEMBERS_INT_H

#include "controller/store/members.h"

/* sqlite_members.c */
sc_err sq_members_renew(store *st, const char *id, int64_t period_ms,
                        store_member_list *out, sc_errbuf *eb);
sc_err sq_members_remove(store *st, const char *id, const char *version,
                         sc_errbuf *eb);

/* kube_members.c: a Lease per member. km_scope() first (the label value
 * and the namespace); km_start() runs a renewal (period_ms > 0) or a
 * removal (period_ms 0, by version when not NULL) on the store's loop
 * (sync: its private loop, for km_renew/km_remove) and answers once
 * through cb, from that loop; *backref (may be NULL) holds the operation
 * until it is freed (answered, or store_close()); km_detach() drops the
 * answer. */
typedef struct kmop kmop;
typedef void (*km_done)(sc_err err, const char *msg, store_member_list *list,
                        void *ud);
sc_err km_scope(store *st, const char *group, sc_errbuf *eb);
const char *km_where(const store *st);
sc_err km_start(store *st, bool sync, const char *id, int64_t period_ms,
                const char *version, km_done cb, void *ud, kmop **backref,
                sc_errbuf *eb);
void km_detach(kmop *o);
sc_err km_renew(store *st, const char *id, int64_t period_ms,
                store_member_list *out, sc_errbuf *eb);
sc_err km_remove(store *st, const char *id, const char *version,
                 sc_errbuf *eb);

#endif
