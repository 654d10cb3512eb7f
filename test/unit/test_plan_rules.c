/* The planner's rule functions (controller/plan/rules.c), one test each,
 * called directly on hand-made records: the table at the top of rules.c
 * names these functions, and each must keep its rule on its own, whatever
 * the pass around it does. */
#include "test/harness.h"
#include "test/unit/plan_world.h"
#include "controller/plan/plan_int.h"

#define NOW W_NOW

/* a sandbox record over b, its tags read as the join reads them */
static sb_rec rec_of(const cube_sandbox *b, bool ours)
{
  sb_rec r;
  memset(&r, 0, sizeof(r));
  r.b = b;
  r.id = b->sandbox_id;
  r.tenant = sc_kvlist_get(&b->metadata, SESSION_TAG_TENANT_ID);
  r.sid = sc_kvlist_get(&b->metadata, SESSION_TAG_SESSION_ID);
  r.managed_by = sc_kvlist_get(&b->metadata, SESSION_TAG_MANAGED_BY);
  r.uid = sc_kvlist_get(&b->metadata, SESSION_TAG_SESSION_UID);
  r.tagged = b->metadata.n > 0;
  r.ours = ours;
  return r;
}

static sess_rec srec_of(const session *s)
{
  sess_rec r;
  memset(&r, 0, sizeof(r));
  r.s = s;
  r.link = s->status.sandbox_id;
  r.tenant = session_eff_tenant_id(s);
  r.sid = session_eff_session_id(s);
  return r;
}

static void planner_of(planner *pl, const plan_input *in,
                       const plan_config *cfg, plan *p)
{
  memset(pl, 0, sizeof(*pl));
  memset(p, 0, sizeof(*p));
  pl->in = in;
  pl->cfg = cfg;
  pl->p = p;
}

/* rule 6: the linked sandbox, else the oldest startedAt (0 counts as
 * youngest), then the lowest ID, in whatever order the list comes */
TEST(rule6_pick_duplicate_winner_one_order)
{
  world *w = w_new();
  sb_rec sb[4];
  sess_rec r;
  int order, k;
  session *s = w_sess(w, "t1", "a", SESSION_STATE_ACTIVE);
  w_sb(w, "sb-young", CUBE_SB_RUNNING, NOW, "t1", "a")->started_at =
    NOW - HOUR_MS;
  w_sb(w, "sb-old-b", CUBE_SB_RUNNING, NOW, "t1", "a")->started_at =
    NOW - 5 * HOUR_MS;
  w_sb(w, "sb-old-a", CUBE_SB_RUNNING, NOW, "t1", "a")->started_at =
    NOW - 5 * HOUR_MS;
  w_sb(w, "sb-unknown", CUBE_SB_RUNNING, NOW, "t1", "a")->started_at = 0;
  for(order = 0; order < 2; order++) {
    r = srec_of(s);
    for(k = 0; k < 4; k++) {
      int j = order ? 3 - k : k;
      sb[j] = rec_of(&w->b[j], true);
      sb[j].next_of_owner = r.sbs;
      r.sbs = &sb[j];
      r.n_sbs++;
    }
    CHECK(rule6_pick_duplicate_winner(&r) == &sb[2]); /* old, lowest ID */
    r.ls = LS_OWNED; /* the link wins over age */
    r.link_sb = &sb[0];
    CHECK(rule6_pick_duplicate_winner(&r) == &sb[0]);
  }
  /* the unknown startedAt loses even to the youngest known */
  r = srec_of(s);
  sb[3].next_of_owner = NULL;
  sb[0].next_of_owner = &sb[3];
  r.sbs = &sb[0];
  CHECK(rule6_pick_duplicate_winner(&r) == &sb[0]);
  r.sbs = NULL;
  CHECK(rule6_pick_duplicate_winner(&r) == NULL);
  w_del(w);
}

