/*
 * validate.c - session_validate() and session_invalid_reason()
 * (manifest.h): every metadata and spec row of the field table checked
 * by its rule (rules.h), in row order, each error "FIELD.PATH: message".
 */
#include "api/manifest.h"

#include <stdlib.h>
#include <string.h>

#include "api/fields.h"
#include "api/rules.h"
#include "lib/dynbuf.h"

typedef struct vctx {
  char ***errs;
  size_t *n_errs;
  bool stored;
  bool found;
  bool nomem;
} vctx;

static void verr(vctx *v, const char *path, const char *msg)
{
  dynbuf b;
  char *line, **e;
  v->found = true;
  dynbuf_init(&b, 4096);
  dynbuf_printf(&b, "%s: %s", path, msg);
  line = dynbuf_take(&b);
  dynbuf_free(&b);
  if(!line) {
    v->nomem = true;
    return;
  }
  e = realloc(*v->errs, (*v->n_errs + 1) * sizeof(*e));
  if(!e) {
    free(line);
    v->nomem = true;
    return;
  }
  *v->errs = e;
  e[(*v->n_errs)++] = line;
}

/* An error on row f of part (the path is made only now: most objects
 * have none, and the controller asks about every object of every pass). */
static void verr_row(vctx *v, const char *part, const sf_field *f,
                     const char *key, const char *msg)
{
  char path[FIELDPATH_MAX], p[FIELDPATH_MAX];
  fieldpath_key(path, sizeof(path), part, f->name);
  if(key)
    fieldpath_key(p, sizeof(p), path, key);
  verr(v, key ? p : path, msg);
}

static void vtable_at(vctx *v, const char *part, const sf_table *t,
                      const void *base);

static void vstrlist(vctx *v, const char *part, const sf_field *f,
                     const void *base)
{
  char *const *l = *SF_CAT(base, f->off, char **);
  size_t n = *SF_CAT(base, f->off_n, size_t), i;
  rule_msg mb;
  if(f->max_items && n > f->max_items) {
    rule_msgf(&mb, "%zu items, at most %zu are allowed", n, f->max_items);
    verr_row(v, part, f, NULL, mb.m);
  }
  for(i = 0; i < n; i++)
    if(!rule_check(&f->val, l[i], strlen(l[i]), &mb)) {
      char p[FIELDPATH_MAX], q[FIELDPATH_MAX];
      fieldpath_key(p, sizeof(p), part, f->name);
      fieldpath_index(q, sizeof(q), p, i);
      verr(v, q, mb.m);
    }
}

static void vobjlist(vctx *v, const char *part, const sf_field *f,
                     const void *base)
{
  const char *items = *SF_CAT(base, f->off, char *);
  size_t n = *SF_CAT(base, f->off_n, size_t), i;
  rule_msg mb;
  if(f->max_items && n > f->max_items) {
    rule_msgf(&mb, "%zu items, at most %zu are allowed", n, f->max_items);
    verr_row(v, part, f, NULL, mb.m);
  }
  for(i = 0; i < n; i++) {
    char p[FIELDPATH_MAX], q[FIELDPATH_MAX];
    fieldpath_key(p, sizeof(p), part, f->name);
    fieldpath_index(q, sizeof(q), p, i);
    vtable_at(v, q, f->sub, items + i * f->sub->size);
  }
}

static void vkv(vctx *v, const char *part, const sf_field *f,
                const sc_kvlist *l)
{
  size_t i;
  rule_msg mb;
  if(f->max_items && l->n > f->max_items) {
    rule_msgf(&mb, "%zu entries, at most %zu are allowed", l->n,
              f->max_items);
    verr_row(v, part, f, NULL, mb.m);
  }
  for(i = 0; i < l->n; i++) {
    const char *k = l->items[i].key, *val = l->items[i].value;
    if(!rule_check(&f->key, k, strlen(k), &mb))
      verr_row(v, part, f, k, mb.m);
    if(!rule_check(&f->val, val, strlen(val), &mb))
      verr_row(v, part, f, k, mb.m);
  }
}

/* One row. A manifest's object has its defaults applied, so every string
 * is set; a stored object may leave SF_DEFAULTED rows out. */
