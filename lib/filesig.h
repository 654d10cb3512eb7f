/*
 * filesig.h - what a file looked like when it was last read: device,
 * inode, size and both change times (or the errno of a failed stat), so
 * that a poller reads a file again only when one of them moved. A file
 * replaced by rename (a Kubernetes Secret or ConfigMap update, an editor's
 * save) has a new inode; one written in place, new times or size.
 *
 * Used by the Cube key file (controller/cube/key.c) and the tenant policy
 * file (controller/ops/policy_watch.c). Plain data: no ownership.
 */
#ifndef SC_FILESIG_H
#define SC_FILESIG_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

typedef struct sc_filesig {
  int err;  /* errno of the failed stat; 0: the fields below hold */
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime, ctime;
} sc_filesig;

/* From a stat result (err 0). */
void sc_filesig_from_stat(const struct stat *sb, sc_filesig *sig);
/* stat(path) now; a failure is recorded as its errno. */
void sc_filesig_of(const char *path, sc_filesig *sig);
/* Two failures are equal when their errno is; a failure and a success
 * never are. */
bool sc_filesig_equal(const sc_filesig *a, const sc_filesig *b);

#endif
