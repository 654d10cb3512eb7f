/* Tests of cubesim's fault grammar and seeded dice. */
#include "test/harness.h"
#include "cmd/cubesim/sim_faults.h"

static const char *const good[] = {
  "",
  "list:error=0.1@500",
  "pause:error=0.05@503+retry=2",
  "*:latency=20ms~10ms",
  "list:truncate=0.05",
  "pause:droplabels=0.05",
  "create:capacity=500",
  "*:reset=0.02",
  "list:error=0.1@500,pause:error=0.05@503+retry=2,*:latency=20ms~10ms,"
  "list:truncate=0.05,pause:droplabels=0.05,create:capacity=500,*:reset=0.02",
  " get:latency=1s , traffic:error=1@429 ",
  NULL
};

static const struct {
  const char *spec;
  const char *msg; /* a fragment of the error */
} bad[] = {
  {"list", "want OP:EFFECT"},
  {"lst:error=0.1@500", "unknown operation 'lst'"},
  {"list:eror=0.1@500", "unknown effect 'eror'"},
  {"list:error=0.1", "P@STATUS"},
  {"list:error=1.5@500", "not a number in [0,1]"},
  {"list:error=0.1@200", "not in 400..599"},
  {"list:error=0.1@abc", "not in 400..599"},
  {"*:latency=fast", "latency wants"},
  {"*:latency=10ms~x", "latency wants"},
  {"*:reset=-1", "not a number in [0,1]"},
  {"list:truncate=0.1+retry=2", "unknown modifier"},
  {"pause:error=0.1@503+retry=x", "retry 'x'"},
  {"create:capacity=-3", "capacity '-3'"},
  {"list:error=0.1@500,", "empty rule"},
  {"list:error=0.1@500,,get:reset=0.1", "empty"},
  {"list:latency", "want EFFECT=VALUE"},
  {NULL, NULL}
};

TEST(grammar_accepts)
{
  size_t i;
  for(i = 0; good[i]; i++) {
    sim_faults *f = NULL;
    sc_errbuf eb;
    eb.msg[0] = '\0';
    CHECK_MSG(!sim_faults_parse(good[i], 1, &f, &eb), "'%s': %s", good[i],
              eb.msg);
    sim_faults_free(f);
  }
}

TEST(grammar_rejects_with_reason)
{
  size_t i;
  for(i = 0; bad[i].spec; i++) {
    sim_faults *f = NULL;
    sc_errbuf eb;
    eb.msg[0] = '\0';
    CHECK_MSG(sim_faults_parse(bad[i].spec, 1, &f, &eb) == SC_ERR_INVALID,
              "'%s' was accepted", bad[i].spec);
    CHECK(!f);
    CHECK_MSG(strstr(eb.msg, bad[i].msg) != NULL, "'%s': message '%s' lacks"
              " '%s'", bad[i].spec, eb.msg, bad[i].msg);
  }
}

TEST(plan_effects)
{
  sim_faults *f = NULL;
  sim_fault_plan p;
  CHECK_OK(sim_faults_parse("pause:error=1@503,create:capacity=5,"
                            "create:capacity=3,list:truncate=0.25,"
                            "*:latency=20ms,get:reset=1,traffic:error=1@429"
                            "+retry=4", 9, &f, NULL));
  sim_faults_plan(f, SIM_OP_PAUSE, &p);
  CHECK_INT(p.error_status, 503);
  CHECK_INT(p.retry_after, 1);
  CHECK_INT(p.latency_ms, 20);
  sim_faults_plan(f, SIM_OP_CREATE, &p);
  CHECK_INT(p.error_status, 0);
  CHECK_INT(p.capacity, 3);
  sim_faults_plan(f, SIM_OP_LIST, &p);
  CHECK(p.truncate == 0.25);
  CHECK_INT(p.capacity, -1);
  sim_faults_plan(f, SIM_OP_GET, &p);
  CHECK_INT(p.reset, 1);
  /* "*" does not reach traffic, an explicit rule does */
  sim_faults_plan(f, SIM_OP_TRAFFIC, &p);
  CHECK_INT(p.latency_ms, 0);
  CHECK_INT(p.error_status, 429);
  CHECK_INT(p.retry_after, 4);
  sim_faults_free(f);
  /* no faults object: nothing */
  sim_faults_plan(NULL, SIM_OP_LIST, &p);
  CHECK_INT(p.error_status, 0);
  CHECK_INT(p.capacity, -1);
}

static void run(uint64_t seed, char *out, size_t n)
{
  sim_faults *f = NULL;
  size_t i;
  if(sim_faults_parse("list:error=0.3@500,*:latency=20ms~10ms,*:reset=0.1,"
                      "pause:droplabels=0.5", seed, &f, NULL))
    return;
  for(i = 0; i + 1 < n; i++) {
    sim_fault_plan p;
    sim_faults_plan(f, i % 2 ? SIM_OP_LIST : SIM_OP_GET, &p);
    out[i] = (char)('a' + (p.error_status ? 1 : 0) + (p.reset ? 2 : 0) +
                    (int)((p.latency_ms - 10) / 3) * 4);
    if(i % 5 == 0 && sim_faults_drop_labels(f))
      out[i] = 'Z';
  }
  out[n - 1] = '\0';
  sim_faults_free(f);
}

TEST(same_seed_same_faults)
{
  char a[400], b[400], c[400];
  int errs = 0, resets = 0, drops = 0;
  size_t i;
  run(42, a, sizeof(a));
  run(42, b, sizeof(b));
  run(43, c, sizeof(c));
  CHECK_STR(a, b);
  CHECK(strcmp(a, c) != 0);
  for(i = 0; a[i]; i++) {
    if(a[i] == 'Z') {
      drops++;
      continue;
    }
    errs += ((a[i] - 'a') & 1) != 0;
    resets += ((a[i] - 'a') & 2) != 0;
  }
  /* rates near their targets (0.3 of half the calls, 0.1, 0.5 of 80) */
  CHECK_MSG(errs > 30 && errs < 90, "errors %d", errs);
  CHECK_MSG(resets > 15 && resets < 70, "resets %d", resets);
  CHECK_MSG(drops > 20 && drops < 60, "drops %d", drops);
}

TEST(rng_uniform)
{
  sim_rng r;
  int i, lo = 0;
  sim_rng_seed(&r, 5);
  for(i = 0; i < 10000; i++) {
    double d = sim_rng_double(&r);
    CHECK(d >= 0 && d < 1);
    lo += d < 0.5;
  }
  CHECK_MSG(lo > 4700 && lo < 5300, "%d below half", lo);
}

TEST_LIST = {
  T(grammar_accepts),
  T(grammar_rejects_with_reason),
  T(plan_effects),
  T(same_seed_same_faults),
  T(rng_uniform),
  {0}
};
TEST_MAIN()
