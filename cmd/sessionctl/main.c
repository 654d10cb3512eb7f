/* main.c - sessionctl: the command line of session-controller (kubectl
 * for Session objects). Global flags, then one command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/sessionctl/ctl.h"

const char ctl_usage_text[] =
  "sessionctl manages Session objects in a session-controller store.\n"
  "\n"
  "Usage:\n"
  "  sessionctl [--store URL] COMMAND [flags]\n"
  "\n"
  "Commands:\n"
  "  apply -f FILE|DIR|-     create or update sessions from YAML or JSON\n"
  "                          manifests (all or nothing)\n"
  "  get sessions [NAME...]  list sessions (-n NS | -A, -o wide|json|yaml|name|\n"
  "                          jsonpath=TEMPLATE, -w)\n"
  "  describe session NAME   show a session's spec, status and conditions\n"
  "  delete session NAME...  delete sessions (or delete -f FILE)\n"
  "  validate -f FILE|DIR|-  check manifests offline; never opens a store\n"
  "  wake NAME               ask for a new sandbox for a Reclaimed session\n"
  "                          (bumps spec.wake)\n"
  "  plan                    what the controller would do now, and why\n"
  "                          (read-only)\n"
  "  connect NAME            ask for a running sandbox (the lea.io/connect\n"
  "                          annotation) and wait for the controller's\n"
  "                          answer; prints its address (-f MANIFEST creates\n"
  "                          the session, --timeout, -o json|yaml|name)\n"
  "  wait NAME --for=C       wait for condition=TYPE[=VALUE], jsonpath=\n"
  "                          '{EXPR}'=VALUE or delete (--timeout), as kubectl\n"
  "  store init              make an empty SQLite store at the --store path\n"
  "                          (\"unchanged\" when one is there already)\n"
  "\n"
  "Global flags:\n"
  "  --store URL     where the sessions live, before or after the command\n"
  "                  (default $SESSION_STORE, else " CTL_DEFAULT_STORE "):\n"
  "    sqlite:PATH   a SQLite database file (mode 0600); only store init\n"
  "                  (an empty one) and apply (saying so on stderr) create\n"
  "                  one that does not exist; the other commands refuse it\n"
  "    kube          the Kubernetes API server (the sessions.lea.io CRD), with\n"
  "                  the current context of the kubeconfig in $KUBECONFIG (its\n"
  "                  first file), else the in-cluster service account (when\n"
  "                  $KUBERNETES_SERVICE_HOST is set), else ~/.kube/config\n"
  "    kube:CONTEXT  the same kubeconfig with that context (never in-cluster)\n"
  "                  Options after '?', for tests and tuning:\n"
  "                  sqlite:PATH?history=N&poll_ms=N&busy_timeout_ms=N,\n"
  "                  kube?watch_timeout=SECONDS\n"
  "  -h, --help      help for sessionctl, or for the command it follows\n"
  "  --version       print the version and exit (before any command)\n"
  "\n"
  "Exit status: 0 success, 1 the operation failed, 2 bad command line,\n"
  "3 connect or wait timed out (--timeout).\n"
  "Run 'sessionctl COMMAND --help' for a command's flags.\n";

static const struct {
  const char *name;
  int (*fn)(ctl_env *env, int argc, char **argv);
} commands[] = {
  {"apply", ctl_cmd_apply},       {"get", ctl_cmd_get},
  {"describe", ctl_cmd_describe}, {"delete", ctl_cmd_delete},
  {"validate", ctl_cmd_validate}, {"wake", ctl_cmd_wake},
  {"plan", ctl_cmd_plan},          {"connect", ctl_cmd_connect},
  {"wait", ctl_cmd_wait},          {"store", ctl_cmd_store},
  {NULL, NULL}
};

int main(int argc, char **argv)
{
  ctl_env env;
  const char *e = getenv("SESSION_STORE");
  int i;

  env.store_url = e && *e ? e : CTL_DEFAULT_STORE;
  for(i = 1; i < argc; i++) {
    const char *a = argv[i];
    size_t c;
    if(!strcmp(a, "-h") || !strcmp(a, "--help") || !strcmp(a, "help")) {
      fputs(ctl_usage_text, stdout);
      return CTL_EXIT_OK;
    }
    if(!strcmp(a, "--version") || !strcmp(a, "version")) {
      printf("sessionctl %s\n", CTL_VERSION);
      return CTL_EXIT_OK;
    }
    if(!strcmp(a, "--store")) {
      if(i + 1 >= argc)
        return ctl_usage_error("flag needs an argument: --store");
      env.store_url = argv[++i];
      continue;
    }
    if(!strncmp(a, "--store=", 8)) {
      env.store_url = a + 8;
      continue;
    }
    if(a[0] == '-')
      return ctl_usage_error("unknown flag: %s", a);
    for(c = 0; commands[c].name; c++)
      if(!strcmp(a, commands[c].name))
        return commands[c].fn(&env, argc - i, argv + i);
    return ctl_usage_error("unknown command \"%s\" for \"sessionctl\"", a);
  }
  fputs(ctl_usage_text, stderr);
  return ctl_usage_error("no command given");
}
