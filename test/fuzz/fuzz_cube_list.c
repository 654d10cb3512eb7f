/*
 * fuzz_cube_list.c - libFuzzer target for the parser of Cube's list
 * response (cube_parse_list, controller/cube/json.c). Checks the parser's
 * promises: on error no rows and a one-line message; on success every row
 * has a valid ID, a known state and string metadata; and the one-scan
 * path (json_fast.c) agrees with json-c's wherever it answers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controller/cube/cube.h"
#include "lib/scstr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  cube_sandbox *rows = NULL;
  size_t n = 7, i;
  sc_errbuf eb;
  sc_err err;

  eb.msg[0] = '\0';
  {
    /* the one-scan path answers only what json-c's answers (json_fast.c) */
    cube_sandbox *fr = NULL, *tr = NULL;
    size_t fn = 0, tn = 0;
    sc_err fe = cube_parse_list_fast((const char *)data, size, &fr, &fn);
    sc_err te = cube_parse_list_tree((const char *)data, size, &tr, &tn, &eb);
    if(!fe && (te || fn != tn))
      abort();
    for(i = 0; !fe && i < fn; i++) {
      if(strcmp(fr[i].sandbox_id, tr[i].sandbox_id) ||
         !sc_str_eq0(fr[i].template_id, tr[i].template_id) ||
         !sc_str_eq0(fr[i].domain, tr[i].domain) ||
         fr[i].state != tr[i].state || fr[i].end_at != tr[i].end_at ||
         fr[i].started_at != tr[i].started_at ||
         !sc_kvlist_equal(&fr[i].metadata, &tr[i].metadata))
        abort();
    }
    for(i = 0; i < fn; i++)
      cube_sandbox_clear(&fr[i]);
    for(i = 0; i < tn; i++)
      cube_sandbox_clear(&tr[i]);
    free(fr);
    free(tr);
    eb.msg[0] = '\0';
  }
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
