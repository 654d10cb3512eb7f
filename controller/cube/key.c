/*
 * key.c - the Cube client's API key: the key sets (a key and the request
 * header lists that carry it, shared by the requests sent with them and
 * wiped with the last of them), cube_client_set_api_key(), and the key
 * file looked at again while the client runs (cube.h, "The API key
 * file"), the way the kube store reads its token file again
 * (controller/kubeclient/cred.c). See cube_int.h and docs/cube-client.md.
 */
#include "controller/cube/cube_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --- key sets --- */

static struct curl_slist *hdr_list(const char *key, const char *extra1,
                                   const char *extra2)
{
  struct curl_slist *l = NULL, *t;
  dynbuf b;
  const char *fixed[3] = {"Accept: application/json", extra1, extra2};
  size_t i;
  for(i = 0; i < 3; i++) {
    if(!fixed[i])
      continue;
    t = curl_slist_append(l, fixed[i]);
    if(!t)
      goto fail;
    l = t;
  }
  if(key && *key) {
    for(i = 0; i < 2; i++) {
      char *s;
      /* room for the longest key at once: no realloc leaves a copy */
      dynbuf_init(&b, CUBE_API_KEY_MAX + 64);
      if(dynbuf_printf(&b, i ? "Authorization: Bearer %s" : "X-API-Key: %s",
                       key)) {
        dynbuf_free(&b);
        goto fail;
      }
      s = dynbuf_take(&b);
      t = s ? curl_slist_append(l, s) : NULL;
      if(s) {
        explicit_bzero(s, strlen(s));
        free(s);
      }
      if(!t)
        goto fail;
      l = t;
    }
  }
  return l;
fail:
  curl_slist_free_all(l);
  return NULL;
}

static void wipe_list(struct curl_slist *l)
{
  struct curl_slist *p;
  for(p = l; p; p = p->next)
    explicit_bzero(p->data, strlen(p->data));
  curl_slist_free_all(l);
}

static void wipe_str(char *s)
{
  if(s) {
    explicit_bzero(s, strlen(s));
    free(s);
  }
}

cube_keyset *cube_keyset_new(const char *key)
{
  cube_keyset *ks = calloc(1, sizeof(*ks));
  if(!ks)
    return NULL;
  ks->refs = 1;
  if(key && *key && !(ks->key = strdup(key)))
    goto fail;
  ks->hdr_plain = hdr_list(ks->key, NULL, NULL);
  ks->hdr_json = hdr_list(ks->key, "Content-Type: application/json",
                          "Expect:");
  ks->hdr_empty_post = hdr_list(ks->key, "Content-Type:", "Expect:");
  if(!ks->hdr_plain || !ks->hdr_json || !ks->hdr_empty_post)
    goto fail;
  return ks;
fail:
  ks->refs = 1;
  cube_keyset_unref(ks);
  return NULL;
}

cube_keyset *cube_keyset_ref(cube_keyset *ks)
{
  if(ks)
    ks->refs++;
  return ks;
}

void cube_keyset_unref(cube_keyset *ks)
{
  if(!ks || --ks->refs > 0)
    return;
  wipe_list(ks->hdr_plain);
  wipe_list(ks->hdr_json);
  wipe_list(ks->hdr_empty_post);
  wipe_str(ks->key);
  free(ks);
}

sc_err cube_key_check(const char *key, sc_errbuf *eb)
{
  size_t n;
  if(!key)
    return SC_OK;
  for(n = 0; key[n] && n <= CUBE_API_KEY_MAX; n++)
    if((unsigned char)key[n] < 0x20 || key[n] == 0x7f)
      return sc_errf(eb, SC_ERR_INVALID,
                     "cube: the API key contains a control character (a "
                     "trailing newline in the key file?)");
  if(n > CUBE_API_KEY_MAX)
    return sc_errf(eb, SC_ERR_INVALID, "cube: the API key is longer than "
                   "%d bytes", CUBE_API_KEY_MAX);
  return SC_OK;
}

sc_err cube_client_set_api_key(cube_client *c, const char *key,
                               sc_errbuf *eb)
{
  cube_keyset *ks;
  sc_err err;
  if(!c)
    return sc_errf(eb, SC_ERR_INVALID, "cube: no client");
  err = cube_key_check(key, eb);
  if(err)
    return err;
  ks = cube_keyset_new(key);
  if(!ks)
    return sc_errf(eb, SC_ERR_NOMEM, "cube: out of memory");
  cube_keyset_unref(c->keys); /* wiped now, or by its last request */
  c->keys = ks;
  ks->gen = ++c->key_gen;
  return SC_OK;
}

/* --- the key file --- */

