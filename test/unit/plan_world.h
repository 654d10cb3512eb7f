/*
 * plan_world.h - a tiny builder of planner inputs for the planner tests
 * (test_plan.c, test_plan_props.c). Header-only, all static.
 *
 * A world owns its sessions and sandboxes; world_free() releases them.
 */
#ifndef SC_TEST_PLAN_WORLD_H
#define SC_TEST_PLAN_WORLD_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "api/session.h"
#include "controller/plan/plan.h"
#include "controller/cube/sandbox.h"
#include "lib/dynbuf.h"

#define W_MAX_SESS 4096
#define W_MAX_SB 4096
#define W_MAX_GONE 64
#define MIN_MS (60 * 1000LL)
#define HOUR_MS (3600 * 1000LL)
/* 2026-11-29T10:00:00Z */
#define W_NOW 1795946400000LL
#define W_CTRL "session-controller"

typedef struct world {
  session *s[W_MAX_SESS];
  size_t ns;
  cube_sandbox b[W_MAX_SB];
  size_t nb;
  const char *gone[W_MAX_GONE];
  size_t ngone;
  bool complete;
  sc_time now;
  plan_config cfg;
  const int64_t *intent_seen_ms; /* plan_input.intent_seen_ms */
} world;

static inline void world_init(world *w)
{
  memset(w, 0, sizeof(*w));
  w->complete = true;
  w->now = W_NOW;
  plan_config_defaults(&w->cfg);
}

static inline void world_free(world *w)
{
  size_t i;
  for(i = 0; i < w->ns; i++)
    session_free(w->s[i]);
  for(i = 0; i < w->nb; i++)
    cube_sandbox_clear(&w->b[i]);
  w->ns = w->nb = 0;
}

/* A world on the heap (it is too big for a stack frame). */
static inline world *w_new(void)
{
  world *w = malloc(sizeof(*w));
  if(!w)
    abort();
  world_init(w);
  return w;
}

static inline void w_del(world *w)
{
  if(w) {
    world_free(w);
    free(w);
  }
}

/* A session ns/name in state st: template "python", generation 1,
 * defaults applied (idle 15m, reclaimAfter 24h, tenant = ns). */
static inline session *w_sess(world *w, const char *ns, const char *name,
                              session_state st)
{
  session *s = session_new();
  if(!s || w->ns >= W_MAX_SESS)
    abort();
  s->meta.namespace_ = strdup(ns);
  s->meta.name = strdup(name);
  s->meta.generation = 1;
  s->spec.template_id = strdup("python");
  s->spec.state = st;
  if(session_apply_defaults(s))
    abort();
  w->s[w->ns++] = s;
  return s;
}

static inline void w_link(session *s, const char *id)
{
  free(s->status.sandbox_id);
  s->status.sandbox_id = id ? strdup(id) : NULL;
}

/* A sandbox; tenant/sid NULL = no tags at all (lost metadata). With tags
 * it carries managed-by = mb (W_CTRL when mb is NULL). */
static inline cube_sandbox *w_sb_mb(world *w, const char *id,
                                    cube_sb_state st, sc_time end_at,
                                    const char *tenant, const char *sid,
                                    const char *mb)
{
  cube_sandbox *b;
  if(w->nb >= W_MAX_SB)
    abort();
  b = &w->b[w->nb++];
  memset(b, 0, sizeof(*b));
  b->sandbox_id = strdup(id);
  b->template_id = strdup("python");
  b->state = st;
  b->end_at = end_at;
  b->started_at = W_NOW - 48 * HOUR_MS;
  if(tenant && sc_kvlist_set(&b->metadata, SESSION_TAG_TENANT_ID, tenant))
    abort();
  if(sid && sc_kvlist_set(&b->metadata, SESSION_TAG_SESSION_ID, sid))
    abort();
  if((tenant || sid || mb) &&
     sc_kvlist_set(&b->metadata, SESSION_TAG_MANAGED_BY, mb ? mb : W_CTRL))
    abort();
  return b;
}

static inline cube_sandbox *w_sb(world *w, const char *id, cube_sb_state st,
                                 sc_time end_at, const char *tenant,
                                 const char *sid)
{
  return w_sb_mb(w, id, st, end_at, tenant, sid, NULL);
}

/* The planner input of w, for a test that sets more of it. */
static inline void w_input(world *w, plan_input *in)
{
  memset(in, 0, sizeof(*in));
  in->sessions = w->s;
  in->n_sessions = w->ns;
  in->sandboxes = w->b;
  in->n_sandboxes = w->nb;
  in->gone = w->gone;
  in->n_gone = w->ngone;
  in->list_complete = w->complete;
  in->cube_now = w->now;
  in->intent_seen_ms = w->intent_seen_ms;
}

static inline plan *w_plan(world *w)
{
  plan_input in;
  plan *p = NULL;
  w_input(w, &in);
  if(plan_compute(&in, &w->cfg, &p))
    return NULL;
  return p;
}

static inline size_t p_count(const plan *p, plan_action_type t,
                             plan_delete_kind k)
{
  size_t i, n = 0;
  for(i = 0; i < p->n_actions; i++)
    if(p->actions[i].type == t && p->actions[i].del_kind == k)
      n++;
  return n;
}

/* the action of type t on sandbox id (NULL id: any) */
static inline const plan_action *p_find(const plan *p, plan_action_type t,
                                        const char *id)
{
  size_t i;
  for(i = 0; i < p->n_actions; i++) {
    const plan_action *a = &p->actions[i];
    if(a->type != t)
      continue;
    if(!id || (a->sandbox_id && !strcmp(a->sandbox_id, id)))
      return a;
  }
  return NULL;
}

static inline const plan_session *p_sess(const plan *p, const session *s)
{
  size_t i;
  for(i = 0; i < p->n_sessions; i++)
    if(p->sessions[i].s == s)
      return &p->sessions[i];
  return NULL;
}

static inline const char *cond_reason(const session_status *st,
                                      const char *type)
{
  const session_condition *c = session_status_get_condition(st, type);
  return c ? c->reason : "(absent)";
}

static inline const char *cond_status(const session_status *st,
                                      const char *type)
{
  const session_condition *c = session_status_get_condition(st, type);
  return c ? c->status : "(absent)";
}

static inline bool str_eq_test(const char *a, const char *b)
{
  return (!a || !b) ? a == b : !strcmp(a, b);
}

/* The plan as text (caller frees). */
static inline char *p_text(const plan *p)
{
  dynbuf b;
  dynbuf_init(&b, 64 << 20);
  if(plan_format(p, &b)) {
    dynbuf_free(&b);
    return NULL;
  }
  return dynbuf_take(&b);
}

#endif
