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

/* Rule 11's bound: a reclaim's DELETE goes only within
 * reclaim_send_within_ms of its intent's write, so that once an intent is
 * older than that and Cube's call timeout (plan.h, reclaim_void_after_ms)
 * no DELETE of it can be in flight, and a session that no longer wants
 * the reclaim may have its sandbox back. Late (the last look waited for a
 * slot, the loop was held up): not sent, looked at again; the next pass
 * writes the intent anew if the reclaim is still wanted. */
static bool rule11_delete_in_time(act_call *c)
{
  int64_t within = c->run->env->plan->reclaim_send_within_ms;
  int64_t late;
  char msg[160];
  if(!c->intent || !c->a->s || c->a->del_kind != PLAN_DEL_RECLAIM ||
     within <= 0)
    return true;
  late = sctime_mono_ms() - c->intent_mono;
  if(late <= within)
    return true;
  snprintf(msg, sizeof(msg), "the reclaim's DELETE was not sent within "
           "%lld ms of its intent (%lld ms): withheld, looked at again",
           (long long)within, (long long)late);
  act_skip(c, c->get_status, msg, "intent too old to act on");
  return false;
}

static void delete_now(act_call *c)
{
  const act_cube *cube = c->run->env->cube;
  if(!rule11_delete_in_time(c))
    return;
  c->stage = 1;
  c->op = CUBE_OP_DELETE;
  c->t0 = sctime_mono_ms();
  if(cube->delete_now(cube->cl, c->a->sandbox_id, act_on_mutation, c)) {
    act_outcome o = {ACT_FAILED, 0, "client refused the call",
                     "the Cube client refused the call", NULL, -1, NULL, NULL};
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
                     "the confirming GET found no sandbox", NULL, -1, NULL, NULL};
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

/* The last look, ahead of the queue, once the intent is written: the
 * first GET waited its turn in the token bucket, and the intent write (a
 * round trip to the store) came after it; a user's request may have
 * resumed the sandbox meanwhile. The intent's compare-and-set is the
 * store's side of rule 3: it fails if the session changed at all since
 * the plan (reclaimAfter raised, state back to Running, a wake, a connect
 * request), and then no call is made (intent.c). */
static void delete_last_look(act_call *c)
{
  const act_cube *cube = c->run->env->cube;
  c->t0 = sctime_mono_ms();
  if(cube->get_now(cube->cl, c->a->sandbox_id, on_delete_final, c)) {
    act_outcome o = {ACT_FAILED, 0, "client refused the call",
                     "the Cube client refused the call", NULL, -1, NULL, NULL};
    act_end(c, &o);
  }
}

void act_on_delete_confirm(const cube_result *res, void *ud)
{
  act_call *c = ud;
  if(!rule3_confirmed_before_delete(c, res))
    return;
  /* rule 11: the intent first; orphans (no session) have theirs in the
   * audit trail and no second look (nothing but absence protects them,
   * and the guard caps them) */
  rule11_intent_written(c, c->a->s ? delete_last_look : delete_now);
}
