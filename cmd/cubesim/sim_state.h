/*
 * sim_state.h - cubesim's model: sandboxes, their lifecycle and timers.
 *
 * The model knows nothing of HTTP. Every call takes the virtual time `now`
 * from the caller; sim_state_advance(st, now) fires, in due order, every
 * timer that has come due (pause completion, idle/TTL timeouts). Callers
 * advance before each operation so that what they observe is consistent.
 *
 * Dialects:
 *   e2b   timeout is a TTL: endAt = now + timeout at create, set-timeout
 *         and resume; connect only extends; a paused sandbox reports
 *         endAt = the time it paused; startedAt resets on resume.
 *   cube  timeout is an idle window: endAt = last activity + timeout,
 *         frozen while paused; -1 never; onTimeout pause|kill (kill also
 *         kills a manually paused sandbox at its timeout).
 *
 * Timers live in a binary min-heap (one slot per sandbox at most), so a
 * tick costs O(log n) per due sandbox, never a scan of all sandboxes.
 *
 * Ownership: sim_state is opaque and owns every sim_sandbox; sandbox
 * pointers stay valid until sim_state_reset() or sim_state_free().
 * Callers read sandboxes but change them only through sim_state_*().
 */
#ifndef SIM_STATE_H
#define SIM_STATE_H

#include <stddef.h>
#include <stdint.h>
#include "lib/sc_err.h"
#include "lib/sctime.h"

typedef enum sim_dialect { SIM_DIALECT_CUBE, SIM_DIALECT_E2B } sim_dialect;

typedef enum sim_sbx_state {
  SIM_RUNNING,
  SIM_PAUSING,
  SIM_PAUSED,
  SIM_DELETED
} sim_sbx_state;

typedef enum sim_del_reason {
  SIM_DEL_NONE,
  SIM_DEL_API,
  SIM_DEL_TIMEOUT
} sim_del_reason;

typedef enum sim_result {
  SIM_R_OK,
  SIM_R_RESUMED,        /* connect/traffic resumed a paused sandbox */
  SIM_R_GONE,           /* the sandbox was deleted */
  SIM_R_ALREADY_PAUSED, /* pause of a pausing or paused sandbox */
  SIM_R_ALREADY_RUNNING,/* resume of a running sandbox */
  SIM_R_PAUSING,        /* cube: delete while pausing */
  SIM_R_NOT_RUNNING,    /* e2b: set-timeout/refresh of a paused sandbox */
  SIM_R_NO_AUTORESUME,  /* traffic to a paused sandbox without auto-resume */
  SIM_R_CAPACITY,       /* create past the live-sandbox limit */
  SIM_R_NOMEM
} sim_result;

typedef struct sim_state sim_state;

#define SIM_ID_MAX 33

typedef struct sim_sandbox {
  char id[SIM_ID_MAX];
  uint8_t state;          /* sim_sbx_state */
  uint8_t auto_pause;     /* on timeout: 1 pause, 0 kill */
  uint8_t auto_resume;
  uint8_t delete_reason;  /* sim_del_reason */
  int32_t timeout_s;      /* seconds; -1 never (cube) */
  int32_t heap_idx;       /* -1: no timer */
  uint32_t index;         /* creation order */
  uint32_t meta_len;      /* bytes of meta */
  uint32_t meta_count;    /* pairs in meta */
  sc_time created_at, started_at, last_activity;
  sc_time end_at;         /* e2b: the deadline while running */
  sc_time paused_at, deleted_at, pausing_until;
  sc_time due;            /* when the timer fires (heap_idx >= 0) */
  uint64_t due_seq;       /* tie-breaker: order of scheduling */
  char *template_id;
  char *meta;             /* "k\0v\0k\0v\0...", meta_count pairs */
  char *lost_meta;        /* metadata a droplabels fault removed: kept
                             only for the /_sim/sandboxes truth */
  uint32_t lost_meta_count;
  /* what the create carried besides (kept and shown, never acted on):
   * allow_internet_access (-1 absent), network and volumeMounts as JSON
   * text (NULL absent) */
  int8_t internet;
  char *network_json;
  char *volumes_json;
} sim_sandbox;

