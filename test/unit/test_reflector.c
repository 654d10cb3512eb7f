/* Tests of controller/store/reflector.c against the sqlite store: the
 * list comes before the events of the watch that follows it; an expired
 * watch (history compacted past its position) is listed again; failed
 * lists back off (doubling, jittered into [d/2, d], capped) and a list
 * that succeeds resets the backoff; stop from inside a callback; and the
 * finalizer call of a backend without finalizers (nothing to do).
 *
 * List failures are injected by a copy of the sqlite backend's table
 * whose list fails while `fail_lists` > 0: everything else is the sqlite
 * store's own code. */
#include "test/harness.h"
#include "controller/store/backend.h"
#include "controller/store/reflector.h"
#include "lib/sctime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <event2/event.h>

static int fail_lists;              /* the next lists that fail */
static store_ops faulty;            /* sqlite's table, list wrapped */
static const store_ops *real_ops;

static int shared_lists;            /* lists asked with opts->shared */

static sc_err faulty_list(store *st, const store_list_opts *opts,
                          store_list_result *out, sc_errbuf *eb)
{
  /* the reflector keeps its objects: it must never ask for shared ones
   * (an opts field left unset read as true under -O2 in the controller;
   * the ASan build's UBSan stops on the load of such a bool) */
  if(opts->shared)
    shared_lists++;
  if(fail_lists > 0) {
    fail_lists--;
    return sc_errf(eb, SC_ERR_BUSY, "injected: the database is locked");
  }
  return real_ops->list(st, opts, out, eb);
}

typedef struct env {
  char dir[64], url[128];
  struct event_base *b;
  store *st;
} env;

static int env_open(env *e, int keep, int poll_ms)
{
  store_open_opts o;
  sc_errbuf eb;
  memset(e, 0, sizeof(*e));
  snprintf(e->dir, sizeof(e->dir), "/tmp/sc-refl-XXXXXX");
  if(!mkdtemp(e->dir))
    return -1;
  snprintf(e->url, sizeof(e->url), "sqlite:%s/s.db", e->dir);
  e->b = event_base_new();
  memset(&o, 0, sizeof(o));
  o.base = e->b;
  o.create = true;
  o.poll_interval_ms = poll_ms;
  o.history_keep = keep;
  if(!e->b || store_open(e->url, &o, &e->st, &eb)) {
    fprintf(stderr, "  store_open: %s\n", eb.msg);
    return -1;
  }
  real_ops = e->st->ops;
  faulty = *real_ops;
  faulty.list = faulty_list;
  e->st->ops = &faulty;
  fail_lists = 0;
  return 0;
}

static void env_close(env *e)
{
  char p[128];
  store_close(e->st);
  if(e->b)
    event_base_free(e->b);
  snprintf(p, sizeof(p), "%s/s.db", e->dir);
  unlink(p);
  snprintf(p, sizeof(p), "%s/s.db-wal", e->dir);
  unlink(p);
  snprintf(p, sizeof(p), "%s/s.db-shm", e->dir);
  unlink(p);
  rmdir(e->dir);
}

static void put(env *e, const char *name, const char *tmpl)
{
  session *s = session_new();
  sc_errbuf eb;
  s->meta.namespace_ = strdup("ns");
  s->meta.name = strdup(name);
  s->spec.template_id = strdup(tmpl);
  session_apply_defaults(s);
  if(store_apply(e->st, &s, 1, NULL, &eb))
    fprintf(stderr, "  apply: %s\n", eb.msg);
  session_free(s);
}

/* what the callbacks saw, in order: "L2" a list of 2, "A:x" an event,
 * "E" an error (its delay in delays[]) */
typedef struct seen {
  char order[2048];
  int lists, events, errors;
  sc_err last_err;
  int64_t delays[16];
  reflector_phase phases[16];
  int stop_in; /* 1: free the reflector from the relisted callback */
  reflector *r;
} seen;

