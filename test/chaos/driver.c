/*
 * driver.c - the chaos suite's workload: creates, changes (state,
 * idleTimeout, reclaimAfter, wake), ends and deletes sessions in the store
 * over a span of cubesim's virtual time, and sends user traffic to their
 * sandboxes through /_sim/sandboxes/{id}/traffic (auto-resume), as users
 * of the platform would (they learn the sandbox from status.sandboxID).
 *
 * It also creates a few sandboxes that are not ours (untagged, and tagged
 * by another controller), which no replica may ever delete.
 *
 * Every store write is logged to the timeline file, one line:
 *   TB TA OP NS NAME STATE IDLE_MS RECLAIM_MS WAKE
 * TB/TA: cubesim's virtual clock (ms) read before and after the write, so
 * the write took effect in [TB, TA]; OP is apply or delete. The checker
 * replays this timeline (the store compacts its own history).
 * Foreign sandboxes: "foreign ID" lines.
 *
 * Usage: driver --store URL --sim URL --sessions N --virtual-hours H
 *               --seed S --timeline FILE [--foreign N]
 * Everything it decides comes from the seed; what it sees (which sandbox a
 * session has, when the clock ticks) comes from the run.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "api/session.h"
#include "controller/store/store.h"
#include "lib/dynbuf.h"

typedef struct rng {
  uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static double rng_unit(rng *r)
{
  return (double)(rng_next(r) >> 11) / 9007199254740992.0;
}

static int64_t rng_range(rng *r, int64_t lo, int64_t hi)
{
  if(hi <= lo)
    return lo;
  return lo + (int64_t)(rng_unit(r) * (double)(hi - lo));
}

enum ev_kind { EV_CREATE, EV_STATE, EV_IDLE, EV_RECLAIM, EV_WAKE, EV_END,
               EV_DELETE };

typedef struct sess_snap {
  session_state state;
  int64_t idle_ms, reclaim_ms, wake;
} sess_snap;

typedef struct event {
  int64_t at;      /* virtual ms from the start */
  int sess;
  int kind;
  int64_t value;
  sess_snap snap;  /* the spec this write left (for the timeline) */
} event;

typedef struct sess {
  char ns[16];
  char name[32];
  int created, deleted;
  session_state state;
  int64_t idle_ms, reclaim_ms, wake;
  int64_t next_traffic; /* absolute virtual ms; 0 = none yet */
} sess;

typedef struct drv {
  CURL *curl;
  const char *sim;
  store *st;
  FILE *tl;
  rng r;
  long traffic_ok, traffic_other, wakes_by_users, store_errors;
} drv;

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
  dynbuf *b = ud;
  if(dynbuf_add(b, p, sz * n))
    return 0;
  return sz * n;
}

