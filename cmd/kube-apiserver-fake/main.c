/*
 * kube-apiserver-fake - a small Kubernetes API server for the tests of the
 * kube store (docs/kube-apiserver-fake.md). Plain HTTP on loopback, or
 * HTTPS with --tls-cert/--tls-key (and --client-ca for client certs).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>
#include "cmd/kube-apiserver-fake/kf.h"

static void usage(FILE *f)
{
  fputs("usage: kube-apiserver-fake [--listen HOST:PORT] [--token T |"
        " --token-file F]\n"
        "                           [--history N] [--bookmark-ms N]\n"
        "                           [--tls-cert FILE --tls-key FILE"
        " [--client-ca FILE]]\n"
        "Default --listen 127.0.0.1:0 (any free port, printed on stdout).\n"
        "--token-file is re-read at every request (token rotation).\n"
        "--tls-cert/--tls-key serve HTTPS; --client-ca verifies client\n"
        "certificates with that CA: one it did not sign fails the handshake,\n"
        "a request with none (and no valid token) gets 401.\n",
        f);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
  (void)sig;
  (void)what;
  event_base_loopbreak(arg);
}

static int num(const char *opt, const char *v, long lo, long hi, int *out)
{
  char *end;
  long n;
  errno = 0;
  n = strtol(v, &end, 10);
  if(errno || *end || end == v || n < lo || n > hi) {
    fprintf(stderr, "kube-apiserver-fake: %s '%s': want a number from %ld "
            "to %ld\n", opt, v, lo, hi);
    return -1;
  }
  *out = (int)n;
  return 0;
}

int main(int argc, char **argv)
{
  static const struct option longopts[] = {
    {"listen", required_argument, NULL, 'l'},
    {"token", required_argument, NULL, 't'},
    {"token-file", required_argument, NULL, 'T'},
    {"history", required_argument, NULL, 'H'},
    {"bookmark-ms", required_argument, NULL, 'b'},
    {"tls-cert", required_argument, NULL, 'c'},
    {"tls-key", required_argument, NULL, 'k'},
    {"client-ca", required_argument, NULL, 'C'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}
  };
  kf_opts o;
  char host[256] = "127.0.0.1";
  int port = 0, bound = 0, c, rc = 1;
  struct event_base *base = NULL;
  struct event *sigterm = NULL, *sigint = NULL;
  kf_server *srv = NULL;
  kf_tls *tls = NULL;
  const char *cert = NULL, *key = NULL, *client_ca = NULL;

  memset(&o, 0, sizeof(o));
  while((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch(c) {
    case 'l': {
      const char *colon = strrchr(optarg, ':');
      if(!colon || (size_t)(colon - optarg) >= sizeof(host) ||
         num("--listen", colon + 1, 0, 65535, &port))
        return 2;
      snprintf(host, sizeof(host), "%.*s", (int)(colon - optarg), optarg);
      break;
    }
    case 't':
      o.token = optarg;
      break;
    case 'T':
      o.token_file = optarg;
      break;
    case 'H':
      if(num("--history", optarg, 1, 10000000, &o.history_keep))
        return 2;
      break;
    case 'b':
      if(num("--bookmark-ms", optarg, 1, 3600000, &o.bookmark_ms))
        return 2;
      break;
    case 'c':
      cert = optarg;
      break;
    case 'k':
      key = optarg;
      break;
    case 'C':
      client_ca = optarg;
      break;
    case 'h':
      usage(stdout);
      return 0;
    default:
      usage(stderr);
      return 2;
    }
  }
  if(optind != argc) {
    usage(stderr);
    return 2;
  }
  if(!cert != !key || (client_ca && !cert)) {
    fprintf(stderr, "kube-apiserver-fake: --tls-cert and --tls-key go "
            "together (and --client-ca needs them)\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  if(cert) {
    char err[400];
    tls = kf_tls_new(cert, key, client_ca, err, sizeof(err));
    if(!tls) {
      fprintf(stderr, "kube-apiserver-fake: %s\n", err);
      return 2;
    }
    o.bev = kf_tls_bev;
    o.bev_arg = tls;
  }
  base = event_base_new();
  if(!base)
    goto out;
  srv = kf_server_new(base, host, port, &o, &bound);
  if(!srv) {
    fprintf(stderr, "kube-apiserver-fake: cannot listen on %s:%d\n", host,
            port);
    goto out;
  }
  printf("kube-apiserver-fake listening on %s://%s:%d\n",
         tls ? "https" : "http", host, bound);
  fflush(stdout);
  sigterm = evsignal_new(base, SIGTERM, on_signal, base);
  sigint = evsignal_new(base, SIGINT, on_signal, base);
  event_add(sigterm, NULL);
  event_add(sigint, NULL);
  event_base_dispatch(base);
  rc = 0;
out:
  kf_server_free(srv);
  kf_tls_free(tls);
  if(sigterm)
    event_free(sigterm);
  if(sigint)
    event_free(sigint);
  if(base)
    event_base_free(base);
  return rc;
}
