/*
 * meta.c - the `metadata` list filter as E2B decodes it.
 *
 * The E2B JS SDK builds the value as encodeURIComponent on each key and
 * value, URLSearchParams (a second encoding of each), and the query
 * serializer encodes the whole string once more. E2B's server undoes one
 * layer in its HTTP query parsing, one with url.QueryUnescape on the whole
 * value, and one in url.ParseQuery on each key and value. We produce and
 * accept exactly that.
 */
#include "controller/cube/cube.h"

#include <stdlib.h>
#include <string.h>

static bool unreserved(unsigned char ch)
{
  return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
         (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' ||
         ch == '~';
}

sc_err cube_pct_encode(const char *s, size_t len, dynbuf *out)
{
  static const char hex[] = "0123456789ABCDEF";
  size_t i;
  sc_err err = SC_OK;
  for(i = 0; i < len && !err; i++) {
    unsigned char ch = (unsigned char)s[i];
    if(unreserved(ch))
      err = dynbuf_add(out, &s[i], 1);
    else {
      char e[3];
      e[0] = '%';
      e[1] = hex[ch >> 4];
      e[2] = hex[ch & 15];
      err = dynbuf_add(out, e, 3);
    }
  }
  return err;
}

sc_err cube_meta_encode(const sc_kvlist *filter, dynbuf *out)
{
  dynbuf once, twice, inner;
  size_t i;
  sc_err err = SC_OK;
  dynbuf_init(&once, out->cap);
  dynbuf_init(&twice, out->cap);
  dynbuf_init(&inner, out->cap);
  /* sc_kvlist is kept sorted by key, so the order is deterministic */
  for(i = 0; filter && i < filter->n && !err; i++) {
    int part;
    if(!filter->items[i].key[0]) {
      err = SC_ERR_INVALID; /* an empty key cannot be filtered on */
      break;
    }
    if(i)
      err = dynbuf_add(&inner, "&", 1);
    for(part = 0; part < 2 && !err; part++) {
      const char *s = part ? filter->items[i].value : filter->items[i].key;
      if(part)
        err = dynbuf_add(&inner, "=", 1);
      dynbuf_reset(&once);
      dynbuf_reset(&twice);
      if(!err)
        err = cube_pct_encode(s, strlen(s), &once);
      if(!err)
        err = cube_pct_encode(dynbuf_ptr(&once), dynbuf_len(&once), &twice);
      if(!err)
        err = dynbuf_add(&inner, dynbuf_ptr(&twice), dynbuf_len(&twice));
    }
  }
  if(!err)
    err = cube_pct_encode(dynbuf_ptr(&inner), dynbuf_len(&inner), out);
  dynbuf_free(&once);
  dynbuf_free(&twice);
  dynbuf_free(&inner);
  return err;
}

static int hexval(char ch)
{
  if(ch >= '0' && ch <= '9')
    return ch - '0';
  if(ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if(ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

/* One layer of query unescaping (Go's url.QueryUnescape: '+' is a space).
 * Fails on a malformed escape or a decoded NUL. */
static sc_err unescape(const char *s, size_t len, dynbuf *out,
                       const char *what, sc_errbuf *eb)
{
  size_t i;
  sc_err err = SC_OK;
  dynbuf_reset(out);
  for(i = 0; i < len && !err; i++) {
    char ch = s[i];
    if(ch == '%') {
      int hi, lo;
      if(len - i < 3 || (hi = hexval(s[i + 1])) < 0 ||
         (lo = hexval(s[i + 2])) < 0)
        return sc_errf(eb, SC_ERR_INVALID,
                       "metadata: %s: malformed %%-escape at byte %zu", what,
                       i);
      ch = (char)(hi * 16 + lo);
      i += 2;
      if(!ch)
        return sc_errf(eb, SC_ERR_INVALID,
                       "metadata: %s: %%00 (NUL byte) at byte %zu", what,
                       i - 2);
    }
    else if(ch == '+')
      ch = ' ';
    err = dynbuf_add(out, &ch, 1);
  }
  if(err)
    return sc_errf(eb, err, "metadata: %s: %s", what, sc_strerror(err));
  return SC_OK;
}

sc_err cube_meta_decode(const char *query_value, sc_kvlist *out,
                        sc_errbuf *eb)
{
  dynbuf l1, l2, k, v;
  const char *p, *end;
  sc_err err;
  size_t cap = strlen(query_value) + 1;
  dynbuf_init(&l1, cap);
  dynbuf_init(&l2, cap);
  dynbuf_init(&k, cap);
  dynbuf_init(&v, cap);
  /* layer 1: the HTTP server's query parsing; layer 2: E2B's
   * QueryUnescape of the whole value */
  err = unescape(query_value, strlen(query_value), &l1, "query value", eb);
  if(!err)
    err = unescape(dynbuf_ptr(&l1), dynbuf_len(&l1), &l2, "value", eb);
  p = dynbuf_ptr(&l2);
  end = p + dynbuf_len(&l2);
  /* layer 3: ParseQuery: split on '&', then '=', unescape each side */
  while(!err && p < end) {
    const char *amp = memchr(p, '&', (size_t)(end - p));
    const char *seg_end = amp ? amp : end;
    const char *eq;
    if(seg_end == p) { /* empty segment, as ParseQuery skips */
      p = seg_end + 1;
      continue;
    }
    if(memchr(p, ';', (size_t)(seg_end - p))) {
      err = sc_errf(eb, SC_ERR_INVALID,
                    "metadata: a pair contains ';' (invalid in a query)");
      break;
    }
    eq = memchr(p, '=', (size_t)(seg_end - p));
    err = unescape(p, (size_t)((eq ? eq : seg_end) - p), &k, "key", eb);
    if(!err)
      err = eq ? unescape(eq + 1, (size_t)(seg_end - eq - 1), &v, "value",
                          eb)
               : (dynbuf_reset(&v), SC_OK);
    if(err)
      break;
    if(!dynbuf_len(&k)) {
      err = sc_errf(eb, SC_ERR_INVALID, "metadata: empty key");
      break;
    }
    if(sc_kvlist_get(out, dynbuf_ptr(&k))) {
      err = sc_errf(eb, SC_ERR_INVALID, "metadata: duplicate key \"%.64s\"",
                    dynbuf_ptr(&k));
      break;
    }
    err = sc_kvlist_set(out, dynbuf_ptr(&k), dynbuf_ptr(&v));
    if(err) {
      sc_errf(eb, err, "metadata: %s", sc_strerror(err));
      break;
    }
    p = seg_end + 1;
  }
  dynbuf_free(&l1);
  dynbuf_free(&l2);
  dynbuf_free(&k);
  dynbuf_free(&v);
  if(err)
    sc_kvlist_clear(out);
  return err;
}
