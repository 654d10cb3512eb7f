/*
 * result.h - what a reconcile of one key came to, and the one switch that
 * turns it into a queue operation (after controller-runtime's
 * reconcileHandler). Every requeue decision of the loop is a loop_result
 * passed to loop_result_apply(); nothing else in the loop picks a queue
 * call by outcome.
 *
 * No ownership: values only; the queue and the key are borrowed.
 */
#ifndef SC_LOOP_RESULT_H
#define SC_LOOP_RESULT_H

#include <stdbool.h>
#include <stdint.h>
#include "controller/loop/queue.h"
#include "lib/sctime.h"

typedef enum loop_result_kind {
  LOOP_DONE,          /* settled: its failures are forgotten */
  LOOP_REQUEUE,       /* look again now (a lost compare-and-set) */
  LOOP_REQUEUE_AFTER, /* settled; look again after ms (a due time) */
  LOOP_BACKOFF,       /* failed: per-key exponential backoff */
  LOOP_RETRY_AFTER    /* failed, and Cube said when: after ms */
} loop_result_kind;

typedef struct loop_result {
  loop_result_kind kind;
  int64_t ms;         /* REQUEUE_AFTER, RETRY_AFTER */
} loop_result;

/* A turn that failed (retry_after_ms > 0: Cube's Retry-After), or one
 * that settled with the planner's next due time by Cube's clock (0:
 * none): Cube's clock says when, the local monotonic clock only waits,
 * and a second more covers the two clocks' drift. */
loop_result loop_result_of(bool failed, int64_t retry_after_ms,
                           sc_time next_due, sc_time cube_now);

/* The one switch: res for key at now_ms (monotonic). */
void loop_result_apply(work_queue *q, const char *key, loop_result res,
                       int64_t now_ms);

const char *loop_result_name(loop_result_kind k); /* "done", ... */

#endif
