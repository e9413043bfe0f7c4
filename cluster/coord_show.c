/*
 * coord_show.c: the statements whose answer is gathered from the cluster.
 * SHOW STREAMS and SHOW QUERIES run on this node and on the members
 * (gather: a PK_GATHER pend takes each node's table) and are merged; SHOW
 * NODES is the coordinator's member list; EXPLAIN PLACEMENT scores a
 * query's placement as the game sees it now, with the inputs it used.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cluster/coord.h"

/* The rows of an engine's SHOW STREAMS (name, columns, timestamp,
 * watermark_delay_ms, source, rows, rejected, watermark, log_bytes) for
 * the streams whose home is `home`. */
static void take_stream_stats(coord *co, const char *home, const batch *b)
{
    if (b->ncols < 9) return;
    for (int r = 0; r < b->nrows; r++) {
        const val *v = batch_row(b, r);
        if (v[0].type != TY_TEXT) continue;
        for (int i = 0; i < co->nstreams; i++) {
            cstream *c = &co->streams[i];
            if (strlen(c->name) != v[0].len || memcmp(c->name, v[0].s, v[0].len) || strcmp(c->home, home)) continue;
            c->known = 1;
            c->rows = v[5].type == TY_NULL ? 0 : v[5].i;
            c->rejected = v[6].type == TY_NULL ? 0 : v[6].i;
            c->log_bytes = v[8].type == TY_NULL ? 0 : v[8].i;
            snprintf(c->wm, sizeof c->wm, "%.*s", v[7].type == TY_TEXT ? (int)v[7].len : 0,
                     v[7].type == TY_TEXT ? v[7].s : "");
        }
    }
}

static void streams_take(node *n, pend *p, const char *from, const batch *b)
{
    (void)p;
    take_stream_stats(n->co, from, b);
}

/* A statement's table here and on some nodes (want(n, peer) = 1), each
 * given to take, then fin(n, client, req) answers the client; 1 while nodes
 * answer, as job_broadcast, 0 when fin ran at once. */
typedef struct gather_here {
    node *n;
    pend *p;
} gather_here;

static int gh_rows(void *ctx, const batch *b)
{
    gather_here *g = ctx;
    g->p->take(g->n, g->p, g->n->cfg.name, b);
    return 0;
}

static void gather_fin(node *n, pend *p);

static int gather(node *n, cs *s, uint64_t req, const ast_stmt *st, const char *sql, int (*want)(const peer *x),
                  void (*take)(node *n, pend *p, const char *from, const batch *b), void (*fin)(node *n, pend *p),
                  xerr *err)
{
    pend *p = pend_new(n, PK_GATHER);
    if (!p) return xerr_set(err, XE_NOMEM, "out of memory");
    p->client = s;
    p->creq = req;
    p->take = take;
    gather_here g = {n, p};
    exec_out out = {.ctx = &g, .rows = gh_rows};
    int rc = engine_exec(n->eng, st, &out, err);
    wire_msg m = {.type = WIRE_QUERY};
    m.u.query.req_id = p->id;
    m.u.query.sql = wire_str_of(sql);
    sbuf b;
    sbuf_init(&b);
    if (!rc) rc = wire_msg_payload(&b, &m, err);
    for (int i = 0; !rc && i < n->npeers; i++) {
        peer *x = n->peers[i];
        if (want(x) && cs_send(x->link, WIRE_QUERY, 0, b.p, b.len) == 0) rc = pend_wait_for(p, x);
    }
    sbuf_fini(&b);
    if (rc || p->nwait == 0) {
        pend_unlink(n, p);
        if (!rc) fin(n, p);
        pend_free(p);
        return rc;
    }
    p->done = gather_fin;
    p->fin = fin;
    return 1;
}

static void gather_fin(node *n, pend *p)
{
    if (!p->client) return;
    p->fin(n, p);
    n->co->job_step(n, p);
}

static void streams_table(node *n, cs *s, uint64_t req);

static void streams_fin(node *n, pend *p)
{
    if (p->client) streams_table(n, p->client, p->creq);
}

/* SHOW STREAMS in a cluster: where each stream lives and, from its home,
 * its rows, rejected lines, watermark and log size (every node answers a
 * SHOW STREAMS of its own, a stream's home's row counts; a home that does
 * not answer leaves NULLs). */
