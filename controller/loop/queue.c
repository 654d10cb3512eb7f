/* queue.c - deduplicating work queue with per-item backoff (see queue.h). */
#include "controller/loop/queue.h"
#include "lib/scarray.h"

#include <stdlib.h>
#include <string.h>

#include "lib/hmap.h"

typedef struct qitem {
  char *key;
  struct qitem *fnext;   /* ready FIFO */
  bool ready;            /* in the FIFO */
  bool processing;       /* popped, not done */
  bool dirty;            /* added while processing: run again */
  int failures;
  int64_t due;           /* pending delayed readiness, 0 = none */
  unsigned heap_refs;    /* heap entries pointing here */
} qitem;

typedef struct hentry {
  int64_t due;
  uint64_t seq;          /* FIFO among equal due times */
  qitem *it;
} hentry;

struct work_queue {
  sc_hmap *items;        /* key -> qitem (lib/hmap.h) */
  qitem *fhead, *ftail;
  size_t nready, nprocessing, ndelayed;
  hentry *heap;
  size_t nheap, aheap;
  uint64_t seq;
  int64_t base_ms, max_ms;
};

static bool key_eq(const void *v, const void *key, void *ud)
{
  (void)ud;
  return !strcmp(((const qitem *)v)->key, key);
}

work_queue *queue_new(const queue_opts *opts)
{
  work_queue *q = calloc(1, sizeof(*q));
  if(!q)
    return NULL;
  q->items = sc_hmap_new(1024);
  if(!q->items) {
    free(q);
    return NULL;
  }
  q->base_ms = opts && opts->base_delay_ms > 0 ? opts->base_delay_ms : 200;
  q->max_ms = opts && opts->max_delay_ms > 0 ? opts->max_delay_ms : 300000;
  return q;
}

void queue_free(work_queue *q)
{
  size_t i = 0;
  qitem *it;
  if(!q)
    return;
  while((it = sc_hmap_each(q->items, &i)) != NULL) {
    free(it->key);
    free(it);
  }
  sc_hmap_free(q->items);
  free(q->heap);
  free(q);
}

static qitem *find(const work_queue *q, const char *key)
{
  return sc_hmap_get(q->items, sc_hash_id(key), key_eq, key, NULL);
}

static qitem *get_or_create(work_queue *q, const char *key)
{
  qitem *it = find(q, key);
  if(it)
    return it;
  it = calloc(1, sizeof(*it));
  if(!it || !(it->key = strdup(key))) {
    free(it);
    return NULL;
  }
  if(sc_hmap_put(q->items, sc_hash_id(key), it)) {
    free(it->key);
    free(it);
    return NULL;
  }
  return it;
}

/* drop an item that no longer carries any state */
static void maybe_remove(work_queue *q, qitem *it)
{
  if(it->ready || it->processing || it->dirty || it->due || it->failures ||
     it->heap_refs)
    return;
  sc_hmap_remove_value(q->items, sc_hash_id(it->key), it);
  free(it->key);
  free(it);
}

static void push_ready(work_queue *q, qitem *it)
{
  it->ready = true;
  it->fnext = NULL;
  if(q->ftail)
    q->ftail->fnext = it;
  else
    q->fhead = it;
  q->ftail = it;
  q->nready++;
}

static void make_ready(work_queue *q, qitem *it)
{
  if(it->due) {
    it->due = 0; /* its heap entry is now stale */
    q->ndelayed--;
  }
  if(it->processing) {
    it->dirty = true;
    return;
  }
  if(!it->ready)
    push_ready(q, it);
}

sc_err queue_add(work_queue *q, const char *key)
{
  qitem *it = get_or_create(q, key);
  if(!it)
    return SC_ERR_NOMEM;
  make_ready(q, it);
  return SC_OK;
}

