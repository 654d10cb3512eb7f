/* cmd_wait.c - `sessionctl wait NAME --for=...`: kubectl wait for one
 * session, on the store's watch (follow.h). */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "api/session_json.h"
#include "cmd/sessionctl/ctl.h"
#include "cmd/sessionctl/follow.h"
#include "cmd/sessionctl/jsonpath.h"
#include "cmd/sessionctl/print.h"
#include "controller/store/store.h"

#define WAIT_DEFAULT_TIMEOUT_MS 30000
#define WAIT_VALUE_MAX 1024

static const char wait_help[] =
  "Wait until a session meets a condition, as kubectl wait does.\n"
  "\n"
  "Usage:\n"
  "  sessionctl wait NAME --for=CONDITION [-n NS] [--timeout=30s]\n"
  "  sessionctl wait session/NAME ...\n"
  "\n"
  "CONDITION is one of:\n"
  "  condition=TYPE[=VALUE]  status.conditions has TYPE with status VALUE\n"
  "                          (default True; compared ignoring case), and the\n"
  "                          condition is not older than the spec: its\n"
  "                          observedGeneration (else status.\n"
  "                          observedGeneration), when set, is at least\n"
  "                          metadata.generation\n"
  "  jsonpath={EXPR}=VALUE   the template {EXPR} (as get -o jsonpath) prints\n"
  "                          exactly VALUE, e.g.\n"
  "                          --for=jsonpath='{.status.phase}'=Running\n"
  "  delete                  the session is gone (or deleted: a tombstone);\n"
  "                          one that is absent already is met at once,\n"
  "                          silently\n"
  "When met it prints session.lea.io/NAME condition met. The session is\n"
  "read once, then followed on the store's watch.\n"
  "\n"
  "Exit status: 0 met; 1 the session is absent (but for delete) or was\n"
  "deleted while waiting for a condition, or the store failed; 2 bad\n"
  "command line; 3 not met within --timeout (\"error: timed out waiting\n"
  "for the condition on sessions/NAME\").\n"
  "\n"
  "Flags:\n"
  "  -n, --namespace NS  the namespace (default \"default\")\n"
  "      --for C         what to wait for (required), see above\n"
  "      --timeout D     how long to wait (default 30s; 0 checks once)\n"
  "      --store URL     sqlite:PATH or kube[:CONTEXT], see sessionctl --help\n"
  "                      (default $SESSION_STORE, else " CTL_DEFAULT_STORE ")\n"
  "  -h, --help          this help\n";

enum { OPT_NS = 1, OPT_FOR, OPT_TIMEOUT };

static const ctl_opt wait_opts[] = {
  {"namespace", 'n', true, OPT_NS},
  {"for", 0, true, OPT_FOR},
  {"timeout", 0, true, OPT_TIMEOUT},
  {NULL, 0, false, 0}
};

typedef enum wait_kind { WAIT_DELETE, WAIT_CONDITION, WAIT_JSONPATH } wait_kind;

typedef struct wait_run {
  const char *ns, *name;
  wait_kind kind;
  char type[128];            /* condition=TYPE */
  char value[WAIT_VALUE_MAX];/* its VALUE, or the jsonpath's */
  ctl_jsonpath *jp;          /* jsonpath={EXPR} (owned) */
  bool seen;                 /* the session was there once */
} wait_run;

/* --for=... into r; false with the usage error printed */
static bool parse_for(const char *v, wait_run *r)
{
  if(!strcasecmp(v, "delete")) {
    r->kind = WAIT_DELETE;
    return true;
  }
  if(!strncmp(v, "condition=", 10)) {
    const char *t = v + 10, *eq = strchr(t, '=');
    size_t tl = eq ? (size_t)(eq - t) : strlen(t);
    if(!tl || tl >= sizeof(r->type)) {
      ctl_usage_error("wait: --for=condition=TYPE[=VALUE]: the condition "
                      "type must be 1 to %zu characters", sizeof(r->type) - 1);
      return false;
    }
    memcpy(r->type, t, tl);
    r->type[tl] = '\0';
    if(eq && (!eq[1] || strlen(eq + 1) >= sizeof(r->value))) {
      ctl_usage_error("wait: --for=%s: an empty or too long condition value",
                      v);
      return false;
    }
    snprintf(r->value, sizeof(r->value), "%s", eq ? eq + 1 : "True");
    r->kind = WAIT_CONDITION;
    return true;
  }
  if(!strncmp(v, "jsonpath=", 9)) {
    const char *e = v + 9, *close = strrchr(e, '}');
    char tmpl[WAIT_VALUE_MAX], err[200];
    size_t tl;
    if(*e != '{' || !close || close[1] != '=') {
      ctl_usage_error("wait: --for=jsonpath: want jsonpath='{EXPR}'=VALUE, "
                      "e.g. --for=jsonpath='{.status.phase}'=Running");
      return false;
    }
    tl = (size_t)(close + 1 - e);
    if(tl >= sizeof(tmpl) || strlen(close + 2) >= sizeof(r->value)) {
      ctl_usage_error("wait: --for=jsonpath: the expression or the value is "
                      "too long");
      return false;
    }
    memcpy(tmpl, e, tl);
    tmpl[tl] = '\0';
    r->jp = ctl_jsonpath_parse(tmpl, err, sizeof(err));
    if(!r->jp) {
      ctl_usage_error("wait: --for=jsonpath: %s", err);
      return false;
    }
    snprintf(r->value, sizeof(r->value), "%s", close + 2);
    r->kind = WAIT_JSONPATH;
    return true;
  }
  ctl_usage_error("wait: unrecognized condition \"%.100s\" (want "
                  "condition=TYPE[=VALUE], jsonpath='{EXPR}'=VALUE or "
                  "delete)", v);
  return false;
}

