/*
 * calls.c - the calls of the Cube client (cube.h): each checks its
 * arguments (a bad one ends the call through its callback, no request
 * sent), builds its request (path, query, body) and queues it. What the
 * answers mean is in answers.c. See cube_int.h.
 */
#include "controller/cube/cube_int.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a call returns when cube_call_new() refused it. */
static sc_err refused(const cube_client *c, cube_cb cb)
{
  if(!c || !cb)
    return SC_ERR_INVALID;
  return c->closing ? SC_ERR_UNAVAILABLE : SC_ERR_NOMEM;
}

/* The request the call was pointed at (err: cube_set_request's answer)
 * goes into the queue, or the call ends with why it could not be built. */
static sc_err queue(cube_call *k, sc_err err, bool front)
{
  if(err)
    return cube_call_fail(k, err, "cannot build the request: %s",
                          sc_strerror(err));
  cube_submit(k, front);
  return SC_OK;
}

static bool timeout_valid(int64_t timeout_s)
{
  return timeout_s >= 0 && timeout_s <= 2147483647;
}

static sc_err bad_timeout(cube_call *k, int64_t t)
{
  return cube_call_fail(k, SC_ERR_INVALID,
                        "timeout %lld s is not 0..2147483647", (long long)t);
}

sc_err cube_list_request(cube_call *k, const char *token)
{
  dynbuf q;
  sc_err err;
  char *query;
  dynbuf_init(&q, 64 * 1024);
  err = dynbuf_addstr(&q, k->list_query);
  if(!err && token) {
    err = dynbuf_addstr(&q, "&nextToken=");
    if(!err)
      err = cube_pct_encode(token, strlen(token), &q);
  }
  query = err ? NULL : dynbuf_take(&q);
  dynbuf_free(&q);
  if(!err && !query)
    err = SC_ERR_NOMEM;
  if(!err)
    err = cube_set_request(k, "GET", "/v2/sandboxes", query, NULL, false,
                           false, k->c->list_cap);
  free(query);
  return err;
}

static sc_err list_start(cube_client *c, cube_op op, const sc_kvlist *filter,
                         const char *state, int limit, const char *token,
                         cube_cb cb, void *ud)
{
  cube_call *k = cube_call_new(c, op, cb, ud);
  dynbuf q;
  sc_err err = SC_OK;
  if(!k)
    return refused(c, cb);
  snprintf(k->path, sizeof(k->path), "/v2/sandboxes");
  k->method = "GET";
  if(state && strcmp(state, "running") && strcmp(state, "paused"))
    return cube_call_fail(k, SC_ERR_INVALID,
                          "state \"%.32s\" is not running or paused", state);
  if(limit < 0 || limit > CUBE_PAGE_LIMIT)
    return cube_call_fail(k, SC_ERR_INVALID, "limit %d is not 1..%d", limit,
                          CUBE_PAGE_LIMIT);
  k->limit = limit ? limit : CUBE_PAGE_LIMIT;
  dynbuf_init(&q, 64 * 1024);
  if(filter && filter->n) {
    err = dynbuf_addstr(&q, "metadata=");
    if(!err)
      err = cube_meta_encode(filter, &q);
    if(!err)
      err = dynbuf_addstr(&q, "&");
  }
  if(!err && state)
    err = dynbuf_printf(&q, "state=%s&", state);
  if(!err)
    err = dynbuf_printf(&q, "limit=%d", k->limit);
  if(!err) {
    k->list_query = dynbuf_take(&q);
    if(!k->list_query)
      err = SC_ERR_NOMEM;
  }
  dynbuf_free(&q);
  if(!err)
    err = cube_list_request(k, token);
  if(err)
    return cube_call_fail(k, err, "cannot build the request: %s%s",
                          sc_strerror(err), err == SC_ERR_INVALID
                                              ? " (an empty metadata key)"
                                              : "");
  cube_submit(k, false);
  return SC_OK;
}

