/*
 * ctl.h - sessionctl's commands and its small option parser.
 *
 * Every command is `int ctl_cmd_X(ctl_env *env, int argc, char **argv)`
 * with argv[0] the command name; it returns the process exit status:
 * CTL_EXIT_OK, CTL_EXIT_FAIL (the operation failed), CTL_EXIT_USAGE
 * (bad command line) or, for connect and wait, CTL_EXIT_TIMEOUT (what
 * they waited for did not happen within --timeout). Commands print their
 * results to stdout and their errors to stderr themselves.
 *
 * Ownership: ctl_env and argv belong to main(); commands never free them
 * and never keep pointers into them past their return, except that
 * env->store_url may be pointed at an argv string.
 */
#ifndef SC_CTL_H
#define SC_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include "lib/sc_err.h"
#include "controller/store/store.h"

#define CTL_EXIT_OK 0
#define CTL_EXIT_FAIL 1
#define CTL_EXIT_USAGE 2
#define CTL_EXIT_TIMEOUT 3

#define CTL_DEFAULT_STORE "sqlite:sessions.db"
#define CTL_VERSION "0.1.0"
#define CTL_HINT "Run 'sessionctl --help' for usage."

typedef struct ctl_env {
  const char *store_url;   /* --store, else $SESSION_STORE, else default */
} ctl_env;

/* --- option parsing (kubectl/pflag style) ---
 * Options and positional arguments may be mixed; "--" ends options.
 * Forms: --long, --long=V, --long V, -x, -xV, -x V, and clusters of
 * flags without values (-Aw). */
enum {
  CTL_ARG_END = 0,      /* no more arguments */
  CTL_ARG_POS = -1,     /* a positional argument in *val */
  CTL_ARG_ERR = -2,     /* a usage error; message in p->err */
  CTL_ARG_EXIT = -3,    /* ctl_args_step: the command is done, see *rc */
  CTL_OPT_STORE = 1000, /* the global options every command accepts */
  CTL_OPT_HELP
};

typedef struct ctl_opt {
  const char *long_name;  /* without "--"; NULL ends the table */
  char short_name;        /* 0 = none */
  bool has_arg;
  int id;                 /* > 0, returned by ctl_args_next() */
} ctl_opt;

typedef struct ctl_args {
  int argc;
  char **argv;
  int i;                  /* next argv index */
  const char *cluster;    /* rest of a short-flag cluster, or NULL */
  const ctl_opt *opts;
  bool no_more_opts;
  char err[256];
} ctl_args;

/* Parse argv[1..] of a command against opts (the global --store and
 * -h/--help are added implicitly). */
void ctl_args_init(ctl_args *p, int argc, char **argv, const ctl_opt *opts);
/* The next option id (with its value in *val when it takes one), or one of
 * CTL_ARG_END, CTL_ARG_POS, CTL_ARG_ERR. */
int ctl_args_next(ctl_args *p, const char **val);
/* A boolean flag's value from ctl_args_next(): false for --flag=false,
 * true for --flag and --flag=true (val NULL). */
bool ctl_flag_on(const char *val);

/* ctl_args_next for a command's option loop, doing what every command
 * does alike: --store sets env->store_url (and is not returned); -h/--help
 * prints help, a parse error its message and the hint; both of those then
 * return CTL_ARG_EXIT with the exit status in *rc (CTL_EXIT_OK after the
 * help, CTL_EXIT_USAGE after an error). With res, positional arguments go
 * to ctl_resources_add() (CTL_ARG_EXIT past its limit) and are not
 * returned. Otherwise as ctl_args_next. */
struct ctl_resources;
int ctl_args_step(ctl_args *p, ctl_env *env, const char *help,
                  struct ctl_resources *res, const char **val, int *rc);

/* Print "error: MSG" and the --help hint to stderr; returns CTL_EXIT_USAGE. */
int ctl_usage_error(const char *fmt, ...)
  __attribute__((format(printf, 1, 2)));

/* True when name is one of the accepted spellings of the sessions
 * resource: sessions, session, sess, sessions.lea.io, session.lea.io. */
bool ctl_is_session_resource(const char *name);

/* --- resource arguments: the one parser of get, describe, delete, wake ---
 * A command hands every positional argument to ctl_resources_add() while
 * it reads its flags, then calls ctl_resources_parse() once. The forms
 * are kubectl's (its resource builder):
 *   TYPE [NAME...]          TYPE a sessions spelling; NAMEs may be none
 *   TYPE/NAME [TYPE/NAME...] every argument in that form, one slash each,
 *                          both sides non-empty
 * A mix of the two forms ("session session/a", "session/a b") is an
 * error, as are "session/", "/a", "session/a/b" and a TYPE that is not a
 * sessions spelling. With type_optional (wake) a first argument that is
 * not a sessions spelling, or the only argument, is a NAME: "wake NAME...".
 * Which counts of NAMEs a command accepts is the command's business.
 * The strings stay argv's; names point into them. */
