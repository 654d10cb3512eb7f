/* Tests of the executor's exits (controller/act/) and of the status writer
 * (controller/act/status.c), driven through a Cube call table that
 * answers as each test tells it, a real SQLite store and a real audit
 * file; and of the loop's result -> queue switch (controller/loop/result.c).
 *
 * Out of memory is made by interposing strdup(): while `nomem_id` is set,
 * a strdup of exactly that string fails (the status copy's first strdup
 * is of the sandbox ID; nothing else in the path copies that string). */
#include <dirent.h>
#include <event2/event.h>
#include <stdio.h>
#include <unistd.h>

#include "test/harness.h"
#include "test/unit/plan_world.h"
#include "controller/act/claim.h"
#include "controller/act/run.h"
#include "controller/loop/result.h"

static const char *nomem_id; /* strdup of this string fails */

char *strdup(const char *s)
{
  size_t n = strlen(s) + 1;
  char *d;
  if(nomem_id && !strcmp(s, nomem_id))
    return NULL;
  d = malloc(n);
  if(d)
    memcpy(d, s, n);
  return d;
}

/* ------------------------------------------------------------------ */
/* a Cube that answers when the test says */

#define FAKE_MAX 16
typedef struct fake_call {
  cube_op op;
  char id[64];
  cube_cb cb;
  void *ud;
} fake_call;

typedef struct fake_cube {
  fake_call calls[FAKE_MAX];
  size_t n;
  bool refuse_get; /* get answers SC_ERR_NOMEM at once, as the client does
                      when it cannot allocate the call */
  bool refuse_delete; /* the same for the DELETE */
} fake_cube;

static sc_err fake_add(fake_cube *f, cube_op op, const char *id, cube_cb cb,
                       void *ud)
{
  if(f->n == FAKE_MAX)
    return SC_ERR_NOMEM;
  f->calls[f->n].op = op;
  snprintf(f->calls[f->n].id, sizeof(f->calls[f->n].id), "%s", id);
  f->calls[f->n].cb = cb;
  f->calls[f->n].ud = ud;
  f->n++;
  return SC_OK;
}

static sc_err f_get(void *cl, const char *id, cube_cb cb, void *ud)
{
  fake_cube *f = cl;
  if(f->refuse_get)
    return SC_ERR_NOMEM;
  return fake_add(f, CUBE_OP_GET, id, cb, ud);
}

static sc_err f_reserve(void *cl, cube_cb cb, void *ud)
{
  return fake_add(cl, CUBE_OP_RESERVE, "", cb, ud);
}

static void f_unreserve(void *cl)
{
  (void)cl;
}

static sc_err f_create(void *cl, const cube_create_req *req, cube_cb cb,
                       void *ud)
{
  (void)req;
  return fake_add(cl, CUBE_OP_CREATE, "", cb, ud);
}

static sc_err f_pause(void *cl, const char *id, cube_cb cb, void *ud)
{
  return fake_add(cl, CUBE_OP_PAUSE, id, cb, ud);
}

static sc_err f_connect(void *cl, const char *id, int64_t t, cube_cb cb,
                        void *ud)
{
  (void)t;
  return fake_add(cl, CUBE_OP_CONNECT, id, cb, ud);
}

static sc_err f_set_timeout(void *cl, const char *id, int64_t t, cube_cb cb,
                            void *ud)
{
  (void)t;
  return fake_add(cl, CUBE_OP_SET_TIMEOUT, id, cb, ud);
}

static sc_err f_delete(void *cl, const char *id, cube_cb cb, void *ud)
{
  if(((fake_cube *)cl)->refuse_delete)
    return SC_ERR_NOMEM;
  return fake_add(cl, CUBE_OP_DELETE, id, cb, ud);
}

static void fake_table(act_cube *t, fake_cube *f)
{
  memset(f, 0, sizeof(*f));
  t->cl = f;
  t->get = f_get;
  t->get_now = f_get;
  t->reserve = f_reserve;
  t->unreserve = f_unreserve;
  t->create = f_create;
  t->pause = f_pause;
  t->connect = f_connect;
  t->set_timeout_now = f_set_timeout;
  t->delete_now = f_delete;
}

/* a pause's answer: HTTP status, error (SC_OK: none) */
static void pause_result(cube_result *res, long status, sc_err err,
                         const char *msg)
{
  memset(res, 0, sizeof(*res));
  res->http_status = status;
  res->err = err;
  res->message = msg;
  res->retry_after_ms = -1;
}

