/*
 * check.c - the chaos suite's invariant checker.
 *
 * Inputs: cubesim's truth (GET /_sim/sandboxes) and audit (GET /_sim/audit)
 * saved to files, the driver's timeline, the SQLite store file, and
 * cubesim's clock when the truth was read. Prints a table of counts and
 * exits 1 when an invariant fails:
 *  1. mistaken deletions = 0. Every API delete that removed a sandbox is
 *     judged at its virtual time T against every spec the session could
 *     have had in [T - window, T] (the timeline gives each write's
 *     [before, after] clock bracket, so "could have had" is exact up to
 *     that bracket; window covers a replica acting on a store read it made
 *     a moment earlier). A delete is legitimate when, for one such spec:
 *     the session was Ended or deleted; or it was Active/Paused, the
 *     sandbox was paused (audit stateBefore) and T - pausedAt >=
 *     reclaimAfter > 0; or another sandbox of the session was live at T
 *     and was not itself removed as a duplicate in favour of this one
 *     (duplicates); or no session ever had the tags and the sandbox was
 *     paused for the orphan grace. A delete of a sandbox without our
 *     managed-by tag (or another controller's) is always mistaken.
 *  2. convergence: every live Active/Running/Paused session not reclaimed
 *     has exactly one live sandbox, linked by status.sandboxID, with
 *     status.sandboxState and phase matching cubesim; Ended sessions and
 *     tombstones have none; no sandbox of ours without a session paused
 *     past the grace.
 *  3. the store: PRAGMA integrity_check is ok and every session the driver
 *     wrote is there with the spec it last wrote (deleted ones are gone or
 *     tombstones).
 * Usage: check --truth F --audit F --timeline F --db PATH --now-ms MS
 *              [--managed-by NAME] [--grace-ms MS] [--window-ms MS]
 *              [--deletions-only] [--verbose]
 */
#include <json-c/json.h>
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/sctime.h"

typedef struct sbx {
  char *id, *key, *managed_by, *state;
  int64_t created, paused_at, deleted_at;
  int dup_only;      /* its API delete was justified only as a duplicate */
  int del_legit;     /* its API delete was judged legitimate */
  const struct sbx *favour; /* for dup_only: the sandbox it lost to */
} sbx;

typedef struct ver {
  int64_t tb, ta;
  int exists;
  char state[16];
  int64_t idle, reclaim, wake;
} ver;

typedef struct skey {
  char *key;         /* "ns/name" */
  ver *v;
  size_t n, cap;
} skey;

typedef struct del {
  sbx *sb;
  int64_t at;
  char before[16];
} del;

typedef struct ctx {
  sbx *sb; size_t nsb;
  skey *sk; size_t nsk, capsk;
  del *dl; size_t ndl, capdl;
  const char *managed_by;
  int64_t grace, window, now;
  int verbose;
  long mistaken, shown;
} ctx;

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t len = 0, cap = 0, r;
  if(!f) {
    fprintf(stderr, "check: cannot open %s: %s\n", path, strerror(errno));
    exit(2);
  }
  do {
    if(cap - len < 65536) {
      char *nb;
      cap = cap ? cap * 2 : 1 << 20;
      nb = realloc(buf, cap + 1);
      if(!nb)
        exit(2);
      buf = nb;
    }
    r = fread(buf + len, 1, cap - len, f);
    len += r;
  } while(r);
  fclose(f);
  buf[len] = 0;
  return buf;
}

static const char *jstr(json_object *o, const char *k)
{
  json_object *v;
  if(!o || !json_object_object_get_ex(o, k, &v) ||
     !json_object_is_type(v, json_type_string))
    return NULL;
  return json_object_get_string(v);
}

static int64_t jtime(json_object *o, const char *k)
{
  const char *s = jstr(o, k);
  sc_time t = 0;
  if(!s || sctime_parse_rfc3339(s, &t))
    return 0;
  return t;
}

static int cmp_sbx(const void *a, const void *b)
{
  return strcmp(((const sbx *)a)->id, ((const sbx *)b)->id);
}

