/*
 * intent_seen.h - how long this process has seen each session's written
 * intent (status.pendingAction) as it is now, on its monotonic clock.
 *
 * A reclaim's intent may have a DELETE on its way, by whichever replica
 * wrote it; none can be once the intent is older than the time a DELETE
 * of it may take to go and end (plan.h, reclaim_void_after_ms). The
 * writer's time cannot be compared with ours (rule 1), but an interval
 * can: the intent was written before this process first saw it, so
 * having seen it unchanged for T means it is at least T old. Unchanged:
 * the same sandbox, writer and Cube time; a re-recorded intent (carried
 * on by another replica) is a new one and its count starts again.
 *
 * The planner gets the durations as plan_input.intent_seen_ms.
 *
 * Ownership: intent_seen_new() (NULL: out of memory) ->
 * intent_seen_free() (NULL ok). intent_seen_update() fills the caller's
 * array; the table copies what it keeps of the sessions. Out of memory
 * it forgets the entry and says 0 for it: an intent first seen now, the
 * safe side (nothing is voided early).
 */
#ifndef SC_LOOP_INTENT_SEEN_H
#define SC_LOOP_INTENT_SEEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "api/session.h"

typedef struct intent_seen intent_seen;

intent_seen *intent_seen_new(void);
void intent_seen_free(intent_seen *t);

/* For each of the n sessions, out[i] = the ms this process has seen its
 * current pendingAction (0: first seen now, or none). full: the sessions
 * are the whole store, so the entries of every other session are
 * forgotten; else only the given sessions' entries change. Returns true
 * when some session has an intent (out was written), false when none
 * has (out untouched: the caller may pass NULL to the planner). out
 * holds n entries. */
bool intent_seen_update(intent_seen *t, session *const *ss, size_t n,
                        bool full, int64_t now_mono, int64_t *out);

/* entries kept (tests) */
size_t intent_seen_count(const intent_seen *t);

#endif
