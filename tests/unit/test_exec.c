/*
 * Unit tests for exec/: the engine end to end through its API (statements,
 * ingest, windows, joins, late rows, restart from LMDB), with results
 * captured as CSV text.  The tests are in test_exec_*.c (test_exec.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/test_exec.h"

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_issue_example),
        cmocka_unit_test(test_task_measurements),
        cmocka_unit_test(test_hopping_and_having),
        cmocka_unit_test(test_windows_many_groups),
        cmocka_unit_test(test_fast_agg_same_as_general),
        cmocka_unit_test(test_memory_budget_same_output),
        cmocka_unit_test(test_many_open_windows),
        cmocka_unit_test(test_session_windows),
        cmocka_unit_test(test_emit_changes_random),
        cmocka_unit_test(test_late_rows_counted),
        cmocka_unit_test(test_no_event_time),
        cmocka_unit_test(test_idle_cut_and_rereads),
        cmocka_unit_test(test_global_and_where),
        cmocka_unit_test(test_join_within),
        cmocka_unit_test(test_stream_table_join),
        cmocka_unit_test(test_partitions),
        cmocka_unit_test(test_unnest_flat_map),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_restart_keeps_query_and_state),
        cmocka_unit_test(test_derived_streams),
        cmocka_unit_test(test_derived_feed),
        cmocka_unit_test(test_table_log_copy),
        cmocka_unit_test(test_table_changelog),
        cmocka_unit_test(test_table_as_retracts),
        cmocka_unit_test(test_table_as_having),
        cmocka_unit_test(test_push_changes),
        cmocka_unit_test(test_upsert_sink),
        cmocka_unit_test(test_offset_earliest),
        cmocka_unit_test(test_distributed_hooks),
        cmocka_unit_test(test_subquery_highest_bid),
        cmocka_unit_test(test_log_retention),
        cmocka_unit_test(test_replica_promotion),
        cmocka_unit_test(test_log_copy),
        cmocka_unit_test(test_window_start_time_join),
    };
    return cmocka_run_group_tests_name("exec", tests, NULL, NULL);
}
