/*
 * agg_fast.c: the window aggregate's fast path.
 *
 * Tumbling (or global) windows grouped by one integer column whose every
 * aggregate is COUNT(*) or a SUM, AVG, MIN or MAX of a bare DOUBLE (compact
 * slots), without EMIT CHANGES: the shape of most windowed counts.  For such
 * a batch agg_push_fixed1 does what agg_push_single does, in passes that each do
 * one thing for every row, so that no row pays for the general case's
 * branches and calls:
 *   1. agg_fx_prepare checks every row (an event time, a key of the plan's type,
 *      a window still open; any other batch takes agg_push_single, before
 *      anything changed) and computes its window, its encoded key (the nine
 *      bytes val_key_put writes, as a word and a byte) and its hash, as
 *      key_hash and fixed_hash give them;
 * then, FX_CHUNK rows at a time:
 *   2. each row's table slot is prefetched;
 *   3. probe: the entry whose tag matches is the row's candidate, and is
 *      prefetched; a row with none opens its entry now, so that a later row
 *      of the same new group finds it;
 *   4. each candidate's key is checked (a 64-bit hash collision takes
 *      agg_find_fixed, which compares every key of the run), and its entry
 *      marked dirty;
 *   5. the slots are updated an aggregate at a time, the rows in order, so
 *      that each slot sees the rows in agg_push_single's order (sums are the
 *      same to the bit); a value the inline update does not take (NULL, an
 *      integer, NaN, a first MIN or MAX) goes through agg_slot_slow.
 * Entries, tables, window lists and the dirty list end up as agg_push_single
 * leaves them; test_fast_agg_same_as_general (test_exec) compares the two.
 *
 * Calls agg_table.c and agg_fn.c.
 */
#include "exec/agg.h"

#include <stdlib.h>
#include <string.h>

enum { FX_CHUNK = 256, FX_AHEAD = 16 };

/* Pass 1 over the batch (no hashes: fx_hashes makes them for the rows that
 * need them); 0 when some row needs agg_push_single, 2 when every row is in one
 * window, else 1.  (The arrays
 * are local restrict pointers: a byte store may alias anything, and would
 * make every other pointer be read again for each row.) */
int agg_fx_prepare(agg_task *a, const opinst *o, const batch *in)
{
    const ast_window *w = &o->op->window;
    int global = w->kind == WIN_NONE, kc = a->gargs[0].col, ts_col = o->op->win_ts_col, nc = in->ncols;
    int n = in->nrows, kt = a->fx_type;
    int64_t size = w->size_ms, grace = w->grace_ms, closed = a->closed_wm;
    int64_t cws = 1, cwe = 0, ws = WM_MIN; /* [cws, cwe): the last row's window */
    int windows = 0;
    int64_t *restrict rts = a->rts, *restrict rkv = a->rkv;
    uint64_t *restrict rkw = a->rkw;
    uint8_t *restrict rkb = a->rkb;
    const val *restrict row = in->v;
    for (int r = 0; r < n; r++, row += nc) {
        if (row[kc].type != kt) return 0;
        if (!global) {
            if (row[ts_col].type == TY_NULL) return 0;
            int64_t ts = row[ts_col].i;
            if (ts < cws || ts >= cwe) {
                cws = floor_div(ts, size) * size;
                cwe = cws + size;
                windows++;
                if (cwe != WM_END && cwe + grace <= closed) return 0; /* late: counted there */
            }
            ws = cws;
        }
        uint64_t be = __builtin_bswap64((uint64_t)row[kc].i ^ 0x8000000000000000ULL);
        rts[r] = ws;
        rkv[r] = row[kc].i;
        rkw[r] = (uint64_t)(kt + 1) | be << 8; /* the type byte, then the value big-endian */
        rkb[r] = (uint8_t)(be >> 56);
    }
    return windows <= 1 ? 2 : 1;
}

/* Row r's hash, as key_hash and fixed_hash make it. */
static inline uint64_t fx_hash(const agg_task *a, int r)
{
    return fixed_hash(key_hash_words(a->rkw[r], a->rkb[r], 9), a->rts[r]);
}

static void fx_hashes(agg_task *a, int c0, int c1)
{
    for (int r = c0; r < c1; r++) a->rh[r] = fx_hash(a, r);
}

/* Row r's entry, opened (look = 0: the caller knows it is not in the
 * table; slot >= 0: the free slot its probe ended at in the table of
 * window index a->wlast) or found by comparing keys; NULL when out of
 * memory.  As agg_entry_open, for a key that fits kin and a pooled entry. */
