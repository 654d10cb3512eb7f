/*
 * policy.h - the operator's bounds on what a tenant's spec may ask
 * (docs/security.md, "Tenant policy"): where its host workspace may lie,
 * which volumes it may mount, how far its egress may reach and which
 * templates it may start. Tenants write their own specs and never hold
 * the Cube key: the controller is the one place where a tenant's request
 * meets the platform, so this check is the guard (Cube's host-mount
 * allowlist is one list for the whole service, not per tenant).
 *
 * A policy is built from the controller's flags and, optionally, a YAML
 * file (`kind: TenantPolicy`) whose `defaults` and per-tenant entries
 * (an exact tenant name, else the first glob in file order) override the
 * flags field by field. Every absent setting is the closed one: no
 * workspace root (spec.workspace refused), volumes `none`, egress `none`.
 *
 * The tenant is session_eff_tenant_id() (with --tenant-binding namespace,
 * the namespace). Paths are judged lexically: a hostPath must already be
 * in normal form (absolute, no "." or ".." segment, no "//", no trailing
 * "/") and lie strictly below ROOT/<tenant>/. Symbolic links on the Cube
 * host are outside what the controller can see (docs/security.md).
 *
 * Return values: policy_load() returns SC_OK or an error with the first
 * problem in eb ("--flag: ..." or "FILE:LINE:COL: PATH: ..."), and builds
 * nothing then: a bad policy never opens anything. policy_check() returns
 * the number of refusals it reported.
 *
 * Ownership: a policy is immutable once built. policy_load() returns one
 * reference; policy_ref() adds one, each holder calls policy_free() once
 * (NULL ok). policy_sandbox_of() fills a shallow copy that borrows from
 * the session, the policy and itself: never pass its spec to
 * session_spec_clear(). Not thread-safe (the process is one thread).
 *
 * A NULL policy means "no policy": every check passes and the sandbox is
 * the spec as written (sessionctl without --policy; the controller always
 * builds one).
 */
#ifndef SC_API_POLICY_H
#define SC_API_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include "api/rules.h"
#include "api/session.h"
#include "lib/sc_err.h"

#define POLICY_FILE_MAX_BYTES (1024 * 1024)
#define POLICY_PATH_MAX 1024

typedef struct policy policy;

/* The controller's flags (each NULL: the closed default). Lists are
 * comma-separated. */
typedef struct policy_flags {
  const char *workspace_roots;   /* --workspace-root: absolute dirs */
  const char *volume_policy;     /* --volume-policy: none|tenant-prefix|file */
  const char *egress_ceiling;    /* --egress-ceiling: none|allowlist|internet */
  const char *egress_allow;      /* --egress-allow: CIDRs, IPs, host names */
  const char *allowed_templates; /* --allowed-templates: names or globs;
                                    NULL: any template */
} policy_flags;

sc_err policy_load(const policy_flags *flags, const char *file,
                   policy **out, sc_errbuf *eb);
policy *policy_ref(policy *p);
void policy_free(policy *p);

/* The file it was read from (NULL: flags only). */
const char *policy_file(const policy *p);
/* One line for the log: what the flags-level ceiling, volumes and roots
 * are and how many tenant entries the file has. */
void policy_describe(const policy *p, char *buf, size_t len);

/* Each refusal of s by p, reported as rule_spec_cross() reports (top
 * field under spec, sub, index, key, message); the count. */
size_t policy_check(const policy *p, const session *s,
                    rule_report_fn report, void *ud);
/* The first refusal as one line "spec.FIELD: message[ (and N more)]"
 * into buf (no allocation, so no out-of-memory path reads as allowed);
 * true when p refuses s. */
#define POLICY_REASON_MAX 768
bool policy_denied(const policy *p, const session *s, char *buf,
                   size_t len);

/* The sandbox a create of s makes under p: s's spec with the workspace's
 * host path resolved (the short form, mountPath alone, is
 * ROOT/<tenant>/<sessionID> under the tenant's first root) and the
 * network narrowed to the tenant's egress ceiling (none: no internet and
 * no allowOut; allowlist: no internet, allowOut the spec's or else the
 * ceiling's list; internet: as written). For a session policy_check()
 * allows; the config digest (session_sandbox_config_digest) is taken of
 * spec, so a policy change shows on live sandboxes. */
typedef struct policy_sandbox {
  session_spec spec;               /* shallow: borrowed pointers */
  char host_path[POLICY_PATH_MAX]; /* the resolved short form */
} policy_sandbox;
void policy_sandbox_of(const policy *p, const session *s,
                       policy_sandbox *out);

#endif
