/* args.c - sessionctl's option parser and usage-error helpers. */
#include "cmd/sessionctl/ctl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const ctl_opt global_opts[] = {
  {"store", 0, true, CTL_OPT_STORE},
  {"help", 'h', false, CTL_OPT_HELP},
  {NULL, 0, false, 0}
};

void ctl_args_init(ctl_args *p, int argc, char **argv, const ctl_opt *opts)
{
  memset(p, 0, sizeof(*p));
  p->argc = argc;
  p->argv = argv;
  p->i = 1;
  p->opts = opts;
}

static const ctl_opt *find_long(const ctl_opt *t, const char *name,
                                size_t len)
{
  for(; t && t->long_name; t++)
    if(strlen(t->long_name) == len && !strncmp(t->long_name, name, len))
      return t;
  return NULL;
}

static const ctl_opt *find_short(const ctl_opt *t, char c)
{
  for(; t && t->long_name; t++)
    if(t->short_name && t->short_name == c)
      return t;
  return NULL;
}

static int parse_error(ctl_args *p, const char *fmt, const char *what)
{
  snprintf(p->err, sizeof(p->err), fmt, what);
  return CTL_ARG_ERR;
}

static int next_short(ctl_args *p, const char **val)
{
  char c = *p->cluster++;
  const ctl_opt *o = find_short(p->opts, c);
  char name[2] = {c, 0};
  if(!o)
    o = find_short(global_opts, c);
  if(!o)
    return parse_error(p, "unknown shorthand flag: '%s'", name);
  if(!o->has_arg) {
    if(!*p->cluster)
      p->cluster = NULL;
    return o->id;
  }
  if(*p->cluster) {            /* -nNS */
    *val = p->cluster;
    p->cluster = NULL;
    return o->id;
  }
  p->cluster = NULL;
  if(p->i >= p->argc)
    return parse_error(p, "flag needs an argument: '%s'", name);
  *val = p->argv[p->i++];
  return o->id;
}

int ctl_args_next(ctl_args *p, const char **val)
{
  const char *a, *eq;
  const ctl_opt *o;
  size_t len;

  *val = NULL;
  if(p->cluster)
    return next_short(p, val);
  if(p->i >= p->argc)
    return CTL_ARG_END;
  a = p->argv[p->i++];
  if(p->no_more_opts || a[0] != '-' || !a[1]) {   /* "-" is positional */
    *val = a;
    return CTL_ARG_POS;
  }
  if(a[1] != '-') {
    p->cluster = a + 1;
    return next_short(p, val);
  }
  if(!a[2]) {                                     /* "--" */
    p->no_more_opts = true;
    return ctl_args_next(p, val);
  }
  a += 2;
  eq = strchr(a, '=');
  len = eq ? (size_t)(eq - a) : strlen(a);
  o = find_long(p->opts, a, len);
  if(!o)
    o = find_long(global_opts, a, len);
  if(!o) {
    char name[64];
    snprintf(name, sizeof(name), "%.*s", (int)(len < 60 ? len : 60), a);
    return parse_error(p, "unknown flag: --%s", name);
  }
  if(!o->has_arg) {
    if(eq) {
      /* pflag accepts --flag=true / --flag=false for booleans: *val is
       * "false" for the second (ctl_flag_on() reads it) */
      if(!strcmp(eq + 1, "true"))
        return o->id;
      if(!strcmp(eq + 1, "false")) {
        *val = "false";
        return o->id;
      }
      return parse_error(p, "flag --%s is a boolean: true or false",
                         o->long_name);
    }
    return o->id;
  }
  if(eq) {
    *val = eq + 1;
    return o->id;
  }
  if(p->i >= p->argc)
    return parse_error(p, "flag needs an argument: --%s", o->long_name);
  *val = p->argv[p->i++];
  return o->id;
}

