/*
 * logship.c: copies of a stream's log in another failure domain.
 *
 * A cluster keeps a copy of every stream's log on a shadow home, so that
 * the stream survives the loss of its home's domain.  The home exports its
 * records as they are written (engine_log_export) and the shadow puts them
 * at the same offsets (engine_log_import), with the stream's counters, so
 * that the copy can go on as the log once the shadow is the home.
 *
 * The guard.  While a copy is kept, rows reach the home's log at once but
 * the stream's queries only up to hw, the end the shadow has acknowledged
 * (engine_log_release), as Kafka's consumers read only below the high
 * watermark.  A record a query has seen is then always in the copy: when
 * the home is lost, every result, state and replica position derived from
 * the stream refers to records the new home holds, and the input past its
 * end (an ingest's chunks that were not acknowledged, resent by the
 * client) can be decoded again without contradicting anything.
 *
 * Runs on the engine's thread, inside its epochs; nothing here commits:
 * engine_log_guard, _release and _import are epoch.c's, which commit after
 * ship_guard, ship_release and ship_import as these ask.
 */
#include <stdlib.h>
#include <string.h>

#include "exec/internal.h"

#define SHIP_VERSION 1
#define SHIP_HDR (4 + 8 * 8 + 4)
#define SHIP_ENDED 1u
#define SHIP_OPEN_SLICE 2u
#define SHIP_TRIM_ONLY 4u /* max = 0: no records, only where the home's log begins */

static int stream_of(engine *e, const char *stream, stream_rt **out, xerr *err)
{
    int si = eng_stream_index(e, stream);
    if (si < 0) return xerr_set(err, XE_NAME, "unknown stream '%s'", stream);
    *out = e->streams[si];
    return si;
}

/* The guard on or off.  1: it is coming off, and the caller releases the
 * records up to the log's end *end (engine_log_release), then calls
 * ship_unguard. */
int ship_guard(engine *e, const char *stream, int on, uint64_t *end, xerr *err)
{
    stream_rt *s = NULL;
    int si = stream_of(e, stream, &s, err), rc;
    if (si < 0) return si;
    if (on && !s->guard) {
        if ((rc = eng_txn(e, err)) || (rc = store_log_end(e->txn, s->ps->name, &s->hw, err))) return rc;
        /* the queries have had everything so far */
        s->rel_wm = WM_MIN;
        if (s->max_ts != WM_MIN && s->ps->ts_col >= 0) s->rel_wm = s->max_ts - s->ps->watermark_ms;
        s->ext_ticks = 0; /* record boundaries need not match anyone's any more */
        s->guard = 1;
        return 0;
    }
    if (!on) s->ext_ticks = 0; /* the home, with no copy */
    if (!on && s->guard) {
        if ((rc = eng_txn(e, err)) || (rc = store_log_end(e->txn, s->ps->name, end, err))) return rc;
        return 1;
    }
    return 0;
}

int ship_unguard(engine *e, const char *stream, xerr *err)
{
    stream_rt *s = NULL;
    int si = stream_of(e, stream, &s, err), rc;
    if (si < 0) return si;
    s->guard = 0;
    if (s->end_pending && (rc = eng_end_released(e, si, err))) return rc;
    return 0;
}

typedef struct wm_scan {
    const stream_rt *s;
    int64_t wm;
} wm_scan;

static int wm_one(void *ctx, uint64_t off, const void *rec, size_t n)
{
    (void)off;
    wm_scan *w = ctx;
    if (n < LOG_HDR || !(be64_get((const unsigned char *)rec + 8) & LOG_WM_STEP)) return 0;
    int64_t maxts = (int64_t)be64_get(rec);
    if (maxts != WM_MIN && w->s->ps->ts_col >= 0) w->wm = maxts - w->s->ps->watermark_ms;
    return 0;
}

