/*
 * ops.c: the operator runtime of one query.
 *
 * Each plan operator becomes an opinst with one or more tasks.  Batches are
 * pushed: a source slice enters at the source, every operator transforms it
 * into its own reused output batch and hands that to the next operator,
 * through an exchange (hash partitioning on the downstream key) where the
 * plan says so.  Watermarks follow the same path after each slice: an
 * operator's watermark is the minimum over its inputs; the aggregate closes
 * the windows the watermark has passed and emits them, the join expires what
 * can no longer match.  Everything runs on the engine's thread.
 *
 * ops.c sits above the operators it dispatches to (agg.c, join.c): they
 * hand their output back through o->emit_down, which op_init sets to
 * op_emit, so no call runs up from them to here.
 */
#include "exec/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compile_list(opinst *o, plan_expr **v, int n, xprog **progs, int *nprogs, xerr *err)
{
    if (n == 0) return 0;
    xprog *p = realloc(*progs, (size_t)(*nprogs + n) * sizeof *p);
    if (!p) return xerr_set(err, XE_NOMEM, "out of memory");
    *progs = p;
    for (int i = 0; i < n; i++) {
        int rc = xprog_compile(v[i], &p[*nprogs], err);
        if (rc) return rc;
        (*nprogs)++;
    }
    (void)o;
    return 0;
}

static int op_init(query *q, opinst *o, const plan_op *op, xerr *err)
{
    int rc;
    o->op = op;
    o->q = q;
    o->emit_down = op_emit;
    o->ntasks = op->parallelism > 0 ? op->parallelism : 1;
    o->wm[0] = o->wm[1] = WM_MIN;
    o->out_wm = WM_MIN;
    if ((rc = batch_init(&o->out, op->out.ncols, 256))) return xerr_set(err, rc, "out of memory");
    switch (op->kind) {
    case PO_FILTER:
    case PO_HAVING:
        return compile_list(o, (plan_expr **)&op->pred, 1, &o->progs, &o->nprogs, err);
    case PO_UNNEST:
        return compile_list(o, op->exprs, op->nexprs, &o->progs, &o->nprogs, err);
    case PO_PROJECT: {
        int bare = op->nexprs > 0;
        for (int i = 0; i < op->nexprs; i++) bare &= op->exprs[i]->kind == PE_COL;
        if (bare) {
            if (!(o->proj_cols = malloc((size_t)op->nexprs * sizeof *o->proj_cols)))
                return xerr_set(err, XE_NOMEM, "out of memory");
            for (int i = 0; i < op->nexprs; i++) o->proj_cols[i] = op->exprs[i]->col;
        }
        return compile_list(o, op->exprs, op->nexprs, &o->progs, &o->nprogs, err);
    }
    case PO_AGGREGATE: {
        if ((rc = compile_list(o, op->groups, op->ngroups, &o->progs, &o->nprogs, err))) return rc;
        for (int i = 0; i < op->naggs; i++) {
            if (!op->aggs[i].arg) continue;
            if ((rc = compile_list(o, (plan_expr **)&op->aggs[i].arg, 1, &o->progs, &o->nprogs, err))) return rc;
        }
        if (o->q->table_agg) { /* CREATE TABLE AS: table_agg.c */
            if (!(o->tagg = calloc((size_t)o->ntasks, sizeof *o->tagg))) return xerr_set(err, XE_NOMEM, "out of memory");
            for (int t = 0; t < o->ntasks; t++)
                if (!(o->tagg[t] = tagg_new(o, t))) return xerr_set(err, XE_NOMEM, "out of memory");
            return 0;
        }
        o->agg = calloc((size_t)o->ntasks, sizeof *o->agg);
        if (!o->agg) return xerr_set(err, XE_NOMEM, "out of memory");
        for (int t = 0; t < o->ntasks; t++)
            if (!(o->agg[t] = agg_new(o, t))) return xerr_set(err, XE_NOMEM, "out of memory");
        return 0;
    }
    case PO_JOIN:
        if ((rc = compile_list(o, op->lkeys, op->njoinkeys, &o->progs, &o->nprogs, err)) ||
            (rc = compile_list(o, op->rkeys, op->njoinkeys, &o->progs, &o->nprogs, err)))
            return rc;
        if (op->residual && (rc = compile_list(o, (plan_expr **)&op->residual, 1, &o->progs, &o->nprogs, err)))
            return rc;
        o->join = calloc((size_t)o->ntasks, sizeof *o->join);
        if (!o->join) return xerr_set(err, XE_NOMEM, "out of memory");
        for (int t = 0; t < o->ntasks; t++)
            if (!(o->join[t] = join_new(o, t))) return xerr_set(err, XE_NOMEM, "out of memory");
        return 0;
    default:
        return 0;
    }
}

