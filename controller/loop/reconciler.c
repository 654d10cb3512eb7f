/*
 * reconciler.c - observe, plan, act, write status (see reconciler.h).
 *
 * A unit of work is a "pass": either a full pass over every session, or a
 * single-session pass for one key of the work queue. Both run the same
 * three phases:
 *
 *   OBSERVE  store list/get; Cube lists (running, paused) filtered by our
 *            tags; Cube's clock from the Date header.
 *   CONFIRM  GET every sandbox a status links to that the lists missed
 *            (absence is not evidence, rule 2).
 *   ACT      plan_compute(); run the actions through the Cube client;
 *            confirm each delete with a GET in the same action (rule 3);
 *            write each session's status once, by compare-and-set (rule 7).
 *
 * A full pass never overlaps single-session passes, so one session is never
 * acted on twice at once by this replica; other replicas are kept safe by
 * the rules themselves.
 *
 * Every store call is asynchronous (store_*_async): a store on the network
 * (kube) never stops the loop. A pass holds ps->pending for each store
 * write in flight as for each Cube call, and ps->early for the link
 * writes that must land before its actions start.
 */
#include "controller/loop/reconciler.h"
#include "api/manifest.h"
#include "lib/scstr.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/duration.h"
#include "lib/sctime.h"
#include "controller/observe/observe.h"
#include "controller/loop/queue.h"
#include "controller/status/recorder.h"

#define MAX_SINGLE_PASSES 16
#define BURST_TO_FULL_PASS 32 /* ready keys that make a full pass cheaper */
#define HEARTBEAT_MS 1000

enum pass_phase { PH_OBSERVE, PH_ACT, PH_DONE };

typedef struct sess_act {
  session_status st;     /* planned status, then updated per action */
  int pending;           /* actions not finished */
  bool failed;
  bool has_confirm;
  int64_t retry_after_ms;
  bool wants_write;
  char *rv;              /* after our create claim: the version it made */
  session_status stored; /* after our create claim: the status it wrote */
} sess_act;

typedef struct pass {
  reconciler *r;
  bool full;
  char *key;             /* single pass: "ns/name" */
  enum pass_phase phase;
  int pending;           /* Cube calls outstanding in this phase */
  int64_t t0;            /* monotonic start */

  store_list_result list;/* the sessions (full) or one (single) */
  session *single;

  observation *obs;      /* Cube as seen by this pass */
  char *fail_msg;
  int64_t retry_after_ms;
  sc_time cube_now;

  plan *p;
  sess_act *acts;        /* one per plan session */
  size_t acts_pending;   /* sessions with actions outstanding */
  int early;             /* link writes in flight before the actions */
} pass;

typedef struct call {
  pass *ps;
  size_t si;             /* index of the session, or (size_t)-1 */
  const plan_action *a;
  int stage;             /* 0 confirm GET / first call, 1 the mutation */
  int64_t t0;
  cube_op op;
  char observed_state[16];
  char tenant_seen[129];
  int get_status;        /* the confirming GET's HTTP status */
} call;

/* Another process's create claim, as this replica first saw it. The
 * planner lets a create go once the claim is older than the TTL by Cube's
 * clock; the executor also wants to have seen that same claim for the TTL
 * by its own monotonic clock (an interval, never compared with another
 * machine's time). Cube's clock alone is not enough when it runs fast
 * against the claimant's real delays (a simulator at x60, a Cube clock
 * jump): a claimant still inside its create call would get a duplicate. */
typedef struct claim_seen {
  char key[300];
  char *by;              /* the claim's "by", whole (owned) */
  sc_time at;
  int64_t first_mono;
} claim_seen;
#define CLAIMS_SEEN_MAX 1024

/* A create Cube refused for good (a 4xx other than 404, 409 and 429):
 * it is tried again at most once per resync for the same generation, so
 * a bad template does not turn every status write's watch event into
 * another create. Local monotonic time only schedules (rule 1). */
typedef struct create_refusal {
  char key[300];
  int64_t generation;
  int64_t at_mono;
} create_refusal;
#define CREATE_REFUSALS_MAX 1024
#define CLAIM_LOCAL_WAIT_MS (CUBE_TIMEOUT_MS + 5000)

struct reconciler {
  reconciler_opts o;
  work_queue *q;
  struct event *heartbeat;
  struct event *resync;
  struct event *qtimer;
  struct event *wtimer;  /* the next try to start the store watch */
  int64_t watch_backoff_ms;
  store_watch *watch;
  bool watch_starting;   /* its list is in flight */
  bool stopping;
  bool ready;
  bool done;
  bool failed;         /* --once: the pass did not complete */
  bool full_pending;
  pass *full;
  int singles;
  int64_t last_beat;
  int64_t last_full_done;
  bool store_ok;
  bool cube_key_refused; /* Cube answered 401/403 to every recent call */
  char last_fail_why[SC_ERRBUF_SIZE + 80]; /* the last full pass's failure */
  cube_dialect dialect;
  char identity[96];    /* status.createIntent.by: replica#random */
  recorder rec;        /* events (kube store); none by default */
  bool follower;       /* leader election: not the leader, do not act */
  plan_scratch *scratch; /* the planner's arrays, kept across passes */
  claim_seen *seen;      /* foreign create claims, first seen (mono) */
  size_t n_seen;
  create_refusal *refused; /* creates Cube refused for good */
  size_t n_refused;
  /* store_check_identity() failed: no pass starts (store_still_ours) */
  bool store_lost;
  char store_lost_why[SC_ERRBUF_SIZE];
};

static void pump(reconciler *r);
static void pass_finish(pass *ps);
static void act_done(pass *ps, size_t si);

/* ------------------------------------------------------------------ */
/* metrics */

static const double dur_buckets[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
                                     0.25,  0.5,   1,    2.5,   5,    10,
                                     30,    60,    120};

sc_err reconciler_declare_metrics(metrics *m)
{
  static const struct {
    const char *name;
    metric_type t;
    const char *help;
  } fams[] = {
    {"session_controller_reconcile_total", METRIC_COUNTER,
     "Session reconciles by result."},
    {"session_controller_reconcile_duration_seconds", METRIC_HISTOGRAM,
     "Time of a single-session reconcile."},
    {"session_controller_pass_duration_seconds", METRIC_HISTOGRAM,
     "Time of a full reconcile pass, actions included."},
    {"session_controller_cube_requests_total", METRIC_COUNTER,
     "Cube API calls by operation and HTTP status (0: no answer)."},
    {"session_controller_cube_request_duration_seconds", METRIC_HISTOGRAM,
     "Cube API call latency by operation."},
    {"session_controller_actions_total", METRIC_COUNTER,
     "Planned actions by type and result."},
    {"session_controller_sessions", METRIC_GAUGE,
     "Sessions by status phase, as of the last full pass."},
    {"session_controller_sandboxes", METRIC_GAUGE,
     "Managed sandboxes by state, as of the last full pass."},
    {"session_controller_orphans_reclaimed_total", METRIC_COUNTER,
     "Orphan sandboxes deleted."},
    {"session_controller_duplicates_deleted_total", METRIC_COUNTER,
     "Duplicate sandboxes deleted."},
    {"session_controller_list_truncated_total", METRIC_COUNTER,
     "Cube lists that may have been truncated (orphan deletion withheld)."},
    {"session_controller_cube_list_page_retries_total", METRIC_COUNTER,
     "List pages asked again after a transient failure."},
    {"session_controller_create_claims_lost_total", METRIC_COUNTER,
     "Creates not made because another writer changed the session first."},
    {"session_controller_delete_guard_tripped_total", METRIC_COUNTER,
     "Passes whose orphan deletions the blast-radius guard withheld."},
    {"session_controller_sessions_invalid", METRIC_GAUGE,
     "Sessions that fail validation (Ready=False/InvalidSpec), as of the "
     "last full pass."},
    {"session_controller_queue_depth", METRIC_GAUGE,
     "Sessions waiting in the work queue (ready and delayed)."},
    {"session_controller_build_info", METRIC_GAUGE,
     "Build information; always 1."},
  };
  size_t i;
  for(i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
    sc_err err = metrics_declare(m, fams[i].name, fams[i].t, fams[i].help,
                                 fams[i].t == METRIC_HISTOGRAM ? dur_buckets
                                                               : NULL,
                                 fams[i].t == METRIC_HISTOGRAM
                                   ? sizeof(dur_buckets) / sizeof(double)
                                   : 0);
    if(err)
      return err;
  }
  metrics_set(m, "session_controller_build_info",
              "version=\"" SC_VERSION "\"", 1);
  return SC_OK;
}

static void count_action(reconciler *r, const plan_action *a,
                         const char *result)
{
  char l[128];
  snprintf(l, sizeof(l), "action=\"%s\",result=\"%s\"",
           a->type == PLAN_DELETE ? plan_delete_kind_name(a->del_kind)
                                  : plan_action_type_name(a->type),
           result);
  metrics_add(r->o.m, "session_controller_actions_total", l, 1);
  if(a->type == PLAN_DELETE && !strcmp(result, "ok")) {
    if(a->del_kind == PLAN_DEL_ORPHAN)
      metrics_add(r->o.m, "session_controller_orphans_reclaimed_total", NULL,
                  1);
    else if(a->del_kind == PLAN_DEL_DUPLICATE)
      metrics_add(r->o.m, "session_controller_duplicates_deleted_total",
                  NULL, 1);
  }
}

/* ------------------------------------------------------------------ */
/* passes */

static void pass_free(pass *ps)
{
  size_t i;
  if(!ps)
    return;
  store_list_result_free(&ps->list);
  session_free(ps->single);
  observation_free(ps->obs);
  if(ps->acts && ps->p)
    for(i = 0; i < ps->p->n_sessions; i++) {
      session_status_clear(&ps->acts[i].st);
      session_status_clear(&ps->acts[i].stored);
      free(ps->acts[i].rv);
    }
  free(ps->acts);
  plan_free(ps->p);
  free(ps->fail_msg);
  free(ps->key);
  free(ps);
}

