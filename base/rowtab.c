/*
 * rowtab.c: a table of rows by their 64-bit hash (see base.h), the one the
 * coordinator's output dedup (cluster/coord_out.c) and the client's
 * subscriptions (cluster/client.c) keep.  Open addressing with linear
 * probing over a power-of-two array; a slot is in use while its count is
 * not 0.  When to grow and what to keep is the caller's: rowtab_rehash.
 *
 * Not thread-safe: one table belongs to one loop.
 */
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

rowtab_ent *rowtab_slot(rowtab *t, uint64_t h)
{
    size_t j = h & (t->cap - 1);
    while (t->v[j].count && t->v[j].h != h) j = (j + 1) & (t->cap - 1);
    return &t->v[j];
}

int rowtab_rehash(rowtab *t, size_t cap, int (*keep)(rowtab_ent *e, void *ctx), void *ctx)
{
    rowtab_ent *nt = calloc(cap, sizeof *nt);
    if (!nt) return XE_NOMEM;
    size_t n = 0;
    for (size_t i = 0; i < t->cap; i++) {
        rowtab_ent x = t->v[i];
        if (!x.count || (keep && !keep(&x, ctx))) continue;
        size_t j = x.h & (cap - 1);
        while (nt[j].count) j = (j + 1) & (cap - 1);
        nt[j] = x;
        n++;
    }
    free(t->v);
    t->v = nt;
    t->cap = cap;
    t->len = n;
    return 0;
}

size_t rowtab_count(const rowtab *t, int (*keep)(rowtab_ent *e, void *ctx), void *ctx)
{
    size_t n = 0;
    for (size_t i = 0; i < t->cap; i++) {
        rowtab_ent x = t->v[i];
        n += x.count && (!keep || keep(&x, ctx));
    }
    return n;
}

int rowtab_since(rowtab_ent *e, void *cut) { return e->at >= *(const int64_t *)cut; }

void rowtab_fini(rowtab *t)
{
    free(t->v);
    memset(t, 0, sizeof *t);
}
