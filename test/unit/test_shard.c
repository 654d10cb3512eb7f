/* Tests of sharding: the tenant hash, the assignment, the membership view
 * (loop/shard.h) and the SQLite member table (store/members.h). */
#include "test/harness.h"
#include "controller/loop/shard.h"
#include "controller/store/members.h"

#include <dirent.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_TENANTS 3000

static void tenant_name(int i, char *buf, size_t n)
{
  snprintf(buf, n, "tenant-%d", i);
}

TEST(score_is_fixed_and_ordered_pairs_differ)
{
  /* fixed across hosts and builds: FNV-1a + splitmix64 of the bytes */
  uint64_t a = shard_score("replica-a", "tenant-1");
  CHECK(a == shard_score("replica-a", "tenant-1"));
  CHECK(a != shard_score("replica-b", "tenant-1"));
  CHECK(a != shard_score("replica-a", "tenant-2"));
  /* the separator: ("ab","c") is not ("a","bc") */
  CHECK(shard_score("ab", "c") != shard_score("a", "bc"));
  CHECK(shard_score(NULL, NULL) == shard_score("", ""));
  /* the value itself, so that a change of the hash (which would move
   * every tenant at an upgrade with mixed versions) is seen */
  CHECK_MSG(shard_score("a", "t") == 0xacda4c479cbeb101ULL,
            "score(a,t) = 0x%016llx",
            (unsigned long long)shard_score("a", "t"));
}

TEST(owner_is_balanced_within_a_bound)
{
  const char *m[3] = {"r-0#1a2b3c4d", "r-1#99aa00ff", "r-2#00000001"};
  int count[3] = {0, 0, 0}, i;
  char t[32];
  for(i = 0; i < N_TENANTS; i++) {
    tenant_name(i, t, sizeof(t));
    count[shard_owner(m, 3, t)]++;
  }
  /* 1000 each expected; a fair hash stays within +-15% at 3000 */
  for(i = 0; i < 3; i++)
    CHECK_MSG(count[i] > 850 && count[i] < 1150, "member %d owns %d of %d",
              i, count[i], N_TENANTS);
}

TEST(one_of_three_leaves_only_its_tenants_move)
{
  const char *m3[3] = {"a", "b", "c"}, *m2[2] = {"a", "c"};
  int moved = 0, of_b = 0, i;
  char t[32];
  for(i = 0; i < N_TENANTS; i++) {
    size_t o3, o2;
    tenant_name(i, t, sizeof(t));
    o3 = shard_owner(m3, 3, t);
    o2 = shard_owner(m2, 2, t);
    if(o3 == 1)
      of_b++;
    else if(strcmp(m3[o3], m2[o2]))
      moved++; /* a tenant of a or c changed owner: must not happen */
  }
  CHECK_INT(moved, 0);
  CHECK(of_b > 850 && of_b < 1150);
}

TEST(a_join_takes_about_a_quarter_from_each)
{
  const char *m3[3] = {"a", "b", "c"}, *m4[4] = {"a", "b", "c", "d"};
  int to_d = 0, other = 0, i;
  char t[32];
  for(i = 0; i < N_TENANTS; i++) {
    size_t o3, o4;
    tenant_name(i, t, sizeof(t));
    o3 = shard_owner(m3, 3, t);
    o4 = shard_owner(m4, 4, t);
    if(o4 == 3)
      to_d++;
    else if(o3 != o4)
      other++; /* moved between old members: must not happen */
  }
  CHECK_INT(other, 0);
  CHECK(to_d > 600 && to_d < 900); /* 750 expected */
}

TEST(owner_does_not_depend_on_the_order_given)
{
  const char *x[3] = {"a", "b", "c"}, *y[3] = {"c", "a", "b"};
  char t[32];
  int i;
  for(i = 0; i < 500; i++) {
    tenant_name(i, t, sizeof(t));
    CHECK_STR(x[shard_owner(x, 3, t)], y[shard_owner(y, 3, t)]);
  }
}