static session **pass_sessions(pass *ps, size_t *n)
{
  if(ps->full) {
    *n = ps->list.n;
    return ps->list.items;
  }
  *n = ps->single ? 1 : 0;
  return &ps->single;
}

static void pass_fail(pass *ps, const char *msg, int64_t retry_after_ms)
{
  if(!ps->fail_msg)
    ps->fail_msg = strdup(msg);
  if(retry_after_ms > ps->retry_after_ms)
    ps->retry_after_ms = retry_after_ms;
}

/* ------------------------------------------------------------------ */
/* actions */

/* the index of the plan session an action belongs to: by identity, since a
 * tombstone and a re-created object may share namespace/name */
static size_t find_session(pass *ps, const session *s)
{
  size_t i;
  if(!s)
    return (size_t)-1;
  for(i = 0; i < ps->p->n_sessions; i++)
    if(ps->p->sessions[i].s == s)
      return i;
  return (size_t)-1;
}

static void audit_action(pass *ps, call *c, const char *outcome,
                         int http_status, const char *message)
{
  const plan_action *a = c->a;
  char key[300] = "";
  audit_entry e;
  if(a->ns && a->name)
    snprintf(key, sizeof(key), "%s/%s", a->ns, a->name);
  memset(&e, 0, sizeof(e));
  e.replica = ps->r->o.replica;
  e.session = a->ns ? key : NULL;
  e.sandbox_id = a->sandbox_id;
  e.action = plan_action_type_name(a->type);
  e.kind = a->type == PLAN_DELETE ? plan_delete_kind_name(a->del_kind) : NULL;
  e.reason = a->reason;
  e.observed_state = c->observed_state[0] ? c->observed_state : NULL;
  e.tenant = c->tenant_seen[0] ? c->tenant_seen : NULL;
  e.cube_now = a->cube_now;
  e.end_at = a->end_at;
  e.http_status = http_status;
  e.outcome = outcome;
  e.message = message;
  audit_record(ps->r->o.au, &e);
}

static void log_action(pass *ps, const plan_action *a, log_level lvl,
                       const char *msg, const char *detail)
{
  char key[300] = "";
  if(a->ns && a->name)
    snprintf(key, sizeof(key), "%s/%s", a->ns, a->name);
  log_kv(ps->r->o.lg, lvl, msg, "action", plan_action_type_name(a->type),
         "session", key[0] ? key : "-", "sandbox",
         a->sandbox_id ? a->sandbox_id : "-", "reason", a->reason, "detail",
         detail ? detail : "", NULL);
}

/* an action ended: fold its effect into the session's status */
static void action_end(call *c, bool ok, const char *new_id,
                       int64_t retry_after_ms, const char *msg)
{
  pass *ps = c->ps;
  const plan_action *a = c->a;
  size_t si = c->si;
  count_action(ps->r, a, ok ? "ok" : "error");
  /* a delete the confirming GET withheld: it saw the sandbox (stage 0) */
  recorder_note_action(&ps->r->rec, ps->r->o.lg, a, ok,
                       !ok && a->type == PLAN_DELETE && c->stage == 0 &&
                         c->observed_state[0], new_id, msg);
  if(ok)
    log_action(ps, a, LOG_INFO, "action done", new_id);
  else
    log_action(ps, a, LOG_WARN, "action failed", msg);
  if(si != (size_t)-1) {
    sess_act *sa = &ps->acts[si];
    if(ok && a->type != PLAN_CONFIRM &&
       !plan_status_after(ps->p->sessions[si].s, a, new_id, &sa->st))
      sa->wants_write = true; /* st carries earlier actions' effects */
    if(!ok || a->type == PLAN_CONFIRM) {
      sa->failed = true;
      if(retry_after_ms > sa->retry_after_ms)
        sa->retry_after_ms = retry_after_ms;
    }
    if(--sa->pending == 0)
      act_done(ps, si);
  }
  free(c);
  if(--ps->pending == 0)
    pass_finish(ps);
}

static void on_mutation(const cube_result *res, void *ud);

static void delete_now(call *c)
{
  pass *ps = c->ps;
  c->stage = 1;
  c->op = CUBE_OP_DELETE;
  c->t0 = sctime_mono_ms();
  if(cube_delete_now(ps->r->o.cube, c->a->sandbox_id, on_mutation, c)) {
    audit_action(ps, c, "failed", 0, "the Cube client refused the call");
    action_end(c, false, NULL, -1, "client refused the call");
  }
}

/* Rule 3 on a GET's answer: may the DELETE go? false: the action ended
 * (done when the sandbox is gone, else skipped or failed, audited). */
static bool delete_may_go(call *c, const cube_result *res)
{
  pass *ps = c->ps;
  reconciler *r = ps->r;
  const plan_action *a = c->a;
  const char *managed, *tenant, *uid;
  observe_count_call(r->o.m, CUBE_OP_GET, res, c->t0);
  if(res->err == SC_ERR_NOT_FOUND) {
    audit_action(ps, c, "already-gone", (int)res->http_status,
                 "the confirming GET found no sandbox");
    action_end(c, true, NULL, -1, NULL);
    return false;
  }
  if(res->err) {
    audit_action(ps, c, "failed", (int)res->http_status, res->message);
    action_end(c, false, NULL, res->retry_after_ms, res->message);
    return false;
  }
  snprintf(c->observed_state, sizeof(c->observed_state), "%s",
           cube_sb_state_name(res->sandbox.state));
  c->get_status = (int)res->http_status;
  managed = sc_kvlist_get(&res->sandbox.metadata, SESSION_TAG_MANAGED_BY);
  tenant = sc_kvlist_get(&res->sandbox.metadata, SESSION_TAG_TENANT_ID);
  if(tenant)
    snprintf(c->tenant_seen, sizeof(c->tenant_seen), "%s", tenant);
  if(managed && !plan_config_owns(&r->o.plan, managed)) {
    audit_action(ps, c, "skipped", (int)res->http_status,
                 "the sandbox is now tagged as managed by another controller");
    action_end(c, false, NULL, -1, "managed-by tag changed");
    return false;
  }
  if(a->expect_tenant && tenant && strcmp(tenant, a->expect_tenant)) {
    audit_action(ps, c, "skipped", (int)res->http_status,
                 "the sandbox's tenant tag no longer matches");
    action_end(c, false, NULL, -1, "tenant tag changed");
    return false;
  }
  uid = sc_kvlist_get(&res->sandbox.metadata, SESSION_TAG_SESSION_UID);
  if(a->s && uid && a->s->meta.uid && *a->s->meta.uid &&
     strcmp(uid, a->s->meta.uid)) {
    audit_action(ps, c, "skipped", (int)res->http_status,
                 "the sandbox was created for another object of this name "
                 "(its lea.session_uid differs)");
    action_end(c, false, NULL, -1, "session uid tag differs");
    return false;
  }
  if(a->del_kind == PLAN_DEL_ORPHAN && !managed) {
    audit_action(ps, c, "skipped", (int)res->http_status,
                 "the orphan no longer carries our managed-by tag");
    action_end(c, false, NULL, -1, "managed-by tag gone");
    return false;
  }
  if(a->expect_paused && res->sandbox.state != CUBE_SB_PAUSED) {
    audit_action(ps, c, "skipped", (int)res->http_status,
                 "the sandbox is no longer paused (resumed since the plan)");
    /* not a failure: the plan was right to stop; look again soon */
    action_end(c, false, NULL, -1, "no longer paused");
    return false;
  }
  if(a->expect_paused && res->sandbox.end_at != a->end_at) {
    /* paused, but not the pause the plan measured: a user's request
     * resumed it and it paused again since (e2b's endAt is the pause
     * time; Cube's moves with activity). Its age must be measured anew. */
    audit_action(ps, c, "skipped", (int)res->http_status,
                 "the sandbox paused again since the plan (endAt changed)");
    action_end(c, false, NULL, -1, "paused again since the plan");
    return false;
  }
  return true;
}

/* the last look, right before the DELETE (cube_get_now, after the store
 * re-read): the DELETE leaves from its callback */
static void on_delete_final(const cube_result *res, void *ud)
{
  call *c = ud;
  if(delete_may_go(c, res))
    delete_now(c);
}

/* Rule 3 for the store's side: the plan may be seconds old when its
 * delete is due (its actions wait for the token bucket), and the session's
 * spec may have changed since (reclaimAfter raised, state back to Running,
 * wake bumped). So after the first GET (which waited its turn in the
 * queue) the session is read again from the store: a different
 * generation means the plan's reason may no longer hold, so the delete is
 * skipped and the session looked at again. A session gone or deleted (a
 * tombstone) justifies the delete whatever the plan said. Then a second
 * GET, ahead of the queue, takes the last look: the store read (one API
 * round trip with --store kube, a turn of the loop with SQLite) is not
 * left between the look and the DELETE for a user's request to slip in. */
static void on_delete_reread(store_reply *rep, void *ud)
{
  call *c = ud;
  const plan_action *a = c->a;
  char why[SC_ERRBUF_SIZE + 80];
  why[0] = '\0';
  if(rep->err && rep->err != SC_ERR_NOT_FOUND)
    snprintf(why, sizeof(why), "the store could not be read to confirm the "
             "session: %s", rep->message);
  else if(!rep->err && !rep->obj->meta.deletion_timestamp &&
          rep->obj->meta.generation != a->s->meta.generation)
    snprintf(why, sizeof(why), "the session's spec changed since the plan "
             "(generation %lld, now %lld)", (long long)a->s->meta.generation,
             (long long)rep->obj->meta.generation);
  if(why[0]) {
    audit_action(c->ps, c, "skipped", c->get_status, why);
    action_end(c, false, NULL, -1, why);
    return;
  }
  c->t0 = sctime_mono_ms();
  if(cube_get_now(c->ps->r->o.cube, a->sandbox_id, on_delete_final, c)) {
    audit_action(c->ps, c, "failed", 0, "the Cube client refused the call");
    action_end(c, false, NULL, -1, "client refused the call");
  }
}

