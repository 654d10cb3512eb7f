#include "lib/dynbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dynbuf_init(dynbuf *b, size_t cap)
{
  b->mem = NULL;
  b->len = 0;
  b->alloc = 0;
  b->cap = cap;
}

void dynbuf_free(dynbuf *b)
{
  if(!b)
    return;
  free(b->mem);
  b->mem = NULL;
  b->len = 0;
  b->alloc = 0;
}

void dynbuf_reset(dynbuf *b)
{
  b->len = 0;
  if(b->mem)
    b->mem[0] = '\0';
}

static sc_err grow(dynbuf *b, size_t need)
{
  size_t a;
  char *p;
  if(need > b->cap)
    return SC_ERR_TOO_LARGE;
  if(need + 1 <= b->alloc)
    return SC_OK;
  a = b->alloc ? b->alloc : 64;
  while(a < need + 1)
    a *= 2;
  if(a > b->cap + 1)
    a = b->cap + 1;
  p = realloc(b->mem, a);
  if(!p)
    return SC_ERR_NOMEM;
  b->mem = p;
  b->alloc = a;
  return SC_OK;
}

sc_err dynbuf_add(dynbuf *b, const void *mem, size_t len)
{
  sc_err err;
  if(len > b->cap || b->len > b->cap - len)
    return SC_ERR_TOO_LARGE;
  err = grow(b, b->len + len);
  if(err)
    return err;
  if(len)
    memcpy(b->mem + b->len, mem, len);
  b->len += len;
  b->mem[b->len] = '\0';
  return SC_OK;
}

sc_err dynbuf_addstr(dynbuf *b, const char *s)
{
  return dynbuf_add(b, s, strlen(s));
}

sc_err dynbuf_printf(dynbuf *b, const char *fmt, ...)
{
  va_list ap;
  int n;
  sc_err err;
  char small[256];

  va_start(ap, fmt);
  n = vsnprintf(small, sizeof(small), fmt, ap);
  va_end(ap);
  if(n < 0)
    return SC_ERR_INVALID;
  if((size_t)n < sizeof(small))
    return dynbuf_add(b, small, (size_t)n);
  if((size_t)n > b->cap || b->len > b->cap - (size_t)n)
    return SC_ERR_TOO_LARGE;
  err = grow(b, b->len + (size_t)n);
  if(err)
    return err;
  va_start(ap, fmt);
  vsnprintf(b->mem + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return SC_OK;
}

const char *dynbuf_ptr(const dynbuf *b)
{
  return b->mem ? b->mem : "";
}

size_t dynbuf_len(const dynbuf *b)
{
  return b->len;
}

char *dynbuf_take(dynbuf *b)
{
  char *p = b->mem;
  if(!p)
    p = calloc(1, 1);
  b->mem = NULL;
  b->len = 0;
  b->alloc = 0;
  return p;
}
