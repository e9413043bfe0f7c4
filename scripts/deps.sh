#!/bin/sh
# Install the Debian packages Ares needs, but only the ones that are missing.
# Safe to run repeatedly; `make`, `make run` and `make test` call it first.
set -e
PKGS="build-essential pkg-config clang libclang-rt-14-dev lemon re2c liblmdb-dev lmdb-utils \
libuv1-dev libcmocka-dev libedit-dev libjansson-dev libssl-dev sqlite3 gnuplot-nox tmux \
iproute2 netcat-openbsd procps"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -q $missing >/dev/null 2>&1 || {
    $SUDO apt-get update -q >/dev/null
    $SUDO apt-get install -y -q $missing
}
