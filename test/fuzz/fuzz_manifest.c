/*
 * fuzz_manifest.c - libFuzzer target for the manifest reader
 * (api/manifest.c): any bytes as a YAML file. Beyond "no crash, no leak",
 * it checks the reader's promises: an accepted object validates and
 * survives the JSON round trip the store does, and every error is one
 * printable line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/manifest.h"
#include "api/session_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  manifest_set set;
  manifest_opts opts;
  size_t i;

  memset(&set, 0, sizeof(set));
  memset(&opts, 0, sizeof(opts));
  opts.max_bytes = 64 * 1024;
  (void)manifest_read_buffer("fuzz.yaml", (const char *)data, size, &opts,
                             &set);
  for(i = 0; i < set.n_errors; i++) {
    if(!set.errors[i] || strchr(set.errors[i], '\n'))
      abort(); /* errors are one line */
  }
  for(i = 0; i < set.n; i++) {
    char **errs = NULL;
    size_t n_errs = 0, j;
    if(session_validate(set.items[i].s, &errs, &n_errs) != SC_OK)
      abort(); /* an accepted object must validate */
    {
      /* and the store must keep it as it is: a JSON round trip */
      char *j1 = NULL, *j2 = NULL;
      session *back = NULL;
      sc_errbuf eb;
      if(session_to_json(set.items[i].s, &j1) ||
         session_from_json(j1, strlen(j1), &back, &eb) ||
         session_to_json(back, &j2) || strcmp(j1, j2))
        abort();
      free(j1);
      free(j2);
      session_free(back);
    }
    for(j = 0; j < n_errs; j++)
      free(errs[j]);
    free(errs);
  }
  manifest_set_free(&set);
  return 0;
}
