# The paper's experiments (issue 8): `make experiments` starts 9 ares-node
# processes in 3 failure domains on this machine (3 slowed with --speed,
# cross-domain --link-delay-ms), runs the same workload under each placement
# (nirvana, round-robin, resource-aware) and, for each placement, kills a
# whole domain under each fault-tolerance mode (replica, checkpoint,
# upstream); prints `figure:` lines and the ratios next to the paper's
# claims, and draws SVG plots into docs/plots/.  About 10 minutes on 2 cores.
# bench/experiments/run.sh says what is measured and how; docs/benchmarks.md
# ("The paper's experiments") has the results.
#
#   EXP_TUPLES      rows per throughput run (default 15000000)
#   EXP_SECONDS     the longest a throughput run measures, s (default 30)
#   EXP_LAT_SECONDS seconds of input per latency run (default 30)
#   EXP_RATE        the latency runs' steady input rate, rows/s (default 20000)
#   FT_MODES        fault-tolerance modes of the recovery phase (default
#                   "replica checkpoint upstream"; empty: no recovery phase)
#   more settings (EXP_SPEED, EXP_LINK_DELAY_MS, EXP_STRATEGIES, ...) through
#   the environment: bench/experiments/run.sh --help
#
# `make bench-smoke` also runs bench/experiments/smoke.sh: every placement on
# a small cluster gives the embedded engine's output.  A run of `make
# experiments` whose output after a recovery is wrong exits 1.
EXP_TUPLES ?= 15000000
EXP_SECONDS ?= 30
EXP_LAT_SECONDS ?= 30
EXP_RATE ?= 20000
FT_MODES ?= replica checkpoint upstream

$(BUILD)/bench/exp_tool: $(BUILD)/bench/experiments/exp_tool.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^

experiments: deps
	@$(MAKE) --no-print-directory build $(BUILD)/bench/exp_tool
	EXP_TUPLES=$(EXP_TUPLES) EXP_SECONDS=$(EXP_SECONDS) EXP_LAT_SECONDS=$(EXP_LAT_SECONDS) \
	    EXP_RATE=$(EXP_RATE) FT_MODES="$(FT_MODES)" ./bench/experiments/run.sh --build $(BUILD)
scenario: $(BUILD)/bench/exp_tool
