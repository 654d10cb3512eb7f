/* Tests of api/session_json.c: full round trips, omitted fields, strict
 * decoding with field paths, and the spec/status parts. */
#include "test/harness.h"
#include "api/session_json.h"

static session *full_session(void)
{
  session *s = session_new();
  session_condition c = {0};
  if(!s)
    return NULL;
  s->meta.name = strdup("chat-7f3a");
  s->meta.namespace_ = strdup("tenant-a");
  s->meta.uid = strdup("6f1c2d0e-1111-4a4a-9b9b-000000000001");
  s->meta.resource_version = strdup("42");
  s->meta.generation = 3;
  s->meta.creation_timestamp = 1795947300123LL;
  s->meta.deletion_timestamp = 1795947400000LL;
  sc_kvlist_set(&s->meta.labels, "course", "cs101");
  sc_kvlist_set(&s->meta.labels, "app.kubernetes.io/name", "chat");
  sc_kvlist_set(&s->meta.annotations, "note", "a \"quoted\" / slash\nline");
  s->meta.finalizers = calloc(2, sizeof(char *));
  s->meta.finalizers[0] = strdup("lea.io/sandbox");
  s->meta.finalizers[1] = strdup("other");
  s->meta.n_finalizers = 2;
  s->spec.template_id = strdup("python-data");
  s->spec.state = SESSION_STATE_RUNNING;
  s->spec.idle_timeout_ms = 5400000;
  s->spec.reclaim_after_ms = 0; /* never */
  s->spec.session_id = strdup("chat-7f3a");
  s->spec.tenant_id = strdup("tenant-a");
  sc_kvlist_set(&s->spec.env_vars, "LANG", "C.UTF-8");
  sc_kvlist_set(&s->spec.env_vars, "TZ", "Europe/Paris");
  sc_kvlist_set(&s->spec.sandbox_metadata, "course", "cs101");
  s->spec.wake = 7;
  s->status.phase = SESSION_PHASE_PAUSED;
  s->status.sandbox_id = strdup("7c8f00aa");
  s->status.sandbox_state = strdup("paused");
  s->status.end_at = 1795947300000LL;
  s->status.observed_generation = 3;
  s->status.reclaimed_generation = 2;
  s->status.paused_by_controller = true;
  s->status.applied_idle_timeout_ms = 600000;
  s->status.create_intent_by = strdup("r0#1a2b3c4d");
  s->status.create_intent_at = 1795947290000LL;
  c.type = "Ready";
  c.status = "False";
  c.reason = "SandboxPaused";
  c.message = "paused by the controller (\u00e9t\u00e9)";
  c.last_transition_time = 1795947299500LL;
  c.observed_generation = 3;
  session_status_set_condition(&s->status, &c);
  c.type = "Conflict";
  c.status = "Unknown";
  c.reason = NULL;
  c.message = NULL;
  c.last_transition_time = 0;
  c.observed_generation = 0;
  session_status_set_condition(&s->status, &c);
  return s;
}

static bool str_eq(const char *a, const char *b)
{
  return (!a && !b) || (a && b && !strcmp(a, b));
}

static bool meta_equal(const session_metadata *a, const session_metadata *b)
{
  size_t i;
  if(!str_eq(a->name, b->name) || !str_eq(a->namespace_, b->namespace_) ||
     !str_eq(a->uid, b->uid) ||
     !str_eq(a->resource_version, b->resource_version) ||
     a->generation != b->generation ||
     a->creation_timestamp != b->creation_timestamp ||
     a->deletion_timestamp != b->deletion_timestamp ||
     !sc_kvlist_equal(&a->labels, &b->labels) ||
     !sc_kvlist_equal(&a->annotations, &b->annotations) ||
     a->n_finalizers != b->n_finalizers)
    return false;
  for(i = 0; i < a->n_finalizers; i++)
    if(strcmp(a->finalizers[i], b->finalizers[i]))
      return false;
  return true;
}

