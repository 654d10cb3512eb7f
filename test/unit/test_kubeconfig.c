/* Tests of kubeconfig.c: good kubeconfigs with certificates and keys made
 * by the openssl tool at test time, in-cluster config, and hostile files
 * that must give clear errors naming the file and the field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>
#include "test/harness.h"
#include "controller/kubeclient/config.h"

/* the temporary directory with the certificates (made once) */
static char dir[256];

static void cleanup(void)
{
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if(dir[0] && system(cmd) != 0)
    fprintf(stderr, "test_kubeconfig: could not remove %s\n", dir);
}

static int setup(void);
static int ready(void)
{
  static int state; /* 0 not yet, 1 ok, -1 failed */
  if(!state) {
    state = setup() == 0 ? 1 : -1;
    atexit(cleanup);
  }
  return state == 1;
}

static void put(const char *name, const char *text)
{
  char p[512];
  FILE *f;
  snprintf(p, sizeof(p), "%s/%s", dir, name);
  f = fopen(p, "w");
  if(f) {
    fputs(text, f);
    fclose(f);
  }
}

static char *slurp_b64(const char *name)
{
  char cmd[600], *buf = calloc(1, 65536);
  FILE *p;
  size_t n;
  snprintf(cmd, sizeof(cmd), "base64 -w0 %s/%s", dir, name);
  p = popen(cmd, "r");
  if(!p || !buf)
    return buf;
  n = fread(buf, 1, 65535, p);
  buf[n] = 0;
  pclose(p);
  return buf;
}

static int setup(void)
{
  char cmd[1200];
  snprintf(dir, sizeof(dir), "/tmp/sc-kc.XXXXXX");
  if(!mkdtemp(dir))
    return -1;
  snprintf(cmd, sizeof(cmd),
           "cd %s && openssl req -x509 -newkey rsa:2048 -nodes -keyout "
           "ca.key -out ca.crt -days 1 -subj /CN=ca >/dev/null 2>&1 && "
           "openssl req -x509 -newkey rsa:2048 -nodes -keyout client.key "
           "-out client.crt -days 1 -subj /CN=client >/dev/null 2>&1 && "
           "openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key "
           "-out other.crt -days 1 -subj /CN=other >/dev/null 2>&1", dir);
  return system(cmd);
}

static sc_err load(const char *text, const char *ctx, kube_conn *c,
                   sc_errbuf *eb)
{
  char p[512];
  if(!ready()) {
    snprintf(eb->msg, sizeof(eb->msg), "openssl could not make the test "
             "certificates");
    return SC_ERR_INTERNAL;
  }
  put("kc", text);
  snprintf(p, sizeof(p), "%s/kc", dir);
  eb->msg[0] = 0;
  return kubeconfig_load(p, ctx, c, eb);
}

#define HEAD "apiVersion: v1\nkind: Config\ncurrent-context: a\n" \
  "contexts:\n- name: a\n  context: {cluster: c, user: u, namespace: ns1}\n" \
  "- name: b\n  context: {cluster: c2, user: u2}\n"

