/*
 * place.c: the coordinator's task placement, round-robin for now.  The
 * Nirvana game (planner/placement) will replace place_tasks behind the same
 * signature once it can pin tasks; until then this is Storm's EvenScheduler
 * with three rules that keep data off the network where that is free:
 *   - an operator pinned by the caller (sources at their stream's home node,
 *     the sink at the node that delivers results) runs every task there;
 *   - a task fed by a FORWARD edge from an operator of the same parallelism
 *     runs where its upstream task runs (forward chains never cross nodes);
 *   - every other task goes to the next node, in the caller's node order,
 *     that has a free slot; the cursor (*rr) carries over between queries so
 *     that successive queries spread too.
 * Pure: no I/O, no allocation beyond a scratch array.
 */
#include <stdlib.h>

#include "cluster/node.h"

int place_tasks(const plan_dag *d, const place_node *nodes, int nnodes, const int *pin_op, int *rr, int *assign,
                xerr *err)
{
    if (nnodes <= 0) return xerr_set(err, XE_FULL, "no node is alive to run the query");
    int *load = calloc((size_t)nnodes, sizeof *load);
    if (!load) return xerr_set(err, XE_NOMEM, "out of memory");
    for (int i = 0; i < nnodes; i++) load[i] = nodes[i].load;
    int g = 0, rc = 0;
    for (int o = 0; o < d->nops && !rc; o++) {
        const plan_op *op = &d->ops[o];
        int base = g;
        for (int t = 0; t < op->parallelism; t++, g++) {
            int at = -1;
            if (pin_op[o] >= 0) at = pin_op[o];
            else if (op->ninputs == 1 && op->in_edge[0] == EDGE_FORWARD &&
                     d->ops[op->inputs[0]].parallelism == op->parallelism) {
                int ub = 0;
                for (int u = 0; u < op->inputs[0]; u++) ub += d->ops[u].parallelism;
                at = assign[ub + t];
            } else {
                for (int k = 0; k < nnodes; k++) {
                    int c = (*rr + k) % nnodes;
                    if (load[c] < nodes[c].slots) {
                        at = c;
                        *rr = (c + 1) % nnodes;
                        break;
                    }
                }
                if (at < 0) {
                    rc = xerr_set(err, XE_FULL,
                                  "no free slot for task %d of operator %d (%s): every live node is full; "
                                  "add nodes, raise --slots or drop a query",
                                  t, o, plan_op_name(op->kind));
                    break;
                }
            }
            assign[base + t] = at;
            load[at]++;
        }
    }
    free(load);
    return rc;
}
