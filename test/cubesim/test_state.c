/* Tests of cubesim's model on a virtual clock: lifecycle per dialect,
 * endAt/startedAt, the pausing window, auto-resume, the timer heap. */
#include "test/harness.h"
#include "cmd/cubesim/sim_state.h"
#include "cmd/cubesim/sim_clock.h"

#define T0 ((sc_time)1800000000000LL)
#define S(x) ((sc_time)(x) * 1000)

typedef struct evlog {
  char text[4096];
} evlog;

static void log_event(void *arg, const sim_sandbox *sb, sc_time at,
                      const char *event, sim_sbx_state before,
                      sim_sbx_state after)
{
  evlog *l = arg;
  size_t n = strlen(l->text);
  (void)sb;
  snprintf(l->text + n, sizeof(l->text) - n, "%lld:%s:%s>%s;",
           (long long)((at - T0) / 1000), event, sim_state_name(before),
           sim_state_name(after));
}

static sim_state *mk(sim_dialect d, evlog *l)
{
  sim_state_config c;
  sim_state *st;
  memset(&c, 0, sizeof(c));
  c.dialect = d;
  c.pause_ms = 500;
  c.seed = 7;
  st = sim_state_new(&c);
  if(st && l) {
    l->text[0] = '\0';
    sim_state_set_hooks(st, log_event, NULL, l);
  }
  return st;
}

static sim_sandbox *mkbox(sim_state *st, sc_time now, int has_timeout,
                          int32_t timeout, int auto_pause, int auto_resume)
{
  sim_create_req r;
  sim_sandbox *sb = NULL;
  static const char *const meta[] = {"lea.session_id", "s1"};
  memset(&r, 0, sizeof(r));
  r.template_id = "base";
  r.has_timeout = has_timeout;
  r.timeout_s = timeout;
  r.auto_pause = auto_pause;
  r.auto_resume = auto_resume;
  r.meta = meta;
  r.meta_count = 1;
  if(sim_state_create(st, now, &r, -1, &sb) != SIM_R_OK)
    return NULL;
  return sb;
}

TEST(e2b_ttl_kills_without_autopause)
{
  evlog l;
  sim_state *st = mk(SIM_DIALECT_E2B, &l);
  sim_sandbox *sb = mkbox(st, T0, 1, 60, 0, 0);
  CHECK(sb);
  CHECK_INT(strlen(sb->id), 21);
  CHECK(sb->id[0] == 'i');
  CHECK_INT(sim_sandbox_end_at(st, sb), T0 + S(60));
  sim_state_advance(st, T0 + S(59));
  CHECK_INT(sb->state, SIM_RUNNING);
  /* traffic does not extend an e2b TTL */
  CHECK_INT(sim_state_traffic(st, sb, T0 + S(59)), SIM_R_OK);
  CHECK_INT(sim_sandbox_end_at(st, sb), T0 + S(60));
  sim_state_advance(st, T0 + S(60));
  CHECK_INT(sb->state, SIM_DELETED);
  CHECK_INT(sb->delete_reason, SIM_DEL_TIMEOUT);
  CHECK_STR(l.text, "60:timeout-kill:running>deleted;");
  CHECK_INT(sim_state_live(st), 0);
  sim_state_free(st);
}