int coord_show_streams(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err)
{
    for (int i = 0; i < n->co->nstreams; i++) n->co->streams[i].known = 0;
    return gather(n, s, req, st, "SHOW STREAMS;", coord_alive, streams_take, streams_fin, err);
}

/* SHOW QUERIES in a cluster: the embedded columns, each query's counts
 * summed over the nodes that run its tasks (rows_in where its sources run,
 * rows_out at the sink, late where windows dropped rows; rejected lines:
 * the most any node saw, as the home and its shadow both decode the input),
 * its watermark the least any node with input has. */
enum { SQ_NAME, SQ_IN = 3, SQ_OUT, SQ_IPS, SQ_OPS, SQ_LATE, SQ_REJ, SQ_WM, SQ_NCOLS = 11 };

static int copy_row(batch *to, const val *r)
{
    val *d = batch_add_row(to);
    if (!d) return XE_NOMEM;
    for (int c = 0; c < to->ncols; c++)
        if (r[c].type == TY_TEXT) {
            if (batch_put_text(to, &d[c], r[c].s, r[c].len)) return XE_NOMEM;
        } else
            d[c] = r[c];
    return 0;
}

static void add_double(val *to, const val *v)
{
    if (v->type != TY_DOUBLE) return;
    *to = val_double((to->type == TY_DOUBLE ? to->d : 0) + v->d);
}

static int wm_known(const val *v) { return v->type == TY_TEXT && !(v->len == 1 && v->s[0] == '-'); }

static void queries_take(node *n, pend *p, const char *from, const batch *b)
{
    (void)n; (void)from;
    if (b->ncols != SQ_NCOLS) return;
    if (!p->gb.ncols && batch_init(&p->gb, SQ_NCOLS, 8)) return;
    int first = from == n->cfg.name; /* the coordinator's own rows come first */
    for (int r = 0; r < b->nrows; r++) {
        const val *v = batch_row(b, r);
        if (first) {
            copy_row(&p->gb, v);
            continue;
        }
        for (int i = 0; i < p->gb.nrows; i++) {
            val *t = batch_row(&p->gb, i);
            if (t[SQ_NAME].len != v[SQ_NAME].len || memcmp(t[SQ_NAME].s, v[SQ_NAME].s, v[SQ_NAME].len)) continue;
            t[SQ_IN].i += v[SQ_IN].i;
            t[SQ_OUT].i += v[SQ_OUT].i;
            t[SQ_LATE].i += v[SQ_LATE].i;
            if (v[SQ_REJ].i > t[SQ_REJ].i) t[SQ_REJ].i = v[SQ_REJ].i;
            add_double(&t[SQ_IPS], &v[SQ_IPS]);
            add_double(&t[SQ_OPS], &v[SQ_OPS]);
            if (wm_known(&v[SQ_WM]) && (!wm_known(&t[SQ_WM]) || t[SQ_WM].len != v[SQ_WM].len ||
                                        memcmp(v[SQ_WM].s, t[SQ_WM].s, v[SQ_WM].len) < 0))
                batch_put_text(&p->gb, &t[SQ_WM], v[SQ_WM].s, v[SQ_WM].len);
            break;
        }
    }
}

static void queries_fin(node *n, pend *p)
{
    static const char *names[] = {"name", "state", "sink", "rows_in", "rows_out", "in_per_s", "out_per_s", "late",
                                  "rejected", "watermark", "sql"};
    static const sql_type types[] = {TY_TEXT, TY_TEXT, TY_TEXT, TY_BIGINT, TY_BIGINT, TY_DOUBLE, TY_DOUBLE,
                                     TY_BIGINT, TY_BIGINT, TY_TEXT, TY_TEXT};
    /* a derived stream's query writes its stream (as SHOW QUERIES embedded says) */
    for (int r = 0; r < p->gb.nrows; r++) {
        val *t = batch_row(&p->gb, r);
        char name[300];
        snprintf(name, sizeof name, "%.*s", (int)t[SQ_NAME].len, t[SQ_NAME].s);
        cquery *q = t[SQ_NAME].type == TY_TEXT ? query_find(n->co, name) : NULL;
        if (q && q->target) {
            char sink[320];
            snprintf(sink, sizeof sink, "stream %s", q->target);
            batch_put_text(&p->gb, &t[2], sink, strlen(sink));
        }
    }
    if (p->client) coord_send_table(p->client, p->creq, SQ_NCOLS, names, types, &p->gb);
}

