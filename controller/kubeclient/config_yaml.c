/* config_yaml.c - the YAML of a kubeconfig read into a small tree (no
 * anchors, no aliases, no tags beyond the plain ones, bounded depth and
 * size) and its field readers, every error naming the file, the line and
 * the field (config_int.h). */
#include "controller/kubeclient/config_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>
#include "lib/dynbuf.h"

void yn_free(ynode *n)
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

sc_err kcfg_read_file(const char *path, const char *what, char **out,
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
sc_err yn_parse(const char *path, const char *text, size_t len,
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

ynode *yn_get(const ynode *m, const char *key)
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
size_t yn_key_line(const ynode *m, const char *key)
{
  size_t i;
  for(i = 0; m && m->type == YN_MAP && i + 1 < m->n; i += 2)
    if(m->kids[i]->type == YN_SCALAR && !strcmp(m->kids[i]->value, key))
      return m->kids[i]->line;
  return 0;
}

bool yn_null(const ynode *n)
{
  return !n || (n->type == YN_SCALAR && n->plain &&
                (!strcmp(n->value, "") || !strcmp(n->value, "null") ||
                 !strcmp(n->value, "~")));
}

/* a string field (optional): *out points into the tree or is NULL */
sc_err kcfg_str(const kctx *k, const ynode *m, const char *key,
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

sc_err kcfg_bool(const kctx *k, const ynode *m, const char *key,
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
sc_err kcfg_find_named(const kctx *k, const ynode *root, const char *list,
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
    err = kcfg_str(k, e, "name", w, &nm);
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
char *kcfg_resolve_path(const char *kcpath, const char *file)
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
