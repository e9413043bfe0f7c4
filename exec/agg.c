/*
 * agg.c: window assignment and the hash aggregate of one task.
 *
 * State: every open (window, group) has one entry in an in-memory hash table:
 * the group's values, one slot per aggregate, and bookkeeping for LMDB.  The
 * table is the working set; LMDB (the `state` database) is its durable copy,
 * written behind once per epoch in the same transaction that records the
 * input offsets.  Keys are (task, window end, tail), so a task's state is one
 * contiguous key range, a restart reloads it with one cursor scan and closing
 * windows deletes one range.
 *
 * Two record shapes share that key space:
 *   - fixed windows (tumbling, hopping, the single global window) write per
 *     epoch and window records of up to 60 KB of the entries that changed:
 *     tail ff ff ff ff || be64(sequence), value u32 0xffffffff then the
 *     entries (see entry_put).  A later record of a window supersedes what an
 *     earlier one said of the same group; when a long-lived window has
 *     written four times what it holds, its records are rewritten from its
 *     entries (compaction).  A closed window's records go with one range delete.
 *   - sessions, whose entries move between window ends as they grow or
 *     merge, keep one record per entry: tail group key || be64(window
 *     start), value in the per-entry format of load_one.  Fixed windows
 *     written by an older version also load from this shape.
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
 * Memory: one allocation per new entry (per window and group), recycled when
 * windows close; none per row.
 */
#include "exec/internal.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dset { /* COUNT(DISTINCT): a set of encoded values */
    uint32_t n, cap;  /* entries, slots (power of two) */
    uint64_t *h;      /* hashes, 0 = empty */
    uint32_t *off;    /* offset of the value in bytes */
    sbuf bytes;       /* u32 length + encoded value, one after the other */
} dset;

/* What a slot needs beyond numbers: only in tasks with a TEXT MIN/MAX or a
 * COUNT(DISTINCT), so that the common slot stays 24 bytes. */
typedef struct agg_ext {
    char *mtext;    /* owned copy of a TEXT m */
    uint32_t mcap;
    dset *ds;
} agg_ext;

typedef struct agg_slot {
    int64_t n; /* non-NULL inputs */
    union {
        struct {
            int64_t i; /* integer SUM */
            double d;  /* double SUM */
        };
        val m; /* MIN / MAX so far */
    };
} agg_slot;

typedef struct cslot { /* a compact SUM, AVG, MIN or MAX of DOUBLEs (COUNT(*): n alone) */
    int64_t n;
    double d;
} cslot;

typedef struct cop { /* what the update of a compact slot needs, side by side */
    int fast;            /* FAST_COUNT_STAR, FAST_SUM_D, FAST_MIN_D or FAST_MAX_D */
    int off;             /* the slot's offset in the entry's slots */
    int col;             /* the argument's column */
} cop;

enum { KIN = 10 }; /* key bytes kept in the entry's first cache line */

typedef struct agg_entry {
    /* Entries are 64-byte aligned: the first line holds what only closing,
     * flushing, sessions and the pool read; from the second on, what a
     * probe and an update touch (the probe's fields, the dirty mark, the
     * slots).  A fixed window's table holds one window, so a probe there
     * needs neither the window start nor the end: both are in the first
     * line.  Pooled entries of fixed-width keys are whole lines with no
     * slack.  With compact slots (see agg_task) the probe and the update of
     * a COUNT(*), a SUM and a MAX read one line of the entry. */
    int64_t pwend, pwstart;   /* sessions: where it is persisted; pwend == WM_MIN when not */
    int64_t wpos;             /* position in its window's list of entries */
    unsigned char *key;       /* encoded group values: kin when they fit */
    val *gv;                  /* group values (text in this allocation) */
    int64_t wend, wstart;
    int64_t dpos;             /* sessions: index in the dirty list while dirty */
    uint64_t hash;            /* of the group key (and window for fixed windows) */
    uint32_t klen;
    uint8_t dirty, pooled;
    unsigned char kin[KIN];   /* the key's first KIN bytes */
    agg_slot slots[];         /* naggs of them, or compact slots (then read through slot_get) */
} agg_entry;
_Static_assert(offsetof(agg_entry, hash) == 64, "agg_entry: the hot fields start the second cache line");
_Static_assert(sizeof(agg_entry) == 88, "agg_entry: 40 bytes of slots fit the second cache line");

typedef struct tslot {
    uint64_t tag; /* the entry's hash (1 for a hash of 0); 0 = empty */
    agg_entry *e;
} tslot;

/* Open addressing with linear probing; the tag is beside the pointer so
 * that a probe reads one cache line of the table. */
typedef struct htab {
    tslot *tab;
    uint32_t cap, n; /* cap: 0 or a power of two */
} htab;

/* An aggregate argument or group value: a bare column is read directly. */
typedef struct agg_arg {
    int prog;      /* index into the op's programs, -1 for none (COUNT(*)) */
    int col;       /* a bare column of the input, or -1 */
    int to_double; /* DOUBLE-typed: integers convert, as xprog_eval does */
    int fast;      /* FAST_*: how update_entry treats the common case inline */
} agg_arg;

/* Aggregates over a bare column whose common case update_entry does inline:
 * a DOUBLE (or integer) value into a SUM or AVG, MIN or MAX of numbers of
 * that type.  Any other value (NULL, another type, NaN, a first value) takes
 * slot_update, which does the same and the rest. */
enum { FAST_NONE, FAST_COUNT_STAR, FAST_SUM_D, FAST_SUM_I, FAST_MIN_D, FAST_MAX_D, FAST_MIN_I, FAST_MAX_I };

typedef struct dirty_ref {
    int64_t wend;
    agg_entry *e;
} dirty_ref;

typedef struct csort { /* an entry that closes, with its sort key inline */
    int64_t wend, wstart;
    uint64_t hash;
    agg_entry *e;
} csort;

typedef struct pwin { /* a fixed window with records in LMDB */
    int64_t wend;
    int64_t nwritten; /* entries in its records since the last compaction */
    int64_t pos;      /* scratch of the flush's counting sort */
} pwin;

struct agg_task {
    int naggs, ngroups;
    int has_ext;
    /* Compact slots: fixed windows whose every aggregate is COUNT(*) or a
     * SUM, AVG, MIN or MAX of a bare DOUBLE column keep COUNT(*) in 8 bytes
     * (n) and the others in 16 (n, d), cops[k].off bytes into the slots, instead
     * of 24-byte agg_slots: three aggregates and the probe's fields then
     * share one cache line.  Everything but the update reads and writes
     * them as agg_slots through slot_get and slot_put. */
    int compact;
    cop *cops;
    size_t slots_bytes;       /* the slots' size in an entry */
    int uses_progs;           /* some group or argument goes through the interpreter */
    int key_max;              /* the longest encoded group key when none is TEXT, else -1 */
    int fx_type;              /* push_fixed1 applies: the type of the one integer group column, else 0 */
    int session;              /* session windows (else fixed: tumbling, hopping, global) */
    agg_arg *args;            /* naggs */
    agg_arg *gargs;           /* ngroups */
    /* Sessions: every entry in one table.  Fixed windows: a table per window
     * (in the window index), so that the rows of the newest window probe a
     * table of its groups only, small enough to stay in cache, and a window
     * that closes frees its table whole. */
    htab t;
    int64_t wlast_n;          /* fixed: the entries of the window that closed last, the size a new
                               * window's list and table start at (so that neither grows step by
                               * step, and a burst long gone does not keep them large) */
    htab spare;               /* fixed: the table of the window that closed last, kept for the next
                               * window (a fresh one of that size would come from mmap, page faults
                               * and all) */
    int wlast;                /* fixed: the index position of the window probed last */
    agg_entry **cands;        /* scratch: the sessions of one key */
    int64_t ncands, capcands;
    int64_t nentries;
    int64_t closed_wm;        /* windows ending (+grace) at or before this are closed */
    int64_t max_closed;       /* largest end + grace of a window closed so far */
    int64_t persisted_closed; /* what meta holds */
    /* Window-end index: the distinct window ends, ascending, each with the
     * list of its entries and their count, so closing touches only what
     * closes. */
    int nw, capw, widx_broken; /* broken (sessions only): out of memory once, close by scanning */
    int64_t *wends;
    struct wlist {
        agg_entry **v;     /* its entries (an array, so that closing can prefetch ahead) */
        int64_t n, cap;
        htab t;            /* fixed windows: their table */
        agg_entry **dense; /* push_fixed1: the entry of key dbase + i at i, or NULL (see fx_dense) */
        uint64_t dbase, dcap;
        int dtried;        /* whether fx_dense looked at this window */
    } *wl;
    /* per batch: each row's key (in keys), hash, window, candidate entry */
    int rcap;
    uint32_t *rkoff, *rklen;
    uint64_t *rkh, *rh;
    int64_t *rts;
    uint8_t *rskip;
    agg_entry **rcand;
    uint64_t *rkw;            /* push_fixed1: the encoded key's first 8 bytes, */
    uint8_t *rkb;             /* and its ninth, */
    int64_t *rkv;             /* and the key itself */
    agg_entry **dspare;       /* the dense index of the window that closed last, kept for the next */
    uint64_t dspare_cap;
    sbuf keys;
    sbuf vbuf;                /* scratch value */
    sbuf pkey;                /* scratch LMDB key */
    val *gtmp;                /* scratch group values */
    csort *closing;
    int64_t nclosing, capclosing;
    csort *ctmp;              /* scratch of sort_window */
    int64_t capctmp;
    int64_t *bcount;          /* its buckets */
    size_t capbcount;
    /* dirty entries, for the epoch's flush */
    dirty_ref *dirty;
    int64_t ndirty, capdirty;
    dirty_ref *dsorted;
    int64_t capdsorted;
    /* fixed windows: records written per window, the sequence of the next
     * record, and the largest closed window end whose records must go */
    pwin *pw;
    int64_t npw, cappw;
    uint64_t seq;
    int64_t del_to;
    /* sessions: deletions to persist, (wend, wstart, key bytes) */
    sbuf dels;
    int64_t ndels;
    /* closed entries are recycled: new windows reuse their memory */
    size_t pool_size;     /* the size of a pooled entry, whole cache lines */
    agg_entry **pool;     /* recycled entries, a stack with room for every pooled entry (so that a
                           * push cannot fail, and a pop can prefetch the entries of later pops) */
    int64_t npool, cappool;
    int64_t npooled;      /* entries in the slabs */
    char *slabs;          /* the allocations pooled entries live in */
    char *slab_next;      /* the newest slab's first entry not handed out yet */
    int slab_left;
};

