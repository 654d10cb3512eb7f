/* Tests of api/fields.c, the Session's field table:
 *  - deploy/crd.yaml's openAPIV3Schema says what the table says: every
 *    spec and status property is a row and every row a property, with the
 *    same type, the same limits (lengths, patterns, enums, entry caps,
 *    duration bounds, defaults, required lists) where the CRD states them;
 *    the metadata the CRD describes are rows too. The check is shown to
 *    fail on a CRD or a table that differ by one field or one limit.
 *  - the rows cover their C structs (no member left without a row), so a
 *    member added to api/session.h without a row fails here.
 * Run from the repository root (make does), or set TEST_CRD. */
#include "test/harness.h"

#include <stdarg.h>
#include <stddef.h>

#include "api/duration.h"
#include "api/fields.h"
#include "api/rules.h"
#include "api/yamltree.h"
#include "lib/dynbuf.h"

static const char *crd_path(void)
{
  const char *p = getenv("TEST_CRD");
  return p ? p : "deploy/crd.yaml";
}

static char *read_text(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  dynbuf b;
  char chunk[8192];
  size_t r;
  char *out;
  if(!f)
    return NULL;
  dynbuf_init(&b, 1 << 20);
  while((r = fread(chunk, 1, sizeof(chunk), f)) > 0)
    if(dynbuf_add(&b, chunk, r))
      break;
  fclose(f);
  *len = dynbuf_len(&b);
  out = dynbuf_take(&b);
  dynbuf_free(&b);
  return out;
}

/* ------------------------------------------------------------- the check */

typedef struct check {
  const sf_table *meta, *spec, *status;
  dynbuf out;     /* one mismatch a line */
  int n;
  bool parsed;
} check;

