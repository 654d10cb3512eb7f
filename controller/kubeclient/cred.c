/* cred.c - the credential source of a Kubernetes connection (see
 * kube_cred.h). */
#include "controller/kubeclient/cred.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/dynbuf.h"
#include "lib/sctime.h"
#include "controller/kubeclient/config.h"

#define TOKEN_TTL_MS 60000
#define AHEAD_MAX_MS 60000
#define HOLD_MIN_MS 1000
#define HOLD_MAX_MS 30000

typedef enum { CRED_TOKEN, CRED_FILE, CRED_EXEC } cred_kind;

struct kube_cred {
  int refs;
  cred_kind kind;
  uint64_t gen;            /* bumped at each new credential */
  bool have;               /* token (and cert) hold a credential */
  char *token;
  char *cert_pem, *key_pem;
  char *file;              /* CRED_FILE */
  int64_t read_ms;         /* CRED_FILE: monotonic; 0 = read again */
  kube_exec_cfg *exec;     /* CRED_EXEC */
  sc_time got, expires;    /* wall ms; expires 0 = never */
  /* the last run failed: its error is given again until hold_until */
  int64_t hold_until_ms, hold_ms;
  sc_err fail_err;
  char fail_msg[SC_ERRBUF_SIZE];
  /* a refresh ahead of the expiry, on job_base's loop */
  kube_exec_job *job;
  struct event_base *job_base;
  bool ahead_tried;        /* one try per credential */
};

static kube_cred *cred_new(cred_kind kind)
{
  kube_cred *c = calloc(1, sizeof(*c));
  if(c) {
    c->refs = 1;
    c->kind = kind;
  }
  return c;
}

kube_cred *kube_cred_new_token(const char *token)
{
  kube_cred *c = cred_new(CRED_TOKEN);
  if(c && !(c->token = strdup(token))) {
    free(c);
    return NULL;
  }
  if(c)
    c->have = true;
  return c;
}

kube_cred *kube_cred_new_file(const char *path)
{
  kube_cred *c = cred_new(CRED_FILE);
  if(c && !(c->file = strdup(path))) {
    free(c);
    return NULL;
  }
  return c;
}

kube_cred *kube_cred_new_exec(kube_exec_cfg *cfg)
{
  kube_cred *c = cred_new(CRED_EXEC);
  if(!c) {
    kube_exec_cfg_free(cfg);
    return NULL;
  }
  c->exec = cfg;
  return c;
}

kube_cred *kube_cred_ref(kube_cred *c)
{
  if(c)
    c->refs++;
  return c;
}

static void drop(kube_cred *c)
{
  free(c->token);
  free(c->cert_pem);
  free(c->key_pem);
  c->token = c->cert_pem = c->key_pem = NULL;
  c->have = false;
}

void kube_cred_unref(kube_cred *c)
{
  if(!c || --c->refs > 0)
    return;
  kube_exec_job_free(c->job);
  drop(c);
  free(c->file);
  kube_exec_cfg_free(c->exec);
  free(c);
}

bool kube_cred_is_exec(const kube_cred *c)
{
  return c && c->kind == CRED_EXEC;
}

const char *kube_cred_file(const kube_cred *c)
{
  return c && c->kind == CRED_FILE ? c->file : NULL;
}

void kube_auth_clear(kube_auth *a)
{
  if(!a)
    return;
  free(a->token);
  free(a->cert_pem);
  free(a->key_pem);
  memset(a, 0, sizeof(*a));
}

static sc_err dup_opt(char **dst, const char *s)
{
  *dst = NULL;
  if(!s)
    return SC_OK;
  *dst = strdup(s);
  return *dst ? SC_OK : SC_ERR_NOMEM;
}

