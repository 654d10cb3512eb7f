/* Tests of the kube store's member Leases (controller/store/kube/kube_members.c,
 * store/members.h) against kube-apiserver-fake, run in a child process
 * (the synchronous calls run a private loop, so it cannot share ours):
 * register and list by label (a Lease of another group, or without the
 * label, is not a member), the version moves at every renewal, a prune
 * by a stale version leaves a renewed member (the DELETE precondition), a
 * removal by the current one or none deletes it, a pruned member puts
 * its Lease back at its next renewal, the asynchronous forms answer from
 * the loop, a Lease of the group that is not a member's is a clear error,
 * and a controller name that is no label value is refused. */
#include "test/harness.h"
#include "test/unit/child_server.h"
#include "cmd/kube-apiserver-fake/kf.h"
#include "controller/store/members.h"
#include "controller/store/store.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <curl/curl.h>
#include <event2/event.h>

#define LEASES "/apis/coordination.k8s.io/v1/namespaces/default/leases"

/* the fake's setup in its child: its port, -1 when it cannot listen */
static int fake_listen(struct event_base *b, void *arg)
{
  kf_opts o;
  int pt = -1;
  (void)arg;
  memset(&o, 0, sizeof(o));
  if(!kf_server_new(b, "127.0.0.1", 0, &o, &pt))
    return -1;
  return pt;
}