/* GET path; the reply body into out; HTTP status (0: no answer) */
static long http_get(drv *d, const char *path, dynbuf *out)
{
  char url[512];
  long code = 0;
  snprintf(url, sizeof(url), "%s%s", d->sim, path);
  curl_easy_reset(d->curl);
  curl_easy_setopt(d->curl, CURLOPT_URL, url);
  curl_easy_setopt(d->curl, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(d->curl, CURLOPT_NOSIGNAL, 1L);
  dynbuf_reset(out);
  curl_easy_setopt(d->curl, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(d->curl, CURLOPT_WRITEDATA, out);
  if(curl_easy_perform(d->curl) == CURLE_OK)
    curl_easy_getinfo(d->curl, CURLINFO_RESPONSE_CODE, &code);
  return code;
}

static size_t discard(char *p, size_t sz, size_t n, void *ud)
{
  (void)p;
  (void)ud;
  return sz * n;
}

static long post(drv *d, const char *path, const char *body)
{
  char url[512];
  long code = 0;
  struct curl_slist *h = NULL;
  snprintf(url, sizeof(url), "%s%s", d->sim, path);
  curl_easy_reset(d->curl);
  curl_easy_setopt(d->curl, CURLOPT_URL, url);
  curl_easy_setopt(d->curl, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(d->curl, CURLOPT_NOSIGNAL, 1L);
  h = curl_slist_append(h, "Content-Type: application/json");
  curl_easy_setopt(d->curl, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(d->curl, CURLOPT_POSTFIELDS, body ? body : "");
  curl_easy_setopt(d->curl, CURLOPT_WRITEFUNCTION, discard);
  if(curl_easy_perform(d->curl) == CURLE_OK)
    curl_easy_getinfo(d->curl, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(h);
  return code;
}

/* cubesim's virtual now, ms; -1 on failure */
static int64_t sim_now(drv *d)
{
  dynbuf b;
  int64_t v = -1;
  dynbuf_init(&b, 1 << 16);
  if(http_get(d, "/_sim/clock", &b) == 200) {
    json_object *o = json_tokener_parse(dynbuf_ptr(&b));
    json_object *n;
    if(o && json_object_object_get_ex(o, "nowMs", &n))
      v = json_object_get_int64(n);
    json_object_put(o);
  }
  dynbuf_free(&b);
  return v;
}

static int64_t sim_now_retry(drv *d)
{
  int i;
  for(i = 0; i < 50; i++) {
    int64_t v = sim_now(d);
    if(v >= 0)
      return v;
    {
      struct timespec ts = {0, 100000000L};
      nanosleep(&ts, NULL);
    }
  }
  fprintf(stderr, "driver: cubesim's clock does not answer at %s\n", d->sim);
  exit(1);
}

static event mkev(int64_t at, int64_t sess_i, int kind, int64_t value)
{
  event e;
  memset(&e, 0, sizeof(e));
  e.at = at;
  e.sess = (int)sess_i;
  e.kind = kind;
  e.value = value;
  return e;
}

static int cmp_event(const void *a, const void *b)
{
  const event *x = a, *y = b;
  if(x->at != y->at)
    return x->at < y->at ? -1 : 1;
  if(x->sess != y->sess)
    return x->sess < y->sess ? -1 : 1;
  return x->kind < y->kind ? -1 : x->kind > y->kind;
}

/* at x60 a Running session's keep-alive margin (idleTimeout/2) must stay
 * well above the controller's timer slack (1 s real = 60 virtual s) */
static const int64_t idles[] = {300000, 600000, 900000, 1800000};
static const int64_t reclaims[] = {0, 600000, 1200000, 1800000, 3600000};

/* the session object as the driver wants it now */
static session *make_session(const sess *s)
{
  session *o = session_new();
  if(!o)
    return NULL;
  o->meta.name = strdup(s->name);
  o->meta.namespace_ = strdup(s->ns);
  o->spec.template_id = strdup("shell");
  o->spec.state = s->state;
  o->spec.idle_timeout_ms = s->idle_ms;
  o->spec.reclaim_after_ms = s->reclaim_ms;
  o->spec.wake = s->wake;
  if(!o->meta.name || !o->meta.namespace_ || !o->spec.template_id ||
     session_apply_defaults(o)) {
    session_free(o);
    return NULL;
  }
  return o;
}

/* apply the session's current spec, retrying a busy store */
static int store_write(drv *d, sess *s, int del)
{
  sc_errbuf eb;
  int i;
  for(i = 0; i < 20; i++) {
    sc_err err;
    if(del)
      err = store_delete(d->st, s->ns, s->name, &eb);
    else {
      session *o = make_session(s);
      store_apply_outcome oc;
      if(!o) {
        fprintf(stderr, "driver: out of memory\n");
        exit(1);
      }
      err = store_apply(d->st, &o, 1, &oc, &eb);
      session_free(o);
    }
    if(!err)
      return 0;
    d->store_errors++;
    fprintf(stderr, "driver: store: %s (retrying)\n", eb.msg);
  }
  fprintf(stderr, "driver: store write for %s/%s failed for good\n", s->ns,
          s->name);
  return -1;
}

static sess_snap snap_of(const sess *s)
{
  sess_snap n;
  n.state = s->state;
  n.idle_ms = s->idle_ms;
  n.reclaim_ms = s->reclaim_ms;
  n.wake = s->wake;
  return n;
}

static void log_write(drv *d, int64_t tb, int64_t ta, const sess *s,
                      const sess_snap *n, int del)
{
  fprintf(d->tl, "%" PRId64 " %" PRId64 " %s %s %s %s %" PRId64 " %" PRId64
          " %" PRId64 "\n", tb, ta, del ? "delete" : "apply", s->ns, s->name,
          session_state_name(n->state), n->idle_ms, n->reclaim_ms, n->wake);
}

static void make_foreign(drv *d, int n)
{
  int i;
  for(i = 0; i < n; i++) {
    char body[512];
    int tries;
    if(i % 2)
      snprintf(body, sizeof(body), "{\"templateID\":\"shell\",\"timeout\":"
               "300,\"autoPause\":true,\"autoResume\":{\"enabled\":true},"
               "\"lifecycle\":{\"onTimeout\":\"pause\",\"autoResume\":true},"
               "\"metadata\":{\"owner\":\"someone-else\"}}");
    else
      snprintf(body, sizeof(body), "{\"templateID\":\"shell\",\"timeout\":"
               "300,\"autoPause\":true,\"autoResume\":{\"enabled\":true},"
               "\"lifecycle\":{\"onTimeout\":\"pause\",\"autoResume\":true},"
               "\"metadata\":{\"lea.session_id\":\"c%05d\","
               "\"lea.tenant_id\":\"t%d\","
               "\"lea.managed-by\":\"another-controller\"}}", i, i % 3);
    for(tries = 0; tries < 50; tries++) {
      dynbuf b;
      long code;
      dynbuf_init(&b, 1 << 16);
      {
        char url[512];
        struct curl_slist *h = NULL;
        snprintf(url, sizeof(url), "%s/sandboxes", d->sim);
        curl_easy_reset(d->curl);
        curl_easy_setopt(d->curl, CURLOPT_URL, url);
        curl_easy_setopt(d->curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(d->curl, CURLOPT_TIMEOUT_MS, 10000L);
        h = curl_slist_append(h, "Content-Type: application/json");
        curl_easy_setopt(d->curl, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(d->curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(d->curl, CURLOPT_WRITEFUNCTION, sink);
        curl_easy_setopt(d->curl, CURLOPT_WRITEDATA, &b);
        code = 0;
        if(curl_easy_perform(d->curl) == CURLE_OK)
          curl_easy_getinfo(d->curl, CURLINFO_RESPONSE_CODE, &code);
        curl_slist_free_all(h);
      }
      if(code == 201) {
        json_object *o = json_tokener_parse(dynbuf_ptr(&b));
        json_object *id;
        if(o && json_object_object_get_ex(o, "sandboxID", &id))
          fprintf(d->tl, "foreign %s\n", json_object_get_string(id));
        json_object_put(o);
        dynbuf_free(&b);
        break;
      }
      dynbuf_free(&b);
    }
  }
}

/* a user of session s sends a request to its sandbox */
static void user_traffic(drv *d, sess *s, int64_t now, int64_t *tb_wake)
{
  session *o = NULL;
  sc_errbuf eb;
  char path[128];
  long code;
  (void)now;
  if(store_get(d->st, s->ns, s->name, &o, &eb)) {
    d->store_errors++;
    return;
  }
  if(o->status.phase == SESSION_PHASE_RECLAIMED &&
     o->status.reclaimed_generation == o->meta.generation) {
    /* the user comes back to a reclaimed session: the platform wakes it */
    if(rng_unit(&d->r) < 0.7) {
      s->wake++;
      *tb_wake = 1;
      d->wakes_by_users++;
    }
    session_free(o);
    return;
  }
  if(!o->status.sandbox_id) {
    session_free(o);
    return;
  }
  snprintf(path, sizeof(path), "/_sim/sandboxes/%s/traffic",
           o->status.sandbox_id);
  session_free(o);
  code = post(d, path, "");
  if(code == 200)
    d->traffic_ok++;
  else
    d->traffic_other++;
}

static int parse_i64(const char *s, int64_t *out)
{
  char *end;
  long long v;
  errno = 0;
  v = strtoll(s, &end, 10);
  if(errno || end == s || *end)
    return -1;
  *out = v;
  return 0;
}

int main(int argc, char **argv)
{
  const char *store_url = NULL, *tl_path = NULL;
  int64_t nsess = 2000, seed = 1, nforeign = 20;
  double hours = 6;
  drv d;
  sess *ss;
  event *ev;
  size_t nev = 0, cap, next = 0;
  int64_t t0, span, i;
  sc_errbuf eb;
  store_open_opts so;
  long applies = 0, deletes = 0;

  memset(&d, 0, sizeof(d));
  for(i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
    if(!v) {
      fprintf(stderr, "driver: %s needs a value\n", a);
      return 2;
    }
    if(!strcmp(a, "--store"))
      store_url = v;
    else if(!strcmp(a, "--sim"))
      d.sim = v;
    else if(!strcmp(a, "--timeline"))
      tl_path = v;
    else if(!strcmp(a, "--sessions"))
      bad = parse_i64(v, &nsess) || nsess < 1 || nsess > 99999;
    else if(!strcmp(a, "--seed"))
      bad = parse_i64(v, &seed);
    else if(!strcmp(a, "--foreign"))
      bad = parse_i64(v, &nforeign) || nforeign < 0;
    else if(!strcmp(a, "--virtual-hours")) {
      char *end;
      hours = strtod(v, &end);
      bad = end == v || *end || hours <= 0 || hours > 1000;
    }
    else {
      fprintf(stderr, "driver: unknown flag %s\n", a);
      return 2;
    }
    if(bad) {
      fprintf(stderr, "driver: bad value for %s: '%s'\n", a, v);
      return 2;
    }
  }
  if(!store_url || !d.sim || !tl_path) {
    fprintf(stderr, "driver: --store, --sim and --timeline are required\n");
    return 2;
  }
  d.r.s = (uint64_t)seed * 0x2545f4914f6cdd1dULL + 1;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  d.curl = curl_easy_init();
  memset(&so, 0, sizeof(so));
  so.create = true; /* the driver writes the sessions, as sessionctl apply */
  if(store_open(store_url, &so, &d.st, &eb)) {
    fprintf(stderr, "driver: %s\n", eb.msg);
    return 1;
  }
  d.tl = fopen(tl_path, "w");
  if(!d.tl || !d.curl) {
    fprintf(stderr, "driver: cannot open %s\n", tl_path);
    return 1;
  }
  setvbuf(d.tl, NULL, _IOLBF, 0);

  /* the schedule, from the seed alone */
  span = (int64_t)(hours * 3600 * 1000);
  ss = calloc((size_t)nsess, sizeof(*ss));
  cap = (size_t)nsess * 12;
  ev = calloc(cap, sizeof(*ev));
  if(!ss || !ev)
    return 1;
  for(i = 0; i < nsess; i++) {
    sess *s = &ss[i];
    int64_t tc = rng_range(&d.r, 0, span * 6 / 10);
    int64_t tend = tc + rng_range(&d.r, span / 12, span);
    int64_t tlast = tend < span ? tend : span;  /* changes end with the run */
    int k, nch = (int)rng_range(&d.r, 0, 5);
    double u;
    snprintf(s->ns, sizeof(s->ns), "t%d", (int)(i % 3));
    snprintf(s->name, sizeof(s->name), "c%05d", (int)i);
    ev[nev++] = mkev(tc, i, EV_CREATE, 0);
    for(k = 0; k < nch; k++) {
      int64_t at = rng_range(&d.r, tc + 1, tlast);
      int kind = (int)rng_range(&d.r, EV_STATE, EV_WAKE + 1);
      int64_t val = 0;
      if(kind == EV_STATE) {
        u = rng_unit(&d.r);
        val = u < 0.5 ? SESSION_STATE_ACTIVE :
              u < 0.75 ? SESSION_STATE_PAUSED : SESSION_STATE_RUNNING;
      }
      else if(kind == EV_IDLE)
        val = idles[rng_range(&d.r, 0, 4)];
      else if(kind == EV_RECLAIM)
        val = reclaims[rng_range(&d.r, 0, 5)];
      ev[nev++] = mkev(at, i, kind, val);
    }
    u = rng_unit(&d.r);
    if(u < 0.55 && tend < span) {
      ev[nev++] = mkev(tend, i, EV_END, 0);
      if(rng_unit(&d.r) < 0.7)
        ev[nev++] = mkev(tend + rng_range(&d.r, 1000, (span - tend) / 2 + 2000),
                             i, EV_DELETE, 0);
    }
    else if(u < 0.7 && tend < span)
      ev[nev++] = mkev(tend, i, EV_DELETE, 0);
    /* initial spec */
    u = rng_unit(&d.r);
    s->state = u < 0.8 ? SESSION_STATE_ACTIVE :
               u < 0.9 ? SESSION_STATE_RUNNING : SESSION_STATE_PAUSED;
    s->idle_ms = idles[rng_range(&d.r, 0, 4)];
    s->reclaim_ms = reclaims[rng_range(&d.r, 1, 5)];
  }
  qsort(ev, nev, sizeof(*ev), cmp_event);

  make_foreign(&d, (int)nforeign);
  t0 = sim_now_retry(&d);
  fprintf(stderr, "driver: %" PRId64 " sessions, %zu events over %.2f virtual"
          " hours from %" PRId64 "\n", nsess, nev, hours, t0);
  for(;;) {
    int64_t now = sim_now_retry(&d), ta;
    int nwrites = 0;
    size_t first = next;
    struct timespec ts = {0, 50000000L};
    /* the schedule's events now due */
    while(next < nev && t0 + ev[next].at <= now) {
      event *e = &ev[next++];
      sess *s = &ss[e->sess];
      if(s->deleted || (e->kind != EV_CREATE && !s->created))
        continue;
      if(s->state == SESSION_STATE_ENDED && e->kind != EV_DELETE)
        continue;       /* an ended chat is over: only its deletion is left */
      switch(e->kind) {
      case EV_CREATE: s->created = 1; break;
      case EV_STATE: s->state = (session_state)e->value; break;
      case EV_IDLE: s->idle_ms = e->value; break;
      case EV_RECLAIM: s->reclaim_ms = e->value; break;
      case EV_WAKE: s->wake++; break;
      case EV_END: s->state = SESSION_STATE_ENDED; break;
      case EV_DELETE: s->deleted = 1; break;
      }
      e->value = store_write(&d, s, e->kind == EV_DELETE) ? -1 : 1;
      e->snap = snap_of(s);
      if(e->kind == EV_DELETE)
        deletes++;
      else
        applies++;
      e->kind = e->kind == EV_DELETE ? -2 : -1; /* done: -1 apply -2 del */
      nwrites++;
    }
    /* users: traffic to live, non-ended sessions */
    for(i = 0; i < nsess && now < t0 + span; i++) {
      sess *s = &ss[i];
      int64_t w = 0;
      if(!s->created || s->deleted || s->state == SESSION_STATE_ENDED ||
         s->state == SESSION_STATE_PAUSED)
        continue;
      if(!s->next_traffic) {
        s->next_traffic = now + rng_range(&d.r, 10000, s->idle_ms * 2);
        continue;
      }
      if(s->next_traffic > now)
        continue;
      s->next_traffic = now + rng_range(&d.r, s->idle_ms / 2, s->idle_ms * 3);
      user_traffic(&d, s, now, &w);
      if(w) {
        int64_t tb = sim_now_retry(&d);
        if(!store_write(&d, s, 0)) {
          sess_snap n = snap_of(s);
          log_write(&d, tb, sim_now_retry(&d), s, &n, 0);
          applies++;
        }
      }
    }
    if(nwrites) {
      size_t k;
      ta = sim_now_retry(&d);
      /* schedule writes of this tick took effect within [now, ta] */
      for(k = first; k < next; k++) {
        if(ev[k].kind >= 0 || ev[k].value != 1)
          continue;
        log_write(&d, now, ta, &ss[ev[k].sess], &ev[k].snap, ev[k].kind == -2);
      }
    }
    if(next >= nev && now >= t0 + span)
      break;
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "driver: done: %ld applies, %ld deletes, traffic %ld ok"
          " %ld other, %ld wakes by users, %ld store retries\n", applies,
          deletes, d.traffic_ok, d.traffic_other, d.wakes_by_users,
          d.store_errors);
  printf("applies=%ld deletes=%ld traffic=%ld wakes=%ld\n", applies, deletes,
         d.traffic_ok + d.traffic_other, d.wakes_by_users);
  fclose(d.tl);
  store_close(d.st);
  curl_easy_cleanup(d.curl);
  curl_global_cleanup();
  free(ss);
  free(ev);
  return 0;
}