static void on_delete_confirm(const cube_result *res, void *ud)
{
  call *c = ud;
  pass *ps = c->ps;
  const plan_action *a = c->a;
  if(!delete_may_go(c, res))
    return;
  if(a->s && !a->s->meta.deletion_timestamp) {
    /* orphans have no session; tombstones stay tombstones */
    store_reply rep;
    sc_errbuf eb;
    eb.msg[0] = '\0';
    memset(&rep, 0, sizeof(rep));
    rep.err = store_get_async(ps->r->o.st, a->s->meta.namespace_,
                              a->s->meta.name, on_delete_reread, c, &eb);
    if(rep.err) {
      rep.message = eb.msg; /* not sent: the same skip as a failed read */
      on_delete_reread(&rep, c);
    }
    return;
  }
  delete_now(c);
}

/* The GET before a set-timeout: Cube moves the endAt of a paused sandbox
 * when its timeout changes (endAt = last activity + timeout), and endAt is
 * the reclaim clock of a paused sandbox. A plan may be seconds old when
 * its set-timeout runs, and the sandbox may have idle-paused meanwhile:
 * the chaos suite saw reclaims measured from an endAt pulled back by a
 * shorter timeout set on an already paused sandbox. So the timeout is set
 * only on a sandbox this GET saw running, right after it. */
static void on_timeout_confirm(const cube_result *res, void *ud)
{
  call *c = ud;
  pass *ps = c->ps;
  reconciler *r = ps->r;
  const plan_action *a = c->a;
  observe_count_call(r->o.m, CUBE_OP_GET, res, c->t0);
  if(res->err) {
    action_end(c, false, NULL, res->retry_after_ms, res->message);
    return;
  }
  if(res->sandbox.state != CUBE_SB_RUNNING) {
    /* not a failure of Cube's: look again when it runs */
    action_end(c, false, NULL, -1,
               "the sandbox is no longer running: its timeout is set when "
               "it runs again (a paused sandbox's endAt is its reclaim "
               "clock)");
    return;
  }
  c->op = CUBE_OP_SET_TIMEOUT;
  c->t0 = sctime_mono_ms();
  if(cube_set_timeout_now(r->o.cube, a->sandbox_id, a->timeout_s, on_mutation,
                          c))
    action_end(c, false, NULL, -1, "client refused the call");
}

static void on_pause_check(const cube_result *res, void *ud)
{
  call *c = ud;
  observe_count_call(c->ps->r->o.m, CUBE_OP_GET, res, c->t0);
  if(!res->err && (res->sandbox.state == CUBE_SB_PAUSED ||
                   res->sandbox.state == CUBE_SB_PAUSING)) {
    snprintf(c->observed_state, sizeof(c->observed_state), "%s",
             cube_sb_state_name(res->sandbox.state));
    audit_action(c->ps, c, "done", (int)res->http_status,
                 "already paused (confirmed by GET)");
    action_end(c, true, NULL, -1, NULL);
    return;
  }
  audit_action(c->ps, c, "failed", (int)res->http_status,
               res->err ? res->message : "pause refused and not paused");
  action_end(c, false, NULL, res->retry_after_ms,
             res->err ? res->message : "pause refused and not paused");
}

/* A create whose answer never came or was cut after the request was sent
 * (a reset, a timeout, a 2xx with a broken body) may have made a sandbox
 * all the same (E2B's create is not idempotent; a 4xx or 5xx answer says
 * it did not, a refused connection sent nothing). The claim then stops
 * being this process's own: "by" gets " (outcome unknown)", so the
 * planner of every replica, this one included, waits out the claim's TTL
 * before another create, and a sandbox made by the lost call is found by
 * its tags and adopted instead of duplicated. */
static void claim_outcome_unknown(call *c)
{
  pass *ps = c->ps;
  sess_act *sa;
  char by[160];
  char *d;
  if(c->si == (size_t)-1)
    return;
  sa = &ps->acts[c->si];
  if(!sa->st.create_intent_at)
    return;
  snprintf(by, sizeof(by), "%s (outcome unknown)", ps->r->identity);
  d = strdup(by);
  if(!d)
    return;
  free(sa->st.create_intent_by);
  sa->st.create_intent_by = d;
}

/* Did Cube refuse the call for good? 4xx but 404 (gone), 409 (a state
 * race) and 429 (rate limit): the same request fails the same way until
 * the spec (or Cube's configuration, or the key) changes. */
static bool refused_for_good(long http_status)
{
  return http_status >= 400 && http_status < 500 && http_status != 404 &&
         http_status != 409 && http_status != 429;
}

static create_refusal *refusal_find(reconciler *r, const char *key)
{
  size_t i;
  for(i = 0; i < r->n_refused; i++)
    if(!strcmp(r->refused[i].key, key))
      return &r->refused[i];
  return NULL;
}

static void refusal_forget(reconciler *r, const char *key)
{
  create_refusal *e = refusal_find(r, key);
  if(e)
    *e = r->refused[--r->n_refused];
}

static void refusal_note(reconciler *r, const char *key, int64_t generation)
{
  create_refusal *e = refusal_find(r, key);
  if(!e) {
    if(!r->refused &&
       !(r->refused = calloc(CREATE_REFUSALS_MAX, sizeof(*r->refused))))
      return;
    if(r->n_refused == CREATE_REFUSALS_MAX)
      r->n_refused--; /* full: the last entry makes room (it retries) */
    e = &r->refused[r->n_refused++];
    snprintf(e->key, sizeof(e->key), "%s", key);
  }
  e->generation = generation;
  e->at_mono = sctime_mono_ms();
}

/* ms until the next try of a refused create of s; 0: it may go now */
static int64_t refusal_wait(reconciler *r, const session *s)
{
  char key[300];
  create_refusal *e;
  int64_t left;
  session_key(s, key, sizeof(key));
  e = refusal_find(r, key);
  if(!e || e->generation != s->meta.generation)
    return 0;
  left = e->at_mono + r->o.resync_ms - sctime_mono_ms();
  return left > 0 ? left : 0;
}

/* Cube refused the create for good: the session says so (Ready=False,
 * CreateFailed, Cube's answer), on every store, and its claim goes (no
 * sandbox was made). The planner keeps that Ready until a create works
 * or the generation moves. */
static void create_refused(call *c, const cube_result *res)
{
  pass *ps = c->ps;
  reconciler *r = ps->r;
  const session *s;
  sess_act *sa;
  session_condition cond;
  char key[300], msg[SC_ERRBUF_SIZE + 200];
  if(c->si == (size_t)-1)
    return;
  sa = &ps->acts[c->si];
  s = ps->p->sessions[c->si].s;
  session_key(s, key, sizeof(key));
  refusal_note(r, key, s->meta.generation);
  if(res->http_status == 401 || res->http_status == 403)
    snprintf(msg, sizeof(msg), "Cube refused the API key (HTTP %ld): check "
             "--cube-api-key-file or CUBE_API_KEY; tried again once per "
             "resync: %s", res->http_status, res->message);
  else
    snprintf(msg, sizeof(msg), "Cube refused the create (HTTP %ld); tried "
             "again once per resync, or when the spec changes: %s",
             res->http_status, res->message);
  memset(&cond, 0, sizeof(cond));
  cond.type = "Ready";
  cond.status = "False";
  cond.reason = "CreateFailed";
  cond.message = msg;
  cond.last_transition_time = ps->cube_now;
  cond.observed_generation = s->meta.generation;
  if(session_status_set_condition(&sa->st, &cond))
    return;
  sa->st.phase = SESSION_PHASE_FAILED;
  free(sa->st.create_intent_by);
  sa->st.create_intent_by = NULL;
  sa->st.create_intent_at = 0;
  sa->wants_write = true;
}

static void on_mutation(const cube_result *res, void *ud)
{
  call *c = ud;
  pass *ps = c->ps;
  reconciler *r = ps->r;
  const plan_action *a = c->a;
  observe_count_call(r->o.m, c->op, res, c->t0);
  switch(a->type) {
  case PLAN_CREATE:
    if(res->err) {
      if(res->maybe_done)
        claim_outcome_unknown(c);
      else if(refused_for_good(res->http_status))
        create_refused(c, res);
      action_end(c, false, NULL, res->retry_after_ms, res->message);
    }
    else {
      char key[300];
      if(c->si != (size_t)-1) {
        session_key(ps->p->sessions[c->si].s, key, sizeof(key));
        refusal_forget(r, key);
      }
      action_end(c, true, res->sandbox_id, -1, NULL);
    }
    return;
  case PLAN_PAUSE:
    if(!res->err && res->already) {
      /* 409 / Cube's 500 "already paused": look before concluding */
      c->t0 = sctime_mono_ms();
      if(cube_get(r->o.cube, a->sandbox_id, on_pause_check, c))
        action_end(c, false, NULL, -1, "client refused the call");
      return;
    }
    audit_action(ps, c, res->err ? "failed" : "done", (int)res->http_status,
                 res->err ? res->message : NULL);
    action_end(c, !res->err, NULL, res->retry_after_ms, res->message);
    return;
  case PLAN_DELETE:
    audit_action(ps, c, res->err ? "failed" : "done", (int)res->http_status,
                 res->err ? res->message
                          : res->already_gone ? "already gone" : NULL);
    action_end(c, !res->err, NULL, res->retry_after_ms, res->message);
    return;
  case PLAN_SET_TIMEOUT:
  case PLAN_RESUME:
  case PLAN_KEEPALIVE:
  case PLAN_CONFIRM:
    action_end(c, !res->err, NULL, res->retry_after_ms, res->message);
    return;
  }
}

