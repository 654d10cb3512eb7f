/* Tests of the SQLite watch's wake-up (docs/store.md, "Watch"): an idle
 * watch does not poll at --watch-poll, a write by another process or
 * connection wakes it however long its poll, a burst of writes does not
 * make it spin, and without a change notification it says so once and
 * polls as before. They count the watch's checks (its read of the meta
 * row) with SQLite's statement trace on the store's connection. */
#include "test/harness.h"
#include "test/unit/tmp_store.h"
#include "controller/store/store.h"
#include "controller/store/sqlite/sqlite_int.h"
#include "controller/ops/log.h"
#include "lib/sctime.h"

#include <dirent.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <event2/event.h>

/* --- fixtures --- */

static int tmp_make(tmp *t)
{
  return tmp_make_named(t, "sc-sqnt");
}

static store *open_poll(const tmp *t, struct event_base *b, int poll_ms,
                        logger *lg)
{
  store_open_opts o = {0};
  store *st = NULL;
  sc_errbuf eb;
  o.base = b;
  o.create = true;
  o.poll_interval_ms = poll_ms;
  o.log = lg;
  if(store_open(t->url, &o, &st, &eb)) {
    fprintf(stderr, "  store_open: %s\n", eb.msg);
    return NULL;
  }
  return st;
}

static session *mk(const char *name)
{
  session *s = session_new();
  s->meta.namespace_ = strdup("ns");
  s->meta.name = strdup(name);
  s->spec.template_id = strdup("tmpl");
  session_apply_defaults(s);
  return s;
}

static sc_err apply_one(store *st, const char *name)
{
  session *o = mk(name);
  sc_errbuf eb;
  sc_err err = store_apply(st, &o, 1, NULL, &eb);
  if(err)
    fprintf(stderr, "  apply: %s\n", eb.msg);
  session_free(o);
  return err;
}

/* the watch's checks on the store's connection: each begins with a read
 * of the meta row, and one that finds something reads it again inside
 * the transaction it opens (BEGIN); the tests write nothing through the
 * watched store while they count */
static int on_trace(unsigned what, void *ud, void *p, void *x)
{
  int *checks = ud;
  const char *sql = sqlite3_sql((sqlite3_stmt *)p);
  (void)what;
  (void)x;
  if(sql && !strcmp(sql, "SELECT revision, compacted FROM meta"))
    (*checks)++;
  if(sql && !strcmp(sql, "BEGIN"))
    (*checks)--;
  return 0;
}

static void count_checks(store *st, int *checks)
{
  sqlite3_trace_v2(((sq_store *)st)->db, SQLITE_TRACE_STMT, on_trace,
                   checks);
}

typedef struct seen {
  int n;
  char names[256][16];
  long long revs[256];
} seen;

static void on_event(const store_event *ev, void *ud)
{
  seen *s = ud;
  if(s->n >= 256)
    return;
  snprintf(s->names[s->n], sizeof(s->names[0]), "%s", ev->obj->meta.name);
  s->revs[s->n] = strtoll(ev->revision, NULL, 10);
  s->n++;
}

/* run the loop for ms (a timer ends it) */
static void run_for(struct event_base *b, int ms)
{
  struct timeval tv;
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  event_base_loopexit(b, &tv);
  event_base_dispatch(b);
}

/* run the loop until s has n events or timeout_ms passed */
static void run_until(struct event_base *b, const seen *s, int n,
                      int timeout_ms)
{
  int64_t end = sctime_mono_ms() + timeout_ms;
  while(s->n < n && sctime_mono_ms() < end)
    run_for(b, 20);
}

/* The end of a child: its status through exec of the shell, so that a
 * leak checker running the tests (valgrind follows a fork) does not
 * count the parent's objects the child inherited and never frees. */
static void child_exit(int rc)
{
  execl("/bin/sh", "sh", "-c", rc ? "exit 1" : "exit 0", (char *)NULL);
  _exit(rc);
}

/* A child process that writes with a store of its own: apply name. */
static pid_t child_apply(const tmp *t, const char *name)
{
  pid_t pid = fork();
  if(pid == 0) {
    store *st = open_poll(t, NULL, 0, NULL);
    int rc = st && !apply_one(st, name) ? 0 : 1;
    store_close(st);
    child_exit(rc);
  }
  return pid;
}