/* 1: released, and the epoch may commit now (the caller's eng_maybe_commit). */
int ship_release(engine *e, const char *stream, uint64_t upto, xerr *err)
{
    stream_rt *s = NULL;
    int si = stream_of(e, stream, &s, err), rc;
    if (si < 0) return si;
    if (!s->guard) return 0;
    uint64_t end;
    if ((rc = eng_txn(e, err)) || (rc = store_log_end(e->txn, s->ps->name, &end, err))) return rc;
    if (upto > end) upto = end;
    if (upto > s->hw) {
        if ((rc = eng_release(e, si, upto, err))) return rc;
        wm_scan w = {s, s->rel_wm};
        if ((rc = store_log_read(e->txn, s->ps->name, s->hw, (size_t)(upto - s->hw), wm_one, &w, err))) return rc;
        s->rel_wm = w.wm;
        s->hw = upto;
    }
    if (s->end_pending && s->hw == end && (rc = eng_end_released(e, si, err))) return rc;
    return 1;
}

typedef struct export_ctx {
    sbuf *out;
    size_t max;
    uint64_t next;
    uint32_t n;
} export_ctx;

static int export_one(void *ctx, uint64_t off, const void *rec, size_t n)
{
    export_ctx *x = ctx;
    if (x->n && x->out->len + n > x->max) return 1;
    unsigned char l[4];
    be32_put(l, (uint32_t)n);
    if (sbuf_add(x->out, l, 4) || sbuf_add(x->out, rec, n)) return -1;
    x->next = off + 1;
    x->n++;
    return 0;
}

int engine_log_export(engine *e, const char *stream, uint64_t from, size_t max, sbuf *out, uint64_t *next,
                      xerr *err)
{
    stream_rt *s = NULL;
    int si = stream_of(e, stream, &s, err), rc;
    if (si < 0) return si;
    uint64_t begin, end;
    if ((rc = eng_txn(e, err)) || (rc = store_log_begin(e->txn, s->ps->name, &begin, err)) ||
        (rc = store_log_end(e->txn, s->ps->name, &end, err)))
        return rc;
    if (from < begin) from = begin; /* trimmed: the copy starts later */
    size_t at = out->len;
    unsigned char h[SHIP_HDR];
    if (sbuf_add(out, h, sizeof h)) return xerr_set(err, XE_NOMEM, "out of memory");
    export_ctx x = {out, at + max, from, 0};
    xerr_clear(err);
    rc = from < end && max ? store_log_read(e->txn, s->ps->name, from, 0, export_one, &x, err) : 0;
    if (rc < 0 && !err->code) rc = xerr_set(err, XE_NOMEM, "out of memory");
    if (rc < 0) return rc;
    xerr_clear(err);
    unsigned char *p = (unsigned char *)out->p + at;
    be32_put(p, SHIP_VERSION);
    uint64_t v[8] = {from,
                     end,
                     (uint64_t)s->max_ts,
                     s->rows_total,
                     s->src_pos,
                     (uint64_t)s->rejected,
                     (s->ended || s->end_pending ? SHIP_ENDED : 0) | (s->open_slice ? SHIP_OPEN_SLICE : 0) |
                         (max ? 0 : SHIP_TRIM_ONLY),
                     begin};
    for (int i = 0; i < 8; i++) be64_put(p + 4 + 8 * i, v[i]);
    be32_put(p + 4 + 64, x.n);
    /* the counters describe the whole log: a partial export says so by next < end */
    *next = x.next;
    return 0;
}

static int sum_bytes(void *ctx, uint64_t off, const void *rec, size_t n)
{
    (void)off;
    (void)rec;
    *(uint64_t *)ctx += n;
    return 0;
}

/* Trim the log below `before`; past its end (*end), the emptied log skips
 * there.  *end is the log's end after. */
