/*
 * manifest_walk.c - a YAML document as Sessions (manifest_walk.h).
 *
 * metadata and spec are read by the field table: a key no row names is
 * an unknown field (with a "did you mean" when one is close), a row's
 * type says how its value reads, its rule what it must be. The top level
 * and a List's own fields are the only names written here.
 */
#include "api/manifest_walk.h"
#include "api/policy.h"

#include <stdlib.h>
#include <string.h>

#include "api/fields.h"
#include "api/rules.h"
#include "lib/hmap.h"

/* ================================================== the object index
 * namespace/name -> item of the set, to find the same object twice in
 * O(1). Items are only ever appended to a set, so the index catches up
 * by number. */

struct mindex {
  sc_hmap *m;     /* SC_HMAP_IDX(item) */
  uint64_t seed;
  size_t synced;  /* items of the set already in the index */
};

typedef struct objkey {
  const manifest_set *set;
  const char *ns, *name;
} objkey;

mindex *mindex_new(void)
{
  mindex *ix = calloc(1, sizeof(*ix));
  if(ix && !(ix->m = sc_hmap_new(0))) {
    free(ix);
    return NULL;
  }
  if(ix)
    ix->seed = sc_hash_seed();
  return ix;
}

void mindex_free(mindex *ix)
{
  if(!ix)
    return;
  sc_hmap_free(ix->m);
  free(ix);
}

static uint64_t obj_hash(const mindex *ix, const char *ns, const char *name)
{
  return sc_hash_fin(sc_hash_strn(sc_hash_strn(ix->seed, ns, strlen(ns)),
                                  name, strlen(name)));
}

static bool obj_usable(const session *s)
{
  return s && s->meta.name && s->meta.namespace_;
}

static bool obj_eq(const void *value, const void *key, void *ud)
{
  const objkey *k = key;
  const session *o = k->set->items[SC_HMAP_IDX_OF(value)].s;
  (void)ud;
  return obj_usable(o) && !strcmp(o->meta.name, k->name) &&
         !strcmp(o->meta.namespace_, k->ns);
}

/* The item holding ns/name, or -1. */
static long mindex_find(const mindex *ix, const manifest_set *set,
                        const char *ns, const char *name)
{
  objkey k = {set, ns, name};
  void *v;
  if(!ns || !name) /* an object without a usable name is never a duplicate */
    return -1;
  v = sc_hmap_get(ix->m, obj_hash(ix, ns, name), obj_eq, &k, NULL);
  return v ? (long)SC_HMAP_IDX_OF(v) : -1;
}

/* Index the items appended since the last call. */
static sc_err mindex_sync(mindex *ix, const manifest_set *set)
{
  for(; ix->synced < set->n; ix->synced++) {
    const session *s = set->items[ix->synced].s;
    if(!obj_usable(s) ||
       mindex_find(ix, set, s->meta.namespace_, s->meta.name) >= 0)
      continue;
    if(sc_hmap_put(ix->m, obj_hash(ix, s->meta.namespace_, s->meta.name),
                   SC_HMAP_IDX(ix->synced)))
      return SC_ERR_NOMEM;
  }
  return SC_OK;
}

/* ========================================================= the values */

static size_t edit_distance(const char *a, const char *b)
{
  size_t la = strlen(a), lb = strlen(b), i, j;
  size_t row[64];
  if(la >= 64 || lb >= 64)
    return 99;
  for(j = 0; j <= lb; j++)
    row[j] = j;
  for(i = 1; i <= la; i++) {
    size_t prev = row[0];
    row[0] = i;
    for(j = 1; j <= lb; j++) {
      size_t cur = row[j];
      char ca = a[i - 1], cb = b[j - 1];
      size_t cost;
      if(ca >= 'A' && ca <= 'Z')
        ca = (char)(ca - 'A' + 'a');
      if(cb >= 'A' && cb <= 'Z')
        cb = (char)(cb - 'A' + 'a');
      cost = ca == cb ? 0 : 1;
      row[j] = prev + cost;
      if(row[j - 1] + 1 < row[j])
        row[j] = row[j - 1] + 1;
      if(cur + 1 < row[j])
        row[j] = cur + 1;
      prev = cur;
    }
  }
  return row[lb];
}

