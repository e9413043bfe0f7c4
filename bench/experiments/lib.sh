# Shared by bench/experiments/run.sh, smoke.sh and bench/recovery/run.sh
# (sourced): start ares-node processes on loopback (port 0, the port read
# back from the node's log, so no port is guessed), talk to them with
# ares-sql --connect, and kill every process started here when the script
# exits, whatever the outcome.
# Sourced with the script's arguments ([--build DIR] [--help]; --help prints
# the script's header comment, up to `set -u`) and LIB_NAME (the script's
# name in messages) and LIB_SCRATCH (the scratch directory's prefix) set.
# Sets B (the build directory), TOOL (exp_tool), W (a scratch directory in
# /tmp, removed at exit unless KEEP_SCRATCH is set) and CD (= W).
BUILD=build
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//; /^set -u/d'; exit 0 ;;
    *) echo "$LIB_NAME: unknown option $1 (--help)" >&2; exit 2 ;;
    esac
done
B=$(cd "$BUILD" && pwd) || exit 2
TOOL="$B/bench/exp_tool"
[ -x "$TOOL" ] && [ -x "$B/ares-node" ] && [ -x "$B/ares-sql" ] || {
    echo "$LIB_NAME: build first: make build $BUILD/bench/exp_tool" >&2
    exit 2
}
W=$(mktemp -d "/tmp/$LIB_SCRATCH.XXXXXX")
CD=$W
PIDS=""
CLUSTER_PIDS=""
exp_cleanup() {
    for p in $PIDS $CLUSTER_PIDS; do kill -TERM "$p" 2>/dev/null; done
    sleep 0.3
    for p in $PIDS $CLUSTER_PIDS; do kill -KILL "$p" 2>/dev/null; done
    wait 2>/dev/null
    command -v tb_cleanup >/dev/null && tb_cleanup
    [ -n "${KEEP_SCRATCH:-}" ] || rm -rf "$W"
}
trap exp_cleanup EXIT
trap 'exit 130' INT TERM HUP
trap 'exit 141' PIPE

die() {
    echo "$(basename "$0"): $*" >&2
    for f in "$CD"/*.log; do [ -f "$f" ] && { echo "--- $f (last 10 lines)" >&2; tail -n 10 "$f" >&2; }; done
    exit 1
}

head -c 32 /dev/urandom | base64 >"$W/secret"
chmod 600 "$W/secret"

# port_of NAME [SECONDS]: the port node NAME listens on (from $CD/NAME.log),
# waiting up to SECONDS (5)
port_of() {
    _pi=0 _pmax=$((${2:-5} * 20))
    while [ $_pi -lt $_pmax ]; do
        _pp=$(sed -n "s/.* ares-node $1 (.* listening on [^ ]*:\([0-9]*\), data in.*/\1/p" "$CD/$1.log" 2>/dev/null | head -n 1)
        [ -n "$_pp" ] && { echo "$_pp"; return 0; }
        sleep 0.05
        _pi=$((_pi + 1))
    done
    return 1
}

# start_node NAME DOMAIN [ares-node options...]: the first one (give it
# --coordinator) sets CADDR; the others join it.
start_node() {
    _n=$1 _d=$2
    shift 2
    # on the testbed (bench/testbed/lib.sh), inside the node's CPU cgroup
    _wrap=""
    [ -n "${TB_ROOT:-}" ] && [ -d "$TB_ROOT/$_n" ] && _wrap="tb_run $_n"
    # with a network namespace per domain (tb_netns), in the domain's:
    # nsenter enters only the network namespace (ip netns exec would mount
    # a sysfs of its own over /sys, hiding the cgroup files from which the
    # node reads its capacity)
    _v=$(echo "$_d" | tr -- - _) _host=127.0.0.1 _ns=""
    eval "_ns=\${TB_NS_$_v:-}"
    [ -n "$_ns" ] && { _wrap="$_wrap nsenter --net=/run/netns/$_ns"; eval "_host=\$TB_IP_$_v"; }
    if [ -z "${CADDR:-}" ]; then
        $_wrap "$B/ares-node" --name "$_n" --domain "$_d" --listen "$_host:0" --data "$CD/data-$_n" \
            --secret-file "$W/secret" "$@" >/dev/null 2>"$CD/$_n.log" &
    else
        $_wrap "$B/ares-node" --name "$_n" --domain "$_d" --listen "$_host:0" --data "$CD/data-$_n" \
            --secret-file "$W/secret" --join "$CADDR" "$@" >/dev/null 2>"$CD/$_n.log" &
    fi
    CLUSTER_PIDS="$CLUSTER_PIDS $!"
    eval "PID_$_n=$!"
    [ -n "${START_NOWAIT:-}" ] && [ -n "${CADDR:-}" ] && return 0
    _p=$(port_of "$_n") || die "node $_n did not start"
    [ -n "${CADDR:-}" ] || CADDR="$_host:$_p"
}

