/*
 * manifest.c - reading Session manifests with libyaml, and validating them.
 *
 * The reader turns libyaml parser events into a small node tree per
 * document (each node knows its line, column and parent, so any error can
 * name its field path), refusing on the way what YAML allows but a
 * manifest must not have: anchors and aliases (no alias bombs), tags other
 * than the standard ones, duplicate keys and nesting deeper than
 * MANIFEST_MAX_DEPTH. It then walks each document as a Session or a List
 * of Sessions, checks every field with the rules below (shared with
 * session_validate()) and collects every error, each one line:
 *   FILE:LINE:COL: FIELD.PATH: message
 *
 * Scalars are typed as in the YAML 1.2 core schema: a plain 123, 1.5,
 * true or null is not a string (quote it), as kubectl would say.
 */
#include "api/manifest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "lib/dynbuf.h"
#include "api/duration.h"
#include "api/fieldpath.h"

#define MANIFEST_MAX_DEPTH 64
#define MANIFEST_MAX_ERRORS 100 /* per file */
#define NAME_MAX_LEN 63
#define ID_MAX_LEN 128
#define VALUE_MAX_LEN 4096
#define META_MAX_ENTRIES 32
#define ENV_MAX_ENTRIES 128 /* deploy/crd.yaml: envVars maxProperties */
#define STDIN_NAME "<stdin>"

/* ====================================================== the value rules
 * Each check returns true when s (len bytes, maybe with NULs) is fine, or
 * false with the message (no path) in msg. */

typedef struct msgbuf {
  char m[SC_ERRBUF_SIZE];
} msgbuf;

static void msgf(msgbuf *mb, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));
static void msgf(msgbuf *mb, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(mb->m, sizeof(mb->m), fmt, ap);
  va_end(ap);
}

/* q receives the quoted, shortened value */
typedef struct qbuf {
  char q[FIELDPATH_QUOTE_MAX];
} qbuf;

static const char *quote(qbuf *qb, const char *s, size_t len)
{
  fieldpath_quote(qb->q, sizeof(qb->q), s, len);
  return qb->q;
}

static bool is_alnum_lower(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9');
}

/* A DNS-1123 label: 1-63 of [a-z0-9-], alphanumeric at both ends. */
static bool dns_label_ok(const char *s, size_t len)
{
  size_t i;
  if(!len || len > NAME_MAX_LEN || !is_alnum_lower(s[0]) ||
     !is_alnum_lower(s[len - 1]))
    return false;
  for(i = 0; i < len; i++)
    if(!is_alnum_lower(s[i]) && s[i] != '-')
      return false;
  return true;
}

static bool chk_dns_label(const char *s, size_t len, msgbuf *mb)
{
  qbuf q;
  if(!len) {
    msgf(mb, "must not be empty");
    return false;
  }
  if(len > NAME_MAX_LEN) {
    msgf(mb, "%s is %zu characters long, at most %d are allowed",
         quote(&q, s, len), len, NAME_MAX_LEN);
    return false;
  }
  if(!dns_label_ok(s, len)) {
    msgf(mb, "%s is not a DNS-1123 label (use a-z, 0-9 and '-', starting "
             "and ending with a letter or digit)",
         quote(&q, s, len));
    return false;
  }
  return true;
}

/* 1..max bytes, each alphanumeric or in extra. */
static bool charset_ok(const char *s, size_t len, size_t max,
                       const char *extra)
{
  size_t i;
  if(!len || len > max)
    return false;
  for(i = 0; i < len; i++)
    if(!is_alnum(s[i]) && (!s[i] || !strchr(extra, s[i])))
      return false;
  return true;
}

static bool chk_charset(const char *s, size_t len, size_t max,
                        const char *extra, const char *what,
                        const char *shown, msgbuf *mb)
{
  qbuf q;
  if(!len) {
    msgf(mb, "must not be empty");
    return false;
  }
  if(len > max) {
    msgf(mb, "%s is %zu characters long, at most %zu are allowed",
         quote(&q, s, len), len, max);
    return false;
  }
  if(!charset_ok(s, len, max, extra)) {
    msgf(mb, "%s is not a valid %s (use 1-%zu characters of A-Z a-z 0-9 %s)",
         quote(&q, s, len), what, max, shown);
    return false;
  }
  return true;
}

static bool chk_template(const char *s, size_t len, msgbuf *mb)
{
  return chk_charset(s, len, ID_MAX_LEN, "._:-", "template name", ". _ : -",
                     mb);
}

static bool chk_id(const char *s, size_t len, const char *what, msgbuf *mb)
{
  return chk_charset(s, len, ID_MAX_LEN, "._-", what, ". _ -", mb);
}

/* A Kubernetes qualified name: [DNS-1123 subdomain "/"] name, the name
 * 1-63 of [A-Za-z0-9._-] with alphanumerics at both ends. */
static bool qualified_name_ok(const char *s, size_t len)
{
  const char *slash = memchr(s, '/', len);
  const char *name = s;
  size_t nlen = len, i;
  if(slash) {
    size_t plen = (size_t)(slash - s), start = 0;
    if(!plen || plen > 253)
      return false;
    for(i = 0; i <= plen; i++) {
      if(i == plen || s[i] == '.') {
        if(!dns_label_ok(s + start, i - start))
          return false;
        start = i + 1;
      }
    }
    name = slash + 1;
    nlen = len - plen - 1;
  }
  if(!nlen || nlen > NAME_MAX_LEN || !is_alnum(name[0]) ||
     !is_alnum(name[nlen - 1]))
    return false;
  for(i = 0; i < nlen; i++)
    if(!is_alnum(name[i]) && name[i] != '.' && name[i] != '_' &&
       name[i] != '-')
      return false;
  return true;
}

static bool chk_qualified_key(const char *s, size_t len, msgbuf *mb)
{
  qbuf q;
  if(!qualified_name_ok(s, len)) {
    msgf(mb, "%s is not a valid key (use an optional DNS prefix and '/', "
             "then 1-63 characters of A-Z a-z 0-9 . _ - starting and "
             "ending with a letter or digit)",
         quote(&q, s, len));
    return false;
  }
  return true;
}

/* Length of a valid UTF-8 sequence at s, or 0. */
static size_t utf8_seq(const unsigned char *s, size_t left, uint32_t *cp)
{
  uint32_t c;
  size_t n, i;
  if(s[0] < 0x80) {
    *cp = s[0];
    return 1;
  }
  if(s[0] >= 0xc2 && s[0] <= 0xdf)
    n = 2, c = s[0] & 0x1f;
  else if(s[0] >= 0xe0 && s[0] <= 0xef)
    n = 3, c = s[0] & 0x0f;
  else if(s[0] >= 0xf0 && s[0] <= 0xf4)
    n = 4, c = s[0] & 0x07;
  else
    return 0;
  if(left < n)
    return 0;
  for(i = 1; i < n; i++) {
    if((s[i] & 0xc0) != 0x80)
      return 0;
    c = (c << 6) | (s[i] & 0x3f);
  }
  if((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
     (c >= 0xd800 && c <= 0xdfff))
    return 0;
  *cp = c;
  return n;
}

/* At most VALUE_MAX_LEN bytes of UTF-8 without control characters (C0,
 * DEL, C1; NUL included). */
static bool chk_text_value(const char *s, size_t len, msgbuf *mb)
{
  size_t i = 0;
  if(len > VALUE_MAX_LEN) {
    msgf(mb, "value is %zu bytes long, at most %d are allowed", len,
         VALUE_MAX_LEN);
    return false;
  }
  while(i < len) {
    uint32_t cp;
    size_t n = utf8_seq((const unsigned char *)s + i, len - i, &cp);
    if(!n) {
      msgf(mb, "value is not valid UTF-8 (byte %zu)", i + 1);
      return false;
    }
    if(cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f)) {
      const char *name = cp == 0 ? "a NUL" : cp == '\r' ? "a carriage return"
                       : cp == '\n' ? "a line break" : cp == '\t' ? "a tab"
                       : "a control character";
      msgf(mb, "value contains %s (U+%04X at byte %zu); control characters "
               "are not allowed",
           name, (unsigned)cp, i + 1);
      return false;
    }
    i += n;
  }
  return true;
}

