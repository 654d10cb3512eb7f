/* common.c - helpers shared by sessionctl's commands: reading manifests,
 * opening the store, printing errors the same way everywhere. */
#include "cmd/sessionctl/ctl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/manifest.h"
#include "controller/cube/cube.h" /* SC_VERSION */
#include "controller/store/store.h"
#include "cmd/sessionctl/print.h"

size_t ctl_read_manifests(const char *const *paths, size_t n,
                          const struct policy *pol, manifest_set *set)
{
  size_t i, before = set->n_errors;
  manifest_opts o = {0, pol};
  for(i = 0; i < n; i++)
    (void)manifest_read_path(paths[i], &o, set); /* errors land in set */
  for(i = before; i < set->n_errors; i++)
    fprintf(stderr, "%s\n", set->errors[i]);
  return set->n_errors - before;
}

/* Options after '?' in the store URL, for tests and tuning:
 *   sqlite:PATH?history=N&poll_ms=N&busy_timeout_ms=N
 *   kube[:CONTEXT]?watch_timeout=SECONDS
 * (store_open_opts.history_keep, poll_interval_ms, busy_timeout_ms,
 * watch_timeout_s). The kube store finds its server by $KUBECONFIG, the
 * in-cluster service account or ~/.kube/config. */
static bool parse_url_opts(const char *q, store_open_opts *o)
{
  while(*q) {
    const char *amp = strchr(q, '&');
    size_t len = amp ? (size_t)(amp - q) : strlen(q);
    const char *eq = memchr(q, '=', len);
    char *end;
    long long v;
    size_t klen;
    if(!eq) {
      fprintf(stderr, "error: store URL option \"%.*s\": want KEY=NUMBER\n",
              (int)len, q);
      return false;
    }
    klen = (size_t)(eq - q);
    errno = 0;
    v = strtoll(eq + 1, &end, 10);
    if(errno || end != q + len || end == eq + 1 || v < 0 || v > 1000000000) {
      fprintf(stderr, "error: store URL option \"%.*s\": the value must be "
              "a number from 0 to 1000000000\n", (int)len, q);
      return false;
    }
    if(klen == 7 && !strncmp(q, "history", 7))
      o->history_keep = (int)v;
    else if(klen == 7 && !strncmp(q, "poll_ms", 7))
      o->poll_interval_ms = (int)v;
    else if(klen == 15 && !strncmp(q, "busy_timeout_ms", 15))
      o->busy_timeout_ms = (int)v;
    else if(klen == 13 && !strncmp(q, "watch_timeout", 13))
      o->watch_timeout_s = (int)v;
    else {
      fprintf(stderr, "error: unknown store URL option \"%.*s\" (known: "
              "history, poll_ms, busy_timeout_ms, watch_timeout)\n", (int)klen, q);
      return false;
    }
    q += len;
    if(*q == '&')
      q++;
  }
  return true;
}

static store *open_store(const ctl_env *env, struct event_base *base,
                         bool may_create, int poll_ms, bool announce);

store *ctl_open_store(const ctl_env *env, struct event_base *base,
                      bool may_create)
{
  return open_store(env, base, may_create, 0, true);
}

store *ctl_init_store(const ctl_env *env, bool *created)
{
  store *st = open_store(env, NULL, true, 0, false);
  *created = st && store_created(st);
  return st;
}

/* connect and wait: a caller waits on the answer. The SQLite watch wakes
 * on the kernel's report of a write (inotify); where there is none it
 * polls, every 10 ms here instead of 100 (a SELECT of one row; ?poll_ms=
 * in the URL still wins) */
store *ctl_open_store_waiting(const ctl_env *env, struct event_base *base)
{
  return open_store(env, base, false, 10, true);
}

