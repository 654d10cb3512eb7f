/* kf_patch.c - RFC 7386 JSON merge patch (application/merge-patch+json). */
#include "cmd/kube-apiserver-fake/kf.h"

json_object *kf_merge_patch(json_object *target, json_object *patch)
{
  if(!json_object_is_type(patch, json_type_object)) {
    json_object_put(target);
    return patch ? json_object_get(patch) : NULL;
  }
  if(!json_object_is_type(target, json_type_object)) {
    json_object_put(target);
    target = json_object_new_object();
    if(!target)
      return NULL;
  }
  json_object_object_foreach(patch, k, v) {
    if(!v) {
      json_object_object_del(target, k);
      continue;
    }
    {
      json_object *cur = NULL, *merged;
      json_object_object_get_ex(target, k, &cur);
      if(cur)
        json_object_get(cur);
      merged = kf_merge_patch(cur, v);
      json_object_object_add(target, k, merged);
    }
  }
  return target;
}
