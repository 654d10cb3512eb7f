/*
 * session_json.c - the Session as JSON (json-c), Kubernetes style.
 *
 * Encoding writes fields in a fixed order and leaves out unset ones
 * (NULL strings, zero times and counters, empty maps, phase "", false
 * booleans); spec.state is always written, spec.reclaimAfter whenever it is
 * set (>= 0, so "0" = never survives). Decoding is strict: unknown fields,
 * wrong JSON types, bad enums, durations and times are errors naming the
 * field path. A JSON null reads as "unset".
 */
#include "api/session_json.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/duration.h"
#include "api/fieldpath.h"

#define JSON_OUT_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* ---------------------------------------------------------------- encode */

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

static void put_int(jenc *e, json_object *o, const char *key, int64_t v)
{
  if(v)
    put(e, o, key, json_object_new_int64(v));
}

static void put_time(jenc *e, json_object *o, const char *key, sc_time t)
{
  char buf[SCTIME_RFC3339_MAX];
  if(!t)
    return;
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
  json_object *m;
  size_t i;
  if(!l->n)
    return;
  m = json_object_new_object();
  if(!m) {
    e->nomem = true;
    return;
  }
  for(i = 0; i < l->n; i++)
    put_str(e, m, l->items[i].key, l->items[i].value);
  put(e, o, key, m);
}

static json_object *enc_meta(jenc *e, const session_metadata *m)
{
  json_object *o = json_object_new_object();
  size_t i;
  if(!o) {
    e->nomem = true;
    return NULL;
  }
  put_str(e, o, "name", m->name);
  put_str(e, o, "namespace", m->namespace_);
  put_str(e, o, "uid", m->uid);
  put_str(e, o, "resourceVersion", m->resource_version);
  put_int(e, o, "generation", m->generation);
  put_time(e, o, "creationTimestamp", m->creation_timestamp);
  put_time(e, o, "deletionTimestamp", m->deletion_timestamp);
  put_kv(e, o, "labels", &m->labels);
  put_kv(e, o, "annotations", &m->annotations);
  if(m->n_finalizers) {
    json_object *a = json_object_new_array();
    if(!a)
      e->nomem = true;
    for(i = 0; a && i < m->n_finalizers; i++) {
      json_object *v = json_object_new_string(m->finalizers[i]);
      if(!v || json_object_array_add(a, v)) {
        json_object_put(v);
        e->nomem = true;
      }
    }
    if(a)
      put(e, o, "finalizers", a);
  }
  return o;
}

static json_object *enc_spec(jenc *e, const session_spec *sp)
{
  json_object *o = json_object_new_object();
  if(!o) {
    e->nomem = true;
    return NULL;
  }
  put_str(e, o, "template", sp->template_id);
  put_str(e, o, "state", session_state_name(sp->state));
  if(sp->idle_timeout_ms)
    put_duration(e, o, "idleTimeout", sp->idle_timeout_ms);
  if(sp->reclaim_after_ms >= 0)
    put_duration(e, o, "reclaimAfter", sp->reclaim_after_ms);
  put_str(e, o, "sessionID", sp->session_id);
  put_str(e, o, "tenantID", sp->tenant_id);
  put_kv(e, o, "envVars", &sp->env_vars);
  put_kv(e, o, "sandboxMetadata", &sp->sandbox_metadata);
  put_int(e, o, "wake", sp->wake);
  return o;
}