TEST(full_round_trip)
{
  session *s = full_session(), *back = NULL;
  char *j1 = NULL, *j2 = NULL;
  sc_errbuf eb = {""};
  CHECK(s);
  CHECK_OK(session_to_json(s, &j1));
  CHECK_MSG(session_from_json(j1, strlen(j1), &back, &eb) == SC_OK, "%s",
            eb.msg);
  CHECK_OK(session_to_json(back, &j2));
  CHECK_STR(j2, j1);
  CHECK(meta_equal(&s->meta, &back->meta));
  CHECK(session_spec_equal(&s->spec, &back->spec));
  CHECK(session_status_equal(&s->status, &back->status));
  CHECK_INT(back->spec.reclaim_after_ms, 0);
  CHECK(strstr(j1, "\"reclaimAfter\":\"0\""));
  CHECK(strstr(j1, "\"idleTimeout\":\"1h30m\""));
  CHECK(strstr(j1, "\"creationTimestamp\":\"2026-11-29T10:15:00.123Z\""));
  CHECK(strstr(j1, "\"app.kubernetes.io/name\":\"chat\""));
  CHECK(strstr(j1, "\"state\":\"Running\""));
  CHECK(strstr(j1, "\"pausedByController\":true"));
  CHECK(strstr(j1, "\"appliedIdleTimeout\":\"10m\""));
  CHECK(strstr(j1, "\"createIntent\":{\"by\":\"r0#1a2b3c4d\",\"at\":\"2026-11-29T10:14:50Z\"}"));
  free(j1);
  free(j2);
  session_free(s);
  session_free(back);
}

TEST(exact_minimal_encoding)
{
  session *s = session_new();
  char *j = NULL;
  CHECK(s);
  s->meta.name = strdup("a");
  s->spec.template_id = strdup("t");
  CHECK_OK(session_to_json(s, &j));
  /* unset fields are left out; reclaimAfter -1 (unset) too */
  CHECK_STR(j, "{\"apiVersion\":\"lea.io/v1alpha1\",\"kind\":\"Session\","
               "\"metadata\":{\"name\":\"a\"},"
               "\"spec\":{\"template\":\"t\",\"state\":\"Active\"}}");
  free(j);
  session_free(s);
}

TEST(unset_reclaim_stays_unset)
{
  session *s = NULL;
  sc_errbuf eb = {""};
  static const char txt[] =
    "{\"apiVersion\":\"lea.io/v1alpha1\",\"kind\":\"Session\","
    "\"metadata\":{\"name\":\"a\"},\"spec\":{\"template\":\"t\"}}";
  CHECK_MSG(session_from_json(txt, strlen(txt), &s, &eb) == SC_OK, "%s",
            eb.msg);
  CHECK_INT(s->spec.reclaim_after_ms, -1);
  CHECK_INT(s->spec.idle_timeout_ms, 0);
  CHECK_INT(s->spec.state, SESSION_STATE_ACTIVE);
  CHECK_INT(s->status.phase, SESSION_PHASE_NONE);
  session_free(s);
}

TEST(trailing_whitespace_ok)
{
  session *s = NULL;
  sc_errbuf eb = {""};
  static const char txt[] = " \n{\"apiVersion\":\"lea.io/v1alpha1\",\"kind\":\"Session\"}\r\n\t ";
  CHECK_MSG(session_from_json(txt, strlen(txt), &s, &eb) == SC_OK, "%s", eb.msg);
  session_free(s);
}

TEST(nulls_read_as_unset)
{
  session *s = NULL;
  sc_errbuf eb = {""};
  static const char txt[] =
    "{\"apiVersion\":\"lea.io/v1alpha1\",\"kind\":\"Session\","
    "\"metadata\":{\"name\":\"a\",\"deletionTimestamp\":null},"
    "\"spec\":{\"template\":\"t\",\"envVars\":null},\"status\":null}";
  CHECK_MSG(session_from_json(txt, strlen(txt), &s, &eb) == SC_OK, "%s",
            eb.msg);
  CHECK_INT(s->meta.deletion_timestamp, 0);
  CHECK_INT(s->spec.env_vars.n, 0);
  session_free(s);
}

