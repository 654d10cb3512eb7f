/* Capacity (rules 14 and 15): the paused budgets reclaim the longest-
 * paused, the running quota holds creates in creation order. Cases by
 * hand first, then properties over random fleets (fixed seeds): the
 * budgets hold after every pass, victims are the longest-paused, two runs
 * (and a shuffled input) choose the same ones, quota waiters are created
 * in creation order, a capacity-reclaimed session wakes as after any
 * reclaim. */
#include "test/harness.h"
#include "test/unit/plan_world.h"

#include <stdio.h>

/* a session of tenant ns, created at `created`, with uid "u-<name>" */
static session *c_sess(world *w, const char *ns, const char *name,
                       session_state st, sc_time created)
{
  session *s = w_sess(w, ns, name, st);
  char uid[64];
  snprintf(uid, sizeof(uid), "u-%s-%s", ns, name);
  s->meta.uid = strdup(uid);
  s->meta.creation_timestamp = created;
  return s;
}

/* its sandbox, linked, tagged (uid too) */
static cube_sandbox *c_sb(world *w, session *s, const char *id,
                          cube_sb_state st, sc_time end_at)
{
  cube_sandbox *b = w_sb(w, id, st, end_at, s->meta.namespace_,
                         s->spec.session_id);
  if(sc_kvlist_set(&b->metadata, SESSION_TAG_SESSION_UID, s->meta.uid))
    abort();
  w_link(s, id);
  return b;
}

static size_t n_capacity(const plan *p)
{
  size_t i, n = 0;
  for(i = 0; i < p->n_actions; i++)
    n += p->actions[i].capacity != NULL;
  return n;
}

static const plan_action *capacity_of(const plan *p, const char *id)
{
  size_t i;
  for(i = 0; i < p->n_actions; i++)
    if(p->actions[i].capacity && !strcmp(p->actions[i].sandbox_id, id))
      return &p->actions[i];
  return NULL;
}

/* 30 paused under --max-paused 20: the 10 longest-paused go */
TEST(rule14_max_paused_reclaims_longest_paused)
{
  world *w = w_new();
  plan *p;
  size_t i;
  char name[16], id[16];
  w->cfg.max_paused = 20;
  for(i = 0; i < 30; i++) {
    session *s;
    snprintf(name, sizeof(name), "s%02zu", i);
    snprintf(id, sizeof(id), "b%02zu", i);
    s = c_sess(w, i % 2 ? "t1" : "t0", name, SESSION_STATE_ACTIVE,
               W_NOW - 50 * HOUR_MS);
    /* s00 paused longest: 30 min + i min ago, reversed */
    c_sb(w, s, id, CUBE_SB_PAUSED, W_NOW - (60 - (sc_time)i) * MIN_MS);
  }
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(n_capacity(p), 10);
  CHECK_INT(p->n_capacity_reclaims, 10);
  for(i = 0; i < 30; i++) {
    const plan_action *a;
    snprintf(id, sizeof(id), "b%02zu", i);
    a = capacity_of(p, id);
    CHECK_MSG(!a == (i >= 10), "sandbox %s: capacity reclaim %s", id,
              a ? "planned" : "missing");
    if(a) {
      CHECK(a->type == PLAN_DELETE && a->del_kind == PLAN_DEL_RECLAIM);
      CHECK(a->expect_paused);
      CHECK(strstr(a->capacity, "--max-paused 20 (30 paused)"));
      CHECK(strstr(a->reason, "capacity"));
    }
  }
  CHECK(p->capacity_known);
  CHECK_INT(p->n_tenants, 2);
  CHECK_INT(p->tenants[0].paused + p->tenants[1].paused, 30);
  plan_free(p);
  w_del(w);
}

/* never a running sandbox, never reclaimAfter 0 (they count), never an
 * orphan; per tenant budget; nothing in a pass that is not whole */
