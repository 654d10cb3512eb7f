/*
 * capacity.c - the capacity gauges (see capacity.h): per tenant, the
 * running and paused sandboxes and the creates waiting for quota, beside
 * the budgets, from the planner's count of a full pass.
 */
#include "controller/loop/capacity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAM_TENANT "session_controller_tenant_sandboxes"
#define FAM_WAITING "session_controller_quota_waiting"
#define FAM_BUDGET "session_controller_capacity_budget"

sc_err loop_capacity_declare(metrics *m)
{
  sc_err err;
  if((err = metrics_declare(m, FAM_TENANT, METRIC_GAUGE,
                            "Sandboxes per tenant as the capacity budgets "
                            "count them (state running: in-flight creates "
                            "and resumes counted; paused: of live sessions), "
                            "as of the last full pass; at most 32 tenants, "
                            "the rest under tenant=\"_other\".", NULL, 0)) ||
     (err = metrics_declare(m, FAM_WAITING, METRIC_GAUGE,
                            "Sessions waiting for a slot under "
                            "--max-running-per-tenant (Pending/"
                            "QuotaExceeded), per tenant as "
                            FAM_TENANT ".", NULL, 0)) ||
     (err = metrics_declare(m, FAM_BUDGET, METRIC_GAUGE,
                            "The capacity budgets (flag name; 0: no "
                            "limit).", NULL, 0)) ||
     (err = metrics_declare(m, "session_controller_capacity_reclaims_total",
                            METRIC_COUNTER, "Paused sandboxes reclaimed "
                            "before their reclaimAfter to keep a paused "
                            "budget (audit kind capacity).", NULL, 0)))
    return err;
  return SC_OK;
}

static size_t weight(const plan_tenant *t)
{
  return t->running + t->paused + t->waiting;
}

/* most sandboxes first, then by name: the same tenants get series of
 * their own from pass to pass while the fleet stays alike */
static int heavier(const void *x, const void *y)
{
  const plan_tenant *a = *(const plan_tenant *const *)x;
  const plan_tenant *b = *(const plan_tenant *const *)y;
  if(weight(a) != weight(b))
    return weight(a) > weight(b) ? -1 : 1;
  return strcmp(a->tenant, b->tenant);
}

static void set_tenant(metrics *m, const char *tenant, size_t running,
                       size_t paused, size_t waiting)
{
  char esc[300], l[360];
  metrics_label_escape(tenant, esc, sizeof(esc));
  snprintf(l, sizeof(l), "tenant=\"%s\",state=\"running\"", esc);
  metrics_set(m, FAM_TENANT, l, (double)running);
  snprintf(l, sizeof(l), "tenant=\"%s\",state=\"paused\"", esc);
  metrics_set(m, FAM_TENANT, l, (double)paused);
  snprintf(l, sizeof(l), "tenant=\"%s\"", esc);
  metrics_set(m, FAM_WAITING, l, (double)waiting);
}

void loop_capacity_gauges(metrics *m, const plan *p, const plan_config *cfg)
{
  const plan_tenant **v = NULL;
  size_t i, run = 0, pau = 0, wait = 0;
  if(!p || !p->capacity_known)
    return;
  metrics_set(m, FAM_BUDGET, "budget=\"max-paused\"", (double)cfg->max_paused);
  metrics_set(m, FAM_BUDGET, "budget=\"max-paused-per-tenant\"",
              (double)cfg->max_paused_per_tenant);
  metrics_set(m, FAM_BUDGET, "budget=\"max-running-per-tenant\"",
              (double)cfg->max_running_per_tenant);
  if(p->n_tenants && !(v = malloc(p->n_tenants * sizeof(*v))))
    return; /* out of memory: the last values stay */
  metrics_reset_family(m, FAM_TENANT);
  metrics_reset_family(m, FAM_WAITING);
  if(!p->n_tenants)
    return;
  for(i = 0; i < p->n_tenants; i++)
    v[i] = &p->tenants[i];
  qsort(v, p->n_tenants, sizeof(*v), heavier);
  for(i = 0; i < p->n_tenants; i++) {
    if(i < LOOP_CAPACITY_TENANTS_MAX) {
      set_tenant(m, v[i]->tenant, v[i]->running, v[i]->paused, v[i]->waiting);
      continue;
    }
    run += v[i]->running;
    pau += v[i]->paused;
    wait += v[i]->waiting;
  }
  if(p->n_tenants > LOOP_CAPACITY_TENANTS_MAX)
    set_tenant(m, "_other", run, pau, wait);
  free(v);
}
