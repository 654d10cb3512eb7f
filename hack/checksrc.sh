#!/bin/sh
# checksrc.sh - reject banned functions in our C sources (after curl's
# checksrc). Each has a bounded or checked replacement:
#   sprintf/vsprintf -> snprintf/vsnprintf or dynbuf_printf
#   strcpy/strcat    -> snprintf, memcpy with a known length, or dynbuf
#   atoi/atol        -> strtol/strtoll with end and range checks
#   strtok           -> strtok_r or explicit scanning
#   gets             -> fgets
# and (rule_no_local_clock, safety rule 1, with the planner's purity) no
# file under controller/plan/ reads a clock, does I/O or reads the
# environment: the planner decides by Cube's clock and its input only.
set -u
cd "$(dirname "$0")/.." || exit 2
banned='sprintf|vsprintf|strcpy|strcat|atoi|atol|strtok|gets'
files=$(find lib api controller cmd test -name '*.[ch]' 2>/dev/null | sort)
[ -n "$files" ] || { echo "checksrc: no sources found" >&2; exit 2; }
status=0

# code: each line of the files as FILE:LINE:TEXT with comments and
# string and character literals blanked, so only code can match
code() {
  awk '
    FNR == 1 { inc = 0 }
    {
      out = ""; n = length($0); i = 1; q = ""
      while(i <= n) {
        c = substr($0, i, 1); d = substr($0, i, 2)
        if(inc) {
          if(d == "*/") { inc = 0; out = out "  "; i += 2 }
          else { out = out " "; i++ }
        } else if(q != "") {
          if(c == "\\") { out = out "  "; i += 2 }
          else { if(c == q) q = ""; out = out " "; i++ }
        } else if(d == "/*") { inc = 1; out = out "  "; i += 2 }
        else if(d == "//") break
        else if(c == "\"" || c == "\047") { q = c; out = out " "; i++ }
        else { out = out c; i++ }
      }
      print FILENAME ":" FNR ":" out
    }' "$@"
}

# A call is the name not preceded by an identifier character, followed by
# optional spaces and "(".
# shellcheck disable=SC2086
bad=$(code $files | grep -E "^[^:]+:[0-9]+:.*(^|[^A-Za-z0-9_])($banned)[[:space:]]*\(")
if [ -n "$bad" ]; then
  echo "checksrc: banned functions used:" >&2
  echo "$bad" >&2
  status=1
fi

# rule_no_local_clock: clocks, I/O, the environment, randomness, and the
# libraries that talk to the outside, under controller/plan/
clock='time|clock|clock_gettime|gettimeofday|timespec_get|ftime|sctime_mono_ms|sctime_wall_ms'
io='fopen|fdopen|freopen|fclose|open|openat|creat|close|read|write|pread|pwrite|fread|fwrite|fgets|fputs|fputc|putc|putchar|getchar|puts|printf|fprintf|vprintf|vfprintf|dprintf|perror|syslog|socket|connect|send|recv|sendto|recvfrom|popen|system|getenv|secure_getenv|getrandom|rand|random|srand|sc_hash_seed|log_kv|audit_record|metrics_[a-z_]+|store_[a-z_]+|curl_[a-z_]+|sqlite3_[a-z_]+|event_[a-z_]+|evhttp_[a-z_]+|bufferevent_[a-z_]+'
pfiles=$(find controller/plan -name '*.[ch]' 2>/dev/null | sort)
if [ -n "$pfiles" ]; then
  # shellcheck disable=SC2086
  bad=$(code $pfiles | grep -E "^[^:]+:[0-9]+:.*(^|[^A-Za-z0-9_])($clock|$io)[[:space:]]*\(")
  if [ -n "$bad" ]; then
    echo "checksrc: rule_no_local_clock: the planner (controller/plan/) must not read a clock or do I/O:" >&2
    echo "$bad" >&2
    status=1
  fi
fi

# layering: a room includes only rooms before it on the data flow
# (docs/architecture.md, "The rooms"). "ROOM: FORBIDDEN..." per line. The
# planner reads the fact types (cube/sandbox.h) but calls no source; the
# Kubernetes client's Events are a backend of status/recorder.h.
layers='controller/plan: controller/act controller/status controller/loop controller/observe controller/store controller/kubeclient
controller/status: controller/act controller/loop
controller/act: controller/loop
controller/store/sqlite: controller/store/kube controller/kubeclient
controller/store/kube: controller/store/sqlite
controller/store: controller/act controller/status controller/loop controller/plan controller/observe
controller/cube: controller/act controller/status controller/loop controller/plan controller/observe controller/store
controller/kubeclient: controller/act controller/loop controller/plan controller/observe controller/store controller/cube'
nlayers=0
while IFS= read -r line; do
  room=${line%%:*}
  [ -d "$room" ] || continue
  nlayers=$((nlayers + 1))
  for f in ${line#*:}; do
    bad=$(grep -rn "^#include \"$f/" "$room" 2>/dev/null)
    if [ -n "$bad" ]; then
      echo "checksrc: layering: $room/ must not include $f/:" >&2
      echo "$bad" >&2
      status=1
    fi
  done
done <<EOF
$layers
EOF

# the room table of docs/architecture.md names every folder of controller/
# (and of controller/store/), and only those
if [ -f docs/architecture.md ]; then
  doc=$(sed -n '/^controller\/$/,/^cmd\//p' docs/architecture.md |
        sed -n 's|^  \([a-z]*\)/ .*|\1|p; s|^    \([a-z]*\)/ .*|store/\1|p' | sort)
  tree=$( (cd controller && ls -d */ store/*/ 2>/dev/null) | sed 's|/$||' | sort)
  if [ "$doc" != "$tree" ]; then
    echo "checksrc: docs/architecture.md's room table does not match controller/:" >&2
    echo "  in the table: $(echo "$doc" | tr '\n' ' ')" >&2
    echo "  in the tree:  $(echo "$tree" | tr '\n' ' ')" >&2
    status=1
  fi
fi
[ "$status" -eq 0 ] || exit 1
echo "checksrc: $(echo "$files" | wc -l) files clean, planner pure ($(echo "$pfiles" | wc -w) files), layering kept ($nlayers rooms)"
