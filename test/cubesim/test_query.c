/* Tests of cubesim's query decoding (the E2B metadata filter), the JSON
 * writer and parser, the audit trail, and which rows a list returns per
 * dialect (Cube's scan-then-filter, E2B's pages). */
#include "test/harness.h"
#include "cmd/cubesim/sim_audit.h"
#include "cmd/cubesim/sim_json.h"
#include "cmd/cubesim/sim_query.h"

/* the metadata parameter as it reaches E2B after the query is decoded once */
static const struct {
  const char *param;
  const char *pairs; /* "k=v|k=v" expected, NULL: an error */
} meta_cases[] = {
  {"user%3Dabc%26app%3Dprod", "user=abc|app=prod"},
  {"user=abc&app=prod", "user=abc|app=prod"},
  /* key "a&b" value "c=d": each encoded twice, the whole once more */
  {"a%2526b%3Dc%253Dd", "a&b=c=d"},
  /* percent sign and space and plus */
  {"p%2525%3D100%2525%26s%3Da%2520b%26plus%3Da%252Bb",
   "p%=100%|s=a b|plus=a+b"},
  /* + is a space at each level */
  {"k%3Da+b", "k=a b"},
  /* UTF-8 */
  {"lang%3D%25C3%25A9t%25C3%25A9", "lang=\xc3\xa9t\xc3\xa9"},
  {"lea.session_id%3Dchat-7f3a%26lea.tenant_id%3Dtenant-a",
   "lea.session_id=chat-7f3a|lea.tenant_id=tenant-a"},
  /* no '=': empty value; empty parts are skipped; first value wins */
  {"flag%26%26x%3D1%26x%3D2", "flag=|x=1"},
  {"k%3D%25zz", NULL},
  {"%zz", NULL},
  {"a%3Bb%3Dc", NULL},
  {NULL, NULL}
};

TEST(metadata_filter_decoding)
{
  size_t i, j;
  for(i = 0; meta_cases[i].param; i++) {
    sim_meta_filter f;
    sc_errbuf eb;
    char got[512] = "";
    sc_err err = sim_meta_filter_parse(meta_cases[i].param, &f, &eb);
    if(!meta_cases[i].pairs) {
      CHECK_MSG(err == SC_ERR_INVALID, "'%s' accepted", meta_cases[i].param);
      CHECK(!f.kv && !f.n);
      continue;
    }
    CHECK_MSG(!err, "'%s': %s", meta_cases[i].param, eb.msg);
    for(j = 0; j < f.n; j++) {
      size_t n = strlen(got);
      snprintf(got + n, sizeof(got) - n, "%s%s=%s", j ? "|" : "", f.kv[2 * j],
               f.kv[2 * j + 1]);
    }
    sim_meta_filter_free(&f);
    CHECK_STR(got, meta_cases[i].pairs);
  }
}

TEST(query_get)
{
  dynbuf b;
  dynbuf_init(&b, 1024);
  CHECK_INT(sim_query_get("a=1&state=running%2Cpaused&limit=5", "state", &b),
            1);
  CHECK_STR(dynbuf_ptr(&b), "running,paused");
  CHECK_INT(sim_query_get("a=1&limit=5", "state", &b), 0);
  CHECK_INT(sim_query_get(NULL, "state", &b), 0);
  /* a pair with a bad escape is dropped, the next one is used */
  CHECK_INT(sim_query_get("x=%zz&x=ok", "x", &b), 1);
  CHECK_STR(dynbuf_ptr(&b), "ok");
  CHECK_INT(sim_query_get("sta%74e=paused", "state", &b), 1);
  CHECK_STR(dynbuf_ptr(&b), "paused");
  CHECK_INT(sim_query_get("m=a+b", "m", &b), 1);
  CHECK_STR(dynbuf_ptr(&b), "a b");
  dynbuf_free(&b);
}

