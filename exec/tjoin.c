/*
 * tjoin.c: the stream-table join, one task.
 *
 *   SELECT ... FROM s [LEFT] JOIN t ON s.k = t.k
 *
 * meets each row of the stream s with the row the table t holds for its
 * key.  The right input is t's changelog (op first: +I, -U, +U, -D); the
 * task keeps t's rows by key in a jside, a row's time its event time.
 *
 *  - Versioned (both sides have an event time): the row of t as of the
 *    stream row's time, the newest change of its key at or before it, as
 *    Flink's event-time temporal join.  A stream row waits until t's
 *    watermark has passed its time, so that every change of t up to then
 *    has arrived; then it is joined and let go.  A key keeps the changes
 *    after `low` and the newest one at or before it, where `low` is the
 *    least time a stream row may still have (the stream's watermark, or a
 *    waiting row's time); a stream row below `low` is late.  A delete is a
 *    version too (a tombstone): after it the key has no row.  Its -D
 *    carries the row it deletes, not a time of its own, so it is dated at
 *    the latest table time this task has seen (`tmax`), or the deleted
 *    row's time if that is later.
 *  - Current (either side without an event time): the row t holds when the
 *    stream row arrives, as ksqlDB's stream-table join; a change replaces
 *    its key's row, a delete removes it.  Only the stream's watermark
 *    passes (ops.c).
 *
 * A stream row that meets no row of t (or one that fails a LEFT JOIN's
 * further ON conditions, the residual) is dropped by JOIN and emitted with
 * NULLs by LEFT JOIN.  The output row is the left row, then the table row
 * with its op (hidden from names; the planner's layout keeps it).
 *
 * State in LMDB, under (task, time, side || sequence) as join.c keeps it:
 * side 1 the table's rows, side 0 the waiting stream rows, and one record
 * (side 2, time 0) with `low`, the released watermark and `tmax`.  A flush writes
 * the rows added since the last one and deletes the persisted rows that
 * have gone (the graves), once per epoch.
 *
 * Below join.c (which dispatches here, and uses its jkey_* functions);
 * uses jstore.c and the expression programs.  Engine thread.
 */
#include "exec/internal.h"

#include <stdlib.h>
#include <string.h>

/* The joins' keys (join.c's too): hashed, evaluated, compared. */
uint64_t jkey_hash(const val *k, int n)
{
    uint64_t h = 0x2545f4914f6cdd1dULL;
    for (int i = 0; i < n; i++) h = hash64_mix(h ^ val_hash(&k[i], (uint64_t)i));
    return h;
}

int jkey_eval(opinst *o, int s, const val *row, val *out)
{
    int n = o->op->njoinkeys;
    for (int i = 0; i < n; i++) {
        out[i] = xprog_eval(&o->progs[s * n + i], row, &o->q->scratch);
        if (out[i].type == TY_NULL) return 0;
    }
    return 1;
}

int jkey_equal(const val *a, const val *b, int n)
{
    for (int k = 0; k < n; k++)
        if (!val_equal(&a[k], &b[k])) return 0;
    return 1;
}

enum { TJ_PEND = 0, TJ_VER = 1, TJ_META = 2 };

typedef struct tgrave {
    int64_t ts;
    uint64_t seq;
    unsigned char side;
} tgrave;

struct tjoin {
    jside ver;          /* the table's rows (op first) */
    jside pend;         /* versioned: stream rows waiting for the table's watermark */
    int64_t low;        /* versioned: stream rows below it are late */
    int64_t released;   /* versioned: waiting rows below it have been joined */
    int64_t tmax;       /* versioned: the latest table time seen (a delete's date) */
    int64_t saved_low, saved_released, saved_tmax;
    tgrave *graves;     /* persisted rows gone since the last flush */
    int ngraves, capgraves;
    val *k0, *k1;
    val *joined;        /* left ++ right, being built */
    int lcols, rcols;
    sbuf val;
};

tjoin *tjoin_new(opinst *o)
{
    tjoin *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    const plan_op *op = o->op;
    const plan_dag *d = o->q->dag;
    j->lcols = d->ops[op->inputs[0]].out.ncols;
    j->rcols = d->ops[op->inputs[1]].out.ncols;
    j->low = j->released = j->tmax = j->saved_low = j->saved_released = j->saved_tmax = WM_MIN;
    if (jside_init(&j->ver, j->rcols) || jside_init(&j->pend, j->lcols) ||
        !(j->k0 = calloc((size_t)op->njoinkeys + 1, sizeof *j->k0)) ||
        !(j->k1 = calloc((size_t)op->njoinkeys + 1, sizeof *j->k1)) ||
        !(j->joined = calloc((size_t)(j->lcols + j->rcols) + 1, sizeof *j->joined))) {
        tjoin_free(j);
        return NULL;
    }
    return j;
}

