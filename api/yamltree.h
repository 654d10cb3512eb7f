/*
 * yamltree.h - a YAML document as a small node tree (libyaml events), and
 * the error list of one source with positions.
 *
 * Each node knows its line, column and parent, so any error names its
 * field path ("spec.idleTimeout", "items[2].metadata.name"). On the way
 * the builder refuses what YAML allows but a manifest must not have:
 * anchors and aliases (no alias bombs), tags other than the standard
 * ones, duplicate keys (found with lib/hmap.h, keys hashed with a
 * per-parse sc_hash_seed(): the file is untrusted) and nesting deeper
 * than YTREE_MAX_DEPTH. Scalars are typed as in the YAML 1.2 core schema: a
 * plain 123, 1.5, true or null is not a string.
 *
 * Errors are one line each, "FILE:LINE:COL: PATH: message" (no PATH when
 * path is NULL or ""); after `max` errors one more says "too many errors"
 * and the list stops taking more.
 *
 * Ownership: ytree_parse() owns the trees; a tree lives only during the
 * callback for its document. yerrs owns its texts: yerrs_free().
 */
#ifndef SC_API_YAMLTREE_H
#define SC_API_YAMLTREE_H

#include <stdbool.h>
#include <stddef.h>

#define YTREE_MAX_DEPTH 64

enum { YK_SCALAR, YK_MAP, YK_SEQ, YK_ALIAS };
enum { YT_STR, YT_NULL, YT_BOOL, YT_INT, YT_FLOAT };

typedef struct ynode ynode;
struct ynode {
  int kind;
  int type;       /* scalars: the resolved YAML type */
  int line, col;  /* 1-based */
  bool dup;       /* a duplicate key (reported; readers skip it) */
  ynode *parent;
  ynode *key;     /* the key naming this node: for map values the key
                     node, for keys the node itself; NULL otherwise */
  size_t index;   /* in a sequence */
  char *val;      /* scalars: len bytes, NUL-terminated */
  size_t len;
  ynode **kids;   /* maps: key, value, key, value ...; seqs: items */
  size_t n, cap;
};

typedef struct yerr {
  int line, col;
  char *text;
} yerr;

typedef struct yerrs {
  const char *file;  /* named in every line */
  size_t max;        /* errors before "too many errors" */
  yerr *v;
  size_t n, cap;
  bool stop;         /* too many errors, nesting too deep, out of memory */
  bool nomem;
} yerrs;

void yerrs_add(yerrs *c, int line, int col, const char *path,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* An error about node n (its position and path). */
void yerrs_node(yerrs *c, const ynode *n, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* An error about the field `field` of mapping m (which lacks it). */
void yerrs_field(yerrs *c, const ynode *m, const char *field,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void yerrs_nomem(yerrs *c);
/* By position, the order of discovery kept among equals. */
void yerrs_sort(yerrs *c);
void yerrs_free(yerrs *c);

/* Called once per document with its root (NULL for a document without
 * one); doc_bad: the builder reported errors in it (anchors, tags,
 * duplicate keys). */
typedef void (*ytree_doc_fn)(void *ud, const ynode *root, bool doc_bad);

/* Parse buf (UTF-8, a leading byte order mark skipped); errors go to c.
 * Returns the number of documents whose root is not null, or -1 when
 * the YAML could not be parsed to its end (the error is in c). */
long ytree_parse(yerrs *c, const char *buf, size_t len, ytree_doc_fn fn,
                 void *ud);

/* Node helpers. */
void ynode_path(const ynode *n, char *out, size_t len);
const char *ynode_what(const ynode *n); /* "a mapping", "an integer", ... */
bool ynode_is_null(const ynode *n);
/* The value of `key` in mapping m (duplicates skipped), NULL if absent. */
const ynode *ynode_get(const ynode *m, const char *key);
/* s is non-empty and every byte is in set. */
bool yaml_all_in(const char *s, const char *set);

#endif
