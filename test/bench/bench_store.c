/*
 * bench_store.c - the SQLite store's own costs, without Cube or the
 * planner: a settled list, status writes one at a time, and a burst of
 * asynchronous status writes queued in one turn of the loop (how the
 * controller writes them during a create burst, 1,000 at a time).
 *
 * Usage: bench_store DBFILE N [LISTS]
 *   DBFILE  a path for a new store (must not exist; removed at the end)
 *   N       sessions: applied in batches of 1,000, then each given a
 *           status like the controller's for a running sandbox
 *   LISTS   settled lists timed (default 5)
 *
 * Prints one line per measure:
 *   setup: apply N in NMS ms, first status of each in SMS ms
 *   sync status writes: N in MS ms = R/s
 *   async status writes (1000 queued a turn): N in MS ms = R/s
 *   list N: first MS ms, then min MS median MS ms (LISTS lists)
 *   peak RSS: KB kB
 * Measures, never asserts. test/bench/bench_store.sh runs it beside
 * sessionctl apply of a directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <event2/event.h>

#include "controller/store/store.h"
#include "lib/sctime.h"

#define BATCH 1000
#define ASYNC_TURN 1000

static session *mk(long i)
{
  char name[32];
  session *s = session_new();
  snprintf(name, sizeof(name), "s%06ld", i);
  s->meta.namespace_ = strdup("bench");
  s->meta.name = strdup(name);
  s->spec.template_id = strdup("python-data");
  s->spec.state = SESSION_STATE_ACTIVE;
  sc_kvlist_set(&s->meta.labels, "course", "cs101");
  session_apply_defaults(s);
  return s;
}

/* a status as the controller writes it for a running sandbox; round
 * changes the end time so that each round is a real write */
static void status_for(session_status *st, long i, int round)
{
  char id[48];
  session_condition c;
  memset(st, 0, sizeof(*st));
  snprintf(id, sizeof(id), "sbx-%08ld-%d", i, round);
  st->phase = SESSION_PHASE_RUNNING;
  st->sandbox_id = strdup(id);
  st->sandbox_state = strdup("running");
  st->end_at = 1764600000000LL + i + round;
  st->observed_generation = 1;
  st->domain = strdup("cube.local");
  memset(&c, 0, sizeof(c));
  c.type = "Ready";
  c.status = "True";
  c.reason = "SandboxRunning";
  c.message = "the sandbox is running";
  c.last_transition_time = 1764600000000LL;
  c.observed_generation = 1;
  session_status_set_condition(st, &c);
}