static int is_session(const opinst *o) { return o->op->window.kind == WIN_SESSION; }

static void arg_init(agg_arg *g, const plan_expr *e, int prog)
{
    g->prog = prog;
    g->col = e && e->kind == PE_COL ? e->col : -1;
    g->to_double = e && e->type == TY_DOUBLE;
}

agg_task *agg_new(opinst *o, int task)
{
    (void)task;
    const plan_op *op = o->op;
    agg_task *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->naggs = op->naggs;
    a->ngroups = op->ngroups;
    a->session = op->window.kind == WIN_SESSION;
    a->t.cap = a->session ? 1024 : 0;
    a->t.tab = a->session ? calloc(a->t.cap, sizeof *a->t.tab) : NULL;
    a->gtmp = calloc((size_t)a->ngroups + 1, sizeof *a->gtmp);
    a->args = calloc((size_t)a->naggs + 1, sizeof *a->args);
    a->gargs = calloc((size_t)a->ngroups + 1, sizeof *a->gargs);
    a->closed_wm = WM_MIN;
    a->max_closed = WM_MIN;
    a->persisted_closed = WM_MIN;
    a->del_to = WM_MIN;
    if ((a->session && !a->t.tab) || !a->gtmp || !a->args || !a->gargs) {
        agg_free(a);
        return NULL;
    }
    /* programs: the groups, then one per aggregate with an argument (ops.c) */
    int pi = 0;
    for (int g = 0; g < a->ngroups; g++) {
        arg_init(&a->gargs[g], op->groups[g], pi++);
        if (a->gargs[g].col < 0) a->uses_progs = 1;
        if (op->groups[g]->type == TY_TEXT || op->groups[g]->type > TY_INTERVAL) a->key_max = -1;
        else if (a->key_max >= 0) a->key_max += VAL_KEY_MAX;
    }
    for (int k = 0; k < a->naggs; k++) {
        const plan_agg *ag = &op->aggs[k];
        agg_arg *g = &a->args[k];
        arg_init(g, ag->arg, ag->arg ? pi++ : -1);
        if (ag->arg && g->col < 0) a->uses_progs = 1;
        int dbl = ag->arg && ag->arg->type == TY_DOUBLE, bigint = ag->arg && ag->arg->type == TY_BIGINT;
        if (ag->fn == FN_COUNT_STAR) g->fast = FAST_COUNT_STAR;
        else if (g->col >= 0 && (dbl || bigint)) {
            if (ag->fn == FN_SUM || ag->fn == FN_AVG) g->fast = dbl ? FAST_SUM_D : FAST_SUM_I;
            else if (ag->fn == FN_MIN) g->fast = dbl ? FAST_MIN_D : FAST_MIN_I;
            else if (ag->fn == FN_MAX) g->fast = dbl ? FAST_MAX_D : FAST_MAX_I;
        }
        if (ag->fn == FN_COUNT_DISTINCT) a->has_ext = 1;
        if ((ag->fn == FN_MIN || ag->fn == FN_MAX) && ag->arg &&
            (ag->arg->type == TY_TEXT || ag->arg->type == TY_NULL))
            a->has_ext = 1;
    }
    if (!(a->cops = calloc((size_t)a->naggs + 1, sizeof *a->cops))) {
        agg_free(a);
        return NULL;
    }
    a->compact = !a->session && !a->has_ext;
    for (int k = 0; k < a->naggs; k++) {
        int f = a->args[k].fast;
        if (f != FAST_COUNT_STAR && f != FAST_SUM_D && f != FAST_MIN_D && f != FAST_MAX_D) a->compact = 0;
    }
    const ast_window *w = &op->window;
    int one_window = w->kind == WIN_NONE || w->kind == WIN_TUMBLING ||
                     (w->kind == WIN_HOPPING && w->advance_ms == w->size_ms);
    if (a->compact && one_window && op->emit != EMIT_CHANGES && a->ngroups == 1 && a->gargs[0].col >= 0 &&
        !a->uses_progs && !o->q->eng->general_agg) {
        sql_type t = op->groups[0]->type;
        if (t == TY_INT || t == TY_BIGINT || t == TY_TIMESTAMP || t == TY_INTERVAL) a->fx_type = (int)t;
    }
    for (int k = 0; k < a->naggs; k++) {
        a->cops[k] = (cop){a->args[k].fast, (int)a->slots_bytes, a->args[k].col};
        a->slots_bytes += !a->compact ? sizeof(agg_slot) : a->args[k].fast == FAST_COUNT_STAR ? 8 : sizeof(cslot);
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

/* e's naggs agg_exts, right after its slots, or NULL when the task has none. */
static inline agg_ext *entry_ext(const agg_task *a, const agg_entry *e)
{
    return a->has_ext ? (agg_ext *)((char *)e + sizeof(agg_entry) + a->slots_bytes) : NULL;
}

static void ext_clear(agg_task *a, agg_entry *e)
{
    agg_ext *x = entry_ext(a, e);
    for (int i = 0; x && i < a->naggs; i++) {
        free(x[i].mtext);
        dset_free(x[i].ds);
        memset(&x[i], 0, sizeof x[i]);
    }
}

/* Fixed windows: the windows ending at or before wend close; their entries
 * leave the dirty list in one pass over it that reads no entry. */
static void dirty_drop_closed(agg_task *a, int64_t wend)
{
    int64_t k = 0;
    for (int64_t i = 0; i < a->ndirty; i++)
        if (a->dirty[i].wend > wend) a->dirty[k++] = a->dirty[i];
    a->ndirty = k;
}

static void dirty_drop(agg_task *a, agg_entry *e)
{
    if (!e->dirty) return;
    dirty_ref *last = &a->dirty[--a->ndirty];
    a->dirty[e->dpos] = *last;
    last->e->dpos = e->dpos;
    e->dirty = 0;
}

/* Fixed windows leave the dirty list a window at a time (dirty_drop_closed),
 * never an entry at a time, so their entries' dpos is not kept. */
static void entry_free(agg_task *a, agg_entry *e)
{
    if (a->session) dirty_drop(a, e);
    ext_clear(a, e);
    if (e->pooled) {
        assert(a->npool < a->cappool);
        a->pool[a->npool++] = e;
    } else
        free(e);
}

void agg_free(agg_task *a)
{
    if (!a) return;
    for (uint32_t i = 0; a->t.tab && i < a->t.cap; i++)
        if (a->t.tab[i].tag) entry_free(a, a->t.tab[i].e);
    for (int i = 0; !a->session && i < a->nw; i++)
        for (int64_t j = 0; j < a->wl[i].n; j++) entry_free(a, a->wl[i].v[j]);
    while (a->slabs) {
        char *next;
        memcpy(&next, a->slabs, sizeof next);
        free(a->slabs);
        a->slabs = next;
    }
    free(a->t.tab);
    free(a->spare.tab);
    free(a->pool);
    free(a->cands);
    free(a->gtmp);
    free(a->args);
    free(a->gargs);
    free(a->cops);
    free(a->closing);
    free(a->ctmp);
    free(a->bcount);
    free(a->wends);
    for (int i = 0; i < a->nw; i++) {
        free(a->wl[i].v);
        free(a->wl[i].t.tab);
        free(a->wl[i].dense);
    }
    free(a->dspare);
    free(a->rkv);
    free(a->wl);
    free(a->rkoff);
    free(a->rklen);
    free(a->rkh);
    free(a->rh);
    free(a->rts);
    free(a->rskip);
    free(a->rcand);
    free(a->rkw);
    free(a->rkb);
    free(a->dirty);
    free(a->dsorted);
    free(a->pw);
    sbuf_fini(&a->keys);
    sbuf_fini(&a->vbuf);
    sbuf_fini(&a->pkey);
    sbuf_fini(&a->dels);
    free(a);
}

int64_t agg_open_groups(const agg_task *a) { return a ? a->nentries : 0; }

/* An entry as pooled (its slab share; 64 bytes until the first one sized
 * the pool) plus its table slot at a load of about one half. */
uint64_t agg_state_bytes(const agg_task *a)
{
    if (!a || a->nentries <= 0) return 0;
    size_t per = (a->pool_size ? a->pool_size : sizeof(agg_entry) + a->slots_bytes + 64) + 2 * sizeof(tslot);
    return (uint64_t)a->nentries * per;
}

int64_t agg_min_open_start(const agg_task *a)
{
    int64_t m = WM_END;
    for (uint32_t i = 0; a && a->nentries && i < a->t.cap; i++)
        if (a->t.tab[i].tag && a->t.tab[i].e->wstart < m) m = a->t.tab[i].e->wstart;
    for (int i = 0; a && !a->session && i < a->nw; i++) /* one start per fixed window */
        if (a->wl[i].n && a->wl[i].v[0]->wstart < m) m = a->wl[i].v[0]->wstart;
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

/* Add the encoded values of bytes[0..n) (u32 length + value, repeated) to x's set. */
static int dset_add_all(agg_ext *x, const unsigned char *p, size_t n)
{
    if (!x->ds && !(x->ds = calloc(1, sizeof *x->ds))) return XE_NOMEM;
    for (size_t at = 0; at + 4 <= n;) {
        uint32_t len;
        memcpy(&len, p + at, 4);
        if (len > n - at - 4) return XE_CORRUPT;
        if (dset_add(x->ds, p + at + 4, len, hash64(p + at + 4, len, 7))) return XE_NOMEM;
        at += 4 + len;
    }
    return 0;
}

/* ------------------------------------------------------------------ slots */

static int set_m(agg_slot *s, agg_ext *x, const val *v)
{
    s->m = *v;
    if (v->type == TY_TEXT) {
        if (!x) return XE_INVAL; /* the planner typed this argument as not TEXT */
        if (v->len + 1 > x->mcap) {
            char *t = realloc(x->mtext, v->len + 1);
            if (!t) return XE_NOMEM;
            x->mtext = t;
            x->mcap = v->len + 1;
        }
        memcpy(x->mtext, v->s, v->len);
        s->m.s = x->mtext;
    }
    return 0;
}

/* val_compare, with the common numeric cases inline. */
static inline int m_compare(const val *v, const val *m)
{
    if (v->type == TY_DOUBLE && m->type == TY_DOUBLE && !isnan(v->d) && !isnan(m->d))
        return (v->d > m->d) - (v->d < m->d);
    if (v->type == m->type && (v->type == TY_BIGINT || v->type == TY_INT || v->type == TY_TIMESTAMP))
        return (v->i > m->i) - (v->i < m->i);
    return val_compare(v, m);
}

/* Add v (NULL for COUNT(*)) to slot s. */
static inline int slot_update(agg_task *a, plan_fn fn, agg_slot *s, agg_ext *x, const val *v)
{
    if (fn == FN_COUNT_STAR) { s->n++; return 0; }
    if (v->type == TY_NULL) return 0;
    switch (fn) {
    case FN_COUNT: s->n++; break;
    case FN_SUM: case FN_AVG:
        s->n++;
        if (v->type == TY_DOUBLE) s->d += v->d;
        else s->i += v->i;
        break;
    case FN_MIN: case FN_MAX: {
        if (s->n++ == 0) return set_m(s, x, v);
        if (v->type == TY_DOUBLE && s->m.type == TY_DOUBLE && !isnan(v->d) && !isnan(s->m.d)) {
            if (fn == FN_MIN ? v->d < s->m.d : v->d > s->m.d) s->m.d = v->d;
            break;
        }
        int c = m_compare(v, &s->m);
        if (fn == FN_MIN ? c < 0 : c > 0) return set_m(s, x, v);
        break;
    }
    case FN_COUNT_DISTINCT: {
        if (!x->ds && !(x->ds = calloc(1, sizeof *x->ds))) return XE_NOMEM;
        sbuf_reset(&a->vbuf);
        if (val_key_encode(v, 1, &a->vbuf)) return XE_NOMEM;
        int rc = dset_add(x->ds, (unsigned char *)a->vbuf.p, (uint32_t)a->vbuf.len,
                          hash64(a->vbuf.p, a->vbuf.len, 7));
        if (rc) return rc;
        s->n = x->ds->n;
        break;
    }
    default: break;
    }
    return 0;
}

/* Merge slot b into a (session windows). */
static int slot_merge(const plan_agg *ag, agg_slot *a, agg_ext *ax, const agg_slot *b, const agg_ext *bx)
{
    switch (ag->fn) {
    case FN_COUNT_STAR: case FN_COUNT: a->n += b->n; break;
    case FN_SUM: case FN_AVG: a->n += b->n; a->i += b->i; a->d += b->d; break;
    case FN_MIN: case FN_MAX:
        if (b->n == 0) break;
        if (a->n == 0) { a->n = b->n; return set_m(a, ax, &b->m); }
        a->n += b->n;
        {
            int c = val_compare(&b->m, &a->m);
            if (ag->fn == FN_MIN ? c < 0 : c > 0) return set_m(a, ax, &b->m);
        }
        break;
    case FN_COUNT_DISTINCT:
        if (!bx->ds) break;
        if (!ax->ds && !(ax->ds = calloc(1, sizeof *ax->ds))) return XE_NOMEM;
        for (uint32_t i = 0; i < bx->ds->cap; i++) {
            if (!bx->ds->h[i]) continue;
            uint32_t len;
            memcpy(&len, bx->ds->bytes.p + bx->ds->off[i], 4);
            if (dset_add(ax->ds, (unsigned char *)bx->ds->bytes.p + bx->ds->off[i] + 4, len, bx->ds->h[i]))
                return XE_NOMEM;
        }
        a->n = ax->ds->n;
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

/* Slot k of e as an agg_slot (a copy when the slots are compact). */
static inline void slot_get(const agg_task *a, const agg_entry *e, int k, agg_slot *s)
{
    if (!a->compact) {
        *s = e->slots[k];
        return;
    }
    const char *p = (const char *)e->slots + a->cops[k].off;
    memset(s, 0, sizeof *s);
    memcpy(&s->n, p, 8);
    if (a->cops[k].fast == FAST_COUNT_STAR) return;
    double d;
    memcpy(&d, p + 8, 8);
    if (a->cops[k].fast == FAST_SUM_D) s->d = d;
    else if (s->n) s->m = val_double(d); /* MIN, MAX: what set_m keeps of a DOUBLE */
}

/* Slot k of e from an agg_slot.  A compact slot holds what slot_update
 * makes of DOUBLE arguments: n, the sum in d (i stays 0), a DOUBLE m. */
static inline void slot_put(const agg_task *a, agg_entry *e, int k, const agg_slot *s)
{
    if (!a->compact) {
        e->slots[k] = *s;
        return;
    }
    char *p = (char *)e->slots + a->cops[k].off;
    memcpy(p, &s->n, 8);
    if (a->cops[k].fast == FAST_COUNT_STAR) return;
    double d = a->cops[k].fast == FAST_SUM_D ? (s->i ? s->d + (double)s->i : s->d)
               : !s->n ? 0
               : s->m.type == TY_DOUBLE ? s->m.d
                                        : (double)s->m.i; /* an integer from a damaged or foreign record */
    memcpy(p + 8, &d, 8);
}

static void slots_clear(agg_task *a, agg_entry *e)
{
    ext_clear(a, e);
    if (a->compact) {
        memset(e->slots, 0, a->slots_bytes);
        return;
    }
    for (int k = 0; k < a->naggs; k++) {
        e->slots[k].n = 0;
        e->slots[k].m = val_null(); /* also i = d = 0 */
    }
}

/* ------------------------------------------------------------------ the table */

/* A pooled entry: a recycled one, or the next of the current slab (one
 * allocation for SLAB_ENTRIES, handed out as they are needed, so that fresh
 * memory is touched once).  NULL when out of memory.  A recycled entry is
 * cold (windows close in hash order): the one POOL_AHEAD pops later is
 * fetched now, every line entry_new clears, so that a new window's first
 * rows do not wait for memory one entry at a time. */
enum { SLAB_ENTRIES = 64, POOL_AHEAD = 4 };
static agg_entry *pool_get(agg_task *a)
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
        if (!(e = pool_get(a))) return NULL;
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

#define HTAG(h) ((h) ? (h) : 1)

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
static void htab_remove(htab *t, agg_entry *e)
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

/* Room for one more item in a growable array *pv of n items of elem bytes
 * (cap allocated); XE_NOMEM. */
static int room_for_one(void *pv, int64_t n, int64_t *cap, size_t elem)
{
    if (n < *cap) return 0;
    int64_t c = *cap ? *cap * 2 : 64;
    void *nv = realloc(*(void **)pv, (size_t)c * elem);
    if (!nv) return XE_NOMEM;
    *(void **)pv = nv;
    *cap = c;
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

static void widx_drop(agg_task *a, int i, int n);

/* e into the list of its window end, made if needed; *at (if not NULL)
 * says where that window is in the index.  XE_NOMEM. */
static int widx_add(agg_task *a, agg_entry *e, int *at)
{
    if (a->widx_broken) return 0;
    /* rows come mostly in time order: the window probed last is tried first */
    int i = a->wlast < a->nw && a->wends[a->wlast] == e->wend ? a->wlast : widx_find(a, e->wend);
    if (i == a->nw || a->wends[i] != e->wend) {
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
        a->wends[i] = e->wend;
        a->wl[i] = (struct wlist){.v = NULL};
        a->nw++;
    }
    struct wlist *l = &a->wl[i];
    if (!a->session && !l->cap && a->wlast_n > 64) {
        if (!(l->v = malloc((size_t)a->wlast_n * sizeof *l->v))) {
            widx_drop(a, i, 1);
            return XE_NOMEM;
        }
        l->cap = a->wlast_n;
    }
    if (room_for_one(&l->v, l->n, &l->cap, sizeof *l->v)) {
        if (!l->n) widx_drop(a, i, 1);
        return XE_NOMEM;
    }
    e->wpos = l->n;
    l->v[l->n++] = e;
    if (at) *at = i;
    return 0;
}

/* Remove the windows of index positions [i, i + n) (their lists must be
 * empty or no longer needed). */
static void widx_drop(agg_task *a, int i, int n)
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
    if (!l->n) widx_drop(a, i, 1);
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
static void entry_move_end(agg_task *a, agg_entry *e, int64_t wend)
{
    widx_del(a, e);
    e->wend = wend;
    if (widx_add(a, e, NULL)) widx_break(a);
}

/* e into its table and the window index; XE_NOMEM leaves neither changed. */
static int table_insert(agg_task *a, agg_entry *e)
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
static void table_unlink(agg_task *a, agg_entry *e)
{
    htab_remove(&a->t, e);
    a->nentries--;
    widx_del(a, e);
}

static int mark_dirty(agg_task *a, agg_entry *e)
{
    if (e->dirty) return 0;
    if (room_for_one(&a->dirty, a->ndirty, &a->capdirty, sizeof *a->dirty)) return XE_NOMEM;
    e->dirty = 1;
    e->dpos = a->ndirty;
    a->dirty[a->ndirty++] = (dirty_ref){e->wend, e};
    return 0;
}

/* Record that the persisted copy of session entry e must go. */
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

/* slot_result of compact slot k, read in place. */
static inline val cslot_result(const agg_task *a, const plan_agg *ag, const agg_entry *e, int k)
{
    const char *p = (const char *)e->slots + a->cops[k].off;
    int64_t n;
    double d;
    memcpy(&n, p, 8);
    if (a->cops[k].fast == FAST_COUNT_STAR) return val_int(TY_BIGINT, n);
    if (!n) return val_null();
    memcpy(&d, p + 8, 8);
    if (a->cops[k].fast != FAST_SUM_D) return val_double(d); /* MIN, MAX */
    d += 0.0; /* as slot_result's d + (double)i, which makes -0 +0 */
    return val_double(ag->fn == FN_AVG ? d / (double)n : d);
}

/* e's row, with e's window [ws, we) (a closing window passes its bounds,
 * which its list holds: the row then reads only the entry's second line when
 * the group is push_fixed1's integer, which its key holds too).  The row's
 * TEXT (group values, a MIN or MAX) points into e unless own is set, when it
 * is copied into the output's arena: a change emitted in a push must be, as
 * a later row of the same batch may change e's MIN or MAX or, in a session
 * merge, free e and reuse its memory for another group before the batch
 * goes out.  Closing emits before it frees, and borrows. */
static int emit_window_entry(opinst *o, agg_task *a, const agg_entry *e, int64_t ws, int64_t we, int own, xerr *err)
{
    val *row = batch_add_row_raw(&o->out); /* every value is set below */
    if (!row) return xerr_set(err, XE_NOMEM, "out of memory");
    int c = 0;
    if (a->fx_type && e->klen == 9 && e->kin[0] == a->fx_type + 1) /* val_key_put's bytes read back */
        row[c++] = val_int((sql_type)a->fx_type, (int64_t)(be64_get(e->kin + 1) ^ 0x8000000000000000ULL));
    else
        for (int i = 0; i < a->ngroups; i++) row[c++] = e->gv[i];
    for (int i = 0; i < a->naggs; i++) {
        if (a->compact) {
            row[c++] = cslot_result(a, &o->op->aggs[i], e, i);
            continue;
        }
        agg_slot s;
        slot_get(a, e, i, &s);
        row[c++] = slot_result(&o->op->aggs[i], &s);
    }
    row[c++] = ws == WM_MIN ? val_null() : val_int(TY_TIMESTAMP, ws);
    row[c++] = we == WM_END ? val_null() : val_int(TY_TIMESTAMP, we);
    for (; c < o->out.ncols; c++) row[c] = val_null();
    for (int i = 0; own && i < c; i++)
        if (row[i].type == TY_TEXT && batch_put_text(&o->out, &row[i], row[i].s, row[i].len))
            return xerr_set(err, XE_NOMEM, "out of memory");
    return 0;
}

/* A change: e's row now, which owns its TEXT. */
static int emit_entry(opinst *o, agg_task *a, const agg_entry *e, xerr *err)
{
    return emit_window_entry(o, a, e, e->wstart, e->wend, 1, err);
}

/* The value of a group or an argument for row: a pointer into row for a
 * bare column (no copy: a val built byte by byte and read back whole stalls
 * the store buffer), else tmp. */
static inline const val *arg_ref(opinst *o, const agg_arg *g, const val *row, val *tmp)
{
    if (g->col < 0) {
        *tmp = xprog_eval(&o->progs[g->prog], row, &o->q->scratch);
        return tmp;
    }
    const val *v = &row[g->col];
    if (!g->to_double || v->type == TY_DOUBLE || v->type == TY_NULL) return v;
    *tmp = val_double((double)v->i);
    return tmp;
}

/* The common case of slot_update inline: 1 when done, 0 to take slot_update. */
static inline int slot_fast(const agg_arg *g, agg_slot *s, const val *row)
{
    const val *v = &row[g->col];
    switch (g->fast) {
    case FAST_COUNT_STAR: s->n++; return 1;
    case FAST_SUM_D: if (v->type != TY_DOUBLE) return 0; s->n++; s->d += v->d; return 1;
    case FAST_SUM_I: if (v->type != TY_BIGINT) return 0; s->n++; s->i += v->i; return 1;
    case FAST_MIN_D: case FAST_MAX_D:
        if (v->type != TY_DOUBLE || !s->n || s->m.type != TY_DOUBLE || isnan(v->d) || isnan(s->m.d)) return 0;
        s->n++;
        if (g->fast == FAST_MIN_D ? v->d < s->m.d : v->d > s->m.d) s->m.d = v->d;
        return 1;
    case FAST_MIN_I: case FAST_MAX_I:
        if (v->type != TY_BIGINT || !s->n || s->m.type != TY_BIGINT) return 0;
        s->n++;
        if (g->fast == FAST_MIN_I ? v->i < s->m.i : v->i > s->m.i) s->m.i = v->i;
        return 1;
    default: return 0;
    }
}

/* slot_fast for compact slot c of the entry whose slots are at p: 1 when
 * done, 0 to take slot_update. */
static inline int cslot_fast(const cop *c, char *p, const val *row)
{
    if (c->fast == FAST_COUNT_STAR) {
        (*(int64_t *)(p + c->off))++;
        return 1;
    }
    const val *v = &row[c->col];
    cslot *s = (cslot *)(p + c->off);
    if (v->type != TY_DOUBLE) return 0;
    if (c->fast == FAST_SUM_D) {
        s->n++;
        s->d += v->d;
        return 1;
    }
    /* MIN, MAX: NaN takes val_compare's order (d is 0 while n is 0; a sum
     * that is NaN only for infinities of both signs just takes the long way) */
    if (isnan(v->d + s->d)) return 0;
    if (!s->n || (c->fast == FAST_MIN_D ? v->d < s->d : v->d > s->d)) s->d = v->d;
    s->n++;
    return 1;
}

/* Row into e's slot k the long way (any value, any aggregate); XE_NOMEM. */
static int slot_slow(opinst *o, agg_task *a, agg_entry *e, const val *row, int k)
{
    agg_ext *x = entry_ext(a, e);
    val tmp;
    const val *v = a->args[k].prog >= 0 ? arg_ref(o, &a->args[k], row, &tmp) : NULL;
    agg_slot s;
    slot_get(a, e, k, &s);
    if (slot_update(a, o->op->aggs[k].fn, &s, x ? &x[k] : NULL, v)) return XE_NOMEM;
    slot_put(a, e, k, &s);
    return 0;
}

/* Row into e's slots from slot k0 on (those before it are done), and e
 * marked dirty. */
static int update_from(opinst *o, agg_task *a, agg_entry *e, const val *row, int k0, xerr *err)
{
    for (int k = k0; k < a->naggs; k++) {
        if (a->compact ? cslot_fast(&a->cops[k], (char *)e->slots, row)
                       : slot_fast(&a->args[k], &e->slots[k], row))
            continue;
        if (slot_slow(o, a, e, row, k)) return xerr_set(err, XE_NOMEM, "out of memory");
    }
    if (a->uses_progs) batch_reset(&o->q->scratch);
    if (mark_dirty(a, e)) return xerr_set(err, XE_NOMEM, "out of memory");
    return 0;
}

static int update_entry(opinst *o, agg_task *a, agg_entry *e, const val *row, xerr *err)
{
    return update_from(o, a, e, row, 0, err);
}

/* The row's common case into compact slots, inline (no call per row, which
 * costs a fifth of the aggregate): how many slots from the first on it did;
 * update_from does the rest. */
static inline int compact_update(const agg_task *a, agg_entry *e, const val *row)
{
    char *p = (char *)e->slots;
    int k = 0;
    while (k < a->naggs && cslot_fast(&a->cops[k], p, row)) k++;
    return k;
}

/* A new (window, group) entry with empty slots, in the table; NULL when
 * memory runs out (nothing is left behind).  Its group values are in gtmp. */
static agg_entry *entry_open(agg_task *a, const unsigned char *key, uint32_t klen, uint64_t h, int64_t ws, int64_t we)
{
    agg_entry *e = entry_new(a, a->gtmp, key, klen);
    if (!e) return NULL;
    e->hash = h;
    e->wstart = ws;
    e->wend = we;
    for (int k = 0; !a->compact && k < a->naggs; k++) e->slots[k].m = val_null(); /* compact: zeros */
    if (table_insert(a, e)) {
        entry_free(a, e);
        return NULL;
    }
    return e;
}

/* Append e to a growable list of entries; XE_NOMEM. */
static int list_push(agg_entry ***v, int64_t *n, int64_t *cap, agg_entry *e)
{
    if (room_for_one(v, *n, cap, sizeof **v)) return XE_NOMEM;
    (*v)[(*n)++] = e;
    return 0;
}

static inline int key_eq(const agg_entry *e, const unsigned char *key, uint32_t klen)
{
    if (e->klen != klen) return 0;
    if (klen >= 8 && klen <= KIN) { /* one fixed-width value: a word and a byte or two */
        uint64_t x, y;
        memcpy(&x, e->kin, 8);
        memcpy(&y, key, 8);
        if (x != y) return 0;
        for (uint32_t i = 8; i < klen; i++)
            if (e->kin[i] != key[i]) return 0;
        return 1;
    }
    uint32_t n = klen < KIN ? klen : KIN;
    for (uint32_t i = 0; i < n; i++)
        if (e->kin[i] != key[i]) return 0;
    return klen <= KIN || !memcmp(e->key + KIN, key + KIN, klen - KIN);
}

/* e is the entry of hash h and key in a fixed window's table (which holds
 * one window: its start need not be compared, and stays in the entry's
 * first line, which a probe does not read). */
static inline int entry_is(const agg_entry *e, uint64_t h, const unsigned char *key, uint32_t klen)
{
    return e->hash == h && key_eq(e, key, klen);
}

/* The table of the fixed window ending at we, or NULL when it has no
 * entries yet.  Rows come mostly in time order: the window probed last is
 * tried first. */
static inline htab *win_table(agg_task *a, int64_t we)
{
    int i = a->wlast;
    if (i >= a->nw || a->wends[i] != we) {
        i = widx_find(a, we);
        if (i == a->nw || a->wends[i] != we) return NULL;
        a->wlast = i;
    }
    return &a->wl[i].t;
}

static agg_entry *find_fixed(agg_task *a, uint64_t h, int64_t we, const unsigned char *key, uint32_t klen)
{
    htab *t = win_table(a, we);
    if (!t || !t->cap) return NULL;
    uint32_t m = t->cap - 1;
    uint64_t tag = HTAG(h);
    for (uint32_t i = (uint32_t)h & m; t->tab[i].tag; i = (i + 1) & m)
        if (t->tab[i].tag == tag && entry_is(t->tab[i].e, h, key, klen)) return t->tab[i].e;
    return NULL;
}

/* The first entry of t whose tag matches h (not yet checked), for prefetching. */
static inline agg_entry *probe_tag(const htab *t, uint64_t h)
{
    if (!t || !t->cap) return NULL;
    uint32_t m = t->cap - 1;
    uint64_t tag = HTAG(h);
    for (uint32_t i = (uint32_t)h & m; t->tab[i].tag; i = (i + 1) & m)
        if (t->tab[i].tag == tag) return t->tab[i].e;
    return NULL;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

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

/* key_hash of a key of klen <= 16 bytes given as its first 8 bytes (w0,
 * little-endian) and its last klen - 8 (w1, 0 when klen <= 8). */
static inline uint64_t key_hash_words(uint64_t w0, uint64_t w1, uint32_t klen)
{
    return HTAG(hash64_mix((w0 * 0x9e3779b97f4a7c15ULL) ^ (w1 * 0xc2b2ae3d27d4eb4fULL) ^ ((uint64_t)klen << 56)));
}

/* The hash of an encoded group key (in memory only: a restart recomputes
 * it); never 0, so that a table slot's tag is the hash itself.  Keys of up to 16 bytes, one or two fixed-width values, take two
 * multiplications and one mix instead of hash64's loop. */
static inline uint64_t key_hash(const unsigned char *key, uint32_t klen)
{
    if (klen > 16) return HTAG(hash64(key, klen, 0x9e37));
    /* whole 8-byte loads (a short memcpy into a variable goes through the
     * stack and stalls the load that follows) */
    uint64_t w0 = 0, w1 = 0;
    if (klen >= 8) {
        memcpy(&w0, key, 8);
        if (klen > 8) {
            memcpy(&w1, key + klen - 8, 8);
            w1 >>= 8 * (16 - klen);
        }
    } else
        for (uint32_t i = 0; i < klen; i++) w0 |= (uint64_t)key[i] << (8 * i);
    return key_hash_words(w0, w1, klen);
}
/* The hash of a fixed window's entry: its key's (each window has a table of
 * its own, and closing sorts a window's entries by it). */
static inline uint64_t fixed_hash(uint64_t kh, int64_t ws)
{
    (void)ws;
    return kh;
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

static int rows_reserve(agg_task *a, int n)
{
    if (n <= a->rcap) return 0;
    int cap = a->rcap ? a->rcap : 256;
    while (cap < n) cap *= 2;
#define GROW(p) do { void *np_ = realloc(a->p, (size_t)cap * sizeof *a->p); if (!np_) return XE_NOMEM; a->p = np_; } while (0)
    GROW(rkoff); GROW(rklen); GROW(rkh); GROW(rh); GROW(rts); GROW(rskip); GROW(rcand); GROW(rkw); GROW(rkb); GROW(rkv);
#undef GROW
    a->rcap = cap;
    return 0;
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

static int batch_keys(opinst *o, agg_task *a, const batch *in)
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

/* The open entry of (window [ws, we), row r's group), made if needed. */
static agg_entry *fixed_entry(opinst *o, agg_task *a, const val *row, int r, uint64_t h, int64_t ws, int64_t we)
{
    const unsigned char *key = (const unsigned char *)a->keys.p + a->rkoff[r];
    agg_entry *e = find_fixed(a, h, we, key, a->rklen[r]);
    if (e) return e;
    group_vals(o, a, row); /* text from functions lives in scratch until the entry copies it */
    e = entry_open(a, key, a->rklen[r], h, ws, we);
    if (a->uses_progs) batch_reset(&o->q->scratch);
    return e;
}

static int push_session(opinst *o, agg_task *a, const batch *in, int emit_changes, xerr *err)
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
                if (slot_merge(&op->aggs[k], &target->slots[k], tx ? &tx[k] : NULL, &e->slots[k], ex ? &ex[k] : NULL))
                    return xerr_set(err, XE_NOMEM, "out of memory");
            if (e->wstart < target->wstart) target->wstart = e->wstart;
            if (e->wend > target->wend) entry_move_end(a, target, e->wend);
            if (note_delete(a, e)) return xerr_set(err, XE_NOMEM, "out of memory");
            table_unlink(a, e);
            entry_free(a, e);
        }
        if (!target) {
            group_vals(o, a, row);
            target = entry_open(a, key, klen, kh, s0, e0);
            if (a->uses_progs) batch_reset(&q->scratch);
            if (!target) return xerr_set(err, XE_NOMEM, "out of memory");
        } else {
            if (s0 < target->wstart) target->wstart = s0;
            if (e0 > target->wend) entry_move_end(a, target, e0);
        }
        if (update_entry(o, a, target, row, err)) return err->code;
        if (emit_changes && emit_entry(o, a, target, err)) return err->code;
    }
    return 0;
}

enum { PF_AHEAD = 16 }; /* rows between a prefetch and its use */

/* One window per row (tumbling, or the global window): find every row's
 * entry with the table slots and entries of later rows prefetched. */
static int push_single(opinst *o, agg_task *a, const batch *in, int emit_changes, xerr *err)
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
            e = fixed_entry(o, a, row, u, h, ws, ROW_WE(u));
        if (!e) return xerr_set(err, XE_NOMEM, "out of memory");
        int k = a->compact ? compact_update(a, e, row) : 0;
        if ((k < a->naggs || !e->dirty) && update_from(o, a, e, row, k, err)) return err->code;
        if (emit_changes && emit_entry(o, a, e, err)) return err->code;
    }
#undef ROW_WE
    return 0;
}

/* Hopping windows: every window [s, s+size) with s a multiple of the advance
 * that holds the row. */
static int push_hopping(opinst *o, agg_task *a, const batch *in, int emit_changes, xerr *err)
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
            agg_entry *e = fixed_entry(o, a, row, r, fixed_hash(a->rkh[r], s), s, we);
            if (!e) return xerr_set(err, XE_NOMEM, "out of memory");
            if (update_entry(o, a, e, row, err)) return err->code;
            if (emit_changes && emit_entry(o, a, e, err)) return err->code;
        }
        if (!placed) q->late++;
    }
    return 0;
}

/* ------------------------------------------------------------------ the fast path
 *
 * Tumbling (or global) windows grouped by one integer column whose every
 * aggregate is COUNT(*) or a SUM, AVG, MIN or MAX of a bare DOUBLE (compact
 * slots), without EMIT CHANGES: the shape of most windowed counts.  For such
 * a batch push_fixed1 does what push_single does, in passes that each do
 * one thing for every row, so that no row pays for the general case's
 * branches and calls:
 *   1. fx_prepare checks every row (an event time, a key of the plan's type,
 *      a window still open; any other batch takes push_single, before
 *      anything changed) and computes its window, its encoded key (the nine
 *      bytes val_key_put writes, as a word and a byte) and its hash, as
 *      key_hash and fixed_hash give them;
 * then, FX_CHUNK rows at a time:
 *   2. each row's table slot is prefetched;
 *   3. probe: the entry whose tag matches is the row's candidate, and is
 *      prefetched; a row with none opens its entry now, so that a later row
 *      of the same new group finds it;
 *   4. each candidate's key is checked (a 64-bit hash collision takes
 *      find_fixed, which compares every key of the run), and its entry
 *      marked dirty;
 *   5. the slots are updated an aggregate at a time, the rows in order, so
 *      that each slot sees the rows in push_single's order (sums are the
 *      same to the bit); a value the inline update does not take (NULL, an
 *      integer, NaN, a first MIN or MAX) goes through slot_slow.
 * Entries, tables, window lists and the dirty list end up as push_single
 * leaves them; agg_fast_test compares the two. */
enum { FX_CHUNK = 256, FX_AHEAD = 16 };

/* Pass 1 over the batch (no hashes: fx_hashes makes them for the rows that
 * need them); 0 when some row needs push_single, 2 when every row is in one
 * window, else 1.  (The arrays
 * are local restrict pointers: a byte store may alias anything, and would
 * make every other pointer be read again for each row.) */
static int fx_prepare(agg_task *a, const opinst *o, const batch *in)
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
 * memory.  As entry_open, for a key that fits kin and a pooled entry. */
static agg_entry *fx_entry(agg_task *a, const val *row, int r, int64_t we, int look, int64_t slot)
{
    uint64_t h = fx_hash(a, r);
    if (look) {
        unsigned char key[9];
        memcpy(key, &a->rkw[r], 8);
        key[8] = a->rkb[r];
        agg_entry *e = find_fixed(a, h, we, key, 9);
        if (e) return e;
    }
    size_t base = sizeof(agg_entry) + a->slots_bytes + sizeof(val);
    if (!a->pool_size) a->pool_size = (base + 63) & ~(size_t)63; /* as entry_new */
    agg_entry *e = pool_get(a);
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
    if (slot >= 0 && i < a->nw && a->wends[i] == we) { /* table_insert's common case, the probe's slot */
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
    if (table_insert(a, e)) {
        entry_free(a, e);
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

static int push_fixed1(opinst *o, agg_task *a, const batch *in, int one_window, xerr *err)
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
            if (!cand[r]->dirty && mark_dirty(a, cand[r])) return xerr_set(err, XE_NOMEM, "out of memory");
        for (int r = c0; r < c1 && !checked; r++) {
            agg_entry *e = cand[r];
            uint64_t x;
            memcpy(&x, e->kin, 8);
            if (x != rkw[r] || e->kin[8] != rkb[r] || e->klen != 9) {
                if (!(e = cand[r] = fx_entry(a, batch_row(in, r), r, global ? WM_END : a->rts[r] + size, 1, -1)))
                    return xerr_set(err, XE_NOMEM, "out of memory");
            }
            if (!e->dirty && mark_dirty(a, e)) return xerr_set(err, XE_NOMEM, "out of memory");
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
                if (slot_slow(o, a, cand[r], batch_row(in, r), k)) return xerr_set(err, XE_NOMEM, "out of memory");
                r++;
                v += nc;
            }
        }
    }
    return 0;
}

int agg_push(opinst *o, int task, const batch *in, xerr *err)
{
    agg_task *a = o->agg[task];
    const ast_window *w = &o->op->window;
    int emit_changes = o->op->emit == EMIT_CHANGES;
    batch_reset(&o->out);
    if (rows_reserve(a, in->nrows)) return xerr_set(err, XE_NOMEM, "out of memory");
    int fx = a->fx_type ? fx_prepare(a, o, in) : 0;
    if (fx) return push_fixed1(o, a, in, fx == 2, err);
    if (batch_keys(o, a, in)) return xerr_set(err, XE_NOMEM, "out of memory");
    int rc;
    if (w->kind == WIN_SESSION) rc = push_session(o, a, in, emit_changes, err);
    else if (w->kind == WIN_HOPPING && w->advance_ms != w->size_ms) rc = push_hopping(o, a, in, emit_changes, err);
    else rc = push_single(o, a, in, emit_changes, err);
    if (a->uses_progs) batch_reset(&o->q->scratch);
    if (rc) return rc;
    if (emit_changes && o->out.nrows) return op_emit(o, task, &o->out, err);
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
static int closing_push(agg_task *a, agg_entry *e, int64_t ws, int64_t we)
{
    if (room_for_one(&a->closing, a->nclosing, &a->capclosing, sizeof *a->closing)) return XE_NOMEM;
    a->closing[a->nclosing++] = (csort){we, ws, e->hash, e};
    return 0;
}

/* The global window ends at WM_END, which a [lo, hi) scan cannot reach. */
static int64_t skey_end(int64_t w) { return w == WM_END ? WM_END - 1 : w; }

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
    if (!a->nclosing) return 0;
    if (is_session(o) || a->widx_broken)
        sort_closing(a->closing, a->nclosing);
    else /* fixed windows: the list is window by window, ascending */
        for (int64_t i = 0, j; i < a->nclosing; i = j) {
            for (j = i + 1; j < a->nclosing && a->closing[j].wend == a->closing[i].wend; j++) {}
            sort_window(a, a->closing + i, j - i);
        }
    int rc = 0;
    batch_reset(&o->out);
    /* what emit reads: the fast path's entries their second line, others all of it */
    int first = a->fx_type ? 1 : 0, lines = a->fx_type ? 1 : (int)(a->pool_size ? a->pool_size / 64 : 4);
    for (int64_t i = 0; i < a->nclosing; i++) {
        const csort *c = &a->closing[i];
        if (i + PF_AHEAD < a->nclosing) {
            const char *f = (const char *)a->closing[i + PF_AHEAD].e;
            for (int l = first; l < first + lines; l++) __builtin_prefetch(f + 64 * l);
        }
        if (op->emit != EMIT_CHANGES && (rc = emit_window_entry(o, a, c->e, c->wstart, c->wend, 0, err))) return rc;
        if (o->out.nrows >= EXEC_SLICE_ROWS) {
            if ((rc = op_emit(o, task, &o->out, err))) return rc;
            batch_reset(&o->out);
        }
    }
    if (o->out.nrows && (rc = op_emit(o, task, &o->out, err))) return rc;
    batch_reset(&o->out);
    int session = is_session(o);
    if (!session && nclose) {
        dirty_drop_closed(a, a->wends[nclose - 1]);
        a->wlast_n = a->wl[nclose - 1].n;
    }
    for (int64_t i = 0; i < a->nclosing; i++) {
        agg_entry *e = a->closing[i].e;
        int64_t we = a->closing[i].wend;
        if (we != WM_END && we + grace > a->max_closed) a->max_closed = we + grace;
        if (session) {
            if (i + PF_AHEAD < a->nclosing)
                __builtin_prefetch(&a->t.tab[a->closing[i + PF_AHEAD].hash & (a->t.cap - 1)]);
            if (note_delete(a, e)) return xerr_set(err, XE_NOMEM, "out of memory");
            htab_remove(&a->t, e);
        } else if (skey_end(we) > a->del_to)
            a->del_to = skey_end(we); /* its window's records go at the flush */
        a->nentries--;
        entry_free(a, e);
    }
    widx_drop(a, 0, nclose); /* the closed windows, whole (a fixed window's table with them) */
    a->wlast = 0;
    a->nclosing = 0;
    return 0;
}

/* ------------------------------------------------------------------ persistence */

#define DELTA_MARK 0xffffffffu
/* Records stay under 64 KB: LMDB copies a value into overflow pages it
 * mallocs for the transaction, and bigger blocks would come from mmap, with
 * page faults on every epoch. */
enum { DELTA_TAIL = 12, DELTA_CHUNK = 60 << 10, COMPACT_SLACK = 4096 };

/* An entry in a fixed window's record: varint key length, key, then per
 * slot varint n and, for SUM and AVG, zigzag varint i and d (8 bytes,
 * native-endian); for MIN and MAX with n > 0 the value, key-encoded; for
 * COUNT(DISTINCT) varint length + the set's bytes.  The window start is not
 * stored: it follows from the window end (end - size, or none for the
 * global window).  About 30 bytes for a COUNT, SUM and MAX of one key. */
enum { SLOT_MAX = 28 }; /* bytes of a slot without TEXT or sets */
static int entry_put(const agg_task *a, const plan_op *op, const agg_entry *e, sbuf *v)
{
    if (sbuf_reserve(v, 10 + (size_t)e->klen + (size_t)a->naggs * SLOT_MAX)) return XE_NOMEM;
    unsigned char *p = (unsigned char *)v->p + v->len;
    p = varint_put(p, e->klen);
    memcpy(p, e->klen <= KIN ? e->kin : e->key, e->klen);
    p += e->klen;
    const agg_ext *x = entry_ext(a, e);
    for (int k = 0; k < a->naggs; k++) {
        agg_slot sv, *s = &sv;
        slot_get(a, e, k, s);
        plan_fn fn = op->aggs[k].fn;
        p = varint_put(p, (uint64_t)s->n);
        if (fn == FN_SUM || fn == FN_AVG) {
            p = varint_put(p, zigzag((uint64_t)s->i));
            memcpy(p, &s->d, 8);
            p += 8;
            continue;
        }
        size_t fixed = (fn == FN_MIN || fn == FN_MAX) && s->n ? val_key_put(&s->m, p) : 0;
        p += fixed;
        if ((fn == FN_MIN || fn == FN_MAX) && s->n && !fixed) { /* TEXT */
            v->len = (size_t)((char *)p - v->p);
            if (val_key_encode(&s->m, 1, v) || sbuf_reserve(v, (size_t)(a->naggs - k) * SLOT_MAX)) return XE_NOMEM;
            p = (unsigned char *)v->p + v->len;
        } else if (fn == FN_COUNT_DISTINCT) {
            const dset *ds = x ? x[k].ds : NULL;
            size_t bl = ds ? ds->bytes.len : 0;
            p = varint_put(p, bl);
            v->len = (size_t)((char *)p - v->p);
            if ((bl && sbuf_add(v, ds->bytes.p, bl)) || sbuf_reserve(v, (size_t)(a->naggs - k) * SLOT_MAX))
                return XE_NOMEM;
            p = (unsigned char *)v->p + v->len;
        }
    }
    v->len = (size_t)((char *)p - v->p);
    v->p[v->len] = '\0';
    return 0;
}

/* The record of a fixed window: entries from vbuf, under the next sequence. */
static int record_put(agg_task *a, uint32_t tid, int64_t wend, store_txn *t, xerr *err)
{
    unsigned char tail[DELTA_TAIL] = {0xff, 0xff, 0xff, 0xff};
    be64_put(tail + 4, a->seq++);
    int rc = store_state_put(t, STORE_STATE, tid, skey_end(wend), tail, sizeof tail, a->vbuf.p, a->vbuf.len, err);
    sbuf_reset(&a->vbuf);
    return rc;
}

static int record_start(agg_task *a)
{
    uint32_t mark = DELTA_MARK;
    sbuf_reset(&a->vbuf);
    return sbuf_add(&a->vbuf, &mark, 4);
}

/* The index of window wend in pw (added if absent; pw is sorted by window
 * end), or -1 when memory runs out.  hint: an index to try first. */
static int pwin_index(agg_task *a, int64_t wend, int hint)
{
    if (hint >= 0 && hint < a->npw && a->pw[hint].wend == wend) return hint;
    int lo = 0, hi = (int)a->npw;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (a->pw[mid].wend < wend) lo = mid + 1;
        else hi = mid;
    }
    if (lo < a->npw && a->pw[lo].wend == wend) return lo;
    if (room_for_one(&a->pw, a->npw, &a->cappw, sizeof *a->pw)) return -1;
    memmove(&a->pw[lo + 1], &a->pw[lo], (size_t)(a->npw - lo) * sizeof *a->pw);
    a->npw++;
    a->pw[lo] = (pwin){wend, 0, 0};
    return lo;
}

