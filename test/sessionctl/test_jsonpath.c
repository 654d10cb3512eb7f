/* test_jsonpath.c - cmd/sessionctl/jsonpath.c, the -o jsonpath=TEMPLATE
 * subset: every supported form on a Session-like object and a List, what
 * a missing field prints (nothing), how values print, and the exact error
 * of each kind of bad template. */
#include <stdlib.h>
#include <string.h>
#include "cmd/sessionctl/jsonpath.h"
#include "test/harness.h"

static const char obj_json[] =
  "{\"apiVersion\":\"lea.io/v1alpha1\",\"kind\":\"Session\","
  "\"metadata\":{\"name\":\"chat-1\",\"namespace\":\"tenant-a\","
  "\"generation\":3,"
  "\"labels\":{\"app.kubernetes.io/name\":\"chat\",\"course\":\"cs101\"}},"
  "\"spec\":{\"template\":\"python-data\",\"state\":\"Active\","
  "\"tags\":[\"a\",\"b\",\"c\"],\"wake\":0},"
  "\"status\":{\"phase\":\"Running\",\"sandboxID\":\"7c8f\","
  "\"pausedByController\":false,\"endAt\":null,\"ratio\":0.5,"
  "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
  "\"observedGeneration\":3},{\"type\":\"Conflict\",\"status\":\"False\","
  "\"observedGeneration\":2}]}}";

static const char list_json[] =
  "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"metadata\":"
  "{\"resourceVersion\":\"9\"},\"items\":["
  "{\"metadata\":{\"name\":\"a\"},\"status\":{\"phase\":\"Running\"},"
  "\"spec\":{\"tags\":[\"x\",\"y\"]}},"
  "{\"metadata\":{\"name\":\"b\"},\"spec\":{\"tags\":[]}},"
  "{\"metadata\":{\"name\":\"c\"},\"status\":{\"phase\":\"Paused\"}}]}";

/* The output of tmpl on json, or the parse error prefixed with "ERR: ". */
static char *run(const char *json, const char *tmpl)
{
  json_object *root = json_tokener_parse(json);
  char err[256];
  ctl_jsonpath *jp = ctl_jsonpath_parse(tmpl, err, sizeof(err));
  dynbuf b;
  char *s;
  dynbuf_init(&b, 1 << 20);
  if(!jp)
    dynbuf_printf(&b, "ERR: %s", err);
  else if(ctl_jsonpath_exec(jp, root, &b))
    dynbuf_addstr(&b, "EXEC FAILED");
  s = dynbuf_take(&b);
  ctl_jsonpath_free(jp);
  json_object_put(root);
  return s;
}

#define CHECK_JP(json, tmpl, want)                                          \
  do {                                                                      \
    char *got_ = run(json, tmpl);                                           \
    int same_ = got_ && !strcmp(got_, want);                                \
    if(!same_)                                                              \
      fprintf(stderr, "  template %s\n    got  [%s]\n    want [%s]\n", tmpl, \
              got_ ? got_ : "(null)", want);                                \
    free(got_);                                                             \
    CHECK(same_);                                                           \
  } while(0)

TEST(fields_of_the_object)
{
  CHECK_JP(obj_json, "{.metadata.name}", "chat-1");
  CHECK_JP(obj_json, "{.status.sandboxID}", "7c8f");
  CHECK_JP(obj_json, "{$.metadata.namespace}", "tenant-a");
  CHECK_JP(obj_json, "{@.spec.state}", "Active");
  CHECK_JP(obj_json, "{ .metadata.name }", "chat-1");
  CHECK_JP(obj_json, "{.metadata.generation}", "3");
  CHECK_JP(obj_json, "{.status.pausedByController}", "false");
  CHECK_JP(obj_json, "{.status.ratio}", "0.5");
  CHECK_JP(obj_json, "{.status.endAt}", "null");
  CHECK_JP(obj_json, "{.kind}", "Session");
}

