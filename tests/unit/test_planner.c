/*
 * Unit tests for planner/: name and type checks with their messages, the
 * rewrites (constant folding, predicate pushdown, projection pruning) and the
 * DAG's operators, keys, parallelism and exchange edges.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "planner/planner.h"

typedef struct cat {
    int n;
    plan_stream *s[8];
} cat;

static const plan_stream *find(void *ctx, const char *name)
{
    cat *c = ctx;
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->s[i]->name, name)) return c->s[i];
    return NULL;
}

static void each(void *ctx, void (*fn)(void *, const plan_stream *), void *arg)
{
    cat *c = ctx;
    for (int i = 0; i < c->n; i++) fn(arg, c->s[i]);
}

static cat C;
static plan_catalog CAT = {&C, find, each};

static void add_stream(const char *sql)
{
    ast_stmt *st;
    xerr err;
    assert_int_equal(parse_one(sql, strlen(sql), &st, &err), 0);
    plan_stream *s;
    int rc = plan_stream_from_ast(st, &s, &err);
    if (rc) fail_msg("%s", err.msg);
    C.s[C.n++] = s;
    ast_stmt_free(st);
}

static int setup(void **state)
{
    (void)state;
    C.n = 0;
    add_stream("CREATE STREAM bids (auction BIGINT, bidder BIGINT, price DOUBLE, channel TEXT, ts TIMESTAMP) "
               "WITH (timestamp = 'ts', watermark = '2 seconds')");
    add_stream("CREATE STREAM people (id BIGINT, name TEXT, state TEXT, ts TIMESTAMP) WITH (timestamp = 'ts')");
    add_stream("CREATE STREAM plain (a BIGINT, b TEXT)");
    add_stream("CREATE STREAM lines (ts TIMESTAMP, line TEXT, src TEXT, n BIGINT) WITH (timestamp = 'ts')");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < C.n; i++) plan_stream_free(C.s[i]);
    C.n = 0;
    return 0;
}

/* Plan sql; on success return the DAG's EXPLAIN text (caller frees). */
static char *plan_text(const char *sql, int parallelism, plan_dag **dag_out, xerr *err)
{
    ast_stmt *st;
    if (parse_one(sql, strlen(sql), &st, err)) fail_msg("parse: %s", err->msg);
    plan_opts o = {parallelism};
    plan_dag *d;
    int rc = plan_query(st->select, &CAT, &o, &d, err);
    ast_stmt_free(st);
    if (rc) return NULL;
    sbuf b;
    sbuf_init(&b);
    plan_explain_text(d, &b);
    if (dag_out) *dag_out = d;
    else plan_free(d);
    return sbuf_steal(&b);
}

static void expect_error(const char *sql, int code, const char *fragment, int col)
{
    xerr err;
    char *t = plan_text(sql, 1, NULL, &err);
    if (t) fail_msg("expected an error for: %s\n%s", sql, t);
    assert_int_equal(err.code, code);
    if (!strstr(err.msg, fragment)) fail_msg("message '%s' lacks '%s'", err.msg, fragment);
    if (col) assert_int_equal(err.col, col);
}

