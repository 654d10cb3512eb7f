/*
 * key.h - Ready=False/CubeUnauthorized on the sessions while Cube refuses
 * the key (status/key.c). No pass gets as far as acting then, so no run
 * can say it; the loop calls this instead.
 *
 * Ownership: st and the sessions are borrowed for the call; the writes
 * copy what they need.
 */
#ifndef SC_STATUS_KEY_H
#define SC_STATUS_KEY_H

#include <stddef.h>
#include "api/session.h"
#include "controller/store/store.h"

/* Ready=False/CubeUnauthorized with msg on each live session of ss whose
 * Ready does not already say so: at most max writes, best effort (a
 * conflict or a failure is left to the next pass). */
void status_key_refused(store *st, session *const *ss, size_t n,
                        const char *msg, size_t max);

#endif
