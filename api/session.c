/* session.c - the Session struct: lifetime, copies, comparisons, defaults. */
#include "api/session.h"
#include "lib/scstr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *xstrdup(const char *s)
{
  return s ? strdup(s) : NULL;
}

/* --- sc_kvlist --- */

static size_t kv_find(const sc_kvlist *l, const char *key, bool *found)
{
  size_t lo = 0, hi = l->n;
  while(lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(l->items[mid].key, key);
    if(!c) {
      *found = true;
      return mid;
    }
    if(c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *found = false;
  return lo;
}

sc_err sc_kvlist_set(sc_kvlist *l, const char *key, const char *value)
{
  bool found;
  size_t i = kv_find(l, key, &found);
  char *v = strdup(value ? value : "");
  sc_kv *items;
  char *k;
  if(!v)
    return SC_ERR_NOMEM;
  if(found) {
    free(l->items[i].value);
    l->items[i].value = v;
    return SC_OK;
  }
  k = strdup(key);
  items = realloc(l->items, (l->n + 1) * sizeof(*items));
  if(!k || !items) {
    free(k);
    free(v);
    if(items)
      l->items = items;
    return SC_ERR_NOMEM;
  }
  l->items = items;
  memmove(items + i + 1, items + i, (l->n - i) * sizeof(*items));
  items[i].key = k;
  items[i].value = v;
  l->n++;
  return SC_OK;
}

const char *sc_kvlist_get(const sc_kvlist *l, const char *key)
{
  bool found;
  size_t i;
  if(!l || !l->n)
    return NULL;
  i = kv_find(l, key, &found);
  return found ? l->items[i].value : NULL;
}

void sc_kvlist_clear(sc_kvlist *l)
{
  size_t i;
  if(!l)
    return;
  for(i = 0; i < l->n; i++) {
    free(l->items[i].key);
    free(l->items[i].value);
  }
  free(l->items);
  l->items = NULL;
  l->n = 0;
}

sc_err sc_kvlist_copy(sc_kvlist *dst, const sc_kvlist *src)
{
  size_t i;
  dst->items = NULL;
  dst->n = 0;
  if(!src->n)
    return SC_OK;
  dst->items = calloc(src->n, sizeof(*dst->items));
  if(!dst->items)
    return SC_ERR_NOMEM;
  for(i = 0; i < src->n; i++) {
    dst->items[i].key = strdup(src->items[i].key);
    dst->items[i].value = strdup(src->items[i].value);
    dst->n = i + 1;
    if(!dst->items[i].key || !dst->items[i].value) {
      sc_kvlist_clear(dst);
      return SC_ERR_NOMEM;
    }
  }
  return SC_OK;
}

bool sc_kvlist_equal(const sc_kvlist *a, const sc_kvlist *b)
{
  size_t i;
  if(a->n != b->n)
    return false;
  for(i = 0; i < a->n; i++)
    if(strcmp(a->items[i].key, b->items[i].key) ||
       strcmp(a->items[i].value, b->items[i].value))
      return false;
  return true;
}

/* --- enums --- */

static const char *const state_names[] = {"Active", "Running", "Paused",
                                          "Ended"};
static const char *const phase_names[] = {"",        "Pending",  "Creating",
                                          "Running", "Paused",   "Reclaimed",
                                          "Ended",   "Failed"};

const char *session_state_name(session_state s)
{
  if((unsigned)s >= sizeof(state_names) / sizeof(state_names[0]))
    return "Unknown";
  return state_names[s];
}

int session_state_parse(const char *s)
{
  size_t i;
  for(i = 0; s && i < sizeof(state_names) / sizeof(state_names[0]); i++)
    if(!strcmp(s, state_names[i]))
      return (int)i;
  return -1;
}

const char *session_phase_name(session_phase p)
{
  if((unsigned)p >= sizeof(phase_names) / sizeof(phase_names[0]))
    return "Unknown";
  return phase_names[p];
}

int session_phase_parse(const char *s)
{
  size_t i;
  for(i = 0; s && i < sizeof(phase_names) / sizeof(phase_names[0]); i++)
    if(!strcmp(s, phase_names[i]))
      return (int)i;
  return -1;
}

/* --- conditions --- */

static void cond_clear(session_condition *c)
{
  free(c->type);
  free(c->status);
  free(c->reason);
  free(c->message);
  memset(c, 0, sizeof(*c));
}

static sc_err cond_copy(session_condition *dst, const session_condition *src)
{
  memset(dst, 0, sizeof(*dst));
  dst->type = xstrdup(src->type);
  dst->status = xstrdup(src->status);
  dst->reason = xstrdup(src->reason);
  dst->message = xstrdup(src->message);
  dst->last_transition_time = src->last_transition_time;
  dst->observed_generation = src->observed_generation;
  if((src->type && !dst->type) || (src->status && !dst->status) ||
     (src->reason && !dst->reason) || (src->message && !dst->message)) {
    cond_clear(dst);
    return SC_ERR_NOMEM;
  }
  return SC_OK;
}

static bool cond_equal(const session_condition *a, const session_condition *b)
{
  return sc_str_eq0(a->type, b->type) && sc_str_eq0(a->status, b->status) &&
         sc_str_eq0(a->reason, b->reason) && sc_str_eq0(a->message, b->message) &&
         a->last_transition_time == b->last_transition_time &&
         a->observed_generation == b->observed_generation;
}

const session_condition *session_status_get_condition(
  const session_status *st, const char *type)
{
  size_t i;
  for(i = 0; st && i < st->n_conditions; i++)
    if(sc_str_eq0(st->conditions[i].type, type))
      return &st->conditions[i];
  return NULL;
}

sc_err session_status_set_condition(session_status *st,
                                    const session_condition *c)
{
  size_t i;
  session_condition nc;
  sc_err err;
  for(i = 0; i < st->n_conditions; i++)
    if(sc_str_eq0(st->conditions[i].type, c->type))
      break;
  err = cond_copy(&nc, c);
  if(err)
    return err;
  if(i < st->n_conditions) {
    session_condition *old = &st->conditions[i];
    if(sc_str_eq0(old->status, c->status) && old->last_transition_time)
      nc.last_transition_time = old->last_transition_time;
    cond_clear(old);
    *old = nc;
    return SC_OK;
  }
  {
    session_condition *a =
      realloc(st->conditions, (st->n_conditions + 1) * sizeof(*a));
    if(!a) {
      cond_clear(&nc);
      return SC_ERR_NOMEM;
    }
    st->conditions = a;
    a[st->n_conditions++] = nc;
  }
  return SC_OK;
}

/* --- spec / status --- */

void session_spec_clear(session_spec *sp)
{
  if(!sp)
    return;
  free(sp->template_id);
  free(sp->session_id);
  free(sp->tenant_id);
  sc_kvlist_clear(&sp->env_vars);
  sc_kvlist_clear(&sp->sandbox_metadata);
  memset(sp, 0, sizeof(*sp));
}

sc_err session_spec_copy(session_spec *dst, const session_spec *src)
{
  *dst = *src;
  dst->template_id = xstrdup(src->template_id);
  dst->session_id = xstrdup(src->session_id);
  dst->tenant_id = xstrdup(src->tenant_id);
  memset(&dst->env_vars, 0, sizeof(dst->env_vars));
  memset(&dst->sandbox_metadata, 0, sizeof(dst->sandbox_metadata));
  if((src->template_id && !dst->template_id) ||
     (src->session_id && !dst->session_id) ||
     (src->tenant_id && !dst->tenant_id) ||
     sc_kvlist_copy(&dst->env_vars, &src->env_vars) ||
     sc_kvlist_copy(&dst->sandbox_metadata, &src->sandbox_metadata)) {
    session_spec_clear(dst);
    return SC_ERR_NOMEM;
  }
  return SC_OK;
}

bool session_spec_equal(const session_spec *a, const session_spec *b)
{
  return sc_str_eq0(a->template_id, b->template_id) && a->state == b->state &&
         a->idle_timeout_ms == b->idle_timeout_ms &&
         a->reclaim_after_ms == b->reclaim_after_ms &&
         sc_str_eq0(a->session_id, b->session_id) &&
         sc_str_eq0(a->tenant_id, b->tenant_id) &&
         sc_kvlist_equal(&a->env_vars, &b->env_vars) &&
         sc_kvlist_equal(&a->sandbox_metadata, &b->sandbox_metadata) &&
         a->wake == b->wake;
}

void session_status_clear(session_status *st)
{
  size_t i;
  if(!st)
    return;
  free(st->sandbox_id);
  free(st->create_intent_by);
  free(st->sandbox_state);
  free(st->sandbox_proof);
  for(i = 0; i < st->n_conditions; i++)
    cond_clear(&st->conditions[i]);
  free(st->conditions);
  memset(st, 0, sizeof(*st));
}

sc_err session_status_copy(session_status *dst, const session_status *src)
{
  size_t i;
  *dst = *src;
  dst->sandbox_id = xstrdup(src->sandbox_id);
  dst->sandbox_state = xstrdup(src->sandbox_state);
  dst->create_intent_by = xstrdup(src->create_intent_by);
  dst->sandbox_proof = xstrdup(src->sandbox_proof);
  dst->conditions = NULL;
  dst->n_conditions = 0;
  if((src->sandbox_id && !dst->sandbox_id) ||
     (src->sandbox_state && !dst->sandbox_state) ||
     (src->create_intent_by && !dst->create_intent_by) ||
     (src->sandbox_proof && !dst->sandbox_proof))
    goto nomem;
  if(src->n_conditions) {
    dst->conditions = calloc(src->n_conditions, sizeof(*dst->conditions));
    if(!dst->conditions)
      goto nomem;
    for(i = 0; i < src->n_conditions; i++) {
      if(cond_copy(&dst->conditions[i], &src->conditions[i]))
        goto nomem;
      dst->n_conditions = i + 1;
    }
  }
  return SC_OK;
nomem:
  session_status_clear(dst);
  return SC_ERR_NOMEM;
}

bool session_status_equal(const session_status *a, const session_status *b)
{
  size_t i;
  if(a->phase != b->phase || !sc_str_eq0(a->sandbox_id, b->sandbox_id) ||
     !sc_str_eq0(a->sandbox_state, b->sandbox_state) || a->end_at != b->end_at ||
     !sc_str_eq0(a->sandbox_proof, b->sandbox_proof) ||
     a->observed_generation != b->observed_generation ||
     a->reclaimed_generation != b->reclaimed_generation ||
     a->paused_by_controller != b->paused_by_controller ||
     a->applied_idle_timeout_ms != b->applied_idle_timeout_ms ||
     a->create_intent_at != b->create_intent_at ||
     !sc_str_eq0(a->create_intent_by, b->create_intent_by) ||
     a->n_conditions != b->n_conditions)
    return false;
  for(i = 0; i < a->n_conditions; i++)
    if(!cond_equal(&a->conditions[i], &b->conditions[i]))
      return false;
  return true;
}

/* --- session --- */

session *session_new(void)
{
  session *s = calloc(1, sizeof(session));
  if(s)
    s->spec.reclaim_after_ms = -1; /* unset: 0 means "never" */
  return s;
}

static void meta_clear(session_metadata *m)
{
  size_t i;
  free(m->name);
  free(m->namespace_);
  free(m->uid);
  free(m->resource_version);
  sc_kvlist_clear(&m->labels);
  sc_kvlist_clear(&m->annotations);
  for(i = 0; i < m->n_finalizers; i++)
    free(m->finalizers[i]);
  free(m->finalizers);
  memset(m, 0, sizeof(*m));
}

void session_free(session *s)
{
  if(!s)
    return;
  meta_clear(&s->meta);
  session_spec_clear(&s->spec);
  session_status_clear(&s->status);
  free(s);
}

session *session_dup(const session *s)
{
  session *d;
  size_t i;
  if(!s)
    return NULL;
  d = session_new();
  if(!d)
    return NULL;
  d->meta = s->meta;
  d->meta.name = xstrdup(s->meta.name);
  d->meta.namespace_ = xstrdup(s->meta.namespace_);
  d->meta.uid = xstrdup(s->meta.uid);
  d->meta.resource_version = xstrdup(s->meta.resource_version);
  memset(&d->meta.labels, 0, sizeof(d->meta.labels));
  memset(&d->meta.annotations, 0, sizeof(d->meta.annotations));
  d->meta.finalizers = NULL;
  d->meta.n_finalizers = 0;
  if((s->meta.name && !d->meta.name) ||
     (s->meta.namespace_ && !d->meta.namespace_) ||
     (s->meta.uid && !d->meta.uid) ||
     (s->meta.resource_version && !d->meta.resource_version) ||
     sc_kvlist_copy(&d->meta.labels, &s->meta.labels) ||
     sc_kvlist_copy(&d->meta.annotations, &s->meta.annotations))
    goto fail;
  if(s->meta.n_finalizers) {
    d->meta.finalizers = calloc(s->meta.n_finalizers, sizeof(char *));
    if(!d->meta.finalizers)
      goto fail;
    for(i = 0; i < s->meta.n_finalizers; i++) {
      d->meta.finalizers[i] = strdup(s->meta.finalizers[i]);
      d->meta.n_finalizers = i + 1;
      if(!d->meta.finalizers[i])
        goto fail;
    }
  }
  if(session_spec_copy(&d->spec, &s->spec))
    goto fail_spec;
  if(session_status_copy(&d->status, &s->status))
    goto fail;
  return d;
fail_spec:
  memset(&d->spec, 0, sizeof(d->spec));
fail:
  session_free(d);
  return NULL;
}

sc_err session_apply_defaults(session *s)
{
  if(!s->meta.namespace_) {
    s->meta.namespace_ = strdup(SESSION_DEFAULT_NAMESPACE);
    if(!s->meta.namespace_)
      return SC_ERR_NOMEM;
  }
  if(!s->spec.idle_timeout_ms)
    s->spec.idle_timeout_ms = SESSION_DEFAULT_IDLE_TIMEOUT_MS;
  if(s->spec.reclaim_after_ms < 0)
    s->spec.reclaim_after_ms = SESSION_DEFAULT_RECLAIM_AFTER_MS;
  if(!s->spec.session_id && s->meta.name) {
    s->spec.session_id = strdup(s->meta.name);
    if(!s->spec.session_id)
      return SC_ERR_NOMEM;
  }
  if(!s->spec.tenant_id) {
    s->spec.tenant_id = strdup(s->meta.namespace_);
    if(!s->spec.tenant_id)
      return SC_ERR_NOMEM;
  }
  return SC_OK;
}

const char *session_eff_namespace(const session *s)
{
  return s && s->meta.namespace_ ? s->meta.namespace_
                                 : SESSION_DEFAULT_NAMESPACE;
}

const char *session_eff_session_id(const session *s)
{
  if(!s)
    return NULL;
  return s->spec.session_id ? s->spec.session_id : s->meta.name;
}

const char *session_eff_tenant_id(const session *s)
{
  return s && s->spec.tenant_id ? s->spec.tenant_id
                                : session_eff_namespace(s);
}

int64_t session_eff_idle_timeout_ms(const session *s)
{
  return s && s->spec.idle_timeout_ms > 0 ? s->spec.idle_timeout_ms
                                          : SESSION_DEFAULT_IDLE_TIMEOUT_MS;
}

int64_t session_eff_reclaim_after_ms(const session *s)
{
  return s && s->spec.reclaim_after_ms >= 0 ? s->spec.reclaim_after_ms
                                            : SESSION_DEFAULT_RECLAIM_AFTER_MS;
}

int64_t session_eff_generation(const session *s)
{
  return s && s->meta.generation > 0 ? s->meta.generation : 1;
}

void session_key(const session *s, char *buf, size_t len)
{
  snprintf(buf, len, "%s/%s", session_eff_namespace(s),
           s && s->meta.name ? s->meta.name : "");
}
