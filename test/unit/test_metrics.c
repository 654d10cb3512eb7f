/* Tests of the Prometheus registry and the logger's escaping. */
#include "test/harness.h"
#include "controller/ops/log.h"
#include "controller/ops/metrics.h"

TEST(counter_gauge_histogram_render)
{
  metrics *m = metrics_new();
  dynbuf b;
  static const double bk[] = {0.01, 0.1, 1};
  CHECK_OK(metrics_declare(m, "x_total", METRIC_COUNTER, "Things.", NULL, 0));
  CHECK_OK(metrics_declare(m, "g", METRIC_GAUGE, "A gauge.", NULL, 0));
  CHECK_OK(metrics_declare(m, "h_seconds", METRIC_HISTOGRAM, "Lat.", bk, 3));
  metrics_add(m, "x_total", "result=\"ok\"", 2);
  metrics_add(m, "x_total", "result=\"error\"", 1);
  metrics_add(m, "x_total", "result=\"ok\"", 1);
  metrics_set(m, "g", "", 7);
  metrics_observe(m, "h_seconds", "op=\"list\"", 0.05);
  metrics_observe(m, "h_seconds", "op=\"list\"", 5);
  CHECK(metrics_get(m, "x_total", "result=\"ok\"") == 3);
  dynbuf_init(&b, 1 << 20);
  CHECK_OK(metrics_render(m, &b));
  CHECK(strstr(dynbuf_ptr(&b), "# TYPE x_total counter\n"));
  CHECK(strstr(dynbuf_ptr(&b), "x_total{result=\"error\"} 1\n"
                                "x_total{result=\"ok\"} 3\n"));
  CHECK(strstr(dynbuf_ptr(&b), "g 7\n"));
  CHECK(strstr(dynbuf_ptr(&b), "h_seconds_bucket{op=\"list\",le=\"0.01\"} 0\n"
                                "h_seconds_bucket{op=\"list\",le=\"0.1\"} 1\n"
                                "h_seconds_bucket{op=\"list\",le=\"1\"} 1\n"
                                "h_seconds_bucket{op=\"list\",le=\"+Inf\"} 2\n"
                                "h_seconds_sum{op=\"list\"} 5.05\n"
                                "h_seconds_count{op=\"list\"} 2\n"));
  dynbuf_free(&b);
  metrics_free(m);
}

/* A family without any series yet (the state right after start): renders
 * without sorting an empty array; qsort(NULL, 0, ...) is undefined and
 * UBSan stopped the controller on its first /metrics scrape (found by
 * test/e2e/security.sh under make asan). */
TEST(empty_families_render)
{
  metrics *m = metrics_new();
  dynbuf b;
  CHECK_OK(metrics_declare(m, "e_total", METRIC_COUNTER, "Empty.", NULL, 0));
  CHECK_OK(metrics_declare(m, "eg", METRIC_GAUGE, "Empty gauge.", NULL, 0));
  dynbuf_init(&b, 1 << 16);
  CHECK_OK(metrics_render(m, &b));
  CHECK(strstr(dynbuf_ptr(&b), "# TYPE e_total counter\ne_total 0\n"));
  CHECK(strstr(dynbuf_ptr(&b), "# TYPE eg gauge\n"));
  dynbuf_free(&b);
  metrics_free(m);
}

TEST(label_escape)
{
  char buf[64];
  metrics_label_escape("a\"b\\c\nd", buf, sizeof(buf));
  CHECK_STR(buf, "a\\\"b\\\\c\\nd");
}

static void read_all(FILE *f, char *buf, size_t len)
{
  size_t n;
  rewind(f);
  n = fread(buf, 1, len - 1, f);
  buf[n] = 0;
}

TEST(log_logfmt_quotes_and_levels)
{
  FILE *f = tmpfile();
  char buf[1024];
  logger *lg = log_new(f, LOG_FORMAT_LOGFMT, LOG_INFO);
  CHECK_OK(log_set_static(lg, "replica", "r1"));
  log_kv(lg, LOG_DEBUG, "hidden", NULL);
  log_kv(lg, LOG_WARN, "two words", "k", "a=b \"q\"\nx", "e", "", NULL);
  read_all(f, buf, sizeof(buf));
  CHECK(!strstr(buf, "hidden"));
  CHECK(strstr(buf, " level=warn msg=\"two words\" replica=r1 "
                    "k=\"a=b \\\"q\\\"\\nx\" e=\"\"\n"));
  CHECK(strchr(buf, '\n') == buf + strlen(buf) - 1);
  log_free(lg);
  fclose(f);
}

TEST(log_json_escapes)
{
  FILE *f = tmpfile();
  char buf[1024];
  logger *lg = log_new(f, LOG_FORMAT_JSON, LOG_DEBUG);
  log_kv(lg, LOG_ERROR, "m", "k", "x\"\x01", NULL);
  read_all(f, buf, sizeof(buf));
  CHECK(strstr(buf, "\"level\":\"error\",\"msg\":\"m\",\"k\":\"x\\\"\\u0001\"}\n"));
  CHECK(buf[0] == '{');
  log_free(lg);
  fclose(f);
}

/* C1 controls, bidi overrides and bad bytes from a peer never reach the
 * log raw, in either format; other UTF-8 is kept */
TEST(log_escapes_c1_and_bidi)
{
  static const log_format fmts[] = {LOG_FORMAT_LOGFMT, LOG_FORMAT_JSON};
  size_t i;
  for(i = 0; i < 2; i++) {
    FILE *f = tmpfile();
    char buf[1024];
    logger *lg = log_new(f, fmts[i], LOG_DEBUG);
    log_kv(lg, LOG_ERROR, "m", "tag", "a\xc2\x9b" "2J\xe2\x80\xae" "b\xff\xc3\xa9",
           NULL);
    read_all(f, buf, sizeof(buf));
    CHECK_MSG(strstr(buf, "\\u009b2J\\u202eb"), "%s", buf);
    CHECK_MSG(strstr(buf, i ? "\\ufffd\xc3\xa9" : "\\xff\xc3\xa9"), "%s", buf);
    CHECK(!strstr(buf, "\xc2\x9b") && !strstr(buf, "\xe2\x80\xae"));
    log_free(lg);
    fclose(f);
  }
}

TEST_LIST = {
  T(log_escapes_c1_and_bidi),
  T(counter_gauge_histogram_render),
  T(empty_families_render),
  T(label_escape),
  T(log_logfmt_quotes_and_levels),
  T(log_json_escapes),
  {0},
};
TEST_MAIN()
