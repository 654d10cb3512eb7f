/* sim_state.c - sandboxes, lifecycle and the timer heap (see sim_state.h). */
#include "cmd/cubesim/sim_state.h"

#include <stdlib.h>
#include <string.h>
#include "cmd/cubesim/sim_faults.h"
#include "lib/hmap.h"

struct sim_state {
  sim_state_config cfg;
  sim_sandbox **all;  /* creation order */
  size_t n, alloc;
  sc_hmap *ids;       /* id -> sim_sandbox (lib/hmap.h); the IDs are the
                       * simulator's own, so the hash is not seeded */
  sim_sandbox **heap;
  size_t hn, halloc;
  uint64_t due_seq;
  size_t live;
  sim_rng idrng;
  sim_event_fn ev;
  sim_drop_labels_fn dl;
  void *hook_arg;
  uint64_t version;   /* bumped by every change of a state or metadata */
};

sim_state *sim_state_new(const sim_state_config *cfg)
{
  sim_state *st = calloc(1, sizeof(*st));
  if(!st)
    return NULL;
  st->ids = sc_hmap_new(0);
  if(!st->ids) {
    free(st);
    return NULL;
  }
  st->cfg = *cfg;
  sim_rng_seed(&st->idrng, cfg->seed ^ 0x5eedc0bef00dULL);
  return st;
}

static void free_sandboxes(sim_state *st)
{
  size_t i;
  for(i = 0; i < st->n; i++) {
    free(st->all[i]->template_id);
    free(st->all[i]->meta);
    free(st->all[i]->lost_meta);
    free(st->all[i]->network_json);
    free(st->all[i]->volumes_json);
    free(st->all[i]);
  }
}

void sim_state_free(sim_state *st)
{
  if(!st)
    return;
  free_sandboxes(st);
  free(st->all);
  sc_hmap_free(st->ids);
  free(st->heap);
  free(st);
}

void sim_state_reset(sim_state *st)
{
  free_sandboxes(st);
  st->n = 0;
  st->hn = 0;
  st->live = 0;
  st->due_seq = 0;
  sc_hmap_clear(st->ids);
  sim_rng_seed(&st->idrng, st->cfg.seed ^ 0x5eedc0bef00dULL);
  st->version++; /* never back to a value a count was taken at */
}

uint64_t sim_state_version(const sim_state *st)
{
  return st->version;
}

void sim_state_set_hooks(sim_state *st, sim_event_fn ev, sim_drop_labels_fn dl,
                         void *arg)
{
  st->ev = ev;
  st->dl = dl;
  st->hook_arg = arg;
}

sim_dialect sim_state_dialect(const sim_state *st)
{
  return st->cfg.dialect;
}

/* ---- the ID table ---- */

static bool id_eq(const void *value, const void *key, void *ud)
{
  (void)ud;
  return !strcmp(((const sim_sandbox *)value)->id, key);
}

sim_sandbox *sim_state_find(const sim_state *st, const char *id)
{
  if(strlen(id) >= SIM_ID_MAX)
    return NULL;
  return sc_hmap_get(st->ids, sc_hash_id(id), id_eq, id, NULL);
}

/* ---- the timer heap, ordered by (due, due_seq) ---- */

static int heap_less(const sim_sandbox *a, const sim_sandbox *b)
{
  if(a->due != b->due)
    return a->due < b->due;
  return a->due_seq < b->due_seq;
}

static void heap_set(sim_state *st, size_t i, sim_sandbox *sb)
{
  st->heap[i] = sb;
  sb->heap_idx = (int32_t)i;
}

static void heap_up(sim_state *st, size_t i)
{
  sim_sandbox *sb = st->heap[i];
  while(i > 0) {
    size_t p = (i - 1) / 2;
    if(!heap_less(sb, st->heap[p]))
      break;
    heap_set(st, i, st->heap[p]);
    i = p;
  }
  heap_set(st, i, sb);
}

