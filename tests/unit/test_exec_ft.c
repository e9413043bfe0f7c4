/*
 * test_exec: one query split between engines (the remote hooks), and the
 * promotion of a replica.
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

/* The stream of the tests that split one query between engines. */
#define SPLIT_DDL "CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp='ts');"

/* Two engines in one process, one query split between them: the hooks carry
 * rows and watermarks straight across.  The output must equal one engine's. */
static engine *peer_of[2];
static engine *E[2];

static int hook_batch(void *ctx, uint32_t qid, int op, int task, int side, uint64_t tag, int64_t stamp, const void *p,
                      size_t n)
{
    engine *other = *(engine **)ctx;
    xerr err;
    int rc = engine_remote_batch(other, qid, op, task, side, tag, stamp, p, n, &err);
    if (rc) fprintf(stderr, "remote batch: %s\n", err.msg);
    return rc;
}

static int hook_wm(void *ctx, uint32_t qid, int op, int side, int from_task, int64_t wm, uint64_t tag)
{
    engine *other = *(engine **)ctx;
    xerr err;
    int rc = engine_remote_watermark(other, qid, op, side, from_task, wm, tag, &err);
    if (rc) fprintf(stderr, "remote watermark: %s\n", err.msg);
    return rc;
}

void test_distributed_hooks(void **state)
{
    (void)state;
    const char *ddl = SPLIT_DDL;
    const char *q = "CREATE QUERY q WITH (parallelism = 4) AS SELECT k, COUNT(*) AS n, SUM(v) AS s, window_start "
                    "FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k;";
    sbuf data;
    sbuf_init(&data);
    for (int i = 0; i < 5000; i++) sbuf_printf(&data, "%d,%d,%d\n", i * 3, (i * 7919) % 37, i % 11);
    /* reference: one engine */
    engine *ref = open_mem();
    cap rc_;
    exec_out rout = cap_out(&rc_);
    run(ref, &rout, ddl);
    char sel[512];
    snprintf(sel, sizeof sel, "%s", strstr(q, "SELECT"));
    run(ref, &rout, sel);
    ingest(ref, "s", data.p, 1);
    char *want = sorted(rc_.text.p);
    engine_close(ref);
    /* two engines: node 0 has the source and half the keyed tasks, node 1 the rest and the sink */
    cap c;
    exec_out out = cap_out(&c);
    E[0] = open_mem();
    E[1] = open_mem();
    peer_of[0] = E[1];
    peer_of[1] = E[0];
    run(E[0], &out, ddl);
    run(E[1], &out, ddl);
    plan_dag *d;
    xerr err;
    assert_int_equal(engine_plan(E[0], q, &d, &err), 0);
    int n = plan_task_count(d);
    unsigned char own0[64], own1[64];
    int g = 0;
    for (int i = 0; i < d->nops; i++)
        for (int t = 0; t < d->ops[i].parallelism; t++, g++) {
            int mine = d->ops[i].kind == PO_SOURCE || d->ops[i].kind == PO_FILTER ? 0
                       : d->ops[i].kind == PO_SINK                              ? 1
                                                                                : t % 2;
            own0[g] = mine == 0;
            own1[g] = mine == 1;
        }
    plan_free(d);
    engine_remote r0 = {&peer_of[0], hook_batch, hook_wm, NULL}, r1 = {&peer_of[1], hook_batch, hook_wm, NULL};
    if (engine_deploy(E[1], 7, q, own1, n, &r1, &out, NULL, &err)) fail_msg("deploy 1: %s", err.msg);
    if (engine_deploy(E[0], 7, q, own0, n, &r0, &out, NULL, &err)) fail_msg("deploy 0: %s", err.msg);
    int64_t t = 0;
    assert_int_equal(engine_deployed_sink_time(E[0], 7, &t, &err), XE_NOTFOUND); /* the sink runs on 1 */
    assert_int_equal(engine_deployed_sink_time(E[1], 7, &t, &err), 0);
    assert_true(t == INT64_MIN); /* no row yet */
    ingest(E[0], "s", data.p, 1);
    /* the rows' time reached the sink through the remote batches: the
     * projection keeps window_start, the last window starts at 14 s */
    assert_int_equal(engine_deployed_sink_time(E[1], 7, &t, &err), 0);
    assert_true(t == 14000);
    char *got = sorted(c.text.p);
    assert_true(strlen(want) > 100);
    assert_string_equal(got, want);
    free(got);
    free(want);
    assert_int_equal(engine_undeploy(E[0], 7, 0, &err), 0);
    engine_close(E[0]);
    engine_close(E[1]);
    cap_fini(&c);
    cap_fini(&rc_);
    sbuf_fini(&data);
}


