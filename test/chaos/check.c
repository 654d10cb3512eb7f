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
 *  4. the deletions by how the user reached the sandbox: of one a served
 *     connect's user was working in (a request answered 200 within the
 *     idle window, after its last pause), of OnConnect sessions, and the
 *     rest; an unjustified delete of a running Auto sandbox that raw
 *     traffic had just auto-resumed is the residual race: reported only.
 *  5. with --watch (driver --watch-db): every API pause and delete of a
 *     session's sandbox has status.pendingAction for it in the store's
 *     history (an orphan's: an "intent" line of --ctl-audit); with
 *     --ctl-audit every delete has an audit line (a failure only inside
 *     the --store-fault window, where no replica is killed).
 *  6. no sandbox created after its object was deleted (beyond the window)
 *     or purged; no new sandbox after a reclaim unless a driver write
 *     (wake, spec) or a connect asked; every connect answered.
 * Usage: check --truth F --audit F --timeline F --db PATH --now-ms MS
 *              [--watch F] [--ctl-audit F] [--store-fault A_MS,B_MS]
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
  int reason;        /* R_*: what justified it */
  int pause;         /* an API pause (in pz), not a delete */
} del;

enum { R_MISTAKEN = -1, R_ENDED, R_RECLAIM, R_ORPHAN, R_DUP };

/* the driver's connects (timeline "connect", "answer", "abandoned",
 * "unanswered") */
enum { C_ASKED, C_SERVED, C_REFUSED, C_ABANDONED, C_UNANSWERED };
typedef struct conn {
  char *key, *nonce;
  int64_t tb, ta, answered;
  int state;
} conn;

/* one user request (timeline "use") */
typedef struct use {
  char *sbx, *key;
  int64_t t, idle;
  long code;
  int connect;       /* through a served connect; 0: raw traffic */
} use;

/* status.pendingAction as the watcher saw it written (or an orphan's
 * "intent" line of a controller's audit log: key NULL) */
typedef struct intent {
  char *sbx, *key, *kind;
  int64_t at;
} intent;

typedef struct mark {  /* a sandbox ID and a time: auto-resumes, audit */
  char *sbx;
  int64_t t;
} mark;

typedef struct purge {
  char *key;
  int64_t t;
} purge;

#define GROW(arr, n, cap) do { if((n) == (cap)) { \
    (cap) = (cap) ? (cap) * 2 : 1024; \
    (arr) = realloc((arr), (cap) * sizeof(*(arr))); \
    if(!(arr)) exit(2); } } while(0)