TEST(rule14_victims_only_paused_reclaimable)
{
  world *w = w_new();
  plan *p;
  session *s;
  w->cfg.max_paused_per_tenant = 1;
  s = c_sess(w, "t0", "keep", SESSION_STATE_ACTIVE, W_NOW - HOUR_MS);
  s->spec.reclaim_after_ms = 0; /* never reclaimed: counts, not chosen */
  c_sb(w, s, "b-keep", CUBE_SB_PAUSED, W_NOW - 5 * HOUR_MS);
  s = c_sess(w, "t0", "run", SESSION_STATE_ACTIVE, W_NOW - HOUR_MS);
  c_sb(w, s, "b-run", CUBE_SB_RUNNING, W_NOW + HOUR_MS);
  s = c_sess(w, "t0", "old", SESSION_STATE_ACTIVE, W_NOW - HOUR_MS);
  c_sb(w, s, "b-old", CUBE_SB_PAUSED, W_NOW - 3 * HOUR_MS);
  s = c_sess(w, "t0", "new", SESSION_STATE_ACTIVE, W_NOW - HOUR_MS);
  c_sb(w, s, "b-new", CUBE_SB_PAUSED, W_NOW - 1 * HOUR_MS);
  s = c_sess(w, "t1", "alone", SESSION_STATE_ACTIVE, W_NOW - HOUR_MS);
  c_sb(w, s, "b-alone", CUBE_SB_PAUSED, W_NOW - 9 * HOUR_MS);
  /* an orphan of t0 (no session), paused longest of all */
  w_sb(w, "b-orphan", CUBE_SB_PAUSED, W_NOW - 2 * MIN_MS, "t0", "gone");
  p = w_plan(w);
  CHECK(p);
  /* t0 has keep, old, new paused (3) over 1: old and new go, keep stays */
  CHECK_INT(n_capacity(p), 2);
  CHECK(capacity_of(p, "b-old") && capacity_of(p, "b-new"));
  CHECK(!capacity_of(p, "b-keep") && !capacity_of(p, "b-run") &&
        !capacity_of(p, "b-alone") && !capacity_of(p, "b-orphan"));
  CHECK(strstr(capacity_of(p, "b-old")->capacity,
               "--max-paused-per-tenant 1 (tenant t0 has 3 paused)"));
  plan_free(p);
  /* a single-session pass (the store side not whole) chooses nothing */
  w->complete = false;
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(n_capacity(p), 0);
  CHECK(!p->capacity_known);
  plan_free(p);
  w_del(w);
}

/* reclaims already due by reclaimAfter, and recorded reclaim intents,
 * count as gone: no replica reclaims more than the budget asks */
TEST(rule14_due_and_intents_count_as_gone)
{
  world *w = w_new();
  plan *p;
  session *s;
  w->cfg.max_paused = 2;
  s = c_sess(w, "t0", "due", SESSION_STATE_ACTIVE, W_NOW - HOUR_MS);
  c_sb(w, s, "b-due", CUBE_SB_PAUSED, W_NOW - 30 * HOUR_MS); /* > 24h */
  s = c_sess(w, "t0", "intent", SESSION_STATE_ACTIVE, W_NOW - HOUR_MS);
  c_sb(w, s, "b-intent", CUBE_SB_PAUSED, W_NOW - 20 * HOUR_MS);
  s->status.pending_kind = strdup("reclaim");
  s->status.pending_sandbox_id = strdup("b-intent");
  s->status.pending_by = strdup("other");
  s->status.pending_at = W_NOW - 1000;
  /* not due by reclaimAfter (24h): a capacity intent, and its Ready
   * says so, as plan_status_intent() writes it (without, the intent
   * would be one the spec no longer asks for, rule 11: withdrawn) */
  {
    session_condition c = {0};
    c.type = "Ready";
    c.status = "False";
    c.reason = "ReclaimingForCapacity";
    c.message = "reclaiming sandbox b-intent for capacity, --max-paused 2 "
                "(5 paused) (intent written by other)";
    CHECK_OK(session_status_set_condition(&s->status, &c));
  }
  s = c_sess(w, "t0", "a", SESSION_STATE_ACTIVE, W_NOW - HOUR_MS);
  c_sb(w, s, "b-a", CUBE_SB_PAUSED, W_NOW - 3 * HOUR_MS);
  s = c_sess(w, "t0", "b", SESSION_STATE_ACTIVE, W_NOW - HOUR_MS);
  c_sb(w, s, "b-b", CUBE_SB_PAUSED, W_NOW - 2 * HOUR_MS);
  s = c_sess(w, "t0", "c", SESSION_STATE_ACTIVE, W_NOW - HOUR_MS);
  c_sb(w, s, "b-c", CUBE_SB_PAUSED, W_NOW - 1 * HOUR_MS);
  p = w_plan(w);
  CHECK(p);
  /* a, b, c stay paused (3 > 2): a goes; due and intent are reclaims */
  CHECK_INT(n_capacity(p), 1);
  CHECK(capacity_of(p, "b-a"));
  CHECK_INT(p_count(p, PLAN_DELETE, PLAN_DEL_RECLAIM), 3);
  plan_free(p);
  w_del(w);
}

