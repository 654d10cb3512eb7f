/*
 * audit.h - the audit trail of destructive actions (rule 10 of docs/architecture.md):
 * one JSON line per delete/pause attempt with the facts behind it and
 * Cube's answer, to the log and to --audit-log FILE when set.
 *
 * A line that cannot be written to the file (a full disk, a read-only
 * file system) is never lost silently: audit_record() returns the error,
 * logs it at ERROR, counts it in session_controller_audit_write_failures_
 * total (once audit_set_metrics() is called) and audit_failing() says why
 * until a later line is written or the file is reopened; /readyz reports
 * it. audit_reopen() opens the path again (SIGHUP, after logrotate moved
 * the file): on failure the old file stays in use.
 *
 * Ownership: audit_open() -> audit_close() (NULL accepted); the logger and
 * the metrics are borrowed. Strings in an audit_entry are only read.
 */
#ifndef SC_AUDIT_H
#define SC_AUDIT_H

#include <stdbool.h>
#include "lib/sctime.h"
#include "controller/ops/log.h"
#include "controller/ops/metrics.h"

typedef struct audit audit;

typedef struct audit_entry {
  const char *replica;
  const char *session;       /* "ns/name", NULL for orphans */
  const char *sandbox_id;
  const char *action;        /* "delete", "pause" */
  const char *kind;          /* "reclaim", "capacity", "orphan", ... */
  const char *budget;        /* kind capacity: the budget that forced it */
  const char *reason;        /* the planner's one-line why */
  const char *observed_state;/* what the confirming GET saw */
  const char *tenant;        /* the tenant tag seen */
  sc_time cube_now;
  sc_time end_at;
  int http_status;           /* Cube's answer; 0 = not called */
  const char *outcome;       /* "done", "skipped", "failed", "dry-run" */
  const char *message;       /* Cube's message or why skipped */
} audit_entry;

/* path may be NULL (log only). The file is opened for append, 0600. */
sc_err audit_open(const char *path, logger *lg, audit **out, sc_errbuf *eb);
void audit_close(audit *a);
/* Declares and then counts the write failures in m (NULL: none). */
sc_err audit_set_metrics(audit *a, metrics *m);
/* SC_OK, or SC_ERR_IO when the line could not be written to the file
 * (it was still logged). NULL a: SC_OK. */
sc_err audit_record(audit *a, const audit_entry *e);
/* Reopen the path (no path: SC_OK). SC_ERR_IO with eb: the old file
 * stays. */
sc_err audit_reopen(audit *a, sc_errbuf *eb);
/* Why the last line could not be written, or NULL. */
const char *audit_failing(const audit *a);

#endif
