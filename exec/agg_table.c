/*
 * agg_table.c: where the window aggregate keeps its entries.
 *
 * Every open (window, group) has one entry: its group values and key, its
 * slots (agg_fn.c) and bookkeeping for LMDB.  Sessions keep every entry in
 * one hash table; fixed windows (tumbling, hopping, global) have a table per
 * window, kept in the window-end index: the distinct window ends,
 * ascending, each with the list of its entries, so that closing touches
 * only what closes.  Tables use open addressing with linear probing and
 * the hash beside the pointer; the probes the push runs per row are inline
 * in agg.h.  The dirty list holds the entries changed since the epoch's
 * last flush (agg_state.c).
 *
 * Memory: one allocation per new entry (per window and group), recycled when
 * windows close; none per row.  Pooled entries come from slabs.  Calls
 * agg_fn.c only.
 */
#include "exec/agg.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* A pooled entry: a recycled one, or the next of the current slab (one
 * allocation for SLAB_ENTRIES, handed out as they are needed, so that fresh
 * memory is touched once).  NULL when out of memory.  A recycled entry is
 * cold (windows close in hash order): the one POOL_AHEAD pops later is
 * fetched now, every line entry_new clears, so that a new window's first
 * rows do not wait for memory one entry at a time. */
enum { SLAB_ENTRIES = 64, POOL_AHEAD = 4 };
agg_entry *agg_pool_get(agg_task *a)
{
    if (a->npool) {
        agg_entry *e = a->pool[--a->npool];
        if (a->npool >= POOL_AHEAD) {
            const char *f = (const char *)a->pool[a->npool - POOL_AHEAD];
            for (size_t at = 0; at < a->pool_size; at += 64) __builtin_prefetch(f + at, 1);
        }
        return e;
    }
    if (a->slab_left == 0) {
        if (a->cappool < a->npooled + SLAB_ENTRIES) { /* room to recycle every entry, the new slab's too */
            int64_t cap = a->cappool ? a->cappool * 2 : 4 * SLAB_ENTRIES;
            agg_entry **v = realloc(a->pool, (size_t)cap * sizeof *v);
            if (!v) return NULL;
            a->pool = v;
            a->cappool = cap;
        }
        char *blk = aligned_alloc(64, 64 + SLAB_ENTRIES * a->pool_size);
        if (!blk) return NULL;
        memcpy(blk, &a->slabs, sizeof a->slabs); /* slabs are chained through their first bytes */
        a->slabs = blk;
        a->slab_next = blk + 64;
        a->slab_left = SLAB_ENTRIES;
        a->npooled += SLAB_ENTRIES;
    }
    agg_entry *e = (agg_entry *)a->slab_next;
    a->slab_next += a->pool_size;
    a->slab_left--;
    return e;
}

