/*
 * yamltree.c - libyaml events into a node tree per document, with the
 * checks a manifest needs on the way (yamltree.h), and the positioned
 * error list of one source.
 */
#include "api/yamltree.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "api/fieldpath.h"
#include "lib/dynbuf.h"
#include "lib/hmap.h"
#include "lib/sc_err.h"

/* ========================================================== the nodes */

static void node_free(ynode *n)
{
  size_t i;
  if(!n)
    return;
  for(i = 0; i < n->n; i++)
    node_free(n->kids[i]);
  free(n->kids);
  free(n->val);
  free(n);
}

/* The field path of n: "spec.idleTimeout", "items[2].metadata.name". */
void ynode_path(const ynode *n, char *out, size_t len)
{
  const ynode *chain[YTREE_MAX_DEPTH * 2 + 8];
  size_t depth = 0;
  char tmp[FIELDPATH_MAX];
  out[0] = '\0';
  while(n && n->parent && depth < sizeof(chain) / sizeof(chain[0])) {
    chain[depth++] = n;
    n = n->parent;
  }
  while(depth--) {
    const ynode *c = chain[depth];
    memcpy(tmp, out, strlen(out) + 1);
    if(c->parent->kind == YK_SEQ)
      fieldpath_index(out, len, tmp, c->index);
    else
      fieldpath_key(out, len, tmp,
                    c->key && c->key->kind == YK_SCALAR ? c->key->val
                                                         : "(complex key)");
  }
}

/* YAML 1.2 core schema resolution of a plain scalar. */
bool yaml_all_in(const char *s, const char *set)
{
  if(!*s)
    return false;
  for(; *s; s++)
    if(!strchr(set, *s))
      return false;
  return true;
}