TEST(parse_modes)
{
  shard_mode m;
  int n, i;
  sc_errbuf eb;
  CHECK_OK(shard_parse("off", NULL, &m, &n, &i, &eb));
  CHECK(m == SHARD_OFF);
  CHECK_OK(shard_parse(NULL, NULL, &m, &n, &i, &eb));
  CHECK(m == SHARD_OFF);
  CHECK_OK(shard_parse("auto", NULL, &m, &n, &i, &eb));
  CHECK(m == SHARD_AUTO);
  CHECK_OK(shard_parse("3", "2", &m, &n, &i, &eb));
  CHECK(m == SHARD_STATIC && n == 3 && i == 2);
  CHECK(shard_parse("3", "3", &m, &n, &i, &eb) == SC_ERR_INVALID);
  CHECK(strstr(eb.msg, "--shard-index from 0 to 2") != NULL);
  CHECK(shard_parse("3", NULL, &m, &n, &i, &eb) == SC_ERR_INVALID);
  CHECK(shard_parse("auto", "1", &m, &n, &i, &eb) == SC_ERR_INVALID);
  CHECK(strstr(eb.msg, "--shard-index goes only with") != NULL);
  CHECK(shard_parse("0", "0", &m, &n, &i, &eb) == SC_ERR_INVALID);
  CHECK(shard_parse("3x", "0", &m, &n, &i, &eb) == SC_ERR_INVALID);
  CHECK(strstr(eb.msg, "\"3x\"") != NULL);
  CHECK(shard_parse("", "0", &m, &n, &i, &eb) == SC_ERR_INVALID);
  CHECK(shard_parse("3", "-1", &m, &n, &i, &eb) == SC_ERR_INVALID);
  CHECK(strstr(eb.msg, "--shard-index: \"-1\"") != NULL);
  CHECK(shard_parse("3", "1x", &m, &n, &i, &eb) == SC_ERR_INVALID);
}

TEST(static_shards_cover_every_tenant_once)
{
  shard_view *v[4];
  char t[32];
  int i, k;
  for(k = 0; k < 4; k++) {
    v[k] = shard_view_new(SHARD_STATIC, NULL, 4, k);
    CHECK(v[k] != NULL);
    CHECK_INT(shard_view_live(v[k]), 4);
  }
  for(i = 0; i < 1000; i++) {
    int owners = 0;
    tenant_name(i, t, sizeof(t));
    for(k = 0; k < 4; k++)
      owners += shard_view_owns(v[k], t);
    CHECK_INT(owners, 1);
  }
  for(k = 0; k < 4; k++)
    shard_view_free(v[k]);
}

TEST(off_owns_everything)
{
  shard_view *v = shard_view_new(SHARD_OFF, "me", 0, -1);
  CHECK(shard_view_owns(v, "x"));
  CHECK(shard_view_owns(v, NULL));
  CHECK_INT(shard_view_live(v), 1);
  shard_view_free(v);
  CHECK(shard_view_owns(NULL, "x")); /* no view: everything */
}

static int owned(const shard_view *v)
{
  char t[32];
  int i, n = 0;
  for(i = 0; i < 600; i++) {
    tenant_name(i, t, sizeof(t));
    n += shard_view_owns(v, t);
  }
  return n;
}