static void unknown_field(mwalk *c, const ynode *k, const char *const *known)
{
  const char *best = NULL;
  size_t bestd = 3, i;
  for(i = 0; known[i]; i++) {
    size_t d = edit_distance(k->val, known[i]);
    if(d < bestd) {
      bestd = d;
      best = known[i];
    }
  }
  if(best && strlen(k->val) > 2)
    yerrs_node(c->e, k, "unknown field (did you mean %s?)", best);
  else
    yerrs_node(c->e, k, "unknown field");
}

/* The text of a string scalar, or NULL after an error was reported. */
static const char *want_str(mwalk *c, const ynode *v)
{
  if(v->kind == YK_ALIAS)
    return NULL; /* reported when read */
  if(v->kind != YK_SCALAR) {
    yerrs_node(c->e, v, "expected a string, got %s", ynode_what(v));
    return NULL;
  }
  if(v->type != YT_STR) {
    rule_quoted q;
    if(v->type == YT_NULL)
      yerrs_node(c->e, v, "expected a string, got null");
    else
      yerrs_node(c->e, v, "expected a string, got %s (quote it: %s)",
                 ynode_what(v), rule_quote(&q, v->val, v->len));
    return NULL;
  }
  if(memchr(v->val, '\0', v->len)) {
    yerrs_node(c->e, v, "contains a NUL character");
    return NULL;
  }
  return v->val;
}

static bool want_map(mwalk *c, const ynode *v)
{
  if(v->kind == YK_MAP)
    return true;
  if(v->kind != YK_ALIAS)
    yerrs_node(c->e, v, "expected a mapping, got %s", ynode_what(v));
  return false;
}

/* Field dispatch: the usable key of pair i, or NULL to skip it. */
static const ynode *pair_key(mwalk *c, const ynode *m, size_t i)
{
  const ynode *k = m->kids[i];
  if(k->dup || k->kind == YK_ALIAS)
    return NULL;
  if(k->kind != YK_SCALAR) {
    yerrs_node(c->e, k, "keys must be strings, got %s", ynode_what(k));
    return NULL;
  }
  if(memchr(k->val, '\0', k->len)) {
    yerrs_node(c->e, k, "key contains a NUL character");
    return NULL;
  }
  return k;
}

static void walk_kv(mwalk *c, const ynode *m, const sf_field *f,
                    sc_kvlist *out)
{
  size_t i;
  if(ynode_is_null(m))
    return;
  if(!want_map(c, m))
    return;
  if(f->max_items && m->n / 2 > f->max_items)
    yerrs_node(c->e, m, "%zu entries, at most %zu are allowed", m->n / 2,
               f->max_items);
  for(i = 0; i + 1 < m->n; i += 2) {
    const ynode *k = pair_key(c, m, i), *v = m->kids[i + 1];
    const char *val;
    size_t vlen;
    rule_msg mb;
    if(!k)
      continue;
    if(!rule_check(&f->key, k->val, k->len, &mb))
      yerrs_node(c->e, k, "%s", mb.m);
    if(ynode_is_null(v))
      val = "";
    else if(!(val = want_str(c, v)))
      continue;
    vlen = ynode_is_null(v) ? 0 : v->len;
    if(!rule_check(&f->val, val, vlen, &mb)) {
      yerrs_node(c->e, v, "%s", mb.m);
      continue;
    }
    if(sc_kvlist_set(out, k->val, val))
      yerrs_nomem(c->e);
  }
}

/* A string field; null is "" for required fields and unset for optional
 * ones. Stores a copy in *out. */
static void walk_string(mwalk *c, const ynode *v, const sf_field *f,
                        char **out)
{
  const char *s;
  rule_msg mb;
  if(ynode_is_null(v)) {
    if(f->flags & SF_REQUIRED)
      yerrs_node(c->e, v, "must not be empty");
    return;
  }
  s = want_str(c, v);
  if(!s)
    return;
  if(!rule_check(&f->val, s, v->len, &mb)) {
    yerrs_node(c->e, v, "%s", mb.m);
    return;
  }
  free(*out);
  *out = strdup(s);
  if(!*out)
    yerrs_nomem(c->e);
}

static void walk_duration(mwalk *c, const ynode *v, const sf_field *f,
                          int64_t *out)
{
  rule_msg mb;
  if(ynode_is_null(v) || v->kind == YK_ALIAS)
    return;
  if(v->kind != YK_SCALAR) {
    yerrs_node(c->e, v, "expected a duration such as %s, got %s", f->example,
               ynode_what(v));
    return;
  }
  if(!rule_duration_text(f, v->val, v->len, out, &mb))
    yerrs_node(c->e, v, "%s", mb.m);
}

