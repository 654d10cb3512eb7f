/*
 * bench_exec.c - the executor's cost per action as the number of sessions
 * grows: a benchmark, not a test (hack/bench.sh builds and runs it).
 *
 *   bench_exec N...     (default 1000 10000 100000)
 *
 * The world: N sessions, each linked to a running sandbox with our tags;
 * the plan's statuses written back (a settled cluster), then 15% of the
 * sessions set to state Paused: the plan has 0.15 N pause actions (15k at
 * 100k). For each N it prints
 *
 *   before  the lookup the executor did until the index: a scan of the
 *           plan's sessions for each action's session (a copy of the old
 *           find_session loop), total and per action
 *   index   building the run's session index, and one lookup per action
 *   run     act_run_init() + act_run_start(): the index, every action
 *           dispatched through a Cube table that answers at once (a
 *           pause, 204), act_end() with its fold into the session's
 *           status, and each session's end (the store has no event loop,
 *           so its asynchronous writes are refused at once: the store is
 *           not measured), per action
 *
 * The "per action" columns stay flat when the cost is constant; the
 * "before" column grows with N.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/session.h"
#include "controller/act/claim.h"
#include "controller/act/run.h"
#include "controller/plan/plan.h"

#define NOW 1795946400000LL

static void die(const char *what)
{
  fprintf(stderr, "bench_exec: %s\n", what);
  exit(1);
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --- a Cube that answers every call at once --- */

static sc_err ok_id(void *cl, const char *id, cube_cb cb, void *ud)
{
  cube_result res;
  (void)cl;
  (void)id;
  memset(&res, 0, sizeof(res));
  res.op = CUBE_OP_PAUSE;
  res.http_status = 204;
  res.message = "";
  res.retry_after_ms = -1;
  cb(&res, ud);
  return SC_OK;
}

static sc_err ok_timeout(void *cl, const char *id, int64_t t, cube_cb cb,
                         void *ud)
{
  (void)t;
  return ok_id(cl, id, cb, ud);
}

static sc_err no_create(void *cl, const cube_create_req *req, cube_cb cb,
                        void *ud)
{
  (void)cl;
  (void)req;
  (void)cb;
  (void)ud;
  return SC_ERR_INVALID;
}

/* --- the world --- */

static session *mk_session(size_t i)
{
  char b[64];
  session *s = session_new();
  if(!s)
    die("out of memory");
  snprintf(b, sizeof(b), "s%zu", i);
  s->meta.namespace_ = strdup("t1");
  s->meta.name = strdup(b);
  s->meta.generation = 1;
  s->meta.resource_version = strdup("1");
  s->spec.template_id = strdup("python");
  s->spec.state = SESSION_STATE_RUNNING;
  if(session_apply_defaults(s))
    die("out of memory");
  snprintf(b, sizeof(b), "sb-%zu", i);
  s->status.sandbox_id = strdup(b);
  s->status.applied_idle_timeout_ms = s->spec.idle_timeout_ms;
  return s;
}

static void mk_sandbox(cube_sandbox *b, size_t i)
{
  char id[64], sid[64];
  memset(b, 0, sizeof(*b));
  snprintf(id, sizeof(id), "sb-%zu", i);
  snprintf(sid, sizeof(sid), "s%zu", i);
  b->sandbox_id = strdup(id);
  b->template_id = strdup("python");
  b->state = CUBE_SB_RUNNING;
  b->started_at = NOW - 3600 * 1000LL;
  b->end_at = NOW + 3600 * 1000LL;
  if(sc_kvlist_set(&b->metadata, SESSION_TAG_TENANT_ID, "t1") ||
     sc_kvlist_set(&b->metadata, SESSION_TAG_SESSION_ID, sid) ||
     sc_kvlist_set(&b->metadata, SESSION_TAG_MANAGED_BY,
                   "session-controller"))
    die("out of memory");
}

static plan *mk_plan(session **ss, size_t n, cube_sandbox *sbs,
                     const plan_config *cfg)
{
  plan_input in;
  plan *p = NULL;
  memset(&in, 0, sizeof(in));
  in.sessions = ss;
  in.n_sessions = n;
  in.sandboxes = sbs;
  in.n_sandboxes = n;
  in.list_complete = true;
  in.cube_now = NOW;
  if(plan_compute(&in, cfg, &p))
    die("plan_compute failed");
  return p;
}

/* the scan the executor did for each action before the index */
static size_t old_find_session(const plan *p, const session *s)
{
  size_t i;
  if(!s)
    return (size_t)-1;
  for(i = 0; i < p->n_sessions; i++)
    if(p->sessions[i].s == s)
      return i;
  return (size_t)-1;
}

static void on_end(act_run *run, size_t si, const char *result, bool c)
{
  (void)run;
  (void)si;
  (void)result;
  (void)c;
}

static void on_finished(act_run *run)
{
  *(bool *)run->ud = true;
}

