#!/bin/sh
# Run every scenario test (tests/scenario/t_*.sh) against the binaries in $1.
# Each test gets ARES_BUILD (absolute) and a private temp dir; the first failure stops the run.
set -u
BUILD=$(cd "${1:-build}" && pwd)
cd "$(dirname "$0")"
fail=0
for t in t_*.sh; do
    [ -e "$t" ] || continue
    tmp=$(mktemp -d /tmp/ares-scn.XXXXXX)
    start=$(date +%s)
    if ARES_BUILD="$BUILD" ARES_TMP="$tmp" sh "./$t" >"$tmp/log" 2>&1; then
        echo "ok   $t ($(( $(date +%s) - start ))s)"
        rm -rf "$tmp"
    else
        echo "FAIL $t ($(( $(date +%s) - start ))s); log follows"
        sed 's/^/    /' "$tmp/log" | tail -60
        fail=1
        rm -rf "$tmp"
        break
    fi
done
exit $fail
