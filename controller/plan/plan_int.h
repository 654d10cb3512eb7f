/*
 * plan_int.h - the parts of the planner, shared by the files of
 * controller/plan/ only (other modules include controller/plan/plan.h).
 *
 * A pass (plan_compute_ex) runs in this order:
 *
 *   join.c    the sandboxes by ID, the sessions' links and tags: who owns
 *             what (one join, lib/hmap.h keyed by lib/schash.h)
 *   decide.c  per session, what its spec.state asks given its sandboxes;
 *             then the orphans
 *   capacity.c  the budgets over the whole fleet (rules 14, 15): marks
 *             sessions and decides them again
 *   rules.c   the safety rules the decisions call, one function per rule
 *             (the table at its top maps every rule to its keeper)
 *   status.c  the status a session should show, compared with the old one
 *             by api/'s session_status_equal(); plan_status_after()
 *   pass.c    the entry point, the actions and their one order, plan_free
 *   proof.c   the link proofs (HMAC) and the config helpers
 *   format.c  plan_format() and the names of actions and kinds
 *
 * Everything here is pure: no clock, no I/O (hack/checksrc.sh checks
 * controller/plan/ for both).
 *
 * Ownership: a planner lives for one plan_compute_ex() call. Its records
 * point into the input (sessions, sandboxes, their strings) and live in
 * the plan_scratch, which owns the arrays and tables between calls and
 * keeps nothing a plan points to.
 */
#ifndef SC_PLAN_INT_H
#define SC_PLAN_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/plan/plan.h"
#include "lib/hmap.h"
#include "lib/sctime.h"

#define PLAN_DEFAULT_CONTROLLER "session-controller"
#define PLAN_MSG_MAX 320    /* a condition message */
#define PLAN_REASON_MAX 512 /* an action's reason */
#define PLAN_TAG_SHOWN 136  /* a tag from Cube as a message shows it */
#define PLAN_DUR_MAX 32     /* duration_format() */

/* How a session's status.sandboxID resolved this pass. */
enum link_state {
  LS_NONE = 0,        /* no link, or the link lost to a live session */
  LS_OWNED,           /* observed and ours */
  LS_CONFIRM,         /* not observed, not known gone: GET it (rule 2) */
  LS_GONE,            /* a GET this pass said 404 */
  LS_CONFLICT_TENANT, /* its tenant tag names another tenant (rule 5) */
  LS_CONFLICT_SB,     /* its session, managed-by or uid tag is someone
                         else's, or no tag and no proof (rules 4, 12) */
  LS_CLAIMED          /* another live session records the same ID */
};

typedef struct sess_rec sess_rec;
typedef struct sb_rec sb_rec;

/* One per input sandbox with an ID, in input order. */
struct sb_rec {
  const cube_sandbox *b;    /* the input */
  const char *id;           /* b->sandbox_id */
  const char *tenant, *sid, *managed_by; /* its lea.* tags, or NULL */
  const char *uid;          /* its lea.session_uid tag, or NULL */
  const char *tmpl;         /* its lea.template tag, or NULL */
  const char *cfg;          /* its lea.config tag, or NULL */
  bool tagged;              /* it carries some lea.* tag */
  bool ours;                /* managed_by names this controller (rule 4) */
  bool dup;                 /* a second report of a listed ID: ignored */
  sess_rec *claims;         /* sessions whose status.sandboxID is this ID
                               (chain: sess_rec.next_claim) */
  sess_rec *owner;          /* the session it joined, by link or tags */
  sb_rec *next_of_owner;    /* the owner's next sandbox */
};

/* One per input session, in input order. */
struct sess_rec {
  const session *s;
  size_t idx;               /* index in the input */
  const char *link;         /* status.sandboxID; NULL for none or "" */
  const char *tenant, *sid; /* the effective spec.tenantID, sessionID */
  bool tomb;                /* a tombstone (deletion_timestamp set) */
  bool unbound;             /* tenantID is not the namespace, and the
                               config binds them (rule 5): no tag join */
  bool has_pair;            /* takes part in the tag join */
  enum link_state ls;
  sb_rec *link_sb;          /* the observed sandbox its link names */
  sess_rec *next_claim;     /* the next session linking link_sb */
  const sess_rec *link_winner; /* LS_CLAIMED: who holds the link */
  bool pair_loser;          /* another session owns its (tenant, sid) */
  const sess_rec *pair_owner;  /* that one, when this one is live */
  sb_rec *sbs;              /* its sandboxes (chain: next_of_owner) */
  size_t n_sbs;
  /* capacity (capacity.c): chosen as a victim (rule 14) or held by the
   * running quota (rule 15); cap_msg: the budget, in the plan's arena */
  unsigned char cap;
  const char *cap_msg;
};

