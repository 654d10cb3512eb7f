/*
 * Tests of the Cube client: the metadata filter encoding, strict response
 * parsing, and the transport against an in-test HTTP server (evhttp on
 * 127.0.0.1 port 0, in the client's own event_base) that scripts answers.
 */
#include "test/harness.h"
#include "controller/cube/cube.h"
#include "lib/scstr.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* metadata filter */

static sc_err kv_from(sc_kvlist *l, const char *const *pairs)
{
  size_t i;
  for(i = 0; pairs[i]; i += 2) {
    sc_err e = sc_kvlist_set(l, pairs[i], pairs[i + 1]);
    if(e)
      return e;
  }
  return SC_OK;
}

static const struct {
  const char *pairs[7];
  const char *wire;
} meta_cases[] = {
  {{"a", "b", NULL}, "a%3Db"},
  {{"x", "1", "a", "2", NULL}, "a%3D2%26x%3D1"}, /* sorted */
  /* JS: encodeURIComponent(URLSearchParams({enc(k):enc(v)}).toString()) */
  {{"a&b", "c=d", NULL}, "a%252526b%3Dc%25253Dd"},
  {{"k", "a b+c%", NULL}, "k%3Da%252520b%25252Bc%252525"},
  {{"\xc3\xa9", "~._-", NULL}, "%2525C3%2525A9%3D~._-"},
  {{"lea.managed-by", "session-controller", "lea.tenant_id", "t 1", NULL},
   "lea.managed-by%3Dsession-controller%26lea.tenant_id%3Dt%252520"
   "1"},
};

TEST(meta_encode_table)
{
  size_t i;
  for(i = 0; i < sizeof(meta_cases) / sizeof(meta_cases[0]); i++) {
    sc_kvlist l = {0}, back = {0};
    dynbuf b;
    sc_errbuf eb;
    dynbuf_init(&b, 4096);
    CHECK_OK(kv_from(&l, meta_cases[i].pairs));
    CHECK_OK(cube_meta_encode(&l, &b));
    CHECK_STR(dynbuf_ptr(&b), meta_cases[i].wire);
    CHECK_OK(cube_meta_decode(dynbuf_ptr(&b), &back, &eb));
    CHECK_MSG(sc_kvlist_equal(&l, &back), "case %zu: round trip differs", i);
    sc_kvlist_clear(&l);
    sc_kvlist_clear(&back);
    dynbuf_free(&b);
  }
}

TEST(meta_round_trip_tricky)
{
  static const char *const vals[] = {
    "&", "=", "%", "%25", " ", "+", "a+b c", "%zz", "&a=b&", "\xe2\x82\xac",
    "\xf0\x9f\x98\x80 x", "'!()*", "/?#[]@", ";", "\t\n", "very long value "
    "with all sorts of stuff & = % + in it", NULL};
  size_t i;
  for(i = 0; vals[i]; i++) {
    sc_kvlist l = {0}, back = {0};
    dynbuf b;
    sc_errbuf eb;
    const char *p;
    dynbuf_init(&b, 4096);
    CHECK_OK(sc_kvlist_set(&l, vals[i], vals[i]));
    CHECK_OK(sc_kvlist_set(&l, "k2", vals[i]));
    CHECK_OK(cube_meta_encode(&l, &b));
    for(p = dynbuf_ptr(&b); *p; p++) /* URL-safe: unreserved and % only */
      CHECK_MSG(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                       "0123456789-_.~%", *p), "unsafe byte '%c' in %s", *p,
                dynbuf_ptr(&b));
    CHECK_MSG(cube_meta_decode(dynbuf_ptr(&b), &back, &eb) == SC_OK,
              "decode of %s: %s", dynbuf_ptr(&b), eb.msg);
    CHECK_MSG(sc_kvlist_equal(&l, &back), "value %zu: round trip differs", i);
    sc_kvlist_clear(&l);
    sc_kvlist_clear(&back);
    dynbuf_free(&b);
  }
}

TEST(meta_encode_empty_and_bad)
{
  sc_kvlist l = {0};
  dynbuf b;
  dynbuf_init(&b, 64);
  CHECK_OK(cube_meta_encode(&l, &b));
  CHECK_STR(dynbuf_ptr(&b), "");
  CHECK_OK(sc_kvlist_set(&l, "", "v"));
  CHECK_INT(cube_meta_encode(&l, &b), SC_ERR_INVALID);
  sc_kvlist_clear(&l);
  CHECK_OK(sc_kvlist_set(&l, "k", "0123456789012345678901234567890123456789"
                                  "0123456789012345678901234567890123456789"));
  dynbuf_reset(&b);
  CHECK_INT(cube_meta_encode(&l, &b), SC_ERR_TOO_LARGE);
  sc_kvlist_clear(&l);
  dynbuf_free(&b);
}

static const struct {
  const char *in;
  const char *err; /* substring; NULL: ok */
  const char *k1, *v1;
} decode_cases[] = {
  {"", NULL, NULL, NULL},
  {"a%3Db", NULL, "a", "b"},
  {"a=b", NULL, "a", "b"},            /* unencoded separators also split */
  {"a%3D", NULL, "a", ""},
  {"a", NULL, "a", ""},
  {"a%3Db%26%26", NULL, "a", "b"},     /* empty pairs skipped */
  {"a%3Db+c", NULL, "a", "b c"},       /* '+' is a space */
  {"%", "malformed %-escape at byte 0", NULL, NULL},
  {"a%2", "malformed %-escape at byte 1", NULL, NULL},
  {"a%zz", "malformed %-escape", NULL, NULL},
  {"a%253", "value: malformed %-escape", NULL, NULL},
  {"a%3D%252", "value: malformed %-escape", NULL, NULL},
  {"a%3D%25252", "value: malformed %-escape", NULL, NULL},
  {"a%00", "NUL byte", NULL, NULL},
  {"a%2500", "NUL byte", NULL, NULL},
  {"a%3D%252500", "NUL byte", NULL, NULL},
  {"%3Db", "empty key", NULL, NULL},
  {"a%3D1%26a%3D2", "duplicate key \"a\"", NULL, NULL},
  {"a%3D1%3Bb%3D2", "';'", NULL, NULL},
};

TEST(meta_decode_table)
{
  size_t i;
  for(i = 0; i < sizeof(decode_cases) / sizeof(decode_cases[0]); i++) {
    sc_kvlist l = {0};
    sc_errbuf eb;
    sc_err e;
    eb.msg[0] = 0;
    e = cube_meta_decode(decode_cases[i].in, &l, &eb);
    if(decode_cases[i].err) {
      CHECK_MSG(e == SC_ERR_INVALID, "case %zu (%s): accepted", i,
                decode_cases[i].in);
      CHECK_MSG(strstr(eb.msg, decode_cases[i].err), "case %zu: message %s",
                i, eb.msg);
      CHECK_INT(l.n, 0);
    }
    else {
      CHECK_MSG(e == SC_OK, "case %zu (%s): %s", i, decode_cases[i].in,
                eb.msg);
      if(decode_cases[i].k1)
        CHECK_STR(sc_kvlist_get(&l, decode_cases[i].k1), decode_cases[i].v1);
      else
        CHECK_INT(l.n, 0);
    }
    sc_kvlist_clear(&l);
  }
}

/* ------------------------------------------------------------------ */
/* parsing */

#define HEX1 "0123456789abcdef0123456789abcdef"
#define ROW(id, st, extra)                                                  \
  "{\"sandboxID\":\"" id "\",\"templateID\":\"tpl\",\"state\":\"" st        \
  "\",\"startedAt\":\"2026-11-29T10:00:00Z\"" extra "}"

static const struct {
  const char *body;
  const char *err; /* substring of the message; NULL: ok */
  size_t n;
} list_cases[] = {
  {"[]", NULL, 0},
  {" [ ] \r\n", NULL, 0},
  {"[" ROW(HEX1, "running", ",\"endAt\":\"2026-11-29T10:15:00Z\"") "]", NULL,
   1},
  {"[" ROW("ia1b2c3d4e5f6g7h8i9j0", "paused", ",\"endAt\":null") ","
       ROW("x", "pausing", ",\"metadata\":{\"a\":\"b\"},\"cpuCount\":2,"
           "\"extra\":{\"deep\":[1,2,3]}") "]", NULL, 2},
  {"{}", "body: expected a JSON array, got object", 0},
  {"null", "body: expected a JSON array, got null", 0},
  {"", "truncated JSON", 0},
  {"[", "truncated JSON", 0},
  {"[1]", "row 0: expected an object, got int", 0},
  {"[] x", "at offset 3", 0},
  {"[]   ]", "at offset 5", 0},
  {"[]\0", "NUL byte at offset 2", 0},
  {"[{\"a\":1,}]", "invalid JSON", 0},
  {"[1,]", "invalid JSON", 0},
  {"[{'sandboxID':'a'}]", "invalid JSON", 0},
  {"[" ROW(HEX1, "running", "") ",{}]", "row 1: sandboxID: missing", 0},
  {"[{\"sandboxID\":12,\"state\":\"running\"}]",
   "row 0: sandboxID: expected a string, got int", 0},
  {"[{\"sandboxID\":\"\",\"state\":\"running\"}]",
   "row 0: sandboxID: \"\" is not 1..128 bytes", 0},
  {"[{\"sandboxID\":\"a/b\",\"state\":\"running\"}]",
   "row 0: sandboxID: \"a/b\" is not", 0},
  {"[{\"sandboxID\":\"a\\u0000b\",\"state\":\"running\"}]",
   "row 0: sandboxID: contains a NUL byte", 0},
  {"[{\"sandboxID\":\"ab\",\"startedAt\":\"2026-11-29T10:00:00Z\"}]",
   "row 0: state: missing", 0},
  {"[" ROW("ab", "killed", "") "]",
   "row 0: state: \"killed\" is not running, pausing or paused", 0},
  {"[" ROW("ab", "running", "") "," ROW("cd", "running",
                                         ",\"endAt\":\"yesterday\"") "]",
   "row 1: endAt: \"yesterday\" is not an RFC 3339 time", 0},
  {"[" ROW("ab", "running", ",\"endAt\":1795947300") "]",
   "row 0: endAt: expected a string, got int", 0},
  {"[{\"sandboxID\":\"ab\",\"state\":\"running\"}]",
   "row 0: startedAt: missing", 0},
  {"[{\"sandboxID\":\"ab\",\"state\":\"running\",\"startedAt\":\"2026-13-01"
   "T00:00:00Z\"}]", "row 0: startedAt: \"2026-13-01T00:00:00Z\"", 0},
  {"[" ROW("ab", "running", ",\"metadata\":[]") "]",
   "row 0: metadata: expected an object, got array", 0},
  {"[" ROW("ab", "running", ",\"metadata\":{\"n\":1}") "]",
   "row 0: metadata.n: expected a string, got int", 0},
  {"[" ROW("ab", "running", ",\"metadata\":{\"n\":null}") "]",
   "row 0: metadata.n: expected a string, got null", 0},
  {"[" ROW("ab", "running", ",\"metadata\":{\"n\":\"a\\u0000\"}") "]",
   "row 0: metadata.n: contains a NUL byte", 0},
  {"[" ROW("ab", "running", ",\"templateID\":false") "]",
   "row 0: templateID: expected a string, got boolean", 0},
  {"[{\"sandboxID\":\"ab\xff\",\"state\":\"running\"}]", "invalid JSON", 0},
  {"[{\"sandboxID\":\"\xc3\x28\"}]", "invalid JSON", 0},
  {"[" ROW("ab", "running", ",\"cpuCount\":1e999999") "]",
   "a number out of range", 0},
  {"[" ROW("ab", "running", ",\"memoryMB\":-99999999999999999999") "]",
   "a number out of range", 0},
  {"[" ROW("ab", "running", ",\"x\":{\"y\":[18446744073709551616]}") "]",
   "a number out of range", 0},
};

TEST(parse_list_table)
{
  size_t i;
  for(i = 0; i < sizeof(list_cases) / sizeof(list_cases[0]); i++) {
    cube_sandbox *rows = (cube_sandbox *)1;
    size_t n = 99, j, len = strlen(list_cases[i].body);
    sc_errbuf eb;
    sc_err e;
    if(!strcmp(list_cases[i].body, "[]") && list_cases[i].err)
      len = 3; /* the embedded NUL case */
    eb.msg[0] = 0;
    e = cube_parse_list(list_cases[i].body, len, &rows, &n, &eb);
    if(list_cases[i].err) {
      CHECK_MSG(e == SC_ERR_PROTOCOL, "case %zu: err %d (%s)", i, e, eb.msg);
      CHECK_MSG(strstr(eb.msg, list_cases[i].err),
                "case %zu: message \"%s\", expected \"%s\"", i, eb.msg,
                list_cases[i].err);
      CHECK(rows == NULL && n == 0);
    }
    else {
      CHECK_MSG(e == SC_OK, "case %zu: %s", i, eb.msg);
      CHECK_INT(n, list_cases[i].n);
    }
    for(j = 0; j < n; j++)
      cube_sandbox_clear(&rows[j]);
    free(rows);
  }
}

/* --- the one-scan list parser against json-c's (json_fast.c) --- */

static bool rows_same(const cube_sandbox *a, const cube_sandbox *b, size_t n)
{
  size_t i;
  for(i = 0; i < n; i++)
    if(strcmp(a[i].sandbox_id, b[i].sandbox_id) ||
       !sc_str_eq0(a[i].template_id, b[i].template_id) ||
       !sc_str_eq0(a[i].domain, b[i].domain) || a[i].state != b[i].state ||
       a[i].started_at != b[i].started_at || a[i].end_at != b[i].end_at ||
       !sc_kvlist_equal(&a[i].metadata, &b[i].metadata))
      return false;
  return true;
}

static void rows_free(cube_sandbox *v, size_t n)
{
  size_t i;
  for(i = 0; i < n; i++)
    cube_sandbox_clear(&v[i]);
  free(v);
}

/* 1: the fast path read it (and agreed), 0: it gave up, -1: disagreed */
static int fast_vs_tree(const char *body, size_t len)
{
  cube_sandbox *fr, *tr;
  size_t fn, tn;
  sc_errbuf eb;
  sc_err fe = cube_parse_list_fast(body, len, &fr, &fn);
  sc_err te = cube_parse_list_tree(body, len, &tr, &tn, &eb);
  int res;
  if(fe)
    res = (fr || fn) ? -1 : 0; /* gave up: nothing returned */
  else
    res = !te && fn == tn && rows_same(fr, tr, fn) ? 1 : -1;
  if(!fe)
    rows_free(fr, fn);
  if(!te)
    rows_free(tr, tn);
  return res;
}

