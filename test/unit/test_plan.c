/* Table-driven tests of the planner: one or more per safety rule of
 * docs/architecture.md and per state of docs/session-api.md, each named after what it proves. */
#include "test/harness.h"
#include "test/unit/plan_world.h"

#define NOW W_NOW
#define SBP CUBE_SB_PAUSED
#define SBR CUBE_SB_RUNNING
#define ACT SESSION_STATE_ACTIVE
#define RUN SESSION_STATE_RUNNING
#define PAU SESSION_STATE_PAUSED
#define END SESSION_STATE_ENDED

/* ---------- rule 1: Cube's clock only ---------- */

/* The planner has no clock input: the same paused sandbox is reclaimed or
 * not purely by cube_now - endAt against reclaimAfter, whatever the local
 * time; and with no Cube clock at all (0) nothing time-based happens. */
static const struct {
  const char *name;
  sc_time now;
  sc_time end_at;
  size_t reclaims;
} rule1_cases[] = {
  {"just before", NOW, NOW - 24 * HOUR_MS + 1, 0},
  {"exactly reclaimAfter", NOW, NOW - 24 * HOUR_MS, 1},
  {"well past", NOW, NOW - 100 * HOUR_MS, 1},
  {"clock in 1990 (local skew is irrelevant)", 631152000000LL,
   631152000000LL - 25 * HOUR_MS, 1},
  {"same endAt, Cube clock earlier", NOW - 2 * HOUR_MS,
   NOW - 25 * HOUR_MS, 0},
  {"no Cube clock", 0, NOW - 100 * HOUR_MS, 0},
};

TEST(rule1_no_local_clock_only_cube_now)
{
  size_t i;
  for(i = 0; i < sizeof(rule1_cases) / sizeof(rule1_cases[0]); i++) {
    world *w = w_new();
    session *s = w_sess(w, "t1", "a", ACT);
    plan *p;
    w_link(s, "sb1");
    w_sb(w, "sb1", SBP, rule1_cases[i].end_at, "t1", "a");
    w->now = rule1_cases[i].now;
    p = w_plan(w);
    CHECK(p);
    CHECK_MSG(p_count(p, PLAN_DELETE, PLAN_DEL_RECLAIM) ==
                rule1_cases[i].reclaims,
              "case %s: %zu reclaims", rule1_cases[i].name,
              p_count(p, PLAN_DELETE, PLAN_DEL_RECLAIM));
    plan_free(p);
    w_del(w);
  }
}

/* ---------- rule 2: absence is not evidence ---------- */

TEST(rule2_missing_sandbox_is_confirmed_not_recreated)
{
  static const session_state states[] = {ACT, RUN, PAU, END};
  size_t i;
  for(i = 0; i < 4; i++) {
    world *w = w_new();
    session *s = w_sess(w, "t1", "a", states[i]);
    plan *p;
    const plan_action *a;
    w_link(s, "sb-missing");
    s->status.phase = SESSION_PHASE_RUNNING;
    p = w_plan(w);
    CHECK(p);
    a = p_find(p, PLAN_CONFIRM, "sb-missing");
    CHECK_MSG(a, "state %s: no confirm", session_state_name(states[i]));
    CHECK_STR(a->ns, "t1");
    CHECK(strstr(a->reason, "absence is not evidence"));
    CHECK_INT(p_count(p, PLAN_CREATE, PLAN_DEL_NONE), 0);
    CHECK_INT(p->n_actions, 1);
    /* the status keeps its link while the GET is out */
    CHECK_STR(p->sessions[0].status.sandbox_id, "sb-missing");
    CHECK_INT(p->sessions[0].status.phase, SESSION_PHASE_RUNNING);
    plan_free(p);
    w_del(w);
  }
}

TEST(rule2_missing_sandbox_waits_no_duplicate_delete)
{
  /* a tag-matched sandbox exists, but the linked one is unconfirmed: the
   * tag-matched one may be a duplicate or the winner; decide nothing */
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  plan *p;
  w_link(s, "sb-linked");
  w_sb(w, "sb-other", SBR, NOW + MIN_MS, "t1", "a");
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 1);
  CHECK(p_find(p, PLAN_CONFIRM, "sb-linked"));
  plan_free(p);
  w_del(w);
}

TEST(rule2_confirmed_gone_clears_link_and_creates)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  plan *p;
  const plan_session *ps;
  w_link(s, "sb-gone");
  w->gone[w->ngone++] = "sb-gone";
  p = w_plan(w);
  CHECK(p);
  CHECK(p_find(p, PLAN_CREATE, NULL));
  CHECK(!p_find(p, PLAN_CONFIRM, NULL));
  ps = p_sess(p, s);
  CHECK(ps->status.sandbox_id == NULL);
  CHECK_INT(ps->status.phase, SESSION_PHASE_CREATING);
  CHECK(ps->status_changed);
  plan_free(p);
  w_del(w);
}

TEST(rule2_gone_but_tag_matched_adopts_instead_of_create)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  plan *p;
  w_link(s, "sb-gone");
  w->gone[w->ngone++] = "sb-gone";
  w_sb(w, "sb-new", SBR, NOW + MIN_MS, "t1", "a");
  p = w_plan(w);
  CHECK(p);
  CHECK(!p_find(p, PLAN_CREATE, NULL));
  CHECK_STR(p->sessions[0].status.sandbox_id, "sb-new");
  plan_free(p);
  w_del(w);
}

TEST(rule2_truncated_list_forbids_orphan_delete)
{
  static const bool complete[] = {false, true};
  size_t i;
  for(i = 0; i < 2; i++) {
    world *w = w_new();
    plan *p;
    w_sb(w, "orph", SBP, NOW - 5 * HOUR_MS, "t1", "gone-session");
    w->complete = complete[i];
    p = w_plan(w);
    CHECK(p);
    CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_ORPHAN), complete[i] ? 1 : 0);
    plan_free(p);
    w_del(w);
  }
}

TEST(rule2_truncated_list_still_allows_intent)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", END);
  plan *p;
  w_link(s, "sb1");
  w_sb(w, "sb1", SBR, NOW + MIN_MS, "t1", "a");
  w->complete = false;
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_ENDED), 1);
  plan_free(p);
  w_del(w);
}

/* ---------- rule 3: confirm before delete ---------- */

TEST(rule3_delete_carries_expectations)
{
  world *w = w_new();
  session *r = w_sess(w, "t1", "rec", ACT);
  session *e = w_sess(w, "t1", "end", END);
  session *l = w_sess(w, "t1", "lost", ACT);
  plan *p;
  const plan_action *a;
  w_link(r, "sb-rec");
  w_link(e, "sb-end");
  w_link(l, "sb-lost");
  w_sb(w, "sb-rec", SBP, NOW - 30 * HOUR_MS, "t1", "rec");
  w_sb(w, "sb-end", SBR, NOW + MIN_MS, "t1", "end");
  w_sb(w, "sb-lost", SBP, NOW - 30 * HOUR_MS, NULL, NULL); /* tags lost */
  w_sb(w, "sb-orph", SBP, NOW - 30 * HOUR_MS, "t1", "nobody");
  p = w_plan(w);
  CHECK(p);

  a = p_find(p, PLAN_DELETE, "sb-rec");
  CHECK(a);
  CHECK_INT(a->del_kind, PLAN_DEL_RECLAIM);
  CHECK_STR(a->expect_tenant, "t1");
  CHECK(a->expect_paused);
  CHECK(!a->expect_managed_by);
  CHECK_INT(a->end_at, NOW - 30 * HOUR_MS);
  CHECK_INT(a->cube_now, NOW);
  CHECK_STR(a->reason, "sandbox sb-rec paused for 30h by Cube's clock (endAt "
                       "2026-11-28T04:00:00Z, now 2026-11-29T10:00:00Z) >= "
                       "reclaimAfter 24h");

  a = p_find(p, PLAN_DELETE, "sb-end");
  CHECK(a);
  CHECK_INT(a->del_kind, PLAN_DEL_ENDED);
  CHECK_STR(a->expect_tenant, "t1");
  CHECK(!a->expect_paused);

  a = p_find(p, PLAN_DELETE, "sb-lost");
  CHECK(a);
  CHECK_INT(a->del_kind, PLAN_DEL_RECLAIM);
  CHECK(a->expect_tenant == NULL); /* no tags were observed */
  CHECK(a->expect_paused);

  a = p_find(p, PLAN_DELETE, "sb-orph");
  CHECK(a);
  CHECK_INT(a->del_kind, PLAN_DEL_ORPHAN);
  CHECK_STR(a->expect_tenant, "t1");
  CHECK(a->expect_paused);
  CHECK(a->expect_managed_by);
  CHECK(a->ns == NULL && a->name == NULL);
  plan_free(p);
  w_del(w);
}

/* ---------- rule 4: ownership recorded twice ---------- */

TEST(rule4_untagged_unlinked_sandbox_untouched)
{
  world *w = w_new();
  plan *p;
  w_sess(w, "t1", "a", END);                       /* wants deletes */
  w_sb(w, "bare", SBP, NOW - 1000 * HOUR_MS, NULL, NULL);
  w_sb_mb(w, "foreign", SBP, NOW - 1000 * HOUR_MS, "t1", "a", "other-ctl");
  w_sb_mb(w, "foreign2", SBP, NOW - 1000 * HOUR_MS, "t1", "zz", "other-ctl");
  w->cfg.force = true;
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 0);
  CHECK_INT(p->n_managed, 0);
  CHECK_INT(p->sessions[0].status.phase, SESSION_PHASE_ENDED);
  plan_free(p);
  w_del(w);
}

TEST(metadata_lost_on_pause_no_second_sandbox)
{
  /* Cube dropped the tags of the paused sandbox: the link keeps it ours */
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  plan *p;
  const plan_session *ps;
  w_link(s, "sb1");
  s->status.applied_idle_timeout_ms = 15 * MIN_MS;
  w_sb(w, "sb1", SBP, NOW - HOUR_MS, NULL, NULL);
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 0);
  ps = p_sess(p, s);
  CHECK_STR(ps->status.sandbox_id, "sb1");
  CHECK_INT(ps->status.phase, SESSION_PHASE_PAUSED);
  CHECK_STR(cond_reason(&ps->status, "Ready"), "IdlePaused");
  CHECK_INT(ps->next_due, NOW - HOUR_MS + 24 * HOUR_MS);
  plan_free(p);
  w_del(w);
}

/* ---------- rule 5: tenants never cross ---------- */

TEST(rule5_tenant_mismatch_conflict)
{
  static const session_state states[] = {ACT, RUN, PAU, END};
  size_t i;
  for(i = 0; i < 4; i++) {
    world *w = w_new();
    session *s = w_sess(w, "tenant-a", "a", states[i]);
    plan *p;
    const plan_session *ps;
    w_link(s, "sbX"); /* forged link or mixed tags */
    w_sb(w, "sbX", i % 2 ? SBR : SBP, NOW - 1000 * HOUR_MS, "tenant-b",
         "a");
    p = w_plan(w);
    CHECK(p);
    CHECK_MSG(p->n_actions == 0, "state %s: %zu actions",
              session_state_name(states[i]), p->n_actions);
    ps = p_sess(p, s);
    CHECK_STR(cond_status(&ps->status, "Conflict"), "True");
    CHECK_STR(cond_reason(&ps->status, "Conflict"), "TenantMismatch");
    CHECK_STR(ps->status.sandbox_id, "sbX"); /* still recorded: protected */
    if(states[i] != END) {
      CHECK_INT(ps->status.phase, SESSION_PHASE_FAILED);
      CHECK_STR(cond_reason(&ps->status, "Ready"), "TenantConflict");
    }
    plan_free(p);
    w_del(w);
  }
}

