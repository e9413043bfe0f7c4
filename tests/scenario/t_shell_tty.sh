#!/bin/sh
# The interactive ares-sql shell in a real terminal, driven through tmux:
# banner, a multi-line statement, tab completion of a keyword and of a stream
# name, a push query that prints as INSERTs feed it and stops on Ctrl-C,
# Ctrl-C clearing typed input, a second push query refused, \q, and history
# kept in $HOME across two runs.
# Then the engine's loop at the prompt: a socket source fed by nc while a
# push query's rows print above the prompt and the half-typed input, which
# comes back intact; a second ares-sql subscribes to the shell's standing
# query meanwhile.
# tmux runs on a private socket in ARES_TMP; everything is killed at the end.
set -u
command -v tmux >/dev/null 2>&1 || { echo "skip: tmux is not installed"; exit 0; }
. "$(cd "$(dirname "$0")" && pwd)/t_cli_lib.inc" # A, T, free_port; fail and cleanup are ours
mkdir -p "$T/home" "$T/work"
. "$_LIBDIR/t_tmux.inc"

cleanup() {
    for p in $PIDS; do kill "$p" 2>/dev/null; done
    tm_cleanup
}
trap cleanup EXIT INT TERM

fail() {
    echo "FAIL: $*"
    tm_screen
    exit 1
}

start() {
    tm_start "cd '$T/work' && HOME='$T/home' TERM=xterm '$A' --data '$T/work/data'"
}

# ---- run 1
start
wait_for "ares-sql "
wait_for "\\help"
wait_for "data: $T/work/data"
wait_for "ares>"

# a statement over two lines: the continuation prompt, then the notice
line "CREATE STREAM clicks (ts TIMESTAMP, user_id BIGINT,"
wait_for "   ->"
line "  url TEXT) WITH (timestamp = 'ts');"
wait_for "CREATE STREAM"

# completion: a keyword (SEL -> SELECT) and a stream name (cli -> clicks)
typ "SEL"
key Tab
sleep 0.2
typ "url, COUNT(*) AS n FROM cli"
key Tab
sleep 0.2
line "WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY url EMIT FINAL;"
wait_for "SELECT url, COUNT(*) AS n FROM clicks WINDOW TUMBLING"
wait_for "push query running; Ctrl-C to stop"

# the push query prints as INSERTs close its windows
line "INSERT INTO clicks VALUES (1000, 1, '/a'), (2000, 2, '/a'), (15000, 1, '/b');"
wait_for "INSERT 3"
screen | grep -q '^ /a *| *2 *$' || fail "the push query did not print the closed window"

# Ctrl-C with text typed only clears the text (the push query keeps running)
typ "SELECT garbage FORM"
key C-c
wait_for "SELECT garbage FORM^C"
line "INSERT INTO clicks VALUES (30000, 1, '/c');"
wait_for "INSERT 1"
screen | grep -q '^ /b *| *1 *$' || fail "the push query stopped on a Ctrl-C that only cleared input"
[ "$(count 'error')" -eq 0 ] || fail "the cleared input still ran"

# a second push query while one runs is refused: their rows would interleave
line "SELECT * FROM clicks;"
wait_for "error: a push query or SUBSCRIBE is already running in this shell"

# Ctrl-C at an empty prompt stops the push query
key C-c
wait_for "push query stopped"
wait_for "(2 rows)"
# and with nothing running it only draws a new prompt
key C-c
sleep 0.3
[ "$(last_line)" = "ares>" ] || fail "Ctrl-C at an idle prompt: $(last_line)"

# a keyword in lower case completes in lower case; DESCRIBE completes names
typ "descr"
key Tab
sleep 0.2
typ "cli"
key Tab
sleep 0.2
line ";"
wait_for "describe clicks ;"
wait_for "user_id"

# the continuation prompt says when the input is inside a string or comment
line "SELECT 'it''s"
wait_for "   '>"
key C-c
wait_for "ares>"
line "DESCRIBE \"clicks"
wait_for '   ">'
key C-c
line "DESCRIBE /* a"
wait_for "   *>"
line "comment */ clicks;"
wait_for "   *> comment */ clicks;"
wait_for "event time"

# the second statement of a line, and a statement over two lines
line "DESCRIBE clicks; SELECT url FROM clicks WHERE nosuch2 > 1;"
wait_for "line 1, column 47: unknown column 'nosuch2'"
caret_under "unknown column 'nosuch2'" "nosuch2 > 1"
line "SELECT url,"
line "  COUNT(*) FROM clicks WHERE nosuch3 > 1;"
wait_for "line 2, column 30: unknown column 'nosuch3'"
caret_under "unknown column 'nosuch3'" "nosuch3 > 1"

