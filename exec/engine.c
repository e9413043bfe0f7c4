/*
 * engine.c: the engine object: catalog, statements, ingest, epochs, recovery.
 *
 * Catalog (LMDB `catalog`):  stream/<name> -> CREATE STREAM text
 *                            query/<name>  -> "<id> <CREATE QUERY text>"
 *                            setting/<key> -> value
 * Meta (LMDB `meta`):        epoch, next_query_id,
 *                            stream/<name> -> stream progress (see put_stream_meta)
 *                            query/<id>    -> offsets, counters, sink length
 *
 * Epochs: a write transaction is open while rows flow (eng_txn).  Log appends
 * and query state changes go into it; it commits when EXEC_EPOCH_BYTES have
 * been written or EXEC_EPOCH_MS have passed (checked when an input call
 * returns, so that a file source's committed position matches exactly the
 * rows it covers), when a statement changes the catalog, and at close.
 *
 * Recovery: at open the catalog is replayed: streams are re-created with their
 * progress (max event time, row count, file position), standing queries are
 * re-planned, their state loaded from LMDB, and they catch up from their
 * committed offsets to the end of their streams' logs.
 *
 * Threads: everything here runs on the caller's thread (the shell's, or a
 * node's event loop), except each file sink's writer (sink_writer), which
 * only encodes and writes the batches handed to it under its sink's mutex;
 * an epoch's commit waits for it (sink_sync).  The store syncs committed
 * epochs on a thread of its own (storage.h, store_sync_start).
 */
#include "exec/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ small helpers */

/* Log record prefix: be64 the stream's largest event time so far, be64
 * flags (LOG_WM_STEP: the watermark advanced after this record, so that a
 * replay moves it at the same points). */
#define DEFAULT_RETAIN_BYTES (256ull << 20) /* per stream */

static void notice(const exec_out *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void notice(const exec_out *out, const char *fmt, ...)
{
    if (!out || !out->notice) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    out->notice(out->ctx, buf);
}

int eng_stream_index(const engine *e, const char *name)
{
    for (int i = 0; i < e->nstreams; i++)
        if (!strcmp(e->streams[i]->ps->name, name)) return i;
    return -1;
}

static query *find_query(const engine *e, const char *name)
{
    for (int i = 0; i < e->nqueries; i++)
        if (e->queries[i]->name && !strcmp(e->queries[i]->name, name)) return e->queries[i];
    return NULL;
}

static const plan_stream *cat_find(void *ctx, const char *name)
{
    engine *e = ctx;
    int i = eng_stream_index(e, name);
    return i < 0 ? NULL : e->streams[i]->ps;
}

static void cat_each(void *ctx, void (*fn)(void *arg, const plan_stream *s), void *arg)
{
    engine *e = ctx;
    for (int i = 0; i < e->nstreams; i++) fn(arg, e->streams[i]->ps);
}

const char *engine_dir(const engine *e) { return e->dir; }

static int64_t stream_wm(const stream_rt *s)
{
    if (s->ended) return WM_END;
    if (s->guard) return s->rel_wm; /* what the queries were given */
    if (s->max_ts == WM_MIN || s->ps->ts_col < 0) return WM_MIN;
    return s->max_ts - s->ps->watermark_ms;
}

/* ------------------------------------------------------------------ epochs */

/* After a failed epoch commit the engine's memory (window state marked
 * flushed, offsets, sink lengths) is ahead of what LMDB holds, so a later
 * epoch would record positions past state it never wrote: nothing more is
 * written until a restart recovers from the last committed epoch. */
static int broken(const engine *e, xerr *err)
{
    return xerr_set(err, XE_IO, "nothing more is written after a failed commit (%s); restart to go on from the "
                    "last committed epoch", e->broken_msg);
}

static int commit_failed(engine *e, int rc, const xerr *err)
{
    if (!e->broken) snprintf(e->broken_msg, sizeof e->broken_msg, "%s", err && err->msg[0] ? err->msg : xerr_name(rc));
    e->broken = 1;
    return rc;
}

int eng_txn(engine *e, xerr *err)
{
    if (e->txn) return 0;
    if (e->broken) return broken(e, err);
    int rc = store_begin(e->st, 1, &e->txn, err);
    if (rc) return rc;
    e->epoch_start_ns = clock_mono_ns();
    return 0;
}

static int put_u64s(store_txn *t, const char *key, const uint64_t *v, int n, xerr *err)
{
    unsigned char buf[(8 + ENGINE_MAX_SRC) * 8];
    for (int i = 0; i < n; i++) be64_put(buf + 8 * i, v[i]);
    return store_kv_put(t, STORE_META, key, buf, (size_t)n * 8, err);
}

static int get_u64s(store_txn *t, const char *key, uint64_t *v, int n, sbuf *tmp, xerr *err)
{
    int rc = store_kv_get(t, STORE_META, key, tmp, err);
    if (rc) return rc;
    if (tmp->len < (size_t)n * 8) return xerr_set(err, XE_CORRUPT, "meta record '%s' is truncated", key);
    for (int i = 0; i < n; i++) v[i] = be64_get((unsigned char *)tmp->p + 8 * i);
    return 0;
}

static int put_stream_meta(engine *e, stream_rt *s, xerr *err)
{
    char key[300];
    snprintf(key, sizeof key, "stream/%s", s->ps->name);
    uint64_t v[5] = {(uint64_t)s->max_ts, s->rows_total, (uint64_t)s->rejected, s->src_pos, s->log_bytes};
    return put_u64s(e->txn, key, v, 5, err);
}

static int sink_sync(query *q, xerr *err);
static int apply_retention(engine *e, int si, xerr *err);

/* "query/<id>": the offsets of slots 0 and 1, rows in, out and late, the
 * sink's committed length, then the offsets of slots 2 and up (partitions) */
static int meta_extra(const query *q) { return q->nsrc > 2 ? q->nsrc - 2 : 0; }

static int put_query_meta(engine *e, query *q, xerr *err)
{
    char key[64];
    snprintf(key, sizeof key, "query/%u", q->id);
    uint64_t v[6 + ENGINE_MAX_SRC] = {q->offset[0], q->offset[1], (uint64_t)q->rows_in, (uint64_t)q->rows_out,
                                      (uint64_t)q->late, q->sink ? (uint64_t)q->sink->committed : 0};
    for (int k = 2; k < q->nsrc; k++) v[4 + k] = q->offset[k];
    return put_u64s(e->txn, key, v, 6 + meta_extra(q), err);
}

void engine_partition_name(const char *name, int p, char *out, size_t cap)
{
    if (p) snprintf(out, cap, "%s#%d", name, p);
    else snprintf(out, cap, "%s", name);
}

/* The number of catalog entries, kept in meta: LMDB has no page checksums,
 * and a damaged page can make catalog entries vanish without an error; the
 * count turns that into one at the next open. */
static int count_one(void *ctx, const char *key, const void *v, size_t n)
{
    (void)key; (void)v; (void)n;
    (*(uint64_t *)ctx)++;
    return 0;
}

static int catalog_count(store_txn *t, uint64_t *n, xerr *err)
{
    *n = 0;
    return store_kv_scan(t, STORE_CATALOG, "", count_one, n, err);
}

/* Commit the open epoch.  background = 1 (an epoch that ends on the data
 * path): its sync to disk runs on the store's thread while the next epoch
 * goes on, and the next commit waits for it; else the epoch is on disk when
 * this returns. */
static int commit_epoch(engine *e, int background, xerr *err)
{
    if (!e->txn) return 0;
    int rc;
    uint64_t ncat;
    if ((rc = catalog_count(e->txn, &ncat, err)) || (rc = put_u64s(e->txn, "catalog_entries", &ncat, 1, err))) goto fail;
    for (int i = 0; i < e->nqueries; i++) {
        query *q = e->queries[i];
        if (q->transient) continue;
        if ((rc = query_flush_state(q, e->txn, err))) goto fail;
        if ((rc = sink_sync(q, err))) goto fail;
        if ((rc = put_query_meta(e, q, err))) goto fail;
    }
    for (int i = 0; i < e->nstreams; i++)
        if ((rc = apply_retention(e, i, err)) || (rc = put_stream_meta(e, e->streams[i], err))) goto fail;
    e->epoch++;
    uint64_t ep = e->epoch;
    if ((rc = put_u64s(e->txn, "epoch", &ep, 1, err))) goto fail;
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
    return commit_epoch(e, 0, err);
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
        return commit_epoch(e, 1, err);
    return 0;
}

/* ------------------------------------------------------------------ sinks */

/* The output of a standing query with WITH (sink = 'file:///path'): rows are
 * written as they come; the length covered by committed epochs is recorded in
 * the epoch, and at restart the file is cut back to it, so rows of an epoch
 * that did not commit are written once, by the replay. */
static void *sink_writer(void *arg)
{
    sink_file *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->qn && !s->quit) pthread_cond_wait(&s->cv, &s->mu);
        if (!s->qn) break; /* quit with nothing left */
        batch b = s->q[s->qh];
        s->qh = (s->qh + 1) % SINK_BUFS;
        s->qn--;
        s->writing = 1;
        int failed = s->werr != 0;
        pthread_mutex_unlock(&s->mu);
        size_t at = 0;
        int en = 0;
        sbuf_reset(&s->wbuf);
        if (!failed && fmt_encode(s->enc, &b, &s->wbuf)) en = ENOMEM;
        while (!failed && !en && at < s->wbuf.len) {
            ssize_t w = write(s->fd, s->wbuf.p + at, s->wbuf.len - at);
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) {
                en = errno;
                break;
            }
            at += (size_t)w;
        }
        batch_reset(&b);
        pthread_mutex_lock(&s->mu);
        if (en && !s->werr) s->werr = en;
        s->written += (int64_t)at;
        s->spare[s->nspare++] = b;
        s->writing = 0;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Hand s->pend to the writer (waiting while SINK_BUFS are queued) and take
 * an empty batch for the next rows. */
static void sink_put(sink_file *s)
{
    if (!s->pend.nrows) return;
    pthread_mutex_lock(&s->mu);
    while (!s->nspare) pthread_cond_wait(&s->cv, &s->mu);
    s->q[(s->qh + s->qn) % SINK_BUFS] = s->pend;
    s->qn++;
    s->pend = s->spare[--s->nspare];
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* b's rows into s->pend (TEXT bytes copied), handed over by the batch. */
static int sink_rows(sink_file *s, const batch *b)
{
    if (b->ncols != s->pend.ncols) return XE_INVAL;
    for (int r = 0; r < b->nrows;) {
        int n = b->nrows - r < SINK_ROWS - s->pend.nrows ? b->nrows - r : SINK_ROWS - s->pend.nrows;
        int text = s->text;
        for (const val *v = batch_row(b, r), *end = v + (size_t)n * (size_t)b->ncols; !text && v < end; v++)
            text = v->type == TY_TEXT; /* not in the schema, but never a pointer the writer could outlive */
        if (text) {
            for (int i = 0; i < n; i++)
                if (batch_append_row(&s->pend, batch_row(b, r + i))) return XE_NOMEM;
        } else {
            if (batch_reserve(&s->pend, n)) return XE_NOMEM;
            memcpy(batch_row(&s->pend, s->pend.nrows), batch_row(b, r), (size_t)n * (size_t)b->ncols * sizeof(val));
            s->pend.nrows += n;
        }
        r += n;
        if (s->pend.nrows >= SINK_ROWS) sink_put(s);
    }
    return 0;
}

void eng_sink_close(sink_file *s)
{
    if (!s) return;
    if (s->writer_up) {
        sink_put(s);
        pthread_mutex_lock(&s->mu);
        s->quit = 1;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->writer, NULL);
    }
    if (s->fd >= 0) close(s->fd);
    for (int i = 0; i < s->nspare; i++) batch_fini(&s->spare[i]);
    for (int i = 0; i < s->qn; i++) batch_fini(&s->q[(s->qh + i) % SINK_BUFS]);
    batch_fini(&s->pend);
    sbuf_fini(&s->wbuf);
    fmt_encoder_free(s->enc);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s->path);
    free(s);
}

