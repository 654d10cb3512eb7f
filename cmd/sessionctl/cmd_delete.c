/* cmd_delete.c - `sessionctl delete session NAME... | -f FILE` and
 * `sessionctl wake NAME` (bump spec.wake with compare-and-set). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/manifest.h"
#include "controller/store/store.h"
#include "cmd/sessionctl/ctl.h"

#define MAX_ARGS 256
#define WAKE_ATTEMPTS 5

static const char delete_help[] =
  "Delete sessions. A deleted session leaves a tombstone that the\n"
  "controller sees, so that it deletes the sandbox; `get` no longer shows\n"
  "it and watchers see a DELETED event.\n"
  "\n"
  "Usage:\n"
  "  sessionctl delete session NAME... [-n NS]\n"
  "  sessionctl delete session/NAME ...\n"
  "  sessionctl delete -f FILE|DIR|- [-f ...]   (the objects the manifests "
  "name)\n"
  "\n"
  "Either the type and then NAMEs, or every argument TYPE/NAME, as\n"
  "kubectl: the two forms do not mix (\"session session/a\" and\n"
  "\"session/a b\" are usage errors), TYPE/NAME has one slash and both\n"
  "sides, and TYPE is sessions, session, sess, sessions.lea.io or\n"
  "session.lea.io.\n"  "\n"
  "A session that does not exist prints a NotFound error; the others are\n"
  "still deleted and the exit status is 1.\n"
  "\n"
  "Flags:\n"
  "  -n, --namespace NS      the namespace (default \"default\")\n"
  "  -f, --filename PATH     delete the sessions named in these manifests; "
  "repeatable\n"
  "      --ignore-not-found  a missing session is not an error\n"
  "      --store URL         sqlite:PATH or kube[:CONTEXT], see sessionctl --help\n"
  "                          (default $SESSION_STORE, else " CTL_DEFAULT_STORE ")\n"
  "  -h, --help              this help\n";

static const char wake_help[] =
  "Ask for a new sandbox after a reclaim: bump spec.wake (and so\n"
  "metadata.generation) of a Reclaimed session, with compare-and-set,\n"
  "retrying up to 5 times when another writer got there first. Prints\n"
  "session/NAME woken (wake=N).\n"
  "\n"
  "A reclaim records the generation it happened at (status.\n"
  "reclaimedGeneration); the session gets a new sandbox once its generation\n"
  "is past that. A session that is not Reclaimed (it has a sandbox, or is\n"
  "getting one) is left alone: nothing is written, a line on stderr says\n"
  "why, and the exit status is 0 - a bump now would change nothing, since\n"
  "a later reclaim records the bumped generation. The same when a wake is\n"
  "already pending (generation past reclaimedGeneration, the controller not\n"
  "there yet), so running wake twice bumps once.\n"
  "\n"
  "Usage:\n"
  "  sessionctl wake NAME... [-n NS] [--force]\n"
  "  sessionctl wake session NAME... | session/NAME ...\n"
  "\n"
  "The type may be left out (wake NAME...): a first argument that is not a\n"
  "sessions spelling, or a lone argument, is a NAME. Otherwise the forms\n"
  "are those of get and delete: TYPE/NAME does not mix with NAMEs.\n"
  "\n"
  "Flags:\n"
  "  -n, --namespace NS   the namespace (default \"default\")\n"
  "      --force          bump spec.wake whatever the status says\n"
  "      --store URL      sqlite:PATH or kube[:CONTEXT], see sessionctl --help\n"
  "                       (default $SESSION_STORE, else " CTL_DEFAULT_STORE ")\n"
  "  -h, --help           this help\n"
  "\n"
  "Exit status: 0 woken or nothing to wake, 1 a session is missing or the\n"
  "store failed, 2 usage.\n";

enum { OPT_NS = 1, OPT_FILE, OPT_IGNORE, OPT_FORCE };

/* Delete ns/name; prints the outcome; returns an exit status. */
static int delete_one(store *st, const char *ns, const char *name,
                      bool ignore_missing)
{
  session *s = NULL;
  sc_errbuf eb;
  sc_err err;
  eb.msg[0] = 0;
  err = ctl_get_session(st, ns, name, &s, &eb);
  session_free(s);
  if(!err)
    err = store_delete(st, ns, name, &eb);
  if(err == SC_ERR_NOT_FOUND) {
    if(ignore_missing)
      return CTL_EXIT_OK;
    ctl_not_found(name);
    return CTL_EXIT_FAIL;
  }
  if(err)
    return ctl_store_error(err, &eb);
  printf("session \"%s\" deleted\n", name);
  return CTL_EXIT_OK;
}

