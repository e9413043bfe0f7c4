# Stream-table joins (issue 19, section 2): `make bench-table-join` runs
# bench/table_join.sh (rows per second of a LEFT JOIN with a table's current
# row and as of the row's time, beside the same stream without a join;
# figures in docs/benchmarks.md).  TABLE_JOIN_ARGS="ROWS KEYS" scales it.
TABLE_JOIN_ARGS ?=
.PHONY: bench-table-join
bench-table-join:
	@$(MAKE) --no-print-directory build
	nice -n 19 sh bench/table_join.sh $(BUILD) $(TABLE_JOIN_ARGS)
