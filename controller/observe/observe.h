/*
 * observe.h - one observation of Cube for a reconcile pass: the running and
 * paused lists filtered by our tags, Cube's clock (the Date of the list
 * responses), and a GET for every sandbox a session's status links to that
 * the lists missed (rule 2 of docs/architecture.md: absence is not evidence).
 *
 * Used by the reconciler and, read-only, by `sessionctl plan`.
 *
 * Ownership: observe_start() borrows the client, the sessions (they must
 * outlive the observation), the metrics and the logger (both may be NULL).
 * The callback receives an observation it owns: observation_free() it.
 */
#ifndef SC_OBSERVE_H
#define SC_OBSERVE_H

#include <stdbool.h>
#include "controller/cube/cube.h"
#include "controller/ops/log.h"
#include "controller/ops/metrics.h"

typedef struct observation {
  cube_sandbox *sbs;      /* listed, plus GET answers for linked ones */
  size_t n_sbs;
  char **gone;            /* linked IDs a GET answered 404 for */
  size_t n_gone;
  bool failed;            /* a list failed or had no Date: do not plan */
  bool truncated;         /* a list may be short: no orphan decisions */
  sc_time cube_now;       /* the earlier Date of the two lists */
  char *fail_msg;         /* why failed */
  int64_t retry_after_ms; /* the largest Retry-After seen, -1 none */
  /* the lists as made, per state ([0] running, [1] paused): by tenant
   * (observe_lists) or not, and the HTTP requests they took (pages, pages
   * asked again, a failed request) */
  bool by_tenant[2];
  size_t list_requests[2];
  /* observe_start_links(): no list was made; links_short when the GETs
   * do not tell enough to plan on (a link 404, a GET failed or carried
   * no Date): the caller lists instead */
  bool links_only;
  bool links_short;
} observation;

/* How a full pass lists each state ([0] running, [1] paused): false, one
 * list of the filter (the whole list); true, one list per tenant, the
 * filter with lea.tenant_id = tenants[i] as well (Cube ANDs the pairs).
 * Both by tenant with no tenant would list nothing: the paused state is
 * then listed whole. The tenants are only read, during the call. */
typedef struct observe_lists {
  bool by_tenant[2];
  const char *const *tenants;
  size_t n_tenants;
} observe_lists;

typedef void (*observe_cb)(observation *obs, void *ud);

/* The callback runs once, later, from the event loop. */
sc_err observe_start(cube_client *c, metrics *m, logger *lg,
                     const sc_kvlist *filter, session *const *sessions,
                     size_t n_sessions, observe_cb cb, void *ud);
/* The same, and the same two lists again for each of also_managed_by
 * (n_also names): filter with its lea.managed-by replaced by that name:
 * the sandboxes a controller's former names tagged (plan_config.
 * adopted_names). One observation of 2 + 2 * n_also lists; a sandbox
 * listed twice counts once. */
sc_err observe_start_names(cube_client *c, metrics *m, logger *lg,
                           const sc_kvlist *filter,
                           const char *const *also_managed_by, size_t n_also,
                           session *const *sessions, size_t n_sessions,
                           observe_cb cb, void *ud);
/* The same, listing as lists says (NULL: each state whole). */
sc_err observe_start_lists(cube_client *c, metrics *m, logger *lg,
                           const sc_kvlist *filter,
                           const char *const *also_managed_by, size_t n_also,
                           const observe_lists *lists,
                           session *const *sessions, size_t n_sessions,
                           observe_cb cb, void *ud);
/* A session's facts from its links alone: a GET of each session's
 * status.sandboxID and of its pendingAction's sandbox, no list; Cube's
 * clock is the earlier Date of the GETs. One request for a linked
 * session where the lists take two (one per state): what a single pass
 * of a session that has its sandbox needs (a connect, a spec change).
 * It sees no second sandbox of the session and no unlinked one, so the
 * caller uses it only where those do not matter, and lists when the
 * observation says links_short. */
sc_err observe_start_links(cube_client *c, metrics *m, logger *lg,
                           session *const *sessions, size_t n_sessions,
                           observe_cb cb, void *ud);
void observation_free(observation *obs);

/* Count one Cube call in session_controller_cube_requests_total and its
 * latency histogram. The lists of an observation are counted by the
 * observation, by their HTTP requests (each page, each page asked again,
 * a failed request), in session_controller_cube_requests_total{op="list"}
 * (the latency once, the whole list's) and in
 * session_controller_cube_list_requests_total{kind, state}: kind "whole"
 * (a full pass, our tag only), "tenant" (a full pass, one owned tenant),
 * "session" (a single pass: the filter names a session). */
void observe_count_call(metrics *m, cube_op op, const cube_result *res,
                        int64_t t0_mono_ms);

#endif