# errors show the caret and leave the shell running
line "SELECT url FROM clicks WHERE nosuch > 1;"
wait_for "unknown column 'nosuch'"
screen | grep -q '^ *\^$' || fail "no caret under the error"

line "\\q"
wait_for "ares-exit=0"
hist | grep -qF "SELECT url, COUNT(*) AS n FROM clicks WINDOW" || fail "history file lacks the SELECT"
hist | grep -qF "describe clicks" || fail "history file lacks the DESCRIBE"
hist | grep -qxF "\\q" || fail "history file lacks \\q"

# ---- run 2: the history came back (Up, Up: \q then the statement before it)
start
history_back "SELECT url FROM clicks WHERE nosuch > 1;"
key C-u
# the catalog persisted in the data directory: the stream completes
typ "DESCRIBE cl"
key Tab
sleep 0.2
line ";"
wait_for "DESCRIBE clicks ;"
wait_for "url     | TEXT"
# Ctrl-D leaves
key C-d
wait_for "ares-exit=0"

# ---- run 3: sockets at the prompt
PORT=$(free_port)
start
wait_for "ares>"
line "CREATE STREAM live (ts TIMESTAMP, k BIGINT) WITH (timestamp = 'ts', source = 'tcp://127.0.0.1:$PORT');"
wait_for "(listening on tcp://127.0.0.1:$PORT)"
line "CREATE QUERY per_k AS SELECT k, COUNT(*) AS n FROM live WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL;"
wait_for "CREATE QUERY"
line "SELECT k, COUNT(*) AS cnt FROM live WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL;"
wait_for "push query running; Ctrl-C to stop"

# a second process subscribes to the shell's standing query: the shell
# answers it from its prompt
"$A" --data "$T/work/data" -e "SUBSCRIBE per_k;" --format csv >"$T/sub.out" 2>"$T/sub.err" &
SUB=$!
PIDS="$PIDS $SUB"
i=0
while [ $i -lt 50 ] && ! grep -qx "k,n" "$T/sub.out" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
grep -qx "k,n" "$T/sub.out" || { cat "$T/sub.err"; fail "the subscriber got no header from the shell"; }

# half a statement typed, then rows come from nc: they print above the prompt
typ "SHOW STR"
sleep 0.2
printf '1000,1\n2000,1\n3000,2\nnot a row\n12000,1\n' | nc -N 127.0.0.1 "$PORT"
wait_for "line 4: expected 2 columns, got 1"
screen | grep -q "^ares: stream live, producer 127.0.0.1:[0-9]*: line 4: " || fail "the producer's bad line"
i=0
while [ $i -lt 50 ] && ! screen | grep -qE '^ 1 \| +2$'; do sleep 0.1; i=$((i + 1)); done
screen | grep -qE '^ 1 \| +2$' || fail "the push query's row did not print at the prompt"
screen | grep -qE '^ 2 \| +1$' || fail "the push query's second row"
# the prompt and the input typed so far are drawn again below the rows
[ "$(screen | grep -v '^$' | tail -n 1)" = "ares> SHOW STR" ] || fail "the prompt was not drawn again with its input"
[ "$(count 'ares> SHOW STR')" -eq 1 ] || fail "the old prompt line stayed on the screen"
# and the input goes on where it was
line "EAMS;"
wait_for "ares> SHOW STREAMS;"
screen | grep -qE '^ live +\|.*\| +4 +\| +1 +\|' || fail "SHOW STREAMS: 4 rows, 1 rejected"

# rows arrive at a continuation prompt too
line "SHOW"
wait_for "   ->"
printf '25000,3\n' | nc -N 127.0.0.1 "$PORT"
i=0
while [ $i -lt 50 ] && ! screen | grep -qE '^ 1 \| +1$'; do sleep 0.1; i=$((i + 1)); done
screen | grep -qE '^ 1 \| +1$' || fail "no row at the continuation prompt"
[ "$(screen | grep -v '^$' | tail -n 1)" = "   ->" ] || fail "the continuation prompt was not drawn again"
line "QUERIES;"
wait_for "per_k"
grep -qx "1,2" "$T/sub.out" && grep -qx "2,1" "$T/sub.out" && grep -qx "1,1" "$T/sub.out" ||
    { cat "$T/sub.out"; fail "the subscriber's rows"; }

# Ctrl-C at an empty prompt stops the push query; the subscription goes on
key C-c
wait_for "push query stopped"
kill -0 "$SUB" 2>/dev/null || fail "the subscriber ended with the push query"
line "\\q"
wait_for "ares-exit=0"
# the shell has gone: its subscriber ends normally
i=0
while [ $i -lt 50 ] && kill -0 "$SUB" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -0 "$SUB" 2>/dev/null && fail "the subscriber outlived the shell"
wait "$SUB" || fail "the subscriber's exit code after the shell left: $?"

echo "t_shell_tty: all passed"
