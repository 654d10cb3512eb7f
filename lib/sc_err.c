#include "lib/sc_err.h"
#include "lib/sctext.h"

#include <stdarg.h>
#include <stdio.h>

static const char *const names[SC_ERR__COUNT] = {
  [SC_OK] = "ok",
  [SC_ERR_NOMEM] = "out of memory",
  [SC_ERR_INVALID] = "invalid",
  [SC_ERR_IO] = "i/o error",
  [SC_ERR_NOT_FOUND] = "not found",
  [SC_ERR_CONFLICT] = "conflict",
  [SC_ERR_EXISTS] = "already exists",
  [SC_ERR_EXPIRED] = "expired",
  [SC_ERR_TOO_LARGE] = "too large",
  [SC_ERR_PROTOCOL] = "protocol error",
  [SC_ERR_TIMEOUT] = "timeout",
  [SC_ERR_BUSY] = "busy",
  [SC_ERR_UNAVAILABLE] = "unavailable",
  [SC_ERR_INTERNAL] = "internal error",
};

const char *sc_strerror(sc_err err)
{
  if((unsigned)err >= SC_ERR__COUNT || !names[err])
    return "unknown error";
  return names[err];
}

sc_err sc_errf(sc_errbuf *eb, sc_err err, const char *fmt, ...)
{
  va_list ap;
  if(!eb)
    return err;
  va_start(ap, fmt);
  vsnprintf(eb->msg, sizeof(eb->msg), fmt, ap);
  va_end(ap);
  /* messages quote peers (Cube's and the API server's bodies, file
   * contents): what reaches a log or a terminal is text */
  sc_text_sanitize(eb->msg, sizeof(eb->msg));
  return err;
}