int ctl_cmd_delete(ctl_env *env, int argc, char **argv)
{
  static const ctl_opt opts[] = {
    {"namespace", 'n', true, OPT_NS},
    {"filename", 'f', true, OPT_FILE},
    {"ignore-not-found", 0, false, OPT_IGNORE},
    {NULL, 0, false, 0}
  };
  const char *files[MAX_ARGS];
  size_t n_files = 0, i;
  const char *val, *ns = SESSION_DEFAULT_NAMESPACE;
  bool ignore = false;
  ctl_resources res;
  manifest_set set;
  ctl_args p;
  store *st;
  int id, rc = CTL_EXIT_OK, r;

  memset(&res, 0, sizeof(res));
  ctl_args_init(&p, argc, argv, opts);
  while((id = ctl_args_step(&p, env, delete_help, &res, &val,
                            &rc)) != CTL_ARG_END) {
    switch(id) {
    case CTL_ARG_EXIT:
      return rc;
    case OPT_NS:
      ns = val;
      break;
    case OPT_IGNORE:
      ignore = true;
      break;
    case OPT_FILE:
      if(n_files >= MAX_ARGS || !*val)
        return ctl_usage_error("delete: bad or too many -f flags");
      files[n_files++] = val;
      break;
    default:
      return ctl_usage_error("delete: unexpected flag");
    }
  }
  if(ctl_resources_parse(&res, "delete", false))
    return CTL_EXIT_USAGE;
  if(n_files && res.n_args)
    return ctl_usage_error("delete: give either -f or session NAMEs, not "
                           "both");
  if(res.have_type && !res.n_names)
    return ctl_usage_error("delete: resource(s) were provided, but no name "
                           "was specified: delete session NAME...");
  if(!n_files && !res.n_names)
    return ctl_usage_error("delete: give session NAME... or -f FILE");
  if(!ctl_check_namespace(ns))
    return CTL_EXIT_USAGE;

  memset(&set, 0, sizeof(set));
  if(n_files && ctl_read_manifests(files, n_files, NULL, &set)) {
    fprintf(stderr, "error: no objects deleted (invalid manifests)\n");
    manifest_set_free(&set);
    return CTL_EXIT_FAIL;
  }
  st = ctl_open_store(env, NULL, false);
  if(!st) {
    manifest_set_free(&set);
    return CTL_EXIT_FAIL;
  }
  for(i = 0; i < res.n_names; i++) {
    r = delete_one(st, ns, res.names[i], ignore);
    if(r)
      rc = r;
  }
  for(i = 0; i < set.n; i++) {
    const session *s = set.items[i].s;
    r = delete_one(st, s->meta.namespace_, s->meta.name, ignore);
    if(r)
      rc = r;
  }
  store_close(st);
  manifest_set_free(&set);
  return rc;
}

/* The planner's Reclaimed rule (docs/planner.md, "Reclaimed"): a reclaim
 * recorded reclaimedGeneration = max(generation, 1), and the session gets
 * no new sandbox while max(generation, 1) <= reclaimedGeneration. */
static bool is_reclaimed(const session *s)
{
  int64_t gen = s->meta.generation > 0 ? s->meta.generation : 1;
  return s->status.reclaimed_generation > 0 &&
         gen <= s->status.reclaimed_generation;
}