/* Rule 5 for the writer: with --tenant-binding namespace (the default) a
 * session whose spec.tenantID names another namespace joins no sandbox by
 * tags and creates none; with --tenant-binding free it does (one trusted
 * writer). */
TEST(rule5_tenant_bound_to_namespace)
{
  static const struct {
    bool bind;
    bool owner_too;   /* the real tenant-b/x session exists as well */
    const char *a_sandbox;  /* what a/x (tenant b) ends up linked to */
    bool a_creates;
    const char *a_conflict;
  } cases[] = {
    {true, false, NULL, false, "TenantNotNamespace"},
    {true, true, NULL, false, "TenantNotNamespace"},
    {false, false, "sb-b", false, "(absent)"},
  };
  size_t i;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    world *w = w_new();
    session *a = w_sess(w, "tenant-a", "x", ACT), *b = NULL;
    plan *p;
    const plan_session *ps;
    w->cfg.bind_tenant_to_namespace = cases[i].bind;
    free(a->spec.tenant_id);
    a->spec.tenant_id = strdup("tenant-b");
    if(cases[i].owner_too)
      b = w_sess(w, "tenant-b", "x", ACT);
    w_sb(w, "sb-b", CUBE_SB_RUNNING, W_NOW + 10 * MIN_MS, "tenant-b", "x");
    p = w_plan(w);
    CHECK(p);
    ps = p_sess(p, a);
    CHECK_MSG(str_eq_test(ps->status.sandbox_id, cases[i].a_sandbox),
              "case %zu: linked %s", i,
              ps->status.sandbox_id ? ps->status.sandbox_id : "-");
    CHECK_MSG((p_find(p, PLAN_CREATE, NULL) != NULL) == cases[i].a_creates,
              "case %zu", i);
    CHECK_STR(cond_reason(&ps->status, "Conflict"), cases[i].a_conflict);
    if(cases[i].bind) {
      CHECK_INT(ps->status.phase, SESSION_PHASE_FAILED);
      CHECK(strstr(session_status_get_condition(&ps->status, "Conflict")
                     ->message, "is not the namespace tenant-a"));
    }
    if(b) { /* the real owner adopts its sandbox, no SessionIDInUse */
      ps = p_sess(p, b);
      CHECK_STR(ps->status.sandbox_id, "sb-b");
      CHECK_STR(cond_reason(&ps->status, "Conflict"), "(absent)");
    }
    plan_free(p);
    w_del(w);
  }
}

TEST(rule5_conflict_resolves_and_is_stable)
{
  world *w = w_new();
  session *s = w_sess(w, "tenant-a", "a", ACT);
  plan *p, *p2;
  w_link(s, "sbX");
  w_sb(w, "sbX", SBR, NOW + HOUR_MS, "tenant-b", "a");
  p = w_plan(w);
  CHECK(p);
  CHECK(p->sessions[0].status_changed);
  session_status_clear(&s->status);
  CHECK_OK(session_status_copy(&s->status, &p->sessions[0].status));
  p2 = w_plan(w);
  CHECK(p2);
  CHECK(!p2->sessions[0].status_changed); /* no write storm */
  plan_free(p2);
  /* the operator fixes the link: Conflict goes False once */
  w_link(s, NULL);
  w->now += HOUR_MS;
  p2 = w_plan(w);
  CHECK(p2);
  CHECK_STR(cond_status(&p2->sessions[0].status, "Conflict"), "False");
  CHECK_INT(session_status_get_condition(&p2->sessions[0].status, "Conflict")
              ->last_transition_time, w->now);
  CHECK(p_find(p2, PLAN_CREATE, NULL));
  plan_free(p2);
  plan_free(p);
  w_del(w);
}

/* ---------- rule 6: duplicates ---------- */

static const struct {
  const char *name;
  const char *link;
  sc_time start[3]; /* of ids c, a, b */
  const char *winner;
} dup_cases[] = {
  {"status link wins over older", "sb-b",
   {NOW - 3 * HOUR_MS, NOW - 9 * HOUR_MS, NOW - HOUR_MS}, "sb-b"},
  {"oldest startedAt", NULL,
   {NOW - 3 * HOUR_MS, NOW - HOUR_MS, NOW - 9 * HOUR_MS}, "sb-b"},
  {"tie: lowest ID", NULL, {NOW - HOUR_MS, NOW - HOUR_MS, NOW - HOUR_MS},
   "sb-a"},
  {"unknown startedAt is youngest", NULL, {0, NOW - HOUR_MS, 0}, "sb-a"},
};

TEST(rule6_duplicate_winner_status_then_oldest_then_lowest_id)
{
  size_t i;
  for(i = 0; i < sizeof(dup_cases) / sizeof(dup_cases[0]); i++) {
    world *w = w_new();
    session *s = w_sess(w, "t1", "a", ACT);
    static const char *const ids[] = {"sb-c", "sb-a", "sb-b"};
    size_t k;
    plan *p;
    if(dup_cases[i].link)
      w_link(s, dup_cases[i].link);
    for(k = 0; k < 3; k++)
      w_sb(w, ids[k], SBR, NOW + HOUR_MS, "t1", "a")->started_at =
        dup_cases[i].start[k];
    p = w_plan(w);
    CHECK(p);
    if(!dup_cases[i].link) {
      /* no link yet: this pass links the winner and deletes nothing */
      CHECK_MSG(p_count(p, PLAN_DELETE, PLAN_DEL_DUPLICATE) == 0, "case %s",
                dup_cases[i].name);
      CHECK_STR(p->sessions[0].status.sandbox_id, dup_cases[i].winner);
      plan_free(p);
      w_link(s, dup_cases[i].winner);
      p = w_plan(w);
      CHECK(p);
    }
    CHECK_MSG(p_count(p, PLAN_DELETE, PLAN_DEL_DUPLICATE) == 2, "case %s",
              dup_cases[i].name);
    for(k = 0; k < 3; k++) {
      const plan_action *a = p_find(p, PLAN_DELETE, ids[k]);
      if(!strcmp(ids[k], dup_cases[i].winner))
        CHECK_MSG(!a, "case %s: winner %s deleted", dup_cases[i].name,
                  ids[k]);
      else {
        CHECK_MSG(a, "case %s: %s kept", dup_cases[i].name, ids[k]);
        CHECK_STR(a->expect_tenant, "t1");
      }
    }
    CHECK_STR(p->sessions[0].status.sandbox_id, dup_cases[i].winner);
    plan_free(p);
    w_del(w);
  }
}

/* Found by the chaos suite (seed 1, cube): replica X created sb-a and was
 * killed before its status write; replica Y created sb-b and linked it.
 * A replica that read the store before Y's write kept the oldest (sb-a)
 * and deleted sb-b; one that read it after kept the linked sb-b and
 * deleted sb-a: the session lost both. Now the unlinked view deletes
 * nothing, so the two views never delete every sandbox between them. */
TEST(rule6_duplicates_two_views_never_delete_both)
{
  world *w1 = w_new(), *w2 = w_new();
  session *s1 = w_sess(w1, "t1", "a", ACT);
  session *s2 = w_sess(w2, "t1", "a", ACT);
  plan *p1, *p2;
  (void)s1;
  w_sb(w1, "sb-a", SBR, NOW + HOUR_MS, "t1", "a")->started_at = NOW - 60000;
  w_sb(w1, "sb-b", SBR, NOW + HOUR_MS, "t1", "a")->started_at = NOW - 59000;
  w_sb(w2, "sb-a", SBR, NOW + HOUR_MS, "t1", "a")->started_at = NOW - 60000;
  w_sb(w2, "sb-b", SBR, NOW + HOUR_MS, "t1", "a")->started_at = NOW - 59000;
  w_link(s2, "sb-b");
  p1 = w_plan(w1);
  p2 = w_plan(w2);
  CHECK(p1 && p2);
  CHECK(!p_find(p1, PLAN_DELETE, "sb-a") || !p_find(p2, PLAN_DELETE, "sb-b"));
  CHECK(!p_find(p1, PLAN_DELETE, "sb-b") || !p_find(p2, PLAN_DELETE, "sb-a"));
  CHECK_INT(p_count(p1, PLAN_DELETE, PLAN_DEL_DUPLICATE), 0);
  CHECK_INT(p_count(p2, PLAN_DELETE, PLAN_DEL_DUPLICATE), 1);
  CHECK(p_find(p2, PLAN_DELETE, "sb-a"));
  plan_free(p1);
  plan_free(p2);
  w_del(w1);
  w_del(w2);
}

/* ---------- rule 9: the guard ---------- */

static void add_orphans(world *w, int n)
{
  int i;
  for(i = 0; i < n; i++) {
    char id[32], sid[32];
    snprintf(id, sizeof(id), "orph-%03d", i);
    snprintf(sid, sizeof(sid), "s%03d", i);
    w_sb(w, id, SBP, NOW - 2 * HOUR_MS, "t1", sid);
  }
}

TEST(rule9_guard_trips)
{
  world *w = w_new();
  plan *p;
  add_orphans(w, 12);
  p = w_plan(w);
  CHECK(p);
  CHECK(p->guard_tripped);
  CHECK_INT(p->n_orphans, 12);
  CHECK_INT(p->n_managed, 12);
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_ORPHAN), 0);
  CHECK(p->guard_message && strstr(p->guard_message, "withheld 12 orphan"));
  CHECK(strstr(p->guard_message, "of 12 managed"));
  plan_free(p);
  w_del(w);
}

static const struct {
  int orphans, managed_extra;
  bool trips;
} guard_cases[] = {
  {2, 0, false},    /* not more than the floor (2) */
  {3, 0, true},
  {10, 0, true},    /* a wiped store, a fleet of 10: none deleted (before:
                       all 10, the floor was 10) */
  {11, 100, false}, /* 11 of 111 is under 20% */
  {30, 100, true},  /* 30 of 130 is over 20% */
};

TEST(rule9_guard_needs_fraction_and_floor)
{
  size_t i;
  for(i = 0; i < sizeof(guard_cases) / sizeof(guard_cases[0]); i++) {
    world *w = w_new();
    plan *p;
    int k;
    add_orphans(w, guard_cases[i].orphans);
    for(k = 0; k < guard_cases[i].managed_extra; k++) {
      char name[32];
      session *s;
      snprintf(name, sizeof(name), "live%03d", k);
      s = w_sess(w, "t2", name, ACT);
      w_link(s, name);
      s->status.applied_idle_timeout_ms = 15 * MIN_MS;
      w_sb(w, name, SBR, NOW + HOUR_MS, "t2", name);
    }
    p = w_plan(w);
    CHECK(p);
    CHECK_MSG(p->guard_tripped == guard_cases[i].trips, "case %zu", i);
    CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_ORPHAN),
              guard_cases[i].trips ? 0 : guard_cases[i].orphans);
    plan_free(p);
    w_del(w);
  }
}

