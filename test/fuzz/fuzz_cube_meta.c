/*
 * fuzz_cube_meta.c - libFuzzer target for the metadata filter encoder and
 * decoder (controller/cube/meta.c).
 *  - the input as a URL value: cube_meta_decode must not crash; what it
 *    accepts must encode and decode back to the same list;
 *  - the input as a list (key NUL value NUL key NUL value ...): whatever
 *    cube_meta_encode writes must use only URL-safe bytes and decode back
 *    to the same list.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controller/cube/cube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void url_safe_or_die(const dynbuf *b)
{
  const char *p = dynbuf_ptr(b);
  size_t i;
  for(i = 0; i < dynbuf_len(b); i++) {
    char c = p[i];
    if(!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
         c == '~' || c == '%'))
      abort();
  }
}

static void roundtrip(const sc_kvlist *l)
{
  dynbuf b;
  sc_kvlist back = {0};
  sc_errbuf eb;
  dynbuf_init(&b, 16u << 20);
  if(cube_meta_encode(l, &b))
    abort();
  url_safe_or_die(&b);
  eb.msg[0] = '\0';
  if(cube_meta_decode(dynbuf_ptr(&b), &back, &eb))
    abort();
  if(!sc_kvlist_equal(l, &back))
    abort();
  sc_kvlist_clear(&back);
  dynbuf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *txt = malloc(size + 1);
  sc_kvlist l = {0};
  sc_errbuf eb;
  size_t off;
  if(!txt)
    return 0;
  memcpy(txt, data, size);
  txt[size] = '\0';

  /* 1: the bytes as the query value (up to the first NUL) */
  eb.msg[0] = '\0';
  if(cube_meta_decode(txt, &l, &eb) == SC_OK)
    roundtrip(&l);
  else if(l.n || !eb.msg[0])
    abort(); /* an error leaves no half list and says why */
  sc_kvlist_clear(&l);

  /* 2: the bytes as key/value pairs split on NUL */
  for(off = 0; off < size;) {
    const char *k = txt + off;
    const char *v;
    off += strlen(k) + 1;
    if(off > size)
      break;
    v = txt + off;
    off += strlen(v) + 1;
    if(off > size + 1)
      break;
    if(k[0] && sc_kvlist_set(&l, k, v))
      abort();
  }
  roundtrip(&l);
  sc_kvlist_clear(&l);
  free(txt);
  return 0;
}
