/* Tests of controller/store/kube/kube.c against a hostile API server: bodies
 * that are not JSON, not a list, too deep, too large, objects that do not
 * decode, a resourceVersion that is not a string, 404 and 409. Each case
 * runs through the synchronous call (sessionctl's) and the asynchronous
 * one (the controller's): both must fail with the same clear error that
 * names the peer, and nothing else. The server is a child process (the
 * synchronous calls run a private loop, so it cannot share ours).
 *
 * Then one bad object among good ones (issue 12): a list or a watch with
 * an object that does not decode gives every other object and reports
 * the bad one (skipped, the log line, the counter, the InvalidObject
 * condition); odd annotations never make an object bad; lists come in
 * pages (limit + continue), a page too large is asked again smaller, an
 * expired continue token (410) relists from scratch, and an object over
 * STORE_OBJECT_MAX is skipped. */
#include "test/harness.h"
#include "test/unit/child_server.h"
#include "controller/ops/log.h"
#include "controller/ops/metrics.h"
#include "controller/store/store.h"
#include "lib/sctime.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <curl/curl.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#define NS_PREFIX "/apis/lea.io/v1alpha1/namespaces/"
#define HUGE_BYTES ((size_t)65 << 20) /* over the store's 64 MiB cap */
#define BIGPAGE_BYTES ((size_t)9 << 20) /* over its 8 MiB page cap */

static const char obj_bad_spec[] =
  "{\"apiVersion\":\"lea.io/v1alpha1\",\"kind\":\"Session\",\"metadata\":"
  "{\"name\":\"x\",\"namespace\":\"badtype\",\"resourceVersion\":\"1\","
  "\"uid\":\"u\"},\"spec\":7}";
static const char obj_nul_name[] =
  "{\"apiVersion\":\"lea.io/v1alpha1\",\"kind\":\"Session\",\"metadata\":"
  "{\"name\":\"a\\u0000b\",\"namespace\":\"nul\",\"resourceVersion\":\"1\","
  "\"uid\":\"u\"},\"spec\":{\"template\":\"t\"}}";

/* a good object NAME in namespace NS at version RV */
#define OBJ(ns, name, rv)                                                   \
  "{\"apiVersion\":\"lea.io/v1alpha1\",\"kind\":\"Session\",\"metadata\":" \
  "{\"name\":\"" name "\",\"namespace\":\"" ns "\",\"resourceVersion\":\"" \
  rv "\",\"uid\":\"u-" name "\"},\"spec\":{\"template\":\"t\"}}"
/* one of each kind of trouble: annotations with a NUL and a label that is
 * not a string (kept: the object decodes, those entries are left out),
 * spec.state 42 (skipped) */
#define OBJ_ODD_META(ns, name, rv)                                          \
  "{\"apiVersion\":\"lea.io/v1alpha1\",\"kind\":\"Session\",\"metadata\":" \
  "{\"name\":\"" name "\",\"namespace\":\"" ns "\",\"resourceVersion\":\"" \
  rv "\",\"uid\":\"u-" name "\",\"annotations\":{\"x\":\"a\\u0000b\","     \
  "\"keep\":\"yes\",\"utf\":\"\xc3\xa9\\n\\t\"},\"labels\":{\"team\":7},"  \
  "\"managedFields\":[{\"manager\":\"kubectl\",\"fieldsV1\":{\"f:spec\":"  \
  "{\"f:template\":{}}}}]},\"spec\":{\"template\":\"t\"}}"
#define OBJ_STATE42(ns, name, rv)                                           \
  "{\"apiVersion\":\"lea.io/v1alpha1\",\"kind\":\"Session\",\"metadata\":" \
  "{\"name\":\"" name "\",\"namespace\":\"" ns "\",\"resourceVersion\":\"" \
  rv "\",\"uid\":\"u-" name "\"},\"spec\":{\"template\":\"x\","            \
  "\"state\":42}}"
#define LIST(rv, cont, items)                                               \
  "{\"kind\":\"SessionList\",\"metadata\":{\"resourceVersion\":\"" rv      \
  "\"" cont "},\"items\":[" items "]}"

/* what the child was asked, for the parent: GET /_log */
static char req_log[65536];

static void send_body(struct evhttp_request *req, int code, const char *b)
{
  struct evbuffer *o = evbuffer_new();
  evbuffer_add(o, b, strlen(b));
  evhttp_send_reply(req, code, code < 300 ? "OK" : "Error", o);
  evbuffer_free(o);
}

static void log_req(struct evhttp_request *req, const char *path,
                    const char *query)
{
  size_t n = strlen(req_log);
  struct evbuffer *in = evhttp_request_get_input_buffer(req);
  size_t blen = evbuffer_get_length(in);
  const char *m = evhttp_request_get_command(req) == EVHTTP_REQ_PATCH
                  ? "PATCH" : evhttp_request_get_command(req) ==
                  EVHTTP_REQ_PUT ? "PUT" : "GET";
  snprintf(req_log + n, sizeof(req_log) - n, "%s %s?%s %.*s\n", m, path,
           query ? query : "", blen < 2000 ? (int)blen : 0,
           blen < 2000 ? (const char *)evbuffer_pullup(in, -1) : "");
}

/* a query parameter of the request, or "" */
static void qparam(const char *query, const char *k, char *out, size_t len)
{
  struct evkeyvalq q;
  const char *v;
  out[0] = '\0';
  if(!query || evhttp_parse_query_str(query, &q))
    return;
  v = evhttp_find_header(&q, k);
  if(v)
    snprintf(out, len, "%s", v);
  evhttp_clear_headers(&q);
}

/* a list of NTOT objects "pN" of namespace ns, pages of at most per (and
 * of the client's limit), continue token "tok-N"; each page says version
 * 100 + its index, so the client must keep the first */
