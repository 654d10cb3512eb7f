/*
 * fieldpath.h - field paths and quoted values for one-line error messages.
 *
 * Paths read as in kubectl: "spec.idleTimeout", "items[2].spec.state",
 * and map keys that are not plain identifiers in brackets:
 * metadata.labels["app.kubernetes.io/name"]. Values are quoted with
 * control and non-ASCII bytes escaped, and cut at a length, so that a
 * message always stays on one printable line.
 *
 * Ownership: the caller owns every buffer; output is always NUL-terminated
 * (truncated to fit).
 */
#ifndef SC_FIELDPATH_H
#define SC_FIELDPATH_H

#include <stddef.h>

#define FIELDPATH_MAX 256
#define FIELDPATH_QUOTE_MAX 96 /* a quoted value in messages */

/* parent + "." + key (or just key when parent is ""), or parent["key"]. */
void fieldpath_key(char *out, size_t len, const char *parent,
                   const char *key);
/* parent + "[i]" */
void fieldpath_index(char *out, size_t len, const char *parent, size_t i);
/* "value" with \" \\ \n \r \t \xNN escapes; longer values end in "...".
 * s need not be NUL-terminated (slen bytes). out should hold
 * FIELDPATH_QUOTE_MAX bytes. */
void fieldpath_quote(char *out, size_t len, const char *s, size_t slen);

#endif
