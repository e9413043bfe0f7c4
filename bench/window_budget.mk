# Window state under SET memory_budget (issue 19, section 2): `make
# bench-window-budget` runs bench/window_budget.sh (peak RSS and throughput
# with no budget, 2x and 10x over; figures in docs/benchmarks.md).
# WINDOW_BUDGET_ARGS="ROWS KEYS" scales it down, e.g. "1000000 500000".
WINDOW_BUDGET_ARGS ?=
.PHONY: bench-window-budget
bench-window-budget:
	@$(MAKE) --no-print-directory build
	nice -n 19 sh bench/window_budget.sh $(BUILD) $(WINDOW_BUDGET_ARGS)
