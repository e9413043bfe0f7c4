/*
 * stream.c: the engine's streams and the data path into them.
 *
 * A stream (stream_rt) has a log in LMDB, a watermark and counters; a
 * partitioned stream is a stream per partition (eng_streams_add).  Rows
 * reach a stream in slices of EXEC_SLICE_ROWS counted over its whole life:
 * each slice is appended to the log in the open epoch's transaction and
 * pushed to every query reading the stream, and the watermark advances at
 * slice ends.  Also here: a stream's end, retention (eng_apply_retention,
 * run by each epoch's commit), and the replay of a log into a query
 * (eng_catch_up at recovery and after a takeover, eng_release for a log
 * copied to a shadow).
 *
 * Above the operators (ops.c), below the epochs: nothing here commits.
 * Runs on the engine's thread.
 */
#include "exec/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_RETAIN_BYTES (256ull << 20) /* per stream */

/* ------------------------------------------------------------------ the data path */

/* A slice of a stream's rows reaches the log and every query reading it.
 * sliced = 0: a derived stream's rows, whose watermark steps are records
 * of their own (eng_derived_wm). */
static int process_rows(engine *e, int si, const batch *b, int sliced, xerr *err)
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
    int step = sliced && (s->rows_total + (uint64_t)b->nrows) % EXEC_SLICE_ROWS == 0;
    be64_put(hdr, (uint64_t)s->max_ts);
    be64_put(hdr + 8, step ? LOG_WM_STEP : 0);
    if (sliced) s->open_slice = !step;
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
    int64_t wm = eng_stream_wm(e->streams[si]);
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
int eng_stream_rows(engine *e, int si, const batch *b, xerr *err)
{
    stream_rt *s = e->streams[si];
    int off = 0, rc;
    if (s->table) {
        /* a table's readers get the changes its rows make (table.c) */
        if ((rc = eng_txn(e, err)) || (rc = tbl_apply(s->table, e->txn, b, err))) return rc;
        b = &s->table->chg;
    }
    while (off < b->nrows) {
        int room = EXEC_SLICE_ROWS - (int)(s->rows_total % EXEC_SLICE_ROWS);
        int n = b->nrows - off < room ? b->nrows - off : room;
        batch view = *b;
        view.v = b->v + (size_t)off * (size_t)b->ncols;
        view.nrows = n;
        if ((rc = process_rows(e, si, &view, 1, err))) return rc;
        s->rows_total += (uint64_t)n;
        off += n;
        if (s->rows_total % EXEC_SLICE_ROWS == 0 && !s->guard && (rc = advance_wm(e, si, err))) return rc;
    }
    return 0;
}

/* An empty record that marks a watermark step for replays: at header time
 * ts (replay_one: the watermark is ts minus the stream's delay). */
static int append_step(engine *e, int si, int64_t ts, xerr *err)
{
    stream_rt *s = e->streams[si];
    unsigned char rec[LOG_HDR + 64];
    sbuf_reset(&e->tmp);
    be64_put(rec, (uint64_t)ts);
    be64_put(rec + 8, LOG_WM_STEP);
    batch empty = {0};
    empty.ncols = s->ps->schema.ncols;
    uint64_t off;
    int rc;
    if (sbuf_add(&e->tmp, rec, LOG_HDR) || batch_encode(&empty, &e->tmp)) return xerr_set(err, XE_NOMEM, "out of memory");
    if ((rc = store_log_append(e->txn, s->ps->name, e->tmp.p, e->tmp.len, &off, err))) return rc;
    s->log_bytes += e->tmp.len;
    for (int i = 0; i < e->nqueries && !s->guard; i++)
        for (int k = 0; k < e->queries[i]->nsrc; k++)
            if (e->queries[i]->src_stream[k] == si && !e->queries[i]->hold) e->queries[i]->offset[k] = off + 1;
    return 0;
}