static const char *const env_denied[] = {"PATH",      "LD_PRELOAD",
                                         "LD_LIBRARY_PATH", "PYTHONPATH",
                                         "NODE_PATH", "BASH_ENV",
                                         "ENV",       "IFS"};

static bool chk_env_name(const char *s, size_t len, msgbuf *mb)
{
  qbuf q;
  size_t i;
  bool ok = len > 0 && len <= ID_MAX_LEN &&
            (s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') ||
             (s[0] >= 'a' && s[0] <= 'z'));
  for(i = 1; ok && i < len; i++)
    ok = is_alnum(s[i]) || s[i] == '_';
  if(!ok) {
    msgf(mb, "%s is not a valid environment variable name (use "
             "[A-Za-z_][A-Za-z0-9_]*, at most %d characters)",
         quote(&q, s, len), ID_MAX_LEN);
    return false;
  }
  for(i = 0; i < sizeof(env_denied) / sizeof(env_denied[0]); i++)
    if(strlen(env_denied[i]) == len && !memcmp(env_denied[i], s, len)) {
      msgf(mb, "%s may not be set: it changes how programs in the sandbox "
               "are found or started",
           env_denied[i]);
      return false;
    }
  return true;
}

static bool chk_meta_key(const char *s, size_t len, msgbuf *mb)
{
  qbuf q;
  if(!chk_charset(s, len, ID_MAX_LEN, "._/-", "sandbox metadata key",
                  ". _ / -", mb))
    return false;
  if(len >= strlen(SESSION_TAG_PREFIX) &&
     !memcmp(s, SESSION_TAG_PREFIX, strlen(SESSION_TAG_PREFIX))) {
    msgf(mb, "%s is under the reserved prefix \"%s\" (the controller's own "
             "tags); use another key",
         quote(&q, s, len), SESSION_TAG_PREFIX);
    return false;
  }
  return true;
}

static bool chk_annotation_value(const char *s, size_t len, msgbuf *mb)
{
  if(len > VALUE_MAX_LEN) {
    msgf(mb, "value is %zu bytes long, at most %d are allowed", len,
         VALUE_MAX_LEN);
    return false;
  }
  if(memchr(s, '\0', len)) {
    msgf(mb, "value contains a NUL character");
    return false;
  }
  return true;
}

/* Parse a duration text for a field; min_ms is the least allowed. */
static bool chk_duration(const char *s, size_t len, int64_t min_ms,
                         const char *example, int64_t *out, msgbuf *mb)
{
  qbuf q;
  int64_t ms;
  sc_err err;
  char minbuf[32];
  if(memchr(s, '\0', len)) {
    msgf(mb, "contains a NUL character");
    return false;
  }
  err = duration_parse(s, &ms);
  if(err == SC_ERR_INVALID && (s[0] == '-') && len > 1 &&
     duration_parse(s + 1, &ms) != SC_ERR_INVALID) {
    msgf(mb, "%s must not be negative", quote(&q, s, len));
    return false;
  }
  if(err == SC_ERR_INVALID) {
    msgf(mb, "%s is not a duration (use e.g. %s)", quote(&q, s, len),
         example);
    return false;
  }
  if(err || ms > SESSION_MAX_DURATION_MS) {
    msgf(mb, "%s is more than 10 years (87600h)", quote(&q, s, len));
    return false;
  }
  if(ms < min_ms) {
    duration_format(min_ms, minbuf, sizeof(minbuf));
    msgf(mb, "%s is less than the minimum of %s", quote(&q, s, len), minbuf);
    return false;
  }
  *out = ms;
  return true;
}

/* =========================================================== the tree */

enum { YK_SCALAR, YK_MAP, YK_SEQ, YK_ALIAS };
enum { YT_STR, YT_NULL, YT_BOOL, YT_INT, YT_FLOAT };

