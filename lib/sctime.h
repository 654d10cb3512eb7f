/*
 * sctime.h - time values and their text forms.
 *
 * All points in time are sc_time: milliseconds since the Unix epoch, UTC.
 * 0 means "unset". Intervals are int64 milliseconds too.
 *
 * Rule 1 of the reconcile pass: no local wall clock in any decision. The
 * wall clock (sctime_wall_ms) is only for record-keeping fields such as
 * creationTimestamp and log lines; the monotonic clock (sctime_mono_ms)
 * only schedules (timers, backoff). Decisions use Cube's clock.
 */
#ifndef SC_SCTIME_H
#define SC_SCTIME_H

#include <stddef.h>
#include <stdint.h>
#include "lib/sc_err.h"

typedef int64_t sc_time;

#define SCTIME_RFC3339_MAX 40

/* Monotonic milliseconds (CLOCK_MONOTONIC); for intervals only. */
int64_t sctime_mono_ms(void);
/* Wall-clock milliseconds since the epoch; for records and logs only. */
sc_time sctime_wall_ms(void);

/* Format t as RFC 3339 UTC: "2026-11-29T10:15:00Z", with ".123" when the
 * milliseconds are not zero. buf must hold SCTIME_RFC3339_MAX bytes. */
void sctime_format_rfc3339(sc_time t, char *buf, size_t len);

/* Parse RFC 3339 (any offset, fraction of any length, truncated to ms).
 * SC_ERR_INVALID on anything else. */
sc_err sctime_parse_rfc3339(const char *s, sc_time *out);

/* Parse an HTTP date (IMF-fixdate, RFC 7231 7.1.1.1). */
sc_err sctime_parse_http_date(const char *s, sc_time *out);
/* Format an HTTP date: "Sun, 29 Nov 2026 10:15:00 GMT" (30 bytes). */
void sctime_format_http_date(sc_time t, char *buf, size_t len);

/* kubectl's human duration for AGE columns: "5s", "12m", "3h4m", "2d3h",
 * "45d", "3y20d". d <= 0 prints "0s". */
void sctime_format_age(int64_t d_ms, char *buf, size_t len);

#endif
