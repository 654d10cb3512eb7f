/*
 * Hostile input (issue 5): YAML built to hurt the manifest reader, and a
 * Cube that answers with garbage, floods, stalls or never answers. Each
 * case must end in a clear error within bounded time and memory, and must
 * not disturb other calls.
 *
 * The Cube cases use a raw scripted server (libevent listener writing
 * bytes by hand, so it can lie about lengths, stall mid-body or stream
 * without end) on 127.0.0.1 port 0, in the client's own event_base. The
 * well-behaved evhttp server of test_cube.c covers the normal protocol.
 */
#include "test/harness.h"
#include "api/manifest.h"
#include "controller/cube/cube.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define SC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SC_ASAN 1
#endif
#endif
/* peak RSS growth allowed while an 8 MiB-capped list is flooded */
#ifdef SC_ASAN
#define RSS_SLACK_KB (64 * 1024)
#else
#define RSS_SLACK_KB (24 * 1024)
#endif

/* ------------------------------------------------------------------ */
/* YAML */

typedef struct yres {
  sc_err rc;
  size_t n, n_errors;
  char first[1024];  /* the first error line */
  char all[8192];    /* every error, one per line */
  int64_t ms;
} yres;

static void yread(const char *buf, size_t len, size_t max_bytes, yres *r)
{
  manifest_set set;
  manifest_opts o;
  size_t i, off = 0;
  int64_t t0 = sctime_mono_ms();
  memset(&set, 0, sizeof(set));
  memset(&o, 0, sizeof(o));
  memset(r, 0, sizeof(*r));
  o.max_bytes = max_bytes;
  r->rc = manifest_read_buffer("h.yaml", buf, len, &o, &set);
  r->ms = sctime_mono_ms() - t0;
  r->n = set.n;
  r->n_errors = set.n_errors;
  if(set.n_errors)
    snprintf(r->first, sizeof(r->first), "%s", set.errors[0]);
  for(i = 0; i < set.n_errors && off < sizeof(r->all); i++) {
    int w = snprintf(r->all + off, sizeof(r->all) - off, "%s\n",
                     set.errors[i]);
    if(w < 0)
      break;
    off += (size_t)w;
  }
  manifest_set_free(&set);
}

/* Peak RSS in kB since the last peak_reset() (VmHWM; Linux resets it when
 * "5" is written to /proc/self/clear_refs), so each measure starts from
 * the current RSS and not from an earlier test's peak. */
static void peak_reset(void)
{
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if(f) {
    fputs("5", f);
    fclose(f);
  }
}

static long maxrss_kb(void)
{
  char line[256];
  long kb = -1;
  FILE *f = fopen("/proc/self/status", "r");
  while(f && fgets(line, sizeof(line), f))
    if(!strncmp(line, "VmHWM:", 6))
      kb = strtol(line + 6, NULL, 10);
  if(f)
    fclose(f);
  if(kb < 0) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    kb = ru.ru_maxrss;
  }
  return kb;
}

#define HEAD "apiVersion: lea.io/v1alpha1\nkind: Session\n"

/* A billion-laughs bomb 10 levels deep: 9^10 strings if expanded. */
TEST(yaml_alias_bomb_not_expanded)
{
  dynbuf b;
  yres r;
  int lvl, i;
  dynbuf_init(&b, 1 << 20);
  CHECK_OK(dynbuf_addstr(&b, HEAD "metadata:\n  name: bomb\n  labels:\n"
                             "    l0: &l0 [\"lol\",\"lol\",\"lol\",\"lol\","
                             "\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"));
  for(lvl = 1; lvl < 10; lvl++) {
    CHECK_OK(dynbuf_printf(&b, "    l%d: &l%d [", lvl, lvl));
    for(i = 0; i < 9; i++)
      CHECK_OK(dynbuf_printf(&b, "%s*l%d", i ? "," : "", lvl - 1));
    CHECK_OK(dynbuf_addstr(&b, "]\n"));
  }
  CHECK_OK(dynbuf_addstr(&b, "spec:\n  template: t\n"));
  yread(dynbuf_ptr(&b), dynbuf_len(&b), 0, &r);
  CHECK_INT(r.rc, SC_OK);
  CHECK_INT(r.n, 0);
  CHECK_MSG(strstr(r.first, "metadata.labels.l0: YAML anchors (&l0) are not "
                            "allowed; write the value out"), "%s", r.first);
  CHECK_MSG(strstr(r.all, "YAML aliases (*l7) are not allowed"), "%s", r.all);
  CHECK_MSG(strstr(r.all, "too many errors (100), not reading further"),
            "%s", r.all);
  CHECK(r.n_errors <= 101); /* capped, not one per expansion */
  CHECK_MSG(r.ms < 2000, "took %lld ms", (long long)r.ms);
  dynbuf_free(&b);
}

