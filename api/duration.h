/*
 * duration.h - durations in the Kubernetes/Go form ("90s", "15m", "1h30m",
 * "1.5h", "500ms", "0"), as milliseconds.
 */
#ifndef SC_DURATION_H
#define SC_DURATION_H

#include <stddef.h>
#include <stdint.h>
#include "lib/sc_err.h"

/* Units h, m, s, ms (and us or "\u00b5s", ns: the total is rounded UP
 * to whole ms, so a non-zero duration never becomes 0). A sign is
 * refused; "0" alone is allowed. SC_ERR_INVALID for anything else;
 * SC_ERR_TOO_LARGE when the value overflows (over about 292 years, as in
 * Go) or rounds up past 9223372036854 ms, the largest whole ms Go's
 * nanoseconds hold (so whatever parses, formatted, parses back). *ms is
 * written only on success. */
sc_err duration_parse(const char *s, int64_t *ms);
/* The shortest exact form: 0 -> "0", 90000 -> "1m30s", 900000 -> "15m",
 * 5400000 -> "1h30m", 1500 -> "1.5s". buf of 32 bytes is enough. */
void duration_format(int64_t ms, char *buf, size_t len);

#endif
