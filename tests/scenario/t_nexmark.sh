#!/bin/sh
# t_nexmark.sh: the NEXMark queries (bench/nexmark/qN.sql) against sqlite3
# on a small seeded data set (bench/nexmark/check.sh, which `make bench-smoke`
# runs on a larger one).  About 30 s on 2 cores.
#
# Env: ARES_BUILD (dir with ares-sql and bench/nexmark_gen), ARES_TMP (private).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD="$ARES_BUILD"
if [ ! -x "$BUILD/bench/nexmark_gen" ]; then
    # built by `make scenario`; by hand when the test runs alone
    mkdir -p "$ARES_TMP/build/bench"
    ${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -I"$ROOT" -o "$ARES_TMP/build/bench/nexmark_gen" \
        "$ROOT/bench/nexmark/gen.c" "$ROOT/base/base.c" -lm
    ln -s "$BUILD/ares-sql" "$ARES_TMP/build/ares-sql"
    BUILD="$ARES_TMP/build"
fi
exec "$ROOT/bench/nexmark/check.sh" --build "$BUILD" --seed 5 --events 100000 --event-rate 2000 --keep "$ARES_TMP/nexmark"
