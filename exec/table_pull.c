/*
 * table_pull.c: a pull query on a table, SELECT ... FROM t [WHERE ...]
 * without EMIT CHANGES, which answers with the table's rows now and ends,
 * as a SQL database does.
 *
 * push.c plans the SELECT over the table's rows (engine.c's catalog
 * gives the planner `table_rt.rows`, the changelog's columns without op,
 * while `pull_view` is set) and hands the query here: its one source is
 * fed the rows held in LMDB, in key order and 1,024 at a time, then the end
 * of time, so an aggregate answers once; the query never joins the engine's
 * list, so no change reaches it.  A WHERE that fixes a one-column key to a
 * literal (`WHERE id = 42`, either side) is a point lookup: one read of the
 * key's record, no scan.  Reads go through the open epoch's transaction, so
 * the answer includes the rows of the epoch not yet committed.
 *
 * Layer 9, beside ingest.c: calls the operators (ops.c) and table.c.
 */
#include "exec/internal.h"

#include <string.h>

typedef struct pull_ctx {
    query *q;
    batch b;
    xerr *err;
    int rc;
} pull_ctx;

static int pull_flush(pull_ctx *c)
{
    if (!c->b.nrows) return 0;
    int rc = query_push(c->q, 0, &c->b, 0, c->err);
    batch_reset(&c->b);
    return rc;
}

static int pull_row(void *ctx, const val *row)
{
    pull_ctx *c = ctx;
    if (batch_append_row(&c->b, row)) return c->rc = xerr_set(c->err, XE_NOMEM, "out of memory");
    if (c->b.nrows >= 1024 && (c->rc = pull_flush(c))) return c->rc;
    return c->q->finished; /* a LIMIT that is full stops the scan */
}

/* The key value a WHERE of `key = literal` fixes, into *v (1), else 0. */
static int point_key(const table_rt *t, const ast_expr *w, val *v)
{
    if (!w || t->nkey != 1 || w->kind != EX_BINARY || w->op != OP_EQ) return 0;
    const ast_expr *col = w->a, *lit = w->b;
    if (col->kind != EX_COL) col = w->b, lit = w->a;
    const plan_column *kc = &t->in->schema.cols[t->key[0]];
    if (col->kind != EX_COL || lit->kind != EX_LIT || col->qual || strcmp(col->name, kc->name)) return 0;
    const ast_lit *l = &lit->lit;
    if (l->type == TY_BIGINT && (kc->type == TY_BIGINT || kc->type == TY_INT)) *v = val_int(kc->type, l->i);
    else if (l->type == TY_TEXT && kc->type == TY_TEXT) *v = val_text(l->s, (uint32_t)strlen(l->s));
    else return 0;
    return 1;
}

int eng_pull_run(engine *e, query *q, int si, const ast_select *sel, int *point, xerr *err)
{
    table_rt *t = e->streams[si]->table;
    pull_ctx c = {q, {0}, err, 0};
    int rc = eng_txn(e, err);
    if (rc) return rc;
    if (batch_init(&c.b, t->nval, 1024)) return xerr_set(err, XE_NOMEM, "out of memory");
    val key;
    *point = point_key(t, sel->where, &key);
    if (*point) {
        if (!(rc = tbl_get(t, e->txn, &key, pull_row, &c, err))) rc = c.rc;
    } else
        rc = tbl_scan(t, e->txn, pull_row, &c, err);
    if (rc > 0 && !c.rc) rc = 0; /* the LIMIT stopped the scan */
    if (!rc) rc = pull_flush(&c);
    batch_fini(&c.b);
    if (!rc && !q->finished) rc = query_watermark(q, 0, WM_END, err);
    return rc;
}
