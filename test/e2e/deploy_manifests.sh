#!/bin/sh
# deploy_manifests.sh - the Kubernetes manifests of deploy/ and the Dockerfile,
# checked without a cluster or a Docker engine.
#
# What is checked:
#  1. `kubectl kustomize deploy/` renders every object (only when kubectl is
#     installed; otherwise this is skipped and says so). kustomize's YAML
#     reader refuses syntax errors and duplicate keys in the four resources.
#  2. deploy/examples/ pass `sessionctl validate` (the strict manifest reader).
#  3. The CRD's identity: group, version, scope, short name, status
#     subresource, the printer columns.
#  4. The CRD's schema against the C rules: the state and phase enums equal
#     the C names (api/session.c); the defaults equal those the C code applies
#     (test/data/good/02-defaults.json); the patterns and lengths of
#     metadata.name, template, sessionID, tenantID, idleTimeout, reclaimAfter
#     and state accept every value of test/data/good and deploy/examples and
#     refuse the values of the test/data/bad files for those rules (grep -E,
#     so RE2 and POSIX ERE must agree on them: they use no RE2-only syntax);
#     the control-character pattern of envVars/sandboxMetadata values
#     (grep -P: it uses \x escapes) against constructed values; the refused
#     environment variable names of the CEL rule equal the C list; the
#     sandboxMetadata cap equals the C constant; wake has minimum 0.
#  5. RBAC grants exactly the resources/verbs the kube store calls.
#  6. The NetworkPolicy (deploy/networkpolicy.yaml, in the kustomization)
#     selects the Deployment's pods by their template labels, in their
#     namespace; admits only the metrics port (the container's "metrics"
#     port and --metrics-addr's), from a namespaceSelector on
#     kubernetes.io/metadata.name; lists only Ingress, so the controller's
#     connections to the API server and Cube stay open.
#  7. hack/check-image-deps.sh: the Dockerfile's runtime packages match ldd.
# What is NOT checked here (no API server): that the API server accepts the
# CRD, and the CEL rules' evaluation (duration bounds 1s..87600h, the "lea."
# prefix, the denied names) - only their text is checked.
. "$(dirname "$0")/lib/common.sh"
D=deploy
CRD=${CRD:-$D/crd.yaml}   # CRD=FILE: check another copy (mutation tests)
NETPOL=${NETPOL:-$D/networkpolicy.yaml}   # NETPOL=FILE: the same
export LC_ALL=C.UTF-8

# ---- 1. kustomize
if command -v kubectl >/dev/null 2>&1; then
  if kubectl kustomize "$D" >"$T/render.yaml" 2>"$T/render.err"; then
    ok "kubectl kustomize $D renders"
    kinds=$(sed -n 's/^kind: //p' "$T/render.yaml" | sort | tr '\n' ' ')
    want="ClusterRole ClusterRoleBinding ConfigMap ConfigMap CustomResourceDefinition Deployment Namespace NetworkPolicy PodDisruptionBudget Service ServiceAccount "
    check "rendered kinds: $kinds" [ "$kinds" = "$want" ]
  else
    fail "kubectl kustomize $D renders" "$(head -n 3 "$T/render.err")"
  fi
else
  echo "skip kubectl kustomize $D: kubectl is not installed"
fi

# ---- 2. examples
check "sessionctl validate $D/examples" \
  "$BINDIR/sessionctl" validate -f "$D/examples"