static void walk_enum(mwalk *c, const ynode *v, const sf_field *f,
                      int *out)
{
  const char *s;
  char hint[160];
  rule_quoted q;
  int e;
  if(ynode_is_null(v) || !(s = want_str(c, v)))
    return;
  e = sf_name_parse(f->names, s);
  if(e >= 0) {
    *out = e;
    return;
  }
  sf_enum_hint(f, hint, sizeof(hint));
  yerrs_node(c->e, v, "%s is not a %s%s", rule_quote(&q, s, v->len), f->what,
             hint);
}

/* A decimal integer (YAML 1.2 core: a plain scalar of digits). */
static void walk_int(mwalk *c, const ynode *v, const sf_field *f,
                     int64_t *out)
{
  rule_quoted q;
  const char *p;
  int64_t w = 0;
  bool neg = false;
  if(ynode_is_null(v) || v->kind == YK_ALIAS)
    return;
  if(v->kind != YK_SCALAR || v->type != YT_INT) {
    yerrs_node(c->e, v, "expected an integer, got %s", ynode_what(v));
    return;
  }
  p = v->val;
  if(*p == '+')
    p++;
  else if(*p == '-') {
    if(f->flags & SF_NONNEG) {
      yerrs_node(c->e, v, "%s must not be negative", v->val);
      return;
    }
    neg = true;
    p++;
  }
  if(!yaml_all_in(p, "0123456789")) {
    yerrs_node(c->e, v, "%s is not a decimal integer",
               rule_quote(&q, v->val, v->len));
    return;
  }
  for(; *p; p++) {
    int d = *p - '0';
    if(w > (INT64_MAX - d) / 10) {
      yerrs_node(c->e, v, "%s is too large", v->val);
      return;
    }
    w = w * 10 + d;
  }
  *out = neg ? -w : w;
}

static void walk_bool(mwalk *c, const ynode *v, bool *out)
{
  if(ynode_is_null(v) || v->kind == YK_ALIAS)
    return;
  if(v->kind != YK_SCALAR || v->type != YT_BOOL) {
    yerrs_node(c->e, v, "expected a boolean, got %s", ynode_what(v));
    return;
  }
  *out = v->val[0] == 't' || v->val[0] == 'T';
}

static void walk_fields(mwalk *c, const ynode *m, const sf_table *t,
                        void *base);

static void walk_optbool(mwalk *c, const ynode *v, int *out)
{
  bool b = false;
  if(ynode_is_null(v) || v->kind == YK_ALIAS)
    return;
  if(v->kind != YK_SCALAR || v->type != YT_BOOL) {
    yerrs_node(c->e, v, "expected a boolean, got %s", ynode_what(v));
    return;
  }
  walk_bool(c, v, &b);
  *out = b ? SESSION_OPT_TRUE : SESSION_OPT_FALSE;
}

/* a sequence, or NULL after an error (or for null) */
static bool want_seq(mwalk *c, const ynode *v, const sf_field *f)
{
  if(ynode_is_null(v) || v->kind == YK_ALIAS)
    return false;
  if(v->kind != YK_SEQ) {
    yerrs_node(c->e, v, "expected a list, got %s", ynode_what(v));
    return false;
  }
  if(f->max_items && v->n > f->max_items) {
    yerrs_node(c->e, v, "%zu items, at most %zu are allowed", v->n,
               f->max_items);
    return false;
  }
  return true;
}

/* a list of strings, each by the row's rule */
static void walk_strlist(mwalk *c, const ynode *v, const sf_field *f,
                         void *base)
{
  char ***out = SF_AT(base, f->off, char **);
  size_t *n = SF_AT(base, f->off_n, size_t), i;
  if(!want_seq(c, v, f) || !v->n)
    return;
  if(*n) /* cannot happen: a duplicate key is skipped */
    return;
  if(!(*out = calloc(v->n, sizeof(**out)))) {
    yerrs_nomem(c->e);
    return;
  }
  for(i = 0; i < v->n; i++) {
    const ynode *it = v->kids[i];
    const char *s = want_str(c, it);
    rule_msg mb;
    if(!s)
      continue;
    if(!rule_check(&f->val, s, it->len, &mb)) {
      yerrs_node(c->e, it, "%s", mb.m);
      continue;
    }
    if(!((*out)[(*n)++] = strdup(s))) {
      (*n)--;
      yerrs_nomem(c->e);
    }
  }
}

