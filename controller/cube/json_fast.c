/*
 * json_fast.c - the fast path of cube_parse_list (cube.h): one scan of a
 * list page that builds the rows directly, with no JSON tree.
 *
 * Why: a settled full pass at 10,000 sessions spent about a third of its
 * time in cube_parse_list (perf: json-c's tokener building a tree of
 * ~20 objects a row, then freeing it; docs/cube-client.md "Parsing
 * rules"). This scan reads each row once and copies only the fields the
 * controller keeps: a string without an escape or a byte >= 0x80 is used
 * where it lies in the body (fscan.str), the times and the state are
 * decoded from there, and the strings a row keeps (its IDs, its domain,
 * its metadata's keys and values) are gathered in a scratch buffer and
 * copied, with the metadata's items, into one allocation a row
 * (cube_sandbox.block_, sandbox.h): a row of six tags was 15 mallocs and
 * as many frees, about a tenth of a settled pass at 10k.
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

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NEVER_MS 253370764800000LL /* as json.c */

typedef struct fscan {
  const char *p, *end;
  int depth;
  /* the last fs_string: str points into the body (a string with no
   * escape and no byte >= 0x80, the usual case: nothing copied) or into
   * buf (decoded); len bytes, no NUL among them (the body has none and
   * \u gives up), not NUL-terminated */
  const char *str;
  size_t len;
  char *buf;
  size_t cap;
  /* the row being read (fs_row): the strings it keeps, one after
   * another, each NUL-terminated, in rb; its metadata pairs as offsets
   * into rb, sorted by key; its IDs and domain as offsets (NO_STR: none) */
  char *rb;
  size_t rb_len, rb_cap;
  struct fpair { size_t k, v; } *pairs;
  size_t n_pairs, cap_pairs;
  size_t off[3];         /* F_ID, F_TMPL, F_DOMAIN */
} fscan;

#define NO_STR ((size_t)-1)

static void ws(fscan *s)
{
  while(s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' ||
                          *s->p == '\r'))
    s->p++;
}

static bool grow_to(char **buf, size_t *cap, size_t need)
{
  char *b;
  size_t c;
  if(need <= *cap)
    return true;
  c = *cap ? *cap * 2 : 256;
  while(c < need)
    c *= 2;
  if(!(b = realloc(*buf, c)))
    return false;
  *buf = b;
  *cap = c;
  return true;
}

static bool grow(fscan *s, size_t need)
{
  return grow_to(&s->buf, &s->cap, need);
}

/* The last string kept for the row: appended to rb, NUL-terminated, at
 * *off (false: out of memory). */
static bool fs_keep(fscan *s, size_t *off)
{
  if(!grow_to(&s->rb, &s->rb_cap, s->rb_len + s->len + 1))
    return false;
  memcpy(s->rb + s->rb_len, s->str, s->len);
  s->rb[s->rb_len + s->len] = '\0';
  *off = s->rb_len;
  s->rb_len += s->len + 1;
  return true;
}

/* The last string, NUL-terminated, in buf (false: out of memory). */
static bool fs_cstr(fscan *s)
{
  bool in_buf = s->str == s->buf;
  if(!grow(s, s->len + 1))
    return false;
  if(!in_buf)
    memcpy(s->buf, s->str, s->len);
  s->str = s->buf; /* grow may have moved it */
  s->buf[s->len] = '\0';
  return true;
}

