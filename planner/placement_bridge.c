/*
 * placement_bridge.c: a query's operator DAG as players of the placement game.
 *
 * The placement library knows nothing of plans; this file turns a DAG into
 * its tasks (one per operator task, with a depth, a parallelism, a load and
 * whether it holds state) and its edges (one per pair of communicating tasks,
 * weighted by the share of the stream that crosses it).  The costs are
 * relative estimates, not measurements: what matters to the game is that a
 * join costs more than a filter and that a hash exchange spreads its traffic
 * over all pairs of tasks.
 */
#include "planner/internal.h"

#include <stdio.h>
#include <stdlib.h>

/* Relative CPU per tuple of each operator kind. */
static double op_cost(plan_op_kind k)
{
    switch (k) {
    case PO_SOURCE: return 1.0;   /* decode + log append */
    case PO_FILTER: return 0.3;
    case PO_PROJECT: return 0.3;
    case PO_WINDOW: return 0.2;
    case PO_AGGREGATE: return 1.0;
    case PO_JOIN: return 1.5;
    case PO_HAVING: return 0.2;
    case PO_SINK: return 0.4;     /* encode + write */
    case PO_UNNEST: return 0.5;   /* split + a row per element */
    }
    return 0.5;
}

int plan_placement_tasks(const plan_dag *d, int query, const char *qname, double rate, nirvana_problem *p,
                         int *first, xerr *err)
{
    if (rate <= 0) rate = 0.1;
    int *base = calloc((size_t)d->nops + 1, sizeof *base);
    int *depth = calloc((size_t)d->nops + 1, sizeof *depth);
    if (!base || !depth) {
        free(base);
        free(depth);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    int rc = 0, start = p->ntasks;
    /* ops are in topological order: depth = 1 + max depth of the inputs */
    for (int i = 0; i < d->nops; i++)
        for (int k = 0; k < d->ops[i].ninputs; k++)
            if (depth[d->ops[i].inputs[k]] + 1 > depth[i]) depth[i] = depth[d->ops[i].inputs[k]] + 1;
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
            nt.load = rate * op_cost(op->kind) / op->parallelism;
            nt.stateful = op->kind == PO_AGGREGATE || op->kind == PO_JOIN;
            if (nt.stateful) {
                nt.state_mb = 64.0 / op->parallelism;
                nt.recovery_s = 0.5 + nt.state_mb / 100.0; /* restore at ~100 MB/s */
                nt.replica_load = nt.load * 0.1;
                nt.repl_traffic = rate * 0.05 / op->parallelism;
            }
            rc = nirvana_add_task(p, &nt);
        }
    }
    /* edges: forward pairs task i with task i; exchanges connect all pairs */
    for (int i = 0; i < d->nops && rc >= 0; i++) {
        const plan_op *op = &d->ops[i];
        for (int k = 0; k < op->ninputs && rc >= 0; k++) {
            const plan_op *up = &d->ops[op->inputs[k]];
            double share = rate; /* the stream's share crossing this edge */
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
    free(base);
    free(depth);
    if (rc < 0) return xerr_set(err, rc, "cannot build the placement problem (%s)", xerr_name(rc));
    if (first) *first = start;
    return 0;
}
