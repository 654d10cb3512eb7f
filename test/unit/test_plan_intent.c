/* Rule 11 in the planner: a recorded intent (status.pendingAction) is
 * carried on from the facts and never undone into a create; and the
 * connect request (the lea.io/connect annotation), ordered against it.
 * Through the whole pass (w_plan), as a replica that finds the store as
 * a crashed one left it. The last test runs random interleavings of
 * connects, reclaims, crashes and lost compare-and-sets against a model
 * store and Cube. */
#include "test/harness.h"
#include "test/unit/plan_world.h"
#include "lib/scstr.h"

#define NOW W_NOW

static void pending(session *s, const char *kind, const char *id)
{
  s->status.pending_kind = strdup(kind);
  s->status.pending_sandbox_id = strdup(id);
  s->status.pending_by = strdup("dead-replica#01020304");
  s->status.pending_at = NOW - 1000;
}

static void connect_req(session *s, const char *nonce)
{
  if(sc_kvlist_set(&s->meta.annotations, SESSION_ANNOT_CONNECT, nonce))
    abort();
}

/* the crash between the DELETE and the outcome: the sandbox is gone, the
 * intent is in the store. Before: the session got a new sandbox (phase
 * Running, reclaimedGeneration null). */
TEST(rule11_reclaim_whose_sandbox_is_gone_is_reclaimed_never_created)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", SESSION_STATE_ACTIVE);
  const plan_session *ps;
  plan *p;
  w_link(s, "sb-r");
  pending(s, "reclaim", "sb-r");
  w->gone[w->ngone++] = "sb-r"; /* a GET said 404 */
  p = w_plan(w);
  CHECK(p);
  CHECK(!p_find(p, PLAN_CREATE, NULL));
  ps = p_sess(p, s);
  CHECK_INT(ps->status.phase, SESSION_PHASE_RECLAIMED);
  CHECK_INT(ps->status.reclaimed_generation, 1);
  CHECK(!ps->status.pending_kind);
  CHECK(!ps->status.sandbox_id);
  CHECK_STR(cond_reason(&ps->status, "Ready"), "Reclaimed");
  plan_free(p);
  /* not yet confirmed gone: a GET first, nothing made */
  w->ngone = 0;
  p = w_plan(w);
  CHECK(p && p_find(p, PLAN_CONFIRM, "sb-r"));
  CHECK(!p_find(p, PLAN_CREATE, NULL));
  plan_free(p);
  w_del(w);
}

TEST(rule11_reclaim_whose_sandbox_is_paused_is_carried_on)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", SESSION_STATE_ACTIVE);
  const plan_action *a;
  plan *p;
  w_link(s, "sb-r");
  pending(s, "reclaim", "sb-r");
  /* paused two days ago, still due: the written intent is carried on
   * however long it has been seen (its writer may be in its DELETE) */
  w_sb(w, "sb-r", CUBE_SB_PAUSED, NOW - 48 * HOUR_MS, "t1", "a");
  p = w_plan(w);
  a = p ? p_find(p, PLAN_DELETE, "sb-r") : NULL;
  CHECK(a && a->del_kind == PLAN_DEL_RECLAIM && a->expect_paused);
  CHECK_INT(p_sess(p, s)->status.phase, SESSION_PHASE_RECLAIMING);
  plan_free(p);
  w->intent_seen_ms = &(const int64_t){10 * PLAN_RECLAIM_VOID_AFTER_MS};
  p = w_plan(w);
  CHECK(p && p_find(p, PLAN_DELETE, "sb-r"));
  CHECK(p && p_sess(p, s)->status.pending_kind);
  plan_free(p);
  w_del(w);
}

/* The chaos suite's mistaken deletions: a reclaim's intent was carried
 * on from replica to replica through failing DELETEs for an hour, after
 * the user had set reclaimAfter 0 (or state Running), and then landed.
 * A written reclaim the spec no longer asks for waits, neither deleted
 * nor resumed, while a DELETE of it may be in flight (seen for less than
 * reclaim_void_after_ms); then it is void and the session goes on as
 * any. Before: the DELETE went on every pass, whatever the spec said. */