int coord_show_queries(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err)
{
    return gather(n, s, req, st, "SHOW QUERIES;", coord_worker, queries_take, queries_fin, err);
}

static void streams_table(node *n, cs *s, uint64_t req)
{
    static const char *names[] = {"name", "home", "shadow", "copy", "rows", "rejected", "watermark", "log_bytes", "sql"};
    static const sql_type types[] = {TY_TEXT, TY_TEXT, TY_TEXT, TY_TEXT, TY_BIGINT, TY_BIGINT, TY_TEXT, TY_BIGINT, TY_TEXT};
    coord *co = n->co;
    batch b;
    if (batch_init(&b, 9, 8)) return;
    for (int i = 0; i < co->nstreams; i++) {
        const cstream *c = &co->streams[i];
        val *r = batch_add_row(&b);
        if (!r) break;
        batch_put_text(&b, &r[0], c->name, strlen(c->name));
        batch_put_text(&b, &r[1], c->home, strlen(c->home));
        /* the shadow gets the input as the home does, or a copy of its log */
        const char *sh = c->shadow ? c->shadow : c->lshadow, *how = c->shadow ? "input" : "log";
        if (sh) {
            batch_put_text(&b, &r[2], sh, strlen(sh));
            batch_put_text(&b, &r[3], how, strlen(how));
        } else
            r[2] = r[3] = val_null();
        if (c->known) {
            r[4] = val_int(TY_BIGINT, c->rows);
            r[5] = val_int(TY_BIGINT, c->rejected);
            batch_put_text(&b, &r[6], c->wm, strlen(c->wm));
            r[7] = val_int(TY_BIGINT, c->log_bytes);
        } else
            r[4] = r[5] = r[6] = r[7] = val_null();
        char what[400];
        const char *hash = c->part ? strrchr(c->name, '#') : NULL;
        if (hash) snprintf(what, sizeof what, "(partition %d of %.*s)", c->part, (int)(hash - c->name), c->name);
        const char *sqlt = hash ? what : c->sql;
        batch_put_text(&b, &r[8], sqlt, strlen(sqlt));
    }
    coord_send_table(s, req, 9, names, types, &b);
    batch_fini(&b);
}

int coord_show_nodes(node *n, cs *s, uint64_t req)
{
    static const char *names[] = {"name",  "domain",         "address", "state",    "slots",
                                  "load",  "last_heartbeat", "role",    "capacity", "utilisation"};
    static const sql_type types[] = {TY_TEXT,   TY_TEXT, TY_TEXT, TY_TEXT,   TY_BIGINT,
                                     TY_BIGINT, TY_TEXT, TY_TEXT, TY_DOUBLE, TY_DOUBLE};
    batch b;
    if (batch_init(&b, 10, 8)) return XE_NOMEM;
    char ts[FMT_TS_BUF];
    for (int i = -1; i < n->npeers; i++) {
        peer *x = i >= 0 ? n->peers[i] : NULL;
        if (x && !coord_joined(x)) continue;
        val *r = batch_add_row(&b);
        if (!r) break;
        const char *name = x ? x->name : n->cfg.name, *dom = x ? x->domain : n->cfg.domain;
        const char *addr = x ? x->addr : n->addr;
        const char *state = x ? node_state_name(x->state) : "ALIVE";
        batch_put_text(&b, &r[0], name, strlen(name));
        batch_put_text(&b, &r[1], dom, strlen(dom));
        batch_put_text(&b, &r[2], addr, strlen(addr));
        batch_put_text(&b, &r[3], state, strlen(state));
        r[4] = val_int(TY_BIGINT, x ? (int64_t)x->slots : n->cfg.slots);
        r[5] = val_int(TY_BIGINT, coord_node_load(n, name));
        size_t len = fmt_timestamp(x ? x->last_hb : clock_wall_ms(), ts);
        batch_put_text(&b, &r[6], ts, len);
        const char *role = !x ? "coordinator" : x->standby ? "standby" : "node";
        batch_put_text(&b, &r[7], role, strlen(role));
        /* CPUs the node reported last (its quota read again, or --speed),
         * else what it advertised when it joined */
        double cap = x ? x->speed_milli / 1000.0 : n->cfg.speed, util;
        int rep = meas_store_node(n->meas, name, &cap, &util);
        r[8] = val_double(cap);
        /* its process CPU over wall time, over its capacity, smoothed (measure.c) */
        r[9] = rep ? val_double(round(util * 1000) / 1000) : val_null(); /* 0.001 steps: never 1e-05 */
    }
    coord_send_table(s, req, 10, names, types, &b);
    batch_fini(&b);
    return 0;
}

