/* print.c - tables, JSON and YAML output for sessionctl. */
#include "cmd/sessionctl/print.h"
#include "lib/sctext.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include "api/session_json.h"

struct ctl_table {
  size_t ncols;
  size_t widths[CTL_TABLE_MAXCOLS];  /* remembered across flushes */
  char **cells;                      /* nrows * ncols */
  size_t nrows;
  size_t alloc;                      /* rows allocated */
};

ctl_table *ctl_table_new(size_t ncols)
{
  ctl_table *t;
  if(!ncols || ncols > CTL_TABLE_MAXCOLS)
    return NULL;
  t = calloc(1, sizeof(*t));
  if(t)
    t->ncols = ncols;
  return t;
}

static void table_clear_rows(ctl_table *t)
{
  size_t i;
  for(i = 0; i < t->nrows * t->ncols; i++)
    free(t->cells[i]);
  t->nrows = 0;
}

void ctl_table_free(ctl_table *t)
{
  if(!t)
    return;
  table_clear_rows(t);
  free(t->cells);
  free(t);
}

char *ctl_text_dup(const char *s)
{
  size_t n = s ? strlen(s) : 0;
  char *o = malloc(n * 6 + 1); /* \uNNNN for 2..3 bytes, \xNN for 1 */
  if(!o)
    return NULL;
  return sc_text_escape(o, n * 6 + 1, s ? s : "");
}

sc_err ctl_table_add(ctl_table *t, const char *const *cells)
{
  size_t c;
  char **row;
  if(t->nrows == t->alloc) {
    size_t na = t->alloc ? t->alloc * 2 : 8;
    char **nc = realloc(t->cells, na * t->ncols * sizeof(*nc));
    if(!nc)
      return SC_ERR_NOMEM;
    t->cells = nc;
    t->alloc = na;
  }
  row = t->cells + t->nrows * t->ncols;
  for(c = 0; c < t->ncols; c++) {
    row[c] = ctl_text_dup(cells[c]); /* a cell is text, never a control */
    if(!row[c]) {
      while(c--)
        free(row[c]);
      return SC_ERR_NOMEM;
    }
  }
  t->nrows++;
  return SC_OK;
}

void ctl_table_reserve(ctl_table *t, size_t col, const char *text)
{
  size_t w = ctl_display_width(text) + CTL_TABLE_PADDING;
  if(col < t->ncols && w > t->widths[col])
    t->widths[col] = w;
}

size_t ctl_display_width(const char *s)
{
  size_t n = 0;
  for(; *s; s++)
    if(((unsigned char)*s & 0xC0) != 0x80)
      n++;
  return n;
}

sc_err ctl_table_flush(ctl_table *t, dynbuf *out)
{
  size_t r, c;
  sc_err err = SC_OK;
  for(r = 0; r < t->nrows; r++)
    for(c = 0; c + 1 < t->ncols; c++) {
      size_t w = ctl_display_width(t->cells[r * t->ncols + c]) +
                 CTL_TABLE_PADDING;
      if(w < CTL_TABLE_MINWIDTH)
        w = CTL_TABLE_MINWIDTH;
      if(w > t->widths[c])
        t->widths[c] = w;
    }
  for(r = 0; r < t->nrows && !err; r++) {
    for(c = 0; c < t->ncols && !err; c++) {
      const char *cell = t->cells[r * t->ncols + c];
      err = dynbuf_addstr(out, cell);
      if(!err && c + 1 < t->ncols) {
        size_t pad = t->widths[c] - ctl_display_width(cell);
        while(pad-- && !err)
          err = dynbuf_add(out, " ", 1);
      }
    }
    if(!err)
      err = dynbuf_add(out, "\n", 1);
  }
  table_clear_rows(t);
  return err;
}

int ctl_output_parse(const char *s)
{
  static const struct {
    const char *name;
    ctl_output out;
  } outs[] = {{"", CTL_OUTPUT_TABLE},  {"wide", CTL_OUTPUT_WIDE},
              {"json", CTL_OUTPUT_JSON}, {"yaml", CTL_OUTPUT_YAML},
              {"name", CTL_OUTPUT_NAME}};
  size_t i;
  for(i = 0; i < sizeof(outs) / sizeof(outs[0]); i++)
    if(!strcmp(s, outs[i].name))
      return (int)outs[i].out;
  return -1;
}

size_t ctl_session_header(const ctl_columns *c, const char **cells)
{
  size_t n = 0;
  if(c->event)
    cells[n++] = "EVENT";
  if(c->namespace_)
    cells[n++] = "NAMESPACE";
  cells[n++] = "NAME";
  cells[n++] = "TENANT";
  cells[n++] = "STATE";
  cells[n++] = "PHASE";
  cells[n++] = "SANDBOX";
  cells[n++] = "AGE";
  if(c->wide) {
    cells[n++] = "ENDAT";
    cells[n++] = "GENERATION";
    cells[n++] = "OBSERVED";
  }
  return n;
}

