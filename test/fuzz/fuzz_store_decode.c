/*
 * fuzz_store_decode.c - libFuzzer target for the store's object decoder:
 * what controller/store/sqlite/sqlite.c does with the text of a row or of a
 * history entry. The first byte picks the part:
 *   0 a whole object (session_from_json: history rows, watch events)
 *   1 the spec column (session_spec_from_json)
 *   2 the status column (session_status_from_json)
 *   3 the labels / annotations columns (kv_from_json, static in
 *     controller/store/sqlite/sqlite.c: that file is included here to reach it)
 * Whatever decodes must survive encode -> decode -> encode with the same
 * bytes (session_json.h promises lossless round trips).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controller/store/sqlite/sqlite.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_or_die(const char *a, const char *b)
{
  if(!a || !b || strcmp(a, b))
    abort();
}

static void whole(const char *txt, size_t len)
{
  session *s = NULL, *s2 = NULL;
  char *j1 = NULL, *j2 = NULL;
  sc_errbuf eb;
  eb.msg[0] = '\0';
  if(session_from_json(txt, len, &s, &eb)) {
    if(s || !eb.msg[0])
      abort();
    return;
  }
  if(session_to_json(s, &j1) || session_from_json(j1, strlen(j1), &s2, &eb) ||
     session_to_json(s2, &j2))
    abort();
  same_or_die(j1, j2);
  free(j1);
  free(j2);
  session_free(s);
  session_free(s2);
}

static void spec(const char *txt)
{
  session_spec a, b;
  char *j1 = NULL, *j2 = NULL;
  sc_errbuf eb;
  if(session_spec_from_json(txt, &a, &eb)) {
    session_spec_clear(&a);
    return;
  }
  if(session_spec_to_json(&a, &j1) || session_spec_from_json(j1, &b, &eb) ||
     session_spec_to_json(&b, &j2))
    abort();
  same_or_die(j1, j2);
  if(!session_spec_equal(&a, &b))
    abort();
  free(j1);
  free(j2);
  session_spec_clear(&a);
  session_spec_clear(&b);
}

static void status(const char *txt)
{
  session_status a, b;
  char *j1 = NULL, *j2 = NULL;
  sc_errbuf eb;
  if(session_status_from_json(txt, &a, &eb)) {
    session_status_clear(&a);
    return;
  }
  if(session_status_to_json(&a, &j1) ||
     session_status_from_json(j1, &b, &eb) ||
     session_status_to_json(&b, &j2))
    abort();
  same_or_die(j1, j2);
  if(!session_status_equal(&a, &b))
    abort();
  free(j1);
  free(j2);
  session_status_clear(&a);
  session_status_clear(&b);
}

static void kv(const char *txt)
{
  sc_kvlist a = {0}, b = {0};
  char *j1 = NULL;
  /* lenient: any text reads (what is not a string map is left out); what
   * was read writes out and reads back the same */
  if(kv_from_json(txt, &a)) {
    sc_kvlist_clear(&a);
    return;
  }
  if(kv_to_json(&a, &j1) || kv_from_json(j1, &b))
    abort();
  if(!sc_kvlist_equal(&a, &b))
    abort();
  free(j1);
  sc_kvlist_clear(&a);
  sc_kvlist_clear(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *txt;
  if(size < 1)
    return 0;
  /* columns are NUL-terminated TEXT: give the decoders a C string */
  txt = malloc(size);
  if(!txt)
    return 0;
  memcpy(txt, data + 1, size - 1);
  txt[size - 1] = '\0';
  switch(data[0] & 3) {
  case 0: whole(txt, size - 1); break;
  case 1: spec(txt); break;
  case 2: status(txt); break;
  default: kv(txt); break;
  }
  free(txt);
  return 0;
}
