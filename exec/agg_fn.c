/*
 * agg_fn.c: the aggregate functions of the window aggregate.
 *
 * An entry has a slot per aggregate: n, the count of non-NULL inputs, and
 * an integer and a double SUM or the MIN or MAX so far (agg_slot), or, in
 * tasks whose every aggregate is COUNT(*) or a SUM, AVG, MIN or MAX of a
 * bare DOUBLE, a compact slot of 8 or 16 bytes (see agg_task in agg.h).
 * What a slot needs beyond numbers, a TEXT MIN or MAX and the set of a
 * COUNT(DISTINCT), is in the entry's agg_exts.  Here: those sets, a row's
 * update of a slot the long way (any value, any aggregate; the common cases
 * are inline in agg.h), the merge of two sessions' slots, an aggregate's
 * result and the row an entry emits.  It calls nothing of the aggregate's
 * other files.  Runs on the engine's thread, as all of the aggregate.
 */
#include "exec/agg.h"

#include <stdlib.h>
#include <string.h>

static void dset_free(dset *s)
{
    if (!s) return;
    free(s->h);
    free(s->off);
    sbuf_fini(&s->bytes);
    free(s);
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
int agg_dset_add_all(agg_ext *x, const unsigned char *p, size_t n)
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

void agg_ext_clear(agg_task *a, agg_entry *e)
{
    agg_ext *x = entry_ext(a, e);
    for (int i = 0; x && i < a->naggs; i++) {
        free(x[i].mtext);
        dset_free(x[i].ds);
        memset(&x[i], 0, sizeof x[i]);
    }
}

/* ------------------------------------------------------------------ slots */

int agg_set_m(agg_slot *s, agg_ext *x, const val *v)
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
        if (s->n++ == 0) return agg_set_m(s, x, v);
        if (v->type == TY_DOUBLE && s->m.type == TY_DOUBLE && !isnan(v->d) && !isnan(s->m.d)) {
            if (fn == FN_MIN ? v->d < s->m.d : v->d > s->m.d) s->m.d = v->d;
            break;
        }
        int c = m_compare(v, &s->m);
        if (fn == FN_MIN ? c < 0 : c > 0) return agg_set_m(s, x, v);
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
int agg_slot_merge(const plan_agg *ag, agg_slot *a, agg_ext *ax, const agg_slot *b, const agg_ext *bx)
{
    switch (ag->fn) {
    case FN_COUNT_STAR: case FN_COUNT: a->n += b->n; break;
    case FN_SUM: case FN_AVG: a->n += b->n; a->i += b->i; a->d += b->d; break;
    case FN_MIN: case FN_MAX:
        if (b->n == 0) break;
        if (a->n == 0) { a->n = b->n; return agg_set_m(a, ax, &b->m); }
        a->n += b->n;
        {
            int c = val_compare(&b->m, &a->m);
            if (ag->fn == FN_MIN ? c < 0 : c > 0) return agg_set_m(a, ax, &b->m);
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

void agg_slots_clear(agg_task *a, agg_entry *e)
{
    agg_ext_clear(a, e);
    if (a->compact) {
        memset(e->slots, 0, a->slots_bytes);
        return;
    }
    for (int k = 0; k < a->naggs; k++) {
        e->slots[k].n = 0;
        e->slots[k].m = val_null(); /* also i = d = 0 */
    }
}

/* Row into e's slot k the long way (any value, any aggregate); XE_NOMEM. */
int agg_slot_slow(opinst *o, agg_task *a, agg_entry *e, const val *row, int k)
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
 * the group is agg_push_fixed1's integer, which its key holds too).  The row's
 * TEXT (group values, a MIN or MAX) points into e unless own is set, when it
 * is copied into the output's arena: a change emitted in a push must be, as
 * a later row of the same batch may change e's MIN or MAX or, in a session
 * merge, free e and reuse its memory for another group before the batch
 * goes out.  Closing emits before it frees, and borrows. */
int agg_emit_window_entry(opinst *o, agg_task *a, const agg_entry *e, int64_t ws, int64_t we, int own, xerr *err)
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
