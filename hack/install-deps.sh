#!/bin/sh
# install-deps.sh - install the Debian 12 packages that building and testing
# session-controller need. Idempotent: installs only what is missing, and
# runs apt-get update only then. Works as root or through sudo.
set -eu
# libclang-rt-14-dev: libFuzzer and the sanitizer runtimes for clang
# (hack/fuzz.sh); clang only recommends it, and we install without those.
pkgs="build-essential pkg-config libcurl4-openssl-dev libyaml-dev libjson-c-dev
libevent-dev libssl-dev libsqlite3-dev clang valgrind faketime sqlite3 curl
openssl procps jq libclang-rt-14-dev"
missing=""
for p in $pkgs; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
    missing="$missing $p"
  fi
done
if [ -z "$missing" ]; then
  echo "install-deps: all packages present"
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  sudo=""
elif command -v sudo >/dev/null 2>&1; then
  sudo="sudo"
else
  echo "install-deps: need root or sudo to install:$missing" >&2
  exit 1
fi
echo "install-deps: installing$missing"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# shellcheck disable=SC2086
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
