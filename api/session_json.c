/*
 * session_json.c - the Session as JSON (json-c), Kubernetes style.
 *
 * Encoding writes fields in a fixed order and leaves out unset ones
 * (NULL strings, zero times and counters, empty maps, phase "", false
 * booleans); spec.state is always written, spec.reclaimAfter whenever it is
 * set (>= 0, so "0" = never survives). Decoding is strict: unknown fields,
 * wrong JSON types, bad enums, durations and times are errors naming the
 * field path. A JSON null reads as "unset".
 *
 * Both directions walk the field table (api/fields.h): a row names the
 * member, its JSON name and type, so a new field needs no code here.
 */
#include "api/session_json.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/duration.h"
#include "api/fieldpath.h"
#include "api/fields.h"

#define JSON_OUT_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* ---------------------------------------------------------------- encode
 * By the field table: each row that is set (sf_is_set; spec.state is
 * SF_ALWAYS), in row order. */

typedef struct jenc {
  bool nomem;
} jenc;

static void put(jenc *e, json_object *o, const char *key, json_object *v)
{
  if(!v) {
    e->nomem = true;
    return;
  }
  if(json_object_object_add(o, key, v)) {
    json_object_put(v);
    e->nomem = true;
  }
}

static void put_str(jenc *e, json_object *o, const char *key, const char *s)
{
  if(s)
    put(e, o, key, json_object_new_string(s));
}

static void put_time(jenc *e, json_object *o, const char *key, sc_time t)
{
  char buf[SCTIME_RFC3339_MAX];
  sctime_format_rfc3339(t, buf, sizeof(buf));
  put(e, o, key, json_object_new_string(buf));
}

static void put_duration(jenc *e, json_object *o, const char *key,
                         int64_t ms)
{
  char buf[32];
  duration_format(ms, buf, sizeof(buf));
  put(e, o, key, json_object_new_string(buf));
}

static void put_kv(jenc *e, json_object *o, const char *key,
                   const sc_kvlist *l)
{
  json_object *m = json_object_new_object();
  size_t i;
  for(i = 0; m && i < l->n; i++)
    put_str(e, m, l->items[i].key, l->items[i].value);
  put(e, o, key, m);
}

static void add_item(jenc *e, json_object *a, json_object *v)
{
  if(!v || json_object_array_add(a, v)) {
    json_object_put(v);
    e->nomem = true;
  }
}

static void enc_fields(jenc *e, json_object *o, const sf_table *t,
                       const void *base);

static json_object *enc_object(jenc *e, const sf_table *t, const void *base)
{
  json_object *o = json_object_new_object();
  if(!o)
    e->nomem = true;
  else
    enc_fields(e, o, t, base);
  return o;
}

static void enc_row(jenc *e, json_object *o, const sf_field *f,
                    const void *base)
{
  size_t i, n;
  json_object *a;
  switch(f->type) {
  case SF_STR: put_str(e, o, f->name, *SF_CAT(base, f->off, char *)); break;
  case SF_ENUM:
    put_str(e, o, f->name, sf_name_of(f->names, sf_enum_get(f, base)));
    break;
  case SF_INT:
    put(e, o, f->name, json_object_new_int64(*SF_CAT(base, f->off, int64_t)));
    break;
  case SF_TIME: put_time(e, o, f->name, *SF_CAT(base, f->off, sc_time)); break;
  case SF_DURATION:
    put_duration(e, o, f->name, *SF_CAT(base, f->off, int64_t));
    break;
  case SF_BOOL: put(e, o, f->name, json_object_new_boolean(1)); break;
  case SF_OPTBOOL:
    put(e, o, f->name,
        json_object_new_boolean(sf_enum_get(f, base) == SESSION_OPT_TRUE));
    break;
  case SF_MAP: put_kv(e, o, f->name, SF_CAT(base, f->off, sc_kvlist)); break;
  case SF_OBJECT: put(e, o, f->name, enc_object(e, f->sub, base)); break;
  case SF_STRLIST:
  case SF_OBJLIST:
    a = json_object_new_array();
    n = *SF_CAT(base, f->off_n, size_t);
    for(i = 0; a && i < n; i++)
      add_item(e, a, f->type == SF_STRLIST
                       ? json_object_new_string(
                           (*SF_CAT(base, f->off, char **))[i])
                       : enc_object(e, f->sub,
                                    *SF_CAT(base, f->off, char *) +
                                      i * f->sub->size));
    put(e, o, f->name, a);
    break;
  }
}

