/*
 * sqlite_group.c - the SQLite backend's asynchronous status writes, and
 * their group commit (docs/store.md, "Group commit").
 *
 * store_update_status_async() queues the write (its arguments copied)
 * and schedules one event on the store's loop. When it fires, the writes
 * queued by then go into one BEGIN IMMEDIATE transaction (at most
 * SQ_GROUP_MAX; a longer queue goes on in the next turn of the loop, one
 * transaction a turn, so that the watch, Cube's answers and what the
 * first answers start are not held up behind thousands of writes), each
 * under a SAVEPOINT of its own:
 * its compare-and-set is checked against its own expected version, and a
 * write that fails (CONFLICT, NOT_FOUND, out of memory) is rolled back
 * to its savepoint alone, leaving the others in. Then one COMMIT, and
 * only then the answers, each its own (OK with its new version, or its
 * error): no caller hears OK before the commit holding its write
 * returned, as durable as the connection's synchronous setting makes any
 * commit (the same as a write of its own). A commit that fails turns
 * every OK of its group into that error (nothing of the group was
 * written); a write whose failure ended the whole transaction (SQLite
 * rolls back on a full disk or an I/O error) does the same for the
 * writes before it and after it.
 *
 * Order: every other call on the store (sqlite_crud.c, sqlite_name.c)
 * first writes what is queued (sq_group_flush), so a call made after an
 * asynchronous write sees it, as when each write ran at once; the
 * answers still come from the loop. Closing the store writes what is
 * queued and drops the answers (store.h: abandoned).
 */
#include "controller/store/sqlite/sqlite_write.h"

#include <stdlib.h>
#include <string.h>
#include <event2/event.h>

#define SQ_GROUP_MAX 512

struct sq_qwrite {
  char *ns, *name, *expected;
  session_status status;
  store_reply_cb cb;
  void *ud;
  sc_err err;
  char *msg;                 /* the error's message (NULL: none / OOM) */
  char *new_version;
};

static void qwrite_clear(sq_qwrite *w)
{
  free(w->ns);
  free(w->name);
  free(w->expected);
  session_status_clear(&w->status);
  free(w->msg);
  free(w->new_version);
}

static void set_result(sq_qwrite *w, sc_err err, const char *msg)
{
  w->err = err;
  free(w->msg);
  w->msg = err && msg ? strdup(msg) : NULL;
  if(err) {
    free(w->new_version);
    w->new_version = NULL;
  }
}

/* One transaction for the writes [from, to) of the queue. The meta row
 * is read once after BEGIN and written once before COMMIT (sq_revs): a
 * write rolled back to its savepoint gives its revision back. */
static void write_group(sq_store *s, size_t from, size_t to)
{
  sc_errbuf eb;
  sc_err err;
  sq_revs rv;
  size_t i, k;
  eb.msg[0] = '\0';
  memset(&rv, 0, sizeof(rv));
  err = sq_tx_begin(s, "update status", &eb);
  if(!err)
    err = sq_revs_read(s, &rv, &eb);
  for(i = from; i < to && !err; i++) {
    sq_qwrite *w = &s->q[i];
    sq_revs before = rv;
    sc_errbuf web;
    sc_err werr;
    web.msg[0] = '\0';
    werr = sq_run(s, "SAVEPOINT sq_write", "update status", &web);
    if(!werr) {
      werr = sq_status_write_group(s, &rv, w->ns, w->name, w->expected,
                                   &w->status, &w->new_version, &web);
      if(werr && !sqlite3_get_autocommit(s->db)) {
        sc_errbuf ignored;
        (void)sq_run(s, "ROLLBACK TO sq_write", "update status", &ignored);
        sq_cache_clear(s); /* what it read may have been its own write */
        rv = before;
      }
      if(!sqlite3_get_autocommit(s->db)) {
        sc_errbuf ignored;
        (void)sq_run(s, "RELEASE sq_write", "update status", &ignored);
      }
    }
    set_result(w, werr, web.msg);
    if(sqlite3_get_autocommit(s->db)) {
      /* SQLite ended the transaction (a full disk, I/O): nothing of the
       * group is written; this write's error is everyone's */
      sq_cache_clear(s);
      err = werr ? werr : SC_ERR_INTERNAL;
      sc_errf(&eb, err, "%s", werr ? web.msg : "update status: the "
              "transaction ended early");
      break;
    }
  }
  if(!err)
    err = sq_revs_write(s, &rv, &eb);
  if(!err) {
    err = sq_tx_end(s, SC_OK, "update status", &eb);
    if(!err)
      s->group_commits++;
  }
  else
    (void)sq_tx_end(s, err, "update status", &eb);
  for(k = from; k < to && err; k++)
    if(k >= i || !s->q[k].err)
      set_result(&s->q[k], err, eb.msg);
}

