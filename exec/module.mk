# exec/batch.c and exec/fmt_*.c are listed in tests/batch.mk (exec_SRCS +=).
exec_SRCS += exec/expr.c exec/table.c exec/meta.c exec/io.c exec/sink.c exec/ftstate.c exec/ops.c exec/agg.c exec/table_agg.c exec/jstore.c exec/tjoin.c exec/join.c exec/stream.c exec/ft.c exec/logship.c exec/epoch.c exec/ingest.c exec/table_pull.c exec/start.c exec/catalog.c exec/push.c exec/deploy.c exec/show.c exec/engine.c
exec_SRCS += exec/agg_window.c exec/agg_fast.c exec/agg_evict.c exec/agg_state.c exec/agg_table.c exec/agg_fn.c
exec_USES := storage planner parser base
UNIT_TESTS += test_exec:exec
test_exec_FILES := $(addprefix tests/unit/test_exec_,fix.c streams.c windows.c tables.c ft.c)
FUZZ_TARGETS += fuzz_logship:exec