TEST(parse_list_fast_agrees_with_json_c)
{
  static const char *const plain[] = {
    "[]",
    " [ ] \r\n",
    "[" ROW(HEX1, "running", ",\"endAt\":\"2026-11-29T10:15:00Z\"") "]",
    "[" ROW("ia1b2c3d4e5f6g7h8i9j0", "paused", ",\"endAt\":null") ","
      ROW("x", "pausing", ",\"metadata\":{\"a\":\"b\"},\"cpuCount\":2,"
          "\"extra\":{\"deep\":[1,2,3,-0.5,true,false,null,\"s\"]}") "]",
    "[" ROW("ab", "running", ",\"metadata\":{\"k\":\"\",\"b\":\"x\\\"y\\\\z"
            "\\/\\n\\t\",\"\xc3\xa9\":\"\xe2\x82\xac\xf0\x9f\x98\x80\"},"
            "\"domain\":\"d.example:443\"") "]",
    "[" ROW("ab", "running", ",\"domain\":7,\"memoryMB\":512") "]",
    "[" ROW("ab", "running", ",\"domain\":\"bad domain\"") "]",
    "[{\"sandboxID\":\"ab\",\"templateID\":null,\"state\":\"running\","
    "\"startedAt\":\"2026-11-29T10:00:00Z\",\"domain\":null}]",
    "[" ROW("ab", "running", ",\"endAt\":\"9999-12-31T23:59:59Z\","
            "\"metadata\":null") "]",
    "[\n  " ROW("ab", "running", "") " ,\n  " ROW("cd", "paused", "") "\n]",
    "[" ROW("ab", "running", ",\"metadata\":{\"a\":\"1\",\"a\":\"2\"}") "]",
    "[" ROW("ab", "running", ",\"x\":\"\x7f\"") "]",
    /* long strings: the scan reads them eight bytes at a time, and an
     * escape, a quote or UTF-8 anywhere in a word must still be seen */
    "[" ROW("ab", "running", ",\"metadata\":{\"long-key-abcdefgh\":"
            "\"0123456789abcdef\\\"ghij\\\\klmnopqrstuv\xc3\xa9wxyz01234"
            "56789\",\"k2-0123456789abcdef\":\"01234567\"},"
            "\"alias\":\"tmpl-0123456789abcdefghijklmnopqrstu\"") "]",
  };
  static const char *const odd[] = { /* json-c decides these */
    "[" ROW("ab", "running", ",\"x\":\"\\u00e9\"") "]",
    "[" ROW("ab", "running", ",\"x\":1e3") "]",
    "[" ROW("ab", "running", ",\"x\":12345678901234567890") "]",
    "[" ROW("ab", "running", ",\"state\":\"paused\"") "]",
    "[{\"sandboxID\":\"ab\xff\",\"state\":\"running\"}]",
    "[" ROW("ab", "running", ",\"x\":\"\xed\xa0\x80\"") "]",
    "[" ROW("ab", "running", ",\"x\":\"\xc0\xaf\"") "]",
    "[" ROW("ab", "running", "") ",]",
    "[" ROW("ab", "running", ",") "]",
    "[" ROW("ab", "running", "") "] x",
    "[" ROW("ab", "running", ",\"x\":01") "]",
    "[" ROW("ab", "running", ",\"x\":[1,]") "]",
    "[" ROW("ab", "running", ",\"x\":tru") "]",
    "[" ROW("ab", "running", ",\"x\":\"a\tb\"") "]",
    "[" ROW("ab", "running", ",\"x\":\"0123456789abcdef\tghijklmnopqrstuv\"") "]",
    "[" ROW("ab", "running", ",\"x\":\"0123456789abcdefg\x01hijklmnopqrstuv\"") "]",
    "[" ROW("ab", "running", ",\"x\":\"0123456789abcdefgh\x1fijklmnopqrstuv\"") "]",
    "[" ROW("ab", "running", ",\"x\":\"0123456789abcdefghi\\u00e9jklmnopqr\"") "]",
    "[" ROW("ab", "killed", "") "]",
    "[" ROW("a/b", "running", "") "]",
    "[{\"sandboxID\":\"ab\",\"state\":\"running\"}]",
  };
  size_t i;
  unsigned seed = 12345;
  dynbuf b;
  int got, fast = 0, gave_up = 0;
  for(i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
    got = fast_vs_tree(plain[i], strlen(plain[i]));
    CHECK_MSG(got == 1, "plain %zu: %d: %s", i, got, plain[i]);
  }
  for(i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
    got = fast_vs_tree(odd[i], strlen(odd[i]));
    CHECK_MSG(got == 0, "odd %zu: %d: %s", i, got, odd[i]);
  }
  for(i = 0; i < sizeof(list_cases) / sizeof(list_cases[0]); i++)
    CHECK_MSG(fast_vs_tree(list_cases[i].body, strlen(list_cases[i].body))
                >= 0, "list case %zu", i);
  /* mutations of a page: a byte changed, dropped or the body cut, each
   * read by both; wherever the fast path answers, json-c agrees */
  dynbuf_init(&b, 1 << 20);
  CHECK_OK(dynbuf_addstr(&b, "["));
  for(i = 0; i < 40; i++)
    CHECK_OK(dynbuf_printf(&b, "%s{\"sandboxID\":\"%032zx\",\"templateID\":"
                           "\"t\\n%zu\",\"state\":\"%s\",\"startedAt\":"
                           "\"2026-11-29T10:00:0%zuZ\",\"endAt\":%s,"
                           "\"metadata\":{\"lea.session_id\":\"s%zu\","
                           "\"k\\\"\":\"\xc3\xa9\"},\"cpuCount\":%zu,"
                           "\"x\":[{\"y\":null},-1.25,true]}",
                           i ? "," : "", i, i,
                           i % 3 ? "running" : "paused", i % 10,
                           i % 2 ? "null" : "\"2026-11-29T10:15:00.5Z\"",
                           i, i));
  CHECK_OK(dynbuf_addstr(&b, "]"));
  CHECK(fast_vs_tree(dynbuf_ptr(&b), dynbuf_len(&b)) == 1);
  for(i = 0; i < 4000; i++) {
    char *m = malloc(dynbuf_len(&b));
    size_t len = dynbuf_len(&b), at;
    static const char bytes[] = "\"\\{}[],:0 -.eE\x01\x7f\xc3\xa9\xffnul";
    CHECK(m != NULL);
    if(!m)
      break;
    memcpy(m, dynbuf_ptr(&b), len);
    seed = seed * 1103515245u + 12345u;
    at = (seed >> 8) % len;
    switch(i % 3) {
    case 0:
      seed = seed * 1103515245u + 12345u;
      m[at] = bytes[(seed >> 8) % (sizeof(bytes) - 1)];
      break;
    case 1:
      memmove(m + at, m + at + 1, len - at - 1);
      len--;
      break;
    default:
      len = at;
    }
    got = fast_vs_tree(m, len);
    CHECK_MSG(got >= 0, "mutation %zu (%d at %zu) disagrees", i, (int)(i % 3),
              at);
    fast += got == 1;
    gave_up += got == 0;
    free(m);
  }
  /* both kinds were met: the mutations reached both paths */
  CHECK_MSG(fast > 100 && gave_up > 100, "fast %d, gave up %d", fast,
            gave_up);
  dynbuf_free(&b);
}

/* E2B's rows as they come (the cubesim page and the fields of E2B's
 * ListedSandbox: alias, clientID, sizes, envdVersion, volumeMounts, a
 * nanosecond time) are read by the one scan, never handed to json-c; and
 * what json_fast.c adds to sc_kvlist_set(): metadata keys out of order,
 * given twice, past the first allocation, copied out of an escape */
TEST(parse_list_fast_reads_e2b_rows_and_metadata)
{
  static const char *const e2b[] = {
    "[{\"templateID\":\"t\",\"sandboxID\":\"i000sc1b8s21hqlfxg4sd\","
    "\"clientID\":\"cubesim\",\"startedAt\":\"2026-12-01T21:35:00.255Z\","
    "\"endAt\":\"2026-12-01T21:50:00.255Z\",\"cpuCount\":2,\"memoryMB\":512,"
    "\"diskSizeMB\":1024,\"metadata\":{\"lea.config\":\"9e3814ea0aacb3a2\","
    "\"lea.managed-by\":\"session-controller\",\"lea.session_id\":\"r1112\","
    "\"lea.session_uid\":\"f3506001-c7c3-49b9-a92a-95250d60cdfc\","
    "\"lea.template\":\"t\",\"lea.tenant_id\":\"default\"},"
    "\"state\":\"running\",\"envdVersion\":\"0.4.2\"}]",
    "[{\"alias\":\"base\",\"clientID\":\"6532622b\",\"cpuCount\":2,"
    "\"diskSizeMB\":512,\"endAt\":\"2026-11-29T10:15:00.123456789Z\","
    "\"envdVersion\":\"0.2.0\",\"memoryMB\":1024,\"metadata\":{},"
    "\"sandboxID\":\"ia1b2c3d4e5f6g7h8i9j0\",\"startedAt\":"
    "\"2026-11-29T10:00:00.000001+01:00\",\"state\":\"paused\","
    "\"templateID\":\"rki5dems9wqfm4r03t7g\",\"volumeMounts\":[{\"name\":"
    "\"v\",\"path\":\"/data\"}]}]",
  };
  const char *md =
    "[" ROW("ab", "running", ",\"metadata\":{\"z\":\"1\",\"b\":\"2\","
            "\"m\\n\":\"3\",\"a\":\"4\",\"b\":\"5\",\"k09\":\"x\",\"k08\":\"x\","
            "\"k07\":\"x\",\"k06\":\"x\",\"k05\":\"x\",\"k04\":\"x\","
            "\"k03\":\"x\",\"k02\":\"x\",\"k01\":\"x\",\"z\":\"\\t6\"}") "]";
  cube_sandbox *rows = NULL;
  size_t i, n = 0;
  for(i = 0; i < sizeof(e2b) / sizeof(e2b[0]); i++)
    CHECK_MSG(fast_vs_tree(e2b[i], strlen(e2b[i])) == 1, "e2b row %zu", i);
  CHECK(fast_vs_tree(md, strlen(md)) == 1);
  CHECK_OK(cube_parse_list_fast(md, strlen(md), &rows, &n));
  CHECK_INT(n, 1);
  if(n == 1) {
    const sc_kvlist *l = &rows[0].metadata;
    CHECK_INT(l->n, 13); /* a, b, k01..k09, m\n, z */
    for(i = 1; i < l->n; i++)
      CHECK_MSG(strcmp(l->items[i - 1].key, l->items[i].key) < 0,
                "%s before %s", l->items[i - 1].key, l->items[i].key);
    CHECK_STR(sc_kvlist_get(l, "b"), "5");
    CHECK_STR(sc_kvlist_get(l, "z"), "\t6");
    CHECK_STR(sc_kvlist_get(l, "m\n"), "3");
    CHECK_STR(sc_kvlist_get(l, "a"), "4");
    CHECK_STR(rows[0].template_id, "tpl");
  }
  rows_free(rows, n);
}

TEST(parse_list_fields)
{
  const char *body =
    "[" ROW(HEX1, "running", ",\"endAt\":\"2026-11-29T10:15:00.5Z\","
            "\"metadata\":{\"lea.session_id\":\"s1\",\"k\":\"\"}") ","
    ROW("ia1b2c3d4e5f6g7h8i9j0", "paused",
        ",\"endAt\":\"9999-12-31T23:59:59Z\"") ","
    "{\"sandboxID\":\"c\",\"state\":\"pausing\",\"startedAt\":"
    "\"2026-11-29T12:00:00+02:00\",\"metadata\":null}]";
  cube_sandbox *rows;
  size_t n, j;
  sc_errbuf eb;
  CHECK_OK(cube_parse_list(body, strlen(body), &rows, &n, &eb));
  CHECK_INT(n, 3);
  CHECK_STR(rows[0].sandbox_id, HEX1);
  CHECK_STR(rows[0].template_id, "tpl");
  CHECK_INT(rows[0].state, CUBE_SB_RUNNING);
  CHECK_INT(rows[0].started_at, 1795946400000LL);
  CHECK_INT(rows[0].end_at, 1795947300500LL);
  CHECK_INT(rows[0].metadata.n, 2);
  CHECK_STR(sc_kvlist_get(&rows[0].metadata, "lea.session_id"), "s1");
  CHECK_STR(sc_kvlist_get(&rows[0].metadata, "k"), "");
  CHECK_INT(rows[1].state, CUBE_SB_PAUSED);
  CHECK_INT(rows[1].end_at, 0); /* Cube's never */
  CHECK_INT(rows[2].state, CUBE_SB_PAUSING);
  CHECK_INT(rows[2].end_at, 0);
  CHECK(rows[2].template_id == NULL);
  CHECK_INT(rows[2].started_at, 1795946400000LL);
  CHECK_INT(rows[2].metadata.n, 0);
  for(j = 0; j < n; j++)
    cube_sandbox_clear(&rows[j]);
  free(rows);
}

TEST(parse_depth_limited)
{
  dynbuf b;
  cube_sandbox *rows;
  size_t n, i;
  sc_errbuf eb;
  dynbuf_init(&b, 4096);
  /* 31 levels of nesting inside a row is fine; 40 is not */
  CHECK_OK(dynbuf_addstr(&b, "[" "{\"sandboxID\":\"a\",\"state\":\"running\","
                             "\"startedAt\":\"2026-11-29T10:00:00Z\",\"x\":"));
  for(i = 0; i < 29; i++)
    CHECK_OK(dynbuf_addstr(&b, "["));
  for(i = 0; i < 29; i++)
    CHECK_OK(dynbuf_addstr(&b, "]"));
  CHECK_OK(dynbuf_addstr(&b, "}]"));
  CHECK_OK(cube_parse_list(dynbuf_ptr(&b), dynbuf_len(&b), &rows, &n, &eb));
  CHECK_INT(n, 1);
  cube_sandbox_clear(&rows[0]);
  free(rows);
  dynbuf_reset(&b);
  for(i = 0; i < 40; i++)
    CHECK_OK(dynbuf_addstr(&b, "["));
  for(i = 0; i < 40; i++)
    CHECK_OK(dynbuf_addstr(&b, "]"));
  CHECK_INT(cube_parse_list(dynbuf_ptr(&b), dynbuf_len(&b), &rows, &n, &eb),
            SC_ERR_PROTOCOL);
  CHECK(strstr(eb.msg, "nesting too deep") || strstr(eb.msg, "depth"));
  dynbuf_free(&b);
}

TEST(parse_sandbox_and_created)
{
  cube_sandbox sb;
  char *id;
  sc_errbuf eb;
  const char *ok = ROW("abc-1", "paused", ",\"endAt\":\"2026-11-29T10:15:00Z\"");
  CHECK_OK(cube_parse_sandbox(ok, strlen(ok), &sb, &eb));
  CHECK_STR(sb.sandbox_id, "abc-1");
  CHECK_INT(sb.state, CUBE_SB_PAUSED);
  cube_sandbox_clear(&sb);
  CHECK_INT(cube_parse_sandbox("[]", 2, &sb, &eb), SC_ERR_PROTOCOL);
  CHECK(strstr(eb.msg, "expected an object, got array"));
  {
    const char *b = "{\"sandboxID\":\"a\",\"state\":\"running\","
                    "\"startedAt\":\"x\"}";
    CHECK_INT(cube_parse_sandbox(b, strlen(b), &sb, &eb), SC_ERR_PROTOCOL);
  }
  CHECK_STR(eb.msg, "startedAt: \"x\" is not an RFC 3339 time");

  {
    const char *b = "{\"sandboxID\":\"" HEX1 "\",\"templateID\":\"t\","
                    "\"clientID\":\"c\",\"envdVersion\":\"0.1\"}";
    CHECK_OK(cube_parse_created(b, strlen(b), &id, &eb));
  }
  CHECK_STR(id, HEX1);
  free(id);
  CHECK_INT(cube_parse_created("{\"templateID\":\"t\"}", 18, &id, &eb),
            SC_ERR_PROTOCOL);
  CHECK_STR(eb.msg, "sandboxID: missing");
  CHECK_INT(cube_parse_created("{\"sandboxID\":7}", 15, &id, &eb),
            SC_ERR_PROTOCOL);
  CHECK_STR(eb.msg, "sandboxID: expected a string, got int");
  CHECK(id == NULL);
}

TEST(parse_error_body)
{
  static const struct {
    const char *b;
    int code;
    const char *msg;
  } cases[] = {
    {"{\"code\":404,\"message\":\"sandbox not found\"}", 404,
     "sandbox not found"},
    {"{\"code\":409}", 409, ""},
    {"{\"code\":\"404\",\"message\":5}", 0, ""},
    {"{\"code\":99999999999999999999}", 0, ""},
    {"{\"code\":4040}", 0, ""},
    {"{\"code\":404.0}", 0, ""},
    {"not json", 0, ""},
    {"", 0, ""},
    {"{\"message\":\"line1\\nline2\"}", 0, "line1?line2"},
  };
  size_t i;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    int code = -1;
    char msg[64];
    cube_parse_error_body(cases[i].b, strlen(cases[i].b), &code, msg,
                          sizeof(msg));
    CHECK_MSG(code == cases[i].code, "case %zu: code %d", i, code);
    CHECK_STR(msg, cases[i].msg);
  }
}

TEST(id_shapes)
{
  CHECK_INT(cube_id_dialect(HEX1), CUBE_DIALECT_CUBE);
  CHECK_INT(cube_id_dialect("ia1b2c3d4e5f6g7h8i9j0"), CUBE_DIALECT_E2B);
  CHECK_INT(cube_id_dialect("0123456789ABCDEF0123456789abcdef"),
            CUBE_DIALECT_UNKNOWN);
  CHECK_INT(cube_id_dialect("ia1b2c3d4e5f6g7h8i9j"), CUBE_DIALECT_UNKNOWN);
  CHECK_INT(cube_id_dialect(""), CUBE_DIALECT_UNKNOWN);
  CHECK(cube_id_valid("a-B-9"));
  CHECK(!cube_id_valid(""));
  CHECK(!cube_id_valid(NULL));
  CHECK(!cube_id_valid("a_b"));
  CHECK(!cube_id_valid("a b"));
  CHECK(!cube_id_valid("../x"));
  {
    char big[130];
    memset(big, 'a', 129);
    big[129] = 0;
    CHECK(!cube_id_valid(big));
    big[128] = 0;
    CHECK(cube_id_valid(big));
  }
}

/* ------------------------------------------------------------------ */
/* the domain: read, checked, never a reason to fail */

