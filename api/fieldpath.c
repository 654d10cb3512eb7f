/* fieldpath.c - field paths and quoted values for error messages. */
#include "api/fieldpath.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool plain_key(const char *k)
{
  if(!*k)
    return false;
  for(; *k; k++) {
    unsigned char c = (unsigned char)*k;
    if(!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  }
  return true;
}

void fieldpath_key(char *out, size_t len, const char *parent,
                   const char *key)
{
  if(!len)
    return;
  if(!parent)
    parent = "";
  if(plain_key(key))
    snprintf(out, len, "%s%s%s", parent, *parent ? "." : "", key);
  else {
    char q[FIELDPATH_QUOTE_MAX];
    fieldpath_quote(q, sizeof(q), key, strlen(key));
    snprintf(out, len, "%s[%s]", parent, q);
  }
}

void fieldpath_index(char *out, size_t len, const char *parent, size_t i)
{
  if(!len)
    return;
  snprintf(out, len, "%s[%zu]", parent ? parent : "", i);
}

void fieldpath_quote(char *out, size_t len, const char *s, size_t slen)
{
  size_t o = 0, i;
  if(!len)
    return;
  if(len < 8) {
    out[0] = '\0';
    return;
  }
  out[o++] = '"';
  for(i = 0; i < slen; i++) {
    unsigned char c = (unsigned char)s[i];
    char e[8];
    size_t el;
    if(c == '"' || c == '\\')
      el = (size_t)snprintf(e, sizeof(e), "\\%c", c);
    else if(c == '\n')
      el = (size_t)snprintf(e, sizeof(e), "\\n");
    else if(c == '\r')
      el = (size_t)snprintf(e, sizeof(e), "\\r");
    else if(c == '\t')
      el = (size_t)snprintf(e, sizeof(e), "\\t");
    else if(c < 0x20 || c >= 0x7f)
      el = (size_t)snprintf(e, sizeof(e), "\\x%02x", c);
    else {
      e[0] = (char)c;
      e[1] = '\0';
      el = 1;
    }
    /* keep room for the escape, `..."` and the NUL */
    if(o + el + 5 > len) {
      memcpy(out + o, "...", 3);
      o += 3;
      break;
    }
    memcpy(out + o, e, el);
    o += el;
  }
  out[o++] = '"';
  out[o] = '\0';
}
