/*
 * Unit tests for cluster/place.c's use of measured inputs: place_build
 * replaces a query's seed loads, recovery and edge traffic by what its
 * place_meas says (each edge to the right downstream task), keeps the
 * seeds for EXPLAIN (place_player_inputs), leaves a query without
 * measurements on its seeds, and raises distances where the nodes'
 * measured round trips say more than their domains.  Pure: a hand-built
 * DAG, no nodes, no sockets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "cluster/node.h"

/* SOURCE (1 task) -> AGGREGATE (2, hash) -> SINK (1): tasks 0, 1-2, 3. */
static void dag_of(plan_dag *d, plan_op ops[3])
{
    memset(ops, 0, 3 * sizeof *ops);
    ops[0] = (plan_op){.id = 0, .kind = PO_SOURCE, .parallelism = 1};
    ops[1] = (plan_op){.id = 1, .kind = PO_AGGREGATE, .parallelism = 2, .ninputs = 1, .inputs = {0},
                       .in_edge = {EDGE_HASH}};
    ops[2] = (plan_op){.id = 2, .kind = PO_SINK, .parallelism = 1, .ninputs = 1, .inputs = {1},
                       .in_edge = {EDGE_HASH}};
    *d = (plan_dag){.nops = 3, .ops = ops, .sink = 2, .stateful = 1};
}

/* The traffic of the edge from -> to in p (-1 when there is none). */
static int near(double a, double b) { return fabs(a - b) <= 1e-12 * (fabs(a) + fabs(b)); }

static double edge(const nirvana_problem *p, int from, int to)
{
    for (int e = 0; e < p->nedges; e++)
        if (p->edges[e].from == from && p->edges[e].to == to) return p->edges[e].traffic;
    return -1;
}

static void test_measured_inputs_replace_the_seeds(void **state)
{
    (void)state;
    plan_op ops[3];
    plan_dag d;
    dag_of(&d, ops);
    double rtt0[3] = {0, 0.1, 20}, rtt2[3] = {20, 0, 0};
    place_node pl[3] = {{.name = "a", .domain = "x", .slots = 8, .speed = 1, .alive = 1, .rtt_ms = rtt0},
                        {.name = "b", .domain = "x", .slots = 8, .speed = 1, .alive = 1},
                        {.name = "c", .domain = "y", .slots = 8, .speed = 0.5, .alive = 1, .rtt_ms = rtt2}};
    static const double src_traffic[2] = {3e-4, 1e-5}, agg_traffic[1] = {2e-6};
    place_meas m[4] = {
        {.load = 0.5, .rows_in = 1000, .rows_in_s = 100, .cpu_ns = 7000000, .ndest = 2, .traffic = src_traffic},
        {.load = 0.2, .state_mb = 2, .recovery_s = 0.52, .replica_load = 0.024, .repl_traffic = 1e-6, .ndest = 1,
         .traffic = agg_traffic},
        {.load = 0.01, .recovery_s = 0.5, .replica_load = 0.005, .ndest = 1, .traffic = agg_traffic},
        {.load = 0.001},
    };
    int home[4] = {0, -1, -1, 0}, at[4] = {0, 1, 2, 0}, rat[4] = {-1, 2, 0, -1};
    place_query qs[2] = {{.d = &d, .name = "q", .home = home, .node = at, .rnode = rat, .fixed = 1, .meas = m},
                         {.d = &d, .name = "r", .home = home, .node = at, .rnode = rat, .fixed = 1}};
    place_game g;
    xerr err;
    assert_int_equal(place_build(&g, pl, 3, qs, 2, 1, NIRVANA_FULL, &err), 0);
    const nirvana_problem *p = g.p;
    int a = g.first[0], b = g.first[1];
    /* q: measured, played at the peak: its loads and replicas' (0.74 CPUs)
     * grow to fill the 2.5 CPUs of the live nodes; recovery does not scale */
    double k = g.peak;
    assert_true(fabs(k - 2.5 / (0.5 + 0.2 + 0.01 + 0.001 + 0.024 + 0.005)) < 1e-12);
    assert_true(near(p->tasks[a].load, 0.5 * k) && near(p->tasks[a + 1].load, 0.2 * k) &&
                near(p->tasks[a + 3].load, 0.001 * k));
    assert_true(p->tasks[a + 1].recovery_s == 0.52 && near(p->tasks[a + 1].replica_load, 0.024 * k));
    assert_true(near(edge(p, a, a + 1), 3e-4 * k) && near(edge(p, a, a + 2), 1e-5 * k)); /* each to its own task */
    assert_true(near(edge(p, a + 1, a + 3), 2e-6 * k) && near(edge(p, a + 2, a + 3), 2e-6 * k));
    assert_true(g.measured[a] && g.measured[a + 3]);
    /* r: its seeds, the same as q's */
    assert_false(g.measured[b]);
    assert_true(p->tasks[b].load == g.seed[a].load && p->tasks[b].load != 0.5);
    assert_true(edge(p, b, b + 1) == g.seed_out[b] / 2);
    /* EXPLAIN's view: what was measured, at the rate it was measured at */
    place_inputs in;
    place_player_inputs(&g, qs, 0, 0, -1, &in);
    assert_true(in.measured && near(in.load_meas, 0.5) && in.load_seed == g.seed[a].load);
    assert_true(near(in.traffic_meas, 3e-4 + 1e-5) && in.rows_in == 1000 && in.cpu_ms == 7);
    place_player_inputs(&g, qs, 0, 1, 0, &in); /* the replica of AGGREGATE#0 */
    assert_true(near(in.load_meas, 0.024) && near(in.traffic_meas, 1e-6) && in.rec_meas == 0.52);
    place_player_inputs(&g, qs, 1, 1, -1, &in);
    assert_true(!in.measured && isnan(in.load_meas) && isnan(in.rows_in));
    /* distances: a's 20 ms to c (and c's to a) raise a-c to 4; a-b's
     * 0.1 ms stays at the domain's 0.2 */
    assert_non_null(p->dist);
    assert_true(p->dist[0 * 3 + 2] == 20 / MEAS_RTT_REF_MS && p->dist[2 * 3 + 0] == 20 / MEAS_RTT_REF_MS);
    assert_true(p->dist[0 * 3 + 1] == p->d_intra && p->dist[1 * 3 + 2] == p->d_inter);
    assert_int_equal(g.dist_measured, 1);
    place_game_fini(&g);

    /* no round trips: the library's defaults, no matrix */
    for (int i = 0; i < 3; i++) pl[i].rtt_ms = NULL;
    assert_int_equal(place_build(&g, pl, 3, qs, 1, 1, NIRVANA_FULL, &err), 0);
    assert_null(g.p->dist);
    assert_int_equal(g.dist_measured, 0);
    place_game_fini(&g);
}