TEST(domain_shapes)
{
  static const char *const good[] = {
    "cubesim.local", "a", "0", "sb-1.example.com", "A.B-C.d:3000",
    "10.0.0.1:49983", "host:1", "host:65535", "x.", NULL};
  static const char *const bad[] = {
    "", ".x", "-x", "a/b", "a b", "a\tb", "a\nb", "a\x01" "b", "a\x7f",
    "a_b", "a@b", "[::1]", "a?b", "a#b", "a%2fb", "http://a", "\xc3\xa9.com",
    ":80", "host:", "host:0", "host:080", "host:65536", "host:123456",
    "host:-1", "host:8a", "host:80:81", "a;b", "a\"b", "a\\b", NULL};
  char big[CUBE_DOMAIN_MAX + 2];
  size_t i;
  for(i = 0; good[i]; i++)
    CHECK_MSG(cube_domain_valid(good[i]), "refused \"%s\"", good[i]);
  for(i = 0; bad[i]; i++)
    CHECK_MSG(!cube_domain_valid(bad[i]), "accepted case %zu", i);
  CHECK(!cube_domain_valid(NULL));
  memset(big, 'a', sizeof(big));
  big[CUBE_DOMAIN_MAX] = '\0'; /* 253 bytes: the most */
  CHECK(cube_domain_valid(big));
  big[CUBE_DOMAIN_MAX - 3] = ':'; /* "aaa...:aa" fits with a port */
  big[CUBE_DOMAIN_MAX - 2] = '8';
  big[CUBE_DOMAIN_MAX - 1] = '0';
  CHECK(cube_domain_valid(big));
  memset(big, 'a', sizeof(big));
  big[CUBE_DOMAIN_MAX + 1] = '\0'; /* 254 bytes */
  CHECK(!cube_domain_valid(big));
}

/* The hostile `domain` values of an answer: each leaves the sandbox (or
 * the new ID) as it is, with no domain. */
static const char *const hostile_domains[] = {
  "\"a/b\"", "\"evil.com/x?y\"", "\"a b\"", "\" lead\"", "\"a\\u0001b\"",
  "\"a\\nb\"", "\"a\\u0000b\"", "\"a\\u007f\"", "\"\"", "\"-rf\"",
  "\"h:0\"", "\"h:99999\"", "\"h:\"", "\"\\u00e9t\\u00e9.fr\"", "7", "1.5",
  "true", "false", "null", "[]", "[\"a.b\"]", "{}", "{\"host\":\"a.b\"}",
  NULL};

static sc_err long_domain(dynbuf *b, size_t n)
{
  size_t i;
  sc_err err = dynbuf_addstr(b, "\"");
  for(i = 0; !err && i < n; i++)
    err = dynbuf_addstr(b, "a");
  return err ? err : dynbuf_addstr(b, "\"");
}

/* The body of GET (what == 0), a list of one row (1) or a create answer
 * (2) whose domain is the JSON value v. */
static sc_err domain_body(dynbuf *b, int what, const char *v)
{
  sc_err err;
  dynbuf_reset(b);
  if(what == 2)
    err = dynbuf_addstr(b, "{\"sandboxID\":\"" HEX1 "\",\"templateID\":\"t\","
                           "\"envdAccessToken\":\"tok-envd\","
                           "\"trafficAccessToken\":\"tok-traffic\","
                           "\"domain\":");
  else
    err = dynbuf_addstr(b, what ? "[{" : "{");
  if(!err && what != 2)
    err = dynbuf_addstr(b, "\"sandboxID\":\"s1\",\"state\":\"running\","
                           "\"startedAt\":\"2026-11-29T10:00:00Z\","
                           "\"envdAccessToken\":\"tok-envd\",\"domain\":");
  if(!err)
    err = v ? dynbuf_addstr(b, v) : long_domain(b, CUBE_DOMAIN_MAX + 1);
  if(!err)
    err = dynbuf_addstr(b, what == 1 ? "}]" : "}");
  return err;
}

/* Parse body b as what; *domain gets a copy of the domain (NULL: none). */
static sc_err parse_domain(const dynbuf *b, int what, char **domain,
                           sc_errbuf *eb)
{
  cube_sandbox sb, *rows = NULL;
  size_t n = 0, i;
  char *id = NULL;
  sc_err err;
  *domain = NULL;
  if(what == 2) {
    err = cube_parse_created_ex(dynbuf_ptr(b), dynbuf_len(b), &id, domain,
                                eb);
    if(!err && strcmp(id, HEX1))
      err = SC_ERR_PROTOCOL;
    free(id);
    return err;
  }
  if(what == 1) {
    err = cube_parse_list(dynbuf_ptr(b), dynbuf_len(b), &rows, &n, eb);
    if(!err && n != 1)
      err = SC_ERR_PROTOCOL;
    if(!err && rows[0].domain && !(*domain = strdup(rows[0].domain)))
      err = SC_ERR_NOMEM;
    for(i = 0; i < n; i++)
      cube_sandbox_clear(&rows[i]);
    free(rows);
    return err;
  }
  err = cube_parse_sandbox(dynbuf_ptr(b), dynbuf_len(b), &sb, eb);
  if(!err && (strcmp(sb.sandbox_id, "s1") || sb.state != CUBE_SB_RUNNING))
    err = SC_ERR_PROTOCOL;
  if(!err && sb.domain && !(*domain = strdup(sb.domain)))
    err = SC_ERR_NOMEM;
  cube_sandbox_clear(&sb);
  return err;
}

TEST(parse_domain_hostile_values_dropped)
{
  dynbuf b;
  int what;
  size_t i;
  dynbuf_init(&b, 64 * 1024);
  for(what = 0; what < 3; what++) {
    char *d;
    sc_errbuf eb;
    /* the good ones are kept as sent */
    CHECK_OK(domain_body(&b, what, "\"sb-1.cube.example:8443\""));
    CHECK_MSG(parse_domain(&b, what, &d, &eb) == SC_OK, "%d: %s", what,
              eb.msg);
    CHECK_STR(d, "sb-1.cube.example:8443");
    free(d);
    for(i = 0; hostile_domains[i]; i++) {
      eb.msg[0] = '\0';
      CHECK_OK(domain_body(&b, what, hostile_domains[i]));
      CHECK_MSG(parse_domain(&b, what, &d, &eb) == SC_OK,
                "%d: domain %s failed the body: %s", what,
                hostile_domains[i], eb.msg);
      CHECK_MSG(d == NULL, "%d: domain %s kept as \"%s\"", what,
                hostile_domains[i], d ? d : "");
      free(d);
    }
    CHECK_OK(domain_body(&b, what, NULL)); /* 254 bytes */
    CHECK_OK(parse_domain(&b, what, &d, &eb));
    CHECK(d == NULL);
    free(d);
    /* no domain at all */
    dynbuf_reset(&b);
    CHECK_OK(dynbuf_addstr(&b, what == 2 ? "{\"sandboxID\":\"" HEX1 "\"}"
                           : what == 1 ? "[" ROW("s1", "running", "") "]"
                                       : ROW("s1", "running", "")));
    CHECK_OK(parse_domain(&b, what, &d, &eb));
    CHECK(d == NULL);
    free(d);
  }
  /* cube_parse_created (no domain asked) still reads such a body */
  {
    char *id;
    sc_errbuf eb;
    CHECK_OK(domain_body(&b, 2, "\"a.b\""));
    CHECK_OK(cube_parse_created(dynbuf_ptr(&b), dynbuf_len(&b), &id, &eb));
    CHECK_STR(id, HEX1);
    free(id);
  }
  dynbuf_free(&b);
}

TEST(sandbox_copy_carries_domain)
{
  cube_sandbox a, b;
  sc_errbuf eb;
  const char *body = ROW("s1", "paused", ",\"domain\":\"d.example:3000\"");
  CHECK_OK(cube_parse_sandbox(body, strlen(body), &a, &eb));
  CHECK_STR(a.domain, "d.example:3000");
  CHECK_OK(cube_sandbox_copy(&b, &a));
  CHECK_STR(b.domain, "d.example:3000");
  CHECK(b.domain != a.domain);
  cube_sandbox_clear(&a);
  CHECK(a.domain == NULL);
  CHECK_STR(b.domain, "d.example:3000");
  cube_sandbox_clear(&b);
  cube_sandbox_clear(NULL);
}

/* ------------------------------------------------------------------ */
/* the scripted server */

#define KEY "sekrit-key-123"
/* the access tokens of create and GET answers: never in a result */
#define TOK_ENVD "envd-tok-4f1c9a"
#define TOK_TRAFFIC "traffic-tok-77d2e0"

typedef struct srv srv;
typedef void (*srv_fn)(srv *s, struct evhttp_request *req, const char *path,
                       const char *query);
struct srv {
  struct event_base *base;
  struct evhttp *http;
  int port;
  srv_fn fn;
  int conns, requests, cur, max_cur;
  int delay_ms;
  char uri[8192];
  char method[8];
  char apikey[128], auth[128], ctype[128], ua[128];
  char want_key[64];  /* h_key: the only key taken ("": any) */
  char body[8192];
  int n, n2; /* free for the handlers */
};

static struct bufferevent *srv_bev(struct event_base *base, void *arg)
{
  srv *s = arg;
  s->conns++;
  return bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
}

static void reply(struct evhttp_request *req, int code, const char *date,
                  const char *body)
{
  struct evbuffer *b = evbuffer_new();
  struct evkeyvalq *h = evhttp_request_get_output_headers(req);
  if(date)
    evhttp_add_header(h, "Date", date);
  if(body)
    evbuffer_add(b, body, strlen(body));
  evhttp_send_reply(req, code, "X", b);
  evbuffer_free(b);
}

typedef struct delayed {
  srv *s;
  struct evhttp_request *req;
  char *path, *query;
} delayed;

static void run_handler(srv *s, struct evhttp_request *req, const char *path,
                        const char *query)
{
  s->fn(s, req, path, query ? query : "");
  s->cur--;
}

static void on_delay(evutil_socket_t fd, short what, void *arg)
{
  delayed *d = arg;
  (void)fd;
  (void)what;
  run_handler(d->s, d->req, d->path, d->query);
  free(d->path);
  free(d->query);
  free(d);
}

static void srv_gen(struct evhttp_request *req, void *arg)
{
  srv *s = arg;
  const char *u = evhttp_request_get_uri(req);
  struct evkeyvalq *in = evhttp_request_get_input_headers(req);
  struct evbuffer *body = evhttp_request_get_input_buffer(req);
  const char *v, *q;
  size_t blen = evbuffer_get_length(body);
  char path[1024];
  s->requests++;
  if(++s->cur > s->max_cur)
    s->max_cur = s->cur;
  snprintf(s->uri, sizeof(s->uri), "%s", u);
  switch(evhttp_request_get_command(req)) {
  case EVHTTP_REQ_GET:
    snprintf(s->method, sizeof(s->method), "GET");
    break;
  case EVHTTP_REQ_POST:
    snprintf(s->method, sizeof(s->method), "POST");
    break;
  case EVHTTP_REQ_DELETE:
    snprintf(s->method, sizeof(s->method), "DELETE");
    break;
  default:
    snprintf(s->method, sizeof(s->method), "OTHER");
  }
  v = evhttp_find_header(in, "X-API-Key");
  snprintf(s->apikey, sizeof(s->apikey), "%s", v ? v : "");
  v = evhttp_find_header(in, "Authorization");
  snprintf(s->auth, sizeof(s->auth), "%s", v ? v : "");
  v = evhttp_find_header(in, "Content-Type");
  snprintf(s->ctype, sizeof(s->ctype), "%s", v ? v : "");
  v = evhttp_find_header(in, "User-Agent");
  snprintf(s->ua, sizeof(s->ua), "%s", v ? v : "");
  if(blen >= sizeof(s->body))
    blen = sizeof(s->body) - 1;
  evbuffer_copyout(body, s->body, blen);
  s->body[blen] = 0;
  q = strchr(u, '?');
  snprintf(path, sizeof(path), "%.*s", q ? (int)(q - u) : (int)strlen(u), u);
  if(s->delay_ms) {
    delayed *d = calloc(1, sizeof(*d));
    struct timeval tv = {0, s->delay_ms * 1000};
    d->s = s;
    d->req = req;
    d->path = strdup(path);
    d->query = strdup(q ? q + 1 : "");
    event_base_once(s->base, -1, EV_TIMEOUT, on_delay, d, &tv);
    return;
  }
  run_handler(s, req, path, q ? q + 1 : "");
}

static int srv_start(srv *s, struct event_base *base, srv_fn fn)
{
  struct evhttp_bound_socket *bs;
  struct sockaddr_in sa;
  socklen_t sl = sizeof(sa);
  memset(s, 0, sizeof(*s));
  s->base = base;
  s->fn = fn;
  s->http = evhttp_new(base);
  if(!s->http)
    return -1;
  evhttp_set_bevcb(s->http, srv_bev, s);
  evhttp_set_gencb(s->http, srv_gen, s);
  bs = evhttp_bind_socket_with_handle(s->http, "127.0.0.1", 0);
  if(!bs)
    return -1;
  if(getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&sa,
                 &sl))
    return -1;
  s->port = ntohs(sa.sin_port);
  return 0;
}

static void srv_stop(srv *s)
{
  if(s->http)
    evhttp_free(s->http);
  s->http = NULL;
}

/* One completed call, copied out of its cube_result. */
typedef struct got {
  int n;
  sc_err err;
  long status;
  char msg[SC_ERRBUF_SIZE];
  int64_t retry_after_ms;
  sc_time cube_now;
  cube_sandbox *rows;
  size_t nrows, pages;
  unsigned page_retries;
  bool maybe_done;
  bool truncated, already, resumed, gone;
  char id[160];
  char domain[300];
  bool has_domain;
  char next[160];
  cube_sandbox sb;
  cube_dialect dialect;
  char detail[256];
} got;

static void on_result(const cube_result *r, void *ud)
{
  got *g = ud;
  size_t i;
  g->n++;
  g->err = r->err;
  g->status = r->http_status;
  snprintf(g->msg, sizeof(g->msg), "%s", r->message);
  g->retry_after_ms = r->retry_after_ms;
  g->cube_now = r->cube_now;
  for(i = 0; i < g->nrows; i++)
    cube_sandbox_clear(&g->rows[i]);
  free(g->rows);
  g->rows = cube_result_take_sandboxes(r, &g->nrows);
  g->pages = r->pages;
  g->page_retries = r->page_retries;
  g->maybe_done = r->maybe_done;
  g->truncated = r->truncated_suspect;
  g->already = r->already;
  g->resumed = r->resumed;
  g->gone = r->already_gone;
  snprintf(g->id, sizeof(g->id), "%s", r->sandbox_id ? r->sandbox_id : "");
  snprintf(g->domain, sizeof(g->domain), "%s", r->domain ? r->domain : "");
  g->has_domain = r->domain != NULL;
  snprintf(g->next, sizeof(g->next), "%s", r->next_token ? r->next_token : "");
  cube_sandbox_clear(&g->sb);
  cube_result_take_sandbox(r, &g->sb);
  g->dialect = r->dialect;
  snprintf(g->detail, sizeof(g->detail), "%s", r->detail ? r->detail : "");
}

static void got_clear(got *g)
{
  size_t i;
  for(i = 0; i < g->nrows; i++)
    cube_sandbox_clear(&g->rows[i]);
  free(g->rows);
  cube_sandbox_clear(&g->sb);
  memset(g, 0, sizeof(*g));
}

static void wake(evutil_socket_t fd, short what, void *arg)
{
  (void)fd;
  (void)what;
  (void)arg;
}

/* Run the loop until *counter >= target or limit_ms passed. */
static int wait_for(struct event_base *base, const int *counter, int target,
                    int limit_ms)
{
  int64_t end = sctime_mono_ms() + limit_ms;
  struct event *t = evtimer_new(base, wake, NULL);
  struct timeval tv = {0, 20000};
  while(*counter < target && sctime_mono_ms() < end) {
    evtimer_add(t, &tv);
    event_base_loop(base, EVLOOP_ONCE);
  }
  event_free(t);
  return *counter >= target;
}

typedef struct fixture {
  struct event_base *base;
  srv s;
  cube_client *c;
  char url[64];
} fixture;

static int fx_init(fixture *f, srv_fn fn, cube_client_opts *o)
{
  cube_client_opts d;
  sc_errbuf eb;
  memset(f, 0, sizeof(*f));
  f->base = event_base_new();
  if(!f->base || srv_start(&f->s, f->base, fn))
    return -1;
  snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%d", f->s.port);
  if(!o) {
    cube_client_opts_init(&d);
    o = &d;
  }
  o->base_url = f->url;
  o->api_key = KEY;
  f->c = cube_client_new(f->base, o, &eb);
  if(!f->c) {
    fprintf(stderr, "cube_client_new: %s\n", eb.msg);
    return -1;
  }
  return 0;
}

