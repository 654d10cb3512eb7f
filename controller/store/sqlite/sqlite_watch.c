/*
 * sqlite_watch.c - the SQLite backend's watch: a libevent timer checks
 * the history table and hands each entry after the watch's revision to
 * the callback, in order; a hole, a store behind the watch or history
 * compacted past it ends the watch with SC_ERR_EXPIRED (relist).
 *
 * When it checks: at once while batches come full; with a change
 * notification (sqlite_notify.c: the kernel says the file was written)
 * at once on a wake (once per loop turn however many writes it brings;
 * SQ_WATCH_HOT_MS after a check that found something, so that a stream
 * of writes is read in batches, not row by row), then every
 * SQ_WATCH_HOT_MS for SQ_WATCH_LINGER_MS after the last wake, sooner
 * after a wake that found nothing (a commit can be reported before the
 * writer has published it), then every SQ_WATCH_SAFETY_MS
 * (a write the kernel did not see); without one, every poll_ms as
 * before. See sqlite_int.h and docs/store.md, "Watch".
 */
#include "controller/store/sqlite/sqlite_write.h"
#include "controller/store/sqlite/sqlite_notify.h"
#include "controller/ops/log.h"
#include "api/session_json.h"
#include "lib/sctime.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>
#include <json-c/json.h>

#define SQ_WATCH_BATCH 1000
/* With a change notification: the checks at most this far apart while
 * hot (poll_ms when shorter), hot this long after a wake, and the safety
 * poll when idle (poll_ms when longer). */
#define SQ_WATCH_HOT_MS 10
#define SQ_WATCH_LINGER_MS 100
#define SQ_WATCH_SAFETY_MS 1000

struct sq_watch {
  store_watch base;
  sq_store *st;
  sq_watch *prev, *next;
  struct event *timer;
  store_watch_cb cb;
  store_watch_err_cb err_cb;
  void *ud;
  int64_t pos;               /* the last revision delivered */
  bool delivering;           /* inside a callback: stop defers the free */
  bool stop_requested;
  bool dead;                 /* reported EXPIRED: no more polls */
  bool failing;              /* the last poll failed (reported once) */
  sq_notify *notify;         /* the change notification, or NULL: poll */
  int64_t hot_until;         /* sctime_mono_ms: check often until then */
  int64_t gate_until;        /* a wake checks no sooner (a stream) */
  int64_t chase_ms;          /* a wake found nothing yet: the next wait */
  int64_t next_at;           /* when the timer is due */
};

typedef struct hist_row {
  int64_t revision;
  store_event_type type;
  bool type_ok;
  char *object;              /* NULL when mine */
  const session *mine;       /* this process's own write (own_find) */
} hist_row;

static void rows_free(hist_row *rows, size_t n)
{
  size_t i;
  for(i = 0; i < n; i++)
    free(rows[i].object);
  free(rows);
}

static bool parse_type(const char *t, store_event_type *out)
{
  static const store_event_type all[] = {
    STORE_EVENT_ADDED, STORE_EVENT_MODIFIED, STORE_EVENT_DELETED};
  size_t i;
  for(i = 0; t && i < sizeof(all) / sizeof(all[0]); i++)
    if(!strcmp(t, store_event_type_name(all[i]))) {
      *out = all[i];
      return true;
    }
  return false;
}

static const session *own_find(sq_store *s, int64_t rev, const char *text,
                               size_t *hint);

/* Read the counters and, when there is something after pos that history
 * still holds, up to SQ_WATCH_BATCH rows: one snapshot. */