static int sink_open(query *q, const char *uri, const char *format, int64_t committed, xerr *err)
{
    if (!strncmp(uri, "tcp://", 6) || !strncmp(uri, "unix://", 7)) return io_sink_open(q->eng, q, uri, format, err);
    if (strncmp(uri, "file://", 7))
        return xerr_set(err, XE_INVAL, "sink '%s' must be file:///path, tcp://HOST:PORT or unix:///path", uri);
    const char *path = uri + 7;
    fmt_kind k = FMT_CSV;
    if (format && fmt_kind_parse(format, &k)) return xerr_set(err, XE_INVAL, "unknown sink format '%s'", format);
    if (k != FMT_CSV && k != FMT_JSON) return xerr_set(err, XE_INVAL, "a sink's format is csv or json");
    sink_file *s = calloc(1, sizeof *s);
    if (!s) return xerr_set(err, XE_NOMEM, "out of memory");
    s->fd = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    int nc = q->out_schema.ncols, bad = batch_init(&s->pend, nc, SINK_ROWS) != 0;
    for (int i = 0; i < SINK_BUFS; i++) bad |= batch_init(&s->spare[s->nspare++], nc, SINK_ROWS) != 0;
    for (int i = 0; i < nc; i++) s->text |= q->out_schema.types[i] == TY_TEXT || q->out_schema.types[i] == TY_NULL;
    if (bad || !(s->path = strdup(path))) {
        eng_sink_close(s);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    s->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (s->fd < 0 || ftruncate(s->fd, committed) != 0 || lseek(s->fd, committed, SEEK_SET) < 0) {
        int en = errno;
        eng_sink_close(s);
        return xerr_set(err, XE_IO, "cannot open sink file '%s': %s", path, strerror(en));
    }
    s->committed = s->base = committed;
    fmt_enc_opts eo = {0};
    eo.no_header = committed > 0;
    if (fmt_encoder_new(k, &q->out_schema, &eo, &s->enc)) {
        eng_sink_close(s);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    int rc = pthread_create(&s->writer, NULL, sink_writer, s);
    if (rc) {
        eng_sink_close(s);
        return xerr_set(err, XE_IO, "cannot start the writer of sink file '%s': %s", path, strerror(rc));
    }
    s->writer_up = 1;
    q->sink = s;
    return 0;
}

/* Every row handed to the writer is written: the epoch may record the
 * sink's length (a kill -9 then loses nothing below it). */
static int sink_sync(query *q, xerr *err)
{
    sink_file *s = q->sink;
    if (!s) return 0;
    sink_put(s);
    pthread_mutex_lock(&s->mu);
    while (s->qn || s->writing) pthread_cond_wait(&s->cv, &s->mu);
    int en = s->werr;
    int64_t at = s->base + s->written;
    pthread_mutex_unlock(&s->mu);
    if (en) {
        char full[1200];
        if (disk_full(s->path, en, full, sizeof full))
            return xerr_set(err, XE_IO, "writing sink '%s': %s", s->path, full);
        return xerr_set(err, XE_IO, "writing sink '%s': %s", s->path, strerror(en));
    }
    s->committed = at;
    return 0;
}

int query_emit(query *q, const batch *b, xerr *err)
{
    q->rows_out += b->nrows;
    if (q->limit_left >= 0) {
        q->limit_left -= b->nrows;
        if (q->limit_left <= 0) q->finished = 1;
    }
    if (q->sink && sink_rows(q->sink, b)) /* encoded and written by the sink's writer (sink_sync reports its errors) */
        return xerr_set(err, XE_NOMEM, "out of memory");
    /* a deployed query's socket sink gets its rows from the host, once it
     * dropped the repeats of a recovery (engine_deployed_sink_rows) */
    if (q->outlet && !q->deployed && io_outlet_rows(q->outlet, b)) return xerr_set(err, XE_NOMEM, "out of memory");
    for (int i = 0; i < q->nsubs; i++)
        if (io_outlet_rows(q->subs[i], b)) return xerr_set(err, XE_NOMEM, "out of memory");
    engine *e = q->eng;
    for (int i = 0; i < e->nlsubs; i++)
        if (e->lsubs[i].q == q && e->lsubs[i].out.rows) e->lsubs[i].out.rows(e->lsubs[i].out.ctx, b);
    if (q->out.rows) {
        if (!q->began && q->out.begin) q->out.begin(q->out.ctx, &q->out_schema, 1);
        q->began = 1;
        q->out.rows(q->out.ctx, b);
    }
    if (q->finished && q->transient && q->out.end) {
        q->out.end(q->out.ctx);
        q->out.end = NULL;
    }
    return 0;
}

/* ------------------------------------------------------------------ the data path */

/* A slice of a stream's rows reaches the log and every query reading it. */
static int process_rows(engine *e, int si, const batch *b, xerr *err)
{
    stream_rt *s = e->streams[si];
    int rc;
    if ((rc = eng_txn(e, err))) return rc;
    /* a log record: the slice's largest event time (for retention by time), then the batch */
    int64_t rec_ts = WM_MIN;
    if (s->ps->ts_col >= 0)
        for (int r = 0; r < b->nrows; r++) {
            const val *v = &batch_row(b, r)[s->ps->ts_col];
            if (v->type != TY_NULL && v->i > rec_ts) rec_ts = v->i;
        }
    if (rec_ts > s->max_ts) s->max_ts = rec_ts;
    sbuf_reset(&e->tmp);
    unsigned char hdr[LOG_HDR];
    int step = (s->rows_total + (uint64_t)b->nrows) % EXEC_SLICE_ROWS == 0;
    be64_put(hdr, (uint64_t)s->max_ts);
    be64_put(hdr + 8, step ? LOG_WM_STEP : 0);
    s->open_slice = !step;
    if (sbuf_add(&e->tmp, hdr, sizeof hdr) || batch_encode(b, &e->tmp)) return xerr_set(err, XE_NOMEM, "out of memory");
    uint64_t off;
    if ((rc = store_log_append(e->txn, s->ps->name, e->tmp.p, e->tmp.len, &off, err))) return rc;
    s->log_bytes += e->tmp.len;
    if (s->guard) return 0; /* the queries read it once its copy has it (engine_log_release) */
    for (int i = 0; i < e->nqueries; i++) {
        query *q = e->queries[i];
        for (int k = 0; k < q->nsrc; k++)
            if (q->src_stream[k] == si && !q->hold) {
                if ((rc = query_push(q, k, b, off + 1, err))) return rc;
                q->offset[k] = off + 1;
            }
    }
    return 0;
}

/* Advance the stream's watermark to its current value in every query. */
static int advance_wm(engine *e, int si, xerr *err)
{
    int64_t wm = stream_wm(e->streams[si]);
    int rc;
    for (int i = 0; i < e->nqueries; i++) {
        query *q = e->queries[i];
        for (int k = 0; k < q->nsrc; k++)
            if (q->src_stream[k] == si && !q->hold && (rc = query_watermark(q, k, wm, err))) return rc;
    }
    return 0;
}

/* Rows of one stream, cut into slices of exactly EXEC_SLICE_ROWS counted
 * over the stream's whole life; the watermark advances at each slice end. */
static int stream_rows(engine *e, int si, const batch *b, xerr *err)
{
    stream_rt *s = e->streams[si];
    int off = 0, rc;
    while (off < b->nrows) {
        int room = EXEC_SLICE_ROWS - (int)(s->rows_total % EXEC_SLICE_ROWS);
        int n = b->nrows - off < room ? b->nrows - off : room;
        batch view = *b;
        view.v = b->v + (size_t)off * (size_t)b->ncols;
        view.nrows = n;
        if ((rc = process_rows(e, si, &view, err))) return rc;
        s->rows_total += (uint64_t)n;
        off += n;
        if (s->rows_total % EXEC_SLICE_ROWS == 0 && !s->guard && (rc = advance_wm(e, si, err))) return rc;
    }
    return 0;
}

static int end_partial_slice(engine *e, int si, xerr *err)
{
    stream_rt *s = e->streams[si];
    if (s->rows_total % EXEC_SLICE_ROWS == 0) return 0;
    /* closing windows changes state and sinks: that belongs to an epoch */
    int rc = eng_txn(e, err);
    if (rc) return rc;
    if (s->open_slice) {
        /* an empty record marks the step for replays */
        unsigned char rec[LOG_HDR + 64];
        sbuf_reset(&e->tmp);
        be64_put(rec, (uint64_t)s->max_ts);
        be64_put(rec + 8, LOG_WM_STEP);
        batch empty = {0};
        empty.ncols = s->ps->schema.ncols;
        uint64_t off;
        if (sbuf_add(&e->tmp, rec, LOG_HDR) || batch_encode(&empty, &e->tmp)) return xerr_set(err, XE_NOMEM, "out of memory");
        if ((rc = store_log_append(e->txn, s->ps->name, e->tmp.p, e->tmp.len, &off, err))) return rc;
        s->log_bytes += e->tmp.len;
        s->open_slice = 0;
        for (int i = 0; i < e->nqueries && !s->guard; i++)
            for (int k = 0; k < e->queries[i]->nsrc; k++)
                if (e->queries[i]->src_stream[k] == si && !e->queries[i]->hold) e->queries[i]->offset[k] = off + 1;
    }
    return s->guard ? 0 : advance_wm(e, si, err);
}

int io_stream_rows(engine *e, int si, const batch *b, xerr *err)
{
    eng_span sp; /* the log append is the sources' work (ops.c) */
    eng_span_begin(e, &sp);
    int rc = stream_rows(e, si, b, err);
    eng_span_end_sources(e, si, &sp);
    return rc;
}

/* Live streams: a slice that has waited a tick ends, so the watermark moves
 * with light traffic too; then the epoch may commit. */
int io_tick(engine *e, xerr *err)
{
    int rc;
    for (int i = 0; i < e->nstreams; i++)
        if (!e->streams[i]->ext_ticks && (rc = end_partial_slice(e, i, err))) return rc;
    return eng_maybe_commit(e, err);
}

int engine_stream_tick(engine *e, const char *stream, xerr *err)
{
    int si = eng_stream_index(e, stream);
    if (si < 0) return xerr_set(err, XE_NAME, "unknown stream '%s'", stream);
    e->streams[si]->ext_ticks = 1;
    int rc = end_partial_slice(e, si, err);
    return rc ? rc : eng_maybe_commit(e, err);
}

/* A push query ends when all its sources have ended. */
static void finish_ended_push(engine *e)
{
    for (int i = 0; i < e->nqueries; i++) {
        query *q = e->queries[i];
        if (!q->transient || q->finished) continue;
        int all = 1;
        for (int k = 0; k < q->nsrc; k++)
            if (!e->streams[q->src_stream[k]]->ended) all = 0;
        if (all) q->finished = 1;
    }
    for (int i = 0; i < e->nqueries; i++) {
        query *q = e->queries[i];
        if (q->transient && q->finished) {
            if (!q->began && q->out.begin) q->out.begin(q->out.ctx, &q->out_schema, 1);
            if (q->out.end) q->out.end(q->out.ctx);
            query_free(q);
            memmove(&e->queries[i], &e->queries[i + 1], (size_t)(e->nqueries - i - 1) * sizeof *e->queries);
            e->nqueries--;
            i--;
        }
    }
}

static int stream_parts(const engine *e, int si, int ix[PLAN_MAX_PARTITIONS]);

static int end_one(engine *e, int si, xerr *err);

/* The end of stream si; a partitioned stream's end ends every partition
 * (each also ends alone: an ingest into "s#p", or "s#0" for the first). */
static int end_stream(engine *e, int si, xerr *err)
{
    int ix[PLAN_MAX_PARTITIONS], np = stream_parts(e, si, ix), rc;
    for (int p = 1; p < np; p++)
        if ((rc = end_one(e, ix[p], err))) return rc;
    return end_one(e, si, err);
}

static int end_one(engine *e, int si, xerr *err)
{
    int rc;
    if ((rc = eng_txn(e, err))) return rc;
    if (e->streams[si]->guard) {
        e->streams[si]->end_pending = 1; /* the queries see the end with the last record */
        return 0;
    }
    e->streams[si]->ended = 1;
    if ((rc = advance_wm(e, si, err))) return rc;
    finish_ended_push(e);
    return 0;
}

int engine_push_active(const engine *e)
{
    int n = e->nlsubs;
    for (int i = 0; i < e->nqueries; i++)
        if (e->queries[i]->transient && !e->queries[i]->finished) n++;
    return n;
}

void engine_cancel_push(engine *e)
{
    for (int i = 0; i < e->nlsubs; i++)
        if (e->lsubs[i].out.end) e->lsubs[i].out.end(e->lsubs[i].out.ctx);
    e->nlsubs = 0;
    for (int i = 0; i < e->nqueries; i++)
        if (e->queries[i]->transient) e->queries[i]->finished = 1;
    finish_ended_push(e);
}

/* ------------------------------------------------------------------ ingest */

struct exec_ingest {
    engine *e;
    int si;
    int alone; /* opened as "s#0": partition 0 alone, whose end ends no other */
    fmt_kind kind;
    fmt_dec_opts d;  /* the decoder's options (a file source's header probe takes them too) */
    fmt_decoder *dec;
    batch b;
    exec_ingest_opts o;
    /* per query of the stream when the ingest began: its id and late count,
     * so that the rows this ingest lost as late are told to its sender */
    int nq;
    uint32_t *qid;
    int64_t *late0;
    char note[160];  /* d.kind_note */
    char *null_string; /* a copy of opts' */
};

static int reads_stream(const query *q, int si)
{
    for (int k = 0; k < q->nsrc; k++)
        if (q->src_stream[k] == si) return 1;
    return 0;
}

/* The rows of this ingest that a query dropped as late: the most any query
 * of the stream dropped since the ingest began (a row late for two queries
 * counts once; rows are counted where the tasks that drop them run). */
static int64_t ingest_late(const exec_ingest *in, int *partial)
{
    int64_t most = 0;
    *partial = 0;
    for (int i = 0; i < in->e->nqueries; i++) {
        const query *q = in->e->queries[i];
        for (int j = 0; j < in->nq; j++)
            if (in->qid[j] == q->id && q->late + q->late_sent - in->late0[j] > most)
                most = q->late + q->late_sent - in->late0[j];
        /* a window task elsewhere (a cluster) fed by tasks elsewhere, or a
         * join task elsewhere, counts its drops there only */
        for (int o = 0; o < q->dag->nops && reads_stream(q, in->si); o++) {
            const opinst *x = &q->ops[o];
            int remote = 0, up_remote = 0;
            for (int t = 0; (x->agg || x->join) && t < x->ntasks; t++) remote |= !task_local(q, x, t);
            for (int u = 0; remote && u < q->dag->nops; u++)
                for (int t = 0; q->ops[u].down == x && t < q->ops[u].ntasks; t++) up_remote |= !task_local(q, &q->ops[u], t);
            if (remote && (x->join || up_remote)) *partial = 1;
        }
    }
    return most;
}

void eng_dec_opts(const stream_rt *s, fmt_dec_opts *d)
{
    memset(d, 0, sizeof *d);
    d->delim = s->delim;
    d->null_string = s->null_string;
    d->time_col = s->ps->ts_col + 1;
    /* a socket's producer cannot choose: the stream's WITH says */
    d->kind_note = s->kind == FMT_CSV ? "the stream's format is csv (format = 'json' in its WITH reads JSON)"
                                      : "the stream's format is json (format = 'csv' in its WITH reads CSV)";
}

int exec_ingest_open(engine *e, const char *stream, const exec_ingest_opts *opts, exec_ingest **out, xerr *err)
{
    *out = NULL;
    int si = eng_stream_index(e, stream), alone = 0;
    size_t sl = strlen(stream);
    if (si < 0 && sl > 2 && !strcmp(stream + sl - 2, "#0") && sl < 300) {
        /* "s#0": partition 0 alone (its end does not end the others) */
        char base[300];
        snprintf(base, sizeof base, "%.*s", (int)(sl - 2), stream);
        if ((si = eng_stream_index(e, base)) >= 0) alone = 1;
    }
    if (si < 0) return xerr_set(err, XE_NAME, "unknown stream '%s'", stream);
    exec_ingest *in = calloc(1, sizeof *in);
    if (!in) return xerr_set(err, XE_NOMEM, "out of memory");
    in->e = e;
    in->si = si;
    in->alone = alone;
    if (opts) in->o = *opts;
    stream_rt *s = e->streams[si];
    in->kind = in->o.format_set ? in->o.format : s->kind;
    fmt_dec_opts *d = &in->d;
    eng_dec_opts(s, d);
    d->header = in->o.header;
    if (in->o.delim) d->delim = in->o.delim;
    if (in->o.null_string && !(d->null_string = in->null_string = strdup(in->o.null_string))) {
        free(in);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    in->o.null_string = NULL; /* the caller's may go (a wire message's) */
    d->on_reject = in->o.on_reject;
    d->on_notice = in->o.on_notice;
    d->ctx = in->o.ctx;
    /* a line that looks like the other format: what to do about it */
    const char *other = in->kind == FMT_CSV ? "json" : "csv";
    if (in->o.format_set)
        snprintf(in->note, sizeof in->note, "it is read as %s, the format asked for", fmt_kind_name(in->kind));
    else
        snprintf(in->note, sizeof in->note, "the stream's format is %s: use --input-format %s or \\copy ... (format %s)",
                 fmt_kind_name(in->kind), other, other);
    d->kind_note = in->note;
    char why[200];
    int rc = 0;
    if (in->kind != FMT_CSV && in->kind != FMT_JSON) {
        rc = xerr_set(err, XE_INVAL, "input format must be csv or json");
        goto fail;
    }
    if (fmt_check_input_opts(in->kind, in->o.delim || in->null_string, d->delim, d->null_string, why, sizeof why)) {
        rc = xerr_set(err, XE_INVAL, "stream '%s': %s", stream, why);
        goto fail;
    }
    if (in->kind != FMT_CSV) d->delim = 0, d->null_string = NULL; /* the stream's CSV options, read as JSON */
    in->qid = calloc((size_t)e->nqueries + 1, sizeof *in->qid);
    in->late0 = calloc((size_t)e->nqueries + 1, sizeof *in->late0);
    if (!in->qid || !in->late0 || fmt_decoder_new(in->kind, &s->fs, d, &in->dec) ||
        batch_init(&in->b, s->ps->schema.ncols, 1024)) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < e->nqueries; i++)
        if (reads_stream(e->queries[i], si)) {
            in->qid[in->nq] = e->queries[i]->id;
            in->late0[in->nq++] = e->queries[i]->late + e->queries[i]->late_sent;
        }
    *out = in;
    return 0;
fail:
    fmt_decoder_free(in->dec);
    free(in->qid);
    free(in->late0);
    free(in->null_string);
    free(in);
    return rc;
}

static int ingest_flush(exec_ingest *in, xerr *err)
{
    int rc = 0;
    if (in->b.nrows) rc = stream_rows(in->e, in->si, &in->b, err);
    batch_reset(&in->b);
    return rc;
}

int exec_ingest_feed(exec_ingest *in, const void *p, size_t n, xerr *err)
{
    const char *c = p;
    int rc = 0;
    eng_span sp; /* decoding and the log append are the sources' work (ops.c) */
    eng_span_begin(in->e, &sp);
    /* decode in pieces so that a batch stays around a slice */
    while (n && !rc) {
        size_t k = n < 65536 ? n : 65536;
        if (!(rc = fmt_decode(in->dec, c, k, &in->b, err))) rc = ingest_flush(in, err);
        c += k;
        n -= k;
    }
    eng_span_end_sources(in->e, in->si, &sp);
    return rc ? rc : eng_maybe_commit(in->e, err);
}

int exec_ingest_close(exec_ingest *in, int end_of_stream, exec_ingest_stats *st, xerr *err)
{
    int rc = fmt_decode_finish(in->dec, &in->b, err);
    if (!rc) rc = ingest_flush(in, err);
    fmt_dec_stats ds = fmt_decoder_stats(in->dec);
    in->e->streams[in->si]->rejected += ds.rejected;
    if (st) {
        st->lines = ds.lines;
        st->rows = ds.rows;
        st->rejected = ds.rejected;
    }
    if (!rc) rc = end_partial_slice(in->e, in->si, err);
    if (!rc && end_of_stream) rc = in->alone ? end_one(in->e, in->si, err) : end_stream(in->e, in->si, err);
    if (!rc) rc = engine_commit(in->e, err);
    if (st) st->late = ingest_late(in, &st->late_partial);
    fmt_decoder_free(in->dec);
    batch_fini(&in->b);
    free(in->qid);
    free(in->late0);
    free(in->null_string);
    free(in);
    return rc;
}

int exec_ingest_idle(exec_ingest *in, xerr *err)
{
    if (in->e->streams[in->si]->ext_ticks) return 0;
    int rc = end_partial_slice(in->e, in->si, err);
    return rc ? rc : commit_epoch(in->e, 1, err);
}

int exec_ingest_save(const exec_ingest *in, sbuf *out)
{
    return fmt_decoder_save(in->dec, out);
}

int exec_ingest_load(exec_ingest *in, const void *p, size_t n, xerr *err)
{
    return fmt_decoder_load(in->dec, p, n, err);
}

int engine_push_rows(engine *e, const char *stream, const batch *b, xerr *err)
{
    int si = eng_stream_index(e, stream);
    if (si < 0) return xerr_set(err, XE_NAME, "unknown stream '%s'", stream);
    if (b->ncols != e->streams[si]->ps->schema.ncols)
        return xerr_set(err, XE_INVAL, "stream '%s' has %d columns, the batch %d", stream,
                        e->streams[si]->ps->schema.ncols, b->ncols);
    eng_span sp; /* the log append is the sources' work (ops.c) */
    eng_span_begin(e, &sp);
    int rc = stream_rows(e, si, b, err);
    eng_span_end_sources(e, si, &sp);
    return rc ? rc : eng_maybe_commit(e, err);
}

int engine_end_stream(engine *e, const char *stream, xerr *err)
{
    int si = eng_stream_index(e, stream);
    if (si < 0) return xerr_set(err, XE_NAME, "unknown stream '%s'", stream);
    int rc = end_partial_slice(e, si, err);
    if (!rc) rc = end_stream(e, si, err);
    if (!rc) rc = engine_commit(e, err);
    return rc;
}

/* ------------------------------------------------------------------ file sources */

static int run_file_source(engine *e, int si, int64_t *rows, xerr *err)
{
    stream_rt *s = e->streams[si];
    if (s->ended || !s->source || strncmp(s->source, "file://", 7)) return 0;
    const char *path = s->source + 7;
    FILE *f = fopen(path, "rb");
    if (!f) return xerr_set(err, XE_IO, "source of stream '%s': cannot open '%s': %s", s->ps->name, path, strerror(errno));
    exec_ingest_opts io = {0}; /* the stream's format and options */
    exec_ingest *in;
    int rc = exec_ingest_open(e, s->ps->name, &io, &in, err);
    if (rc) { fclose(f); return rc; }
    char *buf = malloc(1 << 20);
    size_t have = 0;
    uint64_t fed = s->src_pos; /* bytes of the file given to the decoder */
    if (!buf) { rc = xerr_set(err, XE_NOMEM, "out of memory"); goto out; }
    /* Resuming in the middle: a CSV header on the first line still applies. */
    if (s->src_pos > 0) {
        char *line = NULL;
        size_t cap = 0;
        ssize_t len = getline(&line, &cap, f);
        if (len > 0 && in->kind == FMT_CSV) {
            fmt_decoder *probe;
            batch pb;
            fmt_dec_opts po = in->d;
            po.on_reject = po.on_notice = NULL;
            if (!fmt_decoder_new(FMT_CSV, &s->fs, &po, &probe) && !batch_init(&pb, s->fs.ncols, 4)) {
                xerr e2;
                fmt_decode(probe, line, (size_t)len, &pb, &e2);
                fmt_dec_stats ps = fmt_decoder_stats(probe);
                if (ps.rows == 0 && ps.rejected == 0) fmt_decode(in->dec, line, (size_t)len, &in->b, &e2);
                batch_fini(&pb);
                fmt_decoder_free(probe);
            }
        }
        free(line);
        if (fseeko(f, (off_t)s->src_pos, SEEK_SET) != 0) {
            rc = xerr_set(err, XE_IO, "source '%s': cannot seek to %llu", path, (unsigned long long)s->src_pos);
            goto out;
        }
    }
    for (;;) {
        size_t got = fread(buf + have, 1, (1 << 20) - have, f);
        have += got;
        if (have == 0) break;
        /* feed only whole lines, so the committed position is a line boundary */
        size_t upto = have;
        if (got > 0) {
            while (upto > 0 && buf[upto - 1] != '\n') upto--;
            if (upto == 0 && have < (1 << 20)) continue;
            if (upto == 0) upto = have;
        }
        int64_t before = s->rows_total;
        if ((rc = fmt_decode(in->dec, buf, upto, &in->b, err)) || (rc = ingest_flush(in, err))) goto out;
        *rows += (int64_t)(s->rows_total - (uint64_t)before);
        /* the position committed is a record's start: a quoted field may
         * run on past the line end, and a restart reads its record again */
        fed += upto;
        s->src_pos = fed - fmt_decoder_pending(in->dec);
        memmove(buf, buf + upto, have - upto);
        have -= upto;
        if ((rc = eng_maybe_commit(e, err))) goto out;
        if (got == 0 && have == 0) break;
        if (got == 0) {
            /* a last line without a newline */
            if ((rc = fmt_decode(in->dec, buf, have, &in->b, err))) goto out;
            fed += have;
            s->src_pos = fed; /* exec_ingest_close finishes what is pending */
            have = 0;
            break;
        }
    }
out:
    free(buf);
    fclose(f);
    {
        xerr e2;
        int rc2 = exec_ingest_close(in, rc == 0, NULL, rc ? &e2 : err);
        if (!rc) rc = rc2;
    }
    return rc;
}

int engine_run_file_sources(engine *e, int64_t *rows, xerr *err)
{
    int64_t n = 0;
    for (int i = 0; i < e->nstreams; i++) {
        int rc = run_file_source(e, i, &n, err);
        if (rc) return rc;
    }
    if (rows) *rows = n;
    return 0;
}

/* ------------------------------------------------------------------ streams */

static void stream_free(stream_rt *s)
{
    if (!s) return;
    plan_stream_free(s->ps);
    free(s->sql);
    free(s->source);
    free(s->format);
    free(s->null_string);
    free(s->names);
    free(s->types);
    free(s);
}

/* retention = '512 MB' (size: B, KB, MB, GB) or '2 hours' (time behind the watermark) */
static int parse_retention(const char *v, stream_rt *s, xerr *err)
{
    char *end;
    double n = strtod(v, &end);
    while (*end == ' ') end++;
    static const struct { const char *u; double m; } units[] = {
        {"b", 1}, {"bytes", 1}, {"kb", 1024}, {"mb", 1048576}, {"gb", 1073741824.0}};
    for (size_t i = 0; end != v && n > 0 && i < sizeof units / sizeof units[0]; i++)
        if (!strcasecmp(end, units[i].u)) {
            s->retain_bytes = (uint64_t)(n * units[i].m);
            return 0;
        }
    xerr e2;
    int64_t ms;
    if (plan_parse_interval(v, &ms, &e2) == 0 && ms > 0) {
        s->retain_ms = ms;
        return 0;
    }
    return xerr_set(err, XE_INVAL, "retention '%s' is neither a size ('512 MB') nor an interval ('2 hours')", v);
}

typedef struct trim_ctx {
    stream_rt *s;
    int64_t cutoff;     /* records whose events all precede this may go */
    uint64_t keep_from; /* first offset still needed by a query */
    uint64_t until;     /* trim offsets below this */
    uint64_t bytes;     /* bytes those records hold */
} trim_ctx;

static int trim_one(void *ctx, uint64_t off, const void *rec, size_t n)
{
    trim_ctx *t = ctx;
    if (off >= t->keep_from) return 1;
    int64_t ts = n >= LOG_HDR ? (int64_t)be64_get(rec) : WM_MIN;
    int over_size = t->s->log_bytes - t->bytes > t->s->retain_bytes;
    int too_old = t->s->retain_ms && t->cutoff != WM_MIN && ts < t->cutoff;
    if (!over_size && !too_old) return 1;
    t->until = off + 1;
    t->bytes += n;
    return 0;
}

uint64_t eng_keep_from(const engine *e, int si)
{
    uint64_t from = UINT64_MAX;
    for (int i = 0; i < e->nqueries; i++)
        for (int k = 0; k < e->queries[i]->nsrc; k++) {
            const query *q = e->queries[i];
            if (q->src_stream[k] != si || q->transient) continue;
            /* a query placed by a cluster may be replayed after a failure
             * (exec/ft.c): from what its replicas acknowledged, or the start */
            uint64_t keep = q->offset[k];
            if (q->deployed && ft_keep_from(q, k) < keep) keep = ft_keep_from(q, k);
            if (keep < from) from = keep;
        }
    return from;
}

/* Retention: drop the oldest records beyond the stream's size or time
 * limit, never one a standing query has not consumed yet. */
static int apply_retention(engine *e, int si, xerr *err)
{
    stream_rt *s = e->streams[si];
    int64_t wm = stream_wm(s);
    int64_t cutoff = s->retain_ms && wm != WM_MIN && wm != WM_END ? wm - s->retain_ms : WM_MIN;
    if (s->log_bytes <= s->retain_bytes && cutoff == WM_MIN) return 0;
    trim_ctx t = {s, cutoff, eng_keep_from(e, si), 0, 0};
    uint64_t begin;
    int rc = store_log_begin(e->txn, s->ps->name, &begin, err);
    if (!rc) rc = store_log_read(e->txn, s->ps->name, begin, 0, trim_one, &t, err);
    if (rc > 0) rc = 0; /* trim_one stopped the scan */
    if (!rc && t.until > begin) {
        rc = store_log_trim(e->txn, s->ps->name, t.until, err);
        if (!rc) s->log_bytes -= t.bytes;
    }
    return rc;
}

static int stream_add(engine *e, const ast_stmt *st, const char *sql, xerr *err)
{
    plan_stream *ps;
    int rc = plan_stream_from_ast(st, &ps, err);
    if (rc) return rc;
    stream_rt *s = calloc(1, sizeof *s);
    if (!s) { plan_stream_free(ps); return xerr_set(err, XE_NOMEM, "out of memory"); }
    s->ps = ps;
    s->max_ts = WM_MIN;
    s->sql = strdup(sql);
    const ast_option *o;
    s->retain_bytes = DEFAULT_RETAIN_BYTES;
    if ((o = ast_option_get(st->with, "retention")) && (rc = parse_retention(o->value, s, err))) {
        err->line = o->line;
        err->col = o->col;
        stream_free(s);
        return rc;
    }
    if ((o = ast_option_get(st->with, "source"))) s->source = strdup(o->value);
    if ((o = ast_option_get(st->with, "format"))) s->format = strdup(o->value);
    if (s->format) fmt_kind_parse(s->format, &s->kind); /* create_stream checked it */
    if ((o = ast_option_get(st->with, "delimiter"))) {
        char why[160];
        fmt_parse_delim(o->value, &s->delim, why, sizeof why);
    }
    if ((o = ast_option_get(st->with, "null_string")) && !(s->null_string = strdup(o->value))) {
        stream_free(s);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    s->names = calloc((size_t)ps->schema.ncols, sizeof *s->names);
    s->types = calloc((size_t)ps->schema.ncols, sizeof *s->types);
    stream_rt **v = realloc(e->streams, (size_t)(e->nstreams + 1) * sizeof *v);
    if (!s->sql || !s->names || !s->types || !v) {
        free(v == e->streams ? NULL : NULL);
        if (v) e->streams = v;
        stream_free(s);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    for (int i = 0; i < ps->schema.ncols; i++) {
        s->names[i] = ps->schema.cols[i].name;
        s->types[i] = ps->schema.cols[i].type;
    }
    s->fs = (fmt_schema){ps->schema.ncols, s->names, s->types};
    e->streams = v;
    e->streams[e->nstreams++] = s;
    return 0;
}

/* A stream and, WITH (partitions = P), its partitions 1 .. P-1: streams of
 * their own ("name#p"), each with its log, watermark and counters, that a
 * query over the stream reads with a source task each. */
static int streams_add(engine *e, const ast_stmt *st, const char *sql, xerr *err)
{
    int before = e->nstreams, rc = stream_add(e, st, sql, err);
    int np = rc ? 0 : e->streams[before]->ps->partitions;
    for (int p = 1; !rc && p < np; p++) {
        if ((rc = stream_add(e, st, sql, err))) break;
        plan_stream *ps = e->streams[e->nstreams - 1]->ps;
        char name[300];
        engine_partition_name(st->name, p, name, sizeof name);
        char *nm = strdup(name);
        if (!nm) {
            rc = xerr_set(err, XE_NOMEM, "out of memory");
            break;
        }
        free(ps->name);
        ps->name = nm;
        ps->partitions = 1;
    }
    if (rc)
        while (e->nstreams > before) stream_free(e->streams[--e->nstreams]);
    return rc;
}

/* The partitions of stream si (itself first): their indexes into ix, the count returned. */
static int stream_parts(const engine *e, int si, int ix[PLAN_MAX_PARTITIONS])
{
    int np = e->streams[si]->ps->partitions, n = 0;
    ix[n++] = si;
    for (int p = 1; p < np; p++) {
        char name[300];
        engine_partition_name(e->streams[si]->ps->name, p, name, sizeof name);
        int x = eng_stream_index(e, name);
        if (x >= 0) ix[n++] = x;
    }
    return n;
}

/* home: a cluster's choice of the node that keeps the log (cluster/coord.c);
 * an embedded engine is its own home and ignores it; partitions: see
 * streams_add */
static const char *known_stream_options[] = {"timestamp", "watermark", "source", "format", "retention",
                                             "delimiter", "null_string", "home", "partitions", NULL};
static const char *known_query_options[] = {"parallelism", "sink", "format", "placement", "ft", "replicas",
                                            "checkpoint_interval", NULL};

static int check_options(const ast_options *w, const char **known, const char *what, xerr *err)
{
    for (int i = 0; w && i < w->n; i++) {
        int ok = 0;
        for (int k = 0; known[k]; k++)
            if (!strcasecmp(known[k], w->v[i].key)) ok = 1;
        if (!ok) {
            char list[256] = "";
            for (int k = 0; known[k]; k++) {
                size_t l = strlen(list);
                snprintf(list + l, sizeof list - l, "%s%s", k ? ", " : "", known[k]);
            }
            return xerr_at(err, XE_INVAL, w->v[i].key_line, w->v[i].key_col, "unknown %s option '%s' (known: %s)", what,
                           w->v[i].key, list);
        }
    }
    return 0;
}

/* delimiter and null_string: their values, and that they fit the format. */
static int check_input_options(const ast_options *w, fmt_kind k, xerr *err)
{
    const ast_option *d = ast_option_get(w, "delimiter"), *n = ast_option_get(w, "null_string");
    char why[200], delim = 0;
    if (d && fmt_parse_delim(d->value, &delim, why, sizeof why)) return xerr_at(err, XE_INVAL, d->line, d->col, "%s", why);
    if (fmt_check_input_opts(k, d || n, delim, n ? n->value : NULL, why, sizeof why)) {
        const ast_option *at = k != FMT_CSV ? (d ? d : n) : n;
        return xerr_at(err, XE_INVAL, at->line, at->col, "%s", why);
    }
    return 0;
}

static int create_stream(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    int rc;
    if (eng_stream_index(e, st->name) >= 0) {
        if (st->if_not_exists) {
            notice(out, "stream '%s' already exists, skipping", st->name);
            return 0;
        }
        return xerr_at(err, XE_EXISTS, st->line, st->col, "stream '%s' already exists", st->name);
    }
    if ((rc = check_options(st->with, known_stream_options, "stream", err))) return rc;
    const ast_option *o = ast_option_get(st->with, "source");
    int live = 0;
    if (o) {
        if (!strncmp(o->value, "tcp://", 6) || !strncmp(o->value, "unix://", 7)) live = 1;
        else if (strncmp(o->value, "file://", 7))
            return xerr_at(err, XE_INVAL, o->line, o->col, "source '%s' must be tcp://HOST:PORT, unix:///path or file:///path",
                           o->value);
    }
    o = ast_option_get(st->with, "format");
    fmt_kind k = FMT_CSV;
    if (o && (fmt_kind_parse(o->value, &k) || (k != FMT_CSV && k != FMT_JSON)))
        return xerr_at(err, XE_INVAL, o->line, o->col, "format '%s' is not an input format (csv or json)", o->value);
    if ((rc = check_input_options(st->with, k, err))) return rc;
    const ast_option *po = ast_option_get(st->with, "partitions");
    if (po && strcmp(po->value, "1") && ast_option_get(st->with, "source"))
        return xerr_at(err, XE_INVAL, po->line, po->col,
                       "a stream read from a source has one partition (its home reads the source)");
    int first = e->nstreams;
    if ((rc = streams_add(e, st, st->text ? st->text : "", err))) return rc;
    stream_rt *s = e->streams[first];
    if (live && (rc = io_source_start(e, s->ps->name, s->source, err))) {
        const ast_option *so = ast_option_get(st->with, "source");
        err->line = so->line;
        err->col = so->col;
        e->nstreams--;
        stream_free(s);
        return rc;
    }
    char key[300];
    snprintf(key, sizeof key, "stream/%s", st->name);
    rc = eng_txn(e, err);
    for (int i = first; !rc && i < e->nstreams; i++) rc = store_log_create(e->txn, e->streams[i]->ps->name, err);
    if (rc || (rc = store_kv_put(e->txn, STORE_CATALOG, key, s->sql, strlen(s->sql), err)) ||
        (rc = engine_commit(e, err))) {
        if (live) io_source_stop(e, s->ps->name);
        while (e->nstreams > first) stream_free(e->streams[--e->nstreams]);
        return rc;
    }
    if (live) notice(out, "CREATE STREAM (listening on %s)", s->source);
    else if (e->nstreams - first > 1) notice(out, "CREATE STREAM (%d partitions)", e->nstreams - first);
    else notice(out, "CREATE STREAM");
    return 0;
}

/* ------------------------------------------------------------------ queries */

static int get_setting_int(const ast_options *w, const char *key, int def, int lo, int hi, int *out, xerr *err)
{
    const ast_option *o = ast_option_get(w, key);
    if (!o) { *out = def; return 0; }
    char *end;
    long v = strtol(o->value, &end, 10);
    if (*end || v < lo || v > hi)
        return xerr_at(err, XE_INVAL, o->line, o->col, "option %s = '%s' must be an integer from %d to %d", key, o->value,
                       lo, hi);
    *out = (int)v;
    return 0;
}

/* Plan and start a query.  sel is the SELECT, w its WITH options. */
static int query_new(engine *e, const ast_select *sel, const ast_options *w, const char *name, const char *sql,
                     uint32_t id, query **out, xerr *err)
{
    *out = NULL;
    plan_opts po = {e->parallelism};
    int rc;
    if ((rc = get_setting_int(w, "parallelism", e->parallelism, 1, 64, &po.parallelism, err))) return rc;
    plan_dag *d;
    if ((rc = plan_query(sel, &e->cat, &po, &d, err))) return rc;
    query *q = calloc(1, sizeof *q);
    if (!q) { plan_free(d); return xerr_set(err, XE_NOMEM, "out of memory"); }
    q->dag = d;
    q->id = id;
    q->name = name ? strdup(name) : NULL;
    q->sql = sql ? strdup(sql) : NULL;
    const ast_option *so = ast_option_get(w, "sink"), *fo = ast_option_get(w, "format");
    if ((so && !(q->sink_uri = strdup(so->value))) || (so && fo && !(q->sink_format = strdup(fo->value)))) {
        query_free(q);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    if ((rc = query_start(e, q, err))) { query_free(q); return rc; }
    /* new queries read from the end of their streams' logs */
    for (int k = 0; k < q->nsrc; k++) {
        stream_rt *s = e->streams[q->src_stream[k]];
        int own = !e->txn;
        if (own && (rc = store_begin(e->st, 0, &e->txn, err))) { query_free(q); return rc; }
        rc = store_log_end(e->txn, s->ps->name, &q->offset[k], err);
        if (own) { store_abort(e->txn); e->txn = NULL; }
        if (rc) { query_free(q); return rc; }
    }
    *out = q;
    return 0;
}

static int add_query(engine *e, query *q, xerr *err)
{
    query **v = realloc(e->queries, (size_t)(e->nqueries + 1) * sizeof *v);
    if (!v) return xerr_set(err, XE_NOMEM, "out of memory");
    e->queries = v;
    e->queries[e->nqueries++] = q;
    return 0;
}

static int create_query(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    int rc;
    if (find_query(e, st->name)) {
        if (st->if_not_exists) {
            notice(out, "query '%s' already exists, skipping", st->name);
            return 0;
        }
        return xerr_at(err, XE_EXISTS, st->line, st->col, "query '%s' already exists", st->name);
    }
    if ((rc = check_options(st->with, known_query_options, "query", err))) return rc;
    const ast_option *fto = ast_option_get(st->with, "ft"), *cio = ast_option_get(st->with, "checkpoint_interval");
    engine_ft ft;
    int64_t ms;
    xerr e2;
    if (fto && engine_ft_parse(fto->value, &ft))
        return xerr_at(err, XE_INVAL, fto->line, fto->col,
                       "ft must be 'replica', 'checkpoint', 'upstream' or 'none', not '%s'", fto->value);
    if (cio && (plan_parse_interval(cio->value, &ms, &e2) || ms <= 0))
        return xerr_at(err, XE_INVAL, cio->line, cio->col,
                       "checkpoint_interval must be a positive interval such as '5 seconds', not '%s'", cio->value);
    const ast_option *so = ast_option_get(st->with, "sink"), *fo = ast_option_get(st->with, "format");
    fmt_kind fk;
    if (fo && (fmt_kind_parse(fo->value, &fk) || (fk != FMT_CSV && fk != FMT_JSON)))
        return xerr_at(err, XE_INVAL, fo->line, fo->col, "unknown sink format '%s' (csv or json)", fo->value);
    query *q;
    if ((rc = engine_commit(e, err))) return rc;
    if ((rc = query_new(e, st->select, st->with, st->name, st->text ? st->text : "", e->next_query_id, &q, err)))
        return rc;
    if (so && (rc = sink_open(q, so->value, fo ? fo->value : NULL, 0, err))) {
        err->line = so->line;
        err->col = so->col;
        query_free(q);
        return rc;
    }
    char key[300];
    snprintf(key, sizeof key, "query/%s", st->name);
    sbuf v;
    sbuf_init(&v);
    sbuf_printf(&v, "%u %s", q->id, q->sql);
    uint64_t nid = e->next_query_id + 1;
    if ((rc = add_query(e, q, err))) { sbuf_fini(&v); query_free(q); return rc; }
    if ((rc = eng_txn(e, err)) || (rc = store_kv_put(e->txn, STORE_CATALOG, key, v.p, v.len, err)) ||
        (rc = put_u64s(e->txn, "next_query_id", &nid, 1, err)) || (rc = engine_commit(e, err))) {
        sbuf_fini(&v);
        e->nqueries--;
        query_free(q);
        return rc;
    }
    sbuf_fini(&v);
    e->next_query_id++;
    /* a query over a stream that has already ended sees the end at once */
    for (int k = 0; k < q->nsrc; k++)
        if ((rc = query_watermark(q, k, stream_wm(e->streams[q->src_stream[k]]), err))) return rc;
    notice(out, "CREATE QUERY");
    return 0;
}

/* A bounded stream (a file source, or an input that has ended) has in its
 * log all it will get, or will get the rest from where its source stopped:
 * a push query reads it from the start of the log, so that a SELECT run
 * again answers as the first one did (the file is not read twice; the
 * recorded watermark steps replay, so the same rows are late).  New rows
 * of an unbounded stream are what a push query waits for, as in ksqlDB.
 * *rewound: some source was. */
static int rewind_bounded(engine *e, query *q, const exec_out *out, int *rewound, xerr *err)
{
    *rewound = 0;
    for (int k = 0; k < q->nsrc; k++) {
        stream_rt *s = e->streams[q->src_stream[k]];
        int file = s->source && !strncmp(s->source, "file://", 7);
        if (s->guard || !(file || s->ended)) continue;
        uint64_t begin, end;
        int rc = eng_txn(e, err);
        if (!rc) rc = store_log_begin(e->txn, s->ps->name, &begin, err);
        if (!rc) rc = store_log_end(e->txn, s->ps->name, &end, err);
        if (rc) return rc;
        if (begin > 0)
            notice(out, "stream '%s': retention has dropped the %llu oldest of its %llu log records; "
                        "this query reads only the rows that came after them", s->ps->name,
                   (unsigned long long)begin, (unsigned long long)end);
        q->offset[k] = begin;
        *rewound = 1;
    }
    return 0;
}

static int push_query(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    query *q;
    int rc = query_new(e, st->select, NULL, NULL, st->text, 0, &q, err);
    if (rc) return rc;
    q->transient = 1;
    if (out) q->out = *out;
    if ((rc = add_query(e, q, err))) { query_free(q); return rc; }
    if (q->out.begin) q->out.begin(q->out.ctx, &q->out_schema, 1);
    q->began = 1;
    int rewound;
    if ((rc = rewind_bounded(e, q, out, &rewound, err))) return rc;
    if (rewound && (rc = eng_catch_up(e, q, err))) return rc;
    for (int k = 0; k < q->nsrc && !rewound; k++)
        if ((rc = query_watermark(q, k, stream_wm(e->streams[q->src_stream[k]]), err))) return rc;
    finish_ended_push(e);
    return 0;
}

static void detach_query_io(engine *e, query *q)
{
    if (q->outlet) io_outlet_close(e, q->outlet);
    while (q->nsubs) io_outlet_close(e, q->subs[0]);
    free(q->subs);
    q->subs = NULL;
    for (int i = 0; i < e->nlsubs; i++)
        if (e->lsubs[i].q == q) {
            if (e->lsubs[i].out.end) e->lsubs[i].out.end(e->lsubs[i].out.ctx);
            e->lsubs[i--] = e->lsubs[--e->nlsubs];
        }
}

static void remove_query(engine *e, query *q)
{
    detach_query_io(e, q);
    for (int i = 0; i < e->nqueries; i++)
        if (e->queries[i] == q) {
            memmove(&e->queries[i], &e->queries[i + 1], (size_t)(e->nqueries - i - 1) * sizeof *e->queries);
            e->nqueries--;
            break;
        }
    query_free(q);
}

static int drop_query(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    query *q = find_query(e, st->name);
    int rc;
    if (!q) {
        if (st->if_exists) {
            notice(out, "query '%s' does not exist, skipping", st->name);
            return 0;
        }
        return xerr_at(err, XE_NOTFOUND, st->line, st->col, "query '%s' does not exist", st->name);
    }
    char key[300];
    snprintf(key, sizeof key, "query/%s", st->name);
    char mkey[64];
    snprintf(mkey, sizeof mkey, "query/%u", q->id);
    if ((rc = eng_txn(e, err)) || (rc = query_drop_state(q, e->txn, err)) ||
        (rc = store_kv_del(e->txn, STORE_CATALOG, key, err)) || (rc = store_kv_del(e->txn, STORE_META, mkey, err)))
        return rc;
    remove_query(e, q);
    if ((rc = engine_commit(e, err))) return rc;
    notice(out, "DROP QUERY");
    return 0;
}

/* Forget stream si: its log, its records, its place in the queries' slots. */
static int drop_one(engine *e, int si, xerr *err)
{
    const char *name = e->streams[si]->ps->name;
    char key[300];
    snprintf(key, sizeof key, "stream/%s", name);
    int rc;
    if ((rc = eng_txn(e, err)) || (rc = store_log_drop(e->txn, name, err)) ||
        (rc = store_kv_del(e->txn, STORE_CATALOG, key, err)) || (rc = store_kv_del(e->txn, STORE_META, key, err)))
        return rc;
    io_source_stop(e, name);
    stream_free(e->streams[si]);
    memmove(&e->streams[si], &e->streams[si + 1], (size_t)(e->nstreams - si - 1) * sizeof *e->streams);
    e->nstreams--;
    for (int i = 0; i < e->nqueries; i++)
        for (int k = 0; k < e->queries[i]->nsrc; k++)
            if (e->queries[i]->src_stream[k] > si) e->queries[i]->src_stream[k]--;
    return 0;
}

static int drop_stream(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    int si = eng_stream_index(e, st->name), rc;
    if (si < 0) {
        if (st->if_exists) {
            notice(out, "stream '%s' does not exist, skipping", st->name);
            return 0;
        }
        return xerr_at(err, XE_NOTFOUND, st->line, st->col, "stream '%s' does not exist", st->name);
    }
    const char *hash = strchr(st->name, '#');
    if (hash)
        return xerr_at(err, XE_PLAN, st->line, st->col, "'%s' is a partition of stream '%.*s'; drop that stream",
                       st->name, (int)(hash - st->name), st->name);
    int ix[PLAN_MAX_PARTITIONS], np = stream_parts(e, si, ix);
    for (int i = 0; i < e->nqueries; i++)
        for (int k = 0; k < e->queries[i]->nsrc; k++)
            for (int p = 0; p < np; p++)
                if (e->queries[i]->src_stream[k] == ix[p]) {
                    if (e->queries[i]->transient) { e->queries[i]->finished = 1; continue; }
                    return xerr_at(err, XE_PLAN, st->line, st->col, "query '%s' reads stream '%s'; drop the query first",
                                   e->queries[i]->name, st->name);
                }
    finish_ended_push(e);
    /* the partitions by name: each drop moves the indexes after it */
    char names[PLAN_MAX_PARTITIONS][300];
    for (int p = 0; p < np; p++) snprintf(names[p], sizeof names[p], "%s", e->streams[ix[p]]->ps->name);
    for (int p = np - 1; p >= 0; p--)
        if ((rc = drop_one(e, eng_stream_index(e, names[p]), err))) return rc;
    if ((rc = engine_commit(e, err))) return rc;
    notice(out, "DROP STREAM");
    return 0;
}

/* ------------------------------------------------------------------ INSERT */

static int insert_rows(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    int si = eng_stream_index(e, st->name), rc;
    if (si < 0) return xerr_at(err, XE_NAME, st->line, st->col, "unknown stream '%s'", st->name);
    stream_rt *s = e->streams[si];
    int nc = s->ps->schema.ncols;
    int *map = malloc(sizeof(int) * (size_t)(nc + 1));
    if (!map) return xerr_set(err, XE_NOMEM, "out of memory");
    int ncols = st->insert_cols ? st->insert_cols->n : nc;
    for (int i = 0; i < ncols; i++) {
        map[i] = i;
        if (st->insert_cols) {
            map[i] = plan_schema_find(&s->ps->schema, st->insert_cols->v[i]);
            if (map[i] < 0) {
                free(map);
                return xerr_at(err, XE_NAME, st->line, st->col, "stream '%s' has no column '%s'", st->name,
                               st->insert_cols->v[i]);
            }
        }
    }
    batch b;
    if (batch_init(&b, nc, st->rows->n)) { free(map); return xerr_set(err, XE_NOMEM, "out of memory"); }
    rc = 0;
    for (int r = 0; r < st->rows->n && !rc; r++) {
        const ast_exprs *vals = st->rows->v[r];
        if (vals->n != ncols) {
            rc = xerr_at(err, XE_PLAN, vals->n ? vals->v[0]->line : st->line, vals->n ? vals->v[0]->col : st->col,
                         "row %d has %d values, expected %d", r + 1, vals->n, ncols);
            break;
        }
        val *row = batch_add_row(&b);
        if (!row) { rc = xerr_set(err, XE_NOMEM, "out of memory"); break; }
        for (int c = 0; c < nc; c++) row[c] = val_null();
        for (int c = 0; c < ncols && !rc; c++) {
            const ast_expr *x = vals->v[c];
            sql_type t = s->ps->schema.cols[map[c]].type;
            /* values are literals, possibly negated */
            int neg = 0;
            while (x->kind == EX_UNARY && (x->op == OP_NEG || x->op == OP_POS)) {
                if (x->op == OP_NEG) neg = !neg;
                x = x->a;
            }
            if (x->kind != EX_LIT) {
                rc = xerr_at(err, XE_PLAN, x->line, x->col, "INSERT values must be literals");
                break;
            }
            const ast_lit *l = &x->lit;
            val v = val_null();
            char why[200];
            switch (l->type) {
            case TY_NULL: break;
            case TY_TEXT:
                if (t == TY_TEXT) { if (batch_put_text(&b, &v, l->s, strlen(l->s))) rc = XE_NOMEM; }
                else if (fmt_parse_value(t, l->s, strlen(l->s), 0, &v, why, sizeof why))
                    rc = xerr_at(err, XE_TYPE, x->line, x->col, "column '%s': %s", s->ps->schema.cols[map[c]].name, why);
                break;
            case TY_BIGINT:
                if (t == TY_DOUBLE) v = val_double((double)(neg ? -l->i : l->i));
                else if (t == TY_BIGINT || t == TY_INT || t == TY_TIMESTAMP) v = val_int(t, neg ? -l->i : l->i);
                else goto mismatch;
                neg = 0;
                break;
            case TY_DOUBLE:
                if (t != TY_DOUBLE) goto mismatch;
                v = val_double(neg ? -l->d : l->d);
                neg = 0;
                break;
            case TY_BOOL:
                if (t != TY_BOOL) goto mismatch;
                v = val_int(TY_BOOL, l->i);
                break;
            case TY_TIMESTAMP:
                if (t != TY_TIMESTAMP && t != TY_BIGINT) goto mismatch;
                v = val_int(t, l->i);
                break;
            default:
            mismatch:
                rc = xerr_at(err, XE_TYPE, x->line, x->col, "column '%s' is %s; this value is %s",
                             s->ps->schema.cols[map[c]].name, sql_type_name(t), sql_type_name(l->type));
                break;
            }
            if (rc == XE_NOMEM) xerr_set(err, rc, "out of memory");
            row[map[c]] = v;
        }
        int tc = s->ps->ts_col;
        if (!rc && tc >= 0 && row[tc].type == TY_NULL) {
            /* at the NULL if the row names it, else at the row */
            const ast_expr *at = vals->n ? vals->v[0] : NULL;
            for (int c = 0; c < ncols; c++)
                if (map[c] == tc) at = vals->v[c];
            rc = xerr_at(err, XE_TYPE, at ? at->line : st->line, at ? at->col : st->col,
                         "row %d has no event time: column '%s' may not be NULL", r + 1,
                         s->ps->schema.cols[tc].name);
        }
    }
    free(map);
    if (!rc) rc = stream_rows(e, si, &b, err);
    if (!rc) rc = end_partial_slice(e, si, err);
    if (!rc) rc = engine_commit(e, err);
    if (!rc) notice(out, "INSERT %d", b.nrows);
    batch_fini(&b);
    return rc;
}

/* ------------------------------------------------------------------ SHOW, DESCRIBE, EXPLAIN, SET */

/* A little result table built row by row. */
typedef struct table {
    int ncols;
    const char *names[16];
    sql_type types[16];
    batch b;
} table;

static int table_begin(table *t, int ncols, const char *const *names, const sql_type *types)
{
    t->ncols = ncols;
    for (int i = 0; i < ncols; i++) {
        t->names[i] = names[i];
        t->types[i] = types[i];
    }
    return batch_init(&t->b, ncols, 16);
}

static val *table_row(table *t) { return batch_add_row(&t->b); }
static void table_text(table *t, val *row, int c, const char *s)
{
    if (!s) { row[c] = val_null(); return; }
    batch_put_text(&t->b, &row[c], s, strlen(s));
}

static void table_end(table *t, const exec_out *out)
{
    fmt_schema fs = {t->ncols, t->names, t->types};
    if (out && out->begin) out->begin(out->ctx, &fs, 0);
    if (out && out->rows && t->b.nrows) out->rows(out->ctx, &t->b);
    if (out && out->end) out->end(out->ctx);
    batch_fini(&t->b);
}

static void wm_text(int64_t wm, char *buf)
{
    if (wm == WM_MIN) strcpy(buf, "-");
    else if (wm == WM_END) strcpy(buf, "end of input");
    else fmt_timestamp(wm, buf);
}

static int show_streams(engine *e, const exec_out *out)
{
    static const char *n[] = {"name", "columns", "timestamp", "watermark_delay_ms", "source", "rows", "rejected", "watermark", "log_bytes"};
    static const sql_type t[] = {TY_TEXT, TY_TEXT, TY_TEXT, TY_BIGINT, TY_TEXT, TY_BIGINT, TY_BIGINT, TY_TEXT, TY_BIGINT};
    table tb;
    if (table_begin(&tb, 9, n, t)) return XE_NOMEM;
    for (int i = 0; i < e->nstreams; i++) {
        stream_rt *s = e->streams[i];
        val *r = table_row(&tb);
        if (!r) break;
        sbuf cols;
        sbuf_init(&cols);
        for (int c = 0; c < s->ps->schema.ncols; c++)
            sbuf_printf(&cols, "%s%s %s", c ? ", " : "", s->ps->schema.cols[c].name, sql_type_name(s->ps->schema.cols[c].type));
        char wm[64];
        wm_text(stream_wm(s), wm);
        table_text(&tb, r, 0, s->ps->name);
        table_text(&tb, r, 1, cols.p ? cols.p : "");
        table_text(&tb, r, 2, s->ps->ts_col >= 0 ? s->ps->schema.cols[s->ps->ts_col].name : NULL);
        r[3] = s->ps->ts_col >= 0 ? val_int(TY_BIGINT, s->ps->watermark_ms) : val_null();
        table_text(&tb, r, 4, s->source);
        r[5] = val_int(TY_BIGINT, (int64_t)s->rows_total);
        r[6] = val_int(TY_BIGINT, s->rejected);
        table_text(&tb, r, 7, wm);
        r[8] = val_int(TY_BIGINT, (int64_t)s->log_bytes);
        sbuf_fini(&cols);
    }
    table_end(&tb, out);
    return 0;
}

static int64_t query_wm(const engine *e, const query *q)
{
    int64_t wm = WM_END;
    for (int k = 0; k < q->nsrc; k++) {
        int64_t w = stream_wm(e->streams[q->src_stream[k]]);
        if (w < wm) wm = w;
    }
    return wm;
}

/* q's rows in and out per second, over the last RATE_WINDOW_NS (since its
 * start or restart when that is shorter): NULL until RATE_MIN_NS passed.
 * The base is the newest sample at least the window old, else the oldest. */
static void query_rates(query *q, uint64_t now, val *in, val *out)
{
    *in = *out = val_null();
    query_rate_sample(q, now, 0);
    const struct rate_sample *base = NULL;
    for (int k = 1; k <= q->rs_n; k++) {
        const struct rate_sample *r = &q->rs[(q->rs_at + RATE_SAMPLES - k) % RATE_SAMPLES];
        base = r;
        if (now - r->ns >= RATE_WINDOW_NS) break;
    }
    if (!base || now - base->ns < RATE_MIN_NS) return;
    double secs = (double)(now - base->ns) / 1e9;
    *in = val_double((double)(int64_t)((double)(q->rows_in - base->in) / secs * 10) / 10);
    *out = val_double((double)(int64_t)((double)(q->rows_out - base->out) / secs * 10) / 10);
}

static int show_queries(engine *e, const exec_out *out)
{
    static const char *n[] = {"name", "state", "sink", "rows_in", "rows_out", "in_per_s", "out_per_s", "late", "rejected", "watermark", "sql"};
    static const sql_type t[] = {TY_TEXT, TY_TEXT, TY_TEXT, TY_BIGINT, TY_BIGINT, TY_DOUBLE, TY_DOUBLE, TY_BIGINT, TY_BIGINT, TY_TEXT, TY_TEXT};
    table tb;
    if (table_begin(&tb, 11, n, t)) return XE_NOMEM;
    for (int i = 0; i < e->nqueries; i++) {
        query *q = e->queries[i];
        if (q->transient) continue;
        val *r = table_row(&tb);
        if (!r) break;
        int64_t rej = 0;
        for (int k = 0; k < q->nsrc; k++) rej += e->streams[q->src_stream[k]]->rejected;
        char wm[64];
        wm_text(query_wm(e, q), wm);
        table_text(&tb, r, 0, q->name);
        table_text(&tb, r, 1, "RUNNING");
        table_text(&tb, r, 2, q->sink_uri);
        r[3] = val_int(TY_BIGINT, q->rows_in);
        r[4] = val_int(TY_BIGINT, q->rows_out);
        query_rates(q, clock_mono_ns(), &r[5], &r[6]);
        r[7] = val_int(TY_BIGINT, q->late);
        r[8] = val_int(TY_BIGINT, rej);
        table_text(&tb, r, 9, wm);
        table_text(&tb, r, 10, q->sql);
    }
    table_end(&tb, out);
    return 0;
}

static int show_nodes(engine *e, const exec_out *out)
{
    static const char *n[] = {"name", "domain", "address", "state", "slots", "load", "last_heartbeat"};
    static const sql_type t[] = {TY_TEXT, TY_TEXT, TY_TEXT, TY_TEXT, TY_BIGINT, TY_BIGINT, TY_TEXT};
    table tb;
    if (table_begin(&tb, 7, n, t)) return XE_NOMEM;
    val *r = table_row(&tb);
    int64_t load = 0;
    for (int i = 0; i < e->nqueries; i++) load += plan_task_count(e->queries[i]->dag);
    if (r) {
        table_text(&tb, r, 0, "local");
        table_text(&tb, r, 1, "local");
        table_text(&tb, r, 2, "embedded");
        table_text(&tb, r, 3, "ALIVE");
        r[4] = val_int(TY_BIGINT, sysconf(_SC_NPROCESSORS_ONLN));
        r[5] = val_int(TY_BIGINT, load);
        table_text(&tb, r, 6, "-");
    }
    table_end(&tb, out);
    return 0;
}

static int text_table(const exec_out *out, const char *colname, const char *text)
{
    const char *n[] = {colname};
    sql_type t[] = {TY_TEXT};
    table tb;
    if (table_begin(&tb, 1, n, t)) return XE_NOMEM;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        val *r = table_row(&tb);
        if (!r) break;
        batch_put_text(&tb.b, &r[0], p, len);
        p += len + (nl ? 1 : 0);
    }
    table_end(&tb, out);
    return 0;
}

static int describe(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    int si = eng_stream_index(e, st->name);
    if (si >= 0) {
        stream_rt *s = e->streams[si];
        static const char *n[] = {"column", "type", "note"};
        static const sql_type t[] = {TY_TEXT, TY_TEXT, TY_TEXT};
        table tb;
        if (table_begin(&tb, 3, n, t)) return xerr_set(err, XE_NOMEM, "out of memory");
        for (int c = 0; c < s->ps->schema.ncols; c++) {
            val *r = table_row(&tb);
            if (!r) break;
            char note[96] = "";
            if (c == s->ps->ts_col) snprintf(note, sizeof note, "event time, watermark delay %lld ms", (long long)s->ps->watermark_ms);
            table_text(&tb, r, 0, s->ps->schema.cols[c].name);
            table_text(&tb, r, 1, sql_type_name(s->ps->schema.cols[c].type));
            table_text(&tb, r, 2, note); /* empty, not NULL, where there is nothing to note */
        }
        table_end(&tb, out);
        return 0;
    }
    query *q = find_query(e, st->name);
    if (!q) {
        const char *best = NULL;
        int bestd = 3;
        for (int i = 0; i < e->nstreams; i++) {
            int d = str_distance(st->name, e->streams[i]->ps->name);
            if (d < bestd) { bestd = d; best = e->streams[i]->ps->name; }
        }
        for (int i = 0; i < e->nqueries; i++)
            if (e->queries[i]->name) {
                int d = str_distance(st->name, e->queries[i]->name);
                if (d < bestd) { bestd = d; best = e->queries[i]->name; }
            }
        if (best) return xerr_at(err, XE_NAME, st->line, st->col, "no stream or query '%s'; did you mean '%s'?", st->name, best);
        return xerr_at(err, XE_NAME, st->line, st->col, "no stream or query '%s'", st->name);
    }
    sbuf b;
    sbuf_init(&b);
    sbuf_printf(&b, "Query %s (id %u)\nSQL: %s\nColumns:\n", q->name, q->id, q->sql);
    for (int c = 0; c < q->out_schema.ncols; c++)
        sbuf_printf(&b, "  %s %s\n", q->out_schema.names[c], sql_type_name(q->out_schema.types[c]));
    char wm[64];
    wm_text(query_wm(e, q), wm);
    int64_t groups = 0;
    for (int i = 0; i < q->dag->nops; i++)
        for (int t = 0; q->ops[i].agg && t < q->ops[i].ntasks; t++) groups += agg_open_groups(q->ops[i].agg[t]);
    sbuf_printf(&b, "Rows in: %lld  rows out: %lld  late (dropped): %lld  open windows x groups: %lld  watermark: %s\n",
                (long long)q->rows_in, (long long)q->rows_out, (long long)q->late, (long long)groups, wm);
    if (q->sink_uri) {
        sbuf_printf(&b, "Sink: %s (%s", q->sink_uri, q->sink_format ? q->sink_format : "csv");
        size_t backlog;
        if (q->outlet) {
            const char *state = io_outlet_state(q->outlet, &backlog);
            sbuf_printf(&b, ", %s, %zu bytes waiting", state, backlog);
        } else if (q->sink)
            sbuf_printf(&b, ", %lld bytes written", (long long)q->sink->committed);
        sbuf_adds(&b, ")\n");
    }
    plan_explain_text(q->dag, &b);
    int rc = text_table(out, "description", b.p);
    sbuf_fini(&b);
    return rc;
}

static int explain(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    plan_dag *d = NULL;
    int rc;
    if (st->explain_placement)
        return xerr_at(err, XE_PLAN, st->line, st->col,
                       "EXPLAIN PLACEMENT needs a cluster: this engine is embedded (one node, every task local)");
    if (st->select) {
        plan_opts po = {e->parallelism};
        if ((rc = plan_query(st->select, &e->cat, &po, &d, err))) return rc;
    } else {
        query *q = find_query(e, st->name);
        if (!q) return xerr_at(err, XE_NAME, st->line, st->col, "no query '%s'", st->name);
        d = q->dag;
    }
    sbuf b;
    sbuf_init(&b);
    if (st->explain_json) plan_explain_json(d, &b);
    else plan_explain_text(d, &b);
    if (st->select) plan_free(d);
    if (b.len && b.p[b.len - 1] == '\n') b.p[--b.len] = 0;
    rc = text_table(out, "QUERY PLAN", b.p ? b.p : "");
    sbuf_fini(&b);
    return rc;
}

/* Every setting SET takes (cluster/coord.c applies the cluster's), for SHOW
 * SETTINGS and SHOW <name>; the values are the catalog's setting/<name>. */
static const struct setting_def {
    const char *name, *def, *desc;
} settings[] = {
    {"parallelism", "1", "tasks per keyed operator of the queries created after it (1 to 64)"},
    {"placement", "nirvana",
     "how a cluster places a query's tasks: nirvana, nirvana-no-recovery, round-robin, resource-aware or random"},
    {"replicas", "1", "replicas per stateful task in a cluster, in other failure domains (0 to 8)"},
    {"ft", "replica", "fault tolerance in a cluster: replica, checkpoint, upstream or none"},
    {"checkpoint_interval", "10 seconds", "how often a snapshot is taken with ft = 'checkpoint'"},
    {"shadow", "input", "how a stream's shadow home keeps up in a cluster: input (sent every row too) or log (its log copied)"},
    {"rebalance_interval", "30 seconds",
     "how often a cluster re-plays Nirvana's best responses for the running queries and moves tasks that gain (0 = never)"},
    {"rebalance_threshold", "0.2",
     "a task moves only when its cost falls by more than this fraction and the game's potential falls (0 to 1)"},
};
#define NSETTINGS (int)(sizeof settings / sizeof *settings)

static int setting_index(const char *name)
{
    for (int i = 0; i < NSETTINGS; i++)
        if (!strcmp(settings[i].name, name)) return i;
    return -1;
}

static int unknown_setting(const ast_stmt *st, const char *name, xerr *err)
{
    char list[256] = "";
    const char *best = NULL;
    int bestd = 3;
    for (int i = 0; i < NSETTINGS; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", settings[i].name);
        int d = str_distance(name, settings[i].name);
        if (d < bestd) { bestd = d; best = settings[i].name; }
    }
    const char *lists = st->kind == ST_SHOW ? "; SHOW STREAMS, QUERIES, NODES or SETTINGS lists what there is" : "";
    int line = st->kind == ST_SET ? st->set_key_line : st->line, col = st->kind == ST_SET ? st->set_key_col : st->col;
    if (best)
        return xerr_at(err, XE_INVAL, line, col, "unknown setting '%s'; did you mean '%s'? (known: %s%s)", name, best,
                       list, lists);
    return xerr_at(err, XE_INVAL, line, col, "unknown setting '%s' (known: %s%s)", name, list, lists);
}

/* The value in force: what SET stored, else the default. */
static int setting_value(engine *e, int i, sbuf *v, xerr *err)
{
    char key[160];
    snprintf(key, sizeof key, "setting/%s", settings[i].name);
    int own = !e->txn, rc = 0;
    if (own && (rc = store_begin(e->st, 0, &e->txn, err))) return rc;
    rc = store_kv_get(e->txn, STORE_CATALOG, key, v, err);
    if (own) { store_abort(e->txn); e->txn = NULL; }
    if (rc == XE_NOTFOUND) {
        sbuf_reset(v);
        rc = sbuf_adds(v, settings[i].def) ? xerr_set(err, XE_NOMEM, "out of memory") : 0;
    }
    return rc;
}

static int show_settings(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    int one = -1;
    if (st->show == SHOW_SETTING && (one = setting_index(st->name)) < 0) return unknown_setting(st, st->name, err);
    static const char *n[] = {"name", "value", "default", "description"};
    static const sql_type t[] = {TY_TEXT, TY_TEXT, TY_TEXT, TY_TEXT};
    const char *n1[] = {one >= 0 ? settings[one].name : ""};
    table tb;
    if (table_begin(&tb, one >= 0 ? 1 : 4, one >= 0 ? n1 : n, t)) return xerr_set(err, XE_NOMEM, "out of memory");
    sbuf v;
    sbuf_init(&v);
    int rc = 0;
    for (int i = 0; i < NSETTINGS && !rc; i++) {
        if (one >= 0 && i != one) continue;
        val *r = table_row(&tb);
        if (!r) break;
        if ((rc = setting_value(e, i, &v, err))) break;
        if (one >= 0) {
            table_text(&tb, r, 0, v.p ? v.p : "");
            continue;
        }
        table_text(&tb, r, 0, settings[i].name);
        table_text(&tb, r, 1, v.p ? v.p : "");
        table_text(&tb, r, 2, settings[i].def);
        table_text(&tb, r, 3, settings[i].desc);
    }
    sbuf_fini(&v);
    table_end(&tb, out);
    return rc;
}

int engine_rebalance_setting(const char *key, const ast_lit *v, double *out, xerr *err)
{
    double x;
    if (!strcmp(key, "rebalance_interval")) {
        int64_t ms = 0;
        xerr e2;
        if (v->type == TY_BIGINT && v->i == 0) ms = 0;
        else if (v->type != TY_TEXT || plan_parse_interval(v->s, &ms, &e2) || ms < 0)
            return xerr_set(err, XE_INVAL, "rebalance_interval must be an interval such as '30 seconds', or 0 to turn "
                            "rebalancing off");
        if (ms > 0 && ms < 100)
            return xerr_set(err, XE_INVAL, "rebalance_interval must be at least 100 ms (or 0 to turn rebalancing off)");
        x = (double)ms;
    } else {
        x = v->type == TY_DOUBLE ? v->d : v->type == TY_BIGINT ? (double)v->i : -1;
        if (!(x >= 0 && x < 1))
            return xerr_set(err, XE_INVAL, "rebalance_threshold must be a number from 0 to below 1, such as 0.2 (a task "
                            "moves when its cost falls by more than that fraction)");
    }
    if (out) *out = x;
    return 0;
}

static int set_stmt(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    char val_text[128];
    const ast_lit *l = &st->set_value;
    if (l->type == TY_TEXT) snprintf(val_text, sizeof val_text, "%s", l->s);
    else if (l->type == TY_DOUBLE) snprintf(val_text, sizeof val_text, "%g", l->d);
    else snprintf(val_text, sizeof val_text, "%lld", (long long)l->i);
    const char *k = st->set_key;
    if (!strcmp(k, "parallelism")) {
        if (l->type != TY_BIGINT || l->i < 1 || l->i > 64)
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col, "parallelism must be an integer from 1 to 64");
        e->parallelism = (int)l->i;
    } else if (!strcmp(k, "placement")) {
        nirvana_strategy ns;
        if (nirvana_strategy_parse(val_text, &ns))
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col,
                           "placement must be 'nirvana', 'nirvana-no-recovery', 'round-robin', 'resource-aware' or "
                           "'random'");
        snprintf(e->placement, sizeof e->placement, "%.31s", val_text);
    } else if (!strcmp(k, "ft")) {
        /* used by a cluster (cluster/coord.c); an embedded engine has no failures to survive */
        engine_ft ft;
        if (engine_ft_parse(val_text, &ft))
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col,
                           "ft must be 'replica', 'checkpoint', 'upstream' or 'none', not '%s'", val_text);
    } else if (!strcmp(k, "checkpoint_interval")) {
        int64_t ms;
        xerr e2;
        if (plan_parse_interval(val_text, &ms, &e2) || ms <= 0)
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col,
                           "checkpoint_interval must be a positive interval such as '5 seconds', not '%s'", val_text);
    } else if (!strcmp(k, "shadow")) {
        /* used by a cluster: how a stream's shadow home keeps up */
        if (strcmp(val_text, "input") && strcmp(val_text, "log"))
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col, "shadow must be 'input' or 'log', not '%s'", val_text);
    } else if (!strcmp(k, "replicas")) {
        if (l->type != TY_BIGINT || l->i < 0 || l->i > 8)
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col, "replicas must be an integer from 0 to 8");
    } else if (!strcmp(k, "rebalance_interval") || !strcmp(k, "rebalance_threshold")) {
        /* used by a cluster (cluster/coord.c, cluster/rebalance.c) */
        if (engine_rebalance_setting(k, l, NULL, err)) {
            err->line = st->set_line;
            err->col = st->set_col;
            return err->code;
        }
    } else
        return unknown_setting(st, k, err);
    char key[160];
    snprintf(key, sizeof key, "setting/%s", k);
    int rc;
    if ((rc = eng_txn(e, err)) || (rc = store_kv_put(e->txn, STORE_CATALOG, key, val_text, strlen(val_text), err)) ||
        (rc = engine_commit(e, err)))
        return rc;
    notice(out, "SET");
    return 0;
}

