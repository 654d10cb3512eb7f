/*
 * store_kube_name.h - the kube store's record of the controller name it is
 * served by (store.h, store_claim_name; docs/store.md, "Which store"):
 * annotations of the CRD sessions.lea.io. The store_ops entries of the
 * kube backend; the semantics and ownership are those of store.h. They
 * block for the API server's answers (a private loop, at most a few
 * seconds): called once, at start.
 */
#ifndef SC_STORE_KUBE_NAME_H
#define SC_STORE_KUBE_NAME_H

#include "controller/store/store.h"

sc_err kube_claim_name(store *st, const char *name, const char *adopt_from,
                       store_served_by *out, sc_errbuf *eb);
sc_err kube_served_by_get(store *st, store_served_by *out, sc_errbuf *eb);

#endif