static sc_err read_batch(sq_store *s, int64_t pos, int64_t *rev,
                         int64_t *compacted, hist_row **rows, size_t *n,
                         sc_errbuf *eb)
{
  sqlite3_stmt *q = NULL;
  size_t hint = 0;
  sc_err err;
  int rc;
  *rows = NULL;
  *n = 0;
  err = sq_read_revision(s, rev, compacted, eb); /* the cheap check */
  if(err || *rev == pos)
    return err;
  err = sq_run(s, "BEGIN", "watch", eb);
  if(err)
    return err;
  err = sq_read_revision(s, rev, compacted, eb);
  if(err || *rev <= pos || pos < *compacted)
    goto out;
  err = sq_prep(s, "SELECT revision, type, object FROM history"
                   " WHERE revision > ?1 ORDER BY revision LIMIT ?2", &q,
                "watch", eb);
  if(err)
    goto out;
  sqlite3_bind_int64(q, 1, pos);
  sqlite3_bind_int(q, 2, SQ_WATCH_BATCH);
  *rows = calloc(SQ_WATCH_BATCH, sizeof(**rows));
  if(!*rows) {
    err = SC_ERR_NOMEM;
    goto out;
  }
  while((rc = sqlite3_step(q)) == SQLITE_ROW && *n < SQ_WATCH_BATCH) {
    hist_row *r = &(*rows)[*n];
    const char *text = (const char *)sqlite3_column_text(q, 2);
    r->revision = sqlite3_column_int64(q, 0);
    r->type_ok = parse_type((const char *)sqlite3_column_text(q, 1),
                            &r->type);
    /* this process's own write: matched here, the text not copied (the
     * own writes stay as they are until the rows are delivered) */
    r->mine = r->type_ok && text ? own_find(s, r->revision, text, &hint)
                                 : NULL;
    if(!r->mine) {
      err = sq_dup_col(q, 2, &r->object);
      if(err)
        goto out;
    }
    (*n)++;
  }
  if(rc != SQLITE_DONE && rc != SQLITE_ROW)
    err = sq_fail(s, rc, "watch", eb);
out:
  sq_release(s, q);
  err = sq_tx_end(s, err, "watch", eb);
  if(err) {
    rows_free(*rows, *n);
    *rows = NULL;
    *n = 0;
  }
  return err;
}

/* --- own writes (sqlite_int.h, sq_own) --- */

/* Only plain ASCII text is kept: the decoder refuses some byte sequences
 * the encoder passes through (invalid UTF-8), and such a row must be
 * decoded (and skipped) as before, not handed out. */
static bool ascii_only(const char *s)
{
  for(; *s; s++)
    if((unsigned char)*s >= 0x80)
      return false;
  return true;
}

/* Room for one more own write (the oldest goes when full); false: none
 * this time (out of memory, or a watch may be lending the oldest). */
static bool own_room(sq_store *s)
{
  sq_watch *w;
  if(s->n_own == SQ_OWN_MAX) { /* the oldest goes: it will be decoded */
    for(w = s->watches; w; w = w->next)
      if(w->delivering)
        return false; /* it may be lending the oldest: this one is decoded */
    free(s->own[0].whole);
    session_free(s->own[0].obj);
    memmove(s->own, s->own + 1, (s->n_own - 1) * sizeof(*s->own));
    s->n_own--;
  }
  if(!s->own)
    s->own = malloc(SQ_OWN_MAX * sizeof(*s->own));
  return s->own != NULL;
}

static void own_add(sq_store *s, int64_t revision, char **whole,
                    session *obj)
{
  sq_own *e = &s->own[s->n_own++];
  e->obj = obj;
  e->revision = revision;
  e->whole = *whole;
  *whole = NULL;
}

void sq_own_note(sq_store *s, int64_t revision, char **whole,
                 const session *o)
{
  session *d;
  if(!s->watches || !*whole || !ascii_only(*whole) || !own_room(s))
    return;
  d = session_dup(o);
  if(d) /* out of memory: decoded instead */
    own_add(s, revision, whole, d);
}

void sq_own_note_take(sq_store *s, int64_t revision, char **whole,
                      session **o)
{
  if(!s->watches || !*whole || !*o || !ascii_only(*whole) || !own_room(s))
    return;
  own_add(s, revision, whole, *o);
  *o = NULL;
}

void sq_own_free(sq_store *s)
{
  size_t i;
  for(i = 0; i < s->n_own; i++) {
    free(s->own[i].whole);
    session_free(s->own[i].obj);
  }
  free(s->own);
  s->own = NULL;
  s->n_own = 0;
}