typedef struct ctx {
  sbx *sb; size_t nsb;
  skey *sk; size_t nsk, capsk;
  del *dl; size_t ndl, capdl;
  del *pz; size_t npz, cappz;        /* API pauses */
  conn *cn; size_t ncn, capcn;
  use *us; size_t nus, capus;
  intent *in; size_t nin, capin;     /* by sandbox ID after loading */
  mark *ar; size_t nar, capar;       /* auto-resumes by traffic */
  mark *ca; size_t nca, capca;       /* controller audit: deletes */
  purge *pg; size_t npg, cappg;
  char **onconnect; size_t non, capon; /* keys with resumePolicy OnConnect */
  long lost, gaps;
  const char *managed_by;
  int64_t grace, window, now, fault_a, fault_b;
  int verbose, have_watch, have_ctl_audit;
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

static char *cat_key(const char *ns, const char *name)
{
  size_t l = strlen(ns) + strlen(name) + 2;
  char *k = malloc(l);
  if(!k)
    exit(2);
  snprintf(k, l, "%s/%s", ns, name);
  return k;
}

static conn *find_conn(ctx *c, const char *key, const char *nonce)
{
  size_t i;
  for(i = c->ncn; i > 0; i--)
    if(!strcmp(c->cn[i - 1].nonce, nonce) && !strcmp(c->cn[i - 1].key, key))
      return &c->cn[i - 1];
  return NULL;
}

/* the timeline's lines that start with a word (driver.c); 1: taken */
static int load_word_line(ctx *c, const char *line)
{
  char w[16], ns[64], name[64], a[80], b[80], x[16];
  long long t1, t2, code, idle;
  if(sscanf(line, "%15s", w) != 1)
    return 0;
  if(!strcmp(w, "policy") &&
     sscanf(line, "policy %63s %63s %15s", ns, name, x) == 3) {
    if(!strcmp(x, "OnConnect")) {
      GROW(c->onconnect, c->non, c->capon);
      c->onconnect[c->non++] = cat_key(ns, name);
    }
    return 1;
  }
  if(!strcmp(w, "connect") && sscanf(line, "connect %lld %lld %63s %63s "
                                     "%79s", &t1, &t2, ns, name, a) == 5) {
    conn *k;
    GROW(c->cn, c->ncn, c->capcn);
    k = &c->cn[c->ncn++];
    memset(k, 0, sizeof(*k));
    k->key = cat_key(ns, name);
    k->nonce = strdup(a);
    k->tb = t1;
    k->ta = t2;
    return 1;
  }
  if(!strcmp(w, "answer") && sscanf(line, "answer %lld %63s %63s %79s %15s "
                                    "%79s", &t1, ns, name, a, x, b) == 6) {
    char *key = cat_key(ns, name);
    conn *k = find_conn(c, key, a);
    free(key);
    if(k && (k->state == C_ASKED || t1 < k->answered)) {
      k->state = !strcmp(x, "Served") ? C_SERVED : C_REFUSED;
      k->answered = t1;
    }
    return 1;
  }
  if((!strcmp(w, "abandoned") || !strcmp(w, "unanswered")) &&
     sscanf(line, "%*s %lld %63s %63s %79s", &t1, ns, name, a) == 4) {
    char *key = cat_key(ns, name);
    conn *k = find_conn(c, key, a);
    free(key);
    if(k && k->state == C_ASKED) {
      k->state = w[0] == 'a' ? C_ABANDONED : C_UNANSWERED;
      k->answered = t1;
    }
    return 1;
  }
  if(!strcmp(w, "use") && sscanf(line, "use %lld %63s %63s %15s %79s %lld "
                                 "%lld", &t1, ns, name, x, a, &code,
                                 &idle) == 7) {
    use *u;
    GROW(c->us, c->nus, c->capus);
    u = &c->us[c->nus++];
    u->key = cat_key(ns, name);
    u->sbx = strdup(a);
    u->t = t1;
    u->idle = idle;
    u->code = (long)code;
    u->connect = !strcmp(x, "connect");
    return 1;
  }
  if(!strcmp(w, "waiting"))
    return 1;  /* stays asked until an answer is seen */
  if(!strcmp(w, "lost")) {
    c->lost++;
    return 1;
  }
  return !strcmp(w, "foreign");
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
    if(load_word_line(c, line))
      continue;
    if(sscanf(line, "%lld %lld %15s %63s %63s %15s %lld %lld %lld", &tb, &ta,
              op, ns, name, st, &idle, &rec, &wake) != 9)
      continue;
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

static int is_paused(const char *st);
static void add_mark(mark **arr, size_t *n, size_t *cap, const char *id,
                     int64_t t);
static int64_t purged_at(const ctx *c, const char *key);

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
        d->reason = R_MISTAKEN;
        d->pause = 0;
        snprintf(d->before, sizeof(d->before), "%s", sb4);
      }
    }
    /* an API pause that took (the intent check covers pauses too) */
    if(ev && src && id && !strcmp(ev, "pause") && !strcmp(src, "api") &&
       saft && is_paused(saft) && sb4 && !strcmp(sb4, "running")) {
      sbx *s = find_sbx(c, id);
      if(s) {
        del *d;
        GROW(c->pz, c->npz, c->cappz);
        d = &c->pz[c->npz++];
        d->sb = s;
        d->at = jtime(o, "at");
        d->reason = R_MISTAKEN;
        d->pause = 1;
        snprintf(d->before, sizeof(d->before), "%s", sb4);
      }
    }
    if(ev && id && !strcmp(ev, "auto-resume"))
      add_mark(&c->ar, &c->nar, &c->capar, id, jtime(o, "at"));
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
      d->reason = !strcmp(why, "ended") ? R_ENDED :
                  !strcmp(why, "reclaim") ? R_RECLAIM : R_ORPHAN;
      by_reason[d->reason]++;
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
      d->reason = R_DUP;
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