static void add(seen *w, const char *s)
{
  size_t n = strlen(w->order);
  snprintf(w->order + n, sizeof(w->order) - n, "%s ", s);
}

static void on_relisted(store_list_result *l, void *ud)
{
  seen *w = ud;
  char b[32];
  snprintf(b, sizeof(b), "L%zu", l->n);
  add(w, b);
  w->lists++;
  if(w->stop_in == 1) {
    reflector_free(w->r);
    w->r = NULL;
  }
}

static void on_event(const store_event *ev, void *ud)
{
  seen *w = ud;
  char b[300];
  snprintf(b, sizeof(b), "%c:%s", store_event_type_name(ev->type)[0],
           ev->obj->meta.name);
  add(w, b);
  w->events++;
}

static void on_error(reflector_phase ph, sc_err err, const char *msg,
                     int64_t delay_ms, void *ud)
{
  seen *w = ud;
  (void)msg;
  if(w->errors < 16) {
    w->delays[w->errors] = delay_ms;
    w->phases[w->errors] = ph;
  }
  w->errors++;
  w->last_err = err;
  add(w, "E");
}

static const reflector_cbs cbs = {on_relisted, on_event, on_error};

static void tick(evutil_socket_t fd, short what, void *arg)
{
  (void)fd;
  (void)what;
  (void)arg;
}

/* run the loop until *v reaches want (or ms passed) */
static void run_until(struct event_base *b, const int *v, int want, int ms)
{
  struct event *t = evtimer_new(b, tick, NULL);
  struct timeval tv = {0, 10000};
  int i;
  for(i = 0; i < ms / 10 && (!v || *v < want); i++) {
    evtimer_add(t, &tv);
    event_base_loop(b, EVLOOP_ONCE);
  }
  event_free(t);
}

static reflector *start(env *e, seen *w, int backoff, int backoff_max)
{
  reflector_opts o;
  reflector *r = NULL;
  sc_errbuf eb;
  memset(&o, 0, sizeof(o));
  o.base = e->b;
  o.backoff_ms = backoff;
  o.backoff_max_ms = backoff_max;
  if(reflector_new(e->st, &o, &cbs, w, &r, &eb) ||
     reflector_start(r, &eb)) {
    fprintf(stderr, "  reflector: %s\n", eb.msg);
    reflector_free(r);
    return NULL;
  }
  w->r = r;
  return r;
}

TEST(list_comes_before_the_events_of_its_watch)
{
  env e;
  seen w;
  reflector *r;
  CHECK(env_open(&e, 0, 10) == 0);
  memset(&w, 0, sizeof(w));
  put(&e, "a", "t");
  put(&e, "b", "t");
  r = start(&e, &w, 100, 1000);
  CHECK(r != NULL);
  CHECK_INT(w.lists, 0); /* nothing inside reflector_start() */
  run_until(e.b, &w.lists, 1, 2000);
  CHECK_INT(w.lists, 1);
  CHECK(reflector_watching(r));
  CHECK_STR(reflector_revision(r), "2");
  put(&e, "c", "t");
  put(&e, "a", "t2");
  run_until(e.b, &w.events, 2, 2000);
  CHECK_STR(w.order, "L2 A:c M:a ");
  CHECK_STR(reflector_revision(r), "4");
  CHECK_INT(w.errors, 0);
  CHECK_INT(reflector_lists(r), 1);
  CHECK_INT(shared_lists, 0);
  reflector_free(r);
  put(&e, "d", "t");
  run_until(e.b, NULL, 0, 100); /* freed: nothing more */
  CHECK_STR(w.order, "L2 A:c M:a ");
  env_close(&e);
}

/* The history keeps 3 revisions; 10 writes between two polls of the
 * watch compact it past the watch's position: SC_ERR_EXPIRED, and the
 * reflector lists again (the list has every object) and watches on. */
