/* cmd_store.c - `sessionctl store init`: make an empty SQLite store on
 * purpose (docs/store.md, "Which store"). Every other command but apply
 * refuses a store that does not exist, so a mistyped path never looks
 * like a store without sessions; this is the one way to make a store
 * that holds none yet. */
#include <stdio.h>
#include <string.h>
#include "controller/store/store.h"
#include "cmd/sessionctl/ctl.h"

#define MAX_POS 8

static const char store_help[] =
  "Manage the store itself.\n"
  "\n"
  "Usage:\n"
  "  sessionctl store init [--store URL]\n"
  "\n"
  "Subcommands:\n"
  "  init   Make an empty SQLite store (mode 0600) at the path of --store,\n"
  "         so that a controller started without --create-store, and the\n"
  "         commands that only read (get, get -w, describe, plan), can open\n"
  "         it before any session exists. Prints \"store sqlite:PATH\n"
  "         created\"; when a store is already there it is left as it is\n"
  "         (sessions kept) and \"store sqlite:PATH unchanged\" is printed.\n"
  "         Exit 0 both times. A file there that is not a session store, a\n"
  "         directory that does not exist, or a kube store: an error, exit\n"
  "         1, and nothing is created or changed. Only this and apply ever\n"
  "         create a store; no other command does.\n"
  "\n"
  "A kube store is the API server's sessions.lea.io CRD: it is made with\n"
  "kubectl apply -f deploy/crd.yaml (docs/deploy.md), not here.\n"
  "\n"
  "Flags:\n"
  "      --store URL   sqlite:PATH, see sessionctl --help\n"
  "                    (default $SESSION_STORE, else " CTL_DEFAULT_STORE ")\n"
  "  -h, --help        this help\n";

static const ctl_opt store_opts[] = {{NULL, 0, false, 0}};

/* "kube" or "kube:CONTEXT", options after '?' aside */
static bool is_kube_url(const char *url)
{
  size_t n = strcspn(url, "?");
  return (n == 4 || (n > 4 && url[4] == ':')) && !strncmp(url, "kube", 4);
}

static int store_init(const ctl_env *env)
{
  bool created = false;
  store *st;
  if(is_kube_url(env->store_url)) {
    fprintf(stderr, "error: store init makes SQLite stores; a kube store "
            "(%s) is the API server's sessions.lea.io CRD: make it with "
            "kubectl apply -f deploy/crd.yaml\n", env->store_url);
    return CTL_EXIT_FAIL;
  }
  if(!(st = ctl_init_store(env, &created)))
    return CTL_EXIT_FAIL;
  printf("store %s %s\n", store_url(st), created ? "created" : "unchanged");
  store_close(st);
  return fflush(stdout) ? CTL_EXIT_FAIL : CTL_EXIT_OK;
}

int ctl_cmd_store(ctl_env *env, int argc, char **argv)
{
  const char *pos[MAX_POS], *val;
  size_t n_pos = 0;
  ctl_args p;
  int id, rc;
  ctl_args_init(&p, argc, argv, store_opts);
  while((id = ctl_args_step(&p, env, store_help, NULL, &val, &rc)) !=
        CTL_ARG_END) {
    if(id == CTL_ARG_EXIT)
      return rc;
    if(id != CTL_ARG_POS)
      return ctl_usage_error("store: unexpected flag");
    if(n_pos >= MAX_POS)
      return ctl_usage_error("store: too many arguments");
    pos[n_pos++] = val;
  }
  if(!n_pos)
    return ctl_usage_error("store: a subcommand is required (init)");
  if(strcmp(pos[0], "init"))
    return ctl_usage_error("unknown command \"%s\" for \"sessionctl store\" "
                           "(known: init)", pos[0]);
  if(n_pos > 1)
    return ctl_usage_error("store init: unexpected argument \"%s\" (the "
                           "store is given by --store)", pos[1]);
  return store_init(env);
}