static void send_paged(struct evhttp_request *req, const char *ns,
                       const char *query, int ntot, int per)
{
  char lim[32], cont[64], *buf = malloc(65536);
  int limit, from = 0, i, n;
  size_t off = 0;
  qparam(query, "limit", lim, sizeof(lim));
  qparam(query, "continue", cont, sizeof(cont));
  limit = lim[0] ? (int)strtol(lim, NULL, 10) : ntot;
  if(!strncmp(cont, "tok-", 4))
    from = (int)strtol(cont + 4, NULL, 10);
  n = limit < per ? limit : per;
  if(from + n > ntot)
    n = ntot - from;
  off += (size_t)snprintf(buf + off, 65536 - off, "{\"kind\":\"SessionList\","
                          "\"metadata\":{\"resourceVersion\":\"%d\"",
                          100 + from / per);
  if(from + n < ntot)
    off += (size_t)snprintf(buf + off, 65536 - off, ",\"continue\":\"tok-%d\"",
                            from + n);
  off += (size_t)snprintf(buf + off, 65536 - off, "},\"items\":[");
  for(i = from; i < from + n; i++)
    off += (size_t)snprintf(buf + off, 65536 - off, "%s{\"apiVersion\":"
                            "\"lea.io/v1alpha1\",\"kind\":\"Session\","
                            "\"metadata\":{\"name\":\"p%d\",\"namespace\":"
                            "\"%s\",\"resourceVersion\":\"%d\",\"uid\":"
                            "\"u%d\"},\"spec\":{\"template\":\"t\"}}",
                            i > from ? "," : "", i, ns, 10 + i, i);
  snprintf(buf + off, 65536 - off, "]}");
  send_body(req, 200, buf);
  free(buf);
}

static void send_big(struct evhttp_request *req, size_t bytes)
{
  struct evbuffer *o = evbuffer_new();
  char *d = malloc(bytes);
  memset(d, ' ', bytes);
  evbuffer_add(o, d, bytes);
  free(d);
  evhttp_send_reply(req, 200, "OK", o);
  evbuffer_free(o);
}

/* a watch that sends lines, then holds the request open */
static void send_watch(struct evhttp_request *req, const char *const *lines,
                       size_t n)
{
  struct evbuffer *o = evbuffer_new();
  size_t i;
  for(i = 0; i < n; i++) {
    evbuffer_add(o, lines[i], strlen(lines[i]));
    evbuffer_add(o, "\n", 1);
  }
  evhttp_send_reply_chunk(req, o);
  evbuffer_free(o);
}

/* an event line whose object is a good one with a 5 MiB annotation: over
 * the line cap of 4 MiB */
static char *oversized_line(void)
{
  static const char h[] = "{\"type\":\"ADDED\",\"object\":{\"apiVersion\":"
    "\"lea.io/v1alpha1\",\"kind\":\"Session\",\"metadata\":{\"name\":\"big\","
    "\"namespace\":\"w\",\"resourceVersion\":\"8\",\"annotations\":{\"a\":\"";
  static const char t[] = "\"}},\"spec\":{\"template\":\"t\"}}}";
  size_t pad = (size_t)5 << 20;
  char *s = malloc(sizeof(h) + pad + sizeof(t));
  memcpy(s, h, sizeof(h) - 1);
  memset(s + sizeof(h) - 1, 'a', pad);
  memcpy(s + sizeof(h) - 1 + pad, t, sizeof(t));
  return s;
}

/* a list of one good object and one whose envVars pass STORE_OBJECT_MAX */
static void send_oversize(struct evhttp_request *req)
{
  static const char h[] = LIST("3", "", OBJ("oversize", "small", "2") ","
    "{\"apiVersion\":\"lea.io/v1alpha1\",\"kind\":\"Session\",\"metadata\":"
    "{\"name\":\"large\",\"namespace\":\"oversize\",\"resourceVersion\":"
    "\"3\"},\"spec\":{\"template\":\"t\",\"envVars\":{") ;
  size_t cap = (size_t)2 << 20, off;
  char *b = malloc(cap);
  int i;
  /* the LIST macro closed the list: take its text up to the envVars */
  off = strlen(h) - 2; /* drop "]}" */
  memcpy(b, h, off);
  for(i = 0; i < 300; i++) {
    off += (size_t)snprintf(b + off, cap - off, "%s\"V%d\":\"", i ? "," : "",
                            i);
    memset(b + off, 'v', 4000);
    off += 4000;
    b[off++] = '"';
  }
  snprintf(b + off, cap - off, "}}}]}");
  send_body(req, 200, b);
  free(b);
}

/* an object of namespace "fin" with the controller's finalizer */
#define OBJ_FIN(name, rv)                                                   \
  "{\"apiVersion\":\"lea.io/v1alpha1\",\"kind\":\"Session\",\"metadata\":" \
  "{\"name\":\"" name "\",\"namespace\":\"fin\",\"resourceVersion\":\""    \
  rv "\",\"uid\":\"u-" name "\",\"finalizers\":[\"lea.io/sandbox-cleanup\"]}," \
  "\"spec\":{\"template\":\"t\"}}"

/* namespace "fin": four objects without the finalizer, whose PATCH
 * succeeds (ok), conflicts (conflict), finds nothing (gone) or is
 * refused (broken); "has" carries it already */
static void send_fin(struct evhttp_request *req, const char *rest)
{
  bool patch = evhttp_request_get_command(req) == EVHTTP_REQ_PATCH;
  if(!*rest)
    send_body(req, 200, LIST("20", "", OBJ("fin", "ok", "1") ","
              OBJ("fin", "conflict", "2") "," OBJ("fin", "gone", "3") ","
              OBJ("fin", "broken", "4")));
  else if(!strcmp(rest, "/ok") && patch)
    send_body(req, 200, OBJ_FIN("ok", "11"));
  else if(!strcmp(rest, "/conflict") && patch)
    send_body(req, 409, "{\"kind\":\"Status\",\"status\":\"Failure\","
              "\"reason\":\"Conflict\",\"message\":\"the object has been "
              "modified\",\"code\":409}");
  else if(!strcmp(rest, "/conflict"))
    send_body(req, 200, OBJ("fin", "conflict", "2"));
  else if(!strcmp(rest, "/broken") && patch)
    send_body(req, 403, "{\"kind\":\"Status\",\"message\":\"no patch "
              "for you\",\"code\":403}");
  else if(!strcmp(rest, "/has"))
    send_body(req, 200, OBJ_FIN("has", "7"));
  else
    send_body(req, 404, "{\"kind\":\"Status\",\"status\":\"Failure\","
              "\"reason\":\"NotFound\",\"code\":404}");
}

