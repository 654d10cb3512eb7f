/*
 * status.h - the status writes of a run (act/run.h): every status write of
 * a pass, each by compare-and-set on the version the session was read at
 * (rule 7), and the purge of a finished tombstone.
 *
 * They belong to the run, not to status/: what a session's status says
 * at the end of its turn is the plan's status with the effects of the
 * run's actions folded in (a created sandbox, an intent, a claim), and
 * whether a tombstone may go depends on how those actions ended. The
 * dependency goes one way: act/ uses status/ (Events, the key refusal),
 * status/ includes nothing of act/.
 *
 *   act_status_write_early()  before the actions: a create's claim, a
 *                             link to an adopted sandbox; later writes go
 *                             on top
 *   act_status_session_end()  after a session's last action: its status
 *                             once (or its tombstone purged, or nothing
 *                             when it did not change); then
 *                             run->session_end()
 *   act_status_own()          a copy of the plan's status to fold effects
 *                             into
 *
 * A copy that fails (out of memory) makes that session's status unknown
 * for the pass (act_status_broken): it is not written, and its turn ends
 * as a failure (backoff), never as an emptied status written by CAS.
 *
 * Ownership: the run is borrowed; act_status_write_early() takes st over
 * (it is cleared on every path). Store writes in flight hold run->pending.
 */
#ifndef SC_ACT_STATUS_H
#define SC_ACT_STATUS_H

#include "controller/act/run.h"

/* Make run->sess[si].st a copy the run owns (no-op when it is). An error:
 * the session is marked broken (and failed). */
sc_err act_status_own(act_run *run, size_t si);
/* The session's status is unknown this pass: no write, a failed turn. */
void act_status_broken(act_run *run, size_t si);

/* cb(run, si, err, msg, ud) once the store answered: err SC_OK when st is
 * what the store now holds. */
typedef void (*act_status_early_fn)(act_run *run, size_t si, sc_err err,
                                const char *msg, void *ud);
/* An error return: nothing was sent, no callback comes. */
sc_err act_status_write_early(act_run *run, size_t si, session_status *st,
                          act_status_early_fn cb, void *ud, sc_errbuf *eb);

void act_status_session_end(act_run *run, size_t si);

#endif
