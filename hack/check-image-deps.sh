#!/bin/sh
# check-image-deps.sh [DOCKERFILE] - check that the Dockerfile's runtime stage
# installs every Debian package whose shared libraries the image's binaries
# load, and nothing else.
#
# The binaries (bin/session-controller, bin/sessionctl; BINDIR overrides) are
# those built here, on Debian 12 like the image, so `ldd` and `dpkg -S` here
# say what the image needs:
#   1. every package holding a library the binaries link directly (readelf
#      NEEDED) is listed between "# runtime-packages-begin" and
#      "# runtime-packages-end" in the last stage, unless Debian's base image has
#      it (the Depends closure of the Essential packages, e.g. libc6);
#   2. every package of the full `ldd` closure is listed, in the base image, or pulled
#      in by the Depends/Pre-Depends of a listed package (so apt installs it);
#   3. every listed package is needed by 1 or 2, or is ca-certificates (no
#      library, but TLS to Cube verifies against it).
# Prints one line per finding and "check-image-deps: ok" or exits 1.
set -eu
df=${1:-Dockerfile}
bindir=${BINDIR:-bin}
bins="$bindir/session-controller $bindir/sessionctl"
non_library="ca-certificates"

die() { echo "check-image-deps: $*" >&2; exit 1; }
[ -f "$df" ] || die "$df: not found"
for b in $bins; do [ -x "$b" ] || die "$b: not built (run make)"; done
command -v dpkg-query >/dev/null 2>&1 || die "needs dpkg (a Debian system)"

# the listed packages, and that the list sits in the last stage
last_from=$(grep -n '^FROM ' "$df" | tail -n 1 | cut -d: -f1)
begin=$(grep -n '^# runtime-packages-begin' "$df" | cut -d: -f1)
end=$(grep -n '^# runtime-packages-end' "$df" | cut -d: -f1)
[ -n "$last_from" ] && [ -n "$begin" ] && [ -n "$end" ] ||
  die "$df: needs FROM lines and the runtime-packages-begin/end markers"
[ "$begin" -gt "$last_from" ] ||
  die "$df:$begin: the runtime package list is not in the last (runtime) stage"
listed=$(sed -n "$((begin + 1)),$((end - 1))p" "$df" | grep -v '^#' |
  tr -d '\\' | tr -s ' \t' '\n\n' | grep -v '^$' | sort -u)
[ -n "$listed" ] || die "$df:$begin: empty runtime package list"

# variants PATH: the names dpkg may know a library by (its symlink target;
# usrmerge: /lib and /usr/lib)
variants() {
  for c in "$1" "$(readlink -f "$1")"; do
    printf '%s\n%s\n' "${c#/usr}" "/usr${c#/usr}"
  done
}
# the owners of every library any binary loads, from one dpkg -S call
libs=$(for b in $bins; do ldd "$b"; done | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u)
owners=$(dpkg -S $(for l in $libs; do variants "$l"; done | sort -u) 2>/dev/null |
  sed -n 's/^\([^ :]*\)[^ ]*: \(\/.*\)$/\2 \1/p')
# pkg_of PATH: the package owning a library
pkg_of() {
  for v in $(variants "$1"); do
    p=$(printf '%s\n' "$owners" | awk -v f="$v" '$1 == f {print $2; exit}')
    [ -n "$p" ] && { echo "$p"; return 0; }
  done
  return 1
}
in_base() { in_list "$1" "$base"; }
in_list() { printf '%s\n' "$2" | grep -qx "$1"; }

bad=0
direct=""
all=""
for b in $bins; do
  needed=$(readelf -d "$b" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p')
  for so in $needed; do
    path=$(ldd "$b" | awk -v so="$so" '$1 == so && $2 == "=>" {print $3}')
    [ -n "$path" ] && [ "$path" != "not" ] || { echo "$b: $so not found by ldd"; bad=1; continue; }
    p=$(pkg_of "$path") || { echo "$b: $so ($path): no package owns it"; bad=1; continue; }
    direct="$direct $p"
  done
  for path in $(ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $3}'); do
    p=$(pkg_of "$path") || { echo "$b: $path: no package owns it"; bad=1; continue; }
    all="$all $p"
  done
done
direct=$(printf '%s\n' $direct | sort -u)
all=$(printf '%s\n' $all | sort -u)

# closure_of LIST: LIST and the Depends/Pre-Depends of its packages,
# recursively (every alternative), from dpkg's database (read once)
depdb=$(mktemp)
trap 'rm -f "$depdb"' EXIT
dpkg-query -W -f='${Package}\t${Essential}\t${Depends}, ${Pre-Depends}\n' >"$depdb"
closure_of() {
  printf '%s\n' $1 | awk -F'\t' '
    NR == FNR { if($1 != "") seed[$1] = 1; next }
    { deps[$1] = $3; inst[$1] = 1 }
    END {
      n = 0
      for(p in seed) { seen[p] = 1; if(p in inst) q[n++] = p }
      for(i = 0; i < n; i++) {
        s = deps[q[i]]
        gsub(/\([^)]*\)/, "", s); gsub(/:any/, "", s); gsub(/ /, "", s)
        m = split(s, a, /[,|]/)
        for(j = 1; j <= m; j++)
          if(a[j] != "" && (a[j] in inst) && !(a[j] in seen)) {
            seen[a[j]] = 1; q[n++] = a[j]
          }
      }
      for(p in seen) print p
    }' - "$depdb" | sort
}
base=$(closure_of "$(awk -F'\t' '$2 == "yes" {print $1}' "$depdb")")
closure=$(closure_of "$listed")

for p in $direct; do
  in_list "$p" "$listed" || in_base "$p" || {
    echo "$df: runtime stage lacks $p (a library the binaries link directly)"; bad=1; }
done
for p in $all; do
  in_list "$p" "$closure" || in_base "$p" || {
    echo "$df: runtime stage would lack $p (needed through ldd, not a dependency of a listed package)"; bad=1; }
done
for p in $listed; do
  in_list "$p" "$direct" || in_list "$p" "$all" || in_list "$p" "$non_library" || {
    echo "$df: runtime stage lists $p, which no binary needs"; bad=1; }
done
[ "$bad" -eq 0 ] || exit 1
echo "check-image-deps: ok ($(echo $listed | wc -w) packages listed; direct: $(echo $direct | tr '\n' ' '))"
