/* test_policy.c - the tenant policy (api/policy.h) and the planner's
 * rule5_tenant_policy_bounds: building from flags and files, paths,
 * volumes, egress, templates, the layers, the sandbox a create makes. */
#include "test/harness.h"

#include <unistd.h>

#include "api/policy.h"
#include "test/unit/plan_world.h"

#define ACT SESSION_STATE_ACTIVE
#define SBR CUBE_SB_RUNNING
#define NOW W_NOW

static policy *flags_policy(const char *roots, const char *vols,
                            const char *egress, const char *allow,
                            const char *tmpl)
{
  policy_flags f = {roots, vols, egress, allow, tmpl};
  policy *p = NULL;
  sc_errbuf eb;
  if(policy_load(&f, NULL, &p, &eb)) {
    fprintf(stderr, "  policy_load: %s\n", eb.msg);
    return NULL;
  }
  return p;
}

/* a policy file of text, loaded; NULL with eb on error */
static policy *file_policy(const policy_flags *f, const char *text,
                           sc_errbuf *eb)
{
  char path[] = "/tmp/sc-policy-XXXXXX";
  int fd = mkstemp(path);
  policy *p = NULL;
  if(fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
    abort();
  close(fd);
  eb->msg[0] = '\0';
  if(policy_load(f, path, &p, eb))
    p = NULL;
  unlink(path);
  return p;
}

static session *sess(const char *ns, const char *name)
{
  session *s = session_new();
  if(!s)
    abort();
  s->meta.namespace_ = strdup(ns);
  s->meta.name = strdup(name);
  s->spec.template_id = strdup("python-data");
  return s;
}

static void set(char **f, const char *v)
{
  free(*f);
  *f = v ? strdup(v) : NULL;
}

static char **strs1(const char *a, size_t *n)
{
  char **v = calloc(1, sizeof(*v));
  if(!v || !(v[0] = strdup(a)))
    abort();
  *n = 1;
  return v;
}

static const char *why(const policy *p, const session *s)
{
  static char buf[POLICY_REASON_MAX];
  if(!policy_denied(p, s, buf, sizeof(buf)))
    return "(allowed)";
  return buf;
}

TEST(flags_are_checked_and_say_which)
{
  policy_flags f = {0};
  policy *p = NULL;
  sc_errbuf eb;
  f.egress_ceiling = "open";
  CHECK(policy_load(&f, NULL, &p, &eb) == SC_ERR_INVALID);
  CHECK_STR(eb.msg, "--egress-ceiling: \"open\" is not none, allowlist or "
                    "internet");
  f.egress_ceiling = NULL;
  f.volume_policy = "all";
  CHECK(policy_load(&f, NULL, &p, &eb) == SC_ERR_INVALID);
  f.volume_policy = NULL;
  f.workspace_roots = "/";
  CHECK(policy_load(&f, NULL, &p, &eb) == SC_ERR_INVALID);
  CHECK(strstr(eb.msg, "--workspace-root: \"/\" is \"/\""));
  f.workspace_roots = "/data/ws/";
  CHECK(policy_load(&f, NULL, &p, &eb) == SC_ERR_INVALID);
  f.workspace_roots = "/data/../etc";
  CHECK(policy_load(&f, NULL, &p, &eb) == SC_ERR_INVALID);
  f.workspace_roots = "data";
  CHECK(policy_load(&f, NULL, &p, &eb) == SC_ERR_INVALID);
  f.workspace_roots = "/data/ws, /nfs";
  f.egress_allow = "10.0.0.0/8,not a host";
  CHECK(policy_load(&f, NULL, &p, &eb) == SC_ERR_INVALID);
  CHECK(strstr(eb.msg, "--egress-allow: \"not a host\""));
  f.egress_allow = "10.0.0.0/8, pypi.org";
  CHECK_OK(policy_load(&f, NULL, &p, &eb));
  CHECK(p && !policy_file(p));
  policy_free(p);
}

/* with nothing set, everything a tenant could reach beyond its sandbox is
 * refused; a spec that asks for none of it is allowed */
TEST(the_default_is_closed)
{
  policy *p = flags_policy(NULL, NULL, NULL, NULL, NULL);
  session *s = sess("tenant-a", "x");
  policy_sandbox sb;
  CHECK(p);
  CHECK_STR(why(p, s), "(allowed)");
  set(&s->spec.workspace_mount_path, "/workspace");
  CHECK(strstr(why(p, s), "spec.workspace.mountPath: no workspace root is "
                          "set for tenant tenant-a"));
  set(&s->spec.workspace_mount_path, NULL);
  s->spec.volume_mounts = calloc(1, sizeof(*s->spec.volume_mounts));
  s->spec.n_volume_mounts = 1;
  s->spec.volume_mounts[0].name = strdup("tenant-a-data");
  s->spec.volume_mounts[0].path = strdup("/d");
  CHECK(strstr(why(p, s), "spec.volumeMounts[0].name: volumes are not "
                          "allowed for tenant tenant-a (volumes none, "
                          "--volume-policy)"));
  session_spec_clear(&s->spec);
  s->spec.template_id = strdup("python-data");
  s->spec.net_internet = SESSION_OPT_TRUE;
  CHECK(strstr(why(p, s), "spec.network.allowInternetAccess: true is beyond "
                          "tenant tenant-a's egress ceiling none"));
  /* a spec that asks nothing: no internet, no allowOut */
  s->spec.net_internet = SESSION_OPT_UNSET;
  policy_sandbox_of(p, s, &sb);
  CHECK_INT(sb.spec.net_internet, SESSION_OPT_FALSE);
  CHECK_INT(sb.spec.n_net_allow_out, 0);
  session_free(s);
  policy_free(p);
}

TEST(workspace_paths_lie_below_the_tenants_root)
{
  policy *p = flags_policy("/data/ws,/nfs/b", NULL, "internet", NULL, NULL);
  session *s = sess("tenant-a", "chat-1");
  static const struct {
    const char *path;
    bool ok;
  } cases[] = {
    {"/data/ws/tenant-a/chat-1", true},
    {"/data/ws/tenant-a/deep/er", true},
    {"/nfs/b/tenant-a/x", true},       /* the second root */
    {"/data/ws/tenant-a", false},      /* the tenant's root itself */
    {"/data/ws/tenant-a/", false},     /* trailing slash */
    {"/data/ws/tenant-b/chat-9", false},
    {"/data/ws/tenant-a-evil/x", false},
    {"/data/ws/tenant-a/../tenant-b", false},
    {"/data/ws/tenant-a/./x", false},
    {"/data/ws//tenant-a/x", false},
    {"/data/ws/tenant-a//x", false},
    {"/data/wsx/tenant-a/x", false},
    {"/data/wsXtenant-a/x", false},  /* no "/" after the root */
    {"/data/ws/tenant-a/x/..", false},
    {"/etc/shadow", false},
  };
  size_t i;
  CHECK(p);
  set(&s->spec.workspace_mount_path, "/workspace");
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    set(&s->spec.workspace_host_path, cases[i].path);
    CHECK_MSG(!strcmp(why(p, s), "(allowed)") == cases[i].ok, "%s: %s",
              cases[i].path, why(p, s));
  }
  set(&s->spec.workspace_host_path, "/data/ws/tenant-b/chat-9");
  CHECK_STR(why(p, s), "spec.workspace.hostPath: /data/ws/tenant-b/chat-9 "
                       "is outside tenant-a's workspace roots "
                       "/data/ws/tenant-a, /nfs/b/tenant-a "
                       "(--workspace-root)");
  session_free(s);
  policy_free(p);
}

