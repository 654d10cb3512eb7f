/* Property tests of the planner over random worlds (seeded, reproducible):
 * safety (no delete of foreign, cross-tenant, running-and-wanted, or
 * not-yet-reclaimable sandboxes), determinism (also under shuffled input)
 * and convergence (applying a plan and planning again ends in no actions
 * within a few steps while Cube's clock stands still).
 *
 * PLAN_PROPS_CASES (environment) overrides the number of worlds;
 * PLAN_PROPS_SEED the first seed. */
#include "test/harness.h"
#include "test/unit/plan_world.h"

#define N_CASES_DEFAULT 5000

typedef struct rng {
  uint64_t s;
} rng;

static uint64_t rnd(rng *r)
{
  /* xorshift64* */
  r->s ^= r->s >> 12;
  r->s ^= r->s << 25;
  r->s ^= r->s >> 27;
  return r->s * 2685821657736338717ULL;
}

static unsigned rn(rng *r, unsigned n)
{
  return (unsigned)(rnd(r) % n);
}

static size_t n_cases(void)
{
  const char *e = getenv("PLAN_PROPS_CASES");
  char *end;
  long long v;
  if(!e || !*e)
    return N_CASES_DEFAULT;
  v = strtoll(e, &end, 10);
  return (*end || v <= 0) ? N_CASES_DEFAULT : (size_t)v;
}

static uint64_t first_seed(void)
{
  const char *e = getenv("PLAN_PROPS_SEED");
  char *end;
  long long v;
  if(!e || !*e)
    return 1;
  v = strtoll(e, &end, 10);
  return (*end || v <= 0) ? 1 : (uint64_t)v;
}

static const char *const tenants[] = {"t0", "t1", "t2"};
static const char *const names[] = {"s0", "s1", "s2", "s3", "s4", "s5"};
static const char *const ids[] = {"b00", "b01", "b02", "b03", "b04", "b05",
                                  "b06", "b07", "b08", "b09", "b10", "b11"};
#define NIDS (sizeof(ids) / sizeof(ids[0]))

/* A random world: sessions with unique (ns, name, tombstone), random
 * states, links (to observed, missing or no sandboxes), sandboxes with
 * full, lost, foreign or mixed tags, Cube's clock fixed at W_NOW. */
