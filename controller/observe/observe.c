/* observe.c - lists, Cube's clock and confirming GETs (see observe.h). */
#include "controller/observe/observe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hmap.h"

typedef struct obs_run {
  observation *o;
  cube_client *c;
  metrics *m;
  logger *lg;
  session *const *sessions;
  size_t n_sessions;
  observe_cb cb;
  void *ud;
  int pending;
  size_t a_sbs;
  sc_hmap *ids;     /* sandbox ID -> index into o->sbs (SC_HMAP_IDX) */
} obs_run;

typedef struct obs_call {
  obs_run *run;
  int64_t t0;
  int state;         /* a list: 0 running, 1 paused */
  const char *kind;  /* a list: whole, tenant, session */
  char id[CUBE_ID_MAX + 1];
} obs_call;

void observe_count_call(metrics *m, cube_op op, const cube_result *res,
                        int64_t t0)
{
  char l[96];
  if(!m)
    return;
  snprintf(l, sizeof(l), "op=\"%s\",code=\"%ld\"", cube_op_name(op),
           res->http_status);
  metrics_add(m, "session_controller_cube_requests_total", l, 1);
  snprintf(l, sizeof(l), "op=\"%s\"", cube_op_name(op));
  metrics_observe(m, "session_controller_cube_request_duration_seconds", l,
                  (double)(sctime_mono_ms() - t0) / 1000.0);
}

void observation_free(observation *o)
{
  size_t i;
  if(!o)
    return;
  for(i = 0; i < o->n_sbs; i++)
    cube_sandbox_clear(&o->sbs[i]);
  free(o->sbs);
  for(i = 0; i < o->n_gone; i++)
    free(o->gone[i]);
  free(o->gone);
  free(o->fail_msg);
  free(o);
}

static void fail(observation *o, const char *msg, int64_t retry_after_ms)
{
  o->failed = true;
  if(!o->fail_msg)
    o->fail_msg = strdup(msg);
  if(retry_after_ms > o->retry_after_ms)
    o->retry_after_ms = retry_after_ms;
}

/* The sandbox IDs seen so far, hashed (lib/hmap.h): a 10k-row list must
 * not cost n^2/2 string comparisons (measured: half the controller's CPU).
 * The table holds indexes into o->sbs, which stay valid when it grows. */
static bool id_eq(const void *v, const void *key, void *ud)
{
  const obs_run *run = ud;
  return !strcmp(run->o->sbs[SC_HMAP_IDX_OF(v)].sandbox_id, key);
}

static bool has(const obs_run *run, const char *id)
{
  return run->ids &&
         sc_hmap_get(run->ids, sc_hash_id(id), id_eq, id, (void *)run);
}

static void add(obs_run *run, cube_sandbox *sb)
{
  observation *o = run->o;
  if(!sb->sandbox_id || has(run, sb->sandbox_id)) {
    /* listed twice: its state changed between the two lists */
    cube_sandbox_clear(sb);
    return;
  }
  if(o->n_sbs == run->a_sbs) {
    size_t na = run->a_sbs ? run->a_sbs * 2 : 64;
    cube_sandbox *n = realloc(o->sbs, na * sizeof(*n));
    if(!n) {
      cube_sandbox_clear(sb);
      fail(o, "out of memory", -1);
      return;
    }
    o->sbs = n;
    run->a_sbs = na;
  }
  if((!run->ids && !(run->ids = sc_hmap_new(0))) ||
     sc_hmap_put(run->ids, sc_hash_id(sb->sandbox_id),
                 SC_HMAP_IDX(o->n_sbs))) {
    cube_sandbox_clear(sb);
    fail(o, "out of memory", -1);
    return;
  }
  o->sbs[o->n_sbs] = *sb;
  o->n_sbs++;
  memset(sb, 0, sizeof(*sb));
}

static void finish(obs_run *run)
{
  observation *o = run->o;
  observe_cb cb = run->cb;
  void *ud = run->ud;
  sc_hmap_free(run->ids);
  free(run);
  cb(o, ud);
}

static void on_get(const cube_result *res, void *ud)
{
  obs_call *call = ud;
  obs_run *run = call->run;
  observe_count_call(run->m, CUBE_OP_GET, res, call->t0);
  if(run->o->links_only) {
    /* the GETs are the observation: each must answer, with a clock */
    if(res->err || !res->cube_now)
      run->o->links_short = true;
    else if(!run->o->cube_now || res->cube_now < run->o->cube_now)
      run->o->cube_now = res->cube_now; /* the earlier: never early */
  }
  if(!res->err) {
    cube_sandbox sb;
    cube_result_take_sandbox(res, &sb);
    add(run, &sb);
  }
  else if(res->err == SC_ERR_NOT_FOUND) {
    char **g = realloc(run->o->gone, (run->o->n_gone + 1) * sizeof(*g));
    if(g) {
      run->o->gone = g;
      if((g[run->o->n_gone] = strdup(call->id)) != NULL)
        run->o->n_gone++;
    }
  }
  else
    log_kv(run->lg, LOG_WARN, "confirming GET failed", "sandbox", call->id,
           "error", res->message, NULL);
  free(call);
  if(--run->pending == 0)
    finish(run);
}