void sq_group_flush(sq_store *s)
{
  while(s->n_written < s->n_q) {
    size_t to = s->n_q - s->n_written > SQ_GROUP_MAX
                  ? s->n_written + SQ_GROUP_MAX
                  : s->n_q;
    write_group(s, s->n_written, to);
    s->n_written = to;
  }
}

/* the loop's turn: write one transaction of the queue (a longer queue
 * goes on in the next turn), then answer every write written so far */
static void on_group(evutil_socket_t fd, short what, void *arg)
{
  sq_store *s = arg;
  struct timeval now = {0, 0};
  sq_qwrite *q;
  size_t n, i;
  (void)fd;
  (void)what;
  if(s->n_written < s->n_q) {
    size_t to = s->n_q - s->n_written > SQ_GROUP_MAX
                  ? s->n_written + SQ_GROUP_MAX
                  : s->n_q;
    write_group(s, s->n_written, to);
    s->n_written = to;
  }
  /* the written ones taken out: a callback may queue new writes */
  n = s->n_written;
  q = n ? malloc(n * sizeof(*q)) : NULL;
  if(n && !q) {
    evtimer_add(s->qev, &now); /* out of memory: answered next turn */
    return;
  }
  if(n)
    memcpy(q, s->q, n * sizeof(*q));
  memmove(s->q, s->q + n, (s->n_q - n) * sizeof(*s->q));
  s->n_q -= n;
  s->n_written = 0;
  if(s->n_q)
    evtimer_add(s->qev, &now); /* the rest: the next turn */
  s->n_answering = n;
  for(i = 0; i < n; i++) {
    store_reply rep;
    memset(&rep, 0, sizeof(rep));
    rep.err = q[i].err;
    rep.message = q[i].err ? (q[i].msg ? q[i].msg : "out of memory") : "";
    rep.new_version = q[i].new_version;
    q[i].new_version = NULL;
    q[i].cb(&rep, q[i].ud); /* counted in flight until it returns */
    s->n_answering--;
    free(rep.new_version); /* unless the callback took it */
    qwrite_clear(&q[i]);
  }
  free(q);
}

sc_err sq_update_status_async(store *base, const char *ns, const char *name,
                              const char *expected_version,
                              const session_status *status,
                              store_reply_cb cb, void *ud, sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  struct timeval now = {0, 0};
  sq_qwrite *w;
  if(!s->qev) {
    /* every page a write of a group changes is journaled for its
     * savepoint (SQLite's sub-journal): in a temporary file that is a
     * pwrite per page, four or five a write; in memory, a copy */
    sc_err err = sq_exec(s, "PRAGMA temp_store = MEMORY",
                         "keep the savepoint journal in memory", eb);
    if(err)
      return err;
    s->qev = evtimer_new(s->evbase, on_group, s);
    if(!s->qev)
      return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  if(s->n_q == s->cap_q) {
    size_t nc = s->cap_q ? s->cap_q * 2 : 64;
    sq_qwrite *nq = realloc(s->q, nc * sizeof(*nq));
    if(!nq)
      return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
    s->q = nq;
    s->cap_q = nc;
  }
  w = &s->q[s->n_q];
  memset(w, 0, sizeof(*w));
  w->ns = strdup(ns);
  w->name = strdup(name);
  w->expected = strdup(expected_version);
  w->cb = cb;
  w->ud = ud;
  if(!w->ns || !w->name || !w->expected ||
     session_status_copy(&w->status, status)) {
    qwrite_clear(w);
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  if(!evtimer_pending(s->qev, NULL) && evtimer_add(s->qev, &now)) {
    qwrite_clear(w);
    return sc_errf(eb, SC_ERR_INTERNAL, "store: cannot schedule an answer");
  }
  s->n_q++;
  return SC_OK;
}

size_t sq_async_inflight(const store *base)
{
  const sq_store *s = (const sq_store *)base;
  return s->n_q + s->n_answering;
}

void sq_group_close(sq_store *s)
{
  size_t i;
  if(s->db)
    sq_group_flush(s); /* written; the answers are abandoned */
  for(i = 0; i < s->n_q; i++)
    qwrite_clear(&s->q[i]);
  free(s->q);
  s->q = NULL;
  s->n_q = s->n_written = s->cap_q = 0;
  if(s->qev)
    event_free(s->qev);
  s->qev = NULL;
}
