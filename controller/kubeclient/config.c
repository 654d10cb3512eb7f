/* config.c - how to reach a Kubernetes API server (config.h): the
 * context of a kubeconfig file, the in-cluster service account, the
 * order of the sources, copies of a connection and the credential of a
 * request. The YAML, the TLS material and the exec plugins are read by
 * config_yaml.c, config_pem.c and config_exec.c (config_int.h). */
#include "controller/kubeclient/config_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void kube_conn_clear(kube_conn *c)
{
  if(!c)
    return;
  free(c->server);
  free(c->ca_pem);
  kube_cred_unref(c->cred);
  free(c->cert_pem);
  free(c->key_pem);
  free(c->namespace_);
  free(c->source);
  memset(c, 0, sizeof(*c));
}

sc_err kcfg_dup(char **dst, const char *s)
{
  if(!s)
    return SC_OK;
  *dst = strdup(s);
  return *dst ? SC_OK : SC_ERR_NOMEM;
}

sc_err kube_conn_copy(kube_conn *dst, const kube_conn *src)
{
  sc_err err;
  memset(dst, 0, sizeof(*dst));
  dst->insecure = src->insecure;
  dst->cred = kube_cred_ref(src->cred);
  err = kcfg_dup(&dst->server, src->server);
  if(!err)
    err = kcfg_dup(&dst->ca_pem, src->ca_pem);
  if(!err)
    err = kcfg_dup(&dst->cert_pem, src->cert_pem);
  if(!err)
    err = kcfg_dup(&dst->key_pem, src->key_pem);
  if(!err)
    err = kcfg_dup(&dst->namespace_, src->namespace_);
  if(!err)
    err = kcfg_dup(&dst->source, src->source);
  if(err)
    kube_conn_clear(dst);
  return err;
}

static sc_err check_server(const kctx *k, const char *server,
                           const char *where)
{
  size_t i;
  if(!server || !*server)
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s: %s.server is "
                   "missing", k->path, where);
  if(strncmp(server, "https://", 8) && strncmp(server, "http://", 7))
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s: %s.server \"%s\": "
                   "want an https:// (or http://) URL", k->path, where,
                   server);
  for(i = 0; server[i]; i++)
    if((unsigned char)server[i] <= ' ' || server[i] == 0x7f)
      return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s: %s.server: "
                     "spaces or control characters in the URL", k->path,
                     where);
  return SC_OK;
}

