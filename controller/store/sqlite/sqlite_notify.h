/*
 * sqlite_notify.h - the wake-up of the SQLite backend's watch: the kernel
 * tells when the database file or its journal is written (Linux inotify
 * on the file's directory), so that an idle watch need not poll often.
 * Not for users of the store (sqlite_watch.c uses it). See docs/store.md,
 * "Watch".
 *
 * A notifier watches the directory of the database (symbolic links
 * resolved: SQLite keeps its journals next to the real file) for writes,
 * closes after writing, creations and renames of the database file and
 * of its journals (FILE-wal, FILE-journal); the shared-memory file
 * (FILE-shm) is left out: readers change it too. Events for other files
 * of the directory are read and dropped. What one readable turn of the
 * loop brings is drained at once and reported as one call of the
 * callback: a burst of writes is one wake, not one per write.
 *
 * It is a hint, never the truth: a write made where the kernel does not
 * see it (another host on a network filesystem, another mount namespace
 * of the same file through a different path) is not reported, and the
 * event of a commit can come before the writer has published it (WAL:
 * the index is shared memory, which raises no event). The watch keeps a
 * poll for that (sqlite_watch.c).
 *
 * Ownership: sq_notify_new() hands out a notifier for sq_notify_free()
 * (NULL accepted), which closes its descriptor and removes its event; it
 * must be freed before the event base. path is copied.
 */
#ifndef SC_STORE_SQLITE_NOTIFY_H
#define SC_STORE_SQLITE_NOTIFY_H

#include "lib/sc_err.h"

#include <stdbool.h>

struct event_base;

typedef struct sq_notify sq_notify;

/* changed: something was written (or the kernel lost events: look
 * anyway). lost: the notifier stopped working for good (the directory
 * was removed or unmounted, a read failed); no call comes after one with
 * lost set, and the watch must poll instead. */
typedef void (*sq_notify_cb)(bool lost, void *ud);

/* Watch the directory of the database file path on base. SC_OK with
 * *out; otherwise (no inotify on this system, out of inotify instances
 * or watches, a directory that cannot be watched) an error saying why in
 * eb and *out NULL. */
sc_err sq_notify_new(struct event_base *base, const char *path,
                     sq_notify_cb cb, void *ud, sq_notify **out,
                     sc_errbuf *eb);
void sq_notify_free(sq_notify *n);

#endif
