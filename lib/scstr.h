/*
 * scstr.h - string helpers shared by the modules. Header only; no state,
 * nothing allocated.
 */
#ifndef SC_SCSTR_H
#define SC_SCSTR_H

#include <stdbool.h>
#include <string.h>

/* Equal strings, NULL equal only to NULL. */
static inline bool sc_str_eq0(const char *a, const char *b)
{
  if(!a || !b)
    return a == b;
  return a == b || !strcmp(a, b);
}

#endif
