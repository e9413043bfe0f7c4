/*
 * coord.h: the coordinator's internal header, included by cluster/coord.c,
 * cluster/coord_*.c and standby.c only (node.c and the rest of the daemon
 * see the coordinator through node.h's coord_* functions).  The coordinator runs
 * inside the ares-node started with --coordinator, on the same loop as that
 * node's engine and connections (node.c), and adds:
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
 *
 * The files, each calling only the ones above it in this list (a request
 * that finishes goes on with its client's job through co->job_step, which
 * coord_start sets to coord_stmt.c's job_step_done: coord_query.c's
 * deploy_done and coord_show.c's gather_fin call it so):
 *
 *   (below them all, the node runtime's node_base.c, node_conn.c, channel.c,
 *   shadow.c, node_home.c and node_task.c, and report.c: node_int.h)
 *   coord_catalog.c    the replicated catalog, lookups, stream records, settings
 *   coord_nodes.c      requests to nodes (pend), broadcasts, MEMBERSHIP, DEPLOY
 *   coord_derive.c     a derived stream's rows, from its query's sink to its home and shadow
 *   coord_out.c        a query's output: sink dedup, subscribers, ATTACH
 *   coord_place.c      placement glue: the cluster and its queries as placement sees them
 *   coord_query.c      queries: CREATE/DROP QUERY, plan, place, persist, deploy
 *   coord_ingest.c     client ingest and INSERT forwarded to homes and shadows
 *   coord_fail.c       failure events: promote shadows, re-place, redeploy
 *   coord_rebalance.c  live re-placement of running queries
 *   coord_show.c       SHOW STREAMS/QUERIES/NODES and EXPLAIN PLACEMENT
 *   coord_stmt.c       a client's statements (its job) and CREATE STREAM/SET/INSERT
 *   coord_start.c      start (the catalog read back) and stop
 *   standby.c          terms, the standby's takeover, fencing (with the node's side)
 *   coord.c            the entry points: frames, connections, the tick
 *   (above them all, node.c: node_int.h)
 *
 * Everything runs on the node's loop thread: no locks.
 */
#ifndef ARES_CLUSTER_COORD_H
#define ARES_CLUSTER_COORD_H

#include "cluster/catchup.h"
#include "cluster/node.h"

/* A stream fed through the coordinator gets a TICK (its home and shadow end
 * their partial slice, and the watermark moves) at most this long after
 * input came.  Until session 10 it was 200 ms: a window's results then
 * waited 20-170 ms for the cut, by the phase of the ticks against the
 * window's end, the same for every row of the window (docs/benchmarks.md). */
#define COORD_SLICE_MS NODE_SLICE_MS
#define RB_SOON_MS 1000  /* a join, a loss or a new capacity: rebalance this much later */
#define RB_QUIET_MS 2500 /* a query that moved is left alone this long (its new deployment gets measured), or
                            rebalance_interval if longer */

/* Rows delivered, by hash (row_hash), for dropping repeats (dd_filter):
 * an entry's count is how often the row was delivered, seen how often the
 * current deployment produced it. */
typedef struct ddtab {
    rowtab dd;
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
    int earliest;       /* offset = 'earliest': in the plan of its first DEPLOY only */
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
    /* CREATE STREAM AS (coord_derive.c): the stream it writes; the event
     * time's column in its output; its rows waiting for the sink's
     * watermark to pass them; the watermark sent last */
    char *target;
    int tcol;
    batch dwait;
    int dwait_on;
    int64_t dwm;
    sbuf denc;
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
    int direct;         /* PK_FWD_INGEST: the client can send it straight to the next home (WIRE_F_DIRECT) */
    char *stream;       /* PK_FWD_INGEST: the stream */
    int line, col;      /* PK_FWD_INSERT: where the forwarded statement's text begins in the client's SQL */
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
    int derived;        /* CREATE STREAM AS: the coordinator writes it (DERIVE), its query has its name */
    int table;          /* CREATE TABLE: its log is a changelog, its rows are kept at its home and shadow */
    int dirty;          /* input went out since the last TICK */
    int64_t tick_ms;    /* when the last TICK went (wall ms) */
    /* SHOW STREAMS: what the home said of it (known = 0: nothing yet) */
    int known;
    int64_t rows, rejected, log_bytes;
    char wm[FMT_TS_BUF + 16];
} cstream;

typedef struct csess {
    parse_result *job;
    int job_i;
    int job_again;      /* run the same statement again (a CREATE STREAM AS's second step) */
    uint64_t job_req;
    /* the client's ingest session when this node is its home or shadow */
    uint64_t ing_req, ing_local, ing_acked;
    int ing_here;
} csess;

