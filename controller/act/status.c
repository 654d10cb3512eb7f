/*
 * status.c - the status writes of a run (see status.h): early writes (claim,
 * link), the one final write of each session, the purge of a tombstone.
 */
#include "controller/act/status.h"
#include "controller/act/claim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sc_err act_status_own(act_run *run, size_t si)
{
  act_sess *sa = &run->sess[si];
  sc_err err;
  if(sa->own)
    return SC_OK;
  if(sa->broken)
    return SC_ERR_NOMEM;
  err = session_status_copy(&sa->st, &run->p->sessions[si].status);
  if(err) {
    act_status_broken(run, si);
    return err;
  }
  sa->own = true;
  return SC_OK;
}

void act_status_broken(act_run *run, size_t si)
{
  act_sess *sa = &run->sess[si];
  if(!sa->broken)
    log_kv(run->env->lg, LOG_WARN, "status copy failed (out of memory): "
           "no status write for the session this pass", "session",
           run->p->sessions[si].s->meta.name, "namespace",
           run->p->sessions[si].s->meta.namespace_, NULL);
  sa->broken = true;
  sa->failed = true;
}

typedef struct early_write {
  act_run *run;
  size_t si;
  act_status_early_fn cb;
  void *ud;
  session_status st;
} early_write;

static void on_early_written(store_reply *rep, void *ud)
{
  early_write *w = ud;
  act_run *run = w->run;
  act_sess *sa = &run->sess[w->si];
  act_health_note(run->env, rep->err, rep->message);
  if(!rep->err) {
    /* the final write goes on top of what the store now holds */
    free(sa->rv);
    sa->rv = rep->new_version;
    rep->new_version = NULL;
    session_status_clear(&sa->stored);
    if(session_status_copy(&sa->stored, &w->st))
      sa->failed = true; /* out of memory: the status write is redone */
    session_status_clear(&sa->st);
    sa->st = w->st; /* moved: later effects build on it */
    sa->own = true;
    memset(&w->st, 0, sizeof(w->st));
  }
  w->cb(run, w->si, rep->err, rep->message, w->ud);
  session_status_clear(&w->st);
  free(w);
}

