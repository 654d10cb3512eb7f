/*
 * plan.c - the pure planner (docs/session-api.md and docs/architecture.md).
 *
 * (sessions, sandboxes, Cube's clock, config) -> actions + statuses.
 * No I/O, no clock, no globals. The sandboxes go into an open-addressing
 * hash table by ID; then one pass over the sessions joins and decides
 * each in turn, guessing that no other session contests its claims and
 * that no unlinked sandbox carries its (tenant, sessionID) tags, and the
 * few sessions whose guess proves wrong are decided again exactly (see
 * "the join, in one pass" below). Equal hashes always fall back to the
 * strings. A pass costs O(S + B). At 100k sessions memory latency and
 * the instructions per session share the cost: the passes over the input
 * run in its order and load and prefetch ahead, unchanged statuses are
 * not copied, the common words are compared without libc calls where a
 * first byte decides, the actions' strings share one arena and are
 * sorted by packed keys, and the working arrays can be kept between
 * passes (plan_scratch). docs/planner.md, "Cost", "Third round" and
 * "Fourth round".
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
#include "controller/plan/plan.h"
#include "lib/scstr.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/dynbuf.h"
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include "lib/sctext.h"
#include "lib/schash.h"

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

#define NONE32 UINT32_MAX
#define SESS_BIT 0x80000000u /* inputs must stay below this many items */

/* One per input session, in input order (rec i is input session i).
 * Indexes are 32-bit: plan_compute() refuses 2^32 - 1 items or more. */
typedef struct sess_rec {
  const session *s;     /* namespace, name, tenant, sessionID: rec_ns()... */
  const char *link;     /* status.sandboxID, NULL for none or "" */
  uint64_t hlink;       /* hash of link */
  uint64_t hpair;       /* hash of (tenant, sid), when has_pair */
  uint32_t link_sb;     /* index in sbs when the link is observed */
  uint32_t other_link;  /* the rec that won the link (LS_CLAIMED) */
  uint32_t other_pair;  /* the rec owning the shared (tenant, sid) */
  uint32_t next_claim;  /* the next rec linking the same sandbox */
  uint32_t sb_first, sb_n;/* into the per-session sandbox list */
  uint32_t link_len;    /* strlen(link), measured for the hash */
  uint8_t ls;           /* enum link_state */
  unsigned tomb : 1;
  unsigned has_pair : 1;
  unsigned pair_conflict : 1; /* a live non-owner of a shared (tenant, sid) */
  unsigned pair_loser : 1;    /* any non-owner of a shared (tenant, sid) */
  unsigned attached : 1;  /* took a sandbox by its tags (not its link) */
  unsigned redo : 1;      /* the one-pass guess was wrong: decide again */
  unsigned unbound : 1;   /* spec.tenantID is not the namespace and the
                             config binds them: no tag join, no create */
} sess_rec;

_Static_assert(sizeof(sess_rec) <= 64, "a sess_rec is one cache line");

/* One per input sandbox with an ID, in input order: one cache line
 * (the array is 64-byte aligned), since the session pass reads the linked
 * one's at random. What is rarely needed (startedAt, the managed-by text,
 * the whole sandbox for sb_cmp) is read from the input by in_idx. */
typedef struct sb_rec {
  uint64_t h;           /* hash of the ID */
  uint64_t hpair;       /* hash of the (tenant, sid) tags, when has_pair */
  const char *id;
  const char *tenant, *sid; /* the tags */
  sc_time end_at;
  uint32_t in_idx;      /* index in in->sandboxes */
  uint32_t owner;       /* an unlinked one: the rec that took it by its
                           tags (take_loose), or NONE32 */
  uint8_t state;        /* cube_sb_state */
  unsigned ours : 1;
  unsigned has_mb : 1;  /* a lea.managed-by tag, ours or not */
  unsigned has_pair : 1;/* ours, with both tags */
  unsigned dup : 1;     /* a second report of an ID: ignored */
} sb_rec;

_Static_assert(sizeof(sb_rec) <= 64, "an sb_rec is one cache line");

/* The links to each sandbox (one per sb_rec, same index). Apart from the
 * sb_recs, which the session pass then only reads: a record written
 * again would be written back to memory again (6 MB at 100k); these 8
 * bytes per sandbox mostly stay in the caches. */
typedef struct sb_links {
  uint32_t first;       /* the first rec linking it (chain: next_claim),
                           NONE32: none (not linked) */
  uint8_t n;            /* recs whose status.sandboxID is this ID, up to
                           255 (only 0, 1 and more matter) */
  uint8_t resolved;     /* its claims were sorted out (redo) */
} sb_links;

/* A sort key: a 64-bit hash and the index of the record it stands for. */
typedef struct hkey {
  uint64_t h;
  size_t i;
} hkey;

/* An open-addressing hash table slot: the top 32 bits of a 64-bit hash
 * and an index (NONE32: empty). The low bits pick the first slot. */
typedef struct hslot {
  uint32_t tag;
  uint32_t idx;
} hslot;

/* Working memory of a pass. Kept between passes by plan_compute_ex()'s
 * caller so the arrays are neither allocated nor faulted in again. */
struct plan_scratch {
  sess_rec *recs;
  size_t cap_recs;
  sb_rec *sbs;
  size_t cap_sbs;
  sb_links *links;      /* one per sbs[] */
  size_t cap_links;
  hslot *ids;           /* sandboxes by ID */
  size_t cap_ids;
  hslot *pairs;         /* sessions by (tenant, sid) */
  size_t cap_pairs;
  hslot *loose;         /* our unlinked sandboxes by their (tenant, sid)
                           tags (find_loose) */
  size_t cap_loose;
  uint32_t *unlinked;   /* our sandboxes no session links */
  size_t cap_unlinked;
  uint32_t *sblist;     /* per-session sandbox lists */
  size_t cap_sblist;
  uint32_t *act_rec;    /* the rec of each action (NONE32: orphan) */
  size_t cap_act_rec;
  uint32_t *redo;       /* recs decided again */
  size_t cap_redo;
  const char **gone;
  size_t cap_gone;
  struct akey *akeys;   /* the actions' sort keys (sort_actions) */
  size_t cap_akeys;
};

#define PL_TIMES 8

