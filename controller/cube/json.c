/*
 * json.c - strict, typed parsing of Cube / E2B response bodies.
 *
 * Rules (docs/cube-client.md): depth-limited strict JSON with UTF-8
 * validation; no NUL byte anywhere (raw or \u0000); the fields we read are
 * type-checked and a wrong one fails the whole body with a message naming
 * the row and the field. Fields we do not read are ignored. A list row we
 * cannot understand fails the whole list: no decision may be taken on a
 * partial view.
 */
#include "controller/cube/cube_int.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 9999-01-01T00:00:00Z: Cube's "never" is 9999-12-31T23:59:59Z */
#define NEVER_MS 253370764800000LL

/* The bytes of a sandbox ID: [A-Za-z0-9-]. */
static const unsigned char id_byte[256] = {
  ['-'] = 1,
  ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1,
  ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
  ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1,
  ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1,
  ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1,
  ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
  ['Y'] = 1, ['Z'] = 1,
  ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1,
  ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1,
  ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1,
  ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
  ['y'] = 1, ['z'] = 1,
};

bool cube_id_valid(const char *id)
{
  size_t i;
  if(!id || !id[0])
    return false;
  for(i = 0; i <= CUBE_ID_MAX && id_byte[(unsigned char)id[i]]; i++)
    ;
  return !id[i] && i <= CUBE_ID_MAX;
}

bool cube_domain_valid(const char *domain)
{
  size_t i, n, host, port_len;
  unsigned long port = 0;
  const char *colon;
  if(!domain || !domain[0])
    return false;
  n = strnlen(domain, CUBE_DOMAIN_MAX + 1);
  if(n > CUBE_DOMAIN_MAX)
    return false;
  colon = strchr(domain, ':');
  host = colon ? (size_t)(colon - domain) : n;
  if(!host)
    return false;
  for(i = 0; i < host; i++) {
    char ch = domain[i];
    bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                 (ch >= '0' && ch <= '9');
    if(!alnum && (i == 0 || (ch != '.' && ch != '-')))
      return false;
  }
  if(!colon)
    return true;
  port_len = n - host - 1;
  if(port_len < 1 || port_len > 5 || colon[1] == '0')
    return false;
  for(i = 1; i <= port_len; i++) {
    if(colon[i] < '0' || colon[i] > '9')
      return false;
    port = port * 10 + (unsigned long)(colon[i] - '0');
  }
  return port <= 65535;
}

cube_dialect cube_id_dialect(const char *id)
{
  size_t i, n = id ? strlen(id) : 0;
  if(n == 32) {
    for(i = 0; i < n; i++)
      if(!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
        return CUBE_DIALECT_UNKNOWN;
    return CUBE_DIALECT_CUBE;
  }
  if(n == 21 && id[0] == 'i') {
    for(i = 1; i < n; i++)
      if(!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'z')))
        return CUBE_DIALECT_UNKNOWN;
    return CUBE_DIALECT_E2B;
  }
  return CUBE_DIALECT_UNKNOWN;
}

/* A short printable rendering of untrusted text for messages. */
static void show(const char *s, size_t len, char *buf, size_t buflen)
{
  size_t i, o = 0;
  for(i = 0; i < len && o + 4 < buflen; i++) {
    unsigned char ch = (unsigned char)s[i];
    buf[o++] = (ch < 0x20 || ch == 0x7f || ch == '"') ? '?' : (char)ch;
  }
  if(i < len && o + 3 < buflen) {
    memcpy(buf + o, "...", 3);
    o += 3;
  }
  buf[o] = '\0';
}

/* Numbers json-c accepted but could not hold: 1e999 (inf) and integers
 * past int64 (saturated). Any of them anywhere fails the body. */
