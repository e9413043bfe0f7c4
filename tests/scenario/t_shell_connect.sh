#!/bin/sh
# The shell of ares-sql --connect in a real terminal, driven through tmux
# against a real coordinator and a node: the same shell as the embedded one
# (t_shell_tty.sh).  The banner; a statement over two lines (the
# continuation prompt); tab completion of a keyword, of a stream name and of
# a column known only to the coordinator; a push query fed by INSERTs; a
# second push query refused; Ctrl-C clearing typed input, then stopping the
# push query (the coordinator drops it), then at an idle prompt, then a
# SUBSCRIBE (the standing query goes on); \copy
# through the coordinator; \format vertical, \timing, \q; the history kept in $HOME and brought back with Up
# in a second run, Ctrl-D leaving.
# tmux runs on a private socket in ARES_TMP; everything is killed at the end.
set -u
command -v tmux >/dev/null 2>&1 || { echo "skip: tmux is not installed"; exit 0; }
. "$(cd "$(dirname "$0")" && pwd)/t_cluster_lib.inc"
. "$_LIBDIR/t_tmux.inc"
EXTRA_CLEANUP=tm_cleanup
mkdir -p "$T/home"

fail() {
    echo "FAIL: $*"
    tm_screen
    for f in "$T"/*.log; do [ -f "$f" ] && { echo "--- $f (last 15 lines)"; tail -n 15 "$f"; }; done
    echo "FAIL: $*"
    exit 1
}

start_coordinator c0 rack-a
start_member n1 rack-b
wait_alive 2

start() {
    tm_start "cd '$T' && HOME='$T/home' TERM=xterm '$A' --connect '$CADDR' --secret-file '$SECRET'"
}

# ---- run 1
start
wait_for "ares-sql "
wait_for "connected to an Ares cluster"
wait_for "coordinator: $CADDR"
wait_for "ares>"

# a statement over two lines: the same continuation prompt as embedded
line "CREATE STREAM clicks (ts TIMESTAMP, user_id BIGINT,"
wait_for "   ->"
[ "$(last_line)" = "   ->" ] || fail "the continuation prompt: $(last_line)"
line "  url TEXT) WITH (timestamp = 'ts');"
wait_for "CREATE STREAM"

# a stream created by another client: its name and columns come from the
# coordinator
sqlc -e "CREATE STREAM other_side (ts TIMESTAMP, zebra_col BIGINT) WITH (timestamp = 'ts');" ||
    fail "CREATE STREAM from another client"
typ "SELECT zebra"
key Tab
sleep 0.3
typ "FROM other_s"
key Tab
sleep 0.3
line ";"
wait_for "SELECT zebra_col FROM other_side ;"
wait_for "push query running; Ctrl-C to stop"
key C-c
wait_for "push query stopped"

# completion: a keyword (SEL -> SELECT) and a stream name (cli -> clicks)
typ "SEL"
key Tab
sleep 0.3
typ "url, COUNT(*) AS n FROM cli"
key Tab
sleep 0.3
line "WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY url EMIT FINAL;"
wait_for "SELECT url, COUNT(*) AS n FROM clicks WINDOW TUMBLING"
wait_for "push query running; Ctrl-C to stop"

# the push query prints as INSERTs close its windows
line "INSERT INTO clicks VALUES (1000, 1, '/a'), (2000, 2, '/a'), (15000, 1, '/b');"
wait_for "INSERT 3"
wait_re '^ /a *| *2 *$'

# a second push query while one runs is refused
line "SELECT * FROM clicks;"
wait_for "error: a push query or SUBSCRIBE is already running in this shell"

# Ctrl-C with text typed only clears the text (the push query keeps running)
typ "SELECT garbage FORM"
key C-c
wait_for "SELECT garbage FORM^C"
line "INSERT INTO clicks VALUES (30000, 1, '/c');"
wait_for "INSERT 1"
wait_re '^ /b *| *1 *$'
[ "$(count 'error')" -eq 1 ] || fail "the cleared input ran"

# \copy goes through the coordinator, and feeds the push query too
printf 'ts,user_id,url\n41000,3,/d\noops,1,/x\n52000,3,/e\n' >"$T/more.csv"
line "\\copy clicks FROM '$T/more.csv'"
wait_for "COPY 2 (1 line rejected)"
wait_for "$T/more.csv: line 3: column 'ts'"
wait_re '^ /c *| *1 *$'

# Ctrl-C at an empty prompt stops the push query, here and on the cluster
key C-c
wait_for "push query stopped"
wait_for "(4 rows)"
wait_log "$T/c0.log" "push query [0-9]+ ends: its client stopped it" 2 ||
    fail "the coordinator did not drop the push queries"
# and with nothing running it only draws a new prompt: the client stays
key C-c
sleep 0.3
[ "$(last_line)" = "ares>" ] || fail "Ctrl-C at an idle prompt: $(last_line)"

# SUBSCRIBE: Ctrl-C stops the subscription, not the standing query
line "CREATE QUERY per_url AS SELECT url, COUNT(*) AS n FROM clicks WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY url EMIT FINAL;"
wait_for "CREATE QUERY"
line "SUBSCRIBE per_url;"
wait_for "push query running; Ctrl-C to stop"
sqlc -e "INSERT INTO clicks VALUES (61000, 1, '/f'), (75000, 1, '/g');" || fail "INSERT from another client"
wait_re '^ /f *| *1 *$'
key C-c
wait_for "(1 row)"
[ "$(count 'push query stopped')" -eq 3 ] || fail "Ctrl-C did not stop the subscription"
sqlc -e "SHOW QUERIES;" | grep -q '^per_url,RUNNING' || fail "the standing query did not survive its subscriber's Ctrl-C"

# meta-commands: \format vertical, \timing
line "\\format vertical"
wait_for "Output format is vertical."
line "\\timing on"
wait_for "Timing is on."
line "SHOW STREAMS;"
wait_for "-[ RECORD 1 ]"
screen | grep -q '^name *| clicks$' || fail "SHOW STREAMS in vertical format"
screen | grep -q '^Time: [0-9.]* ms$' || fail "\\timing printed no time"

# the coordinator's errors point into the line as typed
line "SHOW QUERIES; SELECT url FROM clicks WHERE nosuch2 > 1;"
wait_for "line 1, column 44: unknown column 'nosuch2'"
caret_under "unknown column 'nosuch2'" "nosuch2 > 1"

# errors show the caret and leave the shell running
line "SELECT url FROM clicks WHERE nosuch > 1 +;"
wait_for "error: line 1, column"
screen | grep -q '^ *\^$' || fail "no caret under the error"

line "\\q"
wait_for "ares-exit=0"
hist | grep -qF "SELECT url, COUNT(*) AS n FROM clicks WINDOW" || fail "history file lacks the SELECT"
hist | grep -qxF "\\format vertical" || fail "history file lacks \\format"

# ---- run 2: the history came back (Up, Up: \q then the statement before it)
start
history_back "SELECT url FROM clicks WHERE nosuch > 1 +;"
key C-u
typ "DESCRIBE cl"
key Tab
sleep 0.3
line ";"
wait_for "DESCRIBE clicks ;"
wait_for "user_id"
key C-d
wait_for "ares-exit=0"

echo "t_shell_connect: all passed"
