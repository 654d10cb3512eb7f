/* Tests of the streaming GET of controller/kubeclient/http.c against a server
 * on the same loop (libevent's evhttp, chunked answers): lines in order
 * whatever the chunks, a line over the cap dropped and counted while the
 * others go on, the end of a 2xx stream, a non-2xx answer with its Status
 * message, the token file read again after a 401, the headers of the
 * calls, a transport failure, an idle stream, and cancel (from inside a
 * callback and from outside). */
#include "test/harness.h"
#include "controller/kubeclient/http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

/* the server's side */
typedef struct srv {
  struct event_base *base;
  struct evhttp *http;
  int port;
  char tokfile[64];
  char last_auth[128], last_ua[128];
  int requests;
  /* /lines: the chunks left to send, one per timer tick */
  struct evhttp_request *req;
  const char *const *chunks;
  size_t next;
  struct event *tick;
  struct evhttp_request *open_reqs[8]; /* /forever's, still open */
} srv;

static const char *const lines_chunks[] = {
  "{\"a\":1}\n{\"b\"", ":2}\n\n\n{\"c\":3}", "\r\n{\"d\":4}\ntrailing", NULL};

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
  srv *s = arg;
  struct evbuffer *b;
  struct timeval tv = {0, 20000};
  (void)fd;
  (void)what;
  if(!s->chunks[s->next]) {
    evhttp_send_reply_end(s->req);
    s->req = NULL;
    return;
  }
  b = evbuffer_new();
  evbuffer_add(b, s->chunks[s->next], strlen(s->chunks[s->next]));
  evhttp_send_reply_chunk(s->req, b);
  evbuffer_free(b);
  s->next++;
  evtimer_add(s->tick, &tv);
}

/* the client went away in the middle of /lines: no more chunks */
static void on_close(struct evhttp_connection *c, void *arg)
{
  srv *s = arg;
  size_t i;
  if(s->req && evhttp_request_get_connection(s->req) == c) {
    evtimer_del(s->tick);
    evhttp_send_reply_end(s->req);
    s->req = NULL;
  }
  for(i = 0; i < 8; i++)
    if(s->open_reqs[i] && evhttp_request_get_connection(s->open_reqs[i]) ==
       c) {
      evhttp_send_reply_end(s->open_reqs[i]);
      s->open_reqs[i] = NULL;
    }
}

static void reply(struct evhttp_request *req, int code, const char *body)
{
  struct evbuffer *b = evbuffer_new();
  evbuffer_add(b, body, strlen(body));
  evhttp_send_reply(req, code, code < 300 ? "OK" : "Error", b);
  evbuffer_free(b);
}

static void on_req(struct evhttp_request *req, void *arg)
{
  srv *s = arg;
  const char *uri = evhttp_request_get_uri(req);
  struct evkeyvalq *in = evhttp_request_get_input_headers(req);
  const char *auth = evhttp_find_header(in, "Authorization");
  const char *ua = evhttp_find_header(in, "User-Agent");
  s->requests++;
  snprintf(s->last_auth, sizeof(s->last_auth), "%s", auth ? auth : "");
  snprintf(s->last_ua, sizeof(s->last_ua), "%s", ua ? ua : "");
  if(strcmp(s->last_auth, "Bearer new")) {
    /* the token rotates: the next read of the file gets the new one */
    FILE *f = fopen(s->tokfile, "w");
    if(f) {
      fputs("new\n", f);
      fclose(f);
    }
    reply(req, 401, "{\"kind\":\"Status\",\"message\":\"Unauthorized\"}");
    return;
  }
  if(!strcmp(uri, "/lines")) {
    struct timeval tv = {0, 20000};
    s->req = req;
    evhttp_connection_set_closecb(evhttp_request_get_connection(req),
                                  on_close, s);
    s->chunks = lines_chunks;
    s->next = 0;
    evhttp_send_reply_start(req, 200, "OK");
    evtimer_add(s->tick, &tv);
  }
  else if(!strcmp(uri, "/big")) {
    struct evbuffer *b = evbuffer_new();
    size_t i;
    evbuffer_add(b, "{\"first\":1}\n", 12);
    for(i = 0; i < 5000; i++)
      evbuffer_add(b, "x", 1);
    evbuffer_add(b, "\n{\"after\":1}\n", 13);
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
  }
  else if(!strcmp(uri, "/fail"))
    reply(req, 500, "{\"kind\":\"Status\",\"message\":\"etcd is sad\"}");
  else if(!strcmp(uri, "/forever")) {
    /* one line, then silence: the connection stays open */
    struct evbuffer *b = evbuffer_new();
    size_t i;
    for(i = 0; i < 8 && s->open_reqs[i]; i++)
      ;
    if(i < 8)
      s->open_reqs[i] = req;
    evhttp_connection_set_closecb(evhttp_request_get_connection(req),
                                  on_close, s);
    evhttp_send_reply_start(req, 200, "OK");
    evbuffer_add(b, "{\"one\":1}\n", 10);
    evhttp_send_reply_chunk(req, b);
    evbuffer_free(b);
  }
  else
    reply(req, 404, "{}");
}

