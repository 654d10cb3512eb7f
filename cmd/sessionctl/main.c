/* main.c - sessionctl: the command line of session-controller (kubectl
 * for Session objects). Global flags, then one command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ctl.h"

const char ctl_usage_text[] =
  "sessionctl manages Session objects in a session-controller store.\n"
  "\n"
  "Usage:\n"
  "  sessionctl [--store URL] COMMAND [flags]\n"
  "\n"
  "Commands:\n"
  "  apply -f FILE|DIR|-       create or update sessions from manifests "
  "(all or nothing)\n"
  "  get sessions [NAME...]    list sessions (-n NS | -A, -o wide|json|yaml|"
  "name, -w)\n"
  "  describe session NAME     show a session's spec, status and "
  "conditions\n"
  "  delete session NAME...    delete sessions (or delete -f FILE)\n"
  "  validate -f FILE|DIR|-    check manifests offline; never opens a "
  "store\n"
  "  wake NAME                 bump spec.wake: ask for a new sandbox after "
  "a reclaim\n"
  "  plan                      what the controller would do now, and why "
  "(read-only)\n"
  "\n"
  "Global flags (accepted before or after the command):\n"
  "  --store URL      the store: sqlite:PATH (default from $SESSION_STORE, "
  "else\n"
  "                   " CTL_DEFAULT_STORE "); only apply creates a store\n"
  "                   that does not exist (and says so on stderr)\n"
  "  -h, --help       help for sessionctl or for a command\n"
  "  --version        print the version and exit\n"
  "\n"
  "Exit status: 0 success, 1 the operation failed, 2 bad command line.\n"
  "Run 'sessionctl COMMAND --help' for a command's flags.\n";

static const struct {
  const char *name;
  int (*fn)(ctl_env *env, int argc, char **argv);
} commands[] = {
  {"apply", ctl_cmd_apply},       {"get", ctl_cmd_get},
  {"describe", ctl_cmd_describe}, {"delete", ctl_cmd_delete},
  {"validate", ctl_cmd_validate}, {"wake", ctl_cmd_wake},
  {"plan", ctl_cmd_plan},
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
