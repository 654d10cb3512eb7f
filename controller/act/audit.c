/* audit.c - one JSON line per destructive action. */
#include "controller/act/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct audit {
  int fd;
  logger *lg;
};

sc_err audit_open(const char *path, logger *lg, audit **out, sc_errbuf *eb)
{
  audit *a = calloc(1, sizeof(*a));
  if(!a)
    return SC_ERR_NOMEM;
  a->fd = -1;
  a->lg = lg;
  if(path) {
    a->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if(a->fd < 0) {
      sc_errf(eb, SC_ERR_IO, "--audit-log %s: %s", path, strerror(errno));
      free(a);
      return SC_ERR_IO;
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
  free(a);
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

void audit_record(audit *a, const audit_entry *e)
{
  json_object *o;
  const char *line;
  if(!a)
    return;
  o = json_object_new_object();
  if(!o)
    return;
  put_time(o, "time", sctime_wall_ms());
  put_str(o, "replica", e->replica);
  put_str(o, "session", e->session);
  put_str(o, "sandboxID", e->sandbox_id);
  put_str(o, "action", e->action);
  put_str(o, "kind", e->kind);
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
    size_t n = strlen(line), off = 0;
    char *buf = malloc(n + 1);
    if(buf) {
      memcpy(buf, line, n);
      buf[n] = '\n';
      while(off < n + 1) {
        ssize_t w = write(a->fd, buf + off, n + 1 - off);
        if(w < 0 && errno == EINTR)
          continue;
        if(w <= 0)
          break;
        off += (size_t)w;
      }
      free(buf);
    }
  }
  json_object_put(o);
}
