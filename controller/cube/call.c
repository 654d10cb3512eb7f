/*
 * call.c - a Cube client call's lifetime: made by cube_call_new(), ended
 * exactly once by cube_call_complete() (the callback, then the free), or
 * later from the loop by cube_call_defer(); the one-line message of its
 * result; the payload moved out of a result (cube_result_take_*). See
 * cube_int.h for how the client's files share the work.
 */
#include "controller/cube/cube_int.h"
#include "lib/redact.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- messages --- */

/* Replace every occurrence of the API key in s (in place) by "***": the
 * key the request was sent with and the client's key of now. */
static void scrub(const cube_call *k, char *s, size_t size)
{
  if(k->keys)
    sc_redact(s, size, k->keys->key);
  if(k->c->keys && k->c->keys != k->keys)
    sc_redact(s, size, k->c->keys->key);
}

/* Set the result's error and its one-line message:
 * "cube PEER: METHOD PATH: <text>". */
static void call_vmsg(cube_call *k, sc_err err, const char *fmt, va_list ap)
{
  int n;
  size_t i;
  k->r.err = err;
  n = snprintf(k->msg, sizeof(k->msg), "cube %s: %s %s: ", k->c->peer,
               k->method ? k->method : "-", k->path);
  if(n < 0 || (size_t)n >= sizeof(k->msg))
    n = (int)strlen(k->msg);
  vsnprintf(k->msg + n, sizeof(k->msg) - (size_t)n, fmt, ap);
  for(i = 0; k->msg[i]; i++) /* one line, printable */
    if((unsigned char)k->msg[i] < 0x20 || k->msg[i] == 0x7f)
      k->msg[i] = ' ';
  scrub(k, k->msg, sizeof(k->msg));
}

void cube_call_msg(cube_call *k, sc_err err, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  call_vmsg(k, err, fmt, ap);
  va_end(ap);
}

sc_err cube_call_fail(cube_call *k, sc_err err, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  call_vmsg(k, err, fmt, ap);
  va_end(ap);
  cube_call_defer(k);
  return SC_OK;
}

/* --- call lifetime --- */

static void call_free(cube_call *k)
{
  cube_client *c = k->c;
  size_t i;
  if(k->all_prev)
    k->all_prev->all_next = k->all_next;
  else
    c->all = k->all_next;
  if(k->all_next)
    k->all_next->all_prev = k->all_prev;
  c->pending--;
  if(k->easy)
    curl_easy_cleanup(k->easy);
  cube_keyset_unref(k->keys); /* after curl is done with its headers */
  dynbuf_free(&k->resp);
  dynbuf_free(&k->page);
  free(k->url);
  free(k->body);
  free(k->retry_after);
  free(k->next_tok);
  free(k->id);
  free(k->list_query);
  free(k->prev_token);
  free(k->created_id);
  free(k->created_domain);
  free(k->page_token);
  if(k->retry_ev)
    event_free(k->retry_ev);
  for(i = 0; i < k->r.n_sandboxes; i++)
    cube_sandbox_clear(&k->r.sandboxes[i]);
  free(k->r.sandboxes);
  cube_sandbox_clear(&k->r.sandbox);
  free(k);
}

/* Run the callback once, then free the call. */
void cube_call_complete(cube_call *k)
{
  if(!k->r.err)
    k->msg[0] = '\0';
  else { /* a failed call hands back no payload: no partial lists */
    size_t i;
    for(i = 0; i < k->r.n_sandboxes; i++)
      cube_sandbox_clear(&k->r.sandboxes[i]);
    free(k->r.sandboxes);
    k->r.sandboxes = NULL;
    k->r.n_sandboxes = 0;
    k->r.truncated_suspect = false;
    cube_sandbox_clear(&k->r.sandbox);
    free(k->created_id);
    k->created_id = NULL;
    free(k->created_domain);
    k->created_domain = NULL;
    free(k->page_token);
    k->page_token = NULL;
  }
  k->r.message = k->msg;
  k->r.detail = k->detail;
  k->r.sandbox_id = k->created_id;
  k->r.domain = k->created_domain;
  k->r.next_token = k->page_token;
  k->cb(&k->r, k->ud);
  call_free(k);
}

void cube_call_deliver(evutil_socket_t fd, short what, void *arg)
{
  cube_client *c = arg;
  (void)fd;
  (void)what;
  while(c->done_head) {
    cube_call *k = c->done_head;
    c->done_head = k->next;
    if(!c->done_head)
      c->done_tail = NULL;
    k->next = NULL;
    cube_call_complete(k);
  }
}

/* End a call that has no transfer running; the callback runs later. */
void cube_call_defer(cube_call *k)
{
  cube_client *c = k->c;
  k->next = NULL;
  if(c->done_tail)
    c->done_tail->next = k;
  else
    c->done_head = k;
  c->done_tail = k;
  event_active(c->deliver, 0, 0);
}

cube_call *cube_call_new(cube_client *c, cube_op op, cube_cb cb, void *ud)
{
  cube_call *k;
  if(!c || !cb || c->closing)
    return NULL;
  k = calloc(1, sizeof(*k));
  if(!k)
    return NULL;
  k->c = c;
  k->op = op;
  k->cb = cb;
  k->ud = ud;
  k->r.op = op;
  k->r.retry_after_ms = -1;
  k->timeout_ms = c->timeout_ms;
  k->cap = c->body_cap;
  dynbuf_init(&k->resp, k->cap);
  k->all_next = c->all;
  if(c->all)
    c->all->all_prev = k;
  c->all = k;
  c->pending++;
  return k;
}

cube_sandbox *cube_result_take_sandboxes(const cube_result *r, size_t *n)
{
  cube_result *w = (cube_result *)r; /* the client's own, not const */
  cube_sandbox *v = w->sandboxes;
  *n = w->n_sandboxes;
  w->sandboxes = NULL;
  w->n_sandboxes = 0;
  return v;
}

void cube_result_take_sandbox(const cube_result *r, cube_sandbox *out)
{
  cube_result *w = (cube_result *)r;
  *out = w->sandbox;
  memset(&w->sandbox, 0, sizeof(w->sandbox));
}

char *cube_result_take_id(const cube_result *r)
{
  /* r is the `r` member of its call: reach the call to move the string */
  cube_call *k = (cube_call *)(void *)((char *)(uintptr_t)r -
                                       offsetof(cube_call, r));
  char *s = k->created_id;
  k->created_id = NULL;
  k->r.sandbox_id = NULL;
  return s;
}