/* a list of objects of the row's sub table */
static void walk_objlist(mwalk *c, const ynode *v, const sf_field *f,
                         void *base)
{
  char **out = SF_AT(base, f->off, char *);
  size_t *n = SF_AT(base, f->off_n, size_t), i;
  if(!want_seq(c, v, f) || !v->n || *n)
    return;
  if(!(*out = calloc(v->n, f->sub->size))) {
    yerrs_nomem(c->e);
    return;
  }
  *n = v->n; /* zeroed items are safe to free */
  for(i = 0; i < v->n; i++)
    if(want_map(c, v->kids[i]))
      walk_fields(c, v->kids[i], f->sub, *out + i * f->sub->size);
}

/* ======================================================= the objects */

static const char *const top_fields[] = {"apiVersion", "kind", "metadata",
                                         "spec", "status", NULL};
static const char *const list_fields[] = {"apiVersion", "kind", "items",
                                          "metadata", NULL};
/* Metadata an API server keeps that no row holds: ignored like the
 * SF_STORE rows (set by the store, the API server or the controller,
 * never by a manifest; ignored as the API server ignores them on a create,
 * so what `get -o json|yaml` prints applies back; values not checked). */
static const char *const meta_ignored[] = {
  "deletionGracePeriodSeconds", "managedFields", "selfLink", NULL};

static bool in_list(const char *s, const char *const *l)
{
  for(; *l; l++)
    if(!strcmp(s, *l))
      return true;
  return false;
}

/* The names a manifest may set in t (for "did you mean"). */
static void settable_names(const sf_table *t, const char **out, size_t max)
{
  size_t i, n = 0;
  for(i = 0; i < t->n && n + 1 < max; i++)
    if(!(t->f[i].flags & SF_STORE))
      out[n++] = t->f[i].name;
  out[n] = NULL;
}

static void walk_row(mwalk *c, const ynode *v, const sf_field *f, void *base)
{
  switch(f->type) {
  case SF_STR: walk_string(c, v, f, SF_AT(base, f->off, char *)); break;
  case SF_ENUM: walk_enum(c, v, f, SF_AT(base, f->off, int)); break;
  case SF_DURATION:
    walk_duration(c, v, f, SF_AT(base, f->off, int64_t));
    break;
  case SF_INT: walk_int(c, v, f, SF_AT(base, f->off, int64_t)); break;
  case SF_BOOL: walk_bool(c, v, SF_AT(base, f->off, bool)); break;
  case SF_MAP: walk_kv(c, v, f, SF_AT(base, f->off, sc_kvlist)); break;
  case SF_OPTBOOL: walk_optbool(c, v, SF_AT(base, f->off, int)); break;
  case SF_STRLIST: walk_strlist(c, v, f, base); break;
  case SF_OBJLIST: walk_objlist(c, v, f, base); break;
  case SF_OBJECT:
    if(!ynode_is_null(v) && want_map(c, v))
      walk_fields(c, v, f->sub, base);
    break;
  default:
    yerrs_node(c->e, v, "cannot be set in a manifest");
    break;
  }
}

/* The mapping m as the rows of t, into base; SF_REQUIRED rows must be
 * there. */
static void walk_fields(mwalk *c, const ynode *m, const sf_table *t,
                        void *base)
{
  bool seen[64] = {false};
  const char *known[64];
  size_t i;
  for(i = 0; i + 1 < m->n; i += 2) {
    const ynode *k = pair_key(c, m, i), *v = m->kids[i + 1];
    const sf_field *f;
    if(!k)
      continue;
    f = sf_find(t, k->val, k->len);
    if(f && (size_t)(f - t->f) < sizeof(seen))
      seen[f - t->f] = true;
    if(f && !(f->flags & SF_STORE))
      walk_row(c, v, f, base);
    else if(f || (t == &sf_meta && in_list(k->val, meta_ignored)))
      ; /* set by the store: ignored (see meta_ignored) */
    else {
      settable_names(t, known, sizeof(known) / sizeof(known[0]));
      unknown_field(c, k, known);
    }
  }
  for(i = 0; i < t->n; i++)
    if((t->f[i].flags & SF_REQUIRED) && !seen[i])
      yerrs_field(c->e, m, t->f[i].name, "required field missing");
}