/* Why s needs no wake (stderr), for a session that is not Reclaimed. */
static void say_not_reclaimed(const char *ns, const session *s)
{
  const char *name = s->meta.name;
  long long wake = (long long)s->spec.wake;
  if(s->status.reclaimed_generation > 0 &&
     s->status.phase == SESSION_PHASE_RECLAIMED) {
    fprintf(stderr, "session %s/%s is already woken (generation %lld is past "
            "reclaimedGeneration %lld): the controller creates its sandbox "
            "on its next pass; spec.wake left at %lld\n", ns, name,
            (long long)s->meta.generation,
            (long long)s->status.reclaimed_generation, wake);
    return;
  }
  if(s->status.phase == SESSION_PHASE_NONE)
    fprintf(stderr, "session %s/%s has no status yet (no controller has "
            "seen it), so it is not Reclaimed: nothing to wake; spec.wake "
            "left at %lld (--force bumps it anyway)\n", ns, name, wake);
  else
    fprintf(stderr, "session %s/%s is %s, not Reclaimed: nothing to wake; "
            "spec.wake left at %lld (wake asks for a new sandbox after a "
            "reclaim; --force bumps it anyway)\n", ns, name,
            session_phase_name(s->status.phase), wake);
}

/* arg: bool, --force */
static int wake_one(store *st, const char *ns, const char *name, void *arg)
{
  bool force = *(const bool *)arg;
  int attempt;
  sc_errbuf eb;
  sc_err err = SC_OK;
  for(attempt = 0; attempt < WAKE_ATTEMPTS; attempt++) {
    session *s = NULL;
    session_spec spec;
    char *newver = NULL;
    int64_t wake;
    eb.msg[0] = 0;
    err = ctl_get_session(st, ns, name, &s, &eb);
    if(err)
      break;
    if(!force && !is_reclaimed(s)) {
      say_not_reclaimed(ns, s);
      session_free(s);
      return CTL_EXIT_OK;
    }
    memset(&spec, 0, sizeof(spec));
    err = session_spec_copy(&spec, &s->spec);
    if(!err) {
      spec.wake = s->spec.wake + 1;
      wake = spec.wake;
      err = store_update_spec(st, ns, name, s->meta.resource_version, &spec,
                              &newver, &eb);
      if(!err)
        printf("session/%s woken (wake=%lld)\n", name, (long long)wake);
    }
    session_spec_clear(&spec);
    session_free(s);
    free(newver);
    if(err != SC_ERR_CONFLICT)
      break;
  }
  if(err == SC_ERR_NOT_FOUND) {
    ctl_not_found(name);
    return CTL_EXIT_FAIL;
  }
  if(err == SC_ERR_CONFLICT) {
    fprintf(stderr, "error: session \"%s\" kept changing under us (%d "
            "conflicts); try again\n", name, WAKE_ATTEMPTS);
    return CTL_EXIT_FAIL;
  }
  if(err)
    return ctl_store_error(err, &eb);
  return CTL_EXIT_OK;
}

int ctl_cmd_wake(ctl_env *env, int argc, char **argv)
{
  static const ctl_opt opts[] = {{"namespace", 'n', true, OPT_NS},
                                 {"force", 0, false, OPT_FORCE},
                                 {NULL, 0, false, 0}};
  const char *val, *ns = SESSION_DEFAULT_NAMESPACE;
  bool force = false;
  ctl_resources res;
  ctl_args p;
  int id, rc;

  memset(&res, 0, sizeof(res));
  ctl_args_init(&p, argc, argv, opts);
  while((id = ctl_args_step(&p, env, wake_help, &res, &val,
                            &rc)) != CTL_ARG_END) {
    switch(id) {
    case CTL_ARG_EXIT:
      return rc;
    case OPT_NS:
      ns = val;
      break;
    case OPT_FORCE:
      force = true;
      break;
    default:
      return ctl_usage_error("wake: unexpected flag");
    }
  }
  if(ctl_resources_parse(&res, "wake", true))
    return CTL_EXIT_USAGE;
  if(!res.n_names)
    return ctl_usage_error("wake: give a session NAME");
  return ctl_each_name(env, ns, &res, wake_one, &force);
}
