/* Tests of the work queue: dedup, dirty re-run, backoff, delays. */
#include "test/harness.h"
#include "controller/loop/queue.h"

TEST(queued_twice_runs_once)
{
  work_queue *q = queue_new(NULL);
  CHECK_OK(queue_add(q, "a"));
  CHECK_OK(queue_add(q, "b"));
  CHECK_OK(queue_add(q, "a"));
  CHECK_INT(queue_len(q), 2);
  CHECK_STR(queue_pop(q), "a");
  CHECK_STR(queue_pop(q), "b");
  CHECK(queue_pop(q) == NULL);
  queue_done(q, "a");
  queue_done(q, "b");
  CHECK(queue_pop(q) == NULL);
  queue_free(q);
}

TEST(changed_while_running_runs_again)
{
  work_queue *q = queue_new(NULL);
  const char *k;
  CHECK_OK(queue_add(q, "a"));
  k = queue_pop(q);
  CHECK_STR(k, "a");
  CHECK_OK(queue_add(q, "a")); /* while processing */
  CHECK_OK(queue_add(q, "a"));
  CHECK(queue_pop(q) == NULL);  /* never twice at once */
  queue_done(q, "a");
  CHECK_STR(queue_pop(q), "a");
  queue_done(q, "a");
  CHECK(queue_pop(q) == NULL);
  CHECK_INT(queue_processing(q), 0);
  queue_free(q);
}

TEST(backoff_doubles_and_caps_and_forget_resets)
{
  queue_opts o = {100, 1000};
  work_queue *q = queue_new(&o);
  int64_t d, expect[] = {100, 200, 400, 800, 1000, 1000};
  size_t i;
  for(i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
    CHECK_OK(queue_add_rate_limited(q, "k", 0, &d));
    CHECK_INT(d, expect[i]);
  }
  CHECK_INT(queue_failures(q, "k"), 6);
  queue_forget(q, "k");
  CHECK_INT(queue_failures(q, "k"), 0);
  CHECK_OK(queue_add_rate_limited(q, "k", 0, &d));
  CHECK_INT(d, 100);
  queue_free(q);
}

TEST(delayed_items_become_ready_in_order)
{
  work_queue *q = queue_new(NULL);
  CHECK_OK(queue_add_after(q, "late", 500, 1000));
  CHECK_OK(queue_add_after(q, "early", 100, 1000));
  CHECK_INT(queue_len(q), 0);
  CHECK_INT(queue_delayed(q), 2);
  CHECK_INT(queue_next_delay(q, 1000), 100);
  queue_promote(q, 1099);
  CHECK_INT(queue_len(q), 0);
  queue_promote(q, 1100);
  CHECK_INT(queue_len(q), 1);
  CHECK_STR(queue_pop(q), "early");
  queue_done(q, "early");
  queue_promote(q, 2000);
  CHECK_STR(queue_pop(q), "late");
  queue_done(q, "late");
  CHECK_INT(queue_next_delay(q, 2000), -1);
  CHECK_INT(queue_delayed(q), 0);
  queue_free(q);
}

TEST(earlier_delay_wins_and_add_cancels_delay)
{
  work_queue *q = queue_new(NULL);
  CHECK_OK(queue_add_after(q, "k", 1000, 0));
  CHECK_OK(queue_add_after(q, "k", 100, 0)); /* earlier wins */
  queue_promote(q, 100);
  CHECK_STR(queue_pop(q), "k");
  queue_done(q, "k");
  queue_promote(q, 1000); /* the stale later entry does not re-run it */
  CHECK(queue_pop(q) == NULL);
  CHECK_OK(queue_add_after(q, "j", 1000, 0));
  CHECK_OK(queue_add(q, "j")); /* now: the delay is moot */
  CHECK_INT(queue_delayed(q), 0);
  CHECK_STR(queue_pop(q), "j");
  queue_done(q, "j");
  queue_promote(q, 5000);
  CHECK(queue_pop(q) == NULL);
  queue_free(q);
}

TEST(delay_due_while_processing_reruns_after_done)
{
  work_queue *q = queue_new(NULL);
  CHECK_OK(queue_add(q, "k"));
  CHECK_STR(queue_pop(q), "k");
  CHECK_OK(queue_add_after(q, "k", 10, 0));
  queue_promote(q, 10);
  CHECK(queue_pop(q) == NULL);
  queue_done(q, "k");
  CHECK_STR(queue_pop(q), "k");
  queue_done(q, "k");
  queue_free(q);
}

TEST(many_keys)
{
  work_queue *q = queue_new(NULL);
  char k[32];
  int i, n = 0;
  for(i = 0; i < 5000; i++) {
    snprintf(k, sizeof(k), "ns/s-%d", i);
    CHECK_OK(queue_add(q, k));
    CHECK_OK(queue_add(q, k));
  }
  CHECK_INT(queue_len(q), 5000);
  while(queue_pop(q))
    n++;
  CHECK_INT(n, 5000);
  queue_free(q); /* frees processing items too */
}

/* Items leave the key table when they carry no state any more (the table
 * shifts runs back on removal): a long churn of adds, pops, dones and
 * forgets keeps every remaining key findable and the rest gone. */
TEST(churn_keeps_keys_findable)
{
  work_queue *q = queue_new(NULL);
  char k[32];
  const char *p;
  int round, i;
  for(round = 0; round < 20; round++) {
    for(i = 0; i < 2000; i++) {
      snprintf(k, sizeof(k), "ns/r%d-%d", round % 3, i);
      CHECK_OK(queue_add(q, k));
    }
    while((p = queue_pop(q)) != NULL) {
      snprintf(k, sizeof(k), "%s", p);
      queue_done(q, k);
    }
    CHECK_INT(queue_len(q), 0);
    CHECK_INT(queue_processing(q), 0);
    /* a failure keeps a key alive; forgetting it lets it go */
    for(i = 0; i < 2000; i += 7) {
      snprintf(k, sizeof(k), "ns/r%d-%d", round % 3, i);
      CHECK_OK(queue_add_rate_limited(q, k, 0, NULL));
      CHECK_INT(queue_failures(q, k), 1);
    }
    queue_promote(q, 1000000);
    CHECK_INT(queue_len(q), 286);
    while((p = queue_pop(q)) != NULL) {
      snprintf(k, sizeof(k), "%s", p);
      queue_done(q, k);
      CHECK_INT(queue_failures(q, k), 1);
      queue_forget(q, k);
      CHECK_INT(queue_failures(q, k), 0);
    }
  }
  CHECK_INT(queue_delayed(q), 0);
  queue_free(q);
}

TEST(retry_after_counts_failure)
{
  work_queue *q = queue_new(NULL);
  CHECK_OK(queue_add_retry_after(q, "k", 2000, 0));
  CHECK_INT(queue_failures(q, "k"), 1);
  CHECK_INT(queue_next_delay(q, 0), 2000);
  queue_free(q);
}

TEST_LIST = {
  T(queued_twice_runs_once),
  T(changed_while_running_runs_again),
  T(backoff_doubles_and_caps_and_forget_resets),
  T(delayed_items_become_ready_in_order),
  T(earlier_delay_wins_and_add_cancels_delay),
  T(delay_due_while_processing_reruns_after_done),
  T(many_keys),
  T(churn_keeps_keys_findable),
  T(retry_after_counts_failure),
  {0},
};
TEST_MAIN()
