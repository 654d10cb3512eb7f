/* Tests of controller/kubeclient/exec.c and controller/kubeclient/cred.c: exec
 * credential plugins written as sh scripts in a temporary directory. The
 * ExecCredential checks, what the plugin is given (args, env,
 * KUBERNETES_EXEC_INFO, stdin, no descriptor of ours), its failures
 * (exit status and stderr, a timeout that kills its process group, too
 * much output, not found), and the credential cache: until the
 * expiration, again after a 401 (once per credential), a failed run not
 * repeated at once, the refresh ahead of the expiry on a loop. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <event2/event.h>
#include <json-c/json.h>
#include "test/harness.h"
#include "controller/kubeclient/cred.h"
#include "controller/kubeclient/exec.h"
#include "controller/kubeclient/config.h"
#include "lib/sctime.h"

static char dir[256];

static void cleanup(void)
{
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if(dir[0] && system(cmd) != 0)
    fprintf(stderr, "test_kube_exec: could not remove %s\n", dir);
}

static int ready(void)
{
  static int state;
  if(!state) {
    char cmd[900];
    snprintf(dir, sizeof(dir), "/tmp/sc-kx.XXXXXX");
    state = -1;
    if(mkdtemp(dir)) {
      atexit(cleanup);
      snprintf(cmd, sizeof(cmd),
               "cd %s && openssl req -x509 -newkey rsa:2048 -nodes -keyout "
               "c.key -out c.crt -days 1 -subj /CN=plugin >/dev/null 2>&1 && "
               "openssl req -x509 -newkey rsa:2048 -nodes -keyout o.key "
               "-out o.crt -days 1 -subj /CN=other >/dev/null 2>&1", dir);
      if(system(cmd) == 0)
        state = 1;
    }
  }
  return state == 1;
}

/* an executable script DIR/name */
static void script(const char *name, const char *body)
{
  char p[512];
  FILE *f;
  snprintf(p, sizeof(p), "%s/%s", dir, name);
  f = fopen(p, "w");
  if(f) {
    fprintf(f, "#!/bin/sh\n%s", body);
    fclose(f);
  }
  chmod(p, 0755);
}

