/* cmd_get.c - `sessionctl get sessions [NAME...]`: a kubectl-style table,
 * -o wide|json|yaml|name, and -w (watch.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/session_json.h"
#include "controller/store/store.h"
#include "cmd/sessionctl/get.h"
#include "cmd/sessionctl/jsonpath.h"

static const char get_help[] =
  "List sessions, as kubectl get does.\n"
  "\n"
  "Usage:\n"
  "  sessionctl get sessions [NAME...] [-n NS | -A] [-o FORMAT] [-w]\n"
  "  sessionctl get session/NAME ...\n"
  "\n"
  "Either the type and then NAMEs, or every argument TYPE/NAME, as\n"
  "kubectl: the two forms do not mix (\"session session/a\" and\n"
  "\"session/a b\" are usage errors), TYPE/NAME has one slash and both\n"
  "sides, and TYPE is sessions, session, sess, sessions.lea.io or\n"
  "session.lea.io.\n"  "\n"
  "The table has the columns NAME TENANT STATE PHASE\n"
  "SANDBOX AGE (AGE from metadata.creationTimestamp); -A adds NAMESPACE\n"
  "first. A deleted session that waits for the controller to delete its\n"
  "sandbox is listed with PHASE Terminating (its status.phase is in -o\n"
  "json, its metadata.deletionTimestamp set) until the controller purges\n"
  "it; its name is held until then. A missing NAME\n"
  "prints a NotFound error on stderr and the exit status is 1. An empty\n"
  "listing says \"No resources found\" on stderr, never on stdout.\n"
  "\n"
  "Output formats (-o):\n"
  "  wide               the table and ENDAT, GENERATION, OBSERVED\n"
  "  json, yaml         for one NAME the object, else a List\n"
  "                     {\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[...]}"
  "\n"
  "                     (an empty items when nothing matches); every field.\n"
  "                     apply -f takes either back: it ignores status and "
  "the\n"
  "                     metadata the store sets\n"
  "  name               session.lea.io/NAME, one a line\n"
  "  jsonpath=TEMPLATE  kubectl's template language (a subset): fields\n"
  "                     {.status.sandboxID}, [N], [*], [?(@.type==\"Ready\")],\n"
  "                     {range .items[*]}...{end}, literals {\"\\n\"}; the root "
  "is\n"
  "                     the object for one NAME, else the List; no newline "
  "is\n"
  "                     added. A bad template is a usage error (exit 2)\n"
  "\n"
  "With -w the current list is printed, then one row per change (from any\n"
  "process) as it happens, until interrupted (exit 0) or stdout is closed.\n"
  "-o json prints one compact object per line (no List), -o yaml one\n"
  "document each, jsonpath the template per object. When the store's\n"
  "history no longer reaches the watch, the list is read again and a row\n"
  "is printed for every object that changed meanwhile (and a DELETED row\n"
  "for every one gone), then the watch goes on.\n"
  "\n"
  "Flags:\n"
  "  -n, --namespace NS        the namespace (default \"default\")\n"
  "  -A, --all-namespaces      every namespace\n"
  "  -o, --output FORMAT       wide, json, yaml, name or jsonpath=TEMPLATE\n"
  "                            (default: the table)\n"
  "  -w, --watch               after the list, print changes as they "
  "happen\n"
  "      --output-watch-events add an EVENT column (ADDED, MODIFIED, "
  "DELETED);\n"
  "                            with -o json|yaml|jsonpath, print {type, "
  "object}\n"
  "      --store URL           sqlite:PATH or kube[:CONTEXT], see sessionctl --help\n"
  "                            (default $SESSION_STORE, else " CTL_DEFAULT_STORE ")\n"
  "  -h, --help                this help\n";

enum { OPT_NS = 1, OPT_ALL, OPT_OUTPUT, OPT_WATCH, OPT_EVENTS };

static const ctl_opt get_opts[] = {
  {"namespace", 'n', true, OPT_NS},
  {"all-namespaces", 'A', false, OPT_ALL},
  {"output", 'o', true, OPT_OUTPUT},
  {"watch", 'w', false, OPT_WATCH},
  {"output-watch-events", 0, false, OPT_EVENTS},
  {NULL, 0, false, 0}
};

sc_err ctl_get_init(ctl_get *g)
{
  const char *hdr[CTL_TABLE_MAXCOLS];
  dynbuf_init(&g->out, CTL_GET_OUT_CAP);
  g->cols.namespace_ = g->ns == NULL;
  g->cols.wide = g->output == CTL_OUTPUT_WIDE;
  g->cols.event = g->watch_events;
  if(g->output == CTL_OUTPUT_TABLE || g->output == CTL_OUTPUT_WIDE) {
    g->table = ctl_table_new(ctl_session_header(&g->cols, hdr));
    if(!g->table)
      return SC_ERR_NOMEM;
    if(g->cols.event)
      ctl_table_reserve(g->table, 0, "MODIFIED");
  }
  return SC_OK;
}

void ctl_get_cleanup(ctl_get *g)
{
  ctl_table_free(g->table);
  g->table = NULL;
  ctl_jsonpath_free(g->jsonpath);
  g->jsonpath = NULL;
  dynbuf_free(&g->out);
}

bool ctl_get_matches(const ctl_get *g, const session *s)
{
  size_t i;
  if(g->ns && (!s->meta.namespace_ || strcmp(g->ns, s->meta.namespace_)))
    return false;
  if(!g->n_names)
    return true;
  for(i = 0; i < g->n_names; i++)
    if(s->meta.name && !strcmp(g->names[i], s->meta.name))
      return true;
  return false;
}

static sc_err add_header(ctl_get *g)
{
  const char *hdr[CTL_TABLE_MAXCOLS];
  (void)ctl_session_header(&g->cols, hdr);
  g->header_done = true;
  return ctl_table_add(g->table, hdr);
}

/* o as -o json (one compact line per object in a watch), yaml or
 * jsonpath prints it. */
