/*
 * agg.c: the window aggregate operator of one task: making and freeing it,
 * a batch's push, its statistics.
 *
 * A task's state is an entry per open (window, group) in memory, written
 * behind to LMDB once per epoch.  The work is spread over files that call
 * downwards only (agg.h has the map): a push takes the fast path
 * (agg_fast.c) when the batch has its shape, else the general one
 * (agg_window.c), which also closes windows; agg_state.c writes and reads
 * the LMDB records; agg_table.c keeps the entries; agg_fn.c the aggregate
 * functions.  Runs on the engine's thread (ops.c calls it).
 */
#include "exec/agg.h"

#include <stdlib.h>
#include <string.h>

static void arg_init(agg_arg *g, const plan_expr *e, int prog)
{
    g->prog = prog;
    g->col = e && e->kind == PE_COL ? e->col : -1;
    g->to_double = e && e->type == TY_DOUBLE;
}

agg_task *agg_new(opinst *o, int task)
{
    const plan_op *op = o->op;
    agg_task *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->eng = o->q->eng;
    a->task = task;
    a->wsize = op->window.size_ms;
    a->rng = 0x9e3779b97f4a7c15ULL ^ ((uint64_t)task << 32) ^ o->q->id;
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
    if ((a->session && !a->t.tab) || !a->gtmp || !a->args || !a->gargs || batch_init(&a->cdec, a->ngroups + 1, 4)) {
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

void agg_free(agg_task *a)
{
    if (!a) return;
    if (a->eng) a->eng->agg_mem -= a->mem_acct;
    for (uint32_t i = 0; a->t.tab && i < a->t.cap; i++)
        if (a->t.tab[i].tag) agg_entry_free(a, a->t.tab[i].e);
    for (int i = 0; !a->session && i < a->nw; i++)
        for (int64_t j = 0; j < a->wl[i].n; j++) agg_entry_free(a, a->wl[i].v[j]);
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
    sbuf_fini(&a->cold);
    sbuf_fini(&a->cfrom);
    sbuf_fini(&a->crec);
    batch_fini(&a->cdec);
    free(a);
}

/* Open groups, in memory and evicted to LMDB (agg_evict.c). */
int64_t agg_open_groups(const agg_task *a) { return a ? a->nentries + a->ncold : 0; }

int64_t agg_cold_groups(const agg_task *a) { return a ? a->ncold : 0; }

/* The entries in memory (agg_entry_bytes each; evicted ones cost none). */
uint64_t agg_state_bytes(const agg_task *a)
{
    if (!a || a->nentries <= 0) return 0;
    return (uint64_t)a->nentries * agg_entry_bytes(a);
}

int64_t agg_min_open_start(const agg_task *a)
{
    int64_t m = WM_END;
    for (uint32_t i = 0; a && a->nentries && i < a->t.cap; i++)
        if (a->t.tab[i].tag && a->t.tab[i].e->wstart < m) m = a->t.tab[i].e->wstart;
    for (int i = 0; a && !a->session && i < a->nw; i++) /* one start per fixed window */
        if (a->wl[i].n && a->wl[i].v[0]->wstart < m) m = a->wl[i].v[0]->wstart;
        else if (!a->wl[i].n && a->wl[i].ncold) { /* a window of cold entries only */
            int64_t ws = a->wends[i] == WM_END ? WM_MIN : a->wends[i] - a->wsize;
            if (ws < m) m = ws;
        }
    return m;
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

int agg_push(opinst *o, int task, const batch *in, xerr *err)
{
    agg_task *a = o->agg[task];
    const ast_window *w = &o->op->window;
    int emit_changes = o->op->emit == EMIT_CHANGES;
    batch_reset(&o->out);
    if (rows_reserve(a, in->nrows)) return xerr_set(err, XE_NOMEM, "out of memory");
    /* the fast path opens entries without looking for cold ones */
    int fx = a->fx_type && !a->ncold ? agg_fx_prepare(a, o, in) : 0;
    if (fx) {
        int rc = agg_push_fixed1(o, a, in, fx == 2, err);
        return rc || !a->eng->mem_budget ? rc : agg_evict(o, task, err);
    }
    if (agg_batch_keys(o, a, in)) return xerr_set(err, XE_NOMEM, "out of memory");
    int rc;
    if (w->kind == WIN_SESSION) rc = agg_push_session(o, a, in, emit_changes, err);
    else if (w->kind == WIN_HOPPING && w->advance_ms != w->size_ms) rc = agg_push_hopping(o, a, in, emit_changes, err);
    else rc = agg_push_single(o, a, in, emit_changes, err);
    if (a->uses_progs) batch_reset(&o->q->scratch);
    if (rc) return rc;
    if (emit_changes && o->out.nrows && (rc = o->emit_down(o, task, &o->out, err))) return rc;
    return a->eng->mem_budget ? agg_evict(o, task, err) : 0;
}
