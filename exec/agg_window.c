/*
 * agg_window.c: window assignment and the closing of windows.
 *
 * Windows: TUMBLING and HOPPING assign a row to every window [s, s+size)
 * with s a multiple of the advance and s <= ts < s+size; SESSION keeps, per
 * group, sessions that merge when a row falls within GAP of them.  Without a
 * WINDOW clause there is one window covering all time, closed at the end of
 * input.  A window closes when the watermark reaches its end plus GRACE; a
 * row whose every window has closed is late: counted and dropped.
 *
 * The push path works on a whole batch: first every row's group key, its
 * hash and its window; then, for one window per row (tumbling, global), the
 * table slots and entries of the rows ahead are prefetched, so that the
 * cache misses of a table larger than the cache overlap; then the updates.
 * A group key or aggregate argument that is a bare column is read without
 * the expression interpreter.
 *
 * The fast path (agg_fast.c) takes the batches of the commonest shape;
 * this file has the general push and the closing, which emits the closed
 * windows' rows in order (window end, start, key hash) and frees their
 * entries.  Calls agg_state.c, agg_table.c and agg_fn.c.
 */
#include "exec/agg.h"

#include <stdlib.h>
#include <string.h>

int64_t agg_count_late(const opinst *o, const batch *b, int64_t closed)
{
    const ast_window *w = &o->op->window;
    int ts_col = w->kind != WIN_NONE ? o->op->win_ts_col : -1;
    if (ts_col < 0 || closed == WM_MIN) return 0;
    int64_t n = 0;
    for (int r = 0; r < b->nrows; r++) {
        const val *v = &batch_row(b, r)[ts_col];
        if (v->type == TY_NULL) { n++; continue; }
        int64_t ts = v->i, end; /* the end of the last window that holds the row */
        if (closed == WM_END) end = WM_MIN;
        else if (w->kind == WIN_SESSION) end = ts + w->gap_ms;
        else {
            int64_t adv = w->kind == WIN_HOPPING ? w->advance_ms : w->size_ms;
            end = floor_div(ts, adv) * adv + w->size_ms;
        }
        n += closed == WM_END || end + w->grace_ms <= closed;
    }
    return n;
}

/* The group values of row in gtmp. */
static void group_vals(opinst *o, agg_task *a, const val *row)
{
    for (int g = 0; g < a->ngroups; g++) {
        val tmp;
        const val *v = arg_ref(o, &a->gargs[g], row, &tmp);
        a->gtmp[g] = *v;
    }
}

/* Pass 1 over a batch: each row's group key (into a->keys), its hash and
 * its event time; rskip[r] = 1 for a row without event time (late). */
/* Row r's event time (ts_col < 0: not windowed); a row without one is
 * skipped, as it cannot be windowed. */
static inline void row_time(agg_task *a, int r, const val *row, int ts_col)
{
    a->rskip[r] = ts_col >= 0 && row[ts_col].type == TY_NULL;
    a->rts[r] = ts_col >= 0 && !a->rskip[r] ? row[ts_col].i : 0;
}

