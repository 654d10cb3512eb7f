/*
 * kube_leader.h - leader election through a coordination.k8s.io/v1 Lease
 * (the state machine is lease.h; this module does the calls through
 * kube_http and the timer on the loop).
 *
 * Every retry period (2 s) it reads the Lease and, when lease.h says so,
 * creates it or writes it with the read resourceVersion as precondition
 * (a 409 is a lost race: nothing changes). on_change is called on each
 * change of leadership: from the loop, and from kube_leader_release()
 * when the leader steps down. Leader election is an optimisation
 * (docs/deploy.md): every replica is safe alone, so two leaders at once
 * are safe too.
 *
 * The identity (holderIdentity) must differ between replicas: the
 * controller uses its replica name (HOSTNAME-PID by default).
 *
 * Ownership: kube_leader_new() borrows h and lg and copies the strings;
 * kube_leader_free() (NULL ok) stops the timer and forgets the calls in
 * flight (their answers are ignored). Free it before the kube_http client.
 */
#ifndef SC_KUBE_LEADER_H
#define SC_KUBE_LEADER_H

#include <stdbool.h>
#include "controller/kubeclient/http.h"
#include "controller/kubeclient/lease.h"
#include "controller/ops/log.h"

struct event_base;
typedef struct kube_leader kube_leader;

typedef void (*kube_leader_cb)(bool leader, void *ud);

typedef struct kube_leader_opts {
  const char *ns;            /* the Lease's namespace */
  const char *name;          /* its name */
  lease_opts lease;          /* identity and durations */
  kube_leader_cb on_change;
  void *ud;
} kube_leader_opts;

kube_leader *kube_leader_new(struct event_base *base, kube_http *h,
                             logger *lg, const kube_leader_opts *o,
                             sc_errbuf *eb);
void kube_leader_free(kube_leader *kl);

/* Start trying (the first attempt at once). */
void kube_leader_start(kube_leader *kl);

bool kube_leader_is_leader(const kube_leader *kl);

/* Stop trying; a leader steps down at once (on_change(false)) and writes
 * the Lease free (holder "", leaseDurationSeconds 1) so that a successor
 * takes over within its next retry period. kube_leader_released() says
 * when that write ended (or there was nothing to write). */
void kube_leader_release(kube_leader *kl);
bool kube_leader_released(const kube_leader *kl);

/* The namespace of this pod's service account (DIR/namespace, DIR NULL =
 * /var/run/secrets/kubernetes.io/serviceaccount), else "default", into
 * buf. */
void kube_leader_default_namespace(const char *dir, char *buf, size_t len);

#endif
