/*
 * coord_catalog.c: the coordinator's catalog.  Every write goes to this
 * node's LMDB (engine_host_put) and to the standby coordinators (CATALOG
 * frames; a standby that joins gets the whole catalog first), so that a
 * standby that takes over has it.  Here too: the lookups of a stream, a
 * partition and a query by name, the records of streams
 * ("stream/<name>"), of the coordinator's term and of the next query id,
 * the cluster's settings (SET placement, replicas, ft, shadow,
 * checkpoint_interval, rebalance_*), the choice of a stream's shadow home,
 * and which members count as alive.  Query records are coord_query.c's;
 * everything is read back at start (coord_start.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster/coord.h"

/* The CREATE STREAM text without its `source` option, or NULL when it has none. */
char *strip_source(const char *sql)
{
    ast_stmt *st = NULL;
    xerr err;
    if (parse_one(sql, strlen(sql), &st, &err)) return NULL;
    char *out = NULL;
    ast_options *w = st->kind == ST_CREATE_STREAM ? st->with : NULL;
    for (int i = 0; w && i < w->n; i++) {
        if (strcmp(w->v[i].key, "source")) continue;
        ast_option keep = w->v[i];
        w->v[i] = w->v[w->n - 1];
        w->v[w->n - 1] = keep;
        w->n--;
        sbuf b;
        sbuf_init(&b);
        if (!ast_print_stmt(st, &b)) out = sbuf_steal(&b);
        sbuf_fini(&b);
        w->n++; /* so that ast_stmt_free frees it */
        break;
    }
    ast_stmt_free(st);
    return out;
}

/* What a stream's CREATE makes: SK_DERIVED (a CREATE STREAM AS's, WITH
 * derived = 'true'), SK_TABLE (CREATE TABLE), or 0. */
int stream_kind(const char *sql)
{
    ast_stmt *st = NULL;
    xerr err;
    int k = 0;
    if (sql && !parse_one(sql, strlen(sql), &st, &err)) {
        const ast_option *o = ast_option_get(st->with, "derived");
        if (st->kind == ST_CREATE_STREAM && o && !strcasecmp(o->value, "true")) k = SK_DERIVED;
        if (st->kind == ST_CREATE_TABLE) k = SK_TABLE;
    }
    ast_stmt_free(st);
    return k;
}

const char *stream_sql_for(const cstream *c, const char *node_name)
{
    return c->lite && strcmp(node_name, c->home) ? c->lite : c->sql;
}

int coord_joined(const peer *p) { return p->slots > 0 && !p->is_coord; }

int coord_alive(const peer *p) { return coord_joined(p) && p->link && p->link->ready && p->state != WIRE_MEMBER_DEAD; }

/* A member that runs tasks and homes streams (not the standby coordinator). */
int coord_worker(const peer *p) { return coord_alive(p) && !p->standby; }

static void catalog_send(node *n, cs *to, int op, const char *key, const void *v, size_t len)
{
    wire_msg m = {.type = WIRE_CATALOG};
    m.u.catalog.term = n->term;
    m.u.catalog.op = (uint8_t)op;
    m.u.catalog.key = wire_str_of(key);
    m.u.catalog.value = (wire_str){v, (uint32_t)len};
    cs_send_msg(to, &m);
}

/* Every catalog write goes to our LMDB and to the standby coordinators. */
int cat_put(node *n, const char *key, const void *v, size_t len, xerr *err)
{
    int rc = engine_host_put(n->eng, key, v, len, err);
    for (int i = 0; !rc && i < n->npeers; i++)
        if (n->peers[i]->standby && coord_alive(n->peers[i])) catalog_send(n, n->peers[i]->link, WIRE_CAT_PUT, key, v, len);
    return rc;
}

int cat_del(node *n, const char *key, xerr *err)
{
    int rc = engine_host_del(n->eng, key, err);
    for (int i = 0; !rc && i < n->npeers; i++)
        if (n->peers[i]->standby && coord_alive(n->peers[i])) catalog_send(n, n->peers[i]->link, WIRE_CAT_DEL, key, NULL, 0);
    return rc;
}

