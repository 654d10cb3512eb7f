/*
 * policy.c - the tenant policy (policy.h): built from the flags and the
 * policy file, resolved per tenant, checked against a spec, and applied to
 * the sandbox a create makes.
 *
 * Layers: the flags, then the file's `defaults`, then the tenant's entry
 * (an exact name, else the first glob in file order); each setting comes
 * from the last layer that has it, and says which one in its messages.
 *
 * Cost, written down: a check resolves the tenant (one hash lookup, then
 * one fnmatch per glob entry) and walks the spec's workspace, volumes,
 * network lists and template: nothing for a spec that asks for none of
 * them beyond the lookup. The controller checks every session of every
 * pass; docs/security.md has the measured cost.
 */
#include "api/policy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/yamltree.h"
#include "lib/dynbuf.h"
#include "lib/hmap.h"
#include "lib/scstr.h"

enum { VOL_UNSET = 0, VOL_NONE, VOL_TENANT_PREFIX, VOL_FILE };
enum { EGR_UNSET = 0, EGR_NONE, EGR_ALLOWLIST, EGR_INTERNET };

static const char *const vol_names[] = {"", "none", "tenant-prefix", "file"};
static const char *const egr_names[] = {"", "none", "allowlist", "internet"};

#define POLICY_LIST_MAX 1024    /* entries of one list */
#define POLICY_ENTRY_MAX 253    /* bytes of one name, glob or rule */
#define POLICY_TENANTS_MAX 100000

typedef struct plist {
  char **v;
  size_t n;
  bool set;
} plist;

/* one layer: the flags, the file's defaults or a tenant's entry */
typedef struct player {
  char *where;        /* "--flags", "defaults", "tenants.team-*" */
  plist roots;
  int volumes;        /* VOL_* */
  plist volume_names; /* with VOL_FILE: names or globs */
  int egress;         /* EGR_* */
  plist egress_allow;
  plist templates;
} player;

typedef struct ptenant {
  char *match;
  bool glob;
  player l;
} ptenant;

struct policy {
  unsigned refs; /* beyond the first */
  char *file;
  player flags;
  player defaults;
  ptenant *tenants;
  size_t n_tenants;
  sc_hmap *exact; /* tenant name -> index into tenants */
  uint64_t seed;
};

/* ------------------------------------------------------- building */

static void plist_clear(plist *l)
{
  size_t i;
  for(i = 0; i < l->n; i++)
    free(l->v[i]);
  free(l->v);
  memset(l, 0, sizeof(*l));
}

static void player_clear(player *l)
{
  free(l->where);
  plist_clear(&l->roots);
  plist_clear(&l->volume_names);
  plist_clear(&l->egress_allow);
  plist_clear(&l->templates);
}

static sc_err plist_add(plist *l, const char *s, size_t n)
{
  char **v;
  if(l->n >= POLICY_LIST_MAX)
    return SC_ERR_TOO_LARGE;
  v = realloc(l->v, (l->n + 1) * sizeof(*v));
  if(!v)
    return SC_ERR_NOMEM;
  l->v = v;
  if(!(v[l->n] = strndup(s, n)))
    return SC_ERR_NOMEM;
  l->n++;
  return SC_OK;
}

/* A root: absolute, in normal form, not "/" (then a tenant named like a
 * system directory would reach it). NULL: fine, else why not. */
static const char *root_problem(const char *s)
{
  size_t i, n = strlen(s);
  if(!n || s[0] != '/')
    return "is not an absolute path";
  if(n == 1)
    return "is \"/\": every tenant directory would be a top-level "
           "directory of the host (give the export's directory)";
  if(n >= POLICY_PATH_MAX / 2)
    return "is too long";
  if(s[n - 1] == '/')
    return "ends in \"/\" (write it without)";
  for(i = 0; i < n; i++) {
    if((unsigned char)s[i] < 0x20 || s[i] == 0x7f || s[i] == ',')
      return "contains a control character or a comma";
    if(s[i] == '/' && s[i + 1] == '/')
      return "contains \"//\"";
    if(s[i] == '/' && s[i + 1] == '.' &&
       (s[i + 2] == '/' || !s[i + 2] ||
        (s[i + 2] == '.' && (s[i + 3] == '/' || !s[i + 3]))))
      return "has a \".\" or \"..\" component";
  }
  return NULL;
}

static bool glob_chars(const char *s)
{
  return strpbrk(s, "*?[") != NULL;
}

/* egress allowlist entry: what spec.network.allowOut takes */
static bool egress_entry_ok(const char *s)
{
  size_t n = strlen(s);
  return n && n <= POLICY_ENTRY_MAX &&
         (rule_is_address(s, n) || rule_host_name(s, n));
}