static bool numbers_ok(json_object *o)
{
  size_t i, n;
  switch(json_object_get_type(o)) {
  case json_type_double:
    return isfinite(json_object_get_double(o));
  case json_type_int: {
    int64_t v = json_object_get_int64(o);
    return v != INT64_MAX && v != INT64_MIN;
  }
  case json_type_array:
    n = json_object_array_length(o);
    for(i = 0; i < n; i++)
      if(!numbers_ok(json_object_array_get_idx(o, i)))
        return false;
    return true;
  case json_type_object: {
    struct json_object_iterator it = json_object_iter_begin(o);
    struct json_object_iterator end = json_object_iter_end(o);
    for(; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
      if(!numbers_ok(json_object_iter_peek_value(&it)))
        return false;
    return true;
  }
  default:
    return true;
  }
}

static sc_err parse_body(const char *body, size_t len, json_object **out,
                         sc_errbuf *eb)
{
  json_tokener *tok;
  json_object *o;
  enum json_tokener_error jerr;
  size_t end;
  *out = NULL;
  if(memchr(body, '\0', len))
    return sc_errf(eb, SC_ERR_PROTOCOL, "body: NUL byte at offset %zu",
                   (size_t)((const char *)memchr(body, '\0', len) - body));
  tok = json_tokener_new_ex(CUBE_JSON_MAX_DEPTH);
  if(!tok)
    return sc_errf(eb, SC_ERR_NOMEM, "body: out of memory");
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
                                JSON_TOKENER_VALIDATE_UTF8);
  o = json_tokener_parse_ex(tok, body, (int)len);
  jerr = json_tokener_get_error(tok);
  end = json_tokener_get_parse_end(tok);
  if(!o && jerr == json_tokener_continue && len) {
    /* a top-level literal (null, true, 12) needs an end marker */
    o = json_tokener_parse_ex(tok, "", 1);
    jerr = json_tokener_get_error(tok);
  }
  json_tokener_free(tok);
  if(jerr != json_tokener_success) { /* (a JSON null is o == NULL) */
    json_object_put(o);
    if(jerr == json_tokener_continue ||
       jerr == json_tokener_error_parse_eof)
      return sc_errf(eb, SC_ERR_PROTOCOL, "body: truncated JSON (%zu bytes)",
                     len);
    return sc_errf(eb, SC_ERR_PROTOCOL, "body: invalid JSON at offset %zu: %s",
                   end, json_tokener_error_desc(jerr));
  }
  for(; end < len; end++) {
    char ch = body[end];
    if(ch != ' ' && ch != '\t' && ch != '\r' && ch != '\n') {
      json_object_put(o);
      return sc_errf(eb, SC_ERR_PROTOCOL,
                     "body: trailing data after the JSON at offset %zu", end);
    }
  }
  if(!numbers_ok(o)) {
    json_object_put(o);
    return sc_errf(eb, SC_ERR_PROTOCOL, "body: a number out of range");
  }
  *out = o;
  return SC_OK;
}

/* The string of field `name` of obj. Absent or null: *s NULL (SC_OK).
 * Not a string, or holding a NUL: an error naming the field. */
static sc_err get_str(json_object *obj, const char *pfx, const char *name,
                      const char **s, sc_errbuf *eb)
{
  json_object *v;
  *s = NULL;
  if(!json_object_object_get_ex(obj, name, &v) || !v)
    return SC_OK;
  if(!json_object_is_type(v, json_type_string))
    return sc_errf(eb, SC_ERR_PROTOCOL, "%s%s: expected a string, got %s",
                   pfx, name, json_type_to_name(json_object_get_type(v)));
  *s = json_object_get_string(v);
  if(strlen(*s) != (size_t)json_object_get_string_len(v))
    return sc_errf(eb, SC_ERR_PROTOCOL, "%s%s: contains a NUL byte", pfx,
                   name);
  return SC_OK;
}

/* The `domain` field of obj, if it is a string that cube_domain_valid
 * accepts: *out a copy (malloc'd), else *out NULL. An unfit value is
 * dropped, never an error: the sandbox is still what the answer says,
 * only its address is unknown. SC_ERR_NOMEM is the only failure. */
static sc_err get_domain(json_object *obj, char **out)
{
  json_object *v;
  const char *s;
  *out = NULL;
  if(!json_object_object_get_ex(obj, "domain", &v) || !v ||
     !json_object_is_type(v, json_type_string))
    return SC_OK;
  s = json_object_get_string(v);
  if(strlen(s) != (size_t)json_object_get_string_len(v) ||
     !cube_domain_valid(s))
    return SC_OK;
  *out = strdup(s);
  return *out ? SC_OK : SC_ERR_NOMEM;
}

static sc_err parse_time(const char *pfx, const char *name, const char *s,
                         sc_time *t, sc_errbuf *eb)
{
  char shown[80];
  if(sctime_parse_rfc3339(s, t) == SC_OK)
    return SC_OK;
  show(s, strlen(s), shown, sizeof(shown));
  return sc_errf(eb, SC_ERR_PROTOCOL, "%s%s: \"%s\" is not an RFC 3339 time",
                 pfx, name, shown);
}

