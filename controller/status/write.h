/*
 * write.h - the status writer of a run (act/run.h): every status write of
 * a pass, each by compare-and-set on the version the session was read at
 * (rule 7), and the purge of a finished tombstone.
 *
 *   status_write_early()  before the actions: a create's claim, a link
 *                         to an adopted sandbox; later writes go on top
 *   status_session_end()  after a session's last action: its status once
 *                         (or its tombstone purged, or nothing when it did
 *                         not change); then run->session_end()
 *   status_own()          a copy of the plan's status to fold effects into
 *
 * A copy that fails (out of memory) makes that session's status unknown
 * for the pass (status_broken): it is not written, and its turn ends as a
 * failure (backoff), never as an emptied status written by CAS.
 *
 * Ownership: the run is borrowed; status_write_early() takes st over (it
 * is cleared on every path). Store writes in flight hold run->pending.
 */
#ifndef SC_STATUS_WRITE_H
#define SC_STATUS_WRITE_H

#include "controller/act/run.h"

/* Make run->sess[si].st a copy the run owns (no-op when it is). An error:
 * the session is marked broken (and failed). */
sc_err status_own(act_run *run, size_t si);
/* The session's status is unknown this pass: no write, a failed turn. */
void status_broken(act_run *run, size_t si);

/* cb(run, si, err, msg, ud) once the store answered: err SC_OK when st is
 * what the store now holds. */
typedef void (*status_early_fn)(act_run *run, size_t si, sc_err err,
                                const char *msg, void *ud);
/* An error return: nothing was sent, no callback comes. */
sc_err status_write_early(act_run *run, size_t si, session_status *st,
                          status_early_fn cb, void *ud, sc_errbuf *eb);

void status_session_end(act_run *run, size_t si);

/* Ready=False/CubeUnauthorized with msg on each live session of ss whose
 * Ready does not already say so: at most max writes, best effort (a
 * conflict or a failure is left to the next pass). */
void status_key_refused(store *st, session *const *ss, size_t n,
                        const char *msg, size_t max);

#endif