TEST(an_expired_watch_is_listed_again)
{
  env e;
  seen w;
  reflector *r;
  int i;
  CHECK(env_open(&e, 3, 150) == 0);
  memset(&w, 0, sizeof(w));
  put(&e, "a", "t");
  r = start(&e, &w, 50, 1000);
  run_until(e.b, &w.lists, 1, 2000);
  CHECK_INT(w.lists, 1);
  usleep(60 * 1000); /* the watch has run for more than one backoff step */
  for(i = 0; i < 10; i++) {
    char n[16];
    snprintf(n, sizeof(n), "x%d", i);
    put(&e, n, "t");
  }
  run_until(e.b, &w.lists, 2, 3000);
  CHECK_INT(w.errors, 1);
  CHECK_INT(w.last_err, SC_ERR_EXPIRED);
  CHECK_INT(w.delays[0], 0); /* at once: the watch had run long enough */
  CHECK_INT(w.lists, 2);
  CHECK_STR(w.order, "L1 E L11 ");
  put(&e, "after", "t");
  run_until(e.b, &w.events, 1, 2000);
  CHECK_STR(w.order, "L1 E L11 A:after ");
  reflector_free(r);
  env_close(&e);
}

/* Three failed lists wait [50,100], [100,200], [150,300] ms (backoff 100
 * doubling, capped at 300); the fourth list succeeds and resets the
 * backoff: the next failure waits [50,100] again. */
TEST(failed_lists_back_off_and_a_success_resets)
{
  env e;
  seen w;
  reflector *r;
  int64_t t0, took;
  int i;
  CHECK(env_open(&e, 3, 150) == 0);
  memset(&w, 0, sizeof(w));
  put(&e, "a", "t");
  fail_lists = 3;
  t0 = sctime_mono_ms();
  r = start(&e, &w, 100, 300);
  run_until(e.b, &w.lists, 1, 5000);
  took = sctime_mono_ms() - t0;
  CHECK_INT(w.errors, 3);
  CHECK_INT(w.lists, 1);
  CHECK_STR(w.order, "E E E L1 ");
  CHECK_MSG(w.delays[0] >= 50 && w.delays[0] <= 100, "%lld",
            (long long)w.delays[0]);
  CHECK_MSG(w.delays[1] >= 100 && w.delays[1] <= 200, "%lld",
            (long long)w.delays[1]);
  CHECK_MSG(w.delays[2] >= 150 && w.delays[2] <= 300, "%lld",
            (long long)w.delays[2]);
  /* the waits were real (libevent's timers run on the coarse monotonic
   * clock, a few ms behind the precise one: 10 ms of slack per wait) */
  CHECK_MSG(took + 30 >= w.delays[0] + w.delays[1] + w.delays[2],
            "took %lld", (long long)took);
  CHECK_INT(reflector_failures(r), 0);
  /* the watch expires (as above) and the relist fails: the first step */
  usleep(120 * 1000);
  fail_lists = 1;
  for(i = 0; i < 10; i++) {
    char n[16];
    snprintf(n, sizeof(n), "x%d", i);
    put(&e, n, "t");
  }
  run_until(e.b, &w.lists, 2, 5000);
  CHECK_STR(w.order, "E E E L1 E E L11 ");
  CHECK_INT(w.delays[3], 0);    /* the expired watch: relist at once */
  /* what failed, as the owner is told: lists, the watch, a list */
  CHECK_INT(w.phases[0], REFLECTOR_LIST);
  CHECK_INT(w.phases[2], REFLECTOR_LIST);
  CHECK_INT(w.phases[3], REFLECTOR_WATCH_ENDED);
  CHECK_INT(w.phases[4], REFLECTOR_LIST);
  CHECK_MSG(w.delays[4] >= 50 && w.delays[4] <= 100, "reset? %lld",
            (long long)w.delays[4]);
  reflector_free(r);
  env_close(&e);
}

