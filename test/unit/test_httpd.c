/*
 * The operator endpoints (controller/ops/httpd.c): the answers, and the guards
 * against whoever reaches the port: methods other than GET and HEAD, a body
 * that is never read, an oversized head, idle and dribbling connections, a
 * flood of idle connections past the descriptor limit, and accept() failing
 * for want of descriptors (EMFILE).
 *
 * Each server runs in a child process of its own (its own event_base,
 * RLIMIT_NOFILE and stderr file), so that the test can lower its
 * descriptor limit, fill its descriptor table, read its CPU time and
 * memory from /proc and count its log lines, while this process is the
 * client with plain blocking sockets.
 */
#include "test/harness.h"
#include "controller/ops/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/sctime.h"

typedef struct srv_opts {
  int nofile;          /* the child's RLIMIT_NOFILE (soft and hard); 0: ours */
  int leave_free;      /* > 0: the child fills its descriptors but these */
  int max_connections; /* httpd_opts */
  int timeout_ms;
  const char *ready_why;  /* the ready hook says false with this */
  const char *health_why; /* the healthy hook says false with this */
} srv_opts;

typedef struct srv {
  pid_t pid;
  int port;
  int cap;          /* httpd_max_connections() in the child */
  char err[64];     /* the child's stderr */
} srv;

static bool hook_healthy(void *ud, const char **why)
{
  const srv_opts *o = ud;
  *why = o->health_why;
  return !o->health_why;
}

static bool hook_ready(void *ud, const char **why)
{
  const srv_opts *o = ud;
  *why = o->ready_why;
  return !o->ready_why;
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
  (void)fd;
  (void)what;
  event_base_loopbreak(arg);
}

/* the child: serve until SIGTERM (or 60 s, or the parent's death) */
static void srv_child(srv_opts *o, int errfd, int wfd)
{
  struct event_base *base;
  metrics *m;
  logger *lg;
  httpd *h = NULL;
  httpd_hooks hooks = {hook_healthy, hook_ready, o};
  httpd_opts ho;
  sc_errbuf eb;
  struct event *sig, *tmo;
  struct timeval life = {60, 0};
  int port = 0, msg[2];

  prctl(PR_SET_PDEATHSIG, SIGKILL);
  dup2(errfd, 2);
  close(errfd);
  if(o->nofile) {
    struct rlimit rl = {(rlim_t)o->nofile, (rlim_t)o->nofile};
    if(setrlimit(RLIMIT_NOFILE, &rl))
      exit(3);
  }
  base = event_base_new();
  m = metrics_new();
  lg = log_new(stderr, LOG_FORMAT_LOGFMT, LOG_INFO);
  if(!base || !m || !lg ||
     metrics_declare(m, "test_httpd_family", METRIC_COUNTER, "a family",
                     NULL, 0))
    exit(3);
  memset(&ho, 0, sizeof(ho));
  ho.max_connections = o->max_connections;
  ho.timeout_ms = o->timeout_ms;
  ho.lg = lg;
  if(httpd_start(base, "127.0.0.1:0", m, &hooks, &ho, &h, &port, &eb)) {
    fprintf(stderr, "httpd_start: %s\n", eb.msg);
    exit(3);
  }
  sig = evsignal_new(base, SIGTERM, on_stop, base);
  tmo = evtimer_new(base, on_stop, base);
  if(!sig || !tmo || event_add(sig, NULL) || evtimer_add(tmo, &life))
    exit(3);
  if(o->leave_free > 0) {
    /* the descriptors Cube and the store would hold */
    int fds[4096], n = 0, i;
    while(n < 4096 && (fds[n] = open("/dev/null", O_RDONLY)) >= 0)
      n++;
    for(i = 0; i < o->leave_free - 1 && n > 0; i++)
      close(fds[--n]);
  }
  msg[0] = port;
  msg[1] = httpd_max_connections(h);
  if(write(wfd, msg, sizeof(msg)) != (ssize_t)sizeof(msg))
    exit(3);
  close(wfd); /* the last of leave_free */
  event_base_dispatch(base);
  httpd_stop(h);
  event_free(sig);
  event_free(tmo);
  event_base_free(base);
  metrics_free(m);
  log_free(lg);
  exit(0);
}

