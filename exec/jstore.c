/*
 * jstore.c: the joins' row stores.
 *
 * A jside holds rows (a batch, their strings in its arena) with, per row,
 * an event time, a key hash, a persistence sequence and a link of the
 * hash chain of its bucket.  A row that has gone is marked by the time
 * WM_MIN and stays in place until compaction copies the live rows into a
 * fresh store; rows [0, persisted) are in LMDB already.  The window join
 * (join.c) keeps one per side; the stream-table join (tjoin.c) keeps a
 * table's versions in one and the stream rows that wait for the table in
 * another.
 *
 * Below join.c and tjoin.c; uses only the batches.  Engine thread.
 */
#include "exec/internal.h"

#include <stdlib.h>
#include <string.h>

int jside_init(jside *s, int ncols)
{
    memset(s, 0, sizeof *s);
    s->nbuckets = 256;
    s->heads = malloc(s->nbuckets * sizeof *s->heads);
    if (!s->heads || batch_init(&s->rows, ncols, 64)) return XE_NOMEM;
    memset(s->heads, 0xff, s->nbuckets * sizeof *s->heads);
    return 0;
}

void jside_fini(jside *s)
{
    batch_fini(&s->rows);
    free(s->ts);
    free(s->kh);
    free(s->seq);
    free(s->next);
    free(s->heads);
}

static void reindex(jside *s, uint32_t nb)
{
    free(s->heads);
    s->nbuckets = nb;
    s->heads = malloc(nb * sizeof *s->heads);
    if (!s->heads) return;
    memset(s->heads, 0xff, nb * sizeof *s->heads);
    for (int r = 0; r < s->rows.nrows; r++) {
        uint32_t b = (uint32_t)(s->kh[r] & (nb - 1));
        s->next[r] = s->heads[b];
        s->heads[b] = r;
    }
}

int jside_add(jside *s, const val *row, int64_t ts, uint64_t kh, uint64_t seq)
{
    int r = s->rows.nrows;
    if (r == s->cap) {
        int cap = s->cap ? s->cap * 2 : 256;
        int64_t *t = realloc(s->ts, (size_t)cap * sizeof *t);
        if (t) s->ts = t;
        uint64_t *k = realloc(s->kh, (size_t)cap * sizeof *k);
        if (k) s->kh = k;
        uint64_t *q = realloc(s->seq, (size_t)cap * sizeof *q);
        if (q) s->seq = q;
        int32_t *n = realloc(s->next, (size_t)cap * sizeof *n);
        if (n) s->next = n;
        if (!t || !k || !q || !n) return XE_NOMEM;
        s->cap = cap;
    }
    if (batch_append_row(&s->rows, row)) return XE_NOMEM;
    s->ts[r] = ts;
    s->kh[r] = kh;
    s->seq[r] = seq;
    if ((uint32_t)s->rows.nrows > s->nbuckets * 2) reindex(s, s->nbuckets * 4);
    else {
        uint32_t b = (uint32_t)(kh & (s->nbuckets - 1));
        s->next[r] = s->heads[b];
        s->heads[b] = r;
    }
    s->live++;
    return 0;
}

void jside_kill(jside *s, int r)
{
    if (s->ts[r] == WM_MIN) return;
    s->ts[r] = WM_MIN;
    s->live--;
}

int jside_compact(jside *s)
{
    jside n;
    if (jside_init(&n, s->rows.ncols)) { jside_fini(&n); return XE_NOMEM; }
    n.next_seq = s->next_seq;
    int persisted = 0;
    for (int r = 0; r < s->rows.nrows; r++) {
        if (s->ts[r] == WM_MIN) continue;
        if (jside_add(&n, batch_row(&s->rows, r), s->ts[r], s->kh[r], s->seq[r])) { jside_fini(&n); return XE_NOMEM; }
        if (r < s->persisted) persisted++;
    }
    n.persisted = persisted;
    jside_fini(s);
    *s = n;
    return 0;
}
