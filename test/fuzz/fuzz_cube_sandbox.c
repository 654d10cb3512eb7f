/*
 * fuzz_cube_sandbox.c - libFuzzer target for the parsers of Cube's get
 * and create responses and of its error bodies (cube_parse_sandbox,
 * cube_parse_created, cube_parse_error_body; controller/cube/json.c).
 * The same bytes go through all three: they are all JSON objects from the
 * same peer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controller/cube/cube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *body = (const char *)data;
  cube_sandbox sb;
  char *id = NULL;
  char msg[256];
  int code = -1;
  sc_errbuf eb;
  sc_err err;

  eb.msg[0] = '\0';
  err = cube_parse_sandbox(body, size, &sb, &eb);
  if(err) {
    if(sb.sandbox_id || !eb.msg[0] || strchr(eb.msg, '\n'))
      abort();
  }
  else if(!cube_id_valid(sb.sandbox_id) || sb.state == CUBE_SB_UNKNOWN)
    abort();
  cube_sandbox_clear(&sb);

  eb.msg[0] = '\0';
  err = cube_parse_created(body, size, &id, &eb);
  if(err) {
    if(id || !eb.msg[0] || strchr(eb.msg, '\n'))
      abort();
  }
  else if(!cube_id_valid(id))
    abort();
  free(id);

  cube_parse_error_body(body, size, &code, msg, sizeof(msg));
  if((code != 0 && (code < 100 || code > 599)) || strlen(msg) >= sizeof(msg))
    abort();
  for(size_t i = 0; msg[i]; i++)
    if((unsigned char)msg[i] < 0x20)
      abort(); /* quoted messages are printable */
  return 0;
}
