/*
 * table_bench: point lookups on a table from one client (issue 19, pull
 * queries).  Loads a table of --keys rows (k BIGINT key, v BIGINT, w TEXT)
 * into an engine on a temporary data directory, then runs --lookups
 * statements `SELECT * FROM t WHERE k = <random key>;` one after another,
 * each parsed, planned and answered from LMDB (exec/table_pull.c), and
 * prints
 *   figure: table_point_lookups_per_s = N 1/s
 * with the rows found as a check (every key is held), and what the process
 * holds in memory after the load and after the lookups (issue 19: a table
 * of 10 million keys in bounded memory):
 *   figure: table_load_rows_per_s = N rows/s
 *   figure: table_rss_anon_mb = N MB      (heap and stacks: what grows with keys if anything is cached)
 *   figure: table_rss_file_mb = N MB      (LMDB's map pages resident now: the kernel's page cache, evictable)
 *   figure: table_rss_peak_mb = N MB      (VmHWM, both together at their peak)
 * Run by `make bench-table` (tests/table_bench.mk); docs/benchmarks.md
 * records it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "exec/exec.h"

static int64_t found;

static int on_begin(void *ctx, const fmt_schema *s, int stream) { (void)ctx, (void)s, (void)stream; return 0; }
static int on_rows(void *ctx, const batch *b) { (void)ctx; found += b->nrows; return 0; }
static int on_end(void *ctx) { (void)ctx; return 0; }
static void on_notice(void *ctx, const char *m) { (void)ctx, (void)m; }

static void print_memory(const char *when)
{
    printf("table: memory %s: anon %.1f MB, file-backed %.1f MB, peak %.1f MB\n", when, base_proc_status_kb(0, "RssAnon") / 1024.0,
           base_proc_status_kb(0, "RssFile") / 1024.0, base_proc_status_kb(0, "VmHWM") / 1024.0);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    long keys = 100000, lookups = 200000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--keys")) keys = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--lookups")) lookups = atol(argv[i + 1]);
        else { fprintf(stderr, "usage: table_bench [--keys N] [--lookups N]\n"); return 2; }
    }
    char dir[] = "/tmp/ares-table-bench.XXXXXX";
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    char data[300];
    snprintf(data, sizeof data, "%s/data", dir);
    engine_opts o = {0};
    o.data_dir = data;
    engine *e;
    xerr err;
    exec_out out = {NULL, on_begin, on_rows, on_end, on_notice};
    if (engine_open(&o, &e, &err) ||
        engine_exec_sql(e, "CREATE TABLE t (k BIGINT, v BIGINT, w TEXT, PRIMARY KEY (k));", &out, &err)) {
        fprintf(stderr, "table_bench: %s\n", err.msg);
        return 1;
    }
    exec_ingest *in;
    if (exec_ingest_open(e, "t", NULL, &in, &err)) { fprintf(stderr, "table_bench: %s\n", err.msg); return 1; }
    char line[96];
    double l0 = now_s();
    for (long k = 0; k < keys; k++) {
        int n = snprintf(line, sizeof line, "%ld,%ld,w%ld\n", k, k * 7 % 1000, k % 300);
        if (exec_ingest_feed(in, line, (size_t)n, &err)) { fprintf(stderr, "table_bench: %s\n", err.msg); return 1; }
    }
    if (exec_ingest_close(in, 0, NULL, &err)) { fprintf(stderr, "table_bench: %s\n", err.msg); return 1; }
    double load_s = now_s() - l0;
    print_memory("after the load");
    srand(7);
    char sql[96];
    double t0 = now_s();
    for (long i = 0; i < lookups; i++) {
        snprintf(sql, sizeof sql, "SELECT * FROM t WHERE k = %ld;", ((long)rand() * 31 + rand()) % keys);
        if (engine_exec_sql(e, sql, &out, &err)) { fprintf(stderr, "table_bench: %s: %s\n", sql, err.msg); return 1; }
    }
    double dt = now_s() - t0;
    print_memory("after the lookups");
    long anon = base_proc_status_kb(0, "RssAnon"), file = base_proc_status_kb(0, "RssFile"), peak = base_proc_status_kb(0, "VmHWM");
    engine_close(e);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) fprintf(stderr, "table_bench: could not remove %s\n", dir);
    if (found != lookups) { fprintf(stderr, "table_bench: %lld rows for %ld lookups\n", (long long)found, lookups); return 1; }
    printf("table: %ld keys, %ld point lookups in %.3f s, each one statement (parse, plan, one LMDB read)\n", keys,
           lookups, dt);
    printf("figure: table_point_lookups_per_s = %.0f 1/s\n", (double)lookups / dt);
    printf("figure: table_load_rows_per_s = %.0f rows/s\n", (double)keys / load_s);
    printf("figure: table_rss_anon_mb = %.1f MB\n", anon / 1024.0);
    printf("figure: table_rss_file_mb = %.1f MB\n", file / 1024.0);
    printf("figure: table_rss_peak_mb = %.1f MB\n", peak / 1024.0);
    return 0;
}