TEST(view_expires_a_member_whose_version_stops)
{
  shard_view *v = shard_view_new(SHARD_AUTO, "a", 0, -1);
  shard_member_in ms[3] = {{"a", "1", 1000}, {"b", "1", 1000},
                           {"c", "1", 1000}};
  bool ch;
  int64_t t;
  /* before any read: owns everything (the fallback) */
  CHECK(shard_view_falling_back(v));
  CHECK_INT(owned(v), 600);
  CHECK_OK(shard_view_update(v, ms, 3, 0, &ch));
  CHECK(ch);
  CHECK(!shard_view_falling_back(v));
  CHECK_INT(shard_view_live(v), 3);
  CHECK(owned(v) > 120 && owned(v) < 280);
  /* b renews, c does not: c is live until 2.5 of its periods pass on the
   * local clock without a change */
  for(t = 1000; t <= 2000; t += 1000) {
    char bv[8];
    snprintf(bv, sizeof(bv), "%d", (int)(t / 1000) + 1);
    ms[1].version = bv;
    CHECK_OK(shard_view_update(v, ms, 3, t, &ch));
    CHECK(!ch);
    CHECK_INT(shard_view_live(v), 3);
  }
  ms[1].version = "9";
  CHECK_OK(shard_view_update(v, ms, 3, 2499, &ch));
  CHECK(!ch);
  ms[1].version = "10";
  CHECK_OK(shard_view_update(v, ms, 3, 2500, &ch));
  CHECK(ch); /* c: 2500 ms without a change */
  CHECK_INT(shard_view_live(v), 2);
  CHECK_STR(shard_view_member(v, 0), "a");
  CHECK_STR(shard_view_member(v, 1), "b");
  CHECK(owned(v) > 220 && owned(v) < 380);
  /* prunable at its expiry, by the version it was last seen at; b,
   * which renews, and a (self, whose row never moves here) never */
  {
    const char *ids[4], *vers[4];
    CHECK_INT(shard_view_prunable(v, ids, vers, 4), 1);
    CHECK_STR(ids[0], "c");
    CHECK_STR(vers[0], "1");
    ms[1].version = "11";
    CHECK_OK(shard_view_update(v, ms, 3, 9000, &ch));
    CHECK(!ch);
    CHECK_INT(shard_view_prunable(v, ids, vers, 4), 1);
    CHECK_STR(ids[0], "c");
  }
  /* c renews again (a slow replica, not a dead one): back at once */
  ms[2].version = "2";
  ms[1].version = "12";
  CHECK_OK(shard_view_update(v, ms, 3, 9500, &ch));
  CHECK(ch);
  CHECK_INT(shard_view_live(v), 3);
  shard_view_free(v);
}

TEST(view_self_is_live_and_rows_gone_leave)
{
  shard_view *v = shard_view_new(SHARD_AUTO, "a", 0, -1);
  shard_member_in ms[2] = {{"b", "5", 1000}, {"c", "5", 1000}};
  bool ch;
  /* this replica's own row missing (pruned by another): still live */
  CHECK_OK(shard_view_update(v, ms, 2, 0, &ch));
  CHECK_INT(shard_view_live(v), 3);
  /* its own stale version never expires it */
  {
    shard_member_in me[3] = {{"a", "1", 1000}, {"b", "6", 1000},
                             {"c", "6", 1000}};
    CHECK_OK(shard_view_update(v, me, 3, 100000, &ch));
    CHECK_INT(shard_view_live(v), 3);
    /* c's row removed (it left): gone at once */
    CHECK_OK(shard_view_update(v, me, 2, 100001, &ch));
    CHECK(ch);
    CHECK_INT(shard_view_live(v), 2);
  }
  /* the membership cannot be read: owns everything, said once */
  CHECK(shard_view_fallback(v));
  CHECK(!shard_view_fallback(v));
  CHECK_INT(owned(v), 600);
  CHECK_INT(shard_view_live(v), 1);
  shard_view_free(v);
}

TEST(view_after_a_failed_read_expires_nobody_at_once)
{
  shard_view *v = shard_view_new(SHARD_AUTO, "a", 0, -1);
  shard_member_in ms[2] = {{"a", "1", 1000}, {"b", "1", 1000}};
  bool ch;
  CHECK_OK(shard_view_update(v, ms, 2, 0, &ch));
  CHECK_INT(shard_view_live(v), 2);
  /* the store takes no writes for 5 s: nobody renews, reads fail */
  CHECK(shard_view_fallback(v));
  CHECK_INT(shard_view_live(v), 1);
  /* it reads again: b's row has not moved (it could not write either),
   * yet it is live, and its expiry counts from now */
  CHECK_OK(shard_view_update(v, ms, 2, 5000, &ch));
  CHECK(ch);
  CHECK_INT(shard_view_live(v), 2);
  CHECK_OK(shard_view_update(v, ms, 2, 7499, &ch));
  CHECK_INT(shard_view_live(v), 2);
  CHECK_OK(shard_view_update(v, ms, 2, 7500, &ch));
  CHECK(ch);
  CHECK_INT(shard_view_live(v), 1); /* b really stopped */
  shard_view_free(v);
}

