/*
 * coord.c: the coordinator.  It runs inside the ares-node started with
 * --coordinator, on the same loop as that node's engine and connections
 * (node.c), and adds:
 *
 *   membership  nodes JOIN with their name, domain, address, slots and speed;
 *               their liveness is watched (any received byte counts) and the
 *               member list goes to every node (MEMBERSHIP) when it changes;
 *   catalog     streams (executed on every node, so that every node plans a
 *               query the same way), settings, standing queries and their
 *               task assignments, kept in this node's LMDB through
 *               engine_host_put (keys stream/, set/, q/, next_qid);
 *   placement   the placement library (place.c builds one problem from the
 *               live nodes and every running query): the cluster's
 *               strategy (SET placement, default nirvana) or the query's
 *               own (WITH (placement = ...)), R replicas per stateful task
 *               (SET replicas, default 1; they hold copies of the state with
 *               ft = replica or checkpoint), sources pinned to their
 *               stream's home node and sinks to this node; after a node
 *               dies, nirvana_replace re-places its players;
 *   recovery    a failure event (the deaths within FT_SETTLE_MS): streams
 *               move to their shadow homes, the displaced players are
 *               re-placed, every query that lost tasks is redeployed under
 *               a new id and takes over its state (ft_recover; exec/ft.c);
 *   deployment  DEPLOY to every node, in qid order, with the full assignment;
 *   clients     statements (QUERY), ingest (INGEST, forwarded to the
 *               stream's home node), push queries and SUBSCRIBE (rows leave
 *               the sink here and go to the clients as RESULT parts).
 *
 * Requests that need nodes to answer (a broadcast CREATE STREAM, a DEPLOY, a
 * forwarded INSERT or ingest) are `pend`s keyed by a request id; a node that
 * leaves counts as having answered (and is logged), so no request waits
 * forever.  A client runs one request at a time (its `job`: the statements
 * of one QUERY frame, run in order, stopping at the first error).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "cluster/catchup.h"
#include "cluster/node.h"

#define FT_SETTLE_MS 150 /* deaths this close together are one failure event */
/* ... when the first was a closed connection (a crashed process: the rest of
 * its domain's connections close within milliseconds, where silences end up
 * to a heartbeat apart) */
#define FT_SETTLE_CLOSED_MS 50
#define RB_MAX_MOVES 64  /* moves one rebalance makes at most */
#define RB_SOON_MS 1000  /* a join, a loss or a new capacity: rebalance this much later */
#define RB_MEMORY_MS 10000 /* a player does not go back to a node it left for 5 rebalance intervals, or this if longer */
#define RB_QUIET_MS 2500 /* a query that moved is left alone this long (its new deployment gets measured), or
                            rebalance_interval if longer */

/* Rows delivered, by hash (row_hash), for dropping repeats (dd_filter). */
struct ftrow { uint64_t h; uint32_t delivered, seen; int64_t at; };
typedef struct ddtab {
    struct ftrow *dd;
    size_t ddcap, ddn;
    batch fb;           /* the rows of a batch that pass */
    int fb_on;
} ddtab;

typedef struct csub {
    cs *to;
    uint64_t req;
    /* a subscriber that attached again after a takeover: the rows it had
     * (its own table) are dropped until the sink passes catchup_wm */
    ddtab *dt;
    int64_t catchup_wm;
    sbuf enc;
    struct csub *next;
} csub;

typedef struct cquery {
    uint32_t qid;
    char *name;         /* the user's name; NULL for a push query, "push#ORIGIN" for a kept one */
    char *sql;          /* the CREATE QUERY text every node deploys */
    int push;
    int keep;           /* a push query of a client that fails over: in the catalog, it outlives
                         * its connection by DD_KEEP_MS for the client to ATTACH again */
    int ntasks;
    char **tnode;       /* per task: the node that runs it */
    plan_dag *dag;      /* its plan (placement adds its tasks to every problem) */
    int nrep;           /* replicas per stateful task when it was placed */
    char **rnode;       /* ntasks x nrep: the node of each replica (NULL: none) */
    char *lost;         /* per task: 1 if its node died and it was re-placed but not redeployed yet */
    uint32_t origin;    /* the id it was first deployed under (redeployments get new ids) */
    uint32_t prev;      /* the id before the last redeployment (0: none) */
    engine_ft ft;       /* SET ft or WITH (ft = ...) */
    int64_t ckpt_ms;    /* SET checkpoint_interval */
    /* sink-side dedup: per distinct output row (by hash), how often it was
     * delivered and how often the current deployment produced it; and when
     * it was last delivered (dd entries older than DD_KEEP_MS go) */
    ddtab dt;
    catchup cu;         /* after a recovery: dedup until every input of the sink passes what it had */
    int64_t resume_wm;  /* the sink's watermark when the last failure struck (DEPLOY plan) */
    nirvana_strategy strategy;
    int rounds, moves, converged; /* of the placement run that placed it */
    const char **tkind; /* per task: its operator's kind */
    int *top, *tidx;    /* per task: operator id, index in the operator */
    sbuf plan;          /* the DEPLOY plan blob */
    int ncols;
    char **names;
    sql_type *types;
    int64_t limit, rows;
    csub *subs;         /* the owner of a push query; subscribers */
    exec_out out;       /* the sink's output here */
    sbuf enc;
    int ended;
    int64_t wm_sent;    /* the sink watermark last sent to subscribers (RES_WM) */
    int64_t loss_said;  /* wall ms its clients were last told of lost rows */
    node *co_node;
    /* after a takeover (or a lost push query client), until orphan_until:
     * the sink's rows since, for every subscriber that attaches again (each
     * drops what it has already) */
    int64_t orphan_until;
    sbuf backlog;       /* batch_encode'd batches, each after its u32 length */
    /* live re-placement: moves made, redeployments for them, the last one;
     * rb_t0 (mono ns) while the last is catching up; how long that took */
    int rb_moves, rb_count;
    char rb_last[256];
    int64_t rb_last_at;
    uint64_t rb_t0;
    int64_t rb_quiet_until;  /* mono ms: no automatic move before (its new deployment is measured first) */
    /* the nodes its players left in recent rebalances: none goes back before `until` (mono ms) */
    struct rbleft { int t, r; char node[WIRE_NAME_MAX + 1]; int64_t until; } *rb_left;
    int rb_nleft;
    double rb_last_ms, rb_ms_total;
    struct cquery *next;
} cquery;

enum { PK_BROADCAST = 1, PK_FWD_INSERT, PK_FWD_INGEST, PK_GATHER };
/* With replicas, no recovery goes back further than a few epochs: rows
 * delivered longer ago than this (or 3 checkpoint intervals) cannot repeat. */
#define DD_KEEP_MS 30000

typedef struct pend pend;
struct pend {
    uint64_t id;
    int kind;
    peer **wait;        /* PK_BROADCAST, PK_GATHER: nodes yet to answer */
    int nwait;
    int rc;
    char msg[600];
    cs *client;         /* who asked (NULL once it left) */
    uint64_t creq;
    peer *home;         /* forwards: the node it went to */
    int failed;         /* a forwarded ingest that failed: swallow the rest */
    uint64_t acked;     /* an ingest session's chunks the node has (RES_ACKED) */
    int quiet;          /* a forward to a stream's shadow: its answers are not the client's */
    int moving;         /* a forwarded ingest whose home was lost: it goes to the next home */
    char *stream;       /* PK_FWD_INGEST: the stream */
    void (*done)(node *n, pend *p);
    /* PK_GATHER: each node's table goes to take; gb holds what it builds */
    void (*take)(node *n, pend *p, const char *from, const batch *b);
    void (*fin)(node *n, pend *p); /* ... and answers the client */
    batch gb;
    cquery *q;
    pend *next;
};

/* A stream: its home node runs `sql`; with a socket or file source, the
 * other nodes run `lite`, the same statement without the source, so that
 * only the home node reads the source. */
typedef struct cstream {
    /* Partition p > 0 of a stream (WITH (partitions = P)) is a cstream of
     * its own, "name#p", with its own home and shadow; sql is "" (the
     * stream's CREATE makes every partition at every node). */
    char *name, *home, *sql, *lite;
    int part;
    /* A stream fed through this coordinator (no source of its own) has a
     * shadow home in another domain: it gets the same input, in the same
     * order, with the same TICKs, so its log holds the same records at the
     * same offsets, and it becomes the home when the home is lost. */
    char *shadow;
    /* Otherwise (a socket source, or after a failure took the home or the
     * shadow) the home copies its log to lshadow, in another domain
     * (shadow.c, LOGSHADOW). */
    char *lshadow;
    int dirty;          /* input went out since the last TICK */
    /* SHOW STREAMS: what the home said of it (known = 0: nothing yet) */
    int known;
    int64_t rows, rejected, log_bytes;
    char wm[FMT_TS_BUF + 16];
} cstream;

typedef struct csess {
    parse_result *job;
    int job_i;
    uint64_t job_req;
    /* the client's ingest session when this node is its home or shadow */
    uint64_t ing_req, ing_local, ing_acked;
    int ing_here;
} csess;

struct coord {
    cquery *queries;    /* in qid order */
    pend *pends;
    uint64_t next_req;
    uint32_t next_qid;
    uint64_t epoch;
    int rr, rr_home;
    int members_dirty;
    cstream *streams;
    int nstreams;
    char **set_keys, **set_sql;
    int nsets;
    /* failure handling: deaths within FT_SETTLE_MS are one event (a domain) */
    int64_t recover_at;         /* mono ms at which to re-place and redeploy; 0 = none */
    uint64_t death_ns;          /* mono ns of the first death of the event */
    sbuf dead_names;
    nirvana_strategy placement; /* SET placement (default nirvana) */
    int replicas;               /* SET replicas (default 1) */
    engine_ft ft;               /* SET ft (default replica) */
    int64_t ckpt_ms;            /* SET checkpoint_interval (default 10 s) */
    int shadow_log;             /* SET shadow = 'log': new streams get a log copy, not a second feed */
    /* the coordinator's own failover (docs/architecture.md, "The coordinator") */
    int64_t takeover_until;     /* a takeover: members that have not joined by then are dead */
    int takeover_event;         /* the failure event of the takeover is pending */
    uint64_t takeover_ns;       /* mono ns the takeover began */
    int had_standby;            /* a standby joined once: fence ourselves without a majority */
    int base;                   /* members alive (with us) when the cluster was last whole enough */
    int64_t last_death;         /* wall ms of the last member declared dead */
    int fenced;                 /* no majority and no standby: acting no more until they are back */
    int deposed;                /* a newer term is active: acting no more */
    int members_kept;           /* the member count last written to the catalog ("members") */
    int wait_majority;          /* restarted with a standby known: serve once this many / 2 + 1 joined */
    char standby_addr[128];     /* the standby's address (catalog "standby_addr") */
    /* rows nodes dropped for peers (LOSS), judged once a death would have
     * been declared: a live peer means a partial partition */
    struct closs { char from[WIRE_NAME_MAX + 1], peer[WIRE_NAME_MAX + 1]; uint32_t qid; uint64_t batches;
                   int64_t at; } loss[32];
    int nloss;
    cs *probe;                  /* fenced or waiting: a connection to it, to hear of a newer term */
    int64_t probe_at;
    /* live re-placement (the rebalance section below) */
    int64_t rb_ms;              /* SET rebalance_interval (default 30 s; 0 = no automatic rebalancing) */
    double rb_threshold;        /* SET rebalance_threshold (default 0.2) */
    int64_t rb_next, rb_soon;   /* mono ms of the next periodic one, of one asked for (0: none) */
    char rb_why[160];           /* what asked for rb_soon */
    uint64_t rb_runs;
    int rb_moving;              /* ft_recover runs for a rebalance, not a failure */
    struct rbcap { char name[WIRE_NAME_MAX + 1]; double speed; } *rb_cap; /* each node's capacity last seen */
    int rb_ncap;
    int64_t rb_cap_at;
};

static void job_run(node *n, cs *s);
static void job_fail(node *n, cs *s, int rc, const char *msg);
static void ingest_acked(node *n, cs *s, uint64_t req);
static void rebalance_soon(node *n, const char *why, int64_t delay_ms);
static int alter_rebalance(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err);
static void rebalance_tick(node *n);
static void rebalance_explain(const struct cquery *q, sbuf *text);

/* ------------------------------------------------------------------ small helpers */

static char *xstrndup(const char *p, size_t n)
{
    char *s = malloc(n + 1);
    if (!s) return NULL;
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}

/* The CREATE STREAM text without its `source` option, or NULL when it has none. */
static char *strip_source(const char *sql)
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

static const char *stream_sql_for(const cstream *c, const char *node_name)
{
    return c->lite && strcmp(node_name, c->home) ? c->lite : c->sql;
}

static int joined(const peer *p) { return p->slots > 0 && !p->is_coord; }
static int alive(const peer *p) { return joined(p) && p->link && p->link->ready && p->state != WIRE_MEMBER_DEAD; }
/* A member that runs tasks and homes streams (not the standby coordinator). */
static int worker(const peer *p) { return alive(p) && !p->standby; }

/* ------------------------------------------------------------------ the replicated catalog */

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
static int cat_put(node *n, const char *key, const void *v, size_t len, xerr *err)
{
    int rc = engine_host_put(n->eng, key, v, len, err);
    for (int i = 0; !rc && i < n->npeers; i++)
        if (n->peers[i]->standby && alive(n->peers[i])) catalog_send(n, n->peers[i]->link, WIRE_CAT_PUT, key, v, len);
    return rc;
}

static int cat_del(node *n, const char *key, xerr *err)
{
    int rc = engine_host_del(n->eng, key, err);
    for (int i = 0; !rc && i < n->npeers; i++)
        if (n->peers[i]->standby && alive(n->peers[i])) catalog_send(n, n->peers[i]->link, WIRE_CAT_DEL, key, NULL, 0);
    return rc;
}

static int dump_one(void *ctx, const char *key, const void *v, size_t len)
{
    cs *to = ctx;
    catalog_send(to->n, to, WIRE_CAT_PUT, key, v, len);
    return 0;
}

/* A standby joined: the whole catalog, then every change (cat_put). */
static void catalog_dump(node *n, cs *to)
{
    xerr err;
    catalog_send(n, to, WIRE_CAT_BEGIN, "", NULL, 0);
    if (engine_host_scan(n->eng, "", dump_one, to, &err)) {
        node_log(n, NET_LOG_ERROR, "cannot send the catalog to the standby: %s", err.msg);
        return;
    }
    catalog_send(n, to, WIRE_CAT_END, "", NULL, 0);
}

static int persist_term(node *n, xerr *err)
{
    char v[32];
    int len = snprintf(v, sizeof v, "%llu", (unsigned long long)n->term);
    return cat_put(n, "coord_term", v, (size_t)len, err);
}

static cstream *stream_find(coord *co, const char *name)
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
static cstream *partition_find(coord *co, const char *name, int p)
{
    char pn[300];
    engine_partition_name(name, p, pn, sizeof pn);
    return stream_find(co, pn);
}

static cquery *query_find(coord *co, const char *name)
{
    for (cquery *q = co->queries; q; q = q->next)
        if (q->name && !strcasecmp(q->name, name)) return q;
    return NULL;
}

static void send_table(cs *to, uint64_t req, int ncols, const char *const *names, const sql_type *types, const batch *b)
{
    fmt_schema sc = {ncols, names, types};
    sbuf p;
    sbuf_init(&p);
    if (!res_begin_put(&p, &sc, 0)) cs_result(to, req, 0, RES_BEGIN, 0, p.p + 1, p.len - 1);
    sbuf_reset(&p);
    if (b->nrows && !batch_encode(b, &p)) cs_result(to, req, 0, RES_ROWS, (uint32_t)b->nrows, p.p, p.len);
    cs_result(to, req, 0, RES_END, 0, NULL, 0);
    sbuf_fini(&p);
}

static void notice_to(cs *to, uint64_t req, const char *msg)
{
    if (to) cs_result(to, req, 0, RES_NOTICE, 0, msg, strlen(msg));
}

static int exec_local(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err)
{
    node_fwd f = {s, req, {0}};
    sbuf_init(&f.b);
    exec_out out = node_fwd_out(&f);
    int rc = engine_exec(n->eng, st, &out, err);
    sbuf_fini(&f.b);
    return rc;
}

/* ------------------------------------------------------------------ requests to nodes */

static pend *pend_new(node *n, int kind)
{
    pend *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->id = n->co->next_req++;
    p->kind = kind;
    p->next = n->co->pends;
    n->co->pends = p;
    return p;
}

