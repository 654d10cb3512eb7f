/* Tests of the leader-election state machine (controller/kubeclient/lease.c), driven
 * by an injected monotonic time: each scenario is a table of steps. */
#include <string.h>
#include "test/harness.h"
#include "controller/kubeclient/lease.h"

enum op { GET, GET404, WRITTEN, FAILED, CHECK_, RELEASE };

typedef struct step {
  enum op op;
  int64_t now;           /* monotonic ms */
  const char *holder;    /* GET: the record read */
  const char *renew;     /* GET: its renewTime (any wall time at all) */
  int64_t duration_s;    /* GET: leaseDurationSeconds (0 = 15) */
  int64_t transitions;   /* GET */
  int want;              /* GET/GET404: a lease_decision; RELEASE: 1 if a
                            record to write; others: -1 */
  int leader;            /* after the step: 1 or 0 */
} step;

typedef struct scenario {
  const char *name;
  step steps[10];
  size_t n;
} scenario;

#define S(...) {__VA_ARGS__}
static const scenario scenarios[] = {
  {"no Lease: create it, then lead",
   S({GET404, 0, NULL, NULL, 0, 0, LEASE_CREATE, 0},
     {WRITTEN, 10, NULL, NULL, 0, 0, -1, 1}), 2},
  {"another holder that stopped renewing expires 15 s after we saw it",
   S({GET, 0, "b", "r1", 15, 0, LEASE_WAIT, 0},
     {GET, 10000, "b", "r1", 15, 0, LEASE_WAIT, 0},
     {GET, 14999, "b", "r1", 15, 0, LEASE_WAIT, 0},
     {GET, 15000, "b", "r1", 15, 0, LEASE_UPDATE, 0},
     {WRITTEN, 15010, NULL, NULL, 0, 0, -1, 1}), 5},
  {"a holder that renews keeps it: expiry counts from the last change",
   S({GET, 0, "b", "r1", 15, 0, LEASE_WAIT, 0},
     {GET, 10000, "b", "r2", 15, 0, LEASE_WAIT, 0},
     {GET, 24999, "b", "r2", 15, 0, LEASE_WAIT, 0},
     {GET, 25000, "b", "r2", 15, 0, LEASE_UPDATE, 0}), 4},
  {"renewTime from a clock years behind: still valid when just seen",
   S({GET, 0, "b", "2001-01-01T00:00:00.000000Z", 15, 0, LEASE_WAIT, 0},
     {GET, 14000, "b", "2001-01-01T00:00:00.000000Z", 15, 0, LEASE_WAIT, 0}),
   2},
  {"renewTime from a clock years ahead: expires on our clock anyway",
   S({GET, 0, "b", "2099-01-01T00:00:00.000000Z", 15, 0, LEASE_WAIT, 0},
     {GET, 15000, "b", "2099-01-01T00:00:00.000000Z", 15, 0, LEASE_UPDATE,
      0}), 2},
  {"the record's own leaseDurationSeconds is used",
   S({GET, 0, "b", "r1", 1, 0, LEASE_WAIT, 0},
     {GET, 1000, "b", "r1", 1, 0, LEASE_UPDATE, 0}), 2},
  {"a released Lease (no holder) is taken at once",
   S({GET, 0, "", "r1", 1, 3, LEASE_UPDATE, 0},
     {WRITTEN, 5, NULL, NULL, 0, 0, -1, 1}), 2},
  {"a leader that cannot renew steps down at the renew deadline",
   S({GET404, 0, NULL, NULL, 0, 0, LEASE_CREATE, 0},
     {WRITTEN, 0, NULL, NULL, 0, 0, -1, 1},
     {FAILED, 2000, NULL, NULL, 0, 0, -1, 1},
     {FAILED, 9999, NULL, NULL, 0, 0, -1, 1},
     {CHECK_, 10000, NULL, NULL, 0, 0, -1, 0}), 5},
  {"renewals push the deadline",
   S({GET404, 0, NULL, NULL, 0, 0, LEASE_CREATE, 0},
     {WRITTEN, 0, NULL, NULL, 0, 0, -1, 1},
     {GET, 8000, "me", "x1", 15, 0, LEASE_UPDATE, 1},
     {WRITTEN, 8000, NULL, NULL, 0, 0, -1, 1},
     {CHECK_, 17999, NULL, NULL, 0, 0, -1, 1},
     {CHECK_, 18000, NULL, NULL, 0, 0, -1, 0}), 6},
  {"a leader that reads another holder's fresh record steps down at once",
   S({GET404, 0, NULL, NULL, 0, 0, LEASE_CREATE, 0},
     {WRITTEN, 0, NULL, NULL, 0, 0, -1, 1},
     {GET, 2000, "b", "rb", 15, 1, LEASE_WAIT, 0}), 3},
  {"release: a leader writes the Lease free; a follower has nothing",
   S({RELEASE, 0, NULL, NULL, 0, 0, 0, 0},
     {GET404, 0, NULL, NULL, 0, 0, LEASE_CREATE, 0},
     {WRITTEN, 0, NULL, NULL, 0, 0, -1, 1},
     {RELEASE, 100, NULL, NULL, 0, 0, 1, 0}), 4},
};

