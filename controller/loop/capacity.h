/*
 * capacity.h - internal to controller/loop/: the capacity gauges of a
 * full pass (rules 14 and 15, docs/controller.md "Capacity").
 *
 * Ownership: nothing is kept; the plan and the metrics are borrowed.
 */
#ifndef SC_LOOP_CAPACITY_H
#define SC_LOOP_CAPACITY_H

#include "controller/ops/metrics.h"
#include "controller/plan/plan.h"

/* At most this many tenants get series of their own: the ones with the
 * most sandboxes (running + paused + waiting; ties by name); the others
 * are summed under tenant="_other" (no namespace can be named so). */
#define LOOP_CAPACITY_TENANTS_MAX 32

sc_err loop_capacity_declare(metrics *m);
/* Set the gauges from a plan that saw the whole fleet (p->capacity_known;
 * else nothing changes). */
void loop_capacity_gauges(metrics *m, const plan *p, const plan_config *cfg);

#endif
