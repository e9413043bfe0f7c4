/*
 * agg_state.c: the window aggregate's state in LMDB, and its record format.
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
 * and, under a memory budget (agg_evict.c), a third:
 *   - cold entries of fixed windows, evicted from memory: one record per
 *     entry, tail 00 || be64(key hash) || group key, value u32 COLD_MARK
 *     then the entry as entry_put writes it.  A cold record is the whole
 *     truth of its group: whatever the window's earlier delta records say
 *     of it is older (a restart skips those), and when a row for the
 *     group comes the record is read back into memory and deleted, the
 *     entry marked dirty so that the epoch's delta has it again.  Tails
 *     that start with 00 sort before the deltas' ff, and by hash: the
 *     order a closing window emits in (agg_close reads them in pieces,
 *     agg_cold_piece, and merges them with the entries in memory).
 *     A group is thus in memory or cold, never both, in every committed
 *     epoch, and an evicted entry's record is in the epoch's transaction
 *     before the entry leaves memory.
 *
 * Here: the epoch's flush of the dirty entries (agg_flush), the reload at a
 * restart (agg_load), and the sessions' deletions noted for the flush.
 * Replicas get these records as the epoch wrote them (ft.c; a deployed
 * task's cold records, written between flushes, are recorded for its next
 * flush's delta: cold_record).  Calls
 * agg_table.c and agg_fn.c.
 */
#include "exec/agg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Record that the persisted copy of session entry e must go. */
int agg_note_delete(agg_task *a, const agg_entry *e)
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

#define DELTA_MARK 0xffffffffu
#define COLD_MARK 0xfffffffeu
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

typedef struct del_ctx {
    store_txn *t;
    uint32_t tid;
    xerr *err;
} del_ctx;

static int del_one(void *ctx, int64_t wend, const void *k, size_t kl, const void *v, size_t vl)
{
    (void)v;
    (void)vl;
    del_ctx *d = ctx;
    int rc = store_state_del(d->t, STORE_STATE, d->tid, wend, k, kl, d->err);
    return rc < 0 ? rc : 0;
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
        if (a->wl[wi].ncold) { /* the delta records go, the cold ones stay */
            del_ctx d = {t, tid, err};
            static const unsigned char after_cold[1] = {1};
            if ((rc = store_state_scan_at(t, STORE_STATE, tid, skey_end(wend), after_cold, 1, del_one, &d, err)) < 0)
                return rc;
        } else if ((rc = store_state_delete_range(t, STORE_STATE, tid, skey_end(wend), skey_end(wend) + 1, err)))
            return rc;
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
    /* the cold records written since the last flush come first in what a
     * recorder gets (a replica's delta); without one, a snapshot or no copy
     * at all covers them */
    sbuf *rec = store_txn_recording(t);
    if (rec && a->crec.len && sbuf_add(rec, a->crec.p, a->crec.len)) return xerr_set(err, XE_NOMEM, "out of memory");
    sbuf_reset(&a->crec);
    int rc = is_session(o) ? flush_session(o, a, tid, t, err) : flush_fixed(o, a, tid, t, err);
    if (rc) return rc;
    a->clock++; /* entries dirtied from now on are younger than every one before */
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
    int task;
    store_txn *t;
    batch tmp;
    sbuf vcold; /* a cold record looked up */
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
    agg_entry *e = is_session(c->o) ? NULL : agg_find_fixed(a, h, wend, k, gkl);
    if (e) {
        agg_slots_clear(a, e);
        return e;
    }
    batch_reset(&c->tmp);
    if (val_key_decode(k, gkl, a->gtmp, a->ngroups, &c->tmp, c->err) < 0) {
        c->rc = XE_CORRUPT;
        return NULL;
    }
    if (!(e = agg_entry_open(a, k, gkl, h, ws, wend))) c->rc = xerr_set(c->err, XE_NOMEM, "out of memory");
    return e;
}

/* e's slots from an entry's slots as entry_put writes them, at v[*pat..n);
 * XE_CORRUPT.  MIN and MAX values are decoded through tmp. */