/* the brake (rule 13) holds capacity reclaims like any reclaim */
TEST(rule14_capacity_within_reclaim_brake)
{
  world *w = w_new();
  plan *p;
  size_t i;
  char name[16], id[16];
  w->cfg.max_paused = 5;
  w->cfg.reclaim_brake_floor = 3;
  w->cfg.reclaim_brake_fraction = 0.1;
  for(i = 0; i < 25; i++) {
    session *s;
    snprintf(name, sizeof(name), "s%02zu", i);
    snprintf(id, sizeof(id), "b%02zu", i);
    s = c_sess(w, "t0", name, SESSION_STATE_ACTIVE, W_NOW - HOUR_MS);
    c_sb(w, s, id, CUBE_SB_PAUSED, W_NOW - (100 - (sc_time)i) * MIN_MS);
  }
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_capacity_reclaims, 20);
  CHECK_INT(n_capacity(p), 3); /* max(3, 10% of 25) */
  CHECK_INT(p->n_reclaims_held, 17);
  CHECK(capacity_of(p, "b00") && capacity_of(p, "b01") &&
        capacity_of(p, "b02"));
  plan_free(p);
  w_del(w);
}

/* intent, then the outcome, say capacity; a wake makes a new sandbox */
TEST(rule14_status_says_capacity_and_wake_works)
{
  world *w = w_new();
  plan *p;
  session *s, *t;
  const plan_action *a;
  session_status st;
  w->cfg.max_paused = 1;
  s = c_sess(w, "t0", "old", SESSION_STATE_ACTIVE, W_NOW - HOUR_MS);
  c_sb(w, s, "b-old", CUBE_SB_PAUSED, W_NOW - 3 * HOUR_MS);
  t = c_sess(w, "t0", "new", SESSION_STATE_ACTIVE, W_NOW - HOUR_MS);
  c_sb(w, t, "b-new", CUBE_SB_PAUSED, W_NOW - 1 * HOUR_MS);
  p = w_plan(w);
  CHECK(p);
  a = capacity_of(p, "b-old");
  CHECK(a && n_capacity(p) == 1);
  CHECK_STR(plan_intent_kind(a), "reclaim");
  CHECK_OK(session_status_copy(&st, &p_sess(p, s)->status));
  CHECK_OK(plan_status_intent(s, a, "me", &st));
  CHECK_STR(cond_reason(&st, "Ready"), "ReclaimingForCapacity");
  CHECK(strstr(session_status_get_condition(&st, "Ready")->message,
               "--max-paused 1"));
  CHECK_OK(plan_status_after(s, a, NULL, &st));
  CHECK_INT(st.phase, SESSION_PHASE_RECLAIMED);
  CHECK_INT(st.reclaimed_generation, 1);
  CHECK(!st.pending_kind && !st.sandbox_id);
  CHECK_STR(cond_reason(&st, "Ready"), "ReclaimedForCapacity");
  CHECK(strstr(session_status_get_condition(&st, "Ready")->message,
               "--max-paused 1 (2 paused)"));
  plan_free(p);
  /* the world after the DELETE: the status stays, nothing more is done */
  session_status_clear(&s->status);
  s->status = st;
  cube_sandbox_clear(&w->b[0]);
  w->b[0] = w->b[--w->nb];
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 0);
  CHECK(!p_sess(p, s)->status_changed);
  plan_free(p);
  /* a wake (generation past reclaimedGeneration) creates, as after any
   * reclaim */
  s->meta.generation = 2;
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p_count(p, PLAN_CREATE, PLAN_DEL_NONE), 1);
  CHECK(p_find(p, PLAN_CREATE, NULL)->s == s);
  plan_free(p);
  w_del(w);
}