static bool name_entry_ok(const char *s)
{
  size_t i, n = strlen(s);
  if(!n || n > POLICY_ENTRY_MAX)
    return false;
  for(i = 0; i < n; i++)
    if((unsigned char)s[i] <= 0x20 || s[i] == 0x7f || s[i] == ',')
      return false;
  return true;
}

typedef enum { PK_ROOT, PK_EGRESS, PK_NAME } pkind;

static const char *entry_problem(pkind k, const char *s)
{
  switch(k) {
  case PK_ROOT: return root_problem(s);
  case PK_EGRESS:
    return egress_entry_ok(s) ? NULL
                              : "is neither a CIDR, an IP address nor a "
                                "host name (e.g. 10.0.0.0/8, pypi.org, "
                                "*.example.com)";
  case PK_NAME:
    return name_entry_ok(s) ? NULL
                            : "is empty, over 253 bytes, or has a space, "
                              "a comma or a control character";
  }
  return "is not allowed";
}

/* A comma-separated flag value into l, each entry checked. */
static sc_err flag_list(plist *l, const char *flag, const char *v, pkind k,
                        sc_errbuf *eb)
{
  const char *p = v;
  l->set = true;
  while(p && *p) {
    size_t n = strcspn(p, ","), k0 = n;
    const char *q = p, *why;
    char *e;
    sc_err err;
    while(n && *q == ' ')
      q++, n--;
    while(n && q[n - 1] == ' ')
      n--;
    if(n) {
      if((err = plist_add(l, q, n)))
        return err == SC_ERR_NOMEM
                 ? sc_errf(eb, err, "%s: out of memory", flag)
                 : sc_errf(eb, err, "%s: more than %d entries", flag,
                           POLICY_LIST_MAX);
      e = l->v[l->n - 1];
      if((why = entry_problem(k, e)))
        return sc_errf(eb, SC_ERR_INVALID, "%s: \"%.200s\" %s", flag, e,
                       why);
    }
    p += k0;
    if(*p == ',')
      p++;
  }
  return SC_OK;
}

static int enum_of(const char *const *names, size_t n, const char *v)
{
  size_t i;
  for(i = 1; i < n; i++)
    if(!strcmp(names[i], v))
      return (int)i;
  return 0;
}

static sc_err layer_from_flags(player *l, const policy_flags *f,
                               sc_errbuf *eb)
{
  sc_err err;
  if(!(l->where = strdup("the flags")))
    return SC_ERR_NOMEM;
  if(f->workspace_roots &&
     (err = flag_list(&l->roots, "--workspace-root", f->workspace_roots,
                      PK_ROOT, eb)))
    return err;
  l->volumes = VOL_NONE;
  if(f->volume_policy &&
     !(l->volumes = enum_of(vol_names, 4, f->volume_policy)))
    return sc_errf(eb, SC_ERR_INVALID, "--volume-policy: \"%.100s\" is not "
                   "none, tenant-prefix or file", f->volume_policy);
  l->egress = EGR_NONE;
  if(f->egress_ceiling &&
     !(l->egress = enum_of(egr_names, 4, f->egress_ceiling)))
    return sc_errf(eb, SC_ERR_INVALID, "--egress-ceiling: \"%.100s\" is not "
                   "none, allowlist or internet", f->egress_ceiling);
  if(f->egress_allow &&
     (err = flag_list(&l->egress_allow, "--egress-allow", f->egress_allow,
                      PK_EGRESS, eb)))
    return err;
  if(f->allowed_templates &&
     (err = flag_list(&l->templates, "--allowed-templates",
                      f->allowed_templates, PK_NAME, eb)))
    return err;
  return SC_OK;
}

/* --- the file */

typedef struct pfile {
  yerrs e;
  policy *p;
  long docs;
  bool nomem;
} pfile;

static bool want_kind(pfile *c, const ynode *n, int kind, const char *what)
{
  if(n->kind == kind)
    return true;
  yerrs_node(&c->e, n, "expected %s, got %s", what, ynode_what(n));
  return false;
}

static const char *want_scalar(pfile *c, const ynode *n)
{
  if(n->kind != YK_SCALAR || n->type != YT_STR) {
    yerrs_node(&c->e, n, "expected a string, got %s", ynode_what(n));
    return NULL;
  }
  return n->val;
}

