/* kf_list.c - the fake API server's lists (chunked by ?limit and
 * ?continue) and Tables (built-in columns, or the printer columns of the
 * applied CRD). */
#include "cmd/kube-apiserver-fake/kf_server.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/kube-apiserver-fake/kf_crd.h"
#include "cmd/kube-apiserver-fake/kf_schema.h"
#include "lib/sctime.h"

static int cmp_obj(const void *a, const void *b)
{
  const kf_obj *x = *(kf_obj *const *)a, *y = *(kf_obj *const *)b;
  int c = strcmp(x->ns, y->ns);
  return c ? c : strcmp(x->name, y->name);
}

/* the built-in Table columns of each resource, as kubectl shows them
 * (sessions: until a CRD with additionalPrinterColumns is applied) */
static const char *const table_cols[KF_N_RES][6] = {
  {"Name", "State", "Phase", "Sandbox", "Age", NULL},
  {"Last Seen", "Type", "Reason", "Object", "Message", NULL},
  {"Name", "Holder", "Age", NULL, NULL, NULL},
  {"Name", "Created At", NULL, NULL, NULL, NULL},
};

static void add_cell(json_object *cells, const char *v)
{
  json_object_array_add(cells, json_object_new_string(v ? v : ""));
}

static void age_of(const char *ts, char *age, size_t len)
{
  sc_time t0 = 0;
  snprintf(age, len, "<unknown>");
  if(ts && !sctime_parse_rfc3339(ts, &t0))
    sctime_format_age(sctime_wall_ms() - t0, age, len);
}

static void row_cells(int res, json_object *o, json_object *cells)
{
  json_object *spec = kf_jobj(o, "spec"), *st = kf_jobj(o, "status"),
    *m = kf_jobj(o, "metadata");
  char age[32], obj[600];
  json_object *io;
  switch(res) {
  case KF_RES_SESSIONS:
    add_cell(cells, kf_jstr(m, "name"));
    add_cell(cells, kf_jstr(spec, "state"));
    add_cell(cells, kf_jstr(st, "phase"));
    add_cell(cells, kf_jstr(st, "sandboxID"));
    age_of(kf_jstr(m, "creationTimestamp"), age, sizeof(age));
    add_cell(cells, age);
    break;
  case KF_RES_EVENTS:
    age_of(kf_jstr(o, "lastTimestamp"), age, sizeof(age));
    add_cell(cells, age);
    add_cell(cells, kf_jstr(o, "type"));
    add_cell(cells, kf_jstr(o, "reason"));
    io = kf_jobj(o, "involvedObject");
    snprintf(obj, sizeof(obj), "%s/%s",
             kf_jstr(io, "kind") ? kf_jstr(io, "kind") : "",
             kf_jstr(io, "name") ? kf_jstr(io, "name") : "");
    add_cell(cells, obj);
    add_cell(cells, kf_jstr(o, "message"));
    break;
  case KF_RES_LEASES:
    add_cell(cells, kf_jstr(m, "name"));
    add_cell(cells, kf_jstr(spec, "holderIdentity"));
    age_of(kf_jstr(m, "creationTimestamp"), age, sizeof(age));
    add_cell(cells, age);
    break;
  default: /* customresourcedefinitions */
    add_cell(cells, kf_jstr(m, "name"));
    add_cell(cells, kf_jstr(m, "creationTimestamp"));
    break;
  }
}

/* the cell of a CRD printer column, as the API server makes it: a string
 * column prints the value (JSON for a non-string), the others keep the
 * value when it has their type; a date becomes an age ("5m"; a time more
 * than a second ahead, or not RFC 3339: "<invalid>"); nothing there:
 * null (kubectl prints an empty cell) */
static json_object *crd_cell(json_object *col, json_object *o)
{
  const char *type = kf_jstr(col, "type"), *jp = kf_jstr(col, "jsonPath");
  json_object *v = kf_jsonpath_get(o, jp);
  if(!v || !type)
    return NULL;
  if(!strcmp(type, "string"))
    return json_object_is_type(v, json_type_string) ? json_object_get(v) :
           json_object_new_string(json_object_to_json_string_ext(
             v, JSON_C_TO_STRING_PLAIN));
  if(!strcmp(type, "integer") && (json_object_is_type(v, json_type_int) ||
                                  json_object_is_type(v, json_type_double)))
    return json_object_new_int64(json_object_get_int64(v));
  if(!strcmp(type, "number") && (json_object_is_type(v, json_type_int) ||
                                 json_object_is_type(v, json_type_double)))
    return json_object_get(v);
  if(!strcmp(type, "boolean") && json_object_is_type(v, json_type_boolean))
    return json_object_get(v);
  if(!strcmp(type, "date") && json_object_is_type(v, json_type_string)) {
    sc_time t;
    char age[32];
    int64_t d;
    if(sctime_parse_rfc3339(json_object_get_string(v), &t))
      return json_object_new_string("<invalid>");
    d = sctime_wall_ms() - t;
    if(d / 1000 < -1)
      return json_object_new_string("<invalid>");
    sctime_format_age(d, age, sizeof(age));
    return json_object_new_string(age);
  }
  return NULL;
}