typedef struct ynode ynode;
struct ynode {
  int kind;
  int type;       /* scalars: the resolved YAML type */
  int line, col;  /* 1-based */
  bool dup;       /* a duplicate key (reported and skipped) */
  ynode *parent;
  ynode *key;     /* the key naming this node: for map values the key
                     node, for keys the node itself; NULL otherwise */
  size_t index;   /* in a sequence */
  char *val;      /* scalars: len bytes, NUL-terminated */
  size_t len;
  ynode **kids;   /* maps: key, value, key, value ...; seqs: items */
  size_t n, cap;
};

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
static void node_path(const ynode *n, char *out, size_t len)
{
  const ynode *chain[MANIFEST_MAX_DEPTH * 2 + 8];
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
static bool all_in(const char *s, const char *set)
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
  if((!strncmp(s, "0o", 2) && all_in(s + 2, "01234567")) ||
     (!strncmp(s, "0x", 2) && all_in(s + 2, "0123456789abcdefABCDEF")))
    return YT_INT;
  if(*p == '-' || *p == '+')
    p++;
  if(all_in(p, "0123456789"))
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

static const char *node_what(const ynode *n)
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

static bool is_null(const ynode *n)
{
  return n->kind == YK_SCALAR && n->type == YT_NULL;
}

/* ================================================ the object index
 * namespace/name -> item of the set, to find the same object twice in
 * O(1); open addressing over item numbers + 1 (0 = empty). Items are
 * only ever appended to a set, so the index catches up by number. */

typedef struct objindex {
  size_t *slots;
  size_t cap;     /* a power of two, or 0 */
  size_t used;
  size_t synced;  /* items of the set already in the index */
} objindex;

static uint64_t obj_hash(const char *ns, const char *name)
{
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  const char *p;
  for(p = ns; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ULL;
  h = (h ^ '/') * 1099511628211ULL;
  for(p = name; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ULL;
  return h;
}

static bool obj_usable(const session *s)
{
  return s && s->meta.name && s->meta.namespace_;
}

/* The item holding ns/name, or -1. */
static long index_find(const objindex *ix, const manifest_set *set,
                       const char *ns, const char *name)
{
  size_t i;
  if(!ix->cap)
    return -1;
  i = (size_t)obj_hash(ns, name) & (ix->cap - 1);
  while(ix->slots[i]) {
    const session *o = set->items[ix->slots[i] - 1].s;
    if(obj_usable(o) && !strcmp(o->meta.name, name) &&
       !strcmp(o->meta.namespace_, ns))
      return (long)(ix->slots[i] - 1);
    i = (i + 1) & (ix->cap - 1);
  }
  return -1;
}

static void index_put(objindex *ix, const manifest_set *set, size_t item)
{
  const session *s = set->items[item].s;
  size_t i = (size_t)obj_hash(s->meta.namespace_, s->meta.name) &
             (ix->cap - 1);
  while(ix->slots[i])
    i = (i + 1) & (ix->cap - 1);
  ix->slots[i] = item + 1;
  ix->used++;
}

/* Index the items appended since the last call. */
static sc_err index_sync(objindex *ix, const manifest_set *set)
{
  for(; ix->synced < set->n; ix->synced++) {
    const session *s = set->items[ix->synced].s;
    if(!obj_usable(s) || index_find(ix, set, s->meta.namespace_,
                                    s->meta.name) >= 0)
      continue;
    if((ix->used + 1) * 2 > ix->cap) {
      size_t nc = ix->cap ? ix->cap * 2 : 64, old = ix->cap, i;
      size_t *os = ix->slots;
      ix->slots = calloc(nc, sizeof(*ix->slots));
      if(!ix->slots) {
        ix->slots = os;
        return SC_ERR_NOMEM;
      }
      ix->cap = nc;
      ix->used = 0;
      for(i = 0; i < old; i++)
        if(os[i])
          index_put(ix, set, os[i] - 1);
      free(os);
    }
    index_put(ix, set, ix->synced);
  }
  return SC_OK;
}

static void index_free(objindex *ix)
{
  free(ix->slots);
  memset(ix, 0, sizeof(*ix));
}

/* ======================================================= the context */

typedef struct merr {
  int line, col;
  char *text;
} merr;

typedef struct mctx {
  const char *file;
  manifest_set *set;
  objindex *index;
  merr *errs;
  size_t n_errs, cap_errs;
  bool stop;        /* too many errors, nesting too deep, out of memory */
  bool nomem;
  bool doc_bad;     /* the current document had a structural error */
  size_t doc_errs;  /* n_errs when the current document started */
  size_t n_docs;    /* non-empty documents */
} mctx;

static void add_err(mctx *c, int line, int col, const char *path,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void push_err(mctx *c, int line, int col, char *text)
{
  if(!text) {
    c->nomem = c->stop = true;
    return;
  }
  if(c->n_errs == c->cap_errs) {
    size_t nc = c->cap_errs ? c->cap_errs * 2 : 8;
    merr *e = realloc(c->errs, nc * sizeof(*e));
    if(!e) {
      free(text);
      c->nomem = c->stop = true;
      return;
    }
    c->errs = e;
    c->cap_errs = nc;
  }
  c->errs[c->n_errs].line = line;
  c->errs[c->n_errs].col = col;
  c->errs[c->n_errs].text = text;
  c->n_errs++;
}

static void add_err(mctx *c, int line, int col, const char *path,
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
  if(c->n_errs >= MANIFEST_MAX_ERRORS && !c->stop) {
    dynbuf_init(&b, 4096);
    dynbuf_printf(&b, "%s:%d:%d: too many errors (%d), not reading further",
                  c->file, line, col, MANIFEST_MAX_ERRORS);
    push_err(c, line, col, dynbuf_take(&b));
    dynbuf_free(&b);
    c->stop = true;
  }
}

/* An error about node n (its position and path). */
static void node_err(mctx *c, const ynode *n, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
static void node_err(mctx *c, const ynode *n, const char *fmt, ...)
{
  char path[FIELDPATH_MAX], msg[SC_ERRBUF_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  node_path(n, path, sizeof(path));
  add_err(c, n->line, n->col, path, "%s", msg);
}

/* An error about the field `field` of mapping m (which lacks it). */
static void field_err(mctx *c, const ynode *m, const char *field,
                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void field_err(mctx *c, const ynode *m, const char *field,
                      const char *fmt, ...)
{
  char path[FIELDPATH_MAX], full[FIELDPATH_MAX], msg[SC_ERRBUF_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  node_path(m, path, sizeof(path));
  fieldpath_key(full, sizeof(full), path, field);
  add_err(c, m->line, m->col, full, "%s", msg);
}

static void err_errs_free(mctx *c)
{
  size_t i;
  for(i = 0; i < c->n_errs; i++)
    free(c->errs[i].text);
  free(c->errs);
  c->errs = NULL;
  c->n_errs = c->cap_errs = 0;
}

/* ======================================================= the walkers */

static size_t edit_distance(const char *a, const char *b)
{
  size_t la = strlen(a), lb = strlen(b), i, j;
  size_t row[64];
  if(la >= 64 || lb >= 64)
    return 99;
  for(j = 0; j <= lb; j++)
    row[j] = j;
  for(i = 1; i <= la; i++) {
    size_t prev = row[0];
    row[0] = i;
    for(j = 1; j <= lb; j++) {
      size_t cur = row[j];
      char ca = a[i - 1], cb = b[j - 1];
      size_t cost;
      if(ca >= 'A' && ca <= 'Z')
        ca = (char)(ca - 'A' + 'a');
      if(cb >= 'A' && cb <= 'Z')
        cb = (char)(cb - 'A' + 'a');
      cost = ca == cb ? 0 : 1;
      row[j] = prev + cost;
      if(row[j - 1] + 1 < row[j])
        row[j] = row[j - 1] + 1;
      if(cur + 1 < row[j])
        row[j] = cur + 1;
      prev = cur;
    }
  }
  return row[lb];
}

static void unknown_field(mctx *c, const ynode *k, const char *const *known)
{
  const char *best = NULL;
  size_t bestd = 3, i;
  for(i = 0; known[i]; i++) {
    size_t d = edit_distance(k->val, known[i]);
    if(d < bestd) {
      bestd = d;
      best = known[i];
    }
  }
  if(best && strlen(k->val) > 2)
    node_err(c, k, "unknown field (did you mean %s?)", best);
  else
    node_err(c, k, "unknown field");
}

/* The text of a string scalar, or NULL after an error was reported. */
static const char *want_str(mctx *c, const ynode *v)
{
  if(v->kind == YK_ALIAS)
    return NULL; /* reported when read */
  if(v->kind != YK_SCALAR) {
    node_err(c, v, "expected a string, got %s", node_what(v));
    return NULL;
  }
  if(v->type != YT_STR) {
    qbuf q;
    if(v->type == YT_NULL)
      node_err(c, v, "expected a string, got null");
    else
      node_err(c, v, "expected a string, got %s (quote it: %s)",
               node_what(v), quote(&q, v->val, v->len));
    return NULL;
  }
  if(memchr(v->val, '\0', v->len)) {
    node_err(c, v, "contains a NUL character");
    return NULL;
  }
  return v->val;
}

static bool want_map(mctx *c, const ynode *v)
{
  if(v->kind == YK_MAP)
    return true;
  if(v->kind != YK_ALIAS)
    node_err(c, v, "expected a mapping, got %s", node_what(v));
  return false;
}

/* The value of `key` in mapping m, NULL when absent. */
static ynode *map_get(const ynode *m, const char *key)
{
  size_t i;
  for(i = 0; i + 1 < m->n; i += 2) {
    const ynode *k = m->kids[i];
    if(!k->dup && k->kind == YK_SCALAR && !strcmp(k->val, key))
      return m->kids[i + 1];
  }
  return NULL;
}

/* Field dispatch: the usable key of pair i, or NULL to skip it. */
static const ynode *pair_key(mctx *c, const ynode *m, size_t i)
{
  const ynode *k = m->kids[i];
  if(k->dup || k->kind == YK_ALIAS)
    return NULL;
  if(k->kind != YK_SCALAR) {
    node_err(c, k, "keys must be strings, got %s", node_what(k));
    return NULL;
  }
  if(memchr(k->val, '\0', k->len)) {
    node_err(c, k, "key contains a NUL character");
    return NULL;
  }
  return k;
}

enum kv_rules { KV_LABELS, KV_ANNOTATIONS, KV_ENV, KV_META };

static void walk_kv(mctx *c, const ynode *m, sc_kvlist *out,
                    enum kv_rules rules)
{
  size_t i;
  if(is_null(m))
    return;
  if(!want_map(c, m))
    return;
  if(rules == KV_META && m->n / 2 > META_MAX_ENTRIES)
    node_err(c, m, "%zu entries, at most %d are allowed", m->n / 2,
             META_MAX_ENTRIES);
  if(rules == KV_ENV && m->n / 2 > ENV_MAX_ENTRIES)
    node_err(c, m, "%zu entries, at most %d are allowed", m->n / 2,
             ENV_MAX_ENTRIES);
  for(i = 0; i + 1 < m->n; i += 2) {
    const ynode *k = pair_key(c, m, i), *v = m->kids[i + 1];
    const char *val;
    size_t vlen;
    msgbuf mb;
    bool ok;
    if(!k)
      continue;
    switch(rules) {
    case KV_LABELS:
    case KV_ANNOTATIONS: ok = chk_qualified_key(k->val, k->len, &mb); break;
    case KV_ENV: ok = chk_env_name(k->val, k->len, &mb); break;
    default: ok = chk_meta_key(k->val, k->len, &mb); break;
    }
    if(!ok)
      node_err(c, k, "%s", mb.m);
    if(is_null(v))
      val = "";
    else if(!(val = want_str(c, v)))
      continue;
    vlen = is_null(v) ? 0 : v->len;
    switch(rules) {
    case KV_LABELS: ok = chk_id(val, vlen, "label value", &mb); break;
    case KV_ANNOTATIONS: ok = chk_annotation_value(val, vlen, &mb); break;
    default: ok = chk_text_value(val, vlen, &mb); break;
    }
    if(!ok) {
      node_err(c, v, "%s", mb.m);
      continue;
    }
    if(sc_kvlist_set(out, k->val, val))
      c->nomem = c->stop = true;
  }
}

/* A string field checked by chk; null is "" for required fields and
 * unset for optional ones. Stores a copy in *out. */
static void walk_string(mctx *c, const ynode *v, bool required,
                        bool (*chk)(const char *, size_t, msgbuf *),
                        char **out)
{
  const char *s;
  msgbuf mb;
  if(is_null(v)) {
    if(required)
      node_err(c, v, "must not be empty");
    return;
  }
  s = want_str(c, v);
  if(!s)
    return;
  if(!chk(s, v->len, &mb)) {
    node_err(c, v, "%s", mb.m);
    return;
  }
  free(*out);
  *out = strdup(s);
  if(!*out)
    c->nomem = c->stop = true;
}

static bool chk_sid(const char *s, size_t len, msgbuf *mb)
{
  return chk_id(s, len, "ID", mb);
}

static void walk_duration(mctx *c, const ynode *v, int64_t min_ms,
                          const char *example, int64_t *out)
{
  msgbuf mb;
  if(is_null(v) || v->kind == YK_ALIAS)
    return;
  if(v->kind != YK_SCALAR) {
    node_err(c, v, "expected a duration such as %s, got %s", example,
             node_what(v));
    return;
  }
  if(!chk_duration(v->val, v->len, min_ms, example, out, &mb))
    node_err(c, v, "%s", mb.m);
}

static void walk_wake(mctx *c, const ynode *v, int64_t *out)
{
  qbuf q;
  const char *p;
  int64_t w = 0;
  if(is_null(v) || v->kind == YK_ALIAS)
    return;
  if(v->kind != YK_SCALAR || v->type != YT_INT) {
    node_err(c, v, "expected an integer, got %s", node_what(v));
    return;
  }
  p = v->val;
  if(*p == '+')
    p++;
  if(*p == '-') {
    node_err(c, v, "%s must not be negative", v->val);
    return;
  }
  if(!all_in(p, "0123456789")) {
    node_err(c, v, "%s is not a decimal integer", quote(&q, v->val, v->len));
    return;
  }
  for(; *p; p++) {
    int d = *p - '0';
    if(w > (INT64_MAX - d) / 10) {
      node_err(c, v, "%s is too large", v->val);
      return;
    }
    w = w * 10 + d;
  }
  *out = w;
}

static const char *const top_fields[] = {"apiVersion", "kind", "metadata",
                                         "spec", "status", NULL};
static const char *const meta_fields[] = {"name", "namespace", "labels",
                                          "annotations", NULL};
/* Set by the store (or the API server, or the controller: finalizers),
 * never by a manifest: ignored, as the API server ignores them on a create
 * and keeps its own on an update, so what `get -o json|yaml` prints applies
 * back. Their values are not even checked. */
static const char *const meta_store_fields[] = {
  "uid", "resourceVersion", "generation", "creationTimestamp",
  "deletionTimestamp", "deletionGracePeriodSeconds", "finalizers",
  "managedFields", "selfLink", NULL};
static const char *const spec_fields[] = {
  "template", "sessionID", "tenantID", "state", "idleTimeout",
  "reclaimAfter", "envVars", "sandboxMetadata", "wake", NULL};
static const char *const list_fields[] = {"apiVersion", "kind", "items",
                                          "metadata", NULL};

static bool in_list(const char *s, const char *const *l)
{
  for(; *l; l++)
    if(!strcmp(s, *l))
      return true;
  return false;
}

static void walk_meta(mctx *c, const ynode *m, session *s,
                      const ynode **name_node)
{
  size_t i;
  bool have_name = false;
  for(i = 0; i + 1 < m->n; i += 2) {
    const ynode *k = pair_key(c, m, i), *v = m->kids[i + 1];
    if(!k)
      continue;
    if(!strcmp(k->val, "name")) {
      have_name = true;
      *name_node = v;
      walk_string(c, v, true, chk_dns_label, &s->meta.name);
    }
    else if(!strcmp(k->val, "namespace"))
      walk_string(c, v, false, chk_dns_label, &s->meta.namespace_);
    else if(!strcmp(k->val, "labels"))
      walk_kv(c, v, &s->meta.labels, KV_LABELS);
    else if(!strcmp(k->val, "annotations"))
      walk_kv(c, v, &s->meta.annotations, KV_ANNOTATIONS);
    else if(in_list(k->val, meta_store_fields))
      ; /* set by the store: ignored (see meta_store_fields) */
    else
      unknown_field(c, k, meta_fields);
  }
  if(!have_name)
    field_err(c, m, "name", "required field missing");
}

static void walk_spec(mctx *c, const ynode *m, session *s)
{
  size_t i;
  bool have_template = false;
  for(i = 0; i + 1 < m->n; i += 2) {
    const ynode *k = pair_key(c, m, i), *v = m->kids[i + 1];
    if(!k)
      continue;
    if(!strcmp(k->val, "template")) {
      have_template = true;
      walk_string(c, v, true, chk_template, &s->spec.template_id);
    }
    else if(!strcmp(k->val, "state")) {
      const char *st;
      int state;
      qbuf q;
      if(is_null(v) || !(st = want_str(c, v)))
        continue;
      state = session_state_parse(st);
      if(state < 0)
        node_err(c, v,
                 "%s is not a state (use Active, Running, Paused or Ended)",
                 quote(&q, st, v->len));
      else
        s->spec.state = (session_state)state;
    }
    else if(!strcmp(k->val, "idleTimeout"))
      walk_duration(c, v, 1000, "15m", &s->spec.idle_timeout_ms);
    else if(!strcmp(k->val, "reclaimAfter"))
      walk_duration(c, v, 0, "24h, or 0 for never",
                    &s->spec.reclaim_after_ms);
    else if(!strcmp(k->val, "sessionID"))
      walk_string(c, v, false, chk_sid, &s->spec.session_id);
    else if(!strcmp(k->val, "tenantID"))
      walk_string(c, v, false, chk_sid, &s->spec.tenant_id);
    else if(!strcmp(k->val, "envVars"))
      walk_kv(c, v, &s->spec.env_vars, KV_ENV);
    else if(!strcmp(k->val, "sandboxMetadata"))
      walk_kv(c, v, &s->spec.sandbox_metadata, KV_META);
    else if(!strcmp(k->val, "wake"))
      walk_wake(c, v, &s->spec.wake);
    else
      unknown_field(c, k, spec_fields);
  }
  if(!have_template)
    field_err(c, m, "template", "required field missing");
}

static sc_err add_item(manifest_set *set, session *s, const char *file,
                       int line)
{
  manifest_item *items =
    realloc(set->items, (set->n + 1) * sizeof(*set->items));
  char *f = strdup(file);
  if(items)
    set->items = items;
  if(!items || !f) {
    free(f);
    return SC_ERR_NOMEM;
  }
  items[set->n].s = s;
  items[set->n].file = f;
  items[set->n].line = line;
  set->n++;
  return SC_OK;
}

/* A mapping known to be kind: Session. */
static void walk_session(mctx *c, const ynode *m)
{
  session *s = session_new();
  const ynode *meta = NULL, *spec = NULL, *name_node = NULL;
  size_t before = c->n_errs, i;
  bool have_api = false;
  if(!s) {
    c->nomem = c->stop = true;
    return;
  }
  for(i = 0; i + 1 < m->n; i += 2) {
    const ynode *k = pair_key(c, m, i), *v = m->kids[i + 1];
    if(!k)
      continue;
    if(!strcmp(k->val, "apiVersion")) {
      const char *api = want_str(c, v);
      qbuf q;
      have_api = true;
      if(api && strcmp(api, SESSION_API_VERSION))
        node_err(c, v, "%s is not supported (use %s)",
                 quote(&q, api, v->len), SESSION_API_VERSION);
    }
    else if(!strcmp(k->val, "kind"))
      ; /* checked by the caller */
    else if(!strcmp(k->val, "metadata"))
      meta = v;
    else if(!strcmp(k->val, "spec"))
      spec = v;
    else if(!strcmp(k->val, "status"))
      ; /* written by the controller only: ignored in manifests */
    else
      unknown_field(c, k, top_fields);
  }
  if(!have_api)
    field_err(c, m, "apiVersion", "required field missing (use %s)",
              SESSION_API_VERSION);
  if(!meta)
    field_err(c, m, "metadata", "required field missing");
  else if(is_null(meta))
    node_err(c, meta, "must not be empty (it needs at least a name)");
  else if(want_map(c, meta))
    walk_meta(c, meta, s, &name_node);
  if(!spec)
    field_err(c, m, "spec", "required field missing");
  else if(is_null(spec))
    node_err(c, spec, "must not be empty (it needs at least a template)");
  else if(want_map(c, spec))
    walk_spec(c, spec, s);

  if(c->n_errs != before || c->stop) {
    session_free(s);
    return;
  }
  if(session_apply_defaults(s)) {
    session_free(s);
    c->nomem = c->stop = true;
    return;
  }
  /* the same object twice, in this source or an earlier one */
  if(index_sync(c->index, c->set)) {
    session_free(s);
    c->nomem = c->stop = true;
    return;
  }
  {
    long first = index_find(c->index, c->set, s->meta.namespace_,
                            s->meta.name);
    if(first >= 0) {
      char key[160];
      session_key(s, key, sizeof(key));
      node_err(c, name_node, "duplicate object %s, first at %s:%d", key,
               c->set->items[first].file, c->set->items[first].line);
      session_free(s);
      return;
    }
  }
  if(c->doc_bad) { /* valid itself, but its document is not */
    session_free(s);
    return;
  }
  if(add_item(c->set, s, c->file, m->line)) {
    session_free(s);
    c->nomem = c->stop = true;
  }
}

/* The kind of a Session-or-List mapping, or NULL after an error. */
static const char *doc_kind(mctx *c, const ynode *m, const char *use)
{
  const ynode *k = map_get(m, "kind");
  if(!k) {
    field_err(c, m, "kind", "required field missing (use %s)", use);
    return NULL;
  }
  if(is_null(k)) {
    node_err(c, k, "must not be empty (use %s)", use);
    return NULL;
  }
  return want_str(c, k);
}

static void walk_list(mctx *c, const ynode *m)
{
  const ynode *items = NULL;
  size_t i;
  bool have_api = false;
  for(i = 0; i + 1 < m->n; i += 2) {
    const ynode *k = pair_key(c, m, i), *v = m->kids[i + 1];
    if(!k)
      continue;
    if(!strcmp(k->val, "apiVersion")) {
      const char *api = want_str(c, v);
      qbuf q;
      have_api = true;
      if(api && strcmp(api, "v1") && strcmp(api, SESSION_API_VERSION))
        node_err(c, v, "%s is not supported for a List (use v1)",
                 quote(&q, api, v->len));
    }
    else if(!strcmp(k->val, "kind"))
      ;
    else if(!strcmp(k->val, "items"))
      items = v;
    else if(!strcmp(k->val, "metadata"))
      ; /* a list's own metadata (resourceVersion: "") means nothing here */
    else
      unknown_field(c, k, list_fields);
  }
  if(!have_api)
    field_err(c, m, "apiVersion", "required field missing (use v1)");
  if(!items) {
    field_err(c, m, "items", "required field missing");
    return;
  }
  if(is_null(items) || items->kind == YK_ALIAS)
    return;
  if(items->kind != YK_SEQ) {
    node_err(c, items, "expected a list of Sessions, got %s",
             node_what(items));
    return;
  }
  c->set->n_read += items->n;
  for(i = 0; i < items->n && !c->stop; i++) {
    const ynode *it = items->kids[i];
    const char *kind;
    qbuf q;
    if(it->kind == YK_ALIAS)
      continue;
    if(it->kind != YK_MAP) {
      node_err(c, it, "expected a mapping (a Session), got %s",
               node_what(it));
      continue;
    }
    kind = doc_kind(c, it, SESSION_KIND);
    if(!kind)
      continue;
    if(strcmp(kind, SESSION_KIND)) {
      node_err(c, map_get(it, "kind"), "%s is not allowed in a List (use %s)",
               quote(&q, kind, strlen(kind)), SESSION_KIND);
      continue;
    }
    walk_session(c, it);
  }
}

static void walk_doc(mctx *c, const ynode *root)
{
  const char *kind;
  qbuf q;
  if(is_null(root))
    return; /* an empty document ("---" at the end) */
  c->n_docs++;
  if(root->kind == YK_ALIAS) {
    c->set->n_read++;
    return;
  }
  if(root->kind != YK_MAP) {
    c->set->n_read++;
    node_err(c, root, "expected a mapping (a Session or a List), got %s",
             node_what(root));
    return;
  }
  kind = doc_kind(c, root, "Session or List");
  if(kind && (!strcmp(kind, "List") || !strcmp(kind, "SessionList"))) {
    walk_list(c, root); /* counts its items */
    return;
  }
  c->set->n_read++;
  if(!kind)
    return;
  if(!strcmp(kind, SESSION_KIND))
    walk_session(c, root);
  else
    node_err(c, map_get(root, "kind"),
             "%s is not supported (use Session or List)",
             quote(&q, kind, strlen(kind)));
}

/* ======================================================= the builder */

static int cmp_keys(const void *a, const void *b)
{
  const ynode *x = *(const ynode *const *)a, *y = *(const ynode *const *)b;
  size_t l = x->len < y->len ? x->len : y->len;
  int r = memcmp(x->val, y->val, l);
  if(r)
    return r;
  if(x->len != y->len)
    return x->len < y->len ? -1 : 1;
  /* equal keys: the earlier one first */
  if(x->line != y->line)
    return x->line < y->line ? -1 : 1;
  return x->col < y->col ? -1 : x->col > y->col;
}

/* Mark and report duplicate keys of a finished mapping. */
static void check_dups(mctx *c, ynode *m)
{
  ynode **keys;
  size_t n = 0, i;
  if(m->n < 4)
    return;
  keys = malloc((m->n / 2) * sizeof(*keys));
  if(!keys) {
    c->nomem = c->stop = true;
    return;
  }
  for(i = 0; i + 1 < m->n; i += 2)
    if(m->kids[i]->kind == YK_SCALAR)
      keys[n++] = m->kids[i];
  qsort(keys, n, sizeof(*keys), cmp_keys);
  for(i = 1; i < n; i++) {
    ynode *first = keys[i - 1];
    size_t j = i;
    while(j < n && keys[j]->len == first->len &&
          !memcmp(keys[j]->val, first->val, first->len)) {
      keys[j]->dup = true;
      node_err(c, keys[j], "duplicate key (first at %d:%d)", first->line,
               first->col);
      j++;
    }
    i = j;
  }
  free(keys);
}

typedef struct builder {
  ynode *root;
  ynode *cur;   /* the open container */
  int depth;
} builder;

static bool attach(mctx *c, builder *b, ynode *n)
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
      c->nomem = c->stop = true;
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

static ynode *new_node(mctx *c, int kind, const yaml_mark_t *mark)
{
  ynode *n = calloc(1, sizeof(*n));
  if(!n) {
    c->nomem = c->stop = true;
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
static void check_props(mctx *c, const ynode *n, const yaml_char_t *anchor,
                        const yaml_char_t *tag, const char *allowed)
{
  char shown[80];
  if(anchor) /* libyaml limits anchor names to [A-Za-z0-9_-] */
    node_err(c, n, "YAML anchors (&%.64s) are not allowed; write the value "
                   "out",
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
      node_err(c, n, "YAML tag %s is not allowed here",
               tag_shown(t, shown, sizeof(shown)));
      }
  }
}

static void on_scalar(mctx *c, builder *b, yaml_event_t *ev)
{
  ynode *n = new_node(c, YK_SCALAR, &ev->start_mark);
  const char *tag = (const char *)ev->data.scalar.tag;
  if(!n)
    return;
  n->len = ev->data.scalar.length;
  n->val = malloc(n->len + 1);
  if(!n->val) {
    node_free(n);
    c->nomem = c->stop = true;
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
      qbuf q;
      node_err(c, n, "%s does not match the tag !!%s",
               quote(&q, n->val, n->len), names[want]);
      }
    else if(want >= 0)
      n->type = want;
  }
}

static void on_start(mctx *c, builder *b, yaml_event_t *ev, int kind)
{
  ynode *n;
  if(b->depth >= MANIFEST_MAX_DEPTH) {
    add_err(c, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
            NULL, "YAML nesting deeper than %d levels", MANIFEST_MAX_DEPTH);
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

static void on_end(mctx *c, builder *b)
{
  ynode *n = b->cur;
  if(!n)
    return;
  if(n->kind == YK_MAP)
    check_dups(c, n);
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

static void yaml_err(mctx *c, const yaml_parser_t *p, const char *buf,
                     size_t len)
{
  int line, col;
  if(p->error == YAML_MEMORY_ERROR) {
    c->nomem = c->stop = true;
    return;
  }
  if(p->error == YAML_READER_ERROR) {
    offset_pos(buf, len, p->problem_offset, &line, &col);
    if(p->problem_value >= 0 && p->problem_value < 0x100)
      add_err(c, line, col, NULL, "invalid YAML: %s (byte 0x%02X)",
              p->problem ? p->problem : "unreadable input",
              (unsigned)p->problem_value);
    else
      add_err(c, line, col, NULL, "invalid YAML: %s",
              p->problem ? p->problem : "unreadable input");
    return;
  }
  line = (int)p->problem_mark.line + 1;
  col = (int)p->problem_mark.column + 1;
  if(p->context && p->context_mark.line != p->problem_mark.line)
    add_err(c, line, col, NULL, "YAML syntax error: %s (%s started at line %d)",
            p->problem ? p->problem : "unknown", p->context,
            (int)p->context_mark.line + 1);
  else if(p->context)
    add_err(c, line, col, NULL, "YAML syntax error: %s (%s)",
            p->problem ? p->problem : "unknown", p->context);
  else
    add_err(c, line, col, NULL, "YAML syntax error: %s",
            p->problem ? p->problem : "unknown");
}

static void parse_yaml(mctx *c, const char *buf, size_t len)
{
  yaml_parser_t p;
  yaml_event_t ev;
  builder b = {NULL, NULL, 0};
  bool done = false, failed = false;

  /* UTF-8 is forced below (so UTF-16 reads as the NULs it has), which
   * makes libyaml keep a byte order mark: drop it here */
  if(len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3)) {
    buf += 3;
    len -= 3;
  }
  if(!yaml_parser_initialize(&p)) {
    c->nomem = c->stop = true;
    return;
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
      c->doc_errs = c->n_errs;
      break;
    case YAML_DOCUMENT_END_EVENT:
      c->doc_bad = c->n_errs > c->doc_errs; /* anchors, tags, dup keys */
      if(b.root)
        walk_doc(c, b.root);
      node_free(b.root);
      b.root = b.cur = NULL;
      break;
    case YAML_ALIAS_EVENT: {
      ynode *n = new_node(c, YK_ALIAS, &ev.start_mark);
      if(n && attach(c, &b, n))
        node_err(c, n, "YAML aliases (*%.64s) are not allowed; write the "
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
  yaml_parser_delete(&p);
  if(!failed && !c->stop && !c->n_docs)
    add_err(c, 1, 1, NULL,
            "no objects (the file is empty, or holds only comments and empty "
            "documents)");
}

/* ======================================================= the sources */

static void set_add_error(manifest_set *set, char *text, bool *nomem)
{
  char **e;
  if(!text) {
    *nomem = true;
    return;
  }
  e = realloc(set->errors, (set->n_errors + 1) * sizeof(*e));
  if(!e) {
    free(text);
    *nomem = true;
    return;
  }
  set->errors = e;
  e[set->n_errors++] = text;
}

static sc_err set_errorf(manifest_set *set, sc_err err, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
static sc_err set_errorf(manifest_set *set, sc_err err, const char *fmt, ...)
{
  char msg[1024];
  bool nomem = false;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  set_add_error(set, strdup(msg), &nomem);
  return nomem ? SC_ERR_NOMEM : err;
}

static size_t max_bytes(const manifest_opts *opts)
{
  return opts && opts->max_bytes ? opts->max_bytes
                                 : (size_t)MANIFEST_DEFAULT_MAX_BYTES;
}

static sc_err read_buffer(const char *name, const char *buf, size_t len,
                          const manifest_opts *opts, manifest_set *set,
                          objindex *index)
{
  mctx c;
  size_t i, j;
  bool nomem = false;
  size_t max = max_bytes(opts);

  if(!name)
    name = STDIN_NAME;
  if(len > max)
    return set_errorf(set, SC_OK,
                      "%s:1:1: file is %zu bytes, over the limit of %zu bytes "
                      "for a manifest",
                      name, len, max);
  memset(&c, 0, sizeof(c));
  c.file = name;
  c.set = set;
  c.index = index;
  parse_yaml(&c, buf ? buf : "", buf ? len : 0);
  /* by position, the order of discovery kept among equals */
  for(i = 1; i < c.n_errs; i++) {
    merr e = c.errs[i];
    j = i;
    while(j > 0 && (c.errs[j - 1].line > e.line ||
                    (c.errs[j - 1].line == e.line && c.errs[j - 1].col > e.col))) {
      c.errs[j] = c.errs[j - 1];
      j--;
    }
    c.errs[j] = e;
  }
  for(i = 0; i < c.n_errs; i++) {
    set_add_error(set, c.errs[i].text, &nomem);
    c.errs[i].text = NULL;
  }
  err_errs_free(&c);
  return (c.nomem || nomem) ? SC_ERR_NOMEM : SC_OK;
}

sc_err manifest_read_buffer(const char *name, const char *buf, size_t len,
                            const manifest_opts *opts, manifest_set *set)
{
  objindex ix = {NULL, 0, 0, 0};
  sc_err err = read_buffer(name, buf, len, opts, set, &ix);
  index_free(&ix);
  return err;
}

/* Read all of fd into b (capped at max); name for messages. */
static sc_err read_fd(int fd, const char *name, size_t max, dynbuf *b,
                      manifest_set *set)
{
  char chunk[16384];
  for(;;) {
    ssize_t r = read(fd, chunk, sizeof(chunk));
    sc_err err;
    if(r < 0) {
      if(errno == EINTR)
        continue;
      return set_errorf(set, SC_ERR_IO, "%s: cannot read: %s", name,
                        strerror(errno));
    }
    if(!r)
      return SC_OK;
    err = dynbuf_add(b, chunk, (size_t)r);
    if(err == SC_ERR_TOO_LARGE)
      return set_errorf(set, SC_ERR_TOO_LARGE,
                        "%s:1:1: file is over the limit of %zu bytes for a "
                        "manifest",
                        name, max);
    if(err)
      return err;
  }
}

static sc_err read_file(const char *path, const manifest_opts *opts,
                        manifest_set *set, objindex *ix)
{
  size_t max = max_bytes(opts);
  struct stat st;
  dynbuf b;
  sc_err err;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if(fd < 0)
    return set_errorf(set, errno == ENOENT ? SC_ERR_NOT_FOUND : SC_ERR_IO,
                      "%s: cannot open: %s", path, strerror(errno));
  if(fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
     (uint64_t)st.st_size > (uint64_t)max) {
    close(fd);
    /* too large is a finding about the file, not a read failure */
    return set_errorf(set, SC_OK,
                      "%s:1:1: file is %lld bytes, over the limit of %zu "
                      "bytes for a manifest",
                      path, (long long)st.st_size, max);
  }
  dynbuf_init(&b, max);
  err = read_fd(fd, path, max, &b, set);
  close(fd);
  if(err == SC_ERR_TOO_LARGE)
    err = SC_OK;
  else if(!err)
    err = read_buffer(path, dynbuf_ptr(&b), dynbuf_len(&b), opts, set, ix);
  dynbuf_free(&b);
  return err;
}

static int cmp_names(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names kubectl reads from a directory: *.yaml, *.yml, *.json. */
static bool yaml_name(const char *n)
{
  size_t l = strlen(n);
  if(n[0] == '.')
    return false;
  return (l > 5 && !strcmp(n + l - 5, ".yaml")) ||
         (l > 4 && !strcmp(n + l - 4, ".yml")) ||
         (l > 5 && !strcmp(n + l - 5, ".json"));
}

static sc_err read_dir(const char *path, const manifest_opts *opts,
                       manifest_set *set, objindex *ix)
{
  DIR *d = opendir(path);
  struct dirent *de;
  char **names = NULL;
  size_t n = 0, i;
  sc_err err = SC_OK;
  size_t plen = strlen(path);
  bool slash = plen && path[plen - 1] == '/';

  if(!d)
    return set_errorf(set, SC_ERR_IO, "%s: cannot open directory: %s", path,
                      strerror(errno));
  while((de = readdir(d))) {
    char **nn;
    char *full;
    struct stat st;
    size_t fl;
    if(!yaml_name(de->d_name))
      continue;
    fl = plen + strlen(de->d_name) + 2;
    full = malloc(fl);
    if(!full) {
      err = SC_ERR_NOMEM;
      break;
    }
    snprintf(full, fl, "%s%s%s", path, slash ? "" : "/", de->d_name);
    if(stat(full, &st) || !S_ISREG(st.st_mode)) {
      free(full);
      continue;
    }
    nn = realloc(names, (n + 1) * sizeof(*nn));
    if(!nn) {
      free(full);
      err = SC_ERR_NOMEM;
      break;
    }
    names = nn;
    names[n++] = full;
  }
  closedir(d);
  if(!err) {
    if(n)
      qsort(names, n, sizeof(*names), cmp_names);
    else
      err = set_errorf(set, SC_OK, "%s: no *.yaml, *.yml or *.json files", path);
    for(i = 0; i < n && err != SC_ERR_NOMEM; i++) {
      sc_err e = read_file(names[i], opts, set, ix);
      if(e && !err)
        err = e;
    }
  }
  for(i = 0; i < n; i++)
    free(names[i]);
  free(names);
  return err;
}

static sc_err read_path(const char *path, const manifest_opts *opts,
                        manifest_set *set, objindex *ix)
{
  struct stat st;
  if(!path || !*path)
    return set_errorf(set, SC_ERR_INVALID, "no manifest path given");
  if(!strcmp(path, "-")) {
    size_t max = max_bytes(opts);
    dynbuf b;
    sc_err err;
    dynbuf_init(&b, max);
    err = read_fd(STDIN_FILENO, STDIN_NAME, max, &b, set);
    if(err == SC_ERR_TOO_LARGE)
      err = SC_OK;
    else if(!err)
      err = read_buffer(STDIN_NAME, dynbuf_ptr(&b), dynbuf_len(&b), opts,
                        set, ix);
    dynbuf_free(&b);
    return err;
  }
  if(stat(path, &st))
    return set_errorf(set, errno == ENOENT ? SC_ERR_NOT_FOUND : SC_ERR_IO,
                      "%s: cannot open: %s", path, strerror(errno));
  if(S_ISDIR(st.st_mode))
    return read_dir(path, opts, set, ix);
  return read_file(path, opts, set, ix);
}

sc_err manifest_read_path(const char *path, const manifest_opts *opts,
                          manifest_set *set)
{
  objindex ix = {NULL, 0, 0, 0};
  sc_err err = read_path(path, opts, set, &ix);
  index_free(&ix);
  return err;
}

void manifest_set_free(manifest_set *set)
{
  size_t i;
  if(!set)
    return;
  for(i = 0; i < set->n; i++) {
    session_free(set->items[i].s);
    free(set->items[i].file);
  }
  free(set->items);
  for(i = 0; i < set->n_errors; i++)
    free(set->errors[i]);
  free(set->errors);
  memset(set, 0, sizeof(*set));
}

/* ================================================== session_validate */

typedef struct vctx {
  char ***errs;
  size_t *n_errs;
  bool found;
  bool nomem;
} vctx;

static void verr(vctx *v, const char *path, const char *msg)
{
  dynbuf b;
  char *line, **e;
  v->found = true;
  dynbuf_init(&b, 4096);
  dynbuf_printf(&b, "%s: %s", path, msg);
  line = dynbuf_take(&b);
  dynbuf_free(&b);
  if(!line) {
    v->nomem = true;
    return;
  }
  e = realloc(*v->errs, (*v->n_errs + 1) * sizeof(*e));
  if(!e) {
    free(line);
    v->nomem = true;
    return;
  }
  *v->errs = e;
  e[(*v->n_errs)++] = line;
}

static void vstr(vctx *v, const char *path, const char *s,
                 bool (*chk)(const char *, size_t, msgbuf *))
{
  msgbuf mb;
  if(!s) {
    verr(v, path, "required field missing");
    return;
  }
  if(!chk(s, strlen(s), &mb))
    verr(v, path, mb.m);
}

static void vkv(vctx *v, const char *path, const sc_kvlist *l,
                enum kv_rules rules)
{
  size_t i;
  msgbuf mb;
  if(rules == KV_META && l->n > META_MAX_ENTRIES) {
    msgf(&mb, "%zu entries, at most %d are allowed", l->n, META_MAX_ENTRIES);
    verr(v, path, mb.m);
  }
  if(rules == KV_ENV && l->n > ENV_MAX_ENTRIES) {
    msgf(&mb, "%zu entries, at most %d are allowed", l->n, ENV_MAX_ENTRIES);
    verr(v, path, mb.m);
  }
  for(i = 0; i < l->n; i++) {
    const char *k = l->items[i].key, *val = l->items[i].value;
    char p[FIELDPATH_MAX];
    bool ok;
    fieldpath_key(p, sizeof(p), path, k);
    switch(rules) {
    case KV_LABELS:
    case KV_ANNOTATIONS: ok = chk_qualified_key(k, strlen(k), &mb); break;
    case KV_ENV: ok = chk_env_name(k, strlen(k), &mb); break;
    default: ok = chk_meta_key(k, strlen(k), &mb); break;
    }
    if(!ok)
      verr(v, p, mb.m);
    switch(rules) {
    case KV_LABELS: ok = chk_id(val, strlen(val), "label value", &mb); break;
    case KV_ANNOTATIONS:
      ok = chk_annotation_value(val, strlen(val), &mb);
      break;
    default: ok = chk_text_value(val, strlen(val), &mb); break;
    }
    if(!ok)
      verr(v, p, mb.m);
  }
}

static void vdur(vctx *v, const char *path, int64_t ms, int64_t min_ms)
{
  char buf[32], minbuf[32], msg[128];
  duration_format(ms, buf, sizeof(buf));
  if(ms < 0)
    snprintf(msg, sizeof(msg), "%s must not be negative", buf);
  else if(ms > SESSION_MAX_DURATION_MS)
    snprintf(msg, sizeof(msg), "%s is more than 10 years (87600h)", buf);
  else if(ms < min_ms) {
    duration_format(min_ms, minbuf, sizeof(minbuf));
    snprintf(msg, sizeof(msg), "%s is less than the minimum of %s", buf,
             minbuf);
  }
  else
    return;
  verr(v, path, msg);
}

/* stored: an object from a store, as the controller reads it: absent
 * optional fields mean their defaults (idleTimeout 0, reclaimAfter < 0,
 * no sessionID or tenantID), and labels and annotations are not checked
 * (the controller uses neither, and an API server accepts any string
 * there: refusing them would let one tenant's odd annotation stop the
 * object). */
static sc_err validate(const session *s, bool stored, char ***errs,
                       size_t *n_errs)
{
  vctx v = {errs, n_errs, false, false};
  if(!s) {
    verr(&v, "metadata", "no object");
    return v.nomem ? SC_ERR_NOMEM : SC_ERR_INVALID;
  }
  vstr(&v, "metadata.name", s->meta.name, chk_dns_label);
  vstr(&v, "metadata.namespace", s->meta.namespace_, chk_dns_label);
  if(!stored) {
    vkv(&v, "metadata.labels", &s->meta.labels, KV_LABELS);
    vkv(&v, "metadata.annotations", &s->meta.annotations, KV_ANNOTATIONS);
  }
  vstr(&v, "spec.template", s->spec.template_id, chk_template);
  if((unsigned)s->spec.state > (unsigned)SESSION_STATE_ENDED)
    verr(&v, "spec.state", "is not a state (use Active, Running, Paused or "
                           "Ended)");
  if(!stored || s->spec.idle_timeout_ms)
    vdur(&v, "spec.idleTimeout", s->spec.idle_timeout_ms, 1000);
  if(!stored || s->spec.reclaim_after_ms >= 0)
    vdur(&v, "spec.reclaimAfter", s->spec.reclaim_after_ms, 0);
  if(!stored || s->spec.session_id)
    vstr(&v, "spec.sessionID", s->spec.session_id, chk_sid);
  if(!stored || s->spec.tenant_id)
    vstr(&v, "spec.tenantID", s->spec.tenant_id, chk_sid);
  vkv(&v, "spec.envVars", &s->spec.env_vars, KV_ENV);
  vkv(&v, "spec.sandboxMetadata", &s->spec.sandbox_metadata, KV_META);
  if(s->spec.wake < 0)
    verr(&v, "spec.wake", "must not be negative");
  if(v.nomem)
    return SC_ERR_NOMEM;
  return v.found ? SC_ERR_INVALID : SC_OK;
}

sc_err session_validate(const session *s, char ***errs, size_t *n_errs)
{
  return validate(s, false, errs, n_errs);
}

char *session_invalid_reason(const session *s)
{
  char **errs = NULL, *out = NULL;
  size_t n = 0, i;
  sc_err err = validate(s, true, &errs, &n);
  if(err == SC_ERR_NOMEM && !n)
    return strdup("out of memory while validating");
  if(n) {
    dynbuf b;
    dynbuf_init(&b, 4096);
    if(n == 1)
      dynbuf_addstr(&b, errs[0]);
    else
      dynbuf_printf(&b, "%s (and %zu more)", errs[0], n - 1);
    out = dynbuf_take(&b);
    dynbuf_free(&b);
    if(!out)
      out = strdup("invalid (out of memory)");
  }
  for(i = 0; i < n; i++)
    free(errs[i]);
  free(errs);
  return out;
}
