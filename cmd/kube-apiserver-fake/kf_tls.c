/* kf_tls.c - HTTPS for the fake API server: an OpenSSL server context
 * and the evhttp bufferevent callback that wraps every accepted
 * connection in a bufferevent_openssl (see kf.h). */
#include "cmd/kube-apiserver-fake/kf.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

struct kf_tls {
  SSL_CTX *ctx;
  bool client_ca;      /* client certificates are verified */
};

/* the last OpenSSL error as text, or `dflt` */
static void ssl_err(char *buf, size_t len, const char *what,
                    const char *file)
{
  unsigned long e = ERR_get_error();
  char es[256] = "";
  if(e)
    ERR_error_string_n(e, es, sizeof(es));
  ERR_clear_error();
  snprintf(buf, len, "%s %s: %s", what, file, e ? es : "unusable");
}

kf_tls *kf_tls_new(const char *cert, const char *key, const char *client_ca,
                   char *err, size_t errlen)
{
  kf_tls *t = calloc(1, sizeof(*t));
  if(!t) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  t->ctx = SSL_CTX_new(TLS_server_method());
  if(!t->ctx) {
    snprintf(err, errlen, "SSL_CTX_new failed");
    goto fail;
  }
  SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
  if(SSL_CTX_use_certificate_chain_file(t->ctx, cert) != 1) {
    ssl_err(err, errlen, "--tls-cert", cert);
    goto fail;
  }
  if(SSL_CTX_use_PrivateKey_file(t->ctx, key, SSL_FILETYPE_PEM) != 1) {
    ssl_err(err, errlen, "--tls-key", key);
    goto fail;
  }
  if(SSL_CTX_check_private_key(t->ctx) != 1) {
    snprintf(err, errlen, "--tls-key %s does not match --tls-cert %s", key,
             cert);
    goto fail;
  }
  if(client_ca) {
    STACK_OF(X509_NAME) *names;
    if(SSL_CTX_load_verify_locations(t->ctx, client_ca, NULL) != 1) {
      ssl_err(err, errlen, "--client-ca", client_ca);
      goto fail;
    }
    names = SSL_load_client_CA_file(client_ca);
    if(names)
      SSL_CTX_set_client_CA_list(t->ctx, names); /* the ctx owns them */
    /* asked for, not required: a certificate the CA did not sign fails
     * the handshake; none at all is a 401 of the request (like an API
     * server, where a token may authenticate instead) */
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    t->client_ca = true;
  }
  return t;
fail:
  kf_tls_free(t);
  return NULL;
}

void kf_tls_free(kf_tls *t)
{
  if(!t)
    return;
  SSL_CTX_free(t->ctx);
  free(t);
}

struct bufferevent *kf_tls_bev(struct event_base *base, void *arg)
{
  kf_tls *t = arg;
  SSL *ssl = SSL_new(t->ctx);
  struct bufferevent *bev;
  if(!ssl)
    return NULL;
  /* evhttp sets the accepted socket later; the SSL is the bufferevent's
   * (freed with it) */
  bev = bufferevent_openssl_socket_new(base, -1, ssl,
                                       BUFFEREVENT_SSL_ACCEPTING,
                                       BEV_OPT_CLOSE_ON_FREE);
  if(!bev)
    SSL_free(ssl);
  return bev;
}

bool kf_tls_client_ca(const kf_tls *t)
{
  return t && t->client_ca;
}

bool kf_tls_peer(struct evhttp_request *req, char *buf, size_t len)
{
  struct evhttp_connection *c = evhttp_request_get_connection(req);
  struct bufferevent *bev = c ? evhttp_connection_get_bufferevent(c) : NULL;
  SSL *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;
  X509 *x;
  buf[0] = 0;
  if(!ssl || SSL_get_verify_result(ssl) != X509_V_OK)
    return false;
  x = SSL_get0_peer_certificate(ssl);
  if(!x)
    return false;
  if(X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName,
                               buf, (int)len) < 0)
    snprintf(buf, len, "?");
  return true;
}
