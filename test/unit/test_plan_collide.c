/* The planner's join (controller/plan/join.c) under 64-bit hash
 * collisions and in either input order: equal hashes must fall back to
 * the strings (lib/hmap.h compares the keys of an equal hash), and a
 * later session's link must win over an earlier one's tags whatever the
 * order. The
 * collisions are built from the real hash (lib/schash.h), and each test
 * first checks that its strings do collide, so it cannot pass vacuously
 * if the hash changes. */
#include "test/harness.h"
#include "test/unit/plan_world.h"
#include "lib/schash.h"

#define NOW W_NOW
#define SBR CUBE_SB_RUNNING
#define ACT SESSION_STATE_ACTIVE

/* y (17 bytes): a 16-byte string other than x (16 bytes) whose hash state
 * after h equals x's: the second word cancels the first's difference, so
 * (h, x) and (h, y) hash alike, and so does anything hashed after them.
 * false if no such y without a NUL byte turned up (it always does). */
static bool collide16(uint64_t h, const char *x, char *y)
{
  uint64_t x1, x2, y1, y2, hx, hy;
  int k, j;
  if(strlen(x) != 16)
    return false;
  memcpy(&x1, x, 8);
  memcpy(&x2, x + 8, 8);
  hx = sc_hash_word(sc_hash_len(h, 16), x1);
  for(k = 0; k < 1000; k++) {
    char p[16];
    bool nul = false;
    snprintf(p, sizeof(p), "alt-%04d", k);
    memcpy(&y1, p, 8);
    hy = sc_hash_word(sc_hash_len(h, 16), y1);
    y2 = hx ^ hy ^ x2;
    memcpy(y, &y1, 8);
    memcpy(y + 8, &y2, 8);
    y[16] = 0;
    for(j = 8; j < 16; j++)
      nul = nul || !y[j];
    if(!nul && strcmp(x, y))
      return true;
  }
  return false;
}

/* Two sandbox IDs with one hash: a session linked to the unobserved one
 * is not given the observed one (confirm, not adopt), whichever order. */
TEST(link_hash_collision_falls_back_to_the_id)
{
  static const char x[] = "sandbox-00000001";
  char y[17];
  int order;
  CHECK(collide16(SC_HASH_INIT, x, y));
  CHECK(sc_hash_id(x) == sc_hash_id(y));
  for(order = 0; order < 2; order++) {
    world *w = w_new();
    session *a, *b;
    plan *p;
    const plan_session *pa, *pb;
    if(order) {
      b = w_sess(w, "t1", "b", ACT);
      a = w_sess(w, "t1", "a", ACT);
    }
    else {
      a = w_sess(w, "t1", "a", ACT);
      b = w_sess(w, "t1", "b", ACT);
    }
    w_link(a, x);
    w_link(b, y);
    b->status.applied_idle_timeout_ms = b->spec.idle_timeout_ms;
    w_sb(w, y, SBR, NOW + 10 * MIN_MS, "t1", "b");
    p = w_plan(w);
    CHECK(p);
    pa = p_sess(p, a);
    pb = p_sess(p, b);
    CHECK_INT(p->n_actions, 1);
    CHECK(p_find(p, PLAN_CONFIRM, x));
    CHECK_STR(p->actions[0].name, "a");
    CHECK_STR(pa->status.sandbox_id, x);
    CHECK_STR(pb->status.sandbox_id, y);
    CHECK_STR(cond_reason(&pb->status, "Ready"), "SandboxRunning");
    CHECK(!session_status_get_condition(&pa->status, "Conflict"));
    CHECK(!session_status_get_condition(&pb->status, "Conflict"));
    CHECK_INT(p->n_managed, 1);
    plan_free(p);
    w_del(w);
  }
}

/* Both colliding IDs observed: two sandboxes (not one reported twice),
 * each its session's; then one of them gone: the other still stands. */
