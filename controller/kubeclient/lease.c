/* lease.c - the leader-election state machine (see lease.h). */
#include "controller/kubeclient/lease.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct lease_elector {
  char identity[LEASE_HOLDER_MAX];
  int64_t duration_ms, renew_deadline_ms, retry_ms;
  bool leader;
  bool observed_any;
  lease_record observed;   /* the record as last seen (read or written) */
  int64_t observed_mono;   /* when it last changed, on our clock */
  int64_t last_renew_mono; /* our last successful write as leader */
};

lease_elector *lease_elector_new(const lease_opts *o)
{
  lease_elector *e = calloc(1, sizeof(*e));
  if(!e)
    return NULL;
  snprintf(e->identity, sizeof(e->identity), "%s",
           o->identity ? o->identity : "");
  e->duration_ms = o->duration_ms > 0 ? o->duration_ms : 15000;
  e->renew_deadline_ms = o->renew_deadline_ms > 0 ? o->renew_deadline_ms
                                                  : 10000;
  e->retry_ms = o->retry_ms > 0 ? o->retry_ms : 2000;
  return e;
}

void lease_elector_free(lease_elector *e)
{
  free(e);
}

void lease_format_microtime(sc_time t, char *buf, size_t len)
{
  time_t s = (time_t)(t / 1000);
  struct tm tm;
  int ms = (int)(t % 1000);
  if(ms < 0) {
    ms += 1000;
    s--;
  }
  gmtime_r(&s, &tm);
  snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03d000Z",
           tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
           tm.tm_min, tm.tm_sec, ms);
}

static bool same_record(const lease_record *a, const lease_record *b)
{
  return !strcmp(a->holder, b->holder) && a->duration_s == b->duration_s &&
         !strcmp(a->acquire_time, b->acquire_time) &&
         !strcmp(a->renew_time, b->renew_time) &&
         a->transitions == b->transitions;
}

static void observe(lease_elector *e, const lease_record *r, int64_t now)
{
  if(!e->observed_any || !same_record(&e->observed, r)) {
    e->observed = *r;
    e->observed_mono = now;
    e->observed_any = true;
  }
}

static int64_t record_duration_ms(const lease_elector *e,
                                  const lease_record *r)
{
  return r->duration_s > 0 ? r->duration_s * 1000 : e->duration_ms;
}

int64_t lease_remaining_ms(const lease_elector *e, int64_t now_mono)
{
  if(!e->observed_any || !e->observed.holder[0])
    return 0;
  return e->observed_mono + record_duration_ms(e, &e->observed) - now_mono;
}

lease_decision lease_decide(lease_elector *e, bool found,
                            const lease_record *cur, int64_t now_mono,
                            sc_time now_wall, lease_record *out)
{
  char now_s[LEASE_TIME_MAX];
  memset(out, 0, sizeof(*out));
  lease_format_microtime(now_wall, now_s, sizeof(now_s));
  snprintf(out->holder, sizeof(out->holder), "%s", e->identity);
  out->duration_s = (e->duration_ms + 999) / 1000;
  snprintf(out->renew_time, sizeof(out->renew_time), "%s", now_s);
  if(!found) {
    snprintf(out->acquire_time, sizeof(out->acquire_time), "%s", now_s);
    return LEASE_CREATE;
  }
  observe(e, cur, now_mono);
  if(cur->holder[0] && strcmp(cur->holder, e->identity) &&
     lease_remaining_ms(e, now_mono) > 0) {
    /* someone else holds a lease that has not run out on our clock */
    e->leader = false;
    return LEASE_WAIT;
  }
  if(!strcmp(cur->holder, e->identity)) {
    snprintf(out->acquire_time, sizeof(out->acquire_time), "%s",
             cur->acquire_time);
    out->transitions = cur->transitions;
  }
  else {
    snprintf(out->acquire_time, sizeof(out->acquire_time), "%s", now_s);
    out->transitions = cur->transitions + 1;
  }
  return LEASE_UPDATE;
}

void lease_written(lease_elector *e, const lease_record *rec,
                   int64_t now_mono)
{
  observe(e, rec, now_mono);
  e->leader = rec->holder[0] && !strcmp(rec->holder, e->identity);
  if(e->leader)
    e->last_renew_mono = now_mono;
}

bool lease_check(lease_elector *e, int64_t now_mono)
{
  if(e->leader && now_mono - e->last_renew_mono >= e->renew_deadline_ms)
    e->leader = false;
  return e->leader;
}

void lease_failed(lease_elector *e, int64_t now_mono)
{
  (void)lease_check(e, now_mono);
}

bool lease_is_leader(const lease_elector *e)
{
  return e && e->leader;
}

bool lease_release(lease_elector *e, sc_time now_wall, lease_record *out)
{
  char now_s[LEASE_TIME_MAX];
  if(!e->leader)
    return false;
  e->leader = false;
  memset(out, 0, sizeof(*out));
  lease_format_microtime(now_wall, now_s, sizeof(now_s));
  out->duration_s = 1;
  snprintf(out->acquire_time, sizeof(out->acquire_time), "%s", now_s);
  snprintf(out->renew_time, sizeof(out->renew_time), "%s", now_s);
  out->transitions = e->observed.transitions;
  return true;
}
