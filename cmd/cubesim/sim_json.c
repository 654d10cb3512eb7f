/* sim_json.c - JSON writer and strict parser (see sim_json.h). */
#include "cmd/cubesim/sim_json.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void sim_jw_init(sim_jw *w, dynbuf *b)
{
  w->b = b;
  w->err = SC_OK;
  w->comma = 0;
  w->depth = 0;
  w->after_key = 0;
}

void sim_jw_raw(sim_jw *w, const char *s, size_t len)
{
  if(!w->err)
    w->err = dynbuf_add(w->b, s, len);
}

/* before a value: a comma unless first at this level or right after a key */
static void pre_value(sim_jw *w)
{
  uint64_t bit = 1ULL << (w->depth & 63);
  if(w->after_key)
    w->after_key = 0;
  else if(w->comma & bit)
    sim_jw_raw(w, ",", 1);
  w->comma |= bit;
}

static void open_level(sim_jw *w, const char *c)
{
  pre_value(w);
  sim_jw_raw(w, c, 1);
  w->depth++;
  w->comma &= ~(1ULL << (w->depth & 63));
}

static void close_level(sim_jw *w, const char *c)
{
  w->depth--;
  w->after_key = 0;
  sim_jw_raw(w, c, 1);
}

void sim_jw_obj_open(sim_jw *w) { open_level(w, "{"); }
void sim_jw_obj_close(sim_jw *w) { close_level(w, "}"); }
void sim_jw_arr_open(sim_jw *w) { open_level(w, "["); }
void sim_jw_arr_close(sim_jw *w) { close_level(w, "]"); }

sc_err sim_json_escape(dynbuf *b, const char *s, size_t n)
{
  static const char hex[] = "0123456789abcdef";
  size_t i, start = 0;
  sc_err err = dynbuf_add(b, "\"", 1);
  for(i = 0; !err && i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char esc[8];
    size_t elen = 0;
    if(c >= 0x20 && c != '"' && c != '\\')
      continue;
    err = dynbuf_add(b, s + start, i - start);
    if(err)
      break;
    switch(c) {
    case '"': memcpy(esc, "\\\"", 2); elen = 2; break;
    case '\\': memcpy(esc, "\\\\", 2); elen = 2; break;
    case '\n': memcpy(esc, "\\n", 2); elen = 2; break;
    case '\r': memcpy(esc, "\\r", 2); elen = 2; break;
    case '\t': memcpy(esc, "\\t", 2); elen = 2; break;
    default:
      memcpy(esc, "\\u00", 4);
      esc[4] = hex[c >> 4];
      esc[5] = hex[c & 15];
      elen = 6;
    }
    err = dynbuf_add(b, esc, elen);
    start = i + 1;
  }
  if(!err)
    err = dynbuf_add(b, s + start, n - start);
  if(!err)
    err = dynbuf_add(b, "\"", 1);
  return err;
}

void sim_jw_key(sim_jw *w, const char *k)
{
  pre_value(w);
  if(!w->err)
    w->err = sim_json_escape(w->b, k, strlen(k));
  sim_jw_raw(w, ":", 1);
  w->after_key = 1;
}

void sim_jw_strn(sim_jw *w, const char *s, size_t n)
{
  pre_value(w);
  if(!w->err)
    w->err = sim_json_escape(w->b, s, n);
}

void sim_jw_str(sim_jw *w, const char *s)
{
  if(!s)
    sim_jw_null(w);
  else
    sim_jw_strn(w, s, strlen(s));
}

void sim_jw_int(sim_jw *w, int64_t v)
{
  char buf[32];
  int n = snprintf(buf, sizeof(buf), "%" PRId64, v);
  pre_value(w);
  sim_jw_raw(w, buf, (size_t)n);
}

void sim_jw_bool(sim_jw *w, int v)
{
  pre_value(w);
  if(v)
    sim_jw_raw(w, "true", 4);
  else
    sim_jw_raw(w, "false", 5);
}