static int srv_start(srv *s, struct event_base *base)
{
  struct evhttp_bound_socket *bs;
  struct sockaddr_in sa;
  socklen_t sl = sizeof(sa);
  FILE *f;
  memset(s, 0, sizeof(*s));
  s->base = base;
  snprintf(s->tokfile, sizeof(s->tokfile), "/tmp/sc-kh-tok.XXXXXX");
  {
    int fd = mkstemp(s->tokfile);
    if(fd < 0)
      return -1;
    close(fd);
  }
  f = fopen(s->tokfile, "w");
  if(!f)
    return -1;
  fputs("old\n", f);
  fclose(f);
  s->http = evhttp_new(base);
  s->tick = evtimer_new(base, on_tick, s);
  bs = evhttp_bind_socket_with_handle(s->http, "127.0.0.1", 0);
  if(!bs || getsockname(evhttp_bound_socket_get_fd(bs),
                        (struct sockaddr *)&sa, &sl))
    return -1;
  s->port = ntohs(sa.sin_port);
  evhttp_set_gencb(s->http, on_req, s);
  return 0;
}

static void srv_stop(srv *s)
{
  size_t i;
  /* answers still open (a client that went away unseen): ended */
  if(s->req)
    evhttp_send_reply_end(s->req);
  for(i = 0; i < 8; i++)
    if(s->open_reqs[i])
      evhttp_send_reply_end(s->open_reqs[i]);
  if(s->tick)
    event_free(s->tick);
  if(s->http)
    evhttp_free(s->http);
  unlink(s->tokfile);
}

static kube_http *client(struct event_base *base, const srv *s, int port)
{
  kube_conn c;
  char url[64];
  sc_errbuf eb;
  memset(&c, 0, sizeof(c));
  snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
  c.server = strdup(url);
  c.source = strdup("the test's connection");
  c.cred = kube_cred_new_file(s->tokfile);
  return kube_http_new(base, &c, "test-agent/1", &eb);
}

/* what the callbacks saw */
typedef struct seen {
  char lines[8][64];
  size_t n_lines;
  size_t oversized;
  int opened;
  long open_status;
  int ended;
  kube_http_result res;
  char msg[600];
  int cancel_after; /* cancel from the line callback after this many */
  kube_http_stream *s;
} seen;

static void on_open(long status, void *ud)
{
  seen *w = ud;
  w->opened++;
  w->open_status = status;
}

static void on_line(const char *line, size_t len, void *ud)
{
  seen *w = ud;
  if(w->n_lines < 8)
    snprintf(w->lines[w->n_lines], sizeof(w->lines[0]), "%.*s", (int)len,
             line);
  w->n_lines++;
  if(w->cancel_after && (int)w->n_lines == w->cancel_after)
    kube_http_stream_cancel(w->s);
}

