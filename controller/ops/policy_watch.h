/*
 * policy_watch.h - the tenant policy of a running controller
 * (api/policy.h): built at start from the flags and --policy FILE, and
 * built again when the file changes (polled at most once a second, like
 * the Cube key file: lib/filesig.h).
 *
 * A bad file at start is an error (the controller refuses to start). A bad
 * file at a reload keeps the last good policy in use, says so once per
 * change of the file (an ERROR log line naming file, line and field) and
 * counts it; a good one replaces it and is handed to the callback. A
 * policy is never opened up by a failure: nothing is built from a file
 * that did not read whole.
 *
 * Metrics (policy_watch_declare_metrics): session_controller_policy_
 * reloads_total{result="ok|error"} and session_controller_policy_
 * last_reload_ok (1: the file in use is the file on disk).
 *
 * Ownership: policy_watch_new() copies the flags and the path and returns
 * a watch for policy_watch_free() (NULL ok); policy_watch_current() is
 * borrowed until the next poll that reloads or the free. The callback
 * borrows the new policy on the same terms.
 */
#ifndef SC_OPS_POLICY_WATCH_H
#define SC_OPS_POLICY_WATCH_H

#include "api/policy.h"
#include "controller/ops/log.h"
#include "controller/ops/metrics.h"

typedef struct policy_watch policy_watch;
typedef void (*policy_watch_fn)(void *ud, const policy *p);

sc_err policy_watch_declare_metrics(metrics *m);
sc_err policy_watch_new(const policy_flags *flags, const char *file,
                        logger *lg, metrics *m, policy_watch **out,
                        sc_errbuf *eb);
void policy_watch_free(policy_watch *w);
/* Called after each reload that changed the policy (set before polling). */
void policy_watch_on_change(policy_watch *w, policy_watch_fn fn, void *ud);
const policy *policy_watch_current(const policy_watch *w);
/* At most once a second (now: the monotonic clock, ms): stat the file and
 * rebuild the policy if it changed. */
void policy_watch_poll(policy_watch *w, int64_t now_ms);

#endif
