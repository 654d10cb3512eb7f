/* sim_admin.c - the /_sim/ admin API: clock, truth, traffic, audit, faults,
 * reset (see sim_server.h and docs/cubesim.md). Never behind auth. */
#include "cmd/cubesim/sim_server.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/cubesim/sim_json.h"
#include "cmd/cubesim/sim_query.h"

static void write_now(sim_req *r, size_t fired)
{
  sim_jw w;
  dynbuf_reset(&r->out);
  sim_jw_init(&w, &r->out);
  sim_jw_obj_open(&w);
  sim_jw_ktime(&w, "now", r->now);
  sim_jw_kint(&w, "nowMs", r->now);
  sim_jw_key(&w, "speed");
  sim_jw_double(&w, r->srv->clock.speed);
  sim_jw_kint(&w, "fired", (int64_t)fired);
  sim_jw_obj_close(&w);
  sim_reply_json(r, 200);
}

void sim_admin_clock_get(sim_req *r)
{
  write_now(r, 0);
}

void sim_admin_clock_post(sim_req *r)
{
  json_object *o = NULL, *adv;
  double secs;
  size_t fired;
  if(sim_req_json(r, 0, &o))
    return;
  adv = NULL;
  json_object_object_get_ex(o, "advance", &adv);
  if(!adv || !(json_object_is_type(adv, json_type_int) ||
               json_object_is_type(adv, json_type_double))) {
    sim_reply_error(r, 400, "field 'advance' (seconds, a number >= 0) is"
                    " required");
    goto out;
  }
  secs = json_object_get_double(adv);
  if(!(secs >= 0 && secs <= 100.0 * 365 * 86400)) {
    sim_reply_error(r, 400, "field 'advance' must be between 0 and 100 years"
                    " of seconds");
    goto out;
  }
  sim_clock_advance(&r->srv->clock, (int64_t)llround(secs * 1000.0));
  r->now = sim_clock_now(&r->srv->clock);
  fired = sim_state_advance(r->srv->state, r->now);
  write_now(r, fired);
out:
  json_object_put(o);
}

static const char *reason_name(int why)
{
  switch(why) {
  case SIM_DEL_API: return "api";
  case SIM_DEL_TIMEOUT: return "timeout";
  default: return NULL;
  }
}

/* a metadata value the sandbox was created with (kept or lost), or NULL */
static const char *created_meta(const sim_sandbox *sb, const char *key)
{
  const char *p = sb->meta;
  uint32_t k, n = sb->meta_count;
  int pass;
  for(pass = 0; pass < 2; pass++) {
    for(k = 0; p && k < n; k++) {
      const char *v = p + strlen(p) + 1;
      if(!strcmp(p, key))
        return v;
      p = v + strlen(v) + 1;
    }
    p = sb->lost_meta;
    n = sb->lost_meta_count;
  }
  return NULL;
}

void sim_admin_sandboxes(sim_req *r)
{
  sim_state *st = r->srv->state;
  size_t i, n = sim_state_count(st);
  sim_jw w;
  dynbuf_reset(&r->out);
  sim_jw_init(&w, &r->out);
  sim_jw_arr_open(&w);
  for(i = 0; i < n && !w.err; i++) {
    const sim_sandbox *sb = sim_state_at(st, i);
    const char *p = sb->meta;
    uint32_t k;
    sim_jw_obj_open(&w);
    sim_jw_kstr(&w, "sandboxID", sb->id);
    sim_jw_kstr(&w, "templateID", sb->template_id);
    sim_jw_kstr(&w, "state", sim_state_name((sim_sbx_state)sb->state));
    sim_jw_key(&w, "metadata");
    sim_jw_obj_open(&w);
    for(k = 0; p && k < sb->meta_count; k++) {
      const char *v = p + strlen(p) + 1;
      sim_jw_kstr(&w, p, v);
      p = v + strlen(v) + 1;
    }
    sim_jw_obj_close(&w);
    /* what a droplabels fault took (null when nothing was lost): the
     * tags a sandbox was created with are metadata + lostMetadata */
    sim_jw_key(&w, "lostMetadata");
    if(sb->lost_meta) {
      p = sb->lost_meta;
      sim_jw_obj_open(&w);
      for(k = 0; k < sb->lost_meta_count; k++) {
        const char *v = p + strlen(p) + 1;
        sim_jw_kstr(&w, p, v);
        p = v + strlen(v) + 1;
      }
      sim_jw_obj_close(&w);
    }
    else
      sim_jw_null(&w);
    sim_jw_ktime(&w, "createdAt", sb->created_at);
    sim_jw_ktime(&w, "startedAt", sb->started_at);
    sim_jw_ktime(&w, "endAt", sim_sandbox_end_at(st, sb));
    sim_jw_ktime(&w, "lastActivity", sb->last_activity);
    sim_jw_ktime(&w, "pausedAt", sb->paused_at);
    sim_jw_ktime(&w, "deletedAt", sb->deleted_at);
    sim_jw_kstr(&w, "deleteReason", reason_name(sb->delete_reason));
    sim_jw_kbool(&w, "autoPause", sb->auto_pause);
    sim_jw_kbool(&w, "autoResume", sb->auto_resume);
    sim_jw_kint(&w, "timeout", sb->timeout_s);
    /* what the create carried under the wire names (null: absent) */
    sim_jw_key(&w, "create");
    sim_jw_obj_open(&w);
    sim_jw_key(&w, "allow_internet_access");
    if(sb->internet >= 0)
      sim_jw_bool(&w, sb->internet);
    else
      sim_jw_null(&w);
    sim_jw_key(&w, "network");
    if(sb->network_json)
      sim_jw_rawval(&w, sb->network_json, strlen(sb->network_json));
    else
      sim_jw_null(&w);
    sim_jw_key(&w, "volumeMounts");
    if(sb->volumes_json)
      sim_jw_rawval(&w, sb->volumes_json, strlen(sb->volumes_json));
    else
      sim_jw_null(&w);
    sim_jw_kstr(&w, "host-mount", created_meta(sb, "host-mount"));
    sim_jw_obj_close(&w);
    sim_jw_obj_close(&w);
  }
  sim_jw_arr_close(&w);
  if(w.err) {
    sim_reply_error(r, 500, "the sandbox list is too large to send");
    return;
  }
  sim_reply_json(r, 200);
}

