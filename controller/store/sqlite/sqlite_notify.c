/*
 * sqlite_notify.c - the watch's wake-up: inotify on the database's
 * directory, one libevent read event (see sqlite_notify.h).
 */
#include "controller/store/sqlite/sqlite_notify.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <event2/event.h>

#ifdef __linux__
#include <sys/inotify.h>

struct sq_notify {
  int fd;
  struct event *ev;
  sq_notify_cb cb;
  void *ud;
  char *name;                /* the database file's name in its directory */
  size_t name_len;
};

/* Is this entry of the directory the database or one of its journals? */
static bool ours(const sq_notify *n, const char *entry)
{
  if(strncmp(entry, n->name, n->name_len))
    return false;
  entry += n->name_len;
  return !*entry || !strcmp(entry, "-wal") || !strcmp(entry, "-journal");
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
  sq_notify *n = arg;
  /* aligned for struct inotify_event, room for one with the longest name */
  char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
  bool changed = false, lost = false;
  (void)what;
  for(;;) {
    ssize_t got = read(fd, buf, sizeof(buf));
    ssize_t at = 0;
    if(got < 0 && errno == EINTR)
      continue;
    if(got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      break;
    if(got <= 0) {
      lost = true; /* a read error, or end of file: no more events */
      break;
    }
    while(at + (ssize_t)sizeof(struct inotify_event) <= got) {
      const struct inotify_event *e = (const void *)(buf + at);
      at += (ssize_t)sizeof(*e) + e->len;
      if(e->mask & IN_Q_OVERFLOW)
        changed = true; /* events were dropped: look anyway */
      else if(e->mask & (IN_IGNORED | IN_UNMOUNT | IN_DELETE_SELF))
        lost = true;    /* the directory is gone (a move keeps the watch:
                         * it is on the directory, not on its name; a
                         * removal is reported once the last open file in
                         * it is closed) */
      else if(e->len && ours(n, e->name))
        changed = true;
    }
  }
  if(lost)
    event_del(n->ev);
  if(changed || lost)
    n->cb(lost, n->ud);
}

sc_err sq_notify_new(struct event_base *base, const char *path,
                     sq_notify_cb cb, void *ud, sq_notify **out,
                     sc_errbuf *eb)
{
  char *real = NULL, *slash;
  const char *dir;
  sq_notify *n;
  sc_err err = SC_OK;

  *out = NULL;
  n = calloc(1, sizeof(*n));
  if(!n)
    return SC_ERR_NOMEM;
  n->fd = -1;
  n->cb = cb;
  n->ud = ud;
  real = realpath(path, NULL);
  if(!real) {
    err = sc_errf(eb, SC_ERR_IO, "cannot resolve %s: %s", path,
                  strerror(errno));
    goto out;
  }
  slash = strrchr(real, '/'); /* realpath gives an absolute path */
  if(!slash || !slash[1]) {
    err = sc_errf(eb, SC_ERR_INVALID, "%s is not a file's path", real);
    goto out;
  }
  n->name = strdup(slash + 1);
  if(!n->name) {
    err = SC_ERR_NOMEM;
    goto out;
  }
  n->name_len = strlen(n->name);
  *slash = '\0';
  dir = slash == real ? "/" : real;
  n->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if(n->fd < 0) {
    err = sc_errf(eb, SC_ERR_UNAVAILABLE, "inotify_init1: %s",
                  strerror(errno));
    goto out;
  }
  if(inotify_add_watch(n->fd, dir, IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE |
                       IN_MOVED_TO | IN_DELETE_SELF | IN_ONLYDIR) < 0) {
    err = sc_errf(eb, SC_ERR_UNAVAILABLE, "inotify_add_watch %s: %s", dir,
                  strerror(errno));
    goto out;
  }
  n->ev = event_new(base, n->fd, EV_READ | EV_PERSIST, on_readable, n);
  if(!n->ev || event_add(n->ev, NULL)) {
    err = n->ev ? sc_errf(eb, SC_ERR_INTERNAL, "event_add of the inotify "
                          "descriptor failed") : SC_ERR_NOMEM;
    goto out;
  }
out:
  free(real);
  if(err)
    sq_notify_free(n);
  else
    *out = n;
  return err;
}

void sq_notify_free(sq_notify *n)
{
  if(!n)
    return;
  if(n->ev)
    event_free(n->ev);
  if(n->fd >= 0)
    close(n->fd);
  free(n->name);
  free(n);
}

#else /* no inotify: the watch polls */

sc_err sq_notify_new(struct event_base *base, const char *path,
                     sq_notify_cb cb, void *ud, sq_notify **out,
                     sc_errbuf *eb)
{
  (void)base;
  (void)path;
  (void)cb;
  (void)ud;
  *out = NULL;
  return sc_errf(eb, SC_ERR_UNAVAILABLE, "no inotify on this system");
}

void sq_notify_free(sq_notify *n)
{
  (void)n;
}

#endif
