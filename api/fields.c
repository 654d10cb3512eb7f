/*
 * fields.c - the Session's field table (fields.h) and the walks every
 * reader shares over it: free, copy, compare, "is it set".
 *
 * Row order is the order of the JSON encoding and of validation errors.
 */
#include "api/fields.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/scstr.h"

_Static_assert(sizeof(session_state) == sizeof(int), "enums read as int");
_Static_assert(sizeof(session_phase) == sizeof(int), "enums read as int");

static const char *const cond_status_names[] = {"True", "False", "Unknown",
                                                NULL};

#define NAME_MAX_LEN 63   /* a DNS-1123 label */
#define ID_MAX_LEN 128    /* IDs, keys, names */
#define VALUE_MAX_LEN 4096 /* map values */
#define DURATION_TEXT_MAX 64 /* the CRD's cap on a duration's text */

#define N_(a) (sizeof(a) / sizeof((a)[0]))
#define ROW(T, m) .off = offsetof(T, m)

#define DNS_LABEL {SR_DNS_LABEL, NAME_MAX_LEN, NULL, NULL}
#define ID_RULE(what) {SR_CHARSET, ID_MAX_LEN, "._-", what}
#define TEXT_VALUE {SR_TEXT, VALUE_MAX_LEN, NULL, NULL}
#define ANY(max) {SR_ANY, max, NULL, NULL}

/* ------------------------------------------------------------ metadata */
#define M(m) ROW(session_metadata, m)
static const sf_field meta_rows[] = {
  {.name = "name", .type = SF_STR, .flags = SF_REQUIRED, M(name),
   .val = DNS_LABEL},
  {.name = "namespace", .type = SF_STR, M(namespace_), .val = DNS_LABEL},
  {.name = "uid", .type = SF_STR, .flags = SF_STORE, M(uid)},
  {.name = "resourceVersion", .type = SF_STR, .flags = SF_STORE,
   M(resource_version)},
  {.name = "generation", .type = SF_INT, .flags = SF_STORE, M(generation)},
  {.name = "creationTimestamp", .type = SF_TIME, .flags = SF_STORE,
   M(creation_timestamp)},
  {.name = "deletionTimestamp", .type = SF_TIME, .flags = SF_STORE,
   M(deletion_timestamp)},
  /* labels and annotations: any string from a store (the controller uses
   * neither; an API server takes any), kubectl's rules in manifests */
  {.name = "labels", .type = SF_MAP,
   .flags = SF_MANIFEST_ONLY | SF_LENIENT, M(labels),
   .key = {SR_QUALIFIED, 0, NULL, NULL}, .val = ID_RULE("label value")},
  {.name = "annotations", .type = SF_MAP,
   .flags = SF_MANIFEST_ONLY | SF_LENIENT, M(annotations),
   .key = {SR_QUALIFIED, 0, NULL, NULL},
   .val = {SR_NO_NUL, VALUE_MAX_LEN, NULL, NULL}},
  {.name = "finalizers", .type = SF_STRLIST, .flags = SF_STORE,
   M(finalizers), .off_n = offsetof(session_metadata, n_finalizers)},
};
#undef M

/* ---------------------------------------------------------------- spec */
/* spec.network, spec.workspace (members of session_spec) and a volume
 * mount */
#define PATH_RULE {SR_ABS_PATH, SF_PATH_MAX, NULL, NULL}
#define S(m) ROW(session_spec, m)
static const sf_field network_rows[] = {
  {.name = "allowInternetAccess", .type = SF_OPTBOOL, S(net_internet)},
  {.name = "allowOut", .type = SF_STRLIST, S(net_allow_out),
   .off_n = offsetof(session_spec, n_net_allow_out),
   .val = {SR_NET_DEST, 253, NULL, NULL}, .max_items = SF_NET_RULES_MAX},
  {.name = "denyOut", .type = SF_STRLIST, S(net_deny_out),
   .off_n = offsetof(session_spec, n_net_deny_out),
   .val = {SR_NET_CIDR, 64, NULL, NULL}, .max_items = SF_NET_RULES_MAX},
  {.name = "allowPublicTraffic", .type = SF_OPTBOOL, S(net_public)},
};
static const sf_field workspace_rows[] = {
  /* hostPath absent: the short form, the session's own directory under
   * the tenant's workspace root (api/policy.h) */
  {.name = "hostPath", .type = SF_STR, .flags = SF_OPTIONAL,
   S(workspace_host_path), .val = PATH_RULE},
  {.name = "mountPath", .type = SF_STR, .flags = SF_REQUIRED | SF_GATE,
   S(workspace_mount_path), .val = PATH_RULE},
};
#undef S
#define V(m) ROW(session_volume_mount, m)
static const sf_field volume_rows[] = {
  {.name = "name", .type = SF_STR, .flags = SF_REQUIRED, V(name),
   .val = ID_RULE("volume name")},
  {.name = "path", .type = SF_STR, .flags = SF_REQUIRED, V(path),
   .val = PATH_RULE},
  {.name = "readOnly", .type = SF_BOOL, V(read_only)},
};
#undef V
const sf_table sf_network = {"spec.network", sizeof(session_spec),
                             network_rows, N_(network_rows)};