static sc_err create_metadata(reconciler *r, const session *s, sc_kvlist *md)
{
  sc_err err = sc_kvlist_copy(md, &s->spec.sandbox_metadata);
  if(!err)
    err = sc_kvlist_set(md, SESSION_TAG_SESSION_ID,
                        session_eff_session_id(s));
  if(!err)
    err = sc_kvlist_set(md, SESSION_TAG_TENANT_ID, session_eff_tenant_id(s));
  if(!err)
    err = sc_kvlist_set(md, SESSION_TAG_MANAGED_BY,
                        r->o.plan.controller_name);
  /* rule 12: the sandbox belongs to this object, not to its name */
  if(!err && s->meta.uid && *s->meta.uid)
    err = sc_kvlist_set(md, SESSION_TAG_SESSION_UID, s->meta.uid);
  if(!err && s->spec.template_id)
    err = sc_kvlist_set(md, SESSION_TAG_TEMPLATE, s->spec.template_id);
  return err;
}

/* Before a create: write status.createIntent (this process, Cube's clock)
 * by compare-and-set, so replicas reacting to the same event wait for
 * this create instead of making a duplicate (the planner holds back a
 * create while another process's claim is fresh). SC_ERR_CONFLICT: some
 * other writer came first; the session is looked at again. */
/* ms this replica has seen s's current claim; 0 the first time */
static int64_t claim_seen_for(reconciler *r, const session *s, int64_t now)
{
  const session_status *st = &s->status;
  char key[300];
  size_t i, free_i = r->n_seen;
  int64_t ttl = r->o.plan.create_intent_ttl_ms;
  session_key(s, key, sizeof(key));
  for(i = 0; i < r->n_seen; i++) {
    claim_seen *e = &r->seen[i];
    if(!strcmp(e->key, key)) {
      if(e->at == st->create_intent_at &&
         sc_str_eq0(e->by, st->create_intent_by))
        return now - e->first_mono;
      free_i = i; /* a new claim of the same session */
      break;
    }
    if(free_i == r->n_seen && now - e->first_mono > 4 * ttl)
      free_i = i; /* long done: reuse */
  }
  if(free_i == r->n_seen) {
    if(r->n_seen == CLAIMS_SEEN_MAX)
      return ttl; /* table full: Cube's clock alone decides */
    r->n_seen++;
  }
  snprintf(r->seen[free_i].key, sizeof(r->seen[free_i].key), "%s", key);
  free(r->seen[free_i].by);
  r->seen[free_i].by = st->create_intent_by ? strdup(st->create_intent_by)
                                            : NULL;
  if(st->create_intent_by && !r->seen[free_i].by) {
    r->seen[free_i].key[0] = '\0'; /* out of memory: forget the entry */
    return 0;
  }
  r->seen[free_i].at = st->create_intent_at;
  r->seen[free_i].first_mono = now;
  return 0;
}

static sc_err write_early(pass *ps, size_t si, session_status *st,
                          call *c, sc_errbuf *eb);

/* Before a create: the claim (see above claim_seen_for). The create goes
 * out from claim_written() once the store took the claim. */
static sc_err claim_create(pass *ps, call *c, sc_errbuf *eb)
{
  reconciler *r = ps->r;
  sess_act *sa = &ps->acts[c->si];
  session_status st;
  sc_err err = session_status_copy(&st, &sa->st);
  if(err)
    return err;
  free(st.create_intent_by);
  st.create_intent_by = strdup(r->identity);
  st.create_intent_at = ps->cube_now;
  if(!st.create_intent_by) {
    session_status_clear(&st);
    return SC_ERR_NOMEM;
  }
  return write_early(ps, c->si, &st, c, eb);
}

static void action_refused(pass *ps, call *c, const char *result,
                           int64_t retry_after_ms);
static void start_actions(pass *ps);

/* the claim is written (err SC_OK) or not: create, or look again */
static void claim_written(call *c, sc_err err, const char *msg)
{
  pass *ps = c->ps;
  reconciler *r = ps->r;
  const plan_action *a = c->a;
  const session *s = ps->p->sessions[c->si].s;
  sc_kvlist md = {0};
  cube_create_req req;
  if(err) {
    log_action(ps, a, err == SC_ERR_CONFLICT ? LOG_DEBUG : LOG_WARN,
               err == SC_ERR_CONFLICT
                 ? "create claim lost: the session changed; looking again"
                 : "create claim not written: no create",
               msg);
    if(err == SC_ERR_CONFLICT)
      metrics_add(r->o.m, "session_controller_create_claims_lost_total",
                  NULL, 1);
    action_refused(ps, c, err == SC_ERR_CONFLICT ? "conflict" : "error", -1);
    return;
  }
  err = create_metadata(r, s, &md);
  if(!err) {
    req.template_id = s->spec.template_id;
    req.timeout_s = a->timeout_s;
    req.metadata = &md;
    req.env_vars = &s->spec.env_vars;
    c->op = CUBE_OP_CREATE;
    c->t0 = sctime_mono_ms();
    err = cube_create(r->o.cube, &req, on_mutation, c);
  }
  sc_kvlist_clear(&md);
  if(err)
    action_refused(ps, c, "error", -1);
}

typedef struct early_write {
  pass *ps;
  size_t si;
  call *c;               /* the create whose claim this is, or NULL */
  session_status st;
} early_write;

static void on_early_written(store_reply *rep, void *ud)
{
  early_write *w = ud;
  pass *ps = w->ps;
  sess_act *sa = &ps->acts[w->si];
  if(!rep->err) {
    /* act_done() writes on top of what the store now holds */
    free(sa->rv);
    sa->rv = rep->new_version;
    rep->new_version = NULL;
    session_status_clear(&sa->stored);
    if(session_status_copy(&sa->stored, &w->st))
      sa->failed = true; /* out of memory: the status write is redone */
    session_status_clear(&sa->st);
    sa->st = w->st; /* moved: later effects build on it */
    memset(&w->st, 0, sizeof(w->st));
  }
  if(w->c)
    claim_written(w->c, rep->err, rep->message);
  else {
    if(rep->err)
      log_kv(ps->r->o.lg, LOG_DEBUG, "early link write failed", "session",
             ps->p->sessions[w->si].s->meta.name, "error", rep->message,
             NULL);
    if(--ps->early == 0)
      start_actions(ps);
  }
  session_status_clear(&w->st);
  free(w);
}

/* Write st (taken over, cleared on every path) by compare-and-set before
 * the session's actions: the create claim (c, the create), and the link
 * to a sandbox the plan adopted (c NULL; ps->early counts it). Once it is
 * written, sa->rv and sa->stored are what the store holds, so act_done()
 * writes on top of them; sa->st becomes st. An error return: nothing
 * was sent and no callback comes. */
