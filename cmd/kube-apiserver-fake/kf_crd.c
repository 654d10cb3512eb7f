/* kf_crd.c - the sessions.lea.io CustomResourceDefinition: checks, status,
 * and the OpenAPI v3 documents built from it (kf_crd.h). */
#include "cmd/kube-apiserver-fake/kf_crd.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "cmd/kube-apiserver-fake/kf_json.h"
#include "lib/sctime.h"

#define GROUP "lea.io"
#define VERSION "v1alpha1"

/* the versions[] entry named VERSION */
static json_object *our_version(json_object *crd, size_t *at)
{
  json_object *vs = kf_jget(kf_jobj(crd, "spec"), "versions");
  size_t i;
  for(i = 0; json_object_is_type(vs, json_type_array) &&
      i < json_object_array_length(vs); i++) {
    json_object *v = json_object_array_get_idx(vs, i);
    const char *n = kf_jstr(v, "name");
    if(n && !strcmp(n, VERSION)) {
      if(at)
        *at = i;
      return v;
    }
  }
  return NULL;
}

json_object *kf_crd_schema(json_object *crd)
{
  return kf_jobj(kf_jobj(our_version(crd, NULL), "schema"), "openAPIV3Schema");
}

json_object *kf_crd_columns(json_object *crd)
{
  json_object *c = kf_jget(our_version(crd, NULL), "additionalPrinterColumns");
  return json_object_is_type(c, json_type_array) ? c : NULL;
}

json_object *kf_crd_names(json_object *crd)
{
  return kf_jobj(kf_jobj(crd, "spec"), "names");
}

static void check_columns(json_object *cols, const char *vpath,
                          kf_errs *errs)
{
  static const char *const types[] = {"integer", "number", "string",
                                      "boolean", "date", NULL};
  size_t i, t;
  char p[300];
  if(!cols)
    return;
  if(!json_object_is_type(cols, json_type_array)) {
    snprintf(p, sizeof(p), "%s.additionalPrinterColumns", vpath);
    kf_errs_add(errs, p, "FieldValueTypeInvalid", "Invalid value: must be "
                "a list");
    return;
  }
  for(i = 0; i < json_object_array_length(cols); i++) {
    json_object *c = json_object_array_get_idx(cols, i);
    const char *n = kf_jstr(c, "name"), *ty = kf_jstr(c, "type"),
      *jp = kf_jstr(c, "jsonPath");
    if(!n || !*n) {
      snprintf(p, sizeof(p), "%s.additionalPrinterColumns[%zu].name", vpath,
               i);
      kf_errs_add(errs, p, "FieldValueRequired", "Required value");
    }
    for(t = 0; ty && types[t] && strcmp(types[t], ty); t++)
      ;
    if(!ty || !types[t]) {
      snprintf(p, sizeof(p), "%s.additionalPrinterColumns[%zu].type", vpath,
               i);
      kf_errs_add(errs, p, "FieldValueNotSupported", "Unsupported value: "
                  "\"%s\": supported values: \"boolean\", \"date\", "
                  "\"integer\", \"number\", \"string\"", ty ? ty : "");
    }
    if(!jp || !kf_jsonpath_ok(jp)) {
      snprintf(p, sizeof(p), "%s.additionalPrinterColumns[%zu].jsonPath",
               vpath, i);
      kf_errs_add(errs, p, "FieldValueInvalid", "Invalid value: \"%s\": must "
                  "be a simple json path (.a.b, .a[0], .a['k']; the only "
                  "kind kube-apiserver-fake evaluates)", jp ? jp : "");
    }
  }
}

