/* policy_watch.c - the policy file read again when it changes
 * (policy_watch.h). */
#include "controller/ops/policy_watch.h"

#include <stdlib.h>
#include <string.h>

#include "lib/filesig.h"

#define POLICY_CHECK_MS 1000

struct policy_watch {
  /* the flags, copied: a reload builds on the same */
  char *s[5];
  policy_flags flags;
  char *file;
  logger *lg;
  metrics *m;
  policy *cur;
  sc_filesig sig;      /* the file as last read (good or bad) */
  int64_t checked_ms;
  policy_watch_fn fn;
  void *ud;
};

sc_err policy_watch_declare_metrics(metrics *m)
{
  sc_err err = metrics_declare(
    m, "session_controller_policy_reloads_total", METRIC_COUNTER,
    "Times the tenant policy file was read again after it changed "
    "(result ok: the new policy is in use; error: it was refused and the "
    "last good policy stays).", NULL, 0);
  if(!err)
    err = metrics_declare(
      m, "session_controller_policy_last_reload_ok", METRIC_GAUGE,
      "1 when the tenant policy in use is the policy file as it is on "
      "disk, 0 when the file's last change was refused.", NULL, 0);
  return err;
}

static char *dup0(const char *s, bool *nomem)
{
  char *d;
  if(!s)
    return NULL;
  if(!(d = strdup(s)))
    *nomem = true;
  return d;
}

sc_err policy_watch_new(const policy_flags *flags, const char *file,
                        logger *lg, metrics *m, policy_watch **out,
                        sc_errbuf *eb)
{
  policy_watch *w = calloc(1, sizeof(*w));
  bool nomem = false;
  sc_err err;
  *out = NULL;
  if(!w)
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  w->flags.workspace_roots = w->s[0] = dup0(flags->workspace_roots, &nomem);
  w->flags.volume_policy = w->s[1] = dup0(flags->volume_policy, &nomem);
  w->flags.egress_ceiling = w->s[2] = dup0(flags->egress_ceiling, &nomem);
  w->flags.egress_allow = w->s[3] = dup0(flags->egress_allow, &nomem);
  w->flags.allowed_templates = w->s[4] =
    dup0(flags->allowed_templates, &nomem);
  w->file = dup0(file, &nomem);
  w->lg = lg;
  w->m = m;
  if(nomem) {
    policy_watch_free(w);
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  /* the signature first: a change while it is read is seen next time */
  if(w->file)
    sc_filesig_of(w->file, &w->sig);
  err = policy_load(&w->flags, w->file, &w->cur, eb);
  if(err) {
    policy_watch_free(w);
    return err;
  }
  metrics_set(m, "session_controller_policy_last_reload_ok", NULL, 1);
  *out = w;
  return SC_OK;
}

void policy_watch_free(policy_watch *w)
{
  size_t i;
  if(!w)
    return;
  for(i = 0; i < sizeof(w->s) / sizeof(w->s[0]); i++)
    free(w->s[i]);
  free(w->file);
  policy_free(w->cur);
  free(w);
}

void policy_watch_on_change(policy_watch *w, policy_watch_fn fn, void *ud)
{
  w->fn = fn;
  w->ud = ud;
}

const policy *policy_watch_current(const policy_watch *w)
{
  return w ? w->cur : NULL;
}

void policy_watch_poll(policy_watch *w, int64_t now_ms)
{
  sc_filesig sig;
  sc_errbuf eb;
  policy *np = NULL, *old;
  char desc[512];
  if(!w || !w->file || now_ms - w->checked_ms < POLICY_CHECK_MS)
    return;
  w->checked_ms = now_ms;
  sc_filesig_of(w->file, &sig);
  if(sc_filesig_equal(&sig, &w->sig))
    return;
  w->sig = sig;
  eb.msg[0] = '\0';
  if(policy_load(&w->flags, w->file, &np, &eb)) {
    metrics_add(w->m, "session_controller_policy_reloads_total",
                "result=\"error\"", 1);
    metrics_set(w->m, "session_controller_policy_last_reload_ok", NULL, 0);
    log_kv(w->lg, LOG_ERROR, "cannot reload the tenant policy: the last "
           "good policy stays in use", "file", w->file, "error", eb.msg,
           NULL);
    return;
  }
  old = w->cur;
  w->cur = np;
  metrics_add(w->m, "session_controller_policy_reloads_total",
              "result=\"ok\"", 1);
  metrics_set(w->m, "session_controller_policy_last_reload_ok", NULL, 1);
  policy_describe(np, desc, sizeof(desc));
  log_kv(w->lg, LOG_INFO, "tenant policy reloaded", "file", w->file,
         "policy", desc, NULL);
  if(w->fn)
    w->fn(w->ud, np);
  policy_free(old); /* only once nobody is pointed at it */
}