/* The entries of one window from dirty refs v[0..n), or, when the window
 * has written four times what it holds, all of its entries after deleting
 * its records (compaction). */
static int flush_window(opinst *o, agg_task *a, uint32_t tid, const dirty_ref *v, int64_t n, store_txn *t,
                        xerr *err)
{
    int64_t wend = v[0].wend;
    int pi = pwin_index(a, wend, -1);
    if (pi < 0) return xerr_set(err, XE_NOMEM, "out of memory");
    pwin *p = &a->pw[pi];
    int wi = a->widx_broken ? -1 : widx_find(a, wend);
    int compact = wi >= 0 && wi < a->nw && a->wends[wi] == wend && p->nwritten + n > 4 * a->wl[wi].n + COMPACT_SLACK;
    int rc;
    if (compact) {
        for (int64_t i = 0; i < n; i++) v[i].e->dirty = 0;
        if ((rc = store_state_delete_range(t, STORE_STATE, tid, skey_end(wend), skey_end(wend) + 1, err))) return rc;
        p->nwritten = 0;
    }
    if (record_start(a)) return xerr_set(err, XE_NOMEM, "out of memory");
    int64_t in_rec = 0;
    for (int64_t i = 0;; i++) {
        const agg_entry *e;
        if (compact) {
            if (i >= a->wl[wi].n) break;
            e = a->wl[wi].v[i];
        } else {
            if (i >= n) break;
            if (i + PF_AHEAD < n) {
                const char *f = (const char *)v[i + PF_AHEAD].e;
                __builtin_prefetch(f + 64);
                __builtin_prefetch(f + 128);
            }
            v[i].e->dirty = 0;
            e = v[i].e;
        }
        if (entry_put(a, o->op, e, &a->vbuf)) return xerr_set(err, XE_NOMEM, "out of memory");
        p->nwritten++;
        in_rec++;
        if (a->vbuf.len >= DELTA_CHUNK) {
            if ((rc = record_put(a, tid, wend, t, err))) return rc;
            in_rec = 0;
            if (record_start(a)) return xerr_set(err, XE_NOMEM, "out of memory");
        }
    }
    if (in_rec && (rc = record_put(a, tid, wend, t, err))) return rc;
    return 0;
}

