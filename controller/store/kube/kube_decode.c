/* kube_decode.c - the kube store's bodies and objects (kube_int.h):
 * strict JSON, an object of the API server <-> a session, the errors of
 * answers, and the objects that do not decode (store.h): reported, and
 * marked Ready=False/InvalidObject for their owner. */
#include "controller/store/kube/kube_int.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include "api/session_json.h"
#include "lib/sctime.h"
#include "controller/ops/log.h"

/* the message of a Status body, or "" */
const char *kstore_status_msg(json_object *o)
{
  json_object *m;
  if(o && json_object_object_get_ex(o, "message", &m) &&
     json_object_is_type(m, json_type_string))
    return json_object_get_string(m);
  return "";
}

/* ------------------------------------------------------------------ */
/* bodies and objects, strictly */

/* Parse a body of the API server as controller/cube/json.c parses Cube's:
 * strict JSON (RFC 8259, no comments or single quotes), UTF-8 checked, at
 * most KJSON_DEPTH levels, nothing after the value but white space, no
 * raw NUL byte (an escaped \u0000 inside a string is JSON; the decoder
 * decides about it). why says what is wrong. */
sc_err kstore_json_parse(const char *body, size_t len, json_object **out,
                         char *why, size_t whylen)
{
  json_tokener *tok;
  json_object *o;
  enum json_tokener_error jerr;
  const char *nul;
  size_t end;
  *out = NULL;
  if(len > INT32_MAX) {
    snprintf(why, whylen, "%zu bytes", len);
    return SC_ERR_TOO_LARGE;
  }
  if((nul = memchr(body, '\0', len)) != NULL) {
    snprintf(why, whylen, "a NUL byte at offset %zu",
             (size_t)(nul - body));
    return SC_ERR_PROTOCOL;
  }
  tok = json_tokener_new_ex(KJSON_DEPTH);
  if(!tok)
    return SC_ERR_NOMEM;
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
                                JSON_TOKENER_ALLOW_TRAILING_CHARS |
                                JSON_TOKENER_VALIDATE_UTF8);
  o = json_tokener_parse_ex(tok, body, (int)len);
  jerr = json_tokener_get_error(tok);
  end = json_tokener_get_parse_end(tok);
  if(!o && jerr == json_tokener_continue && len) {
    o = json_tokener_parse_ex(tok, "", 1); /* a top-level literal */
    jerr = json_tokener_get_error(tok);
  }
  json_tokener_free(tok);
  if(jerr != json_tokener_success) {
    json_object_put(o);
    if(jerr == json_tokener_continue || jerr == json_tokener_error_parse_eof)
      snprintf(why, whylen, "truncated JSON (%zu bytes)", len);
    else
      snprintf(why, whylen, "invalid JSON at offset %zu: %s", end,
               json_tokener_error_desc(jerr));
    return SC_ERR_PROTOCOL;
  }
  for(; end < len; end++)
    if(body[end] != ' ' && body[end] != '\t' && body[end] != '\r' &&
       body[end] != '\n') {
      json_object_put(o);
      snprintf(why, whylen, "data after the JSON value at offset %zu", end);
      return SC_ERR_PROTOCOL;
    }
  *out = o;
  return SC_OK;
}

/* The JSON text o stands for, at least (strings, keys, numbers and the
 * punctuation, without escapes), counted up to a little past stop; *bad
 * is set on a number json-c could not hold (1e999, an integer past
 * int64). */