static void op_fini(opinst *o)
{
    for (int i = 0; i < o->nprogs; i++) xprog_fini(&o->progs[i]);
    free(o->progs);
    free(o->proj_cols);
    for (int i = 0; i < o->nkeyprogs; i++) xprog_fini(&o->keyprogs[i]);
    free(o->keyprogs);
    free(o->upwm[0]);
    free(o->upwm[1]);
    free(o->inc);
    free(o->inc_saved);
    free(o->acked);
    free(o->timed);
    if (o->emitted)
        for (int t = 0; t < o->ntasks; t++) sbuf_fini(&o->emitted[t]);
    free(o->emitted);
    free(o->uptag[0]);
    free(o->uptag[1]);
    free(o->meas);
    free(o->dest_rows);
    free(o->dest_bytes);
    batch_fini(&o->out);
    if (o->part && o->down)
        for (int i = 0; i < o->down->ntasks; i++) batch_fini(&o->part[i]);
    free(o->part);
    if (o->agg)
        for (int t = 0; t < o->ntasks; t++) agg_free(o->agg[t]);
    free(o->agg);
    if (o->tagg)
        for (int t = 0; t < o->ntasks; t++) tagg_free(o->tagg[t]);
    free(o->tagg);
    if (o->join)
        for (int t = 0; t < o->ntasks; t++) join_free(o->join[t]);
    free(o->join);
}

/* Operators that map each input record's rows to output rows on their own:
 * a record's position (its tag) passes through them. */
static int stateless_one_input(plan_op_kind k)
{
    return k == PO_FILTER || k == PO_PROJECT || k == PO_WINDOW || k == PO_UNNEST;
}

int query_start(engine *e, query *q, xerr *err)
{
    plan_dag *d = q->dag;
    int rc;
    q->eng = e;
    q->ops = calloc((size_t)d->nops, sizeof *q->ops);
    if (!q->ops) return xerr_set(err, XE_NOMEM, "out of memory");
    if ((rc = batch_init(&q->scratch, 1, 4))) return xerr_set(err, rc, "out of memory");
    int base = 0;
    for (int i = 0; i < d->nops; i++) {
        if ((rc = op_init(q, &q->ops[i], &d->ops[i], err))) return rc;
        q->ops[i].task_base = base;
        base += q->ops[i].ntasks;
    }
    /* wire each operator to its consumer */
    for (int i = 0; i < d->nops; i++) {
        const plan_op *op = &d->ops[i];
        for (int k = 0; k < op->ninputs; k++) {
            opinst *up = &q->ops[op->inputs[k]];
            opinst *me = &q->ops[i];
            me->nup[k] = up->ntasks;
            if (!(me->upwm[k] = malloc((size_t)up->ntasks * sizeof(int64_t)))) return xerr_set(err, XE_NOMEM, "out of memory");
            for (int t = 0; t < up->ntasks; t++) me->upwm[k][t] = WM_MIN;
            up->down = &q->ops[i];
            up->down_side = k;
            up->down_edge = op->in_edge[k];
            if (op->in_edge[k] == EDGE_HASH && q->ops[i].ntasks > 1) {
                /* the partition key over the upstream's output: the join's own
                 * side keys, or the downstream key */
                plan_expr **keys = op->kind == PO_JOIN ? (k ? op->rkeys : op->lkeys) : op->keys;
                int nkeys = op->kind == PO_JOIN ? op->njoinkeys : op->nkeys;
                if ((rc = compile_list(up, keys, nkeys, &up->keyprogs, &up->nkeyprogs, err))) return rc;
                up->part = calloc((size_t)q->ops[i].ntasks, sizeof *up->part);
                if (!up->part) return xerr_set(err, XE_NOMEM, "out of memory");
                for (int t = 0; t < q->ops[i].ntasks; t++)
                    if (batch_init(&up->part[t], up->op->out.ncols, 64)) return xerr_set(err, XE_NOMEM, "out of memory");
            }
        }
        if (op->kind == PO_SOURCE) {
            /* a slot per task: task p reads partition p */
            if (q->nsrc + q->ops[i].ntasks > ENGINE_MAX_SRC)
                return xerr_set(err, XE_PLAN, "the query reads more than %d partitions", ENGINE_MAX_SRC);
            for (int p = 0; p < q->ops[i].ntasks; p++) {
                char name[300];
                engine_partition_name(op->stream, p, name, sizeof name);
                int si = eng_stream_index(e, name);
                if (si < 0) return xerr_set(err, XE_NAME, "stream '%s' no longer exists", name);
                q->src_op[q->nsrc] = i;
                q->src_task[q->nsrc] = p;
                q->src_stream[q->nsrc] = si;
                q->nsrc++;
            }
        }
    }
    /* the tasks' cost counters: per task, and per (task, downstream task) */
    q->meas_since_ms = clock_wall_ms();
    for (int i = 0; i < d->nops; i++) {
        opinst *o = &q->ops[i];
        size_t nd = (size_t)o->ntasks * (size_t)(o->down ? o->down->ntasks : 0) + 1;
        if (!(o->meas = calloc((size_t)o->ntasks, sizeof *o->meas)) || !(o->dest_rows = calloc(nd, sizeof *o->dest_rows)) ||
            !(o->dest_bytes = calloc(nd, sizeof *o->dest_bytes)))
            return xerr_set(err, XE_NOMEM, "out of memory");
    }
    /* which stateful sides read a source through stateless operators only,
     * and which stateless operators lie on such a chain */
    for (int i = 0; i < d->nops; i++) {
        opinst *o = &q->ops[i];
        o->csrc = -1;
        for (int j = q->nsrc - 1; j >= 0; j--)
            if (q->src_op[j] == i) o->csrc = j, o->cnsl = q->ops[i].ntasks;
        if (o->csrc < 0 && stateless_one_input(d->ops[i].kind)) {
            const opinst *u = &q->ops[d->ops[i].inputs[0]];
            /* a chain keeps its source's tasks apart only task for task */
            if (u->csrc >= 0 && (u->cnsl == 1 || (o->ntasks == u->ntasks && d->ops[i].in_edge[0] == EDGE_FORWARD)))
                o->csrc = u->csrc, o->cnsl = u->cnsl;
        }
    }
    for (int i = 0; i < d->nops; i++) {
        opinst *o = &q->ops[i];
        o->tsrc[0] = o->tsrc[1] = -1;
        if (!o->agg && !o->join) continue;
        for (int k = 0; k < d->ops[i].ninputs; k++) {
            const opinst *u = &q->ops[d->ops[i].inputs[k]];
            if (u->csrc >= 0) { /* a source, or a chain of stateless ops from one */
                o->tsrc[k] = u->csrc;
                o->nsl[k] = u->cnsl;
            }
        }
        o->incw = q->nsrc > 2 ? q->nsrc : 2;
        size_t w = (size_t)o->ntasks * (size_t)o->incw;
        if (!(o->inc = calloc(w, sizeof *o->inc)) || !(o->inc_saved = calloc(w, sizeof *o->inc_saved)) ||
            !(o->acked = calloc(w, sizeof *o->acked)))
            return xerr_set(err, XE_NOMEM, "out of memory");
        for (int k = 0; k < d->ops[i].ninputs; k++)
            if (!(o->uptag[k] = calloc((size_t)o->nup[k], sizeof *o->uptag[k]))) return xerr_set(err, XE_NOMEM, "out of memory");
    }
    const plan_schema *os = &d->ops[d->sink].out;
    q->out_names = calloc((size_t)os->ncols + 1, sizeof *q->out_names);
    q->out_types = calloc((size_t)os->ncols + 1, sizeof *q->out_types);
    if (!q->out_names || !q->out_types) return xerr_set(err, XE_NOMEM, "out of memory");
    for (int i = 0; i < os->ncols; i++) {
        q->out_names[i] = os->cols[i].name;
        q->out_types[i] = os->cols[i].type;
    }
    q->out_schema = (fmt_schema){os->ncols, q->out_names, q->out_types};
    q->limit_left = d->ops[d->sink].limit;
    q->cur_stamp = q->sink_tmax = WM_MIN;
    query_rate_sample(q, clock_mono_ns(), 1);
    return 0;
}