TEST(json_writer_escapes)
{
  dynbuf b;
  sim_jw w;
  json_object *o = NULL;
  dynbuf_init(&b, 4096);
  sim_jw_init(&w, &b);
  sim_jw_obj_open(&w);
  sim_jw_kstr(&w, "q\"k", "a\\b\n\x01\xc3\xa9");
  sim_jw_key(&w, "arr");
  sim_jw_arr_open(&w);
  sim_jw_int(&w, -5);
  sim_jw_bool(&w, 1);
  sim_jw_null(&w);
  sim_jw_obj_open(&w);
  sim_jw_obj_close(&w);
  sim_jw_arr_close(&w);
  sim_jw_ktime(&w, "t", 1000);
  sim_jw_obj_close(&w);
  CHECK_OK(w.err);
  CHECK_STR(dynbuf_ptr(&b), "{\"q\\\"k\":\"a\\\\b\\n\\u0001\xc3\xa9\","
            "\"arr\":[-5,true,null,{}],\"t\":\"1970-01-01T00:00:01Z\"}");
  CHECK_OK(sim_json_parse(dynbuf_ptr(&b), dynbuf_len(&b), &o, NULL));
  json_object_put(o);
  dynbuf_free(&b);
}

TEST(json_parser_rejects)
{
  static const char *const bad[] = {
    "{", "{\"a\":1,}", "{'a':1}", "{\"a\":1} x", "{\"a\":\"\xff\"}",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    "", NULL
  };
  size_t i;
  for(i = 0; bad[i]; i++) {
    json_object *o = NULL;
    sc_errbuf eb;
    eb.msg[0] = '\0';
    CHECK_MSG(sim_json_parse(bad[i], strlen(bad[i]), &o, &eb) ==
              SC_ERR_INVALID, "accepted '%s'", bad[i]);
    CHECK(!o);
    CHECK(eb.msg[0]);
  }
}

TEST(audit_lines_and_since)
{
  sim_audit *a = NULL;
  sim_audit_rec r;
  dynbuf b;
  json_object *o = NULL, *v;
  CHECK_OK(sim_audit_new(NULL, 1 << 20, &a, NULL));
  memset(&r, 0, sizeof(r));
  r.at = 1800000000000LL;
  r.source = "api";
  r.event = "create";
  r.method = "POST";
  r.path = "/sandboxes";
  r.status = 201;
  r.sandbox_id = "abc";
  r.state_after = "running";
  CHECK_INT(sim_audit_add(a, &r), 1);
  r.source = "timer";
  r.method = NULL;
  CHECK_INT(sim_audit_add(a, &r), 2);
  dynbuf_init(&b, 1 << 20);
  CHECK_OK(sim_audit_since(a, 1, &b));
  CHECK_OK(sim_json_parse(dynbuf_ptr(&b), dynbuf_len(&b), &o, NULL));
  CHECK(json_object_object_get_ex(o, "seq", &v));
  CHECK_INT(json_object_get_int(v), 2);
  CHECK(json_object_object_get_ex(o, "method", &v));
  CHECK(v == NULL);
  CHECK(json_object_object_get_ex(o, "stateBefore", &v));
  CHECK(v == NULL);
  json_object_put(o);
  dynbuf_reset(&b);
  CHECK_OK(sim_audit_since(a, 0, &b));
  CHECK(strstr(dynbuf_ptr(&b), "\"seq\":1,") == dynbuf_ptr(&b) + 1);
  dynbuf_reset(&b);
  CHECK_OK(sim_audit_since(a, 2, &b));
  CHECK_INT(dynbuf_len(&b), 0);
  sim_audit_reset(a);
  CHECK_INT(sim_audit_last_seq(a), 0);
  CHECK_INT(sim_audit_add(a, &r), 1);
  dynbuf_free(&b);
  sim_audit_free(a);
}


/* ---- which rows a list returns (sim_list_walk) ---- */

#define LT0 ((sc_time)1800000000000LL)

/* 150 sandboxes, store index i: tagged m=sc (i % 3 != 0) or m=other;
 * odd ones paused; the two newest (148, 149) deleted */
