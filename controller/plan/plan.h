/*
 * plan.h - the pure planner: (sessions, sandboxes, Cube's clock, config)
 * -> actions with reasons, and the status each session should show.
 *
 * No I/O, no clock, no globals: identical inputs give identical plans, so
 * every replica decides alike (docs/architecture.md "Safety rules"). The
 * executor (controller/act/exec.c) performs the actions, confirming each delete with a GET first.
 *
 * Ownership: the input is only read and must outlive the plan (the plan
 * points at input sessions). plan_compute() gives the caller a plan to
 * plan_free() (NULL accepted). The actions' strings belong to the plan.
 * A plan_session's status belongs to the plan only when status_changed:
 * otherwise it is a shallow view of s->status (the same strings and
 * conditions, not copied), valid while the input session is unchanged;
 * copy it with session_status_copy() to keep it. plan_free() relies on
 * status_changed, so do not modify it.
 */
#ifndef SC_PLAN_H
#define SC_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include "api/session.h"
#include "controller/cube/sandbox.h"

typedef struct plan_config {
  const char *controller_name;   /* the value of lea.managed-by */
  int64_t orphan_grace_ms;       /* --orphan-grace, default 10m */
  double max_delete_fraction;    /* --max-delete-fraction, default 0.2 */
  size_t max_delete_floor;       /* --max-delete-floor: up to this many
                                    orphans are never held back: 2 */
  bool force;                    /* --force: neither brake holds */
  /* The brakes' window, by Cube's clock (--brake-window, default 10m):
   * the orphan guard's budget and the reclaim brake count the deletions
   * this process made within it (plan_input.recent_*). */
  int64_t brake_window_ms;
  /* The reclaim brake (rule 13): at most max(reclaim_brake_floor,
   * reclaim_brake_fraction x the paused sandboxes) reclaims per window;
   * the others stay due and wait. 0 fraction: no brake. */
  double reclaim_brake_fraction; /* --reclaim-brake-fraction, 0.5 */
  size_t reclaim_brake_floor;    /* 10 */
  /* The create claim (status.createIntent). identity names this process
   * (NULL: it claims nothing of its own); a live session with no sandbox
   * whose intent belongs to another process and is younger than
   * create_intent_ttl_ms by Cube's clock gets no CREATE: it waits for that
   * create to be listed. Default 3 s: the claim is written when the create
   * is sent (claim at dispatch), so it covers one create call and its link
   * write; a create slower than that may get a duplicate, which rule 6
   * deletes (a stall costs a user; a duplicate a create and a delete). */
  const char *identity;
  int64_t create_intent_ttl_ms;
  /* A written reclaim (status.pendingAction) is carried on, since its
   * writer may be in its DELETE; but once the session no longer asks for
   * it (spec.state Running, reclaimAfter 0 or raised) it must not
   * outlive that forever. The executor sends a reclaim's DELETE only
   * within reclaim_send_within_ms of writing its intent (act/delete.c),
   * and Cube's call timeout ends it; reclaim_void_after_ms (--reclaim-
   * void-after, 60 s) is at least both together. An intent this process
   * has seen unchanged for reclaim_void_after_ms
   * (plan_input.intent_seen_ms) has no DELETE in flight: unwanted, it is
   * void; until then the session waits. 0: never void, no send limit. */
  int64_t reclaim_void_after_ms;
  int64_t reclaim_send_within_ms;
  /* --tenant-binding namespace (the default): a session whose tenantID is
   * not its namespace joins no sandbox by tags and creates none (Failed,
   * Conflict=True/TenantNotNamespace): writing a Session in one namespace
   * must not reach another tenant's sandboxes. false: --tenant-binding
   * free, for a single trusted writer. */
  bool bind_tenant_to_namespace;
  /* Former names of this controller (the store's record of renames,
   * --adopt-from): sandboxes whose lea.managed-by is one of them are ours
   * as if they carried controller_name (Cube cannot retag them). New
   * sandboxes carry controller_name. NULL/0: none. */
  const char *const *adopted_names;
  size_t n_adopted_names;
  /* Link proofs (rule 4, "a link alone is not ownership"): a status
   * writer can set status.sandboxID to any sandbox. When the linked
   * sandbox carries our tags, they are the evidence; when it carries no
   * lea.* tag at all (Cube drops them on pause, or it was never ours) the
   * planner acts on it only if status.sandboxProof equals
   * plan_link_proof(link_key, metadata.uid, sandboxID), which it writes
   * itself while the tags are there. link_key: PLAN_LINK_KEY_LEN bytes
   * only the controller knows (plan_link_key_derive); NULL: proofs are
   * neither written nor asked for (the planner tests, as before). */
  const unsigned char *link_key;
  /* The network policy of sessions that leave a part of spec.network out
   * (--default-internet-access, --default-deny-out): the create sends
   * these instead. SESSION_OPT_UNSET / 0: nothing is sent, Cube's default
   * holds. */
  session_optbool default_internet;
  char *const *default_deny_out;
  size_t n_default_deny_out;
  /* Capacity (docs/controller.md, "Capacity"): budgets of sandboxes the
   * controller manages, 0 = no limit. max_paused (all tenants) and
   * max_paused_per_tenant: when the paused sandboxes of live sessions are
   * more, the longest-paused by Cube's clock are reclaimed before their
   * reclaimAfter (rule 14); a session with reclaimAfter 0 counts but is
   * never chosen. max_running_per_tenant: a create that would pass it
   * waits, Pending/QuotaExceeded, in creation order (rule 15). Both are
   * decided only in a pass that sees the whole fleet (list_complete). */
  size_t max_paused;
  size_t max_paused_per_tenant;
  size_t max_running_per_tenant;
  /* The operator's tenant policy (api/policy.h, rule 5): a live session
   * whose spec asks for more than its tenant may (a workspace outside the
   * tenant's root, another's volume, egress past the ceiling, a template
   * not allowed) gets phase Failed, Ready=False/PolicyDenied and no
   * action; its link still protects its sandbox. The digest that shows a
   * live sandbox out of date is of the sandbox the policy makes
   * (policy_sandbox_of), so a policy change shows too. NULL: no policy
   * (the planner's tests); the controller always sets one. Borrowed. */
  const struct policy *policy;
} plan_config;