static int trim_to(engine *e, stream_rt *s, uint64_t before, uint64_t *end, xerr *err)
{
    uint64_t mine;
    int rc = store_log_begin(e->txn, s->ps->name, &mine, err);
    if (rc || before <= mine) return rc;
    uint64_t gone = 0, upto = before < *end ? before : *end;
    if ((rc = store_log_read(e->txn, s->ps->name, mine, (size_t)(upto - mine), sum_bytes, &gone, err)) ||
        (rc = store_log_trim(e->txn, s->ps->name, upto, err)) ||
        (before > upto && (rc = store_log_skip(e->txn, s->ps->name, before, err))) ||
        (rc = store_log_end(e->txn, s->ps->name, end, err)))
        return rc;
    s->log_bytes = s->log_bytes > gone ? s->log_bytes - gone : 0;
    return 0;
}

/* A copy of a table's log rebuilds the table's rows from its changes, so
 * it must hold every change since the first: a copy that would begin where
 * the home's retention already let changes go is refused, not left with a
 * part of the rows. */
static int table_copy_check(engine *e, stream_rt *s, uint64_t from, xerr *err)
{
    uint64_t mine;
    int rc = store_log_end(e->txn, s->ps->name, &mine, err);
    if (rc || from <= mine) return rc;
    return xerr_set(err, XE_INVAL,
                    "table '%s': the home's log begins at change record %llu, and this copy holds %llu records; a copy of "
                    "a table needs every change since the table's start (its retention let the older ones go)",
                    s->ps->name, (unsigned long long)from, (unsigned long long)mine);
}

static int follow_record(stream_rt *s, store_txn *txn, const unsigned char *rec, size_t n, xerr *err)
{
    batch *b = &s->table->copy; /* its buffers stay for the next record */
    int rc = batch_decode((const char *)rec + LOG_HDR, n - LOG_HDR, b, err);
    if (!rc) rc = tbl_follow(s->table, txn, b, err);
    if (b->nrows > 4096) batch_fini(b); /* a big one does not stay */
    return rc;
}

/* 1: imported, and the epoch may commit now (the caller's eng_maybe_commit);
 * 0: only trimmed. */