/* answer call i of f with res (op filled in) */
static void fake_answer(fake_cube *f, size_t i, cube_result *res)
{
  res->op = f->calls[i].op;
  f->calls[i].cb(res, f->calls[i].ud);
}

/* ------------------------------------------------------------------ */
/* the executor's surroundings */

typedef struct rig {
  char dir[256];
  char audit_path[320];
  struct event_base *base;
  store *st;
  audit *au;
  act_cube cube;
  fake_cube fake;
  act_env env;
  bool stopping;
  recorder rec;
  /* what the run reported */
  int ends;
  char last_result[16];
  bool last_conflict;
  bool finished;
  act_health health;
} rig;

static void on_end(act_run *run, size_t si, const char *result,
                   bool conflict)
{
  rig *g = run->ud;
  (void)si;
  g->ends++;
  snprintf(g->last_result, sizeof(g->last_result), "%s", result);
  g->last_conflict = conflict;
}

static void on_finished(act_run *run)
{
  ((rig *)run->ud)->finished = true;
}

/* The world's sessions into the store, each taking the version the store
 * gave it: the executor's writes (the intent before a pause or delete,
 * the final status) are compare-and-set on it. */
static int rig_put(rig *g, world *w)
{
  store_apply_outcome out;
  sc_errbuf eb;
  size_t i;
  for(i = 0; i < w->ns; i++) {
    session *s = w->s[i], *got = NULL;
    if(store_apply(g->st, &s, 1, &out, &eb) ||
       store_get(g->st, s->meta.namespace_, s->meta.name, &got, &eb)) {
      fprintf(stderr, "  rig_put: %s\n", eb.msg);
      return -1;
    }
    free(s->meta.resource_version);
    s->meta.resource_version = got->meta.resource_version;
    got->meta.resource_version = NULL;
    session_free(got);
  }
  return 0;
}

