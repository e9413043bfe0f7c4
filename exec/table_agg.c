/*
 * table_agg.c: the aggregate of CREATE TABLE ... AS SELECT ... GROUP BY.
 *
 * An unwindowed aggregate whose answer updates: after each batch, every
 * group the batch touched is emitted once, with its new values, and the
 * table the query writes (table.c) turns that into -U/+U, or +I for a new
 * group.  A group whose rows are all retracted, or (with HAVING) whose new
 * row fails the HAVING operator's condition, is emitted with the query's
 * `retracting` flag set: the HAVING operator lets it through and the table
 * deletes its key (-D).
 *
 * Over a table the input is a changelog (its `op` column, which the
 * planner never prunes from a changelog's source): +I and +U rows add,
 * -U and -D rows retract.  So that MIN, MAX and COUNT(DISTINCT) stay right
 * when a row leaves, a group keeps the multiset of their arguments (value,
 * how many), not only the extreme.  COUNT, SUM and AVG keep a count of
 * non-NULL arguments and the sums (integers exactly; a DOUBLE sum that
 * retracts may differ from a recomputation in its last bits).
 *
 * A group's state is one record in `state` (task id of the operator's task,
 * window end 0, key = the group key's val_key_encode): written in the open
 * epoch's transaction after each batch, read back when a batch touches a
 * group it does not hold.  So state, offsets and the table's rows commit
 * together, and a restart needs no load.  Between batches nothing is kept in
 * memory but the reusable buffers.
 *
 * Layer 4, beside agg.c: called by ops.c, calls down only (o->emit_down,
 * storage, expressions).  Engine thread.
 */
#include "exec/internal.h"

#include <stdlib.h>
#include <string.h>

/* One group touched by the current batch. */
typedef struct tg {
    sbuf key;
    int64_t cnt;   /* COUNT(*): rows added less rows retracted */
    int had;       /* it had rows before the batch (or fails HAVING: the table may hold its key) */
    int keep;      /* the table keeps it after the batch: it has rows and passes HAVING */
    int64_t *n;    /* per aggregate: non-NULL arguments */
    int64_t *isum; /* ... their integer sum */
    double *dsum;  /* ... their DOUBLE sum */
    sbuf *ms;      /* MIN, MAX, COUNT(DISTINCT): entries [u16 len][key bytes][i64 count], in key order */
} tg;

struct tagg_task {
    int naggs, ngroups;
    int op_col;    /* the input's op column (a changelog), or -1 */
    int having;    /* the HAVING operator the groups go to, or -1 */
    uint32_t tid;
    tg *g;         /* the batch's groups (reused: their buffers stay) */
    int ng, capg;
    int *slot;     /* open addressing over g: index + 1, 0 empty */
    int nslot;
    sbuf rec, kbuf;
    val *kv;
};

static int keeps_set(plan_fn f) { return f == FN_MIN || f == FN_MAX || f == FN_COUNT_DISTINCT; }

tagg_task *tagg_new(opinst *o, int task)
{
    const plan_op *op = o->op;
    tagg_task *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->naggs = op->naggs;
    a->ngroups = op->ngroups;
    a->tid = query_task_id(o->q, op->id, task);
    a->op_col = -1;
    /* over a table's changelog: the source up the chain reads a table */
    const plan_dag *d = o->q->dag;
    int up = op->inputs[0];
    while (d->ops[up].kind != PO_SOURCE && d->ops[up].ninputs == 1) up = d->ops[up].inputs[0];
    int si = d->ops[up].kind == PO_SOURCE ? eng_stream_index(o->q->eng, d->ops[up].stream) : -1;
    if (si >= 0 && o->q->eng->streams[si]->table) a->op_col = plan_schema_find(&d->ops[op->inputs[0]].out, "op");
    a->having = -1;
    for (int i = 0; i < d->nops; i++)
        if (d->ops[i].kind == PO_HAVING && d->ops[i].inputs[0] == op->id) a->having = i;
    if (!(a->kv = calloc((size_t)a->ngroups + 1, sizeof *a->kv))) {
        free(a);
        return NULL;
    }
    return a;
}

static void tg_fini(tg *g, int naggs)
{
    sbuf_fini(&g->key);
    for (int j = 0; g->ms && j < naggs; j++) sbuf_fini(&g->ms[j]);
    free(g->ms);
    free(g->n);
    free(g->isum);
    free(g->dsum);
}

void tagg_free(tagg_task *a)
{
    if (!a) return;
    for (int i = 0; i < a->capg; i++) tg_fini(&a->g[i], a->naggs);
    free(a->g);
    free(a->slot);
    free(a->kv);
    sbuf_fini(&a->rec);
    sbuf_fini(&a->kbuf);
    free(a);
}

