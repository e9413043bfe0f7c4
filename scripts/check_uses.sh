#!/bin/sh
# check_uses.sh: are the modules' USES lists true?  `make check-uses` runs it
# (and `make test` runs that first).
#
# Usage: scripts/check_uses.sh MODULE=DIR:USE,USE,... ...
# one argument per module, highest first, in the Makefile's MODULES order
# (the link order and DESIGN's layering: cli cluster exec storage planner
# placement parser base).  USE,... is the module's m_USES.
#
# It fails, naming the file and line, when
#   - a module's USES names a module that is not below it in that order
#     (or is not a module);
#   - a source or header of a module (DIR/*.c, *.h, *.y, *.re; a directory
#     below DIR that is another module's is that module's) has an
#     #include "dir/x.h" of another module that is not in the module's USES
#     closure (its USES, their USES, and so on);
#   - a module's USES names a module that none of its files includes
#     (a stale entry: USES lists exactly the modules included directly).
# An include without a directory ("lmdb.h", <uv.h>) is not a module's and is
# not checked.  Generated sources are checked through their inputs
# (parser/grammar.y, parser/lexer.re).
set -eu

if [ $# -eq 0 ]; then
    echo "usage: $0 MODULE=DIR:USE,USE,... ..." >&2
    exit 2
fi

files=""
for a in "$@"; do
    d=${a#*=}; d=${d%%:*}
    for f in "$d"/*.c "$d"/*.h "$d"/*.y "$d"/*.re; do
        [ -f "$f" ] && files="$files $f"
    done
done

# awk reads the module table from ARGV's first argument and then the files.
# shellcheck disable=SC2086
awk -v spec="$*" '
function fail(msg) { print "check-uses: " msg > "/dev/stderr"; bad = 1 }
# the module a path (file or include) belongs to: the longest module directory it is in
function module_of(path,    m, best, bl) {
    best = ""; bl = 0
    for (m in dir)
        if (index(path, dir[m] "/") == 1 && length(dir[m]) > bl) { best = m; bl = length(dir[m]) }
    return best
}
function close_over(m, u,    i, n, us) {
    if ((m, u) in closure) return
    closure[m, u] = 1
    n = split(uses[u], us, ",")
    for (i = 1; i <= n; i++) if (us[i] != "") close_over(m, us[i])
}
BEGIN {
    n = split(spec, args, " ")
    for (i = 1; i <= n; i++) {
        m = args[i]; sub(/=.*/, "", m)
        rest = args[i]; sub(/^[^=]*=/, "", rest)
        d = rest; sub(/:.*/, "", d)
        u = rest; sub(/^[^:]*:?/, "", u)
        order[m] = i; dir[m] = d; uses[m] = u; name[i] = m
        orders = orders (i > 1 ? " " : "") m
    }
    nmod = n
    for (i = 1; i <= nmod; i++) {
        m = name[i]
        k = split(uses[m], us, ",")
        for (j = 1; j <= k; j++) {
            u = us[j]
            if (u == "") continue
            if (!(u in order)) fail(m "_USES names " u ", which is not a module")
            else if (order[u] <= order[m]) fail(m "_USES names " u ", which is not below " m " (order: " orders ")")
            else close_over(m, u)
        }
    }
}
{
    if (FNR == 1) { fm = module_of(FILENAME) }
    if (fm == "" || $0 !~ /^[ \t]*#[ \t]*include[ \t]*"[^"]*\/[^"]*"/) next
    inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
    im = module_of(inc)
    if (im == "") { fail(FILENAME ":" FNR ": #include \"" inc "\" is in no module"); next }
    if (im == fm) next
    included[fm, im] = 1
    if (!((fm, im) in closure))
        fail(FILENAME ":" FNR ": #include \"" inc "\": module " fm " does not use " im " (add it to " fm "_USES if it is below " fm ")")
}
END {
    for (i = 1; i <= nmod; i++) {
        m = name[i]
        k = split(uses[m], us, ",")
        for (j = 1; j <= k; j++)
            if (us[j] != "" && (us[j] in order) && !((m, us[j]) in included))
                fail(m "_USES names " us[j] ", but no file of " dir[m] "/ includes a header of " us[j])
    }
    exit bad
}' $files