static void spec_no_longer_asks(session *s, int how)
{
  if(how == 0) { /* reclaimAfter raised past the paused time */
    s->spec.reclaim_after_ms = 7 * 24 * HOUR_MS;
  }
  else if(how == 1) { /* reclaimAfter 0: never */
    s->spec.reclaim_after_ms = 0;
  }
  else
    s->spec.state = SESSION_STATE_RUNNING;
}

TEST(rule11_reclaim_the_spec_no_longer_asks_for_waits_then_is_void)
{
  int how;
  for(how = 0; how < 3; how++) {
    world *w = w_new();
    session *s = w_sess(w, "t1", "a", SESSION_STATE_ACTIVE);
    const plan_session *ps;
    int64_t seen;
    plan *p;
    w_link(s, "sb-r");
    pending(s, "reclaim", "sb-r");
    w_sb(w, "sb-r", CUBE_SB_PAUSED, NOW - 48 * HOUR_MS, "t1", "a");
    spec_no_longer_asks(s, how);
    /* first seen, and just short of the bound: it waits */
    for(seen = 0; seen < PLAN_RECLAIM_VOID_AFTER_MS;
        seen += PLAN_RECLAIM_VOID_AFTER_MS - 1) {
      w->intent_seen_ms = &seen;
      p = w_plan(w);
      CHECK(p);
      if(!p)
        break;
      CHECK(!p_find(p, PLAN_DELETE, NULL));
      CHECK(!p_find(p, PLAN_RESUME, NULL));
      ps = p_sess(p, s);
      CHECK_STR(ps->status.pending_kind, "reclaim");
      CHECK_STR(ps->status.sandbox_id, "sb-r");
      CHECK_STR(cond_reason(&ps->status, "Ready"), "ReclaimWithdrawing");
      /* looked at again when the wait is over, by Cube's clock */
      CHECK(ps->next_due > NOW &&
            ps->next_due <= NOW + PLAN_RECLAIM_VOID_AFTER_MS - seen + 1000);
      plan_free(p);
    }
    /* seen for the bound: void; Running resumes it, the others keep it
     * paused (and no new reclaim: it is not due by the spec) */
    seen = PLAN_RECLAIM_VOID_AFTER_MS;
    w->intent_seen_ms = &seen;
    p = w_plan(w);
    CHECK(p);
    if(p) {
      ps = p_sess(p, s);
      CHECK(!ps->status.pending_kind);
      CHECK(!p_find(p, PLAN_DELETE, NULL));
      CHECK_STR(ps->status.sandbox_id, "sb-r");
      if(how == 2)
        CHECK(p_find(p, PLAN_RESUME, "sb-r"));
      else {
        CHECK(!p_find(p, PLAN_RESUME, NULL));
        CHECK_INT(ps->status.phase, SESSION_PHASE_PAUSED);
      }
      plan_free(p);
    }
    /* without the loop's durations (NULL) nothing is ever void */
    w->intent_seen_ms = NULL;
    p = w_plan(w);
    CHECK(p && !p_find(p, PLAN_DELETE, NULL) &&
          p_sess(p, s)->status.pending_kind);
    plan_free(p);
    w_del(w);
  }
}

TEST(rule11_reclaim_whose_sandbox_runs_again_is_void)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", SESSION_STATE_ACTIVE);
  const plan_session *ps;
  plan *p;
  w_link(s, "sb-r");
  pending(s, "reclaim", "sb-r");
  w_sb(w, "sb-r", CUBE_SB_RUNNING, NOW + 60000, "t1", "a");
  p = w_plan(w);
  CHECK(p);
  CHECK(!p_find(p, PLAN_DELETE, NULL));
  ps = p_sess(p, s);
  CHECK(!ps->status.pending_kind);
  CHECK_INT(ps->status.phase, SESSION_PHASE_RUNNING);
  plan_free(p);
  w_del(w);
}

/* a connect that lands after the reclaim's intent does not resume the
 * sandbox (its DELETE may be in flight): the reclaim completes and the
 * connect gets a new sandbox */