static void bad(check *ck, const char *path, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
static void bad(check *ck, const char *path, const char *fmt, ...)
{
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  dynbuf_printf(&ck->out, "%s: %s\n", path, msg);
  ck->n++;
}

static const ynode *get(const ynode *m, const char *key)
{
  return m && m->kind == YK_MAP ? ynode_get(m, key) : NULL;
}

static const char *sval(const ynode *m, const char *key)
{
  const ynode *v = get(m, key);
  return v && v->kind == YK_SCALAR ? v->val : NULL;
}

/* The CRD's text of key in p equals want (both absent is equal). */
static void same(check *ck, const char *path, const ynode *p,
                 const char *key, const char *want)
{
  const char *got = sval(p, key);
  if(!got && !want)
    return;
  if(!got || !want || strcmp(got, want))
    bad(ck, path, "%s: the CRD says %s, the field table %s", key,
        got ? got : "nothing", want ? want : "nothing");
}

static void same_num(check *ck, const char *path, const ynode *p,
                     const char *key, size_t want)
{
  char buf[32];
  snprintf(buf, sizeof(buf), "%zu", want);
  same(ck, path, p, key, want ? buf : NULL);
}

/* A CEL rule of p's x-kubernetes-validations contains text. */
static bool has_rule(const ynode *p, const char *text)
{
  const ynode *v = get(p, "x-kubernetes-validations");
  size_t i;
  for(i = 0; v && v->kind == YK_SEQ && i < v->n; i++) {
    const char *r = sval(v->kids[i], "rule");
    if(r && strstr(r, text))
      return true;
  }
  return false;
}

static void want_rule(check *ck, const char *path, const ynode *p,
                      const char *text)
{
  if(!has_rule(p, text))
    bad(ck, path, "the CRD has no rule with \"%s\"", text);
}

/* The CRD's enum of p equals names (the "" of an unset enum left out). */
static void same_enum(check *ck, const char *path, const ynode *p,
                      const char *const *names)
{
  const ynode *e = get(p, "enum");
  size_t i, j = 0;
  if(!names && !e)
    return;
  if(!names || !e || e->kind != YK_SEQ) {
    bad(ck, path, "enum: the CRD and the field table differ in having one");
    return;
  }
  for(i = 0; names[i]; i++) {
    if(!*names[i])
      continue;
    if(j >= e->n || strcmp(e->kids[j]->val, names[i]))
      bad(ck, path, "enum: the field table's %s is not the CRD's value %zu",
          names[i], j + 1);
    j++;
  }
  if(j != e->n)
    bad(ck, path, "enum: the CRD has %zu values, the field table %zu", e->n,
        j);
}

/* The pattern a string rule means in the CRD (RE2), or NULL. */
static const char *rule_pattern(const sf_str_rule *r, char *buf, size_t len)
{
  if(r->rule == SR_DNS_LABEL)
    return "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
  if(r->rule == SR_CHARSET) {
    snprintf(buf, len, "^[A-Za-z0-9%s]+$", r->charset);
    return buf;
  }
  if(r->rule == SR_TEXT)
    return "^[^\\x00-\\x1F\\x7F-\\x9F]*$";
  return NULL;
}

static void check_string(check *ck, const char *path, const ynode *p,
                         const sf_str_rule *r)
{
  char buf[64];
  same_num(ck, path, p, "maxLength", r->max);
  same(ck, path, p, "pattern", rule_pattern(r, buf, sizeof(buf)));
  if(sval(p, "minLength"))
    same(ck, path, p, "minLength", r->rule == SR_CHARSET ? "1" : "0");
}

static void check_table(check *ck, const char *path, const ynode *schema,
                        const sf_table *t, bool partial);

static const char *json_type(const sf_field *f)
{
  switch(f->type) {
  case SF_INT: return "integer";
  case SF_BOOL:
  case SF_OPTBOOL: return "boolean";
  case SF_MAP:
  case SF_OBJECT: return "object";
  case SF_STRLIST:
  case SF_OBJLIST: return "array";
  default: return "string";
  }
}

static void check_map(check *ck, const char *path, const ynode *p,
                      const sf_field *f)
{
  const ynode *ap = get(p, "additionalProperties");
  char buf[96];
  size_t i;
  same_num(ck, path, p, "maxProperties", f->max_items);
  same(ck, path, ap, "type", "string");
  check_string(ck, path, ap, &f->val);
  if(f->key.max) {
    snprintf(buf, sizeof(buf), "size(k) >= 1 && size(k) <= %zu", f->key.max);
    want_rule(ck, path, p, buf);
  }
  if(f->key.rule == SR_META_KEY) {
    snprintf(buf, sizeof(buf), "!k.startsWith('%s')", SESSION_TAG_PREFIX);
    want_rule(ck, path, p, buf);
  }
  for(i = 0; f->key.rule == SR_ENV_NAME && manifest_env_denied[i]; i++) {
    snprintf(buf, sizeof(buf), "!('%s' in self)", manifest_env_denied[i]);
    want_rule(ck, path, p, buf);
  }
}

static void check_row(check *ck, const char *path, const ynode *p,
                      const sf_field *f, bool validated)
{
  char buf[64], rule[96];
  same(ck, path, p, "type", json_type(f));
  same(ck, path, p, "default", f->dflt);
  switch(f->type) {
  case SF_STR:
    check_string(ck, path, p, &f->val);
    same_enum(ck, path, p, f->names);
    break;
  case SF_ENUM: same_enum(ck, path, p, f->names); break;
  case SF_TIME: same(ck, path, p, "format", "date-time"); break;
  case SF_INT:
    same(ck, path, p, "format", "int64");
    same(ck, path, p, "minimum", f->flags & SF_NONNEG ? "0" : NULL);
    break;
  case SF_DURATION:
    same_num(ck, path, p, "maxLength", f->val.max);
    if(!validated)
      break; /* status: written by the controller only */
    if(f->min_ms > 0) {
      duration_format(f->min_ms, buf, sizeof(buf));
      snprintf(rule, sizeof(rule), "duration(self) >= duration('%s')", buf);
      want_rule(ck, path, p, rule);
    }
    want_rule(ck, path, p,
              "duration(self) <= duration('" SF_MAX_DURATION_TEXT "')");
    break;
  case SF_MAP: check_map(ck, path, p, f); break;
  case SF_STRLIST:
    same(ck, path, get(p, "items"), "type", "string");
    same_num(ck, path, p, "maxItems", f->max_items);
    check_string(ck, path, get(p, "items"), &f->val);
    break;
  case SF_OBJECT: check_table(ck, path, p, f->sub, false); break;
  case SF_OBJLIST:
    same_num(ck, path, p, "maxItems", f->max_items);
    check_table(ck, path, get(p, "items"), f->sub, false);
    break;
  default: break;
  }
}

/* schema (an object's schema) against t. partial: the CRD describes only
 * some of the rows (metadata: the API server knows the rest). */
static void check_table(check *ck, const char *path, const ynode *schema,
                        const sf_table *t, bool partial)
{
  const ynode *props = get(schema, "properties"), *req = get(schema,
                                                             "required");
  char p[FIELDPATH_MAX];
  size_t i, j;
  if(!props || props->kind != YK_MAP) {
    bad(ck, path, "no properties in the CRD");
    return;
  }
  same(ck, path, schema, "type", "object");
  for(i = 0; i + 1 < props->n; i += 2) {
    const ynode *k = props->kids[i];
    fieldpath_key(p, sizeof(p), path, k->val);
    if(!sf_find(t, k->val, k->len))
      bad(ck, p, "in the CRD, not in the field table");
  }
  for(i = 0; i < t->n; i++) {
    const sf_field *f = &t->f[i];
    const ynode *v = get(props, f->name);
    bool in_req = false;
    fieldpath_key(p, sizeof(p), path, f->name);
    if(!v) {
      if(!partial)
        bad(ck, p, "in the field table, not in the CRD");
      continue;
    }
    check_row(ck, p, v, f, t == ck->spec);
    for(j = 0; req && req->kind == YK_SEQ && j < req->n; j++)
      if(!strcmp(req->kids[j]->val, f->name))
        in_req = true;
    if(!partial && in_req != !!(f->flags & SF_REQUIRED))
      bad(ck, p, "required in the %s only",
          in_req ? "CRD" : "field table");
  }
}

static void on_doc(void *ud, const ynode *root, bool doc_bad)
{
  check *ck = ud;
  const ynode *v = get(get(root, "spec"), "versions"), *s;
  (void)doc_bad;
  if(!v || v->kind != YK_SEQ || !v->n) {
    bad(ck, "spec.versions", "missing");
    return;
  }
  ck->parsed = true;
  s = get(get(v->kids[0], "schema"), "openAPIV3Schema");
  s = get(s, "properties");
  check_table(ck, "metadata", get(s, "metadata"), ck->meta, true);
  check_table(ck, "spec", get(s, "spec"), ck->spec, false);
  check_table(ck, "status", get(s, "status"), ck->status, false);
}

/* The mismatches between the CRD text and the tables, in ck->out. */
static void run_check(check *ck, const char *text, size_t len,
                      const sf_table *spec)
{
  yerrs e = {"crd", 20, NULL, 0, 0, false, false};
  size_t i;
  ck->meta = &sf_meta;
  ck->spec = spec;
  ck->status = &sf_status;
  dynbuf_init(&ck->out, 1 << 20);
  ck->n = 0;
  ck->parsed = false;
  ytree_parse(&e, text, len, on_doc, ck);
  for(i = 0; i < e.n; i++)
    bad(ck, "yaml", "%s", e.v[i].text);
  yerrs_free(&e);
}

static char *replace(const char *text, const char *from, const char *to)
{
  const char *at = strstr(text, from);
  dynbuf b;
  char *out;
  if(!at)
    return NULL;
  dynbuf_init(&b, 1 << 20);
  dynbuf_add(&b, text, (size_t)(at - text));
  dynbuf_addstr(&b, to);
  dynbuf_addstr(&b, at + strlen(from));
  out = dynbuf_take(&b);
  dynbuf_free(&b);
  return out;
}

static bool has_line(const check *ck, const char *text)
{
  return dynbuf_ptr((dynbuf *)&ck->out) &&
         strstr(dynbuf_ptr((dynbuf *)&ck->out), text);
}

TEST(crd_matches_the_field_table)
{
  size_t len = 0;
  char *text = read_text(crd_path(), &len);
  check ck;
  CHECK_MSG(text, "cannot read %s", crd_path());
  run_check(&ck, text, len, &sf_spec);
  free(text);
  if(ck.n)
    fprintf(stderr, "%s", dynbuf_ptr(&ck.out));
  CHECK(ck.parsed);
  CHECK_INT(ck.n, 0);
  dynbuf_free(&ck.out);
}

/* The check is not a formality: one field or one limit of difference on
 * either side is found and named. */
TEST(crd_check_finds_a_difference)
{
  static const struct {
    const char *from, *to, *expect;
  } cases[] = {
    {"              wake:\n",
     "              extraField:\n                type: string\n"
     "              wake:\n",
     "spec.extraField: in the CRD, not in the field table"},
    {"maxProperties: 32", "maxProperties: 33",
     "spec.sandboxMetadata: maxProperties: the CRD says 33, the field "
     "table 32"},
    {"                maxLength: 128\n              sandboxState:",
     "                maxLength: 127\n              sandboxState:",
     "status.sandboxID: maxLength: the CRD says 127, the field table 128"},
    {"enum: [Active, Running, Paused, Ended]",
     "enum: [Active, Running, Paused]", "spec.state: enum"},
    {"!('IFS' in self)", "!('IFX' in self)",
     "spec.envVars: the CRD has no rule with \"!('IFS' in self)\""},
    {"required: [by, at]", "required: [by]",
     "status.createIntent.at: required in the field table only"},
    {"duration(self) >= duration('1s')", "duration(self) >= duration('2s')",
     "spec.idleTimeout: the CRD has no rule with \"duration(self) >= "
     "duration('1s')\""},
  };
  size_t len = 0, i;
  char *text = read_text(crd_path(), &len);
  CHECK_MSG(text, "cannot read %s", crd_path());
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *mut = replace(text, cases[i].from, cases[i].to);
    check ck;
    bool found;
    CHECK_MSG(mut, "case %zu: \"%s\" is not in the CRD", i, cases[i].from);
    run_check(&ck, mut, strlen(mut), &sf_spec);
    free(mut);
    found = has_line(&ck, cases[i].expect);
    if(!found)
      fprintf(stderr, "case %zu found:\n%s", i,
              dynbuf_ptr(&ck.out) ? dynbuf_ptr(&ck.out) : "(nothing)\n");
    dynbuf_free(&ck.out);
    CHECK_MSG(found, "case %zu: no \"%s\"", i, cases[i].expect);
  }
  {
    /* a row the CRD lacks */
    sf_field rows[32];
    sf_table t = sf_spec;
    check ck;
    bool found;
    CHECK(sf_spec.n < 32);
    memcpy(rows, sf_spec.f, sf_spec.n * sizeof(*rows));
    rows[sf_spec.n] = sf_spec.f[0];
    rows[sf_spec.n].name = "newField";
    t.f = rows;
    t.n = sf_spec.n + 1;
    run_check(&ck, text, len, &t);
    found = has_line(&ck, "spec.newField: in the field table, not in the CRD");
    dynbuf_free(&ck.out);
    CHECK(found);
  }
  free(text);
}