TEST(yaml_10000_levels_of_nesting)
{
  dynbuf b;
  yres r;
  int i;
  dynbuf_init(&b, 64u << 20);
  /* flow style */
  CHECK_OK(dynbuf_addstr(&b, HEAD "metadata: "));
  for(i = 0; i < 10000; i++)
    CHECK_OK(dynbuf_add(&b, "[", 1));
  for(i = 0; i < 10000; i++)
    CHECK_OK(dynbuf_add(&b, "]", 1));
  CHECK_OK(dynbuf_addstr(&b, "\n"));
  yread(dynbuf_ptr(&b), dynbuf_len(&b), 0, &r);
  CHECK_INT(r.n, 0);
  CHECK_INT(r.n_errors, 1);
  CHECK_STR(r.first, "h.yaml:3:74: YAML nesting deeper than 64 levels");
  CHECK_MSG(r.ms < 2000, "took %lld ms", (long long)r.ms);
  /* block style: 10,000 indented mappings (about 50 MB) */
  dynbuf_reset(&b);
  for(i = 0; i < 10000; i++) {
    char ind[10001];
    memset(ind, ' ', (size_t)i);
    ind[i] = 0;
    CHECK_OK(dynbuf_printf(&b, "%sk:\n", ind));
  }
  yread(dynbuf_ptr(&b), dynbuf_len(&b), 64u << 20, &r);
  CHECK_INT(r.n, 0);
  CHECK_STR(r.first, "h.yaml:65:65: YAML nesting deeper than 64 levels");
  CHECK_MSG(r.ms < 2000, "took %lld ms", (long long)r.ms);
  dynbuf_free(&b);
}

TEST(yaml_100mb_scalar)
{
  size_t n = 100u << 20;
  char *b = malloc(n);
  yres r;
  long rss0;
  CHECK(b != NULL);
  memcpy(b, "apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata:\n"
            "  name: \"", 61);
  memset(b + 61, 'x', n - 63);
  memcpy(b + n - 2, "\"\n", 2);
  /* the default cap refuses it before parsing anything */
  yread(b, n, 0, &r);
  CHECK_INT(r.n_errors, 1);
  CHECK_STR(r.first, "h.yaml:1:1: file is 104857600 bytes, over the limit "
                     "of 1048576 bytes for a manifest");
  CHECK_MSG(r.ms < 100, "took %lld ms", (long long)r.ms);
  /* with the cap raised past it, the value is refused by the field rules
   * with a shortened quote (the message stays one short line) */
  peak_reset();
  rss0 = maxrss_kb();
  yread(b, n, 128u << 20, &r);
  CHECK_INT(r.n, 0);
  CHECK_MSG(strstr(r.all, "h.yaml:4:9: metadata.name: \"xxxx"), "%s",
            r.all);
  CHECK_MSG(strstr(r.all, "...\" is 104857537 characters long, at most 63 are allowed"), "%s", r.all);
  CHECK_MSG(strlen(r.all) < 600, "messages of %zu bytes", strlen(r.all));
  CHECK_MSG(r.ms < 20000, "took %lld ms", (long long)r.ms);
  /* libyaml holds the scalar once or twice: well under 4 copies */
  CHECK_MSG(maxrss_kb() - rss0 < 4 * 100 * 1024, "rss grew %ld kB",
            maxrss_kb() - rss0);
  free(b);
}

