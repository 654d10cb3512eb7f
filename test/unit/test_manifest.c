/* Tests of api/manifest.c: every file of test/data/bad must give exactly
 * the error lines in its "# expect:" comments (FILE stands for its path);
 * every file of test/data/good must decode to the JSON lines of the .json
 * file beside it. Then sources (buffer, directory, stdin, size caps),
 * session_validate() and a few invariants. Run from the repository root
 * (make does), or set TEST_DATA_DIR. */
#include "test/harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/manifest.h"
#include "api/session_json.h"
#include "api/rules.h"
#include "lib/dynbuf.h"

static const char *data_dir(void)
{
  const char *d = getenv("TEST_DATA_DIR");
  return d ? d : "test/data";
}

/* The sorted names in dir ending in ext; returns the count (0 on error). */
static size_t list_dir(const char *dir, const char *ext, char ***out)
{
  DIR *d = opendir(dir);
  struct dirent *de;
  char **v = NULL;
  size_t n = 0, i, j;
  *out = NULL;
  if(!d)
    return 0;
  while((de = readdir(d))) {
    size_t l = strlen(de->d_name), el = strlen(ext);
    char **nv;
    if(l <= el || strcmp(de->d_name + l - el, ext))
      continue;
    nv = realloc(v, (n + 1) * sizeof(*v));
    if(!nv)
      break;
    v = nv;
    v[n++] = strdup(de->d_name);
  }
  closedir(d);
  for(i = 1; i < n; i++) /* insertion sort, few names */
    for(j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
      char *t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  *out = v;
  return n;
}

static void free_names(char **v, size_t n)
{
  size_t i;
  for(i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

/* The whole file; NULL on error. */
static char *slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  dynbuf b;
  char chunk[4096];
  size_t r;
  if(!f)
    return NULL;
  dynbuf_init(&b, 8 * 1024 * 1024);
  while((r = fread(chunk, 1, sizeof(chunk), f)) > 0)
    if(dynbuf_add(&b, chunk, r)) {
      fclose(f);
      dynbuf_free(&b);
      return NULL;
    }
  fclose(f);
  *len = dynbuf_len(&b);
  return dynbuf_take(&b);
}

/* Replace every "FILE" in line by path. */
static char *subst_file(const char *line, size_t len, const char *path)
{
  dynbuf b;
  size_t i = 0;
  dynbuf_init(&b, 64 * 1024);
  while(i < len) {
    if(len - i >= 4 && !memcmp(line + i, "FILE", 4)) {
      dynbuf_addstr(&b, path);
      i += 4;
    }
    else {
      dynbuf_add(&b, line + i, 1);
      i++;
    }
  }
  return dynbuf_take(&b);
}

TEST(bad_manifests_give_exact_errors)
{
  char dir[512], path[1024];
  char **names;
  size_t n, i, checked = 0;
  snprintf(dir, sizeof(dir), "%s/bad", data_dir());
  n = list_dir(dir, ".yaml", &names);
  CHECK_MSG(n >= 40, "only %zu files in %s (run from the repository root)",
            n, dir);
  for(i = 0; i < n; i++) {
    manifest_set set = {0};
    char *text, *p, **expect = NULL;
    size_t len, n_expect = 0, k;
    snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
    text = slurp(path, &len);
    CHECK_MSG(text, "cannot read %s", path);
    /* the "# expect: " lines at the top */
    p = text;
    while((size_t)(p - text) < len && !strncmp(p, "# expect: ", 10)) {
      char *eol = memchr(p, '\n', len - (size_t)(p - text));
      size_t ll = eol ? (size_t)(eol - p) : len - (size_t)(p - text);
      expect = realloc(expect, (n_expect + 1) * sizeof(*expect));
      expect[n_expect++] = subst_file(p + 10, ll - 10, path);
      p = eol ? eol + 1 : text + len;
    }
    free(text);
    if(!n_expect) {
      free(expect);
      free_names(names, n);
      TEST_FAIL_("%s has no \"# expect:\" line", path);
    }
    manifest_read_path(path, NULL, &set);
    for(k = 0; k < n_expect || k < set.n_errors; k++) {
      const char *want = k < n_expect ? expect[k] : "(nothing)";
      const char *got = k < set.n_errors ? set.errors[k] : "(nothing)";
      if(strcmp(want, got)) {
        fprintf(stderr, "  %s: error %zu\n    got      %s\n    expected %s\n",
                path, k + 1, got, want);
        *test_failed_ = 1;
      }
    }
    /* no bad document may yield an object: only documents that are fine
     * on their own (a good one beside a bad one) do */
    for(k = 0; k < set.n; k++) {
      char **errs = NULL;
      size_t ne = 0, e;
      if(session_validate(set.items[k].s, &errs, &ne) != SC_OK) {
        fprintf(stderr, "  %s: item %zu fails session_validate: %s\n", path,
                k, ne ? errs[0] : "?");
        *test_failed_ = 1;
      }
      for(e = 0; e < ne; e++)
        free(errs[e]);
      free(errs);
    }
    for(k = 0; k < n_expect; k++)
      free(expect[k]);
    free(expect);
    manifest_set_free(&set);
    checked++;
  }
  free_names(names, n);
  CHECK(checked >= 40);
}

TEST(good_manifests_decode_to_expected_json)
{
  char dir[512], path[1024], jpath[1024];
  char **names;
  size_t n, i;
  snprintf(dir, sizeof(dir), "%s/good", data_dir());
  n = list_dir(dir, ".yaml", &names);
  CHECK_MSG(n >= 5, "only %zu files in %s", n, dir);
  for(i = 0; i < n; i++) {
    manifest_set set = {0};
    char *want, *line;
    size_t len, k;
    snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
    snprintf(jpath, sizeof(jpath), "%s/%.*s.json", dir,
             (int)(strlen(names[i]) - 5), names[i]);
    want = slurp(jpath, &len);
    if(!want) {
      free_names(names, n);
      TEST_FAIL_("cannot read %s", jpath);
    }
    CHECK_OK(manifest_read_path(path, NULL, &set));
    for(k = 0; k < set.n_errors; k++) {
      fprintf(stderr, "  %s: unexpected error: %s\n", path, set.errors[k]);
      *test_failed_ = 1;
    }
    line = want;
    for(k = 0; k < set.n; k++) {
      char *nl = strchr(line, '\n'), *got = NULL;
      if(nl)
        *nl = '\0';
      session_to_json(set.items[k].s, &got);
      if(!got || strcmp(got, line)) {
        fprintf(stderr, "  %s: item %zu\n    got      %s\n    expected %s\n",
                path, k, got ? got : "(null)", line);
        *test_failed_ = 1;
      }
      CHECK_STR(set.items[k].file, path);
      free(got);
      line = nl ? nl + 1 : line + strlen(line);
    }
    if(*line) {
      fprintf(stderr, "  %s: fewer objects than %s lists\n", path, jpath);
      *test_failed_ = 1;
    }
    free(want);
    manifest_set_free(&set);
  }
  free_names(names, n);
}

static manifest_set read_buf(const char *name, const char *text,
                             size_t max_bytes)
{
  manifest_set set = {0};
  manifest_opts o = {max_bytes, NULL};
  manifest_read_buffer(name, text, strlen(text), &o, &set);
  return set;
}

#define SESSION_HEAD "apiVersion: lea.io/v1alpha1\nkind: Session\n"

TEST(defaults_are_applied)
{
  manifest_set set = read_buf("d.yaml", SESSION_HEAD "metadata: {name: c1}\n"
                                                     "spec: {template: t}\n",
                              0);
  session *s;
  CHECK_INT(set.n_errors, 0);
  CHECK_INT(set.n, 1);
  s = set.items[0].s;
  CHECK_STR(s->meta.namespace_, "default");
  CHECK_INT(s->spec.state, SESSION_STATE_ACTIVE);
  CHECK_INT(s->spec.idle_timeout_ms, 15 * 60 * 1000);
  CHECK_INT(s->spec.reclaim_after_ms, 24 * 3600 * 1000LL);
  CHECK_STR(s->spec.session_id, "c1");
  CHECK_STR(s->spec.tenant_id, "default");
  CHECK_INT(s->spec.wake, 0);
  CHECK_INT(set.items[0].line, 1);
  manifest_set_free(&set);
}

TEST(full_fields_are_read)
{
  char path[1024];
  manifest_set set = {0};
  const session *s;
  snprintf(path, sizeof(path), "%s/good/01-full.yaml", data_dir());
  CHECK_OK(manifest_read_path(path, NULL, &set));
  CHECK_INT(set.n_errors, 0);
  CHECK_INT(set.n, 1);
  s = set.items[0].s;
  CHECK_STR(s->meta.name, "chat-7f3a");
  CHECK_STR(s->meta.namespace_, "tenant-a");
  CHECK_STR(sc_kvlist_get(&s->meta.labels, "app.kubernetes.io/name"), "chat");
  CHECK_STR(sc_kvlist_get(&s->meta.annotations, "note"),
            "free text: any characters,\nincluding line breaks");
  CHECK_STR(s->spec.template_id, "python-data:3.11");
  CHECK_INT(s->spec.state, SESSION_STATE_RUNNING);
  CHECK_INT(s->spec.idle_timeout_ms, 5400000);
  CHECK_INT(s->spec.reclaim_after_ms, 48 * 3600 * 1000LL);
  CHECK_STR(s->spec.session_id, "chat-7f3a.v2");
  CHECK_STR(s->spec.tenant_id, "Tenant_A");
  CHECK_INT(s->spec.env_vars.n, 3);
  CHECK_STR(sc_kvlist_get(&s->spec.env_vars, "EMPTY"), "");
  CHECK_STR(sc_kvlist_get(&s->spec.sandbox_metadata, "team/owner"),
            "Zo\xc3\xab \xc3\x9cnal");
  CHECK_INT(s->spec.wake, 2);
  CHECK_INT(set.items[0].line, 2);
  manifest_set_free(&set);
}

TEST(reclaim_zero_means_never)
{
  manifest_set set =
    read_buf("z.yaml", SESSION_HEAD "metadata: {name: c1}\n"
                                    "spec: {template: t, reclaimAfter: 0}\n",
             0);
  CHECK_INT(set.n_errors, 0);
  CHECK_INT(set.n, 1);
  CHECK_INT(set.items[0].s->spec.reclaim_after_ms, 0);
  manifest_set_free(&set);
}

/* n_read counts every object read, the invalid ones too: each document
 * that is not a List, and each item of a List (the summary line of
 * `sessionctl validate` says "N errors in M objects read"). */
TEST(objects_read_counts_invalid_ones)
{
  manifest_set set =
    read_buf("n.yaml",
             "apiVersion: v1\nkind: List\nitems:\n"
             "- " "apiVersion: lea.io/v1alpha1\n  kind: Session\n"
             "  metadata: {name: ok-1}\n  spec: {template: t}\n"
             "- " "apiVersion: lea.io/v1alpha1\n  kind: Session\n"
             "  metadata: {name: bad-1}\n  spec: {idleTimeout: soon}\n"
             "- 42\n"
             "---\n" SESSION_HEAD "metadata: {name: bad-2}\nspec: {}\n"
             "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
             "---\n[1, 2]\n",
             0);
  CHECK_INT(set.n, 1);
  CHECK_INT(set.n_read, 6);
  CHECK(set.n_errors >= 5);
  manifest_set_free(&set);
}

TEST(empty_buffer_has_no_objects)
{
  manifest_set set = read_buf("e.yaml", "", 0);
  CHECK_INT(set.n, 0);
  CHECK_INT(set.n_errors, 1);
  CHECK_STR(set.errors[0], "e.yaml:1:1: no objects (the file is empty, or "
                           "holds only comments and empty documents)");
  manifest_set_free(&set);
}

TEST(buffer_over_cap_is_refused_before_parsing)
{
  manifest_set set = read_buf("big.yaml", SESSION_HEAD "metadata: {name: a}\n",
                              16);
  CHECK_INT(set.n, 0);
  CHECK_INT(set.n_errors, 1);
  CHECK_STR(set.errors[0], "big.yaml:1:1: file is 62 bytes, over the limit "
                           "of 16 bytes for a manifest");
  manifest_set_free(&set);
}

static char *make_tmpdir(void)
{
  char tmpl[] = "/tmp/test_manifest.XXXXXX";
  char *d = mkdtemp(tmpl);
  return d ? strdup(d) : NULL;
}

static void write_file(const char *dir, const char *name, const char *text,
                       size_t len)
{
  char p[1024];
  FILE *f;
  snprintf(p, sizeof(p), "%s/%s", dir, name);
  f = fopen(p, "wb");
  if(f) {
    fwrite(text, 1, len, f);
    fclose(f);
  }
}

static void remove_tree(const char *dir)
{
  char **names;
  size_t n = list_dir(dir, "", &names), i;
  for(i = 0; i < n; i++) {
    char p[1024];
    if(!strcmp(names[i], ".") || !strcmp(names[i], ".."))
      continue;
    snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
    unlink(p);
  }
  free_names(names, n);
  rmdir(dir);
}

TEST(oversize_file_made_at_run_time)
{
  char *dir = make_tmpdir(), path[1024], want[1200];
  char *big;
  size_t len = MANIFEST_DEFAULT_MAX_BYTES + 1;
  manifest_set set = {0};
  manifest_opts o = {0};
  CHECK(dir);
  big = malloc(len);
  CHECK(big);
  memset(big, '#', len); /* a comment line: valid YAML but too large */
  write_file(dir, "big.yaml", big, len);
  free(big);
  snprintf(path, sizeof(path), "%s/big.yaml", dir);
  CHECK_OK(manifest_read_path(path, NULL, &set));
  snprintf(want, sizeof(want),
           "%s:1:1: file is 1048577 bytes, over the limit of 1048576 bytes "
           "for a manifest",
           path);
  CHECK_INT(set.n_errors, 1);
  CHECK_STR(set.errors[0], want);
  manifest_set_free(&set);
  /* a raised limit takes it */
  o.max_bytes = 2 * 1024 * 1024;
  CHECK_OK(manifest_read_path(path, &o, &set));
  CHECK_INT(set.n_errors, 1); /* now only: no objects */
  CHECK(strstr(set.errors[0], "no objects"));
  manifest_set_free(&set);
  remove_tree(dir);
  free(dir);
}

TEST(directory_reads_yaml_files_sorted_and_finds_duplicates)
{
  char *dir = make_tmpdir(), want[1200];
  manifest_set set = {0};
  static const char a[] = SESSION_HEAD "metadata: {name: c1}\n"
                                       "spec: {template: t}\n";
  static const char b[] = "# b\n" SESSION_HEAD "metadata: {name: c2}\n"
                          "spec: {template: t}\n---\n" SESSION_HEAD
                          "metadata: {name: c1}\nspec: {template: t}\n";
  static const char dj[] = "{\"apiVersion\": \"lea.io/v1alpha1\", "
                           "\"kind\": \"Session\",\n \"metadata\": "
                           "{\"name\": \"c3\"},\n \"spec\": {\"template\": "
                           "\"t\", \"wake\": \"x\"}}\n";
  CHECK(dir);
  write_file(dir, "b.yml", b, strlen(b));
  write_file(dir, "a.yaml", a, strlen(a));
  write_file(dir, "c.txt", "garbage: [", 10);       /* not a manifest name */
  write_file(dir, "d.json", dj, strlen(dj));         /* JSON, as kubectl */
  write_file(dir, ".hidden.yaml", "garbage: [", 10); /* hidden */
  CHECK_OK(manifest_read_path(dir, NULL, &set));
  CHECK_INT(set.n, 2);
  CHECK(strstr(set.items[0].file, "/a.yaml"));
  CHECK_STR(set.items[0].s->meta.name, "c1");
  CHECK(strstr(set.items[1].file, "/b.yml"));
  CHECK_STR(set.items[1].s->meta.name, "c2");
  CHECK_INT(set.n_read, 4);
  CHECK_INT(set.n_errors, 2);
  snprintf(want, sizeof(want),
           "%s/b.yml:9:18: metadata.name: duplicate object default/c1, "
           "first at %s/a.yaml:1",
           dir, dir);
  CHECK_STR(set.errors[0], want);
  /* a JSON file's error has its line and column too */
  snprintf(want, sizeof(want),
           "%s/d.json:3:36: spec.wake: expected an integer, got a string",
           dir);
  CHECK_STR(set.errors[1], want);
  manifest_set_free(&set);
  remove_tree(dir);
  /* an empty directory is an error, not silence */
  CHECK(mkdir(dir, 0700) == 0);
  CHECK_OK(manifest_read_path(dir, NULL, &set));
  snprintf(want, sizeof(want), "%s: no *.yaml, *.yml or *.json files", dir);
  CHECK_INT(set.n_errors, 1);
  CHECK_STR(set.errors[0], want);
  manifest_set_free(&set);
  rmdir(dir);
  free(dir);
}

TEST(missing_path_is_an_error)
{
  manifest_set set = {0};
  CHECK_INT(manifest_read_path("/nonexistent/x.yaml", NULL, &set),
            SC_ERR_NOT_FOUND);
  CHECK_INT(set.n_errors, 1);
  CHECK_STR(set.errors[0],
            "/nonexistent/x.yaml: cannot open: No such file or directory");
  manifest_set_free(&set);
}

/* Read "-" with fd 0 pointed at a file holding text. */
static sc_err read_stdin(const char *text, size_t max, manifest_set *set)
{
  char *dir = make_tmpdir(), p[1024];
  int fd, saved;
  manifest_opts o = {max, NULL};
  sc_err err;
  if(!dir)
    return SC_ERR_IO;
  write_file(dir, "in.yaml", text, strlen(text));
  snprintf(p, sizeof(p), "%s/in.yaml", dir);
  fd = open(p, O_RDONLY);
  saved = dup(0);
  dup2(fd, 0);
  close(fd);
  err = manifest_read_path("-", &o, set);
  dup2(saved, 0);
  close(saved);
  remove_tree(dir);
  free(dir);
  return err;
}

TEST(stdin_is_read_with_a_cap)
{
  manifest_set set = {0};
  static const char text[] = SESSION_HEAD "metadata: {name: c1}\n"
                                          "spec: {template: t, wake: x}\n";
  CHECK_OK(read_stdin(text, 0, &set));
  CHECK_INT(set.n_errors, 1);
  CHECK_STR(set.errors[0],
            "<stdin>:4:27: spec.wake: expected an integer, got a string");
  manifest_set_free(&set);
  CHECK_OK(read_stdin(text, 10, &set));
  CHECK_INT(set.n_errors, 1);
  CHECK_STR(set.errors[0], "<stdin>:1:1: file is over the limit of 10 bytes "
                           "for a manifest");
  manifest_set_free(&set);
}

TEST(error_flood_is_capped)
{
  dynbuf b;
  manifest_set set = {0};
  int i;
  dynbuf_init(&b, 1 << 20);
  dynbuf_addstr(&b, SESSION_HEAD "metadata: {name: c1}\nspec:\n"
                                 "  template: t\n");
  for(i = 0; i < 300; i++)
    dynbuf_printf(&b, "  x%d: 1\n", i);
  manifest_read_buffer("f.yaml", dynbuf_ptr(&b), dynbuf_len(&b), NULL, &set);
  dynbuf_free(&b);
  CHECK_INT(set.n_errors, 101);
  CHECK_STR(set.errors[0], "f.yaml:6:3: spec.x0: unknown field");
  CHECK_STR(set.errors[100],
            "f.yaml:105:3: too many errors (100), not reading further");
  manifest_set_free(&set);
}

/* Valid manifests survive manifest -> JSON -> session -> JSON intact.
 * (File by file: read as a directory, good/ would also give its *.json.) */
TEST(manifest_json_round_trip)
{
  char dir[512], path[1024];
  manifest_set set = {0};
  char **names;
  size_t i, n;
  snprintf(dir, sizeof(dir), "%s/good", data_dir());
  n = list_dir(dir, ".yaml", &names);
  for(i = 0; i < n; i++) {
    snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
    CHECK_OK(manifest_read_path(path, NULL, &set));
  }
  free_names(names, n);
  CHECK_INT(set.n_errors, 0);
  CHECK(set.n >= 8);
  for(i = 0; i < set.n; i++) {
    char *j1 = NULL, *j2 = NULL;
    session *back = NULL;
    sc_errbuf eb = {""};
    CHECK_OK(session_to_json(set.items[i].s, &j1));
    CHECK_MSG(session_from_json(j1, strlen(j1), &back, &eb) == SC_OK, "%s",
              eb.msg);
    CHECK(session_spec_equal(&back->spec, &set.items[i].s->spec));
    CHECK_OK(session_to_json(back, &j2));
    CHECK_STR(j2, j1);
    free(j1);
    free(j2);
    session_free(back);
  }
  manifest_set_free(&set);
}

/* session_validate on objects built in code. */
static session *valid_session(void)
{
  session *s = session_new();
  s->meta.name = strdup("chat-1");
  s->spec.template_id = strdup("python-data");
  session_apply_defaults(s);
  return s;
}

static void set_str(char **p, const char *v)
{
  free(*p);
  *p = v ? strdup(v) : NULL;
}

enum { M_NAME, M_NS, M_TEMPLATE, M_STATE, M_IDLE, M_RECLAIM, M_SID, M_TID,
       M_LABEL, M_ENV, M_META, M_WAKE, M_ANNOT };

static const struct {
  int what;
  const char *s;
  long long n;
  const char *err; /* NULL: valid */
} validate_cases[] = {
  {M_NAME, "chat-2", 0, NULL},
  {M_NAME, NULL, 0, "metadata.name: required field missing"},
  {M_NAME, "Chat", 0,
   "metadata.name: \"Chat\" is not a DNS-1123 label (use a-z, 0-9 and '-', "
   "starting and ending with a letter or digit)"},
  {M_NAME, "", 0, "metadata.name: must not be empty"},
  {M_NS, "-x", 0,
   "metadata.namespace: \"-x\" is not a DNS-1123 label (use a-z, 0-9 and "
   "'-', starting and ending with a letter or digit)"},
  {M_TEMPLATE, "a:b.c_d-e", 0, NULL},
  {M_TEMPLATE, NULL, 0, "spec.template: required field missing"},
  {M_TEMPLATE, "a/b", 0,
   "spec.template: \"a/b\" is not a valid template name (use 1-128 "
   "characters of A-Z a-z 0-9 . _ : -)"},
  {M_STATE, NULL, 3, NULL},
  {M_STATE, NULL, 9, "spec.state: is not a state (use Active, Running, "
                     "Paused or Ended)"},
  {M_IDLE, NULL, 1000, NULL},
  {M_IDLE, NULL, 999, "spec.idleTimeout: 999ms is less than the minimum "
                      "of 1s"},
  {M_IDLE, NULL, 0, "spec.idleTimeout: 0 is less than the minimum of 1s"},
  {M_IDLE, NULL, SESSION_MAX_DURATION_MS + 1,
   "spec.idleTimeout: 87600h0.001s is more than 10 years (87600h)"},
  {M_RECLAIM, NULL, 0, NULL},
  {M_RECLAIM, NULL, SESSION_MAX_DURATION_MS, NULL},
  {M_RECLAIM, NULL, -1, "spec.reclaimAfter: -1ms must not be negative"},
  {M_SID, "a.b_c-D", 0, NULL},
  {M_SID, "a b", 0, "spec.sessionID: \"a b\" is not a valid ID (use 1-128 "
                    "characters of A-Z a-z 0-9 . _ -)"},
  {M_TID, NULL, 0, "spec.tenantID: required field missing"},
  {M_LABEL, "ok", 0, NULL},
  {M_LABEL, "", 0, "metadata.labels.k: must not be empty"},
  {M_ENV, "line\nbreak", 0,
   "spec.envVars.K: value contains a line break (U+000A at byte 5); control "
   "characters are not allowed"},
  {M_ENV, "\xc3\x28", 0, "spec.envVars.K: value is not valid UTF-8 (byte 1)"},
  {M_META, "caf\xc3\xa9", 0, NULL},
  {M_META, "\xc2\x85", 0,
   "spec.sandboxMetadata.k: value contains a control character (U+0085 at "
   "byte 1); control characters are not allowed"},
  {M_WAKE, NULL, -2, "spec.wake: must not be negative"},
  {M_ANNOT, "multi\nline is fine", 0, NULL},
};

TEST(validate_table)
{
  size_t i;
  for(i = 0; i < sizeof(validate_cases) / sizeof(validate_cases[0]); i++) {
    session *s = valid_session();
    char **errs = NULL;
    size_t n = 0, k;
    sc_err err;
    const char *v = validate_cases[i].s;
    long long num = validate_cases[i].n;
    switch(validate_cases[i].what) {
    case M_NAME: set_str(&s->meta.name, v); break;
    case M_NS: set_str(&s->meta.namespace_, v); break;
    case M_TEMPLATE: set_str(&s->spec.template_id, v); break;
    case M_STATE: s->spec.state = (session_state)num; break;
    case M_IDLE: s->spec.idle_timeout_ms = num; break;
    case M_RECLAIM: s->spec.reclaim_after_ms = num; break;
    case M_SID: set_str(&s->spec.session_id, v); break;
    case M_TID: set_str(&s->spec.tenant_id, v); break;
    case M_LABEL: sc_kvlist_set(&s->meta.labels, "k", v); break;
    case M_ENV: sc_kvlist_set(&s->spec.env_vars, "K", v); break;
    case M_META: sc_kvlist_set(&s->spec.sandbox_metadata, "k", v); break;
    case M_WAKE: s->spec.wake = num; break;
    case M_ANNOT: sc_kvlist_set(&s->meta.annotations, "k", v); break;
    }
    err = session_validate(s, &errs, &n);
    if(!validate_cases[i].err) {
      CHECK_MSG(err == SC_OK && n == 0, "case %zu: unexpected error: %s", i,
                n ? errs[0] : "?");
    }
    else {
      CHECK_MSG(err == SC_ERR_INVALID && n == 1,
                "case %zu: err %d, %zu errors (%s)", i, err, n,
                n ? errs[0] : "none");
      CHECK_MSG(!strcmp(errs[0], validate_cases[i].err),
                "case %zu:\n    got      %s\n    expected %s", i, errs[0],
                validate_cases[i].err);
    }
    for(k = 0; k < n; k++)
      free(errs[k]);
    free(errs);
    session_free(s);
  }
}

/* envVars: at most 128 (deploy/crd.yaml maxProperties), for objects from a
 * store too */
TEST(validate_env_entry_cap)
{
  session *s = valid_session();
  char **errs = NULL;
  size_t n = 0, k;
  int i;
  for(i = 0; i < 129; i++) {
    char key[16];
    snprintf(key, sizeof(key), "V%03d", i);
    sc_kvlist_set(&s->spec.env_vars, key, "v");
  }
  CHECK_INT(session_validate(s, &errs, &n), SC_ERR_INVALID);
  CHECK_INT(n, 1);
  CHECK_STR(errs[0], "spec.envVars: 129 entries, at most 128 are allowed");
  for(k = 0; k < n; k++)
    free(errs[k]);
  free(errs);
  session_free(s);
}

TEST(validate_metadata_entry_cap)
{
  session *s = valid_session();
  char **errs = NULL;
  size_t n = 0, k;
  int i;
  for(i = 0; i < 33; i++) {
    char key[16];
    snprintf(key, sizeof(key), "k%02d", i);
    sc_kvlist_set(&s->spec.sandbox_metadata, key, "v");
  }
  sc_kvlist_set(&s->spec.sandbox_metadata, "lea.x", "v");
  CHECK_INT(session_validate(s, &errs, &n), SC_ERR_INVALID);
  CHECK_INT(n, 2);
  CHECK_STR(errs[0], "spec.sandboxMetadata: 34 entries, at most 32 are "
                     "allowed");
  CHECK_STR(errs[1], "spec.sandboxMetadata[\"lea.x\"]: \"lea.x\" is under "
                     "the reserved prefix \"lea.\" (the controller's own "
                     "tags); use another key");
  for(k = 0; k < n; k++)
    free(errs[k]);
  free(errs);
  session_free(s);
}

/* the network rules and paths, value by value (api/rules.c) */
static const struct {
  sf_rule rule;
  const char *v;
  bool ok;
} net_cases[] = {
  {SR_NET_DEST, "8.8.8.8", true},         {SR_NET_DEST, "8.8.8.8/32", true},
  {SR_NET_DEST, "0.0.0.0/0", true},       {SR_NET_DEST, "10.0.0.0/33", false},
  {SR_NET_DEST, "256.1.1.1", false},      {SR_NET_DEST, "1.2.3", false},
  {SR_NET_DEST, "1.2.3.4.5", false},      {SR_NET_DEST, "01.2.3.4", false},
  {SR_NET_DEST, "::/0", true},            {SR_NET_DEST, "2001:db8::1", true},
  {SR_NET_DEST, "fe80::/129", false},     {SR_NET_DEST, "1:2:3:4:5:6:7:8", true},
  {SR_NET_DEST, "1::2::3", false},        {SR_NET_DEST, "example.com", true},
  {SR_NET_DEST, "*.example.com", true},   {SR_NET_DEST, "a.*.com", false},
  {SR_NET_DEST, "-a.com", false},         {SR_NET_DEST, "a_b.com", false},
  {SR_NET_DEST, "example.com.", false},   {SR_NET_DEST, "localhost", true},
  {SR_NET_CIDR, "10.0.0.0/8", true},      {SR_NET_CIDR, "example.com", false},
  {SR_ABS_PATH, "/workspace", true},      {SR_ABS_PATH, "/a/b/", true},
  {SR_ABS_PATH, "workspace", false},      {SR_ABS_PATH, "/a/../b", false},
  {SR_ABS_PATH, "/a/./b", false},         {SR_ABS_PATH, "/a/..", false},
  {SR_ABS_PATH, "/a/..b", true},          {SR_ABS_PATH, "/a\tb", false},
};

TEST(network_rules_and_paths)
{
  size_t i;
  for(i = 0; i < sizeof(net_cases) / sizeof(net_cases[0]); i++) {
    sf_str_rule r = {net_cases[i].rule, 512, NULL, NULL};
    rule_msg mb;
    bool ok = rule_check(&r, net_cases[i].v, strlen(net_cases[i].v), &mb);
    CHECK_MSG(ok == net_cases[i].ok, "case %zu (%s): %s", i, net_cases[i].v,
              ok ? "accepted" : mb.m);
  }
}

static char **strv(const char *a, const char *b, size_t *n)
{
  char **v = calloc(2, sizeof(*v));
  *n = 0;
  if(a)
    v[(*n)++] = strdup(a);
  if(b)
    v[(*n)++] = strdup(b);
  return v;
}

/* one error, exactly, or none for NULL */
static void want_one(int *test_failed_, session *s, const char *err)
{
  char **errs = NULL;
  size_t n = 0, k;
  sc_err e = session_validate(s, &errs, &n);
  if(!err)
    CHECK_MSG(e == SC_OK && !n, "unexpected: %s", n ? errs[0] : "?");
  else {
    CHECK_MSG(n == 1, "%zu errors (%s)", n, n ? errs[0] : "none");
    if(n)
      CHECK_STR(errs[0], err);
  }
  for(k = 0; k < n; k++)
    free(errs[k]);
  free(errs);
  /* an object from a store says the same (the status condition) */
  {
    char *why = session_invalid_reason(s);
    if(!err)
      CHECK(!why);
    else
      CHECK_MSG(why && !strcmp(why, err), "stored: %s", why ? why : "valid");
    free(why);
  }
}

/* Objects built in code (as a store hands them): the new fields checked
 * by the same rules as manifests, with the field path named */
TEST(validate_network_and_mounts)
{
  session *s = valid_session();
  s->spec.net_allow_out = strv("10.0.0.0/8", "pypi.org", &s->spec.n_net_allow_out);
  want_one(test_failed_, s, "spec.network.allowOut[1]: \"pypi.org\" is a host name: Cube "
              "takes a host name in allowOut only when denyOut holds "
              "0.0.0.0/0 or allowInternetAccess is false (add one of them)");
  s->spec.net_internet = SESSION_OPT_FALSE;
  want_one(test_failed_, s, NULL);
  s->spec.net_internet = SESSION_OPT_UNSET;
  s->spec.net_deny_out = strv("0.0.0.0/0", NULL, &s->spec.n_net_deny_out);
  want_one(test_failed_, s, NULL);
  free(s->spec.net_deny_out[0]);
  s->spec.net_deny_out[0] = strdup("example.com");
  want_one(test_failed_, s, "spec.network.denyOut[0]: \"example.com\" is not a CIDR or an "
              "IP address (denyOut takes no host names; use e.g. 0.0.0.0/0 "
              "or 10.0.0.0/8)");
  session_free(s);

  s = valid_session();
  s->spec.volume_mounts = calloc(2, sizeof(session_volume_mount));
  s->spec.n_volume_mounts = 2;
  s->spec.volume_mounts[0].name = strdup("data");
  s->spec.volume_mounts[0].path = strdup("/data");
  s->spec.volume_mounts[1].name = strdup("data");
  s->spec.volume_mounts[1].path = strdup("/data2");
  want_one(test_failed_, s, "spec.volumeMounts[1].name: \"data\" is given twice (first at "
              "volumeMounts[0])");
  set_str(&s->spec.volume_mounts[1].name, "data2");
  set_str(&s->spec.volume_mounts[1].path, "/x/../etc");
  want_one(test_failed_, s, "spec.volumeMounts[1].path: \"/x/../etc\" has a \"..\" "
              "component (write the path out)");
  set_str(&s->spec.volume_mounts[1].path, NULL);
  want_one(test_failed_, s, "spec.volumeMounts[1].path: required field missing");
  set_str(&s->spec.volume_mounts[1].path, "/data2");
  /* hostPath alone is no workspace; mountPath alone is the short form
   * (the session's own directory under its tenant's root: api/policy.h) */
  s->spec.workspace_host_path = strdup("/srv/nfs/a");
  want_one(test_failed_, s, "spec.workspace.mountPath: required field missing");
  set_str(&s->spec.workspace_host_path, NULL);
  s->spec.workspace_mount_path = strdup("/workspace");
  want_one(test_failed_, s, NULL);
  s->spec.workspace_host_path = strdup("/srv/nfs/a");
  want_one(test_failed_, s, NULL);
  set_str(&s->spec.workspace_mount_path, "/data");
  want_one(test_failed_, s, "spec.workspace.mountPath: \"/data\" is also "
              "volumeMounts[0].path; a path takes one mount");
  set_str(&s->spec.workspace_mount_path, "/workspace");
  sc_kvlist_set(&s->spec.sandbox_metadata, "host-mount", "[]");
  want_one(test_failed_, s, "spec.sandboxMetadata.host-mount: \"host-mount\" is reserved "
              "by Cube for host directory mounts; use spec.workspace");
  session_free(s);
}

/* The digest on the sandbox (lea.config) follows every part, and only
 * them */
TEST(sandbox_config_digest_sees_each_part)
{
  session *s = valid_session();
  char a[SESSION_CONFIG_DIGEST_LEN + 1], b[SESSION_CONFIG_DIGEST_LEN + 1];
  session_sandbox_config_digest(&s->spec, a);
  CHECK_INT(strlen(a), SESSION_CONFIG_DIGEST_LEN);
  set_str(&s->spec.template_id, "other"); /* not a part */
  s->spec.wake = 3;
  session_sandbox_config_digest(&s->spec, b);
  CHECK_STR(b, a);
  s->spec.net_internet = SESSION_OPT_FALSE;
  session_sandbox_config_digest(&s->spec, b);
  CHECK(strcmp(a, b));
  memcpy(a, b, sizeof(a));
  s->spec.net_allow_out = strv("a.com", NULL, &s->spec.n_net_allow_out);
  session_sandbox_config_digest(&s->spec, b);
  CHECK(strcmp(a, b));
  memcpy(a, b, sizeof(a));
  /* the same string moved from allowOut to denyOut is another policy */
  s->spec.n_net_allow_out = 0;
  s->spec.net_deny_out = s->spec.net_allow_out;
  s->spec.n_net_deny_out = 1;
  s->spec.net_allow_out = NULL;
  session_sandbox_config_digest(&s->spec, b);
  CHECK(strcmp(a, b));
  memcpy(a, b, sizeof(a));
  s->spec.workspace_host_path = strdup("/srv/a");
  s->spec.workspace_mount_path = strdup("/w");
  session_sandbox_config_digest(&s->spec, b);
  CHECK(strcmp(a, b));
  session_free(s);
}

/* Garbage must give errors, never a crash or an object. A fixed LCG so a
 * failure can be replayed. */
TEST(garbage_never_crashes)
{
  static const char alphabet[] = "ab:- \n\t[]{}\"'&*!|>#%@`,?0\\\r\x01\xff";
  uint32_t x = 12345;
  int round;
  for(round = 0; round < 300; round++) {
    char buf[256];
    size_t len = (size_t)(x % 255), i;
    manifest_set set = {0};
    for(i = 0; i < len; i++) {
      x = x * 1103515245u + 12345u;
      buf[i] = alphabet[(x >> 16) % (sizeof(alphabet) - 1)];
    }
    x = x * 1103515245u + 12345u;
    CHECK_OK(manifest_read_buffer("g.yaml", buf, len, NULL, &set));
    CHECK_MSG(set.n_errors > 0, "round %d: garbage accepted", round);
    CHECK_INT(set.n, 0);
    manifest_set_free(&set);
  }
}

/* The object index and the duplicate-key check (lib/hmap.h) at sizes past
 * their first growth: 3000 distinct objects in one List all read, the
 * one repeat names the first; a key given three times is reported twice,
 * both times naming its first place. */
TEST(duplicates_are_found_among_many)
{
  dynbuf b;
  manifest_set set = {0};
  size_t i;
  dynbuf_init(&b, 1 << 22);
  dynbuf_addstr(&b, "apiVersion: v1\nkind: List\nitems:\n");
  for(i = 0; i < 3000; i++)
    dynbuf_printf(&b, "- {apiVersion: lea.io/v1alpha1, kind: Session, "
                      "metadata: {name: s%zu}, spec: {template: t}}\n",
                  i);
  dynbuf_addstr(&b, "- {apiVersion: lea.io/v1alpha1, kind: Session, "
                    "metadata: {name: s1500}, spec: {template: t}}\n");
  CHECK_OK(manifest_read_buffer("many", dynbuf_ptr(&b), dynbuf_len(&b), NULL,
                                &set));
  dynbuf_free(&b);
  CHECK_INT(set.n, 3000);
  CHECK_INT(set.n_errors, 1);
  CHECK_STR(set.errors[0], "many:3004:65: items[3000].metadata.name: "
                           "duplicate object default/s1500, first at "
                           "many:1504");
  manifest_set_free(&set);
  {
    static const char y[] = SESSION_HEAD "metadata: {name: a}\n"
                            "spec: {template: t, wake: 1, wake: 2, "
                            "state: Active, wake: 3}\n";
    CHECK_OK(manifest_read_buffer("k", y, strlen(y), NULL, &set));
    CHECK_INT(set.n, 0);
    CHECK_INT(set.n_errors, 2);
    CHECK_STR(set.errors[0], "k:4:30: spec.wake: duplicate key (first at "
                             "4:21)");
    CHECK_STR(set.errors[1], "k:4:54: spec.wake: duplicate key (first at "
                             "4:21)");
    manifest_set_free(&set);
  }
}


/* A shared session (read-only) found valid is not validated again; the
 * memo goes when it has one owner again (it may change then), and a
 * shared invalid one is reported every time. */
TEST(shared_session_validity_memo)
{
  session *s = valid_session(), *ref;
  char *why;
  ref = session_ref(s);
  CHECK(ref == s && session_shared(s));
  CHECK(!session_invalid_reason(s));
  CHECK(s->valid_);
  session_free(ref); /* one owner again */
  CHECK(!session_shared(s) && !s->valid_);
  set_str(&s->spec.template_id, NULL); /* the owner changes it */
  why = session_invalid_reason(s);
  CHECK(why);
  free(why);
  ref = session_ref(s);
  why = session_invalid_reason(s); /* shared and invalid: said again */
  CHECK(why && !s->valid_);
  free(why);
  why = session_invalid_reason(s);
  CHECK(why);
  free(why);
  session_free(ref);
  session_free(s);
}
TEST_LIST = {T(bad_manifests_give_exact_errors),
             T(shared_session_validity_memo),
             T(good_manifests_decode_to_expected_json),
             T(defaults_are_applied),
             T(full_fields_are_read),
             T(reclaim_zero_means_never),
             T(objects_read_counts_invalid_ones),
             T(empty_buffer_has_no_objects),
             T(buffer_over_cap_is_refused_before_parsing),
             T(oversize_file_made_at_run_time),
             T(directory_reads_yaml_files_sorted_and_finds_duplicates),
             T(missing_path_is_an_error),
             T(stdin_is_read_with_a_cap),
             T(error_flood_is_capped),
             T(manifest_json_round_trip),
             T(validate_table),
             T(validate_env_entry_cap), T(validate_metadata_entry_cap),
             T(network_rules_and_paths), T(validate_network_and_mounts),
             T(sandbox_config_digest_sees_each_part),
             T(garbage_never_crashes), T(duplicates_are_found_among_many),
             {0}};
TEST_MAIN()
