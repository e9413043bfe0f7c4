/*
 * join.c: the stream-stream join within a time bound, one task.
 *
 *   SELECT ... FROM a JOIN b ON a.k = b.k WITHIN 5 SECONDS
 *
 * pairs every row of a with every row of b that has equal keys and an event
 * time no more than WITHIN apart.  Each side keeps the rows that may still
 * match: a row of time ts can match until the other side's watermark passes
 * ts + WITHIN, then it expires.  Results are emitted as soon as the second
 * row of a pair arrives (append-only; no retractions).
 *
 * State: per side a row store (a batch, its strings in the batch's arena) and
 * a hash index from key hash to row.  Expired rows are dropped when they make
 * up half of the store, by copying the live ones into a fresh batch, so the
 * store stays bounded by the rows of the last WITHIN plus the watermark delay.
 * In LMDB each row is kept under (task, its event time, side || sequence) and
 * expiry is one range delete.
 */
#include "exec/internal.h"

#include <stdlib.h>
#include <string.h>

struct join_task {
    tjoin *tj;          /* a stream-table join (tjoin.c) does all the work */
    jside side[2];
    int64_t expired_wm; /* rows with ts < expired_wm - within are gone */
    int64_t persisted_wm;
    sbuf key, val;
    val *k0, *k1;
};

uint64_t join_state_bytes(const join_task *j)
{
    uint64_t b = 0;
    if (j && j->tj) return tjoin_state_bytes(j->tj);
    for (int k = 0; j && k < 2; k++) {
        const jside *s = &j->side[k];
        /* a row's values, its time, key hash, sequence and chain link */
        b += (uint64_t)s->live * ((uint64_t)s->rows.ncols * sizeof(val) + 3 * sizeof(uint64_t) + sizeof(int32_t));
    }
    return b;
}

join_task *join_new(opinst *o, int task)
{
    (void)task;
    join_task *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    const plan_op *op = o->op;
    const plan_dag *d = o->q->dag;
    if (op->temporal) {
        if (!(j->tj = tjoin_new(o))) {
            free(j);
            return NULL;
        }
        return j;
    }
    if (jside_init(&j->side[0], d->ops[op->inputs[0]].out.ncols) ||
        jside_init(&j->side[1], d->ops[op->inputs[1]].out.ncols)) {
        join_free(j);
        return NULL;
    }
    j->k0 = calloc((size_t)op->njoinkeys + 1, sizeof *j->k0);
    j->k1 = calloc((size_t)op->njoinkeys + 1, sizeof *j->k1);
    j->expired_wm = WM_MIN;
    if (!j->k0 || !j->k1) {
        join_free(j);
        return NULL;
    }
    return j;
}

void join_free(join_task *j)
{
    if (!j) return;
    if (j->tj) {
        tjoin_free(j->tj);
        free(j);
        return;
    }
    jside_fini(&j->side[0]);
    jside_fini(&j->side[1]);
    sbuf_fini(&j->key);
    sbuf_fini(&j->val);
    free(j->k0);
    free(j->k1);
    free(j);
}

int join_push(opinst *o, int task, int s, const batch *in, xerr *err)
{
    join_task *j = o->join[task];
    if (j->tj) return tjoin_push(o, task, j->tj, s, in, err);
    const plan_op *op = o->op;
    jside *me = &j->side[s], *other = &j->side[!s];
    int tscol = s ? op->rts_col : op->lts_col;
    int nk = op->njoinkeys;
    int lcols = j->side[0].rows.ncols, rcols = j->side[1].rows.ncols;
    batch_reset(&o->out);
    for (int r = 0; r < in->nrows; r++) {
        const val *row = batch_row(in, r);
        if (row[tscol].type == TY_NULL) { o->q->late++; continue; }
        int64_t ts = row[tscol].i;
        /* a row that every possible partner has already passed can never match */
        if (j->expired_wm != WM_MIN && ts + op->within_ms < j->expired_wm) { o->q->late++; continue; }
        if (!jkey_eval(o, s, row, j->k0)) { batch_reset(&o->q->scratch); continue; }
        uint64_t kh = jkey_hash(j->k0, nk);
        for (int32_t c = other->heads[kh & (other->nbuckets - 1)]; c >= 0; c = other->next[c]) {
            if (other->kh[c] != kh || other->ts[c] == WM_MIN) continue;
            int64_t d = other->ts[c] - ts;
            if (d > op->within_ms || -d > op->within_ms) continue;
            const val *orow = batch_row(&other->rows, c);
            if (!jkey_eval(o, !s, orow, j->k1)) continue;
            int eq = 1;
            for (int k = 0; k < nk && eq; k++) eq = val_equal(&j->k0[k], &j->k1[k]);
            if (!eq) continue;
            val *out = batch_add_row(&o->out);
            if (!out) return xerr_set(err, XE_NOMEM, "out of memory");
            const val *l = s ? orow : row, *rr = s ? row : orow;
            memcpy(out, l, (size_t)lcols * sizeof *out);
            memcpy(out + lcols, rr, (size_t)rcols * sizeof *out);
            if (o->out.nrows >= EXEC_SLICE_ROWS) {
                int rc = o->emit_down(o, task, &o->out, err);
                if (rc) return rc;
                batch_reset(&o->out);
            }
        }
        batch_reset(&o->q->scratch);
        if (jside_add(me, row, ts, kh, me->next_seq++)) return xerr_set(err, XE_NOMEM, "out of memory");
    }
    if (o->out.nrows) return o->emit_down(o, task, &o->out, err);
    return 0;
}

