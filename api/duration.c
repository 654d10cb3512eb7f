/*
 * duration.c - Go/Kubernetes durations ("1h30m", "1.5s", "500ms") as ms.
 *
 * The parser follows Go's time.ParseDuration: a sequence of decimal numbers
 * (optional fraction) each with a unit, no spaces. It works in nanoseconds
 * like Go (so the same strings overflow) and then rounds UP to whole
 * milliseconds, so a non-zero duration never reads as 0 (which would mean
 * "never" for reclaimAfter). A sign is refused: durations here are never
 * negative.
 */
#include "api/duration.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define DUR_MAX_NS ((uint64_t)INT64_MAX)

static const struct {
  const char *name;
  uint64_t ns;
} units[] = {
  {"ns", 1ULL},
  {"us", 1000ULL},
  {"\xc2\xb5s", 1000ULL}, /* U+00B5 micro sign */
  {"\xce\xbcs", 1000ULL}, /* U+03BC greek mu */
  {"ms", 1000000ULL},
  {"s", 1000000000ULL},
  {"m", 60ULL * 1000000000ULL},
  {"h", 3600ULL * 1000000000ULL},
};

static bool is_digit(char c)
{
  return c >= '0' && c <= '9';
}

sc_err duration_parse(const char *s, int64_t *ms)
{
  uint64_t total = 0;

  if(!s || !*s)
    return SC_ERR_INVALID;
  if(!strcmp(s, "0")) {
    *ms = 0;
    return SC_OK;
  }
  while(*s) {
    uint64_t v = 0, f = 0, unit = 0;
    double scale = 1;
    bool pre = false, post = false, over = false;
    const char *u;
    size_t ulen, i;

    if(*s != '.' && !is_digit(*s))
      return SC_ERR_INVALID;
    /* integer part */
    while(is_digit(*s)) {
      uint64_t d = (uint64_t)(*s - '0');
      if(v > (DUR_MAX_NS - d) / 10)
        over = true;
      else
        v = v * 10 + d;
      s++;
      pre = true;
    }
    if(over)
      return SC_ERR_TOO_LARGE;
    /* fraction: digits past what fits are dropped, as in Go */
    if(*s == '.') {
      bool fover = false;
      s++;
      while(is_digit(*s)) {
        uint64_t d = (uint64_t)(*s - '0');
        if(!fover) {
          if(f > (DUR_MAX_NS - d) / 10)
            fover = true;
          else {
            f = f * 10 + d;
            scale *= 10;
          }
        }
        s++;
        post = true;
      }
    }
    if(!pre && !post)
      return SC_ERR_INVALID;
    /* unit */
    u = s;
    while(*s && *s != '.' && !is_digit(*s))
      s++;
    ulen = (size_t)(s - u);
    if(!ulen)
      return SC_ERR_INVALID; /* a number without a unit */
    for(i = 0; i < sizeof(units) / sizeof(units[0]); i++)
      if(strlen(units[i].name) == ulen && !memcmp(units[i].name, u, ulen)) {
        unit = units[i].ns;
        break;
      }
    if(!unit)
      return SC_ERR_INVALID;
    if(v > DUR_MAX_NS / unit)
      return SC_ERR_TOO_LARGE;
    v *= unit;
    if(f) {
      double add = (double)f * ((double)unit / scale);
      if(add >= (double)DUR_MAX_NS)
        return SC_ERR_TOO_LARGE;
      v += (uint64_t)add;
      if(v > DUR_MAX_NS)
        return SC_ERR_TOO_LARGE;
    }
    if(v > DUR_MAX_NS - total)
      return SC_ERR_TOO_LARGE;
    total += v;
  }
  /* round up to whole milliseconds; a sum that rounds up past the
   * largest whole millisecond Go can hold ("9223372036854775807ns") is
   * too large as well: its ms would not parse back once written out */
  if(total > DUR_MAX_NS / 1000000ULL * 1000000ULL)
    return SC_ERR_TOO_LARGE;
  *ms = (int64_t)(total / 1000000ULL + (total % 1000000ULL ? 1 : 0));
  return SC_OK;
}

void duration_format(int64_t ms, char *buf, size_t len)
{
  uint64_t u, h, m, sec, frac;
  size_t off = 0;
  int n;

  if(!buf || !len)
    return;
  if(ms == 0) {
    snprintf(buf, len, "0");
    return;
  }
  if(ms < 0) {
    u = (uint64_t)(-(ms + 1)) + 1; /* safe for INT64_MIN */
    n = snprintf(buf, len, "-");
    off = n > 0 ? (size_t)n : 0;
  }
  else
    u = (uint64_t)ms;
#define PUT(...)                                                            \
  do {                                                                      \
    if(off < len) {                                                         \
      n = snprintf(buf + off, len - off, __VA_ARGS__);                      \
      if(n > 0)                                                             \
        off += (size_t)n;                                                   \
    }                                                                       \
  } while(0)
  if(u < 1000) {
    PUT("%llums", (unsigned long long)u);
    return;
  }
  h = u / 3600000ULL;
  m = (u / 60000ULL) % 60;
  sec = (u / 1000ULL) % 60;
  frac = u % 1000ULL;
  if(h)
    PUT("%lluh", (unsigned long long)h);
  if(m)
    PUT("%llum", (unsigned long long)m);
  if(sec || frac) {
    PUT("%llu", (unsigned long long)sec);
    if(frac) {
      char f[4];
      int k = 2;
      snprintf(f, sizeof(f), "%03llu", (unsigned long long)frac);
      while(k > 0 && f[k] == '0')
        f[k--] = '\0';
      PUT(".%s", f);
    }
    PUT("s");
  }
#undef PUT
}
