/*
 * fuzz_sim_request.c - libFuzzer target for cubesim's request parsing
 * that runs without a server (cmd/cubesim/sim_query.c, sim_json.c):
 *   0 a raw query string: sim_query_get of metadata/state/limit/nextToken,
 *     then the metadata filter parser on what it found;
 *   1 a request body: sim_json_parse (strict, depth-limited, UTF-8);
 *   2 the metadata parameter value: sim_meta_filter_parse, and the
 *     differential check against the client: a filter the client decodes
 *     (cube_meta_decode) must give cubesim the same pairs.
 * The create body's field checks (templateID, timeout, metadata ...) live
 * inside the request handler sim_api_create(), which needs a server and a
 * request: they are not reached here; the e2e tests cover them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cubesim/sim_json.h"
#include "cmd/cubesim/sim_query.h"
#include "controller/cube/cube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void filter(const char *value)
{
  sim_meta_filter f;
  sc_errbuf eb;
  size_t i;
  eb.msg[0] = '\0';
  if(sim_meta_filter_parse(value, &f, &eb)) {
    if(f.n || f.kv || !eb.msg[0])
      abort();
    return;
  }
  for(i = 0; i < f.n * 2; i++)
    if(!f.kv[i])
      abort();
  sim_meta_filter_free(&f);
}

static void query(const char *q)
{
  static const char *names[] = {"metadata", "state", "limit", "nextToken",
                                "order"};
  dynbuf v;
  size_t i;
  dynbuf_init(&v, 1u << 20);
  for(i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    if(sim_query_get(q, names[i], &v) == 1 && i == 0)
      filter(dynbuf_ptr(&v));
  }
  dynbuf_free(&v);
}

static void body(const char *b, size_t n)
{
  json_object *o = NULL;
  sc_errbuf eb;
  eb.msg[0] = '\0';
  if(sim_json_parse(b, n, &o, &eb)) {
    if(o || !eb.msg[0])
      abort();
    return;
  }
  json_object_put(o);
}

/* The client's view and cubesim's view of one filter must agree. */
static void differential(const char *value)
{
  sc_kvlist l = {0};
  sc_errbuf eb;
  dynbuf once;
  sim_meta_filter f;
  size_t i;
  if(cube_meta_decode(value, &l, &eb)) {
    sc_kvlist_clear(&l);
    return;
  }
  dynbuf_init(&once, 1u << 20);
  /* the query layer decodes once before the filter parser sees it */
  if(sim_query_unescape(value, strlen(value), &once) == SC_OK &&
     !memchr(dynbuf_ptr(&once), '\0', dynbuf_len(&once)) &&
     sim_meta_filter_parse(dynbuf_ptr(&once), &f, &eb) == SC_OK) {
    if(f.n != l.n)
      abort();
    for(i = 0; i < f.n; i++) {
      const char *v = sc_kvlist_get(&l, f.kv[2 * i]);
      if(!v || strcmp(v, f.kv[2 * i + 1]))
        abort();
    }
    sim_meta_filter_free(&f);
  }
  dynbuf_free(&once);
  sc_kvlist_clear(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *txt;
  if(size < 1)
    return 0;
  txt = malloc(size);
  if(!txt)
    return 0;
  memcpy(txt, data + 1, size - 1);
  txt[size - 1] = '\0';
  switch(data[0] % 3) {
  case 0: query(txt); break;
  case 1: body((const char *)data + 1, size - 1); break;
  default:
    filter(txt);
    differential(txt);
    break;
  }
  free(txt);
  return 0;
}