static sim_state *fleet(sim_dialect d)
{
  sim_state_config c;
  sim_state *st;
  int i;
  memset(&c, 0, sizeof(c));
  c.dialect = d;
  c.pause_ms = 500;
  c.seed = 3;
  st = sim_state_new(&c);
  for(i = 0; st && i < 150; i++) {
    char num[16];
    const char *meta[4];
    sim_create_req r;
    sim_sandbox *sb = NULL;
    snprintf(num, sizeof(num), "%d", i);
    meta[0] = "m";
    meta[1] = i % 3 ? "sc" : "other";
    meta[2] = "n";
    meta[3] = num;
    memset(&r, 0, sizeof(r));
    r.template_id = "base";
    r.has_timeout = 1;
    r.timeout_s = 3600;
    r.auto_pause = 1;
    r.meta = meta;
    r.meta_count = 2;
    if(sim_state_create(st, LT0, &r, -1, &sb) != SIM_R_OK) {
      sim_state_free(st);
      return NULL;
    }
    if(i >= 148)
      sim_state_delete(st, sb, LT0);
    else if(i % 2)
      sim_state_pause(st, sb, LT0);
  }
  if(st)
    sim_state_advance(st, LT0 + 1000);
  return st;
}

typedef struct seen {
  int n[200];       /* the "n" tag of each row, in order */
  int rows;
  int drop_every;   /* lose every k-th row (the truncate fault); 0: none */
  int calls;
} seen;

static int see(void *arg, const sim_sandbox *sb)
{
  seen *s = arg;
  const char *v = sim_sandbox_meta(sb, "n");
  s->calls++;
  if(s->drop_every && s->calls % s->drop_every == 0)
    return 0;
  if(s->rows < 200)
    s->n[s->rows++] = v ? (int)strtol(v, NULL, 10) : -1;
  return 1;
}

static int parse_filter(const char *q, sim_meta_filter *f)
{
  sc_errbuf eb;
  return sim_meta_filter_parse(q, f, &eb) ? -1 : 0;
}

/* Cube: the first `limit` live sandboxes of the store (newest first)
 * are scanned, the filters applied to those: short lists, no next page */
TEST(cube_list_scans_the_first_limit_then_filters)
{
  sim_state *st = fleet(SIM_DIALECT_CUBE);
  sim_meta_filter f;
  sim_list_spec spec;
  seen s;
  int i, want = 0, k;
  CHECK(st);
  CHECK_INT(parse_filter("m%3Dsc", &f), 0);
  memset(&spec, 0, sizeof(spec));
  spec.cube_scan = 1;
  spec.want = SIM_WANT_PAUSED;
  spec.mf = &f;
  spec.limit = SIM_CUBE_LIST_LIMIT;
  spec.start = -1;
  memset(&s, 0, sizeof(s));
  CHECK_INT(sim_list_walk(st, &spec, see, &s), -1);
  /* scanned: live indexes 147 down to 48 (148 and 149 are deleted) */
  k = 0;
  for(i = 147; i >= 48; i--)
    if(i % 2 && i % 3) {
      CHECK_MSG(k < s.rows && s.n[k] == i, "row %d: got %d, want %d", k,
                k < s.rows ? s.n[k] : -1, i);
      k++;
    }
  want = k;
  CHECK_INT(s.rows, want);
  CHECK(want < 100);
  /* 47 is paused and tagged m=sc, yet past the scan: not listed */
  for(i = 0; i < s.rows; i++)
    CHECK(s.n[i] >= 48);
  /* the state filter after the scan: running ones of the same window */
  spec.want = SIM_WANT_RUNNING;
  memset(&s, 0, sizeof(s));
  CHECK_INT(sim_list_walk(st, &spec, see, &s), -1);
  for(i = 0; i < s.rows; i++)
    CHECK(s.n[i] >= 48 && s.n[i] % 2 == 0 && s.n[i] % 3);
  CHECK_INT(s.rows, 33); /* even, not a multiple of 3, in 48..146 */
  /* limit 5: five sandboxes scanned (147..143), whatever matches */
  spec.want = SIM_WANT_RUNNING | SIM_WANT_PAUSED | SIM_WANT_PAUSING;
  spec.limit = 5;
  memset(&s, 0, sizeof(s));
  CHECK_INT(sim_list_walk(st, &spec, see, &s), -1);
  CHECK_INT(s.rows, 3);
  CHECK(s.n[0] == 146 && s.n[1] == 145 && s.n[2] == 143);
  /* no filter at all: exactly limit rows; a token is not Cube's */
  spec.mf = NULL;
  spec.limit = SIM_CUBE_LIST_LIMIT;
  spec.start = 3;
  memset(&s, 0, sizeof(s));
  CHECK_INT(sim_list_walk(st, &spec, see, &s), -1);
  CHECK_INT(s.rows, 100);
  CHECK(s.n[0] == 147 && s.n[99] == 48);
  /* the truncate fault loses rows after the scan: never a row beyond it */
  spec.mf = &f;
  memset(&s, 0, sizeof(s));
  s.drop_every = 2;
  CHECK_INT(sim_list_walk(st, &spec, see, &s), -1);
  CHECK_INT(s.calls, 66); /* m=sc among 48..147 */
  CHECK_INT(s.rows, 33);
  sim_meta_filter_free(&f);
  sim_state_free(st);
}