typedef struct planner {
  const plan_input *in;
  const plan_config *cfg;
  const char *cname;
  plan_scratch *sc;
  sess_rec *recs;       /* in input order */
  size_t n_recs;
  sb_rec *sbs;          /* in input order (those with an ID) */
  sb_links *links;      /* sbs[k]'s are links[k] */
  size_t n_sbs;
  size_t sbmask, pmask, lmask; /* table sizes - 1: ids, pairs, loose */
  size_t n_unlinked;    /* in sc->unlinked */
  size_t n_loose;       /* in sc->loose */
  const char **gone;    /* sorted */
  size_t n_gone;
  size_t n_sblist;
  uint32_t cur_rec;     /* the rec whose actions are being added */
  size_t n_redo;        /* recs in sc->redo */
  size_t n_visited;     /* sessions the session pass has reached */
  plan *p;
  size_t cap_actions;
  /* fmt_time() of cube_now (made once) and of the last few other times
   * (endAt of keep-alives, reclaims and orphans, deletion times): a
   * reason's times are mostly the same few values */
  char now_text[SCTIME_RFC3339_MAX];
  sc_time times[PL_TIMES];
  char time_text[PL_TIMES][SCTIME_RFC3339_MAX];
  unsigned next_time;   /* the entry to replace next (round robin) */
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

void plan_link_key_derive(const char *cube_api_key, const char *name,
                          unsigned char out[PLAN_LINK_KEY_LEN])
{
  static const char label[] = "session-controller link proof v1\n";
  const char *secret = cube_api_key && *cube_api_key ? cube_api_key
                       : name ? name : "";
  unsigned int n = PLAN_LINK_KEY_LEN;
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  if(!c || !EVP_DigestInit_ex(c, EVP_sha256(), NULL) ||
     !EVP_DigestUpdate(c, label, sizeof(label) - 1) ||
     !EVP_DigestUpdate(c, secret, strlen(secret)) ||
     !EVP_DigestFinal_ex(c, out, &n))
    memset(out, 0, PLAN_LINK_KEY_LEN);
  EVP_MD_CTX_free(c);
}

void plan_link_proof(const unsigned char *key, const char *uid,
                     const char *sandbox_id, char out[PLAN_PROOF_LEN + 1])
{
  static const char hexd[] = "0123456789abcdef";
  unsigned char msg[600], mac[EVP_MAX_MD_SIZE];
  unsigned int ml = 0;
  size_t ul = uid ? strlen(uid) : 0, il = sandbox_id ? strlen(sandbox_id) : 0;
  size_t i;
  if(ul > 256)
    ul = 256;
  if(il > 256)
    il = 256;
  memcpy(msg, uid ? uid : "", ul);
  msg[ul] = '\n';
  memcpy(msg + ul + 1, sandbox_id ? sandbox_id : "", il);
  if(!HMAC(EVP_sha256(), key, PLAN_LINK_KEY_LEN, msg, ul + 1 + il, mac, &ml) ||
     ml < PLAN_PROOF_LEN / 2) {
    memset(out, '0', PLAN_PROOF_LEN); /* never matches a real proof */
    out[PLAN_PROOF_LEN] = '\0';
    return;
  }
  for(i = 0; i < PLAN_PROOF_LEN / 2; i++) {
    out[2 * i] = hexd[mac[i] >> 4];
    out[2 * i + 1] = hexd[mac[i] & 15];
  }
  out[PLAN_PROOF_LEN] = '\0';
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

bool plan_config_owns(const plan_config *cfg, const char *managed_by)
{
  size_t i;
  const char *cname = cfg->controller_name && *cfg->controller_name
                        ? cfg->controller_name : PLAN_DEFAULT_CONTROLLER;
  if(!strcmp(managed_by, cname))
    return true;
  for(i = 0; i < cfg->n_adopted_names; i++)
    if(cfg->adopted_names[i] && !strcmp(managed_by, cfg->adopted_names[i]))
      return true;
  return false;
}

/* ---------- small helpers ---------- */

static int strcmp0(const char *a, const char *b)
{
  if(!a || !b)
    return a ? 1 : (b ? -1 : 0);
  return strcmp(a, b);
}

/* !strcmp(a, b), with the first byte compared inline: most of the
 * words the planner compares for every session (condition types, tag
 * names) differ there, and then no call is made. */
static inline bool streq(const char *a, const char *b)
{
  return a[0] == b[0] && (!a[0] || !strcmp(a + 1, b + 1));
}

/* sc_str_eq0() with streq() */
static inline bool streq0(const char *a, const char *b)
{
  if(!a || !b)
    return a == b;
  return a == b || streq(a, b);
}

/* The hash (lib/schash.h) keys the tables and sorts: cache misses, not
 * instructions, are the cost at 100k sessions, and a hash compares
 * without touching the strings. Equal hashes fall back to the strings. */
#define hash_fin sc_hash_fin
#define hash_strn sc_hash_strn
#define HASH_INIT SC_HASH_INIT

static uint64_t pair_hash(const char *a, const char *b)
{
  return sc_hash_pair(a, b);
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

/* A bounded string builder: appends, truncating at cap - 1 like
 * snprintf, and counts what it would have written. */
typedef struct sbuf {
  char *b;
  size_t cap, len;
} sbuf;

static void sb_putn(sbuf *o, const char *x, size_t n)
{
  if(o->len + 1 < o->cap) {
    size_t room = o->cap - 1 - o->len;
    memcpy(o->b + o->len, x, n < room ? n : room);
  }
  o->len += n;
}

static void sb_puts(sbuf *o, const char *x)
{
  sb_putn(o, x, strlen(x));
}

static void sb_putu(sbuf *o, uint64_t v)
{
  char d[24];
  size_t i = sizeof(d);
  do
    d[--i] = (char)('0' + v % 10);
  while(v /= 10);
  sb_putn(o, d + i, sizeof(d) - i);
}

static void sb_puti(sbuf *o, int64_t v)
{
  if(v < 0) {
    sb_putn(o, "-", 1);
    sb_putu(o, (uint64_t)0 - (uint64_t)v);
  }
  else
    sb_putu(o, (uint64_t)v);
}

/* the NUL, then what vsnprintf() would return */
static size_t sb_end(sbuf *o)
{
  if(o->cap)
    o->b[o->len < o->cap ? o->len : o->cap - 1] = 0;
  return o->len;
}

/* vsnprintf() for the formats the planner uses on every pass: %s, %zu,
 * %d, PRId64 and %% (glibc's vfprintf is most of the cost of 15,000
 * reasons). Any other conversion goes to vsnprintf() itself. Same output,
 * same truncation, same return value. */
static size_t fmt_v(char *buf, size_t cap, const char *fmt, va_list ap)
{
  static const char i64[] = "%" PRId64;
  const size_t ni = sizeof(i64) - 1;
  sbuf o;
  const char *f;
  va_list ap0;
  va_copy(ap0, ap); /* for vsnprintf(), should a conversion be unknown */
  o.b = buf;
  o.cap = cap;
  o.len = 0;
  for(f = fmt; *f; ) {
    const char *pc = strchr(f, '%');
    if(!pc) {
      sb_puts(&o, f);
      break;
    }
    if(!(pc[1] == 's' || pc[1] == '%' || pc[1] == 'd' ||
         (pc[1] == 'z' && pc[2] == 'u') || !strncmp(pc, i64, ni))) {
      int n = vsnprintf(buf, cap, fmt, ap0); /* from the start */
      va_end(ap0);
      return n < 0 ? 0 : (size_t)n;
    }
    sb_putn(&o, f, (size_t)(pc - f));
    if(pc[1] == 's') {
      const char *x = va_arg(ap, const char *);
      sb_puts(&o, x ? x : "(null)");
      f = pc + 2;
    }
    else if(pc[1] == '%') {
      sb_putn(&o, "%", 1);
      f = pc + 2;
    }
    else if(pc[1] == 'd') {
      sb_puti(&o, va_arg(ap, int));
      f = pc + 2;
    }
    else if(pc[1] == 'z') {
      sb_putu(&o, va_arg(ap, size_t));
      f = pc + 3;
    }
    else {
      sb_puti(&o, va_arg(ap, int64_t));
      f = pc + ni;
    }
  }
  va_end(ap0);
  return sb_end(&o);
}

/* "25h", "1h30m", "15m", "90s" -> "1m30s", "500ms". */
static void fmt_dur(int64_t ms, char *buf, size_t len)
{
  sbuf o;
  uint64_t u, h, m, s;
  o.b = buf;
  o.cap = len;
  o.len = 0;
  if(ms < 0)
    sb_putn(&o, "-", 1);
  u = ms < 0 ? (uint64_t)0 - (uint64_t)ms : (uint64_t)ms;
  if(u < 1000) {
    sb_putu(&o, u);
    sb_putn(&o, "ms", 2);
    sb_end(&o);
    return;
  }
  h = u / 3600000;
  m = (u / 60000) % 60;
  s = (u / 1000) % 60;
  if(h) {
    sb_putu(&o, h);
    sb_putn(&o, "h", 1);
  }
  if(m) {
    sb_putu(&o, m);
    sb_putn(&o, "m", 1);
  }
  if(s || (!h && !m)) {
    sb_putu(&o, s);
    sb_putn(&o, "s", 1);
  }
  if(u % 1000) {
    sb_putu(&o, u % 1000);
    sb_putn(&o, "ms", 2);
  }
  sb_end(&o);
}

static void fmt_time(sc_time t, char *buf, size_t len)
{
  if(!t)
    snprintf(buf, len, "(none)");
  else
    sctime_format_rfc3339(t, buf, len);
}

/* fmt_time() through the planner's small cache */
static void pl_time(planner *pl, sc_time t, char *buf, size_t len)
{
  sbuf o;
  const char *text = NULL;
  unsigned k;
  o.b = buf;
  o.cap = len;
  o.len = 0;
  if(t == pl->in->cube_now)
    text = pl->now_text;
  for(k = 0; !text && k < PL_TIMES; k++)
    if(pl->time_text[k][0] && pl->times[k] == t)
      text = pl->time_text[k];
  if(!text) {
    k = pl->next_time++ % PL_TIMES;
    fmt_time(t, pl->time_text[k], sizeof(pl->time_text[k]));
    pl->times[k] = t;
    text = pl->time_text[k];
  }
  sb_puts(&o, text);
  sb_end(&o);
}

static int64_t timeout_secs(int64_t ms)
{
  return (ms + 999) / 1000;
}

/* the effective values of defaulted fields come from api/session.h, the
 * one place that says what an absent field means */
#define eff_idle session_eff_idle_timeout_ms
#define eff_gen session_eff_generation

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

/* the session's keys, with their defaults */
static const char *rec_ns(const sess_rec *r)
{
  return session_eff_namespace(r->s);
}

static const char *rec_name(const sess_rec *r)
{
  return r->s->meta.name ? r->s->meta.name : "";
}

static const char *rec_sid(const sess_rec *r)
{
  return session_eff_session_id(r->s);
}

static const char *rec_tenant(const sess_rec *r)
{
  return session_eff_tenant_id(r->s);
}

static int64_t rec_idle(const sess_rec *r)
{
  return eff_idle(r->s);
}

static int64_t rec_reclaim(const sess_rec *r)
{
  return session_eff_reclaim_after_ms(r->s);
}

/* The three tags of a sandbox in one pass over its metadata: the same
 * answers as sc_kvlist_get() (keys are unique in an sc_kvlist), touching
 * each key once. */
static void read_tags(const sc_kvlist *md, const char **tenant,
                      const char **sid, const char **mb)
{
  static const char pfx[] = SESSION_TAG_PREFIX;
  const size_t np = sizeof(pfx) - 1;
  size_t i, j;
  for(i = 0; i < md->n; i++) {
    const char *k = md->items[i].key;
    for(j = 0; j < np && k[j] == pfx[j]; j++) /* stops at k's NUL */
      ;
    if(j < np)
      continue;
    /* the first byte after the prefix rules out most names at once */
    if(k[np] == SESSION_TAG_TENANT_ID[np] &&
       streq(k + np, &SESSION_TAG_TENANT_ID[np]))
      *tenant = md->items[i].value;
    else if(k[np] == SESSION_TAG_SESSION_ID[np] &&
            streq(k + np, &SESSION_TAG_SESSION_ID[np]))
      *sid = md->items[i].value;
    else if(k[np] == SESSION_TAG_MANAGED_BY[np] &&
            streq(k + np, &SESSION_TAG_MANAGED_BY[np]))
      *mb = md->items[i].value;
  }
}

/* A tag (text from Cube) as it may stand in a message: control, C1 and
 * bidi characters escaped (lib/sctext.h), "(none)" for NULL. */
#define TAG_SHOWN 136
static const char *tag_shown(char *buf, const char *tag)
{
  return sc_text_escape(buf, TAG_SHOWN, tag ? tag : "(none)");
}

/* The lea.session_uid tag of a sandbox, or NULL. Read from the input,
 * not kept in the sb_rec: only a join asks for it. */
static const char *sb_uid(const planner *pl, const sb_rec *sb)
{
  return sc_kvlist_get(&pl->in->sandboxes[sb->in_idx].metadata,
                       SESSION_TAG_SESSION_UID);
}

/* Rule 12, a sandbox belongs to one object: may session r join sandbox
 * sb? A sandbox carrying another uid was created for an earlier object of
 * the same name: never joined (a link to it is a conflict; by its tags it
 * stays unowned, so the tombstone and orphan rules delete it). A sandbox
 * without the tag was created before the tag existed: it joins through
 * status.sandboxID (by_link), as before, but never by its tags alone,
 * since a new object of an old name has no link and must not inherit it.
 * An object without a uid (a store that sets none) is not checked. */
static bool uid_joins(const planner *pl, const sess_rec *r, const sb_rec *sb,
                      bool by_link)
{
  const char *uid = r->s->meta.uid, *tag;
  if(!uid || !*uid)
    return true;
  tag = sb_uid(pl, sb);
  if(!tag)
    return by_link;
  return !strcmp(tag, uid);
}

/* Does the linked sandbox carry no lea.* tag at all? (Cube dropped its
 * metadata on pause, or it was never ours) */
static bool sb_untagged(const planner *pl, const sb_rec *sb)
{
  const sc_kvlist *md = &pl->in->sandboxes[sb->in_idx].metadata;
  size_t i;
  if(sb->tenant || sb->sid || sb->has_mb)
    return false;
  for(i = 0; i < md->n; i++)
    if(!strncmp(md->items[i].key, SESSION_TAG_PREFIX,
                sizeof(SESSION_TAG_PREFIX) - 1))
      return false;
  return true;
}

/* A link to an untagged sandbox is ours only with its proof (plan.h,
 * "link proofs"): a status writer cannot make it. */
static bool link_proven(const planner *pl, const sess_rec *r)
{
  char want_proof[PLAN_PROOF_LEN + 1];
  if(!pl->cfg->link_key)
    return true;
  if(!r->s->status.sandbox_proof)
    return false;
  plan_link_proof(pl->cfg->link_key, r->s->meta.uid, r->link, want_proof);
  return !strcmp(want_proof, r->s->status.sandbox_proof);
}

/* Memory latency, not instructions, is the cost of reading 100k
 * separately allocated sandboxes: the tags sit two pointer hops away
 * (items array, then key strings). Ask for them a few iterations ahead:
 * first the items arrays, then, once those have arrived, the strings. */
#define PREFETCH_FAR 32
#define PREFETCH_NEAR 16

/* Load one byte at p, for its side effects only. Prefetches alone did
 * not hide the first access to each session and each sandbox: the sample
 * landed on it 24 sessions after its prefetch. Loading one byte of the
 * first allocation of each (the session struct, its status strings, the
 * sandbox's tags) that far ahead made the pass 10-15% faster (paired
 * runs, fourth round): a load, unlike a prefetch here, probably also
 * walks the page table and trains the hardware prefetchers. The input
 * spans over 100 MB of 4 KB pages. The loaded byte is discarded; the
 * volatile keeps the load. */
static inline void touch(const void *p)
{
  (void)*(const volatile unsigned char *)p;
}

static void prefetch_sandbox(const plan_input *in, size_t i)
{
  size_t j;
  if(i + PREFETCH_FAR < in->n_sandboxes) {
    const sc_kvlist *md = &in->sandboxes[i + PREFETCH_FAR].metadata;
    if(md->items && md->n) {
      touch(md->items);
      /* the array's last line: a 48-byte array often spans two */
      __builtin_prefetch((const char *)(md->items + md->n) - 1);
    }
  }
  if(i + PREFETCH_NEAR < in->n_sandboxes) {
    const cube_sandbox *b = &in->sandboxes[i + PREFETCH_NEAR];
    __builtin_prefetch(b->sandbox_id);
    for(j = 0; j < b->metadata.n; j++) {
      __builtin_prefetch(b->metadata.items[j].key);
      __builtin_prefetch(b->metadata.items[j].value);
    }
  }
}

/* ---------- sorting ---------- */

static int rec_cmp(const void *pa, const void *pb)
{
  const sess_rec *a = pa, *b = pb;
  int c;
  if(a->tomb != b->tomb)
    return a->tomb ? 1 : -1;
  if((c = strcmp0(rec_ns(a), rec_ns(b))))
    return c;
  if((c = strcmp0(rec_name(a), rec_name(b))))
    return c;
  if((c = strcmp0(a->s->meta.uid, b->s->meta.uid)))
    return c;
  if((c = strcmp0(a->s->meta.resource_version, b->s->meta.resource_version)))
    return c;
  return a < b ? -1 : a > b; /* both point into recs: input order */
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
static int sb_cmp(const plan_input *in, const sb_rec *sa, const sb_rec *sb)
{
  const cube_sandbox *a = &in->sandboxes[sa->in_idx];
  const cube_sandbox *b = &in->sandboxes[sb->in_idx];
  int c;
  if(sa->h != sb->h)
    return sa->h < sb->h ? -1 : 1;
  if((c = strcmp(a->sandbox_id, b->sandbox_id)))
    return c;
  if(state_rank(a->state) != state_rank(b->state))
    return state_rank(a->state) - state_rank(b->state);
  if(a->metadata.n != b->metadata.n)
    return a->metadata.n > b->metadata.n ? -1 : 1;
  if(a->end_at != b->end_at)
    return a->end_at < b->end_at ? -1 : 1;
  if(a->started_at != b->started_at)
    return a->started_at < b->started_at ? -1 : 1;
  if((c = kv_cmp(&a->metadata, &b->metadata)))
    return c;
  return strcmp0(a->template_id, b->template_id);
}

static int str_cmp(const void *pa, const void *pb)
{
  return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/* The key of a link claim: status.sandboxID (a) and no second part; of
 * a pair claim: (tenant, sessionID). */
static const char *key_a(const planner *pl, bool pair, size_t rec)
{
  return pair ? rec_tenant(&pl->recs[rec]) : pl->recs[rec].link;
}

static const char *key_b(const planner *pl, bool pair, size_t rec)
{
  return pair ? rec_sid(&pl->recs[rec]) : NULL;
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

typedef int (*key_cmp)(const planner *pl, bool pair, const hkey *x,
                       const hkey *y);

/* Sorting by hash. Each comparator above compares the hash first. An LSD
 * radix sort on the top 33 bits of the hash orders the keys, then each
 * run equal in those bits (duplicates and the rare partial collision) is
 * insertion-sorted with the full comparator. The result is what a stable
 * sort by the comparator gives, in O(n) instead of O(n log n) indirect
 * calls, and only 16-byte keys move: records stay where they are. Since
 * the third round only the sessions decided again are sorted this way. */
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
  len = fmt_v(reason, PLAN_REASON_MAX, fmt, ap);
  va_end(ap);
  if(len >= PLAN_REASON_MAX)
    len = PLAN_REASON_MAX - 1;
  p->arena->used += len + 1;
  if(p->n_actions >= pl->sc->cap_act_rec) {
    size_t ncap = pl->cap_actions;
    uint32_t *na = realloc(pl->sc->act_rec, ncap * sizeof(*na));
    if(!na)
      return SC_ERR_NOMEM;
    pl->sc->act_rec = na;
    pl->sc->cap_act_rec = ncap;
  }
  pl->sc->act_rec[p->n_actions] = pl->cur_rec;
  a = &p->actions[p->n_actions];
  memset(a, 0, sizeof(*a));
  p->n_actions++;
  a->type = type;
  a->del_kind = kind;
  a->timeout_s = timeout_s;
  a->cube_now = pl->in->cube_now;
  if(r) {
    a->s = r->s;
    if(!(a->ns = arena_strdup(&p->arena, rec_ns(r))) ||
       !(a->name = arena_strdup(&p->arena, rec_name(r))))
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
  size_t sandbox_id_len;    /* strlen(sandbox_id), when want_sandbox() */
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
  size_t msg3_len[3];       /* strlen() of each */
  bool conflict;            /* Conflict True */
  const char *conflict_reason;
  /* UpToDate: the sandbox runs spec.template (tmpl_ran: the lea.template
   * tag of the session's sandbox; NULL when it has none or no sandbox) */
  const char *tmpl_ran;
  bool tmpl_stale;          /* tmpl_ran differs from spec.template */
  const char *proof;        /* status.sandboxProof (link proofs) */
  /* the buffers last: want_from_old() clears only what comes before */
  char ready_msg[320];
  char conflict_msg[320];
  char proof_buf[PLAN_PROOF_LEN + 1];
} want;

/* session_status_get_condition(), with the short type names compared
 * inline: it runs twice for every session */
static const session_condition *get_cond(const session_status *st,
                                         const char *type)
{
  size_t i;
  for(i = 0; i < st->n_conditions; i++)
    if(streq0(st->conditions[i].type, type))
      return &st->conditions[i];
  return NULL;
}

/* st's condition of this type when all but its message already say
 * this, else NULL: the test of set_cond()'s early return */
static const session_condition *cond_match(const session_status *st,
                                           const char *type,
                                           const char *status,
                                           const char *reason, int64_t gen)
{
  const session_condition *o = get_cond(st, type);
  if(o && o->observed_generation == gen && o->last_transition_time &&
     streq0(o->status, status) && streq0(o->reason, reason))
    return o;
  return NULL;
}

/* Would set_cond() change st? */
static bool cond_differs(const session_status *st, const char *type,
                         const char *status, const char *reason,
                         const char *msg, int64_t gen)
{
  const session_condition *o = cond_match(st, type, status, reason, gen);
  return !(o && sc_str_eq0(o->message, msg));
}

/* Does m equal what cat3(buf, cap, x[0], x[1], x[2]) would write? len[]
 * holds strlen(x[i]). Lengths first, then memcmp. */
static inline bool cat3_eq(const char *m, size_t cap, const char *const *x,
                           const size_t *len)
{
  size_t n[3], left = cap - 1, i;
  if(!m)
    return false;
  for(i = 0; i < 3; i++) {
    n[i] = len[i] < left ? len[i] : left; /* cat3() cuts at cap - 1 */
    left -= n[i];
  }
  return strlen(m) == n[0] + n[1] + n[2] && !memcmp(m, x[0], n[0]) &&
         !memcmp(m + n[0], x[1], n[1]) &&
         !memcmp(m + n[0] + n[1], x[2], n[2]);
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
  if(sc_str_eq0(*dst, src))
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

/* Ready with the message "sandbox <w->sandbox_id><tail>", built only if
 * needed */
static void want_sandbox_msg(struct want *w, const char *status,
                             const char *reason, const char *tail)
{
  w->ready_status = status;
  w->ready_reason = reason;
  w->lazy = true;
  w->msg3[0] = MSG_SANDBOX;
  w->msg3[1] = w->sandbox_id; /* set by want_sandbox() */
  w->msg3[2] = tail;
  w->msg3_len[0] = sizeof(MSG_SANDBOX) - 1;
  w->msg3_len[1] = w->sandbox_id_len;
  w->msg3_len[2] = strlen(tail); /* a constant: folded */
}

static void msg_reclaimed(char *b, size_t n, int64_t rg)
{
  snprintf(b, n,
           "sandbox reclaimed at generation %" PRId64
           "; bump spec.wake for a new one", rg);
}

static const char msg_ended[] = "spec.state Ended: no sandbox left";

/* The UpToDate condition: a spec.template changed on a live session
 * cannot reach its running sandbox (Cube has no call for it); it applies
 * to the next sandbox, after a reclaim and a wake or once the sandbox is
 * gone. Said in a condition, never silently. Once set, it is kept up to
 * date (True when the sandbox runs spec.template again). */
#define MSG_UPTODATE "the sandbox runs spec.template"

static void uptodate_msg(const session *s, const want *w, char *b, size_t n)
{
  snprintf(b, n, "spec.template is %s but sandbox %s was created from %s: "
           "the new template applies to the next sandbox (after a reclaim "
           "and a wake, or once this one is gone)",
           s->spec.template_id ? s->spec.template_id : "(none)",
           w->sandbox_id ? w->sandbox_id : "(none)", w->tmpl_ran);
}

static bool uptodate_differs(const session *s, const want *w, int64_t og)
{
  char m[400];
  if(w->tmpl_stale) {
    uptodate_msg(s, w, m, sizeof(m));
    return cond_differs(&s->status, "UpToDate", "False", "TemplateChanged",
                        m, og);
  }
  return get_cond(&s->status, "UpToDate") &&
         cond_differs(&s->status, "UpToDate", "True", "UpToDate",
                      MSG_UPTODATE, og);
}

static sc_err apply_uptodate(const session *s, const want *w, int64_t og,
                             sc_time now, session_status *st)
{
  char m[400];
  if(w->tmpl_stale) {
    uptodate_msg(s, w, m, sizeof(m));
    return set_cond(st, "UpToDate", "False", "TemplateChanged", m, og, now);
  }
  if(session_status_get_condition(st, "UpToDate"))
    return set_cond(st, "UpToDate", "True", "UpToDate", MSG_UPTODATE, og,
                    now);
  return SC_OK;
}

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
     (err = set_str(&st->sandbox_proof, w->sandbox_id ? w->proof : NULL)) ||
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
  if(!err)
    err = apply_uptodate(s, w, og, now, st);
  return err;
}

/* Would apply_want() change anything in s->status? Mirrors it step by
 * step without writing, so an unchanged status is never copied. */
static bool want_differs(const session *s, const want *w)
{
  const session_status *st = &s->status;
  int64_t og = s->meta.generation;
  if(st->phase != w->phase || !sc_str_eq0(st->sandbox_id, w->sandbox_id) ||
     !sc_str_eq0(st->sandbox_proof, w->sandbox_id ? w->proof : NULL) ||
     !streq0(st->sandbox_state, w->sandbox_state) ||
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
    if(w->lazy ? !cat3_eq(o->message, sizeof(w->ready_msg), w->msg3,
                          w->msg3_len)
               : !sc_str_eq0(o->message, w->ready_msg))
      return true;
  }
  if(uptodate_differs(s, w, og))
    return true;
  if(w->conflict)
    return cond_differs(st, "Conflict", "True", w->conflict_reason,
                        w->conflict_msg, og);
  return get_cond(st, "Conflict") &&
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
  w->proof = o->sandbox_proof;
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
  fmt_v(w->ready_msg, sizeof(w->ready_msg), fmt, ap);
  va_end(ap);
}

/* linked: sb is the one status.sandboxID names (the join compared the
 * strings already, so the status's own copy of the ID can stand in for
 * sb->id, which saves a cache miss per session). */
static void want_sandbox(want *w, const sess_rec *r, const sb_rec *sb,
                         bool linked)
{
  const session *s = r->s;
  const session_status *o = &s->status;
  bool same = linked || sc_str_eq0(o->sandbox_id, sb->id);
  w->sandbox_id = linked ? o->sandbox_id : sb->id;
  w->sandbox_id_len = linked ? r->link_len : strlen(sb->id);
  if(!same)
    w->proof = NULL; /* another sandbox: its proof, if any, is made anew */
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
  w->proof = NULL;
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
  return sb->state == CUBE_SB_PAUSED && rec_reclaim(r) > 0 &&
         sb->end_at != 0 && now != 0 &&
         now - sb->end_at >= rec_reclaim(r);
}

static sc_err add_reclaim(planner *pl, const sess_rec *r, const sb_rec *sb)
{
  char te[SCTIME_RFC3339_MAX], tn[SCTIME_RFC3339_MAX], age[32], ra[32];
  sc_err err;
  pl_time(pl, sb->end_at, te, sizeof(te));
  pl_time(pl, pl->in->cube_now, tn, sizeof(tn));
  fmt_dur(pl->in->cube_now - sb->end_at, age, sizeof(age));
  fmt_dur(rec_reclaim(r), ra, sizeof(ra));
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
    size_t k = pl->sc->sblist[r->sb_first + i];
    const sb_rec *b = &pl->sbs[k], *w;
    if(best == SIZE_MAX) {
      best = k;
      continue;
    }
    w = &pl->sbs[best];
    sc_time bs = pl->in->sandboxes[b->in_idx].started_at;
    sc_time ws = pl->in->sandboxes[w->in_idx].started_at;
    if(bs != ws) {
      if(!ws || (bs && bs < ws))
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
  if(r->tomb) /* only the tombstone's reason says when */
    pl_time(pl, s->meta.deletion_timestamp, td, sizeof(td));
  for(i = 0; i < r->sb_n; i++) {
    const sb_rec *sb = &pl->sbs[pl->sc->sblist[r->sb_first + i]];
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
               (size_t)r->sb_n, r->ls == LS_CONFIRM ? ", confirming the linked one"
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
  if(pl->cfg->identity && sc_str_eq0(st->create_intent_by, pl->cfg->identity))
    return false; /* our own claim: our last attempt failed, try again */
  return now - st->create_intent_at < pl->cfg->create_intent_ttl_ms;
}

/* The executor recorded that Cube refused this generation's create for
 * good (Ready=False/CreateFailed at the current generation). */
static bool create_refused_now(const session *s)
{
  const session_condition *c = get_cond(&s->status, "Ready");
  return c && streq0(c->reason, "CreateFailed") &&
         c->observed_generation == s->meta.generation;
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
    size_t k = pl->sc->sblist[r->sb_first + i];
    if(k == wi)
      continue;
    err = add_action(pl, PLAN_DELETE, PLAN_DEL_DUPLICATE, r, &pl->sbs[k], 0,
                     "session has %zu sandboxes; keeping %s (%s): delete "
                     "duplicate %s",
                     (size_t)r->sb_n, pl->sbs[wi].id,
                     r->ls == LS_OWNED ? "status.sandboxID"
                                       : "oldest startedAt, then lowest ID",
                     pl->sbs[k].id);
    if(err)
      return err;
  }

  if(wi != SIZE_MAX) {
    w->tmpl_ran = sc_kvlist_get(
      &pl->in->sandboxes[pl->sbs[wi].in_idx].metadata, SESSION_TAG_TEMPLATE);
    w->tmpl_stale = w->tmpl_ran && s->spec.template_id &&
                    strcmp(w->tmpl_ran, s->spec.template_id);
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
      pl_time(pl, s->status.create_intent_at, ta, sizeof(ta));
      want_ready(w, "False", "Creating",
                 "waiting for the create claimed by %s at %s (Cube's clock)",
                 s->status.create_intent_by ? s->status.create_intent_by
                                            : "(unnamed)", ta);
      if(!*due || until < *due)
        *due = until;
      return SC_OK;
    }
    if(create_refused_now(s))
      /* Cube refused this generation's create for good: keep saying so
       * (phase Failed, Ready CreateFailed with Cube's answer) while the
       * executor tries again once per resync; a success or a new
       * generation replaces it */
      w->phase = SESSION_PHASE_FAILED;
    else {
      w->phase = SESSION_PHASE_CREATING;
      want_ready(w, "False", "Creating",
                 "creating a sandbox from template %s", s->spec.template_id);
    }
    return add_action(pl, PLAN_CREATE, PLAN_DEL_NONE, r, NULL,
                      timeout_secs(rec_idle(r)),
                      "no sandbox for session %s/%s (state %s%s%s): create "
                      "from template %s with timeout %" PRId64 "s",
                      rec_ns(r), rec_name(r), session_state_name(state),
                      r->ls == LS_GONE ? ", linked sandbox " : "",
                      r->ls == LS_GONE ? "confirmed gone" : "",
                      s->spec.template_id, timeout_secs(rec_idle(r)));
  }

  sb = &pl->sbs[wi];
  want_sandbox(w, r, sb, r->ls == LS_OWNED && wi == r->link_sb);
  if(pl->cfg->link_key && !w->proof && sb->ours) {
    /* tagged ours: the evidence of now, kept for when Cube drops it */
    plan_link_proof(pl->cfg->link_key, s->meta.uid, sb->id, w->proof_buf);
    w->proof = w->proof_buf;
  }
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
    want_sandbox_msg(w, "True", "SandboxRunning", MSG_RUNNING);
    if(w->applied_idle_timeout_ms != rec_idle(r)) {
      char ni[32], oi[32];
      fmt_dur(rec_idle(r), ni, sizeof(ni));
      fmt_dur(w->applied_idle_timeout_ms, oi, sizeof(oi));
      if(state == SESSION_STATE_RUNNING && sb->end_at)
        *due = sb->end_at - rec_idle(r) / 2;
      return add_action(pl, PLAN_SET_TIMEOUT, PLAN_DEL_NONE, r, sb,
                        timeout_secs(rec_idle(r)),
                        "idleTimeout is %s but %s was applied to sandbox "
                        "%s: set its timeout to %" PRId64 "s",
                        ni, w->applied_idle_timeout_ms ? oi : "none known",
                        sb->id, timeout_secs(rec_idle(r)));
    }
    if(state == SESSION_STATE_RUNNING && sb->end_at) {
      sc_time at = sb->end_at - rec_idle(r) / 2;
      *due = at;
      if(now && now >= at) {
        char te[SCTIME_RFC3339_MAX], tn[SCTIME_RFC3339_MAX], hi[32];
        pl_time(pl, sb->end_at, te, sizeof(te));
        pl_time(pl, now, tn, sizeof(tn));
        fmt_dur(rec_idle(r) / 2, hi, sizeof(hi));
        return add_action(pl, PLAN_KEEPALIVE, PLAN_DEL_NONE, r, sb,
                          timeout_secs(rec_idle(r)),
                          "spec.state Running: sandbox %s would idle out at "
                          "endAt %s (now %s, within idleTimeout/2 = %s): "
                          "extend by %" PRId64 "s",
                          sb->id, te, tn, hi,
                          timeout_secs(rec_idle(r)));
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
                        timeout_secs(rec_idle(r)),
                        "spec.state Running and sandbox %s is %s: resume "
                        "with timeout %" PRId64 "s",
                        sb->id, cube_sb_state_name(sb->state),
                        timeout_secs(rec_idle(r)));
    }
    if(state == SESSION_STATE_ACTIVE && w->paused_by_controller &&
       sb->state == CUBE_SB_PAUSED) {
      want_ready(w, "False", "Resuming",
                 "resuming sandbox %s: the controller paused it and "
                 "spec.state is Active again", sb->id);
      return add_action(pl, PLAN_RESUME, PLAN_DEL_NONE, r, sb,
                        timeout_secs(rec_idle(r)),
                        "sandbox %s was paused by the controller and "
                        "spec.state is Active again: resume with timeout "
                        "%" PRId64 "s",
                        sb->id, timeout_secs(rec_idle(r)));
    }
    if(state == SESSION_STATE_ACTIVE && w->paused_by_controller)
      want_ready(w, "False", "Resuming",
                 "sandbox %s is pausing; it is resumed once paused",
                 sb->id);
    else if(state == SESSION_STATE_PAUSED) {
      want_sandbox_msg(w, "True", "SandboxPaused", MSG_PAUSED);
    }
    else {
      want_sandbox_msg(w, "True", "IdlePaused", MSG_IDLE);
    }
    if(reclaim_due(pl, r, sb))
      return add_reclaim(pl, r, sb);
    if(sb->state == CUBE_SB_PAUSED && rec_reclaim(r) > 0 && sb->end_at)
      *due = sb->end_at + rec_reclaim(r);
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

static sc_err plan_session_one(planner *pl, sess_rec *r)
{
  const session *s = r->s;
  plan_session *ps = &pl->p->sessions[r - pl->recs];
  want w;
  sc_err err;
  sc_time due = 0;
  bool blocked;
  const char *invalid;

  want_from_old(s, &w);
  /* conflicts (rule 5 and the ambiguous joins) */
  if(r->ls == LS_CONFLICT_TENANT) {
    const sb_rec *sb = &pl->sbs[r->link_sb];
    char t1[TAG_SHOWN];
    w.conflict = true;
    w.conflict_reason = "TenantMismatch";
    snprintf(w.conflict_msg, sizeof(w.conflict_msg),
             "status.sandboxID %s carries tenant tag %s, not %s: it is "
             "never adopted, paused, resumed or deleted for this session",
             sb->id, tag_shown(t1, sb->tenant), rec_tenant(r));
  }
  else if(r->ls == LS_CONFLICT_SB) {
    const sb_rec *sb = &pl->sbs[r->link_sb];
    const char *mb = sc_kvlist_get(&pl->in->sandboxes[sb->in_idx].metadata,
                                   SESSION_TAG_MANAGED_BY);
    const char *uid = sb_uid(pl, sb);
    char t1[TAG_SHOWN], t2[TAG_SHOWN];
    w.conflict = true;
    w.conflict_reason = "SandboxMismatch";
    if(sb_untagged(pl, sb))
      snprintf(w.conflict_msg, sizeof(w.conflict_msg),
               "status.sandboxID %s carries no lea.* tags and "
               "status.sandboxProof does not prove that this controller "
               "linked it to this object: it is never paused, resumed or "
               "deleted for this session", sb->id);
    else if(!uid_joins(pl, r, sb, true))
      snprintf(w.conflict_msg, sizeof(w.conflict_msg),
               "status.sandboxID %s was created for another object of this "
               "name (uid %s, this object is %s): it is never adopted, "
               "paused, resumed or deleted for this session", sb->id,
               tag_shown(t1, uid), s->meta.uid);
    else
      snprintf(w.conflict_msg, sizeof(w.conflict_msg),
               "status.sandboxID %s carries tags of another owner "
               "(session %s, managed-by %s)", sb->id, tag_shown(t1, sb->sid),
               tag_shown(t2, mb));
  }
  else if(r->ls == LS_CLAIMED) {
    const sess_rec *o = &pl->recs[r->other_link];
    w.conflict = true;
    w.conflict_reason = "SandboxClaimed";
    snprintf(w.conflict_msg, sizeof(w.conflict_msg),
             "status.sandboxID %s is also recorded by session %s/%s",
             r->link, rec_ns(o), rec_name(o));
  }
  else if(r->unbound) {
    w.conflict = true;
    w.conflict_reason = "TenantNotNamespace";
    snprintf(w.conflict_msg, sizeof(w.conflict_msg),
             "spec.tenantID %s is not the namespace %s: a session acts only "
             "for the tenant of its namespace (--tenant-binding namespace)",
             rec_tenant(r), rec_ns(r));
  }
  else if(r->pair_conflict) {
    const sess_rec *o = &pl->recs[r->other_pair];
    w.conflict = true;
    w.conflict_reason = "SessionIDInUse";
    snprintf(w.conflict_msg, sizeof(w.conflict_msg),
             "tenant %s sessionID %s is already used by session %s/%s",
             rec_tenant(r), rec_sid(r), rec_ns(o), rec_name(o));
  }
  blocked = w.conflict;
  invalid = pl->in->invalid ? pl->in->invalid[r - pl->recs] : NULL;

  if(is_ended(s))
    err = plan_ended(pl, r, &w);
  else if(invalid) {
    /* written straight to the store past sessionctl's checks: the same
     * rules hold here, and nothing is done for it until it is valid */
    w.phase = SESSION_PHASE_FAILED;
    want_ready(&w, "False", "InvalidSpec", "%s", invalid);
    err = SC_OK;
  }
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

/* Is an orphan of this tenant held, an object of it undecodable? */
static bool tenant_held(const planner *pl, const char *tenant)
{
  size_t i;
  if(!pl->in->n_hold_tenants)
    return false;
  if(!tenant)
    return true;
  for(i = 0; i < pl->in->n_hold_tenants; i++)
    if(streq0(pl->in->hold_tenants[i], tenant))
      return true;
  return false;
}

static sc_err plan_orphans(planner *pl)
{
  size_t i, first = pl->p->n_actions;
  sc_time now = pl->in->cube_now;
  plan *p = pl->p;
  sc_err err;
  char g[32];
  fmt_dur(pl->cfg->orphan_grace_ms, g, sizeof(g));
  for(i = 0; i < pl->n_unlinked; i++) {
    sb_rec *sb = &pl->sbs[pl->sc->unlinked[i]];
    sc_time at;
    if(sb->owner != NONE32)
      continue; /* taken by its tags */
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
    if(tenant_held(pl, sb->tenant))
      continue; /* its session may be an object the store could not read */
    {
      char te[SCTIME_RFC3339_MAX], tn[SCTIME_RFC3339_MAX], age[32];
      char t1[TAG_SHOWN], t2[TAG_SHOWN];
      plan_action *a;
      pl_time(pl, sb->end_at, te, sizeof(te));
      pl_time(pl, now, tn, sizeof(tn));
      fmt_dur(now - sb->end_at, age, sizeof(age));
      err = add_action(pl, PLAN_DELETE, PLAN_DEL_ORPHAN, NULL, sb, 0,
                       "orphan: no session or tombstone for tenant %s "
                       "session %s and no status links it; paused for %s by "
                       "Cube's clock (endAt %s, now %s) >= orphan grace %s",
                       tag_shown(t1, sb->tenant), tag_shown(t2, sb->sid),
                       age, te, tn, g);
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

/* Sorting the actions (15,000 at 100k sessions) with qsort() made every
 * comparison read two actions and their strings in the arena, at random.
 * Each action gets a key instead: orphan or not, then the first 32 bytes
 * of its strings as action_cmp() compares them (namespace, NUL, name; an
 * orphan has neither, so its ID) in four big-endian words, so that
 * comparing keys compares those bytes; equal keys fall back to
 * action_cmp(). A stable merge sort of the keys then gives the order
 * qsort() (glibc's, a stable merge sort) gave. */
#define AKEY_WORDS 4

typedef struct akey {
  uint32_t orphan;      /* orphans last */
  uint32_t i;           /* index in p->actions */
  uint64_t k[AKEY_WORDS];
} akey;

/* a big-endian load: comparing such words compares their bytes in order */
static inline uint64_t load_be64(const unsigned char *b)
{
  uint64_t v;
  memcpy(&v, b, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  v = __builtin_bswap64(v);
#elif !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_BIG_ENDIAN__
  {
    size_t j;
    v = 0;
    for(j = 0; j < 8; j++)
      v = v << 8 | b[j];
  }
#endif
  return v;
}

/* the bytes of a, a NUL, then b (NULL counts as ""), zero-padded */
static void akey_make(akey *key, const char *a, const char *b)
{
  unsigned char buf[AKEY_WORDS * 8];
  const size_t n = sizeof(buf);
  size_t la = a ? strlen(a) : 0, w;
  memset(buf, 0, n);
  if(la >= n)
    memcpy(buf, a, n);
  else {
    if(la)
      memcpy(buf, a, la);
    if(b && la + 1 < n) { /* after a and its NUL */
      size_t lb = strlen(b);
      memcpy(buf + la + 1, b, lb < n - la - 1 ? lb : n - la - 1);
    }
  }
  for(w = 0; w < AKEY_WORDS; w++)
    key->k[w] = load_be64(buf + 8 * w);
}

static int akey_cmp(const plan *p, const akey *a, const akey *b)
{
  size_t w;
  if(a->orphan != b->orphan)
    return a->orphan ? 1 : -1;
  for(w = 0; w < AKEY_WORDS; w++)
    if(a->k[w] != b->k[w])
      return a->k[w] < b->k[w] ? -1 : 1;
  return action_cmp(&p->actions[a->i], &p->actions[b->i]);
}

/* stable: from[] (n keys) sorted into to[] (tmp is n more) */
static void akey_sort(const plan *p, akey *v, akey *tmp, size_t n)
{
  size_t i, j, width, lo;
  akey *from = v, *to = tmp, *t;
  for(lo = 0; lo < n; lo += 8) { /* insertion sort of runs of 8 */
    size_t hi = lo + 8 < n ? lo + 8 : n;
    for(i = lo + 1; i < hi; i++) {
      akey x = v[i];
      for(j = i; j > lo && akey_cmp(p, &v[j - 1], &x) > 0; j--)
        v[j] = v[j - 1];
      v[j] = x;
    }
  }
  for(width = 8; width < n; width *= 2) {
    for(lo = 0; lo < n; lo += 2 * width) {
      size_t mid = lo + width < n ? lo + width : n;
      size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      size_t a = lo, b = mid, o = lo;
      while(a < mid && b < hi)
        to[o++] = akey_cmp(p, &from[b], &from[a]) < 0 ? from[b++]
                                                      : from[a++];
      while(a < mid)
        to[o++] = from[a++];
      while(b < hi)
        to[o++] = from[b++];
    }
    t = from;
    from = to;
    to = t;
  }
  if(from != v)
    memcpy(v, from, n * sizeof(*v));
}

/* the actions in action_cmp() order; keys: room for 2 * n_actions */
static void sort_actions(plan *p, akey *keys)
{
  size_t n = p->n_actions, i, j;
  if(n < 2)
    return;
  for(i = 0; i < n; i++) {
    const plan_action *a = &p->actions[i];
    keys[i].orphan = a->del_kind == PLAN_DEL_ORPHAN;
    if(keys[i].orphan) /* no namespace, no name: the ID decides */
      akey_make(&keys[i], a->sandbox_id, NULL);
    else
      akey_make(&keys[i], a->ns, a->name);
    keys[i].i = (uint32_t)i;
  }
  akey_sort(p, keys, keys + n, n);
  /* in place: position j gets the action at keys[j].i; each cycle of
   * the permutation is walked once, and keys[j].i = j marks j done */
  for(i = 0; i < n; i++) {
    plan_action first;
    if(keys[i].i == i)
      continue;
    first = p->actions[i];
    for(j = i; keys[j].i != i; ) {
      size_t src = keys[j].i;
      p->actions[j] = p->actions[src];
      keys[j].i = (uint32_t)j;
      j = src;
    }
    p->actions[j] = first;
    keys[j].i = (uint32_t)j;
  }
}

/* ---------- the join, in one pass ---------- */

/* How the join works (docs/planner.md, "Third round", "Fourth round").
 * The sandboxes are read first, in input order, into records and a hash
 * table by ID. Then one pass over the sessions, in input order, joins
 * each session and decides it at once, while its struct and strings are
 * in the cache; each session also goes into a table by (tenant,
 * sessionID). That pass guesses that the session is the only one linking
 * its sandbox, the only one with its (tenant, sessionID), and that none
 * of our sandboxes that no session links carries its tags. A later
 * session that links the same sandbox or has the same (tenant,
 * sessionID) hash proves a guess wrong; after the pass, find_loose()
 * hashes the tags of our unlinked sandboxes and finds the sessions whose
 * tags they carry. The sessions involved are marked "redo": their
 * actions and statuses are dropped, the claims are sorted out exactly
 * (rec_cmp, claim_cmp: the same priorities as ever), they take their
 * unlinked sandboxes by tags, and they are decided again. Sessions not
 * marked depend on nothing another session can change, so the plan is
 * the one the full join gives, whatever the input order. */

/* malloc'd room for need items of size (the old content is not kept) */
static void *reserve(void *old, size_t *cap, size_t need, size_t size)
{
  void *n;
  if(need < 1)
    need = 1;
  if(old && need <= *cap)
    return old;
  free(old);
  *cap = 0;
  if(need > SIZE_MAX / size / 2)
    return NULL;
  need += need / 8; /* a little room for the next pass */
  if(!(n = malloc(need * size)))
    return NULL;
  *cap = need;
  return n;
}

/* the same, 64-byte aligned (records of one cache line) */
static void *reserve_aligned(void *old, size_t *cap, size_t need,
                             size_t size)
{
  void *n = NULL;
  if(need < 1)
    need = 1;
  if(old && need <= *cap)
    return old;
  free(old);
  *cap = 0;
  if(need > SIZE_MAX / size / 2)
    return NULL;
  need += need / 8;
  if(posix_memalign(&n, 64, need * size))
    return NULL;
  *cap = need;
  return n;
}

/* append x to a growing uint32 array */
static sc_err push32(uint32_t **v, size_t *cap, size_t n, uint32_t x)
{
  if(n == *cap) {
    size_t ncap = *cap ? *cap * 2 : 64;
    uint32_t *nv = realloc(*v, ncap * sizeof(*nv));
    if(!nv)
      return SC_ERR_NOMEM;
    *v = nv;
    *cap = ncap;
  }
  (*v)[n] = x;
  return SC_OK;
}

static size_t table_slots(size_t n)
{
  size_t m = 16;
  while(m < 2 * n)
    m <<= 1;
  return m;
}

static sc_err push_sb(planner *pl, sess_rec *r, uint32_t k)
{
  sc_err err = push32(&pl->sc->sblist, &pl->sc->cap_sblist, pl->n_sblist, k);
  if(err)
    return err;
  pl->n_sblist++;
  r->sb_n++;
  return SC_OK;
}

static sc_err mark_redo(planner *pl, uint32_t i)
{
  sc_err err;
  if(pl->recs[i].redo)
    return SC_OK;
  if((err = push32(&pl->sc->redo, &pl->sc->cap_redo, pl->n_redo, i)))
    return err;
  pl->n_redo++;
  pl->recs[i].redo = true;
  return SC_OK;
}

/* the sandbox with this ID (exactly), or NONE32 */
static uint32_t id_find(const planner *pl, uint64_t h, const char *id)
{
  const hslot *t = pl->sc->ids;
  uint32_t tag = (uint32_t)(h >> 32);
  size_t pos;
  for(pos = h & pl->sbmask;; pos = (pos + 1) & pl->sbmask) {
    const hslot *e = &t[pos];
    if(e->idx == NONE32)
      return NONE32;
    if(e->tag == tag && pl->sbs[e->idx].h == h &&
       !strcmp(pl->sbs[e->idx].id, id))
      return e->idx;
  }
}

static void sb_dup(planner *pl, sb_rec *sb)
{
  sb->dup = true;
  if(sb->ours)
    pl->p->n_managed--;
  sb->ours = false;
  sb->has_pair = false;
}

/* The sandboxes, in input order: records, then the ID table (one record
 * per ID: the first in sb_cmp order), filled in a pass of its own over
 * the records, asking for each slot a few records ahead: a slot is a
 * cache miss (a 2 MB table at 100k). The tags are not hashed here: only
 * a sandbox no session links can be taken by its tags (find_loose). */
#define AHEAD_SLOT 16

static void read_sandboxes(planner *pl)
{
  const plan_input *in = pl->in;
  hslot *t = pl->sc->ids;
  size_t i, pos, n;
  for(i = 0; i < in->n_sandboxes; i++) {
    const cube_sandbox *b = &in->sandboxes[i];
    sb_rec *sb;
    const char *mb;
    prefetch_sandbox(in, i);
    if(!b->sandbox_id || !*b->sandbox_id)
      continue; /* nothing can be done to a sandbox without an ID */
    sb = &pl->sbs[pl->n_sbs++];
    sb->h = hash_fin(hash_strn(HASH_INIT, b->sandbox_id,
                               strlen(b->sandbox_id)));
    sb->in_idx = (uint32_t)i;
    sb->id = b->sandbox_id;
    sb->state = b->state;
    sb->end_at = b->end_at;
    sb->tenant = sb->sid = mb = NULL;
    read_tags(&b->metadata, &sb->tenant, &sb->sid, &mb);
    sb->has_mb = mb != NULL;
    sb->ours = mb && (!strcmp(mb, pl->cname) ||
                      (pl->cfg->n_adopted_names &&
                       plan_config_owns(pl->cfg, mb)));
    sb->has_pair = sb->ours && sb->tenant && sb->sid;
    sb->hpair = 0; /* hashed only if no session links it (find_loose) */
    sb->owner = NONE32;
    sb->dup = false;
    pl->links[pl->n_sbs - 1].first = NONE32;
    pl->links[pl->n_sbs - 1].n = 0;
    pl->links[pl->n_sbs - 1].resolved = 0;
    if(sb->ours)
      pl->p->n_managed++; /* less the duplicate reports */
  }
  n = pl->n_sbs;
  for(i = 0; i < n; i++) {
    sb_rec *sb = &pl->sbs[i];
    uint32_t tag = (uint32_t)(sb->h >> 32);
    if(i + AHEAD_SLOT < n)
      __builtin_prefetch(&t[pl->sbs[i + AHEAD_SLOT].h & pl->sbmask], 1);
    for(pos = sb->h & pl->sbmask;; pos = (pos + 1) & pl->sbmask) {
      hslot *e = &t[pos];
      if(e->idx == NONE32) {
        e->tag = tag;
        e->idx = (uint32_t)i;
        break;
      }
      if(e->tag == tag && pl->sbs[e->idx].h == sb->h &&
         !strcmp(pl->sbs[e->idx].id, sb->id)) {
        /* reported twice: keep the first in sb_cmp order (on a tie, the
         * first in input order: the two are alike then) */
        sb_rec *o = &pl->sbs[e->idx];
        if(sb_cmp(in, sb, o) < 0) {
          sb_dup(pl, o);
          e->idx = (uint32_t)i;
        }
        else
          sb_dup(pl, sb);
        break;
      }
    }
  }
}

/* Is the linked sandbox's tags' word against the session's? */
static uint8_t link_tags(const planner *pl, const sess_rec *r,
                         const sb_rec *sb)
{
  if(sb_untagged(pl, sb))
    return link_proven(pl, r) ? LS_OWNED : LS_CONFLICT_SB;
  if(sb->tenant && strcmp(sb->tenant, rec_tenant(r)))
    return LS_CONFLICT_TENANT;
  if((sb->sid && rec_sid(r) && strcmp(sb->sid, rec_sid(r))) ||
     (sb->has_mb && !sb->ours) || !uid_joins(pl, r, sb, true))
    return LS_CONFLICT_SB;
  return LS_OWNED;
}

/* Add session i to the pairs table (sessions by (tenant, sessionID));
 * a session already there with the same hash shares i's pair, so both
 * are decided again once every claim is known. */
static sc_err add_pair(planner *pl, uint32_t i)
{
  const sess_rec *r = &pl->recs[i];
  hslot *t = pl->sc->pairs;
  uint32_t tag = (uint32_t)(r->hpair >> 32);
  size_t pos;
  sc_err err;
  for(pos = r->hpair & pl->pmask;; pos = (pos + 1) & pl->pmask) {
    hslot *e = &t[pos];
    if(e->idx == NONE32) {
      e->tag = tag;
      e->idx = i;
      return SC_OK;
    }
    if(e->tag == tag && pl->recs[e->idx].hpair == r->hpair &&
       ((err = mark_redo(pl, e->idx)) || (err = mark_redo(pl, i))))
      return err;
  }
}

/* Session i takes (becomes the owner of) our unlinked sandboxes that
 * carry its (tenant, sessionID) tags: the loose table (find_loose). */
static sc_err take_loose(planner *pl, uint32_t i)
{
  sess_rec *r = &pl->recs[i];
  const hslot *t = pl->sc->loose;
  uint32_t tag = (uint32_t)(r->hpair >> 32);
  size_t pos;
  sc_err err;
  if(!pl->n_loose)
    return SC_OK;
  for(pos = r->hpair & pl->lmask; t[pos].idx != NONE32;
      pos = (pos + 1) & pl->lmask) {
    sb_rec *sb = &pl->sbs[t[pos].idx];
    if(t[pos].tag != tag || sb->hpair != r->hpair ||
       strcmp(sb->tenant, rec_tenant(r)) || strcmp(sb->sid, rec_sid(r)) ||
       !uid_joins(pl, r, sb, false))
      continue;
    sb->owner = i;
    r->attached = true;
    if((err = push_sb(pl, r, t[pos].idx)))
      return err;
  }
  return SC_OK;
}

/* Join session i, guessing as above; wrong guesses mark "redo". */
static sc_err join_session(planner *pl, uint32_t i)
{
  sess_rec *r = &pl->recs[i];
  uint32_t k = NONE32;
  sc_err err;
  r->ls = LS_NONE;
  r->link_sb = NONE32;
  r->other_link = r->other_pair = r->next_claim = NONE32;
  r->pair_conflict = r->pair_loser = r->attached = false;
  r->sb_first = (uint32_t)pl->n_sblist;
  r->sb_n = 0;
  if(r->link) {
    k = id_find(pl, r->hlink, r->link);
    if(k == NONE32)
      r->ls = is_gone(pl, r->link) ? LS_GONE : LS_CONFIRM;
    else {
      const sb_rec *sb = &pl->sbs[k];
      sb_links *l = &pl->links[k];
      if(l->n) { /* linked twice: every claimant again */
        uint32_t q;
        for(q = l->first; q != NONE32; q = pl->recs[q].next_claim)
          if((err = mark_redo(pl, q)))
            return err;
        if((err = mark_redo(pl, i)))
          return err;
      }
      r->link_sb = k;
      r->next_claim = l->first;
      l->first = i;
      if(l->n < UINT8_MAX)
        l->n++;
      r->ls = link_tags(pl, r, sb);
      if(r->ls == LS_OWNED && (err = push_sb(pl, r, k)))
        return err;
    }
  }
  if(r->has_pair && (err = add_pair(pl, i)))
    return err;
  return SC_OK;
}

/* ---------- the session pass's pipeline ---------- */

/* Memory latency is the cost at 100k sessions, so each session is asked
 * for in stages ahead of its turn: the struct's first line (prefetched),
 * then the struct (a byte loaded, the rest prefetched), then its strings,
 * then (hashed) the table slots, then the linked sandbox's record, then
 * that record's strings. */
#define AHEAD_FIRST 40
#define AHEAD_STRUCT 24
#define AHEAD_STRINGS 16
#define AHEAD_HASH 10
#define AHEAD_SB 5
#define AHEAD_SBSTR 2

static void ahead_struct(const planner *pl, size_t j)
{
  const char *s = (const char *)pl->in->sessions[j];
  touch(s);
  __builtin_prefetch(s + 64);
  __builtin_prefetch(s + 128);
  __builtin_prefetch(s + 192);
  __builtin_prefetch(s + 256);
  __builtin_prefetch(s + sizeof(session) - 1); /* malloc aligns to 16 */
}

static void ahead_strings(const planner *pl, size_t j)
{
  const session *s = pl->in->sessions[j];
  /* not meta.name: a settled session's pass does not read it */
  __builtin_prefetch(s->meta.namespace_);
  __builtin_prefetch(s->spec.tenant_id);
  __builtin_prefetch(s->spec.session_id);
  if(s->status.sandbox_id)
    touch(s->status.sandbox_id); /* and the status strings near it */
  __builtin_prefetch(s->status.sandbox_state);
  __builtin_prefetch(s->status.conditions);
}

/* fills rec j (what the join reads of the session) and hashes its keys */
static void ahead_hash(planner *pl, size_t j)
{
  const session *s = pl->in->sessions[j];
  const session_condition *c = s->status.conditions;
  sess_rec *r = &pl->recs[j];
  const char *tenant, *sid;
  size_t q;
  r->s = s;
  r->tomb = s->meta.deletion_timestamp != 0;
  r->link = s->status.sandbox_id && *s->status.sandbox_id
              ? s->status.sandbox_id : NULL;
  r->redo = false;
  r->link_sb = NONE32; /* a hint until join_session() */
  if(r->link) {
    r->link_len = (uint32_t)strlen(r->link);
    r->hlink = hash_fin(hash_strn(HASH_INIT, r->link, r->link_len));
    __builtin_prefetch(&pl->sc->ids[r->hlink & pl->sbmask]);
  }
  tenant = rec_tenant(r);
  sid = rec_sid(r);
  r->unbound = pl->cfg->bind_tenant_to_namespace && tenant &&
              strcmp(tenant, rec_ns(r)) != 0;
  r->has_pair = tenant && sid && !r->unbound;
  if(r->has_pair) {
    r->hpair = pair_hash(tenant, sid);
    __builtin_prefetch(&pl->sc->pairs[r->hpair & pl->pmask]);
  }
  for(q = 0; q < s->status.n_conditions; q++) {
    __builtin_prefetch(c[q].type);
    __builtin_prefetch(c[q].status);
    __builtin_prefetch(c[q].reason);
    __builtin_prefetch(c[q].message);
  }
}

static void ahead_sb(planner *pl, size_t j)
{
  sess_rec *r = &pl->recs[j];
  const hslot *t = pl->sc->ids;
  uint32_t tag = (uint32_t)(r->hlink >> 32);
  size_t pos;
  if(!r->link)
    return;
  for(pos = r->hlink & pl->sbmask; t[pos].idx != NONE32;
      pos = (pos + 1) & pl->sbmask)
    if(t[pos].tag == tag) {
      const char *x = (const char *)&pl->sbs[t[pos].idx];
      r->link_sb = t[pos].idx;
      __builtin_prefetch(x);
      __builtin_prefetch(x + sizeof(sb_rec) - 1);
      return;
    }
}

static void ahead_sbstr(const planner *pl, size_t j)
{
  const sess_rec *r = &pl->recs[j];
  const sb_rec *sb;
  if(r->link_sb == NONE32)
    return;
  sb = &pl->sbs[r->link_sb];
  __builtin_prefetch(sb->id);
  __builtin_prefetch(sb->tenant);
  __builtin_prefetch(sb->sid);
}

/* ---------- the wrong guesses ---------- */

/* After the session pass every link is known, and only our sandboxes
 * that no session links can be taken by their tags. List them (orphans
 * come from this list), hash the tags of those that have both and put
 * them in the loose table, and send every session whose (tenant,
 * sessionID) one of them carries to be decided again: the session pass
 * guessed that it had none. In a settled cluster these are the orphans,
 * and nobody is sent back. */
static sc_err find_loose(planner *pl)
{
  plan_scratch *sc = pl->sc;
  size_t i, pos, n = 0, slots;
  sc_err err;
  for(i = 0; i < pl->n_sbs; i++) {
    const sb_rec *sb = &pl->sbs[i];
    if(!sb->ours || pl->links[i].n) /* a duplicate report is not ours */
      continue;
    if((err = push32(&sc->unlinked, &sc->cap_unlinked, pl->n_unlinked,
                     (uint32_t)i)))
      return err;
    pl->n_unlinked++;
    n += sb->has_pair;
  }
  if(!n)
    return SC_OK;
  slots = table_slots(n);
  if(!(sc->loose = reserve(sc->loose, &sc->cap_loose, slots,
                           sizeof(*sc->loose))))
    return SC_ERR_NOMEM;
  memset(sc->loose, 0xff, slots * sizeof(*sc->loose));
  pl->lmask = slots - 1;
  for(i = 0; i < pl->n_unlinked; i++) {
    uint32_t k = sc->unlinked[i];
    sb_rec *sb = &pl->sbs[k];
    uint32_t tag;
    if(!sb->has_pair)
      continue;
    sb->hpair = pair_hash(sb->tenant, sb->sid);
    tag = (uint32_t)(sb->hpair >> 32);
    for(pos = sb->hpair & pl->lmask; sc->loose[pos].idx != NONE32;
        pos = (pos + 1) & pl->lmask)
      ;
    sc->loose[pos].tag = tag;
    sc->loose[pos].idx = k;
    pl->n_loose++;
    /* the sessions with these tags (exactly) take it: decide them again */
    for(pos = sb->hpair & pl->pmask; sc->pairs[pos].idx != NONE32;
        pos = (pos + 1) & pl->pmask) {
      uint32_t o = sc->pairs[pos].idx;
      const sess_rec *r = &pl->recs[o];
      if(sc->pairs[pos].tag == tag && r->hpair == sb->hpair &&
         !strcmp(sb->tenant, rec_tenant(r)) &&
         !strcmp(sb->sid, rec_sid(r)) && (err = mark_redo(pl, o)))
        return err;
    }
  }
  return SC_OK;
}

/* the claims on a sandbox linked by several sessions: the first by
 * priority owns it (if its tags agree); live losers are in conflict,
 * tombstones let go */
static sc_err resolve_claims(planner *pl, uint32_t k)
{
  const sb_rec *sb = &pl->sbs[k];
  sb_links *l = &pl->links[k];
  uint32_t *v, q, w;
  size_t n = 0, a, b;
  for(q = l->first; q != NONE32; q = pl->recs[q].next_claim)
    n++;
  if(!(v = malloc(n * sizeof(*v))))
    return SC_ERR_NOMEM;
  n = 0;
  for(q = l->first; q != NONE32; q = pl->recs[q].next_claim)
    v[n++] = q;
  for(a = 1; a < n; a++) /* insertion sort: a handful of claims */
    for(b = a; b > 0 && rec_cmp(&pl->recs[v[b - 1]], &pl->recs[v[b]]) > 0;
        b--) {
      uint32_t x = v[b];
      v[b] = v[b - 1];
      v[b - 1] = x;
    }
  w = v[0];
  pl->recs[w].ls = link_tags(pl, &pl->recs[w], sb);
  for(a = 1; a < n; a++) {
    sess_rec *r = &pl->recs[v[a]];
    r->other_link = w;
    r->ls = r->tomb ? LS_NONE : LS_CLAIMED;
  }
  l->resolved = 1;
  free(v);
  return SC_OK;
}

/* Sort out the claims of the sessions marked redo, exactly, then decide
 * them again (their first actions and statuses are dropped). */
static sc_err redo_marked(planner *pl)
{
  plan *p = pl->p;
  const uint32_t *R = pl->sc->redo;
  size_t n = pl->n_redo, m = 0, a, b;
  hkey *keys = NULL;
  sc_err err = SC_OK;
  if(!n)
    return SC_OK;
  /* 1. links (no guess took a sandbox: take_loose() runs in 3) */
  for(a = 0; a < n; a++) {
    sess_rec *r = &pl->recs[R[a]];
    const sb_links *l;
    r->pair_conflict = r->pair_loser = false;
    r->other_pair = NONE32;
    if(r->link_sb == NONE32)
      continue;
    l = &pl->links[r->link_sb];
    if(l->n == 1)
      r->ls = link_tags(pl, r, &pl->sbs[r->link_sb]);
    else if(!l->resolved && (err = resolve_claims(pl, r->link_sb)))
      return err;
  }
  /* 2. (tenant, sessionID): every session sharing one is here */
  if(!(keys = malloc(n * sizeof(*keys))))
    return SC_ERR_NOMEM;
  for(a = 0; a < n; a++)
    if(pl->recs[R[a]].has_pair) {
      keys[m].h = pl->recs[R[a]].hpair;
      keys[m++].i = R[a];
    }
  if((err = sort_keys(pl, true, &keys, m, claim_cmp)))
    goto out;
  for(a = 0; a < m; a = b)
    for(b = a + 1; b < m && claim_same(pl, true, &keys[b], &keys[a]); b++) {
      sess_rec *r = &pl->recs[keys[b].i];
      r->pair_loser = true;
      if(!r->tomb) {
        r->pair_conflict = true;
        r->other_pair = (uint32_t)keys[a].i;
      }
    }
  /* 3. their sandboxes */
  for(a = 0; a < n; a++) {
    sess_rec *r = &pl->recs[R[a]];
    r->sb_first = (uint32_t)pl->n_sblist;
    r->sb_n = 0;
    r->attached = false;
    if(r->ls == LS_OWNED && (err = push_sb(pl, r, r->link_sb)))
      goto out;
    if(r->has_pair && !r->pair_loser && (err = take_loose(pl, R[a])))
      goto out;
  }
  /* 4. drop their first actions and statuses, and decide again */
  for(a = 0, b = 0; a < p->n_actions; a++) {
    uint32_t o = pl->sc->act_rec[a];
    if(o != NONE32 && pl->recs[o].redo)
      continue; /* its strings stay in the arena until plan_free() */
    pl->sc->act_rec[b] = o;
    p->actions[b++] = p->actions[a];
  }
  p->n_actions = b;
  for(a = 0; a < n && !err; a++) {
    plan_session *ps = &p->sessions[R[a]];
    if(ps->status_changed)
      session_status_clear(&ps->status);
    ps->status_changed = false;
    pl->cur_rec = R[a];
    err = plan_session_one(pl, &pl->recs[R[a]]);
  }
out:
  free(keys);
  return err;
}

/* ---------- the pass ---------- */

plan_scratch *plan_scratch_new(void)
{
  return calloc(1, sizeof(plan_scratch));
}

void plan_scratch_free(plan_scratch *sc)
{
  if(!sc)
    return;
  free(sc->recs);
  free(sc->sbs);
  free(sc->links);
  free(sc->ids);
  free(sc->pairs);
  free(sc->loose);
  free(sc->unlinked);
  free(sc->sblist);
  free(sc->act_rec);
  free(sc->redo);
  free(sc->gone);
  free(sc->akeys);
  free(sc);
}

static sc_err prepare(planner *pl)
{
  const plan_input *in = pl->in;
  plan_scratch *sc = pl->sc;
  size_t sbslots = table_slots(in->n_sandboxes);
  size_t pslots = table_slots(in->n_sessions);
  size_t i;
  if(!(sc->recs = reserve(sc->recs, &sc->cap_recs, in->n_sessions,
                          sizeof(*sc->recs))) ||
     !(sc->sbs = reserve_aligned(sc->sbs, &sc->cap_sbs, in->n_sandboxes,
                                 sizeof(*sc->sbs))) ||
     !(sc->links = reserve(sc->links, &sc->cap_links, in->n_sandboxes,
                           sizeof(*sc->links))) ||
     !(sc->gone = reserve(sc->gone, &sc->cap_gone, in->n_gone,
                          sizeof(*sc->gone))))
    return SC_ERR_NOMEM;
  if(!(sc->ids = reserve(sc->ids, &sc->cap_ids, sbslots, sizeof(*sc->ids))) ||
     !(sc->pairs = reserve(sc->pairs, &sc->cap_pairs, pslots,
                           sizeof(*sc->pairs))))
    return SC_ERR_NOMEM;
  /* the lists hold one sandbox per session nearly always */
  if(sc->cap_sblist < in->n_sandboxes + 16) {
    free(sc->sblist);
    sc->cap_sblist = 0;
    if(!(sc->sblist = malloc((in->n_sandboxes + 16) * sizeof(*sc->sblist))))
      return SC_ERR_NOMEM;
    sc->cap_sblist = in->n_sandboxes + 16;
  }
  memset(sc->ids, 0xff, sbslots * sizeof(*sc->ids));
  memset(sc->pairs, 0xff, pslots * sizeof(*sc->pairs));
  pl->sbmask = sbslots - 1;
  pl->pmask = pslots - 1;
  pl->recs = sc->recs;
  pl->sbs = sc->sbs;
  pl->links = sc->links;
  pl->gone = sc->gone;
  for(i = 0; i < in->n_gone; i++)
    if(in->gone[i])
      pl->gone[pl->n_gone++] = in->gone[i];
  if(pl->n_gone > 1)
    qsort(pl->gone, pl->n_gone, sizeof(*pl->gone), str_cmp);
  return SC_OK;
}

/* The session pass: each session joined and decided in turn. */
static sc_err sessions_pass(planner *pl)
{
  size_t i, n = pl->in->n_sessions;
  sc_err err;
  for(i = 0; i < n && i < AHEAD_HASH; i++)
    ahead_hash(pl, i);
  for(i = 0; i < n; i++) {
    plan_session *ps = &pl->p->sessions[i];
    if(i + AHEAD_FIRST < n)
      __builtin_prefetch(pl->in->sessions[i + AHEAD_FIRST]);
    if(i + AHEAD_STRUCT < n)
      ahead_struct(pl, i + AHEAD_STRUCT);
    if(i + AHEAD_STRINGS < n)
      ahead_strings(pl, i + AHEAD_STRINGS);
    if(i + AHEAD_HASH < n)
      ahead_hash(pl, i + AHEAD_HASH);
    if(i + AHEAD_SB < n)
      ahead_sb(pl, i + AHEAD_SB);
    if(i + AHEAD_SBSTR < n)
      ahead_sbstr(pl, i + AHEAD_SBSTR);
    pl->n_visited = i;
    /* the rest is written by plan_session_one(), now or (redo) later */
    ps->s = pl->recs[i].s;
    ps->status_changed = false;
    if((err = join_session(pl, (uint32_t)i)))
      return err;
    pl->cur_rec = (uint32_t)i;
    if(!pl->recs[i].redo && (err = plan_session_one(pl, &pl->recs[i])))
      return err;
  }
  pl->n_visited = n;
  return SC_OK;
}

sc_err plan_compute_ex(const plan_input *in, const plan_config *cfg,
                       plan_scratch *scratch, plan **out)
{
  planner pl;
  plan *p;
  size_t i;
  sc_err err;

  if(!out)
    return SC_ERR_INVALID;
  *out = NULL;
  if(!in || !cfg || (in->n_sessions && !in->sessions) ||
     (in->n_sandboxes && !in->sandboxes) || (in->n_gone && !in->gone) ||
     in->n_sessions >= SESS_BIT || in->n_sandboxes >= SESS_BIT)
    return SC_ERR_INVALID;
  for(i = 0; i < in->n_sessions; i++)
    if(!in->sessions[i])
      return SC_ERR_INVALID;
  if(!scratch) {
    plan_scratch *tmp = plan_scratch_new();
    if(!tmp)
      return SC_ERR_NOMEM;
    err = plan_compute_ex(in, cfg, tmp, out);
    plan_scratch_free(tmp);
    return err;
  }

  memset(&pl, 0, sizeof(pl));
  p = calloc(1, sizeof(*p));
  if(!p)
    return SC_ERR_NOMEM;
  pl.in = in;
  pl.cfg = cfg;
  pl.sc = scratch;
  pl.cname = cfg->controller_name && *cfg->controller_name
               ? cfg->controller_name : PLAN_DEFAULT_CONTROLLER;
  pl.p = p;
  pl.cur_rec = NONE32;
  fmt_time(in->cube_now, pl.now_text, sizeof(pl.now_text));
  if(in->n_sessions) {
    /* every field of every entry is written below */
    p->sessions = malloc(in->n_sessions * sizeof(*p->sessions));
    if(!p->sessions) {
      err = SC_ERR_NOMEM;
      goto out;
    }
    p->n_sessions = in->n_sessions;
  }
  if((err = prepare(&pl)))
    goto out;
  read_sandboxes(&pl);
  if((err = sessions_pass(&pl)) || (err = find_loose(&pl)) ||
     (err = redo_marked(&pl)))
    goto out;
  pl.cur_rec = NONE32;
  if((err = plan_orphans(&pl)))
    goto out;
  if(p->n_actions > 1) {
    if(!(scratch->akeys = reserve(scratch->akeys, &scratch->cap_akeys,
                                  2 * p->n_actions,
                                  sizeof(*scratch->akeys)))) {
      err = SC_ERR_NOMEM;
      goto out;
    }
    sort_actions(p, scratch->akeys);
  }

out:
  if(err) {
    for(i = pl.n_visited; i < p->n_sessions; i++)
      p->sessions[i].status_changed = false; /* not written */
    plan_free(p);
    return err;
  }
  *out = p;
  return SC_OK;
}

sc_err plan_compute(const plan_input *in, const plan_config *cfg,
                    plan **out)
{
  return plan_compute_ex(in, cfg, NULL, out);
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
       (err = set_str(&st->sandbox_proof, NULL)) ||
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
    if(!sc_str_eq0(st->sandbox_id, a->sandbox_id))
      return SC_OK;
  }
  if(sc_str_eq0(st->sandbox_id, a->sandbox_id) || !st->sandbox_id) {
    if((err = set_str(&st->sandbox_id, NULL)) ||
       (err = set_str(&st->sandbox_proof, NULL)) ||
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
