/*
 * claim.c - the create and its claim (status.createIntent).
 *
 * Before a create: write status.createIntent (this process, Cube's clock)
 * by compare-and-set, so replicas reacting to the same event wait for
 * this create instead of making a duplicate (the planner holds back a
 * create while another process's claim is fresh). A conflict: some other
 * writer came first; the session is looked at again. The create goes out
 * once the store took the claim (claim_written).
 *
 * Another process's claim, as this replica first saw it: the planner lets
 * a create go once the claim is older than the TTL by Cube's clock; the
 * executor also wants to have seen that same claim for the TTL by its own
 * monotonic clock (an interval, never compared with another machine's
 * time). Cube's clock alone is not enough when it runs fast against the
 * claimant's real delays (a simulator at x60, a Cube clock jump): a
 * claimant still inside its create call would get a duplicate.
 *
 * A create Cube refused for good (a 4xx other than 404, 409 and 429) is
 * tried again at most once per resync for the same generation, so a bad
 * template does not turn every status write's watch event into another
 * create. Local monotonic time only schedules (rule 1).
 */
#include "controller/act/call.h"
#include "controller/act/claim.h"
#include "api/policy.h"
#include "controller/act/status.h"
#include "controller/observe/observe.h"
#include "lib/scstr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

typedef struct claim_seen {
  char key[300];
  char *by;              /* the claim's "by", whole (owned) */
  sc_time at;
  int64_t first_mono;
} claim_seen;
#define CLAIMS_SEEN_MAX 1024

typedef struct create_refusal {
  char key[300];
  int64_t generation;
  int64_t at_mono;
} create_refusal;
#define CREATE_REFUSALS_MAX 1024
#define CLAIM_LOCAL_WAIT_MS (CUBE_TIMEOUT_MS + 5000)

struct act_claims {
  claim_seen *seen;        /* foreign create claims, first seen (mono) */
  size_t n_seen;
  create_refusal *refused; /* creates Cube refused for good */
  size_t n_refused;
};

act_claims *act_claims_new(void)
{
  act_claims *cl = calloc(1, sizeof(*cl));
  if(cl && !(cl->seen = calloc(CLAIMS_SEEN_MAX, sizeof(*cl->seen)))) {
    free(cl);
    return NULL;
  }
  return cl;
}

void act_claims_free(act_claims *cl)
{
  size_t i;
  if(!cl)
    return;
  for(i = 0; i < cl->n_seen; i++)
    free(cl->seen[i].by);
  free(cl->seen);
  free(cl->refused);
  free(cl);
}

/* ms this replica has seen s's current claim; 0 the first time */
static int64_t claim_seen_for(act_claims *cl, int64_t ttl, const session *s,
                              int64_t now)
{
  const session_status *st = &s->status;
  char key[300];
  size_t i, free_i = cl->n_seen;
  session_key(s, key, sizeof(key));
  for(i = 0; i < cl->n_seen; i++) {
    claim_seen *e = &cl->seen[i];
    if(!strcmp(e->key, key)) {
      if(e->at == st->create_intent_at &&
         sc_str_eq0(e->by, st->create_intent_by))
        return now - e->first_mono;
      free_i = i; /* a new claim of the same session */
      break;
    }
    if(free_i == cl->n_seen && now - e->first_mono > 4 * ttl)
      free_i = i; /* long done: reuse */
  }
  if(free_i == cl->n_seen) {
    if(cl->n_seen == CLAIMS_SEEN_MAX)
      return ttl; /* table full: Cube's clock alone decides */
    cl->n_seen++;
  }
  snprintf(cl->seen[free_i].key, sizeof(cl->seen[free_i].key), "%s", key);
  free(cl->seen[free_i].by);
  cl->seen[free_i].by = st->create_intent_by ? strdup(st->create_intent_by)
                                             : NULL;
  if(st->create_intent_by && !cl->seen[free_i].by) {
    cl->seen[free_i].key[0] = '\0'; /* out of memory: forget the entry */
    return 0;
  }
  cl->seen[free_i].at = st->create_intent_at;
  cl->seen[free_i].first_mono = now;
  return 0;
}

/* Did Cube refuse the call for good? 4xx but 404 (gone), 409 (a state
 * race) and 429 (rate limit): the same request fails the same way until
 * the spec (or Cube's configuration, or the key) changes. */
