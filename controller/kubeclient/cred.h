/*
 * kube_cred.h - where the bearer token (or the client certificate of an
 * exec plugin) of a Kubernetes connection comes from:
 *
 *  - a fixed token (kubeconfig `token`);
 *  - a token file (`tokenFile`, the service account's token), read again
 *    when a minute has passed and after a 401 (tokens rotate);
 *  - an exec plugin (`exec`, kube_exec.h): run when there is no
 *    credential yet, the credential is cached until its
 *    expirationTimestamp (none: for the life of the process) and the
 *    plugin is run again after a 401. A credential that will expire is
 *    refreshed ahead of time on the loop of the client that asks (the
 *    last quarter of its life, at most the last minute), so a request
 *    only waits for the plugin when there is no valid credential: the
 *    first one, after a 401, or when the refresh ahead failed. A failed
 *    run is not repeated for a while (1 s doubling to 30 s, 30 s after a
 *    timeout): its error is given again meanwhile.
 *
 * The HTTP layer (controller/kubeclient/http.c, the kube store's watches) asks it before
 * each request (kube_cred_get) and tells it about a 401
 * (kube_cred_unauthorized).
 *
 * Ownership: reference counted (one thread): every copy of a kube_conn
 * holds a reference, so the clients made from one connection share one
 * cache and one plugin run. kube_cred_unref() (NULL accepted) frees it
 * with the last reference, killing a plugin still running. A kube_auth is
 * the caller's (kube_auth_clear(), NULL accepted). A client that goes
 * away calls kube_cred_detach() with its loop first, which stops a
 * refresh running on it.
 */
#ifndef SC_KUBE_CRED_H
#define SC_KUBE_CRED_H

#include <stdbool.h>
#include <stdint.h>
#include "lib/sc_err.h"
#include "controller/kubeclient/exec.h"

struct event_base;
typedef struct kube_cred kube_cred;

/* What one request carries. */
typedef struct kube_auth {
  char *token;       /* the bearer token, or NULL */
  char *cert_pem;    /* a client certificate from the plugin, or NULL */
  char *key_pem;     /* its key */
  uint64_t gen;      /* which credential it was (kube_cred_unauthorized) */
} kube_auth;

/* NULL when out of memory. kube_cred_new_exec takes cfg over (also on
 * failure). */
kube_cred *kube_cred_new_token(const char *token);
kube_cred *kube_cred_new_file(const char *path);
kube_cred *kube_cred_new_exec(kube_exec_cfg *cfg);
kube_cred *kube_cred_ref(kube_cred *c);
void kube_cred_unref(kube_cred *c);

/* The credential for the next request (c NULL: none, *out empty). base:
 * the caller's loop, where a refresh ahead of the expiry may run (NULL:
 * never ahead). May run the plugin and wait for it (at most its timeout)
 * when there is no valid credential. */
sc_err kube_cred_get(kube_cred *c, struct event_base *base, kube_auth *out,
                     sc_errbuf *eb);

/* A request made with `used` got a 401. The token file is read again or
 * the plugin run again at the next kube_cred_get (once per credential:
 * the other requests that used it do not cause more runs). true when
 * asking again may help (not a fixed token). */
bool kube_cred_unauthorized(kube_cred *c, const kube_auth *used);

/* Stop a refresh ahead running on base (the client on base goes away). */
void kube_cred_detach(kube_cred *c, struct event_base *base);

/* true for an exec plugin (for messages). */
bool kube_cred_is_exec(const kube_cred *c);
/* The token file, or NULL (for messages and tests). */
const char *kube_cred_file(const kube_cred *c);

void kube_auth_clear(kube_auth *a);

#endif
