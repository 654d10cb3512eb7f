/* Tests of kube-apiserver-fake's structural schema code (kf_schema.c):
 * unknown fields, defaulting, validation messages, a CRD schema's checks,
 * printer-column JSONPath. */
#include "test/harness.h"
#include "cmd/kube-apiserver-fake/kf_schema.h"

/* a cut-down Session schema with the shapes that matter */
static const char *const schema_json =
  "{\"type\":\"object\",\"required\":[\"spec\"],\"properties\":{"
  "\"apiVersion\":{\"type\":\"string\"},\"kind\":{\"type\":\"string\"},"
  "\"metadata\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
  "\"string\",\"maxLength\":8,\"pattern\":\"^[a-z0-9]+$\"}}},"
  "\"spec\":{\"type\":\"object\",\"required\":[\"template\"],\"properties\":{"
  "\"template\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":5,"
  "\"pattern\":\"^[a-z.]+$\"},"
  "\"state\":{\"type\":\"string\",\"enum\":[\"Active\",\"Paused\"],"
  "\"default\":\"Active\"},"
  "\"wake\":{\"type\":\"integer\",\"minimum\":0,\"default\":0},"
  "\"ratio\":{\"type\":\"number\",\"maximum\":1},"
  "\"opts\":{\"type\":\"object\",\"default\":{},\"properties\":{"
  "\"level\":{\"type\":\"integer\",\"default\":3},"
  "\"tag\":{\"type\":\"string\",\"nullable\":true}}},"
  "\"env\":{\"type\":\"object\",\"maxProperties\":2,"
  "\"additionalProperties\":{\"type\":\"string\",\"pattern\":"
  "\"^[^\\\\x00-\\\\x1F]*$\"}},"
  "\"free\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":"
  "true},"
  "\"ports\":{\"type\":\"array\",\"maxItems\":2,\"items\":{\"type\":"
  "\"object\",\"properties\":{\"n\":{\"type\":\"integer\",\"default\":80}}}}"
  "}},"
  "\"status\":{\"type\":\"object\",\"properties\":{"
  "\"endAt\":{\"type\":\"string\",\"format\":\"date-time\"},"
  "\"phase\":{\"type\":\"string\"}}}}}";

static json_object *j(const char *txt)
{
  return json_tokener_parse(txt);
}

static const char *at(json_object *o, const char *path)
{
  json_object *v = kf_jsonpath_get(o, path);
  return v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN) :
         "(absent)";
}

/* the errors as "F: D|F: D" */
static void lines(const kf_errs *e, char *buf, size_t len)
{
  size_t i, o = 0;
  buf[0] = 0;
  for(i = 0; i < e->n && o < len; i++) {
    char l[600];
    kf_errs_line(e, i, l, sizeof(l));
    o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? "|" : "", l);
  }
}

TEST(unknown_fields_named_and_pruned)
{
  json_object *s = j(schema_json), *o = j(
    "{\"apiVersion\":\"lea.io/v1alpha1\",\"kind\":\"Session\",\"metadata\":"
    "{\"name\":\"a\",\"labels\":{\"x\":\"y\"},\"bogus\":1},\"spec\":{"
    "\"template\":\"t\",\"foo\":1,\"env\":{\"ANY\":\"v\"},\"free\":{\"k\":"
    "{\"deep\":1}},\"ports\":[{\"n\":1,\"extra\":2}]},\"status\":{\"x\":1},"
    "\"top\":true}");
  kf_errs e = {0};
  char buf[1000];
  kf_schema_prune(o, s, false, &e);
  lines(&e, buf, sizeof(buf));
  CHECK_INT(e.n, 5);
  /* not pruned: every field still there */
  CHECK_STR(at(o, ".spec.foo"), "1");
  kf_errs_free(&e);
  kf_schema_prune(o, s, true, &e);
  CHECK_INT(e.n, 5);
  CHECK_MSG(strstr(buf, "metadata.bogus: unknown field") &&
            strstr(buf, "spec.foo: unknown field") &&
            strstr(buf, "spec.ports[0].extra: unknown field") &&
            strstr(buf, "status.x: unknown field") &&
            strstr(buf, "top: unknown field"), "got %s", buf);
  CHECK_STR(at(o, ".spec.foo"), "(absent)");
  CHECK_STR(at(o, ".top"), "(absent)");
  CHECK_STR(at(o, ".metadata.bogus"), "(absent)");
  /* known: map keys, preserved subtrees, metadata fields */
  CHECK_STR(at(o, ".spec.env.ANY"), "\"v\"");
  CHECK_STR(at(o, ".spec.free.k.deep"), "1");
  CHECK_STR(at(o, ".metadata.labels.x"), "\"y\"");
  CHECK_STR(at(o, ".spec.ports[0].n"), "1");
  kf_errs_free(&e);
  kf_schema_prune(o, s, true, &e);
  CHECK_INT(e.n, 0);
  kf_errs_free(&e);
  json_object_put(o);
  json_object_put(s);
}

