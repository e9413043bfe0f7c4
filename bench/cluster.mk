# Cluster benchmark (issue 5, "Figures"): `make bench-cluster` builds
# ares-node and ares-sql, then runs bench/cluster_bench.sh, which starts
# 1 and then 3 ares-node processes on loopback and prints `figure:` lines.
# CLUSTER_BENCH_TUPLES sets the input size (default 2000000).
CLUSTER_BENCH_TUPLES ?= 2000000

bench-cluster: deps
	@$(MAKE) --no-print-directory $(BUILD)/ares-node $(BUILD)/ares-sql
	./bench/cluster_bench.sh $(BUILD) $(CLUSTER_BENCH_TUPLES)