/* a carried-on capacity intent ends ReclaimedForCapacity too */
TEST(rule14_carried_on_intent_keeps_capacity)
{
  world *w = w_new();
  plan *p;
  session *s;
  const plan_action *a;
  session_condition c = {0};
  session_status st;
  s = c_sess(w, "t0", "x", SESSION_STATE_ACTIVE, W_NOW - HOUR_MS);
  c_sb(w, s, "b-x", CUBE_SB_PAUSED, W_NOW - HOUR_MS);
  s->status.pending_kind = strdup("reclaim");
  s->status.pending_sandbox_id = strdup("b-x");
  s->status.pending_by = strdup("other");
  s->status.pending_at = W_NOW - 1000;
  c.type = "Ready";
  c.status = "False";
  c.reason = "ReclaimingForCapacity";
  c.message = "reclaiming sandbox b-x for capacity, --max-paused 1 (3 "
              "paused) (intent written by other)";
  CHECK_OK(session_status_set_condition(&s->status, &c));
  p = w_plan(w);
  CHECK(p);
  a = p_find(p, PLAN_DELETE, "b-x");
  CHECK(a && !a->capacity); /* carried on: audited as the reclaim it is */
  CHECK_STR(cond_reason(&p_sess(p, s)->status, "Ready"),
            "ReclaimingForCapacity");
  CHECK_OK(session_status_copy(&st, &p_sess(p, s)->status));
  /* the carrier writes its own intent over the first one's (rule 11):
   * it still says capacity */
  CHECK_OK(plan_status_intent(s, a, "carrier", &st));
  CHECK_STR(cond_reason(&st, "Ready"), "ReclaimingForCapacity");
  CHECK_STR(st.pending_by, "carrier");
  CHECK_OK(plan_status_after(s, a, NULL, &st));
  CHECK_STR(cond_reason(&st, "Ready"), "ReclaimedForCapacity");
  /* with the budget the first writer recorded */
  CHECK(strstr(session_status_get_condition(&st, "Ready")->message,
               "for capacity (--max-paused 1 (3 paused))"));
  session_status_clear(&st);
  plan_free(p);
  /* its writer died after the DELETE: the GET says gone, and any replica
   * concludes it, capacity and budget kept */
  cube_sandbox_clear(&w->b[0]);
  w->nb = 0;
  w->gone[w->ngone++] = "b-x";
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 0);
  CHECK_INT(p_sess(p, s)->status.phase, SESSION_PHASE_RECLAIMED);
  CHECK_STR(cond_reason(&p_sess(p, s)->status, "Ready"),
            "ReclaimedForCapacity");
  CHECK(strstr(session_status_get_condition(&p_sess(p, s)->status, "Ready")
                 ->message, "--max-paused 1 (3 paused)"));
  plan_free(p);
  w_del(w);
}

/* ---------- rule 15 ---------- */