const sf_table sf_workspace = {"spec.workspace", sizeof(session_spec),
                               workspace_rows, N_(workspace_rows)};
const sf_table sf_volume_mount = {"spec.volumeMounts[]",
                                  sizeof(session_volume_mount), volume_rows,
                                  N_(volume_rows)};

#define S(m) ROW(session_spec, m)
static const sf_field spec_rows[] = {
  {.name = "template", .type = SF_STR, .flags = SF_REQUIRED, S(template_id),
   .val = {SR_CHARSET, ID_MAX_LEN, "._:-", "template name"}},
  {.name = "state", .type = SF_ENUM, .flags = SF_ALWAYS | SF_HINT, S(state),
   .names = sf_state_names, .what = "state", .dflt = "Active"},
  {.name = "idleTimeout", .type = SF_DURATION, .flags = SF_DEFAULTED,
   S(idle_timeout_ms), .val = ANY(DURATION_TEXT_MAX), .min_ms = 1000,
   .example = "15m", .dflt = "15m"},
  {.name = "reclaimAfter", .type = SF_DURATION,
   .flags = SF_DEFAULTED | SF_NEG_UNSET, S(reclaim_after_ms),
   .val = ANY(DURATION_TEXT_MAX), .example = "24h, or 0 for never",
   .dflt = "24h"},
  {.name = "sessionID", .type = SF_STR, .flags = SF_DEFAULTED, S(session_id),
   .val = ID_RULE("ID")},
  {.name = "tenantID", .type = SF_STR, .flags = SF_DEFAULTED, S(tenant_id),
   .val = ID_RULE("ID")},
  {.name = "envVars", .type = SF_MAP, S(env_vars),
   .key = {SR_ENV_NAME, ID_MAX_LEN, NULL, NULL}, .val = TEXT_VALUE,
   .max_items = SF_ENV_VARS_MAX},
  {.name = "sandboxMetadata", .type = SF_MAP, S(sandbox_metadata),
   .key = {SR_META_KEY, ID_MAX_LEN, "._/-", "sandbox metadata key"},
   .val = TEXT_VALUE, .max_items = SF_SANDBOX_METADATA_MAX},
  {.name = "wake", .type = SF_INT, .flags = SF_NONNEG, S(wake), .dflt = "0"},
  {.name = "resumePolicy", .type = SF_ENUM, .flags = SF_HINT,
   S(resume_policy), .names = sf_resume_policy_names, .what = "resume policy",
   .dflt = "Auto"},
  {.name = "network", .type = SF_OBJECT, .sub = &sf_network},
  {.name = "volumeMounts", .type = SF_OBJLIST, S(volume_mounts),
   .off_n = offsetof(session_spec, n_volume_mounts),
   .max_items = SF_VOLUME_MOUNTS_MAX, .sub = &sf_volume_mount},
  {.name = "workspace", .type = SF_OBJECT, .sub = &sf_workspace},
};
#undef S

/* -------------------------------------------------------------- status */
#define C(m) ROW(session_condition, m)
static const sf_field cond_rows[] = {
  {.name = "type", .type = SF_STR, .flags = SF_REQUIRED, C(type),
   .val = ANY(316)},
  {.name = "status", .type = SF_STR, .flags = SF_REQUIRED, C(status),
   .names = cond_status_names},
  {.name = "reason", .type = SF_STR, C(reason), .val = ANY(1024)},
  {.name = "message", .type = SF_STR, C(message), .val = ANY(32768)},
  {.name = "lastTransitionTime", .type = SF_TIME, C(last_transition_time)},
  {.name = "observedGeneration", .type = SF_INT, C(observed_generation)},
};
#undef C

#define T(m) ROW(session_status, m)
static const sf_field intent_rows[] = {
  {.name = "by", .type = SF_STR, .flags = SF_REQUIRED, T(create_intent_by),
   .val = ANY(253)},
  {.name = "at", .type = SF_TIME, .flags = SF_REQUIRED | SF_GATE,
   T(create_intent_at)},
};