/* rules 4, 5 and 12 on a link: the tags, when present, must agree */
TEST(rule4_judge_link_by_tags_and_proof)
{
  world *w = w_new();
  plan_input in;
  plan_config cfg;
  plan p;
  planner pl;
  unsigned char key[PLAN_LINK_KEY_LEN];
  char proof[PLAN_PROOF_LEN + 1];
  session *s = w_sess(w, "t1", "a", SESSION_STATE_ACTIVE);
  sess_rec r;
  sb_rec ok, other_tenant, other_mb, untagged, other_uid;
  w_link(s, "sb-1");
  w_sb(w, "sb-1", CUBE_SB_RUNNING, NOW, "t1", "a");
  w_sb(w, "sb-1", CUBE_SB_RUNNING, NOW, "t2", "a");
  w_sb_mb(w, "sb-1", CUBE_SB_RUNNING, NOW, "t1", "a", "someone-else");
  w_sb(w, "sb-1", CUBE_SB_PAUSED, NOW, NULL, NULL);
  w_sb(w, "sb-1", CUBE_SB_RUNNING, NOW, "t1", "a");
  CHECK(!sc_kvlist_set(&w->b[4].metadata, SESSION_TAG_SESSION_UID, "u-old"));
  w_input(w, &in);
  plan_config_defaults(&cfg);
  planner_of(&pl, &in, &cfg, &p);
  r = srec_of(s);
  ok = rec_of(&w->b[0], true);
  other_tenant = rec_of(&w->b[1], true);
  other_mb = rec_of(&w->b[2], false);
  untagged = rec_of(&w->b[3], false);
  other_uid = rec_of(&w->b[4], true);
  CHECK(rule4_sandbox_is_ours(&pl, W_CTRL));
  CHECK(!rule4_sandbox_is_ours(&pl, "someone-else"));
  CHECK(!rule4_sandbox_is_ours(&pl, NULL));
  CHECK_INT(rule4_judge_link(&pl, &r, &ok), LS_OWNED);
  CHECK_INT(rule4_judge_link(&pl, &r, &other_tenant), LS_CONFLICT_TENANT);
  CHECK_INT(rule4_judge_link(&pl, &r, &other_mb), LS_CONFLICT_SB);
  /* no uid on the object: the uid tag is not checked; with one, it is */
  CHECK_INT(rule4_judge_link(&pl, &r, &other_uid), LS_OWNED);
  s->meta.uid = strdup("u-new");
  CHECK_INT(rule4_judge_link(&pl, &r, &other_uid), LS_CONFLICT_SB);
  /* untagged: without a key the link stands; with one, only its proof */
  CHECK_INT(rule4_judge_link(&pl, &r, &untagged), LS_OWNED);
  plan_link_key_derive("api-key", "x", key);
  cfg.link_key = key;
  CHECK_INT(rule4_judge_link(&pl, &r, &untagged), LS_CONFLICT_SB);
  plan_link_proof(key, "u-new", "sb-1", proof);
  s->status.sandbox_proof = strdup(proof);
  CHECK_INT(rule4_judge_link(&pl, &r, &untagged), LS_OWNED);
  plan_link_proof(key, "u-other", "sb-1", proof);
  free(s->status.sandbox_proof);
  s->status.sandbox_proof = strdup(proof);
  CHECK_INT(rule4_judge_link(&pl, &r, &untagged), LS_CONFLICT_SB);
  w_del(w);
}

TEST(rule5_tenants_never_cross_and_bind_to_namespace)
{
  world *w = w_new();
  plan_input in;
  plan_config cfg;
  plan p;
  planner pl;
  session *s = w_sess(w, "t1", "a", SESSION_STATE_ACTIVE);
  sess_rec r = srec_of(s);
  sb_rec same, other, none;
  w_sb(w, "sb-1", CUBE_SB_RUNNING, NOW, "t1", "a");
  w_sb(w, "sb-2", CUBE_SB_RUNNING, NOW, "t2", "a");
  w_sb(w, "sb-3", CUBE_SB_RUNNING, NOW, NULL, NULL);
  same = rec_of(&w->b[0], true);
  other = rec_of(&w->b[1], true);
  none = rec_of(&w->b[2], false);
  CHECK(rule5_tenants_never_cross(&r, &same));
  CHECK(!rule5_tenants_never_cross(&r, &other));
  CHECK(rule5_tenants_never_cross(&r, &none));
  w_input(w, &in);
  plan_config_defaults(&cfg);
  planner_of(&pl, &in, &cfg, &p);
  CHECK(rule5_tenant_is_namespace(&pl, s));
  s->spec.tenant_id[1] = '9'; /* "t9": not the namespace */
  CHECK(!rule5_tenant_is_namespace(&pl, s));
  cfg.bind_tenant_to_namespace = false;
  CHECK(rule5_tenant_is_namespace(&pl, s));
  w_del(w);
}