/* Fixed windows: closed windows' records go in one range delete, then the
 * dirty entries are grouped by window (a counting sort of the dirty refs,
 * which carry their window end) and written one record per window. */
static int flush_fixed(opinst *o, agg_task *a, uint32_t tid, store_txn *t, xerr *err)
{
    int rc;
    if (a->del_to != WM_MIN) {
        if ((rc = store_state_delete_range(t, STORE_STATE, tid, WM_MIN, a->del_to + 1, err))) return rc;
        int k = 0;
        while (k < a->npw && skey_end(a->pw[k].wend) <= a->del_to) k++;
        if (k) memmove(a->pw, a->pw + k, (size_t)(a->npw - k) * sizeof *a->pw);
        a->npw -= k;
        a->del_to = WM_MIN;
    }
    if (!a->ndirty) return 0;
    if (a->capdsorted < a->ndirty) {
        dirty_ref *v = realloc(a->dsorted, (size_t)a->ndirty * sizeof *v);
        if (!v) return xerr_set(err, XE_NOMEM, "out of memory");
        a->dsorted = v;
        a->capdsorted = a->ndirty;
    }
    for (int i = 0; i < a->npw; i++) a->pw[i].pos = 0;
    int hint = -1;
    for (int64_t i = 0; i < a->ndirty; i++) {
        if ((hint = pwin_index(a, a->dirty[i].wend, hint)) < 0) return xerr_set(err, XE_NOMEM, "out of memory");
        a->pw[hint].pos++;
    }
    int64_t pos = 0;
    for (int i = 0; i < a->npw; i++) {
        int64_t c = a->pw[i].pos;
        a->pw[i].pos = pos;
        pos += c;
    }
    for (int64_t i = 0; i < a->ndirty; i++) {
        hint = pwin_index(a, a->dirty[i].wend, hint); /* present: cannot fail */
        a->dsorted[a->pw[hint].pos++] = a->dirty[i]; /* flush_window clears e->dirty */
    }
    int64_t n = a->ndirty;
    a->ndirty = 0;
    rc = 0;
    for (int64_t i = 0, j; !rc && i < n; i = j) {
        for (j = i + 1; j < n && a->dsorted[j].wend == a->dsorted[i].wend; j++) {}
        rc = flush_window(o, a, tid, a->dsorted + i, j - i, t, err);
    }
    for (int64_t i = 0; rc && i < n; i++) a->dsorted[i].e->dirty = 0; /* the epoch fails as a whole */
    return rc;
}