/* ------------------------------------------------------------------ deployed queries (cluster) */

static query *find_query_id(const engine *e, uint32_t qid)
{
    for (int i = 0; i < e->nqueries; i++)
        if (!e->queries[i]->transient && e->queries[i]->id == qid && e->queries[i]->deployed) return e->queries[i];
    return NULL;
}

int engine_plan(engine *e, const char *sql, plan_dag **out, xerr *err)
{
    ast_stmt *st;
    *out = NULL;
    int rc = parse_one(sql, strlen(sql), &st, err);
    if (rc) return rc;
    if (!st->select) {
        ast_stmt_free(st);
        return xerr_set(err, XE_PLAN, "not a query");
    }
    plan_opts po = {e->parallelism};
    /* a cluster plans here first: the options are checked as a CREATE QUERY's are */
    if ((rc = check_options(st->with, known_query_options, "query", err)) == 0 &&
        (rc = get_setting_int(st->with, "parallelism", e->parallelism, 1, 64, &po.parallelism, err)) == 0)
        rc = plan_query(st->select, &e->cat, &po, out, err);
    ast_stmt_free(st);
    return rc;
}

/* A deployed query's counts survive its redeployment after a failure on
 * the nodes that ran it before: undeploy (keep_state) writes them as
 * "qcount/<qid>" (rows_in, rows_out, late, the next record of each local
 * source), the redeployment (prev) takes them. */
