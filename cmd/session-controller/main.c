/*
 * session-controller - keeps Cube sandboxes in step with Session objects.
 * Wiring only: settings, logger, store, Cube client, reconciler, the
 * operator endpoints and signals. See docs/architecture.md and docs/controller.md.
 */
#include <event2/event.h>
#include <openssl/crypto.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/act/audit.h"
#include "controller/ops/config.h"
#include "controller/cube/cube.h"
#include "controller/ops/httpd.h"
#include "controller/kubeclient/events.h"
#include "controller/kubeclient/http.h"
#include "controller/kubeclient/leader.h"
#include "controller/ops/log.h"
#include "controller/ops/metrics.h"
#include "controller/plan/plan.h"
#include "controller/ops/policy_watch.h"
#include "controller/loop/reconciler.h"
#include "controller/store/store.h"

/* the planner's default send window is its default void bound less Cube's
 * call timeout and the margin (plan.h) */
_Static_assert(PLAN_RECLAIM_VOID_AFTER_MS - CUBE_TIMEOUT_MS -
                 PLAN_RECLAIM_SEND_MARGIN_MS == PLAN_RECLAIM_SEND_WITHIN_MS,
               "PLAN_RECLAIM_SEND_WITHIN_MS out of step with cube.h");

#define SHUTDOWN_GRACE_MS 8000

typedef struct app {
  struct event_base *base;
  reconciler *rec;
  logger *lg;
  metrics *m;
  kube_events *kev;    /* kube store only */
  kube_leader *kl;     /* --leader-elect only */
  audit *au;
  policy_watch *pw;    /* the tenant policy, read again on change */
  struct event *sigterm, *sigint, *sighup, *poll;
  bool stopping;
  int64_t stop_deadline;
} app;

static bool hook_healthy(void *ud, const char **why)
{
  const app *a = ud;
  return reconciler_healthy(a->rec, why);
}

static bool hook_ready(void *ud, const char **why)
{
  const app *a = ud;
  *why = reconciler_store_lost(a->rec);
  if(!*why && (*why = reconciler_store_writes_failing(a->rec)) != NULL)
    return false; /* no destructive call goes out meanwhile */
  if(!*why)
    *why = reconciler_cube_key_refused(a->rec);
  if(!*why)
    *why = reconciler_passes_failing(a->rec);
  if(!*why && (*why = audit_failing(a->au)) != NULL)
    return false; /* destructive calls go on, but their trail does not */
  return reconciler_ready(a->rec);
}

/* SIGHUP: reopen --audit-log (logrotate moved it); the process goes on */
static void on_sighup(evutil_socket_t sig, short what, void *arg)
{
  app *a = arg;
  sc_errbuf eb;
  (void)sig;
  (void)what;
  eb.msg[0] = '\0';
  if(audit_reopen(a->au, &eb))
    log_kv(a->lg, LOG_ERROR, "SIGHUP: cannot reopen the audit log; the old "
           "file stays in use", "error", eb.msg, NULL);
  else
    log_kv(a->lg, LOG_INFO, "SIGHUP: audit log reopened", NULL);
}

/* every 100 ms: end the loop once a --once pass is done, or once a stop
 * has drained (or its grace ran out) */
static void on_poll(evutil_socket_t fd, short what, void *arg)
{
  app *a = arg;
  (void)fd;
  (void)what;
  policy_watch_poll(a->pw, sctime_mono_ms());
  if(!a->stopping && reconciler_done(a->rec)) {
    a->stopping = true;
    a->stop_deadline = sctime_mono_ms() + SHUTDOWN_GRACE_MS;
    reconciler_stop(a->rec);
  }
  if(a->stopping && ((reconciler_idle(a->rec) &&
                      kube_leader_released(a->kl) &&
                      kube_events_idle(a->kev)) ||
                     sctime_mono_ms() >= a->stop_deadline))
    event_base_loopbreak(a->base);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
  app *a = arg;
  (void)what;
  if(a->stopping) {
    event_base_loopbreak(a->base); /* a second signal: leave now */
    return;
  }
  log_kv(a->lg, LOG_INFO, "signal received: stopping", "signal",
         sig == SIGTERM ? "SIGTERM" : "SIGINT", NULL);
  a->stopping = true;
  a->stop_deadline = sctime_mono_ms() + SHUTDOWN_GRACE_MS;
  reconciler_stop(a->rec);
  kube_leader_release(a->kl); /* a successor takes over at once */
}

/* The Cube client read --cube-api-key-file again (the key is never in
 * the message): one line, and the count by result. */