static void gen_world(world *w, rng *r)
{
  size_t i, nsess = rn(r, 9), nsb = rn(r, 13);
  static const int64_t reclaims[] = {0, HOUR_MS, 24 * HOUR_MS};
  static const int64_t idles[] = {MIN_MS, 15 * MIN_MS, 90500};
  bool used[3][6][2];
  memset(used, 0, sizeof(used));
  world_init(w);
  w->complete = rn(r, 4) != 0;
  w->cfg.force = rn(r, 8) == 0;
  w->cfg.bind_tenant_to_namespace = rn(r, 4) != 0;
  if(rn(r, 3) == 0)
    w->cfg.max_delete_floor = rn(r, 3);
  for(i = 0; i < nsess; i++) {
    unsigned t = rn(r, 3), n = rn(r, 6), tomb = rn(r, 5) == 0;
    session *s;
    if(used[t][n][tomb])
      continue;
    used[t][n][tomb] = true;
    s = w_sess(w, tenants[t], names[n], (session_state)rn(r, 4));
    if(tomb)
      s->meta.deletion_timestamp = W_NOW - HOUR_MS;
    s->meta.generation = 1 + rn(r, 3);
    s->spec.reclaim_after_ms = reclaims[rn(r, 3)];
    s->spec.idle_timeout_ms = idles[rn(r, 3)];
    if(rn(r, 6) == 0) { /* a shared sessionID within the tenant */
      free(s->spec.session_id);
      s->spec.session_id = strdup(names[rn(r, 6)]);
    }
    if(rn(r, 8) == 0) { /* a forged tenant: another namespace's */
      free(s->spec.tenant_id);
      s->spec.tenant_id = strdup(tenants[(t + 1) % 3]);
    }
    if(rn(r, 2))
      w_link(s, ids[rn(r, NIDS)]);
    s->status.paused_by_controller = rn(r, 2);
    s->status.applied_idle_timeout_ms = rn(r, 2) ? s->spec.idle_timeout_ms
                                                 : 0;
    if(rn(r, 5) == 0)
      s->status.reclaimed_generation = 1 + rn(r, 3);
  }
  {
    const char *pool[NIDS];
    memcpy(pool, ids, sizeof(pool));
    for(i = NIDS; i > 1; i--) { /* distinct IDs */
      size_t j = rn(r, (unsigned)i);
      const char *t = pool[i - 1];
      pool[i - 1] = pool[j];
      pool[j] = t;
    }
    for(i = 0; i < nsb && i < NIDS; i++) {
      static const cube_sb_state sts[] = {CUBE_SB_RUNNING, CUBE_SB_PAUSED,
                                          CUBE_SB_PAUSED, CUBE_SB_PAUSING,
                                          CUBE_SB_UNKNOWN};
      cube_sb_state st = sts[rn(r, 5)];
      sc_time end_at = rn(r, 6) == 0
                         ? 0
                         : W_NOW + ((int64_t)rn(r, 61) - 40) * HOUR_MS;
      unsigned tags = rn(r, 6);
      cube_sandbox *b;
      if(tags == 0)
        b = w_sb(w, pool[i], st, end_at, NULL, NULL); /* lost */
      else if(tags == 1)
        b = w_sb_mb(w, pool[i], st, end_at, tenants[rn(r, 3)],
                    names[rn(r, 6)], "other-controller");
      else
        b = w_sb(w, pool[i], st, end_at, tenants[rn(r, 3)], names[rn(r, 6)]);
      b->started_at = W_NOW - (int64_t)rn(r, 4) * HOUR_MS;
    }
    if(w->nb && rn(r, 8) == 0) { /* listed twice: running and paused */
      cube_sandbox *b = &w->b[w->nb];
      if(cube_sandbox_copy(b, &w->b[rn(r, (unsigned)w->nb)]))
        abort();
      b->state = b->state == CUBE_SB_RUNNING ? CUBE_SB_PAUSED
                                             : CUBE_SB_RUNNING;
      w->nb++;
    }
  }
  for(i = 0; i < NIDS && w->ngone < W_MAX_GONE; i++)
    if(rn(r, 6) == 0)
      w->gone[w->ngone++] = ids[i];
}

static const cube_sandbox *find_sb(const world *w, const char *id)
{
  size_t i;
  const cube_sandbox *best = NULL;
  for(i = 0; i < w->nb; i++)
    if(!strcmp(w->b[i].sandbox_id, id)) {
      /* the planner believes "running" when a sandbox is listed twice */
      if(!best || w->b[i].state == CUBE_SB_RUNNING)
        best = &w->b[i];
    }
  return best;
}

static bool linked_anywhere(const world *w, const char *id)
{
  size_t i;
  for(i = 0; i < w->ns; i++)
    if(w->s[i]->status.sandbox_id && !strcmp(w->s[i]->status.sandbox_id, id))
      return true;
  return false;
}

static const char *tag(const cube_sandbox *b, const char *k)
{
  return sc_kvlist_get(&b->metadata, k);
}

