/* shard.c - the tenant hash and the membership view (see shard.h). */
#include "controller/loop/shard.h"
#include "lib/hmap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct shard_entry {
  char *id;
  char *version;
  int64_t period_ms;
  int64_t changed_mono;  /* when this replica saw version change */
} shard_entry;

struct shard_view {
  shard_mode mode;
  char *self;
  bool fallback;         /* auto: no read yet, or the last one failed */
  bool blind;            /* auto: a read failed since the last update (the
                            view kept, shard_view_blind) */
  bool read_ok;          /* auto: an update has been folded in */
  shard_entry *e;        /* auto: the members the store listed */
  size_t n_e;
  char **live;           /* sorted; points into e[] or at self */
  size_t n_live;
  int64_t now_mono;      /* of the last update */
  char **statics;        /* SHARD_STATIC: "0".."n-1" */
};

sc_err shard_parse(const char *shards, const char *index_s,
                   shard_mode *mode, int *n, int *index_out, sc_errbuf *eb)
{
  const char *s = shards ? shards : "off";
  char *end = NULL;
  long v, index = -1;
  *n = 0;
  *index_out = -1;
  if(index_s) {
    errno = 0;
    index = strtol(index_s, &end, 10);
    if(!*index_s || *end || errno || index < 0 || index >= SHARD_STATIC_MAX)
      return sc_errf(eb, SC_ERR_INVALID, "--shard-index: \"%s\" is not a "
                     "shard number (0 to N-1)", index_s);
  }
  if(!strcmp(s, "off") || !strcmp(s, "auto")) {
    *mode = !strcmp(s, "off") ? SHARD_OFF : SHARD_AUTO;
    if(index >= 0)
      return sc_errf(eb, SC_ERR_INVALID, "--shard-index goes only with "
                     "--shards N (a number), not --shards %s", s);
    return SC_OK;
  }
  errno = 0;
  v = strtol(s, &end, 10);
  if(!*s || *end || errno || v < 1 || v > SHARD_STATIC_MAX)
    return sc_errf(eb, SC_ERR_INVALID, "--shards: \"%s\" is not off, auto "
                   "or a number of shards from 1 to %d", s,
                   SHARD_STATIC_MAX);
  if(index < 0 || index >= v)
    return sc_errf(eb, SC_ERR_INVALID, "--shards %ld needs --shard-index "
                   "from 0 to %ld (got %s)", v, v - 1,
                   index_s ? index_s : "none");
  *mode = SHARD_STATIC;
  *n = (int)v;
  *index_out = (int)index;
  return SC_OK;
}

/* ------------------------------------------------------------------ */
/* the hash */

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t fnv1a(uint64_t h, const char *s)
{
  const unsigned char *p = (const unsigned char *)s;
  for(; *p; p++) {
    h ^= *p;
    h *= FNV_PRIME;
  }
  return h;
}

/* splitmix64's finaliser: FNV-1a alone mixes the last bytes poorly into
 * the high bits, and rendezvous compares whole words */
