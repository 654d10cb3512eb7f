/*
 * sim_json.h - small JSON helpers for cubesim: a fast writer into a dynbuf
 * (responses are built by hand, not with json-c objects, for speed) and a
 * strict, depth-limited, UTF-8-validating parser for request bodies.
 *
 * Ownership: sim_jw writes into the caller's dynbuf; the first failure is
 * kept in jw->err and later calls do nothing. sim_json_parse() hands back
 * a json-c object the caller releases with json_object_put().
 */
#ifndef SIM_JSON_H
#define SIM_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>
#include "lib/dynbuf.h"
#include "lib/sc_err.h"
#include "lib/sctime.h"

typedef struct sim_jw {
  dynbuf *b;
  sc_err err;
  uint64_t comma;  /* bit d: a value was written at depth d */
  int depth;
  int after_key;   /* a key was just written: no comma before the value */
} sim_jw;

void sim_jw_init(sim_jw *w, dynbuf *b);
void sim_jw_raw(sim_jw *w, const char *s, size_t len);
/* a value that is JSON text already (a comma before it as needed) */
void sim_jw_rawval(sim_jw *w, const char *s, size_t len);
void sim_jw_obj_open(sim_jw *w);
void sim_jw_obj_close(sim_jw *w);
void sim_jw_arr_open(sim_jw *w);
void sim_jw_arr_close(sim_jw *w);
/* A key (inside an object); the value follows with one of the calls below. */
void sim_jw_key(sim_jw *w, const char *k);
void sim_jw_str(sim_jw *w, const char *s);     /* NULL writes null */
void sim_jw_strn(sim_jw *w, const char *s, size_t n);
void sim_jw_int(sim_jw *w, int64_t v);
void sim_jw_bool(sim_jw *w, int v);
void sim_jw_double(sim_jw *w, double v);
void sim_jw_null(sim_jw *w);
void sim_jw_time(sim_jw *w, sc_time t);        /* RFC 3339; 0 writes null */
/* Shorthands for key + value. */
void sim_jw_kstr(sim_jw *w, const char *k, const char *s);
void sim_jw_kint(sim_jw *w, const char *k, int64_t v);
void sim_jw_kbool(sim_jw *w, const char *k, int v);
void sim_jw_ktime(sim_jw *w, const char *k, sc_time t);

/* Append s as a JSON string (quotes included) to b. */
sc_err sim_json_escape(dynbuf *b, const char *s, size_t n);

#define SIM_JSON_MAX_DEPTH 16
/* Parse one JSON value from buf (len bytes): strict syntax, valid UTF-8,
 * nesting at most SIM_JSON_MAX_DEPTH, nothing but blanks after it. */
sc_err sim_json_parse(const char *buf, size_t len, json_object **out,
                      sc_errbuf *eb);

#endif
