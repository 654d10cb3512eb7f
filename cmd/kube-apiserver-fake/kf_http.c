/* kf_http.c - the fake API server's HTTP side: replies (JSON and
 * Status objects), request bodies, and the URL routing of /api and /apis
 * paths with their query parameters. */
#include "cmd/kube-apiserver-fake/kf_server.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

void kf_reply_json(struct evhttp_request *req, int code,
                   json_object *o)
{
  struct evbuffer *b = evbuffer_new();
  const char *txt = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
  evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                    "application/json");
  evbuffer_add(b, txt, strlen(txt));
  evbuffer_add(b, "\n", 1);
  evhttp_send_reply(req, code, code < 300 ? "OK" : "Error", b);
  evbuffer_free(b);
}

json_object *kf_status_obj(int code, const char *reason,
                           const char *msg)
{
  json_object *o = json_object_new_object();
  json_object_object_add(o, "kind", json_object_new_string("Status"));
  json_object_object_add(o, "apiVersion", json_object_new_string("v1"));
  json_object_object_add(o, "metadata", json_object_new_object());
  json_object_object_add(o, "status", json_object_new_string("Failure"));
  json_object_object_add(o, "message", json_object_new_string(msg));
  json_object_object_add(o, "reason", json_object_new_string(reason));
  json_object_object_add(o, "code", json_object_new_int(code));
  return o;
}

void kf_reply_status(struct evhttp_request *req, int code,
                     const char *reason, const char *fmt, ...)
{
  char msg[600];
  va_list ap;
  json_object *o;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  o = kf_status_obj(code, reason, msg);
  kf_reply_json(req, code, o);
  json_object_put(o);
}

/* t: JSON text */
void kf_reply_text(struct evhttp_request *req, int code, const char *t)
{
  struct evbuffer *b = evbuffer_new();
  evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                    "application/json");
  evbuffer_add(b, t, strlen(t));
  evhttp_send_reply(req, code, "OK", b);
  evbuffer_free(b);
}

sc_err kf_read_body(struct evhttp_request *req, json_object **out)
{
  struct evbuffer *in = evhttp_request_get_input_buffer(req);
  size_t len = evbuffer_get_length(in);
  char *buf;
  json_tokener *tok;
  *out = NULL;
  if(len > KF_BODY_MAX)
    return SC_ERR_TOO_LARGE;
  buf = malloc(len + 1);
  if(!buf)
    return SC_ERR_NOMEM;
  evbuffer_copyout(in, buf, len);
  buf[len] = 0;
  tok = json_tokener_new();
  *out = json_tokener_parse_ex(tok, buf, (int)len);
  if(json_tokener_get_error(tok) != json_tokener_success ||
     tok->char_offset != (int)len) {
    json_object_put(*out);
    *out = NULL;
  }
  json_tokener_free(tok);
  free(buf);
  return *out ? SC_OK : SC_ERR_INVALID;
}

static int split(char *path, char **seg, int max)
{
  int n = 0;
  char *p = path, *save = NULL, *t;
  while((t = strtok_r(p, "/", &save)) && n < max) {
    seg[n++] = t;
    p = NULL;
  }
  return n;
}

const char *kf_qget(struct evkeyvalq *q, const char *k)
{
  return evhttp_find_header(q, k);
}

/* ?fieldSelector=T[,T...], T = FIELD=V, FIELD==V or FIELD!=V; the
 * API server's message when refused */
static void parse_fsel(const char *sel, kf_route *rt)
{
  const char *p = sel;
  while(*p) {
    const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
    const char *op = p;
    kf_fsel_term *t;
    size_t flen, vlen;
    while(op < end && *op != '=' && *op != '!')
      op++;
    if(op == end || (*op == '!' && (op + 1 == end || op[1] != '='))) {
      snprintf(rt->fsel_err, sizeof(rt->fsel_err), "invalid selector: "
               "'%.*s'; can't understand '%.*s'", 200, sel,
               (int)(end - p) > 150 ? 150 : (int)(end - p), p);
      return;
    }
    flen = (size_t)(op - p);
    if(rt->fsel.n == KF_FSEL_MAX) {
      snprintf(rt->fsel_err, sizeof(rt->fsel_err), "invalid selector: more "
               "than %d terms", KF_FSEL_MAX);
      return;
    }
    t = &rt->fsel.t[rt->fsel.n];
    memset(t, 0, sizeof(*t));
    if(*op == '!') {
      t->neg = true;
      op += 2;
    }
    else
      op += op + 1 < end && op[1] == '=' ? 2 : 1;
    if(flen == 13 && !strncmp(p, "metadata.name", 13))
      t->ns = false;
    else if(flen == 18 && !strncmp(p, "metadata.namespace", 18))
      t->ns = true;
    else {
      snprintf(rt->fsel_err, sizeof(rt->fsel_err), "field label not "
               "supported: %.*s", (int)(flen > 200 ? 200 : flen), p);
      return;
    }
    vlen = (size_t)(end - op);
    if(vlen >= sizeof(t->value)) {
      snprintf(rt->fsel_err, sizeof(rt->fsel_err), "invalid selector: the "
               "value of %.*s is too long", (int)flen, p);
      return;
    }
    memcpy(t->value, op, vlen);
    t->value[vlen] = '\0';
    rt->fsel.n++;
    p = comma ? comma + 1 : end;
  }
}