typedef struct sim_state_config {
  sim_dialect dialect;
  int64_t pause_ms;     /* how long "pausing" lasts */
  uint64_t seed;        /* sandbox IDs */
  size_t max_live;      /* 0: unlimited */
} sim_state_config;

typedef struct sim_create_req {
  const char *template_id;
  int has_timeout;
  int32_t timeout_s;
  int auto_pause;
  int auto_resume;
  const char *const *meta; /* keys and values alternating, meta_count pairs */
  size_t meta_count;
  int internet;             /* allow_internet_access: -1 absent, 0, 1 */
  const char *network_json; /* NULL: absent */
  const char *volumes_json; /* NULL: absent */
} sim_create_req;

/* Lifecycle events fired by timers (or a pause completed early by a
 * resume): "pause-complete", "timeout-pause", "timeout-kill". */
typedef void (*sim_event_fn)(void *arg, const sim_sandbox *sb, sc_time at,
                             const char *event, sim_sbx_state before,
                             sim_sbx_state after);
/* Asked when a pause completes: nonzero drops the sandbox's metadata. */
typedef int (*sim_drop_labels_fn)(void *arg);

sim_state *sim_state_new(const sim_state_config *cfg);
void sim_state_free(sim_state *st);
/* Forget every sandbox (IDs restart from the seed). */
void sim_state_reset(sim_state *st);
void sim_state_set_hooks(sim_state *st, sim_event_fn ev, sim_drop_labels_fn dl,
                         void *arg);
sim_dialect sim_state_dialect(const sim_state *st);

/* Fire every timer due at or before now, in order; returns how many. */
size_t sim_state_advance(sim_state *st, sc_time now);
/* When the next timer is due; 0 when none. */
sc_time sim_state_next_due(const sim_state *st);

/* Lookup by ID, deleted sandboxes included; NULL when unknown. */
sim_sandbox *sim_state_find(const sim_state *st, const char *id);
/* Every sandbox ever created, in creation order. */
size_t sim_state_count(const sim_state *st);
/* A number that changes whenever a sandbox's state or metadata does (a
 * create, pause, resume, delete, reset): what was counted at one value
 * still holds while it is unchanged. */
uint64_t sim_state_version(const sim_state *st);
sim_sandbox *sim_state_at(const sim_state *st, size_t i);
/* Sandboxes not deleted. */
size_t sim_state_live(const sim_state *st);

/* capacity: live-sandbox limit for this call (-1: only the configured
 * max_live). */
sim_result sim_state_create(sim_state *st, sc_time now,
                            const sim_create_req *req, int64_t capacity,
                            sim_sandbox **out);
sim_result sim_state_pause(sim_state *st, sim_sandbox *sb, sc_time now);
sim_result sim_state_resume(sim_state *st, sim_sandbox *sb, sc_time now,
                            int has_timeout, int32_t timeout_s);
sim_result sim_state_connect(sim_state *st, sim_sandbox *sb, sc_time now,
                             int has_timeout, int32_t timeout_s);
sim_result sim_state_set_timeout(sim_state *st, sim_sandbox *sb, sc_time now,
                                 int32_t timeout_s);
sim_result sim_state_refresh(sim_state *st, sim_sandbox *sb, sc_time now,
                             int has_duration, int32_t duration_s);
sim_result sim_state_delete(sim_state *st, sim_sandbox *sb, sc_time now);
/* A user request reaching the sandbox through the proxy. */
sim_result sim_state_traffic(sim_state *st, sim_sandbox *sb, sc_time now);

/* endAt as the dialect reports it; 0 when there is none (cube, never). */
sc_time sim_sandbox_end_at(const sim_state *st, const sim_sandbox *sb);
/* "running", "pausing", "paused", "deleted". */
const char *sim_state_name(sim_sbx_state s);
/* The public API's state: "running" or "paused"; a pausing sandbox is
 * "pausing" in the cube dialect (as Cube reports it), "paused" in e2b. */
const char *sim_public_state(const sim_state *st, const sim_sandbox *sb);
/* The value of metadata key k, or NULL. */
const char *sim_sandbox_meta(const sim_sandbox *sb, const char *k);

#endif
