/* audit.c - one JSON line per destructive action. */
#include "controller/act/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WRITE_FAILURES "session_controller_audit_write_failures_total"

struct audit {
  int fd;
  char *path;
  logger *lg;
  metrics *m;
  char failing[SC_ERRBUF_SIZE]; /* "" while the file takes every line */
};

static int open_log(const char *path)
{
  return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

sc_err audit_open(const char *path, logger *lg, audit **out, sc_errbuf *eb)
{
  audit *a = calloc(1, sizeof(*a));
  if(!a)
    return SC_ERR_NOMEM;
  a->fd = -1;
  a->lg = lg;
  if(path) {
    a->fd = open_log(path);
    if(a->fd < 0) {
      sc_errf(eb, SC_ERR_IO, "--audit-log %s: %s", path, strerror(errno));
      free(a);
      return SC_ERR_IO;
    }
    if(!(a->path = strdup(path))) {
      close(a->fd);
      free(a);
      return SC_ERR_NOMEM;
    }
  }
  *out = a;
  return SC_OK;
}

void audit_close(audit *a)
{
  if(!a)
    return;
  if(a->fd >= 0)
    close(a->fd);
  free(a->path);
  free(a);
}

sc_err audit_set_metrics(audit *a, metrics *m)
{
  sc_err err;
  if(!a || !m)
    return SC_OK;
  err = metrics_declare(m, WRITE_FAILURES, METRIC_COUNTER,
                        "Audit lines that could not be written to "
                        "--audit-log (they were still logged).", NULL, 0);
  if(!err)
    a->m = m;
  return err;
}

sc_err audit_reopen(audit *a, sc_errbuf *eb)
{
  int fd;
  if(!a || !a->path)
    return SC_OK;
  fd = open_log(a->path);
  if(fd < 0)
    return sc_errf(eb, SC_ERR_IO, "--audit-log %s: %s", a->path,
                   strerror(errno));
  close(a->fd);
  a->fd = fd;
  a->failing[0] = '\0';
  return SC_OK;
}

const char *audit_failing(const audit *a)
{
  return a && a->failing[0] ? a->failing : NULL;
}

/* the whole line or an error (a short write is retried for the rest) */
static int write_all(int fd, const char *buf, size_t n)
{
  size_t off = 0;
  while(off < n) {
    ssize_t w = write(fd, buf + off, n - off);
    if(w < 0 && errno == EINTR)
      continue;
    if(w < 0)
      return errno;
    if(w == 0)
      return EIO;
    off += (size_t)w;
  }
  return 0;
}

static void put_str(json_object *o, const char *k, const char *v)
{
  if(v)
    json_object_object_add(o, k, json_object_new_string(v));
}

static void put_time(json_object *o, const char *k, sc_time t)
{
  char buf[SCTIME_RFC3339_MAX];
  if(!t)
    return;
  sctime_format_rfc3339(t, buf, sizeof(buf));
  json_object_object_add(o, k, json_object_new_string(buf));
}

sc_err audit_record(audit *a, const audit_entry *e)
{
  json_object *o;
  const char *line;
  sc_err err = SC_OK;
  if(!a)
    return SC_OK;
  o = json_object_new_object();
  if(!o) {
    log_kv(a->lg, LOG_ERROR, "audit line lost: out of memory", "session",
           e->session ? e->session : "", "sandbox",
           e->sandbox_id ? e->sandbox_id : "", NULL);
    return SC_ERR_NOMEM;
  }
  put_time(o, "time", sctime_wall_ms());
  put_str(o, "replica", e->replica);
  put_str(o, "session", e->session);
  put_str(o, "sandboxID", e->sandbox_id);
  put_str(o, "action", e->action);
  put_str(o, "kind", e->kind);
  put_str(o, "budget", e->budget);
  put_str(o, "reason", e->reason);
  put_str(o, "observedState", e->observed_state);
  put_str(o, "tenant", e->tenant);
  put_time(o, "cubeNow", e->cube_now);
  put_time(o, "endAt", e->end_at);
  if(e->http_status)
    json_object_object_add(o, "httpStatus",
                           json_object_new_int(e->http_status));
  put_str(o, "outcome", e->outcome);
  put_str(o, "message", e->message);
  line = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                             JSON_C_TO_STRING_NOSLASHESCAPE);
  log_kv(a->lg, LOG_INFO, "audit", "audit", line, NULL);
  if(a->fd >= 0) {
    size_t n = strlen(line);
    char *buf = malloc(n + 1);
    int e_no = ENOMEM;
    if(buf) {
      memcpy(buf, line, n);
      buf[n] = '\n';
      e_no = write_all(a->fd, buf, n + 1);
      free(buf);
    }
    if(e_no) {
      snprintf(a->failing, sizeof(a->failing),
               "--audit-log %s: a line could not be written: %s", a->path,
               strerror(e_no));
      log_kv(a->lg, LOG_ERROR, "audit line not written to the audit log",
             "error", a->failing, "audit", line, NULL);
      metrics_add(a->m, WRITE_FAILURES, NULL, 1);
      err = SC_ERR_IO;
    }
    else
      a->failing[0] = '\0';
  }
  json_object_put(o);
  return err;
}