#define PLAN_LINK_KEY_LEN 32
#define PLAN_PROOF_LEN 32 /* hex characters: 128 bits of an HMAC-SHA256 */

/* The key of the link proofs: SHA-256 of a label and the Cube API key
 * (what a status writer does not hold; whoever holds it can do anything
 * with the sandboxes anyway). Without a key (a test Cube), of the
 * controller name: documented as no protection. */
void plan_link_key_derive(const char *cube_api_key, const char *name,
                          unsigned char out[PLAN_LINK_KEY_LEN]);
/* hex(HMAC-SHA256(key, uid "\n" sandbox_id))[0..32) into out (33 bytes). */
void plan_link_proof(const unsigned char *key, const char *uid,
                     const char *sandbox_id, char out[PLAN_PROOF_LEN + 1]);

#define PLAN_CREATE_INTENT_TTL_MS (3 * 1000LL)
/* the defaults of reclaim_void_after_ms and reclaim_send_within_ms: the
 * second is the first less Cube's plain call timeout (cube.h, 35 s) and a
 * second of the event loop's own delays */
#define PLAN_RECLAIM_VOID_AFTER_MS (60 * 1000LL)
#define PLAN_RECLAIM_SEND_MARGIN_MS (1000LL)
#define PLAN_RECLAIM_SEND_WITHIN_MS (24 * 1000LL)

/* status.endAt is Cube's endAt to within this: a create records its
 * estimate (the plan's Cube clock plus the timeout), and a listed endAt
 * this close to the recorded one keeps it, so the first pass after a
 * create (and a few seconds' slide of Cube's idle window) writes nothing.
 * It covers the Date header's second and the time to the create. */
#define PLAN_END_AT_SLACK_MS (2 * 1000LL)

/* The documented defaults (docs/controller.md; controller name "session-controller"). */
void plan_config_defaults(plan_config *cfg);

/* Is a lea.managed-by value (not NULL) controller_name or one of the
 * adopted names? */
bool plan_config_owns(const plan_config *cfg, const char *managed_by);

