/* Tests of cubesim's query decoding (the E2B metadata filter), the JSON
 * writer and parser, and the audit trail. */
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

TEST_LIST = {
  T(metadata_filter_decoding),
  T(query_get),
  T(json_writer_escapes),
  T(json_parser_rejects),
  T(audit_lines_and_since),
  {0}
};
TEST_MAIN()