static void heap_down(sim_state *st, size_t i)
{
  sim_sandbox *sb = st->heap[i];
  for(;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    const sim_sandbox *best = sb;
    if(l < st->hn && heap_less(st->heap[l], best)) {
      m = l;
      best = st->heap[l];
    }
    if(r < st->hn && heap_less(st->heap[r], best))
      m = r;
    if(m == i)
      break;
    heap_set(st, i, st->heap[m]);
    i = m;
  }
  heap_set(st, i, sb);
}

static void heap_remove(sim_state *st, sim_sandbox *sb)
{
  size_t i;
  sim_sandbox *last;
  if(sb->heap_idx < 0)
    return;
  i = (size_t)sb->heap_idx;
  sb->heap_idx = -1;
  last = st->heap[--st->hn];
  if(last == sb)
    return;
  heap_set(st, i, last);
  heap_up(st, i);
  heap_down(st, (size_t)last->heap_idx);
}

/* The heap has room for every sandbox (it grows with st->all), so
 * scheduling cannot fail. */
static void heap_schedule(sim_state *st, sim_sandbox *sb, sc_time due)
{
  if(sb->heap_idx >= 0 && sb->due == due)
    return;
  heap_remove(st, sb);
  sb->due = due;
  sb->due_seq = ++st->due_seq;
  st->heap[st->hn] = sb;
  sb->heap_idx = (int32_t)st->hn;
  st->hn++;
  heap_up(st, st->hn - 1);
}

/* ---- lifecycle ---- */

static int is_cube(const sim_state *st)
{
  return st->cfg.dialect == SIM_DIALECT_CUBE;
}

static sc_time add_secs(sc_time t, int32_t s)
{
  return t + (int64_t)s * 1000;
}

/* when the sandbox's timer should fire; 0: no timer */
static sc_time desired_due(const sim_state *st, const sim_sandbox *sb)
{
  switch((sim_sbx_state)sb->state) {
  case SIM_PAUSING:
    return sb->pausing_until;
  case SIM_RUNNING:
    if(!is_cube(st))
      return sb->end_at;
    return sb->timeout_s < 0 ? 0 : add_secs(sb->last_activity, sb->timeout_s);
  case SIM_PAUSED:
    if(is_cube(st) && !sb->auto_pause && sb->timeout_s >= 0)
      return add_secs(sb->last_activity, sb->timeout_s);
    return 0;
  case SIM_DELETED:
    break;
  }
  return 0;
}

static void reschedule(sim_state *st, sim_sandbox *sb)
{
  sc_time due = desired_due(st, sb);
  if(due)
    heap_schedule(st, sb, due);
  else
    heap_remove(st, sb);
}

static void emit(sim_state *st, const sim_sandbox *sb, sc_time at,
                 const char *event, sim_sbx_state before)
{
  if(st->ev)
    st->ev(st->hook_arg, sb, at, event, before, (sim_sbx_state)sb->state);
}

static void complete_pause(sim_state *st, sim_sandbox *sb, sc_time t)
{
  sb->state = SIM_PAUSED;
  st->version++;
  if(st->dl && st->dl(st->hook_arg) && sb->meta) {
    free(sb->lost_meta);
    sb->lost_meta = sb->meta;
    sb->lost_meta_count = sb->meta_count;
    sb->meta = NULL;
    sb->meta_len = 0;
    sb->meta_count = 0;
  }
  emit(st, sb, t, "pause-complete", SIM_PAUSING);
  reschedule(st, sb);
}

static void begin_pause(sim_state *st, sim_sandbox *sb, sc_time t)
{
  sb->state = SIM_PAUSING;
  st->version++;
  sb->paused_at = t;
  sb->pausing_until = t + st->cfg.pause_ms;
  reschedule(st, sb);
}

static void kill_sandbox(sim_state *st, sim_sandbox *sb, sc_time t,
                         sim_del_reason why)
{
  sb->state = SIM_DELETED;
  st->version++;
  sb->deleted_at = t;
  sb->delete_reason = (uint8_t)why;
  st->live--;
  heap_remove(st, sb);
}