static size_t json_size(json_object *o, size_t stop, bool *bad)
{
  size_t n = 0;
  switch(json_object_get_type(o)) {
  case json_type_null:
    return 4;
  case json_type_boolean:
    return 5;
  case json_type_double:
    if(!isfinite(json_object_get_double(o)))
      *bad = true;
    return 8;
  case json_type_int: {
    int64_t v = json_object_get_int64(o);
    if(v == INT64_MAX || v == INT64_MIN)
      *bad = true;
    return 8;
  }
  case json_type_string:
    return (size_t)json_object_get_string_len(o) + 2;
  case json_type_array: {
    size_t i, len = json_object_array_length(o);
    n = 2;
    for(i = 0; i < len && n <= stop && !*bad; i++)
      n += json_size(json_object_array_get_idx(o, i), stop - n, bad) + 1;
    return n;
  }
  case json_type_object: {
    struct json_object_iterator it = json_object_iter_begin(o);
    struct json_object_iterator e = json_object_iter_end(o);
    n = 2;
    for(; !json_object_iter_equal(&it, &e) && n <= stop && !*bad;
        json_object_iter_next(&it))
      n += strlen(json_object_iter_peek_name(&it)) + 4 +
           json_size(json_object_iter_peek_value(&it), stop - n, bad);
    return n;
  }
  }
  return n;
}

/* metadata.FIELD of a raw object when it is a string without NUL */
static const char *raw_meta(json_object *o, const char *field)
{
  json_object *m, *v;
  if(!json_object_object_get_ex(o, "metadata", &m) ||
     !json_object_object_get_ex(m, field, &v) ||
     !json_object_is_type(v, json_type_string) ||
     strlen(json_object_get_string(v)) !=
       (size_t)json_object_get_string_len(v))
    return NULL;
  return json_object_get_string(v);
}

/* The namespace, name and uid of a raw object, as far as they are usable
 * (a key store_check_key accepts; NULL otherwise). */
static void raw_ident(json_object *o, const char **ns, const char **name,
                      const char **uid)
{
  sc_errbuf e;
  *ns = raw_meta(o, "namespace");
  *name = raw_meta(o, "name");
  *uid = raw_meta(o, "uid");
  if(!*ns || !*name || store_check_key(*ns, *name, "", &e))
    *ns = *name = NULL;
}

/* Check and decode one object of the API server: a JSON object of at most
 * STORE_OBJECT_MAX bytes, numbers in range, a Session the strict decoder
 * takes (SESSION_JSON_IGNORE_UNKNOWN_METADATA | _LENIENT_METADATA: labels,
 * annotations and metadata we do not read never refuse it), with a usable
 * namespace and name and a resourceVersion. why (no prefix) says what is
 * wrong: "spec.state: expected a string, got an integer". */
sc_err kstore_obj_decode(json_object *o, session **out, char *why,
                         size_t whylen)
{
  sc_errbuf e2;
  bool bad = false;
  size_t size;
  sc_err err;
  *out = NULL;
  if(!json_object_is_type(o, json_type_object)) {
    snprintf(why, whylen, "not a JSON object");
    return SC_ERR_PROTOCOL;
  }
  size = json_size(o, STORE_OBJECT_MAX, &bad);
  if(size > STORE_OBJECT_MAX) {
    snprintf(why, whylen, "the object is more than %d bytes of JSON (the "
             "store's cap on one object, STORE_OBJECT_MAX)",
             STORE_OBJECT_MAX);
    return SC_ERR_PROTOCOL;
  }
  if(bad) {
    snprintf(why, whylen, "a number out of range");
    return SC_ERR_PROTOCOL;
  }
  e2.msg[0] = '\0';
  err = session_from_json_object_flags(o,
                                       SESSION_JSON_IGNORE_UNKNOWN_METADATA |
                                         SESSION_JSON_LENIENT_METADATA,
                                       out, &e2);
  if(err == SC_ERR_NOMEM)
    return err;
  if(!err && (err = store_check_key((*out)->meta.namespace_,
                                    (*out)->meta.name, "the object",
                                    &e2)) == SC_OK &&
     (!(*out)->meta.resource_version || !*(*out)->meta.resource_version))
    err = sc_errf(&e2, SC_ERR_PROTOCOL, "metadata.resourceVersion: "
                  "required field missing");
  if(err) {
    session_free(*out);
    *out = NULL;
    snprintf(why, whylen, "%s", !strncmp(e2.msg, "the object: ", 12)
                                ? e2.msg + 12 : e2.msg);
    return SC_ERR_PROTOCOL;
  }
  return SC_OK;
}

