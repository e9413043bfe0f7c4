/*
 * explain.c: the operator DAG as text (for people) and as JSON (for tools).
 */
#include "planner/internal.h"

#include <string.h>

static const plan_schema *input_schema(const plan_dag *d, const plan_op *op, int i)
{
    return op->ninputs > i ? &d->ops[op->inputs[i]].out : NULL;
}

static void print_list(sbuf *b, plan_expr **v, int n, const plan_schema *in)
{
    for (int i = 0; i < n; i++) {
        if (i) sbuf_adds(b, ", ");
        plan_expr_print(v[i], in, b);
    }
}

static const char *edge_name(plan_edge_kind k)
{
    return k == EDGE_HASH ? "hash" : k == EDGE_GATHER ? "gather" : "forward";
}

static void window_text(const ast_window *w, sbuf *b)
{
    switch (w->kind) {
    case WIN_TUMBLING: sbuf_printf(b, "TUMBLING(size=%lldms", (long long)w->size_ms); break;
    case WIN_HOPPING:
        sbuf_printf(b, "HOPPING(size=%lldms, advance=%lldms", (long long)w->size_ms, (long long)w->advance_ms);
        break;
    case WIN_SESSION: sbuf_printf(b, "SESSION(gap=%lldms", (long long)w->gap_ms); break;
    case WIN_NONE: sbuf_adds(b, "GLOBAL(until end of input"); break;
    }
    if (w->grace_ms) sbuf_printf(b, ", grace=%lldms", (long long)w->grace_ms);
    sbuf_addc(b, ')');
}

/* One line of detail per operator (shared by text and JSON). */
static void op_detail(const plan_dag *d, const plan_op *op, sbuf *b)
{
    const plan_schema *in = input_schema(d, op, 0);
    switch (op->kind) {
    case PO_SOURCE:
        sbuf_printf(b, "%s cols=(", op->stream);
        for (int i = 0; i < op->out.ncols; i++) sbuf_printf(b, "%s%s", i ? ", " : "", op->out.cols[i].name);
        sbuf_addc(b, ')');
        if (op->ts_col >= 0)
            sbuf_printf(b, " time=%s watermark=%lldms", op->out.cols[op->ts_col].name, (long long)op->watermark_ms);
        break;
    case PO_FILTER:
    case PO_HAVING:
        plan_expr_print(op->pred, in, b);
        break;
    case PO_PROJECT:
        for (int i = 0; i < op->nexprs; i++) {
            if (i) sbuf_adds(b, ", ");
            plan_expr_print(op->exprs[i], in, b);
            if (op->exprs[i]->kind != PE_COL || !in || strcmp(in->cols[op->exprs[i]->col].name, op->out.cols[i].name))
                sbuf_printf(b, " AS %s", op->out.cols[i].name);
        }
        break;
    case PO_WINDOW:
        window_text(&op->window, b);
        if (in && op->win_ts_col >= 0) sbuf_printf(b, " time=%s", in->cols[op->win_ts_col].name);
        break;
    case PO_AGGREGATE:
        for (int i = 0; i < op->naggs; i++) {
            if (i) sbuf_adds(b, ", ");
            if (op->aggs[i].fn == FN_COUNT_STAR) sbuf_adds(b, "count(*)");
            else {
                sbuf_printf(b, "%s(%s", op->aggs[i].fn == FN_COUNT_DISTINCT ? "count" : plan_fn_name(op->aggs[i].fn),
                            op->aggs[i].fn == FN_COUNT_DISTINCT ? "DISTINCT " : "");
                plan_expr_print(op->aggs[i].arg, in, b);
                sbuf_addc(b, ')');
            }
        }
        if (op->ngroups) {
            sbuf_adds(b, " group=(");
            print_list(b, op->groups, op->ngroups, in);
            sbuf_addc(b, ')');
        }
        sbuf_printf(b, " emit=%s", op->emit == EMIT_CHANGES ? "CHANGES" : "FINAL");
        break;
    case PO_JOIN: {
        const plan_schema *rin = input_schema(d, op, 1);
        sbuf_adds(b, "on=(");
        for (int i = 0; i < op->njoinkeys; i++) {
            if (i) sbuf_adds(b, " AND ");
            plan_expr_print(op->lkeys[i], in, b);
            sbuf_adds(b, " = ");
            plan_expr_print(op->rkeys[i], rin, b);
        }
        if (op->temporal) {
            sbuf_printf(b, ")%s %s", op->outer ? " left" : "",
                        op->versioned ? "table as of the row's time" : "table's current row");
            if (op->residual) {
                sbuf_adds(b, " and=(");
                plan_expr_print(op->residual, &op->out, b);
                sbuf_addc(b, ')');
            }
        } else
            sbuf_printf(b, ") within=%lldms", (long long)op->within_ms);
        break;
    }
    case PO_UNNEST:
        sbuf_adds(b, "split(");
        plan_expr_print(op->exprs[0], in, b);
        sbuf_adds(b, ", ");
        plan_expr_print(op->exprs[1], in, b);
        sbuf_printf(b, ") AS %s", op->out.cols[op->out.ncols - 1].name);
        break;
    case PO_SINK:
        if (op->limit >= 0) sbuf_printf(b, "limit=%lld", (long long)op->limit);
        break;
    }
}