static sc_err load_tree(const kctx *k, const ynode *root, const char *ctxname,
                        kube_conn *out)
{
  const ynode *ctx, *cl, *us, *ap, *ex;
  const char *cur, *cluster, *user, *ns, *server, *token, *tokfile;
  char wctx[96], wcl[96], wus[96];
  sc_err err;
  static const char *const unsupported[] = {
    "username", "password", "as", "impersonate"};
  size_t i;

  err = kcfg_str(k, root, "current-context", "(top)", &cur);
  if(err)
    return err;
  if(!ctxname || !*ctxname)
    ctxname = cur;
  if(!ctxname)
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s: no current-context "
                   "and no context given", k->path);
  err = kcfg_find_named(k, root, "contexts", "context", ctxname, &ctx, wctx,
                   sizeof(wctx));
  if(!err)
    err = kcfg_str(k, ctx, "cluster", wctx, &cluster);
  if(!err)
    err = kcfg_str(k, ctx, "user", wctx, &user);
  if(!err)
    err = kcfg_str(k, ctx, "namespace", wctx, &ns);
  if(err)
    return err;
  if(!cluster)
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s: %s.cluster is "
                   "missing", k->path, wctx);
  err = kcfg_find_named(k, root, "clusters", "cluster", cluster, &cl, wcl,
                   sizeof(wcl));
  if(!err)
    err = kcfg_str(k, cl, "server", wcl, &server);
  if(!err)
    err = check_server(k, server, wcl);
  if(!err)
    err = kcfg_bool(k, cl, "insecure-skip-tls-verify", wcl, &out->insecure);
  if(!err)
    err = kcfg_pem(k, cl, wcl, "certificate-authority", "ca", &out->ca_pem);
  if(err)
    return err;
  if(user) {
    err = kcfg_find_named(k, root, "users", "user", user, &us, wus,
                          sizeof(wus));
    if(err)
      return err;
    for(i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
      const ynode *n = yn_get(us, unsupported[i]);
      if(!yn_null(n))
        return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s.%s is "
                       "not supported (use a token, a token file, a client "
                       "certificate or an exec plugin)", k->path, n->line,
                       wus, unsupported[i]);
    }
    ap = yn_get(us, "auth-provider");
    if(!yn_null(ap))
      return kcfg_auth_provider_refused(k, ap, wus,
                                   yn_key_line(us, "auth-provider"));
    ex = yn_get(us, "exec");
    if(yn_null(ex))
      ex = NULL;
    err = kcfg_str(k, us, "token", wus, &token);
    if(!err)
      err = kcfg_str(k, us, "tokenFile", wus, &tokfile);
    if(!err)
      err = kcfg_pem(k, us, wus, "client-certificate", "cert",
                      &out->cert_pem);
    if(!err)
      err = kcfg_pem(k, us, wus, "client-key", "key", &out->key_pem);
    if(err)
      return err;
    if(!out->cert_pem != !out->key_pem)
      return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s: %s: a client "
                     "certificate needs its key and a key its certificate",
                     k->path, wus);
    if(out->cert_pem) {
      char src[400];
      snprintf(src, sizeof(src), "kubeconfig %s: %s", k->path, wus);
      err = kube_pem_check_pair(out->cert_pem, out->key_pem, src, k->eb);
      if(err)
        return err;
    }
    if(ex && (token || tokfile || out->cert_pem))
      return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s: exec "
                     "and %s: use one of them (kubectl would not run the "
                     "plugin)", k->path, yn_key_line(us, "exec"), wus,
                     token ? "token" : tokfile ? "tokenFile"
                     : "a client certificate");
    if(ex)
      err = kcfg_load_exec(k, ex, wus, yn_key_line(us, "exec"), user, cl, wcl,
                      server, out->ca_pem, out->insecure, &out->cred);
    else if(tokfile) {
      char *p = kcfg_resolve_path(k->path, tokfile);
      out->cred = p ? kube_cred_new_file(p) : NULL;
      free(p);
      err = out->cred ? SC_OK : SC_ERR_NOMEM;
    }
    else if(token) {
      for(i = 0; token[i]; i++)
        if((unsigned char)token[i] < ' ' || token[i] == 0x7f)
          return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s."
                         "token: a line break or a control character",
                         k->path, yn_key_line(us, "token"), wus);
      if(i > KUBE_TOKEN_MAX)
        return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s.token: "
                       "longer than %d bytes", k->path,
                       yn_key_line(us, "token"), wus, KUBE_TOKEN_MAX);
      out->cred = kube_cred_new_token(token);
      err = out->cred ? SC_OK : SC_ERR_NOMEM;
    }
    if(err)
      return err;
  }
  err = kcfg_dup(&out->server, server);
  if(!err)
    err = kcfg_dup(&out->namespace_, ns);
  if(err)
    return err;
  {
    size_t l = strlen(out->server);
    while(l && out->server[l - 1] == '/')
      out->server[--l] = 0;
  }
  {
    char src[600];
    snprintf(src, sizeof(src), "kubeconfig %s (context %s)", k->path,
             ctxname);
    return kcfg_dup(&out->source, src);
  }
}

sc_err kubeconfig_load(const char *path, const char *context,
                       kube_conn *out, sc_errbuf *eb)
{
  char *text = NULL, what[600];
  size_t len = 0;
  ynode *root = NULL;
  kctx k;
  sc_err err;
  memset(out, 0, sizeof(*out));
  snprintf(what, sizeof(what), "kubeconfig");
  err = kcfg_read_file(path, what, &text, &len, eb);
  if(err)
    return err;
  if(memchr(text, 0, len)) {
    free(text);
    return sc_errf(eb, SC_ERR_INVALID, "kubeconfig %s: a NUL byte: not a "
                   "YAML text file", path);
  }
  err = yn_parse(path, text, len, &root, eb);
  free(text);
  if(err)
    return err;
  k.path = path;
  k.eb = eb;
  err = load_tree(&k, root, context, out);
  yn_free(root);
  if(err)
    kube_conn_clear(out);
  return err;
}