/* Whether row f goes into the encoding. An object goes when any member is
 * set, even without its gate (sf_is_set's meaning of "present"): the
 * round trip stays lossless, and the validator, not the encoder, tells
 * the user that the gate member is missing. */
static bool enc_wanted(const sf_field *f, const void *base)
{
  if(f->flags & SF_ALWAYS)
    return true;
  if(f->type == SF_OBJECT)
    return !sf_empty(f->sub, base);
  return sf_is_set(f, base);
}

static void enc_fields(jenc *e, json_object *o, const sf_table *t,
                       const void *base)
{
  size_t i;
  for(i = 0; i < t->n && !e->nomem; i++)
    if(enc_wanted(&t->f[i], base))
      enc_row(e, o, &t->f[i], base);
}

json_object *session_to_json_object(const session *s)
{
  jenc e = {false};
  json_object *o;
  if(!s)
    return NULL;
  o = json_object_new_object();
  if(!o)
    return NULL;
  put_str(&e, o, "apiVersion", SESSION_API_VERSION);
  put_str(&e, o, "kind", SESSION_KIND);
  put(&e, o, "metadata", enc_object(&e, &sf_meta, &s->meta));
  put(&e, o, "spec", enc_object(&e, &sf_spec, &s->spec));
  if(!sf_empty(&sf_status, &s->status))
    put(&e, o, "status", enc_object(&e, &sf_status, &s->status));
  if(e.nomem) {
    json_object_put(o);
    return NULL;
  }
  return o;
}

static sc_err to_string(json_object *o, int flags, char **out)
{
  const char *txt;
  *out = NULL;
  if(!o)
    return SC_ERR_NOMEM;
  txt = json_object_to_json_string_ext(o, flags);
  if(txt)
    *out = strdup(txt);
  json_object_put(o);
  return *out ? SC_OK : SC_ERR_NOMEM;
}

sc_err session_to_json(const session *s, char **out)
{
  if(!s) {
    *out = NULL;
    return SC_ERR_INVALID;
  }
  return to_string(session_to_json_object(s), JSON_OUT_FLAGS, out);
}

sc_err session_to_json_pretty(const session *s, char **out)
{
  if(!s) {
    *out = NULL;
    return SC_ERR_INVALID;
  }
  return to_string(session_to_json_object(s),
                   JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                     JSON_C_TO_STRING_NOSLASHESCAPE,
                   out);
}

static json_object *finish(jenc *e, json_object *o)
{
  if(o && e->nomem) {
    json_object_put(o);
    return NULL;
  }
  return o;
}

/* one part of a session (its spec or status, at base) by its table t */
static sc_err part_to_json(const sf_table *t, const void *base, char **out)
{
  jenc e = {false};
  if(!base) {
    *out = NULL;
    return SC_ERR_INVALID;
  }
  return to_string(finish(&e, enc_object(&e, t, base)), JSON_OUT_FLAGS, out);
}

sc_err session_spec_to_json(const session_spec *sp, char **out)
{
  return part_to_json(&sf_spec, sp, out);
}

sc_err session_status_to_json(const session_status *st, char **out)
{
  return part_to_json(&sf_status, st, out);
}

/* ---------------------------------------------------------------- decode */

typedef struct jdec {
  sc_errbuf *eb;
  unsigned flags;
  size_t dropped;  /* LENIENT_METADATA: entries left out */
} jdec;

/* Where a value is, as a chain up to the root, on the stack of the
 * decoder: the path text ("spec.envVars[\"A\"]") is built only when an
 * error names it, not for every field read. */
typedef struct jpath {
  const struct jpath *up;    /* NULL at the root */
  const char *key;           /* a member, or NULL for an index */
  size_t idx;
} jpath;

static void jpath_render(const jpath *p, char *out, size_t len)
{
  char parent[FIELDPATH_MAX];
  if(!p) {
    out[0] = '\0';
    return;
  }
  jpath_render(p->up, parent, sizeof(parent));
  if(p->key)
    fieldpath_key(out, len, parent, p->key);
  else
    fieldpath_index(out, len, parent, p->idx);
}