TEST(yaml_binary_garbage)
{
  static const size_t sizes[] = {1, 7, 512, 65536};
  unsigned seed = 12345;
  size_t k, i;
  for(k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
    char *b = malloc(sizes[k]);
    yres r;
    int trial;
    CHECK(b != NULL);
    for(trial = 0; trial < 20; trial++) {
      for(i = 0; i < sizes[k]; i++) {
        seed = seed * 1103515245u + 12345u;
        b[i] = (char)(seed >> 16);
      }
      yread(b, sizes[k], 0, &r);
      CHECK_INT(r.rc, SC_OK); /* read; the content is what is wrong */
      CHECK_INT(r.n, 0);
      CHECK_MSG(r.n_errors >= 1, "garbage of %zu bytes accepted", sizes[k]);
      CHECK_MSG(!strncmp(r.first, "h.yaml:", 7), "%s", r.first);
      for(i = 0; r.first[i]; i++) /* one printable line */
        CHECK_MSG((unsigned char)r.first[i] >= 0x20, "control byte in %s",
                  r.first);
    }
    free(b);
  }
  /* the classic cases, exactly */
  {
    yres r;
    yread("\x00\x01\x02", 3, 0, &r);
    CHECK_STR(r.first, "h.yaml:1:1: invalid YAML: control characters are "
                       "not allowed (byte 0x00)");
    yread("\xff\xfe" "a\0p\0i\0", 8, 0, &r);
    CHECK_MSG(strstr(r.first, "h.yaml:1:1: invalid YAML"), "%s", r.first);
    yread("\x89PNG\r\n\x1a\n", 8, 0, &r);
    CHECK_MSG(strstr(r.first, "invalid YAML"), "%s", r.first);
  }
}

TEST(yaml_crlf_and_nul_in_names_and_values)
{
  static const struct {
    const char *yaml;
    size_t len; /* 0: strlen */
    const char *err;
  } cases[] = {
    /* CRLF line endings are fine */
    {HEAD "metadata:\r\n  name: chat\r\nspec:\r\n  template: t\r\n", 0, NULL},
    /* escaped CR LF inside a name: a DNS label check, value escaped */
    {HEAD "metadata:\n  name: \"chat\\r\\n1\"\nspec:\n  template: t\n", 0,
     "h.yaml:4:9: metadata.name: \"chat\\r\\n1\" is not a DNS-1123 label"},
    {HEAD "metadata:\n  name: \"a\\0b\"\nspec:\n  template: t\n", 0,
     "h.yaml:4:9: metadata.name: contains a NUL character"},
    /* a raw NUL byte anywhere: the reader stops */
    {HEAD "metadata:\n  name: ch\0at\nspec:\n  template: t\n", 71,
     "h.yaml:4:11: invalid YAML: control characters are not allowed "
     "(byte 0x00)"},
    {HEAD "metadata:\n  name: c\n  annotations: {a: \"x\\0y\"}\n"
          "spec:\n  template: t\n", 0,
     "h.yaml:5:20: metadata.annotations.a: contains a NUL character"},
    {HEAD "metadata:\n  name: c\nspec:\n  template: t\n"
          "  sandboxMetadata: {k: \"v\\r\\nInjected: 1\"}\n", 0,
     "h.yaml:7:24: spec.sandboxMetadata.k: value contains a carriage return "
     "(U+000D at byte 2); control characters are not allowed"},
    {HEAD "metadata:\n  name: c\nspec:\n  template: t\n"
          "  sandboxMetadata: {\"k\\0x\": v}\n", 0,
     "h.yaml:7:21: spec.sandboxMetadata.k: key contains a NUL character"},
    {HEAD "metadata:\n  name: c\nspec:\n  template: t\n"
          "  envVars: {X: \"a\\u0000\"}\n", 0,
     "h.yaml:7:16: spec.envVars.X: contains a NUL character"},
    {HEAD "metadata:\n  name: c\nspec:\n  template: \"t\\r\\n\"\n", 0,
     "h.yaml:6:13: spec.template: \"t\\r\\n\" is not"},
  };
  size_t i;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    yres r;
    size_t len = cases[i].len ? cases[i].len : strlen(cases[i].yaml);
    yread(cases[i].yaml, len, 0, &r);
    if(!cases[i].err) {
      CHECK_MSG(r.n == 1 && r.n_errors == 0, "case %zu: %s", i, r.first);
      continue;
    }
    CHECK_MSG(r.n == 0, "case %zu accepted", i);
    CHECK_MSG(strstr(r.all, cases[i].err), "case %zu: got\n%s\nwant %s", i,
              r.all, cases[i].err);
    CHECK_MSG(!strchr(r.first, '\r'), "case %zu: raw CR in message", i);
  }
}