void query_rate_sample(query *q, uint64_t now, int restart)
{
    if (restart) q->rs_n = q->rs_at = 0;
    if (q->rs_n && now - q->rs[(q->rs_at + RATE_SAMPLES - 1) % RATE_SAMPLES].ns < RATE_MIN_NS) return;
    q->rs[q->rs_at] = (struct rate_sample){now, q->rows_in, q->rows_out};
    q->rs_at = (q->rs_at + 1) % RATE_SAMPLES;
    if (q->rs_n < RATE_SAMPLES) q->rs_n++;
}

void query_free(query *q)
{
    if (!q) return;
    if (q->ops)
        for (int i = 0; i < q->dag->nops; i++) op_fini(&q->ops[i]);
    free(q->ops);
    eng_sink_close(q->sink);
    batch_fini(&q->scratch);
    sbuf_fini(&q->deltas);
    sbuf_fini(&q->reemit);
    free(q->own);
    plan_free(q->dag);
    free(q->out_names);
    free(q->out_types);
    free(q->name);
    free(q->sql);
    free(q->sink_uri);
    free(q->sink_format);
    free(q->upsert);
    batch_fini(&q->ups);
    tbl_free(q->changes);
    free(q);
}

/* ------------------------------------------------------------------ what tasks cost */

/* A task's CPU time is the thread's CPU time in its operator work, less
 * the work of the tasks it hands rows to on this node: operators call down
 * the DAG (op_push -> op_emit -> deliver -> op_push), so a span's own time
 * is its length less the spans that ran inside it (e->meas.child; one
 * engine, one thread: spans of any query nest).  The thread CPU clock is a
 * system call (1.4 us on our VMs), the monotonic clock is not (30 ns): so
 * the outermost span reads both, every span inside it the monotonic clock
 * only, and when the outermost closes, the CPU it took is shared out over
 * the spans' own wall times.  Two CPU clock reads per entry into the
 * engine's data path, two cheap ones per batch and task, none per row. */
void eng_span_begin(engine *e, eng_span *s)
{
    struct eng_meas *m = &e->meas;
    s->t0 = clock_mono_ns();
    s->outer = m->child;
    m->child = 0;
    if (m->depth++ == 0) {
        m->cpu0 = clock_thread_ns();
        m->wall0 = s->t0;
        m->nparts = 0;
    }
}

/* Note `wall` ns for the counter *to (scaled to CPU at the outermost end). */
static void span_part(struct eng_meas *m, uint64_t *to, uint64_t wall)
{
    if (!to || !wall) return;
    if (m->nparts && m->parts[m->nparts - 1].cpu == to) {
        m->parts[m->nparts - 1].wall += wall;
        return;
    }
    if (m->nparts == m->cap) {
        int cap = m->cap ? m->cap * 2 : 64;
        struct span_part *v = realloc(m->parts, (size_t)cap * sizeof *v);
        if (!v) {
            *to += wall; /* out of memory: wall time stands in for CPU */
            return;
        }
        m->parts = v;
        m->cap = cap;
    }
    m->parts[m->nparts++] = (struct span_part){to, wall};
}