static char *slurp(const char *name)
{
  char p[512], *buf = calloc(1, 65536);
  FILE *f;
  size_t n;
  snprintf(p, sizeof(p), "%s/%s", dir, name);
  f = fopen(p, "r");
  if(!f || !buf) {
    if(f)
      fclose(f);
    return buf;
  }
  n = fread(buf, 1, 65535, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

static int runs(void)
{
  char *s = slurp("runs");
  int n = 0;
  char *p;
  for(p = s; p && *p; p++)
    n += *p == '\n';
  free(s);
  return n;
}

/* a cfg for DIR/name (the loader's job, done by hand) */
static kube_exec_cfg *cfg_for(const char *name, const char *api)
{
  kube_exec_cfg *c = calloc(1, sizeof(*c));
  char p[512];
  snprintf(p, sizeof(p), "%s/%s", dir, name);
  c->api_version = strdup(api ? api : KUBE_EXEC_V1);
  c->command = strdup(name);
  c->path = strdup(p);
  c->where = strdup("kubeconfig K: user \"u\"");
  c->exec_info = strdup("{\"kind\":\"ExecCredential\",\"apiVersion\":"
                        "\"client.authentication.k8s.io/v1\",\"spec\":"
                        "{\"interactive\":false}}");
  return c;
}

#define TOK_JSON(tok) "{\"apiVersion\":\"client.authentication.k8s.io/v1\"," \
  "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"" tok "\"}}"

static sc_err parse(const char *out, kube_exec_cred *c, sc_errbuf *eb)
{
  kube_exec_cfg *cfg = cfg_for("p", NULL);
  sc_err err;
  eb->msg[0] = 0;
  err = kube_exec_parse(cfg, out, strlen(out), sctime_wall_ms(), c, eb);
  kube_exec_cfg_free(cfg);
  return err;
}

TEST(parse_exec_credentials)
{
  static const struct {
    const char *out, *want;
  } bad[] = {
    {"", "wrote nothing on stdout"},
    {"  \n", "wrote nothing on stdout"},
    {"token-123\n", "stdout is not JSON"},
    {"{\"apiVersion\":", "stdout is not JSON (it ends too soon"},
    {TOK_JSON("t") " {}", "more after the JSON value"},
    {"[1]", "not a JSON object"},
    {"{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":"
     "\"ExecCredential\",\"status\":{\"token\":\"t\"}}",
     "the kubeconfig asks for apiVersion client.authentication.k8s.io/v1, "
     "the plugin returned \"client.authentication.k8s.io/v1beta1\""},
    {"{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}",
     "returned no apiVersion"},
    {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"Foo\","
     "\"status\":{\"token\":\"t\"}}", "kind is \"Foo\", want ExecCredential"},
    {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
     "\"ExecCredential\"}", "no status"},
    {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
     "\"ExecCredential\",\"status\":{}}", "has no credential"},
    {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
     "\"ExecCredential\",\"status\":{\"token\":\"\"}}", "has no credential"},
    {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
     "\"ExecCredential\",\"status\":{\"token\":7}}", "token is not a string"},
    {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
     "\"ExecCredential\",\"status\":{\"token\":\"a\\r\\nX-Evil: 1\"}}",
     "control characters"},
    {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
     "\"ExecCredential\",\"status\":{\"clientKeyData\":\"k\"}}",
     "clientKeyData without status.clientCertificateData"},
    {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
     "\"ExecCredential\",\"status\":{\"clientCertificateData\":\"x\","
     "\"clientKeyData\":\"y\"}}", "clientCertificateData: not a PEM"},
    {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
     "\"ExecCredential\",\"status\":{\"token\":\"t\","
     "\"expirationTimestamp\":\"tomorrow\"}}", "not an RFC 3339 time"},
    {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
     "\"ExecCredential\",\"status\":{\"token\":\"t\","
     "\"expirationTimestamp\":\"2001-02-03T04:05:06Z\"}}",
     "has expired (expirationTimestamp 2001-02-03T04:05:06Z, now "},
  };
  kube_exec_cred c;
  sc_errbuf eb;
  size_t i;
  for(i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    CHECK_MSG(parse(bad[i].out, &c, &eb) != SC_OK, "case %zu parsed", i);
    CHECK_MSG(strstr(eb.msg, bad[i].want) &&
              !strncmp(eb.msg, "kubeconfig K: user \"u\": exec plugin p: ",
                       38), "case %zu: \"%s\" (want \"%s\")", i, eb.msg,
              bad[i].want);
    CHECK(!c.token && !c.cert_pem);
  }
  CHECK_OK(parse(TOK_JSON("tok-1") "\n", &c, &eb));
  CHECK_STR(c.token, "tok-1");
  CHECK_INT(c.expires, 0);
  kube_exec_cred_clear(&c);
  CHECK_OK(parse("{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                 "\"kind\":\"ExecCredential\",\"spec\":{},\"status\":{"
                 "\"token\":\"t2\",\"expirationTimestamp\":"
                 "\"2100-01-02T03:04:05Z\"}}", &c, &eb));
  CHECK_STR(c.token, "t2");
  CHECK_INT(c.expires, 4102542245000LL);
  kube_exec_cred_clear(&c);
}

/* the certificate and key of the plugin as JSON strings (PEM with \n) */
static char *json_pem(const char *file)
{
  char *pem = slurp(file);
  json_object *s = json_object_new_string(pem);
  char *out = strdup(json_object_to_json_string(s));
  json_object_put(s);
  free(pem);
  return out;
}

TEST(parse_client_certificate)
{
  char *crt, *key, *okey, *out;
  kube_exec_cred c;
  sc_errbuf eb;
  size_t n = 20000;
  CHECK(ready());
  crt = json_pem("c.crt");
  key = json_pem("c.key");
  okey = json_pem("o.key");
  out = malloc(n);
  snprintf(out, n, "{\"apiVersion\":\"client.authentication.k8s.io/v1\","
           "\"kind\":\"ExecCredential\",\"status\":{\"clientCertificateData\""
           ":%s,\"clientKeyData\":%s}}", crt, key);
  CHECK_OK(parse(out, &c, &eb));
  CHECK(c.cert_pem && strstr(c.cert_pem, "BEGIN CERTIFICATE"));
  CHECK(c.key_pem && strstr(c.key_pem, "PRIVATE KEY"));
  CHECK(!c.token);
  kube_exec_cred_clear(&c);
  snprintf(out, n, "{\"apiVersion\":\"client.authentication.k8s.io/v1\","
           "\"kind\":\"ExecCredential\",\"status\":{\"clientCertificateData\""
           ":%s,\"clientKeyData\":%s}}", crt, okey);
  CHECK(parse(out, &c, &eb) != SC_OK);
  CHECK_MSG(strstr(eb.msg, "does not match"), "%s", eb.msg);
  free(crt);
  free(key);
  free(okey);
  free(out);
}

TEST(runs_with_args_env_info_and_nothing_of_ours)
{
  kube_exec_cfg *cfg;
  kube_exec_cred c;
  sc_errbuf eb;
  char *got;
  int fd;
  CHECK(ready());
  /* a descriptor of ours without close-on-exec must not reach it */
  fd = open("/dev/null", O_RDONLY);
  CHECK(fd > 2);
  {
    char body[2000];
    snprintf(body, sizeof(body),
             "{ echo \"args=$#:$1:$2\"; echo \"foo=$FOO\"; "
             "echo \"home=$HOME\"; echo \"info=$KUBERNETES_EXEC_INFO\"; "
             "if [ -t 0 ]; then echo tty; else echo notty; fi; "
             "echo \"stdin=$(cat)\"; "
             "[ -e /proc/$$/fd/%d ] && echo leaked || echo closed; "
             "} > %s/seen\n"
             "echo '" TOK_JSON("tok-x") "'\n", fd, dir);
    script("p", body);
  }
  cfg = cfg_for("p", NULL);
  cfg->n_args = 2;
  cfg->args = calloc(2, sizeof(char *));
  cfg->args[0] = strdup("get-token");
  cfg->args[1] = strdup("a b");
  cfg->n_env = 2;
  cfg->env = calloc(2, sizeof(char *));
  cfg->env[0] = strdup("FOO=bar=baz");
  cfg->env[1] = strdup("HOME=/plugin-home");
  setenv("KUBERNETES_EXEC_INFO", "stale", 1);
  eb.msg[0] = 0;
  CHECK_MSG(kube_exec_run(cfg, &c, &eb) == SC_OK, "%s", eb.msg);
  unsetenv("KUBERNETES_EXEC_INFO");
  close(fd);
  CHECK_STR(c.token, "tok-x");
  kube_exec_cred_clear(&c);
  got = slurp("seen");
  CHECK_MSG(strstr(got, "args=2:get-token:a b\n"), "%s", got);
  CHECK_MSG(strstr(got, "foo=bar=baz\n"), "%s", got);
  CHECK_MSG(strstr(got, "home=/plugin-home\n"), "%s", got);
  CHECK_MSG(strstr(got, "info={\"kind\":\"ExecCredential\",\"apiVersion\":"
                   "\"client.authentication.k8s.io/v1\",\"spec\":"
                   "{\"interactive\":false}}\n"), "%s", got);
  CHECK_MSG(strstr(got, "notty\nstdin=\n"), "%s", got);
  CHECK_MSG(strstr(got, "closed\n"), "%s", got);
  free(got);
  kube_exec_cfg_free(cfg);
}

/* run DIR/name with body; the error message */
static sc_err run_script(const char *name, const char *body, long timeout_ms,
                         kube_exec_mode mode, sc_errbuf *eb)
{
  kube_exec_cfg *cfg;
  kube_exec_cred c;
  sc_err err;
  script(name, body);
  cfg = cfg_for(name, NULL);
  cfg->timeout_ms = timeout_ms;
  cfg->mode = mode;
  eb->msg[0] = 0;
  err = kube_exec_run(cfg, &c, eb);
  kube_exec_cred_clear(&c);
  kube_exec_cfg_free(cfg);
  return err;
}

/* is process pid gone (or a zombie nobody waited for yet)? */
static int gone(const char *pidfile)
{
  char *s = slurp(pidfile), p[64], st[512];
  FILE *f;
  int dead = 1;
  snprintf(p, sizeof(p), "/proc/%ld/stat", strtol(s, NULL, 10));
  free(s);
  f = fopen(p, "r");
  if(f) {
    size_t n = fread(st, 1, sizeof(st) - 1, f);
    char *rp;
    st[n] = 0;
    rp = strrchr(st, ')');
    dead = rp && rp[1] == ' ' && rp[2] == 'Z';
    fclose(f);
  }
  return dead;
}

TEST(failures_are_clear)
{
  sc_errbuf eb;
  int64_t t0;
  int i;
  CHECK(ready());
  CHECK_INT(run_script("f1", "echo >&2\necho 'error: no credentials for "
                       "profile x' >&2\necho 'second line' >&2\nexit 3\n", 0,
                       KUBE_EXEC_NEVER, &eb), SC_ERR_UNAVAILABLE);
  CHECK_STR(eb.msg, "kubeconfig K: user \"u\": exec plugin f1: exited with "
            "status 3: error: no credentials for profile x");
  CHECK(run_script("f2", "exit 1\n", 0, KUBE_EXEC_IF_AVAILABLE, &eb));
  CHECK_MSG(strstr(eb.msg, "exited with status 1: (nothing on stderr) (it "
                   "ran without a terminal: interactiveMode IfAvailable is "
                   "run as Never)"), "%s", eb.msg);
  CHECK(run_script("f3", "echo hello\n", 0, KUBE_EXEC_NEVER, &eb));
  CHECK_MSG(strstr(eb.msg, "exec plugin f3: stdout is not JSON"), "%s",
            eb.msg);
  CHECK(run_script("f4", "kill -9 $$\n", 0, KUBE_EXEC_NEVER, &eb));
  CHECK_MSG(strstr(eb.msg, "killed by signal 9"), "%s", eb.msg);
  CHECK_INT(run_script("f5", "head -c 2000000 /dev/zero\n", 0,
                       KUBE_EXEC_NEVER, &eb), SC_ERR_TOO_LARGE);
  CHECK_MSG(strstr(eb.msg, "wrote more than 1048576 bytes on stdout: "
                   "killed"), "%s", eb.msg);
  /* a plugin that hangs: killed at the deadline, with what it forked */
  {
    char body[600];
    snprintf(body, sizeof(body), "echo 'waiting for the browser' >&2\n"
             "sleep 30 &\necho $! > %s/child\nsleep 30\n", dir);
    t0 = sctime_mono_ms();
    CHECK_INT(run_script("f6", body, 400, KUBE_EXEC_NEVER, &eb),
              SC_ERR_TIMEOUT);
    CHECK_MSG(sctime_mono_ms() - t0 < 3000, "took %lld ms",
              (long long)(sctime_mono_ms() - t0));
    CHECK_MSG(strstr(eb.msg, "did not finish within 400 ms: killed; stderr: "
                     "waiting for the browser"), "%s", eb.msg);
    for(i = 0; i < 50 && !gone("child"); i++)
      usleep(20000);
    CHECK_MSG(gone("child"), "the plugin's child outlived the timeout");
  }
  /* a plugin that is done, but left a child holding its stdout: its
   * answer counts at once */
  t0 = sctime_mono_ms();
  CHECK_MSG(run_script("f7", "sleep 5 &\necho '" TOK_JSON("t") "'\n", 0,
                       KUBE_EXEC_NEVER, &eb) == SC_OK, "%s", eb.msg);
  CHECK_MSG(sctime_mono_ms() - t0 < 2500, "took %lld ms",
            (long long)(sctime_mono_ms() - t0));
}

TEST(not_found_names_the_install_hint)
{
  kube_exec_cfg *cfg;
  kube_exec_cred c;
  sc_errbuf eb;
  const char *path = getenv("PATH");
  char *saved = strdup(path ? path : "/usr/bin:/bin");
  CHECK(ready());
  cfg = cfg_for("x", NULL);
  free(cfg->command);
  free(cfg->path);
  cfg->path = NULL;
  cfg->command = strdup("sc-no-such-plugin");
  cfg->install_hint = strdup("Install it with: apt install sc-no-such-plugin");
  CHECK_INT(kube_exec_run(cfg, &c, &eb), SC_ERR_NOT_FOUND);
  CHECK_STR(eb.msg, "kubeconfig K: user \"u\": exec plugin sc-no-such-plugin:"
            " not found in PATH: Install it with: apt install "
            "sc-no-such-plugin");
  /* found in PATH */
  script("sc-in-path", "echo '" TOK_JSON("from-path") "'\n");
  free(cfg->command);
  cfg->command = strdup("sc-in-path");
  {
    char np[4400];
    snprintf(np, sizeof(np), "/nonexistent:%s:%s", dir, saved);
    setenv("PATH", np, 1);
  }
  eb.msg[0] = 0;
  CHECK_MSG(kube_exec_run(cfg, &c, &eb) == SC_OK, "%s", eb.msg);
  setenv("PATH", saved, 1);
  CHECK_STR(c.token, "from-path");
  kube_exec_cred_clear(&c);
  /* a path that is not there, a file that is not executable */
  cfg->path = strdup("/nonexistent/plugin");
  CHECK_INT(kube_exec_run(cfg, &c, &eb), SC_ERR_NOT_FOUND);
  CHECK_MSG(strstr(eb.msg, "/nonexistent/plugin does not exist: Install it"),
            "%s", eb.msg);
  free(cfg->path);
  cfg->path = malloc(600);
  snprintf(cfg->path, 600, "%s/c.crt", dir);
  CHECK(kube_exec_run(cfg, &c, &eb) != SC_OK);
  CHECK_MSG(strstr(eb.msg, "c.crt is not an executable file"), "%s", eb.msg);
  kube_exec_cfg_free(cfg);
  free(saved);
}

/* a kubeconfig DIR/kc with user u running DIR/name */
static sc_err load_exec_kc(const char *exec_lines, kube_conn *c,
                           sc_errbuf *eb)
{
  char p[512];
  FILE *f;
  snprintf(p, sizeof(p), "%s/kc", dir);
  f = fopen(p, "w");
  if(!f)
    return SC_ERR_IO;
  fprintf(f, "apiVersion: v1\nkind: Config\ncurrent-context: a\n"
          "contexts:\n- name: a\n  context: {cluster: c, user: u}\n"
          "clusters:\n- name: c\n  cluster: {server: 'https://k:6443'}\n"
          "users:\n- name: u\n  user:\n    exec:\n%s", exec_lines);
  fclose(f);
  eb->msg[0] = 0;
  return kubeconfig_load(p, NULL, c, eb);
}

/* a plugin that logs its runs and returns TOKEN-N expiring in `secs`
 * seconds (0: no expiry) after sleeping `nap` */
static void counting_plugin(const char *name, int secs, const char *nap)
{
  char body[1500];
  snprintf(body, sizeof(body),
           "echo run >> %s/runs\nn=$(wc -l < %s/runs)\n%s%s\n"
           "if [ %d -gt 0 ]; then\n"
           "  exp=$(date -u -d '+%d seconds' "
           "+%%Y-%%m-%%dT%%H:%%M:%%S.%%3NZ)\n"
           "  printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
           "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"tok-%%s\","
           "\"expirationTimestamp\":\"%%s\"}}' $n $exp\n"
           "else\n"
           "  printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
           "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"tok-%%s\"}}'"
           " $n\nfi\n", dir, dir, nap ? "sleep " : "", nap ? nap : "",
           secs, secs);
  script(name, body);
}

static void reset_runs(void)
{
  char p[512];
  snprintf(p, sizeof(p), "%s/runs", dir);
  unlink(p);
}

TEST(cache_until_expiry_and_after_401)
{
  kube_conn c, c2;
  kube_auth a, b;
  sc_errbuf eb;
  CHECK(ready());
  reset_runs();
  counting_plugin("cp", 0, NULL);
  CHECK_MSG(load_exec_kc("      apiVersion: client.authentication.k8s.io/v1"
                         "\n      command: ./cp\n      interactiveMode: Never"
                         "\n", &c, &eb) == SC_OK, "%s", eb.msg);
  CHECK(kube_cred_is_exec(c.cred));
  CHECK_INT(runs(), 0); /* loading does not run it */
  CHECK_MSG(kube_conn_auth(&c, NULL, &a, &eb) == SC_OK, "%s", eb.msg);
  CHECK_STR(a.token, "tok-1");
  CHECK_OK(kube_conn_copy(&c2, &c));
  CHECK_OK(kube_conn_auth(&c2, NULL, &b, &eb)); /* no expiry: kept */
  CHECK_STR(b.token, "tok-1");
  CHECK_INT(runs(), 1);
  kube_auth_clear(&b);
  /* a 401: run again; the other requests' 401s of tok-1 do not */
  CHECK(kube_conn_unauthorized(&c, &a));
  CHECK_OK(kube_conn_auth(&c2, NULL, &b, &eb));
  CHECK_STR(b.token, "tok-2");
  CHECK(kube_conn_unauthorized(&c2, &a));
  kube_auth_clear(&b);
  CHECK_OK(kube_conn_auth(&c2, NULL, &b, &eb));
  CHECK_STR(b.token, "tok-2");
  CHECK_INT(runs(), 2);
  kube_auth_clear(&a);
  kube_auth_clear(&b);
  kube_conn_clear(&c);
  kube_conn_clear(&c2);

  /* expiry: a credential valid 2 s is used 2 s, then the plugin runs */
  reset_runs();
  counting_plugin("cp2", 2, NULL);
  CHECK_MSG(load_exec_kc("      apiVersion: client.authentication.k8s.io/v1"
                         "\n      command: ./cp2\n      interactiveMode: Never"
                         "\n", &c, &eb) == SC_OK, "%s", eb.msg);
  CHECK_OK(kube_conn_auth(&c, NULL, &a, &eb));
  CHECK_STR(a.token, "tok-1");
  kube_auth_clear(&a);
  CHECK_OK(kube_conn_auth(&c, NULL, &a, &eb));
  CHECK_STR(a.token, "tok-1");
  kube_auth_clear(&a);
  CHECK_INT(runs(), 1);
  usleep(2300 * 1000);
  CHECK_OK(kube_conn_auth(&c, NULL, &a, &eb));
  CHECK_STR(a.token, "tok-2");
  CHECK_INT(runs(), 2);
  kube_auth_clear(&a);
  kube_conn_clear(&c);
}

TEST(a_failed_run_is_not_repeated_at_once)
{
  kube_conn c;
  kube_auth a;
  sc_errbuf eb;
  char body[600];
  CHECK(ready());
  reset_runs();
  snprintf(body, sizeof(body), "echo run >> %s/runs\n"
           "echo 'token expired, run aws sso login' >&2\nexit 255\n", dir);
  script("bad", body);
  CHECK_OK(load_exec_kc("      apiVersion: client.authentication.k8s.io/"
                        "v1beta1\n      command: ./bad\n", &c, &eb));
  CHECK(kube_conn_auth(&c, NULL, &a, &eb) != SC_OK);
  CHECK_MSG(strstr(eb.msg, "/kc: user \"u\": exec plugin ./bad: exited with "
                   "status 255: token expired, run aws sso login (it ran "
                   "without a terminal"), "%s", eb.msg);
  eb.msg[0] = 0;
  CHECK(kube_conn_auth(&c, NULL, &a, &eb) != SC_OK);
  CHECK_MSG(strstr(eb.msg, "exited with status 255"), "%s", eb.msg);
  CHECK_INT(runs(), 1);
  usleep(1200 * 1000); /* the first hold is 1 s */
  CHECK(kube_conn_auth(&c, NULL, &a, &eb) != SC_OK);
  CHECK_INT(runs(), 2);
  kube_conn_clear(&c);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
  (void)fd;
  (void)what;
  event_base_loopbreak(arg);
}

TEST(refresh_ahead_runs_on_the_loop)
{
  struct event_base *base = event_base_new();
  struct event *tick = evtimer_new(base, on_tick, base);
  struct timeval tv = {0, 50000};
  kube_conn c;
  kube_auth a;
  sc_errbuf eb;
  int64_t t0, slow = 0;
  int i;
  CHECK(ready());
  reset_runs();
  /* valid 4 s: refreshed ahead in its last second; each run takes 0.6 s */
  counting_plugin("ahead", 4, "0.6");
  CHECK_OK(load_exec_kc("      apiVersion: client.authentication.k8s.io/v1"
                        "\n      command: ./ahead\n      interactiveMode: "
                        "IfAvailable\n", &c, &eb));
  CHECK_OK(kube_conn_auth(&c, base, &a, &eb));
  CHECK_STR(a.token, "tok-1");
  kube_auth_clear(&a);
  /* ask every 50 ms for up to 4 s, running the loop between: the token changes
   * before tok-1 expires, and no ask waits for the plugin */
  for(i = 0; i < 80; i++) {
    int64_t d;
    t0 = sctime_mono_ms();
    CHECK_MSG(kube_conn_auth(&c, base, &a, &eb) == SC_OK, "%s", eb.msg);
    d = sctime_mono_ms() - t0;
    if(d > slow)
      slow = d;
    if(!strcmp(a.token, "tok-2")) {
      kube_auth_clear(&a);
      break;
    }
    kube_auth_clear(&a);
    evtimer_add(tick, &tv);
    event_base_dispatch(base);
  }
  CHECK_MSG(i < 80, "the token was not refreshed ahead");
  CHECK_INT(runs(), 2);
  CHECK_MSG(slow < 400, "an ask waited %lld ms", (long long)slow);
  /* a refresh running when the client goes away is killed */
  kube_conn_clear(&c);
  event_free(tick);
  event_base_free(base);
}

TEST_LIST = {
  T(parse_exec_credentials),
  T(parse_client_certificate),
  T(runs_with_args_env_info_and_nothing_of_ours),
  T(failures_are_clear),
  T(not_found_names_the_install_hint),
  T(cache_until_expiry_and_after_401),
  T(a_failed_run_is_not_repeated_at_once),
  T(refresh_ahead_runs_on_the_loop),
  {NULL, NULL}
};

TEST_MAIN()
