/* Tests of lib/: dynbuf caps, RFC 3339 and HTTP dates, kubectl ages. */
#include "test/harness.h"
#include "lib/scarray.h"
#include "controller/ops/log.h"
#include "lib/redact.h"
#include "lib/sctext.h"
#include "lib/dynbuf.h"
#include "lib/sctime.h"

TEST(dynbuf_grows_and_caps)
{
  dynbuf b;
  char *p;
  dynbuf_init(&b, 10);
  CHECK_OK(dynbuf_addstr(&b, "hello"));
  CHECK_OK(dynbuf_printf(&b, "%d", 1234));
  CHECK_STR(dynbuf_ptr(&b), "hello1234");
  CHECK_INT(dynbuf_addstr(&b, "xx"), SC_ERR_TOO_LARGE);
  CHECK_STR(dynbuf_ptr(&b), "hello1234");
  CHECK_OK(dynbuf_addstr(&b, "x"));
  CHECK_INT(dynbuf_len(&b), 10);
  p = dynbuf_take(&b);
  CHECK_STR(p, "hello1234x");
  free(p);
  CHECK_INT(dynbuf_len(&b), 0);
  dynbuf_free(&b);
}

TEST(dynbuf_printf_long)
{
  dynbuf b;
  char big[600];
  memset(big, 'a', sizeof(big) - 1);
  big[sizeof(big) - 1] = 0;
  dynbuf_init(&b, 1000);
  CHECK_OK(dynbuf_printf(&b, "<%s>", big));
  CHECK_INT(dynbuf_len(&b), 601);
  CHECK_INT(dynbuf_printf(&b, "%s", big), SC_ERR_TOO_LARGE);
  dynbuf_free(&b);
}

static const struct {
  const char *in;
  long long ms; /* -1: invalid */
  const char *out;
} rfc3339_cases[] = {
  {"1970-01-01T00:00:00Z", 0, "1970-01-01T00:00:00Z"},
  {"2026-11-29T10:15:00Z", 1795947300000LL, "2026-11-29T10:15:00Z"},
  {"2026-11-29T10:15:00.5Z", 1795947300500LL, "2026-11-29T10:15:00.500Z"},
  {"2026-11-29T10:15:00.123456789Z", 1795947300123LL,
   "2026-11-29T10:15:00.123Z"},
  {"2026-11-29T12:15:00+02:00", 1795947300000LL, "2026-11-29T10:15:00Z"},
  {"2024-02-29T00:00:00Z", 1709164800000LL, "2024-02-29T00:00:00Z"},
  {"9999-12-31T23:59:59Z", 253402300799000LL, "9999-12-31T23:59:59Z"},
  {"2023-02-29T00:00:00Z", -1, NULL},
  {"2026-13-01T00:00:00Z", -1, NULL},
  {"2026-11-29 10:15:00", -1, NULL},
  {"2026-11-29T10:15:00Zjunk", -1, NULL},
  {"", -1, NULL},
  {"2026-11-29T10:15:00.Z", -1, NULL},
};

TEST(rfc3339_table)
{
  size_t i;
  for(i = 0; i < sizeof(rfc3339_cases) / sizeof(rfc3339_cases[0]); i++) {
    sc_time t = 0;
    sc_err err = sctime_parse_rfc3339(rfc3339_cases[i].in, &t);
    if(rfc3339_cases[i].ms < 0) {
      CHECK_MSG(err == SC_ERR_INVALID, "%s should be invalid",
                rfc3339_cases[i].in);
    }
    else {
      char buf[SCTIME_RFC3339_MAX];
      CHECK_MSG(!err, "%s should parse", rfc3339_cases[i].in);
      CHECK_INT(t, rfc3339_cases[i].ms);
      sctime_format_rfc3339(t, buf, sizeof(buf));
      CHECK_STR(buf, rfc3339_cases[i].out);
    }
  }
}

TEST(http_date_round_trip)
{
  char buf[64];
  sc_time t;
  sctime_format_http_date(1795947300000LL, buf, sizeof(buf));
  CHECK_STR(buf, "Sun, 29 Nov 2026 10:15:00 GMT");
  CHECK_OK(sctime_parse_http_date(buf, &t));
  CHECK_INT(t, 1795947300000LL);
  CHECK_INT(sctime_parse_http_date("Sun, 29 Nov 2026 10:15:00", &t),
            SC_ERR_INVALID);
  CHECK_INT(sctime_parse_http_date("Sun, 29 Foo 2026 10:15:00 GMT", &t),
            SC_ERR_INVALID);
}

TEST(age_like_kubectl)
{
  static const struct {
    long long s;
    const char *out;
  } cases[] = {
    {0, "0s"},          {5, "5s"},         {119, "119s"},
    {120, "2m"},        {150, "2m30s"},    {600, "10m"},
    {3 * 3600 - 1, "179m"}, {3 * 3600, "3h"}, {3 * 3600 + 240, "3h4m"},
    {8 * 3600, "8h"},   {47 * 3600, "47h"}, {50 * 3600, "2d2h"},
    {8 * 86400, "8d"},  {800 * 86400, "2y70d"}, {3000 * 86400, "8y"},
  };
  size_t i;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char buf[32];
    sctime_format_age(cases[i].s * 1000, buf, sizeof(buf));
    CHECK_STR(buf, cases[i].out);
  }
}

/* the key out of a message; a key of '*' characters (which "***" holds)
 * used to make the scrub loop for ever */