/* A cost as the table shows it: 4 significant digits (0.029, not
 * 0.029000000000000005); the JSON form keeps every digit. */
static double sig4(double v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.4g", v);
    return strtod(buf, NULL);
}

/* The placement of q as the game sees it now: every live node, every
 * running query held where it runs, q's players free but for its homes. */
static int explain_game(node *n, cquery *q, place_node *pl, int *nn, place_query **pqs_out, int *nq_out, int *qi,
                        place_game *g, xerr *err)
{
    coord *co = n->co;
    int nq = running_queries(co, q) + 1, k = 0, rc = 0;
    place_query *pqs = calloc((size_t)nq, sizeof *pqs);
    if (!pqs) return xerr_set(err, XE_NOMEM, "out of memory");
    *pqs_out = pqs;
    *nq_out = 0;
    *nn = cluster_nodes(n, 0, NULL, pl);
    for (cquery *x = co->queries; x && !rc; x = x->next) {
        if (x->ended || !x->dag) continue;
        if (x == q) *qi = k;
        rc = pq_of(n, x, pl, *nn, q->nrep, x != q, &pqs[k++], err);
        *nq_out = k;
    }
    if (rc) return rc;
    if ((rc = place_build(g, pl, *nn, pqs, k, q->nrep, q->strategy, err))) return rc;
    return place_score(g, pqs, k, err);
}

static const char *player_note(const cquery *q, const place_query *pq, int t, int replica)
{
    if (replica >= 0)
        return q->ft == ENGINE_FT_REPLICA      ? "replica: gets every epoch's state changes"
               : q->ft == ENGINE_FT_CHECKPOINT ? (replica == 0 ? "replica: gets the checkpoints" : "replica: unused with checkpoints")
                                               : "replica: unused (ft = upstream or none)";
    if (q->lost[t]) return "displaced: its node died; re-placed here, redeployed at the failure event";
    if (pq->home[t] >= 0) return q->dag->ops[q->top[t]].kind == PO_SINK ? "pinned: the sink runs here" : "pinned: its stream's home";
    return "";
}

/* EXPLAIN PLACEMENT's inputs columns (docs/sql.md): the seed and the
 * measured value of each input side by side, and which the game used. */
#define INPUT_COLS "inputs", "load_seed", "load_measured", "traffic_seed", "traffic_measured", "recovery_seed", \
                   "recovery_measured", "rows_in", "rows_in_per_s", "cpu_ms"

#define INPUT_TYPES TY_TEXT, TY_DOUBLE, TY_DOUBLE, TY_DOUBLE, TY_DOUBLE, TY_DOUBLE, TY_DOUBLE, TY_DOUBLE, TY_DOUBLE, TY_DOUBLE

#define NINPUT_COLS 10

static val opt_double(double v) { return isnan(v) ? val_null() : val_double(sig4(v)); }

static void inputs_row(batch *b, val *row, const place_inputs *x)
{
    const char *used = !x->measured ? "seed" : x->derived ? "derived" : "measured";
    batch_put_text(b, &row[0], used, strlen(used));
    const double v[] = {x->load_seed, x->load_meas, x->traffic_seed, x->traffic_meas, x->rec_seed, x->rec_meas,
                        x->rows_in, x->rows_in_s, x->cpu_ms};
    for (int i = 0; i < 9; i++) row[1 + i] = opt_double(v[i]);
    if (!isnan(x->rows_in)) row[7] = val_double(x->rows_in); /* a count: every digit */
}

static json_t *opt_json(double v) { return isnan(v) ? json_null() : json_real(v); }

static json_t *inputs_json(const place_inputs *x)
{
    json_t *o = json_object();
    if (!o) return json_null();
    json_object_set_new(o, "used", json_string(!x->measured ? "seed" : x->derived ? "derived" : "measured"));
    json_object_set_new(o, "load_seed", json_real(x->load_seed));
    json_object_set_new(o, "load_measured", opt_json(x->load_meas));
    json_object_set_new(o, "traffic_seed", json_real(x->traffic_seed));
    json_object_set_new(o, "traffic_measured", opt_json(x->traffic_meas));
    json_object_set_new(o, "recovery_seed", json_real(x->rec_seed));
    json_object_set_new(o, "recovery_measured", opt_json(x->rec_meas));
    json_object_set_new(o, "rows_in", opt_json(x->rows_in));
    json_object_set_new(o, "rows_in_per_s", opt_json(x->rows_in_s));
    json_object_set_new(o, "cpu_ms", opt_json(x->cpu_ms));
    return o;
}