static sc_err write_early(pass *ps, size_t si, session_status *st, call *c,
                          sc_errbuf *eb)
{
  reconciler *r = ps->r;
  const session *s = ps->p->sessions[si].s;
  sess_act *sa = &ps->acts[si];
  early_write *w = calloc(1, sizeof(*w));
  sc_err err;
  if(!w) {
    session_status_clear(st);
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  w->ps = ps;
  w->si = si;
  w->c = c;
  w->st = *st;
  memset(st, 0, sizeof(*st));
  err = store_update_status_async(r->o.st, s->meta.namespace_, s->meta.name,
                                  sa->rv ? sa->rv : s->meta.resource_version,
                                  &w->st, on_early_written, w, eb);
  if(err) {
    session_status_clear(&w->st);
    free(w);
    return err;
  }
  if(!c)
    ps->early++;
  return SC_OK;
}

/* An action that ends before any call: counted under result, its session
 * looked at again after retry_after_ms (-1: the usual backoff). */
static void action_refused(pass *ps, call *c, const char *result,
                           int64_t retry_after_ms)
{
  count_action(ps->r, c->a, result);
  if(c->si != (size_t)-1) {
    sess_act *sa = &ps->acts[c->si];
    sa->failed = true;
    if(retry_after_ms > sa->retry_after_ms)
      sa->retry_after_ms = retry_after_ms;
    if(--sa->pending == 0)
      act_done(ps, c->si);
  }
  free(c);
  if(--ps->pending == 0)
    pass_finish(ps);
}

static void start_action(pass *ps, const plan_action *a)
{
  reconciler *r = ps->r;
  call *c = calloc(1, sizeof(*c));
  sc_err err = SC_OK;
  if(!c)
    return;
  c->ps = ps;
  c->a = a;
  c->si = find_session(ps, a->s);
  c->t0 = sctime_mono_ms();
  ps->pending++;
  if(c->si != (size_t)-1) {
    ps->acts[c->si].pending++;
    if(a->type == PLAN_CONFIRM)
      ps->acts[c->si].has_confirm = true;
  }
  if(r->o.dry_run && a->type != PLAN_CONFIRM) {
    log_action(ps, a, LOG_INFO, "dry-run: not calling Cube", NULL);
    if(a->type == PLAN_DELETE || a->type == PLAN_PAUSE)
      audit_action(ps, c, "dry-run", 0, NULL);
    count_action(r, a, "dry-run");
    if(c->si != (size_t)-1 && --ps->acts[c->si].pending == 0)
      act_done(ps, c->si);
    free(c);
    ps->pending--;
    return;
  }
  log_action(ps, a, LOG_INFO, "action", NULL);
  switch(a->type) {
  case PLAN_CREATE: {
    const session *s = ps->p->sessions[c->si].s;
    sc_errbuf ceb;
    ceb.msg[0] = '\0';
    if(s->status.create_intent_at &&
       !sc_str_eq0(s->status.create_intent_by, r->identity)) {
      /* long enough for any claimant to finish its create call (it times
       * out after CUBE_TIMEOUT_MS) and write the link */
      int64_t ttl = r->o.plan.create_intent_ttl_ms < CLAIM_LOCAL_WAIT_MS
                      ? r->o.plan.create_intent_ttl_ms
                      : CLAIM_LOCAL_WAIT_MS;
      int64_t seen = claim_seen_for(r, s, sctime_mono_ms());
      if(seen < ttl) {
        char why[200];
        snprintf(why, sizeof(why), "waiting: the create claim of %s is "
                 "old by Cube's clock but seen here for %lld ms only",
                 s->status.create_intent_by ? s->status.create_intent_by
                                            : "(unnamed)",
                 (long long)seen);
        log_action(ps, a, LOG_INFO, why, NULL);
        action_refused(ps, c, "waiting", ttl - seen);
        return;
      }
    }
    {
      int64_t wait = refusal_wait(r, s);
      if(wait > 0) {
        log_action(ps, a, LOG_DEBUG, "waiting: Cube refused this create for "
                   "good; it is tried again once per resync", NULL);
        action_refused(ps, c, "waiting", wait);
        return;
      }
    }
    err = claim_create(ps, c, &ceb);
    if(err) {
      log_action(ps, a, LOG_WARN, "create claim not written: no create",
                 ceb.msg);
      break;
    }
    return; /* claim_written() goes on */
  }
  case PLAN_PAUSE:
    c->op = CUBE_OP_PAUSE;
    err = cube_pause(r->o.cube, a->sandbox_id, on_mutation, c);
    break;
  case PLAN_RESUME:
  case PLAN_KEEPALIVE:
    c->op = CUBE_OP_CONNECT;
    err = cube_connect(r->o.cube, a->sandbox_id, a->timeout_s, on_mutation,
                       c);
    break;
  case PLAN_SET_TIMEOUT:
    c->op = CUBE_OP_GET;
    err = cube_get(r->o.cube, a->sandbox_id, on_timeout_confirm, c);
    break;
  case PLAN_DELETE:
    c->op = CUBE_OP_GET;
    err = cube_get(r->o.cube, a->sandbox_id, on_delete_confirm, c);
    break;
  case PLAN_CONFIRM:
    c->op = CUBE_OP_GET;
    err = cube_get(r->o.cube, a->sandbox_id, on_mutation, c);
    break;
  }
  if(err) {
    /* the client refused: count as a failed action, synchronously safe
     * (ps->pending is held while actions start) */
    action_refused(ps, c, err == SC_ERR_CONFLICT ? "conflict" : "error", -1);
  }
}

static void schedule_session(reconciler *r, pass *ps, size_t si,
                             const char *key)
{
  const plan_session *pl = &ps->p->sessions[si];
  sess_act *sa = &ps->acts[si];
  int64_t now = sctime_mono_ms();
  if(sa->failed) {
    if(sa->retry_after_ms > 0)
      queue_add_retry_after(r->q, key, sa->retry_after_ms, now);
    else
      queue_add_rate_limited(r->q, key, now, NULL);
    return;
  }
  queue_forget(r->q, key);
  if(pl->next_due && ps->cube_now) {
    /* Cube's clock says when; the local monotonic clock only waits */
    int64_t d = pl->next_due - ps->cube_now;
    queue_add_after(r->q, key, d > 0 ? d + 1000 : 1000, now);
  }
}

/* the end of session si's turn in this pass: counted, scheduled */
static void act_finish(pass *ps, size_t si, const char *result)
{
  reconciler *r = ps->r;
  const session *s = ps->p->sessions[si].s;
  char key[300], l[40];
  snprintf(key, sizeof(key), "%s/%s", s->meta.namespace_, s->meta.name);
  if(ps->acts[si].failed && !strcmp(result, "ok"))
    result = "error";
  snprintf(l, sizeof(l), "result=\"%s\"", result);
  metrics_add(r->o.m, "session_controller_reconcile_total", l, 1);
  schedule_session(r, ps, si, key);
}

typedef struct status_write {
  pass *ps;
  size_t si;
} status_write;

static void on_purged(store_reply *rep, void *ud)
{
  status_write *w = ud;
  pass *ps = w->ps;
  size_t si = w->si;
  const session *s = ps->p->sessions[si].s;
  const char *result = "ok";
  free(w);
  if(rep->err && rep->err != SC_ERR_NOT_FOUND) {
    log_kv(ps->r->o.lg, LOG_WARN, "purge of tombstone failed", "session",
           s->meta.name, "namespace", s->meta.namespace_, "error",
           rep->message, NULL);
    ps->acts[si].failed = true;
    result = rep->err == SC_ERR_CONFLICT ? "conflict" : "error";
  }
  else
    log_kv(ps->r->o.lg, LOG_INFO, "tombstone purged", "session",
           s->meta.name, "namespace", s->meta.namespace_, NULL);
  act_finish(ps, si, result);
  if(--ps->pending == 0)
    pass_finish(ps);
}

static void on_status_written(store_reply *rep, void *ud)
{
  status_write *w = ud;
  pass *ps = w->ps;
  size_t si = w->si;
  reconciler *r = ps->r;
  const session *s = ps->p->sessions[si].s;
  char key[300];
  free(w);
  snprintf(key, sizeof(key), "%s/%s", s->meta.namespace_, s->meta.name);
  if(rep->err == SC_ERR_CONFLICT) {
    /* someone wrote first: re-read and recompute, never overwrite */
    log_kv(r->o.lg, LOG_DEBUG, "status conflict, requeued", "session", key,
           NULL);
    queue_add(r->q, key);
    metrics_add(r->o.m, "session_controller_reconcile_total",
                "result=\"conflict\"", 1);
  }
  else {
    if(rep->err && rep->err != SC_ERR_NOT_FOUND) {
      log_kv(r->o.lg, LOG_WARN, "status write failed", "session", key,
             "error", rep->message, NULL);
      ps->acts[si].failed = true;
    }
    act_finish(ps, si, "ok");
  }
  if(--ps->pending == 0)
    pass_finish(ps);
}

/* all actions of session si are finished: write its status once (or
 * purge its tombstone); the pass waits for the write (ps->pending) */
static void act_done(pass *ps, size_t si)
{
  reconciler *r = ps->r;
  const session *s = ps->p->sessions[si].s;
  sess_act *sa = &ps->acts[si];
  status_write *w;
  sc_errbuf eb;
  sc_err err;
  bool purge = s->meta.deletion_timestamp && !sa->failed &&
               !sa->has_confirm && sa->st.phase == SESSION_PHASE_ENDED &&
               !r->o.dry_run;
  eb.msg[0] = '\0';
  if(!purge && (!(sa->wants_write || sa->rv) ||
                session_status_equal(&sa->st,
                                     sa->rv ? &sa->stored : &s->status))) {
    act_finish(ps, si, "ok");
    return;
  }
  w = calloc(1, sizeof(*w));
  if(!w) {
    sa->failed = true;
    act_finish(ps, si, "error");
    return;
  }
  w->ps = ps;
  w->si = si;
  ps->pending++;
  if(purge)
    /* a tombstone whose sandboxes are gone: finalize it */
    err = store_purge_async(r->o.st, s->meta.namespace_, s->meta.name,
                            s->meta.resource_version, on_purged, w, &eb);
  else
    /* after a create claim, on the version and status that claim wrote */
    err = store_update_status_async(r->o.st, s->meta.namespace_,
                                    s->meta.name,
                                    sa->rv ? sa->rv
                                           : s->meta.resource_version,
                                    &sa->st, on_status_written, w, &eb);
  if(err) {
    ps->pending--;
    free(w);
    log_kv(r->o.lg, LOG_WARN, purge ? "purge of tombstone failed"
                                     : "status write failed", "session",
           s->meta.name, "namespace", s->meta.namespace_, "error", eb.msg,
           NULL);
    sa->failed = true;
    act_finish(ps, si, "error");
  }
}

/* Cube refuses the key when its last CUBE_KEY_REFUSED_AFTER answers in a
 * row were 401 or 403 (one stray 403 is not enough: it may be one
 * sandbox's). Said once, at error level, when it starts and when it
 * ends; /readyz is 503 meanwhile. */
#define CUBE_KEY_REFUSED_AFTER 3

static void check_cube_key(reconciler *r)
{
  long st = 0;
  bool bad = cube_client_auth_failures(r->o.cube, &st) >=
             CUBE_KEY_REFUSED_AFTER;
  char code[16];
  if(bad == r->cube_key_refused)
    return;
  r->cube_key_refused = bad;
  snprintf(code, sizeof(code), "%ld", st);
  if(bad)
    log_kv(r->o.lg, LOG_ERROR, "Cube refuses the API key on every call: "
           "check --cube-api-key-file or CUBE_API_KEY", "peer",
           cube_client_peer(r->o.cube), "http_status", code, NULL);
  else
    log_kv(r->o.lg, LOG_INFO, "Cube accepts the API key again", "peer",
           cube_client_peer(r->o.cube), NULL);
}

/* Objects from the store meet the manifest rules here (rule: validated
 * before the controller acts): written straight to the API server or the
 * SQLite file, they never met sessionctl's. An array of n reasons (NULL:
 * valid), or NULL when every object is valid (or out of memory: then the
 * planner sees all as valid, as before this check existed, and the
 * decoders' own checks still hold). A newly invalid object is logged once
 * (its stored Ready says InvalidSpec afterwards). Cost: about 0.3 us an
 * object, validated again every pass (docs/controller.md). */
static char **check_objects(reconciler *r, session **ss, size_t n)
{
  char **why = NULL;
  size_t i, bad = 0;
  for(i = 0; i < n; i++) {
    char *m = session_invalid_reason(ss[i]);
    const session_condition *c;
    if(!m)
      continue;
    if(!why && !(why = calloc(n, sizeof(*why)))) {
      free(m);
      return NULL;
    }
    why[i] = m;
    bad++;
    c = session_status_get_condition(&ss[i]->status, "Ready");
    if(!c || !sc_str_eq0(c->reason, "InvalidSpec"))
      log_kv(r->o.lg, LOG_WARN, "session is invalid: nothing is done for it "
             "until it is fixed", "session", ss[i]->meta.name, "namespace",
             session_eff_namespace(ss[i]), "error", m, NULL);
  }
  if(n > 1 || bad) /* full passes (and a bad single one) set the gauge */
    metrics_set(r->o.m, "session_controller_sessions_invalid", NULL,
                (double)bad);
  return why;
}

/* The namespaces of the objects a list skipped (pointers into it), whose
 * tenant's orphans the planner holds. *all: they cannot be narrowed (an
 * object with no namespace, or out of memory): hold every orphan. */
static const char **held_tenants(const store_list_result *l, size_t *n,
                                 bool *all)
{
  const char **v;
  size_t i;
  *n = 0;
  *all = false;
  if(!l->n_skipped)
    return NULL;
  if(!(v = calloc(l->n_skipped, sizeof(*v)))) {
    *all = true;
    return NULL;
  }
  for(i = 0; i < l->n_skipped; i++) {
    if(!l->skipped[i].ns)
      *all = true;
    else
      v[(*n)++] = l->skipped[i].ns;
  }
  return v;
}

static void free_invalid(char **why, size_t n)
{
  size_t i;
  for(i = 0; why && i < n; i++)
    free(why[i]);
  free(why);
}

/* the reply to a best-effort status write: a conflict or a failure is
 * left to the next pass, which writes the same status again */
static void on_key_status_written(store_reply *rep, void *ud)
{
  (void)rep;
  (void)ud;
}

/* While Cube refuses the key no pass gets as far as acting, so no action
 * can tell the sessions why nothing happens: say it in their status
 * (Ready=False/CubeUnauthorized), once per session (an unchanged status
 * is not written again), at most KEY_STATUS_WRITES_MAX writes a pass. */
#define KEY_STATUS_WRITES_MAX 256

static void say_key_refused(pass *ps)
{
  reconciler *r = ps->r;
  size_t n, i, writes = 0;
  session **ss = pass_sessions(ps, &n);
  long code = 0;
  char msg[300];
  if(!r->cube_key_refused || r->o.dry_run || r->follower)
    return;
  cube_client_auth_failures(r->o.cube, &code);
  snprintf(msg, sizeof(msg), "Cube %s refuses the API key (HTTP %ld): "
           "check --cube-api-key-file or CUBE_API_KEY; nothing is created, "
           "paused or deleted until it is accepted",
           cube_client_peer(r->o.cube), code);
  for(i = 0; i < n && writes < KEY_STATUS_WRITES_MAX; i++) {
    const session *s = ss[i];
    const session_condition *old;
    session_condition c;
    session_status st;
    sc_errbuf eb;
    if(!s || s->meta.deletion_timestamp)
      continue;
    old = session_status_get_condition(&s->status, "Ready");
    if(old && sc_str_eq0(old->reason, "CubeUnauthorized") &&
       sc_str_eq0(old->message, msg))
      continue;
    memset(&st, 0, sizeof(st));
    if(session_status_copy(&st, &s->status))
      return;
    memset(&c, 0, sizeof(c));
    c.type = "Ready";
    c.status = "False";
    c.reason = "CubeUnauthorized";
    c.message = msg;
    /* the wall clock only stamps the condition: no decision reads it */
    c.last_transition_time = sctime_wall_ms();
    c.observed_generation = s->meta.generation;
    if(!session_status_set_condition(&st, &c))
      (void)store_update_status_async(r->o.st, s->meta.namespace_,
                                      s->meta.name, s->meta.resource_version,
                                      &st, on_key_status_written, NULL, &eb);
    session_status_clear(&st);
    writes++;
  }
}

static void on_observed(observation *obs, void *ud)
{
  pass *ps = ud;
  reconciler *r = ps->r;
  plan_input in;
  size_t n, i;
  session **ss = pass_sessions(ps, &n);
  char **invalid;
  const char **held;
  size_t n_held;
  bool held_all;
  sc_err err;

  ps->obs = obs;
  if(obs->failed) {
    /* no plan on a partial view: a missing list is no evidence */
    pass_fail(ps, obs->fail_msg ? obs->fail_msg : "observation failed",
              obs->retry_after_ms);
    check_cube_key(r);
    say_key_refused(ps);
    pass_finish(ps);
    return;
  }
  ps->cube_now = obs->cube_now;
  if(r->stopping || r->follower) {
    pass_finish(ps);
    return;
  }
  ps->phase = PH_ACT;
  memset(&in, 0, sizeof(in));
  in.sessions = ss;
  in.n_sessions = n;
  in.sandboxes = ps->obs->sbs;
  in.n_sandboxes = ps->obs->n_sbs;
  in.gone = (const char *const *)ps->obs->gone;
  in.n_gone = ps->obs->n_gone;
  /* an object the store could not decode is absent from the list, not
   * gone: its sandbox must not look like an orphan */
  /* an object the store could not decode holds the orphans of its tenant
   * (its namespace, as --tenant-binding namespace makes it); with free
   * binding its tenant is unknown: no orphan at all this pass */
  held = held_tenants(&ps->list, &n_held, &held_all);
  in.list_complete = ps->full && !ps->obs->truncated &&
                     (!ps->list.n_skipped ||
                      (r->o.plan.bind_tenant_to_namespace && !held_all));
  in.hold_tenants = held;
  in.n_hold_tenants = n_held;
  in.cube_now = ps->cube_now;
  invalid = check_objects(r, ss, n);
  in.invalid = (const char *const *)invalid;
  if(!r->scratch) /* NULL (out of memory): one per call instead */
    r->scratch = plan_scratch_new();
  err = plan_compute_ex(&in, &r->o.plan, r->scratch, &ps->p);
  free_invalid(invalid, n);
  free(held);
  if(err) {
    pass_fail(ps, "planning failed (out of memory)", -1);
    pass_finish(ps);
    return;
  }
  if(ps->p->guard_tripped) {
    metrics_add(r->o.m, "session_controller_delete_guard_tripped_total",
                NULL, 1);
    log_kv(r->o.lg, LOG_ERROR, "delete guard tripped: orphan deletions "
           "withheld (use --force to override)", "detail",
           ps->p->guard_message ? ps->p->guard_message : "", NULL);
  }
  recorder_note_plan(&r->rec, r->o.lg, ps->p);
  ps->acts = calloc(ps->p->n_sessions ? ps->p->n_sessions : 1,
                    sizeof(*ps->acts));
  if(!ps->acts) {
    pass_fail(ps, "out of memory", -1);
    pass_finish(ps);
    return;
  }
  /* an unchanged plan status is a view of the input session's own
   * (plan.h): each is copied here, while the sessions are as planned */
  for(i = 0; i < ps->p->n_sessions; i++) {
    session_status_copy(&ps->acts[i].st, &ps->p->sessions[i].status);
    ps->acts[i].wants_write = ps->p->sessions[i].status_changed;
    ps->acts[i].pending = 1; /* held until every action has started */
  }
  /* link first: a sandbox this plan adopts (its tags matched, no status
   * named it: its creator died before the status write) is recorded
   * before any action, which may wait seconds for the token bucket. Cube
   * can drop a paused sandbox's tags (#1843): a link written late may be
   * too late, and an untagged, unlinked sandbox is never touched again.
   * The actions start once every such write is answered. */
  ps->early = 1; /* held while starting */
  for(i = 0; i < ps->p->n_sessions; i++) {
    const plan_session *pl = &ps->p->sessions[i];
    session_status st;
    sc_errbuf eb;
    if(!pl->status_changed || !pl->status.sandbox_id ||
       sc_str_eq0(pl->status.sandbox_id, pl->s->status.sandbox_id) ||
       session_status_copy(&st, &ps->acts[i].st))
      continue;
    eb.msg[0] = '\0';
    if(write_early(ps, i, &st, NULL, &eb))
      log_kv(r->o.lg, LOG_DEBUG, "early link write failed", "session",
             pl->s->meta.name, "error", eb.msg, NULL);
  }
  if(--ps->early == 0)
    start_actions(ps);
}

static void start_actions(pass *ps)
{
  size_t i;
  if(ps->r->stopping) {
    pass_finish(ps); /* no new work after SIGTERM */
    return;
  }
  ps->pending = 1; /* held while starting */
  for(i = 0; i < ps->p->n_actions; i++)
    start_action(ps, &ps->p->actions[i]);
  for(i = 0; i < ps->p->n_sessions; i++)
    if(--ps->acts[i].pending == 0)
      act_done(ps, i);
  if(--ps->pending == 0)
    pass_finish(ps);
}

static void start_observe(pass *ps, const sc_kvlist *filter)
{
  size_t n;
  session **ss = pass_sessions(ps, &n);
  ps->phase = PH_OBSERVE;
  if(observe_start_names(ps->r->o.cube, ps->r->o.m, ps->r->o.lg, filter,
                         ps->r->o.plan.adopted_names,
                         ps->r->o.plan.n_adopted_names, ss, n, on_observed,
                         ps)) {
    pass_fail(ps, "the Cube client refused the calls", -1);
    pass_finish(ps);
  }
}

static void update_gauges(reconciler *r, pass *ps)
{
  size_t i;
  char l[64];
  metrics_reset_family(r->o.m, "session_controller_sessions");
  metrics_reset_family(r->o.m, "session_controller_sandboxes");
  for(i = 0; ps->p && i < ps->p->n_sessions; i++) {
    const session_status *st = &ps->acts[i].st;
    if(ps->p->sessions[i].s->meta.deletion_timestamp)
      continue;
    snprintf(l, sizeof(l), "phase=\"%s\"",
             st->phase ? session_phase_name(st->phase) : "None");
    metrics_add(r->o.m, "session_controller_sessions", l, 1);
  }
  for(i = 0; ps->obs && i < ps->obs->n_sbs; i++) {
    snprintf(l, sizeof(l), "state=\"%s\"",
             cube_sb_state_name(ps->obs->sbs[i].state));
    metrics_add(r->o.m, "session_controller_sandboxes", l, 1);
  }
}

static void pass_finish(pass *ps)
{
  reconciler *r = ps->r;
  double secs = (double)(sctime_mono_ms() - ps->t0) / 1000.0;
  ps->phase = PH_DONE;
  check_cube_key(r);
  if(ps->full) {
    r->full = NULL;
    metrics_observe(r->o.m, "session_controller_pass_duration_seconds", NULL,
                    secs);
    if(ps->fail_msg && r->o.once) {
      /* no resync timer in --once mode: waiting would hang for ever */
      log_kv(r->o.lg, LOG_ERROR, "--once: full pass incomplete", "error",
             ps->fail_msg, NULL);
      r->done = true;
      r->failed = true;
    }
    else if(ps->fail_msg) {
      snprintf(r->last_fail_why, sizeof(r->last_fail_why), "no full pass has "
               "completed for over 10 resync periods: %s", ps->fail_msg);
      log_kv(r->o.lg, LOG_WARN, "full pass incomplete, retried at the next "
             "resync", "error", ps->fail_msg, NULL);
    }
    else {
      char buf[32], nb[32], na[32];
      r->ready = true;
      r->last_full_done = sctime_mono_ms();
      update_gauges(r, ps);
      snprintf(buf, sizeof(buf), "%.3f", secs);
      snprintf(nb, sizeof(nb), "%zu", ps->list.n);
      snprintf(na, sizeof(na), "%zu", ps->p ? ps->p->n_actions : 0);
      log_kv(r->o.lg, ps->p && ps->p->n_actions ? LOG_INFO : LOG_DEBUG,
             "full pass done", "sessions", nb, "actions", na, "seconds", buf,
             NULL);
      if(r->o.once)
        r->done = true;
    }
  }
  else {
    r->singles--;
    metrics_observe(r->o.m, "session_controller_reconcile_duration_seconds",
                    NULL, secs);
    if(ps->fail_msg) {
      int64_t now = sctime_mono_ms();
      log_kv(r->o.lg, LOG_WARN, "session reconcile incomplete", "session",
             ps->key, "error", ps->fail_msg, NULL);
      if(ps->retry_after_ms > 0)
        queue_add_retry_after(r->q, ps->key, ps->retry_after_ms, now);
      else
        queue_add_rate_limited(r->q, ps->key, now, NULL);
    }
    queue_done(r->q, ps->key);
  }
  pass_free(ps);
  pump(r);
}

/* ------------------------------------------------------------------ */
/* starting passes */

static pass *pass_new(reconciler *r, bool full)
{
  pass *ps = calloc(1, sizeof(*ps));
  if(!ps)
    return NULL;
  ps->r = r;
  ps->full = full;
  ps->t0 = sctime_mono_ms();
  ps->retry_after_ms = -1;
  return ps;
}

static void on_full_list(store_reply *rep, void *ud)
{
  pass *ps = ud;
  reconciler *r = ps->r;
  sc_kvlist filter = {0};
  if(rep->err) {
    r->store_ok = false;
    log_kv(r->o.lg, LOG_ERROR, "store list failed", "error", rep->message,
           NULL);
    pass_fail(ps, rep->message, -1);
    pass_finish(ps);
    return;
  }
  r->store_ok = true;
  ps->list = rep->list;
  memset(&rep->list, 0, sizeof(rep->list));
  if(sc_kvlist_set(&filter, SESSION_TAG_MANAGED_BY,
                   r->o.plan.controller_name)) {
    pass_fail(ps, "out of memory", -1);
    pass_finish(ps);
    return;
  }
  start_observe(ps, &filter);
  sc_kvlist_clear(&filter);
}

static void start_full(reconciler *r)
{
  pass *ps = pass_new(r, true);
  store_list_opts lo = {NULL, true};
  sc_errbuf eb;
  if(!ps)
    return;
  r->full_pending = false;
  r->full = ps;
  eb.msg[0] = '\0';
  if(store_list_async(r->o.st, &lo, on_full_list, ps, &eb)) {
    r->store_ok = false;
    log_kv(r->o.lg, LOG_ERROR, "store list failed", "error", eb.msg, NULL);
    pass_fail(ps, eb.msg, -1);
    pass_finish(ps);
  }
}

static void on_single_get(store_reply *rep, void *ud)
{
  pass *ps = ud;
  reconciler *r = ps->r;
  sc_kvlist filter = {0};
  if(rep->err == SC_ERR_NOT_FOUND) {
    /* purged: nothing left to do for it */
    queue_forget(r->q, ps->key);
    pass_finish(ps);
    return;
  }
  if(rep->err) {
    r->store_ok = false;
    pass_fail(ps, rep->message, -1);
    pass_finish(ps);
    return;
  }
  r->store_ok = true;
  ps->single = rep->obj;
  rep->obj = NULL;
  if(sc_kvlist_set(&filter, SESSION_TAG_MANAGED_BY,
                   r->o.plan.controller_name) ||
     sc_kvlist_set(&filter, SESSION_TAG_TENANT_ID,
                   session_eff_tenant_id(ps->single)) ||
     sc_kvlist_set(&filter, SESSION_TAG_SESSION_ID,
                   session_eff_session_id(ps->single))) {
    sc_kvlist_clear(&filter);
    pass_fail(ps, "out of memory", -1);
    pass_finish(ps);
    return;
  }
  start_observe(ps, &filter);
  sc_kvlist_clear(&filter);
}

static void start_single(reconciler *r, const char *key)
{
  pass *ps = pass_new(r, false);
  const char *slash = strchr(key, '/');
  char ns[256];
  sc_errbuf eb;
  if(!ps) {
    queue_done(r->q, key);
    return;
  }
  r->singles++;
  ps->key = strdup(key);
  if(!ps->key || !slash || (size_t)(slash - key) >= sizeof(ns)) {
    pass_fail(ps, "bad queue key", -1);
    pass_finish(ps);
    return;
  }
  memcpy(ns, key, (size_t)(slash - key));
  ns[slash - key] = '\0';
  eb.msg[0] = '\0';
  if(store_get_async(r->o.st, ns, slash + 1, on_single_get, ps, &eb)) {
    r->store_ok = false;
    pass_fail(ps, eb.msg, -1);
    pass_finish(ps);
  }
}

static void arm_qtimer(reconciler *r)
{
  int64_t d = queue_next_delay(r->q, sctime_mono_ms());
  struct timeval tv;
  if(d < 0) {
    event_del(r->qtimer);
    return;
  }
  tv.tv_sec = d / 1000;
  tv.tv_usec = (d % 1000) * 1000;
  event_add(r->qtimer, &tv);
}

/* The store is still the one opened (store_check_identity: the SQLite
 * file at its path, the controller name it records). If not, no pass
 * starts: no Cube call, no status write, until it is back (also checked
 * each heartbeat); /readyz says why. Passes already running finish. */
static bool store_still_ours(reconciler *r)
{
  sc_errbuf eb;
  eb.msg[0] = '\0';
  if(!store_check_identity(r->o.st, &eb)) {
    if(r->store_lost) {
      r->store_lost = false;
      log_kv(r->o.lg, LOG_WARN, "the store is the one opened again: "
             "resuming", "store", store_url(r->o.st), NULL);
      r->full_pending = true; /* nothing was looked at meanwhile */
    }
    return true;
  }
  if(!r->store_lost || strcmp(r->store_lost_why, eb.msg)) {
    log_kv(r->o.lg, LOG_ERROR, "the store is not the one opened: stopped "
           "acting (no Cube call, no store write) until it is back",
           "store", store_url(r->o.st), "error", eb.msg, NULL);
    snprintf(r->store_lost_why, sizeof(r->store_lost_why), "%s", eb.msg);
  }
  r->store_lost = true;
  return false;
}

static void pump(reconciler *r)
{
  const char *key;
  if(r->stopping || r->done || !store_still_ours(r))
    return;
  queue_promote(r->q, sctime_mono_ms());
  if(!r->full && queue_len(r->q) > BURST_TO_FULL_PASS) {
    /* a burst (many sessions applied at once): one full pass reads every
     * session fresh and lists Cube twice, instead of two lists per key;
     * the ready keys it covers are dropped (delayed ones stay) */
    while((key = queue_pop(r->q)) != NULL)
      queue_done(r->q, key);
    r->full_pending = true;
  }
  if(r->full_pending && !r->full && r->singles == 0) {
    start_full(r);
    if(r->full)
      return;
  }
  while(!r->full && !r->full_pending && !r->o.once && !r->follower &&
        r->singles < MAX_SINGLE_PASSES && (key = queue_pop(r->q)))
    start_single(r, key);
  metrics_set(r->o.m, "session_controller_queue_depth", NULL,
              (double)(queue_len(r->q) + queue_delayed(r->q)));
  arm_qtimer(r);
}

/* ------------------------------------------------------------------ */
/* events */

static void on_qtimer(evutil_socket_t fd, short what, void *arg)
{
  (void)fd;
  (void)what;
  pump(arg);
}

static void on_resync(evutil_socket_t fd, short what, void *arg)
{
  reconciler *r = arg;
  (void)fd;
  (void)what;
  r->full_pending = true;
  pump(r);
}

static void on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
  reconciler *r = arg;
  (void)fd;
  (void)what;
  r->last_beat = sctime_mono_ms();
  if(!r->stopping) {
    /* the store's identity each second, passes due or not: /readyz turns
     * 503 within a second of a move, and work resumes once it is back */
    bool was_lost = r->store_lost;
    if(store_still_ours(r) && was_lost)
      pump(r);
  }
}