for f in "$D"/*.yaml "$D"/examples/*.yaml; do
  check "$f: no tab characters" sh -c "! grep -q '	' '$f'"
done

# ---- 3. CRD identity
has() { grep -Eq "$2" "$1"; }
check "crd: sessions.lea.io" has "$CRD" '^  name: sessions\.lea\.io$'
check "crd: group lea.io, Namespaced" sh -c \
  "grep -q '^  group: lea.io$' $CRD && grep -q '^  scope: Namespaced$' $CRD"
check "crd: version v1alpha1 served and stored" sh -c \
  "grep -q '^  - name: v1alpha1$' $CRD && grep -q '^    served: true$' $CRD && grep -q '^    storage: true$' $CRD"
check "crd: short name sess" has "$CRD" '^    shortNames: \[sess\]$'
check "crd: status subresource" sh -c "grep -A1 '^    subresources:' $CRD | grep -q 'status: {}'"
cols=$(sed -n 's/^    - name: \([A-Z]*\)$/\1/p' "$CRD" | tr '\n' ' ')
check "crd: printer columns ($cols)" [ "$cols" = "TENANT STATE PHASE SANDBOX AGE ENDAT OBSERVED " ]
check "crd: ENDAT at priority 1" sh -c \
  "sed -n '/- name: ENDAT/,/- name:/p' $CRD | grep -q 'priority: 1'"
check "crd: the five default columns have no priority" sh -c \
  "[ \"\$(sed -n '/- name: TENANT/,/- name: ENDAT/p' $CRD | grep -c priority)\" = 0 ]"

# ---- 4. CRD schema
# prop NAME ATTR: ATTR of the schema property NAME (the first "NAME:" key
# line of the file), quotes removed
prop() {
  awk -v k="$1" -v a="$2" '
    !found && $0 ~ "^ *" k ":$" { found = 1; ind = index($0, k); next }
    found {
      i = match($0, /[^ ]/)
      if(i <= ind && $0 !~ /^ *$/) exit
      if($0 ~ "^ *" a ": ") {
        sub("^ *" a ": ", ""); sub(/^'\''/, ""); sub(/'\''$/, ""); print; exit
      }
    }' "$CRD"
}
enum_of() { prop "$1" enum | tr -d '[]' | sed 's/, */ /g'; }
c_names() { sed -n "/$1\[\] = {/,/};/p" api/session.c | grep -o '"[A-Za-z][A-Za-z]*"' | tr -d '"' | tr '\n' ' ' | sed 's/ $//'; }
check "crd: state enum = C state names ($(enum_of state))" \
  [ "$(enum_of state)" = "$(c_names state_names)" ]
check "crd: phase enum = C phase names ($(enum_of phase))" \
  [ "$(enum_of phase)" = "$(c_names phase_names)" ]
defs=$(jq -r '.spec | "\(.state) \(.idleTimeout) \(.reclaimAfter)"' test/data/good/02-defaults.json)
check "crd: defaults = C defaults ($defs)" \
  [ "$(prop state default) $(prop idleTimeout default) $(prop reclaimAfter default)" = "$defs" ]
check "crd: wake default 0, minimum 0" \
  [ "$(prop wake default) $(prop wake minimum)" = "0 0" ]

# schema_ok FIELD VALUE: does VALUE pass FIELD's pattern, lengths and enum?
schema_ok() {
  pat=$(prop "$1" pattern); max=$(prop "$1" maxLength); min=$(prop "$1" minLength)
  en=$(enum_of "$1")
  len=$(printf '%s' "$2" | wc -m)
  [ -z "$max" ] || [ "$len" -le "$max" ] || return 1
  [ -z "$min" ] || [ "$len" -ge "$min" ] || return 1
  [ -z "$pat" ] || printf '%s\n' "$2" | grep -Eq -- "$pat" || return 1
  [ -z "$en" ] || printf '%s\n' $en | grep -qx -- "$2" || return 1
  return 0
}
fields="name template state idleTimeout reclaimAfter sessionID tenantID"
for f in $fields; do
  [ -n "$(prop "$f" pattern)$(prop "$f" enum)" ] || fail "crd: $f has a pattern or enum"
done
# good values: the C reader's JSON of test/data/good, and the example YAML
goodvals="$T/good.txt"
for j in test/data/good/*.json; do
  jq -r '.. | objects | select(.kind? == "Session") |
    "name \(.metadata.name)", (.spec | to_entries[] |
      select(.key | test("^(template|state|idleTimeout|reclaimAfter|sessionID|tenantID)$")) |
      "\(.key) \(.value)")' "$j"
done >"$goodvals"
for y in "$D"/examples/*.yaml; do
  sed -n 's/^ *\(name\|template\|state\|idleTimeout\|reclaimAfter\|sessionID\|tenantID\): *\([^ ]*\)$/\1 \2/p' "$y"
done >>"$goodvals"
n=0; bad=""
while read -r f v; do
  n=$((n + 1))
  schema_ok "$f" "$v" || bad="$bad $f=$v"
done <"$goodvals"
check "crd: all $n good values pass the schema${bad:+ (refused:$bad)}" [ -z "$bad" ]
# bad values: one test/data/bad file per rule; FILE FIELD
for c in 14-name-uppercase:name 15-name-too-long:name 16-name-ends-with-dash:name \
         19-template-bad-character:template 20-template-too-long:template \
         21-state-unknown:state 22-duration-in-words:idleTimeout \
         23-duration-negative:reclaimAfter 24-duration-without-unit:reclaimAfter \
         28-session-id-invalid:sessionID 29-tenant-id-too-long:tenantID; do
  file=test/data/bad/${c%%:*}.yaml; f=${c#*:}
  v=$(grep -v '^#' "$file" | sed -n "s/^ *$f: *//p" | head -n 1 | sed 's/^"\(.*\)"$/\1/')
  if [ -z "$v" ]; then fail "crd: $file: no $f value found"; continue; fi
  if schema_ok "$f" "$v"; then fail "crd: $f \"$v\" ($file) refused by the schema"
  else ok "crd: $f \"$(printf '%.40s' "$v")\" ($file) refused by the schema"; fi