int agg_batch_keys(opinst *o, agg_task *a, const batch *in)
{
    const plan_op *op = o->op;
    int ts_col = op->window.kind != WIN_NONE ? op->win_ts_col : -1;
    sbuf_reset(&a->keys);
    /* group keys of bare columns of fixed width (no TEXT): room for them all
     * at once, each value encoded from the row itself */
    int bare = a->key_max >= 0 && !a->uses_progs;
    if (bare && sbuf_reserve(&a->keys, (size_t)in->nrows * (size_t)a->key_max)) return XE_NOMEM;
    for (int r = 0; r < in->nrows && bare; r++) {
        const val *row = batch_row(in, r);
        unsigned char *k = (unsigned char *)a->keys.p + a->keys.len;
        size_t n = 0;
        for (int g = 0; g < a->ngroups; g++) {
            val tmp;
            size_t m = val_key_put(arg_ref(o, &a->gargs[g], row, &tmp), k + n);
            if (!m) bare = 0; /* TEXT where the plan says otherwise: the general way below */
            n += m;
        }
        if (!bare) {
            sbuf_reset(&a->keys);
            break;
        }
        a->rkoff[r] = (uint32_t)a->keys.len;
        a->rklen[r] = (uint32_t)n;
        a->keys.len += n;
        row_time(a, r, row, ts_col);
    }
    for (int r = 0; r < in->nrows && !bare; r++) {
        const val *row = batch_row(in, r);
        group_vals(o, a, row);
        size_t at = a->keys.len;
        if (sbuf_reserve(&a->keys, (size_t)a->ngroups * VAL_KEY_MAX)) return XE_NOMEM;
        for (int g = 0; g < a->ngroups; g++) {
            size_t n = val_key_put(&a->gtmp[g], (unsigned char *)a->keys.p + a->keys.len);
            if (n) a->keys.len += n;
            else if (val_key_encode(&a->gtmp[g], 1, &a->keys) || sbuf_reserve(&a->keys, (size_t)a->ngroups * VAL_KEY_MAX))
                return XE_NOMEM;
        }
        if (a->uses_progs) batch_reset(&o->q->scratch);
        a->rkoff[r] = (uint32_t)at;
        a->rklen[r] = (uint32_t)(a->keys.len - at);
        row_time(a, r, row, ts_col);
    }
    /* hashed once all are written: a word load of bytes stored just before
     * one at a time cannot be forwarded from the store buffer and stalls */
    for (int r = 0; r < in->nrows; r++) a->rkh[r] = key_hash((const unsigned char *)a->keys.p + a->rkoff[r], a->rklen[r]);
    return 0;
}

/* The open entry of (window [ws, we), row r's group), made if needed or
 * read back from LMDB if it was evicted there; NULL with err set. */
static agg_entry *fixed_entry(opinst *o, agg_task *a, const val *row, int r, uint64_t h, int64_t ws, int64_t we,
                              xerr *err)
{
    const unsigned char *key = (const unsigned char *)a->keys.p + a->rkoff[r];
    agg_entry *e = agg_find_fixed(a, h, we, key, a->rklen[r]);
    if (e) return e;
    group_vals(o, a, row); /* text from functions lives in scratch until the entry copies it */
    int rc = 0;
    if (a->ncold) {
        int wi = widx_find(a, we);
        if (wi < a->nw && a->wends[wi] == we && a->wl[wi].ncold)
            rc = agg_cold_take(o, a->task, wi, key, a->rklen[r], h, ws, we, &e, err);
    }
    if (!rc && !e && !(e = agg_entry_open(a, key, a->rklen[r], h, ws, we))) xerr_set(err, XE_NOMEM, "out of memory");
    if (a->uses_progs) batch_reset(&o->q->scratch);
    return rc ? NULL : e;
}

/* Row into e's slots from slot k0 on (those before it are done), and e
 * marked dirty. */
static int update_from(opinst *o, agg_task *a, agg_entry *e, const val *row, int k0, xerr *err)
{
    for (int k = k0; k < a->naggs; k++) {
        if (a->compact ? cslot_fast(&a->cops[k], (char *)e->slots, row)
                       : slot_fast(&a->args[k], &e->slots[k], row))
            continue;
        if (agg_slot_slow(o, a, e, row, k)) return xerr_set(err, XE_NOMEM, "out of memory");
    }
    if (a->uses_progs) batch_reset(&o->q->scratch);
    if (agg_mark_dirty(a, e)) return xerr_set(err, XE_NOMEM, "out of memory");
    return 0;
}

static int update_entry(opinst *o, agg_task *a, agg_entry *e, const val *row, xerr *err)
{
    return update_from(o, a, e, row, 0, err);
}

/* Append e to a growable list of entries; XE_NOMEM. */
static int list_push(agg_entry ***v, int64_t *n, int64_t *cap, agg_entry *e)
{
    if (room_for_one(v, *n, cap, sizeof **v)) return XE_NOMEM;
    (*v)[(*n)++] = e;
    return 0;
}