static void fx_free(fixture *f)
{
  cube_client_free(f->c);
  srv_stop(&f->s);
  if(f->base)
    event_base_free(f->base);
}

static const char *qparam(const char *query, const char *name, char *buf,
                          size_t len)
{
  size_t n = strlen(name);
  const char *p = query;
  while(p && *p) {
    if(!strncmp(p, name, n) && p[n] == '=') {
      const char *e = strchr(p, '&');
      snprintf(buf, len, "%.*s", e ? (int)(e - p - n - 1)
                                   : (int)strlen(p + n + 1), p + n + 1);
      return buf;
    }
    p = strchr(p, '&');
    if(p)
      p++;
  }
  return NULL;
}

/* --- paging --- */

#define DATE1 "Sun, 29 Nov 2026 10:15:00 GMT"
#define DATE2 "Sun, 29 Nov 2026 10:16:00 GMT"

static void h_pages(srv *s, struct evhttp_request *req, const char *path,
                    const char *query)
{
  char tok[64], st[32], lim[16];
  struct evkeyvalq *h = evhttp_request_get_output_headers(req);
  (void)path;
  s->n++;
  if(!qparam(query, "state", st, sizeof(st)) || strcmp(st, "running") ||
     !qparam(query, "limit", lim, sizeof(lim)) || strcmp(lim, "100")) {
    reply(req, 400, NULL, "{\"code\":400,\"message\":\"bad query\"}");
    return;
  }
  if(!qparam(query, "nextToken", tok, sizeof(tok))) {
    evhttp_add_header(h, "X-Next-Token", "t2");
    reply(req, 200, DATE1, "[" ROW("a1", "running", "") "," ROW("a2", "running",
                                                                "") "]");
  }
  else if(!strcmp(tok, "t2")) {
    evhttp_add_header(h, "X-Next-Token", "t 3/+");
    reply(req, 200, DATE2, "[" ROW("a3", "running", "") "]");
  }
  else if(!strcmp(tok, "t%203%2F%2B")) {
    reply(req, 200, DATE2, "[" ROW("a4", "running", "") "]");
  }
  else
    reply(req, 400, NULL, "{\"code\":400,\"message\":\"bad token\"}");
}

TEST(list_follows_pages)
{
  fixture f;
  got g = {0};
  sc_kvlist filter = {0}, back = {0};
  char raw[512];
  sc_errbuf eb;
  sc_time d1;
  CHECK_OK(fx_init(&f, h_pages, NULL));
  CHECK_OK(sc_kvlist_set(&filter, "lea.managed-by", "session-controller"));
  CHECK_OK(sc_kvlist_set(&filter, "lea.tenant_id", "a&b=c"));
  CHECK_OK(cube_list(f.c, &filter, "running", on_result, &g));
  CHECK_INT(g.n, 0); /* never called from inside the call */
  CHECK(wait_for(f.base, &g.n, 1, 5000));
  CHECK_MSG(g.err == SC_OK, "%s", g.msg);
  CHECK_STR(g.msg, "");
  CHECK_INT(g.nrows, 4);
  CHECK_INT(g.pages, 3);
  CHECK_STR(g.rows[0].sandbox_id, "a1");
  CHECK_STR(g.rows[3].sandbox_id, "a4");
  CHECK(!g.truncated);
  CHECK_OK(sctime_parse_http_date(DATE1, &d1));
  CHECK_INT(g.cube_now, d1); /* the first page's Date */
  CHECK_INT(f.s.n, 3);
  CHECK_INT(f.s.conns, 1);
  /* the filter on the wire decodes back as E2B decodes it */
  CHECK(qparam(strchr(f.s.uri, '?') + 1, "metadata", raw, sizeof(raw)));
  CHECK_OK(cube_meta_decode(raw, &back, &eb));
  CHECK(sc_kvlist_equal(&filter, &back));
  CHECK_STR(f.s.apikey, KEY);
  CHECK_STR(f.s.auth, "Bearer " KEY);
  CHECK(!strncmp(f.s.ua, "session-controller/", 19));
  CHECK_INT(cube_client_pending(f.c), 0);
  sc_kvlist_clear(&filter);
  sc_kvlist_clear(&back);
  got_clear(&g);
  fx_free(&f);
}

static void h_full_page(srv *s, struct evhttp_request *req, const char *path,
                        const char *query)
{
  dynbuf b;
  int i, n = 100;
  char lim[16];
  (void)path;
  if(qparam(query, "limit", lim, sizeof(lim)))
    n = (int)strtol(lim, NULL, 10);
  s->n++;
  dynbuf_init(&b, 1 << 20);
  dynbuf_addstr(&b, "[");
  for(i = 0; i < n; i++)
    dynbuf_printf(&b, "%s{\"sandboxID\":\"s%d\",\"state\":\"paused\","
                  "\"startedAt\":\"2026-11-29T10:00:00Z\"}", i ? "," : "", i);
  dynbuf_addstr(&b, "]");
  if(s->n == 2) /* for list_page: a next token on the second call */
    evhttp_add_header(evhttp_request_get_output_headers(req), "X-Next-Token",
                      "more");
  reply(req, 200, NULL, dynbuf_ptr(&b));
  dynbuf_free(&b);
}

TEST(list_truncated_suspect)
{
  fixture f;
  got g = {0};
  CHECK_OK(fx_init(&f, h_full_page, NULL));
  CHECK_OK(cube_list(f.c, NULL, "paused", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 1, 5000));
  CHECK_MSG(g.err == SC_OK, "%s", g.msg);
  CHECK_INT(g.nrows, 100);
  CHECK(g.truncated);
  CHECK(strstr(f.s.uri, "state=paused"));
  CHECK(!strstr(f.s.uri, "metadata="));
  CHECK(g.cube_now > 0); /* evhttp's own Date */
  /* the lower level: one page, the token handed back */
  CHECK_OK(cube_list_page(f.c, NULL, NULL, 2, NULL, on_result, &g));
  CHECK(wait_for(f.base, &g.n, 2, 5000));
  CHECK_MSG(g.err == SC_OK, "%s", g.msg);
  CHECK_INT(g.nrows, 2);
  CHECK(!g.truncated);
  CHECK_STR(g.next, "more");
  CHECK_STR(f.s.uri, "/v2/sandboxes?limit=2");
  CHECK_OK(cube_list_page(f.c, NULL, NULL, 3, "more", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 3, 5000));
  CHECK_INT(g.nrows, 3);
  CHECK(g.truncated);
  CHECK_STR(g.next, "");
  CHECK_STR(f.s.uri, "/v2/sandboxes?limit=3&nextToken=more");
  got_clear(&g);
  fx_free(&f);
}

/* E2B paging at exactly N * limit rows: every page holds `limit` rows, the
 * pages before the last carry X-Next-Token, the last carries none (nor
 * X-Total-Running). pages_total pages of the limit asked. */
static int exact_pages_total;

static void h_exact_pages(srv *s, struct evhttp_request *req,
                          const char *path, const char *query)
{
  dynbuf b;
  int i, n = 100, page = 0;
  char lim[16], tok[16];
  (void)path;
  if(qparam(query, "limit", lim, sizeof(lim)))
    n = (int)strtol(lim, NULL, 10);
  if(qparam(query, "nextToken", tok, sizeof(tok)))
    page = (int)strtol(tok + 1, NULL, 10); /* "pN" */
  s->n++;
  dynbuf_init(&b, 1 << 20);
  dynbuf_addstr(&b, "[");
  for(i = 0; i < n; i++)
    dynbuf_printf(&b, "%s{\"sandboxID\":\"s%d-%d\",\"state\":\"paused\","
                  "\"startedAt\":\"2026-11-29T10:00:00Z\"}", i ? "," : "",
                  page, i);
  dynbuf_addstr(&b, "]");
  if(page + 1 < exact_pages_total) {
    snprintf(tok, sizeof(tok), "p%d", page + 1);
    evhttp_add_header(evhttp_request_get_output_headers(req), "X-Next-Token",
                      tok);
  }
  reply(req, 200, NULL, dynbuf_ptr(&b));
  dynbuf_free(&b);
}

TEST(list_exact_limit_multiple_is_whole_in_e2b)
{
  fixture f;
  got g = {0};
  CHECK_OK(fx_init(&f, h_exact_pages, NULL));
  /* 2 pages of 100: the token of page 1 says the server pages, so the
   * last full page without a token is the end, not a short list */
  exact_pages_total = 2;
  CHECK_OK(cube_list(f.c, NULL, "paused", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 1, 5000));
  CHECK_MSG(g.err == SC_OK, "%s", g.msg);
  CHECK_INT(g.nrows, 200);
  CHECK_INT(g.pages, 2);
  CHECK(!g.truncated);
  /* one page of exactly 100 and no token from a server of unknown
   * dialect: nothing says it pages, so it may be short */
  exact_pages_total = 1;
  CHECK_INT(cube_client_dialect(f.c), CUBE_DIALECT_UNKNOWN);
  CHECK_OK(cube_list(f.c, NULL, "paused", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 2, 5000));
  CHECK_INT(g.nrows, 100);
  CHECK(g.truncated);
  /* the same from a server known to speak e2b: the whole list */
  cube_client_set_dialect(f.c, CUBE_DIALECT_E2B);
  CHECK_OK(cube_list(f.c, NULL, "paused", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 3, 5000));
  CHECK_INT(g.nrows, 100);
  CHECK(!g.truncated);
  CHECK_OK(cube_list_page(f.c, NULL, NULL, 7, NULL, on_result, &g));
  CHECK(wait_for(f.base, &g.n, 4, 5000));
  CHECK_INT(g.nrows, 7);
  CHECK(!g.truncated);
  /* Cube ignores paging and its limit counts nodes: still suspect */
  cube_client_set_dialect(f.c, CUBE_DIALECT_CUBE);
  CHECK_OK(cube_list(f.c, NULL, "paused", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 5, 5000));
  CHECK_INT(g.nrows, 100);
  CHECK(g.truncated);
  got_clear(&g);
  fx_free(&f);
}

static void h_loop_token(srv *s, struct evhttp_request *req, const char *path,
                         const char *query)
{
  (void)path;
  (void)query;
  s->n++;
  evhttp_add_header(evhttp_request_get_output_headers(req), "X-Next-Token",
                    "same");
  reply(req, 200, NULL, "[]");
}

TEST(list_paging_loop_detected)
{
  fixture f;
  got g = {0};
  CHECK_OK(fx_init(&f, h_loop_token, NULL));
  CHECK_OK(cube_list(f.c, NULL, "running", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 1, 5000));
  CHECK_INT(g.err, SC_ERR_PROTOCOL);
  CHECK(strstr(g.msg, "paging loop"));
  CHECK_INT(g.nrows, 0); /* a failed list hands back no rows */
  CHECK_INT(f.s.n, 2);
  got_clear(&g);
  fx_free(&f);
}

static void h_bad_row(srv *s, struct evhttp_request *req, const char *path,
                      const char *query)
{
  (void)s;
  (void)path;
  (void)query;
  reply(req, 200, NULL, "[" ROW("a", "running", "") "," ROW("b", "running",
                        ",\"endAt\":\"yesterday\"") "]");
}

TEST(list_bad_row_fails_whole_list)
{
  fixture f;
  got g = {0};
  char want[128];
  CHECK_OK(fx_init(&f, h_bad_row, NULL));
  CHECK_OK(cube_list(f.c, NULL, "running", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 1, 5000));
  CHECK_INT(g.err, SC_ERR_PROTOCOL);
  snprintf(want, sizeof(want), "cube 127.0.0.1:%d: GET /v2/sandboxes: page 1: "
           "row 1: endAt: \"yesterday\" is not an RFC 3339 time", f.s.port);
  CHECK_STR(g.msg, want);
  CHECK_INT(g.nrows, 0);
  got_clear(&g);
  fx_free(&f);
}

/* page 1 carries a token; the first list's page 1 has a row that fails
 * the list; page 2's requests are counted in s->n2 */
static void h_early(srv *s, struct evhttp_request *req, const char *path,
                    const char *query)
{
  struct evkeyvalq *h = evhttp_request_get_output_headers(req);
  (void)path;
  if(!strstr(query, "nextToken=")) {
    s->n++;
    evhttp_add_header(h, "X-Next-Token", "p2");
    reply(req, 200, DATE1,
          s->n == 1 ? "[" ROW("a1", "running", ",\"endAt\":\"yesterday\"") "]"
                    : "[" ROW("a1", "running", "") "]");
    return;
  }
  s->n2++;
  reply(req, 200, DATE2, "[" ROW("a2", "running", "") "]");
}

/* A list's next page is asked for from the token in this page's headers,
 * before this page is read (Cube makes it meanwhile); when this page then
 * fails the list, that request is taken back: one callback, no rows, and
 * its transfer slot is free again (one slot: the next list runs). */
TEST(list_asks_next_page_before_reading_this_one)
{
  fixture f;
  got g = {0};
  cube_client_opts o;
  cube_client_opts_init(&o);
  o.max_inflight = 1;
  CHECK_OK(fx_init(&f, h_early, &o));
  CHECK_OK(cube_list(f.c, NULL, "running", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 1, 5000));
  CHECK_INT(g.err, SC_ERR_PROTOCOL);
  CHECK_MSG(strstr(g.msg, "page 1: row 0: endAt"), "%s", g.msg);
  CHECK_INT(g.nrows, 0);
  /* page 2's request had gone out before page 1 was read */
  CHECK(wait_for(f.base, &f.s.n2, 1, 5000));
  CHECK_INT(g.n, 1);
  CHECK_INT(cube_client_pending(f.c), 0);
  got_clear(&g);
  CHECK_OK(cube_list(f.c, NULL, "running", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 1, 5000));
  CHECK_MSG(g.err == SC_OK, "%s", g.msg);
  CHECK_INT(g.nrows, 2);
  CHECK_INT(g.pages, 2);
  CHECK_STR(g.rows[1].sandbox_id, "a2");
  got_clear(&g);
  fx_free(&f);
}

/* page 2 fails as s->n's script says (one char per attempt: '5' = 503
 * without Retry-After, 'R' = 503 Retry-After: 1, 'L' = 503 Retry-After:
 * 60, 'B' = 400, anything else or the end of the script = the page) */
static const char *page2_script;

static void h_second_fails(srv *s, struct evhttp_request *req,
                           const char *path, const char *query)
{
  struct evkeyvalq *h = evhttp_request_get_output_headers(req);
  char c;
  (void)path;
  if(!strstr(query, "nextToken=")) {
    evhttp_add_header(h, "X-Next-Token", "p2");
    reply(req, 200, DATE1, "[" ROW("a1", "running", "") "]");
    return;
  }
  c = page2_script[s->n];
  s->n++;
  switch(c) {
  case '5':
    reply(req, 503, DATE2, "");
    break;
  case 'R':
    evhttp_add_header(h, "Retry-After", "1");
    reply(req, 503, DATE2, "");
    break;
  case 'L':
    evhttp_add_header(h, "Retry-After", "60");
    reply(req, 503, DATE2, "");
    break;
  case 'B':
    reply(req, 400, DATE2, "{\"code\":400,\"message\":\"bad token\"}");
    break;
  default:
    reply(req, 200, DATE2, "[" ROW("a2", "running", "") "]");
  }
}

/* A page that fails transiently is asked again (cube_list only); the rows
 * of earlier pages are kept; the list's Date stays the first page's. */