TEST(token_file_ca_file_and_context)
{
  kube_conn c;
  sc_errbuf eb;
  char *tok = NULL;
  CHECK(ready());
  put("tok", "secret-1\n");
  CHECK_OK(load(HEAD "clusters:\n- name: c\n  cluster:\n"
                "    server: https://k.example:6443/\n"
                "    certificate-authority: ca.crt\n"
                "users:\n- name: u\n  user: {tokenFile: tok}\n", NULL, &c,
                &eb));
  CHECK_STR(c.server, "https://k.example:6443");
  CHECK(c.ca_pem && strstr(c.ca_pem, "BEGIN CERTIFICATE"));
  CHECK_STR(c.namespace_, "ns1");
  CHECK(!c.insecure);
  CHECK_OK(kube_conn_token(&c, &tok, &eb));
  CHECK_STR(tok, "secret-1");
  free(tok);
  put("tok", "secret-2\n"); /* rotation: kept for a minute ... */
  {
    kube_auth a, b;
    kube_conn c2;
    CHECK_OK(kube_conn_copy(&c2, &c)); /* copies share the source */
    CHECK_OK(kube_conn_auth(&c2, NULL, &a, &eb));
    CHECK_STR(a.token, "secret-1");
    /* ... or until a 401, which reads it again */
    CHECK(kube_conn_unauthorized(&c2, &a));
    CHECK_OK(kube_conn_auth(&c, NULL, &b, &eb));
    CHECK_STR(b.token, "secret-2");
    CHECK(b.gen != a.gen);
    /* a second 401 of the old credential reads nothing again */
    put("tok", "secret-3\n");
    CHECK(kube_conn_unauthorized(&c, &a));
    kube_auth_clear(&b);
    CHECK_OK(kube_conn_auth(&c, NULL, &b, &eb));
    CHECK_STR(b.token, "secret-2");
    kube_auth_clear(&a);
    kube_auth_clear(&b);
    kube_conn_clear(&c2);
  }
  kube_conn_clear(&c);
}

TEST(client_cert_data_and_insecure)
{
  kube_conn c;
  sc_errbuf eb;
  char *crt = ready() ? slurp_b64("client.crt") : NULL, *key = slurp_b64("client.key");
  char *oth = slurp_b64("other.key");
  char *text = malloc(200000);
  snprintf(text, 200000, HEAD "clusters:\n- name: c2\n  cluster:\n"
           "    server: https://x\n    insecure-skip-tls-verify: true\n"
           "users:\n- name: u2\n  user:\n"
           "    client-certificate-data: %s\n    client-key-data: %s\n",
           crt, key);
  CHECK_OK(load(text, "b", &c, &eb));
  CHECK(c.insecure);
  CHECK(c.cert_pem && strstr(c.cert_pem, "BEGIN CERTIFICATE"));
  CHECK(c.key_pem && strstr(c.key_pem, "PRIVATE KEY"));
  CHECK(c.namespace_ == NULL);
  kube_conn_clear(&c);
  /* a key that is not the certificate's */
  snprintf(text, 200000, HEAD "clusters:\n- name: c2\n  cluster:\n"
           "    server: https://x\n"
           "users:\n- name: u2\n  user:\n"
           "    client-certificate-data: %s\n    client-key-data: %s\n",
           crt, oth);
  CHECK_INT(load(text, "b", &c, &eb), SC_ERR_INVALID);
  CHECK_MSG(strstr(eb.msg, "does not match"), "%s", eb.msg);
  free(crt);
  free(key);
  free(oth);
  free(text);
}