static void fill(lease_record *r, const step *s)
{
  memset(r, 0, sizeof(*r));
  snprintf(r->holder, sizeof(r->holder), "%s", s->holder ? s->holder : "");
  snprintf(r->renew_time, sizeof(r->renew_time), "%s",
           s->renew ? s->renew : "");
  snprintf(r->acquire_time, sizeof(r->acquire_time), "a0");
  r->duration_s = s->duration_s;
  r->transitions = s->transitions;
}

TEST(scenarios)
{
  size_t i, j;
  for(i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
    const scenario *sc = &scenarios[i];
    lease_opts o = {"me", 15000, 10000, 2000};
    lease_elector *e = lease_elector_new(&o);
    lease_record out, cur, last;
    memset(&last, 0, sizeof(last));
    CHECK(e != NULL);
    for(j = 0; j < sc->n; j++) {
      const step *s = &sc->steps[j];
      int got = -1;
      switch(s->op) {
      case GET:
        fill(&cur, s);
        got = (int)lease_decide(e, true, &cur, s->now, 1000, &out);
        last = out;
        break;
      case GET404:
        got = (int)lease_decide(e, false, NULL, s->now, 1000, &out);
        last = out;
        break;
      case WRITTEN:
        lease_written(e, &last, s->now);
        break;
      case FAILED:
        lease_failed(e, s->now);
        break;
      case CHECK_:
        (void)lease_check(e, s->now);
        break;
      case RELEASE:
        got = lease_release(e, 1000, &out) ? 1 : 0;
        if(got) {
          CHECK_MSG(!out.holder[0] && out.duration_s == 1,
                    "%s: the release record holds '%s' for %lld s",
                    sc->name, out.holder, (long long)out.duration_s);
        }
        break;
      }
      if(s->op == GET || s->op == GET404 || s->op == RELEASE)
        CHECK_MSG(got == s->want, "%s, step %zu: got %d, want %d", sc->name,
                  j, got, s->want);
      CHECK_MSG(lease_is_leader(e) == (s->leader == 1),
                "%s, step %zu: leader %d, want %d", sc->name, j,
                lease_is_leader(e), s->leader);
    }
    lease_elector_free(e);
  }
}

TEST(update_record_fields)
{
  lease_opts o = {"me", 15000, 10000, 2000};
  lease_elector *e = lease_elector_new(&o);
  lease_record cur, out;
  memset(&cur, 0, sizeof(cur));
  /* taking a released Lease: a new acquireTime, transitions + 1 */
  snprintf(cur.acquire_time, sizeof(cur.acquire_time), "old");
  cur.transitions = 4;
  CHECK_INT(lease_decide(e, true, &cur, 0, 1764411300123LL, &out),
            LEASE_UPDATE);
  CHECK_STR(out.holder, "me");
  CHECK_INT(out.duration_s, 15);
  CHECK_INT(out.transitions, 5);
  CHECK_STR(out.acquire_time, "2025-11-29T10:15:00.123000Z");
  CHECK_STR(out.renew_time, "2025-11-29T10:15:00.123000Z");
  lease_written(e, &out, 0);
  /* renewing our own: acquireTime and transitions kept */
  cur = out;
  CHECK_INT(lease_decide(e, true, &cur, 2000, 1764411302000LL, &out),
            LEASE_UPDATE);
  CHECK_STR(out.acquire_time, "2025-11-29T10:15:00.123000Z");
  CHECK_STR(out.renew_time, "2025-11-29T10:15:02.000000Z");
  CHECK_INT(out.transitions, 5);
  CHECK_INT(lease_remaining_ms(e, 2000), 13000); /* unchanged since 0 */
  lease_elector_free(e);
  lease_elector_free(NULL);
}

TEST_LIST = {
  T(scenarios),
  T(update_record_fields),
  {NULL, NULL},
};
TEST_MAIN()
