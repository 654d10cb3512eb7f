/* cmd_apply.c - `sessionctl apply -f FILE|DIR|-` (all or nothing) and
 * `sessionctl validate -f ...` (the same reading, offline). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/manifest.h"
#include "api/policy.h"
#include "controller/store/store.h"
#include "cmd/sessionctl/ctl.h"

#define MAX_FILES 256

static const char apply_help[] =
  "Create or update sessions from manifests, all or nothing.\n"
  "\n"
  "Every document of every file is read and validated first. If any is\n"
  "invalid, every error is printed (FILE:LINE:COL: FIELD: message), then\n"
  "\"error: no objects applied (N errors)\"; nothing is written and the\n"
  "store is not even opened. Otherwise all objects are applied in one\n"
  "transaction and one line is printed per object, in input order:\n"
  "session/NAME created|configured|unchanged.\n"
  "\n"
  "A sqlite store that does not exist is created (\"created store\n"
  "sqlite:PATH\" on stderr), but only with the objects: input without\n"
  "any is an error and creates nothing (sessionctl store init makes an\n"
  "empty store).\n"
  "\n"
  "A manifest is YAML or JSON: a Session, or a List (or SessionList) of\n"
  "them, as `sessionctl get -o yaml|json` prints them, so\n"
  "`sessionctl get sessions -A -o json | sessionctl apply -f -` changes\n"
  "nothing. Status in the input is ignored (only the controller writes\n"
  "it), and so is the metadata the store sets: uid, resourceVersion,\n"
  "generation, creationTimestamp, deletionTimestamp,\n"
  "deletionGracePeriodSeconds, finalizers, managedFields, selfLink.\n"
  "\n"
  "Usage:\n"
  "  sessionctl apply -f FILE|DIR|- [-f ...] [--store URL] [--policy FILE]\n"
  "\n"
  "Flags:\n"
  "  -f, --filename PATH   a manifest file, a directory (its *.yaml, *.yml "
  "and\n"
  "                        *.json files, not recursive) or - for stdin; "
  "repeatable;\n"
  "                        at most 1 MiB each\n"
  "      --store URL       sqlite:PATH or kube[:CONTEXT], see sessionctl --help\n"
  "                        (default $SESSION_STORE, else " CTL_DEFAULT_STORE ")\n"
  "      --policy FILE     also judge every object by the tenant policy\n"
  "                        (kind: TenantPolicy, as session-controller\n"
  "                        --policy reads it): a spec it refuses is an\n"
  "                        error at its field. Judged by the file alone:\n"
  "                        the controller's --workspace-root, --egress-*\n"
  "                        and --volume-policy flags are not known here, so\n"
  "                        put the whole policy in the file's defaults\n"
  "  -h, --help            this help\n";

static const char validate_help[] =
  "Check manifests offline: read and validate them as apply would, without\n"
  "opening any store. Prints every error (FILE:LINE:COL: FIELD: message)\n"
  "and then \"error: N errors in M objects read\" (M counts the invalid\n"
  "objects too), or \"N objects valid\". Exits 1 when anything is invalid\n"
  "or no object was found.\n"
  "\n"
  "Usage:\n"
  "  sessionctl validate -f FILE|DIR|- [-f ...] [--policy FILE]\n"
  "\n"
  "Flags:\n"
  "  -f, --filename PATH   a manifest file (YAML or JSON), a directory or - "
  "for\n"
  "                        stdin; repeatable\n"
  "      --policy FILE     also judge every object by the tenant policy\n"
  "                        (kind: TenantPolicy, as session-controller\n"
  "                        --policy reads it): a spec it refuses is an\n"
  "                        error at its field. Judged by the file alone:\n"
  "                        the controller's --workspace-root, --egress-*\n"
  "                        and --volume-policy flags are not known here, so\n"
  "                        put the whole policy in the file's defaults\n"
  "  -h, --help            this help\n";

enum { OPT_FILE = 1, OPT_POLICY };

static const ctl_opt file_opts[] = {
  {"filename", 'f', true, OPT_FILE},
  {"policy", 0, true, OPT_POLICY},
  {NULL, 0, false, 0}
};

/* Parse "-f X" flags into files and --policy into *pol (loaded); returns
 * -1 to go on, else an exit code. */
static int parse_files(ctl_env *env, int argc, char **argv, const char *help,
                       const char **files, size_t *n_files, policy **pol)
{
  sc_errbuf eb;
  ctl_args p;
  const char *val;
  int id, rc;
  ctl_args_init(&p, argc, argv, file_opts);
  *n_files = 0;
  while((id = ctl_args_step(&p, env, help, NULL, &val, &rc)) !=
        CTL_ARG_END) {
    switch(id) {
    case CTL_ARG_EXIT:
      return rc;
    case CTL_ARG_POS:
      return ctl_usage_error("%s: unexpected argument \"%s\" (use -f)",
                             argv[0], val);
    case OPT_FILE:
      if(!*val)
        return ctl_usage_error("%s: -f needs a non-empty path", argv[0]);
      if(*n_files >= MAX_FILES)
        return ctl_usage_error("%s: more than %d -f flags", argv[0],
                               MAX_FILES);
      files[(*n_files)++] = val;
      break;
    case OPT_POLICY:
      if(*pol)
        return ctl_usage_error("%s: --policy given twice", argv[0]);
      eb.msg[0] = '\0';
      if(policy_load(NULL, val, pol, &eb)) {
        fprintf(stderr, "error: %s\n", eb.msg);
        return CTL_EXIT_FAIL;
      }
      break;
    default:
      return ctl_usage_error("%s: unexpected flag", argv[0]);
    }
  }
  if(!*n_files)
    return ctl_usage_error("%s: must specify -f FILE|DIR|-", argv[0]);
  return -1;
}

