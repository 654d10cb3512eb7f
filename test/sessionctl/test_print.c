/* test_print.c - sessionctl's output helpers and option parser: table
 * layout (kubectl's tabwriter rules), session rows, YAML quoting and
 * emission, describe text, argument parsing. */
#include <stdlib.h>
#include <string.h>
#include "cmd/sessionctl/ctl.h"
#include "cmd/sessionctl/describe.h"
#include "cmd/sessionctl/print.h"
#include "api/manifest.h"
#include "api/session_json.h"
#include "test/harness.h"

/* 2026-11-29T10:00:00Z */
#define T0 1795946400000LL

TEST(table_pads_to_widest_plus_three)
{
  static const char *const hdr[] = {"NAME", "STATE", "AGE"};
  static const char *const r1[] = {"chat-7f3a", "Active", "5s"};
  static const char *const r2[] = {"x", "Paused", "12m"};
  ctl_table *t = ctl_table_new(3);
  dynbuf b;
  int ok;
  dynbuf_init(&b, 4096);
  CHECK(t);
  ok = !ctl_table_add(t, hdr) && !ctl_table_add(t, r1) &&
       !ctl_table_add(t, r2) && !ctl_table_flush(t, &b);
  if(ok)
    ok = !strcmp(dynbuf_ptr(&b), "NAME        STATE    AGE\n"
                                 "chat-7f3a   Active   5s\n"
                                 "x           Paused   12m\n");
  if(!ok)
    fprintf(stderr, "got:\n%s", dynbuf_ptr(&b));
  ctl_table_free(t);
  dynbuf_free(&b);
  CHECK(ok);
}

TEST(table_minwidth_and_remembered_widths)
{
  static const char *const hdr[] = {"A", "B"};
  static const char *const r1[] = {"a-much-longer-cell", "x"};
  ctl_table *t = ctl_table_new(2);
  dynbuf b;
  int ok;
  dynbuf_init(&b, 4096);
  CHECK(t);
  /* "A" is padded to the minimum width 6 */
  ok = !ctl_table_add(t, hdr) && !ctl_table_flush(t, &b) &&
       !strcmp(dynbuf_ptr(&b), "A     B\n");
  dynbuf_reset(&b);
  /* a wider cell widens the column for later flushes */
  ok = ok && !ctl_table_add(t, r1) && !ctl_table_flush(t, &b) &&
       !strcmp(dynbuf_ptr(&b), "a-much-longer-cell   x\n");
  dynbuf_reset(&b);
  ok = ok && !ctl_table_add(t, hdr) && !ctl_table_flush(t, &b) &&
       !strcmp(dynbuf_ptr(&b), "A                    B\n");
  if(!ok)
    fprintf(stderr, "got: [%s]\n", dynbuf_ptr(&b));
  ctl_table_free(t);
  dynbuf_free(&b);
  CHECK(ok);
}

TEST(display_width_counts_code_points)
{
  CHECK_INT(ctl_display_width(""), 0);
  CHECK_INT(ctl_display_width("abc"), 3);
  CHECK_INT(ctl_display_width("caf\xc3\xa9"), 4);
}

TEST(yaml_quoting)
{
  static const struct {
    const char *s;
    int quote;
  } cases[] = {
    {"", 1},         {"true", 1},       {"True", 1},      {"no", 1},
    {"on", 1},       {"null", 1},       {"~", 1},         {"0", 1},
    {"42", 1},       {"-1", 1},         {"1.5", 1},       {"1e3", 1},
    {"0x1F", 1},     {".inf", 1},       {"-.inf", 1},     {".nan", 1},
    {"1_000", 1},    {"1:30", 1},       {"0o17", 1},
    {"2026-11-29T10:15:00Z", 1},        {"2026-11-29", 1},
    {"15m", 0},      {"1h30m", 0},      {"chat-7f3a", 0}, {"Active", 0},
    {"python-data", 0}, {"C.UTF-8", 0}, {"yesterday", 0}, {"nothing", 0},
    {"tenant-a", 0}, {"lea.io/v1alpha1", 0},
  };
  size_t i;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    CHECK_MSG(ctl_yaml_needs_quotes(cases[i].s) == (cases[i].quote != 0),
              "ctl_yaml_needs_quotes(\"%s\") should be %d", cases[i].s,
              cases[i].quote);
}

