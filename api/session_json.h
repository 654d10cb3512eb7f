/*
 * session_json.h - JSON encoding and decoding of the Session (json-c).
 *
 * The JSON form is the Kubernetes one: {"apiVersion","kind","metadata",
 * "spec","status"} with camelCase fields, durations as strings ("15m"),
 * times as RFC 3339 strings. A round trip (encode, decode, encode) gives
 * the same bytes and loses nothing.
 *
 * Decoding is strict (unknown fields and wrong types are errors, written
 * into eb with the field path) because the stores decode with it too.
 * A JSON null reads as "unset". Encoding leaves out unset fields; spec.state
 * is always written and spec.reclaimAfter whenever it is >= 0 ("0" =
 * never, distinct from unset = -1). Decoding does not validate values
 * (use session_validate()), it only checks types, enums, durations and
 * times.
 * Ownership: *out strings/sessions belong to the caller.
 */
#ifndef SC_SESSION_JSON_H
#define SC_SESSION_JSON_H

#include <json-c/json.h>
#include "api/session.h"

/* The whole object. *out is a NUL-terminated string; free() it. */
sc_err session_to_json(const session *s, char **out);
/* A new json object (caller puts it). NULL when out of memory. */
json_object *session_to_json_object(const session *s);
sc_err session_from_json(const char *json, size_t len, session **out,
                         sc_errbuf *eb);
sc_err session_from_json_object(json_object *o, session **out,
                                sc_errbuf *eb);

/* Decoding flags. IGNORE_UNKNOWN_METADATA skips metadata fields this type
 * does not know (managedFields, ownerReferences, ... as a Kubernetes API
 * server returns them); everything else stays strict.
 *
 * LENIENT_METADATA reads metadata.labels and metadata.annotations, which
 * no decision reads, as a store holds them, and never refuses the object
 * for them: an entry whose value is not a string, or holds a NUL (an
 * escaped \u0000, which a C string cannot carry), is left out; a labels or
 * annotations field that is not an object is ignored; entries past
 * SESSION_JSON_META_KV_MAX bytes (keys and values of the field together,
 * the API server's own cap on annotations) are left out. *dropped (may be
 * NULL) of session_from_json_object_ex() counts the entries left out. */
#define SESSION_JSON_IGNORE_UNKNOWN_METADATA 0x1u
#define SESSION_JSON_LENIENT_METADATA 0x2u
#define SESSION_JSON_META_KV_MAX (256 * 1024)
sc_err session_from_json_object_flags(json_object *o, unsigned flags,
                                      session **out, sc_errbuf *eb);
/* The same, counting in *dropped (may be NULL) the label and annotation
 * entries LENIENT_METADATA left out. */
sc_err session_from_json_object_ex(json_object *o, unsigned flags,
                                   session **out, size_t *dropped,
                                   sc_errbuf *eb);
/* Indented, for people (sessionctl get -o json). free() it. */
sc_err session_to_json_pretty(const session *s, char **out);

/* The parts, for stores that keep them in separate columns. */
sc_err session_spec_to_json(const session_spec *sp, char **out);
sc_err session_spec_from_json(const char *json, session_spec *out,
                              sc_errbuf *eb);
sc_err session_status_to_json(const session_status *st, char **out);
sc_err session_status_from_json(const char *json, session_status *out,
                                sc_errbuf *eb);
/* The same with a tokener the caller keeps for many calls (reset here;
 * NULL: one of the call's own), so that a store decoding many rows does
 * not make one per column. */
sc_err session_spec_from_json_tok(json_tokener *tok, const char *json,
                                  session_spec *out, sc_errbuf *eb);
sc_err session_status_from_json_tok(json_tokener *tok, const char *json,
                                    session_status *out, sc_errbuf *eb);

#endif