/* the answers of the child: the namespace names the case; the rest of the
 * path says list ("" ), get ("/x") or status ("/x/status") */
static void on_req(struct evhttp_request *req, void *arg)
{
  const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
  const char *path = evhttp_uri_get_path(uri);
  const char *query = evhttp_uri_get_query(uri);
  static int expire_calls;
  char cs[64], buf[4096], rv[32];
  const char *p, *rest;
  size_t n;
  (void)arg;
  if(path && !strcmp(path, "/_log")) {
    send_body(req, 200, req_log);
    req_log[0] = '\0';
    return;
  }
  if(!path || strncmp(path, NS_PREFIX, strlen(NS_PREFIX))) {
    send_body(req, 404, "{\"kind\":\"Status\",\"code\":404}");
    return;
  }
  log_req(req, path, query);
  p = path + strlen(NS_PREFIX);
  n = strcspn(p, "/");
  if(n >= sizeof(cs))
    n = sizeof(cs) - 1;
  memcpy(cs, p, n);
  cs[n] = '\0';
  rest = p + n;
  if(!strncmp(rest, "/sessions", 9))
    rest += 9;
  qparam(query, "resourceVersion", rv, sizeof(rv));
  if(!strcmp(cs, "fin"))
    send_fin(req, rest);
  else if(!strcmp(cs, "notjson"))
    send_body(req, 200, "this is not json");
  else if(!strcmp(cs, "trailing"))
    send_body(req, 200, LIST("1", "", "") " {}");
  else if(!strcmp(cs, "badutf8"))
    send_body(req, 200, LIST("1", "", OBJ("badutf8", "a\xc3\x28", "1")));
  else if(!strcmp(cs, "notalist"))
    send_body(req, 200, "{\"kind\":\"SessionList\",\"items\":5,"
              "\"metadata\":{\"resourceVersion\":\"1\"}}");
  else if(!strcmp(cs, "numrv"))
    send_body(req, 200, "{\"items\":[],\"metadata\":{\"resourceVersion\":7}}");
  else if(!strcmp(cs, "badtype") && !*rest) {
    snprintf(buf, sizeof(buf), "{\"items\":[%s],\"metadata\":"
             "{\"resourceVersion\":\"1\"}}", obj_bad_spec);
    send_body(req, 200, buf);
  }
  else if(!strcmp(cs, "badtype"))
    send_body(req, 200, obj_bad_spec);
  else if(!strcmp(cs, "nul")) {
    snprintf(buf, sizeof(buf), "{\"items\":[%s],\"metadata\":"
             "{\"resourceVersion\":\"1\"}}", obj_nul_name);
    send_body(req, 200, buf);
  }
  else if(!strcmp(cs, "mixed") && !*rest)
    send_body(req, 200, LIST("9", "", OBJ("mixed", "a", "5") ","
              OBJ("mixed", "b", "6") "," OBJ_ODD_META("mixed", "c", "7") ","
              OBJ_STATE42("mixed", "d", "8") "," OBJ("mixed", "e", "9")));
  else if(!strcmp(cs, "mixed") && !strcmp(rest, "/d/status"))
    send_body(req, 200, OBJ_STATE42("mixed", "d", "10"));
  else if(!strcmp(cs, "mixed") && !strcmp(rest, "/d"))
    send_body(req, 200, OBJ_STATE42("mixed", "d", "8"));
  else if(!strcmp(cs, "paged"))
    send_paged(req, "paged", query, 7, 3);
  else if(!strcmp(cs, "expire")) {
    char cont[64];
    qparam(query, "continue", cont, sizeof(cont));
    if(cont[0] && expire_calls++ == 0)
      send_body(req, 410, "{\"kind\":\"Status\",\"status\":\"Failure\","
                "\"reason\":\"Expired\",\"message\":\"The provided continue "
                "parameter is too old\",\"code\":410}");
    else
      send_paged(req, "expire", query, 4, 2);
  }
  else if(!strcmp(cs, "expire-always")) {
    char cont[64];
    qparam(query, "continue", cont, sizeof(cont));
    if(cont[0])
      send_body(req, 410, "{\"kind\":\"Status\",\"status\":\"Failure\","
                "\"reason\":\"Expired\",\"message\":\"too old\","
                "\"code\":410}");
    else
      send_paged(req, "expire-always", query, 4, 2);
  }
  else if(!strcmp(cs, "loop"))
    send_body(req, 200, LIST("1", ",\"continue\":\"same\"",
                             OBJ("loop", "a", "1")));
  else if(!strcmp(cs, "bigpage")) {
    char lim[32];
    qparam(query, "limit", lim, sizeof(lim));
    if(!lim[0] || strtol(lim, NULL, 10) > 40)
      send_big(req, BIGPAGE_BYTES);
    else
      send_paged(req, "bigpage", query, 3, 1000);
  }
  else if(!strcmp(cs, "oversize"))
    send_oversize(req);
  else if(!strcmp(cs, "w") && strstr(query ? query : "", "watch=1")) {
    static const char *const first[] = {
      "{\"type\":\"ADDED\",\"object\":" OBJ("w", "good1", "5") "}",
      "{\"type\":\"ADDED\",\"object\":" OBJ_STATE42("w", "bad", "6") "}",
      "{\"type\":\"MODIFIED\",\"object\":" OBJ_ODD_META("w", "odd", "7") "}",
    };
    static const char *const last[] = {
      "{\"type\":\"ADDED\",\"object\":" OBJ("w", "good2", "9") "}",
    };
    evhttp_send_reply_start(req, 200, "OK");
    if(!strcmp(rv, "4")) {
      char *big = oversized_line();
      send_watch(req, first, 3);
      send_watch(req, (const char *const *)&big, 1);
      send_watch(req, last, 1);
      free(big);
    }
    /* any later watch (from 9): held open, nothing more to say */
  }
  else if(!strcmp(cs, "deep")) {
    char *d = malloc(10001);
    memset(d, '[', 10000);
    d[10000] = '\0';
    send_body(req, 200, d);
    free(d);
  }
  else if(!strcmp(cs, "huge"))
    send_big(req, HUGE_BYTES);
  else if(!strcmp(cs, "gone"))
    send_body(req, 404, "{\"kind\":\"Status\",\"status\":\"Failure\","
              "\"reason\":\"NotFound\",\"code\":404}");
  else if(!strcmp(cs, "conflict"))
    send_body(req, 409, "{\"kind\":\"Status\",\"status\":\"Failure\","
              "\"reason\":\"Conflict\",\"message\":\"the object has been "
              "modified\",\"code\":409}");
  else if(!strcmp(cs, "norv"))
    send_body(req, 200, "{\"kind\":\"Session\",\"metadata\":{}}");
  else
    send_body(req, 500, "{}");
}