int eng_end_partial_slice(engine *e, int si, xerr *err)
{
    stream_rt *s = e->streams[si];
    if (s->rows_total % EXEC_SLICE_ROWS == 0) return 0;
    /* closing windows changes state and sinks: that belongs to an epoch */
    int rc = eng_txn(e, err);
    if (rc) return rc;
    if (s->open_slice) {
        if ((rc = append_step(e, si, s->max_ts, err))) return rc;
        s->open_slice = 0;
    }
    return s->guard ? 0 : advance_wm(e, si, err);
}

/* ------------------------------------------------------------------ derived streams */

/* A standing query's output (CREATE STREAM AS, INSERT INTO SELECT) enters
 * its target's log in the open epoch's transaction, with the query's state
 * and offsets: a kill -9 loses both or neither, and the replay after it
 * appends the rows once.  Into a derived stream the rows go as one record
 * per batch (its watermark steps are records of their own); into a stream
 * made with columns they go as a client's rows do, in slices. */
static int derived_step(engine *e, int si, int64_t m, xerr *err);

int eng_derived_rows(query *q, const batch *b, xerr *err)
{
    engine *e = q->eng;
    stream_rt *s = e->streams[q->target];
    if (!b->nrows) return 0;
    if (s->table) {
        s->table->deleting = q->retracting;
        int rc = eng_stream_rows(e, q->target, b, err);
        s->table->deleting = 0;
        return rc;
    }
    if (!s->derived) return eng_stream_rows(e, q->target, b, err);
    int rc = process_rows(e, q->target, b, 0, err);
    if (!rc) s->rows_total += (uint64_t)b->nrows;
    return rc;
}

/* A derived stream's watermark is the least of its writers' output
 * watermarks; each step is logged (replays step where the run did) and
 * passed to its readers.  Its writers' end is its end. */
int eng_derived_wm(query *q, xerr *err)
{
    engine *e = q->eng;
    int si = q->target;
    stream_rt *s = e->streams[si];
    if (!s->derived) return 0;
    int64_t m = WM_END;
    for (int i = 0; i < e->nqueries; i++) {
        const query *w = e->queries[i];
        if (w->target == si && w->ops[w->dag->sink].out_wm < m) m = w->ops[w->dag->sink].out_wm;
    }
    return derived_step(e, si, m, err);
}

/* Derived stream si's watermark steps to m (nothing when it is not past
 * the stream's): logged, and passed to its readers. */
static int derived_step(engine *e, int si, int64_t m, xerr *err)
{
    stream_rt *s = e->streams[si];
    int rc;
    if (s->ended || m <= s->wm || m == WM_MIN) return 0;
    if ((rc = eng_txn(e, err))) return rc;
    /* the end, as a source's: neither logged nor kept (after a restart the
     * stream goes on from its last real watermark); the caller's
     * eng_finish_ended_push ends the push queries over it */
    if (m == WM_END && s->guard) {
        s->end_pending = 1; /* its queries see it once the copy has the log (eng_end_released) */
        return 0;
    }
    if (m == WM_END) s->ended = 1;
    else if ((rc = append_step(e, si, m, err))) return rc;
    else s->wm = m;
    /* a log copied to a shadow: its queries get the step with the records (eng_release) */
    return s->guard ? 0 : advance_wm(e, si, err);
}

/* A cluster's derived stream, written by its coordinator (a CREATE STREAM
 * AS's sink runs there): the rows go as one record, as eng_derived_rows
 * puts them, then the watermark steps to wm, the sink's.  Into a stream
 * made with columns (INSERT INTO ... SELECT) the rows go as a client's
 * and wm is not used: the stream has its own. */
