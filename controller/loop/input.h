/*
 * input.h - internal to controller/loop/: what a pass hands the planner
 * besides the sessions and the observation (input.c).
 *
 * Ownership: loop_check_objects() returns an array for
 * loop_free_invalid() (NULL ok); loop_held_tenants() returns an array
 * for free() whose strings point into the list.
 */
#ifndef SC_LOOP_INPUT_H
#define SC_LOOP_INPUT_H

#include <stdbool.h>
#include "controller/ops/log.h"
#include "controller/ops/metrics.h"
#include "controller/store/store.h"
#include "controller/cube/cube.h"

/* Per object, why it is invalid (NULL: valid); NULL when all are valid
 * (or out of memory). Sets session_controller_sessions_invalid. dialect:
 * Cube's, as probed: under E2B a spec.workspace is refused (E2B has no
 * host mounts); dialect_unanswered (the last probe got no answer): it
 * waits, refused for now with a reason that says so. */
char **loop_check_objects(logger *lg, metrics *mt, session *const *ss,
                          size_t n, cube_dialect dialect,
                          bool dialect_unanswered);
void loop_free_invalid(char **why, size_t n);

/* The namespaces of the objects the list skipped; *all: every orphan is
 * held. */
const char **loop_held_tenants(const store_list_result *l, size_t *n,
                               bool *all);

#endif
