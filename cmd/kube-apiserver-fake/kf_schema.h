/*
 * kf_schema.h - what an API server does with a CRD's structural schema
 * (openAPIV3Schema), for kube-apiserver-fake (docs/kube-apiserver-fake.md):
 * finding (and pruning) unknown fields, structural defaulting, validation
 * with the API server's field error messages, the checks of a CRD's own
 * schema, and the simple JSONPath of additionalPrinterColumns.
 *
 * Not done: CEL rules (x-kubernetes-validations), x-kubernetes-embedded-
 * resource, patterns that use RE2 escapes POSIX ERE lacks (\x, \d, \w, \s,
 * \p, (?...)): those are not checked.
 *
 * Ownership: schemas and objects are only read, except where a function
 * says it changes obj. kf_errs owns its strings: kf_errs_free() (NULL and
 * an empty list accepted).
 */
#ifndef KF_SCHEMA_H
#define KF_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

/* one field error, as in a Status' details.causes */
typedef struct kf_ferr {
  char *field;          /* "spec.wake" */
  const char *reason;   /* "FieldValueInvalid", ... (static) */
  char *detail;         /* "Invalid value: ...": the message after "FIELD: " */
} kf_ferr;

typedef struct kf_errs {
  kf_ferr *v;
  size_t n, cap;
} kf_errs;

void kf_errs_add(kf_errs *e, const char *field, const char *reason,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void kf_errs_free(kf_errs *e);
/* "FIELD: DETAIL" of error i into buf */
void kf_errs_line(const kf_errs *e, size_t i, char *buf, size_t len);

/* The fields of obj (a whole object: apiVersion, kind and metadata are
 * always known; metadata's keys are those of ObjectMeta) that schema does
 * not declare, appended to unknown as paths ("spec.foo", detail "unknown
 * field"); removed from obj when prune is true. */
void kf_schema_prune(json_object *obj, json_object *schema, bool prune,
                     kf_errs *unknown);

/* Structural defaulting (changes obj): a property with a `default` that is
 * absent, or null while not nullable, gets a copy of the default; then
 * every property present (defaulted ones too) is defaulted by its own
 * schema, down through additionalProperties and items. Then nulls of
 * fields that are neither nullable nor defaulted are dropped. */
void kf_schema_default(json_object *obj, json_object *schema);

/* Validation of a whole object (metadata: only metadata.name, by the
 * schema's metadata.properties.name): types, enum, required, lengths,
 * patterns, minimum/maximum, min/maxItems, min/maxProperties, date-time.
 * Errors appended to errs. */
void kf_schema_validate(json_object *obj, json_object *schema,
                        kf_errs *errs);

/* The checks of a CRD version's schema (path: where it is, for messages,
 * e.g. "spec.versions[0].schema.openAPIV3Schema"): every field has a type
 * (unless x-kubernetes-int-or-string or x-kubernetes-preserve-unknown-
 * fields), defaults validate against their schema and have no unknown
 * fields, no default at the root or inside metadata. */
void kf_schema_check(json_object *schema, const char *path, kf_errs *errs);

/* The simple JSONPath of a printer column: .a.b, .a[0], .a['k'], .a["k"].
 * kf_jsonpath_ok: is path of that form. kf_jsonpath_get: the value at
 * path (borrowed from o) or NULL. */
bool kf_jsonpath_ok(const char *path);
json_object *kf_jsonpath_get(json_object *o, const char *path);

#endif
