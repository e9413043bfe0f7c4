/*
 * ft.c: the engine's side of fault tolerance in a cluster: its API, above
 * the operators (the per-operator state helpers it uses are in ftstate.c).
 *
 * Positions.  Every row a query reads comes from a record of a stream log,
 * and travels tagged with that record's offset + 1 (query.tag, and the tag
 * of BATCH and WATERMARK frames).  A stateful task fed by a source through
 * stateless operators keeps, per input side, inc: the tag of the last record
 * its state includes (ops.c).  inc is written with the state in the epoch's
 * transaction ("inc/<task>", ftstate.c), so state and position always agree.
 *
 * Replicas.  With ft = replica the epoch's changes to a task's state are
 * recorded as they are written (store_txn_record) and handed to the host
 * after the commit (engine_remote.state), with inc and how far windows are
 * closed; the first epoch after a deployment sends a whole snapshot, so a
 * new replica catches up without stopping the query.  With ft = checkpoint
 * only a whole snapshot goes, every checkpoint_ms.  A replica applies them
 * to its STORE_REPLICA ("rft/<task>" keeps inc, closed and the epoch).
 *
 * Recovery.  A query redeployed after a failure (engine_deploy_opts.prev)
 * takes each local task's state from the previous deployment: this node's
 * own (a survivor, kept by engine_undeploy) or a replica held here (a
 * promotion); with ft = upstream only survivors keep theirs.  Its sources
 * hold their input until engine_replay, which starts at the minimum position
 * any task needs (engine_ft_resume on every node).  Tasks skip what their
 * state has, and the watermarks replay exactly as they were (each log record
 * says whether the watermark advanced after it), so the recomputed windows
 * equal the lost ones.  The sink's host drops rows it had already delivered.
 *
 * Nothing here commits: engine_replica_apply and engine_replay are
 * epoch.c's, which commit after ft_replica_apply and ft_replay_step.  Runs on
 * the engine's thread.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "exec/internal.h"

/* A delta's header: version 2 (a query of at most 2 source slots): version,
 * flags, inc[2], closed, u32 bytes of emitted rows (then the rows, then the
 * changes); version 3 (more slots, partitions): version, flags, u8 n,
 * inc[n], closed, u32 bytes of emitted rows. */
#define DELTA_VERSION 2
#define DELTA_VERSION_N 3
#define DELTA_HDR 30
#define DELTA_HDR_MAX (3 + 8 * ENGINE_MAX_SRC + 12)
#define DELTA_FULL 1
/* a snapshot is sent in pieces of about this size (a frame holds 16 MiB) */
#define DELTA_PIECE (4u << 20)

static const char *const ft_names[] = {"replica", "checkpoint", "upstream", "none"};

int engine_ft_parse(const char *s, engine_ft *out)
{
    for (int i = 0; i < 4; i++)
        if (!strcasecmp(s, ft_names[i])) {
            *out = (engine_ft)i;
            return 0;
        }
    return -1;
}

const char *engine_ft_name(engine_ft f)
{
    return (unsigned)f < 4 ? ft_names[f] : "?";
}

static query *find_id(const engine *e, uint32_t qid)
{
    for (int i = 0; i < e->nqueries; i++)
        if (e->queries[i]->deployed && e->queries[i]->id == qid) return e->queries[i];
    return NULL;
}

/* ------------------------------------------------------------------ the primary's side */

/* Queue one message for task k of o: header, the rows it emitted, then the records. */
static int queue_delta(query *q, opinst *o, int k, store_txn *t, int flags, const sbuf *out, const char *rec, size_t n,
                       xerr *err)
{
    size_t no = out ? out->len : 0;
    uint32_t tid = query_task_id(q, o->op->id, k);
    int64_t closed = WM_MIN;
    if (o->agg) {
        sbuf v;
        sbuf_init(&v);
        int rc = ft_get_meta(t, "closed/%u", tid, &v, 8, err);
        if (!rc) closed = (int64_t)be64_get((unsigned char *)v.p);
        sbuf_fini(&v);
        if (rc && rc != XE_NOTFOUND) return rc;
    }
    unsigned char h[12 + DELTA_HDR_MAX], *x = h + 14;
    const uint64_t *inc = &o->inc[k * o->incw];
    h[12] = o->incw > 2 ? DELTA_VERSION_N : DELTA_VERSION;
    h[13] = (unsigned char)flags;
    if (o->incw > 2) *x++ = (unsigned char)o->incw;
    for (int j = 0; j < o->incw; j++, x += 8) be64_put(x, inc[j]);
    be64_put(x, (uint64_t)closed);
    be32_put(x + 8, (uint32_t)no);
    size_t hl = (size_t)(x + 12 - h);
    be32_put(h, tid);
    be32_put(h + 4, (uint32_t)(o->task_base + k));
    be32_put(h + 8, (uint32_t)(hl - 12 + no + n));
    if (sbuf_add(&q->deltas, h, hl) || (no && sbuf_add(&q->deltas, out->p, no)) || sbuf_add(&q->deltas, rec, n))
        return xerr_set(err, XE_NOMEM, "out of memory");
    return 0;
}

