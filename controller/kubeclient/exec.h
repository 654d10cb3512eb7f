/*
 * kube_exec.h - client-go credential plugins: the `exec` of a kubeconfig
 * user (what EKS, GKE and AKS write: `aws eks get-token`,
 * gke-gcloud-auth-plugin, kubelogin). The plugin is run without a shell
 * and without a terminal (stdin /dev/null, its own process group, no other
 * descriptor of ours), with KUBERNETES_EXEC_INFO set as kubectl sets it;
 * its stdout (at most KUBE_EXEC_OUT_MAX bytes) must be the ExecCredential
 * JSON of the apiVersion the kubeconfig asked for. A plugin that runs past
 * its timeout is killed with its process group.
 *
 * A run is a job: started on an event loop (its pipes and a timer are
 * events of that loop, the loop never waits) or without one, and waited
 * for with kube_exec_job_wait(), which blocks at most until the job's
 * deadline. kube_exec_run() is start + wait.
 *
 * Ownership: kube_exec_cfg is filled by the kubeconfig loader with heap
 * strings (kube_exec_cfg_free(), NULL accepted); a job borrows its cfg,
 * which must outlive it. kube_exec_cred strings are the caller's
 * (kube_exec_cred_clear()). kube_exec_job_free() (NULL accepted) kills a
 * plugin still running and reaps it; a job may be freed from its own
 * callback.
 */
#ifndef SC_KUBE_EXEC_H
#define SC_KUBE_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include "lib/sc_err.h"
#include "lib/sctime.h"

struct event_base;

#define KUBE_EXEC_V1 "client.authentication.k8s.io/v1"
#define KUBE_EXEC_V1BETA1 "client.authentication.k8s.io/v1beta1"
/* The most a plugin may write on stdout; more kills it. */
#define KUBE_EXEC_OUT_MAX (1024 * 1024)
/* How long a plugin may run before it is killed. */
#define KUBE_EXEC_TIMEOUT_MS 10000
/* The longest token accepted (from a plugin or a token file). */
#define KUBE_TOKEN_MAX 16384

typedef enum {
  KUBE_EXEC_NEVER,        /* interactiveMode: Never */
  KUBE_EXEC_IF_AVAILABLE  /* IfAvailable: run as Never (no terminal) */
} kube_exec_mode;

typedef struct kube_exec_cfg {
  char *api_version;   /* KUBE_EXEC_V1 or KUBE_EXEC_V1BETA1 */
  char *command;       /* as written in the kubeconfig */
  char *path;          /* a command with a '/': resolved against the
                        * kubeconfig's directory; NULL: looked up in PATH
                        * at each run */
  char **args;         /* argv[1..] */
  size_t n_args;
  char **env;          /* "NAME=VALUE", added to (and overriding) ours */
  size_t n_env;
  char *install_hint;  /* printed when the command is not found, or NULL */
  char *exec_info;     /* the KUBERNETES_EXEC_INFO JSON */
  char *where;         /* for messages: "kubeconfig F: user \"U\"" */
  kube_exec_mode mode;
  long timeout_ms;     /* 0 = KUBE_EXEC_TIMEOUT_MS */
} kube_exec_cfg;

typedef struct kube_exec_cred {
  char *token;         /* status.token, or NULL */
  char *cert_pem;      /* status.clientCertificateData (PEM), or NULL */
  char *key_pem;       /* status.clientKeyData (PEM), or NULL */
  sc_time expires;     /* status.expirationTimestamp; 0 = none */
} kube_exec_cred;

void kube_exec_cfg_free(kube_exec_cfg *cfg);
void kube_exec_cred_clear(kube_exec_cred *c);

/* Check the plugin's stdout (len bytes) against cfg: JSON object,
 * apiVersion = cfg's, kind ExecCredential, status with a token or a
 * certificate + key pair (PEM, checked with OpenSSL), an RFC 3339
 * expirationTimestamp later than `now` (wall ms). Errors start with
 * cfg->where and the command. */
sc_err kube_exec_parse(const kube_exec_cfg *cfg, const char *out, size_t len,
                       sc_time now, kube_exec_cred *cred, sc_errbuf *eb);

typedef struct kube_exec_job kube_exec_job;
typedef void (*kube_exec_done_cb)(kube_exec_job *job, void *ud);

/* Start the plugin. With a base, the job runs on that loop and cb(job, ud)
 * is called from it once the job ended (then kube_exec_job_result()).
 * Without one (base NULL, cb NULL) nothing happens until
 * kube_exec_job_wait(). An error return (command not found, spawn failed)
 * means no job. */
sc_err kube_exec_job_start(const kube_exec_cfg *cfg, struct event_base *base,
                           kube_exec_done_cb cb, void *ud,
                           kube_exec_job **out, sc_errbuf *eb);
/* Block until the job ended (at most until its deadline; the plugin is
 * killed then), then give its result as kube_exec_job_result(). The job's
 * callback is not called after this. */
sc_err kube_exec_job_wait(kube_exec_job *job, kube_exec_cred *cred,
                          sc_errbuf *eb);
/* The result of an ended job: the credential, or what was wrong (exit
 * status and the first line of stderr, a timeout, stdout too large, the
 * errors of kube_exec_parse()). */
sc_err kube_exec_job_result(kube_exec_job *job, kube_exec_cred *cred,
                            sc_errbuf *eb);
bool kube_exec_job_done(const kube_exec_job *job);
void kube_exec_job_free(kube_exec_job *job);

/* Run the plugin and wait for it (start + wait + free). */
sc_err kube_exec_run(const kube_exec_cfg *cfg, kube_exec_cred *cred,
                     sc_errbuf *eb);

#endif