static agg_entry *fx_entry(agg_task *a, const val *row, int r, int64_t we, int look, int64_t slot)
{
    uint64_t h = fx_hash(a, r);
    if (look) {
        unsigned char key[9];
        memcpy(key, &a->rkw[r], 8);
        key[8] = a->rkb[r];
        agg_entry *e = agg_find_fixed(a, h, we, key, 9);
        if (e) return e;
    }
    size_t base = sizeof(agg_entry) + a->slots_bytes + sizeof(val);
    if (!a->pool_size) a->pool_size = (base + 63) & ~(size_t)63; /* as entry_new */
    agg_entry *e = agg_pool_get(a);
    if (!e) return NULL;
    memset(e, 0, base);
    e->pooled = 1;
    e->gv = (val *)((char *)e + sizeof(agg_entry) + a->slots_bytes);
    e->gv[0] = row[a->gargs[0].col];
    e->key = e->kin;
    memcpy(e->kin, &a->rkw[r], 8);
    e->kin[8] = a->rkb[r];
    e->klen = 9;
    e->pwend = WM_MIN;
    e->hash = h;
    e->wstart = a->rts[r];
    e->wend = we;
    int i = a->wlast;
    if (slot >= 0 && i < a->nw && a->wends[i] == we) { /* agg_table_insert's common case, the probe's slot */
        struct wlist *l = &a->wl[i];
        htab *t = &l->t;
        if (l->n < l->cap && (uint64_t)(t->n + 1) * 4 <= (uint64_t)t->cap * 3 && slot < t->cap && !t->tab[slot].tag) {
            e->wpos = l->n;
            l->v[l->n++] = e;
            t->tab[slot] = (tslot){e->hash, e};
            t->n++;
            a->nentries++;
            return e;
        }
    }
    if (agg_table_insert(a, e)) {
        agg_entry_free(a, e);
        return NULL;
    }
    return e;
}

/* The slots of window ws's table (*m = 0: it has none yet). */
typedef struct fx_tab {
    int64_t ws;
    const tslot *tab;
    uint32_t m;
} fx_tab;

static inline void fx_table(agg_task *a, int global, int64_t size, int64_t ws, fx_tab *t)
{
    const htab *h = win_table(a, global ? WM_END : ws + size);
    t->ws = ws;
    t->tab = h ? h->tab : NULL;
    t->m = h && h->cap ? h->cap - 1 : 0;
}

/* The first entry of table t whose tag is h (its key not checked), or NULL
 * with *slot the free slot the probe ended at (-1: no table). */
static inline agg_entry *fx_find(const fx_tab *t, uint64_t h, int64_t *slot)
{
    *slot = -1;
    if (!t->m) return NULL;
    uint64_t tag;
    uint32_t i = (uint32_t)h & t->m;
    for (; (tag = t->tab[i].tag); i = (i + 1) & t->m)
        if (tag == h) return t->tab[i].e;
    *slot = i;
    return NULL;
}

/* The candidate entry of rows [c0, c1) into cand (passes 2 and 3); XE_NOMEM.
 * A software pipeline: the table slot of row r + FX_AHEAD is fetched while
 * row r is probed (and its entry fetched for pass 4).  Fetching a whole
 * chunk's slots first would fill the line fill buffers, and a prefetch that
 * finds none free waits. */
static int fx_probe(opinst *o, agg_task *a, const batch *in, int c0, int c1)
{
    int global = o->op->window.kind == WIN_NONE;
    int64_t size = o->op->window.size_ms;
    const int64_t *restrict rts = a->rts;
    const uint64_t *restrict rh = a->rh;
    agg_entry **restrict cand = a->rcand;
    fx_tab t, pt; /* the tables of the probed row's window and of the prefetched row's */
    fx_table(a, global, size, rts[c0], &t);
    pt = t;
    for (int r = c0; r < c1 && r < c0 + FX_AHEAD; r++) {
        if (rts[r] != pt.ws) fx_table(a, global, size, rts[r], &pt);
        if (pt.m) __builtin_prefetch(&pt.tab[rh[r] & pt.m]);
    }
    for (int r = c0; r < c1; r++) {
        int f = r + FX_AHEAD;
        if (f < c1) {
            if (rts[f] != pt.ws) fx_table(a, global, size, rts[f], &pt);
            if (pt.m) __builtin_prefetch(&pt.tab[rh[f] & pt.m]);
        }
        if (rts[r] != t.ws) fx_table(a, global, size, rts[r], &t);
        int64_t slot;
        agg_entry *e = fx_find(&t, rh[r], &slot);
        if (e) __builtin_prefetch((char *)e + 64);
        else {
            /* t's window as the one probed last (the prefetching side may have moved wlast): the
             * entry goes in at the slot the probe ended at */
            fx_table(a, global, size, t.ws, &t);
            if (!(e = fx_entry(a, batch_row(in, r), r, global ? WM_END : t.ws + size, 0, slot))) return XE_NOMEM;
            /* opening it may have made or moved the tables: look them up again */
            fx_table(a, global, size, t.ws, &t);
            fx_table(a, global, size, pt.ws, &pt);
        }
        cand[r] = e;
    }
    return 0;
}