int agg_push_session(opinst *o, agg_task *a, const batch *in, int emit_changes, xerr *err)
{
    const plan_op *op = o->op;
    const ast_window *w = &op->window;
    query *q = o->q;
    for (int r = 0; r < in->nrows; r++) {
        if (a->rskip[r]) { q->late++; continue; }
        const val *row = batch_row(in, r);
        const unsigned char *key = (const unsigned char *)a->keys.p + a->rkoff[r];
        uint32_t klen = a->rklen[r];
        uint64_t kh = a->rkh[r];
        int64_t ts = a->rts[r], s0 = ts, e0 = ts + w->gap_ms;
        if (e0 + w->grace_ms <= a->closed_wm) { q->late++; continue; }
        /* find sessions of this key that overlap [s0, e0) and merge them */
        agg_entry *target = NULL;
        /* gather first: merging unlinks entries, which shifts the probe run */
        a->ncands = 0;
        uint32_t m = a->t.cap - 1;
        for (uint32_t i = (uint32_t)kh & m; a->t.tab[i].tag; i = (i + 1) & m) {
            agg_entry *e = a->t.tab[i].e;
            if (a->t.tab[i].tag != HTAG(kh) || e->hash != kh || !key_eq(e, key, klen)) continue;
            if (!(e->wstart < e0 && s0 < e->wend)) continue;
            if (list_push(&a->cands, &a->ncands, &a->capcands, e)) return xerr_set(err, XE_NOMEM, "out of memory");
        }
        for (int64_t ci = 0; ci < a->ncands; ci++) {
            agg_entry *e = a->cands[ci];
            if (!target) {
                target = e;
                continue;
            }
            /* merge e into target (sessions: never compact slots) */
            agg_ext *tx = entry_ext(a, target), *ex = entry_ext(a, e);
            for (int k = 0; k < a->naggs; k++)
                if (agg_slot_merge(&op->aggs[k], &target->slots[k], tx ? &tx[k] : NULL, &e->slots[k], ex ? &ex[k] : NULL))
                    return xerr_set(err, XE_NOMEM, "out of memory");
            if (e->wstart < target->wstart) target->wstart = e->wstart;
            if (e->wend > target->wend) agg_entry_move_end(a, target, e->wend);
            if (agg_note_delete(a, e)) return xerr_set(err, XE_NOMEM, "out of memory");
            agg_table_unlink(a, e);
            agg_entry_free(a, e);
        }
        if (!target) {
            group_vals(o, a, row);
            target = agg_entry_open(a, key, klen, kh, s0, e0);
            if (a->uses_progs) batch_reset(&q->scratch);
            if (!target) return xerr_set(err, XE_NOMEM, "out of memory");
        } else {
            if (s0 < target->wstart) target->wstart = s0;
            if (e0 > target->wend) agg_entry_move_end(a, target, e0);
        }
        if (update_entry(o, a, target, row, err)) return err->code;
        if (emit_changes && emit_entry(o, a, target, err)) return err->code;
    }
    return 0;
}

/* One window per row (tumbling, or the global window): find every row's
 * entry with the table slots and entries of later rows prefetched. */