static int keep_counts(query *q, xerr *err)
{
    char key[32];
    snprintf(key, sizeof key, "qcount/%u", q->id);
    uint64_t v[3 + ENGINE_MAX_SRC] = {(uint64_t)q->rows_in, (uint64_t)q->rows_out, (uint64_t)q->late};
    for (int k = 0; k < 2 + meta_extra(q); k++) v[3 + k] = q->offset[k] > q->counted[k] ? q->offset[k] : q->counted[k];
    return put_u64s(q->eng->txn, key, v, 5 + meta_extra(q), err);
}

static int take_counts(query *q, xerr *err)
{
    if (!q->ft.prev) return 0;
    char key[32];
    snprintf(key, sizeof key, "qcount/%u", q->ft.prev);
    uint64_t v[3 + ENGINE_MAX_SRC];
    sbuf tmp;
    sbuf_init(&tmp);
    int rc = get_u64s(q->eng->txn, key, v, 5 + meta_extra(q), &tmp, err);
    sbuf_fini(&tmp);
    if (rc == XE_NOTFOUND) return 0; /* it ran nothing here that counts, or this node is new to it */
    if (rc) return rc;
    q->rows_in = (int64_t)v[0];
    q->rows_out = (int64_t)v[1];
    q->late = (int64_t)v[2];
    for (int k = 0; k < 2 + meta_extra(q); k++) q->counted[k] = v[3 + k];
    return store_kv_del(q->eng->txn, STORE_META, key, err);
}