TEST(rule11_connect_after_the_intent_waits_for_the_reclaim)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", SESSION_STATE_ACTIVE);
  plan *p;
  w_link(s, "sb-r");
  pending(s, "reclaim", "sb-r");
  connect_req(s, "n1");
  w_sb(w, "sb-r", CUBE_SB_PAUSED, NOW - 48 * HOUR_MS, "t1", "a");
  p = w_plan(w);
  CHECK(p && p_find(p, PLAN_DELETE, "sb-r"));
  CHECK(!p_find(p, PLAN_RESUME, NULL));
  CHECK(!p_sess(p, s)->status.connect_nonce);
  plan_free(p);
  /* the reclaim done (sandbox gone, outcome not yet written): a new one */
  w->nb = 0;
  cube_sandbox_clear(&w->b[0]);
  w->gone[w->ngone++] = "sb-r";
  p = w_plan(w);
  CHECK(p && p_find(p, PLAN_CREATE, NULL));
  CHECK(!p_sess(p, s)->status.pending_kind);
  plan_free(p);
  w_del(w);
}

/* a connect before any intent wins over a due reclaim: resumed */
TEST(connect_resumes_a_paused_sandbox_instead_of_reclaiming_it)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", SESSION_STATE_ACTIVE);
  plan *p;
  w_link(s, "sb-p");
  w_sb(w, "sb-p", CUBE_SB_PAUSED, NOW - 48 * HOUR_MS, "t1", "a");
  p = w_plan(w);
  CHECK(p && p_find(p, PLAN_DELETE, "sb-p")); /* due, no connect */
  plan_free(p);
  connect_req(s, "n1");
  p = w_plan(w);
  CHECK(p && p_find(p, PLAN_RESUME, "sb-p"));
  CHECK(!p_find(p, PLAN_DELETE, NULL));
  plan_free(p);
  w_del(w);
}

TEST(connect_after_a_reclaim_creates_and_ends_the_reclaimed_state)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", SESSION_STATE_ACTIVE);
  const plan_action *a;
  session_status st;
  plan *p;
  s->status.phase = SESSION_PHASE_RECLAIMED;
  s->status.reclaimed_generation = 1;
  p = w_plan(w);
  CHECK(p && !p_find(p, PLAN_CREATE, NULL)); /* reclaimed stays */
  plan_free(p);
  connect_req(s, "n2");
  p = w_plan(w);
  a = p ? p_find(p, PLAN_CREATE, NULL) : NULL;
  CHECK(a);
  if(a) {
    CHECK_OK(session_status_copy(&st, &p_sess(p, s)->status));
    CHECK_OK(plan_status_after(s, a, "sb-new", &st));
    CHECK_STR(st.connect_nonce, "n2");
    CHECK_STR(st.connect_result, SESSION_CONNECT_SERVED);
    CHECK_INT(st.reclaimed_generation, 0);
    CHECK_STR(st.sandbox_id, "sb-new");
    session_status_clear(&st);
  }
  plan_free(p);
  w_del(w);
}

TEST(connect_to_a_running_sandbox_is_served_at_once)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", SESSION_STATE_ACTIVE);
  const plan_session *ps;
  plan *p;
  w_link(s, "sb-run");
  s->status.applied_idle_timeout_ms = session_eff_idle_timeout_ms(s);
  w_sb(w, "sb-run", CUBE_SB_RUNNING, NOW + 60000, "t1", "a");
  connect_req(s, "n3");
  p = w_plan(w);
  CHECK(p);
  ps = p_sess(p, s);
  CHECK(ps->status_changed);
  CHECK_STR(ps->status.connect_nonce, "n3");
  CHECK_STR(ps->status.connect_result, SESSION_CONNECT_SERVED);
  CHECK_INT(p->n_actions, 0);
  plan_free(p);
  w_del(w);
}

TEST(connect_is_refused_with_why_for_ended_and_paused_sessions)
{
  world *w = w_new();
  session *e = w_sess(w, "t1", "ended", SESSION_STATE_ENDED);
  session *pz = w_sess(w, "t1", "paused", SESSION_STATE_PAUSED);
  session *bad = w_sess(w, "t1", "bad", SESSION_STATE_ACTIVE);
  const plan_session *ps;
  plan *p;
  connect_req(e, "n4");
  connect_req(pz, "n5");
  connect_req(bad, "x/y"); /* not a nonce: no request at all */
  p = w_plan(w);
  CHECK(p);
  ps = p_sess(p, e);
  CHECK_STR(ps->status.connect_nonce, "n4");
  CHECK_STR(ps->status.connect_result, SESSION_CONNECT_REFUSED);
  CHECK(ps->status.connect_message &&
        strstr(ps->status.connect_message, "Ended"));
  ps = p_sess(p, pz);
  CHECK_STR(ps->status.connect_result, SESSION_CONNECT_REFUSED);
  CHECK(ps->status.connect_message &&
        strstr(ps->status.connect_message, "Paused"));
  CHECK(!p_sess(p, bad)->status.connect_nonce);
  plan_free(p);
  w_del(w);
}