sc_err cube_key_file_read(const cube_client *c, char **key,
                          sc_filesig *sig, sc_errbuf *eb)
{
  /* one buffer for the whole file, wiped after: no copy of the key is
   * left in freed memory by a growing buffer */
  char buf[CUBE_API_KEY_MAX + 2];
  size_t len = 0, i;
  ssize_t n;
  struct stat sb;
  sc_err err = SC_OK;
  int fd, e;
  const char *path = c->key_file;

  *key = NULL;
  memset(sig, 0, sizeof(*sig));
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if(fd < 0) {
    e = errno;
    sig->err = e ? e : EIO;
    return sc_errf(eb, SC_ERR_IO, "cube: API key file %s: %s", path,
                   strerror(e));
  }
  if(fstat(fd, &sb)) {
    e = errno;
    close(fd);
    sig->err = e ? e : EIO;
    return sc_errf(eb, SC_ERR_IO, "cube: API key file %s: %s", path,
                   strerror(e));
  }
  sc_filesig_from_stat(&sb, sig);
  while(len < sizeof(buf) - 1) {
    n = read(fd, buf + len, sizeof(buf) - 1 - len);
    if(n < 0 && errno == EINTR)
      continue;
    if(n < 0) {
      e = errno;
      err = sc_errf(eb, SC_ERR_IO, "cube: API key file %s: %s", path,
                    strerror(e));
      goto out;
    }
    if(n == 0)
      break;
    len += (size_t)n;
  }
  buf[len] = '\0';
  if(len > CUBE_API_KEY_MAX) {
    err = sc_errf(eb, SC_ERR_TOO_LARGE,
                  "cube: API key file %s: over %d bytes", path,
                  CUBE_API_KEY_MAX);
    goto out;
  }
  while(len && buf[len - 1] && strchr(" \t\r\n\v\f", buf[len - 1]))
    buf[--len] = '\0';
  if(!len) {
    err = sc_errf(eb, SC_ERR_INVALID, "cube: API key file %s is empty", path);
    goto out;
  }
  for(i = 0; i < len; i++)
    if((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f) {
      err = sc_errf(eb, SC_ERR_INVALID,
                    "cube: API key file %s: the key has a %s", path,
                    buf[i] ? "line break or a control character"
                           : "NUL byte (a binary file?)");
      goto out;
    }
  *key = strdup(buf);
  if(!*key)
    err = sc_errf(eb, SC_ERR_NOMEM, "cube: out of memory");
out:
  close(fd);
  explicit_bzero(buf, sizeof(buf));
  return err;
}

static void tell(cube_client *c, bool ok, const char *msg)
{
  if(c->on_key)
    c->on_key(c->on_key_ud, ok, msg);
}

/* Read the file; a new key replaces the one in use. forced: after a
 * 401/403, whatever stat says. */
static void reload(cube_client *c, bool forced)
{
  char *key = NULL, msg[SC_ERRBUF_SIZE];
  sc_filesig sig;
  sc_errbuf eb;
  sc_err err;
  bool same_file;
  eb.msg[0] = '\0';
  err = cube_key_file_read(c, &key, &sig, &eb);
  same_file = sc_filesig_equal(&sig, &c->key_sig);
  if(!err && c->keys->key && !strcmp(key, c->keys->key)) {
    wipe_str(key); /* the same key: nothing to say */
    c->key_sig = sig;
    c->key_sig_bad = false;
    return;
  }
  if(!err)
    err = cube_client_set_api_key(c, key, &eb);
  wipe_str(key);
  if(err) {
    /* once per change of the file: a forced read of a file already
     * refused as it is says nothing again */
    bool said = forced && same_file && c->key_sig_bad;
    c->key_sig = sig;
    c->key_sig_bad = true;
    if(!said) {
      snprintf(msg, sizeof(msg), "%.400s; the key in use stays", eb.msg);
      tell(c, false, msg);
    }
    return;
  }
  c->key_sig = sig;
  c->key_sig_bad = false;
  snprintf(msg, sizeof(msg), "Cube API key reloaded from %s", c->key_file);
  tell(c, true, msg);
}

void cube_key_poll(cube_client *c)
{
  int64_t now;
  sc_filesig sig;
  if(!c->key_file)
    return;
  now = sctime_mono_ms();
  /* at once after a 401/403 to a key, then at most once a second while
   * Cube goes on refusing the same key */
  if(c->key_recheck && (c->key_forced_gen != c->keys->gen ||
                        now - c->key_forced_ms >= CUBE_KEY_CHECK_MS)) {
    c->key_recheck = false;
    c->key_forced_ms = now;
    c->key_forced_gen = c->keys->gen;
    c->key_checked_ms = now;
    reload(c, true);
    return;
  }
  if(now - c->key_checked_ms < CUBE_KEY_CHECK_MS)
    return;
  c->key_checked_ms = now;
  sc_filesig_of(c->key_file, &sig);
  if(!sc_filesig_equal(&sig, &c->key_sig))
    reload(c, false);
}

void cube_key_answer(cube_client *c, const cube_keyset *ks, long status)
{
  if((status == 401 || status == 403) && c->key_file && ks == c->keys)
    c->key_recheck = true;
}