TEST(rule12_one_object_by_uid)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", SESSION_STATE_ACTIVE);
  sb_rec tagged, legacy;
  w_sb(w, "sb-1", CUBE_SB_RUNNING, NOW, "t1", "a");
  w_sb(w, "sb-2", CUBE_SB_RUNNING, NOW, "t1", "a");
  CHECK(!sc_kvlist_set(&w->b[0].metadata, SESSION_TAG_SESSION_UID, "u-1"));
  tagged = rec_of(&w->b[0], true);
  legacy = rec_of(&w->b[1], true);
  CHECK(rule12_one_object(s, &tagged, false)); /* no uid: not checked */
  s->meta.uid = strdup("u-1");
  CHECK(rule12_one_object(s, &tagged, false));
  CHECK(rule12_one_object(s, &legacy, true));   /* by its link only */
  CHECK(!rule12_one_object(s, &legacy, false));
  free(s->meta.uid);
  s->meta.uid = strdup("u-2"); /* a new object of the old name */
  CHECK(!rule12_one_object(s, &tagged, true));
  CHECK(!rule12_one_object(s, &tagged, false));
  w_del(w);
}

/* rule 2: a GET's 404 is the only proof of gone; no orphan from a short
 * list or while an object of its tenant could not be read */
TEST(rule2_absence_is_not_evidence)
{
  world *w = w_new();
  plan_input in;
  plan_config cfg;
  plan p;
  planner pl;
  const char *gone[] = {"sb-a", "sb-c"};
  const char *hold[] = {"t9"};
  sb_rec t1, t9, untagged;
  w_sb(w, "sb-1", CUBE_SB_PAUSED, NOW, "t1", "x");
  w_sb(w, "sb-2", CUBE_SB_PAUSED, NOW, "t9", "y");
  w_sb_mb(w, "sb-3", CUBE_SB_PAUSED, NOW, NULL, NULL, W_CTRL);
  t1 = rec_of(&w->b[0], true);
  t9 = rec_of(&w->b[1], true);
  untagged = rec_of(&w->b[2], true);
  w_input(w, &in);
  plan_config_defaults(&cfg);
  planner_of(&pl, &in, &cfg, &p);
  pl.gone = gone;
  pl.n_gone = 2;
  CHECK(rule2_gone_confirmed(&pl, "sb-a"));
  CHECK(rule2_gone_confirmed(&pl, "sb-c"));
  CHECK(!rule2_gone_confirmed(&pl, "sb-b"));
  pl.n_gone = 0;
  CHECK(!rule2_gone_confirmed(&pl, "sb-a"));
  CHECK(rule2_orphan_may_be_concluded(&pl, &t1));
  CHECK(rule2_orphan_may_be_concluded(&pl, &untagged));
  in.hold_tenants = hold;
  in.n_hold_tenants = 1;
  CHECK(rule2_orphan_may_be_concluded(&pl, &t1));
  CHECK(!rule2_orphan_may_be_concluded(&pl, &t9));
  CHECK(!rule2_orphan_may_be_concluded(&pl, &untagged));
  in.n_hold_tenants = 0;
  in.list_complete = false;
  CHECK(!rule2_orphan_may_be_concluded(&pl, &t1));
  w_del(w);
}

/* rule 3: what the executor's GET must still find */
TEST(rule3_delete_expectations_by_kind)
{
  world *w = w_new();
  plan_input in;
  plan_config cfg;
  plan *p = calloc(1, sizeof(*p));
  planner pl;
  plan_action a;
  sb_rec tagged, untagged;
  static const plan_delete_kind kinds[] = {
    PLAN_DEL_RECLAIM, PLAN_DEL_ENDED, PLAN_DEL_TOMBSTONE, PLAN_DEL_DUPLICATE,
    PLAN_DEL_ORPHAN};
  size_t k;
  CHECK(p);
  w_sb(w, "sb-1", CUBE_SB_PAUSED, NOW, "t1", "x");
  w_sb(w, "sb-2", CUBE_SB_PAUSED, NOW, NULL, NULL);
  tagged = rec_of(&w->b[0], true);
  untagged = rec_of(&w->b[1], false);
  w_input(w, &in);
  plan_config_defaults(&cfg);
  planner_of(&pl, &in, &cfg, p);
  for(k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
    memset(&a, 0, sizeof(a));
    a.type = PLAN_DELETE;
    a.del_kind = kinds[k];
    CHECK_OK(rule3_delete_expectations(&pl, &a, &tagged));
    CHECK_STR(a.expect_tenant, "t1");
    CHECK(a.expect_paused == (kinds[k] == PLAN_DEL_RECLAIM ||
                              kinds[k] == PLAN_DEL_ORPHAN));
    CHECK(a.expect_managed_by == (kinds[k] == PLAN_DEL_ORPHAN));
    memset(&a, 0, sizeof(a));
    a.del_kind = kinds[k];
    CHECK_OK(rule3_delete_expectations(&pl, &a, &untagged));
    CHECK(a.expect_tenant == NULL); /* no tags seen, none expected */
  }
  plan_free(p);
  w_del(w);
}