int join_expire(opinst *o, int task, int64_t wm, xerr *err)
{
    join_task *j = o->join[task];
    if (j->tj) return tjoin_expire(o, task, j->tj, err);
    if (wm <= j->expired_wm) return 0;
    j->expired_wm = wm;
    int64_t cut = wm == WM_END ? WM_END : wm - o->op->within_ms;
    for (int s = 0; s < 2; s++) {
        jside *sd = &j->side[s];
        for (int r = 0; r < sd->rows.nrows; r++)
            if (sd->ts[r] != WM_MIN && sd->ts[r] < cut) {
                sd->ts[r] = WM_MIN;
                sd->live--;
            }
        if (sd->rows.nrows > 256 && sd->live * 2 < sd->rows.nrows && jside_compact(sd))
            return xerr_set(err, XE_NOMEM, "out of memory");
    }
    return 0;
}

int join_flush(opinst *o, int task, store_txn *t, xerr *err)
{
    join_task *j = o->join[task];
    if (j->tj) return tjoin_flush(o, task, j->tj, t, err);
    uint32_t tid = query_task_id(o->q, o->op->id, task);
    int rc;
    int64_t cut = j->expired_wm == WM_END ? WM_END - 1 : j->expired_wm - o->op->within_ms;
    if (j->expired_wm != WM_MIN && cut > j->persisted_wm) {
        if ((rc = store_state_delete_range(t, STORE_STATE, tid, WM_MIN, cut, err))) return rc;
        j->persisted_wm = cut;
    }
    for (int s = 0; s < 2; s++) {
        jside *sd = &j->side[s];
        for (int r = sd->persisted; r < sd->rows.nrows; r++) {
            if (sd->ts[r] == WM_MIN) continue;
            unsigned char k[9];
            k[0] = (unsigned char)s;
            be64_put(k + 1, sd->seq[r]);
            sbuf_reset(&j->val);
            if (val_key_encode(batch_row(&sd->rows, r), sd->rows.ncols, &j->val))
                return xerr_set(err, XE_NOMEM, "out of memory");
            if ((rc = store_state_put(t, STORE_STATE, tid, sd->ts[r], k, 9, j->val.p, j->val.len, err))) return rc;
        }
        sd->persisted = sd->rows.nrows;
    }
    return 0;
}

typedef struct jload {
    opinst *o;
    join_task *j;
    val *row;
    batch tmp;
    xerr *err;
    int rc;
} jload;

static int jload_one(void *ctx, int64_t ts, const void *kp, size_t kl, const void *vp, size_t vl)
{
    jload *c = ctx;
    const unsigned char *k = kp;
    if (kl != 9 || k[0] > 1) goto corrupt;
    int s = k[0];
    jside *sd = &c->j->side[s];
    batch_reset(&c->tmp);
    if (val_key_decode(vp, vl, c->row, sd->rows.ncols, &c->tmp, c->err) < 0) goto corrupt;
    if (!jkey_eval(c->o, s, c->row, c->j->k0)) return 0;
    uint64_t seq = be64_get(k + 1);
    if (jside_add(sd, c->row, ts, jkey_hash(c->j->k0, c->o->op->njoinkeys), seq)) {
        c->rc = xerr_set(c->err, XE_NOMEM, "out of memory");
        return 1;
    }
    batch_reset(&c->o->q->scratch);
    if (seq >= sd->next_seq) sd->next_seq = seq + 1;
    sd->persisted = sd->rows.nrows;
    return 0;
corrupt:
    c->rc = xerr_set(c->err, XE_CORRUPT, "join state of query task %u is corrupt",
                     query_task_id(c->o->q, c->o->op->id, 0));
    return 1;
}

int join_load(opinst *o, int task, store_txn *t, xerr *err)
{
    join_task *j = o->join[task];
    if (j->tj) return tjoin_load(o, task, j->tj, t, err);
    int nc = j->side[0].rows.ncols > j->side[1].rows.ncols ? j->side[0].rows.ncols : j->side[1].rows.ncols;
    jload c = {o, j, calloc((size_t)nc + 1, sizeof(val)), {0}, err, 0};
    if (!c.row || batch_init(&c.tmp, nc, 4)) {
        free(c.row);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    int rc = store_state_scan(t, STORE_STATE, query_task_id(o->q, o->op->id, task), WM_MIN, WM_END, jload_one, &c, err);
    free(c.row);
    batch_fini(&c.tmp);
    return c.rc ? c.rc : rc;
}
