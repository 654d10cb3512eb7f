/* describe.c - the text of `sessionctl describe session NAME`: a kubectl
 * describe-like layout of metadata, spec, status and conditions. */
#include "cmd/sessionctl/describe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/duration.h"
#include "cmd/sessionctl/print.h"

/* One line "  Key:   value" with the value column at `width`. */
static sc_err kv(dynbuf *b, int indent, int width, const char *key,
                 const char *val)
{
  int pad = width - indent - (int)strlen(key) - 1;
  char *shown = ctl_text_dup(val && *val ? val : "<none>");
  sc_err err;
  if(pad < 1)
    pad = 1;
  if(!shown)
    return SC_ERR_NOMEM;
  /* the object's text (names, tags, messages) is shown, never obeyed */
  err = dynbuf_printf(b, "%*s%s:%*s%s\n", indent, "", key, pad, "", shown);
  free(shown);
  return err;
}

static sc_err kv_int(dynbuf *b, int indent, int width, const char *key,
                     long long v)
{
  char num[24];
  snprintf(num, sizeof(num), "%lld", v);
  return kv(b, indent, width, key, num);
}

static sc_err kv_time(dynbuf *b, int indent, int width, const char *key,
                      sc_time t)
{
  char ts[SCTIME_RFC3339_MAX];
  if(!t)
    return kv(b, indent, width, key, NULL);
  sctime_format_rfc3339(t, ts, sizeof(ts));
  return kv(b, indent, width, key, ts);
}

/* a value, marked "(default)" when the field is absent from the object */
static sc_err kv_eff(dynbuf *b, int indent, int width, const char *key,
                     const char *val, bool dflt)
{
  char v[300];
  if(!dflt || !val)
    return kv(b, indent, width, key, val);
  snprintf(v, sizeof(v), "%s (default)", val);
  return kv(b, indent, width, key, v);
}

static sc_err kv_dur(dynbuf *b, int indent, int width, const char *key,
                     int64_t ms, const char *zero, bool dflt)
{
  char d[32];
  if(!ms && zero)
    return kv_eff(b, indent, width, key, zero, dflt);
  duration_format(ms, d, sizeof(d));
  return kv_eff(b, indent, width, key, d, dflt);
}

/* A map: inline "k=v,k=v" for labels (kubectl puts one per line, aligned);
 * here one per line under the key, indented. */
static sc_err kv_map(dynbuf *b, int indent, int width, const char *key,
                     const sc_kvlist *l)
{
  size_t i;
  sc_err err;
  if(!l->n)
    return kv(b, indent, width, key, NULL);
  for(i = 0; i < l->n; i++) {
    char line[1024];
    snprintf(line, sizeof(line), "%s=%s", l->items[i].key,
             l->items[i].value);
    if(!i)
      err = kv(b, indent, width, key, line);
    else {
      char *shown = ctl_text_dup(line);
      if(!shown)
        return SC_ERR_NOMEM;
      err = dynbuf_printf(b, "%*s%s\n", width, "", shown);
      free(shown);
    }
    if(err)
      return err;
  }
  return SC_OK;
}

/* spec.network, spec.volumeMounts and spec.workspace, one line each part;
 * an absent part says whose default applies */
static const char *optbool_text(session_optbool v, const char *unset)
{
  return v == SESSION_OPT_TRUE ? "true" : v == SESSION_OPT_FALSE ? "false"
                                                                 : unset;
}

static sc_err kv_join(dynbuf *b, const char *key, char *const *v, size_t n)
{
  dynbuf j;
  size_t i;
  sc_err err = SC_OK;
  char *s;
  dynbuf_init(&j, 64 * 1024);
  for(i = 0; i < n && !err; i++)
    err = dynbuf_printf(&j, "%s%s", i ? ", " : "", v[i]);
  s = err ? NULL : dynbuf_take(&j);
  dynbuf_free(&j);
  if(err || (n && !s))
    return err ? err : SC_ERR_NOMEM;
  err = kv(b, 2, 24, key, s);
  free(s);
  return err;
}

