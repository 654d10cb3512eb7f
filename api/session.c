/* session.c - the Session struct: lifetime, copies, comparisons, defaults. */
#include "api/session.h"
#include "api/fields.h"
#include "lib/scstr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* --- enums: the names (the field table's spec.state and status.phase
 * rows read them too) --- */

const char *const sf_state_names[] = {"Active", "Running", "Paused", "Ended",
                                      NULL};
const char *const sf_phase_names[] = {"",        "Pending", "Creating",
                                      "Running", "Paused",  "Reclaimed",
                                      "Ended",   "Failed",  "Reclaiming",
                                      NULL};
const char *const sf_resume_policy_names[] = {"Auto", "OnConnect", NULL};

const char *session_state_name(session_state s)
{
  return sf_name_of(sf_state_names, (int)s);
}

int session_state_parse(const char *s)
{
  return sf_name_parse(sf_state_names, s);
}

const char *session_phase_name(session_phase p)
{
  return sf_name_of(sf_phase_names, (int)p);
}

int session_phase_parse(const char *s)
{
  return sf_name_parse(sf_phase_names, s);
}

/* --- conditions --- */

static void cond_clear(session_condition *c)
{
  sf_free(&sf_condition, c);
  memset(c, 0, sizeof(*c));
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
  err = sf_copy(&sf_condition, &nc, c);
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

/* --- spec / status / metadata: by the field table --- */

void session_spec_clear(session_spec *sp)
{
  if(!sp)
    return;
  sf_free(&sf_spec, sp);
  memset(sp, 0, sizeof(*sp));
}

sc_err session_spec_copy(session_spec *dst, const session_spec *src)
{
  return sf_copy(&sf_spec, dst, src);
}

bool session_spec_equal(const session_spec *a, const session_spec *b)
{
  return sf_equal(&sf_spec, a, b);
}

void session_status_clear(session_status *st)
{
  if(!st)
    return;
  sf_free(&sf_status, st);
  memset(st, 0, sizeof(*st));
}

sc_err session_status_copy(session_status *dst, const session_status *src)
{
  return sf_copy(&sf_status, dst, src);
}

bool session_status_equal(const session_status *a, const session_status *b)
{
  return sf_equal(&sf_status, a, b);
}

/* --- session --- */

session *session_new(void)
{
  session *s = calloc(1, sizeof(session));
  if(s)
    s->spec.reclaim_after_ms = -1; /* unset: 0 means "never" */
  return s;
}

void session_free(session *s)
{
  if(!s)
    return;
  if(s->refs_) { /* another holder keeps it */
    if(!--s->refs_)
      s->valid_ = false; /* one owner again: it may change now */
    return;
  }
  sf_free(&sf_meta, &s->meta);
  sf_free(&sf_spec, &s->spec);
  sf_free(&sf_status, &s->status);
  free(s);
}

session *session_ref(const session *s)
{
  session *m = (session *)s; /* the shared rule: nobody writes into it */
  if(m)
    m->refs_++;
  return m;
}

bool session_shared(const session *s)
{
  return s && s->refs_ > 0;
}

session *session_dup(const session *s)
{
  session *d;
  if(!s)
    return NULL;
  d = session_new();
  if(!d)
    return NULL;
  /* each copy owns nothing when it fails: d is then safe to free */
  if(sf_copy(&sf_meta, &d->meta, &s->meta) ||
     sf_copy(&sf_spec, &d->spec, &s->spec) ||
     sf_copy(&sf_status, &d->status, &s->status)) {
    session_free(d);
    return NULL;
  }
  return d;
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

/* FNV-1a 64 over a length-prefixed field, so no two specs run together */
static uint64_t fnv_add(uint64_t h, const char *s)
{
  size_t n = s ? strlen(s) : 0, i;
  unsigned char len[8];
  for(i = 0; i < 8; i++)
    len[i] = (unsigned char)(s ? (n >> (8 * i)) & 0xff : 0xff);
  for(i = 0; i < 8; i++)
    h = (h ^ len[i]) * 1099511628211ULL;
  for(i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
  return h;
}

void session_sandbox_config_digest(const session_spec *sp,
                                   char out[SESSION_CONFIG_DIGEST_LEN + 1])
{
  static const char *const opt[] = {"-", "true", "false"};
  uint64_t h = 14695981039346656037ULL;
  size_t i;
  h = fnv_add(h, "network");
  h = fnv_add(h, opt[sp->net_internet <= SESSION_OPT_FALSE
                       ? sp->net_internet : 0]);
  for(i = 0; i < sp->n_net_allow_out; i++)
    h = fnv_add(fnv_add(h, "allow"), sp->net_allow_out[i]);
  for(i = 0; i < sp->n_net_deny_out; i++)
    h = fnv_add(fnv_add(h, "deny"), sp->net_deny_out[i]);
  h = fnv_add(h, opt[sp->net_public <= SESSION_OPT_FALSE ? sp->net_public
                                                          : 0]);
  for(i = 0; i < sp->n_volume_mounts; i++) {
    const session_volume_mount *v = &sp->volume_mounts[i];
    h = fnv_add(fnv_add(fnv_add(h, "volume"), v->name), v->path);
    h = fnv_add(h, v->read_only ? "ro" : "rw");
  }
  h = fnv_add(fnv_add(fnv_add(h, "workspace"), sp->workspace_host_path),
              sp->workspace_mount_path);
  snprintf(out, SESSION_CONFIG_DIGEST_LEN + 1, "%016llx",
           (unsigned long long)h);
}