static void start_watch(reconciler *r);

static void on_watch_event(const store_event *ev, void *ud)
{
  reconciler *r = ud;
  char key[300];
  session_key(ev->obj, key, sizeof(key));
  /* a status-only change (ours or another replica's) needs no reconcile:
   * react to new objects, deletions, and spec changes not yet observed */
  if(ev->type == STORE_EVENT_MODIFIED && !ev->obj->meta.deletion_timestamp &&
     ev->obj->meta.generation == ev->obj->status.observed_generation)
    return;
  log_kv(r->o.lg, LOG_DEBUG, "store event", "type",
         store_event_type_name(ev->type), "session", key, "revision",
         ev->revision, NULL);
  queue_add(r->q, key);
  pump(r);
}

static void on_watch_error(sc_err err, const char *msg, void *ud)
{
  reconciler *r = ud;
  log_kv(r->o.lg, err == SC_ERR_EXPIRED ? LOG_INFO : LOG_WARN,
         "store watch ended; relisting", "error", msg ? msg : "", NULL);
  store_watch_stop(r->watch);
  r->watch = NULL;
  r->full_pending = true;
  start_watch(r);
  pump(r);
}

/* No watch could be started: try again after 1 s, doubling to 30 s (the
 * resync passes go on meanwhile; only the reaction to changes is slower). */