/* the server's setup in its child (child_server.h): its port, -1 when
 * it cannot listen */
static int server_listen(struct event_base *b, void *arg)
{
  struct evhttp *h = evhttp_new(b);
  struct evhttp_bound_socket *s;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  (void)arg;
  req_log[0] = '\0'; /* the parent's copy came along */
  signal(SIGPIPE, SIG_IGN); /* clients hang up on the big bodies */
  if(!h)
    return -1;
  evhttp_set_allowed_methods(h, EVHTTP_REQ_GET | EVHTTP_REQ_PUT |
                                  EVHTTP_REQ_PATCH);
  evhttp_set_gencb(h, on_req, NULL);
  s = evhttp_bind_socket_with_handle(h, "127.0.0.1", 0);
  if(!s || getsockname(evhttp_bound_socket_get_fd(s), (struct sockaddr *)&ss,
                       &sl))
    return -1;
  return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* the server in a child; its port in *port */
static pid_t server_start(int *port)
{
  return child_server_start(server_listen, NULL, 120, port);
}

typedef struct areply {
  int calls;
  sc_err err;
  char msg[SC_ERRBUF_SIZE];
  store_list_result list;
} areply;

static void on_reply(store_reply *rep, void *ud)
{
  areply *a = ud;
  a->calls++;
  a->err = rep->err;
  snprintf(a->msg, sizeof(a->msg), "%s", rep->message);
  a->list = rep->list;
  memset(&rep->list, 0, sizeof(rep->list));
}

/* a kubeconfig for the server at port in dir; the path into kc */
static void write_kubeconfig(const char *dir, int port, char *kc, size_t len)
{
  snprintf(kc, len, "%s/kc", dir);
  kubeconfig_write(kc, port);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
  (void)fd;
  (void)what;
  (void)arg;
}

/* run the loop for ms, or until *done reaches want */
static void spin(struct event_base *b, int ms, const int *done, int want)
{
  struct event *t = evtimer_new(b, tick_cb, NULL);
  struct timeval tv = {0, 20000};
  int i;
  for(i = 0; i < ms / 20 && (!done || *done < want); i++) {
    evtimer_add(t, &tv);
    event_base_loop(b, EVLOOP_ONCE);
  }
  event_free(t);
}

static size_t on_curl_body(char *p, size_t sz, size_t n, void *ud)
{
  size_t *len = ud, room = sizeof(req_log) - 1 - *len;
  size_t take = sz * n < room ? sz * n : room;
  memcpy(req_log + *len, p, take);
  *len += take;
  req_log[*len] = '\0';
  return sz * n;
}

/* what the child was asked since the last call, into req_log (the
 * parent's copy of the buffer is free for it) */
static const char *server_log(int port)
{
  char url[64];
  size_t len = 0;
  CURL *e = curl_easy_init();
  req_log[0] = '\0';
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/_log", port);
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_curl_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &len);
  curl_easy_perform(e);
  curl_easy_cleanup(e);
  return req_log;
}

static int count_of(const char *hay, const char *needle)
{
  int n = 0;
  const char *p = hay;
  while((p = strstr(p, needle))) {
    n++;
    p += strlen(needle);
  }
  return n;
}

/* one list, synchronously (pass 0) or asynchronously (pass 1) */
static sc_err list_either(store *st, struct event_base *b, int pass,
                          const char *ns, store_list_result *out, char *msg,
                          size_t msglen)
{
  store_list_opts lo = {ns, true, false};
  sc_errbuf eb;
  sc_err err;
  memset(out, 0, sizeof(*out));
  eb.msg[0] = '\0';
  if(pass == 0) {
    err = store_list(st, &lo, out, &eb);
    snprintf(msg, msglen, "%s", eb.msg);
    return err;
  }
  {
    areply a;
    memset(&a, 0, sizeof(a));
    err = store_list_async(st, &lo, on_reply, &a, &eb);
    if(err) {
      snprintf(msg, msglen, "%s", eb.msg);
      return err;
    }
    while(a.calls == 0 && event_base_loop(b, EVLOOP_ONCE) == 0)
      ;
    snprintf(msg, msglen, "%s", a.msg);
    *out = a.list;
    return a.err;
  }
}

typedef struct kenv {
  char dir[64], kc[300], logpath[300];
  int port;
  pid_t pid;
  struct event_base *b;
  FILE *logf;
  logger *lg;
  metrics *m;
  store *st;
} kenv;

static sc_err kenv_open(kenv *e, const char *namespace_)
{
  store_open_opts o;
  sc_errbuf eb;
  memset(&o, 0, sizeof(o));
  o.base = e->b;
  o.kubeconfig = e->kc;
  o.namespace_ = namespace_;
  o.log = e->lg;
  o.metrics = e->m;
  o.mark_invalid = true;
  eb.msg[0] = '\0';
  if(store_open("kube", &o, &e->st, &eb)) {
    fprintf(stderr, "store_open: %s\n", eb.msg);
    return SC_ERR_INVALID;
  }
  return SC_OK;
}

static pid_t server_start(int *port);

