/*
 * sandbox.h - a sandbox as Cube reported it: what the Cube client produces
 * and the planner reads.
 *
 * Ownership: a cube_sandbox owns its strings and metadata; clear it with
 * cube_sandbox_clear() (NULL accepted). cube_sandbox_copy() deep-copies.
 * A row of a list page read by the fast parser (json_fast.c) holds all of
 * them in one allocation (block_: the metadata's items, then every
 * string), freed at once by cube_sandbox_clear(): such a row's strings
 * and metadata are read-only (nobody replaces or frees one of them; to
 * change a row, change a cube_sandbox_copy() of it, which is of the
 * usual kind). Moving the struct (a realloc, an assignment) is fine.
 */
#ifndef SC_SANDBOX_H
#define SC_SANDBOX_H

#include "api/session.h"

typedef enum cube_sb_state {
  CUBE_SB_UNKNOWN = 0,
  CUBE_SB_RUNNING,
  CUBE_SB_PAUSING, /* cube only; e2b reports pausing as paused */
  CUBE_SB_PAUSED
} cube_sb_state;

typedef struct cube_sandbox {
  char *sandbox_id;
  char *template_id;
  cube_sb_state state;
  sc_time started_at;
  sc_time end_at;         /* 0 when Cube omits it (never times out) */
  sc_kvlist metadata;     /* may be empty: Cube loses tags of paused ones */
  char *domain;           /* where the sandbox is reached (`domain` of a
                             GET answer or a list row), checked by
                             cube_domain_valid(); NULL when absent or not
                             a host name. Never a token: the answers'
                             access tokens are not read. */
  void *block_;           /* private: see Ownership above (NULL: every
                             string and the items are their own) */
} cube_sandbox;

const char *cube_sb_state_name(cube_sb_state s);  /* "running", ... */
cube_sb_state cube_sb_state_parse(const char *s); /* UNKNOWN if unknown */
void cube_sandbox_clear(cube_sandbox *sb);
sc_err cube_sandbox_copy(cube_sandbox *dst, const cube_sandbox *src);

#endif
