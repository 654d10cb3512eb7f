/*
 * bench_connect.c - time `sessionctl connect` runs, one at a time, and
 * print their latency percentiles (`make bench` step 8, hack/bench.sh).
 *
 * Usage: bench_connect [-t SECONDS] [-g N] MODE SESSIONCTL STORE SIM_URL NAMES
 *                      OUT [TMPDIR]
 *   -t SECONDS each connect's --timeout (default 20)
 *   -g N       give up the run after N failed connects (default 0: never),
 *              so that a controller that does not answer costs N timeouts,
 *              not one per name
 *   MODE       paused: NAMES lines are "NAME SANDBOXID"; before each
 *                connect the sandbox's state is read from cubesim
 *                (GET SIM_URL/sandboxes/ID) and must be "paused" (else the
 *                name is skipped and counted as not paused); the connect
 *                must print that SANDBOXID and cubesim must then say
 *                "running"
 *              new: NAMES lines are "NAME"; a one-Session manifest (template
 *                t, namespace default) is written to TMPDIR before the
 *                clock starts, and `connect NAME -f FILE` must print a
 *                sandbox ID that cubesim says is running
 *              get: NAMES lines are "NAME"; times `sessionctl get sessions
 *                NAME -o name` (the floor: process start, store open, one
 *                read), which must exit 0
 *   SESSIONCTL the sessionctl binary; STORE its --store (the environment,
 *              KUBECONFIG included, is passed on)
 *   OUT        one latency a line, in microseconds, in the order run
 *
 * The clock (CLOCK_MONOTONIC) starts right before fork() and stops when
 * waitpid() returns: the latency is what a caller of the command sees,
 * sessionctl's own start and store open included. stdout of the command
 * is read through a pipe. Prints one line:
 *   n=N failed=F notpaused=P skipped=S min=.. p50=.. p90=.. p99=.. max=..
 *   mean=.. ms (one line)
 * (nearest-rank percentiles over the runs that passed their checks).
 * Runs not done because of -g are counted in "skipped=".
 * Exit 0 when at least one run passed, 1 otherwise, 2 on bad usage. It
 * measures, it asserts nothing about the figures.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <curl/curl.h>
#include <json-c/json.h>

#define LINE_MAX_LEN 512
#define OUT_CAP 4096            /* the command's stdout kept */
#define BODY_CAP (1 << 20)      /* cubesim's answer kept */

typedef struct body {
  char *p;
  size_t n;
} body;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
  body *b = ud;
  size_t len = size * nmemb;
  char *np;
  if(b->n + len > BODY_CAP)
    return 0;
  np = realloc(b->p, b->n + len + 1);
  if(!np)
    return 0;
  memcpy(np + b->n, ptr, len);
  b->p = np;
  b->n += len;
  b->p[b->n] = 0;
  return len;
}

/* cubesim's state of sandbox id into st ("" when unknown); false when the
 * request failed */
static int sandbox_state(CURL *c, const char *sim, const char *id, char *st,
                         size_t len)
{
  char url[1024];
  body b = {NULL, 0};
  long code = 0;
  json_object *o, *v;
  int ok = 0;
  st[0] = 0;
  snprintf(url, sizeof(url), "%s/sandboxes/%s", sim, id);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
  if(curl_easy_perform(c) == CURLE_OK &&
     curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK &&
     code == 200 && b.p) {
    o = json_tokener_parse(b.p);
    if(o && json_object_object_get_ex(o, "state", &v) &&
       json_object_is_type(v, json_type_string)) {
      snprintf(st, len, "%s", json_object_get_string(v));
      ok = 1;
    }
    json_object_put(o);
  }
  free(b.p);
  return ok;
}

static double now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* run argv, its stdout into out (NUL-terminated, capped); the exit status
 * (-1 when it did not exit normally); *us the wall time it took */