static int kenv_start(kenv *e)
{
  memset(e, 0, sizeof(*e));
  snprintf(e->dir, sizeof(e->dir), "/tmp/sc-kube-bad-XXXXXX");
  if(!mkdtemp(e->dir))
    return -1;
  e->pid = server_start(&e->port);
  if(e->pid <= 0)
    return -1;
  write_kubeconfig(e->dir, e->port, e->kc, sizeof(e->kc));
  snprintf(e->logpath, sizeof(e->logpath), "%s/log", e->dir);
  e->logf = fopen(e->logpath, "w+");
  e->lg = log_new(e->logf, LOG_FORMAT_LOGFMT, LOG_DEBUG);
  e->m = metrics_new();
  e->b = event_base_new();
  if(!e->logf || !e->lg || !e->m || !e->b || store_declare_metrics(e->m))
    return -1;
  return 0;
}

static void kenv_stop(kenv *e)
{
  store_close(e->st);
  if(e->b)
    event_base_free(e->b);
  log_free(e->lg);
  metrics_free(e->m);
  if(e->logf)
    fclose(e->logf);
  child_server_stop(e->pid);
  unlink(e->kc);
  unlink(e->logpath);
  rmdir(e->dir);
}

/* the log so far */
static const char *kenv_log(kenv *e)
{
  static char buf[65536];
  size_t n;
  fflush(e->logf);
  rewind(e->logf);
  n = fread(buf, 1, sizeof(buf) - 1, e->logf);
  buf[n] = '\0';
  fseek(e->logf, 0, SEEK_END);
  return buf;
}

static const session *find_item(const store_list_result *r, const char *name)
{
  size_t i;
  for(i = 0; i < r->n; i++)
    if(!strcmp(r->items[i]->meta.name, name))
      return r->items[i];
  return NULL;
}

#define SKIPPED(labels) \
  metrics_get(e.m, "session_controller_objects_skipped_total", labels)

/* A list with one object that does not decode (spec.state 42) among
 * good ones, one with odd labels and annotations among them: every other
 * object comes back, the bad one is named in skipped, logged once (the
 * second list is within the interval), counted each time, and marked
 * Ready=False/InvalidObject (one PUT of its /status). Before
 * issue 12 the whole list failed: "list item 3 does not decode". */
TEST(list_one_bad_object_never_stops_the_others)
{
  kenv e;
  int pass;
  const char *log;
  CHECK_OK(kenv_start(&e));
  CHECK_OK(kenv_open(&e, "mixed"));
  for(pass = 0; pass < 2; pass++) {
    store_list_result r;
    char msg[SC_ERRBUF_SIZE];
    const session *c;
    sc_err err = list_either(e.st, e.b, pass, NULL, &r, msg, sizeof(msg));
    CHECK_MSG(err == SC_OK, "pass %d: %s", pass, msg);
    CHECK_INT(r.n, 4);
    CHECK(find_item(&r, "a") && find_item(&r, "b") && find_item(&r, "e"));
    CHECK_STR(r.revision, "9");
    /* odd annotations and labels: kept, less the entries a C string
     * cannot hold */
    c = find_item(&r, "c");
    CHECK(c != NULL);
    CHECK_STR(sc_kvlist_get(&c->meta.annotations, "keep"), "yes");
    CHECK_STR(sc_kvlist_get(&c->meta.annotations, "utf"), "\xc3\xa9\n\t");
    CHECK(sc_kvlist_get(&c->meta.annotations, "x") == NULL);
    CHECK_INT(c->meta.labels.n, 0);
    CHECK_INT(r.n_skipped, 1);
    CHECK_STR(r.skipped[0].ns, "mixed");
    CHECK_STR(r.skipped[0].name, "d");
    CHECK_STR(r.skipped[0].uid, "u-d");
    CHECK_MSG(strstr(r.skipped[0].reason, "spec.state: expected a string, "
                     "got an integer"), "%s", r.skipped[0].reason);
    store_list_result_free(&r);
  }
  spin(e.b, 400, NULL, 0); /* the mark goes out on the loop */
  log = kenv_log(&e);
  CHECK_INT(count_of(log, "object=mixed/d"), 1);
  CHECK_MSG(strstr(log, "level=warn") && strstr(log, "store object skipped")
            && strstr(log, "spec.state: expected a string"), "%s", log);
  CHECK_INT(SKIPPED("store=\"kube\",where=\"list\""), 2);
  CHECK_INT(metrics_get(e.m, "session_controller_objects_invalid",
                        "store=\"kube\""), 1);
  log = server_log(e.port);
  CHECK_INT(count_of(log, "PUT " NS_PREFIX "mixed/sessions/d/status"), 1);
  CHECK_MSG(strstr(log, "\"reason\":\"InvalidObject\"") &&
            strstr(log, "\"type\":\"Ready\",\"status\":\"False\"") &&
            strstr(log, "spec.state: expected a string"), "%s", log);
  CHECK_INT(count_of(log, "PUT "), 1);
  CHECK_MSG(strstr(log, "\"resourceVersion\":\"8\""), "%s", log);
  /* a get of it fails with the reason, and is counted too */
  {
    session *s = NULL;
    sc_errbuf eb;
    eb.msg[0] = '\0';
    CHECK_INT(store_get(e.st, "mixed", "d", &s, &eb), SC_ERR_PROTOCOL);
    CHECK(s == NULL);
    CHECK_MSG(strstr(eb.msg, "the object does not decode: spec.state: "
                     "expected a string"), "%s", eb.msg);
    CHECK_INT(SKIPPED("store=\"kube\",where=\"get\""), 1);
  }
  kenv_stop(&e);
}

/* Objects that cannot even be named (a NUL in metadata.name) and a spec
 * of the wrong type: skipped, the list succeeds. */
TEST(list_skips_unnamed_and_wrong_type)
{
  kenv e;
  int pass;
  CHECK_OK(kenv_start(&e));
  CHECK_OK(kenv_open(&e, NULL));
  for(pass = 0; pass < 2; pass++) {
    store_list_result r;
    char msg[SC_ERRBUF_SIZE];
    CHECK_OK(list_either(e.st, e.b, pass, "nul", &r, msg, sizeof(msg)));
    CHECK_INT(r.n, 0);
    CHECK_INT(r.n_skipped, 1);
    CHECK(r.skipped[0].name == NULL && r.skipped[0].ns == NULL);
    CHECK_MSG(strstr(r.skipped[0].reason, "list page 1 item 0: "
                     "metadata.name: contains a NUL character"), "%s",
              r.skipped[0].reason);
    store_list_result_free(&r);
    CHECK_OK(list_either(e.st, e.b, pass, "badtype", &r, msg, sizeof(msg)));
    CHECK_INT(r.n, 0);
    CHECK_INT(r.n_skipped, 1);
    CHECK_STR(r.skipped[0].name, "x");
    CHECK_MSG(strstr(r.skipped[0].reason, "spec: expected an object, got "
                     "an integer"), "%s", r.skipped[0].reason);
    store_list_result_free(&r);
  }
  kenv_stop(&e);
}

