/*
 * sim_audit.h - cubesim's audit trail: one JSON line per mutating call and
 * per lifecycle event, in order, kept in memory (for GET /_sim/audit) and
 * optionally appended to a file.
 *
 * Line: {"seq":N,"at":RFC3339,"source":"api|timer|traffic","event":...,
 *        "method":...,"path":...,"status":N,"sandboxID":...,
 *        "stateBefore":...,"stateAfter":...,"userAgent":...,
 *        "requestId":...,"fault":...}
 * (strings may be null; status is 0 for timer events).
 *
 * Ownership: sim_audit is opaque, sim_audit_free() frees it (NULL ok).
 * Record strings are copied; the caller keeps its own.
 */
#ifndef SIM_AUDIT_H
#define SIM_AUDIT_H

#include <stddef.h>
#include <stdint.h>
#include "lib/dynbuf.h"
#include "lib/sc_err.h"
#include "lib/sctime.h"

typedef struct sim_audit sim_audit;

typedef struct sim_audit_rec {
  sc_time at;
  const char *source;       /* "api", "timer", "traffic" */
  const char *event;        /* "create", "pause-complete", ... */
  const char *method;       /* NULL for timer events */
  const char *path;
  int status;               /* 0 for timer events */
  const char *sandbox_id;   /* NULL when there is none */
  const char *state_before; /* NULL when there was no sandbox */
  const char *state_after;
  const char *user_agent;
  const char *request_id;
  const char *fault;        /* "error", "reset" or NULL */
} sim_audit_rec;

/* path NULL: memory only. The file is opened for append. */
sc_err sim_audit_new(const char *path, size_t mem_cap, sim_audit **out,
                     sc_errbuf *eb);
void sim_audit_free(sim_audit *a);
/* Append one line; returns its seq (1-based), 0 if it could not be kept. */
uint64_t sim_audit_add(sim_audit *a, const sim_audit_rec *r);
/* Lines with seq > since, appended to out. */
sc_err sim_audit_since(const sim_audit *a, uint64_t since, dynbuf *out);
uint64_t sim_audit_last_seq(const sim_audit *a);
/* Lines not kept in memory because the cap was reached. */
uint64_t sim_audit_dropped(const sim_audit *a);
/* Forget the lines in memory and restart seq at 1 (the file keeps them). */
void sim_audit_reset(sim_audit *a);

#endif
