# shards.sh - helpers of the sharding scripts (sourced after common.sh):
# the replicas' /metrics, the linked count, a manifest over tenants, the
# membership every replica sees. SHARD_TENANTS: tenants t0.. of manifest.

# metric NAME METRIC [LABEL-TEXT]: the sum of a metric's samples on
# replica NAME (those whose labels contain LABEL-TEXT)
metric() {
  curl -sf "http://127.0.0.1:$(metrics_port "$1")/metrics" |
    awk -v m="$2" -v l="${3:-}" '($1 == m || index($1, m "{") == 1) && index($1, l) { s += $2 } END { printf "%d\n", s }'
}
linked() { ctl get sessions -A -o json | jq '[.items[] | select(.status.sandboxID != null and .status.phase == "Running")] | length'; }
# manifest PREFIX PER_TENANT: PER_TENANT sessions in each of t0.. into
# $T/m.yaml
manifest() {
  : >"$T/m.yaml"
  t=0
  while [ $t -lt "${SHARD_TENANTS:?}" ]; do
    i=1
    while [ $i -le "$2" ]; do
      printf -- '---\napiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: %s%d, namespace: t%d}\nspec: {template: shell}\n' "$1" "$i" "$t" >>"$T/m.yaml"
      i=$((i + 1))
    done
    t=$((t + 1))
  done
}
# members_are WANT NAME...: every replica NAME sees WANT live members
members_are() {
  m_want=$1; shift
  for m_n in "$@"; do [ "$(metric "$m_n" session_controller_shard_members)" = "$m_want" ] || return 1; done
}