/* Replica promotion inside one process: engine 1 runs one of the keyed
 * aggregate tasks and ships its state changes to engine 2; engine 1 is lost
 * half-way through; the query is redeployed with that task on engine 2
 * (promoted), engine 0 keeps its own, the log replays from where the
 * restored states stand.  Every window's row, before and after, must equal
 * one engine's (rows delivered twice are the sink host's to drop). */
static engine *FE[3];
static int f_base[16], f_owner[64], f_dead;
static int64_t f_deltas;

static int f_batch(void *ctx, uint32_t qid, int op, int task, int side, uint64_t tag, int64_t stamp, const void *p,
                   size_t n)
{
    (void)ctx;
    int o = f_owner[f_base[op] + task];
    if (o == f_dead) return 0; /* lost in flight */
    xerr err;
    int rc = engine_remote_batch(FE[o], qid, op, task, side, tag, stamp, p, n, &err);
    if (rc) fprintf(stderr, "remote batch: %s\n", err.msg);
    return rc;
}

static int f_wm(void *ctx, uint32_t qid, int op, int side, int from_task, int64_t wm, uint64_t tag)
{
    int self = *(int *)ctx;
    for (int i = 0; i < 3; i++) {
        if (i == self || i == f_dead) continue;
        xerr err;
        int rc = engine_remote_watermark(FE[i], qid, op, side, from_task, wm, tag, &err);
        if (rc && rc != XE_NOTFOUND) return rc;
    }
    return 0;
}

static int f_state(void *ctx, uint32_t qid, int task, uint32_t tid, uint64_t epoch, const void *p, size_t n)
{
    (void)qid;
    (void)task;
    if (*(int *)ctx == 2) return 0; /* no replica of its own */
    xerr err;
    f_deltas++;
    uint64_t pos[ENGINE_MAX_SRC];
    int npos = 0;
    int rc = engine_replica_apply(FE[2], tid, epoch, p, n, pos, &npos, &err);
    /* the source's home hears it (a lost deployment's late ones: not found) */
    if (!rc && engine_ft_acked(FE[0], qid, task, pos, npos, &err) && err.code != XE_NOTFOUND)
        fail_msg("ack of query %u task %d: %s", qid, task, err.msg);
    if (rc) fprintf(stderr, "replica: %s\n", err.msg);
    return rc;
}

/* The log bytes SHOW STREAMS reports for a stream (its last column). */
static long log_bytes(engine *e, const char *stream)
{
    cap c;
    exec_out o = cap_out(&c);
    run(e, &o, "SHOW STREAMS;");
    long v = -1;
    char *copy = strdup(c.text.p ? c.text.p : "");
    size_t n = strlen(stream);
    for (char *ln = strtok(copy, "\n"); ln; ln = strtok(NULL, "\n"))
        if (!strncmp(ln, stream, n) && ln[n] == ',') v = atol(strrchr(ln, ',') + 1);
    free(copy);
    cap_fini(&c);
    return v;
}

