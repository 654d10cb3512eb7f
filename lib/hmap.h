/*
 * hmap.h - the project's one hash table: open addressing with linear
 * probing over (hash, value) slots, at most half full.
 *
 * The table stores no keys. A value is a pointer the caller owns (a
 * record, or an index packed with SC_HMAP_IDX) that carries its own key;
 * a lookup passes the key's hash, the key, and an equality function that
 * compares a stored value with the key. One table type therefore serves
 * string keys, pairs of strings and records alike, and several values may
 * share a key (sc_hmap_next walks them all: a multimap).
 *
 * Hash with lib/schash.h. Keys from an untrusted peer are hashed with a
 * per-table seed (sc_hash_seed) so that a hostile input cannot choose its
 * collisions; the table itself does not care.
 *
 * Cost, written down: a probe compares hashes first and calls eq() only
 * on an equal 64-bit hash, so a lookup is one or two cache lines plus one
 * key comparison. Removal shifts the following run back (no tombstones),
 * so a table that sees many removals (the work queue) never degrades.
 *
 * Ownership: sc_hmap_new() returns a table for sc_hmap_free() (NULL ok).
 * The table never frees, copies or dereferences a value; the caller keeps
 * each value (and the key it carries) alive while it is in the table.
 * Return values: sc_hmap_put returns SC_ERR_NOMEM (table unchanged) or
 * SC_OK; lookups return the value or NULL.
 */
#ifndef SC_HMAP_H
#define SC_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/sc_err.h"
#include "lib/schash.h"

typedef struct sc_hmap sc_hmap;

/* true when the stored value's key equals key */
typedef bool (*sc_hmap_eq_fn)(const void *value, const void *key, void *ud);

/* An index as a value (0-based; stored as i + 1 so that it is never NULL)
 * and back. */
#define SC_HMAP_IDX(i) ((void *)((uintptr_t)(i) + 1))
#define SC_HMAP_IDX_OF(v) ((size_t)((uintptr_t)(v) - 1))

/* hint: the number of values expected (0: grow from small). NULL when out
 * of memory. */
sc_hmap *sc_hmap_new(size_t hint);
void sc_hmap_free(sc_hmap *m);
/* Forget every value, keep the memory (a planner pass reuses its tables). */
void sc_hmap_clear(sc_hmap *m);
size_t sc_hmap_count(const sc_hmap *m);
/* Make room for n values in all, so that n puts do not allocate. */
sc_err sc_hmap_reserve(sc_hmap *m, size_t n);

/* Add value (non-NULL) under hash. Does not look for an equal key: a
 * caller that wants one value per key calls sc_hmap_get first. */
sc_err sc_hmap_put(sc_hmap *m, uint64_t hash, void *value);

/* The first value whose key equals key, or NULL. */
void *sc_hmap_get(const sc_hmap *m, uint64_t hash, sc_hmap_eq_fn eq,
                  const void *key, void *ud);

/* Every value whose key equals key: start with *it = 0; NULL at the end.
 * The table must not change during the walk. */
void *sc_hmap_next(const sc_hmap *m, uint64_t hash, sc_hmap_eq_fn eq,
                   const void *key, void *ud, size_t *it);

/* Remove and return the first value whose key equals key (NULL: none). */
void *sc_hmap_remove(sc_hmap *m, uint64_t hash, sc_hmap_eq_fn eq,
                     const void *key, void *ud);

/* Remove exactly this value (pointer equality) stored under hash; false
 * if it is not in the table. */
bool sc_hmap_remove_value(sc_hmap *m, uint64_t hash, const void *value);

/* Every value, in slot order (not a visible order): start with *it = 0. */
void *sc_hmap_each(const sc_hmap *m, size_t *it);

#endif
