/*
 * session.h - the Session resource (docs/session-api.md) in C.
 *
 * A session is a plain struct: the planner, the stores and the CLI read its
 * fields directly. Every string is a heap copy owned by the session (or by
 * the kvlist/condition inside it); session_free() releases all of it.
 * A NULL string means "unset". Times are sc_time (ms since the epoch, UTC,
 * 0 = unset); durations are int64 milliseconds.
 *
 * Ownership rules:
 *  - session_new() returns a zeroed session owned by the caller.
 *  - session_free(NULL) is a no-op.
 *  - session_dup() returns a deep copy owned by the caller.
 *  - session_ref() shares one: every holder frees it once, and a shared
 *    session is read-only for all of them (see session_ref below).
 *  - Functions taking `const session *` never keep a pointer into it.
 */
#ifndef SC_SESSION_H
#define SC_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/sc_err.h"
#include "lib/sctime.h"

#define SESSION_API_VERSION "lea.io/v1alpha1"
#define SESSION_KIND "Session"
#define SESSION_TAG_PREFIX "lea."
#define SESSION_TAG_SESSION_ID "lea.session_id"
#define SESSION_TAG_TENANT_ID "lea.tenant_id"
#define SESSION_TAG_MANAGED_BY "lea.managed-by"
/* the metadata.uid of the object a sandbox was created for (rule 12: a
 * sandbox belongs to one object, never to a name) */
#define SESSION_TAG_SESSION_UID "lea.session_uid"
/* the spec.template a sandbox was created from (Cube may report another
 * name for it: an ID for an alias) */
#define SESSION_TAG_TEMPLATE "lea.template"

#define SESSION_DEFAULT_NAMESPACE "default"
#define SESSION_DEFAULT_IDLE_TIMEOUT_MS (15 * 60 * 1000LL)
#define SESSION_DEFAULT_RECLAIM_AFTER_MS (24 * 3600 * 1000LL)
#define SESSION_MAX_DURATION_MS (10LL * 365 * 24 * 3600 * 1000)

/* A string map kept sorted by key (byte order), keys unique. */
typedef struct sc_kv {
  char *key;
  char *value;
} sc_kv;

typedef struct sc_kvlist {
  sc_kv *items;
  size_t n;
} sc_kvlist;

/* Set key to value (copies both), keeping the list sorted. */
sc_err sc_kvlist_set(sc_kvlist *l, const char *key, const char *value);
/* The value of key, or NULL. */
const char *sc_kvlist_get(const sc_kvlist *l, const char *key);
void sc_kvlist_clear(sc_kvlist *l);
sc_err sc_kvlist_copy(sc_kvlist *dst, const sc_kvlist *src);
bool sc_kvlist_equal(const sc_kvlist *a, const sc_kvlist *b);

typedef enum session_state {
  SESSION_STATE_ACTIVE = 0,
  SESSION_STATE_RUNNING,
  SESSION_STATE_PAUSED,
  SESSION_STATE_ENDED
} session_state;

typedef enum session_phase {
  SESSION_PHASE_NONE = 0, /* never reconciled: printed as "" */
  SESSION_PHASE_PENDING,
  SESSION_PHASE_CREATING,
  SESSION_PHASE_RUNNING,
  SESSION_PHASE_PAUSED,
  SESSION_PHASE_RECLAIMED,
  SESSION_PHASE_ENDED,
  SESSION_PHASE_FAILED,
  SESSION_PHASE_RECLAIMING /* a reclaim's intent is written; its DELETE may
                              be in flight (status.pendingAction) */
} session_phase;

/* spec.resumePolicy: who may resume a paused sandbox. Auto (the default):
 * Cube does, on any traffic to it. OnConnect: only a connect request
 * (the lea.io/connect annotation): the sandbox is created with Cube's
 * auto-resume off, so no request can resume it behind the store's back. */
typedef enum session_resume_policy {
  SESSION_RESUME_AUTO = 0,
  SESSION_RESUME_ON_CONNECT
} session_resume_policy;

/* The connect request: a caller (sessionctl connect, kubectl annotate)
 * sets this annotation to a new nonce to ask for a running sandbox; the
 * controller answers in status.connect with the same nonce. */
#define SESSION_ANNOT_CONNECT "lea.io/connect"
#define SESSION_CONNECT_NONCE_MAX 64
/* status.connect.result */
#define SESSION_CONNECT_SERVED "Served"
#define SESSION_CONNECT_REFUSED "Refused"
/* the port of the sandbox's envd, as E2B clients address it:
 * https://49983-<sandboxID>.<domain> */
#define SESSION_ENVD_PORT 49983

/* "Active", "Running", ... and back; parse returns -1 when unknown. */
const char *session_state_name(session_state s);
int session_state_parse(const char *s);
const char *session_phase_name(session_phase p);
int session_phase_parse(const char *s);