# new_cluster DIR: a fresh cluster's scratch directory (stops the previous one)
new_cluster() {
    stop_cluster
    CD="$W/$1"
    mkdir -p "$CD"
    CADDR=""
}

stop_cluster() {
    [ -n "$CLUSTER_PIDS" ] || return 0
    for p in $CLUSTER_PIDS; do kill -TERM "$p" 2>/dev/null; done
    _i=0
    while [ $_i -lt 30 ]; do
        _alive=0
        for p in $CLUSTER_PIDS; do kill -0 "$p" 2>/dev/null && _alive=1; done
        [ $_alive = 0 ] && break
        sleep 0.1
        _i=$((_i + 1))
    done
    for p in $CLUSTER_PIDS; do kill -KILL "$p" 2>/dev/null; done
    for p in $CLUSTER_PIDS; do wait "$p" 2>/dev/null; done
    CLUSTER_PIDS=""
}

# sqlc ARGS...: ares-sql on the cluster
sqlc() {
    "$B/ares-sql" --connect "$CADDR" --secret-file "$W/secret" -q "$@"
}

# wait_alive N: until SHOW NODES lists N ALIVE nodes (30 s: a node capped at a
# small CPU quota is slow to start)
wait_alive() {
    _wi=0
    while [ $_wi -lt 300 ]; do
        [ "$(sqlc -e "SHOW NODES;" 2>/dev/null | grep -c ',ALIVE,')" -eq "$1" ] && return 0
        sleep 0.1
        _wi=$((_wi + 1))
    done
    sqlc -e "SHOW NODES;" >&2
    die "expected $1 alive nodes"
}

# subscribe: SUBSCRIBE q into exp_tool stamp ($CD/sub.csv: each result row
# led by its arrival time, wall-clock ms); sets SUBP and STAMPP
subscribe() {
    rm -f "$CD/sub.fifo"
    mkfifo "$CD/sub.fifo"
    "$TOOL" stamp <"$CD/sub.fifo" >"$CD/sub.csv" &
    STAMPP=$!
    "$B/ares-sql" --connect "$CADDR" --secret-file "$W/secret" -q -e "SUBSCRIBE q;" >"$CD/sub.fifo" 2>"$CD/sub.err" &
    SUBP=$!
    PIDS="$PIDS $STAMPP $SUBP"
    sleep 0.5
}

# start_domains DIR PER COMMON [SLOW]: a fresh cluster of 3 failure domains
# d0 d1 d2 of PER nodes each, named c0 n1 n2 ... in that order, c0 the
# coordinator; every node gets the ares-node options COMMON, and the last
# node of each domain SLOW as well
start_domains() {
    _try=1
    while ! start_domains_once "$@"; do
        # a node capped at 1/50 of a quota has, once in a few hundred
        # starts, not got as far as listening in 30 s: a fresh cluster,
        # rather than a measurement lost (twice at most)
        [ $_try -lt 3 ] || die "node $_late did not start (3 tries)"
        echo "$(basename "$0"): node $_late did not start in 30 s (try $_try of 3): a fresh cluster" >&2
        stop_cluster
        rm -rf "$CD"
        _try=$((_try + 1))
    done
    wait_alive $((3 * $2))
}