/* arrays whose elements start with a char *sbx, sorted by it */
static int cmp_first_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* index of the first element for sandbox id, n when there is none */
static size_t first_of(const void *base, size_t n, size_t sz, const char *id)
{
  size_t lo = 0, hi = n;
  while(lo < hi) {
    size_t mid = (lo + hi) / 2;
    if(strcmp(*(char *const *)((const char *)base + mid * sz), id) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && !strcmp(*(char *const *)((const char *)base + lo * sz),
                           id) ? lo : n;
}

static void add_mark(mark **arr, size_t *n, size_t *cap, const char *id,
                     int64_t t)
{
  GROW(*arr, *n, *cap);
  (*arr)[*n].sbx = strdup(id);
  (*arr)[*n].t = t;
  (*n)++;
}

/* the watcher's file (driver --watch-db) */
static void load_watch(ctx *c, const char *path)
{
  char *txt = slurp(path), *line = txt, *nl;
  for(; *line; line = nl) {
    char ns[64], name[64], kind[32], id[80];
    long long t, rev, at;
    nl = strchr(line, '\n');
    if(nl)
      *nl++ = 0;
    else
      nl = line + strlen(line);
    if(sscanf(line, "intent %lld %lld %63s %63s %31s %79s %lld", &t, &rev,
              ns, name, kind, id, &at) == 7) {
      intent *x;
      GROW(c->in, c->nin, c->capin);
      x = &c->in[c->nin++];
      x->sbx = strdup(id);
      x->key = cat_key(ns, name);
      x->kind = strdup(kind);
      x->at = at;
    }
    else if(sscanf(line, "purged %lld %63s", &t, ns) == 2) {
      GROW(c->pg, c->npg, c->cappg);
      c->pg[c->npg].key = strdup(ns);   /* "ns/name" */
      c->pg[c->npg++].t = t;
    }
    else if(!strncmp(line, "gap ", 4))
      c->gaps++;
    else if(!strncmp(line, "answer ", 7))
      load_word_line(c, line); /* the answer as the store recorded it */
  }
  free(txt);
  c->have_watch = 1;
}

/* the controllers' audit logs: a line per delete attempt; an orphan's
 * "intent" line before its call */
static void load_ctl_audit(ctx *c, const char *path)
{
  char *txt = slurp(path), *line = txt, *nl;
  for(; *line; line = nl) {
    json_object *o;
    const char *act, *out, *id;
    nl = strchr(line, '\n');
    if(nl)
      *nl++ = 0;
    else
      nl = line + strlen(line);
    o = json_tokener_parse(line);
    act = jstr(o, "action");
    out = jstr(o, "outcome");
    id = jstr(o, "sandboxID");
    if(act && out && id && !strcmp(act, "delete")) {
      if(!strcmp(out, "intent")) {
        intent *x;
        GROW(c->in, c->nin, c->capin);
        x = &c->in[c->nin++];
        x->sbx = strdup(id);
        x->key = NULL;
        x->kind = strdup("orphan");
        x->at = jtime(o, "cubeNow");
      }
      else
        add_mark(&c->ca, &c->nca, &c->capca, id, 0);
    }
    json_object_put(o);
  }
  free(txt);
  c->have_ctl_audit = 1;
}

static int is_onconnect(const ctx *c, const char *key)
{
  size_t i;
  for(i = 0; key && i < c->non; i++)
    if(!strcmp(c->onconnect[i], key))
      return 1;
  return 0;
}

static int64_t purged_at(const ctx *c, const char *key)
{
  size_t i;
  for(i = 0; key && i < c->npg; i++)
    if(!strcmp(c->pg[i].key, key))
      return c->pg[i].t;
  return 0;
}

/* a served user was working in the sandbox of d when it went: a request
 * through its connect answered 200 within the idle window before the
 * delete, and after the sandbox's last pause began */
static int in_connect_use(const ctx *c, const del *d)
{
  size_t i = first_of(c->us, c->nus, sizeof(use), d->sb->id);
  for(; i < c->nus && !strcmp(c->us[i].sbx, d->sb->id); i++) {
    const use *u = &c->us[i];
    if(!u->connect || u->code != 200 || u->t > d->at ||
       u->t < d->at - u->idle)
      continue;
    if(is_paused(d->before) && d->sb->paused_at && u->t < d->sb->paused_at)
      continue;
    return 1;
  }
  return 0;
}

/* traffic auto-resumed the sandbox of d shortly before the delete (the
 * open race of an Auto session: docs/reliability.md) */
static int resumed_by_traffic(const ctx *c, const del *d)
{
  size_t i = first_of(c->ar, c->nar, sizeof(mark), d->sb->id);
  for(; i < c->nar && !strcmp(c->ar[i].sbx, d->sb->id); i++)
    if(c->ar[i].t <= d->at && c->ar[i].t >= d->at - c->window)
      return 1;
  return 0;
}

typedef struct extra {
  long mis_connect, mis_onconnect, residual, mis_other;
  long created_after_delete, live_after_purge, recreated_unasked;
  long recreated_in_fault;
  long conn_asked, conn_served, conn_refused, conn_abandoned, conn_unanswered;
  int64_t conn_slowest;
  long calls_checked, no_intent, no_intent_in_fault, calls_in_fault;
  long no_audit, no_audit_in_fault;
} extra;

static void say(ctx *c, const char *what, const sbx *s, int64_t at,
                const char *more)
{
  char ts[40];
  if(c->shown++ >= 40)
    return;
  sctime_format_rfc3339(at, ts, sizeof(ts));
  fprintf(stderr, "%s: sandbox %s (session %s) at %s: %s\n", what, s->id,
          s->key ? s->key : "-", ts, more ? more : "");
}

static int in_fault(const ctx *c, int64_t t)
{
  /* the first virtual seconds of the window: calls already under way */
  return c->fault_b > c->fault_a && t >= c->fault_a + 5000 &&
         t <= c->fault_b;
}

/* the deletions split by how the user reached the sandbox */
static void judge_in_use(ctx *c, extra *x)
{
  size_t i;
  for(i = 0; i < c->ndl; i++) {
    const del *d = &c->dl[i];
    int ours = d->sb->key && d->sb->managed_by &&
               !strcmp(d->sb->managed_by, c->managed_by);
    if(ours && d->reason == R_ENDED)
      continue;
    if(ours && in_connect_use(c, d)) {
      x->mis_connect++;
      say(c, "MISTAKEN DELETE (a served user working in it)", d->sb, d->at,
          d->before);
    }
    else if(d->reason != R_MISTAKEN)
      continue;
    else if(ours && is_onconnect(c, d->sb->key)) {
      x->mis_onconnect++;
      say(c, "MISTAKEN DELETE (OnConnect session)", d->sb, d->at, d->before);
    }
    else if(ours && !is_paused(d->before) && resumed_by_traffic(c, d)) {
      x->residual++;
      say(c, "residual race (raw traffic resumed an Auto sandbox before its "
          "reclaim's DELETE)", d->sb, d->at, d->before);
    }
    else
      x->mis_other++;   /* printed by judge_deletes */
  }
}

/* a store write of the driver for key in [lo, hi] (apply: a wake or spec
 * change), or a connect asked in it or asked before it and not answered
 * by lo: a connect that found a reclaim's intent written waits for the
 * reclaim and gets a new sandbox (docs/controller.md, rule 11), so a
 * connect pending across the reclaim asked for the next sandbox */
static int asked_between(const ctx *c, const char *key, int64_t lo,
                         int64_t hi)
{
  skey *k = find_key((ctx *)c, key);
  size_t i;
  for(i = 0; k && i < k->n; i++)
    if(k->v[i].exists && k->v[i].ta >= lo && k->v[i].tb <= hi)
      return 1;
  for(i = 0; i < c->ncn; i++) {
    const conn *n = &c->cn[i];
    if(strcmp(n->key, key) || n->tb > hi)
      continue;
    if(n->ta >= lo || n->state == C_ASKED || n->answered >= lo)
      return 1;
  }
  return 0;
}

/* (a) no sandbox made for an object that is gone; (b) a reclaimed session
 * gets a new sandbox only when a connect or a wake (a spec write) asked */
static void judge_creates(ctx *c, extra *x)
{
  size_t i, j;
  for(i = 0; i < c->nsb; i++) {
    const sbx *s = &c->sb[i];
    skey *k;
    int64_t p;
    if(!s->key || !s->managed_by || strcmp(s->managed_by, c->managed_by))
      continue;
    k = find_key(c, s->key);
    for(j = 0; k && j < k->n; j++)
      if(!k->v[j].exists && k->v[j].ta < s->created - c->window) {
        x->created_after_delete++;
        say(c, "CREATED AFTER ITS OBJECT WAS DELETED", s, s->created, NULL);
        break;
      }
    p = purged_at(c, s->key);
    if(p && p < s->created && !(k && j < k->n)) {
      x->created_after_delete++;
      say(c, "CREATED AFTER ITS OBJECT WAS PURGED", s, s->created, NULL);
    }
  }
  for(i = 0; i < c->ndl; i++) {
    const del *d = &c->dl[i];
    const sbx *next = NULL;
    if(d->reason != R_RECLAIM)
      continue;
    for(j = 0; j < c->nsb; j++) {
      const sbx *o = &c->sb[j];
      if(o == d->sb || !o->key || strcmp(o->key, d->sb->key) ||
         !o->managed_by || strcmp(o->managed_by, c->managed_by) ||
         o->created <= d->at)
        continue;
      if(!next || o->created < next->created)
        next = o;
    }
    if(next && !asked_between(c, d->sb->key, d->at - c->window,
                              next->created)) {
      x->recreated_unasked++;
      if(in_fault(c, next->created))
        x->recreated_in_fault++;
      say(c, "NEW SANDBOX FOR A RECLAIMED SESSION, NOTHING ASKED", next,
          next->created, d->sb->id);
    }
  }
}

/* (c) every connect answered within the limit */
static void judge_connects(ctx *c, extra *x)
{
  size_t i;
  for(i = 0; i < c->ncn; i++) {
    const conn *k = &c->cn[i];
    x->conn_asked++;
    switch(k->state) {
    case C_SERVED: x->conn_served++; break;
    case C_REFUSED: x->conn_refused++; break;
    case C_ABANDONED: x->conn_abandoned++; break;
    default:
      x->conn_unanswered++;
      if(c->shown++ < 40)
        fprintf(stderr, "CONNECT NOT ANSWERED: %s nonce %s\n", k->key,
                k->nonce);
      break;
    }
    if((k->state == C_SERVED || k->state == C_REFUSED) &&
       k->answered - k->ta > x->conn_slowest)
      x->conn_slowest = k->answered - k->ta;
  }
}

/* every destructive call on a session's sandbox had its intent in the
 * store first (an orphan's: the audit line), and every delete has its
 * line in a controller's audit log */
static void judge_intents(ctx *c, extra *x)
{
  size_t i, pass;
  for(pass = 0; pass < 2; pass++) {
    const del *arr = pass ? c->pz : c->dl;
    size_t n = pass ? c->npz : c->ndl;
    for(i = 0; i < n; i++) {
      const del *d = &arr[i];
      const sbx *s = d->sb;
      size_t j;
      int64_t p;
      int found = 0, orphan;
      if(!s->key || !s->managed_by || strcmp(s->managed_by, c->managed_by))
        continue;
      p = purged_at(c, s->key);
      orphan = !find_key(c, s->key) || (p && p <= d->at);
      x->calls_checked++;
      if(in_fault(c, d->at))
        x->calls_in_fault++;
      j = first_of(c->in, c->nin, sizeof(intent), s->id);
      for(; j < c->nin && !strcmp(c->in[j].sbx, s->id); j++) {
        const intent *t = &c->in[j];
        /* at: the controller's reading of Cube's clock (whole seconds,
         * read from Date headers and carried on by the local clock: a few
         * virtual seconds off at x60); an intent of a later call is
         * older than the window */
        if(t->at > d->at + c->window)
          continue;
        if(orphan ? !t->key || !strcmp(t->key, s->key) :
           t->key && !strcmp(t->key, s->key) &&
           !strcmp(t->kind, "pause") == !!d->pause) {
          found = 1;
          break;
        }
      }
      if(!found) {
        x->no_intent++;
        if(in_fault(c, d->at))
          x->no_intent_in_fault++;
        say(c, d->pause ? "PAUSE WITHOUT A WRITTEN INTENT" :
            "DELETE WITHOUT A WRITTEN INTENT", s, d->at,
            orphan ? "orphan" : d->before);
      }
      if(!pass && c->have_ctl_audit &&
         first_of(c->ca, c->nca, sizeof(mark), s->id) == c->nca) {
        x->no_audit++;
        if(in_fault(c, d->at)) {
          x->no_audit_in_fault++;
          say(c, "DELETE NOT IN ANY CONTROLLER'S AUDIT LOG", s, d->at, NULL);
        }
      }
    }
  }
}

typedef struct conv {
  long sessions, tombstones, no_sandbox, duplicates, status_mismatch,
       ended_with_sandbox, leaks, orphans_in_grace, lost, integrity_bad,
       purged_in_grace, live_after_purge;
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
    if(k && k->n && purged_at(c, s->key)) {
      /* its object was purged: an orphan now, the grace applies; past
       * it, a sandbox outlived its object (invariant (a)) */
      if(!(is_paused(s->state) && c->now - s->paused_at > c->grace) &&
         c->now - purged_at(c, s->key) <= c->grace)
        cv->purged_in_grace++;
      else {
        cv->live_after_purge++;
        problem(c, &shown, "live after its object was purged, past the "
                "grace; session", s->id, s->key);
      }
    }
    else if(k && k->n) {
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
  const char *watchf = NULL, *ctl_audit = NULL;
  int i, deletions_only = 0, bad = 0, fail;
  extra x;
  long faults = 0, kills = 0, creates = 0, by_reason[4] = {0, 0, 0, 0};
  conv cv;
  memset(&c, 0, sizeof(c));
  memset(&cv, 0, sizeof(cv));
  memset(&x, 0, sizeof(x));
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
    else if(!strcmp(a, "--watch")) watchf = v;
    else if(!strcmp(a, "--ctl-audit")) ctl_audit = v;
    else if(!strcmp(a, "--store-fault")) {
      long long fa, fb;
      char tail;
      bad = sscanf(v, "%lld,%lld%c", &fa, &fb, &tail) != 2 || fb < fa;
      c.fault_a = fa;
      c.fault_b = fb;
    }
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
  if(watchf)
    load_watch(&c, watchf);
  if(ctl_audit)
    load_ctl_audit(&c, ctl_audit);
  qsort(c.us, c.nus, sizeof(use), cmp_first_str);
  qsort(c.in, c.nin, sizeof(intent), cmp_first_str);
  qsort(c.ar, c.nar, sizeof(mark), cmp_first_str);
  qsort(c.ca, c.nca, sizeof(mark), cmp_first_str);
  judge_deletes(&c, by_reason);
  judge_in_use(&c, &x);
  judge_creates(&c, &x);
  judge_connects(&c, &x);
  if(watchf)
    judge_intents(&c, &x);
  printf("%-38s %ld\n", "sandboxes created", creates);
  printf("%-38s %zu\n", "api deletes", c.ndl);
  printf("%-38s %ld\n", "  of ended/deleted sessions", by_reason[0]);
  printf("%-38s %ld\n", "  reclaims (paused >= reclaimAfter)", by_reason[1]);
  printf("%-38s %ld\n", "  orphans (paused >= grace)", by_reason[2]);
  printf("%-38s %ld\n", "  duplicates (another one kept)", by_reason[3]);
  printf("%-38s %ld\n", "deletes without a justification", c.mistaken);
  printf("%-38s %ld\n", "MISTAKEN: a served user working in it",
         x.mis_connect);
  printf("%-38s %ld\n", "MISTAKEN: OnConnect sessions", x.mis_onconnect);
  printf("%-38s %ld\n", "MISTAKEN: other", x.mis_other);
  printf("%-38s %ld\n", "residual: raw traffic resumed (Auto)", x.residual);
  printf("%-38s %ld\n", "user requests (timeline)", (long)c.nus);
  printf("%-38s %ld\n", "  sandboxes gone under a served user", c.lost);
  printf("%-38s %ld / %ld / %ld / %ld\n", "connects served/refused/abandoned",
         x.conn_served, x.conn_refused, x.conn_abandoned, x.conn_asked);
  printf("%-38s %ld\n", "CONNECTS NOT ANSWERED", x.conn_unanswered);
  printf("%-38s %" PRId64 "\n", "slowest answer (virtual s)",
         x.conn_slowest / 1000);
  printf("%-38s %ld\n", "CREATED AFTER THE OBJECT WAS GONE",
         x.created_after_delete);
  printf("%-38s %ld\n", "RECLAIMED, NEW SANDBOX UNASKED", x.recreated_unasked);
  if(watchf) {
    printf("%-38s %ld\n", "pauses+deletes checked for an intent",
           x.calls_checked);
    printf("%-38s %ld\n", "CALLS WITHOUT A WRITTEN INTENT", x.no_intent);
    printf("%-38s %ld\n", "history rows the watcher missed", c.gaps);
  }
  if(ctl_audit)
    printf("%-38s %ld\n", "deletes missing from the ctl audit", x.no_audit);
  if(c.fault_b > c.fault_a) {
    printf("%-38s %.1f\n", "store fault window (virtual s)",
           (double)(c.fault_b - c.fault_a) / 1000);
    printf("%-38s %ld\n", "  pauses+deletes inside it", x.calls_in_fault);
    printf("%-38s %ld\n", "  WITHOUT A WRITTEN INTENT",
           x.no_intent_in_fault);
    printf("%-38s %ld\n", "  MISSING FROM THE CTL AUDIT",
           x.no_audit_in_fault);
    printf("%-38s %ld\n", "  RECLAIMED, NEW SANDBOX UNASKED",
           x.recreated_in_fault);
  }
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
    printf("%-38s %ld\n", "purged objects' sandboxes in grace",
           cv.purged_in_grace);
    printf("%-38s %ld\n", "LIVE AFTER THE OBJECT WAS PURGED",
           cv.live_after_purge);
    printf("%-38s %ld\n", "LOST OR WRONG STORE OBJECTS", cv.lost);
    printf("%-38s %s\n", "store integrity_check",
           cv.integrity_bad ? "FAILED" : "ok");
  }
  fail = x.mis_connect || x.mis_onconnect || x.mis_other ||
         x.conn_unanswered || x.created_after_delete ||
         x.recreated_unasked || x.no_intent || x.no_audit_in_fault;
  return fail || cv.no_sandbox || cv.duplicates || cv.status_mismatch ||
         cv.ended_with_sandbox || cv.leaks || cv.live_after_purge ||
         cv.lost || cv.integrity_bad;
}