TEST(yaml_print_block_style)
{
  json_object *o = json_tokener_parse(
    "{\"apiVersion\":\"lea.io/v1alpha1\",\"kind\":\"Session\","
    "\"metadata\":{\"name\":\"a\",\"labels\":{},\"generation\":2},"
    "\"spec\":{\"idleTimeout\":\"15m\",\"wake\":0,\"x\":true,"
    "\"s\":\"True\",\"t\":\"2026-11-29T10:15:00Z\",\"m\":\"a: b\"},"
    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"n\":null}]}}");
  const char *want =
    "apiVersion: lea.io/v1alpha1\n"
    "kind: Session\n"
    "metadata:\n"
    "  name: a\n"
    "  labels: {}\n"
    "  generation: 2\n"
    "spec:\n"
    "  idleTimeout: 15m\n"
    "  wake: 0\n"
    "  x: true\n"
    "  s: \"True\"\n"
    "  t: \"2026-11-29T10:15:00Z\"\n"
    "  m: 'a: b'\n"
    "status:\n"
    "  conditions:\n"
    "  - type: Ready\n"
    "    \"n\": null\n";
  dynbuf b;
  int ok;
  CHECK(o);
  dynbuf_init(&b, 4096);
  ok = !ctl_yaml_print(o, &b) && !strcmp(dynbuf_ptr(&b), want);
  if(!ok)
    fprintf(stderr, "got:\n%s", dynbuf_ptr(&b));
  json_object_put(o);
  dynbuf_free(&b);
  CHECK(ok);
}

static session *sample(void)
{
  session *s = session_new();
  if(!s)
    return NULL;
  s->meta.name = strdup("chat-7f3a");
  s->meta.namespace_ = strdup("tenant-a");
  s->meta.generation = 3;
  s->meta.creation_timestamp = T0;
  s->spec.template_id = strdup("python-data");
  s->spec.tenant_id = strdup("tenant-a");
  s->spec.state = SESSION_STATE_RUNNING;
  s->spec.idle_timeout_ms = 15 * 60000;
  s->spec.reclaim_after_ms = 0;
  s->status.phase = SESSION_PHASE_RUNNING;
  s->status.sandbox_id = strdup("sb-1");
  s->status.end_at = T0 + 900000;
  s->status.observed_generation = 2;
  return s;
}

TEST(session_rows_all_columns)
{
  ctl_columns c = {true, true, true};
  const char *hdr[CTL_TABLE_MAXCOLS];
  size_t n = ctl_session_header(&c, hdr);
  session *s = sample();
  ctl_table *t;
  dynbuf b;
  int ok;
  CHECK(s);
  CHECK_INT(n, 11);
  CHECK_STR(hdr[0], "EVENT");
  CHECK_STR(hdr[1], "NAMESPACE");
  CHECK_STR(hdr[2], "NAME");
  CHECK_STR(hdr[7], "AGE");
  CHECK_STR(hdr[10], "OBSERVED");
  t = ctl_table_new(n);
  dynbuf_init(&b, 4096);
  ok = t && !ctl_session_row(t, &c, s, "MODIFIED", T0 + 3 * 3600000 + 4 * 60000) &&
       !ctl_table_flush(t, &b);
  ok = ok && !strcmp(dynbuf_ptr(&b),
                     "MODIFIED   tenant-a   chat-7f3a   tenant-a   Running   "
                     "Running   sb-1   3h4m   2026-11-29T10:15:00Z   3     2\n");
  if(!ok)
    fprintf(stderr, "got: [%s]\n", dynbuf_ptr(&b));
  dynbuf_free(&b);
  ctl_table_free(t);
  session_free(s);
  CHECK(ok);
}

TEST(session_row_unset_fields_print_none)
{
  ctl_columns c = {false, false, false};
  session *s = sample();
  ctl_table *t = ctl_table_new(6);
  dynbuf b;
  int ok;
  CHECK(s && t);
  s->status.phase = SESSION_PHASE_NONE;
  free(s->status.sandbox_id);
  s->status.sandbox_id = NULL;
  dynbuf_init(&b, 4096);
  ok = !ctl_session_row(t, &c, s, NULL, T0 + 5000) &&
       !ctl_table_flush(t, &b) &&
       !strcmp(dynbuf_ptr(&b),
               "chat-7f3a   tenant-a   Running   <none>   <none>   5s\n");
  if(!ok)
    fprintf(stderr, "got: [%s]\n", dynbuf_ptr(&b));
  dynbuf_free(&b);
  ctl_table_free(t);
  session_free(s);
  CHECK(ok);
}