/* Close a span: its own wall time goes to the n counters to[] in equal
 * shares; the outermost span turns every share into CPU time. */
static void span_close(engine *e, eng_span *s, uint64_t **to, int n)
{
    struct eng_meas *m = &e->meas;
    uint64_t now = clock_mono_ns(), len = now - s->t0, own = len > m->child ? len - m->child : 0;
    m->child = s->outer + len;
    for (int i = 0; i < n; i++) span_part(m, to[i], own / (uint64_t)n);
    if (--m->depth > 0) return;
    uint64_t cpu = clock_thread_ns() - m->cpu0, wall = now - m->wall0;
    double f = wall ? (double)cpu / (double)wall : 0;
    if (f > 1) f = 1; /* one thread: never more CPU than wall time */
    for (int i = 0; i < m->nparts; i++) *m->parts[i].cpu += (uint64_t)((double)m->parts[i].wall * f);
    m->nparts = 0;
}

static void span_end(query *q, opinst *o, int task, eng_span *s)
{
    uint64_t *to = task >= 0 && task < o->ntasks ? &o->meas[task].cpu_ns : NULL;
    span_close(q->eng, s, &to, to != NULL);
}

void eng_span_end_sources(engine *e, int si, eng_span *s)
{
    uint64_t *to[ENGINE_MAX_SRC * 4];
    int n = 0;
    for (int i = 0; i < e->nqueries; i++) {
        query *q = e->queries[i];
        for (int k = 0; q->ops && k < q->nsrc && n < (int)(sizeof to / sizeof *to); k++) {
            opinst *o = &q->ops[q->src_op[k]];
            int t = q->src_task[k]; /* the slot's task: a partitioned source has one per partition */
            if (q->src_stream[k] == si && t < o->ntasks && task_local(q, o, t)) to[n++] = &o->meas[t].cpu_ns;
        }
    }
    span_close(e, s, to, n);
}

/* An entry into a query from outside (a record, a watermark): a span of
 * its own charged to nobody, so that the task spans inside it read only the
 * cheap clock. */
static void span_enter(query *q, eng_span *s) { eng_span_begin(q->eng, s); }
static void span_leave(query *q, eng_span *s) { span_close(q->eng, s, NULL, 0); }

void eng_meas_fini(engine *e)
{
    free(e->meas.parts);
    memset(&e->meas, 0, sizeof e->meas);
}

int engine_task_stats_each(engine *e, void (*fn)(void *ctx, const engine_task_stats *s), void *ctx)
{
    int n = 0;
    for (int i = 0; i < e->nqueries; i++) {
        query *q = e->queries[i];
        if (!q || !q->ops) continue;
        for (int k = 0; k < q->dag->nops; k++) {
            opinst *o = &q->ops[k];
            int nd = o->down ? o->down->ntasks : 0;
            for (int t = 0; t < o->ntasks; t++) {
                if (!task_local(q, o, t)) continue;
                engine_task_stats st = {
                    .qid = q->id, .deployed = q->deployed, .op = k, .task = o->task_base + t, .since_ms = q->meas_since_ms,
                    .cpu_ns = o->meas[t].cpu_ns, .rows_in = o->meas[t].rows_in, .rows_out = o->meas[t].rows_out,
                    .bytes_out = o->meas[t].bytes_out,
                    .state_bytes = o->agg ? agg_state_bytes(o->agg[t]) : o->join ? join_state_bytes(o->join[t]) : 0,
                    .cold_groups = o->agg ? agg_cold_groups(o->agg[t]) : 0,
                    .ndest = nd, .dest_rows = o->dest_rows + (size_t)t * nd, .dest_bytes = o->dest_bytes + (size_t)t * nd,
                };
                fn(ctx, &st);
                n++;
            }
        }
    }
    return n;
}

/* ------------------------------------------------------------------ pushing batches */

static int op_push(opinst *o, int task, int side, const batch *in, xerr *err);

/* The slot task a of o carries (o on a chain from a source, csrc >= 0). */
static int task_slot(const opinst *o, int a) { return o->csrc + (o->cnsl > 1 ? a : 0); }

/* The position rows and watermarks leaving task a of o carry, as sent to
 * another node: the current record of its slot when o sits between a source
 * and the first stateful op. */
static uint64_t op_tag(const opinst *o, int a)
{
    if (o->csrc < 0) return 0;
    int k = task_slot(o, a);
    return tag_wire(o->q->src_task[k], o->q->tag[k]);
}

/* Rows or a watermark for input `side` of o came from elsewhere with tag:
 * the record of the slot its top byte names. */
static void set_tag(opinst *o, int side, uint64_t tag)
{
    int k = o->agg || o->join ? o->tsrc[side] : o->csrc;
    int n = o->agg || o->join ? o->nsl[side] : o->cnsl;
    int part = (int)(tag >> TAG_PART_SHIFT);
    if (k < 0 || part >= n) return;
    o->q->cur_slot = k + part;
    o->q->tag[k + part] = tag & TAG_OFF_MASK;
}

/* The watermark o's output may pass: the least of its inputs', but a
 * stream-table join whose table has no event time (or whose stream has
 * none) answers with the table as it is, so only the stream's counts. */
static int64_t op_eff_wm(const opinst *o)
{
    int64_t eff = o->wm[0];
    if (o->op->ninputs == 2 && o->wm[1] < eff && !(o->op->temporal && !o->op->versioned)) eff = o->wm[1];
    return eff;
}

