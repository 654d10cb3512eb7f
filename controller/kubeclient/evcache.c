/* evcache.c - the Event de-duplication table (see evcache.h). A small
 * array searched linearly: cap is a few hundred, and one lookup per event
 * sent is nothing beside the HTTP call it saves. */
#include "controller/kubeclient/evcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct evcache {
  evcache_entry *v;
  size_t n, cap;
  int64_t window_ms;
};

evcache *evcache_new(size_t cap, int64_t window_ms)
{
  evcache *c = calloc(1, sizeof(*c));
  if(!c)
    return NULL;
  c->cap = cap ? cap : 1;
  c->window_ms = window_ms;
  c->v = calloc(c->cap, sizeof(*c->v));
  if(!c->v) {
    free(c);
    return NULL;
  }
  return c;
}

static void entry_clear(evcache_entry *e)
{
  free(e->key);
  free(e->name);
  free(e->first_ts);
  memset(e, 0, sizeof(*e));
}

static void remove_at(evcache *c, size_t i)
{
  entry_clear(&c->v[i]);
  c->v[i] = c->v[--c->n];
  memset(&c->v[c->n], 0, sizeof(c->v[c->n]));
}

void evcache_free(evcache *c)
{
  size_t i;
  if(!c)
    return;
  for(i = 0; i < c->n; i++)
    entry_clear(&c->v[i]);
  free(c->v);
  free(c);
}

void evcache_key(const char *uid, const char *reason, const char *message,
                 const char *type, char *buf, size_t len)
{
  /* \x1f (unit separator) never appears in these fields unescaped */
  snprintf(buf, len, "%s\x1f%s\x1f%s\x1f%s", uid ? uid : "",
           reason ? reason : "", type ? type : "", message ? message : "");
}

static long find_idx(const evcache *c, const char *key)
{
  size_t i;
  for(i = 0; i < c->n; i++)
    if(!strcmp(c->v[i].key, key))
      return (long)i;
  return -1;
}

const evcache_entry *evcache_find(evcache *c, const char *key, int64_t now)
{
  long i = find_idx(c, key);
  if(i < 0)
    return NULL;
  if(now - c->v[i].last_mono >= c->window_ms) {
    remove_at(c, (size_t)i);
    return NULL;
  }
  return &c->v[i];
}

sc_err evcache_put(evcache *c, const char *key, const char *name,
                   int64_t count, const char *first_ts, int64_t now)
{
  long i = find_idx(c, key);
  evcache_entry e;
  memset(&e, 0, sizeof(e));
  e.key = strdup(key);
  e.name = strdup(name);
  e.first_ts = strdup(first_ts ? first_ts : "");
  e.count = count;
  e.last_mono = now;
  if(!e.key || !e.name || !e.first_ts) {
    entry_clear(&e);
    return SC_ERR_NOMEM;
  }
  if(i >= 0) {
    entry_clear(&c->v[i]);
    c->v[i] = e;
    return SC_OK;
  }
  if(c->n == c->cap) {
    /* full: evict the least recently sent */
    size_t j, old = 0;
    for(j = 1; j < c->n; j++)
      if(c->v[j].last_mono < c->v[old].last_mono)
        old = j;
    remove_at(c, old);
  }
  c->v[c->n++] = e;
  return SC_OK;
}

void evcache_forget(evcache *c, const char *key)
{
  long i = find_idx(c, key);
  if(i >= 0)
    remove_at(c, (size_t)i);
}

size_t evcache_len(const evcache *c)
{
  return c ? c->n : 0;
}