static sc_err describe_sandbox_config(dynbuf *b, const session_spec *sp)
{
  dynbuf j;
  size_t i;
  sc_err err;
  char *s;
  err = kv(b, 2, 24, "Internet Access",
           optbool_text(sp->net_internet, "(the controller's default)"));
  if(!err)
    err = kv_join(b, "Allow Out", sp->net_allow_out, sp->n_net_allow_out);
  if(!err)
    err = kv_join(b, "Deny Out", sp->net_deny_out, sp->n_net_deny_out);
  if(!err)
    err = kv(b, 2, 24, "Allow Public Traffic",
             optbool_text(sp->net_public, "(Cube's default)"));
  if(err)
    return err;
  dynbuf_init(&j, 64 * 1024);
  for(i = 0; i < sp->n_volume_mounts && !err; i++) {
    const session_volume_mount *m = &sp->volume_mounts[i];
    err = dynbuf_printf(&j, "%s%s at %s%s", i ? ", " : "", m->name, m->path,
                        m->read_only ? " (read-only)" : "");
  }
  s = err ? NULL : dynbuf_take(&j);
  dynbuf_free(&j);
  if(err || (sp->n_volume_mounts && !s))
    return err ? err : SC_ERR_NOMEM;
  err = kv(b, 2, 24, "Volume Mounts", s);
  free(s);
  if(!err && sp->workspace_host_path) {
    char w[1100];
    snprintf(w, sizeof(w), "host %s at %s", sp->workspace_host_path,
             sp->workspace_mount_path ? sp->workspace_mount_path : "?");
    err = kv(b, 2, 24, "Workspace", w);
  }
  else if(!err)
    err = kv(b, 2, 24, "Workspace", NULL);
  return err;
}

#define W0 22  /* value column of top-level keys */
#define W1 24  /* value column of Spec:/Status: keys */