int ft_collect(query *q, store_txn *t, xerr *err)
{
    int ckpt = q->ft.ft == ENGINE_FT_CHECKPOINT;
    uint64_t now = clock_mono_ns();
    int full = q->full_next || (ckpt && now - q->ckpt_ns >= (uint64_t)q->ft.checkpoint_ms * 1000000u);
    sbuf rec, rows;
    sbuf_init(&rec);
    sbuf_init(&rows);
    int rc = 0;
    for (int i = 0; i < q->dag->nops && !rc; i++) {
        opinst *o = &q->ops[i];
        for (int k = 0; ft_stateful(o) && k < o->ntasks && !rc; k++) {
            if (!task_local(q, o, k)) continue;
            sbuf_reset(&rec);
            if (!full && !ckpt) store_txn_record(t, &rec);
            rc = task_flush(o, k, t, err);
            store_txn_record(t, NULL);
            if (rc || (ckpt && !full)) continue;
            if (full) {
                /* with checkpoints, the rows of the epochs since the last one go too */
                sbuf_reset(&rows);
                if (ckpt) rc = ft_recent_out(t, query_task_id(q, i, k), &rows, err);
                if (!rc && sbuf_add(&rows, o->emitted[k].p, o->emitted[k].len)) rc = xerr_set(err, XE_NOMEM, "out of memory");
                if (!rc) rc = store_state_snapshot(t, STORE_STATE, query_task_id(q, i, k), &rec, err);
                /* in pieces: the first one replaces what the replica had */
                for (size_t off = 0; !rc && (off < rec.len || off == 0);) {
                    size_t end = off;
                    while (end < rec.len && end - off < DELTA_PIECE) end += store_rec_size(rec.p + end, rec.len - end);
                    rc = queue_delta(q, o, k, t, off == 0 ? DELTA_FULL : 0, off == 0 ? &rows : NULL, rec.p + off,
                                     end - off, err);
                    if (end == off) break;
                    off = end;
                }
                continue;
            }
            if (!rec.len && !o->emitted[k].len &&
                !memcmp(&o->inc[k * o->incw], &o->inc_saved[k * o->incw], (size_t)o->incw * sizeof *o->inc))
                continue;
            rc = queue_delta(q, o, k, t, 0, &o->emitted[k], rec.p, rec.len, err);
        }
    }
    sbuf_fini(&rec);
    sbuf_fini(&rows);
    if (!rc && full) {
        q->full_next = 0;
        q->ckpt_ns = now;
    }
    return rc;
}

/* The epoch's dirty state of q to LMDB: with replicas through ft_collect,
 * which records the changes for them; then the rows kept lately and the
 * positions (ftstate.c). */
int query_flush_state(query *q, store_txn *t, xerr *err)
{
    int rc;
    if (q->deployed && q->remote.state && (q->ft.ft == ENGINE_FT_REPLICA || q->ft.ft == ENGINE_FT_CHECKPOINT))
        rc = ft_collect(q, t, err);
    else {
        rc = 0;
        for (int i = 0; i < q->dag->nops && !rc; i++)
            for (int k = 0; k < q->ops[i].ntasks && !rc; k++)
                if (task_local(q, &q->ops[i], k)) rc = task_flush(&q->ops[i], k, t, err);
    }
    if (!rc && q->deployed) rc = ft_save_out(q, t, err);
    return rc ? rc : ft_save_inc(q, t, err);
}

void ft_send(engine *e)
{
    for (int i = 0; i < e->nqueries; i++) {
        query *q = e->queries[i];
        const unsigned char *p = (const unsigned char *)q->deltas.p;
        for (size_t off = 0; off + 12 <= q->deltas.len;) {
            uint32_t tid = be32_get(p + off), task = be32_get(p + off + 4), n = be32_get(p + off + 8);
            if (q->remote.state) q->remote.state(q->remote.ctx, q->id, (int)task, tid, e->epoch, p + off + 12, n);
            off += 12 + n;
        }
        sbuf_reset(&q->deltas);
    }
}

