/* cmd_delete.c - `sessionctl delete session NAME... | -f FILE` and
 * `sessionctl wake NAME` (bump spec.wake with compare-and-set). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "api/manifest.h"
#include "lib/sctime.h"
#include "controller/store/store.h"
#include "cmd/sessionctl/ctl.h"
#include "cmd/sessionctl/follow.h"

#define MAX_ARGS 256
#define DELETE_POLL_MS 200
#define WAKE_ATTEMPTS 5

static const char delete_help[] =
  "Delete sessions, and wait until they are gone (as kubectl delete).\n"
  "A deleted session is marked deleted at once (watchers see a DELETED\n"
  "event, the controller deletes its sandbox) but stays in the store,\n"
  "phase Terminating in get and describe, until the controller has\n"
  "confirmed its sandbox gone (the controller's finalizer; a session no\n"
  "controller has taken on is gone at once). Its name is held until then:\n"
  "an apply of that name answers \"the object is being deleted\", so that\n"
  "the old session's sandbox can never be mistaken for the new one's.\n"
  "\n"
  "Usage:\n"
  "  sessionctl delete session NAME... [-n NS] [--wait=false] [--timeout D]\n"
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
  "still deleted and the exit status is 1. A session already being deleted\n"
  "is deleted again (nothing changes) and waited for.\n"
  "\n"
  "Flags:\n"
  "  -n, --namespace NS      the namespace (default \"default\")\n"
  "  -f, --filename PATH     delete the sessions named in these manifests; "
  "repeatable\n"
  "      --ignore-not-found  a missing session is not an error\n"
  "      --wait[=true|false] wait until the sessions are gone from the store\n"
  "                          (default true); --wait=false returns once they\n"
  "                          are marked deleted\n"
  "      --timeout D         give up waiting after D (30s, 2m; default 0: as\n"
  "                          long as it takes); the sessions stay deleted\n"
  "      --store URL         sqlite:PATH or kube[:CONTEXT], see sessionctl --help\n"
  "                          (default $SESSION_STORE, else " CTL_DEFAULT_STORE ")\n"
  "  -h, --help              this help\n"
  "\n"
  "Exit status: 0 deleted (and gone, when waiting), 1 a session is missing\n"
  "or the store failed, 2 usage, 3 --timeout passed before every session was\n"
  "gone (\"error: timed out waiting\" names them; they are still deleted and\n"
  "the controller goes on).\n";

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

enum { OPT_NS = 1, OPT_FILE, OPT_IGNORE, OPT_FORCE, OPT_WAIT, OPT_TIMEOUT };

/* One deleted object whose end `delete` waits for (--wait): gone from the
 * store, or its name held by another object (another uid). */
typedef struct gone_wait {
  const char *ns, *name;
  char *uid;
} gone_wait;

/* Delete ns/name; prints the outcome; returns an exit status. An object
 * already being deleted is deleted again (a no-op), as the API server
 * takes a second DELETE, so that `delete` may wait for it. *uid (the
 * caller's) is the deleted object's, for the wait. */
static int delete_one(store *st, const char *ns, const char *name,
                      bool ignore_missing, char **uid)
{
  session *s = NULL;
  sc_errbuf eb;
  sc_err err;
  eb.msg[0] = 0;
  *uid = NULL;
  err = store_get(st, ns, name, &s, &eb);
  if(!err && !(*uid = strdup(s->meta.uid ? s->meta.uid : "")))
    err = SC_ERR_NOMEM;
  session_free(s);
  if(!err)
    err = store_delete(st, ns, name, &eb);
  if(err == SC_ERR_NOT_FOUND) {
    free(*uid);
    *uid = NULL;
    if(ignore_missing)
      return CTL_EXIT_OK;
    ctl_not_found(name);
    return CTL_EXIT_FAIL;
  }
  if(err) {
    free(*uid);
    *uid = NULL;
    return ctl_store_error(err, &eb);
  }
  printf("session \"%s\" deleted\n", name);
  fflush(stdout);
  return CTL_EXIT_OK;
}

/* Is the object of w gone? 1 gone, 0 not yet, -1 the store failed
 * (printed). */
static int is_gone(store *st, const gone_wait *w)
{
  session *s = NULL;
  sc_errbuf eb;
  sc_err err;
  int gone;
  eb.msg[0] = 0;
  err = store_get(st, w->ns, w->name, &s, &eb);
  if(err == SC_ERR_NOT_FOUND)
    return 1;
  if(err) {
    ctl_store_error(err, &eb);
    return -1;
  }
  gone = strcmp(s->meta.uid ? s->meta.uid : "", w->uid) != 0;
  session_free(s);
  return gone;
}