static sc_err parse_row(json_object *o, const char *pfx, cube_sandbox *sb,
                        sc_errbuf *eb)
{
  const char *s;
  char shown[80];
  json_object *md;
  sc_err err;

  memset(sb, 0, sizeof(*sb));
  if(!json_object_is_type(o, json_type_object)) {
    err = sc_errf(eb, SC_ERR_PROTOCOL, "%sexpected an object, got %s", pfx,
                  json_type_to_name(json_object_get_type(o)));
    goto out;
  }
  err = get_str(o, pfx, "sandboxID", &s, eb);
  if(err)
    goto out;
  if(!s) {
    err = sc_errf(eb, SC_ERR_PROTOCOL, "%ssandboxID: missing", pfx);
    goto out;
  }
  if(!cube_id_valid(s)) {
    show(s, strlen(s), shown, sizeof(shown));
    err = sc_errf(eb, SC_ERR_PROTOCOL,
                  "%ssandboxID: \"%s\" is not 1..%d bytes of [A-Za-z0-9-]",
                  pfx, shown, CUBE_ID_MAX);
    goto out;
  }
  if(!(sb->sandbox_id = strdup(s)))
    goto nomem;

  err = get_str(o, pfx, "templateID", &s, eb);
  if(err)
    goto out;
  if(s && !(sb->template_id = strdup(s)))
    goto nomem;

  if(get_domain(o, &sb->domain))
    goto nomem;

  err = get_str(o, pfx, "state", &s, eb);
  if(err)
    goto out;
  if(!s) {
    err = sc_errf(eb, SC_ERR_PROTOCOL, "%sstate: missing", pfx);
    goto out;
  }
  sb->state = cube_sb_state_parse(s);
  if(sb->state == CUBE_SB_UNKNOWN) {
    show(s, strlen(s), shown, sizeof(shown));
    err = sc_errf(eb, SC_ERR_PROTOCOL,
                  "%sstate: \"%s\" is not running, pausing or paused", pfx,
                  shown);
    goto out;
  }

  err = get_str(o, pfx, "startedAt", &s, eb);
  if(err)
    goto out;
  if(!s) {
    err = sc_errf(eb, SC_ERR_PROTOCOL, "%sstartedAt: missing", pfx);
    goto out;
  }
  err = parse_time(pfx, "startedAt", s, &sb->started_at, eb);
  if(err)
    goto out;

  err = get_str(o, pfx, "endAt", &s, eb);
  if(err)
    goto out;
  if(s) {
    err = parse_time(pfx, "endAt", s, &sb->end_at, eb);
    if(err)
      goto out;
    if(sb->end_at >= NEVER_MS)
      sb->end_at = 0; /* Cube's "never" for E2B SDK agents */
  }

  if(json_object_object_get_ex(o, "metadata", &md) && md) {
    struct json_object_iterator it, itend;
    if(!json_object_is_type(md, json_type_object)) {
      err = sc_errf(eb, SC_ERR_PROTOCOL,
                    "%smetadata: expected an object, got %s", pfx,
                    json_type_to_name(json_object_get_type(md)));
      goto out;
    }
    it = json_object_iter_begin(md);
    itend = json_object_iter_end(md);
    for(; !json_object_iter_equal(&it, &itend); json_object_iter_next(&it)) {
      const char *k = json_object_iter_peek_name(&it);
      json_object *v = json_object_iter_peek_value(&it);
      show(k, strlen(k), shown, sizeof(shown));
      if(!v || !json_object_is_type(v, json_type_string)) {
        err = sc_errf(eb, SC_ERR_PROTOCOL,
                      "%smetadata.%s: expected a string, got %s", pfx, shown,
                      v ? json_type_to_name(json_object_get_type(v))
                        : "null");
        goto out;
      }
      if(strlen(json_object_get_string(v)) !=
         (size_t)json_object_get_string_len(v)) {
        err = sc_errf(eb, SC_ERR_PROTOCOL,
                      "%smetadata.%s: contains a NUL byte", pfx, shown);
        goto out;
      }
      if(!k[0]) {
        err = sc_errf(eb, SC_ERR_PROTOCOL, "%smetadata: an empty key", pfx);
        goto out;
      }
      if(sc_kvlist_set(&sb->metadata, k, json_object_get_string(v)))
        goto nomem;
    }
  }
  return SC_OK;
nomem:
  err = sc_errf(eb, SC_ERR_NOMEM, "%sout of memory", pfx);
out:
  cube_sandbox_clear(sb);
  return err;
}

