/* Raw-socket tests of cubesim's HTTP layer: chunked bodies, Transfer-Encoding
 * over Content-Length, pipelined keep-alive, a slow client, the body cap,
 * JSON errors for malformed requests, big `Connection: close` replies, the
 * connection-reset fault. The server runs in a forked child. */
#include "test/harness.h"
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>
#include <event2/event.h>
#include "cmd/cubesim/sim_server.h"

static void on_term(evutil_socket_t s, short w, void *arg)
{
  (void)s;
  (void)w;
  event_base_loopbreak(arg);
}

/* start a server in a child; returns its pid, port in *port */
static pid_t start(const char *faults, sim_dialect d, int *port)
{
  int pfd[2];
  pid_t pid;
  if(pipe(pfd))
    return -1;
  pid = fork();
  if(pid == 0) {
    struct event_base *base = event_base_new();
    struct event *ev;
    sim_server_opts o;
    sim_server *srv = NULL;
    int p = -1;
    close(pfd[0]);
    signal(SIGPIPE, SIG_IGN); /* as main() does */
    memset(&o, 0, sizeof(o));
    o.host = "127.0.0.1";
    o.dialect = d;
    o.clock_speed = 1;
    o.seed = 3;
    o.faults = faults;
    o.pause_ms = 500;
    if(!base || sim_server_new(base, &o, &srv, NULL)) {
      (void)!write(pfd[1], &p, sizeof(p));
      _exit(1);
    }
    p = sim_server_port(srv);
    ev = evsignal_new(base, SIGTERM, on_term, base);
    evsignal_add(ev, NULL);
    (void)!write(pfd[1], &p, sizeof(p));
    close(pfd[1]);
    event_base_dispatch(base);
    event_free(ev);
    sim_server_free(srv);
    event_base_free(base);
    libevent_global_shutdown();
    exit(0);
  }
  close(pfd[1]);
  if(pid < 0 || read(pfd[0], port, sizeof(*port)) != sizeof(*port) ||
     *port <= 0) {
    close(pfd[0]);
    return -1;
  }
  close(pfd[0]);
  return pid;
}