/* A GET for each session's link, then for the sandbox of its recorded
 * intent (status.pendingAction), unless listed already: neither is taken
 * as gone from its absence in a list, only from a GET's 404 (rule 2).
 * Each started GET counts in run->pending; returns how many started. */
static size_t start_gets(obs_run *run)
{
  size_t i, n = 0;
  for(i = 0; i < 2 * run->n_sessions; i++) {
    const session_status *st = &run->sessions[i / 2]->status;
    const char *id = i % 2 ? st->pending_sandbox_id : st->sandbox_id;
    obs_call *call;
    if(!id || !*id || has(run, id) ||
       (i % 2 && st->sandbox_id && !strcmp(id, st->sandbox_id)))
      continue;
    call = calloc(1, sizeof(*call));
    if(!call)
      continue;
    call->run = run;
    call->t0 = sctime_mono_ms();
    snprintf(call->id, sizeof(call->id), "%s", id);
    run->pending++;
    if(cube_get(run->c, id, on_get, call)) {
      run->pending--;
      free(call);
      continue;
    }
    n++;
  }
  return n;
}

static void confirm(obs_run *run)
{
  if(run->o->failed) {
    finish(run);
    return;
  }
  run->pending = 1; /* held while starting */
  start_gets(run);
  if(--run->pending == 0)
    finish(run);
}

/* The HTTP requests a list took: its pages, the pages asked again, and
 * the request that failed it. */
static size_t list_requests(const cube_result *res)
{
  size_t n = res->pages + res->page_retries;
  if(res->err && (res->http_status < 200 || res->http_status > 299))
    n++;
  return n ? n : 1;
}

static void on_list(const cube_result *res, void *ud)
{
  obs_call *call = ud;
  obs_run *run = call->run;
  observation *o = run->o;
  size_t nreq = list_requests(res);
  char l[96];
  /* every page is a request to Cube (and to its rate limit): counted so */
  snprintf(l, sizeof(l), "op=\"%s\",code=\"%ld\"", cube_op_name(CUBE_OP_LIST),
           res->http_status);
  metrics_add(run->m, "session_controller_cube_requests_total", l,
              (double)nreq);
  snprintf(l, sizeof(l), "op=\"%s\"", cube_op_name(CUBE_OP_LIST));
  metrics_observe(run->m, "session_controller_cube_request_duration_seconds",
                  l, (double)(sctime_mono_ms() - call->t0) / 1000.0);
  o->list_requests[call->state] += nreq;
  snprintf(l, sizeof(l), "kind=\"%s\",state=\"%s\"", call->kind,
           call->state ? "paused" : "running");
  metrics_add(run->m, "session_controller_cube_list_requests_total", l,
              (double)nreq);
  free(call);
  if(res->err) {
    fail(o, res->message, res->retry_after_ms);
    log_kv(run->lg, LOG_WARN, "cube list failed", "error", res->message,
           NULL);
  }
  else {
    size_t n, i;
    cube_sandbox *rows = cube_result_take_sandboxes(res, &n);
    if(res->page_retries)
      metrics_add(run->m, "session_controller_cube_list_page_retries_total",
                  NULL, (double)res->page_retries);
    for(i = 0; i < n; i++)
      add(run, &rows[i]);
    free(rows);
    if(res->truncated_suspect) {
      o->truncated = true;
      metrics_add(run->m, "session_controller_list_truncated_total", NULL, 1);
      log_kv(run->lg, LOG_DEBUG, "cube list may be short: nothing is "
             "concluded from a sandbox's absence in it this pass (listed "
             "orphans are still deleted, each confirmed by its GET)", NULL);
    }
    if(!res->cube_now)
      fail(o, "Cube's list response carried no usable Date header: no "
              "clock to decide by", -1);
    else if(!o->cube_now || res->cube_now < o->cube_now)
      o->cube_now = res->cube_now; /* the earlier: never early */
  }
  if(--run->pending == 0)
    confirm(run);
}

sc_err observe_start(cube_client *c, metrics *m, logger *lg,
                     const sc_kvlist *filter, session *const *sessions,
                     size_t n_sessions, observe_cb cb, void *ud)
{
  return observe_start_names(c, m, lg, filter, NULL, 0, sessions,
                             n_sessions, cb, ud);
}

/* Start one list (counted in run->pending): f with, when tenant is not
 * NULL, lea.tenant_id = tenant as well. */