TEST(defaults_fill_absent_and_null_fields)
{
  json_object *s = j(schema_json), *o = j(
    "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"template\":\"t\",\"wake\":"
    "null,\"ports\":[{},{\"n\":8080}]}}");
  kf_schema_default(o, s);
  CHECK_STR(at(o, ".spec.state"), "\"Active\"");
  CHECK_STR(at(o, ".spec.wake"), "0");        /* null, not nullable */
  /* a defaulted object is defaulted in turn */
  CHECK_STR(at(o, ".spec.opts"), "{\"level\":3}");
  CHECK_STR(at(o, ".spec.ports[0].n"), "80");
  CHECK_STR(at(o, ".spec.ports[1].n"), "8080");
  CHECK_STR(at(o, ".spec.template"), "\"t\"");
  /* no status: nothing is made up under it */
  CHECK_STR(at(o, ".status"), "(absent)");
  json_object_put(o);
  o = j("{\"spec\":{\"template\":\"t\",\"state\":\"Paused\",\"opts\":{"
        "\"tag\":null,\"level\":1},\"free\":null}}");
  kf_schema_default(o, s);
  CHECK_STR(at(o, ".spec.state"), "\"Paused\"");   /* set: kept */
  CHECK_STR(at(o, ".spec.opts"), "{\"tag\":null,\"level\":1}");
  CHECK_STR(at(o, ".spec.free"), "(absent)");      /* null: dropped */
  json_object_put(o);
  /* no spec at all: nothing to default into */
  o = j("{\"metadata\":{\"name\":\"a\"}}");
  kf_schema_default(o, s);
  CHECK_STR(at(o, ".spec"), "(absent)");
  json_object_put(o);
  json_object_put(s);
}

static void check_errors(int *test_failed_, const char *obj,
                         const char *want)
{
  json_object *s = j(schema_json), *o = j(obj);
  kf_errs e = {0};
  char buf[4000];
  kf_schema_validate(o, s, &e);
  lines(&e, buf, sizeof(buf));
  kf_errs_free(&e);
  json_object_put(o);
  json_object_put(s);
  CHECK_STR(buf, want);
}

TEST(validation_messages_are_the_api_servers)
{
  check_errors(test_failed_, "{\"metadata\":{\"name\":\"a\"},\"spec\":{"
               "\"template\":\"t\"}}", "");
  check_errors(test_failed_, "{\"metadata\":{\"name\":\"a\"}}",
               "spec: Required value");
  check_errors(test_failed_, "{\"spec\":{\"template\":\"t\",\"wake\":"
               "\"lots\"}}", "spec.wake: Invalid value: \"string\": "
               "spec.wake in body must be of type integer: \"string\"");
  check_errors(test_failed_, "{\"spec\":{\"template\":15}}",
               "spec.template: Invalid value: \"integer\": spec.template in "
               "body must be of type string: \"integer\"");
  check_errors(test_failed_, "{\"spec\":{\"template\":\"t\",\"state\":"
               "\"Gone\"}}", "spec.state: Unsupported value: \"Gone\": "
               "supported values: \"Active\", \"Paused\"");
  check_errors(test_failed_, "{\"spec\":{}}",
               "spec.template: Required value");
  check_errors(test_failed_, "{\"spec\":{\"template\":\"a b\"}}",
               "spec.template: Invalid value: \"a b\": spec.template in "
               "body should match '^[a-z.]+$'");
  check_errors(test_failed_, "{\"spec\":{\"template\":\"abcdef\"}}",
               "spec.template: Too long: may not be more than 5 bytes");
  check_errors(test_failed_, "{\"spec\":{\"template\":\"\"}}",
               "spec.template: Invalid value: \"\": spec.template in body "
               "should be at least 1 chars long|spec.template: Invalid "
               "value: \"\": spec.template in body should match "
               "'^[a-z.]+$'");
  check_errors(test_failed_, "{\"spec\":{\"template\":\"t\",\"wake\":-1}}",
               "spec.wake: Invalid value: -1: spec.wake in body should be "
               "greater than or equal to 0");
  check_errors(test_failed_, "{\"spec\":{\"template\":\"t\",\"ratio\":1.5}}",
               "spec.ratio: Invalid value: 1.5: spec.ratio in body should be "
               "less than or equal to 1");
  check_errors(test_failed_, "{\"spec\":{\"template\":\"t\",\"env\":{\"a\":"
               "\"1\",\"b\":\"2\",\"c\":\"3\"}}}", "spec.env: Too many: 3: "
               "must have at most 2 items");
  check_errors(test_failed_, "{\"spec\":{\"template\":\"t\",\"ports\":[{},"
               "{},{}]}}", "spec.ports: Too many: 3: must have at most 2 "
               "items");
  check_errors(test_failed_, "{\"spec\":{\"template\":\"t\"},\"status\":{"
               "\"endAt\":\"soon\"}}", "status.endAt: Invalid value: \"soon\": "
               "status.endAt in body must be of type date-time: \"soon\"");
  check_errors(test_failed_, "{\"spec\":{\"template\":\"t\"},\"status\":{"
               "\"endAt\":\"2030-01-01T00:00:00Z\"}}", "");
  /* of metadata, only the name by the schema */
  check_errors(test_failed_, "{\"metadata\":{\"name\":\"Bad_Name\"},"
               "\"spec\":{\"template\":\"t\"}}", "metadata.name: Invalid "
               "value: \"Bad_Name\": metadata.name in body should match "
               "'^[a-z0-9]+$'");
  /* a pattern with RE2-only escapes is not checked (not misread) */
  check_errors(test_failed_, "{\"spec\":{\"template\":\"t\",\"env\":{\"A\":"
               "\"x\\\\x00\"}}}", "");
  /* a nullable field may be null */
  check_errors(test_failed_, "{\"spec\":{\"template\":\"t\",\"opts\":{"
               "\"tag\":null}}}", "");
}