/* Issue 25: the store fault of the chaos run (every write fails for 3-6 s)
 * made each of three replicas own every session: three times the failing
 * passes, and three times the Cube calls of each. A failed read keeps the
 * last view for the grace (a resync), and no member expires for it. */
TEST(view_blind_keeps_the_last_view_for_the_grace)
{
  shard_view *v = shard_view_new(SHARD_AUTO, "a", 0, -1);
  shard_member_in ms[2] = {{"a", "1", 1000}, {"b", "1", 1000}};
  bool ch;
  int n;
  /* no read yet: blind is the fallback it already is (no change) */
  CHECK(!shard_view_blind(v, 0, 2000));
  CHECK(shard_view_falling_back(v));
  CHECK_OK(shard_view_update(v, ms, 2, 0, &ch));
  CHECK_INT(shard_view_live(v), 2);
  n = owned(v);
  CHECK(n > 200 && n < 400);
  /* reads fail within the grace: the view stands, no change */
  CHECK(!shard_view_blind(v, 500, 2000));
  CHECK(!shard_view_blind(v, 1999, 2000));
  CHECK(!shard_view_falling_back(v));
  CHECK_INT(shard_view_live(v), 2);
  CHECK_INT(owned(v), n);
  /* it reads again at 2,400 (b could not renew either): b is live, its
   * expiry counts from now, nothing changed */
  CHECK_OK(shard_view_update(v, ms, 2, 2400, &ch));
  CHECK(!ch);
  CHECK_INT(shard_view_live(v), 2);
  /* blind past the grace: owns everything, said once */
  CHECK(!shard_view_blind(v, 3000, 2000));
  CHECK(shard_view_blind(v, 4400, 2000));
  CHECK(!shard_view_blind(v, 4500, 2000));
  CHECK_INT(shard_view_live(v), 1);
  CHECK_INT(owned(v), 600);
  /* grace 0: the fallback at once, as before */
  CHECK_OK(shard_view_update(v, ms, 2, 5000, &ch));
  CHECK(ch);
  CHECK(shard_view_blind(v, 5001, 0));
  shard_view_free(v);
}

TEST(views_of_three_agree_and_cover)
{
  const char *ids[3] = {"x#1", "y#2", "z#3"};
  shard_member_in ms[3] = {{"x#1", "1", 1000}, {"y#2", "1", 1000},
                           {"z#3", "1", 1000}};
  shard_view *v[3];
  char t[32];
  bool ch;
  int i, k;
  for(k = 0; k < 3; k++) {
    v[k] = shard_view_new(SHARD_AUTO, ids[k], 0, -1);
    CHECK_OK(shard_view_update(v[k], ms, 3, 0, &ch));
  }
  for(i = 0; i < 1000; i++) {
    int owners = 0;
    tenant_name(i, t, sizeof(t));
    for(k = 0; k < 3; k++)
      owners += shard_view_owns(v[k], t);
    CHECK_INT(owners, 1);
  }
  CHECK(shard_view_owns(v[0], "") + shard_view_owns(v[1], "") +
          shard_view_owns(v[2], "") == 1); /* no tenant tag: one member */
  for(k = 0; k < 3; k++)
    shard_view_free(v[k]);
}

/* --- the SQLite member table --- */

static void rm_dir(const char *dir)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  while(d && (e = readdir(d))) {
    char p[600];
    if(!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
    unlink(p);
  }
  if(d)
    closedir(d);
  rmdir(dir);
}

static void on_ans(sc_err err, const char *msg, store_member_list *l,
                   void *ud)
{
  int *n = ud;
  (void)msg;
  *n = err ? -1 : (int)l->n;
}

