/* kubeconfig.c - kubeconfig files and the in-cluster service account
 * (see kubeconfig.h). The YAML is read into a small tree (no anchors, no
 * aliases, no tags beyond the plain ones, bounded depth and size) and
 * walked by field; every error names the file, the line and the field. */
#include "kubeconfig.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>
#include <curl/curl.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include "../lib/dynbuf.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define MAX_DEPTH 32
#define MAX_NODES 20000

typedef enum { YN_SCALAR, YN_MAP, YN_SEQ } yn_type;

typedef struct ynode {
  yn_type type;
  size_t line;
  char *value;             /* scalar */
  bool plain;              /* scalar written without quotes */
  struct ynode **kids;     /* map: key, value, key, value...; seq: items */
  size_t n;
} ynode;

static void yn_free(ynode *n)
{
  size_t i;
  if(!n)
    return;
  for(i = 0; i < n->n; i++)
    yn_free(n->kids[i]);
  free(n->kids);
  free(n->value);
  free(n);
}

static sc_err yn_add(ynode *parent, ynode *kid)
{
  ynode **k = realloc(parent->kids, (parent->n + 1) * sizeof(*k));
  if(!k)
    return SC_ERR_NOMEM;
  parent->kids = k;
  parent->kids[parent->n++] = kid;
  return SC_OK;
}