/* ----------------------------------------------------- struct coverage */

typedef struct span {
  size_t off, size, align;
  const char *name;
} span;

static size_t add_spans(const sf_table *t, span *s, size_t n)
{
  size_t i;
  for(i = 0; i < t->n; i++) {
    const sf_field *f = &t->f[i];
    size_t sz;
    switch(f->type) {
    case SF_ENUM: sz = sizeof(int); break;
    case SF_BOOL: sz = sizeof(bool); break;
    case SF_OPTBOOL: sz = sizeof(int); break;
    case SF_MAP: sz = sizeof(sc_kvlist); break;
    case SF_OBJECT: n = add_spans(f->sub, s, n); continue;
    default: sz = 8; break; /* pointers and int64 */
    }
    s[n].off = f->off;
    s[n].size = sz;
    s[n].align = sz < 8 ? sz : 8;
    s[n++].name = f->name;
    if(f->type == SF_STRLIST || f->type == SF_OBJLIST) {
      s[n].off = f->off_n;
      s[n].size = s[n].align = sizeof(size_t);
      s[n++].name = f->name;
    }
  }
  return n;
}

/* The rows of t tile its struct: no overlap, and no gap that is more than
 * the padding before the next member (a member without a row leaves one,
 * unless it hides in padding). "" when so, else what is wrong. */