TEST(rule15_quota_waits_in_creation_order)
{
  world *w = w_new();
  plan *p;
  session *r1, *r2, *a, *b, *c, *other;
  w->cfg.max_running_per_tenant = 2;
  r1 = c_sess(w, "t0", "r1", SESSION_STATE_ACTIVE, W_NOW - 9 * HOUR_MS);
  c_sb(w, r1, "b-r1", CUBE_SB_RUNNING, W_NOW + HOUR_MS);
  r2 = c_sess(w, "t0", "r2", SESSION_STATE_ACTIVE, W_NOW - 9 * HOUR_MS);
  c_sb(w, r2, "b-r2", CUBE_SB_RUNNING, W_NOW + HOUR_MS);
  /* names against their creation order: the order is the timestamp's */
  c = c_sess(w, "t0", "a", SESSION_STATE_ACTIVE, W_NOW - 1 * MIN_MS);
  a = c_sess(w, "t0", "c", SESSION_STATE_ACTIVE, W_NOW - 3 * MIN_MS);
  b = c_sess(w, "t0", "b", SESSION_STATE_ACTIVE, W_NOW - 2 * MIN_MS);
  other = c_sess(w, "t1", "o", SESSION_STATE_ACTIVE, W_NOW - MIN_MS);
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p_count(p, PLAN_CREATE, PLAN_DEL_NONE), 1);
  CHECK(p_find(p, PLAN_CREATE, NULL)->s == other);
  CHECK_INT(p->n_quota_waiting, 3);
  CHECK_INT(p_sess(p, a)->status.phase, SESSION_PHASE_PENDING);
  CHECK_STR(cond_reason(&p_sess(p, a)->status, "Ready"), "QuotaExceeded");
  CHECK(strstr(session_status_get_condition(&p_sess(p, a)->status, "Ready")
                 ->message, "--max-running-per-tenant 2"));
  CHECK_STR(cond_reason(&p_sess(p, b)->status, "Ready"), "QuotaExceeded");
  CHECK_STR(cond_reason(&p_sess(p, c)->status, "Ready"), "QuotaExceeded");
  CHECK(!p_find(p, PLAN_PAUSE, NULL)); /* running ones are never paused */
  plan_free(p);
  /* r1 pauses: one slot, for the oldest (a, created 3 min ago) */
  w->b[0].state = CUBE_SB_PAUSED;
  w->b[0].end_at = W_NOW - 1000;
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p_count(p, PLAN_CREATE, PLAN_DEL_NONE), 2);
  CHECK(p_sess(p, a)->status.phase == SESSION_PHASE_CREATING);
  CHECK_STR(cond_reason(&p_sess(p, b)->status, "Ready"), "QuotaExceeded");
  CHECK_INT(p->n_quota_waiting, 2);
  plan_free(p);
  w_del(w);
}

/* another process's fresh create claim takes a slot (an in-flight create
 * is not yet listed); a pass that is not whole decides no create */
TEST(rule15_claims_count_and_single_pass_waits)
{
  world *w = w_new();
  plan *p;
  session *x, *y;
  session_condition c = {0};
  w->cfg.max_running_per_tenant = 1;
  x = c_sess(w, "t0", "x", SESSION_STATE_ACTIVE, W_NOW - 2 * MIN_MS);
  x->status.create_intent_by = strdup("replica-b#1");
  x->status.create_intent_at = W_NOW - 500;
  y = c_sess(w, "t0", "y", SESSION_STATE_ACTIVE, W_NOW - 3 * MIN_MS);
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p_count(p, PLAN_CREATE, PLAN_DEL_NONE), 0);
  CHECK_STR(cond_reason(&p_sess(p, y)->status, "Ready"), "QuotaExceeded");
  plan_free(p);
  /* a single-session pass: it cannot count; it waits, asks a full pass */
  w->complete = false;
  w->s[0] = y;
  w->ns = 1;
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p_count(p, PLAN_CREATE, PLAN_DEL_NONE), 0);
  CHECK_STR(cond_reason(&p_sess(p, y)->status, "Ready"), "WaitingForQuota");
  CHECK(p->wants_full_pass);
  plan_free(p);
  /* once a full pass said QuotaExceeded, a single pass leaves it so */
  c.type = "Ready";
  c.status = "False";
  c.reason = "QuotaExceeded";
  c.message = "waits";
  CHECK_OK(session_status_set_condition(&y->status, &c));
  y->status.phase = SESSION_PHASE_PENDING;
  y->status.observed_generation = 1;
  y->status.tenant_id = strdup("t0"); /* as the full pass wrote it */
  p = w_plan(w);
  CHECK(p);
  CHECK_INT(p->n_actions, 0);
  CHECK(!p_sess(p, y)->status_changed);
  CHECK(!p->wants_full_pass);
  plan_free(p);
  w->s[0] = x; /* w_del frees both */
  w->s[1] = y;
  w->ns = 2;
  w_del(w);
}

/* ---------- properties over random fleets ---------- */

typedef struct rng {
  uint64_t s;
} rng;

static uint64_t rnd(rng *r)
{
  r->s ^= r->s >> 12;
  r->s ^= r->s << 25;
  r->s ^= r->s >> 27;
  return r->s * 2685821657736338717ULL;
}

static unsigned rn(rng *r, unsigned n)
{
  return (unsigned)(rnd(r) % n);
}

static const char *const c_tenants[] = {"t0", "t1", "t2"};