/* the short form: ROOT/<tenant>/<sessionID> of the first root, only when
 * both names can be a directory */
TEST(workspace_short_form)
{
  policy *p = flags_policy("/data/ws,/other", NULL, "internet", NULL, NULL);
  session *s = sess("tenant-a", "chat-1");
  policy_sandbox sb;
  CHECK(p);
  set(&s->spec.workspace_mount_path, "/workspace");
  CHECK_STR(why(p, s), "(allowed)");
  policy_sandbox_of(p, s, &sb);
  CHECK_STR(sb.spec.workspace_host_path, "/data/ws/tenant-a/chat-1");
  CHECK_STR(sb.spec.workspace_mount_path, "/workspace");
  set(&s->spec.session_id, "nb-0001");
  policy_sandbox_of(p, s, &sb);
  CHECK_STR(sb.spec.workspace_host_path, "/data/ws/tenant-a/nb-0001");
  set(&s->spec.session_id, "..");
  CHECK(strstr(why(p, s), "spec.workspace.mountPath: the short form"));
  set(&s->spec.session_id, "a/b");
  CHECK(strstr(why(p, s), "cannot be one"));
  /* the spec's own hostPath is kept as written */
  set(&s->spec.session_id, NULL);
  set(&s->spec.workspace_host_path, "/other/tenant-a/w");
  policy_sandbox_of(p, s, &sb);
  CHECK_STR(sb.spec.workspace_host_path, "/other/tenant-a/w");
  /* a tenant that is not a directory name gets no workspace at all */
  set(&s->spec.tenant_id, "..");
  CHECK(strstr(why(p, s), "cannot name a directory"));
  session_free(s);
  policy_free(p);
}

