/*
 * rules.c - the value rules (rules.h): DNS labels, character sets,
 * qualified names, environment variable names, sandbox metadata keys,
 * text values and durations, each with the message that says how to fix
 * the value.
 */
#include "api/rules.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api/duration.h"
#include "lib/scstr.h"

void rule_msgf(rule_msg *mb, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(mb->m, sizeof(mb->m), fmt, ap);
  va_end(ap);
}

const char *rule_quote(rule_quoted *qb, const char *s, size_t len)
{
  fieldpath_quote(qb->q, sizeof(qb->q), s, len);
  return qb->q;
}

static bool is_alnum_lower(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9');
}

#define DNS_LABEL_MAX 63

/* A DNS-1123 label: 1-max of [a-z0-9-], alphanumeric at both ends. */
static bool dns_label_ok(const char *s, size_t len, size_t max)
{
  size_t i;
  if(!len || len > max || !is_alnum_lower(s[0]) ||
     !is_alnum_lower(s[len - 1]))
    return false;
  for(i = 0; i < len; i++)
    if(!is_alnum_lower(s[i]) && s[i] != '-')
      return false;
  return true;
}

/* 1..r->max bytes. */
static bool chk_net(const sf_str_rule *r, const char *s, size_t len,
                    rule_msg *mb);
static bool chk_abs_path(const sf_str_rule *r, const char *s, size_t len,
                         rule_msg *mb);

static bool chk_size(const sf_str_rule *r, const char *s, size_t len,
                     rule_msg *mb)
{
  rule_quoted q;
  if(!len) {
    rule_msgf(mb, "must not be empty");
    return false;
  }
  if(len > r->max) {
    rule_msgf(mb, "%s is %zu characters long, at most %zu are allowed",
              rule_quote(&q, s, len), len, r->max);
    return false;
  }
  return true;
}

static bool chk_dns_label(const sf_str_rule *r, const char *s, size_t len,
                          rule_msg *mb)
{
  rule_quoted q;
  if(!chk_size(r, s, len, mb))
    return false;
  if(!dns_label_ok(s, len, r->max)) {
    rule_msgf(mb, "%s is not a DNS-1123 label (use a-z, 0-9 and '-', "
                  "starting and ending with a letter or digit)",
              rule_quote(&q, s, len));
    return false;
  }
  return true;
}

/* 1..max bytes, each alphanumeric or in extra. */
static bool charset_ok(const char *s, size_t len, size_t max,
                       const char *extra)
{
  size_t i;
  if(!len || len > max)
    return false;
  for(i = 0; i < len; i++)
    if(!is_alnum(s[i]) && (!s[i] || !strchr(extra, s[i])))
      return false;
  return true;
}

static bool chk_charset(const sf_str_rule *r, const char *s, size_t len,
                        rule_msg *mb)
{
  rule_quoted q;
  char shown[32];
  size_t i, n = 0;
  if(!chk_size(r, s, len, mb))
    return false;
  if(charset_ok(s, len, r->max, r->charset))
    return true;
  /* "._-" is shown as ". _ -" */
  for(i = 0; r->charset[i] && n + 3 < sizeof(shown); i++) {
    if(i)
      shown[n++] = ' ';
    shown[n++] = r->charset[i];
  }
  shown[n] = '\0';
  rule_msgf(mb, "%s is not a valid %s (use 1-%zu characters of A-Z a-z 0-9 "
                "%s)",
            rule_quote(&q, s, len), r->what, r->max, shown);
  return false;
}

/* A Kubernetes qualified name: [DNS-1123 subdomain "/"] name, the name
 * 1-63 of [A-Za-z0-9._-] with alphanumerics at both ends. */
static bool qualified_name_ok(const char *s, size_t len)
{
  const char *slash = memchr(s, '/', len);
  const char *name = s;
  size_t nlen = len, i;
  if(slash) {
    size_t plen = (size_t)(slash - s), start = 0;
    if(!plen || plen > 253)
      return false;
    for(i = 0; i <= plen; i++) {
      if(i == plen || s[i] == '.') {
        if(!dns_label_ok(s + start, i - start, DNS_LABEL_MAX))
          return false;
        start = i + 1;
      }
    }
    name = slash + 1;
    nlen = len - plen - 1;
  }
  if(!nlen || nlen > DNS_LABEL_MAX || !is_alnum(name[0]) ||
     !is_alnum(name[nlen - 1]))
    return false;
  for(i = 0; i < nlen; i++)
    if(!is_alnum(name[i]) && name[i] != '.' && name[i] != '_' &&
       name[i] != '-')
      return false;
  return true;
}