TEST(list_page_retries_table)
{
  static const struct {
    const char *script;
    bool one_page; /* cube_list_page instead of cube_list */
    sc_err err;
    long status;
    int64_t retry_after_ms;
    int attempts;  /* requests for page 2 */
    size_t rows;
  } cases[] = {
    {"5", false, SC_OK, 200, -1, 2, 2},       /* once, then fine */
    {"55R", false, SC_OK, 200, -1, 4, 2},     /* 503 twice, Retry-After */
    {"5555", false, SC_OK, 200, -1, 5, 2},    /* the 4th retry succeeds */
    {"55555", false, SC_ERR_UNAVAILABLE, 503, -1, 5, 0}, /* gives up */
    {"L", false, SC_ERR_UNAVAILABLE, 503, 60000, 1, 0}, /* long pause */
    {"B", false, SC_ERR_INVALID, 400, -1, 1, 0}, /* not transient */
    {"5", true, SC_ERR_UNAVAILABLE, 503, -1, 1, 0}, /* list_page: never */
  };
  size_t i;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    fixture f;
    got g = {0};
    sc_time d1;
    page2_script = cases[i].script;
    CHECK_OK(fx_init(&f, h_second_fails, NULL));
    if(cases[i].one_page)
      CHECK_OK(cube_list_page(f.c, NULL, "paused", 0, "p2", on_result, &g));
    else
      CHECK_OK(cube_list(f.c, NULL, "paused", on_result, &g));
    CHECK(wait_for(f.base, &g.n, 1, 8000));
    CHECK_MSG(g.err == cases[i].err, "case %zu: %s", i, g.msg);
    CHECK_MSG(g.status == cases[i].status, "case %zu: status %ld", i,
              g.status);
    CHECK_MSG(g.retry_after_ms == cases[i].retry_after_ms,
              "case %zu: retry_after %lld", i, (long long)g.retry_after_ms);
    CHECK_MSG(f.s.n == cases[i].attempts, "case %zu: %d attempts", i, f.s.n);
    CHECK_MSG(g.nrows == cases[i].rows, "case %zu: %zu rows", i, g.nrows);
    if(!cases[i].one_page && cases[i].err == SC_OK) {
      CHECK_INT(g.page_retries, cases[i].attempts - 1);
      CHECK_STR(g.rows[0].sandbox_id, "a1");
      CHECK_STR(g.rows[1].sandbox_id, "a2");
      CHECK_OK(sctime_parse_http_date(DATE1, &d1));
      CHECK_INT(g.cube_now, d1);
    }
    CHECK_INT(cube_client_pending(f.c), 0);
    got_clear(&g);
    fx_free(&f);
  }
}

/* pages 2 and 3 each fail three times: 6 retries in all, within the
 * per-page budget of 4 */
static void h_two_bad_pages(srv *s, struct evhttp_request *req,
                            const char *path, const char *query)
{
  struct evkeyvalq *h = evhttp_request_get_output_headers(req);
  (void)path;
  s->n++;
  if(!strstr(query, "nextToken=")) {
    evhttp_add_header(h, "X-Next-Token", "p2");
    reply(req, 200, DATE1, "[" ROW("a1", "running", "") "]");
  }
  else if(s->n <= 4 || (s->n >= 6 && s->n <= 8))
    reply(req, 500, DATE2, "");
  else if(strstr(query, "nextToken=p2")) {
    evhttp_add_header(h, "X-Next-Token", "p3");
    reply(req, 200, DATE2, "[" ROW("a2", "running", "") "]");
  }
  else
    reply(req, 200, DATE2, "[" ROW("a3", "running", "") "]");
}

TEST(list_retry_budget_is_per_page)
{
  fixture f;
  got g = {0};
  CHECK_OK(fx_init(&f, h_two_bad_pages, NULL));
  CHECK_OK(cube_list(f.c, NULL, "running", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 1, 8000));
  CHECK_MSG(g.err == SC_OK, "%s", g.msg);
  CHECK_INT(g.nrows, 3);
  CHECK_INT(g.page_retries, 6);
  CHECK_INT(f.s.n, 9);
  got_clear(&g);
  fx_free(&f);
}

/* A page retry waiting on its timer when the client is freed: the callback
 * runs once, "aborted", and nothing leaks (ASan/valgrind). */
TEST(list_retry_aborted_by_free)
{
  fixture f;
  got g = {0};
  page2_script = "RRRR";
  CHECK_OK(fx_init(&f, h_second_fails, NULL));
  CHECK_OK(cube_list(f.c, NULL, "paused", on_result, &g));
  CHECK(!wait_for(f.base, &g.n, 1, 300)); /* waiting out Retry-After */
  CHECK_INT(f.s.n, 1);
  cube_client_free(f.c);
  f.c = NULL;
  CHECK_INT(g.n, 1);
  CHECK_INT(g.err, SC_ERR_UNAVAILABLE);
  CHECK(strstr(g.msg, "aborted"));
  got_clear(&g);
  fx_free(&f);
}

/* --- the single-sandbox calls --- */

static void h_ops(srv *s, struct evhttp_request *req, const char *path,
                  const char *query)
{
  struct evkeyvalq *h = evhttp_request_get_output_headers(req);
  (void)query;
  s->n++;
  if(!strcmp(path, "/sandboxes/gone"))
    reply(req, 404, NULL, "{\"code\":404,\"message\":\"sandbox not found\"}");
  else if(!strcmp(path, "/sandboxes/code404"))
    reply(req, 500, NULL, "{\"code\":404,\"message\":\"not found\"}");
  else if(!strcmp(path, "/sandboxes/mismatch"))
    reply(req, 200, NULL, ROW("other", "running", ""));
  else if(!strcmp(path, "/sandboxes") && !strcmp(s->method, "POST") &&
          strstr(s->body, "\"templateID\":\"odd-2xx\""))
    reply(req, 202, NULL, "{\"sandboxID\":\"" HEX1 "\",\"envdAccessToken\":"
                          "\"" TOK_ENVD "\",\"trafficAccessToken\":\""
                          TOK_TRAFFIC "\"}");
  else if(!strcmp(path, "/sandboxes") && !strcmp(s->method, "POST") &&
          strstr(s->body, "\"templateID\":\"no-domain\""))
    reply(req, 201, NULL, "{\"sandboxID\":\"" HEX1 "\",\"templateID\":\"t\","
                          "\"domain\":\"http://evil/\"}");
  else if(!strcmp(path, "/sandboxes") && !strcmp(s->method, "POST"))
    reply(req, 201, NULL, "{\"sandboxID\":\"" HEX1 "\",\"templateID\":\"t\","
                          "\"clientID\":\"c\",\"envdVersion\":\"0.1\","
                          "\"envdAccessToken\":\"" TOK_ENVD "\","
                          "\"trafficAccessToken\":\"" TOK_TRAFFIC "\","
                          "\"domain\":\"sb.cube.example:8443\"}");
  else if(!strcmp(path, "/sandboxes/withdom"))
    reply(req, 200, NULL, ROW("withdom", "running", ",\"domain\":"
                              "\"withdom.cube.example\",\"envdAccessToken\":"
                              "\"" TOK_ENVD "\""));
  else if(!strcmp(path, "/sandboxes/tokfail"))
    reply(req, 500, NULL, "{\"code\":500,\"message\":\"boom\","
                          "\"envdAccessToken\":\"" TOK_ENVD "\"}");
  else if(!strcmp(path, "/sandboxes/s1/pause"))
    reply(req, 204, NULL, NULL);
  else if(!strcmp(path, "/sandboxes/e2b/pause"))
    reply(req, 409, NULL, "{\"code\":409,\"message\":\"already paused\"}");
  else if(!strcmp(path, "/sandboxes/cube/pause"))
    reply(req, 500, NULL, "{\"code\":500,\"message\":\"sandbox cube is "
                          "Already Paused\"}");
  else if(!strcmp(path, "/sandboxes/busy/pause"))
    reply(req, 500, NULL, "{\"code\":500,\"message\":\"exec tasks running\"}");
  else if(!strcmp(path, "/sandboxes/s1/connect"))
    reply(req, 201, NULL, "{\"sandboxID\":\"s1\"}");
  else if(!strcmp(path, "/sandboxes/s2/connect"))
    reply(req, 200, NULL, "{\"sandboxID\":\"s2\"}");
  else if(!strcmp(path, "/sandboxes/s1/timeout"))
    reply(req, 204, NULL, NULL);
  else if(!strcmp(path, "/sandboxes/s1") && !strcmp(s->method, "DELETE"))
    reply(req, 204, NULL, NULL);
  else if(!strcmp(path, "/sandboxes/limited")) {
    evhttp_add_header(h, "Retry-After", "3");
    reply(req, 429, NULL, "");
  }
  else if(!strcmp(path, "/sandboxes/pausing")) {
    evhttp_add_header(h, "Retry-After", DATE2); /* Date + 60 s */
    reply(req, 503, DATE1, "{\"code\":503,\"message\":\"pausing\"}");
  }
  else if(!strcmp(path, "/sandboxes/echo"))
    reply(req, 401, NULL, "{\"code\":401,\"message\":\"bad key " KEY "\"}");
  else if(!strncmp(path, "/sandboxes/", 11) && !strcmp(s->method, "GET"))
    reply(req, 200, DATE1, ROW("s1", "paused", ",\"metadata\":{\"a\":\"b\"}"));
  else
    reply(req, 500, NULL, "{\"code\":500,\"message\":\"unexpected\"}");
}

TEST(get_and_not_found)
{
  fixture f;
  got g = {0};
  sc_time d1;
  char want[160];
  CHECK_OK(fx_init(&f, h_ops, NULL));
  CHECK_OK(cube_get(f.c, "s1", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 1, 5000));
  CHECK_MSG(g.err == SC_OK, "%s", g.msg);
  CHECK_STR(g.sb.sandbox_id, "s1");
  CHECK_INT(g.sb.state, CUBE_SB_PAUSED);
  CHECK_STR(sc_kvlist_get(&g.sb.metadata, "a"), "b");
  CHECK_OK(sctime_parse_http_date(DATE1, &d1));
  CHECK_INT(g.cube_now, d1);
  CHECK_STR(f.s.method, "GET");
  CHECK_STR(f.s.ctype, "");

  CHECK_OK(cube_get(f.c, "gone", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 2, 5000));
  CHECK_INT(g.err, SC_ERR_NOT_FOUND);
  CHECK_INT(g.status, 404);
  snprintf(want, sizeof(want), "cube 127.0.0.1:%d: GET /sandboxes/gone: HTTP "
           "404: {\"code\":404,\"message\":\"sandbox not found\"}", f.s.port);
  CHECK_STR(g.msg, want);
  CHECK(g.sb.sandbox_id == NULL);

  CHECK_OK(cube_get(f.c, "code404", on_result, &g)); /* body code wins */
  CHECK(wait_for(f.base, &g.n, 3, 5000));
  CHECK_INT(g.err, SC_ERR_NOT_FOUND);
  CHECK_INT(g.status, 500);

  CHECK_OK(cube_get(f.c, "mismatch", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 4, 5000));
  CHECK_INT(g.err, SC_ERR_PROTOCOL);
  CHECK(strstr(g.msg, "asked for mismatch, got sandboxID other"));

  CHECK_OK(cube_get(f.c, "bad/id", on_result, &g)); /* never sent */
  CHECK_INT(g.n, 4);
  CHECK(wait_for(f.base, &g.n, 5, 5000));
  CHECK_INT(g.err, SC_ERR_INVALID);
  CHECK(strstr(g.msg, "sandbox ID \"bad/id\" is not"));
  CHECK_INT(f.s.n, 4);
  got_clear(&g);
  fx_free(&f);
}

TEST(create_sends_both_dialects)
{
  fixture f;
  got g = {0};
  sc_kvlist md = {0}, env = {0};
  cube_create_req req = {0};
  CHECK_OK(fx_init(&f, h_ops, NULL));
  CHECK_OK(sc_kvlist_set(&md, "lea.session_id", "s\"1"));
  CHECK_OK(sc_kvlist_set(&env, "A", "1"));
  req.template_id = "tpl";
  req.timeout_s = 900;
  req.metadata = &md;
  req.env_vars = &env;
  CHECK_OK(cube_create(f.c, &req, on_result, &g));
  CHECK(wait_for(f.base, &g.n, 1, 5000));
  CHECK_MSG(g.err == SC_OK, "%s", g.msg);
  CHECK_INT(g.status, 201);
  CHECK_STR(g.id, HEX1);
  CHECK_STR(f.s.method, "POST");
  CHECK_STR(f.s.ctype, "application/json");
  CHECK_STR(f.s.body, "{\"templateID\":\"tpl\",\"timeout\":900,\"autoPause\":"
            "true,\"autoResume\":{\"enabled\":true},\"lifecycle\":{"
            "\"onTimeout\":\"pause\",\"autoResume\":true},\"metadata\":{"
            "\"lea.session_id\":\"s\\\"1\"},\"envVars\":{\"A\":\"1\"}}");
  /* auto-resume off: both dialects' fields say so at once */
  req.no_auto_resume = true;
  CHECK_OK(cube_create(f.c, &req, on_result, &g));
  CHECK(wait_for(f.base, &g.n, 2, 5000));
  CHECK_MSG(g.err == SC_OK, "%s", g.msg);
  CHECK_STR(f.s.body, "{\"templateID\":\"tpl\",\"timeout\":900,\"autoPause\":"
            "true,\"autoResume\":{\"enabled\":false},\"lifecycle\":{"
            "\"onTimeout\":\"pause\",\"autoResume\":false},\"metadata\":{"
            "\"lea.session_id\":\"s\\\"1\"},\"envVars\":{\"A\":\"1\"}}");
  req.no_auto_resume = false;
  req.timeout_s = -5;
  CHECK_OK(cube_create(f.c, &req, on_result, &g));
  CHECK(wait_for(f.base, &g.n, 3, 5000));
  CHECK_INT(g.err, SC_ERR_INVALID);
  CHECK(strstr(g.msg, "timeout -5 s"));
  sc_kvlist_clear(&md);
  sc_kvlist_clear(&env);
  got_clear(&g);
  fx_free(&f);
}

/* The network policy and volume mounts go under the names both dialects
 * read (E2B NewSandbox; Cube takes the same): allow_internet_access,
 * network {allowOut, denyOut, allowPublicTraffic}, volumeMounts; parts
 * left unset are not sent. */
TEST(create_sends_network_and_volume_mounts)
{
  fixture f;
  got g = {0};
  cube_create_req req = {0};
  char *allow[] = {"10.0.0.0/8", "pypi.org"}, *deny[] = {"0.0.0.0/0"};
  session_volume_mount vm[2] = {{"models", "/models", true},
                                {"cache", "/cache", false}};
  CHECK_OK(fx_init(&f, h_ops, NULL));
  req.template_id = "tpl";
  req.timeout_s = 60;
  req.allow_internet = SESSION_OPT_FALSE;
  req.allow_out = allow;
  req.n_allow_out = 2;
  req.deny_out = deny;
  req.n_deny_out = 1;
  req.allow_public = SESSION_OPT_FALSE;
  req.volume_mounts = vm;
  req.n_volume_mounts = 2;
  CHECK_OK(cube_create(f.c, &req, on_result, &g));
  CHECK(wait_for(f.base, &g.n, 1, 5000));
  CHECK_MSG(g.err == SC_OK, "%s", g.msg);
  CHECK_STR(f.s.body, "{\"templateID\":\"tpl\",\"timeout\":60,\"autoPause\":"
            "true,\"autoResume\":{\"enabled\":true},\"lifecycle\":{"
            "\"onTimeout\":\"pause\",\"autoResume\":true},\"metadata\":{},"
            "\"envVars\":{},\"allow_internet_access\":false,\"network\":{"
            "\"allowOut\":[\"10.0.0.0/8\",\"pypi.org\"],\"denyOut\":["
            "\"0.0.0.0/0\"],\"allowPublicTraffic\":false},\"volumeMounts\":["
            "{\"name\":\"models\",\"path\":\"/models\",\"readOnly\":true},"
            "{\"name\":\"cache\",\"path\":\"/cache\"}]}");
  /* only internet access on: no network object, no volumeMounts */
  req.allow_internet = SESSION_OPT_TRUE;
  req.n_allow_out = req.n_deny_out = req.n_volume_mounts = 0;
  req.allow_public = SESSION_OPT_UNSET;
  CHECK_OK(cube_create(f.c, &req, on_result, &g));
  CHECK(wait_for(f.base, &g.n, 2, 5000));
  CHECK_MSG(g.err == SC_OK, "%s", g.msg);
  CHECK(strstr(f.s.body, "\"envVars\":{},\"allow_internet_access\":true}"));
  CHECK(!strstr(f.s.body, "network") && !strstr(f.s.body, "volumeMounts"));
  got_clear(&g);
  fx_free(&f);
}

