# Single-node engine benchmark (issue 3, "Figures"): `make bench-engine`
# builds everything (ares-sql is needed for the CSV figures), then runs
# bench/engine_bench, which prints `figure: name = value` lines.
# ENGINE_BENCH_ARGS passes options, e.g. ENGINE_BENCH_ARGS="--tuples 2000000".
BENCHES += engine_bench
ENGINE_BENCH_ARGS ?=

$(BUILD)/bench/engine_bench: $(BUILD)/bench/engine_bench.o $(call link_libs,exec)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

bench-engine: deps
	@$(MAKE) --no-print-directory build
	@$(MAKE) --no-print-directory $(BUILD)/bench/engine_bench
	./$(BUILD)/bench/engine_bench --ares-sql $(BUILD)/ares-sql $(ENGINE_BENCH_ARGS)