TEST(rule9_guard_not_for_intent)
{
  world *w = w_new();
  plan *p;
  int i;
  add_orphans(w, 40);
  for(i = 0; i < 15; i++) {
    char name[32], id[32];
    session *s;
    snprintf(name, sizeof(name), "e%02d", i);
    snprintf(id, sizeof(id), "sb-e%02d", i);
    s = w_sess(w, "t3", name, END);
    w_link(s, id);
    w_sb(w, id, SBR, NOW + HOUR_MS, "t3", name);
    snprintf(name, sizeof(name), "r%02d", i);
    snprintf(id, sizeof(id), "sb-r%02d", i);
    s = w_sess(w, "t3", name, ACT);
    w_link(s, id);
    w_sb(w, id, SBP, NOW - 48 * HOUR_MS, "t3", name);
  }
  p = w_plan(w);
  CHECK(p);
  CHECK(p->guard_tripped);
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_ORPHAN), 0);
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_ENDED), 15);
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_RECLAIM), 15);
  plan_free(p);
  w_del(w);
}

TEST(rule9_force_overrides)
{
  world *w = w_new();
  plan *p;
  add_orphans(w, 50);
  w->cfg.force = true;
  p = w_plan(w);
  CHECK(p);
  CHECK(!p->guard_tripped);
  CHECK(p->guard_message == NULL);
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_ORPHAN), 50);
  plan_free(p);
  w_del(w);
}

/* ---------- state Active (docs/session-api.md) ---------- */

TEST(state_active_creates_with_rounded_timeout)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  plan *p;
  const plan_action *a;
  s->spec.idle_timeout_ms = 90500; /* 90.5s -> 91s */
  p = w_plan(w);
  CHECK(p);
  a = p_find(p, PLAN_CREATE, NULL);
  CHECK(a);
  CHECK_INT(a->timeout_s, 91);
  CHECK(a->sandbox_id == NULL);
  CHECK_STR(a->name, "a");
  CHECK_INT(p->sessions[0].status.phase, SESSION_PHASE_CREATING);
  CHECK_STR(cond_reason(&p->sessions[0].status, "Ready"), "Creating");
  plan_free(p);
  w_del(w);
}

/* The create claim (status.createIntent): another process's claim younger
 * than the TTL by Cube's clock holds back a create; an old one, our own
 * one, or a found sandbox does not, and a found sandbox clears it. */
TEST(create_intent_of_another_replica_waits)
{
  static const struct {
    const char *by;
    int64_t age_ms;       /* Cube's now - intent.at */
    bool tagged_sandbox;  /* the claimed create is already listed */
    bool creates;
    bool keeps_intent;
  } cases[] = {
    {"r1#aaaa", 0, false, false, true},
    {"r1#aaaa", 2999, false, false, true},
    {"r1#aaaa", 3000, false, true, true},          /* stale: create */
    {"r1#aaaa", -5 * 1000LL, false, false, true},  /* Cube's clock behind */
    {"r0#self", 1000, false, true, true},          /* ours: retry */
    {"r1#aaaa", 1000, true, false, false},         /* adopted: cleared */
  };
  size_t i;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    world *w = w_new();
    session *s = w_sess(w, "t1", "a", ACT);
    plan *p;
    const plan_session *ps;
    w->cfg.identity = "r0#self";
    free(s->spec.session_id); /* the default (the name) */
    s->spec.session_id = strdup("c1");
    s->status.phase = SESSION_PHASE_CREATING;
    s->status.create_intent_by = strdup(cases[i].by);
    s->status.create_intent_at = w->now - cases[i].age_ms;
    if(cases[i].tagged_sandbox)
      w_sb(w, "sb1", CUBE_SB_RUNNING, w->now + 15 * MIN_MS, "t1", "c1");
    p = w_plan(w);
    CHECK(p);
    CHECK_MSG((p_find(p, PLAN_CREATE, NULL) != NULL) == cases[i].creates,
              "case %zu", i);
    ps = p_sess(p, s);
    CHECK_MSG((ps->status.create_intent_at != 0) == cases[i].keeps_intent,
              "case %zu", i);
    if(!cases[i].creates && !cases[i].tagged_sandbox) {
      CHECK_INT(ps->status.phase, SESSION_PHASE_CREATING);
      CHECK(strstr(session_status_get_condition(&ps->status, "Ready")->message,
                   "waiting for the create claimed by r1#aaaa"));
      /* come back when the claim runs out, by Cube's clock */
      CHECK_INT(ps->next_due, s->status.create_intent_at + 3 * 1000LL);
    }
    if(cases[i].tagged_sandbox)
      CHECK_STR(ps->status.sandbox_id, "sb1");
    plan_free(p);
    w_del(w);
  }
}

/* Without an identity (sessionctl plan, tests) every fresh claim holds. */
TEST(create_intent_without_identity_holds_and_create_clears_it)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  session_status st;
  plan *p;
  const plan_action *a;
  s->status.create_intent_by = strdup("r0#self");
  s->status.create_intent_at = w->now - 1000;
  p = w_plan(w);
  CHECK(p);
  CHECK(!p_find(p, PLAN_CREATE, NULL));
  plan_free(p);
  s->status.create_intent_at = w->now - 91 * 1000LL;
  p = w_plan(w);
  CHECK(p);
  a = p_find(p, PLAN_CREATE, NULL);
  CHECK(a);
  CHECK_OK(session_status_copy(&st, &s->status));
  CHECK_OK(plan_status_after(s, a, "sb-new", &st));
  CHECK_INT(st.create_intent_at, 0);
  CHECK(st.create_intent_by == NULL);
  CHECK_STR(st.sandbox_id, "sb-new");
  session_status_clear(&st);
  plan_free(p);
  w_del(w);
}

TEST(state_active_without_template_fails)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  plan *p;
  free(s->spec.template_id);
  s->spec.template_id = NULL;
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 0);
  CHECK_INT(p->sessions[0].status.phase, SESSION_PHASE_FAILED);
  CHECK_STR(cond_reason(&p->sessions[0].status, "Ready"), "InvalidSpec");
  plan_free(p);
  w_del(w);
}

TEST(state_active_idle_pause_left_alone)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  plan *p;
  w_link(s, "sb1");
  s->status.applied_idle_timeout_ms = 15 * MIN_MS;
  w_sb(w, "sb1", SBP, NOW - 2 * HOUR_MS, "t1", "a");
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 0); /* no resume: auto-resume is Cube's */
  CHECK_INT(p->sessions[0].status.phase, SESSION_PHASE_PAUSED);
  CHECK_STR(cond_status(&p->sessions[0].status, "Ready"), "True");
  CHECK_STR(cond_reason(&p->sessions[0].status, "Ready"), "IdlePaused");
  plan_free(p);
  w_del(w);
}

TEST(state_active_running_steady)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  plan *p;
  w_link(s, "sb1");
  s->status.applied_idle_timeout_ms = 15 * MIN_MS;
  w_sb(w, "sb1", SBR, NOW + 60 * 1000, "t1", "a");
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 0); /* Active: no keepalive, Cube idles it */
  CHECK_INT(p->sessions[0].status.phase, SESSION_PHASE_RUNNING);
  CHECK_STR(cond_reason(&p->sessions[0].status, "Ready"), "SandboxRunning");
  CHECK_INT(p->sessions[0].next_due, 0);
  plan_free(p);
  w_del(w);
}

TEST(active_resumes_controller_paused)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  plan *p;
  const plan_action *a;
  w_link(s, "sb1");
  s->status.paused_by_controller = true;
  w_sb(w, "sb1", SBP, NOW - 30 * HOUR_MS, "t1", "a");
  p = w_plan(w);
  CHECK(p);
  a = p_find(p, PLAN_RESUME, "sb1");
  CHECK(a);
  CHECK_INT(a->timeout_s, 900);
  CHECK_INT(p->n_actions, 1); /* resume, not reclaim: the user is back */
  plan_free(p);
  w_del(w);
}

TEST(set_timeout_on_idle_change)
{
  static const struct {
    cube_sb_state st;
    int64_t applied;
    size_t n;
  } cases[] = {
    {CUBE_SB_RUNNING, 15 * MIN_MS, 1}, /* changed to 30m */
    {CUBE_SB_RUNNING, 30 * MIN_MS, 0}, /* already applied */
    {CUBE_SB_PAUSED, 15 * MIN_MS, 0},  /* E2B 404s for paused */
    {CUBE_SB_RUNNING, 0, 1},           /* unknown (adopted) */
  };
  size_t i;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    world *w = w_new();
    session *s = w_sess(w, "t1", "a", ACT);
    plan *p;
    const plan_action *a;
    s->spec.idle_timeout_ms = 30 * MIN_MS;
    w_link(s, "sb1");
    s->status.applied_idle_timeout_ms = cases[i].applied;
    w_sb(w, "sb1", cases[i].st, NOW + MIN_MS, "t1", "a");
    p = w_plan(w);
    CHECK(p);
    CHECK_MSG(p_count(p, PLAN_SET_TIMEOUT, PLAN_DEL_NONE) == cases[i].n,
              "case %zu", i);
    a = p_find(p, PLAN_SET_TIMEOUT, "sb1");
    if(a)
      CHECK_INT(a->timeout_s, 1800);
    plan_free(p);
    w_del(w);
  }
}

/* ---------- state Running (docs/session-api.md) ---------- */

TEST(state_running_keepalive_before_endat)
{
  static const struct {
    sc_time end_at;
    size_t n;
  } cases[] = {
    {NOW + 8 * MIN_MS, 0},  /* endAt - 7m30s is in the future */
    {NOW + 7 * MIN_MS + 30000, 1}, /* exactly due */
    {NOW + MIN_MS, 1},
    {0, 0},                 /* never times out */
  };
  size_t i;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    world *w = w_new();
    session *s = w_sess(w, "t1", "a", RUN);
    plan *p;
    w_link(s, "sb1");
    s->status.applied_idle_timeout_ms = 15 * MIN_MS;
    w_sb(w, "sb1", SBR, cases[i].end_at, "t1", "a");
    p = w_plan(w);
    CHECK(p);
    CHECK_MSG(p_count(p, PLAN_KEEPALIVE, PLAN_DEL_NONE) == cases[i].n,
              "case %zu", i);
    CHECK_INT(p->n_actions, cases[i].n);
    CHECK_INT(p->sessions[0].next_due,
              cases[i].end_at ? cases[i].end_at - 7 * MIN_MS - 30000 : 0);
    if(cases[i].n)
      CHECK_INT(p->actions[0].timeout_s, 900);
    plan_free(p);
    w_del(w);
  }
}

TEST(state_running_resumes_and_creates_never_reclaims)
{
  world *w = w_new();
  session *a = w_sess(w, "t1", "a", RUN);
  session *b = w_sess(w, "t1", "b", RUN);
  plan *p;
  w_link(a, "sb1");
  w_sb(w, "sb1", SBP, NOW - 100 * HOUR_MS, "t1", "a");
  b->status.reclaimed_generation = 1; /* Running ignores reclaim */
  p = w_plan(w);
  CHECK(p);
  CHECK(p_find(p, PLAN_RESUME, "sb1"));
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_RECLAIM), 0);
  CHECK_INT(p_count(p, PLAN_CREATE, PLAN_DEL_NONE), 1);
  plan_free(p);
  w_del(w);
}