/* The body of a finished call, parsed strictly (kstore_json_parse): a 2xx body
 * comes raw from kube_http (kstore_call_opts.raw_2xx), others parsed for their
 * Status. r is *res with body set; *own is the caller's to put. k->why
 * says why a 2xx body is not JSON (kstore_reply_err names it). */
void kstore_strict_body(kube_store *k, const kube_http_result *res,
                        kube_http_result *r, json_object **own)
{
  *r = *res;
  *own = NULL;
  k->why[0] = '\0';
  if(r->body || r->err || r->status < 200 || r->status > 299 ||
     !r->body_len || !r->raw)
    return;
  if(kstore_json_parse(r->raw, r->body_len, own, k->why, sizeof(k->why)) ==
     SC_ERR_NOMEM)
    snprintf(k->why, sizeof(k->why), "out of memory");
  r->body = *own;
}

/* The error of a finished call that no status code of the operation
 * explains: no answer, 429/5xx after the retries, 401, 403, a 2xx body
 * that is not JSON. SC_OK otherwise. */
sc_err kstore_reply_err(const kube_store *k, const kube_http_result *res,
                        const char *method, const char *path, sc_errbuf *eb)
{
  if(res->err)
    return sc_errf(eb, res->err == SC_ERR_TOO_LARGE ? SC_ERR_TOO_LARGE
                   : SC_ERR_UNAVAILABLE, "%s", res->message);
  if(res->status == 429 || res->status >= 500)
    return sc_errf(eb, SC_ERR_UNAVAILABLE, "%s", res->message);
  if(res->status == 401)
    return sc_errf(eb, SC_ERR_INVALID, "kube %s %s%s: 401 Unauthorized "
                   "(check the credentials of %s)", method, k->conn.server,
                   path, k->conn.source);
  if(res->status == 403)
    return sc_errf(eb, SC_ERR_INVALID, "kube %s %s%s: 403 Forbidden: %s",
                   method, k->conn.server, path, kstore_status_msg(res->body));
  if(res->status < 300 && res->body_len && !res->body)
    return sc_errf(eb, SC_ERR_PROTOCOL, "kube %s %s%s: HTTP %ld with a body "
                   "that is not JSON%s%s%s", method, k->conn.server, path,
                   res->status, k->why[0] ? " (" : "", k->why,
                   k->why[0] ? ")" : "");
  return SC_OK;
}

/* ------------------------------------------------------------------ */
/* objects */

void kstore_obj_path(char *buf, size_t len, const char *ns, const char *name,
                     const char *sub)
{
  char *ens = curl_easy_escape(NULL, ns, 0);
  char *en = name ? curl_easy_escape(NULL, name, 0) : NULL;
  snprintf(buf, len, GROUP_PATH "/namespaces/%s/sessions%s%s%s",
           ens ? ens : "", name ? "/" : "", name ? (en ? en : "") : "",
           sub ? sub : "");
  curl_free(ens);
  curl_free(en);
}

sc_err kstore_decode(json_object *o, const char *what, session **out,
                     sc_errbuf *eb)
{
  char why[SC_ERRBUF_SIZE];
  sc_err err = kstore_obj_decode(o, out, why, sizeof(why));
  if(err == SC_ERR_NOMEM)
    return sc_errf(eb, err, "out of memory");
  if(err)
    return sc_errf(eb, SC_ERR_PROTOCOL, "kube: %s does not decode: %s", what,
                   why);
  return SC_OK;
}