typedef struct plan_input {
  /* Live objects and tombstones (meta.deletion_timestamp != 0). */
  session *const *sessions;
  size_t n_sessions;
  /* Every sandbox observed this pass: the running and paused lists, plus
   * the GET answers for linked sandboxes missing from the lists. */
  const cube_sandbox *sandboxes;
  size_t n_sandboxes;
  /* Sandbox IDs a GET this pass confirmed gone (404). */
  const char *const *gone;
  size_t n_gone;
  /* false when the store's side is not whole: a single-session pass, or
   * an object the store could not decode whose tenant is unknown: no
   * orphan is concluded then (rule 2: an orphan is concluded from its
   * session's absence in the store, so the store read must be whole). */
  bool list_complete;
  /* Cube's list may be short (a page of limit rows with no next token;
   * Cube ignores paging and its limit counts compute nodes, so its lists
   * can be short with fewer rows): no conclusion is drawn from a
   * sandbox's absence in it. A listed sandbox is there all the same, so
   * orphans (listed, ours, no session) are still concluded, each
   * confirmed by its own GET before the DELETE (rule 3). */
  bool cube_list_short;
  sc_time cube_now;              /* the Date of the list response */
  /* Per session (same index), why it is invalid (session_invalid_reason
   * in api/manifest.h), NULL when valid; the array itself NULL: every
   * session valid. An invalid live session gets phase Failed and
   * Ready=False/InvalidSpec with the message and no action; its link
   * still protects its sandbox. An invalid Ended one or a tombstone is
   * still ended (deleting is what its object asks). */
  const char *const *invalid;
  /* Tenants with an object the store could not decode this pass (its
   * namespace; its sessionID is unknown): an orphan tagged with one of
   * them, or with no tenant tag, is not deleted, since its session may be
   * that object (rule 2: absence is not evidence). Orphans of every other
   * tenant are. NULL/0: none. */
  const char *const *hold_tenants;
  size_t n_hold_tenants;
  /* Deletions this process made within the last brake_window_ms by Cube's
   * clock (act_ledger): the brakes' budgets are over a window, not a
   * pass. A replica that restarted knows none of its predecessor's. */
  size_t recent_orphan_deletes;
  size_t recent_reclaims;
  /* Per session (same index): how long, in ms of the loop's monotonic
   * clock, this process has seen the session's status.pendingAction as it
   * is now (0: first seen in this pass, or none). A measured duration,
   * not a clock (rule 1): rule11_reclaim_void() compares it with
   * reclaim_void_after_ms. NULL: 0 for every session. */
  const int64_t *intent_seen_ms;
} plan_input;

typedef enum plan_action_type {
  PLAN_CREATE,       /* POST /sandboxes */
  PLAN_PAUSE,        /* POST /sandboxes/{id}/pause */
  PLAN_RESUME,       /* POST /sandboxes/{id}/connect: resume a paused one */
  PLAN_KEEPALIVE,    /* POST /sandboxes/{id}/connect: extend a running one */
  PLAN_SET_TIMEOUT,  /* POST /sandboxes/{id}/timeout */
  PLAN_DELETE,       /* GET (confirm), then DELETE /sandboxes/{id} */
  PLAN_CONFIRM       /* GET /sandboxes/{id}: linked but missing from lists */
} plan_action_type;

typedef enum plan_delete_kind {
  PLAN_DEL_NONE = 0,
  PLAN_DEL_RECLAIM,   /* paused >= reclaimAfter by Cube's clock: intent */
  PLAN_DEL_ENDED,     /* spec.state Ended: intent */
  PLAN_DEL_TOMBSTONE, /* the session was deleted: intent */
  PLAN_DEL_DUPLICATE, /* a second sandbox of one session */
  PLAN_DEL_ORPHAN     /* absence alone: capped by the guard */
} plan_delete_kind;

typedef struct plan_action {
  plan_action_type type;
  plan_delete_kind del_kind;
  const session *s;      /* the session (points into the input, like
                            plan_session.s); NULL for orphans */
  char *ns;              /* the session's namespace; NULL for orphans */
  char *name;            /* the session's name; NULL for orphans */
  char *sandbox_id;      /* NULL for create */
  int64_t timeout_s;     /* create, resume, keepalive, set-timeout */
  /* What the confirming GET must still find before a delete (rule 3): */
  char *expect_tenant;   /* the lea.tenant_id tag, when tags are expected */
  bool expect_paused;    /* reclaim and orphan: only while still paused */
  bool expect_managed_by;/* orphan: lea.managed-by must still be ours */
  sc_time end_at;        /* the facts behind the decision, for the audit */
  sc_time cube_now;
  char *reason;          /* one line: why; for logs, audit, `sessionctl plan` */
  /* a reclaim for capacity (rule 14): the budget that forced it, e.g.
   * "--max-paused 20 (30 paused)"; NULL for any other action. The audit
   * line says kind "capacity" and this budget. */
  char *capacity;
} plan_action;

typedef struct plan_session {
  const session *s;          /* points into the input */
  session_status status;     /* what the status should say now; when
                                !status_changed, a shallow view of
                                s->status (see the top) */
  bool status_changed;       /* differs from s->status; the plan owns
                                status only then */
  sc_time next_due;          /* Cube time when this session next needs a
                                look (reclaim, keep-alive); 0 = none */
} plan_session;

typedef struct plan_arena plan_arena;

typedef struct plan_tenant {
  const char *tenant;
  size_t running;  /* running sandboxes, in-flight creates, resumes */
  size_t paused;   /* paused sandboxes of live sessions that stay paused */
  size_t waiting;  /* creates waiting for a running slot */
} plan_tenant;