int eng_derived_feed(engine *e, int si, const batch *b, int64_t wm, xerr *err)
{
    stream_rt *s = e->streams[si];
    int rc = 0, tc = s->ps->ts_col;
    if (b && b->nrows && (!s->derived || s->table)) return eng_stream_rows(e, si, b, err);
    batch kept = {0};
    if (b && b->nrows && tc >= 0 && s->wm != WM_MIN) {
        /* its coordinator sends a row with the watermark step that passes
         * it, so a row at or below the watermark is in the log already: a
         * new coordinator's sink (after a takeover) produced it again */
        int n = 0;
        for (int r = 0; r < b->nrows; r++) {
            const val *v = &batch_row(b, r)[tc];
            n += v->type != TY_NULL && v->i <= s->wm;
        }
        if (n && batch_init(&kept, b->ncols, b->nrows - n + 1)) return xerr_set(err, XE_NOMEM, "out of memory");
        for (int r = 0; n && r < b->nrows; r++) {
            const val *v = &batch_row(b, r)[tc];
            if ((v->type == TY_NULL || v->i > s->wm) && batch_append_row(&kept, batch_row(b, r))) {
                batch_fini(&kept);
                return xerr_set(err, XE_NOMEM, "out of memory");
            }
        }
        s->repeats += n;
        if (n) b = &kept;
    }
    if (b && b->nrows && !(rc = process_rows(e, si, b, 0, err))) s->rows_total += (uint64_t)b->nrows;
    if (kept.ncols) batch_fini(&kept);
    return rc ? rc : s->derived ? derived_step(e, si, wm, err) : 0;
}

/* A finished push query's changes and aggregate state go, with the record
 * that names them (push.c's eng_push_sweep drops what a crash left). */
static void drop_push_state(engine *e, query *q)
{
    char key[32];
    snprintf(key, sizeof key, "push/%u", q->id);
    xerr err = {0};
    if (!eng_txn(e, &err) && !query_drop_state(q, e->txn, &err)) store_kv_del(e->txn, STORE_META, key, &err);
}

void eng_finish_ended_push(engine *e)
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
            if (q->changes) drop_push_state(e, q);
            query_free(q);
            memmove(&e->queries[i], &e->queries[i + 1], (size_t)(e->nqueries - i - 1) * sizeof *e->queries);
            e->nqueries--;
            i--;
        }
    }
}

/* The end of stream si; a partitioned stream's end ends every partition
 * (each also ends alone: an ingest into "s#p", or "s#0" for the first). */
int eng_end_stream(engine *e, int si, xerr *err)
{
    int ix[PLAN_MAX_PARTITIONS], np = eng_stream_parts(e, si, ix), rc;
    for (int p = 1; p < np; p++)
        if ((rc = eng_end_one(e, ix[p], err))) return rc;
    return eng_end_one(e, si, err);
}

int eng_end_one(engine *e, int si, xerr *err)
{
    int rc;
    if ((rc = eng_txn(e, err))) return rc;
    if (e->streams[si]->guard) {
        e->streams[si]->end_pending = 1; /* the queries see the end with the last record */
        return 0;
    }
    e->streams[si]->ended = 1;
    if ((rc = advance_wm(e, si, err))) return rc;
    eng_finish_ended_push(e);
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
    eng_finish_ended_push(e);
}

/* ------------------------------------------------------------------ streams */