/* ------------------------------------------------------------------ a group's record */

static void put64(sbuf *b, int64_t v)
{
    unsigned char x[8];
    be64_put(x, (uint64_t)v);
    sbuf_add(b, x, 8);
}

static int encode(const tagg_task *a, const plan_op *op, const tg *g, sbuf *b)
{
    sbuf_reset(b);
    put64(b, g->cnt);
    for (int j = 0; j < a->naggs; j++) {
        put64(b, g->n[j]);
        put64(b, g->isum[j]);
        int64_t d;
        memcpy(&d, &g->dsum[j], 8);
        put64(b, d);
        if (keeps_set(op->aggs[j].fn)) {
            put64(b, (int64_t)g->ms[j].len);
            sbuf_add(b, g->ms[j].p ? g->ms[j].p : "", g->ms[j].len);
        }
    }
    return b->p ? 0 : XE_NOMEM;
}

static int decode(const tagg_task *a, const plan_op *op, tg *g, const unsigned char *p, size_t n)
{
    size_t at = 0;
#define TAKE64(v)                                                                                                      \
    do {                                                                                                               \
        if (at + 8 > n) return XE_CORRUPT;                                                                             \
        v = (int64_t)be64_get(p + at);                                                                                 \
        at += 8;                                                                                                       \
    } while (0)
    TAKE64(g->cnt);
    for (int j = 0; j < a->naggs; j++) {
        int64_t d, len;
        TAKE64(g->n[j]);
        TAKE64(g->isum[j]);
        TAKE64(d);
        memcpy(&g->dsum[j], &d, 8);
        if (keeps_set(op->aggs[j].fn)) {
            TAKE64(len);
            if (len < 0 || at + (size_t)len > n) return XE_CORRUPT;
            if (sbuf_add(&g->ms[j], p + at, (size_t)len)) return XE_NOMEM;
            at += (size_t)len;
        }
    }
#undef TAKE64
    return 0;
}

/* Add d to the count of value key k in multiset ms (an entry at 0 goes). */
static int ms_add(sbuf *ms, const void *k, size_t kl, int64_t d)
{
    size_t at = 0;
    unsigned char *p = (unsigned char *)ms->p;
    while (at < ms->len) {
        size_t l = (size_t)p[at] << 8 | p[at + 1];
        int c = memcmp(p + at + 2, k, l < kl ? l : kl);
        if (!c) c = l < kl ? -1 : l > kl;
        if (c == 0) {
            int64_t v = (int64_t)be64_get(p + at + 2 + l) + d;
            if (v) {
                be64_put(p + at + 2 + l, (uint64_t)v);
                return 0;
            }
            size_t sz = 2 + l + 8;
            memmove(p + at, p + at + sz, ms->len - at - sz);
            ms->len -= sz;
            return 0;
        }
        if (c > 0) break;
        at += 2 + l + 8;
    }
    if (d <= 0) return 0; /* the retraction of a value never added: nothing to take */
    unsigned char e[2 + 8];
    e[0] = (unsigned char)(kl >> 8);
    e[1] = (unsigned char)kl;
    size_t sz = 2 + kl + 8, old = ms->len;
    if (sbuf_add(ms, e, 2) || sbuf_add(ms, k, kl) || sbuf_add(ms, e, 8)) return XE_NOMEM;
    p = (unsigned char *)ms->p;
    memmove(p + at + sz, p + at, old - at);
    p[at] = e[0];
    p[at + 1] = e[1];
    memcpy(p + at + 2, k, kl);
    be64_put(p + at + 2 + kl, (uint64_t)d);
    return 0;
}

/* ------------------------------------------------------------------ the batch's groups */