int engine_deploy(engine *e, uint32_t qid, const char *create_sql, const unsigned char *own, int nown,
                  const engine_remote *remote, const exec_out *out, const engine_deploy_opts *fo, xerr *err)
{
    if (find_query_id(e, qid)) return xerr_set(err, XE_EXISTS, "query %u is already deployed here", qid);
    ast_stmt *st;
    int rc = parse_one(create_sql, strlen(create_sql), &st, err);
    if (rc) return rc;
    if (st->kind != ST_CREATE_QUERY) {
        ast_stmt_free(st);
        return xerr_set(err, XE_PLAN, "deploy needs a CREATE QUERY statement");
    }
    query *q;
    rc = query_new(e, st->select, st->with, st->name, create_sql, qid, &q, err);
    ast_stmt_free(st);
    if (rc) return rc;
    q->deployed = 1;
    if (own) {
        if (nown != plan_task_count(q->dag)) {
            query_free(q);
            return xerr_set(err, XE_PLAN, "placement has %d tasks, the plan %d", nown, plan_task_count(q->dag));
        }
        if (!(q->own = malloc((size_t)nown))) { query_free(q); return xerr_set(err, XE_NOMEM, "out of memory"); }
        memcpy(q->own, own, (size_t)nown);
    }
    if (remote) q->remote = *remote;
    if (out) q->out = *out;
    if (fo) q->ft = *fo;
    q->ckpt_ns = clock_mono_ns();
    if ((rc = eng_txn(e, err)) || (rc = ft_restore(q, e->txn, err)) || (rc = take_counts(q, err)) ||
        (rc = query_load_state(q, e->txn, err)) || (rc = add_query(e, q, err))) {
        query_free(q);
        return rc;
    }
    /* a socket sink runs where the sink task does (the coordinator); a
     * file sink needs an engine of its own (the coordinator refuses it) */
    if (q->sink_uri && task_local(q, &q->ops[q->dag->sink], 0) &&
        (!strncmp(q->sink_uri, "tcp://", 6) || !strncmp(q->sink_uri, "unix://", 7)) &&
        (rc = io_sink_open(e, q, q->sink_uri, q->sink_format, err))) {
        remove_query(e, q);
        return rc;
    }
    /* Results the tasks it took over emitted lately go again (the sink
     * drops what it has).  No watermark yet: the next slice brings one.  A
     * query redeployed after a failure replays its log first
     * (engine_replay), and a watermark sent now would make every replayed
     * row late. */
    if ((rc = ft_reemit(q, err))) return rc;
    return engine_commit(e, err);
}

