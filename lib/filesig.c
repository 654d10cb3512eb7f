/* filesig.c - a file's signature for change polling (filesig.h). */
#include "lib/filesig.h"

#include <errno.h>
#include <string.h>

void sc_filesig_from_stat(const struct stat *sb, sc_filesig *sig)
{
  memset(sig, 0, sizeof(*sig));
  sig->dev = sb->st_dev;
  sig->ino = sb->st_ino;
  sig->size = sb->st_size;
  sig->mtime = sb->st_mtim;
  sig->ctime = sb->st_ctim;
}

void sc_filesig_of(const char *path, sc_filesig *sig)
{
  struct stat sb;
  if(stat(path, &sb)) {
    memset(sig, 0, sizeof(*sig));
    sig->err = errno ? errno : EIO;
    return;
  }
  sc_filesig_from_stat(&sb, sig);
}

bool sc_filesig_equal(const sc_filesig *a, const sc_filesig *b)
{
  if(a->err || b->err)
    return a->err == b->err;
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
         a->mtime.tv_sec == b->mtime.tv_sec &&
         a->mtime.tv_nsec == b->mtime.tv_nsec &&
         a->ctime.tv_sec == b->ctime.tv_sec &&
         a->ctime.tv_nsec == b->ctime.tv_nsec;
}