static void test_window_dag(void **state)
{
    (void)state;
    xerr err;
    plan_dag *d;
    char *t = plan_text("SELECT auction, COUNT(*) AS n, MAX(price) AS top, window_start, window_end FROM bids "
                        "WINDOW TUMBLING (SIZE 10 SECONDS) WHERE price > 1.5 GROUP BY auction HAVING COUNT(*) >= 3",
                        4, &d, &err);
    assert_non_null(t);
    /* source, filter, window, aggregate, having, project, sink */
    assert_int_equal(d->nops, 7);
    assert_int_equal(d->ops[0].kind, PO_SOURCE);
    assert_int_equal(d->ops[1].kind, PO_FILTER);
    assert_int_equal(d->ops[2].kind, PO_WINDOW);
    assert_int_equal(d->ops[2].in_edge[0], EDGE_HASH);
    assert_int_equal(d->ops[2].parallelism, 4);
    assert_int_equal(d->ops[3].kind, PO_AGGREGATE);
    assert_int_equal(d->ops[4].kind, PO_HAVING);
    assert_int_equal(d->ops[6].kind, PO_SINK);
    assert_int_equal(d->ops[6].in_edge[0], EDGE_GATHER);
    assert_int_equal(d->emit, EMIT_FINAL);
    /* pruning: bidder and channel are never read */
    assert_int_equal(d->ops[0].nsrc_cols, 3);
    assert_non_null(strstr(t, "SOURCE    bids cols=(auction, price, ts)"));
    assert_non_null(strstr(t, "key=(auction)"));
    assert_non_null(strstr(t, "<- [1] hash"));
    assert_int_equal(plan_task_count(d), 1 + 1 + 4 + 4 + 4 + 4 + 1);
    sbuf j;
    sbuf_init(&j);
    plan_explain_json(d, &j);
    assert_non_null(strstr(j.p, "\"kind\":\"AGGREGATE\""));
    assert_non_null(strstr(j.p, "\"edges\":["));
    sbuf_fini(&j);
    free(t);
    plan_free(d);
}

static void test_constant_folding(void **state)
{
    (void)state;
    xerr err;
    char *t = plan_text("SELECT price FROM plain2 WHERE 1 = 1", 1, NULL, &err);
    assert_null(t);
    t = plan_text("SELECT a * (2 + 3) AS x FROM plain WHERE 10 > 2 * 3 AND a > 1", 1, NULL, &err);
    assert_non_null(t);
    assert_non_null(strstr(t, "(a * 5) AS x"));
    assert_non_null(strstr(t, "(TRUE AND (a > 1))") || strstr(t, "(a > 1)"));
    free(t);
}

static void test_join_pushdown(void **state)
{
    (void)state;
    xerr err;
    plan_dag *d;
    char *t = plan_text("SELECT p.name, b.price FROM bids b JOIN people p ON b.bidder = p.id WITHIN 10 SECONDS "
                        "WHERE b.price > 10 AND p.state IN ('OR', 'ID', 'CA') AND b.price < p.id",
                        2, &d, &err);
    if (!t) fail_msg("%s", err.msg);
    /* each side's own predicate sits below the join; the mixed one above */
    int join = -1;
    for (int i = 0; i < d->nops; i++)
        if (d->ops[i].kind == PO_JOIN) join = i;
    assert_true(join > 0);
    assert_int_equal(d->ops[d->ops[join].inputs[0]].kind, PO_FILTER);
    assert_int_equal(d->ops[d->ops[join].inputs[1]].kind, PO_FILTER);
    assert_int_equal(d->ops[join + 1].kind, PO_FILTER);
    assert_int_equal(d->ops[join].njoinkeys, 1);
    assert_int_equal(d->ops[join].in_edge[0], EDGE_HASH);
    assert_non_null(strstr(t, "within=10000ms"));
    free(t);
    plan_free(d);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("SELECT prcie FROM bids", XE_NAME, "did you mean 'price'", 8);
    expect_error("SELECT price FROM bid", XE_NAME, "did you mean 'bids'", 19);
    expect_error("SELECT ts FROM bids b JOIN people p ON b.bidder = p.id WITHIN 1 SECOND", XE_NAME, "ambiguous", 8);
    expect_error("SELECT price + 'x' FROM bids", XE_TYPE, "expects numbers", 0);
    expect_error("SELECT auction FROM bids WHERE SUM(price) > 1", XE_PLAN, "not allowed in WHERE", 32);
    expect_error("SELECT auction, price, COUNT(*) FROM bids GROUP BY auction", XE_PLAN,
                 "must appear in GROUP BY", 17);
    expect_error("SELECT COUNT(*) FROM plain WINDOW TUMBLING (SIZE 1 SECOND)", XE_PLAN, "no event-time column", 0);
    expect_error("SELECT price FROM bids WINDOW TUMBLING (SIZE 1 SECOND)", XE_PLAN, "needs an aggregation", 0);
    expect_error("SELECT lenght(channel) FROM bids", XE_NAME, "did you mean 'length'", 8);
    expect_error("SELECT x.price FROM bids b", XE_NAME, "unknown stream or alias 'x'", 8);
    expect_error("SELECT * FROM bids WHERE price", XE_TYPE, "BOOLEAN", 0);
    expect_error("SELECT COUNT(price), window_start FROM bids", XE_PLAN, "WINDOW", 0);
}