/* no sandbox outlives its object: a tombstone whose create another
 * process claimed a moment ago is not ended (nor purged) until that
 * create can be listed */
TEST(rule11_tombstone_waits_for_a_fresh_foreign_create_claim)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", SESSION_STATE_ACTIVE);
  plan *p;
  s->meta.deletion_timestamp = NOW - 1000;
  s->status.create_intent_by = strdup("other#0a0b0c0d");
  s->status.create_intent_at = NOW - 1000;
  p = w_plan(w);
  CHECK(p && p_sess(p, s)->status.phase != SESSION_PHASE_ENDED);
  CHECK(p_sess(p, s)->next_due == s->status.create_intent_at +
                                    w->cfg.create_intent_ttl_ms);
  plan_free(p);
  s->status.create_intent_at = NOW - w->cfg.create_intent_ttl_ms - 1;
  p = w_plan(w);
  CHECK(p && p_sess(p, s)->status.phase == SESSION_PHASE_ENDED);
  plan_free(p);
  w_del(w);
}

/* The chaos run's finding 11: a tombstone whose recorded delete got a 500,
 * its sandbox missing from a list that dropped the row without a sign. It
 * was ended (and purged) from that absence, and the sandbox, never
 * deleted, leaked. Now only a GET's 404 resolves the intent. */
TEST(rule11_tombstone_is_not_ended_while_its_intent_is_unresolved)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", SESSION_STATE_ACTIVE);
  plan *p;
  s->meta.deletion_timestamp = NOW - 1000;
  pending(s, "tombstone", "sb-unlisted");
  p = w_plan(w); /* the list is "complete" and misses it */
  CHECK(p && p_sess(p, s)->status.phase != SESSION_PHASE_ENDED);
  CHECK(p_sess(p, s)->status.pending_kind);
  plan_free(p);
  w->gone[w->ngone++] = "sb-unlisted"; /* the GET says 404 */
  p = w_plan(w);
  CHECK(p && p_sess(p, s)->status.phase == SESSION_PHASE_ENDED);
  CHECK(!p_sess(p, s)->status.pending_kind);
  plan_free(p);
  w_del(w);
}

/* ------------------------------------------------------------------ */
/* random interleavings */

/* A model of one session in a store (its status, its annotation, a
 * version) and of its sandbox in Cube, driven in a random order by: the
 * controller (plan the store as it is; write the status; per action the
 * intent by compare-and-set on the version its plan read, the call, the
 * outcome by compare-and-set), whose DELETE may stay in flight while the
 * others act (another replica's, slow in the token bucket, its last look
 * already taken) or be lost with its replica (a crash); the user (a
 * connect: a new annotation, a new version); Cube's idle sweeper (pauses
 * the running sandbox). The invariants, for connect-mediated use (no raw
 * traffic resumes anything): no DELETE ever lands on a running sandbox,
 * and once the actors settle every connect is served with a running
 * sandbox. */
typedef struct model {
  world *w;
  session *s;            /* the store's object */
  int64_t version;
  bool sb_exists;
  bool sb_running;
  sc_time sb_end_at;
  char sb_id[32];
  int next_id;
  /* a DELETE in flight: its intent is written, its last look taken */
  bool inflight;
  char inflight_id[32];
  int64_t inflight_version; /* what its outcome's CAS expects */
  int deletes_of_running;
  int bad_serves;        /* a connect answered Served without a running
                            sandbox behind it */
} model;

