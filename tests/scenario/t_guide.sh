#!/bin/sh
# t_guide.sh: docs/guide.md's examples run as the guide says and print what
# it shows (issue 16, item 15).  The guide marks each example with an HTML
# comment on the line before its block:
#   <!-- guide:run NAME -->       a ```sh block: run with sh in the guide's
#                                 directory (build/ and docs/examples/ there)
#   <!-- guide:background NAME --> the same, left running (in another
#                                 terminal, as the guide says) until the end
#   <!-- guide:output NAME -->    a block: what run NAME prints on stdout
#                                 (`output NAME sorted`: its lines after
#                                 the first, a CSV header, in any order)
#   <!-- guide:stderr NAME -->    a block: what run NAME prints on stderr
#   <!-- guide:session NAME -->   a transcript of the shell: its `ares> ` and
#                                 `   -> ` lines are typed into ares-sql in a
#                                 terminal (tmux; `^C` is Ctrl-C), and the
#                                 screen must read as the block (blocks of
#                                 one NAME continue one shell, until `\q`);
#                                 `session NAME connect` is ares-sql
#                                 --connect to the cluster a background
#                                 block started, compared with its banner
# Outputs that come from other processes are waited for (10 s at most).
# Before comparing, trailing blanks and empty lines go, the rows of each
# table are sorted (rows of one window come in no set order), and what
# depends on the clock is masked: SHOW QUERIES's rates, a producer's port,
# log_bytes (how a socket's input was cut into log records).
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
DOC="$ROOT/docs/guide.md"
T="$ARES_TMP"
. "$ROOT/tests/scenario/t_tmux.inc"
W="$T/guide"
mkdir -p "$W/docs" "$T/home"
ln -s "$ARES_BUILD" "$W/build"
ln -s "$ROOT/docs/examples" "$W/docs/examples"
cd "$W" || exit 1
TMPFILES="/tmp/views.csv /tmp/temps.sock /tmp/products-upsert.csv /tmp/shop /tmp/shop2"
BG=""
trap 'for p in $BG; do pkill -P $p 2>/dev/null; kill $p 2>/dev/null; done; tm_cleanup; rm -rf $TMPFILES' EXIT
trap 'exit 1' INT TERM
rm -rf $TMPFILES
fail() { echo "FAIL: $*"; tm_screen; exit 1; }
screen() { tm capture-pane -t $S -p -J -S - -E - 2>/dev/null; }

# the marked blocks: B/N.kind (run, output, session) and B/N.text
mkdir -p "$T/b"
awk -v dir="$T/b" '
    /^ *<!-- guide:(run|background|output|stderr|session) [A-Za-z0-9_-]+( connect| sorted)? -->$/ { kind = $2; sub(/^guide:/, "", kind); name = $3; how = $4 ~ /^(connect|sorted)$/ ? " " $4 : ""; want = 1; next }
    want && /^ *```/ { n++; f = sprintf("%s/%03d", dir, n); print kind " " name how > (f ".kind"); close(f ".kind")
                       indent = match($0, /[^ ]/) - 1; inb = 1; want = 0; printf "" > (f ".text"); next }
    inb && /^ *```$/ { inb = 0; close(f ".text"); next }
    inb { print substr($0, indent + 1) > (f ".text") }' "$DOC"
ls "$T/b"/*.kind >/dev/null 2>&1 || fail "no marked examples in $DOC"

# norm: the comparison's view of a text on stdin
norm() {
    sed 's/[[:space:]]*$//' | grep -v '^$' |
        sed -E 's/^(in_per_s|out_per_s)( *)\|.*/\1\2| (rate)/; s/producer 127\.0\.0\.1:[0-9]+/producer 127.0.0.1:PORT/; s/^(log_bytes +)\|.*/\1| (bytes)/' |
        awk 'function flush() { if (nb) { cmd = "sort"; for (i = 1; i <= nb; i++) print buf[i] | cmd; close(cmd); nb = 0 } }
             /^-+(\+-+)+$/ { flush(); print; body = 1; next }
             body && /^ / { buf[++nb] = $0; next }
             { flush(); body = 0; print }
             END { flush() }'
}