/* The object this process wrote as revision rev with this very history
 * text, or NULL. (A rolled-back write's revision is given again to
 * another write: the text tells them apart.) The rows of a batch come in
 * revision order, and so do the own writes mostly: the search starts
 * where the last match was (*hint), and from the start when it finds
 * nothing there, so a batch costs one pass over the own writes, not one
 * pass a row. */
static const session *own_scan(const sq_store *s, size_t from, int64_t rev,
                               const char *text, size_t *at)
{
  size_t i;
  for(i = from; i < s->n_own && s->own[i].revision <= rev; i++)
    if(s->own[i].revision == rev && !strcmp(s->own[i].whole, text)) {
      *at = i;
      return s->own[i].obj;
    }
  return NULL;
}

static const session *own_find(sq_store *s, int64_t rev, const char *text,
                               size_t *hint)
{
  size_t at = 0;
  const session *o = own_scan(s, *hint, rev, text, &at);
  if(!o && *hint)
    o = own_scan(s, 0, rev, text, &at);
  if(o)
    *hint = at + 1;
  return o;
}

/* Forget the own writes every watch has passed. */
static void own_trim(sq_store *s)
{
  int64_t low = INT64_MAX;
  size_t k = 0, i;
  sq_watch *w;
  for(w = s->watches; w; w = w->next)
    if(!w->stop_requested && w->pos < low)
      low = w->pos;
  while(k < s->n_own && s->own[k].revision <= low)
    k++;
  for(i = 0; i < k; i++) {
    free(s->own[i].whole);
    session_free(s->own[i].obj);
  }
  if(k) {
    memmove(s->own, s->own + k, (s->n_own - k) * sizeof(*s->own));
    s->n_own -= k;
  }
}

static void watch_schedule(sq_watch *w, int64_t ms)
{
  struct timeval tv;
  tv.tv_sec = (time_t)(ms / 1000);
  tv.tv_usec = (suseconds_t)((ms % 1000) * 1000);
  w->next_at = sctime_mono_ms() + ms;
  evtimer_add(w->timer, &tv);
}

static int64_t hot_ms(const sq_watch *w)
{
  return w->st->poll_ms < SQ_WATCH_HOT_MS ? w->st->poll_ms : SQ_WATCH_HOT_MS;
}

/* The wait before the next check when the last found no full batch. A
 * wake whose check found nothing was likely early (the commit is in the
 * file, not yet published): the checks after it come 1, 2, 4, 8 ms
 * apart, then every hot_ms. A failed check is retried as the poll would
 * (no later). */
static int64_t next_wait(sq_watch *w)
{
  int64_t poll = w->st->poll_ms, wait;
  if(!w->notify)
    return poll;
  if(sctime_mono_ms() < w->hot_until) {
    wait = hot_ms(w);
    if(w->chase_ms && w->chase_ms < wait) {
      wait = w->chase_ms;
      w->chase_ms *= 2;
    }
    else
      w->chase_ms = 0;
  }
  else
    wait = poll > SQ_WATCH_SAFETY_MS ? poll : SQ_WATCH_SAFETY_MS;
  return w->failing && poll < wait ? poll : wait;
}

/* Why this watch polls (no change notification): said once per store,
 * at info level. */
static void tell_polling(sq_watch *w, const char *why)
{
  sq_store *s = w->st;
  char poll[32];
  if(s->notify_told)
    return;
  s->notify_told = true;
  snprintf(poll, sizeof(poll), "%dms", s->poll_ms);
  log_kv(s->base.log, LOG_INFO, "store watch: no change notification, "
         "polling instead", "store", s->label, "reason", why, "poll", poll,
         NULL);
}