static tg *group_for(tagg_task *a, const plan_op *op, store_txn *txn, xerr *err)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < a->kbuf.len; i++) h = (h ^ (unsigned char)a->kbuf.p[i]) * 1099511628211ull;
    if (a->ng * 2 >= a->nslot) {
        int ns = a->nslot ? a->nslot * 2 : 64;
        int *s = calloc((size_t)ns, sizeof *s);
        if (!s) return xerr_set(err, XE_NOMEM, "out of memory"), NULL;
        free(a->slot);
        a->slot = s;
        a->nslot = ns;
        for (int i = 0; i < a->ng; i++) { /* re-insert */
            uint64_t h2 = 1469598103934665603ull;
            for (size_t b = 0; b < a->g[i].key.len; b++) h2 = (h2 ^ (unsigned char)a->g[i].key.p[b]) * 1099511628211ull;
            size_t x = h2 & (size_t)(ns - 1);
            while (s[x]) x = (x + 1) & (size_t)(ns - 1);
            s[x] = i + 1;
        }
    }
    size_t x = h & (size_t)(a->nslot - 1);
    while (a->slot[x]) {
        tg *g = &a->g[a->slot[x] - 1];
        if (g->key.len == a->kbuf.len && !memcmp(g->key.p, a->kbuf.p, a->kbuf.len)) return g;
        x = (x + 1) & (size_t)(a->nslot - 1);
    }
    if (a->ng == a->capg) {
        int nc = a->capg ? a->capg * 2 : 16;
        tg *v = realloc(a->g, (size_t)nc * sizeof *v);
        if (!v) return xerr_set(err, XE_NOMEM, "out of memory"), NULL;
        memset(v + a->capg, 0, (size_t)(nc - a->capg) * sizeof *v);
        a->g = v;
        for (int i = a->capg; i < nc; i++) {
            tg *g = &a->g[i];
            g->n = calloc((size_t)a->naggs + 1, sizeof *g->n);
            g->isum = calloc((size_t)a->naggs + 1, sizeof *g->isum);
            g->dsum = calloc((size_t)a->naggs + 1, sizeof *g->dsum);
            g->ms = calloc((size_t)a->naggs + 1, sizeof *g->ms);
            if (!g->n || !g->isum || !g->dsum || !g->ms) {
                a->capg = i + 1;
                return xerr_set(err, XE_NOMEM, "out of memory"), NULL;
            }
        }
        a->capg = nc;
    }
    tg *g = &a->g[a->ng];
    sbuf_reset(&g->key);
    if (sbuf_add(&g->key, a->kbuf.p, a->kbuf.len)) return xerr_set(err, XE_NOMEM, "out of memory"), NULL;
    g->cnt = 0;
    for (int j = 0; j < a->naggs; j++) {
        g->n[j] = g->isum[j] = 0;
        g->dsum[j] = 0;
        sbuf_reset(&g->ms[j]);
    }
    int rc = store_state_get(txn, STORE_STATE, a->tid, 0, a->kbuf.p, a->kbuf.len, &a->rec, err);
    if (rc && rc != XE_NOTFOUND) return NULL;
    if (!rc && (rc = decode(a, op, g, (const unsigned char *)a->rec.p, a->rec.len))) {
        xerr_set(err, rc, rc == XE_NOMEM ? "out of memory" : "the state of a table's group is damaged");
        return NULL;
    }
    g->had = !rc && g->cnt > 0;
    a->slot[x] = ++a->ng;
    return g;
}

/* -U and -D retract; anything else (+I, +U, a stream's rows) adds. */
static int row_sign(const tagg_task *a, const val *row)
{
    if (a->op_col < 0) return 1;
    const val *v = &row[a->op_col];
    return v->type == TY_TEXT && v->len == 2 && v->s[0] == '-' ? -1 : 1;
}

/* A group's output row: the key's values, the aggregates, no window. */
static int out_row(opinst *o, tagg_task *a, const tg *g, xerr *err)
{
    const plan_op *op = o->op;
    val *r = batch_add_row(&o->out);
    if (!r) return xerr_set(err, XE_NOMEM, "out of memory");
    if (val_key_decode(g->key.p, g->key.len, r, a->ngroups, &o->out, err) < 0)
        return xerr_set(err, XE_CORRUPT, "a table's group key is damaged");
    for (int j = 0; j < a->naggs; j++) {
        val *v = &r[a->ngroups + j];
        const plan_agg *ag = &op->aggs[j];
        *v = val_null();
        switch (ag->fn) {
        case FN_COUNT_STAR: *v = val_int(TY_BIGINT, g->cnt); break;
        case FN_COUNT: *v = val_int(TY_BIGINT, g->n[j]); break;
        case FN_SUM:
            if (g->n[j] <= 0) break;
            *v = ag->type == TY_DOUBLE ? val_double(g->dsum[j] + (double)g->isum[j]) : val_int(ag->type, g->isum[j]);
            break;
        case FN_AVG:
            if (g->n[j] > 0) *v = val_double((g->dsum[j] + (double)g->isum[j]) / (double)g->n[j]);
            break;
        case FN_COUNT_DISTINCT: {
            int64_t n = 0;
            for (size_t at = 0; at < g->ms[j].len; n++)
                at += 2 + ((size_t)(unsigned char)g->ms[j].p[at] << 8 | (unsigned char)g->ms[j].p[at + 1]) + 8;
            *v = val_int(TY_BIGINT, n);
            break;
        }
        case FN_MIN:
        case FN_MAX: {
            const unsigned char *p = (const unsigned char *)g->ms[j].p;
            if (!g->ms[j].len) break;
            size_t at = 0, last = 0;
            while (at < g->ms[j].len) {
                last = at;
                if (ag->fn == FN_MIN) break;
                at += 2 + ((size_t)p[at] << 8 | p[at + 1]) + 8;
            }
            size_t l = (size_t)p[last] << 8 | p[last + 1];
            if (val_key_decode(p + last + 2, l, v, 1, &o->out, err) < 0)
                return xerr_set(err, XE_CORRUPT, "a table's MIN or MAX set is damaged");
            break;
        }
        default: break;
        }
    }
    r[a->ngroups + a->naggs] = val_null();
    r[a->ngroups + a->naggs + 1] = val_null();
    return 0;
}