/* ---------- state Paused (docs/session-api.md) ---------- */

TEST(state_paused_pauses)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", PAU);
  plan *p;
  session_status st;
  w_link(s, "sb1");
  w_sb(w, "sb1", SBR, NOW + HOUR_MS, "t1", "a");
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 1);
  CHECK(p_find(p, PLAN_PAUSE, "sb1"));
  CHECK_OK(session_status_copy(&st, &p->sessions[0].status));
  CHECK_OK(plan_status_after(s, &p->actions[0], NULL, &st));
  CHECK(st.paused_by_controller);
  CHECK_INT(st.phase, SESSION_PHASE_PAUSED);
  CHECK_STR(cond_reason(&st, "Ready"), "SandboxPaused");
  session_status_clear(&st);
  plan_free(p);
  w_del(w);
}

TEST(state_paused_never_creates_and_pausing_needs_nothing)
{
  world *w = w_new();
  session *a = w_sess(w, "t1", "a", PAU);
  session *b = w_sess(w, "t1", "b", PAU);
  plan *p;
  (void)a;
  w_link(b, "sb-b");
  w_sb(w, "sb-b", CUBE_SB_PAUSING, NOW, "t1", "b");
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 0);
  CHECK_INT(p->sessions[0].status.phase, SESSION_PHASE_PAUSED);
  CHECK_STR(cond_reason(&p->sessions[0].status, "Ready"), "NoSandbox");
  CHECK_STR(p->sessions[1].status.sandbox_state, "pausing");
  plan_free(p);
  w_del(w);
}

/* ---------- reclaim ---------- */

TEST(reclaim_by_cube_clock_not_before)
{
  static const struct {
    session_state st;
    int64_t reclaim_after;
    sc_time end_at;
    cube_sb_state sb;
    size_t n;
  } cases[] = {
    {ACT, 24 * HOUR_MS, NOW - 24 * HOUR_MS, CUBE_SB_PAUSED, 1},
    {ACT, 24 * HOUR_MS, NOW - 24 * HOUR_MS + 1000, CUBE_SB_PAUSED, 0},
    {PAU, 2 * HOUR_MS, NOW - 3 * HOUR_MS, CUBE_SB_PAUSED, 1},
    {ACT, 0, NOW - 1000 * HOUR_MS, CUBE_SB_PAUSED, 0},  /* 0 = never */
    {ACT, HOUR_MS, 0, CUBE_SB_PAUSED, 0},      /* no endAt: cannot tell */
    {ACT, HOUR_MS, NOW - 5 * HOUR_MS, CUBE_SB_PAUSING, 0},
    {ACT, HOUR_MS, NOW - 5 * HOUR_MS, CUBE_SB_RUNNING, 0},
  };
  size_t i;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    world *w = w_new();
    session *s = w_sess(w, "t1", "a", cases[i].st);
    plan *p;
    s->spec.reclaim_after_ms = cases[i].reclaim_after;
    s->status.applied_idle_timeout_ms = 15 * MIN_MS;
    w_link(s, "sb1");
    w_sb(w, "sb1", cases[i].sb, cases[i].end_at, "t1", "a");
    p = w_plan(w);
    CHECK(p);
    CHECK_MSG(p_count(p, PLAN_DELETE, PLAN_DEL_RECLAIM) == cases[i].n,
              "case %zu", i);
    if(!cases[i].n && cases[i].sb == CUBE_SB_PAUSED && cases[i].end_at &&
       cases[i].reclaim_after)
      CHECK_INT(p->sessions[0].next_due,
                cases[i].end_at + cases[i].reclaim_after);
    plan_free(p);
    w_del(w);
  }
}

TEST(wake_recreates_after_reclaim)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  plan *p;
  session_status st;
  s->meta.generation = 3;
  w_link(s, "sb1");
  w_sb(w, "sb1", SBP, NOW - 25 * HOUR_MS, "t1", "a");
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 1);
  CHECK_INT(p->actions[0].del_kind, PLAN_DEL_RECLAIM);
  CHECK_OK(session_status_copy(&st, &p->sessions[0].status));
  CHECK_OK(plan_status_after(s, &p->actions[0], NULL, &st));
  CHECK_INT(st.phase, SESSION_PHASE_RECLAIMED);
  CHECK_INT(st.reclaimed_generation, 3);
  CHECK(st.sandbox_id == NULL);
  plan_free(p);
  /* the sandbox is gone; same generation: no new sandbox */
  world_free(w);
  s = w_sess(w, "t1", "a", ACT);
  s->meta.generation = 3;
  session_status_clear(&s->status);
  s->status = st;
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 0);
  CHECK_INT(p->sessions[0].status.phase, SESSION_PHASE_RECLAIMED);
  CHECK(!p->sessions[0].status_changed);
  plan_free(p);
  /* sessionctl wake bumps spec.wake, the store bumps the generation */
  s->spec.wake++;
  s->meta.generation = 4;
  p = w_plan(w);
  CHECK(p);
  CHECK(p_find(p, PLAN_CREATE, NULL));
  plan_free(p);
  w_del(w);
}

/* ---------- Ended and tombstones ---------- */

TEST(ended_deletes)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", END);
  plan *p;
  session_status st;
  s->status.phase = SESSION_PHASE_RUNNING;
  w_link(s, "sb1");
  w_sb(w, "sb1", SBR, NOW + HOUR_MS, "t1", "a");
  w_sb(w, "sb2", SBP, NOW - HOUR_MS, "t1", "a"); /* a duplicate too */
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_ENDED), 2);
  CHECK_INT(p->n_actions, 2);
  CHECK_INT(p->sessions[0].status.phase, SESSION_PHASE_RUNNING);
  CHECK_STR(cond_reason(&p->sessions[0].status, "Ready"), "Ending");
  CHECK_OK(session_status_copy(&st, &p->sessions[0].status));
  CHECK_OK(plan_status_after(s, p_find(p, PLAN_DELETE, "sb1"), NULL, &st));
  CHECK_INT(st.phase, SESSION_PHASE_ENDED);
  CHECK(st.sandbox_id == NULL);
  session_status_clear(&st);
  plan_free(p);
  world_free(w);
  s = w_sess(w, "t1", "a", END);
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 0);
  CHECK_INT(p->sessions[0].status.phase, SESSION_PHASE_ENDED);
  plan_free(p);
  w_del(w);
}

TEST(tombstone_deletes)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  plan *p;
  s->meta.deletion_timestamp = NOW - MIN_MS;
  w_sb(w, "sb1", SBR, NOW + HOUR_MS, "t1", "a");   /* by tags */
  w_sb(w, "sb2", SBP, NOW - HOUR_MS, NULL, NULL);  /* by link, tags lost */
  w_link(s, "sb2");
  w->complete = false;
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_TOMBSTONE), 2);
  CHECK(strstr(p->actions[0].reason, "session deleted"));
  plan_free(p);
  w_del(w);
}

TEST(live_session_wins_over_tombstone_of_same_tags)
{
  /* deleted then re-created under the same name: the tombstone deletes
   * only what it linked; the tag-matched sandbox goes to the live one */
  world *w = w_new();
  session *t = w_sess(w, "t1", "a", ACT);
  session *l = w_sess(w, "t1", "a", ACT);
  plan *p;
  t->meta.deletion_timestamp = NOW - HOUR_MS;
  w_link(t, "sb-old");
  w_sb(w, "sb-old", SBP, NOW - HOUR_MS, "t1", "a");
  w_sb(w, "sb-new", SBR, NOW + HOUR_MS, "t1", "a");
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_TOMBSTONE), 1);
  CHECK(p_find(p, PLAN_DELETE, "sb-old"));
  CHECK(!p_find(p, PLAN_DELETE, "sb-new"));
  CHECK_STR(p_sess(p, l)->status.sandbox_id, "sb-new");
  plan_free(p);
  w_del(w);
}

/* ---------- orphans ---------- */

TEST(orphan_grace)
{
  static const struct {
    cube_sb_state st;
    sc_time end_at;
    size_t n;
    sc_time due;
  } cases[] = {
    {CUBE_SB_PAUSED, NOW - 9 * MIN_MS, 0, NOW + MIN_MS},
    {CUBE_SB_PAUSED, NOW - 10 * MIN_MS, 1, 0},
    {CUBE_SB_RUNNING, NOW - 10 * HOUR_MS, 0, 0}, /* left to idle pause */
    {CUBE_SB_PAUSING, NOW - 10 * HOUR_MS, 0, 0},
    {CUBE_SB_PAUSED, 0, 0, 0},                   /* no endAt: no age */
  };
  size_t i;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    world *w = w_new();
    plan *p;
    w_sb(w, "o1", cases[i].st, cases[i].end_at, "t1", "x");
    p = w_plan(w);
    CHECK(p);
    CHECK_MSG(p_count(p, PLAN_DELETE, PLAN_DEL_ORPHAN) == cases[i].n,
              "case %zu", i);
    CHECK_INT(p->next_orphan_due, cases[i].due);
    plan_free(p);
    w_del(w);
  }
}

TEST(orphan_not_when_linked_by_any_status)
{
  /* tagged for a session that does not exist, but another session's
   * status records it: not an orphan (rule 4) */
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  plan *p;
  w_link(s, "sb1");
  w_sb(w, "sb1", SBP, NOW - 100 * HOUR_MS, "t1", "other");
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_ORPHAN), 0);
  CHECK_STR(cond_reason(&p->sessions[0].status, "Conflict"),
            "SandboxMismatch");
  plan_free(p);
  w_del(w);
}

/* ---------- joins ---------- */

TEST(session_id_in_use_conflict)
{
  world *w = w_new();
  session *a = w_sess(w, "t1", "a", ACT);
  session *b = w_sess(w, "t1", "b", ACT);
  plan *p;
  free(b->spec.session_id);
  b->spec.session_id = strdup("a");
  w_sb(w, "sb1", SBR, NOW + HOUR_MS, "t1", "a");
  p = w_plan(w);
  CHECK(p);
  CHECK_STR(p_sess(p, a)->status.sandbox_id, "sb1");
  CHECK_STR(cond_reason(&p_sess(p, b)->status, "Conflict"),
            "SessionIDInUse");
  CHECK_INT(p_sess(p, b)->status.phase, SESSION_PHASE_FAILED);
  CHECK_INT(p_count(p, PLAN_CREATE, PLAN_DEL_NONE), 0);
  plan_free(p);
  w_del(w);
}

TEST(sandbox_claimed_by_two_statuses)
{
  world *w = w_new();
  session *a = w_sess(w, "t1", "a", ACT);
  session *b = w_sess(w, "t1", "b", ACT);
  plan *p;
  w_link(a, "sb1");
  w_link(b, "sb1");
  w_sb(w, "sb1", SBR, NOW + HOUR_MS, NULL, NULL);
  p = w_plan(w);
  CHECK(p);
  CHECK_STR(cond_reason(&p_sess(p, b)->status, "Conflict"), "SandboxClaimed");
  CHECK(session_status_get_condition(&p_sess(p, a)->status, "Conflict") ==
        NULL);
  CHECK_INT(p_count(p, PLAN_CREATE, PLAN_DEL_NONE), 0);
  plan_free(p);
  w_del(w);
}

