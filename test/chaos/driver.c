/*
 * driver.c - the chaos suite's workload: creates, changes (state,
 * idleTimeout, reclaimAfter, wake), ends and deletes sessions in the store
 * over a span of cubesim's virtual time, and plays their users.
 *
 * Users speak as users do: most visits go through a connect (the
 * lea.io/connect annotation set to a new nonce by compare-and-set, then
 * status.connect awaited; Served: the user works in status.sandboxID,
 * 2-4 requests through /_sim/sandboxes/{id}/traffic inside its idle
 * window); the rest of the visits to Auto sessions are raw traffic to
 * status.sandboxID (Cube's auto-resume), waking the session when it finds
 * it Reclaimed (70%). 30% of the sessions are created with
 * resumePolicy OnConnect; their users always connect. Connects are
 * asynchronous: the driver does not stop the schedule while one waits.
 *
 * It also creates a few sandboxes that are not ours (untagged, and tagged
 * by another controller), which no replica may ever delete.
 *
 * Every store write is logged to the timeline file, one line:
 *   TB TA OP NS NAME STATE IDLE_MS RECLAIM_MS WAKE
 * TB/TA: cubesim's virtual clock (ms) read before and after the write, so
 * the write took effect in [TB, TA]; OP is apply or delete. The checker
 * replays this timeline (the store compacts its own history). Other
 * lines start with a word:
 *   foreign ID                         a sandbox that is not ours
 *   policy NS NAME Auto|OnConnect      the session's resumePolicy
 *   connect TB TA NS NAME NONCE        a connect asked (annotation written)
 *   answer T NS NAME NONCE RESULT SBX  status.connect answered it (seen at T)
 *   abandoned T NS NAME NONCE          the session was deleted first
 *   unanswered T NS NAME NONCE         no answer within --connect-limit
 *   waiting T NS NAME NONCE            still unanswered when the workload
 *                                      ended (the watcher sees the answer)
 *   use T NS NAME MODE SBX CODE IDLE_MS  one user request (MODE connect or
 *                                      raw; T read just before it; CODE the
 *                                      HTTP status, 410: the sandbox is gone)
 *   lost T NS NAME SBX                 the sandbox a served user was
 *                                      working in was deleted under it
 * A write that fails (the store made unwritable by the suite) is retried
 * every 100 ms for up to 60 s, as a user would.
 *
 * Watch mode (run next to the controllers for the whole run):
 *   driver --watch-db PATH --sim URL --out FILE
 * reads the SQLite store's history table every 100 ms and writes
 *   intent T REV NS NAME KIND SBX AT_MS BY   status.pendingAction written
 *   answer T NS NAME NONCE RESULT SBX        status.connect written
 *   purged T NS/NAME                         a tombstone gone from objects
 *   gap T FROM TO                            history compacted past us
 * (T: cubesim's clock when seen), so the checker can tell that every
 * destructive call had its intent in the store first.
 *
 * Usage: driver --store URL --sim URL --sessions N --virtual-hours H
 *               --seed S --timeline FILE [--foreign N] [--connect-limit S]
 * Everything it decides comes from the seed; what it sees (which sandbox a
 * session has, when the clock ticks) comes from the run.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "api/session.h"
#include "controller/store/store.h"
#include "lib/dynbuf.h"
#include "lib/sctime.h"

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
  int onconnect;         /* spec.resumePolicy OnConnect (from the seed) */
  unsigned nconnect;     /* connects asked so far */
  char nonce[48];        /* the last nonce set ("": none); kept on apply */
  int pending;           /* that connect is not answered yet */
  int64_t asked_mono;    /* when it was asked, real ms */
  char work[64];         /* the sandbox a served user works in */
  int work_left;         /* requests left in this visit */
} sess;

typedef struct drv {
  CURL *curl;
  const char *sim;
  store *st;
  FILE *tl;
  rng r;
  long traffic_ok, traffic_other, wakes_by_users, store_errors;
  long connects, served, refused, unanswered, abandoned, lost;
  int64_t connect_limit_ms; /* real ms a connect may wait for its answer */
} drv;

