/*
 * kf_json.h - the fake API server's small json-c helpers, shared by the
 * server, the CRD and the schema code: a member of an object by type,
 * and setting a string member.
 *
 * Ownership: getters return borrowed pointers into o (NULL when o is not
 * an object, has no member k, or the member has another type);
 * kf_set_str copies v into a new string member (replacing one).
 */
#ifndef KF_JSON_H
#define KF_JSON_H

#include <json-c/json.h>

json_object *kf_jget(json_object *o, const char *k);
json_object *kf_jobj(json_object *o, const char *k);
const char *kf_jstr(json_object *o, const char *k);
void kf_set_str(json_object *o, const char *k, const char *v);

#endif
