/* kf_rest.c - the verbs on one resource: get, create, update (PUT),
 * merge patch, delete with finalizers, the status subresource,
 * resourceVersion preconditions, and the applied CRD's schema on writes. */
#include "cmd/kube-apiserver-fake/kf_server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include "cmd/kube-apiserver-fake/kf_crd.h"
#include "cmd/kube-apiserver-fake/kf_schema.h"
#include "lib/dynbuf.h"

/* the resourceVersion precondition of a write: body rv (if any) must be
 * the object's */
static bool rv_ok(json_object *body, kf_obj *ob, struct evhttp_request *req,
                  bool required)
{
  const char *want = kf_jstr(kf_jobj(body, "metadata"), "resourceVersion");
  const char *have = kf_jstr(kf_meta_of(ob->o), "resourceVersion");
  if(!want || !*want) {
    if(!required)
      return true;
    kf_reply_status(req, 422, "Invalid", "%s.%s \"%s\" is invalid: "
                    "metadata.resourceVersion: Invalid value: 0x0: must be "
                    "specified for an update", kf_resources[ob->res].plural,
                    kf_resources[ob->res].group, ob->name);
    return false;
  }
  if(strcmp(want, have)) {
    kf_reply_status(req, 409, "Conflict", "Operation cannot be fulfilled on "
                    "%s.%s \"%s\": the object has been modified; please apply "
                    "your changes to the latest version and try again",
                    kf_resources[ob->res].plural, kf_resources[ob->res].group,
                    ob->name);
    return false;
  }
  return true;
}

/* 422 Invalid with the field errors, as the API server words it:
 * KIND.GROUP "NAME" is invalid: F: D (several: [F: D, F: D]) */
static void reply_invalid(struct evhttp_request *req, int res,
                          const char *name, const kf_errs *e)
{
  const kf_res *r = &kf_resources[res];
  dynbuf b;
  json_object *st, *det, *causes;
  char line[1400];
  size_t i;
  dynbuf_init(&b, 64 * 1024);
  dynbuf_printf(&b, "%s.%s \"%s\" is invalid: %s", r->kind, r->group, name,
                e->n > 1 ? "[" : "");
  for(i = 0; i < e->n; i++) {
    kf_errs_line(e, i, line, sizeof(line));
    dynbuf_printf(&b, "%s%s", i ? ", " : "", line);
  }
  if(e->n > 1)
    dynbuf_addstr(&b, "]");
  st = kf_status_obj(422, "Invalid", dynbuf_ptr(&b));
  det = json_object_new_object();
  kf_set_str(det, "name", name);
  kf_set_str(det, "group", r->group);
  kf_set_str(det, "kind", r->kind);
  causes = json_object_new_array();
  for(i = 0; i < e->n; i++) {
    json_object *c = json_object_new_object();
    kf_set_str(c, "reason", e->v[i].reason);
    kf_set_str(c, "message", e->v[i].detail);
    kf_set_str(c, "field", e->v[i].field);
    json_object_array_add(causes, c);
  }
  json_object_object_add(det, "causes", causes);
  json_object_object_add(st, "details", det);
  kf_reply_json(req, 422, st);
  json_object_put(st);
  dynbuf_free(&b);
}

/* an object as the API server reads it from storage once the CRD exists:
 * fields the schema does not declare dropped, defaults applied (changes
 * o; nothing without the CRD) */
static void as_stored(kf_server *s, int res, json_object *o)
{
  json_object *schema;
  kf_errs unk = {0};
  if(res != KF_RES_SESSIONS || !(schema = kf_crd_schema(kf_sessions_crd(s))))
    return;
  kf_schema_prune(o, schema, true, &unk);
  kf_errs_free(&unk);
  kf_schema_default(o, schema);
}

/* a CRD was written: the stored Sessions from now on read as an API
 * server reads them from storage, pruned and defaulted by its schema
 * (changed in place, without a new resourceVersion: they are the same
 * versions, read through the new schema) */
static void crd_applied(kf_server *s)
{
  size_t i;
  for(i = 0; i < s->n_objs; i++)
    if(s->objs[i].res == KF_RES_SESSIONS)
      as_stored(s, KF_RES_SESSIONS, s->objs[i].o);
}

/* the applied CRD's schema on a session about to be written (changes
 * obj): unknown fields by ?fieldValidation (Strict: 400 naming them;
 * Warn, the default: dropped with a Warning header each; Ignore: dropped),
 * then the defaults, then validation (422 with the field errors). false:
 * the request was answered */