TEST(id_hash_collision_is_not_a_duplicate_report)
{
  static const char x[] = "sandbox-00000002";
  char y[17];
  world *w = w_new();
  session *a, *b;
  plan *p;
  CHECK(collide16(SC_HASH_INIT, x, y));
  CHECK(sc_hash_id(x) == sc_hash_id(y));
  a = w_sess(w, "t1", "a", ACT);
  b = w_sess(w, "t1", "b", ACT);
  w_link(a, x);
  w_link(b, y);
  a->status.applied_idle_timeout_ms = a->spec.idle_timeout_ms;
  b->status.applied_idle_timeout_ms = b->spec.idle_timeout_ms;
  w_sb(w, y, SBR, NOW + 10 * MIN_MS, "t1", "b");
  w_sb(w, x, SBR, NOW + 10 * MIN_MS, "t1", "a");
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 0);
  CHECK_INT(p->n_managed, 2);
  CHECK_STR(cond_reason(&p_sess(p, a)->status, "Ready"), "SandboxRunning");
  CHECK_STR(cond_reason(&p_sess(p, b)->status, "Ready"), "SandboxRunning");
  plan_free(p);
  /* x confirmed gone while y is listed: a creates, b keeps y */
  cube_sandbox_clear(&w->b[1]);
  w->nb = 1;
  w->gone[w->ngone++] = x;
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 1);
  CHECK(p_find(p, PLAN_CREATE, NULL));
  CHECK_STR(p->actions[0].name, "a");
  CHECK(p_sess(p, a)->status.sandbox_id == NULL);
  CHECK_STR(p_sess(p, b)->status.sandbox_id, y);
  plan_free(p);
  w_del(w);
}

/* Two (tenant, sessionID) pairs with one hash: no SessionIDInUse, and the
 * tagged sandbox goes to the session whose strings match, not the other. */
TEST(pair_hash_collision_is_not_a_shared_pair)
{
  static const char t1[] = "tenant-000000001";
  char t2[17];
  int order;
  CHECK(collide16(SC_HASH_INIT, t1, t2));
  CHECK(sc_hash_pair(t1, "chat") == sc_hash_pair(t2, "chat"));
  for(order = 0; order < 2; order++) {
    world *w = w_new();
    session *a, *b;
    plan *p;
    const plan_session *pa, *pb;
    w->cfg.bind_tenant_to_namespace = false; /* tenants named freely */
    a = w_sess(w, "ns", order ? "b" : "a", ACT);
    b = w_sess(w, "ns", order ? "a" : "b", ACT);
    free(a->spec.tenant_id);
    free(a->spec.session_id);
    free(b->spec.tenant_id);
    free(b->spec.session_id);
    a->spec.tenant_id = strdup(t1);
    a->spec.session_id = strdup("chat");
    b->spec.tenant_id = strdup(t2);
    b->spec.session_id = strdup("chat");
    w_sb(w, "sb-of-b", SBR, NOW + 10 * MIN_MS, t2, "chat");
    p = w_plan(w);
    CHECK(p);
    pa = p_sess(p, a);
    pb = p_sess(p, b);
    /* a creates; b adopts (its applied timeout is unknown: set it) */
    CHECK_INT(p->n_actions, 2);
    CHECK(p_find(p, PLAN_CREATE, NULL));
    CHECK(p_find(p, PLAN_CREATE, NULL)->s == a);
    CHECK(p_find(p, PLAN_SET_TIMEOUT, "sb-of-b"));
    CHECK(p_find(p, PLAN_SET_TIMEOUT, "sb-of-b")->s == b);
    CHECK(pa->status.sandbox_id == NULL);
    CHECK_STR(pb->status.sandbox_id, "sb-of-b");
    CHECK_STR(cond_reason(&pb->status, "Ready"), "SandboxRunning");
    CHECK(!session_status_get_condition(&pa->status, "Conflict"));
    CHECK(!session_status_get_condition(&pb->status, "Conflict"));
    plan_free(p);
    w_del(w);
  }
}