void kf_crd_check(json_object *crd, kf_errs *errs)
{
  json_object *spec = kf_jobj(crd, "spec"), *names = kf_crd_names(crd),
    *vs = kf_jget(spec, "versions");
  const char *group = kf_jstr(spec, "group"),
    *plural = kf_jstr(names, "plural"), *kind = kf_jstr(names, "kind"),
    *scope = kf_jstr(spec, "scope"),
    *name = kf_jstr(kf_jobj(crd, "metadata"), "name");
  char want[300], p[300];
  size_t i, storage = 0, at = 0;
  json_object *ours;
  if(!spec) {
    kf_errs_add(errs, "spec", "FieldValueRequired", "Required value");
    return;
  }
  if(!group || !*group)
    kf_errs_add(errs, "spec.group", "FieldValueRequired", "Required value");
  if(!plural || !*plural)
    kf_errs_add(errs, "spec.names.plural", "FieldValueRequired",
                "Required value");
  if(!kind || !*kind)
    kf_errs_add(errs, "spec.names.kind", "FieldValueRequired",
                "Required value");
  if(!scope || (strcmp(scope, "Namespaced") && strcmp(scope, "Cluster")))
    kf_errs_add(errs, "spec.scope", "FieldValueNotSupported", "Unsupported "
                "value: \"%s\": supported values: \"Cluster\", \"Namespaced\"",
                scope ? scope : "");
  if(group && plural) {
    snprintf(want, sizeof(want), "%s.%s", plural, group);
    if(!name || strcmp(name, want))
      kf_errs_add(errs, "metadata.name", "FieldValueInvalid", "Invalid "
                  "value: \"%s\": must be spec.names.plural+\".\"+spec.group",
                  name ? name : "");
  }
  if(errs->n)
    return;
  /* the fake's limit: the one resource it serves */
  if(strcmp(group, GROUP) || strcmp(plural, "sessions") ||
     strcmp(kind, "Session") || strcmp(scope, "Namespaced")) {
    kf_errs_add(errs, "spec", "FieldValueForbidden", "Forbidden: "
                "kube-apiserver-fake serves one custom resource: "
                "sessions.lea.io, kind Session, Namespaced");
    return;
  }
  if(!json_object_is_type(vs, json_type_array) ||
     !json_object_array_length(vs)) {
    kf_errs_add(errs, "spec.versions", "FieldValueRequired", "Required "
                "value: must have at least one version");
    return;
  }
  for(i = 0; i < json_object_array_length(vs); i++) {
    json_object *v = json_object_array_get_idx(vs, i),
      *st = kf_jget(v, "storage"), *sv = kf_jget(v, "served");
    snprintf(p, sizeof(p), "spec.versions[%zu]", i);
    if(!kf_jstr(v, "name")) {
      snprintf(p, sizeof(p), "spec.versions[%zu].name", i);
      kf_errs_add(errs, p, "FieldValueRequired", "Required value");
    }
    if(!json_object_is_type(st, json_type_boolean) ||
       !json_object_is_type(sv, json_type_boolean)) {
      snprintf(p, sizeof(p), "spec.versions[%zu]", i);
      kf_errs_add(errs, p, "FieldValueRequired", "Required value: served and "
                  "storage must be true or false");
    }
    else if(json_object_get_boolean(st))
      storage++;
  }
  if(storage != 1)
    kf_errs_add(errs, "spec.versions", "FieldValueInvalid", "Invalid value: "
                "%zu: must have exactly one version marked as storage "
                "version", storage);
  ours = our_version(crd, &at);
  if(!ours || !json_object_get_boolean(kf_jget(ours, "served"))) {
    kf_errs_add(errs, "spec.versions", "FieldValueForbidden", "Forbidden: "
                "kube-apiserver-fake serves version " VERSION ": it must be "
                "listed with served: true");
    return;
  }
  for(i = 0; i < json_object_array_length(vs); i++) {
    json_object *v = json_object_array_get_idx(vs, i);
    json_object *sch = kf_jobj(kf_jobj(v, "schema"), "openAPIV3Schema");
    char vp[64];
    snprintf(vp, sizeof(vp), "spec.versions[%zu]", i);
    if(!sch) {
      snprintf(p, sizeof(p), "%s.schema.openAPIV3Schema", vp);
      kf_errs_add(errs, p, "FieldValueRequired", "Required value: schemas "
                  "are required");
      continue;
    }
    snprintf(p, sizeof(p), "%s.schema.openAPIV3Schema", vp);
    if(!kf_jstr(sch, "type") || strcmp(kf_jstr(sch, "type"), "object")) {
      char tp[340];
      snprintf(tp, sizeof(tp), "%s.type", p);
      kf_errs_add(errs, tp, "FieldValueInvalid", "Invalid value: \"%s\": must "
                  "be object at the root", kf_jstr(sch, "type") ?
                  kf_jstr(sch, "type") : "");
    }
    kf_schema_check(sch, p, errs);
    check_columns(kf_jget(v, "additionalPrinterColumns"), vp, errs);
  }
}

