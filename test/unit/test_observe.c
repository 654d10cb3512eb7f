/* Tests of the observation's lists (controller/observe/observe.h): a full
 * pass that lists a state one tenant at a time (observe_lists, what a
 * sharded replica does where that takes fewer requests) sends each
 * tenant's filter, counts every page as a request, and fails or is
 * marked short exactly as a whole list is. A small HTTP server stands in
 * for Cube: it decodes the metadata filter as E2B does and pages by
 * 100 rows when told to. */
#include "test/harness.h"
#include "controller/observe/observe.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define DATE "Sun, 29 Nov 2026 10:15:00 GMT"
#define MB "session-controller"

typedef struct row {
  const char *tenant;
  const char *state;
} row;

typedef struct fake {
  struct event_base *base;
  struct evhttp *http;
  int port;
  bool pages;          /* e2b: X-Next-Token by 100 rows; else one page */
  const char *refuse;  /* a tenant whose list is answered 400 */
  row rows[400];
  int n_rows;
  int requests;
  char filters[16][160]; /* "state tenant" of each first page asked */
  int n_filters;
} fake;

static void add_rows(fake *f, const char *tenant, const char *state, int n)
{
  while(n-- > 0 && f->n_rows < 400) {
    f->rows[f->n_rows].tenant = tenant;
    f->rows[f->n_rows].state = state;
    f->n_rows++;
  }
}

static const char *qparam(const char *q, const char *name, char *buf,
                          size_t len)
{
  size_t n = strlen(name);
  const char *p = q;
  while(p && *p) {
    if(!strncmp(p, name, n) && p[n] == '=') {
      const char *e = strchr(p, '&');
      snprintf(buf, len, "%.*s", e ? (int)(e - p - n - 1)
                                   : (int)strlen(p + n + 1), p + n + 1);
      return buf;
    }
    p = strchr(p, '&');
    if(p)
      p++;
  }
  return NULL;
}

static void reply(struct evhttp_request *req, int code, const char *body)
{
  struct evbuffer *b = evbuffer_new();
  evhttp_add_header(evhttp_request_get_output_headers(req), "Date", DATE);
  evbuffer_add(b, body, strlen(body));
  evhttp_send_reply(req, code, "X", b);
  evbuffer_free(b);
}

static void on_req(struct evhttp_request *req, void *arg)
{
  fake *f = arg;
  const char *u = evhttp_request_get_uri(req), *q = strchr(u, '?');
  char meta[1024] = "", st[32] = "", tok[32] = "", id[48];
  const char *want_t, *want_mb;
  sc_kvlist filter = {0};
  sc_errbuf eb;
  struct evbuffer *b;
  int i, skip = 0, sent = 0, matched = 0;
  f->requests++;
  q = q ? q + 1 : "";
  qparam(q, "metadata", meta, sizeof(meta));
  qparam(q, "state", st, sizeof(st));
  qparam(q, "nextToken", tok, sizeof(tok));
  if(*meta && cube_meta_decode(meta, &filter, &eb)) {
    reply(req, 400, "{\"code\":400,\"message\":\"bad metadata\"}");
    return;
  }
  want_t = sc_kvlist_get(&filter, "lea.tenant_id");
  want_mb = sc_kvlist_get(&filter, "lea.managed-by");
  if(!*tok && f->n_filters < 16)
    snprintf(f->filters[f->n_filters++], sizeof(f->filters[0]), "%s %s", st,
             want_t ? want_t : "*");
  if(want_t && f->refuse && !strcmp(want_t, f->refuse)) {
    sc_kvlist_clear(&filter);
    reply(req, 400, "{\"code\":400,\"message\":\"refused\"}");
    return;
  }
  if(*tok)
    skip = (int)strtol(tok + 1, NULL, 10); /* "p<offset>" */
  b = evbuffer_new();
  evbuffer_add_printf(b, "[");
  for(i = 0; i < f->n_rows; i++) {
    const row *r = &f->rows[i];
    if((want_mb && strcmp(want_mb, MB)) ||
       (want_t && strcmp(want_t, r->tenant)) || strcmp(st, r->state))
      continue;
    if(matched++ < skip)
      continue;
    if(f->pages && sent == 100) {
      char next[32];
      snprintf(next, sizeof(next), "p%d", skip + 100);
      evhttp_add_header(evhttp_request_get_output_headers(req),
                        "X-Next-Token", next);
      break;
    }
    snprintf(id, sizeof(id), "sb-%d", i);
    evbuffer_add_printf(b, "%s{\"sandboxID\":\"%s\",\"templateID\":\"t\","
                        "\"state\":\"%s\",\"startedAt\":\"2026-11-29T10:00:"
                        "00Z\",\"endAt\":\"2026-11-29T10:30:00Z\","
                        "\"metadata\":{\"lea.managed-by\":\"" MB "\","
                        "\"lea.tenant_id\":\"%s\",\"lea.session_id\":\"s%d\"}}",
                        sent ? "," : "", id, r->state, r->tenant, i);
    sent++;
  }
  evbuffer_add_printf(b, "]");
  sc_kvlist_clear(&filter);
  evhttp_add_header(evhttp_request_get_output_headers(req), "Date", DATE);
  evhttp_send_reply(req, 200, "OK", b);
  evbuffer_free(b);
}