typedef struct plan {
  plan_action *actions;
  size_t n_actions;
  plan_session *sessions;    /* one per input session, same order */
  size_t n_sessions;
  size_t n_managed;          /* sandboxes carrying our managed-by tag */
  size_t n_orphans;          /* orphan deletions wanted (before the guard) */
  bool guard_tripped;        /* orphan deletions were withheld (rule 9) */
  char *guard_message;       /* why, when tripped */
  size_t n_orphan_candidates;/* ours and joined by nobody, any state or
                                age: what a wiped store looks like */
  size_t n_reclaims_held;    /* reclaims the brake held back (rule 13) */
  char *brake_message;       /* why, when it held some */
  sc_time next_orphan_due;   /* Cube time the next paused orphan passes
                                its grace; 0 = none */
  /* Capacity (rules 14, 15), from a pass that saw the whole fleet
   * (capacity_known); per tenant, sorted by name (the names point into
   * the input, like plan_session.s): */
  bool capacity_known;
  plan_tenant *tenants;
  size_t n_tenants;
  size_t n_capacity_reclaims; /* planned this pass (before the brake) */
  size_t n_quota_waiting;     /* creates held by --max-running-per-tenant */
  size_t n_policy_denied;     /* live sessions the tenant policy refuses */
  /* A create was held because this pass could not count the tenant's
   * running sandboxes (a single-session pass): a full pass decides. */
  bool wants_full_pass;
  struct plan_arena *arena;  /* private: holds the actions' strings */
} plan;

sc_err plan_compute(const plan_input *in, const plan_config *cfg,
                    plan **out);
void plan_free(plan *p);

/* Working memory kept between passes: plan_compute_ex() with the same
 * scratch reuses its arrays instead of allocating (and faulting in) about
 * 30 MB per pass at 100k sessions. The scratch holds nothing between
 * calls that a plan points to: a plan outlives the scratch's next use and
 * its free. It grows to the largest input seen and stays that size until
 * plan_scratch_free() (NULL accepted). One scratch serves one call at a
 * time. plan_compute() is plan_compute_ex() with a scratch of its own. */
typedef struct plan_scratch plan_scratch;
plan_scratch *plan_scratch_new(void);          /* NULL: out of memory */
void plan_scratch_free(plan_scratch *sc);
/* scratch may be NULL (then one is made and freed for this call) */
sc_err plan_compute_ex(const plan_input *in, const plan_config *cfg,
                       plan_scratch *scratch, plan **out);

/* The status a session should show after action a succeeded; new_id is
 * the created sandbox's ID for PLAN_CREATE. Pure. st is in/out: it holds
 * the status before the action (plan_session.status, or the status just
 * written) and is updated in place; conditions take a->cube_now as their
 * transition time. s may be NULL only for orphan deletes (no change). */
sc_err plan_status_after(const session *s, const plan_action *a,
                         const char *new_id, session_status *st);

/* Rule 11, the intent before the act. plan_intent_kind(): the
 * status.pendingAction.kind of a destructive action (pause; reclaim,
 * ended, tombstone, duplicate deletes), NULL for the others and for
 * orphans (no object holds their intent: the audit trail does).
 * plan_status_intent(): st with a's intent recorded (by: this process;
 * at: a->cube_now, Cube's clock; a reclaim also says phase Reclaiming).
 * plan_status_intent_cancel(): st without a's intent (the confirming GET
 * withheld the call). plan_status_set_domain(): status.domain and the
 * envdAddress made from it and st->sandbox_id (NULL domain: both go).
 * Pure; st is the caller's. */
const char *plan_intent_kind(const plan_action *a);
/* The session's unanswered connect request: the nonce of a valid
 * lea.io/connect annotation that status.connect.nonce does not answer,
 * or NULL. Points into s. */
const char *plan_connect_pending(const session *s);
sc_err plan_status_intent(const session *s, const plan_action *a,
                          const char *by, session_status *st);
void plan_status_intent_cancel(session_status *st, const plan_action *a);
sc_err plan_status_set_domain(session_status *st, const char *domain);

const char *plan_action_type_name(plan_action_type t); /* "create", ... */
const char *plan_delete_kind_name(plan_delete_kind k); /* "reclaim", ... */

/* A canonical, line-per-item text form of the plan (actions in plan order,
 * then each session's status summary, then the guard): for
 * `sessionctl plan`, logs and tests. Appends to b. */
struct dynbuf;
sc_err plan_format(const plan *p, struct dynbuf *b);

#endif