TEST(sqlite_members_renew_list_remove)
{
  const char *base = getenv("TMPDIR");
  char dir[256], url[320];
  struct event_base *b = event_base_new();
  store_open_opts o = {0};
  store *s1 = NULL, *s2 = NULL;
  store_member_list l = {NULL, 0};
  sc_errbuf eb;
  int got = -2;
  snprintf(dir, sizeof(dir), "%s/sc-shard-XXXXXX",
           base && *base ? base : "/tmp");
  CHECK(mkdtemp(dir) != NULL);
  snprintf(url, sizeof(url), "sqlite:%s/s.db", dir);
  o.base = b;
  o.create = true;
  CHECK_OK(store_open(url, &o, &s1, &eb));
  CHECK_OK(store_open(url, &o, &s2, &eb));
  CHECK(store_members_supported(s1));
  /* no table yet: removing is fine */
  CHECK_OK(store_members_remove(s1, "a", NULL, &eb));
  CHECK_OK(store_members_renew(s1, "a", 1000, &l, &eb));
  CHECK_INT(l.n, 1);
  CHECK_STR(l.items[0].version, "1");
  store_member_list_clear(&l);
  CHECK_OK(store_members_renew(s2, "b", 2000, &l, &eb));
  CHECK_INT(l.n, 2);
  CHECK_STR(l.items[0].id, "a");
  CHECK_STR(l.items[1].id, "b");
  CHECK_INT(l.items[1].period_ms, 2000);
  store_member_list_clear(&l);
  CHECK_OK(store_members_renew(s1, "a", 1000, &l, &eb));
  CHECK_STR(l.items[0].version, "2"); /* the counter moved */
  CHECK_STR(l.items[1].version, "1");
  store_member_list_clear(&l);
  /* a prune by a stale version leaves a renewed row */
  CHECK_OK(store_members_remove(s2, "a", "1", &eb));
  CHECK_OK(store_members_renew(s2, "b", 2000, &l, &eb));
  CHECK_INT(l.n, 2);
  store_member_list_clear(&l);
  CHECK_OK(store_members_remove(s2, "a", "2", &eb));
  CHECK_OK(store_members_remove(s2, "b", NULL, &eb));
  /* asynchronous: answered from the loop, not inside the call */
  CHECK_OK(store_members_renew_async(s1, "c", 1000, on_ans, &got, NULL,
                                     &eb));
  CHECK_INT(got, -2);
  event_base_loop(b, EVLOOP_ONCE);
  CHECK_INT(got, 1);
  /* a cancelled one never answers */
  {
    store_members_req *q = NULL;
    got = -2;
    CHECK_OK(store_members_renew_async(s1, "c", 1000, on_ans, &got, &q,
                                       &eb));
    store_members_req_cancel(q);
    event_base_loop(b, EVLOOP_NONBLOCK);
    CHECK_INT(got, -2);
  }
  /* bad IDs are refused with a message */
  CHECK(store_members_renew(s1, "", 1000, &l, &eb) == SC_ERR_INVALID);
  CHECK(store_members_renew(s1, "a\nb", 1000, &l, &eb) == SC_ERR_INVALID);
  CHECK(strstr(eb.msg, "control character") != NULL);
  CHECK(store_members_remove(s1, "a", "x", &eb) == SC_ERR_INVALID);
  store_close(s1);
  store_close(s2);
  event_base_free(b);
  rm_dir(dir);
}

/* ------------------------------------------------------------------ */
/* a pass's frozen view, and the lists' costs */

TEST(frozen_owners_do_not_move_with_the_view)
{
  shard_view *v = shard_view_new(SHARD_AUTO, "a", 0, -1);
  shard_member_in ms[3] = {{"a", "1", 1000}, {"b", "1", 1000},
                           {"c", "1", 1000}};
  shard_owners *o;
  bool ch;
  char t[32];
  int i, same = 0, moved = 0;
  CHECK_OK(shard_view_update(v, ms, 3, 0, &ch));
  o = shard_view_freeze(v);
  CHECK(o != NULL);
  CHECK_INT(shard_owners_live(o), 3);
  /* b and c stop: the view owns everything, the frozen copy does not */
  CHECK_OK(shard_view_update(v, ms, 1, 10000, &ch));
  CHECK(ch);
  CHECK_INT(shard_view_live(v), 1);
  for(i = 0; i < 600; i++) {
    tenant_name(i, t, sizeof(t));
    CHECK(shard_view_owns(v, t));
    if(shard_owners_owns(o, t))
      same++;
    else
      moved++;
  }
  CHECK_MSG(same > 120 && same < 280, "frozen: owns %d of 600", same);
  CHECK_INT(same + moved, 600);
  shard_owners_free(o);
  /* NULL and a view that owns everything: everything */
  CHECK(shard_owners_owns(NULL, "x"));
  o = shard_view_freeze(v);
  CHECK(shard_owners_owns(o, "x"));
  CHECK_INT(shard_owners_live(o), 1);
  shard_owners_free(o);
  shard_view_free(v);
}