TEST(create_and_get_read_domain_never_tokens)
{
  fixture f;
  got g = {0};
  cube_create_req req = {0};
  CHECK_OK(fx_init(&f, h_ops, NULL));
  req.template_id = "tpl";
  req.timeout_s = 60;
  CHECK_OK(cube_create(f.c, &req, on_result, &g));
  CHECK(wait_for(f.base, &g.n, 1, 5000));
  CHECK_MSG(g.err == SC_OK, "%s", g.msg);
  CHECK_STR(g.id, HEX1);
  CHECK(g.has_domain);
  CHECK_STR(g.domain, "sb.cube.example:8443");

  req.template_id = "no-domain"; /* "http://evil/": dropped, not fatal */
  CHECK_OK(cube_create(f.c, &req, on_result, &g));
  CHECK(wait_for(f.base, &g.n, 2, 5000));
  CHECK_MSG(g.err == SC_OK, "%s", g.msg);
  CHECK_STR(g.id, HEX1);
  CHECK(!g.has_domain);

  req.template_id = "odd-2xx"; /* a 202 that carries the tokens */
  CHECK_OK(cube_create(f.c, &req, on_result, &g));
  CHECK(wait_for(f.base, &g.n, 3, 5000));
  CHECK_INT(g.err, SC_ERR_PROTOCOL);
  CHECK_INT(g.status, 202);
  CHECK(!g.has_domain);
  CHECK_MSG(!strstr(g.msg, TOK_ENVD) && !strstr(g.msg, TOK_TRAFFIC),
            "a token in the message: %s", g.msg);
  CHECK_MSG(strstr(g.msg, "HTTP 202: (") &&
            strstr(g.msg, "bytes withheld: the body carries an access token"),
            "%s", g.msg);

  CHECK_OK(cube_get(f.c, "withdom", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 4, 5000));
  CHECK_MSG(g.err == SC_OK, "%s", g.msg);
  CHECK_STR(g.sb.sandbox_id, "withdom");
  CHECK_STR(g.sb.domain, "withdom.cube.example");

  CHECK_OK(cube_get(f.c, "s1", on_result, &g)); /* no domain in the row */
  CHECK(wait_for(f.base, &g.n, 5, 5000));
  CHECK_MSG(g.err == SC_OK, "%s", g.msg);
  CHECK(g.sb.domain == NULL);

  CHECK_OK(cube_get(f.c, "tokfail", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 6, 5000));
  CHECK_INT(g.err, SC_ERR_UNAVAILABLE);
  CHECK_MSG(!strstr(g.msg, TOK_ENVD), "a token in the message: %s", g.msg);
  CHECK(strstr(g.msg, "HTTP 500: ("));
  got_clear(&g);
  fx_free(&f);
}

TEST(pause_connect_timeout_delete)
{
  fixture f;
  got g = {0};
  CHECK_OK(fx_init(&f, h_ops, NULL));
  CHECK_OK(cube_pause(f.c, "s1", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 1, 5000));
  CHECK_MSG(g.err == SC_OK, "%s", g.msg);
  CHECK(!g.already);
  CHECK_INT(g.status, 204);
  CHECK_STR(f.s.ctype, ""); /* no body, no content type */
  CHECK_STR(f.s.body, "");

  CHECK_OK(cube_pause(f.c, "e2b", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 2, 5000));
  CHECK_INT(g.err, SC_OK);
  CHECK(g.already);
  CHECK_INT(g.status, 409);

  CHECK_OK(cube_pause(f.c, "cube", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 3, 5000));
  CHECK_INT(g.err, SC_OK);
  CHECK(g.already);
  CHECK_INT(g.status, 500);

  CHECK_OK(cube_pause(f.c, "busy", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 4, 5000));
  CHECK_INT(g.err, SC_ERR_UNAVAILABLE);
  CHECK(!g.already);
  CHECK(strstr(g.msg, "POST /sandboxes/busy/pause: HTTP 500: "));

  CHECK_OK(cube_connect(f.c, "s1", 600, on_result, &g));
  CHECK(wait_for(f.base, &g.n, 5, 5000));
  CHECK_INT(g.err, SC_OK);
  CHECK(g.resumed);
  CHECK_STR(f.s.body, "{\"timeout\":600}");
  CHECK_STR(f.s.ctype, "application/json");
  CHECK_OK(cube_connect(f.c, "s2", 600, on_result, &g));
  CHECK(wait_for(f.base, &g.n, 6, 5000));
  CHECK_INT(g.err, SC_OK);
  CHECK(!g.resumed);
  CHECK_INT(g.status, 200);

  CHECK_OK(cube_set_timeout(f.c, "s1", 60, on_result, &g));
  CHECK(wait_for(f.base, &g.n, 7, 5000));
  CHECK_INT(g.err, SC_OK);
  CHECK_STR(f.s.uri, "/sandboxes/s1/timeout");
  CHECK_STR(f.s.body, "{\"timeout\":60}");

  CHECK_OK(cube_delete(f.c, "s1", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 8, 5000));
  CHECK_INT(g.err, SC_OK);
  CHECK(!g.gone);
  CHECK_STR(f.s.method, "DELETE");
  CHECK_OK(cube_delete(f.c, "gone", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 9, 5000));
  CHECK_INT(g.err, SC_OK);
  CHECK(g.gone);
  CHECK_OK(cube_delete(f.c, "code404", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 10, 5000));
  CHECK_INT(g.err, SC_OK);
  CHECK(g.gone);

  CHECK_OK(cube_set_timeout(f.c, "s1", -1, on_result, &g));
  CHECK(wait_for(f.base, &g.n, 11, 5000));
  CHECK_INT(g.err, SC_ERR_INVALID);
  CHECK_INT(f.s.requests, 10);
  CHECK_INT(f.s.conns, 1);
  got_clear(&g);
  fx_free(&f);
}

/* A bad argument ends the call through its callback, later from the loop
 * (never inside the call), with SC_ERR_INVALID, a message naming the
 * method and path, and no request sent. */
static int bad_arg_ends(fixture *f, got *g, sc_err accepted, int n,
                        const char *tail)
{
  char want[SC_ERRBUF_SIZE];
  snprintf(want, sizeof(want), "cube %s: %s", cube_client_peer(f->c), tail);
  if(accepted != SC_OK || g->n != n - 1) {
    fprintf(stderr, "    call %d: returned %d, callback ran %d times "
            "inside it\n", n, (int)accepted, g->n - (n - 1));
    return 0;
  }
  if(!wait_for(f->base, &g->n, n, 5000) || g->err != SC_ERR_INVALID ||
     strcmp(g->msg, want)) {
    fprintf(stderr, "    call %d: err %d, message\n      %s\n    want\n"
            "      %s\n", n, (int)g->err, g->msg, want);
    return 0;
  }
  return 1;
}

TEST(bad_arguments_end_through_the_callback)
{
  fixture f;
  got g = {0};
  cube_create_req req = {0};
  CHECK_OK(fx_init(&f, h_ops, NULL));
  CHECK(bad_arg_ends(&f, &g, cube_get(f.c, "a b", on_result, &g), 1,
                     "GET /sandboxes/a b: sandbox ID \"a b\" is not 1..128 "
                     "bytes of [A-Za-z0-9-]"));
  CHECK(bad_arg_ends(&f, &g, cube_delete_now(f.c, NULL, on_result, &g), 2,
                     "DELETE /sandboxes/: sandbox ID \"(null)\" is not "
                     "1..128 bytes of [A-Za-z0-9-]"));
  CHECK(bad_arg_ends(&f, &g, cube_pause(f.c, "", on_result, &g), 3,
                     "POST /sandboxes//pause: sandbox ID \"\" is not 1..128 "
                     "bytes of [A-Za-z0-9-]"));
  CHECK(bad_arg_ends(&f, &g, cube_connect(f.c, "s1", -1, on_result, &g), 4,
                     "POST /sandboxes/{id}/connect: timeout -1 s is not "
                     "0..2147483647"));
  CHECK(bad_arg_ends(&f, &g,
                     cube_set_timeout_now(f.c, "s1", 2147483648LL, on_result,
                                          &g),
                     5, "POST /sandboxes/{id}/timeout: timeout 2147483648 s "
                        "is not 0..2147483647"));
  CHECK(bad_arg_ends(&f, &g, cube_list(f.c, NULL, "pausing", on_result, &g),
                     6, "GET /v2/sandboxes: state \"pausing\" is not running "
                        "or paused"));
  CHECK(bad_arg_ends(&f, &g,
                     cube_list_page(f.c, NULL, NULL, 101, NULL, on_result,
                                    &g),
                     7, "GET /v2/sandboxes: limit 101 is not 1..100"));
  CHECK(bad_arg_ends(&f, &g, cube_create(f.c, &req, on_result, &g), 8,
                     "POST /sandboxes: templateID is required"));
  req.template_id = "tpl";
  req.timeout_s = -2;
  CHECK(bad_arg_ends(&f, &g, cube_create(f.c, &req, on_result, &g), 9,
                     "POST /sandboxes: timeout -2 s is not 0..2147483647"));
  CHECK_INT(f.s.requests, 0);
  got_clear(&g);
  fx_free(&f);
}

TEST(retry_after_parsed)
{
  fixture f;
  got g = {0};
  CHECK_OK(fx_init(&f, h_ops, NULL));
  CHECK_OK(cube_delete(f.c, "limited", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 1, 5000));
  CHECK_INT(g.err, SC_ERR_BUSY);
  CHECK_INT(g.status, 429);
  CHECK_INT(g.retry_after_ms, 3000);
  CHECK(strstr(g.msg, "HTTP 429 (empty body)"));
  CHECK_OK(cube_delete(f.c, "pausing", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 2, 5000));
  CHECK_INT(g.err, SC_ERR_UNAVAILABLE);
  CHECK_INT(g.status, 503);
  CHECK(!g.maybe_done); /* an answer: the server says what happened */
  CHECK_INT(g.retry_after_ms, 60000);
  CHECK_OK(cube_get(f.c, "s1", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 3, 5000));
  CHECK_INT(g.retry_after_ms, -1);
  got_clear(&g);
  fx_free(&f);
}

/* --- the DELETE after a confirming GET goes first --- */

static char order_log[512];

static void h_order(srv *s, struct evhttp_request *req, const char *path,
                    const char *query)
{
  size_t l = strlen(order_log);
  (void)query;
  s->n++;
  snprintf(order_log + l, sizeof(order_log) - l, "%s %s;", s->method,
           path + strlen("/sandboxes/"));
  if(!strcmp(s->method, "DELETE"))
    reply(req, 204, NULL, NULL);
  else if(!strcmp(path, "/sandboxes/g1"))
    reply(req, 200, NULL, ROW("g1", "paused", ""));
  else if(!strcmp(path, "/sandboxes/g2"))
    reply(req, 200, NULL, ROW("g2", "paused", ""));
  else
    reply(req, 200, NULL, ROW("g3", "paused", ""));
}

enum { FOLLOW_DELETE, FOLLOW_DELETE_NOW, FOLLOW_GET_NOW };
typedef struct confirm_ctx {
  cube_client *c;
  int follow;      /* the call made from the GET's callback */
  got del;
  int started;
} confirm_ctx;

static void on_confirm(const cube_result *r, void *ud)
{
  confirm_ctx *x = ud;
  if(!r->err && r->sandbox.state == CUBE_SB_PAUSED)
    x->started += (x->follow == FOLLOW_DELETE_NOW
                     ? cube_delete_now(x->c, "g1", on_result, &x->del)
                   : x->follow == FOLLOW_GET_NOW
                     ? cube_get_now(x->c, "g1", on_result, &x->del)
                     : cube_delete(x->c, "g1", on_result, &x->del)) == SC_OK;
}

/* With one transfer at a time (max_inflight) or the token bucket holding
 * the queue, the DELETE (or the second GET) issued from the GET's callback
 * runs before the calls queued earlier; a plain cube_delete waits behind
 * them. */
TEST(delete_now_jumps_queue_and_bucket)
{
  static const struct {
    int max_inflight;
    double qps;
    int follow;
    const char *order;
  } cases[] = {
    {1, 0, FOLLOW_DELETE_NOW, "GET g1;DELETE g1;GET g2;GET g3;"},
    {1, 0, FOLLOW_DELETE, "GET g1;GET g2;GET g3;DELETE g1;"},
    {8, 1, FOLLOW_DELETE_NOW, "GET g1;DELETE g1;GET g2;GET g3;"},
    {1, 0, FOLLOW_GET_NOW, "GET g1;GET g1;GET g2;GET g3;"},
    {8, 1, FOLLOW_GET_NOW, "GET g1;GET g1;GET g2;GET g3;"},
  };
  size_t i;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    fixture f;
    cube_client_opts o;
    confirm_ctx x;
    got g2 = {0}, g3 = {0};
    cube_client_opts_init(&o);
    o.max_inflight = cases[i].max_inflight;
    o.qps = cases[i].qps;
    order_log[0] = '\0';
    memset(&x, 0, sizeof(x));
    CHECK_OK(fx_init(&f, h_order, &o));
    x.c = f.c;
    x.follow = cases[i].follow;
    CHECK_OK(cube_get(f.c, "g1", on_confirm, &x));
    CHECK_OK(cube_get(f.c, "g2", on_result, &g2));
    CHECK_OK(cube_get(f.c, "g3", on_result, &g3));
    CHECK(wait_for(f.base, &g3.n, 1, 8000));
    CHECK(wait_for(f.base, &x.del.n, 1, 8000));
    CHECK_INT(x.started, 1);
    CHECK_MSG(x.del.err == SC_OK, "%s", x.del.msg);
    CHECK_MSG(!strcmp(order_log, cases[i].order), "case %zu: %s", i,
              order_log);
    got_clear(&x.del);
    got_clear(&g2);
    got_clear(&g3);
    fx_free(&f);
  }
}

/* --- caps, timeouts, connections, concurrency --- */

static void h_big(srv *s, struct evhttp_request *req, const char *path,
                  const char *query)
{
  size_t n = (size_t)2 << 20;
  char *big = malloc(n + 1);
  (void)s;
  (void)query;
  if(!strcmp(path, "/v2/sandboxes"))
    n = 2000;
  memset(big, ' ', n);
  big[0] = '[';
  big[n - 1] = ']';
  big[n] = 0;
  reply(req, 200, NULL, big);
  free(big);
}

TEST(body_over_cap)
{
  fixture f;
  got g = {0};
  cube_client_opts o;
  char want[160];
  cube_client_opts_init(&o);
  o.list_cap = 1000;
  CHECK_OK(fx_init(&f, h_big, &o));
  CHECK_OK(cube_get(f.c, "s1", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 1, 5000));
  CHECK_INT(g.err, SC_ERR_TOO_LARGE);
  snprintf(want, sizeof(want), "cube 127.0.0.1:%d: GET /sandboxes/s1: body "
           "over 1 MiB cap", f.s.port);
  CHECK_STR(g.msg, want);
  CHECK_OK(cube_list(f.c, NULL, "running", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 2, 5000));
  CHECK_INT(g.err, SC_ERR_TOO_LARGE);
  CHECK(strstr(g.msg, "GET /v2/sandboxes: body over 1000 bytes cap"));
  got_clear(&g);
  fx_free(&f);
}

static void h_stall(srv *s, struct evhttp_request *req, const char *path,
                    const char *query)
{
  struct evbuffer *b = evbuffer_new();
  (void)s;
  (void)path;
  (void)query;
  evhttp_send_reply_start(req, 200, "OK");
  evbuffer_add(b, "[{\"sandboxID\":", 14);
  evhttp_send_reply_chunk(req, b); /* and never the rest */
  evbuffer_free(b);
}

TEST(stalled_body_times_out)
{
  fixture f;
  got g = {0};
  cube_client_opts o;
  int64_t t0;
  cube_client_opts_init(&o);
  o.timeout_ms = 300;
  CHECK_OK(fx_init(&f, h_stall, &o));
  t0 = sctime_mono_ms();
  CHECK_OK(cube_list(f.c, NULL, "running", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 1, 5000));
  CHECK_INT(g.err, SC_ERR_TIMEOUT);
  CHECK(strstr(g.msg, "GET /v2/sandboxes: timed out after 300 ms"));
  CHECK(g.maybe_done); /* sent, no whole answer: it may have acted */
  CHECK(sctime_mono_ms() - t0 >= 290);
  CHECK(sctime_mono_ms() - t0 < 3000);
  got_clear(&g);
  fx_free(&f);
}

static void h_ok(srv *s, struct evhttp_request *req, const char *path,
                 const char *query)
{
  (void)s;
  (void)path;
  (void)query;
  reply(req, 200, NULL, ROW("s1", "running", ""));
}

typedef struct chain {
  cube_client *c;
  int left, done, failed;
} chain;

static void on_chain(const cube_result *r, void *ud)
{
  chain *ch = ud;
  ch->done++;
  if(r->err)
    ch->failed++;
  if(--ch->left > 0 && cube_get(ch->c, "s1", on_chain, ch))
    ch->failed++;
}

TEST(connection_reused)
{
  fixture f;
  chain ch = {0};
  CHECK_OK(fx_init(&f, h_ok, NULL));
  ch.c = f.c;
  ch.left = 20;
  CHECK_OK(cube_get(f.c, "s1", on_chain, &ch)); /* each starts the next */
  CHECK(wait_for(f.base, &ch.done, 20, 10000));
  CHECK_INT(ch.failed, 0);
  CHECK_INT(f.s.requests, 20);
  CHECK_INT(f.s.conns, 1);
  fx_free(&f);
}