static int slots_get(agg_task *a, const plan_op *op, agg_entry *e, const unsigned char *v, size_t n, size_t *pat,
                     batch *tmp, xerr *err)
{
    size_t at = *pat;
    uint64_t x;
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
            batch_reset(tmp);
            int r = val_key_decode(v + at, n - at, &m, 1, tmp, err);
            if (r < 0 || agg_set_m(s, ex ? &ex[i] : NULL, &m)) return XE_CORRUPT;
            at += (size_t)r;
        } else if (fn == FN_COUNT_DISTINCT) {
            if (varint_get(v, n, &at, &x) || x > n - at || !ex || agg_dset_add_all(&ex[i], v + at, x))
                return XE_CORRUPT;
            at += x;
        }
        slot_put(a, e, i, s);
    }
    *pat = at;
    return 0;
}

/* The key tail of the cold record of group key (hash h) in a->pkey. */
static int cold_key(agg_task *a, uint64_t h, const unsigned char *key, uint32_t klen)
{
    unsigned char tail[COLD_TAIL] = {0};
    be64_put(tail + 1, h);
    sbuf_reset(&a->pkey);
    return sbuf_add(&a->pkey, tail, COLD_TAIL) || sbuf_add(&a->pkey, key, klen) ? XE_NOMEM : 0;
}

/* Whether group key k of window wend has a cold record (when the window
 * has any: its cold records come before its deltas in the scan), 1 or 0:
 * its delta entries are then older than that record; or an error. */
static int load_is_cold(load_ctx *c, int64_t wend, const unsigned char *k, uint32_t gkl)
{
    agg_task *a = c->a;
    int wi = widx_find(a, wend);
    if (wi == a->nw || a->wends[wi] != wend || !a->wl[wi].ncold) return 0;
    if (cold_key(a, key_hash(k, gkl), k, gkl)) return c->rc = xerr_set(c->err, XE_NOMEM, "out of memory");
    int rc = store_state_get(c->t, STORE_STATE, query_task_id(c->o->q, c->o->op->id, c->task), skey_end(wend), a->pkey.p,
                             a->pkey.len, &c->vcold, c->err);
    if (rc == XE_NOTFOUND) {
        xerr_clear(c->err);
        return 0;
    }
    return rc ? (c->rc = rc) : 1;
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
        int cold = load_is_cold(c, wend, v + at, (uint32_t)x);
        if (cold < 0) return c->rc;
        agg_entry *e;
        if (cold) { /* read past it into an entry of no table */
            batch_reset(&c->tmp);
            if (val_key_decode(v + at, x, a->gtmp, a->ngroups, &c->tmp, c->err) < 0) return XE_CORRUPT;
            if (!(e = agg_entry_make(a, v + at, (uint32_t)x, 0, ws, wend)))
                return c->rc = xerr_set(c->err, XE_NOMEM, "out of memory");
        } else if (!(e = load_entry(c, v + at, (uint32_t)x, ws, wend)))
            return c->rc;
        at += x;
        int rc = slots_get(a, op, e, v, n, &at, &c->tmp, c->err);
        if (cold) agg_entry_free(a, e);
        if (rc) return rc;
        a->pw[pi].nwritten++;
    }
    return 0;
}

/* A cold record at a restart: counted in its window, which stays in the
 * index though none of its entries is in memory. */
static int load_cold(load_ctx *c, int64_t wend)
{
    int wi = agg_widx_window(c->a, wend);
    if (wi < 0) return c->rc = xerr_set(c->err, XE_NOMEM, "out of memory");
    c->a->wl[wi].ncold++;
    c->a->ncold++;
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
            if (val_key_decode(v, ml, &m, 1, &c->tmp, c->err) < 0 || agg_set_m(s, x, &m)) return XE_CORRUPT;
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
            if ((size_t)(end - v) < bl || !x || agg_dset_add_all(x, v, bl)) return XE_CORRUPT;
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
    } else if (mark == COLD_MARK && kl > COLD_TAIL && k[0] == 0 && !is_session(c->o))
        rc = load_cold(c, wend);
    else if (kl < 8 || vl < 4)
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
    load_ctx c = {o, o->agg[task], task, t, {0}, {0}, err, 0};
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
    sbuf_init(&c.vcold);
    int rc = store_state_scan(t, STORE_STATE, query_task_id(o->q, o->op->id, task), WM_MIN, WM_END, load_one, &c, err);
    /* group values point into tmp's arena only until entry_new copies them */
    batch_fini(&c.tmp);
    sbuf_fini(&c.vcold);
    if (c.rc) return c.rc;
    if (!rc) agg_mem_update(c.a);
    return rc;
}