TEST(missing_fields_print_nothing)
{
  CHECK_JP(obj_json, "[{.status.nope}]", "[]");
  CHECK_JP(obj_json, "[{.nope.deeper.still}]", "[]");
  CHECK_JP(obj_json, "[{.metadata.name.x}]", "[]");
  CHECK_JP(obj_json, "[{.spec.tags[7]}]", "[]");
  CHECK_JP(obj_json, "[{.spec.tags[-9]}]", "[]");
  CHECK_JP(obj_json, "[{.metadata[0]}]", "[]");
  CHECK_JP(list_json, "[{.metadata.name}]", "[]"); /* a List has none */
}

TEST(literal_text_and_string_literals)
{
  CHECK_JP(obj_json, "name={.metadata.name} tpl={.spec.template}",
           "name=chat-1 tpl=python-data");
  CHECK_JP(obj_json, "{.metadata.name}{\"\\n\"}", "chat-1\n");
  CHECK_JP(obj_json, "{'\\t'}{\"a\\\"b\"}{'c\\'d'}{\"\\\\\"}{\"\\/\"}",
           "\ta\"bc'd\\/");
  CHECK_JP(obj_json, "{\"}\"}{\"{\"}", "}{");
  /* no escapes outside braces, as kubectl */
  CHECK_JP(obj_json, "a\\nb}", "a\\nb}");
  CHECK_JP(obj_json, "", "");
}

TEST(values_print_as_kubectl_does)
{
  CHECK_JP(obj_json, "{.spec.tags}", "[\"a\",\"b\",\"c\"]");
  CHECK_JP(obj_json, "{.metadata.labels}",
           "{\"app.kubernetes.io/name\":\"chat\",\"course\":\"cs101\"}");
  CHECK_JP(obj_json, "{.spec.wake}", "0");
}

TEST(indexes_slices_and_wildcards)
{
  CHECK_JP(obj_json, "{.spec.tags[0]}", "a");
  CHECK_JP(obj_json, "{.spec.tags[-1]}", "c");
  CHECK_JP(obj_json, "{.spec.tags[*]}", "a b c");
  CHECK_JP(obj_json, "{.spec.tags[0:2]}", "a b");
  CHECK_JP(obj_json, "{.spec.tags[1:]}", "b c");
  CHECK_JP(obj_json, "{.spec.tags[:-1]}", "a b");
  CHECK_JP(obj_json, "{.spec.tags[5:9]}", "");
  CHECK_JP(obj_json, "{.metadata.labels.*}", "chat cs101");
  CHECK_JP(obj_json, "{.metadata.labels[*]}", "chat cs101");
  CHECK_JP(obj_json, "{.status.conditions[1].type}", "Conflict");
  CHECK_JP(obj_json, "{.status.conditions[*].type}", "Ready Conflict");
  CHECK_JP(list_json, "{.items[*].metadata.name}", "a b c");
  CHECK_JP(list_json, "{.items[*].status.phase}", "Running Paused");
  CHECK_JP(list_json, "{.items[0].metadata.name}", "a");
  CHECK_JP(list_json, "{.items.*.metadata.name}", "a b c");
  CHECK_JP(list_json, "{.items[*].spec.tags[*]}", "x y");
}

TEST(names_with_dots)
{
  CHECK_JP(obj_json, "{.metadata.labels['app.kubernetes.io/name']}", "chat");
  CHECK_JP(obj_json, "{.metadata.labels[\"app.kubernetes.io/name\"]}",
           "chat");
  CHECK_JP(obj_json, "{.metadata.labels.app\\.kubernetes\\.io/name}", "chat");
  CHECK_JP(obj_json, "{['metadata']['name']}", "chat-1");
}