/* Which inputs the game used: the query's, the nodes' capacities, the distances. */
/* The measured load of the players on node i (tasks of every query with
 * measured inputs, and their replicas), at the rate they were measured at
 * (the game plays them scaled to the peak, g->peak). */
static double measured_load_on(const place_game *g, int i)
{
    double l = 0;
    for (int k = 0; g->r && k < g->r->nplayers; k++) {
        const nirvana_player *p = &g->r->players[k];
        if (p->node != i || !g->measured[p->task]) continue;
        l += p->replica < 0 ? g->p->tasks[p->task].load : g->p->tasks[p->task].replica_load;
    }
    return l / g->peak;
}

static void inputs_summary(sbuf *t, const meas_store *ms, const place_game *g, const place_query *pq,
                           const place_node *pl, int nn)
{
    sbuf_printf(t, "inputs: %s\n", pq->meas ? "measured (tasks' CPU, rows and bytes per edge, state; smoothed, "
                                               "docs/nirvana.md)"
                                             : "the planner's seeds (not every task has reported its costs yet)");
    sbuf_printf(t, "capacities:");
    for (int i = 0; i < nn; i++) {
        sbuf_printf(t, "%s %s %.3g CPUs (%s", i ? "," : "", pl[i].name, pl[i].speed,
                    pl[i].measured ? "reported" : "as joined");
        /* how busy it is, and how much of that its measured players explain
         * (the rest: epochs, the network, the coordinator's own work) */
        if (pl[i].measured)
            sbuf_printf(t, ", %.0f%% busy, %.0f%% in measured players", 100 * pl[i].util,
                        100 * measured_load_on(g, i) / pl[i].speed);
        sbuf_printf(t, ")");
    }
    if (g->peak > 1)
        sbuf_printf(t, "\npeak: measured loads and traffic played at %.3gx their rate, the rate the live nodes can "
                       "carry (docs/nirvana.md, \"Placing for the peak\")",
                    g->peak);
    sbuf_printf(t, "\ndistances: %s\n", g->dist_measured ? "domain defaults, raised by measured round trips"
                                                        : "domain defaults (0.2 within, 1.0 across)");
    int rm;
    double bps = meas_store_restore_bps(ms, &rm);
    sbuf_printf(t, "restore rate: %.3g MB/s (%s)\n", bps / 1e6,
                rm ? "measured: the replicas' state applied over the time it took" : "assumed: no replica has applied 1 MiB yet");
}

/* The same as JSON: {"used", "nodes": [{name, capacity, reported, util,
 * measured_players_load}],
 * "distances_measured", "restore_bytes_per_s", "restore_measured"}. */
static json_t *inputs_summary_json(const meas_store *ms, const place_game *g, const place_query *pq,
                                   const place_node *pl, int nn)
{
    json_t *o = json_object(), *nodes = json_array();
    if (!o || !nodes) {
        json_decref(o);
        json_decref(nodes);
        return json_null();
    }
    for (int i = 0; i < nn; i++)
        json_array_append_new(nodes, json_pack("{s:s, s:f, s:b, s:f, s:f}", "name", pl[i].name, "capacity",
                                               pl[i].speed, "reported", pl[i].measured, "util", pl[i].util,
                                               "measured_players_load", measured_load_on(g, i)));
    int rm;
    double bps = meas_store_restore_bps(ms, &rm);
    json_object_set_new(o, "used", json_string(pq->meas ? "measured" : "seed"));
    json_object_set_new(o, "nodes", nodes);
    json_object_set_new(o, "peak_scale", json_real(g->peak));
    json_object_set_new(o, "distances_measured", json_boolean(g->dist_measured));
    json_object_set_new(o, "restore_bytes_per_s", json_real(bps));
    json_object_set_new(o, "restore_measured", json_boolean(rm));
    return o;
}