static bool condition_met(const wait_run *r, const session *s)
{
  size_t i;
  for(i = 0; i < s->status.n_conditions; i++) {
    const session_condition *c = &s->status.conditions[i];
    int64_t observed;
    if(!c->type || strcasecmp(c->type, r->type) || !c->status ||
       strcasecmp(c->status, r->value))
      continue;
    /* a condition about an older spec is not met yet (as kubectl) */
    observed = c->observed_generation > 0 ? c->observed_generation
                                          : s->status.observed_generation;
    if(observed > 0 && s->meta.generation > 0 &&
       observed < s->meta.generation)
      continue;
    return true;
  }
  return false;
}

static bool jsonpath_met(const wait_run *r, const session *s, sc_err *err)
{
  json_object *o = session_to_json_object(s);
  dynbuf out;
  bool met = false;
  *err = SC_OK;
  if(!o) {
    *err = SC_ERR_NOMEM;
    return false;
  }
  dynbuf_init(&out, 1 << 20);
  *err = ctl_jsonpath_exec(r->jp, o, &out);
  if(!*err)
    met = !strcmp(dynbuf_ptr(&out), r->value);
  dynbuf_free(&out);
  json_object_put(o);
  return met;
}

static int met(const wait_run *r)
{
  printf(CTL_NAME_PREFIX "%s condition met\n", r->name);
  return fflush(stdout) ? CTL_EXIT_FAIL : CTL_EXIT_OK;
}

static int check_wait(const session *s, void *ud)
{
  wait_run *r = ud;
  sc_err err;
  if(r->kind == WAIT_DELETE) {
    if(s) {
      r->seen = true;
      return CTL_FOLLOW_MORE;
    }
    return r->seen ? met(r) : CTL_EXIT_OK; /* absent already: silent */
  }
  if(!s) {
    if(!r->seen)
      ctl_not_found(r->name);
    else
      fprintf(stderr, "error: session %s/%s was deleted while waiting for "
              "the condition\n", r->ns, r->name);
    return CTL_EXIT_FAIL;
  }
  r->seen = true;
  if(r->kind == WAIT_CONDITION)
    return condition_met(r, s) ? met(r) : CTL_FOLLOW_MORE;
  if(jsonpath_met(r, s, &err))
    return met(r);
  if(err) {
    fprintf(stderr, "error: --for=jsonpath: %s\n", sc_strerror(err));
    return CTL_EXIT_FAIL;
  }
  return CTL_FOLLOW_MORE;
}

int ctl_cmd_wait(ctl_env *env, int argc, char **argv)
{
  const char *val, *for_ = NULL;
  wait_run r;
  ctl_resources res;
  ctl_args p;
  int64_t timeout_ms = WAIT_DEFAULT_TIMEOUT_MS;
  struct event_base *base = NULL;
  store *st;
  int id, rc;

  memset(&r, 0, sizeof(r));
  memset(&res, 0, sizeof(res));
  r.ns = SESSION_DEFAULT_NAMESPACE;
  ctl_args_init(&p, argc, argv, wait_opts);
  while((id = ctl_args_step(&p, env, wait_help, &res, &val, &rc)) !=
        CTL_ARG_END) {
    switch(id) {
    case CTL_ARG_EXIT:
      ctl_jsonpath_free(r.jp);
      return rc;
    case OPT_NS:
      r.ns = val;
      break;
    case OPT_FOR:
      for_ = val;
      break;
    case OPT_TIMEOUT:
      if(!ctl_parse_timeout("--timeout", val, &timeout_ms)) {
        ctl_jsonpath_free(r.jp);
        return CTL_EXIT_USAGE;
      }
      break;
    default:
      ctl_jsonpath_free(r.jp);
      return ctl_usage_error("wait: unexpected flag");
    }
  }
  if(!for_)
    return ctl_usage_error("wait: --for is required (condition=TYPE[=VALUE], "
                           "jsonpath='{EXPR}'=VALUE or delete)");
  if(!parse_for(for_, &r))
    return CTL_EXIT_USAGE;
  rc = CTL_EXIT_USAGE;
  if(ctl_resources_parse(&res, "wait", true))
    goto out;
  if(res.n_names != 1) {
    ctl_usage_error("wait: give one session NAME (got %zu)", res.n_names);
    goto out;
  }
  r.name = res.names[0];
  if(!ctl_check_namespace(r.ns))
    goto out;
  rc = CTL_EXIT_FAIL;
  base = event_base_new();
  if(!base) {
    fprintf(stderr, "error: cannot create the event loop\n");
    goto out;
  }
  st = ctl_open_store_waiting(env, base);
  if(st) {
    rc = ctl_follow(st, base, r.ns, r.name, timeout_ms, check_wait, &r);
    if(rc == CTL_EXIT_TIMEOUT)
      fprintf(stderr, "error: timed out waiting for the condition on "
              "sessions/%s\n", r.name);
    store_close(st);
  }
out:
  if(base)
    event_base_free(base);
  ctl_jsonpath_free(r.jp);
  return rc;
}
