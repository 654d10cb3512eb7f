/* kf_discovery.c - the fake API server's discovery: /version,
 * /api, /apis, the APIResourceLists, and /openapi/v2 and /openapi/v3
 * (the CRD's schema once it is applied). */
#include "cmd/kube-apiserver-fake/kf_server.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include "cmd/kube-apiserver-fake/kf_crd.h"
#include "lib/schash.h"

static json_object *str_array(const char *const *v)
{
  json_object *a = json_object_new_array();
  for(; *v; v++)
    json_object_array_add(a, json_object_new_string(*v));
  return a;
}

/* /apis/lea.io/v1alpha1: the names of the applied CRD (singular,
 * shortNames, categories), else the built-in ones */
static json_object *sessions_resource_list(kf_server *s)
{
  static const char *const verbs[] = {"delete", "deletecollection", "get",
                                      "list", "patch", "create", "update",
                                      "watch", NULL};
  static const char *const sverbs[] = {"get", "patch", "update", NULL};
  static const char *const shorts[] = {"sess", NULL};
  json_object *l = json_object_new_object(), *rs = json_object_new_array(),
    *r = json_object_new_object(), *st = json_object_new_object(), *v;
  json_object *names = kf_crd_names(kf_sessions_crd(s));
  kf_set_str(l, "kind", "APIResourceList");
  kf_set_str(l, "apiVersion", "v1");
  kf_set_str(l, "groupVersion", "lea.io/v1alpha1");
  kf_set_str(r, "name", "sessions");
  kf_set_str(r, "singularName", kf_jstr(names, "singular") ?
             kf_jstr(names, "singular") : "session");
  json_object_object_add(r, "namespaced", json_object_new_boolean(1));
  kf_set_str(r, "kind", "Session");
  json_object_object_add(r, "verbs", str_array(verbs));
  if(names && json_object_object_get_ex(names, "shortNames", &v))
    json_object_object_add(r, "shortNames", json_object_get(v));
  else if(!names)
    json_object_object_add(r, "shortNames", str_array(shorts));
  if(names && json_object_object_get_ex(names, "categories", &v))
    json_object_object_add(r, "categories", json_object_get(v));
  json_object_array_add(rs, r);
  kf_set_str(st, "name", "sessions/status");
  kf_set_str(st, "singularName", "");
  json_object_object_add(st, "namespaced", json_object_new_boolean(1));
  kf_set_str(st, "kind", "Session");
  json_object_object_add(st, "verbs", str_array(sverbs));
  json_object_array_add(rs, st);
  json_object_object_add(l, "resources", rs);
  return l;
}

/* the project's string hash (lib/schash.h) of the document's text, as
 * the ?hash= of /openapi/v3 (a new CRD gives a new hash, so clients do
 * not keep a stale copy; unseeded: the text is the server's own) */
static void doc_hash(json_object *d, char *buf, size_t len)
{
  snprintf(buf, len, "%016" PRIX64, sc_hash_id(
             json_object_to_json_string_ext(d, JSON_C_TO_STRING_PLAIN)));
}

static void add_doc_path(json_object *paths, const char *gv, json_object *d)
{
  json_object *e = json_object_new_object();
  char url[200], h[32];
  doc_hash(d, h, sizeof(h));
  snprintf(url, sizeof(url), "/openapi/v3/%s?hash=%s", gv, h);
  kf_set_str(e, "serverRelativeURL", url);
  json_object_object_add(paths, gv, e);
}

/* /openapi/v3 (the index), /openapi/v3/GV, /openapi/v2; false when path
 * is none of them */
static bool serve_openapi(kf_server *s, struct evhttp_request *req,
                          const char *path)
{
  json_object *crd = kf_sessions_crd(s), *d = NULL;
  if(!strcmp(path, "/openapi/v2")) {
    /* an OpenAPI v2 document (protobuf) without definitions: kubectl's
     * client-side validation, which it uses for `kind: List` files,
     * finds no schema there and leaves the checks to this server
     * (kubectl asks for fieldValidation=Strict on every write) */
    struct evbuffer *b = evbuffer_new();
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "application/com.github.proto-openapi.spec.v2"
                      ".v1.0+protobuf");
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
    return true;
  }
  if(!strcmp(path, "/openapi/v3")) {
    json_object *idx = json_object_new_object(),
      *paths = json_object_new_object();
    d = kf_openapi_crds();
    add_doc_path(paths, "apis/apiextensions.k8s.io/v1", d);
    json_object_put(d);
    if(crd) {
      d = kf_openapi_sessions(crd);
      add_doc_path(paths, "apis/lea.io/v1alpha1", d);
      json_object_put(d);
    }
    json_object_object_add(idx, "paths", paths);
    kf_reply_json(req, 200, idx);
    json_object_put(idx);
    return true;
  }
  if(!strcmp(path, "/openapi/v3/apis/apiextensions.k8s.io/v1"))
    d = kf_openapi_crds();
  else if(!strcmp(path, "/openapi/v3/apis/lea.io/v1alpha1") && crd)
    d = kf_openapi_sessions(crd);
  else
    return false;
  kf_reply_json(req, 200, d);
  json_object_put(d);
  return true;
}

