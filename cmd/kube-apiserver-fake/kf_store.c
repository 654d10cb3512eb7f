/* kf_store.c - the fake API server's objects and revisions: the
 * resource table, object lookup, resourceVersions, the history ring that
 * watches replay from (and its compaction), and JSON helpers on objects. */
#include "cmd/kube-apiserver-fake/kf_server.h"

#include <inttypes.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/rand.h>
#include "cmd/kube-apiserver-fake/kf_crd.h"
#include "lib/sctime.h"

const kf_res kf_resources[KF_N_RES] = {
  {"lea.io", "v1alpha1", "sessions", "Session", true, true},
  {"", "v1", "events", "Event", false, true},
  {"coordination.k8s.io", "v1", "leases", "Lease", false, true},
  {"apiextensions.k8s.io", "v1", "customresourcedefinitions",
   "CustomResourceDefinition", true, false},
};

json_object *kf_meta_of(json_object *o)
{
  json_object *m = kf_jobj(o, "metadata");
  if(!m) {
    m = json_object_new_object();
    json_object_object_add(o, "metadata", m);
  }
  return m;
}

void kf_now_rfc3339(char *buf, size_t len)
{
  sctime_format_rfc3339(sctime_wall_ms() / 1000 * 1000, buf, len);
}

void kf_new_uid(char *buf, size_t len)
{
  unsigned char b[16];
  if(RAND_bytes(b, sizeof(b)) != 1)
    memset(b, 7, sizeof(b));
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
  snprintf(buf, len, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
           "%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5],
           b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

bool kf_has_finalizers(json_object *o)
{
  json_object *f;
  return json_object_object_get_ex(kf_meta_of(o), "finalizers", &f) &&
         json_object_is_type(f, json_type_array) &&
         json_object_array_length(f) > 0;
}

kf_obj *kf_find_obj(kf_server *s, int res, const char *ns,
                    const char *name)
{
  size_t i;
  for(i = 0; i < s->n_objs; i++)
    if(s->objs[i].res == res && !strcmp(s->objs[i].ns, ns) &&
       !strcmp(s->objs[i].name, name))
      return &s->objs[i];
  return NULL;
}

void kf_remove_obj(kf_server *s, kf_obj *ob)
{
  size_t i = (size_t)(ob - s->objs);
  free(ob->ns);
  free(ob->name);
  json_object_put(ob->o);
  memmove(&s->objs[i], &s->objs[i + 1],
          (s->n_objs - i - 1) * sizeof(*s->objs));
  s->n_objs--;
}

void kf_bump_and_record(kf_server *s, kf_obj *ob, const char *type)
{
  char rv[32];
  kf_hist *h;
  size_t keep = (size_t)s->o.history_keep;
  kf_watch *w;
  const char *txt;
  s->rv++;
  snprintf(rv, sizeof(rv), "%" PRId64, s->rv);
  kf_set_str(kf_meta_of(ob->o), "resourceVersion", rv);
  txt = json_object_to_json_string_ext(ob->o, JSON_C_TO_STRING_PLAIN);
  if(s->hist_n == keep) {
    h = &s->hist[s->hist_start];
    s->compacted = h->rv;
    free(h->ns);
    free(h->json);
    s->hist_start = (s->hist_start + 1) % keep;
    s->hist_n--;
  }
  h = &s->hist[(s->hist_start + s->hist_n) % keep];
  s->hist_n++;
  h->rv = s->rv;
  h->res = ob->res;
  h->ns = strdup(ob->ns);
  h->type = type;
  h->json = strdup(txt);
  for(w = s->watches; w; w = w->next)
    if(w->res == ob->res && (!w->ns || !strcmp(w->ns, ob->ns))) {
      kf_watch_send_obj(w, type, ob->o, txt);
      w->sent_rv = s->rv;
    }
}

/* the stored sessions.lea.io CRD (borrowed) or NULL */
void kf_store_compact(kf_server *s)
{
  size_t keep = (size_t)s->o.history_keep;
  while(s->hist_n) {
    kf_hist *h = &s->hist[s->hist_start];
    free(h->ns);
    free(h->json);
    s->hist_start = (s->hist_start + 1) % keep;
    s->hist_n--;
  }
  s->compacted = s->rv;
}

void kf_store_free(kf_server *s)
{
  size_t i;
  for(i = 0; i < s->n_objs; i++) {
    free(s->objs[i].ns);
    free(s->objs[i].name);
    json_object_put(s->objs[i].o);
  }
  free(s->objs);
  s->objs = NULL;
  s->n_objs = s->cap_objs = 0;
  if(s->hist)
    for(i = 0; i < s->hist_n; i++) {
      kf_hist *h = &s->hist[(s->hist_start + i) % (size_t)s->o.history_keep];
      free(h->ns);
      free(h->json);
    }
  free(s->hist);
  s->hist = NULL;
  s->hist_n = 0;
}

json_object *kf_sessions_crd(kf_server *s)
{
  kf_obj *ob = kf_find_obj(s, KF_RES_CRDS, "", KF_CRD_NAME);
  return ob ? ob->o : NULL;
}

bool kf_parse_rv(const char *s, int64_t *out)
{
  char *end;
  long long v;
  errno = 0;
  v = strtoll(s, &end, 10);
  if(errno || *end || end == s || v < 0)
    return false;
  *out = v;
  return true;
}