void tjoin_free(tjoin *j)
{
    if (!j) return;
    jside_fini(&j->ver);
    jside_fini(&j->pend);
    free(j->graves);
    free(j->k0);
    free(j->k1);
    free(j->joined);
    sbuf_fini(&j->val);
    free(j);
}

uint64_t tjoin_state_bytes(const tjoin *j)
{
    uint64_t per = 3 * sizeof(uint64_t) + sizeof(int32_t);
    return (uint64_t)j->ver.live * ((uint64_t)j->rcols * sizeof(val) + per) +
           (uint64_t)j->pend.live * ((uint64_t)j->lcols * sizeof(val) + per);
}

/* Row r of s is gone; a persisted one is deleted at the next flush. */
static int bury(tjoin *j, jside *s, unsigned char side, int r)
{
    if (r < s->persisted && s->ts[r] != WM_MIN) {
        if (j->ngraves == j->capgraves) {
            int cap = j->capgraves ? j->capgraves * 2 : 64;
            tgrave *g = realloc(j->graves, (size_t)cap * sizeof *g);
            if (!g) return XE_NOMEM;
            j->graves = g;
            j->capgraves = cap;
        }
        j->graves[j->ngraves++] = (tgrave){s->ts[r], s->seq[r], side};
    }
    jside_kill(s, r);
    return 0;
}

/* The op of a changelog row: 0 an upsert (+I, +U), 1 a delete (-D), -1 a
 * retraction to skip (-U: its +U follows). */
static int row_op(const val *row)
{
    const val *v = &row[0];
    if (v->type != TY_TEXT || v->len < 2) return 0;
    if (v->s[0] != '-') return 0;
    return v->s[1] == 'D' ? 1 : -1;
}

/* A table row's time: its event time (versioned), else 0. */
static int64_t ver_time(const opinst *o, const val *row)
{
    if (!o->op->versioned) return 0;
    const val *t = &row[o->op->rts_col];
    return t->type == TY_NULL ? WM_MIN : t->i;
}

/* Keep of key (j->k0, hash kh) the versions after low and the newest at or
 * before it (versioned), or none (current: `all`). */
static int prune_key(opinst *o, tjoin *j, uint64_t kh, int all)
{
    jside *s = &j->ver;
    int nk = o->op->njoinkeys, keep = -1;
    for (int pass = 0; pass < 2; pass++)
        for (int32_t c = s->heads[kh & (s->nbuckets - 1)]; c >= 0; c = s->next[c]) {
            if (s->kh[c] != kh || s->ts[c] == WM_MIN) continue;
            if (!all && s->ts[c] > j->low) continue;
            if (!jkey_eval(o, 1, batch_row(&s->rows, c), j->k1) || !jkey_equal(j->k0, j->k1, nk)) continue;
            if (pass == 0) {
                if (!all && (keep < 0 || s->ts[c] > s->ts[keep] || (s->ts[c] == s->ts[keep] && s->seq[c] > s->seq[keep])))
                    keep = c;
            } else if (c != keep && bury(j, s, TJ_VER, c))
                return XE_NOMEM;
        }
    return 0;
}

static int table_row(opinst *o, tjoin *j, const val *row, xerr *err)
{
    int kind = row_op(row);
    if (kind < 0) return 0;
    int64_t ts = ver_time(o, row);
    if (ts == WM_MIN) { o->q->late++; return 0; }
    if (kind == 1 && j->tmax > ts) ts = j->tmax;
    if (o->op->versioned && ts > j->tmax) j->tmax = ts;
    if (!jkey_eval(o, 1, row, j->k0)) return 0; /* a key with a NULL: no stream row meets it */
    uint64_t kh = jkey_hash(j->k0, o->op->njoinkeys);
    int rc = 0;
    if (!o->op->versioned) {
        /* the key's row, if any, is replaced or deleted */
        rc = prune_key(o, j, kh, 1);
        if (!rc && kind == 0) rc = jside_add(&j->ver, row, 0, kh, j->ver.next_seq++);
    } else {
        rc = jside_add(&j->ver, row, ts, kh, j->ver.next_seq++);
        if (!rc) rc = prune_key(o, j, kh, 0);
    }
    batch_reset(&o->q->scratch);
    return rc ? xerr_set(err, XE_NOMEM, "out of memory") : 0;
}

/* Join the stream row `row` of time ts to the table's row of its key and
 * add the result (if any) to o->out. */
