/* sim_clock.c - the virtual clock (see sim_clock.h). */
#include "cmd/cubesim/sim_clock.h"

#include <math.h>

void sim_clock_init(sim_clock *c, sc_time base, int64_t mono0, double speed)
{
  c->base = base;
  c->mono0 = mono0;
  c->speed = speed < 0 ? 0 : speed;
  c->advanced = 0;
  c->last = base;
}

sc_time sim_clock_now_at(sim_clock *c, int64_t mono)
{
  int64_t real = mono - c->mono0;
  sc_time t;
  if(real < 0)
    real = 0;
  t = c->base + (int64_t)((double)real * c->speed) + c->advanced;
  if(t < c->last)
    t = c->last;
  c->last = t;
  return t;
}

sc_time sim_clock_now(sim_clock *c)
{
  return sim_clock_now_at(c, sctime_mono_ms());
}

void sim_clock_advance(sim_clock *c, int64_t ms)
{
  if(ms > 0) {
    c->advanced += ms;
    c->last += ms;
  }
}

int64_t sim_clock_real_delay(const sim_clock *c, sc_time now, sc_time at)
{
  double d;
  if(at <= now)
    return 0;
  if(c->speed <= 0)
    return -1;
  d = ceil((double)(at - now) / c->speed);
  if(d > 86400000.0 * 365)
    d = 86400000.0 * 365;
  return (int64_t)d;
}