void sim_jw_null(sim_jw *w)
{
  pre_value(w);
  sim_jw_raw(w, "null", 4);
}

void sim_jw_time(sim_jw *w, sc_time t)
{
  char buf[SCTIME_RFC3339_MAX + 2];
  size_t n;
  if(!t) {
    sim_jw_null(w);
    return;
  }
  buf[0] = '"';
  sctime_format_rfc3339(t, buf + 1, SCTIME_RFC3339_MAX);
  n = strlen(buf);
  buf[n++] = '"';
  pre_value(w);
  sim_jw_raw(w, buf, n);
}

void sim_jw_kstr(sim_jw *w, const char *k, const char *s)
{
  sim_jw_key(w, k);
  sim_jw_str(w, s);
}

void sim_jw_kint(sim_jw *w, const char *k, int64_t v)
{
  sim_jw_key(w, k);
  sim_jw_int(w, v);
}

void sim_jw_kbool(sim_jw *w, const char *k, int v)
{
  sim_jw_key(w, k);
  sim_jw_bool(w, v);
}

void sim_jw_ktime(sim_jw *w, const char *k, sc_time t)
{
  sim_jw_key(w, k);
  sim_jw_time(w, t);
}

sc_err sim_json_parse(const char *buf, size_t len, json_object **out,
                      sc_errbuf *eb)
{
  json_tokener *tok;
  json_object *o;
  enum json_tokener_error jerr;
  size_t off;

  *out = NULL;
  if(len > 0x7fffffff)
    return sc_errf(eb, SC_ERR_TOO_LARGE, "request body is too large");
  {
    /* json-c accepts single-quoted strings even when strict: refuse them */
    size_t i;
    int in_str = 0;
    for(i = 0; i < len; i++) {
      char c = buf[i];
      if(in_str) {
        if(c == '\\')
          i++;
        else if(c == '"')
          in_str = 0;
      }
      else if(c == '"')
        in_str = 1;
      else if(c == '\'')
        return sc_errf(eb, SC_ERR_INVALID, "malformed JSON at byte %zu:"
                       " single quotes are not JSON", i);
    }
  }
  tok = json_tokener_new_ex(SIM_JSON_MAX_DEPTH);
  if(!tok)
    return SC_ERR_NOMEM;
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
  o = json_tokener_parse_ex(tok, buf, (int)len);
  jerr = json_tokener_get_error(tok);
  off = json_tokener_get_parse_end(tok);
  json_tokener_free(tok);
  if(jerr == json_tokener_continue) {
    json_object_put(o);
    return sc_errf(eb, SC_ERR_INVALID, "malformed JSON: unexpected end of body");
  }
  if(jerr != json_tokener_success) {
    json_object_put(o);
    if(jerr == json_tokener_error_depth)
      return sc_errf(eb, SC_ERR_INVALID, "malformed JSON: nested deeper than"
                     " %d levels", SIM_JSON_MAX_DEPTH);
    return sc_errf(eb, SC_ERR_INVALID, "malformed JSON at byte %zu: %s", off,
                   json_tokener_error_desc(jerr));
  }
  for(; off < len; off++) {
    char c = buf[off];
    if(c != ' ' && c != '\t' && c != '\r' && c != '\n') {
      json_object_put(o);
      return sc_errf(eb, SC_ERR_INVALID,
                     "malformed JSON: unexpected data at byte %zu", off);
    }
  }
  *out = o;
  return SC_OK;
}

void sim_jw_double(sim_jw *w, double v)
{
  char buf[40];
  int n = snprintf(buf, sizeof(buf), "%.17g", v);
  if(!(v == v) || v > 1e300 || v < -1e300)
    n = snprintf(buf, sizeof(buf), "0");
  pre_value(w);
  sim_jw_raw(w, buf, (size_t)n);
}

void sim_jw_rawval(sim_jw *w, const char *s, size_t len)
{
  pre_value(w);
  sim_jw_raw(w, s, len);
}