static const char *const pending_kinds[] = {"reclaim", "ended", "tombstone",
                                            "duplicate", "pause", NULL};
static const sf_field pending_rows[] = {
  {.name = "kind", .type = SF_STR, .flags = SF_REQUIRED | SF_GATE,
   T(pending_kind), .names = pending_kinds},
  {.name = "sandboxID", .type = SF_STR, .flags = SF_REQUIRED,
   T(pending_sandbox_id), .val = ANY(128)},
  {.name = "at", .type = SF_TIME, T(pending_at)},
  {.name = "by", .type = SF_STR, T(pending_by), .val = ANY(253)},
};

static const char *const connect_results[] = {SESSION_CONNECT_SERVED,
                                              SESSION_CONNECT_REFUSED, NULL};
static const sf_field connect_rows[] = {
  {.name = "nonce", .type = SF_STR, .flags = SF_REQUIRED | SF_GATE,
   T(connect_nonce), .val = ANY(SESSION_CONNECT_NONCE_MAX)},
  {.name = "result", .type = SF_STR, .flags = SF_REQUIRED, T(connect_result),
   .names = connect_results},
  {.name = "message", .type = SF_STR, T(connect_message), .val = ANY(1024)},
};

const sf_table sf_intent = {"status.createIntent", sizeof(session_status),
                            intent_rows, N_(intent_rows)};
const sf_table sf_pending = {"status.pendingAction", sizeof(session_status),
                             pending_rows, N_(pending_rows)};
const sf_table sf_connect = {"status.connect", sizeof(session_status),
                             connect_rows, N_(connect_rows)};
const sf_table sf_condition = {"status.conditions[]",
                               sizeof(session_condition), cond_rows,
                               N_(cond_rows)};

static const sf_field status_rows[] = {
  {.name = "phase", .type = SF_ENUM, T(phase), .names = sf_phase_names,
   .what = "phase"},
  {.name = "sandboxID", .type = SF_STR, T(sandbox_id), .val = ANY(128)},
  {.name = "sandboxState", .type = SF_STR, T(sandbox_state), .val = ANY(64)},
  {.name = "sandboxProof", .type = SF_STR, T(sandbox_proof), .val = ANY(64)},
  {.name = "endAt", .type = SF_TIME, T(end_at)},
  {.name = "tenantID", .type = SF_STR, T(tenant_id), .val = ANY(ID_MAX_LEN)},
  {.name = "observedGeneration", .type = SF_INT, T(observed_generation)},
  {.name = "reclaimedGeneration", .type = SF_INT, T(reclaimed_generation)},
  {.name = "pausedByController", .type = SF_BOOL, T(paused_by_controller)},
  {.name = "appliedIdleTimeout", .type = SF_DURATION,
   T(applied_idle_timeout_ms), .val = ANY(DURATION_TEXT_MAX)},
  {.name = "createIntent", .type = SF_OBJECT, .sub = &sf_intent},
  {.name = "pendingAction", .type = SF_OBJECT, .sub = &sf_pending},
  {.name = "connect", .type = SF_OBJECT, .sub = &sf_connect},
  {.name = "domain", .type = SF_STR, T(domain), .val = ANY(253)},
  {.name = "envdAddress", .type = SF_STR, T(envd_address), .val = ANY(300)},
  {.name = "conditions", .type = SF_OBJLIST, T(conditions),
   .off_n = offsetof(session_status, n_conditions), .max_items = 16,
   .sub = &sf_condition},
};
#undef T

const sf_table sf_meta = {"metadata", sizeof(session_metadata), meta_rows,
                          N_(meta_rows)};
const sf_table sf_spec = {"spec", sizeof(session_spec), spec_rows,
                          N_(spec_rows)};
const sf_table sf_status = {"status", sizeof(session_status), status_rows,
                            N_(status_rows)};

/* ---------------------------------------------------------- look-ups */

const sf_field *sf_find(const sf_table *t, const char *name, size_t len)
{
  size_t i;
  for(i = 0; i < t->n; i++)
    if(strlen(t->f[i].name) == len && !memcmp(t->f[i].name, name, len))
      return &t->f[i];
  return NULL;
}

int sf_enum_get(const sf_field *f, const void *base)
{
  return *SF_CAT(base, f->off, int);
}

size_t sf_enum_count(const sf_field *f)
{
  size_t n = 0;
  while(f->names[n])
    n++;
  return n;
}

const char *sf_name_of(const char *const *names, int v)
{
  int i;
  for(i = 0; v >= 0 && names[i]; i++)
    if(i == v)
      return names[i];
  return "Unknown";
}

