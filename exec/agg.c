/*
 * agg.c: window assignment and the hash aggregate of one task.
 *
 * State: every open (window, group) has one entry in an in-memory hash table:
 * the group's values, one slot per aggregate, and bookkeeping for LMDB.  The
 * table is the working set; LMDB (the `state` database) is its durable copy,
 * written behind once per epoch: dirty entries are put, closed ones deleted,
 * in the same transaction that records the input offsets.  Keys are
 * (task, window end, group key || window start), so a task's state is one
 * contiguous key range and a restart reloads it with one cursor scan.
 *
 * Windows: TUMBLING and HOPPING assign a row to every window [s, s+size)
 * with s a multiple of the advance and s <= ts < s+size; SESSION keeps, per
 * group, sessions that merge when a row falls within GAP of them.  Without a
 * WINDOW clause there is one window covering all time, closed at the end of
 * input.  A window closes when the watermark reaches its end plus GRACE; a
 * row whose every window has closed is late: counted and dropped.
 *
 * Memory: one allocation per new entry (per window and group), none per row.
 */
#include "exec/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dset { /* COUNT(DISTINCT): a set of encoded values */
    uint32_t n, cap;  /* entries, slots (power of two) */
    uint64_t *h;      /* hashes, 0 = empty */
    uint32_t *off;    /* offset of the value in bytes */
    sbuf bytes;       /* u32 length + encoded value, one after the other */
} dset;

typedef struct agg_slot {
    int64_t n;      /* non-NULL inputs */
    int64_t i;      /* integer SUM */
    double d;       /* double SUM */
    val m;          /* MIN / MAX so far */
    char *mtext;    /* owned copy of a TEXT m */
    uint32_t mcap;
    dset *ds;
} agg_slot;

typedef struct agg_entry {
    struct agg_entry *next;   /* hash chain */
    struct agg_entry *wnext, *wprev; /* entries with the same window end */
    uint64_t hash;            /* of the group key (and window for fixed windows) */
    int64_t wstart, wend;
    int64_t pwend, pwstart;   /* where it is persisted; pwend == WM_MIN when not */
    uint8_t dirty, pooled;
    uint32_t klen;
    unsigned char *key;       /* encoded group values */
    val *gv;                  /* group values (text in this allocation) */
    agg_slot slots[];
} agg_entry;

struct agg_task {
    int naggs, ngroups;
    /* Open addressing with linear probing: hs[i] is the entry's hash (1 for
     * a hash of 0; 0 = empty) so that most probes never touch an entry. */
    uint32_t cap;
    uint64_t *hs;
    agg_entry **es;
    agg_entry **cands;        /* scratch: the sessions of one key */
    int64_t ncands, capcands;
    int64_t nentries;
    int64_t ndirty;
    int64_t closed_wm;        /* windows ending (+grace) at or before this are closed */
    int64_t max_closed;       /* largest end + grace of a window closed so far */
    int64_t persisted_closed; /* what meta holds */
    /* Window-end index: the distinct window ends, ascending, each with the
     * list of its entries, so closing touches only what closes. */
    int nw, capw, widx_broken; /* broken: out of memory once, close by scanning */
    int64_t *wends;
    agg_entry **wheads;
    sbuf key;                 /* scratch key encoding */
    sbuf pkey;                /* scratch LMDB key */
    sbuf vbuf;                /* scratch value */
    val *gtmp;                /* scratch group values */
    agg_entry **closing;
    int64_t nclosing, capclosing;
    /* deletions to persist: (wend, key bytes) */
    sbuf dels;
    int64_t ndels;
    /* closed entries are recycled: new windows reuse their memory */
    size_t pool_size;     /* the size of a pooled entry */
    agg_entry *pool;      /* free list through next */
};

agg_task *agg_new(opinst *o, int task)
{
    (void)task;
    agg_task *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->naggs = o->op->naggs;
    a->ngroups = o->op->ngroups;
    a->cap = 1024;
    a->hs = calloc(a->cap, sizeof *a->hs);
    a->es = calloc(a->cap, sizeof *a->es);
    a->gtmp = calloc((size_t)a->ngroups + 1, sizeof *a->gtmp);
    a->closed_wm = WM_MIN;
    a->max_closed = WM_MIN;
    a->persisted_closed = WM_MIN;
    if (!a->hs || !a->es || !a->gtmp) {
        free(a->hs);
        free(a->es);
        free(a->gtmp);
        free(a);
        return NULL;
    }
    return a;
}

static void dset_free(dset *s)
{
    if (!s) return;
    free(s->h);
    free(s->off);
    sbuf_fini(&s->bytes);
    free(s);
}

static void entry_free(agg_task *a, agg_entry *e)
{
    if (e->dirty) a->ndirty--;
    for (int i = 0; i < a->naggs; i++) {
        free(e->slots[i].mtext);
        dset_free(e->slots[i].ds);
    }
    if (e->pooled) {
        e->next = a->pool;
        a->pool = e;
    } else
        free(e);
}

