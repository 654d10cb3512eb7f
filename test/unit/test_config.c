/* Tests of the daemon's settings: defaults, precedence, errors. */
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include "test/harness.h"
#include "controller/ops/config.h"

static int parse(config *c, sc_errbuf *eb, char **argv)
{
  int argc = 0;
  while(argv[argc])
    argc++;
  return config_parse(c, argc, argv, eb);
}

TEST(defaults_match_design)
{
  config c;
  sc_errbuf eb;
  char *argv[] = {"x", NULL};
  unsetenv("SESSION_STORE");
  unsetenv("CUBE_API_KEY");
  CHECK_OK(parse(&c, &eb, argv));
  CHECK_STR(c.store, "sqlite:sessions.db");
  CHECK_STR(c.cube_url, "http://127.0.0.1:3000");
  CHECK_STR(c.metrics_addr, "127.0.0.1:9090");
  CHECK_INT(c.resync_ms, 60000);
  CHECK_INT(c.orphan_grace_ms, 600000);
  CHECK_INT(c.max_inflight, 128); /* issue 16: measured (creates.sh) */
  CHECK(c.cube_qps == 30); /* issue 16: under Cube's 100/s per key with 3 replicas */
  CHECK(c.max_delete_fraction == 0.2);
  CHECK(!c.force && !c.dry_run && !c.cube_insecure_skip_verify);
  CHECK(c.cube_api_key == NULL);
  config_clear(&c);
}

TEST(flag_beats_env_beats_file)
{
  config c;
  sc_errbuf eb;
  char path[] = "/tmp/sc-config-XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "w");
  char *argv[] = {"x", "--config", path, "--max-inflight=7", NULL};
  fputs("resync: 5s\nmax-inflight: 3\norphan-grace: 1m\ndry-run: true\n", f);
  fclose(f);
  setenv("SESSION_CONTROLLER_ORPHAN_GRACE", "2m", 1);
  CHECK_OK(parse(&c, &eb, argv));
  CHECK_INT(c.resync_ms, 5000);        /* file */
  CHECK_INT(c.orphan_grace_ms, 120000); /* env over file */
  CHECK_INT(c.max_inflight, 7);        /* flag over file */
  CHECK(c.dry_run);
  config_clear(&c);
  unsetenv("SESSION_CONTROLLER_ORPHAN_GRACE");
  unlink(path);
}

TEST(config_file_errors_name_file_and_line)
{
  config c;
  sc_errbuf eb;
  char path[] = "/tmp/sc-config-XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "w");
  char *argv[] = {"x", "--config", path, NULL};
  char want[256];
  fputs("resync: 5s\nbogus: 1\n", f);
  fclose(f);
  CHECK_INT(parse(&c, &eb, argv), SC_ERR_INVALID);
  snprintf(want, sizeof(want), "%s:2: bogus: unknown setting", path);
  CHECK_STR(eb.msg, want);
  config_clear(&c);
  unlink(path);
}

TEST(bad_values_are_usage_errors)
{
  static const struct {
    const char *arg;
    const char *msg;
  } cases[] = {
    {"--resync=soon", "flag: --resync: \"soon\" is not a duration (use e.g. 60s, 10m)"},
    {"--max-inflight=0", "flag: --max-inflight: \"0\" is not a whole number from 1 to 100000"},
    {"--max-delete-fraction=-1", "flag: --max-delete-fraction: \"-1\" is not a non-negative number"},
    {"--max-delete-fraction=2", "--max-delete-fraction: 2 is more than 1"},
    {"--force=maybe", "flag: --force: \"maybe\" is not a boolean (true or false)"},
    {"--nope", "unknown flag --nope"},
    {"--log-level=loud", "--log-level: \"loud\" is not debug, info, warn or error"},
    {"--cube-api-key=s3cret", "--cube-api-key is not a flag: a key on the command line shows in the process list; use --cube-api-key-file or CUBE_API_KEY"},
    {"--default-internet-access=no", "--default-internet-access: \"no\" is not true, false or cube"},
    {"--default-internet-access=true", "--default-internet-access true is beyond --egress-ceiling none (a default cannot widen the ceiling; set --egress-ceiling internet to keep open egress)"},
    {"--default-deny-out=10.0.0.0/8,example.com", "--default-deny-out: \"example.com\" is not a CIDR or an IP address (use e.g. 169.254.169.254/32,10.0.0.0/8)"},
    {"--default-deny-out=10.0.0.0/8,,1.1.1.1", "--default-deny-out: \"\" is not a CIDR or an IP address (use e.g. 169.254.169.254/32,10.0.0.0/8)"},
  };
  size_t i;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    config c;
    sc_errbuf eb;
    char *argv[] = {"x", (char *)cases[i].arg, NULL};
    CHECK_INT(parse(&c, &eb, argv), SC_ERR_INVALID);
    CHECK_STR(eb.msg, cases[i].msg);
    config_clear(&c);
  }
}

/* the capacity budgets: 0 (no limit) by default and allowed; the others
 * refused with the flag named */