TEST(redact_replaces_and_ends)
{
  static const struct {
    const char *in, *key, *out;
    size_t size;
  } cases[] = {
    {"key=sekrit and sekrit", "sekrit", "key=*** and ***", 64},
    {"a*b", "*", "a***b", 64},
    {"**", "**", "***", 64},
    {"x***y", "***", "x***y", 64},
    {"ab", "a", "***b", 64},
    {"aaaa", "a", "***", 6}, /* grows: cut, never a part of the key left */
    {"no secret", "", "no secret", 64},
    {"no secret", NULL, "no secret", 64},
  };
  size_t i;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char b[64];
    snprintf(b, sizeof(b), "%s", cases[i].in);
    sc_redact(b, cases[i].size, cases[i].key);
    CHECK_MSG(!strcmp(b, cases[i].out), "case %zu: got '%s' want '%s'", i,
              b, cases[i].out);
  }
}

/* untrusted text stays text: C0, DEL, C1, bidi controls and bad UTF-8
 * escaped; other UTF-8 kept */
TEST(text_escape_controls_c1_bidi)
{
  static const struct {
    const char *in, *out;
  } cases[] = {
    {"plain tag", "plain tag"},
    {"\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"},
    {"row\nfake row", "row\\x0afake row"},
    {"\xc2\x9b" "2J", "\\u009b2J"},                /* C1 CSI */
    {"abc\xe2\x80\xae" "cba", "abc\\u202ecba"},     /* RIGHT-TO-LEFT OVERRIDE */
    {"\xe2\x81\xa6x", "\\u2066x"},                 /* LRI */
    {"caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac"},
    {"bad \xff\xc3", "bad \\xff\\xc3"},
    {"\x7f", "\\x7f"},
  };
  size_t i;
  char b[128], s2[64];
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    sc_text_escape(b, sizeof(b), cases[i].in);
    CHECK_MSG(!strcmp(b, cases[i].out), "case %zu: got '%s'", i, b);
  }
  /* cut whole: never half an escape */
  sc_text_escape(b, 6, "ab\x1b" "cd");
  CHECK_STR(b, "ab");
  CHECK_STR(sc_text_escape(b, sizeof(b), NULL), "");
  snprintf(s2, sizeof(s2), "x\x1b[2Jy");
  sc_text_sanitize(s2, sizeof(s2));
  CHECK_STR(s2, "x\\x1b[2Jy");
}

/* an error message that quotes a peer is text (sc_errf) */
TEST(errf_escapes_peer_text)
{
  sc_errbuf eb;
  sc_errf(&eb, SC_ERR_PROTOCOL, "peer said: %s", "\x1b]2;title\x07 \xe2\x80\xae");
  CHECK_STR(eb.msg, "peer said: \\x1b]2;title\\x07 \\u202e");
}

TEST(grow_doubles_and_refuses_overflow)
{
  int *v = NULL, *nv;
  size_t cap = 0, i;
  for(i = 0; i < 100; i++) {
    nv = sc_grow(v, &cap, i + 1, sizeof(*v));
    CHECK(nv != NULL);
    v = nv;
    v[i] = (int)i;
  }
  CHECK_INT(cap, 128);
  CHECK_INT(v[99], 99);
  CHECK(sc_grow(v, &cap, 50, sizeof(*v)) == v); /* room already */
  CHECK(sc_grow(v, &cap, SIZE_MAX / 2, sizeof(*v)) == NULL);
  CHECK_INT(cap, 128);                           /* unchanged */
  free(v);
}

/* both log formats escape alike but for a bad byte: \xNN in logfmt,
 * U+FFFD in JSON (which holds no raw byte) */
static void log_line(log_format fmt, const char *v, char *out, size_t n)
{
  FILE *f = tmpfile();
  logger *lg = log_new(f, fmt, LOG_DEBUG);
  size_t got;
  log_kv(lg, LOG_INFO, "m", "k", v, NULL);
  log_free(lg);
  rewind(f);
  got = fread(out, 1, n - 1, f);
  out[got] = 0;
  fclose(f);
}

TEST(log_escapes_in_both_formats)
{
  char line[512];
  const char *v = "a\"b\\c\nd\x1b[31m\xc2\x9b\xe2\x80\xae" "e\xff" " f";
  log_line(LOG_FORMAT_LOGFMT, v, line, sizeof(line));
  CHECK_MSG(strstr(line, "k=\"a\\\"b\\\\c\\nd\\x1b[31m\\u009b\\u202ee\\xff f\"") != NULL,
            "logfmt: %s", line);
  log_line(LOG_FORMAT_JSON, v, line, sizeof(line));
  CHECK_MSG(strstr(line, "\"k\":\"a\\\"b\\\\c\\nd\\u001b[31m\\u009b\\u202ee\\ufffd f\"") != NULL,
            "json: %s", line);
  log_line(LOG_FORMAT_LOGFMT, "plain", line, sizeof(line));
  CHECK_MSG(strstr(line, " k=plain") != NULL, "logfmt plain: %s", line);
  log_line(LOG_FORMAT_LOGFMT, "", line, sizeof(line));
  CHECK_MSG(strstr(line, " k=\"\"") != NULL, "logfmt empty: %s", line);
}

TEST_LIST = {
  T(log_escapes_in_both_formats),
  T(grow_doubles_and_refuses_overflow),
  T(text_escape_controls_c1_bidi),
  T(errf_escapes_peer_text),
  T(redact_replaces_and_ends),
  T(dynbuf_grows_and_caps),
  T(dynbuf_printf_long),
  T(rfc3339_table),
  T(http_date_round_trip),
  T(age_like_kubectl),
  {0},
};
TEST_MAIN()