static int fake_start(fake *f, struct event_base *base)
{
  struct evhttp_bound_socket *bs;
  struct sockaddr_in sa;
  socklen_t sl = sizeof(sa);
  f->base = base;
  if(!(f->http = evhttp_new(base)))
    return -1;
  evhttp_set_gencb(f->http, on_req, f);
  if(!(bs = evhttp_bind_socket_with_handle(f->http, "127.0.0.1", 0)) ||
     getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&sa,
                 &sl))
    return -1;
  f->port = ntohs(sa.sin_port);
  return 0;
}

typedef struct world {
  struct event_base *base;
  fake *f;
  cube_client *c;
  metrics *m;
  observation *obs;
  int done;
} world;

static void on_obs(observation *obs, void *ud)
{
  world *w = ud;
  w->obs = obs;
  w->done++;
}

static int world_new(world *w, bool pages)
{
  cube_client_opts o;
  sc_errbuf eb;
  char url[64];
  memset(w, 0, sizeof(*w));
  w->base = event_base_new();
  w->f = calloc(1, sizeof(*w->f));
  w->m = metrics_new();
  if(!w->base || !w->f || !w->m || fake_start(w->f, w->base))
    return -1;
  w->f->pages = pages;
  if(metrics_declare(w->m, "session_controller_cube_requests_total",
                     METRIC_COUNTER, "x", NULL, 0) ||
     metrics_declare(w->m, "session_controller_cube_list_requests_total",
                     METRIC_COUNTER, "x", NULL, 0))
    return -1;
  snprintf(url, sizeof(url), "http://127.0.0.1:%d", w->f->port);
  cube_client_opts_init(&o);
  o.base_url = url;
  o.qps = 0;
  if(!(w->c = cube_client_new(w->base, &o, &eb)))
    return -1;
  /* e2b pages and ends a list with a page without a token, full or not;
   * a server not known to page may have cut a full page short */
  cube_client_set_dialect(w->c, pages ? CUBE_DIALECT_E2B
                                      : CUBE_DIALECT_CUBE);
  return 0;
}

static void world_free(world *w)
{
  observation_free(w->obs);
  cube_client_free(w->c);
  if(w->f && w->f->http)
    evhttp_free(w->f->http);
  free(w->f);
  metrics_free(w->m);
  if(w->base)
    event_base_free(w->base);
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
  (void)fd;
  (void)what;
  (void)arg;
}

static int observe_lists_now(world *w, const observe_lists *lists)
{
  sc_kvlist filter = {0};
  struct event *t = evtimer_new(w->base, tick, NULL);
  struct timeval tv = {0, 20000};
  int64_t end = sctime_mono_ms() + 5000;
  sc_err err;
  if(!t || sc_kvlist_set(&filter, "lea.managed-by", MB))
    return -1;
  err = observe_start_lists(w->c, w->m, NULL, &filter, NULL, 0, lists, NULL,
                            0, on_obs, w);
  sc_kvlist_clear(&filter);
  while(!err && !w->done && sctime_mono_ms() < end) {
    evtimer_add(t, &tv);
    event_base_loop(w->base, EVLOOP_ONCE);
  }
  event_free(t);
  return err || !w->done ? -1 : 0;
}

static bool asked(const fake *f, const char *what)
{
  int i;
  for(i = 0; i < f->n_filters; i++)
    if(!strcmp(f->filters[i], what))
      return true;
  return false;
}

static size_t rows_of(const observation *o, const char *tenant)
{
  size_t i, n = 0;
  for(i = 0; i < o->n_sbs; i++) {
    const char *t = sc_kvlist_get(&o->sbs[i].metadata, "lea.tenant_id");
    n += t && !strcmp(t, tenant);
  }
  return n;
}