TEST(filters)
{
  CHECK_JP(obj_json, "{.status.conditions[?(@.type==\"Ready\")].status}",
           "True");
  CHECK_JP(obj_json, "{.status.conditions[?(@.type=='Conflict')].status}",
           "False");
  CHECK_JP(obj_json, "{.status.conditions[?( @.type != 'Ready' )].type}",
           "Conflict");
  CHECK_JP(obj_json,
           "{.status.conditions[?(@.observedGeneration>=3)].type}", "Ready");
  CHECK_JP(obj_json,
           "{.status.conditions[?(@.observedGeneration<3)].type}", "Conflict");
  CHECK_JP(obj_json,
           "{.status.conditions[?(@.observedGeneration>1.5)].type}",
           "Ready Conflict");
  CHECK_JP(obj_json, "{.status.conditions[?(@.observedGeneration)].type}",
           "Ready Conflict");
  CHECK_JP(obj_json, "[{.status.conditions[?(@.nope)].type}]", "[]");
  /* a string never equals a number */
  CHECK_JP(obj_json,
           "[{.status.conditions[?(@.observedGeneration==\"3\")].type}]",
           "[]");
  CHECK_JP(list_json, "{.items[?(@.status.phase=='Paused')].metadata.name}",
           "c");
  CHECK_JP(list_json, "{.items[?(@.spec.tags[0]=='x')].metadata.name}", "a");
}

TEST(ranges)
{
  CHECK_JP(list_json,
           "{range .items[*]}{.metadata.name}{\"\\t\"}{.status.phase}"
           "{\"\\n\"}{end}",
           "a\tRunning\nb\t\nc\tPaused\n");
  CHECK_JP(list_json, "{range .items[*]}[{.metadata.name}]{end}done",
           "[a][b][c]done");
  /* nested, and @ / $ are the range's item */
  CHECK_JP(list_json,
           "{range .items[*]}{@.metadata.name}:{range .spec.tags[*]}<{@}>"
           "{end};{end}",
           "a:<x><y>;b:;c:;");
  CHECK_JP(list_json, "{range .items[*]}{$.metadata.name} {end}", "a b c ");
  CHECK_JP(list_json, "{range .nope[*]}x{end}-", "-");
  CHECK_JP(obj_json, "{range .spec.tags[*]}{.}{end}", "abc");
}

TEST(bad_templates_say_what_and_where)
{
  CHECK_JP(obj_json, "{.metadata.name", "ERR: unclosed action at column 1");
  CHECK_JP(obj_json, "ab{", "ERR: unclosed action at column 3");
  CHECK_JP(obj_json, "{}", "ERR: empty action {} at column 1");
  CHECK_JP(obj_json, "{range .items[*]}{.x}",
           "ERR: {range} without an {end} at column 1");
  CHECK_JP(obj_json, "x{end}", "ERR: {end} without a {range} at column 2");
  CHECK_JP(obj_json, "{range}{end}",
           "ERR: {range} needs a path, as in {range .items[*]} at column 7");
  CHECK_JP(obj_json, "{..name}",
           "ERR: recursive descent (..) is not supported at column 2");
  CHECK_JP(obj_json, "{.items[0,1]}",
           "ERR: unions ([a,b]) are not supported at column 10");
  CHECK_JP(obj_json, "{.a['x','y']}",
           "ERR: unions ([a,b]) are not supported at column 8");
  CHECK_JP(obj_json, "{.a[1:2:3]}",
           "ERR: slice steps ([start:end:step]) are not supported at "
           "column 8");
  CHECK_JP(obj_json, "{metadata.name}",
           "ERR: unrecognized identifier \"metadata\" (a field path starts "
           "with '.', as in {.metadata}) at column 2");
  CHECK_JP(obj_json, "{%}",
           "ERR: unrecognized character '%' in an action at column 2");
  CHECK_JP(obj_json, "{.a b}", "ERR: unexpected 'b' in an action at column 5");
  CHECK_JP(obj_json, "{\"abc}", "ERR: unterminated string at column 2");
  CHECK_JP(obj_json, "{\"\\q\"}",
           "ERR: unknown escape \\ followed by 'q' in a string (use \\n \\t "
           "\\r \\\\ \\\" \\' or \\/) at column 3");
  CHECK_JP(obj_json, "{.a[x]}",
           "ERR: expected an index, a slice, '*', a quoted name or a filter "
           "after '[', found 'x' at column 5");
  CHECK_JP(obj_json, "{.a[0}", "ERR: expected ']', found '}' at column 6");
  CHECK_JP(obj_json, "{.a[?(@.x=~'y')]}",
           "ERR: regular expressions (=~) are not supported at column 10");
  CHECK_JP(obj_json, "{.a[?(@.x=='y' && @.z)]}",
           "ERR: && and || are not supported in a filter at column 16");
  CHECK_JP(obj_json, "{.a[?(.x=='y')]}",
           "ERR: a filter starts with @, as in [?(@.type==\"Ready\")]; found "
           "'.' at column 7");
  CHECK_JP(obj_json, "{.a[?(@.x==@.y)]}",
           "ERR: comparing two paths is not supported (compare with a "
           "literal: a number, 'string', true or false) at column 12");
  CHECK_JP(obj_json, "{.a[?(@.x)}",
           "ERR: expected ']' after the filter, found '}' at column 11");
  CHECK_JP(obj_json, "{.a[?(@.x==yes)]}",
           "ERR: expected a literal (a number, 'string', true or false), "
           "found 'y' at column 12");
}