/* ------------------------------------------------------------------ */
/* Cube: a raw scripted server */

typedef enum raw_mode {
  RAW_BODY,    /* a complete 200 with the given body */
  RAW_STALL,   /* headers and half the declared body, then nothing */
  RAW_SILENT,  /* reads the request, never answers */
  RAW_FLOOD,   /* a 200 whose body never ends */
  RAW_PAGES    /* pages of 100 rows, each with a new X-Next-Token */
} raw_mode;

typedef struct raw_srv {
  struct event_base *base;
  struct evconnlistener *l;
  int port;
  raw_mode mode;
  const char *body;        /* RAW_BODY */
  size_t body_len;
  size_t flooded;          /* bytes written in RAW_FLOOD */
  int served;              /* pages answered in RAW_PAGES */
  struct bufferevent *bev[16];
  int nbev;
} raw_srv;

static const char flood_row[] =
  "{\"sandboxID\":\"0123456789abcdef0123456789abcdef\",\"state\":\"running\","
  "\"startedAt\":\"2026-11-29T10:00:00Z\",\"metadata\":{\"k\":\"v\"}},";

static void raw_flood_more(struct bufferevent *bev, void *arg)
{
  raw_srv *s = arg;
  struct evbuffer *out = bufferevent_get_output(bev);
  int i;
  /* top up to ~256 KiB queued: the server itself stays small */
  for(i = 0; i < 2000 && evbuffer_get_length(out) < 256 * 1024; i++) {
    evbuffer_add(out, flood_row, sizeof(flood_row) - 1);
    s->flooded += sizeof(flood_row) - 1;
  }
}

static void raw_read(struct bufferevent *bev, void *arg)
{
  raw_srv *s = arg;
  struct evbuffer *in = bufferevent_get_input(bev);
  struct evbuffer *out = bufferevent_get_output(bev);
  struct evbuffer_ptr p = evbuffer_search(in, "\r\n\r\n", 4, NULL);
  if(p.pos < 0)
    return; /* headers not complete yet (our requests have no body here) */
  evbuffer_drain(in, evbuffer_get_length(in));
  switch(s->mode) {
  case RAW_BODY:
    evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nContent-Type: "
                        "application/json\r\nContent-Length: %zu\r\n\r\n",
                        s->body_len);
    evbuffer_add(out, s->body, s->body_len);
    break;
  case RAW_STALL:
    evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
                             "[{\"sandboxID\":\"a\",");
    break;
  case RAW_SILENT:
    break;
  case RAW_PAGES: {
    struct evbuffer *b = evbuffer_new();
    int i;
    evbuffer_add(b, "[", 1);
    for(i = 0; i < 100; i++)
      evbuffer_add(b, flood_row, sizeof(flood_row) - (i < 99 ? 1 : 2));
    evbuffer_add(b, "]", 1);
    evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nContent-Type: "
                        "application/json\r\nX-Next-Token: t%d\r\n"
                        "Content-Length: %zu\r\n\r\n", ++s->served,
                        evbuffer_get_length(b));
    evbuffer_add_buffer(out, b);
    evbuffer_free(b);
    break;
  }
  case RAW_FLOOD:
    evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nContent-Type: "
                             "application/json\r\nConnection: close\r\n\r\n[");
    bufferevent_setcb(bev, raw_read, raw_flood_more, NULL, s);
    raw_flood_more(bev, s);
    break;
  }
}

static void raw_event(struct bufferevent *bev, short what, void *arg)
{
  raw_srv *s = arg;
  int i;
  (void)what; /* EOF or error: the client went away */
  for(i = 0; i < s->nbev; i++)
    if(s->bev[i] == bev)
      s->bev[i] = NULL;
  bufferevent_free(bev);
}