int engine_undeploy(engine *e, uint32_t qid, int keep_state, xerr *err)
{
    query *q = find_query_id(e, qid);
    if (!q) return xerr_set(err, XE_NOTFOUND, "query %u is not deployed here", qid);
    int rc = eng_txn(e, err);
    /* kept: as of now, with its positions, for the redeployment to take over */
    if (!rc && keep_state) rc = query_flush_state(q, e->txn, err);
    if (!rc && keep_state) rc = keep_counts(q, err);
    if (!rc && !keep_state) rc = query_drop_state(q, e->txn, err);
    if (!rc && !keep_state) rc = ft_drop_replicas(e, qid, err);
    sbuf_reset(&q->deltas);
    if (rc) return rc;
    remove_query(e, q);
    return engine_commit(e, err);
}

int engine_remote_batch(engine *e, uint32_t qid, int op, int task, int side, uint64_t tag, const void *p, size_t n,
                        xerr *err)
{
    query *q = find_query_id(e, qid);
    if (!q) return xerr_set(err, XE_NOTFOUND, "query %u is not deployed here", qid);
    int rc = eng_txn(e, err);
    if (!rc) rc = query_remote_batch(q, op, task, side, tag, p, n, err);
    return rc ? rc : eng_maybe_commit(e, err);
}

