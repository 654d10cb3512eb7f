/*
 * config_int.h - what the kubeconfig reader's files share (internal to
 * controller/kubeclient/config*.c; the interface is config.h):
 *
 *   config.c       the connection: kubeconfig contexts, in-cluster, the
 *                  order of sources, copies, the credential of a request
 *   config_yaml.c  the YAML tree of a kubeconfig and its field readers
 *   config_pem.c   TLS material: base64 and PEM fields checked with
 *                  OpenSSL, the TLS options of a libcurl handle
 *   config_exec.c  users[].user.exec (credential plugins) and the
 *                  auth-provider entries that are refused
 *
 * Ownership: a ynode tree is yn_parse()'s caller's (yn_free(), NULL
 * accepted); strings given out by the field readers point into it. Every
 * error names the kubeconfig file, the line when known, and the field.
 */
#ifndef SC_KUBE_CONFIG_INT_H
#define SC_KUBE_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include "controller/kubeclient/config.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define MAX_DEPTH 32             /* levels of a kubeconfig's YAML */
#define MAX_NODES 20000          /* nodes of a kubeconfig's YAML */

typedef enum { YN_SCALAR, YN_MAP, YN_SEQ } yn_type;

typedef struct ynode {
  yn_type type;
  size_t line;
  char *value;             /* scalar */
  bool plain;              /* scalar written without quotes */
  struct ynode **kids;     /* map: key, value, key, value...; seq: items */
  size_t n;
} ynode;

/* the context of a field for messages */
typedef struct kctx {
  const char *path;
  sc_errbuf *eb;
} kctx;

/* --- config_yaml.c --- */

/* A file of at most KUBE_FILE_MAX bytes, NUL-terminated, into *out (the
 * caller's); what names it in messages; len may be NULL. */
sc_err kcfg_read_file(const char *path, const char *what, char **out,
                      size_t *len, sc_errbuf *eb);
/* The YAML text of file path as a tree (no anchors, aliases or tags
 * beyond the plain ones; at most MAX_DEPTH levels and MAX_NODES). */
sc_err yn_parse(const char *path, const char *text, size_t len,
                ynode **out, sc_errbuf *eb);
void yn_free(ynode *n);
/* the value of key in mapping m, or NULL */
ynode *yn_get(const ynode *m, const char *key);
/* the line of key in m (0 when absent) */
size_t yn_key_line(const ynode *m, const char *key);
/* absent, or a plain "", null or ~ */
bool yn_null(const ynode *n);
/* optional fields of mapping m (where names it): a string (*out into
 * the tree, NULL when absent), a boolean (false when absent) */
sc_err kcfg_str(const kctx *k, const ynode *m, const char *key,
                const char *where, const char **out);
sc_err kcfg_bool(const kctx *k, const ynode *m, const char *key,
                 const char *where, bool *out);
/* the entry named name of list (clusters, users, contexts): its inner
 * mapping (cluster, user, context); where gets "list[i].inner" */
sc_err kcfg_find_named(const kctx *k, const ynode *root, const char *list,
                       const char *inner, const char *name,
                       const ynode **out, char *where, size_t wlen);
/* file relative to the kubeconfig's directory (the caller frees it) */
char *kcfg_resolve_path(const char *kcpath, const char *file);

/* --- config_pem.c --- */

/* a PEM given as FIELD-data (base64) or FIELD (a file name), checked as
 * what ("ca", "cert", "key"); *out NULL when neither is set */
sc_err kcfg_pem(const kctx *k, const ynode *m, const char *where,
                const char *field, const char *what, char **out);

/* --- config_exec.c --- */

/* users[].user.exec of the context's user into a credential source */
sc_err kcfg_load_exec(const kctx *k, const ynode *ex, const char *wus,
                      size_t line, const char *user, const ynode *cl,
                      const char *wcl, const char *server,
                      const char *ca_pem, bool insecure, kube_cred **out);
/* users[].user.auth-provider: refused with what to use instead */
sc_err kcfg_auth_provider_refused(const kctx *k, const ynode *ap,
                                  const char *wus, size_t line);

/* --- config.c --- */

/* *dst = a copy of s (nothing when s is NULL) */
sc_err kcfg_dup(char **dst, const char *s);

#endif