/* a condition with status True, as the API server sets on a CRD */
static void add_true_condition(json_object *conds, const char *type,
                               const char *ts, const char *reason,
                               const char *message)
{
  json_object *c = json_object_new_object();
  kf_set_str(c, "type", type);
  kf_set_str(c, "status", "True");
  kf_set_str(c, "lastTransitionTime", ts);
  kf_set_str(c, "reason", reason);
  kf_set_str(c, "message", message);
  json_object_array_add(conds, c);
}

void kf_crd_set_status(json_object *crd)
{
  json_object *st = json_object_new_object(), *conds = json_object_new_array(),
    *names = NULL, *sv = json_object_new_array(), *vs;
  char ts[SCTIME_RFC3339_MAX];
  size_t i;
  sctime_format_rfc3339(sctime_wall_ms() / 1000 * 1000, ts, sizeof(ts));
  add_true_condition(conds, "NamesAccepted", ts, "NoConflicts",
                     "no conflicts found");
  add_true_condition(conds, "Established", ts, "InitialNamesAccepted",
                     "the initial names have been accepted");
  json_object_object_add(st, "conditions", conds);
  if(kf_crd_names(crd))
    json_object_deep_copy(kf_crd_names(crd), &names, NULL);
  if(names) {
    if(!kf_jstr(names, "singular"))
      kf_set_str(names, "singular", "session");
    if(!kf_jstr(names, "listKind"))
      kf_set_str(names, "listKind", "SessionList");
    json_object_object_add(st, "acceptedNames", names);
  }
  vs = kf_jget(kf_jobj(crd, "spec"), "versions");
  for(i = 0; json_object_is_type(vs, json_type_array) &&
      i < json_object_array_length(vs); i++) {
    json_object *v = json_object_array_get_idx(vs, i);
    if(json_object_get_boolean(kf_jget(v, "storage")) && kf_jstr(v, "name"))
      json_object_array_add(sv, json_object_new_string(kf_jstr(v, "name")));
  }
  json_object_object_add(st, "storedVersions", sv);
  json_object_object_add(crd, "status", st);
}

/* ------------------------------------------------------------------ */
/* OpenAPI v3 */

#define META "io.k8s.apimachinery.pkg.apis.meta.v1."

static json_object *ref(const char *name)
{
  json_object *o = json_object_new_object();
  char r[200];
  snprintf(r, sizeof(r), "#/components/schemas/%s", name);
  kf_set_str(o, "$ref", r);
  return o;
}

static json_object *gvk(const char *group, const char *version,
                        const char *kind)
{
  json_object *o = json_object_new_object();
  kf_set_str(o, "group", group);
  kf_set_str(o, "version", version);
  kf_set_str(o, "kind", kind);
  return o;
}

static json_object *param(const char *name, const char *in, bool required,
                          const char *desc)
{
  json_object *p = json_object_new_object(), *s = json_object_new_object();
  kf_set_str(p, "name", name);
  kf_set_str(p, "in", in);
  kf_set_str(p, "description", desc);
  if(required)
    json_object_object_add(p, "required", json_object_new_boolean(1));
  kf_set_str(s, "type", "string");
  if(!strcmp(in, "query"))
    json_object_object_add(s, "uniqueItems", json_object_new_boolean(1));
  json_object_object_add(p, "schema", s);
  return p;
}

/* the query parameters of writes that kubectl looks for */
static void write_params(json_object *params)
{
  json_object_array_add(params, param("dryRun", "query", false, "When "
    "present, indicates that modifications should not be persisted "
    "(kube-apiserver-fake: not supported)."));
  json_object_array_add(params, param("fieldManager", "query", false,
    "A name for the actor making these changes (accepted, not recorded)."));
  json_object_array_add(params, param("fieldValidation", "query", false,
    "How the server handles fields the schema does not declare: Ignore "
    "(drop them), Warn (drop them with a Warning header each; the "
    "default) or Strict (refuse the request, 400, naming each field)."));
}

static json_object *content(const char *type, const char *schema_name)
{
  json_object *c = json_object_new_object(), *t = json_object_new_object();
  json_object_object_add(t, "schema", ref(schema_name));
  json_object_object_add(c, type, t);
  return c;
}

/* an operation: action (get, list, post, put, patch, delete: the
 * x-kubernetes-action values), its id, the kind it acts on, whether it
 * writes (the write parameters), the request body type (NULL: none), the response schema */
