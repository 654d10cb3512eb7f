/* exec.c - client-go credential plugins (see kube_exec.h).
 *
 * A job: posix_spawn() of the plugin (no shell) with stdin /dev/null,
 * stdout and stderr on non-blocking pipes, every other descriptor closed,
 * its own process group, the signals we ignore back to their defaults.
 * job_step() reads what is there, reaps the plugin when it exited and
 * kills its process group past the deadline or the stdout cap; it is
 * driven by poll() (kube_exec_job_wait) or by events of a loop. */
#define _GNU_SOURCE /* pipe2, posix_spawn_file_actions_addclosefrom_np */
#include "controller/kubeclient/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <event2/event.h>
#include <json-c/json.h>
#include "lib/dynbuf.h"
#include "controller/kubeclient/config.h"

extern char **environ;

#define ERR_LINE_MAX 200
/* how often a running plugin is checked for its exit (its pipes may stay
 * open in a child it left behind); faster once both pipes are closed */
#define POLL_OPEN_MS 50
#define POLL_CLOSED_MS 5

struct kube_exec_job {
  const kube_exec_cfg *cfg;
  pid_t pid;
  bool reaped;
  int status;              /* waitpid's; -1 when it could not be had */
  int fd[2];               /* stdout, stderr; -1 once closed */
  struct event *ev[2];
  struct event *tick;      /* the next check of the exit and deadline */
  dynbuf out;
  char err_line[ERR_LINE_MAX + 1];
  size_t err_len;
  bool err_line_done;
  bool too_large, timed_out, done;
  int64_t deadline_ms;     /* monotonic */
  kube_exec_done_cb cb;
  void *ud;
  sc_err err;              /* the result, once done */
  sc_errbuf eb;
  kube_exec_cred cred;
};

void kube_exec_cred_clear(kube_exec_cred *c)
{
  if(!c)
    return;
  free(c->token);
  free(c->cert_pem);
  free(c->key_pem);
  memset(c, 0, sizeof(*c));
}