static int stop(pid_t pid)
{
  int st = 0;
  kill(pid, SIGTERM);
  if(waitpid(pid, &st, 0) != pid)
    return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int dial(int port)
{
  struct sockaddr_in a;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if(fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
    if(fd >= 0)
      close(fd);
    return -1;
  }
  return fd;
}

/* read until `want` responses' worth of "HTTP/1.1 " starts and their bodies
 * arrived, EOF, or idle for ms; returns bytes read, *eof set on EOF/reset */
static size_t slurp(int fd, char *buf, size_t cap, int ms, int *eof)
{
  size_t n = 0;
  *eof = 0;
  for(;;) {
    struct pollfd p = {fd, POLLIN, 0};
    ssize_t r;
    if(poll(&p, 1, ms) <= 0)
      break;
    r = recv(fd, buf + n, cap - 1 - n, 0);
    if(r <= 0) {
      *eof = 1;
      break;
    }
    n += (size_t)r;
    if(n >= cap - 1)
      break;
  }
  buf[n] = '\0';
  return n;
}

static int count(const char *hay, const char *needle)
{
  int c = 0;
  for(hay = strstr(hay, needle); hay; hay = strstr(hay + 1, needle))
    c++;
  return c;
}

static size_t send_all(int fd, const char *s)
{
  return (size_t)send(fd, s, strlen(s), MSG_NOSIGNAL);
}

TEST(chunked_bodies)
{
  int port, fd, eof;
  pid_t pid = start(NULL, SIM_DIALECT_E2B, &port);
  char buf[8192];
  CHECK(pid > 0);
  fd = dial(port);
  CHECK(fd >= 0);
  /* chunked, split in odd places */
  send_all(fd, "POST /sandboxes HTTP/1.1\r\nHost: x\r\n"
               "Transfer-Encoding: chunked\r\nContent-Type: application/json"
               "\r\n\r\n");
  send_all(fd, "a\r\n{\"template\r\n");
  send_all(fd, "d\r\nID\":\"chunky\"}\r\n0\r\n\r\n");
  /* a second, plain request on the same connection (keep-alive) */
  send_all(fd, "GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\n\r\n");
  slurp(fd, buf, sizeof(buf), 300, &eof);
  close(fd);
  CHECK_MSG(strncmp(buf, "HTTP/1.1 201", 12) == 0, "got: %.200s", buf);
  CHECK(strstr(buf, "\"templateID\":\"chunky\""));
  CHECK_INT(count(buf, "HTTP/1.1 "), 2);
  CHECK(strstr(buf, "HTTP/1.1 200"));
  CHECK(strstr(buf, "X-Request-Id: "));
  /* Transfer-Encoding plus Content-Length: Transfer-Encoding wins (RFC
   * 7230 3.3.3), the connection stays usable, and a pipelined request
   * behind the chunked body is answered in order. */
  fd = dial(port);
  CHECK(fd >= 0);
  send_all(fd, "POST /sandboxes HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
               "Transfer-Encoding: chunked\r\n\r\n"
               "13\r\n{\"templateID\":\"te\"}\r\n0\r\n\r\n"
               "POST /sandboxes HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
               "chunked\r\ncontent-length: 99\r\n\r\n"
               "14\r\n{\"templateID\":\"te2\"}\r\n0\r\nX-Trailer: 1\r\n\r\n"
               "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
               "\r\n");
  slurp(fd, buf, sizeof(buf), 1000, &eof);
  close(fd);
  CHECK_MSG(strncmp(buf, "HTTP/1.1 201", 12) == 0, "got: %.300s", buf);
  CHECK(strstr(buf, "\"templateID\":\"te\""));
  CHECK(strstr(buf, "\"templateID\":\"te2\""));
  CHECK(strstr(buf, "\"templateID\":\"te\"") <
        strstr(buf, "\"templateID\":\"te2\""));
  CHECK_INT(count(buf, "HTTP/1.1 201"), 2);
  CHECK(strstr(buf, "HTTP/1.1 204"));
  CHECK(eof);
  CHECK_INT(stop(pid), 0);
}

TEST(slow_client_does_not_block_others)
{
  int port, slow, fast, eof;
  pid_t pid = start(NULL, SIM_DIALECT_CUBE, &port);
  char buf[4096];
  CHECK(pid > 0);
  slow = dial(port);
  CHECK(slow >= 0);
  send_all(slow, "POST /sandboxes HTTP/1.1\r\nHost: x\r\nContent-Le");
  fast = dial(port);
  CHECK(fast >= 0);
  send_all(fast, "GET /health HTTP/1.1\r\nHost: x\r\nX-Request-Id: abc-1\r\n"
                 "Connection: close\r\n\r\n");
  slurp(fast, buf, sizeof(buf), 1000, &eof);
  close(fast);
  close(slow);
  CHECK_MSG(strncmp(buf, "HTTP/1.1 204", 12) == 0, "got: %.200s", buf);
  CHECK(strstr(buf, "X-Request-Id: abc-1\r\n"));
  CHECK(strstr(buf, " GMT\r\n"));
  CHECK_INT(stop(pid), 0);
}

TEST(body_cap_and_garbage)
{
  int port, fd, eof;
  pid_t pid = start(NULL, SIM_DIALECT_E2B, &port);
  char buf[4096];
  static char big[(1 << 20) + 64];
  CHECK(pid > 0);
  fd = dial(port);
  CHECK(fd >= 0);
  snprintf(big, sizeof(big), "POST /sandboxes HTTP/1.1\r\nHost: x\r\n"
           "Content-Length: %d\r\nConnection: close\r\n\r\n", (1 << 20) + 10);
  send_all(fd, big);
  memset(big, 'a', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  send_all(fd, big);
  slurp(fd, buf, sizeof(buf), 1000, &eof);
  close(fd);
  CHECK_MSG(strncmp(buf, "HTTP/1.1 413", 12) == 0, "got: %.200s", buf);
  CHECK(strstr(buf, "{\"code\":413,"));
  /* binary garbage: evhttp answers 400 and closes; the server lives on */
  fd = dial(port);
  CHECK(fd >= 0);
  send_all(fd, "\x01\x02\xff garbage\r\n\r\n");
  slurp(fd, buf, sizeof(buf), 500, &eof);
  close(fd);
  fd = dial(port);
  CHECK(fd >= 0);
  send_all(fd, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  slurp(fd, buf, sizeof(buf), 1000, &eof);
  close(fd);
  CHECK(strncmp(buf, "HTTP/1.1 204", 12) == 0);
  CHECK_INT(stop(pid), 0);
}

TEST(reset_fault_cuts_reply)
{
  int port, fd, eof;
  pid_t pid = start("create:reset=1", SIM_DIALECT_E2B, &port);
  char buf[4096];
  size_t n;
  CHECK(pid > 0);
  fd = dial(port);
  CHECK(fd >= 0);
  send_all(fd, "POST /sandboxes HTTP/1.1\r\nHost: x\r\nContent-Length: 18\r\n"
               "\r\n{\"templateID\":\"t\"}");
  n = slurp(fd, buf, sizeof(buf), 1000, &eof);
  close(fd);
  CHECK(eof);
  CHECK_MSG(strncmp(buf, "HTTP/1.1 201", 12) == 0, "got: %.200s", buf);
  {
    const char *cl = strstr(buf, "Content-Length: ");
    const char *body = strstr(buf, "\r\n\r\n");
    CHECK(cl && body);
    CHECK((size_t)strtol(cl + 16, NULL, 10) > n - (size_t)(body + 4 - buf));
  }
  /* the create happened: the audit says so, with the fault */
  fd = dial(port);
  CHECK(fd >= 0);
  send_all(fd, "GET /_sim/audit HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
               "\r\n");
  slurp(fd, buf, sizeof(buf), 1000, &eof);
  close(fd);
  CHECK_MSG(strstr(buf, "\"status\":201"), "audit: %s", buf);
  CHECK(strstr(buf, "\"fault\":\"reset\""));
  CHECK_INT(stop(pid), 0);
}

/* one request on a fresh connection; the whole exchange into buf */
static void exchange(int port, const char *req, char *buf, size_t cap)
{
  int fd = dial(port), eof;
  buf[0] = '\0';
  if(fd < 0)
    return;
  send_all(fd, req);
  slurp(fd, buf, cap, 1000, &eof);
  close(fd);
}

TEST(malformed_requests_get_json_errors)
{
  static const struct {
    const char *req;
    const char *want;    /* status line start */
    const char *msg;     /* part of the message */
  } cases[] = {
    {"GARBAGE\r\n\r\n", "HTTP/1.1 400", "malformed request line"},
    {"GET /health HTTP/1.1 extra\r\n\r\n", "HTTP/1.1 400",
     "malformed request line"},
    {"GET /health HTTP/2.0\r\n\r\n", "HTTP/1.1 505", "HTTP version"},
    {"BREW /pot HTTP/1.1\r\n\r\n", "HTTP/1.1 501", "method not"},
    {"GET /health HTTP/1.1\r\nno colon here\r\n\r\n", "HTTP/1.1 400",
     "malformed header line 2"},
    {"GET /health HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", "HTTP/1.1 400",
     "line folding in header line 3"},
    {"POST /sandboxes HTTP/1.1\r\nContent-Length: 5x\r\n\r\n",
     "HTTP/1.1 400", "bad Content-Length"},
    {"POST /sandboxes HTTP/1.1\r\nContent-Length: 3, 4\r\n\r\n",
     "HTTP/1.1 400", "bad Content-Length"},
    {"POST /sandboxes HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n",
     "HTTP/1.1 413", "over the"},
    {"POST /sandboxes HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
     "HTTP/1.1 501", "Transfer-Encoding"},
    {"POST /sandboxes HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
     "zz\r\n", "HTTP/1.1 400", "bad chunk size"},
    {"POST /sandboxes HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
     "2\r\n{}XX", "HTTP/1.1 400", "not followed by CRLF"},
    {"POST /sandboxes HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
     "900000\r\n", "HTTP/1.1 413", "chunked request body over"},
  };
  int port;
  size_t i;
  pid_t pid = start(NULL, SIM_DIALECT_E2B, &port);
  static char buf[128 * 1024];
  CHECK(pid > 0);
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    exchange(port, cases[i].req, buf, sizeof(buf));
    CHECK_MSG(!strncmp(buf, cases[i].want, strlen(cases[i].want)),
              "case %zu: got %.200s", i, buf);
    CHECK_MSG(strstr(buf, "Content-Type: application/json\r\n") &&
              strstr(buf, "{\"code\":") && strstr(buf, cases[i].msg),
              "case %zu: got %.300s", i, buf);
    CHECK_MSG(strstr(buf, "Connection: close\r\n"), "case %zu", i);
  }
  /* a head over 64 KiB: 431 in JSON */
  {
    static char big[70 * 1024 + 128];
    size_t n = (size_t)snprintf(big, sizeof(big), "GET /health HTTP/1.1\r\n"
                                "X-Big: ");
    memset(big + n, 'a', 70 * 1024);
    memcpy(big + n + 70 * 1024, "\r\n\r\n", 5);
    exchange(port, big, buf, sizeof(buf));
    CHECK_MSG(!strncmp(buf, "HTTP/1.1 431", 12), "got %.200s", buf);
    CHECK(strstr(buf, "{\"code\":431,"));
  }
  /* a chunked body over the 1 MiB cap is read to its end, answered 413
   * in JSON, and the connection goes on */
  {
    int fd = dial(port), eof;
    static char chunk[300 * 1024];
    int k;
    CHECK(fd >= 0);
    send_all(fd, "POST /sandboxes HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:"
                 " chunked\r\n\r\n");
    memset(chunk, 'a', sizeof(chunk) - 1);
    memcpy(chunk, "3e800\r\n", 7);  /* 256000 bytes */
    chunk[7 + 256000] = '\0';
    memcpy(chunk + 7 + 256000 - 0, "\r\n", 3);
    for(k = 0; k < 5; k++)
      send_all(fd, chunk);
    send_all(fd, "0\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    slurp(fd, buf, sizeof(buf), 1000, &eof);
    close(fd);
    CHECK_MSG(!strncmp(buf, "HTTP/1.1 413", 12), "got %.200s", buf);
    CHECK(strstr(buf, "{\"code\":413,\"message\":\"request body of 1280000"));
    CHECK(strstr(buf, "HTTP/1.1 204"));
  }
  /* a client cannot forge the framer's error header */
  exchange(port, "GET /health HTTP/1.1\r\nX-Cubesim-Error: 400 head no\r\n"
           "Connection: close\r\n\r\n", buf, sizeof(buf));
  CHECK_MSG(!strncmp(buf, "HTTP/1.1 204", 12), "got %.200s", buf);
  /* the server still serves */
  exchange(port, "GET /health HTTP/1.1\r\nConnection: close\r\n\r\n", buf,
           sizeof(buf));
  CHECK(!strncmp(buf, "HTTP/1.1 204", 12));
  CHECK_INT(stop(pid), 0);
}

/* A `Connection: close` reply bigger than the socket buffers arrives whole
 * even when the client reads slowly. */
TEST(big_close_reply_to_slow_reader)
{
  int port, fd, eof, i;
  pid_t pid = start(NULL, SIM_DIALECT_CUBE, &port);
  static char buf[8 << 20];
  static char reqs[3000 * 120];
  size_t n = 0, got;
  const char *cl, *body;
  CHECK(pid > 0);
  fd = dial(port);
  CHECK(fd >= 0);
  for(i = 0; i < 3000; i++)
    n += (size_t)snprintf(reqs + n, sizeof(reqs) - n, "POST /sandboxes HTTP/1.1"
                          "\r\nHost: x\r\nContent-Length: 18\r\n\r\n"
                          "{\"templateID\":\"t\"}");
  send_all(fd, reqs);
  got = slurp(fd, buf, sizeof(buf), 1000, &eof);
  close(fd);
  CHECK_INT(count(buf, "HTTP/1.1 201"), 3000);
  (void)got;
  fd = dial(port);
  CHECK(fd >= 0);
  send_all(fd, "GET /sandboxes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
               "\r\n");
  usleep(300 * 1000);  /* let the server fill the socket and wait */
  got = slurp(fd, buf, sizeof(buf), 2000, &eof);
  close(fd);
  CHECK(eof);
  CHECK_MSG(!strncmp(buf, "HTTP/1.1 200", 12), "got %.200s", buf);
  cl = strstr(buf, "Content-Length: ");
  body = strstr(buf, "\r\n\r\n");
  CHECK(cl && body);
  CHECK((size_t)strtol(cl + 16, NULL, 10) > 500000);
  CHECK_INT((long)strtol(cl + 16, NULL, 10), (long)(got - (size_t)(body + 4 -
                                                                   buf)));
  CHECK_INT(count(buf, "\"sandboxID\""), 3000);
  CHECK_INT(stop(pid), 0);
}

TEST_LIST = {
  T(chunked_bodies),
  T(malformed_requests_get_json_errors),
  T(big_close_reply_to_slow_reader),
  T(slow_client_does_not_block_others),
  T(body_cap_and_garbage),
  T(reset_fault_cuts_reply),
  {0}
};
TEST_MAIN()