TEST(volumes_by_prefix_and_by_file)
{
  policy *p = flags_policy(NULL, "tenant-prefix", "internet", NULL, NULL);
  session *s = sess("tenant-a", "x");
  sc_errbuf eb;
  policy_flags f = {0};
  CHECK(p);
  s->spec.volume_mounts = calloc(1, sizeof(*s->spec.volume_mounts));
  s->spec.n_volume_mounts = 1;
  s->spec.volume_mounts[0].path = strdup("/d");
  s->spec.volume_mounts[0].name = strdup("tenant-a-data");
  CHECK_STR(why(p, s), "(allowed)");
  set(&s->spec.volume_mounts[0].name, "tenant-b-data");
  CHECK(strstr(why(p, s), "tenant-b-data does not begin with \"tenant-a-\""));
  set(&s->spec.volume_mounts[0].name, "tenant-a-");
  CHECK(strcmp(why(p, s), "(allowed)"));
  set(&s->spec.volume_mounts[0].name, "tenant-a");
  CHECK(strcmp(why(p, s), "(allowed)"));
  policy_free(p);
  /* file: an allowlist per tenant, globs too */
  p = file_policy(&f,
                  "apiVersion: lea.io/v1alpha1\nkind: TenantPolicy\n"
                  "defaults: {egressCeiling: internet}\n"
                  "tenants:\n"
                  "  tenant-a: {volumePolicy: file, volumes: [models, "
                  "\"a-*\"]}\n",
                  &eb);
  CHECK_MSG(p, "%s", eb.msg);
  set(&s->spec.volume_mounts[0].name, "models");
  CHECK_STR(why(p, s), "(allowed)");
  set(&s->spec.volume_mounts[0].name, "a-scratch");
  CHECK_STR(why(p, s), "(allowed)");
  set(&s->spec.volume_mounts[0].name, "b-scratch");
  CHECK(strstr(why(p, s), "b-scratch is not in tenant tenant-a's volume "
                          "allowlist (volumes file, tenants.tenant-a."
                          "volumePolicy in /tmp/sc-policy-"));
  /* another tenant: the flags' none */
  set(&s->spec.tenant_id, NULL);
  set(&s->meta.namespace_, "tenant-c");
  set(&s->spec.volume_mounts[0].name, "models");
  CHECK(strstr(why(p, s), "volumes none"));
  session_free(s);
  policy_free(p);
}