static json_object *op(const char *action, const char *id, json_object *k,
                       bool writes, const char *body_type,
                       const char *body_schema, const char *resp_schema)
{
  json_object *o = json_object_new_object(), *params = json_object_new_array(),
    *resp = json_object_new_object(), *ok = json_object_new_object();
  kf_set_str(o, "operationId", id);
  if(writes)
    write_params(params);
  if(!strcmp(action, "list"))
    json_object_array_add(params, param("watch", "query", false, "Watch "
      "for changes (a stream of {type, object} lines)."));
  json_object_object_add(o, "parameters", params);
  if(body_type) {
    json_object *rb = json_object_new_object();
    json_object_object_add(rb, "content", content(body_type, body_schema));
    json_object_object_add(rb, "required", json_object_new_boolean(1));
    json_object_object_add(o, "requestBody", rb);
  }
  kf_set_str(ok, "description", "OK");
  json_object_object_add(ok, "content", content("application/json",
                                                resp_schema));
  json_object_object_add(resp, !strcmp(action, "post") ? "201" : "200",
                         ok);
  json_object_object_add(o, "responses", resp);
  kf_set_str(o, "x-kubernetes-action", action);
  json_object_object_add(o, "x-kubernetes-group-version-kind", k);
  return o;
}

static json_object *path_params(bool ns, bool name)
{
  json_object *a = json_object_new_array();
  if(name)
    json_object_array_add(a, param("name", "path", true, "name of the "
                                   "object"));
  if(ns)
    json_object_array_add(a, param("namespace", "path", true, "object name "
                                   "and auth scope, such as for teams and "
                                   "projects"));
  return a;
}

/* get, put and patch of one object (or of its status: suffix "Status"),
 * their ids VERB IDBASE NSID KIND SUFFIX, as the API server names them */
static void read_write_ops(json_object *item, const char *group,
                           const char *version, const char *kind,
                           const char *idbase, const char *nsid,
                           const char *suffix, const char *obj_schema)
{
  char id[200];
  snprintf(id, sizeof(id), "read%s%s%s%s", idbase, nsid, kind, suffix);
  json_object_object_add(item, "get", op("get", id, gvk(group, version,
                                         kind), false, NULL, NULL,
                                         obj_schema));
  snprintf(id, sizeof(id), "replace%s%s%s%s", idbase, nsid, kind, suffix);
  json_object_object_add(item, "put", op("put", id, gvk(group, version,
                                         kind), true, "application/json",
                                         obj_schema, obj_schema));
  snprintf(id, sizeof(id), "patch%s%s%s%s", idbase, nsid, kind, suffix);
  json_object_object_add(item, "patch", op("patch", id, gvk(group, version,
                                           kind), true,
                                           "application/merge-patch+json",
                                           META "Patch", obj_schema));
}

/* the five paths of a resource: one object, its /status (when status),
 * the namespaced collection (or the cluster one), all namespaces */
static void resource_paths(json_object *paths, const char *group,
                           const char *version, const char *kind,
                           const char *plural, bool ns, bool status,
                           const char *idbase, const char *obj_schema,
                           const char *list_schema)
{
  char base[200], p[300], id[200];
  json_object *one, *coll, *st;
  const char *nsid = ns ? "Namespaced" : "";
  snprintf(base, sizeof(base), "/apis/%s/%s%s", group, version,
           ns ? "/namespaces/{namespace}" : "");
  one = json_object_new_object();
  read_write_ops(one, group, version, kind, idbase, nsid, "", obj_schema);
  snprintf(id, sizeof(id), "delete%s%s%s", idbase, nsid, kind);
  json_object_object_add(one, "delete", op("delete", id, gvk(group, version,
                                           kind), false, NULL, NULL,
                                           META "Status"));
  json_object_object_add(one, "parameters", path_params(ns, true));
  snprintf(p, sizeof(p), "%s/%s/{name}", base, plural);
  json_object_object_add(paths, p, one);
  if(status) {
    st = json_object_new_object();
    read_write_ops(st, group, version, kind, idbase, nsid, "Status",
                   obj_schema);
    json_object_object_add(st, "parameters", path_params(ns, true));
    snprintf(p, sizeof(p), "%s/%s/{name}/status", base, plural);
    json_object_object_add(paths, p, st);
  }
  coll = json_object_new_object();
  snprintf(id, sizeof(id), "list%s%s%s", idbase, nsid, kind);
  json_object_object_add(coll, "get", op("list", id, gvk(group, version,
                                         kind), false, NULL, NULL,
                                         list_schema));
  snprintf(id, sizeof(id), "create%s%s%s", idbase, nsid, kind);
  json_object_object_add(coll, "post", op("post", id, gvk(group, version,
                                          kind), true, "application/json",
                                          obj_schema, obj_schema));
  json_object_object_add(coll, "parameters", path_params(ns, false));
  snprintf(p, sizeof(p), "%s/%s", base, plural);
  json_object_object_add(paths, p, coll);
  if(ns) {
    json_object *all = json_object_new_object();
    snprintf(id, sizeof(id), "list%s%sForAllNamespaces", idbase, kind);
    json_object_object_add(all, "get", op("list", id, gvk(group, version,
                                          kind), false, NULL, NULL,
                                          list_schema));
    snprintf(p, sizeof(p), "/apis/%s/%s/%s", group, version, plural);
    json_object_object_add(paths, p, all);
  }
}