TEST(freed_from_its_own_callback)
{
  env e;
  seen w;
  CHECK(env_open(&e, 0, 10) == 0);
  memset(&w, 0, sizeof(w));
  w.stop_in = 1;
  put(&e, "a", "t");
  CHECK(start(&e, &w, 100, 1000) != NULL);
  run_until(e.b, &w.lists, 1, 2000);
  CHECK_INT(w.lists, 1);
  CHECK(w.r == NULL);
  put(&e, "b", "t");
  run_until(e.b, NULL, 0, 200);
  CHECK_STR(w.order, "L1 "); /* no watch was started after it */
  env_close(&e);
}

/* right after the first list went out (a 0 ms timer added after the
 * reflector's own): free it with the answer still to come */
typedef struct inflight {
  reflector *r;
  int was_in_flight;
} inflight;

static void free_now(evutil_socket_t fd, short what, void *arg)
{
  inflight *f = arg;
  (void)fd;
  (void)what;
  f->was_in_flight = reflector_list_in_flight(f->r);
  reflector_free(f->r);
}

TEST(freed_with_its_list_in_flight)
{
  env e;
  seen w;
  inflight f;
  struct timeval now = {0, 0};
  struct event *t;
  CHECK(env_open(&e, 0, 10) == 0);
  memset(&w, 0, sizeof(w));
  put(&e, "a", "t");
  f.r = start(&e, &w, 100, 1000);
  f.was_in_flight = -1;
  t = evtimer_new(e.b, free_now, &f);
  evtimer_add(t, &now);
  run_until(e.b, NULL, 0, 100);
  event_free(t);
  CHECK_INT(f.was_in_flight, 1);
  /* the answer came and was dropped (the reflector freed with it) */
  CHECK_INT(w.lists, 0);
  CHECK_STR(w.order, "");
  env_close(&e);
}

/* A backend without finalizers: store_needs_finalizer() is false and
 * store_ensure_finalizer_async() answers with the object as it stands
 * (nothing written), or SC_ERR_NOT_FOUND. */
typedef struct fin_reply {
  int calls;
  sc_err err;
  char rv[32];
} fin_reply;

static void on_fin(store_reply *rep, void *ud)
{
  fin_reply *f = ud;
  f->calls++;
  f->err = rep->err;
  snprintf(f->rv, sizeof(f->rv), "%s",
           rep->obj && rep->obj->meta.resource_version
             ? rep->obj->meta.resource_version : "");
}

TEST(sqlite_has_no_finalizer_to_add)
{
  env e;
  session *s = NULL, *ghost;
  fin_reply f, g;
  sc_errbuf eb;
  CHECK(env_open(&e, 0, 10) == 0);
  put(&e, "a", "t");
  CHECK_OK(store_get(e.st, "ns", "a", &s, &eb));
  CHECK(!store_needs_finalizer(e.st, s));
  memset(&f, 0, sizeof(f));
  CHECK_OK(store_ensure_finalizer_async(e.st, s, on_fin, &f, &eb));
  CHECK_INT(f.calls, 0); /* from the loop only */
  ghost = session_dup(s);
  free(ghost->meta.name);
  ghost->meta.name = strdup("ghost");
  memset(&g, 0, sizeof(g));
  CHECK_OK(store_ensure_finalizer_async(e.st, ghost, on_fin, &g, &eb));
  run_until(e.b, &g.calls, 1, 1000);
  CHECK_INT(f.calls, 1);
  CHECK_INT(f.err, SC_OK);
  CHECK_STR(f.rv, "1"); /* the object as it was: nothing written */
  CHECK_INT(g.err, SC_ERR_NOT_FOUND);
  session_free(ghost);
  session_free(s);
  env_close(&e);
}

TEST_LIST = {
  T(list_comes_before_the_events_of_its_watch),
  T(an_expired_watch_is_listed_again),
  T(failed_lists_back_off_and_a_success_resets),
  T(freed_from_its_own_callback),
  T(freed_with_its_list_in_flight),
  T(sqlite_has_no_finalizer_to_add),
  {0}
};
TEST_MAIN()