static int emit_row(opinst *o, int task, tjoin *j, const val *row, int64_t ts, xerr *err)
{
    const plan_op *op = o->op;
    jside *s = &j->ver;
    int nk = op->njoinkeys, best = -1;
    if (jkey_eval(o, 0, row, j->k0)) {
        uint64_t kh = jkey_hash(j->k0, nk);
        for (int32_t c = s->heads[kh & (s->nbuckets - 1)]; c >= 0; c = s->next[c]) {
            if (s->kh[c] != kh || s->ts[c] == WM_MIN || (op->versioned && s->ts[c] > ts)) continue;
            if (!jkey_eval(o, 1, batch_row(&s->rows, c), j->k1) || !jkey_equal(j->k0, j->k1, nk)) continue;
            if (best < 0 || s->ts[c] > s->ts[best] || (s->ts[c] == s->ts[best] && s->seq[c] > s->seq[best])) best = c;
        }
    }
    if (best >= 0 && row_op(batch_row(&s->rows, best)) == 1) best = -1; /* deleted by then */
    memcpy(j->joined, row, (size_t)j->lcols * sizeof *j->joined);
    if (best >= 0) memcpy(j->joined + j->lcols, batch_row(&s->rows, best), (size_t)j->rcols * sizeof *j->joined);
    if (best >= 0 && op->residual && !xprog_true(&o->progs[2 * nk], j->joined, &o->q->scratch)) best = -1;
    if (best < 0) {
        if (!op->outer) { batch_reset(&o->q->scratch); return 0; }
        for (int c = 0; c < j->rcols; c++) j->joined[j->lcols + c] = (val){.type = TY_NULL};
    }
    int rc = batch_append_row(&o->out, j->joined);
    batch_reset(&o->q->scratch);
    if (rc) return xerr_set(err, XE_NOMEM, "out of memory");
    if (o->out.nrows >= EXEC_SLICE_ROWS) {
        if ((rc = o->emit_down(o, task, &o->out, err))) return rc;
        batch_reset(&o->out);
    }
    return 0;
}

int tjoin_push(opinst *o, int task, tjoin *j, int side, const batch *in, xerr *err)
{
    const plan_op *op = o->op;
    int rc;
    batch_reset(&o->out);
    for (int r = 0; r < in->nrows; r++) {
        const val *row = batch_row(in, r);
        if (side) {
            if ((rc = table_row(o, j, row, err))) return rc;
            continue;
        }
        int64_t ts = 0;
        if (op->versioned) {
            if (row[op->lts_col].type == TY_NULL) { o->q->late++; continue; }
            ts = row[op->lts_col].i;
            if (ts < j->low) { o->q->late++; continue; } /* the version it needs may be gone */
            if (ts >= j->released) {
                /* t may still change at or before ts: wait */
                if (jside_add(&j->pend, row, ts, 0, j->pend.next_seq++)) return xerr_set(err, XE_NOMEM, "out of memory");
                continue;
            }
        }
        if ((rc = emit_row(o, task, j, row, ts, err))) return rc;
    }
    if (o->out.nrows) return o->emit_down(o, task, &o->out, err);
    return 0;
}

/* The watermarks moved (o->wm[0] the stream's, o->wm[1] the table's): join
 * the waiting rows the table's has passed, in the order they came, and
 * raise low. */
int tjoin_expire(opinst *o, int task, tjoin *j, xerr *err)
{
    if (!o->op->versioned) return 0;
    int rc;
    int64_t twm = o->wm[1];
    jside *p = &j->pend;
    batch_reset(&o->out);
    if (twm > j->released) {
        j->released = twm;
        for (int r = 0; r < p->rows.nrows; r++) {
            if (p->ts[r] == WM_MIN || p->ts[r] >= twm) continue;
            if ((rc = emit_row(o, task, j, batch_row(&p->rows, r), p->ts[r], err))) return rc;
            if (bury(j, p, TJ_PEND, r)) return xerr_set(err, XE_NOMEM, "out of memory");
        }
        if (o->out.nrows && (rc = o->emit_down(o, task, &o->out, err))) return rc;
        batch_reset(&o->out);
    }
    int64_t low = o->wm[0];
    for (int r = 0; r < p->rows.nrows; r++)
        if (p->ts[r] != WM_MIN && p->ts[r] < low) low = p->ts[r];
    if (low > j->low) j->low = low;
    if ((p->rows.nrows > 256 && p->live * 2 < p->rows.nrows && jside_compact(p)) ||
        (j->ver.rows.nrows > 256 && j->ver.live * 2 < j->ver.rows.nrows && jside_compact(&j->ver)))
        return xerr_set(err, XE_NOMEM, "out of memory");
    return 0;
}