static void start_list(obs_run *run, const sc_kvlist *f, const char *tenant,
                       int state, const char *kind)
{
  static const char *const states[] = {"running", "paused"};
  sc_kvlist by = {0};
  obs_call *call;
  if(tenant && (sc_kvlist_copy(&by, f) ||
                sc_kvlist_set(&by, SESSION_TAG_TENANT_ID, tenant))) {
    sc_kvlist_clear(&by);
    fail(run->o, "out of memory", -1);
    return;
  }
  if(!(call = calloc(1, sizeof(*call)))) {
    sc_kvlist_clear(&by);
    fail(run->o, "out of memory", -1);
    return;
  }
  call->run = run;
  call->t0 = sctime_mono_ms();
  call->state = state;
  call->kind = kind;
  run->pending++;
  if(cube_list(run->c, tenant ? &by : f, states[state], on_list, call)) {
    run->pending--;
    free(call);
    fail(run->o, "the Cube client refused the call (closing?)", -1);
  }
  sc_kvlist_clear(&by);
}

/* A run and its empty observation (NULL: out of memory). */
static obs_run *run_new(cube_client *c, metrics *m, logger *lg,
                        session *const *sessions, size_t n_sessions,
                        observe_cb cb, void *ud)
{
  obs_run *run = calloc(1, sizeof(*run));
  if(!run || !(run->o = calloc(1, sizeof(*run->o)))) {
    free(run);
    return NULL;
  }
  run->o->retry_after_ms = -1;
  run->c = c;
  run->m = m;
  run->lg = lg;
  run->sessions = sessions;
  run->n_sessions = n_sessions;
  run->cb = cb;
  run->ud = ud;
  return run;
}

sc_err observe_start_links(cube_client *c, metrics *m, logger *lg,
                           session *const *sessions, size_t n_sessions,
                           observe_cb cb, void *ud)
{
  obs_run *run = run_new(c, m, lg, sessions, n_sessions, cb, ud);
  if(!run)
    return SC_ERR_NOMEM;
  run->o->links_only = true;
  run->pending = 1; /* held while starting */
  if(!start_gets(run)) {
    /* nothing linked, or the client refused: nothing to report from the
     * loop, the caller lists */
    observation_free(run->o);
    free(run);
    return SC_ERR_UNAVAILABLE;
  }
  run->pending--; /* the GETs answer from the loop, never in this call */
  return SC_OK;
}

sc_err observe_start_names(cube_client *c, metrics *m, logger *lg,
                           const sc_kvlist *filter,
                           const char *const *also_managed_by, size_t n_also,
                           session *const *sessions, size_t n_sessions,
                           observe_cb cb, void *ud)
{
  return observe_start_lists(c, m, lg, filter, also_managed_by, n_also, NULL,
                             sessions, n_sessions, cb, ud);
}

sc_err observe_start_lists(cube_client *c, metrics *m, logger *lg,
                           const sc_kvlist *filter,
                           const char *const *also_managed_by, size_t n_also,
                           const observe_lists *lists,
                           session *const *sessions, size_t n_sessions,
                           observe_cb cb, void *ud)
{
  obs_run *run = run_new(c, m, lg, sessions, n_sessions, cb, ud);
  const char *whole_kind =
    sc_kvlist_get(filter, SESSION_TAG_SESSION_ID) ? "session" : "whole";
  size_t j, k;
  int i;
  if(!run)
    return SC_ERR_NOMEM;
  for(i = 0; lists && i < 2; i++)
    run->o->by_tenant[i] = lists->by_tenant[i];
  if(run->o->by_tenant[0] && run->o->by_tenant[1] && !lists->n_tenants)
    run->o->by_tenant[1] = false; /* a list at least: Cube's clock */
  for(k = 0; k <= n_also; k++) {
    sc_kvlist other = {0};
    const sc_kvlist *f = filter;
    if(k) { /* a former name's sandboxes */
      if(sc_kvlist_copy(&other, filter) ||
         sc_kvlist_set(&other, SESSION_TAG_MANAGED_BY,
                       also_managed_by[k - 1])) {
        sc_kvlist_clear(&other);
        fail(run->o, "out of memory", -1);
        continue;
      }
      f = &other;
    }
    for(i = 0; i < 2; i++) {
      if(!run->o->by_tenant[i]) {
        start_list(run, f, NULL, i, whole_kind);
        continue;
      }
      for(j = 0; j < lists->n_tenants; j++)
        start_list(run, f, lists->tenants[j], i, "tenant");
    }
    sc_kvlist_clear(&other);
  }
  if(run->pending == 0) {
    /* nothing started: report from the loop, never from inside the call */
    observation_free(run->o);
    free(run);
    return SC_ERR_UNAVAILABLE;
  }
  return SC_OK;
}
