# The paper's workloads beside ours (issue 17, section 4): generators for
# the windowed word count and the TPC-H-like windowed join, whose queries
# and sqlite3 oracles are in bench/workloads/ (README.md there says how to
# run them).  Both generators link only libbase.a: the oracle's input must
# not come from the engine under test.  tests/scenario/t_workloads.sh runs
# both workloads embedded and on 3 nodes against sqlite3.
BENCHES += words_gen tpch_gen

$(BUILD)/bench/words_gen: $(BUILD)/bench/workloads/words_gen.o $(call link_libs,base)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lm

$(BUILD)/bench/tpch_gen: $(BUILD)/bench/workloads/tpch_gen.o $(call link_libs,base)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lm

workloads: $(BUILD)/bench/words_gen $(BUILD)/bench/tpch_gen
scenario: $(BUILD)/bench/words_gen $(BUILD)/bench/tpch_gen
.PHONY: workloads