# start_domains_once: start_domains' one try; 1 (with _late, the first node
# that did not listen in 30 s) if a node did not start
start_domains_once() {
    new_cluster "$1"
    _i=0
    # the coordinator first; the others at once (a node capped at a small
    # CPU quota takes seconds to start), then each is waited for
    while [ $_i -lt $((3 * $2)) ]; do
        _n=n$_i
        _x=$3
        [ $((_i % $2)) = $(($2 - 1)) ] && _x="$_x ${4:-}"
        [ $_i = 0 ] && _n=c0 _x="$_x --coordinator"
        # shellcheck disable=SC2086
        START_NOWAIT=1 start_node "$_n" "d$((_i / $2))" $_x
        _i=$((_i + 1))
    done
    _i=1
    while [ $_i -lt $((3 * $2)) ]; do
        port_of "n$_i" 30 >/dev/null || { _late=n$_i; return 1; }
        _i=$((_i + 1))
    done
    return 0
}

# start9 DIR COMMON [SLOW]: 9 nodes, d0 = c0 n1 n2, d1 = n3 n4 n5, d2 = n6 n7 n8
start9() {
    start_domains "$1" 3 "$2" "${3:-}"
}

# domain_nodes D: the nodes start9 puts in domain D
domain_nodes() {
    case $1 in d0) echo "c0 n1 n2" ;; d1) echo "n3 n4 n5" ;; *) echo "n6 n7 n8" ;; esac
}

# kill_domain_at MS D: SIGKILL every node of domain D at once at wall-clock
# ms MS (in the background); the kill's time lands in $CD/kill_ms; sets KILLP
kill_domain_at() {
    _kp=""
    for _n in $(domain_nodes "$2"); do _kp="$_kp $(eval echo "\$PID_$_n")"; done
    # shellcheck disable=SC2086
    "$TOOL" killat "$1" $_kp >"$CD/kill_ms" &
    KILLP=$!
}

# same_output REF: the subscriber's rows ($CD/sub.csv, arrival stamps cut)
# equal REF's (same header, same rows in any order); REF.sorted must exist
same_output() {
    cut -d, -f2- "$CD/sub.csv" >"$CD/out.csv"
    [ "$(head -n 1 "$CD/out.csv")" = "$(head -n 1 "$1")" ] || return 1
    tail -n +2 "$CD/out.csv" | sort >"$CD/out.sorted"
    cmp -s "$CD/out.sorted" "$1.sorted"
}

# wait_output REF [TENTHS]: until the subscriber has as many lines as REF
# (at most TENTHS tenths of a second, default 300), then stop it
wait_output() {
    _want=$(wc -l <"$1")
    _i=0
    while [ "$(wc -l <"$CD/sub.csv")" -lt "$_want" ] && [ $_i -lt "${2:-300}" ]; do
        sleep 0.1
        _i=$((_i + 1))
    done
    sleep 0.3
    kill "$SUBP" 2>/dev/null
    wait "$SUBP" 2>/dev/null
    wait "$STAMPP" 2>/dev/null
}

# ---- recovery after a failure (bench/recovery/run.sh, run.sh's recovery phase)
# A windowed query's subscribed rows are arrival,k,n,...,we: n (column 3)
# counts the input rows of the row's window, which ends at event time we
# (the last column); event time maps to wall-clock time as wall = START + we.

# windows SUB START: one line per window: we, rows counted, arrival of its
# last row (wall-clock ms), delay = that arrival - (START + we)
windows() {
    awk -F, -v s="$2" 'NR > 1 { n[$NF] += $3; if ($1 > a[$NF]) a[$NF] = $1 }
        END { for (w in n) printf "%.0f %d %.0f %.0f\n", w, n[w], a[w], a[w] - (s + w) }' "$1" | sort -n
}