TEST(egress_within_the_allowlist)
{
  policy *p = flags_policy(NULL, NULL, "allowlist",
                           "10.0.0.0/8,2001:db8::/32,pypi.org,*.example.com",
                           NULL);
  session *s = sess("t", "x");
  static const struct {
    const char *e;
    bool ok;
  } cases[] = {
    {"10.0.0.0/8", true},   {"10.1.2.0/24", true}, {"10.9.9.9", true},
    {"10.0.0.0/7", false},  {"11.0.0.1", false},   {"0.0.0.0/0", false},
    {"2001:db8:1::/48", true}, {"2001:db9::/32", false},
    {"pypi.org", true},     {"PyPI.org", true},    {"files.pypi.org", false},
    {"a.example.com", true}, {"*.b.example.com", true},
    {"example.com", false}, {"*.example.com", true}, {"evilexample.com", false},
  };
  size_t i;
  policy_sandbox sb;
  CHECK(p);
  s->spec.net_internet = SESSION_OPT_FALSE;
  for(i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    s->spec.net_allow_out = strs1(cases[i].e, &s->spec.n_net_allow_out);
    CHECK_MSG(!strcmp(why(p, s), "(allowed)") == cases[i].ok, "%s: %s",
              cases[i].e, why(p, s));
    free(s->spec.net_allow_out[0]);
    free(s->spec.net_allow_out);
    s->spec.net_allow_out = NULL;
    s->spec.n_net_allow_out = 0;
  }
  /* the spec names none: the ceiling's whole list, internet off */
  s->spec.net_internet = SESSION_OPT_UNSET;
  policy_sandbox_of(p, s, &sb);
  CHECK_INT(sb.spec.net_internet, SESSION_OPT_FALSE);
  CHECK_INT(sb.spec.n_net_allow_out, 4);
  CHECK_STR(sb.spec.net_allow_out[1], "2001:db8::/32");
  /* the spec names some: only those */
  s->spec.net_allow_out = strs1("pypi.org", &s->spec.n_net_allow_out);
  policy_sandbox_of(p, s, &sb);
  CHECK_INT(sb.spec.n_net_allow_out, 1);
  CHECK(sb.spec.net_allow_out == s->spec.net_allow_out);
  /* internet asked for: beyond */
  s->spec.net_internet = SESSION_OPT_TRUE;
  CHECK(strstr(why(p, s), "true is beyond tenant t's egress ceiling "
                          "allowlist (--egress-ceiling)"));
  session_free(s);
  policy_free(p);
}

/* the ceiling internet leaves the spec as written: its digest equals the
 * spec's, so sandboxes made before the policy are not out of date */
TEST(internet_ceiling_keeps_the_spec_and_its_digest)
{
  policy *p = flags_policy(NULL, NULL, "internet", NULL, NULL);
  session *s = sess("t", "x");
  policy_sandbox sb;
  char a[SESSION_CONFIG_DIGEST_LEN + 1], b[SESSION_CONFIG_DIGEST_LEN + 1];
  CHECK(p);
  s->spec.net_internet = SESSION_OPT_TRUE;
  CHECK_STR(why(p, s), "(allowed)");
  policy_sandbox_of(p, s, &sb);
  session_sandbox_config_digest(&s->spec, a);
  session_sandbox_config_digest(&sb.spec, b);
  CHECK_STR(a, b);
  policy_free(p);
  /* none: another digest (a narrowed ceiling shows) */
  p = flags_policy(NULL, NULL, "none", NULL, NULL);
  s->spec.net_internet = SESSION_OPT_UNSET;
  policy_sandbox_of(p, s, &sb);
  session_sandbox_config_digest(&sb.spec, b);
  CHECK(strcmp(a, b));
  /* no policy: the spec as written */
  policy_sandbox_of(NULL, s, &sb);
  CHECK_INT(sb.spec.net_internet, SESSION_OPT_UNSET);
  CHECK_STR(why(NULL, s), "(allowed)");
  session_free(s);
  policy_free(p);
}

/* layers: the flags, the file's defaults, then an exact tenant name, else
 * the first glob in file order */
TEST(layers_exact_name_before_globs)
{
  policy_flags f = {"/data/ws", NULL, "none", NULL, NULL};
  sc_errbuf eb;
  policy *p = file_policy(&f,
                          "apiVersion: lea.io/v1alpha1\n"
                          "kind: TenantPolicy\n"
                          "defaults: {allowedTemplates: [python-*]}\n"
                          "tenants:\n"
                          "  \"team-*\": {egressCeiling: internet}\n"
                          "  \"team-b*\": {allowedTemplates: [shell]}\n"
                          "  team-bx: {allowedTemplates: [node]}\n",
                          &eb);
  session *s = sess("team-a", "x");
  CHECK_MSG(p, "%s", eb.msg);
  s->spec.net_internet = SESSION_OPT_TRUE;
  CHECK_STR(why(p, s), "(allowed)"); /* team-*: internet, defaults' python */
  set(&s->meta.namespace_, "team-bb");  /* team-* first: internet */
  CHECK_STR(why(p, s), "(allowed)");
  set(&s->meta.namespace_, "team-bx");  /* exact: node only, flags' none */
  CHECK(strstr(why(p, s), "spec.template: python-data is not among tenant "
                          "team-bx's allowed templates (node; "
                          "tenants.team-bx.allowedTemplates in"));
  CHECK(strstr(why(p, s), "(and 1 more)"));
  set(&s->meta.namespace_, "other");    /* defaults and flags */
  set(&s->spec.template_id, "shell");
  CHECK(strstr(why(p, s), "spec.template: shell is not among tenant other's "
                          "allowed templates (python-*; "
                          "defaults.allowedTemplates in"));
  session_free(s);
  policy_free(p);
}