static bool refused_for_good(long http_status)
{
  return http_status >= 400 && http_status < 500 && http_status != 404 &&
         http_status != 409 && http_status != 429;
}

static create_refusal *refusal_find(act_claims *cl, const char *key)
{
  size_t i;
  for(i = 0; i < cl->n_refused; i++)
    if(!strcmp(cl->refused[i].key, key))
      return &cl->refused[i];
  return NULL;
}

static void refusal_forget(act_claims *cl, const char *key)
{
  create_refusal *e = refusal_find(cl, key);
  if(e)
    *e = cl->refused[--cl->n_refused];
}

static void refusal_note(act_claims *cl, const char *key, int64_t generation)
{
  create_refusal *e = refusal_find(cl, key);
  if(!e) {
    if(!cl->refused &&
       !(cl->refused = calloc(CREATE_REFUSALS_MAX, sizeof(*cl->refused))))
      return;
    if(cl->n_refused == CREATE_REFUSALS_MAX)
      cl->n_refused--; /* full: the last entry makes room (it retries) */
    e = &cl->refused[cl->n_refused++];
    snprintf(e->key, sizeof(e->key), "%s", key);
  }
  e->generation = generation;
  e->at_mono = sctime_mono_ms();
}

/* ms until the next try of a refused create of s; 0: it may go now */
static int64_t refusal_wait(act_claims *cl, int64_t resync_ms,
                            const session *s)
{
  char key[300];
  create_refusal *e;
  int64_t left;
  session_key(s, key, sizeof(key));
  e = refusal_find(cl, key);
  if(!e || e->generation != s->meta.generation)
    return 0;
  left = e->at_mono + resync_ms - sctime_mono_ms();
  return left > 0 ? left : 0;
}

/* spec.workspace as Cube's host-mount metadata: a JSON array of
 * {hostPath, mountPath, readOnly} (Cube checks hostPath against its
 * allowlist) */
static sc_err host_mount(const session_spec *sp, sc_kvlist *md)
{
  json_object *a = json_object_new_array(), *o = json_object_new_object();
  sc_err err = SC_ERR_NOMEM;
  if(a && o &&
     !json_object_object_add(
       o, "hostPath", json_object_new_string(sp->workspace_host_path)) &&
     !json_object_object_add(
       o, "mountPath", json_object_new_string(sp->workspace_mount_path)) &&
     !json_object_object_add(o, "readOnly", json_object_new_boolean(0)) &&
     !json_object_array_add(a, o)) {
    o = NULL;
    err = sc_kvlist_set(md, SESSION_CUBE_HOST_MOUNT_KEY,
                        json_object_to_json_string_ext(
                          a, JSON_C_TO_STRING_PLAIN |
                               JSON_C_TO_STRING_NOSLASHESCAPE));
  }
  json_object_put(o);
  json_object_put(a);
  return err;
}

/* sb: the sandbox as the tenant policy makes it (policy_sandbox_of) */
static sc_err create_metadata(const act_env *env, const session *s,
                              const session_spec *sb, sc_kvlist *md)
{
  sc_err err = sc_kvlist_copy(md, &s->spec.sandbox_metadata);
  if(!err)
    err = sc_kvlist_set(md, SESSION_TAG_SESSION_ID,
                        session_eff_session_id(s));
  if(!err)
    err = sc_kvlist_set(md, SESSION_TAG_TENANT_ID, session_eff_tenant_id(s));
  if(!err)
    err = sc_kvlist_set(md, SESSION_TAG_MANAGED_BY,
                        env->plan->controller_name);
  /* rule 12: the sandbox belongs to this object, not to its name */
  if(!err && s->meta.uid && *s->meta.uid)
    err = sc_kvlist_set(md, SESSION_TAG_SESSION_UID, s->meta.uid);
  if(!err && s->spec.template_id)
    err = sc_kvlist_set(md, SESSION_TAG_TEMPLATE, s->spec.template_id);
  /* what a running sandbox cannot be given later: the planner compares */
  if(!err) {
    char dg[SESSION_CONFIG_DIGEST_LEN + 1];
    session_sandbox_config_digest(sb, dg);
    err = sc_kvlist_set(md, SESSION_TAG_CONFIG, dg);
  }
  if(!err && sb->workspace_host_path)
    err = host_mount(sb, md);
  return err;
}

/* A claim this process will not act on (it is stopping): taken back by
 * the session's final status write, so no replica waits for it. */