static void pend_unlink(node *n, pend *p)
{
    for (pend **pp = &n->co->pends; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
}

static void pend_free(pend *p)
{
    if (!p) return;
    free(p->stream);
    free(p->wait);
    batch_fini(&p->gb);
    free(p);
}

static void pend_finish(node *n, pend *p)
{
    pend_unlink(n, p);
    if (p->done) p->done(n, p);
    pend_free(p);
}

static int pend_wait_for(pend *p, peer *x)
{
    peer **v = realloc(p->wait, (size_t)(p->nwait + 1) * sizeof *v);
    if (!v) return XE_NOMEM;
    p->wait = v;
    p->wait[p->nwait++] = x;
    return 0;
}

static void pend_answered(node *n, pend *p, peer *x)
{
    for (int i = 0; i < p->nwait; i++)
        if (p->wait[i] == x) {
            p->wait[i] = p->wait[--p->nwait];
            break;
        }
    if (p->nwait == 0) pend_finish(n, p);
}

/* Send a frame to every live node; p (if any) waits for all their answers.
 * Returns 1 when p waits, 0 when there was nobody to ask (p finished). */
static int broadcast_flags(node *n, pend *p, uint8_t type, uint16_t flags, const void *payload, size_t len)
{
    for (int i = 0; i < n->npeers; i++) {
        peer *x = n->peers[i];
        if (!alive(x)) continue;
        if (cs_send(x->link, type, flags, payload, len) == 0 && p) pend_wait_for(p, x);
    }
    if (p && p->nwait == 0) {
        pend_finish(n, p);
        return 0;
    }
    return 1;
}

static int broadcast(node *n, pend *p, uint8_t type, const void *payload, size_t len)
{
    return broadcast_flags(n, p, type, 0, payload, len);
}

static int broadcast_sql(node *n, pend *p, const char *sql)
{
    wire_msg m = {.type = WIRE_QUERY};
    m.u.query.req_id = p ? p->id : 0;
    m.u.query.sql = wire_str_of(sql);
    sbuf b;
    sbuf_init(&b);
    int rc = wire_msg_payload(&b, &m, NULL);
    if (rc) {
        sbuf_fini(&b);
        if (p) {
            pend_unlink(n, p);
            pend_free(p);
        }
        return rc;
    }
    rc = broadcast(n, p, WIRE_QUERY, b.p, b.len);
    sbuf_fini(&b);
    return rc;
}

/* A job's broadcast finished: go on with the client's next statement. */
static void job_step_done(node *n, pend *p)
{
    if (!p->client) return;
    if (p->rc) {
        job_fail(n, p->client, p->rc, p->msg);
        return;
    }
    csess *ss = p->client->sess;
    if (ss && ss->job) {
        ss->job_i++;
        job_run(n, p->client);
    }
}

/* Run a statement on every other node as a step of s's job: 1 while they
 * run it, 0 when there was nobody to ask.  p->done is set only when p waits,
 * so that finishing at once does not advance the job twice. */
static int job_broadcast(node *n, cs *s, uint64_t req, const char *sql, xerr *err)
{
    pend *p = pend_new(n, PK_BROADCAST);
    if (!p) return xerr_set(err, XE_NOMEM, "out of memory");
    p->client = s;
    p->creq = req;
    int rc = broadcast_sql(n, p, sql);
    if (rc == 1) p->done = job_step_done;
    return rc;
}

/* CREATE STREAM on every other node: the home node gets the statement as
 * written, the others without its source (same return values as above). */
static int job_broadcast_stream(node *n, cs *s, uint64_t req, const cstream *c, xerr *err)
{
    if (!c->lite) return job_broadcast(n, s, req, c->sql, err);
    pend *p = pend_new(n, PK_BROADCAST);
    if (!p) return xerr_set(err, XE_NOMEM, "out of memory");
    p->client = s;
    p->creq = req;
    for (int i = 0; i < n->npeers; i++) {
        peer *x = n->peers[i];
        if (!alive(x)) continue;
        wire_msg m = {.type = WIRE_QUERY};
        m.u.query.req_id = p->id;
        m.u.query.sql = wire_str_of(stream_sql_for(c, x->name));
        if (cs_send_msg(x->link, &m) == 0) pend_wait_for(p, x);
    }
    if (p->nwait == 0) {
        pend_finish(n, p);
        return 0;
    }
    p->done = job_step_done;
    return 1;
}

/* ------------------------------------------------------------------ membership */

static int64_t node_load(node *n, const char *name)
{
    int64_t l = 0;
    for (cquery *q = n->co->queries; q; q = q->next)
        for (int t = 0; t < q->ntasks; t++)
            if (!strcmp(q->tnode[t], name)) l++;
    return l;
}

static void send_membership(node *n)
{
    coord *co = n->co;
    co->epoch++;
    sbuf ent, b;
    sbuf_init(&ent);
    sbuf_init(&b);
    wire_wr w;
    wire_wr_init(&w, &ent);
    uint32_t count = 1;
    wire_member me = {wire_str_of(n->cfg.name), wire_str_of(n->cfg.domain), wire_str_of(n->addr), WIRE_MEMBER_UP,
                      (uint32_t)n->cfg.slots, (uint32_t)(n->cfg.speed * 1000 + 0.5),
                      (uint32_t)(node_load(n, n->cfg.name) * 1000), clock_wall_ms()};
    wire_put_member(&w, &me);
    for (int i = 0; i < n->npeers; i++) {
        peer *x = n->peers[i];
        if (!joined(x)) continue;
        wire_member m = {wire_str_of(x->name), wire_str_of(x->domain), wire_str_of(x->addr), (uint8_t)x->state,
                         x->slots, x->speed_milli, (uint32_t)(node_load(n, x->name) * 1000), x->last_hb};
        wire_put_member(&w, &m);
        count++;
    }
    wire_msg mm = {.type = WIRE_MEMBERSHIP};
    mm.u.membership.epoch = co->epoch;
    mm.u.membership.count = count;
    mm.u.membership.entries = (wire_str){ent.p, (uint32_t)ent.len};
    if (!wire_wr_end(&w, NULL) && !wire_msg_payload(&b, &mm, NULL)) broadcast(n, NULL, WIRE_MEMBERSHIP, b.p, b.len);
    sbuf_fini(&ent);
    sbuf_fini(&b);
    co->members_dirty = 0;
    /* with a standby, a restart must learn whether it is still the active
     * coordinator: it serves once a majority of these members joined it */
    int up = 1;
    for (int i = 0; i < n->npeers; i++) up += alive(n->peers[i]);
    if (co->had_standby && !co->wait_majority && up != co->members_kept) {
        char v[16];
        int len = snprintf(v, sizeof v, "%d", up);
        xerr err;
        if (!cat_put(n, "members", v, (size_t)len, &err)) co->members_kept = up;
    }
}

/* To one connection, or to every live node (then 1 while p waits). */
static int send_deploy(node *n, cs *to, pend *p, cquery *q)
{
    int rc = 0;
    wire_msg m = {.type = WIRE_DEPLOY};
    m.u.deploy.query_id = q->qid;
    m.u.deploy.task_id = (uint32_t)q->ntasks;
    m.u.deploy.epoch = p ? p->id : 0;
    m.u.deploy.plan = (wire_str){q->plan.p, (uint32_t)q->plan.len};
    sbuf b;
    sbuf_init(&b);
    if (!wire_msg_payload(&b, &m, NULL)) {
        if (to) cs_send(to, WIRE_DEPLOY, 0, b.p, b.len);
        else rc = broadcast(n, p, WIRE_DEPLOY, b.p, b.len);
    }
    sbuf_fini(&b);
    return rc;
}

static void send_undeploy(node *n, cquery *q, int keep_state)
{
    wire_msg m = {.type = WIRE_UNDEPLOY, .flags = keep_state ? WIRE_F_KEEP : 0};
    m.u.undeploy.query_id = q->qid;
    sbuf b;
    sbuf_init(&b);
    if (!wire_msg_payload(&b, &m, NULL)) broadcast_flags(n, NULL, WIRE_UNDEPLOY, m.flags, b.p, b.len);
    sbuf_fini(&b);
}

static void handle_join(node *n, cs *s, const wire_msg *m)
{
    const wire_join *j = &m->u.join;
    const char *hello = net_peer_name(s->c);
    if (j->name.n != strlen(hello) || memcmp(j->name.p, hello, j->name.n) || !wire_name_ok(j->domain.p, j->domain.n) ||
        j->slots == 0 || j->addr.n == 0 || j->addr.n >= 128) {
        cs_error(s, 0, XE_PROTO, "JOIN: name must match HELLO, domain a valid name, slots > 0 and an address");
        net_close(s->c, "bad JOIN");
        return;
    }
    if (!strcmp(hello, n->cfg.name)) {
        cs_error(s, 0, XE_EXISTS, "a node with the coordinator's name cannot join");
        net_close(s->c, "name taken");
        return;
    }
    char dom[WIRE_NAME_MAX + 1], addr[128];
    snprintf(dom, sizeof dom, "%.*s", (int)j->domain.n, j->domain.p);
    snprintf(addr, sizeof addr, "%.*s", (int)j->addr.n, j->addr.p);
    peer *p = node_peer_add(n, hello, dom, addr);
    if (!p) return;
    int rejoin = p->slots > 0, was_dead = rejoin && p->state == WIRE_MEMBER_DEAD;
    p->slots = j->slots;
    p->speed_milli = j->speed_milli;
    p->state = WIRE_MEMBER_UP;
    p->last_hb = clock_wall_ms();
    p->link = s;
    p->rejoined = 1;
    p->is_coord = 0;
    p->standby = (m->flags & WIRE_F_STANDBY) != 0;
    s->peer = p;
    if (n->cfg.link_delay_ms && strcmp(dom, n->cfg.domain)) net_set_send_delay_ms(s->c, n->cfg.link_delay_ms);
    node_log(n, NET_LOG_INFO, "%s %s %s (domain %s, address %s, %u slots, speed %.3g)",
             p->standby ? "standby coordinator" : "node", hello, rejoin ? "rejoined" : "joined", dom, addr, j->slots,
             j->speed_milli / 1000.0);
    send_membership(n);
    if (p->standby) {
        xerr err;
        if (!n->co->had_standby && cat_put(n, "standby", "1", 1, &err))
            node_log(n, NET_LOG_ERROR, "recording the standby: %s", err.msg);
        n->co->had_standby = 1;
        if (strcmp(n->co->standby_addr, addr)) {
            snprintf(n->co->standby_addr, sizeof n->co->standby_addr, "%s", addr);
            if (cat_put(n, "standby_addr", addr, strlen(addr), &err))
                node_log(n, NET_LOG_ERROR, "recording the standby: %s", err.msg);
        }
        catalog_dump(n, s);
    }
    coord *co = n->co;
    if (was_dead) {
        /* it was declared dead (a cut that healed, a node we took over
         * without): what it still runs was recovered elsewhere under new ids */
        for (uint32_t qid = 1; qid < co->next_qid; qid++) {
            cquery *q = co->queries;
            while (q && q->qid != qid) q = q->next;
            if (q) continue;
            wire_msg u = {.type = WIRE_UNDEPLOY};
            u.u.undeploy.query_id = qid;
            cs_send_msg(s, &u);
        }
    }
    /* the catalog, so that it plans like everyone else, then the queries */
    for (int i = 0; i < co->nsets; i++) {
        wire_msg q = {.type = WIRE_QUERY};
        q.u.query.sql = wire_str_of(co->set_sql[i]);
        cs_send_msg(s, &q);
    }
    for (int i = 0; i < co->nstreams; i++) {
        if (co->streams[i].part) continue; /* the stream's CREATE makes its partitions */
        wire_msg q = {.type = WIRE_QUERY};
        q.u.query.sql = wire_str_of(stream_sql_for(&co->streams[i], hello));
        cs_send_msg(s, &q);
    }
    for (cquery *q = co->queries; q; q = q->next)
        if (!q->ended) send_deploy(n, s, NULL, q);
    if (!p->standby) {
        char why[160];
        snprintf(why, sizeof why, "node %s %s", hello, rejoin ? "rejoined" : "joined");
        rebalance_soon(n, why, RB_SOON_MS);
    }
}

/* ------------------------------------------------------------------ queries */

static void dd_fini(ddtab *t);
static void csub_free(csub *x);

static void cq_free(cquery *q)
{
    if (!q) return;
    for (int t = 0; t < q->ntasks; t++) free(q->tnode ? q->tnode[t] : NULL);
    free(q->tnode);
    for (int i = 0; q->rnode && i < q->ntasks * q->nrep; i++) free(q->rnode[i]);
    free(q->rnode);
    free(q->lost);
    free(q->rb_left);
    plan_free(q->dag);
    free(q->tkind);
    free(q->top);
    free(q->tidx);
    for (int i = 0; i < q->ncols; i++) free(q->names[i]);
    free(q->names);
    free(q->types);
    while (q->subs) {
        csub *x = q->subs;
        q->subs = x->next;
        csub_free(x);
    }
    sbuf_fini(&q->plan);
    sbuf_fini(&q->enc);
    dd_fini(&q->dt);
    catchup_fini(&q->cu);
    sbuf_fini(&q->backlog);
    free(q->name);
    free(q->sql);
    free(q);
}

static struct ftrow *dd_slot(ddtab *t, uint64_t h)
{
    if (t->ddn * 2 >= t->ddcap) {
        size_t cap = t->ddcap ? t->ddcap * 2 : 1024;
        struct ftrow *nt = calloc(cap, sizeof *nt);
        if (!nt) return NULL;
        for (size_t i = 0; i < t->ddcap; i++)
            if (t->dd[i].delivered) {
                size_t j = t->dd[i].h & (cap - 1);
                while (nt[j].delivered) j = (j + 1) & (cap - 1);
                nt[j] = t->dd[i];
            }
        free(t->dd);
        t->dd = nt;
        t->ddcap = cap;
    }
    size_t j = h & (t->ddcap - 1);
    while (t->dd[j].delivered && t->dd[j].h != h) j = (j + 1) & (t->ddcap - 1);
    return &t->dd[j];
}

static void dd_fini(ddtab *t)
{
    free(t->dd);
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
        struct ftrow *x = dd_slot(t, h);
        if (!x) return XE_NOMEM;
        if (!x->delivered) {
            x->h = h;
            t->ddn++;
        }
        x->seen++;
        if (x->seen <= x->delivered) {
            dropped++;
            continue;
        }
        x->delivered++;
        x->at = now;
        if (batch_append_row(&t->fb, row)) return XE_NOMEM;
    }
    if (dropped) *out = &t->fb;
    return 0;
}

/* Keep only the rows that still matter: after a recovery has caught up,
 * those the new deployment produced (a row delivered before but not produced
 * again lies behind the restored state: it will not come again); otherwise
 * those delivered in the last `keep_ms` (a replica is never older). */
static int dd_rebuild(ddtab *d, int caught_up, int64_t keep_ms)
{
    int64_t cut = clock_mono_ns() / 1000000 - keep_ms;
    size_t cap = 1024, n = 0;
    for (size_t i = 0; i < d->ddcap; i++)
        if (d->dd[i].delivered && (caught_up ? d->dd[i].seen > 0 : d->dd[i].at >= cut)) n++;
    while (cap < n * 2 + 2) cap *= 2;
    struct ftrow *t = calloc(cap, sizeof *t);
    if (!t) return XE_NOMEM;
    for (size_t i = 0; i < d->ddcap; i++) {
        struct ftrow x = d->dd[i];
        if (!x.delivered || !(caught_up ? x.seen > 0 : x.at >= cut)) continue;
        if (caught_up) x.delivered = x.seen;
        size_t j = x.h & (cap - 1);
        while (t[j].delivered) j = (j + 1) & (cap - 1);
        t[j] = x;
    }
    free(d->dd);
    d->dd = t;
    d->ddcap = cap;
    d->ddn = n;
    return 0;
}

static void csub_free(csub *x)
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

static int cq_rows(void *ctx, const batch *b)
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

static int cq_begin(cquery *q, cs *to, uint64_t req)
{
    fmt_schema sc = {q->ncols, (const char *const *)q->names, q->types};
    sbuf b;
    sbuf_init(&b);
    int rc = res_begin_put(&b, &sc, 1);
    if (!rc) rc = cs_result(to, req, 0, RES_BEGIN, 0, b.p + 1, b.len - 1);
    sbuf_fini(&b);
    return rc;
}

/* Fill q's per-task tables and output schema from its plan. */
static int cq_from_plan(cquery *q, const plan_dag *d, xerr *err)
{
    q->ntasks = plan_task_count(d);
    if (!(q->tnode = calloc((size_t)q->ntasks, sizeof *q->tnode)) ||
        !(q->tkind = calloc((size_t)q->ntasks, sizeof *q->tkind)) || !(q->top = calloc((size_t)q->ntasks, sizeof(int))) ||
        !(q->tidx = calloc((size_t)q->ntasks, sizeof(int))) || !(q->lost = calloc((size_t)q->ntasks + 1, 1)))
        return xerr_set(err, XE_NOMEM, "out of memory");
    int g = 0;
    for (int o = 0; o < d->nops; o++)
        for (int t = 0; t < d->ops[o].parallelism; t++, g++) {
            q->tkind[g] = plan_op_name(d->ops[o].kind);
            q->top[g] = o;
            q->tidx[g] = t;
        }
    const plan_schema *os = &d->ops[d->sink].out;
    q->ncols = os->ncols;
    if (!(q->names = calloc((size_t)os->ncols + 1, sizeof *q->names)) ||
        !(q->types = calloc((size_t)os->ncols + 1, sizeof *q->types)))
        return xerr_set(err, XE_NOMEM, "out of memory");
    for (int i = 0; i < os->ncols; i++) {
        if (!(q->names[i] = strdup(os->cols[i].name))) return xerr_set(err, XE_NOMEM, "out of memory");
        q->types[i] = os->cols[i].type;
    }
    q->limit = d->ops[d->sink].limit;
    q->out = (exec_out){q, NULL, cq_rows, NULL, NULL};
    return 0;
}

typedef struct pnode {
    const char *name, *addr, *domain;
} pnode;

static int plan_blob(sbuf *b, const pnode *nodes, int nnodes, const int *assign, const cquery *q)
{
    const plan_dag *d = q->dag;
    wire_wr w;
    wire_wr_init(&w, b);
    wire_put_u8(&w, 3);
    wire_put_u16(&w, (uint16_t)nnodes);
    for (int i = 0; i < nnodes; i++) {
        wire_put_str(&w, nodes[i].name, strlen(nodes[i].name));
        wire_put_str(&w, nodes[i].addr, strlen(nodes[i].addr));
        wire_put_str(&w, nodes[i].domain, strlen(nodes[i].domain));
    }
    wire_put_u16(&w, (uint16_t)d->nops);
    for (int o = 0; o < d->nops; o++) wire_put_u16(&w, (uint16_t)d->ops[o].parallelism);
    int nt = plan_task_count(d);
    wire_put_u32(&w, (uint32_t)nt);
    for (int t = 0; t < nt; t++) wire_put_u16(&w, (uint16_t)assign[t]);
    wire_put_blob(&w, q->sql, strlen(q->sql));
    wire_put_u32(&w, q->origin);
    wire_put_u8(&w, (uint8_t)q->ft);
    wire_put_u32(&w, (uint32_t)q->ckpt_ms);
    wire_put_u32(&w, q->prev);
    wire_put_u16(&w, (uint16_t)q->nrep);
    for (int i = 0; i < nt * q->nrep; i++) {
        int at = 0xffff;
        for (int k = 0; q->rnode[i] && k < nnodes && at == 0xffff; k++)
            if (!strcmp(nodes[k].name, q->rnode[i])) at = k;
        wire_put_u16(&w, (uint16_t)at);
    }
    wire_put_i64(&w, q->prev ? q->resume_wm : INT64_MIN);
    return wire_wr_end(&w, NULL);
}

static int persist_query(node *n, cquery *q, xerr *err)
{
    char key[64];
    snprintf(key, sizeof key, "q/%010u", q->qid);
    sbuf b;
    sbuf_init(&b);
    wire_wr w;
    wire_wr_init(&w, &b);
    wire_put_str(&w, q->name, strlen(q->name));
    wire_put_blob(&w, q->plan.p, q->plan.len);
    /* the placement record (absent in records of older coordinators) */
    const char *sn = nirvana_strategy_name(q->strategy);
    wire_put_str(&w, sn, strlen(sn));
    wire_put_u32(&w, (uint32_t)q->rounds);
    wire_put_u32(&w, (uint32_t)q->moves);
    wire_put_u8(&w, (uint8_t)q->converged);
    wire_put_u16(&w, (uint16_t)q->nrep);
    for (int i = 0; i < q->ntasks * q->nrep; i++) {
        const char *rn = q->rnode[i] ? q->rnode[i] : "";
        wire_put_str(&w, rn, strlen(rn));
    }
    wire_put_u8(&w, (uint8_t)q->keep); /* a kept push query (absent in older records) */
    int rc = wire_wr_end(&w, err);
    if (!rc) rc = cat_put(n, key, b.p, b.len, err);
    sbuf_fini(&b);
    return rc;
}

static int persist_next_qid(node *n, xerr *err)
{
    char v[32];
    int len = snprintf(v, sizeof v, "%u", n->co->next_qid);
    return cat_put(n, "next_qid", v, (size_t)len, err);
}

static void cq_link(coord *co, cquery *q)
{
    cquery **pp = &co->queries;
    while (*pp && (*pp)->qid < q->qid) pp = &(*pp)->next;
    q->next = *pp;
    *pp = q;
}

/* Undeploy everywhere, end its results, forget it. */
static void cq_drop(node *n, cquery *q)
{
    xerr err;
    q->ended = 1;
    for (pend *p = n->co->pends; p; p = p->next)
        if (p->q == q) p->q = NULL;
    for (csub *x = q->subs; x; x = x->next) cs_result(x->to, x->req, WIRE_F_LAST, RES_END, 0, NULL, 0);
    if (node_undeploy(n, q->qid, 0, &err)) node_log(n, NET_LOG_WARN, "undeploying query %u here: %s", q->qid, err.msg);
    send_undeploy(n, q, 0);
    if (!q->push || q->keep) {
        char key[64];
        snprintf(key, sizeof key, "q/%010u", q->qid);
        if (cat_del(n, key, &err)) node_log(n, NET_LOG_ERROR, "forgetting query %u: %s", q->qid, err.msg);
    }
    for (cquery **pp = &n->co->queries; *pp; pp = &(*pp)->next)
        if (*pp == q) {
            *pp = q->next;
            break;
        }
    cq_free(q);
}

static void deploy_done(node *n, pend *p)
{
    cquery *q = p->q;
    if (p->rc && q) {
        node_log(n, NET_LOG_ERROR, "query %u could not be deployed everywhere: %s", q->qid, p->msg);
        cq_drop(n, q);
    } else if (q && !q->push && p->client)
        notice_to(p->client, p->creq, "CREATE QUERY");
    job_step_done(n, p);
}