/* A session entry's record.  Key tail: group key || be64(window start).
 * Value: u32 key length, then per slot n, i, d, u32 length + the MIN/MAX
 * value (key-encoded), u32 count of distinct values [+ u32 length + their
 * bytes]. */
static int entry_encode(agg_task *a, const plan_op *op, const agg_entry *e, sbuf *k, sbuf *v)
{
    unsigned char b8[8];
    sbuf_reset(k);
    sbuf_reset(v);
    be64_put(b8, (uint64_t)e->wstart);
    if (sbuf_add(k, e->key, e->klen) || sbuf_add(k, b8, 8)) return XE_NOMEM;
    uint32_t kl = e->klen;
    if (sbuf_add(v, &kl, 4)) return XE_NOMEM;
    const agg_ext *x = entry_ext(a, e);
    for (int i = 0; i < a->naggs; i++) {
        agg_slot sv, *s = &sv;
        slot_get(a, e, i, s);
        int sum = op->aggs[i].fn == FN_SUM || op->aggs[i].fn == FN_AVG;
        int64_t si = sum ? s->i : 0;
        double sd = sum ? s->d : 0;
        if (sbuf_add(v, &s->n, 8) || sbuf_add(v, &si, 8) || sbuf_add(v, &sd, 8)) return XE_NOMEM;
        size_t at = v->len;
        uint32_t ml = 0;
        if (sbuf_add(v, &ml, 4)) return XE_NOMEM;
        if (!sum && s->n && (s->m.type != TY_NULL) && op->aggs[i].fn != FN_COUNT_DISTINCT &&
            op->aggs[i].fn != FN_COUNT && op->aggs[i].fn != FN_COUNT_STAR) {
            if (val_key_encode(&s->m, 1, v)) return XE_NOMEM;
            ml = (uint32_t)(v->len - at - 4);
            memcpy(v->p + at, &ml, 4);
        }
        const dset *ds = x ? x[i].ds : NULL;
        uint32_t dn = ds ? ds->n : 0;
        if (sbuf_add(v, &dn, 4)) return XE_NOMEM;
        if (dn) {
            uint32_t bl = (uint32_t)ds->bytes.len;
            if (sbuf_add(v, &bl, 4) || sbuf_add(v, ds->bytes.p, bl)) return XE_NOMEM;
        }
    }
    return 0;
}