static void bench(size_t n, store *st)
{
  session **ss = calloc(n, sizeof(*ss));
  cube_sandbox *sbs = calloc(n, sizeof(*sbs));
  plan_config cfg;
  plan *p;
  act_cube cube = {NULL, ok_id, ok_id, no_create, ok_id, ok_timeout,
                   ok_timeout, ok_id};
  act_env env;
  act_run run;
  bool stopping = false, finished = false;
  recorder rec;
  size_t i, sum = 0, rounds;
  double t0, t_old, t_idx, t_find, t_run;
  if(!ss || !sbs)
    die("out of memory");
  plan_config_defaults(&cfg);
  for(i = 0; i < n; i++) {
    ss[i] = mk_session(i);
    mk_sandbox(&sbs[i], i);
  }
  /* settle: the plan's statuses written back */
  p = mk_plan(ss, n, sbs, &cfg);
  for(i = 0; i < n; i++)
    if(p->sessions[i].status_changed) {
      session_status cp;
      if(session_status_copy(&cp, &p->sessions[i].status))
        die("out of memory");
      session_status_clear(&ss[i]->status);
      ss[i]->status = cp;
    }
  plan_free(p);
  for(i = 0; i < n; i++)
    if(i % 20 < 3) /* 15% */
      ss[i]->spec.state = SESSION_STATE_PAUSED;
  p = mk_plan(ss, n, sbs, &cfg);
  if(!p->n_actions)
    die("the plan has no actions");

  /* before: the scan, repeated to at least 0.2 s of work on small N */
  rounds = 0;
  t0 = now_s();
  do {
    for(i = 0; i < p->n_actions; i++)
      sum += old_find_session(p, p->actions[i].s);
    rounds++;
  } while(now_s() - t0 < 0.2);
  t_old = (now_s() - t0) / (double)rounds;

  memset(&env, 0, sizeof(env));
  memset(&rec, 0, sizeof(rec));
  env.cube = &cube;
  env.st = st;
  env.plan = &cfg;
  env.rec = &rec;
  env.replica = "bench";
  env.identity = "bench#00000000";
  env.resync_ms = 60000;
  env.stopping = &stopping;
  env.claims = act_claims_new();
  if(!env.claims)
    die("out of memory");

  /* index: build, then one lookup per action */
  rounds = 0;
  t_idx = t_find = 0;
  do {
    t0 = now_s();
    if(act_run_init(&run, &env, p, NOW))
      die("act_run_init failed");
    t_idx += now_s() - t0;
    t0 = now_s();
    for(i = 0; i < p->n_actions; i++)
      sum += act_run_find(&run, p->actions[i].s);
    t_find += now_s() - t0;
    act_run_clear(&run);
    rounds++;
  } while(t_idx + t_find < 0.2);
  t_idx /= (double)rounds;
  t_find /= (double)rounds;

  /* run: the executor end to end on the stub */
  rounds = 0;
  t_run = 0;
  do {
    finished = false;
    t0 = now_s();
    if(act_run_init(&run, &env, p, NOW))
      die("act_run_init failed");
    run.session_end = on_end;
    run.finished = on_finished;
    run.ud = &finished;
    act_run_start(&run);
    t_run += now_s() - t0;
    if(!finished)
      die("the run did not finish");
    act_run_clear(&run);
    rounds++;
  } while(t_run < 0.3);
  t_run /= (double)rounds;

  printf("sessions=%zu actions=%zu before: scan %.1f ms = %.3f us/action | "
         "index: build %.2f ms, lookup %.1f ns/action | run: %.2f ms = "
         "%.3f us/action (check %zu)\n",
         n, p->n_actions, t_old * 1e3, t_old * 1e6 / (double)p->n_actions,
         t_idx * 1e3, t_find * 1e9 / (double)p->n_actions, t_run * 1e3,
         t_run * 1e6 / (double)p->n_actions, sum % 7);
  fflush(stdout);
  act_claims_free(env.claims);
  plan_free(p);
  for(i = 0; i < n; i++) {
    session_free(ss[i]);
    cube_sandbox_clear(&sbs[i]);
  }
  free(ss);
  free(sbs);
}

int main(int argc, char **argv)
{
  static const size_t def[] = {1000, 10000, 100000};
  char path[] = "/tmp/bench-exec-XXXXXX";
  char url[64];
  store_open_opts o = {0};
  store *st = NULL;
  sc_errbuf eb;
  int i, fd = mkstemp(path);
  if(fd < 0)
    die("mkstemp failed");
  close(fd);
  unlink(path);
  snprintf(url, sizeof(url), "sqlite:%s", path);
  o.create = true; /* no event loop: asynchronous calls are refused */
  if(store_open(url, &o, &st, &eb))
    die(eb.msg);
  if(argc > 1)
    for(i = 1; i < argc; i++)
      bench((size_t)strtoul(argv[i], NULL, 10), st);
  else
    for(i = 0; i < 3; i++)
      bench(def[i], st);
  store_close(st);
  unlink(path);
  snprintf(url, sizeof(url), "%s-wal", path);
  unlink(url);
  snprintf(url, sizeof(url), "%s-shm", path);
  unlink(url);
  return 0;
}