static json_object *enc_status(jenc *e, const session_status *st)
{
  json_object *o = json_object_new_object();
  size_t i;
  if(!o) {
    e->nomem = true;
    return NULL;
  }
  if(st->phase != SESSION_PHASE_NONE)
    put_str(e, o, "phase", session_phase_name(st->phase));
  put_str(e, o, "sandboxID", st->sandbox_id);
  put_str(e, o, "sandboxState", st->sandbox_state);
  put_str(e, o, "sandboxProof", st->sandbox_proof);
  put_time(e, o, "endAt", st->end_at);
  put_int(e, o, "observedGeneration", st->observed_generation);
  put_int(e, o, "reclaimedGeneration", st->reclaimed_generation);
  if(st->paused_by_controller)
    put(e, o, "pausedByController", json_object_new_boolean(1));
  if(st->applied_idle_timeout_ms)
    put_duration(e, o, "appliedIdleTimeout", st->applied_idle_timeout_ms);
  if(st->create_intent_at) {
    json_object *ci = json_object_new_object();
    if(!ci)
      e->nomem = true;
    else {
      put_str(e, ci, "by", st->create_intent_by);
      put_time(e, ci, "at", st->create_intent_at);
      put(e, o, "createIntent", ci);
    }
  }
  if(st->n_conditions) {
    json_object *a = json_object_new_array();
    if(!a)
      e->nomem = true;
    for(i = 0; a && i < st->n_conditions; i++) {
      const session_condition *c = &st->conditions[i];
      json_object *co = json_object_new_object();
      if(!co) {
        e->nomem = true;
        break;
      }
      put_str(e, co, "type", c->type);
      put_str(e, co, "status", c->status);
      put_str(e, co, "reason", c->reason);
      put_str(e, co, "message", c->message);
      put_time(e, co, "lastTransitionTime", c->last_transition_time);
      put_int(e, co, "observedGeneration", c->observed_generation);
      if(json_object_array_add(a, co)) {
        json_object_put(co);
        e->nomem = true;
      }
    }
    if(a)
      put(e, o, "conditions", a);
  }
  return o;
}

