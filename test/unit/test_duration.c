/* Tests of api/duration.c: Go-style parsing, rounding, shortest format. */
#include "test/harness.h"
#include "api/duration.h"

static const struct {
  const char *in;
  int err;       /* SC_OK, SC_ERR_INVALID or SC_ERR_TOO_LARGE */
  long long ms;
} parse_cases[] = {
  {"0", SC_OK, 0},
  {"0s", SC_OK, 0},
  {"0h0m", SC_OK, 0},
  {"90s", SC_OK, 90000},
  {"15m", SC_OK, 900000},
  {"1h30m", SC_OK, 5400000},
  {"1.5h", SC_OK, 5400000},
  {"1h0.5s", SC_OK, 3600500},
  {"500ms", SC_OK, 500},
  {"1.5s", SC_OK, 1500},
  {".5s", SC_OK, 500},
  {"5.s", SC_OK, 5000},
  {"24h", SC_OK, 86400000},
  {"87600h", SC_OK, 315360000000LL},
  {"1m1m", SC_OK, 120000},
  {"2h45m30.25s", SC_OK, 9930250},
  {"1000us", SC_OK, 1},
  {"1001us", SC_OK, 2},         /* sub-ms rest rounds up */
  {"1ns", SC_OK, 1},            /* never rounds down to 0 */
  {"\xc2\xb5s", SC_ERR_INVALID, 0},
  {"3\xc2\xb5s", SC_OK, 1},
  {"3\xce\xbcs", SC_OK, 1},
  {"1000000ns", SC_OK, 1},
  {"2562047h", SC_OK, 9223369200000LL},
  {"9223372036854000000ns", SC_OK, 9223372036854LL}, /* the largest */
  {"9223372036854000001ns", SC_ERR_TOO_LARGE, 0}, /* rounds up past it */
  {"9223372036854775807ns", SC_ERR_TOO_LARGE, 0}, /* (fuzz_store_decode) */
  {"9223372036854775808ns", SC_ERR_TOO_LARGE, 0},
  {"2562048h", SC_ERR_TOO_LARGE, 0},
  {"2562047h60m", SC_ERR_TOO_LARGE, 0},
  {"99999999999999999999s", SC_ERR_TOO_LARGE, 0},
  {"", SC_ERR_INVALID, 0},
  {"5", SC_ERR_INVALID, 0},
  {"00", SC_ERR_INVALID, 0},
  {"-5m", SC_ERR_INVALID, 0},
  {"+5m", SC_ERR_INVALID, 0},
  {"-0", SC_ERR_INVALID, 0},
  {"15 minutes", SC_ERR_INVALID, 0},
  {"15min", SC_ERR_INVALID, 0},
  {" 15m", SC_ERR_INVALID, 0},
  {"15m ", SC_ERR_INVALID, 0},
  {"1d", SC_ERR_INVALID, 0},
  {"1H", SC_ERR_INVALID, 0},
  {".s", SC_ERR_INVALID, 0},
  {".", SC_ERR_INVALID, 0},
  {"s", SC_ERR_INVALID, 0},
  {"1h30", SC_ERR_INVALID, 0},
  {"1..5s", SC_ERR_INVALID, 0},
  {"1e3s", SC_ERR_INVALID, 0},
  {"0x10s", SC_ERR_INVALID, 0},
};

TEST(parse_table)
{
  size_t i;
  for(i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
    int64_t ms = -12345;
    int err = (int)duration_parse(parse_cases[i].in, &ms);
    CHECK_MSG(err == parse_cases[i].err, "\"%s\": err %d, expected %d",
              parse_cases[i].in, err, parse_cases[i].err);
    if(!err)
      CHECK_MSG(ms == parse_cases[i].ms, "\"%s\": %lld ms, expected %lld",
                parse_cases[i].in, (long long)ms, parse_cases[i].ms);
    else
      CHECK_MSG(ms == -12345, "\"%s\": output written on error",
                parse_cases[i].in);
  }
}

TEST(parse_null)
{
  int64_t ms;
  CHECK_INT(duration_parse(NULL, &ms), SC_ERR_INVALID);
}

static const struct {
  long long ms;
  const char *out;
} format_cases[] = {
  {0, "0"},
  {1, "1ms"},
  {500, "500ms"},
  {999, "999ms"},
  {1000, "1s"},
  {1500, "1.5s"},
  {1250, "1.25s"},
  {1001, "1.001s"},
  {90000, "1m30s"},
  {900000, "15m"},
  {3600000, "1h"},
  {5400000, "1h30m"},
  {3600500, "1h0.5s"},
  {86400000, "24h"},
  {315360000000LL, "87600h"},
  {-1500, "-1.5s"},
  {INT64_MAX, "2562047788015h12m55.807s"},
  {INT64_MIN, "-2562047788015h12m55.808s"},
};

TEST(format_table)
{
  size_t i;
  for(i = 0; i < sizeof(format_cases) / sizeof(format_cases[0]); i++) {
    char buf[32];
    duration_format(format_cases[i].ms, buf, sizeof(buf));
    CHECK_STR(buf, format_cases[i].out);
  }
}

/* format then parse gives the same value for every non-negative ms */
TEST(round_trip)
{
  static const long long vals[] = {0,       1,        7,       999,
                                   1000,    1001,     59999,   60000,
                                   61001,   3599999,  3600000, 86399999,
                                   315360000000LL, 9223372036854LL};
  size_t i;
  for(i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
    char buf[32];
    int64_t back = -1;
    duration_format(vals[i], buf, sizeof(buf));
    CHECK_MSG(duration_parse(buf, &back) == SC_OK, "\"%s\" does not parse",
              buf);
    CHECK_INT(back, vals[i]);
  }
}

/* whatever parses writes out as a string that parses back to the same
 * value (the store round-trips specs: fuzz_store_decode found
 * "9223372036854775807ns" read as 9223372036855 ms, which wrote out as a
 * duration that no longer parsed) */
TEST(parsed_values_write_back)
{
  size_t i;
  for(i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
    char buf[32];
    int64_t ms = -1, back = -1;
    if(duration_parse(parse_cases[i].in, &ms) != SC_OK)
      continue;
    duration_format(ms, buf, sizeof(buf));
    CHECK_MSG(duration_parse(buf, &back) == SC_OK,
              "\"%s\" -> %lld ms -> \"%s\" does not parse", parse_cases[i].in,
              (long long)ms, buf);
    CHECK_INT(back, ms);
  }
}

TEST(format_truncates_safely)
{
  char buf[4];
  duration_format(5400000, buf, sizeof(buf));
  CHECK_STR(buf, "1h3");
  duration_format(5400000, buf, 0); /* must not write */
}

TEST_LIST = {T(parse_table), T(parse_null), T(format_table), T(round_trip),
             T(parsed_values_write_back), T(format_truncates_safely), {0}};
TEST_MAIN()