int plan_explain_text(const plan_dag *d, sbuf *b)
{
    sbuf_printf(b, "DAG: %d operators, %d tasks, %s, emit %s\n", d->nops, plan_task_count(d),
                d->stateful ? "stateful" : "stateless", d->emit == EMIT_CHANGES ? "CHANGES" : "FINAL");
    for (int i = 0; i < d->nops; i++) {
        const plan_op *op = &d->ops[i];
        sbuf_printf(b, "  [%d] %-9s ", op->id, plan_op_name(op->kind));
        op_detail(d, op, b);
        sbuf_printf(b, "\n        parallelism=%d", op->parallelism);
        if (op->nkeys) {
            sbuf_adds(b, " key=(");
            print_list(b, op->keys, op->nkeys, input_schema(d, op, 0));
            sbuf_addc(b, ')');
        }
        for (int k = 0; k < op->ninputs; k++)
            sbuf_printf(b, "%s [%d] %s", k ? "," : " <-", op->inputs[k], edge_name(op->in_edge[k]));
        sbuf_addc(b, '\n');
    }
    return 0;
}

static void json_str(sbuf *b, const char *s)
{
    sbuf_addc(b, '"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') sbuf_printf(b, "\\%c", ch);
        else if (ch < 0x20) sbuf_printf(b, "\\u%04x", ch);
        else sbuf_addc(b, (char)ch);
    }
    sbuf_addc(b, '"');
}

int plan_explain_json(const plan_dag *d, sbuf *b)
{
    sbuf tmp;
    sbuf_init(&tmp);
    sbuf_printf(b, "{\"operators\":[");
    for (int i = 0; i < d->nops; i++) {
        const plan_op *op = &d->ops[i];
        sbuf_printf(b, "%s{\"id\":%d,\"kind\":\"%s\",\"parallelism\":%d,\"detail\":", i ? "," : "", op->id,
                    plan_op_name(op->kind), op->parallelism);
        sbuf_reset(&tmp);
        op_detail(d, op, &tmp);
        json_str(b, tmp.p ? tmp.p : "");
        sbuf_adds(b, ",\"key\":[");
        for (int k = 0; k < op->nkeys; k++) {
            sbuf_reset(&tmp);
            plan_expr_print(op->keys[k], input_schema(d, op, 0), &tmp);
            if (k) sbuf_addc(b, ',');
            json_str(b, tmp.p ? tmp.p : "");
        }
        sbuf_adds(b, "],\"columns\":[");
        for (int k = 0; k < op->out.ncols; k++) {
            sbuf_printf(b, "%s{\"name\":", k ? "," : "");
            json_str(b, op->out.cols[k].name);
            sbuf_printf(b, ",\"type\":\"%s\"}", sql_type_name(op->out.cols[k].type));
        }
        sbuf_adds(b, "]}");
    }
    sbuf_adds(b, "],\"edges\":[");
    int first = 1;
    for (int i = 0; i < d->nops; i++)
        for (int k = 0; k < d->ops[i].ninputs; k++) {
            sbuf_printf(b, "%s{\"from\":%d,\"to\":%d,\"kind\":\"%s\"}", first ? "" : ",", d->ops[i].inputs[k], i,
                        edge_name(d->ops[i].in_edge[k]));
            first = 0;
        }
    sbuf_printf(b, "],\"tasks\":%d,\"stateful\":%s,\"emit\":\"%s\"}\n", plan_task_count(d),
                d->stateful ? "true" : "false", d->emit == EMIT_CHANGES ? "CHANGES" : "FINAL");
    sbuf_fini(&tmp);
    return 0;
}