void test_replica_promotion(void **state)
{
    (void)state;
    const char *ddl = SPLIT_DDL;
    const char *q = "CREATE QUERY q WITH (parallelism = 2) AS SELECT k, COUNT(*) AS n, SUM(v) AS s, window_start "
                    "FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k;";
    sbuf a0, a, b;
    sbuf_init(&a0);
    sbuf_init(&a);
    sbuf_init(&b);
    for (int i = 0; i < 20000; i++)
        sbuf_printf(i < 5000 ? &a0 : i < 9000 ? &a : &b, "%d,%d,%d\n", i * 3, (i * 7919) % 37, i % 11);
    engine *ref = open_mem();
    cap rc_;
    exec_out rout = cap_out(&rc_);
    run(ref, &rout, ddl);
    char sel[512];
    snprintf(sel, sizeof sel, "%s", strstr(q, "SELECT"));
    run(ref, &rout, sel);
    ingest(ref, "s", a0.p, 0);
    ingest(ref, "s", a.p, 0);
    long whole = log_bytes(ref, "s");
    ingest(ref, "s", b.p, 1);
    char *want = sorted(rc_.text.p);
    engine_close(ref);

    cap c;
    exec_out out = cap_out(&c);
    int self[3] = {0, 1, 2};
    engine_remote r[3];
    /* a small retention: the log may only let go of what the replicas hold */
    const char *ddl_small = "CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp='ts', retention='4 KB');";
    for (int i = 0; i < 3; i++) {
        FE[i] = open_mem();
        run(FE[i], &out, ddl_small);
        r[i] = (engine_remote){&self[i], f_batch, f_wm, f_state};
    }
    plan_dag *d;
    xerr err;
    assert_int_equal(engine_plan(FE[0], q, &d, &err), 0);
    int n = plan_task_count(d), g = 0;
    for (int i = 0; i < d->nops; i++) {
        f_base[i] = g;
        for (int t = 0; t < d->ops[i].parallelism; t++, g++)
            /* the keyed tasks #1 on engine 1, everything else on engine 0 */
            f_owner[g] = d->ops[i].parallelism > 1 && t == 1 ? 1 : 0;
    }
    plan_free(d);
    f_dead = -1;
    unsigned char own[3][64];
    for (int e = 0; e < 3; e++)
        for (int t = 0; t < n; t++) own[e][t] = f_owner[t] == e;
    engine_deploy_opts fo = {ENGINE_FT_REPLICA, 0, 0, INT64_MIN, 0};
    for (int e = 2; e >= 0; e--)
        if (engine_deploy(FE[e], 7, q, own[e], n, &r[e], e == 0 ? &out : NULL, &fo, &err)) fail_msg("deploy: %s", err.msg);
    ingest(FE[0], "s", a0.p, 0);
    assert_int_equal(engine_commit(FE[1], &err), 0);
    ingest(FE[0], "s", a.p, 0);
    assert_int_equal(engine_commit(FE[1], &err), 0);
    assert_true(f_deltas > 0);
    /* the log let go of what every replica holds: it is near its retention, not whole */
    long kept = log_bytes(FE[0], "s");
    assert_true(kept > 0 && kept < whole / 2);
    /* engine 1 is lost; its tasks go to engine 2, which holds their replica */
    f_dead = 1;
    engine_close(FE[1]);
    assert_int_equal(engine_undeploy(FE[0], 7, 1, &err), 0);
    assert_int_equal(engine_undeploy(FE[2], 7, 1, &err), 0);
    for (int t = 0; t < n; t++)
        if (f_owner[t] == 1) f_owner[t] = 2;
    for (int e = 0; e < 3; e++)
        for (int t = 0; t < n; t++) own[e][t] = f_owner[t] == e;
    fo.prev = 7;
    /* the sink's engine first: the promoted task emits its last results again at once */
    if (engine_deploy(FE[0], 8, q, own[0], n, &r[0], &out, &fo, &err)) fail_msg("redeploy 0: %s", err.msg);
    if (engine_deploy(FE[2], 8, q, own[2], n, &r[2], NULL, &fo, &err)) fail_msg("redeploy 2: %s", err.msg);
    uint64_t from[ENGINE_MAX_SRC], f2[ENGINE_MAX_SRC];
    int st[ENGINE_MAX_SRC], ns;
    assert_int_equal(engine_ft_resume(FE[0], 8, from, st, &ns, &err), 0);
    assert_int_equal(engine_ft_resume(FE[2], 8, f2, st, &ns, &err), 0);
    assert_int_equal(ns, 1);
    /* the sink's engine runs a stateless task (the sink): it asks for the
     * replay from the sink's watermark too (ENGINE_FT_POS_TIMED, which a
     * source's home turns into an offset) */
    assert_true(from[0] & ENGINE_FT_POS_TIMED);
    from[0] &= ENGINE_FT_POS_NONE;
    f2[0] &= ENGINE_FT_POS_NONE;
    if (f2[0] < from[0]) from[0] = f2[0];
    assert_true(from[0] > 0 && from[0] < ENGINE_FT_POS_NONE); /* not from the start: the states were restored */
    int64_t rows;
    assert_int_equal(engine_replay(FE[0], 8, from, 1, &rows, &err), 0);
    ingest(FE[0], "s", b.p, 1);
    /* the sink saw some windows twice (closed before and after the loss): one of each */
    char *got = sorted(c.text.p);
    sbuf u;
    sbuf_init(&u);
    const char *prev = "";
    for (char *ln = strtok(got, "\n"); ln; ln = strtok(NULL, "\n")) {
        if (strcmp(ln, prev)) sbuf_printf(&u, "%s\n", ln);
        prev = ln;
    }
    char *wu = sorted(want);
    sbuf w;
    sbuf_init(&w);
    prev = "";
    for (char *ln = strtok(wu, "\n"); ln; ln = strtok(NULL, "\n")) {
        if (strcmp(ln, prev)) sbuf_printf(&w, "%s\n", ln);
        prev = ln;
    }
    assert_true(w.len > 1000);
    assert_string_equal(u.p, w.p);
    engine_close(FE[0]);
    engine_close(FE[2]);
    free(got);
    free(wu);
    free(want);
    sbuf_fini(&u);
    sbuf_fini(&w);
    sbuf_fini(&a0);
    sbuf_fini(&a);
    sbuf_fini(&b);
    cap_fini(&c);
    cap_fini(&rc_);
}
