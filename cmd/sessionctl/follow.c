/* follow.c - wait until one session reaches a state (follow.h): a list,
 * then the store's watch from the list's revision, on a libevent loop
 * with a timer for the timeout. */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/duration.h"
#include "cmd/sessionctl/ctl.h"
#include "cmd/sessionctl/follow.h"

#define FOLLOW_RETRY_MS 500

typedef struct follow_ctx {
  store *st;
  struct event_base *base;
  const char *ns, *name;
  ctl_follow_check check;
  void *ud;
  store_watch *w;
  struct event *relist_ev, *timeout_ev;
  int rc;
  bool done;
  bool listed;           /* the one-object read was tried (reread) */
} follow_ctx;

static void finish(follow_ctx *c, int rc)
{
  if(c->done)
    return;
  c->done = true;
  c->rc = rc;
  event_base_loopbreak(c->base);
}

static bool is_ours(const follow_ctx *c, const session *s)
{
  return s->meta.name && s->meta.namespace_ &&
         !strcmp(s->meta.name, c->name) &&
         !strcmp(s->meta.namespace_, c->ns);
}

/* hand s (NULL: gone) to the check */
static void decide(follow_ctx *c, const session *s)
{
  int rc;
  if(c->done)
    return;
  if(s && s->meta.deletion_timestamp)
    s = NULL;
  rc = c->check(s, c->ud);
  if(rc != CTL_FOLLOW_MORE)
    finish(c, rc);
}

static void on_event(const store_event *ev, void *ud)
{
  follow_ctx *c = ud;
  if(c->done || !is_ours(c, ev->obj))
    return;
  decide(c, ev->type == STORE_EVENT_DELETED ? NULL : ev->obj);
}

static void on_watch_error(sc_err err, const char *msg, void *ud)
{
  follow_ctx *c = ud;
  struct timeval now = {0, 0};
  if(c->done)
    return;
  if(err != SC_ERR_EXPIRED) {
    /* the store reports it and goes on with the watch */
    fprintf(stderr, "warning: watch: %s\n",
            msg && *msg ? msg : sc_strerror(err));
    return;
  }
  /* not from inside the store's callback: on the next loop turn */
  event_add(c->relist_ev, &now);
}

/* Read the one object and watch from its version: a connect to a session
 * in a namespace of thousands reads one object, not the namespace (on the
 * kube store the list was most of a connect's time). Every later version
 * of the object comes after its own version in the store's order. When it
 * is absent, or its version is too old for the history (the watch says
 * EXPIRED), the namespace's list gives a revision to start from. */
static sc_err reread(follow_ctx *c, sc_errbuf *eb)
{
  session *got = NULL;
  sc_err err;
  store_watch_stop(c->w);
  c->w = NULL;
  err = store_get(c->st, c->ns, c->name, &got, eb);
  if(err == SC_ERR_NOT_FOUND || (!err && !got->meta.resource_version)) {
    session_free(got);
    return SC_ERR_NOT_FOUND; /* the list's turn */
  }
  if(err)
    return err;
  decide(c, got->meta.deletion_timestamp ? NULL : got);
  if(!c->done)
    err = store_watch_start(c->st, got->meta.resource_version, on_event,
                            on_watch_error, c, &c->w, eb);
  session_free(got);
  return err;
}

/* List the namespace, check the object, watch from the list's revision. */
static sc_err relist(follow_ctx *c, sc_errbuf *eb)
{
  store_list_opts lo;
  store_list_result res;
  const session *found = NULL;
  size_t i;
  sc_err err;
  if(!c->listed) {
    c->listed = true; /* the first look reads the one object */
    err = reread(c, eb);
    if(err != SC_ERR_NOT_FOUND)
      return err;
    eb->msg[0] = 0;
  }
  memset(&lo, 0, sizeof(lo));
  lo.namespace_ = c->ns;
  store_watch_stop(c->w);
  c->w = NULL;
  err = store_list(c->st, &lo, &res, eb);
  if(err)
    return err;
  for(i = 0; i < res.n && !found; i++)
    if(is_ours(c, res.items[i]))
      found = res.items[i];
  decide(c, found);
  if(!c->done)
    err = store_watch_start(c->st, res.revision, on_event, on_watch_error, c,
                            &c->w, eb);
  store_list_result_free(&res);
  return err;
}

static void on_relist(evutil_socket_t fd, short what, void *arg)
{
  follow_ctx *c = arg;
  struct timeval retry = {0, FOLLOW_RETRY_MS * 1000};
  sc_errbuf eb;
  sc_err err;
  (void)fd;
  (void)what;
  if(c->done)
    return;
  eb.msg[0] = 0;
  err = relist(c, &eb);
  if(err == SC_ERR_BUSY || err == SC_ERR_EXPIRED || err == SC_ERR_TIMEOUT ||
     err == SC_ERR_UNAVAILABLE) {
    event_add(c->relist_ev, &retry);   /* try again shortly */
    return;
  }
  if(err)
    finish(c, ctl_store_error(err, &eb));
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
  (void)fd;
  (void)what;
  finish(arg, CTL_EXIT_TIMEOUT);
}

int ctl_follow(store *st, struct event_base *base, const char *ns,
               const char *name, int64_t timeout_ms, ctl_follow_check check,
               void *ud)
{
  follow_ctx c;
  struct timeval tv;
  sc_errbuf eb;
  sc_err err;
  memset(&c, 0, sizeof(c));
  c.st = st;
  c.base = base;
  c.ns = ns;
  c.name = name;
  c.check = check;
  c.ud = ud;
  c.relist_ev = evtimer_new(base, on_relist, &c);
  c.timeout_ev = evtimer_new(base, on_timeout, &c);
  tv.tv_sec = (time_t)(timeout_ms / 1000);
  tv.tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000;
  if(!c.relist_ev || !c.timeout_ev || evtimer_add(c.timeout_ev, &tv)) {
    fprintf(stderr, "error: cannot set up the event loop\n");
    c.rc = CTL_EXIT_FAIL;
    goto out;
  }
  eb.msg[0] = 0;
  err = relist(&c, &eb);
  if(err && !c.done) {
    c.rc = ctl_store_error(err, &eb);
    goto out;
  }
  if(!c.done && !timeout_ms)
    c.rc = CTL_EXIT_TIMEOUT;   /* checked once, as --timeout=0 asks */
  else if(!c.done)
    event_base_dispatch(base);
out:
  store_watch_stop(c.w);
  if(c.relist_ev)
    event_free(c.relist_ev);
  if(c.timeout_ev)
    event_free(c.timeout_ev);
  return c.rc;
}

bool ctl_parse_timeout(const char *flag, const char *val, int64_t *ms)
{
  sc_err err = duration_parse(val, ms);
  if(err) {
    ctl_usage_error("invalid argument \"%s\" for \"%s\" flag: %s", val, flag,
                    err == SC_ERR_TOO_LARGE ? "the duration is too large"
                                            : "want a duration such as 30s, "
                                              "2m or 500ms (no sign)");
    return false;
  }
  return true;
}
