/* metrics.c - Prometheus text exposition of counters, gauges, histograms. */
#include "controller/ops/metrics.h"
#include "lib/scarray.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct series {
  char *labels;
  double value;          /* counter / gauge; histogram sum */
  double *counts;        /* histogram: per bucket (non-cumulative) */
  double count;          /* histogram: total */
} series;

typedef struct family {
  char *name;
  char *help;
  metric_type type;
  double *buckets;
  size_t n_buckets;
  series *s;
  size_t n_s, a_s;
} family;

struct metrics {
  family *f;
  size_t n_f, a_f;
};

metrics *metrics_new(void)
{
  return calloc(1, sizeof(metrics));
}

void metrics_free(metrics *m)
{
  size_t i, j;
  if(!m)
    return;
  for(i = 0; i < m->n_f; i++) {
    family *f = &m->f[i];
    for(j = 0; j < f->n_s; j++) {
      free(f->s[j].labels);
      free(f->s[j].counts);
    }
    free(f->s);
    free(f->name);
    free(f->help);
    free(f->buckets);
  }
  free(m->f);
  free(m);
}

sc_err metrics_declare(metrics *m, const char *name, metric_type type,
                       const char *help, const double *buckets,
                       size_t n_buckets)
{
  family *f;
  f = sc_grow(m->f, &m->a_f, m->n_f + 1, sizeof(*f));
  if(!f)
    return SC_ERR_NOMEM;
  m->f = f;
  f = &m->f[m->n_f];
  memset(f, 0, sizeof(*f));
  f->name = strdup(name);
  f->help = strdup(help);
  f->type = type;
  if(type == METRIC_HISTOGRAM && n_buckets) {
    f->buckets = malloc(n_buckets * sizeof(double));
    if(f->buckets)
      memcpy(f->buckets, buckets, n_buckets * sizeof(double));
    f->n_buckets = n_buckets;
  }
  if(!f->name || !f->help || (f->n_buckets && !f->buckets)) {
    free(f->name);
    free(f->help);
    free(f->buckets);
    return SC_ERR_NOMEM;
  }
  m->n_f++;
  return SC_OK;
}

static family *find_family(const metrics *m, const char *name)
{
  size_t i;
  for(i = 0; m && i < m->n_f; i++)
    if(!strcmp(m->f[i].name, name))
      return &m->f[i];
  return NULL;
}

static series *find_series(family *f, const char *labels, int create)
{
  size_t i;
  series *s;
  if(!labels)
    labels = "";
  for(i = 0; i < f->n_s; i++)
    if(!strcmp(f->s[i].labels, labels))
      return &f->s[i];
  if(!create)
    return NULL;
  s = sc_grow(f->s, &f->a_s, f->n_s + 1, sizeof(*s));
  if(!s)
    return NULL;
  f->s = s;
  s = &f->s[f->n_s];
  memset(s, 0, sizeof(*s));
  s->labels = strdup(labels);
  if(f->type == METRIC_HISTOGRAM)
    s->counts = calloc(f->n_buckets + 1, sizeof(double));
  if(!s->labels || (f->type == METRIC_HISTOGRAM && !s->counts)) {
    free(s->labels);
    free(s->counts);
    return NULL;
  }
  f->n_s++;
  return s;
}

/* the series of a counter or gauge (made on first use), or NULL */
static series *scalar(metrics *m, const char *name, const char *labels)
{
  family *f = find_family(m, name);
  if(!f || f->type == METRIC_HISTOGRAM)
    return NULL;
  return find_series(f, labels, 1);
}

void metrics_add(metrics *m, const char *name, const char *labels, double v)
{
  series *s = scalar(m, name, labels);
  if(s)
    s->value += v;
}

void metrics_set(metrics *m, const char *name, const char *labels, double v)
{
  series *s = scalar(m, name, labels);
  if(s)
    s->value = v;
}

void metrics_observe(metrics *m, const char *name, const char *labels,
                     double v)
{
  family *f = find_family(m, name);
  series *s;
  size_t i;
  if(!f || f->type != METRIC_HISTOGRAM)
    return;
  s = find_series(f, labels, 1);
  if(!s)
    return;
  for(i = 0; i < f->n_buckets && v > f->buckets[i]; i++)
    ;
  s->counts[i] += 1;
  s->count += 1;
  s->value += v;
}

