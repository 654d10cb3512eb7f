/*
 * kube_events.h - Kubernetes Events (core/v1) for the reconciler's
 * outcomes: the recorder (recorder.h) of the kube store.
 *
 * Best effort: events wait in a bounded queue (a full queue drops the new
 * one and counts session_controller_events_dropped_total), are sent one
 * at a time through kube_http (never blocking the loop), and a failed
 * call is logged once per run of failures; nothing ever fails a
 * reconcile. De-duplicated like client-go (evcache.h): the same (object
 * uid, reason, message, type) within 10 minutes PATCHes the existing
 * Event's count and lastTimestamp instead of creating another.
 *
 * involvedObject: the Session (lea.io/v1alpha1, its namespace, name, uid,
 * resourceVersion); events about no Session go to the fallback object
 * when one is set (the Lease of leader election), else are dropped.
 *
 * Ownership: kube_events_new() borrows h, m and lg (they must outlive it)
 * and copies the strings of the opts; kube_events_free() (NULL ok) drops
 * what is queued. Free it before the kube_http client.
 */
#ifndef SC_KUBE_EVENTS_H
#define SC_KUBE_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include "controller/kubeclient/http.h"
#include "controller/ops/log.h"
#include "controller/ops/metrics.h"
#include "controller/status/recorder.h"

typedef struct kube_events kube_events;

typedef struct kube_events_opts {
  const char *component;     /* source.component: "session-controller" */
  const char *host;          /* source.host and reportingInstance */
  size_t queue_max;          /* 0 = 256 */
  size_t cache_max;          /* de-dup keys kept; 0 = 1024 */
  int64_t window_ms;         /* de-dup window; 0 = 10 minutes */
  /* for events about no Session (may be NULL: dropped) */
  const char *fallback_api_version, *fallback_kind;
  const char *fallback_ns, *fallback_name;
} kube_events_opts;

kube_events *kube_events_new(kube_http *h, metrics *m, logger *lg,
                             const kube_events_opts *o, sc_errbuf *eb);
void kube_events_free(kube_events *ev);

/* Queue one event (copies everything); never blocks, never fails. */
void kube_events_record(kube_events *ev, const session *s,
                        recorder_type type, const char *reason,
                        const char *message);

/* The recorder interface over ev. */
recorder kube_events_recorder(kube_events *ev);

/* Nothing queued or in flight. */
bool kube_events_idle(const kube_events *ev);

/* Declare session_controller_events_total and _events_dropped_total. */
sc_err kube_events_declare_metrics(metrics *m);

#endif
