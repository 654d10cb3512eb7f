/*
 * capacity.c - reclaim that follows capacity (rule 14, the paused budget)
 * and the running quota (rule 15), decided from the whole fleet of a pass
 * (docs/controller.md, "Capacity").
 *
 * The per-session decisions (decide.c) note what they would do: a paused
 * sandbox that stays paused this pass (capacity_note_paused), a create
 * about to be sent (capacity_note_create), another process's fresh create
 * claim (capacity_note_claim). capacity_decide() then looks at the notes
 * of every session at once:
 *
 *  - rule15_running_quota(): per tenant, the slots left under
 *    --max-running-per-tenant (running sandboxes, resumes of this pass and
 *    in-flight creates take one each) go to the would-be creates in
 *    creation order (creationTimestamp, namespace, name, uid); the others
 *    wait, Pending/QuotaExceeded. Running sandboxes are never paused.
 *  - rule14_paused_budget(): when the noted paused sandboxes of a tenant
 *    are more than --max-paused-per-tenant, or those of all tenants more
 *    than --max-paused, the longest-paused by Cube's clock (cube_now -
 *    endAt; ties: endAt, tenant, uid, sandbox ID) are chosen until the
 *    budget holds. Sessions with reclaimAfter 0 count but are never
 *    chosen; a sandbox with no endAt counts but cannot be ranked.
 *
 * A chosen or held session is decided again (decide_session with r->cap
 * set), its first actions and status dropped: the one decision path makes
 * its actions and status, so a capacity reclaim is a reclaim like any
 * (intent first, the brake, the confirming GET). The choice is a function
 * of the input only, whatever its order: replicas with the same facts
 * choose the same sessions.
 *
 * Ownership: the notes are arrays of the planner, freed by capacity_free;
 * messages live in the plan's arena; plan.tenants is the plan's.
 */
#include "controller/plan/plan_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hmap.h"
#include "lib/scarray.h"
#include "lib/scstr.h"

struct cap_paused {
  sess_rec *r;
  const sb_rec *sb;
  const char *tenant;
  size_t tix;     /* its row in plan.tenants (rows sorted by name) */
  bool keeper;    /* reclaimAfter 0, or no endAt: counted, never chosen */
};

static int strcmp0(const char *a, const char *b)
{
  return strcmp(a ? a : "", b ? b : "");
}

/* ---------- the notes ---------- */

sc_err capacity_note_paused(planner *pl, const sess_rec *r, const sb_rec *sb)
{
  struct cap_paused *v;
  if(pl->cap_rerun || !pl->in->list_complete ||
     (!pl->cfg->max_paused && !pl->cfg->max_paused_per_tenant))
    return SC_OK;
  v = sc_grow(pl->paused_c, &pl->cap_paused_c, pl->n_paused_c + 1,
              sizeof(*v));
  if(!v)
    return SC_ERR_NOMEM;
  pl->paused_c = v;
  v = &pl->paused_c[pl->n_paused_c++];
  v->r = &pl->recs[r->idx];
  v->sb = sb;
  v->tenant = r->tenant;
  v->keeper = session_eff_reclaim_after_ms(r->s) <= 0 || !sb->b->end_at ||
              !pl->in->cube_now;
  return SC_OK;
}

static sc_err note(planner *pl, sess_rec ***v, size_t *n, size_t *cap,
                   const sess_rec *r)
{
  sess_rec **nv;
  if(pl->cap_rerun || !pl->cfg->max_running_per_tenant)
    return SC_OK;
  if(!(nv = sc_grow(*v, cap, *n + 1, sizeof(*nv))))
    return SC_ERR_NOMEM;
  *v = nv;
  nv[(*n)++] = &pl->recs[r->idx];
  return SC_OK;
}

sc_err capacity_note_create(planner *pl, const sess_rec *r)
{
  return note(pl, &pl->create_c, &pl->n_create_c, &pl->cap_create_c, r);
}

sc_err capacity_note_claim(planner *pl, const sess_rec *r)
{
  return note(pl, &pl->claim_c, &pl->n_claim_c, &pl->cap_claim_c, r);
}

/* Only a pass whose store read is whole can rank a tenant's waiters and
 * see the others' claims. A Cube list that may be short (cube_list_short)
 * still counts: Cube ignores paging, so a fleet past the list limit makes
 * every list look short, and holding every create then would stop the
 * tenant for good; a short list can only undercount the running, which
 * lets a create or two past the quota until the next full list. */