/* A select-list alias used in the same SELECT list, WHERE or HAVING is named
 * as one, not "did you mean" some column (issue 16, item 10); GROUP BY may
 * use it.  Short names get no far-fetched suggestion. */
static void test_alias_and_suggestions(void **state)
{
    (void)state;
    const char *why = "unknown column 'a': a select-list alias cannot be referenced in the same SELECT list, WHERE "
                      "or HAVING; repeat its expression";
    expect_error("SELECT auction AS a, a + 1 FROM bids", XE_NAME, why, 22);
    expect_error("SELECT auction AS a FROM bids WHERE a > 1", XE_NAME, why, 37);
    expect_error("SELECT auction AS a, COUNT(*) AS n FROM bids GROUP BY a HAVING n > 1", XE_NAME,
                 "unknown column 'n': a select-list alias", 64);
    xerr err;
    char *t = plan_text("SELECT auction AS a, COUNT(*) FROM bids GROUP BY a", 1, NULL, &err);
    if (!t) fail_msg("GROUP BY alias: %s", err.msg);
    free(t);
    /* a qualified name is a column, never an alias */
    expect_error("SELECT auction AS a FROM bids WHERE bids.a > 1", XE_NAME, "unknown column 'bids.a'", 37);
    expect_error("SELECT x FROM bids", XE_NAME, "unknown column 'x'", 8);
    expect_error("SELECT tz FROM bids", XE_NAME, "unknown column 'tz'; did you mean 'ts'?", 8);
    expect_error("SELECT pric FROM bids", XE_NAME, "did you mean 'price'?", 8);
}