static void claim_withdrawn(act_call *c)
{
  act_sess *sa = &c->run->sess[c->si];
  if(act_status_own(c->run, c->si))
    return;
  free(sa->st.create_intent_by);
  sa->st.create_intent_by = NULL;
  sa->st.create_intent_at = 0;
  sa->wants_write = true;
}

/* the claim is written (err SC_OK) or not: create, or look again */
static void claim_written(act_run *run, size_t si, sc_err err,
                          const char *msg, void *ud)
{
  act_call *c = ud;
  const act_env *env = run->env;
  const plan_action *a = c->a;
  const session *s = run->p->sessions[si].s;
  sc_kvlist md = {0};
  cube_create_req req = {0};
  policy_sandbox ps;
  char denied[POLICY_REASON_MAX];
  bool refused = !err && !*env->stopping &&
                 policy_denied(env->plan->policy, s, denied, sizeof(denied));
  if(err || *env->stopping || refused)
    env->cube->unreserve(env->cube->cl); /* no create: the token back */
  if(refused) {
    /* the policy was reloaded since the plan and refuses the spec now:
     * no create, the claim withdrawn; the next pass says PolicyDenied */
    claim_withdrawn(c);
    act_log(run, a, LOG_WARN, "the tenant policy refuses the spec now: "
            "no create", denied);
    act_not_started(c, "error", -1);
    return;
  }
  if(!err && *env->stopping) {
    /* SIGTERM came while the claim was written: no create goes out now,
     * and the claim goes with the final write */
    claim_withdrawn(c);
    act_log(run, a, LOG_INFO, "stopping: the create is not sent and its "
            "claim is withdrawn", NULL);
    act_not_started(c, "stopping", -1);
    return;
  }
  if(err) {
    /* lost: the session changed, or went (a deleted object no controller
     * had taken on is removed at once, so its claim finds no row) */
    bool lost = err == SC_ERR_CONFLICT || err == SC_ERR_NOT_FOUND;
    act_log(run, a, lost ? LOG_DEBUG : LOG_WARN,
            err == SC_ERR_CONFLICT
              ? "create claim lost: the session changed; looking again"
              : err == SC_ERR_NOT_FOUND
                  ? "create claim lost: the session is gone; no create"
                  : "create claim not written: no create",
            msg);
    if(lost)
      metrics_add(env->m, "session_controller_create_claims_lost_total",
                  NULL, 1);
    act_not_started(c, lost ? "conflict" : "error", -1);
    return;
  }
  policy_sandbox_of(env->plan->policy, s, &ps);
  err = create_metadata(env, s, &ps.spec, &md);
  if(err) /* no create: its slot and token back (cube.h: every turn ends
           * in a create or a cancel) */
    env->cube->unreserve(env->cube->cl);
  if(!err) {
    req.template_id = s->spec.template_id;
    req.timeout_s = a->timeout_s;
    req.metadata = &md;
    req.env_vars = &s->spec.env_vars;
    /* OnConnect: only a connect request resumes it, never raw traffic */
    req.no_auto_resume = s->spec.resume_policy == SESSION_RESUME_ON_CONNECT;
    /* the network policy: the session's within its tenant's ceiling,
     * else the controller's default */
    req.allow_internet = ps.spec.net_internet ? ps.spec.net_internet
                                              : env->plan->default_internet;
    req.allow_out = ps.spec.net_allow_out;
    req.n_allow_out = ps.spec.n_net_allow_out;
    req.deny_out = ps.spec.n_net_deny_out ? ps.spec.net_deny_out
                                          : env->plan->default_deny_out;
    req.n_deny_out = ps.spec.n_net_deny_out ? ps.spec.n_net_deny_out
                                            : env->plan->n_default_deny_out;
    req.allow_public = ps.spec.net_public;
    req.volume_mounts = ps.spec.volume_mounts;
    req.n_volume_mounts = ps.spec.n_volume_mounts;
    c->op = CUBE_OP_CREATE;
    c->t0 = sctime_mono_ms();
    err = env->cube->create(env->cube->cl, &req, act_on_mutation, c);
  }
  sc_kvlist_clear(&md);
  if(err)
    act_not_started(c, "error", -1);
}

