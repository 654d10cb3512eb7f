/* watch.c - `sessionctl get sessions -w`: list, print, then follow the
 * store's watch from the list's revision on a libevent loop.
 *
 * The watch keeps the objects it has shown (a small cache). When the
 * store's history no longer reaches the watch (SC_ERR_EXPIRED) it lists
 * again, prints a row for every object that was added, changed or deleted
 * meanwhile (by comparing resource versions with the cache), and starts a
 * new watch from the new list's revision. Other watch errors are printed
 * as warnings; the store goes on watching. SIGINT/SIGTERM end it with status 0,
 * and so does a closed stdout (checked on every write and, while idle,
 * every 200 ms by poll(), so `| head` never hangs).
 */
#include <errno.h>
#include <event2/event.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "controller/store/store.h"
#include "cmd/sessionctl/get.h"

#define WATCH_RETRY_MS 500
#define WATCH_PIPE_CHECK_MS 200

typedef struct watch_ctx {
  ctl_env *env;
  ctl_get *g;
  store *st;
  struct event_base *base;
  store_watch *w;
  session **cache;        /* objects shown, the latest version of each */
  size_t n_cache, cap_cache;
  struct event *relist_ev;
  int rc;
  bool done;
} watch_ctx;

static void finish(watch_ctx *c, int rc)
{
  if(!c->done) {
    c->done = true;
    c->rc = rc;
  }
  event_base_loopbreak(c->base);
}

static ssize_t cache_find(const watch_ctx *c, const session *s)
{
  size_t i;
  for(i = 0; i < c->n_cache; i++)
    if(!strcmp(c->cache[i]->meta.name, s->meta.name) &&
       !strcmp(c->cache[i]->meta.namespace_, s->meta.namespace_))
      return (ssize_t)i;
  return -1;
}

static void cache_remove(watch_ctx *c, size_t i)
{
  session_free(c->cache[i]);
  c->cache[i] = c->cache[--c->n_cache];
}

/* Store a copy of s in the cache (replacing its older version). */
static sc_err cache_put(watch_ctx *c, const session *s)
{
  ssize_t i = cache_find(c, s);
  session *d = session_dup(s);
  if(!d)
    return SC_ERR_NOMEM;
  if(i >= 0) {
    session_free(c->cache[i]);
    c->cache[i] = d;
    return SC_OK;
  }
  if(c->n_cache == c->cap_cache) {
    size_t nc = c->cap_cache ? c->cap_cache * 2 : 16;
    session **a = realloc(c->cache, nc * sizeof(*a));
    if(!a) {
      session_free(d);
      return SC_ERR_NOMEM;
    }
    c->cache = a;
    c->cap_cache = nc;
  }
  c->cache[c->n_cache++] = d;
  return SC_OK;
}

static bool same_version(const session *a, const session *b)
{
  const char *va = a->meta.resource_version, *vb = b->meta.resource_version;
  return va && vb && !strcmp(va, vb);
}

static void emit_or_fail(watch_ctx *c, const session *s, const char *event)
{
  sc_err err = ctl_get_emit(c->g, s, event);
  if(err) {
    fprintf(stderr, "error: formatting output: %s\n", sc_strerror(err));
    finish(c, CTL_EXIT_FAIL);
  }
}

static void flush_or_stop(watch_ctx *c)
{
  if(!c->done && !ctl_get_flush(c->g))
    finish(c, CTL_EXIT_OK);   /* stdout closed: the reader is done */
}

static void on_event(const store_event *ev, void *ud)
{
  watch_ctx *c = ud;
  const char *type;
  ssize_t i;
  if(c->done || !ctl_get_matches(c->g, ev->obj))
    return;
  i = cache_find(c, ev->obj);
  switch(ev->type) {
  case STORE_EVENT_DELETED:
    if(i < 0)
      return;  /* already shown gone (e.g. a tombstone being purged) */
    cache_remove(c, (size_t)i);
    type = "DELETED";
    break;
  case STORE_EVENT_ADDED:
  case STORE_EVENT_MODIFIED:
  default:
    if(ev->obj->meta.deletion_timestamp) {
      /* a tombstone's status being written: not shown by get */
      if(i < 0)
        return;
      cache_remove(c, (size_t)i);
      type = "DELETED";
      break;
    }
    type = ev->type == STORE_EVENT_ADDED ? "ADDED" : "MODIFIED";
    if(cache_put(c, ev->obj)) {
      fprintf(stderr, "error: out of memory\n");
      finish(c, CTL_EXIT_FAIL);
      return;
    }
    break;
  }
  emit_or_fail(c, ev->obj, type);
  flush_or_stop(c);
}

static void on_watch_error(sc_err err, const char *msg, void *ud)
{
  watch_ctx *c = ud;
  struct timeval tv = {0, 0};
  if(c->done)
    return;
  if(err != SC_ERR_EXPIRED) {
    /* the store reports it and goes on with the watch */
    fprintf(stderr, "warning: watch: %s\n",
            msg && *msg ? msg : sc_strerror(err));
    return;
  }
  /* not from inside the store's callback: on the next loop turn */
  event_add(c->relist_ev, &tv);
}

/* List, print what differs from the cache (everything, the first time),
 * and start the watch at the list's revision. */