/* sqlite_notify.c: the file was written (or the notification is gone). */
static void on_notify(bool lost, void *ud)
{
  sq_watch *w = ud;
  int64_t now = sctime_mono_ms(), due;
  if(lost) {
    sq_notify_free(w->notify);
    w->notify = NULL;
    tell_polling(w, "the change notification stopped (the directory's "
                 "file system was unmounted, or the directory removed)");
  }
  if(w->dead)
    return;
  w->hot_until = now + SQ_WATCH_LINGER_MS;
  w->chase_ms = 1;
  /* one check for what this turn brought: at once, or, while changes
   * stream in, hot_ms after the check that found the last ones */
  due = w->gate_until > now ? w->gate_until : now;
  if(due < w->next_at)
    watch_schedule(w, due - now);
}

/* Report an error to the watcher; EXPIRED ends the watch. */
static void watch_report(sq_watch *w, sc_err err, const char *msg)
{
  if(err == SC_ERR_EXPIRED)
    w->dead = true;
  if(w->err_cb)
    w->err_cb(err, msg, w->ud);
}

/* A history entry that does not decode: skipped and reported (store.h,
 * "Objects that do not decode"), not given to err_cb; the watch goes on
 * with the next revision. The key is read from the raw text if it can. */
static void skip_entry(sq_store *s, const hist_row *r, const char *why)
{
  char msg[SC_ERRBUF_SIZE * 2];
  json_object *raw = json_tokener_parse(r->object);
  json_object *m = NULL, *v;
  const char *f[2] = {NULL, NULL};
  size_t k;
  for(k = 0; k < 2 && json_object_object_get_ex(raw, "metadata", &m); k++)
    if(json_object_object_get_ex(m, k ? "name" : "namespace", &v) &&
       json_object_is_type(v, json_type_string))
      f[k] = json_object_get_string(v);
  snprintf(msg, sizeof(msg), "history revision %lld: %s",
           (long long)r->revision, why);
  (void)store_skip_report(&s->base, NULL, "watch", f[0], f[1], NULL, msg,
                          NULL);
  json_object_put(raw);
}

static void watch_poll(evutil_socket_t fd, short what, void *arg)
{
  sq_watch *w = arg;
  sq_store *s = w->st;
  hist_row *rows = NULL;
  size_t n = 0, i;
  int64_t rev = 0, compacted = 0;
  sc_errbuf eb;
  char msg[SC_ERRBUF_SIZE * 2];
  sc_err err;
  (void)fd;
  (void)what;

  eb.msg[0] = 0;
  err = read_batch(s, w->pos, &rev, &compacted, &rows, &n, &eb);
  w->gate_until = n ? sctime_mono_ms() + hot_ms(w) : 0;
  if(n)
    w->chase_ms = 0; /* found: no chase */
  w->delivering = true;
  if(err) {
    /* Transient (busy, I/O): told once per run of failures; retried. */
    if(!w->failing) {
      w->failing = true;
      watch_report(w, err, eb.msg);
    }
    goto out;
  }
  w->failing = false;
  if(rev < w->pos) {
    snprintf(msg, sizeof(msg),
             "%s: watch from revision %lld, but the store is at %lld (was "
             "the database replaced?): relist", s->label,
             (long long)w->pos, (long long)rev);
    watch_report(w, SC_ERR_EXPIRED, msg);
    goto out;
  }
  if(w->pos < compacted) {
    snprintf(msg, sizeof(msg),
             "%s: revision %lld is older than the kept history (compacted "
             "through %lld): relist", s->label, (long long)w->pos,
             (long long)compacted);
    watch_report(w, SC_ERR_EXPIRED, msg);
    goto out;
  }
  if(!n && rev > w->pos) {
    snprintf(msg, sizeof(msg),
             "%s: the revisions after %lld are missing from the history: "
             "relist", s->label, (long long)w->pos);
    watch_report(w, SC_ERR_EXPIRED, msg);
    goto out;
  }
  for(i = 0; i < n && !w->stop_requested && !w->dead; i++) {
    hist_row *r = &rows[i];
    session *o = NULL;
    const session *mine;
    char rv[STORE_REV_LEN];
    store_event ev;
    if(r->revision != w->pos + 1) {
      /* History is contiguous; a hole means it was compacted past us. */
      snprintf(msg, sizeof(msg),
               "%s: revision %lld is missing from the history (next kept is "
               "%lld): relist", s->label, (long long)(w->pos + 1),
               (long long)r->revision);
      watch_report(w, SC_ERR_EXPIRED, msg);
      break;
    }
    w->pos = r->revision;
    /* this process's own write: the object it encoded, not decoded */
    mine = r->mine;
    if(mine) {
      s->own_hits++;
      err = SC_OK;
    }
    else if(!r->type_ok)
      err = sc_errf(&eb, SC_ERR_INVALID, "unknown event type");
    else
      err = session_from_json(r->object, strlen(r->object), &o, &eb);
    if(err == SC_ERR_NOMEM) {
      watch_report(w, err, "out of memory decoding a history entry");
      continue;
    }
    if(err) {
      skip_entry(s, r, eb.msg);
      continue;
    }
    store_rev_format(r->revision, rv);
    ev.type = r->type;
    ev.obj = mine ? mine : o;
    ev.revision = rv;
    w->cb(&ev, w->ud);
    session_free(o);
  }
out:
  w->delivering = false;
  rows_free(rows, n);
  own_trim(s);
  if(w->stop_requested) {
    sq_watch_free(w);
    return;
  }
  if(w->dead) { /* polls no more: no wake either */
    sq_notify_free(w->notify);
    w->notify = NULL;
  }
  else
    watch_schedule(w, n == SQ_WATCH_BATCH ? 0 : next_wait(w));
}

