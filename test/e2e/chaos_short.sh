#!/bin/sh
# The short chaos run inside `make test`: both dialects, 150 sessions,
# 0.7 virtual hours at x60, 3 replicas with skewed clocks and random kills.
# It runs a fixed seed (7; CHAOS_SEED overrides) so that CI replays the same
# workload and faults: random seeds are for `make chaos`, which explores,
# and can still hit the open race of docs/reliability.md (a user's request
# resuming a sandbox between the confirming GET and the DELETE).
exec sh "$(dirname "$0")/../chaos/run.sh" --short --dialect both \
  --seed "${CHAOS_SEED:-7}"