/* a random fleet of live sessions: running, paused (some reclaimAfter
 * 0), none yet; budgets small enough to bite */
static void gen_fleet(world *w, rng *r, int *next)
{
  size_t i, n = 8 + rn(r, 40);
  w->cfg.max_paused = 1 + rn(r, 12);
  w->cfg.max_paused_per_tenant = rn(r, 2) ? 0 : 1 + rn(r, 6);
  w->cfg.max_running_per_tenant = 1 + rn(r, 5);
  w->cfg.reclaim_brake_fraction = 0; /* the brake has its own test */
  for(i = 0; i < n; i++) {
    char name[16], id[24];
    session *s;
    unsigned k = rn(r, 3);
    snprintf(name, sizeof(name), "s%03d", (*next)++);
    s = c_sess(w, c_tenants[rn(r, 3)], name, SESSION_STATE_ACTIVE,
               W_NOW - (sc_time)rn(r, 5) * MIN_MS); /* creation ties */
    if(!rn(r, 6))
      s->spec.reclaim_after_ms = 0;
    snprintf(id, sizeof(id), "b-%s", name);
    if(k == 1)
      c_sb(w, s, id, CUBE_SB_RUNNING, W_NOW + HOUR_MS);
    else if(k == 2) /* endAt ties too */
      c_sb(w, s, id, CUBE_SB_PAUSED, W_NOW - (sc_time)rn(r, 6) * MIN_MS);
  }
}

static size_t tenant_ix(const char *t)
{
  return (size_t)(t[1] - '0');
}

static const cube_sandbox *sb_of(const world *w, const session *s)
{
  size_t i;
  for(i = 0; s->status.sandbox_id && i < w->nb; i++)
    if(!strcmp(w->b[i].sandbox_id, s->status.sandbox_id))
      return &w->b[i];
  return NULL;
}

static const char *tag(const cube_sandbox *b, const char *k)
{
  return sc_kvlist_get(&b->metadata, k);
}

/* The plan's victims and admitted creates, checked against the world it
 * was made from: victims are paused and reclaimable, the longest-paused
 * of their scope; no create passes the quota; admitted creates are
 * older than every waiter of their tenant. */
static const char *check_choice(const world *w, const plan *p, char *msg,
                                size_t len)
{
  size_t i, j;
  size_t running[3] = {0}, creates[3] = {0};
  for(i = 0; i < p->n_actions; i++) {
    const plan_action *a = &p->actions[i];
    const cube_sandbox *b = a->s ? sb_of(w, a->s) : NULL;
    if(a->type == PLAN_CREATE)
      creates[tenant_ix(a->s->spec.tenant_id)]++;
    if(!a->capacity)
      continue;
    if(!b || b->state != CUBE_SB_PAUSED)
      return "a capacity victim is not paused";
    if(session_eff_reclaim_after_ms(a->s) <= 0)
      return "a session with reclaimAfter 0 was chosen";
    /* longest-paused: every reclaimable paused sandbox of the scope that
     * stays has paused no longer (endAt not earlier) */
    for(j = 0; j < w->ns; j++) {
      const session *o = w->s[j];
      const cube_sandbox *ob = sb_of(w, o);
      bool chosen = false;
      size_t k;
      if(!ob || ob->state != CUBE_SB_PAUSED ||
         session_eff_reclaim_after_ms(o) <= 0)
        continue;
      if(strstr(a->capacity, "per-tenant") &&
         strcmp(o->spec.tenant_id, a->s->spec.tenant_id))
        continue;
      for(k = 0; k < p->n_actions; k++)
        chosen |= p->actions[k].type == PLAN_DELETE &&
                  p->actions[k].s == o;
      if(!chosen && ob->end_at < b->end_at) {
        snprintf(msg, len, "victim %s (endAt %lld) chosen over %s (endAt "
                 "%lld)", a->sandbox_id, (long long)b->end_at,
                 ob->sandbox_id, (long long)ob->end_at);
        return msg;
      }
    }
  }
  for(i = 0; i < w->nb; i++)
    if(w->b[i].state == CUBE_SB_RUNNING)
      running[tenant_ix(tag(&w->b[i], SESSION_TAG_TENANT_ID))]++;
  for(i = 0; i < 3; i++)
    if(creates[i] && running[i] + creates[i] > w->cfg.max_running_per_tenant)
      return "creates pass the running quota";
  /* creation order: each create is no younger than any waiter */
  for(i = 0; i < p->n_actions; i++) {
    const plan_action *a = &p->actions[i];
    if(a->type != PLAN_CREATE)
      continue;
    for(j = 0; j < p->n_sessions; j++) {
      const plan_session *ps = &p->sessions[j];
      if(strcmp(cond_reason(&ps->status, "Ready"), "QuotaExceeded") ||
         strcmp(ps->s->spec.tenant_id, a->s->spec.tenant_id))
        continue;
      if(ps->s->meta.creation_timestamp < a->s->meta.creation_timestamp)
        return "a younger session was created before a waiter";
    }
  }
  return NULL;
}