#define HEAD "{\"apiVersion\":\"lea.io/v1alpha1\",\"kind\":\"Session\","
static const struct {
  const char *json;
  const char *err;
} bad_cases[] = {
  {"", "JSON text ends too early"},
  {"{", "JSON text ends too early"},
  {"[]", "expected a JSON object, got an array"},
  {"{} x", "JSON syntax error at byte 3: unexpected character"},
  {"{\"a\":1,}", NULL},
  {"{\"kind\":\"Session\"}",
   "apiVersion: required field missing (use lea.io/v1alpha1)"},
  {"{\"apiVersion\":\"lea.io/v1alpha1\"}",
   "kind: required field missing (use Session)"},
  {"{\"apiVersion\":\"v1\",\"kind\":\"Session\"}",
   "apiVersion: \"v1\" is not supported (use lea.io/v1alpha1)"},
  {HEAD "\"kind2\":1}", "kind2: unknown field"},
  {HEAD "\"metadata\":[]}", "metadata: expected an object, got an array"},
  {HEAD "\"metadata\":{\"nam\":\"a\"}}", "metadata.nam: unknown field"},
  {HEAD "\"metadata\":{\"name\":3}}",
   "metadata.name: expected a string, got an integer"},
  {HEAD "\"metadata\":{\"name\":\"a\\u0000b\"}}",
   "metadata.name: contains a NUL character"},
  {HEAD "\"metadata\":{\"generation\":\"3\"}}",
   "metadata.generation: expected an integer, got a string"},
  {HEAD "\"metadata\":{\"generation\":3.5}}",
   "metadata.generation: expected an integer, got a number"},
  {HEAD "\"metadata\":{\"creationTimestamp\":\"yesterday\"}}",
   "metadata.creationTimestamp: \"yesterday\" is not an RFC 3339 time (use "
   "e.g. 2026-11-29T10:15:00Z)"},
  {HEAD "\"metadata\":{\"labels\":{\"a.b/c\":1}}}",
   "metadata.labels[\"a.b/c\"]: expected a string, got an integer"},
  {HEAD "\"metadata\":{\"finalizers\":[\"a\",false]}}",
   "metadata.finalizers[1]: expected a string, got a boolean"},
  {HEAD "\"spec\":{\"idleTimeout\":\"15 minutes\"}}",
   "spec.idleTimeout: \"15 minutes\" is not a duration (use e.g. 15m)"},
  {HEAD "\"spec\":{\"idleTimeout\":900}}",
   "spec.idleTimeout: expected a duration string, got an integer"},
  {HEAD "\"spec\":{\"reclaimAfter\":\"9999999h\"}}",
   "spec.reclaimAfter: \"9999999h\" is too large"},
  {HEAD "\"spec\":{\"state\":\"Sleeping\"}}",
   "spec.state: \"Sleeping\" is not a state (use Active, Running, Paused or "
   "Ended)"},
  {HEAD "\"spec\":{\"wake\":true}}",
   "spec.wake: expected an integer, got a boolean"},
  {HEAD "\"spec\":{\"templates\":\"x\"}}", "spec.templates: unknown field"},
  {HEAD "\"status\":{\"phase\":\"Dead\"}}",
   "status.phase: \"Dead\" is not a phase"},
  {HEAD "\"status\":{\"pausedByController\":1}}",
   "status.pausedByController: expected a boolean, got an integer"},
  {HEAD "\"status\":{\"conditions\":{}}}",
   "status.conditions: expected an array, got an object"},
  {HEAD "\"status\":{\"conditions\":[{\"type\":\"Ready\"},{\"tipe\":1}]}}",
   "status.conditions[1].tipe: unknown field"},
  {HEAD "\"status\":{\"conditions\":[{\"lastTransitionTime\":\"x\"}]}}",
   "status.conditions[0].lastTransitionTime: \"x\" is not an RFC 3339 time "
   "(use e.g. 2026-11-29T10:15:00Z)"},
  {HEAD "\"status\":{\"createIntent\":\"r0\"}}",
   "status.createIntent: expected an object, got a string"},
  {HEAD "\"status\":{\"createIntent\":{\"by\":\"r0\",\"when\":1}}}",
   "status.createIntent.when: unknown field"},
  {HEAD "\"status\":{\"createIntent\":{\"at\":5}}}",
   "status.createIntent.at: expected an RFC 3339 time string, got an integer"},
};

