/*
 * manifest.c - reading Session manifests (manifest.h): the sources (a
 * file, a directory, standard input, a buffer), their size caps, and the
 * error list of each source, sorted by position into the set.
 *
 * The work is in three rooms: yamltree.c builds each document's node tree
 * (and refuses anchors, tags, duplicate keys, deep nesting),
 * manifest_walk.c reads the trees as Sessions by the field table
 * (fields.c) and the value rules (rules.c), validate.c checks objects
 * that did not come from YAML.
 */
#include "api/manifest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/fields.h"
#include "api/manifest_walk.h"
#include "lib/dynbuf.h"

#define MANIFEST_MAX_ERRORS 100 /* per file */
#define STDIN_NAME "<stdin>"

const char *const manifest_env_denied[] = {"PATH",       "LD_PRELOAD",
                                           "LD_LIBRARY_PATH", "PYTHONPATH",
                                           "NODE_PATH",  "BASH_ENV",
                                           "ENV",        "IFS",
                                           NULL};

/* The caps on spec.sandboxMetadata and spec.envVars (the field table's
 * SF_SANDBOX_METADATA_MAX, SF_ENV_VARS_MAX), written out here too because
 * test/e2e/deploy_manifests.sh reads them from this file to check
 * deploy/crd.yaml; test/unit/test_fields.c checks the whole table. */
#define META_MAX_ENTRIES 32
#define ENV_MAX_ENTRIES 128 /* deploy/crd.yaml: envVars maxProperties */
_Static_assert(META_MAX_ENTRIES == SF_SANDBOX_METADATA_MAX, "one cap");
_Static_assert(ENV_MAX_ENTRIES == SF_ENV_VARS_MAX, "one cap");

/* ======================================================= the sources */

static void set_add_error(manifest_set *set, char *text, bool *nomem)
{
  char **e;
  if(!text) {
    *nomem = true;
    return;
  }
  e = realloc(set->errors, (set->n_errors + 1) * sizeof(*e));
  if(!e) {
    free(text);
    *nomem = true;
    return;
  }
  set->errors = e;
  e[set->n_errors++] = text;
}

