/*
 * cmd_plan.c - `sessionctl plan`: what the controller would do now, each
 * action with its reason. Read-only: it reads the store, lists and GETs
 * sandboxes from Cube, runs the same pure planner as the controller, and
 * prints the plan. It never calls a mutating Cube endpoint and never
 * writes the store.
 */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/policy.h"
#include "api/duration.h"
#include "api/manifest.h"
#include "controller/ops/config.h"
#include "controller/cube/cube.h"
#include "controller/observe/observe.h"
#include "controller/plan/plan.h"
#include "controller/store/store.h"
#include "cmd/sessionctl/ctl.h"

static const char plan_help[] =
  "Print what the controller would do now, and why (read-only).\n"
  "\n"
  "It reads every session from the store, lists the sandboxes tagged\n"
  "lea.managed-by=NAME in Cube (and GETs those a status links to), and\n"
  "runs the controller's planner on them with Cube's clock. Nothing is\n"
  "changed in Cube or in the store.\n"
  "\n"
  "Output: a header line; when there are orphan deletions, a \"guard:\"\n"
  "line saying whether the delete guard holds them back (it does when\n"
  "more than 2 and more than --max-delete-fraction of the managed\n"
  "sandboxes have no session, whatever their state or age, unless\n"
  "--force); then ACTION SESSION SANDBOX REASON\n"
  "rows, the held-back deletions last as held:delete/orphan, or \"No\n"
  "actions\".\n"
  "\n"
  "Usage:\n"
  "  sessionctl plan [flags]\n"
  "\n"
  "Flags:\n"
  "      --cube-url URL             Cube API base URL (default $SESSION_CONTROLLER_CUBE_URL,\n"
  "                                 else http://127.0.0.1:3000)\n"
  "      --cube-api-key-file FILE   file holding the API key (else $CUBE_API_KEY)\n"
  "      --cube-ca FILE             CA bundle for Cube's TLS certificate\n"
  "      --cube-insecure-skip-verify  do not verify Cube's certificate\n"
  "      --name NAME                the controller's lea.managed-by value\n"
  "                                 (default session-controller)\n"
  "      --orphan-grace DURATION    as the controller's flag (default 10m)\n"
  "      --max-delete-fraction X    as the controller's flag (default 0.2)\n"
  "      --max-paused N             as the controller's flags (default 0: no\n"
  "      --max-paused-per-tenant N  limit): capacity reclaims are listed as\n"
  "      --max-running-per-tenant N delete/reclaim with their budget, and a\n"
  "                                 \"quota:\" line counts the creates that wait\n"
  "      --force                    plan as the controller would with --force\n"
  "      --policy FILE              the tenant policy file, as the controller's\n"
  "                                 --policy (without it no spec is judged by\n"
  "                                 a policy: a session the controller refuses\n"
  "                                 PolicyDenied would show a create)\n"
  "      --store URL                sqlite:PATH or kube[:CONTEXT], see sessionctl\n"
  "                                 --help (default $SESSION_STORE, else\n"
  "                                 " CTL_DEFAULT_STORE ")\n"
  "  -h, --help                     help for plan\n"
  "\n"
  "Exit status: 0 when the plan was computed (with or without actions),\n"
  "1 when the store or Cube could not be read, 2 on a usage error.\n";

enum {
  OPT_CUBE_URL = 1,
  OPT_KEY_FILE,
  OPT_CA,
  OPT_INSECURE,
  OPT_NAME,
  OPT_GRACE,
  OPT_FRACTION,
  OPT_FORCE,
  OPT_MAX_PAUSED,
  OPT_MAX_PAUSED_TENANT,
  OPT_MAX_RUNNING_TENANT,
  OPT_POLICY
};

/* a budget flag: 0 (no limit) to 100000, as the controller's */
static int parse_budget(const char *flag, const char *val, size_t *out)
{
  char *end;
  unsigned long v;
  if(*val < '0' || *val > '9')
    return ctl_usage_error("plan: --%s: \"%s\" is not a number from 0 to "
                           "100000", flag, val);
  v = strtoul(val, &end, 10);
  if(*end || v > 100000)
    return ctl_usage_error("plan: --%s: \"%s\" is not a number from 0 to "
                           "100000", flag, val);
  *out = (size_t)v;
  return 0;
}

typedef struct plan_run {
  store_list_result list;
  plan_config cfg;
  unsigned char link_key[PLAN_LINK_KEY_LEN]; /* as the controller's */
  int rc;
} plan_run;