/* Deliver task from's rows to task t of the downstream op: here, or
 * through the remote hook. */
static int deliver(opinst *o, int from, int t, const batch *b, xerr *err)
{
    opinst *d = o->down;
    query *q = o->q;
    size_t at = (size_t)from * (size_t)d->ntasks + (size_t)t;
    o->dest_rows[at] += (uint64_t)b->nrows;
    if (task_local(q, d, t)) return op_push(d, t, o->down_side, b, err);
    if (!q->remote.batch) return 0;
    if (d->op->kind == PO_AGGREGATE) {
        /* what that task will drop: the watermark it closes windows at is
         * the one this node's tasks passed it (ingest_late tells it) */
        q->late_sent += agg_count_late(d, b, op_eff_wm(d));
    }
    sbuf *buf = &q->eng->tmp2;
    sbuf_reset(buf);
    if (batch_encode(b, buf)) return xerr_set(err, XE_NOMEM, "out of memory");
    o->dest_bytes[at] += buf->len;
    o->meas[from].bytes_out += buf->len;
    if (q->remote.batch(q->remote.ctx, q->id, d->op->id, t, o->down_side, op_tag(o, from), q->cur_stamp, buf->p,
                        buf->len))
        return xerr_set(err, XE_IO, "query %u: cannot send rows to task %d of operator %d", q->id, t, d->op->id);
    return 0;
}

/* The event time of b's rows for the sink's catch-up after a recovery
 * (cluster/catchup.h): once an upstream task has passed a watermark at or
 * past a row's time, it has emitted that row.  Ops whose output has no time
 * column (a projection that dropped it) pass on their input's. */
static void stamp_rows(opinst *o, const batch *b)
{
    int tc = o->op->ts_col;
    if (tc < 0 || !o->q->deployed) return;
    int64_t m = WM_MIN;
    for (int r = 0; r < b->nrows; r++) {
        const val *v = &batch_row(b, r)[tc];
        if (v->type != TY_NULL && v->i > m) m = v->i;
    }
    if (m != WM_MIN) o->q->cur_stamp = m;
}

int op_emit(opinst *o, int task, const batch *b, xerr *err)
{
    opinst *d = o->down;
    if (!d || b->nrows == 0) return 0;
    o->meas[task].rows_out += (uint64_t)b->nrows;
    stamp_rows(o, b);
    if (o->emitted) {
        /* kept for a takeover: the rows may be lost in flight with a node */
        sbuf *x = &o->emitted[task];
        size_t at = x->len;
        unsigned char l[4] = {0};
        if (sbuf_add(x, l, 4) || batch_encode(b, x)) return xerr_set(err, XE_NOMEM, "out of memory");
        be32_put((unsigned char *)x->p + at, (uint32_t)(x->len - at - 4));
    }
    if (d->ntasks == 1) return deliver(o, task, 0, b, err);
    if (o->down_edge == EDGE_FORWARD) return deliver(o, task, task, b, err);
    /* exchange: hash partition by the downstream key */
    batch *sc = &o->q->scratch;
    for (int t = 0; t < d->ntasks; t++) batch_reset(&o->part[t]);
    for (int r = 0; r < b->nrows; r++) {
        const val *row = batch_row(b, r);
        uint64_t h = 0x51ed270b27e5bd3bULL;
        for (int k = 0; k < o->nkeyprogs; k++) {
            val v = xprog_eval(&o->keyprogs[k], row, sc);
            h = hash64_mix(h ^ val_hash(&v, (uint64_t)k));
        }
        batch_reset(sc);
        if (batch_append_row(&o->part[h % (uint64_t)d->ntasks], row)) return xerr_set(err, XE_NOMEM, "out of memory");
    }
    for (int t = 0; t < d->ntasks; t++) {
        if (!o->part[t].nrows) continue;
        int rc = deliver(o, task, t, &o->part[t], err);
        if (rc) return rc;
    }
    return 0;
}

/* split(text, sep) as rows: each input row once per piece of its text
 * between separators (empty pieces too), the piece as the last column.  NULL
 * text or separator and the empty text make no rows; an empty separator makes
 * the whole text one piece.  A text read straight from a column stays in the
 * input's arena (the pieces point into it, as a filter's rows do); a computed
 * one lives in the scratch batch until the next row, so its pieces are copied
 * into the output's arena.  The output batch is reused: nothing is allocated
 * per row once it has grown. */
static int unnest_push(opinst *o, int task, const batch *in, xerr *err)
{
    const plan_op *op = o->op;
    batch *sc = &o->q->scratch;
    int nc = in->ncols, inplace = op->exprs[0]->kind == PE_COL;
    batch_reset(&o->out);
    for (int r = 0; r < in->nrows; r++) {
        const val *row = batch_row(in, r);
        val t = xprog_eval(&o->progs[0], row, sc);
        val s = xprog_eval(&o->progs[1], row, sc);
        if (t.type != TY_TEXT || s.type != TY_TEXT || t.len == 0) {
            batch_reset(sc);
            continue;
        }
        const char *p = t.s, *end = t.s + t.len;
        for (;;) {
            const char *q = s.len ? memmem(p, (size_t)(end - p), s.s, s.len) : NULL;
            const char *stop = q ? q : end;
            val *dst = batch_add_row_raw(&o->out);
            if (!dst) return xerr_set(err, XE_NOMEM, "out of memory");
            memcpy(dst, row, (size_t)nc * sizeof *dst);
            if (inplace) dst[nc] = val_text(p, (uint32_t)(stop - p));
            else if (batch_put_text(&o->out, &dst[nc], p, (size_t)(stop - p)))
                return xerr_set(err, XE_NOMEM, "out of memory");
            if (!q) break;
            p = q + s.len;
        }
        batch_reset(sc);
    }
    return op_emit(o, task, &o->out, err);
}