/* ------------------------------------------------------------------ cold entries (agg_evict.c) */

/* A deployed task's cold records are written between flushes, where no
 * recorder runs: they are recorded into a->crec, which its next flush
 * hands on (agg_flush), so that its replicas make the same changes in the
 * same order.  On (1) the recorder is set unless one runs already; off
 * (0) it is put back. */
static void cold_record(opinst *o, agg_task *a, store_txn *t, int on, sbuf **was)
{
    if (!o->q->deployed) return;
    if (on) {
        *was = store_txn_recording(t);
        if (!*was) store_txn_record(t, &a->crec);
    } else if (!*was)
        store_txn_record(t, NULL);
}

/* e's cold record into the epoch's transaction (fixed windows). */
int agg_cold_put(opinst *o, int task, agg_entry *e, xerr *err)
{
    agg_task *a = o->agg[task];
    engine *eng = o->q->eng;
    int rc;
    if ((rc = eng_txn(eng, err))) return rc;
    uint32_t mark = COLD_MARK;
    sbuf_reset(&a->vbuf);
    if (cold_key(a, e->hash, e->key, e->klen) || sbuf_add(&a->vbuf, &mark, 4) || entry_put(a, o->op, e, &a->vbuf))
        return xerr_set(err, XE_NOMEM, "out of memory");
    sbuf *was = NULL;
    cold_record(o, a, eng->txn, 1, &was);
    rc = store_state_put(eng->txn, STORE_STATE, query_task_id(o->q, o->op->id, task), skey_end(e->wend), a->pkey.p,
                         a->pkey.len, a->vbuf.p, a->vbuf.len, err);
    cold_record(o, a, eng->txn, 0, &was);
    sbuf_reset(&a->vbuf);
    return rc;
}

static int cold_corrupt(opinst *o, int task, xerr *err)
{
    return xerr_set(err, XE_CORRUPT, "window state of query task %u is corrupt (a cold group)",
                    query_task_id(o->q, o->op->id, task));
}

/* The group of key (hash h) in fixed window [ws, we), of index position
 * wi, which has cold entries: when it is one, its entry back in memory
 * (its group values in gtmp, as agg_entry_open takes them), dirty, its
 * record deleted, in *out; else *out = NULL. */
int agg_cold_take(opinst *o, int task, int wi, const unsigned char *key, uint32_t klen, uint64_t h, int64_t ws,
                  int64_t we, agg_entry **out, xerr *err)
{
    agg_task *a = o->agg[task];
    engine *eng = o->q->eng;
    uint32_t tid = query_task_id(o->q, o->op->id, task);
    *out = NULL;
    int rc;
    if ((rc = eng_txn(eng, err))) return rc;
    if (cold_key(a, h, key, klen)) return xerr_set(err, XE_NOMEM, "out of memory");
    rc = store_state_get(eng->txn, STORE_STATE, tid, skey_end(we), a->pkey.p, a->pkey.len, &a->vbuf, err);
    if (rc == XE_NOTFOUND) {
        xerr_clear(err);
        return 0;
    }
    if (rc) return rc;
    const unsigned char *v = (const unsigned char *)a->vbuf.p;
    size_t n = a->vbuf.len, at = 4;
    uint32_t mark = 0;
    uint64_t x;
    if (n >= 4) memcpy(&mark, v, 4);
    if (mark != COLD_MARK || varint_get(v, n, &at, &x) || x != klen || x > n - at) return cold_corrupt(o, task, err);
    at += x;
    agg_entry *e = agg_entry_open(a, key, klen, h, ws, we);
    if (!e) return xerr_set(err, XE_NOMEM, "out of memory");
    if (slots_get(a, o->op, e, v, n, &at, &a->cdec, err)) return cold_corrupt(o, task, err);
    sbuf *was = NULL;
    cold_record(o, a, eng->txn, 1, &was);
    rc = store_state_del(eng->txn, STORE_STATE, tid, skey_end(we), a->pkey.p, a->pkey.len, err);
    cold_record(o, a, eng->txn, 0, &was);
    if (rc) return rc;
    a->wl[wi].ncold--;
    a->ncold--;
    if (agg_mark_dirty(a, e)) return xerr_set(err, XE_NOMEM, "out of memory");
    *out = e;
    return 0;
}