static void free_strv(char **v, size_t n)
{
  size_t i;
  for(i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

void kube_exec_cfg_free(kube_exec_cfg *cfg)
{
  if(!cfg)
    return;
  free(cfg->api_version);
  free(cfg->command);
  free(cfg->path);
  free_strv(cfg->args, cfg->n_args);
  free_strv(cfg->env, cfg->n_env);
  free(cfg->install_hint);
  free(cfg->exec_info);
  free(cfg->where);
  free(cfg);
}

static long timeout_of(const kube_exec_cfg *cfg)
{
  return cfg->timeout_ms > 0 ? cfg->timeout_ms : KUBE_EXEC_TIMEOUT_MS;
}

/* ------------------------------------------------------------------ */
/* the output */

static sc_err bad(const kube_exec_cfg *cfg, sc_errbuf *eb, sc_err err,
                  const char *what)
{
  return sc_errf(eb, err, "%s: exec plugin %s: %s", cfg->where,
                 cfg->command, what);
}

/* a string member, NULL when absent or null; *bad_type when not a string */
static const char *str_member(json_object *o, const char *key,
                              bool *bad_type)
{
  json_object *v;
  *bad_type = false;
  if(!json_object_object_get_ex(o, key, &v) || !v)
    return NULL;
  if(!json_object_is_type(v, json_type_string)) {
    *bad_type = true;
    return NULL;
  }
  return json_object_get_string(v);
}

static bool has_ctl(const char *s)
{
  for(; *s; s++)
    if((unsigned char)*s < ' ' || *s == 0x7f)
      return true;
  return false;
}

sc_err kube_exec_parse(const kube_exec_cfg *cfg, const char *out, size_t len,
                       sc_time now, kube_exec_cred *cred, sc_errbuf *eb)
{
  json_tokener *tok;
  json_object *o = NULL, *st;
  const char *av, *kind, *token, *crt, *key, *exp;
  bool bt1, bt2, bt3, bt4, bt5;
  char msg[SC_ERRBUF_SIZE];
  size_t i, end;
  sc_err err = SC_OK;
  memset(cred, 0, sizeof(*cred));
  for(i = 0; i < len && strchr(" \t\r\n", out[i]); i++)
    ;
  if(i == len)
    return bad(cfg, eb, SC_ERR_PROTOCOL, "wrote nothing on stdout (want an "
               "ExecCredential JSON object)");
  tok = json_tokener_new();
  if(!tok)
    return SC_ERR_NOMEM;
  o = json_tokener_parse_ex(tok, out, (int)len);
  end = json_tokener_get_parse_end(tok);
  if(!o || json_tokener_get_error(tok) != json_tokener_success) {
    enum json_tokener_error je = json_tokener_get_error(tok);
    snprintf(msg, sizeof(msg), "stdout is not JSON (%s, at byte %zu of "
             "%zu)", je == json_tokener_continue ? "it ends too soon"
             : json_tokener_error_desc(je), end, len);
    json_tokener_free(tok);
    json_object_put(o);
    return bad(cfg, eb, SC_ERR_PROTOCOL, msg);
  }
  json_tokener_free(tok);
  for(i = end; i < len && strchr(" \t\r\n", out[i]); i++)
    ;
  if(i < len) {
    snprintf(msg, sizeof(msg), "stdout has more after the JSON value (at "
             "byte %zu of %zu)", i, len);
    err = bad(cfg, eb, SC_ERR_PROTOCOL, msg);
    goto out;
  }
  if(!json_object_is_type(o, json_type_object)) {
    err = bad(cfg, eb, SC_ERR_PROTOCOL, "stdout is not a JSON object (want "
              "an ExecCredential)");
    goto out;
  }
  av = str_member(o, "apiVersion", &bt1);
  kind = str_member(o, "kind", &bt2);
  if(!av || strcmp(av, cfg->api_version)) {
    snprintf(msg, sizeof(msg), "the kubeconfig asks for apiVersion %s, the "
             "plugin returned %s%.100s%s", cfg->api_version, av ? "\"" : "",
             av ? av : bt1 ? "a non-string apiVersion" : "no apiVersion",
             av ? "\"" : "");
    err = bad(cfg, eb, SC_ERR_PROTOCOL, msg);
    goto out;
  }
  if(!kind || strcmp(kind, "ExecCredential")) {
    snprintf(msg, sizeof(msg), "the output's kind is %s%.100s%s, want "
             "ExecCredential", kind ? "\"" : "",
             kind ? kind : bt2 ? "not a string" : "missing", kind ? "\"" : "");
    err = bad(cfg, eb, SC_ERR_PROTOCOL, msg);
    goto out;
  }
  if(!json_object_object_get_ex(o, "status", &st) ||
     !json_object_is_type(st, json_type_object)) {
    err = bad(cfg, eb, SC_ERR_PROTOCOL, "the ExecCredential has no status "
              "object");
    goto out;
  }
  token = str_member(st, "token", &bt3);
  crt = str_member(st, "clientCertificateData", &bt4);
  key = str_member(st, "clientKeyData", &bt5);
  exp = str_member(st, "expirationTimestamp", &bt1);
  if(bt3 || bt4 || bt5 || bt1) {
    snprintf(msg, sizeof(msg), "status.%s is not a string", bt3 ? "token"
             : bt4 ? "clientCertificateData" : bt5 ? "clientKeyData"
                   : "expirationTimestamp");
    err = bad(cfg, eb, SC_ERR_PROTOCOL, msg);
    goto out;
  }
  if(token && !*token)
    token = NULL;
  if(crt && !*crt)
    crt = NULL;
  if(key && !*key)
    key = NULL;
  if(!token && !crt && !key) {
    err = bad(cfg, eb, SC_ERR_PROTOCOL, "the ExecCredential has no "
              "credential (want status.token, or status.clientCertificateData "
              "and status.clientKeyData)");
    goto out;
  }
  if(!crt != !key) {
    err = bad(cfg, eb, SC_ERR_PROTOCOL, crt ? "status.clientCertificateData "
              "without status.clientKeyData" : "status.clientKeyData without "
              "status.clientCertificateData");
    goto out;
  }
  if(token && (has_ctl(token) || strlen(token) > KUBE_TOKEN_MAX)) {
    snprintf(msg, sizeof(msg), "status.token %s", has_ctl(token)
             ? "has control characters or line breaks"
             : "is longer than 16384 bytes");
    err = bad(cfg, eb, SC_ERR_PROTOCOL, msg);
    goto out;
  }
  if(crt) {
    char src[SC_ERRBUF_SIZE];
    snprintf(src, sizeof(src), "%s: exec plugin %s: status.client"
             "CertificateData", cfg->where, cfg->command);
    err = kube_pem_check(crt, "cert", src, eb);
    if(!err) {
      snprintf(src, sizeof(src), "%s: exec plugin %s: status.clientKeyData",
               cfg->where, cfg->command);
      err = kube_pem_check(key, "key", src, eb);
    }
    if(!err) {
      snprintf(src, sizeof(src), "%s: exec plugin %s", cfg->where,
               cfg->command);
      err = kube_pem_check_pair(crt, key, src, eb);
    }
    if(err)
      goto out;
  }
  if(exp) {
    char nbuf[SCTIME_RFC3339_MAX];
    if(sctime_parse_rfc3339(exp, &cred->expires) || !cred->expires) {
      snprintf(msg, sizeof(msg), "status.expirationTimestamp \"%.60s\" is "
               "not an RFC 3339 time", exp);
      err = bad(cfg, eb, SC_ERR_PROTOCOL, msg);
      goto out;
    }
    if(cred->expires <= now) {
      sctime_format_rfc3339(now, nbuf, sizeof(nbuf));
      snprintf(msg, sizeof(msg), "the credential it returned has expired "
               "(expirationTimestamp %.60s, now %s)", exp, nbuf);
      err = bad(cfg, eb, SC_ERR_PROTOCOL, msg);
      goto out;
    }
  }
  if((token && !(cred->token = strdup(token))) ||
     (crt && !(cred->cert_pem = strdup(crt))) ||
     (key && !(cred->key_pem = strdup(key))))
    err = SC_ERR_NOMEM;
out:
  json_object_put(o);
  if(err)
    kube_exec_cred_clear(cred);
  return err;
}

/* ------------------------------------------------------------------ */
/* the program */

static bool is_exe(const char *p)
{
  struct stat s;
  return stat(p, &s) == 0 && S_ISREG(s.st_mode) && access(p, X_OK) == 0;
}

static sc_err not_found(const kube_exec_cfg *cfg, const char *what,
                        sc_errbuf *eb)
{
  return sc_errf(eb, SC_ERR_NOT_FOUND, "%s: exec plugin %s: %s: %s",
                 cfg->where, cfg->command, what,
                 cfg->install_hint ? cfg->install_hint
                 : "install it, or give its path in exec.command");
}

/* the program to run: cfg->path, or the command looked up in PATH (only
 * absolute directories of it: a relative one would depend on our working
 * directory) */
static sc_err find_program(const kube_exec_cfg *cfg, char **out,
                           sc_errbuf *eb)
{
  const char *p = getenv("PATH"), *s, *e;
  char cand[4096], msg[4400];
  *out = NULL;
  if(cfg->path) {
    struct stat st;
    if(stat(cfg->path, &st) != 0) {
      if(errno == ENOENT || errno == ENOTDIR) {
        snprintf(msg, sizeof(msg), "%s does not exist", cfg->path);
        return not_found(cfg, msg, eb);
      }
      return sc_errf(eb, SC_ERR_IO, "%s: exec plugin %s: %s: %s", cfg->where,
                     cfg->command, cfg->path, strerror(errno));
    }
    if(!is_exe(cfg->path))
      return sc_errf(eb, SC_ERR_INVALID, "%s: exec plugin %s: %s is not an "
                     "executable file", cfg->where, cfg->command, cfg->path);
    *out = strdup(cfg->path);
    return *out ? SC_OK : SC_ERR_NOMEM;
  }
  if(!p)
    p = "/usr/local/bin:/usr/bin:/bin";
  for(s = p; *s; s = *e ? e + 1 : e) {
    e = strchr(s, ':');
    if(!e)
      e = s + strlen(s);
    if(*s != '/' || e - s > 2000)
      continue;
    snprintf(cand, sizeof(cand), "%.*s/%s", (int)(e - s), s, cfg->command);
    if(is_exe(cand)) {
      *out = strdup(cand);
      return *out ? SC_OK : SC_ERR_NOMEM;
    }
  }
  return not_found(cfg, "not found in PATH", eb);
}

/* our environment without the names cfg sets, then cfg's, then
 * KUBERNETES_EXEC_INFO (a later name wins in kubectl too) */
static char **build_env(const kube_exec_cfg *cfg, char **info)
{
  size_t n = 0, i, j, k = 0;
  char **env;
  for(i = 0; environ && environ[i]; i++)
    n++;
  env = calloc(n + cfg->n_env + 2, sizeof(*env));
  *info = NULL;
  if(!env)
    return NULL;
  for(i = 0; environ && environ[i]; i++) {
    const char *eq = strchr(environ[i], '=');
    size_t nl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
    bool skip = nl == 20 && !strncmp(environ[i], "KUBERNETES_EXEC_INFO", 20);
    for(j = 0; j < cfg->n_env && !skip; j++)
      skip = !strncmp(cfg->env[j], environ[i], nl) && cfg->env[j][nl] == '=';
    if(!skip)
      env[k++] = environ[i];
  }
  for(j = 0; j < cfg->n_env; j++)
    env[k++] = cfg->env[j];
  if(cfg->exec_info) {
    i = strlen(cfg->exec_info) + 22;
    *info = malloc(i);
    if(!*info) {
      free(env);
      return NULL;
    }
    snprintf(*info, i, "KUBERNETES_EXEC_INFO=%s", cfg->exec_info);
    env[k++] = *info;
  }
  env[k] = NULL;
  return env;
}

static sc_err spawn(const kube_exec_cfg *cfg, const char *prog, pid_t *pid,
                    int fds[2], sc_errbuf *eb)
{
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  sigset_t none, dfl;
  int po[2] = {-1, -1}, pe[2] = {-1, -1}, rc;
  char **argv = NULL, **envp = NULL, *info = NULL;
  size_t i;
  static const int dfl_sigs[] = {SIGPIPE, SIGHUP, SIGINT, SIGQUIT, SIGTERM,
                                 SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM};
  sc_err err = SC_OK;
  argv = calloc(cfg->n_args + 2, sizeof(*argv));
  envp = build_env(cfg, &info);
  if(!argv || !envp) {
    free(argv);
    free(envp);
    free(info);
    return SC_ERR_NOMEM;
  }
  argv[0] = cfg->command;
  for(i = 0; i < cfg->n_args; i++)
    argv[i + 1] = cfg->args[i];
  if(pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) {
    err = sc_errf(eb, SC_ERR_IO, "%s: exec plugin %s: pipe: %s", cfg->where,
                  cfg->command, strerror(errno));
    goto out;
  }
  sigemptyset(&none);
  sigemptyset(&dfl);
  for(i = 0; i < sizeof(dfl_sigs) / sizeof(dfl_sigs[0]); i++)
    sigaddset(&dfl, dfl_sigs[i]);
  rc = posix_spawn_file_actions_init(&fa);
  if(rc) {
    err = SC_ERR_NOMEM;
    goto out;
  }
  rc = posix_spawnattr_init(&at);
  if(rc) {
    posix_spawn_file_actions_destroy(&fa);
    err = SC_ERR_NOMEM;
    goto out;
  }
  rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if(!rc)
    rc = posix_spawn_file_actions_adddup2(&fa, po[1], 1);
  if(!rc)
    rc = posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
  if(!rc)
    rc = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  if(!rc)
    rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP |
                                  POSIX_SPAWN_SETSIGMASK |
                                  POSIX_SPAWN_SETSIGDEF);
  if(!rc)
    rc = posix_spawnattr_setpgroup(&at, 0);
  if(!rc)
    rc = posix_spawnattr_setsigmask(&at, &none);
  if(!rc)
    rc = posix_spawnattr_setsigdefault(&at, &dfl);
  if(!rc)
    rc = posix_spawn(pid, prog, &fa, &at, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if(rc) {
    char what[4400];
    snprintf(what, sizeof(what), "cannot run %s: %s", prog, strerror(rc));
    err = rc == ENOENT ? not_found(cfg, what, eb)
                       : bad(cfg, eb, SC_ERR_IO, what);
    goto out;
  }
  fds[0] = po[0];
  fds[1] = pe[0];
  po[0] = pe[0] = -1;
  (void)fcntl(fds[0], F_SETFL, O_NONBLOCK);
  (void)fcntl(fds[1], F_SETFL, O_NONBLOCK);
out:
  for(i = 0; i < 2; i++) {
    if(po[i] >= 0)
      close(po[i]);
    if(pe[i] >= 0)
      close(pe[i]);
  }
  free(argv);
  free(envp);
  free(info);
  return err;
}

/* ------------------------------------------------------------------ */
/* the job */

static void keep_err(kube_exec_job *j, const char *p, size_t n)
{
  size_t i;
  for(i = 0; i < n && !j->err_line_done; i++) {
    unsigned char c = (unsigned char)p[i];
    if(c == '\n' || c == '\r') {
      if(j->err_len) /* leading empty lines do not count */
        j->err_line_done = true;
      continue;
    }
    if(!j->err_len && (c == ' ' || c == '\t'))
      continue;
    if(j->err_len >= ERR_LINE_MAX) {
      j->err_line_done = true;
      break;
    }
    j->err_line[j->err_len++] = c < ' ' || c == 0x7f ? '?' : (char)c;
  }
  j->err_line[j->err_len] = 0;
}

static void close_fd(kube_exec_job *j, int i)
{
  if(j->ev[i]) {
    event_free(j->ev[i]);
    j->ev[i] = NULL;
  }
  if(j->fd[i] >= 0)
    close(j->fd[i]);
  j->fd[i] = -1;
}

/* read what pipe i has now */
static void drain(kube_exec_job *j, int i)
{
  char buf[16384];
  while(j->fd[i] >= 0) {
    ssize_t n = read(j->fd[i], buf, sizeof(buf));
    if(n > 0) {
      if(i == 1)
        keep_err(j, buf, (size_t)n);
      else if(!j->too_large && dynbuf_add(&j->out, buf, (size_t)n)) {
        j->too_large = true;
        return;
      }
      continue;
    }
    if(n < 0 && errno == EINTR)
      continue;
    if(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    close_fd(j, i); /* the end, or an error: nothing more to read */
  }
}

static void reap(kube_exec_job *j, int flags)
{
  int st = 0;
  pid_t r;
  if(j->reaped)
    return;
  do
    r = waitpid(j->pid, &st, flags);
  while(r < 0 && errno == EINTR);
  if(r == j->pid) {
    j->reaped = true;
    j->status = st;
  }
  else if(r < 0) { /* not ours any more (SIGCHLD ignored?) */
    j->reaped = true;
    j->status = -1;
  }
}

static void kill_group(kube_exec_job *j)
{
  if(j->reaped)
    return;
  (void)kill(-j->pid, SIGKILL);
  (void)kill(j->pid, SIGKILL);
  reap(j, 0);
}

static void finish(kube_exec_job *j)
{
  const kube_exec_cfg *cfg = j->cfg;
  char msg[SC_ERRBUF_SIZE];
  const char *ia = cfg->mode == KUBE_EXEC_IF_AVAILABLE
                   ? " (it ran without a terminal: interactiveMode "
                     "IfAvailable is run as Never)" : "";
  close_fd(j, 0);
  close_fd(j, 1);
  if(j->tick) {
    event_free(j->tick);
    j->tick = NULL;
  }
  j->done = true;
  j->eb.msg[0] = 0;
  if(j->timed_out) {
    snprintf(msg, sizeof(msg), "did not finish within %ld ms: killed%s%s%s",
             timeout_of(cfg), j->err_len ? "; stderr: " : "", j->err_line,
             ia);
    j->err = bad(cfg, &j->eb, SC_ERR_TIMEOUT, msg);
  }
  else if(j->too_large) {
    snprintf(msg, sizeof(msg), "wrote more than %d bytes on stdout: killed",
             KUBE_EXEC_OUT_MAX);
    j->err = bad(cfg, &j->eb, SC_ERR_TOO_LARGE, msg);
  }
  else if(j->status == -1)
    j->err = bad(cfg, &j->eb, SC_ERR_INTERNAL, "its exit status was lost");
  else if(WIFSIGNALED(j->status)) {
    snprintf(msg, sizeof(msg), "killed by signal %d%s%s%s",
             WTERMSIG(j->status), j->err_len ? ": " : "", j->err_line, ia);
    j->err = bad(cfg, &j->eb, SC_ERR_UNAVAILABLE, msg);
  }
  else if(WEXITSTATUS(j->status) != 0) {
    snprintf(msg, sizeof(msg), "exited with status %d: %s%s",
             WEXITSTATUS(j->status),
             j->err_len ? j->err_line : "(nothing on stderr)", ia);
    j->err = bad(cfg, &j->eb, SC_ERR_UNAVAILABLE, msg);
  }
  else
    j->err = kube_exec_parse(cfg, dynbuf_ptr(&j->out), dynbuf_len(&j->out),
                             sctime_wall_ms(), &j->cred, &j->eb);
  dynbuf_free(&j->out);
}

/* one look at the job; true once it ended */
static bool step(kube_exec_job *j)
{
  if(j->done)
    return true;
  drain(j, 0);
  drain(j, 1);
  reap(j, WNOHANG);
  if(j->reaped) { /* what it wrote is in the pipes (unless a child of it
                   * keeps them open: that is not waited for) */
    drain(j, 0);
    drain(j, 1);
  }
  else if(j->too_large) {
    kill_group(j);
  }
  else if(sctime_mono_ms() >= j->deadline_ms) {
    j->timed_out = true;
    kill_group(j);
  }
  else
    return false;
  finish(j);
  return true;
}

static long next_wait_ms(const kube_exec_job *j)
{
  int64_t left = j->deadline_ms - sctime_mono_ms();
  long w = j->fd[0] < 0 && j->fd[1] < 0 ? POLL_CLOSED_MS : POLL_OPEN_MS;
  if(left < 0)
    left = 0;
  return left < w ? (long)left : w;
}

static void arm_tick(kube_exec_job *j)
{
  struct timeval tv;
  long ms = next_wait_ms(j);
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  (void)evtimer_add(j->tick, &tv);
}

static void on_event(evutil_socket_t fd, short what, void *arg)
{
  kube_exec_job *j = arg;
  (void)fd;
  (void)what;
  if(!step(j)) {
    arm_tick(j);
    return;
  }
  if(j->cb)
    j->cb(j, j->ud); /* may free j */
}

sc_err kube_exec_job_start(const kube_exec_cfg *cfg, struct event_base *base,
                           kube_exec_done_cb cb, void *ud,
                           kube_exec_job **out, sc_errbuf *eb)
{
  kube_exec_job *j;
  char *prog = NULL;
  int fds[2];
  sc_err err;
  *out = NULL;
  err = find_program(cfg, &prog, eb);
  if(err)
    return err;
  j = calloc(1, sizeof(*j));
  if(!j) {
    free(prog);
    return SC_ERR_NOMEM;
  }
  j->cfg = cfg;
  j->fd[0] = j->fd[1] = -1;
  dynbuf_init(&j->out, KUBE_EXEC_OUT_MAX);
  j->deadline_ms = sctime_mono_ms() + timeout_of(cfg);
  err = spawn(cfg, prog, &j->pid, fds, eb);
  free(prog);
  if(err) {
    free(j);
    return err;
  }
  j->fd[0] = fds[0];
  j->fd[1] = fds[1];
  if(base) {
    j->cb = cb;
    j->ud = ud;
    j->ev[0] = event_new(base, j->fd[0], EV_READ | EV_PERSIST, on_event, j);
    j->ev[1] = event_new(base, j->fd[1], EV_READ | EV_PERSIST, on_event, j);
    j->tick = evtimer_new(base, on_event, j);
    if(!j->ev[0] || !j->ev[1] || !j->tick || event_add(j->ev[0], NULL) ||
       event_add(j->ev[1], NULL)) {
      kube_exec_job_free(j);
      return SC_ERR_NOMEM;
    }
    arm_tick(j);
  }
  *out = j;
  return SC_OK;
}

bool kube_exec_job_done(const kube_exec_job *job)
{
  return job && job->done;
}

static sc_err give(kube_exec_job *j, kube_exec_cred *cred, sc_errbuf *eb)
{
  memset(cred, 0, sizeof(*cred));
  if(!j->done)
    return sc_errf(eb, SC_ERR_INTERNAL, "exec plugin: still running");
  if(j->err)
    return sc_errf(eb, j->err, "%s", j->eb.msg);
  *cred = j->cred;
  memset(&j->cred, 0, sizeof(j->cred));
  j->err = sc_errf(&j->eb, SC_ERR_INTERNAL, "exec plugin: result taken");
  return SC_OK;
}

sc_err kube_exec_job_result(kube_exec_job *job, kube_exec_cred *cred,
                            sc_errbuf *eb)
{
  return give(job, cred, eb);
}

sc_err kube_exec_job_wait(kube_exec_job *j, kube_exec_cred *cred,
                          sc_errbuf *eb)
{
  int i;
  /* from now on the loop has no part in it */
  for(i = 0; i < 2; i++)
    if(j->ev[i]) {
      event_free(j->ev[i]);
      j->ev[i] = NULL;
    }
  if(j->tick) {
    event_free(j->tick);
    j->tick = NULL;
  }
  j->cb = NULL;
  while(!step(j)) {
    struct pollfd p[2];
    nfds_t n = 0;
    for(i = 0; i < 2; i++)
      if(j->fd[i] >= 0) {
        p[n].fd = j->fd[i];
        p[n].events = POLLIN;
        p[n].revents = 0;
        n++;
      }
    (void)poll(p, n, (int)next_wait_ms(j));
  }
  return give(j, cred, eb);
}

void kube_exec_job_free(kube_exec_job *j)
{
  if(!j)
    return;
  if(!j->done) {
    kill_group(j);
    j->cb = NULL;
    finish(j);
  }
  kube_exec_cred_clear(&j->cred);
  dynbuf_free(&j->out);
  free(j);
}

sc_err kube_exec_run(const kube_exec_cfg *cfg, kube_exec_cred *cred,
                     sc_errbuf *eb)
{
  kube_exec_job *j;
  sc_err err = kube_exec_job_start(cfg, NULL, NULL, NULL, &j, eb);
  memset(cred, 0, sizeof(*cred));
  if(err)
    return err;
  err = kube_exec_job_wait(j, cred, eb);
  kube_exec_job_free(j);
  return err;
}
