/*
 * cube.h - the Cube calls the executor makes, as a table: the real client
 * (act_cube_client) in the product; a unit test or a benchmark drives the
 * executor through a table of its own that answers as it is told.
 *
 * Each call has cube.h's contract: SC_OK and cb later (from the loop), or
 * an error and no callback.
 *
 * Ownership: act_cube_client() fills a table that borrows the client; the
 * table holds nothing to free.
 */
#ifndef SC_ACT_CUBE_H
#define SC_ACT_CUBE_H

#include "controller/cube/cube.h"

typedef struct act_cube {
  void *cl;
  sc_err (*get)(void *cl, const char *id, cube_cb cb, void *ud);
  sc_err (*get_now)(void *cl, const char *id, cube_cb cb, void *ud);
  /* a create goes in two steps: its turn (cube_reserve), then, once its
   * claim is written, the call (cube_create_reserved) */
  sc_err (*reserve)(void *cl, cube_cb cb, void *ud);
  sc_err (*create)(void *cl, const cube_create_req *req, cube_cb cb,
                   void *ud);
  sc_err (*pause)(void *cl, const char *id, cube_cb cb, void *ud);
  sc_err (*connect)(void *cl, const char *id, int64_t timeout_s, cube_cb cb,
                    void *ud);
  sc_err (*set_timeout_now)(void *cl, const char *id, int64_t timeout_s,
                            cube_cb cb, void *ud);
  sc_err (*delete_now)(void *cl, const char *id, cube_cb cb, void *ud);
} act_cube;

void act_cube_client(act_cube *t, cube_client *c);

#endif
