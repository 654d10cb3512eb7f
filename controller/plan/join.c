/*
 * join.c - the one join of sessions and sandboxes (docs/planner.md, "The
 * join"): who owns which sandbox this pass.
 *
 *  1. The sandboxes by ID (lib/hmap.h): a sandbox listed twice is taken
 *     once, the report believed by report_cmp() (running first).
 *  2. The links: each session's status.sandboxID (the primary link,
 *     rule 4) is looked up; an ID not observed is confirmed or known gone
 *     (rule 2). When several sessions link one sandbox, the first by
 *     claim_before() holds it, if its tags agree (rule4_judge_link).
 *  3. The tags: each (tenant, sessionID) has one owner, the first by the
 *     same claim_before(); our sandboxes that no session links go to the
 *     owner of their (lea.tenant_id, lea.session_id) tags (rule 12
 *     permitting).
 *  4. What is ours and joined nobody is an orphan candidate (decide.c).
 *
 * Every lookup hashes with lib/schash.h and compares the strings of an
 * equal hash (the eq functions below), so a collision never joins two
 * keys. Cost: two table lookups per sandbox and up to three per session,
 * O(S + B) for the pass; the per-session sandbox lists are chains
 * through the sandbox records, so nothing is sorted.
 */
#include "controller/plan/plan_int.h"

#include <stdlib.h>
#include <string.h>

#include "lib/schash.h"
#include "lib/scstr.h"

/* ---------- sandboxes ---------- */

static int state_rank(cube_sb_state st)
{
  switch(st) {
  case CUBE_SB_RUNNING: return 0;
  case CUBE_SB_PAUSING: return 1;
  case CUBE_SB_PAUSED: return 2;
  default: return 3;
  }
}