/* Check the safety properties of one plan; returns a message or NULL. */
static const char *check_safety(const world *w, const plan *p, char *msg,
                                size_t len)
{
  size_t i;
  for(i = 0; i < p->n_actions; i++) {
    const plan_action *a = &p->actions[i];
    const cube_sandbox *b;
    const char *mb, *tn;
    if(!a->reason || !*a->reason)
      return "action without a reason";
    if((a->del_kind == PLAN_DEL_ORPHAN) != (a->s == NULL))
      return "orphans and only orphans have no session";
    if(a->s && w->cfg.bind_tenant_to_namespace &&
       strcmp(a->s->spec.tenant_id, a->s->meta.namespace_) &&
       (a->type == PLAN_CREATE ||
        (a->sandbox_id && !str_eq_test(a->s->status.sandbox_id,
                                       a->sandbox_id)))) {
      snprintf(msg, len, "%s for %s/%s, whose tenant %s is not its "
               "namespace, on a sandbox it does not link",
               plan_action_type_name(a->type), a->s->meta.namespace_,
               a->s->meta.name, a->s->spec.tenant_id);
      return msg;
    }
    if(a->type != PLAN_DELETE)
      continue;
    b = find_sb(w, a->sandbox_id);
    if(!b) {
      snprintf(msg, len, "delete of unobserved sandbox %s", a->sandbox_id);
      return msg;
    }
    mb = tag(b, SESSION_TAG_MANAGED_BY);
    tn = tag(b, SESSION_TAG_TENANT_ID);
    if(!(mb && !strcmp(mb, W_CTRL)) && !linked_anywhere(w, a->sandbox_id)) {
      snprintf(msg, len, "delete of %s: neither our tag nor a link",
               a->sandbox_id);
      return msg;
    }
    if(!str_eq_test(tn, a->expect_tenant)) {
      snprintf(msg, len, "delete of %s: expect_tenant %s, tag %s",
               a->sandbox_id, a->expect_tenant ? a->expect_tenant : "-",
               tn ? tn : "-");
      return msg;
    }
    if(a->s) {
      const session *s = a->s;
      if(tn && strcmp(tn, s->spec.tenant_id)) {
        snprintf(msg, len, "delete of %s (tenant %s) for session of %s",
                 a->sandbox_id, tn, s->spec.tenant_id);
        return msg;
      }
      if(!s->meta.deletion_timestamp &&
         s->spec.state != SESSION_STATE_ENDED) {
        const plan_session *ps = p_sess(p, s);
        if(a->del_kind == PLAN_DEL_RECLAIM) {
          if(b->state != CUBE_SB_PAUSED)
            return "reclaim of a sandbox that is not paused";
          if(s->spec.state == SESSION_STATE_RUNNING)
            return "reclaim for a Running session";
          if(!s->spec.reclaim_after_ms || !b->end_at ||
             w->now - b->end_at < s->spec.reclaim_after_ms) {
            snprintf(msg, len, "early reclaim of %s: now-endAt %lld < %lld",
                     a->sandbox_id, (long long)(w->now - b->end_at),
                     (long long)s->spec.reclaim_after_ms);
            return msg;
          }
          if(!a->expect_paused)
            return "reclaim without expect_paused";
        }
        else if(a->del_kind == PLAN_DEL_DUPLICATE) {
          if(!ps || !ps->status.sandbox_id ||
             !strcmp(ps->status.sandbox_id, a->sandbox_id))
            return "duplicate delete of the kept sandbox";
          if(str_eq_test(s->status.sandbox_id, a->sandbox_id))
            return "duplicate delete of the sandbox status.sandboxID names";
        }
        else {
          snprintf(msg, len, "delete kind %s for a live session",
                   plan_delete_kind_name(a->del_kind));
          return msg;
        }
      }
      else if(a->del_kind != (s->meta.deletion_timestamp
                                ? PLAN_DEL_TOMBSTONE : PLAN_DEL_ENDED))
        return "wrong delete kind for an ending session";
    }
    else {
      if(!w->complete)
        return "orphan delete from an incomplete list";
      if(b->state != CUBE_SB_PAUSED || !b->end_at ||
         w->now - b->end_at < w->cfg.orphan_grace_ms)
        return "orphan delete before its grace";
      if(!(mb && !strcmp(mb, W_CTRL)) || linked_anywhere(w, a->sandbox_id))
        return "orphan that is not ours or is linked";
      if(!a->expect_paused || !a->expect_managed_by)
        return "orphan delete without expectations";
    }
  }
  if(p->guard_tripped && p_count(p, PLAN_DELETE, PLAN_DEL_ORPHAN))
    return "guard tripped but orphans deleted";
  return NULL;
}