static sc_err read_file(const char *path, const char *what, char **out,
                        size_t *len, sc_errbuf *eb)
{
  FILE *f = fopen(path, "rb");
  dynbuf b;
  char chunk[8192];
  size_t n;
  sc_err err = SC_OK;
  *out = NULL;
  if(!f)
    return sc_errf(eb, SC_ERR_IO, "%s %s: %s", what, path, strerror(errno));
  dynbuf_init(&b, KUBE_FILE_MAX);
  while((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && !err)
    err = dynbuf_add(&b, chunk, n);
  if(!err && ferror(f))
    err = sc_errf(eb, SC_ERR_IO, "%s %s: read error", what, path);
  else if(err == SC_ERR_TOO_LARGE)
    sc_errf(eb, err, "%s %s: larger than %d bytes", what, path,
            KUBE_FILE_MAX);
  fclose(f);
  if(err) {
    dynbuf_free(&b);
    return err;
  }
  if(len)
    *len = dynbuf_len(&b);
  *out = dynbuf_take(&b);
  return *out ? SC_OK : SC_ERR_NOMEM;
}

/* parse the whole file into a tree; one document, a mapping at the top */
static sc_err yn_parse(const char *path, const char *text, size_t len,
                       ynode **out, sc_errbuf *eb)
{
  yaml_parser_t p;
  yaml_event_t ev;
  ynode *stack[MAX_DEPTH + 1], *root = NULL;
  int depth = 0, docs = 0;
  size_t nodes = 0;
  bool done = false;
  sc_err err = SC_OK;
  *out = NULL;
  if(!yaml_parser_initialize(&p))
    return SC_ERR_NOMEM;
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  while(!done && !err) {
    ynode *n = NULL;
    size_t line;
    if(!yaml_parser_parse(&p, &ev)) {
      err = sc_errf(eb, SC_ERR_INVALID, "kubeconfig %s:%zu:%zu: %s", path,
                    p.problem_mark.line + 1, p.problem_mark.column + 1,
                    p.problem ? p.problem : "YAML syntax error");
      break;
    }
    line = ev.start_mark.line + 1;
    switch(ev.type) {
    case YAML_DOCUMENT_START_EVENT:
      if(++docs > 1)
        err = sc_errf(eb, SC_ERR_INVALID, "kubeconfig %s:%zu: more than one "
                      "YAML document", path, line);
      break;
    case YAML_ALIAS_EVENT:
      err = sc_errf(eb, SC_ERR_INVALID, "kubeconfig %s:%zu: aliases are not "
                    "allowed", path, line);
      break;
    case YAML_SCALAR_EVENT:
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT: {
      const unsigned char *anchor =
        ev.type == YAML_SCALAR_EVENT ? ev.data.scalar.anchor
        : ev.type == YAML_MAPPING_START_EVENT ? ev.data.mapping_start.anchor
        : ev.data.sequence_start.anchor;
      if(anchor) {
        err = sc_errf(eb, SC_ERR_INVALID, "kubeconfig %s:%zu: anchors are "
                      "not allowed", path, line);
        break;
      }
      if(++nodes > MAX_NODES) {
        err = sc_errf(eb, SC_ERR_TOO_LARGE, "kubeconfig %s:%zu: more than %d "
                      "YAML nodes", path, line, MAX_NODES);
        break;
      }
      n = calloc(1, sizeof(*n));
      if(!n) {
        err = SC_ERR_NOMEM;
        break;
      }
      n->line = line;
      if(ev.type == YAML_SCALAR_EVENT) {
        n->type = YN_SCALAR;
        n->value = strndup((const char *)ev.data.scalar.value,
                           ev.data.scalar.length);
        n->plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        if(!n->value)
          err = SC_ERR_NOMEM;
      }
      else
        n->type = ev.type == YAML_MAPPING_START_EVENT ? YN_MAP : YN_SEQ;
      if(!err && depth == 0) {
        if(root) {
          yn_free(n);
          break;
        }
        root = n;
      }
      else if(!err)
        err = yn_add(stack[depth - 1], n);
      if(err) {
        if(n != root)
          yn_free(n);
        break;
      }
      if(n->type != YN_SCALAR) {
        if(depth >= MAX_DEPTH) {
          err = sc_errf(eb, SC_ERR_INVALID, "kubeconfig %s:%zu: nested more "
                        "than %d levels deep", path, line, MAX_DEPTH);
          break;
        }
        stack[depth++] = n;
      }
      break;
    }
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
      depth--;
      break;
    case YAML_STREAM_END_EVENT:
      done = true;
      break;
    default:
      break;
    }
    yaml_event_delete(&ev);
  }
  yaml_parser_delete(&p);
  if(!err && (!root || root->type != YN_MAP))
    err = sc_errf(eb, SC_ERR_INVALID, "kubeconfig %s: the top level must be "
                  "a mapping (apiVersion, clusters, users, contexts ...)",
                  path);
  if(err) {
    yn_free(root);
    return err;
  }
  *out = root;
  return SC_OK;
}

static ynode *yn_get(const ynode *m, const char *key)
{
  size_t i;
  if(!m || m->type != YN_MAP)
    return NULL;
  for(i = 0; i + 1 < m->n; i += 2)
    if(m->kids[i]->type == YN_SCALAR && !strcmp(m->kids[i]->value, key))
      return m->kids[i + 1];
  return NULL;
}

static bool yn_null(const ynode *n)
{
  return !n || (n->type == YN_SCALAR && n->plain &&
                (!strcmp(n->value, "") || !strcmp(n->value, "null") ||
                 !strcmp(n->value, "~")));
}

/* the context of a field for messages */
typedef struct kctx {
  const char *path;
  sc_errbuf *eb;
} kctx;

/* a string field (optional): *out points into the tree or is NULL */
static sc_err str_field(const kctx *k, const ynode *m, const char *key,
                        const char *where, const char **out)
{
  const ynode *n = yn_get(m, key);
  *out = NULL;
  if(yn_null(n))
    return SC_OK;
  if(n->type != YN_SCALAR)
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s.%s: want "
                   "a string, found a %s", k->path, n->line, where, key,
                   n->type == YN_MAP ? "mapping" : "list");
  *out = n->value;
  return SC_OK;
}

static sc_err bool_field(const kctx *k, const ynode *m, const char *key,
                         const char *where, bool *out)
{
  const ynode *n = yn_get(m, key);
  *out = false;
  if(yn_null(n))
    return SC_OK;
  if(n->type == YN_SCALAR && n->plain &&
     (!strcmp(n->value, "true") || !strcmp(n->value, "false"))) {
    *out = n->value[0] == 't';
    return SC_OK;
  }
  return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s.%s: want "
                 "true or false", k->path, n->line, where, key);
}

/* the entry named `name` of the list `list` (clusters, users, contexts):
 * its inner mapping `inner` (cluster, user, context) */
