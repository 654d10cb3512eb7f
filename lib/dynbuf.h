/*
 * dynbuf.h - a growing byte buffer with a hard size cap (after curl's
 * DYNBUF). Every buffer that holds untrusted input (HTTP bodies, files)
 * is a dynbuf with a cap, so a hostile peer cannot make us allocate
 * without bound.
 *
 * Ownership: the struct is the caller's (usually on the stack or inside
 * another struct); the bytes are owned by the dynbuf until dynbuf_take().
 * The content is always NUL-terminated (the NUL is not counted in len).
 */
#ifndef SC_DYNBUF_H
#define SC_DYNBUF_H

#include <stddef.h>
#include "lib/sc_err.h"

typedef struct dynbuf {
  char *mem;
  size_t len;   /* bytes used, not counting the trailing NUL */
  size_t alloc; /* bytes allocated */
  size_t cap;   /* the most len may ever be */
} dynbuf;

void dynbuf_init(dynbuf *b, size_t cap);
/* Frees the bytes; b is left empty and reusable. NULL is accepted. */
void dynbuf_free(dynbuf *b);
void dynbuf_reset(dynbuf *b);
/* SC_ERR_TOO_LARGE when the cap would be passed (b unchanged). */
sc_err dynbuf_add(dynbuf *b, const void *mem, size_t len);
sc_err dynbuf_addstr(dynbuf *b, const char *s);
sc_err dynbuf_printf(dynbuf *b, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));
/* The bytes (never NULL: "" when empty). */
const char *dynbuf_ptr(const dynbuf *b);
size_t dynbuf_len(const dynbuf *b);
/* Hand the bytes to the caller (free() them); b is left empty. Never NULL
 * unless out of memory. */
char *dynbuf_take(dynbuf *b);

#endif
