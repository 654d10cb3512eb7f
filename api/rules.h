/*
 * rules.h - the value rules of the Session API (docs/session-api.md,
 * "Fields"): what a string field, a map key or a map value must be, and
 * how a duration text reads. One implementation for the manifest reader
 * (manifest_walk.c) and session_validate() (validate.c); the numbers come
 * from the field table's rows (api/fields.h).
 *
 * Each check returns true when s (len bytes, maybe with NULs) passes, or
 * false with the message (no field path) in mb. No ownership: the caller
 * owns every buffer.
 */
#ifndef SC_API_RULES_H
#define SC_API_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "api/fields.h"
#include "api/manifest.h"
#include "api/fieldpath.h"
#include "lib/sc_err.h"

typedef struct rule_msg {
  char m[SC_ERRBUF_SIZE];
} rule_msg;

void rule_msgf(rule_msg *mb, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));

/* A quoted, shortened value for messages (fieldpath_quote). */
typedef struct rule_quoted {
  char q[FIELDPATH_QUOTE_MAX];
} rule_quoted;
const char *rule_quote(rule_quoted *qb, const char *s, size_t len);

/* s passes r (SR_ANY: always). */
bool rule_check(const sf_str_rule *r, const char *s, size_t len,
                rule_msg *mb);

/* A duration text for row f: not negative, at most 10 years, at least
 * f->min_ms; *out is written only on success. */
bool rule_duration_text(const sf_field *f, const char *s, size_t len,
                        int64_t *out, rule_msg *mb);
/* The same bounds for a value in ms (a stored object's). */
bool rule_duration_ms(const sf_field *f, int64_t ms, rule_msg *mb);

/* s is a host name (labels of 1-63 of A-Za-z0-9 and -, at most 253
 * bytes, an optional leading "*."); s is a CIDR or a bare IP address. */
bool rule_host_name(const char *s, size_t len);
bool rule_is_address(const char *s, size_t len);

/* The rules across fields of a spec, which no row states alone:
 *  - a host name in network.allowOut needs 0.0.0.0/0 in network.denyOut or
 *    network.allowInternetAccess false (Cube refuses the create
 *    otherwise);
 *  - volumeMounts names are unique, and so are the mount paths of
 *    volumeMounts and workspace; no mount at "/".
 * Each finding goes to report: the field as top ("network", ...), sub (a
 * key under it or NULL), idx (the list index or -1) and key (a key in
 * the item or NULL), and the message. Rows must have passed their own
 * rules (strings set). */
typedef void (*rule_report_fn)(void *ud, const char *top, const char *sub,
                               long idx, const char *key, const char *msg);
void rule_spec_cross(const session_spec *sp, rule_report_fn report,
                     void *ud);

#endif