static bool apply_schema(kf_server *s, struct evhttp_request *req,
                         const kf_route *rt, json_object *obj,
                         const char *name)
{
  json_object *schema;
  kf_errs unk = {0}, errs = {0};
  size_t i;
  if(rt->res != KF_RES_SESSIONS ||
     !(schema = kf_crd_schema(kf_sessions_crd(s))))
    return true;
  kf_schema_prune(obj, schema, rt->fv != KF_FV_STRICT, &unk);
  if(unk.n && rt->fv == KF_FV_STRICT) {
    dynbuf b;
    dynbuf_init(&b, 64 * 1024);
    dynbuf_addstr(&b, "Session in version \"v1alpha1\" cannot be handled as "
                  "a Session: strict decoding error: ");
    for(i = 0; i < unk.n; i++)
      dynbuf_printf(&b, "%sunknown field \"%s\"", i ? ", " : "",
                    unk.v[i].field);
    kf_reply_status(req, 400, "BadRequest", "%s", dynbuf_ptr(&b));
    dynbuf_free(&b);
    kf_errs_free(&unk);
    return false;
  }
  for(i = 0; s->cur_log && i < unk.n; i++) {
    dynbuf b;
    dynbuf_init(&b, 64 * 1024);
    if(s->cur_log->dropped)
      dynbuf_printf(&b, "%s\n", s->cur_log->dropped);
    dynbuf_addstr(&b, unk.v[i].field);
    free(s->cur_log->dropped);
    s->cur_log->dropped = dynbuf_take(&b);
  }
  for(i = 0; rt->fv == KF_FV_WARN && i < unk.n; i++) {
    char w[400];
    snprintf(w, sizeof(w), "299 - \"unknown field \\\"%s\\\"\"",
             unk.v[i].field);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Warning", w);
  }
  kf_errs_free(&unk);
  kf_schema_default(obj, schema);
  kf_schema_validate(obj, schema, &errs);
  if(errs.n) {
    reply_invalid(req, rt->res, name, &errs);
    kf_errs_free(&errs);
    return false;
  }
  return true;
}

/* the API server's and the fake's checks of a CRD being written; false:
 * answered with 422 */
static bool crd_ok(struct evhttp_request *req, json_object *crd,
                   const char *name)
{
  kf_errs errs = {0};
  kf_crd_check(crd, &errs);
  if(errs.n) {
    reply_invalid(req, KF_RES_CRDS, name, &errs);
    kf_errs_free(&errs);
    return false;
  }
  return true;
}

static bool check_kind(kf_server *s, int res, json_object *body,
                       struct evhttp_request *req)
{
  const kf_res *r = &kf_resources[res];
  const char *k = kf_jstr(body, "kind"), *av = kf_jstr(body, "apiVersion");
  char want[64];
  (void)s;
  snprintf(want, sizeof(want), "%s%s%s", r->group, *r->group ? "/" : "",
           r->version);
  if(!json_object_is_type(body, json_type_object) || !k || !av ||
     strcmp(k, r->kind) || strcmp(av, want)) {
    kf_reply_status(req, 400, "BadRequest", "the body must be a %s %s object",
                    want, r->kind);
    return false;
  }
  if(json_object_object_get_ex(body, "spec", NULL) && !kf_jobj(body, "spec")) {
    kf_reply_status(req, 422, "Invalid", "spec: Invalid value: must be an "
                    "object");
    return false;
  }
  return true;
}

