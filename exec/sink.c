/*
 * sink.c: where a standing query's rows go (query_emit): its file sink,
 * its socket sink and subscribers (io.c's outlets), the SUBSCRIBEs inside
 * this process, and a push query's client.
 *
 * A file sink's rows are copied by the engine's thread and handed to the
 * sink's writer thread (sink_writer), which only encodes and writes the
 * batches handed to it under its sink's mutex; an epoch's commit waits for
 * it (eng_sink_sync) before it records the sink's length.  Below the
 * operators: ops.c delivers a query's output here.
 */
#include "exec/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int eng_sink_open(query *q, const char *uri, const char *format, int64_t committed, xerr *err)
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
int eng_sink_sync(query *q, xerr *err)
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

/* b under changelog = 'upsert' (q->upsert): no -U rows, and a -D row with
 * only op and the key's columns (the others NULL), into q->ups. */
static const batch *upsert_rows(query *q, const batch *b)
{
    batch_reset(&q->ups);
    for (int r = 0; r < b->nrows; r++) {
        const val *row = batch_row(b, r);
        int minus = row[0].type == TY_TEXT && row[0].len == 2 && row[0].s[0] == '-';
        if (minus && row[0].s[1] == 'U') continue;
        val *d = batch_add_row(&q->ups);
        if (!d) return NULL;
        for (int c = 0; c < b->ncols; c++) d[c] = !minus || q->upsert[c] ? row[c] : val_null();
    }
    return &q->ups; /* TEXT stays in b's arena, as a filter's rows do */
}

/* A push query's updating aggregate: the groups its batch touched (and,
 * while q->retracting, those it deletes) into the changes they make to
 * the rows it printed before, kept as a table's are (table.c, in the
 * epoch's transaction): +I, -U and +U, -D. */
static int changes_of(query *q, const batch **b, xerr *err)
{
    table_rt *t = q->changes;
    int rc = eng_txn(q->eng, err);
    if (rc) return rc;
    t->deleting = q->retracting;
    rc = tbl_apply(t, q->eng->txn, *b, err);
    t->deleting = 0;
    *b = &t->chg;
    return rc;
}

int query_emit(query *q, const batch *b, xerr *err)
{
    int rc;
    if (q->changes && ((rc = changes_of(q, &b, err)) || !b->nrows)) return rc;
    q->rows_out += b->nrows;
    if (q->limit_left >= 0) {
        q->limit_left -= b->nrows;
        if (q->limit_left <= 0) q->finished = 1;
    }
    /* CREATE STREAM AS, INSERT INTO SELECT: into the target's log, in this epoch */
    if (q->target >= 0 && q->eng->derived_rows_cb && (rc = q->eng->derived_rows_cb(q, b, err))) return rc;
    const batch *sb = q->upsert && (q->sink || q->outlet) ? upsert_rows(q, b) : b;
    if (!sb) return xerr_set(err, XE_NOMEM, "out of memory");
    if (q->sink && sink_rows(q->sink, sb)) /* encoded and written by the sink's writer (eng_sink_sync reports its errors) */
        return xerr_set(err, XE_NOMEM, "out of memory");
    /* a deployed query's socket sink gets its rows from the host, once it
     * dropped the repeats of a recovery (engine_deployed_sink_rows) */
    if (q->outlet && !q->deployed && io_outlet_rows(q->outlet, sb)) return xerr_set(err, XE_NOMEM, "out of memory");
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