# recovery_of WINDOWS KILL_MS START LATE_MS: "RT PRE FD": RT = from the kill
# until the output is back at its pre-failure rate: the arrival of the first
# window that closes after the kill, or of a later one if that came late too
# (its delay more than LATE_MS over PRE, the slowest delay of the windows that
# closed before the kill); FD = the delay of the first window after the kill
recovery_of() {
    awk -v k="$2" -v s="$3" -v late="$4" '
        s + $1 <= k { if ($4 > pre) pre = $4; next }
        !first { first = 1; end = $3; fd = $4; next }
        $4 > pre + late && $3 > end { end = $3 }
        END { if (first) printf "%.0f %d %d\n", end - k, pre + 0, fd; else print "none 0 0" }' "$1"
}

# log_ms FILE ERE: wall-clock ms of the first line of a node log matching ERE
log_ms() {
    _lt=$(grep -E -m 1 "$2" "$1" 2>/dev/null | cut -d' ' -f1 | sed 's/T/ /; s/Z$//')
    [ -n "$_lt" ] && date -u -d "$_lt" +%s%3N
}

# recovery_log KILL_MS HOME: what the logs of the current cluster say about
# the recovery, times in ms from the kill: sets R_DEAD (the coordinator marks
# the first victim DEAD), R_EVENT (the failure event), R_REDEPLOY, R_CAUGHT
# (the sink caught up with its output before the failure), R_ROWS and R_MS
# (the replay at the homes of the stream's partitions: rows, the longest
# duration; HOME is no longer read), R_DONE (the
# replay's end after the redeployment), R_KEPT and R_PROMOTED (stateful tasks
# that took over their state: survivors, promoted replicas), R_STALL (the
# longest a node's event loop went without polling its sockets, ms, as the
# nodes logged it; 0: never long enough to log) and R_SILENT (how many times a
# node declared a peer dead for its silence: a SIGKILLed node's connections
# close at once, so any such line is a live node taken for dead); "?" when
# absent
# (COORD, default c0: the coordinator whose log says when)
recovery_log() {
    for _v in DEAD:"node n[0-9] is DEAD" EVENT:"failure event:" REDEPLOY:"recovered as query" \
        CAUGHT:"caught up with its output before the failure"; do
        _t=$(log_ms "$CD/${3:-c0}.log" "${_v#*:}")
        eval "R_${_v%%:*}=${_t:+$((_t - $1))}"
        eval "R_${_v%%:*}=\${R_${_v%%:*}:-?}"
    done
    # the first redeployment's replays, at every home that replayed (a
    # partitioned stream has one per partition): rows summed, the longest
    # replay, the last end
    # shellcheck disable=SC2046
    set -- $(cat "$CD"/*.log | sed -n 's/.* query \([0-9]*\) (first deployed as [0-9]*): replayed \([0-9]*\) logged rows from offset [-0-9]* (query start [0-9]*) in \([0-9.]*\) ms, \([0-9.]*\) ms after the redeployment.*/\1 \2 \3 \4/p' |
        awk '{ q[NR] = $1; r[NR] = $2; m[NR] = $3; d[NR] = $4; if (!lo || $1 < lo) lo = $1 }
             END { for (i = 1; i <= NR; i++) if (q[i] == lo) { t += r[i]; if (m[i] > mm) mm = m[i]; if (d[i] > dd) dd = d[i] }
                   if (NR) printf "%d %.1f %.1f\n", t, mm, dd }') "?" "?" "?"
    R_ROWS=$1 R_MS=$2 R_DONE=$3
    # shellcheck disable=SC2046
    set -- $(cat "$CD"/*.log | grep -o "took over the state of [0-9]* tasks here ([0-9]* kept, [0-9]* promoted replicas)" |
        tr -d '(' | awk '{ k += $9; p += $11 } END { printf "%d %d\n", k, p }')
    R_KEPT=$1 R_PROMOTED=$2
    R_STALL=$(cat "$CD"/*.log | sed -n 's/.*the event loop went \([0-9]*\) ms without polling.*/\1/p' |
        awk '$1 > m { m = $1 } END { print m + 0 }')
    R_SILENT=$(cat "$CD"/*.log | grep -c "closing (peer dead)")
}
