/*
 * ftstate.c: the per-operator state helpers of fault tolerance, below the
 * operators.
 *
 * Positions.  A stateful task fed by a source through stateless operators
 * keeps, per source slot, inc: the tag (log offset + 1) of the last record
 * its state includes (ops.c).  inc is written with the state in the epoch's
 * transaction ("inc/<task>", ft_save_inc) and read back at a restart
 * (ft_load_inc), so state and position always agree; ft_keep_from says how
 * far back a recovery may need a source's log.
 *
 * Emitted rows.  A deployed query's stateful tasks keep the rows they
 * emitted lately ("out/<task>/...", ft_save_out) and replicas keep theirs
 * ("rout/..."), for a takeover to emit again (ft.c, ft_reemit).
 *
 * Calls only storage/ and meta.c.  Runs on the engine's thread.
 */
#include <stdlib.h>
#include <string.h>

#include "exec/internal.h"

int ft_stateful(const opinst *o) { return o->agg || o->join; }

/* Task k of o takes records of slot j (a tracked side covers it; with
 * partitions over a forward edge, task k takes partition k alone). */
int ft_covers(const opinst *o, int k, int j)
{
    for (int s = 0; s < o->op->ninputs && s < 2; s++) {
        if (o->tsrc[s] < 0 || j < o->tsrc[s] || j >= o->tsrc[s] + o->nsl[s]) continue;
        if (o->nsl[s] > 1 && o->op->in_edge[s] == EDGE_FORWARD && o->nup[s] == o->ntasks) return j - o->tsrc[s] == k;
        return 1;
    }
    return 0;
}

/* Every stateful op reads its sources directly (no aggregate over a join):
 * positions then say exactly what each state includes. */