int agg_push_single(opinst *o, agg_task *a, const batch *in, int emit_changes, xerr *err)
{
    const ast_window *w = &o->op->window;
    query *q = o->q;
    int n = in->nrows;
    int global = w->kind == WIN_NONE;
    int64_t size = w->size_ms;
    /* rows come mostly in time order: the last row's window saves a division */
    int64_t cws = WM_MIN, cwe = WM_MIN;
    for (int r = 0; r < n; r++) {
        if (a->rskip[r]) continue;
        int64_t ws;
        if (global) ws = WM_MIN;
        else if (a->rts[r] >= cws && a->rts[r] < cwe) ws = cws;
        else {
            ws = floor_div(a->rts[r], size) * size;
            cws = ws;
            cwe = ws + size;
        }
        int64_t we = global ? WM_END : ws + size;
        if (we != WM_END && we + w->grace_ms <= a->closed_wm) { /* that window has closed */
            a->rskip[r] = 1;
            continue;
        }
        a->rts[r] = ws;
        a->rh[r] = fixed_hash(a->rkh[r], ws);
    }
    /* a software pipeline: at step r the table slot of row r + PF_AHEAD is
     * fetched, row r is probed (its slot came in meanwhile) and its entry
     * fetched, and row r - PF_AHEAD, whose entry is in by now, is updated.
     * A window's table may grow or appear meanwhile: a probe looks it up
     * again, and a row whose probe found nothing looks again at its update. */
#define ROW_WE(r) (global ? WM_END : a->rts[r] + size)
    for (int r = 0; r < n && r < PF_AHEAD; r++) {
        htab *t = a->rskip[r] ? NULL : win_table(a, ROW_WE(r));
        if (t && t->cap) __builtin_prefetch(&t->tab[a->rh[r] & (t->cap - 1)]);
    }
    for (int r = 0; r < n + PF_AHEAD; r++) {
        int f = r + PF_AHEAD, c = r;
        if (f < n && !a->rskip[f]) {
            htab *t = win_table(a, ROW_WE(f));
            if (t && t->cap) __builtin_prefetch(&t->tab[a->rh[f] & (t->cap - 1)]);
        }
        if (c < n && !a->rskip[c]) {
            agg_entry *e = a->rcand[c] = probe_tag(win_table(a, ROW_WE(c)), a->rh[c]);
            if (e) {
                __builtin_prefetch((char *)e + 64);
                if (!a->compact) __builtin_prefetch((char *)e + 128);
            }
        }
        int u = r - PF_AHEAD;
        if (u < 0) continue;
        if (a->rskip[u]) { q->late++; continue; }
        const val *row = batch_row(in, u);
        int64_t ws = a->rts[u];
        uint64_t h = a->rh[u];
        agg_entry *e = a->rcand[u];
        if (!e || !entry_is(e, h, (const unsigned char *)a->keys.p + a->rkoff[u], a->rklen[u]))
            e = fixed_entry(o, a, row, u, h, ws, ROW_WE(u), err);
        if (!e) return err->code;
        int k = a->compact ? compact_update(a, e, row) : 0;
        if ((k < a->naggs || !e->dirty) && update_from(o, a, e, row, k, err)) return err->code;
        if (emit_changes && emit_entry(o, a, e, err)) return err->code;
    }
#undef ROW_WE
    return 0;
}

/* Hopping windows: every window [s, s+size) with s a multiple of the advance
 * that holds the row. */
int agg_push_hopping(opinst *o, agg_task *a, const batch *in, int emit_changes, xerr *err)
{
    const ast_window *w = &o->op->window;
    query *q = o->q;
    int64_t size = w->size_ms, adv = w->advance_ms;
    for (int r = 0; r < in->nrows; r++) {
        if (a->rskip[r]) { q->late++; continue; }
        const val *row = batch_row(in, r);
        int64_t ts = a->rts[r];
        int64_t last = floor_div(ts, adv) * adv;               /* latest window start <= ts */
        int64_t first = floor_div(ts - size, adv) * adv + adv; /* earliest start with ts < start+size */
        int placed = 0;
        for (int64_t s = first; s <= last; s += adv) {
            int64_t we = s + size;
            if (we + w->grace_ms <= a->closed_wm) continue; /* that window has closed */
            placed = 1;
            agg_entry *e = fixed_entry(o, a, row, r, fixed_hash(a->rkh[r], s), s, we, err);
            if (!e) return err->code;
            if (update_entry(o, a, e, row, err)) return err->code;
            if (emit_changes && emit_entry(o, a, e, err)) return err->code;
        }
        if (!placed) q->late++;
    }
    return 0;
}

/* ------------------------------------------------------------------ closing windows */

static inline int csort_less(const csort *x, const csort *y)
{
    if (x->wend != y->wend) return x->wend < y->wend;
    if (x->wstart != y->wstart) return x->wstart < y->wstart;
    /* within a window: by key hash (deterministic, cheap), bytes on a tie */
    if (x->hash != y->hash) return x->hash < y->hash;
    const agg_entry *a = x->e, *b = y->e;
    uint32_t n = a->klen < b->klen ? a->klen : b->klen;
    int c = memcmp(a->key, b->key, n);
    return c ? c < 0 : a->klen < b->klen;
}

