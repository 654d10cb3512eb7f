/* config_exec.c - users[].user.exec of a kubeconfig: the plugin's
 * command, args, env, interactive mode and the cluster information it is
 * given (controller/kubeclient/exec.h), and the auth-provider entries that are
 * refused with what to use instead (config_int.h). */
#include "controller/kubeclient/config_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include <openssl/evp.h>

/* ------------------------------------------------------------------ */
/* exec plugins (kube_exec.h) */

/* a YAML node as JSON (the cluster's exec extension, for the plugin):
 * plain true/false/null and numbers as such, everything else a string */
static json_object *yn_to_json(const ynode *n)
{
  json_object *o;
  size_t i;
  if(n->type == YN_MAP) {
    o = json_object_new_object();
    for(i = 0; o && i + 1 < n->n; i += 2)
      if(n->kids[i]->type == YN_SCALAR)
        json_object_object_add(o, n->kids[i]->value,
                               yn_to_json(n->kids[i + 1]));
    return o;
  }
  if(n->type == YN_SEQ) {
    o = json_object_new_array();
    for(i = 0; o && i < n->n; i++)
      json_object_array_add(o, yn_to_json(n->kids[i]));
    return o;
  }
  if(n->plain) {
    char *end;
    long long v;
    double d;
    if(yn_null(n))
      return NULL;
    if(!strcmp(n->value, "true") || !strcmp(n->value, "false"))
      return json_object_new_boolean(n->value[0] == 't');
    errno = 0;
    v = strtoll(n->value, &end, 10);
    if(!errno && end != n->value && !*end)
      return json_object_new_int64(v);
    d = strtod(n->value, &end);
    if(end != n->value && !*end && strspn(n->value, "0123456789.eE+-") ==
       strlen(n->value))
      return json_object_new_double(d);
  }
  return json_object_new_string(n->value);
}

static sc_err b64_encode(const char *s, char **out)
{
  size_t len = strlen(s);
  *out = malloc((len + 2) / 3 * 4 + 1);
  if(!*out)
    return SC_ERR_NOMEM;
  EVP_EncodeBlock((unsigned char *)*out, (const unsigned char *)s, (int)len);
  return SC_OK;
}

/* KUBERNETES_EXEC_INFO as kubectl writes it: kind, apiVersion,
 * spec.interactive (false: we never give the plugin a terminal) and, with
 * provideClusterInfo, spec.cluster */
static sc_err exec_info(const kctx *k, const ynode *cl, const char *wcl,
                        const char *api_version, bool cluster_info,
                        const char *server, const char *ca_pem,
                        bool insecure, char **out)
{
  json_object *o = json_object_new_object(), *spec = json_object_new_object();
  json_object *c = NULL;
  const char *tsn = NULL, *proxy = NULL, *s;
  bool nocomp = false;
  char *ca = NULL;
  sc_err err = SC_OK;
  *out = NULL;
  if(!o || !spec) {
    err = SC_ERR_NOMEM;
    goto out;
  }
  if(cluster_info) {
    const ynode *ext = yn_get(cl, "extensions");
    err = kcfg_str(k, cl, "tls-server-name", wcl, &tsn);
    if(!err)
      err = kcfg_str(k, cl, "proxy-url", wcl, &proxy);
    if(!err)
      err = kcfg_bool(k, cl, "disable-compression", wcl, &nocomp);
    if(!err && ca_pem)
      err = b64_encode(ca_pem, &ca);
    if(err)
      goto out;
    c = json_object_new_object();
    if(!c) {
      err = SC_ERR_NOMEM;
      goto out;
    }
    json_object_object_add(c, "server", json_object_new_string(server));
    if(tsn)
      json_object_object_add(c, "tls-server-name",
                             json_object_new_string(tsn));
    if(insecure)
      json_object_object_add(c, "insecure-skip-tls-verify",
                             json_object_new_boolean(1));
    if(ca)
      json_object_object_add(c, "certificate-authority-data",
                             json_object_new_string(ca));
    if(proxy)
      json_object_object_add(c, "proxy-url", json_object_new_string(proxy));
    if(nocomp)
      json_object_object_add(c, "disable-compression",
                             json_object_new_boolean(1));
    if(ext && ext->type == YN_SEQ) {
      size_t i;
      for(i = 0; i < ext->n; i++) {
        const char *nm = NULL;
        const ynode *e = ext->kids[i], *v = yn_get(e, "extension");
        if(e->type == YN_MAP && !kcfg_str(k, e, "name", wcl, &nm) && nm &&
           !strcmp(nm, "client.authentication.k8s.io/exec") && !yn_null(v))
          json_object_object_add(c, "config", yn_to_json(v));
      }
    }
    json_object_object_add(spec, "cluster", c);
  }
  json_object_object_add(spec, "interactive", json_object_new_boolean(0));
  json_object_object_add(o, "kind", json_object_new_string("ExecCredential"));
  json_object_object_add(o, "apiVersion", json_object_new_string(api_version));
  json_object_object_add(o, "spec", spec);
  spec = NULL;
  s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                        JSON_C_TO_STRING_NOSLASHESCAPE);
  if(!s || !(*out = strdup(s)))
    err = SC_ERR_NOMEM;