sc_err act_status_write_early(act_run *run, size_t si, session_status *st,
                          act_status_early_fn cb, void *ud, sc_errbuf *eb)
{
  const session *s = run->p->sessions[si].s;
  act_sess *sa = &run->sess[si];
  early_write *w = calloc(1, sizeof(*w));
  sc_err err;
  if(!w) {
    session_status_clear(st);
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  w->run = run;
  w->si = si;
  w->cb = cb;
  w->ud = ud;
  w->st = *st;
  memset(st, 0, sizeof(*st));
  err = store_update_status_async(run->env->st, s->meta.namespace_,
                                  s->meta.name,
                                  sa->rv ? sa->rv : s->meta.resource_version,
                                  &w->st, on_early_written, w, eb);
  if(err) {
    session_status_clear(&w->st);
    free(w);
  }
  return err;
}

/* the end of session si's turn: reported, counted as failed if it was */
static void turn_end(act_run *run, size_t si, const char *result)
{
  if(run->sess[si].failed && !strcmp(result, "ok"))
    result = "error";
  run->session_end(run, si, result, false);
}

typedef struct final_write {
  act_run *run;
  size_t si;
} final_write;

static void on_purged(store_reply *rep, void *ud)
{
  final_write *w = ud;
  act_run *run = w->run;
  size_t si = w->si;
  const session *s = run->p->sessions[si].s;
  const char *result = "ok";
  free(w);
  act_health_note(run->env, rep->err, rep->message);
  if(rep->err && rep->err != SC_ERR_NOT_FOUND) {
    log_kv(run->env->lg, LOG_WARN, "purge of tombstone failed", "session",
           s->meta.name, "namespace", s->meta.namespace_, "error",
           rep->message, NULL);
    run->sess[si].failed = true;
    result = rep->err == SC_ERR_CONFLICT ? "conflict" : "error";
  }
  else
    log_kv(run->env->lg, LOG_INFO, "tombstone purged", "session",
           s->meta.name, "namespace", s->meta.namespace_, NULL);
  turn_end(run, si, result);
  act_run_release(run);
}

static void on_status_written(store_reply *rep, void *ud)
{
  final_write *w = ud;
  act_run *run = w->run;
  size_t si = w->si;
  const session *s = run->p->sessions[si].s;
  char key[300];
  free(w);
  act_health_note(run->env, rep->err, rep->message);
  snprintf(key, sizeof(key), "%s/%s", s->meta.namespace_, s->meta.name);
  if(rep->err == SC_ERR_NOT_FOUND && run->sess[si].created)
    /* the object was purged while its create was in flight: what the
     * create made must not outlive it */
    act_create_orphaned(run, si);
  if(rep->err == SC_ERR_CONFLICT) {
    /* someone wrote first: re-read and recompute, never overwrite */
    log_kv(run->env->lg, LOG_DEBUG, "status conflict, requeued", "session",
           key, NULL);
    run->session_end(run, si, "conflict", true);
  }
  else {
    if(rep->err && rep->err != SC_ERR_NOT_FOUND) {
      log_kv(run->env->lg, LOG_WARN, "status write failed", "session", key,
             "error", rep->message, NULL);
      run->sess[si].failed = true;
    }
    turn_end(run, si, "ok");
  }
  act_run_release(run);
}

/* All actions of session si are finished: write its status once (or
 * purge its tombstone); the run waits for the write (run->pending). */
void act_status_session_end(act_run *run, size_t si)
{
  const session *s = run->p->sessions[si].s;
  act_sess *sa = &run->sess[si];
  const session_status *cur;
  final_write *w;
  sc_errbuf eb;
  sc_err err;
  bool purge;
  cur = act_run_status(run, si);
  purge = s->meta.deletion_timestamp && !sa->failed &&
               !sa->has_confirm && cur->phase == SESSION_PHASE_ENDED &&
               !run->env->dry_run;
  eb.msg[0] = '\0';
  if(sa->elsewhere) {
    /* another replica serves it: that one writes its status */
    run->session_end(run, si, "elsewhere", false);
    return;
  }
  if(sa->conflict) {
    /* its plan lost to another writer: look again now, never overwrite */
    run->session_end(run, si, "conflict", true);
    return;
  }
  if(sa->broken) {
    turn_end(run, si, "error"); /* no write: its status is unknown */
    return;
  }
  if(!purge && (!(sa->wants_write || sa->rv) ||
                session_status_equal(cur, sa->rv ? &sa->stored
                                                 : &s->status))) {
    turn_end(run, si, "ok");
    return;
  }
  w = calloc(1, sizeof(*w));
  if(!w) {
    sa->failed = true;
    turn_end(run, si, "error");
    return;
  }
  w->run = run;
  w->si = si;
  run->pending++;
  if(purge)
    /* a tombstone whose sandboxes are gone: finalize it */
    err = store_purge_async(run->env->st, s->meta.namespace_, s->meta.name,
                            s->meta.resource_version, on_purged, w, &eb);
  else
    /* after an early write, on the version and status that one wrote */
    err = store_update_status_async(run->env->st, s->meta.namespace_,
                                    s->meta.name,
                                    sa->rv ? sa->rv
                                           : s->meta.resource_version,
                                    cur, on_status_written, w, &eb);
  if(err) {
    run->pending--;
    free(w);
    log_kv(run->env->lg, LOG_WARN, purge ? "purge of tombstone failed"
                                         : "status write failed", "session",
           s->meta.name, "namespace", s->meta.namespace_, "error", eb.msg,
           NULL);
    sa->failed = true;
    turn_end(run, si, "error");
  }
}