static bool status_empty(const session_status *st)
{
  return st->phase == SESSION_PHASE_NONE && !st->sandbox_id &&
         !st->sandbox_state && !st->sandbox_proof && !st->end_at &&
         !st->observed_generation &&
         !st->reclaimed_generation && !st->paused_by_controller &&
         !st->applied_idle_timeout_ms && !st->create_intent_at &&
         !st->n_conditions;
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
  put(&e, o, "metadata", enc_meta(&e, &s->meta));
  put(&e, o, "spec", enc_spec(&e, &s->spec));
  if(!status_empty(&s->status))
    put(&e, o, "status", enc_status(&e, &s->status));
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

sc_err session_spec_to_json(const session_spec *sp, char **out)
{
  jenc e = {false};
  json_object *o;
  if(!sp) {
    *out = NULL;
    return SC_ERR_INVALID;
  }
  o = enc_spec(&e, sp);
  return to_string(finish(&e, o), JSON_OUT_FLAGS, out);
}

sc_err session_status_to_json(const session_status *st, char **out)
{
  jenc e = {false};
  json_object *o;
  if(!st) {
    *out = NULL;
    return SC_ERR_INVALID;
  }
  o = enc_status(&e, st);
  return to_string(finish(&e, o), JSON_OUT_FLAGS, out);
}

/* ---------------------------------------------------------------- decode */

typedef struct jdec {
  sc_errbuf *eb;
  unsigned flags;
  size_t dropped;  /* LENIENT_METADATA: entries left out */
} jdec;

static sc_err derr(jdec *d, sc_err err, const char *path, const char *fmt,
                   ...) __attribute__((format(printf, 4, 5)));

static sc_err derr(jdec *d, sc_err err, const char *path, const char *fmt,
                   ...)
{
  char msg[SC_ERRBUF_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  return sc_errf(d->eb, err, "%s: %s", path, msg);
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

static sc_err want(jdec *d, json_object *v, json_type t, const char *path,
                   const char *what)
{
  if(json_object_get_type(v) == t)
    return SC_OK;
  return derr(d, SC_ERR_INVALID, path, "expected %s, got %s", what,
              type_name(v));
}

/* A string value without embedded NULs; *out is a new copy. */
static sc_err dec_string(jdec *d, json_object *v, const char *path,
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

static sc_err dec_int(jdec *d, json_object *v, const char *path,
                      int64_t *out)
{
  sc_err err = want(d, v, json_type_int, path, "an integer");
  if(err)
    return err;
  *out = json_object_get_int64(v);
  return SC_OK;
}

static sc_err dec_time(jdec *d, json_object *v, const char *path,
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

static sc_err dec_duration(jdec *d, json_object *v, const char *path,
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

static sc_err dec_kv(jdec *d, json_object *v, const char *path,
                     sc_kvlist *out)
{
  sc_err err = want(d, v, json_type_object, path, "an object");
  if(err)
    return err;
  sc_kvlist_clear(out);
  json_object_object_foreach(v, key, val)
  {
    char p[FIELDPATH_MAX];
    char *s = NULL;
    fieldpath_key(p, sizeof(p), path, key);
    err = dec_string(d, val, p, &s);
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

static sc_err unknown(jdec *d, const char *path, const char *key)
{
  char p[FIELDPATH_MAX];
  fieldpath_key(p, sizeof(p), path, key);
  return derr(d, SC_ERR_INVALID, p, "unknown field");
}

static sc_err dec_meta(jdec *d, json_object *o, session_metadata *m)
{
  sc_err err = want(d, o, json_type_object, "metadata", "an object");
  if(err)
    return err;
  json_object_object_foreach(o, key, v)
  {
    char p[FIELDPATH_MAX];
    fieldpath_key(p, sizeof(p), "metadata", key);
    if(!v)
      continue; /* null: unset */
    if(!strcmp(key, "name"))
      err = dec_string(d, v, p, &m->name);
    else if(!strcmp(key, "namespace"))
      err = dec_string(d, v, p, &m->namespace_);
    else if(!strcmp(key, "uid"))
      err = dec_string(d, v, p, &m->uid);
    else if(!strcmp(key, "resourceVersion"))
      err = dec_string(d, v, p, &m->resource_version);
    else if(!strcmp(key, "generation"))
      err = dec_int(d, v, p, &m->generation);
    else if(!strcmp(key, "creationTimestamp"))
      err = dec_time(d, v, p, &m->creation_timestamp);
    else if(!strcmp(key, "deletionTimestamp"))
      err = dec_time(d, v, p, &m->deletion_timestamp);
    else if(!strcmp(key, "labels"))
      err = d->flags & SESSION_JSON_LENIENT_METADATA
              ? dec_kv_lenient(d, v, &m->labels)
              : dec_kv(d, v, p, &m->labels);
    else if(!strcmp(key, "annotations"))
      err = d->flags & SESSION_JSON_LENIENT_METADATA
              ? dec_kv_lenient(d, v, &m->annotations)
              : dec_kv(d, v, p, &m->annotations);
    else if(!strcmp(key, "finalizers")) {
      size_t i, n;
      err = want(d, v, json_type_array, p, "an array of strings");
      if(err)
        return err;
      n = json_object_array_length(v);
      for(i = 0; i < m->n_finalizers; i++)
        free(m->finalizers[i]);
      free(m->finalizers);
      m->finalizers = NULL;
      m->n_finalizers = 0;
      if(n) {
        m->finalizers = calloc(n, sizeof(char *));
        if(!m->finalizers)
          return SC_ERR_NOMEM;
      }
      for(i = 0; i < n; i++) {
        char ip[FIELDPATH_MAX];
        fieldpath_index(ip, sizeof(ip), p, i);
        err = dec_string(d, json_object_array_get_idx(v, i), ip,
                         &m->finalizers[i]);
        if(err)
          return err;
        m->n_finalizers = i + 1;
      }
    }
    else if(d->flags & SESSION_JSON_IGNORE_UNKNOWN_METADATA)
      continue;
    else
      err = unknown(d, "metadata", key);
    if(err)
      return err;
  }
  return SC_OK;
}

static sc_err dec_spec(jdec *d, json_object *o, const char *path,
                       session_spec *sp)
{
  sc_err err = want(d, o, json_type_object, path, "an object");
  if(err)
    return err;
  json_object_object_foreach(o, key, v)
  {
    char p[FIELDPATH_MAX];
    fieldpath_key(p, sizeof(p), path, key);
    if(!v)
      continue;
    if(!strcmp(key, "template"))
      err = dec_string(d, v, p, &sp->template_id);
    else if(!strcmp(key, "state")) {
      char *s = NULL;
      int st;
      err = dec_string(d, v, p, &s);
      if(err)
        return err;
      st = session_state_parse(s);
      if(st < 0) {
        char q[FIELDPATH_QUOTE_MAX];
        fieldpath_quote(q, sizeof(q), s, strlen(s));
        err = derr(d, SC_ERR_INVALID, p,
                   "%s is not a state (use Active, Running, Paused or Ended)",
                   q);
      }
      else
        sp->state = (session_state)st;
      free(s);
    }
    else if(!strcmp(key, "idleTimeout"))
      err = dec_duration(d, v, p, &sp->idle_timeout_ms);
    else if(!strcmp(key, "reclaimAfter"))
      err = dec_duration(d, v, p, &sp->reclaim_after_ms);
    else if(!strcmp(key, "sessionID"))
      err = dec_string(d, v, p, &sp->session_id);
    else if(!strcmp(key, "tenantID"))
      err = dec_string(d, v, p, &sp->tenant_id);
    else if(!strcmp(key, "envVars"))
      err = dec_kv(d, v, p, &sp->env_vars);
    else if(!strcmp(key, "sandboxMetadata"))
      err = dec_kv(d, v, p, &sp->sandbox_metadata);
    else if(!strcmp(key, "wake"))
      err = dec_int(d, v, p, &sp->wake);
    else
      err = unknown(d, path, key);
    if(err)
      return err;
  }
  return SC_OK;
}

static sc_err dec_intent(jdec *d, json_object *o, const char *path,
                         session_status *st)
{
  sc_err err = want(d, o, json_type_object, path, "an object");
  if(err)
    return err;
  json_object_object_foreach(o, key, v)
  {
    char p[FIELDPATH_MAX];
    fieldpath_key(p, sizeof(p), path, key);
    if(!v)
      continue;
    if(!strcmp(key, "by"))
      err = dec_string(d, v, p, &st->create_intent_by);
    else if(!strcmp(key, "at"))
      err = dec_time(d, v, p, &st->create_intent_at);
    else
      err = unknown(d, path, key);
    if(err)
      return err;
  }
  return SC_OK;
}

static sc_err dec_condition(jdec *d, json_object *o, const char *path,
                            session_condition *c)
{
  sc_err err = want(d, o, json_type_object, path, "an object");
  if(err)
    return err;
  json_object_object_foreach(o, key, v)
  {
    char p[FIELDPATH_MAX];
    fieldpath_key(p, sizeof(p), path, key);
    if(!v)
      continue;
    if(!strcmp(key, "type"))
      err = dec_string(d, v, p, &c->type);
    else if(!strcmp(key, "status"))
      err = dec_string(d, v, p, &c->status);
    else if(!strcmp(key, "reason"))
      err = dec_string(d, v, p, &c->reason);
    else if(!strcmp(key, "message"))
      err = dec_string(d, v, p, &c->message);
    else if(!strcmp(key, "lastTransitionTime"))
      err = dec_time(d, v, p, &c->last_transition_time);
    else if(!strcmp(key, "observedGeneration"))
      err = dec_int(d, v, p, &c->observed_generation);
    else
      err = unknown(d, path, key);
    if(err)
      return err;
  }
  return SC_OK;
}

static sc_err dec_status(jdec *d, json_object *o, const char *path,
                         session_status *st)
{
  sc_err err = want(d, o, json_type_object, path, "an object");
  if(err)
    return err;
  json_object_object_foreach(o, key, v)
  {
    char p[FIELDPATH_MAX];
    fieldpath_key(p, sizeof(p), path, key);
    if(!v)
      continue;
    if(!strcmp(key, "phase")) {
      char *s = NULL;
      int ph;
      err = dec_string(d, v, p, &s);
      if(err)
        return err;
      ph = session_phase_parse(s);
      if(ph < 0) {
        char q[FIELDPATH_QUOTE_MAX];
        fieldpath_quote(q, sizeof(q), s, strlen(s));
        err = derr(d, SC_ERR_INVALID, p, "%s is not a phase", q);
      }
      else
        st->phase = (session_phase)ph;
      free(s);
    }
    else if(!strcmp(key, "sandboxID"))
      err = dec_string(d, v, p, &st->sandbox_id);
    else if(!strcmp(key, "sandboxState"))
      err = dec_string(d, v, p, &st->sandbox_state);
    else if(!strcmp(key, "sandboxProof"))
      err = dec_string(d, v, p, &st->sandbox_proof);
    else if(!strcmp(key, "endAt"))
      err = dec_time(d, v, p, &st->end_at);
    else if(!strcmp(key, "observedGeneration"))
      err = dec_int(d, v, p, &st->observed_generation);
    else if(!strcmp(key, "reclaimedGeneration"))
      err = dec_int(d, v, p, &st->reclaimed_generation);
    else if(!strcmp(key, "pausedByController")) {
      err = want(d, v, json_type_boolean, p, "a boolean");
      if(!err)
        st->paused_by_controller = json_object_get_boolean(v);
    }
    else if(!strcmp(key, "appliedIdleTimeout"))
      err = dec_duration(d, v, p, &st->applied_idle_timeout_ms);
    else if(!strcmp(key, "createIntent"))
      err = dec_intent(d, v, p, st);
    else if(!strcmp(key, "conditions")) {
      size_t i, n;
      err = want(d, v, json_type_array, p, "an array");
      if(err)
        return err;
      n = json_object_array_length(v);
      for(i = 0; i < st->n_conditions; i++) {
        session_condition *c = &st->conditions[i];
        free(c->type);
        free(c->status);
        free(c->reason);
        free(c->message);
      }
      free(st->conditions);
      st->conditions = NULL;
      st->n_conditions = 0;
      if(n) {
        st->conditions = calloc(n, sizeof(*st->conditions));
        if(!st->conditions)
          return SC_ERR_NOMEM;
        st->n_conditions = n; /* zeroed entries are safe to clear */
      }
      for(i = 0; i < n; i++) {
        char ip[FIELDPATH_MAX];
        fieldpath_index(ip, sizeof(ip), p, i);
        err = dec_condition(d, json_object_array_get_idx(v, i), ip,
                            &st->conditions[i]);
        if(err)
          return err;
      }
    }
    else
      err = unknown(d, path, key);
    if(err)
      return err;
  }
  return SC_OK;
}

static sc_err dec_const(jdec *d, json_object *v, const char *path,
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
    if(!strcmp(key, "apiVersion")) {
      err = dec_const(&d, v, "apiVersion", SESSION_API_VERSION);
      have_api = true;
    }
    else if(!strcmp(key, "kind")) {
      err = dec_const(&d, v, "kind", SESSION_KIND);
      have_kind = true;
    }
    else if(!v)
      continue;
    else if(!strcmp(key, "metadata"))
      err = dec_meta(&d, v, &s->meta);
    else if(!strcmp(key, "spec"))
      err = dec_spec(&d, v, "spec", &s->spec);
    else if(!strcmp(key, "status"))
      err = dec_status(&d, v, "status", &s->status);
    else
      err = unknown(&d, "", key);
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

/* Parse text into a json object; strict JSON, nothing after it. */
static sc_err parse_text(const char *json, size_t len, json_object **out,
                         sc_errbuf *eb)
{
  json_tokener *tok;
  json_object *o;
  enum json_tokener_error jerr;
  size_t end;

  *out = NULL;
  if(!json)
    return sc_errf(eb, SC_ERR_INVALID, "no JSON text");
  if(len > INT32_MAX)
    return sc_errf(eb, SC_ERR_TOO_LARGE, "JSON text too large");
  tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
  if(!tok)
    return SC_ERR_NOMEM;
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
  o = json_tokener_parse_ex(tok, json, (int)len);
  jerr = json_tokener_get_error(tok);
  end = json_tokener_get_parse_end(tok);
  if(!o && jerr == json_tokener_success)
    jerr = json_tokener_continue; /* empty input */
  if(jerr == json_tokener_continue) {
    json_tokener_free(tok);
    json_object_put(o);
    return sc_errf(eb, SC_ERR_INVALID, "JSON text ends too early");
  }
  if(jerr != json_tokener_success) {
    json_tokener_free(tok);
    return sc_errf(eb, SC_ERR_INVALID, "JSON syntax error at byte %zu: %s",
                   end, json_tokener_error_desc(jerr));
  }
  json_tokener_free(tok);
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
  err = parse_text(json, len, &o, eb);
  if(err)
    return err;
  err = session_from_json_object(o, out, eb);
  json_object_put(o);
  return err;
}

sc_err session_spec_from_json(const char *json, session_spec *out,
                              sc_errbuf *eb)
{
  jdec d = {eb, 0, 0};
  json_object *o;
  sc_err err;
  memset(out, 0, sizeof(*out));
  out->reclaim_after_ms = -1;
  err = parse_text(json, json ? strlen(json) : 0, &o, eb);
  if(err)
    return err;
  err = dec_spec(&d, o, "spec", out);
  json_object_put(o);
  if(err) {
    session_spec_clear(out);
    out->reclaim_after_ms = -1;
  }
  return err;
}

sc_err session_status_from_json(const char *json, session_status *out,
                                sc_errbuf *eb)
{
  jdec d = {eb, 0, 0};
  json_object *o;
  sc_err err;
  memset(out, 0, sizeof(*out));
  err = parse_text(json, json ? strlen(json) : 0, &o, eb);
  if(err)
    return err;
  err = dec_status(&d, o, "status", out);
  json_object_put(o);
  if(err)
    session_status_clear(out);
  return err;
}
