#!/bin/sh
# End-to-end: kubeconfigs with exec credential plugins (what EKS, GKE and
# AKS write). The plugin is a sh script in the test's directory, named
# relative to the kubeconfig (plugins/plug); its kubeconfig env says who
# runs it (logged in $T/runs), which token it answers (a file the test
# rewrites), how long the token lives, or how it fails. Against
# kube-apiserver-fake over HTTPS with --token-file: sessionctl and the
# controller (store calls, watch, events) with one plugin run; a 401 after
# the server's token rotated runs it again; a token that expires is asked
# for again; a failing plugin, garbage, a wrong apiVersion, an expired
# credential, a missing command, interactiveMode Always and auth-provider
# give clear errors; a client certificate from the plugin over TLS; kubectl
# (when installed) accepts the same kubeconfigs and gives the plugin the
# same KUBERNETES_EXEC_INFO.
. "$(dirname "$0")/lib/common.sh"

# --- certificates (mkca, mkcert: lib/common.sh)
mkca ca test-ca &&
mkcert server 127.0.0.1 ca "subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth" &&
mkcert client exec-plugin-user ca "extendedKeyUsage=clientAuth" ||
  { echo "openssl could not make the certificates" >&2; exit 1; }
CA_LINE="    certificate-authority-data: $(base64 -w0 <"$T/ca.pem")"

# --- the plugin. Its env (from the kubeconfig): WHO, RUNS, TOKFILE, AV,
# EXPIRE (seconds; empty: none), MODE (token, fail, garbage, wrongver,
# expired, cert, info)
mkdir -p "$T/plugins"
cat >"$T/plugins/plug" <<'EOF'
#!/bin/sh
echo "$WHO" >>"$RUNS"
case "$MODE" in
fail)
  echo "error: the SSO session has expired; run aws sso login" >&2
  echo "second line of stderr" >&2
  exit 1 ;;
garbage) echo "Token: not-json"; exit 0 ;;
wrongver)
  echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"x"}}'
  exit 0 ;;
expired)
  printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"x","expirationTimestamp":"2001-02-03T04:05:06Z"}}\n' "$AV"
  exit 0 ;;
cert)
  jq -n --arg av "$AV" --arg c "$(cat "$CERT")" --arg k "$(cat "$KEY")" \
    '{apiVersion: $av, kind: "ExecCredential",
      status: {clientCertificateData: ($c + "\n"), clientKeyData: ($k + "\n")}}'
  exit 0 ;;
info) printf '%s' "$KUBERNETES_EXEC_INFO" >"$INFO" ;;
esac
tok=$(cat "$TOKFILE")
if [ -n "$EXPIRE" ]; then
  exp=$(date -u -d "+$EXPIRE seconds" +%Y-%m-%dT%H:%M:%S.%3NZ)
  printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"%s"}}\n' "$AV" "$tok" "$exp"
else
  printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"%s"}}\n' "$AV" "$tok"
fi
EOF
chmod +x "$T/plugins/plug"

# exec_user WHO MODE [EXPIRE] [APIVERSION] [MORE_EXEC_LINES]: the user lines
exec_user() {
  av=${4:-client.authentication.k8s.io/v1}
  cat <<EOF
    exec:
      apiVersion: $av
      command: plugins/plug
      args: [get-token, --cluster, fake]
      interactiveMode: Never
      env:
      - {name: WHO, value: $1}
      - {name: MODE, value: $2}
      - {name: EXPIRE, value: "${3:-}"}
      - {name: AV, value: $av}
      - {name: RUNS, value: $T/runs}
      - {name: TOKFILE, value: $T/plugin-token}
      - {name: CERT, value: $T/client.pem}
      - {name: KEY, value: $T/client.key}
      - {name: INFO, value: $T/info-$1}
${5:-}
EOF
}
runs_of() { n=$(grep -c "^$1\$" "$T/runs" 2>/dev/null); echo "${n:-0}"; }

session_yaml() { # NAME [STATE]
  cat >"$T/$1.yaml" <<YAML
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: $1, namespace: tenant-a}
spec: {template: python-data, idleTimeout: 15m${2:+, state: $2}}
YAML
}
for s in s1 s2 s3 s4 s5; do session_yaml $s; done
session_yaml s1 Paused && mv "$T/s1.yaml" "$T/s1p.yaml" && session_yaml s1
session_yaml s2 Paused && mv "$T/s2.yaml" "$T/s2p.yaml" && session_yaml s2