TEST(duplicate_observation_believes_running)
{
  /* Cube listed one sandbox both as running and paused: no reclaim */
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  plan *p;
  w_link(s, "sb1");
  s->status.applied_idle_timeout_ms = 15 * MIN_MS;
  w_sb(w, "sb1", SBP, NOW - 100 * HOUR_MS, "t1", "a");
  w_sb(w, "sb1", SBR, NOW - 100 * HOUR_MS, "t1", "a");
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 0);
  CHECK_INT(p->n_managed, 1);
  plan_free(p);
  w_del(w);
}

/* ---------- status ---------- */

TEST(status_after_each_action)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  plan_action a;
  session_status st;
  memset(&a, 0, sizeof(a));
  memset(&st, 0, sizeof(st));
  s->meta.generation = 2;
  a.type = PLAN_CREATE;
  a.cube_now = NOW;
  CHECK_INT(plan_status_after(s, &a, NULL, &st), SC_ERR_INVALID);
  CHECK_OK(plan_status_after(s, &a, "new1", &st));
  CHECK_STR(st.sandbox_id, "new1");
  CHECK_STR(st.sandbox_state, "running");
  CHECK_INT(st.phase, SESSION_PHASE_RUNNING);
  CHECK_INT(st.applied_idle_timeout_ms, 15 * MIN_MS);
  CHECK_INT(st.observed_generation, 2);
  CHECK_STR(cond_reason(&st, "Ready"), "SandboxRunning");
  CHECK_INT(session_status_get_condition(&st, "Ready")->last_transition_time,
            NOW);
  a.type = PLAN_PAUSE;
  a.sandbox_id = "new1";
  a.cube_now = NOW + 1000;
  CHECK_OK(plan_status_after(s, &a, NULL, &st));
  CHECK(st.paused_by_controller);
  CHECK_STR(st.sandbox_state, "paused");
  /* status True -> True: the transition time stays */
  CHECK_INT(session_status_get_condition(&st, "Ready")->last_transition_time,
            NOW);
  a.type = PLAN_RESUME;
  CHECK_OK(plan_status_after(s, &a, NULL, &st));
  CHECK(!st.paused_by_controller);
  CHECK_INT(st.phase, SESSION_PHASE_RUNNING);
  s->spec.idle_timeout_ms = 5 * MIN_MS;
  a.type = PLAN_SET_TIMEOUT;
  CHECK_OK(plan_status_after(s, &a, NULL, &st));
  CHECK_INT(st.applied_idle_timeout_ms, 5 * MIN_MS);
  a.type = PLAN_DELETE;
  a.del_kind = PLAN_DEL_DUPLICATE;
  a.sandbox_id = "other";
  CHECK_OK(plan_status_after(s, &a, NULL, &st));
  CHECK_STR(st.sandbox_id, "new1");
  a.del_kind = PLAN_DEL_RECLAIM;
  a.sandbox_id = "new1";
  CHECK_OK(plan_status_after(s, &a, NULL, &st));
  CHECK_INT(st.phase, SESSION_PHASE_RECLAIMED);
  CHECK_INT(st.reclaimed_generation, 2);
  CHECK(st.sandbox_id == NULL);
  CHECK_INT(session_status_get_condition(&st, "Ready")->last_transition_time,
            NOW + 1000);
  a.del_kind = PLAN_DEL_ORPHAN;
  CHECK_OK(plan_status_after(NULL, &a, NULL, &st));
  CHECK_INT(plan_status_after(NULL, NULL, NULL, &st), SC_ERR_INVALID);
  session_status_clear(&st);
  w_del(w);
}

TEST(steady_state_writes_no_status)
{
  /* after the status is written once, an unchanged world changes
   * nothing: no status write storm */
  static const session_state states[] = {ACT, RUN, PAU, END};
  size_t i;
  for(i = 0; i < 4; i++) {
    world *w = w_new();
    session *s = w_sess(w, "t1", "a", states[i]);
    plan *p;
    w_link(s, "sb1");
    s->status.applied_idle_timeout_ms = 15 * MIN_MS;
    if(states[i] == PAU)
      s->status.paused_by_controller = true;
    if(states[i] != END)
      w_sb(w, "sb1", states[i] == PAU ? SBP : SBR, NOW + HOUR_MS, "t1",
           "a");
    else
      w->gone[w->ngone++] = "sb1";
    p = w_plan(w);
    CHECK(p);
    CHECK(p->sessions[0].status_changed);
    session_status_clear(&s->status);
    CHECK_OK(session_status_copy(&s->status, &p->sessions[0].status));
    plan_free(p);
    w->now += 7 * MIN_MS; /* Cube's clock moves; nothing is due */
    p = w_plan(w);
    CHECK(p);
    CHECK_MSG(!p->sessions[0].status_changed, "state %s changed",
              session_state_name(states[i]));
    plan_free(p);
    w_del(w);
  }
}

TEST(actions_sorted_orphans_last)
{
  world *w = w_new();
  plan *p;
  size_t i;
  w_sb(w, "a-orphan", SBP, NOW - HOUR_MS, "t0", "x");
  w_sess(w, "t2", "z", ACT);
  w_sess(w, "t1", "b", ACT);
  w_sess(w, "t1", "a", END);
  w_sb(w, "sb-2", SBR, NOW, "t1", "a");
  w_sb(w, "sb-1", SBR, NOW, "t1", "a");
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 5);
  CHECK_STR(p->actions[0].sandbox_id, "sb-1");
  CHECK_STR(p->actions[1].sandbox_id, "sb-2");
  CHECK_STR(p->actions[2].name, "b");
  CHECK_STR(p->actions[3].ns, "t2");
  CHECK_INT(p->actions[4].del_kind, PLAN_DEL_ORPHAN);
  for(i = 0; i < p->n_sessions; i++)
    CHECK(p->sessions[i].s == w->s[i]); /* input order */
  plan_free(p);
  w_del(w);
}

/* action_cmp() as documented (docs/planner.md, "Ordering"), written
 * again here: orphans last, then namespace, name, sandbox ID (NULL
 * first), type, kind, reason. */
static int ref_strcmp0(const char *a, const char *b)
{
  if(!a || !b)
    return a ? 1 : (b ? -1 : 0);
  return strcmp(a, b);
}

static int ref_action_cmp(const plan_action *a, const plan_action *b)
{
  int oa = a->del_kind == PLAN_DEL_ORPHAN, ob = b->del_kind == PLAN_DEL_ORPHAN;
  int c;
  if(oa != ob)
    return oa - ob;
  if((c = ref_strcmp0(a->ns, b->ns)) || (c = ref_strcmp0(a->name, b->name)) ||
     (c = ref_strcmp0(a->sandbox_id, b->sandbox_id)))
    return c;
  if(a->type != b->type)
    return (int)a->type - (int)b->type;
  if(a->del_kind != b->del_kind)
    return (int)a->del_kind - (int)b->del_kind;
  return ref_strcmp0(a->reason, b->reason);
}

/* Hundreds of actions (the sort's merges, not only its first runs),
 * namespaces and names shorter and longer than its 32-byte keys and
 * sharing long prefixes, several actions per session, orphans whose IDs
 * share long prefixes; sessions and sandboxes in a shuffled order. */
TEST(actions_sorted_in_bulk)
{
  static const char *const nss[] = {
    "t", "t1", "tenant-with-a-rather-long-namespace-x",
    "tenant-with-a-rather-long-namespace-y"};
  world *w = w_new();
  plan *p;
  size_t i, j, k, creates = 0, deletes = 0, orphans = 0;
  unsigned seed = 12345;
  session *tmp;
  cube_sandbox tb;
  w->cfg.force = true; /* no guard: every orphan delete stays */
  for(i = 0; i < 4; i++)
    for(j = 0; j < 30; j++) {
      char name[64], id[96];
      if(j % 3 == 0)
        snprintf(name, sizeof(name), "s%zu", j);
      else
        snprintf(name, sizeof(name),
                 "session-with-a-long-common-prefix-%02zu", j);
      if(j % 2) {
        w_sess(w, nss[i], name, ACT); /* no sandbox: create */
        creates++;
        continue;
      }
      w_sess(w, nss[i], name, END);
      for(k = 0; k < 2; k++) { /* two sandboxes: two deletes */
        snprintf(id, sizeof(id), "sb-%zu-%zu-%zu", i, j, 1 - k);
        w_sb(w, id, k ? SBR : SBP, NOW - HOUR_MS, nss[i], name);
        deletes++;
      }
    }
  for(i = 0; i < 40; i++) {
    char id[96];
    snprintf(id, sizeof(id), "orphan-with-a-long-common-id-prefix-%03zu",
             (i * 7) % 40);
    w_sb(w, id, SBP, NOW - 2 * HOUR_MS, "t0", id);
    orphans++;
  }
  for(i = w->ns; i > 1; i--) { /* Fisher-Yates with a fixed LCG */
    seed = seed * 1103515245u + 12345u;
    j = (seed >> 8) % i;
    tmp = w->s[i - 1];
    w->s[i - 1] = w->s[j];
    w->s[j] = tmp;
  }
  for(i = w->nb; i > 1; i--) {
    seed = seed * 1103515245u + 12345u;
    j = (seed >> 8) % i;
    tb = w->b[i - 1];
    w->b[i - 1] = w->b[j];
    w->b[j] = tb;
  }
  p = w_plan(w);
  CHECK(p);
  if(!p) {
    w_del(w);
    return;
  }
  CHECK_INT(p->n_actions, creates + deletes + orphans);
  CHECK_INT(p_count(p, PLAN_CREATE, PLAN_DEL_NONE), creates);
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_ENDED), deletes);
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_ORPHAN), orphans);
  for(i = 0; i + 1 < p->n_actions; i++)
    CHECK(ref_action_cmp(&p->actions[i], &p->actions[i + 1]) <= 0);
  CHECK_STR(p->actions[0].ns, "t");
  CHECK_STR(p->actions[0].name, "s0");
  CHECK_STR(p->actions[0].sandbox_id, "sb-0-0-0");
  CHECK_STR(p->actions[p->n_actions - 1].sandbox_id,
            "orphan-with-a-long-common-id-prefix-039");
  plan_free(p);
  w_del(w);
}

TEST(invalid_input_refused)
{
  plan_input in;
  plan_config cfg;
  plan *p = (plan *)&cfg;
  memset(&in, 0, sizeof(in));
  plan_config_defaults(&cfg);
  CHECK_INT(plan_compute(NULL, &cfg, &p), SC_ERR_INVALID);
  CHECK(p == NULL);
  CHECK_INT(plan_compute(&in, NULL, &p), SC_ERR_INVALID);
  in.n_sessions = 1;
  CHECK_INT(plan_compute(&in, &cfg, &p), SC_ERR_INVALID);
  in.n_sessions = 0;
  CHECK_OK(plan_compute(&in, &cfg, &p));
  CHECK_INT(p->n_actions, 0);
  plan_free(p);
  plan_free(NULL);
  CHECK_STR(plan_action_type_name(PLAN_KEEPALIVE), "keepalive");
  CHECK_STR(plan_delete_kind_name(PLAN_DEL_RECLAIM), "reclaim");
  CHECK_STR(cfg.controller_name, "session-controller");
  CHECK_INT(cfg.orphan_grace_ms, 10 * MIN_MS);
  CHECK_INT(cfg.max_delete_floor, 2);
  CHECK_INT(cfg.brake_window_ms, 10 * MIN_MS);
  CHECK_INT(cfg.reclaim_brake_floor, 10);
}

