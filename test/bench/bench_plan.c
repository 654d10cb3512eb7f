/*
 * bench_plan.c - how long plan_compute() takes and how much memory it
 * needs for N sessions. Not a test (hack/bench-plan.sh builds and runs it).
 *
 *   bench_plan N [ROUNDS]
 *
 * The world: one sandbox per session except where noted; 55% Active and
 * running, 20% Active and idle-paused (a tenth of those reclaimable), 5%
 * Active with the paused sandbox's tags lost, 5% Running (a third due for
 * keep-alive), 5% Paused, 5% Ended, 5% Active without a sandbox (create),
 * plus N/100 orphans. Prints the CPU time of the cold pass (statuses not
 * yet in the form this controller writes), then, with those statuses
 * written back, the best and median of ROUNDS steady passes (the resync
 * of a settled cluster), the peak RSS (getrusage) before and after, and
 * the memory of each pass on top of the input (VmHWM, reset through
 * /proc/self/clear_refs) with the page faults of a steady pass. Two
 * floors put the times in scale: a deep copy of every status, and one
 * read of every string a pass must read (in input order, nothing else).
 * The passes keep one plan_scratch across them, as the reconciler does,
 * when the library has plan_compute_ex() (BENCH_NO_SCRATCH=1: they call
 * plan_compute() instead). BENCH_POLICY=1: with a tenant policy (the
 * roots, volumes and egress allowlist of docs/security.md). BENCH_CAPACITY=1: with the capacity budgets
 * on (--max-paused N/20, the per-tenant ones N/400 + 1).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "api/session.h"
#include "controller/plan/plan.h"
#if __has_include("api/policy.h") /* an older checkout (BEFORE=) has none */
#include "api/policy.h"
#define BENCH_HAS_POLICY 1
#endif
#include "controller/cube/sandbox.h"
#include "lib/dynbuf.h"

/* plan_compute_ex() and its scratch, when the library has them (weak: the
 * same bench_plan.c builds against older versions of plan.c, which lack
 * them, so before/after runs use one source). */
__attribute__((weak)) plan_scratch *plan_scratch_new(void);
__attribute__((weak)) void plan_scratch_free(plan_scratch *sc);
__attribute__((weak)) sc_err plan_compute_ex(const plan_input *in,
                                             const plan_config *cfg,
                                             plan_scratch *scratch,
                                             plan **out);

/* a pass as the reconciler runs it: with a scratch kept across passes
 * when there is one (BENCH_NO_SCRATCH=1 in the environment: without) */
static sc_err compute(const plan_input *in, const plan_config *cfg,
                      plan_scratch *sc, plan **out)
{
  if(sc)
    return plan_compute_ex(in, cfg, sc, out);
  return plan_compute(in, cfg, out);
}

#define NOW 1795946400000LL
#define MIN_MS (60 * 1000LL)
#define HOUR_MS (3600 * 1000LL)

static void die(const char *what)
{
  fprintf(stderr, "bench_plan: %s\n", what);
  exit(1);
}

/* CPU time of this process: the machine may be shared, and wall time
 * then measures the neighbours too. */
static double now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* the floor: deep-copying every session's status once (the plan must own
 * one status per session) */
static double copy_floor_ms(session **ss, long long n)
{
  session_status *st = calloc((size_t)n, sizeof(*st));
  double t0 = now_ms(), t1;
  long long i;
  if(!st)
    die("out of memory");
  for(i = 0; i < n; i++)
    if(session_status_copy(&st[i], &ss[i]->status))
      die("out of memory");
  t1 = now_ms();
  for(i = 0; i < n; i++)
    session_status_clear(&st[i]);
  free(st);
  return t1 - t0;
}

static size_t len0(const char *x)
{
  return x ? strlen(x) : 0;
}

/* the read floor: reading every string a pass must read once, in input
 * order, and nothing else (no join, no output): what the memory system
 * alone costs for this input */