sc_err kstore_http_err(long code, json_object *resp, const char *op,
                       const char *ns, const char *name, sc_errbuf *eb)
{
  const char *m = kstore_status_msg(resp);
  if(code == 404)
    return sc_errf(eb, SC_ERR_NOT_FOUND, "kube: %s %s/%s: not found", op, ns,
                   name);
  if(code == 409) {
    json_object *r;
    if(json_object_object_get_ex(resp, "reason", &r) &&
       !strcmp(json_object_get_string(r), "AlreadyExists"))
      return sc_errf(eb, SC_ERR_EXISTS, "kube: %s %s/%s: %s", op, ns, name,
                     m);
    return sc_errf(eb, SC_ERR_CONFLICT, "kube: %s %s/%s: conflict: %s", op,
                   ns, name, m);
  }
  return sc_errf(eb, code >= 500 ? SC_ERR_UNAVAILABLE : SC_ERR_INVALID,
                 "kube: %s %s/%s: HTTP %ld: %s", op, ns, name, code, m);
}

bool kstore_has_finalizer(const session *s)
{
  size_t i;
  for(i = 0; i < s->meta.n_finalizers; i++)
    if(!strcmp(s->meta.finalizers[i], FINALIZER))
      return true;
  return false;
}

/* the JSON of part `key` ("spec") of s's encoding, or NULL */
json_object *kstore_part_of(const session *s, const char *key,
                            json_object **whole)
{
  json_object *v;
  *whole = session_to_json_object(s);
  if(*whole && json_object_object_get_ex(*whole, key, &v))
    return v;
  return NULL;
}

void kstore_set_or_del(json_object *o, const char *key, json_object *v)
{
  if(v)
    json_object_object_add(o, key, json_object_get(v));
  else
    json_object_object_del(o, key);
}

/* the merge patch of metadata.finalizers with or without ours, guarded
 * by s's resourceVersion (the caller frees it) */
char *kstore_finalizer_patch(const session *s, bool add)
{
  json_object *p = json_object_new_object(), *m = json_object_new_object(),
              *a = json_object_new_array();
  char *out;
  size_t i;
  for(i = 0; i < s->meta.n_finalizers; i++)
    if(strcmp(s->meta.finalizers[i], FINALIZER))
      json_object_array_add(a, json_object_new_string(s->meta.finalizers[i]));
  if(add)
    json_object_array_add(a, json_object_new_string(FINALIZER));
  json_object_object_add(m, "resourceVersion",
                         json_object_new_string(s->meta.resource_version));
  json_object_object_add(m, "finalizers", a);
  json_object_object_add(p, "metadata", m);
  out = strdup(json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN));
  json_object_put(p);
  return out;
}

/* --- objects that do not decode (store.h) --- */

static void on_marked(const kube_http_result *res, void *ud)
{
  kube_store *k = ud;
  if(res->err || res->status < 200 || res->status > 299)
    log_kv(k->base.log, LOG_WARN, "could not mark a skipped object "
           "InvalidObject", "store", store_url(&k->base), "error",
           res->message && *res->message ? res->message : "no answer", NULL);
}

/* Does raw already carry our Ready=False/InvalidObject with msg? */
static bool marked_already(json_object *raw, const char *msg)
{
  json_object *st, *cs;
  size_t i, n;
  if(!json_object_object_get_ex(raw, "status", &st) ||
     !json_object_object_get_ex(st, "conditions", &cs) ||
     !json_object_is_type(cs, json_type_array))
    return false;
  n = json_object_array_length(cs);
  for(i = 0; i < n; i++) {
    json_object *c = json_object_array_get_idx(cs, i), *v;
    const char *f[4][2] = {{"type", "Ready"}, {"status", "False"},
                           {"reason", "InvalidObject"}, {"message", msg}};
    size_t j;
    for(j = 0; j < 4; j++)
      if(!json_object_object_get_ex(c, f[j][0], &v) ||
         !json_object_is_type(v, json_type_string) ||
         strcmp(json_object_get_string(v), f[j][1]))
        break;
    if(j == 4)
      return true;
  }
  return false;
}

