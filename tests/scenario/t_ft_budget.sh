#!/bin/sh
# SET memory_budget on a cluster (issue 19): every node's engine keeps its
# own tasks' window state under the budget and the rest in LMDB only, and a
# task's cold groups reach its replicas with the epoch's delta (replica) or
# the snapshot (checkpoint).  t_ft_domain.sh with 2000 keys in windows of
# 60 s (the kill comes in the second of four) under a 4 KB budget: a node
# of the killed domain held groups in LMDB only, and the output after the
# kill still equals the no-failure run.  (Without the cold records in the
# replica's delta, 21 rows of 7694 differed.)
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
here=$(cd "$(dirname "$0")" && pwd)
for ft in replica checkpoint; do
    mkdir -p "$ARES_TMP/$ft"
    KEYS=2000 WINDOW='60 SECONDS' BUDGET='4 KB' FT=$ft ARES_TMP="$ARES_TMP/$ft" sh "$here/t_ft_domain.sh" || exit 1
done