/* a takeover pass: what it gained, and when it may be one */

TEST(takeover_gains_only_the_dead_members_tenants)
{
  /* a, b, c live; b stops: a's view after gains b's tenants that now
   * hash to a, and nothing else; a join gains nothing */
  shard_view *v = shard_view_new(SHARD_AUTO, "a", 0, -1);
  shard_member_in ms[3] = {{"a", "1", 1000}, {"b", "1", 1000},
                           {"c", "1", 1000}};
  shard_member_in ac[2] = {{"a", "1", 1000}, {"c", "1", 1000}};
  shard_owners *before, *after;
  bool ch;
  char t[32];
  int i, gained = 0, kept = 0;
  CHECK_OK(shard_view_update(v, ms, 3, 0, &ch));
  before = shard_view_freeze(v);
  ac[0].version = ac[1].version = "2";
  CHECK_OK(shard_view_update(v, ac, 2, 10000, &ch));
  CHECK(ch);
  CHECK_INT(shard_view_live(v), 2);
  after = shard_view_freeze(v);
  for(i = 0; i < 900; i++) {
    const char *m3[3] = {"a", "b", "c"};
    bool g;
    tenant_name(i, t, sizeof(t));
    g = shard_owners_gained(after, before, t);
    /* gained: a's now, b's before (c keeps its own, a its own) */
    CHECK_MSG(g == (shard_owners_owns(after, t) &&
                    !strcmp(m3[shard_owner(m3, 3, t)], "b")),
              "tenant %s", t);
    if(g)
      gained++;
    else if(shard_owners_owns(after, t))
      kept++;
  }
  CHECK_MSG(gained > 90 && gained < 210, "gained %d of 900", gained);
  CHECK_MSG(kept > 200 && kept < 400, "kept %d of 900", kept);
  /* the other way (b joins again): a gains nothing */
  for(i = 0; i < 900; i++) {
    tenant_name(i, t, sizeof(t));
    CHECK(!shard_owners_gained(before, after, t));
  }
  /* nothing covered: nothing counts as gained */
  CHECK(!shard_owners_gained(after, NULL, "tenant-1"));
  shard_owners_free(before);
  shard_owners_free(after);
  shard_view_free(v);
}

TEST(takeover_never_twice_in_a_row_nor_when_all_was_asked)
{
  CHECK(shard_takeover_allowed(true, false, false));
  CHECK(!shard_takeover_allowed(false, false, false)); /* nothing covered */
  CHECK(!shard_takeover_allowed(true, true, false));   /* one just ran */
  CHECK(!shard_takeover_allowed(true, false, true));   /* a burst, ... */
}

/* a whole pass over rows[t] running sandboxes of tenant t-<i> (i < nt),
 * in pages of page_rows (0: one request per state), no paused one */
static void whole_pass(shard_lists *sl, int nt, size_t rows_each,
                       size_t page_rows)
{
  bool bt[2] = {false, false};
  size_t req[2], k;
  char t[32];
  int i;
  req[SHARD_RUNNING] = page_rows ? (nt * rows_each + page_rows - 1) /
                                   page_rows : 1;
  req[SHARD_PAUSED] = 1;
  (void)shard_lists_begin(sl, bt, req, NULL, 0);
  for(i = 0; i < nt; i++) {
    tenant_name(i, t, sizeof(t));
    for(k = 0; k < rows_each; k++)
      (void)shard_lists_count(sl, SHARD_RUNNING, t);
  }
}