/* ------------------------------------------------------------------ placement */

/* The nodes placement may use, this one first: the live ones, or (all = 1)
 * every joined node with the dead ones marked.  pn (may be NULL) gets what
 * the DEPLOY plan names.  At most 256 (the plan's limit). */
static int cluster_nodes(node *n, int all, pnode *pn, place_node *pl)
{
    int nn = 1;
    if (pn) pn[0] = (pnode){n->cfg.name, n->addr, n->cfg.domain};
    pl[0] = (place_node){.name = n->cfg.name, .domain = n->cfg.domain, .slots = n->cfg.slots, .speed = n->cfg.speed, .alive = 1};
    for (int i = 0; i < n->npeers && nn < 256; i++) {
        peer *x = n->peers[i];
        int up = alive(x);
        if (x->standby || !(up || (all && joined(x)))) continue;
        if (pn) pn[nn] = (pnode){x->name, x->addr, x->domain};
        pl[nn++] = (place_node){.name = x->name, .domain = x->domain, .slots = (int)x->slots,
                                .speed = x->speed_milli / 1000.0, .alive = up};
    }
    meas_nodes(n, pl, nn); /* the capacities and round trips they reported */
    return nn;
}

static int node_index(const place_node *pl, int nn, const char *name)
{
    for (int i = 0; name && i < nn; i++)
        if (!strcmp(pl[i].name, name)) return i;
    return -1;
}

/* Per task of d, the node it must run on, or -1: a source task at the home
 * of the partition it reads (task p reads partition p), the sink here (node
 * 0).  strict: XE_FULL when a home is not among the nodes (else that task
 * is left free). */
static int op_homes(node *n, const plan_dag *d, const place_node *pl, int nn, int *home, int strict, xerr *err)
{
    for (int o = 0, t = 0; o < d->nops; o++)
        for (int k = 0; k < d->ops[o].parallelism; k++, t++) {
            home[t] = -1;
            if (d->ops[o].kind == PO_SINK) home[t] = 0;
            if (d->ops[o].kind != PO_SOURCE) continue;
            cstream *cst = partition_find(n->co, d->ops[o].stream, k);
            const char *h = cst ? cst->home : n->cfg.name;
            int i = node_index(pl, nn, h);
            if (i >= 0 && pl[i].alive) home[t] = i;
            else if (strict)
                return xerr_set(err, XE_FULL, "stream '%s' lives on node %s, which is not alive", cst ? cst->name : d->ops[o].stream, h);
        }
    return 0;
}

static void pq_fini(place_query *pq)
{
    free((int *)pq->home);
    free(pq->node);
    free(pq->rnode);
    memset(pq, 0, sizeof *pq);
}

/* A place_query for q over pl with R replicas per task: where q runs now
 * (its first min(R, q->nrep) replicas; the others are free). */
static int pq_of(node *n, cquery *q, const place_node *pl, int nn, int R, int fixed, place_query *pq, xerr *err)
{
    memset(pq, 0, sizeof *pq);
    int *home = calloc((size_t)q->ntasks + 1, sizeof *home);
    pq->node = calloc((size_t)q->ntasks + 1, sizeof *pq->node);
    pq->rnode = calloc((size_t)q->ntasks * (size_t)R + 1, sizeof *pq->rnode);
    pq->home = home;
    if (!home || !pq->node || !pq->rnode) {
        pq_fini(pq);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    op_homes(n, q->dag, pl, nn, home, 0, err);
    pq->d = q->dag;
    pq->name = q->name ? q->name : "push";
    pq->fixed = fixed;
    pq->running = 1;
    pq->meas = meas_query(n, q->qid, q->prev, q->dag); /* NULL until it has been measured */
    for (int t = 0; t < q->ntasks; t++) {
        pq->node[t] = node_index(pl, nn, q->tnode ? q->tnode[t] : NULL);
        for (int k = 0; k < R; k++)
            pq->rnode[t * R + k] = k < q->nrep && q->rnode ? node_index(pl, nn, q->rnode[t * q->nrep + k]) : -1;
    }
    return 0;
}

/* q's replica nodes from pq (R per task), as names. */
static int cq_set_replicas(cquery *q, const place_query *pq, const place_node *pl, int R)
{
    for (int i = 0; q->rnode && i < q->ntasks * q->nrep; i++) free(q->rnode[i]);
    free(q->rnode);
    q->rnode = NULL;
    q->nrep = R;
    if (!R) return 0;
    if (!(q->rnode = calloc((size_t)q->ntasks * (size_t)R, sizeof *q->rnode))) return XE_NOMEM;
    for (int i = 0; i < q->ntasks * R; i++)
        if (pq->rnode[i] >= 0 && !(q->rnode[i] = strdup(pl[pq->rnode[i]].name))) return XE_NOMEM;
    return 0;
}

/* The queries placement holds fixed: every running one but `except`. */
static int running_queries(coord *co, const cquery *except)
{
    int k = 0;
    for (cquery *q = co->queries; q; q = q->next) k += !q->ended && q != except && q->dag;
    return k;
}

/* The strategy and R a CREATE QUERY asks for (its WITH, else the cluster's). */
static int query_placement_opts(coord *co, const ast_stmt *st, nirvana_strategy *s, int *R, xerr *err)
{
    *s = co->placement;
    *R = co->replicas;
    const ast_options *w = st->kind == ST_CREATE_QUERY ? st->with : NULL;
    const ast_option *po = ast_option_get(w, "placement"), *ro = ast_option_get(w, "replicas");
    if (po && nirvana_strategy_parse(po->value, s))
        return xerr_at(err, XE_INVAL, po->line, po->col, "placement must be 'nirvana', 'nirvana-no-recovery', "
                       "'round-robin', 'resource-aware' or 'random', not '%s'", po->value);
    if (ro) {
        char *end;
        long v = strtol(ro->value, &end, 10);
        if (*end || v < 0 || v > 8)
            return xerr_at(err, XE_INVAL, ro->line, ro->col, "replicas must be an integer from 0 to 8");
        *R = (int)v;
    }
    return 0;
}

/* Parse an interval setting ('5 seconds') into ms. */
static int interval_ms(const char *v, int64_t *ms, xerr *err)
{
    xerr e2;
    if (plan_parse_interval(v, ms, &e2) || *ms <= 0)
        return xerr_set(err, XE_INVAL, "checkpoint_interval must be a positive interval such as '5 seconds', not '%s'", v);
    return 0;
}

/* The fault tolerance a CREATE QUERY asks for (its WITH, else the cluster's). */
static int query_ft_opts(coord *co, const ast_stmt *st, engine_ft *ft, int64_t *ckpt, xerr *err)
{
    *ft = co->ft;
    *ckpt = co->ckpt_ms;
    const ast_options *w = st->kind == ST_CREATE_QUERY ? st->with : NULL;
    const ast_option *fo = ast_option_get(w, "ft"), *co_ = ast_option_get(w, "checkpoint_interval");
    if (fo && engine_ft_parse(fo->value, ft))
        return xerr_at(err, XE_INVAL, fo->line, fo->col, "ft must be 'replica', 'checkpoint', 'upstream' or 'none', not '%s'",
                       fo->value);
    int rc = co_ ? interval_ms(co_->value, ckpt, err) : 0;
    if (rc) {
        err->line = co_->line;
        err->col = co_->col;
    }
    return rc;
}

/* CREATE QUERY, or a bare SELECT (push = 1): plan, place, persist, deploy.
 * Returns 1 while the nodes deploy, 0 when done at once, or an error. */
static int create_query(node *n, cs *s, uint64_t req, const ast_stmt *st, int push, xerr *err)
{
    coord *co = n->co;
    if (!push && query_find(co, st->name)) {
        if (st->if_not_exists) {
            char msg[400];
            snprintf(msg, sizeof msg, "query '%s' already exists, skipping", st->name);
            notice_to(s, req, msg);
            return 0;
        }
        return xerr_at(err, XE_EXISTS, st->line, st->col, "query '%s' already exists", st->name);
    }
    uint32_t qid = co->next_qid;
    sbuf sql;
    sbuf_init(&sql);
    if (push) sbuf_printf(&sql, "CREATE QUERY __push_%u AS ", qid);
    int pre = (int)sql.len; /* the planner's columns on line 1 count it */
    sbuf_adds(&sql, st->text);
    plan_dag *d = NULL;
    cquery *q = NULL;
    pnode *nodes = NULL;
    place_node *pl = NULL;
    place_query *pqs = NULL;
    place_game game = {0};
    int *assign = NULL, nq = 0, R = 1;
    nirvana_strategy strat;
    int rc;
    if (!sql.p) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto out;
    }
    if ((rc = query_placement_opts(co, st, &strat, &R, err))) goto out;
    const ast_option *sink = st->kind == ST_CREATE_QUERY ? ast_option_get(st->with, "sink") : NULL;
    if (sink && strncmp(sink->value, "tcp://", 6) && strncmp(sink->value, "unix://", 7)) {
        rc = xerr_at(err, XE_INVAL, sink->line, sink->col, "sink '%s': a cluster writes socket sinks only (tcp://HOST:PORT or unix:///path, "
                                     "from the coordinator); use SUBSCRIBE, or an embedded engine for a file sink",
                      sink->value);
        goto out;
    }
    if ((rc = engine_plan(n->eng, sql.p, &d, err))) {
        if (err->line == 1 && err->col > pre) err->col -= pre;
        goto out;
    }
    nodes = calloc((size_t)n->npeers + 1, sizeof *nodes);
    pl = calloc((size_t)n->npeers + 1, sizeof *pl);
    nq = running_queries(co, NULL) + 1;
    pqs = calloc((size_t)nq, sizeof *pqs);
    if (!nodes || !pl || !pqs) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto out;
    }
    /* the live nodes, this one first; the running queries stay where they
     * run; the new one plays */
    int nn = cluster_nodes(n, 0, nodes, pl), k = 0, two_domains = 0;
    for (int i = 1; i < nn; i++) two_domains |= strcmp(pl[i].domain, pl[0].domain) != 0;
    if (R > 0 && !two_domains && d->stateful) {
        /* a replica needs a live domain other than its primary's */
        node_log(n, NET_LOG_WARN, "query %u: one live failure domain, so it gets no replicas (replicas = %d asked)",
                 qid, R);
        R = 0;
    }
    for (cquery *x = co->queries; x; x = x->next)
        if (!x->ended && x->dag && (rc = pq_of(n, x, pl, nn, R, 1, &pqs[k++], err))) goto out;
    place_query *me = &pqs[k];
    int nt = plan_task_count(d);
    int *home = calloc((size_t)nt + 1, sizeof *home);
    me->home = home;
    me->node = malloc(((size_t)nt + 1) * sizeof *me->node);
    me->rnode = malloc(((size_t)nt * (size_t)R + 1) * sizeof *me->rnode);
    if (!home || !me->node || !me->rnode) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto out;
    }
    me->d = d;
    me->name = push ? "push" : st->name;
    if ((rc = op_homes(n, d, pl, nn, home, 1, err))) goto out;
    if ((rc = place_build(&game, pl, nn, pqs, nq, R, strat, err)) || (rc = place_run(&game, pqs, nq, err))) {
        if (rc == XE_FULL || rc == XE_INVAL) {
            char why[sizeof err->msg];
            snprintf(why, sizeof why, "%s", err->msg);
            rc = xerr_set(err, rc, "cannot place the query with %s: %s (add nodes, raise --slots, lower replicas "
                                   "or drop a query)", nirvana_strategy_name(strat), why);
        }
        goto out;
    }
    assign = me->node;
    if (!(q = calloc(1, sizeof *q))) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto out;
    }
    sbuf_init(&q->plan);
    sbuf_init(&q->enc);
    sbuf_init(&q->backlog);
    q->qid = qid;
    q->push = push;
    q->keep = push && s && s->failover;
    q->sql = sbuf_steal(&sql);
    q->co_node = n;
    if (q->keep) {
        char pname[32];
        snprintf(pname, sizeof pname, "push#%u", qid);
        q->name = strdup(pname);
    }
    if ((!push && !(q->name = strdup(st->name))) || (q->keep && !q->name) || (rc = cq_from_plan(q, d, err))) {
        if (!rc) rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto out;
    }
    for (int t = 0; t < q->ntasks; t++)
        if (!(q->tnode[t] = strdup(nodes[assign[t]].name))) {
            rc = xerr_set(err, XE_NOMEM, "out of memory");
            goto out;
        }
    if (cq_set_replicas(q, me, pl, R)) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto out;
    }
    q->strategy = strat;
    q->rounds = game.r->rounds;
    q->moves = game.r->moves;
    q->converged = game.r->converged;
    q->dag = d;
    d = NULL;
    q->origin = qid;
    if ((rc = query_ft_opts(co, st, &q->ft, &q->ckpt_ms, err))) goto out;
    if ((rc = plan_blob(&q->plan, nodes, nn, assign, q))) {
        rc = xerr_set(err, rc, "cannot encode the deployment");
        goto out;
    }
    co->next_qid++;
    if ((rc = persist_next_qid(n, err))) goto out;
    if ((!push || q->keep) && (rc = persist_query(n, q, err))) goto out;
    if ((rc = node_deploy(n, qid, q->plan.p, q->plan.len, &q->out, err))) {
        if (!push || q->keep) {
            char key[64];
            xerr e2;
            snprintf(key, sizeof key, "q/%010u", qid);
            cat_del(n, key, &e2);
        }
        goto out;
    }
    if (push) {
        csub *x = calloc(1, sizeof *x);
        if (x) {
            x->to = s;
            x->req = req;
            q->subs = x;
        }
        cq_begin(q, s, req);
        /* its name, to attach again after a failover */
        if (q->keep) cs_result(s, req, 0, RES_NAME, 0, q->name, strlen(q->name));
    }
    cq_link(co, q);
    {
        sbuf line;
        sbuf_init(&line);
        for (int t = 0; t < q->ntasks; t++) sbuf_printf(&line, "%s%s", t ? " " : "", q->tnode[t]);
        for (int i = 0; i < q->ntasks * q->nrep; i++)
            if (q->rnode[i]) sbuf_printf(&line, " %s#%d/r%d@%s", q->tkind[i / q->nrep], q->tidx[i / q->nrep], i % q->nrep, q->rnode[i]);
        node_log(n, NET_LOG_INFO, "query %u (%s) placed by %s in %d rounds: %s", qid, q->name ? q->name : "push",
                 nirvana_strategy_name(q->strategy), q->rounds, line.p ? line.p : "");
        sbuf_fini(&line);
    }
    pend *p = pend_new(n, PK_BROADCAST);
    if (!p) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        cq_drop(n, q);
        q = NULL;
        goto out;
    }
    p->client = s;
    p->creq = req;
    p->q = q;
    cquery *dq = q;
    q = NULL; /* linked: the coordinator owns it now */
    /* with no other node the broadcast finishes p at once: the job then goes
     * on from our return value, not from p->done */
    if (send_deploy(n, NULL, p, dq) == 1) {
        p->done = deploy_done;
        rc = 1;
    } else {
        if (!push) notice_to(s, req, "CREATE QUERY");
        rc = 0;
    }
out:
    sbuf_fini(&sql);
    plan_free(d);
    free(nodes);
    free(pl);
    for (int i = 0; pqs && i < nq; i++) pq_fini(&pqs[i]);
    free(pqs);
    place_game_fini(&game);
    if (q) cq_free(q);
    return rc;
}

static int drop_query(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err)
{
    cquery *q = query_find(n->co, st->name);
    if (!q) {
        if (st->if_exists) {
            char msg[400];
            snprintf(msg, sizeof msg, "query '%s' does not exist, skipping", st->name);
            notice_to(s, req, msg);
            return 0;
        }
        return xerr_set(err, XE_NOTFOUND, "query '%s' does not exist", st->name);
    }
    uint32_t qid = q->qid;
    cq_drop(n, q);
    node_log(n, NET_LOG_INFO, "query %u (%s) dropped", qid, st->name);
    notice_to(s, req, "DROP QUERY");
    return 0;
}

/* ------------------------------------------------------------------ statements */

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
    job_step_done(n, p);
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
static int show_streams(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err)
{
    for (int i = 0; i < n->co->nstreams; i++) n->co->streams[i].known = 0;
    return gather(n, s, req, st, "SHOW STREAMS;", alive, streams_take, streams_fin, err);
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
    (void)n;
    if (p->client) send_table(p->client, p->creq, SQ_NCOLS, names, types, &p->gb);
}

static int show_queries(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err)
{
    return gather(n, s, req, st, "SHOW QUERIES;", worker, queries_take, queries_fin, err);
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
    send_table(s, req, 9, names, types, &b);
    batch_fini(&b);
}

static int show_nodes(node *n, cs *s, uint64_t req)
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
        if (x && !joined(x)) continue;
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
        r[5] = val_int(TY_BIGINT, node_load(n, name));
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
    send_table(s, req, 10, names, types, &b);
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
 * measured inputs, and their replicas). */
static double measured_load_on(const place_game *g, int i)
{
    double l = 0;
    for (int k = 0; g->r && k < g->r->nplayers; k++) {
        const nirvana_player *p = &g->r->players[k];
        if (p->node != i || !g->measured[p->task]) continue;
        l += p->replica < 0 ? g->p->tasks[p->task].load : g->p->tasks[p->task].replica_load;
    }
    return l;
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
    json_object_set_new(o, "distances_measured", json_boolean(g->dist_measured));
    json_object_set_new(o, "restore_bytes_per_s", json_real(bps));
    json_object_set_new(o, "restore_measured", json_boolean(rm));
    return o;
}