/* rules 9 and 13: orphan deletes over the fraction and the floor are
 * withheld (never added), unless --force: whether the candidates (any
 * state or age) are too many, or the window's deletions are */
TEST(rule9_orphan_guard_withholds_only)
{
  static const struct {
    size_t managed, candidates, due, recent;
    bool trips;
  } rows[] = {
    {100, 20, 3, 0, false},  /* 20% of 100 is not more than 20% */
    {100, 21, 3, 0, true},   /* more: a wiped store looks like this */
    {5, 2, 2, 0, false},     /* the floor: a small fleet cleans a leak */
    {5, 3, 1, 0, true},
    {100, 5, 5, 15, false},  /* 15 + 5 = 20: within the budget of 20 */
    {100, 5, 5, 16, true},   /* the window's budget is spent */
  };
  plan_input in;
  plan_config cfg;
  plan *p;
  planner pl;
  size_t i;
  int force;
  for(force = 0; force < 2; force++)
    for(i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
      memset(&in, 0, sizeof(in));
      in.recent_orphan_deletes = rows[i].recent;
      p = calloc(1, sizeof(*p));
      CHECK(p);
      plan_config_defaults(&cfg);
      cfg.force = force;
      planner_of(&pl, &in, &cfg, p);
      p->n_managed = rows[i].managed;
      p->n_orphan_candidates = rows[i].candidates;
      p->actions = calloc(20, sizeof(*p->actions));
      CHECK(p->actions);
      p->n_actions = 3 + rows[i].due; /* three actions, then the orphans */
      CHECK_OK(rule9_orphan_guard(&pl, 3));
      CHECK_INT(p->n_orphans, rows[i].due);
      CHECK_MSG(p->guard_tripped == (!force && rows[i].trips), "row %zu", i);
      CHECK_INT(p->n_actions, p->guard_tripped ? 3 : 3 + rows[i].due);
      CHECK(!p->guard_tripped || strstr(p->guard_message, "withheld"));
      plan_free(p);
    }
}

/* rule 13, the reclaim brake: a burst of due reclaims beyond the share of
 * the paused fleet waits, the longest-paused first; a committed one (its
 * intent written) is never held; --force lifts it */
TEST(rule13_reclaim_brake_delays_only)
{
  world *w = w_new();
  plan_input in;
  plan *p;
  int i;
  size_t n;
  /* 30 paused sandboxes, all due at once (Cube's clock jumped 3 days) */
  for(i = 0; i < 30; i++) {
    char name[16];
    session *s;
    snprintf(name, sizeof(name), "r%02d", i);
    s = w_sess(w, "t1", name, SESSION_STATE_ACTIVE);
    w_link(s, name);
    w_sb(w, name, CUBE_SB_PAUSED, NOW - 3 * 24 * HOUR_MS - i * MIN_MS, "t1",
         name);
  }
  w_input(w, &in);
  CHECK_OK(plan_compute(&in, &w->cfg, &p));
  n = p_count(p, PLAN_DELETE, PLAN_DEL_RECLAIM);
  CHECK_MSG(n == 15, "%zu reclaims went, want 15 (50%% of 30)", n);
  CHECK_INT(p->n_reclaims_held, 15);
  CHECK(p->brake_message && strstr(p->brake_message, "15 wait"));
  /* the longest-paused went: r29 paused first */
  CHECK(p_find(p, PLAN_DELETE, "r29") && !p_find(p, PLAN_DELETE, "r00"));
  plan_free(p);
  /* the window's reclaims count: 10 done, 5 go */
  in.recent_reclaims = 10;
  CHECK_OK(plan_compute(&in, &w->cfg, &p));
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_RECLAIM), 5);
  plan_free(p);
  /* a committed reclaim goes whatever the brake says */
  in.recent_reclaims = 100;
  w->s[0]->status.pending_kind = strdup("reclaim");
  w->s[0]->status.pending_sandbox_id = strdup("r00");
  CHECK_OK(plan_compute(&in, &w->cfg, &p));
  CHECK(p_find(p, PLAN_DELETE, "r00"));
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_RECLAIM), 1);
  plan_free(p);
  /* under the floor (10) a steady trickle is never held */
  w->ns = 8;
  w_input(w, &in);
  CHECK_OK(plan_compute(&in, &w->cfg, &p));
  CHECK_INT(p->n_reclaims_held, 0);
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_RECLAIM), 8);
  plan_free(p);
  w->ns = 30;
  w_input(w, &in);
  w->cfg.force = true;
  CHECK_OK(plan_compute(&in, &w->cfg, &p));
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_RECLAIM), 30);
  plan_free(p);
  w_del(w);
}