static sc_err find_named(const kctx *k, const ynode *root, const char *list,
                         const char *inner, const char *name,
                         const ynode **out, char *where, size_t wlen)
{
  const ynode *l = yn_get(root, list);
  size_t i;
  *out = NULL;
  if(yn_null(l))
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s: no %s (want the "
                   "%s \"%s\")", k->path, list, inner, name);
  if(l->type != YN_SEQ)
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s: want a "
                   "list", k->path, l->line, list);
  for(i = 0; i < l->n; i++) {
    const ynode *e = l->kids[i], *v;
    const char *nm;
    char w[64];
    sc_err err;
    snprintf(w, sizeof(w), "%s[%zu]", list, i);
    if(e->type != YN_MAP)
      return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s: want a "
                     "mapping with name and %s", k->path, e->line, w, inner);
    err = str_field(k, e, "name", w, &nm);
    if(err)
      return err;
    if(!nm || strcmp(nm, name))
      continue;
    v = yn_get(e, inner);
    if(!v || v->type != YN_MAP)
      return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s.%s: want "
                     "a mapping", k->path, v ? v->line : e->line, w, inner);
    snprintf(where, wlen, "%s.%s", w, inner);
    *out = v;
    return SC_OK;
  }
  return sc_errf(k->eb, SC_ERR_NOT_FOUND, "kubeconfig %s: no %s named "
                 "\"%s\" in %s", k->path, inner, name, list);
}

/* relative file names in a kubeconfig are relative to its directory */
static char *resolve_path(const char *kcpath, const char *file)
{
  const char *slash = strrchr(kcpath, '/');
  char *out;
  size_t dl;
  if(file[0] == '/' || !slash)
    return strdup(file);
  dl = (size_t)(slash - kcpath);
  out = malloc(dl + strlen(file) + 2);
  if(out)
    snprintf(out, dl + strlen(file) + 2, "%.*s/%s", (int)dl, kcpath, file);
  return out;
}

/* base64 `data` (the *-data fields) into a NUL-terminated buffer */
static sc_err b64_decode(const kctx *k, const char *data, const char *field,
                         char **out)
{
  size_t len = 0, i, j = 0;
  char *clean;
  unsigned char *buf;
  int n;
  *out = NULL;
  clean = malloc(strlen(data) + 1);
  if(!clean)
    return SC_ERR_NOMEM;
  for(i = 0; data[i]; i++)
    if(data[i] != '\n' && data[i] != '\r' && data[i] != ' ')
      clean[j++] = data[i];
  clean[j] = 0;
  len = j;
  if(!len || len % 4) {
    free(clean);
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s: %s: not base64 "
                   "(length %zu is not a multiple of 4)", k->path, field,
                   len);
  }
  buf = malloc(len / 4 * 3 + 1);
  if(!buf) {
    free(clean);
    return SC_ERR_NOMEM;
  }
  n = EVP_DecodeBlock(buf, (const unsigned char *)clean, (int)len);
  if(n < 0) {
    free(clean);
    free(buf);
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s: %s: not base64",
                   k->path, field);
  }
  if(len >= 1 && clean[len - 1] == '=')
    n--;
  if(len >= 2 && clean[len - 2] == '=')
    n--;
  buf[n] = 0;
  free(clean);
  if(memchr(buf, 0, (size_t)n)) {
    free(buf);
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s: %s: the decoded "
                   "data is not PEM text", k->path, field);
  }
  *out = (char *)buf;
  return SC_OK;
}

/* what: "ca" (one or more certificates), "cert", "key" */
static sc_err check_pem(const char *pem, const char *what, const char *src,
                        sc_errbuf *eb)
{
  BIO *b = BIO_new_mem_buf(pem, -1);
  sc_err err = SC_OK;
  if(!b)
    return SC_ERR_NOMEM;
  if(!strcmp(what, "key")) {
    EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
    if(!k)
      err = sc_errf(eb, SC_ERR_INVALID, "%s: not a PEM private key", src);
    EVP_PKEY_free(k);
  }
  else {
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    if(!x)
      err = sc_errf(eb, SC_ERR_INVALID, "%s: not a PEM certificate", src);
    X509_free(x);
  }
  BIO_free(b);
  return err;
}