static void watch_retry(reconciler *r)
{
  struct timeval tv;
  if(r->stopping)
    return;
  r->watch_backoff_ms = r->watch_backoff_ms ? r->watch_backoff_ms * 2 : 1000;
  if(r->watch_backoff_ms > 30000)
    r->watch_backoff_ms = 30000;
  tv.tv_sec = (time_t)(r->watch_backoff_ms / 1000);
  tv.tv_usec = (suseconds_t)(r->watch_backoff_ms % 1000) * 1000;
  {
    char ms[24];
    snprintf(ms, sizeof(ms), "%lld", (long long)r->watch_backoff_ms);
    log_kv(r->o.lg, LOG_WARN, "store watch not running; trying again",
           "after_ms", ms, NULL);
  }
  evtimer_add(r->wtimer, &tv);
}

static void on_watch_list(store_reply *rep, void *ud)
{
  reconciler *r = ud;
  sc_errbuf eb;
  r->watch_starting = false;
  if(r->stopping)
    return;
  if(rep->err) {
    log_kv(r->o.lg, LOG_ERROR, "store list for watch failed", "error",
           rep->message, NULL);
    watch_retry(r);
    return;
  }
  eb.msg[0] = '\0';
  if(store_watch_start(r->o.st, rep->list.revision, on_watch_event,
                       on_watch_error, r, &r->watch, &eb)) {
    log_kv(r->o.lg, LOG_ERROR, "store watch failed", "error", eb.msg, NULL);
    watch_retry(r);
  }
  else
    r->watch_backoff_ms = 0;
}