static json_object *typed(const char *type, const char *desc)
{
  json_object *o = json_object_new_object();
  kf_set_str(o, "type", type);
  if(desc)
    kf_set_str(o, "description", desc);
  return o;
}

static json_object *map_of_strings(const char *desc)
{
  json_object *o = typed("object", desc);
  json_object_object_add(o, "additionalProperties", typed("string", NULL));
  return o;
}

/* properties without a description: name, type, ..., NULL */
static const char *const meta_props[] = {
  "generateName", "string", "namespace", "string", "uid", "string",
  "resourceVersion", "string", "generation", "integer",
  "creationTimestamp", "string", "deletionTimestamp", "string",
  "deletionGracePeriodSeconds", "integer", NULL
};
static const char *const list_props[] = {
  "resourceVersion", "string", "continue", "string", NULL
};
static const char *const status_props[] = {
  "apiVersion", "string", "kind", "string", "status", "string",
  "message", "string", "reason", "string", "code", "integer", NULL
};

/* add each (name, type) of props to properties object p, in order */
static void add_typed(json_object *p, const char *const *props)
{
  for(; *props; props += 2)
    json_object_object_add(p, props[0], typed(props[1], NULL));
}

/* ObjectMeta, ListMeta, Status and Patch as the API server publishes
 * them (the fields, not every description) */
static void meta_schemas(json_object *schemas)
{
  json_object *om = typed("object", "ObjectMeta is metadata that all "
                          "persisted resources must have."), *p;
  json_object *lm = typed("object", "ListMeta describes metadata that "
                          "synthetic resources must have."), *lp;
  json_object *st = typed("object", "Status is a return value for calls "
                          "that don't return other objects."), *sp;
  json_object *fin = typed("array", "Must be empty before the object is "
                           "deleted from the registry.");
  p = json_object_new_object();
  json_object_object_add(p, "name", typed("string", "Name must be unique "
                                          "within a namespace."));
  add_typed(p, meta_props);
  json_object_object_add(p, "labels", map_of_strings("Map of string keys "
                                                     "and values."));
  json_object_object_add(p, "annotations", map_of_strings("Annotations is "
                         "an unstructured key value map."));
  json_object_object_add(fin, "items", typed("string", NULL));
  json_object_object_add(p, "finalizers", fin);
  json_object_object_add(om, "properties", p);
  json_object_object_add(schemas, META "ObjectMeta", om);
  lp = json_object_new_object();
  add_typed(lp, list_props);
  json_object_object_add(lm, "properties", lp);
  json_object_object_add(schemas, META "ListMeta", lm);
  sp = json_object_new_object();
  add_typed(sp, status_props);
  json_object_object_add(st, "properties", sp);
  json_object_object_add(schemas, META "Status", st);
  json_object_object_add(schemas, META "Patch", typed("object", "Patch is "
                         "provided to give a concrete name and type to the "
                         "Kubernetes PATCH request body."));
}

static json_object *doc_new(const char *title, json_object **paths,
                            json_object **schemas)
{
  json_object *d = json_object_new_object(), *info = json_object_new_object(),
    *comp = json_object_new_object();
  kf_set_str(d, "openapi", "3.0.0");
  kf_set_str(info, "title", title);
  kf_set_str(info, "version", "v1.32.0-fake");
  json_object_object_add(d, "info", info);
  *paths = json_object_new_object();
  json_object_object_add(d, "paths", *paths);
  *schemas = json_object_new_object();
  json_object_object_add(comp, "schemas", *schemas);
  json_object_object_add(d, "components", comp);
  meta_schemas(*schemas);
  return d;
}

