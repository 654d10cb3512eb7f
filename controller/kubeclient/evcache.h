/*
 * evcache.h - the de-duplication table of Kubernetes Events, like
 * client-go's event correlator: an event equal to one sent less than
 * `window_ms` ago (same object uid, reason, message, type) updates that
 * Event (count + 1, lastTimestamp) instead of creating another.
 *
 * Pure: no I/O, no clock; the caller passes the monotonic time. Bounded:
 * at most `cap` keys; a new key evicts the least recently seen one.
 *
 * Ownership: evcache_new() returns a table for evcache_free() (NULL ok).
 * Strings passed in are copied. An entry returned by evcache_find()
 * belongs to the table and is valid until the next evcache_put/forget.
 */
#ifndef SC_EVCACHE_H
#define SC_EVCACHE_H

#include <stddef.h>
#include <stdint.h>
#include "lib/sc_err.h"

typedef struct evcache evcache;

typedef struct evcache_entry {
  char *key;
  char *name;           /* the Event object's metadata.name */
  int64_t count;        /* the count the Event has on the server */
  char *first_ts;       /* its firstTimestamp (RFC 3339) */
  int64_t last_mono;    /* when it was last sent (monotonic ms) */
} evcache_entry;

evcache *evcache_new(size_t cap, int64_t window_ms);
void evcache_free(evcache *c);

/* The key of an event: uid, reason, message and type joined. buf gets
 * the key (truncated to len, still distinct enough for a table). */
void evcache_key(const char *uid, const char *reason, const char *message,
                 const char *type, char *buf, size_t len);

/* The entry of key when it was sent less than window_ms before now, else
 * NULL (an expired entry is dropped). */
const evcache_entry *evcache_find(evcache *c, const char *key, int64_t now);

/* Remember that key's Event `name` now has `count` (insert or replace). */
sc_err evcache_put(evcache *c, const char *key, const char *name,
                   int64_t count, const char *first_ts, int64_t now);

/* Drop key (its Event is gone from the server). */
void evcache_forget(evcache *c, const char *key);

size_t evcache_len(const evcache *c);

#endif