int sf_name_parse(const char *const *names, const char *s)
{
  int i;
  for(i = 0; s && names[i]; i++)
    if(!strcmp(s, names[i]))
      return i;
  return -1;
}

void sf_enum_hint(const sf_field *f, char *buf, size_t len)
{
  size_t n = sf_enum_count(f), i, used;
  if(!len)
    return;
  buf[0] = '\0';
  if(!(f->flags & SF_HINT))
    return;
  used = (size_t)snprintf(buf, len, " (use ");
  for(i = 0; i < n && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%s",
                             i == 0 ? "" : i + 1 == n ? " or " : ", ",
                             f->names[i]);
  if(used < len)
    snprintf(buf + used, len - used, ")");
}

bool sf_duration_set(const sf_field *f, int64_t ms)
{
  return f->flags & SF_NEG_UNSET ? ms >= 0 : ms != 0;
}

static const sf_field *gate_of(const sf_table *t)
{
  size_t i;
  for(i = 0; i < t->n; i++)
    if(t->f[i].flags & SF_GATE)
      return &t->f[i];
  return NULL;
}

bool sf_is_set(const sf_field *f, const void *base)
{
  switch(f->type) {
  case SF_STR: return *SF_CAT(base, f->off, char *) != NULL;
  case SF_ENUM:
  case SF_OPTBOOL: return sf_enum_get(f, base) != 0;
  case SF_INT:
  case SF_TIME: return *SF_CAT(base, f->off, int64_t) != 0;
  case SF_DURATION:
    return sf_duration_set(f, *SF_CAT(base, f->off, int64_t));
  case SF_BOOL: return *SF_CAT(base, f->off, bool);
  case SF_MAP: return SF_CAT(base, f->off, sc_kvlist)->n != 0;
  case SF_STRLIST:
  case SF_OBJLIST: return *SF_CAT(base, f->off_n, size_t) != 0;
  case SF_OBJECT: {
    const sf_field *g = gate_of(f->sub);
    return g ? sf_is_set(g, base) : !sf_empty(f->sub, base);
  }
  }
  return false;
}

bool sf_empty(const sf_table *t, const void *base)
{
  size_t i;
  for(i = 0; i < t->n; i++)
    if(sf_is_set(&t->f[i], base))
      return false;
  return true;
}

/* ------------------------------------------------ free, copy, compare */

