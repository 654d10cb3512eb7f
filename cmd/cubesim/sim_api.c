/* sim_api.c - the E2B / Cube sandbox API handlers (see sim_server.h). */
#include "cmd/cubesim/sim_server.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/cubesim/sim_json.h"
#include "cmd/cubesim/sim_query.h"
#include "api/rules.h"

#define SIM_ENVD_VERSION "0.4.2"
#define SIM_CLIENT_ID "cubesim"
#define SIM_DOMAIN "cubesim.local"
#define SIM_CPU_COUNT 2
#define SIM_MEMORY_MB 512
#define SIM_DISK_MB 1024
#define SIM_MAX_META 256
/* what Cube shows an E2B SDK for a sandbox that never times out */
#define SIM_FOREVER ((sc_time)253402300799000LL)

static int is_cube(const sim_req *r)
{
  return sim_state_dialect(r->srv->state) == SIM_DIALECT_CUBE;
}

/* a field, or NULL when absent or JSON null */
static json_object *field(json_object *o, const char *name)
{
  json_object *v = NULL;
  if(!o || !json_object_object_get_ex(o, name, &v))
    return NULL;
  return v;
}

/* an integer field in [lo, hi]; 1 present, 0 absent, -1 replied 400 */
static int int_field(sim_req *r, json_object *o, const char *name, int64_t lo,
                     int64_t hi, int32_t *out)
{
  json_object *v = field(o, name);
  int64_t x;
  if(!v)
    return 0;
  if(!json_object_is_type(v, json_type_int)) {
    sim_reply_error(r, 400, "field '%s' must be an integer", name);
    return -1;
  }
  errno = 0;
  x = json_object_get_int64(v);
  if(errno || x < lo || x > hi || (x == INT64_MAX &&
                                   json_object_get_uint64(v) > INT64_MAX)) {
    sim_reply_error(r, 400, "field '%s' must be between %" PRId64 " and %"
                    PRId64, name, lo, hi);
    return -1;
  }
  *out = (int32_t)x;
  return 1;
}

/* a boolean field; 1 present, 0 absent, -1 replied 400 */
static int bool_field(sim_req *r, json_object *o, const char *name,
                      const char *shown, int *out)
{
  json_object *v = field(o, name);
  if(!v)
    return 0;
  if(!json_object_is_type(v, json_type_boolean)) {
    sim_reply_error(r, 400, "field '%s' must be a boolean", shown);
    return -1;
  }
  *out = json_object_get_boolean(v);
  return 1;
}

/* an object of strings (metadata, envVars); kv gets borrowed pointers */
static int string_map(sim_req *r, json_object *o, const char *name,
                      const char **kv, size_t max, size_t *n)
{
  json_object *v = field(o, name);
  *n = 0;
  if(!v)
    return 0;
  if(!json_object_is_type(v, json_type_object)) {
    sim_reply_error(r, 400, "field '%s' must be an object of strings", name);
    return -1;
  }
  json_object_object_foreach(v, key, val) {
    if(!json_object_is_type(val, json_type_string)) {
      sim_reply_error(r, 400, "field '%s.%s' must be a string", name, key);
      return -1;
    }
    if(kv) {
      if(*n >= max) {
        sim_reply_error(r, 400, "field '%s' has more than %zu keys", name, max);
        return -1;
      }
      kv[2 * *n] = key;
      kv[2 * *n + 1] = json_object_get_string(val);
    }
    (*n)++;
  }
  return 1;
}

static int64_t timeout_min(const sim_req *r)
{
  return is_cube(r) ? -1 : 0;
}

int sim_write_sandbox(sim_req *r, const sim_sandbox *sb)
{
  sim_jw w;
  dynbuf_reset(&r->out);
  sim_jw_init(&w, &r->out);
  sim_jw_obj_open(&w);
  sim_jw_kstr(&w, "templateID", sb->template_id);
  sim_jw_kstr(&w, "sandboxID", sb->id);
  sim_jw_kstr(&w, "clientID", SIM_CLIENT_ID);
  sim_jw_kstr(&w, "envdVersion", SIM_ENVD_VERSION);
  sim_jw_kstr(&w, "domain", SIM_DOMAIN);
  sim_jw_obj_close(&w);
  if(w.err) {
    sim_reply_error(r, 500, "out of memory");
    return -1;
  }
  return 0;
}

