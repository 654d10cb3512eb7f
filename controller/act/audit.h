/*
 * audit.h - the audit trail of destructive actions (rule 10 of docs/architecture.md):
 * one JSON line per delete/pause attempt with the facts behind it and
 * Cube's answer, to the log and to --audit-log FILE when set.
 *
 * Ownership: audit_open() -> audit_close() (NULL accepted); the logger is
 * borrowed. Strings in an audit_entry are only read.
 */
#ifndef SC_AUDIT_H
#define SC_AUDIT_H

#include <stdbool.h>
#include "lib/sctime.h"
#include "controller/ops/log.h"

typedef struct audit audit;

typedef struct audit_entry {
  const char *replica;
  const char *session;       /* "ns/name", NULL for orphans */
  const char *sandbox_id;
  const char *action;        /* "delete", "pause" */
  const char *kind;          /* "reclaim", "orphan", ... */
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
void audit_record(audit *a, const audit_entry *e);

#endif