/* The CPU a node is busy with outside its players' clocked operators: the
 * least of it, over the measured nodes, stays with every node as its
 * background load; the rest of a node's goes into its measured players'
 * loads in proportion to their rows, and so moves with them. */
static void test_unattributed_cpu(void **state)
{
    (void)state;
    plan_op ops[3];
    plan_dag d;
    dag_of(&d, ops);
    place_node pl[2] = {{.name = "a", .domain = "x", .slots = 8, .speed = 1, .alive = 1, .measured = 1, .util = 0.8},
                        {.name = "b", .domain = "x", .slots = 8, .speed = 1, .alive = 1, .measured = 1, .util = 0.15}};
    static const double tr2[2] = {1e-5, 1e-5}, tr1[1] = {1e-6};
    /* source and sink on a (the source 3000 rows/s in and out, the sink 40), one aggregate on each */
    place_meas m[4] = {
        {.load = 0.1, .rows_in_s = 1500, .rows_out_s = 1500, .ndest = 2, .traffic = tr2},
        {.load = 0.05, .rows_in_s = 750, .rows_out_s = 20, .ndest = 1, .traffic = tr1},
        {.load = 0.1, .rows_in_s = 750, .rows_out_s = 20, .ndest = 1, .traffic = tr1},
        {.load = 0.05, .rows_in_s = 40},
    };
    int home[4] = {0, -1, -1, 0}, at[4] = {0, 0, 1, 0};
    place_query q = {.d = &d, .name = "q", .home = home, .node = at, .fixed = 1, .running = 1, .meas = m};
    place_game g;
    xerr err;
    assert_int_equal(place_build(&g, pl, 2, &q, 1, 0, NIRVANA_FULL, &err), 0);
    const nirvana_problem *p = g.p;
    int f = g.first[0];
    /* unattributed: a 0.8 - 0.2 = 0.6, b 0.15 - 0.1 = 0.05, the fixed part */
    assert_true(fabs(p->nodes[0].base_load - 0.05) < 1e-9 && fabs(p->nodes[1].base_load - 0.05) < 1e-9);
    /* a's other 0.55 by rows: source 3000, aggregate 770, sink 40 of 3810;
     * then all of it (0.85 CPUs) at the peak: the 1.9 CPUs the background
     * loads leave */
    double k = g.peak;
    assert_true(fabs(k - 1.9 / 0.85) < 1e-9);
    assert_true(fabs(p->tasks[f].load - k * (0.1 + 0.55 * 3000 / 3810)) < 1e-9);
    assert_true(fabs(p->tasks[f + 1].load - k * (0.05 + 0.55 * 770 / 3810)) < 1e-9);
    assert_true(fabs(p->tasks[f + 3].load - k * (0.05 + 0.55 * 40 / 3810)) < 1e-9);
    assert_true(fabs(p->tasks[f + 2].load - k * 0.1) < 1e-9); /* b had nothing beyond the fixed part */
    place_game_fini(&g);
    /* a query that is not running yet takes nothing: its nodes are only told it */
    q.running = 0;
    assert_int_equal(place_build(&g, pl, 2, &q, 1, 0, NIRVANA_FULL, &err), 0);
    assert_true(fabs(g.peak - (2 - 0.8 - 0.15) / 0.3) < 1e-9);
    assert_true(fabs(g.p->tasks[g.first[0]].load - 0.1 * g.peak) < 1e-9);
    place_game_fini(&g);
}

