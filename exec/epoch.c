/*
 * epoch.c: epochs, the one place that commits LMDB transactions.
 *
 * A write transaction is open while rows flow (eng_txn, meta.c).  Log
 * appends and query state changes go into it; it commits when
 * EXEC_EPOCH_BYTES have been written or EXEC_EPOCH_MS have passed (checked
 * when an input call returns, eng_maybe_commit, so that a file source's
 * committed position matches exactly the rows it covers), when a statement
 * changes the catalog, and at close (engine_commit).  The commit writes
 * what the epoch changed: the queries' dirty state and positions, the
 * sinks' lengths, the streams' progress (see put_stream_meta), then hands
 * the replicas their changes (ft_send).
 *
 * The entry points of fault tolerance and log copies that end in a commit
 * (engine_replica_apply, engine_replay, engine_log_guard, _release,
 * _import) are here too: ft.c and logship.c do their work and leave the
 * commit to this file.
 *
 * Runs on the engine's thread; the store syncs committed epochs on a
 * thread of its own (storage.h, store_sync_start).
 */
#include "exec/internal.h"

#include <stdio.h>

/* ------------------------------------------------------------------ epochs */

static int commit_failed(engine *e, int rc, const xerr *err)
{
    if (!e->broken) snprintf(e->broken_msg, sizeof e->broken_msg, "%s", err && err->msg[0] ? err->msg : xerr_name(rc));
    e->broken = 1;
    return rc;
}

static int put_stream_meta(engine *e, stream_rt *s, xerr *err)
{
    char key[300];
    snprintf(key, sizeof key, "stream/%s", s->ps->name);
    uint64_t v[6] = {(uint64_t)s->max_ts, s->rows_total, (uint64_t)s->rejected, s->src_pos, s->log_bytes,
                     (uint64_t)s->wm};
    return eng_put_u64s(e->txn, key, v, 6, err);
}

/* "query/<id>": the offsets of slots 0 and 1, rows in, out and late, the
 * sink's committed length, then the offsets of slots 2 and up (partitions) */
static int put_query_meta(engine *e, query *q, xerr *err)
{
    char key[64];
    snprintf(key, sizeof key, "query/%u", q->id);
    uint64_t v[6 + ENGINE_MAX_SRC] = {q->offset[0], q->offset[1], (uint64_t)q->rows_in, (uint64_t)q->rows_out,
                                      (uint64_t)q->late, q->sink ? (uint64_t)q->sink->committed : 0};
    for (int k = 2; k < q->nsrc; k++) v[4 + k] = q->offset[k];
    return eng_put_u64s(e->txn, key, v, 6 + eng_meta_extra(q), err);
}

/* Commit the open epoch.  background = 1 (an epoch that ends on the data
 * path): its sync to disk runs on the store's thread while the next epoch
 * goes on, and the next commit waits for it; else the epoch is on disk when
 * this returns. */
int eng_commit_epoch(engine *e, int background, xerr *err)
{
    if (!e->txn) return 0;
    int rc;
    uint64_t ncat;
    if ((rc = eng_catalog_count(e->txn, &ncat, err)) || (rc = eng_put_u64s(e->txn, "catalog_entries", &ncat, 1, err))) goto fail;
    for (int i = 0; i < e->nqueries; i++) {
        query *q = e->queries[i];
        if (q->transient) continue;
        if ((rc = query_flush_state(q, e->txn, err))) goto fail;
        if ((rc = eng_sink_sync(q, err))) goto fail;
        if ((rc = put_query_meta(e, q, err))) goto fail;
    }
    for (int i = 0; i < e->nstreams; i++)
        if ((rc = eng_apply_retention(e, i, err)) || (rc = put_stream_meta(e, e->streams[i], err))) goto fail;
    e->epoch++;
    uint64_t ep = e->epoch;
    if ((rc = eng_put_u64s(e->txn, "epoch", &ep, 1, err))) goto fail;
    rc = store_commit(e->txn, err);
    e->txn = NULL;
    if (rc) return commit_failed(e, rc, err);
    rc = background ? store_sync_start(e->st, err) : store_sync(e->st, err);
    if (!rc) ft_send(e);
    return rc;
fail:
    store_abort(e->txn);
    e->txn = NULL;
    return commit_failed(e, rc, err);
}