/* The dense index of window we (its list), made for rows [c0, c1) if the
 * window has none yet; NULL when the window has no entries yet, or its keys
 * are too spread out.  A dense index maps key k to the window's entry of k
 * at k - dbase (modulo 2^64, so that no bound overflows): a perfect hash,
 * as engines do for integer group keys of a small range, where a row then
 * needs no hash, no probe and one cache line less.  It is made once per
 * window from the keys of one chunk (with room for as many again around
 * them), when they span at most eight times the groups expected; keys
 * outside it take the table. */
static struct wlist *fx_dense(agg_task *a, int64_t we, int c0, int c1)
{
    int i = a->wlast;
    if (i >= a->nw || a->wends[i] != we) {
        i = widx_find(a, we);
        if (i == a->nw || a->wends[i] != we) return NULL;
        a->wlast = i;
    }
    struct wlist *l = &a->wl[i];
    if (l->dense || l->dtried) return l->dense ? l : NULL;
    l->dtried = 1;
    int64_t mn = a->rkv[c0], mx = a->rkv[c0];
    for (int r = c0 + 1; r < c1; r++) {
        if (a->rkv[r] < mn) mn = a->rkv[r];
        if (a->rkv[r] > mx) mx = a->rkv[r];
    }
    uint64_t range = (uint64_t)mx - (uint64_t)mn;
    if (range >= (1u << 21)) return NULL;
    range++;
    uint64_t groups = (uint64_t)(a->wlast_n > l->n ? a->wlast_n : l->n);
    if (groups < (uint64_t)(c1 - c0)) groups = (uint64_t)(c1 - c0);
    if (range > 8 * groups + 4096) return NULL;
    uint64_t cap = 2 * range;
    agg_entry **d;
    if (a->dspare && a->dspare_cap >= cap && a->dspare_cap <= 4 * cap) {
        d = a->dspare;
        cap = a->dspare_cap;
        a->dspare = NULL;
        memset(d, 0, cap * sizeof *d);
    } else if (!(d = calloc(cap, sizeof *d)))
        return NULL; /* the table serves */
    l->dense = d;
    l->dcap = cap;
    l->dbase = (uint64_t)mn - range / 2;
    return l;
}

/* Rows [c0, c1) of one window: each row's candidate from the window's dense
 * index where its key falls in it; the others hashed and probed, found or
 * opened entries then entered in the index (checked first: a tag that
 * matches may be another key's).  1 when every candidate is the row's entry
 * (an index holds only entries whose key was checked or that were opened
 * for the key), 0 when the keys are still to be checked, XE_NOMEM. */
static int fx_probe1(opinst *o, agg_task *a, const batch *in, int c0, int c1)
{
    int global = o->op->window.kind == WIN_NONE;
    int64_t size = o->op->window.size_ms, we = global ? WM_END : a->rts[c0] + size;
    const struct wlist *l = fx_dense(a, we, c0, c1);
    if (!l) {
        fx_hashes(a, c0, c1);
        return fx_probe(o, a, in, c0, c1);
    }
    agg_entry **restrict dense = l->dense;
    uint64_t base = l->dbase, cap = l->dcap;
    const int64_t *restrict rkv = a->rkv;
    uint64_t *restrict rh = a->rh;
    agg_entry **restrict cand = a->rcand;
    int misses = 0;
    fx_tab t;
    fx_table(a, global, size, a->rts[c0], &t);
    for (int r = c0; r < c1 && r < c0 + FX_AHEAD; r++) {
        uint64_t i = (uint64_t)rkv[r] - base;
        if (i < cap) __builtin_prefetch(&dense[i]);
    }
    for (int r = c0; r < c1; r++) {
        if (r + FX_AHEAD < c1) {
            uint64_t f = (uint64_t)rkv[r + FX_AHEAD] - base;
            if (f < cap) __builtin_prefetch(&dense[f]);
        }
        uint64_t i = (uint64_t)rkv[r] - base;
        agg_entry *e = i < cap ? dense[i] : NULL;
        if (e) __builtin_prefetch((char *)e + 64);
        else { /* mostly a new group: its table slot, for the probe and the insert below */
            misses++;
            rh[r] = fx_hash(a, r);
            if (t.m) __builtin_prefetch(&t.tab[rh[r] & t.m]);
        }
        cand[r] = e;
    }
    if (!misses) return 1;
    for (int r = c0; r < c1; r++) {
        if (cand[r]) continue;
        int64_t slot;
        agg_entry *e = fx_find(&t, rh[r], &slot);
        uint64_t x = 0;
        if (e) memcpy(&x, e->kin, 8);
        if (!e || x != a->rkw[r] || e->kin[8] != a->rkb[r] || e->klen != 9) {
            if (!(e = fx_entry(a, batch_row(in, r), r, we, e != NULL, e ? -1 : slot))) return XE_NOMEM;
            fx_table(a, global, size, t.ws, &t); /* it may have made or moved the table */
        }
        uint64_t i = (uint64_t)rkv[r] - base;
        if (i < cap) dense[i] = e;
        cand[r] = e;
    }
    return 1;
}