void agg_free(agg_task *a)
{
    if (!a) return;
    for (uint32_t i = 0; i < a->cap; i++)
        if (a->hs[i]) entry_free(a, a->es[i]);
    while (a->pool) {
        agg_entry *n = a->pool->next;
        free(a->pool);
        a->pool = n;
    }
    free(a->hs);
    free(a->es);
    free(a->cands);
    free(a->gtmp);
    free(a->closing);
    free(a->wends);
    free(a->wheads);
    sbuf_fini(&a->key);
    sbuf_fini(&a->pkey);
    sbuf_fini(&a->vbuf);
    sbuf_fini(&a->dels);
    free(a);
}

int64_t agg_open_groups(const agg_task *a) { return a ? a->nentries : 0; }

int64_t agg_min_open_start(const agg_task *a)
{
    int64_t m = WM_END;
    for (uint32_t i = 0; a && a->nentries && i < a->cap; i++)
        if (a->hs[i] && a->es[i]->wstart < m) m = a->es[i]->wstart;
    return m;
}

/* ------------------------------------------------------------------ distinct sets */

static int dset_add(dset *s, const unsigned char *p, uint32_t n, uint64_t h)
{
    if (h == 0) h = 1;
    if ((s->n + 1) * 2 > s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 16;
        uint64_t *nh = calloc(cap, sizeof *nh);
        uint32_t *no = calloc(cap, sizeof *no);
        if (!nh || !no) { free(nh); free(no); return XE_NOMEM; }
        for (uint32_t i = 0; i < s->cap; i++) {
            if (!s->h[i]) continue;
            uint32_t j = (uint32_t)s->h[i] & (cap - 1);
            while (nh[j]) j = (j + 1) & (cap - 1);
            nh[j] = s->h[i];
            no[j] = s->off[i];
        }
        free(s->h);
        free(s->off);
        s->h = nh;
        s->off = no;
        s->cap = cap;
    }
    uint32_t j = (uint32_t)h & (s->cap - 1);
    while (s->h[j]) {
        if (s->h[j] == h) {
            uint32_t len;
            memcpy(&len, s->bytes.p + s->off[j], 4);
            if (len == n && !memcmp(s->bytes.p + s->off[j] + 4, p, n)) return 0;
        }
        j = (j + 1) & (s->cap - 1);
    }
    uint32_t off = (uint32_t)s->bytes.len;
    if (sbuf_add(&s->bytes, &n, 4) || sbuf_add(&s->bytes, p, n)) return XE_NOMEM;
    s->h[j] = h;
    s->off[j] = off;
    s->n++;
    return 0;
}

/* ------------------------------------------------------------------ slots */

static int set_m(agg_slot *s, const val *v)
{
    s->m = *v;
    if (v->type == TY_TEXT) {
        if (v->len + 1 > s->mcap) {
            char *t = realloc(s->mtext, v->len + 1);
            if (!t) return XE_NOMEM;
            s->mtext = t;
            s->mcap = v->len + 1;
        }
        memcpy(s->mtext, v->s, v->len);
        s->m.s = s->mtext;
    }
    return 0;
}

static int slot_update(agg_task *a, const plan_agg *ag, agg_slot *s, const val *v)
{
    if (ag->fn == FN_COUNT_STAR) { s->n++; return 0; }
    if (v->type == TY_NULL) return 0;
    switch (ag->fn) {
    case FN_COUNT: s->n++; break;
    case FN_SUM: case FN_AVG:
        s->n++;
        if (v->type == TY_DOUBLE) s->d += v->d;
        else s->i += v->i;
        break;
    case FN_MIN: case FN_MAX: {
        if (s->n++ == 0) return set_m(s, v);
        int c = val_compare(v, &s->m);
        if (ag->fn == FN_MIN ? c < 0 : c > 0) return set_m(s, v);
        break;
    }
    case FN_COUNT_DISTINCT: {
        if (!s->ds && !(s->ds = calloc(1, sizeof *s->ds))) return XE_NOMEM;
        sbuf_reset(&a->vbuf);
        if (val_key_encode(v, 1, &a->vbuf)) return XE_NOMEM;
        int rc = dset_add(s->ds, (unsigned char *)a->vbuf.p, (uint32_t)a->vbuf.len,
                          hash64(a->vbuf.p, a->vbuf.len, 7));
        if (rc) return rc;
        s->n = s->ds->n;
        break;
    }
    default: break;
    }
    return 0;
}

