/*
 * manifest.h - reading Session manifests (YAML, libyaml) and validating them.
 *
 * Sources: a file (multi-document, `kind: List` or `SessionList` with
 * `items`; JSON too, which YAML reads as flow style), a directory (its
 * *.yaml / *.yml / *.json files, sorted by name, not recursive), or "-"
 * for standard input. Every error is one line:
 *   FILE:LINE:COL: FIELD.PATH: what is wrong (and how to fix it)
 * and all errors of every file are collected, not only the first (at most
 * 100 per file), sorted by position. Errors about a whole file (cannot
 * open, no *.yaml in a directory) are "FILE: message"; content errors
 * without a field (YAML syntax, too large, no objects) have no PATH.
 * The rules are in docs/session-api.md. In short:
 *  - YAML anchors/aliases, non-standard tags, duplicate keys, nesting over
 *    64 levels, NUL bytes and invalid UTF-8 are refused;
 *  - scalars are typed as in YAML 1.2 core: a plain 123/true/null is not
 *    a string (quote it); a JSON-style null means "unset";
 *  - `status` in a manifest is ignored (the controller writes it), and so
 *    is the metadata the store sets: uid, resourceVersion, generation,
 *    creationTimestamp, deletionTimestamp, finalizers, managedFields,
 *    selfLink (so `sessionctl get -o json | sessionctl apply -f -` works);
 *  - the same namespace/name twice (in one call, across files and
 *    documents) is an error on the second.
 * An object is added to the set only when it and its document are free of
 * errors; other documents of the same file may still add theirs, so a
 * caller that wants all-or-nothing checks n_errors first.
 *
 * Ownership: manifest_set owns its sessions and error strings; free it with
 * manifest_set_free() (NULL accepted). A caller may steal a session by
 * setting items[i] to NULL.
 */
#ifndef SC_MANIFEST_H
#define SC_MANIFEST_H

#include <stdio.h>
#include "api/session.h"

#define MANIFEST_DEFAULT_MAX_BYTES (1024 * 1024)

struct policy;
typedef struct manifest_opts {
  size_t max_bytes;  /* per file; 0 = MANIFEST_DEFAULT_MAX_BYTES */
  /* the tenant policy (api/policy.h) each object must also keep, its
   * refusals reported at their fields like any other error; NULL: none */
  const struct policy *policy;
} manifest_opts;

typedef struct manifest_item {
  session *s;        /* defaults applied, validated */
  char *file;        /* where it came from ("<stdin>" for -) */
  int line;          /* of the document's first key */
} manifest_item;

/* The error of a source without any document (its errors[] line ends
 * with it): sessionctl apply then says how to make an empty store. */
#define MANIFEST_MSG_NO_OBJECTS \
  "no objects (the file is empty, or holds only comments and empty " \
  "documents)"

typedef struct manifest_set {
  manifest_item *items;
  size_t n;
  size_t n_read;     /* objects read, valid or not: each document that is
                        not a List, and each item of a List */
  char **errors;     /* one formatted line each, no trailing newline */
  size_t n_errors;
} manifest_set;

/* Reads and validates; appends to *set (which may already hold items).
 * Returns SC_OK when the source was read, even if documents had errors
 * (see set->n_errors); an error code only when it could not be read at all
 * (that error is also appended to set->errors). */
sc_err manifest_read_path(const char *path, const manifest_opts *opts,
                          manifest_set *set);
/* The same for a buffer; name is used in messages. */
sc_err manifest_read_buffer(const char *name, const char *buf, size_t len,
                            const manifest_opts *opts, manifest_set *set);
void manifest_set_free(manifest_set *set);

/* Validate one session (already defaulted) without a YAML source; each
 * error line is "FIELD.PATH: message". Used for objects built in code and
 * by the stores. Returns SC_ERR_INVALID when any error was found; errors
 * are appended to *errs / *n_errs (free each, then the array). */
/* The environment variables spec.envVars may not set (they change how
 * programs in the sandbox are found or started), NULL-terminated. */
extern const char *const manifest_env_denied[];

sc_err session_validate(const session *s, char ***errs, size_t *n_errs);

/* Why the controller must not act on s, an object read from a store (by
 * the rules of session_validate(), with absent optional fields taken as
 * their defaults and labels and annotations not checked), as one line
 * "FIELD.PATH: message[ (and N more)]" the caller frees; NULL when s is
 * valid. Objects written straight to the API server or the SQLite file
 * bypass sessionctl's checks: this is where they meet them. About 0.3 us
 * an object (30 ms for 100,000 on this machine); a shared session
 * (session_ref) found valid is not checked again. */
char *session_invalid_reason(const session *s);

#endif