static double read_floor_ms(session **ss, long long n,
                            const cube_sandbox *bs, size_t nb)
{
  double t0 = now_ms();
  size_t sum = 0, i, j;
  volatile size_t sink; /* keeps the reads */
  for(i = 0; i < (size_t)n; i++) {
    const session *s = ss[i];
    const session_status *st = &s->status;
    sum += len0(s->meta.name) + len0(s->meta.namespace_) +
           len0(s->spec.tenant_id) + len0(s->spec.session_id) +
           len0(s->spec.template_id) + len0(st->sandbox_id) +
           len0(st->sandbox_state) + (size_t)s->meta.deletion_timestamp;
    for(j = 0; j < st->n_conditions; j++)
      sum += len0(st->conditions[j].type) + len0(st->conditions[j].status) +
             len0(st->conditions[j].reason) +
             len0(st->conditions[j].message);
  }
  for(i = 0; i < nb; i++) {
    sum += len0(bs[i].sandbox_id);
    for(j = 0; j < bs[i].metadata.n; j++)
      sum += len0(bs[i].metadata.items[j].key) +
             len0(bs[i].metadata.items[j].value);
  }
  sink = sum;
  (void)sink;
  return now_ms() - t0;
}

static long minflt(void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

static long peak_rss_kb(void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

/* A line of /proc/self/status ("VmRSS", "VmHWM") in KB, or -1. */
static long proc_kb(const char *field)
{
  char line[256];
  size_t n = strlen(field);
  long v = -1;
  FILE *f = fopen("/proc/self/status", "r");
  if(!f)
    return -1;
  while(fgets(line, sizeof(line), f))
    if(!strncmp(line, field, n) && line[n] == ':') {
      v = strtol(line + n + 1, NULL, 10);
      break;
    }
  fclose(f);
  return v;
}

/* Give freed heap back and restart the peak (VmHWM) at the current RSS,
 * so the next peak measures only what comes after (Linux clear_refs). */
static void reset_peak(void)
{
  FILE *f;
  malloc_trim(0);
  f = fopen("/proc/self/clear_refs", "w");
  if(f) {
    fputs("5", f);
    fclose(f);
  }
}

/* BENCH_DUMP=PREFIX in the environment: the plan of a pass as text
 * (plan_format) into PREFIX.WHAT, to compare two versions byte for byte */
static void dump(const plan *p, const char *what)
{
  const char *prefix = getenv("BENCH_DUMP");
  char path[4096];
  dynbuf b;
  FILE *f;
  if(!prefix || !*prefix)
    return;
  snprintf(path, sizeof(path), "%s.%s", prefix, what);
  dynbuf_init(&b, (size_t)1 << 30);
  if(plan_format(p, &b) || !(f = fopen(path, "w")))
    die("cannot dump the plan");
  if(fwrite(dynbuf_ptr(&b), 1, dynbuf_len(&b), f) != dynbuf_len(&b) ||
     fclose(f))
    die("cannot write the plan");
  dynbuf_free(&b);
}

static int dbl_cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void tag(cube_sandbox *b, const char *tenant, const char *sid)
{
  if(sc_kvlist_set(&b->metadata, SESSION_TAG_TENANT_ID, tenant) ||
     sc_kvlist_set(&b->metadata, SESSION_TAG_SESSION_ID, sid) ||
     sc_kvlist_set(&b->metadata, SESSION_TAG_MANAGED_BY,
                   "session-controller"))
    die("out of memory");
}

int main(int argc, char **argv)
{
  long long n, rounds = 5, i;
  char *end;
  session **ss;
  cube_sandbox *bs;
  size_t nb = 0;
  plan_input in;
  plan_config cfg;
  double *t;
  long flt0, flt, rss0, in_cold, hwm_cold, in_steady, hwm_steady;
  long long changed = 0, still = 0;
  double cold;
  plan *p = NULL;
  plan_scratch *sc = NULL;
  const char *nosc = getenv("BENCH_NO_SCRATCH");

  if(argc < 2 || argc > 3)
    die("usage: bench_plan N [ROUNDS]");
  n = strtoll(argv[1], &end, 10);
  if(*end || n <= 0 || n > 10000000)
    die("N must be a number from 1 to 10000000");
  if(argc == 3) {
    rounds = strtoll(argv[2], &end, 10);
    if(*end || rounds <= 0 || rounds > 1000)
      die("ROUNDS must be a number from 1 to 1000");
  }
  ss = calloc((size_t)n, sizeof(*ss));
  bs = calloc((size_t)(n + n / 100 + 1), sizeof(*bs));
  t = calloc((size_t)rounds, sizeof(*t));
  if(!ss || !bs || !t)
    die("out of memory");

  for(i = 0; i < n; i++) {
    char name[32], tenant[32], id[40];
    session *s = session_new();
    int kind = (int)(i % 100);
    cube_sandbox *b = NULL;
    if(!s)
      die("out of memory");
    snprintf(name, sizeof(name), "chat-%08lld", i);
    snprintf(tenant, sizeof(tenant), "tenant-%03lld", i % 500);
    snprintf(id, sizeof(id), "%016llx%016llx", i * 2654435761ULL, i);
    s->meta.name = strdup(name);
    s->meta.namespace_ = strdup(tenant);
    s->meta.generation = 1;
    s->spec.template_id = strdup("python-data");
    s->spec.state = SESSION_STATE_ACTIVE;
    if(session_apply_defaults(s))
      die("out of memory");
    ss[i] = s;
    if(kind >= 95) /* 5%: no sandbox yet */
      continue;
    b = &bs[nb++];
    b->sandbox_id = strdup(id);
    b->template_id = strdup("python-data");
    b->started_at = NOW - (i % 48) * HOUR_MS;
    b->state = CUBE_SB_RUNNING;
    b->end_at = NOW + 10 * MIN_MS;
    s->status.sandbox_id = strdup(id);
    s->status.applied_idle_timeout_ms = s->spec.idle_timeout_ms;
    s->status.phase = SESSION_PHASE_RUNNING;
    s->status.sandbox_state = strdup("running");
    {
      session_condition c = {"Ready", "True", "SandboxRunning",
                             "sandbox is running", NOW - HOUR_MS, 1};
      if(session_status_set_condition(&s->status, &c))
        die("out of memory");
    }
    if(kind < 55) { /* Active, running */
      tag(b, tenant, name);
    }
    else if(kind < 75) { /* Active, idle-paused; 1 in 10 reclaimable */
      tag(b, tenant, name);
      b->state = CUBE_SB_PAUSED;
      b->end_at = NOW - (kind < 57 ? 30 : 2) * HOUR_MS;
    }
    else if(kind < 80) { /* paused, tags lost */
      b->state = CUBE_SB_PAUSED;
      b->end_at = NOW - 3 * HOUR_MS;
    }
    else if(kind < 85) { /* Running */
      tag(b, tenant, name);
      s->spec.state = SESSION_STATE_RUNNING;
      if(kind < 82)
        b->end_at = NOW + 5 * MIN_MS; /* keep-alive due */
    }
    else if(kind < 90) { /* Paused */
      tag(b, tenant, name);
      s->spec.state = SESSION_STATE_PAUSED;
      b->state = CUBE_SB_PAUSED;
      s->status.paused_by_controller = true;
    }
    else { /* Ended */
      tag(b, tenant, name);
      s->spec.state = SESSION_STATE_ENDED;
    }
  }
  for(i = 0; i < n / 100; i++) { /* orphans */
    char sid[32], id[40];
    cube_sandbox *b = &bs[nb++];
    snprintf(sid, sizeof(sid), "gone-%08lld", i);
    snprintf(id, sizeof(id), "orphan%026lld", i);
    b->sandbox_id = strdup(id);
    b->state = CUBE_SB_PAUSED;
    b->end_at = NOW - HOUR_MS;
    tag(b, "tenant-000", sid);
  }

  memset(&in, 0, sizeof(in));
  in.sessions = ss;
  in.n_sessions = (size_t)n;
  in.sandboxes = bs;
  in.n_sandboxes = nb;
  in.list_complete = true;
  in.cube_now = NOW;
  plan_config_defaults(&cfg);
  if(getenv("BENCH_CAPACITY") && *getenv("BENCH_CAPACITY") == '1') {
    /* the capacity budgets on (docs/controller.md "Capacity"): tight
     * enough that victims and waiters are chosen every round */
    cfg.max_paused = (size_t)n / 20;
    cfg.max_paused_per_tenant = (size_t)n / 400 + 1;
    cfg.max_running_per_tenant = (size_t)n / 400 + 1;
  }
#ifdef BENCH_HAS_POLICY
  if(getenv("BENCH_POLICY") && *getenv("BENCH_POLICY") == '1') {
    /* a tenant policy as a deployment has one (docs/security.md): every
     * session is checked against it, and every linked sandbox's digest
     * is of the sandbox it makes */
    policy_flags pf = {"/data/ws", "tenant-prefix", "allowlist",
                       "10.0.0.0/8,pypi.org,*.example.com", NULL};
    policy *pol = NULL;
    sc_errbuf peb;
    if(policy_load(&pf, NULL, &pol, &peb))
      die(peb.msg);
    cfg.policy = pol; /* for the process's life */
  }
#endif
  if(plan_scratch_new && plan_compute_ex && !(nosc && *nosc == '1') &&
     !(sc = plan_scratch_new()))
    die("out of memory");
  rss0 = peak_rss_kb();
  reset_peak();
  in_cold = proc_kb("VmRSS");

  /* the cold pass: statuses as an older controller left them */
  {
    double t0 = now_ms();
    if(compute(&in, &cfg, sc, &p))
      die("plan_compute failed");
    cold = now_ms() - t0;
  }
  dump(p, "cold");
  hwm_cold = proc_kb("VmHWM");
  /* write the statuses back, as the executor does, then time the passes
   * of a settled cluster (same world; only statuses changed) */
  for(i = 0; i < n; i++)
    if(p->sessions[i].status_changed) {
      session_status_clear(&ss[i]->status);
      if(session_status_copy(&ss[i]->status, &p->sessions[i].status))
        die("out of memory");
      changed++;
    }
  plan_free(p);
  p = NULL;
  reset_peak();
  in_steady = proc_kb("VmRSS");
  flt0 = minflt();
  for(i = 0; i < rounds; i++) {
    double t0 = now_ms();
    if(compute(&in, &cfg, sc, &p))
      die("plan_compute failed");
    t[i] = now_ms() - t0;
    if(i + 1 < rounds) {
      plan_free(p);
      p = NULL;
    }
  }
  hwm_steady = proc_kb("VmHWM");
  dump(p, "steady");
  flt = (minflt() - flt0) / rounds;
  for(i = 0; i < n; i++)
    if(p->sessions[i].status_changed)
      still++;
  qsort(t, (size_t)rounds, sizeof(*t), dbl_cmp);
  printf("sessions=%lld sandboxes=%zu actions=%zu orphans=%zu "
         "cold=%.1fms (statuses written %lld) steady best=%.1fms "
         "median=%.1fms (%s; statuses changing %lld; status-copy floor %.1fms, "
         "read floor %.1fms) "
         "rss_input=%ldKB rss_peak=%ldKB\n"
         "  memory: input %ldKB; cold pass peak %+ldKB over it; settled input "
         "%ldKB, steady pass peak %+ldKB over it (the planner's own); %ld page faults per steady pass\n",
         n, nb, p->n_actions, p->n_orphans, cold, changed, t[0],
         t[rounds / 2], sc ? "scratch kept" : "no scratch", still,
         copy_floor_ms(ss, n),
         read_floor_ms(ss, n, bs, nb), rss0, peak_rss_kb(),
         in_cold, hwm_cold - in_cold, in_steady, hwm_steady - in_steady, flt);
  plan_free(p);
  if(sc)
    plan_scratch_free(sc);
  for(i = 0; i < n; i++)
    session_free(ss[i]);
  for(i = 0; i < (long long)nb; i++)
    cube_sandbox_clear(&bs[i]);
  free(ss);
  free(bs);
  free(t);
  return 0;
}
