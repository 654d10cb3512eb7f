#!/bin/sh
# End-to-end (issue 25): three replicas with --shards off share the Cube
# work (--share-work, the default) and cost Cube what one replica costs,
# within the promise's 15 %: 30 Running sessions at Cube's clock x60, each
# kept alive by a connect every 5 virtual minutes (5 s real). cubesim
# counts every request (GET /_sim/stats). One replica for 20 s, then three
# for 20 s: the requests but lists of the three are those of one (the
# lists of their full passes are counted apart: every replica lists each
# resync). Then kill -9 of one of the three: its share is kept alive by
# the others (no sandbox idles out). Last, --share-work=false: every
# replica GETs every session before its keep-alive (the keep-alives
# themselves dedupe by endAt), about twice the count: told apart.
. "$(dirname "$0")/lib/common.sh"

stat() { curl -sf "$SIM/_sim/stats" | jq -r ".requests.$1"; }
# what the sessions cost: every request but the full passes' lists
keep() { curl -sf "$SIM/_sim/stats" | jq -r ".total - .requests.list"; }
pauses() { sim_audit | jq -s '[.[] | select(.event=="timeout-pause")] | length'; }
acting() { curl -sf "$SIM/_sim/stats" | jq -r '.requests | .connect + .timeout + .create + .delete + .pause'; }
running() { sim_truth | jq '[.[] | select(.state=="running")] | length'; }
N=30
WIN=20

start_cubesim --clock-speed 60
i=0
while [ $i -lt $N ]; do
  printf 'apiVersion: lea.io/v1alpha1\nkind: Session\nmetadata: {name: s%02d, namespace: t%d}\nspec: {template: shell, state: Running, idleTimeout: 10m}\n---\n' "$i" $((i % 3))
  i=$((i + 1))
done >"$T/all.yaml"
ctl apply -f "$T/all.yaml" >/dev/null || fail "apply"

start_controller c1 --resync 4s
P1=$CTL_PID
check "$N sandboxes running" wait_eq 30 "$N" running
sleep 3
a0=$(keep); t0=$(acting); l0=$(stat list)
sleep "$WIN"
a1=$(keep); t1=$(acting); l1=$(stat list)
one=$((a1 - a0)); one_act=$((t1 - t0))
echo "  one replica, ${WIN} s: $one requests but lists ($one_act acting calls), $((l1 - l0)) lists"
check "one replica keeps them alive ($one requests)" test "$one" -ge $((N * WIN / 5 / 2))

start_controller c2 --resync 4s
P2=$CTL_PID
start_controller c3 --resync 4s
P3=$CTL_PID
wait_until 10 grep -q 'membership changed.*members=3' "$T/c1.log" ||
  fail "c1 never saw 3 members"
sleep 3
a0=$(keep); t0=$(acting); l0=$(stat list)
sleep "$WIN"
a1=$(keep); t1=$(acting); l1=$(stat list)
three=$((a1 - a0)); three_act=$((t1 - t0))
echo "  three replicas, ${WIN} s: $three requests but lists ($three_act acting calls), $((l1 - l0)) lists"
# the promise: within 15 % of one (and 2 calls of slack for the window's edges)
check "three sharing replicas keep alive as one does ($three vs $one)" \
  test "$three" -le $((one * 115 / 100 + 2))
check "and act as one does ($three_act vs $one_act)" \
  test "$three_act" -le $((one_act * 115 / 100 + 2))
check "all $N still running" test "$(running)" = "$N"
for c in c1 c2 c3; do
  check "$c served a share" sh -c "curl -sf http://127.0.0.1:$(metrics_port $c)/metrics | grep -q '^session_controller_reconcile_total{result=\"elsewhere\"}'"
done

# kill -9 of one: the others take its share within two resyncs, before
# any keep-alive margin (5 virtual minutes: 5 s) runs out
p0=$(pauses)
kill -9 "$P2"
wait "$P2" 2>/dev/null
sleep 12
check "after kill -9 of c2: all $N still running" test "$(running)" = "$N"
check "no sandbox idle-paused ($p0 before the kill, $(pauses) after)" test "$(pauses)" = "$p0"

# every replica for every session: about three times the connects
kill "$P1" "$P3"
wait "$P1" "$P3" 2>/dev/null
for c in c4 c5 c6; do start_controller $c --resync 4s --share-work=false; done
sleep 5
a0=$(keep)
sleep "$WIN"
a1=$(keep)
all=$((a1 - a0))
echo "  three replicas, --share-work=false, ${WIN} s: $all requests but lists"
check "without sharing the count is far above one's ($all vs $one)" \
  test "$all" -ge $((one * 3 / 2))

finish
