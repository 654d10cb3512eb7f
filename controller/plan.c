/*
 * plan.c - the pure planner (DESIGN.md sections 3 and 4).
 *
 * (sessions, sandboxes, Cube's clock, config) -> actions + statuses.
 * No I/O, no clock, no globals. Everything is joined through sorted arrays
 * and binary search, so a pass costs O((S + B) log(S + B)).
 *
 * The join, in priority order (docs/planner.md has the full rules):
 *  1. status.sandboxID (the primary link, rule 4). When several sessions
 *     record one ID, live sessions win over tombstones, then the lowest
 *     "namespace/name". A linked sandbox whose tags are present and name
 *     another tenant (or another session / controller) is never acted on
 *     for that session: it gets a Conflict condition (rule 5).
 *  2. the tags (lea.tenant_id, lea.session_id) of sandboxes carrying our
 *     lea.managed-by. When several sessions share one (tenant, sessionID),
 *     the owner is again live-first, then the lowest key.
 *  3. the rest carrying our managed-by and linked by nobody are orphans;
 *     sandboxes without our tag and without a link are never touched.
 */
#include "plan.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/dynbuf.h"

#define PLAN_DEFAULT_CONTROLLER "session-controller"

/* How a session's status.sandboxID resolved this pass. */
enum link_state {
  LS_NONE = 0,       /* no link, or the link lost to a live session */
  LS_OWNED,          /* observed and ours */
  LS_CONFIRM,        /* not observed, not known gone: GET it (rule 2) */
  LS_GONE,           /* a GET this pass said 404 */
  LS_CONFLICT_TENANT,/* its tenant tag names another tenant (rule 5) */
  LS_CONFLICT_SB,    /* its session or managed-by tag is someone else's */
  LS_CLAIMED         /* another live session records the same ID */
};

typedef struct sess_rec {
  const session *s;
  size_t in_idx;        /* index in the input and in plan->sessions */
  bool tomb;
  const char *ns, *name, *tenant, *sid;
  int64_t idle_ms, reclaim_ms, gen;
  const char *link;     /* status.sandboxID */
  enum link_state ls;
  size_t link_sb;       /* index in sbs when LS_OWNED / conflict */
  size_t other_link;    /* the rec that won the link (LS_CLAIMED) */
  size_t other_pair;    /* the rec owning the shared (tenant, sid) */
  bool pair_conflict;   /* a live non-owner of a shared (tenant, sid) */
  size_t sb_first, sb_n;/* into the per-session sandbox list */
} sess_rec;

typedef struct sb_rec {
  uint64_t h;           /* hash of the ID: sorts without touching strings */
  const cube_sandbox *b;
  const char *tenant, *sid, *mb;
  bool ours;
  bool linked;          /* some session's status records it */
  size_t owner;         /* rec index, or SIZE_MAX */
} sb_rec;

typedef struct claim {
  uint64_t h;           /* hash of the key */
  const char *a, *b;    /* id / (tenant, sid) */
  const struct sess_rec *r;
  size_t rec;
} claim;

typedef struct planner {
  const plan_input *in;
  const plan_config *cfg;
  const char *cname;
  sess_rec *recs;       /* in input order */
  size_t n_recs;
  sb_rec *sbs;          /* sorted by (hash, ID), deduplicated */
  size_t n_sbs;
  const char **gone;    /* sorted */
  size_t n_gone;
  claim *links;         /* sorted by (hash, id, priority) */
  size_t n_links;
  claim *pairs;         /* sorted by (hash, tenant, sid, priority) */
  size_t n_pairs;
  size_t *sblist;       /* per-session sandbox indexes, by rec */
  plan *p;
  size_t cap_actions;
} planner;

/* ---------- names ---------- */

static const char *const action_names[] = {
  "create", "pause", "resume", "keepalive", "set-timeout", "delete",
  "confirm"};
static const char *const kind_names[] = {"",          "reclaim", "ended",
                                         "tombstone", "duplicate", "orphan"};

const char *plan_action_type_name(plan_action_type t)
{
  if((unsigned)t >= sizeof(action_names) / sizeof(action_names[0]))
    return "unknown";
  return action_names[t];
}

const char *plan_delete_kind_name(plan_delete_kind k)
{
  if((unsigned)k >= sizeof(kind_names) / sizeof(kind_names[0]))
    return "unknown";
  return kind_names[k];
}

void plan_config_defaults(plan_config *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  cfg->controller_name = PLAN_DEFAULT_CONTROLLER;
  cfg->orphan_grace_ms = 10 * 60 * 1000LL;
  cfg->max_delete_fraction = 0.2;
  cfg->max_delete_floor = 10;
  cfg->force = false;
}

/* ---------- small helpers ---------- */

static int strcmp0(const char *a, const char *b)
{
  if(!a || !b)
    return a ? 1 : (b ? -1 : 0);
  return strcmp(a, b);
}

static bool str_eq0(const char *a, const char *b)
{
  return !strcmp0(a, b);
}

/* FNV-1a, 64 bits: a fixed function, so every replica sorts alike. The
 * internal sorts only need to be deterministic, not lexicographic; keying
 * them on a hash avoids chasing string pointers (cache misses dominate at
 * 100k sessions). Equal hashes fall back to the strings. */
static uint64_t fnv(uint64_t h, const char *s)
{
  const unsigned char *p = (const unsigned char *)s;
  for(; *p; p++) {
    h ^= *p;
    h *= 0x100000001b3ULL;
  }
  return h;
}

#define FNV_INIT 0xcbf29ce484222325ULL

static uint64_t pair_hash(const char *a, const char *b)
{
  uint64_t h = fnv(FNV_INIT, a);
  h ^= 0xff; /* a byte no string contains: "ab"+"c" differs from "a"+"bc" */
  h *= 0x100000001b3ULL;
  return fnv(h, b);
}

/* Concatenate up to three strings into buf (truncating): a cheap
 * snprintf for the messages computed for every session every pass. */
static void cat3(char *buf, size_t len, const char *a, const char *b,
                 const char *c)
{
  const char *parts[3];
  size_t i, o = 0;
  parts[0] = a;
  parts[1] = b;
  parts[2] = c;
  for(i = 0; i < 3; i++) {
    size_t n = strlen(parts[i]);
    if(n > len - 1 - o)
      n = len - 1 - o;
    memcpy(buf + o, parts[i], n);
    o += n;
  }
  buf[o] = 0;
}

/* "25h", "1h30m", "15m", "90s" -> "1m30s", "500ms". */
static void fmt_dur(int64_t ms, char *buf, size_t len)
{
  char tmp[64];
  size_t o = 0;
  int64_t h, m, s;
  bool neg = ms < 0;
  if(neg)
    ms = -ms;
  if(ms < 1000) {
    snprintf(buf, len, "%s%" PRId64 "ms", neg ? "-" : "", ms);
    return;
  }
  h = ms / 3600000;
  m = (ms / 60000) % 60;
  s = (ms / 1000) % 60;
  tmp[0] = 0;
  if(h)
    o += (size_t)snprintf(tmp + o, sizeof(tmp) - o, "%" PRId64 "h", h);
  if(m)
    o += (size_t)snprintf(tmp + o, sizeof(tmp) - o, "%" PRId64 "m", m);
  if(s || (!h && !m))
    o += (size_t)snprintf(tmp + o, sizeof(tmp) - o, "%" PRId64 "s", s);
  if(ms % 1000 && o < sizeof(tmp))
    snprintf(tmp + o, sizeof(tmp) - o, "%" PRId64 "ms", ms % 1000);
  snprintf(buf, len, "%s%s", neg ? "-" : "", tmp);
}

