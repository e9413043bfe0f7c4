/*
 * node.h (internal to cluster/): the node runtime shared by node.c,
 * node_conn.c, node_task.c, node_home.c and standby.c (every node:
 * connections, the mesh, deployed tasks, remote batches, ingest at a
 * stream's home, coordinator terms; what only they share is in
 * node_int.h), coord.c (the coordinator: membership, catalog, placement,
 * client statements), place.c, measure.c and report.c (placement and the
 * measured costs) and client.c (the RESULT parts a client decodes).
 *
 * Everything runs on the engine's libuv loop (engine_loop): one thread, no
 * locks.  A connection's state (cs) is freed only in its on_close.
 *
 * Ordering.  A sender uses one connection per destination node (peer->link)
 * for BATCH and WATERMARK frames, so the rows an upstream task sends and the
 * watermark that follows them arrive in that order.  Between a node and the
 * coordinator the link is the node's JOIN connection, both ways.
 *
 * Backpressure (docs/operations.md, "Memory"): a frame that cannot go out
 * at once (net_send said XE_BUSY, or the connection is not ready yet) waits
 * in the destination's overflow queue, in order, and nothing is ever dropped.
 * While a destination has overflow, every connection whose input produced
 * frames for it is paused (net_pause: TCP then slows the sender) and resumes
 * when the overflow has drained.  So a node holds at most send_hwm + the
 * output of one input frame per destination.  One exception keeps nodes
 * from stopping each other for good: nodes whose tasks send to each other
 * (two, or a ring of them) can each wait for the next to read, each paused
 * on an overflow that only the next one's reading would drain.  An overflow
 * that has not moved for NODE_STALL_MS releases the inputs that wait on it
 * and pauses none until it has drained (conn_tick; docs/operations.md).
 */
#ifndef CLUSTER_NODE_H
#define CLUSTER_NODE_H

#include <stdint.h>
#include <uv.h>

#include "cluster/cluster.h"
#include "cluster/net.h"
#include "exec/exec.h"

/* RESULT payload "rest": a part code then the part (docs/protocol.md). */
enum res_part {
    RES_BEGIN = 1,  /* u8 stream, u16 ncols, ncols x (string name, u8 type) */
    RES_ROWS = 2,   /* batch_encode bytes; RESULT.nrows = their rows */
    RES_END = 3,    /* the result ended (WIRE_F_LAST when it ends the request) */
    RES_NOTICE = 4, /* blob text */
    RES_DONE = 5,   /* the request finished: i64 lines, i64 rows, i64 rejected, i64 late, u64 late_partial (ingest; else 0) */
    RES_REJECT = 6, /* i64 line, blob message: a rejected input line (the first few) */
    RES_ACKED = 7,  /* u64 seq: the chunks of the ingest session up to seq are in (home and shadow) */
    RES_WM = 8,     /* i64: the sink's watermark after the rows before it (subscriptions) */
    RES_NAME = 9,   /* the query's name: the result can be attached again after a failover (ATTACH) */
    RES_WARN = 10,  /* blob text: a warning the client shows on stderr even when quiet (rows were lost) */
    RES_RESEND = 11, /* the ingest's stream has a new home: send every chunk not acknowledged again */
    RES_HOME = 12,  /* string addr, string node: send this ingest (every chunk not acknowledged) there instead */
};

#define NODE_TICK_MS 100
/* An ingest's partial slice ends at most this long after its rows came (a
 * window closes that soon after the input passes its end), at the home and
 * in the coordinator's TICKs of a stream it feeds to a home and a shadow. */
#define NODE_SLICE_MS 20
/* The coordinator shows a node SUSPECT after half the dead-peer limit of silence. */
#define NODE_SUSPECT_MS(n) ((uint64_t)net_ctx_dead_ms((n)->net) / 2)

typedef struct node node;
typedef struct cs cs;
typedef struct peer peer;
typedef struct dep dep;
typedef struct coord coord;
typedef struct meas_store meas_store;