static void chomp(char *s)
{
  size_t l = strlen(s);
  while(l && (s[l - 1] == '\n' || s[l - 1] == '\r' || s[l - 1] == ' ' ||
              s[l - 1] == '\t'))
    s[--l] = 0;
}

sc_err kube_incluster_load(const char *dir, kube_conn *out, sc_errbuf *eb)
{
  const char *host = getenv("KUBERNETES_SERVICE_HOST");
  const char *port = getenv("KUBERNETES_SERVICE_PORT");
  char path[4096], url[600], src[700];
  char *ns = NULL;
  sc_err err;
  memset(out, 0, sizeof(*out));
  if(!dir)
    dir = SA_DIR;
  if(!host || !*host || !port || !*port)
    return sc_errf(eb, SC_ERR_INVALID, "in-cluster: KUBERNETES_SERVICE_HOST "
                   "and KUBERNETES_SERVICE_PORT must be set");
  if(strspn(port, "0123456789") != strlen(port) || strlen(port) > 5 ||
     strchr(host, '/') || strchr(host, ' '))
    return sc_errf(eb, SC_ERR_INVALID, "in-cluster: bad KUBERNETES_SERVICE_"
                   "HOST/PORT \"%s\":\"%s\"", host, port);
  if(strchr(host, ':'))
    snprintf(url, sizeof(url), "https://[%s]:%s", host, port);
  else
    snprintf(url, sizeof(url), "https://%s:%s", host, port);
  snprintf(path, sizeof(path), "%s/ca.crt", dir);
  err = kcfg_read_file(path, "in-cluster CA", &out->ca_pem, NULL, eb);
  if(!err)
    err = kube_pem_check(out->ca_pem, "ca", path, eb);
  if(!err) {
    snprintf(path, sizeof(path), "%s/token", dir);
    out->cred = kube_cred_new_file(path);
    err = out->cred ? SC_OK : SC_ERR_NOMEM;
  }
  if(!err) {
    char *tok = NULL;
    err = kube_conn_token(out, &tok, eb); /* it must be readable now */
    free(tok);
  }
  if(!err) {
    snprintf(path, sizeof(path), "%s/namespace", dir);
    if(kcfg_read_file(path, "namespace", &ns, NULL, NULL) == SC_OK) {
      chomp(ns);
      out->namespace_ = ns;
    }
    err = kcfg_dup(&out->server, url);
  }
  if(!err) {
    snprintf(src, sizeof(src), "in-cluster (%s)", url);
    err = kcfg_dup(&out->source, src);
  }
  if(err)
    kube_conn_clear(out);
  return err;
}

sc_err kube_conn_resolve(const char *kubeconfig, const char *context,
                         kube_conn *out, sc_errbuf *eb)
{
  const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
  char path[4096];
  if(kubeconfig && *kubeconfig)
    return kubeconfig_load(kubeconfig, context, out, eb);
  if(env && *env) {
    const char *colon = strchr(env, ':');
    snprintf(path, sizeof(path), "%.*s",
             colon ? (int)(colon - env) : (int)strlen(env), env);
    return kubeconfig_load(path, context, out, eb);
  }
  if(getenv("KUBERNETES_SERVICE_HOST") && (!context || !*context))
    return kube_incluster_load(NULL, out, eb);
  if(!home || !*home) {
    memset(out, 0, sizeof(*out));
    return sc_errf(eb, SC_ERR_INVALID, "no kubeconfig: give --kubeconfig, "
                   "set KUBECONFIG or HOME, or run in a cluster");
  }
  snprintf(path, sizeof(path), "%s/.kube/config", home);
  return kubeconfig_load(path, context, out, eb);
}

sc_err kube_conn_auth(const kube_conn *c, struct event_base *base,
                      kube_auth *out, sc_errbuf *eb)
{
  return kube_cred_get(c->cred, base, out, eb);
}

bool kube_conn_unauthorized(const kube_conn *c, const kube_auth *used)
{
  return kube_cred_unauthorized(c->cred, used);
}

sc_err kube_conn_token(const kube_conn *c, char **out, sc_errbuf *eb)
{
  kube_auth a;
  sc_err err = kube_conn_auth(c, NULL, &a, eb);
  *out = NULL;
  if(err)
    return err;
  *out = a.token;
  a.token = NULL;
  kube_auth_clear(&a);
  return SC_OK;
}
