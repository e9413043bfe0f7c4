/*
 * meta.c: what every layer of the engine reads: the lookups of a stream or
 * a query by name, a stream's watermark, a notice to the client, the open
 * epoch's write transaction (eng_txn: the epoch begins here and commits in
 * epoch.c, the one place that commits), the u64 records of `meta`, and the
 * parsers of the settings' values that the catalog's load reads too.
 *
 * The bottom of the engine's runtime: it calls only storage/ and base/.
 * Runs on the engine's thread.
 */
#include "exec/internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void eng_notice(const exec_out *out, const char *fmt, ...)
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

query *eng_find_query(const engine *e, const char *name)
{
    for (int i = 0; i < e->nqueries; i++)
        if (e->queries[i]->name && !strcmp(e->queries[i]->name, name)) return e->queries[i];
    return NULL;
}

void engine_partition_name(const char *name, int p, char *out, size_t cap)
{
    if (p) snprintf(out, cap, "%s#%d", name, p);
    else snprintf(out, cap, "%s", name);
}

int64_t eng_stream_wm(const stream_rt *s)
{
    if (s->ended) return WM_END;
    if (s->guard) return s->rel_wm; /* what the queries were given */
    if (s->derived) return s->wm;
    if (s->max_ts == WM_MIN || s->ps->ts_col < 0) return WM_MIN;
    return s->max_ts - s->ps->watermark_ms;
}

const plan_stream *eng_stream_input(const stream_rt *s) { return s->table ? s->table->in : s->ps; }
int eng_stream_made_by_query(const stream_rt *s) { return s->derived || (s->table && s->table->from_query); }

void eng_dec_opts(const stream_rt *s, fmt_dec_opts *d)
{
    memset(d, 0, sizeof *d);
    d->delim = s->delim;
    d->null_string = s->null_string;
    d->time_col = eng_stream_input(s)->ts_col + 1;
    if (s->table) {
        for (int i = 0; i < s->table->nkey; i++)
            if (s->table->key[i] < 64) d->key_cols |= 1ull << s->table->key[i];
        d->op_col = s->table->op_col + 1;
    }
    /* a socket's producer cannot choose: the stream's WITH says */
    d->kind_note = s->kind == FMT_CSV ? "the stream's format is csv (format = 'json' in its WITH reads JSON)"
                                      : "the stream's format is json (format = 'csv' in its WITH reads CSV)";
}

/* After a failed epoch commit the engine's memory (window state marked
 * flushed, offsets, sink lengths) is ahead of what LMDB holds, so a later
 * epoch would record positions past state it never wrote: nothing more is
 * written until a restart recovers from the last committed epoch. */
static int broken(const engine *e, xerr *err)
{
    return xerr_set(err, XE_IO, "nothing more is written after a failed commit (%s); restart to go on from the "
                    "last committed epoch", e->broken_msg);
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

int eng_put_u64s(store_txn *t, const char *key, const uint64_t *v, int n, xerr *err)
{
    unsigned char buf[(8 + ENGINE_MAX_SRC) * 8];
    for (int i = 0; i < n; i++) be64_put(buf + 8 * i, v[i]);
    return store_kv_put(t, STORE_META, key, buf, (size_t)n * 8, err);
}

int eng_get_u64s(store_txn *t, const char *key, uint64_t *v, int n, sbuf *tmp, xerr *err)
{
    int rc = store_kv_get(t, STORE_META, key, tmp, err);
    if (rc) return rc;
    if (tmp->len < (size_t)n * 8) return xerr_set(err, XE_CORRUPT, "meta record '%s' is truncated", key);
    for (int i = 0; i < n; i++) v[i] = be64_get((unsigned char *)tmp->p + 8 * i);
    return 0;
}

/* The offsets past slot 1 that "query/<id>" holds (epoch.c, put_query_meta). */
int eng_meta_extra(const query *q) { return q->nsrc > 2 ? q->nsrc - 2 : 0; }

/* The number of catalog entries, kept in meta: LMDB has no page checksums,
 * and a damaged page can make catalog entries vanish without an error; the
 * count turns that into one at the next open. */
static int count_one(void *ctx, const char *key, const void *v, size_t n)
{
    (void)key; (void)v; (void)n;
    (*(uint64_t *)ctx)++;
    return 0;
}

int eng_catalog_count(store_txn *t, uint64_t *n, xerr *err)
{
    *n = 0;
    return store_kv_scan(t, STORE_CATALOG, "", count_one, n, err);
}

uint32_t query_task_id(const query *q, int op, int task)
{
    return q->id * 4096u + (uint32_t)op * 64u + (uint32_t)task;
}

/* A table's rows are kept under a task id of their own: the last task of a
 * query id that no query gets (meta "table/<name>" holds the id; a push
 * query's updating aggregate keeps its changelog's state so too). */
uint32_t eng_table_tid(uint32_t id) { return id * 4096u + 4095u; }

/* Settings' values that the catalog's load reads as SET does (show.c). */
int eng_offset_parse(const char *v, int *earliest)
{
    if (!strcmp(v, "earliest")) *earliest = 1;
    else if (!strcmp(v, "latest")) *earliest = 0;
    else return -1;
    return 0;
}

int eng_bytes_parse(const char *v, uint64_t *bytes)
{
    static const struct { const char *unit; uint64_t mul; } units[] = {
        {"", 1},          {"b", 1},         {"byte", 1},       {"bytes", 1},      {"kb", 1000},
        {"kib", 1 << 10}, {"mb", 1000000},  {"mib", 1 << 20},  {"gb", 1000000000}, {"gib", 1 << 30},
    };
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || errno || !(x >= 0) || x > 1e15) return -1;
    while (*end == ' ') end++;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (!strcasecmp(end, units[i].unit)) {
            *bytes = (uint64_t)(x * (double)units[i].mul);
            return 0;
        }
    return -1;
}
