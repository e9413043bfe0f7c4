/*
 * coord_derive.c: a cluster's derived streams (CREATE STREAM AS).  The
 * stream is made on every node with derived = 'true' (its home and shadow
 * chosen as for any stream fed through the coordinator); its query runs as
 * a standing query whose sink is here.  The sink's rows, once each
 * (coord_out.c drops what a recovery produced again), wait until the
 * sink's watermark passes their event time, then go with that watermark in
 * one DERIVE frame to the stream's home and its shadow: the same frames in
 * the same order, so the same log, and the shadow can take over.
 *
 * So every row in the stream's log is at or below its watermark, and a row
 * at or below it that comes again is one the log has (a new coordinator,
 * after a takeover, starts with no record of what was sent): the home
 * drops it (engine_stream_feed).  No row is lost either: a row the sink
 * produced and had not sent waits here, and one lost with this node comes
 * again from the redeployed query, above the watermark the home has.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster/coord.h"

/* q writes stream `target`: its event time is the column the stream's
 * CREATE names (WITH timestamp). */
int derive_bind(node *n, cquery *q, const char *target, xerr *err)
{
    cstream *c = stream_find(n->co, target);
    if (!c || !c->derived) return xerr_set(err, XE_NOTFOUND, "derived stream '%s' is not in the catalog", target);
    ast_stmt *st = NULL;
    int rc = parse_one(c->sql, strlen(c->sql), &st, err);
    if (rc) return rc;
    const ast_option *o = ast_option_get(st->with, "timestamp");
    q->tcol = -1;
    for (int i = 0; o && i < q->ncols; i++)
        if (!strcasecmp(q->names[i], o->value)) q->tcol = i;
    ast_stmt_free(st);
    if (q->tcol < 0) return xerr_set(err, XE_CORRUPT, "derived stream '%s' has no event time column in its query", target);
    free(q->target);
    if (!(q->target = strdup(target))) return xerr_set(err, XE_NOMEM, "out of memory");
    q->dwm = INT64_MIN;
    sbuf_init(&q->denc);
    return 0;
}

void derive_fini(cquery *q)
{
    free(q->target);
    q->target = NULL;
    if (q->dwait_on) batch_fini(&q->dwait);
    q->dwait_on = 0;
    sbuf_fini(&q->denc);
}

int derive_rows(node *n, cquery *q, const batch *b)
{
    if (!q->dwait_on) {
        if (batch_init(&q->dwait, b->ncols, b->nrows > 64 ? b->nrows : 64)) return XE_NOMEM;
        q->dwait_on = 1;
    }
    for (int r = 0; r < b->nrows; r++)
        if (batch_append_row(&q->dwait, batch_row(b, r))) return XE_NOMEM;
    derive_flush(n, q);
    return 0;
}

/* One DERIVE to node `to` (this one: fed here). */
static void derive_send(node *n, const char *to, const char *stream, int64_t wm, const sbuf *rows, uint32_t nrows)
{
    if (!strcmp(to, n->cfg.name)) {
        node_derive(n, stream, strlen(stream), wm, rows->p, nrows ? rows->len : 0);
        return;
    }
    peer *x = node_peer(n, to, strlen(to));
    if (!x || !coord_alive(x)) return; /* its death makes the shadow the home, which has every frame */
    wire_msg m = {.type = WIRE_DERIVE};
    m.u.derive.stream = wire_str_of(stream);
    m.u.derive.wm = wm;
    m.u.derive.nrows = nrows;
    m.u.derive.rows = (wire_str){nrows ? rows->p : NULL, nrows ? (uint32_t)rows->len : 0};
    cs_send_msg(x->link, &m);
}

/* Rows of one frame at most: a frame stays far below WIRE_MAX_PAYLOAD. */
#define DERIVE_ROWS 8192

static int64_t row_time(const cquery *q, const val *row)
{
    const val *v = &row[q->tcol];
    return v->type == TY_NULL ? INT64_MIN : v->i;
}

static const cquery *sort_q;
static int by_time(const void *a, const void *b)
{
    const val *ra = batch_row(&sort_q->dwait, *(const int *)a), *rb = batch_row(&sort_q->dwait, *(const int *)b);
    int64_t x = row_time(sort_q, ra), y = row_time(sort_q, rb);
    if (x != y) return x < y ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

/* The rows the sink's watermark has passed go to the stream's home and
 * shadow, in event-time order, each frame with the watermark step that
 * passes its rows and no later row (the last: the sink's watermark); a
 * time's rows share a frame, so a frame's rows are in the log exactly when
 * its step is.  The rest wait.  A watermark that moved goes alone. */
void derive_flush(node *n, cquery *q)
{
    if (!q->target || q->ended) return;
    cstream *c = stream_find(n->co, q->target);
    int64_t wm;
    xerr err;
    if (!c || engine_deployed_sink_wm(n->eng, q->qid, &wm, &err) || wm == INT64_MIN) return;
    int nw = q->dwait_on ? q->dwait.nrows : 0, go = 0;
    for (int r = 0; r < nw; r++) go += row_time(q, batch_row(&q->dwait, r)) <= wm;
    if (!go && wm <= q->dwm) return;
    int *ix = go ? malloc((size_t)go * sizeof *ix) : NULL;
    batch rest = {0}, part = {0};
    if (go && (!ix || batch_init(&rest, q->dwait.ncols, nw - go + 16) || batch_init(&part, q->dwait.ncols, 1024))) {
        free(ix);
        if (rest.ncols) batch_fini(&rest);
        return; /* out of memory: they go with the next flush */
    }
    for (int r = 0, k = 0; r < nw; r++) {
        const val *row = batch_row(&q->dwait, r);
        if (row_time(q, row) <= wm) ix[k++] = r;
        else if (batch_append_row(&rest, row)) goto oom;
    }
    if (go) {
        sort_q = q;
        qsort(ix, (size_t)go, sizeof *ix, by_time);
    }
    for (int at = 0; at < go || (!go && wm > q->dwm);) {
        int end = at + DERIVE_ROWS < go ? at + DERIVE_ROWS : go;
        while (end < go && row_time(q, batch_row(&q->dwait, ix[end])) == row_time(q, batch_row(&q->dwait, ix[end - 1])))
            end++;
        batch_reset(&part);
        for (int k = at; k < end; k++)
            if (batch_append_row(&part, batch_row(&q->dwait, ix[k]))) goto oom;
        sbuf_reset(&q->denc);
        if (end > at && batch_encode(&part, &q->denc)) goto oom;
        int64_t step = end < go ? row_time(q, batch_row(&q->dwait, ix[end - 1])) : wm;
        if (step < q->dwm) step = q->dwm;
        derive_send(n, c->home, c->name, step, &q->denc, (uint32_t)(end - at));
        if (c->shadow) derive_send(n, c->shadow, c->name, step, &q->denc, (uint32_t)(end - at));
        q->dwm = step;
        at = end;
        if (!go) break;
    }
    if (go) {
        batch_fini(&q->dwait);
        q->dwait = rest;
        rest.ncols = 0;
    }
oom:
    free(ix);
    if (rest.ncols) batch_fini(&rest);
    if (part.ncols) batch_fini(&part);
}