TEST(strict_decoding_table)
{
  size_t i;
  for(i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
    session *s = (session *)1;
    sc_errbuf eb = {""};
    const char *j = bad_cases[i].json;
    sc_err err = session_from_json(j, strlen(j), &s, &eb);
    CHECK_MSG(err == SC_ERR_INVALID, "case %zu (%s): err %d", i, j, err);
    CHECK_MSG(s == NULL, "case %zu: *out not NULL on error", i);
    if(bad_cases[i].err)
      CHECK_MSG(!strcmp(eb.msg, bad_cases[i].err),
                "case %zu: got \"%s\"\n    expected \"%s\"", i, eb.msg,
                bad_cases[i].err);
    else
      CHECK_MSG(eb.msg[0], "case %zu: no message", i);
  }
}

TEST(lenient_metadata_flag)
{
  static const char txt[] =
    HEAD "\"metadata\":{\"name\":\"a\",\"managedFields\":[{}],"
         "\"ownerReferences\":[]},\"spec\":{\"template\":\"t\"}}";
  json_object *o = json_tokener_parse(txt);
  session *s = NULL;
  sc_errbuf eb = {""};
  CHECK(o);
  CHECK_INT(session_from_json_object(o, &s, &eb), SC_ERR_INVALID);
  CHECK_STR(eb.msg, "metadata.managedFields: unknown field");
  CHECK_MSG(session_from_json_object_flags(
              o, SESSION_JSON_IGNORE_UNKNOWN_METADATA, &s, &eb) == SC_OK,
            "%s", eb.msg);
  CHECK_STR(s->meta.name, "a");
  session_free(s);
  json_object_put(o);
}

/* What an API server may hold in labels and annotations (issue 12): any
 * string, a NUL escaped as \u0000 (the API server accepts it), and on a
 * server without the CRD anything at all. The controller reads none of
 * it, so under LENIENT_METADATA such entries never refuse the object:
 * those a C string cannot hold are left out (and counted), the rest kept
 * byte for byte; the spec stays strict. Without the flag (sessionctl's
 * manifests) they are still refused. */
