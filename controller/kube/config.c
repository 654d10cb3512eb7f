/* kubeconfig.c - kubeconfig files and the in-cluster service account
 * (see kubeconfig.h). The YAML is read into a small tree (no anchors, no
 * aliases, no tags beyond the plain ones, bounded depth and size) and
 * walked by field; every error names the file, the line and the field. */
#include "controller/kube/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>
#include <curl/curl.h>
#include <json-c/json.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include "lib/dynbuf.h"

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

/* the line of the key `key` of m (where a block value begins is the line
 * after it) */
static size_t yn_key_line(const ynode *m, const char *key)
{
  size_t i;
  for(i = 0; m && m->type == YN_MAP && i + 1 < m->n; i += 2)
    if(m->kids[i]->type == YN_SCALAR && !strcmp(m->kids[i]->value, key))
      return m->kids[i]->line;
  return 0;
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

sc_err kube_pem_check(const char *pem, const char *what, const char *src,
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

sc_err kube_pem_check_pair(const char *cert, const char *key,
                           const char *src, sc_errbuf *eb)
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
    err = kube_pem_check(*out, what, src, k->eb);
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
  kube_cred_unref(c->cred);
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
  dst->cred = kube_cred_ref(src->cred);
  err = dupto(&dst->server, src->server);
  if(!err)
    err = dupto(&dst->ca_pem, src->ca_pem);
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
    err = str_field(k, cl, "tls-server-name", wcl, &tsn);
    if(!err)
      err = str_field(k, cl, "proxy-url", wcl, &proxy);
    if(!err)
      err = bool_field(k, cl, "disable-compression", wcl, &nocomp);
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
        if(e->type == YN_MAP && !str_field(k, e, "name", wcl, &nm) && nm &&
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
    err = str_field(k, e, "name", w, &nm);
    if(!err)
      err = str_field(k, e, "value", w, &val);
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
static sc_err load_exec(const kctx *k, const ynode *ex, const char *wus,
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
  err = str_field(k, ex, "apiVersion", w, &av);
  if(!err)
    err = str_field(k, ex, "command", w, &cmd);
  if(!err)
    err = str_field(k, ex, "installHint", w, &hint);
  if(!err)
    err = str_field(k, ex, "interactiveMode", w, &mode);
  if(!err)
    err = bool_field(k, ex, "provideClusterInfo", w, &info);
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
  err = dupto(&cfg->api_version, av);
  if(!err)
    err = dupto(&cfg->command, cmd);
  if(!err)
    err = dupto(&cfg->where, where);
  if(!err)
    err = dupto(&cfg->install_hint, hint);
  if(!err && strchr(cmd, '/') && !(cfg->path = resolve_path(k->path, cmd)))
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
static sc_err auth_provider_refused(const kctx *k, const ynode *ap,
                                    const char *wus, size_t line)
{
  const char *name = NULL, *use;
  (void)str_field(k, ap, "name", wus, &name);
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
                       "not supported (use a token, a token file, a client "
                       "certificate or an exec plugin)", k->path, n->line,
                       wus, unsupported[i]);
    }
    ap = yn_get(us, "auth-provider");
    if(!yn_null(ap))
      return auth_provider_refused(k, ap, wus,
                                   yn_key_line(us, "auth-provider"));
    ex = yn_get(us, "exec");
    if(yn_null(ex))
      ex = NULL;
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
      err = load_exec(k, ex, wus, yn_key_line(us, "exec"), user, cl, wcl,
                      server, out->ca_pem, out->insecure, &out->cred);
    else if(tokfile) {
      char *p = resolve_path(k->path, tokfile);
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

void kube_conn_curl_tls(const kube_conn *c, const kube_auth *a,
                        void *curl_easy)
{
  CURL *e = curl_easy;
  const char *cert = a && a->cert_pem ? a->cert_pem : c->cert_pem;
  const char *key = a && a->cert_pem ? a->key_pem : c->key_pem;
  /* a floor, as the API server has: never SSLv3, TLS 1.0 or 1.1 */
  curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
  if(c->ca_pem) {
    struct curl_blob b = {c->ca_pem, strlen(c->ca_pem), CURL_BLOB_COPY};
    curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
  }
  if(cert && key) {
    struct curl_blob cb = {(void *)cert, strlen(cert), CURL_BLOB_COPY};
    struct curl_blob kb = {(void *)key, strlen(key), CURL_BLOB_COPY};
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