TEST(crd_schema_checks)
{
  json_object *s = j(schema_json);
  kf_errs e = {0};
  char buf[2000];
  kf_schema_check(s, "x", &e);
  lines(&e, buf, sizeof(buf));
  CHECK_STR(buf, "");
  kf_errs_free(&e);
  json_object_put(s);
  s = j("{\"type\":\"object\",\"default\":{},\"properties\":{\"metadata\":{"
        "\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\","
        "\"default\":\"n\"}}},\"spec\":{\"type\":\"object\",\"properties\":{"
        "\"state\":{\"type\":\"string\",\"enum\":[\"A\"],\"default\":\"B\"},"
        "\"o\":{\"type\":\"object\",\"default\":{\"zz\":1},\"properties\":{"
        "\"a\":{\"type\":\"integer\"}}},\"untyped\":{}}}}}");
  kf_schema_check(s, "v", &e);
  lines(&e, buf, sizeof(buf));
  CHECK_INT(e.n, 5);
  CHECK_MSG(strstr(buf, "v.default: Forbidden: must not be set at the root") &&
            strstr(buf, "v.properties[metadata].properties[name].default: "
                   "Forbidden: must not be set inside metadata") &&
            strstr(buf, "v.properties[spec].properties[state].default: "
                   "Unsupported value: \"B\": supported values: \"A\"") &&
            strstr(buf, "v.properties[spec].properties[o].default.zz: "
                   "unknown field") &&
            strstr(buf, "v.properties[spec].properties[untyped].type: "
                   "Required value"), "got %s", buf);
  kf_errs_free(&e);
  json_object_put(s);
}

TEST(printer_column_jsonpath)
{
  json_object *o = j("{\"spec\":{\"state\":\"Active\",\"a.b\":1},"
                     "\"status\":{\"conditions\":[{\"type\":\"Ready\"}]}}");
  CHECK(kf_jsonpath_ok(".spec.state"));
  CHECK(kf_jsonpath_ok(".status.conditions[0].type"));
  CHECK(kf_jsonpath_ok(".spec['a.b']"));
  CHECK(kf_jsonpath_ok(".spec[\"a.b\"]"));
  CHECK(!kf_jsonpath_ok("spec.state"));
  CHECK(!kf_jsonpath_ok(".spec..state"));
  CHECK(!kf_jsonpath_ok(".status.conditions[?(@.type==\"Ready\")].status"));
  CHECK(!kf_jsonpath_ok(".spec['a.b'"));
  CHECK(!kf_jsonpath_ok("."));
  CHECK_STR(at(o, ".spec.state"), "\"Active\"");
  CHECK_STR(at(o, ".spec['a.b']"), "1");
  CHECK_STR(at(o, ".status.conditions[0].type"), "\"Ready\"");
  CHECK_STR(at(o, ".status.conditions[1].type"), "(absent)");
  CHECK_STR(at(o, ".status.phase"), "(absent)");
  CHECK_STR(at(o, ".spec.state.x"), "(absent)");
  json_object_put(o);
}

TEST_LIST = {
  T(unknown_fields_named_and_pruned),
  T(defaults_fill_absent_and_null_fields),
  T(validation_messages_are_the_api_servers),
  T(crd_schema_checks),
  T(printer_column_jsonpath),
  {0}
};
TEST_MAIN()