/* ---------- the plan's statuses (performance contract) ---------- */

/* An unchanged status is not copied: the plan shows the input's own
 * strings and conditions (status_changed false), and plan_free() leaves
 * them alone; a changed one is the plan's own copy. */
TEST(unchanged_status_is_a_view_of_the_input)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  plan *p;
  w_link(s, "sb1");
  s->status.applied_idle_timeout_ms = 15 * MIN_MS;
  w_sb(w, "sb1", SBR, NOW + HOUR_MS, "t1", "a");
  p = w_plan(w);
  CHECK(p);
  CHECK(p->sessions[0].status_changed);
  CHECK(p->sessions[0].status.conditions != s->status.conditions);
  CHECK(p->sessions[0].status.sandbox_id != s->status.sandbox_id);
  session_status_clear(&s->status);
  CHECK_OK(session_status_copy(&s->status, &p->sessions[0].status));
  plan_free(p);
  p = w_plan(w);
  CHECK(p);
  CHECK(!p->sessions[0].status_changed);
  CHECK(p->sessions[0].status.sandbox_id == s->status.sandbox_id);
  CHECK(p->sessions[0].status.conditions == s->status.conditions);
  CHECK_INT(p->sessions[0].status.n_conditions, s->status.n_conditions);
  plan_free(p);
  /* the input is intact after plan_free() */
  CHECK_STR(s->status.sandbox_id, "sb1");
  CHECK_STR(cond_reason(&s->status, "Ready"), "SandboxRunning");
  w_del(w);
}

/* The Ready messages that name the sandbox are compared without being
 * built: a sandbox ID long enough to truncate the message (319
 * characters) must still settle, with no status write on the next pass. */
TEST(truncated_ready_message_settles)
{
  static const struct {
    session_state st;
    cube_sb_state sb;
    const char *reason;
  } cases[] = {
    {ACT, SBR, "SandboxRunning"},
    {ACT, SBP, "IdlePaused"},
    {PAU, SBP, "SandboxPaused"},
  };
  char id[401];
  size_t i;
  memset(id, 'x', sizeof(id) - 1);
  id[sizeof(id) - 1] = 0;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    world *w = w_new();
    session *s = w_sess(w, "t1", "a", cases[i].st);
    const session_condition *c;
    plan *p;
    w_link(s, id);
    s->status.applied_idle_timeout_ms = 15 * MIN_MS;
    if(cases[i].st == PAU)
      s->status.paused_by_controller = true;
    w_sb(w, id, cases[i].sb, NOW + HOUR_MS, "t1", "a");
    p = w_plan(w);
    CHECK(p);
    CHECK(p->sessions[0].status_changed);
    c = session_status_get_condition(&p->sessions[0].status, "Ready");
    CHECK(c);
    CHECK_STR(c ? c->reason : NULL, cases[i].reason);
    CHECK_INT(c && c->message ? strlen(c->message) : 0, 319);
    session_status_clear(&s->status);
    CHECK_OK(session_status_copy(&s->status, &p->sessions[0].status));
    plan_free(p);
    p = w_plan(w);
    CHECK(p);
    CHECK_MSG(!p->sessions[0].status_changed, "case %s changed",
              cases[i].reason);
    plan_free(p);
    /* one character of the message differs: the status is rewritten */
    s->status.conditions[0].message[100] = 'y';
    p = w_plan(w);
    CHECK(p);
    CHECK_MSG(p->sessions[0].status_changed, "case %s: edit not seen",
              cases[i].reason);
    plan_free(p);
    w_del(w);
  }
}

/* ---------- defaults: an absent optional field means its default ---------- */

/* A session as kubectl or another tool writes it: only spec.template set,
 * no namespace, sessionID, tenantID, idleTimeout or reclaimAfter. It
 * joins the sandbox tagged with its name and "default" namespace, and is
 * reclaimed after 24h exactly as one with the defaults written out. */
TEST(absent_optional_fields_mean_their_defaults)
{
  static const bool written[] = {false, true};
  size_t k;
  for(k = 0; k < 2; k++) {
    world *w = w_new();
    session *s = session_new();
    plan *p;
    const plan_action *a;
    s->meta.name = strdup("chat");
    s->meta.generation = 1;
    s->spec.template_id = strdup("python");
    if(written[k] && session_apply_defaults(s))
      abort();
    w->s[w->ns++] = s;
    w_link(s, "sb1");
    w_sb(w, "sb1", SBP, NOW - 24 * HOUR_MS, "default", "chat");
    p = w_plan(w);
    CHECK(p);
    a = p_find(p, PLAN_DELETE, "sb1");
    CHECK(a && a->del_kind == PLAN_DEL_RECLAIM);
    CHECK_STR(a ? a->expect_tenant : NULL, "default");
    plan_free(p);
    /* one ms younger: kept, whether the default is written or not */
    w->b[0].end_at = NOW - 24 * HOUR_MS + 1;
    p = w_plan(w);
    CHECK(p);
    CHECK(!p_find(p, PLAN_DELETE, NULL));
    CHECK_INT(p->sessions[0].status.phase, SESSION_PHASE_PAUSED);
    plan_free(p);
    w_del(w);
  }
}

/* status.tenantID (the CRD's TENANT column) is the effective tenant:
 * spec.tenantID, else the namespace, else "default"; written with the
 * first status and by plan_status_after(), and a status that has it
 * settles (no write on the next pass). */
TEST(status_records_the_effective_tenant)
{
  static const struct {
    const char *ns, *spec_tenant, *want;
  } cases[] = {
    {NULL, NULL, "default"},       /* neither: the default namespace */
    {"tenant-a", NULL, "tenant-a"}, /* no spec.tenantID: the namespace */
    {"tenant-a", "team-x", "team-x"}, /* spec.tenantID (free binding) */
  };
  size_t i;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    world *w = w_new();
    session *s = session_new();
    plan_action a;
    session_status st;
    plan *p;
    w->cfg.bind_tenant_to_namespace = false;
    s->meta.name = strdup("chat");
    if(cases[i].ns)
      s->meta.namespace_ = strdup(cases[i].ns);
    if(cases[i].spec_tenant)
      s->spec.tenant_id = strdup(cases[i].spec_tenant);
    s->meta.generation = 1;
    s->spec.template_id = strdup("python");
    w->s[w->ns++] = s;
    p = w_plan(w);
    CHECK(p);
    CHECK(p->sessions[0].status_changed);
    CHECK_STR(p->sessions[0].status.tenant_id, cases[i].want);
    session_status_clear(&s->status);
    CHECK_OK(session_status_copy(&s->status, &p->sessions[0].status));
    plan_free(p);
    p = w_plan(w);
    CHECK(p);
    CHECK_MSG(!p->sessions[0].status_changed, "case %zu: no settle", i);
    plan_free(p);
    /* a status from before the field (none recorded): written after a
     * create too */
    memset(&a, 0, sizeof(a));
    memset(&st, 0, sizeof(st));
    a.type = PLAN_CREATE;
    a.cube_now = NOW;
    CHECK_OK(plan_status_after(s, &a, "sb-new", &st));
    CHECK_STR(st.tenant_id, cases[i].want);
    session_status_clear(&st);
    w_del(w);
  }
}

/* ---------- rule 12: a sandbox belongs to one object ---------- */

static cube_sandbox *w_sb_uid(world *w, const char *id, cube_sb_state st,
                              sc_time end_at, const char *tenant,
                              const char *sid, const char *uid)
{
  cube_sandbox *b = w_sb(w, id, st, end_at, tenant, sid);
  if(uid && sc_kvlist_set(&b->metadata, SESSION_TAG_SESSION_UID, uid))
    abort();
  return b;
}

/* A session deleted and applied again under the same name is a new
 * object (a new uid, an empty status): the old object's sandbox, tagged
 * with the old uid, is not taken by its tags; the new object gets a
 * sandbox of its own, and the old one is an orphan (deleted once paused
 * past the grace), never resumed for the new one. */
TEST(rule12_new_object_of_old_name_never_inherits)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  plan *p;
  s->meta.uid = strdup("uid-new");
  w_sb_uid(w, "old", SBR, NOW + MIN_MS, "t1", "a", "uid-old");
  p = w_plan(w);
  CHECK(p);
  CHECK(p_find(p, PLAN_CREATE, NULL) != NULL);
  CHECK(!p->sessions[0].status.sandbox_id);
  plan_free(p);
  w->b[0].state = SBP;
  w->b[0].end_at = NOW - HOUR_MS;
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_ORPHAN), 1);
  CHECK(!p_find(p, PLAN_RESUME, NULL));
  CHECK(p_find(p, PLAN_CREATE, NULL) != NULL);
  CHECK(!p->sessions[0].status.sandbox_id);
  plan_free(p);
  w_del(w);
}

/* Rule 16: the name was applied again (the store holds it under another
 * uid, and no object has the sandbox's uid): evidence, not absence. The
 * old object's sandbox goes in the pass that sees it, running (no wait
 * for Cube's idle pause) or paused (no orphan grace); the confirming GET
 * asks our managed-by, not a paused state. */
TEST(rule16_superseded_sandbox_deleted_at_once)
{
  static const struct {
    cube_sb_state st;
    sc_time end_at;
  } cases[] = {
    {CUBE_SB_RUNNING, NOW + 10 * MIN_MS},
    {CUBE_SB_PAUSED, NOW - MIN_MS},  /* paused 1m: within the grace */
  };
  size_t i;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    world *w = w_new();
    session *s = w_sess(w, "t1", "a", ACT);
    const plan_action *a;
    plan *p;
    s->meta.uid = strdup("uid-new");
    w_sb_uid(w, "old", cases[i].st, cases[i].end_at, "t1", "a", "uid-old");
    p = w_plan(w);
    CHECK(p);
    a = p_find(p, PLAN_DELETE, "old");
    CHECK_MSG(a != NULL, "case %zu", i);
    if(a) {
      CHECK_INT(a->del_kind, PLAN_DEL_ORPHAN);
      CHECK(!a->expect_paused);
      CHECK(a->expect_managed_by);
      CHECK_STR(a->expect_tenant, "t1");
      CHECK_MSG(strstr(a->reason, "superseded") &&
                strstr(a->reason, "uid-old") && strstr(a->reason, "uid-new"),
                "reason: %s", a->reason);
    }
    CHECK(p_find(p, PLAN_CREATE, NULL) != NULL); /* the new one's own */
    CHECK(!p->sessions[0].status.sandbox_id);
    plan_free(p);
    w_del(w);
  }
}

/* What is not evidence stays an orphan judged by absence (grace, idle
 * pause): the sandbox's uid is an object of the store (it changed its
 * sessionID), the sandbox has no uid tag, the holder has no uid, or the
 * store read was not whole. */