struct coord {
    cquery *queries;    /* in qid order */
    pend *pends;
    /* a finished request goes on with its client's job: coord_stmt.c's
     * job_step_done, set by coord_start (coord_query.c and coord_show.c,
     * below coord_stmt.c, call it through this) */
    void (*job_step)(node *n, pend *p);
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
    int offset_earliest;        /* SET offset = 'earliest' */
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

typedef struct pnode {
    const char *name, *addr, *domain;
} pnode;

/* ---------------------------------------------------------------- coord_catalog.c */
char *strip_source(const char *sql);
const char *stream_sql_for(const cstream *c, const char *node_name);
enum { SK_DERIVED = 1, SK_TABLE = 2 };
int stream_kind(const char *sql);
int coord_joined(const peer *p);
int coord_alive(const peer *p);
int coord_worker(const peer *p);
int cat_put(node *n, const char *key, const void *v, size_t len, xerr *err);
int cat_del(node *n, const char *key, xerr *err);
void catalog_dump(node *n, cs *to);
int persist_term(node *n, xerr *err);
cstream *stream_find(coord *co, const char *name);
cstream *partition_find(coord *co, const char *name, int p);
cquery *query_find(coord *co, const char *name);
int persist_next_qid(node *n, xerr *err);
int coord_interval_ms(const char *v, int64_t *ms, xerr *err);
int check_cluster_setting(coord *co, const ast_stmt *st, int apply, xerr *err);
const char *pick_shadow(node *n, const char *home, int start, const char *const *more, int nmore);
int persist_stream(node *n, cstream *c, xerr *err);

/* ---------------------------------------------------------------- coord_nodes.c */
void coord_send_table(cs *to, uint64_t req, int ncols, const char *const *names, const sql_type *types, const batch *b);
void coord_notice_to(cs *to, uint64_t req, const char *msg);
int coord_exec_local(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err);
pend *pend_new(node *n, int kind);
void pend_unlink(node *n, pend *p);
void pend_free(pend *p);
void pend_finish(node *n, pend *p);
int pend_wait_for(pend *p, peer *x);
void pend_answered(node *n, pend *p, peer *x);
int coord_broadcast_sql(node *n, pend *p, const char *sql);
int64_t coord_node_load(node *n, const char *name);
void send_membership(node *n);
int send_deploy(node *n, cs *to, pend *p, cquery *q);
void send_undeploy(node *n, cquery *q, int keep_state);

/* ---------------------------------------------------------------- coord_derive.c */
int derive_bind(node *n, cquery *q, const char *target, xerr *err);
int derive_rows(node *n, cquery *q, const batch *b);
void derive_flush(node *n, cquery *q);
void derive_fini(cquery *q);

/* ---------------------------------------------------------------- coord_out.c */
void dd_fini(ddtab *t);
int dd_rebuild(ddtab *d, int caught_up, int64_t keep_ms);
void csub_free(csub *x);
int cq_rows(void *ctx, const batch *b);
int cq_begin(cquery *q, cs *to, uint64_t req);
void coord_attach(node *n, cs *s, const wire_msg *m);

/* ---------------------------------------------------------------- coord_place.c */
int cluster_nodes(node *n, int all, pnode *pn, place_node *pl);
int coord_node_index(const place_node *pl, int nn, const char *name);
int op_homes(node *n, const plan_dag *d, const place_node *pl, int nn, int *home, int strict, xerr *err);
void pq_fini(place_query *pq);
int pq_of(node *n, cquery *q, const place_node *pl, int nn, int R, int fixed, place_query *pq, xerr *err);
int cq_set_replicas(cquery *q, const place_query *pq, const place_node *pl, int R);
int running_queries(coord *co, const cquery *except);
void rebalance_soon(node *n, const char *why, int64_t delay_ms);

/* ---------------------------------------------------------------- coord_query.c */
void cq_free(cquery *q);
int cq_from_plan(cquery *q, const plan_dag *d, xerr *err);
int coord_plan_blob(sbuf *b, const pnode *nodes, int nnodes, const int *assign, const cquery *q);
int persist_query(node *n, cquery *q, xerr *err);
void cq_link(coord *co, cquery *q);
void cq_drop(node *n, cquery *q);
/* target: a CREATE STREAM AS's stream, which the query writes (NULL: none) */
int coord_create_query(node *n, cs *s, uint64_t req, const ast_stmt *st, int push, const char *target, xerr *err);
int coord_drop_query(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err);
void cancel_results(node *n, cs *s, uint64_t req);

/* ---------------------------------------------------------------- coord_ingest.c */
void insert_to_shadow(node *n, cstream *c, const ast_stmt *st);
void tick_stream(node *n, cstream *c);
int coord_ingest_can_move(node *n, pend *p);
void move_ingests(node *n);
void coord_ingest_from_client(node *n, cs *s, const wire_msg *m, const wire_frame *f);
void coord_ingest_acked(node *n, cs *s, uint64_t req);
int coord_shadow_takes_over(node *n, pend *p);
/* This node is the home of the client's ingest (s, req): its chunks up to
 * safe are in (and in the stream's log copy); n->co_ingest_safe. */
void coord_ingest_safe(node *n, cs *s, uint64_t req, uint64_t safe);

/* ---------------------------------------------------------------- coord_fail.c */
void replace_after_death(node *n, const char *dead);
void ft_recover(node *n);
/* A node dropped BATCHES batches of query QID (0: unknown) for PEER, which
 * it could not reach (LOSS); n->co_loss. */
void coord_loss(node *n, const char *from, uint32_t qid, uint64_t batches, const char *to);
void send_logshadow(node *n, cstream *c, const char *source);
void promote_shadows(node *n);
void member_lost(node *n, peer *x, int closed);
void judge_losses(node *n, int64_t now);

/* ---------------------------------------------------------------- coord_rebalance.c */
int alter_rebalance(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err);
void rebalance_tick(node *n);
void rebalance_explain(const cquery *q, sbuf *text);

/* ---------------------------------------------------------------- coord_show.c */
int coord_show_streams(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err);
int coord_show_queries(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err);
int coord_show_nodes(node *n, cs *s, uint64_t req);
int coord_explain_placement(node *n, cs *s, uint64_t req, cquery *q, int json);

/* ---------------------------------------------------------------- coord_stmt.c */
void job_step_done(node *n, pend *p);
void job_free(csess *ss);
void job_start(node *n, cs *s, const wire_msg *m);

/* ---------------------------------------------------------------- standby.c */
void probe_standby(node *n, int64_t now);
void takeover_deaths(node *n);
void takeover_probe(node *n);
void check_quorum(node *n);

#endif