static void raw_accept(struct evconnlistener *l, evutil_socket_t fd,
                       struct sockaddr *sa, int slen, void *arg)
{
  raw_srv *s = arg;
  struct bufferevent *bev;
  (void)l;
  (void)sa;
  (void)slen;
  bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
  if(!bev || s->nbev >= 16) {
    if(bev)
      bufferevent_free(bev);
    else
      close(fd);
    return;
  }
  s->bev[s->nbev++] = bev;
  bufferevent_setcb(bev, raw_read, NULL, raw_event, s);
  bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static int raw_start(raw_srv *s, struct event_base *base, raw_mode mode)
{
  struct sockaddr_in sa;
  socklen_t sl = sizeof(sa);
  memset(s, 0, sizeof(*s));
  memset(&sa, 0, sizeof(sa));
  s->base = base;
  s->mode = mode;
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  s->l = evconnlistener_new_bind(base, raw_accept, s,
                                 LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                                 16, (struct sockaddr *)&sa, sizeof(sa));
  if(!s->l)
    return -1;
  if(getsockname(evconnlistener_get_fd(s->l), (struct sockaddr *)&sa, &sl))
    return -1;
  s->port = ntohs(sa.sin_port);
  return 0;
}

static void raw_stop(raw_srv *s)
{
  int i;
  for(i = 0; i < s->nbev; i++)
    if(s->bev[i])
      bufferevent_free(s->bev[i]);
  s->nbev = 0;
  if(s->l)
    evconnlistener_free(s->l);
  s->l = NULL;
}

typedef struct hres {
  int n;
  sc_err err;
  char msg[SC_ERRBUF_SIZE];
  size_t nrows;
  int64_t at_ms;
} hres;

static void on_res(const cube_result *r, void *ud)
{
  hres *h = ud;
  h->n++;
  h->err = r->err;
  h->nrows = r->n_sandboxes;
  h->at_ms = sctime_mono_ms();
  snprintf(h->msg, sizeof(h->msg), "%s", r->message);
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
  (void)fd;
  (void)what;
  (void)arg;
}

static int run_until(struct event_base *base, const int *counter, int target,
                     int limit_ms)
{
  int64_t end = sctime_mono_ms() + limit_ms;
  struct event *t = evtimer_new(base, tick, NULL);
  struct timeval tv = {0, 20000};
  while(*counter < target && sctime_mono_ms() < end) {
    evtimer_add(t, &tv);
    event_base_loop(base, EVLOOP_ONCE);
  }
  event_free(t);
  return *counter >= target;
}

static cube_client *client_for(struct event_base *base, int port,
                               cube_client_opts *o)
{
  static char url[64];
  sc_errbuf eb;
  cube_client *c;
  snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
  o->base_url = url;
  o->api_key = "hostile-test-key";
  c = cube_client_new(base, o, &eb);
  if(!c)
    fprintf(stderr, "cube_client_new: %s\n", eb.msg);
  return c;
}

/* Bodies a hostile Cube may send, through the whole client path. */
TEST(cube_hostile_bodies)
{
  static const struct {
    int get;            /* 1: cube_get, 0: cube_list */
    const char *body;
    size_t len;         /* 0: strlen */
    const char *err;    /* substring of the message */
  } cases[] = {
    {0, "{\"sandboxID\":\"a\"}", 0, "body: expected a JSON array, got object"},
    {0, "[{\"sandboxID\":[],\"state\":\"running\"}]", 0,
     "row 0: sandboxID: expected a string, got array"},
    {1, "{\"sandboxID\":\"s1\",\"state\":7,\"startedAt\":\"x\"}", 0,
     "state: expected a string, got int"},
    {0, "[{\"sandboxID\":\"a\",\"state\":\"running\",\"startedAt\":"
        "\"2026-11-29T10:00:00Z\",\"cpuCount\":1e400}]", 0,
     "a number out of range"},
    {0, "[{\"sandboxID\":\"a\",\"state\":\"running\",\"startedAt\":"
        "\"2026-11-29T10:00:00Z\",\"memoryMB\":99999999999999999999999}]", 0,
     "a number out of range"},
    {1, "{\"sandboxID\":\"s1\",\"state\":\"running\",\"startedAt\":"
        "\"99999-11-29T10:00:00Z\"}", 0,
     "startedAt: \"99999-11-29T10:00:00Z\" is not an RFC 3339 time"},
    {0, "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
        "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
     0, "nesting too deep"},
    {0, "[{\"sandboxID\":\"a\",\"state\":\"running\",\"startedAt\":"
        "\"2026-11-29T10:00:00Z\",\"metadata\":{\"k\":\"\xc3\x28\"}}]", 0,
     "invalid JSON"},
    {0, "[{\"sandboxID\":\"a\",\"state\":\"running\",\"startedAt\":"
        "\"2026-11-29T10:00:00Z\",\"metadata\":{\"lea.tenant_id\":\"t\\u0000x"
        "\"}}]", 0, "row 0: metadata.lea.tenant_id: contains a NUL byte"},
    {0, "[]\0[{\"sandboxID\":\"a\"}]", 22, "body: NUL byte at offset 2"},
  };
  struct event_base *base = event_base_new();
  size_t i;
  CHECK(base != NULL);
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    raw_srv s;
    cube_client_opts o;
    cube_client *c;
    hres h = {0};
    CHECK_OK(raw_start(&s, base, RAW_BODY));
    s.body = cases[i].body;
    s.body_len = cases[i].len ? cases[i].len : strlen(cases[i].body);
    cube_client_opts_init(&o);
    c = client_for(base, s.port, &o);
    CHECK(c != NULL);
    if(cases[i].get)
      CHECK_OK(cube_get(c, "s1", on_res, &h));
    else
      CHECK_OK(cube_list(c, NULL, "running", on_res, &h));
    CHECK_MSG(run_until(base, &h.n, 1, 5000), "case %zu: no answer", i);
    CHECK_MSG(h.err == SC_ERR_PROTOCOL, "case %zu: err %d: %s", i, h.err,
              h.msg);
    CHECK_MSG(strstr(h.msg, cases[i].err), "case %zu: %s (want %s)", i,
              h.msg, cases[i].err);
    CHECK_MSG(strncmp(h.msg, "cube 127.0.0.1:", 15) == 0, "case %zu: %s", i,
              h.msg);
    CHECK_INT(h.nrows, 0);
    cube_client_free(c);
    raw_stop(&s);
  }
  event_base_free(base);
}

