# Reading history (issue 19, section 3): `make bench-offset` runs
# bench/offset_catchup.sh, the peak memory of a catch-up with offset =
# 'earliest' over logs of 1M and 4M rows, embedded and on a 3-node cluster
# (figures in docs/benchmarks.md).  OFFSET_SIZES="1 4 16" adds sizes.
.PHONY: bench-offset
bench-offset:
	@$(MAKE) --no-print-directory build
	sh bench/offset_catchup.sh $(BUILD)
