#!/bin/sh
# The short chaos run of make test (docs/reliability.md): both dialects,
# 150 sessions over 0.7 virtual hours at x60, three skewed replicas, one
# SIGKILLed every 1-3 s, the full fault mix. A fresh seed every run
# (CHAOS_SEED=N to pin one); a failure prints the command that replays it.
exec sh "$(dirname "$0")/../chaos/run.sh" --short --dialect both \
  ${CHAOS_SEED:+--seed "$CHAOS_SEED"}