static void start_watch(reconciler *r)
{
  store_list_opts lo = {NULL, false};
  sc_errbuf eb;
  if(r->watch_starting)
    return;
  /* the revision to watch from: a cheap list gives the current one; the
   * full pass that follows covers everything before it */
  eb.msg[0] = '\0';
  if(store_list_async(r->o.st, &lo, on_watch_list, r, &eb)) {
    log_kv(r->o.lg, LOG_ERROR, "store list for watch failed", "error",
           eb.msg, NULL);
    watch_retry(r);
    return;
  }
  r->watch_starting = true;
}

static void on_wtimer(evutil_socket_t fd, short what, void *arg)
{
  reconciler *r = arg;
  (void)fd;
  (void)what;
  if(r->watch || r->watch_starting || r->stopping)
    return;
  r->full_pending = true; /* changes while no watch ran: a full pass */
  start_watch(r);
  pump(r);
}

static void on_probe(const cube_result *res, void *ud)
{
  reconciler *r = ud;
  r->dialect = res->dialect;
  if(res->err)
    log_kv(r->o.lg, LOG_WARN, "cube probe failed", "error", res->message,
           NULL);
  else
    log_kv(r->o.lg, LOG_INFO, "cube dialect", "dialect",
           cube_dialect_name(res->dialect), "detail",
           res->detail ? res->detail : "", "peer",
           cube_client_peer(r->o.cube), NULL);
}

/* ------------------------------------------------------------------ */
/* public */

/* status.createIntent.by: the replica's name (or the host's) and random
 * bits, so a restarted replica does not take its predecessor's claim for
 * its own (that one's create may have succeeded unseen). */
static void make_identity(reconciler *r)
{
  unsigned char b[4] = {0, 0, 0, 0};
  char host[64] = "";
  const char *name = r->o.replica;
  FILE *f = fopen("/dev/urandom", "rb");
  if(!f || fread(b, 1, sizeof(b), f) != sizeof(b)) {
    int64_t t = sctime_mono_ms() ^ (int64_t)getpid() << 16;
    memcpy(b, &t, sizeof(b));
  }
  if(f)
    fclose(f);
  if(!name || !*name) {
    if(gethostname(host, sizeof(host) - 1))
      snprintf(host, sizeof(host), "controller");
    name = host;
  }
  snprintf(r->identity, sizeof(r->identity), "%.80s#%02x%02x%02x%02x", name,
           b[0], b[1], b[2], b[3]);
}

reconciler *reconciler_new(const reconciler_opts *opts, sc_errbuf *eb)
{
  reconciler *r = calloc(1, sizeof(*r));
  if(!r) {
    sc_errf(eb, SC_ERR_NOMEM, "out of memory");
    return NULL;
  }
  r->o = *opts;
  r->q = queue_new(NULL);
  r->heartbeat = event_new(opts->base, -1, EV_PERSIST, on_heartbeat, r);
  r->resync = event_new(opts->base, -1, EV_PERSIST, on_resync, r);
  r->qtimer = event_new(opts->base, -1, 0, on_qtimer, r);
  r->wtimer = event_new(opts->base, -1, 0, on_wtimer, r);
  r->seen = calloc(CLAIMS_SEEN_MAX, sizeof(*r->seen));
  if(!r->q || !r->heartbeat || !r->resync || !r->qtimer || !r->wtimer ||
     !r->seen) {
    sc_errf(eb, SC_ERR_NOMEM, "out of memory");
    reconciler_free(r);
    return NULL;
  }
  make_identity(r);
  r->o.plan.identity = r->identity;
  r->last_beat = sctime_mono_ms();
  return r;
}

void reconciler_free(reconciler *r)
{
  if(!r)
    return;
  store_watch_stop(r->watch);
  if(r->heartbeat)
    event_free(r->heartbeat);
  if(r->resync)
    event_free(r->resync);
  if(r->qtimer)
    event_free(r->qtimer);
  if(r->wtimer)
    event_free(r->wtimer);
  if(r->seen) {
    size_t i;
    for(i = 0; i < r->n_seen; i++)
      free(r->seen[i].by);
    free(r->seen);
  }
  free(r->refused);
  queue_free(r->q);
  plan_scratch_free(r->scratch);
  free(r);
}

sc_err reconciler_start(reconciler *r, sc_errbuf *eb)
{
  struct timeval hb = {HEARTBEAT_MS / 1000, 0};
  struct timeval rs;
  rs.tv_sec = r->o.resync_ms / 1000;
  rs.tv_usec = (r->o.resync_ms % 1000) * 1000;
  (void)eb;
  cube_probe(r->o.cube, on_probe, r);
  event_add(r->heartbeat, &hb);
  if(!r->o.once) {
    event_add(r->resync, &rs);
    start_watch(r);
  }
  r->full_pending = true;
  pump(r);
  return SC_OK;
}

void reconciler_stop(reconciler *r)
{
  r->stopping = true;
  event_del(r->resync);
  event_del(r->qtimer);
  event_del(r->wtimer);
  store_watch_stop(r->watch);
  r->watch = NULL;
}

bool reconciler_idle(const reconciler *r)
{
  return !r->full && r->singles == 0;
}

bool reconciler_done(const reconciler *r)
{
  return r->done;
}

bool reconciler_failed(const reconciler *r)
{
  return r->failed;
}

void reconciler_set_recorder(reconciler *r, const recorder *rec)
{
  if(rec)
    r->rec = *rec;
  else
    memset(&r->rec, 0, sizeof(r->rec));
}

void reconciler_set_leader(reconciler *r, bool leader)
{
  bool was = !r->follower;
  r->follower = !leader;
  if(leader && !was && !r->stopping) {
    /* a new leader looks at everything before acting on single keys */
    r->full_pending = true;
    pump(r);
  }
}

bool reconciler_ready(const reconciler *r)
{
  return r->ready && r->store_ok && !r->store_lost && !r->cube_key_refused &&
         !reconciler_passes_failing(r);
}

const char *reconciler_store_lost(const reconciler *r)
{
  return r->store_lost ? r->store_lost_why : NULL;
}

const char *reconciler_cube_key_refused(const reconciler *r)
{
  return r->cube_key_refused ? "Cube refuses the API key on every call: "
                               "check --cube-api-key-file or CUBE_API_KEY"
                             : NULL;
}

/* For /healthz: the loop turns. Nothing outside the process (Cube, the API
 * server, the store) makes it fail: a restart would not bring those back,
 * and a liveness probe would restart every pod during a Cube outage.
 * Passes that keep failing are /readyz's (reconciler_passes_failing). */
bool reconciler_healthy(const reconciler *r, const char **why)
{
  if(sctime_mono_ms() - r->last_beat > 10 * HEARTBEAT_MS) {
    *why = "the event loop has not turned for over 10s";
    return false;
  }
  *why = "ok";
  return true;
}

const char *reconciler_passes_failing(const reconciler *r)
{
  if(r->ready && sctime_mono_ms() - r->last_full_done > 10 * r->o.resync_ms)
    return r->last_fail_why[0] ? r->last_fail_why
                               : "no full pass has completed for over 10 "
                                 "resync periods";
  return NULL;
}