static const char *or_none(const char *s)
{
  return s && *s ? s : "<none>";
}

sc_err ctl_session_row(ctl_table *t, const ctl_columns *c, const session *s,
                       const char *event, sc_time now)
{
  const char *cells[CTL_TABLE_MAXCOLS];
  char age[32], endat[SCTIME_RFC3339_MAX], gen[24], obs[24];
  size_t n = 0;

  if(s->meta.creation_timestamp)
    sctime_format_age(now - s->meta.creation_timestamp, age, sizeof(age));
  else
    snprintf(age, sizeof(age), "<unknown>");
  if(c->event)
    cells[n++] = event;
  if(c->namespace_)
    cells[n++] = or_none(session_eff_namespace(s));
  cells[n++] = or_none(s->meta.name);
  cells[n++] = or_none(session_eff_tenant_id(s));
  cells[n++] = session_state_name(s->spec.state);
  /* deleted, held until the controller confirms its sandbox gone: what
   * kubectl shows for an object whose finalizer is pending */
  cells[n++] = s->meta.deletion_timestamp
                 ? CTL_PHASE_TERMINATING
                 : or_none(session_phase_name(s->status.phase));
  cells[n++] = or_none(s->status.sandbox_id);
  cells[n++] = age;
  if(c->wide) {
    if(s->status.end_at)
      sctime_format_rfc3339(s->status.end_at, endat, sizeof(endat));
    else
      snprintf(endat, sizeof(endat), "<none>");
    snprintf(gen, sizeof(gen), "%lld", (long long)s->meta.generation);
    if(s->status.observed_generation)
      snprintf(obs, sizeof(obs), "%lld",
               (long long)s->status.observed_generation);
    else
      snprintf(obs, sizeof(obs), "<none>");
    cells[n++] = endat;
    cells[n++] = gen;
    cells[n++] = obs;
  }
  return ctl_table_add(t, cells);
}

json_object *ctl_list_json(session *const *items, size_t n,
                           const char *revision)
{
  json_object *o = json_object_new_object();
  json_object *meta = json_object_new_object();
  json_object *arr = json_object_new_array();
  size_t i;
  if(!o || !meta || !arr)
    goto fail;
  json_object_object_add(o, "apiVersion", json_object_new_string("v1"));
  json_object_object_add(o, "kind", json_object_new_string("List"));
  for(i = 0; i < n; i++) {
    json_object *it = session_to_json_object(items[i]);
    if(!it || json_object_array_add(arr, it)) {
      json_object_put(it);
      goto fail;
    }
  }
  json_object_object_add(o, "items", arr);
  arr = NULL;
  json_object_object_add(meta, "resourceVersion",
                         json_object_new_string(revision ? revision : ""));
  json_object_object_add(o, "metadata", meta);
  return o;
fail:
  json_object_put(arr);
  json_object_put(meta);
  json_object_put(o);
  return NULL;
}

/* o in json-c's format flags, then a newline */
static sc_err json_print_flags(json_object *o, int flags, dynbuf *out)
{
  const char *s = json_object_to_json_string_ext(
    o, flags | JSON_C_TO_STRING_NOSLASHESCAPE);
  sc_err err;
  if(!s)
    return SC_ERR_NOMEM;
  err = dynbuf_addstr(out, s);
  if(!err)
    err = dynbuf_add(out, "\n", 1);
  return err;
}

sc_err ctl_json_print(json_object *o, dynbuf *out)
{
  return json_print_flags(o, JSON_C_TO_STRING_PRETTY |
                          JSON_C_TO_STRING_SPACED, out);
}

sc_err ctl_json_print_line(json_object *o, dynbuf *out)
{
  return json_print_flags(o, JSON_C_TO_STRING_PLAIN, out);
}

/* --- YAML --- */

static bool all_in(const char *s, const char *set)
{
  for(; *s; s++)
    if(!strchr(set, *s))
      return false;
  return true;
}

bool ctl_yaml_needs_quotes(const char *s)
{
  static const char *const words[] = {
    "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "n", "N",
    "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE",
    "on", "On", "ON", "off", "Off", "OFF", NULL};
  size_t i;
  const char *p = s;
  char *end;
  if(!*s)
    return true;
  for(i = 0; words[i]; i++)
    if(!strcmp(s, words[i]))
      return true;
  /* .inf .nan and friends (YAML 1.1/1.2 floats) */
  if(*p == '+' || *p == '-')
    p++;
  if(*p == '.' && (!strcmp(p + 1, "inf") || !strcmp(p + 1, "Inf") ||
                   !strcmp(p + 1, "INF") || !strcmp(s, ".nan") ||
                   !strcmp(s, ".NaN") || !strcmp(s, ".NAN")))
    return true;
  /* anything strtod takes whole: ints, floats, hex, inf, nan */
  errno = 0;
  (void)strtod(s, &end);
  if(end != s && !*end)
    return true;
  /* YAML 1.1 ints with _, sexagesimal 1:30, 0o17, 0b101, timestamps
   * (2026-11-29T10:15:00Z): numeric-looking strings are quoted. */
  if((*p >= '0' && *p <= '9') || (*p == '.' && p[1] >= '0' && p[1] <= '9'))
    if(all_in(p, "0123456789_:.-+eExXoObBabcdfABCDFtTzZ "))
      return true;
  return false;
}