static agg_entry *entry_new(agg_task *a, const val *gv, const unsigned char *key, uint32_t klen)
{
    size_t text = 0;
    for (int i = 0; i < a->ngroups; i++)
        if (gv[i].type == TY_TEXT) text += gv[i].len;
    size_t ext = a->has_ext ? (size_t)a->naggs * sizeof(agg_ext) : 0;
    size_t base = sizeof(agg_entry) + a->slots_bytes + ext + (size_t)a->ngroups * sizeof(val);
    size_t kout = klen > KIN ? klen : 0; /* a key that fits stays in kin only */
    size_t sz = base + kout + text;
    /* pooled entries are whole cache lines, so that an entry's first bytes
     * and its slots take as few lines as they can: just enough for the
     * longest key when the keys are fixed-width, else some slack */
    if (!a->pool_size)
        a->pool_size = a->key_max >= 0 ? (base + (a->key_max > KIN ? (size_t)a->key_max : 0) + 63) & ~(size_t)63
                                       : (sz + 64 + 63) & ~(size_t)63;
    agg_entry *e;
    if (sz <= a->pool_size) {
        if (!(e = agg_pool_get(a))) return NULL;
        memset(e, 0, sz);
        e->pooled = 1;
    } else if (!(e = calloc(1, sz)))
        return NULL;
    char *p = (char *)e + sizeof(agg_entry) + a->slots_bytes + ext; /* the agg_exts (entry_ext), then: */
    e->gv = (val *)p;
    e->key = kout ? (unsigned char *)(e->gv + a->ngroups) : e->kin;
    char *tp = (char *)(e->gv + a->ngroups) + kout;
    if (kout) memcpy(e->key, key, klen);
    memcpy(e->kin, key, klen < KIN ? klen : KIN);
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

/* Fixed windows: the windows ending at or before wend close; their entries
 * leave the dirty list in one pass over it that reads no entry. */
void agg_dirty_drop_closed(agg_task *a, int64_t wend)
{
    int64_t k = 0;
    for (int64_t i = 0; i < a->ndirty; i++)
        if (a->dirty[i].wend > wend) {
            if (a->track_dpos && k != i) a->dirty[i].e->dpos = k;
            a->dirty[k++] = a->dirty[i];
        }
    a->ndirty = k;
}

/* Fixed windows under a memory budget: from now on the dirty entries keep
 * their place in the list (dpos), so that an evicted one can leave it. */
void agg_dirty_track(agg_task *a)
{
    if (a->track_dpos) return;
    for (int64_t i = 0; i < a->ndirty; i++) a->dirty[i].e->dpos = i;
    a->track_dpos = 1;
}

static void dirty_drop(agg_task *a, agg_entry *e)
{
    if (!e->dirty) return;
    dirty_ref *last = &a->dirty[--a->ndirty];
    a->dirty[e->dpos] = *last;
    last->e->dpos = e->dpos;
    e->dirty = 0;
}

/* Fixed windows leave the dirty list a window at a time (agg_dirty_drop_closed),
 * never an entry at a time, so their entries' dpos is not kept. */
void agg_entry_free(agg_task *a, agg_entry *e)
{
    if (a->session) dirty_drop(a, e);
    agg_ext_clear(a, e);
    if (e->pooled) {
        assert(a->npool < a->cappool);
        a->pool[a->npool++] = e;
    } else
        free(e);
}

/* e out of the dirty list (sessions, and fixed windows with track_dpos). */
void agg_dirty_remove(agg_task *a, agg_entry *e)
{
    dirty_drop(a, e);
}

int agg_mark_dirty(agg_task *a, agg_entry *e)
{
    if (e->dirty) return 0;
    if (room_for_one(&a->dirty, a->ndirty, &a->capdirty, sizeof *a->dirty)) return XE_NOMEM;
    if (!a->session) e->stamp = a->clock; /* the line dpos is written to */
    e->dirty = 1;
    e->dpos = a->ndirty;
    a->dirty[a->ndirty++] = (dirty_ref){e->wend, e};
    return 0;
}

static void htab_place(htab *t, agg_entry *e)
{
    uint32_t m = t->cap - 1, i = (uint32_t)e->hash & m;
    while (t->tab[i].tag) i = (i + 1) & m;
    t->tab[i].tag = HTAG(e->hash);
    t->tab[i].e = e;
}

/* Make room for one more entry: the load stays under 3/4 (a first table of
 * cap0 slots); XE_NOMEM. */
static int htab_room(htab *t, uint32_t cap0)
{
    if ((uint64_t)(t->n + 1) * 4 <= (uint64_t)t->cap * 3) return 0;
    uint32_t oc = t->cap, nc = oc ? oc * 2 : cap0;
    tslot *ot = t->tab;
    tslot *nt = calloc((size_t)nc, sizeof *nt);
    if (!nt) return (uint64_t)t->n + 1 < oc ? 0 : XE_NOMEM; /* fuller, but there is a free slot */
    t->tab = nt;
    t->cap = nc;
    for (uint32_t i = 0; i < oc; i++)
        if (ot[i].tag) htab_place(t, ot[i].e);
    free(ot);
    return 0;
}

/* Remove e; later entries of its probe run shift back (no tombstones). */
void agg_htab_remove(htab *t, agg_entry *e)
{
    uint32_t m = t->cap - 1, i = (uint32_t)e->hash & m;
    while (t->tab[i].tag && t->tab[i].e != e) i = (i + 1) & m;
    if (!t->tab[i].tag) return;
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & m;
        if (!t->tab[j].tag) break;
        uint32_t home = (uint32_t)t->tab[j].tag & m; /* tag == hash: hashes are never 0 */
        /* move j into the hole at i unless its home lies cyclically in (i, j] */
        int stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (stays) continue;
        t->tab[i] = t->tab[j];
        i = j;
    }
    t->tab[i].tag = 0;
    t->tab[i].e = NULL;
    t->n--;
}

