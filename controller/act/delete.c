/*
 * delete.c - a delete and its confirmations (rule 3: confirm before
 * delete): a GET that must still find what the plan saw, a re-read of
 * the session from the store, a last GET ahead of the queue, then the
 * DELETE. Each step that withholds the delete ends the action through
 * act_end() (call.h), which audits it.
 */
#include "controller/act/call.h"
#include "controller/observe/observe.h"

#include <stdio.h>
#include <string.h>

static void delete_now(act_call *c)
{
  const act_cube *cube = c->run->env->cube;
  c->stage = 1;
  c->op = CUBE_OP_DELETE;
  c->t0 = sctime_mono_ms();
  if(cube->delete_now(cube->cl, c->a->sandbox_id, act_on_mutation, c)) {
    act_outcome o = {ACT_FAILED, 0, "client refused the call",
                     "the Cube client refused the call", NULL, -1, NULL};
    act_end(c, &o);
  }
}

/* Rule 3 on a GET's answer: may the DELETE go? false: the action ended
 * (done when the sandbox is gone, else skipped or failed). */
static bool rule3_confirmed_before_delete(act_call *c, const cube_result *res)
{
  const act_env *env = c->run->env;
  const plan_action *a = c->a;
  const char *managed, *tenant, *uid;
  int http = (int)res->http_status;
  observe_count_call(env->m, CUBE_OP_GET, res, c->t0);
  if(res->err == SC_ERR_NOT_FOUND) {
    act_outcome o = {ACT_GONE, http, NULL,
                     "the confirming GET found no sandbox", NULL, -1, NULL};
    act_end(c, &o);
    return false;
  }
  if(res->err) {
    act_fail(c, http, res->message, res->retry_after_ms);
    return false;
  }
  snprintf(c->observed_state, sizeof(c->observed_state), "%s",
           cube_sb_state_name(res->sandbox.state));
  c->get_status = http;
  managed = sc_kvlist_get(&res->sandbox.metadata, SESSION_TAG_MANAGED_BY);
  tenant = sc_kvlist_get(&res->sandbox.metadata, SESSION_TAG_TENANT_ID);
  if(tenant)
    snprintf(c->tenant_seen, sizeof(c->tenant_seen), "%s", tenant);
  uid = sc_kvlist_get(&res->sandbox.metadata, SESSION_TAG_SESSION_UID);
  if(managed && !plan_config_owns(env->plan, managed))
    act_skip(c, http,
             "the sandbox is now tagged as managed by another controller",
             "managed-by tag changed");
  else if(a->expect_tenant && tenant && strcmp(tenant, a->expect_tenant))
    act_skip(c, http, "the sandbox's tenant tag no longer matches",
             "tenant tag changed");
  else if(a->s && uid && a->s->meta.uid && *a->s->meta.uid &&
          strcmp(uid, a->s->meta.uid))
    act_skip(c, http,
             "the sandbox was created for another object of this name "
             "(its lea.session_uid differs)",
             "session uid tag differs");
  else if(a->del_kind == PLAN_DEL_ORPHAN && !managed)
    act_skip(c, http, "the orphan no longer carries our managed-by tag",
             "managed-by tag gone");
  else if(a->expect_paused && res->sandbox.state != CUBE_SB_PAUSED)
    /* not a failure: the plan was right to stop; look again soon */
    act_skip(c, http,
             "the sandbox is no longer paused (resumed since the plan)",
             "no longer paused");
  else if(a->expect_paused && res->sandbox.end_at != a->end_at)
    /* paused, but not the pause the plan measured: a user's request
     * resumed it and it paused again since (e2b's endAt is the pause
     * time; Cube's moves with activity). Its age must be measured anew. */
    act_skip(c, http,
             "the sandbox paused again since the plan (endAt changed)",
             "paused again since the plan");
  else
    return true;
  return false;
}

/* the last look, right before the DELETE (get_now, after the store
 * re-read): the DELETE leaves from its callback */
static void on_delete_final(const cube_result *res, void *ud)
{
  act_call *c = ud;
  if(rule3_confirmed_before_delete(c, res))
    delete_now(c);
}

/* Rule 3 for the store's side: the plan may be seconds old when its
 * delete is due (its actions wait for the token bucket), and the session's
 * spec may have changed since (reclaimAfter raised, state back to Running,
 * wake bumped). So after the first GET (which waited its turn in the
 * queue) the session is read again from the store: a different
 * generation means the plan's reason may no longer hold, so the delete is
 * skipped and the session looked at again. A session gone or deleted (a
 * tombstone) justifies the delete whatever the plan said. Then a second
 * GET, ahead of the queue, takes the last look: the store read (one API
 * round trip with --store kube, a turn of the loop with SQLite) is not
 * left between the look and the DELETE for a user's request to slip in. */
static void on_delete_reread(store_reply *rep, void *ud)
{
  act_call *c = ud;
  const act_cube *cube = c->run->env->cube;
  const plan_action *a = c->a;
  char why[SC_ERRBUF_SIZE + 80];
  why[0] = '\0';
  if(rep->err && rep->err != SC_ERR_NOT_FOUND)
    snprintf(why, sizeof(why), "the store could not be read to confirm the "
             "session: %s", rep->message);
  else if(!rep->err && !rep->obj->meta.deletion_timestamp &&
          rep->obj->meta.generation != a->s->meta.generation)
    snprintf(why, sizeof(why), "the session's spec changed since the plan "
             "(generation %lld, now %lld)", (long long)a->s->meta.generation,
             (long long)rep->obj->meta.generation);
  if(why[0]) {
    act_skip(c, c->get_status, why, why);
    return;
  }
  c->t0 = sctime_mono_ms();
  if(cube->get_now(cube->cl, a->sandbox_id, on_delete_final, c)) {
    act_outcome o = {ACT_FAILED, 0, "client refused the call",
                     "the Cube client refused the call", NULL, -1, NULL};
    act_end(c, &o);
  }
}

void act_on_delete_confirm(const cube_result *res, void *ud)
{
  act_call *c = ud;
  const plan_action *a = c->a;
  if(!rule3_confirmed_before_delete(c, res))
    return;
  if(a->s && !a->s->meta.deletion_timestamp) {
    /* orphans have no session; tombstones stay tombstones */
    store_reply rep;
    sc_errbuf eb;
    eb.msg[0] = '\0';
    memset(&rep, 0, sizeof(rep));
    rep.err = store_get_async(c->run->env->st, a->s->meta.namespace_,
                              a->s->meta.name, on_delete_reread, c, &eb);
    if(rep.err) {
      rep.message = eb.msg; /* not sent: the same skip as a failed read */
      on_delete_reread(&rep, c);
    }
    return;
  }
  delete_now(c);
}