int ft_reemit(query *q, xerr *err)
{
    const unsigned char *p = (const unsigned char *)q->reemit.p, *end = p + q->reemit.len;
    int rc = 0;
    batch b = {0};
    while (!rc && end - p >= 8) {
        uint32_t task = be32_get(p), n = be32_get(p + 4);
        const unsigned char *x = p + 8, *xe = x + n;
        p = xe;
        opinst *o = NULL;
        for (int i = 0; i < q->dag->nops && !o; i++)
            if (q->ops[i].emitted && (int)task >= q->ops[i].task_base && (int)task < q->ops[i].task_base + q->ops[i].ntasks)
                o = &q->ops[i];
        if (!o) continue;
        /* each kept epoch: [u32 len] then rows ([u32 len][batch])... */
        for (; !rc && xe - x >= 4; x += 4 + be32_get(x)) {
            const unsigned char *y = x + 4, *ye = y + be32_get(x);
            if (ye > xe) break;
            for (; !rc && ye - y >= 4; y += 4 + be32_get(y)) {
                if (y + 4 + be32_get(y) > ye) break;
                if (!b.ncols && (rc = batch_init(&b, o->op->out.ncols, 64))) break;
                batch_reset(&b);
                if (!(rc = batch_decode(y + 4, be32_get(y), &b, err))) rc = op_emit(o, (int)task - o->task_base, &b, err);
            }
        }
    }
    if (b.ncols) batch_fini(&b);
    sbuf_reset(&q->reemit);
    return rc;
}

/* ------------------------------------------------------------------ the replica's side */

int ft_replica_apply(engine *e, uint32_t tid, uint64_t epoch, const void *p, size_t n, uint64_t pos[ENGINE_MAX_SRC],
                         int *npos, xerr *err)
{
    const unsigned char *b = p;
    int w = n >= 3 && b[0] == DELTA_VERSION_N ? b[2] : 2;
    size_t hl = b[0] == DELTA_VERSION_N ? 3 + 8 * (size_t)w + 12 : DELTA_HDR;
    if (n < 3 || (b[0] != DELTA_VERSION && b[0] != DELTA_VERSION_N) || w < 2 || w > ENGINE_MAX_SRC || n < hl)
        return xerr_set(err, XE_PROTO, "state change for task %u: bad header (%zu bytes, version %u)", tid, n,
                        n ? b[0] : 0);
    const unsigned char *inc = b + hl - 12 - 8 * (size_t)w; /* then closed, then the rows' length */
    size_t no = be32_get(b + hl - 4);
    if (no > n - hl) return xerr_set(err, XE_PROTO, "state change for task %u: %zu bytes of rows in %zu", tid, no, n);
    int rc = eng_txn(e, err);
    if (rc) return rc;
    if ((rc = store_state_apply(e->txn, STORE_REPLICA, b + hl + no, n - hl - no, err))) return rc;
    /* a whole snapshot comes with all the rows kept lately: they replace the older ones */
    if ((b[1] & DELTA_FULL) && (rc = ft_drop_out(e->txn, "rout/%u/", tid, 0, err))) return rc;
    if (no && ((rc = ft_put_out(e->txn, "rout/%u/", tid, epoch, b + hl, no, err)) ||
               (rc = ft_drop_out(e->txn, "rout/%u/", tid, KEEP_OUT, err))))
        return rc;
    for (int j = 0; j < w; j++) pos[j] = be64_get(inc + 8 * j);
    *npos = w;
    /* "rft/<task>": inc[w], closed, the epoch */
    char key[32];
    unsigned char v[8 * ENGINE_MAX_SRC + 16];
    size_t vl = 8 * (size_t)w + 8;
    memcpy(v, inc, vl);
    be64_put(v + vl, epoch);
    snprintf(key, sizeof key, "rft/%u", tid);
    return store_kv_put(e->txn, STORE_META, key, v, vl + 8, err);
}

typedef struct rft_scan {
    uint32_t qid;
    int n, cap;
    uint32_t *tids;
} rft_scan;

static int rft_one(void *ctx, const char *key, const void *v, size_t n)
{
    rft_scan *s = ctx;
    (void)v;
    (void)n;
    uint32_t tid = (uint32_t)strtoul(key + 4, NULL, 10);
    if (tid / 4096u != s->qid) return 0;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        uint32_t *x = realloc(s->tids, (size_t)cap * sizeof *x);
        if (!x) return XE_NOMEM;
        s->tids = x;
        s->cap = cap;
    }
    s->tids[s->n++] = tid;
    return 0;
}