/* An object over STORE_OBJECT_MAX (300 envVars of 4000 bytes, 1.2 MB) is
 * skipped; the store never holds it decoded. */
TEST(list_skips_oversized_object)
{
  kenv e;
  store_list_result r;
  char msg[SC_ERRBUF_SIZE];
  CHECK_OK(kenv_start(&e));
  CHECK_OK(kenv_open(&e, NULL));
  CHECK_MSG(!list_either(e.st, e.b, 1, "oversize", &r, msg, sizeof(msg)),
            "%s", msg);
  CHECK_INT(r.n, 1);
  CHECK_STR(r.items[0]->meta.name, "small");
  CHECK_INT(r.n_skipped, 1);
  CHECK_STR(r.skipped[0].name, "large");
  CHECK_MSG(strstr(r.skipped[0].reason, "more than 1048576 bytes of JSON"),
            "%s", r.skipped[0].reason);
  store_list_result_free(&r);
  kenv_stop(&e);
}

/* Pages: limit=500 and the continue tokens, 7 objects in 3 pages, the
 * version of the first page. */
TEST(list_pages_with_continue)
{
  kenv e;
  int pass;
  const char *log;
  CHECK_OK(kenv_start(&e));
  CHECK_OK(kenv_open(&e, NULL));
  for(pass = 0; pass < 2; pass++) {
    store_list_result r;
    char msg[SC_ERRBUF_SIZE];
    size_t i;
    (void)server_log(e.port);
    CHECK_MSG(!list_either(e.st, e.b, pass, "paged", &r, msg, sizeof(msg)),
              "%s", msg);
    CHECK_INT(r.n, 7);
    for(i = 0; i < 7; i++) {
      char n[8];
      snprintf(n, sizeof(n), "p%zu", i);
      CHECK_STR(r.items[i]->meta.name, n);
    }
    CHECK_STR(r.revision, "100");
    store_list_result_free(&r);
    log = server_log(e.port);
    CHECK_INT(count_of(log, "GET "), 3);
    CHECK_MSG(strstr(log, "GET " NS_PREFIX "paged/sessions?limit=500 \n") &&
              strstr(log, "?limit=500&continue=tok-3 ") &&
              strstr(log, "?limit=500&continue=tok-6 "), "%s", log);
  }
  kenv_stop(&e);
}

/* A continue token that expired (410) relists from scratch; one that
 * keeps expiring fails the list clearly; a token that repeats is a loop. */
TEST(list_continue_expired_relists)
{
  kenv e;
  store_list_result r;
  char msg[SC_ERRBUF_SIZE];
  const char *log;
  CHECK_OK(kenv_start(&e));
  CHECK_OK(kenv_open(&e, NULL));
  CHECK_MSG(!list_either(e.st, e.b, 1, "expire", &r, msg, sizeof(msg)), "%s",
            msg);
  CHECK_INT(r.n, 4);
  CHECK_STR(r.items[3]->meta.name, "p3");
  CHECK_STR(r.revision, "100");
  store_list_result_free(&r);
  log = server_log(e.port);
  CHECK_MSG(count_of(log, "GET ") == 4, "%s", log);
  CHECK_INT(count_of(log, "?limit=500 "), 2);
  CHECK_INT(count_of(log, "&continue=tok-2 "), 2);
  CHECK_INT(list_either(e.st, e.b, 0, "expire-always", &r, msg, sizeof(msg)),
            SC_ERR_UNAVAILABLE);
  CHECK_MSG(strstr(msg, "the continue token expired 4 times (410)"),
            "%s", msg);
  CHECK_INT(r.n, 0);
  CHECK_INT(list_either(e.st, e.b, 1, "loop", &r, msg, sizeof(msg)),
            SC_ERR_PROTOCOL);
  CHECK_MSG(strstr(msg, "paging loop"), "%s", msg);
  kenv_stop(&e);
}

/* A page over the page cap (8 MiB) is asked again with a quarter of the
 * limit until it fits: 500, 125, 31. */
TEST(list_page_too_large_asked_smaller)
{
  kenv e;
  store_list_result r;
  char msg[SC_ERRBUF_SIZE];
  const char *log;
  CHECK_OK(kenv_start(&e));
  CHECK_OK(kenv_open(&e, NULL));
  CHECK_MSG(!list_either(e.st, e.b, 1, "bigpage", &r, msg, sizeof(msg)),
            "%s", msg);
  CHECK_INT(r.n, 3);
  store_list_result_free(&r);
  log = server_log(e.port);
  CHECK_MSG(count_of(log, "GET ") == 3, "%s", log);
  CHECK_MSG(strstr(log, "?limit=500 ") && strstr(log, "?limit=125 ") &&
            strstr(log, "?limit=31 "), "%s", log);
  kenv_stop(&e);
}

typedef struct wrec {
  int n, errs;
  char names[8][32];
  char types[8][16];
  char err[SC_ERRBUF_SIZE];
} wrec;

static void on_wev(const store_event *ev, void *ud)
{
  wrec *w = ud;
  if(w->n < 8) {
    snprintf(w->names[w->n], sizeof(w->names[0]), "%s", ev->obj->meta.name);
    snprintf(w->types[w->n], sizeof(w->types[0]), "%s",
             store_event_type_name(ev->type));
  }
  w->n++;
}

static void on_werr(sc_err err, const char *msg, void *ud)
{
  wrec *w = ud;
  (void)err;
  w->errs++;
  snprintf(w->err, sizeof(w->err), "%s", msg);
}

/* One bad event does not end the watch: an object with spec.state 42 and
 * an event over the 4 MiB line cap are skipped and reported; the events
 * around them arrive; err_cb is not called (the reconciler would relist
 * on it). */
