/* tmp_store.h - the unit tests' scratch directory for a SQLite store:
 * tmp_make_named() makes DIR ($TMPDIR or /tmp, "TAG-XXXXXX") with
 * path DIR/s.db, its WAL DIR/s.db-wal and url sqlite:DIR/s.db; tmp_clean() removes the files in
 * it and the directory. Header-only (static inline), for test files. */
#ifndef SC_TEST_TMP_STORE_H
#define SC_TEST_TMP_STORE_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct tmp {
  char dir[256];
  char path[300];
  char wal[310];
  char url[310];
} tmp;

static inline int tmp_make_named(tmp *t, const char *tag)
{
  const char *base = getenv("TMPDIR");
  snprintf(t->dir, sizeof(t->dir), "%s/%s-XXXXXX",
           base && *base ? base : "/tmp", tag);
  if(!mkdtemp(t->dir))
    return -1;
  snprintf(t->path, sizeof(t->path), "%s/s.db", t->dir);
  snprintf(t->wal, sizeof(t->wal), "%s-wal", t->path);
  snprintf(t->url, sizeof(t->url), "sqlite:%s", t->path);
  return 0;
}

static inline void tmp_clean(tmp *t)
{
  DIR *d = opendir(t->dir);
  struct dirent *e;
  if(!d)
    return;
  while((e = readdir(d))) {
    char p[600];
    if(!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    snprintf(p, sizeof(p), "%s/%s", t->dir, e->d_name);
    unlink(p);
  }
  closedir(d);
  rmdir(t->dir);
}

#endif
