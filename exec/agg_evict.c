/*
 * agg_evict.c: the window aggregate under a memory budget.
 *
 * SET memory_budget bounds the bytes of window state the aggregates of an
 * engine keep in memory (engine.agg_mem, summed over their tasks as
 * agg_entry_bytes counts an entry).  After each batch a task over the
 * budget evicts its own cold entries, down to 7/8 of it, so that a round
 * runs once per budget/8 of new groups, not per row: each victim's whole
 * state goes into the epoch's transaction as a cold record (agg_state.c)
 * before the entry leaves its table and returns to the pool.  A row for a
 * cold group reads it back (agg_window.c, fixed_entry); a closing window
 * merges its cold records with its entries in memory (agg_close).
 *
 * Which entries are cold: the least recently updated, as Redis picks its
 * victims, by sampling: of EVICT_SAMPLES random entries the one with the
 * oldest stamp goes.  An entry's stamp is the task's clock when it was last
 * marked dirty (its first update in an epoch; agg_table.c), and the clock
 * ticks at every flush and every eviction round, so the stamps order
 * entries by the epoch, or the part of it, they were last updated in,
 * at no cost on the hot path (the mark writes that line already).
 *
 * Fixed windows only (tumbling, hopping, the global window) of standing
 * queries, embedded or deployed on a cluster's node (the node's engine
 * has its own budget): sessions move between window ends, and push
 * queries write no state.  A deployed task's cold records reach its
 * replicas with the next flush's delta (agg_state.c, cold_record).  Calls
 * agg_state.c and agg_table.c.
 */
#include "exec/agg.h"

enum { EVICT_SAMPLES = 5, EVICT_KEY_MAX = 400 /* a longer key stays in memory: the LMDB key must fit */ };

int agg_budget_on(const opinst *o, const agg_task *a)
{
    return a->eng && a->eng->mem_budget && !a->session && !o->q->transient;
}

void agg_mem_update(agg_task *a)
{
    if (!a->eng || !a->counted) return; /* only tasks that can evict count: a push query's groups do not */
    uint64_t now = a->nentries > 0 ? (uint64_t)a->nentries * agg_entry_bytes(a) : 0;
    a->eng->agg_mem += now - a->mem_acct; /* modulo 2^64: a task's share falls as well as grows */
    a->mem_acct = now;
}

static uint64_t rnd(agg_task *a)
{
    uint64_t x = a->rng ? a->rng : 0x9e3779b97f4a7c15ULL; /* xorshift64*: the sample, not security */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    a->rng = x;
    return x * 0x2545f4914f6cdd1dULL;
}

/* A random entry of the windows' lists (*wi: its window's index position). */
static agg_entry *sample(agg_task *a, int *wi)
{
    uint64_t r = rnd(a) % (uint64_t)a->nentries;
    for (int i = 0; i < a->nw; i++) {
        if (r < (uint64_t)a->wl[i].n) {
            *wi = i;
            return a->wl[i].v[r];
        }
        r -= (uint64_t)a->wl[i].n;
    }
    return NULL;
}

int agg_evict(opinst *o, int task, xerr *err)
{
    agg_task *a = o->agg[task];
    if (!agg_budget_on(o, a)) return 0;
    a->counted = 1;
    agg_mem_update(a);
    engine *e = a->eng;
    if (e->agg_mem <= e->mem_budget || a->nentries <= 0) return 0;
    agg_dirty_track(a);
    uint64_t per = agg_entry_bytes(a), target = e->mem_budget - e->mem_budget / 8;
    int64_t need = (int64_t)((e->agg_mem - target) / per) + 1;
    if (need > a->nentries) need = a->nentries;
    a->clock++; /* entries dirtied after this round are younger than those it leaves */
    for (int64_t k = 0; k < need && a->nentries > 0; k++) {
        agg_entry *best = NULL;
        int bw = -1;
        for (int s = 0; s < EVICT_SAMPLES; s++) {
            int wi = -1;
            agg_entry *c = sample(a, &wi);
            if (c && c->klen <= EVICT_KEY_MAX && (!best || c->stamp < best->stamp)) {
                best = c;
                bw = wi;
            }
        }
        if (!best) continue;
        int rc;
        if ((rc = agg_cold_put(o, task, best, err))) return rc;
        if (best->dirty) agg_dirty_remove(a, best);
        agg_fixed_unlink(a, bw, best);
        a->wl[bw].ncold++;
        a->ncold++;
        a->nevicted++;
        agg_entry_free(a, best);
    }
    agg_mem_update(a);
    return 0;
}
