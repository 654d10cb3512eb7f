/* cmd_connect.c - `sessionctl connect NAME`: ask the controller for a
 * running sandbox for a session and wait for its answer (the connect
 * request of docs/session-api.md: the lea.io/connect annotation set to a
 * new nonce, answered in status.connect with the same nonce). */
#include <event2/event.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/duration.h"
#include "api/manifest.h"
#include "cmd/sessionctl/ctl.h"
#include "cmd/sessionctl/follow.h"
#include "cmd/sessionctl/print.h"
#include "controller/store/store.h"

#define CONNECT_ATTEMPTS 5          /* compare-and-set conflicts retried */
#define CONNECT_DEFAULT_TIMEOUT_MS 60000

static const char connect_help[] =
  "Ask the controller for a running sandbox for a session, and wait for it.\n"
  "\n"
  "connect sets the annotation " SESSION_ANNOT_CONNECT " of the session to a "
  "new\n"
  "nonce (a compare-and-set of that one annotation: the spec and its\n"
  "generation stay as they are) and follows the store until the controller\n"
  "answers in status.connect with the same nonce:\n"
  "  Served    the sandbox of status.sandboxID is running and the phase is\n"
  "            Running: its address is printed, exit 0\n"
  "  Refused   \"connect refused: MESSAGE\" on stderr (the session is Ended,\n"
  "            Paused by its spec, invalid, in conflict...), exit 1\n"
  "An answer to a connect another caller asked for after this one (its\n"
  "nonce replaced ours in the annotation) answers this one too.\n"
  "A session that does not exist is created from -f MANIFEST (the manifest\n"
  "must hold exactly that one Session, NAME in the namespace of -n) with\n"
  "the annotation already set; without -f it is an error. -f never changes\n"
  "a session that exists. The store must exist (apply creates one).\n"
  "\n"
  "Usage:\n"
  "  sessionctl connect NAME [-n NS] [-f MANIFEST] [--timeout 60s] "
  "[-o FORMAT]\n"
  "  sessionctl connect session/NAME ...\n"
  "\n"
  "Output (stdout), with the sandbox's address as the controller wrote it\n"
  "(status.domain, status.envdAddress; never an access token):\n"
  "  (default)  session, sandboxID, domain, envdAddress, template,\n"
  "             state, one \"key: value\" a line (<none> when unset)\n"
  "  json, yaml {session: NS/NAME, sandboxID, domain, envdAddress,\n"
  "             template, state} (null when unset)\n"
  "  name       the sandboxID alone\n"
  "\n"
  "Exit status: 0 served; 1 refused, the session absent (without -f) or\n"
  "deleted while waiting, or the store failed; 2 bad command line; 3 no\n"
  "answer within --timeout (is a session-controller running on this\n"
  "store?).\n"
  "\n"
  "Flags:\n"
  "  -n, --namespace NS     the namespace (default \"default\")\n"
  "  -f, --filename FILE    a manifest (YAML or JSON, or - for stdin) to\n"
  "                         create the session from when it does not exist\n"
  "      --timeout D        how long to wait for the answer (default 60s;\n"
  "                         0 checks once)\n"
  "  -o, --output FORMAT    json, yaml or name\n"
  "      --nonce N          the nonce to ask with (1 to 64 characters of\n"
  "                         A-Z a-z 0-9 . _ -); default 16 random hex digits.\n"
  "                         It must be new: one the session already carries\n"
  "                         or was answered with is refused\n"
  "      --store URL        sqlite:PATH or kube[:CONTEXT], see sessionctl "
  "--help\n"
  "                         (default $SESSION_STORE, else " CTL_DEFAULT_STORE
  ")\n"
  "  -h, --help             this help\n";

enum { OPT_NS = 1, OPT_FILE, OPT_TIMEOUT, OPT_OUTPUT, OPT_NONCE };