/* e2b: the filters first, then pages of limit rows with a next token;
 * the pages together are every match, once */
TEST(e2b_list_pages_over_the_filters)
{
  sim_state *st = fleet(SIM_DIALECT_E2B);
  sim_meta_filter f;
  sim_list_spec spec;
  seen s;
  int64_t next;
  int i, matches = 0, got[150];
  CHECK(st);
  CHECK_INT(parse_filter("m%3Dsc", &f), 0);
  memset(got, 0, sizeof(got));
  for(i = 0; i < 148; i++)
    matches += i % 3 != 0;
  CHECK_INT(matches, 98);
  memset(&spec, 0, sizeof(spec));
  spec.want = SIM_WANT_RUNNING | SIM_WANT_PAUSED;
  spec.mf = &f;
  spec.limit = 60;
  spec.start = -1;
  memset(&s, 0, sizeof(s));
  next = sim_list_walk(st, &spec, see, &s);
  CHECK_INT(s.rows, 60);
  CHECK(next >= 0 && next < 148);
  CHECK_INT(s.n[0], 146); /* 147 is m=other */
  for(i = 0; i < s.rows; i++)
    got[s.n[i]]++;
  spec.start = next;
  memset(&s, 0, sizeof(s));
  CHECK_INT(sim_list_walk(st, &spec, see, &s), -1);
  CHECK_INT(s.rows, matches - 60);
  for(i = 0; i < s.rows; i++)
    got[s.n[i]]++;
  for(i = 0; i < 150; i++)
    CHECK_MSG(got[i] == (i < 148 && i % 3 != 0), "sandbox %d listed %d"
              " times", i, got[i]);
  /* a lost row (truncate fault) does not count toward the page */
  spec.start = -1;
  spec.limit = 10;
  memset(&s, 0, sizeof(s));
  s.drop_every = 3;
  CHECK(sim_list_walk(st, &spec, see, &s) >= 0);
  CHECK_INT(s.rows, 10);
  CHECK_INT(s.calls, 14);
  /* oldest first */
  spec.asc = 1;
  memset(&s, 0, sizeof(s));
  CHECK(sim_list_walk(st, &spec, see, &s) >= 0);
  CHECK(s.rows == 10 && s.n[0] == 1 && s.n[1] == 2 && s.n[2] == 4);
  /* a start at or past the store's end: no rows (it used to read past
   * the array, newest first) */
  spec.asc = 0;
  spec.start = (int64_t)sim_state_count(st);
  memset(&s, 0, sizeof(s));
  CHECK_INT(sim_list_walk(st, &spec, see, &s), -1);
  CHECK_INT(s.rows, 0);
  sim_meta_filter_free(&f);
  sim_state_free(st);
}

TEST_LIST = {
  T(metadata_filter_decoding),
  T(query_get),
  T(json_writer_escapes),
  T(json_parser_rejects),
  T(audit_lines_and_since),
  T(cube_list_scans_the_first_limit_then_filters),
  T(e2b_list_pages_over_the_filters),
  {0}
};
TEST_MAIN()
