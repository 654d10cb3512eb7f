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

int ctl_cmd_describe(ctl_env *env, int argc, char **argv)
{
  static const ctl_opt opts[] = {{"namespace", 'n', true, 1},
                                 {NULL, 0, false, 0}};
  const char *val, *ns = SESSION_DEFAULT_NAMESPACE;
  ctl_resources res;
  size_t i;
  ctl_args p;
  store *st;
  dynbuf out;
  int id, rc = CTL_EXIT_OK;

  memset(&res, 0, sizeof(res));
  ctl_args_init(&p, argc, argv, opts);
  while((id = ctl_args_next(&p, &val)) != CTL_ARG_END) {
    switch(id) {
    case CTL_ARG_ERR:
      return ctl_usage_error("%s", p.err);
    case CTL_OPT_HELP:
      fputs(describe_help, stdout);
      return CTL_EXIT_OK;
    case CTL_OPT_STORE:
      env->store_url = val;
      break;
    case 1:
      ns = val;
      break;
    case CTL_ARG_POS:
      if(ctl_resources_add(&res, val))
        return CTL_EXIT_USAGE;
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
  if(!ctl_check_namespace(ns))
    return CTL_EXIT_USAGE;
  st = ctl_open_store(env, NULL, false);
  if(!st)
    return CTL_EXIT_FAIL;
  dynbuf_init(&out, 16 * 1024 * 1024);
  for(i = 0; i < res.n_names; i++) {
    session *s = NULL;
    sc_errbuf eb;
    sc_err err;
    eb.msg[0] = 0;
    err = store_get(st, ns, res.names[i], &s, &eb);
    if(err == SC_ERR_NOT_FOUND || (!err && s->meta.deletion_timestamp)) {
      ctl_not_found(res.names[i]);
      rc = CTL_EXIT_FAIL;
    }
    else if(err) {
      rc = ctl_store_error(err, &eb);
    }
    else {
      if(i && dynbuf_len(&out) == 0)
        err = dynbuf_addstr(&out, "\n\n");
      if(!err)
        err = ctl_describe(s, &out);
      if(err || !ctl_write_stdout(&out)) {
        fprintf(stderr, "error: writing output: %s\n",
                sc_strerror(err ? err : SC_ERR_IO));
        rc = CTL_EXIT_FAIL;
      }
    }
    session_free(s);
  }
  dynbuf_free(&out);
  store_close(st);
  return rc;
}