sc_err sq_watch_start(store *base, const char *from_revision,
                      store_watch_cb cb, store_watch_err_cb err_cb,
                      void *ud, store_watch **out, sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  sq_watch *w;
  int64_t pos = 0;
  sc_errbuf eb_n;
  sc_err err;

  if(!s->evbase)
    return sc_errf(eb, SC_ERR_INVALID,
                   "%s: watch: the store was opened without an event base",
                   s->label);
  if(!from_revision || !*from_revision)
    err = sq_read_revision(s, &pos, NULL, eb);
  else if(store_rev_parse(from_revision, &pos))
    err = sc_errf(eb, SC_ERR_INVALID,
                  "%s: watch: bad revision \"%s\" (want a decimal number)",
                  s->label, from_revision);
  else
    err = SC_OK;
  if(err)
    return err;
  w = calloc(1, sizeof(*w));
  if(!w)
    return SC_ERR_NOMEM;
  w->base.ops = s->base.ops; /* the backend table (sqlite.c) */
  w->st = s;
  w->cb = cb;
  w->err_cb = err_cb;
  w->ud = ud;
  w->pos = pos;
  w->timer = evtimer_new(s->evbase, watch_poll, w);
  if(!w->timer) {
    free(w);
    return SC_ERR_NOMEM;
  }
  /* the change notification, or the poll alone (said once) */
  eb_n.msg[0] = 0;
  if(sq_notify_new(s->evbase, s->path, on_notify, w, &w->notify, &eb_n))
    tell_polling(w, eb_n.msg[0] ? eb_n.msg : "out of memory");
  w->next = s->watches;
  if(s->watches)
    s->watches->prev = w;
  s->watches = w;
  watch_schedule(w, 0);
  *out = &w->base;
  return SC_OK;
}

void sq_watch_free(sq_watch *w)
{
  sq_store *s = w->st;
  if(w->prev)
    w->prev->next = w->next;
  else
    s->watches = w->next;
  if(w->next)
    w->next->prev = w->prev;
  event_free(w->timer);
  sq_notify_free(w->notify);
  free(w);
  if(!s->watches)
    sq_own_free(s); /* no one left to read them */
}

void sq_watch_stop(store_watch *base)
{
  sq_watch *w = (sq_watch *)base;
  if(w->delivering) {
    /* Called from its own callback: freed when the callback returns. */
    w->stop_requested = true;
    return;
  }
  sq_watch_free(w);
}

