/*
 * fields.h - the Session resource's fields, as one table (internal to
 * api/ and its tests).
 *
 * Every field of metadata, spec and status (and of status.createIntent and
 * of a status condition) is one row: its JSON name, its type, where it
 * lives in the C struct (offsetof), its flags and its limits. The readers
 * and writers of the resource walk these rows instead of naming the
 * fields again:
 *   - the JSON codec (session_json.c) encodes and decodes by them;
 *   - the manifest reader (manifest_walk.c) reads metadata and spec by
 *     them and refuses what no row names;
 *   - validation (validate.c) checks each row's rule;
 *   - session.c copies, compares and frees the structs by them;
 *   - test/unit/test_fields.c checks deploy/crd.yaml against them.
 * So a new field is a member in api/session.h, one row in fields.c and
 * its tests.
 *
 * Limits of status rows (string lengths, the condition cap) are the
 * CRD's: they describe what the controller writes, and the API server
 * enforces them; the decoder does not (a store hands back what it holds).
 *
 * Cost, written down: a walk over rows costs more than hand-written code
 * (on this machine, a status with two conditions: equal 36 ns against 9,
 * copy and free 0.3 us against 0.2; session_invalid_reason 0.12 us, less
 * than before, as paths are made only for errors), about 3 ms a 100k pass
 * for the comparison: one table the readers cannot disagree on is worth
 * it.
 *
 * No ownership: the tables are constants. The sf_* functions work on a
 * struct the caller owns (base points at a session_metadata, spec,
 * status or condition as the table says).
 */
#ifndef SC_API_FIELDS_H
#define SC_API_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "api/session.h"

typedef enum sf_type {
  SF_STR,      /* char *; NULL = unset */
  SF_ENUM,     /* an enum (names[]); 0 = unset unless SF_ALWAYS */
  SF_INT,      /* int64_t; 0 = unset */
  SF_TIME,     /* sc_time; 0 = unset; an RFC 3339 string */
  SF_DURATION, /* int64_t ms; 0 = unset (SF_NEG_UNSET: < 0 = unset) */
  SF_BOOL,     /* bool; false = unset */
  SF_MAP,      /* sc_kvlist of strings; empty = unset */
  SF_STRLIST,  /* char ** at off, size_t count at off_n */
  SF_OBJECT,   /* an object whose members (sub) live in the same struct */
  SF_OPTBOOL,  /* session_optbool (int); 0 = unset; a JSON boolean */
  SF_OBJLIST   /* an array of sub->size structs at off, count at off_n
                  (sub): conditions, volume mounts */
} sf_type;

/* What a string (a field, a map key or a map value) must be. */
typedef enum sf_rule {
  SR_ANY,       /* anything (max: the CRD's maxLength, not checked) */
  SR_DNS_LABEL, /* a DNS-1123 label of at most max */
  SR_CHARSET,   /* 1..max of A-Za-z0-9 and charset; "a valid <what>" */
  SR_QUALIFIED, /* a Kubernetes qualified name (label/annotation keys) */
  SR_ENV_NAME,  /* [A-Za-z_][A-Za-z0-9_]*, at most max, not refused */
  SR_META_KEY,  /* SR_CHARSET, and not under SESSION_TAG_PREFIX */
  SR_TEXT,      /* at most max bytes of UTF-8 without control chars */
  SR_NO_NUL,    /* at most max bytes without NUL */
  SR_ABS_PATH,  /* an absolute path of at most max bytes: no ".." or "."
                   component, no control characters */
  SR_NET_DEST,  /* a CIDR, an IP address or a host name ("*." allowed) */
  SR_NET_CIDR   /* a CIDR or an IP address */
} sf_rule;

typedef struct sf_str_rule {
  sf_rule rule;
  size_t max;          /* bytes */
  const char *charset; /* SR_CHARSET, SR_META_KEY: allowed besides A-Za-z0-9 */
  const char *what;    /* SR_CHARSET, SR_META_KEY: named in messages */
} sf_str_rule;

/* flags */
#define SF_REQUIRED 0x01u  /* metadata/spec: a manifest must have it; status:
                              written whenever its object is (CRD required) */
#define SF_STORE 0x02u     /* metadata set by the store or the controller:
                              ignored in manifests, never validated */
#define SF_NEG_UNSET 0x04u /* durations: < 0 is unset and 0 a value */
#define SF_DEFAULTED 0x08u /* absent in a stored object means the default
                              (session.h, "effective value"): not checked */