static int strcmp0(const char *a, const char *b)
{
  if(!a || !b)
    return a ? 1 : (b ? -1 : 0);
  return strcmp(a, b);
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

/* Two reports of one sandbox ID (Cube has listed paused sandboxes as
 * running): which to believe. A total order, so the input order never
 * decides: running first (no reclaim on a doubtful report), then the one
 * with more tags, the earlier endAt and startedAt, then the content. */
static int report_cmp(const cube_sandbox *a, const cube_sandbox *b)
{
  int c;
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

/* the lea.* tags of a sandbox */
static void read_tags(sb_rec *sb)
{
  const sc_kvlist *md = &sb->b->metadata;
  size_t i;
  for(i = 0; i < md->n; i++) {
    const char *k = md->items[i].key, *v = md->items[i].value;
    if(strncmp(k, SESSION_TAG_PREFIX, sizeof(SESSION_TAG_PREFIX) - 1))
      continue;
    sb->tagged = true;
    if(!strcmp(k, SESSION_TAG_TENANT_ID))
      sb->tenant = v;
    else if(!strcmp(k, SESSION_TAG_SESSION_ID))
      sb->sid = v;
    else if(!strcmp(k, SESSION_TAG_MANAGED_BY))
      sb->managed_by = v;
    else if(!strcmp(k, SESSION_TAG_SESSION_UID))
      sb->uid = v;
    else if(!strcmp(k, SESSION_TAG_TEMPLATE))
      sb->tmpl = v;
    else if(!strcmp(k, SESSION_TAG_CONFIG))
      sb->cfg = v;
  }
}

static bool sb_id_eq(const void *value, const void *key, void *ud)
{
  (void)ud;
  return !strcmp(((const sb_rec *)value)->id, (const char *)key);
}

sb_rec *join_sandbox_by_id(const planner *pl, const char *id)
{
  return sc_hmap_get(pl->sc->by_id, sc_hash_id(id), sb_id_eq, id, NULL);
}

sc_err join_sandboxes(planner *pl)
{
  const plan_input *in = pl->in;
  size_t i;
  sc_err err;
  for(i = 0; i < in->n_sandboxes; i++) {
    const cube_sandbox *b = &in->sandboxes[i];
    sb_rec *sb, *seen;
    uint64_t h;
    if(!b->sandbox_id || !*b->sandbox_id)
      continue; /* nothing can be done to a sandbox without an ID */
    sb = &pl->sbs[pl->n_sbs++];
    memset(sb, 0, sizeof(*sb));
    sb->b = b;
    sb->id = b->sandbox_id;
    read_tags(sb);
    sb->ours = rule4_sandbox_is_ours(pl, sb->managed_by);
    h = sc_hash_id(sb->id);
    seen = sc_hmap_get(pl->sc->by_id, h, sb_id_eq, sb->id, NULL);
    if(seen && report_cmp(b, seen->b) >= 0) {
      sb->dup = true; /* on a tie the two are alike: keep the first */
      continue;
    }
    if(seen) {
      seen->dup = true;
      sc_hmap_remove_value(pl->sc->by_id, h, seen);
    }
    if((err = sc_hmap_put(pl->sc->by_id, h, sb)))
      return err;
  }
  for(i = 0; i < pl->n_sbs; i++)
    if(pl->sbs[i].ours && !pl->sbs[i].dup)
      pl->p->n_managed++;
  return SC_OK;
}

/* ---------- sessions ---------- */

/* Of two sessions claiming one link or one (tenant, sessionID), which
 * comes first: live before tombstones, then the lowest namespace/name
 * (then uid, resourceVersion, and the input order for identical ones). */
static bool claim_before(const sess_rec *a, const sess_rec *b)
{
  int c;
  if(a->tomb != b->tomb)
    return b->tomb;
  if((c = strcmp(session_eff_namespace(a->s), session_eff_namespace(b->s))) ||
     (c = strcmp0(a->s->meta.name, b->s->meta.name)) ||
     (c = strcmp0(a->s->meta.uid, b->s->meta.uid)) ||
     (c = strcmp0(a->s->meta.resource_version, b->s->meta.resource_version)))
    return c < 0;
  return a->idx < b->idx;
}

static void attach(sess_rec *r, sb_rec *sb)
{
  sb->owner = r;
  sb->next_of_owner = r->sbs;
  r->sbs = sb;
  r->n_sbs++;
}

/* The sessions linking one observed sandbox (each judged already, while
 * its strings were at hand): the first by claim_before() holds it, if
 * its tags agree; live others are in conflict, tombstones let go. */
static void resolve_claims(sb_rec *sb)
{
  sess_rec *w = sb->claims, *r;
  for(r = sb->claims->next_claim; r; r = r->next_claim)
    if(claim_before(r, w))
      w = r;
  if(w->ls == LS_OWNED)
    attach(w, sb);
  for(r = sb->claims; r; r = r->next_claim)
    if(r != w) {
      r->ls = r->tomb ? LS_NONE : LS_CLAIMED;
      r->link_winner = w;
    }
}

typedef struct pair_key {
  const char *tenant, *sid;
} pair_key;

static bool pair_eq(const void *value, const void *key, void *ud)
{
  const sess_rec *r = value;
  const pair_key *k = key;
  (void)ud;
  return !strcmp(r->tenant, k->tenant) && !strcmp(r->sid, k->sid);
}

/* the owner of (tenant, sid), or NULL */
static sess_rec *pair_owner(const planner *pl, const char *tenant,
                            const char *sid, uint64_t *hash)
{
  pair_key k;
  k.tenant = tenant;
  k.sid = sid;
  *hash = sc_hash_pair(tenant, sid);
  return sc_hmap_get(pl->sc->by_pair, *hash, pair_eq, &k, NULL);
}

static void read_session(planner *pl, size_t i)
{
  sess_rec *r = &pl->recs[i];
  const session *s = pl->in->sessions[i];
  memset(r, 0, sizeof(*r));
  r->s = s;
  r->idx = i;
  r->tomb = s->meta.deletion_timestamp != 0;
  r->link = s->status.sandbox_id && *s->status.sandbox_id
              ? s->status.sandbox_id : NULL;
  r->tenant = session_eff_tenant_id(s);
  r->sid = session_eff_session_id(s);
  r->unbound = !rule5_tenant_is_namespace(pl, s);
  r->has_pair = r->tenant && r->sid && !r->unbound;
}

sc_err join_sessions(planner *pl)
{
  size_t i;
  uint64_t h;
  sc_err err;
  /* the links, and one owner per (tenant, sessionID): the table holds
   * the first so far; a session that loses, now or later, is marked, and
   * the few losers learn the final owner afterwards */
  for(i = 0; i < pl->n_recs; i++) {
    sess_rec *r = &pl->recs[i], *o;
    read_session(pl, i);
    if(r->link && !(r->link_sb = join_sandbox_by_id(pl, r->link)))
      r->ls = rule2_gone_confirmed(pl, r->link) ? LS_GONE : LS_CONFIRM;
    else if(r->link) {
      r->ls = rule4_judge_link(pl, r, r->link_sb);
      r->next_claim = r->link_sb->claims;
      r->link_sb->claims = r;
    }
    if(!r->has_pair)
      continue;
    o = pair_owner(pl, r->tenant, r->sid, &h);
    if(o && !claim_before(r, o)) {
      r->pair_loser = true;
      continue;
    }
    if(o) {
      o->pair_loser = true;
      sc_hmap_remove_value(pl->sc->by_pair, h, o);
    }
    if((err = sc_hmap_put(pl->sc->by_pair, h, r)))
      return err;
  }
  for(i = 0; i < pl->n_sbs; i++)
    if(pl->sbs[i].claims)
      resolve_claims(&pl->sbs[i]);
  for(i = 0; i < pl->n_recs; i++) {
    sess_rec *r = &pl->recs[i];
    if(r->pair_loser && !r->tomb)
      r->pair_owner = pair_owner(pl, r->tenant, r->sid, &h);
  }
  /* our sandboxes no session links go to the owner of their tags */
  for(i = 0; i < pl->n_sbs; i++) {
    sb_rec *sb = &pl->sbs[i];
    sess_rec *o;
    if(!sb->ours || sb->dup || sb->claims || !sb->tenant || !sb->sid)
      continue;
    o = pair_owner(pl, sb->tenant, sb->sid, &h);
    if(o && rule12_one_object(o->s, sb, false))
      attach(o, sb);
  }
  return SC_OK;
}

const sess_rec *join_pair_owner(const planner *pl, const char *tenant,
                                const char *sid)
{
  uint64_t h;
  return tenant && sid ? pair_owner(pl, tenant, sid, &h) : NULL;
}

static bool uid_eq(const void *value, const void *key, void *ud)
{
  (void)ud;
  return sc_str_eq0(((const sess_rec *)value)->s->meta.uid,
                    (const char *)key);
}

const sess_rec *join_session_by_uid(planner *pl, const char *uid,
                                    sc_err *err)
{
  size_t i;
  *err = SC_OK;
  if(!uid || !*uid)
    return NULL;
  if(!pl->uid_map_built) {
    /* the uid of only a few sandboxes per pass is looked up (orphan
     * candidates), so the table is made only when one is */
    if((*err = sc_hmap_reserve(pl->sc->by_uid, pl->n_recs)))
      return NULL;
    for(i = 0; i < pl->n_recs; i++) {
      const char *u = pl->recs[i].s->meta.uid;
      if(u && *u &&
         (*err = sc_hmap_put(pl->sc->by_uid, sc_hash_id(u), &pl->recs[i])))
        return NULL;
    }
    pl->uid_map_built = true;
  }
  return sc_hmap_get(pl->sc->by_uid, sc_hash_id(uid), uid_eq, uid, NULL);
}

bool join_is_orphan(const sb_rec *sb)
{
  return sb->ours && !sb->dup && !sb->claims && !sb->owner;
}