static bool chk_qualified(const char *s, size_t len, rule_msg *mb)
{
  rule_quoted q;
  if(!qualified_name_ok(s, len)) {
    rule_msgf(mb, "%s is not a valid key (use an optional DNS prefix and "
                  "'/', then 1-63 characters of A-Z a-z 0-9 . _ - starting "
                  "and ending with a letter or digit)",
              rule_quote(&q, s, len));
    return false;
  }
  return true;
}

/* Length of a valid UTF-8 sequence at s, or 0. */
static size_t utf8_seq(const unsigned char *s, size_t left, uint32_t *cp)
{
  uint32_t c;
  size_t n, i;
  if(s[0] < 0x80) {
    *cp = s[0];
    return 1;
  }
  if(s[0] >= 0xc2 && s[0] <= 0xdf)
    n = 2, c = s[0] & 0x1f;
  else if(s[0] >= 0xe0 && s[0] <= 0xef)
    n = 3, c = s[0] & 0x0f;
  else if(s[0] >= 0xf0 && s[0] <= 0xf4)
    n = 4, c = s[0] & 0x07;
  else
    return 0;
  if(left < n)
    return 0;
  for(i = 1; i < n; i++) {
    if((s[i] & 0xc0) != 0x80)
      return 0;
    c = (c << 6) | (s[i] & 0x3f);
  }
  if((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
     (c >= 0xd800 && c <= 0xdfff))
    return 0;
  *cp = c;
  return n;
}

static bool chk_length(const sf_str_rule *r, size_t len, rule_msg *mb)
{
  if(len > r->max) {
    rule_msgf(mb, "value is %zu bytes long, at most %zu are allowed", len,
              r->max);
    return false;
  }
  return true;
}

/* At most max bytes of UTF-8 without control characters (C0, DEL, C1;
 * NUL included). */
static bool chk_text(const sf_str_rule *r, const char *s, size_t len,
                     rule_msg *mb)
{
  size_t i = 0;
  if(!chk_length(r, len, mb))
    return false;
  while(i < len) {
    uint32_t cp;
    size_t n = utf8_seq((const unsigned char *)s + i, len - i, &cp);
    if(!n) {
      rule_msgf(mb, "value is not valid UTF-8 (byte %zu)", i + 1);
      return false;
    }
    if(cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f)) {
      const char *name = cp == 0 ? "a NUL" : cp == '\r' ? "a carriage return"
                       : cp == '\n' ? "a line break" : cp == '\t' ? "a tab"
                       : "a control character";
      rule_msgf(mb, "value contains %s (U+%04X at byte %zu); control "
                    "characters are not allowed",
                name, (unsigned)cp, i + 1);
      return false;
    }
    i += n;
  }
  return true;
}

static bool chk_env_name(const sf_str_rule *r, const char *s, size_t len,
                         rule_msg *mb)
{
  rule_quoted q;
  size_t i;
  bool ok = len > 0 && len <= r->max &&
            (s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') ||
             (s[0] >= 'a' && s[0] <= 'z'));
  for(i = 1; ok && i < len; i++)
    ok = is_alnum(s[i]) || s[i] == '_';
  if(!ok) {
    rule_msgf(mb, "%s is not a valid environment variable name (use "
                  "[A-Za-z_][A-Za-z0-9_]*, at most %zu characters)",
              rule_quote(&q, s, len), r->max);
    return false;
  }
  for(i = 0; manifest_env_denied[i]; i++)
    if(strlen(manifest_env_denied[i]) == len &&
       !memcmp(manifest_env_denied[i], s, len)) {
      rule_msgf(mb, "%s may not be set: it changes how programs in the "
                    "sandbox are found or started",
                manifest_env_denied[i]);
      return false;
    }
  return true;
}

