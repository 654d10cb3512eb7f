#!/bin/sh
# End-to-end: a burst of status writes on the kube store stays bounded.
# 2,000 small Sessions applied to kube-apiserver-fake, then the controller
# (--cube-qps 0) creates their sandboxes at once and writes every status.
# Each kube_http client keeps at most KUBE_HTTP_ACTIVE_MAX (32) calls on
# the wire; the others wait unsent. Asserted: the controller never holds
# more than 2 x 32 (the store's client and the events' client) + 8 TCP
# connections to the API server (before the cap: one per write in flight,
# about 2,000), every sandbox is created, and every status is written.
# VmHWM is printed, not asserted (30 MB with the cap, 73 MB without it, on
# the shared 2-core machine: too close for a memory bound of wide margin;
# see docs/benchmarks.md for the 10,000-Session figures).
. "$(dirname "$0")/lib/common.sh"
N=${KUBE_MEMORY_N:-2000}

start_kube_fake 1 --listen 127.0.0.1:0
kubeconfig "$T/kc"
export KUBECONFIG="$T/kc"
STORE=kube
API_PORT=${API##*:}
API_PORT_HEX=$(printf '%04X' "$API_PORT")

mkdir "$T/m"
i=0
while [ $i -lt "$N" ]; do
  printf -- '---\napiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: s%d, namespace: t%d}\nspec: {template: python}\n' \
    $i $((i % 20))
  i=$((i + 1))
done >"$T/m/all.yaml"
check "apply of $N Sessions" sh -c "\"$BINDIR/sessionctl\" --store kube apply -f \"$T/m/\" >/dev/null"

start_cubesim
"$BINDIR/session-controller" --store kube --cube-url "$SIM" \
  --metrics-addr 127.0.0.1:0 --cube-qps 0 --resync 5s 2>"$T/ctl.log" &
CTL_PID=$!
PIDS="$PIDS $CTL_PID"

# established TCP connections to the fake's port (/proc/net/tcp: the
# remote address is field 3, ADDR:PORT in hex; state 01 = established)
conns() { awk -v p=":$API_PORT_HEX" '$3 ~ p"$" && $4 == "01"' /proc/net/tcp | wc -l; }
running() { curl -sf "$SIM/_sim/sandboxes" | jq '[.[] | select(.state == "running")] | length'; }
maxc=0
i=0
while [ $i -lt 600 ]; do        # 60 s at most
  c=$(conns)
  [ "$c" -gt "$maxc" ] && maxc=$c
  [ $((i % 10)) -eq 0 ] && [ "$(running)" = "$N" ] && break
  sleep 0.1
  i=$((i + 1))
done
echo "most connections to the API server at once: $maxc"
check "at most 72 connections to the API server (saw $maxc)" test "$maxc" -le 72
check "all $N sandboxes running" wait_eq 30 "$N" running
written() { ctl get sessions -A -o json 2>/dev/null |
  jq '[.items[] | select(.status.sandboxID != null and .status.sandboxID != "")] | length'; }
check "every status written" wait_eq 60 "$N" written
echo "controller $(grep -E 'VmHWM' /proc/$CTL_PID/status | tr -s ' \t' ' ') at $N Sessions; load $(cut -d' ' -f1-3 /proc/loadavg)"
check "no status write timed out waiting for a slot" sh -c "! grep -q 'waiting for one of the' \"$T/ctl.log\""
finish
