/*
 * json_fast.c - the fast path of cube_parse_list (cube.h): one scan of a
 * list page that builds the rows directly, with no JSON tree.
 *
 * Why: a settled full pass at 10,000 sessions spent about a third of its
 * time in cube_parse_list (perf: json-c's tokener building a tree of
 * ~20 objects a row, then freeing it; docs/cube-client.md "Parsing
 * rules"). This scan reads each row once and copies only the fields the
 * controller keeps.
 *
 * It accepts a conservative subset of what the strict json-c path
 * accepts, and on anything else it gives up (CUBE_FAST_GIVE_UP) and
 * cube_parse_list parses the body with json-c as before, so every error
 * and its message come from that one path. Given up on: a string with a
 * \u escape or a raw control character, invalid or unusual UTF-8
 * (overlong, surrogates, past U+10FFFF), a number outside
 * -?(0|[1-9][0-9]{0,14})(.[0-9]{1,17})?, nesting deeper than
 * CUBE_JSON_MAX_DEPTH - 2, a field the controller reads given twice in a
 * row, a NUL byte, trailing data, and every row the json-c path would
 * refuse (a missing or bad sandboxID, state or startedAt, a bad endAt, a
 * metadata that is not an object of strings, an empty metadata key). So
 * what it returns on success is what the json-c path returns for the
 * same body: test_cube.c compares the two on a corpus.
 */
#include "controller/cube/cube_int.h"

#include <stdlib.h>
#include <string.h>

#define NEVER_MS 253370764800000LL /* as json.c */

typedef struct fscan {
  const char *p, *end;
  int depth;
  char *buf;      /* the decoded string of the last fs_string */
  size_t cap, len;
} fscan;

static void ws(fscan *s)
{
  while(s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' ||
                          *s->p == '\r'))
    s->p++;
}

static bool grow(fscan *s, size_t need)
{
  char *b;
  size_t c;
  if(need <= s->cap)
    return true;
  c = s->cap ? s->cap * 2 : 256;
  while(c < need)
    c *= 2;
  if(!(b = realloc(s->buf, c)))
    return false;
  s->buf = b;
  s->cap = c;
  return true;
}

/* Bytes of a valid UTF-8 sequence at p (strict: no overlong form, no
 * surrogate, at most U+10FFFF), 0 if none. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
  unsigned c = p[0];
  size_t n, i;
  unsigned cp;
  if(c >= 0xc2 && c <= 0xdf)
    n = 2, cp = c & 0x1f;
  else if(c >= 0xe0 && c <= 0xef)
    n = 3, cp = c & 0x0f;
  else if(c >= 0xf0 && c <= 0xf4)
    n = 4, cp = c & 0x07;
  else
    return 0;
  if((size_t)(end - p) < n)
    return 0;
  for(i = 1; i < n; i++) {
    if((p[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (p[i] & 0x3f);
  }
  if((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
     (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
    return 0;
  return n;
}

/* A string at s->p (its quote): decoded into s->buf (NUL-terminated,
 * s->len bytes). false: give up. */
static bool fs_string(fscan *s)
{
  const unsigned char *p = (const unsigned char *)s->p + 1;
  const unsigned char *end = (const unsigned char *)s->end;
  s->len = 0;
  for(;;) {
    const unsigned char *q = p;
    size_t run;
    while(q < end && *q >= 0x20 && *q != '"' && *q != '\\' && *q < 0x80)
      q++;
    run = (size_t)(q - p);
    if(run) {
      if(!grow(s, s->len + run + 1))
        return false;
      memcpy(s->buf + s->len, p, run);
      s->len += run;
      p = q;
    }
    if(p >= end || *p < 0x20)
      return false;
    if(*p == '"')
      break;
    if(*p == '\\') {
      char ch;
      if(p + 1 >= end)
        return false;
      switch(p[1]) {
      case '"': ch = '"'; break;
      case '\\': ch = '\\'; break;
      case '/': ch = '/'; break;
      case 'b': ch = '\b'; break;
      case 'f': ch = '\f'; break;
      case 'n': ch = '\n'; break;
      case 'r': ch = '\r'; break;
      case 't': ch = '\t'; break;
      default: return false; /* \u and the rest: json-c decides */
      }
      if(!grow(s, s->len + 2))
        return false;
      s->buf[s->len++] = ch;
      p += 2;
      continue;
    }
    run = utf8_len(p, end); /* *p >= 0x80 */
    if(!run || !grow(s, s->len + run + 1))
      return false;
    memcpy(s->buf + s->len, p, run);
    s->len += run;
    p += run;
  }
  if(!grow(s, s->len + 1))
    return false;
  s->buf[s->len] = '\0';
  s->p = (const char *)p + 1;
  return true;
}