typedef struct piece_ctx {
    agg_task *a;
    int n, max, rc;
} piece_ctx;

static int piece_one(void *ctx, int64_t wend, const void *kp, size_t kl, const void *vp, size_t vl)
{
    (void)wend;
    piece_ctx *c = ctx;
    agg_task *a = c->a;
    const unsigned char *k = kp;
    if (kl <= COLD_TAIL || k[0] != 0) return 1; /* past the cold records */
    uint32_t mark = 0, tl = (uint32_t)kl, l = (uint32_t)vl;
    if (vl >= 4) memcpy(&mark, vp, 4);
    if (mark != COLD_MARK) return 0; /* an older version's record of a window without groups */
    if (sbuf_add(&a->cold, &tl, 4) || sbuf_add(&a->cold, kp, kl) || sbuf_add(&a->cold, &l, 4) ||
        sbuf_add(&a->cold, vp, vl)) {
        c->rc = XE_NOMEM;
        return 1;
    }
    if (++c->n < c->max) return 0;
    /* the next piece starts after this key: the least key above it is it || 00 */
    sbuf_reset(&a->cfrom);
    unsigned char z = 0;
    if (sbuf_add(&a->cfrom, kp, kl) || sbuf_add(&a->cfrom, &z, 1)) c->rc = XE_NOMEM;
    return 1;
}

/* Up to max cold records of window we, from a->cfrom on (the caller sets
 * it to one 00 byte for the first piece), into a->cold as [u32 tail
 * length][tail][u32 value length][value]...: how many (max: there may be
 * more, from the new a->cfrom on), or an error. */
int agg_cold_piece(opinst *o, int task, int64_t we, int max, xerr *err)
{
    agg_task *a = o->agg[task];
    engine *eng = o->q->eng;
    int rc;
    if ((rc = eng_txn(eng, err))) return rc;
    sbuf_reset(&a->cold);
    piece_ctx c = {a, 0, max, 0};
    rc = store_state_scan_at(eng->txn, STORE_STATE, query_task_id(o->q, o->op->id, task), skey_end(we), a->cfrom.p,
                             a->cfrom.len, piece_one, &c, err);
    if (c.rc) return xerr_set(err, XE_NOMEM, "out of memory");
    if (rc < 0) return rc;
    return c.n;
}

/* The cold record at a->cold + *at (agg_cold_piece's layout) as an entry
 * of no table, for closing to emit and free; *at moves past it.  NULL with
 * err set when it does not decode or memory runs out. */
agg_entry *agg_cold_entry(opinst *o, int task, int64_t ws, int64_t we, size_t *pat, xerr *err)
{
    agg_task *a = o->agg[task];
    const unsigned char *p = (const unsigned char *)a->cold.p + *pat, *k, *v;
    uint32_t tl, vl;
    memcpy(&tl, p, 4);
    k = p + 4;
    memcpy(&vl, k + tl, 4);
    v = k + tl + 4;
    *pat += 8 + (size_t)tl + vl;
    const unsigned char *key = k + COLD_TAIL;
    uint32_t klen = tl - COLD_TAIL;
    size_t at = 4;
    uint64_t x;
    batch_reset(&a->cdec);
    if (varint_get(v, vl, &at, &x) || x != klen || x > vl - at ||
        val_key_decode(key, klen, a->gtmp, a->ngroups, &a->cdec, err) < 0) {
        cold_corrupt(o, task, err);
        return NULL;
    }
    at += x;
    agg_entry *e = agg_entry_make(a, key, klen, be64_get(k + 1), ws, we);
    if (!e) {
        xerr_set(err, XE_NOMEM, "out of memory");
        return NULL;
    }
    if (slots_get(a, o->op, e, v, vl, &at, &a->cdec, err)) {
        agg_entry_free(a, e);
        cold_corrupt(o, task, err);
        return NULL;
    }
    return e;
}