TEST(rule16_only_on_evidence)
{
  int c;
  for(c = 0; c < 4; c++) {
    world *w = w_new();
    session *s = w_sess(w, "t1", "a", ACT);
    plan *p;
    if(c != 2)
      s->meta.uid = strdup("uid-new");
    if(c == 0) {
      session *o = w_sess(w, "t1", "b", ACT);
      o->meta.uid = strdup("uid-old");
      w_link(o, "b-own");
      w_sb_uid(w, "b-own", SBR, NOW + 10 * MIN_MS, "t1", "b", "uid-old");
    }
    if(c == 3)
      w->complete = false;
    w_sb_uid(w, "old", SBR, NOW + 10 * MIN_MS, "t1", "a",
             c == 1 ? NULL : "uid-old");
    p = w_plan(w);
    CHECK(p);
    CHECK_MSG(!p_find(p, PLAN_DELETE, "old"), "case %d", c);
    plan_free(p);
    w_del(w);
  }
}

/* The guard still counts them (rule 9): a mis-pointed store whose names
 * match Cube's, each under another uid, must not empty Cube. */
TEST(rule16_superseded_counted_by_the_guard)
{
  world *w = w_new();
  char name[16], id[16];
  plan *p;
  int i;
  for(i = 0; i < 5; i++) {
    session *s;
    snprintf(name, sizeof(name), "s%d", i);
    snprintf(id, sizeof(id), "sb%d", i);
    s = w_sess(w, "t1", name, ACT);
    s->meta.uid = strdup("other-store");
    w_sb_uid(w, id, SBR, NOW + 10 * MIN_MS, "t1", name, "uid-here");
  }
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_ORPHAN), 0);
  CHECK(p->guard_tripped);
  plan_free(p);
  w->cfg.force = true;
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_ORPHAN), 5);
  plan_free(p);
  w_del(w);
}

/* The object's own sandbox is taken by its tags (a create whose answer
 * was lost), and a link to another object's sandbox is a conflict: never
 * paused, resumed or deleted for this session. */
TEST(rule12_uid_tag_checked_on_tags_and_link)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", END);
  session *s2 = w_sess(w, "t1", "b", ACT);
  plan *p;
  const plan_session *ps;
  s->meta.uid = strdup("uid-a");
  s2->meta.uid = strdup("uid-b");
  w_link(s, "forged");
  w_sb_uid(w, "forged", SBP, NOW - HOUR_MS, "t1", "a", "uid-earlier");
  w_sb_uid(w, "mine", SBR, NOW + MIN_MS, "t1", "b", "uid-b");
  p = w_plan(w);
  CHECK(p);
  CHECK(!p_find(p, PLAN_DELETE, "forged"));
  ps = p_sess(p, s);
  CHECK_STR(cond_reason(&ps->status, "Conflict"), "SandboxMismatch");
  ps = p_sess(p, s2);
  CHECK_STR(ps->status.sandbox_id, "mine");
  CHECK(!p_find(p, PLAN_CREATE, NULL));
  plan_free(p);
  w_del(w);
}

/* Migration: a sandbox created before the uid tag existed keeps working
 * through its status link, but is never taken by its tags alone. */
TEST(rule12_untagged_legacy_sandbox_joins_by_link_only)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  session *s2 = w_sess(w, "t1", "b", ACT);
  plan *p;
  s->meta.uid = strdup("uid-a");
  s2->meta.uid = strdup("uid-b");
  w_link(s, "legacy-linked");
  w_sb(w, "legacy-linked", SBR, NOW + MIN_MS, "t1", "a");
  w_sb(w, "legacy-loose", SBR, NOW + MIN_MS, "t1", "b");
  p = w_plan(w);
  CHECK(p);
  CHECK_STR(p_sess(p, s)->status.sandbox_id, "legacy-linked");
  CHECK_STR(cond_reason(&p_sess(p, s)->status, "Conflict"), "(absent)");
  CHECK(!p_sess(p, s2)->status.sandbox_id);
  CHECK(p_find(p, PLAN_CREATE, NULL) != NULL);
  plan_free(p);
  w_del(w);
}

/* A changed spec.template cannot reach a running sandbox: the session
 * says so in UpToDate=False/TemplateChanged (never silently Ready alone),
 * keeps its sandbox, and once the sandbox runs spec.template again the
 * condition turns True. A session whose template never changed has no
 * UpToDate condition at all. */
TEST(template_change_is_said_in_a_condition)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  session *s2 = w_sess(w, "t1", "b", ACT);
  cube_sandbox *b;
  plan *p;
  const plan_session *ps;
  const session_condition *c;
  free(s->spec.template_id);
  s->spec.template_id = strdup("python-v2");
  s->status.applied_idle_timeout_ms = 15 * MIN_MS;
  s2->status.applied_idle_timeout_ms = 15 * MIN_MS;
  w_link(s, "sb1");
  w_link(s2, "sb2");
  b = w_sb(w, "sb1", SBR, NOW + MIN_MS, "t1", "a");
  if(sc_kvlist_set(&b->metadata, SESSION_TAG_TEMPLATE, "python"))
    abort();
  b = w_sb(w, "sb2", SBR, NOW + MIN_MS, "t1", "b");
  if(sc_kvlist_set(&b->metadata, SESSION_TAG_TEMPLATE, "python"))
    abort();
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 0);
  ps = p_sess(p, s);
  CHECK_STR(cond_reason(&ps->status, "Ready"), "SandboxRunning");
  c = session_status_get_condition(&ps->status, "UpToDate");
  CHECK(c && !strcmp(c->status, "False") &&
        !strcmp(c->reason, "TemplateChanged") &&
        strstr(c->message, "python-v2") && strstr(c->message, "next sandbox"));
  CHECK_STR(cond_reason(&p_sess(p, s2)->status, "UpToDate"), "(absent)");
  /* the next pass from that status: nothing to write */
  session_status_clear(&s->status);
  if(session_status_copy(&s->status, &ps->status))
    abort();
  plan_free(p);
  p = w_plan(w);
  CHECK(p);
  CHECK(!p_sess(p, s)->status_changed);
  plan_free(p);
  /* back to the sandbox's template: True */
  free(s->spec.template_id);
  s->spec.template_id = strdup("python");
  p = w_plan(w);
  CHECK(p);
  CHECK_STR(cond_status(&p_sess(p, s)->status, "UpToDate"), "True");
  plan_free(p);
  w_del(w);
}

/* The same for spec.network, spec.volumeMounts and spec.workspace: the
 * sandbox's lea.config tag (their digest at create) differing from the
 * spec's says UpToDate=False/SandboxConfigChanged; no action is taken on
 * the running sandbox; a matching tag, or none (a sandbox from before the
 * tag), says nothing. */
TEST(sandbox_config_change_is_said_in_a_condition)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  session *s2 = w_sess(w, "t1", "b", ACT);
  session *s3 = w_sess(w, "t1", "c", ACT);
  char dg[SESSION_CONFIG_DIGEST_LEN + 1];
  cube_sandbox *b;
  plan *p;
  const session_condition *c;
  s->status.applied_idle_timeout_ms = 15 * MIN_MS;
  s2->status.applied_idle_timeout_ms = 15 * MIN_MS;
  s3->status.applied_idle_timeout_ms = 15 * MIN_MS;
  w_link(s, "sb1");
  w_link(s2, "sb2");
  w_link(s3, "sb3");
  /* sb1 and sb2 were made before the change: internet on */
  session_sandbox_config_digest(&s->spec, dg);
  b = w_sb(w, "sb1", SBR, NOW + MIN_MS, "t1", "a");
  if(sc_kvlist_set(&b->metadata, SESSION_TAG_CONFIG, dg))
    abort();
  b = w_sb(w, "sb2", SBR, NOW + MIN_MS, "t1", "b");
  if(sc_kvlist_set(&b->metadata, SESSION_TAG_CONFIG, dg))
    abort();
  w_sb(w, "sb3", SBR, NOW + MIN_MS, "t1", "c"); /* no tag */
  s->spec.net_internet = SESSION_OPT_FALSE; /* the change */
  s3->spec.net_internet = SESSION_OPT_FALSE;
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 0);
  CHECK_STR(cond_reason(&p_sess(p, s)->status, "Ready"), "SandboxRunning");
  c = session_status_get_condition(&p_sess(p, s)->status, "UpToDate");
  CHECK(c && !strcmp(c->status, "False") &&
        !strcmp(c->reason, "SandboxConfigChanged") &&
        strstr(c->message, "sb1") && strstr(c->message, "next sandbox"));
  CHECK_STR(cond_reason(&p_sess(p, s2)->status, "UpToDate"), "(absent)");
  CHECK_STR(cond_reason(&p_sess(p, s3)->status, "UpToDate"), "(absent)");
  /* from that status, changed back: True */
  session_status_clear(&s->status);
  if(session_status_copy(&s->status, &p_sess(p, s)->status))
    abort();
  plan_free(p);
  s->spec.net_internet = SESSION_OPT_UNSET;
  p = w_plan(w);
  CHECK(p);
  CHECK_STR(cond_status(&p_sess(p, s)->status, "UpToDate"), "True");
  plan_free(p);
  w_del(w);
}

/* ---------- a renamed controller (plan_config.adopted_names) ---------- */

/* Sandboxes tagged with a former name are ours: a linked one is owned (no
 * SandboxMismatch), an unlinked one is joined by its tags (no create),
 * an Ended session's is deleted, one nobody wants is an orphan. Without
 * the adopted name each is another controller's and left alone. */
TEST(adopted_names_are_ours)
{
  static const char *const former[] = {"old-name"};
  int adopt;
  for(adopt = 0; adopt < 2; adopt++) {
    world *w = w_new();
    session *a = w_sess(w, "t1", "a", ACT);
    session *e = w_sess(w, "t1", "e", END);
    plan *p;
    w_sess(w, "t1", "j", ACT);
    if(adopt) {
      w->cfg.adopted_names = former;
      w->cfg.n_adopted_names = 1;
    }
    w_link(a, "sb-a");
    w_link(e, "sb-e");
    w_sb_mb(w, "sb-a", SBR, NOW + MIN_MS, "t1", "a", "old-name");
    w_sb_mb(w, "sb-e", SBR, NOW + MIN_MS, "t1", "e", "old-name");
    w_sb_mb(w, "sb-j", SBR, NOW + MIN_MS, "t1", "j", "old-name");
    w_sb_mb(w, "sb-o", SBP, NOW - HOUR_MS, "t1", "gone", "old-name");
    w_sb_mb(w, "sb-x", SBP, NOW - HOUR_MS, "t1", "x", "someone-else");
    p = w_plan(w);
    CHECK(p);
    if(adopt) {
      CHECK(strcmp(cond_status(&p->sessions[0].status, "Conflict"), "True"));
      CHECK(p_find(p, PLAN_DELETE, "sb-e"));
      CHECK_INT(p_count(p, PLAN_CREATE, PLAN_DEL_NONE), 0);
      CHECK_STR(p->sessions[2].status.sandbox_id, "sb-j");
      CHECK(p_find(p, PLAN_DELETE, "sb-o"));
      CHECK_INT(p->n_managed, 4);
    }
    else {
      CHECK_STR(cond_reason(&p->sessions[0].status, "Conflict"),
                "SandboxMismatch");
      CHECK(!p_find(p, PLAN_DELETE, "sb-e"));
      CHECK(!p_find(p, PLAN_DELETE, "sb-o"));
      CHECK_INT(p_count(p, PLAN_CREATE, PLAN_DEL_NONE), 1); /* j */
      CHECK_INT(p->n_managed, 0);
    }
    CHECK(!p_find(p, PLAN_DELETE, "sb-x")); /* never another name's */
    plan_free(p);
    w_del(w);
  }
  {
    plan_config c;
    plan_config_defaults(&c);
    CHECK(plan_config_owns(&c, "session-controller"));
    CHECK(!plan_config_owns(&c, "old-name"));
    c.adopted_names = former;
    c.n_adopted_names = 1;
    CHECK(plan_config_owns(&c, "old-name"));
    CHECK(!plan_config_owns(&c, "old"));
  }
}