static int cmp_i64(const void *a, const void *b)
{
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

typedef struct async_run {
  long done, failed;
} async_run;

static void on_write(store_reply *rep, void *ud)
{
  async_run *r = ud;
  r->done++;
  if(rep->err)
    r->failed++;
}

int main(int argc, char **argv)
{
  store_open_opts o;
  struct event_base *base;
  store *st = NULL;
  store_list_result lr;
  char url[4096], **ver;
  sc_errbuf eb;
  long n, i, lists;
  int64_t t0, t1, *ms;
  async_run ar;
  sc_err err;

  if(argc < 3 || argc > 4) {
    fprintf(stderr, "usage: bench_store DBFILE N [LISTS]\n");
    return 2;
  }
  n = strtol(argv[2], NULL, 10);
  lists = argc > 3 ? strtol(argv[3], NULL, 10) : 5;
  if(n <= 0 || lists <= 0 || !access(argv[1], F_OK)) {
    fprintf(stderr, "bench_store: want N > 0, LISTS > 0 and a new DBFILE\n");
    return 2;
  }
  base = event_base_new();
  memset(&o, 0, sizeof(o));
  o.base = base;
  o.create = true;
  o.relaxed_sync = true; /* as the controller opens it */
  snprintf(url, sizeof(url), "sqlite:%s", argv[1]);
  eb.msg[0] = 0;
  if(store_open(url, &o, &st, &eb)) {
    fprintf(stderr, "bench_store: %s\n", eb.msg);
    return 1;
  }
  ver = calloc((size_t)n, sizeof(*ver));
  ms = calloc((size_t)lists, sizeof(*ms));

  /* setup: apply in batches, then the first status of each */
  t0 = sctime_mono_ms();
  for(i = 0; i < n; i += BATCH) {
    session *objs[BATCH];
    long k, m = n - i < BATCH ? n - i : BATCH;
    for(k = 0; k < m; k++)
      objs[k] = mk(i + k);
    err = store_apply(st, objs, (size_t)m, NULL, &eb);
    for(k = 0; k < m; k++)
      session_free(objs[k]);
    if(err) {
      fprintf(stderr, "bench_store: apply: %s\n", eb.msg);
      return 1;
    }
  }
  t1 = sctime_mono_ms();
  if(store_list(st, NULL, &lr, &eb)) {
    fprintf(stderr, "bench_store: list: %s\n", eb.msg);
    return 1;
  }
  for(i = 0; i < n && i < (long)lr.n; i++)
    ver[i] = strdup(lr.items[i]->meta.resource_version);
  store_list_result_free(&lr);
  printf("setup: apply %ld in %lld ms\n", n, (long long)(t1 - t0));

  /* status writes one at a time (synchronous) */
  t0 = sctime_mono_ms();
  for(i = 0; i < n; i++) {
    session_status ss;
    char name[32], *nv = NULL;
    snprintf(name, sizeof(name), "s%06ld", i);
    status_for(&ss, i, 0);
    err = store_update_status(st, "bench", name, ver[i], &ss, &nv, &eb);
    session_status_clear(&ss);
    if(err) {
      fprintf(stderr, "bench_store: status: %s\n", eb.msg);
      return 1;
    }
    free(ver[i]);
    ver[i] = nv;
  }
  t1 = sctime_mono_ms();
  printf("sync status writes: %ld in %lld ms = %.0f/s\n", n,
         (long long)(t1 - t0), n * 1000.0 / (double)(t1 - t0 ? t1 - t0 : 1));

  /* asynchronous status writes, ASYNC_TURN queued in each turn of the
   * loop, the next ones once those are answered */
  memset(&ar, 0, sizeof(ar));
  t0 = sctime_mono_ms();
  for(i = 0; i < n;) {
    long end = i + ASYNC_TURN < n ? i + ASYNC_TURN : n;
    for(; i < end; i++) {
      session_status ss;
      char name[32];
      snprintf(name, sizeof(name), "s%06ld", i);
      status_for(&ss, i, 1);
      err = store_update_status_async(st, "bench", name, ver[i], &ss,
                                      on_write, &ar, &eb);
      session_status_clear(&ss);
      if(err) {
        fprintf(stderr, "bench_store: async status: %s\n", eb.msg);
        return 1;
      }
    }
    while(ar.done < end)
      event_base_loop(base, EVLOOP_ONCE);
  }
  t1 = sctime_mono_ms();
  printf("async status writes (%d queued a turn): %ld in %lld ms = "
         "%.0f/s (%ld failed)\n", ASYNC_TURN, n, (long long)(t1 - t0),
         n * 1000.0 / (double)(t1 - t0 ? t1 - t0 : 1), ar.failed);

  /* the settled list */
  for(i = 0; i < lists; i++) {
    t0 = sctime_mono_ms();
    if(store_list(st, NULL, &lr, &eb)) {
      fprintf(stderr, "bench_store: list: %s\n", eb.msg);
      return 1;
    }
    t1 = sctime_mono_ms();
    if((long)lr.n != n)
      fprintf(stderr, "bench_store: listed %zu, not %ld\n", lr.n, n);
    store_list_result_free(&lr);
    ms[i] = t1 - t0;
  }
  printf("list %ld: first %lld ms", n, (long long)ms[0]);
  qsort(ms, (size_t)lists, sizeof(*ms), cmp_i64);
  printf(", then min %lld median %lld ms (%ld lists)\n", (long long)ms[0],
         (long long)ms[lists / 2], lists);

  {
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    while(f && fgets(line, sizeof(line), f))
      if(!strncmp(line, "VmHWM:", 6))
        printf("peak RSS: %ld kB\n", strtol(line + 6, NULL, 10));
    if(f)
      fclose(f);
  }
  for(i = 0; i < n; i++)
    free(ver[i]);
  free(ver);
  free(ms);
  store_close(st);
  event_base_free(base);
  for(i = 0; i < 3; i++) {
    static const char *const sfx[] = {"", "-wal", "-shm"};
    snprintf(url, sizeof(url), "%s%s", argv[1], sfx[i]);
    unlink(url);
  }
  return 0;
}