static const char *coverage(const sf_table *t, char *buf, size_t len)
{
  span s[64];
  size_t n = add_spans(t, s, 0), i, j, end = 0;
  for(i = 1; i < n; i++) /* by offset */
    for(j = i; j > 0 && s[j - 1].off > s[j].off; j--) {
      span x = s[j];
      s[j] = s[j - 1];
      s[j - 1] = x;
    }
  for(i = 0; i < n; i++) {
    if(s[i].off < end) {
      snprintf(buf, len, "%s: %s overlaps", t->path, s[i].name);
      return buf;
    }
    if(s[i].off - end >= s[i].align) {
      snprintf(buf, len, "%s: %zu bytes before %s have no row", t->path,
               s[i].off - end, s[i].name);
      return buf;
    }
    end = s[i].off + s[i].size;
  }
  if(t->size - end >= 8) {
    snprintf(buf, len, "%s: %zu bytes at the end have no row", t->path,
             t->size - end);
    return buf;
  }
  return "";
}

TEST(rows_cover_their_structs)
{
  char buf[160];
  sf_field rows[32];
  sf_table t = sf_status;
  size_t i;
  CHECK_STR(coverage(&sf_meta, buf, sizeof(buf)), "");
  CHECK_STR(coverage(&sf_spec, buf, sizeof(buf)), "");
  CHECK_STR(coverage(&sf_status, buf, sizeof(buf)), "");
  CHECK_STR(coverage(&sf_condition, buf, sizeof(buf)), "");
  CHECK_STR(coverage(&sf_volume_mount, buf, sizeof(buf)), "");
  /* and a row left out is found */
  for(i = 0, t.n = 0; i < sf_status.n; i++)
    if(strcmp(sf_status.f[i].name, "sandboxState"))
      rows[t.n++] = sf_status.f[i];
  t.f = rows;
  CHECK_STR(coverage(&t, buf, sizeof(buf)),
            "status: 8 bytes before endAt have no row");
}