static void state_key(unsigned char *k, unsigned char side, uint64_t seq)
{
    k[0] = side;
    be64_put(k + 1, seq);
}

int tjoin_flush(opinst *o, int task, tjoin *j, store_txn *t, xerr *err)
{
    uint32_t tid = query_task_id(o->q, o->op->id, task);
    unsigned char k[9];
    int rc;
    for (int g = 0; g < j->ngraves; g++) {
        state_key(k, j->graves[g].side, j->graves[g].seq);
        if ((rc = store_state_del(t, STORE_STATE, tid, j->graves[g].ts, k, 9, err))) return rc;
    }
    j->ngraves = 0;
    jside *sides[2] = {&j->pend, &j->ver};
    for (int s = 0; s < 2; s++) {
        jside *sd = sides[s];
        for (int r = sd->persisted; r < sd->rows.nrows; r++) {
            if (sd->ts[r] == WM_MIN) continue;
            state_key(k, (unsigned char)s, sd->seq[r]);
            sbuf_reset(&j->val);
            if (val_key_encode(batch_row(&sd->rows, r), sd->rows.ncols, &j->val))
                return xerr_set(err, XE_NOMEM, "out of memory");
            if ((rc = store_state_put(t, STORE_STATE, tid, sd->ts[r], k, 9, j->val.p, j->val.len, err))) return rc;
        }
        sd->persisted = sd->rows.nrows;
    }
    if (j->low != j->saved_low || j->released != j->saved_released || j->tmax != j->saved_tmax) {
        unsigned char v[24];
        be64_put(v, (uint64_t)j->low);
        be64_put(v + 8, (uint64_t)j->released);
        be64_put(v + 16, (uint64_t)j->tmax);
        state_key(k, TJ_META, 0);
        if ((rc = store_state_put(t, STORE_STATE, tid, 0, k, 9, v, sizeof v, err))) return rc;
        j->saved_low = j->low;
        j->saved_released = j->released;
        j->saved_tmax = j->tmax;
    }
    return 0;
}

typedef struct tload {
    opinst *o;
    tjoin *j;
    val *row;
    batch tmp;
    xerr *err;
    int rc;
} tload;

static int tload_one(void *ctx, int64_t ts, const void *kp, size_t kl, const void *vp, size_t vl)
{
    tload *c = ctx;
    tjoin *j = c->j;
    const unsigned char *k = kp;
    if (kl != 9 || k[0] > TJ_META) goto corrupt;
    if (k[0] == TJ_META) {
        if (vl != 24) goto corrupt;
        j->low = j->saved_low = (int64_t)be64_get(vp);
        j->released = j->saved_released = (int64_t)be64_get((const unsigned char *)vp + 8);
        j->tmax = j->saved_tmax = (int64_t)be64_get((const unsigned char *)vp + 16);
        return 0;
    }
    jside *sd = k[0] == TJ_VER ? &j->ver : &j->pend;
    batch_reset(&c->tmp);
    if (val_key_decode(vp, vl, c->row, sd->rows.ncols, &c->tmp, c->err) < 0) goto corrupt;
    uint64_t kh = 0, seq = be64_get(k + 1);
    if (k[0] == TJ_VER) {
        if (!jkey_eval(c->o, 1, c->row, j->k0)) goto corrupt;
        kh = jkey_hash(j->k0, c->o->op->njoinkeys);
        batch_reset(&c->o->q->scratch);
    }
    if (jside_add(sd, c->row, ts, kh, seq)) {
        c->rc = xerr_set(c->err, XE_NOMEM, "out of memory");
        return 1;
    }
    if (seq >= sd->next_seq) sd->next_seq = seq + 1;
    sd->persisted = sd->rows.nrows;
    return 0;
corrupt:
    c->rc = xerr_set(c->err, XE_CORRUPT, "stream-table join state of query task %u is corrupt",
                     query_task_id(c->o->q, c->o->op->id, 0));
    return 1;
}

int tjoin_load(opinst *o, int task, tjoin *j, store_txn *t, xerr *err)
{
    int nc = j->lcols > j->rcols ? j->lcols : j->rcols;
    tload c = {o, j, calloc((size_t)nc + 1, sizeof(val)), {0}, err, 0};
    if (!c.row || batch_init(&c.tmp, nc, 4)) {
        free(c.row);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    int rc = store_state_scan(t, STORE_STATE, query_task_id(o->q, o->op->id, task), WM_MIN, WM_END, tload_one, &c, err);
    free(c.row);
    batch_fini(&c.tmp);
    return c.rc ? c.rc : rc;
}
