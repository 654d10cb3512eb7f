/*
 * scarray.h - growing a plain C array: the one place that doubles a
 * capacity and checks the multiplication for overflow.
 *
 *   item *nv = sc_grow(v, &cap, n + 1, sizeof(*nv));
 *   if(!nv)
 *     return SC_ERR_NOMEM;    (v and cap are unchanged and still valid)
 *   v = nv;
 *
 * Ownership: the array stays the caller's (free() it); sc_grow may move
 * it like realloc. Returns v itself when cap already holds need.
 */
#ifndef SC_SCARRAY_H
#define SC_SCARRAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

static inline void *sc_grow(void *v, size_t *cap, size_t need, size_t elem)
{
  size_t n = *cap ? *cap : 8;
  void *nv;
  if(need <= *cap)
    return v;
  while(n < need) {
    if(n > SIZE_MAX / 2)
      return NULL;
    n *= 2;
  }
  if(elem && n > SIZE_MAX / elem)
    return NULL;
  nv = realloc(v, n * elem);
  if(nv)
    *cap = n;
  return nv;
}

#endif