void sim_admin_traffic(sim_req *r)
{
  sim_sandbox *sb = r->id_too_long ? NULL :
                    sim_state_find(r->srv->state, r->id);
  sim_result res;
  sim_jw w;
  if(!sb) {
    sim_reply_error(r, 404, "sandbox \"%s\" not found", r->id);
    return;
  }
  sim_audit_before(r, sb);
  res = sim_state_traffic(r->srv->state, sb, r->now);
  sim_audit_after(r, sb);
  switch(res) {
  case SIM_R_GONE:
    sim_reply_error(r, 410, "sandbox %s was deleted", sb->id);
    return;
  case SIM_R_NO_AUTORESUME:
    /* it stays paused; E2B's edge answers 502 for a paused sandbox it
     * will not resume, Cube's proxy 503 */
    if(sim_state_dialect(r->srv->state) == SIM_DIALECT_E2B)
      sim_reply_error(r, 502, "sandbox %s is paused and auto-resume is off",
                      sb->id);
    else
      sim_reply_error(r, 503, "sandbox %s is paused and does not "
                      "auto-resume", sb->id);
    return;
  default:
    break;
  }
  if(res == SIM_R_RESUMED)
    r->event = "auto-resume";
  dynbuf_reset(&r->out);
  sim_jw_init(&w, &r->out);
  sim_jw_obj_open(&w);
  sim_jw_kstr(&w, "sandboxID", sb->id);
  sim_jw_kstr(&w, "state", sim_state_name((sim_sbx_state)sb->state));
  sim_jw_kbool(&w, "resumed", res == SIM_R_RESUMED);
  sim_jw_obj_close(&w);
  sim_reply_json(r, 200);
}

void sim_admin_audit(sim_req *r)
{
  dynbuf p;
  uint64_t since = 0;
  dynbuf_init(&p, 64);
  if(sim_query_get(r->query, "since", &p)) {
    char *end;
    unsigned long long v;
    errno = 0;
    v = strtoull(dynbuf_ptr(&p), &end, 10);
    if(errno || *end || !dynbuf_len(&p) || dynbuf_ptr(&p)[0] == '-') {
      dynbuf_free(&p);
      sim_reply_error(r, 400, "parameter 'since' must be a sequence number");
      return;
    }
    since = v;
  }
  dynbuf_free(&p);
  dynbuf_reset(&r->out);
  if(sim_audit_since(r->srv->audit, since, &r->out)) {
    sim_reply_error(r, 500, "the audit trail is too large to send");
    return;
  }
  r->status = 200;
  r->content_type = "application/x-ndjson";
}

void sim_admin_faults_get(sim_req *r)
{
  sim_jw w;
  dynbuf_reset(&r->out);
  sim_jw_init(&w, &r->out);
  sim_jw_obj_open(&w);
  sim_jw_kstr(&w, "spec", sim_faults_spec(r->srv->faults));
  sim_jw_kint(&w, "rules", (int64_t)sim_faults_count(r->srv->faults));
  sim_jw_kint(&w, "seed", (int64_t)r->srv->seed);
  sim_jw_obj_close(&w);
  sim_reply_json(r, 200);
}