static sc_err check_pair(const char *cert, const char *key, const char *src,
                         sc_errbuf *eb)
{
  BIO *cb = BIO_new_mem_buf(cert, -1), *kb = BIO_new_mem_buf(key, -1);
  X509 *x = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
  EVP_PKEY *k = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
  sc_err err = SC_OK;
  if(!x || !k || X509_check_private_key(x, k) != 1)
    err = sc_errf(eb, SC_ERR_INVALID, "%s: the client key does not match "
                  "the client certificate", src);
  X509_free(x);
  EVP_PKEY_free(k);
  BIO_free(cb);
  BIO_free(kb);
  return err;
}

/* a PEM given as FIELD-data (base64) or FIELD (a file name) */
static sc_err pem_field(const kctx *k, const ynode *m, const char *where,
                        const char *field, const char *what, char **out)
{
  char dkey[64], src[600];
  const char *data, *file;
  sc_err err;
  *out = NULL;
  snprintf(dkey, sizeof(dkey), "%s-data", field);
  err = str_field(k, m, dkey, where, &data);
  if(!err)
    err = str_field(k, m, field, where, &file);
  if(err)
    return err;
  if(data) {
    char fld[200];
    snprintf(fld, sizeof(fld), "%s.%s", where, dkey);
    snprintf(src, sizeof(src), "kubeconfig %s: %s", k->path, fld);
    err = b64_decode(k, data, fld, out);
  }
  else if(file) {
    char *p = resolve_path(k->path, file);
    if(!p)
      return SC_ERR_NOMEM;
    snprintf(src, sizeof(src), "kubeconfig %s: %s.%s (%s)", k->path, where,
             field, p);
    {
      char what2[700];
      snprintf(what2, sizeof(what2), "kubeconfig %s: %s.%s:", k->path,
               where, field);
      err = read_file(p, what2, out, NULL, k->eb);
    }
    free(p);
  }
  else
    return SC_OK;
  if(!err)
    err = check_pem(*out, what, src, k->eb);
  if(err) {
    free(*out);
    *out = NULL;
  }
  return err;
}

void kube_conn_clear(kube_conn *c)
{
  if(!c)
    return;
  free(c->server);
  free(c->ca_pem);
  free(c->token);
  free(c->token_file);
  free(c->cert_pem);
  free(c->key_pem);
  free(c->namespace_);
  free(c->source);
  memset(c, 0, sizeof(*c));
}

