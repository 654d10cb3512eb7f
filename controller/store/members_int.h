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

#endif