TEST(e2b_autopause_endat_startedat)
{
  evlog l;
  sim_state *st = mk(SIM_DIALECT_E2B, &l);
  sim_sandbox *sb = mkbox(st, T0, 1, 30, 1, 1);
  CHECK(sb);
  sim_state_advance(st, T0 + S(30));
  CHECK_INT(sb->state, SIM_PAUSING);
  CHECK_STR(sim_public_state(st, sb), "paused");
  CHECK_INT(sim_sandbox_end_at(st, sb), T0 + S(30));
  sim_state_advance(st, T0 + S(31));
  CHECK_INT(sb->state, SIM_PAUSED);
  CHECK_STR(l.text, "30:timeout-pause:running>pausing;30:pause-complete:"
            "pausing>paused;");
  /* set-timeout on a paused e2b sandbox: 404 */
  CHECK_INT(sim_state_set_timeout(st, sb, T0 + S(40), 10), SIM_R_NOT_RUNNING);
  /* connect resumes: fresh TTL, startedAt reset */
  CHECK_INT(sim_state_connect(st, sb, T0 + S(100), 1, 20), SIM_R_RESUMED);
  CHECK_INT(sb->started_at, T0 + S(100));
  CHECK_INT(sim_sandbox_end_at(st, sb), T0 + S(120));
  /* connect on running only extends */
  CHECK_INT(sim_state_connect(st, sb, T0 + S(101), 1, 5), SIM_R_OK);
  CHECK_INT(sim_sandbox_end_at(st, sb), T0 + S(120));
  CHECK_INT(sim_state_connect(st, sb, T0 + S(110), 1, 50), SIM_R_OK);
  CHECK_INT(sim_sandbox_end_at(st, sb), T0 + S(160));
  /* set-timeout replaces */
  CHECK_INT(sim_state_set_timeout(st, sb, T0 + S(111), 5), SIM_R_OK);
  CHECK_INT(sim_sandbox_end_at(st, sb), T0 + S(116));
  sim_state_free(st);
}

TEST(cube_idle_window_slides_with_traffic)
{
  evlog l;
  sim_state *st = mk(SIM_DIALECT_CUBE, &l);
  sim_sandbox *sb = mkbox(st, T0, 1, 60, 1, 1);
  CHECK(sb);
  CHECK_INT(strlen(sb->id), 32);
  CHECK_INT(sim_sandbox_end_at(st, sb), T0 + S(60));
  sim_state_advance(st, T0 + S(50));
  CHECK_INT(sim_state_traffic(st, sb, T0 + S(50)), SIM_R_OK);
  CHECK_INT(sim_sandbox_end_at(st, sb), T0 + S(110));
  /* list/get/pause/set-timeout are not activity: set-timeout keeps the
   * last activity */
  CHECK_INT(sim_state_set_timeout(st, sb, T0 + S(60), 30), SIM_R_OK);
  CHECK_INT(sim_sandbox_end_at(st, sb), T0 + S(80));
  sim_state_advance(st, T0 + S(79));
  CHECK_INT(sb->state, SIM_RUNNING);
  sim_state_advance(st, T0 + S(81));
  CHECK_INT(sb->state, SIM_PAUSED);
  /* frozen while paused */
  CHECK_INT(sim_sandbox_end_at(st, sb), T0 + S(80));
  sim_state_advance(st, T0 + S(10000));
  CHECK_INT(sb->state, SIM_PAUSED);
  /* auto-resume by traffic: a fresh idle countdown */
  CHECK_INT(sim_state_traffic(st, sb, T0 + S(10000)), SIM_R_RESUMED);
  CHECK_INT(sb->state, SIM_RUNNING);
  CHECK_INT(sim_sandbox_end_at(st, sb), T0 + S(10030));
  CHECK_INT(sb->started_at, T0);
  sim_state_free(st);
}

TEST(cube_never_and_zero)
{
  sim_state *st = mk(SIM_DIALECT_CUBE, NULL);
  sim_sandbox *never = mkbox(st, T0, 0, 0, 0, 0);
  sim_sandbox *zero = mkbox(st, T0, 1, 0, 0, 0);
  CHECK(never && zero);
  CHECK_INT(never->timeout_s, -1);
  CHECK_INT(sim_sandbox_end_at(st, never), 0);
  sim_state_advance(st, T0);
  CHECK_INT(zero->state, SIM_DELETED);
  sim_state_advance(st, T0 + S(86400 * 365));
  CHECK_INT(never->state, SIM_RUNNING);
  CHECK_INT(sim_state_next_due(st), 0);
  sim_state_free(st);
}