/* In-place quicksort (qsort would allocate per call and compare through
 * pointers to the entries). */
static void sort_closing(csort *v, int64_t n)
{
    while (n > 16) {
        csort pivot = v[n / 2], t;
        int64_t i = 0, j = n - 1;
        for (;;) {
            while (csort_less(&v[i], &pivot)) i++;
            while (csort_less(&pivot, &v[j])) j--;
            if (i >= j) break;
            t = v[i]; v[i] = v[j]; v[j] = t;
            i++;
            j--;
        }
        /* recurse into the smaller half, loop on the larger */
        if (j + 1 < n - j - 1) {
            sort_closing(v, j + 1);
            v += j + 1;
            n -= j + 1;
        } else {
            sort_closing(v + j + 1, n - j - 1);
            n = j + 1;
        }
    }
    for (int64_t i = 1; i < n; i++)
        for (int64_t k = i; k > 0 && csort_less(&v[k], &v[k - 1]); k--) {
            csort t = v[k];
            v[k] = v[k - 1];
            v[k - 1] = t;
        }
}

/* Room for sort_window: n entries and nb + 1 bucket counts; XE_NOMEM. */
static int rows_scratch(agg_task *a, int64_t n, size_t nb)
{
    if (n > a->capctmp) {
        csort *v = realloc(a->ctmp, (size_t)n * sizeof *v);
        if (!v) return XE_NOMEM;
        a->ctmp = v;
        a->capctmp = n;
    }
    if (nb + 1 > a->capbcount) {
        int64_t *c = realloc(a->bcount, (nb + 1) * sizeof *c);
        if (!c) return XE_NOMEM;
        a->bcount = c;
        a->capbcount = nb + 1;
    }
    return 0;
}

/* The entries of one fixed window (one window end, one start) in
 * sort_closing's order: distributed by the top bits of their hash, then
 * each bucket (a few entries) sorted in place; O(n) where quicksort would
 * compare n log n times.  Without memory for the buckets, the quicksort. */
static void sort_window(agg_task *a, csort *v, int64_t n)
{
    int bits = 8;
    while (bits < 16 && ((int64_t)1 << bits) < n / 2) bits++;
    size_t nb = (size_t)1 << bits;
    if (n < 64 || rows_scratch(a, n, nb)) {
        sort_closing(v, n);
        return;
    }
    int64_t *cnt = a->bcount;
    memset(cnt, 0, (nb + 1) * sizeof *cnt);
    for (int64_t i = 0; i < n; i++) cnt[(v[i].hash >> (64 - bits)) + 1]++;
    for (size_t b = 1; b <= nb; b++) cnt[b] += cnt[b - 1];
    for (int64_t i = 0; i < n; i++) a->ctmp[cnt[v[i].hash >> (64 - bits)]++] = v[i];
    /* cnt[b] is now the end of bucket b */
    for (size_t b = 0, start = 0; b < nb; start = (size_t)cnt[b], b++)
        for (int64_t i = (int64_t)start + 1; i < cnt[b]; i++)
            for (int64_t k = i; k > (int64_t)start && csort_less(&a->ctmp[k], &a->ctmp[k - 1]); k--) {
                csort t = a->ctmp[k];
                a->ctmp[k] = a->ctmp[k - 1];
                a->ctmp[k - 1] = t;
            }
    memcpy(v, a->ctmp, (size_t)n * sizeof *v);
}

/* e, of window [ws, we), closes. */
static inline int closing_push(agg_task *a, agg_entry *e, int64_t ws, int64_t we)
{
    if (room_for_one(&a->closing, a->nclosing, &a->capclosing, sizeof *a->closing)) return XE_NOMEM;
    a->closing[a->nclosing++] = (csort){we, ws, e->hash, e};
    return 0;
}

