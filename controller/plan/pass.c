/*
 * pass.c - plan_compute(): one pass of the pure planner, and the actions.
 *
 *   1. join_sandboxes(), join_sessions()   who owns what (join.c)
 *   2. decide_session() for each session   in input order (decide.c)
 *   3. capacity_decide()                    the budgets (capacity.c)
 *   4. decide_orphans()                     then the guard (rules.c)
 *   5. rule13_reclaim_brake()               (rules.c)
 *   6. the actions sorted into their one order (action_cmp)
 *
 * No I/O, no clock, no globals: identical inputs give identical plans,
 * whatever the order of the input arrays, so every replica decides alike.
 *
 * Ownership: the plan owns its actions and their strings (a chain of
 * chunks, plan.arena: plan_free() frees a few chunks rather than five
 * strings per action), the changed statuses, and the guard message. The
 * scratch owns the records and tables, reused by the next pass.
 */
#include "controller/plan/plan_int.h"
#include "lib/scarray.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/scstr.h"

/* ---------- the actions' strings ---------- */

#define PLAN_ARENA_CHUNK (64 * 1024)

struct plan_arena {
  struct plan_arena *next;
  size_t used, cap;
  char buf[];
};

static char *arena_strndup(plan_arena **pa, const char *s, size_t n)
{
  plan_arena *c = *pa;
  char *d;
  if(!c || c->cap - c->used < n + 1) {
    size_t cap = n + 1 > PLAN_ARENA_CHUNK ? n + 1 : PLAN_ARENA_CHUNK;
    if(!(c = malloc(sizeof(*c) + cap)))
      return NULL;
    c->next = *pa;
    c->used = 0;
    c->cap = cap;
    *pa = c;
  }
  d = c->buf + c->used;
  memcpy(d, s, n);
  d[n] = '\0';
  c->used += n + 1;
  return d;
}

static void arena_free(plan_arena *a)
{
  while(a) {
    plan_arena *next = a->next;
    free(a);
    a = next;
  }
}

char *plan_strdup(planner *pl, const char *s)
{
  return arena_strndup(&pl->p->arena, s, strlen(s));
}

void plan_time_text(const planner *pl, sc_time t, char *buf, size_t len)
{
  if(t == pl->in->cube_now)
    snprintf(buf, len, "%s", pl->now_text);
  else if(!t)
    snprintf(buf, len, "(none)");
  else
    sctime_format_rfc3339(t, buf, len);
}

/* ---------- actions ---------- */

plan_action *plan_add_action(planner *pl, plan_action_type type,
                             plan_delete_kind kind, const sess_rec *r,
                             const sb_rec *sb, int64_t timeout_s,
                             const char *fmt, ...)
{
  plan *p = pl->p;
  plan_action *a;
  char reason[PLAN_REASON_MAX];
  va_list ap;
  a = sc_grow(p->actions, &pl->cap_actions, p->n_actions + 1, sizeof(*a));
  if(!a)
    return NULL;
  p->actions = a;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof(reason), fmt, ap);
  va_end(ap);
  a = &p->actions[p->n_actions];
  memset(a, 0, sizeof(*a));
  a->type = type;
  a->del_kind = kind;
  a->timeout_s = timeout_s;
  a->cube_now = pl->in->cube_now;
  if(!(a->reason = plan_strdup(pl, reason)))
    return NULL;
  if(r) {
    a->s = r->s;
    if(!(a->ns = plan_strdup(pl, session_eff_namespace(r->s))) ||
       !(a->name = plan_strdup(pl, r->s->meta.name ? r->s->meta.name : "")))
      return NULL;
  }
  if(sb) {
    a->end_at = sb->b->end_at;
    if(!(a->sandbox_id = plan_strdup(pl, sb->id)))
      return NULL;
    if(type == PLAN_DELETE && rule3_delete_expectations(pl, a, sb))
      return NULL;
  }
  p->n_actions++;
  return a;
}

static int strcmp0(const char *a, const char *b)
{
  if(!a || !b)
    return a ? 1 : (b ? -1 : 0);
  return strcmp(a, b);
}

/* The one order of a plan's actions: by (namespace, name, sandbox ID,
 * type, kind, reason), orphans last; two actions alike in all of that (a
 * tombstone and its re-created object confirming one link) by their
 * sessions: live first, then uid and resourceVersion. A total order on
 * what the input says, so the input order never shows. */
static int action_cmp(const void *pa, const void *pb)
{
  const plan_action *a = pa, *b = pb;
  bool oa = a->del_kind == PLAN_DEL_ORPHAN, ob = b->del_kind == PLAN_DEL_ORPHAN;
  int c;
  if(oa != ob)
    return oa ? 1 : -1;
  if((c = strcmp0(a->ns, b->ns)) || (c = strcmp0(a->name, b->name)) ||
     (c = strcmp0(a->sandbox_id, b->sandbox_id)))
    return c;
  if(a->type != b->type)
    return a->type < b->type ? -1 : 1;
  if(a->del_kind != b->del_kind)
    return a->del_kind < b->del_kind ? -1 : 1;
  if((c = strcmp0(a->reason, b->reason)) || !a->s || !b->s)
    return c;
  if((a->s->meta.deletion_timestamp != 0) !=
     (b->s->meta.deletion_timestamp != 0))
    return a->s->meta.deletion_timestamp ? 1 : -1;
  if((c = strcmp0(a->s->meta.uid, b->s->meta.uid)))
    return c;
  return strcmp0(a->s->meta.resource_version, b->s->meta.resource_version);
}

/* ---------- the scratch ---------- */