static sc_err derr(jdec *d, sc_err err, const jpath *path, const char *fmt,
                   ...) __attribute__((format(printf, 4, 5)));

static sc_err derr(jdec *d, sc_err err, const jpath *path, const char *fmt,
                   ...)
{
  char msg[SC_ERRBUF_SIZE], where[FIELDPATH_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  jpath_render(path, where, sizeof(where));
  return sc_errf(d->eb, err, "%s: %s", where, msg);
}

static const char *type_name(json_object *v)
{
  switch(json_object_get_type(v)) {
  case json_type_null: return "null";
  case json_type_boolean: return "a boolean";
  case json_type_double: return "a number";
  case json_type_int: return "an integer";
  case json_type_object: return "an object";
  case json_type_array: return "an array";
  case json_type_string: return "a string";
  }
  return "a value";
}

static sc_err want(jdec *d, json_object *v, json_type t, const jpath *path,
                   const char *what)
{
  if(json_object_get_type(v) == t)
    return SC_OK;
  return derr(d, SC_ERR_INVALID, path, "expected %s, got %s", what,
              type_name(v));
}

/* A string value without embedded NULs; *out is a new copy. */
static sc_err dec_string(jdec *d, json_object *v, const jpath *path,
                         char **out)
{
  const char *s;
  int len;
  sc_err err = want(d, v, json_type_string, path, "a string");
  if(err)
    return err;
  s = json_object_get_string(v);
  len = json_object_get_string_len(v);
  if(len < 0 || strlen(s) != (size_t)len)
    return derr(d, SC_ERR_INVALID, path, "contains a NUL character");
  free(*out);
  *out = strdup(s);
  return *out ? SC_OK : SC_ERR_NOMEM;
}

static sc_err dec_int(jdec *d, json_object *v, const jpath *path,
                      int64_t *out)
{
  sc_err err = want(d, v, json_type_int, path, "an integer");
  if(err)
    return err;
  *out = json_object_get_int64(v);
  return SC_OK;
}

static sc_err dec_time(jdec *d, json_object *v, const jpath *path,
                       sc_time *out)
{
  char q[FIELDPATH_QUOTE_MAX];
  const char *s;
  sc_err err = want(d, v, json_type_string, path, "an RFC 3339 time string");
  if(err)
    return err;
  s = json_object_get_string(v);
  if(sctime_parse_rfc3339(s, out)) {
    fieldpath_quote(q, sizeof(q), s, strlen(s));
    return derr(d, SC_ERR_INVALID, path,
                "%s is not an RFC 3339 time (use e.g. 2026-11-29T10:15:00Z)",
                q);
  }
  return SC_OK;
}

static sc_err dec_duration(jdec *d, json_object *v, const jpath *path,
                           int64_t *out)
{
  char q[FIELDPATH_QUOTE_MAX];
  const char *s;
  sc_err err = want(d, v, json_type_string, path, "a duration string");
  if(err)
    return err;
  s = json_object_get_string(v);
  err = duration_parse(s, out);
  if(err) {
    fieldpath_quote(q, sizeof(q), s, strlen(s));
    return derr(d, SC_ERR_INVALID, path,
                err == SC_ERR_TOO_LARGE ? "%s is too large"
                                        : "%s is not a duration (use e.g. 15m)",
                q);
  }
  return SC_OK;
}

static sc_err dec_kv(jdec *d, json_object *v, const jpath *path,
                     sc_kvlist *out)
{
  sc_err err = want(d, v, json_type_object, path, "an object");
  if(err)
    return err;
  sc_kvlist_clear(out);
  json_object_object_foreach(v, key, val)
  {
    jpath p = {path, key, 0};
    char *s = NULL;
    err = dec_string(d, val, &p, &s);
    if(!err)
      err = sc_kvlist_set(out, key, s);
    free(s);
    if(err)
      return err;
  }
  return SC_OK;
}

/* metadata.labels or metadata.annotations under LENIENT_METADATA: what a
 * store may hold there never refuses the object (session_json.h) */
static sc_err dec_kv_lenient(jdec *d, json_object *v, sc_kvlist *out)
{
  size_t used = 0;
  sc_kvlist_clear(out);
  if(json_object_get_type(v) != json_type_object) {
    d->dropped++;
    return SC_OK;
  }
  json_object_object_foreach(v, key, val)
  {
    const char *s;
    size_t klen = strlen(key), len;
    sc_err err;
    if(json_object_get_type(val) != json_type_string) {
      d->dropped++;
      continue;
    }
    s = json_object_get_string(val);
    len = (size_t)json_object_get_string_len(val);
    if(strlen(s) != len || klen + len > SESSION_JSON_META_KV_MAX - used) {
      d->dropped++; /* a NUL inside, or over the cap */
      continue;
    }
    used += klen + len;
    err = sc_kvlist_set(out, key, s);
    if(err)
      return err;
  }
  return SC_OK;
}

static sc_err unknown(jdec *d, const jpath *path, const char *key)
{
  jpath p = {path, key, 0};
  return derr(d, SC_ERR_INVALID, &p, "unknown field");
}

static sc_err dec_fields(jdec *d, json_object *o, const jpath *path,
                         const sf_table *t, void *base);

static sc_err dec_enum(jdec *d, json_object *v, const jpath *path,
                       const sf_field *f, void *base)
{
  char q[FIELDPATH_QUOTE_MAX], hint[160];
  char *s = NULL;
  int e;
  sc_err err = dec_string(d, v, path, &s);
  if(err)
    return err;
  e = sf_name_parse(f->names, s);
  if(e < 0) {
    fieldpath_quote(q, sizeof(q), s, strlen(s));
    sf_enum_hint(f, hint, sizeof(hint));
    err = derr(d, SC_ERR_INVALID, path, "%s is not a %s%s", q, f->what,
               hint);
  }
  else
    *SF_AT(base, f->off, int) = e;
  free(s);
  return err;
}

/* A JSON array into a list row; what it held before is freed first. */
static sc_err dec_list(jdec *d, json_object *v, const jpath *path,
                       const sf_field *f, void *base)
{
  size_t i, n, *count = SF_AT(base, f->off_n, size_t);
  bool conds = f->type == SF_OBJLIST;
  size_t esize = conds ? f->sub->size : sizeof(char *);
  char *items;
  sc_err err = want(d, v, json_type_array, path,
                    conds ? "an array" : "an array of strings");
  if(err)
    return err;
  n = json_object_array_length(v);
  /* free the old list: the row alone, through a one-row table */
  {
    sf_table one = {"", 0, f, 1};
    sf_free(&one, base);
  }
  *SF_AT(base, f->off, void *) = NULL;
  *count = 0;
  if(!n)
    return SC_OK;
  items = calloc(n, esize);
  if(!items)
    return SC_ERR_NOMEM;
  *SF_AT(base, f->off, void *) = items;
  if(conds)
    *count = n; /* zeroed entries are safe to free */
  for(i = 0; i < n; i++) {
    jpath ip = {path, NULL, i};
    json_object *it = json_object_array_get_idx(v, i);
    if(conds)
      err = dec_fields(d, it, &ip, f->sub, items + i * esize);
    else {
      err = dec_string(d, it, &ip, (char **)(void *)(items + i * esize));
      if(!err)
        *count = i + 1;
    }
    if(err)
      return err;
  }
  return SC_OK;
}

static sc_err dec_row(jdec *d, json_object *v, const jpath *p,
                      const sf_field *f, void *base)
{
  sc_err err;
  switch(f->type) {
  case SF_STR: return dec_string(d, v, p, SF_AT(base, f->off, char *));
  case SF_ENUM: return dec_enum(d, v, p, f, base);
  case SF_INT: return dec_int(d, v, p, SF_AT(base, f->off, int64_t));
  case SF_TIME: return dec_time(d, v, p, SF_AT(base, f->off, sc_time));
  case SF_DURATION:
    return dec_duration(d, v, p, SF_AT(base, f->off, int64_t));
  case SF_BOOL:
    err = want(d, v, json_type_boolean, p, "a boolean");
    if(!err)
      *SF_AT(base, f->off, bool) = json_object_get_boolean(v);
    return err;
  case SF_OPTBOOL:
    err = want(d, v, json_type_boolean, p, "a boolean");
    if(!err)
      *SF_AT(base, f->off, int) = json_object_get_boolean(v)
                                      ? SESSION_OPT_TRUE
                                      : SESSION_OPT_FALSE;
    return err;
  case SF_MAP:
    if((f->flags & SF_LENIENT) && (d->flags & SESSION_JSON_LENIENT_METADATA))
      return dec_kv_lenient(d, v, SF_AT(base, f->off, sc_kvlist));
    return dec_kv(d, v, p, SF_AT(base, f->off, sc_kvlist));
  case SF_OBJECT: return dec_fields(d, v, p, f->sub, base);
  case SF_STRLIST:
  case SF_OBJLIST: return dec_list(d, v, p, f, base);
  }
  return SC_OK;
}

/* The members of object o (at path) into base by table t. Unknown
 * members are errors, but under IGNORE_UNKNOWN_METADATA in metadata. */
static sc_err dec_fields(jdec *d, json_object *o, const jpath *path,
                         const sf_table *t, void *base)
{
  sc_err err = want(d, o, json_type_object, path, "an object");
  if(err)
    return err;
  json_object_object_foreach(o, key, v)
  {
    jpath p = {path, key, 0};
    const sf_field *f;
    if(!v)
      continue; /* null: unset */
    f = sf_find(t, key, strlen(key));
    if(!f) {
      if(t == &sf_meta && (d->flags & SESSION_JSON_IGNORE_UNKNOWN_METADATA))
        continue;
      return unknown(d, path, key);
    }
    err = dec_row(d, v, &p, f, base);
    if(err)
      return err;
  }
  return SC_OK;
}

static sc_err dec_const(jdec *d, json_object *v, const jpath *path,
                        const char *expect)
{
  char q[FIELDPATH_QUOTE_MAX];
  const char *s;
  sc_err err = want(d, v, json_type_string, path, "a string");
  if(err)
    return err;
  s = json_object_get_string(v);
  if(strcmp(s, expect)) {
    fieldpath_quote(q, sizeof(q), s, strlen(s));
    return derr(d, SC_ERR_INVALID, path, "%s is not supported (use %s)", q,
                expect);
  }
  return SC_OK;
}

sc_err session_from_json_object_flags(json_object *o, unsigned flags,
                                      session **out, sc_errbuf *eb)
{
  return session_from_json_object_ex(o, flags, out, NULL, eb);
}

sc_err session_from_json_object_ex(json_object *o, unsigned flags,
                                   session **out, size_t *dropped,
                                   sc_errbuf *eb)
{
  jdec d = {eb, flags, 0};
  session *s;
  bool have_api = false, have_kind = false;
  sc_err err;

  *out = NULL;
  if(!o || json_object_get_type(o) != json_type_object)
    return sc_errf(eb, SC_ERR_INVALID, "expected a JSON object, got %s",
                   o ? type_name(o) : "null");
  s = session_new();
  if(!s)
    return SC_ERR_NOMEM;
  err = SC_OK;
  json_object_object_foreach(o, key, v)
  {
    jpath top = {NULL, key, 0};
    if(!strcmp(key, "apiVersion")) {
      err = dec_const(&d, v, &top, SESSION_API_VERSION);
      have_api = true;
    }
    else if(!strcmp(key, "kind")) {
      err = dec_const(&d, v, &top, SESSION_KIND);
      have_kind = true;
    }
    else if(!v)
      continue;
    else if(!strcmp(key, "metadata"))
      err = dec_fields(&d, v, &top, &sf_meta, &s->meta);
    else if(!strcmp(key, "spec"))
      err = dec_fields(&d, v, &top, &sf_spec, &s->spec);
    else if(!strcmp(key, "status"))
      err = dec_fields(&d, v, &top, &sf_status, &s->status);
    else
      err = unknown(&d, NULL, key);
    if(err)
      goto out;
  }
  if(!have_api)
    err = sc_errf(eb, SC_ERR_INVALID,
                  "apiVersion: required field missing (use %s)",
                  SESSION_API_VERSION);
  else if(!have_kind)
    err = sc_errf(eb, SC_ERR_INVALID,
                  "kind: required field missing (use %s)", SESSION_KIND);
out:
  if(err) {
    session_free(s);
    return err;
  }
  *out = s;
  if(dropped)
    *dropped = d.dropped;
  return SC_OK;
}

sc_err session_from_json_object(json_object *o, session **out, sc_errbuf *eb)
{
  return session_from_json_object_flags(o, 0, out, eb);
}

/* Parse text into a json object; strict JSON, nothing after it. tok:
 * a tokener to reuse (reset here), or NULL for one of this call's own. */
static sc_err parse_text(json_tokener *tok, const char *json, size_t len,
                         json_object **out, sc_errbuf *eb)
{
  json_tokener *own = NULL;
  json_object *o;
  enum json_tokener_error jerr;
  size_t end;

  *out = NULL;
  if(!json)
    return sc_errf(eb, SC_ERR_INVALID, "no JSON text");
  if(len > INT32_MAX)
    return sc_errf(eb, SC_ERR_TOO_LARGE, "JSON text too large");
  if(tok)
    json_tokener_reset(tok);
  else {
    tok = own = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
    if(!tok)
      return SC_ERR_NOMEM;
  }
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
  o = json_tokener_parse_ex(tok, json, (int)len);
  jerr = json_tokener_get_error(tok);
  end = json_tokener_get_parse_end(tok);
  if(own)
    json_tokener_free(own);
  if(!o && jerr == json_tokener_success)
    jerr = json_tokener_continue; /* empty input */
  if(jerr == json_tokener_continue) {
    json_object_put(o);
    return sc_errf(eb, SC_ERR_INVALID, "JSON text ends too early");
  }
  if(jerr != json_tokener_success)
    return sc_errf(eb, SC_ERR_INVALID, "JSON syntax error at byte %zu: %s",
                   end, json_tokener_error_desc(jerr));
  while(end < len && (json[end] == ' ' || json[end] == '\n' ||
                      json[end] == '\r' || json[end] == '\t'))
    end++;
  if(end < len) {
    json_object_put(o);
    return sc_errf(eb, SC_ERR_INVALID,
                   "JSON syntax error at byte %zu: data after the value", end);
  }
  *out = o;
  return SC_OK;
}

sc_err session_from_json(const char *json, size_t len, session **out,
                         sc_errbuf *eb)
{
  json_object *o;
  sc_err err;
  *out = NULL;
  err = parse_text(NULL, json, len, &o, eb);
  if(err)
    return err;
  err = session_from_json_object(o, out, eb);
  json_object_put(o);
  return err;
}

sc_err session_spec_from_json(const char *json, session_spec *out,
                              sc_errbuf *eb)
{
  return session_spec_from_json_tok(NULL, json, out, eb);
}

/* json (NUL-terminated; NULL is no text) parsed with tok and decoded by
 * the table t into one part of a session at base, the errors under the
 * path name */
static sc_err part_from_json(json_tokener *tok, const char *json,
                             const char *name, const sf_table *t, void *base,
                             sc_errbuf *eb)
{
  jdec d = {eb, 0, 0};
  jpath root = {NULL, name, 0};
  json_object *o;
  sc_err err = parse_text(tok, json, json ? strlen(json) : 0, &o, eb);
  if(err)
    return err;
  err = dec_fields(&d, o, &root, t, base);
  json_object_put(o);
  return err;
}

sc_err session_spec_from_json_tok(json_tokener *tok, const char *json,
                                  session_spec *out, sc_errbuf *eb)
{
  sc_err err;
  memset(out, 0, sizeof(*out));
  out->reclaim_after_ms = -1;
  err = part_from_json(tok, json, "spec", &sf_spec, out, eb);
  if(err) {
    session_spec_clear(out);
    out->reclaim_after_ms = -1;
  }
  return err;
}

sc_err session_status_from_json(const char *json, session_status *out,
                                sc_errbuf *eb)
{
  return session_status_from_json_tok(NULL, json, out, eb);
}

sc_err session_status_from_json_tok(json_tokener *tok, const char *json,
                                    session_status *out, sc_errbuf *eb)
{
  sc_err err;
  memset(out, 0, sizeof(*out));
  err = part_from_json(tok, json, "status", &sf_status, out, eb);
  if(err)
    session_status_clear(out);
  return err;
}