static void model_facts(model *m)
{
  world *w = m->w;
  size_t i;
  for(i = 0; i < w->nb; i++)
    cube_sandbox_clear(&w->b[i]);
  w->nb = 0;
  w->ngone = 0;
  if(m->sb_exists)
    w_sb(w, m->sb_id, m->sb_running ? CUBE_SB_RUNNING : CUBE_SB_PAUSED,
         m->sb_end_at, "t1", "a");
  if(m->s->status.sandbox_id &&
     (!m->sb_exists || strcmp(m->s->status.sandbox_id, m->sb_id)))
    w->gone[w->ngone++] = m->s->status.sandbox_id; /* a GET said 404 */
}

/* the status write of st on the version read, if it is still current */
static bool model_cas(model *m, int64_t read_version, session_status *st)
{
  if(m->version != read_version) {
    session_status_clear(st);
    return false;
  }
  if(st->connect_nonce &&
     !sc_str_eq0(st->connect_nonce, m->s->status.connect_nonce) &&
     sc_str_eq0(st->connect_result, SESSION_CONNECT_SERVED) &&
     (!m->sb_exists || !m->sb_running ||
      !sc_str_eq0(st->sandbox_id, m->sb_id)))
    m->bad_serves++;
  session_status_clear(&m->s->status);
  m->s->status = *st;
  m->version++;
  return true;
}

static void model_outcome(model *m, const plan_action *a,
                          int64_t *read_version)
{
  session_status st;
  if(session_status_copy(&st, &m->s->status) ||
     plan_status_after(m->s, a, a->type == PLAN_CREATE ? m->sb_id : NULL,
                       &st))
    abort();
  if(model_cas(m, *read_version, &st))
    *read_version = m->version;
}

static void model_delete_lands(model *m)
{
  plan_action a;
  int64_t v = m->inflight_version;
  m->inflight = false;
  if(m->sb_exists && !strcmp(m->sb_id, m->inflight_id)) {
    if(m->sb_running)
      m->deletes_of_running++;
    m->sb_exists = false;
  }
  memset(&a, 0, sizeof(a));
  a.type = PLAN_DELETE;
  a.del_kind = PLAN_DEL_RECLAIM;
  a.sandbox_id = m->inflight_id;
  a.cube_now = NOW;
  model_outcome(m, &a, &v);
}

static void controller_step(model *m, unsigned *seed, bool calm)
{
  plan *p;
  size_t i;
  int64_t rv = m->version;
  session_status st;
  model_facts(m);
  if(!(p = w_plan(m->w)))
    abort();
  if(p->sessions[0].status_changed) {
    if(session_status_copy(&st, &p->sessions[0].status))
      abort();
    if(model_cas(m, rv, &st))
      rv = m->version;
  }
  for(i = 0; i < p->n_actions; i++) {
    const plan_action *a = &p->actions[i];
    unsigned r = calm ? 1u : (unsigned)rand_r(seed);
    if(plan_intent_kind(a)) {
      if(session_status_copy(&st, &m->s->status) ||
         plan_status_intent(m->s, a, "me", &st))
        abort();
      if(!model_cas(m, rv, &st))
        break; /* the intent lost its CAS: no call */
      rv = m->version;
      if(r % 7 == 0)
        break; /* crash after the intent */
      if(a->type == PLAN_DELETE && !m->inflight && r % 3 == 0) {
        /* slow: it lands later, whatever happens meanwhile */
        m->inflight = true;
        snprintf(m->inflight_id, sizeof(m->inflight_id), "%s",
                 a->sandbox_id);
        m->inflight_version = rv;
        break;
      }
      if(a->type == PLAN_DELETE && (!m->sb_exists || !m->sb_running)) {
        m->sb_exists = m->sb_exists && strcmp(m->sb_id, a->sandbox_id);
      }
      else if(a->type == PLAN_DELETE) {
        /* the last look finds it running: withheld, intent cancelled */
        if(session_status_copy(&st, &m->s->status))
          abort();
        plan_status_intent_cancel(&st, a);
        model_cas(m, rv, &st);
        rv = m->version;
        continue;
      }
      else if(m->sb_exists)
        m->sb_running = false; /* the pause */
    }
    else if(a->type == PLAN_RESUME) {
      if(!m->sb_exists || strcmp(a->sandbox_id, m->sb_id))
        continue;
      m->sb_running = true;
      m->sb_end_at = NOW + 60000;
    }
    else if(a->type == PLAN_CREATE) {
      if(m->sb_exists)
        continue;
      snprintf(m->sb_id, sizeof(m->sb_id), "sb-%d", m->next_id++);
      m->sb_exists = m->sb_running = true;
      m->sb_end_at = NOW + 60000;
    }
    else
      continue;
    if(r % 9 == 4)
      break; /* crash after the call, before the outcome */
    model_outcome(m, a, &rv);
  }
  plan_free(p);
}

