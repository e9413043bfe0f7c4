#!/bin/sh
# check_layers.sh: do the files of exec/ call only the layers below them?
# `make check-layers` runs it after the build (and `make test` runs that).
#
# Usage: scripts/check_layers.sh DOC OBJDIR
#   DOC     docs/architecture.md: its table under "### The files of exec/",
#           rows `| LAYER | `file.c`, ... | owns |`, top first
#   OBJDIR  the build's exec/ objects (build/exec)
#
# For each object, the functions it uses from another file of exec/ (nm's
# undefined symbols, matched to the file that defines them) must come from
# a lower layer.  Inside layer 1 the rows are layers of their own, in the
# table's order (the doc says so); `agg.c` and the `agg_*.c` files are one
# unit (their own order is agg.c's header comment's).  It fails, naming the
# caller, the callee and the symbol, when a call runs up or sideways, and
# when an object has no row in the table (a new file must be placed).
set -eu

if [ $# -ne 2 ]; then
    echo "usage: $0 DOC OBJDIR" >&2
    exit 2
fi
doc=$1
dir=$2
[ -f "$doc" ] || { echo "check-layers: no $doc" >&2; exit 2; }
ls "$dir"/*.o >/dev/null 2>&1 || { echo "check-layers: no objects in $dir (build first)" >&2; exit 2; }

# the table: "rank file" lines (rank: higher calls lower)
ranks=$(awk '
    /^### The files of exec\// { on = 1; next }
    on && /^#/ { exit }
    on && /^\| *[0-9]+ *\|/ {
        split($0, c, "|")
        layer = c[2] + 0; cell = c[3]; row++
        if (layer == 1) { one[row] = cell; next }
        while (match(cell, /`[a-z_*]+\.c`/)) {
            print layer * 100, substr(cell, RSTART + 1, RLENGTH - 2)
            cell = substr(cell, RSTART + RLENGTH)
        }
    }
    END {
        n = 0
        for (r in one) n++
        k = 0
        for (r = 1; r <= row; r++) if (r in one) {
            cell = one[r]
            while (match(cell, /`[a-z_*]+\.c`/)) {
                print 100 + (n - k), substr(cell, RSTART + 1, RLENGTH - 2)
                cell = substr(cell, RSTART + RLENGTH)
            }
            k++
        }
    }' "$doc")
[ -n "$ranks" ] || { echo "check-layers: no layer table in $doc" >&2; exit 2; }

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT INT TERM
for o in "$dir"/*.o; do
    f=$(basename "$o" .o).c
    nm -P --defined-only "$o" | awk -v f="$f" '$2 == "T" { print "def", f, $1 }'
    nm -P -u "$o" | awk -v f="$f" '{ print "use", f, $1 }'
done >"$tmp"

printf '%s\n' "$ranks" | awk '
    function unit(f) { return f ~ /^agg_.*\.c$/ ? "agg.c" : f }
    function rank_of(f,    p) {
        if (f in rank) return rank[f]
        for (p in glob) if (f ~ glob[p]) return rank[p]
        return -1
    }
    FILENAME == "-" {
        if ($2 ~ /\*/) { g = $2; gsub(/\./, "\\.", g); gsub(/\*/, ".*", g); glob[$2] = "^" g "$" }
        rank[$2] = $1; next
    }
    $1 == "def" { owner[$3] = $2; files[$2] = 1; next }
    $1 == "use" { n++; uf[n] = $2; us[n] = $3; files[$2] = 1 }
    END {
        for (f in files) if (rank_of(f) < 0) { print "check-layers: exec/" f " has no row in the layer table of docs/architecture.md" > "/dev/stderr"; bad = 1 }
        for (i = 1; i <= n; i++) {
            s = us[i]; if (!(s in owner)) continue
            a = uf[i]; b = owner[s]
            if (a == b || unit(a) == unit(b)) continue
            if (rank_of(a) <= rank_of(b)) {
                printf "check-layers: exec/%s (layer %s) calls %s of exec/%s (layer %s): not below it\n",
                    a, int(rank_of(a) / 100), s, b, int(rank_of(b) / 100) > "/dev/stderr"
                bad = 1
            }
        }
        exit bad
    }' - "$tmp"
