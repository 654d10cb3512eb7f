/* cmd_describe.c - `sessionctl describe session NAME...`. */
#include <stdio.h>
#include <string.h>
#include "controller/store/store.h"
#include "cmd/sessionctl/describe.h"
#include "cmd/sessionctl/print.h"

static const char describe_help[] =
  "Show one session in a readable layout: metadata, spec, status and the\n"
  "conditions table.\n"
  "\n"
  "Usage:\n"
  "  sessionctl describe session NAME... [-n NS]\n"
  "  sessionctl describe session/NAME ...\n"
  "\n"
  "Either the type and then NAMEs, or every argument TYPE/NAME, as\n"
  "kubectl: the two forms do not mix (\"session session/a\" and\n"
  "\"session/a b\" are usage errors), TYPE/NAME has one slash and both\n"
  "sides, and TYPE is sessions, session, sess, sessions.lea.io or\n"
  "session.lea.io.\n"  "A NAME is required (unlike kubectl, which describes every object\n"
  "of a type given alone).\n"
  "\n"
  "Flags:\n"
  "  -n, --namespace NS   the namespace (default \"default\")\n"
  "      --store URL      sqlite:PATH or kube[:CONTEXT], see sessionctl --help\n"
  "                       (default $SESSION_STORE, else " CTL_DEFAULT_STORE ")\n"
  "  -h, --help           this help\n";

/* the NAMEs' descriptions, one after another */
typedef struct describe_run {
  dynbuf out;
  size_t n;          /* described so far */
} describe_run;

static int describe_one(store *st, const char *ns, const char *name,
                        void *arg)
{
  describe_run *run = arg;
  session *s = NULL;
  sc_errbuf eb;
  sc_err err;
  int rc = CTL_EXIT_OK;
  eb.msg[0] = 0;
  err = store_get(st, ns, name, &s, &eb); /* tombstones too */
  if(err == SC_ERR_NOT_FOUND) {
    ctl_not_found(name);
    rc = CTL_EXIT_FAIL;
  }
  else if(err) {
    rc = ctl_store_error(err, &eb);
  }
  else {
    if(run->n++ && dynbuf_len(&run->out) == 0)
      err = dynbuf_addstr(&run->out, "\n\n");
    if(!err)
      err = ctl_describe(s, &run->out);
    if(err || !ctl_write_stdout(&run->out)) {
      fprintf(stderr, "error: writing output: %s\n",
              sc_strerror(err ? err : SC_ERR_IO));
      rc = CTL_EXIT_FAIL;
    }
  }
  session_free(s);
  return rc;
}

int ctl_cmd_describe(ctl_env *env, int argc, char **argv)
{
  static const ctl_opt opts[] = {{"namespace", 'n', true, 1},
                                 {NULL, 0, false, 0}};
  const char *val, *ns = SESSION_DEFAULT_NAMESPACE;
  ctl_resources res;
  describe_run run;
  ctl_args p;
  int id, rc;

  memset(&res, 0, sizeof(res));
  ctl_args_init(&p, argc, argv, opts);
  while((id = ctl_args_step(&p, env, describe_help, &res, &val,
                            &rc)) != CTL_ARG_END) {
    switch(id) {
    case CTL_ARG_EXIT:
      return rc;
    case 1:
      ns = val;
      break;
    default:
      return ctl_usage_error("describe: unexpected flag");
    }
  }
  if(ctl_resources_parse(&res, "describe", false))
    return CTL_EXIT_USAGE;
  if(!res.have_type)
    return ctl_usage_error("describe: you must specify the type of resource "
                           "to describe: describe session NAME");
  if(!res.n_names)
    return ctl_usage_error("describe: give a session name: describe session "
                           "NAME");
  dynbuf_init(&run.out, 16 * 1024 * 1024);
  run.n = 0;
  rc = ctl_each_name(env, ns, &res, describe_one, &run);
  dynbuf_free(&run.out);
  return rc;
}