/* Tell the object's owner (kubectl describe, sessionctl describe of a
 * fixed object) why the controller does not reconcile it: a PUT of its
 * /status with the condition Ready=False/InvalidObject in place of the
 * others, sent on the controller's loop and not waited for (a failure,
 * a 409 included, is logged; the next report tries again). Only
 * with store_open_opts.mark_invalid, for an object with a usable name,
 * when store_skip_report() logged it (so at most once per object per
 * interval: the write's own watch event does not loop). */
static void mark_invalid(kube_store *k, json_object *raw, const char *ns,
                         const char *name, const char *why)
{
  char path[1200], msg[MARK_MSG_MAX + 1], now[SCTIME_RFC3339_MAX];
  json_object *p, *st = NULL, *cs, *c, *m, *old;
  const char *rv = raw_meta(raw, "resourceVersion");
  sc_errbuf eb;
  if(!k->mark_invalid || !k->http || !ns || !name || !rv)
    return;
  snprintf(msg, sizeof(msg), "the controller cannot read this object and "
           "does not reconcile it: %s", why);
  if(marked_already(raw, msg))
    return;
  sctime_format_rfc3339(sctime_wall_ms(), now, sizeof(now));
  /* a PUT of the /status subresource (the verb the controller already
   * has, deploy/rbac.yaml), guarded by the version read: the status as
   * it is, its conditions replaced by the one */
  p = json_object_new_object();
  json_object_object_add(p, "apiVersion",
                         json_object_new_string(SESSION_API_VERSION));
  json_object_object_add(p, "kind", json_object_new_string(SESSION_KIND));
  m = json_object_new_object();
  json_object_object_add(m, "name", json_object_new_string(name));
  json_object_object_add(m, "namespace", json_object_new_string(ns));
  json_object_object_add(m, "resourceVersion", json_object_new_string(rv));
  json_object_object_add(p, "metadata", m);
  if(json_object_object_get_ex(raw, "status", &old) &&
     json_object_is_type(old, json_type_object))
    json_object_deep_copy(old, &st, NULL);
  if(!st)
    st = json_object_new_object();
  cs = json_object_new_array();
  c = json_object_new_object();
  json_object_object_add(c, "type", json_object_new_string("Ready"));
  json_object_object_add(c, "status", json_object_new_string("False"));
  json_object_object_add(c, "reason", json_object_new_string("InvalidObject"));
  json_object_object_add(c, "message", json_object_new_string(msg));
  json_object_object_add(c, "lastTransitionTime", json_object_new_string(now));
  json_object_array_add(cs, c);
  json_object_object_add(st, "conditions", cs);
  json_object_object_add(p, "status", st);
  kstore_obj_path(path, sizeof(path), ns, name, "/status");
  eb.msg[0] = '\0';
  {
    /* the answer (the whole object) is not read: not parsed */
    static const kube_http_opts mo = {CALL_TIMEOUT_MS, RESP_MAX, 0, true};
    if(kube_http_request_ex(k->http, "PUT", path, "application/json",
                            json_object_to_json_string_ext(
                              p, JSON_C_TO_STRING_PLAIN),
                            &mo, on_marked, k, &eb))
      log_kv(k->base.log, LOG_WARN, "could not mark a skipped object "
             "InvalidObject", "store", store_url(&k->base), "error", eb.msg,
             NULL);
  }
  json_object_put(p);
}

/* One object of an answer did not decode (why): reported, and marked. */
sc_err kstore_skip_obj(kube_store *k, store_list_result *res,
                       const char *where, json_object *raw, const char *what,
                       const char *why)
{
  const char *ns, *name, *uid;
  char buf[SC_ERRBUF_SIZE];
  bool logged = false;
  sc_err err;
  raw_ident(raw, &ns, &name, &uid);
  if(!name)
    snprintf(buf, sizeof(buf), "%s: %s", what, why);
  err = store_skip_report(&k->base, res, where, ns, name, uid,
                          name ? why : buf, &logged);
  if(logged)
    mark_invalid(k, raw, ns, name, why);
  return err;
}
