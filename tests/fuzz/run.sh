#!/bin/sh
# Run every fuzz target in $1 (built by `make fuzzers`) over its seed corpus.
# $2 = smoke (CI: short runs; the parser gets 60 s) or long.
set -eu
DIR=$1
MODE=${2:-smoke}
cd "$(dirname "$0")/../.."
for bin in "$DIR"/fuzz/*; do
    [ -x "$bin" ] || continue
    name=$(basename "$bin")
    seeds="tests/fuzz/seeds/${name#fuzz_}"
    work="$DIR/corpus/$name"
    mkdir -p "$work"
    if [ "$MODE" = long ]; then secs=${FUZZ_LONG_SECONDS:-600}
    elif [ "$name" = fuzz_parser ]; then secs=60
    else secs=${FUZZ_SECONDS:-15}; fi
    echo "== $name for ${secs}s"
    if ! ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=0 -artifact_prefix="$DIR/" "$work" $( [ -d "$seeds" ] && echo "$seeds" ) >"$work.log" 2>&1; then
        echo "FAIL: $name found a crash, leak or timeout:"; tail -40 "$work.log"; exit 1
    fi
    tail -1 "$work.log"
done
