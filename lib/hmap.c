/*
 * hmap.c - see hmap.h. Slots are (hash, value); value NULL is an empty
 * slot. The capacity is a power of two and at least twice the count.
 */
#include "lib/hmap.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>

typedef struct slot {
  uint64_t hash;
  void *value;
} slot;

struct sc_hmap {
  slot *slots;
  size_t cap;   /* 0 or a power of two */
  size_t count;
};

uint64_t sc_hash_seed(void)
{
  uint64_t s = 0;
  ssize_t n;
  do
    n = getrandom(&s, sizeof(s), GRND_NONBLOCK);
  while(n < 0 && errno == EINTR);
  if(n != (ssize_t)sizeof(s))
    s = (uint64_t)(uintptr_t)&s * SC_HASH_K1; /* ASLR at least */
  return s;
}

static size_t cap_for(size_t n)
{
  size_t c = 16;
  while(c < n * 2 && c < ((size_t)1 << (sizeof(size_t) * 8 - 2)))
    c <<= 1;
  return c;
}

static sc_err rehash(sc_hmap *m, size_t cap)
{
  slot *ns = calloc(cap, sizeof(*ns));
  size_t i, mask = cap - 1;
  if(!ns)
    return SC_ERR_NOMEM;
  for(i = 0; i < m->cap; i++) {
    size_t j;
    if(!m->slots[i].value)
      continue;
    for(j = m->slots[i].hash & mask; ns[j].value; j = (j + 1) & mask)
      ;
    ns[j] = m->slots[i];
  }
  free(m->slots);
  m->slots = ns;
  m->cap = cap;
  return SC_OK;
}

sc_hmap *sc_hmap_new(size_t hint)
{
  sc_hmap *m = calloc(1, sizeof(*m));
  if(m && hint && sc_hmap_reserve(m, hint)) {
    free(m);
    m = NULL;
  }
  return m;
}

void sc_hmap_free(sc_hmap *m)
{
  if(!m)
    return;
  free(m->slots);
  free(m);
}

void sc_hmap_clear(sc_hmap *m)
{
  size_t i;
  if(!m)
    return;
  for(i = 0; i < m->cap; i++)
    m->slots[i].value = NULL;
  m->count = 0;
}

size_t sc_hmap_count(const sc_hmap *m)
{
  return m ? m->count : 0;
}

sc_err sc_hmap_reserve(sc_hmap *m, size_t n)
{
  size_t c = cap_for(n);
  if(c <= m->cap)
    return SC_OK;
  return rehash(m, c);
}

sc_err sc_hmap_put(sc_hmap *m, uint64_t hash, void *value)
{
  size_t j, mask;
  if(!value)
    return SC_ERR_INTERNAL;
  if((m->count + 1) * 2 > m->cap) {
    sc_err err = rehash(m, m->cap ? m->cap * 2 : 16);
    if(err)
      return err;
  }
  mask = m->cap - 1;
  for(j = hash & mask; m->slots[j].value; j = (j + 1) & mask)
    ;
  m->slots[j].hash = hash;
  m->slots[j].value = value;
  m->count++;
  return SC_OK;
}

/* The slot of the next match from *it (a slot count walked so far). */
static slot *find(const sc_hmap *m, uint64_t hash, sc_hmap_eq_fn eq,
                  const void *key, void *ud, size_t *it)
{
  size_t mask, j;
  if(!m || !m->cap)
    return NULL;
  mask = m->cap - 1;
  for(j = (hash + *it) & mask; m->slots[j].value; j = (j + 1) & mask) {
    slot *s = &m->slots[j];
    ++*it;
    if(s->hash == hash && eq(s->value, key, ud))
      return s;
    if(*it >= m->cap)
      break;
  }
  return NULL;
}

void *sc_hmap_get(const sc_hmap *m, uint64_t hash, sc_hmap_eq_fn eq,
                  const void *key, void *ud)
{
  size_t it = 0;
  slot *s = find(m, hash, eq, key, ud, &it);
  return s ? s->value : NULL;
}

void *sc_hmap_next(const sc_hmap *m, uint64_t hash, sc_hmap_eq_fn eq,
                   const void *key, void *ud, size_t *it)
{
  slot *s = find(m, hash, eq, key, ud, it);
  return s ? s->value : NULL;
}

/* Empty slot j and shift the rest of its run back over it. */
static void remove_at(sc_hmap *m, size_t j)
{
  size_t mask = m->cap - 1, k = j;
  for(;;) {
    size_t home;
    k = (k + 1) & mask;
    if(!m->slots[k].value)
      break;
    home = m->slots[k].hash & mask;
    /* move k to j unless its home lies cyclically in (j, k] */
    if(j <= k ? (home <= j || home > k) : (home <= j && home > k)) {
      m->slots[j] = m->slots[k];
      j = k;
    }
  }
  m->slots[j].value = NULL;
  m->count--;
}

void *sc_hmap_remove(sc_hmap *m, uint64_t hash, sc_hmap_eq_fn eq,
                     const void *key, void *ud)
{
  size_t it = 0;
  slot *s = find(m, hash, eq, key, ud, &it);
  void *v;
  if(!s)
    return NULL;
  v = s->value;
  remove_at(m, (size_t)(s - m->slots));
  return v;
}

static bool same_ptr(const void *value, const void *key, void *ud)
{
  (void)ud;
  return value == key;
}

bool sc_hmap_remove_value(sc_hmap *m, uint64_t hash, const void *value)
{
  return sc_hmap_remove(m, hash, same_ptr, value, NULL) != NULL;
}

void *sc_hmap_each(const sc_hmap *m, size_t *it)
{
  if(!m)
    return NULL;
  while(*it < m->cap) {
    void *v = m->slots[(*it)++].value;
    if(v)
      return v;
  }
  return NULL;
}