static sc_err dupto(char **dst, const char *s)
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
  err = dupto(&dst->server, src->server);
  if(!err)
    err = dupto(&dst->ca_pem, src->ca_pem);
  if(!err)
    err = dupto(&dst->token, src->token);
  if(!err)
    err = dupto(&dst->token_file, src->token_file);
  if(!err)
    err = dupto(&dst->cert_pem, src->cert_pem);
  if(!err)
    err = dupto(&dst->key_pem, src->key_pem);
  if(!err)
    err = dupto(&dst->namespace_, src->namespace_);
  if(!err)
    err = dupto(&dst->source, src->source);
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
  const ynode *ctx, *cl, *us;
  const char *cur, *cluster, *user, *ns, *server, *token, *tokfile;
  char wctx[96], wcl[96], wus[96];
  sc_err err;
  static const char *const unsupported[] = {
    "exec", "auth-provider", "username", "password", "as", "impersonate"};
  size_t i;

  err = str_field(k, root, "current-context", "(top)", &cur);
  if(err)
    return err;
  if(!ctxname || !*ctxname)
    ctxname = cur;
  if(!ctxname)
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s: no current-context "
                   "and no context given", k->path);
  err = find_named(k, root, "contexts", "context", ctxname, &ctx, wctx,
                   sizeof(wctx));
  if(!err)
    err = str_field(k, ctx, "cluster", wctx, &cluster);
  if(!err)
    err = str_field(k, ctx, "user", wctx, &user);
  if(!err)
    err = str_field(k, ctx, "namespace", wctx, &ns);
  if(err)
    return err;
  if(!cluster)
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s: %s.cluster is "
                   "missing", k->path, wctx);
  err = find_named(k, root, "clusters", "cluster", cluster, &cl, wcl,
                   sizeof(wcl));
  if(!err)
    err = str_field(k, cl, "server", wcl, &server);
  if(!err)
    err = check_server(k, server, wcl);
  if(!err)
    err = bool_field(k, cl, "insecure-skip-tls-verify", wcl, &out->insecure);
  if(!err)
    err = pem_field(k, cl, wcl, "certificate-authority", "ca", &out->ca_pem);
  if(err)
    return err;
  if(user) {
    err = find_named(k, root, "users", "user", user, &us, wus, sizeof(wus));
    if(err)
      return err;
    for(i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
      const ynode *n = yn_get(us, unsupported[i]);
      if(!yn_null(n))
        return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s:%zu: %s.%s is "
                       "not supported (use a token, a token file or a client "
                       "certificate)", k->path, n->line, wus, unsupported[i]);
    }
    err = str_field(k, us, "token", wus, &token);
    if(!err)
      err = str_field(k, us, "tokenFile", wus, &tokfile);
    if(!err)
      err = pem_field(k, us, wus, "client-certificate", "cert",
                      &out->cert_pem);
    if(!err)
      err = pem_field(k, us, wus, "client-key", "key", &out->key_pem);
    if(err)
      return err;
    if(!out->cert_pem != !out->key_pem)
      return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s: %s: a client "
                     "certificate needs its key and a key its certificate",
                     k->path, wus);
    if(out->cert_pem) {
      char src[400];
      snprintf(src, sizeof(src), "kubeconfig %s: %s", k->path, wus);
      err = check_pair(out->cert_pem, out->key_pem, src, k->eb);
      if(err)
        return err;
    }
    err = dupto(&out->token, token);
    if(!err && tokfile) {
      out->token_file = resolve_path(k->path, tokfile);
      if(!out->token_file)
        err = SC_ERR_NOMEM;
    }
    if(err)
      return err;
  }
  err = dupto(&out->server, server);
  if(!err)
    err = dupto(&out->namespace_, ns);
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
    return dupto(&out->source, src);
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
  err = read_file(path, what, &text, &len, eb);
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
  err = read_file(path, "in-cluster CA", &out->ca_pem, NULL, eb);
  if(!err)
    err = check_pem(out->ca_pem, "ca", path, eb);
  if(!err) {
    snprintf(path, sizeof(path), "%s/token", dir);
    err = dupto(&out->token_file, path);
  }
  if(!err) {
    char *tok = NULL;
    err = kube_conn_token(out, &tok, eb); /* it must be readable now */
    free(tok);
  }
  if(!err) {
    snprintf(path, sizeof(path), "%s/namespace", dir);
    if(read_file(path, "namespace", &ns, NULL, NULL) == SC_OK) {
      chomp(ns);
      out->namespace_ = ns;
    }
    err = dupto(&out->server, url);
  }
  if(!err) {
    snprintf(src, sizeof(src), "in-cluster (%s)", url);
    err = dupto(&out->source, src);
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

sc_err kube_conn_token(const kube_conn *c, char **out, sc_errbuf *eb)
{
  char *t = NULL;
  sc_err err;
  *out = NULL;
  if(c->token_file) {
    err = read_file(c->token_file, "token file", &t, NULL, eb);
    if(err)
      return err;
    chomp(t);
    if(!*t) {
      free(t);
      return sc_errf(eb, SC_ERR_INVALID, "token file %s is empty",
                     c->token_file);
    }
  }
  else if(c->token) {
    t = strdup(c->token);
    if(!t)
      return SC_ERR_NOMEM;
  }
  if(t && (strchr(t, '\n') || strchr(t, '\r'))) {
    free(t);
    return sc_errf(eb, SC_ERR_INVALID, "%s: the token has a line break",
                   c->token_file ? c->token_file : "kubeconfig token");
  }
  *out = t;
  return SC_OK;
}

void kube_conn_curl_tls(const kube_conn *c, void *curl_easy)
{
  CURL *e = curl_easy;
  if(c->ca_pem) {
    struct curl_blob b = {c->ca_pem, strlen(c->ca_pem), CURL_BLOB_COPY};
    curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
  }
  if(c->cert_pem && c->key_pem) {
    struct curl_blob cb = {c->cert_pem, strlen(c->cert_pem),
                           CURL_BLOB_COPY};
    struct curl_blob kb = {c->key_pem, strlen(c->key_pem), CURL_BLOB_COPY};
    curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cb);
    curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &kb);
    curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
  }
  if(c->insecure) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
}
