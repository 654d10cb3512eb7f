/* lib/hmap.c and lib/schash.h: the one hash table, against a plain array
 * model, with forced collisions, removals in every position of a run, and
 * the multimap walk. */
#include "test/harness.h"
#include "lib/hmap.h"

#include <stdio.h>

typedef struct rec {
  char key[16];
  int n;
} rec;

static bool rec_eq(const void *v, const void *key, void *ud)
{
  (void)ud;
  return !strcmp(((const rec *)v)->key, key);
}

/* every hash the same low bits when ud says so: long runs to shift */
static uint64_t h_of(const char *k, int collide)
{
  return collide ? (sc_hash_id(k) << 20) : sc_hash_id(k);
}

static void model_run(int *test_failed_, int collide)
{
  enum { N = 3000 };
  static rec recs[N];
  static int in[N];
  sc_hmap *m = sc_hmap_new(0);
  unsigned x = 12345;
  size_t i, count = 0;
  CHECK(m != NULL);
  for(i = 0; i < N; i++) {
    snprintf(recs[i].key, sizeof(recs[i].key), "k%zu", i);
    recs[i].n = (int)i;
    in[i] = 0;
  }
  for(i = 0; i < 40000; i++) {
    size_t k;
    x = x * 1103515245u + 12345u;
    k = (x >> 8) % N;
    if(!in[k]) {
      CHECK(sc_hmap_get(m, h_of(recs[k].key, collide), rec_eq, recs[k].key,
                        NULL) == NULL);
      CHECK_INT(sc_hmap_put(m, h_of(recs[k].key, collide), &recs[k]), SC_OK);
      in[k] = 1;
      count++;
    } else if(x & 0x80000000u) {
      CHECK(sc_hmap_remove(m, h_of(recs[k].key, collide), rec_eq,
                           recs[k].key, NULL) == &recs[k]);
      in[k] = 0;
      count--;
    } else {
      CHECK(sc_hmap_get(m, h_of(recs[k].key, collide), rec_eq, recs[k].key,
                        NULL) == &recs[k]);
    }
    CHECK_INT(sc_hmap_count(m), count);
  }
  for(i = 0; i < N; i++) {
    rec *r = sc_hmap_get(m, h_of(recs[i].key, collide), rec_eq, recs[i].key,
                         NULL);
    CHECK(r == (in[i] ? &recs[i] : NULL));
  }
  {
    size_t it = 0, seen = 0;
    rec *r;
    while((r = sc_hmap_each(m, &it))) {
      CHECK(in[r->n]);
      seen++;
    }
    CHECK_INT(seen, count);
  }
  sc_hmap_free(m);
}

TEST(hmap_matches_a_model)
{
  model_run(test_failed_, 0);
}

TEST(hmap_matches_a_model_when_every_hash_collides_low)
{
  model_run(test_failed_, 1);
}

TEST(hmap_walks_every_value_of_a_key)
{
  rec a = {"same", 1}, b = {"same", 2}, c = {"other", 3}, *r;
  sc_hmap *m = sc_hmap_new(4);
  size_t it = 0;
  int seen = 0;
  CHECK_INT(sc_hmap_put(m, 7, &a), SC_OK);
  CHECK_INT(sc_hmap_put(m, 7, &c), SC_OK); /* same hash, other key */
  CHECK_INT(sc_hmap_put(m, 7, &b), SC_OK);
  while((r = sc_hmap_next(m, 7, rec_eq, "same", NULL, &it)))
    seen |= r->n;
  CHECK_INT(seen, 3);
  CHECK(sc_hmap_remove_value(m, 7, &a));
  CHECK(!sc_hmap_remove_value(m, 7, &a));
  CHECK(sc_hmap_get(m, 7, rec_eq, "same", NULL) == &b);
  CHECK(sc_hmap_get(m, 7, rec_eq, "other", NULL) == &c);
  sc_hmap_clear(m);
  CHECK_INT(sc_hmap_count(m), 0);
  CHECK(sc_hmap_get(m, 7, rec_eq, "other", NULL) == NULL);
  CHECK_INT(sc_hmap_put(m, 1, SC_HMAP_IDX(0)), SC_OK);
  it = 0;
  CHECK_INT(SC_HMAP_IDX_OF(sc_hmap_each(m, &it)), 0);
  CHECK_INT(sc_hmap_put(m, 1, NULL), SC_ERR_INTERNAL);
  sc_hmap_free(m);
  sc_hmap_free(NULL);
  CHECK(sc_hmap_get(NULL, 1, rec_eq, "x", NULL) == NULL);
  CHECK_INT(sc_hmap_count(NULL), 0);
}

TEST(schash_pair_is_not_concatenation)
{
  CHECK(sc_hash_pair("ab", "c") != sc_hash_pair("a", "bc"));
  CHECK(sc_hash_id("x") == sc_hash_id("x"));
  CHECK(sc_hash_seed() != sc_hash_seed() || sc_hash_seed() != sc_hash_seed());
}

TEST_LIST = {
  T(hmap_matches_a_model),
  T(hmap_matches_a_model_when_every_hash_collides_low),
  T(hmap_walks_every_value_of_a_key),
  T(schash_pair_is_not_concatenation),
  {0}
};
TEST_MAIN()