/* A frame waiting to be sent. */
typedef struct qframe {
    struct qframe *next;
    uint8_t type;
    uint16_t flags;
    uint64_t seq;        /* a data frame kept until acknowledged (channel.c) */
    size_t len;
    unsigned char p[];
} qframe;

enum cs_kind { CS_NODE = 1, CS_CLIENT = 2 };

/* Our state for one authenticated connection. */
struct cs {
    node *n;
    net_conn *c;
    int kind;
    int ready, closing;
    peer *peer;          /* CS_NODE: the node at the other end, once known */
    /* send side */
    qframe *ovf, *ovf_tail;
    size_t ovf_bytes, ovf_frames;
    int src_paused;      /* this overflow paused the engine's socket sources */
    cs **waiters;        /* connections paused until our overflow drains */
    int nwait, capwait;
    /* receive side */
    int blocked;         /* destinations whose overflow this connection waits on */
    int64_t stuck_since; /* inputs wait on our overflow, which has not moved since (wall ms) */
    int no_wait;         /* they were released (conn_tick): it pauses no one until it has drained */
    qframe *held;        /* a BATCH/WATERMARK for a query whose DEPLOY has not come yet */
    int64_t held_since;
    /* the coordinator's client session (coord.c) */
    struct csess *sess;
    uint64_t term;       /* the coordinator term the other end announced (TERM) */
    int failover;        /* CS_CLIENT: it fails over to another coordinator (QUERY with WIRE_F_FAILOVER) */
    int close_why;       /* enum net_close_why, once closing */
    int direct;          /* CS_CLIENT on a node that does not serve as coordinator: ingest straight to a home only */
    cs *next;
};

/* Another node (on the coordinator: a member). */
struct peer {
    char name[WIRE_NAME_MAX + 1], domain[WIRE_NAME_MAX + 1], addr[128];
    uint32_t slots, speed_milli;
    int state;           /* enum wire_member_state */
    int is_coord;
    int standby;         /* coordinator: a standby coordinator (not placed; gets CATALOG) */
    int rejoined;        /* coordinator after a takeover: it joined us */
    cs *probe;           /* coordinator during a takeover: a connection to it, to see if a process is there */
    int probe_tried, gone; /* gone: that connection was refused (nothing listens at its address) */
    uint64_t granted;    /* standby: the term it granted us */
    cs *link;            /* where we send to it (may still be connecting) */
    int64_t retry_at;    /* no reconnect before (ms) */
    uint64_t lost;       /* batches for it dropped since the last LOSS report; lost_qid: the last query */
    uint32_t lost_qid, lost_qid_said;
    int64_t lost_said;   /* wall ms of the last LOSS report */
    int64_t last_hb;     /* coordinator: wall-clock ms of the last sign of life */
    uint64_t seen;       /* coordinator: frames+heartbeats received, at the last tick */
    /* the numbered data frames to it (channel.c) */
    uint64_t tx_next;    /* the last number given */
    qframe *rtx, *rtx_tail; /* sent, not acknowledged yet */
    size_t rtx_bytes, rtx_n;
    cs *tx_cs;           /* the connection the numbering was announced on (CHANNEL) */
    /* ... and from it */
    uint64_t rx_inc, rx_last, rx_cur, rx_acked; /* its incarnation, the last number delivered, the next to come, the last acknowledged */
    cs *rx_cs;           /* the connection of its last CHANNEL */
};

