/*
 * store_kube_name.c - one controller name per store, on the kube store.
 *
 * The store is the cluster's sessions.lea.io resource, so the record lives
 * on the object that defines it: annotations of the CustomResourceDefinition
 * sessions.lea.io,
 *   lea.io/served-by        the controller name (lea.managed-by)
 *   lea.io/served-by-since  when it was recorded (RFC 3339, wall clock)
 *   lea.io/former-names     names it was renamed from, comma-separated
 * written by a merge patch that carries the CRD's resourceVersion (two
 * controllers claiming at once: one gets 409 and reads again). RBAC grants
 * get and patch on that one CRD only (deploy/rbac.yaml, resourceNames).
 * Where the CRD cannot be read (404: an API server without it, as the
 * tests' fake before `kubectl apply -f deploy/crd.yaml`; 403: an older
 * Role) nothing is recorded and the controller says so at start, as
 * before. No answer at all (the API server unreachable, a TLS failure) is
 * SC_ERR_UNAVAILABLE: the controller starts unrecorded and says so, as a
 * controller must keep running (and retrying) through an API outage. The
 * calls run on a private loop: this happens once, at start.
 */
#include "controller/store/kube/kube_name.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/sctime.h"
#include "controller/kubeclient/http.h"
#include "controller/store/backend.h"

#define CRD_PATH \
  "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/sessions.lea.io"
#define ANN_NAME "lea.io/served-by"
#define ANN_SINCE "lea.io/served-by-since"
#define ANN_FORMER "lea.io/former-names"
#define NAME_TRIES 4

typedef struct call {
  struct event_base *base;
  bool done;
  long status;
  sc_err err;
  json_object *body; /* owned */
  char msg[SC_ERRBUF_SIZE];
} call;

static void on_answer(const kube_http_result *res, void *ud)
{
  call *c = ud;
  c->done = true;
  c->status = res->status;
  c->err = res->err;
  c->body = res->body ? json_object_get(res->body) : NULL;
  snprintf(c->msg, sizeof(c->msg), "%s", res->message ? res->message : "");
  event_base_loopbreak(c->base);
}

/* one request, waited for on h's private loop */
static sc_err run(kube_http *h, struct event_base *base, const char *method,
                  const char *ctype, const char *body, call *c,
                  sc_errbuf *eb)
{
  kube_http_opts o;
  memset(&o, 0, sizeof(o));
  o.timeout_ms = 10000;
  o.retries = 3;
  sc_err err;
  memset(c, 0, sizeof(*c));
  c->base = base;
  err = kube_http_request_ex(h, method, CRD_PATH, ctype, body, &o, on_answer,
                             c, eb);
  if(err)
    return err;
  while(!c->done)
    if(event_base_loop(base, EVLOOP_ONCE) < 0)
      return sc_errf(eb, SC_ERR_INTERNAL, "kube: the private loop failed");
  if(c->err) /* no answer: not a word on the record either way */
    return sc_errf(eb, SC_ERR_UNAVAILABLE, "kube %s %s: %s", method,
                   CRD_PATH, c->msg);
  return SC_OK;
}

static const char *ann(json_object *crd, const char *key)
{
  json_object *m, *a, *v;
  if(json_object_object_get_ex(crd, "metadata", &m) &&
     json_object_object_get_ex(m, "annotations", &a) &&
     json_object_object_get_ex(a, key, &v) &&
     json_object_is_type(v, json_type_string))
    return json_object_get_string(v);
  return NULL;
}

/* the record on crd into out (names copied) */
static sc_err read_record(json_object *crd, const char *fallback,
                          store_served_by *out)
{
  const char *name = ann(crd, ANN_NAME), *since = ann(crd, ANN_SINCE);
  const char *former = ann(crd, ANN_FORMER);
  memset(out, 0, sizeof(*out));
  out->recorded = true;
  if(!name) {
    out->name = fallback ? strdup(fallback) : NULL;
    return fallback && !out->name ? SC_ERR_NOMEM : SC_OK;
  }
  if(!(out->name = strdup(name)))
    return SC_ERR_NOMEM;
  if(since)
    (void)sctime_parse_rfc3339(since, &out->since_ms);
  while(former && *former) {
    size_t n = strcspn(former, ",");
    char **a;
    if(n) {
      a = realloc(out->adopted, (out->n_adopted + 1) * sizeof(*a));
      if(!a)
        return SC_ERR_NOMEM;
      out->adopted = a;
      if(!(a[out->n_adopted] = strndup(former, n)))
        return SC_ERR_NOMEM;
      out->n_adopted++;
    }
    former += n + (former[n] == ',');
  }
  return SC_OK;
}

static bool is_former(const store_served_by *sb, const char *n)
{
  size_t i;
  for(i = 0; n && i < sb->n_adopted; i++)
    if(!strcmp(sb->adopted[i], n))
      return true;
  return false;
}