static sc_err give(const kube_cred *c, kube_auth *out, sc_errbuf *eb)
{
  sc_err err = dup_opt(&out->token, c->token);
  if(!err)
    err = dup_opt(&out->cert_pem, c->cert_pem);
  if(!err)
    err = dup_opt(&out->key_pem, c->key_pem);
  out->gen = c->gen;
  if(err) {
    kube_auth_clear(out);
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  return SC_OK;
}

/* ------------------------------------------------------------------ */
/* token file */

static sc_err read_token_file(kube_cred *c, sc_errbuf *eb)
{
  FILE *f = fopen(c->file, "rb");
  dynbuf b;
  char chunk[4096], *t;
  size_t n, l;
  sc_err err = SC_OK;
  if(!f)
    return sc_errf(eb, SC_ERR_IO, "token file %s: %s", c->file,
                   strerror(errno));
  dynbuf_init(&b, KUBE_TOKEN_MAX + 2);
  while(!err && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
    err = dynbuf_add(&b, chunk, n);
  if(!err && ferror(f))
    err = sc_errf(eb, SC_ERR_IO, "token file %s: read error", c->file);
  else if(err == SC_ERR_TOO_LARGE)
    sc_errf(eb, err, "token file %s: larger than %d bytes", c->file,
            KUBE_TOKEN_MAX);
  fclose(f);
  if(err) {
    dynbuf_free(&b);
    return err;
  }
  t = dynbuf_take(&b);
  if(!t)
    return SC_ERR_NOMEM;
  l = strlen(t);
  while(l && strchr("\r\n\t ", t[l - 1]))
    t[--l] = 0;
  if(!*t) {
    free(t);
    return sc_errf(eb, SC_ERR_INVALID, "token file %s is empty", c->file);
  }
  for(n = 0; n < l; n++)
    if((unsigned char)t[n] < ' ' || t[n] == 0x7f) {
      free(t);
      return sc_errf(eb, SC_ERR_INVALID, "token file %s: the token has a "
                     "line break or a control character", c->file);
    }
  drop(c);
  c->token = t;
  c->have = true;
  c->gen++;
  c->read_ms = sctime_mono_ms();
  return SC_OK;
}

/* ------------------------------------------------------------------ */
/* exec plugin */

static void install(kube_cred *c, kube_exec_cred *x)
{
  drop(c);
  c->token = x->token;
  c->cert_pem = x->cert_pem;
  c->key_pem = x->key_pem;
  c->expires = x->expires;
  memset(x, 0, sizeof(*x));
  c->got = sctime_wall_ms();
  c->have = true;
  c->gen++;
  c->ahead_tried = false;
  c->hold_ms = 0;
  c->hold_until_ms = 0;
}

static sc_err failed(kube_cred *c, sc_err err, const char *msg,
                     sc_errbuf *eb)
{
  c->hold_ms = err == SC_ERR_TIMEOUT ? HOLD_MAX_MS
               : !c->hold_ms ? HOLD_MIN_MS
               : c->hold_ms * 2 > HOLD_MAX_MS ? HOLD_MAX_MS : c->hold_ms * 2;
  c->hold_until_ms = sctime_mono_ms() + c->hold_ms;
  c->fail_err = err;
  snprintf(c->fail_msg, sizeof(c->fail_msg), "%s", msg);
  return sc_errf(eb, err, "%s", msg);
}

/* the refresh ahead ended (from its loop) */
static void on_ahead(kube_exec_job *job, void *ud)
{
  kube_cred *c = ud;
  kube_exec_cred x;
  sc_errbuf eb;
  if(!kube_exec_job_result(job, &x, &eb))
    install(c, &x);
  /* else: the credential in hand stays until it expires; the run then
   * (waited for) says what is wrong */
  kube_exec_job_free(job);
  c->job = NULL;
  c->job_base = NULL;
}

static bool valid_now(const kube_cred *c, sc_time now)
{
  return c->have && (!c->expires || now < c->expires);
}

static sc_err exec_get(kube_cred *c, struct event_base *base, kube_auth *out,
                       sc_errbuf *eb)
{
  sc_time now = sctime_wall_ms();
  kube_exec_cred x;
  sc_errbuf jeb;
  sc_err err;
  if(valid_now(c, now)) {
    if(base && c->expires && !c->job && !c->ahead_tried) {
      int64_t life = c->expires - c->got, ahead = life / 4;
      if(ahead > AHEAD_MAX_MS)
        ahead = AHEAD_MAX_MS;
      if(now >= c->expires - ahead) {
        c->ahead_tried = true;
        jeb.msg[0] = 0;
        if(!kube_exec_job_start(c->exec, base, on_ahead, c, &c->job, &jeb))
          c->job_base = base;
      }
    }
    return give(c, out, eb);
  }
  if(c->job) { /* a refresh is running: wait for it */
    jeb.msg[0] = 0;
    err = kube_exec_job_wait(c->job, &x, &jeb);
    kube_exec_job_free(c->job);
    c->job = NULL;
    c->job_base = NULL;
    if(err)
      return failed(c, err, jeb.msg, eb);
    install(c, &x);
    return give(c, out, eb);
  }
  if(c->hold_until_ms && sctime_mono_ms() < c->hold_until_ms)
    return sc_errf(eb, c->fail_err, "%s", c->fail_msg);
  jeb.msg[0] = 0;
  err = kube_exec_run(c->exec, &x, &jeb);
  if(err)
    return failed(c, err, jeb.msg, eb);
  install(c, &x);
  return give(c, out, eb);
}

sc_err kube_cred_get(kube_cred *c, struct event_base *base, kube_auth *out,
                     sc_errbuf *eb)
{
  sc_err err;
  memset(out, 0, sizeof(*out));
  if(!c)
    return SC_OK;
  switch(c->kind) {
  case CRED_TOKEN:
    return give(c, out, eb);
  case CRED_FILE:
    if(!c->have || !c->read_ms ||
       sctime_mono_ms() - c->read_ms >= TOKEN_TTL_MS) {
      err = read_token_file(c, eb);
      if(err)
        return err;
    }
    return give(c, out, eb);
  case CRED_EXEC:
    return exec_get(c, base, out, eb);
  }
  return sc_errf(eb, SC_ERR_INTERNAL, "kube: unknown credential");
}

bool kube_cred_unauthorized(kube_cred *c, const kube_auth *used)
{
  if(!c || c->kind == CRED_TOKEN)
    return false;
  if(used->gen != c->gen)
    return true; /* a newer credential is there already */
  if(c->kind == CRED_FILE)
    c->read_ms = 0;
  else {
    drop(c);
    c->hold_until_ms = 0;
  }
  return true;
}

void kube_cred_detach(kube_cred *c, struct event_base *base)
{
  if(c && c->job && c->job_base == base) {
    kube_exec_job_free(c->job);
    c->job = NULL;
    c->job_base = NULL;
  }
}