static int flush_session(opinst *o, agg_task *a, uint32_t tid, store_txn *t, xerr *err)
{
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
    while (a->ndirty) {
        agg_entry *e = a->dirty[--a->ndirty].e;
        e->dirty = 0;
        if (e->pwend != WM_MIN && (e->pwend != e->wend || e->pwstart != e->wstart)) {
            unsigned char b8[8];
            be64_put(b8, (uint64_t)e->pwstart);
            sbuf_reset(&a->pkey);
            if (sbuf_add(&a->pkey, e->key, e->klen) || sbuf_add(&a->pkey, b8, 8)) return xerr_set(err, XE_NOMEM, "out of memory");
            if ((rc = store_state_del(t, STORE_STATE, tid, skey_end(e->pwend), a->pkey.p, a->pkey.len, err))) return rc;
        }
        if (entry_encode(a, o->op, e, &a->pkey, &a->vbuf)) return xerr_set(err, XE_NOMEM, "out of memory");
        if ((rc = store_state_put(t, STORE_STATE, tid, skey_end(e->wend), a->pkey.p, a->pkey.len, a->vbuf.p, a->vbuf.len, err)))
            return rc;
        e->pwend = e->wend;
        e->pwstart = e->wstart;
    }
    return 0;
}

int agg_flush(opinst *o, int task, store_txn *t, xerr *err)
{
    agg_task *a = o->agg[task];
    uint32_t tid = query_task_id(o->q, o->op->id, task);
    int rc = is_session(o) ? flush_session(o, a, tid, t, err) : flush_fixed(o, a, tid, t, err);
    if (rc) return rc;
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

/* The entry of (group key k[0..gkl), window start ws) for loading: the one
 * an earlier record made, emptied, or a new one.  NULL when out of memory
 * or the key does not decode (c->rc says which). */
static agg_entry *load_entry(load_ctx *c, const unsigned char *k, uint32_t gkl, int64_t ws, int64_t wend)
{
    agg_task *a = c->a;
    uint64_t kh = key_hash(k, gkl), h = is_session(c->o) ? kh : fixed_hash(kh, ws);
    agg_entry *e = is_session(c->o) ? NULL : find_fixed(a, h, wend, k, gkl);
    if (e) {
        slots_clear(a, e);
        return e;
    }
    batch_reset(&c->tmp);
    if (val_key_decode(k, gkl, a->gtmp, a->ngroups, &c->tmp, c->err) < 0) {
        c->rc = XE_CORRUPT;
        return NULL;
    }
    if (!(e = entry_open(a, k, gkl, h, ws, wend))) c->rc = xerr_set(c->err, XE_NOMEM, "out of memory");
    return e;
}

/* A fixed window's record (see entry_put). */
static int load_record(load_ctx *c, int64_t wend, const unsigned char *v, size_t n)
{
    agg_task *a = c->a;
    const plan_op *op = c->o->op;
    int pi = pwin_index(a, wend, -1);
    if (pi < 0) return c->rc = xerr_set(c->err, XE_NOMEM, "out of memory");
    int64_t ws = op->window.kind == WIN_NONE ? WM_MIN : wend - op->window.size_ms;
    size_t at = 0;
    uint64_t x;
    while (at < n) {
        if (varint_get(v, n, &at, &x) || x > n - at) return XE_CORRUPT;
        agg_entry *e = load_entry(c, v + at, (uint32_t)x, ws, wend);
        if (!e) return c->rc;
        at += x;
        agg_ext *ex = entry_ext(a, e);
        for (int i = 0; i < a->naggs; i++) {
            agg_slot sv, *s = &sv;
            slot_get(a, e, i, s);
            plan_fn fn = op->aggs[i].fn;
            if (varint_get(v, n, &at, &x)) return XE_CORRUPT;
            s->n = (int64_t)x;
            if (fn == FN_SUM || fn == FN_AVG) {
                if (varint_get(v, n, &at, &x) || n - at < 8) return XE_CORRUPT;
                s->i = (int64_t)unzigzag(x);
                memcpy(&s->d, v + at, 8);
                at += 8;
            } else if ((fn == FN_MIN || fn == FN_MAX) && s->n) {
                val m;
                batch_reset(&c->tmp);
                int r = val_key_decode(v + at, n - at, &m, 1, &c->tmp, c->err);
                if (r < 0 || set_m(s, ex ? &ex[i] : NULL, &m)) return XE_CORRUPT;
                at += (size_t)r;
            } else if (fn == FN_COUNT_DISTINCT) {
                if (varint_get(v, n, &at, &x) || x > n - at || !ex || dset_add_all(&ex[i], v + at, x))
                    return XE_CORRUPT;
                at += x;
            }
            slot_put(a, e, i, s);
        }
        a->pw[pi].nwritten++;
    }
    return 0;
}

/* A per-entry record (sessions, or fixed windows of an older version). */
static int load_entry_record(load_ctx *c, int64_t wend, const unsigned char *k, size_t kl, const unsigned char *v,
                             const unsigned char *end)
{
    agg_task *a = c->a;
    uint32_t gkl;
    memcpy(&gkl, v, 4);
    v += 4;
    if ((size_t)gkl + 8 != kl) return XE_CORRUPT;
    agg_entry *e = load_entry(c, k, gkl, (int64_t)be64_get(k + gkl), wend);
    if (!e) return c->rc;
    e->pwstart = e->wstart;
    e->pwend = wend;
    agg_ext *ex = entry_ext(a, e);
    for (int i = 0; i < a->naggs; i++) {
        agg_slot sv, *s = &sv;
        slot_get(a, e, i, s);
        agg_ext *x = ex ? &ex[i] : NULL;
        uint32_t ml, dn;
        if (end - v < 28) return XE_CORRUPT;
        memcpy(&s->n, v, 8); memcpy(&s->i, v + 8, 8); memcpy(&s->d, v + 16, 8); memcpy(&ml, v + 24, 4);
        v += 28;
        if ((size_t)(end - v) < ml) return XE_CORRUPT;
        if (ml) {
            val m;
            batch_reset(&c->tmp);
            if (val_key_decode(v, ml, &m, 1, &c->tmp, c->err) < 0 || set_m(s, x, &m)) return XE_CORRUPT;
        } else if (c->o->op->aggs[i].fn == FN_MIN || c->o->op->aggs[i].fn == FN_MAX)
            s->m = val_null();
        v += ml;
        if (end - v < 4) return XE_CORRUPT;
        memcpy(&dn, v, 4);
        v += 4;
        if (dn) {
            uint32_t bl;
            if (end - v < 4) return XE_CORRUPT;
            memcpy(&bl, v, 4);
            v += 4;
            if ((size_t)(end - v) < bl || !x || dset_add_all(x, v, bl)) return XE_CORRUPT;
            v += bl;
        }
        slot_put(a, e, i, s);
    }
    return 0;
}

static int load_one(void *ctx, int64_t wend, const void *kp, size_t kl, const void *vp, size_t vl)
{
    load_ctx *c = ctx;
    agg_task *a = c->a;
    if (wend == WM_END - 1) wend = WM_END;
    const unsigned char *k = kp, *v = vp, *end = v + vl;
    uint32_t mark = 0;
    if (vl >= 4) memcpy(&mark, v, 4);
    int rc;
    if (mark == DELTA_MARK && kl == DELTA_TAIL && !is_session(c->o)) {
        uint64_t seq = be64_get(k + 4);
        if (seq >= a->seq) a->seq = seq + 1;
        rc = load_record(c, wend, v + 4, vl - 4);
    } else if (kl < 8 || vl < 4)
        rc = XE_CORRUPT;
    else
        rc = load_entry_record(c, wend, k, kl, v, end);
    if (rc && !c->rc) c->rc = rc;
    if (c->rc == XE_CORRUPT)
        c->rc = xerr_set(c->err, XE_CORRUPT, "window state of query task %u is corrupt",
                         query_task_id(c->o->q, c->o->op->id, 0));
    return c->rc ? 1 : 0;
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
