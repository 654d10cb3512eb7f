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
  "Flags:\n"
  "  -n, --namespace NS   the namespace (default \"default\")\n"
  "      --store URL      sqlite:PATH or kube[:CONTEXT], see sessionctl --help\n"
  "                       (default $SESSION_STORE, else " CTL_DEFAULT_STORE ")\n"
  "  -h, --help           this help\n";

int ctl_cmd_describe(ctl_env *env, int argc, char **argv)
{
  static const ctl_opt opts[] = {{"namespace", 'n', true, 1},
                                 {NULL, 0, false, 0}};
  const char *names[64];
  size_t n_names = 0, i;
  const char *val, *ns = SESSION_DEFAULT_NAMESPACE;
  bool have_type = false;
  ctl_args p;
  store *st;
  dynbuf out;
  int id, rc = CTL_EXIT_OK;

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
    case CTL_ARG_POS: {
      if(strchr(val, '/')) {
        if(!ctl_session_slash_name(val, &val))
          return ctl_usage_error("describe: bad argument \"%s\" (want "
                                 "session/NAME)", val);
        have_type = true;
      }
      else if(!have_type) {
        if(!ctl_is_session_resource(val))
          return ctl_usage_error("the server doesn't have a resource type "
                                 "\"%s\" (only sessions)", val);
        have_type = true;
        break;
      }
      if(n_names >= sizeof(names) / sizeof(names[0]))
        return ctl_usage_error("describe: too many names");
      names[n_names++] = val;
      break;
    }
    default:
      return ctl_usage_error("describe: unexpected flag");
    }
  }
  if(!n_names)
    return ctl_usage_error("describe: give a session name: describe session "
                           "NAME");
  if(!ctl_check_namespace(ns))
    return CTL_EXIT_USAGE;
  st = ctl_open_store(env, NULL, false);
  if(!st)
    return CTL_EXIT_FAIL;
  dynbuf_init(&out, 16 * 1024 * 1024);
  for(i = 0; i < n_names; i++) {
    session *s = NULL;
    sc_errbuf eb;
    sc_err err;
    eb.msg[0] = 0;
    err = store_get(st, ns, names[i], &s, &eb);
    if(err == SC_ERR_NOT_FOUND || (!err && s->meta.deletion_timestamp)) {
      ctl_not_found(names[i]);
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
