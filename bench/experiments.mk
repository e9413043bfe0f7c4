# The paper's experiments (issues 8 and 17): `make experiments` runs the
# testbed (bench/testbed/lib.sh): 9 ares-node processes in 3 failure domains
# on this machine, each in a CPU cgroup of its own with a hard quota, one
# per domain at 1/EXP_SLOW_FACTOR of the others' (default 50), cross-domain
# --link-delay-ms; it calibrates the quotas (bench/testbed/calibrate.sh),
# then, EXP_RUNS times (3), runs the same windowed aggregation under each
# placement (nirvana, nirvana-no-recovery, round-robin, resource-aware,
# random), the paper's word count and TPC-H-like join (bench/workloads/,
# EXP_WORKLOADS) under each, and kills a whole domain under each
# fault-tolerance mode (replica, checkpoint, upstream); prints `figure:` lines, the medians of the runs' ratios
# (nirvana_vs_rr_*, nirvana_vs_ra_*) next to the paper's claims, and draws
# SVG plots into docs/plots/.  Needs root (cgroups).  About 23 minutes a run with every strategy and both workloads (70 minutes for 3 runs in session 10)
# on 2 cores with every strategy.
# bench/experiments/run.sh --help says what is measured and how; docs/benchmarks.md
# ("The paper's experiments") has the results.
#
#   EXP_RUNS        runs of everything (default 3)
#   EXP_SLOW_FACTOR the slowed nodes' quota is the others' / this (default 50)
#   EXP_TUPLES      rows per throughput run (default 15000000)
#   EXP_SECONDS     the longest a throughput run measures, s (default 15)
#   EXP_LAT_SECONDS seconds of input per latency run (default 10)
#   EXP_RATE        the latency runs' steady input rate, rows/s (default 20000)
#   EXP_WORKLOADS   the paper's workloads measured (default "wordcount tpch"; empty: none)
#   FT_MODES        fault-tolerance modes of the recovery phase (default
#                   "replica checkpoint upstream"; empty: no recovery phase)
#   more settings (EXP_STRATEGIES, EXP_TOTAL_CPUS, EXP_LINK_DELAY_MS, ...) through
#   the environment: bench/experiments/run.sh --help
#
# `make bench-smoke` also runs bench/experiments/smoke.sh: every placement on
# a small cluster gives the embedded engine's output.  A run of `make
# experiments` whose output after a recovery is wrong exits 1.
EXP_RUNS ?= 3
EXP_SLOW_FACTOR ?= 50
EXP_TUPLES ?= 15000000
EXP_SECONDS ?= 15
EXP_LAT_SECONDS ?= 10
EXP_RATE ?= 20000
EXP_WORKLOADS ?= wordcount tpch
FT_MODES ?= replica checkpoint upstream

$(BUILD)/bench/exp_tool: $(BUILD)/bench/experiments/exp_tool.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^

experiments: deps
	@$(MAKE) --no-print-directory build $(BUILD)/bench/exp_tool $(BUILD)/bench/words_gen $(BUILD)/bench/tpch_gen
	./bench/testbed/calibrate.sh --build $(BUILD)
	EXP_RUNS=$(EXP_RUNS) EXP_SLOW_FACTOR=$(EXP_SLOW_FACTOR) EXP_TUPLES=$(EXP_TUPLES) EXP_SECONDS=$(EXP_SECONDS) \
	    EXP_LAT_SECONDS=$(EXP_LAT_SECONDS) EXP_RATE=$(EXP_RATE) FT_MODES="$(FT_MODES)" \
	    EXP_WORKLOADS="$(EXP_WORKLOADS)" ./bench/experiments/run.sh --build $(BUILD)
scenario: $(BUILD)/bench/exp_tool