/* A list body past the cap: TOO_LARGE, and the client holds at most about
 * the cap while reading it. */
TEST(cube_list_larger_than_cap)
{
  struct event_base *base = event_base_new();
  raw_srv s;
  cube_client_opts o;
  cube_client *c;
  hres h = {0};
  long rss0;
  int64_t t0;
  CHECK(base != NULL);
  CHECK_OK(raw_start(&s, base, RAW_FLOOD));
  cube_client_opts_init(&o);
  o.list_cap = 8u << 20;
  c = client_for(base, s.port, &o);
  CHECK(c != NULL);
  peak_reset();
  rss0 = maxrss_kb();
  t0 = sctime_mono_ms();
  CHECK_OK(cube_list(c, NULL, "running", on_res, &h));
  CHECK(run_until(base, &h.n, 1, 20000));
  CHECK_MSG(h.err == SC_ERR_TOO_LARGE, "err %d: %s", h.err, h.msg);
  CHECK_MSG(strstr(h.msg, "GET /v2/sandboxes: body over 8 MiB cap"), "%s",
            h.msg);
  CHECK_INT(h.nrows, 0);
  CHECK(s.flooded >= (8u << 20));
  /* the buffer may double once past half the cap; nothing near 2x more
   * (ASan keeps freed buffers in quarantine and pads them: more room) */
  CHECK_MSG(maxrss_kb() - rss0 < RSS_SLACK_KB, "rss grew %ld kB",
            maxrss_kb() - rss0);
  CHECK_MSG(h.at_ms - t0 < 10000, "took %lld ms", (long long)(h.at_ms - t0));
  cube_client_free(c);
  raw_stop(&s);
  event_base_free(base);
}

/* A Cube that pages for ever, each page within the page cap and with a
 * new token: the list stops at the total cap across its pages (rows, or
 * bytes of page bodies) with a clear error and no rows, instead of
 * growing until CUBE_MAX_PAGES (1000 pages of up to 64 MiB). */