TEST(hostile_kubeconfigs)
{
  static const struct {
    const char *text;
    const char *want;
  } cases[] = {
    {"- a\n- b\n", "top level must be a mapping"},
    {"a: [", "kc:"},
    {"current-context: zz\ncontexts: []\n", "no context named \"zz\""},
    {"contexts: []\n", "no current-context"},
    {HEAD "clusters: {c: 1}\n", "clusters: want a list"},
    {HEAD "clusters:\n- name: c\n  cluster: {}\n", "server is missing"},
    {HEAD "clusters:\n- name: c\n  cluster: {server: ftp://x}\n",
     "want an https://"},
    {HEAD "clusters:\n- name: c\n  cluster: {server: [x]}\n",
     "clusters[0].cluster.server: want a string"},
    {HEAD "clusters:\n- name: c\n  cluster: {server: 'https://x', "
     "insecure-skip-tls-verify: maybe}\n", "want true or false"},
    {HEAD "clusters:\n- name: c\n  cluster: {server: 'https://x', "
     "certificate-authority-data: '!!!'}\n", "not base64"},
    {HEAD "clusters:\n- name: c\n  cluster: {server: 'https://x', "
     "certificate-authority-data: aGVsbG8gd29ybGQh}\n",
     "not a PEM certificate"},
    {HEAD "clusters:\n- name: c\n  cluster: {server: 'https://x', "
     "certificate-authority: /nonexistent/ca.crt}\n", "/nonexistent/ca.crt"},
    {HEAD "clusters:\n- name: c\n  cluster: {server: 'https://x'}\n"
     "users:\n- name: u\n  user: {exec: {command: x}}\n",
     "users[0].user.exec.apiVersion is missing"},
    {HEAD "clusters:\n- name: c\n  cluster: {server: 'https://x'}\n"
     "users:\n- name: u\n  user: {client-certificate: ca.crt}\n",
     "needs its key"},
    {HEAD "clusters:\n- &x name: c\n  cluster: {server: 'https://x'}\n",
     "anchors are not allowed"},
    {"a: &a [1]\nb: *a\n", "anchors are not allowed"},
    {"a: 1\n---\nb: 2\n", "more than one YAML document"},
  };
  size_t i;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kube_conn c;
    sc_errbuf eb;
    sc_err err = load(cases[i].text, NULL, &c, &eb);
    CHECK_MSG(err != SC_OK, "case %zu loaded", i);
    CHECK_MSG(strstr(eb.msg, cases[i].want) && strstr(eb.msg, "/kc"),
              "case %zu: message \"%s\" (want \"%s\" and the file)", i,
              eb.msg, cases[i].want);
  }
}

TEST(huge_and_deep_files)
{
  kube_conn c;
  sc_errbuf eb;
  size_t n = KUBE_FILE_MAX + 10, i;
  char *big = malloc(n + 1);
  memset(big, '#', n);
  big[n] = 0;
  CHECK_INT(load(big, NULL, &c, &eb), SC_ERR_TOO_LARGE);
  CHECK_MSG(strstr(eb.msg, "larger than"), "%s", eb.msg);
  for(i = 0; i < 200; i++)
    big[i] = '[';
  big[200] = 0;
  CHECK(load(big, NULL, &c, &eb) != SC_OK);
  CHECK_MSG(strstr(eb.msg, "levels deep") || strstr(eb.msg, "kc:"), "%s",
            eb.msg);
  free(big);
}

#define EXEC_HEAD HEAD "clusters:\n- name: c\n" \
  "  cluster: {server: 'https://x'}\n" \
  "users:\n- name: u\n  user:\n"

