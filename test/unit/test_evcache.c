/* Tests of the Event de-duplication table (controller/kubeclient/evcache.c), with
 * an injected monotonic time. */
#include <stdio.h>
#include "test/harness.h"
#include "controller/kubeclient/evcache.h"

#define MIN (60 * 1000)

TEST(key_separates_fields)
{
  char a[256], b[256];
  evcache_key("u", "R", "m", "Normal", a, sizeof(a));
  evcache_key("u", "R", "m", "Warning", b, sizeof(b));
  CHECK(strcmp(a, b) != 0);
  evcache_key("u", "Rm", "", "Normal", b, sizeof(b));
  CHECK(strcmp(a, b) != 0);
  evcache_key("u", "R", "m", "Normal", b, sizeof(b));
  CHECK_STR(a, b);
}

/* a table of (op, key, now) -> expected find result */
TEST(window_and_counts)
{
  static const struct {
    char op;            /* 'f' find, 'p' put, 'x' forget */
    const char *key;
    int64_t now;
    const char *name;   /* put: the name; find: the name expected or NULL */
    int64_t count;      /* put: the count; find: the count expected */
  } steps[] = {
    {'f', "k1", 0, NULL, 0},             /* nothing yet: create */
    {'p', "k1", 0, "ev.1", 1},
    {'f', "k1", 1000, "ev.1", 1},        /* repeated: patch ev.1 */
    {'p', "k1", 1000, "ev.1", 2},
    {'f', "k1", 1000 + 10 * MIN - 1, "ev.1", 2},  /* within 10 min */
    {'f', "k2", 2000, NULL, 0},          /* another key: another Event */
    {'p', "k2", 2000, "ev.2", 1},
    {'f', "k1", 1000 + 10 * MIN, NULL, 0},        /* the window passed */
    {'f', "k2", 2000 + 5 * MIN, "ev.2", 1},
    {'x', "k2", 0, NULL, 0},             /* the server lost it (404) */
    {'f', "k2", 2000 + 5 * MIN, NULL, 0},
  };
  evcache *c = evcache_new(8, 10 * MIN);
  size_t i;
  CHECK(c != NULL);
  for(i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
    const evcache_entry *e;
    switch(steps[i].op) {
    case 'p':
      CHECK_OK(evcache_put(c, steps[i].key, steps[i].name, steps[i].count,
                           "2026-01-01T00:00:00Z", steps[i].now));
      break;
    case 'x':
      evcache_forget(c, steps[i].key);
      break;
    default:
      e = evcache_find(c, steps[i].key, steps[i].now);
      if(!steps[i].name)
        CHECK_MSG(e == NULL, "step %zu: found %s", i, e ? e->name : "");
      else {
        CHECK_MSG(e != NULL, "step %zu: not found", i);
        CHECK_STR(e->name, steps[i].name);
        CHECK_INT(e->count, steps[i].count);
        CHECK_STR(e->first_ts, "2026-01-01T00:00:00Z");
      }
    }
  }
  evcache_free(c);
}

TEST(bounded_evicts_least_recent)
{
  evcache *c = evcache_new(3, 10 * MIN);
  char k[16], n[16];
  int i;
  for(i = 0; i < 3; i++) {
    snprintf(k, sizeof(k), "k%d", i);
    snprintf(n, sizeof(n), "n%d", i);
    CHECK_OK(evcache_put(c, k, n, 1, "", i * 1000));
  }
  /* k0 sent again: now the most recent; k1 is the oldest */
  CHECK_OK(evcache_put(c, "k0", "n0", 2, "", 5000));
  CHECK_OK(evcache_put(c, "k3", "n3", 1, "", 6000));
  CHECK_INT(evcache_len(c), 3);
  CHECK(evcache_find(c, "k1", 6000) == NULL);
  CHECK(evcache_find(c, "k0", 6000) != NULL);
  CHECK(evcache_find(c, "k2", 6000) != NULL);
  CHECK(evcache_find(c, "k3", 6000) != NULL);
  evcache_free(c);
  evcache_free(NULL);
}

TEST_LIST = {
  T(key_separates_fields),
  T(window_and_counts),
  T(bounded_evicts_least_recent),
  {NULL, NULL},
};
TEST_MAIN()