static int explain_placement(node *n, cs *s, uint64_t req, cquery *q, int json)
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
            send_table(s, req, 1, jn, jt, &jb);
            batch_fini(&jb);
        } else
            rc = XE_NOMEM;
        free(js);
    } else {
        send_table(s, req, 10 + NINPUT_COLS, names, types, &b);
        static const char *sn[] = {"summary"};
        static const sql_type st_[] = {TY_TEXT};
        batch sb;
        if (!batch_init(&sb, 1, 12)) {
            for (char *line = text.p, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                nl = strchr(line, '\n');
                val *row = batch_add_row(&sb);
                if (row) batch_put_text(&sb, &row[0], line, nl ? (size_t)(nl - line) : strlen(line));
            }
            send_table(s, req, 1, sn, st_, &sb);
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

static void insert_reply(node *n, pend *p) { job_step_done(n, p); }

/* An INSERT run here into a stream whose log has a copy: the copy has it. */
static void insert_durable(node *n, uint64_t id)
{
    for (pend *p = n->co ? n->co->pends : NULL; p; p = p->next)
        if (p->id == id && p->kind == PK_FWD_INSERT) {
            pend_finish(n, p);
            return;
        }
}

/* SET placement and SET replicas: checked (apply = 0), then applied. */
static int check_cluster_setting(coord *co, const ast_stmt *st, int apply, xerr *err)
{
    const ast_lit *l = &st->set_value;
    if (!strcmp(st->set_key, "placement")) {
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
        int rc = interval_ms(l->s, &ms, err);
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

/* A live node in another domain than home's for a stream's shadow (this
 * one included), taken round-robin from `start`; NULL when there is none. */
static const char *pick_shadow(node *n, const char *home, int start)
{
    const char *hd = n->cfg.domain, *best = NULL;
    double best_cap = -1;
    peer *hp = strcmp(home, n->cfg.name) ? node_peer(n, home, strlen(home)) : NULL;
    if (hp) hd = hp->domain;
    int nc = n->npeers + 1;
    /* the shadow decodes and logs all of the stream's input, as its home
     * does: of the candidates, the one with the most capacity (the first
     * from `start` among equals, so that streams spread) */
    for (int k = 0; k < nc; k++) {
        int i = (start + k) % nc;
        const char *name = i == n->npeers ? n->cfg.name : n->peers[i]->name;
        const char *dom = i == n->npeers ? n->cfg.domain : n->peers[i]->domain;
        if (i < n->npeers && !worker(n->peers[i])) continue;
        double cap = i == n->npeers ? n->cfg.speed : n->peers[i]->speed_milli / 1000.0;
        if (strcmp(dom, hd) && strcmp(name, home) && cap > best_cap * 1.05) {
            best = name;
            best_cap = cap;
        }
    }
    return best;
}

/* "stream/<name>" = home [TAB shadow [TAB lshadow]] LF CREATE STREAM text */
static int persist_stream(node *n, cstream *c, xerr *err)
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

static void tick_stream(node *n, cstream *c);
static void send_logshadow(node *n, cstream *c, const char *source);

/* An INSERT into a shadowed stream goes to the shadow too (first, after a
 * TICK: both see it at the same point of the input); nobody waits for it. */
static void insert_to_shadow(node *n, cstream *c, const ast_stmt *st)
{
    tick_stream(n, c);
    c->dirty = 1;
    if (!strcmp(c->shadow, n->cfg.name)) {
        xerr err;
        exec_out none = {0};
        if (engine_exec(n->eng, st, &none, &err)) node_log(n, NET_LOG_WARN, "shadow insert into %s: %s", c->name, err.msg);
        return;
    }
    peer *x = node_peer(n, c->shadow, strlen(c->shadow));
    wire_msg m = {.type = WIRE_QUERY};
    m.u.query.req_id = 0;
    m.u.query.sql = wire_str_of(st->text);
    if (x && alive(x)) cs_send_msg(x->link, &m);
}

/* CREATE STREAM ... WITH (home = 'NODE[,NODE...]'): partition p's home is
 * the list's (p mod its length)-th node, the coordinator itself or a live
 * member that runs tasks; anything else is refused, naming the candidates. */
static int named_home(node *n, const ast_option *ho, int p, const char **home, xerr *err)
{
    int len = 1;
    for (const char *c = ho->value; *c; c++) len += *c == ',';
    const char *w = ho->value;
    for (int k = p % len; k > 0; k--) w = strchr(w, ',') + 1;
    while (*w == ' ') w++;
    size_t wl = strcspn(w, ", ");
    if (strlen(n->cfg.name) == wl && !strncmp(n->cfg.name, w, wl)) {
        *home = n->cfg.name;
        return 0;
    }
    for (int i = 0; i < n->npeers; i++)
        if (worker(n->peers[i]) && strlen(n->peers[i]->name) == wl && !strncmp(n->peers[i]->name, w, wl)) {
            *home = n->peers[i]->name;
            return 0;
        }
    sbuf names;
    sbuf_init(&names);
    sbuf_printf(&names, "%s", n->cfg.name);
    for (int i = 0; i < n->npeers; i++)
        if (worker(n->peers[i])) sbuf_printf(&names, ", %s", n->peers[i]->name);
    int rc = xerr_at(err, XE_INVAL, ho->line, ho->col, "home '%.*s' is not a live node that runs tasks (those are: %.*s)",
                     (int)wl, w, (int)names.len, names.p ? names.p : "");
    sbuf_fini(&names);
    return rc;
}

/* The cstreams of partitions 1 .. np-1 of stream `name`, at their homes,
 * each with a shadow in another domain, in the catalog.  The stream's own
 * CREATE makes them at every node. */
static int add_partitions(node *n, const char *name, const char *const *home, int np, xerr *err)
{
    coord *co = n->co;
    for (int p = 1; p < np; p++) {
        cstream *v = realloc(co->streams, (size_t)(co->nstreams + 1) * sizeof *v);
        if (!v) return xerr_set(err, XE_NOMEM, "out of memory");
        co->streams = v;
        cstream *c = &co->streams[co->nstreams];
        memset(c, 0, sizeof *c);
        char pn[300];
        engine_partition_name(name, p, pn, sizeof pn);
        c->name = strdup(pn);
        c->home = strdup(home[p]);
        c->sql = strdup("");
        c->part = p;
        if (!c->name || !c->home || !c->sql) return xerr_set(err, XE_NOMEM, "out of memory");
        co->nstreams++;
        /* each partition's candidates from another start: equals spread */
        const char *sh = pick_shadow(n, home[p], co->rr_home + p);
        if (sh && !(*(co->shadow_log ? &c->lshadow : &c->shadow) = strdup(sh))) return xerr_set(err, XE_NOMEM, "out of memory");
        int rc = persist_stream(n, c, err);
        if (rc) return rc;
        node_log(n, NET_LOG_INFO, "stream %s: home node %s%s%s", pn, home[p], sh ? (co->shadow_log ? ", its log copied to " : ", shadow ") : "",
                 sh ? sh : "");
    }
    return 0;
}

/* Returns 0 (done), 1 (waiting for nodes) or an error. */
static int run_stmt(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err)
{
    coord *co = n->co;
    int rc;
    switch (st->kind) {
    case ST_CREATE_STREAM: {
        if (stream_find(co, st->name)) return exec_local(n, s, req, st, err);
        const ast_option *src = ast_option_get(st->with, "source");
        if (src && !strncmp(src->value, "file://", 7))
            /* no node reads a file: its bytes are on the client's machine */
            return xerr_at(err, XE_INVAL, src->line, src->col,
                           "source '%s': a cluster reads socket sources only (tcp://HOST:PORT or unix:///path, at the "
                           "stream's home); to load a file, ares-sql --connect ... --ingest %s --end < FILE",
                           src->value, st->name);
        /* the home: WITH (home = 'NODE'), else round-robin over the live
         * nodes, this one included; each partition's likewise */
        const char *home = n->cfg.name, *phome[PLAN_MAX_PARTITIONS];
        const ast_option *ho = ast_option_get(st->with, "home"), *po = ast_option_get(st->with, "partitions");
        int np = po ? atoi(po->value) : 1;
        if (np < 1 || np > PLAN_MAX_PARTITIONS) np = 1; /* the engine refuses it below */
        for (int p = 0; p < np; p++) {
            phome[p] = n->cfg.name;
            if (ho) {
                if ((rc = named_home(n, ho, p, &phome[p], err))) return rc;
                continue;
            }
            int nn = 1;
            for (int i = 0; i < n->npeers; i++) nn += worker(n->peers[i]);
            int pick = co->rr_home++ % nn;
            for (int i = 0, k = 1; i < n->npeers && pick; i++)
                if (worker(n->peers[i]) && k++ == pick) phome[p] = n->peers[i]->name;
        }
        home = phome[0];
        char *lite = strip_source(st->text);
        if (lite && strcmp(home, n->cfg.name)) {
            ast_stmt *ls = NULL;
            rc = parse_one(lite, strlen(lite), &ls, err);
            if (!rc) rc = exec_local(n, s, req, ls, err);
            ast_stmt_free(ls);
        } else
            rc = exec_local(n, s, req, st, err);
        if (rc) {
            free(lite);
            return rc;
        }
        cstream *v = realloc(co->streams, (size_t)(co->nstreams + 1) * sizeof *v);
        if (!v) {
            free(lite);
            return xerr_set(err, XE_NOMEM, "out of memory");
        }
        co->streams = v;
        cstream *cst = &co->streams[co->nstreams];
        cst->name = strdup(st->name);
        cst->home = strdup(home);
        cst->sql = strdup(st->text);
        cst->lite = lite;
        cst->shadow = cst->lshadow = NULL;
        cst->dirty = 0;
        cst->part = 0;
        if (!cst->name || !cst->home || !cst->sql) return xerr_set(err, XE_NOMEM, "out of memory");
        co->nstreams++;
        const char *sh = pick_shadow(n, home, co->rr_home);
        int by_log = lite || co->shadow_log;
        if (sh && !(*(by_log ? &cst->lshadow : &cst->shadow) = strdup(sh))) return xerr_set(err, XE_NOMEM, "out of memory");
        rc = persist_stream(n, cst, err);
        if (rc) return rc;
        node_log(n, NET_LOG_INFO, "stream %s: home node %s%s%s%s", st->name, home,
                 lite ? " (it alone reads the stream's source)" : "", sh ? (by_log ? ", its log copied to " : ", shadow ") : "",
                 sh ? sh : "");
        if ((rc = add_partitions(n, st->name, phome, np, err))) return rc;
        cst = stream_find(co, st->name); /* add_partitions moved the array */
        rc = job_broadcast_stream(n, s, req, cst, err);
        if (rc >= 0 && sh) send_logshadow(n, cst, NULL); /* after the CREATE: the same connection */
        for (int p = 1; rc >= 0 && p < np; p++) {
            cstream *pc = partition_find(co, st->name, p);
            if (pc && pc->lshadow) send_logshadow(n, pc, NULL);
        }
        return rc;
    }
    case ST_DROP_STREAM: {
        if ((rc = exec_local(n, s, req, st, err))) return rc;
        /* the stream, then its partitions */
        for (int p = 0; p < PLAN_MAX_PARTITIONS; p++) {
            cstream *cst = partition_find(co, st->name, p);
            if (!cst) {
                if (p) break;
                return 0;
            }
            char key[600];
            snprintf(key, sizeof key, "stream/%s", cst->name);
            cat_del(n, key, err);
            free(cst->name);
            free(cst->home);
            free(cst->sql);
            free(cst->lite);
            free(cst->shadow);
            free(cst->lshadow);
            *cst = co->streams[--co->nstreams];
        }
        return job_broadcast(n, s, req, st->text, err);
    }
    case ST_SET: {
        if ((rc = check_cluster_setting(co, st, 0, err))) return rc;
        if ((rc = exec_local(n, s, req, st, err))) return rc;
        check_cluster_setting(co, st, 1, err);
        char key[300];
        snprintf(key, sizeof key, "set/%s", st->set_key);
        if ((rc = cat_put(n, key, st->text, strlen(st->text), err))) return rc;
        int i;
        for (i = 0; i < co->nsets && strcmp(co->set_keys[i], st->set_key); i++) {}
        if (i == co->nsets) {
            char **k = realloc(co->set_keys, (size_t)(i + 1) * sizeof *k);
            if (k) co->set_keys = k;
            char **v = realloc(co->set_sql, (size_t)(i + 1) * sizeof *v);
            if (v) co->set_sql = v;
            if (!k || !v) return xerr_set(err, XE_NOMEM, "out of memory");
            co->set_keys[i] = strdup(st->set_key);
            co->set_sql[i] = NULL;
            co->nsets++;
        }
        free(co->set_sql[i]);
        co->set_sql[i] = strdup(st->text);
        return job_broadcast(n, s, req, st->text, err);
    }
    case ST_CREATE_QUERY: return create_query(n, s, req, st, 0, err);
    case ST_SELECT: return create_query(n, s, req, st, 1, err);
    case ST_DROP_QUERY: return drop_query(n, s, req, st, err);
    case ST_ALTER_QUERY_REBALANCE: return alter_rebalance(n, s, req, st, err);
    case ST_SUBSCRIBE: {
        cquery *q = query_find(co, st->name);
        if (!q) return xerr_at(err, XE_NAME, st->line, st->col, "no query '%s'", st->name);
        csub *x = calloc(1, sizeof *x);
        if (!x) return xerr_set(err, XE_NOMEM, "out of memory");
        x->to = s;
        x->req = req;
        x->next = q->subs;
        q->subs = x;
        cq_begin(q, s, req);
        cs_result(s, req, 0, RES_NAME, 0, q->name, strlen(q->name));
        node_log(n, NET_LOG_INFO, "a client subscribed to %s", q->name);
        return 0;
    }
    case ST_SHOW:
        if (st->show == SHOW_NODES) return show_nodes(n, s, req);
        if (st->show == SHOW_STREAMS) return show_streams(n, s, req, st, err);
        if (st->show == SHOW_QUERIES) return show_queries(n, s, req, st, err);
        return exec_local(n, s, req, st, err);
    case ST_EXPLAIN:
        if (st->explain_placement && st->name) {
            cquery *q = query_find(co, st->name);
            if (q) return explain_placement(n, s, req, q, st->explain_json);
        }
        return exec_local(n, s, req, st, err);
    case ST_INSERT: {
        cstream *cst = stream_find(co, st->name);
        peer *home = cst ? node_peer(n, cst->home, strlen(cst->home)) : NULL;
        if (cst && cst->shadow) insert_to_shadow(n, cst, st);
        if (!cst || !strcmp(cst->home, n->cfg.name)) {
            if ((rc = exec_local(n, s, req, st, err)) || !cst || !shadow_guarded(n, cst->name)) return rc;
            /* the home is here and its log has a copy: done once the copy has the rows */
            pend *p = pend_new(n, PK_FWD_INSERT);
            if (!p) return xerr_set(err, XE_NOMEM, "out of memory");
            p->client = s;
            p->creq = req;
            p->done = insert_reply;
            shadow_call_later(n, cst->name, insert_durable, p->id);
            shadow_ship_soon(n, cst->name);
            return 1;
        }
        if (!home || !alive(home))
            return xerr_set(err, XE_IO, "stream '%s' lives on node %s, which is not alive", st->name, cst->home);
        pend *p = pend_new(n, PK_FWD_INSERT);
        if (!p) return xerr_set(err, XE_NOMEM, "out of memory");
        p->client = s;
        p->creq = req;
        p->home = home;
        p->done = insert_reply;
        wire_msg m = {.type = WIRE_QUERY};
        m.u.query.req_id = p->id;
        m.u.query.sql = wire_str_of(st->text);
        if ((rc = cs_send_msg(home->link, &m))) {
            pend_unlink(n, p);
            pend_free(p);
            return xerr_set(err, rc, "cannot reach node %s", home->name);
        }
        return 1;
    }
    default: return exec_local(n, s, req, st, err);
    }
}

static void job_free(csess *ss)
{
    parse_result_free(ss->job);
    ss->job = NULL;
}

static void job_fail(node *n, cs *s, int rc, const char *msg)
{
    (void)n;
    csess *ss = s->sess;
    if (!ss || !ss->job) return;
    cs_error(s, ss->job_req, rc, msg && msg[0] ? msg : xerr_name(rc));
    job_free(ss);
}

/* The same for an error of this node's own: with its position in the SQL. */
static void job_fail_at(node *n, cs *s, int rc, const xerr *err)
{
    char msg[sizeof err->msg + 40];
    wire_error_text(err, rc, msg, sizeof msg);
    job_fail(n, s, rc, msg);
}

static void job_run(node *n, cs *s)
{
    csess *ss = s->sess;
    while (ss->job && ss->job_i < ss->job->nstmts) {
        xerr err;
        xerr_clear(&err);
        int rc = run_stmt(n, s, ss->job_req, ss->job->stmts[ss->job_i], &err);
        if (rc == 1) return;
        if (rc < 0) {
            job_fail_at(n, s, rc, &err);
            return;
        }
        ss->job_i++;
    }
    if (!ss->job) return;
    unsigned char z[24] = {0};
    cs_result(s, ss->job_req, WIRE_F_LAST, RES_DONE, 0, z, sizeof z);
    job_free(ss);
}

static void job_start(node *n, cs *s, const wire_msg *m)
{
    csess *ss = s->sess;
    uint64_t req = m->u.query.req_id;
    if (ss->job) {
        cs_error(s, req, XE_BUSY, "a statement is still running on this connection");
        return;
    }
    parse_result *r = NULL;
    parse_sql(m->u.query.sql.p, m->u.query.sql.n, &r);
    if (!r || r->nerrors) {
        xerr e;
        if (r) xerr_at(&e, XE_SYNTAX, r->errors[0].line, r->errors[0].col, "%s", r->errors[0].msg);
        else xerr_set(&e, XE_NOMEM, "out of memory");
        char msg[sizeof e.msg + 40];
        wire_error_text(&e, e.code, msg, sizeof msg);
        cs_error(s, req, e.code, msg);
        parse_result_free(r);
        return;
    }
    ss->job = r;
    ss->job_i = 0;
    ss->job_req = req;
    job_run(n, s);
}

/* ------------------------------------------------------------------ ingest from clients */


/* TICK a shadowed stream at its home and its shadow, in order with its input. */
static void tick_stream(node *n, cstream *c)
{
    wire_msg m = {.type = WIRE_TICK};
    m.u.tick.stream = wire_str_of(c->name);
    const char *who[2] = {c->home, c->shadow};
    for (int i = 0; i < 2; i++) {
        if (!who[i]) continue;
        if (!strcmp(who[i], n->cfg.name)) {
            node_tick(n, c->name, strlen(c->name));
            continue;
        }
        peer *x = node_peer(n, who[i], strlen(who[i]));
        if (x && alive(x)) cs_send_msg(x->link, &m);
    }
    c->dirty = 0;
}

/* One forward of an ingest request to node x (the home, or quiet: the shadow). */
static pend *fwd_open(node *n, cs *s, uint64_t req, peer *x, int quiet)
{
    pend *p = pend_new(n, PK_FWD_INGEST);
    if (!p) return NULL;
    p->client = s;
    p->creq = req;
    p->home = x;
    p->quiet = quiet;
    return p;
}

/* A client's ingest (a session it can resend) whose home was lost, into a
 * stream whose log is copied elsewhere: it waits for the failure event,
 * which makes the copy the home (promote_shadows); then the client sends
 * the chunks the copy lacks again (RES_RESEND) and they go there. */
static int ingest_can_move(node *n, pend *p)
{
    cstream *c = p->stream ? stream_find(n->co, p->stream) : NULL;
    if (!c || !c->lshadow || !p->client || !p->client->sess || p->client->sess->ing_req != p->creq) return 0;
    p->moving = 1;
    p->home = NULL;
    return 1;
}

static void move_ingests(node *n)
{
    for (pend *p = n->co->pends; p; p = p->next) {
        if (p->kind != PK_FWD_INGEST || !p->moving) continue;
        p->moving = 0;
        cstream *c = p->stream ? stream_find(n->co, p->stream) : NULL;
        peer *h = c ? node_peer(n, c->home, strlen(c->home)) : NULL;
        int here = c && !strcmp(c->home, n->cfg.name);
        if (!here && (!h || !alive(h))) {
            p->failed = 1;
            if (p->client) cs_error(p->client, p->creq, XE_IO, "the stream's home and its copy were lost");
            continue;
        }
        if (here) p->failed = 1; /* the chunks are fed here from now on */
        else p->home = h;
        p->acked = 0;
        node_log(n, NET_LOG_WARN, "ingest into %s goes on at its new home %s: the client sends what it lacks again",
                 p->stream, c->home);
        if (p->client) cs_result(p->client, p->creq, 0, RES_RESEND, 0, NULL, 0);
    }
}

static void fwd_send(node *n, cs *s, pend *p, const wire_frame *f)
{
    unsigned char *copy = malloc(f->length);
    if (!copy) {
        p->failed = 1;
        return;
    }
    memcpy(copy, f->payload, f->length);
    be64_put(copy, p->id);
    cs *saved = n->cur_in;
    n->cur_in = s;
    cs_send(p->home->link, WIRE_INGEST, f->flags, copy, f->length);
    n->cur_in = saved;
    free(copy);
}

/* --end on a partitioned stream ends every partition: an empty last chunk
 * that ends the stream goes to each partition's home and shadow (a
 * partition also ends alone: ares-sql --ingest 'NAME#P' --end). */
static void end_partitions(node *n, const char *name)
{
    for (int p = 1; p < PLAN_MAX_PARTITIONS; p++) {
        cstream *c = partition_find(n->co, name, p);
        if (!c) break;
        const char *pn = c->name;
        if (c->shadow) tick_stream(n, c);
        const char *who[2] = {c->home, c->shadow};
        for (int i = 0; i < 2; i++) {
            if (!who[i]) continue;
            xerr err;
            if (!strcmp(who[i], n->cfg.name)) {
                if (engine_end_stream(n->eng, pn, &err)) node_log(n, NET_LOG_WARN, "end of %s: %s", pn, err.msg);
                continue;
            }
            peer *x = node_peer(n, who[i], strlen(who[i]));
            pend *fp = x && alive(x) ? fwd_open(n, NULL, 0, x, 1) : NULL;
            if (!fp) continue;
            wire_msg m = {.type = WIRE_INGEST, .flags = WIRE_F_LAST};
            m.u.ingest.req_id = fp->id;
            m.u.ingest.stream = wire_str_of(pn);
            m.u.ingest.format = WIRE_FMT_STREAM;
            m.u.ingest.end = 1;
            cs_send_msg(x->link, &m);
        }
    }
}

/* A client's INGEST chunk: to the stream's home (which answers) and to its
 * shadow (which does not), each here or forwarded under our request id. */
static void ingest_from_client(node *n, cs *s, const wire_msg *m, const wire_frame *f)
{
    uint64_t req = m->u.ingest.req_id;
    int last = (m->flags & WIRE_F_LAST) != 0, first = 1;
    char name[512];
    snprintf(name, sizeof name, "%.*s", (int)m->u.ingest.stream.n, m->u.ingest.stream.p);
    cstream *cst = stream_find(n->co, name);
    for (pend *p = n->co->pends; p; p = p->next)
        if (p->kind == PK_FWD_INGEST && p->client == s && p->creq == req) first = 0;
    for (ingsess *g = n->ings; g; g = g->next)
        if (g->from == s && g->req == req) first = 0;
    if (first) {
        char msg[700];
        peer *home = cst ? node_peer(n, cst->home, strlen(cst->home)) : NULL;
        if (!cst) snprintf(msg, sizeof msg, "unknown stream '%s'", name);
        else if (strcmp(cst->home, n->cfg.name) && (!home || !alive(home)))
            snprintf(msg, sizeof msg, "stream '%s' lives on node %s, which is not alive", name, cst->home);
        else
            msg[0] = 0;
        if (msg[0]) {
            cs_error(s, req, cst ? XE_IO : XE_NAME, msg);
            pend *p = last ? NULL : fwd_open(n, s, req, NULL, 0);
            if (p) p->failed = 1; /* swallow the rest */
            return;
        }
        if (cst->shadow) tick_stream(n, cst); /* both cut records from the same point */
        const char *who[2] = {cst->home, cst->shadow};
        for (int i = 0; i < 2; i++) {
            if (!who[i] || !strcmp(who[i], n->cfg.name)) continue;
            peer *x = node_peer(n, who[i], strlen(who[i]));
            if (!x || !alive(x)) continue;
            pend *p = fwd_open(n, s, req, x, i == 1);
            if (!p || !(p->stream = strdup(name))) {
                cs_error(s, req, XE_NOMEM, "out of memory");
                return;
            }
            if (i == 0) node_log(n, NET_LOG_INFO, "ingest into %s goes to its home node %s%s%s", name, x->name,
                                 cst->shadow ? " and its shadow " : "", cst->shadow ? cst->shadow : "");
        }
    }
    if (cst && cst->shadow) cst->dirty = 1;
    if (cst && last && m->u.ingest.end && !strcasecmp(cst->name, name)) end_partitions(n, cst->name);
    /* here: as the home, or quietly as the shadow */
    csess *ss = m->u.ingest.session ? s->sess : NULL;
    if (ss && ss->ing_req != req) {
        ss->ing_req = req;
        ss->ing_acked = ss->ing_local = 0;
        ss->ing_here = 0;
    }
    if (cst && (!strcmp(cst->home, n->cfg.name) || (cst->shadow && !strcmp(cst->shadow, n->cfg.name)))) {
        node_ingest(n, s, m, strcmp(cst->home, n->cfg.name) != 0);
        if (ss) {
            ss->ing_here = 1;
            ss->ing_local = node_ingest_safe(n, s, req, m->u.ingest.seq);
        }
    }
    if (s->sess && m->u.ingest.session && !last) ingest_acked(n, s, req);
    for (pend *p = n->co->pends, *nx; p; p = nx) {
        nx = p->next;
        if (p->kind != PK_FWD_INGEST || p->client != s || p->creq != req) continue;
        if (!p->failed && p->home) fwd_send(n, s, p, f);
        if (last && (p->failed || !p->home)) {
            pend_unlink(n, p);
            pend_free(p);
        }
    }
}

/* ------------------------------------------------------------------ answers from nodes */

static void pass_to_client(pend *p, const wire_frame *f)
{
    if (!p->client || p->quiet || f->length < 8) return;
    unsigned char *copy = malloc(f->length);
    if (!copy) return;
    memcpy(copy, f->payload, f->length);
    be64_put(copy, p->creq);
    cs_send(p->client, f->type, f->flags, copy, f->length);
    free(copy);
}

static void on_answer(node *n, cs *s, const wire_msg *m, const wire_frame *f)
{
    uint64_t id = m->type == WIRE_RESULT ? m->u.result.req_id : m->type == WIRE_ACK ? m->u.ack.epoch : m->u.error.req_id;
    if (m->type == WIRE_ERROR)
        node_log(n, id ? NET_LOG_INFO : NET_LOG_WARN, "error from %s: %.*s", s->peer ? s->peer->name : "?",
                 (int)m->u.error.msg.n, m->u.error.msg.p);
    if (!id) return;
    pend *p;
    for (p = n->co->pends; p && p->id != id; p = p->next) {}
    if (!p) return;
    int part = m->type == WIRE_RESULT && m->u.result.rows.n ? (unsigned char)m->u.result.rows.p[0] : 0;
    int last = m->type == WIRE_ACK || m->type == WIRE_ERROR || (f->flags & WIRE_F_LAST);
    switch (p->kind) {
    case PK_BROADCAST:
        if (m->type == WIRE_ERROR && !p->rc) {
            p->rc = m->u.error.code < 0 ? m->u.error.code : XE_IO;
            snprintf(p->msg, sizeof p->msg, "node %s: %.*s", s->peer ? s->peer->name : "?", (int)m->u.error.msg.n,
                     m->u.error.msg.p);
        }
        if (last && s->peer) pend_answered(n, p, s->peer);
        return;
    case PK_GATHER:
        if (part == RES_ROWS && s->peer) {
            batch b = {0};
            xerr e2;
            if (batch_decode(m->u.result.rows.p + 1, m->u.result.rows.n - 1, &b, &e2) == 0 && p->take)
                p->take(n, p, s->peer->name, &b);
            batch_fini(&b);
        }
        if (last && s->peer) pend_answered(n, p, s->peer);
        return;
    case PK_FWD_INSERT:
        if (m->type == WIRE_ERROR) {
            p->rc = m->u.error.code < 0 ? m->u.error.code : XE_IO;
            snprintf(p->msg, sizeof p->msg, "%.*s", (int)m->u.error.msg.n, m->u.error.msg.p);
        } else if (part == RES_NOTICE)
            pass_to_client(p, f);
        if (last) pend_finish(n, p);
        return;
    case PK_FWD_INGEST:
        if (part == RES_ACKED) {
            if (m->u.result.rows.n >= 9) p->acked = be64_get((const unsigned char *)m->u.result.rows.p + 1);
            if (p->client) ingest_acked(n, p->client, p->creq);
            return;
        }
        pass_to_client(p, f);
        if (m->type == WIRE_ERROR) p->failed = 1;
        else if (last) {
            pend_unlink(n, p);
            pend_free(p);
        }
        return;
    }
}

/* A client that was subscribed to a query through the coordinator we took
 * over from: it says which rows it has (hash, times) and the sink watermark
 * they came at; the rows the redeployed query produces again are dropped
 * until its sink passes that watermark (dd_filter), starting with the
 * backlog kept since the takeover. */
static void attach(node *n, cs *s, const wire_msg *m)
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
        struct ftrow *r = h && times ? dd_slot(x->dt, h) : NULL;
        if (!r) continue;
        if (!r->delivered) {
            r->h = h;
            x->dt->ddn++;
        }
        if (times > r->delivered) r->delivered = times;
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

/* An ingest session's chunks that the home and the shadow both have. */
static void ingest_acked(node *n, cs *s, uint64_t req)
{
    uint64_t lo = UINT64_MAX;
    int any = 0;
    for (pend *p = n->co->pends; p; p = p->next)
        if (p->kind == PK_FWD_INGEST && p->client == s && p->creq == req && !p->failed && p->home) {
            if (p->acked < lo) lo = p->acked;
            any = 1;
        }
    csess *ss = s->sess;
    if (ss && ss->ing_here && ss->ing_req == req) {
        if (ss->ing_local < lo) lo = ss->ing_local;
        any = 1;
    }
    if (!any || !ss || ss->ing_req != req || lo <= ss->ing_acked) return;
    ss->ing_acked = lo;
    unsigned char v[8];
    be64_put(v, lo);
    cs_result(s, req, 0, RES_ACKED, 0, v, sizeof v);
}

void coord_ingest_safe(node *n, cs *s, uint64_t req, uint64_t safe)
{
    csess *ss = s->sess;
    if (!ss || ss->ing_req != req || !ss->ing_here) return;
    ss->ing_local = safe;
    ingest_acked(n, s, req);
}

/* ------------------------------------------------------------------ connection events */

void coord_ready(node *n, cs *s)
{
    /* who coordinates, at which term: a node refuses an older one, a client
     * knows it found the active coordinator */
    wire_msg m = {.type = WIRE_TERM};
    m.u.term.term = n->term;
    m.u.term.kind = WIRE_TERM_ANNOUNCE;
    m.u.term.name = wire_str_of(n->cfg.name);
    m.u.term.addr = wire_str_of(n->addr);
    cs_send_msg(s, &m);
    if (s->kind != CS_CLIENT) return;
    s->sess = calloc(1, sizeof *s->sess);
    if (!s->sess) {
        net_abort(s->c, NET_CLOSE_LOCAL, "out of memory");
        return;
    }
    node_log(n, NET_LOG_INFO, "client %s connected from %s", net_peer_name(s->c), net_peer_addr(s->c));
}

/* A node died: re-place the players it ran with nirvana_replace (the
 * cluster's strategy; only the displaced players play, the others stay),
 * and record the new nodes.  Nothing is redeployed: a displaced task's
 * state and its redeployment are issue 7, so the query runs without it
 * (its share of the output is missing) and we say so in the log.
 * Replicas are bookkeeping until then. */
/* A displaced stateful task's live replica that can take over (ft =
 * replica or checkpoint): its node index in pl, or -1. */
static int keep_on_replica(const cquery *q, int t, const place_node *pl, int nn)
{
    if ((q->ft != ENGINE_FT_REPLICA && q->ft != ENGINE_FT_CHECKPOINT) || !q->rnode ||
        (strcmp(q->tkind[t], "AGGREGATE") && strcmp(q->tkind[t], "JOIN")))
        return -1;
    int nr = q->ft == ENGINE_FT_CHECKPOINT ? 1 : q->nrep;
    for (int r = 0; r < nr; r++) {
        const char *rn = q->rnode[t * q->nrep + r];
        int i = rn ? node_index(pl, nn, rn) : -1;
        if (i >= 0 && pl[i].alive) return i;
    }
    return -1;
}

static void replace_after_death(node *n, const char *dead)
{
    coord *co = n->co;
    int nq = running_queries(co, NULL), R = co->replicas, rc = 0;
    if (!nq) return;
    place_node *pl = calloc((size_t)n->npeers + 1, sizeof *pl);
    place_query *pqs = calloc((size_t)nq, sizeof *pqs);
    place_game g = {0};
    xerr err;
    xerr_clear(&err);
    if (!pl || !pqs) {
        rc = xerr_set(&err, XE_NOMEM, "out of memory");
        goto out;
    }
    int nn = cluster_nodes(n, 1, NULL, pl), k = 0;
    cquery **qs = calloc((size_t)nq, sizeof *qs);
    if (!qs) {
        rc = xerr_set(&err, XE_NOMEM, "out of memory");
        goto out;
    }
    for (cquery *x = co->queries; x && !rc; x = x->next)
        if (!x->ended && x->dag) {
            qs[k] = x;
            rc = pq_of(n, x, pl, nn, R, 0, &pqs[k++], &err);
        }
    uint64_t t0 = clock_mono_ns();
    if (!rc) rc = place_build(&g, pl, nn, pqs, nq, R, co->placement, &err);
    if (!rc) rc = place_again(&g, pqs, nq, &err);
    if (rc) {
        node_log(n, NET_LOG_ERROR, "node %s died: cannot re-place its tasks: %s", dead, err.msg);
        free(qs);
        goto out;
    }
    node_log(n, NET_LOG_WARN,
             "node %s died: %s re-placed %d displaced players (promoted %d, unplaced %d) in %.1f ms; the others stay",
             dead, nirvana_strategy_name(co->placement), g.r->displaced, g.r->promoted, g.r->unplaced,
             (double)(clock_mono_ns() - t0) / 1e6);
    for (int i = 0; i < nq; i++) {
        cquery *q = qs[i];
        place_query *pq = &pqs[i];
        sbuf lost, reps;
        sbuf_init(&lost);
        sbuf_init(&reps);
        int nlost = 0;
        for (int t = 0; t < q->ntasks; t++) {
            const char *now = pq->node[t] >= 0 ? pl[pq->node[t]].name : NULL;
            if (now && !strcmp(now, q->tnode[t])) continue;
            int ki = keep_on_replica(q, t, pl, nn);
            if (ki >= 0 && pq->node[t] != ki) {
                /* the state is there already: promote it, whatever the game preferred */
                node_log(n, NET_LOG_INFO, "query %u: %s#%d goes to its replica's node %s (placement preferred %s)",
                         q->qid, q->tkind[t], q->tidx[t], pl[ki].name, now ? now : "none");
                for (int r = 0; r < R; r++)
                    if (pq->rnode[t * R + r] == ki) pq->rnode[t * R + r] = pq->node[t] >= 0 && strcmp(pl[pq->node[t]].domain, pl[ki].domain) ? pq->node[t] : -1;
                pq->node[t] = ki;
                now = pl[ki].name;
            }
            sbuf_printf(&lost, "%s%s#%d (%s -> %s)", nlost++ ? ", " : "", q->tkind[t], q->tidx[t], q->tnode[t],
                        now ? now : "nowhere");
            q->lost[t] = 1;
            if (now) {
                char *c = strdup(now);
                if (c) {
                    free(q->tnode[t]);
                    q->tnode[t] = c;
                }
            }
        }
        for (int t = 0; t < q->ntasks; t++)
            for (int r = 0; r < R; r++) {
                const char *was = r < q->nrep && q->rnode ? q->rnode[t * q->nrep + r] : NULL;
                int at = pq->rnode[t * R + r];
                if (was && at >= 0 && strcmp(was, pl[at].name))
                    sbuf_printf(&reps, " %s#%d/r%d (%s -> %s)", q->tkind[t], q->tidx[t], r, was, pl[at].name);
            }
        if (cq_set_replicas(q, pq, pl, R)) node_log(n, NET_LOG_ERROR, "out of memory recording replicas");
        if (nlost)
            node_log(n, NET_LOG_WARN,
                     "query %u (%s) lost %d tasks on %s: %s; re-placed",
                     q->qid, q->name ? q->name : "push", nlost, dead, lost.p);
        if (reps.len)
            node_log(n, NET_LOG_INFO, "query %u (%s): replicas re-placed (new ones start from a snapshot):%s", q->qid,
                     q->name ? q->name : "push", reps.p);
        sbuf_fini(&lost);
        sbuf_fini(&reps);
    }
    free(qs);
out:
    for (int i = 0; pqs && i < nq; i++) pq_fini(&pqs[i]);
    free(pqs);
    place_game_fini(&g);
    free(pl);
    (void)rc;
}

/* Redeploy every query that lost tasks, under a new id, where the
 * re-placement put them: every node keeps its tasks' state (UNDEPLOY with
 * WIRE_F_KEEP) and the new deployment takes it over, or a replica's
 * (promotion); the streams' home nodes replay their logs from where those
 * states stand (node.c, exec/ft.c), and the sink drops what it had delivered
 * (dd_filter).  A query whose stream lost its home and its shadow cannot be
 * recovered and is left as is. */
static void ft_recover(node *n)
{
    coord *co = n->co;
    int nq = running_queries(co, NULL);
    cquery **qs = calloc((size_t)nq + 1, sizeof *qs);
    pnode *pn = calloc((size_t)n->npeers + 1, sizeof *pn);
    place_node *pl = calloc((size_t)n->npeers + 1, sizeof *pl);
    int *assign = NULL;
    xerr err;
    xerr_clear(&err);
    if (!qs || !pn || !pl) goto out;
    int k = 0;
    for (cquery *x = co->queries; x && k < nq; x = x->next)
        if (!x->ended && x->dag) qs[k++] = x;
    int nn = cluster_nodes(n, 0, pn, pl);
    for (int i = 0; i < k; i++) {
        cquery *q = qs[i];
        int nlost = 0, bad = -1;
        for (int t = 0; t < q->ntasks; t++) nlost += q->lost[t];
        if (!nlost) continue;
        free(assign);
        if (!(assign = calloc((size_t)q->ntasks, sizeof *assign))) goto out;
        for (int t = 0; t < q->ntasks && bad < 0; t++) {
            /* a source moves only with its stream's partition (to its
             * shadow, which has the same log): task p reads partition p */
            const cstream *sc =
                !strcmp(q->tkind[t], "SOURCE") ? partition_find(co, q->dag->ops[q->top[t]].stream, q->tidx[t]) : NULL;
            if ((assign[t] = q->tnode[t] ? node_index(pl, nn, q->tnode[t]) : -1) < 0 ||
                (q->lost[t] && sc && strcmp(sc->home, q->tnode[t])))
                bad = t;
        }
        if (bad >= 0) {
            node_log(n, NET_LOG_ERROR, "query %u (%s): cannot recover: %s#%d has no live node (%s)", q->qid,
                     q->name ? q->name : "push", q->tkind[bad], q->tidx[bad],
                     !strcmp(q->tkind[bad], "SOURCE") ? "its stream's home and shadow are lost" : "unplaced");
            continue;
        }
        uint32_t old = q->qid;
        /* survivors keep their state for the redeployment to take over */
        int64_t swm = INT64_MIN;
        if (engine_deployed_sink_wm(n->eng, old, &swm, &err)) swm = INT64_MIN;
        /* what the sink had seen before the failure, per input: until the
         * new deployment passes it on every input, its rows may repeat
         * delivered ones (catchup.h: not the combined watermark, since a
         * fast input delivered beyond it) */
        const int64_t *in = NULL;
        int nin = 0;
        if (engine_deployed_sink_inputs(n->eng, old, &in, &nin, &err)) nin = 0;
        if (catchup_begin(&q->cu, in, nin))
            node_log(n, NET_LOG_ERROR, "query %u: out of memory for its output's catch-up", old);
        sbuf ws;
        sbuf_init(&ws);
        for (int t = 0; t < nin; t++)
            sbuf_printf(&ws, "%s%lld", t ? " " : "", in[t] == INT64_MIN ? -1LL : (long long)in[t]);
        node_log(n, NET_LOG_INFO, "query %u: its sink's inputs had reached watermarks %s (-1: none)", old,
                 ws.len ? ws.p : "-");
        sbuf_fini(&ws);
        if (node_undeploy(n, old, 1, &err)) node_log(n, NET_LOG_WARN, "undeploying query %u here: %s", old, err.msg);
        send_undeploy(n, q, 1);
        q->prev = old;
        q->resume_wm = swm;
        if (!q->push || q->keep) {
            char key[64];
            snprintf(key, sizeof key, "q/%010u", old);
            cat_del(n, key, &err);
        }
        for (cquery **pp = &co->queries; *pp; pp = &(*pp)->next)
            if (*pp == q) {
                *pp = q->next;
                break;
            }
        q->qid = co->next_qid++;
        cq_link(co, q);
        sbuf_reset(&q->plan);
        int rc = plan_blob(&q->plan, pn, nn, assign, q);
        if (!rc) rc = persist_next_qid(n, &err);
        if (!rc && (!q->push || q->keep)) rc = persist_query(n, q, &err);
        for (size_t j = 0; j < q->dt.ddcap; j++) q->dt.dd[j].seen = 0;
        /* the others first: our own deployment may replay the log at once,
         * and a node holds data for a query it has not seen deployed by
         * pausing the connection the DEPLOY would come on */
        if (!rc) send_deploy(n, NULL, NULL, q);
        if (!rc) rc = node_deploy(n, q->qid, q->plan.p, q->plan.len, &q->out, &err);
        if (rc) {
            node_log(n, NET_LOG_ERROR, "query %u: redeployment as %u failed: %s", old, q->qid, err.msg);
            continue;
        }
        memset(q->lost, 0, (size_t)q->ntasks);
        if (co->rb_moving)
            node_log(n, NET_LOG_WARN, "query %u (%s) redeployed as query %u (ft = %s): %d tasks moved or their replicas did",
                     old, q->name ? q->name : "push", q->qid, engine_ft_name(q->ft), nlost);
        else {
            node_log(n, NET_LOG_WARN,
                     "query %u (%s) recovered as query %u (ft = %s): %d displaced tasks redeployed; redeployed %.1f ms "
                     "after the failure was detected",
                     old, q->name ? q->name : "push", q->qid, engine_ft_name(q->ft), nlost,
                     (double)(clock_mono_ns() - co->death_ns) / 1e6);
            /* the failure event re-placed the displaced players by the
             * game already: moving the others a moment later would cost a
             * second redeployment and replay while this one settles, so
             * the automatic rebalance leaves the query alone for an
             * interval (ALTER QUERY ... REBALANCE still moves it) */
            q->rb_quiet_until = (int64_t)(clock_mono_ns() / 1000000) + (co->rb_ms > RB_QUIET_MS ? co->rb_ms : RB_QUIET_MS);
        }
    }
out:
    free(assign);
    free(qs);
    free(pn);
    free(pl);
}

/* The home of a forwarded ingest is lost: its stream's shadow, which got
 * every chunk, answers the client from now on.  0 when there is none. */
static int shadow_takes_over(node *n, pend *p)
{
    for (pend *q = n->co->pends; q; q = q->next)
        if (q != p && q->kind == PK_FWD_INGEST && q->client == p->client && q->creq == p->creq && q->quiet &&
            !q->failed && q->home && alive(q->home)) {
            q->quiet = 0;
            return 1;
        }
    return p->client && node_ingest_loud(n, p->client, p->creq);
}

/* The socket source of a stream's CREATE STREAM text ("" when none). */
static void source_of(const cstream *c, char *out, size_t cap)
{
    out[0] = 0;
    ast_stmt *st = NULL;
    xerr err;
    if (!c->lite || parse_one(c->sql, strlen(c->sql), &st, &err)) return;
    const ast_option *o = st->kind == ST_CREATE_STREAM ? ast_option_get(st->with, "source") : NULL;
    if (o) snprintf(out, cap, "%s", o->value);
    ast_stmt_free(st);
}

/* Tell a stream's home where its log's copy goes (LOGSHADOW), and with
 * source, that it reads the stream's socket from now on. */
static void send_logshadow(node *n, cstream *c, const char *source)
{
    /* a shadow fed the input hears from the home only where its log begins */
    const char *sh = c->lshadow ? c->lshadow : c->shadow ? c->shadow : "";
    int fed = !c->lshadow && c->shadow;
    if (!strcmp(c->home, n->cfg.name)) {
        node_logshadow(n, c->name, sh, source, fed);
        return;
    }
    peer *h = node_peer(n, c->home, strlen(c->home));
    if (!h || !alive(h)) return;
    wire_msg m = {.type = WIRE_LOGSHADOW};
    m.u.logshadow.stream = wire_str_of(c->name);
    m.u.logshadow.shadow = wire_str_of(sh);
    m.u.logshadow.source = wire_str_of(source ? source : "");
    m.u.logshadow.flags = fed ? WIRE_LOGSHADOW_FED : 0;
    cs_send_msg(h->link, &m);
}

static int lives(node *n, const char *name)
{
    if (!name) return 0;
    if (!strcmp(name, n->cfg.name)) return 1;
    peer *p = node_peer(n, name, strlen(name));
    return p && alive(p);
}

/* At a failure event: a stream whose home died moves to its shadow, which
 * has the same log (the queries' source tasks follow it); a stream that
 * lost its shadow, or whose shadow is now its home, gets its log copied to
 * a live node in another domain, so that the next failure is survived too
 * (while there is another domain). */
static void promote_shadows(node *n)
{
    coord *co = n->co;
    for (int i = 0; i < co->nstreams; i++) {
        cstream *c = &co->streams[i];
        int changed = 0;
        char source[1024] = "";
        if (!lives(n, c->home)) {
            char *to = lives(n, c->shadow) ? c->shadow : lives(n, c->lshadow) ? c->lshadow : NULL;
            if (!to) {
                if (c->shadow || c->lshadow)
                    node_log(n, NET_LOG_ERROR, "stream %s: its home %s and its shadow %s are both lost", c->name,
                             c->home, c->shadow ? c->shadow : c->lshadow);
                continue;
            }
            node_log(n, NET_LOG_WARN, "stream %s: home node %s lost; its shadow %s is the home now", c->name, c->home,
                     to);
            if (c->lite) source_of(c, source, sizeof source);
            free(c->home);
            c->home = strdup(to);
            free(c->shadow);
            free(c->lshadow);
            c->shadow = c->lshadow = NULL;
            c->dirty = 0; /* no TICK any more: the new home cuts its slices itself */
            changed = 1;
        }
        if (c->shadow && !lives(n, c->shadow)) {
            node_log(n, NET_LOG_WARN, "stream %s: its shadow %s is lost", c->name, c->shadow);
            free(c->shadow);
            c->shadow = NULL;
            c->dirty = 0;
            changed = 1;
        }
        if (c->lshadow && !lives(n, c->lshadow)) {
            node_log(n, NET_LOG_WARN, "stream %s: the copy of its log on %s is lost", c->name, c->lshadow);
            free(c->lshadow);
            c->lshadow = NULL;
            changed = 1;
        }
        if (!changed || !c->home) continue;
        if (!c->shadow) {
            const char *sh = pick_shadow(n, c->home, co->rr_home++);
            if (sh) {
                c->lshadow = strdup(sh);
                node_log(n, NET_LOG_WARN, "stream %s: its home %s copies its log to %s from now on", c->name, c->home,
                         sh);
            } else
                node_log(n, NET_LOG_ERROR, "stream %s: no live node outside its home's domain: the next failure of "
                         "that domain loses it", c->name);
        }
        xerr err;
        if (persist_stream(n, c, &err)) node_log(n, NET_LOG_ERROR, "stream %s: %s", c->name, err.msg);
        if (!c->shadow) send_logshadow(n, c, source);
    }
}

/* x is dead (or left): one failure event for a whole domain, the deaths of
 * the next FT_SETTLE_MS (FT_SETTLE_CLOSED_MS when its connection closed
 * rather than fell silent) join it; the event runs at the end of that, not
 * at the next tick.  A standby's death is no failure event. */
static void member_lost(node *n, peer *x, int closed)
{
    coord *co = n->co;
    int was_dead = x->state == WIRE_MEMBER_DEAD; /* a failed reconnect to a dead node */
    x->state = n->stopping ? WIRE_MEMBER_LEFT : WIRE_MEMBER_DEAD;
    co->last_death = clock_wall_ms();
    if (!n->stopping && !was_dead)
        node_log(n, NET_LOG_WARN, "%s %s is %s", x->standby ? "standby coordinator" : "node", x->name,
                 node_state_name(x->state));
    co->members_dirty = 1;
    if (!n->stopping && !was_dead && !x->standby) {
        if (!co->recover_at) {
            int settle = closed ? FT_SETTLE_CLOSED_MS : FT_SETTLE_MS;
            co->death_ns = clock_mono_ns();
            co->recover_at = (int64_t)(co->death_ns / 1000000) + settle;
            sbuf_reset(&co->dead_names);
            node_tick_in(n, (unsigned)settle + 1);
        }
        sbuf_printf(&co->dead_names, "%s%s", co->dead_names.len ? "," : "", x->name);
        char why[160];
        snprintf(why, sizeof why, "node %s left", x->name);
        rebalance_soon(n, why, RB_SOON_MS); /* after the failure event, which re-places its players first */
    }
}

void coord_closed(node *n, cs *s)
{
    coord *co = n->co;
    if (s == co->probe) co->probe = NULL;
    for (int i = 0; i < n->npeers; i++)
        if (n->peers[i]->probe == s) {
            n->peers[i]->probe = NULL;
            /* refused, or no route: nothing there */
            if (!s->ready && s->close_why == NET_CLOSE_IO) n->peers[i]->gone = 1;
        }
    if (s->kind == CS_CLIENT) {
        if (s->sess) {
            job_free(s->sess);
            free(s->sess);
            s->sess = NULL;
        }
        for (cquery *q = co->queries, *nx; q; q = nx) {
            nx = q->next;
            for (csub **pp = &q->subs; *pp;) {
                if ((*pp)->to == s) {
                    csub *x = *pp;
                    *pp = x->next;
                    csub_free(x);
                } else
                    pp = &(*pp)->next;
            }
            if (q->push && !q->subs && !q->ended) {
                if (q->keep && s->close_why != NET_CLOSE_PEER && s->close_why != NET_CLOSE_LOCAL) {
                    /* lost, not gone: it may come back (ATTACH) */
                    q->orphan_until = clock_wall_ms() + DD_KEEP_MS;
                    node_log(n, NET_LOG_INFO, "push query %u: its client was lost; kept %d s for it to attach again",
                             q->qid, DD_KEEP_MS / 1000);
                    continue;
                }
                node_log(n, NET_LOG_INFO, "push query %u ends: its client left", q->qid);
                cq_drop(n, q);
            }
        }
        for (pend *p = co->pends, *nx; p; p = nx) {
            nx = p->next;
            if (p->client != s) continue;
            p->client = NULL;
            if (p->kind == PK_FWD_INGEST) {
                /* close the home node's session without ending the stream */
                if (!p->failed && p->home && p->home->link) {
                    wire_msg m = {.type = WIRE_INGEST, .flags = WIRE_F_LAST};
                    m.u.ingest.req_id = p->id;
                    cs_send_msg(p->home->link, &m);
                }
                pend_unlink(n, p);
                pend_free(p);
            }
        }
        return;
    }
    peer *x = s->peer;
    if (!x || x->link != s || !joined(x)) return;
    /* While a takeover waits, a member that has not joined this term yet is
     * judged by takeover_deaths: a connection of it that closes now is one
     * of the old term's (a dial to us it abandoned when it granted the
     * term, its handshake done just after we took over), not its death. */
    if (co->takeover_until && !x->rejoined) return;
    member_lost(n, x, s->close_why != NET_CLOSE_DEAD);
    for (pend *p = co->pends, *nx; p; p = nx) {
        nx = p->next;
        if (p->kind == PK_BROADCAST || p->kind == PK_GATHER) {
            for (int i = 0; i < p->nwait; i++)
                if (p->wait[i] == x) {
                    node_log(n, NET_LOG_WARN, "request %llu: node %s left before answering", (unsigned long long)p->id,
                             x->name);
                    pend_answered(n, p, x);
                    break;
                }
        } else if (p->home == x) {
            if (p->kind == PK_FWD_INGEST && (p->quiet || shadow_takes_over(n, p))) {
                /* the shadow lost (nothing the client needs), or the shadow answers from now on */
                p->failed = 1;
                p->home = NULL;
                continue;
            }
            if (p->kind == PK_FWD_INGEST && ingest_can_move(n, p)) continue;
            if (p->client) {
                char msg[200];
                snprintf(msg, sizeof msg, "node %s left", x->name);
                cs_error(p->client, p->creq, XE_IO, msg);
            }
            if (p->kind == PK_FWD_INSERT) {
                p->rc = XE_IO;
                snprintf(p->msg, sizeof p->msg, "node %s left", x->name);
                pend_finish(n, p);
            } else {
                p->failed = 1;
                p->home = NULL;
            }
        }
    }
}

/* CANCEL: the client stops its push queries and subscriptions (Ctrl-C in
 * the shell).  Each ends for it (END after the rows already sent); a push
 * query left without its owner is dropped everywhere, a standing query
 * goes on for its other subscribers. */
static void cancel_results(node *n, cs *s, uint64_t req)
{
    for (cquery *q = n->co->queries, *nx; q; q = nx) {
        nx = q->next;
        int had = 0;
        for (csub **pp = &q->subs; *pp;) {
            csub *x = *pp;
            if (x->to == s && (!req || x->req == req)) {
                *pp = x->next;
                cs_result(s, x->req, WIRE_F_LAST, RES_END, 0, NULL, 0);
                csub_free(x);
                had = 1;
            } else
                pp = &x->next;
        }
        if (had && q->push && !q->subs && !q->ended) {
            node_log(n, NET_LOG_INFO, "push query %u ends: its client stopped it", q->qid);
            cq_drop(n, q);
        }
    }
}

void coord_frame(node *n, cs *s, const wire_msg *m, const wire_frame *f)
{
    if (s->kind == CS_CLIENT) {
        switch (m->type) {
        case WIRE_QUERY:
            if (f->flags & WIRE_F_FAILOVER) s->failover = 1;
            job_start(n, s, m);
            return;
        case WIRE_INGEST: ingest_from_client(n, s, m, f); return;
        case WIRE_ATTACH: attach(n, s, m); return;
        case WIRE_CANCEL: cancel_results(n, s, m->u.cancel.req_id); return;
        default: break;
        }
    } else {
        switch (m->type) {
        case WIRE_JOIN: handle_join(n, s, m); return;
        case WIRE_LOSS: {
            char to[WIRE_NAME_MAX + 1];
            snprintf(to, sizeof to, "%.*s", (int)m->u.loss.peer.n, m->u.loss.peer.p);
            coord_loss(n, s->peer ? s->peer->name : "?", (uint32_t)m->u.loss.query, m->u.loss.batches, to);
            return;
        }
        case WIRE_STATS:
            if (s->peer) meas_take(n, s->peer->name, m);
            return;
        case WIRE_RESULT:
        case WIRE_ACK:
        case WIRE_ERROR: on_answer(n, s, m, f); return;
        default: break;
        }
    }
    net_log(n->net, s->c, NET_LOG_WARN, "unexpected %s frame from a %s: closing", wire_type_name(m->type),
            s->kind == CS_CLIENT ? "client" : "node");
    cs_error(s, 0, XE_PROTO, "unexpected frame type");
    net_close(s->c, "protocol error");
}

/* Clients go (to find the active coordinator) when this one stops acting. */
static void close_clients(node *n, const char *why)
{
    for (cs *o = n->conns; o; o = o->next)
        if (o->kind == CS_CLIENT && o->c && !o->closing) {
            cs_error(o, 0, XE_IO, why);
            net_close(o->c, why);
        }
}

void coord_loss(node *n, const char *from, uint32_t qid, uint64_t batches, const char *to)
{
    coord *co = n->co;
    if (!co || co->nloss >= (int)(sizeof co->loss / sizeof co->loss[0])) return;
    struct closs *l = &co->loss[co->nloss++];
    snprintf(l->from, sizeof l->from, "%s", from);
    snprintf(l->peer, sizeof l->peer, "%s", to);
    l->qid = qid;
    l->batches = batches;
    l->at = clock_wall_ms();
}

/* A LOSS old enough that the peer's death would have been declared: if it
 * is still alive, the rows are lost for good (nothing replays them: a known
 * gap), and the query's clients are told so rather than left to find out. */
static void judge_losses(node *n, int64_t now)
{
    coord *co = n->co;
    int64_t wait = (int64_t)net_ctx_dead_ms(n->net) + FT_SETTLE_MS + 2 * NODE_TICK_MS;
    int k = 0;
    for (int i = 0; i < co->nloss; i++) {
        struct closs *l = &co->loss[i];
        if (now - l->at < wait) {
            co->loss[k++] = *l;
            continue;
        }
        peer *p = node_peer(n, l->peer, strlen(l->peer));
        if (!p || p->state != WIRE_MEMBER_UP || co->recover_at) continue; /* dead: the recovery replays them */
        for (cquery *q = co->queries; q; q = q->next) {
            int hit = l->qid ? q->qid == l->qid : 0;
            for (int t = 0; !l->qid && t < q->ntasks; t++) hit |= q->tnode[t] && !strcmp(q->tnode[t], l->peer);
            if (!hit || q->ended || now - q->loss_said < 5000) continue;
            q->loss_said = now;
            char msg[512];
            snprintf(msg, sizeof msg, "query %s: rows were lost: node %s could not reach node %s, which is alive (a "
                     "partial partition), and dropped %llu batches for it; this query's output misses rows from "
                     "about %lld ms ago, and nothing recovers them", q->name ? q->name : "push", l->from, l->peer,
                     (unsigned long long)l->batches, (long long)(now - l->at));
            node_log(n, NET_LOG_ERROR, "%s", msg);
            for (csub *x = q->subs; x; x = x->next) cs_result(x->to, x->req, 0, RES_WARN, 0, msg, strlen(msg));
        }
    }
    co->nloss = k;
}

const char *coord_standby_addr(node *n)
{
    return n->co ? n->co->standby_addr : "";
}

/* Fenced, or restarted and waiting for a majority: the standby may have
 * taken over meanwhile.  Dial it now and then; if it did, it announces (or
 * refuses us with) the newer term, and we step down (node.c, step_down). */
static void probe_standby(node *n, int64_t now)
{
    coord *co = n->co;
    if (!co->standby_addr[0] || !strcmp(co->standby_addr, n->addr) || now < co->probe_at) return;
    co->probe_at = now + 500;
    if (co->probe) {
        if (co->probe->c && !co->probe->closing) net_close(co->probe->c, "probe done");
        co->probe = NULL;
        return;
    }
    for (int i = 0; i < n->npeers; i++)
        if (!strcmp(n->peers[i]->addr, co->standby_addr) && n->peers[i]->link) return; /* we hear it anyway */
    co->probe = node_dial(n, co->standby_addr);
}

int coord_serving(node *n)
{
    coord *co = n->co;
    return co && !co->takeover_until && !co->takeover_event && !co->fenced && !co->deposed && !co->wait_majority;
}

void coord_deposed(node *n, uint64_t term)
{
    coord *co = n->co;
    if (!co || co->deposed) return;
    co->deposed = 1;
    node_log(n, NET_LOG_ERROR, "deposed: coordinator term %llu is active elsewhere; this node acts as the coordinator "
             "no more", (unsigned long long)term);
    close_clients(n, "this coordinator was deposed: connect to the active one");
}

int coord_takeover(node *n, uint64_t term, xerr *err)
{
    n->taking_over = 1;
    int rc = coord_start(n, err);
    n->taking_over = 0;
    if (rc) {
        coord_stop(n);
        return rc;
    }
    coord *co = n->co;
    co->had_standby = 0; /* none yet: nobody else can act, so no fencing without a majority */
    n->term = term;
    if ((rc = persist_term(n, err))) node_log(n, NET_LOG_ERROR, "recording term %llu: %s", (unsigned long long)term,
                                              err->msg);
    net_ctx_set_role(n->net, WIRE_ROLE_COORDINATOR);
    /* the members dial us as their coordinator now; our links as a node go */
    for (cs *o = n->conns; o; o = o->next)
        if (o->kind == CS_NODE && o->c && !o->closing) net_close(o->c, "taking over as the coordinator");
    int waiting = 0;
    for (int i = 0; i < n->npeers; i++) {
        peer *p = n->peers[i];
        p->link = NULL;
        p->rejoined = 0;
        p->granted = 0;
        p->probe = NULL;
        p->probe_tried = p->gone = 0;
        p->is_coord = 0; /* the old active: a member that will not join */
        p->standby = 0;
        if (p->state != WIRE_MEMBER_DEAD && p->slots) {
            p->state = WIRE_MEMBER_SUSPECT;
            waiting++;
        }
    }
    int64_t now = clock_wall_ms();
    co->takeover_until = now + net_ctx_dead_ms(n->net);
    co->takeover_event = 1;
    co->takeover_ns = clock_mono_ns();
    for (cquery *q = co->queries; q; q = q->next) q->orphan_until = now + DD_KEEP_MS;
    node_log(n, NET_LOG_WARN, "coordinator of term %llu: %d streams, %d queries; waiting %u ms for %d members to join",
             (unsigned long long)term, co->nstreams, running_queries(co, NULL), net_ctx_dead_ms(n->net), waiting);
    return 0;
}

/* After a takeover: who did not join is dead (the old active among them). */
static void takeover_deaths(node *n)
{
    coord *co = n->co;
    co->takeover_until = 0;
    for (int i = 0; i < n->npeers; i++) {
        peer *x = n->peers[i];
        if (x->probe && x->probe->c && !x->probe->closing) net_close(x->probe->c, "takeover done");
        x->probe = NULL;
        if (joined(x) && !x->rejoined && x->state != WIRE_MEMBER_DEAD) member_lost(n, x, x->gone);
    }
    if (!co->recover_at) co->takeover_event = 0;
}

/* While a takeover waits for the members: one connection to each member
 * that has not joined yet.  A refused one means that no process listens at
 * its address (a crashed node on a live host): it is not waited for.  Once
 * every member has joined or is gone, the wait ends before --dead-ms.  A
 * member cut off (no answer at all) is still waited for. */
static void takeover_probe(node *n)
{
    int waiting = 0;
    for (int i = 0; i < n->npeers; i++) {
        peer *x = n->peers[i];
        if (!joined(x) || x->rejoined || x->state == WIRE_MEMBER_DEAD || x->gone) continue;
        waiting++;
        if (!x->probe_tried && x->addr[0]) {
            x->probe_tried = 1;
            x->probe = node_dial(n, x->addr);
        }
    }
    if (!waiting) {
        node_log(n, NET_LOG_INFO, "takeover: every member has joined or refused a connection (no process there): "
                 "not waiting for the rest of --dead-ms");
        takeover_deaths(n);
    }
}

/* Without a majority of the members, and without a standby to talk to, a
 * coordinator cannot tell its own isolation from their death: it stops
 * acting (the standby may be taking over) until they are back. */
static void check_quorum(node *n)
{
    coord *co = n->co;
    int up = 1, sb = 0;
    for (int i = 0; i < n->npeers; i++) {
        peer *x = n->peers[i];
        if (!alive(x)) continue;
        up++;
        sb |= x->standby;
    }
    if (co->had_standby && !sb && 2 * up <= co->base) {
        if (!co->fenced) {
            co->fenced = 1;
            node_log(n, NET_LOG_ERROR, "fenced: %d of %d members reachable and no standby: acting no more until a "
                     "majority is back", up, co->base);
            close_clients(n, "this coordinator lost the cluster's majority: connect to another");
        }
        return;
    }
    if (co->fenced) node_log(n, NET_LOG_WARN, "a majority is reachable again (%d of %d): acting again", up, co->base);
    co->fenced = 0;
    /* the base shrinks to a majority that lost members only once the
     * deaths have settled: the peers of a cut are found silent one by one,
     * and a base that followed each of them down would never fence */
    if (up > co->base || (2 * up > co->base && clock_wall_ms() - co->last_death > 2 * (int64_t)net_ctx_dead_ms(n->net)))
        co->base = up;
}

void coord_tick(node *n)
{
    coord *co = n->co;
    int64_t now = clock_wall_ms();
    if (co->deposed) return;
    if (co->takeover_until && now >= co->takeover_until) takeover_deaths(n);
    else if (co->takeover_until) takeover_probe(n);
    if (co->wait_majority) {
        int up = 1;
        for (int i = 0; i < n->npeers; i++) up += alive(n->peers[i]);
        if (2 * up <= co->wait_majority) {
            probe_standby(n, now);
            return;
        }
        node_log(n, NET_LOG_INFO, "restarted coordinator: %d of the %d members it knew joined it: serving clients", up,
                 co->wait_majority);
        co->wait_majority = 0;
    }
    if (!co->takeover_until && !co->takeover_event) check_quorum(n);
    if (co->nloss) judge_losses(n, now);
    if (co->fenced) {
        probe_standby(n, now);
        return;
    }
    for (int i = 0; i < n->npeers; i++) {
        peer *x = n->peers[i];
        if (!joined(x) || !x->link || !x->link->ready) continue;
        net_stats st;
        net_get_stats(x->link->c, &st);
        uint64_t seen = st.frames_in + st.heartbeats_in;
        if (seen != x->seen || net_paused(x->link->c)) {
            x->seen = seen;
            x->last_hb = now;
            if (x->state != WIRE_MEMBER_UP) {
                x->state = WIRE_MEMBER_UP;
                co->members_dirty = 1;
            }
        } else if (x->state == WIRE_MEMBER_UP && net_silent_ms(x->link->c) > NODE_SUSPECT_MS(n)) {
            x->state = WIRE_MEMBER_SUSPECT;
            node_log(n, NET_LOG_WARN, "node %s is SUSPECT: silent for %lld ms", x->name, (long long)(now - x->last_hb));
            co->members_dirty = 1;
        }
    }
    if (co->members_dirty) send_membership(n);
    if (co->recover_at && (int64_t)(clock_mono_ns() / 1000000) >= co->recover_at) {
        co->recover_at = 0;
        node_log(n, NET_LOG_WARN, "failure event: %s dead (detected %.1f ms ago)", co->dead_names.p,
                 (double)(clock_mono_ns() - co->death_ns) / 1e6);
        promote_shadows(n);
        move_ingests(n);
        replace_after_death(n, co->dead_names.p);
        ft_recover(n);
        if (co->takeover_event) {
            co->takeover_event = 0;
            node_log(n, NET_LOG_WARN, "coordinator of term %llu: serving clients (%.1f ms after the takeover began)",
                     (unsigned long long)n->term, (double)(clock_mono_ns() - co->takeover_ns) / 1e6);
        }
    }
    /* shadowed streams: partial slices end at the same point at both homes */
    static int64_t last_tick;
    if (now - last_tick >= 200) {
        last_tick = now;
        for (int i = 0; i < co->nstreams; i++)
            if (co->streams[i].dirty) tick_stream(n, &co->streams[i]);
    }
    /* exactly-once output: the end of a recovery's catch-up; old rows */
    static int64_t last_evict;
    int evict = now - last_evict >= 1000;
    if (evict) last_evict = now;
    for (cquery *q = co->queries; q; q = q->next) {
        int64_t wm;
        xerr err;
        int have_wm = engine_deployed_sink_wm(n->eng, q->qid, &wm, &err) == 0 && wm != INT64_MIN;
        const int64_t *in = NULL;
        int nin = 0;
        if (q->cu.on && have_wm && !engine_deployed_sink_inputs(n->eng, q->qid, &in, &nin, &err) &&
            catchup_done(&q->cu, in, nin)) {
            q->cu.on = 0;
            size_t before = q->dt.ddn;
            if (!dd_rebuild(&q->dt, 1, 0))
                node_log(n, NET_LOG_INFO, "query %u caught up with its output before the failure: %zu of %zu "
                         "delivered rows came again", q->qid, q->dt.ddn, before);
        } else if (evict && !q->cu.on && q->nrep > 0 && (q->ft == ENGINE_FT_REPLICA || q->ft == ENGINE_FT_CHECKPOINT))
            dd_rebuild(&q->dt, 0, DD_KEEP_MS > 3 * q->ckpt_ms ? DD_KEEP_MS : 3 * q->ckpt_ms);
        /* subscribers that attached again: caught up once the sink passed
         * the watermark they had */
        for (csub *x = q->subs; x; x = x->next)
            if (x->dt && have_wm && wm >= x->catchup_wm) {
                node_log(n, NET_LOG_INFO, "query %u: a subscriber that attached again caught up (%zu rows it had)",
                         q->qid, x->dt->ddn);
                dd_fini(x->dt);
                free(x->dt);
                x->dt = NULL;
            }
        /* the rows kept since a takeover, once nobody may attach any more */
        if (q->orphan_until && clock_wall_ms() >= q->orphan_until && (q->subs || !q->push)) {
            q->orphan_until = 0;
            sbuf_fini(&q->backlog);
            sbuf_init(&q->backlog);
        }
    }
    /* push queries end when every input has ended (or at their LIMIT); a
     * kept one whose client is lost waits for it (ATTACH) for a while */
    for (cquery *q = co->queries, *nx; q; q = nx) {
        nx = q->next;
        if (!q->push || q->ended) continue;
        if (!q->subs && q->orphan_until) {
            if (now < q->orphan_until) continue;
            node_log(n, NET_LOG_INFO, "push query %u ends: its client did not come back in %d s", q->qid,
                     DD_KEEP_MS / 1000);
            cq_drop(n, q);
            continue;
        }
        int64_t wm = 0;
        xerr err;
        int done = (q->limit >= 0 && q->rows >= q->limit) ||
                   (engine_deployed_sink_wm(n->eng, q->qid, &wm, &err) == 0 && wm == INT64_MAX);
        if (done) {
            node_log(n, NET_LOG_INFO, "push query %u ended (%lld rows)", q->qid, (long long)q->rows);
            cq_drop(n, q);
        }
    }
    rebalance_tick(n);
}

/* ------------------------------------------------------------------ live re-placement (rebalance) */

/*
 * The coordinator re-plays Nirvana's best responses for the running queries
 * (place_rebalance: a player moves only when its cost falls by more than
 * rebalance_threshold and the potential falls) every rebalance_interval,
 * soon after a node joins or leaves or reports a new capacity, and on ALTER
 * QUERY q REBALANCE.  The moves are carried out by the recovery path: the
 * moved tasks are marked as displaced and ft_recover redeploys their query
 * under a new id, every node keeping its tasks' state; a moved stateful task
 * lands only on its replica's node (a promotion, with ft = replica or
 * checkpoint) or, with ft = upstream, restarts and is rebuilt from the
 * stream's log; the sources replay from where the states stand and the
 * sink's dedup drops what was delivered already (docs/nirvana.md, "Live
 * re-placement", for the proof that no row is lost or repeated).
 */

/* Ask for a rebalance in delay_ms (the earliest request wins; why says what asked). */
static void rebalance_soon(node *n, const char *why, int64_t delay_ms)
{
    coord *co = n->co;
    if (!co || !co->rb_ms) return; /* rebalance_interval = 0: no automatic rebalancing */
    int64_t at = (int64_t)(clock_mono_ns() / 1000000) + delay_ms;
    if (co->rb_soon && co->rb_soon <= at) return;
    co->rb_soon = at;
    snprintf(co->rb_why, sizeof co->rb_why, "%s", why);
}

/* Why q cannot move now, or NULL when it can; asked: ALTER QUERY (no quiet time). */
static const char *rb_blocked(const coord *co, const cquery *q, int asked)
{
    if (!asked && q->rb_quiet_until > (int64_t)(clock_mono_ns() / 1000000))
        return "it moved a moment ago: its new deployment is measured first";
    if (q->strategy != NIRVANA_FULL && q->strategy != NIRVANA_NO_RECOVERY) return "its placement is not the game";
    if (q->cu.on) return "it is still catching up after its last move or recovery";
    if (q->ft == ENGINE_FT_NONE) return "ft = none: its state could not move";
    if (q->nrep != co->replicas) return "SET replicas changed since it was placed";
    for (int t = 0; t < q->ntasks; t++)
        if (q->lost[t]) return "it has displaced tasks";
    return NULL;
}

/* Player (t, r) of q (r = -1: the task itself) left node `from`: it stays
 * off it for 5 rebalance intervals (RB_MEMORY_MS at least). */
static void rb_remember(const coord *co, cquery *q, int t, int r, const char *from)
{
    int64_t now = (int64_t)(clock_mono_ns() / 1000000), keep = 5 * co->rb_ms > RB_MEMORY_MS ? 5 * co->rb_ms : RB_MEMORY_MS;
    int k = 0;
    for (int i = 0; i < q->rb_nleft; i++) /* drop the expired, and the old entry of this player */
        if (q->rb_left[i].until > now && !(q->rb_left[i].t == t && q->rb_left[i].r == r)) q->rb_left[k++] = q->rb_left[i];
    q->rb_nleft = k;
    struct rbleft *v = realloc(q->rb_left, (size_t)(k + 1) * sizeof *v);
    if (!v) return;
    q->rb_left = v;
    v[k] = (struct rbleft){.t = t, .r = r, .until = now + keep};
    snprintf(v[k].node, sizeof v[k].node, "%s", from);
    q->rb_nleft++;
}

/* q's place_query avoid[]: per task, (1 + R) node indexes of pl its
 * players left lately (-1: none).  NULL when out of memory. */
static int *rb_avoid(const cquery *q, const place_node *pl, int nn, int R)
{
    int *a = malloc(((size_t)q->ntasks * (size_t)(1 + R) + 1) * sizeof *a);
    if (!a) return NULL;
    for (int i = 0; i < q->ntasks * (1 + R); i++) a[i] = -1;
    int64_t now = (int64_t)(clock_mono_ns() / 1000000);
    for (int i = 0; i < q->rb_nleft; i++) {
        const struct rbleft *l = &q->rb_left[i];
        if (l->until <= now || l->t >= q->ntasks || l->r >= R) continue;
        a[l->t * (1 + R) + l->r + 1] = node_index(pl, nn, l->node);
    }
    return a;
}

/* Re-place (every running query, or `only`), carry out the moves and say
 * what happened in say (may be NULL).  Returns the moves made, or < 0. */
static int rebalance(node *n, const char *why, cquery *only, sbuf *say)
{
    coord *co = n->co;
    if (co->recover_at || co->takeover_until || co->takeover_event || co->fenced || co->deposed || co->wait_majority) {
        if (say) sbuf_printf(say, "the cluster is recovering from a failure; nothing moved");
        return 0;
    }
    int nq = running_queries(co, NULL), R = co->replicas, rc = 0, nm = 0, eligible = 0;
    if (!nq) return 0;
    place_node *pl = calloc((size_t)n->npeers + 1, sizeof *pl);
    place_query *pqs = calloc((size_t)nq, sizeof *pqs);
    cquery **qs = calloc((size_t)nq, sizeof *qs);
    nirvana_rb_move *mv = calloc(RB_MAX_MOVES, sizeof *mv);
    int **avoid = calloc((size_t)nq + 1, sizeof *avoid);
    place_game g = {0};
    xerr err;
    xerr_clear(&err);
    if (!pl || !pqs || !qs || !mv || !avoid) {
        rc = xerr_set(&err, XE_NOMEM, "out of memory");
        goto out;
    }
    int nn = cluster_nodes(n, 0, NULL, pl), k = 0;
    for (cquery *x = co->queries; x && !rc && k < nq; x = x->next) {
        if (x->ended || !x->dag) continue;
        int on = (!only || x == only) && !rb_blocked(co, x, only != NULL);
        qs[k] = x;
        rc = pq_of(n, x, pl, nn, R, !on, &pqs[k], &err);
        for (int t = 0; !rc && on && t < x->ntasks; t++)
            if (pqs[k].node[t] < 0) on = 0, pqs[k].fixed = 1; /* a task off the live nodes: recovery's business */
        pqs[k].keep_state = x->ft == ENGINE_FT_REPLICA ? 1 : x->ft == ENGINE_FT_CHECKPOINT ? 2 : 0;
        if (!rc && on && !(avoid[k] = rb_avoid(x, pl, nn, R))) rc = xerr_set(&err, XE_NOMEM, "out of memory");
        pqs[k].avoid = avoid[k];
        eligible += on;
        k++;
    }
    if (rc) goto out;
    if (!eligible) {
        node_log(n, NET_LOG_DEBUG, "rebalance (%s): no query can move", why);
        if (say) sbuf_printf(say, "nothing can move: %s", only ? rb_blocked(co, only, 1) ? rb_blocked(co, only, 1) : "a task is off the live nodes" : "no query can move");
        goto out;
    }
    nirvana_strategy s = co->placement == NIRVANA_NO_RECOVERY ? NIRVANA_NO_RECOVERY : NIRVANA_FULL;
    uint64_t t0 = clock_mono_ns();
    if ((rc = place_build(&g, pl, nn, pqs, nq, R, s, &err)) ||
        (rc = place_rebalance(&g, pqs, nq, co->rb_threshold, mv, RB_MAX_MOVES, &nm, &err)))
        goto out;
    double decide_ms = (double)(clock_mono_ns() - t0) / 1e6;
    co->rb_runs++;
    if (!nm) {
        node_log(n, NET_LOG_DEBUG, "rebalance (%s): nothing moves (%.1f ms)", why, decide_ms);
        if (say)
            sbuf_printf(say, "nothing moves: no task or replica lowers its cost by more than %.0f %% "
                        "(rebalance_threshold) while lowering the potential", co->rb_threshold * 100);
        goto out;
    }
    /* the moves, as the game made them, for the log and the answer */
    for (int i = 0; i < nm; i++) {
        const nirvana_player *p = &g.r->players[mv[i].player];
        int q = 0;
        while (q + 1 < nq && g.first[q + 1] <= p->task) q++;
        int t = p->task - g.first[q];
        cquery *x = qs[q];
        char who[96];
        snprintf(who, sizeof who, "%s#%d", x->tkind[t], x->tidx[t]);
        if (p->replica >= 0) snprintf(who + strlen(who), sizeof who - strlen(who), "/r%d", p->replica);
        double gain = mv[i].cost_before > 0 ? 100.0 * (1 - mv[i].cost_after / mv[i].cost_before) : 0;
        node_log(n, NET_LOG_WARN,
                 "rebalance (%s): query %u (%s): %s moves %s -> %s: cost %.4g -> %.4g (%.0f %% lower), potential "
                 "%.4g -> %.4g%s%s",
                 why, x->qid, x->name ? x->name : "push", who, pl[mv[i].from].name, pl[mv[i].to].name,
                 mv[i].cost_before, mv[i].cost_after, gain, mv[i].potential_before, mv[i].potential_after,
                 mv[i].replica >= 0 ? "; a promotion: its replica there holds the state, and a new replica starts on " : "",
                 mv[i].replica >= 0 ? pl[mv[i].replica_to].name : "");
        if (say)
            sbuf_printf(say, "%s%s %s -> %s (cost %.4g -> %.4g)", i ? ", " : "", who, pl[mv[i].from].name,
                        pl[mv[i].to].name, mv[i].cost_before, mv[i].cost_after);
        rb_remember(co, x, t, p->replica, pl[mv[i].from].name);
        if (mv[i].replica >= 0) rb_remember(co, x, t, g.r->players[mv[i].replica].replica, pl[mv[i].to].name);
        snprintf(x->rb_last, sizeof x->rb_last, "%s %s -> %s (cost %.4g -> %.4g, %s)", who, pl[mv[i].from].name,
                 pl[mv[i].to].name, mv[i].cost_before, mv[i].cost_after, why);
        x->rb_moves++;
    }
    /* carry them out: a query with a moved player is redeployed (ft_recover) */
    for (int q = 0; q < nq; q++) {
        cquery *x = qs[q];
        place_query *pq = &pqs[q];
        if (pq->fixed) continue;
        int changed = 0;
        for (int t = 0; t < x->ntasks; t++) {
            int moved = pq->node[t] >= 0 && strcmp(pl[pq->node[t]].name, x->tnode[t]);
            for (int r = 0; r < R; r++) {
                const char *was = x->rnode ? x->rnode[t * x->nrep + r] : NULL;
                int at = pq->rnode[t * R + r];
                moved |= (at >= 0) != (was != NULL) || (at >= 0 && strcmp(was, pl[at].name));
            }
            if (!moved) continue;
            if (pq->node[t] >= 0 && strcmp(pl[pq->node[t]].name, x->tnode[t])) {
                char *c = strdup(pl[pq->node[t]].name);
                if (!c) continue;
                free(x->tnode[t]);
                x->tnode[t] = c;
            }
            x->lost[t] = 1;
            changed++;
        }
        if (!changed) continue;
        if (cq_set_replicas(x, pq, pl, R)) node_log(n, NET_LOG_ERROR, "out of memory recording replicas");
        x->rb_count++;
        x->rb_t0 = clock_mono_ns();
        x->rb_quiet_until = (int64_t)(x->rb_t0 / 1000000) + (co->rb_ms > RB_QUIET_MS ? co->rb_ms : RB_QUIET_MS);
        x->rb_last_at = clock_wall_ms();
    }
    co->rb_moving = 1;
    ft_recover(n);
    co->rb_moving = 0;
    node_log(n, NET_LOG_INFO, "rebalance (%s): %d moves decided in %.1f ms, redeployed in %.1f ms", why, nm, decide_ms,
             (double)(clock_mono_ns() - t0) / 1e6 - decide_ms);
out:
    if (rc) {
        node_log(n, NET_LOG_ERROR, "rebalance (%s): %s", why, err.msg);
        if (say) sbuf_printf(say, "rebalance failed: %s", err.msg);
    }
    for (int i = 0; pqs && i < nq; i++) pq_fini(&pqs[i]);
    for (int i = 0; avoid && i < nq; i++) free(avoid[i]);
    free(avoid);
    free(pqs);
    free(qs);
    free(mv);
    place_game_fini(&g);
    free(pl);
    return rc ? rc : nm;
}

/* ALTER QUERY q REBALANCE: at once, q's players only; the answer says what moved. */
static int alter_rebalance(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err)
{
    cquery *q = query_find(n->co, st->name);
    if (!q) return xerr_at(err, XE_NOTFOUND, st->line, st->col, "query '%s' does not exist", st->name);
    sbuf say;
    sbuf_init(&say);
    char why[160];
    snprintf(why, sizeof why, "ALTER QUERY %s REBALANCE", q->name);
    int rc = rebalance(n, why, q, &say);
    if (rc >= 0) {
        char msg[1200];
        snprintf(msg, sizeof msg, "ALTER QUERY: %s%s%s", rc > 0 ? "moved " : "", say.p ? say.p : "",
                 rc > 0 ? "; redeployed, each moved task with its state" : "");
        notice_to(s, req, msg);
        rc = 0;
    } else
        rc = xerr_set(err, rc, "%s", say.p ? say.p : "rebalance failed");
    sbuf_fini(&say);
    return rc;
}

/* A node's capacity, as placement sees it, changed by more than 10 %
 * since the last look: a rebalance soon. */
static void rebalance_capacities(node *n)
{
    coord *co = n->co;
    place_node *pl = calloc((size_t)n->npeers + 1, sizeof *pl);
    if (!pl) return;
    int nn = cluster_nodes(n, 0, NULL, pl);
    for (int i = 0; i < nn; i++) {
        int k = 0;
        while (k < co->rb_ncap && strcmp(co->rb_cap[k].name, pl[i].name)) k++;
        if (k == co->rb_ncap) {
            struct rbcap *v = realloc(co->rb_cap, (size_t)(k + 1) * sizeof *v);
            if (!v) break;
            co->rb_cap = v;
            snprintf(v[k].name, sizeof v[k].name, "%s", pl[i].name);
            v[k].speed = pl[i].speed;
            co->rb_ncap++;
            continue; /* a join asks by itself */
        }
        double was = co->rb_cap[k].speed, now = pl[i].speed;
        if (was > 0 && now > 0 && (now > was * 1.1 || now < was / 1.1)) {
            char why[200];
            snprintf(why, sizeof why, "the capacity of node %s went %.3g -> %.3g CPUs", pl[i].name, was, now);
            node_log(n, NET_LOG_INFO, "%s%s", why, co->rb_ms ? ": rebalancing soon" : " (rebalance_interval = 0)");
            rebalance_soon(n, why, RB_SOON_MS / 2);
            co->rb_cap[k].speed = now;
        }
    }
    free(pl);
}

/* Every tick: the periodic rebalance, one asked for, and the moves' timing. */
static void rebalance_tick(node *n)
{
    coord *co = n->co;
    int64_t now = (int64_t)(clock_mono_ns() / 1000000);
    if (now - co->rb_cap_at >= 500) {
        co->rb_cap_at = now;
        rebalance_capacities(n);
    }
    for (cquery *q = co->queries; q; q = q->next)
        if (q->rb_t0 && !q->cu.on) {
            q->rb_last_ms = (double)(clock_mono_ns() - q->rb_t0) / 1e6;
            q->rb_ms_total += q->rb_last_ms;
            q->rb_t0 = 0;
            node_log(n, NET_LOG_INFO, "rebalance: query %u (%s) caught up with its output %.1f ms after the move",
                     q->qid, q->name ? q->name : "push", q->rb_last_ms);
        }
    if (!co->rb_ms) return;
    if (!co->rb_next) co->rb_next = now + co->rb_ms;
    if (co->rb_soon && now >= co->rb_soon) {
        co->rb_soon = 0;
        co->rb_next = now + co->rb_ms;
        rebalance(n, co->rb_why, NULL, NULL);
    } else if (now >= co->rb_next) {
        co->rb_next = now + co->rb_ms;
        rebalance(n, "every rebalance_interval", NULL, NULL);
    }
}

/* EXPLAIN PLACEMENT's line on q's moves. */
static void rebalance_explain(const cquery *q, sbuf *text)
{
    if (!q->rb_moves) {
        sbuf_printf(text, "\nrebalanced: never (no move yet)");
        return;
    }
    int done = q->rb_count - (q->rb_t0 ? 1 : 0);
    sbuf_printf(text, "\nrebalanced: %d moves in %d redeployments; the last: %s", q->rb_moves, q->rb_count, q->rb_last);
    if (q->rb_t0) sbuf_printf(text, "; catching up now");
    else if (done > 0)
        sbuf_printf(text, "; caught up %.0f ms after it (mean %.0f ms)", q->rb_last_ms, q->rb_ms_total / done);
}

/* ------------------------------------------------------------------ start and stop */

typedef struct load_ctx {
    node *n;
    int rc;
    xerr *err;
} load_ctx;

static int load_stream(void *ctx, const char *key, const void *v, size_t len)
{
    load_ctx *l = ctx;
    coord *co = l->n->co;
    const char *nl = memchr(v, '\n', len);
    if (!nl) return 0;
    cstream *x = realloc(co->streams, (size_t)(co->nstreams + 1) * sizeof *x);
    if (!x) return l->rc = XE_NOMEM;
    co->streams = x;
    cstream *c = &co->streams[co->nstreams++];
    c->name = strdup(key + strlen("stream/"));
    const char *tab = memchr(v, '\t', (size_t)(nl - (const char *)v));
    c->home = xstrndup(v, (size_t)((tab ? tab : nl) - (const char *)v));
    const char *tab2 = tab ? memchr(tab + 1, '\t', (size_t)(nl - tab - 1)) : NULL;
    c->shadow = tab && (tab2 ? tab2 : nl) > tab + 1 ? xstrndup(tab + 1, (size_t)((tab2 ? tab2 : nl) - tab - 1)) : NULL;
    c->lshadow = tab2 && nl > tab2 + 1 ? xstrndup(tab2 + 1, (size_t)(nl - tab2 - 1)) : NULL;
    c->dirty = 0;
    c->sql = xstrndup(nl + 1, len - (size_t)(nl + 1 - (const char *)v));
    const char *hash = c->name ? strrchr(c->name, '#') : NULL;
    c->part = hash ? atoi(hash + 1) : 0;
    c->lite = c->sql && !c->part ? strip_source(c->sql) : NULL;
    return 0;
}

static int load_set(void *ctx, const char *key, const void *v, size_t len)
{
    load_ctx *l = ctx;
    coord *co = l->n->co;
    char **k = realloc(co->set_keys, (size_t)(co->nsets + 1) * sizeof *k);
    if (k) co->set_keys = k;
    char **s = realloc(co->set_sql, (size_t)(co->nsets + 1) * sizeof *s);
    if (s) co->set_sql = s;
    if (!k || !s) return l->rc = XE_NOMEM;
    co->set_keys[co->nsets] = strdup(key + 4);
    co->set_sql[co->nsets++] = xstrndup(v, len);
    ast_stmt *st = NULL;
    xerr err;
    if (co->set_sql[co->nsets - 1] && !parse_one(co->set_sql[co->nsets - 1], len, &st, &err) && st->kind == ST_SET)
        check_cluster_setting(co, st, 1, &err);
    ast_stmt_free(st);
    return 0;
}

/* Records are copied out of the scan first: deploying commits the engine's
 * transaction, which would end the scan's cursor. */
typedef struct qrec {
    char *key;
    sbuf val;
} qrec;

typedef struct qrecs {
    qrec *v;
    int n;
} qrecs;

static int collect_query(void *ctx, const char *key, const void *v, size_t len)
{
    qrecs *r = ctx;
    qrec *x = realloc(r->v, (size_t)(r->n + 1) * sizeof *x);
    if (!x) return XE_NOMEM;
    r->v = x;
    x = &r->v[r->n];
    sbuf_init(&x->val);
    if (!(x->key = strdup(key)) || sbuf_add(&x->val, v, len)) {
        free(x->key);
        sbuf_fini(&x->val);
        return XE_NOMEM;
    }
    r->n++;
    return 0;
}

static int load_query(void *ctx, const char *key, const void *v, size_t len)
{
    load_ctx *l = ctx;
    node *n = l->n;
    wire_rd r;
    wire_str name, plan;
    wire_rd_init(&r, v, len);
    wire_get_str(&r, &name);
    wire_get_blob(&r, &plan);
    xerr err;
    wire_rd rest = r; /* the placement record, read once the plan is known */
    if (wire_rd_end(&r, 0, &err)) {
        node_log(n, NET_LOG_ERROR, "catalog record %s is malformed: skipped", key);
        return 0;
    }
    deploy_plan dp;
    if (deploy_plan_get(plan.p, plan.n, &dp, &err)) {
        node_log(n, NET_LOG_ERROR, "catalog record %s: %s: skipped", key, err.msg);
        return 0;
    }
    cquery *q = calloc(1, sizeof *q);
    plan_dag *d = NULL;
    int rc = XE_NOMEM;
    if (!q) goto fail;
    sbuf_init(&q->plan);
    sbuf_init(&q->enc);
    q->qid = (uint32_t)strtoul(key + 2, NULL, 10);
    q->origin = dp.origin ? dp.origin : q->qid;
    q->ft = (engine_ft)dp.ft;
    q->ckpt_ms = dp.checkpoint_ms ? dp.checkpoint_ms : n->co->ckpt_ms;
    q->name = xstrndup(name.p, name.n);
    q->sql = xstrndup(dp.sql.p, dp.sql.n);
    if (!q->name || !q->sql || sbuf_add(&q->plan, plan.p, plan.n)) goto fail;
    q->co_node = n;
    sbuf_init(&q->backlog);
    if ((rc = engine_plan(n->eng, q->sql, &d, &err)) || (rc = cq_from_plan(q, d, &err))) goto fail;
    rc = XE_CORRUPT;
    if (q->ntasks != dp.ntasks) goto fail;
    for (int t = 0; t < q->ntasks; t++)
        if (!(q->tnode[t] = xstrndup(dp.names[dp.assign[t]].p, dp.names[dp.assign[t]].n))) goto fail;
    q->strategy = NIRVANA_ROUND_ROBIN;
    if (wire_rd_left(&rest)) {
        wire_str sn, rn;
        uint32_t rounds = 0, moves = 0;
        uint8_t conv = 0;
        uint16_t R = 0;
        char sbuf_[64];
        wire_get_str(&rest, &sn);
        wire_get_u32(&rest, &rounds);
        wire_get_u32(&rest, &moves);
        wire_get_u8(&rest, &conv);
        wire_get_u16(&rest, &R);
        snprintf(sbuf_, sizeof sbuf_, "%.*s", (int)sn.n, sn.p);
        if (!rest.err) {
            nirvana_strategy_parse(sbuf_, &q->strategy);
            q->rounds = (int)rounds;
            q->moves = (int)moves;
            q->converged = conv;
            if (R && R <= 8 && (q->rnode = calloc((size_t)q->ntasks * R, sizeof *q->rnode))) {
                q->nrep = R;
                for (int i = 0; i < q->ntasks * R; i++)
                    if (!wire_get_str(&rest, &rn) && rn.n) q->rnode[i] = xstrndup(rn.p, rn.n);
            }
            uint8_t keep = 0;
            if (wire_rd_left(&rest) && !wire_get_u8(&rest, &keep) && keep) {
                /* a kept push query: its client may attach again */
                q->push = q->keep = 1;
                q->orphan_until = clock_wall_ms() + DD_KEEP_MS;
            }
        }
    }
    if ((rc = node_deploy(n, q->qid, q->plan.p, q->plan.len, &q->out, &err))) goto fail;
    q->dag = d;
    d = NULL;
    cq_link(n->co, q);
    node_log(n, NET_LOG_INFO, "query %u (%s) restored from the catalog", q->qid, q->name);
    plan_free(d);
    free(dp.assign);
    free(dp.rassign);
    return 0;
fail:
    node_log(n, NET_LOG_ERROR, "cannot restore %s: %s", key, err.msg[0] ? err.msg : xerr_name(rc));
    plan_free(d);
    free(dp.assign);
    free(dp.rassign);
    cq_free(q);
    return 0;
}

/* A catalog record holding a decimal number. */
static uint64_t rec_number(const void *v, size_t len)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.*s", (int)(len < 31 ? len : 31), (const char *)v);
    return strtoull(buf, NULL, 10);
}

static int load_next_qid(void *ctx, const char *key, const void *v, size_t len)
{
    load_ctx *l = ctx;
    (void)key;
    uint32_t q = (uint32_t)rec_number(v, len);
    if (q > l->n->co->next_qid) l->n->co->next_qid = q;
    return 0;
}

static int load_int(void *ctx, const char *key, const void *v, size_t len)
{
    (void)key;
    *(int *)ctx = (int)rec_number(v, len);
    return 0;
}

static int load_addr(void *ctx, const char *key, const void *v, size_t len)
{
    (void)key;
    snprintf(ctx, 128, "%.*s", (int)(len < 127 ? len : 127), (const char *)v);
    return 0;
}

static int load_flag(void *ctx, const char *key, const void *v, size_t len)
{
    (void)key;
    (void)v;
    (void)len;
    *(int *)ctx = 1;
    return 0;
}

static int load_term(void *ctx, const char *key, const void *v, size_t len)
{
    load_ctx *l = ctx;
    (void)key;
    uint64_t t = rec_number(v, len);
    if (t > l->n->term) l->n->term = t;
    return 0;
}

int coord_start(node *n, xerr *err)
{
    coord *co = calloc(1, sizeof *co);
    if (!co) return xerr_set(err, XE_NOMEM, "out of memory");
    n->co = co;
    co->next_req = 1;
    co->next_qid = 1;
    co->placement = NIRVANA_FULL;
    co->replicas = 1;
    co->ft = ENGINE_FT_REPLICA;
    co->ckpt_ms = 10000;
    co->rb_ms = ENGINE_REBALANCE_INTERVAL_MS;
    co->rb_threshold = ENGINE_REBALANCE_THRESHOLD;
    load_ctx l = {n, 0, err};
    int rc;
    if ((rc = engine_host_scan(n->eng, "next_qid", load_next_qid, &l, err)) ||
        (rc = engine_host_scan(n->eng, "set/", load_set, &l, err)) ||
        (rc = engine_host_scan(n->eng, "stream/", load_stream, &l, err)))
        return rc;
    if (l.rc) return xerr_set(err, l.rc, "loading the cluster catalog: out of memory");
    if ((rc = engine_host_scan(n->eng, "coord_term", load_term, &l, err))) return rc;
    if ((rc = engine_host_scan(n->eng, "standby_addr", load_addr, co->standby_addr, err)) ||
        (rc = engine_host_scan(n->eng, "standby", load_flag, &co->had_standby, err)) ||
        (rc = engine_host_scan(n->eng, "members", load_int, &co->members_kept, err)))
        return rc;
    /* a restart (not a takeover) of a coordinator that had a standby: the
     * standby may have taken over meanwhile, so the members decide (a node
     * that granted a newer term refuses our announcement and never joins) */
    if (co->had_standby && !n->taking_over && co->members_kept > 1) {
        co->wait_majority = co->members_kept;
        node_log(n, NET_LOG_WARN, "restarted with a standby known: serving once %d of the %d members have joined",
                 co->members_kept / 2 + 1, co->members_kept);
    }
    if (!n->term) {
        n->term = 1;
        if ((rc = persist_term(n, err))) return rc;
    }
    /* the streams' homes are in our own engine's catalog already; queries
     * deploy here now and on the other nodes as they join */
    qrecs qr = {NULL, 0};
    rc = engine_host_scan(n->eng, "q/", collect_query, &qr, err);
    for (int i = 0; i < qr.n; i++) {
        if (!rc) load_query(&l, qr.v[i].key, qr.v[i].val.p, qr.v[i].val.len);
        free(qr.v[i].key);
        sbuf_fini(&qr.v[i].val);
    }
    free(qr.v);
    if (rc) return rc;
    for (cquery *q = co->queries; q; q = q->next)
        if (q->qid >= co->next_qid) co->next_qid = q->qid + 1;
    n->max_qid = co->next_qid - 1;
    node_log(n, NET_LOG_INFO, "coordinator: %d streams, %d settings in the catalog", co->nstreams, co->nsets);
    return 0;
}

void coord_stop(node *n)
{
    coord *co = n->co;
    if (!co) return;
    while (co->queries) {
        cquery *q = co->queries;
        co->queries = q->next;
        xerr err;
        if (q->push) {
            for (csub *x = q->subs; x; x = x->next) cs_result(x->to, x->req, WIRE_F_LAST, RES_END, 0, NULL, 0);
            node_undeploy(n, q->qid, 0, &err);
        }
        cq_free(q);
    }
    while (co->pends) {
        pend *p = co->pends;
        co->pends = p->next;
        pend_free(p);
    }
    for (int i = 0; i < co->nstreams; i++) {
        free(co->streams[i].name);
        free(co->streams[i].home);
        free(co->streams[i].sql);
        free(co->streams[i].lite);
        free(co->streams[i].shadow);
        free(co->streams[i].lshadow);
    }
    free(co->streams);
    for (int i = 0; i < co->nsets; i++) {
        free(co->set_keys[i]);
        free(co->set_sql[i]);
    }
    free(co->set_keys);
    free(co->rb_cap);
    free(co->set_sql);
    sbuf_fini(&co->dead_names);
    free(co);
    n->co = NULL;
}