static sc_err emit_doc(ctl_get *g, json_object *o)
{
  sc_err err = SC_OK;
  if(g->output == CTL_OUTPUT_JSON)
    return g->watch ? ctl_json_print_line(o, &g->out)
                    : ctl_json_print(o, &g->out);
  if(g->output == CTL_OUTPUT_JSONPATH)
    return ctl_jsonpath_exec(g->jsonpath, o, &g->out);
  if(g->n_docs++)
    err = dynbuf_addstr(&g->out, "---\n");
  if(!err)
    err = ctl_yaml_print(o, &g->out);
  return err;
}

sc_err ctl_get_emit(ctl_get *g, const session *s, const char *event)
{
  json_object *o, *w;
  sc_err err;
  switch(g->output) {
  case CTL_OUTPUT_TABLE:
  case CTL_OUTPUT_WIDE:
    if(!g->header_done) {
      err = add_header(g);
      if(err)
        return err;
    }
    return ctl_session_row(g->table, &g->cols, s, event, sctime_wall_ms());
  case CTL_OUTPUT_NAME:
    if(g->watch_events)
      return dynbuf_printf(&g->out, "%s " CTL_NAME_PREFIX "%s\n", event,
                           s->meta.name);
    return dynbuf_printf(&g->out, CTL_NAME_PREFIX "%s\n", s->meta.name);
  case CTL_OUTPUT_JSON:
  case CTL_OUTPUT_YAML:
  case CTL_OUTPUT_JSONPATH:
  default:
    o = session_to_json_object(s);
    if(!o)
      return SC_ERR_NOMEM;
    if(g->watch_events) {
      w = json_object_new_object();
      if(!w) {
        json_object_put(o);
        return SC_ERR_NOMEM;
      }
      json_object_object_add(w, "type", json_object_new_string(event));
      json_object_object_add(w, "object", o);
      o = w;
    }
    err = emit_doc(g, o);
    json_object_put(o);
    return err;
  }
}

bool ctl_get_flush(ctl_get *g)
{
  if(g->table && ctl_table_flush(g->table, &g->out))
    return false;
  return ctl_write_stdout(&g->out);
}

/* The one-shot listing of objs (all matched already). single: one NAME
 * was asked for and found, so the object itself is printed, not a List.
 * A listing with nothing in it says so on stderr (listed: not after
 * NotFound errors); -o json|yaml|jsonpath still print the empty List. */
static int print_list(ctl_get *g, session *const *objs, size_t n,
                      const char *revision, bool single, bool listed)
{
  size_t i;
  sc_err err = SC_OK;
  json_object *o;
  if(!n && !single && listed) {
    if(g->ns)
      fprintf(stderr, "No resources found in %s namespace.\n", g->ns);
    else
      fprintf(stderr, "No resources found\n");
  }
  switch(g->output) {
  case CTL_OUTPUT_JSON:
  case CTL_OUTPUT_YAML:
  case CTL_OUTPUT_JSONPATH:
    if(single)
      o = session_to_json_object(objs[0]);
    else
      o = ctl_list_json(objs, n, revision);
    if(!o)
      err = SC_ERR_NOMEM;
    else
      err = emit_doc(g, o);
    json_object_put(o);
    break;
  default:
    for(i = 0; i < n && !err; i++)
      err = ctl_get_emit(g, objs[i], "ADDED");
    break;
  }
  if(err) {
    fprintf(stderr, "error: formatting output: %s\n", sc_strerror(err));
    return CTL_EXIT_FAIL;
  }
  return ctl_get_flush(g) ? CTL_EXIT_OK : CTL_EXIT_FAIL;
}