/* An object written past sessionctl's checks (straight to the store) that
 * fails validation gets Failed and Ready=False/InvalidSpec with the reason
 * and no action; its link still protects its sandbox (no orphan); other
 * sessions are planned as usual. An invalid Ended one still ends. */
TEST(invalid_object_gets_no_action_and_keeps_its_sandbox)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  session *e = w_sess(w, "t1", "e", END);
  session *ok = w_sess(w, "t1", "ok", ACT);
  const char *why[3] = {"spec.template: bad", "spec.template: bad", NULL};
  plan_input in;
  plan *p = NULL;
  const plan_session *ps;
  (void)ok;
  w_link(s, "sb1");
  w_link(e, "sbe");
  w_sb(w, "sb1", SBP, NOW - 100 * HOUR_MS, "t1", "a");
  w_sb(w, "sbe", SBP, NOW - HOUR_MS, "t1", "e");
  w_input(w, &in);
  in.invalid = why;
  CHECK_OK(plan_compute(&in, &w->cfg, &p));
  CHECK(p);
  CHECK(!p_find(p, PLAN_DELETE, "sb1")); /* due for reclaim, but invalid */
  CHECK_INT(p->n_orphans, 0);
  ps = p_sess(p, s);
  CHECK_INT(ps->status.phase, SESSION_PHASE_FAILED);
  CHECK_STR(cond_reason(&ps->status, "Ready"), "InvalidSpec");
  CHECK(p_find(p, PLAN_DELETE, "sbe") != NULL); /* Ended: still deleted */
  CHECK(p_find(p, PLAN_CREATE, NULL) != NULL);  /* "ok" is created */
  plan_free(p);
  w_del(w);
}

/* A link alone is not ownership: a status writer can point
 * status.sandboxID at any sandbox. An untagged one (Cube dropped the
 * tags, or it was never ours) is acted on only with the proof the planner
 * wrote while the tags were there; a foreign one, or another object's
 * proof, is a conflict and nothing is done to it. */
TEST(rule4_untagged_link_needs_its_proof)
{
  static const unsigned char key[PLAN_LINK_KEY_LEN] = {1, 2, 3};
  char good[PLAN_PROOF_LEN + 1], other[PLAN_PROOF_LEN + 1];
  world *w = w_new();
  session *mine = w_sess(w, "t1", "mine", END);
  session *forged = w_sess(w, "t1", "forged", END);
  session *copied = w_sess(w, "t1", "copied", END);
  session *fresh = w_sess(w, "t1", "fresh", ACT);
  cube_sandbox *b;
  plan *p;
  const plan_session *ps;
  w->cfg.link_key = key;
  mine->meta.uid = strdup("uid-mine");
  forged->meta.uid = strdup("uid-forged");
  copied->meta.uid = strdup("uid-copied");
  fresh->meta.uid = strdup("uid-fresh");
  plan_link_proof(key, "uid-mine", "sb-mine", good);
  plan_link_proof(key, "uid-mine", "sb-copied", other);
  w_link(mine, "sb-mine");
  mine->status.sandbox_proof = strdup(good);
  w_link(forged, "sb-foreign");          /* no proof at all */
  w_link(copied, "sb-copied");
  copied->status.sandbox_proof = strdup(other); /* another object's */
  w_link(fresh, "sb-fresh");
  fresh->status.applied_idle_timeout_ms = 15 * MIN_MS;
  w_sb(w, "sb-mine", SBP, NOW - HOUR_MS, NULL, NULL);    /* tags dropped */
  w_sb(w, "sb-foreign", SBP, NOW - HOUR_MS, NULL, NULL); /* never ours */
  b = w_sb(w, "sb-copied", SBP, NOW - HOUR_MS, NULL, NULL);
  if(sc_kvlist_set(&b->metadata, "owner", "someone-else"))
    abort();
  w_sb(w, "sb-fresh", SBR, NOW + MIN_MS, "t1", "fresh");
  p = w_plan(w);
  CHECK(p);
  CHECK(p_find(p, PLAN_DELETE, "sb-mine") != NULL);
  CHECK(!p_find(p, PLAN_DELETE, "sb-foreign"));
  CHECK(!p_find(p, PLAN_DELETE, "sb-copied"));
  ps = p_sess(p, forged);
  CHECK_STR(cond_reason(&ps->status, "Conflict"), "SandboxMismatch");
  CHECK(strstr(session_status_get_condition(&ps->status, "Conflict")->message,
               "sandboxProof"));
  CHECK_STR(cond_reason(&p_sess(p, copied)->status, "Conflict"),
            "SandboxMismatch");
  /* tagged ours: the proof is written for the day Cube drops the tags */
  ps = p_sess(p, fresh);
  plan_link_proof(key, "uid-fresh", "sb-fresh", good);
  CHECK_STR(ps->status.sandbox_proof, good);
  plan_free(p);
  w_del(w);
}

/* An object the store could not decode may be the session of an orphan
 * of its tenant: those orphans (and tag-less-tenant ones) are held, the
 * orphans of other tenants are deleted as usual. */
TEST(undecodable_object_holds_only_its_tenants_orphans)
{
  static const char *const held[] = {"t1"};
  world *w = w_new();
  plan_input in;
  plan *p = NULL;
  w_sb(w, "o-t1", SBP, NOW - HOUR_MS, "t1", "gone");
  w_sb(w, "o-t2", SBP, NOW - HOUR_MS, "t2", "gone");
  w_input(w, &in);
  in.hold_tenants = held;
  in.n_hold_tenants = 1;
  CHECK_OK(plan_compute(&in, &w->cfg, &p));
  CHECK(p);
  CHECK(!p_find(p, PLAN_DELETE, "o-t1"));
  CHECK(p_find(p, PLAN_DELETE, "o-t2") != NULL);
  plan_free(p);
  w_del(w);
}

/* Reasons print durations as the project's one formatter does
 * (api/duration.c): half of a 3s idleTimeout is "1.5s" and a reclaimAfter
 * of 90.5s is "1m30.5s" (the planner's own formatter printed "1s500ms"
 * and "1m30s500ms"). */
TEST(reasons_use_the_project_duration_format)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", RUN);
  session *r = w_sess(w, "t1", "b", SESSION_STATE_ACTIVE);
  plan *p;
  const plan_action *a;
  s->spec.idle_timeout_ms = 3000;
  s->status.applied_idle_timeout_ms = 3000;
  w_link(s, "sb1");
  w_sb(w, "sb1", SBR, NOW + 1000, "t1", "a");
  r->spec.reclaim_after_ms = 90 * 1000 + 500;
  w_link(r, "sb2");
  w_sb(w, "sb2", CUBE_SB_PAUSED, NOW - 2 * MIN_MS, "t1", "b");
  p = w_plan(w);
  CHECK(p);
  a = p_find(p, PLAN_KEEPALIVE, "sb1");
  CHECK(a && strstr(a->reason, "within idleTimeout/2 = 1.5s)"));
  a = p_find(p, PLAN_DELETE, "sb2");
  CHECK(a && strstr(a->reason, "paused for 2m by Cube's clock"));
  CHECK(a && strstr(a->reason, ">= reclaimAfter 1m30.5s"));
  plan_free(p);
  w_del(w);
}

TEST_LIST = {
  T(rule1_no_local_clock_only_cube_now),
  T(rule2_missing_sandbox_is_confirmed_not_recreated),
  T(rule2_missing_sandbox_waits_no_duplicate_delete),
  T(rule2_confirmed_gone_clears_link_and_creates),
  T(rule2_gone_but_tag_matched_adopts_instead_of_create),
  T(rule2_truncated_list_forbids_orphan_delete),
  T(rule2_truncated_list_still_allows_intent),
  T(rule3_delete_carries_expectations),
  T(rule4_untagged_unlinked_sandbox_untouched),
  T(metadata_lost_on_pause_no_second_sandbox),
  T(rule5_tenant_mismatch_conflict),
  T(rule5_tenant_bound_to_namespace),
  T(rule5_conflict_resolves_and_is_stable),
  T(rule6_duplicate_winner_status_then_oldest_then_lowest_id),
  T(rule6_duplicates_two_views_never_delete_both),
  T(rule9_guard_trips),
  T(rule9_guard_needs_fraction_and_floor),
  T(rule9_guard_not_for_intent),
  T(rule9_force_overrides),
  T(state_active_creates_with_rounded_timeout),
  T(create_intent_of_another_replica_waits),
  T(create_intent_without_identity_holds_and_create_clears_it),
  T(state_active_without_template_fails),
  T(state_active_idle_pause_left_alone),
  T(state_active_running_steady),
  T(active_resumes_controller_paused),
  T(set_timeout_on_idle_change),
  T(state_running_keepalive_before_endat),
  T(state_running_resumes_and_creates_never_reclaims),
  T(state_paused_pauses),
  T(state_paused_never_creates_and_pausing_needs_nothing),
  T(reclaim_by_cube_clock_not_before),
  T(wake_recreates_after_reclaim),
  T(ended_deletes),
  T(tombstone_deletes),
  T(live_session_wins_over_tombstone_of_same_tags),
  T(orphan_grace),
  T(orphan_not_when_linked_by_any_status),
  T(session_id_in_use_conflict),
  T(sandbox_claimed_by_two_statuses),
  T(duplicate_observation_believes_running),
  T(status_after_each_action),
  T(steady_state_writes_no_status),
  T(actions_sorted_orphans_last),
  T(actions_sorted_in_bulk),
  T(invalid_input_refused),
  T(unchanged_status_is_a_view_of_the_input),
  T(truncated_ready_message_settles),
  T(absent_optional_fields_mean_their_defaults),
  T(status_records_the_effective_tenant),
  T(rule12_new_object_of_old_name_never_inherits),
  T(rule16_superseded_sandbox_deleted_at_once),
  T(rule16_only_on_evidence),
  T(rule16_superseded_counted_by_the_guard),
  T(rule12_uid_tag_checked_on_tags_and_link),
  T(rule12_untagged_legacy_sandbox_joins_by_link_only),
  T(template_change_is_said_in_a_condition),
  T(sandbox_config_change_is_said_in_a_condition),
  T(adopted_names_are_ours),
  T(invalid_object_gets_no_action_and_keeps_its_sandbox),
  T(rule4_untagged_link_needs_its_proof),
  T(undecodable_object_holds_only_its_tenants_orphans),
  T(reasons_use_the_project_duration_format),
  {0},
};

TEST_MAIN()
