/*
 * sim_clock.h - cubesim's virtual clock.
 *
 *   now = base + (mono - mono_at_base) * speed + advanced
 *
 * base is the wall clock when the clock was made (or a chosen start), mono
 * the monotonic clock, speed the virtual seconds per real second (0 freezes
 * time: it then moves only by sim_clock_advance). The clock never goes
 * backwards.
 *
 * Ownership: a plain struct owned by the caller; no heap memory.
 */
#ifndef SIM_CLOCK_H
#define SIM_CLOCK_H

#include <stdint.h>
#include "lib/sctime.h"

typedef struct sim_clock {
  sc_time base;     /* virtual time at mono0 */
  int64_t mono0;    /* monotonic ms when base was taken */
  double speed;     /* virtual ms per real ms, >= 0 */
  int64_t advanced; /* ms added by sim_clock_advance */
  sc_time last;     /* the latest value handed out (monotonic guard) */
} sim_clock;

void sim_clock_init(sim_clock *c, sc_time base, int64_t mono0, double speed);
/* The virtual time at monotonic time mono (tests pass their own). */
sc_time sim_clock_now_at(sim_clock *c, int64_t mono);
/* The virtual time now (sctime_mono_ms()). */
sc_time sim_clock_now(sim_clock *c);
/* Jump ahead by ms (>= 0). */
void sim_clock_advance(sim_clock *c, int64_t ms);
/* Real milliseconds until the virtual time passes `at` (rounded up, at
 * least 0); -1 when the clock is frozen (speed 0) and `at` is ahead. */
int64_t sim_clock_real_delay(const sim_clock *c, sc_time now, sc_time at);

#endif
