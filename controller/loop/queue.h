/*
 * queue.h - the deduplicating work queue of the reconcile loop (after
 * client-go's workqueue).
 *
 *  - An item queued twice runs once: queue_add() of a key already waiting
 *    is a no-op.
 *  - An item changed while running runs again: queue_add() of a key being
 *    processed marks it dirty, and queue_done() puts it back.
 *  - Per-item exponential backoff: queue_add_rate_limited() delays a key by
 *    base * 2^failures (capped); queue_forget() resets its failures.
 *  - queue_add_after() delays a key (timers: reclaim due, resync).
 *
 * The queue is pure data: it never reads a clock. Callers pass the
 * monotonic `now_ms` and drive delayed items with queue_next_delay() and
 * queue_promote(). Keys are strings, copied.
 * Ownership: queue_new() -> queue_free() (NULL accepted). queue_pop()
 * returns a pointer owned by the queue, valid until queue_done() of it.
 */
#ifndef SC_QUEUE_H
#define SC_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/sc_err.h"

typedef struct work_queue work_queue;

typedef struct queue_opts {
  int64_t base_delay_ms; /* first backoff; 0 = 200 */
  int64_t max_delay_ms;  /* backoff cap; 0 = 300000 */
} queue_opts;

work_queue *queue_new(const queue_opts *opts);
void queue_free(work_queue *q);

sc_err queue_add(work_queue *q, const char *key);
/* Ready at now_ms + delay_ms; an earlier pending readiness wins. */
sc_err queue_add_after(work_queue *q, const char *key, int64_t delay_ms,
                       int64_t now_ms);
/* Backoff: delay = base * 2^failures, capped; failures++. Returns the
 * delay chosen in *delay_ms (may be NULL). */
sc_err queue_add_rate_limited(work_queue *q, const char *key, int64_t now_ms,
                              int64_t *delay_ms);
/* Honour a server's Retry-After: like add_after, and counts a failure. */
sc_err queue_add_retry_after(work_queue *q, const char *key,
                             int64_t retry_after_ms, int64_t now_ms);
void queue_forget(work_queue *q, const char *key);
int queue_failures(const work_queue *q, const char *key);

/* Move delayed items whose time has come to the ready list. */
void queue_promote(work_queue *q, int64_t now_ms);
/* Milliseconds until the next delayed item is due (0 if one is due now),
 * -1 when none is delayed. */
int64_t queue_next_delay(const work_queue *q, int64_t now_ms);

/* The next ready key, or NULL. It is "processing" until queue_done(). */
const char *queue_pop(work_queue *q);
void queue_done(work_queue *q, const char *key);

size_t queue_len(const work_queue *q);       /* ready items */
size_t queue_delayed(const work_queue *q);   /* delayed items */
size_t queue_processing(const work_queue *q);
/* Keys the queue holds anything for (ready, delayed, processing, or a
 * failure count): 0 means queue_forget() has nothing to do for any key. */
size_t queue_tracked(const work_queue *q);

#endif
