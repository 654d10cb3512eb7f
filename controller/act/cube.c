/* cube.c - the executor's Cube calls through the real client (see cube.h). */
#include "controller/act/cube.h"

static sc_err c_get(void *cl, const char *id, cube_cb cb, void *ud)
{
  return cube_get(cl, id, cb, ud);
}

static sc_err c_get_now(void *cl, const char *id, cube_cb cb, void *ud)
{
  return cube_get_now(cl, id, cb, ud);
}

static sc_err c_reserve(void *cl, cube_cb cb, void *ud)
{
  return cube_reserve(cl, cb, ud);
}

static sc_err c_create(void *cl, const cube_create_req *req, cube_cb cb,
                       void *ud)
{
  return cube_create_reserved(cl, req, cb, ud);
}

static sc_err c_pause(void *cl, const char *id, cube_cb cb, void *ud)
{
  return cube_pause(cl, id, cb, ud);
}

static sc_err c_connect(void *cl, const char *id, int64_t timeout_s,
                        cube_cb cb, void *ud)
{
  return cube_connect(cl, id, timeout_s, cb, ud);
}

static sc_err c_set_timeout_now(void *cl, const char *id, int64_t timeout_s,
                                cube_cb cb, void *ud)
{
  return cube_set_timeout_now(cl, id, timeout_s, cb, ud);
}

static sc_err c_delete_now(void *cl, const char *id, cube_cb cb, void *ud)
{
  return cube_delete_now(cl, id, cb, ud);
}

void act_cube_client(act_cube *t, cube_client *c)
{
  t->cl = c;
  t->get = c_get;
  t->get_now = c_get_now;
  t->reserve = c_reserve;
  t->create = c_create;
  t->pause = c_pause;
  t->connect = c_connect;
  t->set_timeout_now = c_set_timeout_now;
  t->delete_now = c_delete_now;
}