/* the budgets after the plan's actions: paused sandboxes of live sessions
 * with reclaimAfter > 0 are within max_paused (per tenant too) */
static const char *check_budgets(const world *w, char *msg, size_t len)
{
  size_t i, all = 0, keep = 0, per[3] = {0}, perk[3] = {0};
  for(i = 0; i < w->ns; i++) {
    const cube_sandbox *b = sb_of(w, w->s[i]);
    size_t t = tenant_ix(w->s[i]->spec.tenant_id);
    if(!b || b->state != CUBE_SB_PAUSED)
      continue;
    all++;
    per[t]++;
    if(session_eff_reclaim_after_ms(w->s[i]) <= 0) {
      keep++;
      perk[t]++;
    }
  }
  if(all > w->cfg.max_paused && all > keep) {
    snprintf(msg, len, "%zu paused (%zu never reclaimed) over --max-paused "
             "%zu", all, keep, w->cfg.max_paused);
    return msg;
  }
  for(i = 0; w->cfg.max_paused_per_tenant && i < 3; i++)
    if(per[i] > w->cfg.max_paused_per_tenant && per[i] > perk[i]) {
      snprintf(msg, len, "tenant t%zu: %zu paused over %zu", i, per[i],
               w->cfg.max_paused_per_tenant);
      return msg;
    }
  return NULL;
}

/* the executor and Cube, simply: intent + act + status after */
static void apply(world *w, const plan *p, int *next)
{
  size_t i, k;
  for(i = 0; i < w->ns; i++) {
    const plan_session *ps = p_sess(p, w->s[i]);
    session_status st;
    if(session_status_copy(&st, &ps->status))
      abort();
    session_status_clear(&w->s[i]->status);
    w->s[i]->status = st;
  }
  for(i = 0; i < p->n_actions; i++) {
    const plan_action *a = &p->actions[i];
    char id[32] = "";
    session *s = NULL;
    for(k = 0; k < w->ns; k++)
      if(w->s[k] == a->s)
        s = w->s[k];
    if(!s)
      continue;
    if(plan_intent_kind(a) &&
       plan_status_intent(s, a, "me", &s->status))
      abort();
    if(a->type == PLAN_CREATE) {
      cube_sandbox *b;
      snprintf(id, sizeof(id), "n%04d", (*next)++);
      b = w_sb(w, id, CUBE_SB_RUNNING, w->now + HOUR_MS, s->spec.tenant_id,
               s->spec.session_id);
      if(sc_kvlist_set(&b->metadata, SESSION_TAG_SESSION_UID, s->meta.uid))
        abort();
    }
    else if(a->type == PLAN_DELETE) {
      for(k = 0; k < w->nb; k++)
        if(!strcmp(w->b[k].sandbox_id, a->sandbox_id)) {
          cube_sandbox_clear(&w->b[k]);
          w->b[k] = w->b[--w->nb];
          break;
        }
    }
    else
      continue; /* the fleet here only creates and reclaims */
    if(plan_status_after(s, a, id[0] ? id : NULL, &s->status))
      abort();
  }
}