static store *open_store(const ctl_env *env, struct event_base *base,
                         bool may_create, int poll_ms, bool announce)
{
  store_open_opts o;
  sc_errbuf eb;
  store *st = NULL;
  sc_err err;
  const char *q = strchr(env->store_url, '?');
  char *url;
  memset(&o, 0, sizeof(o));
  o.base = base;
  o.create = may_create;
  o.user_agent = "sessionctl/" SC_VERSION; /* the API server's audit log */
  eb.msg[0] = 0;
  url = q ? strndup(env->store_url, (size_t)(q - env->store_url))
          : strdup(env->store_url);
  if(!url) {
    fprintf(stderr, "error: out of memory\n");
    return NULL;
  }
  o.poll_interval_ms = poll_ms;
  if(q && !parse_url_opts(q + 1, &o)) {
    free(url);
    return NULL;
  }
  err = store_open(url, &o, &st, &eb);
  free(url);
  if(err) {
    fprintf(stderr, "error: cannot open store %s: %s%s\n", env->store_url,
            eb.msg[0] ? eb.msg : sc_strerror(err),
            err == SC_ERR_NOT_FOUND && !may_create
              ? " (sessionctl store init makes an empty store; apply makes "
                "one with its objects)" : "");
    return NULL;
  }
  if(announce && store_created(st))
    fprintf(stderr, "created store %s\n", store_url(st));
  return st;
}

int ctl_store_error(sc_err err, const sc_errbuf *eb)
{
  const char *msg = eb && eb->msg[0] ? eb->msg : sc_strerror(err);
  if(err == SC_ERR_BUSY)
    fprintf(stderr, "error: %s (the store is locked by another process; "
            "retry in a moment)\n", msg);
  else
    fprintf(stderr, "error: %s\n", msg);
  return CTL_EXIT_FAIL;
}

void ctl_not_found(const char *name)
{
  fprintf(stderr, "Error from server (NotFound): sessions \"%s\" not found\n",
          name);
}

sc_err ctl_get_session(store *st, const char *ns, const char *name,
                       session **out, sc_errbuf *eb)
{
  sc_err err = store_get(st, ns, name, out, eb);
  if(!err && (*out)->meta.deletion_timestamp) {
    session_free(*out);
    *out = NULL;
    err = SC_ERR_NOT_FOUND;
  }
  return err;
}

int ctl_each_name(ctl_env *env, const char *ns, const ctl_resources *res,
                  ctl_name_fn one, void *arg)
{
  store *st;
  size_t i;
  int rc = CTL_EXIT_OK, r;
  if(!ctl_check_namespace(ns))
    return CTL_EXIT_USAGE;
  st = ctl_open_store(env, NULL, false);
  if(!st)
    return CTL_EXIT_FAIL;
  for(i = 0; i < res->n_names; i++) {
    r = one(st, ns, res->names[i], arg);
    if(r)
      rc = r;
  }
  store_close(st);
  return rc;
}

bool ctl_check_namespace(const char *ns)
{
  size_t i, len = strlen(ns);
  if(!len || len > 63) {
    ctl_usage_error("invalid namespace \"%s\": must be 1-63 characters", ns);
    return false;
  }
  for(i = 0; i < len; i++) {
    char c = ns[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              (c == '-' && i && i + 1 < len);
    if(!ok) {
      ctl_usage_error("invalid namespace \"%s\": must be lower-case letters, "
                      "digits and '-', starting and ending with a letter or "
                      "digit", ns);
      return false;
    }
  }
  return true;
}

void ctl_warn_skipped(const store_list_result *res)
{
  size_t i;
  for(i = 0; res && i < res->n_skipped; i++) {
    const store_skipped *k = &res->skipped[i];
    char *ns = ctl_text_dup(k->ns ? k->ns : "?");
    char *name = ctl_text_dup(k->name ? k->name : "?");
    char *why = ctl_text_dup(k->reason ? k->reason : "");
    fprintf(stderr, "warning: session %s/%s is left out: it does not decode "
            "(%s); the controller does nothing for it until it is fixed\n",
            ns ? ns : "?", name ? name : "?", why ? why : "");
    free(ns);
    free(name);
    free(why);
  }
}