void eng_stream_free(stream_rt *s)
{
    if (!s) return;
    plan_stream_free(s->ps);
    tbl_free(s->table);
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
int eng_apply_retention(engine *e, int si, xerr *err)
{
    stream_rt *s = e->streams[si];
    int64_t wm = eng_stream_wm(s);
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
    table_rt *t = NULL;
    int rc = plan_stream_from_ast(st, &ps, err);
    if (rc) return rc;
    if (st->kind == ST_CREATE_TABLE && (rc = tbl_new(st, ps, &t, err))) {
        plan_stream_free(ps);
        return rc;
    }
    stream_rt *s = calloc(1, sizeof *s);
    if (!s) { plan_stream_free(ps); tbl_free(t); return xerr_set(err, XE_NOMEM, "out of memory"); }
    s->ps = ps;
    if (t) {
        /* its readers see the changelog; its input is the declared columns */
        s->table = t;
        s->ps = t->cl;
        t->cl = NULL;
        ps = t->in;
    }
    s->max_ts = WM_MIN;
    s->wm = WM_MIN;
    s->sql = strdup(sql);
    const ast_option *o;
    s->retain_bytes = DEFAULT_RETAIN_BYTES;
    if ((o = ast_option_get(st->with, "retention")) && (rc = parse_retention(o->value, s, err))) {
        err->line = o->line;
        err->col = o->col;
        eng_stream_free(s);
        return rc;
    }
    if ((o = ast_option_get(st->with, "source"))) s->source = strdup(o->value);
    /* a cluster's derived stream: its coordinator writes its rows and watermark */
    if ((o = ast_option_get(st->with, "derived")) && !strcasecmp(o->value, "true")) s->derived = 1;
    if ((o = ast_option_get(st->with, "format"))) s->format = strdup(o->value);
    if (s->format) fmt_kind_parse(s->format, &s->kind); /* create_stream checked it */
    if ((o = ast_option_get(st->with, "delimiter"))) {
        char why[160];
        fmt_parse_delim(o->value, &s->delim, why, sizeof why);
    }
    if ((o = ast_option_get(st->with, "null_string")) && !(s->null_string = strdup(o->value))) {
        eng_stream_free(s);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    s->names = calloc((size_t)ps->schema.ncols, sizeof *s->names);
    s->types = calloc((size_t)ps->schema.ncols, sizeof *s->types);
    stream_rt **v = realloc(e->streams, (size_t)(e->nstreams + 1) * sizeof *v);
    if (!s->sql || !s->names || !s->types || !v) {
        free(v == e->streams ? NULL : NULL);
        if (v) e->streams = v;
        eng_stream_free(s);
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
int eng_streams_add(engine *e, const ast_stmt *st, const char *sql, xerr *err)
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
        while (e->nstreams > before) eng_stream_free(e->streams[--e->nstreams]);
    return rc;
}

/* The partitions of stream si (itself first): their indexes into ix, the count returned. */
int eng_stream_parts(const engine *e, int si, int ix[PLAN_MAX_PARTITIONS])
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

/* ------------------------------------------------------------------ replays */

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

/* Replay up to max records (0: all) of q's source k from q->offset[k];
 * *more = 1 when its log has records left past them (a guarded log ends
 * where its copy does, s->hw). */
static int catch_up_source(engine *e, query *q, int k, size_t max, int *more, xerr *err)
{
    stream_rt *s = e->streams[q->src_stream[k]];
    uint64_t end = s->hw;
    int rc = s->guard ? 0 : store_log_end(e->txn, s->ps->name, &end, err);
    if (rc || q->offset[k] >= end) return rc;
    size_t n = (size_t)(end - q->offset[k]);
    if (max && n > max) {
        n = max;
        *more = 1;
    }
    replay_ctx c = {e, q, k, {0}, err, 0};
    if (batch_init(&c.b, s->ps->schema.ncols, 1024)) return xerr_set(err, XE_NOMEM, "out of memory");
    rc = store_log_read(e->txn, s->ps->name, q->offset[k], n, replay_one, &c, err);
    batch_fini(&c.b);
    return c.rc ? c.rc : rc;
}

int eng_catch_up_step(engine *e, query *q, size_t max, int *more, xerr *err)
{
    *more = 0;
    int rc = 0;
    for (int k = 0; k < q->nsrc && !rc; k++) rc = catch_up_source(e, q, k, max, more, err);
    return rc;
}

int eng_catch_up_wm(engine *e, query *q, xerr *err)
{
    int rc = 0;
    for (int k = 0; k < q->nsrc && !rc; k++) rc = query_watermark(q, k, eng_stream_wm(e->streams[q->src_stream[k]]), err);
    return rc;
}

/* Bring a restored query up to the end of its streams' logs (also the
 * replay of a redeployed query, exec/ft.c), in one epoch: each log, then
 * its watermark. */
int eng_catch_up(engine *e, query *q, xerr *err)
{
    int more, rc = 0;
    for (int k = 0; k < q->nsrc && !rc; k++)
        if (!(rc = catch_up_source(e, q, k, 0, &more, err)))
            rc = query_watermark(q, k, eng_stream_wm(e->streams[q->src_stream[k]]), err);
    return rc;
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
    eng_finish_ended_push(e);
    return rc;
}