int engine_remote_watermark(engine *e, uint32_t qid, int op, int side, int from_task, int64_t wm, uint64_t tag,
                            xerr *err)
{
    query *q = find_query_id(e, qid);
    if (!q) return xerr_set(err, XE_NOTFOUND, "query %u is not deployed here", qid);
    int rc = eng_txn(e, err);
    if (!rc) rc = query_remote_watermark(q, op, side, from_task, wm, tag, err);
    return rc ? rc : eng_maybe_commit(e, err);
}

int engine_deployed_sink_rows(engine *e, uint32_t qid, const batch *b, xerr *err)
{
    query *q = find_query_id(e, qid);
    if (!q || !q->outlet) return 0;
    return io_outlet_rows(q->outlet, b) ? xerr_set(err, XE_NOMEM, "out of memory") : 0;
}

int engine_deployed_sink_wm(engine *e, uint32_t qid, int64_t *wm, xerr *err)
{
    query *q = find_query_id(e, qid);
    if (!q || !task_local(q, &q->ops[q->dag->sink], 0))
        return xerr_set(err, XE_NOTFOUND, "query %u has no sink here", qid);
    *wm = q->ops[q->dag->sink].wm[0];
    return 0;
}

int engine_deployed_sink_inputs(engine *e, uint32_t qid, const int64_t **wm, int *n, xerr *err)
{
    query *q = find_query_id(e, qid);
    if (!q || !task_local(q, &q->ops[q->dag->sink], 0))
        return xerr_set(err, XE_NOTFOUND, "query %u has no sink here", qid);
    *wm = q->ops[q->dag->sink].upwm[0];
    *n = q->ops[q->dag->sink].nup[0];
    return 0;
}

/* ------------------------------------------------------------------ host records */

int engine_host_put(engine *e, const char *key, const void *v, size_t n, xerr *err)
{
    char k[512];
    if (snprintf(k, sizeof k, "host/%s", key) >= (int)sizeof k) return xerr_set(err, XE_INVAL, "host key too long");
    int rc = eng_txn(e, err);
    if (!rc) rc = store_kv_put(e->txn, STORE_CATALOG, k, v, n, err);
    return rc ? rc : engine_commit(e, err);
}

int engine_host_del(engine *e, const char *key, xerr *err)
{
    char k[512];
    if (snprintf(k, sizeof k, "host/%s", key) >= (int)sizeof k) return xerr_set(err, XE_INVAL, "host key too long");
    int rc = eng_txn(e, err);
    if (!rc) rc = store_kv_del(e->txn, STORE_CATALOG, k, err);
    return rc ? rc : engine_commit(e, err);
}

typedef struct host_scan {
    int (*fn)(void *ctx, const char *key, const void *v, size_t n);
    void *ctx;
} host_scan;

static int host_scan_one(void *ctx, const char *key, const void *v, size_t n)
{
    host_scan *h = ctx;
    return h->fn(h->ctx, key + 5, v, n);
}

int engine_host_scan(engine *e, const char *prefix,
                     int (*fn)(void *ctx, const char *key, const void *v, size_t n), void *ctx, xerr *err)
{
    char k[512];
    if (snprintf(k, sizeof k, "host/%s", prefix) >= (int)sizeof k) return xerr_set(err, XE_INVAL, "host key too long");
    host_scan h = {fn, ctx};
    int rc = eng_txn(e, err);
    return rc ? rc : store_kv_scan(e->txn, STORE_CATALOG, k, host_scan_one, &h, err);
}

/* ------------------------------------------------------------------ statements */

int engine_exec(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    xerr_clear(err);
    switch (st->kind) {
    case ST_CREATE_STREAM: return create_stream(e, st, out, err);
    case ST_CREATE_QUERY: return create_query(e, st, out, err);
    case ST_SELECT: return push_query(e, st, out, err);
    case ST_INSERT: return insert_rows(e, st, out, err);
    case ST_DROP_STREAM: return drop_stream(e, st, out, err);
    case ST_DROP_QUERY: return drop_query(e, st, out, err);
    case ST_SHOW:
        if (st->show == SHOW_STREAMS) return show_streams(e, out);
        if (st->show == SHOW_QUERIES) return show_queries(e, out);
        if (st->show == SHOW_SETTINGS || st->show == SHOW_SETTING) return show_settings(e, st, out, err);
        return show_nodes(e, out);
    case ST_DESCRIBE: return describe(e, st, out, err);
    case ST_EXPLAIN: return explain(e, st, out, err);
    case ST_SET: return set_stmt(e, st, out, err);
    case ST_ALTER_QUERY_REBALANCE:
        /* a cluster's coordinator answers it (cluster/coord.c); here every
         * task runs in this one process, so there is nowhere to move to */
        if (!find_query(e, st->name)) return xerr_at(err, XE_NOTFOUND, st->line, st->col, "query '%s' does not exist", st->name);
        notice(out, "ALTER QUERY: nothing to rebalance; an embedded engine runs every task of '%s' in this process "
               "(REBALANCE moves tasks between the nodes of a cluster)", st->name);
        return 0;
    case ST_SUBSCRIBE: {
        query *q = find_query(e, st->name);
        if (!q) return xerr_at(err, XE_NAME, st->line, st->col, "no query '%s'", st->name);
        struct lsub *v = realloc(e->lsubs, (size_t)(e->nlsubs + 1) * sizeof *v);
        if (!v) return xerr_set(err, XE_NOMEM, "out of memory");
        e->lsubs = v;
        e->lsubs[e->nlsubs].q = q;
        e->lsubs[e->nlsubs].out = out ? *out : (exec_out){0};
        e->nlsubs++;
        if (out && out->begin) out->begin(out->ctx, &q->out_schema, 1);
        return 0;
    }
    }
    return xerr_set(err, XE_PLAN, "unsupported statement");
}