TEST(describe_layout)
{
  session *s = sample();
  session_condition cond = {"Ready", "True", "SandboxRunning", "up",
                            T0 + 1000, 3};
  dynbuf b;
  const char *p;
  int ok;
  CHECK(s);
  CHECK_OK(sc_kvlist_set(&s->meta.labels, "course", "cs101"));
  CHECK_OK(sc_kvlist_set(&s->meta.labels, "team", "x"));
  CHECK_OK(session_status_set_condition(&s->status, &cond));
  dynbuf_init(&b, 65536);
  ok = !ctl_describe(s, &b);
  p = dynbuf_ptr(&b);
  ok = ok && strstr(p, "Name:                 chat-7f3a\n") &&
       strstr(p, "Labels:               course=cs101\n"
                 "                      team=x\n") &&
       strstr(p, "Spec:\n  Template:             python-data\n") &&
       strstr(p, "  Reclaim After:        0 (never)\n") &&
       strstr(p, "  Idle Timeout:         15m\n") &&
       strstr(p, "  Env Vars:             <none>\n") &&
       strstr(p, "Status:\n  Phase:                Running\n") &&
       strstr(p, "  End At:               2026-11-29T10:15:00Z\n") &&
       strstr(p, "Conditions:\n  Type    Status   Reason           Message"
                 "   LastTransitionTime\n") &&
       strstr(p, "  Ready   True     SandboxRunning   up        "
                 "2026-11-29T10:00:01Z\n");
  if(!ok)
    fprintf(stderr, "got:\n%s", p);
  dynbuf_free(&b);
  session_free(s);
  CHECK(ok);
}

/* --- the option parser --- */

static const ctl_opt test_opts[] = {
  {"namespace", 'n', true, 1},
  {"all-namespaces", 'A', false, 2},
  {"watch", 'w', false, 3},
  {"output", 'o', true, 4},
  {NULL, 0, false, 0}
};

/* Parse a space-separated command line; returns "id=val id ..." */
static void parse_line(const char *line, char *out, size_t len)
{
  char buf[256], *argv[32], *save = NULL, *tok;
  int argc = 0, id;
  const char *val;
  ctl_args p;
  size_t used = 0;
  snprintf(buf, sizeof(buf), "%s", line);
  for(tok = strtok_r(buf, " ", &save); tok && argc < 31;
      tok = strtok_r(NULL, " ", &save))
    argv[argc++] = tok;
  argv[argc] = NULL;
  out[0] = 0;
  ctl_args_init(&p, argc, argv, test_opts);
  while((id = ctl_args_next(&p, &val)) != CTL_ARG_END && used < len) {
    int n;
    if(id == CTL_ARG_ERR) {
      n = snprintf(out + used, len - used, "ERR(%s)", p.err);
      used += n > 0 ? (size_t)n : 0;
      break;
    }
    n = snprintf(out + used, len - used, "%s%d%s%s", used ? " " : "", id,
                 val ? "=" : "", val ? val : "");
    used += n > 0 ? (size_t)n : 0;
  }
}

TEST(args_forms)
{
  static const struct {
    const char *line, *want;
  } cases[] = {
    {"get sessions -n ns1", "-1=sessions 1=ns1"},
    {"get -nns1 sessions", "1=ns1 -1=sessions"},
    {"get --namespace=ns1 x", "1=ns1 -1=x"},
    {"get --namespace ns1", "1=ns1"},
    {"get -Aw", "2 3"},
    {"get -Awo wide", "2 3 4=wide"},
    {"get -owide", "4=wide"},
    {"get -- -n", "-1=-n"},
    {"get - x", "-1=- -1=x"},
    {"get --store sqlite:x.db -h", "1000=sqlite:x.db 1001"},
    {"get --watch=true", "3"},
    {"get -x", "ERR(unknown shorthand flag: 'x')"},
    {"get --bogus", "ERR(unknown flag: --bogus)"},
    {"get -n", "ERR(flag needs an argument: 'n')"},
    {"get --output", "ERR(flag needs an argument: --output)"},
    {"get --watch=false", "3=false"},
    {"get --watch=1", "ERR(flag --watch is a boolean: true or false)"},
  };
  size_t i;
  char got[512];
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    parse_line(cases[i].line, got, sizeof(got));
    CHECK_MSG(!strcmp(got, cases[i].want), "\"%s\": got \"%s\", want \"%s\"",
              cases[i].line, got, cases[i].want);
  }
}