static int dump_one(void *ctx, const char *key, const void *v, size_t len)
{
    cs *to = ctx;
    catalog_send(to->n, to, WIRE_CAT_PUT, key, v, len);
    return 0;
}

/* A standby joined: the whole catalog, then every change (cat_put). */
void catalog_dump(node *n, cs *to)
{
    xerr err;
    catalog_send(n, to, WIRE_CAT_BEGIN, "", NULL, 0);
    if (engine_host_scan(n->eng, "", dump_one, to, &err)) {
        node_log(n, NET_LOG_ERROR, "cannot send the catalog to the standby: %s", err.msg);
        return;
    }
    catalog_send(n, to, WIRE_CAT_END, "", NULL, 0);
}

int persist_term(node *n, xerr *err)
{
    char v[32];
    int len = snprintf(v, sizeof v, "%llu", (unsigned long long)n->term);
    return cat_put(n, "coord_term", v, (size_t)len, err);
}

cstream *stream_find(coord *co, const char *name)
{
    for (int i = 0; i < co->nstreams; i++)
        if (!strcasecmp(co->streams[i].name, name)) return &co->streams[i];
    /* "s#0" is partition 0 of s: the stream itself */
    size_t l = strlen(name);
    for (int i = 0; l > 2 && !strcmp(name + l - 2, "#0") && i < co->nstreams; i++)
        if (strlen(co->streams[i].name) == l - 2 && !strncasecmp(co->streams[i].name, name, l - 2)) return &co->streams[i];
    return NULL;
}

/* Partition p of stream `name` (p = 0: the stream itself), or NULL. */
cstream *partition_find(coord *co, const char *name, int p)
{
    char pn[300];
    engine_partition_name(name, p, pn, sizeof pn);
    return stream_find(co, pn);
}

cquery *query_find(coord *co, const char *name)
{
    for (cquery *q = co->queries; q; q = q->next)
        if (q->name && !strcasecmp(q->name, name)) return q;
    return NULL;
}

int persist_next_qid(node *n, xerr *err)
{
    char v[32];
    int len = snprintf(v, sizeof v, "%u", n->co->next_qid);
    return cat_put(n, "next_qid", v, (size_t)len, err);
}

/* Parse an interval setting ('5 seconds') into ms. */
int coord_interval_ms(const char *v, int64_t *ms, xerr *err)
{
    xerr e2;
    if (plan_parse_interval(v, ms, &e2) || *ms <= 0)
        return xerr_set(err, XE_INVAL, "checkpoint_interval must be a positive interval such as '5 seconds', not '%s'", v);
    return 0;
}

/* SET placement and SET replicas: checked (apply = 0), then applied. */
int check_cluster_setting(coord *co, const ast_stmt *st, int apply, xerr *err)
{
    const ast_lit *l = &st->set_value;
    if (!strcmp(st->set_key, "offset")) {
        /* the nodes' engines check the value (coord_exec_local runs it first) */
        if (apply && l->type == TY_TEXT) co->offset_earliest = !strcmp(l->s, "earliest");
    } else if (!strcmp(st->set_key, "placement")) {
        nirvana_strategy s;
        if (l->type != TY_TEXT || nirvana_strategy_parse(l->s, &s))
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col,
                           "placement must be 'nirvana', 'round-robin', 'resource-aware' or 'random'");
        if (apply) co->placement = s;
    } else if (!strcmp(st->set_key, "replicas")) {
        if (l->type != TY_BIGINT || l->i < 0 || l->i > 8)
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col, "replicas must be an integer from 0 to 8");
        if (apply) co->replicas = (int)l->i;
    } else if (!strcmp(st->set_key, "ft")) {
        engine_ft f;
        if (l->type != TY_TEXT || engine_ft_parse(l->s, &f))
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col,
                           "ft must be 'replica', 'checkpoint', 'upstream' or 'none'");
        if (apply) co->ft = f;
    } else if (!strcmp(st->set_key, "shadow")) {
        if (l->type != TY_TEXT || (strcmp(l->s, "input") && strcmp(l->s, "log")))
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col, "shadow must be 'input' or 'log'");
        if (apply) co->shadow_log = !strcmp(l->s, "log");
    } else if (!strcmp(st->set_key, "checkpoint_interval")) {
        int64_t ms;
        if (l->type != TY_TEXT)
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col,
                           "checkpoint_interval must be an interval such as '5 seconds'");
        int rc = coord_interval_ms(l->s, &ms, err);
        if (rc) return rc;
        if (apply) co->ckpt_ms = ms;
    } else if (!strcmp(st->set_key, "rebalance_interval") || !strcmp(st->set_key, "rebalance_threshold")) {
        double v;
        if (engine_rebalance_setting(st->set_key, l, &v, err)) {
            err->line = st->set_line;
            err->col = st->set_col;
            return err->code;
        }
        if (apply && st->set_key[10] == 'i') {
            co->rb_ms = (int64_t)v;
            co->rb_next = 0;
        } else if (apply)
            co->rb_threshold = v;
    }
    return 0;
}