typedef struct session_condition {
  char *type;     /* "Ready", "Conflict", ... */
  char *status;   /* "True" | "False" | "Unknown" */
  char *reason;   /* CamelCase */
  char *message;
  sc_time last_transition_time;
  int64_t observed_generation;
} session_condition;

typedef struct session_metadata {
  char *name;
  char *namespace_;          /* "namespace" */
  char *uid;                 /* set by the store */
  char *resource_version;    /* opaque, set by the store */
  int64_t generation;        /* set by the store; bumped on spec change */
  sc_time creation_timestamp;/* set by the store */
  sc_time deletion_timestamp;/* set by the store: a tombstone / terminating */
  sc_kvlist labels;
  sc_kvlist annotations;
  char **finalizers;         /* kube only; n_finalizers entries */
  size_t n_finalizers;
} session_metadata;

/* An optional boolean of the spec: absent (the default applies), true or
 * false. */
typedef enum session_optbool {
  SESSION_OPT_UNSET = 0,
  SESSION_OPT_TRUE,
  SESSION_OPT_FALSE
} session_optbool;

/* spec.volumeMounts[]: a volume of the sandbox service (E2B and Cube
 * volumeMounts) mounted at path. */
typedef struct session_volume_mount {
  char *name;                /* "name", required */
  char *path;                /* "path", required: absolute, no ".." */
  bool read_only;            /* "readOnly" */
} session_volume_mount;

/* The Cube metadata key of host directory mounts (spec.workspace): Cube
 * reserves it and checks its hostPath against its allowlist. */
#define SESSION_CUBE_HOST_MOUNT_KEY "host-mount"
/* The digest of the spec parts a running sandbox cannot take (network,
 * volumeMounts, workspace), recorded on the sandbox at create
 * (session_sandbox_config_digest) so a later change is seen. */
#define SESSION_TAG_CONFIG "lea.config"

typedef struct session_spec {
  char *template_id;         /* "template", required */
  session_state state;
  int64_t idle_timeout_ms;   /* >= 1s; 0 = unset */
  int64_t reclaim_after_ms;  /* 0 = never; -1 = unset (session_new) */
  char *session_id;          /* default metadata.name */
  char *tenant_id;           /* default metadata.namespace */
  sc_kvlist env_vars;
  sc_kvlist sandbox_metadata;
  int64_t wake;
  session_resume_policy resume_policy; /* "resumePolicy"; 0 = Auto */
  /* spec.network: the sandbox's egress and ingress policy; each part
   * unset means what the controller's default (or Cube's) says */
  session_optbool net_internet;  /* "network.allowInternetAccess" */
  char **net_allow_out;          /* "network.allowOut": CIDRs, IPs, hosts */
  size_t n_net_allow_out;
  char **net_deny_out;           /* "network.denyOut": CIDRs, IPs */
  size_t n_net_deny_out;
  session_optbool net_public;    /* "network.allowPublicTraffic" */
  session_volume_mount *volume_mounts; /* "volumeMounts" */
  size_t n_volume_mounts;
  /* spec.workspace: a host directory mounted in the sandbox (Cube's
   * host-mount metadata); both set or neither */
  char *workspace_host_path;     /* "workspace.hostPath" */
  char *workspace_mount_path;    /* "workspace.mountPath" */
} session_spec;

typedef struct session_status {
  session_phase phase;
  char *sandbox_id;
  char *sandbox_state;       /* as Cube last said: running|paused|... */
  sc_time end_at;            /* as Cube last said */
  /* "tenantID": the tenant the controller serves the object as
   * (session_eff_tenant_id: spec.tenantID, else the namespace), written
   * with every status, so the CRD's TENANT column (.status.tenantID) is
   * filled for an object without spec.tenantID too. A record for
   * readers (kubectl, jsonpath): no decision reads it. */
  char *tenant_id;
  int64_t observed_generation;
  int64_t reclaimed_generation;
  bool paused_by_controller;
  int64_t applied_idle_timeout_ms; /* the idle timeout last set on the
                                      sandbox ("appliedIdleTimeout") */
  /* "createIntent": a replica's claim, written by compare-and-set just
   * before it calls Cube's create, so other replicas reacting to the same
   * event wait instead of creating a duplicate. at is Cube's clock (the
   * Date of the claiming pass's list), never a local clock; 0 = none. */
  char *create_intent_by;    /* "createIntent.by": the claiming process */
  /* "sandboxProof": that this controller linked sandboxID to this object
   * (an HMAC of the uid and the ID under a key only the controller holds;
   * plan.h, "link proofs"). Asked for only when Cube has dropped the
   * sandbox's tags: then the link alone is no evidence of ownership. */
  char *sandbox_proof;
  sc_time create_intent_at;  /* "createIntent.at" */
  /* "pendingAction": a destructive call's intent (rule 14), written by
   * compare-and-set before the PAUSE or DELETE goes to Cube and cleared
   * with its outcome. A replica that finds one resumes it from the facts:
   * a reclaim whose sandbox is gone is Reclaimed, never a new sandbox. */
  char *pending_kind;        /* "pendingAction.kind": reclaim, ended,
                                tombstone, duplicate, pause */
  char *pending_sandbox_id;  /* "pendingAction.sandboxID" */
  sc_time pending_at;        /* "pendingAction.at": Cube's clock */
  char *pending_by;          /* "pendingAction.by": the writing process */
  /* "connect": the answer to the last connect request served */
  char *connect_nonce;       /* "connect.nonce": the annotation's value */
  char *connect_result;      /* "connect.result": Served | Refused */
  char *connect_message;     /* "connect.message": why, when Refused */
  /* how a client reaches the sandbox (never an access token) */
  char *domain;              /* "domain": as Cube answered */
  char *envd_address;        /* "envdAddress": https://49983-<id>.<domain> */
  session_condition *conditions;
  size_t n_conditions;
} session_status;