sc_err ctl_describe(const session *s, dynbuf *b)
{
  const session_spec *sp = &s->spec;
  const session_status *st = &s->status;
  sc_err err = SC_OK;
  size_t i;

#define TRY(x)                                                              \
  do {                                                                      \
    err = (x);                                                              \
    if(err)                                                                 \
      return err;                                                           \
  } while(0)
  TRY(kv(b, 0, W0, "Name", s->meta.name));
  TRY(kv(b, 0, W0, "Namespace", session_eff_namespace(s)));
  TRY(kv_map(b, 0, W0, "Labels", &s->meta.labels));
  TRY(kv_map(b, 0, W0, "Annotations", &s->meta.annotations));
  TRY(kv(b, 0, W0, "API Version", SESSION_API_VERSION));
  TRY(kv(b, 0, W0, "Kind", SESSION_KIND));
  TRY(kv(b, 0, W0, "UID", s->meta.uid));
  TRY(kv_int(b, 0, W0, "Generation", (long long)s->meta.generation));
  TRY(kv(b, 0, W0, "Resource Version", s->meta.resource_version));
  TRY(kv_time(b, 0, W0, "Creation Timestamp", s->meta.creation_timestamp));
  if(s->meta.deletion_timestamp) {
    TRY(kv_time(b, 0, W0, "Deletion Timestamp",
                s->meta.deletion_timestamp));
    /* held until the controller confirms the sandbox of this uid gone */
    TRY(kv(b, 0, W0, "Terminating",
           st->sandbox_id && *st->sandbox_id
             ? "waits for the controller to delete its sandbox (Status: "
               "Sandbox ID); the name is held until then"
             : "waits for the controller to confirm that no sandbox of "
               "this UID is left; the name is held until then"));
  }
  TRY(dynbuf_addstr(b, "Spec:\n"));
  TRY(kv(b, 2, W1, "Template", sp->template_id));
  TRY(kv(b, 2, W1, "State", session_state_name(sp->state)));
  /* the effective values: an absent field shows its default, so
   * describe says what the controller does with the object */
  TRY(kv_dur(b, 2, W1, "Idle Timeout", session_eff_idle_timeout_ms(s),
             NULL, sp->idle_timeout_ms <= 0));
  TRY(kv_dur(b, 2, W1, "Reclaim After", session_eff_reclaim_after_ms(s),
             "0 (never)", sp->reclaim_after_ms < 0));
  TRY(kv_eff(b, 2, W1, "Session ID", session_eff_session_id(s),
             !sp->session_id));
  TRY(kv_eff(b, 2, W1, "Tenant ID", session_eff_tenant_id(s),
             !sp->tenant_id));
  TRY(kv_map(b, 2, W1, "Env Vars", &sp->env_vars));
  TRY(kv_map(b, 2, W1, "Sandbox Metadata", &sp->sandbox_metadata));
  TRY(kv_int(b, 2, W1, "Wake", (long long)sp->wake));
  TRY(kv_eff(b, 2, W1, "Resume Policy",
             sp->resume_policy == SESSION_RESUME_ON_CONNECT ? "OnConnect"
                                                            : "Auto",
             sp->resume_policy == SESSION_RESUME_AUTO));
  TRY(describe_sandbox_config(b, sp));
  TRY(dynbuf_addstr(b, "Status:\n"));
  TRY(kv(b, 2, W1, "Phase", session_phase_name(st->phase)));
  TRY(kv(b, 2, W1, "Sandbox ID", st->sandbox_id));
  TRY(kv(b, 2, W1, "Sandbox State", st->sandbox_state));
  TRY(kv_time(b, 2, W1, "End At", st->end_at));
  TRY(kv_int(b, 2, W1, "Observed Generation",
             (long long)st->observed_generation));
  TRY(kv_int(b, 2, W1, "Reclaimed Generation",
             (long long)st->reclaimed_generation));
  TRY(kv(b, 2, W1, "Paused By Controller",
         st->paused_by_controller ? "true" : "false"));
  if(st->applied_idle_timeout_ms)
    TRY(kv_dur(b, 2, W1, "Applied Idle Timeout", st->applied_idle_timeout_ms,
               NULL, false));
  else
    TRY(kv(b, 2, W1, "Applied Idle Timeout", NULL));
  if(st->create_intent_at) {
    TRY(kv(b, 2, W1, "Create Claimed By", st->create_intent_by));
    TRY(kv_time(b, 2, W1, "Create Claimed At", st->create_intent_at));
  }
  if(st->domain)
    TRY(kv(b, 2, W1, "Domain", st->domain));
  if(st->envd_address)
    TRY(kv(b, 2, W1, "Envd Address", st->envd_address));
  if(st->pending_kind) {
    TRY(kv(b, 2, W1, "Pending Action", st->pending_kind));
    TRY(kv(b, 2, W1, "Pending Sandbox", st->pending_sandbox_id));
    TRY(kv(b, 2, W1, "Pending By", st->pending_by));
    TRY(kv_time(b, 2, W1, "Pending Since", st->pending_at));
  }
  if(st->connect_nonce) {
    TRY(kv(b, 2, W1, "Connect Nonce", st->connect_nonce));
    TRY(kv(b, 2, W1, "Connect Result", st->connect_result));
    if(st->connect_message)
      TRY(kv(b, 2, W1, "Connect Message", st->connect_message));
  }
  if(!st->n_conditions) {
    TRY(dynbuf_addstr(b, "Conditions:             <none>\n"));
    return SC_OK;
  }
  TRY(dynbuf_addstr(b, "Conditions:\n"));
  {
    static const char *const hdr[] = {"Type", "Status", "Reason", "Message",
                                      "LastTransitionTime"};
    static const char *const rule[] = {"----", "------", "------", "-------",
                                       "------------------"};
    ctl_table *t = ctl_table_new(5);
    dynbuf tb;
    const char *p, *nl;
    if(!t)
      return SC_ERR_NOMEM;
    dynbuf_init(&tb, 1024 * 1024);
    err = ctl_table_add(t, hdr);
    if(!err)
      err = ctl_table_add(t, rule);
    for(i = 0; i < st->n_conditions && !err; i++) {
      const session_condition *c = &st->conditions[i];
      char ts[SCTIME_RFC3339_MAX];
      const char *cells[5];
      if(c->last_transition_time)
        sctime_format_rfc3339(c->last_transition_time, ts, sizeof(ts));
      else
        snprintf(ts, sizeof(ts), "<none>");
      cells[0] = c->type ? c->type : "";
      cells[1] = c->status ? c->status : "";
      cells[2] = c->reason && *c->reason ? c->reason : "<none>";
      cells[3] = c->message && *c->message ? c->message : "<none>";
      cells[4] = ts;
      err = ctl_table_add(t, cells);
    }
    if(!err)
      err = ctl_table_flush(t, &tb);
    /* indent every line by two spaces */
    for(p = dynbuf_ptr(&tb); !err && *p; p = nl + 1) {
      nl = strchr(p, '\n');
      if(!nl)
        break;
      err = dynbuf_printf(b, "  %.*s\n", (int)(nl - p), p);
    }
    dynbuf_free(&tb);
    ctl_table_free(t);
  }
#undef TRY
  return err;
}