/* A query deployed on this node. */
struct dep {
    node *n;
    uint32_t qid;
    int ntasks, nops, nnodes;
    int *par, *base;     /* per op: parallelism, global index of task 0 */
    int *assign;         /* per task: index into nodes */
    peer **nodes;        /* NULL entry = this node */
    engine_remote hooks;
    engine_deploy_opts ft;
    uint32_t origin;     /* the query's first id */
    int R;               /* replicas per task */
    int cold_logged;     /* report.c said that a task of it went past memory_budget */
    int *rassign;        /* ntasks x R: index into nodes, -1 = none */
    int nsrc, src_task[ENGINE_MAX_SRC]; /* the query's source slots: their global task indexes */
    uint64_t *racked;    /* at a source's home: ntasks x R x ENGINE_MAX_SRC, what each replica acknowledged */
    uint64_t *rapply;    /* replicas held here: per task (global index), the thread CPU ns and the
                            bytes of the state changes applied (report.c); NULL until the first */
    /* a redeployment, at a source's home: the RESUMEs heard so far */
    int rs_on, rs_expect, rs_got;
    int rs_pending;      /* offset = 'earliest': its RESUMEs go at the next tick */
    unsigned char *rs_seen; /* per node index */
    uint64_t rs_from[ENGINE_MAX_SRC];
    int rs_time[ENGINE_MAX_SRC]; /* some task needs source slot k from the resume watermark on */
    int64_t rs_deadline;
    uint64_t rs_t0;
    /* its replay, in steps (node_task.c replay_steps) */
    int cu_on;
    int64_t cu_rows, cu_from;
    uint64_t cu_origin, cu_t0;
    dep *next;
};

/* An ingest session at a stream's home node. */
typedef struct ingsess {
    cs *from;
    uint64_t req;
    exec_ingest *in;
    int failed, shown;
    int quiet;           /* a shadow's session: nothing is answered (the home answers) */
    uint64_t session, seq; /* the client's session id and the last chunk fed (0: not resumable) */
    int64_t orphan_at;   /* its forwarder left at (wall ms); 0 while it has one */
    int64_t rejected;
    char *stream;
    uint64_t safe;       /* a stream with a log copy: the chunks the copy holds (acknowledged) */
    int64_t cut_at;      /* the stream's partial slice last ended here at (wall ms; NODE_SLICE_MS) */
    struct ingsess *next;
} ingsess;

typedef struct lship lship;   /* shadow.c */
typedef struct shsess shsess;

struct node {
    node_config cfg;
    char listen_host[64];
    int listen_port;
    char addr[128];      /* our advertised "host:port" */
    uv_loop_t *loop;
    engine *eng;
    net_ctx *net;
    net_listener *lis;
    auth_secret secret;
    uv_timer_t tick;
    uv_timer_cb on_tick; /* the tick (node.c), that node_tick_in restarts */
    const net_handlers *cs_handlers; /* a dialled connection's callbacks (node.c) */
    uv_signal_t sig[2];
    peer **peers;
    int npeers;
    cs *conns;
    cs *coord_link;      /* a plain node: its connection to the coordinator */
    int64_t coord_retry_at;
    char coord_addr[128]; /* the address coord_link dialled */
    int join_i;          /* the --join address to try next */
    /* coordinator terms (docs/architecture.md, "The coordinator") */
    uint64_t term;       /* the highest term heard: a coordinator of a lower one is refused */
    int taking_over;     /* coord_start runs for a takeover */
    struct standby *sb;  /* the standby's state (standby.c; node_int.h) */
    cs *cur_in;          /* the connection whose frame is being processed */
    dep *deps;
    uint32_t max_qid;    /* highest qid whose DEPLOY this node has seen */
    ingsess *ings;
    uint64_t out_batches, out_rows, out_batch_bytes; /* BATCH frames sent */
    uint64_t in_batches;
    uint64_t out_state_bytes, out_state_msgs, in_state_bytes; /* replication */
    coord *co;           /* the coordinator's state, NULL elsewhere */
    /* what the runtime tells the coordinator (set by coord_start; called
     * only while n->co is set): a node dropped BATCHES batches of query QID
     * (0: unknown) for PEER, which it could not reach (LOSS), and this node,
     * the home of the client's ingest (s, req), holds its chunks up to safe
     * (and the stream's log copy does) */
    void (*co_loss)(node *n, const char *from, uint32_t qid, uint64_t batches, const char *to);
    void (*co_ingest_safe)(node *n, cs *s, uint64_t req, uint64_t safe);
    void (*on_drained)(node *n); /* node_task.c: an overflow drained (a replay goes on) */
    /* fault tolerance: where each query first started reading its streams'
     * logs here, by its first id, so that a redeployment replays from there */
    struct ftorigin { uint32_t origin; int nsrc, have; uint64_t off[ENGINE_MAX_SRC]; struct ftorigin *next; } *origins;
    lship *lships;       /* streams homed here whose log is copied (shadow.c) */
    shsess *shsess;      /* ingest sessions of streams copied here */
    uint64_t incarnation; /* random per process: the numbering of data frames (channel.c) */
    int stopping;
    /* measure.c: --speed was given (else the capacity is re-read at every
     * report), the last report's clocks, and the coordinator's store */
    int speed_given;
    uint64_t ms_cpu_ns, ms_wall_ns;
    int64_t ms_report_at;
    uint64_t applied_ns;  /* wall time applying replica state (in_state_bytes of it) */
    meas_store *meas;
};