sc_err cube_parse_list(const char *body, size_t len, cube_sandbox **rows,
                       size_t *n, sc_errbuf *eb)
{
  /* one scan when the body is plain (json_fast.c); json-c decides the
   * rest, and says what is wrong */
  if(cube_parse_list_fast(body, len, rows, n) == SC_OK)
    return SC_OK;
  return cube_parse_list_tree(body, len, rows, n, eb);
}

sc_err cube_parse_list_tree(const char *body, size_t len, cube_sandbox **rows,
                            size_t *n, sc_errbuf *eb)
{
  json_object *o;
  cube_sandbox *v = NULL;
  size_t i, cnt;
  sc_err err;
  *rows = NULL;
  *n = 0;
  err = parse_body(body, len, &o, eb);
  if(err)
    return err;
  if(!json_object_is_type(o, json_type_array)) {
    err = sc_errf(eb, SC_ERR_PROTOCOL, "body: expected a JSON array, got %s",
                  json_type_to_name(json_object_get_type(o)));
    goto out;
  }
  cnt = json_object_array_length(o);
  if(cnt) {
    v = calloc(cnt, sizeof(*v));
    if(!v) {
      err = sc_errf(eb, SC_ERR_NOMEM, "body: out of memory");
      goto out;
    }
  }
  for(i = 0; i < cnt; i++) {
    char pfx[32];
    snprintf(pfx, sizeof(pfx), "row %zu: ", i);
    err = parse_row(json_object_array_get_idx(o, i), pfx, &v[i], eb);
    if(err) {
      while(i--)
        cube_sandbox_clear(&v[i]);
      free(v);
      v = NULL;
      goto out;
    }
  }
  *rows = v;
  *n = cnt;
out:
  json_object_put(o);
  return err;
}

sc_err cube_parse_sandbox(const char *body, size_t len, cube_sandbox *out,
                          sc_errbuf *eb)
{
  json_object *o;
  sc_err err;
  memset(out, 0, sizeof(*out));
  err = parse_body(body, len, &o, eb);
  if(err)
    return err;
  err = parse_row(o, "", out, eb);
  json_object_put(o);
  return err;
}

sc_err cube_parse_created(const char *body, size_t len, char **id,
                          sc_errbuf *eb)
{
  return cube_parse_created_ex(body, len, id, NULL, eb);
}

sc_err cube_parse_created_ex(const char *body, size_t len, char **id,
                             char **domain, sc_errbuf *eb)
{
  json_object *o;
  const char *s;
  char shown[80];
  sc_err err;
  *id = NULL;
  if(domain)
    *domain = NULL;
  err = parse_body(body, len, &o, eb);
  if(err)
    return err;
  if(!json_object_is_type(o, json_type_object)) {
    err = sc_errf(eb, SC_ERR_PROTOCOL, "body: expected an object, got %s",
                  json_type_to_name(json_object_get_type(o)));
    goto out;
  }
  err = get_str(o, "", "templateID", &s, eb);
  if(err)
    goto out;
  err = get_str(o, "", "sandboxID", &s, eb);
  if(err)
    goto out;
  if(!s) {
    err = sc_errf(eb, SC_ERR_PROTOCOL, "sandboxID: missing");
    goto out;
  }
  if(!cube_id_valid(s)) {
    show(s, strlen(s), shown, sizeof(shown));
    err = sc_errf(eb, SC_ERR_PROTOCOL,
                  "sandboxID: \"%s\" is not 1..%d bytes of [A-Za-z0-9-]",
                  shown, CUBE_ID_MAX);
    goto out;
  }
  if(!(*id = strdup(s)))
    err = sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  else if(domain && get_domain(o, domain)) {
    free(*id);
    *id = NULL;
    err = sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
out:
  json_object_put(o);
  return err;
}

void cube_parse_error_body(const char *body, size_t len, int *code,
                           char *msg, size_t msglen)
{
  json_object *o = NULL, *v;
  *code = 0;
  if(msglen)
    msg[0] = '\0';
  if(!len || parse_body(body, len, &o, NULL))
    return;
  if(json_object_is_type(o, json_type_object)) {
    if(json_object_object_get_ex(o, "code", &v) &&
       json_object_is_type(v, json_type_int)) {
      int64_t c = json_object_get_int64(v);
      if(c >= 100 && c <= 599)
        *code = (int)c;
    }
    if(json_object_object_get_ex(o, "message", &v) &&
       json_object_is_type(v, json_type_string) && msglen)
      show(json_object_get_string(v),
           (size_t)json_object_get_string_len(v), msg, msglen);
  }
  json_object_put(o);
}