/* Emit closing[i0, i1) (borrowed: entries are freed once all went out). */
static int emit_closing(opinst *o, int task, agg_task *a, int64_t i0, int64_t i1, xerr *err)
{
    int rc;
    /* what emit reads: the fast path's entries their second line, others all of it */
    int first = a->fx_type ? 1 : 0, lines = a->fx_type ? 1 : (int)(a->pool_size ? a->pool_size / 64 : 4);
    for (int64_t i = i0; i < i1; i++) {
        const csort *c = &a->closing[i];
        if (i + PF_AHEAD < i1) {
            const char *f = (const char *)a->closing[i + PF_AHEAD].e;
            for (int l = first; l < first + lines; l++) __builtin_prefetch(f + 64 * l);
        }
        if ((rc = agg_emit_window_entry(o, a, c->e, c->wstart, c->wend, 0, err))) return rc;
        if (o->out.nrows >= EXEC_SLICE_ROWS) {
            if ((rc = o->emit_down(o, task, &o->out, err))) return rc;
            batch_reset(&o->out);
        }
    }
    return 0;
}

/* c closes before the cold group of hash h and key (sort_closing's order). */
static int closes_before(const csort *c, uint64_t h, const unsigned char *key, uint32_t klen)
{
    if (c->hash != h) return c->hash < h;
    uint32_t n = c->e->klen < klen ? c->e->klen : klen;
    int d = memcmp(c->e->key, key, n);
    return d ? d < 0 : c->e->klen < klen;
}

enum { COLD_PIECE = 1024 }; /* cold records read back at a time when a window closes */

/* A fixed window [ws, we) with cold entries closes: closing[i0, i1) (its
 * entries in memory, sorted) merged with its cold records, which LMDB
 * holds in the same order (agg_state.c), a piece at a time; each cold one
 * is decoded into an entry of no table, emitted with its TEXT copied, and
 * freed, so that memory holds a piece, not the window. */
static int close_merge(opinst *o, int task, agg_task *a, int64_t i0, int64_t i1, int64_t ws, int64_t we, xerr *err)
{
    int rc, n;
    unsigned char z = 0;
    sbuf_reset(&a->cfrom);
    if (sbuf_add(&a->cfrom, &z, 1)) return xerr_set(err, XE_NOMEM, "out of memory");
    int64_t i = i0;
    do {
        if ((n = agg_cold_piece(o, task, we, COLD_PIECE, err)) < 0) return n;
        size_t at = 0;
        for (int k = 0; k < n; k++) {
            const unsigned char *p = (const unsigned char *)a->cold.p + at;
            uint32_t tl;
            memcpy(&tl, p, 4);
            int64_t j = i;
            while (j < i1 && closes_before(&a->closing[j], be64_get(p + 5), p + 4 + COLD_TAIL, tl - COLD_TAIL)) j++;
            if ((rc = emit_closing(o, task, a, i, j, err))) return rc;
            i = j;
            agg_entry *e = agg_cold_entry(o, task, ws, we, &at, err);
            if (!e) return err->code;
            rc = agg_emit_window_entry(o, a, e, ws, we, 1, err);
            agg_entry_free(a, e);
            if (rc) return rc;
            if (o->out.nrows >= EXEC_SLICE_ROWS) {
                if ((rc = o->emit_down(o, task, &o->out, err))) return rc;
                batch_reset(&o->out);
            }
        }
    } while (n == COLD_PIECE);
    return emit_closing(o, task, a, i, i1, err);
}