static void on_oversized(size_t n, void *ud)
{
  ((seen *)ud)->oversized += n;
}

static void on_end(const kube_http_result *res, void *ud)
{
  seen *w = ud;
  w->ended++;
  w->res = *res;
  snprintf(w->msg, sizeof(w->msg), "%s", res->message);
  w->res.message = w->msg;
  w->res.body = NULL;
  w->res.raw = NULL;
}

static const kube_http_stream_cb cbs = {on_open, on_line, on_oversized,
                                        on_end};

/* run the loop until w ended (or ms passed) */
static void run(struct event_base *b, const seen *w, int ms)
{
  int i;
  for(i = 0; i < ms / 10 && !w->ended; i++) {
    struct timeval tv = {0, 10000};
    event_base_loopexit(b, &tv);
    event_base_dispatch(b);
  }
}

/* what each test stands on: a loop, the fake API server on it and a
 * client of that server */
typedef struct rig {
  struct event_base *b;
  srv s;
  kube_http *h;
} rig;

static int rig_start(rig *r)
{
  memset(r, 0, sizeof(*r));
  r->b = event_base_new();
  if(!r->b || srv_start(&r->s, r->b))
    return -1;
  r->h = client(r->b, &r->s, r->s.port);
  return r->h ? 0 : -1;
}

static void rig_stop(rig *r)
{
  kube_http_free(r->h);
  srv_stop(&r->s);
  event_base_free(r->b);
}

/* a stream of path with options o (NULL: the defaults) seen by *w, the
 * loop run until it ended or ms passed */
static sc_err stream_run(rig *r, const char *path,
                         const kube_http_stream_opts *o, seen *w, int ms)
{
  sc_errbuf eb;
  sc_err err;
  memset(w, 0, sizeof(*w));
  err = kube_http_stream_start(r->h, path, o, &cbs, w, &w->s, &eb);
  if(err)
    fprintf(stderr, "  stream %s: %s\n", path, eb.msg);
  else
    run(r->b, w, ms);
  return err;
}

TEST(lines_in_order_whatever_the_chunks)
{
  rig r;
  seen w;
  sc_errbuf eb;
  CHECK_OK(rig_start(&r));
  memset(&w, 0, sizeof(w));
  CHECK_OK(kube_http_stream_start(r.h, "/lines", NULL, &cbs, &w, &w.s, &eb));
  CHECK_INT(kube_http_streams(r.h), 1);
  CHECK_INT(w.n_lines, 0); /* never from inside the start */
  run(r.b, &w, 5000);
  CHECK_INT(w.ended, 1);
  CHECK_INT(w.res.err, SC_OK);
  CHECK_INT(w.res.status, 200);
  CHECK_INT(w.opened, 1);
  CHECK_INT(w.open_status, 200);
  /* empty lines are not lines; the bytes after the last newline neither */
  CHECK_INT(w.n_lines, 4);
  CHECK_STR(w.lines[0], "{\"a\":1}");
  CHECK_STR(w.lines[1], "{\"b\":2}");
  CHECK_STR(w.lines[2], "{\"c\":3}\r");
  CHECK_STR(w.lines[3], "{\"d\":4}");
  CHECK_INT(w.oversized, 0);
  CHECK_INT(kube_http_streams(r.h), 0);
  /* the token file was read again after the first 401 */
  CHECK_STR(r.s.last_auth, "Bearer new");
  CHECK_STR(r.s.last_ua, "test-agent/1");
  CHECK_INT(r.s.requests, 2);
  rig_stop(&r);
}

TEST(a_line_over_the_cap_is_dropped_and_counted)
{
  rig r;
  seen w;
  kube_http_stream_opts o = {1000, 0, 0};
  CHECK_OK(rig_start(&r));
  CHECK_OK(stream_run(&r, "/big", &o, &w, 5000));
  CHECK_INT(w.ended, 1);
  CHECK_INT(w.res.err, SC_OK);
  CHECK_INT(w.n_lines, 2);
  CHECK_STR(w.lines[0], "{\"first\":1}");
  CHECK_STR(w.lines[1], "{\"after\":1}");
  CHECK_INT(w.oversized, 1);
  rig_stop(&r);
}

