/*
 * manifest_walk.h - the Session walkers of the manifest reader (internal
 * to api/): one YAML document (yamltree.h) as a Session or a List of
 * Sessions, metadata and spec read by the field table (fields.h), each
 * value checked by its rule (rules.h), every error into the source's
 * error list; valid objects are added to the set.
 *
 * The object index finds the same namespace/name twice across every
 * document and file of one read (lib/hmap.h, names hashed with a seed
 * from sc_hash_seed(): they come from untrusted files).
 *
 * Ownership: mindex_new() returns an index for mindex_free() (NULL ok);
 * it points into the set's items, which must outlive it. mwalk is the
 * caller's; the walker adds sessions it owned to set.
 */
#ifndef SC_API_MANIFEST_WALK_H
#define SC_API_MANIFEST_WALK_H

#include "api/manifest.h"
#include "api/yamltree.h"

typedef struct mindex mindex;

mindex *mindex_new(void);
void mindex_free(mindex *ix);

typedef struct mwalk {
  yerrs *e;          /* the source's errors; e->file names it */
  manifest_set *set;
  mindex *index;
  const struct policy *policy; /* NULL: no tenant policy to keep */
} mwalk;

/* A ytree_doc_fn: ud is an mwalk. */
void manifest_walk_doc(void *ud, const ynode *root, bool doc_bad);

#endif