static bool srv_start(srv *s, srv_opts *o)
{
  int p[2], errfd, msg[2];
  ssize_t n;
  memset(s, 0, sizeof(*s));
  snprintf(s->err, sizeof(s->err), "/tmp/test_httpd.XXXXXX");
  errfd = mkstemp(s->err);
  if(errfd < 0 || pipe(p))
    return false;
  fflush(stdout);
  fflush(stderr);
  s->pid = fork();
  if(s->pid < 0)
    return false;
  if(s->pid == 0) {
    close(p[0]);
    srv_child(o, errfd, p[1]);
  }
  close(errfd);
  close(p[1]);
  n = read(p[0], msg, sizeof(msg));
  close(p[0]);
  if(n != (ssize_t)sizeof(msg)) {
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
    return false;
  }
  s->port = msg[0];
  s->cap = msg[1];
  return true;
}

/* SIGTERM, wait: the child's exit status (-1: it did not exit itself) */
static int srv_stop(srv *s)
{
  int st = 0, i;
  if(!s->pid)
    return -1;
  kill(s->pid, SIGTERM);
  for(i = 0; i < 100; i++) {
    if(waitpid(s->pid, &st, WNOHANG) == s->pid)
      break;
    usleep(50000);
  }
  if(i == 100) {
    kill(s->pid, SIGKILL);
    waitpid(s->pid, &st, 0);
    st = -1;
  }
  s->pid = 0;
  unlink(s->err);
  return st < 0 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static bool srv_alive(const srv *s)
{
  int st;
  return s->pid && waitpid(s->pid, &st, WNOHANG) == 0;
}

/* a failed check stops the server first */
#define SCHECK(s, cond)                                                     \
  do {                                                                      \
    if(!(cond)) {                                                           \
      srv_stop(s);                                                          \
      TEST_FAIL_("CHECK(%s) failed", #cond);                                \
    }                                                                       \
  } while(0)

/* user+system CPU of pid in ms */
static long cpu_ms(pid_t pid)
{
  char path[64], buf[1024], *p;
  unsigned long ut = 0, st = 0;
  FILE *f;
  size_t n;
  int i;
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  f = fopen(path, "r");
  if(!f)
    return -1;
  n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  p = strrchr(buf, ')');
  if(!p)
    return -1;
  p++;
  for(i = 3; i <= 15 && p; i++) { /* field 3 is the state */
    while(*p == ' ')
      p++;
    if(i == 14)
      ut = strtoul(p, NULL, 10);
    if(i == 15)
      st = strtoul(p, NULL, 10);
    p = strchr(p, ' ');
  }
  return (long)((ut + st) * 1000 / (unsigned long)sysconf(_SC_CLK_TCK));
}

static long rss_kb(pid_t pid)
{
  char path[64], line[256];
  long kb = -1;
  FILE *f;
  snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
  f = fopen(path, "r");
  if(!f)
    return -1;
  while(fgets(line, sizeof(line), f))
    if(!strncmp(line, "VmRSS:", 6))
      kb = strtol(line + 6, NULL, 10);
  fclose(f);
  return kb;
}

static long count_lines(const char *path)
{
  FILE *f = fopen(path, "r");
  long n = 0;
  int ch;
  if(!f)
    return -1;
  while((ch = getc(f)) != EOF)
    if(ch == '\n')
      n++;
  fclose(f);
  return n;
}

static bool file_has(const char *path, const char *needle)
{
  char buf[65536];
  FILE *f = fopen(path, "r");
  size_t n;
  if(!f)
    return false;
  n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  return strstr(buf, needle) != NULL;
}

static int cli_connect(int port, int timeout_ms, bool nonblock)
{
  struct sockaddr_in sa;
  struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  int fd = socket(AF_INET, SOCK_STREAM | (nonblock ? SOCK_NONBLOCK : 0), 0);
  if(fd < 0)
    return -1;
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_port = htons((unsigned short)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
     !(nonblock && errno == EINPROGRESS)) {
    close(fd);
    return -1;
  }
  return fd;
}

static bool send_all(int fd, const char *p, size_t n)
{
  while(n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if(w <= 0)
      return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

/* read until EOF (or the socket's timeout) into out; the bytes read */
static size_t read_all(int fd, char *out, size_t cap)
{
  size_t len = 0;
  for(;;) {
    ssize_t r;
    if(len + 1 >= cap)
      break;
    r = recv(fd, out + len, cap - 1 - len, 0);
    if(r <= 0)
      break;
    len += (size_t)r;
  }
  out[len] = '\0';
  return len;
}

static int status_of(const char *resp)
{
  if(strncmp(resp, "HTTP/1.1 ", 9))
    return -1;
  return (int)strtol(resp + 9, NULL, 10);
}

static const char *body_of(const char *resp)
{
  const char *p = strstr(resp, "\r\n\r\n");
  return p ? p + 4 : "";
}

static long content_length(const char *resp)
{
  const char *p = strstr(resp, "\r\nContent-Length: ");
  return p ? strtol(p + 18, NULL, 10) : -1;
}

/* one exchange: send req, read the answer into out; its status or -1 */
static int http_do(int port, const char *req, size_t reqlen, char *out,
                   size_t cap)
{
  int fd = cli_connect(port, 3000, false), code;
  out[0] = '\0';
  if(fd < 0)
    return -1;
  if(!send_all(fd, req, reqlen)) {
    close(fd);
    return -1;
  }
  read_all(fd, out, cap);
  close(fd);
  code = status_of(out);
  return code;
}

static int get(int port, const char *req, char *out, size_t cap)
{
  return http_do(port, req, strlen(req), out, cap);
}

static void raise_own_nofile(void)
{
  struct rlimit rl;
  if(!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

static void sleep_ms(int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* does fd see EOF (or a reset) within ms? */
static bool closed_within(int fd, int ms)
{
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  char b[256];
  ssize_t r;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  do
    r = recv(fd, b, sizeof(b), 0);
  while(r > 0);
  return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* ------------------------------------------------------------------ */

TEST(methods_paths_and_head)
{
  srv_opts o;
  srv s;
  static char r[1 << 20];
  long glen;
  memset(&o, 0, sizeof(o));
  CHECK(srv_start(&s, &o));
  SCHECK(&s, s.cap == HTTPD_DEFAULT_MAX_CONNECTIONS);
  SCHECK(&s, get(s.port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", r,
                 sizeof(r)) == 200);
  SCHECK(&s, strstr(body_of(r), "test_httpd_family") != NULL);
  SCHECK(&s, strstr(r, "\r\nConnection: close\r\n") != NULL);
  glen = content_length(r);
  SCHECK(&s, glen == (long)strlen(body_of(r)));
  SCHECK(&s, get(s.port, "HEAD /metrics HTTP/1.1\r\n\r\n", r, sizeof(r)) ==
             200);
  SCHECK(&s, content_length(r) > 0 && !*body_of(r));
  SCHECK(&s, get(s.port, "PUT /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\n"
                         "hello", r, sizeof(r)) == 405);
  SCHECK(&s, strstr(r, "\r\nAllow: GET, HEAD\r\n") != NULL);
  SCHECK(&s, get(s.port, "POST /healthz HTTP/1.1\r\n\r\n", r, sizeof(r)) ==
             405);
  SCHECK(&s, get(s.port, "DELETE /readyz HTTP/1.0\r\n\r\n", r, sizeof(r)) ==
             405);
  SCHECK(&s, get(s.port, "GET /healthz HTTP/1.1\r\n\r\n", r, sizeof(r)) ==
             200);
  SCHECK(&s, !strcmp(body_of(r), "ok\n"));
  SCHECK(&s, get(s.port, "GET /readyz HTTP/1.1\r\n\r\n", r, sizeof(r)) ==
             200);
  SCHECK(&s, get(s.port, "GET /nope HTTP/1.1\r\n\r\n", r, sizeof(r)) == 404);
  SCHECK(&s, get(s.port, "GET /metricsx HTTP/1.1\r\n\r\n", r, sizeof(r)) ==
             404);
  SCHECK(&s, get(s.port, "GET /metrics?x=1 HTTP/1.1\r\n\r\n", r,
                 sizeof(r)) == 200);
  SCHECK(&s, get(s.port, "GET http://h:9/healthz HTTP/1.1\r\n\r\n", r,
                 sizeof(r)) == 200);
  /* bare LF line ends, and empty lines before the request line */
  SCHECK(&s, get(s.port, "\r\nGET /healthz HTTP/1.0\n\n", r, sizeof(r)) ==
             200);
  SCHECK(&s, get(s.port, "GET /healthz HTTP/2.0\r\n\r\n", r, sizeof(r)) ==
             505);
  SCHECK(&s, get(s.port, "nonsense\r\n\r\n", r, sizeof(r)) == 400);
  SCHECK(&s, get(s.port, "GET  /healthz HTTP/1.1\r\n\r\n", r, sizeof(r)) ==
             400);
  SCHECK(&s, get(s.port, "GET healthz HTTP/1.1\r\n\r\n", r, sizeof(r)) ==
             400);
  {
    static const char nul[] = "GET /he\0lthz HTTP/1.1\r\n\r\n";
    SCHECK(&s, http_do(s.port, nul, sizeof(nul) - 1, r, sizeof(r)) == 400);
  }
  {
    /* the client shuts its side after the request: still answered */
    int fd = cli_connect(s.port, 3000, false);
    static const char q[] = "GET /healthz HTTP/1.1\r\n\r\n";
    SCHECK(&s, fd >= 0);
    SCHECK(&s, send_all(fd, q, sizeof(q) - 1));
    shutdown(fd, SHUT_WR);
    read_all(fd, r, sizeof(r));
    close(fd);
    SCHECK(&s, status_of(r) == 200);
  }
  SCHECK(&s, get(s.port, "GET /metrics HTTP/1.1\r\n\r\n", r, sizeof(r)) ==
             200);
  SCHECK(&s, strstr(r, "session_controller_http_requests_total{code=\"405\"}"
                       " 3") != NULL);
  CHECK_INT(srv_stop(&s), 0);
}

TEST(readyz_and_healthz_name_the_reason)
{
  srv_opts o;
  srv s;
  static char r[65536];
  memset(&o, 0, sizeof(o));
  o.ready_why = "sqlite:/x.db: the store file is gone from its path";
  o.health_why = "the event loop has not turned for over 10s";
  CHECK(srv_start(&s, &o));
  SCHECK(&s, get(s.port, "GET /readyz HTTP/1.1\r\n\r\n", r, sizeof(r)) ==
             503);
  SCHECK(&s, !strcmp(body_of(r), "not ready: sqlite:/x.db: the store file "
                                 "is gone from its path\n"));
  SCHECK(&s, get(s.port, "GET /healthz HTTP/1.1\r\n\r\n", r, sizeof(r)) ==
             503);
  SCHECK(&s, !strcmp(body_of(r), "the event loop has not turned for over "
                                 "10s\n"));
  SCHECK(&s, get(s.port, "HEAD /readyz HTTP/1.1\r\n\r\n", r, sizeof(r)) ==
             503);
  SCHECK(&s, !*body_of(r));
  CHECK_INT(srv_stop(&s), 0);
}

/* A POST of 1 GiB: the 405 comes after the head, without the body; what
 * the client goes on sending is dropped, not kept. */
TEST(body_is_never_read)
{
  srv_opts o;
  srv s;
  static char chunk[65536], r[65536];
  static const char q[] = "POST /metrics HTTP/1.1\r\n"
                          "Content-Length: 1073741824\r\n\r\n";
  long rss0, rss1;
  size_t sent = 0;
  int fd, code;
  int64_t t0;
  memset(&o, 0, sizeof(o));
  memset(chunk, 'x', sizeof(chunk));
  CHECK(srv_start(&s, &o));
  rss0 = rss_kb(s.pid);
  fd = cli_connect(s.port, 2000, false);
  SCHECK(&s, fd >= 0);
  SCHECK(&s, send_all(fd, q, sizeof(q) - 1));
  t0 = sctime_mono_ms();
  /* 1 MiB of the body, then the answer */
  while(sent < 1024 * 1024 && send_all(fd, chunk, sizeof(chunk)))
    sent += sizeof(chunk);
  code = -1;
  {
    ssize_t n = recv(fd, r, sizeof(r) - 1, 0);
    if(n > 0) {
      r[n] = '\0';
      code = status_of(r);
    }
  }
  if(code != 405)
    close(fd);
  SCHECK(&s, code == 405);
  SCHECK(&s, sctime_mono_ms() - t0 < 2000);
  /* go on sending up to 32 MiB: the server closes after at most
   * HTTPD_LINGER_BYTES or HTTPD_LINGER_MS, and keeps none of it */
  while(sent < 32u * 1024 * 1024 && send_all(fd, chunk, sizeof(chunk)))
    sent += sizeof(chunk);
  close(fd);
  rss1 = rss_kb(s.pid);
  SCHECK(&s, sent < 32u * 1024 * 1024);
  SCHECK(&s, rss0 > 0 && rss1 > 0 && rss1 - rss0 < 4096);
  SCHECK(&s, srv_alive(&s));
  CHECK_INT(srv_stop(&s), 0);
}

TEST(head_over_8k_refused)
{
  srv_opts o;
  srv s;
  static char q[HTTPD_HEAD_MAX * 2], r[65536];
  int n;
  memset(&o, 0, sizeof(o));
  CHECK(srv_start(&s, &o));
  /* a head of just under 8 KiB is fine */
  n = snprintf(q, sizeof(q), "GET /healthz HTTP/1.1\r\nX-Pad: %0*d\r\n\r\n",
               HTTPD_HEAD_MAX - 100, 0);
  SCHECK(&s, n > 0 && n < HTTPD_HEAD_MAX);
  SCHECK(&s, get(s.port, q, r, sizeof(r)) == 200);
  n = snprintf(q, sizeof(q), "GET /healthz HTTP/1.1\r\nX-Pad: %0*d\r\n\r\n",
               HTTPD_HEAD_MAX + 100, 0);
  SCHECK(&s, get(s.port, q, r, sizeof(r)) == 431);
  /* a request line alone past 8 KiB, no line end at all */
  memset(q, 'a', sizeof(q));
  memcpy(q, "GET /", 5);
  SCHECK(&s, http_do(s.port, q, sizeof(q), r, sizeof(r)) == 431);
  CHECK_INT(srv_stop(&s), 0);
}

/* a connection that says nothing, and one that dribbles a byte every
 * 50 ms, are both closed at the deadline counted from the accept */
TEST(idle_and_slow_connections_time_out)
{
  srv_opts o;
  srv s;
  static char r[65536];
  int fd, i;
  int64_t t0, dt;
  bool closed = false;
  memset(&o, 0, sizeof(o));
  o.timeout_ms = 400;
  CHECK(srv_start(&s, &o));
  fd = cli_connect(s.port, 3000, false);
  SCHECK(&s, fd >= 0);
  t0 = sctime_mono_ms();
  closed = closed_within(fd, 3000);
  dt = sctime_mono_ms() - t0;
  close(fd);
  SCHECK(&s, closed);
  SCHECK(&s, dt >= 300 && dt < 2000);

  fd = cli_connect(s.port, 3000, false);
  SCHECK(&s, fd >= 0);
  t0 = sctime_mono_ms();
  for(i = 0; i < 60; i++) { /* 3 s of "GET /healthz HTTP/1.1\r\nX: aaa..." */
    const char *q = "GET /healthz HTTP/1.1\r\nX: ";
    char b = i < 26 ? q[i] : 'a';
    if(send(fd, &b, 1, MSG_NOSIGNAL) != 1)
      break;
    sleep_ms(50);
    if(closed_within(fd, 1))
      break;
  }
  dt = sctime_mono_ms() - t0;
  close(fd);
  SCHECK(&s, i < 60);
  SCHECK(&s, dt < 2000);
  SCHECK(&s, get(s.port, "GET /metrics HTTP/1.1\r\n\r\n", r, sizeof(r)) ==
             200);
  SCHECK(&s, strstr(r, "session_controller_http_connections_dropped_total"
                       "{reason=\"timeout\"} 2") != NULL);
  CHECK_INT(srv_stop(&s), 0);
}

/* over the cap, the oldest connection that sent nothing makes room */
TEST(cap_evicts_the_oldest_idle)
{
  srv_opts o;
  srv s;
  static char r[65536];
  int a, b, c, d;
  static const char q[] = "GET /healthz HTTP/1.1\r\n\r\n";
  memset(&o, 0, sizeof(o));
  o.max_connections = 3;
  CHECK(srv_start(&s, &o));
  SCHECK(&s, s.cap == 3);
  a = cli_connect(s.port, 2000, false);
  sleep_ms(100);
  b = cli_connect(s.port, 2000, false);
  c = cli_connect(s.port, 2000, false);
  sleep_ms(200);
  d = cli_connect(s.port, 2000, false);
  SCHECK(&s, a >= 0 && b >= 0 && c >= 0 && d >= 0);
  SCHECK(&s, closed_within(a, 1000));
  SCHECK(&s, !closed_within(b, 200) && !closed_within(c, 1));
  SCHECK(&s, send_all(d, q, sizeof(q) - 1));
  read_all(d, r, sizeof(r));
  SCHECK(&s, status_of(r) == 200);
  close(a);
  close(b);
  close(c);
  close(d);
  SCHECK(&s, file_has(s.err, "connection cap reached"));
  CHECK_INT(srv_stop(&s), 0);
}

TEST(cap_follows_the_descriptor_limit)
{
  struct rlimit old, low;
  struct event_base *base = event_base_new();
  metrics *m = metrics_new();
  httpd *h = NULL;
  httpd_opts ho;
  sc_errbuf eb;
  int port = 0, cap1 = 0, cap2 = 0;
  sc_err e1, e2 = SC_ERR_INTERNAL;
  CHECK(base && m);
  CHECK(!getrlimit(RLIMIT_NOFILE, &old));
  low = old;
  low.rlim_cur = 100;
  CHECK(!setrlimit(RLIMIT_NOFILE, &low));
  memset(&ho, 0, sizeof(ho));
  ho.max_connections = 64;
  e1 = httpd_start(base, "127.0.0.1:0", m, NULL, &ho, &h, &port, &eb);
  if(!e1) {
    cap1 = httpd_max_connections(h);
    httpd_stop(h);
    ho.max_connections = 10;
    e2 = httpd_start(base, "127.0.0.1:0", m, NULL, &ho, &h, &port, &eb);
    if(!e2) {
      cap2 = httpd_max_connections(h);
      httpd_stop(h);
    }
  }
  setrlimit(RLIMIT_NOFILE, &old);
  metrics_free(m);
  event_base_free(base);
  CHECK_OK(e1);
  CHECK_OK(e2);
  CHECK_INT(cap1, 25);
  CHECK_INT(cap2, 10);
}

/* 300 idle connections against a descriptor limit of 256: /healthz still
 * answers while they are open, the server neither spins nor floods its
 * log, and it lives on */
TEST(idle_flood_does_not_starve)
{
  srv_opts o;
  srv s;
  static char r[65536];
  static int fds[300];
  long cpu0, cpu1, lines;
  int i, n = 0, code;
  memset(&o, 0, sizeof(o));
  o.nofile = 256;
  raise_own_nofile();
  CHECK(srv_start(&s, &o));
  SCHECK(&s, s.cap == 64);
  cpu0 = cpu_ms(s.pid);
  for(i = 0; i < 300; i++) {
    fds[n] = cli_connect(s.port, 2000, true);
    if(fds[n] >= 0)
      n++;
  }
  sleep_ms(1000);
  code = get(s.port, "GET /healthz HTTP/1.1\r\n\r\n", r, sizeof(r));
  sleep_ms(1000);
  cpu1 = cpu_ms(s.pid);
  for(i = 0; i < n; i++)
    close(fds[i]);
  lines = count_lines(s.err);
  SCHECK(&s, n == 300);
  SCHECK(&s, code == 200);
  SCHECK(&s, cpu0 >= 0 && cpu1 - cpu0 < 500);
  SCHECK(&s, lines >= 0 && lines < 100);
  sleep_ms(300);
  SCHECK(&s, srv_alive(&s));
  SCHECK(&s, get(s.port, "GET /healthz HTTP/1.1\r\n\r\n", r, sizeof(r)) ==
             200);
  SCHECK(&s, get(s.port, "GET /metrics HTTP/1.1\r\n\r\n", r, sizeof(r)) ==
             200);
  SCHECK(&s, strstr(r, "session_controller_http_connections_dropped_total"
                       "{reason=\"evicted\"}") != NULL);
  CHECK_INT(srv_stop(&s), 0);
}

/* accept() fails with EMFILE (the descriptors are taken elsewhere): the
 * server pauses instead of retrying at once, logs it once, and answers
 * again once descriptors are free */
TEST(emfile_backs_off)
{
  srv_opts o;
  srv s;
  static char r[65536];
  static int fds[40];
  long cpu0, cpu1, lines;
  int i, n = 0, code = -1;
  memset(&o, 0, sizeof(o));
  o.nofile = 256;
  o.leave_free = 6;
  CHECK(srv_start(&s, &o));
  cpu0 = cpu_ms(s.pid);
  for(i = 0; i < 40; i++) {
    fds[n] = cli_connect(s.port, 2000, true);
    if(fds[n] >= 0)
      n++;
  }
  sleep_ms(2500);
  cpu1 = cpu_ms(s.pid);
  lines = count_lines(s.err);
  for(i = 0; i < n; i++)
    close(fds[i]);
  SCHECK(&s, n == 40);
  SCHECK(&s, cpu0 >= 0 && cpu1 - cpu0 < 500);
  SCHECK(&s, lines >= 1 && lines < 10);
  SCHECK(&s, file_has(s.err, "accept() failed"));
  SCHECK(&s, file_has(s.err, "Too many open files"));
  for(i = 0; i < 40 && code != 200; i++) {
    code = get(s.port, "GET /healthz HTTP/1.1\r\n\r\n", r, sizeof(r));
    if(code != 200)
      sleep_ms(100);
  }
  SCHECK(&s, code == 200);
  SCHECK(&s, srv_alive(&s));
  CHECK_INT(srv_stop(&s), 0);
}

TEST(bad_addresses_refused)
{
  struct event_base *base = event_base_new();
  metrics *m = metrics_new();
  httpd *h = NULL;
  sc_errbuf eb;
  int port = 0;
  sc_err e1, e2, e3;
  CHECK(base && m);
  e1 = httpd_start(base, "127.0.0.1", m, NULL, NULL, &h, &port, &eb);
  e2 = httpd_start(base, "127.0.0.1:99999", m, NULL, NULL, &h, &port, &eb);
  e3 = httpd_start(base, "192.0.2.1:0", m, NULL, NULL, &h, &port, &eb);
  metrics_free(m);
  event_base_free(base);
  CHECK_INT(e1, SC_ERR_INVALID);
  CHECK_INT(e2, SC_ERR_INVALID);
  CHECK_INT(e3, SC_ERR_IO);
  CHECK(strstr(eb.msg, "192.0.2.1:0") != NULL);
}

TEST_LIST = {
  T(methods_paths_and_head),
  T(readyz_and_healthz_name_the_reason),
  T(body_is_never_read),
  T(head_over_8k_refused),
  T(idle_and_slow_connections_time_out),
  T(cap_evicts_the_oldest_idle),
  T(cap_follows_the_descriptor_limit),
  T(idle_flood_does_not_starve),
  T(emfile_backs_off),
  T(bad_addresses_refused),
  {0},
};
TEST_MAIN()