static void file_list(pfile *c, const ynode *v, plist *l, pkind k)
{
  size_t i;
  l->set = true;
  if(ynode_is_null(v))
    return;
  if(!want_kind(c, v, YK_SEQ, "a list"))
    return;
  for(i = 0; i < v->n; i++) {
    const char *s = want_scalar(c, v->kids[i]), *why;
    sc_err err;
    if(!s)
      continue;
    if((why = entry_problem(k, s))) {
      yerrs_node(&c->e, v->kids[i], "\"%.200s\" %s", s, why);
      continue;
    }
    if((err = plist_add(l, s, strlen(s)))) {
      if(err == SC_ERR_NOMEM)
        yerrs_nomem(&c->e);
      else
        yerrs_node(&c->e, v, "more than %d entries", POLICY_LIST_MAX);
      return;
    }
  }
}

static const char *const layer_keys[] = {
  "workspaceRoots", "volumePolicy", "volumes", "egressCeiling",
  "egressAllow", "allowedTemplates", NULL};

static void unknown_key(pfile *c, const ynode *k, const char *const *known)
{
  dynbuf b;
  size_t i;
  char *t;
  dynbuf_init(&b, 512);
  for(i = 0; known[i]; i++)
    dynbuf_printf(&b, "%s%s", i ? ", " : "", known[i]);
  t = dynbuf_take(&b);
  dynbuf_free(&b);
  yerrs_node(&c->e, k, "unknown field \"%.100s\" (known: %s)", k->val,
             t ? t : "?");
  free(t);
}

static void file_layer(pfile *c, const ynode *m, player *l)
{
  size_t i;
  if(ynode_is_null(m) || !want_kind(c, m, YK_MAP, "a mapping"))
    return;
  for(i = 0; i + 1 < m->n; i += 2) {
    const ynode *k = m->kids[i], *v = m->kids[i + 1];
    const char *s;
    if(k->dup || k->kind != YK_SCALAR)
      continue;
    if(!strcmp(k->val, "workspaceRoots"))
      file_list(c, v, &l->roots, PK_ROOT);
    else if(!strcmp(k->val, "volumes"))
      file_list(c, v, &l->volume_names, PK_NAME);
    else if(!strcmp(k->val, "egressAllow"))
      file_list(c, v, &l->egress_allow, PK_EGRESS);
    else if(!strcmp(k->val, "allowedTemplates"))
      file_list(c, v, &l->templates, PK_NAME);
    else if(!strcmp(k->val, "volumePolicy")) {
      if((s = want_scalar(c, v)) && !(l->volumes = enum_of(vol_names, 4, s)))
        yerrs_node(&c->e, v, "\"%.100s\" is not none, tenant-prefix or file",
                   s);
    }
    else if(!strcmp(k->val, "egressCeiling")) {
      if((s = want_scalar(c, v)) && !(l->egress = enum_of(egr_names, 4, s)))
        yerrs_node(&c->e, v, "\"%.100s\" is not none, allowlist or internet",
                   s);
    }
    else
      unknown_key(c, k, layer_keys);
  }
  if(l->volume_names.set && l->volumes && l->volumes != VOL_FILE)
    yerrs_field(&c->e, m, "volumes", "is given but volumePolicy is %s "
                "(volumes is the allowlist of volumePolicy: file)",
                vol_names[l->volumes]);
}

static bool eq_tenant(const void *value, const void *key, void *ud)
{
  const policy *p = ud;
  return !strcmp(p->tenants[SC_HMAP_IDX_OF(value)].match, key);
}

static uint64_t tenant_hash(const policy *p, const char *t)
{
  return sc_hash_strn(p->seed, t, strlen(t));
}

static void file_tenants(pfile *c, const ynode *m)
{
  policy *p = c->p;
  size_t i;
  if(ynode_is_null(m) || !want_kind(c, m, YK_MAP, "a mapping of tenant "
                                                  "names or globs"))
    return;
  if(m->n / 2 > POLICY_TENANTS_MAX) {
    yerrs_node(&c->e, m, "more than %d tenants", POLICY_TENANTS_MAX);
    return;
  }
  if(!(p->tenants = calloc(m->n / 2 + 1, sizeof(*p->tenants))) ||
     !(p->exact = sc_hmap_new(m->n / 2))) {
    yerrs_nomem(&c->e);
    return;
  }
  for(i = 0; i + 1 < m->n; i += 2) {
    const ynode *k = m->kids[i];
    ptenant *t;
    dynbuf b;
    if(k->dup)
      continue;
    if(!want_scalar(c, k))
      continue;
    if(!name_entry_ok(k->val)) {
      yerrs_node(&c->e, k, "\"%.100s\" is not a tenant name or glob", k->val);
      continue;
    }
    t = &p->tenants[p->n_tenants];
    t->glob = glob_chars(k->val);
    dynbuf_init(&b, 512);
    dynbuf_printf(&b, "tenants.%s", k->val);
    t->l.where = dynbuf_take(&b);
    dynbuf_free(&b);
    if(!(t->match = strdup(k->val)) || !t->l.where) {
      free(t->match);
      free(t->l.where);
      memset(t, 0, sizeof(*t));
      yerrs_nomem(&c->e);
      return;
    }
    if(!t->glob && sc_hmap_put(p->exact, tenant_hash(p, t->match),
                               SC_HMAP_IDX(p->n_tenants))) {
      yerrs_nomem(&c->e);
      player_clear(&t->l);
      free(t->match);
      memset(t, 0, sizeof(*t));
      return;
    }
    p->n_tenants++;
    file_layer(c, m->kids[i + 1], &t->l);
  }
}