static bool digits(fscan *s, size_t min, size_t max)
{
  size_t n = 0;
  while(s->p < s->end && *s->p >= '0' && *s->p <= '9') {
    s->p++;
    n++;
  }
  return n >= min && n <= max;
}

/* A number of the plain shape (no exponent, at most 15 integer digits):
 * one json-c holds exactly (no saturation, no infinity). */
static bool fs_number(fscan *s)
{
  if(s->p < s->end && *s->p == '-')
    s->p++;
  if(s->p < s->end && *s->p == '0')
    s->p++;
  else if(s->p >= s->end || *s->p < '1' || *s->p > '9' || !digits(s, 1, 15))
    return false;
  if(s->p < s->end && *s->p == '.') {
    s->p++;
    if(!digits(s, 1, 17))
      return false;
  }
  return s->p >= s->end || (*s->p != 'e' && *s->p != 'E' &&
                            !(*s->p >= '0' && *s->p <= '9'));
}

static bool fs_lit(fscan *s, const char *w)
{
  size_t n = strlen(w);
  if((size_t)(s->end - s->p) < n || memcmp(s->p, w, n))
    return false;
  s->p += n;
  return true;
}

static bool fs_skip(fscan *s);

/* after '{' or '[': members until the closer */
static bool fs_skip_container(fscan *s, char close)
{
  bool first = true;
  if(++s->depth > CUBE_JSON_MAX_DEPTH - 2)
    return false;
  s->p++;
  for(;;) {
    ws(s);
    if(s->p >= s->end)
      return false;
    if(*s->p == close && first) {
      s->p++;
      break;
    }
    if(close == '}') {
      if(*s->p != '"' || !fs_string(s))
        return false;
      ws(s);
      if(s->p >= s->end || *s->p != ':')
        return false;
      s->p++;
    }
    if(!fs_skip(s))
      return false;
    ws(s);
    if(s->p >= s->end)
      return false;
    if(*s->p == ',') {
      s->p++;
      first = false;
      ws(s);
      if(s->p < s->end && *s->p == close)
        return false; /* a trailing comma */
      continue;
    }
    if(*s->p != close)
      return false;
    s->p++;
    break;
  }
  s->depth--;
  return true;
}

/* any value, checked and skipped */
static bool fs_skip(fscan *s)
{
  ws(s);
  if(s->p >= s->end)
    return false;
  switch(*s->p) {
  case '"':
    return fs_string(s);
  case '{':
    return fs_skip_container(s, '}');
  case '[':
    return fs_skip_container(s, ']');
  case 't':
    return fs_lit(s, "true");
  case 'f':
    return fs_lit(s, "false");
  case 'n':
    return fs_lit(s, "null");
  default:
    return fs_number(s);
  }
}

/* the fields of a row the controller reads */
enum { F_ID, F_TMPL, F_DOMAIN, F_STATE, F_STARTED, F_END, F_META, F_N };
static const char *const fnames[F_N] = {"sandboxID", "templateID", "domain",
                                        "state", "startedAt", "endAt",
                                        "metadata"};

/* "metadata": an object of strings with non-empty keys (null: none) */
static bool fs_metadata(fscan *s, sc_kvlist *md)
{
  char *key = NULL;
  bool ok = false, first = true;
  ws(s);
  if(fs_lit(s, "null"))
    return true;
  if(s->p >= s->end || *s->p != '{')
    return false;
  s->p++;
  for(;;) {
    ws(s);
    if(s->p >= s->end)
      goto out;
    if(*s->p == '}' && first) {
      s->p++;
      break;
    }
    if(*s->p != '"' || !fs_string(s) || !s->len)
      goto out;
    free(key);
    if(!(key = strdup(s->buf)))
      goto out;
    ws(s);
    if(s->p >= s->end || *s->p != ':')
      goto out;
    s->p++;
    ws(s);
    if(s->p >= s->end || *s->p != '"' || !fs_string(s) ||
       sc_kvlist_set(md, key, s->buf))
      goto out;
    ws(s);
    if(s->p >= s->end)
      goto out;
    if(*s->p == ',') {
      s->p++;
      first = false;
      ws(s);
      if(s->p < s->end && *s->p == '}')
        goto out;
      continue;
    }
    if(*s->p != '}')
      goto out;
    s->p++;
    break;
  }
  ok = true;
out:
  free(key);
  return ok;
}

/* A string field: true with its copy in *out (NULL for a null), false
 * for any other type (json-c's path names the error). */
static bool fs_str_field(fscan *s, char **out)
{
  ws(s);
  if(fs_lit(s, "null"))
    return true;
  if(s->p >= s->end || *s->p != '"' || !fs_string(s) ||
     memchr(s->buf, '\0', s->len))
    return false;
  return (*out = strdup(s->buf)) != NULL;
}