TEST(lenient_labels_and_annotations)
{
  static const char txt[] =
    HEAD "\"metadata\":{\"name\":\"a\",\"annotations\":{\"x\":\"a\\u0000b\","
         "\"note\":\"line1\\nline2\\ttab \\u00e9 \\ud83d\\ude00 \\u0001\","
         "\"num\":42,\"obj\":{\"k\":\"v\"},\"empty\":\"\"},"
         "\"labels\":{\"team\":[1],\"app\":\"web\"}},"
         "\"spec\":{\"template\":\"t\"}}";
  static const char notobj[] =
    HEAD "\"metadata\":{\"name\":\"a\",\"annotations\":\"nope\","
         "\"labels\":7},\"spec\":{\"template\":\"t\"}}";
  static const char badspec[] =
    HEAD "\"metadata\":{\"name\":\"a\",\"annotations\":{\"x\":\"a\\u0000\"}},"
         "\"spec\":{\"template\":\"t\",\"state\":42}}";
  json_object *o = json_tokener_parse(txt);
  session *s = NULL;
  sc_errbuf eb = {""};
  size_t dropped = 99;
  char *big;
  size_t i;
  CHECK(o);
  CHECK_INT(session_from_json_object(o, &s, &eb), SC_ERR_INVALID);
  CHECK_MSG(strstr(eb.msg, "contains a NUL character") ||
            strstr(eb.msg, "expected a string"), "%s", eb.msg);
  CHECK_MSG(session_from_json_object_ex(o, SESSION_JSON_LENIENT_METADATA, &s,
                                        &dropped, &eb) == SC_OK,
            "%s", eb.msg);
  CHECK_INT(dropped, 4); /* x, num, obj, team */
  CHECK_INT(s->meta.annotations.n, 2);
  CHECK_STR(sc_kvlist_get(&s->meta.annotations, "note"),
            "line1\nline2\ttab \xc3\xa9 \xf0\x9f\x98\x80 \x01");
  CHECK_STR(sc_kvlist_get(&s->meta.annotations, "empty"), "");
  CHECK_INT(s->meta.labels.n, 1);
  CHECK_STR(sc_kvlist_get(&s->meta.labels, "app"), "web");
  session_free(s);
  json_object_put(o);

  o = json_tokener_parse(notobj);
  CHECK(o);
  CHECK_MSG(session_from_json_object_ex(o, SESSION_JSON_LENIENT_METADATA, &s,
                                        &dropped, &eb) == SC_OK,
            "%s", eb.msg);
  CHECK_INT(dropped, 2);
  CHECK_INT(s->meta.annotations.n + s->meta.labels.n, 0);
  session_free(s);
  json_object_put(o);

  /* the spec is not metadata: still strict */
  o = json_tokener_parse(badspec);
  CHECK(o);
  CHECK_INT(session_from_json_object_flags(o, SESSION_JSON_LENIENT_METADATA,
                                           &s, &eb), SC_ERR_INVALID);
  CHECK_STR(eb.msg, "spec.state: expected a string, got an integer");
  json_object_put(o);

  /* the size cap: 300 annotations of 1000 bytes, about 300 KB: those
   * past SESSION_JSON_META_KV_MAX (256 KiB) are left out */
  o = json_tokener_parse(HEAD "\"metadata\":{\"name\":\"a\"},"
                         "\"spec\":{\"template\":\"t\"}}");
  CHECK(o);
  {
    json_object *m = NULL, *an = json_object_new_object();
    big = malloc(1001);
    memset(big, 'v', 1000);
    big[1000] = '\0';
    for(i = 0; i < 300; i++) {
      char k[16];
      snprintf(k, sizeof(k), "k%03zu", i);
      json_object_object_add(an, k, json_object_new_string(big));
    }
    free(big);
    json_object_object_get_ex(o, "metadata", &m);
    json_object_object_add(m, "annotations", an);
  }
  CHECK_MSG(session_from_json_object_ex(o, SESSION_JSON_LENIENT_METADATA, &s,
                                        &dropped, &eb) == SC_OK,
            "%s", eb.msg);
  CHECK_INT(s->meta.annotations.n, SESSION_JSON_META_KV_MAX / 1004);
  CHECK_INT(dropped, 300 - SESSION_JSON_META_KV_MAX / 1004);
  session_free(s);
  json_object_put(o);
}

TEST(spec_part_round_trip)
{
  session *s = full_session();
  session_spec sp;
  char *j1 = NULL, *j2 = NULL;
  sc_errbuf eb = {""};
  CHECK(s);
  CHECK_OK(session_spec_to_json(&s->spec, &j1));
  CHECK_MSG(session_spec_from_json(j1, &sp, &eb) == SC_OK, "%s", eb.msg);
  CHECK(session_spec_equal(&s->spec, &sp));
  CHECK_OK(session_spec_to_json(&sp, &j2));
  CHECK_STR(j2, j1);
  CHECK_STR(j1, "{\"template\":\"python-data\",\"state\":\"Running\","
                "\"idleTimeout\":\"1h30m\",\"reclaimAfter\":\"0\","
                "\"sessionID\":\"chat-7f3a\",\"tenantID\":\"tenant-a\","
                "\"envVars\":{\"LANG\":\"C.UTF-8\",\"TZ\":\"Europe/Paris\"},"
                "\"sandboxMetadata\":{\"course\":\"cs101\"},\"wake\":7}");
  session_spec_clear(&sp);
  free(j1);
  free(j2);
  session_free(s);
}

TEST(spec_part_errors)
{
  session_spec sp;
  sc_errbuf eb = {""};
  CHECK_INT(session_spec_from_json("{\"wake\":\"1\"}", &sp, &eb),
            SC_ERR_INVALID);
  CHECK_STR(eb.msg, "spec.wake: expected an integer, got a string");
  CHECK(sp.template_id == NULL);
  CHECK_INT(session_spec_from_json("{\"template\":\"x\"", &sp, &eb),
            SC_ERR_INVALID);
  CHECK_OK(session_spec_from_json("{}", &sp, &eb));
  CHECK_INT(sp.reclaim_after_ms, -1);
  session_spec_clear(&sp);
}