static void fmt_time(sc_time t, char *buf, size_t len)
{
  if(!t)
    snprintf(buf, len, "(none)");
  else
    sctime_format_rfc3339(t, buf, len);
}

static int64_t timeout_secs(int64_t ms)
{
  return (ms + 999) / 1000;
}

static int64_t eff_idle(const session *s)
{
  return s->spec.idle_timeout_ms > 0 ? s->spec.idle_timeout_ms
                                     : SESSION_DEFAULT_IDLE_TIMEOUT_MS;
}

static int64_t eff_gen(const session *s)
{
  return s->meta.generation > 0 ? s->meta.generation : 1;
}

/* The Reclaimed rule: a reclaim recorded reclaimedGeneration = generation
 * (at least 1); the session gets a new sandbox only once its generation
 * grows past that. */
static bool is_reclaimed(const session *s)
{
  return s->status.reclaimed_generation > 0 &&
         eff_gen(s) <= s->status.reclaimed_generation;
}

static bool is_ended(const session *s)
{
  return s->meta.deletion_timestamp != 0 ||
         s->spec.state == SESSION_STATE_ENDED;
}

/* ---------- sorting ---------- */

static int rec_cmp(const void *pa, const void *pb)
{
  const sess_rec *a = pa, *b = pb;
  int c;
  if(a->tomb != b->tomb)
    return a->tomb ? 1 : -1;
  if((c = strcmp0(a->ns, b->ns)))
    return c;
  if((c = strcmp0(a->name, b->name)))
    return c;
  if((c = strcmp0(a->s->meta.uid, b->s->meta.uid)))
    return c;
  if((c = strcmp0(a->s->meta.resource_version, b->s->meta.resource_version)))
    return c;
  return a->in_idx < b->in_idx ? -1 : a->in_idx > b->in_idx;
}

static int state_rank(cube_sb_state st)
{
  /* a sandbox reported twice: believe "running" first (no reclaim) */
  switch(st) {
  case CUBE_SB_RUNNING: return 0;
  case CUBE_SB_PAUSING: return 1;
  case CUBE_SB_PAUSED: return 2;
  default: return 3;
  }
}

static int kv_cmp(const sc_kvlist *a, const sc_kvlist *b)
{
  size_t i;
  int c;
  for(i = 0; i < a->n && i < b->n; i++)
    if((c = strcmp(a->items[i].key, b->items[i].key)) ||
       (c = strcmp(a->items[i].value, b->items[i].value)))
      return c;
  return a->n < b->n ? -1 : a->n > b->n;
}

/* A total order, so a sandbox observed twice resolves the same way
 * whatever the input order. */
static int sb_cmp(const void *pa, const void *pb)
{
  const sb_rec *a = pa, *b = pb;
  int c;
  if(a->h != b->h)
    return a->h < b->h ? -1 : 1;
  if((c = strcmp(a->b->sandbox_id, b->b->sandbox_id)))
    return c;
  if(state_rank(a->b->state) != state_rank(b->b->state))
    return state_rank(a->b->state) - state_rank(b->b->state);
  if(a->b->metadata.n != b->b->metadata.n)
    return a->b->metadata.n > b->b->metadata.n ? -1 : 1;
  if(a->b->end_at != b->b->end_at)
    return a->b->end_at < b->b->end_at ? -1 : 1;
  if(a->b->started_at != b->b->started_at)
    return a->b->started_at < b->b->started_at ? -1 : 1;
  if((c = kv_cmp(&a->b->metadata, &b->b->metadata)))
    return c;
  return strcmp0(a->b->template_id, b->b->template_id);
}