/* Merge slot b into a (session windows). */
static int slot_merge(const plan_agg *ag, agg_slot *a, const agg_slot *b)
{
    switch (ag->fn) {
    case FN_COUNT_STAR: case FN_COUNT: a->n += b->n; break;
    case FN_SUM: case FN_AVG: a->n += b->n; a->i += b->i; a->d += b->d; break;
    case FN_MIN: case FN_MAX:
        if (b->n == 0) break;
        if (a->n == 0) { a->n = b->n; return set_m(a, &b->m); }
        a->n += b->n;
        {
            int c = val_compare(&b->m, &a->m);
            if (ag->fn == FN_MIN ? c < 0 : c > 0) return set_m(a, &b->m);
        }
        break;
    case FN_COUNT_DISTINCT:
        if (!b->ds) break;
        if (!a->ds && !(a->ds = calloc(1, sizeof *a->ds))) return XE_NOMEM;
        for (uint32_t i = 0; i < b->ds->cap; i++) {
            if (!b->ds->h[i]) continue;
            uint32_t len;
            memcpy(&len, b->ds->bytes.p + b->ds->off[i], 4);
            if (dset_add(a->ds, (unsigned char *)b->ds->bytes.p + b->ds->off[i] + 4, len, b->ds->h[i]))
                return XE_NOMEM;
        }
        a->n = a->ds->n;
        break;
    default: break;
    }
    return 0;
}

static val slot_result(const plan_agg *ag, const agg_slot *s)
{
    switch (ag->fn) {
    case FN_COUNT_STAR: case FN_COUNT: case FN_COUNT_DISTINCT: return val_int(TY_BIGINT, s->n);
    case FN_SUM:
        if (!s->n) return val_null();
        return ag->type == TY_DOUBLE ? val_double(s->d + (double)s->i) : val_int(TY_BIGINT, s->i);
    case FN_AVG: return s->n ? val_double((s->d + (double)s->i) / (double)s->n) : val_null();
    case FN_MIN: case FN_MAX: return s->n ? s->m : val_null();
    default: return val_null();
    }
}

/* ------------------------------------------------------------------ the table */

static agg_entry *entry_new(agg_task *a, const val *gv, const unsigned char *key, uint32_t klen)
{
    size_t text = 0;
    for (int i = 0; i < a->ngroups; i++)
        if (gv[i].type == TY_TEXT) text += gv[i].len;
    size_t sz = sizeof(agg_entry) + (size_t)a->naggs * sizeof(agg_slot) + (size_t)a->ngroups * sizeof(val) + klen + text;
    if (!a->pool_size) a->pool_size = sz + 64;
    agg_entry *e;
    if (sz <= a->pool_size) {
        if (a->pool) {
            e = a->pool;
            a->pool = e->next;
        } else if (!(e = malloc(a->pool_size)))
            return NULL;
        memset(e, 0, sz);
        e->pooled = 1;
    } else if (!(e = calloc(1, sz)))
        return NULL;
    e->gv = (val *)((char *)e + sizeof(agg_entry) + (size_t)a->naggs * sizeof(agg_slot));
    e->key = (unsigned char *)(e->gv + a->ngroups);
    char *tp = (char *)e->key + klen;
    memcpy(e->key, key, klen);
    e->klen = klen;
    for (int i = 0; i < a->ngroups; i++) {
        e->gv[i] = gv[i];
        if (gv[i].type == TY_TEXT) {
            memcpy(tp, gv[i].s, gv[i].len);
            e->gv[i].s = tp;
            tp += gv[i].len;
        }
    }
    e->pwend = WM_MIN;
    return e;
}

#define HTAG(h) ((h) ? (h) : 1)

static void table_place(agg_task *a, agg_entry *e)
{
    uint32_t m = a->cap - 1, i = (uint32_t)e->hash & m;
    while (a->hs[i]) i = (i + 1) & m;
    a->hs[i] = HTAG(e->hash);
    a->es[i] = e;
}

static int table_grow(agg_task *a)
{
    uint32_t oc = a->cap;
    uint64_t *oh = a->hs;
    agg_entry **oe = a->es;
    uint64_t *nh = calloc((size_t)oc * 2, sizeof *nh);
    agg_entry **ne = calloc((size_t)oc * 2, sizeof *ne);
    if (!nh || !ne) {
        free(nh);
        free(ne);
        return XE_NOMEM;
    }
    a->hs = nh;
    a->es = ne;
    a->cap = oc * 2;
    for (uint32_t i = 0; i < oc; i++)
        if (oh[i]) table_place(a, oe[i]);
    free(oh);
    free(oe);
    return 0;
}

