# bench/testbed/lib.sh (sourced): real, exclusive CPU capacities for the
# ares-node processes of one machine (issue 17), so that a slow node is slow
# the way a small machine is, not a node that sleeps and hands its CPU to
# the others.
#
# Every node runs in a CPU cgroup of its own with a hard quota (CFS
# bandwidth control): quota microseconds of CPU in every period.
#   - cgroup v2 (cpu.max) where the unified hierarchy offers the cpu
#     controller; otherwise
#   - v1 (cpu.cfs_quota_us, cpu.cfs_period_us) under the cpu hierarchy
#     (/sys/fs/cgroup/cpu on Debian 12 with the legacy layout).
# Where neither is writable, tb_init stops with a message that says what it
# needs.  Nothing here ever falls back to sleeping.
#
# The kernel's smallest quota is 1 ms a period, and its longest period 1 s.
# A group's period is 100 ms unless its share of a CPU needs a longer one to
# keep the quota at 1 ms or more (a 0.5 % node: 1 ms every 200 ms).  A longer
# period makes a node burstier: it may run its whole quota at once and then
# wait out the rest of the period (up to 199 ms for that 0.5 % node), as an
# overloaded small machine queues work.  docs/benchmarks.md ("The testbed").
#
#   tb_init                the parent group ares-tb-PID; removed by tb_cleanup
#   tb_group NAME CPUS     a child group NAME with a quota of CPUS (e.g. 0.25)
#   tb_run NAME CMD...     CMD inside group NAME (the shell moves itself in by
#                          its pid, then execs CMD: $! is CMD's pid)
#   tb_quota NAME CPUS     change NAME's quota while it runs
#   tb_cpu_ms PID          CPU time a process used so far, ms
#   tb_throttled NAME      periods, throttled periods and throttled ms so far
#   tb_netns NET D...      a network namespace per failure domain D (below)
#   tb_cleanup             kill what is left in the groups and remove them,
#                          and the namespaces; call it from the caller's EXIT
#                          trap (bench/experiments/lib.sh does)
# Sets TB_VERSION (1 or 2) and TB_ROOT (the parent group's directory).
#
# Network.  tb_netns NET D1 D2 ... gives each failure domain a network
# namespace of its own, joined by a veth pair to a bridge in the root
# namespace at NET.254 (NET: three octets, e.g. 10.213.7), the domain's
# address NET.i.  Traffic between domains then crosses the kernel's bridge
# and veth devices as it would cross a switch, not loopback.  Per domain D
# (- as _) it sets TB_NS_D (run a node there: ip netns exec $TB_NS_D ...),
# TB_IP_D and TB_VETH_D (the root end of its link: `ip link set $TB_VETH_D
# down` cuts the domain off).  The kernel here has no netem, so the delay
# between domains is ares-node's own --link-delay-ms.  Returns 1, with the
# reason in TB_WHY, where namespaces cannot be made (not root, no
# CAP_NET_ADMIN); a failure after it started stops with a message.
TB_ROOT="" TB_VERSION="" TB_GROUPS="" TB_NETNS="" TB_BRIDGE="" TB_WHY=""

tb_die() {
    echo "testbed: $*" >&2
    exit 2
}

tb_init() {
    [ -n "$TB_ROOT" ] && return 0
    _tbname="ares-tb-$$"
    if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
        TB_VERSION=2
        _tbbase=/sys/fs/cgroup
    elif [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ] || [ -f /sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us ]; then
        TB_VERSION=1
        _tbbase=/sys/fs/cgroup/cpu
        [ -f "$_tbbase/cpu.cfs_quota_us" ] || _tbbase=/sys/fs/cgroup/cpu,cpuacct
    else
        tb_die "no CPU cgroup controller found: the testbed needs cgroup v2 with the cpu controller" \
            "(/sys/fs/cgroup/cgroup.controllers listing cpu) or cgroup v1's cpu hierarchy" \
            "(/sys/fs/cgroup/cpu/cpu.cfs_quota_us), writable (run as root). It never falls back to sleeping."
    fi
    if ! mkdir "$_tbbase/$_tbname" 2>/dev/null; then
        tb_die "cannot create a CPU cgroup under $_tbbase (cgroup v$TB_VERSION): run as root, or give this user" \
            "write access to $_tbbase. It never falls back to sleeping."
    fi
    TB_ROOT="$_tbbase/$_tbname"
    if [ "$TB_VERSION" = 2 ]; then
        # children of the parent need the cpu controller enabled in it
        echo "+cpu" >"$TB_ROOT/cgroup.subtree_control" 2>/dev/null ||
            { rmdir "$TB_ROOT"; TB_ROOT=""; tb_die "cannot enable the cpu controller in $_tbbase/$_tbname"; }
    fi
}

# tb_period CPUS: the period (us) for a quota of CPUS: 100 ms, longer so that
# the quota is at least 1 ms; fails past the kernel's 1 s
tb_period() {
    awk -v c="$1" 'BEGIN { if (c <= 0) exit 1; p = 100000; if (c * p < 1000) p = int(1000 / c + 0.999);
        if (p > 1000000) exit 1; print p }'
}