TEST(file_errors_name_file_line_and_field)
{
  policy_flags f = {0};
  sc_errbuf eb;
  policy *p;
  p = file_policy(&f, "apiVersion: lea.io/v1alpha1\nkind: TenantPolicy\n"
                      "defaults:\n  egressCeiling: open\n", &eb);
  CHECK(!p);
  CHECK(strstr(eb.msg, ":4:18: defaults.egressCeiling: \"open\" is not "
                       "none, allowlist or internet"));
  p = file_policy(&f, "apiVersion: lea.io/v1alpha1\nkind: TenantPolicy\n"
                      "defaults: {workspaceRoot: [/x]}\n", &eb);
  CHECK(!p);
  CHECK(strstr(eb.msg, ":3:12: defaults.workspaceRoot: unknown field"));
  p = file_policy(&f, "apiVersion: lea.io/v1alpha1\nkind: Policy\n", &eb);
  CHECK(!p);
  CHECK(strstr(eb.msg, ":2:7: kind: \"Policy\" is not supported"));
  p = file_policy(&f, "kind: TenantPolicy\ndefaults: {egressCeiling: [\n",
                  &eb);
  CHECK(!p);
  CHECK(strstr(eb.msg, "YAML syntax error") || strstr(eb.msg, "did not"));
  p = file_policy(&f, "", &eb);
  CHECK(!p);
  CHECK(strstr(eb.msg, "empty"));
  p = file_policy(&f, "apiVersion: lea.io/v1alpha1\nkind: TenantPolicy\n"
                      "defaults: {workspaceRoots: [/a/../b]}\n", &eb);
  CHECK(!p);
  CHECK(strstr(eb.msg, "defaults.workspaceRoots[0]: \"/a/../b\" has a"));
  p = file_policy(&f, "apiVersion: lea.io/v1alpha1\nkind: TenantPolicy\n"
                      "defaults: {volumePolicy: none, volumes: [x]}\n", &eb);
  CHECK(!p);
  CHECK(strstr(eb.msg, "volumes is the allowlist of volumePolicy: file"));
  p = file_policy(&f, "apiVersion: lea.io/v1alpha1\nkind: TenantPolicy\n"
                      "tenants: {a: {}, a: {}}\n", &eb);
  CHECK(!p);
  CHECK(strstr(eb.msg, "duplicate"));
  CHECK(policy_load(&f, "/nonexistent/policy.yaml", &p, &eb) == SC_ERR_IO);
  CHECK(strstr(eb.msg, "policy file /nonexistent/policy.yaml: No such file"));
}

/* the planner: a refused live session gets PolicyDenied and no action,
 * its sandbox untouched; an Ended one is still ended */