static int op_push_body(opinst *o, int task, int side, const batch *in, xerr *err);

static int op_push(opinst *o, int task, int side, const batch *in, xerr *err)
{
    eng_span s;
    eng_span_begin(o->q->eng, &s);
    if (task >= 0 && task < o->ntasks) o->meas[task].rows_in += (uint64_t)in->nrows;
    int rc = op_push_body(o, task, side, in, err);
    span_end(o->q, o, task, &s);
    return rc;
}

static int op_push_body(opinst *o, int task, int side, const batch *in, xerr *err)
{
    const plan_op *op = o->op;
    batch *sc = &o->q->scratch;
    int rc;
    switch (op->kind) {
    case PO_SOURCE: {
        /* read only the columns the query uses: when that is all of them, in
         * order, the record's rows go on as they are */
        int all = op->nsrc_cols == in->ncols;
        for (int c = 0; all && c < op->nsrc_cols; c++) all = op->src_cols[c] == c;
        if (all) return op_emit(o, task, in, err);
        batch_reset(&o->out);
        for (int r = 0; r < in->nrows; r++) {
            const val *src = batch_row(in, r);
            val *dst = batch_add_row(&o->out);
            if (!dst) return xerr_set(err, XE_NOMEM, "out of memory");
            for (int c = 0; c < op->nsrc_cols; c++) dst[c] = src[op->src_cols[c]];
        }
        return op_emit(o, task, &o->out, err);
    }
    case PO_FILTER:
    case PO_HAVING: {
        /* table_agg.c's deletes: groups that lost their rows or failed this condition */
        if (op->kind == PO_HAVING && o->q->retracting) return op_emit(o, task, in, err);
        batch_reset(&o->out);
        for (int r = 0; r < in->nrows; r++) {
            const val *row = batch_row(in, r);
            int keep = xprog_true(&o->progs[0], row, sc);
            batch_reset(sc);
            if (keep) {
                val *dst = batch_add_row(&o->out);
                if (!dst) return xerr_set(err, XE_NOMEM, "out of memory");
                memcpy(dst, row, (size_t)in->ncols * sizeof *dst); /* strings stay in the input's arena */
            }
        }
        return op_emit(o, task, &o->out, err);
    }
    case PO_PROJECT: {
        batch_reset(&o->out);
        if (o->proj_cols) {
            /* columns picked as they are (text stays in the input's arena, as a filter's does) */
            if (batch_reserve(&o->out, in->nrows)) return xerr_set(err, XE_NOMEM, "out of memory");
            for (int r = 0; r < in->nrows; r++) {
                const val *row = batch_row(in, r);
                val *dst = batch_row(&o->out, r);
                for (int c = 0; c < o->nprogs; c++) dst[c] = row[o->proj_cols[c]];
            }
            o->out.nrows = in->nrows;
            return op_emit(o, task, &o->out, err);
        }
        for (int r = 0; r < in->nrows; r++) {
            const val *row = batch_row(in, r);
            val *dst = batch_add_row(&o->out);
            if (!dst) return xerr_set(err, XE_NOMEM, "out of memory");
            for (int c = 0; c < o->nprogs; c++) {
                val v = xprog_eval(&o->progs[c], row, sc);
                if (v.type == TY_TEXT) {
                    if (batch_put_text(&o->out, &dst[c], v.s, v.len)) return xerr_set(err, XE_NOMEM, "out of memory");
                } else
                    dst[c] = v;
            }
            batch_reset(sc);
        }
        return op_emit(o, task, &o->out, err);
    }
    case PO_WINDOW:
        /* window assignment is fused into the aggregate */
        return op_emit(o, task, in, err);
    case PO_UNNEST:
        return unnest_push(o, task, in, err);
    case PO_AGGREGATE:
        if (o->tagg) return tagg_push(o, task, in, err);
        /* fall through */
    case PO_JOIN: {
        int k = o->q->cur_slot;
        if (o->tsrc[side] >= 0 && k >= o->tsrc[side] && k < o->tsrc[side] + o->nsl[side] && o->q->tag[k]) {
            uint64_t tag = o->q->tag[k], *inc = &o->inc[task * o->incw + k];
            if (tag <= *inc) { /* a replayed record the restored state has */
                o->q->skipped += in->nrows;
                return 0;
            }
            *inc = tag;
        }
        return op->kind == PO_AGGREGATE ? agg_push(o, task, in, err) : join_push(o, task, side, in, err);
    }
    case PO_SINK: {
        query *q = o->q;
        if (q->finished) return 0;
        if (q->cur_stamp > q->sink_tmax) q->sink_tmax = q->cur_stamp;
        if (q->limit_left >= 0 && in->nrows > q->limit_left) {
            batch cut = *in;
            cut.nrows = (int)q->limit_left;
            rc = query_emit(q, &cut, err);
        } else
            rc = query_emit(q, in, err);
        return rc;
    }
    }
    return 0;
}