/* rule 11: another process's fresh create claim holds a create back */
TEST(rule11_create_claim_held_by_cube_clock)
{
  world *w = w_new();
  plan_input in;
  plan_config cfg;
  plan p;
  planner pl;
  session *s = w_sess(w, "t1", "a", SESSION_STATE_ACTIVE);
  w_input(w, &in);
  plan_config_defaults(&cfg);
  planner_of(&pl, &in, &cfg, &p);
  CHECK(!rule11_create_claim_held(&pl, s)); /* no claim */
  s->status.create_intent_by = strdup("replica-2");
  s->status.create_intent_at = NOW - 1000;
  CHECK(rule11_create_claim_held(&pl, s));
  cfg.identity = "replica-2"; /* our own: our last attempt failed */
  CHECK(!rule11_create_claim_held(&pl, s));
  cfg.identity = "replica-1";
  CHECK(rule11_create_claim_held(&pl, s));
  s->status.create_intent_at = NOW - cfg.create_intent_ttl_ms;
  CHECK(!rule11_create_claim_held(&pl, s)); /* run out by Cube's clock */
  s->status.create_intent_at = NOW - 1000;
  in.cube_now = 0; /* no Cube clock: nothing time-based is decided */
  CHECK(!rule11_create_claim_held(&pl, s));
  w_del(w);
}

/* rule 2 with Cube's real list: Cube ignores paging, so at 100 sandboxes
 * and more every list may be short. Before, that held orphan deletion for
 * good. A listed orphan exists whatever the list missed: it is still
 * concluded (its absence from the store is what makes it one, and the
 * store read is whole); only conclusions from absence in Cube's list
 * (an unlinked sandbox gone) are held. */
TEST(rule2_a_short_cube_list_still_concludes_listed_orphans)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", SESSION_STATE_ACTIVE);
  plan_input in;
  plan *p = NULL;
  w_link(s, "sb-a");
  w_sb(w, "sb-a", CUBE_SB_RUNNING, NOW + HOUR_MS, "t1", "a");
  w_sb(w, "sb-orphan", CUBE_SB_PAUSED, NOW - HOUR_MS, "t1", "gone-one");
  s->status.pending_kind = strdup("duplicate");
  s->status.pending_sandbox_id = strdup("sb-dup-unlisted");
  w_input(w, &in);
  in.cube_list_short = true;
  CHECK_OK(plan_compute(&in, &w->cfg, &p));
  CHECK(p && p_find(p, PLAN_DELETE, "sb-orphan"));
  /* the unlisted duplicate of the intent is not taken as gone */
  CHECK(p && p_sess(p, s)->status.pending_kind);
  plan_free(p);
  /* a single-session pass (the store read not whole): no orphan */
  in.list_complete = false;
  CHECK_OK(plan_compute(&in, &w->cfg, &p));
  CHECK(p && !p_find(p, PLAN_DELETE, "sb-orphan"));
  plan_free(p);
  w_del(w);
}

TEST_LIST = {
  T(rule2_a_short_cube_list_still_concludes_listed_orphans),
  T(rule6_pick_duplicate_winner_one_order),
  T(rule4_judge_link_by_tags_and_proof),
  T(rule5_tenants_never_cross_and_bind_to_namespace),
  T(rule12_one_object_by_uid),
  T(rule2_absence_is_not_evidence),
  T(rule3_delete_expectations_by_kind),
  T(rule9_orphan_guard_withholds_only),
  T(rule13_reclaim_brake_delays_only),
  T(rule11_create_claim_held_by_cube_clock),
  {0},
};

TEST_MAIN()
