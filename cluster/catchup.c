/*
 * catchup.c: the catch-up decision of the sink's dedup after a recovery
 * (see catchup.h for the rule and why the sink's combined watermark is not
 * enough).  Pure: no I/O, any thread.
 */
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cluster/catchup.h"

static int64_t max_of(const int64_t *v, int n)
{
    int64_t m = INT64_MIN;
    for (int i = 0; i < n; i++)
        if (v[i] > m) m = v[i];
    return m;
}

static int64_t target(const int64_t *wm, int t, int64_t rows) { return wm[t] > rows ? wm[t] : rows; }

int catchup_begin(catchup *c, const int64_t *wm, int n, int64_t rows)
{
    if (n < 0) n = 0;
    if (c->n == n || !c->wm) {
        if (!c->wm && n > 0) {
            if (!(c->wm = malloc((size_t)n * sizeof *c->wm))) {
                c->on = 1;
                return XE_NOMEM;
            }
            for (int t = 0; t < n; t++) c->wm[t] = INT64_MIN;
            c->n = n;
        }
        for (int t = 0; t < n; t++)
            if (target(wm, t, rows) > c->wm[t]) c->wm[t] = target(wm, t, rows);
    } else {
        /* the task counts differ: one target, the largest of all */
        int64_t a = max_of(c->wm, c->n), b = max_of(wm, n);
        if (rows > b) b = rows;
        c->wm[0] = a > b ? a : b;
        c->n = 1;
    }
    c->on = 1;
    return 0;
}

int catchup_done(const catchup *c, const int64_t *cur, int n)
{
    if (!c->on) return 0;
    if (c->n == n) {
        for (int t = 0; t < n; t++)
            if (cur[t] < c->wm[t]) return 0;
        return 1;
    }
    int64_t want = max_of(c->wm, c->n);
    for (int t = 0; t < n; t++)
        if (cur[t] < want) return 0;
    return n > 0 || want == INT64_MIN;
}

void catchup_fini(catchup *c)
{
    free(c->wm);
    memset(c, 0, sizeof *c);
}