int engine_commit(engine *e, xerr *err)
{
    return eng_commit_epoch(e, 0, err);
}

int eng_maybe_commit(engine *e, xerr *err)
{
    uint64_t now = clock_mono_ns();
    if (now - e->rate_ns >= RATE_MIN_NS) {
        for (int i = 0; i < e->nqueries; i++) query_rate_sample(e->queries[i], now, 0);
        e->rate_ns = now;
    }
    if (!e->txn) return 0;
    if (store_txn_bytes(e->txn) >= EXEC_EPOCH_BYTES ||
        now - e->epoch_start_ns >= (uint64_t)EXEC_EPOCH_MS * 1000000ull)
        return eng_commit_epoch(e, 1, err);
    return 0;
}

/* ------------------------------------------------------------------ the entry points that end in a commit */

/* A catch-up reads this many records of each log between two checks of
 * the epoch (records of EXEC_SLICE_ROWS rows or fewer). */
#define CATCH_UP_STEP 64

/* Bring q up to the end of its streams' logs (a query created with offset
 * = 'earliest', or restored at open) in steps, committing each epoch when
 * it is due: the log is read at the pace the query's operators and sink
 * take it (the file sink's writer blocks the engine when its buffers are
 * full), so memory holds one epoch, not the log; a crash resumes from the
 * offsets of the last committed epoch, which cover exactly the rows whose
 * effects (state, sink length) it committed. */
int eng_catch_up_committed(engine *e, query *q, xerr *err)
{
    int more = 1, rc = 0;
    while (more && !rc) {
        if ((rc = eng_txn(e, err)) || (rc = eng_catch_up_step(e, q, CATCH_UP_STEP, &more, err))) return rc;
        rc = eng_maybe_commit(e, err);
    }
    if (!rc) rc = eng_txn(e, err);
    return rc ? rc : eng_catch_up_wm(e, q, err);
}


int engine_replica_apply(engine *e, uint32_t tid, uint64_t epoch, const void *p, size_t n, uint64_t pos[ENGINE_MAX_SRC],
                         int *npos, xerr *err)
{
    int rc = ft_replica_apply(e, tid, epoch, p, n, pos, npos, err);
    return rc ? rc : eng_maybe_commit(e, err);
}

int engine_replay(engine *e, uint32_t qid, const uint64_t from[ENGINE_MAX_SRC], int nsrc, int64_t *rows, xerr *err)
{
    int more;
    if (rows) *rows = 0;
    int rc = ft_replay_from(e, qid, from, nsrc, err);
    if (!rc) rc = ft_replay_step(e, qid, 0, &more, rows, err);
    return rc ? rc : engine_commit(e, err);
}

int engine_replay_from(engine *e, uint32_t qid, const uint64_t from[ENGINE_MAX_SRC], int nsrc, xerr *err)
{
    return ft_replay_from(e, qid, from, nsrc, err);
}

int engine_replay_step(engine *e, uint32_t qid, size_t max, int *more, int64_t *rows, xerr *err)
{
    int rc = ft_replay_step(e, qid, max, more, rows, err);
    if (rc) return rc;
    return *more ? eng_maybe_commit(e, err) : engine_commit(e, err);
}

int engine_log_release(engine *e, const char *stream, uint64_t upto, xerr *err)
{
    int rc = ship_release(e, stream, upto, err);
    return rc > 0 ? eng_maybe_commit(e, err) : rc;
}

int engine_log_guard(engine *e, const char *stream, int on, xerr *err)
{
    uint64_t end;
    int rc = ship_guard(e, stream, on, &end, err);
    if (rc <= 0) return rc;
    if ((rc = engine_log_release(e, stream, end, err))) return rc;
    return ship_unguard(e, stream, err);
}

int engine_log_import(engine *e, const char *stream, const void *p, size_t n, uint64_t *end, xerr *err)
{
    int rc = ship_import(e, stream, p, n, end, err);
    return rc > 0 ? eng_maybe_commit(e, err) : rc;
}