static sbx *find_sbx(ctx *c, const char *id)
{
  sbx k;
  k.id = (char *)id;
  return bsearch(&k, c->sb, c->nsb, sizeof(sbx), cmp_sbx);
}

static int cmp_skey(const void *a, const void *b)
{
  return strcmp(((const skey *)a)->key, ((const skey *)b)->key);
}

static skey *find_key(ctx *c, const char *key)
{
  skey k;
  k.key = (char *)key;
  return bsearch(&k, c->sk, c->nsk, sizeof(skey), cmp_skey);
}

/* the tag t of a truth row: metadata, else what a droplabels fault took */
static const char *tag(json_object *row, const char *t)
{
  json_object *m;
  const char *v = NULL;
  if(json_object_object_get_ex(row, "metadata", &m))
    v = jstr(m, t);
  if(!v && json_object_object_get_ex(row, "lostMetadata", &m))
    v = jstr(m, t);
  return v;
}

static void load_truth(ctx *c, const char *path)
{
  char *txt = slurp(path);
  json_object *a = json_tokener_parse(txt);
  size_t i, n;
  if(!a || !json_object_is_type(a, json_type_array)) {
    fprintf(stderr, "check: %s: not a JSON array\n", path);
    exit(2);
  }
  n = json_object_array_length(a);
  c->sb = calloc(n ? n : 1, sizeof(sbx));
  for(i = 0; i < n; i++) {
    json_object *r = json_object_array_get_idx(a, i);
    sbx *s = &c->sb[c->nsb++];
    const char *t = tag(r, "lea.tenant_id"), *sid = tag(r, "lea.session_id");
    const char *mb = tag(r, "lea.managed-by");
    s->id = strdup(jstr(r, "sandboxID") ? jstr(r, "sandboxID") : "");
    s->state = strdup(jstr(r, "state") ? jstr(r, "state") : "");
    s->managed_by = mb ? strdup(mb) : NULL;
    if(t && sid) {
      size_t l = strlen(t) + strlen(sid) + 2;
      s->key = malloc(l);
      snprintf(s->key, l, "%s/%s", t, sid);
    }
    s->created = jtime(r, "createdAt");
    s->paused_at = jtime(r, "pausedAt");
    s->deleted_at = jtime(r, "deletedAt");
  }
  qsort(c->sb, c->nsb, sizeof(sbx), cmp_sbx);
  json_object_put(a);
  free(txt);
}

static void load_timeline(ctx *c, const char *path)
{
  char *txt = slurp(path), *line = txt, *nl;
  size_t i;
  for(; *line; line = nl) {
    char op[16], ns[64], name[64], st[16], key[130];
    long long tb, ta, idle, rec, wake;
    skey *k = NULL;
    ver *v;
    nl = strchr(line, '\n');
    if(nl)
      *nl++ = 0;
    else
      nl = line + strlen(line);
    if(sscanf(line, "%lld %lld %15s %63s %63s %15s %lld %lld %lld", &tb, &ta,
              op, ns, name, st, &idle, &rec, &wake) != 9)
      continue; /* "foreign ID" lines */
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    for(i = c->nsk; i > 0; i--)  /* writes of one key cluster: look back */
      if(!strcmp(c->sk[i - 1].key, key)) {
        k = &c->sk[i - 1];
        break;
      }
    if(!k) {
      if(c->nsk == c->capsk) {
        c->capsk = c->capsk ? c->capsk * 2 : 1024;
        c->sk = realloc(c->sk, c->capsk * sizeof(skey));
      }
      k = &c->sk[c->nsk++];
      memset(k, 0, sizeof(*k));
      k->key = strdup(key);
    }
    if(k->n == k->cap) {
      k->cap = k->cap ? k->cap * 2 : 8;
      k->v = realloc(k->v, k->cap * sizeof(ver));
    }
    v = &k->v[k->n++];
    v->tb = tb;
    v->ta = ta;
    v->exists = !strcmp(op, "apply");
    snprintf(v->state, sizeof(v->state), "%s", st);
    v->idle = idle;
    v->reclaim = rec;
    v->wake = wake;
  }
  qsort(c->sk, c->nsk, sizeof(skey), cmp_skey);
  free(txt);
}