/* ---------------------------------------------------------------- node_base.c */

void node_log(node *n, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *node_state_name(int state);
/* The next tick in MS ms (then every NODE_TICK_MS): what coord_tick waits
 * for is due then. */
void node_tick_in(node *n, unsigned ms);
/* The 64-bit hash of an output row that exactly-once delivery compares
 * (the coordinator's sink dedup and a client attaching again). */
uint64_t row_hash(const val *row, int ncols);

/* ---------------------------------------------------------------- node_conn.c */

peer *node_peer(node *n, const char *name, size_t len); /* find */
peer *node_peer_add(node *n, const char *name, const char *domain, const char *addr);
/* The connection to send to p on, connecting when there is none. */
cs *node_link(node *n, peer *p);
/* A connection to ADDR ("host:port") for a node we know no name of; NULL
 * when it cannot be started. */
cs *node_dial(node *n, const char *addr);
/* Queue a frame to d (never dropped; see the backpressure note above). */
int cs_send(cs *d, uint8_t type, uint16_t flags, const void *p, size_t len);
int cs_send_msg(cs *d, const wire_msg *m);
/* RESULT parts and errors to a requester. */
int cs_result(cs *d, uint64_t req, uint16_t flags, int part, uint32_t nrows, const void *p, size_t len);
int cs_error(cs *d, uint64_t req, int code, const char *msg);
/* The end of an ingest (RES_DONE, with st's counts; NULL: none). */
void node_send_done(cs *to, uint64_t req, const exec_ingest_stats *st);

/* ---------------------------------------------------------------- node_task.c */

/* Deploy / undeploy on this node (the coordinator calls these for itself). */
int node_deploy(node *n, uint32_t qid, const void *plan, size_t len, const exec_out *out, xerr *err);
int node_undeploy(node *n, uint32_t qid, int keep_state, xerr *err);

/* ---------------------------------------------------------------- node_home.c */

/* Feed an INGEST frame at this node (the stream's home). */
/* quiet: the coordinator's own shadow session of a stream (answers nothing
 * until its home is lost; node_ingest_loud then makes it answer). */
void node_ingest(node *n, cs *from, const wire_msg *m, int quiet);
/* An INGEST a client sent straight to this node (RES_HOME): fed as at the
 * home when its stream's home is here and its log has a copy elsewhere;
 * else refused (the client asks the coordinator again). */
void node_direct_ingest(node *n, cs *from, const wire_msg *m);
int node_ingest_loud(node *n, cs *from, uint64_t req);
/* The chunks of the client's ingest session (s, req) that can be
 * acknowledged: all fed ones, or those the stream's log copy holds. */
uint64_t node_ingest_safe(node *n, cs *s, uint64_t req, uint64_t fed);
/* A TICK: end the stream's partial slice, in order with its input. */
void node_tick(node *n, const char *stream, size_t len);
/* DERIVE from the coordinator: a derived stream's rows and watermark
 * (engine_stream_feed); the coordinator calls it for its own node too. */
void node_derive(node *n, const char *stream, size_t len, int64_t wm, const void *rows, size_t nrows_bytes);
/* Write a schema as a RES_BEGIN part body. */
int res_begin_put(sbuf *b, const fmt_schema *s, int stream);
/* A statement's output sent on as RESULT parts (BEGIN, ROWS, END, NOTICE)
 * of request req on `to`; b is scratch, the caller's to init and fini. */
typedef struct node_fwd {
    cs *to;
    uint64_t req;
    sbuf b;
} node_fwd;
exec_out node_fwd_out(node_fwd *f);

/* ---------------------------------------------------------------- channel.c */

int chan_data_type(int type); /* BATCH, WATERMARK, STATE_DELTA, RESUME, REPLICA_ACK */
/* Send a data frame to p, numbered and kept until p acknowledges it; 0 also
 * when no connection stands (it goes once one does); XE_IO when p is dead. */
int chan_send(node *n, peer *p, uint8_t type, const void *payload, size_t len);
/* A CHANNEL, CHACK or data frame arrived on s: 1 when it is consumed or
 * must be skipped (a duplicate, or from an old connection). */
int chan_recv(node *n, cs *s, const wire_msg *m);
void chan_ack(node *n, peer *p);
void chan_tick(node *n);
void chan_closed(node *n, cs *s);
void chan_free(peer *p);

/* ---------------------------------------------------------------- shadow.c */

/* The coordinator made this node the home of stream: copy its log to
 * shadow ("" = none) and, with source, start reading the stream's socket. */
/* fed: the shadow gets the input from the coordinator; the home only tells
 * it where its log begins (retention). */
void node_logshadow(node *n, const char *stream, const char *shadow, const char *source, int fed);
void shadow_frame(node *n, cs *s, const wire_msg *m); /* LOGSHIP, LOGACK */
void shadow_tick(node *n);
void shadow_ship_soon(node *n, const char *stream);   /* input went into the stream */
int shadow_guarded(node *n, const char *stream);      /* its log has a copy to wait for */
/* The chunks of every ingest session of stream that are safe (RES_ACKED). */
void node_ingest_acks(node *n, const char *stream);
/* An ingest's end, answered once the copy holds it. */
void shadow_done_later(node *n, const char *stream, cs *to, uint64_t req, const exec_ingest_stats *st, exec_late *late);
/* fn(n, req) once the copy holds the stream's log as it is now (at once
 * when it has no copy). */
void shadow_call_later(node *n, const char *stream, void (*fn)(node *n, uint64_t req), uint64_t req);
/* A client's ingest session the home had: load its decoder into in; 1 and
 * *seq (its chunks fed) when the copy had it, 0 when not. */
int shadow_session(node *n, const char *stream, uint64_t session, exec_ingest *in, uint64_t *seq, xerr *err);
void shadow_conn_closed(node *n, cs *s);
void shadow_free(node *n);

/* ---------------------------------------------------------------- coord.c */

int coord_start(node *n, xerr *err);
void coord_stop(node *n);
void coord_tick(node *n);
/* A frame on a connection from a node or a client (the coordinator only). */
void coord_frame(node *n, cs *s, const wire_msg *m, const wire_frame *f);
void coord_ready(node *n, cs *s);
void coord_closed(node *n, cs *s);

/* ---------------------------------------------------------------- standby.c: the coordinator's side */

/* A standby becomes the active coordinator of term (the majority of members
 * lost the active and granted it). */
int coord_takeover(node *n, uint64_t term, xerr *err);
/* 1 while the coordinator accepts clients (not during a takeover, not fenced). */
int coord_serving(node *n);
/* A node refused us: a coordinator of a newer term is active. */
void coord_deposed(node *n, uint64_t term);
/* The standby's address the coordinator knows ("" if none). */
const char *coord_standby_addr(node *n);

/* ---------------------------------------------------------------- place.c */

/* A node as placement sees it (index 0 is the coordinator). */
typedef struct place_node {
    const char *name, *domain; /* the domain label; equal labels are one failure domain */
    int slots;                 /* players (tasks and replicas) placement may choose to put here;
                                  the tasks pinned here by a query's home come on top */
    double speed;              /* the capacity the game uses, in CPUs */
    int alive;
    /* measured (meas_nodes fills these; zero: not measured, the JOIN's speed
     * and the domain distances are used) */
    int measured;              /* speed is the capacity the node last reported */
    double speed_join;         /* what its JOIN said (EXPLAIN) */
    double util;               /* its process CPU over capacity, smoothed */
    const double *rtt_ms;      /* per node index of this array: the round trip, 0 = unknown; may be NULL */
} place_node;

/* One task's measured inputs (measure.c, meas_query; docs/nirvana.md, "The
 * measured-cost model"), in the game's units. */
typedef struct place_meas {
    double load;         /* CPUs (CPU seconds per second) */
    double state_mb, recovery_s, replica_load, repl_traffic;
    int replica_measured; /* replica_load and repl_traffic are its replicas' (else derived from the primary) */
    double rows_in_s, rows_out_s; /* smoothed rates, for EXPLAIN */
    uint64_t rows_in, cpu_ns;     /* cumulative, for EXPLAIN */
    int ndest;
    const double *traffic; /* per task of the downstream op: link units */
} place_meas;

/* One query's players.  node[t] (per task, plan order) and rnode[t * R + k]
 * (replica k of task t; R = the game's replicas) are node indexes, -1 for
 * none; they are read for fixed queries and written for the others. */
typedef struct place_query {
    const plan_dag *d;
    const char *name;
    const int *home;  /* per task: the node it must run on (a source at its partition's home, the sink), or -1 */
    int *node;
    int *rnode;       /* may be NULL when R = 0 */
    int fixed;        /* 1: its players are pinned where node[]/rnode[] say */
    int running;      /* node[]/rnode[] say where it runs now (its loads are in its nodes' utilisation) */
    int keep_state;   /* place_rebalance: its stateful tasks move only onto a replica's node (a promotion);
                         2: only onto its first replica's (ft = checkpoint: the others hold nothing) */
    const int *avoid; /* place_rebalance: per task, (1 + R) node indexes its primary and its replicas stay off
                         (-1: none); may be NULL */
    /* per task (plan order): measured inputs, which replace the planner's
     * seeds for every task; NULL: the seeds (no measurements yet) */
    const place_meas *meas;
} place_query;

/* The problem built from the cluster and its result. */
typedef struct place_game {
    nirvana_problem *p;
    nirvana_config c;   /* c.strategy as asked; repair_rounds 0 */
    int *first;         /* per query: its first task in p */
    nirvana_result *r;  /* after place_run, place_again or place_score */
    /* per task of p: the planner's seed (its load, recovery and the sum of
     * its outgoing edges' traffic, kept for EXPLAIN) and whether the game
     * got measured inputs instead */
    nirvana_task *seed;
    double *seed_out, *used_out;
    unsigned char *measured;
    int dist_measured;  /* some distance came from round trips */
    /* the measured players' loads and traffic were scaled by peak to the
     * rate the live nodes can carry (place.c, peak_scale); 1: none were */
    double peak;
} place_game;

/* Build the problem: every node (dead ones marked so), every query's tasks
 * and edges (plan_placement_tasks), R replicas per stateful task, and the
 * pins (homes; fixed queries where they are).  The measured inputs replace
 * the seeds where the arguments carry them: a query's meas (its tasks'
 * loads, state, recovery and edge traffic), the nodes' speed (their
 * reported capacity) and rtt_ms (the distances); coord.c's cluster_nodes
 * and pq_of fill them from the store (meas_nodes, meas_query), so a
 * re-placement that builds its problem through them plays on the measured
 * costs.  XE_FULL when no node is alive.  The game is finished with
 * place_game_fini even on failure. */
int place_build(place_game *g, const place_node *nodes, int nn, const place_query *qs, int nq, int replicas,
                nirvana_strategy s, xerr *err);
/* Place the free players with g->c.strategy; the queries that are not
 * fixed get their node[]/rnode[].  XE_FULL when slots run out. */
int place_run(place_game *g, place_query *qs, int nq, xerr *err);
/* After nodes died: nirvana_replace from the current node[]/rnode[] (every
 * query, fixed or not; only the players on dead nodes re-play, the others
 * stay); every query's node[]/rnode[] are rewritten. */
int place_again(place_game *g, place_query *qs, int nq, xerr *err);
/* The capacity rule of a rebalance (nirvana_config.max_util): no measured
 * task or replica moves onto a node its measured load, at the rate it was
 * measured at (not scaled to the peak), would fill past 80 % of its
 * capacity (docs/nirvana.md, "The capacity rule"). */
#define PLACE_MAX_UTIL 0.8

/* Live re-placement (nirvana_rebalance, with hysteresis threshold) from the
 * current node[]/rnode[]; the players of fixed queries and the homes stay,
 * and no move breaks the capacity rule (PLACE_MAX_UTIL).
 * Every query's node[]/rnode[] are rewritten; moves[] (max entries) and
 * *nmoves say what moved, g->r gets the costs after. */
int place_rebalance(place_game *g, place_query *qs, int nq, double threshold, nirvana_rb_move *moves, int max,
                    int *nmoves, xerr *err);
/* Score the current node[]/rnode[] (EXPLAIN PLACEMENT): g->r gets the costs. */
int place_score(place_game *g, const place_query *qs, int nq, xerr *err);
void place_game_fini(place_game *g); /* NULL ok */

/* EXPLAIN PLACEMENT's view of one player's inputs: the planner's seed and
 * the measurement side by side (NAN: not measured), and which the game
 * used.  For a replica, load is its replica_load and traffic its delta
 * stream. */
typedef struct place_inputs {
    int measured;               /* the game used the measured inputs */
    int derived;                /* ... a replica's, derived from its primary's (none of its own yet) */
    double load_seed, load_meas, traffic_seed, traffic_meas, rec_seed, rec_meas;
    double rows_in, rows_in_s, cpu_ms; /* the task's (NAN: not measured) */
} place_inputs;
/* Player `replica` (-1: the task) of task t (plan order) of query q. */
void place_player_inputs(const place_game *g, const place_query *qs, int q, int t, int replica, place_inputs *out);

/* ---------------------------------------------------------------- measure.c */

/* What tasks and nodes cost, measured (docs/nirvana.md, "The measured-cost
 * model").  Every node reports about once a second (report.c, meas_report:
 * a STATS to the coordinator, or straight into its store on the coordinator); the
 * coordinator's store keeps moving averages and turns them into placement
 * inputs.  The store is pure (no I/O), for tests. */
#define MEAS_REPORT_MS 1000
#define MEAS_PEAK_MAX 1000.0  /* the most place_build scales measured rates up by, to the peak */
#define MEAS_TAU_S 5.0        /* time constant of the moving averages (a rate rising) */
#define MEAS_TAU_FALL_S 60.0  /* ... and of a task's rates falling (the larger of the two averages counts) */
#define MEAS_RESTORE_BPS 100e6 /* restore rate until measured: state bytes per second a recovery brings back */
#define MEAS_RESTORE_MIN_BYTES (1u << 20) /* replica state applied before the cluster's rate counts as measured */
#define MEAS_RESTORE_FIXED_S 0.5 /* ... plus this, whatever the state */
#define MEAS_ROW_BYTES 32.0   /* an encoded row when no batch of the op left its node yet */
#define MEAS_LINK_BPS 125e6   /* traffic unit: a 1 Gbit/s link */
#define MEAS_RTT_REF_MS 5.0   /* a round trip this long is distance 1.0 (the cross-domain default) */
#define MEAS_FORGET_MS 30000  /* a task or node not reported this long is forgotten */

meas_store *meas_store_new(void);
void meas_store_free(meas_store *ms); /* NULL ok */
/* The smoothing: one step of an exponentially weighted moving average
 * with time constant MEAS_TAU_S over a sample dt_s seconds after the last;
 * the first sample (first = 1) is taken as it is. */
double meas_ewma(double avg, double sample, double dt_s, int first);
double meas_ewma_tau(double avg, double sample, double dt_s, double tau_s, int first);
/* A counter's growth since the last report; a counter that went down was
 * started again (a restarted process), so all of it is new. */
uint64_t meas_grown(uint64_t now, uint64_t before);
/* A STATS from node `from`, received at now_ms (wall clock). */
int meas_store_take(meas_store *ms, const char *from, const wire_msg *m, int64_t now_ms);
/* Fill pl[i].measured, speed (the reported capacity), speed_join, util and
 * rtt_ms for every node that reported.  The rtt arrays live in the store
 * until its next call. */
void meas_store_nodes(meas_store *ms, place_node *pl, int nn);
/* Query qid's measured inputs, per task of d (plan order), or NULL while
 * some task has not been reported yet (the seeds are used).  prev: the
 * id it ran under before a redeployment (0: none), whose measurements stand
 * in until the new id's arrive.  Lives in the store until its next call. */
const place_meas *meas_store_query(meas_store *ms, uint32_t qid, uint32_t prev, const plan_dag *d);
/* The restore rate recovery_s assumes (bytes per second): the state the
 * nodes' replicas applied over the wall time it took, summed over the
 * nodes, once they applied MEAS_RESTORE_MIN_BYTES; else MEAS_RESTORE_BPS.
 * *measured (may be NULL) says which. */
double meas_store_restore_bps(const meas_store *ms, int *measured);
/* The capacity node `name` reported last and its smoothed utilisation: 1,
 * or 0 when it has not reported. */
int meas_store_node(const meas_store *ms, const char *name, double *capacity, double *util);
/* The distance the game uses between two nodes with these domain defaults
 * and round trip (ms, 0 = unknown): a measured round trip only raises it. */
double meas_distance(double dflt, double rtt_ms);

/* report.c.  The node's side: build and send this node's STATS (every
 * node, from its tick).  The coordinator's side: its store in n->meas
 * (created on first use), which cluster_nodes and pq_of (coord.c) read. */
void meas_report(node *n);
/* A replica of task `task` of d applied len bytes of state changes here in
 * cpu_ns of the thread's CPU (node_task.c, at each STATE_DELTA). */
void meas_replica_applied(dep *d, int task, uint64_t cpu_ns, size_t len);
void meas_take(node *n, const char *from, const wire_msg *m);
void meas_nodes(node *n, place_node *pl, int nn);
const place_meas *meas_query(node *n, uint32_t qid, uint32_t prev, const plan_dag *d);

/* ---------------------------------------------------------------- the DEPLOY plan blob */

/* What every node of a query gets: the node table, every op's parallelism,
 * the task -> node assignment and the CREATE QUERY text.  Views borrow. */
typedef struct deploy_plan {
    int nnodes;
    wire_str names[256], addrs[256], domains[256];
    int nops;
    int par[256];
    int ntasks;
    uint16_t *assign;    /* ntasks entries (owned by the caller of deploy_plan_get: free) */
    wire_str sql;
    uint32_t origin;     /* version 2: the query's first id; != the DEPLOY's id for a
                            redeployment after a failure (0 in version 1) */
    /* version 3 */
    uint8_t ft;          /* engine_ft */
    uint32_t checkpoint_ms;
    uint32_t prev;       /* the id it ran under before (0: a first deployment) */
    int R;               /* replicas per task */
    uint16_t *rassign;   /* ntasks x R node indexes, 0xffff = none (caller frees) */
    int64_t resume_wm;   /* the sink's watermark before the failure (INT64_MIN: none) */
    uint8_t earliest;    /* version 4: offset = 'earliest' (a first deployment reads its logs from their start) */
} deploy_plan;

int deploy_plan_get(const void *p, size_t n, deploy_plan *d, xerr *err); /* node_task.c */

#endif