sc_err cube_list(cube_client *c, const sc_kvlist *filter, const char *state,
                 cube_cb cb, void *ud)
{
  return list_start(c, CUBE_OP_LIST, filter, state, CUBE_PAGE_LIMIT, NULL,
                    cb, ud);
}

sc_err cube_list_page(cube_client *c, const sc_kvlist *filter,
                      const char *state, int limit, const char *next_token,
                      cube_cb cb, void *ud)
{
  return list_start(c, CUBE_OP_LIST_PAGE, filter, state, limit, next_token,
                    cb, ud);
}

/* A call on one sandbox: method + "/sandboxes/{id}" + suffix. body (NULL:
 * none) is the call's. urgent: ahead of the queue and the token bucket. */
static sc_err id_call_ex(cube_client *c, cube_op op, const char *id,
                         const char *method, const char *suffix, char *body,
                         bool post, bool long_timeout, bool urgent,
                         cube_cb cb, void *ud)
{
  cube_call *k = cube_call_new(c, op, cb, ud);
  char path[200];
  if(!k) {
    free(body);
    return refused(c, cb);
  }
  k->method = method;
  snprintf(k->path, sizeof(k->path), "/sandboxes/%.64s%s", id ? id : "",
           suffix);
  if(!cube_id_valid(id)) {
    free(body);
    return cube_call_fail(k, SC_ERR_INVALID, "sandbox ID \"%.64s\" is not "
                          "1..%d bytes of [A-Za-z0-9-]", id ? id : "(null)",
                          CUBE_ID_MAX);
  }
  k->id = strdup(id);
  if(!k->id) {
    free(body);
    return cube_call_fail(k, SC_ERR_NOMEM, "out of memory");
  }
  snprintf(path, sizeof(path), "/sandboxes/%s%s", id, suffix);
  k->urgent = urgent;
  return queue(k, cube_set_request(k, method, path, NULL, body, post,
                                   long_timeout, c->body_cap),
               urgent);
}

static sc_err id_call(cube_client *c, cube_op op, const char *id,
                      const char *method, const char *suffix, char *body,
                      bool post, bool long_timeout, cube_cb cb, void *ud)
{
  return id_call_ex(c, op, id, method, suffix, body, post, long_timeout,
                    false, cb, ud);
}

/* A call whose body is {"timeout":N} (connect, set-timeout). */
static sc_err timeout_call(cube_client *c, cube_op op, const char *id,
                           const char *suffix, int64_t timeout_s,
                           bool long_timeout, bool urgent, cube_cb cb,
                           void *ud)
{
  char buf[48], *body;
  if(!timeout_valid(timeout_s)) {
    cube_call *k = cube_call_new(c, op, cb, ud);
    if(!k)
      return refused(c, cb);
    k->method = "POST";
    snprintf(k->path, sizeof(k->path), "/sandboxes/{id}%s", suffix);
    return bad_timeout(k, timeout_s);
  }
  snprintf(buf, sizeof(buf), "{\"timeout\":%lld}", (long long)timeout_s);
  if(!(body = strdup(buf)))
    return refused(c, cb);
  return id_call_ex(c, op, id, "POST", suffix, body, true, long_timeout,
                    urgent, cb, ud);
}

sc_err cube_get(cube_client *c, const char *id, cube_cb cb, void *ud)
{
  return id_call(c, CUBE_OP_GET, id, "GET", "", NULL, false, false, cb, ud);
}

sc_err cube_get_now(cube_client *c, const char *id, cube_cb cb, void *ud)
{
  return id_call_ex(c, CUBE_OP_GET, id, "GET", "", NULL, false, false, true,
                    cb, ud);
}

sc_err cube_pause(cube_client *c, const char *id, cube_cb cb, void *ud)
{
  return id_call(c, CUBE_OP_PAUSE, id, "POST", "/pause", NULL, true, true,
                 cb, ud);
}