static int child_status(pid_t pid)
{
  int status = 0;
  if(pid < 0 || waitpid(pid, &status, 0) != pid)
    return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A user's write straight into the file (what `sqlite3 FILE "..."` does,
 * as the e2e tests' answer()): a status for ns/name, a new revision, the
 * objects row and its MODIFIED history entry, in one transaction, from
 * a child process with a connection of its own. */
static pid_t child_sql_status(const tmp *t, const char *name,
                              const char *sandbox)
{
  pid_t pid = fork();
  if(pid == 0) {
    char sql[1600];
    sqlite3 *db = NULL;
    int rc;
    snprintf(sql, sizeof(sql),
      "BEGIN IMMEDIATE;"
      "UPDATE meta SET revision = revision + 1;"
      "UPDATE objects SET status = json('{\"phase\":\"Running\","
      "\"sandboxID\":\"%s\"}'), revision = (SELECT revision FROM meta)"
      " WHERE namespace = 'ns' AND name = '%s';"
      "INSERT INTO history(revision, type, namespace, name, object)"
      " SELECT m.revision, 'MODIFIED', 'ns', '%s',"
      " json_set(h.object, '$.status', json('{\"phase\":\"Running\","
      "\"sandboxID\":\"%s\"}'), '$.metadata.resourceVersion',"
      " CAST(m.revision AS TEXT))"
      " FROM meta m, (SELECT object FROM history WHERE namespace = 'ns'"
      " AND name = '%s' ORDER BY revision DESC LIMIT 1) h;"
      "COMMIT;", sandbox, name, name, sandbox, name);
    rc = sqlite3_open_v2(t->path, &db, SQLITE_OPEN_READWRITE, NULL);
    if(rc == SQLITE_OK)
      rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    child_exit(rc == SQLITE_OK ? 0 : 1);
  }
  return pid;
}

/* --- tests --- */

TEST(idle_watch_does_not_poll)
{
  struct event_base *b = event_base_new();
  store *st;
  store_watch *w = NULL;
  seen s;
  sc_errbuf eb;
  tmp t;
  int checks = 0;
  CHECK(b);
  CHECK(!tmp_make(&t));
  st = open_poll(&t, b, 10, NULL); /* the controller's default poll */
  CHECK(st);
  CHECK_OK(apply_one(st, "a"));
  memset(&s, 0, sizeof(s));
  CHECK_OK(store_watch_start(st, NULL, on_event, NULL, &s, &w, &eb));
  run_for(b, 200); /* the first check, and the wake of the apply's own
                      write to the file, if the kernel reports it late */
  count_checks(st, &checks);
  /* half a second of an idle store: a poll every 10 ms would be about
   * 50 checks; the safety poll is 1 s away */
  run_for(b, 500);
  CHECK_MSG(checks <= 1, "an idle watch checked %d times in 500 ms",
            checks);
  CHECK_INT(s.n, 0);
  store_watch_stop(w);
  store_close(st);
  event_base_free(b);
  tmp_clean(&t);
}

TEST(long_poll_watch_sees_another_process)
{
  struct event_base *b = event_base_new();
  store *st;
  store_watch *w = NULL;
  seen s;
  sc_errbuf eb;
  tmp t;
  CHECK(b);
  CHECK(!tmp_make(&t));
  st = open_poll(&t, b, 60000, NULL); /* a poll far off */
  CHECK(st);
  CHECK_OK(apply_one(st, "a"));
  memset(&s, 0, sizeof(s));
  CHECK_OK(store_watch_start(st, NULL, on_event, NULL, &s, &w, &eb));
  run_for(b, 50); /* the first check: the next poll is a minute away */
  CHECK_INT(s.n, 0);
  /* another process applies through the store API */
  CHECK_INT(child_status(child_apply(&t, "b")), 0);
  run_until(b, &s, 1, 5000);
  CHECK_MSG(s.n == 1, "the other process's apply was not delivered within "
            "5 s (the poll is 60 s): %d events", s.n);
  CHECK_STR(s.names[0], "b");
  /* a user's SQL straight into the file, the same */
  CHECK_INT(child_status(child_sql_status(&t, "a", "sb-1")), 0);
  run_until(b, &s, 2, 5000);
  CHECK_MSG(s.n == 2, "the user's SQL write was not delivered within 5 s "
            "(the poll is 60 s): %d events", s.n);
  CHECK_STR(s.names[1], "a");
  CHECK_INT(s.revs[1], s.revs[0] + 1);
  store_watch_stop(w);
  store_close(st);
  event_base_free(b);
  tmp_clean(&t);
}

TEST(burst_of_writes_does_not_spin)
{
  struct event_base *b = event_base_new();
  store *st, *other;
  store_watch *w = NULL;
  seen s;
  sc_errbuf eb;
  tmp t;
  int checks = 0, i;
  int64_t t0, ms;
  CHECK(b);
  CHECK(!tmp_make(&t));
  st = open_poll(&t, b, 60000, NULL);
  other = open_poll(&t, NULL, 0, NULL); /* another writer */
  CHECK(st && other);
  CHECK_OK(apply_one(st, "seed"));
  memset(&s, 0, sizeof(s));
  CHECK_OK(store_watch_start(st, NULL, on_event, NULL, &s, &w, &eb));
  run_for(b, 50);
  count_checks(st, &checks);
  t0 = sctime_mono_ms();
  /* 200 commits, each followed by a turn of the loop: every one wakes
   * the watch; it checks at most once per 10 ms however many come */
  for(i = 0; i < 200; i++) {
    char name[16];
    snprintf(name, sizeof(name), "n%d", i);
    CHECK_OK(apply_one(other, name));
    event_base_loop(b, EVLOOP_NONBLOCK);
  }
  run_until(b, &s, 200, 5000);
  ms = sctime_mono_ms() - t0;
  CHECK_INT(s.n, 200);
  for(i = 0; i < 200; i++) {
    char name[16];
    snprintf(name, sizeof(name), "n%d", i);
    CHECK_STR(s.names[i], name);
    if(i)
      CHECK_INT(s.revs[i], s.revs[i - 1] + 1);
  }
  /* at most one check per 10 ms of the burst, plus the hot polls after
   * the last wake (100 ms) and slack for the timer's rounding */
  CHECK_MSG(checks <= ms / 10 + 15, "%d checks for 200 writes in %lld ms",
            checks, (long long)ms);
  store_watch_stop(w);
  store_close(other);
  store_close(st);
  event_base_free(b);
  tmp_clean(&t);
}

TEST(without_notification_says_so_once_and_polls)
{
  struct event_base *b = event_base_new();
  store *st, *other;
  store_watch *w1 = NULL, *w2 = NULL;
  seen s1, s2;
  sc_errbuf eb;
  struct rlimit was, low;
  char *logtext = NULL, *at;
  size_t loglen = 0;
  FILE *logf = open_memstream(&logtext, &loglen);
  logger *lg = logf ? log_new(logf, LOG_FORMAT_LOGFMT, LOG_INFO) : NULL;
  tmp t;
  int fd, said = 0, checks = 0;
  int64_t t0;
  sc_err e1, e2;
  CHECK(b && lg);
  CHECK(!tmp_make(&t));
  st = open_poll(&t, b, 20, lg);
  other = open_poll(&t, NULL, 0, NULL);
  CHECK(st && other);
  CHECK_OK(apply_one(st, "a"));
  /* no descriptor left for inotify: the lowest free one is the limit */
  fd = open("/dev/null", O_RDONLY);
  CHECK(fd >= 0);
  close(fd);
  CHECK_OK(getrlimit(RLIMIT_NOFILE, &was));
  low = was;
  low.rlim_cur = (rlim_t)fd;
  CHECK_OK(setrlimit(RLIMIT_NOFILE, &low));
  memset(&s1, 0, sizeof(s1));
  memset(&s2, 0, sizeof(s2));
  e1 = store_watch_start(st, NULL, on_event, NULL, &s1, &w1, &eb);
  e2 = store_watch_start(st, NULL, on_event, NULL, &s2, &w2, &eb);
  CHECK_OK(setrlimit(RLIMIT_NOFILE, &was));
  CHECK_OK(e1);
  CHECK_OK(e2);
  fflush(logf);
  for(at = logtext; at && (at = strstr(at, "no change notification"));
      at++)
    said++;
  CHECK_MSG(said == 1, "said %d times that the watch polls (want once per "
            "store): %s", said, logtext ? logtext : "");
  CHECK(strstr(logtext, "level=info"));
  CHECK(strstr(logtext, "inotify_init1"));
  CHECK(strstr(logtext, "poll=20ms"));
  /* and the poll delivers another connection's write */
  run_for(b, 50);
  count_checks(st, &checks);
  CHECK_OK(apply_one(other, "b"));
  run_until(b, &s1, 1, 5000);
  run_until(b, &s2, 1, 5000);
  CHECK_INT(s1.n, 1);
  CHECK_INT(s2.n, 1);
  CHECK_STR(s1.names[0], "b");
  CHECK_STR(s2.names[0], "b");
  /* polled, not woken: the two watches go on checking every 20 ms (the
   * safety poll of a notified watch would be 1 s) */
  checks = 0;
  t0 = sctime_mono_ms();
  while(checks < 6 && sctime_mono_ms() - t0 < 900)
    run_for(b, 20);
  CHECK_MSG(checks >= 6, "only %d checks of two polling watches in 900 ms",
            checks);
  store_watch_stop(w1);
  store_watch_stop(w2);
  store_close(other);
  store_close(st);
  log_free(lg);
  fclose(logf);
  free(logtext);
  event_base_free(b);
  tmp_clean(&t);
}

TEST_LIST = {
  T(idle_watch_does_not_poll),
  T(long_poll_watch_sees_another_process),
  T(burst_of_writes_does_not_spin),
  T(without_notification_says_so_once_and_polls),
  {0}
};
TEST_MAIN()