/* Position of end w in the index (or where it would go). */
static int widx_find(const agg_task *a, int64_t w)
{
    int lo = 0, hi = a->nw;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (a->wends[mid] < w) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int widx_add(agg_task *a, agg_entry *e)
{
    if (a->widx_broken) return 0;
    int i = widx_find(a, e->wend);
    if (i == a->nw || a->wends[i] != e->wend) {
        if (a->nw == a->capw) {
            int cap = a->capw ? a->capw * 2 : 16;
            int64_t *w = realloc(a->wends, (size_t)cap * sizeof *w);
            if (w) a->wends = w;
            agg_entry **h = realloc(a->wheads, (size_t)cap * sizeof *h);
            if (h) a->wheads = h;
            if (!w || !h) return XE_NOMEM;
            a->capw = cap;
        }
        memmove(&a->wends[i + 1], &a->wends[i], (size_t)(a->nw - i) * sizeof *a->wends);
        memmove(&a->wheads[i + 1], &a->wheads[i], (size_t)(a->nw - i) * sizeof *a->wheads);
        a->wends[i] = e->wend;
        a->wheads[i] = NULL;
        a->nw++;
    }
    e->wprev = NULL;
    e->wnext = a->wheads[i];
    if (e->wnext) e->wnext->wprev = e;
    a->wheads[i] = e;
    return 0;
}

static void widx_del(agg_task *a, agg_entry *e)
{
    if (a->widx_broken) return;
    if (e->wprev) e->wprev->wnext = e->wnext;
    else {
        int i = widx_find(a, e->wend);
        if (i < a->nw && a->wends[i] == e->wend) {
            a->wheads[i] = e->wnext;
            if (!e->wnext) {
                memmove(&a->wends[i], &a->wends[i + 1], (size_t)(a->nw - i - 1) * sizeof *a->wends);
                memmove(&a->wheads[i], &a->wheads[i + 1], (size_t)(a->nw - i - 1) * sizeof *a->wheads);
                a->nw--;
            }
        }
    }
    if (e->wnext) e->wnext->wprev = e->wprev;
    e->wnext = e->wprev = NULL;
}

/* Out of memory for the index: drop it and close windows by scanning. */
static void widx_break(agg_task *a)
{
    a->widx_broken = 1;
    a->nw = 0;
}

/* A session grew: its window end moves in the index. */
static void entry_move_end(agg_task *a, agg_entry *e, int64_t wend)
{
    widx_del(a, e);
    e->wend = wend;
    if (widx_add(a, e)) widx_break(a);
}

static int table_insert(agg_task *a, agg_entry *e)
{
    /* keep the load under 3/4 */
    if ((uint64_t)(a->nentries + 1) * 4 > (uint64_t)a->cap * 3 && table_grow(a) &&
        (uint64_t)(a->nentries + 1) >= a->cap)
        return XE_NOMEM;
    table_place(a, e);
    a->nentries++;
    if (widx_add(a, e)) widx_break(a);
    return 0;
}

/* Remove e; later entries of its probe run shift back (no tombstones). */
static void table_unlink(agg_task *a, agg_entry *e)
{
    uint32_t m = a->cap - 1, i = (uint32_t)e->hash & m;
    while (a->hs[i] && a->es[i] != e) i = (i + 1) & m;
    if (!a->hs[i]) return;
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & m;
        if (!a->hs[j]) break;
        uint32_t home = (uint32_t)a->es[j]->hash & m;
        /* move j into the hole at i unless its home lies cyclically in (i, j] */
        int stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (stays) continue;
        a->hs[i] = a->hs[j];
        a->es[i] = a->es[j];
        i = j;
    }
    a->hs[i] = 0;
    a->es[i] = NULL;
    a->nentries--;
    widx_del(a, e);
}

static void mark_dirty(agg_task *a, agg_entry *e)
{
    if (!e->dirty) {
        e->dirty = 1;
        a->ndirty++;
    }
}

/* Record that the persisted copy of e must go. */
static int note_delete(agg_task *a, const agg_entry *e)
{
    if (e->pwend == WM_MIN) return 0;
    unsigned char hdr[20];
    be64_put(hdr, (uint64_t)e->pwend);
    be64_put(hdr + 8, (uint64_t)e->pwstart);
    be32_put(hdr + 16, e->klen);
    if (sbuf_add(&a->dels, hdr, sizeof hdr) || sbuf_add(&a->dels, e->key, e->klen)) return XE_NOMEM;
    a->ndels++;
    return 0;
}

static int emit_entry(opinst *o, agg_task *a, const agg_entry *e, xerr *err)
{
    val *row = batch_add_row(&o->out);
    if (!row) return xerr_set(err, XE_NOMEM, "out of memory");
    int c = 0;
    for (int i = 0; i < a->ngroups; i++) row[c++] = e->gv[i]; /* entry memory outlives the push */
    for (int i = 0; i < a->naggs; i++) row[c++] = slot_result(&o->op->aggs[i], &e->slots[i]);
    row[c++] = e->wstart == WM_MIN ? val_null() : val_int(TY_TIMESTAMP, e->wstart);
    row[c++] = e->wend == WM_END ? val_null() : val_int(TY_TIMESTAMP, e->wend);
    return 0;
}

static int update_entry(opinst *o, agg_task *a, agg_entry *e, const val *row, xerr *err)
{
    const plan_op *op = o->op;
    int pi = op->ngroups;
    for (int k = 0; k < op->naggs; k++) {
        val v = val_null();
        if (op->aggs[k].arg) v = xprog_eval(&o->progs[pi++], row, &o->q->scratch);
        if (slot_update(a, &op->aggs[k], &e->slots[k], &v)) return xerr_set(err, XE_NOMEM, "out of memory");
    }
    batch_reset(&o->q->scratch);
    mark_dirty(a, e);
    return 0;
}

/* A new (window, group) entry with empty slots, in the table; NULL when
 * memory runs out (nothing is left behind). */