bool capacity_quota_countable(const planner *pl)
{
  return pl->in->list_complete;
}

void capacity_free(planner *pl)
{
  sc_hmap_free(pl->tenant_map);
  pl->tenant_map = NULL;
  free(pl->paused_c);
  free(pl->create_c);
  free(pl->claim_c);
  pl->paused_c = NULL;
  pl->create_c = pl->claim_c = NULL;
}

/* ---------- the tenants ---------- */

/* The tenants' rows: p->tenants sorted by name, and pl->tenant_map from
 * a name to its row (values SC_HMAP_IDX(row)); a lookup hashes the name
 * once instead of comparing it with log(rows) others. */
struct tenant_key {
  const plan *p;
  const char **names; /* before the rows are sorted: the names so far */
};

static bool tenant_eq(const void *value, const void *key, void *ud)
{
  const struct tenant_key *tk = ud;
  size_t i = SC_HMAP_IDX_OF(value);
  const char *name = tk->names ? tk->names[i] : tk->p->tenants[i].tenant;
  return !strcmp(name, (const char *)key);
}

static plan_tenant *tenant_row(const planner *pl, const char *t)
{
  struct tenant_key tk = {pl->p, NULL};
  void *v = sc_hmap_get(pl->tenant_map, sc_hash_id(t), tenant_eq, t, &tk);
  return v ? &pl->p->tenants[SC_HMAP_IDX_OF(v)] : NULL;
}

