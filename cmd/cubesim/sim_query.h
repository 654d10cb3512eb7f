/*
 * sim_query.h - URL query strings as E2B (Go's net/url) reads them, the
 * list endpoint's `metadata` filter, and which rows a list returns.
 *
 * The metadata filter is decoded exactly as E2B does: the parameter value
 * (already decoded once as a query parameter) is unescaped again, split on
 * '&' and at the first '=', and each key and value is unescaped once more.
 * A sandbox matches when every key is present with exactly that value.
 *
 * Ownership: sim_meta_filter holds its own copies; sim_meta_filter_free()
 * releases them (NULL ok). sim_list_walk() only reads the state; the
 * sandbox handed to its callback is the state's (sim_state.h).
 */
#ifndef SIM_QUERY_H
#define SIM_QUERY_H

#include <stddef.h>
#include "lib/dynbuf.h"
#include "lib/sc_err.h"
#include "cmd/cubesim/sim_state.h"

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


/* ---- the list's rows ----
 *
 * Which sandboxes GET /v2/sandboxes returns, in which order, as each
 * dialect does it:
 *   e2b   the filters, then pages: rows in creation order (newest first,
 *         or oldest first with asc), at most limit rows a page; the walk
 *         says where the next page starts.
 *   cube  Cube's own list: it scans the first `limit` live sandboxes of
 *         the whole store (newest first, a stable order), then applies
 *         the state and metadata filters to those; no next page, ever.
 *         So a list can be short, with fewer rows than limit, while more
 *         sandboxes match: Cube ignores paging and its limit counts what
 *         it scanned (compute nodes), not the rows it returns. */
#define SIM_WANT_RUNNING 1
#define SIM_WANT_PAUSED 2
#define SIM_WANT_PAUSING 4  /* cube only: no state filter selects it alone */
#define SIM_CUBE_LIST_LIMIT 100 /* cube: sandboxes scanned without a limit */

typedef struct sim_list_spec {
  int cube_scan;             /* 1: Cube's shape (above); 0: e2b's */
  int want;                  /* SIM_WANT_* bits */
  const sim_meta_filter *mf; /* NULL: no metadata filter */
  int64_t limit;             /* cube: sandboxes scanned; e2b: rows a page
                                (INT64_MAX: everything) */
  int asc;                   /* e2b: oldest first */
  int64_t start;             /* e2b: the store index a page starts at
                                (from a token); -1: the first */
} sim_list_spec;

/* One row, in list order: returns 1 when it was sent (it counts toward an
 * e2b page), 0 when it was lost on the way (the truncate fault). */
typedef int (*sim_list_row_fn)(void *arg, const sim_sandbox *sb);

/* Walk the list, calling row for each row it returns. Returns the store
 * index the next e2b page starts at (the X-Next-Token), or -1 when there
 * is none (always -1 in Cube's shape). */
int64_t sim_list_walk(const sim_state *st, const sim_list_spec *spec,
                      sim_list_row_fn row, void *arg);

/* Does the sandbox carry every key of the filter with that value? (NULL
 * or an empty filter: yes.) */
int sim_meta_match(const sim_sandbox *sb, const sim_meta_filter *f);

#endif
