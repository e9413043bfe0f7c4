/*
 * test_exec: the unit tests of exec/ (the engine end to end through its
 * API: statements, ingest, windows, joins, tables, late rows, restart from
 * LMDB, the remote hooks), one binary of several files: test_exec.c (main),
 * test_exec_fix.c (the fixture), test_exec_streams.c, test_exec_windows.c,
 * test_exec_tables.c and test_exec_ft.c.
 */
#ifndef TESTS_UNIT_TEST_EXEC_H
#define TESTS_UNIT_TEST_EXEC_H

#include "exec/exec.h"

/* ------------------------------------------------------------------ test_exec_fix.c */

typedef struct cap {
    fmt_encoder *enc;
    sbuf text;     /* every row as CSV (no header) */
    sbuf notices;
    int begins, ends;
} cap;

int cap_begin(void *ctx, const fmt_schema *cols, int stream);
int cap_rows(void *ctx, const batch *b);
int cap_end(void *ctx);
void cap_notice(void *ctx, const char *msg);
exec_out cap_out(cap *c);
void cap_fini(cap *c);
char *sorted(const char *s);
engine *open_mem(void);
void run(engine *e, const exec_out *out, const char *sql);
void ingest(engine *e, const char *stream, const char *data, int end);
char *file_sorted(const char *path);
void file_text(const char *path, sbuf *text);
void rm_dir(const char *dir);
engine *open_tmp(char *dir, char *data, size_t n, engine_opts *o);
engine *reopen_subscribed(engine *e, const engine_opts *o, cap *s, exec_out *sub, const char *name);
engine *restart_between(const engine_opts *o, const exec_out *out, const char *sql, const char *in1,
                        const char *in2);

/* ------------------------------------------------------------------ the tests */

void test_issue_example(void **state);
void test_task_measurements(void **state);
void test_hopping_and_having(void **state);
void test_windows_many_groups(void **state);
void test_fast_agg_same_as_general(void **state);
void test_memory_budget_same_output(void **state);
void test_many_open_windows(void **state);
void test_session_windows(void **state);
void test_emit_changes_random(void **state);
void test_late_rows_counted(void **state);
void test_no_event_time(void **state);
void test_idle_cut_and_rereads(void **state);
void test_global_and_where(void **state);
void test_join_within(void **state);
void test_stream_table_join(void **state);
void test_partitions(void **state);
void test_unnest_flat_map(void **state);
void test_errors(void **state);
void test_restart_keeps_query_and_state(void **state);
void test_derived_streams(void **state);
void test_derived_feed(void **state);
void test_table_log_copy(void **state);
void test_table_changelog(void **state);
void test_table_as_retracts(void **state);
void test_table_as_having(void **state);
void test_push_changes(void **state);
void test_upsert_sink(void **state);
void test_offset_earliest(void **state);
void test_distributed_hooks(void **state);
void test_subquery_highest_bid(void **state);
void test_log_retention(void **state);
void test_replica_promotion(void **state);
void test_log_copy(void **state);
void test_window_start_time_join(void **state);

#endif
