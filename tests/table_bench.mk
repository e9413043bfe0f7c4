# Point lookups on a table from one client (issue 19, pull queries):
# `make bench-table` builds tests/tools/table_bench.c against the engine
# and prints `figure: table_point_lookups_per_s = N 1/s`.
# TABLE_BENCH_ARGS passes options, e.g. TABLE_BENCH_ARGS="--keys 1000000".
TABLE_BENCH_ARGS ?=

$(BUILD)/tests/table_bench: $(BUILD)/tests/tools/table_bench.o $(call link_libs,exec)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

bench-table: deps
	@$(MAKE) --no-print-directory $(BUILD)/tests/table_bench
	./$(BUILD)/tests/table_bench $(TABLE_BENCH_ARGS)

.PHONY: bench-table