# tb_set DIR CPUS: write the quota
tb_set() {
    _per=$(tb_period "$2") || tb_die "a quota of $2 CPUs is below the kernel's least (1 ms a second)"
    _quo=$(awk -v c="$2" -v p="$_per" 'BEGIN { printf "%d", c * p + 0.5 }')
    if [ "$TB_VERSION" = 2 ]; then
        echo "$_quo $_per" >"$1/cpu.max" || tb_die "cannot write $1/cpu.max"
    else
        # period first: the quota is checked against it
        echo "$_per" >"$1/cpu.cfs_period_us" || tb_die "cannot write $1/cpu.cfs_period_us"
        echo "$_quo" >"$1/cpu.cfs_quota_us" || tb_die "cannot write $1/cpu.cfs_quota_us"
    fi
}

tb_group() {
    tb_init
    [ -d "$TB_ROOT/$1" ] || mkdir "$TB_ROOT/$1" || tb_die "cannot create $TB_ROOT/$1"
    TB_GROUPS="$TB_GROUPS $1"
    tb_set "$TB_ROOT/$1" "$2"
}

tb_quota() { tb_set "$TB_ROOT/$1" "$2"; }

tb_run() {
    _g=$1
    shift
    [ -n "$TB_ROOT" ] && [ -d "$TB_ROOT/$_g" ] || tb_die "no group $_g (tb_group first)"
    # shellcheck disable=SC2016
    exec sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$TB_ROOT/$_g" "$@"
}

# tb_cpu_ms PID: CPU time (user + system) process PID used so far, ms
tb_cpu_ms() {
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%d\n", ($12 + $13) * 1000 / hz }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# tb_throttled NAME: "PERIODS THROTTLED THROTTLED_MS" of group NAME so far
tb_throttled() {
    awk '$1 == "nr_periods" { p = $2 } $1 == "nr_throttled" { t = $2 }
         $1 == "throttled_time" { ms = $2 / 1e6 } $1 == "throttled_usec" { ms = $2 / 1e3 }
         END { printf "%d %d %.0f\n", p, t, ms }' "$TB_ROOT/$1/cpu.stat" 2>/dev/null
}

tb_netns() {
    _net=$1
    shift
    if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1; then
        TB_WHY="needs root and iproute2 (ip netns)"
        return 1
    fi
    _tag=$(($$ % 100000))
    TB_BRIDGE="arb$_tag"
    ip link add "$TB_BRIDGE" type bridge 2>/dev/null ||
        { TB_BRIDGE=""; TB_WHY="cannot create a bridge (no CAP_NET_ADMIN?)"; return 1; }
    ip addr add "$_net.254/24" dev "$TB_BRIDGE" && ip link set "$TB_BRIDGE" up || tb_die "cannot set up bridge $TB_BRIDGE"
    _i=1
    for _d in "$@"; do
        _v=$(echo "$_d" | tr -- - _)
        _ns="ares$_i-$_tag"
        ip netns add "$_ns" || tb_die "ip netns add $_ns failed"
        TB_NETNS="$TB_NETNS $_ns"
        ip link add "v$_i-$_tag" type veth peer name "p$_i-$_tag" || tb_die "no veth pair for $_ns"
        ip link set "p$_i-$_tag" netns "$_ns" || tb_die "cannot move a veth into $_ns"
        ip link set "v$_i-$_tag" master "$TB_BRIDGE" && ip link set "v$_i-$_tag" up || tb_die "cannot put a veth on the bridge"
        ip -n "$_ns" addr add "$_net.$_i/24" dev "p$_i-$_tag" || tb_die "cannot give $_ns an address"
        ip -n "$_ns" link set "p$_i-$_tag" up && ip -n "$_ns" link set lo up || tb_die "cannot bring the links of $_ns up"
        eval "TB_NS_$_v=$_ns TB_IP_$_v=$_net.$_i TB_VETH_$_v=v$_i-$_tag"
        _i=$((_i + 1))
    done
}

tb_netns_cleanup() {
    for _ns in $TB_NETNS; do
        # shellcheck disable=SC2046
        kill -KILL $(ip netns pids "$_ns" 2>/dev/null) 2>/dev/null
        ip netns del "$_ns" 2>/dev/null
    done
    [ -n "$TB_BRIDGE" ] && ip link del "$TB_BRIDGE" 2>/dev/null
    TB_NETNS="" TB_BRIDGE=""
}

tb_cleanup() {
    tb_netns_cleanup
    [ -n "$TB_ROOT" ] && [ -d "$TB_ROOT" ] || return 0
    for _g in $TB_GROUPS; do
        [ -d "$TB_ROOT/$_g" ] || continue
        # shellcheck disable=SC2046
        kill -KILL $(cat "$TB_ROOT/$_g/cgroup.procs" 2>/dev/null) 2>/dev/null
    done
    _i=0
    while [ $_i -lt 50 ]; do
        _busy=0
        for _g in $TB_GROUPS; do
            [ -d "$TB_ROOT/$_g" ] && ! rmdir "$TB_ROOT/$_g" 2>/dev/null && _busy=1
        done
        [ $_busy = 0 ] && break
        sleep 0.1
        _i=$((_i + 1))
    done
    rmdir "$TB_ROOT" 2>/dev/null || echo "testbed: could not remove $TB_ROOT" >&2
    TB_ROOT=""
}