TEST(rule5_tenant_policy_bounds_refuse_without_acting)
{
  world *w = w_new();
  session *a = w_sess(w, "tenant-a", "a", ACT);
  session *b = w_sess(w, "tenant-a", "b", ACT);
  session *c = w_sess(w, "tenant-a", "c", SESSION_STATE_ENDED);
  session *d = w_sess(w, "tenant-a", "d", ACT);
  policy *p = flags_policy("/data/ws", NULL, "none", NULL, NULL);
  plan *pl;
  CHECK(p);
  w->cfg.policy = p;
  set(&a->spec.workspace_mount_path, "/w");
  set(&a->spec.workspace_host_path, "/data/ws/tenant-b/x"); /* no sandbox */
  b->spec.net_internet = SESSION_OPT_TRUE; /* a running sandbox */
  b->status.applied_idle_timeout_ms = 15 * MIN_MS;
  w_link(b, "sb-b");
  w_sb(w, "sb-b", SBR, NOW + MIN_MS, "tenant-a", "b");
  c->spec.net_internet = SESSION_OPT_TRUE; /* Ended: deleted all the same */
  w_link(c, "sb-c");
  w_sb(w, "sb-c", CUBE_SB_PAUSED, NOW - MIN_MS, "tenant-a", "c");
  pl = w_plan(w);
  CHECK(pl);
  CHECK_STR(cond_reason(&p_sess(pl, a)->status, "Ready"), "PolicyDenied");
  CHECK_INT(p_sess(pl, a)->status.phase, SESSION_PHASE_FAILED);
  CHECK_STR(cond_reason(&p_sess(pl, b)->status, "Ready"), "PolicyDenied");
  CHECK(!p_find(pl, PLAN_CREATE, NULL) || p_find(pl, PLAN_CREATE, NULL)->s == d);
  CHECK(!p_find(pl, PLAN_DELETE, "sb-b") && !p_find(pl, PLAN_PAUSE, "sb-b"));
  CHECK(p_find(pl, PLAN_DELETE, "sb-c"));
  CHECK_INT(p_count(pl, PLAN_CREATE, PLAN_DEL_NONE), 1); /* d only */
  CHECK_INT(pl->n_policy_denied, 2);
  plan_free(pl);
  w->cfg.policy = NULL; /* no policy: a creates */
  pl = w_plan(w);
  CHECK(pl);
  CHECK_INT(p_count(pl, PLAN_CREATE, PLAN_DEL_NONE), 2);
  CHECK_INT(pl->n_policy_denied, 0);
  plan_free(pl);
  w_del(w);
  policy_free(p);
}

/* a narrowed ceiling shows on a live sandbox made under the old one */
TEST(rule5_a_narrowed_ceiling_shows_uptodate_false)
{
  world *w = w_new();
  session *s = w_sess(w, "t1", "a", ACT);
  policy *open = flags_policy(NULL, NULL, "internet", NULL, NULL);
  policy *shut = flags_policy(NULL, NULL, "none", NULL, NULL);
  policy_sandbox sb;
  char dg[SESSION_CONFIG_DIGEST_LEN + 1];
  cube_sandbox *b;
  plan *pl;
  CHECK(open && shut);
  s->status.applied_idle_timeout_ms = 15 * MIN_MS;
  w_link(s, "sb1");
  policy_sandbox_of(open, s, &sb);
  session_sandbox_config_digest(&sb.spec, dg);
  b = w_sb(w, "sb1", SBR, NOW + MIN_MS, "t1", "a");
  if(sc_kvlist_set(&b->metadata, SESSION_TAG_CONFIG, dg))
    abort();
  w->cfg.policy = open;
  pl = w_plan(w);
  CHECK(pl);
  CHECK_STR(cond_reason(&p_sess(pl, s)->status, "UpToDate"), "(absent)");
  plan_free(pl);
  w->cfg.policy = shut;
  pl = w_plan(w);
  CHECK(pl);
  CHECK_STR(cond_reason(&p_sess(pl, s)->status, "UpToDate"),
            "SandboxConfigChanged");
  CHECK_STR(cond_reason(&p_sess(pl, s)->status, "Ready"), "SandboxRunning");
  CHECK_INT(pl->n_actions, 0);
  plan_free(pl);
  w_del(w);
  policy_free(open);
  policy_free(shut);
}

TEST(ref_and_free_accept_null)
{
  policy *p = flags_policy(NULL, NULL, NULL, NULL, NULL);
  char d[256];
  CHECK(policy_ref(NULL) == NULL);
  policy_free(NULL);
  CHECK(policy_ref(p) == p);
  policy_free(p); /* the reference */
  policy_describe(p, d, sizeof(d));
  CHECK(strstr(d, "egress ceiling none, volumes none, 0 workspace roots"));
  policy_free(p);
  policy_describe(NULL, d, sizeof(d));
  CHECK_STR(d, "no policy");
}

TEST_LIST = {
  T(flags_are_checked_and_say_which),
  T(the_default_is_closed),
  T(workspace_paths_lie_below_the_tenants_root),
  T(workspace_short_form),
  T(volumes_by_prefix_and_by_file),
  T(egress_within_the_allowlist),
  T(internet_ceiling_keeps_the_spec_and_its_digest),
  T(layers_exact_name_before_globs),
  T(file_errors_name_file_line_and_field),
  T(rule5_tenant_policy_bounds_refuse_without_acting),
  T(rule5_a_narrowed_ceiling_shows_uptodate_false),
  T(ref_and_free_accept_null),
  {0}
};
TEST_MAIN()
