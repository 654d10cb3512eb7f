/*
 * sim_query.h - URL query strings as E2B (Go's net/url) reads them, and the
 * list endpoint's `metadata` filter.
 *
 * The metadata filter is decoded exactly as E2B does: the parameter value
 * (already decoded once as a query parameter) is unescaped again, split on
 * '&' and at the first '=', and each key and value is unescaped once more.
 * A sandbox matches when every key is present with exactly that value.
 *
 * Ownership: sim_meta_filter holds its own copies; sim_meta_filter_free()
 * releases them (NULL ok).
 */
#ifndef SIM_QUERY_H
#define SIM_QUERY_H

#include <stddef.h>
#include "lib/dynbuf.h"
#include "lib/sc_err.h"

/* Go's url.QueryUnescape: "+" is a space, "%XY" must be two hex digits.
 * Appends to out; SC_ERR_INVALID on a bad escape. */
sc_err sim_query_unescape(const char *s, size_t n, dynbuf *out);

/* The first parameter called name in the raw query string (NULL ok),
 * decoded into out (reset first). Pairs with a bad escape are skipped, as
 * Go does. Returns 1 when found, 0 when absent. */
int sim_query_get(const char *query, const char *name, dynbuf *out);

typedef struct sim_meta_filter {
  char **kv;    /* key, value, key, value ... */
  size_t n;     /* pairs */
} sim_meta_filter;

/* Decode a metadata parameter value (already query-decoded once). */
sc_err sim_meta_filter_parse(const char *value, sim_meta_filter *f,
                             sc_errbuf *eb);
void sim_meta_filter_free(sim_meta_filter *f);

#endif
