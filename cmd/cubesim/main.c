/*
 * cubesim - a Cube/E2B-compatible sandbox API simulator with virtual time,
 * fault injection and an audit trail. See docs/cubesim.md.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>
#include "lib/sctime.h"
#include "cmd/cubesim/sim_server.h"

static void usage(FILE *f)
{
  fputs("usage: cubesim [--listen HOST:PORT] [--dialect cube|e2b]"
        " [--api-key KEY]\n"
        "               [--clock-speed X] [--start RFC3339] [--seed N]"
        " [--faults SPEC]\n"
        "               [--audit-log FILE] [--max-sandboxes N]"
        " [--pause-duration SECONDS]\n"
        "               [--host-mount-allow PREFIX,...]\n"
        "Default --listen 127.0.0.1:3000 (port 0: any free port),"
        " --dialect cube.\n", f);
}

static int bad(const char *opt, const char *val, const char *why)
{
  fprintf(stderr, "cubesim: %s '%s': %s\n", opt, val, why);
  return 2;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
  (void)sig;
  (void)what;
  event_base_loopbreak(arg);
}

int main(int argc, char **argv)
{
  static const struct option longopts[] = {
    {"listen", required_argument, NULL, 'l'},
    {"dialect", required_argument, NULL, 'd'},
    {"api-key", required_argument, NULL, 'k'},
    {"clock-speed", required_argument, NULL, 'c'},
    {"start", required_argument, NULL, 'S'},
    {"seed", required_argument, NULL, 's'},
    {"faults", required_argument, NULL, 'f'},
    {"audit-log", required_argument, NULL, 'a'},
    {"max-sandboxes", required_argument, NULL, 'm'},
    {"pause-duration", required_argument, NULL, 'p'},
    {"host-mount-allow", required_argument, NULL, 'H'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}
  };
  sim_server_opts o;
  sim_server *srv = NULL;
  struct event_base *base = NULL;
  struct event *sigterm = NULL, *sigint = NULL;
  char host[256] = "127.0.0.1";
  sc_errbuf eb;
  int c, rc = 1;

  memset(&o, 0, sizeof(o));
  o.port = 3000;
  o.dialect = SIM_DIALECT_CUBE;
  o.clock_speed = 1.0;
  o.pause_ms = 500;
  while((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    char *end;
    switch(c) {
    case 'l': {
      const char *colon = strrchr(optarg, ':');
      const char *h = optarg;
      size_t hl;
      long long port;
      if(!colon)
        return bad("--listen", optarg, "want HOST:PORT");
      hl = (size_t)(colon - optarg);
      if(hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
      }
      if(!hl || hl >= sizeof(host))
        return bad("--listen", optarg, "bad host");
      memcpy(host, h, hl);
      host[hl] = '\0';
      errno = 0;
      port = strtoll(colon + 1, &end, 10);
      if(errno || end == colon + 1 || *end || port < 0 || port > 65535)
        return bad("--listen", optarg, "port must be 0..65535");
      o.port = (int)port;
      break;
    }
    case 'd':
      if(!strcmp(optarg, "cube"))
        o.dialect = SIM_DIALECT_CUBE;
      else if(!strcmp(optarg, "e2b"))
        o.dialect = SIM_DIALECT_E2B;
      else
        return bad("--dialect", optarg, "want cube or e2b");
      break;
    case 'k':
      if(!*optarg)
        return bad("--api-key", optarg, "must not be empty");
      o.api_key = optarg;
      break;
    case 'c':
      errno = 0;
      o.clock_speed = strtod(optarg, &end);
      if(errno || end == optarg || *end || !(o.clock_speed >= 0) ||
         o.clock_speed > 1e6)
        return bad("--clock-speed", optarg, "want a number from 0 to 1e6");
      break;
    case 'S':
      if(sctime_parse_rfc3339(optarg, &o.start) || o.start <= 0)
        return bad("--start", optarg, "want an RFC 3339 time after 1970");
      break;
    case 's': {
      unsigned long long v;
      errno = 0;
      v = strtoull(optarg, &end, 10);
      if(errno || end == optarg || *end || optarg[0] == '-')
        return bad("--seed", optarg, "want a non-negative integer");
      o.seed = v;
      break;
    }
    case 'f': {
      sim_faults *f = NULL;
      eb.msg[0] = '\0';
      if(sim_faults_parse(optarg, 0, &f, &eb)) {
        fprintf(stderr, "cubesim: --faults: %s\n", eb.msg);
        return 2;
      }
      sim_faults_free(f);
      o.faults = optarg;
      break;
    }
    case 'a':
      o.audit_log = optarg;
      break;
    case 'm': {
      long long v;
      errno = 0;
      v = strtoll(optarg, &end, 10);
      if(errno || end == optarg || *end || v < 0 || v > 100000000)
        return bad("--max-sandboxes", optarg, "want a count (0: no limit)");
      o.max_sandboxes = (size_t)v;
      break;
    }
    case 'H':
      if(!*optarg)
        return bad("--host-mount-allow", optarg, "must not be empty");
      o.host_mount_allow = optarg;
      break;
    case 'p': {
      double d;
      errno = 0;
      d = strtod(optarg, &end);
      if(errno || end == optarg || *end || !(d >= 0) || d > 86400)
        return bad("--pause-duration", optarg, "want seconds from 0 to 86400");
      o.pause_ms = (int64_t)(d * 1000.0 + 0.5);
      break;
    }
    case 'h':
      usage(stdout);
      return 0;
    default:
      usage(stderr);
      return 2;
    }
  }
  if(optind < argc) {
    fprintf(stderr, "cubesim: unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    return 2;
  }
  o.host = host;
  signal(SIGPIPE, SIG_IGN);
  base = event_base_new();
  if(!base) {
    fprintf(stderr, "cubesim: cannot create the event loop\n");
    return 1;
  }
  eb.msg[0] = '\0';
  if(sim_server_new(base, &o, &srv, &eb)) {
    fprintf(stderr, "cubesim: %s\n", eb.msg[0] ? eb.msg : "cannot start");
    goto out;
  }
  sigterm = evsignal_new(base, SIGTERM, on_signal, base);
  sigint = evsignal_new(base, SIGINT, on_signal, base);
  if(!sigterm || !sigint || evsignal_add(sigterm, NULL) ||
     evsignal_add(sigint, NULL)) {
    fprintf(stderr, "cubesim: cannot install signal handlers\n");
    goto out;
  }
  if(strchr(host, ':'))
    printf("cubesim listening on http://[%s]:%d\n", host,
           sim_server_port(srv));
  else
    printf("cubesim listening on http://%s:%d\n", host, sim_server_port(srv));
  fflush(stdout);
  event_base_dispatch(base);
  rc = 0;
out:
  sim_server_free(srv);
  if(sigterm)
    event_free(sigterm);
  if(sigint)
    event_free(sigint);
  event_base_free(base);
  libevent_global_shutdown();
  return rc;
}
