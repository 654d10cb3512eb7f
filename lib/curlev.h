/*
 * curlev.h - a libcurl multi handle driven by a libevent loop (curl's
 * docs/examples/multi-event.c model), shared by every HTTP client of the
 * controller (the Cube client, the kube watch, the kube async client).
 *
 * Ownership and lifetime:
 *  - curlev_new() creates the multi handle and owns it, its timer and one
 *    event per socket curl asks to watch; curlev_free() (NULL accepted)
 *    releases them all, sockets curl never told us to REMOVE included.
 *  - The caller owns its easy handles. curlev_add() hands one to the multi;
 *    when its transfer ends, the handle is removed from the multi and
 *    done(easy, result, ud) runs (from the loop, never inside curlev_add);
 *    the callback may clean the handle up or add it again. A handle still
 *    running can be taken back with curlev_remove() (no callback then).
 *  - Free every easy handle (curlev_remove first) before curlev_free().
 *  - after(ud), when not NULL, runs once after each batch of finished
 *    transfers (the Cube client starts queued calls there).
 */
#ifndef SC_CURLEV_H
#define SC_CURLEV_H

#include <curl/curl.h>

#include "lib/sc_err.h"

struct event_base;
typedef struct curlev curlev;

typedef void (*curlev_done_fn)(CURL *easy, CURLcode result, void *ud);
typedef void (*curlev_after_fn)(void *ud);

curlev *curlev_new(struct event_base *base, curlev_done_fn done,
                   curlev_after_fn after, void *ud, sc_errbuf *eb);
void curlev_free(curlev *ev);

/* The multi handle, for curl_multi_setopt() of the caller's limits. */
CURLM *curlev_multi(curlev *ev);

/* SC_ERR_NOMEM or SC_ERR_INTERNAL when curl refuses the handle. */
sc_err curlev_add(curlev *ev, CURL *easy);
void curlev_remove(curlev *ev, CURL *easy);

#endif