echo tok-1 >"$T/server-token"
echo tok-1 >"$T/plugin-token"
start_kube_fake token --tls-cert "$T/server.pem" --tls-key "$T/server.key" \
  --token-file "$T/server-token" --bookmark-ms 300
TOKEN_API=$API
STORE=kube

# (a) sessionctl: one run per invocation, the plugin's token on every call
kubeconfig "$T/kc-ctl" "$CA_LINE" "$(exec_user ctl token)"
export KUBECONFIG="$T/kc-ctl"
check "ctl: apply with an exec plugin" test "$(ctl apply -f "$T/s1.yaml" 2>&1)" = "session/s1 created"
check "ctl: get reads it back" test "$(sess_field s1 tenant-a .spec.template)" = python-data
check "ctl: get sessions -A lists it" sh -c "'$BINDIR/sessionctl' --store kube get sessions -A | grep -q '^tenant-a *s1 '"
check "ctl: the plugin ran once per sessionctl (3 runs)" test "$(runs_of ctl)" = 3

# (b) the controller: store calls, watch, events, all with one run
kubeconfig "$T/kc-controller" "$CA_LINE" "$(exec_user controller token)"
start_cubesim --clock-speed 1
KUBECONFIG="$T/kc-controller" start_controller ctl-exec --orphan-grace 10m --watch-timeout 2s
C1=$CTL_PID
check "controller: creates the sandbox" wait_eq 20 1 sim_live_for s1
check "controller: status Running on the server" wait_eq 15 Running sess_field s1 tenant-a .status.phase
check "controller: watches with the plugin's token" wait_until 10 sh -c "curl -sf --cacert '$T/ca.pem' '$API/_fake/stats' | jq -e '.watches >= 1'"
ctl apply -f "$T/s1p.yaml" >/dev/null
check "controller: a change over the watch pauses it" wait_eq 15 paused sim_state_of s1
check "controller: its Events reached the server" wait_until 10 sh -c "curl -sf --cacert '$T/ca.pem' -H 'Authorization: Bearer tok-1' '$API/api/v1/namespaces/tenant-a/events' | jq -e '[.items[] | select(.reason == \"SandboxCreated\")] | length >= 1'"
check "controller: one plugin run for the store, the watch and the events" test "$(runs_of controller)" = 1

# (c) the server's token rotates: the 401 runs the plugin again
echo tok-2 >"$T/plugin-token"
echo tok-2 >"$T/server-token"
check "rotation: ctl works (a new run gets tok-2)" test "$(ctl apply -f "$T/s2.yaml" 2>&1)" = "session/s2 created"
check "rotation: the controller creates s2's sandbox" wait_eq 25 1 sim_live_for s2
check "rotation: s2 Running" wait_eq 15 Running sess_field s2 tenant-a .status.phase
check "rotation: the 401 ran the controller's plugin again" test "$(runs_of controller)" -ge 2
check "rotation: ... not once per request" test "$(runs_of controller)" -le 3
ctl apply -f "$T/s2p.yaml" >/dev/null
check "rotation: the watch goes on with the new token" wait_eq 15 paused sim_state_of s2
check "rotation: the controller did not log a plugin error" sh -c "! grep -q 'exec plugin' '$T/ctl-exec.log'"
kill "$C1"; wait "$C1" 2>/dev/null

# (d) a token that expires after 3 s is asked for again (ahead of time on
# the loop, or when it has expired)
kubeconfig "$T/kc-expiring" "$CA_LINE" "$(exec_user expiring token 3)"
KUBECONFIG="$T/kc-expiring" start_controller ctl-expiring --orphan-grace 10m --watch-timeout 2s
C2=$CTL_PID
check "expiry: the controller runs" wait_until 10 grep -q "serving /metrics" "$T/ctl-expiring.log"
check "expiry: the plugin ran again as its tokens expired (3 runs)" wait_until 15 sh -c "[ \$(grep -c '^expiring\$' '$T/runs') -ge 3 ]"
n0=$(runs_of expiring)
sleep 3
n1=$(runs_of expiring)
check "expiry: ... not at every request (at most 3 runs in 3 s: $n0 -> $n1)" test $((n1 - n0)) -le 3
ctl apply -f "$T/s3.yaml" >/dev/null
check "expiry: the controller still works (s3's sandbox)" wait_eq 20 1 sim_live_for s3
check "expiry: s3 Running" wait_eq 15 Running sess_field s3 tenant-a .status.phase
check "expiry: no credential error in its log" sh -c "! grep -Eq 'exec plugin|401' '$T/ctl-expiring.log'"
kill "$C2"; wait "$C2" 2>/dev/null

