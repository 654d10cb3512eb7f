/*
 * scstr.h - string helpers shared by the modules. Header only; no state.
 * sc_strdup_opt() allocates: the copy is the caller's (free()).
 */
#ifndef SC_SCSTR_H
#define SC_SCSTR_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Equal strings, NULL equal only to NULL. */
static inline bool sc_str_eq0(const char *a, const char *b)
{
  if(!a || !b)
    return a == b;
  return a == b || !strcmp(a, b);
}

/* A copy of an optional string: NULL for NULL; on a failed allocation
 * NULL and *oom set (so that many copies can be checked once). */
static inline char *sc_strdup_opt(const char *s, bool *oom)
{
  char *d;
  if(!s)
    return NULL;
  d = strdup(s);
  if(!d)
    *oom = true;
  return d;
}

#endif