/* The index position of window end wend, made (with an empty list) if
 * needed; XE_NOMEM. */
int agg_widx_window(agg_task *a, int64_t wend)
{
    /* rows come mostly in time order: the window probed last is tried first */
    int i = a->wlast < a->nw && a->wends[a->wlast] == wend ? a->wlast : widx_find(a, wend);
    if (i == a->nw || a->wends[i] != wend) {
        if (a->nw == a->capw) {
            int cap = a->capw ? a->capw * 2 : 16;
            int64_t *w = realloc(a->wends, (size_t)cap * sizeof *w);
            if (w) a->wends = w;
            struct wlist *l = realloc(a->wl, (size_t)cap * sizeof *l);
            if (l) a->wl = l;
            if (!w || !l) return XE_NOMEM;
            a->capw = cap;
        }
        memmove(&a->wends[i + 1], &a->wends[i], (size_t)(a->nw - i) * sizeof *a->wends);
        memmove(&a->wl[i + 1], &a->wl[i], (size_t)(a->nw - i) * sizeof *a->wl);
        a->wends[i] = wend;
        a->wl[i] = (struct wlist){.v = NULL};
        a->nw++;
    }
    return i;
}

/* e into the list of its window end, made if needed; *at (if not NULL)
 * says where that window is in the index.  XE_NOMEM. */
static int widx_add(agg_task *a, agg_entry *e, int *at)
{
    if (a->widx_broken) return 0;
    int i = agg_widx_window(a, e->wend);
    if (i < 0) return XE_NOMEM;
    struct wlist *l = &a->wl[i];
    if (!a->session && !l->cap && a->wlast_n > 64) {
        if (!(l->v = malloc((size_t)a->wlast_n * sizeof *l->v))) {
            agg_widx_drop(a, i, 1);
            return XE_NOMEM;
        }
        l->cap = a->wlast_n;
    }
    if (room_for_one(&l->v, l->n, &l->cap, sizeof *l->v)) {
        if (!l->n && !l->ncold) agg_widx_drop(a, i, 1);
        return XE_NOMEM;
    }
    e->wpos = l->n;
    l->v[l->n++] = e;
    if (at) *at = i;
    return 0;
}

/* Remove the windows of index positions [i, i + n) (their lists must be
 * empty or no longer needed). */
void agg_widx_drop(agg_task *a, int i, int n)
{
    if (!n) return;
    for (int k = i; k < i + n; k++) {
        free(a->wl[k].v);
        if (a->wl[k].t.cap) { /* the latest closed table is the spare */
            free(a->spare.tab);
            a->spare = a->wl[k].t;
        }
        if (a->wl[k].dense) { /* and the latest closed dense index */
            free(a->dspare);
            a->dspare = a->wl[k].dense;
            a->dspare_cap = a->wl[k].dcap;
        }
    }
    memmove(&a->wends[i], &a->wends[i + n], (size_t)(a->nw - i - n) * sizeof *a->wends);
    memmove(&a->wl[i], &a->wl[i + n], (size_t)(a->nw - i - n) * sizeof *a->wl);
    a->nw -= n;
}

static void widx_del(agg_task *a, agg_entry *e)
{
    if (a->widx_broken) return;
    int i = widx_find(a, e->wend);
    if (i == a->nw || a->wends[i] != e->wend) return;
    struct wlist *l = &a->wl[i];
    agg_entry *last = l->v[--l->n];
    l->v[e->wpos] = last;
    last->wpos = e->wpos;
    if (!l->n && !l->ncold) agg_widx_drop(a, i, 1);
}

/* A fixed window's entry (of index position wi) out of its table, its
 * list and its dense index; the window stays in the index.  The caller
 * frees it. */