static const char *const top_keys[] = {"apiVersion", "kind", "defaults",
                                       "tenants", NULL};

static void file_doc(void *ud, const ynode *root, bool doc_bad)
{
  pfile *c = ud;
  const ynode *v;
  size_t i;
  (void)doc_bad; /* its errors are in the list already */
  if(!root || ynode_is_null(root))
    return;
  if(++c->docs > 1) {
    yerrs_node(&c->e, root, "a policy file holds one document");
    return;
  }
  if(!want_kind(c, root, YK_MAP, "a mapping (kind: TenantPolicy)"))
    return;
  for(i = 0; i + 1 < root->n; i += 2) {
    const ynode *k = root->kids[i];
    size_t j;
    if(k->dup || k->kind != YK_SCALAR)
      continue;
    for(j = 0; top_keys[j] && strcmp(top_keys[j], k->val); j++)
      ;
    if(!top_keys[j])
      unknown_key(c, k, top_keys);
  }
  v = ynode_get(root, "apiVersion");
  if(!v)
    yerrs_field(&c->e, root, "apiVersion", "required field missing (use "
                SESSION_API_VERSION ")");
  else if(want_scalar(c, v) && strcmp(v->val, SESSION_API_VERSION))
    yerrs_node(&c->e, v, "\"%.100s\" is not supported (use "
               SESSION_API_VERSION ")", v->val);
  v = ynode_get(root, "kind");
  if(!v)
    yerrs_field(&c->e, root, "kind", "required field missing (use "
                "TenantPolicy)");
  else if(want_scalar(c, v) && strcmp(v->val, "TenantPolicy"))
    yerrs_node(&c->e, v, "\"%.100s\" is not supported (use TenantPolicy)",
               v->val);
  if((v = ynode_get(root, "defaults")))
    file_layer(c, v, &c->p->defaults);
  if((v = ynode_get(root, "tenants")))
    file_tenants(c, v);
}