TEST(exec_and_auth_provider_refusals)
{
  static const struct {
    const char *user, *want;
  } cases[] = {
    {"    exec: {command: x}\n", "kc:15: users[0].user.exec.apiVersion is "
     "missing: want client.authentication.k8s.io/v1 or "
     "client.authentication.k8s.io/v1beta1"},
    {"    exec: {apiVersion: client.authentication.k8s.io/v1alpha1, "
     "command: x}\n", "users[0].user.exec.apiVersion \""
     "client.authentication.k8s.io/v1alpha1\" is not supported"},
    {"    exec: {apiVersion: client.authentication.k8s.io/v1beta1}\n",
     "users[0].user.exec.command is missing"},
    {"    exec: {apiVersion: client.authentication.k8s.io/v1, command: x}\n",
     "users[0].user.exec.interactiveMode is missing: apiVersion "
     "client.authentication.k8s.io/v1 needs it"},
    {"    exec: {apiVersion: client.authentication.k8s.io/v1, command: x, "
     "interactiveMode: Always}\n", "users[0].user.exec.interactiveMode "
     "Always is not supported: the plugin would need a terminal"},
    {"    exec: {apiVersion: client.authentication.k8s.io/v1, command: x, "
     "interactiveMode: Sometimes}\n", "interactiveMode \"Sometimes\": want "
     "Never, IfAvailable or Always"},
    {"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: "
     "x, args: x}\n", "users[0].user.exec.args: want a list of strings"},
    {"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: "
     "x, args: [[a]]}\n", "users[0].user.exec.args[0]: want a string"},
    {"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: "
     "x, env: {A: b}}\n", "users[0].user.exec.env: want a list of {name, "
     "value}"},
    {"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: "
     "x, env: [{value: b}]}\n", "users[0].user.exec.env[0].name: missing"},
    {"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: "
     "x, provideClusterInfo: yes}\n", "provideClusterInfo: want true or "
     "false"},
    {"    exec: [x]\n", "users[0].user.exec: want a mapping"},
    {"    token: t\n    exec: {apiVersion: client.authentication.k8s.io/"
     "v1beta1, command: x}\n", "users[0].user: exec and token: use one of "
     "them"},
    {"    auth-provider:\n      name: gcp\n      config: {cmd-path: gcloud}\n",
     "kc:15: users[0].user.auth-provider \"gcp\" is not supported (Kubernetes "
     "clients dropped auth providers): use the exec plugin "
     "gke-gcloud-auth-plugin"},
    {"    auth-provider: {name: azure}\n", "use the exec plugin kubelogin"},
    {"    auth-provider: {name: oidc}\n", "an exec plugin such as kubelogin"},
    {"    auth-provider: {name: other}\n", "use an exec plugin "
     "(gke-gcloud-auth-plugin for GKE, kubelogin for AKS or OIDC, `aws eks "
     "get-token` for EKS)"},
    {"    username: admin\n", "users[0].user.username is not supported"},
    {"    token: \"a\\r\\nX-Injected: 1\"\n", "kc:15: users[0].user.token: a "
     "line break or a control character"},
  };
  size_t i;
  char *text = malloc(4096);
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kube_conn c;
    sc_errbuf eb;
    snprintf(text, 4096, EXEC_HEAD "%s", cases[i].user);
    CHECK_MSG(load(text, NULL, &c, &eb) != SC_OK, "case %zu loaded", i);
    CHECK_MSG(strstr(eb.msg, cases[i].want) && strstr(eb.msg, "/kc"),
              "case %zu: message \"%s\" (want \"%s\" and the file)", i,
              eb.msg, cases[i].want);
  }
  free(text);
}

/* the plugin sees KUBERNETES_EXEC_INFO as kubectl writes it; its relative
 * command is found from the kubeconfig's directory */