void sim_api_health(sim_req *r)
{
  sim_reply_empty(r, 204);
}

/* ---- the network policy, volume mounts and host mounts of a create ----
 * Kept as given (JSON text) and shown again; refused as the real service
 * refuses: wrong types, a host name in denyOut, a host name in allowOut
 * while egress is open (neither denyOut 0.0.0.0/0 nor
 * allow_internet_access false), a volume name given twice; and, in the
 * Cube dialect, a host-mount value that is not a list of {hostPath,
 * mountPath} or names a hostPath outside --host-mount-allow. */

typedef struct sim_extra {
  int internet;        /* -1 absent */
  char *network_json;  /* malloc'd */
  char *volumes_json;
} sim_extra;

static char *json_text(json_object *v)
{
  return strdup(json_object_to_json_string_ext(
    v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* field name of o an array of strings; 1 present, 0 absent, -1 replied */
static int str_list(sim_req *r, json_object *o, const char *name,
                    json_object **out)
{
  json_object *v = field(o, name);
  size_t i;
  *out = v;
  if(!v)
    return 0;
  if(!json_object_is_type(v, json_type_array)) {
    sim_reply_error(r, 400, "field 'network.%s' must be an array of strings",
                    name);
    return -1;
  }
  for(i = 0; i < json_object_array_length(v); i++)
    if(!json_object_is_type(json_object_array_get_idx(v, i),
                            json_type_string)) {
      sim_reply_error(r, 400, "field 'network.%s[%zu]' must be a string",
                      name, i);
      return -1;
    }
  return 1;
}

static int net_fields(sim_req *r, json_object *o, sim_extra *x)
{
  json_object *net = field(o, "network"), *allow = NULL, *deny = NULL;
  int b = 0, rc, deny_all = 0;
  size_t i;
  x->internet = -1;
  rc = bool_field(r, o, "allow_internet_access", "allow_internet_access", &b);
  if(rc < 0)
    return -1;
  if(rc)
    x->internet = b;
  if(!net)
    return 0;
  if(!json_object_is_type(net, json_type_object)) {
    sim_reply_error(r, 400, "field 'network' must be an object");
    return -1;
  }
  if(str_list(r, net, "allowOut", &allow) < 0 ||
     str_list(r, net, "denyOut", &deny) < 0 ||
     bool_field(r, net, "allowPublicTraffic", "network.allowPublicTraffic",
                &b) < 0)
    return -1;
  for(i = 0; deny && i < json_object_array_length(deny); i++) {
    const char *s = json_object_get_string(json_object_array_get_idx(deny, i));
    if(!rule_is_address(s, strlen(s))) {
      sim_reply_error(r, 400, "invalid denied CIDR %s: domain names are not "
                      "supported for deny rules", s);
      return -1;
    }
    if(!strcmp(s, "0.0.0.0/0"))
      deny_all = 1;
  }
  for(i = 0; allow && i < json_object_array_length(allow); i++) {
    const char *s =
      json_object_get_string(json_object_array_get_idx(allow, i));
    if(rule_is_address(s, strlen(s)))
      continue;
    if(!rule_host_name(s, strlen(s))) {
      sim_reply_error(r, 400, "invalid allowed destination %s: not a CIDR, "
                      "an IP address or a domain", s);
      return -1;
    }
    if(!deny_all && x->internet != 0) {
      sim_reply_error(r, 400, "allowed domain %s requires all other egress "
                      "to be denied: add 0.0.0.0/0 to denyOut or set "
                      "allow_internet_access to false", s);
      return -1;
    }
  }
  if(!(x->network_json = json_text(net))) {
    sim_reply_error(r, 500, "out of memory");
    return -1;
  }
  return 1;
}

static int volume_fields(sim_req *r, json_object *o, sim_extra *x)
{
  json_object *v = field(o, "volumeMounts");
  size_t i, j, n;
  if(!v)
    return 0;
  if(!json_object_is_type(v, json_type_array)) {
    sim_reply_error(r, 400, "field 'volumeMounts' must be an array");
    return -1;
  }
  n = json_object_array_length(v);
  for(i = 0; i < n; i++) {
    json_object *m = json_object_array_get_idx(v, i), *nm, *p, *ro;
    if(!json_object_is_type(m, json_type_object) ||
       !(nm = field(m, "name")) || !json_object_is_type(nm, json_type_string) ||
       !json_object_get_string_len(nm) || !(p = field(m, "path")) ||
       !json_object_is_type(p, json_type_string) ||
       json_object_get_string(p)[0] != '/') {
      sim_reply_error(r, 400, "field 'volumeMounts[%zu]' must be an object "
                      "with a non-empty name and an absolute path", i);
      return -1;
    }
    if((ro = field(m, "readOnly")) &&
       !json_object_is_type(ro, json_type_boolean)) {
      sim_reply_error(r, 400, "field 'volumeMounts[%zu].readOnly' must be a "
                      "boolean", i);
      return -1;
    }
    for(j = 0; j < i; j++) {
      json_object *other = field(json_object_array_get_idx(v, j), "name");
      if(!strcmp(json_object_get_string(other), json_object_get_string(nm))) {
        sim_reply_error(r, 400, "duplicate volume name %s in volumeMounts",
                        json_object_get_string(nm));
        return -1;
      }
    }
  }
  if(!(x->volumes_json = json_text(v))) {
    sim_reply_error(r, 500, "out of memory");
    return -1;
  }
  return 1;
}

/* hostPath under one of the comma-separated prefixes (a whole component) */
static int host_path_allowed(const char *allow, const char *path)
{
  const char *p = allow;
  if(!allow)
    return 1;
  while(*p) {
    size_t n = strcspn(p, ",");
    while(n > 1 && p[n - 1] == '/')
      n--;
    if(n && !strncmp(path, p, n) && (path[n] == '/' || !path[n]))
      return 1;
    p += strcspn(p, ",");
    if(*p == ',')
      p++;
  }
  return 0;
}

/* Cube: metadata host-mount, a JSON list of {hostPath, mountPath,
 * readOnly?}; 0 fine, -1 replied */
static int host_mount(sim_req *r, const char *v)
{
  json_object *a = NULL;
  size_t i;
  int rc = -1;
  if(sim_json_parse(v, strlen(v), &a, NULL) ||
     !json_object_is_type(a, json_type_array)) {
    sim_reply_error(r, 400, "metadata host-mount must be a JSON array of "
                    "{\"hostPath\", \"mountPath\"}");
    goto out;
  }
  for(i = 0; i < json_object_array_length(a); i++) {
    json_object *m = json_object_array_get_idx(a, i), *hp, *mp;
    if(!json_object_is_type(m, json_type_object) ||
       !(hp = field(m, "hostPath")) ||
       !json_object_is_type(hp, json_type_string) ||
       json_object_get_string(hp)[0] != '/' || !(mp = field(m, "mountPath")) ||
       !json_object_is_type(mp, json_type_string) ||
       json_object_get_string(mp)[0] != '/') {
      sim_reply_error(r, 400, "metadata host-mount[%zu] must have an "
                      "absolute hostPath and mountPath", i);
      goto out;
    }
    if(!host_path_allowed(r->srv->host_mount_allow,
                          json_object_get_string(hp))) {
      sim_reply_error(r, 400, "host-mount hostPath %s is not in the host "
                      "mount allowlist", json_object_get_string(hp));
      goto out;
    }
  }
  rc = 0;
out:
  json_object_put(a);
  return rc;
}

void sim_api_create(sim_req *r)
{
  json_object *o = NULL, *tmpl, *lc, *ar;
  const char *kv[2 * SIM_MAX_META];
  size_t nmeta = 0, nenv = 0;
  sim_create_req cr;
  sim_extra x = {-1, NULL, NULL};
  size_t i;
  sim_sandbox *sb;
  sim_result res;
  int rc;

  memset(&cr, 0, sizeof(cr));
  if(sim_req_json(r, 0, &o))
    return;
  tmpl = field(o, "templateID");
  if(!tmpl) {
    sim_reply_error(r, 400, "field 'templateID' is required");
    goto out;
  }
  if(!json_object_is_type(tmpl, json_type_string) ||
     !json_object_get_string_len(tmpl)) {
    sim_reply_error(r, 400, "field 'templateID' must be a non-empty string");
    goto out;
  }
  cr.template_id = json_object_get_string(tmpl);
  rc = int_field(r, o, "timeout", timeout_min(r), INT32_MAX, &cr.timeout_s);
  if(rc < 0)
    goto out;
  cr.has_timeout = rc;
  if(string_map(r, o, "metadata", kv, SIM_MAX_META, &nmeta) < 0 ||
     string_map(r, o, "envVars", NULL, 0, &nenv) < 0)
    goto out;
  cr.meta = kv;
  cr.meta_count = nmeta;
  if(net_fields(r, o, &x) < 0 || volume_fields(r, o, &x) < 0)
    goto out;
  for(i = 0; is_cube(r) && i < nmeta; i++)
    if(!strcmp(kv[2 * i], "host-mount") && host_mount(r, kv[2 * i + 1]) < 0)
      goto out;
  cr.internet = x.internet;
  cr.network_json = x.network_json;
  cr.volumes_json = x.volumes_json;
  if(bool_field(r, o, "autoPause", "autoPause", &cr.auto_pause) < 0)
    goto out;
  ar = field(o, "autoResume");
  if(ar) {
    if(json_object_is_type(ar, json_type_boolean))
      cr.auto_resume = json_object_get_boolean(ar);
    else if(!json_object_is_type(ar, json_type_object)) {
      sim_reply_error(r, 400, "field 'autoResume' must be an object"
                      " {\"enabled\": boolean}");
      goto out;
    }
    else if(bool_field(r, ar, "enabled", "autoResume.enabled",
                       &cr.auto_resume) < 0)
      goto out;
  }
  lc = is_cube(r) ? field(o, "lifecycle") : NULL;
  if(lc) {
    json_object *ot, *lar;
    if(!json_object_is_type(lc, json_type_object)) {
      sim_reply_error(r, 400, "field 'lifecycle' must be an object");
      goto out;
    }
    ot = field(lc, "onTimeout");
    if(!ot)
      ot = field(lc, "on_timeout");
    if(ot) {
      const char *v = json_object_is_type(ot, json_type_string) ?
                      json_object_get_string(ot) : NULL;
      if(v && !strcmp(v, "pause"))
        cr.auto_pause = 1;
      else if(v && !strcmp(v, "kill"))
        cr.auto_pause = 0;
      else {
        sim_reply_error(r, 400, "field 'lifecycle.onTimeout' must be \"pause\""
                        " or \"kill\"");
        goto out;
      }
    }
    lar = field(lc, "autoResume");
    if(!lar)
      lar = field(lc, "auto_resume");
    if(lar) {
      if(json_object_is_type(lar, json_type_boolean))
        cr.auto_resume = json_object_get_boolean(lar);
      else if(json_object_is_type(lar, json_type_object)) {
        if(bool_field(r, lar, "enabled", "lifecycle.autoResume.enabled",
                      &cr.auto_resume) < 0)
          goto out;
      }
      else {
        sim_reply_error(r, 400, "field 'lifecycle.autoResume' must be a"
                        " boolean");
        goto out;
      }
    }
  }
  res = sim_state_create(r->srv->state, r->now, &cr, r->plan.capacity, &sb);
  if(res == SIM_R_CAPACITY) {
    if(is_cube(r))
      sim_reply_error(r, 409, "sandbox capacity reached: %zu live sandboxes",
                      sim_state_live(r->srv->state));
    else
      sim_reply_error(r, 429, "sandbox capacity reached: %zu live sandboxes",
                      sim_state_live(r->srv->state));
    goto out;
  }
  if(res != SIM_R_OK) {
    sim_reply_error(r, 500, "out of memory creating the sandbox");
    goto out;
  }
  sim_audit_after(r, sb);
  if(!sim_write_sandbox(r, sb))
    sim_reply_json(r, 201);
out:
  json_object_put(o);
  free(x.network_json);
  free(x.volumes_json);
}

/* ---- list ---- */

static void write_end_at(sim_req *r, sim_jw *w, const sim_sandbox *sb,
                         int e2b_ua)
{
  sc_time e = sim_sandbox_end_at(r->srv->state, sb);
  if(!e) {
    if(!e2b_ua)
      return; /* cube omits endAt for a sandbox that never times out */
    e = SIM_FOREVER;
  }
  sim_jw_ktime(w, "endAt", e);
}

static void write_meta(sim_jw *w, const sim_sandbox *sb)
{
  const char *p = sb->meta;
  uint32_t i;
  sim_jw_key(w, "metadata");
  sim_jw_obj_open(w);
  for(i = 0; p && i < sb->meta_count; i++) {
    const char *v = p + strlen(p) + 1;
    sim_jw_kstr(w, p, v);
    p = v + strlen(v) + 1;
  }
  sim_jw_obj_close(w);
}

static int e2b_agent(const sim_req *r)
{
  const char *ua = r->user_agent;
  size_t i;
  if(!ua)
    return 0;
  for(i = 0; ua[i] && ua[i + 1] && ua[i + 2]; i++)
    if(tolower((unsigned char)ua[i]) == 'e' && ua[i + 1] == '2' &&
       tolower((unsigned char)ua[i + 2]) == 'b')
      return 1;
  return 0;
}

static void write_listed(sim_req *r, sim_jw *w, const sim_sandbox *sb,
                         int e2b_ua, int detail)
{
  sim_jw_obj_open(w);
  sim_jw_kstr(w, "templateID", sb->template_id);
  sim_jw_kstr(w, "sandboxID", sb->id);
  sim_jw_kstr(w, "clientID", SIM_CLIENT_ID);
  sim_jw_ktime(w, "startedAt", sb->started_at);
  write_end_at(r, w, sb, e2b_ua);
  sim_jw_kint(w, "cpuCount", SIM_CPU_COUNT);
  sim_jw_kint(w, "memoryMB", SIM_MEMORY_MB);
  sim_jw_kint(w, "diskSizeMB", SIM_DISK_MB);
  write_meta(w, sb);
  sim_jw_kstr(w, "state", sim_public_state(r->srv->state, sb));
  sim_jw_kstr(w, "envdVersion", SIM_ENVD_VERSION);
  if(sb->volumes_json) {
    sim_jw_key(w, "volumeMounts");
    sim_jw_rawval(w, sb->volumes_json, strlen(sb->volumes_json));
  }
  if(detail) {
    if(sb->internet >= 0)
      sim_jw_kbool(w, "allowInternetAccess", sb->internet);
    if(sb->network_json) {
      sim_jw_key(w, "network");
      sim_jw_rawval(w, sb->network_json, strlen(sb->network_json));
    }
    sim_jw_kstr(w, "domain", SIM_DOMAIN);
    sim_jw_key(w, "lifecycle");
    sim_jw_obj_open(w);
    sim_jw_kbool(w, "autoResume", sb->auto_resume);
    sim_jw_kstr(w, "onTimeout", sb->auto_pause ? "pause" : "kill");
    sim_jw_obj_close(w);
  }
  sim_jw_obj_close(w);
}

static int meta_match(const sim_sandbox *sb, const sim_meta_filter *f)
{
  size_t i;
  for(i = 0; i < f->n; i++) {
    const char *v = sim_sandbox_meta(sb, f->kv[2 * i]);
    if(!v || strcmp(v, f->kv[2 * i + 1]))
      return 0;
  }
  return 1;
}

#define WANT_RUNNING 1
#define WANT_PAUSED 2
#define WANT_PAUSING 4   /* cube only: no state filter selects it alone */

static int parse_state_e2b(sim_req *r, const char *v, int *want)
{
  const char *p = v;
  *want = 0;
  while(*p) {
    const char *c = strchr(p, ',');
    size_t n = c ? (size_t)(c - p) : strlen(p);
    if(n == 7 && !strncmp(p, "running", 7))
      *want |= WANT_RUNNING;
    else if(n == 6 && !strncmp(p, "paused", 6))
      *want |= WANT_PAUSED;
    else {
      sim_reply_error(r, 400, "parameter 'state': invalid value '%.*s' (want"
                      " running, paused)", (int)n, p);
      return -1;
    }
    p = c ? c + 1 : p + n;
  }
  if(!*want)
    *want = WANT_RUNNING | WANT_PAUSED;
  return 0;
}

static int parse_uint_param(const char *v, int64_t lo, int64_t hi,
                            int64_t *out)
{
  char *end;
  long long x;
  if(!isdigit((unsigned char)*v))
    return -1;
  errno = 0;
  x = strtoll(v, &end, 10);
  if(errno || *end || x < lo || x > hi)
    return -1;
  *out = x;
  return 0;
}

/* The running sandboxes that match mf (the metadata filter whose query
 * text is ftext): counted once per version of the state and filter, then
 * reused for every page of a list (an e2b list of 10,000 is 100 pages). */
static size_t running_count(sim_req *r, const sim_meta_filter *mf,
                            const char *ftext)
{
  sim_server *s = r->srv;
  sim_state *st = s->state;
  uint64_t v = sim_state_version(st);
  size_t i, n = sim_state_count(st), running = 0;
  char *f;
  if(s->tr_valid && s->tr_version == v && s->tr_filter &&
     !strcmp(s->tr_filter, ftext))
    return s->tr_count;
  for(i = 0; i < n; i++) {
    const sim_sandbox *sb = sim_state_at(st, i);
    if(sb->state == SIM_RUNNING && meta_match(sb, mf))
      running++;
  }
  f = strdup(ftext);
  free(s->tr_filter);
  s->tr_filter = f;
  s->tr_valid = f != NULL;
  s->tr_version = v;
  s->tr_count = running;
  return running;
}

static void list(sim_req *r, int v2)
{
  sim_state *st = r->srv->state;
  sim_meta_filter mf = {NULL, 0};
  dynbuf param;
  sc_errbuf eb;
  sim_jw w;
  int want = WANT_RUNNING | WANT_PAUSED | WANT_PAUSING, e2b_ua = e2b_agent(r);
  int paging = v2 && !is_cube(r), asc = 0;
  int64_t limit = INT64_MAX, start = -1;
  size_t n = sim_state_count(st), rows = 0;
  int64_t i, next = -1;
  char *ftext = NULL;

  dynbuf_init(&param, 1 << 16);
  if(sim_query_get(r->query, "metadata", &param) && dynbuf_len(&param)) {
    ftext = strdup(dynbuf_ptr(&param));
    if(!ftext) {
      sim_reply_error(r, 500, "out of memory");
      goto out;
    }
    eb.msg[0] = '\0';
    if(sim_meta_filter_parse(dynbuf_ptr(&param), &mf, &eb)) {
      sim_reply_error(r, 400, "%s", eb.msg[0] ? eb.msg : "bad metadata");
      goto out;
    }
  }
  if(!v2) {
    if(!is_cube(r))
      want = WANT_RUNNING;
  }
  else if(sim_query_get(r->query, "state", &param)) {
    if(is_cube(r)) {
      if(!strcmp(dynbuf_ptr(&param), "running"))
        want = WANT_RUNNING;
      else if(!strcmp(dynbuf_ptr(&param), "paused"))
        want = WANT_PAUSED;
    }
    else if(parse_state_e2b(r, dynbuf_ptr(&param), &want))
      goto out;
  }
  if(paging) {
    limit = 100;
    if(sim_query_get(r->query, "limit", &param) &&
       parse_uint_param(dynbuf_ptr(&param), 1, 100, &limit)) {
      sim_reply_error(r, 400, "parameter 'limit' must be an integer from 1 to"
                      " 100");
      goto out;
    }
    if(sim_query_get(r->query, "order", &param)) {
      if(!strcmp(dynbuf_ptr(&param), "asc"))
        asc = 1;
      else if(strcmp(dynbuf_ptr(&param), "desc")) {
        sim_reply_error(r, 400, "parameter 'order' must be asc or desc");
        goto out;
      }
    }
    if(sim_query_get(r->query, "nextToken", &param) && dynbuf_len(&param)) {
      const char *t = dynbuf_ptr(&param);
      if(strncmp(t, "sim-", 4) ||
         parse_uint_param(t + 4, 0, (int64_t)n, &start)) {
        sim_reply_error(r, 400, "parameter 'nextToken' is not a token this"
                        " server issued");
        goto out;
      }
    }
  }
  sim_jw_init(&w, &r->out);
  sim_jw_arr_open(&w);
  if(start < 0)
    start = asc ? 0 : (int64_t)n - 1;
  for(i = start; asc ? i < (int64_t)n : i >= 0; i += asc ? 1 : -1) {
    const sim_sandbox *sb = sim_state_at(st, (size_t)i);
    /* e2b counts pausing as paused; cube's state=paused (or running)
     * does not match a pausing sandbox, which Cube reports as such */
    int bit = sb->state == SIM_RUNNING ? WANT_RUNNING :
              sb->state == SIM_PAUSING && is_cube(r) ? WANT_PAUSING :
              WANT_PAUSED;
    if(sb->state == SIM_DELETED || !(want & bit) || !meta_match(sb, &mf))
      continue;
    if((int64_t)rows == limit) {
      next = i;
      break;
    }
    if(sim_faults_drop_row(r->srv->faults, r->plan.truncate))
      continue;
    write_listed(r, &w, sb, e2b_ua, 0);
    rows++;
  }
  sim_jw_arr_close(&w);
  if(w.err) {
    sim_reply_error(r, 500, "the list is too large to send");
    goto out;
  }
  if(next >= 0) {
    char tok[32];
    snprintf(tok, sizeof(tok), "sim-%" PRId64, next);
    sim_add_header(r, "X-Next-Token", tok);
  }
  if(paging && (want & WANT_RUNNING)) {
    /* e2b: running sandboxes matching the filters, before paging (and
     * before the truncate fault, which loses rows on the way) */
    char tot[32];
    snprintf(tot, sizeof(tot), "%zu",
             running_count(r, &mf, ftext ? ftext : ""));
    sim_add_header(r, "X-Total-Running", tot);
  }
  sim_reply_json(r, 200);
out:
  free(ftext);
  sim_meta_filter_free(&mf);
  dynbuf_free(&param);
}

void sim_api_list_v1(sim_req *r)
{
  list(r, 0);
}

void sim_api_list_v2(sim_req *r)
{
  list(r, 1);
}

void sim_api_get(sim_req *r)
{
  sim_sandbox *sb = sim_req_sandbox(r);
  sim_jw w;
  if(!sb)
    return;
  dynbuf_reset(&r->out);
  sim_jw_init(&w, &r->out);
  write_listed(r, &w, sb, e2b_agent(r), 1);
  sim_reply_json(r, 200);
}

void sim_api_delete(sim_req *r)
{
  sim_sandbox *sb = sim_req_sandbox(r);
  sim_result res;
  if(!sb)
    return;
  res = sim_state_delete(r->srv->state, sb, r->now);
  sim_audit_after(r, sb);
  if(res == SIM_R_PAUSING) {
    sim_add_header(r, "Retry-After", "2");
    sim_reply_error(r, 503, "sandbox %s is pausing; retry later", sb->id);
    return;
  }
  sim_reply_empty(r, 204);
}

void sim_api_pause(sim_req *r)
{
  sim_sandbox *sb = sim_req_sandbox(r);
  json_object *o = NULL;
  sim_result res;
  if(!sb || sim_req_json(r, 1, &o))
    return;
  json_object_put(o);
  res = sim_state_pause(r->srv->state, sb, r->now);
  sim_audit_after(r, sb);
  if(res == SIM_R_ALREADY_PAUSED) {
    if(is_cube(r))
      sim_reply_error(r, 500, "sandbox is already paused");
    else
      sim_reply_error(r, 409, "sandbox %s is already paused", sb->id);
    return;
  }
  sim_reply_empty(r, 204);
}

void sim_api_resume(sim_req *r)
{
  sim_sandbox *sb = sim_req_sandbox(r);
  json_object *o = NULL;
  int32_t t = 0;
  int has, ap = 0;
  sim_result res;
  if(!sb || sim_req_json(r, 1, &o))
    return;
  has = int_field(r, o, "timeout", timeout_min(r), INT32_MAX, &t);
  if(has < 0 || bool_field(r, o, "autoPause", "autoPause", &ap) < 0)
    goto out;
  res = sim_state_resume(r->srv->state, sb, r->now, has, t);
  sim_audit_after(r, sb);
  if(res == SIM_R_ALREADY_RUNNING) {
    sim_reply_error(r, 409, "sandbox %s is already running", sb->id);
    goto out;
  }
  if(field(o, "autoPause"))
    sb->auto_pause = ap ? 1 : 0;
  if(!sim_write_sandbox(r, sb))
    sim_reply_json(r, 201);
out:
  json_object_put(o);
}

void sim_api_connect(sim_req *r)
{
  sim_sandbox *sb = sim_req_sandbox(r);
  json_object *o = NULL;
  int32_t t = 0;
  int has;
  sim_result res;
  if(!sb || sim_req_json(r, is_cube(r), &o))
    return;
  has = int_field(r, o, "timeout", timeout_min(r), INT32_MAX, &t);
  if(has < 0)
    goto out;
  if(!has && !is_cube(r)) {
    sim_reply_error(r, 400, "field 'timeout' is required");
    goto out;
  }
  res = sim_state_connect(r->srv->state, sb, r->now, has, t);
  sim_audit_after(r, sb);
  if(!sim_write_sandbox(r, sb))
    sim_reply_json(r, res == SIM_R_RESUMED && !is_cube(r) ? 201 : 200);
out:
  json_object_put(o);
}

/* The answer to a set-timeout or refresh whose outcome is res: audited,
 * then 404 when the sandbox is paused, else 204. */
static void reply_deadline(sim_req *r, sim_sandbox *sb, sim_result res)
{
  sim_audit_after(r, sb);
  if(res == SIM_R_NOT_RUNNING)
    sim_reply_error(r, 404, "sandbox %s is paused; resume it first", sb->id);
  else
    sim_reply_empty(r, 204);
}

void sim_api_timeout(sim_req *r)
{
  sim_sandbox *sb = sim_req_sandbox(r);
  json_object *o = NULL;
  int32_t t = 0;
  int has;
  if(!sb || sim_req_json(r, 0, &o))
    return;
  has = int_field(r, o, "timeout", timeout_min(r), INT32_MAX, &t);
  if(has < 0)
    goto out;
  if(!has) {
    sim_reply_error(r, 400, "field 'timeout' is required");
    goto out;
  }
  reply_deadline(r, sb, sim_state_set_timeout(r->srv->state, sb, r->now, t));
out:
  json_object_put(o);
}

void sim_api_refresh(sim_req *r)
{
  sim_sandbox *sb = sim_req_sandbox(r);
  json_object *o = NULL;
  int32_t d = 0;
  int has;
  if(!sb || sim_req_json(r, 1, &o))
    return;
  has = int_field(r, o, "duration", 0, 3600, &d);
  if(has < 0)
    goto out;
  reply_deadline(r, sb, sim_state_refresh(r->srv->state, sb, r->now, has,
                                          d));
out:
  json_object_put(o);
}
