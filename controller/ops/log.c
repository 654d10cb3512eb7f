/* log.c - one line per event, logfmt or JSON. */
#include "controller/ops/log.h"
#include "lib/sctext.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lib/dynbuf.h"
#include "lib/sctime.h"

#define LOG_LINE_MAX (64 * 1024)

struct logger {
  FILE *out;
  log_format fmt;
  log_level min;
  char *static_key;
  char *static_value;
};

static const char *const level_names[] = {"debug", "info", "warn", "error"};

const char *log_level_name(log_level l)
{
  return (unsigned)l < 4 ? level_names[l] : "info";
}

int log_level_parse(const char *s)
{
  int i;
  for(i = 0; s && i < 4; i++)
    if(!strcmp(s, level_names[i]))
      return i;
  if(s && !strcmp(s, "warning"))
    return LOG_WARN;
  return -1;
}

int log_format_parse(const char *s)
{
  if(s && !strcmp(s, "logfmt"))
    return LOG_FORMAT_LOGFMT;
  if(s && !strcmp(s, "json"))
    return LOG_FORMAT_JSON;
  return -1;
}

logger *log_new(FILE *out, log_format fmt, log_level min_level)
{
  logger *lg = calloc(1, sizeof(*lg));
  if(!lg)
    return NULL;
  lg->out = out;
  lg->fmt = fmt;
  lg->min = min_level;
  return lg;
}

void log_free(logger *lg)
{
  if(!lg)
    return;
  free(lg->static_key);
  free(lg->static_value);
  free(lg);
}

sc_err log_set_static(logger *lg, const char *key, const char *value)
{
  char *k = strdup(key), *v = strdup(value);
  if(!k || !v) {
    free(k);
    free(v);
    return SC_ERR_NOMEM;
  }
  free(lg->static_key);
  free(lg->static_value);
  lg->static_key = k;
  lg->static_value = v;
  return SC_OK;
}

bool log_enabled(const logger *lg, log_level lvl)
{
  return lg && lvl >= lg->min;
}

/* A quoted string: '"' and '\\' escaped, newlines as \n, and C0, DEL, C1,
 * bidi controls and bad UTF-8 escaped so that a line stays a line. The
 * formats differ only there: logfmt shows a bad byte as \xNN, JSON (which
 * holds no raw byte) as U+FFFD. */
static void add_quoted(dynbuf *b, const char *v, bool json)
{
  const unsigned char *p, *end = (const unsigned char *)v + strlen(v);
  size_t n;
  unsigned cp;
  dynbuf_add(b, "\"", 1);
  for(p = (const unsigned char *)v; *p; p++) {
    if(*p == '"' || *p == '\\') {
      dynbuf_add(b, "\\", 1);
      dynbuf_add(b, p, 1);
    }
    else if(*p == '\n')
      dynbuf_addstr(b, "\\n");
    else {
      int unsafe;
      n = sc_text_next((const char *)p, (size_t)(end - p), &cp, &unsafe);
      if(!unsafe)
        dynbuf_add(b, p, n);
      else if(json)
        dynbuf_printf(b, "\\u%04x", (cp & 0x100u) ? 0xfffdu : cp);
      else if(cp < 0x80 || (cp & 0x100u))
        dynbuf_printf(b, "\\x%02x", cp & 0xffu);
      else
        dynbuf_printf(b, "\\u%04x", cp);
      p += n - 1;
    }
  }
  dynbuf_add(b, "\"", 1);
}

/* logfmt: quote when the value has a space, '=', '"', or is empty (and
 * when it is not plain ASCII: add_quoted escapes C1 and bidi controls) */
static void add_logfmt_value(dynbuf *b, const char *v)
{
  const unsigned char *p;
  bool quote = !*v;
  for(p = (const unsigned char *)v; *p; p++)
    if(*p <= ' ' || *p == '=' || *p == '"' || *p == '\\' || *p >= 0x7f)
      quote = true;
  if(quote)
    add_quoted(b, v, false);
  else
    dynbuf_addstr(b, v);
}

static void add_json_string(dynbuf *b, const char *v)
{
  add_quoted(b, v, true);
}

static void add_field(const logger *lg, dynbuf *b, bool first, const char *k,
                      const char *v)
{
  if(lg->fmt == LOG_FORMAT_JSON) {
    if(!first)
      dynbuf_add(b, ",", 1);
    add_json_string(b, k);
    dynbuf_add(b, ":", 1);
    add_json_string(b, v ? v : "");
  }
  else {
    if(!first)
      dynbuf_add(b, " ", 1);
    dynbuf_addstr(b, k);
    dynbuf_add(b, "=", 1);
    add_logfmt_value(b, v ? v : "");
  }
}

void log_kv(logger *lg, log_level lvl, const char *msg, ...)
{
  dynbuf b;
  char ts[SCTIME_RFC3339_MAX];
  va_list ap;
  const char *k;

  if(!log_enabled(lg, lvl))
    return;
  dynbuf_init(&b, LOG_LINE_MAX);
  sctime_format_rfc3339(sctime_wall_ms(), ts, sizeof(ts));
  if(lg->fmt == LOG_FORMAT_JSON)
    dynbuf_add(&b, "{", 1);
  add_field(lg, &b, true, "time", ts);
  add_field(lg, &b, false, "level", log_level_name(lvl));
  add_field(lg, &b, false, "msg", msg);
  if(lg->static_key)
    add_field(lg, &b, false, lg->static_key, lg->static_value);
  va_start(ap, msg);
  while((k = va_arg(ap, const char *)) != NULL) {
    const char *v = va_arg(ap, const char *);
    add_field(lg, &b, false, k, v);
  }
  va_end(ap);
  if(lg->fmt == LOG_FORMAT_JSON)
    dynbuf_add(&b, "}", 1);
  dynbuf_add(&b, "\n", 1);
  fwrite(dynbuf_ptr(&b), 1, dynbuf_len(&b), lg->out);
  fflush(lg->out);
  dynbuf_free(&b);
}