TEST(output_and_resource_names)
{
  CHECK_INT(ctl_output_parse("wide"), CTL_OUTPUT_WIDE);
  CHECK_INT(ctl_output_parse("json"), CTL_OUTPUT_JSON);
  CHECK_INT(ctl_output_parse("yaml"), CTL_OUTPUT_YAML);
  CHECK_INT(ctl_output_parse("name"), CTL_OUTPUT_NAME);
  CHECK_INT(ctl_output_parse("xml"), -1);
  CHECK(ctl_is_session_resource("sessions"));
  CHECK(ctl_is_session_resource("sess"));
  CHECK(ctl_is_session_resource("session.lea.io"));
  CHECK(!ctl_is_session_resource("pods"));
  CHECK(!ctl_is_session_resource("Sessions"));
}

/* An empty List is a List with "items": [], in both JSON forms; a watch
 * line is one compact line even when a value has line breaks. */
TEST(json_list_and_line_forms)
{
  json_object *o = ctl_list_json(NULL, 0, "7"), *back;
  session *s = sample();
  dynbuf b;
  const char *nl;
  CHECK(o && s);
  dynbuf_init(&b, 1 << 20);
  CHECK_OK(ctl_json_print_line(o, &b));
  CHECK_STR(dynbuf_ptr(&b), "{\"apiVersion\":\"v1\",\"kind\":\"List\","
                            "\"items\":[],\"metadata\":"
                            "{\"resourceVersion\":\"7\"}}\n");
  dynbuf_reset(&b);
  CHECK_OK(ctl_json_print(o, &b));
  back = json_tokener_parse(dynbuf_ptr(&b));
  CHECK(back);
  CHECK_INT(json_object_array_length(
              json_object_object_get(back, "items")), 0);
  json_object_put(back);
  json_object_put(o);
  dynbuf_reset(&b);
  CHECK_OK(sc_kvlist_set(&s->meta.annotations, "note", "two\nlines"));
  o = session_to_json_object(s);
  CHECK(o);
  CHECK_OK(ctl_json_print_line(o, &b));
  nl = strchr(dynbuf_ptr(&b), '\n');
  CHECK(nl && nl[1] == 0);
  json_object_put(o);
  session_free(s);
  dynbuf_free(&b);
}

/* What get -o json and -o yaml print (all the store's metadata, and a
 * status) reads back through the manifest reader as the same spec. */
TEST(json_and_yaml_output_apply_back)
{
  session *s = sample(), *objs[1];
  json_object *o;
  dynbuf b;
  int form;
  CHECK(s);
  s->meta.uid = strdup("6f1c1e0e-4b1a-4c55-9d1e-0c1f2a3b4c5d");
  s->meta.resource_version = strdup("42");
  CHECK_OK(sc_kvlist_set(&s->spec.env_vars, "LANG", "C.UTF-8"));
  CHECK_OK(session_apply_defaults(s)); /* as a stored object has them */
  objs[0] = s;
  dynbuf_init(&b, 1 << 20);
  for(form = 0; form < 4; form++) {
    manifest_set set = {0};
    o = form < 2 ? ctl_list_json(objs, 1, "43") : session_to_json_object(s);
    CHECK(o);
    dynbuf_reset(&b);
    if(form % 2)
      CHECK_OK(ctl_yaml_print(o, &b));
    else
      CHECK_OK(ctl_json_print(o, &b));
    json_object_put(o);
    CHECK_OK(manifest_read_buffer("out", dynbuf_ptr(&b), dynbuf_len(&b),
                                  NULL, &set));
    CHECK_MSG(set.n_errors == 0, "form %d: %s", form,
              set.n_errors ? set.errors[0] : "");
    CHECK_INT(set.n, 1);
    CHECK(session_spec_equal(&set.items[0].s->spec, &s->spec));
    CHECK(set.items[0].s->meta.uid == NULL);
    CHECK_INT(set.items[0].s->meta.generation, 0);
    manifest_set_free(&set);
  }
  session_free(s);
  dynbuf_free(&b);
}

TEST_LIST = {
  T(table_pads_to_widest_plus_three),
  T(table_minwidth_and_remembered_widths),
  T(display_width_counts_code_points),
  T(yaml_quoting),
  T(yaml_print_block_style),
  T(session_rows_all_columns),
  T(session_row_unset_fields_print_none),
  T(describe_layout),
  T(args_forms),
  T(output_and_resource_names),
  T(json_list_and_line_forms),
  T(json_and_yaml_output_apply_back),
  {0}
};

TEST_MAIN()
