/*
 * agg.h: the window aggregate's own structures, shared by its files only.
 *
 * The aggregate of one task (agg_task) keeps an entry per open (window,
 * group) in memory; LMDB holds their durable copy.  Its files form layers
 * that call downwards only:
 *
 *   agg.c         the operator: a task's making and freeing, a batch's push
 *                 (the fast path or the general one), the statistics
 *   agg_window.c  window assignment (the general push: keys, windows,
 *                 sessions, hopping) and the closing of windows
 *   agg_fast.c    the fast path: tumbling or global windows grouped by one
 *                 integer column, in passes over the batch
 *   agg_evict.c   the memory budget: which entries leave memory for LMDB
 *                 when the engine's window state passes it
 *   agg_state.c   the state record format: entries into LMDB records at the
 *                 epoch's flush, and back at a restart; evicted (cold)
 *                 entries' records, written, read back and scanned
 *   agg_table.c   the hash tables, the window-end index, the entry pool and
 *                 the dirty list
 *   agg_fn.c      the aggregate functions: slots, distinct sets, results,
 *                 the row an entry emits
 *
 * agg.c calls agg_window.c, agg_fast.c and agg_evict.c; agg_window.c and
 * agg_evict.c call agg_state.c; all of them call agg_table.c, which calls
 * agg_fn.c.  The helpers a row's
 * update or a probe runs are static inline here, not calls: the hot loops
 * of agg_window.c and agg_fast.c inline them, as when this was one file.
 * The entry points the rest of exec/ calls are declared in exec/internal.h.
 */
#ifndef EXEC_AGG_H
#define EXEC_AGG_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/internal.h"

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
    int64_t pwend;            /* sessions: where it is persisted; WM_MIN when not */
    union {
        int64_t pwstart;      /* sessions: the start it is persisted with */
        int64_t stamp;        /* fixed windows: agg_task.clock when it was last marked dirty (agg_evict.c) */
    };
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
    int fx_type;              /* agg_push_fixed1 applies: the type of the one integer group column, else 0 */
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
        agg_entry **dense; /* agg_push_fixed1: the entry of key dbase + i at i, or NULL (see fx_dense) */
        uint64_t dbase, dcap;
        int dtried;        /* whether fx_dense looked at this window */
        int64_t ncold;     /* fixed windows: its entries evicted to LMDB (a window of cold
                            * entries alone stays in the index, with n = 0) */
    } *wl;
    /* per batch: each row's key (in keys), hash, window, candidate entry */
    int rcap;
    uint32_t *rkoff, *rklen;
    uint64_t *rkh, *rh;
    int64_t *rts;
    uint8_t *rskip;
    agg_entry **rcand;
    uint64_t *rkw;            /* agg_push_fixed1: the encoded key's first 8 bytes, */
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
    /* the memory budget (agg_evict.c): entries evicted to LMDB, the clock
     * their stamps come from, the bytes this task adds to engine.agg_mem */
    engine *eng;
    int task;
    int64_t wsize;        /* the window's size (fixed windows) */
    int64_t ncold;
    int64_t nevicted;     /* entries evicted so far (statistics) */
    int64_t clock;
    uint64_t mem_acct;
    uint64_t rng;
    int counted;          /* its entries count in engine.agg_mem (a task that may evict) */
    int track_dpos;       /* fixed windows' dirty entries keep dpos, so that one can leave the list */
    batch cdec;           /* scratch: a cold record's TEXT while it is decoded */
    sbuf cold;            /* scratch: a piece of a closing window's cold records */
    sbuf cfrom;           /* scratch: the key the next piece starts after */
    sbuf crec;            /* a deployed task's cold records put and deleted since its last flush, as
                           * store_txn_record writes them: the flush's replica delta starts with them */
};

static inline int is_session(const opinst *o) { return o->op->window.kind == WIN_SESSION; }

enum { PF_AHEAD = 16 }; /* rows between a prefetch and its use */

/* e's naggs agg_exts, right after its slots, or NULL when the task has none. */
static inline agg_ext *entry_ext(const agg_task *a, const agg_entry *e)
{
    return a->has_ext ? (agg_ext *)((char *)e + sizeof(agg_entry) + a->slots_bytes) : NULL;
}

/* The bytes an entry costs in memory: its pooled size (its slab's share;
 * 64 bytes until the first one sized the pool) and its table slot at a
 * load of about one half. */
static inline uint64_t agg_entry_bytes(const agg_task *a)
{
    return (uint64_t)(a->pool_size ? a->pool_size : sizeof(agg_entry) + a->slots_bytes + 64) + 2 * sizeof(tslot);
}

/* ------------------------------------------------------------------ agg_fn.c: aggregate functions */

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
    else if (s->n) s->m = val_double(d); /* MIN, MAX: what agg_set_m keeps of a DOUBLE */
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