TEST(cube_list_total_cap_across_pages)
{
  int k;
  for(k = 0; k < 2; k++) {
    struct event_base *base = event_base_new();
    raw_srv s;
    cube_client_opts o;
    cube_client *c;
    hres h = {0};
    CHECK(base != NULL);
    CHECK_OK(raw_start(&s, base, RAW_PAGES));
    cube_client_opts_init(&o);
    if(k == 0)
      o.list_max_rows = 1000;
    else
      o.list_max_bytes = 200000; /* a page is about 12 kB */
    c = client_for(base, s.port, &o);
    CHECK(c != NULL);
    CHECK_OK(cube_list(c, NULL, "running", on_res, &h));
    CHECK(run_until(base, &h.n, 1, 20000));
    CHECK_MSG(h.err == SC_ERR_TOO_LARGE, "err %d: %s", h.err, h.msg);
    CHECK_MSG(strstr(h.msg, k == 0 ? "passed 1000 rows" : "200000 bytes"),
              "%s", h.msg);
    CHECK_MSG(strstr(h.msg, "across its pages"), "%s", h.msg);
    CHECK_INT(h.nrows, 0);
    CHECK_MSG(s.served <= (k == 0 ? 11 : 20), "%d pages", s.served);
    cube_client_free(c);
    raw_stop(&s);
    event_base_free(base);
  }
}

/* Stalls mid-body and a server that never answers: timeouts, and other
 * calls of the same client are not held up behind them. */
TEST(cube_stall_and_silence_time_out)
{
  static const raw_mode modes[] = {RAW_STALL, RAW_SILENT};
  size_t k;
  for(k = 0; k < 2; k++) {
    struct event_base *base = event_base_new();
    raw_srv bad, good;
    cube_client_opts o;
    cube_client *cbad, *cgood;
    hres hb = {0}, hg = {0};
    int64_t t0;
    static const char row[] = "{\"sandboxID\":\"s1\",\"state\":\"running\","
                              "\"startedAt\":\"2026-11-29T10:00:00Z\"}";
    CHECK(base != NULL);
    CHECK_OK(raw_start(&bad, base, modes[k]));
    CHECK_OK(raw_start(&good, base, RAW_BODY));
    good.body = row;
    good.body_len = strlen(row);
    cube_client_opts_init(&o);
    o.timeout_ms = 400;
    cbad = client_for(base, bad.port, &o);
    cube_client_opts_init(&o);
    cgood = client_for(base, good.port, &o);
    CHECK(cbad && cgood);
    t0 = sctime_mono_ms();
    CHECK_OK(cube_get(cbad, "s1", on_res, &hb));
    CHECK_OK(cube_get(cgood, "s1", on_res, &hg));
    CHECK(run_until(base, &hg.n, 1, 5000));
    CHECK_MSG(hg.err == SC_OK, "%s", hg.msg);
    CHECK_INT(hb.n, 0); /* the good answer came first */
    CHECK(run_until(base, &hb.n, 1, 5000));
    CHECK_MSG(hb.err == SC_ERR_TIMEOUT, "mode %zu: err %d: %s", k, hb.err,
              hb.msg);
    CHECK_MSG(strstr(hb.msg, "GET /sandboxes/s1: timed out after 400 ms"),
              "%s", hb.msg);
    CHECK_MSG(hb.at_ms - t0 >= 390 && hb.at_ms - t0 < 3000, "after %lld ms",
              (long long)(hb.at_ms - t0));
    CHECK_INT(cube_client_pending(cbad), 0);
    cube_client_free(cbad);
    cube_client_free(cgood);
    raw_stop(&bad);
    raw_stop(&good);
    event_base_free(base);
  }
}

TEST_LIST = {
  T(yaml_alias_bomb_not_expanded),
  T(yaml_10000_levels_of_nesting),
  T(yaml_100mb_scalar),
  T(yaml_binary_garbage),
  T(yaml_crlf_and_nul_in_names_and_values),
  T(cube_hostile_bodies),
  T(cube_list_larger_than_cap),
  T(cube_list_total_cap_across_pages),
  T(cube_stall_and_silence_time_out),
  {0}};

TEST_MAIN()