static void load_audit(ctx *c, const char *path, long *faults, long *kills,
                       long *creates)
{
  char *txt = slurp(path), *line = txt, *nl;
  for(; *line; line = nl) {
    json_object *o;
    const char *ev, *src, *sb4, *saft, *fault, *id;
    nl = strchr(line, '\n');
    if(nl)
      *nl++ = 0;
    else
      nl = line + strlen(line);
    o = json_tokener_parse(line);
    if(!o)
      continue;
    ev = jstr(o, "event");
    src = jstr(o, "source");
    sb4 = jstr(o, "stateBefore");
    saft = jstr(o, "stateAfter");
    fault = jstr(o, "fault");
    id = jstr(o, "sandboxID");
    if(fault)
      (*faults)++;
    if(ev && !strcmp(ev, "timeout-kill"))
      (*kills)++;
    if(ev && !strcmp(ev, "create") && saft && !strcmp(saft, "running"))
      (*creates)++;
    if(ev && src && !strcmp(ev, "delete") && !strcmp(src, "api") && saft &&
       !strcmp(saft, "deleted") && sb4 && strcmp(sb4, "deleted") && id) {
      sbx *s = find_sbx(c, id);
      if(s) {
        del *d;
        if(c->ndl == c->capdl) {
          c->capdl = c->capdl ? c->capdl * 2 : 1024;
          c->dl = realloc(c->dl, c->capdl * sizeof(del));
        }
        d = &c->dl[c->ndl++];
        d->sb = s;
        d->at = jtime(o, "at");
        snprintf(d->before, sizeof(d->before), "%s", sb4);
      }
    }
    json_object_put(o);
  }
  free(txt);
}

static int is_paused(const char *st)
{
  return !strcmp(st, "paused") || !strcmp(st, "pausing");
}

/* judge one delete on everything but duplicates; why = the reason */
static int judge_intent(ctx *c, const del *d, const char **why)
{
  const sbx *s = d->sb;
  skey *k;
  size_t i;
  int64_t T = d->at, paused_for = is_paused(d->before) && s->paused_at ?
                                  T - s->paused_at : -1;
  if(!s->managed_by || strcmp(s->managed_by, c->managed_by) || !s->key) {
    *why = "not ours";
    return 0;
  }
  k = find_key(c, s->key);
  if(!k) {
    *why = "orphan";
    return paused_for >= c->grace;
  }
  /* version i (0: before the first write) could be current in [T-w, T] */
  for(i = 0; i <= k->n; i++) {
    const ver *v = i ? &k->v[i - 1] : NULL;
    if(v && v->tb > T)
      break;
    if(i < k->n && k->v[i].ta < T - c->window)
      continue;
    if(!v) {
      if(paused_for >= c->grace) {
        *why = "orphan";
        return 1;
      }
      continue;
    }
    if(!v->exists || !strcmp(v->state, "Ended")) {
      *why = "ended";
      return 1;
    }
    if((!strcmp(v->state, "Active") || !strcmp(v->state, "Paused")) &&
       v->reclaim > 0 && paused_for >= v->reclaim) {
      *why = "reclaim";
      return 1;
    }
  }
  *why = "no justification";
  return 0;
}

/* another sandbox of the session live at T (not deleted as a duplicate in
 * favour of this one) */
static const sbx *dup_winner(ctx *c, const del *d)
{
  size_t i;
  const sbx *s = d->sb;
  for(i = 0; i < c->nsb; i++) {
    const sbx *o = &c->sb[i];
    if(o == s || !o->key || strcmp(o->key, s->key) || !o->managed_by ||
       strcmp(o->managed_by, c->managed_by))
      continue;
    if(o->created > d->at || (o->deleted_at && o->deleted_at <= d->at))
      continue;
    if(o->deleted_at && o->dup_only && o->favour == s)
      continue;
    return o;
  }
  return NULL;
}

