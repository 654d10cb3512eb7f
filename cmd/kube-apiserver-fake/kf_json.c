/* kf_json.c - json-c helpers (see kf_json.h). */
#include "cmd/kube-apiserver-fake/kf_json.h"

json_object *kf_jget(json_object *o, const char *k)
{
  json_object *v;
  if(json_object_is_type(o, json_type_object) &&
     json_object_object_get_ex(o, k, &v))
    return v;
  return NULL;
}

json_object *kf_jobj(json_object *o, const char *k)
{
  json_object *v = kf_jget(o, k);
  return json_object_is_type(v, json_type_object) ? v : NULL;
}

const char *kf_jstr(json_object *o, const char *k)
{
  json_object *v = kf_jget(o, k);
  return json_object_is_type(v, json_type_string) ?
         json_object_get_string(v) : NULL;
}

void kf_set_str(json_object *o, const char *k, const char *v)
{
  json_object_object_add(o, k, json_object_new_string(v));
}