static agg_entry *entry_open(agg_task *a, const unsigned char *key, uint32_t klen, uint64_t h, int64_t ws, int64_t we)
{
    agg_entry *e = entry_new(a, a->gtmp, key, klen);
    if (!e) return NULL;
    e->hash = h;
    e->wstart = ws;
    e->wend = we;
    for (int k = 0; k < a->naggs; k++) e->slots[k].m = val_null();
    if (table_insert(a, e)) {
        entry_free(a, e);
        return NULL;
    }
    return e;
}

/* Append e to a growable list of entries; XE_NOMEM. */
static int list_push(agg_entry ***v, int64_t *n, int64_t *cap, agg_entry *e)
{
    if (*n == *cap) {
        int64_t c = *cap ? *cap * 2 : 64;
        agg_entry **nv = realloc(*v, (size_t)c * sizeof *nv);
        if (!nv) return XE_NOMEM;
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = e;
    return 0;
}

static agg_entry *find_fixed(agg_task *a, uint64_t h, int64_t ws, const unsigned char *key, uint32_t klen)
{
    uint32_t m = a->cap - 1;
    uint64_t tag = HTAG(h);
    for (uint32_t i = (uint32_t)h & m; a->hs[i]; i = (i + 1) & m) {
        if (a->hs[i] != tag) continue;
        agg_entry *e = a->es[i];
        if (e->hash == h && e->wstart == ws && e->klen == klen && !memcmp(e->key, key, klen)) return e;
    }
    return NULL;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

int agg_push(opinst *o, int task, const batch *in, xerr *err)
{
    agg_task *a = o->agg[task];
    const plan_op *op = o->op;
    const ast_window *w = &op->window;
    query *q = o->q;
    int emit_changes = op->emit == EMIT_CHANGES;
    batch_reset(&o->out);
    for (int r = 0; r < in->nrows; r++) {
        const val *row = batch_row(in, r);
        /* group values and their key */
        for (int g = 0; g < a->ngroups; g++) {
            val v = xprog_eval(&o->progs[g], row, &q->scratch);
            /* text from functions lives in scratch until the entry copies it */
            a->gtmp[g] = v;
        }
        sbuf_reset(&a->key);
        if (val_key_encode(a->gtmp, a->ngroups, &a->key)) return xerr_set(err, XE_NOMEM, "out of memory");
        const unsigned char *key = (const unsigned char *)(a->key.p ? a->key.p : "");
        uint32_t klen = (uint32_t)a->key.len;
        uint64_t kh = hash64(key, klen, 0x9e37);
        int64_t ts = 0;
        if (w->kind != WIN_NONE) {
            const val *tv = &row[op->win_ts_col];
            if (tv->type == TY_NULL) { q->late++; continue; } /* no event time: cannot be windowed */
            ts = tv->i;
        }
        int placed = 0;
        if (w->kind == WIN_SESSION) {
            int64_t s0 = ts, e0 = ts + w->gap_ms;
            if (e0 + w->grace_ms <= a->closed_wm) { q->late++; batch_reset(&q->scratch); continue; }
            /* find sessions of this key that overlap [s0, e0) and merge them */
            agg_entry *target = NULL;
            /* gather first: merging unlinks entries, which shifts the probe run */
            a->ncands = 0;
            uint32_t m = a->cap - 1;
            for (uint32_t i = (uint32_t)kh & m; a->hs[i]; i = (i + 1) & m) {
                agg_entry *e = a->es[i];
                if (a->hs[i] != HTAG(kh) || e->hash != kh || e->klen != klen || memcmp(e->key, key, klen)) continue;
                if (!(e->wstart < e0 && s0 < e->wend)) continue;
                if (list_push(&a->cands, &a->ncands, &a->capcands, e)) return xerr_set(err, XE_NOMEM, "out of memory");
            }
            for (int64_t ci = 0; ci < a->ncands; ci++) {
                agg_entry *e = a->cands[ci];
                if (!target) {
                    target = e;
                    continue;
                }
                /* merge e into target */
                for (int k = 0; k < a->naggs; k++)
                    if (slot_merge(&op->aggs[k], &target->slots[k], &e->slots[k]))
                        return xerr_set(err, XE_NOMEM, "out of memory");
                if (e->wstart < target->wstart) target->wstart = e->wstart;
                if (e->wend > target->wend) entry_move_end(a, target, e->wend);
                if (note_delete(a, e)) return xerr_set(err, XE_NOMEM, "out of memory");
                table_unlink(a, e);
                entry_free(a, e);
            }
            if (!target) {
                if (!(target = entry_open(a, key, klen, kh, s0, e0))) return xerr_set(err, XE_NOMEM, "out of memory");
            } else {
                if (s0 < target->wstart) target->wstart = s0;
                if (e0 > target->wend) entry_move_end(a, target, e0);
            }
            if (update_entry(o, a, target, row, err)) return err->code;
            if (emit_changes && emit_entry(o, a, target, err)) return err->code;
            continue;
        }
        /* fixed windows: tumbling, hopping, or the single global window */
        int64_t size = w->size_ms, adv = w->kind == WIN_HOPPING ? w->advance_ms : w->size_ms;
        if (w->kind == WIN_NONE) adv = 1;
        int64_t first, last;
        if (w->kind == WIN_NONE) first = last = 0;
        else {
            last = floor_div(ts, adv) * adv;           /* latest window start <= ts */
            first = floor_div(ts - size, adv) * adv + adv; /* earliest start with ts < start+size */
        }
        for (int64_t s = first; s <= last; s += adv) {
            int64_t ws = w->kind == WIN_NONE ? WM_MIN : s, we = w->kind == WIN_NONE ? WM_END : s + size;
            if (we != WM_END && we + w->grace_ms <= a->closed_wm) continue; /* that window has closed */
            placed = 1;
            uint64_t h = hash64_mix(kh ^ (uint64_t)ws);
            agg_entry *e = find_fixed(a, h, ws, key, klen);
            if (!e && !(e = entry_open(a, key, klen, h, ws, we))) return xerr_set(err, XE_NOMEM, "out of memory");
            if (update_entry(o, a, e, row, err)) return err->code;
            if (emit_changes && emit_entry(o, a, e, err)) return err->code;
        }
        if (!placed) q->late++;
        batch_reset(&q->scratch);
    }
    if (emit_changes && o->out.nrows) return op_emit(o, task, &o->out, err);
    return 0;
}

static int cmp_closing(const void *x, const void *y)
{
    const agg_entry *a = *(agg_entry *const *)x, *b = *(agg_entry *const *)y;
    if (a->wend != b->wend) return a->wend < b->wend ? -1 : 1;
    if (a->wstart != b->wstart) return a->wstart < b->wstart ? -1 : 1;
    /* within a window: by key hash (deterministic, cheap), bytes on a tie */
    if (a->hash != b->hash) return a->hash < b->hash ? -1 : 1;
    uint32_t n = a->klen < b->klen ? a->klen : b->klen;
    int c = memcmp(a->key, b->key, n);
    return c ? c : (a->klen > b->klen) - (a->klen < b->klen);
}

/* In-place quicksort of entry pointers (qsort would allocate per call). */
static void sort_entries(agg_entry **v, int64_t n)
{
    while (n > 16) {
        agg_entry *pivot = v[n / 2], *t;
        int64_t i = 0, j = n - 1;
        for (;;) {
            while (cmp_closing(&v[i], &pivot) < 0) i++;
            while (cmp_closing(&v[j], &pivot) > 0) j--;
            if (i >= j) break;
            t = v[i]; v[i] = v[j]; v[j] = t;
            i++;
            j--;
        }
        /* recurse into the smaller half, loop on the larger */
        if (j + 1 < n - j - 1) {
            sort_entries(v, j + 1);
            v += j + 1;
            n -= j + 1;
        } else {
            sort_entries(v + j + 1, n - j - 1);
            n = j + 1;
        }
    }
    for (int64_t i = 1; i < n; i++)
        for (int64_t k = i; k > 0 && cmp_closing(&v[k - 1], &v[k]) > 0; k--) {
            agg_entry *t = v[k];
            v[k] = v[k - 1];
            v[k - 1] = t;
        }
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
    /* the closing windows are a prefix of the index (or, after an allocation
     * failure broke the index, found by scanning the table) */
    int nprefix = 0;
    for (int wi = 0; wi < a->nw || (a->widx_broken && wi == 0); wi++) {
        if (!a->widx_broken && wm != WM_END && (a->wends[wi] == WM_END || a->wends[wi] > wm - grace)) break;
        nprefix = wi + 1;
        for (agg_entry *e = a->widx_broken ? NULL : a->wheads[wi]; e; e = e->wnext) {
            if (list_push(&a->closing, &a->nclosing, &a->capclosing, e)) return xerr_set(err, XE_NOMEM, "out of memory");
        }
        if (a->widx_broken) {
            for (uint32_t si = 0; si < a->cap; si++) {
                    if (!a->hs[si]) continue;
                    agg_entry *e = a->es[si];
                    int closes = wm == WM_END || (e->wend != WM_END && e->wend <= wm - grace);
                    if (!closes) continue;
                    if (list_push(&a->closing, &a->nclosing, &a->capclosing, e))
                        return xerr_set(err, XE_NOMEM, "out of memory");
                }
            break;
        }
    }
    (void)nprefix;
    if (!a->nclosing) return 0;
    sort_entries(a->closing, a->nclosing);
    int rc = 0;
    batch_reset(&o->out);
    for (int64_t i = 0; i < a->nclosing; i++) {
        agg_entry *e = a->closing[i];
        if (op->emit != EMIT_CHANGES && (rc = emit_entry(o, a, e, err))) return rc;
        if (o->out.nrows >= EXEC_SLICE_ROWS) {
            if ((rc = op_emit(o, task, &o->out, err))) return rc;
            batch_reset(&o->out);
        }
    }
    if (o->out.nrows && (rc = op_emit(o, task, &o->out, err))) return rc;
    batch_reset(&o->out);
    for (int64_t i = 0; i < a->nclosing; i++) {
        agg_entry *e = a->closing[i];
        if (e->wend != WM_END && e->wend + grace > a->max_closed) a->max_closed = e->wend + grace;
        if (note_delete(a, e)) return xerr_set(err, XE_NOMEM, "out of memory");
        table_unlink(a, e);
        entry_free(a, e);
    }
    a->nclosing = 0;
    return 0;
}

/* ------------------------------------------------------------------ persistence */

/* The global window ends at WM_END, which a [lo, hi) scan cannot reach. */
static int64_t skey_end(int64_t w) { return w == WM_END ? WM_END - 1 : w; }

/* LMDB key tail: group key || be64(window start).  Value: per slot
 * n, i, d, MIN/MAX value (key-encoded), distinct values. */
static int entry_encode(agg_task *a, const agg_entry *e, sbuf *k, sbuf *v)
{
    unsigned char b8[8];
    sbuf_reset(k);
    sbuf_reset(v);
    be64_put(b8, (uint64_t)e->wstart);
    if (sbuf_add(k, e->key, e->klen) || sbuf_add(k, b8, 8)) return XE_NOMEM;
    uint32_t kl = e->klen;
    if (sbuf_add(v, &kl, 4)) return XE_NOMEM;
    for (int i = 0; i < a->naggs; i++) {
        const agg_slot *s = &e->slots[i];
        if (sbuf_add(v, &s->n, 8) || sbuf_add(v, &s->i, 8) || sbuf_add(v, &s->d, 8)) return XE_NOMEM;
        size_t at = v->len;
        uint32_t ml = 0;
        if (sbuf_add(v, &ml, 4)) return XE_NOMEM;
        if (s->n && (s->m.type != TY_NULL)) {
            if (val_key_encode(&s->m, 1, v)) return XE_NOMEM;
            ml = (uint32_t)(v->len - at - 4);
            memcpy(v->p + at, &ml, 4);
        }
        uint32_t dn = s->ds ? s->ds->n : 0;
        if (sbuf_add(v, &dn, 4)) return XE_NOMEM;
        if (dn) {
            uint32_t bl = (uint32_t)s->ds->bytes.len;
            if (sbuf_add(v, &bl, 4) || sbuf_add(v, s->ds->bytes.p, bl)) return XE_NOMEM;
        }
    }
    return 0;
}

int agg_flush(opinst *o, int task, store_txn *t, xerr *err)
{
    agg_task *a = o->agg[task];
    uint32_t tid = query_task_id(o->q, o->op->id, task);
    int rc;
    /* deletions first: a session that moved is deleted at its old end, then put at its new one */
    for (size_t off = 0; off < a->dels.len;) {
        const unsigned char *p = (const unsigned char *)a->dels.p + off;
        int64_t wend = (int64_t)be64_get(p);
        uint32_t kl = be32_get(p + 16);
        sbuf_reset(&a->pkey);
        if (sbuf_add(&a->pkey, p + 20, kl) || sbuf_add(&a->pkey, p + 8, 8)) return xerr_set(err, XE_NOMEM, "out of memory");
        if ((rc = store_state_del(t, STORE_STATE, tid, skey_end(wend), a->pkey.p, a->pkey.len, err))) return rc;
        off += 20 + kl;
    }
    sbuf_reset(&a->dels);
    a->ndels = 0;
    for (uint32_t si = 0; a->ndirty && si < a->cap; si++) {
        if (!a->hs[si]) continue;
        agg_entry *e = a->es[si];
        if (!e->dirty) continue;
        e->dirty = 0;
        a->ndirty--;
        if (e->pwend != WM_MIN && (e->pwend != e->wend || e->pwstart != e->wstart)) {
            unsigned char b8[8];
            be64_put(b8, (uint64_t)e->pwstart);
            sbuf_reset(&a->pkey);
            if (sbuf_add(&a->pkey, e->key, e->klen) || sbuf_add(&a->pkey, b8, 8)) return xerr_set(err, XE_NOMEM, "out of memory");
            if ((rc = store_state_del(t, STORE_STATE, tid, skey_end(e->pwend), a->pkey.p, a->pkey.len, err))) return rc;
        }
        if (entry_encode(a, e, &a->pkey, &a->vbuf)) return xerr_set(err, XE_NOMEM, "out of memory");
        if ((rc = store_state_put(t, STORE_STATE, tid, skey_end(e->wend), a->pkey.p, a->pkey.len, a->vbuf.p, a->vbuf.len, err)))
            return rc;
        e->pwend = e->wend;
        e->pwstart = e->wstart;
    }
    a->ndirty = 0;
    /* How far windows are closed survives a restart.  After the end of input
     * (WM_END) that is the end of the last closed window: rows appended later
     * to a file source then count as late for windows already emitted,
     * instead of emitting them a second time. */
    int64_t closed = a->closed_wm == WM_END ? a->max_closed : a->closed_wm;
    if (closed != a->persisted_closed) {
        char key[48];
        unsigned char v[8];
        snprintf(key, sizeof key, "closed/%u", tid);
        be64_put(v, (uint64_t)closed);
        if ((rc = store_kv_put(t, STORE_META, key, v, 8, err))) return rc;
        a->persisted_closed = closed;
    }
    return 0;
}

typedef struct load_ctx {
    opinst *o;
    agg_task *a;
    batch tmp;
    xerr *err;
    int rc;
} load_ctx;

static int load_one(void *ctx, int64_t wend, const void *kp, size_t kl, const void *vp, size_t vl)
{
    load_ctx *c = ctx;
    agg_task *a = c->a;
    if (wend == WM_END - 1) wend = WM_END;
    const unsigned char *k = kp, *v = vp, *end = v + vl;
    if (kl < 8 || vl < 4) goto corrupt;
    uint32_t gkl;
    memcpy(&gkl, v, 4);
    v += 4;
    if (gkl + 8 != kl) goto corrupt;
    batch_reset(&c->tmp);
    if (val_key_decode(k, gkl, a->gtmp, a->ngroups, &c->tmp, c->err) < 0) goto corrupt;
    agg_entry *e = entry_new(a, a->gtmp, k, gkl);
    if (!e) { c->rc = xerr_set(c->err, XE_NOMEM, "out of memory"); return 1; }
    e->wstart = (int64_t)be64_get(k + gkl);
    e->wend = wend;
    e->pwstart = e->wstart;
    e->pwend = wend;
    const ast_window *w = &c->o->op->window;
    if (w->kind == WIN_SESSION) e->hash = hash64(k, gkl, 0x9e37);
    else e->hash = hash64_mix(hash64(k, gkl, 0x9e37) ^ (uint64_t)e->wstart);
    for (int i = 0; i < a->naggs; i++) {
        agg_slot *s = &e->slots[i];
        s->m = val_null();
        uint32_t ml, dn;
        if (end - v < 28) goto bad_entry;
        memcpy(&s->n, v, 8); memcpy(&s->i, v + 8, 8); memcpy(&s->d, v + 16, 8); memcpy(&ml, v + 24, 4);
        v += 28;
        if ((size_t)(end - v) < ml) goto bad_entry;
        if (ml) {
            val m;
            batch_reset(&c->tmp);
            if (val_key_decode(v, ml, &m, 1, &c->tmp, c->err) < 0 || set_m(s, &m)) goto bad_entry;
        }
        v += ml;
        if (end - v < 4) goto bad_entry;
        memcpy(&dn, v, 4);
        v += 4;
        if (dn) {
            uint32_t bl;
            if (end - v < 4) goto bad_entry;
            memcpy(&bl, v, 4);
            v += 4;
            if ((size_t)(end - v) < bl) goto bad_entry;
            if (!(s->ds = calloc(1, sizeof *s->ds))) goto bad_entry;
            for (const unsigned char *p = v; p + 4 <= v + bl;) {
                uint32_t len;
                memcpy(&len, p, 4);
                if (p + 4 + len > v + bl) goto bad_entry;
                if (dset_add(s->ds, p + 4, len, hash64(p + 4, len, 7))) goto bad_entry;
                p += 4 + len;
            }
            v += bl;
        }
    }
    if (table_insert(a, e)) {
        entry_free(a, e);
        c->rc = xerr_set(c->err, XE_NOMEM, "out of memory");
        return 1;
    }
    return 0;
bad_entry:
    entry_free(a, e);
corrupt:
    c->rc = xerr_set(c->err, XE_CORRUPT, "window state of query task %u is corrupt",
                     query_task_id(c->o->q, c->o->op->id, 0));
    return 1;
}

int agg_load(opinst *o, int task, store_txn *t, xerr *err)
{
    load_ctx c = {o, o->agg[task], {0}, err, 0};
    {
        char key[48];
        sbuf v;
        sbuf_init(&v);
        snprintf(key, sizeof key, "closed/%u", query_task_id(o->q, o->op->id, task));
        int r = store_kv_get(t, STORE_META, key, &v, err);
        if (r == 0 && v.len == 8) {
            c.a->closed_wm = c.a->persisted_closed = (int64_t)be64_get((unsigned char *)v.p);
            c.a->max_closed = c.a->closed_wm;
        }
        sbuf_fini(&v);
        if (r && r != XE_NOTFOUND) return r;
        xerr_clear(err);
    }
    if (batch_init(&c.tmp, o->op->ngroups + 1, 4)) return xerr_set(err, XE_NOMEM, "out of memory");
    int rc = store_state_scan(t, STORE_STATE, query_task_id(o->q, o->op->id, task), WM_MIN, WM_END, load_one, &c, err);
    /* group values point into tmp's arena only until entry_new copies them */
    batch_fini(&c.tmp);
    if (c.rc) return c.rc;
    return rc;
}