int agg_close(opinst *o, int task, int64_t wm, xerr *err)
{
    agg_task *a = o->agg[task];
    const plan_op *op = o->op;
    int64_t grace = op->window.grace_ms;
    if (wm <= a->closed_wm) return 0;
    a->closed_wm = wm;
    /* nothing can close before the smallest window end */
    if (!a->widx_broken && (!a->nw || (wm != WM_END && a->wends[0] > wm - grace))) return 0;
    a->nclosing = 0;
    int nclose = 0; /* windows of the index that close */
    /* the closing windows are a prefix of the index (or, after an allocation
     * failure broke the index, found by scanning the table) */
    if (a->widx_broken) {
        for (uint32_t si = 0; si < a->t.cap; si++) {
            if (!a->t.tab[si].tag) continue;
            agg_entry *e = a->t.tab[si].e;
            int closes = wm == WM_END || (e->wend != WM_END && e->wend <= wm - grace);
            if (closes && closing_push(a, e, e->wstart, e->wend)) return xerr_set(err, XE_NOMEM, "out of memory");
        }
    } else
        for (; nclose < a->nw; nclose++) {
            if (wm != WM_END && (a->wends[nclose] == WM_END || a->wends[nclose] > wm - grace)) break;
            const struct wlist *l = &a->wl[nclose];
            /* a fixed window's entries share their start (sessions' windows
             * are one entry each): only the hash is read from each entry */
            int64_t ws = l->n ? l->v[0]->wstart : 0;
            for (int64_t j = 0; j < l->n; j++) {
                if (j + PF_AHEAD < l->n) {
                    __builtin_prefetch((char *)l->v[j + PF_AHEAD] + 64);
                }
                agg_entry *e = l->v[j];
                if (closing_push(a, e, a->session ? e->wstart : ws, a->wends[nclose]))
                    return xerr_set(err, XE_NOMEM, "out of memory");
            }
        }
    int cold = 0; /* some closing window has entries in LMDB only */
    for (int w = 0; w < nclose; w++) cold |= a->wl[w].ncold != 0;
    if (!a->nclosing && !cold) return 0;
    if (is_session(o) || a->widx_broken)
        sort_closing(a->closing, a->nclosing);
    else /* fixed windows: the list is window by window, ascending */
        for (int64_t i = 0, j; i < a->nclosing; i = j) {
            for (j = i + 1; j < a->nclosing && a->closing[j].wend == a->closing[i].wend; j++) {}
            sort_window(a, a->closing + i, j - i);
        }
    int rc = 0;
    batch_reset(&o->out);
    if (op->emit == EMIT_CHANGES) {
        /* every change went out as it came */
    } else if (!cold) {
        if ((rc = emit_closing(o, task, a, 0, a->nclosing, err))) return rc;
    } else /* window by window: closing holds them in the index's order */
        for (int64_t i = 0, j, w = 0; w < nclose; w++, i = j) {
            for (j = i; j < a->nclosing && a->closing[j].wend == a->wends[w]; j++) {}
            int64_t ws = a->wends[w] == WM_END ? WM_MIN : a->wends[w] - op->window.size_ms;
            rc = a->wl[w].ncold ? close_merge(o, task, a, i, j, ws, a->wends[w], err) : emit_closing(o, task, a, i, j, err);
            if (rc) return rc;
        }
    if (o->out.nrows && (rc = o->emit_down(o, task, &o->out, err))) return rc;
    batch_reset(&o->out);
    int session = is_session(o);
    if (!session && nclose) {
        agg_dirty_drop_closed(a, a->wends[nclose - 1]);
        a->wlast_n = a->wl[nclose - 1].n;
    }
    for (int w = 0; w < nclose; w++) { /* cold entries: their records go with their window's at the flush */
        if (!a->wl[w].ncold) continue;
        int64_t we = a->wends[w];
        if (we != WM_END && we + grace > a->max_closed) a->max_closed = we + grace;
        if (skey_end(we) > a->del_to) a->del_to = skey_end(we);
        a->ncold -= a->wl[w].ncold;
        a->wl[w].ncold = 0;
    }
    for (int64_t i = 0; i < a->nclosing; i++) {
        agg_entry *e = a->closing[i].e;
        int64_t we = a->closing[i].wend;
        if (we != WM_END && we + grace > a->max_closed) a->max_closed = we + grace;
        if (session) {
            if (i + PF_AHEAD < a->nclosing)
                __builtin_prefetch(&a->t.tab[a->closing[i + PF_AHEAD].hash & (a->t.cap - 1)]);
            if (agg_note_delete(a, e)) return xerr_set(err, XE_NOMEM, "out of memory");
            agg_htab_remove(&a->t, e);
        } else if (skey_end(we) > a->del_to)
            a->del_to = skey_end(we); /* its window's records go at the flush */
        a->nentries--;
        agg_entry_free(a, e);
    }
    agg_widx_drop(a, 0, nclose); /* the closed windows, whole (a fixed window's table with them) */
    a->wlast = 0;
    a->nclosing = 0;
    if (a->eng->mem_budget) agg_mem_update(a);
    return 0;
}