static int get_once(ctl_env *env, ctl_get *g)
{
  store *st = ctl_open_store(env, NULL, false);
  store_list_result res;
  store_list_opts lo;
  session **found = NULL;
  size_t n_found = 0, i;
  sc_errbuf eb;
  sc_err err;
  int rc = CTL_EXIT_OK, prc;

  memset(&res, 0, sizeof(res));
  if(!st)
    return CTL_EXIT_FAIL;
  eb.msg[0] = 0;
  if(g->n_names) {
    found = calloc(g->n_names, sizeof(*found));
    if(!found) {
      rc = ctl_store_error(SC_ERR_NOMEM, NULL);
      goto out;
    }
    for(i = 0; i < g->n_names; i++) {
      session *s = NULL;
      err = store_get(st, g->ns, g->names[i], &s, &eb); /* tombstones too */
      if(err == SC_ERR_NOT_FOUND) {
        ctl_not_found(g->names[i]);
        rc = CTL_EXIT_FAIL;
        continue;
      }
      if(err) {
        rc = ctl_store_error(err, &eb);
        goto out;
      }
      found[n_found++] = s;
    }
    /* as kubectl: one missing NAME prints nothing on stdout; of several,
     * the found ones are a List (an empty one when none was found) */
    if(n_found || g->n_names > 1) {
      prc = print_list(g, found, n_found, NULL,
                       g->n_names == 1 && n_found == 1, false);
      if(prc)
        rc = prc;
    }
    goto out;
  }
  memset(&lo, 0, sizeof(lo));
  lo.namespace_ = g->ns;
  /* the deleted objects still held (Terminating) too, as kubectl lists
   * an object whose finalizer is pending */
  lo.include_deleted = true;
  err = store_list(st, &lo, &res, &eb);
  if(err) {
    rc = ctl_store_error(err, &eb);
    goto out;
  }
  ctl_warn_skipped(&res);
  rc = print_list(g, res.items, res.n, res.revision, false, true);
out:
  for(i = 0; found && i < n_found; i++)
    session_free(found[i]);
  free(found);
  store_list_result_free(&res);
  store_close(st);
  return rc;
}

int ctl_cmd_get(ctl_env *env, int argc, char **argv)
{
  const char *val, *ns = SESSION_DEFAULT_NAMESPACE;
  const char *jp_tmpl = NULL;
  bool all = false, ns_given = false;
  ctl_resources res;
  ctl_args p;
  ctl_get g;
  int id, o, rc;

  memset(&g, 0, sizeof(g));
  memset(&res, 0, sizeof(res));
  ctl_args_init(&p, argc, argv, get_opts);
  while((id = ctl_args_step(&p, env, get_help, &res, &val,
                            &rc)) != CTL_ARG_END) {
    switch(id) {
    case CTL_ARG_EXIT:
      return rc;
    case OPT_NS:
      ns = val;
      ns_given = true;
      break;
    case OPT_ALL:
      all = ctl_flag_on(val);
      break;
    case OPT_OUTPUT:
      if(!strncmp(val, "jsonpath=", 9) || !strcmp(val, "jsonpath")) {
        if(!val[8] || !val[9])
          return ctl_usage_error("template format specified but no template "
                                 "given: use -o jsonpath=TEMPLATE, as in "
                                 "-o jsonpath='{.items[*].metadata.name}'");
        jp_tmpl = val + 9;     /* parsed once the flags are all read */
        g.output = CTL_OUTPUT_JSONPATH;
        break;
      }
      o = ctl_output_parse(val);
      if(o < 0 || !*val)
        return ctl_usage_error("unable to match a printer suitable for the "
                               "output format \"%s\", allowed formats are: "
                               "json,jsonpath,name,wide,yaml", val);
      g.output = (ctl_output)o;
      break;
    case OPT_WATCH:
      g.watch = ctl_flag_on(val);
      break;
    case OPT_EVENTS:
      g.watch_events = ctl_flag_on(val);
      break;
    default:
      return ctl_usage_error("get: unexpected flag");
    }
  }
  if(ctl_resources_parse(&res, "get", false))
    return CTL_EXIT_USAGE;
  g.names = res.names;
  g.n_names = res.n_names;
  if(!res.have_type)
    return ctl_usage_error("get: you must specify the type of resource to "
                           "get (sessions)");
  if(all && ns_given)
    return ctl_usage_error("get: -n and -A cannot be used together");
  if(all && g.n_names)
    return ctl_usage_error("a resource cannot be retrieved by name across "
                           "all namespaces");
  if(!all && !ctl_check_namespace(ns))
    return CTL_EXIT_USAGE;
  if(!g.watch)
    g.watch_events = false;  /* as kubectl: only meaningful with -w */
  g.ns = all ? NULL : ns;
  if(g.output == CTL_OUTPUT_JSONPATH) {
    char jerr[256];
    g.jsonpath = ctl_jsonpath_parse(jp_tmpl, jerr, sizeof(jerr));
    if(!g.jsonpath)
      return ctl_usage_error("error parsing jsonpath %s: %s", jp_tmpl, jerr);
  }
  if(ctl_get_init(&g)) {
    ctl_get_cleanup(&g);
    return ctl_store_error(SC_ERR_NOMEM, NULL);
  }
  rc = g.watch ? ctl_get_watch(env, &g) : get_once(env, &g);
  ctl_get_cleanup(&g);
  return rc;
}