# `output NAME sorted`: lines after the first (a CSV header) in any order
rows_order() {
    if [ "${how:-}" = sorted ]; then sed -n 1p; sort; else cat; fi
}

# a shell session: one tmux terminal per name
sess_start() {
    tm_start "cd $W && HOME=$T/home build/ares-sql --data ./ares-data"
    wait_for "ares>" 10
}
# type the input lines of a transcript, waiting for each statement
sess_type() {
    while IFS= read -r l; do
        case "$l" in
        'ares> ^C') key C-c; sleep 0.5 ;;
        'ares> \q') typ '\q'; key Enter; continue ;;
        'ares> '*) typ "${l#ares> }"; key Enter ;;
        '   -> '*) typ "${l#   -> }"; key Enter ;;
        *) continue ;;
        esac
        # a statement or meta-command typed: its answer comes before the next prompt
        i=0
        while [ $i -lt 100 ]; do
            last=$(screen | sed 's/[[:space:]]*$//' | grep -v '^$' | tail -n 1)
            case "$last" in 'ares>'|'   ->') break ;; esac
            sleep 0.1
            i=$((i + 1))
        done
        sleep 0.2
    done
}

n=0
cur=""
for k in "$T/b"/*.kind; do
    b=${k%.kind}
    read -r kind name how <"$k"
    case "$kind" in
    run)
        sh -e "$b.text" >"$T/run_$name.out" 2>"$T/run_$name.err"
        echo $? >"$T/run_$name.rc"
        ;;
    output)
        [ -f "$T/run_$name.out" ] || fail "output $name: no run $name before it"
        norm <"$b.text" | rows_order >"$b.want"
        i=0
        while norm <"$T/run_$name.out" | rows_order >"$b.got" && ! cmp -s "$b.want" "$b.got" && [ $i -lt 100 ]; do
            sleep 0.1
            i=$((i + 1))
        done
        cmp -s "$b.want" "$b.got" || { cat "$T/b/"*.text | head -0; diff "$b.want" "$b.got"; fail "the output of '$name' differs from docs/guide.md"; }
        n=$((n + 1))
        ;;
    background)
        sh -e "$b.text" >"$T/run_$name.out" 2>"$T/run_$name.err" &
        BG="$BG $!"
        sleep 1
        ;;
    stderr)
        [ -f "$T/run_$name.err" ] || fail "stderr $name: no run $name before it"
        norm <"$T/run_$name.err" >"$b.got"
        norm <"$b.text" >"$b.want"
        cmp -s "$b.want" "$b.got" || { diff "$b.want" "$b.got"; fail "the stderr of '$name' differs from docs/guide.md"; }
        n=$((n + 1))
        ;;
    session)
        if [ "$cur" != "$name" ]; then
            case "${how:-}" in
            connect) tm_start "cd $W && HOME=$T/home build/ares-sql --connect 127.0.0.1:7101 --secret-file secret"; skip=1 ;;
            *) sess_start; skip=5 ;;
            esac
            cur=$name
            : >"$T/sess_$name.want"
        fi
        sess_type <"$b.text"
        # a block's last prompt is where the next block's output goes
        sed '${/^ares>[[:space:]]*$/d}' "$b.text" >>"$T/sess_$name.want"
        norm <"$T/sess_$name.want" | sed '${/^ares>$/d}' >"$b.want"
        # the screen (since the banner of an embedded shell), less the waiting prompt
        i=0
        while screen | tail -n +$skip | norm | sed '/^ares-exit=/d; ${/^ares>$/d}' >"$b.got" && ! cmp -s "$b.want" "$b.got" &&
            [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        grep -q '^ares> \\q$' "$b.text" && { wait_for "ares-exit=0" 10; cur=""; }
        cmp -s "$b.want" "$b.got" || { diff "$b.want" "$b.got"; fail "session '$name' reads otherwise than docs/guide.md"; }
        n=$((n + 1))
        ;;
    esac
done
[ "$n" -ge 3 ] || fail "only $n examples compared"
echo "t_guide: the $n marked examples of docs/guide.md print what it shows"