/* A sandbox tagged for one session and linked by another: the link wins
 * (a sandbox anyone links is never joined by its tags), in either input
 * order. The plan text is the same in both orders. */
TEST(tag_join_yields_to_a_later_link_in_any_order)
{
  char *text[2];
  int order;
  for(order = 0; order < 2; order++) {
    world *w = w_new();
    session *a, *b;
    plan *p;
    if(order) {
      b = w_sess(w, "t1", "b", ACT);
      a = w_sess(w, "t1", "a", ACT);
    }
    else {
      a = w_sess(w, "t1", "a", ACT);
      b = w_sess(w, "t1", "b", ACT);
    }
    /* tagged for a, but b's status records it */
    w_sb(w, "sb-x", SBR, NOW + 10 * MIN_MS, "t1", "a");
    w_link(b, "sb-x");
    p = w_plan(w);
    CHECK(p);
    CHECK(p_sess(p, a)->status.sandbox_id == NULL);
    CHECK(p_find(p, PLAN_CREATE, NULL));
    CHECK_STR(cond_reason(&p_sess(p, b)->status, "Conflict"),
              "SandboxMismatch");
    CHECK_STR(p_sess(p, b)->status.sandbox_id, "sb-x");
    CHECK(!p_find(p, PLAN_DELETE, NULL));
    text[order] = p_text(p);
    CHECK(text[order]);
    plan_free(p);
    w_del(w);
  }
  /* the sessions' lines come in input order: compare the actions */
  CHECK(!strncmp(text[0], text[1], strcspn(text[0], "s")));
  CHECK(strstr(text[0], "action create session=t1/a"));
  CHECK(strstr(text[1], "action create session=t1/a"));
  free(text[0]);
  free(text[1]);
}

/* plan_compute_ex() with one scratch over passes of different sizes gives
 * the plan plan_compute() gives: nothing of an earlier pass leaks. */
TEST(scratch_reused_across_passes_gives_the_same_plans)
{
  static const size_t sizes[] = {40, 3, 0, 200, 7};
  plan_scratch *sc = plan_scratch_new();
  size_t k, i;
  CHECK(sc);
  for(k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
    world *w = w_new();
    plan_input in;
    plan *p1 = NULL, *p2 = NULL;
    char *t1, *t2;
    for(i = 0; i < sizes[k]; i++) {
      char name[32], id[32];
      session *s;
      snprintf(name, sizeof(name), "s%zu", i);
      snprintf(id, sizeof(id), "sb-%zu-%zu", k, i);
      s = w_sess(w, "t1", name, ACT);
      if(i % 5 == 1)
        continue; /* no sandbox: create */
      if(i % 7 == 2)
        w_link(s, "sb-shared"); /* claimed by several */
      else
        w_link(s, id);
      if(i % 3)
        w_sb(w, id, SBR, NOW + 10 * MIN_MS, "t1", name);
    }
    memset(&in, 0, sizeof(in));
    in.sessions = w->s;
    in.n_sessions = w->ns;
    in.sandboxes = w->b;
    in.n_sandboxes = w->nb;
    in.list_complete = true;
    in.cube_now = w->now;
    CHECK(!plan_compute(&in, &w->cfg, &p1));
    CHECK(!plan_compute_ex(&in, &w->cfg, sc, &p2));
    t1 = p_text(p1);
    t2 = p_text(p2);
    CHECK(t1 && t2);
    CHECK_STR(t1, t2);
    free(t1);
    free(t2);
    plan_free(p1);
    plan_free(p2);
    w_del(w);
  }
  plan_scratch_free(sc);
  plan_scratch_free(NULL);
}

TEST_LIST = {
  T(link_hash_collision_falls_back_to_the_id),
  T(id_hash_collision_is_not_a_duplicate_report),
  T(pair_hash_collision_is_not_a_shared_pair),
  T(tag_join_yields_to_a_later_link_in_any_order),
  T(scratch_reused_across_passes_gives_the_same_plans),
  {0},
};

TEST_MAIN()
