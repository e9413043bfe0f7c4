# Recovery benchmark (issues 7 and 17): `make bench-recovery` starts 9
# ares-node processes in 3 failure domains, each in a CPU cgroup of its own
# at REC_NODE_CPUS (bench/testbed/lib.sh), kills a whole domain with SIGKILL
# under a windowed aggregation for ft = replica, checkpoint and upstream, with
# Nirvana and round-robin placement, checks every run's output against the
# embedded engine, and measures the throughput cost of replication (replica
# against none), and loses the coordinator's domain once (a standby
# coordinator takes over; REC_COORD=0 leaves that case out).  Prints
# `figure:` lines; about 5 minutes on 2 cores.
# bench/recovery/run.sh --help says what is measured and how (settings
# REC_RATE, REC_MODES, REC_PLACEMENTS, REC_TP_RUNS, ... through the
# environment or the make command line); docs/benchmarks.md ("Recovery") has
# the results.
bench-recovery: deps
	@$(MAKE) --no-print-directory build $(BUILD)/bench/exp_tool
	./bench/recovery/run.sh --build $(BUILD)

# Part of `make bench-smoke`: the same runs, small and short, Nirvana only, no
# throughput runs: every ft mode's output after a domain is SIGKILLed must
# equal the embedded engine's (timings are printed, not checked).
REC_SMOKE = REC_RATE=20000 REC_KEYS=1000 REC_WINDOW=1 REC_SECONDS=6 REC_FAIL_AT=4 REC_PLACEMENTS=nirvana \
            REC_TP_RUNS=0 REC_CHECKPOINT_INTERVAL='1 second' REC_CHECK_ONLY=1 REC_TESTBED=0
