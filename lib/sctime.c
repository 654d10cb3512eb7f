#include "lib/sctime.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t sctime_mono_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

sc_time sctime_wall_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* days since 1970-01-01 of a civil date (Howard Hinnant's algorithm) */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
  int64_t era;
  unsigned yoe, doy, doe;
  y -= m <= 2;
  era = (y >= 0 ? y : y - 399) / 400;
  yoe = (unsigned)(y - era * 400);
  doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
  int64_t era;
  unsigned doe, yoe, doy, mp;
  z += 719468;
  era = (z >= 0 ? z : z - 146096) / 146097;
  doe = (unsigned)(z - era * 146097);
  yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  *y = (int64_t)yoe + era * 400;
  doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y += *m <= 2;
}

static void split(sc_time t, int64_t *y, unsigned *mo, unsigned *d,
                  unsigned *h, unsigned *mi, unsigned *s, unsigned *ms)
{
  int64_t secs = t >= 0 ? t / 1000 : (t - 999) / 1000;
  int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
  int64_t rem = secs - days * 86400;
  *ms = (unsigned)(t - secs * 1000);
  civil_from_days(days, y, mo, d);
  *h = (unsigned)(rem / 3600);
  *mi = (unsigned)(rem % 3600 / 60);
  *s = (unsigned)(rem % 60);
}

void sctime_format_rfc3339(sc_time t, char *buf, size_t len)
{
  int64_t y;
  unsigned mo, d, h, mi, s, ms;
  split(t, &y, &mo, &d, &h, &mi, &s, &ms);
  if(ms)
    snprintf(buf, len, "%04lld-%02u-%02uT%02u:%02u:%02u.%03uZ",
             (long long)y, mo, d, h, mi, s, ms);
  else
    snprintf(buf, len, "%04lld-%02u-%02uT%02u:%02u:%02uZ",
             (long long)y, mo, d, h, mi, s);
}

static int digits(const char **p, int n, unsigned *out)
{
  unsigned v = 0;
  int i;
  for(i = 0; i < n; i++) {
    char c = (*p)[i];
    if(c < '0' || c > '9')
      return -1;
    v = v * 10 + (unsigned)(c - '0');
  }
  *p += n;
  *out = v;
  return 0;
}

static const unsigned mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31,
                                   30, 31};

sc_err sctime_parse_rfc3339(const char *s, sc_time *out)
{
  unsigned y, mo, d, h, mi, sec, ms = 0, oh, om;
  int64_t t, off = 0;
  const char *p = s;

  if(!s)
    return SC_ERR_INVALID;
  if(digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) ||
     *p++ != '-' || digits(&p, 2, &d))
    return SC_ERR_INVALID;
  if(*p != 'T' && *p != 't' && *p != ' ')
    return SC_ERR_INVALID;
  p++;
  if(digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) ||
     *p++ != ':' || digits(&p, 2, &sec))
    return SC_ERR_INVALID;
  if(mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 ||
     mi > 59 || sec > 60)
    return SC_ERR_INVALID;
  if(mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
    return SC_ERR_INVALID;
  if(sec == 60)
    sec = 59; /* a leap second reads as the second before it */
  if(*p == '.') {
    int n = 0;
    p++;
    if(*p < '0' || *p > '9')
      return SC_ERR_INVALID;
    while(*p >= '0' && *p <= '9') {
      if(n < 3)
        ms = ms * 10 + (unsigned)(*p - '0');
      n++;
      p++;
    }
    while(n < 3) {
      ms *= 10;
      n++;
    }
  }
  if(*p == 'Z' || *p == 'z') {
    p++;
  }
  else if(*p == '+' || *p == '-') {
    int neg = *p == '-';
    p++;
    if(digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || oh > 23 ||
       om > 59)
      return SC_ERR_INVALID;
    off = (int64_t)(oh * 60 + om) * 60;
    if(neg)
      off = -off;
  }
  else
    return SC_ERR_INVALID;
  if(*p)
    return SC_ERR_INVALID;
  t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off;
  *out = t * 1000 + ms;
  return SC_OK;
}

