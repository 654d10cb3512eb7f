/*
 * kubeconfig.h - how to reach a Kubernetes API server: a kubeconfig file
 * (read with libyaml, certificates and keys checked with OpenSSL) or the
 * in-cluster service account.
 *
 * Ownership: kube_conn is the caller's struct; the load functions fill it
 * with heap strings that kube_conn_clear() frees (NULL accepted). PEM
 * data is kept in memory (handed to libcurl as blobs); only the token
 * file is read again later (kube_conn_token), because tokens rotate.
 */
#ifndef SC_KUBECONFIG_H
#define SC_KUBECONFIG_H

#include <stdbool.h>
#include "../lib/sc_err.h"

/* Files larger than this are refused (kubeconfig, PEM, token). */
#define KUBE_FILE_MAX (1024 * 1024)

typedef struct kube_conn {
  char *server;      /* "https://host:port" (no trailing '/') */
  char *ca_pem;      /* CA certificates (PEM) or NULL: system CAs */
  bool insecure;     /* insecure-skip-tls-verify */
  char *token;       /* a fixed bearer token, or NULL */
  char *token_file;  /* a token file re-read when it changes, or NULL */
  char *cert_pem;    /* client certificate (PEM) or NULL */
  char *key_pem;     /* its private key (PEM) or NULL */
  char *namespace_;  /* the context's namespace (or the pod's), or NULL */
  char *source;      /* for messages: "kubeconfig F (context C)" ... */
} kube_conn;

/* Read kubeconfig `path`; context NULL or "" = current-context. Errors
 * name the file, the line and the field. */
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

/* The bearer token now (re-reads token_file); *out is the caller's
 * (free()), NULL when the connection has no token. */
sc_err kube_conn_token(const kube_conn *c, char **out, sc_errbuf *eb);

/* Set the TLS options of c on the libcurl easy handle `curl_easy`: CA
 * (blob), client certificate and key (blobs), insecure-skip-verify. The
 * handle copies the blobs. Shared by the kube store and kube_http. */
void kube_conn_curl_tls(const kube_conn *c, void *curl_easy);

void kube_conn_clear(kube_conn *c);
/* A deep copy of src into dst (the caller's, kube_conn_clear()); on
 * SC_ERR_NOMEM dst is left empty. */
sc_err kube_conn_copy(kube_conn *dst, const kube_conn *src);

#endif