/* Errors in WITH options point at the option's value (or key). */
static void test_option_positions(void **state)
{
    (void)state;
    struct { const char *sql; int line, col; const char *msg; } cases[] = {
        {"CREATE STREAM s (ts TIMESTAMP) WITH (timestamp = 'tz')", 1, 50, "timestamp column 'tz' is not a column"},
        {"CREATE STREAM s (k TEXT, ts TIMESTAMP) WITH (\n  timestamp = 'k')", 2, 15, "must be TIMESTAMP or BIGINT"},
        {"CREATE STREAM s (ts TIMESTAMP) WITH (timestamp = 'ts', watermark = '2 parsecs')", 1, 68, "parsecs"},
        {"CREATE STREAM s (ts BIGINT) WITH (watermark = '2 seconds')", 1, 35, "needs a 'timestamp' column"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ast_stmt *st;
        xerr err;
        assert_int_equal(parse_one(cases[i].sql, strlen(cases[i].sql), &st, &err), 0);
        plan_stream *ps = NULL;
        assert_true(plan_stream_from_ast(st, &ps, &err) < 0);
        ast_stmt_free(st);
        if (!strstr(err.msg, cases[i].msg)) fail_msg("'%s' lacks '%s'", err.msg, cases[i].msg);
        assert_int_equal(err.line, cases[i].line);
        assert_int_equal(err.col, cases[i].col);
    }
}

/* An unknown function is named as such wherever it is called, before its
 * arguments are checked against GROUP BY (issue 16, item 9). */
static void test_unknown_functions(void **state)
{
    (void)state;
    expect_error("SELECT auction, STDDEV(price) FROM bids GROUP BY auction", XE_NAME,
                 "unknown function 'stddev' (known: count, sum, avg, min, max, abs, ", 17);
    expect_error("SELECT auction, coun(*) FROM bids GROUP BY auction", XE_NAME,
                 "unknown function 'coun'; did you mean 'count'?", 17);
    expect_error("SELECT auction, 1 + avgg(price) FROM bids GROUP BY auction", XE_NAME, "did you mean 'avg'?", 21);
    expect_error("SELECT auction, COUNT(*) FROM bids GROUP BY auction HAVING sums(price) > 1", XE_NAME,
                 "unknown function 'sums'; did you mean 'sum'?", 60);
    expect_error("SELECT auction FROM bids WHERE lenght(channel) > 1", XE_NAME, "did you mean 'length'?", 32);
    expect_error("SELECT COUNT(*) FROM bids GROUP BY uper(channel)", XE_NAME, "did you mean 'upper'?", 36);
    expect_error("SELECT auction, COUNT(*) FROM bids WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY auction "
                 "HAVING MAX(sqr(price)) > 1", XE_NAME, "did you mean 'sqrt'?", 96);
    /* a one-letter name is not "near" every two-letter one */
    expect_error("SELECT f(price) FROM bids", XE_NAME, "unknown function 'f' (known:", 8);
    /* a known function over an ungrouped column is still that error */
    expect_error("SELECT auction, abs(price) FROM bids GROUP BY auction", XE_PLAN, "must appear in GROUP BY", 21);
}

static void test_global_aggregate_and_emit(void **state)
{
    (void)state;
    xerr err;
    plan_dag *d;
    char *t = plan_text("SELECT COUNT(*), SUM(price) FROM bids", 4, &d, &err);
    assert_non_null(t);
    /* no key: one task, gathered */
    for (int i = 0; i < d->nops; i++)
        if (d->ops[i].kind == PO_AGGREGATE) assert_int_equal(d->ops[i].parallelism, 1);
    assert_int_equal(d->emit, EMIT_CHANGES);
    free(t);
    plan_free(d);
    t = plan_text("SELECT auction, COUNT(*) FROM bids GROUP BY auction EMIT FINAL", 1, &d, &err);
    assert_int_equal(d->emit, EMIT_FINAL);
    free(t);
    plan_free(d);
}

static void test_window_columns_before_aggregates(void **state)
{
    (void)state;
    xerr err;
    plan_dag *d;
    char *t = plan_text("SELECT window_start, window_end, auction, COUNT(*), MAX(price) FROM bids "
                        "WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY auction HAVING MIN(price) > 0",
                        1, &d, &err);
    if (!t) fail_msg("%s", err.msg);
    /* aggregate output: auction, count, max, min, window_start, window_end */
    const plan_op *p = NULL;
    for (int i = 0; i < d->nops; i++)
        if (d->ops[i].kind == PO_PROJECT) p = &d->ops[i];
    assert_non_null(p);
    assert_int_equal(p->exprs[0]->col, 4);
    assert_int_equal(p->exprs[1]->col, 5);
    assert_int_equal(p->exprs[2]->col, 0);
    free(t);
    plan_free(d);
}

/* A real query's DAG placed by Nirvana on 9 nodes in 3 domains. */
static void test_dag_placement(void **state)
{
    (void)state;
    xerr err;
    plan_dag *d;
    char *t = plan_text("SELECT auction, COUNT(*), MAX(price) FROM bids WINDOW TUMBLING (SIZE 10 SECONDS) "
                        "GROUP BY auction", 4, &d, &err);
    assert_non_null(t);
    free(t);
    nirvana_problem *p = nirvana_problem_new();
    assert_non_null(p);
    for (int n = 0; n < 9; n++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", n);
        assert_true(nirvana_add_node(p, name, n / 3, 4, n % 3 == 2 ? 0.1 : 1.0) >= 0);
    }
    int first = -1;
    assert_int_equal(plan_placement_tasks(d, 1, "q", 0, p, &first, &err), 0);
    assert_int_equal(first, 0);
    assert_int_equal(p->ntasks, plan_task_count(d));
    assert_true(p->nedges >= 4 * 4); /* at least the hash exchange's pairs */
    nirvana_config c;
    nirvana_config_init(&c);
    nirvana_result *r;
    /* the seed rate is what the live nodes can carry: loads sum to the
     * 6 x 1.0 + 3 x 0.1 CPUs */
    double sum = 0;
    for (int k = 0; k < p->ntasks; k++) sum += p->tasks[k].load;
    assert_true(sum > 0.99 * 6.3 && sum < 1.01 * 6.3);
    assert_int_equal(nirvana_place(p, &c, &r, &err), 0);
    assert_true(r->converged);
    for (int i = 0; i < r->nplayers; i++) {
        assert_true(r->players[i].node >= 0);
        /* the tasks that carry the stream avoid the nodes at a tenth */
        const char *tn = p->tasks[r->players[i].task].name;
        if (r->players[i].replica < 0 && (strstr(tn, "WINDOW") || strstr(tn, "AGGREGATE")))
            assert_int_not_equal(r->players[i].node % 3, 2);
        if (r->players[i].replica >= 0) {
            int primary = r->players[r->players[i].task].node; /* primaries come first, by task */
            assert_int_not_equal(p->nodes[r->players[i].node].domain, p->nodes[primary].domain);
        }
    }
    sbuf b;
    sbuf_init(&b);
    assert_int_equal(nirvana_explain(p, &c, r, &b, &err), 0);
    assert_non_null(strstr(b.p, "AGGREGATE"));
    sbuf_fini(&b);
    nirvana_result_free(r);
    nirvana_problem_free(p);
    plan_free(d);
}

static void test_intervals(void **state)
{
    (void)state;
    int64_t ms;
    xerr err;
    assert_int_equal(plan_parse_interval("2 seconds", &ms, &err), 0);
    assert_int_equal(ms, 2000);
    assert_int_equal(plan_parse_interval("500ms", &ms, &err), 0);
    assert_int_equal(ms, 500);
    assert_int_equal(plan_parse_interval("1.5 minutes", &ms, &err), 0);
    assert_int_equal(ms, 90000);
    assert_int_equal(plan_parse_interval("3", &ms, &err), 0);
    assert_int_equal(ms, 3);
    assert_int_equal(plan_parse_interval("2 fortnights", &ms, &err), XE_INVAL);
    assert_int_equal(plan_parse_interval("abc", &ms, &err), XE_INVAL);
}


/* CROSS JOIN UNNEST(split(...)): a flat map after the source (and the
 * source's own filter), a filter over the element after it, pruning that
 * keeps what split reads, the element bound as alias.column, EXPLAIN. */
static void test_unnest_binding(void **state)
{
    (void)state;
    xerr err;
    plan_dag *d;
    char *t = plan_text("SELECT t.word, COUNT(*) AS n, window_start FROM lines CROSS JOIN UNNEST(split(lower(line), ' ')) "
                        "AS t(word) WINDOW TUMBLING (SIZE 10 SECONDS) WHERE src = 'a' AND word <> '' GROUP BY word "
                        "EMIT FINAL",
                        2, &d, &err);
    if (!t) fail_msg("%s", err.msg);
    /* source, filter (src), unnest, filter (word), window, aggregate, project, sink */
    assert_int_equal(d->nops, 8);
    assert_int_equal(d->ops[1].kind, PO_FILTER);
    assert_int_equal(d->ops[2].kind, PO_UNNEST);
    assert_int_equal(d->ops[2].in_edge[0], EDGE_FORWARD);
    assert_int_equal(d->ops[2].parallelism, 1);
    assert_int_equal(d->ops[3].kind, PO_FILTER);
    assert_int_equal(d->ops[4].kind, PO_WINDOW);
    assert_int_equal(d->ops[4].in_edge[0], EDGE_HASH);
    /* the unnest's output: the pruned source columns, then the element */
    const plan_op *u = &d->ops[2];
    assert_int_equal(u->out.ncols, 4);
    assert_string_equal(u->out.cols[3].name, "word");
    assert_int_equal(u->out.cols[3].type, TY_TEXT);
    assert_int_equal(u->ts_col, 0);
    assert_int_equal(u->nexprs, 2);
    assert_int_equal(u->exprs[0]->kind, PE_FUNC);
    assert_int_equal(d->ops[4].keys[0]->col, 3);
    assert_non_null(strstr(t, "SOURCE    lines cols=(ts, line, src)"));
    assert_non_null(strstr(t, "UNNEST    split(lower(line), ' ') AS word"));
    assert_non_null(strstr(t, "FILTER    (src = 'a')"));
    assert_non_null(strstr(t, "FILTER    (word <> '')"));
    free(t);
    plan_free(d);

    /* SELECT * has the element last; it clashes with no column here */
    t = plan_text("SELECT * FROM lines CROSS JOIN UNNEST(split(line, ',')) w", 1, &d, &err);
    if (!t) fail_msg("%s", err.msg);
    const plan_op *pr = &d->ops[d->nops - 2];
    assert_int_equal(pr->out.ncols, 5);
    assert_string_equal(pr->out.cols[4].name, "w");
    free(t);
    plan_free(d);

    /* a name the source already has is qualified in the unnest's output */
    t = plan_text("SELECT t.line, lines.line FROM lines CROSS JOIN UNNEST(split(line, ',')) t(line)", 1, &d, &err);
    if (!t) fail_msg("%s", err.msg);
    assert_non_null(strstr(t, "AS t_line"));
    free(t);
    plan_free(d);

    /* a subquery under the unnest */
    t = plan_text("SELECT w FROM (SELECT line, ts FROM lines WHERE n > 1) AS x CROSS JOIN UNNEST(split(x.line, ' ')) "
                  "AS t(w)",
                  1, &d, &err);
    if (!t) fail_msg("%s", err.msg);
    free(t);
    plan_free(d);
}

static void test_unnest_errors(void **state)
{
    (void)state;
    expect_error("SELECT * FROM lines CROSS JOIN UNNEST(n) AS t(w)", XE_TYPE,
                 "UNNEST needs an array, such as split(line, ' '); got a BIGINT expression", 39);
    expect_error("SELECT * FROM lines CROSS JOIN UNNEST(split(n, ' ')) AS t(w)", XE_TYPE,
                 "split() needs TEXT for its text, got BIGINT", 45);
    expect_error("SELECT * FROM lines CROSS JOIN UNNEST(split(line, 1)) AS t(w)", XE_TYPE,
                 "split() needs TEXT for its separator, got BIGINT", 51);
    expect_error("SELECT * FROM lines CROSS JOIN UNNEST(split(line)) AS t(w)", XE_PLAN,
                 "split() takes 2 arguments (text, separator), got 1", 39);
    expect_error("SELECT split(line, ' ') FROM lines", XE_TYPE, "split() makes an array", 8);
    expect_error("SELECT * FROM lines WHERE split(line, ' ') = 'a'", XE_TYPE, "CROSS JOIN UNNEST(split(", 27);
    expect_error("SELECT * FROM lines CROSS JOIN UNNEST(split(lnie, ' ')) AS t(w)", XE_NAME, "did you mean 'line'", 45);
    /* the element cannot feed its own split */
    expect_error("SELECT * FROM lines CROSS JOIN UNNEST(split(w, ' ')) AS t(w)", XE_NAME, "unknown column 'w'", 45);
    expect_error("SELECT * FROM lines CROSS JOIN UNNEST(split(line, ' ')) AS lines(w)", XE_NAME,
                 "give UNNEST another alias", 0);
    expect_error("SELECT COUNT(*) FROM lines CROSS JOIN UNNEST(split(MAX(line), ' ')) AS t(w)", XE_PLAN,
                 "not allowed in UNNEST", 0);
    expect_error("SELECT * FROM lines CROSS JOIN UNNEST(split(line, ' ')) AS t(w) JOIN bids ON w = channel "
                 "WITHIN 1 SECOND",
                 XE_PLAN, "cannot be combined with JOIN", 32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_window_dag, setup, teardown),
        cmocka_unit_test_setup_teardown(test_constant_folding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_join_pushdown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_functions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alias_and_suggestions, setup, teardown),
        cmocka_unit_test(test_option_positions),
        cmocka_unit_test_setup_teardown(test_global_aggregate_and_emit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_columns_before_aggregates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dag_placement, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unnest_binding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unnest_errors, setup, teardown),
        cmocka_unit_test(test_intervals),
    };
    return cmocka_run_group_tests_name("planner", tests, NULL, NULL);
}