int tagg_push(opinst *o, int task, const batch *in, xerr *err)
{
    tagg_task *a = o->tagg[task];
    const plan_op *op = o->op;
    query *q = o->q;
    store_txn *txn = q->eng->txn;
    if (!txn) return xerr_set(err, XE_PLAN, "a table's aggregate ran outside an epoch");
    a->ng = 0;
    if (a->nslot) memset(a->slot, 0, (size_t)a->nslot * sizeof *a->slot);
    batch_reset(&q->scratch);
    for (int r = 0; r < in->nrows; r++) {
        const val *row = batch_row(in, r);
        int sign = row_sign(a, row);
        for (int i = 0; i < a->ngroups; i++) a->kv[i] = xprog_eval(&o->progs[i], row, &q->scratch);
        sbuf_reset(&a->kbuf);
        if (val_key_encode(a->kv, a->ngroups, &a->kbuf)) return xerr_set(err, XE_NOMEM, "out of memory");
        tg *g = group_for(a, op, txn, err);
        if (!g) return err->code ? err->code : XE_NOMEM;
        g->cnt += sign;
        for (int j = 0, p = a->ngroups; j < a->naggs; j++) {
            if (!op->aggs[j].arg) continue;
            val v = xprog_eval(&o->progs[p++], row, &q->scratch);
            if (v.type == TY_NULL) continue;
            g->n[j] += sign;
            if (keeps_set(op->aggs[j].fn)) {
                sbuf_reset(&a->rec);
                if (val_key_encode(&v, 1, &a->rec) || ms_add(&g->ms[j], a->rec.p, a->rec.len, sign))
                    return xerr_set(err, XE_NOMEM, "out of memory");
            } else if (v.type == TY_DOUBLE)
                g->dsum[j] += sign * v.d;
            else
                g->isum[j] += sign * v.i;
        }
        if (q->scratch.nrows > 4096) batch_reset(&q->scratch);
    }
    /* Which groups the table keeps: those with rows that pass HAVING.  The
     * state, then the rows: the kept groups, then those that held a row
     * before and are not kept now (they lost their rows, or fail HAVING:
     * the table deletes their keys, and ignores the delete of a key it does
     * not hold, so a group that failed HAVING before stays silent). */
    int rc;
    for (int i = 0; i < a->ng; i++) {
        tg *g = &a->g[i];
        g->keep = g->cnt > 0;
        if (!g->keep || a->having < 0) continue;
        batch_reset(&o->out);
        if ((rc = out_row(o, a, g, err))) return rc;
        g->keep = xprog_true(&q->ops[a->having].progs[0], batch_row(&o->out, 0), &q->scratch);
        batch_reset(&q->scratch);
        g->had |= !g->keep;
    }
    for (int pass = 0; pass < 2; pass++) {
        batch_reset(&o->out);
        for (int i = 0; i < a->ng; i++) {
            tg *g = &a->g[i];
            if (pass == 0) {
                if (g->cnt == 0 && !g->n[0] && (!a->naggs || !g->ms[0].len))
                    rc = store_state_del(txn, STORE_STATE, a->tid, 0, g->key.p, g->key.len, err);
                else if (!(rc = encode(a, op, g, &a->rec)))
                    rc = store_state_put(txn, STORE_STATE, a->tid, 0, g->key.p, g->key.len, a->rec.p, a->rec.len, err);
                else
                    rc = xerr_set(err, XE_NOMEM, "out of memory");
                if (rc) return rc;
            }
            if (pass == 0 ? g->keep : !g->keep && g->had)
                if ((rc = out_row(o, a, g, err))) return rc;
        }
        if (!o->out.nrows) continue;
        q->retracting = pass;
        rc = o->emit_down(o, task, &o->out, err);
        q->retracting = 0;
        if (rc) return rc;
    }
    return 0;
}
