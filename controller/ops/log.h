/*
 * log.h - leveled, structured logging: one line per event, logfmt or JSON.
 *
 *   log_kv(lg, LOG_INFO, "sandbox created", "session", key, "sandbox", id,
 *          NULL);
 *
 * logfmt: time=2026-11-29T10:15:00.123Z level=info msg="sandbox created"
 *         session=tenant-a/chat-1 sandbox=7c8f...
 * json:   {"time":"...","level":"info","msg":"sandbox created",...}
 *
 * Fields are NULL-terminated key/value string pairs. The time is the local
 * wall clock: logs are records, never inputs to decisions.
 * Ownership: log_new() returns a logger for log_free() (NULL accepted); the
 * FILE* is borrowed. No global state: every module is handed its logger.
 */
#ifndef SC_LOG_H
#define SC_LOG_H

#include <stdbool.h>
#include <stdio.h>
#include "lib/sc_err.h"

typedef enum log_level {
  LOG_DEBUG = 0,
  LOG_INFO,
  LOG_WARN,
  LOG_ERROR
} log_level;

typedef enum log_format {
  LOG_FORMAT_LOGFMT = 0,
  LOG_FORMAT_JSON
} log_format;

typedef struct logger logger;

logger *log_new(FILE *out, log_format fmt, log_level min_level);
void log_free(logger *lg);
/* Extra fields written on every line (e.g. replica=NAME); copied. */
sc_err log_set_static(logger *lg, const char *key, const char *value);
bool log_enabled(const logger *lg, log_level lvl);
void log_kv(logger *lg, log_level lvl, const char *msg, ...)
  __attribute__((sentinel));

int log_level_parse(const char *s);   /* -1 if unknown */
int log_format_parse(const char *s);  /* -1 if unknown */
const char *log_level_name(log_level l);

#endif
