/* config.c - flags, environment and the YAML config file (see config.h). */
#include "controller/ops/config.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "api/duration.h"
#include "api/rules.h"
#include "lib/dynbuf.h"
#include "controller/ops/log.h"

/* OPT_COUNT: a whole number from 0 (a budget with no limit) to 100000;
 * OPT_LIST: a string of comma-separated entries, and a flag given again
 * on the command line adds its entries to the first one's */
typedef enum opt_type { OPT_STR, OPT_BOOL, OPT_DUR, OPT_INT, OPT_DOUBLE,
                        OPT_COUNT, OPT_LIST } opt_type;

typedef struct opt {
  const char *name;
  opt_type type;
  size_t off;
  const char *def;
  const char *help;
} opt;

#define O(f) offsetof(config, f)
static const opt opts[] = {
  {"store", OPT_STR, O(store), "sqlite:sessions.db",
   "where sessions live (sqlite:PATH, kube, kube:CONTEXT); env SESSION_STORE "
   "too"},
  {"create-store", OPT_BOOL, O(create_store), "false",
   "sqlite store: create PATH when it does not exist (else the controller "
   "refuses to start: a mistyped path is not an empty store)"},
  {"watch-poll", OPT_DUR, O(watch_poll_ms), "10ms",
   "sqlite store: how often the watch looks for changes (one small read "
   "of the revision) when the kernel cannot tell it of writes (no "
   "inotify); with inotify a write wakes it at once and it polls only "
   "every max(this, 1s), for writes the kernel does not see (another "
   "host on a network filesystem)"},
  {"kubeconfig", OPT_STR, O(kubeconfig), NULL,
   "kube store: kubeconfig file (default $KUBECONFIG, in-cluster, "
   "~/.kube/config)"},
  {"namespace", OPT_STR, O(namespace_), NULL,
   "kube store: watch only this namespace (default all)"},
  {"watch-timeout", OPT_DUR, O(watch_timeout_ms), "0s",
   "kube store: length of one watch request (0: random 4-6 minutes)"},
  {"leader-elect", OPT_BOOL, O(leader_elect), "false",
   "kube store: only the holder of a Lease acts on Cube (an optimisation; "
   "every replica is safe alone)"},
  {"leader-elect-namespace", OPT_STR, O(leader_elect_namespace), NULL,
   "kube store: namespace of the Lease (default the pod's namespace, else "
   "default)"},
  {"leader-elect-name", OPT_STR, O(leader_elect_name), "session-controller",
   "kube store: name of the Lease"},
  {"cube-url", OPT_STR, O(cube_url), "http://127.0.0.1:3000",
   "base URL of the Cube (E2B) API"},
  {"cube-api-key-file", OPT_STR, O(cube_api_key_file), NULL,
   "file holding the Cube API key, read again when it changes (else env CUBE_API_KEY)"},
  {"cube-ca", OPT_STR, O(cube_ca), NULL,
   "CA bundle to verify Cube's TLS certificate"},
  {"cube-insecure-skip-verify", OPT_BOOL, O(cube_insecure_skip_verify),
   "false", "do not verify Cube's TLS certificate (testing only)"},
  {"name", OPT_STR, O(name), "session-controller",
   "controller name: the lea.managed-by tag on sandboxes; one name per "
   "store (see --adopt-from)"},
  {"adopt-from", OPT_STR, O(adopt_from), NULL,
   "rename: VALUE is the --name the store was served by; take the store "
   "over with the sandboxes tagged lea.managed-by=VALUE (without it, a store "
   "served by another name is refused)"},
  {"replica", OPT_STR, O(replica), NULL,
   "this replica's name in logs and audit (default HOSTNAME-PID)"},
  {"resync", OPT_DUR, O(resync_ms), "60s", "full reconcile pass period"},
  {"shards", OPT_STR, O(shards), "off",
   "split the sessions between replicas by a hash of the tenant, to save "
   "work (never needed for safety): off (every replica reconciles every "
   "session), auto (the live replicas registered in the store, renewed "
   "four times a --resync; one that stops renewing is dropped and its "
   "share taken within two resyncs; sqlite store: a row, kube: a Lease "
   "each), or N with --shard-index"},
  {"share-work", OPT_BOOL, O(share_work), "true",
   "with --shards off: the replicas registered in the store (as with "
   "--shards auto) split the Cube work by session: each one plans every "
   "session but acts, and reacts to store events and timers, only for the "
   "sessions the hash of (tenant, session ID) over the live replicas gives "
   "it; a replica that stops renewing is dropped and its share acted on "
   "within two resyncs (false: every replica acts for every session; off "
   "with --leader-elect, --once, --dry-run or a store without members)"},
  {"shard-index", OPT_STR, O(shard_index), NULL,
   "with --shards N: this replica's shard, 0 to N-1 (a fixed split: a "
   "stopped shard's tenants wait for it)"},
  {"shard-whole-list-every", OPT_DUR, O(shard_whole_list_ms), "10m",
   "with --shards: a full pass lists Cube one owned tenant at a time "
   "(lea.tenant_id) where that takes fewer requests than the whole list, "
   "as the last lists showed (E2B pages by 100 rows; Cube answers a whole "
   "list in one request, so there it stays whole), and whole at least "
   "this often: only a whole list shows the sandboxes of a tenant no "
   "session is left in, or without a tenant tag, so such an orphan is "
   "deleted at most this long and a --resync after its --orphan-grace; "
   "0: always whole"},
  {"cube-qps", OPT_DOUBLE, O(cube_qps), "30",
   "token bucket rate toward Cube, requests/s of this replica (0 = "
   "unlimited). Cube allows 100 requests/s per API key and replicas share "
   "the key: 3 replicas at 30 stay under it with room for sessionctl; a "
   "new session costs one call (its create), so 30 also carries 30 "
   "arrivals/s. A single replica may raise it to about 90"},
  {"max-inflight", OPT_INT, O(max_inflight), "128",
   "most Cube calls in flight at once (also Cube connections). Measured "
   "with 10,000 creates at once and --cube-qps 0: at 20 ms per call the "
   "rate grows with it (32: 1,090/s, 64: 1,680/s) until the controller's "
   "CPU is the limit at 128 (2,170/s; 256: 2,190/s); with no latency "
   "every value gives about 2,200/s. The token bucket, not this, keeps "
   "the rate within Cube's limit"},
  {"orphan-grace", OPT_DUR, O(orphan_grace_ms), "10m",
   "how long an orphan must be paused (Cube's clock) before deletion"},
  {"max-delete-fraction", OPT_DOUBLE, O(max_delete_fraction), "0.2",
   "orphan-deletion guard: no orphan is deleted while more than this "
   "fraction of the managed sandboxes (and more than --max-delete-floor) "
   "have no session, whatever their state or age (a wiped or mis-pointed "
   "store: a 10- or 40-sandbox fleet loses none), nor when the orphans "
   "deleted in the last --brake-window plus those due would pass "
   "max(floor, fraction x managed); logged at ERROR, counted, an Event"},
  {"max-delete-floor", OPT_INT, O(max_delete_floor), "2",
   "up to this many orphans are never held back by the guard (a small "
   "fleet can clean a leak)"},
  {"brake-window", OPT_DUR, O(brake_window_ms), "10m",
   "the window of the orphan guard's budget and the reclaim brake, by "
   "Cube's clock (a simulator's fast clock shrinks it alike)"},
  {"reclaim-brake-fraction", OPT_DOUBLE, O(reclaim_brake_fraction), "0.5",
   "reclaim brake: at most this fraction of the paused sandboxes (and at "
   "least --reclaim-brake-floor) are reclaimed per --brake-window; the "
   "others stay due and wait, longest-paused first (a jump of Cube's "
   "clock makes them all due at once); 0: no brake"},
  {"reclaim-brake-floor", OPT_INT, O(reclaim_brake_floor), "10",
   "reclaims a window the brake never holds back"},
  {"force", OPT_BOOL, O(force), "false",
   "lift the orphan-deletion guard and the reclaim brake"},
  {"max-paused", OPT_COUNT, O(max_paused), "0",
   "capacity: at most this many paused sandboxes of all tenants; over it, "
   "the longest-paused (Cube's clock) are reclaimed before their "
   "reclaimAfter, within the reclaim brake (reclaimAfter 0 counts but is "
   "never chosen); 0: no limit"},
  {"max-paused-per-tenant", OPT_COUNT, O(max_paused_per_tenant), "0",
   "capacity: the same budget for each tenant's paused sandboxes; 0: no "
   "limit"},
  {"max-running-per-tenant", OPT_COUNT, O(max_running_per_tenant), "0",
   "capacity: a create that would make a tenant's running sandboxes (in-"
   "flight creates counted) more than this waits, Pending/QuotaExceeded, "
   "and goes in creation order as slots free (no running one is paused); "
   "0: no limit"},
  {"create-claim-ttl", OPT_DUR, O(create_claim_ttl_ms), "3s",
   "other replicas wait this long by Cube's clock for a claimed create "
   "(and until each has seen the claim for min(TTL, 40s)); the claim is "
   "written when the create is sent, so it covers one create call: a "
   "create slower than the TTL may be duplicated, and the duplicate is "
   "deleted (rule 6)"},
  {"reclaim-void-after", OPT_DUR, O(reclaim_void_after_ms), "60s",
   "a written reclaim the session's spec no longer asks for (spec.state "
   "Running, reclaimAfter 0 or raised) is dropped once this replica has "
   "seen it unchanged this long, so no DELETE of it can be in flight (a "
   "reclaim's DELETE is sent within this, less --cube-timeout and 1s, of "
   "writing its intent, or not at all); until then the sandbox is neither "
   "deleted nor resumed. At least --cube-timeout plus 5s"},
  {"cube-timeout", OPT_DUR, O(cube_timeout_ms), "35s",
   "the time a Cube call other than pause and connect (125s) may take "
   "before it is given up; at most 35s, which the create claim's local "
   "wait (40s) and --reclaim-void-after count on"},
  {"tenant-binding", OPT_STR, O(tenant_binding), "namespace",
   "namespace: a session acts only if spec.tenantID is its namespace; "
   "free: any tenantID (one trusted writer only)"},
  {"default-internet-access", OPT_STR, O(default_internet_access), "cube",
   "the internet access of sessions whose spec.network.allowInternetAccess "
   "is absent: false (the create says allow_internet_access false: no "
   "egress but spec.network.allowOut), true, or cube (nothing is sent; "
   "Cube's default, open). A platform running untrusted code sets false"},
  {"default-deny-out", OPT_STR, O(default_deny_out), NULL,
   "comma-separated CIDRs or IP addresses denied to sessions whose "
   "spec.network.denyOut is empty (e.g. 169.254.169.254/32,10.0.0.0/8: "
   "the metadata service and the platform's own network)"},
  {"policy", OPT_STR, O(policy_file), NULL,
   "the tenant policy file (kind: TenantPolicy; docs/security.md): per "
   "tenant or glob, workspace roots, volumes, egress ceiling and "
   "templates over the flags below; read again when it changes (a bad "
   "file refuses to start; on a reload the last good policy stays, and "
   "the log says why)"},
  {"workspace-root", OPT_LIST, O(workspace_root), NULL,
   "a directory under which each tenant's spec.workspace.hostPath must "
   "lie, as DIR/<tenant>/... (repeatable, or comma-separated); the short "
   "form, spec.workspace with mountPath alone, mounts "
   "DIR/<tenant>/<sessionID> of the first. Without one, spec.workspace is "
   "refused (PolicyDenied)"},
  {"volume-policy", OPT_STR, O(volume_policy), "none",
   "which spec.volumeMounts a tenant may name: none (refused), "
   "tenant-prefix (names beginning with <tenant>-), or file (the "
   "allowlist of each tenant in --policy)"},
  {"egress-ceiling", OPT_STR, O(egress_ceiling), "none",
   "the most egress a tenant's spec may ask for: none (no internet and no "
   "allowOut, whatever the spec asks), allowlist (no internet; allowOut "
   "only within --egress-allow, all of it when the spec names none), or "
   "internet (the spec as written: the behaviour before this flag). A "
   "spec may narrow it, never widen it"},
  {"egress-allow", OPT_LIST, O(egress_allow), NULL,
   "with --egress-ceiling allowlist: the CIDRs, IP addresses and host "
   "names (*.example.com too) a tenant's allowOut may name (repeatable, "
   "or comma-separated)"},
  {"allowed-templates", OPT_LIST, O(allowed_templates), NULL,
   "the templates (names or globs) a tenant may start (repeatable, or "
   "comma-separated; default any)"},
  {"dry-run", OPT_BOOL, O(dry_run), "false",
   "plan, log and write status, but call no mutating Cube endpoint"},
  {"audit-log", OPT_STR, O(audit_log), NULL,
   "append one JSON line per destructive action to FILE, and an "
   "orphan's intent line before its DELETE (SIGHUP reopens it; a line "
   "that cannot be written is logged, counted and makes /readyz 503; an "
   "orphan whose intent line fails is not deleted)"},
  {"metrics-addr", OPT_STR, O(metrics_addr), "127.0.0.1:9090",
   "HOST:PORT of /metrics, /healthz, /readyz (port 0: any; empty: off); "
   "/readyz is 503 with the reason while the store is lost or takes no "
   "writes (then no pause, delete or create goes to Cube), Cube refuses "
   "the key, passes fail, or the audit log takes no line"},
  {"metrics-max-connections", OPT_INT, O(metrics_max_connections), "64",
   "most connections open at once on --metrics-addr (at most a quarter of "
   "the descriptor limit; over it, the oldest idle one is closed)"},
  {"log-format", OPT_STR, O(log_format), "logfmt", "logfmt or json"},
  {"log-level", OPT_STR, O(log_level), "info", "debug, info, warn, error"},
  {"config", OPT_STR, O(config_file), NULL,
   "YAML file of settings (keys are flag names)"},
  {"once", OPT_BOOL, O(once), "false",
   "run one full pass, wait for its actions, and exit"},
};
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

