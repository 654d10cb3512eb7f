/*
 * reconciler.c - the reconciler's public face (see reconciler.h): making
 * and freeing it, starting and stopping, what /readyz and /healthz ask,
 * and its metric families. The work is in the rooms:
 *
 *   loop/pump.c    what starts passes: the queue, the timers
 *   loop/pass.c    a pass: store read -> observe -> plan -> act
 *   loop/watch.c   the store watch
 *   loop/result.c  a session's turn -> one queue operation
 *   act/           the executor (rule 3's confirmations, the create claim,
 *                  rule 10's audit from one exit)
 *   status/        the status writes (rule 7)
 */
#include "controller/loop/pass.h"
#include "controller/loop/shard_loop.h"
#include "controller/act/claim.h"
#include "controller/store/reflector.h"
#include "lib/schash.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/loop/capacity.h"

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
     "Cube lists that may be short (nothing is concluded from a sandbox's "
     "absence in them)."},
    {"session_controller_cube_list_page_retries_total", METRIC_COUNTER,
     "List pages asked again after a transient failure."},
    {"session_controller_create_claims_lost_total", METRIC_COUNTER,
     "Creates not made because another writer changed the session first."},
    {"session_controller_delete_guard_tripped_total", METRIC_COUNTER,
     "Passes whose orphan deletions the blast-radius guard withheld."},
    {"session_controller_reclaim_brake_held_total", METRIC_COUNTER,
     "Reclaims the reclaim brake held back (they stay due and go later)."},
    {"session_controller_store_write_failures_total", METRIC_COUNTER,
     "Store writes that failed for another reason than a conflict (a full "
     "disk, a read-only store, the API server refusing)."},
    {"session_controller_intent_write_failures_total", METRIC_COUNTER,
     "Pauses and deletes not called because their intent could not be "
     "written to the store."},
    {"session_controller_creates_for_gone_objects_total", METRIC_COUNTER,
     "Sandboxes a create made for an object purged meanwhile, deleted at "
     "once (result)."},
    {"session_controller_finalizer_failures_total", METRIC_COUNTER,
     "Sessions held for a pass because the store's finalizer could not be "
     "added to them (kube)."},
    {"session_controller_sessions_invalid", METRIC_GAUGE,
     "Sessions that fail validation (Ready=False/InvalidSpec), as of the "
     "last full pass."},
    {"session_controller_sessions_policy_denied", METRIC_GAUGE,
     "Live sessions the tenant policy refuses (Ready=False/PolicyDenied: "
     "no Cube call for them), as of the last full pass."},
    {"session_controller_single_observations_total", METRIC_COUNTER,
     "How single-session passes learned Cube's facts: by=\"link\" (one GET "
     "of the linked sandbox), \"lists\" (the session's sandboxes listed by "
     "its tags, one request per state), \"link-then-lists\" (the GET did "
     "not tell: 404 or failed)."},
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
  {
    sc_err err = loop_capacity_declare(m);
    if(err)
      return err;
  }
  return loop_shard_declare_metrics(m);
}

static void on_probe(const cube_result *res, void *ud)
{
  reconciler *r = ud;
  bool first = !r->probed;
  r->probing = false;
  r->probed = true;
  r->probe_failed = res->err != SC_OK;
  r->dialect = res->dialect;
  if(res->err)
    log_kv(r->o.lg, LOG_WARN, "cube probe failed", "error", res->message,
           NULL);
  else
    log_kv(r->o.lg, LOG_INFO, "cube dialect", "dialect",
           cube_dialect_name(res->dialect), "detail",
           res->detail ? res->detail : "", "peer",
           cube_client_peer(r->o.cube), NULL);
  if(first)
    loop_pump(r); /* the full pass that waited for it */
}

/* Ask Cube's dialect (at start, and at each full pass while the last
 * probe got no answer: Cube down at start is not the last word, and the
 * E2B refusal of spec.workspace needs it, loop/input.c). An answer that
 * cannot tell (an empty Cube-dialect fleet says "unknown") is final: the
 * E2B dialect always identifies itself by its headers. */
void loop_probe_dialect(reconciler *r)
{
  if(r->probing || (r->probed && !r->probe_failed))
    return;
  r->probing = true;
  cube_probe(r->o.cube, on_probe, r);
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
  r->heartbeat = event_new(opts->base, -1, EV_PERSIST, loop_on_heartbeat, r);
  r->resync = event_new(opts->base, -1, EV_PERSIST, loop_on_resync, r);
  r->qtimer = event_new(opts->base, -1, 0, loop_on_qtimer, r);
  r->env.claims = act_claims_new();
  r->intent_seen = intent_seen_new();
  r->act_seed = sc_hash_seed() | 1;
  if(!r->q || !r->heartbeat || !r->resync || !r->qtimer || !r->env.claims ||
     !r->intent_seen) {
    sc_errf(eb, SC_ERR_NOMEM, "out of memory");
    reconciler_free(r);
    return NULL;
  }
  if(!opts->once && loop_watch_new(r, eb)) {
    reconciler_free(r);
    return NULL;
  }
  make_identity(r);
  if(loop_shard_new(r, eb)) {
    reconciler_free(r);
    return NULL;
  }
  r->o.plan.identity = r->identity;
  r->last_beat = sctime_mono_ms();
  act_cube_client(&r->cube, opts->cube);
  r->env.cube = &r->cube;
  r->env.st = r->o.st;
  r->env.lg = r->o.lg;
  r->env.m = r->o.m;
  r->env.au = r->o.au;
  r->env.plan = &r->o.plan;
  r->env.rec = &r->rec;
  r->env.replica = r->o.replica;
  r->env.identity = r->identity;
  r->env.resync_ms = r->o.resync_ms;
  r->env.dry_run = r->o.dry_run;
  r->env.stopping = &r->stopping;
  r->env.health = &r->health;
  r->env.orphans_done = &r->orphans_done;
  r->env.reclaims_done = &r->reclaims_done;
  return r;
}

void reconciler_free(reconciler *r)
{
  if(!r)
    return;
  reflector_free(r->refl);
  loop_shard_free(r->shard);
  if(r->heartbeat)
    event_free(r->heartbeat);
  if(r->resync)
    event_free(r->resync);
  if(r->qtimer)
    event_free(r->qtimer);
  act_claims_free(r->env.claims);
  intent_seen_free(r->intent_seen);
  act_ledger_clear(&r->orphans_done);
  free(r->fresh);
  act_ledger_clear(&r->reclaims_done);
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
  loop_probe_dialect(r);
  event_add(r->heartbeat, &hb);
  if(!r->o.once) {
    event_add(r->resync, &rs);
    loop_watch_start(r);
  }
  loop_shard_start(r);
  r->full_pending = true;
  loop_pump(r);
  return SC_OK;
}

void reconciler_stop(reconciler *r)
{
  r->stopping = true;
  event_del(r->resync);
  event_del(r->qtimer);
  reflector_stop(r->refl);
  loop_shard_stop(r);
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

void reconciler_set_policy(reconciler *r, const struct policy *p)
{
  r->o.plan.policy = p;
  if(!r->stopping) {
    /* a new policy is looked at over the whole fleet at once */
    r->full_pending = true;
    loop_pump(r);
  }
}

void reconciler_set_leader(reconciler *r, bool leader)
{
  bool was = !r->follower;
  r->follower = !leader;
  if(leader && !was && !r->stopping) {
    /* a new leader looks at everything before acting on single keys */
    r->full_pending = true;
    loop_pump(r);
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

const char *reconciler_store_writes_failing(const reconciler *r)
{
  return act_health_failing(&r->health);
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
