#!/bin/sh
# The baselines of issue 7 recover exactly too: t_ft_domain.sh with
# ft = checkpoint (snapshots every 500 ms, replay from the last one) and
# ft = upstream (no copies: lost state recomputed from the stream log).
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
here=$(cd "$(dirname "$0")" && pwd)
for ft in checkpoint upstream; do
    mkdir -p "$ARES_TMP/$ft"
    FT=$ft ARES_TMP="$ARES_TMP/$ft" sh "$here/t_ft_domain.sh" || exit 1
done
