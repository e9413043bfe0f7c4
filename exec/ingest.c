/*
 * ingest.c: input to streams from outside: an ingest's bytes (exec_ingest,
 * for --ingest, \copy and a cluster's forwarded chunks), a stream's file
 * source, INSERT, rows pushed by a host, a socket source's rows and tick
 * (io.c calls them through the engine's io_rows_cb and io_tick_cb).
 *
 * Each input call decodes into batches, hands them to the stream
 * (stream.c), and commits when its epoch is due (eng_maybe_commit) or, at
 * its end, at once (engine_commit).  Runs on the engine's thread.
 */
#include "exec/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ socket sources and ticks */

int io_stream_rows(engine *e, int si, const batch *b, xerr *err)
{
    eng_span sp; /* the log append is the sources' work (ops.c) */
    eng_span_begin(e, &sp);
    int rc = eng_stream_rows(e, si, b, err);
    eng_span_end_sources(e, si, &sp);
    return rc;
}

/* Live streams: a slice that has waited a tick ends, so the watermark moves
 * with light traffic too; then the epoch may commit. */
int io_tick(engine *e, xerr *err)
{
    int rc;
    for (int i = 0; i < e->nstreams; i++)
        if (!e->streams[i]->ext_ticks && (rc = eng_end_partial_slice(e, i, err))) return rc;
    return eng_maybe_commit(e, err);
}

int engine_stream_tick(engine *e, const char *stream, xerr *err)
{
    int si = eng_stream_index(e, stream);
    if (si < 0) return xerr_set(err, XE_NAME, "unknown stream '%s'", stream);
    e->streams[si]->ext_ticks = 1;
    int rc = eng_end_partial_slice(e, si, err);
    return rc ? rc : eng_maybe_commit(e, err);
}

int engine_stream_feed(engine *e, const char *stream, const batch *b, int64_t wm, int64_t *repeats, xerr *err)
{
    int si = eng_stream_index(e, stream);
    if (si < 0) return xerr_set(err, XE_NAME, "unknown stream '%s'", stream);
    if (b && b->nrows && b->ncols != eng_stream_input(e->streams[si])->schema.ncols)
        return xerr_set(err, XE_PROTO, "rows of %d columns for stream '%s' of %d", b->ncols, stream,
                        eng_stream_input(e->streams[si])->schema.ncols);
    int64_t before = e->streams[si]->repeats;
    int rc = eng_derived_feed(e, si, b, wm, err);
    if (repeats) *repeats = e->streams[si]->repeats - before;
    /* rows commit at once: the query that sent them commits its own
     * progress on its nodes' epochs, and must not be ahead of its stream's
     * log for long (a kill -9 of every node would lose what lies between) */
    return rc ? rc : b && b->nrows ? engine_commit(e, err) : eng_maybe_commit(e, err);
}

/* A push query ends when all its sources have ended. */
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
    exec_late *late; /* NULL once taken (exec_ingest_late_take) */
    char note[160];  /* d.kind_note */
    char *null_string; /* a copy of opts' */
};

static int reads_stream(const query *q, int si)
{
    for (int k = 0; k < q->nsrc; k++)
        if (q->src_stream[k] == si) return 1;
    return 0;
}

/* Per query of the stream when the ingest began: its id and late count,
 * so that the rows this ingest lost as late are told to its sender. */
struct exec_late {
    int si, nq;
    uint32_t *qid;
    int64_t *late0;
};

void exec_late_free(exec_late *l)
{
    if (!l) return;
    free(l->qid);
    free(l->late0);
    free(l);
}

static exec_late *late_mark(engine *e, int si)
{
    exec_late *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->si = si;
    l->qid = calloc((size_t)e->nqueries + 1, sizeof *l->qid);
    l->late0 = calloc((size_t)e->nqueries + 1, sizeof *l->late0);
    if (!l->qid || !l->late0) {
        exec_late_free(l);
        return NULL;
    }
    for (int i = 0; i < e->nqueries; i++)
        if (reads_stream(e->queries[i], si)) {
            l->qid[l->nq] = e->queries[i]->id;
            l->late0[l->nq++] = e->queries[i]->late + e->queries[i]->late_sent;
        }
    return l;
}

exec_late *exec_ingest_late_take(exec_ingest *in)
{
    exec_late *l = in->late;
    in->late = NULL;
    return l;
}

/* The rows of this ingest that a query dropped as late: the most any query
 * of the stream dropped since the ingest began (a row late for two queries
 * counts once; rows are counted where the tasks that drop them run). */