TEST(lists_cube_stays_whole_e2b_goes_by_tenant)
{
  shard_lists *sl = shard_lists_new();
  const char *own[33];
  char names[33][32];
  shard_list_choice ch;
  int i;
  CHECK(sl != NULL);
  for(i = 0; i < 33; i++) {
    tenant_name(i * 3, names[i], sizeof(names[i]));
    own[i] = names[i];
  }
  /* nothing listed whole yet: whole */
  shard_lists_choose(sl, own, 33, 100, 1, false, &ch);
  CHECK(!ch.by_tenant[SHARD_RUNNING] && !ch.by_tenant[SHARD_PAUSED]);
  CHECK_STR(ch.why, "not listed whole yet");
  /* Cube: 10,000 rows in one request per state; 33 tenants would be 33 */
  whole_pass(sl, 100, 100, 0);
  shard_lists_choose(sl, own, 33, 0, 1, false, &ch);
  CHECK(!ch.by_tenant[SHARD_RUNNING] && !ch.by_tenant[SHARD_PAUSED]);
  CHECK_INT(ch.est_whole[SHARD_RUNNING], 1);
  CHECK_INT(ch.est_tenant[SHARD_RUNNING], 33);
  /* E2B: 100 pages running, 1 paused; 33 tenants of 100 rows: 33 pages
   * running (by tenant), 33 empty answers paused (whole: 1) */
  whole_pass(sl, 100, 100, 100);
  shard_lists_choose(sl, own, 33, 100, 1, false, &ch);
  CHECK(ch.by_tenant[SHARD_RUNNING]);
  CHECK(!ch.by_tenant[SHARD_PAUSED]);
  CHECK_INT(ch.est_whole[SHARD_RUNNING], 100);
  CHECK_INT(ch.est_tenant[SHARD_RUNNING], 33);
  CHECK_INT(ch.est_whole[SHARD_PAUSED], 1);
  CHECK_INT(ch.est_tenant[SHARD_PAUSED], 33);
  CHECK_STR(ch.why, "fewer requests by tenant");
  /* a former name too (--adopt-from): each tenant twice */
  shard_lists_choose(sl, own, 33, 100, 2, false, &ch);
  CHECK_INT(ch.est_tenant[SHARD_RUNNING], 66);
  CHECK(ch.by_tenant[SHARD_RUNNING]);
  /* due: whole whatever it costs */
  shard_lists_choose(sl, own, 33, 100, 1, true, &ch);
  CHECK(!ch.by_tenant[SHARD_RUNNING] && !ch.by_tenant[SHARD_PAUSED]);
  /* a tenant "" has no tag to filter on: whole */
  own[5] = "";
  shard_lists_choose(sl, own, 33, 100, 1, false, &ch);
  CHECK(!ch.by_tenant[SHARD_RUNNING] && !ch.by_tenant[SHARD_PAUSED]);
  CHECK_STR(ch.why, "a session has an empty tenant");
  /* rows past a page: 250 rows are 3 pages, a tenant never seen 1 */
  whole_pass(sl, 40, 250, 100);
  own[5] = names[5];
  shard_lists_choose(sl, own, 2, 100, 1, false, &ch);
  /* names[0] = tenant-0 (250 rows), names[1] = tenant-3 (250 rows) */
  CHECK_INT(ch.est_tenant[SHARD_RUNNING], 6);
  {
    const char *unseen[1] = {"tenant-never"};
    shard_lists_choose(sl, unseen, 1, 100, 1, false, &ch);
    CHECK_INT(ch.est_tenant[SHARD_RUNNING], 1);
  }
  shard_lists_free(sl);
  shard_lists_choose(NULL, own, 1, 100, 1, false, &ch);
  CHECK(!ch.by_tenant[SHARD_RUNNING] && !ch.by_tenant[SHARD_PAUSED]);
}

TEST(lists_no_tenant_still_lists_once)
{
  shard_lists *sl = shard_lists_new();
  shard_list_choice ch;
  whole_pass(sl, 10, 100, 100); /* 10 pages running, 1 paused */
  /* a replica that owns no session: by tenant would list nothing, and
   * a pass needs Cube's clock: the cheaper whole list is made */
  shard_lists_choose(sl, NULL, 0, 100, 1, false, &ch);
  CHECK(ch.by_tenant[SHARD_RUNNING]);
  CHECK(!ch.by_tenant[SHARD_PAUSED]);
  shard_lists_free(sl);
}