TEST(status_part_round_trip)
{
  session *s = full_session();
  session_status st;
  char *j1 = NULL, *j2 = NULL;
  sc_errbuf eb = {""};
  CHECK(s);
  CHECK_OK(session_status_to_json(&s->status, &j1));
  CHECK_MSG(session_status_from_json(j1, &st, &eb) == SC_OK, "%s", eb.msg);
  CHECK(session_status_equal(&s->status, &st));
  CHECK_OK(session_status_to_json(&st, &j2));
  CHECK_STR(j2, j1);
  CHECK_INT(st.n_conditions, 2);
  CHECK_STR(st.conditions[0].message, "paused by the controller (\u00e9t\u00e9)");
  session_status_clear(&st);
  free(j1);
  free(j2);
  /* an empty status is "{}" and reads back empty */
  memset(&st, 0, sizeof(st));
  CHECK_OK(session_status_to_json(&st, &j1));
  CHECK_STR(j1, "{}");
  free(j1);
  CHECK_INT(session_status_from_json("{\"conditions\":[1]}", &st, &eb),
            SC_ERR_INVALID);
  CHECK_STR(eb.msg, "status.conditions[0]: expected an object, got an integer");
  CHECK(st.conditions == NULL);
  session_free(s);
}

TEST(null_inputs_are_refused)
{
  char *out = (char *)1;
  CHECK_INT(session_to_json(NULL, &out), SC_ERR_INVALID);
  CHECK(out == NULL);
  CHECK_INT(session_spec_to_json(NULL, &out), SC_ERR_INVALID);
  CHECK_INT(session_status_to_json(NULL, &out), SC_ERR_INVALID);
  CHECK(session_to_json_object(NULL) == NULL);
}

TEST(pretty_is_same_object)
{
  session *s = full_session(), *back = NULL;
  char *p = NULL, *j1 = NULL, *j2 = NULL;
  sc_errbuf eb = {""};
  CHECK(s);
  CHECK_OK(session_to_json_pretty(s, &p));
  CHECK(strchr(p, '\n'));
  CHECK_MSG(session_from_json(p, strlen(p), &back, &eb) == SC_OK, "%s",
            eb.msg);
  CHECK_OK(session_to_json(s, &j1));
  CHECK_OK(session_to_json(back, &j2));
  CHECK_STR(j2, j1);
  free(p);
  free(j1);
  free(j2);
  session_free(s);
  session_free(back);
}


/* An object without its gate member (spec.workspace with a hostPath and no
 * mountPath, a row written by hand) keeps what it has through a round
 * trip, so that the validator sees it and names the missing member,
 * rather than the encoder dropping the object on the next write. Found by
 * fuzz_store_decode. */
TEST(gateless_object_round_trips)
{
  static const char *const in[] = {
    "{\"state\":\"Active\",\"workspace\":{\"hostPath\":\"/space\"}}",
    "{\"state\":\"Active\",\"network\":{\"allowOut\":[\"10.0.0.0/8\"]}}",
  };
  size_t i;
  for(i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
    session_spec sp, sp2;
    char *j = NULL;
    sc_errbuf eb = {""};
    CHECK_MSG(session_spec_from_json(in[i], &sp, &eb) == SC_OK, "%s", eb.msg);
    CHECK_OK(session_spec_to_json(&sp, &j));
    CHECK_STR(j, in[i]);
    CHECK_OK(session_spec_from_json(j, &sp2, &eb));
    CHECK(session_spec_equal(&sp, &sp2));
    session_spec_clear(&sp);
    session_spec_clear(&sp2);
    free(j);
  }
}

TEST_LIST = {T(full_round_trip),     T(exact_minimal_encoding),
             T(unset_reclaim_stays_unset), T(nulls_read_as_unset), T(trailing_whitespace_ok),
             T(strict_decoding_table),     T(lenient_metadata_flag),
             T(lenient_labels_and_annotations),
             T(spec_part_round_trip),      T(spec_part_errors),
             T(gateless_object_round_trips),
             T(status_part_round_trip),    T(pretty_is_same_object),
             T(null_inputs_are_refused),
             {0}};
TEST_MAIN()
