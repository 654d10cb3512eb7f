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
 * withheld (never added), unless --force */
TEST(rule9_orphan_guard_withholds_only)
{
  plan_input in;
  plan_config cfg;
  plan *p;
  planner pl;
  size_t first, k;
  int force;
  memset(&in, 0, sizeof(in));
  for(force = 0; force < 2; force++) {
    for(k = 10; k <= 12; k++) {
      p = calloc(1, sizeof(*p));
      CHECK(p);
      plan_config_defaults(&cfg);
      cfg.force = force;
      planner_of(&pl, &in, &cfg, p);
      p->n_managed = 12;
      p->actions = calloc(20, sizeof(*p->actions));
      CHECK(p->actions);
      p->n_actions = 3; /* three actions before the orphans */
      first = p->n_actions;
      p->n_actions += k;
      CHECK_OK(rule9_orphan_guard(&pl, first));
      CHECK_INT(p->n_orphans, k);
      /* 11 of 12 is over 20% and over the floor of 10; 10 is not */
      CHECK(p->guard_tripped == (!force && k > 10));
      CHECK_INT(p->n_actions, p->guard_tripped ? 3 : 3 + k);
      CHECK(!p->guard_tripped || strstr(p->guard_message, "withheld"));
      plan_free(p);
    }
  }
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
  s->status.create_intent_at = NOW - 10 * 1000;
  CHECK(rule11_create_claim_held(&pl, s));
  cfg.identity = "replica-2"; /* our own: our last attempt failed */
  CHECK(!rule11_create_claim_held(&pl, s));
  cfg.identity = "replica-1";
  CHECK(rule11_create_claim_held(&pl, s));
  s->status.create_intent_at = NOW - cfg.create_intent_ttl_ms;
  CHECK(!rule11_create_claim_held(&pl, s)); /* run out by Cube's clock */
  s->status.create_intent_at = NOW - 10 * 1000;
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
  T(rule11_create_claim_held_by_cube_clock),
  {0},
};

TEST_MAIN()
