/* controller/loop/intent_seen.c: how long this process has seen each
 * session's written intent unchanged (rule 11's void bound is measured on
 * it, never on another machine's clock). */
#include "test/harness.h"
#include "controller/loop/intent_seen.h"

#include <stdlib.h>
#include <string.h>

static session *sess(const char *name, const char *kind, sc_time at,
                     const char *by)
{
  session *s = session_new();
  if(!s)
    abort();
  s->meta.namespace_ = strdup("t1");
  s->meta.name = strdup(name);
  if(kind) {
    s->status.pending_kind = strdup(kind);
    s->status.pending_sandbox_id = strdup("sb-1");
    s->status.pending_by = strdup(by);
    s->status.pending_at = at;
  }
  return s;
}

static void set_intent(session *s, sc_time at, const char *by)
{
  free(s->status.pending_by);
  s->status.pending_by = strdup(by);
  s->status.pending_at = at;
}

TEST(an_unchanged_intent_ages_a_changed_one_starts_again)
{
  intent_seen *t = intent_seen_new();
  session *ss[2];
  int64_t out[2];
  ss[0] = sess("a", "reclaim", 1000, "r1");
  ss[1] = sess("b", NULL, 0, NULL);
  CHECK(t);
  CHECK(intent_seen_update(t, ss, 2, true, 5000, out));
  CHECK_INT(out[0], 0); /* first seen */
  CHECK_INT(out[1], 0);
  CHECK(intent_seen_update(t, ss, 2, true, 47000, out));
  CHECK_INT(out[0], 42000);
  /* carried on by another replica: a new intent, counted from now */
  set_intent(ss[0], 2000, "r2");
  CHECK(intent_seen_update(t, ss, 2, true, 50000, out));
  CHECK_INT(out[0], 0);
  CHECK(intent_seen_update(t, ss, 2, true, 51000, out));
  CHECK_INT(out[0], 1000);
  /* the same writer and sandbox at another time is new too */
  set_intent(ss[0], 3000, "r2");
  CHECK(intent_seen_update(t, ss, 2, true, 52000, out));
  CHECK_INT(out[0], 0);
  CHECK_INT(intent_seen_count(t), 1);
  intent_seen_free(t);
  session_free(ss[0]);
  session_free(ss[1]);
}

TEST(entries_go_with_their_intents)
{
  intent_seen *t = intent_seen_new();
  session *a = sess("a", "reclaim", 1000, "r1");
  session *b = sess("b", "reclaim", 1000, "r1");
  session *ss[2] = {a, b};
  int64_t out[2];
  CHECK(intent_seen_update(t, ss, 2, true, 0, out));
  CHECK_INT(intent_seen_count(t), 2);
  /* a full pass without b (deleted, or another shard's): b is forgotten,
   * and if it comes back its count starts again */
  CHECK(intent_seen_update(t, ss, 1, true, 10000, out));
  CHECK_INT(intent_seen_count(t), 1);
  CHECK(intent_seen_update(t, ss, 2, true, 20000, out));
  CHECK_INT(out[0], 20000);
  CHECK_INT(out[1], 0);
  /* a single-session pass of a whose intent is done: a goes, b stays */
  free(a->status.pending_kind);
  a->status.pending_kind = NULL;
  CHECK(!intent_seen_update(t, ss, 1, false, 30000, out));
  CHECK_INT(intent_seen_count(t), 1);
  CHECK(intent_seen_update(t, ss + 1, 1, false, 30000, out));
  CHECK_INT(out[0], 10000);
  /* no intent anywhere: nothing written, the table empties */
  free(b->status.pending_kind);
  b->status.pending_kind = NULL;
  out[0] = out[1] = -1;
  CHECK(!intent_seen_update(t, ss, 2, true, 40000, out));
  CHECK_INT(out[0], -1);
  CHECK_INT(intent_seen_count(t), 0);
  CHECK(!intent_seen_update(NULL, ss, 2, true, 0, out));
  intent_seen_free(NULL);
  intent_seen_free(t);
  session_free(a);
  session_free(b);
}

TEST_LIST = {
  T(an_unchanged_intent_ages_a_changed_one_starts_again),
  T(entries_go_with_their_intents),
  {0},
};

TEST_MAIN()
