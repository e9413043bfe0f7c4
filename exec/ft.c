/*
 * ft.c: the engine's side of fault tolerance.  After a failure domain dies,
 * the cluster redeploys every query that lost tasks under a new id, with
 * empty state, and recomputes it from the stream logs kept on the streams'
 * home nodes (replay from the offsets the query started at).  The sink's
 * host drops the rows it had already delivered (cluster/coord.c), so the
 * output equals a run without the failure.  Runs on the engine's thread.
 */
#include <string.h>

#include "exec/internal.h"

static query *find_id(const engine *e, uint32_t qid)
{
    for (int i = 0; i < e->nqueries; i++)
        if (e->queries[i]->deployed && e->queries[i]->id == qid) return e->queries[i];
    return NULL;
}

int engine_source_offsets(engine *e, uint32_t qid, uint64_t from[2], int *nsrc, xerr *err)
{
    query *q = find_id(e, qid);
    if (!q) return xerr_set(err, XE_NOTFOUND, "query %u is not deployed here", qid);
    for (int k = 0; k < 2; k++) from[k] = k < q->nsrc ? q->offset[k] : 0;
    *nsrc = q->nsrc;
    return 0;
}

int engine_replay(engine *e, uint32_t qid, const uint64_t from[2], int nsrc, int64_t *rows, xerr *err)
{
    query *q = find_id(e, qid);
    if (!q) return xerr_set(err, XE_NOTFOUND, "query %u is not deployed here", qid);
    if (nsrc != q->nsrc) return xerr_set(err, XE_INVAL, "query %u has %d sources, the replay names %d", qid, q->nsrc, nsrc);
    int64_t before = q->rows_in;
    for (int k = 0; k < q->nsrc; k++)
        if (from[k] < q->offset[k]) q->offset[k] = from[k];
    int rc = eng_txn(e, err);
    if (!rc) rc = eng_catch_up(e, q, err);
    if (!rc) rc = engine_commit(e, err);
    if (rows) *rows = q->rows_in - before;
    return rc;
}