out:
  free(ca);
  json_object_put(spec);
  json_object_put(o);
  return err;
}

/* a list of strings (args): *out heap strings, *n of them */
static sc_err strv_field(const kctx *k, const ynode *m, const char *key,
                         const char *where, char ***out, size_t *n)
{
  const ynode *l = yn_get(m, key);
  size_t i;
  *out = NULL;
  *n = 0;
  if(yn_null(l))
    return SC_OK;
  if(l->type != YN_SEQ)
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s.%s: want "
                   "a list of strings", k->path, l->line, where, key);
  *out = calloc(l->n + 1, sizeof(**out));
  if(!*out)
    return SC_ERR_NOMEM;
  for(i = 0; i < l->n; i++) {
    if(l->kids[i]->type != YN_SCALAR)
      return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s.%s[%zu]: "
                     "want a string", k->path, l->kids[i]->line, where, key,
                     i);
    (*out)[i] = strdup(l->kids[i]->value);
    if(!(*out)[i])
      return SC_ERR_NOMEM;
    (*n)++;
  }
  return SC_OK;
}

/* env: a list of {name, value} into "NAME=VALUE" strings */
static sc_err env_field(const kctx *k, const ynode *m, const char *where,
                        char ***out, size_t *n)
{
  const ynode *l = yn_get(m, "env");
  size_t i;
  *out = NULL;
  *n = 0;
  if(yn_null(l))
    return SC_OK;
  if(l->type != YN_SEQ)
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s.env: want "
                   "a list of {name, value}", k->path, l->line, where);
  *out = calloc(l->n + 1, sizeof(**out));
  if(!*out)
    return SC_ERR_NOMEM;
  for(i = 0; i < l->n; i++) {
    const ynode *e = l->kids[i];
    const char *nm = NULL, *val = NULL;
    char w[200];
    size_t len;
    sc_err err;
    snprintf(w, sizeof(w), "%s.env[%zu]", where, i);
    if(e->type != YN_MAP)
      return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s: want "
                     "{name, value}", k->path, e->line, w);
    err = kcfg_str(k, e, "name", w, &nm);
    if(!err)
      err = kcfg_str(k, e, "value", w, &val);
    if(err)
      return err;
    if(!nm || !*nm || strchr(nm, '='))
      return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s.name: %s",
                     k->path, e->line, w, !nm || !*nm ? "missing"
                     : "has a '='");
    if(!val)
      val = "";
    len = strlen(nm) + strlen(val) + 2;
    (*out)[i] = malloc(len);
    if(!(*out)[i])
      return SC_ERR_NOMEM;
    snprintf((*out)[i], len, "%s=%s", nm, val);
    (*n)++;
  }
  return SC_OK;
}