static json_object *gvk_list(const char *group, const char *version,
                             const char *kind)
{
  json_object *a = json_object_new_array();
  json_object_array_add(a, gvk(group, version, kind));
  return a;
}

/* a list type: apiVersion, kind, metadata (ListMeta), items of item */
static json_object *list_schema(const char *item, const char *group,
                                const char *version, const char *kind)
{
  json_object *l = typed("object", NULL), *p = json_object_new_object(),
    *items = typed("array", NULL), *req = json_object_new_array();
  json_object_object_add(p, "apiVersion", typed("string", NULL));
  json_object_object_add(p, "kind", typed("string", NULL));
  json_object_object_add(p, "metadata", ref(META "ListMeta"));
  json_object_object_add(items, "items", ref(item));
  json_object_object_add(p, "items", items);
  json_object_object_add(l, "properties", p);
  json_object_array_add(req, json_object_new_string("items"));
  json_object_object_add(l, "required", req);
  json_object_object_add(l, "x-kubernetes-group-version-kind",
                         gvk_list(group, version, kind));
  return l;
}

json_object *kf_openapi_sessions(json_object *crd)
{
  json_object *paths, *schemas, *d, *sch = NULL, *props, *allof;
  d = doc_new("Kubernetes CRD Swagger", &paths, &schemas);
  resource_paths(paths, GROUP, VERSION, "Session", "sessions", true, true,
                 "LeaIoV1alpha1", "io.lea.v1alpha1.Session",
                 "io.lea.v1alpha1.SessionList");
  if(kf_crd_schema(crd))
    json_object_deep_copy(kf_crd_schema(crd), &sch, NULL);
  if(!sch)
    sch = typed("object", NULL);
  props = kf_jobj(sch, "properties");
  if(!props) {
    props = json_object_new_object();
    json_object_object_add(sch, "properties", props);
  }
  /* metadata is ObjectMeta, as the API server publishes it */
  allof = json_object_new_array();
  json_object_array_add(allof, ref(META "ObjectMeta"));
  {
    json_object *m = json_object_new_object();
    json_object_object_add(m, "allOf", allof);
    json_object_object_add(props, "metadata", m);
  }
  json_object_object_add(sch, "x-kubernetes-group-version-kind",
                         gvk_list(GROUP, VERSION, "Session"));
  json_object_object_add(schemas, "io.lea.v1alpha1.Session", sch);
  json_object_object_add(schemas, "io.lea.v1alpha1.SessionList",
                         list_schema("io.lea.v1alpha1.Session", GROUP,
                                     VERSION, "SessionList"));
  return d;
}

#define CRDV1 "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."

json_object *kf_openapi_crds(void)
{
  json_object *paths, *schemas, *d, *crd, *p;
  d = doc_new("Kubernetes", &paths, &schemas);
  resource_paths(paths, "apiextensions.k8s.io", "v1",
                 "CustomResourceDefinition", "customresourcedefinitions",
                 false, true, "ApiextensionsV1", CRDV1
                 "CustomResourceDefinition",
                 CRDV1 "CustomResourceDefinitionList");
  crd = typed("object", "CustomResourceDefinition represents a resource "
              "that should be exposed on the API server.");
  p = json_object_new_object();
  json_object_object_add(p, "apiVersion", typed("string", NULL));
  json_object_object_add(p, "kind", typed("string", NULL));
  json_object_object_add(p, "metadata", ref(META "ObjectMeta"));
  json_object_object_add(p, "spec", typed("object", "spec describes how "
                         "the user wants the resources to appear"));
  json_object_object_add(p, "status", typed("object", "status indicates "
                         "the actual state of the CustomResourceDefinition"));
  json_object_object_add(crd, "properties", p);
  json_object_object_add(crd, "x-kubernetes-group-version-kind",
                         gvk_list("apiextensions.k8s.io", "v1",
                                  "CustomResourceDefinition"));
  json_object_object_add(schemas, CRDV1 "CustomResourceDefinition", crd);
  json_object_object_add(schemas, CRDV1 "CustomResourceDefinitionList",
                         list_schema(CRDV1 "CustomResourceDefinition",
                                     "apiextensions.k8s.io", "v1",
                                     "CustomResourceDefinitionList"));
  return d;
}