int ft_trackable(const query *q)
{
    for (int i = 0; i < q->dag->nops; i++) {
        const opinst *o = &q->ops[i];
        for (int s = 0; ft_stateful(o) && s < o->op->ninputs; s++)
            if (o->tsrc[s] < 0) return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ positions */

int ft_save_inc(query *q, store_txn *t, xerr *err)
{
    for (int i = 0; i < q->dag->nops; i++) {
        opinst *o = &q->ops[i];
        if (!o->inc) continue;
        size_t w = (size_t)o->incw;
        for (int k = 0; k < o->ntasks; k++) {
            uint64_t *inc = &o->inc[k * w], *saved = &o->inc_saved[k * w];
            if (!task_local(q, o, k) || !memcmp(inc, saved, w * sizeof *inc)) continue;
            char key[32];
            unsigned char v[8 * ENGINE_MAX_SRC];
            snprintf(key, sizeof key, "inc/%u", query_task_id(q, i, k));
            for (size_t j = 0; j < w; j++) be64_put(v + 8 * j, inc[j]);
            int rc = store_kv_put(t, STORE_META, key, v, 8 * w, err);
            if (rc) return rc;
            memcpy(saved, inc, w * sizeof *inc);
        }
    }
    return 0;
}

/* 0 and v filled, XE_NOTFOUND, or an error. */
int ft_get_meta(store_txn *t, const char *fmt, uint32_t tid, sbuf *v, size_t want, xerr *err)
{
    char key[32];
    snprintf(key, sizeof key, fmt, tid);
    int rc = store_kv_get(t, STORE_META, key, v, err);
    if (rc == XE_NOTFOUND) xerr_clear(err);
    if (!rc && v->len != want) return xerr_set(err, XE_CORRUPT, "meta %s has %zu bytes, not %zu", key, v->len, want);
    return rc;
}

int ft_load_inc(query *q, store_txn *t, xerr *err)
{
    sbuf v;
    sbuf_init(&v);
    int rc = 0;
    for (int i = 0; i < q->dag->nops && !rc; i++) {
        opinst *o = &q->ops[i];
        for (int k = 0; o->inc && k < o->ntasks && !rc; k++) {
            if (!task_local(q, o, k)) continue;
            rc = ft_get_meta(t, "inc/%u", query_task_id(q, i, k), &v, 8 * (size_t)o->incw, err);
            if (rc == XE_NOTFOUND) {
                rc = 0;
                continue;
            }
            if (rc) break;
            for (int j = 0; j < o->incw; j++)
                o->inc[k * o->incw + j] = o->inc_saved[k * o->incw + j] = be64_get((unsigned char *)v.p + 8 * j);
        }
    }
    sbuf_fini(&v);
    return rc;
}

/* ------------------------------------------------------------------ emitted rows

 * A stateful task's results travel to the next tasks while its state (with
 * those windows closed) reaches LMDB and its replicas.  If a node dies with
 * results still in flight, the state says they were emitted, but nobody got
 * them.  So each task keeps the rows it emitted in its last KEEP_OUT epochs
 * ("out/<task>/<epoch>"), and its replicas keep them too ("rout/..."); a task
 * that takes over a state emits them again, and the sink drops the ones it
 * already had. */

/* Key: prefix, then this node's wall-clock ms (13 digits) and the epoch: in
 * time order. */
int ft_put_out(store_txn *t, const char *fmt, uint32_t tid, uint64_t epoch, const void *p, size_t n, xerr *err)
{
    char key[64];
    int l = snprintf(key, sizeof key, fmt, tid);
    snprintf(key + l, sizeof key - (size_t)l, "%013lld%07llu", (long long)clock_wall_ms(),
             (unsigned long long)(epoch % 10000000u));
    return store_kv_put(t, STORE_META, key, p, n, err);
}

typedef struct out_scan {
    int n, cap;
    char **keys;
    sbuf *vals;     /* NULL: keys only */
    int raw;        /* vals: the values as they are (else each after its u32 length) */
    size_t plen;    /* the prefix's length */
    int64_t min_ms; /* vals: only those kept at or after this */
} out_scan;

static int out_one(void *ctx, const char *key, const void *v, size_t n)
{
    out_scan *s = ctx;
    if (s->vals && strlen(key) >= s->plen + 13) {
        char ms[14];
        memcpy(ms, key + s->plen, 13);
        ms[13] = 0;
        if (strtoll(ms, NULL, 10) < s->min_ms) return 0;
    }
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        char **k = realloc(s->keys, (size_t)cap * sizeof *k);
        if (!k) return XE_NOMEM;
        s->keys = k;
        s->cap = cap;
    }
    if (!(s->keys[s->n] = strdup(key))) return XE_NOMEM;
    s->n++;
    if (s->vals) {
        unsigned char l[4];
        be32_put(l, (uint32_t)n);
        if ((!s->raw && sbuf_add(s->vals, l, 4)) || sbuf_add(s->vals, v, n)) return XE_NOMEM;
    }
    return 0;
}

static void out_scan_fini(out_scan *s)
{
    for (int i = 0; i < s->n; i++) free(s->keys[i]);
    free(s->keys);
}

int ft_drop_out(store_txn *t, const char *fmt, uint32_t tid, int keep, xerr *err)
{
    char prefix[48];
    snprintf(prefix, sizeof prefix, fmt, tid);
    out_scan s = {0, 0, NULL, NULL, 0, 0, 0};
    int rc = store_kv_scan(t, STORE_META, prefix, out_one, &s, err);
    if (rc == XE_NOMEM) xerr_set(err, rc, "out of memory");
    for (int i = 0; !rc && i < s.n - keep; i++) rc = store_kv_del(t, STORE_META, s.keys[i], err);
    out_scan_fini(&s);
    return rc;
}

/* Append the rows a task kept lately (each epoch's [u32 len][batch]...). */
int ft_recent_out(store_txn *t, uint32_t tid, sbuf *into, xerr *err)
{
    char prefix[48];
    snprintf(prefix, sizeof prefix, "out/%u/", tid);
    out_scan s = {0, 0, NULL, into, 1, strlen(prefix), clock_wall_ms() - OUT_MS};
    int rc = store_kv_scan(t, STORE_META, prefix, out_one, &s, err);
    if (rc == XE_NOMEM) xerr_set(err, rc, "out of memory");
    out_scan_fini(&s);
    return rc;
}

int ft_save_out(query *q, store_txn *t, xerr *err)
{
    int rc = 0;
    for (int i = 0; i < q->dag->nops && !rc; i++) {
        opinst *o = &q->ops[i];
        for (int k = 0; o->emitted && k < o->ntasks && !rc; k++) {
            if (!o->emitted[k].len) continue;
            uint32_t tid = query_task_id(q, i, k);
            if (!(rc = ft_put_out(t, "out/%u/", tid, q->eng->epoch, o->emitted[k].p, o->emitted[k].len, err)))
                rc = ft_drop_out(t, "out/%u/", tid, KEEP_OUT, err);
            sbuf_reset(&o->emitted[k]);
        }
    }
    return rc;
}

/* The rows task (op o, index k) of the previous deployment kept: to emit again. */
int ft_collect_out(query *q, opinst *o, int k, store_txn *t, const char *fmt, uint32_t old, xerr *err)
{
    char prefix[48];
    snprintf(prefix, sizeof prefix, fmt, old);
    sbuf v;
    sbuf_init(&v);
    out_scan s = {0, 0, NULL, &v, 0, strlen(prefix), clock_wall_ms() - OUT_MS};
    int rc = store_kv_scan(t, STORE_META, prefix, out_one, &s, err);
    if (rc == XE_NOMEM) xerr_set(err, rc, "out of memory");
    unsigned char h[8];
    be32_put(h, (uint32_t)(o->task_base + k));
    be32_put(h + 4, (uint32_t)v.len);
    if (!rc && v.len && (sbuf_add(&q->reemit, h, 8) || sbuf_add(&q->reemit, v.p, v.len)))
        rc = xerr_set(err, XE_NOMEM, "out of memory");
    out_scan_fini(&s);
    sbuf_fini(&v);
    return rc;
}

uint64_t ft_keep_from(const query *q, int src)
{
    if ((q->ft.ft != ENGINE_FT_REPLICA && q->ft.ft != ENGINE_FT_CHECKPOINT) || !ft_trackable(q)) return 0;
    uint64_t keep = UINT64_MAX;
    for (int i = 0; i < q->dag->nops; i++) {
        const opinst *o = &q->ops[i];
        for (int k = 0; o->acked && k < o->ntasks; k++)
            if (ft_covers(o, k, src) && o->acked[k * o->incw + src] < keep) keep = o->acked[k * o->incw + src];
    }
    return keep == UINT64_MAX ? 0 : keep;
}