static sc_err set_errorf(manifest_set *set, sc_err err, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
static sc_err set_errorf(manifest_set *set, sc_err err, const char *fmt, ...)
{
  char msg[1024];
  bool nomem = false;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  set_add_error(set, strdup(msg), &nomem);
  return nomem ? SC_ERR_NOMEM : err;
}

static size_t max_bytes(const manifest_opts *opts)
{
  return opts && opts->max_bytes ? opts->max_bytes
                                 : (size_t)MANIFEST_DEFAULT_MAX_BYTES;
}

static sc_err read_buffer(const char *name, const char *buf, size_t len,
                          const manifest_opts *opts, manifest_set *set,
                          mindex *index)
{
  yerrs e;
  mwalk w;
  size_t i;
  bool nomem = false;
  size_t max = max_bytes(opts);
  long docs;

  if(!name)
    name = STDIN_NAME;
  if(len > max)
    return set_errorf(set, SC_OK,
                      "%s:1:1: file is %zu bytes, over the limit of %zu bytes "
                      "for a manifest",
                      name, len, max);
  memset(&e, 0, sizeof(e));
  e.file = name;
  e.max = MANIFEST_MAX_ERRORS;
  w.e = &e;
  w.set = set;
  w.index = index;
  w.policy = opts ? opts->policy : NULL;
  docs = ytree_parse(&e, buf ? buf : "", buf ? len : 0, manifest_walk_doc,
                     &w);
  if(docs == 0 && !e.stop)
    yerrs_add(&e, 1, 1, NULL, MANIFEST_MSG_NO_OBJECTS);
  yerrs_sort(&e);
  for(i = 0; i < e.n; i++) {
    set_add_error(set, e.v[i].text, &nomem);
    e.v[i].text = NULL;
  }
  yerrs_free(&e);
  return (e.nomem || nomem) ? SC_ERR_NOMEM : SC_OK;
}

/* One read: the object index spans its sources. */
static sc_err read_path(const char *path, const manifest_opts *opts,
                        manifest_set *set, mindex *ix);

/* name: a path to read, or the name of buf in messages */
static sc_err read_indexed(bool is_path, const char *name, const char *buf,
                           size_t len, const manifest_opts *opts,
                           manifest_set *set)
{
  mindex *ix = mindex_new();
  sc_err err;
  if(!ix)
    return SC_ERR_NOMEM;
  err = is_path ? read_path(name, opts, set, ix)
                : read_buffer(name, buf, len, opts, set, ix);
  mindex_free(ix);
  return err;
}

sc_err manifest_read_buffer(const char *name, const char *buf, size_t len,
                            const manifest_opts *opts, manifest_set *set)
{
  return read_indexed(false, name, buf, len, opts, set);
}

/* Read all of fd into b (capped at max); name for messages. */
static sc_err read_fd(int fd, const char *name, size_t max, dynbuf *b,
                      manifest_set *set)
{
  char chunk[16384];
  for(;;) {
    ssize_t r = read(fd, chunk, sizeof(chunk));
    sc_err err;
    if(r < 0) {
      if(errno == EINTR)
        continue;
      return set_errorf(set, SC_ERR_IO, "%s: cannot read: %s", name,
                        strerror(errno));
    }
    if(!r)
      return SC_OK;
    err = dynbuf_add(b, chunk, (size_t)r);
    if(err == SC_ERR_TOO_LARGE)
      return set_errorf(set, SC_ERR_TOO_LARGE,
                        "%s:1:1: file is over the limit of %zu bytes for a "
                        "manifest",
                        name, max);
    if(err)
      return err;
  }
}

static sc_err read_file(const char *path, const manifest_opts *opts,
                        manifest_set *set, mindex *ix)
{
  size_t max = max_bytes(opts);
  struct stat st;
  dynbuf b;
  sc_err err;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if(fd < 0)
    return set_errorf(set, errno == ENOENT ? SC_ERR_NOT_FOUND : SC_ERR_IO,
                      "%s: cannot open: %s", path, strerror(errno));
  if(fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
     (uint64_t)st.st_size > (uint64_t)max) {
    close(fd);
    /* too large is a finding about the file, not a read failure */
    return set_errorf(set, SC_OK,
                      "%s:1:1: file is %lld bytes, over the limit of %zu "
                      "bytes for a manifest",
                      path, (long long)st.st_size, max);
  }
  dynbuf_init(&b, max);
  err = read_fd(fd, path, max, &b, set);
  close(fd);
  if(err == SC_ERR_TOO_LARGE)
    err = SC_OK;
  else if(!err)
    err = read_buffer(path, dynbuf_ptr(&b), dynbuf_len(&b), opts, set, ix);
  dynbuf_free(&b);
  return err;
}

static int cmp_names(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names kubectl reads from a directory: *.yaml, *.yml, *.json. */
static bool yaml_name(const char *n)
{
  size_t l = strlen(n);
  if(n[0] == '.')
    return false;
  return (l > 5 && !strcmp(n + l - 5, ".yaml")) ||
         (l > 4 && !strcmp(n + l - 4, ".yml")) ||
         (l > 5 && !strcmp(n + l - 5, ".json"));
}

static sc_err read_dir(const char *path, const manifest_opts *opts,
                       manifest_set *set, mindex *ix)
{
  DIR *d = opendir(path);
  struct dirent *de;
  char **names = NULL;
  size_t n = 0, i;
  sc_err err = SC_OK;
  size_t plen = strlen(path);
  bool slash = plen && path[plen - 1] == '/';

  if(!d)
    return set_errorf(set, SC_ERR_IO, "%s: cannot open directory: %s", path,
                      strerror(errno));
  while((de = readdir(d))) {
    char **nn;
    char *full;
    struct stat st;
    size_t fl;
    if(!yaml_name(de->d_name))
      continue;
    fl = plen + strlen(de->d_name) + 2;
    full = malloc(fl);
    if(!full) {
      err = SC_ERR_NOMEM;
      break;
    }
    snprintf(full, fl, "%s%s%s", path, slash ? "" : "/", de->d_name);
    if(stat(full, &st) || !S_ISREG(st.st_mode)) {
      free(full);
      continue;
    }
    nn = realloc(names, (n + 1) * sizeof(*nn));
    if(!nn) {
      free(full);
      err = SC_ERR_NOMEM;
      break;
    }
    names = nn;
    names[n++] = full;
  }
  closedir(d);
  if(!err) {
    if(n)
      qsort(names, n, sizeof(*names), cmp_names);
    else
      err = set_errorf(set, SC_OK, "%s: no *.yaml, *.yml or *.json files", path);
    for(i = 0; i < n && err != SC_ERR_NOMEM; i++) {
      sc_err e = read_file(names[i], opts, set, ix);
      if(e && !err)
        err = e;
    }
  }
  for(i = 0; i < n; i++)
    free(names[i]);
  free(names);
  return err;
}

static sc_err read_path(const char *path, const manifest_opts *opts,
                        manifest_set *set, mindex *ix)
{
  struct stat st;
  if(!path || !*path)
    return set_errorf(set, SC_ERR_INVALID, "no manifest path given");
  if(!strcmp(path, "-")) {
    size_t max = max_bytes(opts);
    dynbuf b;
    sc_err err;
    dynbuf_init(&b, max);
    err = read_fd(STDIN_FILENO, STDIN_NAME, max, &b, set);
    if(err == SC_ERR_TOO_LARGE)
      err = SC_OK;
    else if(!err)
      err = read_buffer(STDIN_NAME, dynbuf_ptr(&b), dynbuf_len(&b), opts,
                        set, ix);
    dynbuf_free(&b);
    return err;
  }
  if(stat(path, &st))
    return set_errorf(set, errno == ENOENT ? SC_ERR_NOT_FOUND : SC_ERR_IO,
                      "%s: cannot open: %s", path, strerror(errno));
  if(S_ISDIR(st.st_mode))
    return read_dir(path, opts, set, ix);
  return read_file(path, opts, set, ix);
}

sc_err manifest_read_path(const char *path, const manifest_opts *opts,
                          manifest_set *set)
{
  return read_indexed(true, path, NULL, 0, opts, set);
}

void manifest_set_free(manifest_set *set)
{
  size_t i;
  if(!set)
    return;
  for(i = 0; i < set->n; i++) {
    session_free(set->items[i].s);
    free(set->items[i].file);
  }
  free(set->items);
  for(i = 0; i < set->n_errors; i++)
    free(set->errors[i]);
  free(set->errors);
  memset(set, 0, sizeof(*set));
}