static void on_key_reload(void *ud, bool ok, const char *message)
{
  app *a = ud;
  metrics_add(a->m, "session_controller_cube_key_reloads_total",
              ok ? "result=\"ok\"" : "result=\"error\"", 1);
  if(ok)
    log_kv(a->lg, LOG_INFO, message, NULL);
  else
    log_kv(a->lg, LOG_ERROR, "cannot reload the Cube API key", "error",
           message, NULL);
}

/* a reloaded tenant policy: the next sandboxes and the next pass's
 * decisions follow it (policy_watch.c logged and counted the reload) */
static void on_policy(void *ud, const policy *p)
{
  app *a = ud;
  reconciler_set_policy(a->rec, p);
}

static void on_leader(bool leader, void *ud)
{
  app *a = ud;
  metrics_set(a->m, "session_controller_leader", NULL, leader ? 1 : 0);
  reconciler_set_leader(a->rec, leader);
}

/* the kube store's connection (the same kubeconfig, context and
 * credential source: an exec plugin runs once for both) */
static sc_err kube_setup(app *a, const config *cfg, store *st,
                         const char *replica, const char *ua,
                         kube_http **kh, sc_errbuf *eb)
{
  kube_conn conn;
  kube_events_opts eo;
  char ns[256];
  sc_err err;
  err = store_kube_conn(st, &conn, eb);
  if(err)
    return err;
  *kh = kube_http_new(a->base, &conn, ua, eb);
  kube_conn_clear(&conn);
  if(!*kh)
    return SC_ERR_NOMEM;
  if(cfg->leader_elect_namespace && *cfg->leader_elect_namespace)
    snprintf(ns, sizeof(ns), "%s", cfg->leader_elect_namespace);
  else
    kube_leader_default_namespace(NULL, ns, sizeof(ns));
  memset(&eo, 0, sizeof(eo));
  eo.component = "session-controller";
  eo.host = replica;
  if(cfg->leader_elect) {
    /* events about no Session (the delete guard) go to the Lease */
    eo.fallback_api_version = "coordination.k8s.io/v1";
    eo.fallback_kind = "Lease";
    eo.fallback_ns = ns;
    eo.fallback_name = cfg->leader_elect_name;
  }
  a->kev = kube_events_new(*kh, a->m, a->lg, &eo, eb);
  if(!a->kev)
    return SC_ERR_NOMEM;
  if(cfg->leader_elect) {
    kube_leader_opts lo;
    memset(&lo, 0, sizeof(lo));
    lo.ns = ns;
    lo.name = cfg->leader_elect_name;
    lo.lease.identity = replica;
    lo.lease.duration_ms = 15000;
    lo.lease.renew_deadline_ms = 10000;
    lo.lease.retry_ms = 2000;
    lo.on_change = on_leader;
    lo.ud = a;
    a->kl = kube_leader_new(a->base, *kh, a->lg, &lo, eb);
    if(!a->kl)
      return SC_ERR_NOMEM;
    log_kv(a->lg, LOG_INFO, "leader election on", "lease", lo.name,
           "namespace", ns, "identity", replica, NULL);
  }
  return SC_OK;
}

/* One controller name per store: record ours, or refuse a store another
 * name serves (unless --adopt-from renames it); the names it was renamed
 * from are ours too (their sandboxes keep their tags). */
static sc_err claim_store(app *a, store *st, const config *cfg,
                          store_served_by *served)
{
  sc_errbuf eb;
  size_t i;
  sc_err err;
  eb.msg[0] = '\0';
  err = store_claim_name(st, cfg->name, cfg->adopt_from, served, &eb);
  if(err == SC_ERR_UNAVAILABLE) {
    /* the API server did not answer: keep running (its outage is not
     * ours to end), with one name per store not enforced this run */
    log_kv(a->lg, LOG_WARN, "could not read the store's controller-name "
           "record: one name per store is not enforced until a restart",
           "store", cfg->store, "error", eb.msg, NULL);
    memset(served, 0, sizeof(*served));
    if(cfg->adopt_from && (served->adopted = calloc(1, sizeof(char *))) &&
       (served->adopted[0] = strdup(cfg->adopt_from)))
      served->n_adopted = 1; /* the rename still holds for this run */
    return SC_OK;
  }
  if(err) {
    log_kv(a->lg, LOG_ERROR, "refusing to start", "store", cfg->store,
           "name", cfg->name, "error", eb.msg, NULL);
    return err;
  }
  if(!served->recorded)
    log_kv(a->lg, LOG_INFO, "this store records no controller name: "
           "one name per store is not enforced (docs/store.md)", "store",
           cfg->store, NULL);
  for(i = 0; i < served->n_adopted; i++)
    log_kv(a->lg, LOG_INFO, "sandboxes of a former name are this "
           "controller's too", "former_name", served->adopted[i], "name",
           cfg->name, NULL);
  return SC_OK;
}