TEST(capacity_budgets_zero_is_no_limit)
{
  config c;
  sc_errbuf eb;
  char *argv[] = {"x", NULL};
  char *set[] = {"x", "--max-paused", "20", "--max-paused-per-tenant=0",
                 "--max-running-per-tenant", "3", NULL};
  char *neg[] = {"x", "--max-paused", "-1", NULL};
  char *big[] = {"x", "--max-running-per-tenant", "100001", NULL};
  char *floor0[] = {"x", "--max-delete-floor", "0", NULL};
  CHECK_OK(parse(&c, &eb, argv));
  CHECK_INT(c.max_paused, 0);
  CHECK_INT(c.max_paused_per_tenant, 0);
  CHECK_INT(c.max_running_per_tenant, 0);
  config_clear(&c);
  CHECK_OK(parse(&c, &eb, set));
  CHECK_INT(c.max_paused, 20);
  CHECK_INT(c.max_paused_per_tenant, 0);
  CHECK_INT(c.max_running_per_tenant, 3);
  config_clear(&c);
  CHECK_INT(parse(&c, &eb, neg), SC_ERR_INVALID);
  CHECK(strstr(eb.msg, "--max-paused") && strstr(eb.msg, "from 0 to 100000"));
  config_clear(&c);
  CHECK_INT(parse(&c, &eb, big), SC_ERR_INVALID);
  CHECK(strstr(eb.msg, "--max-running-per-tenant"));
  config_clear(&c);
  /* the other counts still start at 1 */
  CHECK_INT(parse(&c, &eb, floor0), SC_ERR_INVALID);
  CHECK(strstr(eb.msg, "from 1 to 100000"));
  config_clear(&c);
}

/* the default network policy: cube (send nothing) unless set; the deny
 * list split and kept */
TEST(default_network_policy_flags)
{
  config c;
  sc_errbuf eb;
  char *argv[] = {"x", NULL};
  char *argv2[] = {"x", "--default-internet-access=false",
                   "--default-deny-out=169.254.169.254/32, 10.0.0.0/8",
                   NULL};
  CHECK_OK(parse(&c, &eb, argv));
  CHECK_STR(c.default_internet_access, "cube");
  CHECK_INT(c.n_deny_out, 0);
  config_clear(&c);
  CHECK_OK(parse(&c, &eb, argv2));
  CHECK_STR(c.default_internet_access, "false");
  CHECK_INT(c.n_deny_out, 2);
  CHECK_STR(c.deny_out[0], "169.254.169.254/32");
  CHECK_STR(c.deny_out[1], "10.0.0.0/8");
  config_clear(&c);
}

/* the tenant policy's flags: closed defaults; a list flag given again
 * joins the first (the command line only: the file and the environment
 * set a list whole) */
TEST(tenant_policy_flags)
{
  config c;
  sc_errbuf eb;
  char *argv[] = {"x", NULL};
  char *argv2[] = {"x", "--workspace-root", "/data/ws",
                   "--workspace-root=/nfs/b,/nfs/c", "--egress-ceiling",
                   "internet", "--default-internet-access=true",
                   "--policy", "/etc/p.yaml", NULL};
  CHECK_OK(parse(&c, &eb, argv));
  CHECK_STR(c.volume_policy, "none");
  CHECK_STR(c.egress_ceiling, "none");
  CHECK(!c.workspace_root && !c.policy_file && !c.egress_allow &&
        !c.allowed_templates);
  config_clear(&c);
  setenv("SESSION_CONTROLLER_WORKSPACE_ROOT", "/from/env", 1);
  CHECK_OK(parse(&c, &eb, argv2));
  unsetenv("SESSION_CONTROLLER_WORKSPACE_ROOT");
  CHECK_STR(c.workspace_root, "/data/ws,/nfs/b,/nfs/c");
  CHECK_STR(c.egress_ceiling, "internet");
  CHECK_STR(c.policy_file, "/etc/p.yaml");
  config_clear(&c);
}

TEST(api_key_from_file_trimmed_or_env)
{
  config c;
  sc_errbuf eb;
  char path[] = "/tmp/sc-key-XXXXXX";
  int fd = mkstemp(path);
  char *argv[] = {"x", "--cube-api-key-file", path, NULL};
  char *argv2[] = {"x", NULL};
  CHECK(write(fd, "k3y-value\n", 10) == 10);
  close(fd);
  CHECK_OK(parse(&c, &eb, argv));
  CHECK_STR(c.cube_api_key, "k3y-value");
  config_clear(&c);
  setenv("CUBE_API_KEY", "from-env", 1);
  CHECK_OK(parse(&c, &eb, argv2));
  CHECK_STR(c.cube_api_key, "from-env");
  config_clear(&c);
  unsetenv("CUBE_API_KEY");
  unlink(path);
}

TEST_LIST = {
  T(defaults_match_design),
  T(flag_beats_env_beats_file),
  T(config_file_errors_name_file_and_line),
  T(bad_values_are_usage_errors),
  T(default_network_policy_flags),
  T(tenant_policy_flags),
  T(capacity_budgets_zero_is_no_limit),
  T(api_key_from_file_trimmed_or_env),
  {0},
};
TEST_MAIN()