bool kf_fsel_match(const kf_fsel *f, const char *ns, const char *name)
{
  size_t i;
  for(i = 0; i < f->n; i++) {
    const char *have = f->t[i].ns ? ns : name;
    bool eq = have && !strcmp(have, f->t[i].value);
    if(eq == f->t[i].neg)
      return false;
  }
  return true;
}

/* a label key: [PREFIX/]NAME, NAME 1-63 of [A-Za-z0-9._-] alphanumeric
 * at both ends, PREFIX a DNS subdomain (checked loosely: 1-253 of
 * [a-z0-9.-]) */
static bool label_key_ok(const char *k, size_t n)
{
  const char *slash = memchr(k, '/', n), *nm = slash ? slash + 1 : k;
  size_t nl = (size_t)(k + n - nm), i;
  if(slash) {
    size_t pl = (size_t)(slash - k);
    if(!pl || pl > 253)
      return false;
    for(i = 0; i < pl; i++)
      if(!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') ||
           k[i] == '.' || k[i] == '-'))
        return false;
  }
  if(!nl || nl > 63)
    return false;
  for(i = 0; i < nl; i++) {
    char c = nm[i];
    bool an = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9');
    if(!an && ((c != '.' && c != '_' && c != '-') || i == 0 || i == nl - 1))
      return false;
  }
  return true;
}

static bool label_value_ok(const char *v, size_t n)
{
  size_t i;
  if(n > 63)
    return false;
  for(i = 0; i < n; i++) {
    char c = v[i];
    bool an = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9');
    if(!an && ((c != '.' && c != '_' && c != '-') || i == 0 || i == n - 1))
      return false;
  }
  return true;
}

/* ?labelSelector=R[,R...]: R = KEY=V, KEY==V, KEY!=V, KEY or !KEY (white
 * space around the parts ignored); the API server's words when refused */
static void parse_lsel(const char *sel, kf_route *rt)
{
  const char *p = sel;
  while(*p) {
    const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
    const char *k = p, *ke, *v = NULL, *ve = end;
    kf_lsel_term t;
    memset(&t, 0, sizeof(t));
    t.op = KF_LSEL_EXISTS;
    while(k < end && *k == ' ')
      k++;
    if(k < end && *k == '!') {
      t.op = KF_LSEL_ABSENT;
      k++;
      while(k < end && *k == ' ')
        k++;
    }
    for(ke = k; ke < end && *ke != '=' && *ke != '!' && *ke != ' '; ke++)
      ;
    {
      const char *q = ke;
      while(q < end && *q == ' ')
        q++;
      if(q < end && t.op == KF_LSEL_EXISTS) {
        if(*q == '=' ) {
          t.op = KF_LSEL_EQ;
          v = q + (q + 1 < end && q[1] == '=' ? 2 : 1);
        }
        else if(*q == '!' && q + 1 < end && q[1] == '=') {
          t.op = KF_LSEL_NE;
          v = q + 2;
        }
        else if(!strncmp(q, "in", 2) || !strncmp(q, "notin", 5)) {
          snprintf(rt->lsel_err, sizeof(rt->lsel_err), "unable to parse "
                   "requirement: the set-based operators (in, notin) are "
                   "not supported by kube-apiserver-fake");
          return;
        }
        else
          q = NULL;
      }
      else if(q < end)
        q = NULL;
      if(!q) {
        snprintf(rt->lsel_err, sizeof(rt->lsel_err), "unable to parse "
                 "requirement: found '%.*s', expected: ',', '=', '==' or "
                 "'!='", (int)(end - ke) > 80 ? 80 : (int)(end - ke), ke);
        return;
      }
    }
    if(v) {
      while(v < ve && *v == ' ')
        v++;
      while(ve > v && ve[-1] == ' ')
        ve--;
    }
    if(!label_key_ok(k, (size_t)(ke - k))) {
      snprintf(rt->lsel_err, sizeof(rt->lsel_err), "unable to parse "
               "requirement: invalid label key \"%.*s\"",
               (int)(ke - k) > 200 ? 200 : (int)(ke - k), k);
      return;
    }
    if(v && !label_value_ok(v, (size_t)(ve - v))) {
      snprintf(rt->lsel_err, sizeof(rt->lsel_err), "unable to parse "
               "requirement: invalid label value: \"%.*s\"",
               (int)(ve - v) > 80 ? 80 : (int)(ve - v), v);
      return;
    }
    if(rt->lsel.n == KF_LSEL_MAX) {
      snprintf(rt->lsel_err, sizeof(rt->lsel_err), "unable to parse "
               "requirement: more than %d requirements", KF_LSEL_MAX);
      return;
    }
    memcpy(t.key, k, (size_t)(ke - k));
    if(v)
      memcpy(t.value, v, (size_t)(ve - v));
    rt->lsel.t[rt->lsel.n++] = t;
    p = comma ? comma + 1 : end;
  }
}

