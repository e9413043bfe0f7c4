/*
 * placement_bridge.c: a query's operator DAG as players of the placement game.
 *
 * The placement library knows nothing of plans; this file turns a DAG into
 * its tasks (one per operator task, with a depth, a parallelism, a load and
 * whether it holds state) and its edges (one per pair of communicating tasks,
 * weighted by the share of the stream that crosses it).  The costs are
 * the seed model below: per-row CPU costs measured once on this engine,
 * scaled by an input rate, in the units of the nodes' capacities.
 */
#include "planner/internal.h"

#include <stdio.h>
#include <stdlib.h>

/*
 * The seed model (docs/nirvana.md, "Seed costs").  Units are those of the
 * nodes' speeds: a node's speed is its capacity in CPUs (its cgroup quota,
 * its CPUs, or --speed), so a task's load is the CPUs it keeps busy, and a
 * node's L / speed is its utilisation.  Traffic is in units of a 1 Gbit/s
 * link.
 *
 * CPU per input row of each operator kind, in microseconds, as measured on
 * a 9-node loopback cluster of this engine (bench/testbed/calibrate.sh
 * prints them): a task's time includes decoding the batches it receives
 * and encoding what it sends on.  The SOURCE's is decoding the input,
 * appending it to the log and partitioning it, the ingest included.
 */
static double op_cost_us(plan_op_kind k)
{
    switch (k) {
    case PO_SOURCE: return 0.17;
    case PO_FILTER: return 0.3;
    case PO_PROJECT: return 0.3;
    case PO_WINDOW: return 0.5;
    case PO_AGGREGATE: return 0.55;
    case PO_JOIN: return 1.0;
    case PO_HAVING: return 0.2;
    case PO_SINK: return 0.5;
    case PO_UNNEST: return 0.5;   /* split + a row per element */
    }
    return 0.5;
}

/* Rows out per row in: a windowed aggregate emits one row per group and
 * window, about 1 % of what goes in where keys repeat; a filter keeps
 * about half; UNNEST makes a row per element; a join's output is taken
 * as large as its input. */
static double op_out_ratio(plan_op_kind k)
{
    switch (k) {
    case PO_AGGREGATE: return 0.01;
    case PO_FILTER: return 0.5;
    case PO_HAVING: return 0.5;
    case PO_UNNEST: return 7.0; /* words per line of the word count's sentences */
    default: return 1.0;
    }
}

/* What a task costs whatever its rows: the watermarks, epochs and ticks
 * that reach every task about ten times a second, 0.5 to 1 ms of CPU each
 * on the VMs we measured (bench/testbed/calibrate.sh), and a replica's
 * epoch deltas. */
#define SEED_TASK_CPU 0.008
#define SEED_REPLICA_CPU 0.004
#define SEED_ROW_BYTES 32.0   /* an encoded row on the wire */
#define SEED_LINK_BPS 125e6   /* 1 Gbit/s */
#define SEED_UTILISATION 1.0  /* the seed rate is the live nodes' capacity */

int plan_placement_tasks(const plan_dag *d, int query, const char *qname, double rate, nirvana_problem *p,
                         int *first, xerr *err)
{
    int *base = calloc((size_t)d->nops + 1, sizeof *base);
    int *depth = calloc((size_t)d->nops + 1, sizeof *depth);
    double *rows = calloc((size_t)d->nops + 1, sizeof *rows); /* rows into each op per input row */
    if (!base || !depth || !rows) {
        free(base);
        free(depth);
        free(rows);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    int rc = 0, start = p->ntasks;
    /* ops are in topological order: depth = 1 + max depth of the inputs;
     * rows in = the sum of the inputs' rows out (a source: 1) */
    double us_per_row = 0;
    for (int i = 0; i < d->nops; i++) {
        const plan_op *op = &d->ops[i];
        if (!op->ninputs) rows[i] = 1.0;
        for (int k = 0; k < op->ninputs; k++) {
            int u = op->inputs[k];
            if (depth[u] + 1 > depth[i]) depth[i] = depth[u] + 1;
            rows[i] += rows[u] * op_out_ratio(d->ops[u].kind);
        }
        us_per_row += rows[i] * op_cost_us(op->kind);
    }
    if (rate <= 0) {
        /* no measured rate yet: the rate the live nodes can carry */
        double cap = 0;
        for (int n = 0; n < p->nnodes; n++)
            if (p->nodes[n].alive) cap += p->nodes[n].speed;
        double fixed = 0; /* what the tasks cost whatever their rows */
        for (int i = 0; i < d->nops; i++) fixed += d->ops[i].parallelism * SEED_TASK_CPU;
        double room = SEED_UTILISATION * cap - fixed;
        if (room < 0.1 * SEED_UTILISATION * cap) room = 0.1 * SEED_UTILISATION * cap;
        rate = us_per_row > 0 && cap > 0 ? room / (us_per_row * 1e-6) : 1e5;
    }
    double link = rate * SEED_ROW_BYTES / SEED_LINK_BPS; /* the whole input stream, in links */
    for (int i = 0; i < d->nops && rc >= 0; i++) {
        const plan_op *op = &d->ops[i];
        base[i] = p->ntasks;
        for (int t = 0; t < op->parallelism && rc >= 0; t++) {
            nirvana_task nt = {0};
            snprintf(nt.name, sizeof nt.name, "%.20s.%s#%d", qname ? qname : "q", plan_op_name(op->kind), t);
            nt.query = query;
            nt.op = i;
            nt.depth = depth[i];
            nt.parallelism = op->parallelism;
            nt.load = rate * rows[i] * op_cost_us(op->kind) * 1e-6 / op->parallelism + SEED_TASK_CPU;
            nt.stateful = op->kind == PO_AGGREGATE || op->kind == PO_JOIN;
            if (nt.stateful) {
                nt.state_mb = 64.0 / op->parallelism;
                nt.recovery_s = 0.5 + nt.state_mb / 100.0; /* restore at ~100 MB/s */
                nt.replica_load = (nt.load - SEED_TASK_CPU) * 0.1 + SEED_REPLICA_CPU;
                /* an epoch's delta: the groups it changed, about its output */
                nt.repl_traffic = link * rows[i] * op_out_ratio(op->kind) / op->parallelism;
            }
            rc = nirvana_add_task(p, &nt);
        }
    }
    /* edges: forward pairs task i with task i; exchanges connect all pairs */
    for (int i = 0; i < d->nops && rc >= 0; i++) {
        const plan_op *op = &d->ops[i];
        for (int k = 0; k < op->ninputs && rc >= 0; k++) {
            const plan_op *up = &d->ops[op->inputs[k]];
            /* the upstream op's output crosses this edge */
            double share = link * rows[op->inputs[k]] * op_out_ratio(up->kind);
            if (op->in_edge[k] == EDGE_FORWARD && up->parallelism == op->parallelism) {
                for (int t = 0; t < op->parallelism && rc >= 0; t++)
                    rc = nirvana_add_edge(p, base[op->inputs[k]] + t, base[i] + t, share / op->parallelism);
            } else {
                double w = share / ((double)up->parallelism * op->parallelism);
                for (int a = 0; a < up->parallelism && rc >= 0; a++)
                    for (int b = 0; b < op->parallelism && rc >= 0; b++)
                        rc = nirvana_add_edge(p, base[op->inputs[k]] + a, base[i] + b, w);
            }
        }
    }
    free(rows);
    free(base);
    free(depth);
    if (rc < 0) return xerr_set(err, rc, "cannot build the placement problem (%s)", xerr_name(rc));
    if (first) *first = start;
    return 0;
}