#define CTL_MAX_NAMES 256

typedef struct ctl_resources {
  const char *arg[CTL_MAX_NAMES];  /* the positional arguments, in order */
  size_t n_args;
  const char **names;              /* after parse: the NAMEs (into arg) */
  size_t n_names;
  bool have_type;                  /* a TYPE was given (either form) */
} ctl_resources;

/* Keep one positional argument; a usage error (printed, CTL_EXIT_USAGE)
 * past CTL_MAX_NAMES. */
int ctl_resources_add(ctl_resources *r, const char *arg);
/* Split r->arg into TYPE and NAMEs; CTL_EXIT_OK, or CTL_EXIT_USAGE with
 * the error printed (cmd names the command in the resource/name hint). */
int ctl_resources_parse(ctl_resources *r, const char *cmd,
                        bool type_optional);

/* --- shared by the commands (common.c) --- */
struct manifest_set;
struct store;
struct event_base;

struct policy;
/* Read every path (file, directory or "-") into set; returns the number
 * of errors found (also printed to stderr, one per line). pol: the
 * tenant policy the objects must keep too (NULL: none). */
size_t ctl_read_manifests(const char *const *paths, size_t n,
                          const struct policy *pol,
                          struct manifest_set *set);
/* Open env->store_url; on failure print "error: ..." and return NULL.
 * Only apply passes may_create: every other command fails on a store that
 * does not exist (naming it) and creates nothing; a created store is
 * reported on stderr ("created store sqlite:PATH"). */
struct store *ctl_open_store(const ctl_env *env, struct event_base *base,
                             bool may_create);
/* `store init`: open env->store_url, creating an empty store when there is
 * none (silently: the command says it on stdout); *created tells whether
 * this call made it. NULL after printing the error. */
struct store *ctl_init_store(const ctl_env *env, bool *created);
/* The same for a command that waits on an answer (connect, wait): the
 * SQLite watch polls every 10 ms unless the URL says otherwise. */
store *ctl_open_store_waiting(const ctl_env *env, struct event_base *base);
/* Print "error: MSG" for a failed store call (with a retry hint when the
 * store was busy); returns CTL_EXIT_FAIL. */
int ctl_store_error(sc_err err, const sc_errbuf *eb);
/* Print kubectl's NotFound line for sessions "name". */
void ctl_not_found(const char *name);
/* store_get() of a session that is not a tombstone: SC_ERR_NOT_FOUND for
 * a deleted one too (*out NULL then); else as store_get. */
sc_err ctl_get_session(struct store *st, const char *ns, const char *name,
                       session **out, sc_errbuf *eb);
/* One name of `describe`, `delete` or `wake`: prints its outcome and
 * returns an exit status. */
typedef int (*ctl_name_fn)(struct store *st, const char *ns,
                           const char *name, void *arg);
/* Check ns, open the store and call one() for every NAME of res in turn;
 * the last failing exit status, or CTL_EXIT_OK. */
int ctl_each_name(ctl_env *env, const char *ns,
                  const struct ctl_resources *res, ctl_name_fn one,
                  void *arg);
/* Parse a namespace name given by -n (non-empty, DNS-label-like);
 * false with a usage error printed when bad. */
bool ctl_check_namespace(const char *ns);

/* The commands. */
int ctl_cmd_apply(ctl_env *env, int argc, char **argv);
int ctl_cmd_get(ctl_env *env, int argc, char **argv);
int ctl_cmd_describe(ctl_env *env, int argc, char **argv);
int ctl_cmd_delete(ctl_env *env, int argc, char **argv);
int ctl_cmd_validate(ctl_env *env, int argc, char **argv);
int ctl_cmd_wake(ctl_env *env, int argc, char **argv);
int ctl_cmd_plan(ctl_env *env, int argc, char **argv);
int ctl_cmd_connect(ctl_env *env, int argc, char **argv);
int ctl_cmd_wait(ctl_env *env, int argc, char **argv);
int ctl_cmd_store(ctl_env *env, int argc, char **argv);

/* The text of `sessionctl --help`. */
extern const char ctl_usage_text[];

/* One stderr line per object a list left out because it does not decode
 * (store_list_result.skipped), so `get` never hides one silently. */
void ctl_warn_skipped(const store_list_result *res);

#endif
