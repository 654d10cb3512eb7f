/*
 * shard_loop.c - sharding in the loop (see shard_loop.h and shard.h):
 * the membership renewal timer, the view, and the filters a full pass
 * runs its store read and its observation through.
 */
#include "controller/loop/shard_loop.h"
#include "controller/loop/shard.h"
#include "controller/store/members.h"
#include "lib/hmap.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRUNE_MAX 16

/* a removal of an expired member in flight */
typedef struct shard_prune {
  reconciler *r;
  store_members_req *req;
  char id[STORE_MEMBER_ID_MAX + 1];
  struct shard_prune *next;
} shard_prune;

struct loop_shard {
  shard_mode mode;
  int index;                /* static: this replica's shard */
  shard_view *view;
  struct event *timer;      /* auto: the renewal, 4 times a resync */
  store_members_req *req;   /* auto: the renewal in flight */
  shard_prune *prunes;      /* auto: removals of expired members */
  bool ready;               /* auto: the first answer came */
  bool left;
  char fail_msg[SC_ERRBUF_SIZE]; /* the failure last logged */
  /* the full pass in flight: its view frozen (NULL: owns everything),
   * the sessions it does not own (for their links), both sets of links,
   * and the tenants it owns sessions of (pointing into its sessions) */
  shard_owners *owners;
  session **foreign;
  size_t n_foreign;
  sc_hmap *owned_links, *foreign_links;
  const char **tenants;
  size_t n_tenants;
  bool tenants_known;       /* all of them (not out of memory) */
  /* what the lists cost, from pass to pass (shard.h) */
  shard_lists *lists;
  bool whole_seen;          /* a pass listed both states whole ... */
  int64_t whole_mono;       /* ... at this local monotonic time */
  /* takeover passes (shard.h): the view every owned tenant of which was
   * looked at (covered_known), whether that last pass was a takeover; the
   * looks at everything asked (loop_shard_want_all) and the count of them
   * the last ordinary pass whose lists came back started after; the scope
   * of the pass in flight and the asks it started after */
  shard_owners *covered;
  bool covered_known;
  bool last_takeover;
  uint64_t asked, asked_done, pass_asked;
  bool takeover;            /* the pass in flight: gained tenants only */
  /* --shards off with --share-work: the membership is kept as with auto,
   * and the view splits the acting by session (serve keys, below); the
   * full pass in flight serves by its frozen view (NULL: everything) */
  bool share;
  shard_owners *served;
};

/* the membership is kept (renewed, read, pruned, left) */
static bool keeps_members(const loop_shard *sh)
{
  return sh->mode == SHARD_AUTO || sh->share;
}

/* --share-work: what a session is served by, the same on every replica:
 * (tenant, session ID), the tags its sandboxes carry */
#define SERVE_KEY_MAX 600
static const char *serve_key(char *buf, const char *tenant, const char *sid)
{
  snprintf(buf, SERVE_KEY_MAX, "%s\x1f%s", tenant ? tenant : "",
           sid ? sid : "");
  return buf;
}