TEST(lists_count_only_what_the_pass_listed)
{
  shard_lists *sl = shard_lists_new();
  const char *own[2] = {"t-a", "t-b"};
  bool bt[2] = {true, false};
  size_t req[2] = {2, 1};
  int k;
  whole_pass(sl, 3, 50, 100);
  CHECK_INT(shard_lists_rows(sl, SHARD_RUNNING, "tenant-2"), 50);
  /* running by tenant (t-a, t-b), paused whole */
  CHECK_OK(shard_lists_begin(sl, bt, req, own, 2));
  for(k = 0; k < 7; k++)
    CHECK_OK(shard_lists_count(sl, SHARD_RUNNING, "t-a"));
  /* a GET's answer of a tenant not listed: not counted */
  CHECK_OK(shard_lists_count(sl, SHARD_RUNNING, "tenant-0"));
  CHECK_OK(shard_lists_count(sl, SHARD_RUNNING, "t-zzz"));
  /* the paused list was whole: any tenant counts, no tag as "" */
  CHECK_OK(shard_lists_count(sl, SHARD_PAUSED, "t-x"));
  CHECK_OK(shard_lists_count(sl, SHARD_PAUSED, NULL));
  CHECK_INT(shard_lists_rows(sl, SHARD_RUNNING, "t-a"), 7);
  CHECK_INT(shard_lists_rows(sl, SHARD_RUNNING, "t-b"), 0);
  CHECK_INT(shard_lists_rows(sl, SHARD_RUNNING, "t-zzz"), 0);
  /* the running counts of tenants not listed stay as last seen */
  CHECK_INT(shard_lists_rows(sl, SHARD_RUNNING, "tenant-0"), 50);
  CHECK_INT(shard_lists_rows(sl, SHARD_PAUSED, "t-x"), 1);
  CHECK_INT(shard_lists_rows(sl, SHARD_PAUSED, ""), 1);
  /* the whole running list's cost is still the last whole one's (2
   * pages: 150 rows), the paused one's the new */
  {
    shard_list_choice ch;
    shard_lists_choose(sl, own, 2, 100, 1, false, &ch);
    CHECK_INT(ch.est_whole[SHARD_RUNNING], 2);
    CHECK_INT(ch.est_whole[SHARD_PAUSED], 1);
  }
  /* a pass with both states whole forgets every tenant it did not see */
  whole_pass(sl, 1, 5, 100);
  CHECK_INT(shard_lists_rows(sl, SHARD_RUNNING, "t-a"), 0);
  CHECK_INT(shard_lists_rows(sl, SHARD_PAUSED, "t-x"), 0);
  CHECK_INT(shard_lists_rows(sl, SHARD_RUNNING, "tenant-0"), 5);
  shard_lists_free(sl);
}

TEST_LIST = {
  T(score_is_fixed_and_ordered_pairs_differ),
  T(owner_is_balanced_within_a_bound),
  T(one_of_three_leaves_only_its_tenants_move),
  T(a_join_takes_about_a_quarter_from_each),
  T(owner_does_not_depend_on_the_order_given),
  T(parse_modes),
  T(static_shards_cover_every_tenant_once),
  T(off_owns_everything),
  T(view_expires_a_member_whose_version_stops),
  T(view_self_is_live_and_rows_gone_leave),
  T(view_after_a_failed_read_expires_nobody_at_once),
  T(view_blind_keeps_the_last_view_for_the_grace),
  T(views_of_three_agree_and_cover),
  T(sqlite_members_renew_list_remove),
  T(frozen_owners_do_not_move_with_the_view),
  T(takeover_gains_only_the_dead_members_tenants),
  T(takeover_never_twice_in_a_row_nor_when_all_was_asked),
  T(lists_cube_stays_whole_e2b_goes_by_tenant),
  T(lists_no_tenant_still_lists_once),
  T(lists_count_only_what_the_pass_listed),
  {NULL, NULL}};

TEST_MAIN()
