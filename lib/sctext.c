/* sctext.c - see sctext.h */
#include "lib/sctext.h"

#include <stdio.h>
#include <string.h>

/* the length of the valid UTF-8 sequence at p (1..4), 0 if not valid */
static size_t utf8_len(const unsigned char *p, size_t len, unsigned *cp)
{
  unsigned c = p[0];
  size_t n, i;
  unsigned min;
  if(c < 0x80) {
    *cp = c;
    return 1;
  }
  if(c >= 0xc2 && c <= 0xdf) {
    n = 2;
    c &= 0x1f;
    min = 0x80;
  }
  else if(c >= 0xe0 && c <= 0xef) {
    n = 3;
    c &= 0x0f;
    min = 0x800;
  }
  else if(c >= 0xf0 && c <= 0xf4) {
    n = 4;
    c &= 0x07;
    min = 0x10000;
  }
  else
    return 0;
  if(len < n)
    return 0;
  for(i = 1; i < n; i++) {
    if((p[i] & 0xc0) != 0x80)
      return 0;
    c = (c << 6) | (p[i] & 0x3f);
  }
  if(c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
    return 0;
  *cp = c;
  return n;
}

static int is_bidi(unsigned c)
{
  return c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) ||
         (c >= 0x2066 && c <= 0x2069);
}

size_t sc_text_next(const char *s, size_t len, unsigned *cp, int *unsafe)
{
  const unsigned char *p = (const unsigned char *)s;
  unsigned c = 0;
  size_t n;
  *unsafe = 1;
  if(p[0] < 0x20 || p[0] == 0x7f) {
    *cp = p[0];
    return 1;
  }
  n = utf8_len(p, len, &c);
  if(!n) {
    *cp = p[0] | 0x100u;
    return 1;
  }
  *cp = c;
  *unsafe = (c >= 0x80 && c <= 0x9f) || is_bidi(c);
  return n;
}

size_t sc_text_unsafe(const char *s, size_t len, unsigned *cp)
{
  int unsafe;
  size_t n;
  if(!len)
    return 0;
  n = sc_text_next(s, len, cp, &unsafe);
  return unsafe ? n : 0;
}

char *sc_text_escape(char *out, size_t size, const char *in)
{
  size_t o = 0, i = 0, len;
  if(!size)
    return out;
  if(!in) {
    out[0] = '\0';
    return out;
  }
  len = strlen(in);
  while(i < len) {
    unsigned cp;
    int unsafe;
    size_t n = sc_text_next(in + i, len - i, &cp, &unsafe);
    char esc[8];
    size_t el;
    if(!unsafe) { /* a whole character, or nothing of it */
      if(o + n >= size)
        break;
      memcpy(out + o, in + i, n);
      o += n;
      i += n;
      continue;
    }
    if(cp < 0x80 || cp & 0x100u)
      el = (size_t)snprintf(esc, sizeof(esc), "\\x%02x", cp & 0xffu);
    else
      el = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", cp);
    if(o + el >= size)
      break;
    memcpy(out + o, esc, el);
    o += el;
    i += n;
  }
  out[o] = '\0';
  return out;
}

void sc_text_sanitize(char *buf, size_t size)
{
  char tmp[4096]; /* an error buffer is 512 bytes; a larger one is cut */
  size_t i = 0, len;
  unsigned cp;
  int unsafe = 0;
  if(!buf || !size)
    return;
  len = strlen(buf);
  while(i < len && !unsafe) /* the common case: nothing to do */
    i += sc_text_next(buf + i, len - i, &cp, &unsafe);
  if(!unsafe)
    return;
  sc_text_escape(tmp, size < sizeof(tmp) ? size : sizeof(tmp), buf);
  memcpy(buf, tmp, strlen(tmp) + 1);
}