static void serve_create(kf_server *s, struct evhttp_request *req,
                         const kf_route *rt, json_object *body)
{
  json_object *m, *o;
  const char *name, *bns;
  char uid[40], ts[40];
  kf_obj *ob;
  if(!check_kind(s, rt->res, body, req))
    return;
  m = kf_jobj(body, "metadata");
  name = kf_jstr(m, "name");
  if(!name || !*name || strlen(name) > 253 || strchr(name, '/')) {
    kf_reply_status(req, 422, "Invalid", "metadata.name: Required value: name "
                    "is required (1-253 characters, no '/')");
    return;
  }
  bns = kf_jstr(m, "namespace");
  if(bns && kf_resources[rt->res].namespaced && strcmp(bns, rt->ns)) {
    kf_reply_status(req, 400, "BadRequest", "the namespace of the provided "
                    "object does not match the namespace sent on the request");
    return;
  }
  if((ob = kf_find_obj(s, rt->res, rt->ns, name))) {
    /* as the API server's registry store: a name held by a terminating
     * object (a finalizer left) says so */
    kf_reply_status(req, 409, "AlreadyExists", "%s%s.%s \"%s\" already exists",
                    kf_jstr(kf_meta_of(ob->o), "deletionTimestamp")
                      ? "object is being deleted: " : "",
                    kf_resources[rt->res].plural,
                    kf_resources[rt->res].group, name);
    return;
  }
  if(rt->res == KF_RES_CRDS && !crd_ok(req, body, name))
    return;
  if(!apply_schema(s, req, rt, body, name))
    return;
  o = json_object_get(body);
  m = kf_meta_of(o);
  if(kf_resources[rt->res].namespaced)
    kf_set_str(m, "namespace", rt->ns);
  else
    json_object_object_del(m, "namespace");
  kf_new_uid(uid, sizeof(uid));
  kf_set_str(m, "uid", uid);
  kf_now_rfc3339(ts, sizeof(ts));
  kf_set_str(m, "creationTimestamp", ts);
  json_object_object_add(m, "generation", json_object_new_int64(1));
  json_object_object_del(m, "deletionTimestamp");
  json_object_object_del(m, "resourceVersion");
  if(kf_resources[rt->res].status_sub)
    json_object_object_del(o, "status");
  if(rt->res == KF_RES_CRDS)
    kf_crd_set_status(o);
  if(s->n_objs == s->cap_objs) {
    s->cap_objs = s->cap_objs ? s->cap_objs * 2 : 16;
    s->objs = realloc(s->objs, s->cap_objs * sizeof(*s->objs));
  }
  ob = &s->objs[s->n_objs++];
  ob->res = rt->res;
  ob->ns = strdup(rt->ns);
  ob->name = strdup(name);
  ob->o = o;
  kf_bump_and_record(s, ob, "ADDED");
  kf_reply_json(req, 201, ob->o);
  if(rt->res == KF_RES_CRDS)
    crd_applied(s);
}

/* replace ob's object by next (the body after the strategy): bump the
 * generation on spec change, write nothing when equal, delete when
 * terminating with no finalizers left */
static void commit_update(kf_server *s, struct evhttp_request *req,
                          kf_obj *ob, json_object *next)
{
  json_object *m = kf_meta_of(next), *om = kf_meta_of(ob->o), *g;
  json_object *a = kf_jobj(ob->o, "spec"), *b = kf_jobj(next, "spec");
  int64_t gen = 1;
  if(json_object_object_get_ex(om, "generation", &g))
    gen = json_object_get_int64(g);
  if(!json_object_equal(a, b))
    gen++;
  json_object_object_add(m, "generation", json_object_new_int64(gen));
  /* fields only the server sets */
  kf_set_str(m, "uid", kf_jstr(om, "uid"));
  if(kf_resources[ob->res].namespaced)
    kf_set_str(m, "namespace", ob->ns);
  else
    json_object_object_del(m, "namespace");
  kf_set_str(m, "name", ob->name);
  kf_set_str(m, "creationTimestamp", kf_jstr(om, "creationTimestamp"));
  if(kf_jstr(om, "deletionTimestamp"))
    kf_set_str(m, "deletionTimestamp", kf_jstr(om, "deletionTimestamp"));
  else
    json_object_object_del(m, "deletionTimestamp");
  kf_set_str(m, "resourceVersion", kf_jstr(om, "resourceVersion"));
  if(json_object_equal(next, ob->o)) {
    json_object_put(next);
    kf_reply_json(req, 200, ob->o);
    return;
  }
  json_object_put(ob->o);
  ob->o = next;
  if(kf_jstr(m, "deletionTimestamp") && !kf_has_finalizers(next)) {
    json_object *keep = json_object_get(next);
    kf_bump_and_record(s, ob, "DELETED");
    kf_remove_obj(s, ob);
    kf_reply_json(req, 200, keep);
    json_object_put(keep);
    return;
  }
  kf_bump_and_record(s, ob, "MODIFIED");
  kf_reply_json(req, 200, ob->o);
}

