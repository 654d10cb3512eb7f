/*
 * print.h - sessionctl's output: kubectl-style tables, JSON and YAML.
 *
 * Tables follow kubectl's tabwriter (minwidth 6, padding 3, spaces): every
 * column but the last is padded to max(widest cell + 3, 6) display
 * characters. A table remembers its column widths across flushes (as
 * kubectl's RememberWidths), so rows printed later by `get -w` stay aligned
 * with the header; a wider cell widens its column from then on.
 *
 * Ownership: ctl_table_new() returns a table for ctl_table_free() (NULL
 * accepted); cells are copied. Output goes into a caller's dynbuf.
 */
#ifndef SC_CTL_PRINT_H
#define SC_CTL_PRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>
#include "api/session.h"
#include "lib/dynbuf.h"

#define CTL_TABLE_MINWIDTH 6
#define CTL_TABLE_PADDING 3
#define CTL_TABLE_MAXCOLS 16

typedef struct ctl_table ctl_table;

ctl_table *ctl_table_new(size_t ncols);
void ctl_table_free(ctl_table *t);
/* Queue a row of ncols cells (copied; NULL prints as ""). */
sc_err ctl_table_add(ctl_table *t, const char *const *cells);
/* Render the queued rows into out, widening the remembered widths to fit
 * them first, and forget the rows. */
sc_err ctl_table_flush(ctl_table *t, dynbuf *out);
/* Make column col at least as wide as the cell text would need (so a
 * later, wider value does not shift the columns after it). */
void ctl_table_reserve(ctl_table *t, size_t col, const char *text);
/* Display width of a UTF-8 string (code points). */
size_t ctl_display_width(const char *s);

typedef enum ctl_output {
  CTL_OUTPUT_TABLE = 0,
  CTL_OUTPUT_WIDE,
  CTL_OUTPUT_JSON,
  CTL_OUTPUT_YAML,
  CTL_OUTPUT_NAME,
  CTL_OUTPUT_JSONPATH       /* jsonpath=TEMPLATE (jsonpath.h) */
} ctl_output;

/* "wide", "json", "yaml", "name" (and "" for the table); -1 if unknown
 * (jsonpath=TEMPLATE is parsed by the caller, with its template). */
int ctl_output_parse(const char *s);

/* -o name prints RESOURCE.GROUP/NAME, as kubectl does for a custom
 * resource; `get`, `delete`, `describe` and `wake` take that form back. */
#define CTL_NAME_PREFIX "session.lea.io/"

typedef struct ctl_columns {
  bool namespace_;   /* -A: NAMESPACE first (after EVENT) */
  bool wide;         /* ENDAT GENERATION OBSERVED */
  bool event;        /* --output-watch-events: EVENT first */
} ctl_columns;

/* The PHASE cell of a deleted object still held (metadata.deletion-
 * Timestamp set): it waits for the controller to confirm its sandbox
 * gone, and holds its name until then. Display only, never stored. */
#define CTL_PHASE_TERMINATING "Terminating"

/* The number of columns and their header cells (cells must hold
 * CTL_TABLE_MAXCOLS). */
size_t ctl_session_header(const ctl_columns *c, const char **cells);
/* Queue the row of s; event is the EVENT cell (ignored without c->event);
 * now (wall clock, display only) gives AGE. */
sc_err ctl_session_row(ctl_table *t, const ctl_columns *c, const session *s,
                       const char *event, sc_time now);

/* A json-c list object {"apiVersion":"v1","kind":"List","metadata":
 * {"resourceVersion":rev},"items":[...]}; NULL when out of memory. */
json_object *ctl_list_json(session *const *items, size_t n,
                           const char *revision);

/* Append o as indented JSON and a newline. */
sc_err ctl_json_print(json_object *o, dynbuf *out);
/* Append o as compact JSON on one line (and the newline): `get -w -o
 * json` prints one object per line. */
sc_err ctl_json_print_line(json_object *o, dynbuf *out);
/* Append o as one YAML document (block style, libyaml's emitter); strings
 * that YAML would read as another type are quoted. */
sc_err ctl_yaml_print(json_object *o, dynbuf *out);
/* True when the plain scalar s would not read back as the string s
 * (booleans, null, numbers, timestamps, ""). */
bool ctl_yaml_needs_quotes(const char *s);

/* Write out's bytes to stdout and flush; false when stdout is gone
 * (EPIPE, closed). out is reset. */
bool ctl_write_stdout(dynbuf *out);

/* A copy of untrusted text (tags, messages, annotations) safe to show on
 * a terminal: control, C1 and bidi characters escaped (lib/sctext.h);
 * NULL is "". The caller frees; NULL when out of memory. */
char *ctl_text_dup(const char *s);

#endif