static sc_err add_item(manifest_set *set, session *s, const char *file,
                       int line)
{
  manifest_item *items =
    realloc(set->items, (set->n + 1) * sizeof(*set->items));
  char *f = strdup(file);
  if(items)
    set->items = items;
  if(!items || !f) {
    free(f);
    return SC_ERR_NOMEM;
  }
  items[set->n].s = s;
  items[set->n].file = f;
  items[set->n].line = line;
  set->n++;
  return SC_OK;
}

/* The apiVersion of a Session or a List. */
static void check_api(mwalk *c, const ynode *v, bool list)
{
  const char *api = want_str(c, v);
  rule_quoted q;
  if(!api)
    return;
  if(list && strcmp(api, "v1") && strcmp(api, SESSION_API_VERSION))
    yerrs_node(c->e, v, "%s is not supported for a List (use v1)",
               rule_quote(&q, api, v->len));
  else if(!list && strcmp(api, SESSION_API_VERSION))
    yerrs_node(c->e, v, "%s is not supported (use %s)",
               rule_quote(&q, api, v->len), SESSION_API_VERSION);
}

/* Add s (valid, defaults applied) unless it is there already. Takes s. */
static void add_session(mwalk *c, session *s, const ynode *m, bool doc_bad)
{
  long first;
  if(mindex_sync(c->index, c->set)) {
    session_free(s);
    yerrs_nomem(c->e);
    return;
  }
  /* the same object twice, in this source or an earlier one */
  first = mindex_find(c->index, c->set, s->meta.namespace_, s->meta.name);
  if(first >= 0) {
    char key[160];
    const ynode *meta = ynode_get(m, "metadata");
    session_key(s, key, sizeof(key));
    yerrs_node(c->e, ynode_get(meta, "name"),
               "duplicate object %s, first at %s:%d", key,
               c->set->items[first].file, c->set->items[first].line);
    session_free(s);
    return;
  }
  if(doc_bad) { /* valid itself, but its document is not */
    session_free(s);
    return;
  }
  if(add_item(c->set, s, c->e->file, m->line)) {
    session_free(s);
    yerrs_nomem(c->e);
  }
}

/* The top level of a Session (list false) or of a List: apiVersion is
 * checked (and required), kind skipped (the caller read it), the value
 * of known[i] put in got[i], any other key an unknown field. */
static void walk_top(mwalk *c, const ynode *m, bool list,
                     const char *const *known, const ynode **got)
{
  size_t i, j;
  bool have_api = false;
  for(i = 0; i + 1 < m->n; i += 2) {
    const ynode *k = pair_key(c, m, i), *v = m->kids[i + 1];
    if(!k)
      continue;
    for(j = 0; known[j] && strcmp(known[j], k->val); j++)
      ;
    if(!known[j])
      unknown_field(c, k, known);
    else if(!strcmp(k->val, "apiVersion")) {
      have_api = true;
      check_api(c, v, list);
    }
    else
      got[j] = v;
  }
  if(!have_api && list)
    yerrs_field(c->e, m, "apiVersion", "required field missing (use v1)");
  else if(!have_api)
    yerrs_field(c->e, m, "apiVersion", "required field missing (use %s)",
                SESSION_API_VERSION);
}

/* rule_spec_cross() findings at their nodes (the spec mapping's) */
typedef struct cross_at {
  mwalk *c;
  const ynode *spec;
} cross_at;

static void cross_report(void *ud, const char *top, const char *sub,
                         long idx, const char *key, const char *msg)
{
  cross_at *x = ud;
  const ynode *n = ynode_get(x->spec, top), *k;
  if(n && sub && (k = ynode_get(n, sub)))
    n = k;
  if(n && idx >= 0 && n->kind == YK_SEQ && (size_t)idx < n->n)
    n = n->kids[idx];
  if(n && key && (k = ynode_get(n, key)))
    n = k;
  yerrs_node(x->c->e, n ? n : x->spec, "%s", msg);
}