/* the discovery documents that do not change (path, JSON text) */
static const struct {
  const char *path;
  const char *json;
} fixed_docs[] = {
  {"/version",
   "{\"major\":\"1\",\"minor\":\"32\",\"gitVersion\":"
   "\"v1.32.0-fake\",\"platform\":\"linux/amd64\"}"},
  {"/api",
   "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],"
   "\"serverAddressByClientCIDRs\":[{\"clientCIDR\":\"0.0.0.0/0\","
   "\"serverAddress\":\"127.0.0.1\"}]}"},
  {"/api/v1",
   "{\"kind\":\"APIResourceList\",\"groupVersion\":"
   "\"v1\",\"resources\":[{\"name\":\"events\",\"singularName\":"
   "\"event\",\"namespaced\":true,\"kind\":\"Event\",\"verbs\":"
   "[\"create\",\"delete\",\"get\",\"list\",\"patch\",\"update\","
   "\"watch\"],\"shortNames\":[\"ev\"]}]}"},
  {"/apis",
   "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\","
   "\"groups\":[{\"name\":\"lea.io\",\"versions\":[{"
   "\"groupVersion\":\"lea.io/v1alpha1\",\"version\":\"v1alpha1\"}"
   "],\"preferredVersion\":{\"groupVersion\":\"lea.io/v1alpha1\","
   "\"version\":\"v1alpha1\"}},{\"name\":\"coordination.k8s.io\","
   "\"versions\":[{\"groupVersion\":\"coordination.k8s.io/v1\","
   "\"version\":\"v1\"}],\"preferredVersion\":{\"groupVersion\":"
   "\"coordination.k8s.io/v1\",\"version\":\"v1\"}},{\"name\":"
   "\"apiextensions.k8s.io\",\"versions\":[{\"groupVersion\":"
   "\"apiextensions.k8s.io/v1\",\"version\":\"v1\"}],"
   "\"preferredVersion\":{\"groupVersion\":\"apiextensions.k8s.io/v1\","
   "\"version\":\"v1\"}}]}"},
  {"/apis/coordination.k8s.io/v1",
   "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\","
   "\"groupVersion\":\"coordination.k8s.io/v1\",\"resources\":[{"
   "\"name\":\"leases\",\"singularName\":\"lease\",\"namespaced\":"
   "true,\"kind\":\"Lease\",\"verbs\":[\"create\",\"delete\",\"get\","
   "\"list\",\"patch\",\"update\",\"watch\"]}]}"},
  {"/apis/apiextensions.k8s.io/v1",
   "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\","
   "\"groupVersion\":\"apiextensions.k8s.io/v1\",\"resources\":[{"
   "\"name\":\"customresourcedefinitions\",\"singularName\":"
   "\"customresourcedefinition\",\"namespaced\":false,\"kind\":"
   "\"CustomResourceDefinition\",\"verbs\":[\"create\",\"delete\","
   "\"get\",\"list\",\"patch\",\"update\",\"watch\"],"
   "\"shortNames\":[\"crd\",\"crds\"]},{\"name\":"
   "\"customresourcedefinitions/status\",\"singularName\":\"\","
   "\"namespaced\":false,\"kind\":\"CustomResourceDefinition\","
   "\"verbs\":[\"get\",\"patch\",\"update\"]}]}"},
};

void kf_serve_discovery(kf_server *s, struct evhttp_request *req,
                        const char *path)
{
  size_t i;
  if(!strncmp(path, "/openapi/", 9) && serve_openapi(s, req, path))
    return;
  for(i = 0; i < sizeof(fixed_docs) / sizeof(fixed_docs[0]); i++)
    if(!strcmp(path, fixed_docs[i].path)) {
      kf_reply_text(req, 200, fixed_docs[i].json);
      return;
    }
  if(!strcmp(path, "/apis/lea.io/v1alpha1")) {
    json_object *l = sessions_resource_list(s);
    kf_reply_json(req, 200, l);
    json_object_put(l);
    return;
  }
  kf_reply_status(req, 404, "NotFound", "the server could not find the "
                  "requested resource (%s)", path);
}