TEST(watch_skips_bad_events_and_goes_on)
{
  kenv e;
  store_watch *w = NULL;
  wrec r;
  sc_errbuf eb;
  const char *log;
  memset(&r, 0, sizeof(r));
  CHECK_OK(kenv_start(&e));
  CHECK_OK(kenv_open(&e, "w"));
  eb.msg[0] = '\0';
  CHECK_MSG(!store_watch_start(e.st, "4", on_wev, on_werr, &r, &w, &eb),
            "%s", eb.msg);
  spin(e.b, 8000, &r.n, 3);
  CHECK_MSG(r.errs == 0, "err_cb: %s", r.err);
  CHECK_INT(r.n, 3);
  CHECK_STR(r.names[0], "good1");
  CHECK_STR(r.names[1], "odd");
  CHECK_STR(r.types[1], "MODIFIED");
  CHECK_STR(r.names[2], "good2");
  CHECK_INT(SKIPPED("store=\"kube\",where=\"watch\""), 2);
  log = kenv_log(&e);
  CHECK_MSG(strstr(log, "object=w/bad") && strstr(log, "seen_in=watch"),
            "%s", log);
  CHECK_MSG(strstr(log, "watch event of more than 4194304 bytes"), "%s",
            log);
  store_watch_stop(w);
  kenv_stop(&e);
}

typedef struct freply {
  int calls;
  sc_err err;
  char msg[SC_ERRBUF_SIZE];
  char new_version[32];
  bool has_fin;
} freply;

static void on_freply(store_reply *rep, void *ud)
{
  freply *f = ud;
  size_t i;
  f->calls++;
  f->err = rep->err;
  snprintf(f->msg, sizeof(f->msg), "%s", rep->message);
  snprintf(f->new_version, sizeof(f->new_version), "%s",
           rep->new_version ? rep->new_version : "");
  for(i = 0; rep->obj && i < rep->obj->meta.n_finalizers; i++)
    if(!strcmp(rep->obj->meta.finalizers[i], "lea.io/sandbox-cleanup"))
      f->has_fin = true;
}

/* The finalizer per object (store_ensure_finalizer_async): the list no
 * longer adds it (one object's refused patch cannot fail it), and each
 * object's own call says what happened to it alone: success with the
 * patched object, a conflict (not retried, no re-read), not found, an
 * error; an object that has it already is only read. */
TEST(finalizer_per_object_and_the_list_never_fails_for_one)
{
  static const struct {
    const char *name;
    sc_err err;
    const char *says;
  } want[] = {
    {"broken", SC_ERR_INVALID, "403 Forbidden: no patch for you"},
    {"conflict", SC_ERR_CONFLICT, "has been modified"},
    {"gone", SC_ERR_NOT_FOUND, "not found"},
    {"ok", SC_OK, ""},
  };
  kenv e;
  store_list_result lr;
  freply f[4], h;
  session *has = NULL, *dead;
  sc_errbuf eb;
  char msg[SC_ERRBUF_SIZE];
  const char *log;
  size_t i;
  CHECK_OK(kenv_start(&e));
  CHECK_OK(kenv_open(&e, "fin"));
  CHECK_MSG(list_either(e.st, e.b, 1, "fin", &lr, msg, sizeof(msg)) == SC_OK,
            "%s", msg);
  CHECK_INT(lr.n, 4);
  memset(f, 0, sizeof(f));
  for(i = 0; i < 4; i++) {
    CHECK_STR(lr.items[i]->meta.name, want[i].name);
    CHECK(store_needs_finalizer(e.st, lr.items[i]));
    CHECK_OK(store_ensure_finalizer_async(e.st, lr.items[i], on_freply,
                                          &f[i], &eb));
  }
  CHECK_INT(f[0].calls + f[1].calls + f[2].calls + f[3].calls, 0);
  for(i = 0; i < 4; i++)
    spin(e.b, 5000, &f[i].calls, 1);
  for(i = 0; i < 4; i++) {
    CHECK_INT(f[i].calls, 1);
    CHECK_MSG(f[i].err == want[i].err, "%s: err %d: %s", want[i].name,
              (int)f[i].err, f[i].msg);
    CHECK_MSG(strstr(f[i].msg, want[i].says), "%s: %s", want[i].name,
              f[i].msg);
  }
  CHECK(f[3].has_fin);
  CHECK_STR(f[3].new_version, "11");
  log = server_log(e.port);
  /* one guarded patch each, and nothing read again */
  CHECK_INT(count_of(log, "PATCH "), 4);
  CHECK_MSG(strstr(log, "PATCH " NS_PREFIX "fin/sessions/ok? {\"metadata\":"
                   "{\"resourceVersion\":\"1\",\"finalizers\":"
                   "[\"lea.io\\/sandbox-cleanup\"]}}"), "%s", log);
  CHECK_INT(count_of(log, "GET " NS_PREFIX "fin/sessions/"), 0);
  /* what needs nothing: has it, or is being deleted */
  CHECK_OK(store_get(e.st, "fin", "has", &has, &eb));
  CHECK(!store_needs_finalizer(e.st, has));
  dead = session_dup(lr.items[3]);
  dead->meta.deletion_timestamp = 1;
  CHECK(!store_needs_finalizer(e.st, dead));
  CHECK(!store_needs_finalizer(e.st, NULL));
  memset(&h, 0, sizeof(h));
  CHECK_OK(store_ensure_finalizer_async(e.st, has, on_freply, &h, &eb));
  spin(e.b, 5000, &h.calls, 1);
  CHECK_INT(h.err, SC_OK);
  CHECK(h.has_fin);
  CHECK_INT(count_of(server_log(e.port), "PATCH "), 0);
  session_free(dead);
  session_free(has);
  store_list_result_free(&lr);
  kenv_stop(&e);
}

/* The store never decides: its list and get read, and add no finalizer
 * (the executor does, per object, with the call above), so the one object
 * whose patch the server refuses cannot fail them. */
