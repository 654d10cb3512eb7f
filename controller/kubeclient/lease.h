/*
 * lease.h - the leader-election state machine over a coordination.k8s.io
 * Lease, as client-go's leaderelection does it, without I/O: the caller
 * reads and writes the Lease and tells this module what happened, passing
 * the monotonic time.
 *
 * Expiry is never judged by comparing the record's renewTime with the
 * local wall clock (another machine's clock): a replica notes the local
 * monotonic time at which it last saw the record change (observed), and
 * the holder's lease counts as expired once leaseDurationSeconds passed on
 * that local clock without a change. The wall clock only fills the
 * record's informational acquireTime/renewTime.
 *
 * A leader that cannot renew (GET or write fails, conflicts) for
 * renew_deadline_ms since its last successful renewal stops being leader;
 * one that finds another holder's valid record stops at once.
 *
 * Ownership: lease_elector_new() copies identity; lease_elector_free()
 * accepts NULL. lease_record is plain data (fixed-size strings).
 */
#ifndef SC_LEASE_H
#define SC_LEASE_H

#include <stdbool.h>
#include <stdint.h>
#include "lib/sctime.h"

#define LEASE_HOLDER_MAX 256
#define LEASE_TIME_MAX 48

typedef struct lease_record {
  char holder[LEASE_HOLDER_MAX];     /* "" = nobody */
  int64_t duration_s;                /* leaseDurationSeconds */
  char acquire_time[LEASE_TIME_MAX]; /* informational, as read */
  char renew_time[LEASE_TIME_MAX];   /* informational, as read */
  int64_t transitions;               /* leaseTransitions */
} lease_record;

typedef struct lease_opts {
  const char *identity;      /* this replica's holderIdentity */
  int64_t duration_ms;       /* 15000 */
  int64_t renew_deadline_ms; /* 10000 */
  int64_t retry_ms;          /* 2000 */
} lease_opts;

typedef struct lease_elector lease_elector;

typedef enum lease_decision {
  LEASE_WAIT,     /* another holder's lease is valid: try later */
  LEASE_CREATE,   /* no Lease: create it with *out */
  LEASE_UPDATE    /* take or renew: write *out with the read version */
} lease_decision;

lease_elector *lease_elector_new(const lease_opts *o);
void lease_elector_free(lease_elector *e);

/* After a read: found=false when the Lease does not exist (404), else
 * *cur is what was read. Fills *out with the record to write for CREATE
 * and UPDATE. A leader that finds a valid record of another holder stops
 * being leader here. now_wall only fills renewTime/acquireTime. */
lease_decision lease_decide(lease_elector *e, bool found,
                            const lease_record *cur, int64_t now_mono,
                            sc_time now_wall, lease_record *out);

/* The write of *rec (from lease_decide) succeeded: leader from now. */
void lease_written(lease_elector *e, const lease_record *rec,
                   int64_t now_mono);

/* A read or write failed (transport error, 409, 5xx ...). */
void lease_failed(lease_elector *e, int64_t now_mono);

/* The periodic check: a leader past its renew deadline steps down.
 * Returns lease_is_leader(). */
bool lease_check(lease_elector *e, int64_t now_mono);

bool lease_is_leader(const lease_elector *e);

/* The record that gives the lease up (holder "", leaseDurationSeconds 1)
 * and stops being leader; false (nothing to write) when not leader. */
bool lease_release(lease_elector *e, sc_time now_wall, lease_record *out);

/* How long until the holder seen (by the local clock) expires: <= 0 when
 * expired or nobody holds it; for logs and tests. */
int64_t lease_remaining_ms(const lease_elector *e, int64_t now_mono);

/* Format a wall time as a Kubernetes MicroTime
 * ("2026-11-29T10:15:00.123000Z"). */
void lease_format_microtime(sc_time t, char *buf, size_t len);

#endif