int64_t exec_late_count(const engine *e, const exec_late *l, int *partial)
{
    int64_t most = 0;
    *partial = 0;
    if (!l) return 0;
    for (int i = 0; i < e->nqueries; i++) {
        const query *q = e->queries[i];
        for (int j = 0; j < l->nq; j++)
            if (l->qid[j] == q->id && q->late + q->late_sent - l->late0[j] > most)
                most = q->late + q->late_sent - l->late0[j];
        /* a window task elsewhere (a cluster) fed by tasks elsewhere, or a
         * join task elsewhere, counts its drops there only */
        for (int o = 0; o < q->dag->nops && reads_stream(q, l->si); o++) {
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
    if (e->streams[si]->derived) return xerr_set(err, XE_PLAN, DERIVED_NO_ROWS, stream, stream);
    if (eng_stream_made_by_query(e->streams[si])) return xerr_set(err, XE_PLAN, TABLE_AS_NO_ROWS, stream);
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
    if (!(in->late = late_mark(e, si)) || fmt_decoder_new(in->kind, &s->fs, d, &in->dec) ||
        batch_init(&in->b, s->fs.ncols, 1024)) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto fail;
    }
    *out = in;
    return 0;
fail:
    fmt_decoder_free(in->dec);
    exec_late_free(in->late);
    free(in->null_string);
    free(in);
    return rc;
}

static int ingest_flush(exec_ingest *in, xerr *err)
{
    int rc = 0;
    if (in->b.nrows) rc = eng_stream_rows(in->e, in->si, &in->b, err);
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
    if (!rc) rc = eng_end_partial_slice(in->e, in->si, err);
    if (!rc && end_of_stream) rc = in->alone ? eng_end_one(in->e, in->si, err) : eng_end_stream(in->e, in->si, err);
    if (!rc) rc = engine_commit(in->e, err);
    if (st) st->late = exec_late_count(in->e, in->late, &st->late_partial);
    fmt_decoder_free(in->dec);
    batch_fini(&in->b);
    exec_late_free(in->late);
    free(in->null_string);
    free(in);
    return rc;
}

/* The stream's partial slice ends (unless its host cuts its slices); then
 * the open epoch commits (now: idle, or when due). */
static int ingest_cut(exec_ingest *in, int now, xerr *err)
{
    if (in->e->streams[in->si]->ext_ticks) return 0;
    int rc = eng_end_partial_slice(in->e, in->si, err);
    return rc ? rc : now ? eng_commit_epoch(in->e, 1, err) : eng_maybe_commit(in->e, err);
}

int exec_ingest_idle(exec_ingest *in, xerr *err) { return ingest_cut(in, 1, err); }

int exec_ingest_cut(exec_ingest *in, xerr *err) { return ingest_cut(in, 0, err); }

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
    if (b->ncols != e->streams[si]->fs.ncols)
        return xerr_set(err, XE_INVAL, "stream '%s' has %d columns, the batch %d", stream, e->streams[si]->fs.ncols,
                        b->ncols);
    eng_span sp; /* the log append is the sources' work (ops.c) */
    eng_span_begin(e, &sp);
    int rc = eng_stream_rows(e, si, b, err);
    eng_span_end_sources(e, si, &sp);
    return rc ? rc : eng_maybe_commit(e, err);
}

