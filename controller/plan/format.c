/*
 * format.c - the names of actions and delete kinds, and plan_format(): a
 * canonical line-per-item text of a plan for `sessionctl plan`, logs and
 * tests (the property test compares plans by it).
 */
#include "controller/plan/plan_int.h"

#include <inttypes.h>

#include "lib/dynbuf.h"

static const char *const action_names[] = {
  "create", "pause", "resume", "keepalive", "set-timeout", "delete",
  "confirm"};
static const char *const kind_names[] = {"",          "reclaim", "ended",
                                         "tombstone", "duplicate", "orphan"};

const char *plan_action_type_name(plan_action_type t)
{
  if((unsigned)t >= sizeof(action_names) / sizeof(action_names[0]))
    return "unknown";
  return action_names[t];
}

const char *plan_delete_kind_name(plan_delete_kind k)
{
  if((unsigned)k >= sizeof(kind_names) / sizeof(kind_names[0]))
    return "unknown";
  return kind_names[k];
}

sc_err plan_format(const plan *p, dynbuf *b)
{
  size_t i, j;
  sc_err err = SC_OK;
  if(!p || !b)
    return SC_ERR_INVALID;
  for(i = 0; i < p->n_actions && !err; i++) {
    const plan_action *a = &p->actions[i];
    err = dynbuf_printf(b,
                        "action %s%s%s session=%s/%s sandbox=%s "
                        "timeout=%" PRId64 " expect_tenant=%s "
                        "expect_paused=%d expect_managed_by=%d reason=%s\n",
                        plan_action_type_name(a->type),
                        a->del_kind ? ":" : "",
                        a->capacity ? "capacity"
                        : a->del_kind ? plan_delete_kind_name(a->del_kind) : "",
                        a->ns ? a->ns : "-", a->name ? a->name : "-",
                        a->sandbox_id ? a->sandbox_id : "-", a->timeout_s,
                        a->expect_tenant ? a->expect_tenant : "-",
                        a->expect_paused, a->expect_managed_by, a->reason);
  }
  for(i = 0; i < p->n_sessions && !err; i++) {
    const plan_session *ps = &p->sessions[i];
    const session_status *st = &ps->status;
    char key[256];
    if(!ps->s)
      continue;
    session_key(ps->s, key, sizeof(key));
    err = dynbuf_printf(b,
                        "status %s phase=%s sandbox=%s state=%s endAt=%" PRId64
                        " og=%" PRId64 " rg=%" PRId64 " pbc=%d applied=%"
                        PRId64 " changed=%d due=%" PRId64,
                        key, session_phase_name(st->phase),
                        st->sandbox_id ? st->sandbox_id : "-",
                        st->sandbox_state ? st->sandbox_state : "-",
                        st->end_at, st->observed_generation,
                        st->reclaimed_generation, st->paused_by_controller,
                        st->applied_idle_timeout_ms, ps->status_changed,
                        ps->next_due);
    for(j = 0; j < st->n_conditions && !err; j++) {
      const session_condition *c = &st->conditions[j];
      err = dynbuf_printf(b, " %s=%s/%s", c->type ? c->type : "?",
                          c->status ? c->status : "?",
                          c->reason ? c->reason : "?");
    }
    if(!err)
      err = dynbuf_addstr(b, "\n");
  }
  if(!err)
    err = dynbuf_printf(b, "managed=%zu orphans=%zu guard=%d next_orphan=%"
                        PRId64 "%s%s\n", p->n_managed, p->n_orphans,
                        p->guard_tripped, p->next_orphan_due,
                        p->guard_message ? " " : "",
                        p->guard_message ? p->guard_message : "");
  return err;
}