TEST(a_non_2xx_answer_ends_with_its_status_message)
{
  rig r;
  seen w;
  CHECK_OK(rig_start(&r));
  CHECK_OK(stream_run(&r, "/fail", NULL, &w, 5000));
  CHECK_INT(w.ended, 1);
  CHECK_INT(w.res.err, SC_OK);
  CHECK_INT(w.res.status, 500);
  CHECK_INT(w.opened, 0);
  CHECK_INT(w.n_lines, 0);
  CHECK_MSG(strstr(w.msg, "HTTP 500: etcd is sad") &&
            strstr(w.msg, "kube GET http://127.0.0.1:") &&
            strstr(w.msg, "/fail"), "message: %s", w.msg);
  /* a stream is never retried: the 401 once, then this */
  CHECK_INT(r.s.requests, 2);
  rig_stop(&r);
}

TEST(no_server_is_an_unavailable_end)
{
  rig r;
  seen w;
  CHECK_OK(rig_start(&r));
  evhttp_free(r.s.http); /* nobody listens there any more */
  r.s.http = NULL;
  CHECK_OK(stream_run(&r, "/lines", NULL, &w, 5000));
  CHECK_INT(w.ended, 1);
  CHECK_INT(w.res.err, SC_ERR_UNAVAILABLE);
  CHECK_INT(w.res.status, 0);
  CHECK_MSG(strstr(w.msg, "kube GET http://127.0.0.1:") != NULL, "%s",
            w.msg);
  rig_stop(&r);
}

TEST(an_idle_stream_times_out)
{
  rig r;
  seen w;
  kube_http_stream_opts o = {0, 0, 1};
  CHECK_OK(rig_start(&r));
  CHECK_OK(stream_run(&r, "/forever", &o, &w, 8000));
  CHECK_INT(w.ended, 1);
  CHECK_INT(w.n_lines, 1);
  CHECK_INT(w.res.err, SC_ERR_TIMEOUT);
  rig_stop(&r);
}

TEST(cancel_from_a_callback_and_from_outside)
{
  rig r;
  seen w, w2;
  sc_errbuf eb;
  CHECK_OK(rig_start(&r));
  memset(&w, 0, sizeof(w));
  memset(&w2, 0, sizeof(w2));
  w.cancel_after = 1;
  CHECK_OK(kube_http_stream_start(r.h, "/lines", NULL, &cbs, &w, &w.s, &eb));
  CHECK_OK(kube_http_stream_start(r.h, "/forever", NULL, &cbs, &w2, &w2.s,
                                  &eb));
  CHECK_INT(kube_http_streams(r.h), 2);
  run(r.b, &w, 600);
  /* the first line, then nothing: no more lines, no end */
  CHECK_INT(w.n_lines, 1);
  CHECK_INT(w.ended, 0);
  CHECK_INT(w2.n_lines, 1);
  CHECK_INT(kube_http_streams(r.h), 1);
  kube_http_stream_cancel(w2.s);
  CHECK_INT(kube_http_streams(r.h), 0);
  run(r.b, &w2, 200);
  CHECK_INT(w2.ended, 0);
  /* the client is still usable: a new stream runs to its end */
  CHECK_OK(stream_run(&r, "/big", NULL, &w, 5000));
  CHECK_INT(w.ended, 1);
  CHECK_INT(w.n_lines, 3);
  rig_stop(&r);
}

TEST_LIST = {
  T(lines_in_order_whatever_the_chunks),
  T(a_line_over_the_cap_is_dropped_and_counted),
  T(a_non_2xx_answer_ends_with_its_status_message),
  T(no_server_is_an_unavailable_end),
  T(an_idle_stream_times_out),
  T(cancel_from_a_callback_and_from_outside),
  {0}
};
TEST_MAIN()