static json_object *col_def(const char *name, const char *type,
                            const char *format, const char *desc,
                            int priority)
{
  json_object *d = json_object_new_object();
  kf_set_str(d, "name", name);
  kf_set_str(d, "type", type);
  kf_set_str(d, "format", format ? format : "");
  kf_set_str(d, "description", desc ? desc : "");
  json_object_object_add(d, "priority", json_object_new_int(priority));
  return d;
}

/* a Table of objs (v[0..n)) of resource res; the columns of the applied
 * CRD for sessions, else the built-in ones */
json_object *kf_table_of(kf_server *s, int res, json_object **v,
                         size_t n)
{
  json_object *t = json_object_new_object(), *cols, *rows, *m;
  json_object *crdcols = res == KF_RES_SESSIONS ?
                         kf_crd_columns(kf_sessions_crd(s)) : NULL;
  size_t i, c;
  char rv[32];
  kf_set_str(t, "kind", "Table");
  kf_set_str(t, "apiVersion", "meta.k8s.io/v1");
  m = json_object_new_object();
  snprintf(rv, sizeof(rv), "%" PRId64, s->rv);
  kf_set_str(m, "resourceVersion", rv);
  json_object_object_add(t, "metadata", m);
  cols = json_object_new_array();
  if(crdcols) {
    json_object_array_add(cols, col_def("Name", "string", "name", "Name must "
                                        "be unique within a namespace.", 0));
    for(c = 0; c < json_object_array_length(crdcols); c++) {
      json_object *cd = json_object_array_get_idx(crdcols, c), *pr;
      int prio = json_object_object_get_ex(cd, "priority", &pr) ?
                 json_object_get_int(pr) : 0;
      json_object_array_add(cols, col_def(kf_jstr(cd, "name"),
                                          kf_jstr(cd, "type"),
                                          kf_jstr(cd, "format"),
                                          kf_jstr(cd, "description"), prio));
    }
  }
  else
    for(c = 0; c < 6 && table_cols[res][c]; c++) {
      const char *cn = table_cols[res][c];
      json_object_array_add(cols, col_def(cn, !strcmp(cn, "Created At") ?
                                          "date" : "string",
                                          !strcmp(cn, "Name") ? "name" : "",
                                          NULL, 0));
    }
  json_object_object_add(t, "columnDefinitions", cols);
  rows = json_object_new_array();
  for(i = 0; i < n; i++) {
    json_object *row = json_object_new_object(), *cells =
      json_object_new_array(), *po = json_object_new_object(), *pm = NULL;
    if(crdcols) {
      json_object_array_add(cells, json_object_new_string(
        kf_jstr(kf_jobj(v[i], "metadata"), "name") ?
        kf_jstr(kf_jobj(v[i], "metadata"), "name") : ""));
      for(c = 0; c < json_object_array_length(crdcols); c++)
        json_object_array_add(cells, crd_cell(json_object_array_get_idx(
                                                crdcols, c), v[i]));
    }
    else
      row_cells(res, v[i], cells);
    json_object_object_add(row, "cells", cells);
    kf_set_str(po, "kind", "PartialObjectMetadata");
    kf_set_str(po, "apiVersion", "meta.k8s.io/v1");
    if(kf_jobj(v[i], "metadata"))
      json_object_deep_copy(kf_jobj(v[i], "metadata"), &pm, NULL);
    json_object_object_add(po, "metadata", pm ? pm : json_object_new_object());
    json_object_object_add(row, "object", po);
    json_object_array_add(rows, row);
  }
  json_object_object_add(t, "rows", rows);
  return t;
}

/* A continue token: "RV/NS/NAME", the list's version and the last
 * object of the page (names hold no '/'). false when malformed. */