static int str_cmp(const void *pa, const void *pb)
{
  return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/* Within one key, claims sort by priority: live before tombstones, then
 * the lowest namespace/name (rec_cmp). */
static int claim_cmp(const void *pa, const void *pb)
{
  const claim *a = pa, *b = pb;
  int c;
  if(a->h != b->h)
    return a->h < b->h ? -1 : 1;
  if((c = strcmp(a->a, b->a)) || (c = strcmp0(a->b, b->b)))
    return c;
  return rec_cmp(a->r, b->r);
}

static bool claim_same(const claim *x, const claim *y)
{
  return x->h == y->h && !strcmp(x->a, y->a) && !strcmp0(x->b, y->b);
}

/* first claim with key (h, a, b), or SIZE_MAX */
static size_t claim_find(const claim *v, size_t n, uint64_t h, const char *a,
                         const char *b)
{
  size_t lo = 0, hi = n;
  while(lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = v[mid].h < h ? -1 : v[mid].h > h;
    if(!c)
      c = strcmp(v[mid].a, a);
    if(!c)
      c = strcmp0(v[mid].b, b);
    if(c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if(lo < n && v[lo].h == h && !strcmp(v[lo].a, a) && !strcmp0(v[lo].b, b))
    return lo;
  return SIZE_MAX;
}

static size_t sb_find(const planner *pl, uint64_t h, const char *id)
{
  size_t lo = 0, hi = pl->n_sbs;
  while(lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = pl->sbs[mid].h < h ? -1 : pl->sbs[mid].h > h;
    if(!c)
      c = strcmp(pl->sbs[mid].b->sandbox_id, id);
    if(!c)
      return mid;
    if(c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return SIZE_MAX;
}

static bool is_gone(const planner *pl, const char *id)
{
  return pl->n_gone &&
         bsearch(&id, pl->gone, pl->n_gone, sizeof(*pl->gone), str_cmp);
}

/* ---------- actions ---------- */

static sc_err add_action(planner *pl, plan_action_type type,
                         plan_delete_kind kind, const sess_rec *r,
                         const sb_rec *sb, int64_t timeout_s,
                         const char *fmt, ...)
  __attribute__((format(printf, 7, 8)));

static sc_err add_action(planner *pl, plan_action_type type,
                         plan_delete_kind kind, const sess_rec *r,
                         const sb_rec *sb, int64_t timeout_s,
                         const char *fmt, ...)
{
  plan *p = pl->p;
  plan_action *a;
  char reason[512];
  va_list ap;
  if(p->n_actions == pl->cap_actions) {
    size_t ncap = pl->cap_actions ? pl->cap_actions * 2 : 64;
    plan_action *na = realloc(p->actions, ncap * sizeof(*na));
    if(!na)
      return SC_ERR_NOMEM;
    p->actions = na;
    pl->cap_actions = ncap;
  }
  va_start(ap, fmt);
  vsnprintf(reason, sizeof(reason), fmt, ap);
  va_end(ap);
  a = &p->actions[p->n_actions];
  memset(a, 0, sizeof(*a));
  p->n_actions++;
  a->type = type;
  a->del_kind = kind;
  a->timeout_s = timeout_s;
  a->cube_now = pl->in->cube_now;
  if(r) {
    a->s = r->s;
    if(!(a->ns = strdup(r->ns ? r->ns : SESSION_DEFAULT_NAMESPACE)) ||
       !(a->name = strdup(r->name ? r->name : "")))
      return SC_ERR_NOMEM;
  }
  if(sb) {
    a->end_at = sb->b->end_at;
    if(!(a->sandbox_id = strdup(sb->b->sandbox_id)))
      return SC_ERR_NOMEM;
    if(type == PLAN_DELETE && sb->tenant &&
       !(a->expect_tenant = strdup(sb->tenant)))
      return SC_ERR_NOMEM;
  }
  if(!(a->reason = strdup(reason)))
    return SC_ERR_NOMEM;
  return SC_OK;
}

/* the same, for a sandbox known only by ID (confirm) */
static sc_err add_confirm(planner *pl, const sess_rec *r)
{
  sc_err err = add_action(pl, PLAN_CONFIRM, PLAN_DEL_NONE, r, NULL, 0,
                          "status.sandboxID %s is missing from Cube's lists: "
                          "confirm with GET before concluding anything "
                          "(absence is not evidence)", r->link);
  if(!err) {
    plan_action *a = &pl->p->actions[pl->p->n_actions - 1];
    if(!(a->sandbox_id = strdup(r->link)))
      err = SC_ERR_NOMEM;
  }
  return err;
}

/* ---------- status ---------- */

/* What the planner wants the status to say; applied onto a copy of the
 * old status so unknown parts survive and equal values compare equal. */
typedef struct want {
  session_phase phase;
  const char *sandbox_id;
  const char *sandbox_state;
  sc_time end_at;
  int64_t reclaimed_generation;
  bool paused_by_controller;
  int64_t applied_idle_timeout_ms;
  const char *ready_status, *ready_reason;
  char ready_msg[320];
  bool conflict;            /* Conflict True */
  const char *conflict_reason;
  char conflict_msg[320];
} want;

static sc_err set_cond(session_status *st, const char *type,
                       const char *status, const char *reason,
                       const char *msg, int64_t gen, sc_time now)
{
  session_condition c;
  const session_condition *o = session_status_get_condition(st, type);
  if(o && o->observed_generation == gen && o->last_transition_time &&
     str_eq0(o->status, status) && str_eq0(o->reason, reason) &&
     str_eq0(o->message, msg))
    return SC_OK; /* unchanged: no copy */
  c.type = (char *)type;
  c.status = (char *)status;
  c.reason = (char *)reason;
  c.message = (char *)msg;
  c.last_transition_time = now;
  c.observed_generation = gen;
  return session_status_set_condition(st, &c);
}

static sc_err set_str(char **dst, const char *src)
{
  char *n = NULL;
  if(str_eq0(*dst, src))
    return SC_OK;
  if(src && !(n = strdup(src)))
    return SC_ERR_NOMEM;
  free(*dst);
  *dst = n;
  return SC_OK;
}

/* Shared texts, so plan_status_after() and the next pass agree. */
static void msg_running(char *b, size_t n, const char *id)
{
  cat3(b, n, "sandbox ", id, " is running");
}

static void msg_paused(char *b, size_t n, const char *id)
{
  cat3(b, n, "sandbox ", id, " is paused as spec.state Paused asks");
}

static void msg_idle(char *b, size_t n, const char *id)
{
  cat3(b, n, "sandbox ", id,
       " was paused by Cube for idleness; the next request resumes it");
}

static void msg_reclaimed(char *b, size_t n, int64_t rg)
{
  snprintf(b, n,
           "sandbox reclaimed at generation %" PRId64
           "; bump spec.wake for a new one", rg);
}

static const char msg_ended[] = "spec.state Ended: no sandbox left";

static sc_err apply_want(const session *s, const want *w, sc_time now,
                         session_status *st)
{
  sc_err err;
  int64_t og = s->meta.generation;
  st->phase = w->phase;
  if((err = set_str(&st->sandbox_id, w->sandbox_id)) ||
     (err = set_str(&st->sandbox_state, w->sandbox_state)))
    return err;
  st->end_at = w->end_at;
  st->observed_generation = og;
  st->reclaimed_generation = w->reclaimed_generation;
  st->paused_by_controller = w->paused_by_controller;
  st->applied_idle_timeout_ms = w->applied_idle_timeout_ms;
  if(w->ready_status &&
     (err = set_cond(st, "Ready", w->ready_status, w->ready_reason,
                     w->ready_msg, og, now)))
    return err;
  if(w->conflict)
    err = set_cond(st, "Conflict", "True", w->conflict_reason,
                   w->conflict_msg, og, now);
  else if(session_status_get_condition(st, "Conflict"))
    err = set_cond(st, "Conflict", "False", "Resolved",
                   "no conflicting sandbox or session", og, now);
  return err;
}

static void want_from_old(const session *s, want *w)
{
  const session_status *o = &s->status;
  memset(w, 0, sizeof(*w));
  w->phase = o->phase;
  w->sandbox_id = o->sandbox_id;
  w->sandbox_state = o->sandbox_state;
  w->end_at = o->end_at;
  w->reclaimed_generation = o->reclaimed_generation;
  w->paused_by_controller = o->paused_by_controller;
  w->applied_idle_timeout_ms = o->applied_idle_timeout_ms;
}

static void want_ready(want *w, const char *status, const char *reason,
                       const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

static void want_ready(want *w, const char *status, const char *reason,
                       const char *fmt, ...)
{
  va_list ap;
  w->ready_status = status;
  w->ready_reason = reason;
  va_start(ap, fmt);
  vsnprintf(w->ready_msg, sizeof(w->ready_msg), fmt, ap);
  va_end(ap);
}

static void want_sandbox(want *w, const session *s, const sb_rec *sb)
{
  const session_status *o = &s->status;
  bool same = str_eq0(o->sandbox_id, sb->b->sandbox_id);
  w->sandbox_id = sb->b->sandbox_id;
  w->sandbox_state = cube_sb_state_name(sb->b->state);
  w->end_at = sb->b->end_at;
  w->applied_idle_timeout_ms = same ? o->applied_idle_timeout_ms : 0;
  w->paused_by_controller = same && o->paused_by_controller;
  if(sb->b->state == CUBE_SB_RUNNING &&
     s->spec.state != SESSION_STATE_PAUSED)
    w->paused_by_controller = false; /* someone resumed it */
}

static void want_nosandbox(want *w)
{
  w->sandbox_id = NULL;
  w->sandbox_state = NULL;
  w->end_at = 0;
  w->applied_idle_timeout_ms = 0;
  w->paused_by_controller = false;
}

/* ---------- the per-session decision ---------- */

static bool reclaim_due(const planner *pl, const sess_rec *r,
                        const sb_rec *sb)
{
  sc_time now = pl->in->cube_now;
  return sb->b->state == CUBE_SB_PAUSED && r->reclaim_ms > 0 &&
         sb->b->end_at != 0 && now != 0 &&
         now - sb->b->end_at >= r->reclaim_ms;
}

static sc_err add_reclaim(planner *pl, const sess_rec *r, const sb_rec *sb)
{
  char te[SCTIME_RFC3339_MAX], tn[SCTIME_RFC3339_MAX], age[32], ra[32];
  sc_err err;
  fmt_time(sb->b->end_at, te, sizeof(te));
  fmt_time(pl->in->cube_now, tn, sizeof(tn));
  fmt_dur(pl->in->cube_now - sb->b->end_at, age, sizeof(age));
  fmt_dur(r->reclaim_ms, ra, sizeof(ra));
  err = add_action(pl, PLAN_DELETE, PLAN_DEL_RECLAIM, r, sb, 0,
                   "sandbox %s paused for %s by Cube's clock (endAt %s, "
                   "now %s) >= reclaimAfter %s",
                   sb->b->sandbox_id, age, te, tn, ra);
  if(!err)
    pl->p->actions[pl->p->n_actions - 1].expect_paused = true;
  return err;
}

/* The winner among a session's sandboxes (rule 6): the linked one, else
 * the oldest startedAt (unknown startedAt counts as youngest), then the
 * lowest ID. */
static size_t pick_winner(const planner *pl, const sess_rec *r)
{
  size_t i, best = SIZE_MAX;
  if(r->ls == LS_OWNED)
    return r->link_sb;
  for(i = 0; i < r->sb_n; i++) {
    size_t k = pl->sblist[r->sb_first + i];
    const cube_sandbox *b = pl->sbs[k].b, *w;
    if(best == SIZE_MAX) {
      best = k;
      continue;
    }
    w = pl->sbs[best].b;
    if(b->started_at != w->started_at) {
      if(!w->started_at || (b->started_at && b->started_at < w->started_at))
        best = k;
    }
    else if(strcmp(b->sandbox_id, w->sandbox_id) < 0)
      best = k;
  }
  return best;
}

static sc_err plan_ended(planner *pl, sess_rec *r, want *w)
{
  size_t i;
  sc_err err;
  char td[SCTIME_RFC3339_MAX];
  const session *s = r->s;
  plan_delete_kind kind = r->tomb ? PLAN_DEL_TOMBSTONE : PLAN_DEL_ENDED;
  fmt_time(s->meta.deletion_timestamp, td, sizeof(td));
  for(i = 0; i < r->sb_n; i++) {
    const sb_rec *sb = &pl->sbs[pl->sblist[r->sb_first + i]];
    if(r->tomb)
      err = add_action(pl, PLAN_DELETE, kind, r, sb, 0,
                       "session deleted (deletionTimestamp %s): delete its "
                       "sandbox %s (%s)", td, sb->b->sandbox_id,
                       cube_sb_state_name(sb->b->state));
    else
      err = add_action(pl, PLAN_DELETE, kind, r, sb, 0,
                       "spec.state Ended: delete sandbox %s (%s)",
                       sb->b->sandbox_id, cube_sb_state_name(sb->b->state));
    if(err)
      return err;
  }
  if(r->ls == LS_CONFIRM && (err = add_confirm(pl, r)))
    return err;
  if(!r->sb_n && r->ls != LS_CONFIRM) {
    w->phase = SESSION_PHASE_ENDED;
    if(r->ls != LS_CONFLICT_TENANT && r->ls != LS_CONFLICT_SB)
      want_nosandbox(w);
    want_ready(w, "False", "Ended", "%s", msg_ended);
  }
  else {
    if(w->phase == SESSION_PHASE_NONE)
      w->phase = SESSION_PHASE_PENDING;
    want_ready(w, "False", "Ending", "deleting %zu sandbox(es)%s",
               r->sb_n, r->ls == LS_CONFIRM ? ", confirming the linked one"
                                             : "");
  }
  return SC_OK;
}

static sc_err plan_live(planner *pl, sess_rec *r, want *w, sc_time *due)
{
  const session *s = r->s;
  sc_time now = pl->in->cube_now;
  size_t i, wi;
  sc_err err;
  const sb_rec *sb;
  session_state state = s->spec.state;

  if(r->ls == LS_CONFIRM) {
    /* keep the status as it is until the GET answers (no flapping) */
    if(!session_status_get_condition(&s->status, "Ready"))
      want_ready(w, "Unknown", "WaitingForConfirm",
                 "linked sandbox %s is missing from Cube's lists; "
                 "confirming", r->link);
    if(w->phase == SESSION_PHASE_NONE)
      w->phase = SESSION_PHASE_PENDING;
    return add_confirm(pl, r);
  }

  wi = pick_winner(pl, r);
  /* Duplicates are deleted only once the store links the winner: without
   * a link, replicas reading the store a moment apart (one before, one
   * after a create's status write) would pick different winners and
   * delete both. This pass links the winner (a compare-and-set status
   * write); the next one, by any replica, deletes the others. */
  for(i = 0; r->ls == LS_OWNED && i < r->sb_n; i++) {
    size_t k = pl->sblist[r->sb_first + i];
    if(k == wi)
      continue;
    err = add_action(pl, PLAN_DELETE, PLAN_DEL_DUPLICATE, r, &pl->sbs[k], 0,
                     "session has %zu sandboxes; keeping %s (%s): delete "
                     "duplicate %s",
                     r->sb_n, pl->sbs[wi].b->sandbox_id,
                     r->ls == LS_OWNED ? "status.sandboxID"
                                       : "oldest startedAt, then lowest ID",
                     pl->sbs[k].b->sandbox_id);
    if(err)
      return err;
  }

  if(wi == SIZE_MAX) {
    want_nosandbox(w);
    if(state == SESSION_STATE_PAUSED) {
      if(is_reclaimed(s)) {
        w->phase = SESSION_PHASE_RECLAIMED;
        msg_reclaimed(w->ready_msg, sizeof(w->ready_msg),
                      s->status.reclaimed_generation);
        w->ready_status = "False";
        w->ready_reason = "Reclaimed";
      }
      else {
        w->phase = SESSION_PHASE_PAUSED;
        want_ready(w, "False", "NoSandbox",
                   "spec.state Paused: no sandbox is created");
      }
      return SC_OK;
    }
    if(state == SESSION_STATE_ACTIVE && is_reclaimed(s)) {
      w->phase = SESSION_PHASE_RECLAIMED;
      msg_reclaimed(w->ready_msg, sizeof(w->ready_msg),
                    s->status.reclaimed_generation);
      w->ready_status = "False";
      w->ready_reason = "Reclaimed";
      return SC_OK;
    }
    if(!s->spec.template_id || !*s->spec.template_id) {
      w->phase = SESSION_PHASE_FAILED;
      want_ready(w, "False", "InvalidSpec",
                 "spec.template is empty: cannot create a sandbox");
      return SC_OK;
    }
    w->phase = SESSION_PHASE_CREATING;
    want_ready(w, "False", "Creating", "creating a sandbox from template %s",
               s->spec.template_id);
    return add_action(pl, PLAN_CREATE, PLAN_DEL_NONE, r, NULL,
                      timeout_secs(r->idle_ms),
                      "no sandbox for session %s/%s (state %s%s%s): create "
                      "from template %s with timeout %" PRId64 "s",
                      r->ns, r->name, session_state_name(state),
                      r->ls == LS_GONE ? ", linked sandbox " : "",
                      r->ls == LS_GONE ? "confirmed gone" : "",
                      s->spec.template_id, timeout_secs(r->idle_ms));
  }

  sb = &pl->sbs[wi];
  want_sandbox(w, s, sb);
  switch(sb->b->state) {
  case CUBE_SB_RUNNING:
    if(state == SESSION_STATE_PAUSED) {
      w->phase = SESSION_PHASE_RUNNING;
      want_ready(w, "False", "Pausing",
                 "pausing sandbox %s: spec.state is Paused",
                 sb->b->sandbox_id);
      return add_action(pl, PLAN_PAUSE, PLAN_DEL_NONE, r, sb, 0,
                        "spec.state Paused and sandbox %s is running: pause",
                        sb->b->sandbox_id);
    }
    w->phase = SESSION_PHASE_RUNNING;
    msg_running(w->ready_msg, sizeof(w->ready_msg), sb->b->sandbox_id);
    w->ready_status = "True";
    w->ready_reason = "SandboxRunning";
    if(w->applied_idle_timeout_ms != r->idle_ms) {
      char ni[32], oi[32];
      fmt_dur(r->idle_ms, ni, sizeof(ni));
      fmt_dur(w->applied_idle_timeout_ms, oi, sizeof(oi));
      if(state == SESSION_STATE_RUNNING && sb->b->end_at)
        *due = sb->b->end_at - r->idle_ms / 2;
      return add_action(pl, PLAN_SET_TIMEOUT, PLAN_DEL_NONE, r, sb,
                        timeout_secs(r->idle_ms),
                        "idleTimeout is %s but %s was applied to sandbox "
                        "%s: set its timeout to %" PRId64 "s",
                        ni, w->applied_idle_timeout_ms ? oi : "none known",
                        sb->b->sandbox_id, timeout_secs(r->idle_ms));
    }
    if(state == SESSION_STATE_RUNNING && sb->b->end_at) {
      sc_time at = sb->b->end_at - r->idle_ms / 2;
      *due = at;
      if(now && now >= at) {
        char te[SCTIME_RFC3339_MAX], tn[SCTIME_RFC3339_MAX], hi[32];
        fmt_time(sb->b->end_at, te, sizeof(te));
        fmt_time(now, tn, sizeof(tn));
        fmt_dur(r->idle_ms / 2, hi, sizeof(hi));
        return add_action(pl, PLAN_KEEPALIVE, PLAN_DEL_NONE, r, sb,
                          timeout_secs(r->idle_ms),
                          "spec.state Running: sandbox %s would idle out at "
                          "endAt %s (now %s, within idleTimeout/2 = %s): "
                          "extend by %" PRId64 "s",
                          sb->b->sandbox_id, te, tn, hi,
                          timeout_secs(r->idle_ms));
      }
    }
    return SC_OK;

  case CUBE_SB_PAUSED:
  case CUBE_SB_PAUSING:
    w->phase = SESSION_PHASE_PAUSED;
    if(state == SESSION_STATE_RUNNING) {
      if(sb->b->state == CUBE_SB_PAUSING) {
        want_ready(w, "False", "SandboxPausing",
                   "sandbox %s is pausing; it is resumed once paused",
                   sb->b->sandbox_id);
        return SC_OK;
      }
      want_ready(w, "False", "Resuming",
                 "resuming sandbox %s: spec.state is Running",
                 sb->b->sandbox_id);
      return add_action(pl, PLAN_RESUME, PLAN_DEL_NONE, r, sb,
                        timeout_secs(r->idle_ms),
                        "spec.state Running and sandbox %s is %s: resume "
                        "with timeout %" PRId64 "s",
                        sb->b->sandbox_id, cube_sb_state_name(sb->b->state),
                        timeout_secs(r->idle_ms));
    }
    if(state == SESSION_STATE_ACTIVE && w->paused_by_controller &&
       sb->b->state == CUBE_SB_PAUSED) {
      want_ready(w, "False", "Resuming",
                 "resuming sandbox %s: the controller paused it and "
                 "spec.state is Active again", sb->b->sandbox_id);
      return add_action(pl, PLAN_RESUME, PLAN_DEL_NONE, r, sb,
                        timeout_secs(r->idle_ms),
                        "sandbox %s was paused by the controller and "
                        "spec.state is Active again: resume with timeout "
                        "%" PRId64 "s",
                        sb->b->sandbox_id, timeout_secs(r->idle_ms));
    }
    if(state == SESSION_STATE_ACTIVE && w->paused_by_controller)
      want_ready(w, "False", "Resuming",
                 "sandbox %s is pausing; it is resumed once paused",
                 sb->b->sandbox_id);
    else if(state == SESSION_STATE_PAUSED) {
      msg_paused(w->ready_msg, sizeof(w->ready_msg), sb->b->sandbox_id);
      w->ready_status = "True";
      w->ready_reason = "SandboxPaused";
    }
    else {
      msg_idle(w->ready_msg, sizeof(w->ready_msg), sb->b->sandbox_id);
      w->ready_status = "True";
      w->ready_reason = "IdlePaused";
    }
    if(reclaim_due(pl, r, sb))
      return add_reclaim(pl, r, sb);
    if(sb->b->state == CUBE_SB_PAUSED && r->reclaim_ms > 0 && sb->b->end_at)
      *due = sb->b->end_at + r->reclaim_ms;
    return SC_OK;

  default:
    if(w->phase == SESSION_PHASE_NONE)
      w->phase = SESSION_PHASE_PENDING;
    want_ready(w, "Unknown", "SandboxStateUnknown",
               "Cube reports an unknown state for sandbox %s",
               sb->b->sandbox_id);
    return SC_OK;
  }
}

static sc_err plan_session_one(planner *pl, sess_rec *r)
{
  const session *s = r->s;
  plan_session *ps = &pl->p->sessions[r->in_idx];
  want w;
  sc_err err;
  sc_time due = 0;
  bool blocked;

  want_from_old(s, &w);
  /* conflicts (rule 5 and the ambiguous joins) */
  if(r->ls == LS_CONFLICT_TENANT) {
    const sb_rec *sb = &pl->sbs[r->link_sb];
    w.conflict = true;
    w.conflict_reason = "TenantMismatch";
    snprintf(w.conflict_msg, sizeof(w.conflict_msg),
             "status.sandboxID %s carries tenant tag %s, not %s: it is "
             "never adopted, paused, resumed or deleted for this session",
             sb->b->sandbox_id, sb->tenant, r->tenant);
  }
  else if(r->ls == LS_CONFLICT_SB) {
    const sb_rec *sb = &pl->sbs[r->link_sb];
    w.conflict = true;
    w.conflict_reason = "SandboxMismatch";
    snprintf(w.conflict_msg, sizeof(w.conflict_msg),
             "status.sandboxID %s carries tags of another owner "
             "(session %s, managed-by %s)", sb->b->sandbox_id,
             sb->sid ? sb->sid : "(none)", sb->mb ? sb->mb : "(none)");
  }
  else if(r->ls == LS_CLAIMED) {
    const sess_rec *o = &pl->recs[r->other_link];
    w.conflict = true;
    w.conflict_reason = "SandboxClaimed";
    snprintf(w.conflict_msg, sizeof(w.conflict_msg),
             "status.sandboxID %s is also recorded by session %s/%s",
             r->link, o->ns, o->name);
  }
  else if(r->pair_conflict) {
    const sess_rec *o = &pl->recs[r->other_pair];
    w.conflict = true;
    w.conflict_reason = "SessionIDInUse";
    snprintf(w.conflict_msg, sizeof(w.conflict_msg),
             "tenant %s sessionID %s is already used by session %s/%s",
             r->tenant, r->sid, o->ns, o->name);
  }
  blocked = w.conflict;

  if(is_ended(s))
    err = plan_ended(pl, r, &w);
  else if(blocked) {
    w.phase = SESSION_PHASE_FAILED;
    want_ready(&w, "False",
               r->ls == LS_CONFLICT_TENANT ? "TenantConflict"
                                           : "SandboxConflict",
               "%s", w.conflict_msg);
    err = SC_OK;
  }
  else {
    if(r->ls == LS_GONE || r->ls == LS_NONE)
      want_nosandbox(&w);
    err = plan_live(pl, r, &w, &due);
  }
  if(err)
    return err;

  ps->s = s;
  ps->next_due = due;
  if((err = session_status_copy(&ps->status, &s->status)))
    return err;
  if((err = apply_want(s, &w, pl->in->cube_now, &ps->status)))
    return err;
  ps->status_changed = !session_status_equal(&ps->status, &s->status);
  return SC_OK;
}

/* ---------- orphans and the guard ---------- */

static sc_err plan_orphans(planner *pl)
{
  size_t i, first = pl->p->n_actions;
  sc_time now = pl->in->cube_now;
  plan *p = pl->p;
  sc_err err;
  char g[32];
  fmt_dur(pl->cfg->orphan_grace_ms, g, sizeof(g));
  for(i = 0; i < pl->n_sbs; i++) {
    sb_rec *sb = &pl->sbs[i];
    sc_time at;
    if(!sb->ours || sb->linked || sb->owner != SIZE_MAX)
      continue;
    if(sb->b->state != CUBE_SB_PAUSED || !sb->b->end_at || !now)
      continue; /* running orphans are left to Cube's idle pause */
    at = sb->b->end_at + pl->cfg->orphan_grace_ms;
    if(now < at) {
      if(!p->next_orphan_due || at < p->next_orphan_due)
        p->next_orphan_due = at;
      continue;
    }
    if(!pl->in->list_complete)
      continue; /* rule 2: no orphan from a list that may be short */
    {
      char te[SCTIME_RFC3339_MAX], tn[SCTIME_RFC3339_MAX], age[32];
      plan_action *a;
      fmt_time(sb->b->end_at, te, sizeof(te));
      fmt_time(now, tn, sizeof(tn));
      fmt_dur(now - sb->b->end_at, age, sizeof(age));
      err = add_action(pl, PLAN_DELETE, PLAN_DEL_ORPHAN, NULL, sb, 0,
                       "orphan: no session or tombstone for tenant %s "
                       "session %s and no status links it; paused for %s by "
                       "Cube's clock (endAt %s, now %s) >= orphan grace %s",
                       sb->tenant ? sb->tenant : "(none)",
                       sb->sid ? sb->sid : "(none)", age, te, tn, g);
      if(err)
        return err;
      a = &p->actions[p->n_actions - 1];
      a->expect_paused = true;
      a->expect_managed_by = true;
    }
  }
  p->n_orphans = p->n_actions - first;
  if(p->n_orphans > pl->cfg->max_delete_floor &&
     (double)p->n_orphans >
       pl->cfg->max_delete_fraction * (double)p->n_managed &&
     !pl->cfg->force) {
    char msg[320];
    snprintf(msg, sizeof(msg),
             "guard: withheld %zu orphan deletions: more than %.0f%% of %zu "
             "managed sandboxes and more than %zu (--force overrides)",
             p->n_orphans, pl->cfg->max_delete_fraction * 100.0,
             p->n_managed, pl->cfg->max_delete_floor);
    if(!(p->guard_message = strdup(msg)))
      return SC_ERR_NOMEM;
    p->guard_tripped = true;
    for(i = first; i < p->n_actions; i++) {
      plan_action *a = &p->actions[i];
      free(a->ns);
      free(a->name);
      free(a->sandbox_id);
      free(a->expect_tenant);
      free(a->reason);
    }
    p->n_actions = first;
  }
  return SC_OK;
}

static int action_cmp(const void *pa, const void *pb)
{
  const plan_action *a = pa, *b = pb;
  bool oa = a->del_kind == PLAN_DEL_ORPHAN, ob = b->del_kind == PLAN_DEL_ORPHAN;
  int c;
  if(oa != ob)
    return oa ? 1 : -1;
  if((c = strcmp0(a->ns, b->ns)) || (c = strcmp0(a->name, b->name)) ||
     (c = strcmp0(a->sandbox_id, b->sandbox_id)))
    return c;
  if(a->type != b->type)
    return a->type < b->type ? -1 : 1;
  if(a->del_kind != b->del_kind)
    return a->del_kind < b->del_kind ? -1 : 1;
  return strcmp0(a->reason, b->reason);
}

/* ---------- the join ---------- */

static sc_err build_join(planner *pl)
{
  const plan_input *in = pl->in;
  size_t i, j, n;
  size_t *count;

  /* sessions */
  pl->recs = calloc(in->n_sessions ? in->n_sessions : 1, sizeof(*pl->recs));
  if(!pl->recs)
    return SC_ERR_NOMEM;
  for(i = 0; i < in->n_sessions; i++) {
    const session *s = in->sessions[i];
    sess_rec *r = &pl->recs[pl->n_recs++];
    r->s = s;
    r->in_idx = i;
    r->tomb = s->meta.deletion_timestamp != 0;
    r->ns = s->meta.namespace_ ? s->meta.namespace_
                               : SESSION_DEFAULT_NAMESPACE;
    r->name = s->meta.name ? s->meta.name : "";
    r->sid = s->spec.session_id ? s->spec.session_id : s->meta.name;
    r->tenant = s->spec.tenant_id ? s->spec.tenant_id : r->ns;
    r->idle_ms = eff_idle(s);
    r->reclaim_ms = s->spec.reclaim_after_ms < 0
                      ? SESSION_DEFAULT_RECLAIM_AFTER_MS
                      : s->spec.reclaim_after_ms;
    r->gen = eff_gen(s);
    r->link = s->status.sandbox_id && *s->status.sandbox_id
                ? s->status.sandbox_id : NULL;
    r->link_sb = SIZE_MAX;
    r->other_link = SIZE_MAX;
    r->other_pair = SIZE_MAX;
  }

  /* sandboxes: sorted by (hash, ID), one record per ID */
  pl->sbs = calloc(in->n_sandboxes ? in->n_sandboxes : 1, sizeof(*pl->sbs));
  if(!pl->sbs)
    return SC_ERR_NOMEM;
  for(i = 0; i < in->n_sandboxes; i++) {
    const cube_sandbox *b = &in->sandboxes[i];
    if(!b->sandbox_id || !*b->sandbox_id)
      continue; /* nothing can be done to a sandbox without an ID */
    pl->sbs[pl->n_sbs].h = fnv(FNV_INIT, b->sandbox_id);
    pl->sbs[pl->n_sbs++].b = b;
  }
  if(pl->n_sbs > 1)
    qsort(pl->sbs, pl->n_sbs, sizeof(*pl->sbs), sb_cmp);
  for(i = 0, n = 0; i < pl->n_sbs; i++) {
    if(n && pl->sbs[n - 1].h == pl->sbs[i].h &&
       !strcmp(pl->sbs[n - 1].b->sandbox_id, pl->sbs[i].b->sandbox_id))
      continue;
    pl->sbs[n++] = pl->sbs[i];
  }
  pl->n_sbs = n;
  for(i = 0; i < pl->n_sbs; i++) {
    sb_rec *sb = &pl->sbs[i];
    sb->tenant = sc_kvlist_get(&sb->b->metadata, SESSION_TAG_TENANT_ID);
    sb->sid = sc_kvlist_get(&sb->b->metadata, SESSION_TAG_SESSION_ID);
    sb->mb = sc_kvlist_get(&sb->b->metadata, SESSION_TAG_MANAGED_BY);
    sb->ours = sb->mb && !strcmp(sb->mb, pl->cname);
    sb->owner = SIZE_MAX;
    if(sb->ours)
      pl->p->n_managed++;
  }

  /* gone */
  if(in->n_gone) {
    pl->gone = calloc(in->n_gone, sizeof(*pl->gone));
    if(!pl->gone)
      return SC_ERR_NOMEM;
    for(i = 0; i < in->n_gone; i++)
      if(in->gone[i])
        pl->gone[pl->n_gone++] = in->gone[i];
    qsort(pl->gone, pl->n_gone, sizeof(*pl->gone), str_cmp);
  }

  /* claims by link and by tag pair */
  pl->links = calloc(pl->n_recs ? pl->n_recs : 1, sizeof(*pl->links));
  pl->pairs = calloc(pl->n_recs ? pl->n_recs : 1, sizeof(*pl->pairs));
  if(!pl->links || !pl->pairs)
    return SC_ERR_NOMEM;
  for(i = 0; i < pl->n_recs; i++) {
    sess_rec *r = &pl->recs[i];
    if(r->link) {
      claim *c = &pl->links[pl->n_links++];
      c->h = fnv(FNV_INIT, r->link);
      c->a = r->link;
      c->b = NULL;
      c->r = r;
      c->rec = i;
    }
    if(r->tenant && r->sid) {
      claim *c = &pl->pairs[pl->n_pairs++];
      c->h = pair_hash(r->tenant, r->sid);
      c->a = r->tenant;
      c->b = r->sid;
      c->r = r;
      c->rec = i;
    }
  }
  qsort(pl->links, pl->n_links, sizeof(*pl->links), claim_cmp);
  qsort(pl->pairs, pl->n_pairs, sizeof(*pl->pairs), claim_cmp);

  /* resolve links: the first claim of an ID owns it. Only an observed
   * sandbox can be contested: when the ID is gone or unconfirmed, every
   * claimant sees the same (gone, or confirm) */
  for(i = 0; i < pl->n_links; i = j) {
    sess_rec *owner = &pl->recs[pl->links[i].rec];
    size_t k = sb_find(pl, pl->links[i].h, owner->link), q;
    enum link_state unseen = is_gone(pl, owner->link) ? LS_GONE : LS_CONFIRM;
    for(j = i + 1; j < pl->n_links && claim_same(&pl->links[j],
                                                 &pl->links[i]); j++)
      ;
    for(q = i + 1; q < j; q++) {
      sess_rec *r = &pl->recs[pl->links[q].rec];
      r->other_link = pl->links[i].rec;
      if(k == SIZE_MAX)
        r->ls = unseen;
      else
        r->ls = r->tomb ? LS_NONE : LS_CLAIMED;
    }
    if(k != SIZE_MAX) {
      sb_rec *sb = &pl->sbs[k];
      sb->linked = true;
      owner->link_sb = k;
      if(sb->tenant && strcmp(sb->tenant, owner->tenant))
        owner->ls = LS_CONFLICT_TENANT;
      else if((sb->sid && owner->sid && strcmp(sb->sid, owner->sid)) ||
              (sb->mb && !sb->ours))
        owner->ls = LS_CONFLICT_SB;
      else {
        owner->ls = LS_OWNED;
        sb->owner = pl->links[i].rec;
      }
    }
    else
      owner->ls = unseen;
  }

  /* resolve pairs: live non-owners are in conflict */
  for(i = 0; i < pl->n_pairs; i = j) {
    for(j = i + 1; j < pl->n_pairs && claim_same(&pl->pairs[j],
                                                 &pl->pairs[i]); j++) {
      sess_rec *r = &pl->recs[pl->pairs[j].rec];
      if(!r->tomb) {
        r->pair_conflict = true;
        r->other_pair = pl->pairs[i].rec;
      }
    }
  }

  /* tag join for the sandboxes no link claimed */
  for(i = 0; i < pl->n_sbs; i++) {
    sb_rec *sb = &pl->sbs[i];
    size_t c;
    if(sb->linked || !sb->ours || !sb->tenant || !sb->sid)
      continue;
    c = claim_find(pl->pairs, pl->n_pairs, pair_hash(sb->tenant, sb->sid),
                   sb->tenant, sb->sid);
    if(c != SIZE_MAX)
      sb->owner = pl->pairs[c].rec;
  }

  /* per-session lists (counting sort; each list stays in ID order) */
  count = calloc(pl->n_recs + 1, sizeof(*count));
  pl->sblist = calloc(pl->n_sbs ? pl->n_sbs : 1, sizeof(*pl->sblist));
  if(!count || !pl->sblist) {
    free(count);
    return SC_ERR_NOMEM;
  }
  for(i = 0; i < pl->n_sbs; i++)
    if(pl->sbs[i].owner != SIZE_MAX)
      count[pl->sbs[i].owner]++;
  for(i = 0, n = 0; i < pl->n_recs; i++) {
    pl->recs[i].sb_first = n;
    n += count[i];
    count[i] = pl->recs[i].sb_first;
  }
  for(i = 0; i < pl->n_sbs; i++) {
    size_t o = pl->sbs[i].owner;
    if(o != SIZE_MAX) {
      pl->sblist[count[o]++] = i;
      pl->recs[o].sb_n++;
    }
  }
  free(count);
  return SC_OK;
}

sc_err plan_compute(const plan_input *in, const plan_config *cfg,
                    plan **out)
{
  planner pl;
  plan *p;
  size_t i;
  sc_err err;

  if(!out)
    return SC_ERR_INVALID;
  *out = NULL;
  if(!in || !cfg || (in->n_sessions && !in->sessions) ||
     (in->n_sandboxes && !in->sandboxes) || (in->n_gone && !in->gone))
    return SC_ERR_INVALID;
  for(i = 0; i < in->n_sessions; i++)
    if(!in->sessions[i])
      return SC_ERR_INVALID;

  memset(&pl, 0, sizeof(pl));
  p = calloc(1, sizeof(*p));
  if(!p)
    return SC_ERR_NOMEM;
  pl.in = in;
  pl.cfg = cfg;
  pl.cname = cfg->controller_name && *cfg->controller_name
               ? cfg->controller_name : PLAN_DEFAULT_CONTROLLER;
  pl.p = p;
  if(in->n_sessions) {
    p->sessions = calloc(in->n_sessions, sizeof(*p->sessions));
    if(!p->sessions) {
      err = SC_ERR_NOMEM;
      goto out;
    }
    p->n_sessions = in->n_sessions;
  }
  if((err = build_join(&pl)))
    goto out;
  for(i = 0; i < pl.n_recs; i++)
    if((err = plan_session_one(&pl, &pl.recs[i])))
      goto out;
  if((err = plan_orphans(&pl)))
    goto out;
  if(p->n_actions > 1)
    qsort(p->actions, p->n_actions, sizeof(*p->actions), action_cmp);

out:
  free(pl.recs);
  free(pl.sbs);
  free(pl.gone);
  free(pl.links);
  free(pl.pairs);
  free(pl.sblist);
  if(err) {
    plan_free(p);
    return err;
  }
  *out = p;
  return SC_OK;
}

void plan_free(plan *p)
{
  size_t i;
  if(!p)
    return;
  for(i = 0; i < p->n_actions; i++) {
    plan_action *a = &p->actions[i];
    free(a->ns);
    free(a->name);
    free(a->sandbox_id);
    free(a->expect_tenant);
    free(a->reason);
  }
  free(p->actions);
  for(i = 0; i < p->n_sessions; i++)
    session_status_clear(&p->sessions[i].status);
  free(p->sessions);
  free(p->guard_message);
  free(p);
}

/* ---------- after an action ---------- */

sc_err plan_status_after(const session *s, const plan_action *a,
                         const char *new_id, session_status *st)
{
  char msg[320];
  sc_err err;
  int64_t og;
  if(!a || !st)
    return SC_ERR_INVALID;
  if(!s)
    return a->del_kind == PLAN_DEL_ORPHAN ? SC_OK : SC_ERR_INVALID;
  og = s->meta.generation;
  st->observed_generation = og;
  switch(a->type) {
  case PLAN_CREATE:
    if(!new_id || !*new_id)
      return SC_ERR_INVALID;
    if((err = set_str(&st->sandbox_id, new_id)) ||
       (err = set_str(&st->sandbox_state, "running")))
      return err;
    st->phase = SESSION_PHASE_RUNNING;
    st->end_at = 0; /* unknown until Cube lists it */
    st->paused_by_controller = false;
    st->applied_idle_timeout_ms = eff_idle(s);
    msg_running(msg, sizeof(msg), new_id);
    return set_cond(st, "Ready", "True", "SandboxRunning", msg, og,
                    a->cube_now);
  case PLAN_PAUSE:
    if((err = set_str(&st->sandbox_state, "paused")))
      return err;
    st->phase = SESSION_PHASE_PAUSED;
    st->paused_by_controller = true;
    msg_paused(msg, sizeof(msg), a->sandbox_id ? a->sandbox_id : "");
    return set_cond(st, "Ready", "True", "SandboxPaused", msg, og,
                    a->cube_now);
  case PLAN_RESUME:
    if((err = set_str(&st->sandbox_state, "running")))
      return err;
    st->phase = SESSION_PHASE_RUNNING;
    st->paused_by_controller = false;
    msg_running(msg, sizeof(msg), a->sandbox_id ? a->sandbox_id : "");
    return set_cond(st, "Ready", "True", "SandboxRunning", msg, og,
                    a->cube_now);
  case PLAN_KEEPALIVE:
  case PLAN_CONFIRM:
    return SC_OK;
  case PLAN_SET_TIMEOUT:
    st->applied_idle_timeout_ms = eff_idle(s);
    return SC_OK;
  case PLAN_DELETE:
    break;
  default:
    return SC_ERR_INVALID;
  }
  /* deletes */
  if(a->del_kind == PLAN_DEL_DUPLICATE || a->del_kind == PLAN_DEL_ORPHAN) {
    if(!str_eq0(st->sandbox_id, a->sandbox_id))
      return SC_OK;
  }
  if(str_eq0(st->sandbox_id, a->sandbox_id) || !st->sandbox_id) {
    if((err = set_str(&st->sandbox_id, NULL)) ||
       (err = set_str(&st->sandbox_state, NULL)))
      return err;
    st->end_at = 0;
    st->paused_by_controller = false;
    st->applied_idle_timeout_ms = 0;
  }
  switch(a->del_kind) {
  case PLAN_DEL_RECLAIM:
    st->phase = SESSION_PHASE_RECLAIMED;
    st->reclaimed_generation = eff_gen(s);
    msg_reclaimed(msg, sizeof(msg), st->reclaimed_generation);
    return set_cond(st, "Ready", "False", "Reclaimed", msg, og, a->cube_now);
  case PLAN_DEL_ENDED:
  case PLAN_DEL_TOMBSTONE:
    st->phase = SESSION_PHASE_ENDED;
    return set_cond(st, "Ready", "False", "Ended", msg_ended, og,
                    a->cube_now);
  default:
    return SC_OK;
  }
}

/* ---------- text form ---------- */

sc_err plan_format(const plan *p, dynbuf *b)
{
  size_t i, j;
  sc_err err = SC_OK;
  if(!p || !b)
    return SC_ERR_INVALID;
  for(i = 0; i < p->n_actions && !err; i++) {
    const plan_action *a = &p->actions[i];
    err = dynbuf_printf(b,
                        "action %s%s%s session=%s/%s sandbox=%s "
                        "timeout=%" PRId64 " expect_tenant=%s "
                        "expect_paused=%d expect_managed_by=%d reason=%s\n",
                        plan_action_type_name(a->type),
                        a->del_kind ? ":" : "",
                        a->del_kind ? plan_delete_kind_name(a->del_kind) : "",
                        a->ns ? a->ns : "-", a->name ? a->name : "-",
                        a->sandbox_id ? a->sandbox_id : "-", a->timeout_s,
                        a->expect_tenant ? a->expect_tenant : "-",
                        a->expect_paused, a->expect_managed_by, a->reason);
  }
  for(i = 0; i < p->n_sessions && !err; i++) {
    const plan_session *ps = &p->sessions[i];
    const session_status *st = &ps->status;
    char key[256];
    if(!ps->s)
      continue;
    session_key(ps->s, key, sizeof(key));
    err = dynbuf_printf(b,
                        "status %s phase=%s sandbox=%s state=%s endAt=%" PRId64
                        " og=%" PRId64 " rg=%" PRId64 " pbc=%d applied=%"
                        PRId64 " changed=%d due=%" PRId64,
                        key, session_phase_name(st->phase),
                        st->sandbox_id ? st->sandbox_id : "-",
                        st->sandbox_state ? st->sandbox_state : "-",
                        st->end_at, st->observed_generation,
                        st->reclaimed_generation, st->paused_by_controller,
                        st->applied_idle_timeout_ms, ps->status_changed,
                        ps->next_due);
    for(j = 0; j < st->n_conditions && !err; j++) {
      const session_condition *c = &st->conditions[j];
      err = dynbuf_printf(b, " %s=%s/%s", c->type ? c->type : "?",
                          c->status ? c->status : "?",
                          c->reason ? c->reason : "?");
    }
    if(!err)
      err = dynbuf_addstr(b, "\n");
  }
  if(!err)
    err = dynbuf_printf(b, "managed=%zu orphans=%zu guard=%d next_orphan=%"
                        PRId64 "%s%s\n", p->n_managed, p->n_orphans,
                        p->guard_tripped, p->next_orphan_due,
                        p->guard_message ? " " : "",
                        p->guard_message ? p->guard_message : "");
  return err;
}
