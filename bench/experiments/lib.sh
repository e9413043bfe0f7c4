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
    [ -n "${KEEP_SCRATCH:-}" ] || rm -rf "$W"
}
trap exp_cleanup EXIT
trap 'exit 130' INT TERM

die() {
    echo "$(basename "$0"): $*" >&2
    for f in "$CD"/*.log; do [ -f "$f" ] && { echo "--- $f (last 10 lines)" >&2; tail -n 10 "$f" >&2; }; done
    exit 1
}

head -c 32 /dev/urandom | base64 >"$W/secret"
chmod 600 "$W/secret"

# port_of NAME: the port node NAME listens on (from $CD/NAME.log), up to 5 s
port_of() {
    _pi=0
    while [ $_pi -lt 100 ]; do
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
    if [ -z "${CADDR:-}" ]; then
        "$B/ares-node" --name "$_n" --domain "$_d" --listen 127.0.0.1:0 --data "$CD/data-$_n" \
            --secret-file "$W/secret" "$@" >/dev/null 2>"$CD/$_n.log" &
    else
        "$B/ares-node" --name "$_n" --domain "$_d" --listen 127.0.0.1:0 --data "$CD/data-$_n" \
            --secret-file "$W/secret" --join "$CADDR" "$@" >/dev/null 2>"$CD/$_n.log" &
    fi
    CLUSTER_PIDS="$CLUSTER_PIDS $!"
    eval "PID_$_n=$!"
    _p=$(port_of "$_n") || die "node $_n did not start"
    [ -n "${CADDR:-}" ] || CADDR="127.0.0.1:$_p"
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

# wait_alive N: until SHOW NODES lists N ALIVE nodes (10 s)
wait_alive() {
    _wi=0
    while [ $_wi -lt 100 ]; do
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