static int resolve_plain(const char *s)
{
  const char *p = s;
  bool digits = false, frac = false;
  if(!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
     !strcmp(s, "NULL"))
    return YT_NULL;
  if(!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE") ||
     !strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
    return YT_BOOL;
  if((!strncmp(s, "0o", 2) && yaml_all_in(s + 2, "01234567")) ||
     (!strncmp(s, "0x", 2) && yaml_all_in(s + 2, "0123456789abcdefABCDEF")))
    return YT_INT;
  if(*p == '-' || *p == '+')
    p++;
  if(yaml_all_in(p, "0123456789"))
    return YT_INT;
  if(!strcmp(p, ".inf") || !strcmp(p, ".Inf") || !strcmp(p, ".INF") ||
     !strcmp(s, ".nan") || !strcmp(s, ".NaN") || !strcmp(s, ".NAN"))
    return YT_FLOAT;
  while(*p >= '0' && *p <= '9') {
    p++;
    digits = true;
  }
  if(*p == '.') {
    p++;
    while(*p >= '0' && *p <= '9') {
      p++;
      frac = true;
    }
  }
  if(!digits && !frac)
    return YT_STR;
  if(*p == 'e' || *p == 'E') {
    p++;
    if(*p == '-' || *p == '+')
      p++;
    if(*p < '0' || *p > '9')
      return YT_STR;
    while(*p >= '0' && *p <= '9')
      p++;
  }
  return *p ? YT_STR : YT_FLOAT;
}

const char *ynode_what(const ynode *n)
{
  if(n->kind == YK_MAP)
    return "a mapping";
  if(n->kind == YK_SEQ)
    return "a list";
  if(n->kind == YK_ALIAS)
    return "an alias";
  switch(n->type) {
  case YT_NULL: return "null";
  case YT_BOOL: return "a boolean";
  case YT_INT: return "an integer";
  case YT_FLOAT: return "a number";
  default: return "a string";
  }
}

bool ynode_is_null(const ynode *n)
{
  return n->kind == YK_SCALAR && n->type == YT_NULL;
}


/* ========================================================= the errors */

static void push_err(yerrs *c, int line, int col, char *text)
{
  if(!text) {
    yerrs_nomem(c);
    return;
  }
  if(c->n == c->cap) {
    size_t nc = c->cap ? c->cap * 2 : 8;
    yerr *e = realloc(c->v, nc * sizeof(*e));
    if(!e) {
      free(text);
      yerrs_nomem(c);
      return;
    }
    c->v = e;
    c->cap = nc;
  }
  c->v[c->n].line = line;
  c->v[c->n].col = col;
  c->v[c->n].text = text;
  c->n++;
}

void yerrs_add(yerrs *c, int line, int col, const char *path,
               const char *fmt, ...)
{
  char msg[SC_ERRBUF_SIZE];
  dynbuf b;
  va_list ap;
  if(c->stop)
    return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  dynbuf_init(&b, 4096);
  if(path && *path)
    dynbuf_printf(&b, "%s:%d:%d: %s: %s", c->file, line, col, path, msg);
  else
    dynbuf_printf(&b, "%s:%d:%d: %s", c->file, line, col, msg);
  push_err(c, line, col, dynbuf_take(&b));
  dynbuf_free(&b);
  if(c->n >= c->max && !c->stop) {
    dynbuf_init(&b, 4096);
    dynbuf_printf(&b, "%s:%d:%d: too many errors (%d), not reading further",
                  c->file, line, col, (int)c->max);
    push_err(c, line, col, dynbuf_take(&b));
    dynbuf_free(&b);
    c->stop = true;
  }
}

void yerrs_node(yerrs *c, const ynode *n, const char *fmt, ...)
{
  char path[FIELDPATH_MAX], msg[SC_ERRBUF_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  ynode_path(n, path, sizeof(path));
  yerrs_add(c, n->line, n->col, path, "%s", msg);
}

void yerrs_field(yerrs *c, const ynode *m, const char *field,
                 const char *fmt, ...)
{
  char path[FIELDPATH_MAX], full[FIELDPATH_MAX], msg[SC_ERRBUF_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  ynode_path(m, path, sizeof(path));
  fieldpath_key(full, sizeof(full), path, field);
  yerrs_add(c, m->line, m->col, full, "%s", msg);
}

void yerrs_free(yerrs *c)
{
  size_t i;
  for(i = 0; i < c->n; i++)
    free(c->v[i].text);
  free(c->v);
  c->v = NULL;
  c->n = c->cap = 0;
}

/* ======================================================= the builder */

typedef struct builder {
  ynode *root;
  ynode *cur;     /* the open container */
  int depth;
  sc_hmap *keys;  /* check_dups: the keys of one mapping, reused */
  uint64_t seed;  /* of this parse: the file is untrusted */
} builder;

static bool same_key(const void *value, const void *key, void *ud)
{
  const ynode *a = value, *b = key;
  (void)ud;
  return a->len == b->len && !memcmp(a->val, b->val, a->len);
}

/* Mark and report the duplicate keys of a finished mapping: every key
 * after the first of its text. */
static void check_dups(yerrs *c, builder *b, ynode *m)
{
  size_t i;
  if(m->n < 4)
    return;
  if(!b->keys && !(b->keys = sc_hmap_new(m->n / 2))) {
    yerrs_nomem(c);
    return;
  }
  sc_hmap_clear(b->keys);
  for(i = 0; i + 1 < m->n; i += 2) {
    ynode *k = m->kids[i];
    const ynode *first;
    uint64_t h;
    if(k->kind != YK_SCALAR)
      continue;
    h = sc_hash_fin(sc_hash_strn(b->seed, k->val, k->len));
    first = sc_hmap_get(b->keys, h, same_key, k, NULL);
    if(first) {
      k->dup = true;
      yerrs_node(c, k, "duplicate key (first at %d:%d)", first->line,
                 first->col);
    }
    else if(sc_hmap_put(b->keys, h, k)) {
      yerrs_nomem(c);
      return;
    }
  }
}

static bool attach(yerrs *c, builder *b, ynode *n)
{
  ynode *p = b->cur;
  if(!p) {
    if(b->root) { /* cannot happen with libyaml: one root per document */
      node_free(n);
      return false;
    }
    b->root = n;
    return true;
  }
  if(p->n == p->cap) {
    size_t nc = p->cap ? p->cap * 2 : 4;
    ynode **k = realloc(p->kids, nc * sizeof(*k));
    if(!k) {
      node_free(n);
      yerrs_nomem(c);
      return false;
    }
    p->kids = k;
    p->cap = nc;
  }
  n->parent = p;
  if(p->kind == YK_SEQ)
    n->index = p->n;
  else if(p->n % 2 == 0)
    n->key = n; /* a key names itself */
  else
    n->key = p->kids[p->n - 1];
  p->kids[p->n++] = n;
  return true;
}

static ynode *new_node(yerrs *c, int kind, const yaml_mark_t *mark)
{
  ynode *n = calloc(1, sizeof(*n));
  if(!n) {
    yerrs_nomem(c);
    return NULL;
  }
  n->kind = kind;
  n->line = (int)mark->line + 1;
  n->col = (int)mark->column + 1;
  return n;
}

#define YAML_TAG_PREFIX "tag:yaml.org,2002:"

static const char *tag_shown(const char *tag, char *buf, size_t len)
{
  size_t pl = strlen(YAML_TAG_PREFIX);
  if(!strncmp(tag, YAML_TAG_PREFIX, pl))
    snprintf(buf, len, "!!%s", tag + pl);
  else
    snprintf(buf, len, "%s", tag);
  return buf;
}

/* Report anchors and tags a manifest must not use, on node n. */
static void check_props(yerrs *c, const ynode *n, const yaml_char_t *anchor,
                        const yaml_char_t *tag, const char *allowed)
{
  char shown[80];
  if(anchor) /* libyaml limits anchor names to [A-Za-z0-9_-] */
    yerrs_node(c, n,
               "YAML anchors (&%.64s) are not allowed; write the value out",
               (const char *)anchor);
  if(tag) {
    const char *t = (const char *)tag;
    size_t pl = strlen(YAML_TAG_PREFIX);
    bool ok = false;
    if(!strncmp(t, YAML_TAG_PREFIX, pl)) {
      const char *a = allowed;
      size_t tl = strlen(t + pl);
      while(*a) {
        size_t al = strcspn(a, " ");
        if(al == tl && !strncmp(a, t + pl, tl))
          ok = true;
        a += al;
        while(*a == ' ')
          a++;
      }
    }
    if(!ok) {
      yerrs_node(c, n, "YAML tag %s is not allowed here",
                 tag_shown(t, shown, sizeof(shown)));
    }
  }
}

static void on_scalar(yerrs *c, builder *b, yaml_event_t *ev)
{
  ynode *n = new_node(c, YK_SCALAR, &ev->start_mark);
  const char *tag = (const char *)ev->data.scalar.tag;
  if(!n)
    return;
  n->len = ev->data.scalar.length;
  n->val = malloc(n->len + 1);
  if(!n->val) {
    node_free(n);
    yerrs_nomem(c);
    return;
  }
  memcpy(n->val, ev->data.scalar.value, n->len);
  n->val[n->len] = '\0';
  if(ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
    n->type = resolve_plain(n->val);
  else
    n->type = YT_STR;
  if(!attach(c, b, n))
    return;
  check_props(c, n, ev->data.scalar.anchor, ev->data.scalar.tag,
              "str int bool null float");
  if(tag && !strcmp(tag, YAML_TAG_PREFIX "str"))
    n->type = YT_STR;
  else if(tag && !strncmp(tag, YAML_TAG_PREFIX, strlen(YAML_TAG_PREFIX))) {
    static const char *const names[] = {"str", "null", "bool", "int",
                                        "float"};
    int want = -1, i;
    int got = resolve_plain(n->val);
    for(i = 0; i < 5; i++)
      if(!strcmp(tag + strlen(YAML_TAG_PREFIX), names[i]))
        want = i;
    if(want >= 0 && want != got && !(want == YT_FLOAT && got == YT_INT)) {
      char q[FIELDPATH_QUOTE_MAX];
      fieldpath_quote(q, sizeof(q), n->val, n->len);
      yerrs_node(c, n, "%s does not match the tag !!%s", q, names[want]);
    }
    else if(want >= 0)
      n->type = want;
  }
}

static void on_start(yerrs *c, builder *b, yaml_event_t *ev, int kind)
{
  ynode *n;
  if(b->depth >= YTREE_MAX_DEPTH) {
    yerrs_add(c, (int)ev->start_mark.line + 1,
              (int)ev->start_mark.column + 1, NULL,
              "YAML nesting deeper than %d levels", YTREE_MAX_DEPTH);
    c->stop = true;
    return;
  }
  n = new_node(c, kind, &ev->start_mark);
  if(!n || !attach(c, b, n))
    return;
  b->cur = n;
  b->depth++;
  if(kind == YK_MAP)
    check_props(c, n, ev->data.mapping_start.anchor,
                ev->data.mapping_start.tag, "map");
  else
    check_props(c, n, ev->data.sequence_start.anchor,
                ev->data.sequence_start.tag, "seq");
}

static void on_end(yerrs *c, builder *b)
{
  ynode *n = b->cur;
  if(!n)
    return;
  if(n->kind == YK_MAP)
    check_dups(c, b, n);
  b->cur = n->parent;
  b->depth--;
}

/* line:col of a byte offset (libyaml reader errors carry no mark) */
static void offset_pos(const char *buf, size_t len, size_t off, int *line,
                       int *col)
{
  size_t i;
  int l = 1, cl = 1;
  if(off > len)
    off = len;
  for(i = 0; i < off; i++) {
    unsigned char ch = (unsigned char)buf[i];
    if(ch == '\n' || (ch == '\r' && (i + 1 >= len || buf[i + 1] != '\n'))) {
      l++;
      cl = 1;
    }
    else if((ch & 0xc0) != 0x80 && ch != '\r')
      cl++;
  }
  *line = l;
  *col = cl;
}

static void yaml_err(yerrs *c, const yaml_parser_t *p, const char *buf,
                     size_t len)
{
  int line, col;
  if(p->error == YAML_MEMORY_ERROR) {
    yerrs_nomem(c);
    return;
  }
  if(p->error == YAML_READER_ERROR) {
    offset_pos(buf, len, p->problem_offset, &line, &col);
    if(p->problem_value >= 0 && p->problem_value < 0x100)
      yerrs_add(c, line, col, NULL, "invalid YAML: %s (byte 0x%02X)",
              p->problem ? p->problem : "unreadable input",
              (unsigned)p->problem_value);
    else
      yerrs_add(c, line, col, NULL, "invalid YAML: %s",
                p->problem ? p->problem : "unreadable input");
    return;
  }
  line = (int)p->problem_mark.line + 1;
  col = (int)p->problem_mark.column + 1;
  if(p->context && p->context_mark.line != p->problem_mark.line)
    yerrs_add(c, line, col, NULL,
              "YAML syntax error: %s (%s started at line %d)",
              p->problem ? p->problem : "unknown", p->context,
              (int)p->context_mark.line + 1);
  else if(p->context)
    yerrs_add(c, line, col, NULL, "YAML syntax error: %s (%s)",
              p->problem ? p->problem : "unknown", p->context);
  else
    yerrs_add(c, line, col, NULL, "YAML syntax error: %s",
              p->problem ? p->problem : "unknown");
}

long ytree_parse(yerrs *c, const char *buf, size_t len, ytree_doc_fn fn,
                 void *ud)
{
  yaml_parser_t p;
  yaml_event_t ev;
  builder b = {NULL, NULL, 0, NULL, sc_hash_seed()};
  bool done = false, failed = false;
  size_t doc_start = 0;
  long docs = 0;

  /* UTF-8 is forced below (so UTF-16 reads as the NULs it has), which
   * makes libyaml keep a byte order mark: drop it here */
  if(len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3)) {
    buf += 3;
    len -= 3;
  }
  if(!yaml_parser_initialize(&p)) {
    yerrs_nomem(c);
    return -1;
  }
  yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
  yaml_parser_set_encoding(&p, YAML_UTF8_ENCODING);
  while(!done && !c->stop) {
    if(!yaml_parser_parse(&p, &ev)) {
      yaml_err(c, &p, buf, len);
      failed = true;
      break;
    }
    switch(ev.type) {
    case YAML_STREAM_END_EVENT:
      done = true;
      break;
    case YAML_DOCUMENT_START_EVENT:
      b.root = b.cur = NULL;
      b.depth = 0;
      doc_start = c->n;
      break;
    case YAML_DOCUMENT_END_EVENT:
      if(b.root && !ynode_is_null(b.root))
        docs++; /* not an empty document ("---" at the end) */
      /* doc_bad: anchors, tags, duplicate keys */
      fn(ud, b.root, c->n > doc_start);
      node_free(b.root);
      b.root = b.cur = NULL;
      break;
    case YAML_ALIAS_EVENT: {
      ynode *n = new_node(c, YK_ALIAS, &ev.start_mark);
      if(n && attach(c, &b, n))
        yerrs_node(c, n, "YAML aliases (*%.64s) are not allowed; write the "
                         "value out",
                   (const char *)ev.data.alias.anchor);
      break;
    }
    case YAML_SCALAR_EVENT:
      on_scalar(c, &b, &ev);
      break;
    case YAML_SEQUENCE_START_EVENT:
      on_start(c, &b, &ev, YK_SEQ);
      break;
    case YAML_MAPPING_START_EVENT:
      on_start(c, &b, &ev, YK_MAP);
      break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
      on_end(c, &b);
      break;
    default:
      break;
    }
    yaml_event_delete(&ev);
  }
  node_free(b.root); /* a document cut short */
  sc_hmap_free(b.keys);
  yaml_parser_delete(&p);
  return failed ? -1 : docs;
}

/* ============================================================ helpers */

void yerrs_nomem(yerrs *c)
{
  c->nomem = c->stop = true;
}

void yerrs_sort(yerrs *c)
{
  size_t i, j;
  for(i = 1; i < c->n; i++) { /* insertion sort: stable, nearly sorted */
    yerr e = c->v[i];
    j = i;
    while(j > 0 && (c->v[j - 1].line > e.line ||
                    (c->v[j - 1].line == e.line && c->v[j - 1].col > e.col))) {
      c->v[j] = c->v[j - 1];
      j--;
    }
    c->v[j] = e;
  }
}

const ynode *ynode_get(const ynode *m, const char *key)
{
  size_t i;
  for(i = 0; i + 1 < m->n; i += 2) {
    const ynode *k = m->kids[i];
    if(!k->dup && k->kind == YK_SCALAR && !strcmp(k->val, key))
      return m->kids[i + 1];
  }
  return NULL;
}
