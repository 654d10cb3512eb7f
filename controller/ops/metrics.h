/*
 * metrics.h - a small Prometheus registry: counters, gauges and histograms
 * with labels, rendered in the text exposition format (version 0.0.4).
 *
 * Families are declared once (name, type, help); series are created on
 * first use. Labels are given pre-rendered as `a="x",b="y"` (use
 * metrics_label_escape() for values; never session or sandbox IDs: the
 * label sets must stay small).
 * Ownership: metrics_new() -> metrics_free() (NULL accepted). Strings are
 * copied.
 */
#ifndef SC_METRICS_H
#define SC_METRICS_H

#include <stddef.h>
#include "lib/dynbuf.h"

typedef enum metric_type {
  METRIC_COUNTER,
  METRIC_GAUGE,
  METRIC_HISTOGRAM
} metric_type;

typedef struct metrics metrics;

metrics *metrics_new(void);
void metrics_free(metrics *m);

/* buckets: upper bounds, ascending, for histograms (copied); else NULL. */
sc_err metrics_declare(metrics *m, const char *name, metric_type type,
                       const char *help, const double *buckets,
                       size_t n_buckets);
/* labels may be NULL or "" for none. Unknown families are ignored. */
void metrics_add(metrics *m, const char *name, const char *labels, double v);
void metrics_set(metrics *m, const char *name, const char *labels, double v);
void metrics_observe(metrics *m, const char *name, const char *labels,
                     double v);
/* Reset every series of a gauge family (before re-setting them all). */
void metrics_reset_family(metrics *m, const char *name);
/* The current value of a counter or gauge series (0 if absent). */
double metrics_get(const metrics *m, const char *name, const char *labels);

sc_err metrics_render(const metrics *m, dynbuf *out);

/* Escape a label value (\\, \", \n) into buf. */
void metrics_label_escape(const char *v, char *buf, size_t len);

#endif
