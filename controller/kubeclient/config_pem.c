/* config_pem.c - the TLS material of a kube connection: the *-data
 * (base64) and file fields of a kubeconfig, PEM checked with OpenSSL,
 * and the TLS options of a libcurl handle (config.h, config_int.h). */
#include "controller/kubeclient/config_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

/* base64 `data` (the *-data fields) into a NUL-terminated buffer */
static sc_err b64_decode(const kctx *k, const char *data, const char *field,
                         char **out)
{
  size_t len = 0, i, j = 0;
  char *clean;
  unsigned char *buf;
  int n;
  *out = NULL;
  clean = malloc(strlen(data) + 1);
  if(!clean)
    return SC_ERR_NOMEM;
  for(i = 0; data[i]; i++)
    if(data[i] != '\n' && data[i] != '\r' && data[i] != ' ')
      clean[j++] = data[i];
  clean[j] = 0;
  len = j;
  if(!len || len % 4) {
    free(clean);
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s: %s: not base64 "
                   "(length %zu is not a multiple of 4)", k->path, field,
                   len);
  }
  buf = malloc(len / 4 * 3 + 1);
  if(!buf) {
    free(clean);
    return SC_ERR_NOMEM;
  }
  n = EVP_DecodeBlock(buf, (const unsigned char *)clean, (int)len);
  if(n < 0) {
    free(clean);
    free(buf);
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s: %s: not base64",
                   k->path, field);
  }
  if(len >= 1 && clean[len - 1] == '=')
    n--;
  if(len >= 2 && clean[len - 2] == '=')
    n--;
  buf[n] = 0;
  free(clean);
  if(memchr(buf, 0, (size_t)n)) {
    free(buf);
    return sc_errf(k->eb, SC_ERR_INVALID, "kubeconfig %s: %s: the decoded "
                   "data is not PEM text", k->path, field);
  }
  *out = (char *)buf;
  return SC_OK;
}

sc_err kube_pem_check(const char *pem, const char *what, const char *src,
                      sc_errbuf *eb)
{
  BIO *b = BIO_new_mem_buf(pem, -1);
  sc_err err = SC_OK;
  if(!b)
    return SC_ERR_NOMEM;
  if(!strcmp(what, "key")) {
    EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
    if(!k)
      err = sc_errf(eb, SC_ERR_INVALID, "%s: not a PEM private key", src);
    EVP_PKEY_free(k);
  }
  else {
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    if(!x)
      err = sc_errf(eb, SC_ERR_INVALID, "%s: not a PEM certificate", src);
    X509_free(x);
  }
  BIO_free(b);
  return err;
}

sc_err kube_pem_check_pair(const char *cert, const char *key,
                           const char *src, sc_errbuf *eb)
{
  BIO *cb = BIO_new_mem_buf(cert, -1), *kb = BIO_new_mem_buf(key, -1);
  X509 *x = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
  EVP_PKEY *k = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
  sc_err err = SC_OK;
  if(!x || !k || X509_check_private_key(x, k) != 1)
    err = sc_errf(eb, SC_ERR_INVALID, "%s: the client key does not match "
                  "the client certificate", src);
  X509_free(x);
  EVP_PKEY_free(k);
  BIO_free(cb);
  BIO_free(kb);
  return err;
}

/* a PEM given as FIELD-data (base64) or FIELD (a file name) */
sc_err kcfg_pem(const kctx *k, const ynode *m, const char *where,
                const char *field, const char *what, char **out)
{
  char dkey[64], src[600];
  const char *data, *file;
  sc_err err;
  *out = NULL;
  snprintf(dkey, sizeof(dkey), "%s-data", field);
  err = kcfg_str(k, m, dkey, where, &data);
  if(!err)
    err = kcfg_str(k, m, field, where, &file);
  if(err)
    return err;
  if(data) {
    char fld[200];
    snprintf(fld, sizeof(fld), "%s.%s", where, dkey);
    snprintf(src, sizeof(src), "kubeconfig %s: %s", k->path, fld);
    err = b64_decode(k, data, fld, out);
  }
  else if(file) {
    char *p = kcfg_resolve_path(k->path, file);
    if(!p)
      return SC_ERR_NOMEM;
    snprintf(src, sizeof(src), "kubeconfig %s: %s.%s (%s)", k->path, where,
             field, p);
    {
      char what2[700];
      snprintf(what2, sizeof(what2), "kubeconfig %s: %s.%s:", k->path,
               where, field);
      err = kcfg_read_file(p, what2, out, NULL, k->eb);
    }
    free(p);
  }
  else
    return SC_OK;
  if(!err)
    err = kube_pem_check(*out, what, src, k->eb);
  if(err) {
    free(*out);
    *out = NULL;
  }
  return err;
}

void kube_conn_curl_tls(const kube_conn *c, const kube_auth *a,
                        void *curl_easy)
{
  CURL *e = curl_easy;
  const char *cert = a && a->cert_pem ? a->cert_pem : c->cert_pem;
  const char *key = a && a->cert_pem ? a->key_pem : c->key_pem;
  /* a floor, as the API server has: never SSLv3, TLS 1.0 or 1.1 */
  curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
  if(c->ca_pem) {
    struct curl_blob b = {c->ca_pem, strlen(c->ca_pem), CURL_BLOB_COPY};
    curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
  }
  if(cert && key) {
    struct curl_blob cb = {(void *)cert, strlen(cert), CURL_BLOB_COPY};
    struct curl_blob kb = {(void *)key, strlen(key), CURL_BLOB_COPY};
    curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cb);
    curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &kb);
    curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
  }
  if(c->insecure) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
}