/* body is the new object (PUT) or the patched one (PATCH) */
static void serve_update(kf_server *s, struct evhttp_request *req,
                         const kf_route *rt, kf_obj *ob, json_object *body)
{
  json_object *next = NULL, *base = NULL, *st;
  if(!check_kind(s, rt->res, body, req))
    return;
  if(kf_jstr(kf_jobj(body, "metadata"), "name") &&
     strcmp(kf_jstr(kf_jobj(body, "metadata"), "name"), ob->name)) {
    kf_reply_status(req, 400, "BadRequest", "the name of the object (%s) does "
                    "not match the name on the URL (%s)",
                    kf_jstr(kf_jobj(body, "metadata"), "name"), ob->name);
    return;
  }
  /* the stored object as read from storage (a copy: the schema steps
   * below change what they are given, and a refused write must leave
   * the stored one as it was) */
  json_object_deep_copy(ob->o, &base, NULL);
  as_stored(s, rt->res, base);
  if(rt->status) {
    /* status subresource: only status changes */
    next = base;
    base = NULL;
    if(json_object_object_get_ex(body, "status", &st) && st)
      json_object_object_add(next, "status", json_object_get(st));
    else
      json_object_object_del(next, "status");
  }
  else {
    json_object_deep_copy(body, &next, NULL);
    /* the main resource ignores status when the subresource exists */
    if(kf_resources[rt->res].status_sub) {
      if(json_object_object_get_ex(base, "status", &st))
        json_object_object_add(next, "status", json_object_get(st));
      else
        json_object_object_del(next, "status");
    }
  }
  json_object_put(base);
  if((rt->res == KF_RES_CRDS && !rt->status && !crd_ok(req, next, ob->name)) ||
     !apply_schema(s, req, rt, next, ob->name)) {
    json_object_put(next);
    return;
  }
  commit_update(s, req, ob, next);
  if(rt->res == KF_RES_CRDS)
    crd_applied(s);
}

static void serve_delete(kf_server *s, struct evhttp_request *req,
                         kf_obj *ob)
{
  json_object *m = kf_meta_of(ob->o);
  char ts[40];
  if(!kf_has_finalizers(ob->o)) {
    json_object *keep = json_object_get(ob->o);
    kf_bump_and_record(s, ob, "DELETED");
    kf_remove_obj(s, ob);
    kf_reply_json(req, 200, keep);
    json_object_put(keep);
    return;
  }
  if(!kf_jstr(m, "deletionTimestamp")) {
    kf_now_rfc3339(ts, sizeof(ts));
    kf_set_str(m, "deletionTimestamp", ts);
    json_object_object_add(m, "deletionGracePeriodSeconds",
                           json_object_new_int(0));
    kf_bump_and_record(s, ob, "MODIFIED");
  }
  kf_reply_json(req, 202, ob->o);
}

/* the DeleteOptions body of a DELETE, when there is one: its
 * preconditions (uid, resourceVersion) must be the object's, else 409
 * Conflict in the API server's words; false: answered */
static bool delete_preconditions_ok(kf_server *s, struct evhttp_request *req,
                                    kf_obj *ob)
{
  struct evbuffer *in = evhttp_request_get_input_buffer(req);
  json_object *body = NULL, *pre;
  const char *want, *have;
  bool ok = true;
  sc_err e;
  (void)s;
  if(!in || evbuffer_get_length(in) == 0)
    return true;
  e = kf_read_body(req, &body);
  if(e || !json_object_is_type(body, json_type_object)) {
    kf_reply_status(req, e == SC_ERR_TOO_LARGE ? 413 : 400, "BadRequest",
                    "the request body is not a DeleteOptions JSON object");
    json_object_put(body);
    return false;
  }
  pre = kf_jobj(body, "preconditions");
  if(pre && (want = kf_jstr(pre, "uid")) &&
     strcmp(want, (have = kf_jstr(kf_meta_of(ob->o), "uid")) ? have : "")) {
    kf_reply_status(req, 409, "Conflict", "Operation cannot be fulfilled on "
                    "%s.%s \"%s\": Precondition failed: UID in precondition: "
                    "%s, UID in object meta: %s",
                    kf_resources[ob->res].plural, kf_resources[ob->res].group,
                    ob->name, want, have ? have : "");
    ok = false;
  }
  else if(pre && (want = kf_jstr(pre, "resourceVersion")) &&
          strcmp(want, (have = kf_jstr(kf_meta_of(ob->o),
                                       "resourceVersion")) ? have : "")) {
    kf_reply_status(req, 409, "Conflict", "Operation cannot be fulfilled on "
                    "%s.%s \"%s\": Precondition failed: ResourceVersion in "
                    "precondition: %s, ResourceVersion in object meta: %s",
                    kf_resources[ob->res].plural, kf_resources[ob->res].group,
                    ob->name, want, have ? have : "");
    ok = false;
  }
  json_object_put(body);
  return ok;
}

