/*
 * redact.h - take a secret (an API key, a token) out of a message before it
 * is logged or returned.
 *
 * sc_redact(s, size, secret): replaces every occurrence of secret in the
 * NUL-terminated s (a buffer of size bytes) by "***", in place. The search
 * goes on after each replacement, never into it, so a secret made of '*'
 * (or one that occurs in "***") ends like any other. A secret shorter than
 * three bytes makes the message grow: what would pass size - 1 is cut. A
 * NULL or empty secret changes nothing; s may not be NULL.
 */
#ifndef SC_REDACT_H
#define SC_REDACT_H

#include <stddef.h>

void sc_redact(char *s, size_t size, const char *secret);

#endif