plan_scratch *plan_scratch_new(void)
{
  plan_scratch *sc = calloc(1, sizeof(*sc));
  if(!sc)
    return NULL;
  sc->by_id = sc_hmap_new(0);
  sc->by_pair = sc_hmap_new(0);
  sc->by_uid = sc_hmap_new(0);
  if(!sc->by_id || !sc->by_pair || !sc->by_uid) {
    plan_scratch_free(sc);
    return NULL;
  }
  return sc;
}

void plan_scratch_free(plan_scratch *sc)
{
  if(!sc)
    return;
  free(sc->recs);
  free(sc->sbs);
  sc_hmap_free(sc->by_id);
  sc_hmap_free(sc->by_pair);
  sc_hmap_free(sc->by_uid);
  free(sc->gone);
  free(sc->conds);
  free(sc);
}

/* *v with room for n items of size (its old content not kept) */
static sc_err reserve(void **v, size_t *cap, size_t n, size_t size)
{
  void *nv;
  if(n <= *cap && *v)
    return SC_OK;
  if(n < 1)
    n = 1;
  if(n > SIZE_MAX / size)
    return SC_ERR_NOMEM;
  if(!(nv = malloc(n * size)))
    return SC_ERR_NOMEM;
  free(*v);
  *v = nv;
  *cap = n;
  return SC_OK;
}

static int str_cmp(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static sc_err prepare(planner *pl)
{
  const plan_input *in = pl->in;
  plan_scratch *sc = pl->sc;
  size_t i;
  sc_err err;
  sc_hmap_clear(sc->by_id);
  sc_hmap_clear(sc->by_pair);
  sc_hmap_clear(sc->by_uid);
  pl->uid_map_built = false;
  if((err = reserve((void **)&sc->recs, &sc->cap_recs, in->n_sessions,
                    sizeof(*sc->recs))) ||
     (err = reserve((void **)&sc->sbs, &sc->cap_sbs, in->n_sandboxes,
                    sizeof(*sc->sbs))) ||
     (err = reserve((void **)&sc->gone, &sc->cap_gone, in->n_gone,
                    sizeof(*sc->gone))) ||
     (err = sc_hmap_reserve(sc->by_id, in->n_sandboxes)) ||
     (err = sc_hmap_reserve(sc->by_pair, in->n_sessions)))
    return err;
  pl->recs = sc->recs;
  pl->n_recs = in->n_sessions;
  pl->sbs = sc->sbs;
  pl->gone = sc->gone;
  for(i = 0; i < in->n_gone; i++)
    if(in->gone[i])
      pl->gone[pl->n_gone++] = in->gone[i];
  if(pl->n_gone > 1)
    qsort(pl->gone, pl->n_gone, sizeof(*pl->gone), str_cmp);
  return SC_OK;
}

/* ---------- the pass ---------- */

static bool input_valid(const plan_input *in)
{
  size_t i;
  if((in->n_sessions && !in->sessions) ||
     (in->n_sandboxes && !in->sandboxes) || (in->n_gone && !in->gone))
    return false;
  for(i = 0; i < in->n_sessions; i++)
    if(!in->sessions[i])
      return false;
  return true;
}

sc_err plan_compute_ex(const plan_input *in, const plan_config *cfg,
                       plan_scratch *scratch, plan **out)
{
  planner pl;
  plan *p;
  size_t i;
  sc_err err;

  if(!out)
    return SC_ERR_INVALID;
  *out = NULL;
  if(!in || !cfg || !input_valid(in))
    return SC_ERR_INVALID;
  if(!scratch) {
    plan_scratch *tmp = plan_scratch_new();
    if(!tmp)
      return SC_ERR_NOMEM;
    err = plan_compute_ex(in, cfg, tmp, out);
    plan_scratch_free(tmp);
    return err;
  }
  memset(&pl, 0, sizeof(pl));
  if(!(p = calloc(1, sizeof(*p))))
    return SC_ERR_NOMEM;
  pl.in = in;
  pl.cfg = cfg;
  pl.sc = scratch;
  pl.p = p;
  if(in->cube_now)
    sctime_format_rfc3339(in->cube_now, pl.now_text, sizeof(pl.now_text));
  else
    snprintf(pl.now_text, sizeof(pl.now_text), "(none)");
  if(in->n_sessions &&
     !(p->sessions = calloc(in->n_sessions, sizeof(*p->sessions)))) {
    err = SC_ERR_NOMEM;
    goto out;
  }
  p->n_sessions = in->n_sessions;
  if((err = prepare(&pl)) || (err = join_sandboxes(&pl)) ||
     (err = join_sessions(&pl)))
    goto out;
  for(i = 0; i < pl.n_recs; i++)
    if((err = decide_session(&pl, &pl.recs[i])))
      goto out;
  if((err = capacity_decide(&pl)) || (err = decide_orphans(&pl)) ||
     (err = rule13_reclaim_brake(&pl)))
    goto out;
  /* Cost: qsort() compares actions through their strings, at random in
   * the arena: about 2 ms for 15,000 actions at 100k sessions. */
  if(p->n_actions > 1)
    qsort(p->actions, p->n_actions, sizeof(*p->actions), action_cmp);
out:
  capacity_free(&pl);
  if(err) {
    plan_free(p);
    return err;
  }
  *out = p;
  return SC_OK;
}

sc_err plan_compute(const plan_input *in, const plan_config *cfg,
                    plan **out)
{
  return plan_compute_ex(in, cfg, NULL, out);
}

void plan_free(plan *p)
{
  size_t i;
  if(!p)
    return;
  arena_free(p->arena);
  free(p->actions);
  for(i = 0; i < p->n_sessions; i++)
    if(p->sessions[i].status_changed) /* else it is the input's */
      session_status_clear(&p->sessions[i].status);
  free(p->sessions);
  free(p->guard_message);
  free(p->brake_message);
  free(p->tenants);
  free(p);
}