int ship_import(engine *e, const char *stream, const void *p, size_t n, uint64_t *end, xerr *err)
{
    stream_rt *s = NULL;
    int si = stream_of(e, stream, &s, err), rc;
    if (si < 0) return si;
    const unsigned char *b = p;
    if (n < SHIP_HDR || be32_get(b) != SHIP_VERSION)
        return xerr_set(err, XE_CORRUPT, "a copy of stream '%s''s log is truncated or of another version", stream);
    uint64_t v[8];
    for (int i = 0; i < 8; i++) v[i] = be64_get(b + 4 + 8 * i);
    uint32_t nrec = be32_get(b + 4 + 64);
    /* check it all before writing anything: a refused shipment leaves the
     * epoch as it was */
    if (v[0] > (1ull << 62) || v[1] < v[0] || v[1] - v[0] < nrec)
        return xerr_set(err, XE_CORRUPT, "a copy of stream '%s''s log names offsets %llu..%llu for %u records", stream,
                        (unsigned long long)v[0], (unsigned long long)v[1], nrec);
    size_t at = SHIP_HDR;
    for (uint32_t i = 0; i < nrec; i++) {
        if (n - at < 4 || n - at - 4 < be32_get(b + at) || be32_get(b + at) < LOG_HDR)
            return xerr_set(err, XE_CORRUPT, "a copy of stream '%s''s log is truncated", stream);
        at += 4 + be32_get(b + at);
    }
    if (at != n) return xerr_set(err, XE_CORRUPT, "a copy of stream '%s''s log has %zu stray bytes", stream, n - at);
    if ((rc = eng_txn(e, err))) return rc;
    if (v[6] & SHIP_TRIM_ONLY) {
        /* a shadow fed the input: only what the home's retention let go of */
        if ((rc = store_log_end(e->txn, s->ps->name, end, err))) return rc;
        return trim_to(e, s, v[7] < *end ? v[7] : *end, end, err);
    }
    if (s->table && (rc = table_copy_check(e, s, v[0], err))) return rc;
    /* a copy never cuts a slice of its own (the idle timer would put a
     * record of ours at an offset the home fills with another) */
    s->ext_ticks = 1;
    at = SHIP_HDR;
    uint64_t off = v[0];
    for (uint32_t i = 0; i < nrec; i++, off++) {
        size_t len = be32_get(b + at);
        at += 4;
        rc = store_log_put(e->txn, s->ps->name, off, b + at, len, err);
        if (rc == XE_INVAL) {
            /* our copy ends before the home's log begins (it trimmed what we
             * missed): start again from the home's */
            uint64_t mine;
            xerr_clear(err);
            if ((rc = store_log_end(e->txn, s->ps->name, &mine, err)) ||
                (rc = store_log_trim(e->txn, s->ps->name, mine, err)))
                return rc;
            s->log_bytes = 0;
            rc = store_log_put(e->txn, s->ps->name, off, b + at, len, err);
        }
        if (rc < 0) return rc;
        if (rc == 0) {
            s->log_bytes += len;
            /* a table's rows follow its changelog */
            if (s->table && (rc = follow_record(s, e->txn, b + at, len, err))) return rc;
        }
        at += len;
    }
    if ((rc = store_log_end(e->txn, s->ps->name, end, err))) return rc;
    /* what the home's retention let go of, the copy lets go of too (its own
     * queries read nothing here, so they hold nothing back); a log the home
     * emptied ends where the home's does */
    if ((rc = trim_to(e, s, v[7], end, err))) return rc;
    if (*end == v[1]) {
        /* we hold the whole log: the counters are ours */
        s->max_ts = (int64_t)v[2];
        s->rows_total = v[3];
        s->src_pos = v[4];
        s->rejected = (int64_t)v[5];
        s->open_slice = (v[6] & SHIP_OPEN_SLICE) != 0;
        if (v[6] & SHIP_ENDED) s->ended = 1;
    }
    return 1;
}

int engine_log_needed(engine *e, const char *stream, uint64_t *from, uint64_t *end, xerr *err)
{
    stream_rt *s = NULL;
    int si = stream_of(e, stream, &s, err), rc;
    if (si < 0) return si;
    uint64_t begin;
    if ((rc = eng_txn(e, err)) || (rc = store_log_begin(e->txn, s->ps->name, &begin, err)) ||
        (rc = store_log_end(e->txn, s->ps->name, end, err)))
        return rc;
    uint64_t keep = eng_keep_from(e, si);
    *from = keep < *end ? keep : *end;
    if (*from < begin) *from = begin;
    return 0;
}

int engine_stream_source(engine *e, const char *stream, const char *uri, xerr *err)
{
    stream_rt *s = NULL;
    int si = stream_of(e, stream, &s, err);
    if (si < 0) return si;
    if (s->source) return 0;
    if (!(s->source = strdup(uri))) return xerr_set(err, XE_NOMEM, "out of memory");
    if (strncmp(uri, "file://", 7)) {
        int rc = io_source_start(e, s->ps->name, uri, err);
        if (rc) {
            free(s->source);
            s->source = NULL;
            return rc;
        }
    }
    return 0;
}

int engine_source_streams(engine *e, uint32_t qid, const char *names[ENGINE_MAX_SRC], int *nsrc, xerr *err)
{
    for (int i = 0; i < e->nqueries; i++) {
        const query *q = e->queries[i];
        if (!q->deployed || q->id != qid) continue;
        *nsrc = q->nsrc;
        for (int k = 0; k < q->nsrc; k++) names[k] = e->streams[q->src_stream[k]]->ps->name;
        return 0;
    }
    return xerr_set(err, XE_NOTFOUND, "query %u is not deployed here", qid);
}