static void judge_deletes(ctx *c, long *by_reason)
{
  size_t i;
  const char *why;
  for(i = 0; i < c->ndl; i++) {
    del *d = &c->dl[i];
    if(judge_intent(c, d, &why)) {
      d->sb->del_legit = 1;
      by_reason[!strcmp(why, "ended") ? 0 : !strcmp(why, "reclaim") ? 1 : 2]++;
    }
  }
  /* duplicates: first find each one's winner, then drop pairs that each
   * lost to the other (both gone: the session lost its sandbox) */
  for(i = 0; i < c->ndl; i++) {
    del *d = &c->dl[i];
    const sbx *w;
    if(d->sb->del_legit || !d->sb->key || !d->sb->managed_by ||
       strcmp(d->sb->managed_by, c->managed_by))
      continue;
    w = dup_winner(c, d);
    if(w) {
      d->sb->dup_only = 1;
      d->sb->favour = w;
    }
  }
  for(i = 0; i < c->ndl; i++) {
    del *d = &c->dl[i];
    const sbx *w;
    if(d->sb->del_legit)
      continue;
    w = d->sb->dup_only ? dup_winner(c, d) : NULL;
    if(w) {
      d->sb->del_legit = 1;
      by_reason[3]++;
      continue;
    }
    judge_intent(c, d, &why);
    c->mistaken++;
    if(c->shown++ < 20) {
      char ts[40];
      sctime_format_rfc3339(d->at, ts, sizeof(ts));
      fprintf(stderr, "MISTAKEN DELETE: sandbox %s (session %s, managed-by "
              "%s) at %s, state before %s, paused since %" PRId64 " s: %s\n",
              d->sb->id, d->sb->key ? d->sb->key : "-",
              d->sb->managed_by ? d->sb->managed_by : "-", ts, d->before,
              d->sb->paused_at ? (d->at - d->sb->paused_at) / 1000 : -1, why);
    }
  }
}

typedef struct conv {
  long sessions, tombstones, no_sandbox, duplicates, status_mismatch,
       ended_with_sandbox, leaks, orphans_in_grace, lost, integrity_bad;
} conv;

static void problem(ctx *c, long *shown, const char *what, const char *a,
                    const char *b)
{
  if(c->verbose || (*shown)++ < 100)
    fprintf(stderr, "%s: %s (%s)\n", a, what, b ? b : "-");
}

static const char *jstatus(json_object *st, const char *k)
{
  const char *v = jstr(st, k);
  return v ? v : "";
}