static void nap_ms(long ms)
{
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

/* a write is retried this often while the store refuses writes */
#define STORE_TRIES 600
#define STORE_NAP_MS 100

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
  o->spec.resume_policy = s->onconnect ? SESSION_RESUME_ON_CONNECT :
                          SESSION_RESUME_AUTO;
  /* an apply replaces the annotations: keep the connect asked */
  if(s->nonce[0] &&
     sc_kvlist_set(&o->meta.annotations, SESSION_ANNOT_CONNECT, s->nonce)) {
    session_free(o);
    return NULL;
  }
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
  for(i = 0; i < STORE_TRIES; i++) {
    sc_err err;
    if(i)
      nap_ms(STORE_NAP_MS);
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
    if(i % 50 == 0)
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

/* a session from the store, retried while the store fails; NULL when it
 * is not there (or is a tombstone) */
static session *get_live(drv *d, const sess *s)
{
  int i;
  for(i = 0; i < STORE_TRIES; i++) {
    session *o = NULL;
    sc_errbuf eb;
    sc_err err = store_get(d->st, s->ns, s->name, &o, &eb);
    if(err == SC_ERR_NOT_FOUND)
      return NULL;
    if(!err) {
      if(o->meta.deletion_timestamp) {
        session_free(o);
        return NULL;
      }
      return o;
    }
    d->store_errors++;
    nap_ms(STORE_NAP_MS);
  }
  return NULL;
}

/* one request to sandbox id; logged as a use; the HTTP status */
static long send_request(drv *d, const sess *s, const char *mode,
                         const char *id)
{
  char path[160];
  int64_t t = sim_now_retry(d);
  long code;
  snprintf(path, sizeof(path), "/_sim/sandboxes/%s/traffic", id);
  code = post(d, path, "");
  if(code == 200)
    d->traffic_ok++;
  else
    d->traffic_other++;
  fprintf(d->tl, "use %" PRId64 " %s %s %s %s %ld %" PRId64 "\n", t, s->ns,
          s->name, mode, id, code, s->idle_ms);
  return code;
}

/* a raw visit: a request to the sandbox in status.sandboxID (Cube's
 * auto-resume), or a wake for a session found Reclaimed */
static void user_raw(drv *d, sess *s, int64_t *tb_wake)
{
  session *o = get_live(d, s);
  if(!o)
    return;
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
  if(o->status.sandbox_id) {
    char id[64];
    snprintf(id, sizeof(id), "%s", o->status.sandbox_id);
    session_free(o);
    send_request(d, s, "raw", id);
    return;
  }
  session_free(o);
}

/* ask for a connect: the annotation set to a new nonce by compare-and-set
 * on the version just read, again on a conflict */
static void ask_connect(drv *d, sess *s)
{
  int i;
  int64_t tb = sim_now_retry(d);
  char nonce[48];
  snprintf(nonce, sizeof(nonce), "%s-%u", s->name, s->nconnect + 1);
  for(i = 0; i < STORE_TRIES; i++) {
    sc_errbuf eb;
    sc_err err;
    session *o = get_live(d, s);
    if(!o)
      return;
    err = store_set_annotation(d->st, s->ns, s->name,
                               o->meta.resource_version, SESSION_ANNOT_CONNECT,
                               nonce, NULL, &eb);
    session_free(o);
    if(!err) {
      s->nconnect++;
      snprintf(s->nonce, sizeof(s->nonce), "%s", nonce);
      s->pending = 1;
      s->asked_mono = sctime_mono_ms();
      d->connects++;
      fprintf(d->tl, "connect %" PRId64 " %" PRId64 " %s %s %s\n", tb,
              sim_now_retry(d), s->ns, s->name, nonce);
      return;
    }
    d->store_errors++;
    if(err != SC_ERR_CONFLICT)
      nap_ms(STORE_NAP_MS); /* the store refuses writes: later */
  }
  fprintf(stderr, "driver: connect %s/%s could not be asked\n", s->ns,
          s->name);
}

/* a connect waiting: answered? Served: the user starts working */
static void poll_connect(drv *d, sess *s, int64_t now)
{
  session *o = get_live(d, s);
  if(!o) {
    fprintf(d->tl, "abandoned %" PRId64 " %s %s %s\n", now, s->ns, s->name,
            s->nonce);
    d->abandoned++;
    s->pending = 0;
    return;
  }
  if(o->status.connect_nonce && !strcmp(o->status.connect_nonce, s->nonce) &&
     o->status.connect_result) {
    int served = !strcmp(o->status.connect_result, SESSION_CONNECT_SERVED);
    const char *id = o->status.sandbox_id ? o->status.sandbox_id : "-";
    fprintf(d->tl, "answer %" PRId64 " %s %s %s %s %s\n", now, s->ns,
            s->name, s->nonce, o->status.connect_result, id);
    s->pending = 0;
    if(served && o->status.sandbox_id) {
      d->served++;
      snprintf(s->work, sizeof(s->work), "%s", o->status.sandbox_id);
      s->work_left = (int)rng_range(&d->r, 2, 5);
      s->next_traffic = now; /* at once: that is why it connected */
    }
    else
      d->refused++;
  }
  else if(sctime_mono_ms() - s->asked_mono > d->connect_limit_ms) {
    fprintf(d->tl, "unanswered %" PRId64 " %s %s %s\n", now, s->ns, s->name,
            s->nonce);
    d->unanswered++;
    s->pending = 0;
  }
  session_free(o);
}

/* a served user's next request inside the sandbox's idle window */
static void user_work(drv *d, sess *s, int64_t now)
{
  long code = send_request(d, s, "connect", s->work);
  s->work_left--;
  if(code == 410) {
    /* deleted while the user worked in it (the checker judges whether the
     * session's spec allowed that) */
    fprintf(d->tl, "lost %" PRId64 " %s %s %s\n", now, s->ns, s->name,
            s->work);
    d->lost++;
    s->work_left = 0;
  }
  else if(code == 502 || code == 503)
    s->work_left = 0; /* paused under the user (spec Paused): come back */
  if(s->work_left > 0)
    s->next_traffic = now + rng_range(&d->r, s->idle_ms / 8, s->idle_ms / 3);
  else
    s->next_traffic = now + rng_range(&d->r, s->idle_ms / 2, s->idle_ms * 3);
}

/* --- watch mode: the intents and purges the store records --- */

typedef struct wkey {
  char key[160];      /* ns/name */
  char last[200];     /* the last pendingAction seen: "kind sbx" */
  char conn[200];     /* the last status.connect seen: "nonce result" */
  int tomb, purged;
} wkey;

typedef struct watch {
  wkey *k;
  size_t n, cap;
} watch;

static wkey *watch_key(watch *w, const char *ns, const char *name)
{
  char key[160];
  size_t i;
  snprintf(key, sizeof(key), "%s/%s", ns, name);
  for(i = w->n; i > 0; i--)
    if(!strcmp(w->k[i - 1].key, key))
      return &w->k[i - 1];
  if(w->n == w->cap) {
    size_t nc = w->cap ? w->cap * 2 : 1024;
    wkey *nk = realloc(w->k, nc * sizeof(*nk));
    if(!nk) {
      fprintf(stderr, "driver: out of memory\n");
      exit(1);
    }
    w->k = nk;
    w->cap = nc;
  }
  memset(&w->k[w->n], 0, sizeof(wkey));
  snprintf(w->k[w->n].key, sizeof(w->k[w->n].key), "%s", key);
  return &w->k[w->n++];
}

static const char *jget_str(json_object *o, const char *k)
{
  json_object *v;
  if(!o || !json_object_object_get_ex(o, k, &v) ||
     !json_object_is_type(v, json_type_string))
    return NULL;
  return json_object_get_string(v);
}

/* one history row: a pendingAction not seen before for its key */
static void watch_row(watch *w, FILE *out, int64_t now, long long rev,
                      const char *type, const char *ns, const char *name,
                      const char *obj)
{
  json_object *o = json_tokener_parse(obj), *st = NULL, *pa = NULL;
  wkey *k = watch_key(w, ns, name);
  if(!strcmp(type, "DELETED"))
    k->tomb = 1;
  else if(!strcmp(type, "ADDED")) {
    k->tomb = 0; /* applied over a tombstone: a new object */
    k->purged = 0;
  }
  if(o && json_object_object_get_ex(o, "status", &st) &&
     json_object_object_get_ex(st, "pendingAction", &pa) &&
     json_object_is_type(pa, json_type_object)) {
    const char *kind = jget_str(pa, "kind"), *sbx = jget_str(pa, "sandboxID");
    const char *at = jget_str(pa, "at"), *by = jget_str(pa, "by");
    char cur[200];
    sc_time at_ms = 0;
    if(at)
      sctime_parse_rfc3339(at, &at_ms);
    snprintf(cur, sizeof(cur), "%s %s %s", kind ? kind : "-",
             sbx ? sbx : "-", at ? at : "-");
    if(strcmp(cur, k->last)) {
      snprintf(k->last, sizeof(k->last), "%s", cur);
      fprintf(out, "intent %" PRId64 " %lld %s %s %s %s %" PRId64 " %s\n",
              now, rev, ns, name, kind ? kind : "-", sbx ? sbx : "-",
              (int64_t)at_ms, by ? by : "-");
    }
  }
  else
    k->last[0] = 0;
  if(st && json_object_object_get_ex(st, "connect", &pa) &&
     json_object_is_type(pa, json_type_object)) {
    const char *nonce = jget_str(pa, "nonce"), *res = jget_str(pa, "result");
    const char *sbx = jget_str(st, "sandboxID");
    char cur[200];
    snprintf(cur, sizeof(cur), "%s %s", nonce ? nonce : "-",
             res ? res : "-");
    if(strcmp(cur, k->conn)) {
      snprintf(k->conn, sizeof(k->conn), "%s", cur);
      fprintf(out, "answer %" PRId64 " %s %s %s %s %s\n", now, ns, name,
              nonce ? nonce : "-", res ? res : "-", sbx ? sbx : "-");
    }
  }
  json_object_put(o);
}

static int watch_main(const char *db, drv *d, const char *out_path)
{
  watch w;
  sqlite3 *h = NULL;
  long long last = 0;
  FILE *out = fopen(out_path, "w");
  memset(&w, 0, sizeof(w));
  if(!out) {
    fprintf(stderr, "driver: cannot open %s\n", out_path);
    return 1;
  }
  setvbuf(out, NULL, _IOLBF, 0);
  for(;;) {
    sqlite3_stmt *q = NULL;
    int64_t now;
    size_t i;
    nap_ms(100);
    if((now = sim_now(d)) < 0)
      continue;
    if(!h && sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) !=
       SQLITE_OK) {
      sqlite3_close(h);
      h = NULL;
      continue; /* not made yet */
    }
    sqlite3_busy_timeout(h, 1000);
    /* a read that fails (the store made unwritable) is done again later:
     * the history keeps the rows */
    if(sqlite3_prepare_v2(h, "SELECT revision, type, namespace, name, object"
                          " FROM history WHERE revision > ?1 ORDER BY "
                          "revision", -1, &q, NULL) == SQLITE_OK) {
      sqlite3_bind_int64(q, 1, last);
      while(sqlite3_step(q) == SQLITE_ROW) {
        long long rev = sqlite3_column_int64(q, 0);
        const char *type = (const char *)sqlite3_column_text(q, 1);
        const char *ns = (const char *)sqlite3_column_text(q, 2);
        const char *name = (const char *)sqlite3_column_text(q, 3);
        const char *obj = (const char *)sqlite3_column_text(q, 4);
        if(!type || !ns || !name || !obj)
          continue;
        if(rev != last + 1)
          fprintf(out, "gap %" PRId64 " %lld %lld\n", now, last, rev);
        watch_row(&w, out, now, rev, type, ns, name, obj);
        last = rev;
      }
    }
    sqlite3_finalize(q);
    q = NULL;
    /* tombstones purged since: stamped with the clock read after the
     * look (a purge is never dated before it was done) */
    if(sqlite3_prepare_v2(h, "SELECT 1 FROM objects WHERE namespace = ?1 AND"
                          " name = ?2", -1, &q, NULL) != SQLITE_OK)
      continue;
    for(i = 0; i < w.n; i++) {
      wkey *k = &w.k[i];
      char ns[160], *name;
      int rc;
      if(!k->tomb || k->purged)
        continue;
      snprintf(ns, sizeof(ns), "%s", k->key);
      name = strchr(ns, '/');
      if(!name)
        continue;
      *name++ = 0;
      sqlite3_reset(q);
      sqlite3_bind_text(q, 1, ns, -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(q, 2, name, -1, SQLITE_TRANSIENT);
      rc = sqlite3_step(q);
      if(rc == SQLITE_DONE)
        k->purged = 1;
    }
    sqlite3_finalize(q);
    now = sim_now(d);
    for(i = 0; i < w.n && now >= 0; i++)
      if(w.k[i].purged == 1) {
        w.k[i].purged = 2;
        fprintf(out, "purged %" PRId64 " %s\n", now, w.k[i].key);
      }
  }
  return 0;
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
  const char *store_url = NULL, *tl_path = NULL, *watch_db = NULL;
  const char *out_path = NULL;
  int64_t nsess = 2000, seed = 1, nforeign = 20, climit = 60;
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
    else if(!strcmp(a, "--watch-db"))
      watch_db = v;
    else if(!strcmp(a, "--out"))
      out_path = v;
    else if(!strcmp(a, "--connect-limit"))
      bad = parse_i64(v, &climit) || climit < 1;
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
  d.connect_limit_ms = climit * 1000;
  if(watch_db) {
    if(!d.sim || !out_path) {
      fprintf(stderr, "driver: --watch-db needs --sim and --out\n");
      return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    d.curl = curl_easy_init();
    return watch_main(watch_db, &d, out_path);
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
    s->onconnect = rng_unit(&d.r) < 0.3;
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
      case EV_CREATE:
        s->created = 1;
        fprintf(d.tl, "policy %s %s %s\n", s->ns, s->name,
                s->onconnect ? "OnConnect" : "Auto");
        break;
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
    /* users: visits to live, non-ended sessions */
    for(i = 0; i < nsess && now < t0 + span; i++) {
      sess *s = &ss[i];
      int64_t w = 0;
      if(s->pending) {
        poll_connect(&d, s, now); /* a deleted session: abandoned */
        continue;
      }
      if(!s->created || s->deleted)
        continue;
      if(s->state == SESSION_STATE_ENDED || s->state == SESSION_STATE_PAUSED)
        continue;
      if(!s->next_traffic) {
        s->next_traffic = now + rng_range(&d.r, 10000, s->idle_ms * 2);
        continue;
      }
      if(s->next_traffic > now)
        continue;
      if(s->work_left > 0) {
        user_work(&d, s, now);
        continue;
      }
      s->next_traffic = now + rng_range(&d.r, s->idle_ms / 2, s->idle_ms * 3);
      if(s->onconnect || rng_unit(&d.r) < 0.7) {
        ask_connect(&d, s);
        continue;
      }
      user_raw(&d, s, &w);
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
  /* the connects still waiting: the watcher sees their answers (the
   * checker wants one before the convergence limit) */
  {
    int64_t now = sim_now_retry(&d);
    for(i = 0; i < nsess; i++)
      if(ss[i].pending)
        fprintf(d.tl, "waiting %" PRId64 " %s %s %s\n", now, ss[i].ns,
                ss[i].name, ss[i].nonce);
  }
  fprintf(stderr, "driver: done: %ld applies, %ld deletes, traffic %ld ok"
          " %ld other, %ld wakes by users, %ld store retries; connects %ld:"
          " %ld served, %ld refused, %ld abandoned, %ld unanswered; %ld "
          "sandboxes lost in use\n", applies, deletes, d.traffic_ok,
          d.traffic_other, d.wakes_by_users, d.store_errors, d.connects,
          d.served, d.refused, d.abandoned, d.unanswered, d.lost);
  printf("applies=%ld deletes=%ld traffic=%ld wakes=%ld connects=%ld "
         "served=%ld refused=%ld\n", applies, deletes,
         d.traffic_ok + d.traffic_other, d.wakes_by_users, d.connects,
         d.served, d.refused);
  fclose(d.tl);
  store_close(d.st);
  curl_easy_cleanup(d.curl);
  curl_global_cleanup();
  free(ss);
  free(ev);
  return 0;
}