typedef struct counter {
  int done, failed;
} counter;

static void on_count(const cube_result *r, void *ud)
{
  counter *n = ud;
  n->done++;
  if(r->err) {
    n->failed++;
    fprintf(stderr, "  unexpected: %s\n", r->message);
  }
}

TEST(max_inflight_respected)
{
  fixture f;
  counter n = {0};
  cube_client_opts o;
  int i;
  cube_client_opts_init(&o);
  o.max_inflight = 3;
  CHECK_OK(fx_init(&f, h_ok, &o));
  f.s.delay_ms = 40;
  for(i = 0; i < 10; i++)
    CHECK_OK(cube_get(f.c, "s1", on_count, &n));
  CHECK_INT(cube_client_pending(f.c), 10);
  CHECK(wait_for(f.base, &n.done, 10, 5000));
  CHECK_INT(n.failed, 0);
  CHECK_INT(f.s.requests, 10);
  CHECK_INT(f.s.max_cur, 3);
  CHECK(f.s.conns <= 3);
  CHECK_INT(cube_client_pending(f.c), 0);
  fx_free(&f);
}


/* A reservation holds an in-flight slot from its turn until its create is
 * sent or cancelled: with max_inflight 3, 10 reservations get 3 turns, a
 * cancel or a sent create lets one more in (100,000 creates at once would
 * otherwise all be claimed and queued at once: the memory of 100,000
 * requests, and claims older than their TTL by the time they go out). */
typedef struct turns {
  int done, failed;
} turns;

static void on_turn_count(const cube_result *r, void *ud)
{
  turns *t = ud;
  t->done++;
  if(r->err)
    t->failed++;
}

TEST(reserve_holds_an_inflight_slot)
{
  fixture f;
  turns t = {0, 0};
  counter made = {0};
  cube_client_opts o;
  cube_create_req req;
  int i;
  cube_client_opts_init(&o);
  o.max_inflight = 3;
  CHECK_OK(fx_init(&f, h_ops, &o));
  for(i = 0; i < 10; i++)
    CHECK_OK(cube_reserve(f.c, on_turn_count, &t));
  CHECK(wait_for(f.base, &t.done, 3, 2000));
  CHECK(!wait_for(f.base, &t.done, 4, 200)); /* no fourth turn */
  CHECK_INT(t.done, 3);
  cube_reserve_cancel(f.c); /* one given back: one more turn */
  CHECK(wait_for(f.base, &t.done, 4, 2000));
  CHECK(!wait_for(f.base, &t.done, 5, 200));
  memset(&req, 0, sizeof(req));
  req.template_id = "t";
  req.timeout_s = 60;
  CHECK_OK(cube_create_reserved(f.c, &req, on_count, &made));
  CHECK(wait_for(f.base, &made.done, 1, 2000)); /* sent at once */
  CHECK_INT(made.failed, 0);
  CHECK(wait_for(f.base, &t.done, 5, 2000)); /* and its slot is free */
  CHECK_INT(t.failed, 0);
  for(i = 0; i < 3; i++) /* the 3 turns held: cancelled */
    cube_reserve_cancel(f.c);
  CHECK(wait_for(f.base, &t.done, 8, 2000));
  for(i = 0; i < 3; i++)
    cube_reserve_cancel(f.c);
  CHECK(wait_for(f.base, &t.done, 10, 2000));
  for(i = 0; i < 3; i++)
    cube_reserve_cancel(f.c);
  CHECK_INT(t.failed, 0);
  fx_free(&f);
}
TEST(qps_bucket_spaces_requests)
{
  fixture f;
  counter n = {0};
  cube_client_opts o;
  int i;
  int64_t t0, dt;
  cube_client_opts_init(&o);
  o.qps = 10; /* burst 10, then one each 100 ms */
  CHECK_OK(fx_init(&f, h_ok, &o));
  t0 = sctime_mono_ms();
  for(i = 0; i < 8; i++)
    CHECK_OK(cube_get(f.c, "s1", on_count, &n));
  CHECK(wait_for(f.base, &n.done, 8, 5000));
  dt = sctime_mono_ms() - t0;
  CHECK_MSG(dt < 300, "burst took %lld ms", (long long)dt);
  t0 = sctime_mono_ms();
  for(i = 0; i < 8; i++)
    CHECK_OK(cube_get(f.c, "s1", on_count, &n));
  CHECK(wait_for(f.base, &n.done, 16, 5000));
  dt = sctime_mono_ms() - t0;
  /* ~2 tokens left: the other 6 wait 100 ms each */
  CHECK_MSG(dt >= 450 && dt < 2000, "8 more took %lld ms", (long long)dt);
  CHECK_INT(n.failed, 0);
  fx_free(&f);
}

TEST(free_aborts_each_call_once)
{
  fixture f;
  got g[3];
  int i;
  memset(g, 0, sizeof(g));
  CHECK_OK(fx_init(&f, h_stall, NULL));
  CHECK_OK(cube_list(f.c, NULL, "running", on_result, &g[0]));
  CHECK_OK(cube_pause(f.c, "s1", on_result, &g[1]));
  CHECK(!wait_for(f.base, &g[0].n, 1, 200)); /* in flight, stalled */
  CHECK_OK(cube_delete(f.c, "s1", on_result, &g[2])); /* queued at most */
  cube_client_free(f.c);
  f.c = NULL;
  for(i = 0; i < 3; i++) {
    CHECK_INT(g[i].n, 1);
    CHECK_INT(g[i].err, SC_ERR_UNAVAILABLE);
    CHECK(strstr(g[i].msg, ": aborted"));
    got_clear(&g[i]);
  }
  fx_free(&f);
}

TEST(api_key_never_in_messages)
{
  fixture f;
  got g = {0};
  static const char *const ids[] = {"echo", "busy", "gone", "bad id", "x"};
  size_t i;
  CHECK_OK(fx_init(&f, h_ops, NULL));
  for(i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
    int before = g.n;
    if(i == 1)
      CHECK_OK(cube_pause(f.c, ids[i], on_result, &g));
    else
      CHECK_OK(cube_get(f.c, ids[i], on_result, &g));
    CHECK(wait_for(f.base, &g.n, before + 1, 5000));
    CHECK(g.err != SC_OK);
    CHECK_MSG(!strstr(g.msg, KEY), "key leaked: %s", g.msg);
    CHECK_MSG(!strstr(g.msg, "sekrit"), "key leaked: %s", g.msg);
    CHECK_STR(f.s.apikey, i == 3 ? f.s.apikey : KEY);
  }
  CHECK_OK(cube_get(f.c, "echo", on_result, &g));
  CHECK(wait_for(f.base, &g.n, 6, 5000));
  CHECK_INT(g.err, SC_ERR_INVALID);
  CHECK(strstr(g.msg, "bad key ***"));
  CHECK_STR(f.s.auth, "Bearer " KEY);
  got_clear(&g);
  fx_free(&f);
}

/* --- the API key changes while the client runs --- */

#define KEY_A "rot-key-A-5f2e"
#define KEY_B "rot-key-B-91ac"
#define KEY_C "rot-key-C-07d3"
#define KEY_D "rot-key-D-c4b8"

/* /sandboxes/echo: a 400 quoting the key it got; else 401 unless the key
 * is want_key, then the sandbox */
static void h_key(srv *s, struct evhttp_request *req, const char *path,
                  const char *query)
{
  char body[512];
  (void)query;
  s->n++;
  if(!strcmp(path, "/sandboxes/echo")) {
    snprintf(body, sizeof(body), "{\"code\":400,\"message\":\"bad key %s\"}",
             s->apikey);
    reply(req, 400, NULL, body);
  }
  else if(s->want_key[0] && strcmp(s->apikey, s->want_key))
    reply(req, 401, NULL, "{\"code\":401,\"message\":\"invalid API key\"}");
  else
    reply(req, 200, NULL, ROW("s1", "running", ""));
}

typedef struct keyev {
  int ok, bad;
  char last[SC_ERRBUF_SIZE];
} keyev;

static void on_key_ev(void *ud, bool ok, const char *message)
{
  keyev *e = ud;
  if(ok)
    e->ok++;
  else
    e->bad++;
  snprintf(e->last, sizeof(e->last), "%s", message);
}

/* write the file: in place (same inode) or by a rename over it */
static int put_file(const char *path, const char *text, size_t len,
                    bool rename_over)
{
  char tmp[600];
  FILE *f;
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  f = fopen(rename_over ? tmp : path, "wb");
  if(!f)
    return -1;
  if(len && fwrite(text, 1, len, f) != len) {
    fclose(f);
    return -1;
  }
  if(fclose(f))
    return -1;
  return rename_over ? rename(tmp, path) : 0;
}

/* one GET /sandboxes/s1 (or id): the status it got and the key sent */
static long key_get(fixture *f, got *g, const char *id)
{
  int before = g->n;
  if(cube_get(f->c, id, on_result, g) ||
     !wait_for(f->base, &g->n, before + 1, 5000))
    return -1;
  return g->status;
}

/* run the loop for ms */
static void idle_ms(struct event_base *base, int ms)
{
  int never = 0;
  wait_for(base, &never, 1, ms);
}

#define PAST_CHECK_MS (CUBE_KEY_CHECK_MS + 150)

TEST(key_file_read_again_when_it_changes)
{
  fixture f;
  got g = {0};
  keyev ev = {0};
  cube_client_opts o;
  sc_errbuf eb;
  char dir[] = "/tmp/test_cube_key.XXXXXX", path[300];
  char big[CUBE_API_KEY_MAX + 2];
  int64_t t0;
  memset(&f, 0, sizeof(f));
  CHECK(mkdtemp(dir) != NULL);
  snprintf(path, sizeof(path), "%s/key", dir);
  CHECK_OK(put_file(path, KEY_A "\n", strlen(KEY_A) + 1, false));
  f.base = event_base_new();
  CHECK_OK(srv_start(&f.s, f.base, h_key));
  snprintf(f.url, sizeof(f.url), "http://127.0.0.1:%d", f.s.port);
  cube_client_opts_init(&o);
  o.base_url = f.url;
  o.api_key = "not-this-one"; /* the file's key wins */
  o.api_key_file = path;
  o.on_key_reload = on_key_ev;
  o.on_key_reload_ud = &ev;
  t0 = sctime_mono_ms();
  f.c = cube_client_new(f.base, &o, &eb);
  CHECK_MSG(f.c != NULL, "%s", eb.msg);

  /* the file's key, trailing newline stripped */
  snprintf(f.s.want_key, sizeof(f.s.want_key), "%s", KEY_A);
  CHECK_INT(key_get(&f, &g, "s1"), 200);
  CHECK_STR(f.s.apikey, KEY_A);
  CHECK_STR(f.s.auth, "Bearer " KEY_A);

  /* a new key by a rename over the file (a new inode, as a mounted
   * Secret changes): not looked at before a second has passed ... */
  CHECK_OK(put_file(path, KEY_B, strlen(KEY_B), true));
  snprintf(f.s.want_key, sizeof(f.s.want_key), "%s", KEY_B);
  CHECK(key_get(&f, &g, "s1") > 0);
  if(sctime_mono_ms() - t0 < CUBE_KEY_CHECK_MS - 300)
    CHECK_STR(f.s.apikey, KEY_A); /* (only when the machine was quick) */
  CHECK_INT(ev.ok + ev.bad, f.s.apikey[8] == 'B' ? 1 : 0);
  /* ... then taken for the next request */
  idle_ms(f.base, PAST_CHECK_MS);
  CHECK_INT(key_get(&f, &g, "s1"), 200);
  CHECK_STR(f.s.apikey, KEY_B);
  CHECK_STR(f.s.auth, "Bearer " KEY_B);
  CHECK_INT(ev.ok, 1);
  CHECK_INT(ev.bad, 0);
  CHECK_MSG(strstr(ev.last, "Cube API key reloaded from ") &&
            strstr(ev.last, path), "%s", ev.last);
  CHECK(!strstr(ev.last, "rot-key"));

  /* Cube takes only C now and the file says C (written in place): the
   * 401 to B has the file read at once, well within the second */
  t0 = sctime_mono_ms();
  snprintf(f.s.want_key, sizeof(f.s.want_key), "%s", KEY_C);
  CHECK_OK(put_file(path, KEY_C, strlen(KEY_C), false));
  {
    long st = key_get(&f, &g, "s1");
    if(sctime_mono_ms() - t0 < CUBE_KEY_CHECK_MS - 300)
      CHECK_INT(st, 401);
  }
  CHECK(!strstr(g.msg, "rot-key"));
  CHECK_INT(key_get(&f, &g, "s1"), 200);
  CHECK_STR(f.s.apikey, KEY_C);
  CHECK_INT(ev.ok, 2);

  /* the same key written again: nothing to say */
  CHECK_OK(put_file(path, KEY_C "\r\n", strlen(KEY_C) + 2, true));
  idle_ms(f.base, PAST_CHECK_MS);
  CHECK_INT(key_get(&f, &g, "s1"), 200);
  CHECK_INT(ev.ok, 2);
  CHECK_INT(ev.bad, 0);

  /* an empty file: the key in use stays, said once */
  CHECK_OK(put_file(path, "", 0, false));
  idle_ms(f.base, PAST_CHECK_MS);
  CHECK_INT(key_get(&f, &g, "s1"), 200);
  CHECK_STR(f.s.apikey, KEY_C);
  CHECK_INT(ev.bad, 1);
  CHECK_MSG(strstr(ev.last, "is empty") && strstr(ev.last, path) &&
            strstr(ev.last, "the key in use stays"), "%s", ev.last);
  idle_ms(f.base, PAST_CHECK_MS);
  CHECK_INT(key_get(&f, &g, "s1"), 200);
  CHECK_INT(ev.bad, 1); /* not again while the file stays as it is */
  /* nor when a 401 has the same file read again */
  snprintf(f.s.want_key, sizeof(f.s.want_key), "%s", KEY_D);
  CHECK_INT(key_get(&f, &g, "s1"), 401);
  CHECK_INT(key_get(&f, &g, "s1"), 401);
  CHECK_STR(f.s.apikey, KEY_C);
  CHECK_INT(ev.bad, 1);

  /* a line break inside, a file too long, no file: each said once */
  CHECK_OK(put_file(path, "rot-key\x01X", 9, true));
  idle_ms(f.base, PAST_CHECK_MS);
  CHECK_INT(key_get(&f, &g, "s1"), 401);
  CHECK_INT(ev.bad, 2);
  CHECK_MSG(strstr(ev.last, "control character"), "%s", ev.last);
  CHECK(!strstr(ev.last, "rot-key"));
  memset(big, 'k', sizeof(big));
  CHECK_OK(put_file(path, big, CUBE_API_KEY_MAX + 1, true));
  idle_ms(f.base, PAST_CHECK_MS);
  CHECK_INT(key_get(&f, &g, "s1"), 401);
  CHECK_INT(ev.bad, 3);
  CHECK_MSG(strstr(ev.last, "over 8192 bytes"), "%s", ev.last);
  CHECK_OK(unlink(path));
  idle_ms(f.base, PAST_CHECK_MS);
  CHECK_INT(key_get(&f, &g, "s1"), 401);
  CHECK_INT(ev.bad, 4);
  CHECK_MSG(strstr(ev.last, "No such file"), "%s", ev.last);
  idle_ms(f.base, PAST_CHECK_MS);
  CHECK_INT(key_get(&f, &g, "s1"), 401);
  CHECK_INT(ev.bad, 4);
  CHECK_STR(f.s.apikey, KEY_C); /* through all of it */

  /* the key Cube wants comes back: taken, said once */
  CHECK_OK(put_file(path, KEY_D "\n", strlen(KEY_D) + 1, false));
  idle_ms(f.base, PAST_CHECK_MS);
  CHECK_INT(key_get(&f, &g, "s1"), 200);
  CHECK_STR(f.s.apikey, KEY_D);
  CHECK_INT(ev.ok, 3);
  CHECK_INT(ev.bad, 4);
  CHECK(cube_client_auth_failures(f.c, NULL) == 0);

  got_clear(&g);
  fx_free(&f);
  unlink(path);
  rmdir(dir);
}

/* A request in flight keeps the key it was sent with (its headers, and
 * the scrubbing of its message); the next one takes the new key. */
