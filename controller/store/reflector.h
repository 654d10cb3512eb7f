/*
 * reflector.h - keep a consumer in step with a store: list, then watch
 * from the list's revision, and list again whenever the watch ends (the
 * model is client-go's tools/cache Reflector, ListAndWatch). It owns the
 * relist and the backoff, so its consumer (the controller's loop) only
 * receives a list now and then and the events in between. Generic over
 * the store backends: it calls only store.h (store_list_async,
 * store_watch_start, store_watch_stop), on the loop given to
 * store_open(), which the caller passes again in opts.base.
 *
 * What happens, in order (each step from the loop, never inside
 * reflector_start() or another reflector call):
 *
 *   1. LIST   store_list_async(opts.namespace_, opts.include_deleted).
 *             Failed: error(ph, err, msg, delay_ms) with the delay before the
 *             next list (the backoff below), then 1 again after it.
 *   2.        Listed: the backoff is reset, relisted(list) runs, then the
 *             watch is started from list->revision (a copy taken before
 *             the callback: the callback may take the whole list).
 *             store_watch_start() failed: error(ph, err, msg, delay_ms), 1
 *             after the backoff.
 *   3. WATCH  event(ev) for each change after that revision, in revision
 *             order, the object valid only during the call.
 *   4.        The watch reported an error (any: SC_ERR_EXPIRED when the
 *             history no longer reaches its position; another when an
 *             event may have been lost): the watch is stopped, then
 *             error(ph, err, msg, delay_ms) and 1 again: at once (delay 0)
 *             when the watch had run for at least the first backoff
 *             step (opts.backoff_ms), else after the backoff, so a
 *             watch that fails as soon as it starts is not restarted
 *             in a tight loop.
 *
 * So relisted() always comes before the events of the watch that
 * follows it, and after it no event of an older watch comes. A consumer
 * that concludes from absence uses relisted()'s list (whose skipped
 * objects make it incomplete, store.h).
 *
 * Backoff: the n-th failure in a row waits d = min(opts.backoff_ms *
 * 2^(n-1), opts.backoff_max_ms), jittered to a random value in
 * [d/2, d]; a list that succeeds resets it. Defaults 1000 ms and
 * 30000 ms.
 *
 * Ownership: reflector_new() gives the caller a reflector to
 * reflector_free() (NULL accepted); it borrows the store, which must
 * outlive it; opts are copied. The list given to relisted() is the
 * reflector's: the callback may take its items (or all of it) by
 * zeroing the fields it takes, as with store_reply; what is left is
 * freed after it returns.
 *
 * Stopping: reflector_stop() and reflector_free() may be called from any
 * callback of the reflector (or of anything else on the loop). After
 * either returns no callback of the reflector runs again: a watch is
 * stopped at once, a pending backoff is cancelled, and the answer of a
 * list still in flight (store.h has no cancel) is dropped when it comes.
 * reflector_free() called from inside one of its own callbacks frees
 * the reflector once that callback returns. A reflector freed while its
 * list is in flight stays allocated until that answer comes and is then
 * freed; a store_close() before that abandons the answer (store.h) and
 * with it those few bytes: an owner that closes the store right after
 * calls reflector_stop() and runs the loop until
 * reflector_list_in_flight() is false first (the controller's shutdown
 * need not: the process ends).
 */
#ifndef SC_STORE_REFLECTOR_H
#define SC_STORE_REFLECTOR_H

#include <stdbool.h>
#include <stdint.h>
#include "controller/store/store.h"

typedef struct reflector reflector;

struct event_base;

typedef struct reflector_opts {
  struct event_base *base;  /* the store's loop (store_open_opts.base);
                               required */
  const char *namespace_;   /* the list's (NULL = all); copied */
  bool include_deleted;     /* the list's */
  int backoff_ms;           /* first backoff step; 0 = 1000 */
  int backoff_max_ms;       /* its cap; 0 = 30000 */
} reflector_opts;

/* what failed, for error() */
typedef enum reflector_phase {
  REFLECTOR_LIST,          /* a list failed or could not be sent */
  REFLECTOR_WATCH_START,   /* store_watch_start() failed */
  REFLECTOR_WATCH_ENDED    /* a running watch reported an error */
} reflector_phase;

typedef struct reflector_cbs {
  /* after each successful list (required) */
  void (*relisted)(store_list_result *list, void *ud);
  /* each watch event (required) */
  void (*event)(const store_event *ev, void *ud);
  /* a failed list, a failed watch start, a watch that ended (may be
   * NULL): which of the three, err, the store's message, and the wait
   * before the next list in ms (0: at once) */
  void (*error)(reflector_phase ph, sc_err err, const char *msg,
                int64_t delay_ms, void *ud);
} reflector_cbs;

/* SC_ERR_INVALID (no store, no opts.base, a callback missing) or
 * SC_ERR_NOMEM; nothing is sent until reflector_start(). */
sc_err reflector_new(store *st, const reflector_opts *opts,
                     const reflector_cbs *cbs, void *ud, reflector **out,
                     sc_errbuf *eb);
/* Send the first list (step 1). A list that cannot even be sent is a
 * failed list: error() from the loop and the backoff. SC_ERR_INVALID
 * when already started or stopped. */
sc_err reflector_start(reflector *r, sc_errbuf *eb);
/* No callback after this returns; idempotent; NULL accepted. */
void reflector_stop(reflector *r);
/* reflector_stop() and free (see "Stopping" above). NULL accepted. */
void reflector_free(reflector *r);

/* A list of the reflector is in flight (its answer is still to come). */
bool reflector_list_in_flight(const reflector *r);
/* The watch is running (step 3). */
bool reflector_watching(const reflector *r);
/* The revision of the last list or event ("" before the first list). */
const char *reflector_revision(const reflector *r);
/* Lists that succeeded, and failures in a row now (0 after a success). */
uint64_t reflector_lists(const reflector *r);
int reflector_failures(const reflector *r);

#endif