TEST(exec_info_and_relative_command)
{
  kube_conn c;
  kube_auth a;
  sc_errbuf eb;
  char *ca = ready() ? slurp_b64("ca.crt") : NULL, *text = malloc(20000);
  char p[512], info[8192], cwd[1024];
  FILE *f;
  size_t n;
  json_object *o, *cl, *v;
  CHECK(ca && text);
  snprintf(p, sizeof(p), "mkdir -p %s/bin", dir);
  CHECK_INT(system(p), 0);
  snprintf(text, 20000, "#!/bin/sh\nprintf '%%s' \"$KUBERNETES_EXEC_INFO\" "
           "> %s/info\necho '{\"apiVersion\":\"client.authentication.k8s.io/"
           "v1beta1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":"
           "\"plug\"}}'\n", dir);
  put("bin/plug", text);
  snprintf(p, sizeof(p), "%s/bin/plug", dir);
  CHECK_INT(chmod(p, 0755), 0);
  snprintf(text, 20000, HEAD "clusters:\n- name: c\n  cluster:\n"
           "    server: https://k.example:6443\n"
           "    certificate-authority-data: %s\n"
           "    tls-server-name: api.internal\n"
           "    extensions:\n"
           "    - name: client.authentication.k8s.io/exec\n"
           "      extension: {audience: sts, n: 3, on: true, l: [1, x], "
           "q: '7'}\n"
           "    - name: other\n      extension: {x: 1}\n"
           "users:\n- name: u\n  user:\n    exec:\n"
           "      apiVersion: client.authentication.k8s.io/v1beta1\n"
           "      command: bin/plug\n      provideClusterInfo: true\n", ca);
  CHECK_MSG(load(text, NULL, &c, &eb) == SC_OK, "%s", eb.msg);
  /* not from our working directory */
  CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
  CHECK_INT(chdir("/"), 0);
  eb.msg[0] = 0;
  n = (size_t)kube_conn_auth(&c, NULL, &a, &eb);
  CHECK_INT(chdir(cwd), 0);
  CHECK_MSG(n == SC_OK, "%s", eb.msg);
  CHECK_STR(a.token, "plug");
  kube_auth_clear(&a);
  kube_conn_clear(&c);
  snprintf(p, sizeof(p), "%s/info", dir);
  f = fopen(p, "r");
  CHECK(f != NULL);
  n = fread(info, 1, sizeof(info) - 1, f);
  fclose(f);
  info[n] = 0;
  o = json_tokener_parse(info);
  CHECK_MSG(o != NULL, "%s", info);
  CHECK_MSG(!strncmp(info, "{\"kind\":\"ExecCredential\",\"apiVersion\":"
                     "\"client.authentication.k8s.io/v1beta1\",\"spec\":{"
                     "\"cluster\":{\"server\":\"https://k.example:6443\","
                     "\"tls-server-name\":\"api.internal\","
                     "\"certificate-authority-data\":\"", 188), "%s", info);
  CHECK(json_object_object_get_ex(o, "spec", &v) &&
        json_object_object_get_ex(v, "cluster", &cl));
  CHECK(json_object_object_get_ex(cl, "certificate-authority-data", &v));
  CHECK_STR(json_object_get_string(v), ca);
  CHECK(json_object_object_get_ex(cl, "config", &v));
  CHECK_STR(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN),
            "{\"audience\":\"sts\",\"n\":3,\"on\":true,\"l\":[1,\"x\"],"
            "\"q\":\"7\"}");
  CHECK_MSG(strstr(info, "},\"interactive\":false}}"), "%s", info);
  json_object_put(o);
  free(ca);
  free(text);
}

TEST(in_cluster)
{
  kube_conn c;
  sc_errbuf eb;
  char sa[300], cmd[2400];
  char *tok = NULL;
  CHECK(ready());
  snprintf(sa, sizeof(sa), "%s/sa", dir);
  snprintf(cmd, sizeof(cmd), "mkdir -p %s && cp %s/ca.crt %s/ca.crt && "
           "printf 'tok-a' > %s/token && printf 'team-x\\n' > %s/namespace",
           sa, dir, sa, sa, sa);
  CHECK_INT(system(cmd), 0);
  unsetenv("KUBERNETES_SERVICE_HOST");
  eb.msg[0] = 0;
  CHECK_INT(kube_incluster_load(sa, &c, &eb), SC_ERR_INVALID);
  CHECK(strstr(eb.msg, "KUBERNETES_SERVICE_HOST") != NULL);
  setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  CHECK_OK(kube_incluster_load(sa, &c, &eb));
  CHECK_STR(c.server, "https://10.0.0.1:443");
  CHECK_STR(c.namespace_, "team-x");
  CHECK_OK(kube_conn_token(&c, &tok, &eb));
  CHECK_STR(tok, "tok-a");
  free(tok);
  kube_conn_clear(&c);
  setenv("KUBERNETES_SERVICE_PORT", "44x", 1);
  CHECK_INT(kube_incluster_load(sa, &c, &eb), SC_ERR_INVALID);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
}

TEST_LIST = {
  T(token_file_ca_file_and_context),
  T(client_cert_data_and_insecure),
  T(hostile_kubeconfigs),
  T(huge_and_deep_files),
  T(exec_and_auth_provider_refusals),
  T(exec_info_and_relative_command),
  T(in_cluster),
  {NULL, NULL}
};

TEST_MAIN()