static bool fs_row(fscan *s, cube_sandbox *sb)
{
  char *v[F_N] = {0};
  bool seen[F_N] = {0};
  bool ok = false, first = true;
  int i;
  memset(sb, 0, sizeof(*sb));
  ws(s);
  if(s->p >= s->end || *s->p != '{')
    return false;
  if(++s->depth > CUBE_JSON_MAX_DEPTH - 2)
    return false;
  s->p++;
  for(;;) {
    int f;
    ws(s);
    if(s->p >= s->end)
      goto out;
    if(*s->p == '}' && first) {
      s->p++;
      break;
    }
    if(*s->p != '"' || !fs_string(s))
      goto out;
    for(f = 0; f < F_N; f++)
      if(!strcmp(s->buf, fnames[f]))
        break;
    ws(s);
    if(s->p >= s->end || *s->p != ':')
      goto out;
    s->p++;
    if(f < F_N) {
      if(seen[f])
        goto out; /* json-c keeps the last: let it */
      seen[f] = true;
      if(f == F_META) {
        if(!fs_metadata(s, &sb->metadata))
          goto out;
      }
      else if(f == F_DOMAIN) {
        /* a domain that is not a string is dropped, not an error */
        ws(s);
        if(s->p < s->end && *s->p == '"') {
          if(!fs_string(s))
            goto out;
          if(!memchr(s->buf, '\0', s->len) && cube_domain_valid(s->buf) &&
             !(v[f] = strdup(s->buf)))
            goto out;
        }
        else if(!fs_skip(s))
          goto out;
      }
      else if(!fs_str_field(s, &v[f]))
        goto out;
    }
    else if(!fs_skip(s))
      goto out;
    ws(s);
    if(s->p >= s->end)
      goto out;
    if(*s->p == ',') {
      s->p++;
      first = false;
      ws(s);
      if(s->p < s->end && *s->p == '}')
        goto out;
      continue;
    }
    if(*s->p != '}')
      goto out;
    s->p++;
    break;
  }
  s->depth--;
  /* the row's rules, as parse_row (json.c) has them */
  if(!v[F_ID] || !cube_id_valid(v[F_ID]) || !v[F_STATE] || !v[F_STARTED])
    goto out;
  sb->state = cube_sb_state_parse(v[F_STATE]);
  if(sb->state == CUBE_SB_UNKNOWN ||
     sctime_parse_rfc3339(v[F_STARTED], &sb->started_at))
    goto out;
  if(v[F_END]) {
    if(sctime_parse_rfc3339(v[F_END], &sb->end_at))
      goto out;
    if(sb->end_at >= NEVER_MS)
      sb->end_at = 0;
  }
  sb->sandbox_id = v[F_ID];
  sb->template_id = v[F_TMPL];
  sb->domain = v[F_DOMAIN];
  v[F_ID] = v[F_TMPL] = v[F_DOMAIN] = NULL;
  ok = true;
out:
  for(i = 0; i < F_N; i++)
    free(v[i]);
  if(!ok)
    cube_sandbox_clear(sb);
  return ok;
}

sc_err cube_parse_list_fast(const char *body, size_t len, cube_sandbox **rows,
                            size_t *n)
{
  fscan s = {body, body + len, 0, NULL, 0, 0};
  cube_sandbox *v = NULL;
  size_t cnt = 0, cap = 0, i;
  bool first = true;
  sc_err err = CUBE_FAST_GIVE_UP;
  *rows = NULL;
  *n = 0;
  if(!len || memchr(body, '\0', len))
    return CUBE_FAST_GIVE_UP;
  ws(&s);
  if(s.p >= s.end || *s.p != '[')
    return CUBE_FAST_GIVE_UP;
  s.p++;
  s.depth = 1;
  for(;;) {
    ws(&s);
    if(s.p >= s.end)
      goto out;
    if(*s.p == ']' && first) {
      s.p++;
      break;
    }
    if(cnt == cap) {
      size_t nc = cap ? cap * 2 : 128;
      cube_sandbox *g = realloc(v, nc * sizeof(*g));
      if(!g)
        goto out;
      v = g;
      cap = nc;
    }
    if(!fs_row(&s, &v[cnt]))
      goto out;
    cnt++;
    ws(&s);
    if(s.p >= s.end)
      goto out;
    if(*s.p == ',') {
      s.p++;
      first = false;
      ws(&s);
      if(s.p < s.end && *s.p == ']')
        goto out;
      continue;
    }
    if(*s.p != ']')
      goto out;
    s.p++;
    break;
  }
  ws(&s);
  if(s.p != s.end)
    goto out;
  *rows = v;
  *n = cnt;
  v = NULL;
  cnt = 0;
  err = SC_OK;
out:
  for(i = 0; i < cnt; i++)
    cube_sandbox_clear(&v[i]);
  free(v);
  free(s.buf);
  return err;
}