int ctl_args_step(ctl_args *p, ctl_env *env, const char *help,
                  ctl_resources *res, const char **val, int *rc)
{
  int id;
  while((id = ctl_args_next(p, val)) == CTL_OPT_STORE ||
        (id == CTL_ARG_POS && res) ||
        (id == CTL_OPT_HELP && !ctl_flag_on(*val))) {
    if(id == CTL_OPT_HELP)
      continue; /* --help=false */
    if(id == CTL_OPT_STORE)
      env->store_url = *val;
    else if(ctl_resources_add(res, *val)) {
      *rc = CTL_EXIT_USAGE;
      return CTL_ARG_EXIT;
    }
  }
  if(id == CTL_ARG_ERR) {
    *rc = ctl_usage_error("%s", p->err);
    return CTL_ARG_EXIT;
  }
  if(id == CTL_OPT_HELP) {
    fputs(help, stdout);
    *rc = CTL_EXIT_OK;
    return CTL_ARG_EXIT;
  }
  return id;
}

int ctl_usage_error(const char *fmt, ...)
{
  va_list ap;
  fputs("error: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fprintf(stderr, "%s\n", CTL_HINT);
  return CTL_EXIT_USAGE;
}

bool ctl_is_session_resource(const char *name)
{
  static const char *const names[] = {"sessions", "session", "sess",
                                      "sessions.lea.io", "session.lea.io",
                                      NULL};
  size_t i;
  for(i = 0; names[i]; i++)
    if(!strcmp(name, names[i]))
      return true;
  return false;
}

int ctl_resources_add(ctl_resources *r, const char *arg)
{
  if(r->n_args >= CTL_MAX_NAMES)
    return ctl_usage_error("more than %d resource arguments", CTL_MAX_NAMES);
  r->arg[r->n_args++] = arg;
  return CTL_EXIT_OK;
}

/* TYPE/NAME as kubectl splits it: exactly one slash, both sides not
 * empty, TYPE a sessions spelling; *name points at NAME inside arg. */
static int split_slash(const char *arg, const char **name)
{
  const char *slash = strchr(arg, '/');
  char type[64];
  size_t tl = (size_t)(slash - arg);
  if(strchr(slash + 1, '/'))
    return ctl_usage_error("arguments in resource/name form may not have "
                           "more than one slash: \"%s\"", arg);
  if(!tl || !slash[1])
    return ctl_usage_error("arguments in resource/name form must have a "
                           "single resource and name: \"%s\"", arg);
  snprintf(type, sizeof(type), "%.*s", (int)(tl < 63 ? tl : 63), arg);
  if(tl >= 63 || !ctl_is_session_resource(type))
    return ctl_usage_error("the server doesn't have a resource type \"%s\" "
                           "(only sessions)", type);
  *name = slash + 1;
  return CTL_EXIT_OK;
}

int ctl_resources_parse(ctl_resources *r, const char *cmd,
                        bool type_optional)
{
  size_t i, n_slash = 0;
  int rc;
  r->names = r->arg;
  r->n_names = 0;
  r->have_type = false;
  for(i = 0; i < r->n_args; i++)
    if(strchr(r->arg[i], '/'))
      n_slash++;
  if(n_slash && n_slash < r->n_args)
    return ctl_usage_error("there is no need to specify a resource type as "
                           "a separate argument when passing arguments in "
                           "resource/name form (e.g. 'sessionctl %s "
                           "session/NAME' instead of 'sessionctl %s session "
                           "session/NAME'; every argument is either "
                           "session/NAME or none is)", cmd, cmd);
  if(n_slash) {
    for(i = 0; i < r->n_args; i++) {
      rc = split_slash(r->arg[i], &r->arg[i]);
      if(rc)
        return rc;
    }
    r->have_type = true;
    r->n_names = r->n_args;
    return CTL_EXIT_OK;
  }
  if(!r->n_args)
    return CTL_EXIT_OK;
  if(type_optional &&
     (r->n_args == 1 || !ctl_is_session_resource(r->arg[0]))) {
    r->n_names = r->n_args;         /* wake NAME... */
    return CTL_EXIT_OK;
  }
  if(!ctl_is_session_resource(r->arg[0]))
    return ctl_usage_error("the server doesn't have a resource type \"%s\" "
                           "(only sessions)", r->arg[0]);
  r->have_type = true;
  r->names = r->arg + 1;
  r->n_names = r->n_args - 1;
  return CTL_EXIT_OK;
}

bool ctl_flag_on(const char *val)
{
  return !val || strcmp(val, "false");
}
