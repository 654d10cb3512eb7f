/*
 * key.c - Ready=False/CubeUnauthorized (see key.h): while Cube refuses
 * the key no pass gets as far as acting, so no action can tell the
 * sessions why nothing happens: their status says it, once per session
 * (an unchanged status is not written again).
 */
#include "controller/status/key.h"
#include "lib/scstr.h"

#include <string.h>

/* the reply to a best-effort status write: a conflict or a failure is
 * left to the next pass, which writes the same status again */
static void on_key_status_written(store_reply *rep, void *ud)
{
  (void)rep;
  (void)ud;
}

void status_key_refused(store *st, session *const *ss, size_t n,
                        const char *msg, size_t max)
{
  size_t i, writes = 0;
  for(i = 0; i < n && writes < max; i++) {
    const session *s = ss[i];
    const session_condition *old;
    session_condition c;
    session_status copy;
    sc_errbuf eb;
    if(!s || s->meta.deletion_timestamp)
      continue;
    old = session_status_get_condition(&s->status, "Ready");
    if(old && sc_str_eq0(old->reason, "CubeUnauthorized") &&
       sc_str_eq0(old->message, msg))
      continue;
    memset(&copy, 0, sizeof(copy));
    if(session_status_copy(&copy, &s->status))
      return; /* out of memory: the next pass tries again */
    memset(&c, 0, sizeof(c));
    c.type = "Ready";
    c.status = "False";
    c.reason = "CubeUnauthorized";
    c.message = (char *)msg; /* only read: set_condition copies it */
    /* the wall clock only stamps the condition: no decision reads it */
    c.last_transition_time = sctime_wall_ms();
    c.observed_generation = s->meta.generation;
    if(!session_status_set_condition(&copy, &c))
      (void)store_update_status_async(st, s->meta.namespace_, s->meta.name,
                                      s->meta.resource_version, &copy,
                                      on_key_status_written, NULL, &eb);
    session_status_clear(&copy);
    writes++;
  }
}