/* one raw call to the fake; the HTTP status */
static long raw(int port, const char *method, const char *path,
                const char *body)
{
  CURL *c = curl_easy_init();
  struct curl_slist *h = NULL;
  char url[600];
  long code = 0;
  FILE *devnull = fopen("/dev/null", "w");
  snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, devnull);
  if(body) {
    h = curl_slist_append(h, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  }
  if(curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  if(devnull)
    fclose(devnull);
  return code;
}

typedef struct env {
  pid_t pid;
  int port;
  char dir[256], kc[320];
  struct event_base *b;
  store *st;
} env;

static bool env_open(env *e)
{
  const char *base = getenv("TMPDIR");
  store_open_opts o;
  sc_errbuf eb;
  memset(e, 0, sizeof(*e));
  e->pid = child_server_start(fake_listen, NULL, 60, &e->port);
  if(e->pid < 0)
    return false;
  snprintf(e->dir, sizeof(e->dir), "%s/sc-members-XXXXXX",
           base && *base ? base : "/tmp");
  if(!mkdtemp(e->dir))
    return false;
  snprintf(e->kc, sizeof(e->kc), "%s/kc", e->dir);
  if(kubeconfig_write(e->kc, e->port))
    return false;
  e->b = event_base_new();
  memset(&o, 0, sizeof(o));
  o.base = e->b;
  o.kubeconfig = e->kc;
  eb.msg[0] = '\0';
  return store_open("kube", &o, &e->st, &eb) == SC_OK;
}

static void env_close(env *e)
{
  store_close(e->st);
  if(e->b)
    event_base_free(e->b);
  child_server_stop(e->pid);
  if(e->kc[0])
    unlink(e->kc);
  if(e->dir[0])
    rmdir(e->dir);
}

TEST(members_as_leases_by_label)
{
  env e;
  store_member_list l = {NULL, 0};
  sc_errbuf eb;
  char va[64], vb[64];
  bool ok = env_open(&e);
  eb.msg[0] = '\0';
  if(!ok) {
    env_close(&e);
    CHECK_MSG(false, "cannot start the fake or open the store");
  }
  CHECK(store_members_supported(e.st));
  /* a Lease of another group, and one without the label */
  CHECK_INT(raw(e.port, "POST", LEASES, "{\"apiVersion\":"
                "\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{"
                "\"name\":\"o\",\"labels\":{\"lea.io/member-of\":\"other\"}},"
                "\"spec\":{\"holderIdentity\":\"o\"}}"), 201);
  CHECK_INT(raw(e.port, "POST", LEASES, "{\"apiVersion\":"
                "\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{"
                "\"name\":\"grp\"},\"spec\":{\"holderIdentity\":\"x\"}}"), 201);
  CHECK_OK(store_members_scope(e.st, "grp", &eb));
  CHECK_OK(store_members_renew(e.st, "A#1", 1000, &l, &eb));
  CHECK_INT(l.n, 1);
  CHECK_STR(l.items[0].id, "A#1");
  CHECK_INT(l.items[0].period_ms, 1000);
  snprintf(va, sizeof(va), "%s", l.items[0].version);
  store_member_list_clear(&l);
  CHECK_OK(store_members_renew(e.st, "b", 250, &l, &eb));
  CHECK_INT(l.n, 2);
  CHECK_STR(l.items[0].id, "A#1");
  CHECK_STR(l.items[1].id, "b");
  CHECK_INT(l.items[1].period_ms, 250);
  CHECK_STR(l.items[0].version, va);
  snprintf(vb, sizeof(vb), "%s", l.items[1].version);
  store_member_list_clear(&l);
  /* the Lease's name: GROUP-member-ID as a DNS name-HASH */
  CHECK_INT(raw(e.port, "GET", LEASES "/grp-member-b-e70c2de5", NULL), 200);
  CHECK_OK(store_members_renew(e.st, "A#1", 1000, &l, &eb));
  CHECK(strcmp(l.items[0].version, va) != 0); /* it moved */
  CHECK_STR(l.items[1].version, vb);
  store_member_list_clear(&l);
  /* a prune by the stale version leaves the renewed member */
  CHECK_OK(store_members_remove(e.st, "A#1", va, &eb));
  CHECK_OK(store_members_renew(e.st, "b", 250, &l, &eb));
  CHECK_INT(l.n, 2);
  snprintf(va, sizeof(va), "%s", l.items[0].version);
  store_member_list_clear(&l);
  /* by the current one it goes; it comes back at its next renewal */
  CHECK_OK(store_members_remove(e.st, "A#1", va, &eb));
  CHECK_OK(store_members_renew(e.st, "b", 250, &l, &eb));
  CHECK_INT(l.n, 1);
  store_member_list_clear(&l);
  CHECK_OK(store_members_renew(e.st, "A#1", 1000, &l, &eb));
  CHECK_INT(l.n, 2);
  store_member_list_clear(&l);
  /* without a version (SIGTERM): gone; absent again is fine */
  CHECK_OK(store_members_remove(e.st, "b", NULL, &eb));
  CHECK_OK(store_members_remove(e.st, "b", NULL, &eb));
  CHECK_OK(store_members_renew(e.st, "A#1", 1000, &l, &eb));
  CHECK_INT(l.n, 1);
  store_member_list_clear(&l);
  /* the other Leases were never touched */
  CHECK_INT(raw(e.port, "GET", LEASES "/o", NULL), 200);
  CHECK_INT(raw(e.port, "GET", LEASES "/grp", NULL), 200);
  env_close(&e);
}

static void on_ans(sc_err err, const char *msg, store_member_list *l,
                   void *ud)
{
  int *n = ud;
  (void)msg;
  *n = err ? -1 : (int)l->n;
}

static void on_msg(sc_err err, const char *msg, store_member_list *l,
                   void *ud)
{
  char *m = ud;
  (void)l;
  snprintf(m, SC_ERRBUF_SIZE, "%s", err ? msg : "ok");
}

TEST(members_async_and_errors)
{
  env e;
  sc_errbuf eb;
  store_members_req *q = NULL;
  int got = -2, cancelled = -2, i;
  char msg[SC_ERRBUF_SIZE] = "";
  bool ok = env_open(&e);
  eb.msg[0] = '\0';
  if(!ok) {
    env_close(&e);
    CHECK_MSG(false, "cannot start the fake or open the store");
  }
  CHECK(store_members_scope(e.st, "bad name!", &eb) == SC_ERR_INVALID);
  CHECK(strstr(eb.msg, "\"bad name!\" is not a label value") != NULL);
  /* before a scope: refused, not sent */
  CHECK(store_members_renew_async(e.st, "a", 100, on_ans, &got, NULL,
                                  &eb) == SC_ERR_INVALID);
  CHECK_OK(store_members_scope(e.st, "grp", &eb));
  CHECK_OK(store_members_renew_async(e.st, "a", 100, on_ans, &got, NULL,
                                     &eb));
  CHECK_INT(got, -2); /* answered from the loop, not inside the call */
  for(i = 0; i < 200 && got == -2; i++)
    event_base_loop(e.b, EVLOOP_ONCE);
  CHECK_INT(got, 1);
  /* a cancelled one never answers */
  CHECK_OK(store_members_renew_async(e.st, "c", 100, on_ans, &cancelled, &q,
                                     &eb));
  CHECK(q != NULL);
  store_members_req_cancel(q);
  got = -2;
  CHECK_OK(store_members_remove_async(e.st, "a", NULL, on_ans, &got, NULL,
                                      &eb));
  for(i = 0; i < 200 && got == -2; i++)
    event_base_loop(e.b, EVLOOP_ONCE);
  CHECK_INT(got, 0);
  CHECK_INT(cancelled, -2);
  /* a Lease of the group that no member's renewal wrote: a clear error
   * naming it */
  CHECK_INT(raw(e.port, "POST", LEASES, "{\"apiVersion\":"
                "\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{"
                "\"name\":\"stray\",\"labels\":{\"lea.io/member-of\":\"grp\"}},"
                "\"spec\":{}}"), 201);
  CHECK_OK(store_members_renew_async(e.st, "a", 100, on_msg, msg, NULL, &eb));
  for(i = 0; i < 200 && !msg[0]; i++)
    event_base_loop(e.b, EVLOOP_ONCE);
  CHECK_MSG(strstr(msg, "Lease stray: spec.holderIdentity is not a member "
                   "ID") != NULL, "message: %s", msg);
  env_close(&e);
}

TEST_LIST = {
  T(members_as_leases_by_label),
  T(members_async_and_errors),
  {0}
};
TEST_MAIN()