static void check_store(ctx *c, const char *db, conv *cv)
{
  sqlite3 *h = NULL;
  sqlite3_stmt *q = NULL;
  size_t i;
  long shown = 0;
  char *seen;
  if(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    fprintf(stderr, "check: cannot open %s\n", db);
    exit(2);
  }
  sqlite3_busy_timeout(h, 10000);
  if(sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &q, NULL) ||
     sqlite3_step(q) != SQLITE_ROW ||
     strcmp((const char *)sqlite3_column_text(q, 0), "ok"))
    cv->integrity_bad++;
  sqlite3_finalize(q);
  seen = calloc(c->nsk + 1, 1);
  if(sqlite3_prepare_v2(h, "SELECT namespace, name, generation, deleted_ms, "
                        "spec, status FROM objects", -1, &q, NULL)) {
    fprintf(stderr, "check: %s: %s\n", db, sqlite3_errmsg(h));
    exit(2);
  }
  while(sqlite3_step(q) == SQLITE_ROW) {
    char key[160];
    const char *ns = (const char *)sqlite3_column_text(q, 0);
    const char *nm = (const char *)sqlite3_column_text(q, 1);
    int64_t gen = sqlite3_column_int64(q, 2);
    int tomb = sqlite3_column_int64(q, 3) != 0;
    json_object *spec = json_tokener_parse(
      (const char *)sqlite3_column_text(q, 4));
    json_object *st = json_tokener_parse(
      (const char *)sqlite3_column_text(q, 5));
    skey *k;
    const ver *last;
    const char *state = jstr(spec, "state");
    const char *phase = jstatus(st, "phase"), *sid = jstatus(st, "sandboxID");
    json_object *rg;
    int64_t rgen = 0;
    size_t nlive = 0;
    const sbx *one = NULL;
    snprintf(key, sizeof(key), "%s/%s", ns, nm);
    k = find_key(c, key);
    last = k && k->n ? &k->v[k->n - 1] : NULL;
    if(k)
      seen[k - c->sk] = 1;
    /* the object as the driver last wrote it */
    if(!last || (tomb != !last->exists) ||
       (!tomb && (!state || strcmp(state, last->state)))) {
      cv->lost++;
      problem(c, &shown, "store object not as the driver last wrote it", key,
              tomb ? "tombstone" : state);
    }
    if(st && json_object_object_get_ex(st, "reclaimedGeneration", &rg))
      rgen = json_object_get_int64(rg);
    for(i = 0; i < c->nsb; i++) {
      const sbx *s = &c->sb[i];
      if(s->key && !strcmp(s->key, key) && s->managed_by &&
         !strcmp(s->managed_by, c->managed_by) &&
         strcmp(s->state, "deleted")) {
        nlive++;
        one = s;
      }
    }
    if(tomb || (state && !strcmp(state, "Ended"))) {
      tomb ? cv->tombstones++ : cv->sessions++;
      if(nlive) {
        cv->ended_with_sandbox++;
        problem(c, &shown, "ended or deleted, a sandbox still live", key,
                one->id);
      }
    }
    else {
      cv->sessions++;
      if(!strcmp(phase, "Reclaimed") && rgen == gen) {
        if(nlive) {
          cv->status_mismatch++;
          problem(c, &shown, "Reclaimed but a sandbox is live", key,
                  one->id);
        }
      }
      else if(nlive == 0 && !strcmp(state, "Paused") && !*sid) {
        /* Paused: never created; nothing to hold */
      }
      else if(nlive == 0) {
        cv->no_sandbox++;
        problem(c, &shown, "no sandbox; phase", key, phase);
      }
      else if(nlive > 1) {
        cv->duplicates++;
        problem(c, &shown, "more than one sandbox", key, one->id);
      }
      else {
        const char *want = is_paused(one->state) ? "Paused" : "Running";
        const char *sst = jstatus(st, "sandboxState");
        if(strcmp(sid, one->id) || strcmp(phase, want) ||
           (is_paused(sst) != is_paused(one->state)) ||
           (!strcmp(state, "Paused") && !is_paused(one->state)) ||
           (!strcmp(state, "Running") && is_paused(one->state))) {
          cv->status_mismatch++;
          problem(c, &shown, "status does not match Cube; sandbox",
                  key, one->id);
        }
      }
    }
    json_object_put(spec);
    json_object_put(st);
  }
  sqlite3_finalize(q);
  sqlite3_close(h);
  /* sessions written and not deleted must be in the store */
  for(i = 0; i < c->nsk; i++)
    if(!seen[i] && c->sk[i].n && c->sk[i].v[c->sk[i].n - 1].exists) {
      cv->lost++;
      problem(c, &shown, "store object lost", c->sk[i].key, NULL);
    }
  free(seen);
  /* sandboxes of ours whose session has no live object */
  for(i = 0; i < c->nsb; i++) {
    const sbx *s = &c->sb[i];
    skey *k;
    if(!s->managed_by || strcmp(s->managed_by, c->managed_by) ||
       !strcmp(s->state, "deleted"))
      continue;
    k = s->key ? find_key(c, s->key) : NULL;
    if(k && k->n && k->v[k->n - 1].exists)
      continue;   /* judged with its session above */
    if(k && k->n) {
      cv->leaks++;  /* its session was deleted: it must go at once */
      problem(c, &shown, "leak: sandbox of a deleted session; session", s->id,
              s->key);
    }
    else if(is_paused(s->state) && c->now - s->paused_at > c->grace) {
      cv->leaks++;
      problem(c, &shown, "leak: orphan paused past the grace; tags", s->id,
              s->key);
    }
    else
      cv->orphans_in_grace++;
  }
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
  ctx c;
  const char *truth = NULL, *audit = NULL, *tl = NULL, *db = NULL;
  int i, deletions_only = 0, bad = 0;
  long faults = 0, kills = 0, creates = 0, by_reason[4] = {0, 0, 0, 0};
  conv cv;
  memset(&c, 0, sizeof(c));
  memset(&cv, 0, sizeof(cv));
  c.managed_by = "session-controller";
  c.grace = 600000;
  c.window = 0;
  i = 1;
  while(i < argc) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if(!strcmp(a, "--deletions-only") || !strcmp(a, "--verbose")) {
      if(a[2] == 'd')
        deletions_only = 1;
      else
        c.verbose = 1;
      i++;
      continue;
    }
    i += 2;
    if(!strcmp(a, "--truth")) truth = v;
    else if(!strcmp(a, "--audit")) audit = v;
    else if(!strcmp(a, "--timeline")) tl = v;
    else if(!strcmp(a, "--db")) db = v;
    else if(!strcmp(a, "--managed-by")) c.managed_by = v;
    else if(!strcmp(a, "--grace-ms")) bad = parse_i64(v, &c.grace);
    else if(!strcmp(a, "--window-ms")) bad = parse_i64(v, &c.window);
    else if(!strcmp(a, "--now-ms")) bad = parse_i64(v, &c.now);
    else {
      fprintf(stderr, "check: unknown flag %s\n", a);
      return 2;
    }
    if(bad) {
      fprintf(stderr, "check: bad value for %s: '%s'\n", a, v);
      return 2;
    }
  }
  if(!truth || !audit || !tl || !db) {
    fprintf(stderr, "check: --truth, --audit, --timeline, --db required\n");
    return 2;
  }
  load_truth(&c, truth);
  load_timeline(&c, tl);
  load_audit(&c, audit, &faults, &kills, &creates);
  judge_deletes(&c, by_reason);
  printf("%-38s %ld\n", "sandboxes created", creates);
  printf("%-38s %zu\n", "api deletes", c.ndl);
  printf("%-38s %ld\n", "  of ended/deleted sessions", by_reason[0]);
  printf("%-38s %ld\n", "  reclaims (paused >= reclaimAfter)", by_reason[1]);
  printf("%-38s %ld\n", "  orphans (paused >= grace)", by_reason[2]);
  printf("%-38s %ld\n", "  duplicates (another one kept)", by_reason[3]);
  printf("%-38s %ld\n", "MISTAKEN DELETIONS", c.mistaken);
  printf("%-38s %ld\n", "faults injected (audit lines)", faults);
  printf("%-38s %ld\n", "timeout kills by cubesim", kills);
  if(!deletions_only) {
    check_store(&c, db, &cv);
    printf("%-38s %ld\n", "sessions (live objects)", cv.sessions);
    printf("%-38s %ld\n", "tombstones", cv.tombstones);
    printf("%-38s %ld\n", "SESSIONS WITHOUT THEIR SANDBOX", cv.no_sandbox);
    printf("%-38s %ld\n", "DUPLICATES (sessions with >1)", cv.duplicates);
    printf("%-38s %ld\n", "STATUS MISMATCHES", cv.status_mismatch);
    printf("%-38s %ld\n", "ENDED/DELETED WITH A LIVE SANDBOX",
           cv.ended_with_sandbox);
    printf("%-38s %ld\n", "LEAKS (sandboxes without a session)", cv.leaks);
    printf("%-38s %ld\n", "orphans within the grace", cv.orphans_in_grace);
    printf("%-38s %ld\n", "LOST OR WRONG STORE OBJECTS", cv.lost);
    printf("%-38s %s\n", "store integrity_check",
           cv.integrity_bad ? "FAILED" : "ok");
  }
  return c.mistaken || cv.no_sandbox || cv.duplicates || cv.status_mismatch ||
         cv.ended_with_sandbox || cv.leaks || cv.lost || cv.integrity_bad;
}