done
# bounds the pattern lets through must be in a CEL rule
for c in 25-duration-over-ten-years:reclaimAfter 26-idle-timeout-below-1s:idleTimeout \
         27-idle-timeout-zero:idleTimeout; do
  file=test/data/bad/${c%%:*}.yaml; f=${c#*:}
  v=$(grep -v '^#' "$file" | sed -n "s/^ *$f: *//p" | head -n 1)
  check "crd: $f \"$v\" ($file) is a duration (its bound is a CEL rule)" schema_ok "$f" "$v"
done
rules=$(sed -n '/^ *idleTimeout:$/,/^ *reclaimAfter:$/p' "$CRD")
check "crd: idleTimeout CEL bounds 1s..87600h" sh -c \
  "printf '%s' \"\$0\" | grep -q \"duration(self) >= duration('1s')\" && printf '%s' \"\$0\" | grep -q \"duration(self) <= duration('87600h')\"" "$rules"
check "crd: reclaimAfter CEL bound 87600h" sh -c \
  "sed -n '/^ *reclaimAfter:\$/,/^ *sessionID:\$/p' $CRD | grep -q \"duration(self) <= duration('87600h')\""
# the denied environment variables: the C list, each in the CEL rule
denied=$(sed -n '/env_denied\[\] = {/,/};/p' api/manifest.c | grep -o '"[A-Z_]*"' | tr -d '"')
rule=$(sed -n '/^ *envVars:$/,/^ *sandboxMetadata:$/p' "$CRD" | tr -d '\n')
missing=""
for e in $denied; do
  printf '%s' "$rule" | grep -q "!('$e' in self)" || missing="$missing $e"
done
check "crd: envVars CEL rule refuses all $(echo $denied | wc -w) C-denied names${missing:+ (missing:$missing)}" \
  test -n "$denied" -a -z "$missing"
cmax=$(sed -n 's/^#define META_MAX_ENTRIES \([0-9]*\)$/\1/p' api/manifest.c)
check "crd: sandboxMetadata maxProperties = C META_MAX_ENTRIES ($cmax)" \
  [ "$(prop sandboxMetadata maxProperties)" = "$cmax" ]
emax=$(sed -n 's/^#define ENV_MAX_ENTRIES \([0-9]*\) .*$/\1/p' api/manifest.c)
check "crd: envVars maxProperties = C ENV_MAX_ENTRIES ($emax)" \
  [ -n "$emax" ] && [ "$(prop envVars maxProperties)" = "$emax" ]
check "crd: envVars CEL bounds the names to 1-128 (C ID_MAX_LEN $(sed -n 's/^#define ID_MAX_LEN //p' api/manifest.c))" \
  sh -c "sed -n '/^ *envVars:\$/,/^ *sandboxMetadata:\$/p' $CRD | grep -q 'self.all(k, size(k) >= 1 && size(k) <= 128)'"
check "crd: sandboxMetadata CEL refuses the lea. prefix" has "$CRD" \
  "self.all\(k, !k.startsWith\('lea\.'\)\)"
# values of envVars and sandboxMetadata: no control characters (C: U+0000-
# U+001F, U+007F-U+009F), at most 4096 characters
vpat=$(sed -n '/^ *envVars:$/,/^ *sandboxMetadata:$/p' "$CRD" | sed -n "s/^ *pattern: '\(.*\)'$/\1/p")
mpat=$(sed -n '/^ *sandboxMetadata:$/,/^ *wake:$/p' "$CRD" | sed -n "s/^ *pattern: '\(.*\)'$/\1/p")
check "crd: envVars and sandboxMetadata values share one pattern" \
  test -n "$vpat" -a "$vpat" = "$mpat"
# lbl V: a printf format as a one-line test name (backslashes shown as ^)
lbl() { printf '%s' "$1" | tr '\\' '^'; }
vok() { { printf "$1"; printf '\0'; } | grep -Pzq -- "$vpat"; }
for v in 'C.UTF-8' 'Zo\303\253 \303\234nal' '' 'a b=c;d'; do
  check "crd: value '$(lbl "$v")' passes" vok "$v"
done
for v in 'a\rb' 'a\nb' 'a\tb' 'a\001b' 'a\177b' 'a\302\205b' 'a\302\237b'; do
  check "crd: value '$(lbl "$v")' refused" sh -c '! { printf "$1"; printf "\\0"; } | grep -Pzq -- "$2"' _ "$v" "$vpat"
done
check "crd: value maxLength 4096 (C VALUE_MAX_LEN $(sed -n 's/^#define VALUE_MAX_LEN //p' api/manifest.c))" \
  [ "$(sed -n '/^ *envVars:$/,/^ *wake:$/p' "$CRD" | grep -c 'maxLength: 4096')" = 2 ]

# ---- 5. RBAC: the grants equal the calls the controller makes: through
# the kube store (controller/store/kube/kube.c: list/watch/get of Sessions, a
# merge PATCH of metadata.finalizers, PUT of /status), its Events
# (controller/kubeclient/events.c: POST, merge PATCH) and its leader election
# (controller/kubeclient/leader.c: GET, POST, PUT of a Lease) and the member
# Leases of --shards auto (controller/store/kube/kube_members.c: the same, and
# list, DELETE). When the sources
# are in the tree, each call is also looked for in its file (grep-level:
# the path and the HTTP method appear), each file uses no HTTP method
# beyond its grants, and a call to Events, Leases or a /finalizers
# subresource from the store fails.
calls="lea.io/sessions/get lea.io/sessions/list lea.io/sessions/watch
lea.io/sessions/patch lea.io/sessions/status/update
core/events/create core/events/patch
coordination.k8s.io/leases/get coordination.k8s.io/leases/create
coordination.k8s.io/leases/update coordination.k8s.io/leases/list
coordination.k8s.io/leases/delete
apiextensions.k8s.io/customresourcedefinitions/get
apiextensions.k8s.io/customresourcedefinitions/patch"
granted=$(grep -E '^- \{apiGroups:' "$D/rbac.yaml" |
  sed 's/, resourceNames: \[[^]]*\]//' |
  sed 's/^- {apiGroups: \[\([^]]*\)\], resources: \[\([^]]*\)\], verbs: \[\([^]]*\)\]}$/\1|\2|\3/' |
  while IFS='|' read -r g r vs; do
    g=$(printf '%s' "$g" | tr -d '"')
    for v in $(echo "$vs" | tr ',' ' '); do echo "${g:-core}/$r/$v"; done
  done | sort)
check "rbac: grants = the controller's calls ($(echo $granted))" \
  [ "$granted" = "$(printf '%s\n' $calls | sort)" ]
check "rbac: bound to the controller's ServiceAccount only" sh -c \
  "[ \"\$(grep -c '^- kind: ServiceAccount' $D/rbac.yaml)\" = 1 ] && ! grep -q '^kind: Role\$' $D/rbac.yaml"
# the kube store is several files (controller/store/kube/*.c but the name
# record, checked on its own below); KUBE_SRC="FILE..." checks other copies
kube_src=${KUBE_SRC:-$(ls controller/store/kube/*.c 2>/dev/null | grep -v 'kube_name.c\|kube_members.c' | tr '\n' ' ' || true)}
ev_src=${EVENTS_SRC:-$(ls controller/kubeclient/events.c 2>/dev/null || true)}
le_src=${LEADER_SRC:-$(ls controller/kubeclient/leader.c 2>/dev/null || true)}
nm_src=${NAME_SRC:-$(ls controller/store/kube/kube_name.c 2>/dev/null || true)}
mb_src=${MEMBERS_SRC:-$(ls controller/store/kube/kube_members.c 2>/dev/null || true)}
# methods FILE: the HTTP methods a source names, sorted, on one line
methods() { grep -oE '"(GET|POST|PUT|PATCH|DELETE)"' "$1" | tr -d '"' | sort -u | tr '\n' ' '; }
if [ -n "$kube_src" ] && [ -n "$ev_src" ] && [ -n "$le_src" ] && [ -n "$mb_src" ]; then
  for gv in $calls; do
    g=${gv%%/*}; r=${gv#*/}; r=${r%/*}; v=${gv##*/}
    case $r in sessions/status) path='"/status"' ;; events) path='/events' ;;
      leases) path='/leases' ;; *) path='/sessions' ;; esac
    case $g/$v in */get|*/list) m='"GET"' ;; */watch) m='watch=1' ;;
      */patch) m='"PATCH"' ;; coordination.k8s.io/update) m='"PUT"' ;;
      */delete) m='"DELETE"' ;;
      */update) m='"PUT"' ;; */create) m='"POST"' ;; esac
    case $r in customresourcedefinitions) path='/customresourcedefinitions/sessions.lea.io' ;; esac
    case $g/$v in coordination.k8s.io/list|coordination.k8s.io/delete) src=$mb_src ;;
      core/*) src=$ev_src ;; coordination.k8s.io/*) src=$le_src ;;
      apiextensions.k8s.io/*) src=$nm_src ;; *) src=$kube_src ;; esac
    check "rbac: $gv: $path and $m in $src" sh -c \
      "grep -qF -- '$path' $src && grep -qF -- '$m' $src"
  done
  for p in /events /leases /finalizers; do
    check "rbac: $kube_src calls no $p (none granted)" sh -c "! grep -qF -- '$p' $kube_src"
  done
  check "rbac: $ev_src uses only POST and PATCH (events create, patch)" \
    test "$(methods "$ev_src")" = "PATCH POST "
  check "rbac: $le_src uses only GET, POST, PUT (leases get, create, update)" \
    test "$(methods "$le_src")" = "GET POST PUT "
  check "rbac: $mb_src uses only GET, POST, PUT, DELETE (leases get, list, create, update, delete)" \
    test "$(methods "$mb_src")" = "DELETE GET POST PUT "
  for p in /sessions /finalizers /events; do
    check "rbac: $le_src and $mb_src call no $p" sh -c "! grep -qF -- '$p' $le_src $mb_src"
  done
  for p in /sessions /finalizers; do
    check "rbac: $ev_src calls no $p" sh -c "! grep -qF -- '$p' $ev_src"
  done
  check "rbac: $nm_src uses only GET and PATCH (the CRD: get, patch)" \
    test "$(methods "$nm_src")" = "GET PATCH "
  check "rbac: the CRD grant names sessions.lea.io only" \
    grep -q 'resources: \[customresourcedefinitions\], resourceNames: \[sessions.lea.io\],' "$D/rbac.yaml"
else
  echo "skip rbac calls in controller/store/kube/kube.c, kube_events.c, kube_leader.c: not in this tree"
fi

# ---- 6. the NetworkPolicy
# pod_labels: the Deployment's pod template labels, "key: value" sorted
pod_labels() {
  awk '/^kind: /{ d = ($0 == "kind: Deployment") }
    d && /^  template:$/ { t = 1; next }
    t && /^    metadata:$/ { m = 1; next }
    m && /^      labels:$/ { l = 1; next }
    l { if($0 ~ /^        [^ ]/) { sub(/^ +/, ""); print } else exit }' \
    "$D/controller.yaml" | sort
}
np_selector() {
  awk '/^  podSelector:/ { p = 1; next }
    p && /^    matchLabels:$/ { m = 1; next }
    m { if($0 ~ /^      [^ ]/) { sub(/^ +/, ""); print } else exit }
    p && !m { exit }' "$NETPOL" | sort
}
np_field() { sed -n "s/^$1: *//p" "$NETPOL"; }
if [ -f "$NETPOL" ]; then
  ok "$NETPOL exists"
  check "netpol: in the kustomization" grep -qx -- '- networkpolicy.yaml' "$D/kustomization.yaml"
  check "netpol: one object, networking.k8s.io/v1 NetworkPolicy" test \
    "$(grep -c '^kind: ' "$NETPOL") $(np_field kind) $(np_field apiVersion)" = "1 NetworkPolicy networking.k8s.io/v1"
  dns=$(sed -n '/^kind: Deployment$/,/^---$/p' "$D/controller.yaml" | sed -n 's/^  namespace: //p' | head -n 1)
  check "netpol: in the Deployment's namespace ($dns)" test \
    "$(sed -n 's/^  namespace: //p' "$NETPOL")" = "$dns"
  sel=$(np_selector); labels=$(pod_labels)
  missing=$(printf '%s\n' "$sel" | while read -r kv; do
    [ -z "$kv" ] || printf '%s\n' "$labels" | grep -qxF -- "$kv" || echo "$kv"; done)
  check "netpol: podSelector ($(echo $sel)) selects the pods (labels: $(echo $labels))" \
    test -n "$sel" -a -n "$labels" -a -z "$missing"
  check "netpol: the Deployment's selector = the podSelector" test \
    "$(sed -n '/^kind: Deployment$/,/^  template:$/p' "$D/controller.yaml" |
      sed -n '/^    matchLabels:$/,/^  [a-z]/s/^      \([^ ].*\)$/\1/p' | sort)" = "$sel"
  types=$(sed -n '/^  policyTypes:$/,/^  [a-z]/s/^  - //p' "$NETPOL" | tr '\n' ' ')
  check "netpol: policyTypes Ingress only: egress to the API server and Cube stays open ($types)" \
    test "$types" = "Ingress "
  check "netpol: one ingress rule" test \
    "$(sed -n '/^  ingress:$/,$p' "$NETPOL" | grep -c '^  - ')" = 1
  check "netpol: from a namespaceSelector on kubernetes.io/metadata.name" sh -c \
    "sed -n '/^  - from:\$/,/^    ports:\$/p' '$NETPOL' | grep -q '^    - namespaceSelector:\$' &&
     sed -n '/^  - from:\$/,/^    ports:\$/p' '$NETPOL' | grep -Eq '^          kubernetes.io/metadata.name: [a-z0-9-]+\$'"
  check "netpol: no ipBlock (the scraper is a pod)" sh -c "! grep -q ipBlock '$NETPOL'"
  cport=$(sed -n '/^        - name: metrics$/{n;s/^ *containerPort: \([0-9]*\)$/\1/p;}' "$D/controller.yaml")
  aport=$(sed -n '/^        - --metrics-addr$/{n;s/^ *- [0-9.]*:\([0-9]*\)$/\1/p;}' "$D/controller.yaml")
  nports=$(sed -n '/^    ports:$/,$s/^    - port: //p' "$NETPOL" | tr '\n' ' ')
  check "netpol: admits only port $cport/TCP (container port $cport, --metrics-addr :$aport; policy: $nports)" \
    test -n "$cport" -a "$cport" = "$aport" -a "$nports" = "$cport " -a \
      "$(sed -n '/^    ports:$/,$s/^      protocol: //p' "$NETPOL")" = TCP
