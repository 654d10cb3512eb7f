/*
 * get.h - the state of one `sessionctl get sessions` run, shared by the
 * one-shot listing (cmd_get.c) and the watch (watch.c).
 *
 * Ownership: ctl_get_init() fills a caller's struct; ctl_get_cleanup()
 * frees what it holds, the jsonpath template too (not names, which point
 * into argv).
 */
#ifndef SC_CTL_GET_H
#define SC_CTL_GET_H

#include <stdbool.h>
#include <stddef.h>
#include "api/session.h"
#include "lib/dynbuf.h"
#include "cmd/sessionctl/ctl.h"
#include "cmd/sessionctl/print.h"

#define CTL_GET_OUT_CAP (64u * 1024 * 1024)

typedef struct ctl_get {
  const char *ns;              /* NULL with -A */
  ctl_output output;
  bool watch;                  /* -w */
  bool watch_events;           /* --output-watch-events */
  const char **names;          /* NAME arguments (into argv) */
  size_t n_names;
  struct ctl_jsonpath *jsonpath; /* -o jsonpath=TEMPLATE (owned) */
  ctl_columns cols;
  ctl_table *table;            /* table outputs only */
  bool header_done;
  size_t n_docs;               /* documents printed (yaml separators) */
  dynbuf out;                  /* pending output */
} ctl_get;

/* Set up the columns and table for g->output etc.; SC_ERR_NOMEM. */
sc_err ctl_get_init(ctl_get *g);
void ctl_get_cleanup(ctl_get *g);
/* True when s is in g's namespace and, if names were given, one of them. */
bool ctl_get_matches(const ctl_get *g, const session *s);
/* Queue one object as a watch prints it: a table row (EVENT = event when
 * --output-watch-events), a JSON line, a YAML document, the jsonpath
 * template's output or a session.lea.io/NAME line. */
sc_err ctl_get_emit(ctl_get *g, const session *s, const char *event);
/* Write what is queued to stdout; false when stdout is gone. */
bool ctl_get_flush(ctl_get *g);

/* Run the watch (store opened by it); returns the exit status. */
int ctl_get_watch(ctl_env *env, ctl_get *g);

#endif
