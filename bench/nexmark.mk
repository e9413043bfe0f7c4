# NEXMark (issue 8): the event generator, the oracle check, the single-node figures.
#
#   make bench-smoke     every NEXMark query against sqlite3 on a small seeded data set
#                        (bench/nexmark/check.sh); exits non-zero on any mismatch
#   make bench-nexmark   events/s per core of each query (bench/nexmark/run.sh);
#                        NEXMARK_ARGS passes options, e.g. NEXMARK_ARGS="--events 4000000";
#                        then on 3 nodes (bench/nexmark/cluster.sh, NEXMARK_CLUSTER_ARGS)
#
# nexmark_gen links only libbase.a: the oracle's input must not come from
# the engine under test.  tests/scenario/t_nexmark.sh runs check.sh too.
BENCHES += nexmark_gen
NEXMARK_ARGS ?=
NEXMARK_CLUSTER_ARGS ?=
NEXMARK_SMOKE_ARGS ?=

$(BUILD)/bench/nexmark_gen: $(BUILD)/bench/nexmark/gen.o $(call link_libs,base)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lm

scenario: $(BUILD)/bench/nexmark_gen

bench-smoke:
	@$(MAKE) --no-print-directory build $(BUILD)/bench/nexmark_gen
	./bench/nexmark/check.sh --build $(BUILD) $(NEXMARK_SMOKE_ARGS)
	@$(MAKE) --no-print-directory $(BUILD)/bench/exp_tool && ./bench/experiments/smoke.sh --build $(BUILD)
	$(REC_SMOKE) ./bench/recovery/run.sh --build $(BUILD)

bench-nexmark: deps
	@$(MAKE) --no-print-directory build $(BUILD)/bench/nexmark_gen $(BUILD)/bench/exp_tool
	./bench/nexmark/run.sh --build $(BUILD) $(NEXMARK_ARGS)
	./bench/nexmark/cluster.sh --build $(BUILD) $(NEXMARK_CLUSTER_ARGS)
