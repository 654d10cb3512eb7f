/* kf_schema.c - structural schema pruning, defaulting and validation, as
 * the API server applies a CRD's schema to its objects (kf_schema.h). The
 * messages are the API server's (k8s.io/apimachinery field errors over
 * kube-openapi's validation errors). */
#include "cmd/kube-apiserver-fake/kf_schema.h"

#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/fieldpath.h"
#include "cmd/kube-apiserver-fake/kf_json.h"
#include "lib/sctime.h"

#define PATH_MAX_ FIELDPATH_MAX
#define DEPTH_MAX 64

/* ------------------------------------------------------------------ */
/* error lists */

void kf_errs_add(kf_errs *e, const char *field, const char *reason,
                 const char *fmt, ...)
{
  char d[1024];
  va_list ap;
  kf_ferr *f;
  if(e->n == e->cap) {
    size_t cap = e->cap ? e->cap * 2 : 8;
    kf_ferr *v = realloc(e->v, cap * sizeof(*v));
    if(!v)
      return;
    e->v = v;
    e->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(d, sizeof(d), fmt, ap);
  va_end(ap);
  f = &e->v[e->n];
  f->field = strdup(field);
  f->detail = strdup(d);
  f->reason = reason;
  if(!f->field || !f->detail) {
    free(f->field);
    free(f->detail);
    return;
  }
  e->n++;
}

void kf_errs_free(kf_errs *e)
{
  size_t i;
  if(!e)
    return;
  for(i = 0; i < e->n; i++) {
    free(e->v[i].field);
    free(e->v[i].detail);
  }
  free(e->v);
  e->v = NULL;
  e->n = e->cap = 0;
}

void kf_errs_line(const kf_errs *e, size_t i, char *buf, size_t len)
{
  snprintf(buf, len, "%s: %s", e->v[i].field, e->v[i].detail);
}

/* ------------------------------------------------------------------ */
/* schema nodes */

static bool node_flag(json_object *n, const char *k)
{
  json_object *v = kf_jget(n, k);
  return json_object_is_type(v, json_type_boolean) &&
         json_object_get_boolean(v);
}

static bool node_num(json_object *n, const char *k, double *out)
{
  json_object *v = kf_jget(n, k);
  if(!json_object_is_type(v, json_type_int) &&
     !json_object_is_type(v, json_type_double))
    return false;
  *out = json_object_get_double(v);
  return true;
}

/* maxWHAT / minWHAT of node n against cnt members (WHAT: Items or
 * Properties; noun: "items" or "properties", as the API server words the
 * minimum; its maximum message says "items" for both) */
static void check_count(json_object *n, const char *what, const char *noun,
                        size_t cnt, const char *path, kf_errs *errs)
{
  char key[32];
  double lim;
  snprintf(key, sizeof(key), "max%s", what);
  if(node_num(n, key, &lim) && (double)cnt > lim)
    kf_errs_add(errs, path, "FieldValueTooMany", "Too many: %zu: must have "
                "at most %.0f items", cnt, lim);
  snprintf(key, sizeof(key), "min%s", what);
  if(node_num(n, key, &lim) && (double)cnt < lim)
    kf_errs_add(errs, path, "FieldValueInvalid", "Invalid value: %zu: %s in "
                "body should have at least %.0f %s", cnt, path, lim, noun);
}

/* the schema of a property key of an object node: properties[k], else
 * additionalProperties (a schema), else NULL */
static json_object *child_schema(json_object *n, const char *k)
{
  json_object *props = kf_jobj(n, "properties"), *v;
  if(props && json_object_object_get_ex(props, k, &v))
    return v;
  return kf_jobj(n, "additionalProperties");
}

static bool keeps_unknown(json_object *n)
{
  json_object *ap = kf_jget(n, "additionalProperties");
  return node_flag(n, "x-kubernetes-preserve-unknown-fields") ||
         (json_object_is_type(ap, json_type_boolean) &&
          json_object_get_boolean(ap));
}

/* ObjectMeta's fields (metadata is the API server's, not the schema's) */
static const char *const meta_fields[] = {
  "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
  "generation", "creationTimestamp", "deletionTimestamp",
  "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
  "finalizers", "managedFields", NULL
};

static bool meta_field(const char *k)
{
  size_t i;
  for(i = 0; meta_fields[i]; i++)
    if(!strcmp(meta_fields[i], k))
      return true;
  return false;
}

/* the keys of o, copied (so that o may change while they are walked) */
static char **keys_of(json_object *o, size_t *n)
{
  size_t i = 0, cnt = (size_t)json_object_object_length(o);
  char **k = calloc(cnt + 1, sizeof(*k));
  *n = 0;
  if(!k)
    return NULL;
  json_object_object_foreach(o, key, val) {
    (void)val;
    if(i < cnt && (k[i] = strdup(key)))
      i++;
  }
  *n = i;
  return k;
}

static void keys_free(char **k, size_t n)
{
  size_t i;
  for(i = 0; k && i < n; i++)
    free(k[i]);
  free(k);
}

/* ------------------------------------------------------------------ */
/* pruning */

static void prune_node(json_object *o, json_object *n, const char *path,
                       bool prune, kf_errs *unknown, int depth)
{
  char p[PATH_MAX_];
  size_t i, nk;
  char **keys;
  if(!n || depth > DEPTH_MAX)
    return;
  if(json_object_is_type(o, json_type_array)) {
    json_object *items = kf_jobj(n, "items");
    for(i = 0; items && i < json_object_array_length(o); i++) {
      fieldpath_index(p, sizeof(p), path, i);
      prune_node(json_object_array_get_idx(o, i), items, p, prune, unknown,
                 depth + 1);
    }
    return;
  }
  if(!json_object_is_type(o, json_type_object))
    return;
  keys = keys_of(o, &nk);
  for(i = 0; i < nk; i++) {
    json_object *c = child_schema(n, keys[i]), *v = NULL;
    json_object_object_get_ex(o, keys[i], &v);
    fieldpath_key(p, sizeof(p), path, keys[i]);
    if(c)
      prune_node(v, c, p, prune, unknown, depth + 1);
    else if(!keeps_unknown(n)) {
      kf_errs_add(unknown, p, "FieldValueInvalid", "unknown field");
      if(prune)
        json_object_object_del(o, keys[i]);
    }
  }
  keys_free(keys, nk);
}

void kf_schema_prune(json_object *obj, json_object *schema, bool prune,
                     kf_errs *unknown)
{
  size_t i, nk;
  char **keys;
  json_object *meta;
  if(!json_object_is_type(obj, json_type_object) || !schema)
    return;
  keys = keys_of(obj, &nk);
  for(i = 0; i < nk; i++) {
    json_object *c, *v = NULL;
    char p[PATH_MAX_];
    if(!strcmp(keys[i], "apiVersion") || !strcmp(keys[i], "kind") ||
       !strcmp(keys[i], "metadata"))
      continue;
    c = child_schema(schema, keys[i]);
    json_object_object_get_ex(obj, keys[i], &v);
    fieldpath_key(p, sizeof(p), "", keys[i]);
    if(c)
      prune_node(v, c, p, prune, unknown, 1);
    else if(!keeps_unknown(schema)) {
      kf_errs_add(unknown, p, "FieldValueInvalid", "unknown field");
      if(prune)
        json_object_object_del(obj, keys[i]);
    }
  }
  keys_free(keys, nk);
  if(json_object_object_get_ex(obj, "metadata", &meta) &&
     json_object_is_type(meta, json_type_object)) {
    keys = keys_of(meta, &nk);
    for(i = 0; i < nk; i++) {
      char p[PATH_MAX_];
      if(meta_field(keys[i]))
        continue;
      fieldpath_key(p, sizeof(p), "metadata", keys[i]);
      kf_errs_add(unknown, p, "FieldValueInvalid", "unknown field");
      if(prune)
        json_object_object_del(meta, keys[i]);
    }
    keys_free(keys, nk);
  }
}

/* ------------------------------------------------------------------ */
/* defaulting */

static json_object *copy_of(json_object *v)
{
  json_object *c = NULL;
  if(!v)
    return NULL;
  if(json_object_deep_copy(v, &c, NULL))
    return NULL;
  return c;
}

static void default_node(json_object *o, json_object *n, int depth);

/* the element or property value v (at a slot that set() replaces) */
static void default_slot(json_object *v, json_object *n, int depth)
{
  if(v)
    default_node(v, n, depth + 1);
}

static void default_node(json_object *o, json_object *n, int depth)
{
  size_t i, nk;
  char **keys;
  json_object *props, *items;
  if(!n || depth > DEPTH_MAX)
    return;
  if(json_object_is_type(o, json_type_array)) {
    json_object *d;
    items = kf_jobj(n, "items");
    if(!items)
      return;
    d = kf_jget(items, "default");
    for(i = 0; i < json_object_array_length(o); i++) {
      json_object *v = json_object_array_get_idx(o, i);
      if(!v && d && !node_flag(items, "nullable")) {
        json_object_array_put_idx(o, i, copy_of(d));
        v = json_object_array_get_idx(o, i);
      }
      default_slot(v, items, depth);
    }
    return;
  }
  if(!json_object_is_type(o, json_type_object))
    return;
  props = kf_jobj(n, "properties");
  if(props) {
    json_object_object_foreach(props, k, p) {
      json_object *d = kf_jget(p, "default"), *v = NULL;
      bool found = json_object_object_get_ex(o, k, &v);
      if(d && (!found || (!v && !node_flag(p, "nullable"))))
        json_object_object_add(o, k, copy_of(d));
    }
  }
  keys = keys_of(o, &nk);
  for(i = 0; i < nk; i++) {
    json_object *c = child_schema(n, keys[i]), *v = NULL;
    json_object_object_get_ex(o, keys[i], &v);
    if(!c)
      continue;
    if(!v && !node_flag(c, "nullable")) {
      json_object *d = kf_jget(c, "default");
      if(d) {
        json_object_object_add(o, keys[i], copy_of(d));
        json_object_object_get_ex(o, keys[i], &v);
      }
      else { /* a null without a default is dropped */
        json_object_object_del(o, keys[i]);
        continue;
      }
    }
    default_slot(v, c, depth);
  }
  keys_free(keys, nk);
}

void kf_schema_default(json_object *obj, json_object *schema)
{
  json_object *meta = NULL;
  if(!json_object_is_type(obj, json_type_object) || !schema)
    return;
  /* metadata is the API server's: keep it out of the walk */
  if(json_object_object_get_ex(obj, "metadata", &meta))
    json_object_get(meta);
  json_object_object_del(obj, "metadata");
  default_node(obj, schema, 0);
  if(meta)
    json_object_object_add(obj, "metadata", meta);
}

/* ------------------------------------------------------------------ */
/* validation */

static const char *type_of(json_object *v)
{
  switch(json_object_get_type(v)) {
  case json_type_null: return "null";
  case json_type_boolean: return "boolean";
  case json_type_int: return "integer";
  case json_type_double: return "number";
  case json_type_string: return "string";
  case json_type_array: return "array";
  default: return "object";
  }
}

static bool type_ok(json_object *v, const char *t, json_object *n)
{
  if(node_flag(n, "x-kubernetes-int-or-string"))
    return json_object_is_type(v, json_type_int) ||
           json_object_is_type(v, json_type_string);
  if(!t)
    return true;
  if(!strcmp(t, "number"))
    return json_object_is_type(v, json_type_int) ||
           json_object_is_type(v, json_type_double);
  return !strcmp(t, type_of(v));
}

/* the value as field errors print it: strings quoted, numbers and
 * booleans bare, the rest as JSON */
static void value_text(json_object *v, char *buf, size_t len)
{
  if(json_object_is_type(v, json_type_string))
    fieldpath_quote(buf, len, json_object_get_string(v),
                    (size_t)json_object_get_string_len(v));
  else if(!v)
    snprintf(buf, len, "\"null\"");
  else
    snprintf(buf, len, "%.*s", (int)(len > 200 ? 200 : len - 1),
             json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
}

static void num_text(double d, char *buf, size_t len)
{
  snprintf(buf, len, "%.17g", d);
}

/* UTF-8 characters of s (bytes that do not start a sequence are not
 * counted) */
static size_t runes(const char *s, size_t len)
{
  size_t i, n = 0;
  for(i = 0; i < len; i++)
    if(((unsigned char)s[i] & 0xc0) != 0x80)
      n++;
  return n;
}

/* can POSIX ERE (C locale) read pattern as RE2 does? Not with RE2's
 * escapes of classes and code points, or its (?...) groups */
static bool ere_compatible(const char *pat)
{
  const char *p;
  if(strstr(pat, "(?"))
    return false;
  for(p = pat; *p; p++)
    if(*p == '\\') {
      p++;
      if(!*p || !strchr(".\\[](){}*+?^$|-/", *p))
        return false;
    }
  return true;
}

static void check_pattern(json_object *v, const char *pat, const char *path,
                          kf_errs *errs)
{
  regex_t re;
  char val[FIELDPATH_QUOTE_MAX];
  const char *s = json_object_get_string(v);
  if(!ere_compatible(pat) || regcomp(&re, pat, REG_EXTENDED | REG_NOSUB))
    return;
  if(strlen(s) != (size_t)json_object_get_string_len(v) ||
     regexec(&re, s, 0, NULL, 0)) {
    value_text(v, val, sizeof(val));
    kf_errs_add(errs, path, "FieldValueInvalid", "Invalid value: %s: %s in "
                "body should match '%s'", val, path, pat);
  }
  regfree(&re);
}

static void check_string(json_object *v, json_object *n, const char *path,
                         kf_errs *errs)
{
  const char *s = json_object_get_string(v), *pat, *fmt;
  size_t len = runes(s, (size_t)json_object_get_string_len(v));
  char val[FIELDPATH_QUOTE_MAX];
  double lim;
  value_text(v, val, sizeof(val));
  if(node_num(n, "maxLength", &lim) && (double)len > lim)
    kf_errs_add(errs, path, "FieldValueTooLong", "Too long: may not be more "
                "than %.0f bytes", lim);
  if(node_num(n, "minLength", &lim) && (double)len < lim)
    kf_errs_add(errs, path, "FieldValueInvalid", "Invalid value: %s: %s in "
                "body should be at least %.0f chars long", val, path, lim);
  if((pat = kf_jstr(n, "pattern")))
    check_pattern(v, pat, path, errs);
  fmt = kf_jstr(n, "format");
  if(fmt && !strcmp(fmt, "date-time")) {
    sc_time t;
    if(sctime_parse_rfc3339(s, &t))
      kf_errs_add(errs, path, "FieldValueTypeInvalid", "Invalid value: %s: "
                  "%s in body must be of type date-time: %s", val, path, val);
  }
}

static void check_number(json_object *v, json_object *n, const char *path,
                         kf_errs *errs)
{
  double d = json_object_get_double(v), lim;
  char val[64], l[40];
  value_text(v, val, sizeof(val));
  if(node_num(n, "minimum", &lim)) {
    bool ex = node_flag(n, "exclusiveMinimum");
    if(ex ? d <= lim : d < lim) {
      num_text(lim, l, sizeof(l));
      kf_errs_add(errs, path, "FieldValueInvalid", "Invalid value: %s: %s in "
                  "body should be greater than %s%s", val, path,
                  ex ? "" : "or equal to ", l);
    }
  }
  if(node_num(n, "maximum", &lim)) {
    bool ex = node_flag(n, "exclusiveMaximum");
    if(ex ? d >= lim : d > lim) {
      num_text(lim, l, sizeof(l));
      kf_errs_add(errs, path, "FieldValueInvalid", "Invalid value: %s: %s in "
                  "body should be less than %s%s", val, path,
                  ex ? "" : "or equal to ", l);
    }
  }
}

static void check_enum(json_object *v, json_object *n, const char *path,
                       kf_errs *errs)
{
  json_object *en = kf_jget(n, "enum");
  char list[1024], val[FIELDPATH_QUOTE_MAX];
  size_t i, o = 0;
  if(!json_object_is_type(en, json_type_array))
    return;
  for(i = 0; i < json_object_array_length(en); i++)
    if(json_object_equal(v, json_object_array_get_idx(en, i)))
      return;
  list[0] = 0;
  for(i = 0; i < json_object_array_length(en) && o < sizeof(list); i++) {
    char one[FIELDPATH_QUOTE_MAX];
    value_text(json_object_array_get_idx(en, i), one, sizeof(one));
    o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "",
                          one);
  }
  value_text(v, val, sizeof(val));
  kf_errs_add(errs, path, "FieldValueNotSupported", "Unsupported value: %s: "
              "supported values: %s", val, list);
}

static void validate_node(json_object *v, json_object *n, const char *path,
                          kf_errs *errs, int depth);

static void check_object(json_object *v, json_object *n, const char *path,
                         kf_errs *errs, int depth)
{
  json_object *req = kf_jget(n, "required");
  char p[PATH_MAX_];
  size_t i, cnt = (size_t)json_object_object_length(v);
  check_count(n, "Properties", "properties", cnt, path, errs);
  for(i = 0; json_object_is_type(req, json_type_array) &&
      i < json_object_array_length(req); i++) {
    const char *k = json_object_get_string(json_object_array_get_idx(req, i));
    json_object *c;
    if(!k || (json_object_object_get_ex(v, k, &c) && c))
      continue;
    fieldpath_key(p, sizeof(p), path, k);
    kf_errs_add(errs, p, "FieldValueRequired", "Required value");
  }
  {
    json_object_object_foreach(v, k, c) {
      json_object *cs = child_schema(n, k);
      if(!*path && (!strcmp(k, "metadata") || !strcmp(k, "apiVersion") ||
                    !strcmp(k, "kind")))
        continue;
      if(!cs)
        continue;
      fieldpath_key(p, sizeof(p), path, k);
      validate_node(c, cs, p, errs, depth + 1);
    }
  }
}

static void check_array(json_object *v, json_object *n, const char *path,
                        kf_errs *errs, int depth)
{
  json_object *items = kf_jobj(n, "items");
  size_t i, cnt = json_object_array_length(v);
  char p[PATH_MAX_];
  check_count(n, "Items", "items", cnt, path, errs);
  for(i = 0; items && i < cnt; i++) {
    fieldpath_index(p, sizeof(p), path, i);
    validate_node(json_object_array_get_idx(v, i), items, p, errs,
                  depth + 1);
  }
}

static void validate_node(json_object *v, json_object *n, const char *path,
                          kf_errs *errs, int depth)
{
  const char *t = kf_jstr(n, "type");
  if(!n || depth > DEPTH_MAX)
    return;
  if(!v && node_flag(n, "nullable"))
    return;
  if(!type_ok(v, t, n)) {
    kf_errs_add(errs, path, "FieldValueTypeInvalid", "Invalid value: \"%s\": "
                "%s in body must be of type %s: \"%s\"", type_of(v), path, t,
                type_of(v));
    return;
  }
  check_enum(v, n, path, errs);
  switch(json_object_get_type(v)) {
  case json_type_string:
    check_string(v, n, path, errs);
    break;
  case json_type_int:
  case json_type_double:
    check_number(v, n, path, errs);
    break;
  case json_type_object:
    check_object(v, n, path, errs, depth);
    break;
  case json_type_array:
    check_array(v, n, path, errs, depth);
    break;
  default:
    break;
  }
}

void kf_schema_validate(json_object *obj, json_object *schema,
                        kf_errs *errs)
{
  json_object *ms, *name;
  if(!schema)
    return;
  validate_node(obj, schema, "", errs, 0);
  /* of metadata, the schema may only restrict the name */
  ms = kf_jobj(kf_jobj(kf_jobj(schema, "properties"), "metadata"),
               "properties");
  if(ms && kf_jobj(ms, "name") &&
     json_object_object_get_ex(kf_jobj(obj, "metadata"), "name", &name) &&
     json_object_is_type(name, json_type_string))
    validate_node(name, kf_jobj(ms, "name"), "metadata.name", errs, 1);
}

/* ------------------------------------------------------------------ */
/* a CRD's schema */

static void check_schema_node(json_object *n, const char *path, bool in_meta,
                              kf_errs *errs, int depth)
{
  json_object *d, *props, *c;
  char p[PATH_MAX_ * 2];
  if(depth > DEPTH_MAX) {
    kf_errs_add(errs, path, "FieldValueInvalid", "Invalid value: nested "
                "more than %d levels", DEPTH_MAX);
    return;
  }
  if(!json_object_is_type(n, json_type_object)) {
    kf_errs_add(errs, path, "FieldValueInvalid", "Invalid value: must be a "
                "schema object");
    return;
  }
  if(depth > 0 && !kf_jstr(n, "type") &&
     !node_flag(n, "x-kubernetes-int-or-string") &&
     !node_flag(n, "x-kubernetes-preserve-unknown-fields")) {
    snprintf(p, sizeof(p), "%s.type", path);
    kf_errs_add(errs, p, "FieldValueRequired", "Required value: must not be "
                "empty for specified object fields");
  }
  if((d = kf_jget(n, "default"))) {
    snprintf(p, sizeof(p), "%s.default", path);
    if(depth == 0 || in_meta)
      kf_errs_add(errs, p, "FieldValueForbidden", "Forbidden: must not be "
                  "set %s", depth == 0 ? "at the root" : "inside metadata");
    else {
      kf_errs de = {0};
      size_t i;
      json_object *dc = copy_of(d);
      char f[PATH_MAX_ * 3];
      validate_node(dc, n, "default", &de, 0);
      prune_node(dc, n, "default", false, &de, 0);
      for(i = 0; i < de.n; i++) {
        snprintf(f, sizeof(f), "%s.%s", path, de.v[i].field);
        kf_errs_add(errs, f, de.v[i].reason, "%s", de.v[i].detail);
      }
      kf_errs_free(&de);
      json_object_put(dc);
    }
  }
  if((props = kf_jobj(n, "properties"))) {
    json_object_object_foreach(props, k, v) {
      snprintf(p, sizeof(p), "%s.properties[%s]", path, k);
      check_schema_node(v, p, in_meta || (depth == 0 &&
                                           !strcmp(k, "metadata")),
                        errs, depth + 1);
    }
  }
  if((c = kf_jobj(n, "additionalProperties"))) {
    snprintf(p, sizeof(p), "%s.additionalProperties", path);
    check_schema_node(c, p, in_meta, errs, depth + 1);
  }
  if((c = kf_jobj(n, "items"))) {
    snprintf(p, sizeof(p), "%s.items", path);
    check_schema_node(c, p, in_meta, errs, depth + 1);
  }
}

void kf_schema_check(json_object *schema, const char *path, kf_errs *errs)
{
  check_schema_node(schema, path, false, errs, 0);
}

/* ------------------------------------------------------------------ */
/* simple JSONPath */

/* the next step of path at *p: a key (into key) or an index (*idx >= 0);
 * false at the end or on a syntax error (*bad) */
static bool jp_step(const char **p, char *key, size_t klen, long *idx,
                    bool *bad)
{
  const char *s = *p;
  size_t n = 0;
  *idx = -1;
  *bad = false;
  if(!*s)
    return false;
  if(*s == '.') {
    s++;
    while(*s && *s != '.' && *s != '[') {
      if(n + 1 >= klen) {
        *bad = true;
        return false;
      }
      key[n++] = *s++;
    }
    key[n] = 0;
    if(!n) {
      *bad = true;
      return false;
    }
  }
  else if(*s == '[' && (s[1] == '\'' || s[1] == '"')) {
    char q = s[1];
    s += 2;
    while(*s && *s != q) {
      if(n + 1 >= klen) {
        *bad = true;
        return false;
      }
      key[n++] = *s++;
    }
    key[n] = 0;
    if(*s != q || s[1] != ']') {
      *bad = true;
      return false;
    }
    s += 2;
  }
  else if(*s == '[' && s[1] >= '0' && s[1] <= '9') {
    char *end;
    *idx = strtol(s + 1, &end, 10);
    if(*end != ']') {
      *bad = true;
      return false;
    }
    s = end + 1;
  }
  else {
    *bad = true;
    return false;
  }
  *p = s;
  return true;
}

bool kf_jsonpath_ok(const char *path)
{
  char key[256];
  long idx;
  bool bad = false;
  int steps = 0;
  if(!path || *path != '.')
    return false;
  while(jp_step(&path, key, sizeof(key), &idx, &bad))
    steps++;
  return !bad && steps > 0;
}

json_object *kf_jsonpath_get(json_object *o, const char *path)
{
  char key[256];
  long idx;
  bool bad = false;
  if(!kf_jsonpath_ok(path))
    return NULL;
  while(o && jp_step(&path, key, sizeof(key), &idx, &bad)) {
    json_object *v = NULL;
    if(idx >= 0) {
      if(!json_object_is_type(o, json_type_array) ||
         (size_t)idx >= json_object_array_length(o))
        return NULL;
      v = json_object_array_get_idx(o, (size_t)idx);
    }
    else if(!json_object_is_type(o, json_type_object) ||
            !json_object_object_get_ex(o, key, &v))
      return NULL;
    o = v;
  }
  return o;
}