static void strlist_free(char **v, size_t n)
{
  size_t i;
  for(i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

void sf_free(const sf_table *t, void *base)
{
  size_t i, j;
  for(i = 0; base && i < t->n; i++) {
    const sf_field *f = &t->f[i];
    switch(f->type) {
    case SF_STR: free(*SF_AT(base, f->off, char *)); break;
    case SF_MAP: sc_kvlist_clear(SF_AT(base, f->off, sc_kvlist)); break;
    case SF_STRLIST:
      strlist_free(*SF_AT(base, f->off, char **),
                   *SF_AT(base, f->off_n, size_t));
      break;
    case SF_OBJLIST: {
      char *c = *SF_AT(base, f->off, char *);
      size_t n = *SF_AT(base, f->off_n, size_t);
      for(j = 0; j < n; j++)
        sf_free(f->sub, c + j * f->sub->size);
      free(c);
      break;
    }
    case SF_OBJECT: sf_free(f->sub, base); break;
    default: break;
    }
  }
}

/* Forget (do not free) what row f of dst points at. */
static void detach_row(const sf_field *f, void *dst)
{
  size_t i;
  switch(f->type) {
  case SF_STR: *SF_AT(dst, f->off, char *) = NULL; break;
  case SF_MAP: memset(SF_AT(dst, f->off, sc_kvlist), 0, sizeof(sc_kvlist));
    break;
  case SF_STRLIST:
  case SF_OBJLIST:
    *SF_AT(dst, f->off, void *) = NULL;
    *SF_AT(dst, f->off_n, size_t) = 0;
    break;
  case SF_OBJECT:
    for(i = 0; i < f->sub->n; i++)
      detach_row(&f->sub->f[i], dst);
    break;
  default: break;
  }
}

/* dst's array for a list row as long as src's, each element zeroed; its
 * count is 0 until the caller copies elements. NULL when src's is empty
 * (*err SC_OK) or out of memory (*err SC_ERR_NOMEM). */
static void *list_alloc(const sf_field *f, void *dst, const void *src,
                        size_t esize, size_t *n, sc_err *err)
{
  void *d;
  *err = SC_OK;
  *n = *SF_CAT(src, f->off_n, size_t);
  if(!*n)
    return NULL;
  d = calloc(*n, esize);
  if(!d)
    *err = SC_ERR_NOMEM;
  *SF_AT(dst, f->off, void *) = d;
  return d;
}

/* Row f of dst (a shallow copy of src) made a deep copy; on SC_ERR_NOMEM
 * the row owns what it copied so far and nothing of src. */
static sc_err copy_row(const sf_field *f, void *dst, const void *src)
{
  size_t n, i, *dn = SF_AT(dst, f->off_n, size_t);
  sc_err err;
  detach_row(f, dst);
  switch(f->type) {
  case SF_STR: {
    const char *s = *SF_CAT(src, f->off, char *);
    if(s && !(*SF_AT(dst, f->off, char *) = strdup(s)))
      return SC_ERR_NOMEM;
    return SC_OK;
  }
  case SF_MAP:
    return sc_kvlist_copy(SF_AT(dst, f->off, sc_kvlist),
                          SF_CAT(src, f->off, sc_kvlist));
  case SF_STRLIST: {
    char *const *v = *SF_CAT(src, f->off, char **);
    char **d = list_alloc(f, dst, src, sizeof(*d), &n, &err);
    for(i = 0; d && i < n && !err; i++, *dn = i)
      if(!(d[i] = strdup(v[i])))
        err = SC_ERR_NOMEM;
    return err;
  }
  case SF_OBJLIST: {
    const char *v = *SF_CAT(src, f->off, char *);
    char *d = list_alloc(f, dst, src, f->sub->size, &n, &err);
    for(i = 0; d && i < n && !err; i++, *dn = i)
      err = sf_copy(f->sub, d + i * f->sub->size, v + i * f->sub->size);
    return err;
  }
  case SF_OBJECT: {
    size_t j;
    for(j = 0; j < f->sub->n; j++)
      if(copy_row(&f->sub->f[j], dst, src))
        return SC_ERR_NOMEM;
    return SC_OK;
  }
  default:
    return SC_OK; /* a value: the shallow copy holds it */
  }
}

sc_err sf_copy(const sf_table *t, void *dst, const void *src)
{
  size_t i, j;
  memcpy(dst, src, t->size);
  for(i = 0; i < t->n; i++)
    if(copy_row(&t->f[i], dst, src)) {
      for(j = i + 1; j < t->n; j++) /* still src's */
        detach_row(&t->f[j], dst);
      sf_free(t, dst);
      for(j = 0; j < t->n; j++)
        detach_row(&t->f[j], dst);
      return SC_ERR_NOMEM;
    }
  return SC_OK;
}

bool sf_equal(const sf_table *t, const void *a, const void *b)
{
  size_t i, j, n;
  for(i = 0; i < t->n; i++) {
    const sf_field *f = &t->f[i];
    switch(f->type) {
    case SF_STR:
      if(!sc_str_eq0(*SF_CAT(a, f->off, char *), *SF_CAT(b, f->off, char *)))
        return false;
      break;
    case SF_ENUM:
    case SF_OPTBOOL:
      if(sf_enum_get(f, a) != sf_enum_get(f, b))
        return false;
      break;
    case SF_INT:
    case SF_TIME:
    case SF_DURATION:
      if(*SF_CAT(a, f->off, int64_t) != *SF_CAT(b, f->off, int64_t))
        return false;
      break;
    case SF_BOOL:
      if(*SF_CAT(a, f->off, bool) != *SF_CAT(b, f->off, bool))
        return false;
      break;
    case SF_MAP:
      if(!sc_kvlist_equal(SF_CAT(a, f->off, sc_kvlist),
                          SF_CAT(b, f->off, sc_kvlist)))
        return false;
      break;
    case SF_STRLIST:
      n = *SF_CAT(a, f->off_n, size_t);
      if(n != *SF_CAT(b, f->off_n, size_t))
        return false;
      for(j = 0; j < n; j++)
        if(strcmp((*SF_CAT(a, f->off, char **))[j],
                  (*SF_CAT(b, f->off, char **))[j]))
          return false;
      break;
    case SF_OBJLIST:
      n = *SF_CAT(a, f->off_n, size_t);
      if(n != *SF_CAT(b, f->off_n, size_t))
        return false;
      for(j = 0; j < n; j++)
        if(!sf_equal(f->sub,
                     *SF_CAT(a, f->off, char *) + j * f->sub->size,
                     *SF_CAT(b, f->off, char *) + j * f->sub->size))
          return false;
      break;
    case SF_OBJECT:
      if(!sf_equal(f->sub, a, b))
        return false;
      break;
    }
  }
  return true;
}
