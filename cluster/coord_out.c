/*
 * coord_out.c: a query's output at the coordinator, where its sink runs.
 * Rows leave the sink through cq_rows: repeats are dropped (dd_filter:
 * after a redeployment the query produces again what it had delivered),
 * then they go to the subscribers as RESULT parts, with the sink's
 * watermark (RES_WM) for a client that may fail over.  After a takeover the
 * rows are kept (the backlog) until a subscriber attaches again (ATTACH),
 * saying which rows it has; it gets its own dedup table until the sink
 * passes its watermark.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/coord.h"

static rowtab_ent *dd_slot(ddtab *t, uint64_t h)
{
    if (t->dd.len * 2 >= t->dd.cap && rowtab_rehash(&t->dd, t->dd.cap ? t->dd.cap * 2 : 1024, NULL, NULL))
        return NULL;
    return rowtab_slot(&t->dd, h);
}

void dd_fini(ddtab *t)
{
    rowtab_fini(&t->dd);
    if (t->fb_on) batch_fini(&t->fb);
    memset(t, 0, sizeof *t);
}

/* Exactly-once output across redeployments: a redeployed query recomputes
 * its output from the logs, so its k-th production of a row is a duplicate
 * while the row was delivered at least k times.  Rows are compared by a
 * 64-bit hash of their values (a collision would drop a row: 2^-64 odds per
 * pair).  Keeps 16 bytes per distinct row delivered: not bounded yet. */
static int dd_filter(ddtab *t, const batch *b, const batch **out)
{
    *out = b;
    if (!t->fb_on) {
        if (batch_init(&t->fb, b->ncols, b->nrows)) return XE_NOMEM;
        t->fb_on = 1;
    }
    batch_reset(&t->fb);
    int dropped = 0;
    int64_t now = clock_mono_ns() / 1000000;
    for (int r = 0; r < b->nrows; r++) {
        const val *row = batch_row(b, r);
        uint64_t h = row_hash(row, b->ncols);
        rowtab_ent *x = dd_slot(t, h);
        if (!x) return XE_NOMEM;
        if (!x->count) {
            x->h = h;
            t->dd.len++;
        }
        x->seen++;
        if (x->seen <= x->count) {
            dropped++;
            continue;
        }
        x->count++;
        x->at = now;
        if (batch_append_row(&t->fb, row)) return XE_NOMEM;
    }
    if (dropped) *out = &t->fb;
    return 0;
}

static int keep_seen(rowtab_ent *e, void *ctx)
{
    (void)ctx;
    if (e->seen == 0) return 0;
    e->count = e->seen;
    return 1;
}

/* Keep only the rows that still matter: after a recovery has caught up,
 * those the new deployment produced (a row delivered before but not produced
 * again lies behind the restored state: it will not come again); otherwise
 * those delivered in the last `keep_ms` (a replica is never older). */
int dd_rebuild(ddtab *d, int caught_up, int64_t keep_ms)
{
    int64_t cut = clock_mono_ns() / 1000000 - keep_ms;
    int (*keep)(rowtab_ent *, void *) = caught_up ? keep_seen : rowtab_since;
    size_t n = rowtab_count(&d->dd, keep, &cut), cap = 1024;
    while (cap < n * 2 + 2) cap *= 2;
    return rowtab_rehash(&d->dd, cap, keep, &cut);
}

void csub_free(csub *x)
{
    if (x->dt) {
        dd_fini(x->dt);
        free(x->dt);
    }
    sbuf_fini(&x->enc);
    free(x);
}

/* Rows while no subscriber is back after a takeover: kept (64 MiB at most)
 * until one attaches and says what it has. */
static int backlog_add(cquery *q, const batch *b)
{
    if (q->backlog.len > 64u * 1024 * 1024) return 0;
    size_t at = q->backlog.len;
    unsigned char len[4] = {0};
    if (sbuf_add(&q->backlog, len, 4) || batch_encode(b, &q->backlog)) return XE_NOMEM;
    be32_put((unsigned char *)q->backlog.p + at, (uint32_t)(q->backlog.len - at - 4));
    return 0;
}

static void send_wm(cquery *q, int64_t wm)
{
    unsigned char v[8];
    be64_put(v, (uint64_t)wm);
    for (csub *x = q->subs; x; x = x->next) cs_result(x->to, x->req, 0, RES_WM, 0, v, sizeof v);
    q->wm_sent = wm;
}

/* Rows to one subscriber that attached again: those it has are dropped
 * (its own table) until the sink passes its watermark. */
static int csub_rows(csub *x, const batch *b)
{
    if (dd_filter(x->dt, b, &b)) return XE_NOMEM;
    if (!b->nrows) return 0;
    sbuf_reset(&x->enc);
    if (batch_encode(b, &x->enc)) return XE_NOMEM;
    return cs_result(x->to, x->req, 0, RES_ROWS, (uint32_t)b->nrows, x->enc.p, x->enc.len);
}