static void fire(sim_state *st, sim_sandbox *sb, sc_time t)
{
  sim_sbx_state before = (sim_sbx_state)sb->state;
  switch(before) {
  case SIM_PAUSING:
    complete_pause(st, sb, t);
    return;
  case SIM_RUNNING:
    if(sb->auto_pause) {
      begin_pause(st, sb, t);
      emit(st, sb, t, "timeout-pause", before);
      if(st->cfg.pause_ms <= 0)
        complete_pause(st, sb, t);
      return;
    }
    kill_sandbox(st, sb, t, SIM_DEL_TIMEOUT);
    emit(st, sb, t, "timeout-kill", before);
    return;
  case SIM_PAUSED:
    kill_sandbox(st, sb, t, SIM_DEL_TIMEOUT);
    emit(st, sb, t, "timeout-kill", before);
    return;
  case SIM_DELETED:
    heap_remove(st, sb);
    return;
  }
}

size_t sim_state_advance(sim_state *st, sc_time now)
{
  size_t fired = 0;
  while(st->hn && st->heap[0]->due <= now) {
    sim_sandbox *sb = st->heap[0];
    sc_time t = sb->due;
    heap_remove(st, sb);
    fire(st, sb, t);
    fired++;
  }
  return fired;
}

sc_time sim_state_next_due(const sim_state *st)
{
  return st->hn ? st->heap[0]->due : 0;
}

size_t sim_state_count(const sim_state *st)
{
  return st->n;
}

sim_sandbox *sim_state_at(const sim_state *st, size_t i)
{
  return i < st->n ? st->all[i] : NULL;
}

size_t sim_state_live(const sim_state *st)
{
  return st->live;
}

static void make_id(sim_state *st, char *out)
{
  static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  static const char hex[] = "0123456789abcdef";
  int i;
  do {
    if(is_cube(st)) {
      uint64_t a = sim_rng_next(&st->idrng), b = sim_rng_next(&st->idrng);
      for(i = 0; i < 16; i++) {
        out[i] = hex[(a >> (i * 4)) & 15];
        out[16 + i] = hex[(b >> (i * 4)) & 15];
      }
      out[32] = '\0';
    }
    else {
      out[0] = 'i';
      for(i = 1; i <= 20; i++)
        out[i] = alnum[sim_rng_next(&st->idrng) % 36];
      out[21] = '\0';
    }
  } while(sim_state_find(st, out));
}

sim_result sim_state_create(sim_state *st, sc_time now,
                            const sim_create_req *req, int64_t capacity,
                            sim_sandbox **out)
{
  sim_sandbox *sb;
  size_t i, mlen = 0;
  char *p;

  *out = NULL;
  if(st->cfg.max_live && st->live >= st->cfg.max_live)
    return SIM_R_CAPACITY;
  if(capacity >= 0 && st->live >= (size_t)capacity)
    return SIM_R_CAPACITY;
  if(st->n >= UINT32_MAX - 1)
    return SIM_R_NOMEM;
  if(st->n == st->alloc) {
    size_t na = st->alloc ? st->alloc * 2 : 1024;
    sim_sandbox **a = realloc(st->all, na * sizeof(*a));
    sim_sandbox **h;
    if(!a)
      return SIM_R_NOMEM;
    st->all = a;
    h = realloc(st->heap, na * sizeof(*h));
    if(!h)
      return SIM_R_NOMEM;
    st->heap = h;
    st->alloc = na;
  }
  if(sc_hmap_reserve(st->ids, st->n + 1))   /* the put below cannot fail */
    return SIM_R_NOMEM;
  sb = calloc(1, sizeof(*sb));
  if(!sb)
    return SIM_R_NOMEM;
  sb->template_id = strdup(req->template_id ? req->template_id : "");
  for(i = 0; i < req->meta_count * 2; i++)
    mlen += strlen(req->meta[i]) + 1;
  if(mlen) {
    sb->meta = malloc(mlen);
    if(sb->meta) {
      p = sb->meta;
      for(i = 0; i < req->meta_count * 2; i++) {
        size_t l = strlen(req->meta[i]) + 1;
        memcpy(p, req->meta[i], l);
        p += l;
      }
    }
  }
  sb->internet = (int8_t)(req->internet < 0 ? -1 : !!req->internet);
  if(req->network_json)
    sb->network_json = strdup(req->network_json);
  if(req->volumes_json)
    sb->volumes_json = strdup(req->volumes_json);
  if(!sb->template_id || (mlen && !sb->meta) ||
     (req->network_json && !sb->network_json) ||
     (req->volumes_json && !sb->volumes_json)) {
    free(sb->template_id);
    free(sb->meta);
    free(sb->network_json);
    free(sb->volumes_json);
    free(sb);
    return SIM_R_NOMEM;
  }
  sb->meta_len = (uint32_t)mlen;
  sb->meta_count = (uint32_t)req->meta_count;
  make_id(st, sb->id);
  sb->state = SIM_RUNNING;
  st->version++;
  sb->auto_pause = req->auto_pause ? 1 : 0;
  sb->auto_resume = req->auto_resume ? 1 : 0;
  sb->heap_idx = -1;
  sb->index = (uint32_t)st->n;
  sb->created_at = sb->started_at = sb->last_activity = now;
  if(is_cube(st))
    sb->timeout_s = req->has_timeout ? req->timeout_s : -1;
  else
    sb->timeout_s = req->has_timeout ? req->timeout_s : 15;
  sb->end_at = add_secs(now, sb->timeout_s < 0 ? 0 : sb->timeout_s);
  st->all[st->n] = sb;
  (void)sc_hmap_put(st->ids, sc_hash_id(sb->id), sb);
  st->n++;
  st->live++;
  reschedule(st, sb);
  *out = sb;
  return SIM_R_OK;
}