/* The guard line (rule 9): the planner's own words when it held the
 * orphan deletions back; else how far the plan is from it: the guard
 * trips when more than max(floor, fraction) of the managed sandboxes have
 * no session (the candidates, any state or age). This process has deleted
 * nothing, so the window's budget is whole. */
static void print_guard(const plan_config *cfg, const plan *p,
                        size_t n_held)
{
  double limit = cfg->max_delete_fraction * (double)p->n_managed;
  bool over = p->n_orphan_candidates > cfg->max_delete_floor &&
              (double)p->n_orphan_candidates > limit;
  (void)n_held;
  if(!p->n_orphans && !p->guard_tripped)
    return;
  if(p->guard_tripped)
    printf("%s\n", p->guard_message ? p->guard_message
                                    : "guard: orphan deletions held back");
  else if(over)
    printf("guard: --force: %zu orphan deletions planned that the guard "
           "would hold back (%zu of %zu managed sandboxes have no session: "
           "more than %zu and more than %g = --max-delete-fraction %g)\n",
           p->n_orphans, p->n_orphan_candidates, p->n_managed,
           cfg->max_delete_floor, limit, cfg->max_delete_fraction);
  else
    printf("guard: %zu orphan deletion%s, within the limit (%zu of %zu "
           "managed sandboxes have no session; the guard holds every orphan "
           "deletion back past %zu and past %g = --max-delete-fraction %g)\n",
           p->n_orphans, p->n_orphans == 1 ? "" : "s",
           p->n_orphan_candidates, p->n_managed, cfg->max_delete_floor,
           limit, cfg->max_delete_fraction);
}

static const char *action_name(const plan_action *a, char *buf, size_t len)
{
  if(a->type == PLAN_DELETE)
    snprintf(buf, len, "delete/%s", plan_delete_kind_name(a->del_kind));
  else
    snprintf(buf, len, "%s", plan_action_type_name(a->type));
  return buf;
}

/* held: the orphan deletions the guard withheld (from the same plan made
 * with --force), listed after the actions as "held:delete/orphan". */
static void print_plan(plan_run *pr, const observation *obs, const plan *p,
                       const plan *held)
{
  char now[SCTIME_RFC3339_MAX];
  size_t i, n_held = 0, wa = 6, ws = 7, wb = 7;
  const plan_action **rows;
  size_t n_rows = 0;
  sctime_format_rfc3339(obs->cube_now, now, sizeof(now));
  printf("Cube clock %s; %zu sessions, %zu sandboxes observed%s\n", now,
         pr->list.n, obs->n_sbs,
         obs->truncated ? " (a list may be truncated: no orphan decisions)"
                        : "");
  for(i = 0; held && i < held->n_actions; i++)
    if(held->actions[i].del_kind == PLAN_DEL_ORPHAN)
      n_held++;
  print_guard(&pr->cfg, p, n_held);
  for(i = 0; p->capacity_known && i < p->n_tenants; i++)
    if(p->tenants[i].waiting)
      printf("quota: tenant %s: %zu create%s wait for a running slot "
             "(--max-running-per-tenant %zu, %zu running)\n",
             p->tenants[i].tenant, p->tenants[i].waiting,
             p->tenants[i].waiting == 1 ? "" : "s",
             pr->cfg.max_running_per_tenant, p->tenants[i].running);
  if(!p->n_actions && !n_held) {
    printf("No actions: Cube and the store agree.\n");
    return;
  }
  if(!p->n_actions)
    printf("No actions but the orphan deletions the guard holds back:\n");
  rows = calloc(p->n_actions + n_held + 1, sizeof(*rows));
  if(!rows) {
    fprintf(stderr, "error: out of memory\n");
    pr->rc = CTL_EXIT_FAIL;
    return;
  }
  for(i = 0; i < p->n_actions; i++)
    rows[n_rows++] = &p->actions[i];
  for(i = 0; held && i < held->n_actions; i++)
    if(held->actions[i].del_kind == PLAN_DEL_ORPHAN)
      rows[n_rows++] = &held->actions[i];
  for(i = 0; i < n_rows; i++) {
    const plan_action *a = rows[i];
    char act[64];
    size_t l1 = strlen(action_name(a, act, sizeof(act))) +
                (i >= p->n_actions ? 5 : 0);
    size_t l2 = a->ns ? strlen(a->ns) + strlen(a->name) + 1 : 1;
    size_t l3 = a->sandbox_id ? strlen(a->sandbox_id) : 1;
    if(l1 > wa)
      wa = l1;
    if(l2 > ws)
      ws = l2;
    if(l3 > wb)
      wb = l3;
  }
  printf("%-*s   %-*s   %-*s   %s\n", (int)wa, "ACTION", (int)ws, "SESSION",
         (int)wb, "SANDBOX", "REASON");
  for(i = 0; i < n_rows; i++) {
    const plan_action *a = rows[i];
    char act[64], shown[80], key[300];
    action_name(a, act, sizeof(act));
    snprintf(shown, sizeof(shown), "%s%s", i >= p->n_actions ? "held:" : "",
             act);
    if(a->ns)
      snprintf(key, sizeof(key), "%s/%s", a->ns, a->name);
    else
      snprintf(key, sizeof(key), "-");
    printf("%-*s   %-*s   %-*s   %s\n", (int)wa, shown, (int)ws, key,
           (int)wb, a->sandbox_id ? a->sandbox_id : "-",
           a->reason ? a->reason : "");
  }
  free(rows);
}