static sc_err relist(watch_ctx *c, bool first, sc_errbuf *eb)
{
  store_list_opts lo;
  store_list_result res;
  size_t i;
  sc_err err;

  memset(&lo, 0, sizeof(lo));
  memset(&res, 0, sizeof(res));
  lo.namespace_ = c->g->ns;
  store_watch_stop(c->w);
  c->w = NULL;
  err = store_list(c->st, &lo, &res, eb);
  if(err)
    return err;
  /* gone since the cache was filled */
  for(i = 0; i < c->n_cache;) {
    size_t j;
    bool present = false;
    for(j = 0; j < res.n && !present; j++)
      present = !res.items[j]->meta.deletion_timestamp &&
                !strcmp(res.items[j]->meta.name, c->cache[i]->meta.name) &&
                !strcmp(res.items[j]->meta.namespace_,
                        c->cache[i]->meta.namespace_);
    if(present) {
      i++;
      continue;
    }
    emit_or_fail(c, c->cache[i], "DELETED");
    cache_remove(c, i);
  }
  for(i = 0; i < res.n && !c->done; i++) {
    session *s = res.items[i];
    ssize_t k;
    const char *type = "ADDED";
    if(s->meta.deletion_timestamp || !ctl_get_matches(c->g, s))
      continue;
    k = cache_find(c, s);
    if(k >= 0) {
      if(same_version(c->cache[k], s))
        continue;
      type = "MODIFIED";
    }
    err = cache_put(c, s);
    if(err)
      break;
    emit_or_fail(c, s, type);
  }
  if(!err && !c->done) {
    flush_or_stop(c);
    if(first && !c->n_cache && c->g->ns)
      fprintf(stderr, "No resources found in %s namespace.\n", c->g->ns);
  }
  if(!err && !c->done)
    err = store_watch_start(c->st, res.revision, on_event, on_watch_error, c,
                            &c->w, eb);
  store_list_result_free(&res);
  return err;
}

static void on_relist(evutil_socket_t fd, short what, void *arg)
{
  watch_ctx *c = arg;
  sc_errbuf eb;
  sc_err err;
  struct timeval tv = {0, WATCH_RETRY_MS * 1000};
  (void)fd;
  (void)what;
  if(c->done)
    return;
  eb.msg[0] = 0;
  err = relist(c, false, &eb);
  if(err == SC_ERR_BUSY || err == SC_ERR_EXPIRED || err == SC_ERR_TIMEOUT) {
    event_add(c->relist_ev, &tv);   /* try again shortly */
    return;
  }
  if(err)
    finish(c, ctl_store_error(err, &eb));
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
  (void)sig;
  (void)what;
  finish(arg, CTL_EXIT_OK);
}

static void on_pipe_check(evutil_socket_t fd, short what, void *arg)
{
  struct pollfd pfd;
  (void)fd;
  (void)what;
  pfd.fd = STDOUT_FILENO;
  pfd.events = 0;
  pfd.revents = 0;
  if(poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)))
    finish(arg, CTL_EXIT_OK);
}

int ctl_get_watch(ctl_env *env, ctl_get *g)
{
  watch_ctx c;
  struct event *sigint = NULL, *sigterm = NULL, *pipe_check = NULL;
  struct timeval tick = {0, WATCH_PIPE_CHECK_MS * 1000};
  sc_errbuf eb;
  sc_err err;
  size_t i;

  memset(&c, 0, sizeof(c));
  c.env = env;
  c.g = g;
  signal(SIGPIPE, SIG_IGN);   /* a closed pipe is EPIPE, handled */
  c.base = event_base_new();
  if(!c.base) {
    fprintf(stderr, "error: cannot create the event loop\n");
    return CTL_EXIT_FAIL;
  }
  c.relist_ev = evtimer_new(c.base, on_relist, &c);
  sigint = evsignal_new(c.base, SIGINT, on_signal, &c);
  sigterm = evsignal_new(c.base, SIGTERM, on_signal, &c);
  pipe_check = event_new(c.base, -1, EV_PERSIST, on_pipe_check, &c);
  if(!c.relist_ev || !sigint || !sigterm || !pipe_check ||
     event_add(sigint, NULL) || event_add(sigterm, NULL) ||
     event_add(pipe_check, &tick)) {
    fprintf(stderr, "error: cannot set up the event loop\n");
    c.rc = CTL_EXIT_FAIL;
    goto out;
  }
  c.st = ctl_open_store(env, c.base, false);
  if(!c.st) {
    c.rc = CTL_EXIT_FAIL;
    goto out;
  }
  eb.msg[0] = 0;
  err = relist(&c, true, &eb);
  if(err) {
    c.rc = ctl_store_error(err, &eb);
    goto out;
  }
  if(!c.done)
    event_base_dispatch(c.base);
out:
  store_watch_stop(c.w);
  store_close(c.st);
  for(i = 0; i < c.n_cache; i++)
    session_free(c.cache[i]);
  free(c.cache);
  if(c.relist_ev)
    event_free(c.relist_ev);
  if(sigint)
    event_free(sigint);
  if(sigterm)
    event_free(sigterm);
  if(pipe_check)
    event_free(pipe_check);
  event_base_free(c.base);
  return c.rc;
}
