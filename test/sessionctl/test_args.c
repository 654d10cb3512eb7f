/* test_args.c - sessionctl's one resource-argument parser
 * (ctl_resources_parse): every form get, describe, delete and wake accept,
 * and the forms kubectl rejects, rejected with exit status 2. The e2e
 * side (the same forms through each command, error texts, the store left
 * alone) is test/e2e/sessionctl_args.sh. */
#include <stdio.h>
#include <string.h>
#include "cmd/sessionctl/ctl.h"
#include "test/harness.h"

typedef struct args_case {
  const char *args[5];     /* NULL-terminated positional arguments */
  bool type_optional;
  int rc;                  /* CTL_EXIT_OK or CTL_EXIT_USAGE */
  bool have_type;
  const char *names;       /* the NAMEs joined by spaces */
} args_case;

static const args_case cases[] = {
  /* no arguments: the command decides (delete -f, get's error) */
  {{NULL}, false, CTL_EXIT_OK, false, ""},
  {{NULL}, true, CTL_EXIT_OK, false, ""},
  /* TYPE [NAME...], every spelling */
  {{"sessions", NULL}, false, CTL_EXIT_OK, true, ""},
  {{"session", "a", NULL}, false, CTL_EXIT_OK, true, "a"},
  {{"sess", "a", "b", NULL}, false, CTL_EXIT_OK, true, "a b"},
  {{"sessions.lea.io", "a", NULL}, false, CTL_EXIT_OK, true, "a"},
  {{"session.lea.io", "a", NULL}, false, CTL_EXIT_OK, true, "a"},
  /* a NAME that is spelled like the type is still a NAME after TYPE */
  {{"session", "sessions", NULL}, false, CTL_EXIT_OK, true, "sessions"},
  /* TYPE/NAME... */
  {{"session/a", NULL}, false, CTL_EXIT_OK, true, "a"},
  {{"session/a", "sess/b", "session.lea.io/c", NULL}, false, CTL_EXIT_OK,
   true, "a b c"},
  /* wake: bare NAMEs, or a TYPE first, or TYPE/NAME */
  {{"a", NULL}, true, CTL_EXIT_OK, false, "a"},
  {{"a", "b", NULL}, true, CTL_EXIT_OK, false, "a b"},
  {{"session", NULL}, true, CTL_EXIT_OK, false, "session"},
  {{"session", "a", NULL}, true, CTL_EXIT_OK, true, "a"},
  {{"a", "session", NULL}, true, CTL_EXIT_OK, false, "a session"},
  {{"session/a", "session/b", NULL}, true, CTL_EXIT_OK, true, "a b"},
  /* kubectl's errors */
  {{"sessions", "session/a", NULL}, false, CTL_EXIT_USAGE, false, ""},
  {{"session/a", "b", NULL}, false, CTL_EXIT_USAGE, false, ""},
  {{"a", "session/b", NULL}, true, CTL_EXIT_USAGE, false, ""},
  {{"session/a", "b", NULL}, true, CTL_EXIT_USAGE, false, ""},
  {{"session/", NULL}, false, CTL_EXIT_USAGE, false, ""},
  {{"/a", NULL}, false, CTL_EXIT_USAGE, false, ""},
  {{"/", NULL}, true, CTL_EXIT_USAGE, false, ""},
  {{"session/a/b", NULL}, false, CTL_EXIT_USAGE, false, ""},
  {{"pods/a", NULL}, true, CTL_EXIT_USAGE, false, ""},
  {{"pods", "a", NULL}, false, CTL_EXIT_USAGE, false, ""},
  {{"a", NULL}, false, CTL_EXIT_USAGE, false, ""},
  {{"sessions,pods", "a", NULL}, false, CTL_EXIT_USAGE, false, ""},
  {{"a-type-name-longer-than-sixty-three-characters-is-no-sessions-type/a",
    NULL}, false, CTL_EXIT_USAGE, false, ""},
};

static void join(const ctl_resources *r, char *buf, size_t len)
{
  size_t i, used = 0;
  buf[0] = 0;
  for(i = 0; i < r->n_names && used < len; i++) {
    int n = snprintf(buf + used, len - used, "%s%s", i ? " " : "",
                     r->names[i]);
    if(n < 0)
      break;
    used += (size_t)n;
  }
}

TEST(resource_forms)
{
  size_t c, i;
  for(c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    const args_case *k = &cases[c];
    ctl_resources r;
    char got[256];
    int rc;
    memset(&r, 0, sizeof(r));
    for(i = 0; k->args[i]; i++)
      CHECK_INT(ctl_resources_add(&r, k->args[i]), CTL_EXIT_OK);
    rc = ctl_resources_parse(&r, "get", k->type_optional);
    CHECK_MSG(rc == k->rc, "case %zu (%s ...): rc %d, want %d", c,
              k->args[0] ? k->args[0] : "(none)", rc, k->rc);
    if(rc)
      continue;
    join(&r, got, sizeof(got));
    CHECK_MSG(!strcmp(got, k->names), "case %zu: names \"%s\", want \"%s\"",
              c, got, k->names);
    CHECK_MSG(r.have_type == k->have_type, "case %zu: have_type %d", c,
              (int)r.have_type);
  }
}

TEST(too_many_arguments)
{
  ctl_resources r;
  size_t i;
  memset(&r, 0, sizeof(r));
  for(i = 0; i < CTL_MAX_NAMES; i++)
    CHECK_INT(ctl_resources_add(&r, "a"), CTL_EXIT_OK);
  CHECK_INT(ctl_resources_add(&r, "a"), CTL_EXIT_USAGE);
  CHECK_INT(r.n_args, CTL_MAX_NAMES);
}

TEST_LIST = {
  T(resource_forms),
  T(too_many_arguments),
  {0}
};

TEST_MAIN()