int engine_exec_sql(engine *e, const char *sql, const exec_out *out, xerr *err)
{
    parse_result *r;
    int rc = parse_sql(sql, strlen(sql), &r);
    if (rc == XE_NOMEM) return xerr_set(err, rc, "out of memory");
    if (r->nerrors) {
        xerr_at(err, XE_SYNTAX, r->errors[0].line, r->errors[0].col, "%s", r->errors[0].msg);
        parse_result_free(r);
        return XE_SYNTAX;
    }
    rc = 0;
    for (int i = 0; i < r->nstmts && !rc; i++) rc = engine_exec(e, r->stmts[i], out, err);
    parse_result_free(r);
    return rc;
}

void engine_names(const engine *e, int kind, void (*fn)(void *ctx, const char *name), void *ctx)
{
    if (kind == 0)
        for (int i = 0; i < e->nstreams; i++) fn(ctx, e->streams[i]->ps->name);
    else if (kind == 1) {
        for (int i = 0; i < e->nqueries; i++)
            if (e->queries[i]->name) fn(ctx, e->queries[i]->name);
    } else
        for (int i = 0; i < e->nstreams; i++)
            for (int c = 0; c < e->streams[i]->ps->schema.ncols; c++) fn(ctx, e->streams[i]->ps->schema.cols[c].name);
}

/* ------------------------------------------------------------------ open and close */

typedef struct load_ctx {
    engine *e;
    int kind; /* 0 streams, 1 queries, 2 settings */
    xerr *err;
    int rc;
} load_ctx;

static int parse_stored(const char *sql, size_t n, ast_stmt **st, xerr *err)
{
    int rc = parse_one(sql, n, st, err);
    if (rc) return xerr_set(err, XE_CORRUPT, "the catalog holds a statement that no longer parses: %.200s", sql);
    return 0;
}

static int load_catalog_entry(void *ctx, const char *key, const void *v, size_t n)
{
    load_ctx *c = ctx;
    engine *e = c->e;
    sbuf text;
    sbuf_init(&text);
    sbuf_add(&text, v, n);
    ast_stmt *st = NULL;
    const char *sql = text.p ? text.p : "";
    if (c->kind == 0) {
        if ((c->rc = parse_stored(sql, n, &st, c->err))) goto out;
        int first = e->nstreams;
        if ((c->rc = streams_add(e, st, sql, c->err))) goto out;
        for (int i = first; i < e->nstreams && !c->rc; i++) {
            stream_rt *s = e->streams[i];
            uint64_t m[5];
            char mk[300];
            snprintf(mk, sizeof mk, "stream/%s", s->ps->name);
            sbuf tmp;
            sbuf_init(&tmp);
            int rc = get_u64s(e->txn, mk, m, 5, &tmp, c->err);
            sbuf_fini(&tmp);
            if (rc == 0) {
                s->max_ts = (int64_t)m[0];
                s->rows_total = m[1];
                s->rejected = (int64_t)m[2];
                s->src_pos = m[3];
                s->log_bytes = m[4];
            } else if (rc != XE_NOTFOUND) c->rc = rc;
        }
    } else if (c->kind == 1) {
        char *sp = strchr(sql, ' ');
        if (!sp) { c->rc = xerr_set(c->err, XE_CORRUPT, "catalog entry '%s' is malformed", key); goto out; }
        uint32_t id = (uint32_t)strtoul(sql, NULL, 10);
        if ((c->rc = parse_stored(sp + 1, strlen(sp + 1), &st, c->err))) goto out;
        if (st->kind != ST_CREATE_QUERY) { c->rc = xerr_set(c->err, XE_CORRUPT, "catalog entry '%s' is not a query", key); goto out; }
        query *q;
        if ((c->rc = query_new(e, st->select, st->with, st->name, sp + 1, id, &q, c->err))) goto out;
        uint64_t m[6 + ENGINE_MAX_SRC];
        char mk[64];
        snprintf(mk, sizeof mk, "query/%u", id);
        sbuf tmp;
        sbuf_init(&tmp);
        int rc = get_u64s(e->txn, mk, m, 6 + meta_extra(q), &tmp, c->err);
        sbuf_fini(&tmp);
        if (rc == 0) {
            q->offset[0] = m[0];
            q->offset[1] = m[1];
            for (int k = 2; k < q->nsrc; k++) q->offset[k] = m[4 + k];
            q->rows_in = (int64_t)m[2];
            q->rows_out = (int64_t)m[3];
            q->late = (int64_t)m[4];
            query_rate_sample(q, clock_mono_ns(), 1); /* rates count from here */
        } else if (rc != XE_NOTFOUND) { c->rc = rc; query_free(q); goto out; }
        const ast_option *so = ast_option_get(st->with, "sink"), *fo = ast_option_get(st->with, "format");
        if (so && (c->rc = sink_open(q, so->value, fo ? fo->value : NULL, rc == 0 ? (int64_t)m[5] : 0, c->err))) {
            query_free(q);
            goto out;
        }
        if ((c->rc = query_load_state(q, e->txn, c->err)) || (c->rc = add_query(e, q, c->err))) { query_free(q); goto out; }
        if (id >= e->next_query_id) e->next_query_id = id + 1;
    } else {
        const char *k = key + strlen("setting/");
        if (!strcmp(k, "parallelism")) e->parallelism = atoi(sql) > 0 ? atoi(sql) : 1;
        else if (!strcmp(k, "placement")) snprintf(e->placement, sizeof e->placement, "%.31s", sql);
    }
out:
    ast_stmt_free(st);
    sbuf_fini(&text);
    return c->rc;
}

typedef struct replay_ctx {
    engine *e;
    query *q;
    int src;
    batch b;
    xerr *err;
    int rc;
} replay_ctx;

static int replay_one(void *ctx, uint64_t off, const void *rec, size_t n)
{
    replay_ctx *c = ctx;
    batch_reset(&c->b);
    if (n < LOG_HDR) {
        c->rc = xerr_set(c->err, XE_CORRUPT, "log record %llu is truncated", (unsigned long long)off);
        return 1;
    }
    if ((c->rc = batch_decode((const char *)rec + LOG_HDR, n - LOG_HDR, &c->b, c->err))) return 1;
    if (c->b.nrows && (c->rc = query_push(c->q, c->src, &c->b, off + 1, c->err))) return 1;
    c->q->offset[c->src] = off + 1;
    /* the watermark moves where it moved the first time */
    const unsigned char *h = rec;
    const plan_stream *ps = c->e->streams[c->q->src_stream[c->src]]->ps;
    int64_t maxts = (int64_t)be64_get(h);
    if ((be64_get(h + 8) & LOG_WM_STEP) && maxts != WM_MIN && ps->ts_col >= 0 &&
        (c->rc = query_watermark(c->q, c->src, maxts - ps->watermark_ms, c->err)))
        return 1;
    return 0;
}

/* Bring a restored query up to the end of its streams' logs (also the
 * replay of a redeployed query, exec/ft.c). */
int eng_catch_up(engine *e, query *q, xerr *err)
{
    for (int k = 0; k < q->nsrc; k++) {
        stream_rt *s = e->streams[q->src_stream[k]];
        replay_ctx c = {e, q, k, {0}, err, 0};
        if (batch_init(&c.b, s->ps->schema.ncols, 1024)) return xerr_set(err, XE_NOMEM, "out of memory");
        size_t max = 0;
        if (s->guard) max = s->hw > q->offset[k] ? (size_t)(s->hw - q->offset[k]) : 0;
        int rc = s->guard && !max ? 0 : store_log_read(e->txn, s->ps->name, q->offset[k], max, replay_one, &c, err);
        batch_fini(&c.b);
        if (c.rc) return c.rc;
        if (rc) return rc;
        if ((rc = query_watermark(q, k, stream_wm(s), err))) return rc;
    }
    return 0;
}

/* A guarded stream's records up to `upto` reach its queries (logship.c). */
int eng_release(engine *e, int si, uint64_t upto, xerr *err)
{
    stream_rt *s = e->streams[si];
    for (int i = 0; i < e->nqueries; i++) {
        query *q = e->queries[i];
        for (int k = 0; k < q->nsrc; k++) {
            if (q->src_stream[k] != si || q->hold || q->offset[k] >= upto) continue;
            replay_ctx c = {e, q, k, {0}, err, 0};
            if (batch_init(&c.b, s->ps->schema.ncols, 1024)) return xerr_set(err, XE_NOMEM, "out of memory");
            int rc = store_log_read(e->txn, s->ps->name, q->offset[k], (size_t)(upto - q->offset[k]), replay_one, &c,
                                    err);
            batch_fini(&c.b);
            if (c.rc) return c.rc;
            if (rc) return rc;
        }
    }
    return 0;
}

/* A guarded stream whose end was held back: its queries see it now. */
int eng_end_released(engine *e, int si, xerr *err)
{
    e->streams[si]->end_pending = 0;
    e->streams[si]->ended = 1;
    int rc = advance_wm(e, si, err);
    finish_ended_push(e);
    return rc;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(p);
}

int engine_open(const engine_opts *o, engine **out, xerr *err)
{
    *out = NULL;
    engine *e = calloc(1, sizeof *e);
    if (!e) return xerr_set(err, XE_NOMEM, "out of memory");
    e->parallelism = 1;
    snprintf(e->placement, sizeof e->placement, "nirvana");
    e->cat = (plan_catalog){e, cat_find, cat_each};
    sbuf_init(&e->tmp);
    int rc;
    if (o->memory) {
        char tmpl[] = "/tmp/ares-mem.XXXXXX";
        if (!mkdtemp(tmpl)) { free(e); return xerr_set(err, XE_IO, "cannot create a temporary directory: %s", strerror(errno)); }
        e->dir = strdup(tmpl);
        e->memory = 1;
    } else
        e->dir = strdup(o->data_dir ? o->data_dir : "ares-data");
    sbuf_init(&e->tmp2);
    if (!e->dir || batch_init(&e->scratch, 1, 4) || batch_init(&e->rbatch, 1, 4)) { free(e->dir); free(e); return xerr_set(err, XE_NOMEM, "out of memory"); }
    e->log = o->log;
    e->log_ctx = o->log_ctx;
    e->general_agg = o->general_agg;
    store_opts so = {0};
    so.map_size = o->map_size;
    so.warn = o->log;
    so.warn_ctx = o->log_ctx;
    if ((rc = store_open(e->dir, &so, &e->st, err))) goto fail;
    if ((rc = io_start(e, err))) goto fail;
    if ((rc = store_begin(e->st, 1, &e->txn, err))) goto fail;
    {
        sbuf tmp;
        sbuf_init(&tmp);
        uint64_t v;
        if (get_u64s(e->txn, "epoch", &v, 1, &tmp, err) == 0) e->epoch = v;
        if (get_u64s(e->txn, "next_query_id", &v, 1, &tmp, err) == 0) e->next_query_id = (uint32_t)v;
        sbuf_fini(&tmp);
        xerr_clear(err);
    }
    if (e->next_query_id == 0) e->next_query_id = 1;
    {
        /* a catalog that lost entries since the last commit is damaged */
        uint64_t want, have;
        sbuf tmp;
        sbuf_init(&tmp);
        int r2 = get_u64s(e->txn, "catalog_entries", &want, 1, &tmp, err);
        sbuf_fini(&tmp);
        if (r2 == 0 && (rc = catalog_count(e->txn, &have, err)) == 0 && have != want) {
            rc = xerr_set(err, XE_CORRUPT, "storage %s is damaged: its catalog holds %llu entries, %llu were committed",
                          e->dir, (unsigned long long)have, (unsigned long long)want);
            goto fail;
        }
        if (rc) goto fail;
        xerr_clear(err);
    }
    load_ctx lc = {e, 2, err, 0};
    if ((rc = store_kv_scan(e->txn, STORE_CATALOG, "setting/", load_catalog_entry, &lc, err)) || lc.rc) goto fail_lc;
    lc.kind = 0;
    if ((rc = store_kv_scan(e->txn, STORE_CATALOG, "stream/", load_catalog_entry, &lc, err)) || lc.rc) goto fail_lc;
    lc.kind = 1;
    if ((rc = store_kv_scan(e->txn, STORE_CATALOG, "query/", load_catalog_entry, &lc, err)) || lc.rc) goto fail_lc;
    for (int i = 0; i < e->nqueries; i++)
        if ((rc = eng_catch_up(e, e->queries[i], err))) goto fail;
    if ((rc = engine_commit(e, err))) goto fail;
    for (int i = 0; i < e->nstreams; i++) {
        stream_rt *s = e->streams[i];
        if (s->source && (!strncmp(s->source, "tcp://", 6) || !strncmp(s->source, "unix://", 7))) {
            xerr e2;
            if (io_source_start(e, s->ps->name, s->source, &e2)) {
                if (e->log) e->log(e->log_ctx, e2.msg);
                else fprintf(stderr, "ares: %s\n", e2.msg);
            }
        }
    }
    *out = e;
    return 0;
fail_lc:
    if (!rc) rc = lc.rc;
fail:
    engine_close(e);
    return rc;
}

void engine_close(engine *e)
{
    if (!e) return;
    xerr err;
    /* a host's replication hook may open the next epoch: commit that too */
    for (int i = 0; e->txn && i < 4; i++)
        if (engine_commit(e, &err)) fprintf(stderr, "ares: committing the last epoch failed: %s\n", err.msg);
    engine_cancel_push(e);
    for (int i = 0; i < e->nqueries; i++) detach_query_io(e, e->queries[i]);
    io_stop(e);
    /* stopping the sources may have handed over their last rows, and ending
     * the push queries may have written: that epoch too (t_sockets once
     * tripped store_close's assertion on an open transaction here) */
    for (int i = 0; e->txn && i < 4; i++)
        if (engine_commit(e, &err)) fprintf(stderr, "ares: committing the last epoch failed: %s\n", err.msg);
    if (e->txn) {
        store_abort(e->txn);
        e->txn = NULL;
    }
    free(e->lsubs);
    for (int i = 0; i < e->nqueries; i++) query_free(e->queries[i]);
    free(e->queries);
    for (int i = 0; i < e->nstreams; i++) stream_free(e->streams[i]);
    free(e->streams);
    store_close(e->st);
    if (e->memory && e->dir) nftw(e->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    free(e->dir);
    batch_fini(&e->scratch);
    batch_fini(&e->rbatch);
    sbuf_fini(&e->tmp);
    sbuf_fini(&e->tmp2);
    eng_meas_fini(e);
    free(e);
}
