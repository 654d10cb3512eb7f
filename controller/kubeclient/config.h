/*
 * kubeconfig.h - how to reach a Kubernetes API server: a kubeconfig file
 * (read with libyaml, certificates and keys checked with OpenSSL) or the
 * in-cluster service account.
 *
 * Ownership: kube_conn is the caller's struct; the load functions fill it
 * with heap strings and a reference to a credential source (kube_cred.h)
 * that kube_conn_clear() releases (NULL accepted). PEM data is kept in
 * memory (handed to libcurl as blobs). The bearer token comes from the
 * credential source at each request (kube_conn_auth): a token file is
 * read again and an exec plugin run again when their credential is due.
 */
#ifndef SC_KUBECONFIG_H
#define SC_KUBECONFIG_H

#include <stdbool.h>
#include "lib/sc_err.h"
#include "controller/kubeclient/cred.h"

/* Files larger than this are refused (kubeconfig, PEM). */
#define KUBE_FILE_MAX (1024 * 1024)

typedef struct kube_conn {
  char *server;      /* "https://host:port" (no trailing '/') */
  char *ca_pem;      /* CA certificates (PEM) or NULL: system CAs */
  bool insecure;     /* insecure-skip-tls-verify */
  kube_cred *cred;   /* the bearer token (fixed, token file, exec plugin),
                      * shared by the copies; NULL: no token */
  char *cert_pem;    /* client certificate (PEM) or NULL */
  char *key_pem;     /* its private key (PEM) or NULL */
  char *namespace_;  /* the context's namespace (or the pod's), or NULL */
  char *source;      /* for messages: "kubeconfig F (context C)" ... */
} kube_conn;

/* Read kubeconfig `path`; context NULL or "" = current-context. Errors
 * name the file, the line and the field. An exec plugin is not run here
 * (kube_conn_auth runs it). */
sc_err kubeconfig_load(const char *path, const char *context,
                       kube_conn *out, sc_errbuf *eb);

/* The in-cluster config: env KUBERNETES_SERVICE_HOST and _PORT, and
 * DIR/token, DIR/ca.crt, DIR/namespace (dir NULL = the standard
 * /var/run/secrets/kubernetes.io/serviceaccount). */
sc_err kube_incluster_load(const char *dir, kube_conn *out, sc_errbuf *eb);

/* The usual order: `kubeconfig` if given, else $KUBECONFIG (its first
 * entry), else in-cluster when KUBERNETES_SERVICE_HOST is set, else
 * ~/.kube/config. */
sc_err kube_conn_resolve(const char *kubeconfig, const char *context,
                         kube_conn *out, sc_errbuf *eb);

/* The credential for the next request (kube_cred_get of c->cred: may read
 * the token file or run the exec plugin); *out is the caller's
 * (kube_auth_clear). base: the caller's loop (NULL: none). */
sc_err kube_conn_auth(const kube_conn *c, struct event_base *base,
                      kube_auth *out, sc_errbuf *eb);
/* A request made with `used` got a 401 (kube_cred_unauthorized): true
 * when asking again may help. */
bool kube_conn_unauthorized(const kube_conn *c, const kube_auth *used);

/* The bearer token now; *out is the caller's (free()), NULL when the
 * connection has no token. */
sc_err kube_conn_token(const kube_conn *c, char **out, sc_errbuf *eb);

/* Set the TLS options of c on the libcurl easy handle `curl_easy`: CA
 * (blob), client certificate and key (blobs: those of `a`, from an exec
 * plugin, else c's; a may be NULL), insecure-skip-verify. The handle
 * copies the blobs. Shared by the kube store and kube_http. */
void kube_conn_curl_tls(const kube_conn *c, const kube_auth *a,
                        void *curl_easy);

void kube_conn_clear(kube_conn *c);
/* A copy of src into dst (the caller's, kube_conn_clear()): the strings
 * deep, the credential source shared; on SC_ERR_NOMEM dst is left empty. */
sc_err kube_conn_copy(kube_conn *dst, const kube_conn *src);

/* PEM checks with OpenSSL. what: "ca" (one or more certificates), "cert",
 * "key"; src names the data in the message. */
sc_err kube_pem_check(const char *pem, const char *what, const char *src,
                      sc_errbuf *eb);
/* That the key belongs to the certificate. */
sc_err kube_pem_check_pair(const char *cert, const char *key,
                           const char *src, sc_errbuf *eb);

#endif