int cq_rows(void *ctx, const batch *b)
{
    cquery *q = ctx;
    if (q->ended || !b->nrows) return 0;
    /* the sink's watermark these rows were produced at: a client that
     * attaches again after a failover says where it was */
    int64_t wm;
    xerr err;
    if (q->subs && (!q->push || q->keep) && !engine_deployed_sink_wm(q->co_node->eng, q->qid, &wm, &err) && wm != q->wm_sent)
        send_wm(q, wm);
    if (dd_filter(&q->dt, b, &b)) return XE_NOMEM;
    if (!b->nrows) return 0;
    q->rows += b->nrows;
    if (engine_deployed_sink_rows(q->co_node->eng, q->qid, b, &err)) return XE_NOMEM;
    if (q->target && derive_rows(q->co_node, q, b)) return XE_NOMEM;
    /* for the subscribers that may still attach again */
    if (q->orphan_until && clock_wall_ms() < q->orphan_until && backlog_add(q, b)) return XE_NOMEM;
    if (!q->subs) return 0;
    sbuf_reset(&q->enc);
    for (csub *x = q->subs; x; x = x->next) {
        if (x->dt) {
            if (csub_rows(x, b)) return XE_NOMEM;
            continue;
        }
        if (!q->enc.len && batch_encode(b, &q->enc)) return XE_NOMEM;
        cs_result(x->to, x->req, 0, RES_ROWS, (uint32_t)b->nrows, q->enc.p, q->enc.len);
    }
    return 0;
}

int cq_begin(cquery *q, cs *to, uint64_t req)
{
    fmt_schema sc = {q->ncols, (const char *const *)q->names, q->types};
    sbuf b;
    sbuf_init(&b);
    int rc = res_begin_put(&b, &sc, 1);
    if (!rc) rc = cs_result(to, req, 0, RES_BEGIN, 0, b.p + 1, b.len - 1);
    sbuf_fini(&b);
    return rc;
}

/* A client that was subscribed to a query through the coordinator we took
 * over from: it says which rows it has (hash, times) and the sink watermark
 * they came at; the rows the redeployed query produces again are dropped
 * until its sink passes that watermark (dd_filter), starting with the
 * backlog kept since the takeover. */
void coord_attach(node *n, cs *s, const wire_msg *m)
{
    const __typeof__(m->u.attach) *a = &m->u.attach;
    char name[512];
    snprintf(name, sizeof name, "%.*s", (int)a->query.n, a->query.p);
    cquery *q = query_find(n->co, name);
    if (!q || (q->push && !q->keep)) {
        cs_error(s, a->req_id, XE_NAME, "no query to attach to (it ended or was dropped)");
        return;
    }
    /* a push query has one owner: a connection of it we still hold is a
     * lost one we have not noticed yet */
    while (q->push && q->subs) {
        csub *o = q->subs;
        q->subs = o->next;
        csub_free(o);
    }
    csub *x = calloc(1, sizeof *x);
    if (!x || !(x->dt = calloc(1, sizeof *x->dt))) {
        free(x);
        cs_error(s, a->req_id, XE_NOMEM, "out of memory");
        return;
    }
    x->to = s;
    x->req = a->req_id;
    sbuf_init(&x->enc);
    uint32_t nrows = a->rows.n / 12;
    int64_t now = clock_mono_ns() / 1000000;
    for (uint32_t i = 0; i < nrows; i++) {
        const unsigned char *e = (const unsigned char *)a->rows.p + i * 12;
        uint64_t h = be64_get(e);
        uint32_t times = be32_get(e + 8);
        rowtab_ent *r = h && times ? dd_slot(x->dt, h) : NULL;
        if (!r) continue;
        if (!r->count) {
            r->h = h;
            x->dt->dd.len++;
        }
        if (times > r->count) r->count = times;
        r->at = now;
    }
    /* the rows produced at the client's watermark come again before the
     * sink passes it: until then they are duplicates */
    x->catchup_wm = a->wm == INT64_MIN ? INT64_MIN : a->wm + 1;
    /* what the sink produced since the takeover, then live rows, through
     * the client's own table */
    batch b;
    int rc = batch_init(&b, q->ncols, 64);
    for (size_t at = 0; !rc && at + 4 <= q->backlog.len;) {
        uint32_t len = be32_get((const unsigned char *)q->backlog.p + at);
        xerr err;
        batch_reset(&b);
        if (batch_decode(q->backlog.p + at + 4, len, &b, &err) == 0) rc = csub_rows(x, &b);
        at += 4 + len;
    }
    batch_fini(&b);
    x->next = q->subs;
    q->subs = x;
    q->wm_sent = INT64_MIN; /* every subscriber hears the sink's watermark with the next rows */
    node_log(n, NET_LOG_INFO, "a client attached to %s again: it has %u distinct rows, watermark %lld; %zu bytes "
             "kept since the takeover", q->name, nrows, (long long)a->wm, q->backlog.len);
}