/* Copy, compare and free walk every row: a status differing in any one
 * member is not equal, and its copy is. */
TEST(copy_and_equal_see_every_status_row)
{
  session_status a, b;
  session_condition c = {0};
  size_t i;
  memset(&a, 0, sizeof(a));
  a.phase = SESSION_PHASE_RUNNING;
  a.sandbox_id = strdup("sb-1");
  a.sandbox_state = strdup("running");
  a.sandbox_proof = strdup("proof");
  a.end_at = 1000;
  a.tenant_id = strdup("tenant-a");
  a.observed_generation = 2;
  a.reclaimed_generation = 1;
  a.paused_by_controller = true;
  a.applied_idle_timeout_ms = 60000;
  a.create_intent_by = strdup("pod-a");
  a.create_intent_at = 500;
  a.pending_kind = strdup("reclaim");
  a.pending_sandbox_id = strdup("sb-1");
  a.pending_at = 600;
  a.pending_by = strdup("pod-b");
  a.connect_nonce = strdup("n1");
  a.connect_result = strdup("Served");
  a.connect_message = strdup("m");
  a.domain = strdup("cube.example");
  a.envd_address = strdup("https://49983-sb-1.cube.example");
  c.type = "Ready";
  c.status = "True";
  c.reason = "SandboxRunning";
  c.message = "ok";
  c.last_transition_time = 7;
  c.observed_generation = 2;
  CHECK_OK(session_status_set_condition(&a, &c));
  for(i = 0; i < sf_status.n; i++)
    CHECK_MSG(sf_is_set(&sf_status.f[i], &a), "status.%s not set by the test",
              sf_status.f[i].name);
  CHECK_OK(session_status_copy(&b, &a));
  CHECK(session_status_equal(&a, &b));
  b.paused_by_controller = false;
  CHECK(!session_status_equal(&a, &b));
  b.paused_by_controller = true;
  b.create_intent_at = 501;
  CHECK(!session_status_equal(&a, &b));
  b.create_intent_at = 500;
  b.pending_at = 601;
  CHECK(!session_status_equal(&a, &b));
  b.pending_at = 600;
  free(b.tenant_id);
  b.tenant_id = strdup("tenant-b");
  CHECK(!session_status_equal(&a, &b));
  free(b.tenant_id);
  b.tenant_id = strdup("tenant-a");
  free(b.connect_nonce);
  b.connect_nonce = strdup("n2");
  CHECK(!session_status_equal(&a, &b));
  free(b.connect_nonce);
  b.connect_nonce = strdup("n1");
  CHECK(session_status_equal(&a, &b));
  free(b.conditions[0].reason);
  b.conditions[0].reason = strdup("Other");
  CHECK(!session_status_equal(&a, &b));
  session_status_clear(&a);
  session_status_clear(&b);
}

TEST_LIST = {
  T(crd_matches_the_field_table),
  T(crd_check_finds_a_difference),
  T(rows_cover_their_structs),
  T(copy_and_equal_see_every_status_row),
  {0},
};

TEST_MAIN()
