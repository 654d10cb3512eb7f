#!/bin/sh
# End-to-end: the kube store over TLS. kube-apiserver-fake serves HTTPS
# with certificates made here by the openssl CLI (a CA, a server
# certificate for IP 127.0.0.1, a client certificate). The controller and
# sessionctl reach it with a kubeconfig carrying the CA, the client
# certificate and key as *-data and as file paths; a wrong CA and a missing
# client certificate fail at once with errors naming the server and the
# problem; insecure-skip-tls-verify works without a CA; a bearer token
# (fixed and tokenFile, rotated) works over TLS; kubectl reads the fake.
. "$(dirname "$0")/lib/common.sh"

# --- certificates (mkca, mkcert: lib/common.sh)
mkca ca test-ca && mkca other other-ca &&
mkcert server 127.0.0.1 ca "subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth" &&
mkcert client controller ca "extendedKeyUsage=clientAuth" &&
mkcert rogue intruder other "extendedKeyUsage=clientAuth" ||
  { echo "openssl could not make the certificates" >&2; exit 1; }
b64() { base64 -w0 <"$1"; }

# start_fake NAME [ARGS...]: sets API (base URL) and API_PID
start_fake() { start_kube_fake "$@"; }
# admin calls and direct reads, with the client certificate
acurl() { curl -sf --cacert "$T/ca.pem" --cert "$T/client.pem" --key "$T/client.key" "$@"; }
obj() { acurl "$API/apis/lea.io/v1alpha1/namespaces/$1/sessions/$2"; }
# who made the requests of METHOD with a path ending in SUFFIX ("user"
# values of the fake's request log); CURL: acurl or tcurl
users_of() { $1 "$API/_fake/requests?format=json" |
  jq -r --arg m "$2" --arg p "$3" '[.[] | select(.method == $m and (.path | endswith($p))) | .user] | unique | join(",")'; }

session_yaml() { # NAME
  cat >"$T/$1.yaml" <<YAML
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: $1, namespace: tenant-a}
spec: {template: python-data, idleTimeout: 15m}
YAML
}
for s in s1 s2 s3 s4; do session_yaml $s; done

check "fake: refuses --client-ca without a certificate" sh -c \
  "! '$BINDIR/kube-apiserver-fake' --client-ca '$T/ca.pem' 2>'$T/badflags.err' && grep -q 'tls-cert' '$T/badflags.err'"
check "fake: a key that does not match the certificate is refused" sh -c \
  "! '$BINDIR/kube-apiserver-fake' --tls-cert '$T/server.pem' --tls-key '$T/client.key' 2>'$T/badkey.err' && grep -q 'tls-key' '$T/badkey.err'"

# --- fake A: HTTPS, client certificates required (no token)
start_fake certs --tls-cert "$T/server.pem" --tls-key "$T/server.key" \
  --client-ca "$T/ca.pem" --bookmark-ms 300
check "fake: serves https" sh -c "echo '$API' | grep -q '^https://127.0.0.1:'"
check "fake: a request without a client certificate is 401" test \
  "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$T/ca.pem" "$API/apis/lea.io/v1alpha1/sessions")" = 401
check "fake: a client certificate of another CA fails the handshake" sh -c \
  "! curl -s --cacert '$T/ca.pem' --cert '$T/rogue.pem' --key '$T/rogue.key' '$API/version' >/dev/null"
check "fake: with the client certificate: 200" test \
  "$(acurl -o /dev/null -w '%{http_code}' "$API/apis/lea.io/v1alpha1/sessions")" = 200

DATA_CLUSTER="    certificate-authority-data: $(b64 "$T/ca.pem")"
DATA_USER="    client-certificate-data: $(b64 "$T/client.pem")
    client-key-data: $(b64 "$T/client.key")"
kubeconfig "$T/kc-data" "$DATA_CLUSTER" "$DATA_USER"
# file paths: the CA absolute, the client files relative to the kubeconfig
mkdir -p "$T/kdir/certs"
cp "$T/client.pem" "$T/client.key" "$T/kdir/certs/"
kubeconfig "$T/kdir/kc-files" "    certificate-authority: $T/ca.pem" \
  "    client-certificate: certs/client.pem
    client-key: certs/client.key"