/* Working memory of a pass, kept between passes (plan.h). */
struct plan_scratch {
  sess_rec *recs;
  size_t cap_recs;
  sb_rec *sbs;
  size_t cap_sbs;
  sc_hmap *by_id;           /* sb_rec by sandbox ID */
  sc_hmap *by_pair;         /* the owning sess_rec of each (tenant, sid) */
  sc_hmap *by_uid;          /* sess_rec by metadata.uid, built on first
                               use in a pass (join_session_by_uid) */
  const char **gone;        /* in->gone, sorted */
  size_t cap_gone;
  session_condition *conds; /* the wanted status's conditions (status.c) */
  size_t cap_conds;
};

typedef struct planner {
  const plan_input *in;
  const plan_config *cfg;
  plan_scratch *sc;
  sess_rec *recs;
  size_t n_recs;
  sb_rec *sbs;
  size_t n_sbs;
  const char **gone;
  size_t n_gone;
  plan *p;
  size_t cap_actions;
  char now_text[SCTIME_RFC3339_MAX]; /* cube_now as the reasons show it */
  /* capacity.c: what the decisions noted for rules 14 and 15 */
  struct cap_paused *paused_c;
  size_t n_paused_c, cap_paused_c;
  sess_rec **create_c;      /* would create now */
  size_t n_create_c, cap_create_c;
  sess_rec **claim_c;       /* another's fresh create claim: a slot */
  size_t n_claim_c, cap_claim_c;
  bool cap_rerun;           /* deciding again: note nothing */
  bool uid_map_built;       /* sc->by_uid holds this pass's sessions */
  sc_hmap *tenant_map;      /* a tenant's row in p->tenants */
} planner;

/* What the planner wants a session's status to say (decide.c fills it,
 * status.c applies it onto the old status). Fields not named keep the old
 * status's values. */
typedef struct want {
  session_phase phase;
  const char *sandbox_id;
  const char *sandbox_state;
  const char *proof;        /* status.sandboxProof */
  sc_time end_at;
  int64_t reclaimed_generation;
  bool paused_by_controller;
  int64_t applied_idle_timeout_ms;
  bool keep_intent;         /* status.createIntent stays (else cleared) */
  const char *ready_status, *ready_reason; /* NULL: Ready unchanged */
  char ready_msg[PLAN_MSG_MAX];
  bool conflict;            /* Conflict True (else False once it exists) */
  const char *conflict_reason;
  char conflict_msg[PLAN_MSG_MAX];
  bool tmpl_stale;          /* the sandbox runs another template */
  bool cfg_stale;           /* it runs another network policy or other
                               mounts (its lea.config tag) */
  char uptodate_msg[400];   /* the UpToDate message when stale */
  char proof_buf[PLAN_PROOF_LEN + 1];
  const char *domain;       /* status.domain (NULL: none) */
  bool clear_pending;       /* status.pendingAction goes (rule 11) */
  bool intent_paused;       /* a pause intent whose sandbox is paused */
  /* the connect request (the lea.io/connect annotation) this pass sees
   * unanswered, or NULL; answered: connect_result set */
  const char *connect_pending;
  const char *connect_result; /* Served | Refused; NULL: unchanged */
  char connect_msg[PLAN_MSG_MAX];
  char envd_buf[320];       /* status.envdAddress, made from domain */
} want;

/* ---- join.c ---- */
sc_err join_sandboxes(planner *pl);
sc_err join_sessions(planner *pl);
/* The session (live or tombstone) whose metadata.uid is uid, or NULL;
 * and the owner of (tenant, sid) after the join, or NULL. *err is set
 * when the uid table could not be built (out of memory). */
const sess_rec *join_session_by_uid(planner *pl, const char *uid,
                                    sc_err *err);
const sess_rec *join_pair_owner(const planner *pl, const char *tenant,
                                const char *sid);
/* Rule 16: an orphan candidate that is evidence, not absence: tagged with
 * a uid no object of this store has, for a (tenant, sessionID) that the
 * store holds under another uid (its name, or its sessionID, was applied
 * again after that object went). Returns that holder, or NULL. */
const sess_rec *rule16_superseded(planner *pl, const sb_rec *sb, sc_err *err);
/* ours and joined by nobody: an orphan candidate (decide_orphans) */
bool join_is_orphan(const sb_rec *sb);
/* the observed sandbox of this ID, or NULL */
sb_rec *join_sandbox_by_id(const planner *pl, const char *id);

/* ---- rules.c ---- */
bool rule2_gone_confirmed(const planner *pl, const char *id);
bool rule2_orphan_may_be_concluded(const planner *pl, const sb_rec *sb);
sc_err rule3_delete_expectations(planner *pl, plan_action *a,
                                 const sb_rec *sb);