/* How many of the streams' homes and shadows a node is (its share of the
 * decoding and logging of the input), counting `more` homes (of partitions
 * not in the catalog yet). */
static int ingest_roles(const coord *co, const char *name, const char *const *more, int nmore)
{
    int r = 0;
    for (int i = 0; i < co->nstreams; i++) {
        const cstream *c = &co->streams[i];
        r += (c->home && !strcmp(c->home, name)) + (c->shadow && !strcmp(c->shadow, name)) +
             (c->lshadow && !strcmp(c->lshadow, name));
    }
    for (int i = 0; i < nmore; i++) r += more[i] && !strcmp(more[i], name);
    return r;
}

/* A live node in another domain than home's for a stream's shadow (this
 * one included), taken round-robin from `start`; NULL when there is none.
 * `more` (nmore of them) are the homes of partitions yet to be made. */
const char *pick_shadow(node *n, const char *home, int start, const char *const *more, int nmore)
{
    const char *hd = n->cfg.domain, *best = NULL;
    double best_score = 0;
    peer *hp = strcmp(home, n->cfg.name) ? node_peer(n, home, strlen(home)) : NULL;
    if (hp) hd = hp->domain;
    int nc = n->npeers + 1;
    /* the shadow decodes and logs all of the stream's input, as its home
     * does: of the candidates, the one with the most capacity for one more
     * such role, capacity / (1 + the homes and shadows it is already), the
     * first from `start` among equals (within 5 %), so that streams spread.
     * (Until session 10 only the capacity counted, and in session 9's runs
     * two of the three homes shadowed another partition too, whichever the
     * round-robin gave: twice the ingest on them.) */
    for (int k = 0; k < nc; k++) {
        int i = (start + k) % nc;
        const char *name = i == n->npeers ? n->cfg.name : n->peers[i]->name;
        const char *dom = i == n->npeers ? n->cfg.domain : n->peers[i]->domain;
        if (i < n->npeers && !coord_worker(n->peers[i])) continue;
        if (!strcmp(dom, hd) || !strcmp(name, home)) continue;
        double cap = i == n->npeers ? n->cfg.speed : n->peers[i]->speed_milli / 1000.0;
        int roles = ingest_roles(n->co, name, more, nmore);
        /* this node forwards every stream's input and runs the sinks: as
         * many roles again as there are streams (a shadow here only when
         * no other node has room) */
        if (i == n->npeers) roles += 1 + n->co->nstreams + nmore;
        double score = cap / (1 + roles);
        if (!best || score > best_score * 1.05) {
            best = name;
            best_score = score;
        }
    }
    return best;
}

/* "stream/<name>" = home [TAB shadow [TAB lshadow]] LF CREATE STREAM text */
int persist_stream(node *n, cstream *c, xerr *err)
{
    char key[600];
    snprintf(key, sizeof key, "stream/%s", c->name);
    sbuf rec;
    sbuf_init(&rec);
    sbuf_printf(&rec, "%s\t%s\t%s\n%s", c->home, c->shadow ? c->shadow : "", c->lshadow ? c->lshadow : "", c->sql);
    int rc = cat_put(n, key, rec.p, rec.len, err);
    sbuf_fini(&rec);
    return rc;
}