/* A mapping known to be kind: Session. */
static void walk_session(mwalk *c, const ynode *m, bool doc_bad)
{
  session *s = session_new();
  /* top_fields: metadata and spec; status is the controller's: ignored */
  const ynode *got[5] = {NULL}, *meta, *spec;
  size_t before = c->e->n;
  if(!s) {
    yerrs_nomem(c->e);
    return;
  }
  walk_top(c, m, false, top_fields, got);
  meta = got[2];
  spec = got[3];
  if(!meta)
    yerrs_field(c->e, m, "metadata", "required field missing");
  else if(ynode_is_null(meta))
    yerrs_node(c->e, meta, "must not be empty (it needs at least a name)");
  else if(want_map(c, meta))
    walk_fields(c, meta, &sf_meta, &s->meta);
  if(!spec)
    yerrs_field(c->e, m, "spec", "required field missing");
  else if(ynode_is_null(spec))
    yerrs_node(c->e, spec, "must not be empty (it needs at least a template)");
  else if(want_map(c, spec))
    walk_fields(c, spec, &sf_spec, &s->spec);
  if(c->e->n == before && spec && spec->kind == YK_MAP) {
    cross_at x = {c, spec};
    rule_spec_cross(&s->spec, cross_report, &x);
    /* the operator's bounds, reported where the field is */
    if(c->e->n == before)
      policy_check(c->policy, s, cross_report, &x);
  }

  if(c->e->n != before || c->e->stop) {
    session_free(s);
    return;
  }
  if(session_apply_defaults(s)) {
    session_free(s);
    yerrs_nomem(c->e);
    return;
  }
  add_session(c, s, m, doc_bad);
}

/* The kind of a Session-or-List mapping, or NULL after an error. */
static const char *doc_kind(mwalk *c, const ynode *m, const char *use)
{
  const ynode *k = ynode_get(m, "kind");
  if(!k) {
    yerrs_field(c->e, m, "kind", "required field missing (use %s)", use);
    return NULL;
  }
  if(ynode_is_null(k)) {
    yerrs_node(c->e, k, "must not be empty (use %s)", use);
    return NULL;
  }
  return want_str(c, k);
}

static void walk_list(mwalk *c, const ynode *m, bool doc_bad)
{
  /* list_fields: items; a list's own metadata (resourceVersion: "")
   * means nothing here */
  const ynode *got[4] = {NULL}, *items;
  size_t i;
  walk_top(c, m, true, list_fields, got);
  items = got[2];
  if(!items) {
    yerrs_field(c->e, m, "items", "required field missing");
    return;
  }
  if(ynode_is_null(items) || items->kind == YK_ALIAS)
    return;
  if(items->kind != YK_SEQ) {
    yerrs_node(c->e, items, "expected a list of Sessions, got %s",
               ynode_what(items));
    return;
  }
  c->set->n_read += items->n;
  for(i = 0; i < items->n && !c->e->stop; i++) {
    const ynode *it = items->kids[i];
    const char *kind;
    rule_quoted q;
    if(it->kind == YK_ALIAS)
      continue;
    if(it->kind != YK_MAP) {
      yerrs_node(c->e, it, "expected a mapping (a Session), got %s",
                 ynode_what(it));
      continue;
    }
    kind = doc_kind(c, it, SESSION_KIND);
    if(!kind)
      continue;
    if(strcmp(kind, SESSION_KIND)) {
      yerrs_node(c->e, ynode_get(it, "kind"),
                 "%s is not allowed in a List (use %s)",
                 rule_quote(&q, kind, strlen(kind)), SESSION_KIND);
      continue;
    }
    walk_session(c, it, doc_bad);
  }
}

void manifest_walk_doc(void *ud, const ynode *root, bool doc_bad)
{
  mwalk *c = ud;
  const char *kind;
  rule_quoted q;
  if(!root || ynode_is_null(root))
    return; /* an empty document ("---" at the end) */
  if(root->kind == YK_ALIAS) {
    c->set->n_read++;
    return;
  }
  if(root->kind != YK_MAP) {
    c->set->n_read++;
    yerrs_node(c->e, root,
               "expected a mapping (a Session or a List), got %s",
               ynode_what(root));
    return;
  }
  kind = doc_kind(c, root, "Session or List");
  if(kind && (!strcmp(kind, "List") || !strcmp(kind, "SessionList"))) {
    walk_list(c, root, doc_bad); /* counts its items */
    return;
  }
  c->set->n_read++;
  if(!kind)
    return;
  if(!strcmp(kind, SESSION_KIND))
    walk_session(c, root, doc_bad);
  else
    yerrs_node(c->e, ynode_get(root, "kind"),
               "%s is not supported (use Session or List)",
               rule_quote(&q, kind, strlen(kind)));
}
