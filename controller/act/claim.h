/*
 * claim.h - the create claim's memory across passes (act/claim.c): the
 * other processes' claims this replica has seen, by its own monotonic
 * clock, and the creates Cube refused for good. The executor's create
 * path reads and updates it; the reconciler only makes and frees it.
 *
 * Ownership: act_claims_new() (NULL: out of memory) -> act_claims_free()
 * (NULL ok).
 */
#ifndef SC_ACT_CLAIM_H
#define SC_ACT_CLAIM_H

#include "controller/act/run.h"

act_claims *act_claims_new(void);
void act_claims_free(act_claims *cl);

/* The object of session si is gone from the store (its status write
 * found nothing) and this run created a sandbox for it: delete that
 * sandbox at once, audited, so no sandbox outlives its object. The run
 * waits for the call (run->pending). */
void act_create_orphaned(act_run *run, size_t si);

#endif