bool rule4_sandbox_is_ours(const planner *pl, const char *managed_by);
bool rule4_untagged(const sb_rec *sb);
bool rule4_link_proven(const planner *pl, const sess_rec *r);
enum link_state rule4_judge_link(const planner *pl, const sess_rec *r,
                                 const sb_rec *sb);
bool rule5_tenants_never_cross(const sess_rec *r, const sb_rec *sb);
bool rule5_tenant_is_namespace(const planner *pl, const session *s);
/* The tenant policy refuses s: why, into buf (api/policy.h). */
bool rule5_tenant_policy_bounds(const planner *pl, const session *s,
                                char *buf, size_t len);
const sb_rec *rule6_pick_duplicate_winner(const sess_rec *r);
sc_err rule9_orphan_guard(planner *pl, size_t first_orphan);
sc_err rule13_reclaim_brake(planner *pl);
bool rule11_create_claim_held(const planner *pl, const session *s);
bool rule11_intent_unresolved(const planner *pl, const sess_rec *r);
const char *rule11_reclaim_unwanted(const planner *pl, const sess_rec *r,
                                    const sb_rec *sb);
bool rule11_reclaim_void(const planner *pl, const sess_rec *r);
int64_t rule11_reclaim_void_in(const planner *pl, const sess_rec *r);
sc_err rule11_resume_intent(planner *pl, const sess_rec *r, want *w,
                            bool *done, sc_time *due);
bool rule12_one_object(const session *s, const sb_rec *sb, bool by_link);

/* ---- capacity.c (rules 14, 15) ---- */
enum { CAP_NONE = 0, CAP_VICTIM, CAP_QUOTA_WAIT };
/* notes of the decisions: a paused sandbox that stays paused, a create
 * about to go, another process's fresh claim (nothing while deciding
 * again, or when no budget asks) */
sc_err capacity_note_paused(planner *pl, const sess_rec *r, const sb_rec *sb);
sc_err capacity_note_create(planner *pl, const sess_rec *r);
sc_err capacity_note_claim(planner *pl, const sess_rec *r);
/* may this pass count a tenant's running sandboxes (the whole fleet)? */
bool capacity_quota_countable(const planner *pl);
/* after every decide_session: choose, mark, decide the marked again */
sc_err capacity_decide(planner *pl);
void capacity_free(planner *pl);

/* ---- decide.c ---- */
sc_err decide_session(planner *pl, sess_rec *r);
sc_err decide_orphans(planner *pl);

/* ---- status.c ---- */
void want_from_old(const session *s, want *w);
void want_ready(want *w, const char *status, const char *reason,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void want_sandbox(const planner *pl, want *w, const session *s,
                  const sb_rec *sb);
void want_nosandbox(want *w);
/* the connect request answered: served, or refused with why */
void want_connect_served(want *w);
void want_connect_refused(want *w, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));

void status_msg_running(char *b, size_t n, const char *id);
void status_msg_paused(char *b, size_t n, const char *id);
void status_msg_idle(char *b, size_t n, const char *id);
void status_msg_reclaimed(char *b, size_t n, int64_t rg);
/* the same, reclaimed for capacity by budget (NULL: not known) */
void status_msg_reclaimed_capacity(char *b, size_t n, const char *budget,
                                   int64_t rg);
/* the budget a capacity intent recorded in st's Ready message, into buf
 * (n bytes); NULL: none */
const char *status_capacity_budget(const session_status *st, char *buf,
                                   size_t n);
/* the Ready condition's reason of st is reason */
bool status_ready_is(const session_status *st, const char *reason);
#define REASON_RECLAIMING_CAPACITY "ReclaimingForCapacity"
#define REASON_RECLAIMED_CAPACITY "ReclaimedForCapacity"
#define REASON_QUOTA_EXCEEDED "QuotaExceeded"
#define REASON_WAITING_FOR_QUOTA "WaitingForQuota"
extern const char status_msg_ended[];
/* ps->status: what w makes of s->status; a shallow view of s->status
 * when that is unchanged, else an owned copy (status_changed) */
sc_err status_settle(planner *pl, const session *s, want *w,
                     plan_session *ps);

/* ---- pass.c ---- */
/* a new action (its strings in the plan's arena), NULL when out of
 * memory; deletes get their expectations (rule 3) */
plan_action *plan_add_action(planner *pl, plan_action_type type,
                             plan_delete_kind kind, const sess_rec *r,
                             const sb_rec *sb, int64_t timeout_s,
                             const char *fmt, ...)
  __attribute__((format(printf, 7, 8)));
/* t as reasons show it: RFC 3339, "(none)" for 0 */
void plan_time_text(const planner *pl, sc_time t, char *buf, size_t len);
char *plan_strdup(planner *pl, const char *s);

#endif