sim_result sim_state_pause(sim_state *st, sim_sandbox *sb, sc_time now)
{
  switch((sim_sbx_state)sb->state) {
  case SIM_DELETED:
    return SIM_R_GONE;
  case SIM_PAUSING:
  case SIM_PAUSED:
    return SIM_R_ALREADY_PAUSED;
  case SIM_RUNNING:
    break;
  }
  begin_pause(st, sb, now);
  if(st->cfg.pause_ms <= 0)
    complete_pause(st, sb, now);
  return SIM_R_OK;
}

/* paused (or pausing) -> running; timeout handling per dialect */
static void do_resume(sim_state *st, sim_sandbox *sb, sc_time now,
                      int has_timeout, int32_t timeout_s, int raise_only)
{
  if(sb->state == SIM_PAUSING)
    complete_pause(st, sb, now);
  sb->state = SIM_RUNNING;
  st->version++;
  sb->last_activity = now;
  if(is_cube(st)) {
    if(has_timeout) {
      if(!raise_only)
        sb->timeout_s = timeout_s;
      else if(sb->timeout_s >= 0 && (timeout_s < 0 || timeout_s > sb->timeout_s))
        sb->timeout_s = timeout_s;
    }
  }
  else {
    sb->started_at = now;
    if(has_timeout && timeout_s >= 0)
      sb->timeout_s = timeout_s;
    sb->end_at = add_secs(now, sb->timeout_s);
  }
  reschedule(st, sb);
}

sim_result sim_state_resume(sim_state *st, sim_sandbox *sb, sc_time now,
                            int has_timeout, int32_t timeout_s)
{
  if(sb->state == SIM_DELETED)
    return SIM_R_GONE;
  if(sb->state == SIM_RUNNING)
    return SIM_R_ALREADY_RUNNING;
  do_resume(st, sb, now, has_timeout, timeout_s, 0);
  return SIM_R_OK;
}

sim_result sim_state_connect(sim_state *st, sim_sandbox *sb, sc_time now,
                             int has_timeout, int32_t timeout_s)
{
  if(sb->state == SIM_DELETED)
    return SIM_R_GONE;
  if(sb->state != SIM_RUNNING) {
    do_resume(st, sb, now, has_timeout, timeout_s, 1);
    return SIM_R_RESUMED;
  }
  sb->last_activity = now;
  if(is_cube(st)) {
    if(has_timeout && sb->timeout_s >= 0 &&
       (timeout_s < 0 || timeout_s > sb->timeout_s))
      sb->timeout_s = timeout_s;
  }
  else if(has_timeout && timeout_s >= 0) {
    sc_time e = add_secs(now, timeout_s);
    if(e > sb->end_at)
      sb->end_at = e;
  }
  reschedule(st, sb);
  return SIM_R_OK;
}