typedef struct yaml_ctx {
  yaml_emitter_t em;
  bool failed;
} yaml_ctx;

static int yaml_write(void *data, unsigned char *buf, size_t size)
{
  return dynbuf_add(data, buf, size) == SC_OK;
}

static int emit(yaml_ctx *y, yaml_event_t *ev)
{
  if(y->failed) {
    yaml_event_delete(ev);
    return 0;
  }
  if(!yaml_emitter_emit(&y->em, ev)) {
    y->failed = true;
    return 0;
  }
  return 1;
}

static int emit_scalar(yaml_ctx *y, const char *s, size_t len, bool quote)
{
  yaml_event_t ev;
  if(!yaml_scalar_event_initialize(&ev, NULL, NULL,
                                   (yaml_char_t *)(uintptr_t)s, (int)len, 1,
                                   1,
                                   quote ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
                                         : YAML_ANY_SCALAR_STYLE)) {
    y->failed = true;
    return 0;
  }
  return emit(y, &ev);
}

static int emit_node(yaml_ctx *y, json_object *o, int depth)
{
  yaml_event_t ev;
  char num[64];
  if(depth > 64) {
    y->failed = true;
    return 0;
  }
  switch(json_object_get_type(o)) {
  case json_type_object:
    if(!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
                                            YAML_BLOCK_MAPPING_STYLE) ||
       !emit(y, &ev))
      return 0;
    {
      json_object_object_foreach(o, key, val) {
        if(!emit_scalar(y, key, strlen(key), ctl_yaml_needs_quotes(key)) ||
           !emit_node(y, val, depth + 1))
          return 0;
      }
    }
    yaml_mapping_end_event_initialize(&ev);
    return emit(y, &ev);
  case json_type_array: {
    size_t i, n = json_object_array_length(o);
    if(!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
                                             YAML_BLOCK_SEQUENCE_STYLE) ||
       !emit(y, &ev))
      return 0;
    for(i = 0; i < n; i++)
      if(!emit_node(y, json_object_array_get_idx(o, i), depth + 1))
        return 0;
    yaml_sequence_end_event_initialize(&ev);
    return emit(y, &ev);
  }
  case json_type_string: {
    const char *s = json_object_get_string(o);
    return emit_scalar(y, s, (size_t)json_object_get_string_len(o),
                       ctl_yaml_needs_quotes(s));
  }
  case json_type_int:
    snprintf(num, sizeof(num), "%lld", (long long)json_object_get_int64(o));
    return emit_scalar(y, num, strlen(num), false);
  case json_type_double:
    snprintf(num, sizeof(num), "%.17g", json_object_get_double(o));
    return emit_scalar(y, num, strlen(num), false);
  case json_type_boolean:
    return emit_scalar(y, json_object_get_boolean(o) ? "true" : "false",
                       json_object_get_boolean(o) ? 4 : 5, false);
  case json_type_null:
  default:
    return emit_scalar(y, "null", 4, false);
  }
}

sc_err ctl_yaml_print(json_object *o, dynbuf *out)
{
  yaml_ctx y;
  yaml_event_t ev;
  memset(&y, 0, sizeof(y));
  if(!yaml_emitter_initialize(&y.em))
    return SC_ERR_NOMEM;
  yaml_emitter_set_output(&y.em, yaml_write, out);
  yaml_emitter_set_unicode(&y.em, 1);
  yaml_emitter_set_width(&y.em, -1);
  yaml_emitter_set_indent(&y.em, 2);
  if(yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING))
    emit(&y, &ev);
  else
    y.failed = true;
  if(!y.failed) {
    if(yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1))
      emit(&y, &ev);
    else
      y.failed = true;
  }
  if(!y.failed)
    emit_node(&y, o, 0);
  if(!y.failed && yaml_document_end_event_initialize(&ev, 1))
    emit(&y, &ev);
  if(!y.failed && yaml_stream_end_event_initialize(&ev))
    emit(&y, &ev);
  if(!y.failed && !yaml_emitter_flush(&y.em))
    y.failed = true;
  yaml_emitter_delete(&y.em);
  return y.failed ? SC_ERR_NOMEM : SC_OK;
}

bool ctl_write_stdout(dynbuf *out)
{
  bool ok = true;
  if(dynbuf_len(out) &&
     fwrite(dynbuf_ptr(out), 1, dynbuf_len(out), stdout) != dynbuf_len(out))
    ok = false;
  if(fflush(stdout) || ferror(stdout))
    ok = false;
  dynbuf_reset(out);
  return ok;
}