static void vrow(vctx *v, const char *part, const sf_field *f,
                 const void *base)
{
  char hint[160];
  rule_msg mb;
  if(f->flags & SF_STORE)
    return;
  if(v->stored && (f->flags & SF_MANIFEST_ONLY))
    return;
  if(v->stored && (f->flags & SF_DEFAULTED) && !sf_is_set(f, base))
    return;
  switch(f->type) {
  case SF_STR: {
    const char *s = *SF_CAT(base, f->off, char *);
    if(!s && (f->flags & SF_OPTIONAL))
      break;
    if(!s)
      verr_row(v, part, f, NULL, "required field missing");
    else if(!rule_check(&f->val, s, strlen(s), &mb))
      verr_row(v, part, f, NULL, mb.m);
    break;
  }
  case SF_ENUM:
    if((size_t)(unsigned)sf_enum_get(f, base) >= sf_enum_count(f)) {
      sf_enum_hint(f, hint, sizeof(hint));
      rule_msgf(&mb, "is not a %s%s", f->what, hint);
      verr_row(v, part, f, NULL, mb.m);
    }
    break;
  case SF_DURATION:
    if(!rule_duration_ms(f, *SF_CAT(base, f->off, int64_t), &mb))
      verr_row(v, part, f, NULL, mb.m);
    break;
  case SF_MAP: vkv(v, part, f, SF_CAT(base, f->off, sc_kvlist)); break;
  case SF_INT:
    if((f->flags & SF_NONNEG) && *SF_CAT(base, f->off, int64_t) < 0)
      verr_row(v, part, f, NULL, "must not be negative");
    break;
  case SF_STRLIST: vstrlist(v, part, f, base); break;
  case SF_OBJLIST:
    if(f->sub != &sf_condition) /* status: not validated */
      vobjlist(v, part, f, base);
    break;
  case SF_OBJECT: /* any member set: a gate's absence is an error */
    if(!sf_empty(f->sub, base)) {
      char p[FIELDPATH_MAX];
      fieldpath_key(p, sizeof(p), part, f->name);
      vtable_at(v, p, f->sub, base);
    }
    break;
  default:
    break; /* times, booleans: no rule */
  }
}

static void vtable_at(vctx *v, const char *part, const sf_table *t,
                      const void *base)
{
  size_t i;
  for(i = 0; i < t->n; i++)
    vrow(v, part, &t->f[i], base);
}

static void vtable(vctx *v, const sf_table *t, const void *base)
{
  vtable_at(v, t->path, t, base);
}

/* rule_spec_cross() findings as "spec.network.allowOut[0]: ..." */
static void cross_report(void *ud, const char *top, const char *sub,
                         long idx, const char *key, const char *msg)
{
  char a[FIELDPATH_MAX], b[FIELDPATH_MAX];
  fieldpath_key(a, sizeof(a), "spec", top);
  if(sub) {
    fieldpath_key(b, sizeof(b), a, sub);
    memcpy(a, b, sizeof(a));
  }
  if(idx >= 0) {
    fieldpath_index(b, sizeof(b), a, (size_t)idx);
    memcpy(a, b, sizeof(a));
  }
  if(key) {
    fieldpath_key(b, sizeof(b), a, key);
    memcpy(a, b, sizeof(a));
  }
  verr(ud, a, msg);
}

/* stored: an object from a store, as the controller reads it: absent
 * optional fields mean their defaults (SF_DEFAULTED rows), and labels and
 * annotations are not checked (SF_MANIFEST_ONLY: the controller uses
 * neither, and an API server accepts any string there: refusing them
 * would let one tenant's odd annotation stop the object). */
static sc_err validate(const session *s, bool stored, char ***errs,
                       size_t *n_errs)
{
  vctx v = {errs, n_errs, stored, false, false};
  if(!s) {
    verr(&v, "metadata", "no object");
    return v.nomem ? SC_ERR_NOMEM : SC_ERR_INVALID;
  }
  vtable(&v, &sf_meta, &s->meta);
  vtable(&v, &sf_spec, &s->spec);
  if(!v.found)
    rule_spec_cross(&s->spec, cross_report, &v);
  if(v.nomem)
    return SC_ERR_NOMEM;
  return v.found ? SC_ERR_INVALID : SC_OK;
}

sc_err session_validate(const session *s, char ***errs, size_t *n_errs)
{
  return validate(s, false, errs, n_errs);
}

char *session_invalid_reason(const session *s)
{
  char **errs = NULL, *out = NULL;
  size_t n = 0, i;
  sc_err err;
  /* a shared session cannot change (api/session.h): valid once, valid
   * while shared; the pass checks every object every pass */
  if(session_shared(s) && s->valid_)
    return NULL;
  err = validate(s, true, &errs, &n);
  if(!err && !n && session_shared(s))
    ((session *)s)->valid_ = true; /* a private memo, not the object */
  if(err == SC_ERR_NOMEM && !n)
    return strdup("out of memory while validating");
  if(n) {
    dynbuf b;
    dynbuf_init(&b, 4096);
    if(n == 1)
      dynbuf_addstr(&b, errs[0]);
    else
      dynbuf_printf(&b, "%s (and %zu more)", errs[0], n - 1);
    out = dynbuf_take(&b);
    dynbuf_free(&b);
    if(!out)
      out = strdup("invalid (out of memory)");
  }
  for(i = 0; i < n; i++)
    free(errs[i]);
  free(errs);
  return out;
}
