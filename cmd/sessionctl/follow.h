/*
 * follow.h - wait until one session reaches a state: the engine of
 * `sessionctl connect` and `sessionctl wait`.
 *
 * ctl_follow() reads the session (one object and its version; when it is
 * absent, or its version is too old for the store's history, the
 * namespace's list and its revision), gives the object to the caller's
 * check, then follows the store's watch from that version and gives the check every new version
 * of the object, until the check decides or the timeout passes. Nothing
 * is lost between the list and the watch (the watch starts at the list's
 * revision). When the store's history no longer reaches the watch
 * (SC_ERR_EXPIRED) it lists again and goes on; other watch errors are
 * printed as warnings and the store goes on watching.
 *
 * Ownership: st and base are the caller's; st must have been opened with
 * base (store_open_opts.base). The check gets an object valid during the
 * call only.
 */
#ifndef SC_CTL_FOLLOW_H
#define SC_CTL_FOLLOW_H

#include <stdint.h>
#include "api/session.h"
#include "controller/store/store.h"

struct event_base;

/* The check's answer: keep waiting, or the exit status to end with. */
#define CTL_FOLLOW_MORE (-1)

/* s: the object as it is now; NULL when it is absent or deleted (a
 * tombstone, or being deleted). Prints what it decides itself. */
typedef int (*ctl_follow_check)(const session *s, void *ud);

/* The check's exit status; CTL_EXIT_TIMEOUT when timeout_ms passed first
 * (nothing printed: the caller says what it waited for; timeout_ms 0
 * checks once); CTL_EXIT_FAIL when the store failed (printed). */
int ctl_follow(store *st, struct event_base *base, const char *ns,
               const char *name, int64_t timeout_ms, ctl_follow_check check,
               void *ud);

/* Parse a --timeout value (a duration: 30s, 2m, 500ms, 0); false with a
 * usage error printed naming flag when bad. */
bool ctl_parse_timeout(const char *flag, const char *val, int64_t *ms);

#endif
