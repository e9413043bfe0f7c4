#!/bin/sh
# Chaos (issue 7): 9 ares-node processes in 3 failure domains run a windowed
# aggregation and a windowed stream-stream join (WITHIN) under steady input
# on two streams while whole domains fail (the workload is ft_cluster in
# t_cluster_lib.inc).  Each subscriber's output must equal the embedded
# (no-failure) run, row for row, and no node outside the failed domains may
# be declared dead (the others are busy with ingest, replay and recovery,
# not dead).  Two clusters, one after the other, each losing two domains:
#   run 1: every node of rack-b SIGKILLed at once; once that is recovered,
#          every node of rack-c too (rack-a alone still has the slots);
#   run 2: rack-c SIGKILLed; once that is recovered, rack-b stopped with
#          SIGSTOP: silent, its connections left open.  The coordinator must
#          declare it dead after --dead-ms (600 here, --heartbeat-ms 50),
#          through the same failure event as a kill.
# rack-a is failed by t_ft_coord_chaos.sh.  ARES_FT=mode runs the queries
# with that ft mode instead of the cluster's default.  Prints the measured
# detection, failure event, redeployment and replay times.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"
export LC_ALL=C

[ -n "${ARES_FT:-}" ] && FT_SET="SET ft = '$ARES_FT';"
ft_data 40000 500   # per stream: 200 s of event time, about 3.5 s of input
echo "note: rack-a (c0, n1, n2) holds the coordinator and the streams' homes; t_ft_coord_chaos.sh fails it" \
    "(with a standby coordinator in rack-b)"

# chaos RUN SIG:DOMAIN SIG:DOMAIN [ares-node options]: a cluster under
# steady input loses the first domain (every node gets SIG at once), then,
# once that is recovered, the second; the output is checked at the end
chaos() {
    run=$1 first=$2 second=$3
    shift 3
    ft_cluster "$run" "$@"
    ft_feed
    sleep 0.8
    for f in $first $second; do
        [ "$f" = "$first" ] || sleep 0.5
        case ${f%:*} in KILL) fig=ft_kill_detect_ms ;; *) fig=ft_silent_detect_ms ;; esac
        # shellcheck disable=SC2046
        ft_fail "${f#*:}" $fig signal_nodes "${f%:*}" $(ft_nodes_of "${f#*:}")
    done
}

# ---- run 1: SIGKILL rack-b, then SIGKILL rack-c
chaos run1 KILL:rack-b KILL:rack-c
ft_finish rack-b rack-c
ft_figures
echo "ok: run 1, the output after losing rack-b and then rack-c equals the no-failure run"
stop_cluster

# ---- run 2: SIGKILL rack-c, then SIGSTOP rack-b (silent)
HB=50 DEAD=600
chaos run2 KILL:rack-c STOP:rack-b --heartbeat-ms $HB --dead-ms $DEAD
# the last heartbeat may have left up to one period before the stop; the
# coordinator looks every period; the machine is shared: slack above
took=$FT_DETECT_MS
[ "$took" -ge $((DEAD - HB - 30)) ] || fail "rack-b declared dead $took ms after SIGSTOP, before --dead-ms $DEAD"
[ "$took" -le $((DEAD + 2 * HB + 1000)) ] || fail "rack-b declared dead only $took ms after SIGSTOP (--dead-ms $DEAD)"
for v in $(ft_nodes_of rack-b); do
    grep -q "connection to $v peer dead" c0.log || fail "the coordinator did not close $v's connection as silent (peer dead)"
done
ft_finish rack-c rack-b
ft_figures
echo "ok: run 2, the output after losing rack-c (SIGKILL) and then rack-b (SIGSTOP) equals the no-failure run"
stop_cluster
