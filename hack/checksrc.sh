#!/bin/sh
# checksrc.sh - reject banned functions in our C sources (after curl's
# checksrc). Each has a bounded or checked replacement:
#   sprintf/vsprintf -> snprintf/vsnprintf or dynbuf_printf
#   strcpy/strcat    -> snprintf, memcpy with a known length, or dynbuf
#   atoi/atol        -> strtol/strtoll with end and range checks
#   strtok           -> strtok_r or explicit scanning
#   gets             -> fgets
set -u
cd "$(dirname "$0")/.." || exit 2
banned='sprintf|vsprintf|strcpy|strcat|atoi|atol|strtok|gets'
files=$(find lib api controller cmd test -name '*.[ch]' 2>/dev/null | sort)
[ -n "$files" ] || { echo "checksrc: no sources found" >&2; exit 2; }
# A call is the name not preceded by an identifier character, followed by
# optional spaces and "(".
bad=$(grep -nE "(^|[^A-Za-z0-9_])($banned)[[:space:]]*\(" $files |
      grep -vE '^[^:]+:[0-9]+:[[:space:]]*(\*|//|/\*)' )
if [ -n "$bad" ]; then
  echo "checksrc: banned functions used:" >&2
  echo "$bad" >&2
  exit 1
fi
echo "checksrc: $(echo "$files" | wc -l) files clean"