static int run(char *const argv[], char *out, size_t cap, double *us)
{
  int fd[2], st = 0;
  size_t n = 0;
  ssize_t r;
  pid_t pid;
  double t0;
  out[0] = 0;
  if(pipe(fd))
    return -1;
  t0 = now_us();
  pid = fork();
  if(pid < 0) {
    close(fd[0]);
    close(fd[1]);
    return -1;
  }
  if(pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    close(fd[1]);
    execv(argv[0], argv);
    _exit(127);
  }
  close(fd[1]);
  for(;;) {
    char tmp[512];
    r = read(fd[0], tmp, sizeof(tmp));
    if(r < 0 && errno == EINTR)
      continue;
    if(r <= 0)
      break;
    if(n + (size_t)r < cap) {
      memcpy(out + n, tmp, (size_t)r);
      n += (size_t)r;
    }
  }
  close(fd[0]);
  while(waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  *us = now_us() - t0;
  out[n] = 0;
  while(n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
    out[--n] = 0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int cmp_dbl(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* nearest rank: the smallest value with at least p of them at or below */
static double pct(const double *a, size_t n, double p)
{
  size_t k = (size_t)(p * (double)n + 0.999999);
  if(k < 1)
    k = 1;
  if(k > n)
    k = n;
  return a[k - 1];
}

static void usage(void)
{
  fprintf(stderr, "usage: bench_connect [-t SECONDS] [-g N] paused|new|get "
          "SESSIONCTL STORE SIM_URL NAMES OUT [TMPDIR]\n");
  exit(2);
}

int main(int argc, char **argv)
{
  const char *mode, *ctl, *storeurl, *sim, *tmpdir;
  FILE *in, *out;
  char line[LINE_MAX_LEN], res[OUT_CAP], st[64], mf[1024];
  double *lat = NULL, sum = 0;
  size_t n = 0, cap = 0, failed = 0, notpaused = 0, skipped = 0, lineno = 0;
  long giveup = 0, tmo = 20;
  char tmo_s[32];
  int paused, isnew, isget, opt;
  CURL *c;

  while((opt = getopt(argc, argv, "t:g:")) != -1) {
    char *end;
    long v;
    if(opt != 't' && opt != 'g')
      usage();
    errno = 0;
    v = strtol(optarg, &end, 10);
    if(errno || end == optarg || *end || v < 0 || v > 3600)
      usage();
    if(opt == 't')
      tmo = v;
    else
      giveup = v;
  }
  argc -= optind - 1;
  argv += optind - 1;
  if(argc < 7 || argc > 8)
    usage();
  snprintf(tmo_s, sizeof(tmo_s), "%lds", tmo);
  mode = argv[1];
  ctl = argv[2];
  storeurl = argv[3];
  sim = argv[4];
  tmpdir = argc == 8 ? argv[7] : "/tmp";
  paused = !strcmp(mode, "paused");
  isnew = !strcmp(mode, "new");
  isget = !strcmp(mode, "get");
  if(!paused && !isnew && !isget)
    usage();
  in = fopen(argv[5], "r");
  if(!in) {
    fprintf(stderr, "bench_connect: %s: %s\n", argv[5], strerror(errno));
    return 2;
  }
  out = fopen(argv[6], "w");
  if(!out) {
    fprintf(stderr, "bench_connect: %s: %s\n", argv[6], strerror(errno));
    fclose(in);
    return 2;
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  c = curl_easy_init();
  if(!c) {
    fprintf(stderr, "bench_connect: no curl handle\n");
    return 2;
  }

  while(fgets(line, sizeof(line), in)) {
    char name[254], id[128];
    char *av[16];
    int k = 0, rc, fields;
    double us = 0;
    lineno++;
    if(giveup && (long)failed >= giveup) {
      skipped++;
      continue;
    }
    id[0] = 0;
    fields = sscanf(line, "%253s %127s", name, id);
    if(fields < 1)
      continue;
    if(paused && fields < 2) {
      fprintf(stderr, "bench_connect: %s:%zu: want \"NAME SANDBOXID\"\n",
              argv[5], lineno);
      failed++;
      continue;
    }
    if(paused) {
      if(!sandbox_state(c, sim, id, st, sizeof(st)) || strcmp(st, "paused")) {
        fprintf(stderr, "bench_connect: %s: sandbox %s is \"%s\", not "
                "paused: skipped\n", name, id, st);
        notpaused++;
        continue;
      }
    }
    if(isnew) {
      FILE *m;
      snprintf(mf, sizeof(mf), "%s/connect-%s.yaml", tmpdir, name);
      m = fopen(mf, "w");
      if(!m || fprintf(m, "apiVersion: lea.io/v1alpha1\nkind: Session\n"
                       "metadata: {name: %s, namespace: default}\n"
                       "spec: {template: t}\n", name) < 0) {
        fprintf(stderr, "bench_connect: %s: %s\n", mf, strerror(errno));
        if(m)
          fclose(m);
        failed++;
        continue;
      }
      fclose(m);
    }
    av[k++] = (char *)ctl;
    av[k++] = (char *)"--store";
    av[k++] = (char *)storeurl;
    if(isget) {
      av[k++] = (char *)"get";
      av[k++] = (char *)"sessions";
      av[k++] = name;
    }
    else {
      av[k++] = (char *)"connect";
      av[k++] = name;
      av[k++] = (char *)"--timeout";
      av[k++] = tmo_s;
    }
    av[k++] = (char *)"-o";
    av[k++] = (char *)"name";
    if(isnew) {
      av[k++] = (char *)"-f";
      av[k++] = mf;
    }
    av[k] = NULL;
    rc = run(av, res, sizeof(res), &us);
    if(rc != 0) {
      fprintf(stderr, "bench_connect: %s: exit %d after %.1f ms\n", name,
              rc, us / 1000);
      failed++;
      continue;
    }
    if(paused && strcmp(res, id)) {
      fprintf(stderr, "bench_connect: %s: served sandbox \"%s\", want %s\n",
              name, res, id);
      failed++;
      continue;
    }
    if(!isget) {
      const char *sid = paused ? id : res;
      if(!*sid || !sandbox_state(c, sim, sid, st, sizeof(st)) ||
         strcmp(st, "running")) {
        fprintf(stderr, "bench_connect: %s: served, but sandbox \"%s\" is "
                "\"%s\" in cubesim\n", name, sid, st);
        failed++;
        continue;
      }
    }
    if(n == cap) {
      double *nl = realloc(lat, (cap ? 2 * cap : 256) * sizeof(*lat));
      if(!nl) {
        fprintf(stderr, "bench_connect: out of memory\n");
        return 2;
      }
      lat = nl;
      cap = cap ? 2 * cap : 256;
    }
    lat[n++] = us;
    sum += us;
    fprintf(out, "%.0f\n", us);
  }
  fclose(in);
  fclose(out);
  curl_easy_cleanup(c);
  curl_global_cleanup();
  if(!n) {
    printf("n=0 failed=%zu notpaused=%zu skipped=%zu\n", failed, notpaused,
           skipped);
    free(lat);
    return 1;
  }
  qsort(lat, n, sizeof(*lat), cmp_dbl);
  printf("n=%zu failed=%zu notpaused=%zu skipped=%zu min=%.1f p50=%.1f "
         "p90=%.1f p99=%.1f max=%.1f mean=%.1f ms\n", n, failed, notpaused,
         skipped,
         lat[0] / 1000, pct(lat, n, 0.50) / 1000, pct(lat, n, 0.90) / 1000,
         pct(lat, n, 0.99) / 1000, lat[n - 1] / 1000, sum / (double)n / 1000);
  free(lat);
  return 0;
}