/* time goes by: some running sandboxes pause, some new sessions come */
static void tick(world *w, rng *r, int *next)
{
  size_t i, n = rn(r, 4);
  w->now += MIN_MS;
  for(i = 0; i < w->nb; i++)
    if(w->b[i].state == CUBE_SB_RUNNING && !rn(r, 3)) {
      w->b[i].state = CUBE_SB_PAUSED;
      w->b[i].end_at = w->now - (sc_time)rn(r, 2) * 1000;
    }
  for(i = 0; i < n; i++) {
    char name[16];
    snprintf(name, sizeof(name), "s%03d", (*next)++);
    c_sess(w, c_tenants[rn(r, 3)], name, SESSION_STATE_ACTIVE,
           w->now - (sc_time)rn(r, 3) * 1000);
  }
}

static char *victims_and_creates(const plan *p)
{
  dynbuf b;
  size_t i;
  dynbuf_init(&b, 1 << 20);
  for(i = 0; i < p->n_actions; i++)
    if(p->actions[i].capacity || p->actions[i].type == PLAN_CREATE)
      if(dynbuf_printf(&b, "%s %s/%s %s\n",
                       plan_action_type_name(p->actions[i].type),
                       p->actions[i].ns, p->actions[i].name,
                       p->actions[i].capacity ? p->actions[i].capacity : ""))
        abort();
  if(dynbuf_addstr(&b, ""))
    abort();
  return dynbuf_take(&b);
}

static void shuffle(world *w, rng *r)
{
  size_t i;
  for(i = w->ns; i > 1; i--) {
    size_t j = rn(r, (unsigned)i);
    session *t = w->s[i - 1];
    w->s[i - 1] = w->s[j];
    w->s[j] = t;
  }
  for(i = w->nb; i > 1; i--) {
    size_t j = rn(r, (unsigned)i);
    cube_sandbox t = w->b[i - 1];
    w->b[i - 1] = w->b[j];
    w->b[j] = t;
  }
}

#define FLEETS 300
#define PASSES 12

TEST(props_capacity_fleets)
{
  world *w = w_new();
  size_t c, victims = 0, waits = 0, creates = 0;
  char msg[256];
  for(c = 0; c < FLEETS; c++) {
    rng r = {(c + 1) * 0x9E3779B97F4A7C15ULL | 1};
    int next = 0, pass;
    world_free(w);
    world_init(w);
    gen_fleet(w, &r, &next);
    for(pass = 0; pass < PASSES; pass++) {
      plan *p = w_plan(w), *p2;
      const char *bad;
      char *t1, *t2;
      CHECK(p);
      bad = check_choice(w, p, msg, sizeof(msg));
      CHECK_MSG(!bad, "fleet %zu pass %d: %s", c, pass, bad);
      /* the same choice again, and from a shuffled input */
      t1 = victims_and_creates(p);
      shuffle(w, &r);
      p2 = w_plan(w);
      CHECK(p2);
      t2 = victims_and_creates(p2);
      CHECK_MSG(!strcmp(t1, t2), "fleet %zu pass %d: shuffled input "
                "chooses otherwise:\n%s---\n%s", c, pass, t1, t2);
      free(t1);
      free(t2);
      plan_free(p2);
      victims += n_capacity(p);
      waits += p->n_quota_waiting;
      creates += p_count(p, PLAN_CREATE, PLAN_DEL_NONE);
      apply(w, p, &next);
      plan_free(p);
      bad = check_budgets(w, msg, sizeof(msg));
      CHECK_MSG(!bad, "fleet %zu after pass %d: %s", c, pass, bad);
      tick(w, &r, &next);
    }
  }
  if(getenv("TEST_VERBOSE"))
    fprintf(stderr, "  %d fleets: %zu capacity reclaims, %zu waits, %zu "
            "creates\n", FLEETS, victims, waits, creates);
  /* the generator must reach every path */
  CHECK(victims > FLEETS && waits > FLEETS && creates > FLEETS);
  w_del(w);
}

TEST_LIST = {
  T(rule14_max_paused_reclaims_longest_paused),
  T(rule14_victims_only_paused_reclaimable),
  T(rule14_due_and_intents_count_as_gone),
  T(rule14_capacity_within_reclaim_brake),
  T(rule14_status_says_capacity_and_wake_works),
  T(rule14_carried_on_intent_keeps_capacity),
  T(rule15_quota_waits_in_creation_order),
  T(rule15_claims_count_and_single_pass_waits),
  T(props_capacity_fleets),
  {0},
};

TEST_MAIN()