int agg_push_fixed1(opinst *o, agg_task *a, const batch *in, int one_window, xerr *err)
{
    int global = o->op->window.kind == WIN_NONE, nc = in->ncols;
    int64_t size = o->op->window.size_ms;
    if (!one_window) fx_hashes(a, 0, in->nrows);
    for (int c0 = 0; c0 < in->nrows; c0 += FX_CHUNK) {
        int c1 = in->nrows - c0 < FX_CHUNK ? in->nrows : c0 + FX_CHUNK;
        int checked = one_window ? fx_probe1(o, a, in, c0, c1) : fx_probe(o, a, in, c0, c1);
        if (checked < 0) return xerr_set(err, XE_NOMEM, "out of memory");
        agg_entry **restrict cand = a->rcand;
        const uint64_t *restrict rkw = a->rkw;
        const uint8_t *restrict rkb = a->rkb;
        /* 4: the candidates' keys (unless checked); the entries marked dirty */
        for (int r = c0; r < c1 && checked; r++)
            if (!cand[r]->dirty && agg_mark_dirty(a, cand[r])) return xerr_set(err, XE_NOMEM, "out of memory");
        for (int r = c0; r < c1 && !checked; r++) {
            agg_entry *e = cand[r];
            uint64_t x;
            memcpy(&x, e->kin, 8);
            if (x != rkw[r] || e->kin[8] != rkb[r] || e->klen != 9) {
                if (!(e = cand[r] = fx_entry(a, batch_row(in, r), r, global ? WM_END : a->rts[r] + size, 1, -1)))
                    return xerr_set(err, XE_NOMEM, "out of memory");
            }
            if (!e->dirty && agg_mark_dirty(a, e)) return xerr_set(err, XE_NOMEM, "out of memory");
        }
        /* 5: the slots, an aggregate at a time */
        for (int k = 0; k < a->naggs; k++) {
            const cop c = a->cops[k];
            const val *v = in->v + (size_t)c0 * (size_t)nc + c.col;
            int r = c0;
            if (c.fast == FAST_COUNT_STAR) {
                for (; r < c1; r++) (*(int64_t *)((char *)cand[r]->slots + c.off))++;
                continue;
            }
            while (r < c1) { /* a stretch of the inline update, then one row the long way */
                if (c.fast == FAST_SUM_D)
                    for (; r < c1 && v->type == TY_DOUBLE; r++, v += nc) {
                        cslot *s = (cslot *)((char *)cand[r]->slots + c.off);
                        s->n++;
                        s->d += v->d;
                    }
                else /* MIN, MAX: as cslot_fast */
                    for (; r < c1 && v->type == TY_DOUBLE; r++, v += nc) {
                        cslot *s = (cslot *)((char *)cand[r]->slots + c.off);
                        if (isnan(v->d + s->d)) break;
                        double m = s->n ? s->d : v->d; /* without a branch on the comparison, */
                        s->d = c.fast == FAST_MIN_D ? (v->d < m ? v->d : m) : (v->d > m ? v->d : m); /* minsd, maxsd */
                        s->n++;
                    }
                if (r == c1) break;
                if (agg_slot_slow(o, a, cand[r], batch_row(in, r), k)) return xerr_set(err, XE_NOMEM, "out of memory");
                r++;
                v += nc;
            }
        }
    }
    return 0;
}