# (e) failures: clear errors naming the kubeconfig, the user and the cause
ctl_err() { # NAME KUBECONFIG: sessionctl get, stderr in $T/NAME.err
  KUBECONFIG="$2" timeout 30 "$BINDIR/sessionctl" --store kube get sessions -A >/dev/null 2>"$T/$1.err"
}
kubeconfig "$T/kc-fail" "$CA_LINE" "$(exec_user failing fail)"
ctl_err fail "$T/kc-fail"; rc=$?
check "fail: sessionctl fails (not a timeout)" sh -c "[ $rc -ne 0 ] && [ $rc -ne 124 ]"
check "fail: exit status and the first line of stderr" grep -q "kubeconfig $T/kc-fail: user \"u\": exec plugin plugins/plug: exited with status 1: error: the SSO session has expired; run aws sso login" "$T/fail.err"
check "fail: not the second line" sh -c "! grep -q 'second line' '$T/fail.err'"
KUBECONFIG="$T/kc-fail" start_controller ctl-fail --watch-timeout 2s
C3=$CTL_PID
check "fail: the controller stops at start, saying why" wait_until 10 sh -c "! kill -0 $C3 2>/dev/null"
check "fail: ... in its log" grep -q "exited with status 1: error: the SSO session has expired" "$T/ctl-fail.log"
wait "$C3" 2>/dev/null

kubeconfig "$T/kc-garbage" "$CA_LINE" "$(exec_user garbage garbage)"
ctl_err garbage "$T/kc-garbage"
check "garbage: stdout is not JSON" grep -q "kubeconfig $T/kc-garbage: user \"u\": exec plugin plugins/plug: stdout is not JSON" "$T/garbage.err"
kubeconfig "$T/kc-wrongver" "$CA_LINE" "$(exec_user wrongver wrongver)"
ctl_err wrongver "$T/kc-wrongver"
check "wrong apiVersion: named both" grep -q "the kubeconfig asks for apiVersion client.authentication.k8s.io/v1, the plugin returned \"client.authentication.k8s.io/v1beta1\"" "$T/wrongver.err"
kubeconfig "$T/kc-expired" "$CA_LINE" "$(exec_user expired expired)"
ctl_err expired "$T/kc-expired"
check "expired: the credential it returned has expired" grep -q "exec plugin plugins/plug: the credential it returned has expired (expirationTimestamp 2001-02-03T04:05:06Z" "$T/expired.err"
kubeconfig "$T/kc-missing" "$CA_LINE" "    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: sc-no-such-auth-plugin
      installHint: 'sc-no-such-auth-plugin is needed: see https://example.invalid/install'"
ctl_err missing "$T/kc-missing"
check "not found: the installHint" grep -q "exec plugin sc-no-such-auth-plugin: not found in PATH: sc-no-such-auth-plugin is needed: see https://example.invalid/install" "$T/missing.err"
kubeconfig "$T/kc-always" "$CA_LINE" "$(exec_user always token "" "" | sed 's/interactiveMode: Never/interactiveMode: Always/')"
ctl_err always "$T/kc-always"
check "interactiveMode Always: refused, saying why" grep -q "kubeconfig $T/kc-always:[0-9]*: users\[0\].user.exec.interactiveMode Always is not supported: the plugin would need a terminal" "$T/always.err"
check "interactiveMode Always: the plugin never ran" test "$(runs_of always)" = 0
kubeconfig "$T/kc-gcp" "$CA_LINE" "    auth-provider:
      name: gcp
      config: {cmd-path: /usr/bin/gcloud}"
ctl_err gcp "$T/kc-gcp"
check "auth-provider: refused, naming the replacement" grep -q "kubeconfig $T/kc-gcp:[0-9]*: users\[0\].user.auth-provider \"gcp\" is not supported (Kubernetes clients dropped auth providers): use the exec plugin gke-gcloud-auth-plugin" "$T/gcp.err"

