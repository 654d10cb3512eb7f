/* jsonpath.c - the `-o jsonpath=TEMPLATE` subset described in jsonpath.h:
 * a parser into a flat list of nodes (text, expression, range, end) and
 * an evaluator over json-c objects. */
#include "cmd/sessionctl/jsonpath.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JP_MAX_DEPTH 32          /* nested ranges; nested filters */
#define JP_MAX_STRING (64 * 1024) /* one string literal or field name */

typedef enum { ST_FIELD, ST_WILD, ST_INDEX, ST_SLICE, ST_FILTER } step_kind;
typedef enum { OP_EXISTS, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE } cmp_op;

typedef struct jp_step jp_step;

typedef struct jp_path {
  jp_step *steps;
  size_t n;
} jp_path;

struct jp_step {
  step_kind kind;
  char *name;              /* ST_FIELD */
  long long a, b;          /* ST_INDEX: [a]; ST_SLICE: [a:b] */
  bool has_a, has_b;       /* ST_SLICE: which bounds were given */
  jp_path *lhs;            /* ST_FILTER: the path from the element */
  cmp_op op;               /* ST_FILTER */
  json_object *lit;        /* ST_FILTER: the literal (owned) */
};

typedef enum { N_TEXT, N_EXPR, N_RANGE, N_END } node_kind;

typedef struct jp_node {
  node_kind kind;
  char *text;              /* N_TEXT (owned) */
  size_t len;
  jp_path path;            /* N_EXPR, N_RANGE */
  size_t end;              /* N_RANGE: the index of its N_END */
  size_t col;              /* where it starts in the template (1-based) */
} jp_node;

struct ctl_jsonpath {
  jp_node *nodes;
  size_t n, cap;
};

/* ------------------------------------------------------------ freeing */

static void path_clear(jp_path *p);

static void step_clear(jp_step *s)
{
  free(s->name);
  if(s->lhs) {
    path_clear(s->lhs);
    free(s->lhs);
  }
  json_object_put(s->lit);
}

static void path_clear(jp_path *p)
{
  size_t i;
  for(i = 0; i < p->n; i++)
    step_clear(&p->steps[i]);
  free(p->steps);
  p->steps = NULL;
  p->n = 0;
}

void ctl_jsonpath_free(ctl_jsonpath *jp)
{
  size_t i;
  if(!jp)
    return;
  for(i = 0; i < jp->n; i++) {
    free(jp->nodes[i].text);
    path_clear(&jp->nodes[i].path);
  }
  free(jp->nodes);
  free(jp);
}

/* ------------------------------------------------------------ parsing */

typedef struct jparser {
  const char *t;
  size_t pos;
  char *err;
  size_t errlen;
  bool failed;
} jparser;