/* the claim: this process, Cube's clock, on the status as it stands */
static sc_err claim_create(act_call *c, sc_errbuf *eb)
{
  act_run *run = c->run;
  session_status st;
  sc_err err = session_status_copy(&st, act_run_status(run, c->si));
  if(err)
    return sc_errf(eb, err, "out of memory");
  free(st.create_intent_by);
  st.create_intent_by = strdup(run->env->identity);
  st.create_intent_at = run->cube_now;
  if(!st.create_intent_by) {
    session_status_clear(&st);
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  return act_status_write_early(run, c->si, &st, claim_written, c, eb);
}

/* The create's turn in the queue and the token bucket has come: the
 * claim now, right before the call (claim at dispatch). A claim written
 * while the create still waited its turn would hold every other replica
 * back for as long as the wait, and a claimant that died meanwhile would
 * leave claims no process acts on: with the claim at dispatch, a claim
 * lives for the create call only, and the TTL that covers it is short
 * (--create-claim-ttl, 3 s). */
static void on_turn(const cube_result *res, void *ud)
{
  act_call *c = ud;
  act_run *run = c->run;
  sc_errbuf eb;
  sc_err err;
  if(res->err) {
    act_not_started(c, "error", -1);
    return;
  }
  if(*run->env->stopping) {
    run->env->cube->unreserve(run->env->cube->cl);
    act_log(run, c->a, LOG_INFO, "stopping: the create is not sent", NULL);
    act_not_started(c, "stopping", -1);
    return;
  }
  eb.msg[0] = '\0';
  err = claim_create(c, &eb);
  if(err) {
    run->env->cube->unreserve(run->env->cube->cl);
    act_log(run, c->a, LOG_WARN, "create claim not written: no create",
            eb.msg);
    act_not_started(c, err == SC_ERR_CONFLICT ? "conflict" : "error", -1);
  }
}

void act_create_start(act_call *c)
{
  act_run *run = c->run;
  const act_env *env = run->env;
  const plan_action *a = c->a;
  const session *s = run->p->sessions[c->si].s;
  int64_t wait;
  if(s->status.create_intent_at &&
     !sc_str_eq0(s->status.create_intent_by, env->identity)) {
    /* long enough for any claimant to finish its create call (it times
     * out after CUBE_TIMEOUT_MS) and write the link */
    int64_t ttl = env->plan->create_intent_ttl_ms < CLAIM_LOCAL_WAIT_MS
                    ? env->plan->create_intent_ttl_ms
                    : CLAIM_LOCAL_WAIT_MS;
    int64_t seen = claim_seen_for(env->claims, env->plan->create_intent_ttl_ms,
                                  s, sctime_mono_ms());
    if(seen < ttl) {
      char why[200];
      snprintf(why, sizeof(why), "waiting: the create claim of %s is "
               "old by Cube's clock but seen here for %lld ms only",
               s->status.create_intent_by ? s->status.create_intent_by
                                          : "(unnamed)",
               (long long)seen);
      act_log(run, a, LOG_INFO, why, NULL);
      act_not_started(c, "waiting", ttl - seen);
      return;
    }
  }
  wait = refusal_wait(env->claims, env->resync_ms, s);
  if(wait > 0) {
    act_log(run, a, LOG_DEBUG, "waiting: Cube refused this create for "
            "good; it is tried again once per resync", NULL);
    act_not_started(c, "waiting", wait);
    return;
  }
  c->op = CUBE_OP_RESERVE;
  if(env->cube->reserve(env->cube->cl, on_turn, c))
    act_not_started(c, "error", -1);
}

/* A create whose answer never came or was cut after the request was sent
 * (a reset, a timeout, a 2xx with a broken body) may have made a sandbox
 * all the same (E2B's create is not idempotent; a 4xx or 5xx answer says
 * it did not, a refused connection sent nothing). The claim then stops
 * being this process's own: "by" gets " (outcome unknown)", so the
 * planner of every replica, this one included, waits out the claim's TTL
 * before another create, and a sandbox made by the lost call is found by
 * its tags and adopted instead of duplicated. */
static void claim_outcome_unknown(act_call *c)
{
  act_run *run = c->run;
  act_sess *sa = &run->sess[c->si];
  char by[160];
  char *d;
  /* the claim was written (own since): no claim, nothing to mark */
  if(!sa->own || !sa->st.create_intent_at)
    return;
  snprintf(by, sizeof(by), "%s (outcome unknown)", run->env->identity);
  d = strdup(by);
  if(!d)
    return;
  free(sa->st.create_intent_by);
  sa->st.create_intent_by = d;
}

/* Cube refused the create for good: the session says so (Ready=False,
 * CreateFailed, Cube's answer), on every store, and its claim goes (no
 * sandbox was made). The planner keeps that Ready until a create works
 * or the generation moves. */
static void create_refused(act_call *c, const cube_result *res)
{
  act_run *run = c->run;
  const session *s = run->p->sessions[c->si].s;
  act_sess *sa = &run->sess[c->si];
  session_condition cond;
  char key[300], msg[SC_ERRBUF_SIZE + 200];
  session_key(s, key, sizeof(key));
  refusal_note(run->env->claims, key, s->meta.generation);
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
  cond.last_transition_time = run->cube_now;
  cond.observed_generation = s->meta.generation;
  if(act_status_own(run, c->si) || session_status_set_condition(&sa->st, &cond))
    return;
  sa->st.phase = SESSION_PHASE_FAILED;
  free(sa->st.create_intent_by);
  sa->st.create_intent_by = NULL;
  sa->st.create_intent_at = 0;
  sa->wants_write = true;
}

void act_create_answered(act_call *c, const cube_result *res)
{
  if(res->err) {
    if(res->maybe_done)
      claim_outcome_unknown(c);
    else if(refused_for_good(res->http_status))
      create_refused(c, res);
    act_fail(c, (int)res->http_status, res->message, res->retry_after_ms);
  }
  else {
    char key[300];
    act_sess *sa = &c->run->sess[c->si];
    act_outcome o = {ACT_DONE, (int)res->http_status, NULL, NULL,
                     res->sandbox_id, -1, NULL, NULL};
    session_key(c->run->p->sessions[c->si].s, key, sizeof(key));
    refusal_forget(c->run->env->claims, key);
    free(sa->created);
    sa->created = res->sandbox_id ? strdup(res->sandbox_id) : NULL;
    o.domain = res->domain;
    act_end(c, &o);
  }
}

/* ------------------------------------------------------------------ */
/* a create whose object was purged meanwhile */

typedef struct gone_delete {
  act_run *run;
  size_t si;
  int64_t t0;
} gone_delete;

static void on_gone_deleted(const cube_result *res, void *ud)
{
  gone_delete *g = ud;
  act_run *run = g->run;
  const act_env *env = run->env;
  const session *s = run->p->sessions[g->si].s;
  const char *id = run->sess[g->si].created;
  char key[300];
  audit_entry e;
  bool ok = !res->err || res->already_gone;
  observe_count_call(env->m, CUBE_OP_DELETE, res, g->t0);
  session_key(s, key, sizeof(key));
  memset(&e, 0, sizeof(e));
  e.replica = env->replica;
  e.session = key;
  e.sandbox_id = id;
  e.action = "delete";
  e.kind = "object-gone";
  e.reason = "the session's object was purged while its create was in "
             "flight: what the create made must not outlive it";
  e.cube_now = run->cube_now;
  e.http_status = (int)res->http_status;
  e.outcome = ok ? (res->already_gone ? "already-gone" : "done") : "failed";
  e.message = res->err ? res->message : NULL;
  audit_record(env->au, &e);
  log_kv(env->lg, ok ? LOG_WARN : LOG_ERROR, ok
           ? "deleted the sandbox a create made for an object purged "
             "meanwhile"
           : "could not delete the sandbox a create made for an object "
             "purged meanwhile; the orphan sweep will find it",
         "session", key, "sandbox", id ? id : "-", "error",
         res->err ? res->message : "", NULL);
  metrics_add(env->m, "session_controller_creates_for_gone_objects_total",
              ok ? "result=\"deleted\"" : "result=\"error\"", 1);
  free(g);
  act_run_release(run);
}

void act_create_orphaned(act_run *run, size_t si)
{
  const act_cube *cube = run->env->cube;
  gone_delete *g = calloc(1, sizeof(*g));
  if(!g)
    return;
  g->run = run;
  g->si = si;
  g->t0 = sctime_mono_ms();
  run->pending++;
  if(cube->delete_now(cube->cl, run->sess[si].created, on_gone_deleted, g)) {
    run->pending--;
    log_kv(run->env->lg, LOG_ERROR, "could not delete the sandbox a create "
           "made for an object purged meanwhile (the Cube client refused "
           "the call); the orphan sweep will find it", "sandbox",
           run->sess[si].created, NULL);
    free(g);
  }
}