TEST(connect_reclaim_crash_and_cas_interleavings_never_delete_a_running_sandbox)
{
  int runs, unserved = 0, deletes = 0;
  for(runs = 0; runs < 500; runs++) {
    unsigned seed = 7000u + (unsigned)runs;
    model m;
    int step;
    const char *want;
    memset(&m, 0, sizeof(m));
    m.w = w_new();
    m.s = w_sess(m.w, "t1", "a", SESSION_STATE_ACTIVE);
    m.s->spec.reclaim_after_ms = 60000;
    snprintf(m.sb_id, sizeof(m.sb_id), "sb-first");
    m.sb_exists = true; /* paused long enough to be reclaimed */
    m.sb_end_at = NOW - 2 * 60000;
    w_link(m.s, m.sb_id);
    for(step = 0; step < 16; step++) {
      unsigned r = (unsigned)rand_r(&seed) % 6;
      if(r == 0) {
        char n[16];
        snprintf(n, sizeof(n), "u%d", m.next_id++);
        connect_req(m.s, n);
        m.version++;
      }
      else if(r == 1 && m.sb_exists && m.sb_running) {
        m.sb_running = false; /* idle pause, paused long ago */
        m.sb_end_at = NOW - 2 * 60000;
      }
      else if(r == 2 && m.inflight)
        model_delete_lands(&m);
      else if(r == 3 && m.inflight)
        m.inflight = false; /* its replica died before the call */
      else
        controller_step(&m, &seed, false);
    }
    if(m.inflight)
      model_delete_lands(&m);
    for(step = 0; step < 6; step++)
      controller_step(&m, &seed, true);
    deletes += !m.sb_exists || strcmp(m.sb_id, "sb-first");
    want = sc_kvlist_get(&m.s->meta.annotations, SESSION_ANNOT_CONNECT);
    if(want && (!sc_str_eq0(m.s->status.connect_nonce, want) ||
                !sc_str_eq0(m.s->status.connect_result,
                            SESSION_CONNECT_SERVED)) && unserved++ < 3)
      fprintf(stderr, "  run %d: connect %s not served (answered %s, "
              "sandbox %s, running %d, phase %s)\n", runs, want,
              m.s->status.connect_nonce ? m.s->status.connect_nonce : "-",
              m.sb_exists ? m.sb_id : "none", m.sb_running,
              session_phase_name(m.s->status.phase));
    CHECK_INT(m.deletes_of_running, 0);
    CHECK_INT(m.bad_serves, 0);
    w_del(m.w);
  }
  CHECK_INT(unserved, 0);
  CHECK_MSG(deletes > 50, "the runs reclaimed only %d times: they do not "
            "exercise the race", deletes);
}

TEST_LIST = {
  T(rule11_reclaim_whose_sandbox_is_gone_is_reclaimed_never_created),
  T(rule11_reclaim_whose_sandbox_is_paused_is_carried_on),
  T(rule11_reclaim_the_spec_no_longer_asks_for_waits_then_is_void),
  T(rule11_reclaim_whose_sandbox_runs_again_is_void),
  T(rule11_connect_after_the_intent_waits_for_the_reclaim),
  T(connect_resumes_a_paused_sandbox_instead_of_reclaiming_it),
  T(connect_after_a_reclaim_creates_and_ends_the_reclaimed_state),
  T(connect_to_a_running_sandbox_is_served_at_once),
  T(connect_is_refused_with_why_for_ended_and_paused_sessions),
  T(rule11_tombstone_waits_for_a_fresh_foreign_create_claim),
  T(rule11_tombstone_is_not_ended_while_its_intent_is_unresolved),
  T(connect_reclaim_crash_and_cas_interleavings_never_delete_a_running_sandbox),
  {0},
};

TEST_MAIN()