sc_err loop_shard_declare_metrics(metrics *m)
{
  static const struct {
    const char *name;
    metric_type t;
    const char *help;
  } fams[] = {
    {"session_controller_shard_members", METRIC_GAUGE,
     "Live replicas this one splits the tenants with, itself included (1: "
     "it owns every session)."},
    {"session_controller_shard_sessions", METRIC_GAUGE,
     "Sessions (and tombstones) this replica owns, as of the last full "
     "pass."},
    {"session_controller_shard_tenants", METRIC_GAUGE,
     "Tenants this replica owns, as of the last full pass."},
    {"session_controller_shard_membership_changes_total", METRIC_COUNTER,
     "Changes of the set of live replicas seen (joins, leaves, expiries)."},
    {"session_controller_shard_membership_failures_total", METRIC_COUNTER,
     "Membership renewals that failed (the replica then owns every "
     "session)."},
    {"session_controller_shard_fallback", METRIC_GAUGE,
     "1 while --shards auto cannot read the membership and this replica "
     "owns every session."},
    {"session_controller_shard_skipped_total", METRIC_COUNTER,
     "Watch events and single passes of sessions other replicas own, dropped."},
    {"session_controller_shard_takeover_passes_total", METRIC_COUNTER,
     "Full passes after the ownership moved that looked at the tenants "
     "gained only (the others were looked at less than a resync before)."},
    {"session_controller_shard_lists_by_tenant", METRIC_GAUGE,
     "1 when the last full pass listed the state one owned tenant at a "
     "time (cheaper than the whole list), 0 when whole."},
    {"session_controller_cube_list_requests_total", METRIC_COUNTER,
     "HTTP requests of Cube lists (each page, each page asked again) by "
     "kind (whole: a full pass's list of every managed sandbox; tenant: a "
     "full pass's list of one owned tenant; session: a single pass's) and "
     "state."},
  };
  size_t i;
  for(i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
    sc_err err = metrics_declare(m, fams[i].name, fams[i].t, fams[i].help,
                                 NULL, 0);
    if(err)
      return err;
  }
  return SC_OK;
}

static void on_timer(evutil_socket_t fd, short what, void *arg);

static const char *mode_name(shard_mode m)
{
  return m == SHARD_AUTO ? "auto" : m == SHARD_STATIC ? "static" : "off";
}

static void drop_pass_state(loop_shard *sh)
{
  size_t i;
  for(i = 0; i < sh->n_foreign; i++)
    session_free(sh->foreign[i]);
  free(sh->foreign);
  sh->foreign = NULL;
  sh->n_foreign = 0;
  sc_hmap_free(sh->owned_links);
  sc_hmap_free(sh->foreign_links);
  sh->owned_links = sh->foreign_links = NULL;
  shard_owners_free(sh->owners);
  sh->owners = NULL;
  free(sh->tenants);
  sh->tenants = NULL;
  sh->n_tenants = 0;
  sh->tenants_known = false;
  sh->takeover = false;
}

/* the pass's view becomes the covered one (owners: NULL when it owned
 * everything or was out of memory: nothing is known then) */
static void set_covered(loop_shard *sh)
{
  shard_owners_free(sh->covered);
  sh->covered = sh->owners;
  sh->owners = NULL;
  sh->covered_known = sh->covered != NULL;
  sh->last_takeover = sh->takeover;
  if(!sh->takeover)
    sh->asked_done = sh->pass_asked; /* asks since stay pending */
}

/* Is tenant this pass's (its frozen view; a takeover pass: gained)? */
static bool pass_owns(const loop_shard *sh, const char *tenant)
{
  if(!sh->takeover)
    return shard_owners_owns(sh->owners, tenant);
  return shard_owners_gained(sh->owners, sh->covered, tenant);
}