sim_result sim_state_set_timeout(sim_state *st, sim_sandbox *sb, sc_time now,
                                 int32_t timeout_s)
{
  if(sb->state == SIM_DELETED)
    return SIM_R_GONE;
  if(is_cube(st)) {
    sb->timeout_s = timeout_s;
  }
  else {
    if(sb->state != SIM_RUNNING)
      return SIM_R_NOT_RUNNING;
    if(timeout_s < 0)
      timeout_s = 0;
    sb->timeout_s = timeout_s;
    sb->end_at = add_secs(now, timeout_s);
  }
  reschedule(st, sb);
  return SIM_R_OK;
}

sim_result sim_state_refresh(sim_state *st, sim_sandbox *sb, sc_time now,
                             int has_duration, int32_t duration_s)
{
  if(sb->state == SIM_DELETED)
    return SIM_R_GONE;
  if(sb->state != SIM_RUNNING)
    return SIM_R_NOT_RUNNING;
  if(is_cube(st))
    sb->last_activity = now;
  else {
    int32_t d = has_duration ? duration_s : sb->timeout_s;
    sc_time e = add_secs(now, d < 0 ? 0 : d);
    if(e > sb->end_at)
      sb->end_at = e;
  }
  reschedule(st, sb);
  return SIM_R_OK;
}

sim_result sim_state_delete(sim_state *st, sim_sandbox *sb, sc_time now)
{
  if(sb->state == SIM_DELETED)
    return SIM_R_GONE;
  if(sb->state == SIM_PAUSING && is_cube(st))
    return SIM_R_PAUSING;
  kill_sandbox(st, sb, now, SIM_DEL_API);
  return SIM_R_OK;
}

sim_result sim_state_traffic(sim_state *st, sim_sandbox *sb, sc_time now)
{
  switch((sim_sbx_state)sb->state) {
  case SIM_DELETED:
    return SIM_R_GONE;
  case SIM_RUNNING:
    sb->last_activity = now;
    reschedule(st, sb);
    return SIM_R_OK;
  case SIM_PAUSING:
  case SIM_PAUSED:
    if(!sb->auto_resume)
      return SIM_R_NO_AUTORESUME;
    do_resume(st, sb, now, 0, 0, 0);
    return SIM_R_RESUMED;
  }
  return SIM_R_OK;
}

sc_time sim_sandbox_end_at(const sim_state *st, const sim_sandbox *sb)
{
  if(is_cube(st))
    return sb->timeout_s < 0 ? 0 : add_secs(sb->last_activity, sb->timeout_s);
  if(sb->state == SIM_PAUSING || sb->state == SIM_PAUSED)
    return sb->paused_at;
  if(sb->state == SIM_DELETED)
    return sb->deleted_at < sb->end_at ? sb->deleted_at : sb->end_at;
  return sb->end_at;
}

const char *sim_state_name(sim_sbx_state s)
{
  switch(s) {
  case SIM_RUNNING: return "running";
  case SIM_PAUSING: return "pausing";
  case SIM_PAUSED: return "paused";
  case SIM_DELETED: return "deleted";
  }
  return "unknown";
}

const char *sim_public_state(const sim_state *st, const sim_sandbox *sb)
{
  if(sb->state == SIM_PAUSING && is_cube(st))
    return "pausing";
  return sb->state == SIM_RUNNING ? "running" : "paused";
}

const char *sim_sandbox_meta(const sim_sandbox *sb, const char *k)
{
  const char *p = sb->meta;
  uint32_t i;
  for(i = 0; p && i < sb->meta_count; i++) {
    const char *v = p + strlen(p) + 1;
    if(!strcmp(p, k))
      return v;
    p = v + strlen(v) + 1;
  }
  return NULL;
}