/* Record the first error (at byte offset at); returns false. */
static bool perr(jparser *p, size_t at, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
static bool perr(jparser *p, size_t at, const char *fmt, ...)
{
  char msg[200];
  va_list ap;
  if(p->failed)
    return false;
  p->failed = true;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if(at == (size_t)-1)
    snprintf(p->err, p->errlen, "%s", msg);
  else
    snprintf(p->err, p->errlen, "%s at column %zu", msg, at + 1);
  return false;
}

static bool nomem(jparser *p)
{
  return perr(p, (size_t)-1, "out of memory");
}

static bool is_space(char c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void skip_spaces(jparser *p)
{
  while(is_space(p->t[p->pos]))
    p->pos++;
}

/* A printable form of the character at pos for messages. */
static const char *shown(const jparser *p, size_t pos, char *buf, size_t len)
{
  unsigned char c = (unsigned char)p->t[pos];
  if(!c)
    snprintf(buf, len, "the end of the template");
  else if(c < 0x20 || c == 0x7f)
    snprintf(buf, len, "byte 0x%02X", c);
  else
    snprintf(buf, len, "'%c'", c);
  return buf;
}

static bool push_step(jparser *p, jp_path *path, const jp_step *s)
{
  jp_step *n = realloc(path->steps, (path->n + 1) * sizeof(*n));
  if(!n)
    return nomem(p);
  path->steps = n;
  n[path->n++] = *s;
  return true;
}

/* A quoted string at p->pos (the quote itself); the unescaped bytes in a
 * new string (*len bytes, NUL-terminated). */
static char *parse_quoted(jparser *p, size_t *len)
{
  char q = p->t[p->pos];
  size_t start = p->pos;
  dynbuf b;
  dynbuf_init(&b, JP_MAX_STRING);
  p->pos++;
  for(;;) {
    char c = p->t[p->pos], out;
    if(!c) {
      perr(p, start, "unterminated string");
      goto fail;
    }
    p->pos++;
    if(c == q)
      break;
    out = c;
    if(c == '\\') {
      char e = p->t[p->pos];
      switch(e) {
      case 'n': out = '\n'; break;
      case 't': out = '\t'; break;
      case 'r': out = '\r'; break;
      case '\\': case '"': case '\'': case '/': out = e; break;
      default: {
        char sb[32];
        perr(p, p->pos - 1, "unknown escape \\ followed by %s in a string "
             "(use \\n \\t \\r \\\\ \\\" \\' or \\/)",
             shown(p, p->pos, sb, sizeof(sb)));
        goto fail;
      }
      }
      p->pos++;
    }
    if(dynbuf_add(&b, &out, 1)) {
      perr(p, start, "string too long");
      goto fail;
    }
  }
  *len = dynbuf_len(&b);
  {
    char *s = dynbuf_take(&b);
    if(!s)
      nomem(p);
    return s;
  }
fail:
  dynbuf_free(&b);
  return NULL;
}

/* A decimal integer (optional sign); false (no error set) when none. */
static bool parse_int(jparser *p, long long *out)
{
  const char *s = p->t + p->pos;
  char *end;
  long long v;
  if(!(*s >= '0' && *s <= '9') &&
     !((*s == '-' || *s == '+') && s[1] >= '0' && s[1] <= '9'))
    return false;
  errno = 0;
  v = strtoll(s, &end, 10);
  if(errno) {
    perr(p, p->pos, "index out of range");
    return false;
  }
  p->pos += (size_t)(end - s);
  *out = v;
  return true;
}

static bool ends_field(char c, bool in_filter)
{
  if(!c || is_space(c) || strchr(".[]{}", c))
    return true;
  return in_filter && strchr("=!<>()&|,", c);
}

static bool parse_path(jparser *p, jp_path *out, bool in_filter, int depth);

static bool expect(jparser *p, char c, const char *what)
{
  char sb[32];
  skip_spaces(p);
  if(p->t[p->pos] == c) {
    p->pos++;
    return true;
  }
  return perr(p, p->pos, "expected %s, found %s", what,
              shown(p, p->pos, sb, sizeof(sb)));
}

/* The literal of a filter at p->pos into *out. */
static bool parse_literal(jparser *p, json_object **out)
{
  const char *s = p->t + p->pos;
  char sb[32];
  if(*s == '"' || *s == '\'') {
    size_t len;
    char *str = parse_quoted(p, &len);
    if(!str)
      return false;
    *out = json_object_new_string_len(str, (int)len);
    free(str);
    return *out ? true : nomem(p);
  }
  if(!strncmp(s, "true", 4) && ends_field(s[4], true)) {
    p->pos += 4;
    *out = json_object_new_boolean(1);
    return *out ? true : nomem(p);
  }
  if(!strncmp(s, "false", 5) && ends_field(s[5], true)) {
    p->pos += 5;
    *out = json_object_new_boolean(0);
    return *out ? true : nomem(p);
  }
  if((*s >= '0' && *s <= '9') || *s == '-' || *s == '+' || *s == '.') {
    size_t n = strspn(s, "0123456789+-.eE");
    char num[64], *end;
    bool is_int = !memchr(s, '.', n) && !memchr(s, 'e', n) &&
                  !memchr(s, 'E', n);
    if(n >= sizeof(num))
      return perr(p, p->pos, "number too long");
    memcpy(num, s, n);
    num[n] = 0;
    errno = 0;
    if(is_int) {
      long long v = strtoll(num, &end, 10);
      if(errno || *end || end == num)
        return perr(p, p->pos, "\"%s\" is not a number", num);
      *out = json_object_new_int64(v);
    }
    else {
      double d = strtod(num, &end);
      if(errno || *end || end == num)
        return perr(p, p->pos, "\"%s\" is not a number", num);
      *out = json_object_new_double(d);
    }
    p->pos += n;
    return *out ? true : nomem(p);
  }
  if(*s == '@' || *s == '$' || *s == '.')
    return perr(p, p->pos, "comparing two paths is not supported (compare "
                "with a literal: a number, 'string', true or false)");
  return perr(p, p->pos, "expected a literal (a number, 'string', true or "
              "false), found %s", shown(p, p->pos, sb, sizeof(sb)));
}

/* [?( ... )] after the "?" */
static bool parse_filter(jparser *p, jp_path *path, int depth)
{
  jp_step st;
  size_t at;
  char sb[32];
  memset(&st, 0, sizeof(st));
  st.kind = ST_FILTER;
  if(depth >= JP_MAX_DEPTH)
    return perr(p, p->pos, "filters nested too deep");
  if(!expect(p, '(', "'(' after '[?'"))
    return false;
  skip_spaces(p);
  if(p->t[p->pos] != '@')
    return perr(p, p->pos, "a filter starts with @, as in "
                "[?(@.type==\"Ready\")]; found %s",
                shown(p, p->pos, sb, sizeof(sb)));
  st.lhs = calloc(1, sizeof(*st.lhs));
  if(!st.lhs)
    return nomem(p);
  if(!parse_path(p, st.lhs, true, depth + 1))
    goto fail;
  skip_spaces(p);
  at = p->pos;
  if(p->t[at] == ')')
    st.op = OP_EXISTS;
  else {
    static const struct {
      const char *s;
      cmp_op op;
    } ops[] = {{"==", OP_EQ}, {"!=", OP_NE}, {"<=", OP_LE}, {">=", OP_GE},
               {"<", OP_LT},  {">", OP_GT}};
    size_t i;
    if(!strncmp(p->t + at, "=~", 2)) {
      perr(p, at, "regular expressions (=~) are not supported");
      goto fail;
    }
    if(!strncmp(p->t + at, "&&", 2) || !strncmp(p->t + at, "||", 2)) {
      perr(p, at, "&& and || are not supported in a filter");
      goto fail;
    }
    for(i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
      if(!strncmp(p->t + at, ops[i].s, strlen(ops[i].s)))
        break;
    if(i == sizeof(ops) / sizeof(ops[0])) {
      perr(p, at, "expected a comparison (== != < <= > >=) or ')', found %s",
           shown(p, at, sb, sizeof(sb)));
      goto fail;
    }
    st.op = ops[i].op;
    p->pos += strlen(ops[i].s);
    skip_spaces(p);
    if(!parse_literal(p, &st.lit))
      goto fail;
    skip_spaces(p);
    if(!strncmp(p->t + p->pos, "&&", 2) || !strncmp(p->t + p->pos, "||", 2)) {
      perr(p, p->pos, "&& and || are not supported in a filter");
      goto fail;
    }
  }
  if(!expect(p, ')', "')' to end the filter") ||
     !expect(p, ']', "']' after the filter"))
    goto fail;
  if(push_step(p, path, &st))
    return true;
fail:
  step_clear(&st);
  return false;
}

/* After a '[' (p->pos is past it). */
static bool parse_bracket(jparser *p, jp_path *path, int depth)
{
  jp_step st;
  size_t open = p->pos - 1;
  char sb[32];
  memset(&st, 0, sizeof(st));
  skip_spaces(p);
  switch(p->t[p->pos]) {
  case '*':
    p->pos++;
    st.kind = ST_WILD;
    break;
  case '\'':
  case '"': {
    size_t len;
    st.kind = ST_FIELD;
    st.name = parse_quoted(p, &len);
    if(!st.name)
      return false;
    if(strlen(st.name) != len) {
      free(st.name);
      return perr(p, open, "a field name with a NUL byte");
    }
    break;
  }
  case '?':
    p->pos++;
    return parse_filter(p, path, depth);
  default:
    st.has_a = parse_int(p, &st.a);
    if(p->failed)
      return false;
    skip_spaces(p);
    if(p->t[p->pos] == ':') {
      p->pos++;
      skip_spaces(p);
      st.kind = ST_SLICE;
      st.has_b = parse_int(p, &st.b);
      if(p->failed)
        return false;
      skip_spaces(p);
      if(p->t[p->pos] == ':')
        return perr(p, p->pos, "slice steps ([start:end:step]) are not "
                    "supported");
    }
    else if(!st.has_a)
      return perr(p, p->pos, "expected an index, a slice, '*', a quoted "
                  "name or a filter after '[', found %s",
                  shown(p, p->pos, sb, sizeof(sb)));
    else
      st.kind = ST_INDEX;
    break;
  }
  skip_spaces(p);
  if(p->t[p->pos] == ',') {
    step_clear(&st);
    return perr(p, p->pos, "unions ([a,b]) are not supported");
  }
  if(!expect(p, ']', "']'")) {
    step_clear(&st);
    return false;
  }
  if(push_step(p, path, &st))
    return true;
  step_clear(&st);
  return false;
}

/* [$|@] then .field .* [..] steps, up to whatever ends the path (left for
 * the caller to check). */
static bool parse_path(jparser *p, jp_path *out, bool in_filter, int depth)
{
  const char *t = p->t;
  if(t[p->pos] == '$' || t[p->pos] == '@')
    p->pos++;
  for(;;) {
    char c = t[p->pos];
    if(c == '[') {
      p->pos++;
      if(!parse_bracket(p, out, depth))
        return false;
      continue;
    }
    if(c != '.')
      return true;
    p->pos++;
    c = t[p->pos];
    if(c == '.')
      return perr(p, p->pos - 1, "recursive descent (..) is not supported");
    if(c == '*') {
      jp_step st;
      memset(&st, 0, sizeof(st));
      st.kind = ST_WILD;
      p->pos++;
      if(!push_step(p, out, &st))
        return false;
      continue;
    }
    if(ends_field(c, in_filter))
      continue; /* "{.}": the node itself; ".[0]" as "[0]" */
    {
      dynbuf b;
      jp_step st;
      size_t start = p->pos;
      dynbuf_init(&b, JP_MAX_STRING);
      while(!ends_field(t[p->pos], in_filter)) {
        char ch = t[p->pos];
        if(ch == '\\' && t[p->pos + 1]) /* {.a\.b}: a field "a.b" */
          ch = t[++p->pos];
        p->pos++;
        if(dynbuf_add(&b, &ch, 1)) {
          dynbuf_free(&b);
          return perr(p, start, "field name too long");
        }
      }
      memset(&st, 0, sizeof(st));
      st.kind = ST_FIELD;
      st.name = dynbuf_take(&b);
      if(!st.name)
        return nomem(p);
      if(!push_step(p, out, &st)) {
        free(st.name);
        return false;
      }
    }
  }
}

static bool add_node(jparser *p, ctl_jsonpath *jp, const jp_node *n)
{
  if(jp->n == jp->cap) {
    size_t nc = jp->cap ? jp->cap * 2 : 8;
    jp_node *v = realloc(jp->nodes, nc * sizeof(*v));
    if(!v)
      return nomem(p);
    jp->nodes = v;
    jp->cap = nc;
  }
  jp->nodes[jp->n++] = *n;
  return true;
}

static bool add_text(jparser *p, ctl_jsonpath *jp, const char *s, size_t len,
                     size_t col)
{
  jp_node n;
  memset(&n, 0, sizeof(n));
  n.kind = N_TEXT;
  n.col = col;
  n.len = len;
  n.text = malloc(len + 1);
  if(!n.text)
    return nomem(p);
  memcpy(n.text, s, len);
  n.text[len] = 0;
  if(add_node(p, jp, &n))
    return true;
  free(n.text);
  return false;
}

/* A keyword ("range", "end") at p->pos, followed by a space or '}'. */
static bool keyword(const jparser *p, const char *kw)
{
  size_t l = strlen(kw);
  if(strncmp(p->t + p->pos, kw, l))
    return false;
  return is_space(p->t[p->pos + l]) || p->t[p->pos + l] == '}';
}

/* One action; p->pos is at its '{'. open/n_open: the ranges not yet
 * ended (indices into jp->nodes). */
static bool parse_action(jparser *p, ctl_jsonpath *jp, size_t *open,
                         size_t *n_open)
{
  size_t start = p->pos;
  jp_node n;
  char sb[32];
  memset(&n, 0, sizeof(n));
  n.col = start + 1;
  p->pos++;
  skip_spaces(p);
  if(keyword(p, "end")) {
    p->pos += 3;
    if(!*n_open)
      return perr(p, start, "{end} without a {range}");
    n.kind = N_END;
  }
  else if(keyword(p, "range")) {
    p->pos += 5;
    skip_spaces(p);
    if(*n_open >= JP_MAX_DEPTH)
      return perr(p, start, "ranges nested too deep");
    n.kind = N_RANGE;
    if(!strchr("$@.[", p->t[p->pos]) || !p->t[p->pos])
      return perr(p, p->pos, "{range} needs a path, as in "
                  "{range .items[*]}");
    if(!parse_path(p, &n.path, false, 0)) {
      path_clear(&n.path);
      return false;
    }
  }
  else if(p->t[p->pos] == '"' || p->t[p->pos] == '\'') {
    n.kind = N_TEXT;
    n.text = parse_quoted(p, &n.len);
    if(!n.text)
      return false;
  }
  else if(p->t[p->pos] && strchr("$@.[", p->t[p->pos])) {
    n.kind = N_EXPR;
    if(!parse_path(p, &n.path, false, 0)) {
      path_clear(&n.path);
      return false;
    }
  }
  else if(p->t[p->pos] == '}')
    return perr(p, start, "empty action {}");
  else if(!p->t[p->pos])
    return perr(p, start, "unclosed action");
  else {
    size_t w = strcspn(p->t + p->pos, " \t\r\n.[}");
    if(w && (size_t)(strspn(p->t + p->pos,
                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
                            "WXYZ0123456789_-")) >= w)
      return perr(p, p->pos, "unrecognized identifier \"%.*s\" (a field "
                  "path starts with '.', as in {.%.*s})", (int)w,
                  p->t + p->pos, (int)w, p->t + p->pos);
    return perr(p, p->pos, "unrecognized character %s in an action",
                shown(p, p->pos, sb, sizeof(sb)));
  }
  skip_spaces(p);
  if(p->t[p->pos] != '}') {
    if(!p->t[p->pos])
      perr(p, start, "unclosed action");
    else
      perr(p, p->pos, "unexpected %s in an action",
           shown(p, p->pos, sb, sizeof(sb)));
    free(n.text);
    path_clear(&n.path);
    return false;
  }
  p->pos++;
  if(!add_node(p, jp, &n)) {
    free(n.text);
    path_clear(&n.path);
    return false;
  }
  if(n.kind == N_RANGE)
    open[(*n_open)++] = jp->n - 1;
  else if(n.kind == N_END)
    jp->nodes[open[--(*n_open)]].end = jp->n - 1;
  return true;
}

ctl_jsonpath *ctl_jsonpath_parse(const char *tmpl, char *err, size_t errlen)
{
  jparser p;
  ctl_jsonpath *jp = calloc(1, sizeof(*jp));
  size_t open[JP_MAX_DEPTH], n_open = 0;
  memset(&p, 0, sizeof(p));
  p.t = tmpl;
  p.err = err;
  p.errlen = errlen;
  if(errlen)
    err[0] = 0;
  if(!jp) {
    nomem(&p);
    return NULL;
  }
  while(tmpl[p.pos] && !p.failed) {
    if(tmpl[p.pos] == '{') {
      parse_action(&p, jp, open, &n_open);
      continue;
    }
    {
      size_t start = p.pos, len = strcspn(tmpl + p.pos, "{");
      p.pos += len;
      add_text(&p, jp, tmpl + start, len, start + 1);
    }
  }
  if(!p.failed && n_open)
    perr(&p, jp->nodes[open[n_open - 1]].col - 1,
         "{range} without an {end}");
  if(p.failed) {
    ctl_jsonpath_free(jp);
    return NULL;
  }
  return jp;
}

/* --------------------------------------------------------- evaluation */

typedef struct jvec {
  json_object **v;
  size_t n, cap;
} jvec;

static sc_err jvec_push(jvec *a, json_object *o)
{
  if(a->n == a->cap) {
    size_t nc = a->cap ? a->cap * 2 : 16;
    json_object **v = realloc(a->v, nc * sizeof(*v));
    if(!v)
      return SC_ERR_NOMEM;
    a->v = v;
    a->cap = nc;
  }
  a->v[a->n++] = o;
  return SC_OK;
}

static void jvec_free(jvec *a)
{
  free(a->v);
  a->v = NULL;
  a->n = a->cap = 0;
}

static sc_err walk(const jp_path *p, size_t i, json_object *v, jvec *out);

static int cmp_values(json_object *a, json_object *lit, bool *comparable)
{
  json_type ta = json_object_get_type(a), tl = json_object_get_type(lit);
  *comparable = true;
  if((ta == json_type_int || ta == json_type_double) &&
     (tl == json_type_int || tl == json_type_double)) {
    if(ta == json_type_int && tl == json_type_int) {
      int64_t x = json_object_get_int64(a), y = json_object_get_int64(lit);
      return x < y ? -1 : x > y;
    }
    {
      double x = json_object_get_double(a), y = json_object_get_double(lit);
      return x < y ? -1 : x > y;
    }
  }
  if(ta == json_type_string && tl == json_type_string) {
    const char *x = json_object_get_string(a), *y = json_object_get_string(lit);
    size_t lx = (size_t)json_object_get_string_len(a),
           ly = (size_t)json_object_get_string_len(lit);
    int c = memcmp(x, y, lx < ly ? lx : ly);
    if(c)
      return c < 0 ? -1 : 1;
    return lx < ly ? -1 : lx > ly;
  }
  if(ta == json_type_boolean && tl == json_type_boolean)
    return json_object_get_boolean(a) - json_object_get_boolean(lit);
  *comparable = false;
  return 0;
}

/* Does element e pass filter step s? */
static sc_err filter_match(const jp_step *s, json_object *e, bool *match)
{
  jvec r = {NULL, 0, 0};
  size_t i;
  sc_err err = walk(s->lhs, 0, e, &r);
  *match = false;
  for(i = 0; !err && i < r.n && !*match; i++) {
    bool comparable;
    int c;
    if(s->op == OP_EXISTS) {
      *match = r.v[i] != NULL;
      continue;
    }
    c = cmp_values(r.v[i], s->lit, &comparable);
    switch(s->op) {
    case OP_EQ: *match = comparable && c == 0; break;
    case OP_NE: *match = !comparable || c != 0; break;
    case OP_LT: *match = comparable && c < 0; break;
    case OP_LE: *match = comparable && c <= 0; break;
    case OP_GT: *match = comparable && c > 0; break;
    case OP_GE: *match = comparable && c >= 0; break;
    case OP_EXISTS: default: break;
    }
  }
  jvec_free(&r);
  return err;
}

/* Apply steps i.. of p to v, collecting the results in out. */
static sc_err walk(const jp_path *p, size_t i, json_object *v, jvec *out)
{
  const jp_step *s;
  sc_err err = SC_OK;
  size_t k, n;
  if(i == p->n)
    return jvec_push(out, v);
  s = &p->steps[i];
  switch(s->kind) {
  case ST_FIELD: {
    json_object *c;
    if(json_object_is_type(v, json_type_object) &&
       json_object_object_get_ex(v, s->name, &c))
      err = walk(p, i + 1, c, out);
    break;
  }
  case ST_WILD:
    if(json_object_is_type(v, json_type_object)) {
      json_object_object_foreach(v, key, val) {
        (void)key;
        err = walk(p, i + 1, val, out);
        if(err)
          break;
      }
    }
    else if(json_object_is_type(v, json_type_array)) {
      n = json_object_array_length(v);
      for(k = 0; k < n && !err; k++)
        err = walk(p, i + 1, json_object_array_get_idx(v, k), out);
    }
    break;
  case ST_INDEX: {
    long long idx = s->a, len;
    if(!json_object_is_type(v, json_type_array))
      break;
    len = (long long)json_object_array_length(v);
    if(idx < 0)
      idx += len;
    if(idx >= 0 && idx < len)
      err = walk(p, i + 1, json_object_array_get_idx(v, (size_t)idx), out);
    break;
  }
  case ST_SLICE: {
    long long len, a, b;
    if(!json_object_is_type(v, json_type_array))
      break;
    len = (long long)json_object_array_length(v);
    a = s->has_a ? s->a : 0;
    b = s->has_b ? s->b : len;
    if(a < 0)
      a += len;
    if(b < 0)
      b += len;
    if(a < 0)
      a = 0;
    if(b > len)
      b = len;
    for(; a < b && !err; a++)
      err = walk(p, i + 1, json_object_array_get_idx(v, (size_t)a), out);
    break;
  }
  case ST_FILTER:
    if(!json_object_is_type(v, json_type_array))
      break;
    n = json_object_array_length(v);
    for(k = 0; k < n && !err; k++) {
      json_object *e = json_object_array_get_idx(v, k);
      bool m;
      err = filter_match(s, e, &m);
      if(!err && m)
        err = walk(p, i + 1, e, out);
    }
    break;
  }
  return err;
}

static sc_err print_value(json_object *v, dynbuf *out)
{
  char num[32];
  switch(json_object_get_type(v)) {
  case json_type_string:
    return dynbuf_add(out, json_object_get_string(v),
                      (size_t)json_object_get_string_len(v));
  case json_type_int:
    snprintf(num, sizeof(num), "%lld", (long long)json_object_get_int64(v));
    return dynbuf_addstr(out, num);
  case json_type_null:
    return dynbuf_addstr(out, "null");
  case json_type_boolean:
  case json_type_double:
  case json_type_object:
  case json_type_array:
  default: {
    const char *s = json_object_to_json_string_ext(
      v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    return s ? dynbuf_addstr(out, s) : SC_ERR_NOMEM;
  }
  }
}

static sc_err exec_nodes(const ctl_jsonpath *jp, size_t from, size_t to,
                         json_object *cur, dynbuf *out)
{
  size_t i, k;
  sc_err err = SC_OK;
  for(i = from; i < to && !err; i++) {
    const jp_node *n = &jp->nodes[i];
    jvec r = {NULL, 0, 0};
    switch(n->kind) {
    case N_TEXT:
      err = dynbuf_add(out, n->text, n->len);
      break;
    case N_EXPR:
      err = walk(&n->path, 0, cur, &r);
      for(k = 0; k < r.n && !err; k++) {
        if(k)
          err = dynbuf_add(out, " ", 1);
        if(!err)
          err = print_value(r.v[k], out);
      }
      break;
    case N_RANGE:
      err = walk(&n->path, 0, cur, &r);
      for(k = 0; k < r.n && !err; k++)
        err = exec_nodes(jp, i + 1, n->end, r.v[k], out);
      i = n->end;
      break;
    case N_END:
    default:
      break;
    }
    jvec_free(&r);
  }
  return err;
}

sc_err ctl_jsonpath_exec(const ctl_jsonpath *jp, json_object *root,
                         dynbuf *out)
{
  return exec_nodes(jp, 0, jp->n, root, out);
}