sc_err cube_connect(cube_client *c, const char *id, int64_t timeout_s,
                    cube_cb cb, void *ud)
{
  return timeout_call(c, CUBE_OP_CONNECT, id, "/connect", timeout_s, true,
                      false, cb, ud);
}

sc_err cube_set_timeout(cube_client *c, const char *id, int64_t timeout_s,
                        cube_cb cb, void *ud)
{
  return timeout_call(c, CUBE_OP_SET_TIMEOUT, id, "/timeout", timeout_s,
                      false, false, cb, ud);
}

sc_err cube_set_timeout_now(cube_client *c, const char *id,
                            int64_t timeout_s, cube_cb cb, void *ud)
{
  return timeout_call(c, CUBE_OP_SET_TIMEOUT, id, "/timeout", timeout_s,
                      false, true, cb, ud);
}

sc_err cube_delete(cube_client *c, const char *id, cube_cb cb, void *ud)
{
  return id_call(c, CUBE_OP_DELETE, id, "DELETE", "", NULL, false, false, cb,
                 ud);
}

sc_err cube_delete_now(cube_client *c, const char *id, cube_cb cb, void *ud)
{
  return id_call_ex(c, CUBE_OP_DELETE, id, "DELETE", "", NULL, false, false,
                    true, cb, ud);
}

static json_object *kv_object(const sc_kvlist *l)
{
  json_object *o = json_object_new_object();
  size_t i;
  for(i = 0; o && l && i < l->n; i++) {
    json_object *v = json_object_new_string(l->items[i].value);
    if(!v || json_object_object_add(o, l->items[i].key, v)) {
      json_object_put(v);
      json_object_put(o);
      return NULL;
    }
  }
  return o;
}

static json_object *str_array(char *const *v, size_t n)
{
  json_object *a = json_object_new_array();
  size_t i;
  for(i = 0; a && i < n; i++) {
    json_object *s = json_object_new_string(v[i]);
    if(!s || json_object_array_add(a, s)) {
      json_object_put(s);
      json_object_put(a);
      return NULL;
    }
  }
  return a;
}

/* network {allowOut, denyOut, allowPublicTraffic}: the parts set */
static json_object *network_object(const cube_create_req *req)
{
  json_object *o = json_object_new_object(), *v;
  if(o && req->n_allow_out &&
     (!(v = str_array(req->allow_out, req->n_allow_out)) ||
      json_object_object_add(o, "allowOut", v)))
    goto fail;
  if(o && req->n_deny_out &&
     (!(v = str_array(req->deny_out, req->n_deny_out)) ||
      json_object_object_add(o, "denyOut", v)))
    goto fail;
  if(o && req->allow_public &&
     json_object_object_add(
       o, "allowPublicTraffic",
       json_object_new_boolean(req->allow_public == SESSION_OPT_TRUE)))
    goto fail;
  return o;
fail:
  json_object_put(o);
  return NULL;
}

static json_object *volume_array(const cube_create_req *req)
{
  json_object *a = json_object_new_array();
  size_t i;
  for(i = 0; a && i < req->n_volume_mounts; i++) {
    const session_volume_mount *m = &req->volume_mounts[i];
    json_object *o = json_object_new_object();
    if(!o ||
       json_object_object_add(o, "name", json_object_new_string(m->name)) ||
       json_object_object_add(o, "path", json_object_new_string(m->path)) ||
       (m->read_only &&
        json_object_object_add(o, "readOnly", json_object_new_boolean(1))) ||
       json_object_array_add(a, o)) {
      json_object_put(o);
      json_object_put(a);
      return NULL;
    }
  }
  return a;
}

/* The create body, both dialects' pause-on-timeout and auto-resume
 * fields: E2B reads autoPause and autoResume.enabled, Cube reads lifecycle
 * (which wins over the flat ones), so both say the same. */