#define SF_MANIFEST_ONLY 0x10u /* checked in manifests, not in stored
                                  objects (validate.c says why) */
#define SF_LENIENT 0x20u   /* maps read leniently under
                              SESSION_JSON_LENIENT_METADATA */
#define SF_ALWAYS 0x40u    /* enums: written even when 0 */
#define SF_HINT 0x80u      /* enums: errors list the names */
#define SF_NONNEG 0x100u   /* integers: must not be negative */
#define SF_GATE 0x200u     /* an SF_OBJECT member: the object is present
                              exactly when this member is set */
#define SF_OPTIONAL 0x400u /* strings: may be absent, in a manifest too
                              (no default: absent has a meaning of its
                              own, e.g. spec.workspace.hostPath) */

typedef struct sf_table sf_table;

typedef struct sf_field {
  const char *name;     /* the JSON (and YAML) name */
  sf_type type;
  unsigned flags;
  size_t off;           /* offsetof in the table's struct */
  size_t off_n;         /* SF_STRLIST, SF_OBJLIST: offset of the count */
  sf_str_rule val;      /* SF_STR, SF_DURATION (text length), map values */
  sf_str_rule key;      /* SF_MAP keys */
  size_t max_items;     /* SF_MAP: entries; SF_OBJLIST: items */
  int64_t min_ms;       /* SF_DURATION: the least value */
  const char *example;  /* SF_DURATION: shown in errors */
  const char *const *names; /* SF_ENUM (index = value); SF_STR: the values
                               the controller writes (the CRD's enum) */
  const char *what;     /* SF_ENUM: "state" in "... is not a state" */
  const char *dflt;     /* the default as the CRD writes it, or NULL */
  const sf_table *sub;  /* SF_OBJECT, SF_OBJLIST */
} sf_field;

struct sf_table {
  const char *path;     /* "metadata", "spec", "status", ... */
  size_t size;          /* sizeof the struct */
  const sf_field *f;
  size_t n;
};

extern const sf_table sf_meta, sf_spec, sf_status, sf_intent, sf_condition,
  sf_pending, sf_connect, sf_network, sf_volume_mount, sf_workspace;

/* NULL-terminated, index = the enum's value. */
extern const char *const sf_state_names[];
extern const char *const sf_phase_names[];
extern const char *const sf_resume_policy_names[];

/* The caps on entries of spec.envVars and spec.sandboxMetadata. */
#define SF_ENV_VARS_MAX 128
#define SF_SANDBOX_METADATA_MAX 32
/* The caps of spec.network's lists, of spec.volumeMounts, and of a path. */
#define SF_NET_RULES_MAX 64
#define SF_VOLUME_MOUNTS_MAX 16
#define SF_PATH_MAX 512

/* The longest a duration may be: SESSION_MAX_DURATION_MS, as text. */
#define SF_MAX_DURATION_TEXT "87600h"

/* The row named name (len bytes), or NULL. */
const sf_field *sf_find(const sf_table *t, const char *name, size_t len);

/* Typed access to a row's member in base. */
#define SF_AT(base, off, T) ((T *)(void *)((char *)(base) + (off)))
#define SF_CAT(base, off, T) \
  ((T const *)(const void *)((const char *)(base) + (off)))

/* The enum value of a row; the name of value v in names ("Unknown" when
 * out of range) and the value of name s (-1: none); the number of names;
 * " (use A, B or C)" (or "" without SF_HINT) into buf. */
int sf_enum_get(const sf_field *f, const void *base);
const char *sf_name_of(const char *const *names, int v);
int sf_name_parse(const char *const *names, const char *s);
size_t sf_enum_count(const sf_field *f);
void sf_enum_hint(const sf_field *f, char *buf, size_t len);

/* A duration row's value is set (SF_NEG_UNSET: >= 0; else != 0). */
bool sf_duration_set(const sf_field *f, int64_t ms);
/* The row holds a value (what the encoder writes; SF_ALWAYS aside). */
bool sf_is_set(const sf_field *f, const void *base);
/* Every row of t is unset in base. */
bool sf_empty(const sf_table *t, const void *base);

/* Free what the rows of t own in base (base itself is not cleared). */
void sf_free(const sf_table *t, void *base);
/* dst (t->size bytes, owning nothing) becomes a deep copy of src. On
 * SC_ERR_NOMEM, dst owns nothing: its pointer members are NULL and its
 * counts 0. */
sc_err sf_copy(const sf_table *t, void *dst, const void *src);
bool sf_equal(const sf_table *t, const void *a, const void *b);

#endif