int query_push(query *q, int src, const batch *b, uint64_t tag, xerr *err)
{
    if (q->finished) return 0;
    if (!task_local(q, &q->ops[q->src_op[src]], q->src_task[src])) return 0;
    q->tag[src] = tag;
    q->cur_slot = src;
    if (tag > q->counted[src]) q->rows_in += b->nrows;
    eng_span s;
    span_enter(q, &s);
    int rc = op_push(&q->ops[q->src_op[src]], q->src_task[src], 0, b, err);
    span_leave(q, &s);
    return rc;
}

/* Tell the downstream op that this op's local tasks reached wm. */
static int op_watermark_from(opinst *o, int side, int from, int64_t wm, xerr *err);

/* Task a of o (local) tells the downstream op, here and elsewhere, that it reached pass. */
static int pass_one(opinst *o, int a, int64_t pass, xerr *err)
{
    query *q = o->q;
    opinst *d = o->down;
    if (!d) return 0;
    int remote = 0;
    for (int t = 0; t < d->ntasks && !remote; t++)
        if (!task_local(q, d, t)) remote = 1;
    if (remote && q->remote.watermark &&
        q->remote.watermark(q->remote.ctx, q->id, d->op->id, o->down_side, a, pass, op_tag(o, a)))
        return xerr_set(err, XE_IO, "query %u: cannot send a watermark", q->id);
    return op_watermark_from(d, o->down_side, a, pass, err);
}

static int pass_down(opinst *o, int64_t pass, xerr *err)
{
    for (int a = 0; a < o->ntasks; a++) {
        if (!task_local(o->q, o, a)) continue;
        int rc = pass_one(o, a, pass, err);
        if (rc) return rc;
    }
    return 0;
}

/* fn(o, t, wm) for each of o's tasks on this node, its time counted as the task's. */
static int each_local_task(opinst *o, int (*fn)(opinst *, int, int64_t, xerr *), int64_t wm, xerr *err)
{
    for (int t = 0; t < o->ntasks; t++)
        if (task_local(o->q, o, t)) {
            eng_span sp;
            eng_span_begin(o->q->eng, &sp);
            int rc = fn(o, t, wm, err);
            span_end(o->q, o, t, &sp);
            if (rc) return rc;
        }
    return 0;
}

/* Input side `side` of o heard watermark wm from upstream task `from`. */
static int op_watermark_from(opinst *o, int side, int from, int64_t wm, xerr *err)
{
    int rc;
    if (from >= 0 && from < o->nup[side] && o->tsrc[side] >= 0 && o->uptag[side]) {
        /* Every record before the tag has reached the tasks that upstream
         * task feeds (links are FIFO): a task's state includes them once
         * each upstream task that can send to it has said so.  With
         * partitions, upstream task `from` alone carries its slot. */
        int part = o->nsl[side] > 1, k = o->tsrc[side] + (part ? from : 0);
        int fwd = o->op->in_edge[side] == EDGE_FORWARD && o->nup[side] == o->ntasks;
        uint64_t tag = o->q->tag[k];
        if (tag > o->uptag[side][from]) {
            o->uptag[side][from] = tag;
            uint64_t all = UINT64_MAX;
            for (int a = 0; a < o->nup[side]; a++)
                if (o->uptag[side][a] < all) all = o->uptag[side][a];
            for (int t = 0; t < o->ntasks; t++) {
                if (part && fwd && t != from) continue;
                uint64_t c = part ? tag : fwd ? o->uptag[side][t] : all;
                uint64_t *inc = &o->inc[t * o->incw + k];
                if (task_local(o->q, o, t) && *inc < c) *inc = c;
            }
        }
    }
    if (from >= 0 && from < o->nup[side]) {
        if (wm <= o->upwm[side][from]) return 0;
        o->upwm[side][from] = wm;
        int64_t m = WM_END;
        for (int t = 0; t < o->nup[side]; t++)
            if (o->upwm[side][t] < m) m = o->upwm[side][t];
        wm = m;
    }
    o->wm[side] = wm;
    /* a stream-table join lets waiting rows go as the table's watermark
     * moves, whether or not its output's does */
    if (o->op->kind == PO_JOIN && o->op->temporal && (rc = each_local_task(o, join_expire, wm, err))) return rc;
    int64_t eff = op_eff_wm(o);
    if (eff <= o->out_wm) return 0;
    int64_t pass = eff;
    if (o->op->kind == PO_AGGREGATE && !o->tagg) {
        if ((rc = each_local_task(o, agg_close, eff, err))) return rc;
        /* windows still open end after eff - grace, so rows emitted later
         * carry a window end above that.  When their time is the window's
         * start, hold back by what a window can span as well. */
        if (eff != WM_END && eff != WM_MIN) {
            const ast_window *w = &o->op->window;
            pass = eff - w->grace_ms;
            if (o->op->time_is_start) {
                if (w->kind == WIN_SESSION) {
                    pass -= w->gap_ms;
                    for (int t = 0; t < o->ntasks; t++) {
                        int64_t m = task_local(o->q, o, t) ? agg_min_open_start(o->agg[t]) : WM_END;
                        if (m < pass) pass = m;
                    }
                } else
                    pass -= w->size_ms;
            }
        }
    } else if (o->op->kind == PO_JOIN && !o->op->temporal) {
        if ((rc = each_local_task(o, join_expire, eff, err))) return rc;
        /* a match can carry a left time up to `within` behind the inputs */
        if (eff != WM_END && eff != WM_MIN) pass = eff - o->op->within_ms;
    }
    o->out_wm = eff;
    /* the sink of a query that writes a stream: that stream's watermark */
    if (!o->down && o->q->target >= 0 && o->q->eng->derived_wm_cb && (rc = o->q->eng->derived_wm_cb(o->q, err)))
        return rc;
    return pass_down(o, pass, err);
}