# (f) a client certificate from the plugin, over TLS
start_kube_fake certs --tls-cert "$T/server.pem" --tls-key "$T/server.key" \
  --client-ca "$T/ca.pem" --bookmark-ms 300
ccurl() { curl -sf --cacert "$T/ca.pem" --cert "$T/client.pem" --key "$T/client.key" "$@"; }
users_of() { ccurl "$API/_fake/requests?format=json" |
  jq -r --arg m "$1" --arg p "$2" '[.[] | select(.method == $m and (.path | endswith($p))) | .user] | unique | join(",")'; }
kubeconfig "$T/kc-cert" "$CA_LINE" "$(exec_user certctl cert)"
sess_field_cert() { KUBECONFIG="$T/kc-cert" sess_field "$1" tenant-a .status.phase; }
check "cert: ctl apply with the plugin's certificate" sh -c "KUBECONFIG='$T/kc-cert' '$BINDIR/sessionctl' --store kube apply -f '$T/s4.yaml' 2>&1 | grep -qx 'session/s4 created'"
check "cert: the fake authenticated the plugin's certificate (its CN)" test "$(users_of POST /sessions)" = exec-plugin-user
kubeconfig "$T/kc-cert-controller" "$CA_LINE" "$(exec_user certcontroller cert)"
KUBECONFIG="$T/kc-cert-controller" start_controller ctl-cert --orphan-grace 10m --watch-timeout 2s
C4=$CTL_PID
check "cert: the controller creates s4's sandbox" wait_eq 20 1 sim_live_for s4
check "cert: status Running" wait_eq 15 Running sess_field_cert s4
check "cert: the controller's writes authenticated with it" test "$(users_of PUT /status)" = exec-plugin-user
check "cert: and its watch" wait_until 10 sh -c "curl -sf --cacert '$T/ca.pem' --cert '$T/client.pem' --key '$T/client.key' '$API/_fake/stats' | jq -e '.watches >= 1'"
kill "$C4"; wait "$C4" 2>/dev/null
CERT_API=$API

# (g) kubectl accepts the same kubeconfigs and gives the plugin the same
# KUBERNETES_EXEC_INFO (provideClusterInfo, the exec extension as config)
API=$TOKEN_API
kubeconfig "$T/kc-info" "$CA_LINE
    extensions:
    - name: client.authentication.k8s.io/exec
      extension: {audience: sts.example, region: eu-west-1, retries: 3}" \
  "$(exec_user info info "" "" "      provideClusterInfo: true")"
check "info: sessionctl with provideClusterInfo" sh -c "KUBECONFIG='$T/kc-info' '$BINDIR/sessionctl' --store kube get sessions -A >/dev/null"
cp "$T/info-info" "$T/info-ours" 2>/dev/null
check "info: the plugin got spec.cluster" sh -c "jq -e --arg s '$API' '.spec.cluster.server == \$s and .spec.interactive == false and .spec.cluster.config.audience == \"sts.example\" and (.spec.cluster[\"certificate-authority-data\"] | length > 100)' '$T/info-ours' >/dev/null"
if command -v kubectl >/dev/null 2>&1; then
  check "kubectl: get sessions with the token plugin" sh -c "cd / && timeout 30 kubectl --kubeconfig '$T/kc-ctl' get sessions -A 2>&1 | grep -q '^tenant-a *s1 '"
  rm -f "$T/info-info"
  check "kubectl: with provideClusterInfo" sh -c "cd / && timeout 30 kubectl --kubeconfig '$T/kc-info' get sessions -A >/dev/null 2>&1"
  check "kubectl: the same KUBERNETES_EXEC_INFO as ours" sh -c "[ \"\$(jq -S . '$T/info-info')\" = \"\$(jq -S . '$T/info-ours')\" ]"
  check "kubectl: refuses the failing plugin too" sh -c "! timeout 30 kubectl --kubeconfig '$T/kc-fail' get sessions -A >/dev/null 2>&1"
  API=$CERT_API
  check "kubectl: with the plugin's client certificate" sh -c "cd / && timeout 30 kubectl --kubeconfig '$T/kc-cert' get sessions -A 2>&1 | grep -q '^tenant-a *s4 '"
else
  echo "skip kubectl checks: kubectl is not installed"
fi
finish