void agg_fixed_unlink(agg_task *a, int wi, agg_entry *e)
{
    struct wlist *l = &a->wl[wi];
    agg_htab_remove(&l->t, e);
    agg_entry *last = l->v[--l->n];
    l->v[e->wpos] = last;
    last->wpos = e->wpos;
    if (l->dense && a->fx_type && e->klen == 9) { /* agg_push_fixed1's key: the integer in gv[0] */
        uint64_t i = (uint64_t)e->gv[0].i - l->dbase;
        if (i < l->dcap && l->dense[i] == e) l->dense[i] = NULL;
    }
    a->nentries--;
}

/* Out of memory for the index: drop it and close windows by scanning. */
static void widx_break(agg_task *a)
{
    assert(a->session); /* fixed windows keep their tables in the index */
    for (int i = 0; i < a->nw; i++) free(a->wl[i].v);
    a->widx_broken = 1;
    a->nw = 0;
}

/* A session grew: its window end moves in the index. */
void agg_entry_move_end(agg_task *a, agg_entry *e, int64_t wend)
{
    widx_del(a, e);
    e->wend = wend;
    if (widx_add(a, e, NULL)) widx_break(a);
}

/* e into its table and the window index; XE_NOMEM leaves neither changed. */
int agg_table_insert(agg_task *a, agg_entry *e)
{
    if (a->session) {
        if (htab_room(&a->t, 1024)) return XE_NOMEM;
        htab_place(&a->t, e);
        a->t.n++;
        a->nentries++;
        if (widx_add(a, e, NULL)) widx_break(a);
        return 0;
    }
    int i;
    if (widx_add(a, e, &i)) return XE_NOMEM;
    htab *t = &a->wl[i].t;
    /* a new window's table starts with room for as many entries as the
     * window that closed last had */
    uint32_t want = 16;
    while (!t->cap && want < (1u << 30) && (uint64_t)want * 3 < (uint64_t)a->wlast_n * 4) want *= 2;
    if (!t->cap && a->spare.cap >= want && a->spare.cap <= 2 * want) {
        memset(a->spare.tab, 0, (size_t)a->spare.cap * sizeof *a->spare.tab);
        *t = (htab){a->spare.tab, a->spare.cap, 0};
        a->spare = (htab){NULL, 0, 0};
    }
    if (htab_room(t, want)) {
        widx_del(a, e);
        return XE_NOMEM;
    }
    htab_place(t, e);
    t->n++;
    a->nentries++;
    return 0;
}

/* A session's entry out of the table and the window index. */
void agg_table_unlink(agg_task *a, agg_entry *e)
{
    agg_htab_remove(&a->t, e);
    a->nentries--;
    widx_del(a, e);
}

/* A new (window, group) entry with empty slots, in no table (agg_entry_free
 * frees it); NULL when memory runs out.  Its group values are in gtmp. */
agg_entry *agg_entry_make(agg_task *a, const unsigned char *key, uint32_t klen, uint64_t h, int64_t ws, int64_t we)
{
    agg_entry *e = entry_new(a, a->gtmp, key, klen);
    if (!e) return NULL;
    e->hash = h;
    e->wstart = ws;
    e->wend = we;
    for (int k = 0; !a->compact && k < a->naggs; k++) e->slots[k].m = val_null(); /* compact: zeros */
    return e;
}

/* A new (window, group) entry with empty slots, in the table; NULL when
 * memory runs out (nothing is left behind).  Its group values are in gtmp. */
agg_entry *agg_entry_open(agg_task *a, const unsigned char *key, uint32_t klen, uint64_t h, int64_t ws, int64_t we)
{
    agg_entry *e = agg_entry_make(a, key, klen, h, ws, we);
    if (!e) return NULL;
    if (agg_table_insert(a, e)) {
        agg_entry_free(a, e);
        return NULL;
    }
    return e;
}

agg_entry *agg_find_fixed(agg_task *a, uint64_t h, int64_t we, const unsigned char *key, uint32_t klen)
{
    htab *t = win_table(a, we);
    if (!t || !t->cap) return NULL;
    uint32_t m = t->cap - 1;
    uint64_t tag = HTAG(h);
    for (uint32_t i = (uint32_t)h & m; t->tab[i].tag; i = (i + 1) & m)
        if (t->tab[i].tag == tag && entry_is(t->tab[i].e, h, key, klen)) return t->tab[i].e;
    return NULL;
}