TEST(running_by_tenant_paused_whole_counts_every_page)
{
  world w;
  const char *ten[2] = {"ta", "tb"};
  observe_lists l = {{true, false}, ten, 2};
  CHECK(world_new(&w, true) == 0);
  add_rows(w.f, "ta", "running", 150); /* 2 pages */
  add_rows(w.f, "tb", "running", 3);
  add_rows(w.f, "tb", "paused", 2);
  add_rows(w.f, "tc", "running", 40);  /* not owned: not listed running */
  add_rows(w.f, "tc", "paused", 1);    /* the paused list is whole */
  CHECK(observe_lists_now(&w, &l) == 0);
  CHECK(!w.obs->failed);
  CHECK(!w.obs->truncated);
  CHECK(w.obs->by_tenant[0] && !w.obs->by_tenant[1]);
  CHECK(asked(w.f, "running ta"));
  CHECK(asked(w.f, "running tb"));
  CHECK(asked(w.f, "paused *"));
  CHECK(!asked(w.f, "running *"));
  CHECK_INT(rows_of(w.obs, "ta"), 150);
  CHECK_INT(rows_of(w.obs, "tb"), 5);
  CHECK_INT(rows_of(w.obs, "tc"), 1);
  CHECK_INT(w.obs->n_sbs, 156);
  CHECK_INT(w.obs->list_requests[0], 3); /* ta 2 pages, tb 1 */
  CHECK_INT(w.obs->list_requests[1], 1);
  CHECK_INT(w.f->requests, 4);
  CHECK(w.obs->cube_now != 0);
  /* counted as requests, by kind */
  CHECK_INT(metrics_get(w.m, "session_controller_cube_list_requests_total",
                        "kind=\"tenant\",state=\"running\""), 3);
  CHECK_INT(metrics_get(w.m, "session_controller_cube_list_requests_total",
                        "kind=\"whole\",state=\"paused\""), 1);
  CHECK_INT(metrics_get(w.m, "session_controller_cube_requests_total",
                        "op=\"list\",code=\"200\""), 4);
  world_free(&w);
}

TEST(a_refused_tenant_list_fails_the_observation)
{
  world w;
  const char *ten[3] = {"ta", "bad", "tb"};
  observe_lists l = {{true, true}, ten, 3};
  CHECK(world_new(&w, true) == 0);
  add_rows(w.f, "ta", "running", 5);
  add_rows(w.f, "tb", "paused", 5);
  w.f->refuse = "bad";
  CHECK(observe_lists_now(&w, &l) == 0);
  /* one tenant's list failed: no plan on the others' (a partial view) */
  CHECK(w.obs->failed);
  CHECK(w.obs->fail_msg && strstr(w.obs->fail_msg, "400") != NULL);
  world_free(&w);
}

TEST(a_tenant_list_that_may_be_short_marks_the_observation)
{
  world w;
  const char *ten[1] = {"ta"};
  observe_lists l = {{true, true}, ten, 1};
  /* a server not known to page answers 100 rows and no token: maybe cut */
  CHECK(world_new(&w, false) == 0);
  add_rows(w.f, "ta", "running", 100);
  CHECK(observe_lists_now(&w, &l) == 0);
  CHECK(!w.obs->failed);
  CHECK(w.obs->truncated);
  CHECK_INT(rows_of(w.obs, "ta"), 100);
  world_free(&w);
}

TEST(no_tenant_still_lists_the_paused_state_whole)
{
  world w;
  observe_lists l = {{true, true}, NULL, 0};
  CHECK(world_new(&w, true) == 0);
  add_rows(w.f, "ta", "paused", 2);
  add_rows(w.f, "ta", "running", 7);
  CHECK(observe_lists_now(&w, &l) == 0);
  CHECK(!w.obs->failed);
  CHECK(w.obs->by_tenant[0] && !w.obs->by_tenant[1]);
  CHECK_INT(w.f->requests, 1);
  CHECK(asked(w.f, "paused *"));
  CHECK_INT(w.obs->n_sbs, 2);
  CHECK(w.obs->cube_now != 0);
  world_free(&w);
}

TEST(no_plan_lists_each_state_whole)
{
  world w;
  CHECK(world_new(&w, true) == 0);
  add_rows(w.f, "ta", "running", 120);
  add_rows(w.f, "tb", "paused", 1);
  CHECK(observe_lists_now(&w, NULL) == 0);
  CHECK(!w.obs->failed);
  CHECK(asked(w.f, "running *") && asked(w.f, "paused *"));
  CHECK_INT(w.obs->n_sbs, 121);
  CHECK_INT(w.obs->list_requests[0], 2);
  CHECK_INT(metrics_get(w.m, "session_controller_cube_list_requests_total",
                        "kind=\"whole\",state=\"running\""), 2);
  world_free(&w);
}

TEST_LIST = {
  T(running_by_tenant_paused_whole_counts_every_page),
  T(a_refused_tenant_list_fails_the_observation),
  T(a_tenant_list_that_may_be_short_marks_the_observation),
  T(no_tenant_still_lists_the_paused_state_whole),
  T(no_plan_lists_each_state_whole),
  {NULL, NULL}};

TEST_MAIN()