static uint64_t mix64(uint64_t z)
{
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t shard_score(const char *member, const char *tenant)
{
  uint64_t h = fnv1a(FNV_OFFSET, member ? member : "");
  h ^= 0xff; /* a separator no string holds: ("ab","c") != ("a","bc") */
  h *= FNV_PRIME;
  h = fnv1a(h, tenant ? tenant : "");
  return mix64(h);
}

size_t shard_owner(const char *const *members, size_t n, const char *tenant)
{
  size_t i, best = 0;
  uint64_t bs = 0;
  for(i = 0; i < n; i++) {
    uint64_t sc = shard_score(members[i], tenant);
    if(i == 0 || sc > bs ||
       (sc == bs && strcmp(members[i], members[best]) < 0)) {
      bs = sc;
      best = i;
    }
  }
  return best;
}

/* ------------------------------------------------------------------ */
/* the view */

shard_view *shard_view_new(shard_mode mode, const char *self, int n,
                           int index)
{
  shard_view *v = calloc(1, sizeof(*v));
  int i;
  char buf[16];
  if(!v)
    return NULL;
  v->mode = mode;
  v->fallback = mode == SHARD_AUTO;
  if(mode == SHARD_STATIC) {
    v->statics = calloc((size_t)n, sizeof(char *));
    v->live = calloc((size_t)n, sizeof(char *));
    if(!v->statics || !v->live)
      goto oom;
    for(i = 0; i < n; i++) {
      snprintf(buf, sizeof(buf), "%d", i);
      if(!(v->statics[i] = strdup(buf)))
        goto oom;
      v->live[i] = v->statics[i];
      v->n_live++;
    }
    snprintf(buf, sizeof(buf), "%d", index);
    self = buf;
  }
  v->self = strdup(self ? self : "");
  if(!v->self)
    goto oom;
  return v;
oom:
  if(v->statics)
    v->n_live = (size_t)n; /* free every slot (NULLs fine) */
  shard_view_free(v);
  return NULL;
}

void shard_view_free(shard_view *v)
{
  size_t i;
  if(!v)
    return;
  for(i = 0; i < v->n_e; i++) {
    free(v->e[i].id);
    free(v->e[i].version);
  }
  free(v->e);
  if(v->statics)
    for(i = 0; i < v->n_live; i++)
      free(v->statics[i]);
  free(v->statics);
  free(v->live);
  free(v->self);
  free(v);
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int64_t expiry_ms(const shard_entry *e)
{
  return (int64_t)SHARD_EXPIRY_HALF_PERIODS *
         (e->period_ms > 0 ? e->period_ms : 1000) / 2;
}

static const shard_entry *find_in(const shard_entry *e, size_t n,
                                  const char *id)
{
  size_t i;
  for(i = 0; i < n; i++)
    if(!strcmp(e[i].id, id))
      return &e[i];
  return NULL;
}

sc_err shard_view_update(shard_view *v, const shard_member_in *ms, size_t n,
                         int64_t now_mono, bool *changed)
{
  shard_entry *ne;
  char **nl;
  size_t i, j, nn = 0, nlive = 0;
  bool self_seen = false, same;
  *changed = false;
  if(v->mode != SHARD_AUTO)
    return SC_OK;
  ne = calloc(n ? n : 1, sizeof(*ne));
  nl = calloc(n + 1, sizeof(*nl));
  if(!ne || !nl) {
    free(ne);
    free(nl);
    return SC_ERR_NOMEM;
  }
  for(i = 0; i < n; i++) {
    const shard_entry *old;
    if(!ms[i].id || !*ms[i].id || find_in(ne, nn, ms[i].id))
      continue; /* a duplicate row: the first counts */
    old = find_in(v->e, v->n_e, ms[i].id);
    ne[nn].id = strdup(ms[i].id);
    ne[nn].version = strdup(ms[i].version ? ms[i].version : "");
    if(!ne[nn].id || !ne[nn].version) {
      free(ne[nn].id);
      free(ne[nn].version);
      goto oom;
    }
    ne[nn].period_ms = ms[i].period_ms;
    /* first seen, or renewed since: seen to move now. After a fallback
     * (reads failed) every member starts again: when the store took no
     * writes, nobody could renew, and a member must not expire for this
     * replica's blindness */
    ne[nn].changed_mono = old && !v->fallback && !v->blind &&
                              !strcmp(old->version, ne[nn].version)
                            ? old->changed_mono
                            : now_mono;
    nn++;
  }
  for(i = 0; i < nn; i++) {
    bool me = !strcmp(ne[i].id, v->self);
    if(me)
      self_seen = true;
    if(me || now_mono - ne[i].changed_mono < expiry_ms(&ne[i]))
      nl[nlive++] = ne[i].id;
  }
  if(!self_seen)
    nl[nlive++] = v->self;
  qsort(nl, nlive, sizeof(*nl), cmp_str);
  same = !v->fallback && nlive == v->n_live;
  for(j = 0; same && j < nlive; j++)
    same = !strcmp(nl[j], v->live[j]);
  for(i = 0; i < v->n_e; i++) {
    free(v->e[i].id);
    free(v->e[i].version);
  }
  free(v->e);
  free(v->live);
  v->e = ne;
  v->n_e = nn;
  v->live = nl;
  v->n_live = nlive;
  v->fallback = false;
  v->blind = false;
  v->read_ok = true;
  v->now_mono = now_mono;
  *changed = !same;
  return SC_OK;
oom:
  for(i = 0; i < nn; i++) {
    free(ne[i].id);
    free(ne[i].version);
  }
  free(ne);
  free(nl);
  return SC_ERR_NOMEM;
}

bool shard_view_fallback(shard_view *v)
{
  bool was = v->fallback;
  if(v->mode != SHARD_AUTO)
    return false;
  v->fallback = true;
  return !was;
}

bool shard_view_blind(shard_view *v, int64_t now_mono, int64_t grace_ms)
{
  if(v->mode != SHARD_AUTO)
    return false;
  v->blind = true;
  if(!v->fallback && v->read_ok && grace_ms > 0 &&
     now_mono - v->now_mono < grace_ms)
    return false; /* the last view stands */
  return shard_view_fallback(v);
}

bool shard_view_falling_back(const shard_view *v)
{
  return v && v->mode == SHARD_AUTO && v->fallback;
}

bool shard_view_owns(const shard_view *v, const char *tenant)
{
  size_t o;
  if(!v || v->mode == SHARD_OFF || v->fallback || v->n_live <= 1)
    return true;
  o = shard_owner((const char *const *)v->live, v->n_live, tenant);
  return !strcmp(v->live[o], v->self);
}

size_t shard_view_live(const shard_view *v)
{
  if(!v || v->mode == SHARD_OFF || v->fallback)
    return 1;
  return v->n_live;
}

const char *shard_view_member(const shard_view *v, size_t i)
{
  if(!v || v->mode == SHARD_OFF || v->fallback)
    return i == 0 && v ? v->self : NULL;
  return i < v->n_live ? v->live[i] : NULL;
}

size_t shard_view_prunable(const shard_view *v, const char **ids,
                           const char **versions, size_t max)
{
  size_t i, k = 0;
  if(!v || v->mode != SHARD_AUTO)
    return 0;
  for(i = 0; i < v->n_e && k < max; i++) {
    const shard_entry *e = &v->e[i];
    if(!strcmp(e->id, v->self) ||
       v->now_mono - e->changed_mono <
         (1 + SHARD_PRUNE_EXPIRIES) * expiry_ms(e))
      continue;
    ids[k] = e->id;
    versions[k] = e->version;
    k++;
  }
  return k;
}

/* ------------------------------------------------------------------ */
/* a pass's frozen ownership */

struct shard_owners {
  bool all;      /* owns every tenant */
  char *self;
  char **live;   /* sorted, as the view's */
  size_t n_live;
};

void shard_owners_free(shard_owners *o)
{
  size_t i;
  if(!o)
    return;
  for(i = 0; i < o->n_live; i++)
    free(o->live[i]);
  free(o->live);
  free(o->self);
  free(o);
}

shard_owners *shard_view_freeze(const shard_view *v)
{
  shard_owners *o = calloc(1, sizeof(*o));
  size_t i;
  if(!o)
    return NULL;
  o->all = !v || v->mode == SHARD_OFF || v->fallback || v->n_live <= 1;
  if(o->all)
    return o;
  o->self = strdup(v->self);
  o->live = calloc(v->n_live, sizeof(*o->live));
  if(!o->self || !o->live) {
    shard_owners_free(o);
    return NULL;
  }
  for(i = 0; i < v->n_live; i++) {
    if(!(o->live[i] = strdup(v->live[i]))) {
      shard_owners_free(o);
      return NULL;
    }
    o->n_live++;
  }
  return o;
}

bool shard_owners_owns(const shard_owners *o, const char *tenant)
{
  size_t w;
  if(!o || o->all)
    return true;
  w = shard_owner((const char *const *)o->live, o->n_live, tenant);
  return !strcmp(o->live[w], o->self);
}

size_t shard_owners_live(const shard_owners *o)
{
  return !o || o->all ? 1 : o->n_live;
}

bool shard_owners_gained(const shard_owners *now, const shard_owners *covered,
                         const char *tenant)
{
  return covered && shard_owners_owns(now, tenant) &&
         !shard_owners_owns(covered, tenant);
}

bool shard_takeover_allowed(bool covered_known, bool last_was_takeover,
                            bool everything_asked)
{
  return covered_known && !last_was_takeover && !everything_asked;
}

/* ------------------------------------------------------------------ */
/* the lists' costs */

typedef struct sl_entry {
  char *tenant;
  size_t rows[SHARD_STATES];
  bool covered[SHARD_STATES]; /* listed by tenant in the pass counting */
} sl_entry;

struct shard_lists {
  sc_hmap *idx;          /* hash(tenant) -> index into e, SC_HMAP_IDX */
  sl_entry *e;
  size_t n, cap;
  size_t whole_req[SHARD_STATES]; /* the last whole list's requests */
  bool counting_by_tenant[SHARD_STATES]; /* the pass being counted */
};

shard_lists *shard_lists_new(void)
{
  shard_lists *sl = calloc(1, sizeof(*sl));
  if(!sl)
    return NULL;
  if(!(sl->idx = sc_hmap_new(0))) {
    free(sl);
    return NULL;
  }
  return sl;
}

static void sl_forget_all(shard_lists *sl)
{
  size_t i;
  for(i = 0; i < sl->n; i++)
    free(sl->e[i].tenant);
  sl->n = 0;
  sc_hmap_clear(sl->idx);
}

void shard_lists_free(shard_lists *sl)
{
  if(!sl)
    return;
  sl_forget_all(sl);
  free(sl->e);
  sc_hmap_free(sl->idx);
  free(sl);
}

static bool sl_eq(const void *v, const void *key, void *ud)
{
  const shard_lists *sl = ud;
  return !strcmp(sl->e[SC_HMAP_IDX_OF(v)].tenant, key);
}

static sl_entry *sl_find(const shard_lists *sl, const char *t)
{
  void *v = sc_hmap_get(sl->idx, sc_hash_id(t), sl_eq, t, (void *)sl);
  return v ? &sl->e[SC_HMAP_IDX_OF(v)] : NULL;
}

static sl_entry *sl_get(shard_lists *sl, const char *t)
{
  sl_entry *e = sl_find(sl, t);
  if(e)
    return e;
  if(sl->n == sl->cap) {
    size_t nc = sl->cap ? sl->cap * 2 : 64;
    sl_entry *ne = realloc(sl->e, nc * sizeof(*ne));
    if(!ne)
      return NULL;
    sl->e = ne;
    sl->cap = nc;
  }
  e = &sl->e[sl->n];
  memset(e, 0, sizeof(*e));
  if(!(e->tenant = strdup(t)))
    return NULL;
  if(sc_hmap_put(sl->idx, sc_hash_id(t), SC_HMAP_IDX(sl->n))) {
    free(e->tenant);
    return NULL;
  }
  sl->n++;
  return e;
}

static size_t pages_of(size_t rows, size_t page_rows)
{
  if(!page_rows || rows <= page_rows)
    return 1; /* an empty answer is a request too */
  return (rows + page_rows - 1) / page_rows;
}

void shard_lists_choose(const shard_lists *sl, const char *const *tenants,
                        size_t n, size_t page_rows, size_t n_names,
                        bool whole_due, shard_list_choice *out)
{
  size_t i;
  int s;
  memset(out, 0, sizeof(*out));
  if(n_names < 1)
    n_names = 1;
  for(s = 0; s < SHARD_STATES; s++) {
    out->est_whole[s] = sl ? sl->whole_req[s] : 0;
    for(i = 0; i < n; i++) {
      const sl_entry *e = sl ? sl_find(sl, tenants[i]) : NULL;
      out->est_tenant[s] += n_names * pages_of(e ? e->rows[s] : 0,
                                               page_rows);
    }
  }
  if(!sl) {
    out->why = "out of memory";
    return;
  }
  if(whole_due) {
    out->why = "a whole list is due (--shard-whole-list-every)";
    return;
  }
  for(i = 0; i < n; i++)
    if(!*tenants[i]) {
      out->why = "a session has an empty tenant";
      return;
    }
  for(s = 0; s < SHARD_STATES; s++)
    out->by_tenant[s] = out->est_whole[s] &&
                        out->est_tenant[s] < out->est_whole[s];
  if(out->by_tenant[SHARD_RUNNING] && out->by_tenant[SHARD_PAUSED] && !n) {
    /* no tenant: no list at all, and no Date to plan by: one whole list,
     * the cheaper */
    s = out->est_whole[SHARD_RUNNING] < out->est_whole[SHARD_PAUSED]
          ? SHARD_RUNNING : SHARD_PAUSED;
    out->by_tenant[s] = false;
  }
  if(!out->est_whole[SHARD_RUNNING] || !out->est_whole[SHARD_PAUSED])
    out->why = "not listed whole yet";
  else if(out->by_tenant[SHARD_RUNNING] || out->by_tenant[SHARD_PAUSED])
    out->why = "fewer requests by tenant";
  else
    out->why = "fewer requests whole";
}

sc_err shard_lists_begin(shard_lists *sl, const bool by_tenant[SHARD_STATES],
                         const size_t requests[SHARD_STATES],
                         const char *const *tenants, size_t n)
{
  size_t i;
  int s;
  if(!sl)
    return SC_OK;
  if(!by_tenant[SHARD_RUNNING] && !by_tenant[SHARD_PAUSED])
    sl_forget_all(sl); /* a tenant gone from Cube leaves the table */
  for(i = 0; i < sl->n; i++)
    for(s = 0; s < SHARD_STATES; s++) {
      sl->e[i].covered[s] = false;
      if(!by_tenant[s])
        sl->e[i].rows[s] = 0;
    }
  for(s = 0; s < SHARD_STATES; s++) {
    sl->counting_by_tenant[s] = by_tenant[s];
    if(!by_tenant[s] && requests[s])
      sl->whole_req[s] = requests[s];
  }
  for(i = 0; i < n; i++) {
    sl_entry *e;
    if(!by_tenant[SHARD_RUNNING] && !by_tenant[SHARD_PAUSED])
      break;
    if(!(e = sl_get(sl, tenants[i])))
      return SC_ERR_NOMEM;
    for(s = 0; s < SHARD_STATES; s++)
      if(by_tenant[s]) {
        e->covered[s] = true;
        e->rows[s] = 0;
      }
  }
  return SC_OK;
}

sc_err shard_lists_count(shard_lists *sl, int state, const char *tenant)
{
  sl_entry *e;
  const char *t = tenant ? tenant : "";
  if(!sl || state < 0 || state >= SHARD_STATES)
    return SC_OK;
  if(sl->counting_by_tenant[state]) {
    e = sl_find(sl, t);
    if(!e || !e->covered[state])
      return SC_OK; /* not listed by this pass: a GET's answer */
  }
  else if(!(e = sl_get(sl, t)))
    return SC_ERR_NOMEM;
  e->rows[state]++;
  return SC_OK;
}

size_t shard_lists_rows(const shard_lists *sl, int state, const char *tenant)
{
  const sl_entry *e;
  if(!sl || state < 0 || state >= SHARD_STATES)
    return 0;
  e = sl_find(sl, tenant ? tenant : "");
  return e ? e->rows[state] : 0;
}