/* Defined in agg_fn.c (each contract is at its definition): */
void agg_ext_clear(agg_task *a, agg_entry *e);
int agg_dset_add_all(agg_ext *x, const unsigned char *p, size_t n);
int agg_set_m(agg_slot *s, agg_ext *x, const val *v);
int agg_slot_merge(const plan_agg *ag, agg_slot *a, agg_ext *ax, const agg_slot *b, const agg_ext *bx);
void agg_slots_clear(agg_task *a, agg_entry *e);
int agg_slot_slow(opinst *o, agg_task *a, agg_entry *e, const val *row, int k);
int agg_emit_window_entry(opinst *o, agg_task *a, const agg_entry *e, int64_t ws, int64_t we, int own, xerr *err);

/* A change: e's row now, which owns its TEXT. */
static inline int emit_entry(opinst *o, agg_task *a, const agg_entry *e, xerr *err)
{
    return agg_emit_window_entry(o, a, e, e->wstart, e->wend, 1, err);
}

/* ------------------------------------------------------------------ agg_table.c: tables, window index, pool */

#define HTAG(h) ((h) ? (h) : 1)

/* Room for one more item in a growable array *pv of n items of elem bytes
 * (cap allocated); XE_NOMEM. */
static inline int room_for_one(void *pv, int64_t n, int64_t *cap, size_t elem)
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
static inline int widx_find(const agg_task *a, int64_t w)
{
    int lo = 0, hi = a->nw;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (a->wends[mid] < w) lo = mid + 1;
        else hi = mid;
    }
    return lo;
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

/* Defined in agg_table.c: */
agg_entry *agg_pool_get(agg_task *a);
agg_entry *agg_entry_make(agg_task *a, const unsigned char *key, uint32_t klen, uint64_t h, int64_t ws, int64_t we);
int agg_widx_window(agg_task *a, int64_t wend);
void agg_fixed_unlink(agg_task *a, int wi, agg_entry *e);
void agg_dirty_remove(agg_task *a, agg_entry *e);
void agg_dirty_track(agg_task *a);
void agg_entry_free(agg_task *a, agg_entry *e);
void agg_dirty_drop_closed(agg_task *a, int64_t wend);
int agg_mark_dirty(agg_task *a, agg_entry *e);
void agg_htab_remove(htab *t, agg_entry *e);
void agg_widx_drop(agg_task *a, int i, int n);
void agg_entry_move_end(agg_task *a, agg_entry *e, int64_t wend);
int agg_table_insert(agg_task *a, agg_entry *e);
void agg_table_unlink(agg_task *a, agg_entry *e);
agg_entry *agg_entry_open(agg_task *a, const unsigned char *key, uint32_t klen, uint64_t h, int64_t ws, int64_t we);
agg_entry *agg_find_fixed(agg_task *a, uint64_t h, int64_t we, const unsigned char *key, uint32_t klen);

/* ------------------------------------------------------------------ group keys' hashes */

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

/* ------------------------------------------------------------------ agg_state.c: the state record format */

/* The global window ends at WM_END, which a [lo, hi) scan cannot reach. */
static inline int64_t skey_end(int64_t w) { return w == WM_END ? WM_END - 1 : w; }

/* Defined in agg_state.c, below agg_window.c (agg_flush and agg_load: exec/internal.h): */
int agg_note_delete(agg_task *a, const agg_entry *e);
/* Cold entries: records keyed 00 || be64(hash) || group key under their
 * window end, value COLD_MARK then the entry as a fixed window's record
 * holds it. */
enum { COLD_TAIL = 9 };
int agg_cold_put(opinst *o, int task, agg_entry *e, xerr *err);
int agg_cold_take(opinst *o, int task, int wi, const unsigned char *key, uint32_t klen, uint64_t h, int64_t ws,
                  int64_t we, agg_entry **out, xerr *err);
int agg_cold_piece(opinst *o, int task, int64_t we, int max, xerr *err);
agg_entry *agg_cold_entry(opinst *o, int task, int64_t ws, int64_t we, size_t *at, xerr *err);

/* ------------------------------------------------------------------ agg_evict.c: the memory budget */

int agg_budget_on(const opinst *o, const agg_task *a);
void agg_mem_update(agg_task *a);
int agg_evict(opinst *o, int task, xerr *err);

/* ------------------------------------------------------------------ agg_window.c and agg_fast.c: the push */

static inline int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

/* Defined in agg_window.c and agg_fast.c, called by agg_push (agg.c): */
int agg_batch_keys(opinst *o, agg_task *a, const batch *in);
int agg_push_session(opinst *o, agg_task *a, const batch *in, int emit_changes, xerr *err);
int agg_push_single(opinst *o, agg_task *a, const batch *in, int emit_changes, xerr *err);
int agg_push_hopping(opinst *o, agg_task *a, const batch *in, int emit_changes, xerr *err);
int agg_fx_prepare(agg_task *a, const opinst *o, const batch *in);
int agg_push_fixed1(opinst *o, agg_task *a, const batch *in, int one_window, xerr *err);

#endif