static void on_observed(observation *obs, void *ud)
{
  plan_run *pr = ud;
  plan_input in;
  plan *p = NULL;
  char **invalid;
  size_t i;
  if(obs->failed) {
    fprintf(stderr, "error: %s\n",
            obs->fail_msg ? obs->fail_msg : "could not observe Cube");
    pr->rc = CTL_EXIT_FAIL;
    observation_free(obs);
    return;
  }
  memset(&in, 0, sizeof(in));
  in.sessions = pr->list.items;
  in.n_sessions = pr->list.n;
  in.sandboxes = obs->sbs;
  in.n_sandboxes = obs->n_sbs;
  in.gone = (const char *const *)obs->gone;
  in.n_gone = obs->n_gone;
  in.list_complete = !obs->truncated;
  in.cube_now = obs->cube_now;
  /* as the controller does: objects that fail validation get no action */
  invalid = calloc(pr->list.n ? pr->list.n : 1, sizeof(*invalid));
  for(i = 0; invalid && i < pr->list.n; i++)
    if((invalid[i] = session_invalid_reason(pr->list.items[i])))
      printf("invalid: %s/%s: %s (nothing is done for it)\n",
             session_eff_namespace(pr->list.items[i]),
             pr->list.items[i]->meta.name, invalid[i]);
  in.invalid = (const char *const *)invalid;
  if(plan_compute(&in, &pr->cfg, &p)) {
    fprintf(stderr, "error: planning failed (out of memory)\n");
    pr->rc = CTL_EXIT_FAIL;
  }
  else {
    plan *held = NULL;
    pr->rc = CTL_EXIT_OK;
    if(p->guard_tripped) {
      /* the same inputs with --force: the orphans the guard withheld */
      plan_config forced = pr->cfg;
      forced.force = true;
      if(plan_compute(&in, &forced, &held)) {
        fprintf(stderr, "error: planning failed (out of memory)\n");
        pr->rc = CTL_EXIT_FAIL;
      }
    }
    if(!pr->rc)
      print_plan(pr, obs, p, held);
    plan_free(held);
  }
  plan_free(p);
  for(i = 0; invalid && i < pr->list.n; i++)
    free(invalid[i]);
  free(invalid);
  observation_free(obs);
}

