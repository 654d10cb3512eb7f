/* sim_audit.c - the audit trail (see sim_audit.h). */
#include "cmd/cubesim/sim_audit.h"
#include "lib/scarray.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/cubesim/sim_json.h"

struct sim_audit {
  dynbuf lines;     /* every kept line, '\n'-terminated */
  size_t *offs;     /* offs[i]: where line seq first_seq+i starts */
  size_t n, alloc;
  uint64_t first_seq; /* seq of offs[0] */
  uint64_t seq;       /* last seq handed out */
  uint64_t dropped;
  FILE *fp;
};

sc_err sim_audit_new(const char *path, size_t mem_cap, sim_audit **out,
                     sc_errbuf *eb)
{
  sim_audit *a = calloc(1, sizeof(*a));
  *out = NULL;
  if(!a)
    return SC_ERR_NOMEM;
  dynbuf_init(&a->lines, mem_cap);
  a->first_seq = 1;
  if(path) {
    a->fp = fopen(path, "a");
    if(!a->fp) {
      int e = errno;
      free(a);
      return sc_errf(eb, SC_ERR_IO, "--audit-log %s: %s", path, strerror(e));
    }
  }
  *out = a;
  return SC_OK;
}

void sim_audit_free(sim_audit *a)
{
  if(!a)
    return;
  if(a->fp)
    fclose(a->fp);
  dynbuf_free(&a->lines);
  free(a->offs);
  free(a);
}

uint64_t sim_audit_add(sim_audit *a, const sim_audit_rec *r)
{
  dynbuf line;
  sim_jw w;
  uint64_t seq;

  if(!a)
    return 0;
  seq = ++a->seq;
  dynbuf_init(&line, 1 << 20);
  sim_jw_init(&w, &line);
  sim_jw_obj_open(&w);
  sim_jw_kint(&w, "seq", (int64_t)seq);
  sim_jw_ktime(&w, "at", r->at ? r->at : 1);
  sim_jw_kstr(&w, "source", r->source);
  sim_jw_kstr(&w, "event", r->event);
  sim_jw_kstr(&w, "method", r->method);
  sim_jw_kstr(&w, "path", r->path);
  sim_jw_kint(&w, "status", r->status);
  sim_jw_kstr(&w, "sandboxID", r->sandbox_id);
  sim_jw_kstr(&w, "stateBefore", r->state_before);
  sim_jw_kstr(&w, "stateAfter", r->state_after);
  sim_jw_kstr(&w, "userAgent", r->user_agent);
  sim_jw_kstr(&w, "requestId", r->request_id);
  sim_jw_kstr(&w, "fault", r->fault);
  sim_jw_obj_close(&w);
  sim_jw_raw(&w, "\n", 1);
  if(w.err) {
    dynbuf_free(&line);
    a->dropped++;
    return 0;
  }
  if(a->fp) {
    fwrite(dynbuf_ptr(&line), 1, dynbuf_len(&line), a->fp);
    fflush(a->fp);
  }
  {
    size_t *p = sc_grow(a->offs, &a->alloc, a->n + 1, sizeof(*p));
    if(!p)
      goto drop;
    a->offs = p;
  }
  if(a->n == 0)
    a->first_seq = seq;
  else if(a->first_seq + a->n != seq)
    goto drop; /* a gap: keep memory contiguous, count the rest as dropped */
  a->offs[a->n] = dynbuf_len(&a->lines);
  if(dynbuf_add(&a->lines, dynbuf_ptr(&line), dynbuf_len(&line)))
    goto drop;
  a->n++;
  dynbuf_free(&line);
  return seq;
drop:
  a->dropped++;
  dynbuf_free(&line);
  return seq;
}

sc_err sim_audit_since(const sim_audit *a, uint64_t since, dynbuf *out)
{
  size_t i;
  if(!a || !a->n)
    return SC_OK;
  if(since < a->first_seq)
    i = 0;
  else if(since - a->first_seq + 1 >= a->n)
    return SC_OK;
  else
    i = (size_t)(since - a->first_seq + 1);
  return dynbuf_add(out, dynbuf_ptr(&a->lines) + a->offs[i],
                    dynbuf_len(&a->lines) - a->offs[i]);
}

uint64_t sim_audit_last_seq(const sim_audit *a)
{
  return a ? a->seq : 0;
}

uint64_t sim_audit_dropped(const sim_audit *a)
{
  return a ? a->dropped : 0;
}

void sim_audit_reset(sim_audit *a)
{
  if(!a)
    return;
  dynbuf_reset(&a->lines);
  a->n = 0;
  a->seq = 0;
  a->first_seq = 1;
  a->dropped = 0;
}