int coord_explain_placement(node *n, cs *s, uint64_t req, cquery *q, int json)
{
    place_node *pl = calloc((size_t)n->npeers + 1, sizeof *pl);
    place_query *pqs = NULL;
    place_game g = {0};
    nirvana_certificate cert;
    int nn = 0, nq = 0, qi = -1, rc;
    xerr err;
    xerr_clear(&err);
    sbuf text;
    sbuf_init(&text);
    json_t *root = NULL;
    if (!pl) return XE_NOMEM;
    if ((rc = explain_game(n, q, pl, &nn, &pqs, &nq, &qi, &g, &err)) ||
        (rc = nirvana_check_equilibrium(g.p, &g.c, g.r, &cert, &err))) {
        cs_error(s, req, rc, err.msg);
        goto out;
    }
    const place_query *pq = &pqs[qi];
    const nirvana_result *r = g.r;
    int R = q->nrep, first = g.first[qi], nplayers = 0, ndom = 0;
    double qcost = 0;
    for (int i = 0; i < nn; i++) ndom = g.p->nodes[i].domain + 1 > ndom ? g.p->nodes[i].domain + 1 : ndom;
    static const char *names[] = {"player", "operator", "role", "node", "domain", "processing", "transfer", "recovery",
                                  "cost", "note", INPUT_COLS};
    static const sql_type types[] = {TY_TEXT, TY_TEXT, TY_TEXT, TY_TEXT, TY_TEXT, TY_DOUBLE, TY_DOUBLE, TY_DOUBLE,
                                     TY_DOUBLE, TY_TEXT, INPUT_TYPES};
    batch b;
    if (batch_init(&b, 10 + NINPUT_COLS, q->ntasks * (1 + R) + 1)) {
        rc = XE_NOMEM;
        goto out;
    }
    json_t *players = json_array();
    for (int t = 0; t < q->ntasks; t++)
        for (int k = -1; k < R; k++) {
            int id = k < 0 ? first + t : nirvana_replica_player(g.p, first + t, k);
            if (id < 0) break; /* stateless: no replicas */
            const nirvana_player *p = &r->players[id];
            char who[96], op[64];
            snprintf(who, sizeof who, "%s#%d%s", q->tkind[t], q->tidx[t], "");
            if (k >= 0) snprintf(who + strlen(who), sizeof who - strlen(who), "/r%d", k);
            snprintf(op, sizeof op, "%d %s", q->top[t], q->tkind[t]);
            const char *node_name = p->node >= 0 ? pl[p->node].name : "-";
            const char *dom = p->node >= 0 ? pl[p->node].domain : "-";
            const char *role = k < 0 ? "task" : "replica", *note = player_note(q, pq, t, k);
            qcost += p->cost;
            nplayers++;
            val *row = batch_add_row(&b);
            if (!row) break;
            batch_put_text(&b, &row[0], who, strlen(who));
            batch_put_text(&b, &row[1], op, strlen(op));
            batch_put_text(&b, &row[2], role, strlen(role));
            batch_put_text(&b, &row[3], node_name, strlen(node_name));
            batch_put_text(&b, &row[4], dom, strlen(dom));
            row[5] = val_double(sig4(p->proc));
            row[6] = val_double(sig4(p->trans));
            row[7] = val_double(sig4(p->rec));
            row[8] = val_double(sig4(p->cost));
            batch_put_text(&b, &row[9], note, strlen(note));
            place_inputs in;
            place_player_inputs(&g, pqs, qi, t, k, &in);
            inputs_row(&b, row + 10, &in);
            json_t *o = json_pack("{s:s, s:s, s:i, s:i, s:s, s:s, s:s, s:f, s:f, s:f, s:f, s:s}", "player", who,
                                  "operator", q->tkind[t], "op", q->top[t], "op_task", q->tidx[t], "role", role, "node",
                                  node_name, "domain", dom, "processing", p->proc, "transfer", p->trans, "recovery",
                                  p->rec, "cost", p->cost, "note", note);
            if (k >= 0 && o) json_object_set_new(o, "replica", json_integer(k));
            if (o) json_object_set_new(o, "inputs", inputs_json(&in));
            json_array_append_new(players, o);
        }
    /* the summary, line by line */
    char who[96] = "";
    if (!cert.is_equilibrium) {
        const nirvana_player *p = &r->players[cert.player];
        snprintf(who, sizeof who, "%s%s", g.p->tasks[p->task].name, p->replica >= 0 ? "/r" : "");
        if (p->replica >= 0) snprintf(who + strlen(who), sizeof who - strlen(who), "%d", p->replica);
    }
    sbuf_printf(&text, "placement: %s; %d players of %s (tasks and replicas) on %d live nodes in %d domains; %d other "
                       "running queries held where they run\n",
                nirvana_strategy_name(q->strategy), nplayers, q->name ? q->name : "this query", nn, ndom, nq - 1);
    sbuf_printf(&text, "query cost %.4g; cluster total cost %.4g (processing %.4g, transfer %.4g, recovery %.4g), "
                       "potential %.4g\n",
                qcost, r->social_cost, r->proc_cost, r->trans_cost, r->rec_cost, r->potential);
    sbuf_printf(&text, "rounds %d, moves %d, %s (when it was placed)\n", q->rounds, q->moves,
                q->converged ? "converged" : "stopped at the round cap");
    if (cert.is_equilibrium)
        sbuf_printf(&text, "equilibrium: yes, no task or replica of this query can lower its cost by moving alone "
                           "(%ld deviations checked now)\n", cert.checked);
    else
        sbuf_printf(&text, "equilibrium: no, %s would lower its cost by %.4g moving %s -> %s (%ld deviations checked "
                           "now)\n", who, cert.gain, pl[cert.from].name, pl[cert.to].name, cert.checked);
    inputs_summary(&text, n->meas, &g, pq, pl, nn);
    sbuf_printf(&text, "replicas: %d per stateful task, each outside its primary's domain; ft = %s", R,
                engine_ft_name(q->ft));
    rebalance_explain(q, &text);
    if (json) {
        root = json_pack("{s:s, s:s, s:o, s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:b, s:i, s:b, s:{s:b, s:I, s:s, "
                         "s:s, s:s, s:f}, s:{s:i, s:i, s:s, s:f}}",
                         "query", q->name ? q->name : "", "strategy", nirvana_strategy_name(q->strategy), "players",
                         players, "query_cost", qcost, "total_cost", r->social_cost, "processing", r->proc_cost,
                         "transfer", r->trans_cost, "recovery", r->rec_cost, "potential", r->potential, "rounds",
                         q->rounds, "moves", q->moves, "converged", q->converged, "replicas", R,
                         "replication_running", 0, "equilibrium", "is_equilibrium", cert.is_equilibrium, "checked",
                         (json_int_t)cert.checked, "player", who, "from",
                         cert.from >= 0 ? pl[cert.from].name : "", "to", cert.to >= 0 ? pl[cert.to].name : "", "gain",
                         cert.is_equilibrium ? 0.0 : cert.gain, "rebalance", "moves", q->rb_moves, "redeployments",
                         q->rb_count, "last", q->rb_last, "last_catchup_ms", q->rb_last_ms);
        players = NULL;
        if (root) json_object_set_new(root, "inputs", inputs_summary_json(n->meas, &g, pq, pl, nn));
        char *js = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        batch jb;
        static const char *jn[] = {"QUERY PLACEMENT"};
        static const sql_type jt[] = {TY_TEXT};
        if (js && !batch_init(&jb, 1, 1)) {
            val *row = batch_add_row(&jb);
            if (row) batch_put_text(&jb, &row[0], js, strlen(js));
            coord_send_table(s, req, 1, jn, jt, &jb);
            batch_fini(&jb);
        } else
            rc = XE_NOMEM;
        free(js);
    } else {
        coord_send_table(s, req, 10 + NINPUT_COLS, names, types, &b);
        static const char *sn[] = {"summary"};
        static const sql_type st_[] = {TY_TEXT};
        batch sb;
        if (!batch_init(&sb, 1, 12)) {
            for (char *line = text.p, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                nl = strchr(line, '\n');
                val *row = batch_add_row(&sb);
                if (row) batch_put_text(&sb, &row[0], line, nl ? (size_t)(nl - line) : strlen(line));
            }
            coord_send_table(s, req, 1, sn, st_, &sb);
            batch_fini(&sb);
        }
    }
    json_decref(players);
    batch_fini(&b);
out:
    json_decref(root);
    sbuf_fini(&text);
    for (int i = 0; pqs && i < nq; i++) pq_fini(&pqs[i]);
    free(pqs);
    place_game_fini(&g);
    free(pl);
    return rc == XE_NOMEM ? rc : 0;
}