void metrics_reset_family(metrics *m, const char *name)
{
  family *f = find_family(m, name);
  size_t i;
  if(!f)
    return;
  for(i = 0; i < f->n_s; i++)
    f->s[i].value = 0;
}

double metrics_get(const metrics *m, const char *name, const char *labels)
{
  family *f = find_family(m, name);
  series *s;
  if(!f)
    return 0;
  s = find_series(f, labels, 0);
  return s ? s->value : 0;
}

static void fmt_num(char *buf, size_t len, double v)
{
  if(isinf(v))
    snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
  else if(v == (double)(long long)v && fabs(v) < 1e15)
    snprintf(buf, len, "%lld", (long long)v);
  else
    snprintf(buf, len, "%.9g", v);
}

static void series_name(dynbuf *out, const char *name, const char *suffix,
                        const char *labels, const char *extra)
{
  int has = labels && *labels;
  dynbuf_printf(out, "%s%s", name, suffix);
  if(has || extra) {
    dynbuf_addstr(out, "{");
    if(has)
      dynbuf_addstr(out, labels);
    if(has && extra)
      dynbuf_addstr(out, ",");
    if(extra)
      dynbuf_addstr(out, extra);
    dynbuf_addstr(out, "}");
  }
}

static int cmp_series(const void *a, const void *b)
{
  return strcmp(((const series *)a)->labels, ((const series *)b)->labels);
}

sc_err metrics_render(const metrics *m, dynbuf *out)
{
  size_t i, j, k;
  char num[64], le[96];
  static const char *const types[] = {"counter", "gauge", "histogram"};
  for(i = 0; i < m->n_f; i++) {
    family *f = &m->f[i];
    if(f->n_s > 1) /* qsort(NULL, 0, ...) is undefined */
      qsort(f->s, f->n_s, sizeof(series), cmp_series);
    dynbuf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help,
                  f->name, types[f->type]);
    if(f->type != METRIC_HISTOGRAM && !f->n_s &&
       f->type == METRIC_COUNTER) {
      /* unlabelled counters exist from the start */
      dynbuf_printf(out, "%s 0\n", f->name);
    }
    for(j = 0; j < f->n_s; j++) {
      series *s = &f->s[j];
      if(f->type != METRIC_HISTOGRAM) {
        series_name(out, f->name, "", s->labels, NULL);
        fmt_num(num, sizeof(num), s->value);
        dynbuf_printf(out, " %s\n", num);
        continue;
      }
      {
        double cum = 0;
        for(k = 0; k <= f->n_buckets; k++) {
          cum += s->counts[k];
          if(k < f->n_buckets) {
            fmt_num(num, sizeof(num), f->buckets[k]);
            snprintf(le, sizeof(le), "le=\"%s\"", num);
          }
          else
            snprintf(le, sizeof(le), "le=\"+Inf\"");
          series_name(out, f->name, "_bucket", s->labels, le);
          fmt_num(num, sizeof(num), cum);
          dynbuf_printf(out, " %s\n", num);
        }
        series_name(out, f->name, "_sum", s->labels, NULL);
        fmt_num(num, sizeof(num), s->value);
        dynbuf_printf(out, " %s\n", num);
        series_name(out, f->name, "_count", s->labels, NULL);
        fmt_num(num, sizeof(num), s->count);
        if(dynbuf_printf(out, " %s\n", num))
          return SC_ERR_TOO_LARGE;
      }
    }
  }
  return SC_OK;
}

void metrics_label_escape(const char *v, char *buf, size_t len)
{
  size_t o = 0;
  if(!len)
    return;
  for(; *v && o + 2 < len; v++) {
    if(*v == '\\' || *v == '"') {
      buf[o++] = '\\';
      buf[o++] = *v;
    }
    else if(*v == '\n') {
      buf[o++] = '\\';
      buf[o++] = 'n';
    }
    else
      buf[o++] = *v;
  }
  buf[o] = '\0';
}