# (a) *-data: sessionctl and the controller with cubesim
STORE=kube
export KUBECONFIG="$T/kc-data"
check "data: ctl apply over TLS" test "$(ctl apply -f "$T/s1.yaml" 2>&1)" = "session/s1 created"
check "data: ctl get reads it back" test "$(sess_field s1 tenant-a .spec.template)" = python-data
check "data: the fake saw the client certificate's CN" test "$(users_of acurl POST /sessions)" = controller
start_cubesim --clock-speed 1
start_controller ctl-data --orphan-grace 10m --watch-timeout 2s
C1=$CTL_PID
check "data: controller creates the sandbox" wait_eq 20 1 sim_live_for s1
check "data: status Running on the server" wait_eq 15 Running sess_field s1 tenant-a .status.phase
check "data: finalizer added over TLS" wait_eq 5 '["lea.io/sandbox-cleanup"]' sh -c "curl -sf --cacert '$T/ca.pem' --cert '$T/client.pem' --key '$T/client.key' '$API/apis/lea.io/v1alpha1/namespaces/tenant-a/sessions/s1' | jq -c .metadata.finalizers"
check "data: the controller authenticated with the certificate" test "$(users_of acurl PUT /status)" = controller
check "data: the controller watches over TLS" wait_until 10 sh -c "curl -sf --cacert '$T/ca.pem' --cert '$T/client.pem' --key '$T/client.key' '$API/_fake/stats' | jq -e '.watches >= 1'"
# a change arrives through the TLS watch
sed 's/idleTimeout: 15m}/idleTimeout: 15m, state: Paused}/' "$T/s1.yaml" >"$T/s1p.yaml"
ctl apply -f "$T/s1p.yaml" >/dev/null
check "data: a change over the watch pauses it" wait_eq 15 paused sim_state_of s1
kill "$C1"; wait "$C1" 2>/dev/null

# (b) file paths: the same with certificate-authority, client-certificate,
# client-key (relative to the kubeconfig's directory)
export KUBECONFIG="$T/kdir/kc-files"
check "files: ctl apply over TLS" test "$(ctl apply -f "$T/s2.yaml" 2>&1)" = "session/s2 created"
check "files: ctl get" test "$(sess_field s2 tenant-a .metadata.name)" = s2
start_controller ctl-files --orphan-grace 10m --watch-timeout 2s
C2=$CTL_PID
check "files: controller creates the sandbox" wait_eq 20 1 sim_live_for s2
check "files: status Running on the server" wait_eq 15 Running sess_field s2 tenant-a .status.phase
ctl delete session s2 -n tenant-a >/dev/null
check "files: delete goes through the finalizer and the sandbox" wait_eq 20 0 sim_live_for s2
check "files: then the Session is gone" wait_eq 10 404 curl -s -o /dev/null -w '%{http_code}' --cacert "$T/ca.pem" --cert "$T/client.pem" --key "$T/client.key" "$API/apis/lea.io/v1alpha1/namespaces/tenant-a/sessions/s2"
kill "$C2"; wait "$C2" 2>/dev/null

# (c) a wrong CA: a clear error naming the server and the TLS problem, at
# once (not retried: another attempt would not help)
kubeconfig "$T/kc-wrongca" "    certificate-authority-data: $(b64 "$T/other.pem")" "$DATA_USER"
t0=$(date +%s)
KUBECONFIG="$T/kc-wrongca" timeout 20 "$BINDIR/sessionctl" --store kube get sessions -A >/dev/null 2>"$T/wrongca.err"
rc=$?
t1=$(date +%s)
check "wrong CA: sessionctl fails (not a timeout)" sh -c "[ $rc -ne 0 ] && [ $rc -ne 124 ]"
check "wrong CA: at once (under 3 s)" test $((t1 - t0)) -lt 3
check "wrong CA: the error names the server" grep -q "$API/apis/lea.io" "$T/wrongca.err"
check "wrong CA: ... and says the certificate is not trusted" grep -q "TLS: the server's certificate is not trusted: SSL certificate problem" "$T/wrongca.err"
check "wrong CA: ... and which kubeconfig to fix" grep -q "check certificate-authority of kubeconfig $T/kc-wrongca" "$T/wrongca.err"
KUBECONFIG="$T/kc-wrongca" start_controller ctl-wrongca --watch-timeout 2s
C3=$CTL_PID
check "wrong CA: the controller logs it" wait_until 10 grep -q "not trusted" "$T/ctl-wrongca.log"
check "wrong CA: the controller keeps running" kill -0 "$C3"
kill "$C3"; wait "$C3" 2>/dev/null

# (d) no client certificate where the fake requires one: 401, clearly; a
# certificate of another CA: the handshake fails, clearly
kubeconfig "$T/kc-nocert" "$DATA_CLUSTER" "    {}"
KUBECONFIG="$T/kc-nocert" timeout 20 "$BINDIR/sessionctl" --store kube get sessions -A >/dev/null 2>"$T/nocert.err"
rc=$?
check "no client cert: sessionctl fails (not a timeout)" sh -c "[ $rc -ne 0 ] && [ $rc -ne 124 ]"
check "no client cert: 401 naming the kubeconfig" grep -q "401 Unauthorized (check the credentials of kubeconfig $T/kc-nocert" "$T/nocert.err"
kubeconfig "$T/kc-rogue" "$DATA_CLUSTER" "    client-certificate-data: $(b64 "$T/rogue.pem")
    client-key-data: $(b64 "$T/rogue.key")"
