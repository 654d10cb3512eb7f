/*
 * plan.c - the pure planner (DESIGN.md sections 3 and 4).
 *
 * (sessions, sandboxes, Cube's clock, config) -> actions + statuses.
 * No I/O, no clock, no globals. Everything is joined through arrays of
 * (64-bit hash, index) keys radix-sorted on the hash (ties fall back to
 * the strings) and merged, so a pass costs O(S + B) plus O(log) binary
 * searches for the few tag joins. At 100k sessions memory latency, not
 * instructions, is the cost: the passes over the input run in its order
 * and prefetch ahead, unchanged statuses are not copied, and the actions'
 * strings share one arena (docs/planner.md, "Cost").
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
  bool unbound;         /* spec.tenantID is not the namespace, and the
                           config binds them: no tag join, no create */
  size_t sb_first, sb_n;/* into the per-session sandbox list */
} sess_rec;

typedef struct sb_rec {
  uint64_t h;           /* hash of the ID: sorts without touching strings */
  const cube_sandbox *b;
  /* copies of b's fields, so the passes after the sort do not chase b */
  const char *id;
  cube_sb_state state;
  sc_time started_at, end_at;
  const char *tenant, *sid, *mb;
  bool ours;
  bool dup;             /* a second report of an ID: ignored */
  bool linked;          /* some session's status records it */
  size_t owner;         /* rec index, or SIZE_MAX */
} sb_rec;

/* A sort key: a 64-bit hash and the index of the record it stands for
 * (a sandbox in sbs, a session in recs). */
typedef struct hkey {
  uint64_t h;
  size_t i;
} hkey;

typedef struct planner {
  const plan_input *in;
  const plan_config *cfg;
  const char *cname;
  sess_rec *recs;       /* in input order */
  size_t n_recs;
  sb_rec *sbs;          /* in input order (those with an ID) */
  size_t n_sbs;
  hkey *order;          /* sbs by (hash, ID, sb_cmp), one per ID */
  size_t n_order;
  const char **gone;    /* sorted */
  size_t n_gone;
  hkey *links;          /* recs by (hash, link, priority) */
  size_t n_links;
  hkey *pairs;          /* recs by (hash, tenant, sid, priority) */
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
  cfg->identity = NULL;
  cfg->create_intent_ttl_ms = PLAN_CREATE_INTENT_TTL_MS;
  cfg->bind_tenant_to_namespace = true;
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
  return a == b || !strcmp0(a, b);
}

/* A fixed 64-bit string hash, so every replica sorts alike. The internal
 * sorts only need to be deterministic, not lexicographic; keying them on
 * a hash avoids chasing string pointers (cache misses dominate at 100k
 * sessions). Equal hashes fall back to the strings, so the hash only has
 * to spread well (the radix sort keys on its top bits). It reads 8 bytes
 * per multiply instead of FNV-1a's one byte per multiply (a serial chain
 * of about 100 multiplies per session and sandbox). The words are read
 * with memcpy() within the string (no over-read), in host byte order:
 * the hash orders nothing visible (actions are sorted by their strings
 * at the end, and pick_winner() is a total order). */
#define HASH_K1 0x9e3779b97f4a7c15ULL
#define HASH_K2 0xff51afd7ed558ccdULL
#define HASH_K3 0xc4ceb9fe1a85ec53ULL
#define HASH_INIT 0xcbf29ce484222325ULL

static uint64_t hash_fin(uint64_t h)
{
  h ^= h >> 33;
  h *= HASH_K2;
  h ^= h >> 33;
  h *= HASH_K3;
  h ^= h >> 33;
  return h;
}

/* The length goes in first: "ab"+"c" differs from "a"+"bc" in a pair. */
static uint64_t hash_strn(uint64_t h, const char *s, size_t n)
{
  size_t i;
  uint64_t w;
  h = (h ^ (uint64_t)n) * HASH_K1;
  for(i = 0; i + 8 <= n; i += 8) {
    memcpy(&w, s + i, 8);
    h = (h ^ w) * HASH_K1;
    h ^= h >> 29;
  }
  if(i < n) {
    w = 0;
    memcpy(&w, s + i, n - i);
    h = (h ^ w) * HASH_K1;
    h ^= h >> 29;
  }
  return h;
}

static uint64_t pair_hashn(const char *a, size_t na, const char *b,
                           size_t nb)
{
  return hash_fin(hash_strn(hash_strn(HASH_INIT, a, na), b, nb));
}