TEST(deep_nesting_is_refused)
{
  char tmpl[2048];
  size_t i, n = 0;
  for(i = 0; i < 40; i++)
    n += (size_t)snprintf(tmpl + n, sizeof(tmpl) - n, "{range .a[*]}");
  for(i = 0; i < 40; i++)
    n += (size_t)snprintf(tmpl + n, sizeof(tmpl) - n, "{end}");
  {
    char *got = run(obj_json, tmpl);
    CHECK(got && strstr(got, "ERR: ranges nested too deep"));
    free(got);
  }
}

/* Random templates from the characters that matter: each parses or is
 * refused with a message, and whatever parses runs (valgrind and ASan
 * runs of this test check the memory side). Fixed seed: reproducible. */
TEST(garbage_never_crashes)
{
  static const char chars[] = "{}[]().*@$?=!<>'\"\\ ,:-0129abcgnrt\t";
  json_object *root = json_tokener_parse(obj_json);
  unsigned long x = 12345;
  size_t round, parsed = 0;
  dynbuf b;
  CHECK(root);
  dynbuf_init(&b, 1 << 20);
  for(round = 0; round < 20000; round++) {
    char tmpl[40], err[256];
    size_t i, len;
    ctl_jsonpath *jp;
    x = x * 1103515245UL + 12345UL;
    len = (x >> 16) % (sizeof(tmpl) - 1);
    for(i = 0; i < len; i++) {
      x = x * 1103515245UL + 12345UL;
      tmpl[i] = chars[(x >> 16) % (sizeof(chars) - 1)];
    }
    tmpl[len] = 0;
    err[0] = 0;
    jp = ctl_jsonpath_parse(tmpl, err, sizeof(err));
    if(jp) {
      parsed++;
      dynbuf_reset(&b);
      CHECK_OK(ctl_jsonpath_exec(jp, root, &b));
      ctl_jsonpath_free(jp);
    }
    else
      CHECK_MSG(err[0] && !strchr(err, '\n'), "template [%s]: no message",
                tmpl);
  }
  CHECK(parsed > 100);
  dynbuf_free(&b);
  json_object_put(root);
}

TEST_LIST = {T(fields_of_the_object),
             T(missing_fields_print_nothing),
             T(literal_text_and_string_literals),
             T(values_print_as_kubectl_does),
             T(indexes_slices_and_wildcards),
             T(names_with_dots),
             T(filters),
             T(ranges),
             T(bad_templates_say_what_and_where),
             T(deep_nesting_is_refused),
             T(garbage_never_crashes),
             {0}};
TEST_MAIN()