KUBECONFIG="$T/kc-rogue" timeout 20 "$BINDIR/sessionctl" --store kube get sessions -A >/dev/null 2>"$T/rogue.err"
rc=$?
check "foreign client cert: sessionctl fails (not a timeout)" sh -c "[ $rc -ne 0 ] && [ $rc -ne 124 ]"
# (TLS 1.3: the client may see the alert or only the dropped connection)
check "foreign client cert: the error names the server" grep -q "$API/apis/lea.io" "$T/rogue.err"
check "foreign client cert: ... and the refused certificate" grep -Eq "alert unknown ca|the server may have refused the client certificate of kubeconfig $T/kc-rogue" "$T/rogue.err"

# (e) insecure-skip-tls-verify: no CA at all
kubeconfig "$T/kc-insecure" "    insecure-skip-tls-verify: true" "$DATA_USER"
check "insecure: ctl get works without a CA" sh -c "KUBECONFIG='$T/kc-insecure' '$BINDIR/sessionctl' --store kube get sessions s1 -n tenant-a -o json | jq -e '.metadata.name == \"s1\"' >/dev/null"
kubeconfig "$T/kc-noca" "" "$DATA_USER"
check "without a CA nor insecure: the system CAs do not trust it" sh -c "! KUBECONFIG='$T/kc-noca' '$BINDIR/sessionctl' --store kube get sessions -A >/dev/null 2>'$T/noca.err' && grep -q 'not trusted' '$T/noca.err'"

# kubectl reads the TLS fake as it would a cluster
if command -v kubectl >/dev/null 2>&1; then
  check "kubectl: get sessions over TLS with client certificates" sh -c "timeout 30 kubectl --kubeconfig '$T/kc-data' get sessions -A 2>&1 | grep -q '^tenant-a *s1 '"
  check "kubectl: with file paths" sh -c "timeout 30 kubectl --kubeconfig '$T/kdir/kc-files' get sessions -n tenant-a 2>&1 | grep -q '^s1 '"
  check "kubectl: a wrong CA is refused" sh -c "! timeout 30 kubectl --kubeconfig '$T/kc-wrongca' get sessions -A >/dev/null 2>&1"
else
  echo "skip kubectl checks: kubectl is not installed"
fi

# (f) fake B: HTTPS with bearer tokens (no client certificates)
CERTS_API=$API
echo tok-1 >"$T/token"
start_fake token --tls-cert "$T/server.pem" --tls-key "$T/server.key" \
  --token-file "$T/token" --bookmark-ms 300
kubeconfig "$T/kc-token" "$DATA_CLUSTER" "    token: tok-1"
kubeconfig "$T/kc-tokfile" "$DATA_CLUSTER" "    tokenFile: $T/ctl-token"
export KUBECONFIG="$T/kc-token"
check "token: ctl apply over TLS with a fixed token" test "$(ctl apply -f "$T/s3.yaml" 2>&1)" = "session/s3 created"
tcurl() { curl -sf --cacert "$T/ca.pem" -H "Authorization: Bearer $(cat "$T/token")" "$@"; }
check "token: the fake authenticated the token" test "$(users_of tcurl POST /sessions)" = token
echo tok-1 >"$T/ctl-token"
export KUBECONFIG="$T/kc-tokfile"
start_controller ctl-token --orphan-grace 10m --watch-timeout 2s
C4=$CTL_PID
check "token: controller creates the sandbox over TLS" wait_eq 20 1 sim_live_for s3
check "token: status Running" wait_eq 15 Running sess_field s3 tenant-a .status.phase
# rotation: the server wants tok-2; the files change
echo tok-2 >"$T/token"
echo tok-2 >"$T/ctl-token"
check "token: ctl works after the token file rotated" test "$(ctl apply -f "$T/s4.yaml" 2>&1)" = "session/s4 created"
check "token: the controller picks the rotated token up" wait_eq 25 1 sim_live_for s4
check "token: s4 Running" wait_eq 15 Running sess_field s4 tenant-a .status.phase
KUBECONFIG="$T/kc-token" "$BINDIR/sessionctl" --store kube get sessions -A >/dev/null 2>"$T/oldtok.err"
check "token: the old fixed token is now a clear 401" grep -q "401 Unauthorized" "$T/oldtok.err"
if command -v kubectl >/dev/null 2>&1; then
  check "kubectl: get sessions over TLS with a token" sh -c "timeout 30 kubectl --kubeconfig '$T/kc-tokfile' get sessions -A 2>&1 | grep -q '^tenant-a *s4 '"
fi
kill "$C4"; wait "$C4" 2>/dev/null
API=$CERTS_API
finish