static int name_cmp(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* the distinct names first, into *names (n so far); then the rows */
static sc_err add_name(planner *pl, const char **names, size_t *n,
                       const char *t)
{
  struct tenant_key tk = {pl->p, names};
  uint64_t h = sc_hash_id(t);
  if(sc_hmap_get(pl->tenant_map, h, tenant_eq, t, &tk))
    return SC_OK;
  names[*n] = t;
  return sc_hmap_put(pl->tenant_map, h, SC_HMAP_IDX((*n)++));
}

static sc_err tenant_rows(planner *pl, const char **names, size_t n)
{
  plan *p = pl->p;
  size_t i;
  sc_err err;
  sc_hmap_clear(pl->tenant_map);
  if(!n)
    return SC_OK;
  qsort(names, n, sizeof(*names), name_cmp);
  if(!(p->tenants = calloc(n, sizeof(*p->tenants))))
    return SC_ERR_NOMEM;
  p->n_tenants = n;
  for(i = 0; i < n; i++) {
    p->tenants[i].tenant = names[i];
    if((err = sc_hmap_put(pl->tenant_map, sc_hash_id(names[i]),
                          SC_HMAP_IDX(i))))
      return err;
  }
  return SC_OK;
}

/* the tenant a running sandbox counts for: its session's, else (an
 * orphan of ours) its tag; NULL: not ours */
static const char *running_tenant(const sb_rec *sb)
{
  if(sb->dup || sb->b->state != CUBE_SB_RUNNING)
    return NULL;
  if(sb->owner)
    return sb->owner->tenant;
  return sb->ours ? sb->tenant : NULL;
}

static sc_err build_tenants(planner *pl)
{
  plan *p = pl->p;
  const char **names;
  size_t i, n = 0, max;
  sc_err err = SC_OK;
  max = pl->n_sbs + pl->n_paused_c + pl->n_create_c + pl->n_claim_c +
        p->n_actions;
  if(!max)
    return SC_OK;
  if(!(pl->tenant_map = sc_hmap_new(0)) ||
     !(names = malloc(max * sizeof(*names))))
    return SC_ERR_NOMEM;
  for(i = 0; !err && i < pl->n_sbs; i++)
    if(running_tenant(&pl->sbs[i]))
      err = add_name(pl, names, &n, running_tenant(&pl->sbs[i]));
  for(i = 0; !err && i < pl->n_paused_c; i++)
    err = add_name(pl, names, &n, pl->paused_c[i].tenant);
  for(i = 0; !err && i < pl->n_create_c; i++)
    err = add_name(pl, names, &n, pl->create_c[i]->tenant);
  for(i = 0; !err && i < pl->n_claim_c; i++)
    err = add_name(pl, names, &n, pl->claim_c[i]->tenant);
  for(i = 0; !err && i < p->n_actions; i++)
    if(p->actions[i].type == PLAN_RESUME && p->actions[i].s)
      err = add_name(pl, names, &n, session_eff_tenant_id(p->actions[i].s));
  if(!err)
    err = tenant_rows(pl, names, n);
  free(names);
  if(err)
    return err;
  for(i = 0; i < pl->n_sbs; i++)
    if(running_tenant(&pl->sbs[i]))
      tenant_row(pl, running_tenant(&pl->sbs[i]))->running++;
  for(i = 0; i < pl->n_claim_c; i++)
    tenant_row(pl, pl->claim_c[i]->tenant)->running++;
  for(i = 0; i < p->n_actions; i++)
    if(p->actions[i].type == PLAN_RESUME && p->actions[i].s)
      tenant_row(pl, session_eff_tenant_id(p->actions[i].s))->running++;
  for(i = 0; i < pl->n_paused_c; i++) {
    plan_tenant *t = tenant_row(pl, pl->paused_c[i].tenant);
    t->paused++;
    pl->paused_c[i].tix = (size_t)(t - p->tenants);
  }
  return SC_OK;
}

/* ---------- rule 15: the running quota ---------- */

/* creation order: creationTimestamp (unknown last), namespace, name, uid */
static int create_order(const void *x, const void *y)
{
  const sess_rec *a = *(sess_rec *const *)x, *b = *(sess_rec *const *)y;
  sc_time ca = a->s->meta.creation_timestamp;
  sc_time cb = b->s->meta.creation_timestamp;
  int c;
  if(ca != cb)
    return !ca ? 1 : !cb ? -1 : ca < cb ? -1 : 1;
  if((c = strcmp(a->tenant, b->tenant)) ||
     (c = strcmp0(session_eff_namespace(a->s), session_eff_namespace(b->s))) ||
     (c = strcmp0(a->s->meta.name, b->s->meta.name)))
    return c;
  return strcmp0(a->s->meta.uid, b->s->meta.uid);
}

static sc_err rule15_running_quota(planner *pl)
{
  plan *p = pl->p;
  size_t quota = pl->cfg->max_running_per_tenant, i;
  char msg[PLAN_MSG_MAX];
  if(!quota || !pl->n_create_c)
    return SC_OK;
  qsort(pl->create_c, pl->n_create_c, sizeof(*pl->create_c), create_order);
  for(i = 0; i < pl->n_create_c; i++) {
    sess_rec *r = pl->create_c[i];
    plan_tenant *t = tenant_row(pl, r->tenant);
    if(t->running < quota) {
      t->running++; /* admitted: its create takes the slot */
      continue;
    }
    /* no count or position in it: they move with every slot, and each
     * change would rewrite every waiter's status */
    snprintf(msg, sizeof(msg), "tenant %s is at --max-running-per-tenant "
             "%zu (running sandboxes, resumes and in-flight creates "
             "counted): waits for a slot; waiters are created in creation "
             "order", r->tenant, quota);
    t->waiting++;
    p->n_quota_waiting++;
    r->cap = CAP_QUOTA_WAIT;
    if(!(r->cap_msg = plan_strdup(pl, msg)))
      return SC_ERR_NOMEM;
  }
  return SC_OK;
}

/* ---------- rule 14: the paused budget ---------- */

/* longest-paused first: endAt, then tenant, uid, sandbox ID (unique) */
static int paused_order(const void *x, const void *y)
{
  const struct cap_paused *a = x, *b = y;
  sc_time ea = a->sb->b->end_at, eb = b->sb->b->end_at;
  int c;
  if(ea != eb)
    return ea < eb ? -1 : 1;
  if((c = strcmp(a->tenant, b->tenant)) ||
     (c = strcmp0(a->r->s->meta.uid, b->r->s->meta.uid)))
    return c;
  return strcmp(a->sb->id, b->sb->id);
}

static int paused_tenant_order(const void *x, const void *y)
{
  const struct cap_paused *a = x, *b = y;
  if(a->tix != b->tix)
    return a->tix < b->tix ? -1 : 1;
  return paused_order(x, y);
}

/* choose up to excess victims among v[0..n) in their order */
static sc_err choose(planner *pl, struct cap_paused *v, size_t n,
                     size_t excess, const char *budget)
{
  size_t i;
  for(i = 0; i < n && excess; i++) {
    sess_rec *r = v[i].r;
    if(v[i].keeper || r->cap == CAP_VICTIM)
      continue;
    r->cap = CAP_VICTIM;
    if(!(r->cap_msg = plan_strdup(pl, budget)))
      return SC_ERR_NOMEM;
    pl->p->n_capacity_reclaims++;
    excess--;
  }
  return SC_OK;
}

static sc_err rule14_paused_budget(planner *pl)
{
  const plan_config *cfg = pl->cfg;
  struct cap_paused *v = pl->paused_c;
  size_t n = pl->n_paused_c, i, j, left;
  char budget[PLAN_MSG_MAX];
  sc_err err;
  if(!n)
    return SC_OK;
  if(cfg->max_paused_per_tenant) {
    qsort(v, n, sizeof(*v), paused_tenant_order);
    for(i = 0; i < n; i = j) {
      for(j = i; j < n && v[j].tix == v[i].tix; j++)
        ;
      if(j - i <= cfg->max_paused_per_tenant)
        continue;
      snprintf(budget, sizeof(budget), "--max-paused-per-tenant %zu "
               "(tenant %s has %zu paused)", cfg->max_paused_per_tenant,
               v[i].tenant, j - i);
      if((err = choose(pl, v + i, j - i, j - i - cfg->max_paused_per_tenant,
                       budget)))
        return err;
    }
  }
  left = n - pl->p->n_capacity_reclaims;
  if(cfg->max_paused && left > cfg->max_paused) {
    qsort(v, n, sizeof(*v), paused_order);
    snprintf(budget, sizeof(budget), "--max-paused %zu (%zu paused)",
             cfg->max_paused, left);
    if((err = choose(pl, v, n, left - cfg->max_paused, budget)))
      return err;
  }
  return SC_OK;
}

/* ---------- deciding again ---------- */

static int ptr_cmp(const void *x, const void *y)
{
  uintptr_t a = (uintptr_t)*(const void *const *)x;
  uintptr_t b = (uintptr_t)*(const void *const *)y;
  return a < b ? -1 : a > b;
}

/* The marked sessions (r->cap) are decided again: their first actions
 * dropped (one compaction for all), their first status freed, then
 * decide_session() with the mark, which adds their actions anew. */
static sc_err redecide(planner *pl)
{
  plan *p = pl->p;
  const session **marked;
  size_t i, k, n = 0;
  sc_err err = SC_OK;
  for(i = 0; i < pl->n_recs; i++)
    n += pl->recs[i].cap != CAP_NONE;
  if(!n)
    return SC_OK;
  if(!(marked = malloc(n * sizeof(*marked))))
    return SC_ERR_NOMEM;
  for(i = 0, k = 0; i < pl->n_recs; i++)
    if(pl->recs[i].cap)
      marked[k++] = pl->recs[i].s;
  qsort(marked, n, sizeof(*marked), ptr_cmp);
  for(i = 0, k = 0; i < p->n_actions; i++)
    if(!p->actions[i].s ||
       !bsearch(&p->actions[i].s, marked, n, sizeof(*marked), ptr_cmp))
      p->actions[k++] = p->actions[i];
  p->n_actions = k;
  free(marked);
  pl->cap_rerun = true;
  for(i = 0; i < pl->n_recs && !err; i++) {
    plan_session *ps = &p->sessions[pl->recs[i].idx];
    if(!pl->recs[i].cap)
      continue;
    if(ps->status_changed)
      session_status_clear(&ps->status);
    memset(ps, 0, sizeof(*ps));
    err = decide_session(pl, &pl->recs[i]);
  }
  return err;
}

sc_err capacity_decide(planner *pl)
{
  const plan_config *cfg = pl->cfg;
  sc_err err;
  if(!pl->in->list_complete ||
     (!cfg->max_paused && !cfg->max_paused_per_tenant &&
      !cfg->max_running_per_tenant))
    return SC_OK;
  pl->p->capacity_known = true;
  if((err = build_tenants(pl)) || (err = rule15_running_quota(pl)) ||
     (err = rule14_paused_budget(pl)))
    return err;
  return redecide(pl);
}