static bool chk_meta_key(const sf_str_rule *r, const char *s, size_t len,
                         rule_msg *mb)
{
  rule_quoted q;
  size_t pl = strlen(SESSION_TAG_PREFIX);
  if(!chk_charset(r, s, len, mb))
    return false;
  if(len == strlen(SESSION_CUBE_HOST_MOUNT_KEY) &&
     !memcmp(s, SESSION_CUBE_HOST_MOUNT_KEY, len)) {
    rule_msgf(mb, "\"%s\" is reserved by Cube for host directory mounts; "
                  "use spec.workspace", SESSION_CUBE_HOST_MOUNT_KEY);
    return false;
  }
  if(len >= pl && !memcmp(s, SESSION_TAG_PREFIX, pl)) {
    rule_msgf(mb, "%s is under the reserved prefix \"%s\" (the controller's "
                  "own tags); use another key",
              rule_quote(&q, s, len), SESSION_TAG_PREFIX);
    return false;
  }
  return true;
}

bool rule_check(const sf_str_rule *r, const char *s, size_t len,
                rule_msg *mb)
{
  switch(r->rule) {
  case SR_ANY: return true;
  case SR_DNS_LABEL: return chk_dns_label(r, s, len, mb);
  case SR_CHARSET: return chk_charset(r, s, len, mb);
  case SR_QUALIFIED: return chk_qualified(s, len, mb);
  case SR_ENV_NAME: return chk_env_name(r, s, len, mb);
  case SR_META_KEY: return chk_meta_key(r, s, len, mb);
  case SR_TEXT: return chk_text(r, s, len, mb);
  case SR_ABS_PATH: return chk_abs_path(r, s, len, mb);
  case SR_NET_DEST:
  case SR_NET_CIDR: return chk_net(r, s, len, mb);
  case SR_NO_NUL:
    if(!chk_length(r, len, mb))
      return false;
    if(memchr(s, '\0', len)) {
      rule_msgf(mb, "value contains a NUL character");
      return false;
    }
    return true;
  }
  return true;
}

/* ---------------------------------------------------------- durations */

static void too_short(const sf_field *f, const char *shown, rule_msg *mb)
{
  char minbuf[32];
  duration_format(f->min_ms, minbuf, sizeof(minbuf));
  rule_msgf(mb, "%s is less than the minimum of %s", shown, minbuf);
}

bool rule_duration_text(const sf_field *f, const char *s, size_t len,
                        int64_t *out, rule_msg *mb)
{
  rule_quoted q;
  int64_t ms;
  sc_err err;
  if(memchr(s, '\0', len)) {
    rule_msgf(mb, "contains a NUL character");
    return false;
  }
  err = duration_parse(s, &ms);
  if(err == SC_ERR_INVALID && (s[0] == '-') && len > 1 &&
     duration_parse(s + 1, &ms) != SC_ERR_INVALID) {
    rule_msgf(mb, "%s must not be negative", rule_quote(&q, s, len));
    return false;
  }
  if(err == SC_ERR_INVALID) {
    rule_msgf(mb, "%s is not a duration (use e.g. %s)",
              rule_quote(&q, s, len), f->example);
    return false;
  }
  if(err || ms > SESSION_MAX_DURATION_MS) {
    rule_msgf(mb, "%s is more than 10 years (" SF_MAX_DURATION_TEXT ")",
              rule_quote(&q, s, len));
    return false;
  }
  if(ms < f->min_ms) {
    too_short(f, rule_quote(&q, s, len), mb);
    return false;
  }
  *out = ms;
  return true;
}

bool rule_duration_ms(const sf_field *f, int64_t ms, rule_msg *mb)
{
  char buf[32];
  duration_format(ms, buf, sizeof(buf));
  if(ms < 0)
    rule_msgf(mb, "%s must not be negative", buf);
  else if(ms > SESSION_MAX_DURATION_MS)
    rule_msgf(mb, "%s is more than 10 years (" SF_MAX_DURATION_TEXT ")", buf);
  else if(ms < f->min_ms)
    too_short(f, buf, mb);
  else
    return true;
  return false;
}