static bool fs_is(const fscan *s, const char *w, size_t n)
{
  return s->len == n && !memcmp(s->str, w, n);
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

/* The bytes a string holds as they are: 0x20..0x7f but '"' and '\\'. */
static const unsigned char plain[256] = {
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x00 */
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x20: '"' */
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x40 */
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 0x50: '\\' */
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x60 */
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x70 */
  /* 0x80..0xff: 0 (UTF-8, checked one sequence at a time) */
};

/* The first byte at or after q that is not plain (or end). Eight bytes
 * at a time while none of them can be one: a word with no byte below
 * 0x20, at or above 0x80, '"' or '\\' (the usual bit tricks: each test
 * may also fire on a plain byte after one that is not, never miss one),
 * then byte by byte by the table, which decides. */
static const unsigned char *plain_run(const unsigned char *q,
                                      const unsigned char *end)
{
  const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
  while(end - q >= 8) {
    uint64_t w, xq, xb;
    memcpy(&w, q, sizeof(w));
    xq = w ^ (ones * '"');
    xb = w ^ (ones * '\\');
    if(((w | ((w - ones * 0x20) & ~w) | ((xq - ones) & ~xq) |
         ((xb - ones) & ~xb)) & high))
      break;
    q += 8;
  }
  while(q < end && plain[*q])
    q++;
  return q;
}

/* A string at s->p (its quote): s->str and s->len (see fscan). false:
 * give up. */
static bool fs_string(fscan *s)
{
  const unsigned char *p = (const unsigned char *)s->p + 1;
  const unsigned char *end = (const unsigned char *)s->end;
  const unsigned char *q = plain_run(p, end);
  size_t len = 0;
  if(q < end && *q == '"') { /* nothing to decode: the body's own bytes */
    s->str = (const char *)p;
    s->len = (size_t)(q - p);
    s->p = (const char *)q + 1;
    return true;
  }
  for(;;) {
    size_t run = (size_t)(q - p);
    if(run) {
      if(!grow(s, len + run + 1))
        return false;
      memcpy(s->buf + len, p, run);
      len += run;
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
      if(!grow(s, len + 2))
        return false;
      s->buf[len++] = ch;
      p += 2;
    }
    else { /* *p >= 0x80 */
      run = utf8_len(p, end);
      if(!run || !grow(s, len + run + 1))
        return false;
      memcpy(s->buf + len, p, run);
      len += run;
      p += run;
    }
    q = plain_run(p, end);
  }
  s->str = s->buf;
  s->len = len;
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
static const struct {
  const char *name;
  size_t len;
} fields[F_N] = {{"sandboxID", 9}, {"templateID", 10}, {"domain", 6},
                 {"state", 5},     {"startedAt", 9},  {"endAt", 5},
                 {"metadata", 8}};

/* The pair at offsets k, v (rb) into the row's pairs as sc_kvlist_set()
 * leaves a list: sorted by key, the last value of a key given twice wins
 * (the pairs grow by doubling, not one at a time). false: out of
 * memory. */
static bool md_put(fscan *s, size_t k, size_t v)
{
  size_t i = s->n_pairs;
  const char *key = s->rb + k;
  if(s->n_pairs && strcmp(s->rb + s->pairs[s->n_pairs - 1].k, key) >= 0) {
    size_t lo = 0, hi = s->n_pairs; /* not in order: find its place */
    while(lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      int c = strcmp(s->rb + s->pairs[mid].k, key);
      if(!c) {
        s->pairs[mid].v = v;
        return true;
      }
      if(c < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    i = lo;
  }
  if(s->n_pairs == s->cap_pairs) {
    size_t nc = s->cap_pairs ? s->cap_pairs * 2 : 8;
    struct fpair *np = realloc(s->pairs, nc * sizeof(*np));
    if(!np)
      return false;
    s->pairs = np;
    s->cap_pairs = nc;
  }
  memmove(s->pairs + i + 1, s->pairs + i,
          (s->n_pairs - i) * sizeof(*s->pairs));
  s->pairs[i].k = k;
  s->pairs[i].v = v;
  s->n_pairs++;
  return true;
}

/* "metadata": an object of strings with non-empty keys (null: none) */
static bool fs_metadata(fscan *s)
{
  bool first = true;
  ws(s);
  if(fs_lit(s, "null"))
    return true;
  if(s->p >= s->end || *s->p != '{')
    return false;
  s->p++;
  for(;;) {
    size_t key, value;
    ws(s);
    if(s->p >= s->end)
      return false;
    if(*s->p == '}' && first) {
      s->p++;
      break;
    }
    if(*s->p != '"' || !fs_string(s) || !s->len || !fs_keep(s, &key))
      return false;
    ws(s);
    if(s->p >= s->end || *s->p != ':')
      return false;
    s->p++;
    ws(s);
    if(s->p >= s->end || *s->p != '"' || !fs_string(s) ||
       !fs_keep(s, &value) || !md_put(s, key, value))
      return false;
    ws(s);
    if(s->p >= s->end)
      return false;
    if(*s->p == ',') {
      s->p++;
      first = false;
      ws(s);
      if(s->p < s->end && *s->p == '}')
        return false;
      continue;
    }
    if(*s->p != '}')
      return false;
    s->p++;
    break;
  }
  return true;
}

/* A string field: true with the string in s->str (has: true) or for a
 * null (has: false); false for any other type (json-c's path names the
 * error). */
static bool fs_str_field(fscan *s, bool *has)
{
  ws(s);
  *has = false;
  if(fs_lit(s, "null"))
    return true;
  if(s->p >= s->end || *s->p != '"' || !fs_string(s))
    return false;
  *has = true;
  return true;
}

/* A time field (startedAt, endAt) read now: RFC 3339 or null. */
static bool fs_time_field(fscan *s, bool *has, sc_time *t)
{
  if(!fs_str_field(s, has))
    return false;
  return !*has || (fs_cstr(s) && !sctime_parse_rfc3339(s->buf, t));
}

static bool fs_field(fscan *s, cube_sandbox *sb, int f, bool *has)
{
  switch(f) {
  case F_META:
    return fs_metadata(s);
  case F_DOMAIN:
    /* a domain that is not a string, or not a host name, is dropped, not
     * an error */
    ws(s);
    if(s->p < s->end && *s->p == '"') {
      if(!fs_string(s) || !fs_cstr(s))
        return false;
      return !cube_domain_valid(s->buf) || fs_keep(s, &s->off[F_DOMAIN]);
    }
    return fs_skip(s);
  case F_STATE:
    if(!fs_str_field(s, has))
      return false;
    if(*has) { /* as cube_sb_state_parse() */
      sb->state = fs_is(s, "running", 7)   ? CUBE_SB_RUNNING
                  : fs_is(s, "pausing", 7) ? CUBE_SB_PAUSING
                  : fs_is(s, "paused", 6)  ? CUBE_SB_PAUSED
                                           : CUBE_SB_UNKNOWN;
      return sb->state != CUBE_SB_UNKNOWN;
    }
    return true;
  case F_STARTED:
    return fs_time_field(s, has, &sb->started_at);
  case F_END:
    return fs_time_field(s, has, &sb->end_at);
  default: /* F_ID, F_TMPL */
    if(!fs_str_field(s, has))
      return false;
    return !*has || fs_keep(s, &s->off[f]);
  }
}

/* The row's strings and metadata into sb, in one block (sandbox.h):
 * the items first, then the strings. false: out of memory. */
static bool fs_row_block(fscan *s, cube_sandbox *sb)
{
  size_t head = s->n_pairs * sizeof(sc_kv), i;
  char *block = malloc(head + s->rb_len), *strs;
  sc_kv *items = (sc_kv *)(void *)block;
  if(!block)
    return false;
  strs = block + head;
  memcpy(strs, s->rb, s->rb_len);
  sb->block_ = block;
  sb->sandbox_id = strs + s->off[F_ID];
  if(s->off[F_TMPL] != NO_STR)
    sb->template_id = strs + s->off[F_TMPL];
  if(s->off[F_DOMAIN] != NO_STR)
    sb->domain = strs + s->off[F_DOMAIN];
  for(i = 0; i < s->n_pairs; i++) {
    items[i].key = strs + s->pairs[i].k;
    items[i].value = strs + s->pairs[i].v;
  }
  sb->metadata.items = s->n_pairs ? items : NULL;
  sb->metadata.n = s->n_pairs;
  return true;
}

static bool fs_row(fscan *s, cube_sandbox *sb)
{
  bool seen[F_N] = {0}, has[F_N] = {0};
  bool ok = false, first = true;
  memset(sb, 0, sizeof(*sb));
  s->rb_len = 0;
  s->n_pairs = 0;
  s->off[F_ID] = s->off[F_TMPL] = s->off[F_DOMAIN] = NO_STR;
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
      if(fs_is(s, fields[f].name, fields[f].len))
        break;
    ws(s);
    if(s->p >= s->end || *s->p != ':')
      goto out;
    s->p++;
    if(f < F_N) {
      if(seen[f])
        goto out; /* json-c keeps the last: let it */
      seen[f] = true;
      if(!fs_field(s, sb, f, &has[f]))
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
  /* the row's rules, as parse_row (json.c) has them: the values were
   * checked as they came (state, times), what must be there is here */
  if(s->off[F_ID] == NO_STR || !cube_id_valid(s->rb + s->off[F_ID]) ||
     !has[F_STATE] || !has[F_STARTED])
    goto out;
  if(has[F_END] && sb->end_at >= NEVER_MS)
    sb->end_at = 0;
  ok = fs_row_block(s, sb);
out:
  if(!ok)
    cube_sandbox_clear(sb);
  return ok;
}

sc_err cube_parse_list_fast(const char *body, size_t len, cube_sandbox **rows,
                            size_t *n)
{
  fscan s = {.p = body, .end = body + len};
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
  free(s.rb);
  free(s.pairs);
  return err;
}