int engine_end_stream(engine *e, const char *stream, xerr *err)
{
    int si = eng_stream_index(e, stream);
    if (si < 0) return xerr_set(err, XE_NAME, "unknown stream '%s'", stream);
    int rc = eng_end_partial_slice(e, si, err);
    if (!rc) rc = eng_end_stream(e, si, err);
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

/* ------------------------------------------------------------------ INSERT */

/* A table's row has its key and, with an op_column, an op of I, U or D:
 * the error is at the value (or the row, when the column has none). */
static int insert_table_row_ok(const table_rt *t, const ast_stmt *st, const ast_exprs *vals, const int *map, int ncols,
                               int r, const val *row, xerr *err)
{
    const plan_schema *is = &t->in->schema;
    for (int k = 0; k <= t->nkey; k++) {
        int c = k < t->nkey ? t->key[k] : t->op_col;
        if (c < 0) continue;
        int bad = k < t->nkey ? row[c].type == TY_NULL : tbl_op_kind(&row[c]) < 0;
        if (!bad) continue;
        const ast_expr *at = vals->n ? vals->v[0] : NULL;
        for (int i = 0; i < ncols; i++)
            if (map[i] == c) at = vals->v[i];
        int line = at ? at->line : st->line, col = at ? at->col : st->col;
        if (k < t->nkey)
            return xerr_at(err, XE_TYPE, line, col, "row %d has no key: column '%s' of the PRIMARY KEY may not be NULL",
                           r + 1, is->cols[c].name);
        return xerr_at(err, XE_TYPE, line, col, "row %d: column '%s' (the op_column) must be 'I', 'U' or 'D', not %s%.*s%s",
                       r + 1, is->cols[c].name, row[c].type == TY_TEXT ? "'" : "",
                       row[c].type == TY_TEXT ? (int)(row[c].len > 20 ? 20 : row[c].len) : 4,
                       row[c].type == TY_TEXT ? row[c].s : "NULL", row[c].type == TY_TEXT ? "'" : "");
    }
    return 0;
}

int eng_insert_rows(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    int si = eng_stream_index(e, st->name), rc;
    if (si < 0) return xerr_at(err, XE_NAME, st->line, st->col, "unknown stream '%s'", st->name);
    if (e->streams[si]->derived) return xerr_at(err, XE_PLAN, st->line, st->col, DERIVED_NO_ROWS, st->name, st->name);
    if (eng_stream_made_by_query(e->streams[si]))
        return xerr_at(err, XE_PLAN, st->line, st->col, TABLE_AS_NO_ROWS, st->name);
    stream_rt *s = e->streams[si];
    const plan_stream *ps = eng_stream_input(s);
    int nc = ps->schema.ncols;
    int *map = malloc(sizeof(int) * (size_t)(nc + 1));
    if (!map) return xerr_set(err, XE_NOMEM, "out of memory");
    int ncols = st->insert_cols ? st->insert_cols->n : nc;
    for (int i = 0; i < ncols; i++) {
        map[i] = i;
        if (st->insert_cols) {
            map[i] = plan_schema_find(&ps->schema, st->insert_cols->v[i]);
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
            /* the column left without a value, or the first value without a column */
            const ast_expr *at = vals->n > ncols ? vals->v[ncols] : vals->n ? vals->v[0] : NULL;
            const char *col = vals->n < ncols ? ps->schema.cols[map[vals->n]].name : NULL;
            if (col)
                rc = xerr_at(err, XE_PLAN, at ? at->line : st->line, at ? at->col : st->col,
                             "row %d has %d values, expected %d: no value for column '%s'", r + 1, vals->n, ncols, col);
            else
                rc = xerr_at(err, XE_PLAN, at->line, at->col,
                             "row %d has %d values, expected %d: '%s' has no column after '%s'", r + 1, vals->n, ncols,
                             st->name, ps->schema.cols[map[ncols - 1]].name);
            break;
        }
        val *row = batch_add_row(&b);
        if (!row) { rc = xerr_set(err, XE_NOMEM, "out of memory"); break; }
        for (int c = 0; c < nc; c++) row[c] = val_null();
        for (int c = 0; c < ncols && !rc; c++) {
            const ast_expr *x = vals->v[c];
            sql_type t = ps->schema.cols[map[c]].type;
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
                    rc = xerr_at(err, XE_TYPE, x->line, x->col, "column '%s': %s", ps->schema.cols[map[c]].name, why);
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
                             ps->schema.cols[map[c]].name, sql_type_name(t), sql_type_name(l->type));
                break;
            }
            if (rc == XE_NOMEM) xerr_set(err, rc, "out of memory");
            row[map[c]] = v;
        }
        int tc = ps->ts_col;
        if (!rc && tc >= 0 && row[tc].type == TY_NULL) {
            /* at the NULL if the row names it, else at the row */
            const ast_expr *at = vals->n ? vals->v[0] : NULL;
            for (int c = 0; c < ncols; c++)
                if (map[c] == tc) at = vals->v[c];
            rc = xerr_at(err, XE_TYPE, at ? at->line : st->line, at ? at->col : st->col,
                         "row %d has no event time: column '%s' may not be NULL", r + 1,
                         ps->schema.cols[tc].name);
        }
        if (!rc && s->table) rc = insert_table_row_ok(s->table, st, vals, map, ncols, r, row, err);
    }
    free(map);
    if (!rc) rc = eng_stream_rows(e, si, &b, err);
    if (!rc) rc = eng_end_partial_slice(e, si, err);
    if (!rc) rc = engine_commit(e, err);
    if (!rc) eng_notice(out, "INSERT %d", b.nrows);
    batch_fini(&b);
    return rc;
}