int ft_drop_replicas(engine *e, uint32_t qid, xerr *err)
{
    rft_scan s = {qid, 0, 0, NULL};
    int rc = eng_txn(e, err);
    if (!rc) rc = store_kv_scan(e->txn, STORE_META, "rft/", rft_one, &s, err);
    if (rc == XE_NOMEM) xerr_set(err, rc, "out of memory");
    for (int i = 0; !rc && i < s.n; i++) {
        char key[32];
        snprintf(key, sizeof key, "rft/%u", s.tids[i]);
        if (!(rc = store_state_drop_task(e->txn, STORE_REPLICA, s.tids[i], err)) &&
            !(rc = store_kv_del(e->txn, STORE_META, key, err)))
            rc = ft_drop_out(e->txn, "rout/%u/", s.tids[i], 0, err);
    }
    free(s.tids);
    return rc;
}

/* ------------------------------------------------------------------ recovery */

static int put_meta(store_txn *t, const char *fmt, uint32_t tid, const void *v, size_t n, xerr *err)
{
    char key[32];
    snprintf(key, sizeof key, fmt, tid);
    return store_kv_put(t, STORE_META, key, v, n, err);
}

/* Take over one task's state from the previous deployment: own, or a replica. */
static int restore_task(query *q, opinst *o, int k, store_txn *t, int *own, int *promoted, xerr *err)
{
    uint32_t old = q->ft.prev * 4096u + (uint32_t)o->op->id * 64u + (uint32_t)k;
    uint32_t tid = query_task_id(q, o->op->id, k);
    sbuf v;
    sbuf_init(&v);
    size_t iw = 8 * (size_t)o->incw;
    int rc = ft_get_meta(t, "inc/%u", old, &v, iw, err);
    if (!rc) {
        /* a survivor: its own state, as of its last commit */
        if (!(rc = store_state_copy(t, STORE_STATE, old, STORE_STATE, tid, err)) &&
            !(rc = put_meta(t, "inc/%u", tid, v.p, iw, err)) && o->agg) {
            rc = ft_get_meta(t, "closed/%u", old, &v, 8, err);
            if (!rc) rc = put_meta(t, "closed/%u", tid, v.p, 8, err);
            else if (rc == XE_NOTFOUND) rc = 0;
        }
        if (!rc) rc = ft_collect_out(q, o, k, t, "out/%u/", old, err);
        if (!rc) (*own)++;
    } else if (rc == XE_NOTFOUND && (q->ft.ft == ENGINE_FT_REPLICA || q->ft.ft == ENGINE_FT_CHECKPOINT)) {
        rc = ft_get_meta(t, "rft/%u", old, &v, iw + 16, err);
        if (!rc) {
            /* a promotion: the replica held here becomes the state */
            const unsigned char *r = (const unsigned char *)v.p;
            if (!(rc = store_state_copy(t, STORE_REPLICA, old, STORE_STATE, tid, err)) &&
                !(rc = put_meta(t, "inc/%u", tid, r, iw, err)) && o->agg && (int64_t)be64_get(r + iw) != WM_MIN)
                rc = put_meta(t, "closed/%u", tid, r + iw, 8, err);
            if (!rc) rc = ft_collect_out(q, o, k, t, "rout/%u/", old, err);
            if (!rc) (*promoted)++;
        }
    }
    if (rc == XE_NOTFOUND) {
        /* Nothing to take over: the task starts empty.  A tumbling or hopping
         * aggregate need not see what precedes its undelivered windows: the
         * windows up to the sink's watermark count as closed. */
        rc = 0;
        const ast_window *w = &o->op->window;
        if (o->agg && q->ft.resume_wm != INT64_MIN && (w->kind == WIN_TUMBLING || w->kind == WIN_HOPPING)) {
            unsigned char c[8];
            be64_put(c, (uint64_t)(q->ft.resume_wm + w->grace_ms));
            if (!o->timed && !(o->timed = calloc((size_t)o->ntasks, 1))) rc = xerr_set(err, XE_NOMEM, "out of memory");
            if (!rc) rc = put_meta(t, "closed/%u", tid, c, 8, err);
            if (!rc) o->timed[k] = 1;
        }
    }
    sbuf_fini(&v);
    return rc;
}