static uint64_t pair_hash(const char *a, const char *b)
{
  return pair_hashn(a, strlen(a), b, strlen(b));
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

/* The three tags of a sandbox in one pass over its metadata: the same
 * answers as sc_kvlist_get() (keys are unique in an sc_kvlist), touching
 * each key once. */
static void read_tags(sb_rec *sb, const sc_kvlist *md)
{
  static const char pfx[] = SESSION_TAG_PREFIX;
  size_t i, np = sizeof(pfx) - 1;
  for(i = 0; i < md->n; i++) {
    const char *k = md->items[i].key;
    if(strncmp(k, pfx, np))
      continue;
    if(!strcmp(k, SESSION_TAG_TENANT_ID))
      sb->tenant = md->items[i].value;
    else if(!strcmp(k, SESSION_TAG_SESSION_ID))
      sb->sid = md->items[i].value;
    else if(!strcmp(k, SESSION_TAG_MANAGED_BY))
      sb->mb = md->items[i].value;
  }
}

/* Memory latency, not instructions, is the cost of reading 100k
 * separately allocated sandboxes: the tags sit two pointer hops away
 * (items array, then key strings). Ask for them a few iterations ahead:
 * first the items arrays, then, once those have arrived, the strings. */
#define PREFETCH_FAR 16
#define PREFETCH_NEAR 8
#define PREFETCH_FARTHEST 24

static void prefetch_sandbox(const plan_input *in, size_t i)
{
  size_t j;
  if(i + PREFETCH_FAR < in->n_sandboxes)
    __builtin_prefetch(in->sandboxes[i + PREFETCH_FAR].metadata.items);
  if(i + PREFETCH_NEAR < in->n_sandboxes) {
    const cube_sandbox *b = &in->sandboxes[i + PREFETCH_NEAR];
    __builtin_prefetch(b->sandbox_id);
    for(j = 0; j < b->metadata.n; j++) {
      __builtin_prefetch(b->metadata.items[j].key);
      __builtin_prefetch(b->metadata.items[j].value);
    }
  }
}

/* The same for sessions: the struct, then the strings the join hashes. */
static void prefetch_session(const plan_input *in, size_t i)
{
  if(i + PREFETCH_FAR < in->n_sessions) {
    const char *s = (const char *)in->sessions[i + PREFETCH_FAR];
    __builtin_prefetch(s);
    __builtin_prefetch(s + 64);
    __builtin_prefetch(s + 128);
    __builtin_prefetch(s + 192);
    __builtin_prefetch(s + 256);
  }
  if(i + PREFETCH_NEAR < in->n_sessions) {
    const session *s = in->sessions[i + PREFETCH_NEAR];
    __builtin_prefetch(s->meta.name);
    __builtin_prefetch(s->meta.namespace_);
    __builtin_prefetch(s->spec.tenant_id);
    __builtin_prefetch(s->spec.session_id);
    __builtin_prefetch(s->status.sandbox_id);
  }
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

/* The key of a link claim: status.sandboxID (a) and no second part; of
 * a pair claim: (tenant, sessionID). */
static const char *key_a(const planner *pl, bool pair, size_t rec)
{
  return pair ? pl->recs[rec].tenant : pl->recs[rec].link;
}

static const char *key_b(const planner *pl, bool pair, size_t rec)
{
  return pair ? pl->recs[rec].sid : NULL;
}

/* Within one key, claims sort by priority: live before tombstones, then
 * the lowest namespace/name (rec_cmp). */
static int claim_cmp(const planner *pl, bool pair, const hkey *x,
                     const hkey *y)
{
  int c;
  if(x->h != y->h)
    return x->h < y->h ? -1 : 1;
  if((c = strcmp(key_a(pl, pair, x->i), key_a(pl, pair, y->i))) ||
     (c = strcmp0(key_b(pl, pair, x->i), key_b(pl, pair, y->i))))
    return c;
  return rec_cmp(&pl->recs[x->i], &pl->recs[y->i]);
}

static bool claim_same(const planner *pl, bool pair, const hkey *x,
                       const hkey *y)
{
  return x->h == y->h &&
         !strcmp(key_a(pl, pair, x->i), key_a(pl, pair, y->i)) &&
         !strcmp0(key_b(pl, pair, x->i), key_b(pl, pair, y->i));
}

/* first pair claim with key (h, a, b), or SIZE_MAX */
static size_t pair_find(const planner *pl, uint64_t h, const char *a,
                        const char *b)
{
  const hkey *v = pl->pairs;
  size_t lo = 0, hi = pl->n_pairs;
  while(lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = v[mid].h < h ? -1 : v[mid].h > h;
    if(!c)
      c = strcmp(pl->recs[v[mid].i].tenant, a);
    if(!c)
      c = strcmp0(pl->recs[v[mid].i].sid, b);
    if(c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if(lo < pl->n_pairs && v[lo].h == h && !strcmp(pl->recs[v[lo].i].tenant, a)
     && !strcmp0(pl->recs[v[lo].i].sid, b))
    return lo;
  return SIZE_MAX;
}

/* The order of sandboxes: sb_cmp on the records the keys stand for. */
static int sbkey_cmp(const planner *pl, bool unused, const hkey *x,
                     const hkey *y)
{
  (void)unused;
  return sb_cmp(&pl->sbs[x->i], &pl->sbs[y->i]);
}

typedef int (*key_cmp)(const planner *pl, bool pair, const hkey *x,
                       const hkey *y);

/* Sorting by hash. Each comparator above compares the hash first. An LSD
 * radix sort on the top 33 bits of the hash orders the keys, then each
 * run equal in those bits (duplicates and the rare partial collision) is
 * insertion-sorted with the full comparator. The result is what a stable
 * sort by the comparator gives, in O(n) instead of O(n log n) indirect
 * calls, and only 16-byte keys move: records stay where they are. */
#define RADIX_BITS 11
#define RADIX_PASSES 3
#define RADIX_SHIFT (64 - RADIX_PASSES * RADIX_BITS)
#define RADIX_SIZE (1u << RADIX_BITS)
#define DIGIT(h, d) \
  (((h) >> (RADIX_SHIFT + (d) * RADIX_BITS)) & (RADIX_SIZE - 1))

static void key_insertion_sort(const planner *pl, bool pair, hkey *v,
                               size_t n, key_cmp cmp)
{
  size_t i, j;
  for(i = 1; i < n; i++) {
    hkey t = v[i];
    for(j = i; j > 0 && cmp(pl, pair, &v[j - 1], &t) > 0; j--)
      v[j] = v[j - 1];
    v[j] = t;
  }
}

/* sorts *pk (n keys), which may be replaced by another allocation */
static sc_err sort_keys(const planner *pl, bool pair, hkey **pk, size_t n,
                        key_cmp cmp)
{
  hkey *k = *pk, *k2;
  size_t (*count)[RADIX_SIZE];
  size_t i, j, d;
  if(n < 64) {
    key_insertion_sort(pl, pair, k, n, cmp);
    return SC_OK;
  }
  k2 = malloc(n * sizeof(*k2));
  count = calloc(RADIX_PASSES, sizeof(*count));
  if(!k2 || !count) {
    free(k2);
    free(count);
    return SC_ERR_NOMEM;
  }
  for(i = 0; i < n; i++)
    for(d = 0; d < RADIX_PASSES; d++)
      count[d][DIGIT(k[i].h, d)]++;
  for(d = 0; d < RADIX_PASSES; d++) {
    size_t sum = 0, *c = count[d];
    hkey *t;
    if(c[DIGIT(k[0].h, d)] == n)
      continue; /* one bucket: this digit orders nothing */
    for(j = 0; j < RADIX_SIZE; j++) {
      size_t x = c[j];
      c[j] = sum;
      sum += x;
    }
    for(i = 0; i < n; i++)
      k2[c[DIGIT(k[i].h, d)]++] = k[i];
    t = k;
    k = k2;
    k2 = t;
  }
  free(k2);
  free(count);
  *pk = k;
  for(i = 0; i < n; i = j) {
    for(j = i + 1;
        j < n && (k[j].h >> RADIX_SHIFT) == (k[i].h >> RADIX_SHIFT); j++)
      ;
    if(j - i > 1)
      key_insertion_sort(pl, pair, k + i, j - i, cmp);
  }
  return SC_OK;
}

static bool is_gone(const planner *pl, const char *id)
{
  return pl->n_gone &&
         bsearch(&id, pl->gone, pl->n_gone, sizeof(*pl->gone), str_cmp);
}

/* ---------- actions ---------- */

/* The actions' strings live in a chain of chunks the plan owns: a few
 * mallocs per pass instead of five per action, and one free each. */
#define PLAN_ARENA_CHUNK (64 * 1024)
#define PLAN_REASON_MAX 512

struct plan_arena {
  struct plan_arena *next;
  size_t used, cap;
  char buf[];
};

/* room for n bytes at (*pa)->buf + used (not yet taken) */
static char *arena_reserve(plan_arena **pa, size_t n)
{
  plan_arena *c = *pa;
  if(!c || c->cap - c->used < n) {
    size_t cap = n > PLAN_ARENA_CHUNK ? n : PLAN_ARENA_CHUNK;
    if(!(c = malloc(sizeof(*c) + cap)))
      return NULL;
    c->next = *pa;
    c->used = 0;
    c->cap = cap;
    *pa = c;
  }
  return c->buf + c->used;
}

/* a copy of s (n bytes, then a NUL) */
static char *arena_strndup(plan_arena **pa, const char *s, size_t n)
{
  char *d = arena_reserve(pa, n + 1);
  if(!d)
    return NULL;
  memcpy(d, s, n);
  d[n] = 0;
  (*pa)->used += n + 1;
  return d;
}

static void arena_free(plan_arena *a)
{
  while(a) {
    plan_arena *next = a->next;
    free(a);
    a = next;
  }
}

static char *arena_strdup(plan_arena **pa, const char *s)
{
  return arena_strndup(pa, s, strlen(s));
}

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
  char *reason;
  size_t len;
  va_list ap;
  if(p->n_actions == pl->cap_actions) {
    size_t ncap = pl->cap_actions ? pl->cap_actions * 2 : 64;
    plan_action *na = realloc(p->actions, ncap * sizeof(*na));
    if(!na)
      return SC_ERR_NOMEM;
    p->actions = na;
    pl->cap_actions = ncap;
  }
  /* the reason is formatted straight into the arena, at most 511
   * characters (as a 512-byte buffer would) */
  if(!(reason = arena_reserve(&p->arena, PLAN_REASON_MAX)))
    return SC_ERR_NOMEM;
  va_start(ap, fmt);
  len = (size_t)vsnprintf(reason, PLAN_REASON_MAX, fmt, ap);
  va_end(ap);
  if(len >= PLAN_REASON_MAX)
    len = PLAN_REASON_MAX - 1;
  p->arena->used += len + 1;
  a = &p->actions[p->n_actions];
  memset(a, 0, sizeof(*a));
  p->n_actions++;
  a->type = type;
  a->del_kind = kind;
  a->timeout_s = timeout_s;
  a->cube_now = pl->in->cube_now;
  if(r) {
    a->s = r->s;
    if(!(a->ns = arena_strdup(&p->arena, r->ns ? r->ns
                                        : SESSION_DEFAULT_NAMESPACE)) ||
       !(a->name = arena_strdup(&p->arena, r->name ? r->name : "")))
      return SC_ERR_NOMEM;
  }
  if(sb) {
    a->end_at = sb->end_at;
    if(!(a->sandbox_id = arena_strdup(&p->arena, sb->id)))
      return SC_ERR_NOMEM;
    if(type == PLAN_DELETE && sb->tenant &&
       !(a->expect_tenant = arena_strdup(&p->arena, sb->tenant)))
      return SC_ERR_NOMEM;
  }
  a->reason = reason;
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
    if(!(a->sandbox_id = arena_strdup(&pl->p->arena, r->link)))
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
  bool keep_intent;         /* status.createIntent stays (else cleared) */
  const char *ready_status, *ready_reason;
  /* The Ready message: ready_msg, or, when lazy, the concatenation of
   * msg3[] (cat3), built only if the status changes. */
  bool lazy;
  const char *msg3[3];
  bool conflict;            /* Conflict True */
  const char *conflict_reason;
  /* the buffers last: want_from_old() clears only what comes before */
  char ready_msg[320];
  char conflict_msg[320];
} want;

/* st's condition of this type when all but its message already say
 * this, else NULL: the test of set_cond()'s early return */
static const session_condition *cond_match(const session_status *st,
                                           const char *type,
                                           const char *status,
                                           const char *reason, int64_t gen)
{
  const session_condition *o = session_status_get_condition(st, type);
  if(o && o->observed_generation == gen && o->last_transition_time &&
     str_eq0(o->status, status) && str_eq0(o->reason, reason))
    return o;
  return NULL;
}

/* Would set_cond() change st? */
static bool cond_differs(const session_status *st, const char *type,
                         const char *status, const char *reason,
                         const char *msg, int64_t gen)
{
  const session_condition *o = cond_match(st, type, status, reason, gen);
  return !(o && str_eq0(o->message, msg));
}

/* Does m equal what cat3(buf, cap, a, b, c) would write? */
static bool cat3_eq(const char *m, size_t cap, const char *a, const char *b,
                    const char *c)
{
  const char *parts[3];
  size_t i, left = cap - 1;
  if(!m)
    return false;
  parts[0] = a;
  parts[1] = b;
  parts[2] = c;
  for(i = 0; i < 3; i++) {
    size_t n = strlen(parts[i]);
    if(n > left)
      n = left;
    if(strncmp(m, parts[i], n)) /* stops at the end of m */
      return false;
    m += n;
    left -= n;
  }
  return !*m;
}

static sc_err set_cond(session_status *st, const char *type,
                       const char *status, const char *reason,
                       const char *msg, int64_t gen, sc_time now)
{
  session_condition c;
  if(!cond_differs(st, type, status, reason, msg, gen))
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
#define MSG_SANDBOX "sandbox "
#define MSG_RUNNING " is running"
#define MSG_PAUSED " is paused as spec.state Paused asks"
#define MSG_IDLE " was paused by Cube for idleness; the next request " \
                 "resumes it"

static void msg_running(char *b, size_t n, const char *id)
{
  cat3(b, n, MSG_SANDBOX, id, MSG_RUNNING);
}

static void msg_paused(char *b, size_t n, const char *id)
{
  cat3(b, n, MSG_SANDBOX, id, MSG_PAUSED);
}

/* Ready with the message "sandbox <id><tail>", built only if needed */
static void want_sandbox_msg(struct want *w, const char *status,
                             const char *reason, const char *id,
                             const char *tail)
{
  w->ready_status = status;
  w->ready_reason = reason;
  w->lazy = true;
  w->msg3[0] = MSG_SANDBOX;
  w->msg3[1] = id;
  w->msg3[2] = tail;
}

static void msg_reclaimed(char *b, size_t n, int64_t rg)
{
  snprintf(b, n,
           "sandbox reclaimed at generation %" PRId64
           "; bump spec.wake for a new one", rg);
}

static const char msg_ended[] = "spec.state Ended: no sandbox left";

static sc_err apply_want(const session *s, want *w, sc_time now,
                         session_status *st)
{
  sc_err err;
  int64_t og = s->meta.generation;
  if(w->lazy) {
    cat3(w->ready_msg, sizeof(w->ready_msg), w->msg3[0], w->msg3[1],
         w->msg3[2]);
    w->lazy = false;
  }
  st->phase = w->phase;
  if((err = set_str(&st->sandbox_id, w->sandbox_id)) ||
     (err = set_str(&st->sandbox_state, w->sandbox_state)))
    return err;
  st->end_at = w->end_at;
  st->observed_generation = og;
  st->reclaimed_generation = w->reclaimed_generation;
  st->paused_by_controller = w->paused_by_controller;
  st->applied_idle_timeout_ms = w->applied_idle_timeout_ms;
  if(!w->keep_intent) {
    if((err = set_str(&st->create_intent_by, NULL)))
      return err;
    st->create_intent_at = 0;
  }
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

/* Would apply_want() change anything in s->status? Mirrors it step by
 * step without writing, so an unchanged status is never copied. */
static bool want_differs(const session *s, const want *w)
{
  const session_status *st = &s->status;
  int64_t og = s->meta.generation;
  if(st->phase != w->phase || !str_eq0(st->sandbox_id, w->sandbox_id) ||
     !str_eq0(st->sandbox_state, w->sandbox_state) ||
     st->end_at != w->end_at || st->observed_generation != og ||
     st->reclaimed_generation != w->reclaimed_generation ||
     st->paused_by_controller != w->paused_by_controller ||
     st->applied_idle_timeout_ms != w->applied_idle_timeout_ms ||
     (!w->keep_intent && st->create_intent_at))
    return true;
  if(w->ready_status) {
    const session_condition *o = cond_match(st, "Ready", w->ready_status,
                                            w->ready_reason, og);
    if(!o)
      return true;
    if(w->lazy ? !cat3_eq(o->message, sizeof(w->ready_msg), w->msg3[0],
                          w->msg3[1], w->msg3[2])
               : !str_eq0(o->message, w->ready_msg))
      return true;
  }
  if(w->conflict)
    return cond_differs(st, "Conflict", "True", w->conflict_reason,
                        w->conflict_msg, og);
  return session_status_get_condition(st, "Conflict") &&
         cond_differs(st, "Conflict", "False", "Resolved",
                      "no conflicting sandbox or session", og);
}

static void want_from_old(const session *s, want *w)
{
  const session_status *o = &s->status;
  memset(w, 0, offsetof(want, ready_msg));
  w->ready_msg[0] = 0;
  w->conflict_msg[0] = 0;
  w->phase = o->phase;
  w->sandbox_id = o->sandbox_id;
  w->sandbox_state = o->sandbox_state;
  w->end_at = o->end_at;
  w->reclaimed_generation = o->reclaimed_generation;
  w->paused_by_controller = o->paused_by_controller;
  w->applied_idle_timeout_ms = o->applied_idle_timeout_ms;
  w->keep_intent = true;
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
  w->lazy = false;
  va_start(ap, fmt);
  vsnprintf(w->ready_msg, sizeof(w->ready_msg), fmt, ap);
  va_end(ap);
}

/* linked: sb is the one status.sandboxID names (the join compared the
 * strings already, so the status's own copy of the ID can stand in for
 * sb->id, which saves a cache miss per session). */
static void want_sandbox(want *w, const session *s, const sb_rec *sb,
                         bool linked)
{
  const session_status *o = &s->status;
  bool same = linked || str_eq0(o->sandbox_id, sb->id);
  w->sandbox_id = linked ? o->sandbox_id : sb->id;
  w->sandbox_state = cube_sb_state_name(sb->state);
  w->end_at = sb->end_at;
  w->applied_idle_timeout_ms = same ? o->applied_idle_timeout_ms : 0;
  w->keep_intent = false; /* a sandbox is found: the claim is done */
  w->paused_by_controller = same && o->paused_by_controller;
  if(sb->state == CUBE_SB_RUNNING &&
     s->spec.state != SESSION_STATE_PAUSED)
    w->paused_by_controller = false; /* someone resumed it */
}

static void want_nosandbox(want *w)
{
  w->sandbox_id = NULL;
  w->keep_intent = false;
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
  return sb->state == CUBE_SB_PAUSED && r->reclaim_ms > 0 &&
         sb->end_at != 0 && now != 0 &&
         now - sb->end_at >= r->reclaim_ms;
}

static sc_err add_reclaim(planner *pl, const sess_rec *r, const sb_rec *sb)
{
  char te[SCTIME_RFC3339_MAX], tn[SCTIME_RFC3339_MAX], age[32], ra[32];
  sc_err err;
  fmt_time(sb->end_at, te, sizeof(te));
  fmt_time(pl->in->cube_now, tn, sizeof(tn));
  fmt_dur(pl->in->cube_now - sb->end_at, age, sizeof(age));
  fmt_dur(r->reclaim_ms, ra, sizeof(ra));
  err = add_action(pl, PLAN_DELETE, PLAN_DEL_RECLAIM, r, sb, 0,
                   "sandbox %s paused for %s by Cube's clock (endAt %s, "
                   "now %s) >= reclaimAfter %s",
                   sb->id, age, te, tn, ra);
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
    const sb_rec *b = &pl->sbs[k], *w;
    if(best == SIZE_MAX) {
      best = k;
      continue;
    }
    w = &pl->sbs[best];
    if(b->started_at != w->started_at) {
      if(!w->started_at || (b->started_at && b->started_at < w->started_at))
        best = k;
    }
    else if(strcmp(b->id, w->id) < 0)
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
                       "sandbox %s (%s)", td, sb->id,
                       cube_sb_state_name(sb->state));
    else
      err = add_action(pl, PLAN_DELETE, kind, r, sb, 0,
                       "spec.state Ended: delete sandbox %s (%s)",
                       sb->id, cube_sb_state_name(sb->state));
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

/* Another process claimed the create (status.createIntent) less than the
 * TTL ago by Cube's clock: its sandbox may exist but not be listed yet. */
static bool intent_held(const planner *pl, const session *s)
{
  const session_status *st = &s->status;
  sc_time now = pl->in->cube_now;
  if(!st->create_intent_at || !now || pl->cfg->create_intent_ttl_ms <= 0)
    return false;
  if(pl->cfg->identity && str_eq0(st->create_intent_by, pl->cfg->identity))
    return false; /* our own claim: our last attempt failed, try again */
  return now - st->create_intent_at < pl->cfg->create_intent_ttl_ms;
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
                     r->sb_n, pl->sbs[wi].id,
                     r->ls == LS_OWNED ? "status.sandboxID"
                                       : "oldest startedAt, then lowest ID",
                     pl->sbs[k].id);
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
        w->lazy = false;
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
      w->lazy = false;
      return SC_OK;
    }
    if(!s->spec.template_id || !*s->spec.template_id) {
      w->phase = SESSION_PHASE_FAILED;
      want_ready(w, "False", "InvalidSpec",
                 "spec.template is empty: cannot create a sandbox");
      return SC_OK;
    }
    w->phase = SESSION_PHASE_CREATING;
    w->keep_intent = true; /* the executor writes its own claim first */
    if(intent_held(pl, s)) {
      char ta[SCTIME_RFC3339_MAX];
      sc_time until = s->status.create_intent_at +
                      pl->cfg->create_intent_ttl_ms;
      fmt_time(s->status.create_intent_at, ta, sizeof(ta));
      want_ready(w, "False", "Creating",
                 "waiting for the create claimed by %s at %s (Cube's clock)",
                 s->status.create_intent_by ? s->status.create_intent_by
                                            : "(unnamed)", ta);
      if(!*due || until < *due)
        *due = until;
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
  want_sandbox(w, s, sb, r->ls == LS_OWNED && wi == r->link_sb);
  switch(sb->state) {
  case CUBE_SB_RUNNING:
    if(state == SESSION_STATE_PAUSED) {
      w->phase = SESSION_PHASE_RUNNING;
      want_ready(w, "False", "Pausing",
                 "pausing sandbox %s: spec.state is Paused",
                 sb->id);
      return add_action(pl, PLAN_PAUSE, PLAN_DEL_NONE, r, sb, 0,
                        "spec.state Paused and sandbox %s is running: pause",
                        sb->id);
    }
    w->phase = SESSION_PHASE_RUNNING;
    want_sandbox_msg(w, "True", "SandboxRunning", w->sandbox_id,
                     MSG_RUNNING);
    if(w->applied_idle_timeout_ms != r->idle_ms) {
      char ni[32], oi[32];
      fmt_dur(r->idle_ms, ni, sizeof(ni));
      fmt_dur(w->applied_idle_timeout_ms, oi, sizeof(oi));
      if(state == SESSION_STATE_RUNNING && sb->end_at)
        *due = sb->end_at - r->idle_ms / 2;
      return add_action(pl, PLAN_SET_TIMEOUT, PLAN_DEL_NONE, r, sb,
                        timeout_secs(r->idle_ms),
                        "idleTimeout is %s but %s was applied to sandbox "
                        "%s: set its timeout to %" PRId64 "s",
                        ni, w->applied_idle_timeout_ms ? oi : "none known",
                        sb->id, timeout_secs(r->idle_ms));
    }
    if(state == SESSION_STATE_RUNNING && sb->end_at) {
      sc_time at = sb->end_at - r->idle_ms / 2;
      *due = at;
      if(now && now >= at) {
        char te[SCTIME_RFC3339_MAX], tn[SCTIME_RFC3339_MAX], hi[32];
        fmt_time(sb->end_at, te, sizeof(te));
        fmt_time(now, tn, sizeof(tn));
        fmt_dur(r->idle_ms / 2, hi, sizeof(hi));
        return add_action(pl, PLAN_KEEPALIVE, PLAN_DEL_NONE, r, sb,
                          timeout_secs(r->idle_ms),
                          "spec.state Running: sandbox %s would idle out at "
                          "endAt %s (now %s, within idleTimeout/2 = %s): "
                          "extend by %" PRId64 "s",
                          sb->id, te, tn, hi,
                          timeout_secs(r->idle_ms));
      }
    }
    return SC_OK;

  case CUBE_SB_PAUSED:
  case CUBE_SB_PAUSING:
    w->phase = SESSION_PHASE_PAUSED;
    if(state == SESSION_STATE_RUNNING) {
      if(sb->state == CUBE_SB_PAUSING) {
        want_ready(w, "False", "SandboxPausing",
                   "sandbox %s is pausing; it is resumed once paused",
                   sb->id);
        return SC_OK;
      }
      want_ready(w, "False", "Resuming",
                 "resuming sandbox %s: spec.state is Running",
                 sb->id);
      return add_action(pl, PLAN_RESUME, PLAN_DEL_NONE, r, sb,
                        timeout_secs(r->idle_ms),
                        "spec.state Running and sandbox %s is %s: resume "
                        "with timeout %" PRId64 "s",
                        sb->id, cube_sb_state_name(sb->state),
                        timeout_secs(r->idle_ms));
    }
    if(state == SESSION_STATE_ACTIVE && w->paused_by_controller &&
       sb->state == CUBE_SB_PAUSED) {
      want_ready(w, "False", "Resuming",
                 "resuming sandbox %s: the controller paused it and "
                 "spec.state is Active again", sb->id);
      return add_action(pl, PLAN_RESUME, PLAN_DEL_NONE, r, sb,
                        timeout_secs(r->idle_ms),
                        "sandbox %s was paused by the controller and "
                        "spec.state is Active again: resume with timeout "
                        "%" PRId64 "s",
                        sb->id, timeout_secs(r->idle_ms));
    }
    if(state == SESSION_STATE_ACTIVE && w->paused_by_controller)
      want_ready(w, "False", "Resuming",
                 "sandbox %s is pausing; it is resumed once paused",
                 sb->id);
    else if(state == SESSION_STATE_PAUSED) {
      want_sandbox_msg(w, "True", "SandboxPaused", w->sandbox_id,
                       MSG_PAUSED);
    }
    else {
      want_sandbox_msg(w, "True", "IdlePaused", w->sandbox_id, MSG_IDLE);
    }
    if(reclaim_due(pl, r, sb))
      return add_reclaim(pl, r, sb);
    if(sb->state == CUBE_SB_PAUSED && r->reclaim_ms > 0 && sb->end_at)
      *due = sb->end_at + r->reclaim_ms;
    return SC_OK;

  default:
    if(w->phase == SESSION_PHASE_NONE)
      w->phase = SESSION_PHASE_PENDING;
    want_ready(w, "Unknown", "SandboxStateUnknown",
               "Cube reports an unknown state for sandbox %s",
               sb->id);
    return SC_OK;
  }
}

/* Ahead of the per-session pass: the status a few sessions on (its
 * strings, its conditions and their strings) and the sandbox it links. */
static void prefetch_rec(const planner *pl, size_t i)
{
  size_t j;
  if(i + PREFETCH_FARTHEST < pl->n_recs) {
    const session *s = pl->recs[i + PREFETCH_FARTHEST].s;
    __builtin_prefetch(s);
    __builtin_prefetch(&s->status);
    __builtin_prefetch(&s->status.conditions);
    __builtin_prefetch(&s->spec.template_id);
  }
  if(i + PREFETCH_FAR < pl->n_recs) {
    const sess_rec *r = &pl->recs[i + PREFETCH_FAR];
    __builtin_prefetch(r->s->status.conditions);
    __builtin_prefetch(r->s->status.sandbox_state);
    __builtin_prefetch(r->s->spec.template_id);
    if(r->link_sb != SIZE_MAX)
      __builtin_prefetch(&pl->sbs[r->link_sb]);
  }
  if(i + PREFETCH_NEAR < pl->n_recs) {
    const sess_rec *r = &pl->recs[i + PREFETCH_NEAR];
    const session_status *st = &r->s->status;
    for(j = 0; j < st->n_conditions; j++) {
      __builtin_prefetch(st->conditions[j].type);
      __builtin_prefetch(st->conditions[j].message);
    }
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
             sb->id, sb->tenant, r->tenant);
  }
  else if(r->ls == LS_CONFLICT_SB) {
    const sb_rec *sb = &pl->sbs[r->link_sb];
    w.conflict = true;
    w.conflict_reason = "SandboxMismatch";
    snprintf(w.conflict_msg, sizeof(w.conflict_msg),
             "status.sandboxID %s carries tags of another owner "
             "(session %s, managed-by %s)", sb->id,
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
  else if(r->unbound) {
    w.conflict = true;
    w.conflict_reason = "TenantNotNamespace";
    snprintf(w.conflict_msg, sizeof(w.conflict_msg),
             "spec.tenantID %s is not the namespace %s: a session acts only "
             "for the tenant of its namespace (--tenant-binding namespace)",
             r->tenant, r->ns);
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
               r->ls == LS_CONFLICT_TENANT || r->unbound ? "TenantConflict"
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
  /* Unchanged: a shallow view of the input's status (no copy). Changed:
   * an owned deep copy. plan_free() tells them apart by status_changed. */
  ps->status = s->status;
  ps->status_changed = false;
  if(!want_differs(s, &w))
    return SC_OK;
  memset(&ps->status, 0, sizeof(ps->status));
  if((err = session_status_copy(&ps->status, &s->status)) ||
     (err = apply_want(s, &w, pl->in->cube_now, &ps->status)) ||
     session_status_equal(&ps->status, &s->status)) {
    session_status_clear(&ps->status);
    ps->status = s->status;
    return err;
  }
  ps->status_changed = true;
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
    if(sb->state != CUBE_SB_PAUSED || !sb->end_at || !now)
      continue; /* running orphans are left to Cube's idle pause */
    at = sb->end_at + pl->cfg->orphan_grace_ms;
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
      fmt_time(sb->end_at, te, sizeof(te));
      fmt_time(now, tn, sizeof(tn));
      fmt_dur(now - sb->end_at, age, sizeof(age));
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
    p->n_actions = first; /* their strings stay in the arena until
                             plan_free() */
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

/* Resolve links: the first claim of an ID owns it. Only an observed
 * sandbox can be contested: when the ID is gone or unconfirmed, every
 * claimant sees the same (gone, or confirm).
 *
 * A merge of the links with the sandboxes, both in hash order. When
 * exactly one sandbox has the link's hash, the ID strings are not
 * compared here (that would be two cache misses per session in random
 * order): check_links() compares them afterwards in session order, and
 * on a mismatch (a 64-bit collision) the merge runs again with exact
 * comparisons. */
static void merge_links(planner *pl, bool exact)
{
  size_t i, j, m, q;
  for(i = 0, m = 0; i < pl->n_links; i = j) {
    sess_rec *owner = &pl->recs[pl->links[i].i];
    uint64_t h = pl->links[i].h;
    size_t k = SIZE_MAX;
    enum link_state unseen;
    if(i + PREFETCH_FAR < pl->n_links)
      __builtin_prefetch(&pl->recs[pl->links[i + PREFETCH_FAR].i].ls);
    while(m < pl->n_order && pl->order[m].h < h)
      m++;
    if(!exact && m < pl->n_order && pl->order[m].h == h &&
       (m + 1 == pl->n_order || pl->order[m + 1].h != h))
      k = pl->order[m].i; /* the only candidate: verified later */
    else
      for(q = m; q < pl->n_order && pl->order[q].h == h; q++)
        if(!strcmp(pl->sbs[pl->order[q].i].id, owner->link)) {
          k = pl->order[q].i;
          break;
        }
    unseen = is_gone(pl, owner->link) ? LS_GONE : LS_CONFIRM;
    for(j = i + 1; j < pl->n_links && claim_same(pl, false, &pl->links[j],
                                                 &pl->links[i]); j++)
      ;
    for(q = i + 1; q < j; q++) {
      sess_rec *r = &pl->recs[pl->links[q].i];
      r->other_link = pl->links[i].i;
      if(k == SIZE_MAX)
        r->ls = unseen;
      else
        r->ls = r->tomb ? LS_NONE : LS_CLAIMED;
    }
    if(k != SIZE_MAX) {
      pl->sbs[k].linked = true;
      owner->link_sb = k;
      owner->ls = LS_OWNED; /* until the tags say otherwise */
    }
    else
      owner->ls = unseen;
  }
}

static void reset_links(planner *pl)
{
  size_t i;
  for(i = 0; i < pl->n_recs; i++) {
    pl->recs[i].ls = LS_NONE;
    pl->recs[i].link_sb = SIZE_MAX;
    pl->recs[i].other_link = SIZE_MAX;
  }
  for(i = 0; i < pl->n_sbs; i++) {
    pl->sbs[i].linked = false;
    pl->sbs[i].owner = SIZE_MAX;
  }
}

/* In session (memory) order: each owner's link really is its sandbox's
 * ID (false when not: merge again exactly), then the sandbox's tags. */
static bool check_links(planner *pl)
{
  size_t i;
  for(i = 0; i < pl->n_recs; i++) {
    sess_rec *r = &pl->recs[i];
    sb_rec *sb;
    if(i + PREFETCH_NEAR < pl->n_recs &&
       pl->recs[i + PREFETCH_NEAR].ls == LS_OWNED) {
      const sess_rec *y = &pl->recs[i + PREFETCH_NEAR];
      const sb_rec *x = &pl->sbs[y->link_sb];
      __builtin_prefetch(x->id);
      __builtin_prefetch(x->tenant);
      __builtin_prefetch(x->sid);
      __builtin_prefetch(y->link);
      __builtin_prefetch(y->tenant);
      __builtin_prefetch(y->sid);
    }
    if(i + PREFETCH_FAR < pl->n_recs &&
       pl->recs[i + PREFETCH_FAR].ls == LS_OWNED)
      __builtin_prefetch(&pl->sbs[pl->recs[i + PREFETCH_FAR].link_sb]);
    if(r->ls != LS_OWNED)
      continue;
    sb = &pl->sbs[r->link_sb];
    if(strcmp(sb->id, r->link))
      return false;
    if(sb->tenant && strcmp(sb->tenant, r->tenant))
      r->ls = LS_CONFLICT_TENANT;
    else if((sb->sid && r->sid && strcmp(sb->sid, r->sid)) ||
            (sb->mb && !sb->ours))
      r->ls = LS_CONFLICT_SB;
    else
      sb->owner = i;
  }
  return true;
}

static sc_err build_join(planner *pl)
{
  const plan_input *in = pl->in;
  size_t i, j, n;
  sc_err err;
  size_t *count;

  /* sessions, then their claims by link and by tag pair */
  pl->recs = calloc(in->n_sessions ? in->n_sessions : 1, sizeof(*pl->recs));
  pl->links = malloc((in->n_sessions ? in->n_sessions : 1) *
                     sizeof(*pl->links));
  pl->pairs = malloc((in->n_sessions ? in->n_sessions : 1) *
                     sizeof(*pl->pairs));
  if(!pl->recs || !pl->links || !pl->pairs)
    return SC_ERR_NOMEM;
  for(i = 0; i < in->n_sessions; i++) {
    const session *s = in->sessions[i];
    sess_rec *r = &pl->recs[pl->n_recs++];
    prefetch_session(in, i);
    r->s = s;
    r->in_idx = i;
    r->tomb = s->meta.deletion_timestamp != 0;
    r->ns = s->meta.namespace_ ? s->meta.namespace_
                               : SESSION_DEFAULT_NAMESPACE;
    r->name = s->meta.name ? s->meta.name : "";
    r->sid = s->spec.session_id ? s->spec.session_id : s->meta.name;
    r->tenant = s->spec.tenant_id ? s->spec.tenant_id : r->ns;
    r->unbound = pl->cfg->bind_tenant_to_namespace &&
                 strcmp(r->tenant, r->ns) != 0;
    r->idle_ms = eff_idle(s);
    r->reclaim_ms = s->spec.reclaim_after_ms < 0
                      ? SESSION_DEFAULT_RECLAIM_AFTER_MS
                      : s->spec.reclaim_after_ms;
    r->gen = eff_gen(s);
    r->link = s->status.sandbox_id; /* "" is no link: see below */
    r->link_sb = SIZE_MAX;
    r->other_link = SIZE_MAX;
    r->other_pair = SIZE_MAX;
  }
  for(i = 0; i < pl->n_recs; i++) {
    sess_rec *r = &pl->recs[i];
    if(i + PREFETCH_NEAR < pl->n_recs) {
      const sess_rec *y = &pl->recs[i + PREFETCH_NEAR];
      __builtin_prefetch(y->link);
      __builtin_prefetch(y->tenant);
      __builtin_prefetch(y->sid);
    }
    if(r->link && !*r->link)
      r->link = NULL; /* checked here, not above: one cache miss less */
    if(r->link) {
      hkey *c = &pl->links[pl->n_links++];
      size_t nl = strlen(r->link);
      c->h = hash_fin(hash_strn(HASH_INIT, r->link, nl));
      c->i = i;
    }
    if(r->tenant && r->sid && !r->unbound) {
      hkey *c = &pl->pairs[pl->n_pairs++];
      size_t nt = strlen(r->tenant), ns = strlen(r->sid);
      c->h = pair_hashn(r->tenant, nt, r->sid, ns);
      c->i = i;
    }
  }

  /* sandboxes: sorted by (hash, ID), one record per ID */
  pl->sbs = calloc(in->n_sandboxes ? in->n_sandboxes : 1, sizeof(*pl->sbs));
  if(!pl->sbs)
    return SC_ERR_NOMEM;
  for(i = 0; i < in->n_sandboxes; i++) {
    const cube_sandbox *b = &in->sandboxes[i];
    sb_rec *sb;
    prefetch_sandbox(in, i);
    if(!b->sandbox_id || !*b->sandbox_id)
      continue; /* nothing can be done to a sandbox without an ID */
    sb = &pl->sbs[pl->n_sbs++];
    n = strlen(b->sandbox_id);
    sb->h = hash_fin(hash_strn(HASH_INIT, b->sandbox_id, n));
    sb->b = b;
    sb->id = b->sandbox_id;
    sb->state = b->state;
    sb->started_at = b->started_at;
    sb->end_at = b->end_at;
    /* the tags, read here in input (memory) order */
    read_tags(sb, &b->metadata);
    sb->ours = sb->mb && !strcmp(sb->mb, pl->cname);
    sb->owner = SIZE_MAX;
    if(sb->ours)
      pl->p->n_managed++; /* less the duplicate reports, below */
  }
  pl->order = malloc((pl->n_sbs ? pl->n_sbs : 1) * sizeof(*pl->order));
  if(!pl->order)
    return SC_ERR_NOMEM;
  for(i = 0; i < pl->n_sbs; i++) {
    pl->order[i].h = pl->sbs[i].h;
    pl->order[i].i = i;
  }
  if((err = sort_keys(pl, false, &pl->order, pl->n_sbs, sbkey_cmp)))
    return err;
  /* one record per ID: the first in sb_cmp order (the records are
   * touched only when two keys share a hash, not in random order) */
  for(i = 0, n = 0; i < pl->n_sbs; i++) {
    if(n && pl->order[n - 1].h == pl->order[i].h) {
      sb_rec *sb = &pl->sbs[pl->order[i].i];
      if(!strcmp(pl->sbs[pl->order[n - 1].i].id, sb->id)) {
        sb->dup = true;
        if(sb->ours)
          pl->p->n_managed--;
        sb->ours = false;
        continue;
      }
    }
    pl->order[n++] = pl->order[i];
  }
  pl->n_order = n;

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

  if((err = sort_keys(pl, false, &pl->links, pl->n_links, claim_cmp)) ||
     (err = sort_keys(pl, true, &pl->pairs, pl->n_pairs, claim_cmp)))
    return err;

  merge_links(pl, false);
  if(!check_links(pl)) {
    reset_links(pl);
    merge_links(pl, true);
    check_links(pl); /* exact now: cannot fail */
  }

  /* resolve pairs: live non-owners are in conflict */
  for(i = 0; i < pl->n_pairs; i = j) {
    for(j = i + 1; j < pl->n_pairs && claim_same(pl, true, &pl->pairs[j],
                                                 &pl->pairs[i]); j++) {
      sess_rec *r = &pl->recs[pl->pairs[j].i];
      if(!r->tomb) {
        r->pair_conflict = true;
        r->other_pair = pl->pairs[i].i;
      }
    }
  }

  /* tag join for the sandboxes no link claimed */
  for(i = 0; i < pl->n_sbs; i++) {
    sb_rec *sb = &pl->sbs[i];
    size_t c;
    if(sb->linked || !sb->ours || !sb->tenant || !sb->sid)
      continue;
    c = pair_find(pl, pair_hash(sb->tenant, sb->sid), sb->tenant, sb->sid);
    if(c != SIZE_MAX)
      sb->owner = pl->pairs[c].i;
  }

  /* per-session lists (counting sort, in input order: nothing depends on
   * the order within a list, pick_winner() is a total order and the
   * actions are sorted at the end; a duplicate report owns nothing) */
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
    pl->recs[i].sb_n = count[i];
    n += count[i];
    count[i] = pl->recs[i].sb_first;
  }
  for(i = 0; i < pl->n_sbs; i++) {
    size_t o = pl->sbs[i].owner;
    if(o != SIZE_MAX)
      pl->sblist[count[o]++] = i;
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
  for(i = 0; i < pl.n_recs; i++) {
    prefetch_rec(&pl, i);
    if((err = plan_session_one(&pl, &pl.recs[i])))
      goto out;
  }
  if((err = plan_orphans(&pl)))
    goto out;
  if(p->n_actions > 1)
    qsort(p->actions, p->n_actions, sizeof(*p->actions), action_cmp);

out:
  free(pl.recs);
  free(pl.sbs);
  free(pl.order);
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
  arena_free(p->arena);
  free(p->actions);
  for(i = 0; i < p->n_sessions; i++)
    if(p->sessions[i].status_changed) /* else it is the input's */
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
    if((err = set_str(&st->create_intent_by, NULL)))
      return err;
    st->create_intent_at = 0; /* the claim is done */
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