/* the merge patch that records name (and adds add to the former names) */
static char *patch_body(json_object *crd, const store_served_by *cur,
                        const char *name, const char *add, sc_time since)
{
  json_object *p = json_object_new_object(), *m = json_object_new_object();
  json_object *a = json_object_new_object(), *rvo;
  char when[SCTIME_RFC3339_MAX], *out;
  size_t i, len = 0;
  char former[2048];
  former[0] = '\0';
  for(i = 0; i < cur->n_adopted; i++)
    if(strcmp(cur->adopted[i], name))
      len += (size_t)snprintf(former + len, sizeof(former) - len, "%s%s",
                              len ? "," : "", cur->adopted[i]);
  if(add && strcmp(add, name) && !is_former(cur, add) &&
     len < sizeof(former))
    snprintf(former + len, sizeof(former) - len, "%s%s", len ? "," : "",
             add);
  sctime_format_rfc3339(since ? since : sctime_wall_ms(), when, sizeof(when));
  json_object_object_add(a, ANN_NAME, json_object_new_string(name));
  json_object_object_add(a, ANN_SINCE, json_object_new_string(when));
  if(former[0])
    json_object_object_add(a, ANN_FORMER, json_object_new_string(former));
  json_object_object_add(m, "annotations", a);
  /* the precondition: a claim made meanwhile by another is a 409 */
  if(json_object_object_get_ex(crd, "metadata", &rvo) &&
     json_object_object_get_ex(rvo, "resourceVersion", &rvo))
    json_object_object_add(m, "resourceVersion", json_object_get(rvo));
  json_object_object_add(p, "metadata", m);
  out = strdup(json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN));
  json_object_put(p);
  return out;
}

static sc_err claim(store *st, const char *name, const char *adopt_from,
                    store_served_by *out, bool write, sc_errbuf *eb)
{
  kube_conn conn;
  struct event_base *base = NULL;
  kube_http *h = NULL;
  call c;
  int tries;
  sc_err err;
  memset(out, 0, sizeof(*out));
  memset(&c, 0, sizeof(c));
  err = store_kube_conn(st, &conn, eb);
  if(err)
    return err;
  if(!(base = event_base_new())) {
    kube_conn_clear(&conn);
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  h = kube_http_new(base, &conn, "session-controller (name claim)", eb);
  kube_conn_clear(&conn);
  if(!h) {
    err = SC_ERR_NOMEM;
    goto out;
  }
  for(tries = 0; tries < NAME_TRIES; tries++) {
    store_served_by cur;
    char *body;
    json_object_put(c.body);
    c.body = NULL;
    err = run(h, base, "GET", NULL, NULL, &c, eb);
    if(err)
      goto out;
    if(c.status == 404 || c.status == 403) {
      /* no CRD to record on, or no right to it: as before, unrecorded */
      out->recorded = false;
      out->name = strdup(name);
      err = out->name ? SC_OK : sc_errf(eb, SC_ERR_NOMEM, "out of memory");
      goto out;
    }
    if(c.status != 200 || !c.body) {
      err = sc_errf(eb, SC_ERR_PROTOCOL, "kube GET %s: HTTP %ld %s",
                    CRD_PATH, c.status, c.msg);
      goto out;
    }
    if((err = read_record(c.body, NULL, &cur))) {
      store_served_by_clear(&cur);
      err = sc_errf(eb, err, "out of memory");
      goto out;
    }
    if(!write || (cur.name && !strcmp(cur.name, name) &&
                  (!adopt_from || !strcmp(adopt_from, name) ||
                   is_former(&cur, adopt_from)))) {
      *out = cur; /* nothing to write */
      if(!out->name && !(out->name = strdup(name)))
        err = sc_errf(eb, SC_ERR_NOMEM, "out of memory");
      goto out;
    }
    if(cur.name && strcmp(cur.name, name) &&
       !(adopt_from && !strcmp(adopt_from, cur.name))) {
      char since[SCTIME_RFC3339_MAX];
      sctime_format_rfc3339(cur.since_ms, since, sizeof(since));
      err = sc_errf(eb, SC_ERR_CONFLICT, "store kube is served by controller "
                    "'%s' (since %s, annotation %s of the CRD "
                    "sessions.lea.io); refusing to start as '%s'; to rename "
                    "use --adopt-from %s", cur.name, since, ANN_NAME, name,
                    cur.name);
      store_served_by_clear(&cur);
      goto out;
    }
    body = patch_body(c.body, &cur, name,
                      cur.name && strcmp(cur.name, name) ? cur.name
                                                         : adopt_from,
                      cur.name && !strcmp(cur.name, name) ? cur.since_ms : 0);
    store_served_by_clear(&cur);
    if(!body) {
      err = sc_errf(eb, SC_ERR_NOMEM, "out of memory");
      goto out;
    }
    json_object_put(c.body);
    c.body = NULL;
    err = run(h, base, "PATCH", "application/merge-patch+json", body, &c, eb);
    free(body);
    if(err)
      goto out;
    if(c.status == 409)
      continue; /* claimed meanwhile: read again */
    if(c.status != 200 || !c.body) {
      err = sc_errf(eb, SC_ERR_PROTOCOL, "kube PATCH %s: HTTP %ld %s",
                    CRD_PATH, c.status, c.msg);
      goto out;
    }
    if((err = read_record(c.body, name, out)))
      err = sc_errf(eb, err, "out of memory");
    goto out;
  }
  err = sc_errf(eb, SC_ERR_CONFLICT, "kube PATCH %s: conflicted %d times",
                CRD_PATH, NAME_TRIES);
out:
  json_object_put(c.body);
  kube_http_free(h);
  event_base_free(base);
  if(err)
    store_served_by_clear(out);
  return err;
}

sc_err kube_claim_name(store *st, const char *name, const char *adopt_from,
                       store_served_by *out, sc_errbuf *eb)
{
  return claim(st, name, adopt_from, out, true, eb);
}

sc_err kube_served_by_get(store *st, store_served_by *out, sc_errbuf *eb)
{
  sc_err err = claim(st, "", NULL, out, false, eb);
  if(!err && out->name && !*out->name) {
    free(out->name);
    out->name = NULL;
  }
  return err;
}