int ft_restore(query *q, store_txn *t, xerr *err)
{
    /* a deployed query's stateful tasks keep what they emit (see above) */
    for (int i = 0; i < q->dag->nops; i++)
        if (ft_stateful(&q->ops[i]) && !(q->ops[i].emitted = calloc((size_t)q->ops[i].ntasks, sizeof(sbuf))))
            return xerr_set(err, XE_NOMEM, "out of memory");
    /* A first deployment starts empty, and so do its replicas: its first
     * changes are the whole state.  (No snapshot at once: the host may not
     * have told the replicas about the query yet.) */
    if (!q->ft.prev) return 0;
    int own = 0, promoted = 0, rc = 0;
    /* otherwise every task starts empty and the replay starts at the query's start */
    if (q->ft.ft != ENGINE_FT_NONE && ft_trackable(q))
        for (int i = 0; i < q->dag->nops && !rc; i++)
            for (int k = 0; ft_stateful(&q->ops[i]) && k < q->ops[i].ntasks && !rc; k++)
                if (task_local(q, &q->ops[i], k)) rc = restore_task(q, &q->ops[i], k, t, &own, &promoted, err);
    /* what the previous deployment left here goes */
    for (int i = 0; i < q->dag->nops && !rc; i++)
        for (int k = 0; k < q->ops[i].ntasks && !rc; k++) {
            uint32_t old = q->ft.prev * 4096u + (uint32_t)i * 64u + (uint32_t)k;
            char key[32];
            if (!(rc = store_state_drop_task(t, STORE_STATE, old, err))) {
                snprintf(key, sizeof key, "inc/%u", old);
                if (!(rc = store_kv_del(t, STORE_META, key, err))) {
                    snprintf(key, sizeof key, "closed/%u", old);
                    if (!(rc = store_kv_del(t, STORE_META, key, err))) rc = ft_drop_out(t, "out/%u/", old, 0, err);
                }
            }
        }
    if (!rc) rc = ft_drop_replicas(q->eng, q->ft.prev, err);
    q->hold = q->ft.ft != ENGINE_FT_NONE;
    q->full_next = 1;
    if (!rc && (own || promoted) && q->eng->log) {
        char msg[160];
        snprintf(msg, sizeof msg, "query %u: took over the state of %d tasks here (%d kept, %d promoted replicas)",
                 q->id, own + promoted, own, promoted);
        q->eng->log(q->eng->log_ctx, msg);
    }
    return rc;
}

int engine_ft_acked(engine *e, uint32_t qid, int task, const uint64_t *pos, int npos, xerr *err)
{
    query *q = find_id(e, qid);
    if (!q) return xerr_set(err, XE_NOTFOUND, "query %u is not deployed here", qid);
    for (int i = 0; i < q->dag->nops; i++) {
        opinst *o = &q->ops[i];
        if (!o->acked || task < o->task_base || task >= o->task_base + o->ntasks) continue;
        uint64_t *a = &o->acked[(task - o->task_base) * o->incw];
        for (int j = 0; j < o->incw && j < npos; j++)
            if (pos[j] > a[j]) a[j] = pos[j];
        return 0;
    }
    return xerr_set(err, XE_INVAL, "query %u has no stateful task %d", qid, task);
}

int engine_source_offsets(engine *e, uint32_t qid, uint64_t from[ENGINE_MAX_SRC], int *nsrc, xerr *err)
{
    query *q = find_id(e, qid);
    if (!q) return xerr_set(err, XE_NOTFOUND, "query %u is not deployed here", qid);
    for (int k = 0; k < ENGINE_MAX_SRC; k++) from[k] = k < q->nsrc ? q->offset[k] : 0;
    *nsrc = q->nsrc;
    return 0;
}