/* ------------------------------------------- paths and network rules */

static bool chk_abs_path(const sf_str_rule *r, const char *s, size_t len,
                         rule_msg *mb)
{
  rule_quoted q;
  size_t i, start;
  if(!chk_size(r, s, len, mb))
    return false;
  if(s[0] != '/') {
    rule_msgf(mb, "%s is not an absolute path (begin it with /)",
              rule_quote(&q, s, len));
    return false;
  }
  for(i = 0; i < len; i++)
    if((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
      rule_msgf(mb, "%s contains a control character at byte %zu",
                rule_quote(&q, s, len), i);
      return false;
    }
  for(start = 1; start <= len; start = i + 1) {
    size_t cl;
    for(i = start; i < len && s[i] != '/'; i++)
      ;
    cl = i - start;
    if((cl == 2 && !memcmp(s + start, "..", 2)) ||
       (cl == 1 && s[start] == '.')) {
      rule_msgf(mb, "%s has a \"%.*s\" component (write the path out)",
                rule_quote(&q, s, len), (int)cl, s + start);
      return false;
    }
  }
  return true;
}

/* n decimal digits in [0, max], no leading zero: its value, or -1 */
static long dec_num(const char *s, size_t n, long max)
{
  long v = 0;
  size_t i;
  if(!n || n > 5 || (n > 1 && s[0] == '0'))
    return -1;
  for(i = 0; i < n; i++) {
    if(s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v <= max ? v : -1;
}

static bool ipv4_ok(const char *s, size_t len)
{
  size_t i = 0, parts;
  for(parts = 0; parts < 4; parts++) {
    size_t j = i;
    while(j < len && s[j] != '.')
      j++;
    if(dec_num(s + i, j - i, 255) < 0)
      return false;
    if(parts == 3)
      return j == len;
    if(j == len)
      return false;
    i = j + 1;
  }
  return false;
}

static bool is_hex(char c)
{
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
         (c >= 'A' && c <= 'F');
}

/* RFC 4291 text form: groups of 1-4 hex digits, at most one "::" */
static bool ipv6_ok(const char *s, size_t len)
{
  size_t i = 0, groups = 0;
  bool dbl = false;
  if(len < 2)
    return false;
  if(s[0] == ':') {
    if(s[1] != ':')
      return false;
    dbl = true;
    i = 2;
    if(i == len)
      return true; /* "::" */
  }
  while(i < len) {
    size_t j = i;
    while(j < len && is_hex(s[j]) && j - i < 5)
      j++;
    if(j == i || j - i > 4)
      return false;
    groups++;
    if(j == len)
      break;
    if(s[j] != ':')
      return false;
    if(j + 1 < len && s[j + 1] == ':') {
      if(dbl)
        return false;
      dbl = true;
      i = j + 2;
      if(i == len)
        break;
    }
    else {
      i = j + 1;
      if(i == len)
        return false; /* a trailing single ':' */
    }
  }
  return dbl ? groups < 8 : groups == 8;
}

/* a CIDR or a bare address; *is_ip set when it is one */
static bool cidr_ok(const char *s, size_t len)
{
  const char *slash = memchr(s, '/', len);
  size_t al = slash ? (size_t)(slash - s) : len;
  bool v6 = memchr(s, ':', al) != NULL;
  if(v6 ? !ipv6_ok(s, al) : !ipv4_ok(s, al))
    return false;
  return !slash || dec_num(slash + 1, len - al - 1, v6 ? 128 : 32) >= 0;
}

/* a host name: labels of 1-63 of [A-Za-z0-9-] not beginning or ending
 * with '-', at most 253 bytes, an optional leading "*." */
bool rule_host_name(const char *s, size_t len)
{
  size_t i = 0;
  if(len >= 2 && s[0] == '*' && s[1] == '.')
    i = 2;
  if(i >= len || len > 253)
    return false;
  while(i < len) {
    size_t j = i;
    while(j < len && (is_alnum(s[j]) || s[j] == '-'))
      j++;
    if(j == i || j - i > 63 || s[i] == '-' || s[j - 1] == '-')
      return false;
    if(j == len)
      break;
    if(s[j] != '.')
      return false;
    i = j + 1;
    if(i == len)
      return false; /* a trailing dot */
  }
  return true;
}

bool rule_is_address(const char *s, size_t len)
{
  return cidr_ok(s, len);
}

static bool chk_net(const sf_str_rule *r, const char *s, size_t len,
                    rule_msg *mb)
{
  rule_quoted q;
  bool looks_ip;
  if(!chk_size(r, s, len, mb))
    return false;
  if(cidr_ok(s, len))
    return true;
  looks_ip = memchr(s, '/', len) || memchr(s, ':', len) ||
             strspn(s, "0123456789.") == len;
  if(r->rule == SR_NET_CIDR) {
    rule_msgf(mb, "%s is not a CIDR or an IP address (denyOut takes no "
                  "host names; use e.g. 0.0.0.0/0 or 10.0.0.0/8)",
              rule_quote(&q, s, len));
    return false;
  }
  if(looks_ip || !rule_host_name(s, len)) {
    rule_msgf(mb, "%s is neither a CIDR, an IP address nor a host name "
                  "(use e.g. 8.8.8.8/32, 8.8.8.8, example.com or "
                  "*.example.com)",
              rule_quote(&q, s, len));
    return false;
  }
  return true;
}

/* ------------------------------------------------ across the spec */

static bool denies_all(const session_spec *sp)
{
  size_t i;
  for(i = 0; i < sp->n_net_deny_out; i++)
    if(!strcmp(sp->net_deny_out[i], "0.0.0.0/0"))
      return true;
  return false;
}

void rule_spec_cross(const session_spec *sp, rule_report_fn report,
                     void *ud)
{
  rule_msg mb;
  rule_quoted q;
  size_t i, j;
  bool closed = sp->net_internet == SESSION_OPT_FALSE || denies_all(sp);
  for(i = 0; !closed && i < sp->n_net_allow_out; i++) {
    const char *d = sp->net_allow_out[i];
    if(!d || rule_is_address(d, strlen(d)))
      continue;
    rule_msgf(&mb,
              "%s is a host name: Cube takes a host name in allowOut only "
              "when denyOut holds 0.0.0.0/0 or allowInternetAccess is false "
              "(add one of them)",
              rule_quote(&q, d, strlen(d)));
    report(ud, "network", "allowOut", (long)i, NULL, mb.m);
  }
  for(i = 0; i < sp->n_volume_mounts; i++) {
    const session_volume_mount *v = &sp->volume_mounts[i];
    for(j = 0; v->name && j < i; j++)
      if(sc_str_eq0(sp->volume_mounts[j].name, v->name)) {
        rule_msgf(&mb, "%s is given twice (first at volumeMounts[%zu])",
                  rule_quote(&q, v->name, strlen(v->name)), j);
        report(ud, "volumeMounts", NULL, (long)i, "name", mb.m);
        break;
      }
    if(v->path && !strcmp(v->path, "/")) {
      report(ud, "volumeMounts", NULL, (long)i, "path",
             "\"/\" would hide the sandbox's root file system; mount "
             "below it");
      continue;
    }
    for(j = 0; v->path && j < i; j++)
      if(sc_str_eq0(sp->volume_mounts[j].path, v->path)) {
        rule_msgf(&mb, "%s is mounted twice (first at volumeMounts[%zu])",
                  rule_quote(&q, v->path, strlen(v->path)), j);
        report(ud, "volumeMounts", NULL, (long)i, "path", mb.m);
        break;
      }
  }
  if(sp->workspace_mount_path) {
    const char *p = sp->workspace_mount_path;
    if(!strcmp(p, "/"))
      report(ud, "workspace", NULL, -1, "mountPath",
             "\"/\" would hide the sandbox's root file system; mount "
             "below it");
    for(j = 0; j < sp->n_volume_mounts; j++)
      if(sc_str_eq0(sp->volume_mounts[j].path, p)) {
        rule_msgf(&mb, "%s is also volumeMounts[%zu].path; a path takes "
                  "one mount", rule_quote(&q, p, strlen(p)), j);
        report(ud, "workspace", NULL, -1, "mountPath", mb.m);
        break;
      }
  }
}
