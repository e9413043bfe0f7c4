/*
 * table.c: a table's rows into its changelog, and its state in LMDB.
 *
 * A table (CREATE TABLE t (..., PRIMARY KEY (k, ...))) is a stream whose
 * readers see a changelog: its columns are `op` (TEXT: +I, -U, +U, -D, as
 * Flink prints its row kinds) and then the declared columns but the
 * op_column.  Rows reach it as they reach a stream (ingest, \copy, INSERT,
 * a query's output for CREATE TABLE AS); table_apply turns each into the
 * changes it makes to the table's current rows, which are kept in the
 * `state` database under the table's own task id (tbl_tid), window end 0,
 * keyed by the key columns' order-preserving encoding (val_key_encode), the
 * value the row's other columns in the same encoding.
 *
 * Every read and write goes through the open epoch's transaction, which the
 * caller (stream.c) holds: the state, the changelog appended to the log and
 * the offsets of the queries commit together, so a kill -9 loses an epoch's
 * changes whole or not at all, and the source that gives its rows again
 * (a file source from its committed position) makes the same changes once.
 * A row that changes nothing (the same row again, the delete of an absent
 * key) makes no change: the changelog never repeats one.
 *
 * Below stream.c; calls only storage and the batches.  Engine thread.
 */
#include "exec/internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const OP_TEXT[] = {"+I", "-U", "+U", "-D"};
enum { OP_PI, OP_MU, OP_PU, OP_MD };

void tbl_free(table_rt *t)
{
    if (!t) return;
    plan_stream_free(t->in);
    plan_stream_free(t->cl); /* a push query's; a stream's table gave it to the stream */
    plan_stream_free(t->rows_view);
    batch_fini(&t->chg);
    batch_fini(&t->old);
    batch_fini(&t->copy);
    sbuf_fini(&t->kbuf);
    sbuf_fini(&t->vbuf);
    sbuf_fini(&t->obuf);
    free(t->vmap);
    free(t);
}

/* Case-insensitive match of an option's value to a column name. */
static int find_col(const plan_schema *s, const char *name)
{
    for (int c = 0; c < s->ncols; c++)
        if (!strcasecmp(s->cols[c].name, name)) return c;
    return -1;
}

static int tbl_build(table_rt *t, const char *tname, int line, int col, xerr *err);

int tbl_new(const ast_stmt *st, plan_stream *ps, table_rt **out, xerr *err)
{
    *out = NULL;
    if (!st->pkey || !st->pkey->n)
        return xerr_at(err, XE_PLAN, st->line, st->col,
                       "table '%s' has no PRIMARY KEY: write one after its columns, as in CREATE TABLE %s (..., "
                       "PRIMARY KEY (col))",
                       st->name, st->name);
    if (st->pkey->n > TBL_MAX_KEY)
        return xerr_at(err, XE_PLAN, st->line, st->col, "a PRIMARY KEY has at most %d columns", TBL_MAX_KEY);
    table_rt *t = calloc(1, sizeof *t);
    if (!t) return xerr_set(err, XE_NOMEM, "out of memory");
    t->op_col = -1;
    t->in = ps;
    const plan_schema *in = &ps->schema;
    int rc = 0;
    for (int i = 0; i < st->pkey->n; i++) {
        int c = find_col(in, st->pkey->v[i]);
        if (c < 0) {
            rc = xerr_at(err, XE_NAME, st->line, st->col, "PRIMARY KEY column '%s' is not a column of table '%s'",
                         st->pkey->v[i], st->name);
            goto fail;
        }
        for (int j = 0; j < i; j++)
            if (t->key[j] == c) {
                rc = xerr_at(err, XE_NAME, st->line, st->col, "PRIMARY KEY names column '%s' twice", st->pkey->v[i]);
                goto fail;
            }
        t->key[t->nkey++] = c;
    }
    const ast_option *o = ast_option_get(st->with, "op_column");
    if (o) {
        if ((t->op_col = find_col(in, o->value)) < 0) {
            rc = xerr_at(err, XE_NAME, o->line, o->col, "op_column '%s' is not a column of table '%s'", o->value,
                         st->name);
            goto fail;
        }
        if (in->cols[t->op_col].type != TY_TEXT) {
            rc = xerr_at(err, XE_TYPE, o->line, o->col, "op_column '%s' must be TEXT (its values are I, U or D), not %s",
                         o->value, sql_type_name(in->cols[t->op_col].type));
            goto fail;
        }
        for (int i = 0; i < t->nkey; i++)
            if (t->key[i] == t->op_col) {
                rc = xerr_at(err, XE_PLAN, o->line, o->col, "op_column '%s' cannot be part of the PRIMARY KEY", o->value);
                goto fail;
            }
    }
    if ((rc = tbl_build(t, st->name, st->line, st->col, err))) goto fail;
    *out = t;
    return 0;
fail:
    t->in = NULL; /* the caller's still */
    tbl_free(t);
    return rc;
}

