/* Tests of controller/store_kube.c against a hostile API server: bodies
 * that are not JSON, not a list, too deep, too large, objects that do not
 * decode, a resourceVersion that is not a string, 404 and 409. Each case
 * runs through the synchronous call (sessionctl's) and the asynchronous
 * one (the controller's): both must fail with the same clear error that
 * names the peer, and nothing else. The server is a child process (the
 * synchronous calls run a private loop, so it cannot share ours). */
#include "../harness.h"
#include "../../controller/store.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#define NS_PREFIX "/apis/lea.io/v1alpha1/namespaces/"
#define HUGE_BYTES ((size_t)65 << 20) /* over the store's 64 MiB cap */

static const char obj_bad_spec[] =
  "{\"apiVersion\":\"lea.io/v1alpha1\",\"kind\":\"Session\",\"metadata\":"
  "{\"name\":\"x\",\"namespace\":\"badtype\",\"resourceVersion\":\"1\","
  "\"uid\":\"u\"},\"spec\":7}";
static const char obj_nul_name[] =
  "{\"apiVersion\":\"lea.io/v1alpha1\",\"kind\":\"Session\",\"metadata\":"
  "{\"name\":\"a\\u0000b\",\"namespace\":\"nul\",\"resourceVersion\":\"1\","
  "\"uid\":\"u\"},\"spec\":{\"template\":\"t\"}}";

static void send_body(struct evhttp_request *req, int code, const char *b)
{
  struct evbuffer *o = evbuffer_new();
  evbuffer_add(o, b, strlen(b));
  evhttp_send_reply(req, code, code < 300 ? "OK" : "Error", o);
  evbuffer_free(o);
}

/* the answers of the child: the namespace names the case; the rest of the
 * path says list ("" ), get ("/x") or status ("/x/status") */
static void on_req(struct evhttp_request *req, void *arg)
{
  const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
  char cs[64], buf[1024];
  const char *p, *rest;
  size_t n;
  (void)arg;
  if(!path || strncmp(path, NS_PREFIX, strlen(NS_PREFIX))) {
    send_body(req, 404, "{\"kind\":\"Status\",\"code\":404}");
    return;
  }
  p = path + strlen(NS_PREFIX);
  n = strcspn(p, "/");
  if(n >= sizeof(cs))
    n = sizeof(cs) - 1;
  memcpy(cs, p, n);
  cs[n] = '\0';
  rest = p + n;
  if(!strncmp(rest, "/sessions", 9))
    rest += 9;
  if(!strcmp(cs, "notjson"))
    send_body(req, 200, "this is not json");
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
  else if(!strcmp(cs, "deep")) {
    char *d = malloc(10001);
    memset(d, '[', 10000);
    d[10000] = '\0';
    send_body(req, 200, d);
    free(d);
  }
  else if(!strcmp(cs, "huge")) {
    struct evbuffer *o = evbuffer_new();
    char *d = malloc(HUGE_BYTES);
    memset(d, ' ', HUGE_BYTES);
    evbuffer_add(o, d, HUGE_BYTES);
    free(d);
    evhttp_send_reply(req, 200, "OK", o);
    evbuffer_free(o);
  }
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

/* the server in a child; its port through the pipe */
static pid_t server_start(int *port)
{
  int fds[2];
  pid_t pid;
  if(pipe(fds))
    return -1;
  pid = fork();
  if(pid == 0) {
    struct event_base *b = event_base_new();
    struct evhttp *h = evhttp_new(b);
    struct evhttp_bound_socket *s;
    int pt = -1;
    alarm(120); /* never outlive a test that failed before killing us */
    close(fds[0]);
    evhttp_set_allowed_methods(h, EVHTTP_REQ_GET | EVHTTP_REQ_PUT |
                                    EVHTTP_REQ_PATCH);
    evhttp_set_gencb(h, on_req, NULL);
    s = evhttp_bind_socket_with_handle(h, "127.0.0.1", 0);
    if(s) {
      struct sockaddr_storage ss;
      socklen_t sl = sizeof(ss);
      if(!getsockname(evhttp_bound_socket_get_fd(s), (struct sockaddr *)&ss,
                      &sl))
        pt = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    }
    if(write(fds[1], &pt, sizeof(pt)) != (ssize_t)sizeof(pt))
      _exit(1);
    close(fds[1]);
    event_base_dispatch(b);
    _exit(0);
  }
  close(fds[1]);
  if(pid < 0 || read(fds[0], port, sizeof(*port)) != (ssize_t)sizeof(*port) ||
     *port <= 0) {
    close(fds[0]);
    if(pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, NULL, 0);
    }
    return -1;
  }
  close(fds[0]);
  return pid;
}

typedef struct areply {
  int calls;
  sc_err err;
  char msg[SC_ERRBUF_SIZE];
} areply;

static void on_reply(store_reply *rep, void *ud)
{
  areply *a = ud;
  a->calls++;
  a->err = rep->err;
  snprintf(a->msg, sizeof(a->msg), "%s", rep->message);
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
    {OP_LIST, "badtype", SC_ERR_PROTOCOL, "list item 0 does not decode",
     true},
    {OP_LIST, "nul", SC_ERR_PROTOCOL, "does not decode", true},
    {OP_LIST, "deep", SC_ERR_PROTOCOL, "not JSON", true},
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
  FILE *f;
  int port = 0;
  size_t i;
  pid_t pid;
  CHECK(mkdtemp(dir));
  pid = server_start(&port);
  CHECK(pid > 0);
  snprintf(peer, sizeof(peer), "http://127.0.0.1:%d", port);
  snprintf(kc, sizeof(kc), "%s/kc", dir);
  f = fopen(kc, "w");
  CHECK(f);
  fprintf(f, "apiVersion: v1\nkind: Config\ncurrent-context: t\nclusters:\n"
          "- name: t\n  cluster: {server: \"%s\"}\ncontexts:\n- name: t\n"
          "  context: {cluster: t, user: u}\nusers:\n- name: u\n  user: {}\n",
          peer);
  fclose(f);
  b = event_base_new();
  memset(&o, 0, sizeof(o));
  o.base = b;
  o.kubeconfig = kc;
  eb.msg[0] = '\0';
  CHECK_MSG(!store_open("kube", &o, &st, &eb), "%s", eb.msg);
  memset(&status, 0, sizeof(status));
  status.phase = SESSION_PHASE_RUNNING;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    store_list_opts lo = {cases[i].ns, true};
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
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
  unlink(kc);
  rmdir(dir);
}

TEST_LIST = {
  T(hostile_server_clear_errors_sync_and_async),
  {0},
};
TEST_MAIN()