/* users[i].user.exec into a credential source */
sc_err kcfg_load_exec(const kctx *k, const ynode *ex, const char *wus,
                      size_t line,
                      const char *user, const ynode *cl, const char *wcl,
                      const char *server, const char *ca_pem,
                      bool insecure, kube_cred **out)
{
  kube_exec_cfg *cfg;
  const char *av, *cmd, *hint, *mode;
  bool info;
  char w[120], where[800];
  size_t i;
  sc_err err;
  *out = NULL;
  snprintf(w, sizeof(w), "%s.exec", wus);
  if(ex->type != YN_MAP)
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s: want a "
                   "mapping (apiVersion, command, args, env ...)", k->path,
                   line, w);
  err = kcfg_str(k, ex, "apiVersion", w, &av);
  if(!err)
    err = kcfg_str(k, ex, "command", w, &cmd);
  if(!err)
    err = kcfg_str(k, ex, "installHint", w, &hint);
  if(!err)
    err = kcfg_str(k, ex, "interactiveMode", w, &mode);
  if(!err)
    err = kcfg_bool(k, ex, "provideClusterInfo", w, &info);
  if(err)
    return err;
  if(!av || (strcmp(av, KUBE_EXEC_V1) && strcmp(av, KUBE_EXEC_V1BETA1)))
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s.apiVersion"
                   " %s%s%s: want " KUBE_EXEC_V1 " or " KUBE_EXEC_V1BETA1,
                   k->path, av ? yn_key_line(ex, "apiVersion") : line, w,
                   av ? "\"" : "",
                   av ? av : "is missing", av ? "\" is not supported" : "");
  if(!cmd || !*cmd)
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s.command is "
                   "missing", k->path, line, w);
  if(!mode && !strcmp(av, KUBE_EXEC_V1))
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s."
                   "interactiveMode is missing: apiVersion " KUBE_EXEC_V1
                   " needs it (Never or IfAvailable; kubectl requires it too)",
                   k->path, line, w);
  if(mode && !strcmp(mode, "Always"))
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s."
                   "interactiveMode Always is not supported: the plugin "
                   "would need a terminal, and session-controller and "
                   "sessionctl run it without one (stdin /dev/null; kubectl "
                   "refuses Always without one too): use Never or "
                   "IfAvailable", k->path, yn_key_line(ex, "interactiveMode"),
                   w);
  if(mode && strcmp(mode, "Never") && strcmp(mode, "IfAvailable"))
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s."
                   "interactiveMode \"%s\": want Never, IfAvailable or "
                   "Always", k->path, yn_key_line(ex, "interactiveMode"), w,
                   mode);
  cfg = calloc(1, sizeof(*cfg));
  if(!cfg)
    return SC_ERR_NOMEM;
  cfg->mode = mode && !strcmp(mode, "Never") ? KUBE_EXEC_NEVER
                                             : KUBE_EXEC_IF_AVAILABLE;
  snprintf(where, sizeof(where), "kubeconfig %s: user \"%s\"", k->path,
           user);
  err = kcfg_dup(&cfg->api_version, av);
  if(!err)
    err = kcfg_dup(&cfg->command, cmd);
  if(!err)
    err = kcfg_dup(&cfg->where, where);
  if(!err)
    err = kcfg_dup(&cfg->install_hint, hint);
  if(!err && strchr(cmd, '/') &&
     !(cfg->path = kcfg_resolve_path(k->path, cmd)))
    err = SC_ERR_NOMEM;
  if(!err)
    err = strv_field(k, ex, "args", w, &cfg->args, &cfg->n_args);
  if(!err)
    err = env_field(k, ex, w, &cfg->env, &cfg->n_env);
  if(!err)
    err = exec_info(k, cl, wcl, av, info, server, ca_pem, insecure,
                    &cfg->exec_info);
  if(err) {
    kube_exec_cfg_free(cfg);
    return err;
  }
  /* the hint goes into one-line messages */
  for(i = 0; cfg->install_hint && cfg->install_hint[i]; i++)
    if((unsigned char)cfg->install_hint[i] < ' ')
      cfg->install_hint[i] = ' ';
  *out = kube_cred_new_exec(cfg);
  return *out ? SC_OK : SC_ERR_NOMEM;
}

/* the clients dropped their auth providers (Kubernetes 1.26): say which
 * exec plugin replaces this one */
sc_err kcfg_auth_provider_refused(const kctx *k, const ynode *ap,
                                  const char *wus, size_t line)
{
  const char *name = NULL, *use;
  (void)kcfg_str(k, ap, "name", wus, &name);
  if(name && !strcmp(name, "gcp"))
    use = "the exec plugin gke-gcloud-auth-plugin (`gcloud components "
          "install gke-gcloud-auth-plugin`, then `gcloud container clusters "
          "get-credentials` writes the exec entry)";
  else if(name && !strcmp(name, "azure"))
    use = "the exec plugin kubelogin (`kubelogin convert-kubeconfig` writes "
          "the exec entry)";
  else if(name && !strcmp(name, "oidc"))
    use = "an exec plugin such as kubelogin (`kubectl oidc-login`)";
  else
    use = "an exec plugin (gke-gcloud-auth-plugin for GKE, kubelogin for "
          "AKS or OIDC, `aws eks get-token` for EKS)";
  return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s.auth-provider"
                 "%s%s%s is not supported (Kubernetes clients dropped auth "
                 "providers): use %s", k->path, line, wus,
                 name ? " \"" : "", name ? name : "", name ? "\"" : "", use);
}