/* A push query's changes (push.c): a table over its output, keyed by
 * the columns key[0 .. nkey), not a stream: its changelog goes to the
 * query's client.  ps becomes the table's on success. */
int tbl_new_keyed(plan_stream *ps, const int *key, int nkey, uint32_t tid, table_rt **out, xerr *err)
{
    *out = NULL;
    if (nkey > TBL_MAX_KEY) return xerr_set(err, XE_PLAN, "a key has at most %d columns", TBL_MAX_KEY);
    table_rt *t = calloc(1, sizeof *t);
    if (!t) return xerr_set(err, XE_NOMEM, "out of memory");
    t->op_col = -1;
    t->in = ps;
    t->tid = tid;
    t->from_query = 1;
    for (int i = 0; i < nkey; i++) t->key[t->nkey++] = key[i];
    int rc = tbl_build(t, ps->name, 0, 0, err);
    if (rc) {
        t->in = NULL;
        tbl_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

/* The changelog's schema (t->cl), the pull queries' (t->rows_view) and
 * the buffers, for t with its input, key and op_column set. */
static int tbl_build(table_rt *t, const char *tname, int line, int col, xerr *err)
{
    const plan_stream *ps = t->in;
    const plan_schema *in = &ps->schema;
    /* the changelog's columns: op, then the declared ones but op_column */
    plan_stream *cl = calloc(1, sizeof *cl);
    if (!cl || !(t->vmap = calloc((size_t)in->ncols, sizeof *t->vmap))) {
        free(cl);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    *cl = *ps;
    cl->name = strdup(ps->name);
    cl->ts_col = -1;
    cl->changelog = 1;
    cl->schema.ncols = 0;
    if (!cl->name || !(cl->schema.cols = calloc((size_t)in->ncols + 1, sizeof *cl->schema.cols)) ||
        !(cl->schema.cols[0].name = strdup("op"))) {
        plan_stream_free(cl);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    cl->schema.cols[0].type = TY_TEXT;
    cl->schema.ncols = 1;
    for (int c = 0; c < in->ncols; c++) {
        if (c == t->op_col) continue;
        if (!strcasecmp(in->cols[c].name, "op")) {
            plan_stream_free(cl);
            return xerr_at(err, XE_NAME, line, col,
                           "column 'op' of table '%s' would clash with its changelog's first column (op): name it "
                           "otherwise, or make it the op_column",
                           tname);
        }
        if (c == ps->ts_col) cl->ts_col = cl->schema.ncols;
        t->vmap[t->nval++] = c;
        plan_column *pc = &cl->schema.cols[cl->schema.ncols];
        if (!(pc->name = strdup(in->cols[c].name))) {
            plan_stream_free(cl);
            return xerr_set(err, XE_NOMEM, "out of memory");
        }
        pc->type = in->cols[c].type;
        for (int k = 0; k < t->nkey; k++)
            if (t->key[k] == c) cl->pkey[k] = cl->schema.ncols;
        cl->schema.ncols++;
    }
    cl->npkey = t->nkey;
    if (batch_init(&t->chg, cl->schema.ncols, 1024) || batch_init(&t->old, t->nval, 16)) {
        plan_stream_free(cl);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    /* what a pull query reads: the changelog's columns but op */
    plan_stream *rv = calloc(1, sizeof *rv);
    if (rv) {
        *rv = *cl;
        rv->changelog = 0;
        rv->ts_col = cl->ts_col >= 0 ? cl->ts_col - 1 : -1;
        for (int k = 0; k < rv->npkey; k++) rv->pkey[k]--;
        rv->name = strdup(cl->name);
        rv->schema.ncols = 0;
        rv->schema.cols = calloc((size_t)cl->schema.ncols, sizeof *rv->schema.cols);
        for (int c = 1; rv->name && rv->schema.cols && c < cl->schema.ncols; c++) {
            if (!(rv->schema.cols[c - 1].name = strdup(cl->schema.cols[c].name))) break;
            rv->schema.cols[c - 1].type = cl->schema.cols[c].type;
            rv->schema.ncols = c;
        }
    }
    if (!rv || rv->schema.ncols != cl->schema.ncols - 1) {
        plan_stream_free(rv);
        plan_stream_free(cl);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    t->rows_view = rv;
    t->cl = cl;
    return 0;
}

/* 0: an upsert (I, U, or no op column), 1: a delete, -1: not an op. */
int tbl_op_kind(const val *v)
{
    if (v->type != TY_TEXT || v->len != 1) return -1;
    switch (v->s[0]) {
    case 'I': case 'i': case 'U': case 'u': return 0;
    case 'D': case 'd': return 1;
    }
    return -1;
}

/* One changelog row: op, then the row's values (new: the input row through
 * vmap; old: t->old's row r). */
static int add_change(table_rt *t, int op, const val *in_row, const val *old_row)
{
    val *r = batch_add_row(&t->chg);
    if (!r) return XE_NOMEM;
    r[0] = val_text(OP_TEXT[op], 2);
    for (int c = 0; c < t->nval; c++) r[1 + c] = in_row ? in_row[t->vmap[c]] : old_row[c];
    return 0;
}

int tbl_apply(table_rt *t, store_txn *txn, const batch *in, xerr *err)
{
    batch_reset(&t->chg);
    batch_reset(&t->old);
    if (batch_reserve(&t->chg, in->nrows * 2)) return xerr_set(err, XE_NOMEM, "out of memory");
    val kv[TBL_MAX_KEY];
    int rc;
    for (int r = 0; r < in->nrows; r++) {
        const val *row = batch_row(in, r);
        int del = t->deleting;
        if (t->op_col >= 0 && (del = tbl_op_kind(&row[t->op_col])) < 0) {
            t->bad_rows++; /* the decoder and INSERT refuse them first: a query's output only */
            continue;
        }
        int nullkey = 0;
        for (int i = 0; i < t->nkey; i++) nullkey |= (kv[i] = row[t->key[i]]).type == TY_NULL;
        if (nullkey && !t->from_query) {
            t->bad_rows++;
            continue;
        }
        sbuf_reset(&t->kbuf);
        if (val_key_encode(kv, t->nkey, &t->kbuf)) return xerr_set(err, XE_NOMEM, "out of memory");
        int rc2 = store_state_get(txn, STORE_STATE, t->tid, 0, t->kbuf.p, t->kbuf.len, &t->obuf, err);
        if (rc2 && rc2 != XE_NOTFOUND) return rc2;
        int had = rc2 == 0;
        int old_r = -1;
        if (had) {
            val *o = batch_add_row(&t->old);
            if (!o) return xerr_set(err, XE_NOMEM, "out of memory");
            if ((rc = val_key_decode(t->obuf.p, t->obuf.len, o, t->nval, &t->old, err)) < 0)
                return xerr_set(err, XE_CORRUPT, "table state of key %d bytes is damaged", (int)t->kbuf.len);
            old_r = t->old.nrows - 1;
        }
        const val *old = had ? batch_row(&t->old, old_r) : NULL;
        if (del) {
            if (!had) continue; /* nothing to delete: no change */
            if ((rc = store_state_del(txn, STORE_STATE, t->tid, 0, t->kbuf.p, t->kbuf.len, err))) return rc;
            if (add_change(t, OP_MD, NULL, old)) return xerr_set(err, XE_NOMEM, "out of memory");
            t->rows--;
            continue;
        }
        sbuf_reset(&t->vbuf);
        for (int c = 0; c < t->nval; c++)
            if (val_key_encode(&row[t->vmap[c]], 1, &t->vbuf)) return xerr_set(err, XE_NOMEM, "out of memory");
        if (had && t->obuf.len == t->vbuf.len && !memcmp(t->obuf.p, t->vbuf.p, t->vbuf.len)) continue; /* the same row */
        if ((rc = store_state_put(txn, STORE_STATE, t->tid, 0, t->kbuf.p, t->kbuf.len, t->vbuf.p, t->vbuf.len, err)))
            return rc;
        if (had) {
            if (add_change(t, OP_MU, NULL, old) || add_change(t, OP_PU, row, NULL))
                return xerr_set(err, XE_NOMEM, "out of memory");
        } else {
            if (add_change(t, OP_PI, row, NULL)) return xerr_set(err, XE_NOMEM, "out of memory");
            t->rows++;
        }
    }
    return 0;
}

/* A copy of the table's log (logship.c): its rows follow the changes of a
 * log record, as the home's did when it made them.  +I and +U put the row
 * under its key, -D deletes it; -U is always followed by its +U. */
int tbl_follow(table_rt *t, store_txn *txn, const batch *chg, xerr *err)
{
    int kc[TBL_MAX_KEY]; /* the key's columns of the changelog */
    for (int i = 0; i < t->nkey; i++) {
        kc[i] = -1;
        for (int c = 0; c < t->nval; c++)
            if (t->vmap[c] == t->key[i]) kc[i] = 1 + c;
        if (kc[i] < 0) return xerr_set(err, XE_CORRUPT, "a table's key is not among its changelog's columns");
    }
    val kv[TBL_MAX_KEY];
    int rc;
    for (int r = 0; r < chg->nrows; r++) {
        const val *row = batch_row(chg, r);
        if (chg->ncols != 1 + t->nval || row[0].type != TY_TEXT || row[0].len != 2)
            return xerr_set(err, XE_CORRUPT, "a copy of a table's log holds a row that is not a change");
        char op = row[0].s[1];
        if (row[0].s[0] == '-' && op == 'U') continue;
        for (int i = 0; i < t->nkey; i++) kv[i] = row[kc[i]];
        sbuf_reset(&t->kbuf);
        if (val_key_encode(kv, t->nkey, &t->kbuf)) return xerr_set(err, XE_NOMEM, "out of memory");
        int had = store_state_get(txn, STORE_STATE, t->tid, 0, t->kbuf.p, t->kbuf.len, &t->obuf, err);
        if (had && had != XE_NOTFOUND) return had;
        had = had == 0;
        if (op == 'D') {
            if (!had) continue;
            if ((rc = store_state_del(txn, STORE_STATE, t->tid, 0, t->kbuf.p, t->kbuf.len, err))) return rc;
            t->rows--;
            continue;
        }
        sbuf_reset(&t->vbuf);
        for (int c = 0; c < t->nval; c++)
            if (val_key_encode(&row[1 + c], 1, &t->vbuf)) return xerr_set(err, XE_NOMEM, "out of memory");
        if ((rc = store_state_put(txn, STORE_STATE, t->tid, 0, t->kbuf.p, t->kbuf.len, t->vbuf.p, t->vbuf.len, err)))
            return rc;
        t->rows += !had;
    }
    return 0;
}

typedef struct scan_ctx {
    table_rt *t;
    int (*fn)(void *ctx, const val *row);
    void *ctx;
    int rc;
    xerr *err;
} scan_ctx;

static int scan_one(void *ctx, int64_t we, const void *key, size_t klen, const void *v, size_t vlen)
{
    (void)we, (void)key, (void)klen;
    scan_ctx *c = ctx;
    table_rt *t = c->t;
    batch_reset(&t->old);
    val *o = batch_add_row(&t->old);
    if (!o) return c->rc = xerr_set(c->err, XE_NOMEM, "out of memory");
    if (val_key_decode(v, vlen, o, t->nval, &t->old, c->err) < 0)
        return c->rc = xerr_set(c->err, XE_CORRUPT, "a row of table state is damaged");
    return c->fn(c->ctx, o);
}

int tbl_scan(table_rt *t, store_txn *txn, int (*fn)(void *ctx, const val *row), void *ctx, xerr *err)
{
    scan_ctx c = {t, fn, ctx, 0, err};
    int rc = store_state_scan(txn, STORE_STATE, t->tid, 0, 1, scan_one, &c, err);
    return c.rc ? c.rc : rc;
}

static int count_one(void *ctx, const val *row)
{
    (void)row;
    ++*(int64_t *)ctx;
    return 0;
}

int tbl_get(table_rt *t, store_txn *txn, const val *key, int (*fn)(void *ctx, const val *row), void *ctx, xerr *err)
{
    sbuf_reset(&t->kbuf);
    if (val_key_encode(key, t->nkey, &t->kbuf)) return xerr_set(err, XE_NOMEM, "out of memory");
    int rc = store_state_get(txn, STORE_STATE, t->tid, 0, t->kbuf.p, t->kbuf.len, &t->obuf, err);
    if (rc == XE_NOTFOUND) return 0;
    if (rc) return rc;
    batch_reset(&t->old);
    val *o = batch_add_row(&t->old);
    if (!o) return xerr_set(err, XE_NOMEM, "out of memory");
    if (val_key_decode(t->obuf.p, t->obuf.len, o, t->nval, &t->old, err) < 0)
        return xerr_set(err, XE_CORRUPT, "a row of table state is damaged");
    return fn(ctx, o);
}

int tbl_load(table_rt *t, store_txn *txn, xerr *err)
{
    t->rows = 0;
    return tbl_scan(t, txn, count_one, &t->rows, err);
}