int ctl_cmd_validate(ctl_env *env, int argc, char **argv)
{
  const char *files[MAX_FILES];
  size_t n_files, n_err;
  manifest_set set;
  policy *pol = NULL;
  int rc = parse_files(env, argc, argv, validate_help, files, &n_files,
                       &pol);
  if(rc >= 0) {
    policy_free(pol);
    return rc;
  }
  memset(&set, 0, sizeof(set));
  n_err = ctl_read_manifests(files, n_files, pol, &set);
  policy_free(pol);
  if(n_err) {
    fprintf(stderr, "error: %zu error%s in %zu object%s read\n", n_err,
            n_err == 1 ? "" : "s", set.n_read, set.n_read == 1 ? "" : "s");
    rc = CTL_EXIT_FAIL;
  }
  else if(!set.n) {
    fprintf(stderr, "error: no objects found\n");
    rc = CTL_EXIT_FAIL;
  }
  else {
    printf("%zu object%s valid\n", set.n, set.n == 1 ? "" : "s");
    rc = CTL_EXIT_OK;
  }
  manifest_set_free(&set);
  return rc;
}

/* Every error is "no objects" (the inputs are empty): apply cannot make
 * an empty store, store init can, and the error says so. */
static bool only_empty_sources(const manifest_set *set)
{
  size_t i, k = strlen(MANIFEST_MSG_NO_OBJECTS);
  if(!set->n_errors || set->n_read)
    return false;
  for(i = 0; i < set->n_errors; i++) {
    size_t n = strlen(set->errors[i]);
    if(n < k || strcmp(set->errors[i] + n - k, MANIFEST_MSG_NO_OBJECTS))
      return false;
  }
  return true;
}

int ctl_cmd_apply(ctl_env *env, int argc, char **argv)
{
  const char *files[MAX_FILES];
  size_t n_files, n_err, i;
  manifest_set set;
  session **objs = NULL;
  store_apply_outcome *outcomes = NULL;
  store *st = NULL;
  sc_errbuf eb;
  sc_err err;
  policy *pol = NULL;
  int rc = parse_files(env, argc, argv, apply_help, files, &n_files, &pol);
  if(rc >= 0) {
    policy_free(pol);
    return rc;
  }
  memset(&set, 0, sizeof(set));
  n_err = ctl_read_manifests(files, n_files, pol, &set);
  policy_free(pol);
  if(n_err) {
    fprintf(stderr, "error: no objects applied (%zu error%s)%s\n", n_err,
            n_err == 1 ? "" : "s",
            only_empty_sources(&set)
              ? "; nothing was written (to make an empty store: "
                "sessionctl store init)" : "");
    rc = CTL_EXIT_FAIL;
    goto out;
  }
  if(!set.n) {
    fprintf(stderr, "error: no objects passed to apply (nothing written; "
            "sessionctl store init makes an empty store)\n");
    rc = CTL_EXIT_FAIL;
    goto out;
  }
  objs = calloc(set.n, sizeof(*objs));
  outcomes = calloc(set.n, sizeof(*outcomes));
  if(!objs || !outcomes) {
    fprintf(stderr, "error: out of memory\n");
    rc = CTL_EXIT_FAIL;
    goto out;
  }
  for(i = 0; i < set.n; i++)
    objs[i] = set.items[i].s;
  /* only now, with every object valid, is the store opened */
  st = ctl_open_store(env, NULL, true);
  if(!st) {
    rc = CTL_EXIT_FAIL;
    goto out;
  }
  eb.msg[0] = 0;
  err = store_apply(st, objs, set.n, outcomes, &eb);
  if(err) {
    ctl_store_error(err, &eb);
    fprintf(stderr, "error: no objects applied\n");
    rc = CTL_EXIT_FAIL;
    goto out;
  }
  for(i = 0; i < set.n; i++) {
    const char *what = outcomes[i] == STORE_APPLY_CREATED      ? "created"
                       : outcomes[i] == STORE_APPLY_CONFIGURED ? "configured"
                                                               : "unchanged";
    printf("session/%s %s\n", objs[i]->meta.name, what);
  }
  rc = fflush(stdout) ? CTL_EXIT_FAIL : CTL_EXIT_OK;
out:
  store_close(st);
  free(objs);
  free(outcomes);
  manifest_set_free(&set);
  return rc;
}