static char *create_body(const cube_create_req *req)
{
  json_object *o = json_object_new_object(), *ar, *lc;
  json_bool resume = !req->no_auto_resume;
  char *s = NULL;
  bool ok = o != NULL;
#define ADD(key, val)                                                       \
  do {                                                                      \
    json_object *v_ = (val);                                                \
    if(!ok || !v_ || json_object_object_add(o, key, v_)) {                  \
      json_object_put(v_);                                                  \
      ok = false;                                                           \
    }                                                                       \
  } while(0)
  ADD("templateID", json_object_new_string(req->template_id));
  ADD("timeout", json_object_new_int64(req->timeout_s));
  ADD("autoPause", json_object_new_boolean(1));
  ar = json_object_new_object();
  if(ar && json_object_object_add(ar, "enabled",
                                   json_object_new_boolean(resume)))
    ok = false;
  ADD("autoResume", ar);
  lc = json_object_new_object();
  if(lc && (json_object_object_add(lc, "onTimeout",
                                   json_object_new_string("pause")) ||
            json_object_object_add(lc, "autoResume",
                                   json_object_new_boolean(resume))))
    ok = false;
  ADD("lifecycle", lc);
  ADD("metadata", kv_object(req->metadata));
  ADD("envVars", kv_object(req->env_vars));
  if(req->allow_internet)
    ADD("allow_internet_access",
        json_object_new_boolean(req->allow_internet == SESSION_OPT_TRUE));
  if(req->n_allow_out || req->n_deny_out || req->allow_public)
    ADD("network", network_object(req));
  if(req->n_volume_mounts)
    ADD("volumeMounts", volume_array(req));
#undef ADD
  if(ok)
    s = strdup(json_object_to_json_string_ext(
      o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(o);
  return s;
}

sc_err cube_reserve(cube_client *c, cube_cb cb, void *ud)
{
  cube_call *k = cube_call_new(c, CUBE_OP_RESERVE, cb, ud);
  if(!k)
    return refused(c, cb);
  k->method = "RESERVE";
  snprintf(k->path, sizeof(k->path), "(a turn for a create)");
  cube_submit(k, false);
  return SC_OK;
}

static sc_err create_call(cube_client *c, const cube_create_req *req,
                          bool reserved, cube_cb cb, void *ud)
{
  cube_call *k = cube_call_new(c, CUBE_OP_CREATE, cb, ud);
  char *body;
  if(reserved && c->reserved > 0)
    c->reserved--; /* its slot: it goes first in the queue (cube_pump) */
  if(!k)
    return refused(c, cb);
  k->prepaid = reserved;
  k->method = "POST";
  snprintf(k->path, sizeof(k->path), "/sandboxes");
  if(!req || !req->template_id || !req->template_id[0])
    return cube_call_fail(k, SC_ERR_INVALID, "templateID is required");
  if(!timeout_valid(req->timeout_s))
    return bad_timeout(k, req->timeout_s);
  body = create_body(req);
  if(!body)
    return cube_call_fail(k, SC_ERR_NOMEM,
                          "cannot build the body: out of memory");
  return queue(k, cube_set_request(k, "POST", "/sandboxes", NULL, body, true,
                                   false, c->body_cap),
               reserved);
}

sc_err cube_create(cube_client *c, const cube_create_req *req, cube_cb cb,
                   void *ud)
{
  return create_call(c, req, false, cb, ud);
}

sc_err cube_create_reserved(cube_client *c, const cube_create_req *req,
                            cube_cb cb, void *ud)
{
  return create_call(c, req, true, cb, ud);
}

sc_err cube_probe(cube_client *c, cube_cb cb, void *ud)
{
  cube_call *k = cube_call_new(c, CUBE_OP_PROBE, cb, ud);
  if(!k)
    return refused(c, cb);
  return queue(k, cube_set_request(k, "GET", "/health", NULL, NULL, false,
                                   false, c->body_cap),
               false);
}