static int rig_open_cfg(rig *g, const plan_config *cfg)
{
  const char *tmp = getenv("TMPDIR");
  char url[320];
  store_open_opts o = {0};
  sc_errbuf eb;
  memset(g, 0, sizeof(*g));
  snprintf(g->dir, sizeof(g->dir), "%s/sc-exec-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if(!mkdtemp(g->dir) || !(g->base = event_base_new()))
    return -1;
  snprintf(url, sizeof(url), "sqlite:%s/s.db", g->dir);
  snprintf(g->audit_path, sizeof(g->audit_path), "%s/audit.log", g->dir);
  o.base = g->base;
  o.create = true;
  if(store_open(url, &o, &g->st, &eb) ||
     audit_open(g->audit_path, NULL, &g->au, &eb)) {
    fprintf(stderr, "  rig: %s\n", eb.msg);
    return -1;
  }
  fake_table(&g->cube, &g->fake);
  g->env.cube = &g->cube;
  g->env.st = g->st;
  g->env.au = g->au;
  g->env.plan = cfg;
  g->env.rec = &g->rec;
  g->env.replica = "test";
  g->env.identity = "test#00000000";
  g->env.resync_ms = 60000;
  g->env.stopping = &g->stopping;
  g->env.claims = act_claims_new();
  g->env.health = &g->health;
  return g->env.claims ? 0 : -1;
}

static int rig_open(rig *g, world *w)
{
  if(rig_open_cfg(g, &w->cfg))
    return -1;
  return rig_put(g, w);
}

static void rig_run(rig *g, act_run *run)
{
  while(!g->finished && !event_base_loop(g->base, EVLOOP_ONCE))
    ;
  act_run_clear(run);
}

static void rig_close(rig *g)
{
  char p[600];
  DIR *d;
  struct dirent *e;
  act_claims_free(g->env.claims);
  audit_close(g->au);
  store_close(g->st);
  if(g->base)
    event_base_free(g->base);
  if(!(d = opendir(g->dir)))
    return;
  while((e = readdir(d))) {
    if(!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    snprintf(p, sizeof(p), "%s/%s", g->dir, e->d_name);
    unlink(p);
  }
  closedir(d);
  rmdir(g->dir);
}

/* the audit file's text */
static const char *audit_text(const rig *g)
{
  static char buf[8192];
  FILE *f = fopen(g->audit_path, "r");
  size_t n = 0;
  if(f) {
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
  }
  buf[n] = '\0';
  return buf;
}

/* a Paused session linked to a running, tagged sandbox: the plan pauses it */
static plan *pause_world(world *w, const char *id)
{
  session *s = w_sess(w, "t1", "a", SESSION_STATE_PAUSED);
  w_link(s, id);
  s->meta.resource_version = strdup("1"); /* as read from a store */
  w_sb(w, id, CUBE_SB_RUNNING, 0, "t1", "a");
  return w_plan(w);
}

static void start(rig *g, act_run *run, plan *p)
{
  if(act_run_init(run, &g->env, p, W_NOW))
    abort();
  run->session_end = on_end;
  run->finished = on_finished;
  run->ud = g;
  act_run_start(run);
}

/* turn the loop until the fake holds n calls (the intent written before a
 * pause or a delete's last GET is answered on the loop) */
static bool wait_calls(rig *g, size_t n)
{
  int i;
  for(i = 0; i < 100 && g->fake.n < n && !g->finished; i++)
    event_base_loop(g->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
  return g->fake.n >= n;
}

/* ------------------------------------------------------------------ */

/* Rule 10 from one exit: a PAUSE answered "already paused" whose
 * confirming GET the client refuses ended with no audit line before the
 * audit moved into act_end(). */
TEST(rule10_pause_already_paused_get_refused_is_audited)
{
  world *w = w_new();
  plan *p = pause_world(w, "sb-pause-1");
  rig g;
  act_run run;
  cube_result res;
  const char *text;
  CHECK(p && p_find(p, PLAN_PAUSE, "sb-pause-1"));
  CHECK(!rig_open(&g, w));
  start(&g, &run, p);
  wait_calls(&g, 1);
  CHECK_INT(g.fake.n, 1);
  CHECK_INT(g.fake.calls[0].op, CUBE_OP_PAUSE);
  g.fake.refuse_get = true;
  pause_result(&res, 409, SC_OK, "");
  res.already = true;
  fake_answer(&g.fake, 0, &res);
  rig_run(&g, &run);
  CHECK(g.finished);
  CHECK_INT(g.ends, 1);
  CHECK_STR(g.last_result, "error");
  text = audit_text(&g);
  CHECK_MSG(strstr(text, "\"action\":\"pause\"") &&
              strstr(text, "\"sandboxID\":\"sb-pause-1\"") &&
              strstr(text, "\"outcome\":\"failed\""),
            "no audit line for the pause: '%s'", text);
  rig_close(&g);
  plan_free(p);
  w_del(w);
}

/* Every destructive exit writes exactly one audit line: done, failed,
 * skipped by a confirmation, already gone, dry-run. */
TEST(rule10_every_pause_exit_writes_one_line)
{
  static const struct {
    const char *name;
    bool dry_run;
    long pause_status; /* the pause's answer: 0 ok, else an error */
    const char *outcome;
  } rows[] = {
    {"done", false, 0, "\"outcome\":\"done\""},
    {"failed", false, 500, "\"outcome\":\"failed\""},
    {"dry-run", true, 0, "\"outcome\":\"dry-run\""},
  };
  size_t i;
  for(i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
    world *w = w_new();
    plan *p = pause_world(w, "sb-pause-2");
    rig g;
    act_run run;
    const char *text, *hit;
    CHECK(!rig_open(&g, w));
    g.env.dry_run = rows[i].dry_run;
    start(&g, &run, p);
    if(!rows[i].dry_run) {
      cube_result res;
      wait_calls(&g, 1);
      CHECK_INT(g.fake.n, 1);
      pause_result(&res, rows[i].pause_status ? rows[i].pause_status : 204,
                   rows[i].pause_status ? SC_ERR_UNAVAILABLE : SC_OK,
                   rows[i].pause_status ? "cube said no" : "");
      fake_answer(&g.fake, 0, &res);
    }
    else
      CHECK_INT(g.fake.n, 0);
    rig_run(&g, &run);
    text = audit_text(&g);
    hit = strstr(text, rows[i].outcome);
    CHECK_MSG(hit, "%s: audit '%s'", rows[i].name, text);
    CHECK_MSG(!strstr(hit + 1, "\"action\""), "%s: two lines: '%s'",
              rows[i].name, text);
    rig_close(&g);
    plan_free(p);
    w_del(w);
  }
}

/* the GET's answer: the sandbox running with our tags, or managed by mb */
static void get_result(cube_result *res, const char *id, const char *mb,
                       sc_err err)
{
  pause_result(res, err == SC_ERR_NOT_FOUND ? 404 : 200, err,
               err ? "not found" : "");
  res->sandbox.sandbox_id = (char *)id;
  res->sandbox.state = CUBE_SB_RUNNING;
  if(sc_kvlist_set(&res->sandbox.metadata, SESSION_TAG_TENANT_ID, "t1") ||
     sc_kvlist_set(&res->sandbox.metadata, SESSION_TAG_SESSION_ID, "a") ||
     sc_kvlist_set(&res->sandbox.metadata, SESSION_TAG_MANAGED_BY,
                   mb ? mb : W_CTRL))
    abort();
}


/* The delete's exits, each audited once by act_end(): gone at the first
 * GET, skipped by a confirmation, a GET or the DELETE refused by the
 * client (before act_end(), the refused first GET wrote no line), done. */
TEST(rule10_every_delete_exit_writes_one_line)
{
  static const struct {
    const char *name;
    sc_err get_err;      /* the first GET */
    const char *mb;      /* its managed-by tag (NULL: ours) */
    bool refuse_get;     /* the client refuses the first GET */
    bool refuse_delete;
    const char *outcome;
    int cube_calls;      /* GET [, GET now [, DELETE]] */
  } rows[] = {
    {"confirming GET refused", SC_OK, NULL, true, false,
     "\"outcome\":\"failed\"", 0},
    {"already gone", SC_ERR_NOT_FOUND, NULL, false, false,
     "\"outcome\":\"already-gone\"", 1},
    {"skipped: managed by another", SC_OK, "other-controller", false, false,
     "\"outcome\":\"skipped\"", 1},
    {"DELETE refused", SC_OK, NULL, false, true, "\"outcome\":\"failed\"", 2},
    {"done", SC_OK, NULL, false, false, "\"outcome\":\"done\"", 3},
  };
  size_t i;
  for(i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
    world *w = w_new();
    session *s = w_sess(w, "t1", "a", SESSION_STATE_ENDED);
    plan *p;
    rig g;
    act_run run;
    cube_result res;
    const char *text, *hit;
    int k;
    w_link(s, "sb-del-1");
    s->meta.resource_version = strdup("1");
    w_sb(w, "sb-del-1", CUBE_SB_RUNNING, 0, "t1", "a");
    p = w_plan(w);
    CHECK_MSG(p && p_find(p, PLAN_DELETE, "sb-del-1"), "%s: no delete",
              rows[i].name);
    CHECK(!rig_open(&g, w));
    g.fake.refuse_delete = rows[i].refuse_delete;
    g.fake.refuse_get = rows[i].refuse_get;
    start(&g, &run, p);
    for(k = 0; k < rows[i].cube_calls; k++) {
      CHECK_MSG(wait_calls(&g, (size_t)k + 1), "%s: call %d not made",
                rows[i].name, k + 1);
      if(g.fake.calls[k].op == CUBE_OP_DELETE)
        pause_result(&res, 204, SC_OK, "");
      else
        get_result(&res, "sb-del-1", k ? NULL : rows[i].mb,
                   k ? SC_OK : rows[i].get_err);
      fake_answer(&g.fake, (size_t)k, &res);
      sc_kvlist_clear(&res.sandbox.metadata);
    }
    rig_run(&g, &run);
    CHECK_MSG(g.fake.n == (size_t)rows[i].cube_calls, "%s: %zu calls",
              rows[i].name, g.fake.n);
    text = audit_text(&g);
    hit = strstr(text, rows[i].outcome);
    CHECK_MSG(hit && strstr(text, "\"action\":\"delete\""), "%s: audit '%s'",
              rows[i].name, text);
    CHECK_MSG(!strstr(hit + 1, "\"action\""), "%s: two lines: '%s'",
              rows[i].name, text);
    rig_close(&g);
    plan_free(p);
    w_del(w);
  }
}

/* the status the store holds for ns/name (a copy; NULL: none) */
static session *stored(rig *g, const char *ns, const char *name)
{
  session *o = NULL;
  sc_errbuf eb;
  if(store_get(g->st, ns, name, &o, &eb))
    return NULL;
  return o;
}

/* Rule 11: the delete's last GET (and so the DELETE) comes only after the
 * store holds its intent; the outcome clears it. */
TEST(rule11_delete_goes_only_after_its_intent_is_stored)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", SESSION_STATE_ENDED), *o;
  plan *p;
  rig g;
  act_run run;
  cube_result res;
  w_link(s, "sb-int-1");
  w_sb(w, "sb-int-1", CUBE_SB_RUNNING, 0, "t1", "a");
  p = w_plan(w);
  CHECK(p && p_find(p, PLAN_DELETE, "sb-int-1"));
  CHECK(!rig_open(&g, w));
  start(&g, &run, p);
  CHECK(wait_calls(&g, 1));
  o = stored(&g, "t1", "a");
  CHECK_MSG(o && !o->status.pending_kind, "an intent before the plan's GET");
  session_free(o);
  get_result(&res, "sb-int-1", NULL, SC_OK);
  fake_answer(&g.fake, 0, &res);
  sc_kvlist_clear(&res.sandbox.metadata);
  CHECK(wait_calls(&g, 2));
  CHECK_INT(g.fake.calls[1].op, CUBE_OP_GET);
  o = stored(&g, "t1", "a");
  CHECK_MSG(o && o->status.pending_kind &&
              !strcmp(o->status.pending_kind, "ended") &&
              o->status.pending_sandbox_id &&
              !strcmp(o->status.pending_sandbox_id, "sb-int-1") &&
              o->status.pending_by &&
              !strcmp(o->status.pending_by, "test#00000000") &&
              o->status.pending_at == W_NOW,
            "the intent is not in the store before the last look");
  session_free(o);
  get_result(&res, "sb-int-1", NULL, SC_OK);
  fake_answer(&g.fake, 1, &res);
  sc_kvlist_clear(&res.sandbox.metadata);
  CHECK(wait_calls(&g, 3));
  CHECK_INT(g.fake.calls[2].op, CUBE_OP_DELETE);
  pause_result(&res, 204, SC_OK, "");
  fake_answer(&g.fake, 2, &res);
  rig_run(&g, &run);
  o = stored(&g, "t1", "a");
  CHECK_MSG(o && !o->status.pending_kind &&
              o->status.phase == SESSION_PHASE_ENDED,
            "the outcome did not clear the intent");
  session_free(o);
  rig_close(&g);
  plan_free(p);
  w_del(w);
}

/* Rule 11's bound, the executor's half: a reclaim's DELETE goes within
 * reclaim_send_within_ms of its intent's write or not at all, so that an
 * intent older than that and Cube's timeout has no DELETE in flight and
 * may be voided (plan.h). Here the last look's answer comes after the
 * window: no DELETE, the action skipped and audited. With the window
 * wide, the same answer lets the DELETE go. Before: it went however late. */
TEST(rule11_reclaim_delete_goes_only_within_its_window)
{
  int late;
  for(late = 0; late < 2; late++) {
    world *w = w_new();
    session *s = w_sess(w, "t1", "a", SESSION_STATE_ACTIVE);
    sc_time paused_at = W_NOW - 48 * HOUR_MS;
    plan *p;
    rig g;
    act_run run;
    cube_result res;
    w_link(s, "sb-rw-1");
    w_sb(w, "sb-rw-1", CUBE_SB_PAUSED, paused_at, "t1", "a");
    w->cfg.reclaim_send_within_ms = late ? 30 : 60000;
    p = w_plan(w);
    CHECK(p && p_find(p, PLAN_DELETE, "sb-rw-1"));
    CHECK(!rig_open(&g, w));
    start(&g, &run, p);
    CHECK(wait_calls(&g, 1));
    get_result(&res, "sb-rw-1", NULL, SC_OK);
    res.sandbox.state = CUBE_SB_PAUSED;
    res.sandbox.end_at = paused_at;
    fake_answer(&g.fake, 0, &res);
    CHECK(wait_calls(&g, 2)); /* the intent written, the last look asked */
    CHECK_INT(g.fake.calls[1].op, CUBE_OP_GET);
    if(late)
      usleep(80 * 1000);
    fake_answer(&g.fake, 1, &res);
    sc_kvlist_clear(&res.sandbox.metadata);
    if(late) {
      rig_run(&g, &run);
      CHECK_INT(g.fake.n, 2); /* no DELETE */
      CHECK_STR(g.last_result, "error"); /* looked at again, backed off */
      CHECK(strstr(audit_text(&g), "\"outcome\":\"skipped\""));
      CHECK(strstr(audit_text(&g), "not sent within 30 ms of its intent"));
    }
    else {
      CHECK(wait_calls(&g, 3));
      CHECK_INT(g.fake.calls[2].op, CUBE_OP_DELETE);
      pause_result(&res, 204, SC_OK, "");
      fake_answer(&g.fake, 2, &res);
      rig_run(&g, &run);
    }
    rig_close(&g);
    plan_free(p);
    w_del(w);
  }
}

/* The run starts the sessions' actions at act_run.rotate (each session's
 * in plan order), orphans last: the loop turns it each full pass, so a
 * pass cut short (a replica killed, the bucket slow) does not leave the
 * same sessions last every time. Before, every run started at the plan's
 * first session: in the full chaos run one tenant of three (the last in
 * name order) had 23 of 30 unanswered connects. */
TEST(run_starts_at_the_rotated_session_orphans_last)
{
  static const struct {
    uint64_t rotate;
    const char *order[4];
  } cases[] = {
    {0, {"sb-a", "sb-b", "sb-d1", "sb-o"}},
    {1, {"sb-b", "sb-d1", "sb-a", "sb-o"}},
    {2, {"sb-d1", "sb-a", "sb-b", "sb-o"}},
    {3, {"sb-d1", "sb-a", "sb-b", "sb-o"}}, /* d's second: d's first */
    {5, {"sb-b", "sb-d1", "sb-a", "sb-o"}}, /* 5 % 4 actions */
  };
  size_t ci;
  for(ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
    world *w = w_new();
    session *a = w_sess(w, "t1", "a", SESSION_STATE_ENDED);
    session *b = w_sess(w, "t1", "b", SESSION_STATE_ENDED);
    session *d = w_sess(w, "t1", "d", SESSION_STATE_ENDED);
    plan *p;
    rig g;
    act_run run;
    size_t i;
    w_link(a, "sb-a");
    w_link(b, "sb-b");
    w_link(d, "sb-d1");
    w_sb(w, "sb-a", CUBE_SB_RUNNING, 0, "t1", "a");
    w_sb(w, "sb-b", CUBE_SB_RUNNING, 0, "t1", "b");
    w_sb(w, "sb-d1", CUBE_SB_RUNNING, 0, "t1", "d");
    w_sb(w, "sb-d2", CUBE_SB_RUNNING, 0, "t1", "d");
    w_sb(w, "sb-o", CUBE_SB_PAUSED, W_NOW - 2 * HOUR_MS, "t1", "zz");
    p = w_plan(w);
    CHECK(p && p->n_actions == 5 && p_find(p, PLAN_DELETE, "sb-o") &&
          p_find(p, PLAN_DELETE, "sb-d2"));
    CHECK(!rig_open(&g, w));
    if(act_run_init(&run, &g.env, p, W_NOW))
      abort();
    run.session_end = on_end;
    run.finished = on_finished;
    run.ud = &g;
    run.rotate = cases[ci].rotate;
    act_run_start(&run);
    CHECK(wait_calls(&g, 4));
    for(i = 0; i < 4 && i < g.fake.n; i++) {
      CHECK_INT(g.fake.calls[i].op, CUBE_OP_GET);
      CHECK_STR(g.fake.calls[i].id, cases[ci].order[i]);
    }
    for(i = 0; i < g.fake.n; i++) { /* end the run: every GET 404 */
      cube_result res;
      get_result(&res, g.fake.calls[i].id, NULL, SC_ERR_NOT_FOUND);
      fake_answer(&g.fake, i, &res);
      sc_kvlist_clear(&res.sandbox.metadata);
    }
    rig_run(&g, &run);
    rig_close(&g);
    plan_free(p);
    w_del(w);
  }
}

/* No intent, no call: a version the store no longer has (another writer
 * came first) is a skip; an object the store does not have is a failure;
 * neither makes the last GET or the DELETE. */
TEST(rule11_no_call_when_the_intent_is_not_written)
{
  int row;
  for(row = 0; row < 2; row++) {
    world *w = w_new();
    session *s = w_sess(w, "t1", "a", SESSION_STATE_ENDED);
    plan *p;
    rig g;
    act_run run;
    cube_result res;
    const char *text;
    w_link(s, "sb-int-2");
    w_sb(w, "sb-int-2", CUBE_SB_RUNNING, 0, "t1", "a");
    p = w_plan(w);
    CHECK(p && p_find(p, PLAN_DELETE, "sb-int-2"));
    if(row == 0) {
      CHECK(!rig_open(&g, w));
      free(s->meta.resource_version);
      s->meta.resource_version = strdup("999999"); /* stale */
    }
    else
      CHECK(!rig_open_cfg(&g, &w->cfg)); /* not in the store at all */
    start(&g, &run, p);
    CHECK(wait_calls(&g, 1));
    get_result(&res, "sb-int-2", NULL, SC_OK);
    fake_answer(&g.fake, 0, &res);
    sc_kvlist_clear(&res.sandbox.metadata);
    rig_run(&g, &run);
    CHECK_MSG(g.fake.n == 1, "row %d: %zu Cube calls, want the first GET only",
              row, g.fake.n);
    text = audit_text(&g);
    CHECK_MSG(strstr(text, row == 0 ? "\"outcome\":\"skipped\""
                                    : "\"outcome\":\"failed\""),
              "row %d: audit '%s'", row, text);
    rig_close(&g);
    plan_free(p);
    w_del(w);
  }
}

/* Orphans: the intent is the audit line, written before the DELETE; no
 * line (a full audit disk) or a store that takes no writes: no DELETE. */
TEST(rule11_orphan_intent_is_an_audit_line_before_the_delete)
{
  int row;
  for(row = 0; row < 3; row++) {
    world *w = w_new();
    plan *p;
    rig g;
    act_run run;
    cube_result res;
    const char *text;
    w_sb(w, "sb-orph-1", CUBE_SB_PAUSED, W_NOW - 2 * HOUR_MS, "t1", "ghost");
    p = w_plan(w);
    CHECK(p && p_find(p, PLAN_DELETE, "sb-orph-1"));
    CHECK(!rig_open(&g, w));
    if(row == 1) { /* the store takes no writes */
      g.health.failing = true;
      snprintf(g.health.why, sizeof(g.health.why), "store writes fail");
    }
    if(row == 2) { /* the audit file takes no line */
      sc_errbuf eb;
      audit_close(g.au);
      CHECK(!audit_open("/dev/full", NULL, &g.au, &eb));
      g.env.au = g.au;
    }
    start(&g, &run, p);
    CHECK(wait_calls(&g, 1));
    get_result(&res, "sb-orph-1", NULL, SC_OK);
    res.sandbox.state = CUBE_SB_PAUSED;
    res.sandbox.end_at = W_NOW - 2 * HOUR_MS;
    fake_answer(&g.fake, 0, &res);
    sc_kvlist_clear(&res.sandbox.metadata);
    if(row == 0) {
      CHECK(wait_calls(&g, 2));
      CHECK_INT(g.fake.calls[1].op, CUBE_OP_DELETE);
      text = audit_text(&g);
      CHECK_MSG(strstr(text, "\"outcome\":\"intent\""),
                "no intent line before the DELETE: '%s'", text);
      pause_result(&res, 204, SC_OK, "");
      fake_answer(&g.fake, 1, &res);
    }
    rig_run(&g, &run);
    if(row)
      CHECK_MSG(g.fake.n == 1, "row %d: %zu Cube calls, want no DELETE", row,
                g.fake.n);
    else {
      text = audit_text(&g);
      CHECK_MSG(strstr(text, "\"outcome\":\"intent\"") &&
                  strstr(text, "\"outcome\":\"done\""),
                "audit '%s'", text);
    }
    rig_close(&g);
    plan_free(p);
    w_del(w);
  }
}

/* ------------------------------------------------------------------ */

/* A failed status copy is an error for that session: before, it was
 * ignored and the emptied status could be written by compare-and-set.
 * Now: no store write, the turn ends as "error", and the loop backs off. */
TEST(failed_status_copy_writes_nothing_and_backs_off)
{
  world *w = w_new();
  plan *p = pause_world(w, "sb-nomem-1");
  rig g;
  act_run run;
  cube_result res;
  loop_result lr;
  CHECK(!rig_open(&g, w));
  start(&g, &run, p);
  wait_calls(&g, 1);
  CHECK_INT(g.fake.n, 1);
  pause_result(&res, 204, SC_OK, "");
  nomem_id = "sb-nomem-1"; /* the fold's copy of the plan's status fails */
  fake_answer(&g.fake, 0, &res);
  nomem_id = NULL;
  CHECK_MSG(store_async_inflight(g.st) == 0,
            "a status write was sent for a session whose status copy "
            "failed");
  CHECK(g.finished);
  CHECK_INT(g.ends, 1);
  CHECK_STR(g.last_result, "error");
  CHECK(!g.last_conflict);
  CHECK(run.sess[0].broken && run.sess[0].failed);
  lr = loop_result_of(run.sess[0].failed, run.sess[0].retry_after_ms,
                      p->sessions[0].next_due, W_NOW);
  CHECK_MSG(lr.kind == LOOP_BACKOFF, "result %s", loop_result_name(lr.kind));
  rig_run(&g, &run);
  rig_close(&g);
  plan_free(p);
  w_del(w);
}

/* Only the statuses an action changes are copied: a run whose session's
 * status the plan left alone reads the plan's (its view), owns nothing. */
TEST(unchanged_status_is_not_copied)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", SESSION_STATE_PAUSED);
  plan *p;
  rig g;
  act_run run;
  w_link(s, "sb-quiet");
  w_sb(w, "sb-quiet", CUBE_SB_PAUSED, W_NOW - MIN_MS, "t1", "a");
  p = w_plan(w);
  CHECK(p);
  CHECK(!rig_open(&g, w));
  start(&g, &run, p);
  CHECK(!run.sess[0].own);
  CHECK(act_run_status(&run, 0) == &p->sessions[0].status);
  rig_run(&g, &run);
  rig_close(&g);
  plan_free(p);
  w_del(w);
}

/* The session index: every action finds its session, orphans none. */
TEST(index_finds_each_session_by_identity)
{
  world *w = w_new();
  plan *p;
  rig g;
  act_run run;
  size_t i;
  char name[32], id[32];
  for(i = 0; i < 200; i++) {
    session *s;
    snprintf(name, sizeof(name), "s%zu", i);
    snprintf(id, sizeof(id), "sb%zu", i);
    s = w_sess(w, "t1", name, SESSION_STATE_PAUSED);
    w_link(s, id);
    w_sb(w, id, CUBE_SB_RUNNING, 0, "t1", name);
  }
  p = w_plan(w);
  CHECK(p && p->n_actions == 200);
  CHECK(!rig_open(&g, w));
  g.stopping = true; /* no action starts: only the index is looked at */
  if(act_run_init(&run, &g.env, p, W_NOW))
    abort();
  for(i = 0; i < p->n_actions; i++) {
    size_t si = act_run_find(&run, p->actions[i].s);
    CHECK(si < p->n_sessions && p->sessions[si].s == p->actions[i].s);
  }
  CHECK(act_run_find(&run, NULL) == (size_t)-1);
  CHECK(act_run_find(&run, (const session *)&run) == (size_t)-1);
  act_run_clear(&run);
  rig_close(&g);
  plan_free(p);
  w_del(w);
}

/* The one switch: each result is its queue operation. */
TEST(result_switch_drives_the_queue)
{
  work_queue *q = queue_new(NULL);
  loop_result r;
  /* a failure backs off and counts */
  r = loop_result_of(true, -1, 0, 0);
  CHECK_INT(r.kind, LOOP_BACKOFF);
  loop_result_apply(q, "a", r, 0);
  CHECK_INT(queue_failures(q, "a"), 1);
  CHECK_INT(queue_next_delay(q, 0), 200);
  /* Cube's Retry-After wins over the backoff */
  r = loop_result_of(true, 5000, 0, 0);
  CHECK_INT(r.kind, LOOP_RETRY_AFTER);
  loop_result_apply(q, "b", r, 0);
  CHECK_INT(queue_failures(q, "b"), 1);
  /* settled with a due time: failures forgotten, back after due + 1 s */
  r = loop_result_of(false, -1, W_NOW + 10000, W_NOW);
  CHECK_INT(r.kind, LOOP_REQUEUE_AFTER);
  CHECK_INT(r.ms, 11000);
  loop_result_apply(q, "a", r, 0);
  CHECK_INT(queue_failures(q, "a"), 0);
  /* settled, nothing due: forgotten */
  r = loop_result_of(false, -1, 0, W_NOW);
  CHECK_INT(r.kind, LOOP_DONE);
  loop_result_apply(q, "b", r, 0);
  CHECK_INT(queue_failures(q, "b"), 0);
  /* a lost compare-and-set: now */
  r.kind = LOOP_REQUEUE;
  loop_result_apply(q, "c", r, 0);
  CHECK_INT(queue_len(q), 1);
  CHECK_STR(queue_pop(q), "c");
  queue_free(q);
}

TEST_LIST = {
  T(rule10_pause_already_paused_get_refused_is_audited),
  T(rule10_every_pause_exit_writes_one_line),
  T(rule10_every_delete_exit_writes_one_line),
  T(rule11_delete_goes_only_after_its_intent_is_stored),
  T(rule11_reclaim_delete_goes_only_within_its_window),
  T(run_starts_at_the_rotated_session_orphans_last),
  T(rule11_no_call_when_the_intent_is_not_written),
  T(rule11_orphan_intent_is_an_audit_line_before_the_delete),
  T(failed_status_copy_writes_nothing_and_backs_off),
  T(unchanged_status_is_not_copied),
  T(index_finds_each_session_by_identity),
  T(result_switch_drives_the_queue),
  {0},
};
TEST_MAIN()