int engine_ft_resume(engine *e, uint32_t qid, uint64_t from[ENGINE_MAX_SRC], int src_task[ENGINE_MAX_SRC], int *nsrc,
                     xerr *err)
{
    query *q = find_id(e, qid);
    if (!q) return xerr_set(err, XE_NOTFOUND, "query %u is not deployed here", qid);
    uint64_t timed[ENGINE_MAX_SRC] = {0};
    for (int k = 0; k < ENGINE_MAX_SRC; k++) {
        from[k] = ENGINE_FT_POS_NONE;
        src_task[k] = k < q->nsrc ? q->ops[q->src_op[k]].task_base + q->src_task[k] : 0;
    }
    *nsrc = q->nsrc;
    if (q->ft.ft == ENGINE_FT_NONE) return 0;
    for (int i = 0; i < q->dag->nops; i++) {
        const opinst *o = &q->ops[i];
        for (int j = 0; o->inc && j < q->nsrc; j++)
            for (int k = 0; k < o->ntasks; k++) {
                if (!task_local(q, o, k) || !ft_covers(o, k, j)) continue;
                uint64_t at = o->inc[k * o->incw + j];
                if (o->timed && o->timed[k] && !at) timed[j] = ENGINE_FT_POS_TIMED;
                else if (at < from[j]) from[j] = at;
            }
    }
    /* a stateless task (a filter, a projection, the sink) keeps nothing:
     * after a failure, the rows that were on their way through one that
     * died are in no state and no task's output; the sink had every row at
     * or below its watermark, so the replay goes back to it (tasks skip
     * what their state has, the sink drops what it delivered) */
    for (int i = 0; q->ft.prev && i < q->dag->nops; i++) {
        const opinst *o = &q->ops[i];
        if (ft_stateful(o) || q->dag->ops[i].kind == PO_SOURCE) continue;
        for (int k = 0; k < o->ntasks; k++)
            if (task_local(q, o, k))
                for (int j = 0; j < q->nsrc; j++) timed[j] = ENGINE_FT_POS_TIMED;
    }
    for (int k = 0; k < q->nsrc; k++) from[k] |= timed[k];
    return 0;
}

typedef struct time_scan {
    int64_t t;
    uint64_t off;
    int found;
} time_scan;

static int time_one(void *ctx, uint64_t off, const void *rec, size_t n)
{
    time_scan *s = ctx;
    if (n >= 8 && (int64_t)be64_get(rec) < s->t) return 0;
    s->off = off; /* the first record that may hold an event at or after t */
    s->found = 1;
    return 1;
}

int engine_ft_time_offset(engine *e, uint32_t qid, int src, uint64_t *off, xerr *err)
{
    query *q = find_id(e, qid);
    if (!q) return xerr_set(err, XE_NOTFOUND, "query %u is not deployed here", qid);
    if (src < 0 || src >= q->nsrc) return xerr_set(err, XE_INVAL, "query %u has no source %d", qid, src);
    *off = 0;
    if (q->ft.resume_wm == INT64_MIN) return 0;
    /* windows ending after resume_wm start after resume_wm - span; a log
     * record's header holds the largest event time up to it */
    int64_t span = 0;
    for (int i = 0; i < q->dag->nops; i++)
        if (q->ops[i].agg && q->ops[i].op->window.size_ms > span) span = q->ops[i].op->window.size_ms;
    time_scan s = {q->ft.resume_wm - span - 1, 0, 0};
    const char *stream = e->streams[q->src_stream[src]]->ps->name;
    uint64_t begin = 0, end = 0;
    int rc = eng_txn(e, err);
    if (!rc) rc = store_log_begin(e->txn, stream, &begin, err);
    if (!rc) rc = store_log_end(e->txn, stream, &end, err);
    if (!rc) rc = store_log_read(e->txn, stream, begin, 0, time_one, &s, err);
    if (rc > 0) rc = 0;
    if (!rc) *off = s.found ? s.off : end;
    return rc;
}

int ft_replay_from(engine *e, uint32_t qid, const uint64_t from[ENGINE_MAX_SRC], int nsrc, xerr *err)
{
    query *q = find_id(e, qid);
    if (!q) return xerr_set(err, XE_NOTFOUND, "query %u is not deployed here", qid);
    if (nsrc != q->nsrc) return xerr_set(err, XE_INVAL, "query %u has %d sources, the replay names %d", qid, q->nsrc, nsrc);
    for (int k = 0; k < q->nsrc; k++)
        if (from[k] < q->offset[k]) q->offset[k] = from[k];
    return 0;
}

/* The sources stay held while the steps read the log (the input that
 * arrives meanwhile is in it); the last step, in the same turn of the
 * loop, lets them take input again and passes the watermarks on. */
int ft_replay_step(engine *e, uint32_t qid, size_t max, int *more, int64_t *rows, xerr *err)
{
    *more = 0;
    query *q = find_id(e, qid);
    if (!q) return xerr_set(err, XE_NOTFOUND, "query %u is not deployed here", qid);
    int64_t before = q->rows_in;
    int rc = eng_txn(e, err);
    if (!rc) rc = eng_catch_up_step(e, q, max, more, err);
    if (!rc && !*more) {
        q->hold = 0;
        rc = eng_catch_up_wm(e, q, err);
    }
    if (rows) *rows += q->rows_in - before;
    return rc;
}