static const char *const wdays[7] = {"Thu", "Fri", "Sat", "Sun",
                                     "Mon", "Tue", "Wed"};
static const char *const months[12] = {"Jan", "Feb", "Mar", "Apr",
                                       "May", "Jun", "Jul", "Aug",
                                       "Sep", "Oct", "Nov", "Dec"};

void sctime_format_http_date(sc_time t, char *buf, size_t len)
{
  int64_t y;
  unsigned mo, d, h, mi, s, ms;
  int64_t days;
  int64_t secs = t >= 0 ? t / 1000 : (t - 999) / 1000;
  days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
  split(t, &y, &mo, &d, &h, &mi, &s, &ms);
  snprintf(buf, len, "%s, %02u %s %04lld %02u:%02u:%02u GMT",
           wdays[((days % 7) + 7) % 7], d, months[mo - 1], (long long)y, h,
           mi, s);
}

sc_err sctime_parse_http_date(const char *s, sc_time *out)
{
  unsigned d, y, h, mi, sec;
  int mo = -1, i;
  const char *p = s;
  if(!s || strlen(s) < 29)
    return SC_ERR_INVALID;
  /* "Sun, 29 Nov 2026 10:15:00 GMT" */
  p += 5;
  if(s[3] != ',' || s[4] != ' ')
    return SC_ERR_INVALID;
  if(digits(&p, 2, &d) || *p++ != ' ')
    return SC_ERR_INVALID;
  for(i = 0; i < 12; i++)
    if(!strncmp(p, months[i], 3))
      mo = i + 1;
  if(mo < 0)
    return SC_ERR_INVALID;
  p += 3;
  if(*p++ != ' ' || digits(&p, 4, &y) || *p++ != ' ' || digits(&p, 2, &h) ||
     *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':' ||
     digits(&p, 2, &sec) || strcmp(p, " GMT"))
    return SC_ERR_INVALID;
  if(d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || sec > 60)
    return SC_ERR_INVALID;
  *out = (days_from_civil(y, (unsigned)mo, d) * 86400 + h * 3600 + mi * 60 +
          (sec > 59 ? 59 : sec)) * 1000;
  return SC_OK;
}

void sctime_format_age(int64_t d_ms, char *buf, size_t len)
{
  /* the rules of k8s.io/apimachinery/pkg/util/duration.HumanDuration */
  int64_t s = d_ms / 1000;
  int64_t m, h, days, y;
  if(s <= 0) {
    snprintf(buf, len, "0s");
    return;
  }
  if(s < 60 * 2) {
    snprintf(buf, len, "%llds", (long long)s);
    return;
  }
  m = s / 60;
  if(m < 10) {
    s %= 60;
    if(s == 0)
      snprintf(buf, len, "%lldm", (long long)m);
    else
      snprintf(buf, len, "%lldm%llds", (long long)m, (long long)s);
    return;
  }
  if(m < 60 * 3) {
    snprintf(buf, len, "%lldm", (long long)m);
    return;
  }
  h = m / 60;
  if(h < 8) {
    m %= 60;
    if(m == 0)
      snprintf(buf, len, "%lldh", (long long)h);
    else
      snprintf(buf, len, "%lldh%lldm", (long long)h, (long long)m);
    return;
  }
  if(h < 48) {
    snprintf(buf, len, "%lldh", (long long)h);
    return;
  }
  if(h < 24 * 8) {
    days = h / 24;
    h %= 24;
    if(h == 0)
      snprintf(buf, len, "%lldd", (long long)days);
    else
      snprintf(buf, len, "%lldd%lldh", (long long)days, (long long)h);
    return;
  }
  days = h / 24;
  if(days < 365 * 2) {
    snprintf(buf, len, "%lldd", (long long)days);
    return;
  }
  y = days / 365;
  days %= 365;
  if(y < 8 && days)
    snprintf(buf, len, "%lldy%lldd", (long long)y, (long long)days);
  else
    snprintf(buf, len, "%lldy", (long long)y);
}