/* The plan as canonical text: actions in plan order, statuses sorted. */
static int line_cmp(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *canon(const plan *p)
{
  char *t = p_text(p), *line, *save = NULL, **lines = NULL;
  size_t n = 0, i;
  dynbuf out;
  if(!t)
    return NULL;
  dynbuf_init(&out, 64 << 20);
  lines = calloc(strlen(t) / 8 + 2, sizeof(*lines));
  for(line = strtok_r(t, "\n", &save); line && lines;
      line = strtok_r(NULL, "\n", &save)) {
    if(!strncmp(line, "action ", 7)) {
      if(dynbuf_printf(&out, "%s\n", line))
        abort();
    }
    else
      lines[n++] = line;
  }
  if(lines) {
    qsort(lines, n, sizeof(*lines), line_cmp);
    for(i = 0; i < n; i++)
      if(dynbuf_printf(&out, "%s\n", lines[i]))
        abort();
  }
  free(lines);
  free(t);
  return dynbuf_take(&out);
}

static void shuffle(world *w, rng *r)
{
  size_t i;
  for(i = w->ns; i > 1; i--) {
    size_t j = rn(r, (unsigned)i);
    session *t = w->s[i - 1];
    w->s[i - 1] = w->s[j];
    w->s[j] = t;
  }
  for(i = w->nb; i > 1; i--) {
    size_t j = rn(r, (unsigned)i);
    cube_sandbox t = w->b[i - 1];
    w->b[i - 1] = w->b[j];
    w->b[j] = t;
  }
  for(i = w->ngone; i > 1; i--) {
    size_t j = rn(r, (unsigned)i);
    const char *t = w->gone[i - 1];
    w->gone[i - 1] = w->gone[j];
    w->gone[j] = t;
  }
}

/* ---------- simulate the executor and Cube ---------- */

static cube_sandbox *sim_find(world *w, const char *id)
{
  size_t i;
  for(i = 0; i < w->nb; i++)
    if(!strcmp(w->b[i].sandbox_id, id))
      return &w->b[i];
  return NULL;
}

static void sim_remove(world *w, const char *id)
{
  size_t i = 0;
  while(i < w->nb) {
    if(!strcmp(w->b[i].sandbox_id, id)) {
      cube_sandbox_clear(&w->b[i]);
      w->b[i] = w->b[--w->nb];
    }
    else
      i++;
  }
}

static bool sim_confirm_delete(world *w, const plan_action *a)
{
  cube_sandbox *b = sim_find(w, a->sandbox_id);
  const char *tn, *mb;
  if(!b)
    return true; /* delete of a missing sandbox is success */
  tn = tag(b, SESSION_TAG_TENANT_ID);
  mb = tag(b, SESSION_TAG_MANAGED_BY);
  if(a->expect_tenant && !str_eq_test(tn, a->expect_tenant))
    return false;
  if(a->expect_paused && b->state != CUBE_SB_PAUSED)
    return false;
  if(a->expect_managed_by && !(mb && !strcmp(mb, W_CTRL)))
    return false;
  return true;
}

/* Perform every action, write statuses; the next pass's gone list holds
 * the IDs the confirms found missing. Returns 0 or -1 on a sim error. */
static int sim_apply(world *w, const plan *p, int *next_id,
                     const char **gone_store, size_t gone_cap)
{
  size_t i, k;
  session_status *st = calloc(w->ns ? w->ns : 1, sizeof(*st));
  if(!st)
    return -1;
  /* Cube lists each sandbox once again: keep what the planner believed */
  for(i = 0; i < w->nb; i++)
    for(k = i + 1; k < w->nb; k++)
      if(!strcmp(w->b[i].sandbox_id, w->b[k].sandbox_id)) {
        size_t drop = w->b[k].state == CUBE_SB_RUNNING ? i : k;
        cube_sandbox_clear(&w->b[drop]);
        w->b[drop] = w->b[--w->nb];
        i = (size_t)-1; /* restart */
        break;
      }
  /* the status the plan wants, written first */
  for(i = 0; i < w->ns; i++) {
    const plan_session *ps = p_sess(p, w->s[i]);
    if(!ps || session_status_copy(&st[i], &ps->status))
      return -1;
  }
  w->ngone = 0;
  for(i = 0; i < p->n_actions; i++) {
    const plan_action *a = &p->actions[i];
    char newid[32] = "";
    cube_sandbox *b = a->sandbox_id ? sim_find(w, a->sandbox_id) : NULL;
    size_t si = SIZE_MAX;
    for(k = 0; a->s && k < w->ns; k++)
      if(w->s[k] == a->s)
        si = k;
    switch(a->type) {
    case PLAN_CREATE: {
      cube_sandbox *nb = w_sb(w, "x", CUBE_SB_RUNNING,
                              w->now + a->timeout_s * 1000,
                              a->s->spec.tenant_id, a->s->spec.session_id);
      snprintf(newid, sizeof(newid), "new%03d", (*next_id)++);
      free(nb->sandbox_id);
      nb->sandbox_id = strdup(newid);
      nb->started_at = w->now;
      break;
    }
    case PLAN_PAUSE:
      if(b) {
        b->state = CUBE_SB_PAUSED;
        b->end_at = w->now; /* E2B: endAt = pause time */
      }
      break;
    case PLAN_RESUME:
    case PLAN_KEEPALIVE:
    case PLAN_SET_TIMEOUT:
      if(b) {
        b->state = CUBE_SB_RUNNING;
        b->end_at = w->now + a->timeout_s * 1000;
      }
      break;
    case PLAN_DELETE:
      if(!sim_confirm_delete(w, a))
        continue; /* left alone: no status change */
      sim_remove(w, a->sandbox_id);
      break;
    case PLAN_CONFIRM:
      if(!b && w->ngone < gone_cap)
        gone_store[w->ngone++] = a->sandbox_id;
      break;
    }
    if(si != SIZE_MAX &&
       plan_status_after(a->s, a, newid[0] ? newid : NULL, &st[si]))
      return -1;
  }
  for(i = 0; i < w->ns; i++) {
    session_status_clear(&w->s[i]->status);
    w->s[i]->status = st[i];
  }
  free(st);
  return 0;
}

#define MAX_STEPS 4

static void dump_status(const char *what, const session_status *st)
{
  size_t j;
  fprintf(stderr, "  %s phase=%s sb=%s state=%s endAt=%lld og=%lld rg=%lld "
          "pbc=%d applied=%lld:", what, session_phase_name(st->phase),
          st->sandbox_id ? st->sandbox_id : "-",
          st->sandbox_state ? st->sandbox_state : "-",
          (long long)st->end_at, (long long)st->observed_generation,
          (long long)st->reclaimed_generation, st->paused_by_controller,
          (long long)st->applied_idle_timeout_ms);
  for(j = 0; j < st->n_conditions; j++)
    fprintf(stderr, " %s=%s/%s/%lld/og%lld '%s'", st->conditions[j].type,
            st->conditions[j].status, st->conditions[j].reason,
            (long long)st->conditions[j].last_transition_time,
            (long long)st->conditions[j].observed_generation,
            st->conditions[j].message);
  fputc('\n', stderr);
}

/* on failure: each changing session's old and new status */
static void dump_changed(const plan *p)
{
  size_t i;
  for(i = 0; i < p->n_sessions; i++)
    if(p->sessions[i].status_changed) {
      fprintf(stderr, " %s/%s%s:\n", p->sessions[i].s->meta.namespace_,
              p->sessions[i].s->meta.name,
              p->sessions[i].s->meta.deletion_timestamp ? " (tombstone)" : "");
      dump_status("old", &p->sessions[i].s->status);
      dump_status("new", &p->sessions[i].status);
    }
}

static bool quiet(const plan *p)
{
  size_t i;
  if(p->n_actions)
    return false;
  for(i = 0; i < p->n_sessions; i++)
    if(p->sessions[i].status_changed)
      return false;
  return true;
}

TEST(props_random_worlds)
{
  size_t c, cases = n_cases();
  uint64_t seed0 = first_seed();
  size_t total_actions = 0, total_deletes = 0, converged_steps[MAX_STEPS + 1] = {0};
  world *w = w_new(), *w2 = w_new();
  for(c = 0; c < cases; c++) {
    rng r = {(seed0 + c) * 0x9E3779B97F4A7C15ULL | 1};
    rng r2;
    plan *p, *p2;
    char *t1, *t2, msg[256];
    const char *bad;
    int step, next_id = 0;
    static char gone_ids[2][W_MAX_GONE][16];
    const char *gone_ptr[W_MAX_GONE];
    size_t g;

    world_free(w);
    gen_world(w, &r);
    p = w_plan(w);
    CHECK_MSG(p, "seed %llu: plan_compute failed",
              (unsigned long long)(seed0 + c));
    bad = check_safety(w, p, msg, sizeof(msg));
    CHECK_MSG(!bad, "seed %llu: %s", (unsigned long long)(seed0 + c), bad);
    total_actions += p->n_actions;
    total_deletes += p_count(p, PLAN_DELETE, PLAN_DEL_RECLAIM) +
                     p_count(p, PLAN_DELETE, PLAN_DEL_ORPHAN) +
                     p_count(p, PLAN_DELETE, PLAN_DEL_DUPLICATE);

    /* determinism: the same input again, and the same world shuffled */
    p2 = w_plan(w);
    t1 = canon(p);
    t2 = canon(p2);
    CHECK(t1 && t2);
    CHECK_MSG(!strcmp(t1, t2), "seed %llu: two runs differ",
              (unsigned long long)(seed0 + c));
    free(t2);
    plan_free(p2);
    r2 = r;
    world_free(w2);
    r = (rng){(seed0 + c) * 0x9E3779B97F4A7C15ULL | 1};
    gen_world(w2, &r);
    r = r2;
    shuffle(w2, &r);
    p2 = w_plan(w2);
    t2 = p2 ? canon(p2) : NULL;
    CHECK(t2);
    CHECK_MSG(!strcmp(t1, t2), "seed %llu: shuffled input differs:\n%s---\n%s",
              (unsigned long long)(seed0 + c), t1, t2);
    free(t1);
    free(t2);
    plan_free(p2);

    /* convergence with Cube's clock standing still: perform the actions,
     * write the statuses, plan again, until a plan has neither actions
     * nor status changes (statuses are part of the world: a cleared link
     * frees a sandbox for another session) */
    for(step = 0; step < MAX_STEPS && !quiet(p); step++) {
      int slot = step & 1;
      CHECK_MSG(!sim_apply(w, p, &next_id, gone_ptr, W_MAX_GONE),
                "seed %llu: sim failed", (unsigned long long)(seed0 + c));
      for(g = 0; g < w->ngone; g++) { /* keep the IDs alive */
        snprintf(gone_ids[slot][g], sizeof(gone_ids[slot][g]), "%s",
                 gone_ptr[g]);
        w->gone[g] = gone_ids[slot][g];
      }
      plan_free(p);
      p = w_plan(w);
      CHECK(p);
      bad = check_safety(w, p, msg, sizeof(msg));
      CHECK_MSG(!bad, "seed %llu step %d: %s",
                (unsigned long long)(seed0 + c), step + 1, bad);
    }
    if(!quiet(p)) {
      dump_changed(p);
      t1 = canon(p);
      CHECK_MSG(0, "seed %llu: not quiet after %d steps:\n%s",
                (unsigned long long)(seed0 + c), step, t1 ? t1 : "");
    }
    converged_steps[step]++;
    plan_free(p);
  }
  if(getenv("TEST_VERBOSE"))
    fprintf(stderr,
            "  %zu worlds, %zu actions, %zu non-intent deletes; quiet "
            "after 0..4 steps: %zu %zu %zu %zu %zu\n",
            cases, total_actions, total_deletes, converged_steps[0],
            converged_steps[1], converged_steps[2], converged_steps[3],
            converged_steps[4]);
  /* the generator must exercise the interesting paths */
  CHECK(total_deletes > cases / 10);
  CHECK(converged_steps[2] + converged_steps[3] > 0);
  w_del(w);
  w_del(w2);
}

TEST_LIST = {
  T(props_random_worlds),
  {0},
};

TEST_MAIN()