TEST(key_change_spares_requests_in_flight)
{
  fixture f;
  got g = {0}, g2 = {0};
  sc_errbuf eb;
  char longkey[CUBE_API_KEY_MAX + 2];
  CHECK_OK(fx_init(&f, h_key, NULL));
  f.s.delay_ms = 300;
  CHECK_OK(cube_get(f.c, "echo", on_result, &g));
  idle_ms(f.base, 100); /* on the wire, the answer delayed */
  CHECK_INT(g.n, 0);
  CHECK_OK(cube_client_set_api_key(f.c, KEY_B, &eb));
  CHECK(wait_for(f.base, &g.n, 1, 5000));
  CHECK_INT(g.status, 400);
  CHECK_STR(f.s.apikey, KEY); /* sent with the old key */
  CHECK_MSG(strstr(g.msg, "bad key ***") && !strstr(g.msg, "sekrit"), "%s",
            g.msg);
  f.s.delay_ms = 0;
  CHECK_OK(cube_get(f.c, "echo", on_result, &g2));
  CHECK(wait_for(f.base, &g2.n, 1, 5000));
  CHECK_STR(f.s.apikey, KEY_B);
  CHECK_STR(f.s.auth, "Bearer " KEY_B);
  CHECK_MSG(strstr(g2.msg, "bad key ***") && !strstr(g2.msg, "rot-key"),
            "%s", g2.msg);

  /* a bad key is refused and the one in use stays; the message never
   * holds the key */
  CHECK(cube_client_set_api_key(f.c, "rot-key\nX", &eb) == SC_ERR_INVALID);
  CHECK(strstr(eb.msg, "control character") && !strstr(eb.msg, "rot-key"));
  memset(longkey, 'k', sizeof(longkey) - 1);
  longkey[sizeof(longkey) - 1] = '\0';
  CHECK(cube_client_set_api_key(f.c, longkey, &eb) == SC_ERR_INVALID);
  CHECK(strstr(eb.msg, "longer than 8192 bytes"));
  CHECK_INT(key_get(&f, &g2, "s1"), 200);
  CHECK_STR(f.s.apikey, KEY_B);
  /* no key at all: no auth headers */
  CHECK_OK(cube_client_set_api_key(f.c, NULL, &eb));
  CHECK_INT(key_get(&f, &g2, "s1"), 200);
  CHECK_STR(f.s.apikey, "");
  CHECK_STR(f.s.auth, "");
  CHECK(cube_client_set_api_key(NULL, KEY_B, &eb) != SC_OK);
  got_clear(&g);
  got_clear(&g2);
  fx_free(&f);
}

/* A key file that cannot be used at start: no client, a message naming
 * the file and not the key. */
TEST(key_file_checked_at_start)
{
  struct event_base *base = event_base_new();
  cube_client_opts o;
  sc_errbuf eb;
  char dir[] = "/tmp/test_cube_key.XXXXXX", path[300];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(path, sizeof(path), "%s/key", dir);
  cube_client_opts_init(&o);
  o.base_url = "http://127.0.0.1:1/";
  o.api_key_file = path;
  CHECK(cube_client_new(base, &o, &eb) == NULL);
  CHECK_MSG(strstr(eb.msg, path) && strstr(eb.msg, "No such file"), "%s",
            eb.msg);
  CHECK_OK(put_file(path, " \n", 2, false));
  CHECK(cube_client_new(base, &o, &eb) == NULL);
  CHECK_MSG(strstr(eb.msg, "is empty"), "%s", eb.msg);
  CHECK_OK(put_file(path, "rot-key\0B", 9, false));
  CHECK(cube_client_new(base, &o, &eb) == NULL);
  CHECK_MSG(strstr(eb.msg, "NUL byte") && !strstr(eb.msg, "rot-key"), "%s",
            eb.msg);
  CHECK_OK(put_file(path, "rot-key\0\n", 9, false)); /* not white space */
  CHECK(cube_client_new(base, &o, &eb) == NULL);
  CHECK_MSG(strstr(eb.msg, "NUL byte"), "%s", eb.msg);
  unlink(path);
  rmdir(dir);
  event_base_free(base);
}

TEST(connection_refused)
{
  struct event_base *base = event_base_new();
  cube_client_opts o;
  cube_client *c;
  sc_errbuf eb;
  got g = {0};
  char url[64];
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa;
  socklen_t sl = sizeof(sa);
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK(fd >= 0);
  CHECK_OK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)));
  CHECK_OK(getsockname(fd, (struct sockaddr *)&sa, &sl));
  close(fd); /* nobody listens there now */
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/", ntohs(sa.sin_port));
  cube_client_opts_init(&o);
  o.base_url = url;
  c = cube_client_new(base, &o, &eb);
  CHECK(c != NULL);
  CHECK_OK(cube_get(c, "s1", on_result, &g));
  CHECK(wait_for(base, &g.n, 1, 5000));
  CHECK_INT(g.err, SC_ERR_UNAVAILABLE);
  CHECK_INT(g.status, 0);
  CHECK(strstr(g.msg, "GET /sandboxes/s1: curl error 7"));
  CHECK(!g.maybe_done); /* nothing was sent: no effect possible */
  got_clear(&g);
  cube_client_free(c);
  event_base_free(base);
}

TEST(client_options_checked)
{
  struct event_base *base = event_base_new();
  cube_client_opts o;
  sc_errbuf eb;
  cube_client *c;
  static const struct {
    const char *url;
    const char *err;
  } bad[] = {
    {"ftp://h/", "scheme ftp is not http or https"},
    {"http://u:p@h/", "must not carry credentials"},
    {"http://h/?a=b", "must not carry credentials, a query"},
    {"::::", "is not a URL"},
  };
  size_t i;
  for(i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    cube_client_opts_init(&o);
    o.base_url = bad[i].url;
    CHECK(cube_client_new(base, &o, &eb) == NULL);
    CHECK_MSG(strstr(eb.msg, bad[i].err), "%s: %s", bad[i].url, eb.msg);
  }
  {
    /* a rate so small its wait overflowed a cast to long (UB) */
    static const double qps[] = {1e-300, 0.0009, -1, 2e6};
    for(i = 0; i < sizeof(qps) / sizeof(qps[0]); i++) {
      cube_client_opts_init(&o);
      o.base_url = "http://127.0.0.1:1/";
      o.qps = qps[i];
      CHECK(cube_client_new(base, &o, &eb) == NULL);
      CHECK_MSG(strstr(eb.msg, "qps"), "%g: %s", qps[i], eb.msg);
    }
  }
  cube_client_opts_init(&o);
  o.api_key = "key\n";
  CHECK(cube_client_new(base, &o, &eb) == NULL);
  CHECK(strstr(eb.msg, "control character"));
  CHECK(!strstr(eb.msg, "key\n"));
  cube_client_opts_init(&o);
  o.base_url = "https://cube.example:8443/api/";
  o.ca_file = "/nonexistent/ca.pem";
  c = cube_client_new(base, &o, &eb);
  CHECK(c != NULL);
  CHECK_STR(cube_client_peer(c), "cube.example:8443");
  cube_client_free(c);
  cube_client_free(NULL);
  CHECK(cube_client_new(NULL, &o, &eb) == NULL);
  event_base_free(base);
}

/* --- the probe --- */

static void h_probe(srv *s, struct evhttp_request *req, const char *path,
                    const char *query)
{
  (void)query;
  if(!strcmp(path, "/health")) {
    reply(req, 200, NULL, "{\"status\":\"ok\"}");
    return;
  }
  switch(s->n) {
  case 0:
    reply(req, 200, NULL, "[" ROW(HEX1, "running", "") "]");
    break;
  case 1:
    reply(req, 200, NULL, "[" ROW("ia1b2c3d4e5f6g7h8i9j0", "running", "") "]");
    break;
  case 2:
    reply(req, 200, NULL, "[]");
    break;
  case 3:
    evhttp_add_header(evhttp_request_get_output_headers(req), "X-Next-Token",
                      "x");
    reply(req, 200, NULL, "[]");
    break;
  case 4:
    evhttp_add_header(evhttp_request_get_output_headers(req), "X-Next-Token",
                      "x");
    reply(req, 200, NULL, "[" ROW(HEX1, "running", "") "]");
    break;
  default:
    reply(req, 401, NULL, "{\"code\":401,\"message\":\"no key\"}");
  }
}

TEST(probe_heuristic)
{
  fixture f;
  got g = {0};
  static const struct {
    cube_dialect d;
    const char *detail;
  } want[] = {
    {CUBE_DIALECT_CUBE, "1 sandbox IDs of 32 lowercase hex"},
    {CUBE_DIALECT_E2B, "1 sandbox IDs of i+20"},
    {CUBE_DIALECT_UNKNOWN, "no sandboxes to look at"},
    {CUBE_DIALECT_E2B, "X-Next-Token sent"},
    {CUBE_DIALECT_UNKNOWN, "mixed signs"},
  };
  int i;
  CHECK_OK(fx_init(&f, h_probe, NULL));
  for(i = 0; i < 5; i++) {
    f.s.n = i;
    CHECK_OK(cube_probe(f.c, on_result, &g));
    CHECK(wait_for(f.base, &g.n, i + 1, 5000));
    CHECK_MSG(g.err == SC_OK, "%d: %s", i, g.msg);
    CHECK_MSG(g.dialect == want[i].d, "%d: %s (%s)", i,
              cube_dialect_name(g.dialect), g.detail);
    CHECK_MSG(strstr(g.detail, want[i].detail), "%d: %s", i, g.detail);
    CHECK_STR(f.s.uri, "/v2/sandboxes?limit=5");
    /* the client reads list pages by what the probe found; a probe that
     * cannot tell keeps the dialect before (at 2 and 4: the e2b of 1, 3) */
    CHECK_INT(cube_client_dialect(f.c), want[i].d != CUBE_DIALECT_UNKNOWN
                                          ? want[i].d : CUBE_DIALECT_E2B);
  }
  f.s.n = 9;
  CHECK_OK(cube_probe(f.c, on_result, &g));
  CHECK(wait_for(f.base, &g.n, 6, 5000));
  CHECK_INT(g.err, SC_ERR_INVALID);
  CHECK(strstr(g.msg, "GET /v2/sandboxes: HTTP 401"));
  got_clear(&g);
  fx_free(&f);
}

/* --- TLS: a one-thread blocking OpenSSL server with a fresh self-signed
 * certificate for 127.0.0.1 --- */

typedef struct tls_srv {
  int lfd, port, served, handshakes_failed;
  SSL_CTX *ctx;
  pthread_t th;
  char ca_path[64];
} tls_srv;

static void *tls_serve(void *arg)
{
  tls_srv *t = arg;
  for(;;) {
    char req[4096];
    size_t got_n = 0;
    SSL *ssl;
    int fd = accept(t->lfd, NULL, NULL);
    if(fd < 0)
      break;
    ssl = SSL_new(t->ctx);
    SSL_set_fd(ssl, fd);
    if(SSL_accept(ssl) != 1)
      t->handshakes_failed++;
    else {
      while(got_n < sizeof(req) - 1) {
        int r = SSL_read(ssl, req + got_n, (int)(sizeof(req) - 1 - got_n));
        if(r <= 0)
          break;
        got_n += (size_t)r;
        req[got_n] = 0;
        if(strstr(req, "\r\n\r\n"))
          break;
      }
      {
        const char *body = ROW("s1", "running", "");
        char resp[1024];
        int n = snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\n"
                         "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                         strlen(body), body);
        SSL_write(ssl, resp, n);
        t->served++;
      }
      SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    close(fd);
  }
  return NULL;
}

static int tls_start(tls_srv *t)
{
  EVP_PKEY *key = EVP_EC_gen("P-256");
  X509 *x = X509_new();
  X509_NAME *nm;
  X509_EXTENSION *ext;
  X509V3_CTX v3;
  struct sockaddr_in sa;
  socklen_t sl = sizeof(sa);
  FILE *fp;
  int fd;
  memset(t, 0, sizeof(*t));
  if(!key || !x)
    return -1;
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_set_version(x, 2);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, key);
  nm = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_ASC,
                             (const unsigned char *)"127.0.0.1", -1, -1, 0);
  X509_set_issuer_name(x, nm);
  X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
  ext = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, "IP:127.0.0.1");
  X509_add_ext(x, ext, -1);
  X509_EXTENSION_free(ext);
  ext = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints, "CA:TRUE");
  X509_add_ext(x, ext, -1);
  X509_EXTENSION_free(ext);
  if(!X509_sign(x, key, EVP_sha256()))
    return -1;
  snprintf(t->ca_path, sizeof(t->ca_path), "/tmp/test_cube_ca.XXXXXX");
  fd = mkstemp(t->ca_path);
  if(fd < 0 || !(fp = fdopen(fd, "w")))
    return -1;
  PEM_write_X509(fp, x);
  fclose(fp);
  t->ctx = SSL_CTX_new(TLS_server_method());
  if(!t->ctx || SSL_CTX_use_certificate(t->ctx, x) != 1 ||
     SSL_CTX_use_PrivateKey(t->ctx, key) != 1)
    return -1;
  X509_free(x);
  EVP_PKEY_free(key);
  t->lfd = socket(AF_INET, SOCK_STREAM, 0);
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if(bind(t->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
     listen(t->lfd, 8) ||
     getsockname(t->lfd, (struct sockaddr *)&sa, &sl))
    return -1;
  t->port = ntohs(sa.sin_port);
  return pthread_create(&t->th, NULL, tls_serve, t) ? -1 : 0;
}

static void tls_stop(tls_srv *t)
{
  shutdown(t->lfd, SHUT_RDWR); /* wakes accept() */
  pthread_join(t->th, NULL);
  close(t->lfd);
  SSL_CTX_free(t->ctx);
  unlink(t->ca_path);
}

TEST(tls_verified_by_default)
{
  tls_srv t;
  struct event_base *base = event_base_new();
  cube_client_opts o;
  cube_client *c;
  sc_errbuf eb;
  got g = {0};
  char url[64];
  int i;
  CHECK_OK(tls_start(&t));
  snprintf(url, sizeof(url), "https://127.0.0.1:%d", t.port);
  for(i = 0; i < 3; i++) {
    cube_client_opts_init(&o);
    o.base_url = url;
    o.api_key = KEY;
    if(i == 1)
      o.ca_file = t.ca_path;
    if(i == 2)
      o.insecure_skip_verify = true;
    c = cube_client_new(base, &o, &eb);
    CHECK(c != NULL);
    CHECK_OK(cube_get(c, "s1", on_result, &g));
    CHECK(wait_for(base, &g.n, i + 1, 5000));
    if(i == 0) { /* a self-signed server without --cube-ca: refused */
      CHECK_INT(g.err, SC_ERR_UNAVAILABLE);
      CHECK_MSG(strstr(g.msg, "curl error 60"), "%s", g.msg);
    }
    else {
      CHECK_MSG(g.err == SC_OK, "case %d: %s", i, g.msg);
      CHECK_STR(g.sb.sandbox_id, "s1");
    }
    cube_client_free(c);
  }
  tls_stop(&t);
  CHECK_INT(t.served, 2);
  CHECK_INT(t.handshakes_failed, 1);
  got_clear(&g);
  event_base_free(base);
}

TEST_LIST = {
  T(meta_encode_table),
  T(meta_round_trip_tricky),
  T(meta_encode_empty_and_bad),
  T(meta_decode_table),
  T(parse_list_table),
  T(parse_list_fast_agrees_with_json_c),
  T(parse_list_fast_reads_e2b_rows_and_metadata),
  T(parse_list_fields),
  T(parse_depth_limited),
  T(parse_sandbox_and_created),
  T(parse_error_body),
  T(id_shapes),
  T(domain_shapes),
  T(parse_domain_hostile_values_dropped),
  T(sandbox_copy_carries_domain),
  T(list_follows_pages),
  T(list_truncated_suspect),
  T(list_exact_limit_multiple_is_whole_in_e2b),
  T(list_paging_loop_detected),
  T(list_bad_row_fails_whole_list),
  T(list_asks_next_page_before_reading_this_one),
  T(list_page_retries_table),
  T(list_retry_budget_is_per_page),
  T(list_retry_aborted_by_free),
  T(delete_now_jumps_queue_and_bucket),
  T(get_and_not_found),
  T(create_sends_both_dialects),
  T(create_sends_network_and_volume_mounts),
  T(create_and_get_read_domain_never_tokens),
  T(pause_connect_timeout_delete),
  T(bad_arguments_end_through_the_callback),
  T(retry_after_parsed),
  T(body_over_cap),
  T(stalled_body_times_out),
  T(connection_reused),
  T(max_inflight_respected),
  T(reserve_holds_an_inflight_slot),
  T(qps_bucket_spaces_requests),
  T(free_aborts_each_call_once),
  T(api_key_never_in_messages),
  T(key_file_read_again_when_it_changes),
  T(key_change_spares_requests_in_flight),
  T(key_file_checked_at_start),
  T(connection_refused),
  T(client_options_checked),
  T(probe_heuristic),
  T(tls_verified_by_default),
  {0}};

TEST_MAIN()
