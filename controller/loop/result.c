/* result.c - a reconcile's result -> one queue operation (see result.h). */
#include "controller/loop/result.h"

loop_result loop_result_of(bool failed, int64_t retry_after_ms,
                           sc_time next_due, sc_time cube_now)
{
  loop_result r = {LOOP_DONE, 0};
  if(failed) {
    r.kind = retry_after_ms > 0 ? LOOP_RETRY_AFTER : LOOP_BACKOFF;
    r.ms = retry_after_ms > 0 ? retry_after_ms : 0;
  }
  else if(next_due && cube_now) {
    int64_t d = next_due - cube_now;
    r.kind = LOOP_REQUEUE_AFTER;
    r.ms = d > 0 ? d + 1000 : 1000;
  }
  return r;
}

void loop_result_apply(work_queue *q, const char *key, loop_result res,
                       int64_t now_ms)
{
  switch(res.kind) {
  case LOOP_DONE:
    queue_forget(q, key);
    break;
  case LOOP_REQUEUE:
    (void)queue_add(q, key);
    break;
  case LOOP_REQUEUE_AFTER:
    queue_forget(q, key);
    (void)queue_add_after(q, key, res.ms, now_ms);
    break;
  case LOOP_BACKOFF:
    (void)queue_add_rate_limited(q, key, now_ms, NULL);
    break;
  case LOOP_RETRY_AFTER:
    (void)queue_add_retry_after(q, key, res.ms, now_ms);
    break;
  }
}

const char *loop_result_name(loop_result_kind k)
{
  switch(k) {
  case LOOP_DONE:
    return "done";
  case LOOP_REQUEUE:
    return "requeue";
  case LOOP_REQUEUE_AFTER:
    return "requeue-after";
  case LOOP_BACKOFF:
    return "backoff";
  case LOOP_RETRY_AFTER:
    return "retry-after";
  }
  return "?";
}
