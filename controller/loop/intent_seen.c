/*
 * intent_seen.c - see intent_seen.h. A hash table of session keys; an
 * entry lives while its session has an intent. Cost: one pointer test per
 * session per pass, and a lookup per session that has an intent (a
 * handful, or the reclaims of one brake window).
 */
#include "controller/loop/intent_seen.h"
#include "lib/hmap.h"
#include "lib/schash.h"
#include "lib/scstr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct seen_ent {
  char *key;          /* session_key() */
  char *kind, *sandbox, *by;
  sc_time at;
  int64_t first_mono;
  uint64_t hash;
  uint64_t mark;      /* the full pass that last saw it */
} seen_ent;

struct intent_seen {
  sc_hmap *m;
  uint64_t mark;
};

static void ent_free(seen_ent *e)
{
  if(!e)
    return;
  free(e->key);
  free(e->kind);
  free(e->sandbox);
  free(e->by);
  free(e);
}

static bool ent_eq(const void *v, const void *key, void *ud)
{
  (void)ud;
  return !strcmp(((const seen_ent *)v)->key, key);
}

intent_seen *intent_seen_new(void)
{
  intent_seen *t = calloc(1, sizeof(*t));
  if(t && !(t->m = sc_hmap_new(0))) {
    free(t);
    return NULL;
  }
  return t;
}

static void forget_all(intent_seen *t)
{
  size_t it = 0;
  seen_ent *e;
  while((e = sc_hmap_each(t->m, &it)))
    ent_free(e);
  sc_hmap_clear(t->m);
}

void intent_seen_free(intent_seen *t)
{
  if(!t)
    return;
  forget_all(t);
  sc_hmap_free(t->m);
  free(t);
}

size_t intent_seen_count(const intent_seen *t)
{
  return t ? sc_hmap_count(t->m) : 0;
}

static bool same_intent(const seen_ent *e, const session_status *st)
{
  return e->at == st->pending_at && sc_str_eq0(e->kind, st->pending_kind) &&
         sc_str_eq0(e->sandbox, st->pending_sandbox_id) &&
         sc_str_eq0(e->by, st->pending_by);
}

static char *dup0(const char *s, bool *oom)
{
  char *d;
  if(!s)
    return NULL;
  if(!(d = strdup(s)))
    *oom = true;
  return d;
}

/* (re)start e's count at now from st; false: out of memory */
static bool ent_set(seen_ent *e, const session_status *st, int64_t now)
{
  bool oom = false;
  free(e->kind);
  free(e->sandbox);
  free(e->by);
  e->kind = dup0(st->pending_kind, &oom);
  e->sandbox = dup0(st->pending_sandbox_id, &oom);
  e->by = dup0(st->pending_by, &oom);
  e->at = st->pending_at;
  e->first_mono = now;
  return !oom;
}

/* the ms s's intent has been seen, 0 the first time */
static int64_t seen_one(intent_seen *t, const session *s, int64_t now)
{
  char key[600];
  uint64_t h;
  seen_ent *e;
  session_key(s, key, sizeof(key));
  h = sc_hash_id(key);
  e = sc_hmap_get(t->m, h, ent_eq, key, NULL);
  if(e && same_intent(e, &s->status)) {
    e->mark = t->mark;
    return now - e->first_mono;
  }
  if(!e) {
    if(!(e = calloc(1, sizeof(*e))) || !(e->key = strdup(key))) {
      free(e);
      return 0;
    }
    e->hash = h;
    if(sc_hmap_put(t->m, h, e)) {
      ent_free(e);
      return 0;
    }
  }
  e->mark = t->mark;
  if(!ent_set(e, &s->status, now)) {
    sc_hmap_remove_value(t->m, e->hash, e);
    ent_free(e);
  }
  return 0;
}

static void forget_one(intent_seen *t, const session *s)
{
  char key[600];
  seen_ent *e;
  session_key(s, key, sizeof(key));
  e = sc_hmap_remove(t->m, sc_hash_id(key), ent_eq, key, NULL);
  ent_free(e);
}

/* after a full pass: the entries it did not see go */
static void sweep(intent_seen *t)
{
  size_t it = 0, n = 0, i;
  seen_ent *e, **gone = calloc(sc_hmap_count(t->m), sizeof(*gone));
  if(!gone)
    return; /* out of memory: kept one more pass, which is harmless */
  while((e = sc_hmap_each(t->m, &it)))
    if(e->mark != t->mark)
      gone[n++] = e;
  for(i = 0; i < n; i++) {
    sc_hmap_remove_value(t->m, gone[i]->hash, gone[i]);
    ent_free(gone[i]);
  }
  free(gone);
}

bool intent_seen_update(intent_seen *t, session *const *ss, size_t n,
                        bool full, int64_t now_mono, int64_t *out)
{
  size_t i;
  bool any = false;
  if(!t)
    return false;
  t->mark++;
  for(i = 0; i < n; i++) {
    const session *s = ss[i];
    if(!s->status.pending_kind) {
      if(!full && sc_hmap_count(t->m))
        forget_one(t, s);
      continue;
    }
    if(!any)
      memset(out, 0, n * sizeof(*out));
    any = true;
    out[i] = seen_one(t, s, now_mono);
  }
  if(full && sc_hmap_count(t->m))
    sweep(t);
  return any;
}