bool kf_lsel_match(const kf_lsel *l, json_object *labels)
{
  size_t i;
  for(i = 0; i < l->n; i++) {
    json_object *v = NULL;
    const char *have = NULL;
    if(labels && json_object_object_get_ex(labels, l->t[i].key, &v) &&
       json_object_is_type(v, json_type_string))
      have = json_object_get_string(v);
    switch(l->t[i].op) {
    case KF_LSEL_EQ:
      if(!have || strcmp(have, l->t[i].value))
        return false;
      break;
    case KF_LSEL_NE: /* an object without the label matches */
      if(have && !strcmp(have, l->t[i].value))
        return false;
      break;
    case KF_LSEL_EXISTS:
      if(!have)
        return false;
      break;
    default:
      if(have)
        return false;
    }
  }
  return true;
}

bool kf_parse_route(struct evhttp_request *req, kf_route *rt)
{
  const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
  const char *path = evhttp_uri_get_path(u), *query = evhttp_uri_get_query(u);
  char pbuf[1024], *seg[12];
  int n, i = 0, r;
  const char *group = "", *version;
  struct evkeyvalq q;
  const char *v, *accept;
  memset(rt, 0, sizeof(*rt));
  rt->res = -1;
  if(!path || strlen(path) >= sizeof(pbuf))
    return false;
  snprintf(pbuf, sizeof(pbuf), "%s", path);
  n = split(pbuf, seg, 12);
  if(n >= 3 && !strcmp(seg[0], "api")) {
    version = seg[1];
    i = 2;
  }
  else if(n >= 4 && !strcmp(seg[0], "apis")) {
    group = seg[1];
    version = seg[2];
    i = 3;
  }
  else
    return false;
  if(n - i >= 2 && !strcmp(seg[i], "namespaces")) {
    snprintf(rt->ns, sizeof(rt->ns), "%s", seg[i + 1]);
    i += 2;
  }
  if(i >= n)
    return false;
  for(r = 0; r < (int)KF_N_RES; r++)
    if(!strcmp(kf_resources[r].group, group) &&
       !strcmp(kf_resources[r].version, version) &&
       !strcmp(kf_resources[r].plural, seg[i]))
      rt->res = r;
  if(rt->res < 0 || (rt->ns[0] && !kf_resources[rt->res].namespaced))
    return false;
  i++;
  if(i < n) {
    if(!rt->ns[0] && kf_resources[rt->res].namespaced)
      return false;
    snprintf(rt->name, sizeof(rt->name), "%s", seg[i++]);
  }
  if(i < n) {
    if(strcmp(seg[i], "status") || !kf_resources[rt->res].status_sub)
      return false;
    rt->status = true;
    i++;
  }
  if(i != n)
    return false;
  TAILQ_INIT(&q);
  if(query && evhttp_parse_query_str(query, &q) == 0) {
    v = kf_qget(&q, "watch");
    rt->watch = v && (!strcmp(v, "1") || !strcmp(v, "true"));
    v = kf_qget(&q, "allowWatchBookmarks");
    rt->bookmarks = v && (!strcmp(v, "1") || !strcmp(v, "true"));
    v = kf_qget(&q, "resourceVersion");
    if(v)
      snprintf(rt->rv, sizeof(rt->rv), "%s", v);
    v = kf_qget(&q, "timeoutSeconds");
    if(v)
      rt->timeout_s = strtol(v, NULL, 10);
    rt->dry_run = kf_qget(&q, "dryRun") != NULL;
    v = kf_qget(&q, "limit");
    if(v)
      rt->limit = strtol(v, NULL, 10);
    v = kf_qget(&q, "continue");
    if(v)
      snprintf(rt->cont, sizeof(rt->cont), "%s", v);
    v = kf_qget(&q, "fieldSelector");
    if(v)
      parse_fsel(v, rt);
    v = kf_qget(&q, "labelSelector");
    if(v)
      parse_lsel(v, rt);
    v = kf_qget(&q, "fieldValidation");
    if(v) {
      snprintf(rt->fv_text, sizeof(rt->fv_text), "%s", v);
      rt->fv = !strcmp(v, "Strict") ? KF_FV_STRICT : !strcmp(v, "Warn") ?
               KF_FV_WARN : !strcmp(v, "Ignore") ? KF_FV_IGNORE : KF_FV_BAD;
    }
  }
  evhttp_clear_headers(&q);
  accept = evhttp_find_header(evhttp_request_get_input_headers(req),
                              "Accept");
  rt->table = accept && strstr(accept, "as=Table");
  return true;
}

const char *kf_method_name(enum evhttp_cmd_type c)
{
  switch(c) {
  case EVHTTP_REQ_GET: return "GET";
  case EVHTTP_REQ_POST: return "POST";
  case EVHTTP_REQ_PUT: return "PUT";
  case EVHTTP_REQ_PATCH: return "PATCH";
  case EVHTTP_REQ_DELETE: return "DELETE";
  default: return "OTHER";
  }
}
