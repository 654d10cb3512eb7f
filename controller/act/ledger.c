/*
 * ledger.c - the deletions this process made, by Cube's clock, for the
 * brakes' windows (run.h, act_ledger): the orphan guard's budget and the
 * reclaim brake count what went within the last window, not only what is
 * due in one pass.
 *
 * Cost, written down: a ring of at most ACT_LEDGER_MAX times per kind, a
 * count is a scan of it (a few microseconds at the cap, once per pass);
 * when full the oldest is dropped, so at the cap the count is a lower
 * bound of a burst that large, which the fraction has stopped long before.
 */
#include "controller/act/run.h"

#include <stdlib.h>

void act_ledger_note(act_ledger *l, sc_time at)
{
  if(!l)
    return;
  if(!l->at && !(l->at = calloc(ACT_LEDGER_MAX, sizeof(*l->at))))
    return; /* out of memory: the window undercounts; the fraction holds */
  l->at[(l->head + l->n) % ACT_LEDGER_MAX] = at;
  if(l->n < ACT_LEDGER_MAX)
    l->n++;
  else
    l->head = (l->head + 1) % ACT_LEDGER_MAX;
}

size_t act_ledger_count(const act_ledger *l, sc_time now, int64_t window_ms)
{
  size_t i, n = 0;
  if(!l || !l->at || !now)
    return 0;
  for(i = 0; i < l->n; i++) {
    sc_time at = l->at[(l->head + i) % ACT_LEDGER_MAX];
    /* later than now: Cube's clock went back; counted (the safe side) */
    if(at > now - window_ms)
      n++;
  }
  return n;
}

void act_ledger_clear(act_ledger *l)
{
  if(!l)
    return;
  free(l->at);
  l->at = NULL;
  l->n = l->head = 0;
}
