/* Tests of the event reasons of action outcomes (controller/status/recorder.c). */
#include <stdio.h>
#include <string.h>
#include "test/harness.h"
#include "controller/status/recorder.h"

TEST(action_reasons)
{
  static const struct {
    plan_action_type t;
    plan_delete_kind k;
    bool has_session, ok, skipped;
    const char *reason;   /* NULL: no event */
    recorder_type type;
  } rows[] = {
    {PLAN_CREATE, PLAN_DEL_NONE, true, true, false, "SandboxCreated",
     RECORDER_NORMAL},
    {PLAN_PAUSE, PLAN_DEL_NONE, true, true, false, "SandboxPaused",
     RECORDER_NORMAL},
    {PLAN_RESUME, PLAN_DEL_NONE, true, true, false, "SandboxResumed",
     RECORDER_NORMAL},
    {PLAN_KEEPALIVE, PLAN_DEL_NONE, true, true, false, "TimeoutUpdated",
     RECORDER_NORMAL},
    {PLAN_SET_TIMEOUT, PLAN_DEL_NONE, true, true, false, "TimeoutUpdated",
     RECORDER_NORMAL},
    {PLAN_DELETE, PLAN_DEL_RECLAIM, true, true, false, "SandboxReclaimed",
     RECORDER_NORMAL},
    {PLAN_DELETE, PLAN_DEL_ENDED, true, true, false, "SandboxDeleted",
     RECORDER_NORMAL},
    {PLAN_DELETE, PLAN_DEL_TOMBSTONE, true, true, false, "SandboxDeleted",
     RECORDER_NORMAL},
    {PLAN_DELETE, PLAN_DEL_DUPLICATE, true, true, false, "DuplicateDeleted",
     RECORDER_NORMAL},
    {PLAN_DELETE, PLAN_DEL_RECLAIM, true, false, true, "DeleteSkipped",
     RECORDER_WARNING},
    {PLAN_CREATE, PLAN_DEL_NONE, true, false, false, "CubeError",
     RECORDER_WARNING},
    {PLAN_DELETE, PLAN_DEL_TOMBSTONE, true, false, false, "CubeError",
     RECORDER_WARNING},
    {PLAN_DELETE, PLAN_DEL_ORPHAN, false, true, false, NULL,
     RECORDER_NORMAL},
    {PLAN_CONFIRM, PLAN_DEL_NONE, true, false, false, NULL,
     RECORDER_NORMAL},
  };
  session s;
  size_t i;
  memset(&s, 0, sizeof(s));
  for(i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
    plan_action a;
    recorder_type t = RECORDER_NORMAL;
    const char *r;
    memset(&a, 0, sizeof(a));
    a.type = rows[i].t;
    a.del_kind = rows[i].k;
    a.s = rows[i].has_session ? &s : NULL;
    r = recorder_action_reason(&a, rows[i].ok, rows[i].skipped, &t);
    if(!rows[i].reason)
      CHECK_MSG(r == NULL, "row %zu: got %s", i, r);
    else {
      CHECK_MSG(r && !strcmp(r, rows[i].reason), "row %zu: got %s, want %s",
                i, r ? r : "(none)", rows[i].reason);
      CHECK_MSG(t == rows[i].type, "row %zu: type %s", i,
                recorder_type_name(t));
    }
  }
}

TEST(messages_stable)
{
  plan_action a;
  char m1[256], m2[256];
  memset(&a, 0, sizeof(a));
  a.type = PLAN_PAUSE;
  a.sandbox_id = "sb-1";
  recorder_action_message(&a, false, false, NULL, "HTTP 503", m1,
                          sizeof(m1));
  recorder_action_message(&a, false, false, NULL, "HTTP 503", m2,
                          sizeof(m2));
  CHECK_STR(m1, m2); /* identical failures de-duplicate */
  CHECK_STR(m1, "pause of sandbox sb-1 failed: HTTP 503");
  recorder_action_message(&a, true, false, NULL, NULL, m1, sizeof(m1));
  CHECK_STR(m1, "paused sandbox sb-1");
}

TEST_LIST = {
  T(action_reasons),
  T(messages_stable),
  {NULL, NULL},
};
TEST_MAIN()