static bool parse_cont(const char *t, int64_t *rv, char *ns, size_t nslen,
                       char *name, size_t namelen)
{
  const char *a = strchr(t, '/'), *b = a ? strchr(a + 1, '/') : NULL;
  char num[32];
  if(!a || !b || (size_t)(a - t) >= sizeof(num) ||
     (size_t)(b - a - 1) >= nslen || strlen(b + 1) >= namelen ||
     strchr(b + 1, '/'))
    return false;
  memcpy(num, t, (size_t)(a - t));
  num[a - t] = '\0';
  memcpy(ns, a + 1, (size_t)(b - a - 1));
  ns[b - a - 1] = '\0';
  snprintf(name, namelen, "%s", b + 1);
  return kf_parse_rv(num, rv);
}

/* A list, by the API's chunking rules: ?limit=N gives at most N objects
 * and, when more are left, metadata.continue and remainingItemCount;
 * ?continue=T the objects after the token's, with the version of the
 * first page (a real API server serves the continued pages from that
 * snapshot; the fake from what it holds now, which a watch from that
 * version makes good). A token older than the kept history (after
 * /_fake/compact) is 410 Expired, a malformed one 400. */
void kf_serve_list(kf_server *s, struct evhttp_request *req,
                   const kf_route *rt)
{
  kf_obj **v = calloc(s->n_objs + 1, sizeof(*v));
  size_t i, n = 0, from = 0, cnt;
  json_object *o, *items, *m;
  const kf_res *r = &kf_resources[rt->res];
  char rv[32], kind[64], av[64], cns[256] = "", cname[256] = "";
  char cont[600] = "";
  int64_t list_rv = s->rv;
  if(rt->cont[0]) {
    if(!parse_cont(rt->cont, &list_rv, cns, sizeof(cns), cname,
                   sizeof(cname))) {
      kf_reply_status(req, 400, "BadRequest", "continue key is not valid: %s",
                      rt->cont);
      free(v);
      return;
    }
    if(list_rv < s->compacted) {
      kf_reply_status(req, 410, "Expired", "The provided continue parameter "
                      "is too old to display a consistent list result. You "
                      "can start a new list without the continue "
                      "parameter.");
      free(v);
      return;
    }
  }
  /* rt->name: the Table of that one object (kubectl get KIND NAME) */
  for(i = 0; i < s->n_objs; i++)
    if(s->objs[i].res == rt->res && (!rt->ns[0] ||
                                     !strcmp(s->objs[i].ns, rt->ns)) &&
       (!rt->name[0] || !strcmp(s->objs[i].name, rt->name)) &&
       kf_fsel_match(&rt->fsel, s->objs[i].ns, s->objs[i].name) &&
       kf_lsel_match(&rt->lsel, kf_jobj(kf_jobj(s->objs[i].o, "metadata"),
                                        "labels")))
      v[n++] = &s->objs[i];
  qsort(v, n, sizeof(*v), cmp_obj);
  if(rt->cont[0])
    while(from < n) {
      int c = strcmp(v[from]->ns, cns);
      if(c > 0 || (c == 0 && strcmp(v[from]->name, cname) > 0))
        break;
      from++;
    }
  cnt = n - from;
  if(rt->limit > 0 && (size_t)rt->limit < cnt) {
    cnt = (size_t)rt->limit;
    snprintf(cont, sizeof(cont), "%" PRId64 "/%s/%s", list_rv,
             v[from + cnt - 1]->ns, v[from + cnt - 1]->name);
  }
  snprintf(rv, sizeof(rv), "%" PRId64, list_rv);
  if(rt->table) {
    json_object **jv = calloc(cnt + 1, sizeof(*jv));
    for(i = 0; jv && i < cnt; i++)
      jv[i] = v[from + i]->o;
    o = kf_table_of(s, rt->res, jv, jv ? cnt : 0);
    free(jv);
    m = kf_jobj(o, "metadata");
    kf_set_str(m, "resourceVersion", rv);
  }
  else {
    o = json_object_new_object();
    snprintf(kind, sizeof(kind), "%sList", r->kind);
    snprintf(av, sizeof(av), "%s%s%s", r->group, *r->group ? "/" : "",
             r->version);
    kf_set_str(o, "kind", kind);
    kf_set_str(o, "apiVersion", av);
    m = json_object_new_object();
    kf_set_str(m, "resourceVersion", rv);
    json_object_object_add(o, "metadata", m);
    items = json_object_new_array();
    for(i = 0; i < cnt; i++)
      json_object_array_add(items, json_object_get(v[from + i]->o));
    json_object_object_add(o, "items", items);
  }
  if(cont[0] && m) {
    kf_set_str(m, "continue", cont);
    json_object_object_add(m, "remainingItemCount",
                           json_object_new_int64((int64_t)(n - from - cnt)));
  }
  kf_reply_json(req, 200, o);
  json_object_put(o);
  free(v);
}