sc_err loop_shard_new(reconciler *r, sc_errbuf *eb)
{
  loop_shard *sh = calloc(1, sizeof(*sh));
  int n = 0;
  sc_err err;
  if(!sh)
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  err = shard_parse(r->o.shards, r->o.shard_index, &sh->mode, &n,
                    &sh->index, eb);
  if(err) {
    free(sh);
    return err;
  }
  if(sh->mode == SHARD_AUTO && !store_members_supported(r->o.st)) {
    free(sh);
    return sc_errf(eb, SC_ERR_INVALID, "--shards auto: store %s keeps no "
                   "member list (sqlite:PATH and kube do); use --shards N "
                   "--shard-index I or --shards off",
                   store_url(r->o.st));
  }
  if(sh->mode == SHARD_AUTO) {
    sc_errbuf e2;
    e2.msg[0] = '\0';
    err = store_members_scope(r->o.st, r->o.plan.controller_name ?
                              r->o.plan.controller_name : "", &e2);
    if(err) {
      free(sh);
      return sc_errf(eb, err, "--shards auto: %s", e2.msg);
    }
  }
  else if(sh->mode == SHARD_OFF && r->o.share_work &&
          store_members_supported(r->o.st)) {
    /* a member list the store cannot scope (a --name that is no label
     * value): every replica acts for every session, as before */
    sc_errbuf e2;
    e2.msg[0] = '\0';
    sh->share = !store_members_scope(r->o.st, r->o.plan.controller_name ?
                                     r->o.plan.controller_name : "", &e2);
    if(!sh->share)
      log_kv(r->o.lg, LOG_WARN, "--share-work: no member list (every "
             "replica acts for every session)", "error", e2.msg, NULL);
  }
  /* sharing keeps the view of auto (the live members); the passes stay
   * unsharded (sh->mode) */
  sh->view = shard_view_new(sh->share ? SHARD_AUTO : sh->mode, r->identity,
                            n, sh->index);
  if(keeps_members(sh))
    sh->timer = event_new(r->o.base, -1, EV_PERSIST, on_timer, r);
  if(sh->mode != SHARD_OFF)
    sh->lists = shard_lists_new();
  if(!sh->view || (keeps_members(sh) && !sh->timer) ||
     (sh->mode != SHARD_OFF && !sh->lists)) {
    loop_shard_free(sh);
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  sh->ready = !keeps_members(sh);
  r->shard = sh;
  metrics_set(r->o.m, "session_controller_shard_members", NULL,
              (double)shard_view_live(sh->view));
  return SC_OK;
}

static void drop_prunes(loop_shard *sh)
{
  while(sh->prunes) {
    shard_prune *p = sh->prunes;
    sh->prunes = p->next;
    store_members_req_cancel(p->req);
    free(p);
  }
}

void loop_shard_free(loop_shard *sh)
{
  if(!sh)
    return;
  store_members_req_cancel(sh->req);
  drop_prunes(sh);
  if(sh->timer)
    event_free(sh->timer);
  drop_pass_state(sh);
  shard_owners_free(sh->covered);
  shard_owners_free(sh->served);
  shard_view_free(sh->view);
  shard_lists_free(sh->lists);
  free(sh);
}

/* ------------------------------------------------------------------ */
/* the membership */

static void say_members(reconciler *r, const char *msg)
{
  loop_shard *sh = r->shard;
  char list[512] = "", n[16];
  size_t i, off = 0;
  const char *id;
  for(i = 0; (id = shard_view_member(sh->view, i)) != NULL; i++) {
    int w = snprintf(list + off, sizeof(list) - off, "%s%s", i ? "," : "",
                     id);
    if(w < 0 || (size_t)w >= sizeof(list) - off)
      break;
    off += (size_t)w;
  }
  snprintf(n, sizeof(n), "%zu", shard_view_live(sh->view));
  log_kv(r->o.lg, LOG_INFO, msg, "members", n, "live", list, "self",
         r->identity, NULL);
}

static void on_pruned(sc_err err, const char *msg, store_member_list *list,
                      void *ud)
{
  shard_prune *p = ud, **pp;
  reconciler *r = p->r;
  (void)list;
  for(pp = &r->shard->prunes; *pp; pp = &(*pp)->next)
    if(*pp == p) {
      *pp = p->next;
      break;
    }
  if(err)
    log_kv(r->o.lg, LOG_WARN, "sharding: cannot remove an expired member",
           "member", p->id, "error", msg ? msg : "", NULL);
  else
    log_kv(r->o.lg, LOG_INFO, "sharding: expired member removed from the "
           "store (unless it renewed meanwhile)", "member", p->id, NULL);
  free(p);
}

static bool pruning(const loop_shard *sh, const char *id)
{
  const shard_prune *p;
  for(p = sh->prunes; p; p = p->next)
    if(!strcmp(p->id, id))
      return true;
  return false;
}

static void prune(reconciler *r)
{
  const char *ids[PRUNE_MAX], *vers[PRUNE_MAX];
  size_t i, n = shard_view_prunable(r->shard->view, ids, vers, PRUNE_MAX);
  for(i = 0; i < n; i++) {
    sc_errbuf eb;
    shard_prune *p;
    if(pruning(r->shard, ids[i]))
      continue; /* one removal at a time per member */
    p = calloc(1, sizeof(*p));
    if(!p)
      return;
    p->r = r;
    snprintf(p->id, sizeof(p->id), "%s", ids[i]);
    eb.msg[0] = '\0';
    /* by its version: a replica that renewed meanwhile keeps its row;
     * answered on the loop (on kube a DELETE: the loop does not wait) */
    if(store_members_remove_async(r->o.st, ids[i], vers[i], on_pruned, p,
                                  &p->req, &eb)) {
      log_kv(r->o.lg, LOG_WARN, "sharding: cannot remove an expired member",
             "member", ids[i], "error", eb.msg, NULL);
      free(p);
      continue;
    }
    p->next = r->shard->prunes;
    r->shard->prunes = p;
  }
}

static void membership_changed(reconciler *r, const char *msg)
{
  metrics_add(r->o.m, "session_controller_shard_membership_changes_total",
              NULL, 1);
  say_members(r, msg);
  /* the tenants that moved are looked at now, not at the next resync */
  r->full_pending = true;
}

static void on_renewed(sc_err err, const char *msg, store_member_list *list,
                       void *ud)
{
  reconciler *r = ud;
  loop_shard *sh = r->shard;
  bool first = !sh->ready, changed = false;
  sh->req = NULL;
  sh->ready = true;
  if(!err) {
    shard_member_in *in = calloc(list->n ? list->n : 1, sizeof(*in));
    size_t i;
    if(!in)
      err = SC_ERR_NOMEM;
    for(i = 0; in && i < list->n; i++) {
      in[i].id = list->items[i].id;
      in[i].version = list->items[i].version;
      in[i].period_ms = list->items[i].period_ms;
    }
    if(in)
      err = shard_view_update(sh->view, in, list->n, sctime_mono_ms(),
                              &changed);
    free(in);
    if(err)
      msg = "out of memory";
  }
  if(err) {
    metrics_add(r->o.m, "session_controller_shard_membership_failures_total",
                NULL, 1);
    /* the last view stands for up to SHARD_BLIND_RESYNCS resyncs */
    changed = shard_view_blind(sh->view, sctime_mono_ms(),
                               SHARD_BLIND_RESYNCS * r->o.resync_ms);
    if(changed || strcmp(sh->fail_msg, msg)) {
      log_kv(r->o.lg, LOG_WARN, shard_view_falling_back(sh->view)
             ? "sharding: cannot read the membership; this replica owns "
               "every session until it can (safe, more work)"
             : "sharding: cannot read the membership; the last view "
               "stands for up to 5 resyncs, then this replica owns every "
               "session", "error", msg, NULL);
      snprintf(sh->fail_msg, sizeof(sh->fail_msg), "%s", msg);
    }
  }
  else {
    if(sh->fail_msg[0] && !first)
      log_kv(r->o.lg, LOG_INFO, "sharding: the membership reads again",
             NULL);
    sh->fail_msg[0] = '\0';
    prune(r);
  }
  metrics_set(r->o.m, "session_controller_shard_fallback", NULL,
              shard_view_falling_back(sh->view) ? 1 : 0);
  metrics_set(r->o.m, "session_controller_shard_members", NULL,
              (double)shard_view_live(sh->view));
  if(changed && !err)
    membership_changed(r, first ? "sharding: members" : "sharding: "
                       "membership changed");
  else if(changed)
    r->full_pending = true;
  if(first || changed)
    loop_pump(r);
}

/* the renewal period: a quarter of the resync (shard.h) */
static int64_t renew_period_ms(const reconciler *r)
{
  int64_t ms = r->o.resync_ms / SHARD_RENEWS_PER_RESYNC;
  return ms < SHARD_RENEW_MIN_MS ? SHARD_RENEW_MIN_MS : ms;
}

static void renew(reconciler *r)
{
  loop_shard *sh = r->shard;
  sc_errbuf eb;
  eb.msg[0] = '\0';
  if(sh->req || sh->left)
    return; /* one at a time */
  if(store_members_renew_async(r->o.st, r->identity, renew_period_ms(r),
                               on_renewed, r, &sh->req, &eb)) {
    store_member_list none = {NULL, 0};
    on_renewed(SC_ERR_INVALID, eb.msg, &none, r);
  }
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
  reconciler *r = arg;
  (void)fd;
  (void)what;
  if(!r->stopping)
    renew(r);
}

void loop_shard_start(reconciler *r)
{
  loop_shard *sh = r->shard;
  struct timeval tv;
  if(!sh)
    return;
  if(sh->mode != SHARD_OFF) {
    char idx[16];
    snprintf(idx, sizeof(idx), "%d", sh->index);
    log_kv(r->o.lg, LOG_INFO, "sharding on: this replica plans and acts "
           "only for its share of the tenants", "mode", mode_name(sh->mode),
           "shards", r->o.shards, "member",
           sh->mode == SHARD_STATIC ? idx : r->identity, "members_in",
           sh->mode == SHARD_AUTO ? store_members_where(r->o.st) : "-",
           NULL);
  }
  if(sh->share)
    log_kv(r->o.lg, LOG_INFO, "sharing the work: this replica plans every "
           "session and acts only for its share of them (by session) among "
           "the live replicas", "member", r->identity, "members_in",
           store_members_where(r->o.st), NULL);
  if(!keeps_members(sh))
    return;
  tv.tv_sec = (time_t)(renew_period_ms(r) / 1000);
  tv.tv_usec = (suseconds_t)(renew_period_ms(r) % 1000) * 1000;
  event_add(sh->timer, &tv);
  renew(r);
}

void loop_shard_stop(reconciler *r)
{
  loop_shard *sh = r->shard;
  sc_errbuf eb;
  if(!sh || !keeps_members(sh) || sh->left)
    return;
  sh->left = true;
  event_del(sh->timer);
  store_members_req_cancel(sh->req);
  sh->req = NULL;
  drop_prunes(sh);
  eb.msg[0] = '\0';
  /* the others see the row (the Lease) gone at their next renewal and
   * take the share then, without waiting out the expiry; on kube a
   * synchronous DELETE on the store's private loop: we are leaving */
  if(store_members_remove(r->o.st, r->identity, NULL, &eb))
    log_kv(r->o.lg, LOG_WARN, "sharding: cannot remove this replica's "
           "member entry (the others take its share once it expires)",
           "error", eb.msg, NULL);
  else
    log_kv(r->o.lg, LOG_INFO, "sharding: left the membership", "member",
           r->identity, NULL);
}

bool loop_shard_wait(reconciler *r)
{
  return r->shard && !r->shard->ready;
}

void loop_shard_want_all(reconciler *r)
{
  if(r->shard)
    r->shard->asked++;
}

/* ------------------------------------------------------------------ */
/* the filters */

static bool owns_tenant(const reconciler *r, const char *tenant)
{
  return !r->shard || shard_view_owns(r->shard->view, tenant);
}

bool loop_shard_owns(reconciler *r, const session *s)
{
  char key[SERVE_KEY_MAX];
  if(!r->shard || (r->shard->mode == SHARD_OFF && !r->shard->share))
    return true;
  if(r->shard->share ? owns_tenant(r, serve_key(key,
                                                session_eff_tenant_id(s),
                                                session_eff_session_id(s)))
                     : owns_tenant(r, session_eff_tenant_id(s)))
    return true;
  metrics_add(r->o.m, "session_controller_shard_skipped_total", NULL,
              1);
  return false;
}

static bool eq_str(const void *value, const void *key, void *ud)
{
  (void)ud;
  return !strcmp(value, key);
}

static uint64_t hash_str(const char *s)
{
  return sc_hash_strn(SC_HASH_INIT, s, strlen(s));
}

static sc_err add_links(sc_hmap *m, const session *s)
{
  const char *ids[2];
  size_t i;
  ids[0] = s->status.sandbox_id;
  ids[1] = s->status.pending_sandbox_id;
  for(i = 0; i < 2; i++) {
    uint64_t h;
    if(!ids[i] || !*ids[i])
      continue;
    h = hash_str(ids[i]);
    if(!sc_hmap_get(m, h, eq_str, ids[i], NULL) &&
       sc_hmap_put(m, h, (void *)ids[i]))
      return SC_ERR_NOMEM;
  }
  return SC_OK;
}

void loop_shard_filter_list(reconciler *r, store_list_result *list)
{
  loop_shard *sh = r->shard;
  sc_hmap *tenants = NULL;
  size_t i, k = 0, n_owned = 0;
  bool oom = false, candidate;
  if(sh && sh->share) {
    /* the whole view is planned; the acting follows this frozen view */
    shard_owners_free(sh->served);
    sh->served = shard_view_freeze(sh->view);
  }
  if(!sh || sh->mode == SHARD_OFF)
    return;
  drop_pass_state(sh);
  sh->pass_asked = sh->asked;
  candidate = sh->mode == SHARD_AUTO &&
              shard_takeover_allowed(sh->covered_known, sh->last_takeover,
                                     sh->asked != sh->asked_done);
  /* one view for the whole pass: its sessions, its lists, its sandboxes */
  sh->owners = shard_view_freeze(sh->view);
  sh->foreign = calloc(list->n ? list->n : 1, sizeof(*sh->foreign));
  sh->tenants = calloc(list->n ? list->n : 1, sizeof(*sh->tenants));
  sh->owned_links = sc_hmap_new(list->n);
  sh->foreign_links = sc_hmap_new(0);
  tenants = sc_hmap_new(0);
  if(!sh->owners || !sh->foreign || !sh->tenants || !sh->owned_links ||
     !sh->foreign_links || !tenants) {
    /* out of memory: this pass owns everything (safe) */
    drop_pass_state(sh);
    sc_hmap_free(tenants);
    return;
  }
  if(candidate) {
    /* a takeover pass when the view gained tenants and kept some: the
     * kept ones were looked at by the pass before */
    size_t gained = 0, kept = 0;
    for(i = 0; i < list->n && (!gained || !kept); i++) {
      const char *t = session_eff_tenant_id(list->items[i]);
      if(shard_owners_gained(sh->owners, sh->covered, t))
        gained++;
      else if(shard_owners_owns(sh->owners, t))
        kept++;
    }
    sh->takeover = gained && kept;
  }
  for(i = 0; i < list->n; i++) {
    session *s = list->items[i];
    const char *t = session_eff_tenant_id(s);
    bool owned = shard_owners_owns(sh->owners, t);
    if(owned && (!sh->takeover || pass_owns(sh, t))) {
      uint64_t h = hash_str(t);
      list->items[k++] = s;
      n_owned++;
      oom |= add_links(sh->owned_links, s) != SC_OK;
      if(!sc_hmap_get(tenants, h, eq_str, t, NULL)) {
        if(sc_hmap_put(tenants, h, (void *)t))
          oom = true;
        else
          sh->tenants[sh->n_tenants++] = t;
      }
    }
    else {
      /* another replica's, or (a takeover pass) a kept tenant's: its
       * links are not orphans here */
      if(owned) {
        uint64_t h = hash_str(t);
        n_owned++;
        if(!sc_hmap_get(tenants, h, eq_str, t, NULL) &&
           sc_hmap_put(tenants, h, (void *)t))
          oom = true;
      }
      sh->foreign[sh->n_foreign++] = s;
      oom |= add_links(sh->foreign_links, s) != SC_OK;
    }
  }
  list->n = k;
  if(oom) {
    /* a link set is incomplete: no sandbox is dropped from this pass's
     * view (a sandbox another replica's session links could look like an
     * orphan here otherwise); the sessions stay filtered */
    sc_hmap_free(sh->foreign_links);
    sh->foreign_links = NULL;
  }
  /* a tenant missing from the set would go unlisted: lists by tenant
   * only from the whole set */
  sh->tenants_known = !oom;
  if(sh->takeover)
    metrics_add(r->o.m, "session_controller_shard_takeover_passes_total",
                NULL, 1);
  metrics_set(r->o.m, "session_controller_shard_sessions", NULL,
              (double)n_owned);
  metrics_set(r->o.m, "session_controller_shard_tenants", NULL,
              (double)sc_hmap_count(tenants));
  sc_hmap_free(tenants);
}

void loop_shard_lists(reconciler *r, observe_lists *out)
{
  loop_shard *sh = r->shard;
  shard_list_choice ch;
  size_t page_rows, n_names = 1 + r->o.plan.n_adopted_names;
  int64_t now = sctime_mono_ms(), every = r->o.shard_whole_list_ms;
  bool all, due;
  char nt[24], ew[48], et[48];
  memset(out, 0, sizeof(*out));
  if(!sh || sh->mode == SHARD_OFF)
    return; /* every state whole */
  /* owning every tenant (alone, or blind), or a set of tenants not
   * known whole: nothing to save, or nothing safe to save */
  all = !sh->owners || !sh->tenants_known ||
        (!sh->takeover && shard_owners_live(sh->owners) <= 1);
  /* a takeover pass lists its gained tenants; the whole list that is due
   * waits for the next pass that looks at everything (0: always whole,
   * a takeover pass too) */
  due = every <= 0 ||
        (!sh->takeover && (!sh->whole_seen || now - sh->whole_mono >= every));
  page_rows = cube_client_dialect(r->o.cube) == CUBE_DIALECT_E2B
                ? CUBE_PAGE_LIMIT : 0;
  shard_lists_choose(sh->lists, sh->tenants, sh->n_tenants, page_rows,
                     n_names, due || all, &ch);
  if(all) {
    ch.why = "this pass owns every tenant";
    ch.by_tenant[SHARD_RUNNING] = ch.by_tenant[SHARD_PAUSED] = false;
  }
  out->by_tenant[0] = ch.by_tenant[SHARD_RUNNING];
  out->by_tenant[1] = ch.by_tenant[SHARD_PAUSED];
  out->tenants = sh->tenants;
  out->n_tenants = sh->n_tenants;
  metrics_set(r->o.m, "session_controller_shard_lists_by_tenant",
              "state=\"running\"", out->by_tenant[0] ? 1 : 0);
  metrics_set(r->o.m, "session_controller_shard_lists_by_tenant",
              "state=\"paused\"", out->by_tenant[1] ? 1 : 0);
  snprintf(nt, sizeof(nt), "%zu", sh->n_tenants);
  snprintf(ew, sizeof(ew), "%zu/%zu", ch.est_whole[SHARD_RUNNING],
           ch.est_whole[SHARD_PAUSED]);
  snprintf(et, sizeof(et), "%zu/%zu", ch.est_tenant[SHARD_RUNNING],
           ch.est_tenant[SHARD_PAUSED]);
  log_kv(r->o.lg, LOG_DEBUG, "sharding: lists of this full pass", "running",
         out->by_tenant[0] ? "by-tenant" : "whole", "paused",
         out->by_tenant[1] ? "by-tenant" : "whole", "tenants", nt,
         "whole_requests", ew, "by_tenant_requests", et, "why", ch.why,
         "scope", sh->takeover ? "takeover: the tenants gained only"
                               : "every owned tenant", NULL);
}

/* What the lists of this pass cost and showed, for the next choice. */
static void note_lists(reconciler *r, const observation *obs)
{
  loop_shard *sh = r->shard;
  size_t i;
  bool oom = false;
  if(!sh->lists)
    return;
  oom = shard_lists_begin(sh->lists, obs->by_tenant, obs->list_requests,
                          sh->tenants_known ? sh->tenants : NULL,
                          sh->tenants_known ? sh->n_tenants : 0) != SC_OK;
  for(i = 0; !oom && i < obs->n_sbs; i++) {
    const cube_sandbox *sb = &obs->sbs[i];
    oom = shard_lists_count(sh->lists, sb->state == CUBE_SB_RUNNING
                                         ? SHARD_RUNNING : SHARD_PAUSED,
                            sc_kvlist_get(&sb->metadata,
                                          SESSION_TAG_TENANT_ID)) != SC_OK;
  }
  if(!obs->by_tenant[0] && !obs->by_tenant[1] && !sh->takeover) {
    /* every sandbox was in view: the orphans of tenants with no session
     * left, and those without a tenant tag, were judged */
    sh->whole_seen = true;
    sh->whole_mono = sctime_mono_ms();
  }
}

void loop_shard_filter_obs(reconciler *r, observation *obs)
{
  loop_shard *sh = r->shard;
  size_t i, k = 0;
  if(!sh || sh->mode == SHARD_OFF || !obs || obs->failed)
    return;
  note_lists(r, obs);
  if(!sh->owned_links) {
    drop_pass_state(sh);
    return; /* the list was not filtered: nothing is */
  }
  for(i = 0; i < obs->n_sbs; i++) {
    cube_sandbox *sb = &obs->sbs[i];
    const char *id = sb->sandbox_id ? sb->sandbox_id : "";
    uint64_t h = hash_str(id);
    bool keep;
    if(sc_hmap_get(sh->owned_links, h, eq_str, id, NULL))
      keep = true; /* linked by a session of ours, whatever its tags */
    else if(!sh->foreign_links) /* the foreign links are not known: keep
                                   all (a takeover pass: its tenants') */
      keep = !sh->takeover ||
             pass_owns(sh, sc_kvlist_get(&sb->metadata,
                                         SESSION_TAG_TENANT_ID));
    else if(sc_hmap_get(sh->foreign_links, h, eq_str, id, NULL))
      keep = false; /* another replica's session's: not an orphan */
    else /* by the pass's view (and scope), as its sessions were */
      keep = pass_owns(sh, sc_kvlist_get(&sb->metadata,
                                         SESSION_TAG_TENANT_ID));
    if(keep) {
      if(k != i)
        obs->sbs[k] = *sb;
      k++;
    }
    else
      cube_sandbox_clear(sb);
  }
  obs->n_sbs = k;
  /* the lists came back: every tenant of the view is looked at now (a
   * takeover pass: its gained ones, the others by the passes before) */
  set_covered(sh);
  drop_pass_state(sh);
}

/* ------------------------------------------------------------------ */
/* --share-work: the full pass in flight acts for its share only */

bool loop_shard_sharing(const reconciler *r)
{
  return r->shard && r->shard->share && r->shard->served &&
         shard_owners_live(r->shard->served) > 1;
}

bool loop_shard_serves(const reconciler *r, const session *s)
{
  char key[SERVE_KEY_MAX];
  if(!loop_shard_sharing(r))
    return true;
  return shard_owners_owns(r->shard->served,
                           serve_key(key, session_eff_tenant_id(s),
                                     session_eff_session_id(s)));
}

bool loop_shard_serves_orphan(const plan_action *a, void *ud)
{
  const reconciler *r = ud;
  char key[SERVE_KEY_MAX];
  if(!loop_shard_sharing(r))
    return true;
  /* no session: by the sandbox, one replica of the view */
  return shard_owners_owns(r->shard->served,
                           serve_key(key, "", a->sandbox_id));
}
