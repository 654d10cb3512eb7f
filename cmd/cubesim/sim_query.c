/* sim_query.c - query strings and the metadata filter (see sim_query.h). */
#include "cmd/cubesim/sim_query.h"

#include <stdlib.h>
#include <string.h>

static int hexval(char c)
{
  if(c >= '0' && c <= '9')
    return c - '0';
  if(c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if(c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

sc_err sim_query_unescape(const char *s, size_t n, dynbuf *out)
{
  size_t i, start = 0;
  sc_err err = SC_OK;
  for(i = 0; i < n && !err; i++) {
    char c;
    if(s[i] != '%' && s[i] != '+')
      continue;
    err = dynbuf_add(out, s + start, i - start);
    if(err)
      break;
    if(s[i] == '+')
      c = ' ';
    else {
      int hi, lo;
      if(i + 2 >= n)
        return SC_ERR_INVALID;
      hi = hexval(s[i + 1]);
      lo = hexval(s[i + 2]);
      if(hi < 0 || lo < 0)
        return SC_ERR_INVALID;
      c = (char)(hi * 16 + lo);
      i += 2;
    }
    err = dynbuf_add(out, &c, 1);
    start = i + 1;
  }
  if(!err)
    err = dynbuf_add(out, s + start, n - start);
  return err;
}

int sim_query_get(const char *query, const char *name, dynbuf *out)
{
  const char *p = query;
  dynbuf key;
  int found = 0;
  if(!query)
    return 0;
  dynbuf_init(&key, 1 << 16);
  while(*p && !found) {
    const char *amp = strchr(p, '&');
    const char *end = amp ? amp : p + strlen(p);
    const char *eq = memchr(p, '=', (size_t)(end - p));
    const char *kend = eq ? eq : end;
    dynbuf_reset(&key);
    if(end > p && !memchr(p, ';', (size_t)(kend - p)) &&
       !sim_query_unescape(p, (size_t)(kend - p), &key) &&
       !strcmp(dynbuf_ptr(&key), name)) {
      dynbuf_reset(out);
      if(!eq || !sim_query_unescape(eq + 1, (size_t)(end - eq - 1), out))
        found = 1;
    }
    p = amp ? amp + 1 : end;
  }
  dynbuf_free(&key);
  return found;
}

void sim_meta_filter_free(sim_meta_filter *f)
{
  size_t i;
  if(!f)
    return;
  for(i = 0; i < f->n * 2; i++)
    free(f->kv[i]);
  free(f->kv);
  f->kv = NULL;
  f->n = 0;
}

sc_err sim_meta_filter_parse(const char *value, sim_meta_filter *f,
                             sc_errbuf *eb)
{
  dynbuf whole, part;
  const char *p, *s;
  size_t cap = 1;
  sc_err err = SC_OK;

  f->kv = NULL;
  f->n = 0;
  dynbuf_init(&whole, 1 << 20);
  dynbuf_init(&part, 1 << 20);
  if(sim_query_unescape(value, strlen(value), &whole)) {
    err = sc_errf(eb, SC_ERR_INVALID, "metadata: invalid URL escape in '%s'",
                  value);
    goto out;
  }
  s = dynbuf_ptr(&whole);
  for(p = s; *p; p++)
    if(*p == '&')
      cap++;
  f->kv = calloc(cap * 2, sizeof(char *));
  if(!f->kv) {
    err = SC_ERR_NOMEM;
    goto out;
  }
  p = s;
  while(*p) {
    const char *amp = strchr(p, '&');
    const char *end = amp ? amp : p + strlen(p);
    const char *eq = memchr(p, '=', (size_t)(end - p));
    const char *kend = eq ? eq : end;
    size_t i;
    if(end > p) {
      if(memchr(p, ';', (size_t)(kend - p))) {
        err = sc_errf(eb, SC_ERR_INVALID,
                      "metadata: invalid semicolon separator in query");
        goto out;
      }
      dynbuf_reset(&part);
      if(sim_query_unescape(p, (size_t)(kend - p), &part)) {
        err = sc_errf(eb, SC_ERR_INVALID, "metadata: invalid URL escape in"
                      " key '%.*s'", (int)(kend - p), p);
        goto out;
      }
      for(i = 0; i < f->n; i++)
        if(!strcmp(f->kv[2 * i], dynbuf_ptr(&part)))
          break;
      if(i == f->n) {
        f->kv[2 * f->n] = dynbuf_take(&part);
        if(!f->kv[2 * f->n]) {
          err = SC_ERR_NOMEM;
          goto out;
        }
        if(eq && sim_query_unescape(eq + 1, (size_t)(end - eq - 1), &part)) {
          free(f->kv[2 * f->n]);
          f->kv[2 * f->n] = NULL;
          err = sc_errf(eb, SC_ERR_INVALID, "metadata: invalid URL escape in"
                        " value '%.*s'", (int)(end - eq - 1), eq + 1);
          goto out;
        }
        f->kv[2 * f->n + 1] = dynbuf_take(&part);
        if(!f->kv[2 * f->n + 1]) {
          free(f->kv[2 * f->n]);
          f->kv[2 * f->n] = NULL;
          err = SC_ERR_NOMEM;
          goto out;
        }
        f->n++;
      }
      else if(eq) {
        /* a repeated key keeps its first value, but must still decode */
        dynbuf_reset(&part);
        if(sim_query_unescape(eq + 1, (size_t)(end - eq - 1), &part)) {
          err = sc_errf(eb, SC_ERR_INVALID, "metadata: invalid URL escape in"
                        " value '%.*s'", (int)(end - eq - 1), eq + 1);
          goto out;
        }
      }
    }
    p = amp ? amp + 1 : end;
  }
out:
  dynbuf_free(&whole);
  dynbuf_free(&part);
  if(err)
    sim_meta_filter_free(f);
  return err;
}