typedef struct session {
  session_metadata meta;
  session_spec spec;
  session_status status;
  unsigned refs_;           /* private: references beyond the first
                               (session_ref); 0 = one owner */
  bool valid_;              /* private: session_invalid_reason() found
                               nothing while it was shared (read-only,
                               so it stays valid: a memo) */
} session;

session *session_new(void);
/* Drops one reference: the last one frees the session. */
void session_free(session *s);
session *session_dup(const session *s);
/* Shared, read-only sessions. session_ref() returns s itself with one
 * more reference (NULL for NULL); each holder calls session_free() once.
 * A session with more than one holder is read-only for all of them: no
 * field may change while session_shared() says true (copy it with
 * session_dup() to change it). A store hands out shared sessions only
 * when asked (store_list_opts.shared, the controller's pass); everything
 * else still owns what it gets. Not thread-safe (the process is one
 * thread). Cost: a shared session saves a deep copy (about 30 small
 * allocations) per holder; the price is this rule. */
session *session_ref(const session *s);
bool session_shared(const session *s);

/* Deep-copy helpers for the parts the stores and the planner move around. */
sc_err session_spec_copy(session_spec *dst, const session_spec *src);
void session_spec_clear(session_spec *sp);
sc_err session_status_copy(session_status *dst, const session_status *src);
void session_status_clear(session_status *st);
bool session_spec_equal(const session_spec *a, const session_spec *b);
bool session_status_equal(const session_status *a, const session_status *b);

/* Set or replace the condition of c->type (copied). last_transition_time
 * is kept from the old condition when the status did not change. */
sc_err session_status_set_condition(session_status *st,
                                    const session_condition *c);
const session_condition *session_status_get_condition(
  const session_status *st, const char *type);

/* Fill the defaults of the Session API into unset fields (sessionctl does
 * this before it stores a manifest's object). */
sc_err session_apply_defaults(session *s);

/*
 * The effective value of every defaulted field: what an object means when
 * the field is absent. Objects do not always come through sessionctl:
 * `kubectl apply`, a CRD's structural defaults, another tool writing the
 * SQLite store or the API server directly leave optional fields out. Every
 * reader (planner, executor, list filters, status, describe, plan, the kube
 * store) asks these instead of reading the field, so an object with a field
 * absent behaves exactly like one with the default written out. They never
 * allocate; the strings returned point into s (or are static) and live as
 * long as s. A NULL s is taken as an object with every field absent.
 *
 *  namespace     metadata.namespace, else "default"
 *  session ID    spec.sessionID, else metadata.name (NULL when both absent)
 *  tenant ID     spec.tenantID, else the effective namespace
 *  idle timeout  spec.idleTimeout (> 0), else 15m
 *  reclaimAfter  spec.reclaimAfter (>= 0; 0 = never), else 24h
 *  generation    metadata.generation (> 0), else 1
 *  state, wake   the zero values are the defaults (Active, 0): read as is
 */
const char *session_eff_namespace(const session *s);
const char *session_eff_session_id(const session *s);
const char *session_eff_tenant_id(const session *s);
int64_t session_eff_idle_timeout_ms(const session *s);
int64_t session_eff_reclaim_after_ms(const session *s);
int64_t session_eff_generation(const session *s);

/* "namespace/name" into buf. */
void session_key(const session *s, char *buf, size_t len);

/* The digest (16 hex characters and a NUL) of what a running sandbox
 * cannot be given afterwards: spec.network, spec.volumeMounts and
 * spec.workspace as the session writes them (not the controller's
 * defaults). Recorded as the sandbox's SESSION_TAG_CONFIG at create; a
 * sandbox whose tag differs runs an older policy (the planner says so in
 * the UpToDate condition). FNV-1a over a canonical form: a change
 * detector, not a signature. */
#define SESSION_CONFIG_DIGEST_LEN 16
void session_sandbox_config_digest(const session_spec *sp,
                                   char out[SESSION_CONFIG_DIGEST_LEN + 1]);

#endif