static const opt *find_opt(const char *name, size_t len)
{
  size_t i;
  for(i = 0; i < N_OPTS; i++)
    if(strlen(opts[i].name) == len && !strncmp(opts[i].name, name, len))
      return &opts[i];
  return NULL;
}

static sc_err set_opt(config *c, const opt *o, const char *v,
                      const char *where, sc_errbuf *eb)
{
  char *base = (char *)c + o->off;
  char *end;
  switch(o->type) {
  case OPT_LIST:
  case OPT_STR: {
    char **p = (char **)(void *)base;
    char *d = strdup(v);
    if(!d)
      return SC_ERR_NOMEM;
    free(*p);
    *p = d;
    return SC_OK;
  }
  case OPT_BOOL: {
    bool *p = (bool *)(void *)base;
    if(!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes"))
      *p = true;
    else if(!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no"))
      *p = false;
    else
      return sc_errf(eb, SC_ERR_INVALID,
                     "%s: --%s: \"%s\" is not a boolean (true or false)",
                     where, o->name, v);
    return SC_OK;
  }
  case OPT_DUR: {
    int64_t *p = (int64_t *)(void *)base;
    if(duration_parse(v, p))
      return sc_errf(eb, SC_ERR_INVALID,
                     "%s: --%s: \"%s\" is not a duration (use e.g. 60s, 10m)",
                     where, o->name, v);
    return SC_OK;
  }
  case OPT_INT:
  case OPT_COUNT: {
    int *p = (int *)(void *)base;
    long l, lo = o->type == OPT_COUNT ? 0 : 1;
    errno = 0;
    l = strtol(v, &end, 10);
    if(errno || end == v || *end || l < lo || l > 100000)
      return sc_errf(eb, SC_ERR_INVALID,
                     "%s: --%s: \"%s\" is not a whole number from %ld to "
                     "100000", where, o->name, v, lo);
    *p = (int)l;
    return SC_OK;
  }
  case OPT_DOUBLE: {
    double *p = (double *)(void *)base;
    double d;
    errno = 0;
    d = strtod(v, &end);
    if(errno || end == v || *end || !(d >= 0) || d > 1e9)
      return sc_errf(eb, SC_ERR_INVALID,
                     "%s: --%s: \"%s\" is not a non-negative number", where,
                     o->name, v);
    *p = d;
    return SC_OK;
  }
  }
  return SC_ERR_INTERNAL;
}

static sc_err load_file(config *c, const char *path, sc_errbuf *eb)
{
  FILE *f = fopen(path, "rb");
  yaml_parser_t p;
  yaml_event_t ev;
  sc_err err = SC_OK;
  int depth = 0, done = 0;
  char *key = NULL;
  size_t key_line = 0;

  if(!f)
    return sc_errf(eb, SC_ERR_IO, "--config %s: %s", path, strerror(errno));
  if(!yaml_parser_initialize(&p)) {
    fclose(f);
    return SC_ERR_NOMEM;
  }
  yaml_parser_set_input_file(&p, f);
  while(!done && !err) {
    if(!yaml_parser_parse(&p, &ev)) {
      err = sc_errf(eb, SC_ERR_INVALID, "%s:%zu:%zu: %s", path,
                    p.problem_mark.line + 1, p.problem_mark.column + 1,
                    p.problem ? p.problem : "YAML syntax error");
      break;
    }
    switch(ev.type) {
    case YAML_MAPPING_START_EVENT:
      if(++depth > 1)
        err = sc_errf(eb, SC_ERR_INVALID,
                      "%s:%zu:%zu: %s: expected a plain value, not a mapping",
                      path, ev.start_mark.line + 1, ev.start_mark.column + 1,
                      key ? key : "(top)");
      break;
    case YAML_SEQUENCE_START_EVENT:
      err = sc_errf(eb, SC_ERR_INVALID,
                    "%s:%zu:%zu: %s: expected a plain value, not a list", path,
                    ev.start_mark.line + 1, ev.start_mark.column + 1,
                    key ? key : "(top)");
      break;
    case YAML_ALIAS_EVENT:
      err = sc_errf(eb, SC_ERR_INVALID, "%s:%zu:%zu: aliases are not allowed",
                    path, ev.start_mark.line + 1, ev.start_mark.column + 1);
      break;
    case YAML_SCALAR_EVENT: {
      const char *v = (const char *)ev.data.scalar.value;
      if(depth != 1) {
        err = sc_errf(eb, SC_ERR_INVALID,
                      "%s:%zu:%zu: expected a mapping of flag names to values",
                      path, ev.start_mark.line + 1, ev.start_mark.column + 1);
      }
      else if(!key) {
        key = strdup(v);
        key_line = ev.start_mark.line + 1;
        if(!key)
          err = SC_ERR_NOMEM;
      }
      else {
        const opt *o = find_opt(key, strlen(key));
        char where[600];
        snprintf(where, sizeof(where), "%s:%zu", path, key_line);
        if(!o || !strcmp(key, "config"))
          err = sc_errf(eb, SC_ERR_INVALID, "%s: %s: unknown setting", where,
                        key);
        else
          err = set_opt(c, o, v, where, eb);
        free(key);
        key = NULL;
      }
      break;
    }
    case YAML_STREAM_END_EVENT:
      done = 1;
      break;
    default:
      break;
    }
    yaml_event_delete(&ev);
  }
  free(key);
  yaml_parser_delete(&p);
  fclose(f);
  return err;
}

sc_err config_read_key_file(const char *path, char **out, sc_errbuf *eb)
{
  FILE *f = fopen(path, "rb");
  dynbuf b;
  char chunk[512];
  size_t n;
  sc_err err = SC_OK;
  if(!f)
    return sc_errf(eb, SC_ERR_IO, "--cube-api-key-file %s: %s", path,
                   strerror(errno));
  dynbuf_init(&b, 8192);
  while((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && !err)
    err = dynbuf_add(&b, chunk, n);
  fclose(f);
  if(err) {
    dynbuf_free(&b);
    return sc_errf(eb, err, "--cube-api-key-file %s: over 8 KiB", path);
  }
  while(b.len && isspace((unsigned char)b.mem[b.len - 1]))
    b.mem[--b.len] = '\0';
  if(!b.len || strlen(dynbuf_ptr(&b)) != b.len) {
    dynbuf_free(&b);
    return sc_errf(eb, SC_ERR_INVALID,
                   "--cube-api-key-file %s: empty or binary", path);
  }
  *out = dynbuf_take(&b);
  return *out ? SC_OK : SC_ERR_NOMEM;
}

static void env_name(const opt *o, char *buf, size_t len)
{
  size_t i, n = (size_t)snprintf(buf, len, "SESSION_CONTROLLER_");
  for(i = 0; o->name[i] && n + 1 < len; i++)
    buf[n++] = o->name[i] == '-' ? '_' : (char)toupper(o->name[i]);
  buf[n] = '\0';
}

/* --default-deny-out split on commas into c->deny_out, each entry a CIDR
 * or an IP address (what denyOut takes) */
static sc_err split_deny_out(config *c, sc_errbuf *eb)
{
  const char *p = c->default_deny_out;
  size_t i;
  for(i = 0; i < c->n_deny_out; i++)
    free(c->deny_out[i]);
  c->n_deny_out = 0;
  while(*p) {
    size_t n = strcspn(p, ","), k = n;
    const char *q = p;
    char **v;
    while(n && (*q == ' '))
      q++, n--;
    while(n && q[n - 1] == ' ')
      n--;
    if(!n || n > 64 || !rule_is_address(q, n))
      return sc_errf(eb, SC_ERR_INVALID, "--default-deny-out: \"%.*s\" is "
                     "not a CIDR or an IP address (use e.g. "
                     "169.254.169.254/32,10.0.0.0/8)", (int)(k > 80 ? 80 : k),
                     p);
    if(c->n_deny_out >= 64)
      return sc_errf(eb, SC_ERR_INVALID, "--default-deny-out: more than 64 "
                     "entries");
    v = realloc(c->deny_out, (c->n_deny_out + 1) * sizeof(*v));
    if(!v)
      return SC_ERR_NOMEM;
    c->deny_out = v;
    if(!(v[c->n_deny_out] = strndup(q, n)))
      return SC_ERR_NOMEM;
    c->n_deny_out++;
    p += k;
    if(*p == ',')
      p++;
  }
  return SC_OK;
}

sc_err config_parse(config *c, int argc, char **argv, sc_errbuf *eb)
{
  size_t i;
  int a;
  sc_err err;
  const char *v;
  bool list_seen[N_OPTS];

  memset(c, 0, sizeof(*c));
  for(i = 0; i < N_OPTS; i++)
    if(opts[i].def && (err = set_opt(c, &opts[i], opts[i].def, "default",
                                     eb)))
      return err;

  /* --config first, from argv or the environment */
  v = getenv("SESSION_CONTROLLER_CONFIG");
  for(a = 1; a < argc; a++) {
    if(!strcmp(argv[a], "--config") && a + 1 < argc)
      v = argv[a + 1];
    else if(!strncmp(argv[a], "--config=", 9))
      v = argv[a] + 9;
  }
  if(v && *v) {
    err = load_file(c, v, eb);
    if(err)
      return err;
  }
  /* the environment */
  for(i = 0; i < N_OPTS; i++) {
    char name[96];
    env_name(&opts[i], name, sizeof(name));
    v = getenv(name);
    if(!v && !strcmp(opts[i].name, "store"))
      v = getenv("SESSION_STORE");
    if(v && (err = set_opt(c, &opts[i], v, name, eb)))
      return err;
  }
  /* flags */
  memset(list_seen, 0, sizeof(list_seen));
  for(a = 1; a < argc; a++) {
    const char *arg = argv[a], *eq;
    const opt *o;
    if(!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
      c->help = true;
      continue;
    }
    if(!strcmp(arg, "--version")) {
      c->version = true;
      continue;
    }
    if(strncmp(arg, "--", 2))
      return sc_errf(eb, SC_ERR_INVALID, "unexpected argument \"%s\"", arg);
    arg += 2;
    eq = strchr(arg, '=');
    o = find_opt(arg, eq ? (size_t)(eq - arg) : strlen(arg));
    if(!o) {
      if(!strncmp(arg, "cube-api-key", 12) && (!arg[12] || arg[12] == '='))
        return sc_errf(eb, SC_ERR_INVALID,
                       "--cube-api-key is not a flag: a key on the command "
                       "line shows in the process list; use "
                       "--cube-api-key-file or CUBE_API_KEY");
      return sc_errf(eb, SC_ERR_INVALID, "unknown flag --%.*s",
                     (int)(eq ? (size_t)(eq - arg) : strlen(arg)), arg);
    }
    if(eq)
      v = eq + 1;
    else if(o->type == OPT_BOOL)
      v = "true";
    else if(a + 1 < argc)
      v = argv[++a];
    else
      return sc_errf(eb, SC_ERR_INVALID, "--%s needs a value", o->name);
    if(o->type == OPT_LIST && list_seen[o - opts]) {
      /* given again: its entries join the earlier ones */
      char **p = (char **)(void *)((char *)c + o->off);
      size_t l1 = *p ? strlen(*p) : 0, l2 = strlen(v);
      char *j = malloc(l1 + l2 + 2);
      if(!j)
        return SC_ERR_NOMEM;
      memcpy(j, *p ? *p : "", l1);
      j[l1] = ',';
      memcpy(j + l1 + 1, v, l2 + 1);
      free(*p);
      *p = j;
      continue;
    }
    err = set_opt(c, o, v, "flag", eb);
    if(err)
      return err;
    list_seen[o - opts] = true;
  }
  if(c->help || c->version)
    return SC_OK;
  if(c->cube_api_key_file) {
    free(c->cube_api_key);
    c->cube_api_key = NULL;
    err = config_read_key_file(c->cube_api_key_file, &c->cube_api_key, eb);
    if(err)
      return err;
  }
  else if((v = getenv("CUBE_API_KEY")) && *v) {
    c->cube_api_key = strdup(v);
    /* read once; then out of the environment, so a child process (an
     * exec credential plugin) or /proc/PID/environ does not carry it */
    unsetenv("CUBE_API_KEY");
    if(!c->cube_api_key)
      return SC_ERR_NOMEM;
  }
  if(c->leader_elect && strcmp(c->store, "kube") &&
     strncmp(c->store, "kube:", 5))
    return sc_errf(eb, SC_ERR_INVALID, "--leader-elect needs --store kube "
                   "(the Lease lives in the Kubernetes API; the store is "
                   "\"%s\")", c->store);
  if(c->leader_elect && c->once)
    return sc_errf(eb, SC_ERR_INVALID, "--leader-elect and --once do not go "
                   "together (a --once pass must not wait for a Lease)");
  if(c->shards && strcmp(c->shards, "off") && strcmp(c->shards, "auto")) {
    /* --shards N: the same checks as loop/shard.c's shard_parse, here so
     * that they are usage errors */
    char *e1 = NULL, *e2 = NULL;
    long n, ix = -1;
    errno = 0;
    n = strtol(c->shards, &e1, 10);
    if(!*c->shards || *e1 || errno || n < 1 || n > 1024)
      return sc_errf(eb, SC_ERR_INVALID, "--shards: \"%s\" is not off, "
                     "auto or a number of shards from 1 to 1024", c->shards);
    if(c->shard_index)
      ix = strtol(c->shard_index, &e2, 10);
    if(!c->shard_index || !*c->shard_index || *e2 || ix < 0 || ix >= n)
      return sc_errf(eb, SC_ERR_INVALID, "--shards %ld needs --shard-index "
                     "from 0 to %ld (got %s)", n, n - 1,
                     c->shard_index ? c->shard_index : "none");
  }
  else if(c->shard_index)
    return sc_errf(eb, SC_ERR_INVALID, "--shard-index goes only with "
                   "--shards N (a number), not --shards %s",
                   c->shards ? c->shards : "off");
  if(c->shards && strcmp(c->shards, "off") && c->leader_elect)
    return sc_errf(eb, SC_ERR_INVALID, "--shards and --leader-elect do not "
                   "go together (only the leader acts: nothing to split)");
  if(c->shards && !strcmp(c->shards, "auto") && c->once)
    return sc_errf(eb, SC_ERR_INVALID, "--shards auto and --once do not go "
                   "together (a --once pass would leave before the others "
                   "took its share)");
  if(c->max_delete_floor < 0)
    return sc_errf(eb, SC_ERR_INVALID, "--max-delete-floor: %d is negative",
                   c->max_delete_floor);
  if(c->reclaim_brake_floor < 0)
    return sc_errf(eb, SC_ERR_INVALID, "--reclaim-brake-floor: %d is "
                   "negative", c->reclaim_brake_floor);
  if(c->reclaim_brake_fraction < 0 || c->reclaim_brake_fraction > 1)
    return sc_errf(eb, SC_ERR_INVALID, "--reclaim-brake-fraction: %g is not "
                   "in [0, 1]", c->reclaim_brake_fraction);
  if(c->brake_window_ms < 1000)
    return sc_errf(eb, SC_ERR_INVALID, "--brake-window: at least 1s");
  if(c->max_delete_fraction > 1)
    return sc_errf(eb, SC_ERR_INVALID,
                   "--max-delete-fraction: %g is more than 1", 
                   c->max_delete_fraction);
  if(c->watch_poll_ms < 1 || c->watch_poll_ms > 60000)
    return sc_errf(eb, SC_ERR_INVALID, "--watch-poll: from 1ms to 1m");
  if(c->resync_ms < 1000)
    return sc_errf(eb, SC_ERR_INVALID, "--resync: at least 1s");
  if(c->create_claim_ttl_ms < 1000 || c->create_claim_ttl_ms > 3600000)
    return sc_errf(eb, SC_ERR_INVALID, "--create-claim-ttl: from 1s to 1h");
  if(c->cube_timeout_ms < 1000 || c->cube_timeout_ms > 35000)
    return sc_errf(eb, SC_ERR_INVALID, "--cube-timeout: from 1s to 35s");
  if(c->reclaim_void_after_ms < c->cube_timeout_ms + 5000 ||
     c->reclaim_void_after_ms > 86400000)
    return sc_errf(eb, SC_ERR_INVALID, "--reclaim-void-after: from "
                   "--cube-timeout plus 5s (%llds: 1s of margin and 4s to "
                   "send the DELETE in) to 24h",
                   (long long)(c->cube_timeout_ms + 5000) / 1000);
  if(log_level_parse(c->log_level) < 0)
    return sc_errf(eb, SC_ERR_INVALID,
                   "--log-level: \"%s\" is not debug, info, warn or error",
                   c->log_level);
  if(strcmp(c->tenant_binding, "namespace") &&
     strcmp(c->tenant_binding, "free"))
    return sc_errf(eb, SC_ERR_INVALID,
                   "--tenant-binding: \"%s\" is not namespace or free",
                   c->tenant_binding);
  if(strcmp(c->default_internet_access, "true") &&
     strcmp(c->default_internet_access, "false") &&
     strcmp(c->default_internet_access, "cube"))
    return sc_errf(eb, SC_ERR_INVALID, "--default-internet-access: \"%s\" "
                   "is not true, false or cube", c->default_internet_access);
  if(!strcmp(c->default_internet_access, "true") &&
     strcmp(c->egress_ceiling, "internet"))
    return sc_errf(eb, SC_ERR_INVALID, "--default-internet-access true is "
                   "beyond --egress-ceiling %s (a default cannot widen the "
                   "ceiling; set --egress-ceiling internet to keep open "
                   "egress)", c->egress_ceiling);
  if(c->default_deny_out) {
    sc_err e = split_deny_out(c, eb);
    if(e)
      return e;
  }
  if(strcmp(c->log_format, "logfmt") && strcmp(c->log_format, "json"))
    return sc_errf(eb, SC_ERR_INVALID,
                   "--log-format: \"%s\" is not logfmt or json",
                   c->log_format);
  return SC_OK;
}

void config_clear(config *c)
{
  size_t i;
  if(!c)
    return;
  for(i = 0; i < N_OPTS; i++)
    if(opts[i].type == OPT_STR || opts[i].type == OPT_LIST)
      free(*(char **)(void *)((char *)c + opts[i].off));
  if(c->cube_api_key) {
    /* do not leave the secret in freed memory */
    volatile char *p = c->cube_api_key;
    while(*p)
      *p++ = 0;
    free(c->cube_api_key);
  }
  for(i = 0; i < c->n_deny_out; i++)
    free(c->deny_out[i]);
  free(c->deny_out);
  memset(c, 0, sizeof(*c));
}

void config_usage(FILE *out, const char *argv0)
{
  size_t i;
  fprintf(out,
          "Usage: %s [flags]\n\n"
          "Keeps Cube sandboxes in step with the Session objects in a store.\n"
          "Every flag --foo-bar may also come from the environment as\n"
          "SESSION_CONTROLLER_FOO_BAR or from the --config file as foo-bar;\n"
          "flags win over the environment, which wins over the file.\n"
          "The Cube API key comes from --cube-api-key-file or CUBE_API_KEY.\n\n"
          "Flags:\n",
          argv0);
  for(i = 0; i < N_OPTS; i++) {
    char left[64];
    const char *t = opts[i].type == OPT_BOOL     ? ""
                    : opts[i].type == OPT_DUR    ? " DURATION"
                    : opts[i].type == OPT_INT    ? " N"
                    : opts[i].type == OPT_COUNT  ? " N"
                    : opts[i].type == OPT_DOUBLE ? " X"
                    : opts[i].type == OPT_LIST   ? " LIST"
                                                 : " VALUE";
    snprintf(left, sizeof(left), "--%s%s", opts[i].name, t);
    fprintf(out, "  %-34s %s", left, opts[i].help);
    if(opts[i].def)
      fprintf(out, " (default %s)", opts[i].def);
    fputc('\n', out);
  }
  fprintf(out, "  %-34s %s\n  %-34s %s\n", "-h, --help", "show this help",
          "--version", "print the version");
}
