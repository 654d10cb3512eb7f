/*
 * config.h - the daemon's settings: flags, environment, YAML config file.
 *
 * Precedence: command-line flag > environment > --config file > default.
 * Every flag FOO-BAR has the environment variable SESSION_CONTROLLER_FOO_BAR
 * and the config-file key foo-bar (a flat YAML mapping). Exceptions kept
 * for compatibility: SESSION_STORE for --store, CUBE_API_KEY for the key
 * itself (the key is never a flag: it would show in the process list).
 *
 * Ownership: config_parse() fills a config the caller frees with
 * config_clear(); strings inside are owned by it.
 */
#ifndef SC_CONFIG_H
#define SC_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "lib/sc_err.h"

typedef struct config {
  char *store;
  bool create_store;           /* sqlite: create a missing store file */
  int64_t watch_poll_ms;       /* sqlite store watch poll period */
  char *kubeconfig;            /* kube store: kubeconfig file */
  char *namespace_;            /* kube store: only this namespace */
  int64_t watch_timeout_ms;    /* kube store: watch timeoutSeconds */
  bool leader_elect;           /* kube store: elect a leader by Lease */
  char *leader_elect_namespace;/* its namespace; NULL = the pod's */
  char *leader_elect_name;     /* the Lease's name */
  char *cube_url;
  char *cube_api_key_file;
  char *cube_api_key;          /* from the file or CUBE_API_KEY; secret */
  char *cube_ca;
  bool cube_insecure_skip_verify;
  char *name;                  /* lea.managed-by value */
  char *adopt_from;            /* rename: the store's former name */
  char *replica;               /* this replica's name, for logs/audit */
  int64_t resync_ms;
  char *shards;                /* --shards: off, auto, N */
  char *shard_index;           /* --shard-index with --shards N */
  bool share_work;             /* --share-work (with --shards off) */
  int64_t shard_whole_list_ms; /* --shard-whole-list-every */
  double cube_qps;
  int max_inflight;
  int64_t orphan_grace_ms;
  double max_delete_fraction;
  int max_delete_floor;        /* orphans never held back by the guard */
  int64_t brake_window_ms;     /* the brakes' window, Cube's clock */
  double reclaim_brake_fraction;
  int reclaim_brake_floor;
  int max_paused;              /* capacity budgets, 0 = no limit */
  int max_paused_per_tenant;
  int max_running_per_tenant;
  bool force;
  bool dry_run;
  char *audit_log;
  char *metrics_addr;
  int metrics_max_connections; /* cap on --metrics-addr connections */
  char *log_format;
  char *tenant_binding;       /* "namespace" or "free" */
  char *default_internet_access; /* "true", "false" or "cube" */
  char *default_deny_out;      /* the flag's text: CIDRs, commas */
  char **deny_out;             /* it split and checked */
  /* the tenant policy (api/policy.h): the file, and the flags it builds
   * on; the lists comma-separated, checked by policy_load() */
  char *policy_file;
  char *workspace_root;
  char *volume_policy;
  char *egress_ceiling;
  char *egress_allow;
  char *allowed_templates;
  size_t n_deny_out;
  int64_t create_claim_ttl_ms; /* --create-claim-ttl */
  int64_t reclaim_void_after_ms; /* --reclaim-void-after */
  int64_t cube_timeout_ms;       /* --cube-timeout */
  char *log_level;
  char *config_file;
  bool once;                   /* one full pass, then exit */
  bool help;
  bool version;
} config;

/* Parse argv and the environment (envp style getenv); on a usage error
 * returns SC_ERR_INVALID with a one-line message in eb. */
sc_err config_parse(config *c, int argc, char **argv, sc_errbuf *eb);
void config_clear(config *c);
void config_usage(FILE *out, const char *argv0);

/* Read an API key file: at most 8 KiB, trailing white space trimmed, not
 * empty, no NUL. *out is the caller's to free. Messages never contain
 * the key. */
sc_err config_read_key_file(const char *path, char **out, sc_errbuf *eb);

#endif