int ctl_cmd_plan(ctl_env *env, int argc, char **argv)
{
  static const ctl_opt opts[] = {
    {"cube-url", 0, true, OPT_CUBE_URL},
    {"cube-api-key-file", 0, true, OPT_KEY_FILE},
    {"cube-ca", 0, true, OPT_CA},
    {"cube-insecure-skip-verify", 0, false, OPT_INSECURE},
    {"name", 0, true, OPT_NAME},
    {"orphan-grace", 0, true, OPT_GRACE},
    {"max-delete-fraction", 0, true, OPT_FRACTION},
    {"force", 0, false, OPT_FORCE},
    {"max-paused", 0, true, OPT_MAX_PAUSED},
    {"max-paused-per-tenant", 0, true, OPT_MAX_PAUSED_TENANT},
    {"max-running-per-tenant", 0, true, OPT_MAX_RUNNING_TENANT},
    {"policy", 0, true, OPT_POLICY},
    {NULL, 0, false, 0}};
  const char *e = getenv("SESSION_CONTROLLER_CUBE_URL");
  const char *url = e && *e ? e : CUBE_DEFAULT_URL;
  const char *key_file = NULL, *ca = NULL, *val;
  char *key = NULL;
  policy *pol = NULL;
  const char *policy_path = NULL;
  bool insecure = false;
  plan_run pr;
  ctl_args p;
  int id, rc;
  store *st = NULL;
  store_list_opts lo = {NULL, true, false};
  struct event_base *base = NULL;
  cube_client *cube = NULL;
  cube_client_opts co;
  sc_kvlist filter = {0};
  sc_errbuf eb;
  sc_err err;

  memset(&pr, 0, sizeof(pr));
  plan_config_defaults(&pr.cfg);
  ctl_args_init(&p, argc, argv, opts);
  while((id = ctl_args_step(&p, env, plan_help, NULL, &val,
                            &rc)) != CTL_ARG_END) {
    switch(id) {
    case CTL_ARG_EXIT:
      return rc;
    case OPT_CUBE_URL:
      url = val;
      break;
    case OPT_KEY_FILE:
      key_file = val;
      break;
    case OPT_CA:
      ca = val;
      break;
    case OPT_INSECURE:
      insecure = ctl_flag_on(val);
      break;
    case OPT_NAME:
      pr.cfg.controller_name = val;
      break;
    case OPT_GRACE:
      if(duration_parse(val, &pr.cfg.orphan_grace_ms))
        return ctl_usage_error("plan: --orphan-grace: \"%s\" is not a "
                               "duration (use e.g. 10m)", val);
      break;
    case OPT_FRACTION: {
      char *end;
      double d = strtod(val, &end);
      if(end == val || *end || !(d >= 0) || d > 1)
        return ctl_usage_error("plan: --max-delete-fraction: \"%s\" is not "
                               "a number from 0 to 1", val);
      pr.cfg.max_delete_fraction = d;
      break;
    }
    case OPT_FORCE:
      pr.cfg.force = ctl_flag_on(val);
      break;
    case OPT_MAX_PAUSED:
      if(parse_budget("max-paused", val, &pr.cfg.max_paused))
        return CTL_EXIT_USAGE;
      break;
    case OPT_MAX_PAUSED_TENANT:
      if(parse_budget("max-paused-per-tenant", val,
                      &pr.cfg.max_paused_per_tenant))
        return CTL_EXIT_USAGE;
      break;
    case OPT_MAX_RUNNING_TENANT:
      if(parse_budget("max-running-per-tenant", val,
                      &pr.cfg.max_running_per_tenant))
        return CTL_EXIT_USAGE;
      break;
    case OPT_POLICY:
      policy_path = val;
      break;
    case CTL_ARG_POS:
      return ctl_usage_error("plan: unexpected argument \"%s\"", val);
    default:
      return ctl_usage_error("plan: unexpected flag");
    }
  }
  if(policy_path) {
    if(policy_load(NULL, policy_path, &pol, &eb)) {
      fprintf(stderr, "error: %s\n", eb.msg);
      return CTL_EXIT_FAIL;
    }
    pr.cfg.policy = pol;
  }
  if(key_file) {
    if(config_read_key_file(key_file, &key, &eb)) {
      fprintf(stderr, "error: %s\n", eb.msg);
      policy_free(pol);
      return CTL_EXIT_FAIL;
    }
  }
  else if((e = getenv("CUBE_API_KEY")) && *e)
    key = strdup(e);

  pr.rc = CTL_EXIT_FAIL;
  st = ctl_open_store(env, NULL, false);
  if(!st)
    goto out;
  err = store_list(st, &lo, &pr.list, &eb);
  if(err) {
    ctl_store_error(err, &eb);
    goto out;
  }
  ctl_warn_skipped(&pr.list);
  base = event_base_new();
  if(!base)
    goto out;
  plan_link_key_derive(key, pr.cfg.controller_name, pr.link_key);
  pr.cfg.link_key = pr.link_key;
  cube_client_opts_init(&co);
  co.base_url = url;
  co.api_key = key;
  co.ca_file = ca;
  co.insecure_skip_verify = insecure;
  cube = cube_client_new(base, &co, &eb);
  if(!cube) {
    fprintf(stderr, "error: %s\n", eb.msg);
    goto out;
  }
  if(sc_kvlist_set(&filter, SESSION_TAG_MANAGED_BY, pr.cfg.controller_name))
    goto out;
  if(observe_start(cube, NULL, NULL, &filter, pr.list.items, pr.list.n,
                   on_observed, &pr)) {
    fprintf(stderr, "error: could not start the Cube calls\n");
    goto out;
  }
  event_base_dispatch(base);

out:
  sc_kvlist_clear(&filter);
  cube_client_free(cube);
  if(base)
    event_base_free(base);
  store_list_result_free(&pr.list);
  store_close(st);
  free(key);
  policy_free(pol);
  return pr.rc;
}
