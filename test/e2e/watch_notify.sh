#!/bin/sh
# watch_notify.sh - the SQLite store's watch is woken by the kernel's
# report of a write (docs/store.md, "When the watch checks"), not by its
# poll: a controller with --watch-poll 60s and --resync 10m (after its
# first pass neither a poll nor a pass comes within the test) still acts
# at once on a `sessionctl apply` and on a user's SQL written straight
# into the file with the sqlite3 command-line tool (another process, a
# connection of its own).
. "$(dirname "$0")/lib/common.sh"

DB="$T/sessions.db"
command -v sqlite3 >/dev/null || { echo "watch_notify: sqlite3 not found" >&2; exit 1; }

start_cubesim --dialect e2b
start_controller ctl --resync 10m --watch-poll 60s
i=0
port=""
while [ -z "$port" ] && [ $i -lt 100 ]; do
  port=$(metrics_port ctl); [ -n "$port" ] || { sleep 0.1; i=$((i + 1)); }
done
check "controller serves /metrics" test -n "$port"
check "controller ready (its first pass done)" \
  wait_until 10 curl -sf -o /dev/null "http://127.0.0.1:$port/readyz"

# an apply through sessionctl: the watch sees it within seconds, not at
# the poll a minute away
cat >"$T/w1.yaml" <<YAML
apiVersion: lea.io/v1alpha1
kind: Session
metadata: {name: w1, namespace: tenant-a}
spec: {template: t, state: Active}
YAML
ctl apply -f "$T/w1.yaml" >/dev/null
check "sessionctl apply acted on within 10 s (poll 60 s)" wait_eq 10 running sim_state_of w1
check "its status written" wait_eq 10 Running sess_field w1 tenant-a .status.phase

# a user's change of spec.state straight into the file: a new revision
# and generation, the objects row and its MODIFIED history entry, in one
# transaction, as the store writes them
sqlite3 "$DB" "BEGIN IMMEDIATE;
UPDATE meta SET revision = revision + 1;
UPDATE objects SET spec = json_set(spec, '\$.state', 'Paused'),
  generation = generation + 1, revision = (SELECT revision FROM meta)
  WHERE namespace = 'tenant-a' AND name = 'w1';
INSERT INTO history(revision, type, namespace, name, object)
  SELECT m.revision, 'MODIFIED', 'tenant-a', 'w1',
         json_set(h.object, '\$.spec.state', 'Paused',
                  '\$.metadata.generation', o.generation,
                  '\$.metadata.resourceVersion', CAST(m.revision AS TEXT))
  FROM meta m, objects o,
       (SELECT object FROM history WHERE namespace = 'tenant-a' AND
        name = 'w1' ORDER BY revision DESC LIMIT 1) h
  WHERE o.namespace = 'tenant-a' AND o.name = 'w1';
COMMIT;" || fail "the sqlite3 write"
check "the store holds the user's change" test "$(sess_field w1 tenant-a .spec.state)" = Paused
check "the sqlite3 write acted on within 10 s (poll 60 s)" wait_eq 10 paused sim_state_of w1
check "the watch did not fall back to polling" \
  test "$(grep -c 'no change notification' "$T/ctl.log")" = 0
finish