static sc_err read_all(const char *path, dynbuf *b, sc_errbuf *eb)
{
  FILE *f = fopen(path, "rb");
  char chunk[4096];
  size_t n;
  sc_err err = SC_OK;
  if(!f)
    return sc_errf(eb, SC_ERR_IO, "policy file %s: %s", path,
                   strerror(errno));
  while(!err && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
    err = dynbuf_add(b, chunk, n);
  if(!err && ferror(f))
    err = sc_errf(eb, SC_ERR_IO, "policy file %s: read error", path);
  else if(err)
    err = err == SC_ERR_NOMEM
            ? sc_errf(eb, err, "policy file %s: out of memory", path)
            : sc_errf(eb, SC_ERR_TOO_LARGE, "policy file %s: over %d bytes",
                      path, POLICY_FILE_MAX_BYTES);
  fclose(f);
  return err;
}

static sc_err load_file(policy *p, const char *path, sc_errbuf *eb)
{
  dynbuf b;
  pfile c;
  sc_err err;
  memset(&c, 0, sizeof(c));
  c.p = p;
  c.e.file = path;
  c.e.max = 20;
  if(!(p->file = strdup(path)) || !(p->defaults.where = strdup("defaults")))
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  dynbuf_init(&b, POLICY_FILE_MAX_BYTES);
  err = read_all(path, &b, eb);
  if(!err) {
    ytree_parse(&c.e, b.mem ? b.mem : "", b.len, file_doc, &c);
    if(!c.e.n && !c.docs)
      yerrs_add(&c.e, 1, 1, NULL, "empty: a policy file needs apiVersion "
                "%s and kind TenantPolicy", SESSION_API_VERSION);
    if(c.e.n) {
      yerrs_sort(&c.e);
      err = c.e.n == 1
              ? sc_errf(eb, SC_ERR_INVALID, "%.480s", c.e.v[0].text)
              : sc_errf(eb, SC_ERR_INVALID, "%.440s (and %zu more)",
                        c.e.v[0].text, c.e.n - 1);
    }
  }
  dynbuf_free(&b);
  yerrs_free(&c.e);
  return err;
}

sc_err policy_load(const policy_flags *flags, const char *file,
                   policy **out, sc_errbuf *eb)
{
  static const policy_flags none = {0};
  policy *p = calloc(1, sizeof(*p));
  sc_err err;
  *out = NULL;
  if(!p)
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  p->seed = sc_hash_seed();
  err = layer_from_flags(&p->flags, flags ? flags : &none, eb);
  if(!err && file)
    err = load_file(p, file, eb);
  if(err) {
    policy_free(p);
    return err;
  }
  *out = p;
  return SC_OK;
}

policy *policy_ref(policy *p)
{
  if(p)
    p->refs++;
  return p;
}

void policy_free(policy *p)
{
  size_t i;
  if(!p)
    return;
  if(p->refs) {
    p->refs--;
    return;
  }
  player_clear(&p->flags);
  player_clear(&p->defaults);
  for(i = 0; i < p->n_tenants; i++) {
    free(p->tenants[i].match);
    player_clear(&p->tenants[i].l);
  }
  free(p->tenants);
  sc_hmap_free(p->exact);
  free(p->file);
  free(p);
}

const char *policy_file(const policy *p)
{
  return p ? p->file : NULL;
}

/* ------------------------------------------------------- resolving */

/* what applies to one tenant, each setting with the layer it came from */
typedef struct pview {
  const char *tenant;
  const plist *roots;
  const char *roots_from;
  int volumes;
  const char *volumes_from;
  const plist *volume_names;
  int egress;
  const char *egress_from;
  const plist *egress_allow;
  const plist *templates; /* NULL: any */
  const char *templates_from;
} pview;

static const ptenant *tenant_entry(const policy *p, const char *t)
{
  size_t i;
  void *v;
  if(p->exact && (v = sc_hmap_get(p->exact, tenant_hash(p, t), eq_tenant, t,
                                  (void *)p)))
    return &p->tenants[SC_HMAP_IDX_OF(v)];
  for(i = 0; i < p->n_tenants; i++)
    if(p->tenants[i].glob && !fnmatch(p->tenants[i].match, t, 0))
      return &p->tenants[i];
  return NULL;
}

static void view_layer(pview *v, const player *l)
{
  if(l->roots.set) {
    v->roots = &l->roots;
    v->roots_from = l->where;
  }
  if(l->volumes) {
    v->volumes = l->volumes;
    v->volumes_from = l->where;
  }
  if(l->volume_names.set)
    v->volume_names = &l->volume_names;
  if(l->egress) {
    v->egress = l->egress;
    v->egress_from = l->where;
  }
  if(l->egress_allow.set)
    v->egress_allow = &l->egress_allow;
  if(l->templates.set) {
    v->templates = &l->templates;
    v->templates_from = l->where;
  }
}

static void view_of(const policy *p, const char *tenant, pview *v)
{
  const ptenant *t = tenant_entry(p, tenant);
  memset(v, 0, sizeof(*v));
  v->tenant = tenant;
  view_layer(v, &p->flags);
  view_layer(v, &p->defaults);
  if(t)
    view_layer(v, &t->l);
}

/* a layer's name as messages say it */
static void from_text(const policy *p, const char *where, const char *flag,
                      const char *key, char *buf, size_t len)
{
  if(!where || !strcmp(where, "the flags"))
    snprintf(buf, len, "%s", flag);
  else
    snprintf(buf, len, "%s.%s in %s", where, key,
             p->file ? p->file : "the policy");
}

void policy_describe(const policy *p, char *buf, size_t len)
{
  if(!p) {
    snprintf(buf, len, "no policy");
    return;
  }
  snprintf(buf, len, "egress ceiling %s, volumes %s, %zu workspace root%s "
           "from the flags; %s%s%s with %zu tenant entr%s",
           egr_names[p->flags.egress], vol_names[p->flags.volumes],
           p->flags.roots.n, p->flags.roots.n == 1 ? "" : "s",
           p->file ? "file " : "no policy file", p->file ? p->file : "",
           p->file && p->defaults.where ? " (defaults)" : "",
           p->n_tenants, p->n_tenants == 1 ? "y" : "ies");
}

/* ------------------------------------------------------- checking */

/* A path segment the controller may build from a name: no "/", not "."
 * or "..", printable. */
static bool segment_ok(const char *s)
{
  size_t i, n = s ? strlen(s) : 0;
  if(!n || n > 253 || !strcmp(s, ".") || !strcmp(s, ".."))
    return false;
  for(i = 0; i < n; i++)
    if(!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
         (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' ||
         s[i] == '-'))
      return false;
  return true;
}

/* normal form: absolute, no empty, "." or ".." segment, no trailing "/" */
static bool path_normal(const char *s)
{
  size_t i, n = strlen(s);
  if(n < 2 || s[0] != '/' || s[n - 1] == '/')
    return false;
  for(i = 0; i < n; i++)
    if(s[i] == '/' &&
       (s[i + 1] == '/' ||
        (s[i + 1] == '.' &&
         (s[i + 2] == '/' || !s[i + 2] ||
          (s[i + 2] == '.' && (s[i + 3] == '/' || !s[i + 3]))))))
      return false;
  return true;
}

/* path lies strictly below root/tenant/ */
static bool below(const char *path, const char *root, const char *tenant)
{
  size_t rl = strlen(root), tl = strlen(tenant);
  return !strncmp(path, root, rl) && path[rl] == '/' &&
         !strncmp(path + rl + 1, tenant, tl) && path[rl + 1 + tl] == '/' &&
         path[rl + 2 + tl];
}

static void roots_text(const pview *v, char *buf, size_t len)
{
  size_t i, n = 0;
  buf[0] = '\0';
  for(i = 0; v->roots && i < v->roots->n && n + 1 < len; i++) {
    int w = snprintf(buf + n, len - n, "%s%s/%s", i ? ", " : "",
                     v->roots->v[i], v->tenant);
    if(w < 0)
      break;
    n += (size_t)w;
  }
}

typedef struct pcheck {
  const policy *p;
  const pview *v;
  rule_report_fn report;
  void *ud;
  size_t n;
} pcheck;

static void deny(pcheck *c, const char *top, const char *sub, long idx,
                 const char *key, const char *fmt, ...)
  __attribute__((format(printf, 6, 7)));

static void deny(pcheck *c, const char *top, const char *sub, long idx,
                 const char *key, const char *fmt, ...)
{
  char m[SC_ERRBUF_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof(m), fmt, ap);
  va_end(ap);
  c->n++;
  if(c->report)
    c->report(c->ud, top, sub, idx, key, m);
}

static void check_workspace(pcheck *c, const session *s)
{
  const pview *v = c->v;
  const char *hp = s->spec.workspace_host_path;
  char from[300], roots[600];
  size_t i;
  rule_quoted q;
  if(!s->spec.workspace_mount_path && !hp)
    return;
  from_text(c->p, v->roots_from, "--workspace-root", "workspaceRoots",
            from, sizeof(from));
  if(!v->roots || !v->roots->n) {
    deny(c, "workspace", NULL, -1, hp ? "hostPath" : "mountPath",
         "no workspace root is set for tenant %s (--workspace-root or "
         "workspaceRoots in the policy file): spec.workspace is refused",
         v->tenant);
    return;
  }
  if(!segment_ok(v->tenant)) {
    deny(c, "workspace", NULL, -1, hp ? "hostPath" : "mountPath",
         "the tenant %s cannot name a directory (use letters, digits, "
         "'.', '_' and '-'): spec.workspace is refused",
         rule_quote(&q, v->tenant, strlen(v->tenant)));
    return;
  }
  if(!hp) { /* the short form: ROOT/<tenant>/<sessionID> */
    const char *sid = session_eff_session_id(s);
    if(!segment_ok(sid))
      deny(c, "workspace", NULL, -1, "mountPath",
           "the short form (mountPath alone) uses the session ID as a "
           "directory, and %s cannot be one (use letters, digits, '.', "
           "'_' and '-', or give hostPath)",
           rule_quote(&q, sid ? sid : "", sid ? strlen(sid) : 0));
    return;
  }
  if(!path_normal(hp)) {
    deny(c, "workspace", NULL, -1, "hostPath",
         "%s is not in normal form (no \"//\", \".\" or \"..\" segment, "
         "no trailing \"/\"): write the path out",
         rule_quote(&q, hp, strlen(hp)));
    return;
  }
  for(i = 0; i < v->roots->n; i++)
    if(below(hp, v->roots->v[i], v->tenant))
      return;
  roots_text(v, roots, sizeof(roots));
  deny(c, "workspace", NULL, -1, "hostPath",
       "%s is outside %s's workspace root%s %s (%s)", hp, v->tenant,
       v->roots->n == 1 ? "" : "s", roots, from);
}

static void check_volumes(pcheck *c, const session *s)
{
  const pview *v = c->v;
  char from[300];
  size_t i, j;
  if(!s->spec.n_volume_mounts)
    return;
  from_text(c->p, v->volumes_from, "--volume-policy", "volumePolicy",
            from, sizeof(from));
  for(i = 0; i < s->spec.n_volume_mounts; i++) {
    const char *n = s->spec.volume_mounts[i].name;
    size_t tl = strlen(v->tenant);
    if(!n)
      continue;
    switch(v->volumes) {
    case VOL_TENANT_PREFIX:
      if(strncmp(n, v->tenant, tl) || n[tl] != '-' || !n[tl + 1])
        deny(c, "volumeMounts", NULL, (long)i, "name",
             "%s does not begin with \"%s-\": tenant %s mounts only its own "
             "volumes (volumes tenant-prefix, %s)", n, v->tenant, v->tenant,
             from);
      break;
    case VOL_FILE:
      for(j = 0; v->volume_names && j < v->volume_names->n; j++)
        if(!fnmatch(v->volume_names->v[j], n, 0))
          break;
      if(!v->volume_names || j == v->volume_names->n)
        deny(c, "volumeMounts", NULL, (long)i, "name",
             "%s is not in tenant %s's volume allowlist (volumes file, %s)",
             n, v->tenant, from);
      break;
    default:
      deny(c, "volumeMounts", NULL, (long)i, "name",
           "volumes are not allowed for tenant %s (volumes none, %s)",
           v->tenant, from);
      break;
    }
  }
}

/* --- egress: is an allowOut entry within the operator's list */

typedef struct pnet {
  int af;
  unsigned char a[16];
  unsigned bits;
} pnet;

static bool net_parse(const char *s, pnet *out)
{
  char buf[64];
  const char *slash = strchr(s, '/');
  size_t al = slash ? (size_t)(slash - s) : strlen(s);
  unsigned max;
  if(al >= sizeof(buf))
    return false;
  memcpy(buf, s, al);
  buf[al] = '\0';
  memset(out, 0, sizeof(*out));
  if(inet_pton(AF_INET, buf, out->a) == 1)
    out->af = AF_INET, max = 32;
  else if(inet_pton(AF_INET6, buf, out->a) == 1)
    out->af = AF_INET6, max = 128;
  else
    return false;
  out->bits = max;
  if(slash) {
    char *end;
    long b;
    errno = 0;
    b = strtol(slash + 1, &end, 10);
    if(errno || *end || end == slash + 1 || b < 0 || (unsigned long)b > max)
      return false;
    out->bits = (unsigned)b;
  }
  return true;
}

/* network e lies within network l */
static bool net_within(const pnet *e, const pnet *l)
{
  unsigned full, rest;
  if(e->af != l->af || e->bits < l->bits)
    return false;
  full = l->bits / 8;
  rest = l->bits % 8;
  if(memcmp(e->a, l->a, full))
    return false;
  if(rest) {
    unsigned char m = (unsigned char)(0xff << (8 - rest));
    if((e->a[full] & m) != (l->a[full] & m))
      return false;
  }
  return true;
}

/* host e is l, or lies under the wildcard l ("*.example.com") */
static bool host_within(const char *e, const char *l)
{
  size_t el, ll;
  if(!strcasecmp(e, l))
    return true;
  if(strncmp(l, "*.", 2))
    return false;
  if(!strncmp(e, "*.", 2))
    e += 2;
  el = strlen(e);
  ll = strlen(l + 1); /* ".example.com" */
  return el > ll && !strcasecmp(e + el - ll, l + 1);
}

static bool egress_within(const char *e, const plist *allow)
{
  pnet en, ln;
  bool eip = net_parse(e, &en);
  size_t i;
  for(i = 0; allow && i < allow->n; i++) {
    bool lip = net_parse(allow->v[i], &ln);
    if(eip ? lip && net_within(&en, &ln)
           : !lip && host_within(e, allow->v[i]))
      return true;
  }
  return false;
}

static void allow_text(const plist *l, char *buf, size_t len)
{
  size_t i, n = 0;
  snprintf(buf, len, "%s", l && l->n ? "" : "empty");
  for(i = 0; l && i < l->n && n + 1 < len; i++) {
    int w = snprintf(buf + n, len - n, "%s%s", i ? ", " : "", l->v[i]);
    if(w < 0)
      break;
    n += (size_t)w;
  }
}

static void check_egress(pcheck *c, const session *s)
{
  const pview *v = c->v;
  const session_spec *sp = &s->spec;
  char from[300], list[300];
  size_t i;
  /* the texts only for a refusal: this runs for every session of every
   * pass, and most ask for nothing */
  if(v->egress == EGR_INTERNET ||
     (sp->net_internet != SESSION_OPT_TRUE && !sp->n_net_allow_out))
    return;
  from_text(c->p, v->egress_from, "--egress-ceiling", "egressCeiling",
            from, sizeof(from));
  if(sp->net_internet == SESSION_OPT_TRUE)
    deny(c, "network", "allowInternetAccess", -1, NULL,
         "true is beyond tenant %s's egress ceiling %s (%s): a spec can "
         "narrow the ceiling, never widen it", v->tenant,
         egr_names[v->egress], from);
  if(v->egress == EGR_NONE) {
    for(i = 0; i < sp->n_net_allow_out; i++)
      deny(c, "network", "allowOut", (long)i, NULL,
           "%s is beyond tenant %s's egress ceiling none (%s): no egress "
           "is allowed", sp->net_allow_out[i], v->tenant, from);
    return;
  }
  list[0] = '\0';
  for(i = 0; i < sp->n_net_allow_out; i++)
    if(!egress_within(sp->net_allow_out[i], v->egress_allow)) {
      if(!list[0])
        allow_text(v->egress_allow, list, sizeof(list));
      deny(c, "network", "allowOut", (long)i, NULL,
           "%s is not within tenant %s's egress allowlist (%s; %s)",
           sp->net_allow_out[i], v->tenant, list, from);
    }
}

static void check_template(pcheck *c, const session *s)
{
  const pview *v = c->v;
  const char *t = s->spec.template_id;
  char from[300], list[300];
  size_t i;
  if(!v->templates || !t)
    return;
  for(i = 0; i < v->templates->n; i++)
    if(!fnmatch(v->templates->v[i], t, 0))
      return;
  from_text(c->p, v->templates_from, "--allowed-templates",
            "allowedTemplates", from,
            sizeof(from));
  allow_text(v->templates, list, sizeof(list));
  deny(c, "template", NULL, -1, NULL,
       "%s is not among tenant %s's allowed templates (%s; %s)", t,
       v->tenant, list, from);
}

size_t policy_check(const policy *p, const session *s,
                    rule_report_fn report, void *ud)
{
  pview v;
  pcheck c;
  if(!p || !s)
    return 0;
  view_of(p, session_eff_tenant_id(s), &v);
  c.p = p;
  c.v = &v;
  c.report = report;
  c.ud = ud;
  c.n = 0;
  check_template(&c, s);
  check_workspace(&c, s);
  check_volumes(&c, s);
  check_egress(&c, s);
  return c.n;
}

/* the first refusal as "spec.PATH: message" */
typedef struct pfirst {
  char *buf;
  size_t len;
  bool have;
} pfirst;

static void first_report(void *ud, const char *top, const char *sub,
                         long idx, const char *key, const char *msg)
{
  pfirst *f = ud;
  char a[FIELDPATH_MAX], b[FIELDPATH_MAX];
  if(f->have)
    return;
  f->have = true;
  fieldpath_key(a, sizeof(a), "spec", top);
  if(sub) {
    fieldpath_key(b, sizeof(b), a, sub);
    memcpy(a, b, sizeof(a));
  }
  if(idx >= 0) {
    fieldpath_index(b, sizeof(b), a, (size_t)idx);
    memcpy(a, b, sizeof(a));
  }
  if(key) {
    fieldpath_key(b, sizeof(b), a, key);
    memcpy(a, b, sizeof(a));
  }
  snprintf(f->buf, f->len, "%s: %s", a, msg);
}

bool policy_denied(const policy *p, const session *s, char *buf,
                   size_t len)
{
  pfirst f = {buf, len, false};
  size_t n = policy_check(p, s, first_report, &f);
  if(n > 1) {
    size_t l = strlen(buf);
    snprintf(buf + l, len > l ? len - l : 0, " (and %zu more)", n - 1);
  }
  return n > 0;
}

/* ------------------------------------------------------- the sandbox */

void policy_sandbox_of(const policy *p, const session *s,
                       policy_sandbox *out)
{
  pview v;
  out->spec = s->spec;
  out->host_path[0] = '\0';
  if(!p)
    return;
  view_of(p, session_eff_tenant_id(s), &v);
  if(s->spec.workspace_mount_path && !s->spec.workspace_host_path &&
     v.roots && v.roots->n) {
    const char *sid = session_eff_session_id(s);
    snprintf(out->host_path, sizeof(out->host_path), "%s/%s/%s",
             v.roots->v[0], v.tenant, sid ? sid : "");
    out->spec.workspace_host_path = out->host_path;
  }
  switch(v.egress) {
  case EGR_NONE:
    out->spec.net_internet = SESSION_OPT_FALSE;
    out->spec.net_allow_out = NULL;
    out->spec.n_net_allow_out = 0;
    break;
  case EGR_ALLOWLIST:
    out->spec.net_internet = SESSION_OPT_FALSE;
    if(!s->spec.n_net_allow_out && v.egress_allow) {
      out->spec.net_allow_out = v.egress_allow->v;
      out->spec.n_net_allow_out = v.egress_allow->n;
    }
    break;
  default:
    break;
  }
}