void kf_serve_resource(kf_server *s, struct evhttp_request *req,
                       const kf_route *rt)
{
  enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
  json_object *body = NULL;
  kf_obj *ob = NULL;
  if(rt->name[0])
    ob = kf_find_obj(s, rt->res, rt->ns, rt->name);
  if(cmd == EVHTTP_REQ_POST || cmd == EVHTTP_REQ_PUT ||
     cmd == EVHTTP_REQ_PATCH) {
    sc_err e;
    if(rt->dry_run) {
      kf_reply_status(req, 400, "BadRequest", "dryRun is not supported by "
                      "kube-apiserver-fake (a dry run here would write)");
      return;
    }
    if(rt->fv == KF_FV_BAD) {
      kf_reply_status(req, 400, "BadRequest", "fieldValidation: invalid value "
                      "\"%s\": must be Ignore, Warn or Strict", rt->fv_text);
      return;
    }
    e = kf_read_body(req, &body);
    if(e) {
      kf_reply_status(req, e == SC_ERR_TOO_LARGE ? 413 : 400, "BadRequest",
                      "the request body is not a JSON document");
      return;
    }
  }
  if(!rt->name[0]) {
    if(cmd == EVHTTP_REQ_GET && rt->fsel_err[0])
      kf_reply_status(req, 400, "BadRequest", "%s", rt->fsel_err);
    else if(cmd == EVHTTP_REQ_GET && rt->lsel_err[0])
      kf_reply_status(req, 400, "BadRequest", "%s", rt->lsel_err);
    else if(cmd == EVHTTP_REQ_GET && rt->watch && rt->lsel.n)
      kf_reply_status(req, 400, "BadRequest", "labelSelector on a watch is "
                      "not supported by kube-apiserver-fake");
    else if(cmd == EVHTTP_REQ_GET && rt->watch)
      kf_serve_watch(s, req, rt);
    else if(cmd == EVHTTP_REQ_GET)
      kf_serve_list(s, req, rt);
    else if(cmd == EVHTTP_REQ_POST && !rt->status &&
            (rt->ns[0] || !kf_resources[rt->res].namespaced))
      serve_create(s, req, rt, body);
    else
      kf_reply_status(req, 405, "MethodNotAllowed", "method not allowed");
    json_object_put(body);
    return;
  }
  if(!ob) {
    kf_reply_status(req, 404, "NotFound", "%s.%s \"%s\" not found",
                    kf_resources[rt->res].plural, kf_resources[rt->res].group,
                    rt->name);
    json_object_put(body);
    return;
  }
  switch(cmd) {
  case EVHTTP_REQ_GET:
    if(rt->table)
      kf_serve_list(s, req, rt); /* a Table of one row */
    else
      kf_reply_json(req, 200, ob->o);
    break;
  case EVHTTP_REQ_PUT:
    if(rv_ok(body, ob, req, true))
      serve_update(s, req, rt, ob, body);
    break;
  case EVHTTP_REQ_PATCH: {
    const char *ct = evhttp_find_header(evhttp_request_get_input_headers(req),
                                        "Content-Type");
    json_object *cur = NULL;
    if(!ct || strncmp(ct, "application/merge-patch+json", 28)) {
      kf_reply_status(req, 415, "UnsupportedMediaType", "the body of the "
                      "request was in an unknown format - accepted media "
                      "types include: application/merge-patch+json");
      break;
    }
    if(!rv_ok(body, ob, req, false))
      break;
    json_object_deep_copy(ob->o, &cur, NULL);
    as_stored(s, rt->res, cur);
    cur = kf_merge_patch(cur, body);
    serve_update(s, req, rt, ob, cur);
    json_object_put(cur);
    break;
  }
  case EVHTTP_REQ_DELETE:
    if(rt->dry_run)
      kf_reply_status(req, 400, "BadRequest", "dryRun is not supported by "
                      "kube-apiserver-fake (a dry run here would delete)");
    else if(delete_preconditions_ok(s, req, ob))
      serve_delete(s, req, ob);
    break;
  default:
    kf_reply_status(req, 405, "MethodNotAllowed", "method not allowed");
  }
  json_object_put(body);
}