static const ctl_opt connect_opts[] = {
  {"namespace", 'n', true, OPT_NS},
  {"filename", 'f', true, OPT_FILE},
  {"timeout", 0, true, OPT_TIMEOUT},
  {"output", 'o', true, OPT_OUTPUT},
  {"nonce", 0, true, OPT_NONCE},
  {NULL, 0, false, 0}
};

static bool ctl_connect_nonce_ok(const char *n)
{
  size_t i, len = n ? strlen(n) : 0;
  if(!len || len > SESSION_CONNECT_NONCE_MAX)
    return false;
  for(i = 0; i < len; i++) {
    char c = n[i];
    if(!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
      return false;
  }
  return true;
}

/* 16 random hex digits into buf (17 bytes) */
static bool new_nonce(char *buf, size_t len)
{
  unsigned char b[8];
  size_t i;
  if(len < 2 * sizeof(b) + 1 || RAND_bytes(b, sizeof(b)) != 1)
    return false;
  for(i = 0; i < sizeof(b); i++)
    snprintf(buf + 2 * i, 3, "%02x", b[i]);
  return true;
}

/* the nonce was used on s already: asked with, or answered */
static bool nonce_used(const session *s, const char *nonce)
{
  const char *a = sc_kvlist_get(&s->meta.annotations, SESSION_ANNOT_CONNECT);
  return (a && !strcmp(a, nonce)) ||
         (s->status.connect_nonce && !strcmp(s->status.connect_nonce, nonce));
}

typedef struct connect_run {
  const char *ns, *name;
  char nonce[SESSION_CONNECT_NONCE_MAX + 1];
  bool nonce_given;          /* --nonce: never replaced */
  ctl_output output;         /* TABLE (the block), JSON, YAML or NAME */
  /* status.connect.nonce when the request was written ("" for none) */
  char before[SESSION_CONNECT_NONCE_MAX + 1];
  /* what was last seen, for the timeout's message */
  char last[200];
} connect_run;

static const char *or_none(const char *s)
{
  return s && *s ? s : NULL;
}

static void add_str(json_object *o, const char *k, const char *v)
{
  json_object_object_add(o, k, or_none(v) ? json_object_new_string(v)
                                          : NULL);
}

/* print the answer of a served connect; the exit status */
static int print_served(const connect_run *r, const session *s)
{
  const session_status *st = &s->status;
  dynbuf out;
  sc_err err = SC_OK;
  char key[2 * 253 + 2];
  dynbuf_init(&out, 1 << 20);
  snprintf(key, sizeof(key), "%s/%s", r->ns, r->name);
  if(r->output == CTL_OUTPUT_JSON || r->output == CTL_OUTPUT_YAML) {
    json_object *o = json_object_new_object();
    if(!o)
      err = SC_ERR_NOMEM;
    else {
      add_str(o, "session", key);
      add_str(o, "sandboxID", st->sandbox_id);
      add_str(o, "domain", st->domain);
      add_str(o, "envdAddress", st->envd_address);
      add_str(o, "template", s->spec.template_id);
      add_str(o, "state", st->sandbox_state);
      err = r->output == CTL_OUTPUT_JSON ? ctl_json_print(o, &out)
                                         : ctl_yaml_print(o, &out);
      json_object_put(o);
    }
  }
  else if(r->output == CTL_OUTPUT_NAME) {
    char *id = ctl_text_dup(st->sandbox_id);
    err = id ? dynbuf_printf(&out, "%s\n", id) : SC_ERR_NOMEM;
    free(id);
  }
  else {
    static const char *const keys[] = {"session", "sandboxID", "domain",
                                       "envdAddress", "template", "state"};
    const char *vals[6];
    size_t i;
    vals[0] = key;
    vals[1] = st->sandbox_id;
    vals[2] = st->domain;
    vals[3] = st->envd_address;
    vals[4] = s->spec.template_id;
    vals[5] = st->sandbox_state;
    for(i = 0; i < 6 && !err; i++) {
      char *v = ctl_text_dup(or_none(vals[i]) ? vals[i] : "<none>");
      err = v ? dynbuf_printf(&out, "%s:%*s%s\n", keys[i],
                              (int)(12 - strlen(keys[i])), "", v)
              : SC_ERR_NOMEM;
      free(v);
    }
  }
  if(err) {
    fprintf(stderr, "error: formatting output: %s\n", sc_strerror(err));
    dynbuf_free(&out);
    return CTL_EXIT_FAIL;
  }
  if(!ctl_write_stdout(&out)) {
    dynbuf_free(&out);
    return CTL_EXIT_FAIL;
  }
  dynbuf_free(&out);
  return CTL_EXIT_OK;
}

/* Is status.connect the answer to our request? Its nonce is ours; or
 * another caller's connect replaced our nonce in the annotation after us
 * and the status answers that one: written after ours, its answer says
 * at least as much about the session as an answer to ours would. */
static bool answers(const connect_run *r, const session *s)
{
  const char *a = sc_kvlist_get(&s->meta.annotations, SESSION_ANNOT_CONNECT);
  const char *n = s->status.connect_nonce;
  if(!n)
    return false;
  if(!strcmp(n, r->nonce))
    return true;
  /* never the answer the session had when our request was written (an
   * old nonce put back, by an apply of an old manifest, is no request) */
  return a && strcmp(a, r->nonce) && !strcmp(n, a) &&
         (!r->before[0] || strcmp(n, r->before));
}

static int check_answer(const session *s, void *ud)
{
  connect_run *r = ud;
  const session_status *st;
  if(!s) {
    fprintf(stderr, "error: session %s/%s was deleted while waiting for the "
            "answer to connect request %s\n", r->ns, r->name, r->nonce);
    return CTL_EXIT_FAIL;
  }
  st = &s->status;
  if(!answers(r, s)) {
    snprintf(r->last, sizeof(r->last), "phase %s, no answer yet",
             st->phase ? session_phase_name(st->phase) : "(none yet)");
    return CTL_FOLLOW_MORE;
  }
  if(st->connect_result &&
     !strcmp(st->connect_result, SESSION_CONNECT_REFUSED)) {
    char *msg = ctl_text_dup(or_none(st->connect_message)
                             ? st->connect_message : "(no message)");
    fprintf(stderr, "connect refused: %s\n", msg ? msg : "(no message)");
    free(msg);
    return CTL_EXIT_FAIL;
  }
  if(st->connect_result &&
     !strcmp(st->connect_result, SESSION_CONNECT_SERVED) &&
     st->phase == SESSION_PHASE_RUNNING && or_none(st->sandbox_id))
    return print_served(r, s);
  /* answered, but not (or no longer) a running sandbox: a later status
   * may still show one; the timeout says what was seen */
  {
    char *res = ctl_text_dup(st->connect_result ? st->connect_result : "");
    snprintf(r->last, sizeof(r->last), "answered %s but phase %s%s",
             res ? res : "", st->phase ? session_phase_name(st->phase)
                                       : "(none)",
             or_none(st->sandbox_id) ? "" : " and no sandboxID");
    free(res);
  }
  return CTL_FOLLOW_MORE;
}

/* Create ns/name from the manifest's object m, the annotation set. */
static int create_from(store *st, connect_run *r, session *m)
{
  store_apply_outcome oc = STORE_APPLY_UNCHANGED;
  session *const objs[1] = {m};
  sc_errbuf eb;
  sc_err err = sc_kvlist_set(&m->meta.annotations, SESSION_ANNOT_CONNECT,
                             r->nonce);
  if(err) {
    fprintf(stderr, "error: out of memory\n");
    return CTL_EXIT_FAIL;
  }
  eb.msg[0] = 0;
  err = store_apply(st, objs, 1, &oc, &eb);
  if(err)
    return ctl_store_error(err, &eb);
  /* on stderr: stdout is the answer alone (-o name, json) */
  fprintf(stderr, "session/%s %s\n", r->name,
          oc == STORE_APPLY_CREATED      ? "created"
          : oc == STORE_APPLY_CONFIGURED ? "configured"
                                         : "unchanged");
  return CTL_EXIT_OK;
}

/* Write the request: set the annotation by compare-and-set (re-read and
 * retried on a conflict), or create the session from m. */
static int request(store *st, connect_run *r, session *m)
{
  int attempt;
  sc_errbuf eb;
  sc_err err = SC_OK;
  for(attempt = 0; attempt < CONNECT_ATTEMPTS; attempt++) {
    session *s = NULL;
    char *newver = NULL;
    eb.msg[0] = 0;
    err = ctl_get_session(st, r->ns, r->name, &s, &eb);
    if(err == SC_ERR_NOT_FOUND && m)
      return create_from(st, r, m);
    if(err == SC_ERR_NOT_FOUND) {
      ctl_not_found(r->name);
      fprintf(stderr, "error: no session %s/%s to connect to (give -f "
              "MANIFEST to create it)\n", r->ns, r->name);
      return CTL_EXIT_FAIL;
    }
    if(err)
      return ctl_store_error(err, &eb);
    if(nonce_used(s, r->nonce)) {
      session_free(s);
      if(r->nonce_given) {
        fprintf(stderr, "error: --nonce %s: session %s/%s already carries "
                "or was answered with that nonce; a connect request needs a "
                "new one\n", r->nonce, r->ns, r->name);
        return CTL_EXIT_FAIL;
      }
      if(!new_nonce(r->nonce, sizeof(r->nonce))) {
        fprintf(stderr, "error: no random bytes for a nonce\n");
        return CTL_EXIT_FAIL;
      }
      continue;
    }
    err = store_set_annotation(st, r->ns, r->name, s->meta.resource_version,
                               SESSION_ANNOT_CONNECT, r->nonce, &newver,
                               &eb);
    /* the version guarded the write: this was the status then */
    snprintf(r->before, sizeof(r->before), "%s",
             s->status.connect_nonce ? s->status.connect_nonce : "");
    session_free(s);
    free(newver);
    if(err != SC_ERR_CONFLICT && err != SC_ERR_NOT_FOUND)
      break;
    /* changed or deleted since it was read: read it again */
  }
  if(err == SC_ERR_CONFLICT) {
    fprintf(stderr, "error: session \"%s\" kept changing under us (%d "
            "conflicts); try again\n", r->name, CONNECT_ATTEMPTS);
    return CTL_EXIT_FAIL;
  }
  if(err)
    return ctl_store_error(err, &eb);
  return CTL_EXIT_OK;
}

/* Read -f: exactly one Session, ns/name; *out is taken from the set. */
static int read_manifest(const char *file, const connect_run *r,
                         session **out)
{
  manifest_set set;
  int rc = CTL_EXIT_FAIL;
  *out = NULL;
  memset(&set, 0, sizeof(set));
  if(ctl_read_manifests(&file, 1, NULL, &set))
    fprintf(stderr, "error: -f %s: the manifest is not valid; nothing "
            "written\n", file);
  else if(set.n != 1)
    fprintf(stderr, "error: -f %s: holds %zu objects; connect creates one "
            "Session, %s/%s\n", file, set.n, r->ns, r->name);
  else if(strcmp(set.items[0].s->meta.name, r->name) ||
          strcmp(session_eff_namespace(set.items[0].s), r->ns))
    fprintf(stderr, "error: -f %s:%d: the manifest's Session is %s/%s, not "
            "%s/%s (the NAME argument and -n)\n", set.items[0].file,
            set.items[0].line, session_eff_namespace(set.items[0].s),
            set.items[0].s->meta.name, r->ns, r->name);
  else {
    *out = set.items[0].s;
    set.items[0].s = NULL;
    rc = CTL_EXIT_OK;
  }
  manifest_set_free(&set);
  return rc;
}

int ctl_cmd_connect(ctl_env *env, int argc, char **argv)
{
  const char *val, *file = NULL;
  connect_run r;
  ctl_resources res;
  ctl_args p;
  int64_t timeout_ms = CONNECT_DEFAULT_TIMEOUT_MS;
  struct event_base *base = NULL;
  store *st = NULL;
  session *m = NULL;
  int id, rc;

  memset(&r, 0, sizeof(r));
  memset(&res, 0, sizeof(res));
  r.ns = SESSION_DEFAULT_NAMESPACE;
  r.output = CTL_OUTPUT_TABLE;
  ctl_args_init(&p, argc, argv, connect_opts);
  while((id = ctl_args_step(&p, env, connect_help, &res, &val, &rc)) !=
        CTL_ARG_END) {
    switch(id) {
    case CTL_ARG_EXIT:
      return rc;
    case OPT_NS:
      r.ns = val;
      break;
    case OPT_FILE:
      if(file)
        return ctl_usage_error("connect: -f given twice (one manifest, one "
                               "Session)");
      if(!*val)
        return ctl_usage_error("connect: -f needs a non-empty path");
      file = val;
      break;
    case OPT_TIMEOUT:
      if(!ctl_parse_timeout("--timeout", val, &timeout_ms))
        return CTL_EXIT_USAGE;
      break;
    case OPT_OUTPUT:
      rc = ctl_output_parse(val);
      if(rc != CTL_OUTPUT_JSON && rc != CTL_OUTPUT_YAML &&
         rc != CTL_OUTPUT_NAME)
        return ctl_usage_error("connect: unknown output format \"%s\" (want "
                               "json, yaml or name)", val);
      r.output = (ctl_output)rc;
      break;
    case OPT_NONCE:
      if(!ctl_connect_nonce_ok(val))
        return ctl_usage_error("connect: invalid --nonce \"%.80s\": 1 to %d "
                               "characters of A-Z a-z 0-9 . _ -", val,
                               SESSION_CONNECT_NONCE_MAX);
      snprintf(r.nonce, sizeof(r.nonce), "%s", val);
      r.nonce_given = true;
      break;
    default:
      return ctl_usage_error("connect: unexpected flag");
    }
  }
  if(ctl_resources_parse(&res, "connect", true))
    return CTL_EXIT_USAGE;
  if(res.n_names != 1)
    return ctl_usage_error("connect: give one session NAME (got %zu)",
                           res.n_names);
  r.name = res.names[0];
  if(!ctl_check_namespace(r.ns))
    return CTL_EXIT_USAGE;
  if(!r.nonce_given && !new_nonce(r.nonce, sizeof(r.nonce))) {
    fprintf(stderr, "error: no random bytes for a nonce\n");
    return CTL_EXIT_FAIL;
  }
  /* the manifest is read and checked before the store is opened */
  if(file && read_manifest(file, &r, &m))
    return CTL_EXIT_FAIL;
  base = event_base_new();
  if(!base) {
    fprintf(stderr, "error: cannot create the event loop\n");
    session_free(m);
    return CTL_EXIT_FAIL;
  }
  st = ctl_open_store_waiting(env, base);
  rc = st ? request(st, &r, m) : CTL_EXIT_FAIL;
  if(!rc) {
    rc = ctl_follow(st, base, r.ns, r.name, timeout_ms, check_answer, &r);
    if(rc == CTL_EXIT_TIMEOUT) {
      char d[32];
      duration_format(timeout_ms, d, sizeof(d));
      fprintf(stderr, "error: timed out after %s waiting for the answer to "
              "connect request %s on session %s/%s (%s); is a "
              "session-controller running on this store?\n", d, r.nonce,
              r.ns, r.name, r.last[0] ? r.last : "no answer");
    }
  }
  store_close(st);
  event_base_free(base);
  session_free(m);
  return rc;
}