/* Placing for the peak: a query measured at a low rate plays at the rate
 * the live nodes can carry, so balance weighs what it weighs at that rate;
 * the capacity rule still judges a move at the rate measured.  Both
 * aggregates (0.35 CPUs each, measured) sit with the source and the sink
 * on a; at the peak (x 2/0.85) one of them alone would fill b past 80 %,
 * but at the measured rate it fills b to 35 %, so it moves. */
static void test_peak(void **state)
{
    (void)state;
    plan_op ops[3];
    plan_dag d;
    dag_of(&d, ops);
    place_node pl[2] = {{.name = "a", .domain = "x", .slots = 8, .speed = 1, .alive = 1},
                        {.name = "b", .domain = "x", .slots = 8, .speed = 1, .alive = 1}};
    static const double tr2[2] = {1e-5, 1e-5}, tr1[1] = {1e-6};
    place_meas m[4] = {
        {.load = 0.1, .ndest = 2, .traffic = tr2},
        {.load = 0.35, .ndest = 1, .traffic = tr1},
        {.load = 0.35, .ndest = 1, .traffic = tr1},
        {.load = 0.05},
    };
    int home[4] = {0, -1, -1, 0}, at[4] = {0, 0, 0, 0};
    place_query q = {.d = &d, .name = "q", .home = home, .node = at, .running = 1, .meas = m};
    place_game g;
    xerr err;
    assert_int_equal(place_build(&g, pl, 2, &q, 1, 0, NIRVANA_FULL, &err), 0);
    assert_true(fabs(g.peak - 2 / 0.85) < 1e-12);
    assert_true(0.35 * g.peak > PLACE_MAX_UTIL); /* past the rule at the peak */
    nirvana_rb_move mv[8];
    int nmv = 0;
    assert_int_equal(place_rebalance(&g, &q, 1, 0, mv, 8, &nmv, &err), 0);
    assert_int_equal(nmv, 1);
    assert_true((at[1] == 1) != (at[2] == 1));
    place_game_fini(&g);

    /* measured past the capacity: played as it is, never scaled down */
    for (int t = 0; t < 4; t++) m[t].load *= 4;
    at[1] = at[2] = 0;
    assert_int_equal(place_build(&g, pl, 2, &q, 1, 0, NIRVANA_FULL, &err), 0);
    assert_true(g.peak == 1 && g.p->tasks[g.first[0] + 1].load == 1.4);
    place_game_fini(&g);
    /* idle: at most MEAS_PEAK_MAX */
    for (int t = 0; t < 4; t++) m[t].load = 1e-6;
    assert_int_equal(place_build(&g, pl, 2, &q, 1, 0, NIRVANA_FULL, &err), 0);
    assert_true(g.peak == MEAS_PEAK_MAX);
    place_game_fini(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_measured_inputs_replace_the_seeds),
        cmocka_unit_test(test_unattributed_cpu),
        cmocka_unit_test(test_peak),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