TEST(cube_kill_also_kills_manually_paused)
{
  evlog l;
  sim_state *st = mk(SIM_DIALECT_CUBE, &l);
  sim_sandbox *sb = mkbox(st, T0, 1, 100, 0, 0);
  CHECK(sb);
  CHECK_INT(sim_state_pause(st, sb, T0 + S(10)), SIM_R_OK);
  CHECK_INT(sim_state_pause(st, sb, T0 + S(10)), SIM_R_ALREADY_PAUSED);
  /* cube reports pausing as such; refuses delete while pausing */
  CHECK_STR(sim_public_state(st, sb), "pausing");
  CHECK_INT(sim_state_delete(st, sb, T0 + S(10)), SIM_R_PAUSING);
  sim_state_advance(st, T0 + S(11));
  CHECK_INT(sb->state, SIM_PAUSED);
  CHECK_STR(sim_public_state(st, sb), "paused");
  CHECK_INT(sim_state_traffic(st, sb, T0 + S(20)), SIM_R_NO_AUTORESUME);
  sim_state_advance(st, T0 + S(100));
  CHECK_INT(sb->state, SIM_DELETED);
  CHECK_STR(l.text, "10:pause-complete:pausing>paused;100:timeout-kill:"
            "paused>deleted;");
  CHECK_INT(sim_state_traffic(st, sb, T0 + S(200)), SIM_R_GONE);
  sim_state_free(st);
}

TEST(e2b_delete_while_pausing_and_resume_conflicts)
{
  sim_state *st = mk(SIM_DIALECT_E2B, NULL);
  sim_sandbox *a = mkbox(st, T0, 1, 100, 0, 0);
  sim_sandbox *b = mkbox(st, T0, 1, 100, 0, 0);
  CHECK(a && b);
  CHECK_INT(sim_state_resume(st, a, T0, 0, 0), SIM_R_ALREADY_RUNNING);
  CHECK_INT(sim_state_pause(st, a, T0 + S(1)), SIM_R_OK);
  CHECK_INT(sim_state_delete(st, a, T0 + S(1)), SIM_R_OK);
  CHECK_INT(a->state, SIM_DELETED);
  CHECK_INT(a->delete_reason, SIM_DEL_API);
  CHECK_INT(sim_state_delete(st, a, T0 + S(2)), SIM_R_GONE);
  /* resume while pausing completes the pause first */
  CHECK_INT(sim_state_pause(st, b, T0 + S(1)), SIM_R_OK);
  CHECK_INT(sim_state_resume(st, b, T0 + S(1), 1, 40), SIM_R_OK);
  CHECK_INT(b->state, SIM_RUNNING);
  CHECK_INT(sim_sandbox_end_at(st, b), T0 + S(41));
  sim_state_advance(st, T0 + S(40));
  CHECK_INT(b->state, SIM_RUNNING);
  sim_state_advance(st, T0 + S(41));
  CHECK_INT(b->state, SIM_DELETED);
  sim_state_free(st);
}

TEST(cube_connect_raises_timeout)
{
  sim_state *st = mk(SIM_DIALECT_CUBE, NULL);
  sim_sandbox *sb = mkbox(st, T0, 1, 60, 1, 0);
  CHECK(sb);
  CHECK_INT(sim_state_connect(st, sb, T0 + S(30), 1, 10), SIM_R_OK);
  CHECK_INT(sb->timeout_s, 60);
  CHECK_INT(sim_sandbox_end_at(st, sb), T0 + S(90));
  CHECK_INT(sim_state_connect(st, sb, T0 + S(40), 1, 600), SIM_R_OK);
  CHECK_INT(sb->timeout_s, 600);
  CHECK_INT(sim_state_pause(st, sb, T0 + S(41)), SIM_R_OK);
  CHECK_INT(sim_state_connect(st, sb, T0 + S(50), 1, 10), SIM_R_RESUMED);
  CHECK_INT(sb->state, SIM_RUNNING);
  CHECK_INT(sim_sandbox_end_at(st, sb), T0 + S(650));
  sim_state_free(st);
}

