/*
 * fuzz_cube_list.c - libFuzzer target for the parser of Cube's list
 * response (cube_parse_list, controller/cube/json.c). Checks the parser's
 * promises: on error no rows and a one-line message; on success every row
 * has a valid ID, a known state and string metadata.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controller/cube/cube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  cube_sandbox *rows = NULL;
  size_t n = 7, i;
  sc_errbuf eb;
  sc_err err;

  eb.msg[0] = '\0';
  err = cube_parse_list((const char *)data, size, &rows, &n, &eb);
  if(err) {
    if(rows || n || !eb.msg[0] || strchr(eb.msg, '\n'))
      abort();
    return 0;
  }
  for(i = 0; i < n; i++) {
    if(!cube_id_valid(rows[i].sandbox_id) ||
       rows[i].state == CUBE_SB_UNKNOWN)
      abort();
    cube_sandbox_clear(&rows[i]);
  }
  free(rows);
  return 0;
}