else
  fail "$NETPOL exists"
fi

# ---- 7. the image's runtime packages
if ldd "${BINDIR:-bin}/session-controller" 2>/dev/null | grep -q libasan; then
  echo "skip hack/check-image-deps.sh: a sanitizer build (the image is built without)"
elif command -v dpkg-query >/dev/null 2>&1; then
  check "hack/check-image-deps.sh" sh hack/check-image-deps.sh
else
  echo "skip hack/check-image-deps.sh: not a Debian system"
fi
grep -q 'USER 65532:65532' Dockerfile && grep -q 'ENTRYPOINT \["/usr/local/bin/session-controller"\]' Dockerfile
check "Dockerfile: non-root user, session-controller entrypoint" [ $? -eq 0 ]
check "Dockerfile: sessionctl in the image" grep -q '/out/sessionctl /usr/local/bin/' Dockerfile
# ---- 8. the tenant policy and its admission check
check "tenant-policy.yaml: the examples keep it (sessionctl validate --policy)" \
  "$BINDIR/sessionctl" validate --policy "$D/tenant-policy.yaml" -f "$D/examples"
ppath=$(sed -n '/^        - --policy$/{n;s/^ *- //p;}' "$D/controller.yaml")
pmount=$(sed -n '/^        - name: tenant-policy$/{n;s/^ *mountPath: //p;}' "$D/controller.yaml")
check "controller: --policy is the mounted ConfigMap's file ($ppath)" \
  test "$ppath" = "$pmount/tenant-policy.yaml"
check "kustomization: the ConfigMap of the policy file, without a hash suffix" sh -c \
  "grep -q '^- name: session-controller-policy\$' $D/kustomization.yaml && grep -q 'disableNameSuffixHash: true' $D/kustomization.yaml"
root=$(sed -n 's/^  workspaceRoots: \[\([^],]*\)\]$/\1/p' "$D/tenant-policy.yaml")
aroot=$(sed -n "s/^    expression: \"'\\(.*\\)'\"\$/\\1/p" "$D/admission/admission-policy.yaml")
check "admission policy: the same workspace root as the tenant policy ($root)" \
  test -n "$root" -a "$root" = "$aroot"
if command -v kubectl >/dev/null 2>&1; then
  check "kubectl kustomize $D/admission renders the policy and its binding" sh -c \
    "kubectl kustomize $D/admission | grep -c '^kind: ValidatingAdmissionPolicy' | grep -qx 2"
fi
finish