static int watermark_in(query *q, int src, int64_t wm, xerr *err);

int query_watermark(query *q, int src, int64_t wm, xerr *err)
{
    eng_span s;
    span_enter(q, &s);
    int rc = watermark_in(q, src, wm, err);
    span_leave(q, &s);
    return rc;
}

static int watermark_in(query *q, int src, int64_t wm, xerr *err)
{
    if (q->finished) return 0;
    opinst *o = &q->ops[q->src_op[src]];
    int a = q->src_task[src];
    if (!task_local(q, o, a)) return 0;
    q->tag[src] = q->offset[src]; /* the records before it have all been pushed */
    q->cur_slot = src;
    if (o->ntasks == 1) return op_watermark_from(o, 0, -1, wm, err);
    /* a partition's task passes its partition's watermark on; the
     * downstream op takes the minimum over them */
    return pass_one(o, a, wm, err);
}

int query_remote_watermark(query *q, int op, int side, int from_task, int64_t wm, uint64_t tag, xerr *err)
{
    if (op >= 0 && op < q->dag->nops && side >= 0 && side < 2) set_tag(&q->ops[op], side, tag);
    if (op < 0 || op >= q->dag->nops || side < 0 || side > 1) return xerr_set(err, XE_PROTO, "bad watermark address");
    opinst *o = &q->ops[op];
    if (from_task < 0 || from_task >= o->nup[side]) return xerr_set(err, XE_PROTO, "bad watermark sender");
    eng_span s;
    span_enter(q, &s);
    int rc = op_watermark_from(o, side, from_task, wm, err);
    span_leave(q, &s);
    return rc;
}

int query_remote_batch(query *q, int op, int task, int side, uint64_t tag, int64_t stamp, const void *p, size_t n,
                       xerr *err)
{
    q->cur_stamp = stamp;
    if (op >= 0 && op < q->dag->nops && side >= 0 && side < 2) set_tag(&q->ops[op], side, tag);
    if (op < 0 || op >= q->dag->nops || side < 0 || side >= (q->ops[op].op->ninputs > 1 ? 2 : 1) ||
        task < 0 || task >= q->ops[op].ntasks || !task_local(q, &q->ops[op], task))
        return xerr_set(err, XE_PROTO, "rows for a task that does not run here");
    batch *b = &q->eng->rbatch;
    batch_reset(b);
    eng_span s, sp;
    span_enter(q, &s);
    eng_span_begin(q->eng, &sp); /* decoding is the receiving task's work */
    int rc = batch_decode(p, n, b, err);
    span_end(q, &q->ops[op], task, &sp);
    if (!rc && b->ncols != q->dag->ops[q->ops[op].op->inputs[side]].out.ncols)
        rc = xerr_set(err, XE_PROTO, "rows with %d columns for an input of %d", b->ncols,
                      q->dag->ops[q->ops[op].op->inputs[side]].out.ncols);
    if (!rc) rc = op_push(&q->ops[op], task, side, b, err);
    span_leave(q, &s);
    return rc;
}

/* Write one local stateful task's dirty state (both kinds). */
int task_flush(opinst *o, int k, store_txn *t, xerr *err)
{
    if (o->agg) return agg_flush(o, k, t, err);
    if (o->join) return join_flush(o, k, t, err);
    return 0;
}

int query_load_state(query *q, store_txn *t, xerr *err)
{
    int rc;
    for (int i = 0; i < q->dag->nops; i++) {
        opinst *o = &q->ops[i];
        for (int k = 0; k < o->ntasks; k++) {
            if (!task_local(q, o, k)) continue;
            if (o->agg && (rc = agg_load(o, k, t, err))) return rc;
            if (o->join && (rc = join_load(o, k, t, err))) return rc;
        }
    }
    return ft_load_inc(q, t, err);
}

int query_drop_state(query *q, store_txn *t, xerr *err)
{
    int rc;
    for (int i = 0; i < q->dag->nops; i++)
        for (int k = 0; k < q->ops[i].ntasks; k++) {
            if ((rc = store_state_drop_task(t, STORE_STATE, query_task_id(q, i, k), err))) return rc;
            char key[48];
            if (q->ops[i].agg) {
                snprintf(key, sizeof key, "closed/%u", query_task_id(q, i, k));
                if ((rc = store_kv_del(t, STORE_META, key, err))) return rc;
            }
            snprintf(key, sizeof key, "inc/%u", query_task_id(q, i, k));
            if ((rc = store_kv_del(t, STORE_META, key, err))) return rc;
            if ((rc = ft_drop_out(t, "out/%u/", query_task_id(q, i, k), 0, err))) return rc;
        }
    return q->changes ? store_state_drop_task(t, STORE_STATE, q->changes->tid, err) : 0;
}
