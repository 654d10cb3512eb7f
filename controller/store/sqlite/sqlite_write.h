/*
 * sqlite_write.h - what the write half of the sqlite:PATH backend shares
 * beyond sqlite_int.h: the group commit's status writes (sqlite_group.c
 * calls sqlite_crud.c) and the hand-over of a written object to the
 * watches (sqlite_crud.c calls sqlite_watch.c). Not for users of the
 * store. See docs/store.md, "Group commit".
 *
 * Ownership: an sq_revs is the caller's (on its stack for one
 * transaction); sq_own_note_take() takes *o (NULL after) when it keeps
 * it, and the history text *whole the same way.
 */
#ifndef SC_STORE_SQLITE_WRITE_H
#define SC_STORE_SQLITE_WRITE_H

#include "controller/store/sqlite/sqlite_int.h"

/* The meta row of one write transaction, kept in memory while the
 * transaction holds the write lock (BEGIN IMMEDIATE): read once after
 * BEGIN (sq_revs_read), bumped by each write, written once before the
 * COMMIT (sq_revs_write). A write rolled back to its savepoint gives its
 * revision back (the caller restores the copy it took before it). */
typedef struct sq_revs {
  int64_t revision;          /* the last revision given */
  int64_t compacted;         /* the compaction mark */
  int64_t revision0;         /* as read: nothing to write when unchanged */
  int64_t compacted0;
} sq_revs;
sc_err sq_revs_read(sq_store *s, sq_revs *rv, sc_errbuf *eb);
sc_err sq_revs_write(sq_store *s, const sq_revs *rv, sc_errbuf *eb);

/* One status compare-and-set of a group (inside its transaction): the
 * row's status column and its history entry are written, the other
 * columns stay as they are. *status (the queue's copy) is taken over
 * when it is written (left empty). *new_version (the caller's) on
 * SC_OK. */
sc_err sq_status_write_group(sq_store *s, sq_revs *rv, const char *ns,
                             const char *name, const char *expected_version,
                             session_status *status, char **new_version,
                             sc_errbuf *eb);

/* sq_own_note() without the copy: the object written as revision, taken
 * (*o NULL after) when a watch will be given it; else left to the
 * caller. */
void sq_own_note_take(sq_store *s, int64_t revision, char **whole,
                      session **o);

#endif