/* Wait until every object of ws is gone (kubectl delete --wait): a
 * deleted object stays until the controller has deleted its sandbox and
 * purged it. timeout_ms 0 waits as long as it takes (kubectl's default).
 * The poll (DELETE_POLL_MS) is a store read: a purge writes no watch event
 * in either backend. Frees the uids of ws. */
static int wait_gone(store *st, gone_wait *ws, size_t n, int64_t timeout_ms)
{
  int64_t deadline = timeout_ms > 0 ? sctime_mono_ms() + timeout_ms : 0;
  size_t left = 0, i;
  bool said = false;
  int r, rc = CTL_EXIT_TIMEOUT;
  for(i = 0; i < n; i++)
    if(ws[i].uid)
      left++;
  while(left) {
    struct timespec ts;
    for(i = 0; i < n; i++) {
      if(!ws[i].uid)
        continue;
      if((r = is_gone(st, &ws[i])) < 0) {
        rc = CTL_EXIT_FAIL;
        goto out;
      }
      if(r) {
        free(ws[i].uid);
        ws[i].uid = NULL;
        left--;
      }
      else if(!said && isatty(STDERR_FILENO)) { /* kubectl is silent */
        fprintf(stderr, "waiting for session \"%s\" to be gone: the "
                "controller deletes its sandbox first (--wait=false does "
                "not wait)\n", ws[i].name);
        said = true;
      }
    }
    if(!left)
      break;
    if(deadline && sctime_mono_ms() >= deadline)
      goto out;
    ts.tv_sec = 0;
    ts.tv_nsec = DELETE_POLL_MS * 1000000L;
    nanosleep(&ts, NULL);
  }
  rc = CTL_EXIT_OK;
out:
  for(i = 0; i < n; i++) {
    if(ws[i].uid && rc == CTL_EXIT_TIMEOUT)
      fprintf(stderr, "error: timed out waiting for session \"%s\" to be "
              "gone: the controller has not confirmed its sandbox deleted "
              "yet (is it running? `sessionctl describe session %s -n %s` "
              "says what it waits for); it stays deleted and its name "
              "stays held until then\n", ws[i].name, ws[i].name, ws[i].ns);
    free(ws[i].uid);
    ws[i].uid = NULL;
  }
  return rc;
}

int ctl_cmd_delete(ctl_env *env, int argc, char **argv)
{
  static const ctl_opt opts[] = {
    {"namespace", 'n', true, OPT_NS},
    {"filename", 'f', true, OPT_FILE},
    {"ignore-not-found", 0, false, OPT_IGNORE},
    {"wait", 0, false, OPT_WAIT},
    {"timeout", 0, true, OPT_TIMEOUT},
    {NULL, 0, false, 0}
  };
  const char *files[MAX_ARGS];
  gone_wait *ws = NULL;
  size_t n_files = 0, n_ws = 0, i;
  const char *val, *ns = SESSION_DEFAULT_NAMESPACE;
  bool ignore = false, wait = true;
  int64_t timeout_ms = 0;
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
      ignore = ctl_flag_on(val);
      break;
    case OPT_WAIT:
      wait = ctl_flag_on(val);
      break;
    case OPT_TIMEOUT:
      if(!ctl_parse_timeout("--timeout", val, &timeout_ms))
        return CTL_EXIT_USAGE;
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
  ws = calloc(res.n_names + set.n + 1, sizeof(*ws));
  if(!ws) {
    fprintf(stderr, "error: out of memory\n");
    rc = CTL_EXIT_FAIL;
    goto out;
  }
  for(i = 0; i < res.n_names + set.n; i++) {
    gone_wait *w = &ws[n_ws];
    if(i < res.n_names) {
      w->ns = ns;
      w->name = res.names[i];
    }
    else {
      w->ns = set.items[i - res.n_names].s->meta.namespace_;
      w->name = set.items[i - res.n_names].s->meta.name;
    }
    r = delete_one(st, w->ns, w->name, ignore, &w->uid);
    if(r)
      rc = r;
    if(w->uid)
      n_ws++;
  }
  if(wait && n_ws) {
    r = wait_gone(st, ws, n_ws, timeout_ms);
    if(r)
      rc = r;
  }
out:
  if(ws)
    for(i = 0; i < n_ws; i++)
      free(ws[i].uid);
  free(ws);
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
      force = ctl_flag_on(val);
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