TEST(list_and_get_never_patch)
{
  kenv e;
  store_list_result lr;
  session *got = NULL;
  sc_errbuf eb;
  char msg[SC_ERRBUF_SIZE];
  CHECK_OK(kenv_start(&e));
  CHECK_OK(kenv_open(&e, "fin"));
  CHECK_MSG(list_either(e.st, e.b, 1, "fin", &lr, msg, sizeof(msg)) == SC_OK,
            "%s", msg);
  CHECK_INT(lr.n, 4);
  CHECK(store_needs_finalizer(e.st, lr.items[0]));
  CHECK_OK(store_get(e.st, "fin", "has", &got, &eb));
  CHECK_INT(count_of(server_log(e.port), "PATCH "), 0);
  session_free(got);
  store_list_result_free(&lr);
  kenv_stop(&e);
}

enum { OP_LIST, OP_GET, OP_STATUS };

TEST(hostile_server_clear_errors_sync_and_async)
{
  static const struct {
    int op;
    const char *ns;
    sc_err err;
    const char *says;
    bool peer; /* the message names the server */
  } cases[] = {
    {OP_LIST, "notjson", SC_ERR_PROTOCOL, "not JSON", true},
    {OP_LIST, "notalist", SC_ERR_PROTOCOL, "not a list", true},
    {OP_LIST, "numrv", SC_ERR_PROTOCOL, "resourceVersion string", true},
    {OP_LIST, "trailing", SC_ERR_PROTOCOL, "not JSON (data after the JSON "
     "value at offset", true},
    {OP_LIST, "badutf8", SC_ERR_PROTOCOL, "not JSON (invalid JSON", true},
    {OP_LIST, "deep", SC_ERR_PROTOCOL, "not JSON (invalid JSON at offset 64: "
     "nesting too deep)", true},
    {OP_LIST, "huge", SC_ERR_TOO_LARGE, "response too large", true},
    {OP_GET, "badtype", SC_ERR_PROTOCOL, "the object does not decode",
     true},
    {OP_GET, "notjson", SC_ERR_PROTOCOL, "not JSON", true},
    {OP_GET, "gone", SC_ERR_NOT_FOUND, "not found", false},
    {OP_STATUS, "conflict", SC_ERR_CONFLICT, "has been modified", false},
    {OP_STATUS, "norv", SC_ERR_PROTOCOL, "no metadata.resourceVersion",
     true},
    {OP_STATUS, "notjson", SC_ERR_PROTOCOL, "not JSON", true},
  };
  char dir[] = "/tmp/sc-kube-hostile-XXXXXX", kc[300], peer[64];
  struct event_base *b = NULL;
  store_open_opts o;
  store *st = NULL;
  session_status status;
  sc_errbuf eb;
  int port = 0;
  size_t i;
  pid_t pid;
  CHECK(mkdtemp(dir));
  pid = server_start(&port);
  CHECK(pid > 0);
  snprintf(peer, sizeof(peer), "http://127.0.0.1:%d", port);
  snprintf(kc, sizeof(kc), "%s/kc", dir);
  CHECK_OK(kubeconfig_write(kc, port));
  b = event_base_new();
  memset(&o, 0, sizeof(o));
  o.base = b;
  o.kubeconfig = kc;
  eb.msg[0] = '\0';
  CHECK_MSG(!store_open("kube", &o, &st, &eb), "%s", eb.msg);
  memset(&status, 0, sizeof(status));
  status.phase = SESSION_PHASE_RUNNING;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    store_list_opts lo = {cases[i].ns, true, false};
    store_list_result lr = {0};
    session *s = NULL;
    areply a;
    sc_err err;
    int pass;
    for(pass = 0; pass < 2; pass++) { /* 0: synchronous, 1: asynchronous */
      const char *msg;
      memset(&a, 0, sizeof(a));
      eb.msg[0] = '\0';
      if(pass == 0) {
        err = cases[i].op == OP_LIST ? store_list(st, &lo, &lr, &eb)
              : cases[i].op == OP_GET
                ? store_get(st, cases[i].ns, "x", &s, &eb)
                : store_update_status(st, cases[i].ns, "x", "1", &status,
                                      NULL, &eb);
        msg = eb.msg;
        CHECK_MSG(!lr.n && !s, "case %zu: a result with the error", i);
      }
      else {
        err = cases[i].op == OP_LIST
                ? store_list_async(st, &lo, on_reply, &a, &eb)
              : cases[i].op == OP_GET
                ? store_get_async(st, cases[i].ns, "x", on_reply, &a, &eb)
                : store_update_status_async(st, cases[i].ns, "x", "1",
                                            &status, on_reply, &a, &eb);
        CHECK_MSG(err == SC_OK, "case %zu: %s", i, eb.msg);
        CHECK_INT(a.calls, 0); /* never from inside the call */
        while(a.calls == 0 && event_base_loop(b, EVLOOP_ONCE) == 0)
          ;
        CHECK_INT(a.calls, 1);
        err = a.err;
        msg = a.msg;
      }
      CHECK_MSG(err == cases[i].err, "case %zu (%s, %s): err %d, want %d: "
                "%s", i, cases[i].ns, pass ? "async" : "sync", (int)err,
                (int)cases[i].err, msg);
      CHECK_MSG(strstr(msg, cases[i].says), "case %zu (%s, %s): %s", i,
                cases[i].ns, pass ? "async" : "sync", msg);
      CHECK_MSG(!cases[i].peer || strstr(msg, peer),
                "case %zu (%s, %s): the peer is not named: %s", i,
                cases[i].ns, pass ? "async" : "sync", msg);
    }
  }
  CHECK_INT((int)store_async_inflight(st), 0);
  store_close(st);
  event_base_free(b);
  child_server_stop(pid);
  unlink(kc);
  rmdir(dir);
}

TEST_LIST = {
  T(hostile_server_clear_errors_sync_and_async),
  T(list_one_bad_object_never_stops_the_others),
  T(list_skips_unnamed_and_wrong_type),
  T(list_skips_oversized_object),
  T(list_pages_with_continue),
  T(list_continue_expired_relists),
  T(list_page_too_large_asked_smaller),
  T(watch_skips_bad_events_and_goes_on),
  T(finalizer_per_object_and_the_list_never_fails_for_one),
  T(list_and_get_never_patch),
  {0},
};
TEST_MAIN()