/* the public API's requests by operation since start (or /_sim/reset) */
void sim_admin_stats(sim_req *r)
{
  sim_jw w;
  uint64_t total = 0;
  int i;
  dynbuf_reset(&r->out);
  sim_jw_init(&w, &r->out);
  sim_jw_obj_open(&w);
  sim_jw_key(&w, "requests");
  sim_jw_obj_open(&w);
  for(i = 1; i < SIM_OP__COUNT; i++) {
    if(i == SIM_OP_TRAFFIC)
      continue;
    sim_jw_kint(&w, sim_op_name((sim_op)i), (int64_t)r->srv->op_calls[i]);
    total += r->srv->op_calls[i];
  }
  sim_jw_obj_close(&w);
  sim_jw_kint(&w, "total", (int64_t)total);
  sim_jw_obj_close(&w);
  sim_reply_json(r, 200);
}

void sim_admin_faults_post(sim_req *r)
{
  json_object *o = NULL;
  const char *spec;
  char *raw = NULL;
  sim_faults *nf = NULL;
  sc_errbuf eb;
  uint64_t seed = r->srv->seed;
  const char *b = dynbuf_ptr(&r->body);

  while(*b == ' ' || *b == '\n' || *b == '\r' || *b == '\t')
    b++;
  if(*b == '{') {
    json_object *v = NULL;
    if(sim_req_json(r, 0, &o))
      return;
    if(!json_object_object_get_ex(o, "spec", &v) ||
       !json_object_is_type(v, json_type_string)) {
      sim_reply_error(r, 400, "field 'spec' (a fault spec string) is required");
      goto out;
    }
    spec = json_object_get_string(v);
    if(json_object_object_get_ex(o, "seed", &v)) {
      if(!json_object_is_type(v, json_type_int) ||
         json_object_get_int64(v) < 0) {
        sim_reply_error(r, 400, "field 'seed' must be a non-negative integer");
        goto out;
      }
      seed = (uint64_t)json_object_get_int64(v);
    }
  }
  else {
    raw = strdup(b);
    if(!raw) {
      sim_reply_error(r, 500, "out of memory");
      goto out;
    }
    spec = raw;
  }
  eb.msg[0] = '\0';
  if(sim_faults_parse(spec, seed, &nf, &eb)) {
    sim_reply_error(r, 400, "%s", eb.msg[0] ? eb.msg : "bad fault spec");
    goto out;
  }
  sim_faults_free(r->srv->faults);
  r->srv->faults = nf;
  sim_admin_faults_get(r);
out:
  free(raw);
  json_object_put(o);
}

void sim_admin_reset(sim_req *r)
{
  sim_server *s = r->srv;
  sim_faults *nf = NULL;
  sim_state_reset(s->state);
  sim_audit_reset(s->audit);
  memset(s->op_calls, 0, sizeof(s->op_calls));
  if(!sim_faults_parse(s->faults_cli, s->seed, &nf, NULL)) {
    sim_faults_free(s->faults);
    s->faults = nf;
  }
  sim_reply_empty(r, 204);
}

/* POST /_sim/key {"apiKey": "NEW"}: from now on only NEW is accepted (a
 * key rotated at Cube); {"apiKey": null} turns auth off. Requests already
 * answered are not judged again. */
void sim_admin_key(sim_req *r)
{
  sim_server *s = r->srv;
  json_object *o = NULL, *v = NULL;
  const char *k;
  char *nk = NULL;
  size_t i;
  if(sim_req_json(r, 0, &o))
    return;
  if(!json_object_object_get_ex(o, "apiKey", &v)) {
    sim_reply_error(r, 400, "field 'apiKey' (a string, or null for no auth)"
                    " is required");
    goto out;
  }
  if(v) {
    if(!json_object_is_type(v, json_type_string) ||
       !*(k = json_object_get_string(v))) {
      sim_reply_error(r, 400, "field 'apiKey' must be a non-empty string or"
                      " null");
      goto out;
    }
    for(i = 0; k[i]; i++)
      if((unsigned char)k[i] < 0x20 || k[i] == 0x7f) {
        sim_reply_error(r, 400, "field 'apiKey' has a control character");
        goto out;
      }
    nk = strdup(k);
    if(!nk) {
      sim_reply_error(r, 500, "out of memory");
      goto out;
    }
  }
  free(s->api_key);
  s->api_key = nk;
  sim_reply_empty(r, 204);
out:
  json_object_put(o);
}