static bool hless(const hentry *a, const hentry *b)
{
  return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static sc_err heap_push(work_queue *q, int64_t due, qitem *it)
{
  size_t i;
  {
    hentry *h = sc_grow(q->heap, &q->aheap, q->nheap + 1, sizeof(*h));
    if(!h)
      return SC_ERR_NOMEM;
    q->heap = h;
  }
  i = q->nheap++;
  q->heap[i].due = due;
  q->heap[i].seq = q->seq++;
  q->heap[i].it = it;
  it->heap_refs++;
  while(i > 0) {
    size_t p = (i - 1) / 2;
    hentry t;
    if(!hless(&q->heap[i], &q->heap[p]))
      break;
    t = q->heap[i];
    q->heap[i] = q->heap[p];
    q->heap[p] = t;
    i = p;
  }
  return SC_OK;
}

static hentry heap_pop(work_queue *q)
{
  hentry top = q->heap[0];
  size_t i = 0;
  q->heap[0] = q->heap[--q->nheap];
  for(;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    hentry t;
    if(l < q->nheap && hless(&q->heap[l], &q->heap[m]))
      m = l;
    if(r < q->nheap && hless(&q->heap[r], &q->heap[m]))
      m = r;
    if(m == i)
      break;
    t = q->heap[i];
    q->heap[i] = q->heap[m];
    q->heap[m] = t;
    i = m;
  }
  top.it->heap_refs--;
  return top;
}

sc_err queue_add_after(work_queue *q, const char *key, int64_t delay_ms,
                       int64_t now_ms)
{
  qitem *it;
  int64_t due;
  sc_err err;
  if(delay_ms <= 0)
    return queue_add(q, key);
  it = get_or_create(q, key);
  if(!it)
    return SC_ERR_NOMEM;
  if(it->ready || it->dirty)
    return SC_OK; /* it runs sooner anyway */
  due = now_ms + delay_ms;
  if(it->due && it->due <= due)
    return SC_OK;
  err = heap_push(q, due, it);
  if(err) {
    maybe_remove(q, it);
    return err;
  }
  if(!it->due)
    q->ndelayed++;
  it->due = due;
  return SC_OK;
}

sc_err queue_add_rate_limited(work_queue *q, const char *key, int64_t now_ms,
                              int64_t *delay_ms)
{
  qitem *it = get_or_create(q, key);
  int64_t d;
  int i;
  if(!it)
    return SC_ERR_NOMEM;
  d = q->base_ms;
  for(i = 0; i < it->failures && d < q->max_ms; i++)
    d *= 2;
  if(d > q->max_ms)
    d = q->max_ms;
  if(it->failures < 62)
    it->failures++;
  if(delay_ms)
    *delay_ms = d;
  return queue_add_after(q, key, d, now_ms);
}

sc_err queue_add_retry_after(work_queue *q, const char *key,
                             int64_t retry_after_ms, int64_t now_ms)
{
  qitem *it = get_or_create(q, key);
  if(!it)
    return SC_ERR_NOMEM;
  if(it->failures < 62)
    it->failures++;
  return queue_add_after(q, key, retry_after_ms > 0 ? retry_after_ms : 1,
                         now_ms);
}

void queue_forget(work_queue *q, const char *key)
{
  qitem *it = find(q, key);
  if(!it)
    return;
  it->failures = 0;
  maybe_remove(q, it);
}

int queue_failures(const work_queue *q, const char *key)
{
  qitem *it = find(q, key);
  return it ? it->failures : 0;
}

void queue_promote(work_queue *q, int64_t now_ms)
{
  while(q->nheap && q->heap[0].due <= now_ms) {
    hentry e = heap_pop(q);
    qitem *it = e.it;
    if(it->due == e.due) {
      make_ready(q, it); /* clears due */
    }
    else
      maybe_remove(q, it); /* a stale entry: the item moved */
  }
}

int64_t queue_next_delay(const work_queue *q, int64_t now_ms)
{
  /* a stale entry on top only causes an early, harmless wake-up */
  if(!q->nheap)
    return -1;
  return q->heap[0].due <= now_ms ? 0 : q->heap[0].due - now_ms;
}

const char *queue_pop(work_queue *q)
{
  qitem *it = q->fhead;
  if(!it)
    return NULL;
  q->fhead = it->fnext;
  if(!q->fhead)
    q->ftail = NULL;
  it->fnext = NULL;
  it->ready = false;
  it->processing = true;
  it->dirty = false;
  q->nready--;
  q->nprocessing++;
  return it->key;
}

void queue_done(work_queue *q, const char *key)
{
  qitem *it = find(q, key);
  if(!it || !it->processing)
    return;
  it->processing = false;
  q->nprocessing--;
  if(it->dirty) {
    it->dirty = false;
    push_ready(q, it);
    return;
  }
  maybe_remove(q, it);
}

size_t queue_len(const work_queue *q)
{
  return q->nready;
}

size_t queue_tracked(const work_queue *q)
{
  return q ? sc_hmap_count(q->items) : 0;
}

size_t queue_delayed(const work_queue *q)
{
  return q->ndelayed;
}

size_t queue_processing(const work_queue *q)
{
  return q->nprocessing;
}