static bool mentions_e2b(const char *s)
{
  for(; *s; s++)
    if((s[0] | 0x20) == 'e' && s[1] == '2' && (s[2] | 0x20) == 'b')
      return true;
  return false;
}

static void default_replica(char *buf, size_t len)
{
  char host[128] = "replica";
  gethostname(host, sizeof(host) - 1);
  host[sizeof(host) - 1] = '\0';
  snprintf(buf, len, "%s-%ld", host, (long)getpid());
}

/* The process holds the Cube key and the kube token: no core file and no
 * ptrace by other users' processes (a dump would hold both). */
static void no_core_dumps(void)
{
  struct rlimit rl = {0, 0};
  (void)setrlimit(RLIMIT_CORE, &rl);
  (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/* Descriptors are Cube's, the store's and the metrics port's: the soft
 * limit goes up to the hard one (the metrics port takes at most a quarter,
 * controller/ops/httpd.h). */
static void raise_nofile(logger *lg)
{
  struct rlimit rl;
  char was[24], now[24];
  if(getrlimit(RLIMIT_NOFILE, &rl))
    return;
  snprintf(was, sizeof(was), "%llu", (unsigned long long)rl.rlim_cur);
  if(rl.rlim_cur < rl.rlim_max) {
    struct rlimit up = {rl.rlim_max, rl.rlim_max};
    if(!setrlimit(RLIMIT_NOFILE, &up))
      rl.rlim_cur = rl.rlim_max;
  }
  snprintf(now, sizeof(now), "%llu", (unsigned long long)rl.rlim_cur);
  log_kv(lg, LOG_INFO, "descriptor limit (RLIMIT_NOFILE)", "limit", now,
         "was", was, NULL);
}

/* Is host (of an http:// URL) a loopback name or address? */
static bool url_is_loopback(const char *url)
{
  const char *h = strstr(url, "://");
  size_t n;
  h = h ? h + 3 : url;
  if(*h == '[')
    return !strncmp(h, "[::1]", 5);
  n = strcspn(h, ":/");
  return (n == 9 && !strncmp(h, "localhost", 9)) || !strncmp(h, "127.", 4);
}

/* Warnings about how the secrets travel and rest, once at start. */
static void warn_secrets(app *a, const config *cfg, store *st)
{
  struct stat sb;
  if(cfg->cube_api_key_file && !stat(cfg->cube_api_key_file, &sb) &&
     (sb.st_mode & 077)) {
    char mode[8];
    snprintf(mode, sizeof(mode), "%04o", (unsigned)(sb.st_mode & 07777));
    log_kv(a->lg, LOG_WARN, "the Cube API key file is readable by group or "
           "others: chmod 600 it", "file", cfg->cube_api_key_file, "mode",
           mode, NULL);
  }
  if(cfg->cube_api_key && !strncmp(cfg->cube_url, "http://", 7) &&
     !url_is_loopback(cfg->cube_url))
    log_kv(a->lg, LOG_WARN, "the Cube API key goes over plain http to a host "
           "that is not loopback: use https", "cube", cfg->cube_url, NULL);
  if(cfg->cube_insecure_skip_verify)
    log_kv(a->lg, LOG_WARN, "TLS verification of Cube is off "
           "(--cube-insecure-skip-verify)", "cube", cfg->cube_url, NULL);
  if(!strcmp(store_backend(st), "kube")) {
    kube_conn conn;
    sc_errbuf eb;
    if(!store_kube_conn(st, &conn, &eb)) {
      if(conn.insecure)
        log_kv(a->lg, LOG_WARN, "the kubeconfig turns TLS verification of "
               "the API server off (insecure-skip-tls-verify)", "source",
               conn.source, NULL);
      else if(conn.server && !strncmp(conn.server, "http://", 7) &&
              conn.cred && !url_is_loopback(conn.server))
        log_kv(a->lg, LOG_WARN, "the API server token goes over plain http "
               "to a host that is not loopback", "server", conn.server,
               NULL);
      kube_conn_clear(&conn);
    }
  }
}

int main(int argc, char **argv)
{
  config cfg;
  sc_errbuf eb;
  app a;
  store *st = NULL;
  store_open_opts so;
  store_served_by served;
  cube_client *cube = NULL;
  cube_client_opts co;
  metrics *m = NULL;
  audit *au = NULL;
  httpd *hd = NULL;
  reconciler_opts ro;
  kube_http *kh = NULL;
  char replica[200], ua[300];
  unsigned char link_key[PLAN_LINK_KEY_LEN];
  int rc = 1, port = 0;
  struct timeval tick = {0, 100000};

  memset(&a, 0, sizeof(a));
  memset(&served, 0, sizeof(served));
  eb.msg[0] = '\0';
  if(config_parse(&cfg, argc, argv, &eb)) {
    fprintf(stderr, "session-controller: %s\nRun 'session-controller --help' "
            "for usage.\n", eb.msg);
    config_clear(&cfg);
    return 2;
  }
  if(cfg.help) {
    config_usage(stdout, "session-controller");
    config_clear(&cfg);
    return 0;
  }
  if(cfg.version) {
    printf("session-controller %s\n", SC_VERSION);
    config_clear(&cfg);
    return 0;
  }
  signal(SIGPIPE, SIG_IGN);
  no_core_dumps();
  if(!cfg.replica)
    default_replica(replica, sizeof(replica));
  else
    snprintf(replica, sizeof(replica), "%s", cfg.replica);

  a.lg = log_new(stderr, (log_format)log_format_parse(cfg.log_format),
                 (log_level)log_level_parse(cfg.log_level));
  a.base = event_base_new();
  m = metrics_new();
  a.m = m;
  if(!a.lg || !a.base || !m || reconciler_declare_metrics(m) ||
     kube_events_declare_metrics(m) || store_declare_metrics(m) ||
     policy_watch_declare_metrics(m) ||
     metrics_declare(m, "session_controller_leader", METRIC_GAUGE,
                     "1 when this replica may act on Cube (the Lease holder, "
                     "or no leader election), else 0.", NULL, 0) ||
     metrics_declare(m, "session_controller_cube_key_reloads_total",
                     METRIC_COUNTER, "Times the Cube API key file was read "
                     "again after it changed (result ok: a new key is in "
                     "use; error: the file was refused, the key in use "
                     "stays).", NULL, 0)) {
    fprintf(stderr, "session-controller: out of memory\n");
    goto out;
  }
  log_set_static(a.lg, "replica", replica);
  raise_nofile(a.lg);

  /* the replica in the User-Agent tells replicas apart in Cube's logs;
   * not when it says "e2b": Cube treats such agents as the SDK (endAt) */
  if(mentions_e2b(replica))
    snprintf(ua, sizeof(ua), "session-controller/%s", SC_VERSION);
  else
    snprintf(ua, sizeof(ua), "session-controller/%s (replica %s)",
             SC_VERSION, replica);
  memset(&so, 0, sizeof(so));
  so.base = a.base;
  so.user_agent = ua;
  so.poll_interval_ms = (int)cfg.watch_poll_ms;
  so.relaxed_sync = true; /* status writes are recomputed by the next pass */
  so.kubeconfig = cfg.kubeconfig;
  so.namespace_ = cfg.namespace_;
  /* the finalizer: added per session by the executor (act/exec.c) */
  so.watch_timeout_s = (int)(cfg.watch_timeout_ms / 1000);
  so.create = cfg.create_store;
  so.log = a.lg;       /* objects that do not decode are reported */
  so.metrics = m;
  so.mark_invalid = true;
  {
    sc_err err = store_open(cfg.store, &so, &st, &eb);
    if(err) {
      log_kv(a.lg, LOG_ERROR, "cannot open the store", "store", cfg.store,
             "error", eb.msg, "hint", err == SC_ERR_NOT_FOUND
               ? "check the path; --create-store creates an empty store"
               : "", NULL);
      goto out;
    }
  }
  if(store_created(st))
    log_kv(a.lg, LOG_INFO, "created store (--create-store)", "store",
           cfg.store, NULL);
  if(claim_store(&a, st, &cfg, &served))
    goto out;
  warn_secrets(&a, &cfg, st);
  if(!strcmp(cfg.store, "kube") || !strncmp(cfg.store, "kube:", 5)) {
    if(kube_setup(&a, &cfg, st, replica, ua, &kh, &eb)) {
      log_kv(a.lg, LOG_ERROR, "cannot set up events / leader election",
             "error", eb.msg, NULL);
      goto out;
    }
  }
  cube_client_opts_init(&co);
  co.user_agent = ua;
  co.base_url = cfg.cube_url;
  /* a key file is read again when it changes (docs/controller.md); the
   * environment's key is for the life of the process */
  co.api_key = cfg.cube_api_key;
  co.api_key_file = cfg.cube_api_key_file;
  co.on_key_reload = on_key_reload;
  co.on_key_reload_ud = &a;
  co.ca_file = cfg.cube_ca;
  co.insecure_skip_verify = cfg.cube_insecure_skip_verify;
  co.max_inflight = cfg.max_inflight;
  co.qps = cfg.cube_qps;
  co.timeout_ms = (long)cfg.cube_timeout_ms;
  cube = cube_client_new(a.base, &co, &eb);
  if(!cube) {
    log_kv(a.lg, LOG_ERROR, "cannot set up the Cube client", "error", eb.msg,
           NULL);
    goto out;
  }
  if(cfg.cube_insecure_skip_verify)
    log_kv(a.lg, LOG_WARN, "TLS verification of Cube is OFF "
           "(--cube-insecure-skip-verify)", NULL);
  if(audit_open(cfg.audit_log, a.lg, &au, &eb) ||
     audit_set_metrics(au, m)) {
    log_kv(a.lg, LOG_ERROR, "cannot open the audit log", "error", eb.msg,
           NULL);
    goto out;
  }
  a.au = au;

  {
    /* the tenant policy: a bad one refuses to start, never opens up */
    policy_flags pf = {cfg.workspace_root, cfg.volume_policy,
                       cfg.egress_ceiling, cfg.egress_allow,
                       cfg.allowed_templates};
    char desc[512];
    if(policy_watch_new(&pf, cfg.policy_file, a.lg, m, &a.pw, &eb)) {
      log_kv(a.lg, LOG_ERROR, "cannot load the tenant policy", "error",
             eb.msg, NULL);
      goto out;
    }
    policy_describe(policy_watch_current(a.pw), desc, sizeof(desc));
    log_kv(a.lg, LOG_INFO, "tenant policy", "policy", desc, NULL);
  }

  memset(&ro, 0, sizeof(ro));
  ro.base = a.base;
  ro.st = st;
  ro.cube = cube;
  ro.lg = a.lg;
  ro.m = m;
  ro.au = au;
  plan_config_defaults(&ro.plan);
  ro.plan.controller_name = cfg.name;
  ro.plan.orphan_grace_ms = cfg.orphan_grace_ms;
  ro.plan.max_delete_fraction = cfg.max_delete_fraction;
  ro.plan.force = cfg.force;
  ro.plan.max_delete_floor = (size_t)cfg.max_delete_floor;
  ro.plan.brake_window_ms = cfg.brake_window_ms;
  ro.plan.reclaim_brake_fraction = cfg.reclaim_brake_fraction;
  ro.plan.reclaim_brake_floor = (size_t)cfg.reclaim_brake_floor;
  ro.plan.max_paused = (size_t)cfg.max_paused;
  ro.plan.max_paused_per_tenant = (size_t)cfg.max_paused_per_tenant;
  ro.plan.max_running_per_tenant = (size_t)cfg.max_running_per_tenant;
  ro.plan.bind_tenant_to_namespace = strcmp(cfg.tenant_binding, "free") != 0;
  ro.plan.create_intent_ttl_ms = cfg.create_claim_ttl_ms;
  /* rule 11's bound: the DELETE goes within the window, Cube's timeout
   * ends it, and the void comes after both (config.c checks the sum) */
  ro.plan.reclaim_void_after_ms = cfg.reclaim_void_after_ms;
  ro.plan.reclaim_send_within_ms = cfg.reclaim_void_after_ms -
                                   cfg.cube_timeout_ms -
                                   PLAN_RECLAIM_SEND_MARGIN_MS;
  ro.plan.default_internet =
    !strcmp(cfg.default_internet_access, "true")    ? SESSION_OPT_TRUE
    : !strcmp(cfg.default_internet_access, "false") ? SESSION_OPT_FALSE
                                                    : SESSION_OPT_UNSET;
  ro.plan.default_deny_out = cfg.deny_out;
  ro.plan.n_default_deny_out = cfg.n_deny_out;
  ro.plan.adopted_names = (const char *const *)served.adopted;
  ro.plan.n_adopted_names = served.n_adopted;
  /* from the key of the start, for the life of the process: a key read
   * again later does not change it (the proofs written stay valid) */
  plan_link_key_derive(cfg.cube_api_key, cfg.name, link_key);
  if(cfg.cube_api_key) { /* the client holds its own copy: no stale one */
    OPENSSL_cleanse(cfg.cube_api_key, strlen(cfg.cube_api_key));
    free(cfg.cube_api_key);
    cfg.cube_api_key = NULL;
  }
  ro.plan.link_key = link_key;
  ro.plan.policy = policy_watch_current(a.pw);
  ro.replica = replica;
  ro.resync_ms = cfg.resync_ms;
  ro.dry_run = cfg.dry_run;
  ro.once = cfg.once;
  ro.shards = cfg.shards;
  ro.shard_index = cfg.shard_index;
  ro.shard_whole_list_ms = cfg.shard_whole_list_ms;
  /* only the leader acts, --once has no renewals, --dry-run shows all */
  ro.share_work = cfg.share_work && !cfg.leader_elect && !cfg.once &&
                  !cfg.dry_run;
  a.rec = reconciler_new(&ro, &eb);
  if(!a.rec) {
    log_kv(a.lg, LOG_ERROR, "cannot set up the reconciler", "error", eb.msg,
           NULL);
    goto out;
  }
  if(a.kev) {
    recorder rc_ = kube_events_recorder(a.kev);
    reconciler_set_recorder(a.rec, &rc_);
  }
  policy_watch_on_change(a.pw, on_policy, &a);
  reconciler_set_leader(a.rec, a.kl == NULL);
  metrics_set(m, "session_controller_leader", NULL, a.kl ? 0 : 1);
  if(cfg.metrics_addr && *cfg.metrics_addr) {
    httpd_hooks hooks = {hook_healthy, hook_ready, &a};
    httpd_opts hopts = {cfg.metrics_max_connections, 0, a.lg};
    char ps[16], mc[16];
    if(httpd_start(a.base, cfg.metrics_addr, m, &hooks, &hopts, &hd, &port,
                   &eb)) {
      log_kv(a.lg, LOG_ERROR, "cannot serve metrics", "error", eb.msg, NULL);
      goto out;
    }
    snprintf(ps, sizeof(ps), "%d", port);
    snprintf(mc, sizeof(mc), "%d", httpd_max_connections(hd));
    log_kv(a.lg, LOG_INFO, "serving /metrics /healthz /readyz", "addr",
           cfg.metrics_addr, "port", ps, "max_connections", mc, NULL);
  }
  a.sigterm = evsignal_new(a.base, SIGTERM, on_signal, &a);
  a.sigint = evsignal_new(a.base, SIGINT, on_signal, &a);
  a.sighup = evsignal_new(a.base, SIGHUP, on_sighup, &a);
  a.poll = event_new(a.base, -1, EV_PERSIST, on_poll, &a);
  if(!a.sigterm || !a.sigint || !a.sighup || !a.poll)
    goto out;
  event_add(a.sigterm, NULL);
  event_add(a.sigint, NULL);
  event_add(a.sighup, NULL);
  event_add(a.poll, &tick);

  log_kv(a.lg, LOG_INFO, "session-controller starting", "version",
         SC_VERSION, "store", cfg.store, "cube", cfg.cube_url, "name",
         cfg.name, "dry_run", cfg.dry_run ? "true" : "false", NULL);
  if(reconciler_start(a.rec, &eb)) {
    log_kv(a.lg, LOG_ERROR, "cannot start", "error", eb.msg, NULL);
    goto out;
  }
  if(a.kl)
    kube_leader_start(a.kl);
  event_base_dispatch(a.base);
  log_kv(a.lg, LOG_INFO, "stopped", NULL);
  rc = reconciler_failed(a.rec) ? 1 : 0;

out:
  OPENSSL_cleanse(link_key, sizeof(link_key));
  httpd_stop(hd);
  cube_client_free(cube); /* aborts what is still in flight */
  reconciler_free(a.rec);
  policy_watch_free(a.pw);
  kube_leader_free(a.kl);
  kube_events_free(a.kev);
  kube_http_free(kh);
  if(a.sigterm)
    event_free(a.sigterm);
  if(a.sigint)
    event_free(a.sigint);
  if(a.sighup)
    event_free(a.sighup);
  if(a.poll)
    event_free(a.poll);
  audit_close(au);
  store_close(st);
  store_served_by_clear(&served);
  metrics_free(m);
  if(a.base)
    event_base_free(a.base);
  log_free(a.lg);
  config_clear(&cfg);
  return rc;
}