TEST(timers_fire_in_due_order_at_scale)
{
  evlog l;
  sim_state *st = mk(SIM_DIALECT_E2B, &l);
  int i;
  sc_time prev = 0;
  size_t fired;
  sim_state_set_hooks(st, NULL, NULL, NULL);
  for(i = 0; i < 20000; i++)
    CHECK(mkbox(st, T0, 1, (int32_t)((i * 7919) % 5000 + 1), 0, 0));
  CHECK_INT(sim_state_live(st), 20000);
  while(sim_state_next_due(st)) {
    sc_time d = sim_state_next_due(st);
    CHECK(d >= prev);
    prev = d;
    fired = sim_state_advance(st, d);
    CHECK(fired >= 1);
  }
  CHECK_INT(sim_state_live(st), 0);
  CHECK_INT(sim_state_count(st), 20000);
  CHECK(sim_state_find(st, sim_state_at(st, 12345)->id) ==
        sim_state_at(st, 12345));
  CHECK(!sim_state_find(st, "inope"));
  sim_state_free(st);
}

TEST(same_seed_same_ids_and_reset)
{
  sim_state *a = mk(SIM_DIALECT_CUBE, NULL), *b = mk(SIM_DIALECT_CUBE, NULL);
  sim_sandbox *x = mkbox(a, T0, 0, 0, 0, 0), *y = mkbox(b, T0, 0, 0, 0, 0);
  char first[SIM_ID_MAX];
  CHECK(x && y);
  CHECK_STR(x->id, y->id);
  CHECK_STR(sim_sandbox_meta(x, "lea.session_id"), "s1");
  CHECK(!sim_sandbox_meta(x, "nope"));
  memcpy(first, x->id, sizeof(first));
  sim_state_reset(a);
  CHECK_INT(sim_state_count(a), 0);
  x = mkbox(a, T0, 0, 0, 0, 0);
  CHECK(x);
  CHECK_STR(x->id, first);
  sim_state_free(a);
  sim_state_free(b);
}

TEST(capacity_limit)
{
  sim_state_config c;
  sim_state *st;
  sim_create_req r;
  sim_sandbox *sb, *keep;
  memset(&c, 0, sizeof(c));
  c.dialect = SIM_DIALECT_E2B;
  c.max_live = 2;
  st = sim_state_new(&c);
  memset(&r, 0, sizeof(r));
  r.template_id = "t";
  CHECK_INT(sim_state_create(st, T0, &r, -1, &sb), SIM_R_OK);
  CHECK_INT(sim_state_create(st, T0, &r, 1, &sb), SIM_R_CAPACITY);
  CHECK_INT(sim_state_create(st, T0, &r, -1, &keep), SIM_R_OK);
  CHECK_INT(sim_state_create(st, T0, &r, -1, &sb), SIM_R_CAPACITY);
  CHECK(!sb);
  CHECK_INT(sim_state_delete(st, keep, T0), SIM_R_OK);
  CHECK_INT(sim_state_create(st, T0, &r, -1, &sb), SIM_R_OK);
  sim_state_free(st);
}

TEST(virtual_clock)
{
  sim_clock c;
  sim_clock_init(&c, T0, 1000, 10.0);
  CHECK_INT(sim_clock_now_at(&c, 1000), T0);
  CHECK_INT(sim_clock_now_at(&c, 1100), T0 + 1000);
  sim_clock_advance(&c, S(60));
  CHECK_INT(sim_clock_now_at(&c, 1100), T0 + 1000 + S(60));
  /* never backwards */
  CHECK_INT(sim_clock_now_at(&c, 900), T0 + 1000 + S(60));
  CHECK_INT(sim_clock_real_delay(&c, T0, T0 + 1000), 100);
  sim_clock_init(&c, T0, 0, 0);
  CHECK_INT(sim_clock_now_at(&c, 50000), T0);
  CHECK_INT(sim_clock_real_delay(&c, T0, T0 + 1), -1);
}

TEST_LIST = {
  T(e2b_ttl_kills_without_autopause),
  T(e2b_autopause_endat_startedat),
  T(cube_idle_window_slides_with_traffic),
  T(cube_never_and_zero),
  T(cube_kill_also_kills_manually_paused),
  T(e2b_delete_while_pausing_and_resume_conflicts),
  T(cube_connect_raises_timeout),
  T(timers_fire_in_due_order_at_scale),
  T(same_seed_same_ids_and_reset),
  T(capacity_limit),
  T(virtual_clock),
  {0}
};
TEST_MAIN()
