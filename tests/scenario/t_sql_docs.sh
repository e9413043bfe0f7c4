#!/bin/sh
# t_sql_docs.sh: the examples of docs/sql.md's "Windows: where Ares and
# ksqlDB disagree" (issue 16, item 16) print what the page says they print.
# Each ```sh block there is one command line, then its output.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
DOC="$(cd "$(dirname "$0")/../.." && pwd)/docs/sql.md"
cd "$ARES_TMP" || exit 1
trap 'rm -f ex_*' EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }

# ex_N.sh: block N's command; ex_N.want: the lines under it
awk '/^### Windows: where Ares and ksqlDB disagree/ { on = 1; next }
     on && /^##/ { exit }
     on && /^ *```sh$/ { n++; line = 0; inb = 1; next }
     inb && /^ *```$/ { inb = 0; next }
     inb { sub(/^  /, ""); f = (line++ ? "ex_" n ".want" : "ex_" n ".sh"); print > f }' "$DOC"
[ -f ex_1.sh ] || fail "no examples found in $DOC"
n=0
for cmd in ex_*.sh; do
    b=${cmd%.sh}
    sed -i "s|build/ares-sql|\"$ARES_BUILD/ares-sql\"|g" "$cmd"
    sh "$cmd" >"$b.got" 2>"$b.err" || { cat "$cmd" "$b.err"; fail "$b: exit $?"; }
    cmp -s "$b.want" "$b.got" || { cat "$cmd"; diff "$b.want" "$b.got"; fail "$b: output differs from docs/sql.md"; }
    n=$((n + 1))
done
[ "$n" -ge 5 ] || fail "only $n examples in the section"
echo "ok   the $n examples of sql.md's window differences print what the page says"
