/*
 * node_int.h (internal to the node runtime: node_base.c, node_conn.c,
 * node_home.c, node_task.c, standby.c and node.c): what the parts of the
 * runtime call of each other, and the standby's state.  What the rest of
 * cluster/ uses is in node.h.
 *
 * The files are layers, from the bottom; each calls only the ones above it
 * in this list (and channel.c and shadow.c sit just above node_conn.c, the
 * coordinator's coord_*.c files between node_task.c and standby.c):
 *
 *   node_base.c  the bottom, that every part calls: logging, node_tick_in,
 *                node_slow_down, row_hash;
 *   node_conn.c  peers, connections (send, overflow, dial, link delay),
 *                the link to the coordinator;
 *   node_home.c  a stream's home: ingest sessions, statements from the
 *                coordinator and their RESULT forwarding;
 *   node_task.c  the queries deployed here: their hooks, data frames,
 *                RESUME and REPLICA_ACK;
 *   standby.c    coordinator terms, the standby coordinator and the
 *                coordinator's own failover (with coord.h);
 *   node.c       the top: the frame dispatch (cs_on_frame), the connection
 *                callbacks, the tick and the run.
 *
 * A lower file reaches a higher one only through a hook the higher one
 * sets: n->on_tick and n->cs_handlers (node_run), n->co_loss and
 * n->co_ingest_safe (coord_start), n->on_drained (node_task.c).
 */
#ifndef CLUSTER_NODE_INT_H
#define CLUSTER_NODE_INT_H

#include "cluster/node.h"

/* channel of BATCH and WATERMARK frames: operator, input side, task */
#define CHAN(op, side, task) (((uint32_t)(op) << 16) | ((uint32_t)(side) << 15) | (uint32_t)(task))
#define CHAN_OP(ch) ((int)((ch) >> 16))
#define CHAN_SIDE(ch) ((int)(((ch) >> 15) & 1u))
#define CHAN_TASK(ch) ((int)((ch) & 0x7fffu))

#define NODE_DEFAULT_SLOTS 16
#define NODE_HOLD_MS 10000  /* a frame for a query not deployed yet waits this long */
#define NODE_RESUME_MS 3000 /* a source's home waits this long for every RESUME */
#define NODE_RETRY_MS 1000  /* reconnect to a peer or the coordinator */
#define NODE_ORPHAN_MS 30000 /* a client's ingest session waits this long for a new forwarder */

/* Coordinator terms and the standby coordinator (docs/architecture.md,
 * "The coordinator"); the highest term heard is n->term (node.h: coord.c
 * reads and sets it too).  It lives in node_run's frame (n->sb). */
struct standby {
    int standby;         /* --coordinator --join: a standby until it takes over */
    char granted_to[WIRE_NAME_MAX + 1]; /* the standby we granted `term` (it may ask again) */
    char join_hint[128]; /* a takeover named the new coordinator: dial it only, until join_hint_until */
    int64_t join_hint_until;
    int synced;          /* it holds a whole catalog (CATALOG dump) */
    int64_t lost_at;     /* wall ms the active was lost (0: it is up) */
    int64_t coord_lost_at; /* wall ms coord_link last closed, and why (enum net_close_why) */
    int coord_lost_why;
    uint64_t ask;        /* the term it asks the members for (0: none) */
    int64_t ask_at;
    int base_alive;      /* members alive in the last MEMBERSHIP, the coordinator's entry included */
    char rejoin_to[512]; /* deposed: run again as a standby of these (node_run returns NODE_RUN_REJOIN) */
};

/* ---------------------------------------------------------------- node_base.c */

/* --throttle: sleep in proportion to the work done since t0. */
void node_slow_down(node *n, uint64_t t0);
/* The log callbacks node_run hands the net layer and the engine. */
void node_net_log(void *ud, int level, const char *who, const char *msg);
void engine_log_fn(void *ctx, const char *msg);

/* ---------------------------------------------------------------- node.c */

void cs_on_frame(net_conn *c, const wire_frame *f, void *ud);

/* ---------------------------------------------------------------- node_conn.c */

/* A new cs of this kind, first in n->conns. */
cs *cs_new(node *n, int kind);
/* The cross-domain link delay of tests, on s's connection. */
void apply_link_delay(node *n, cs *s);
/* The queue of frames that did not fit: send what fits now, or drop it all. */
void ovf_flush(cs *d);
void ovf_drop(cs *d);
/* d closes: the inputs that waited on it read again. */
void release_waiters(cs *d);
/* Every tick: an overflow that has not moved for NODE_STALL_MS releases
 * the inputs that wait on it (node.h, "Backpressure"). */
void conn_tick(node *n);
void cs_on_writable(net_conn *c, void *ud);
/* JOIN, to the coordinator on s. */
void send_join(node *n, cs *s);
/* The number of --join addresses and the i-th of them in out. */
int join_addr(const node *n, int i, char *out, size_t cap);
/* Paused while waiting on some destination or holding a frame. */
void cs_update_pause(cs *s);
/* Dial the coordinator (the address a takeover named, else --join's). */
void node_connect_coordinator(node *n);
void node_membership(node *n, const wire_msg *m);

/* ---------------------------------------------------------------- node_home.c */

/* Run the statements of a QUERY frame from the coordinator and answer it. */
void node_exec_from_coord(node *n, cs *from, const wire_msg *m);
/* s closed: its ingest sessions end, a client's waits for a new forwarder. */
void node_ingest_conn_closed(node *n, cs *s);
/* Client ingest sessions no forwarder took on in NODE_ORPHAN_MS: closed. */
void node_ingest_orphans(node *n);
void node_ingest_free(node *n);

/* ---------------------------------------------------------------- node_task.c */

/* Hand a BATCH, WATERMARK, STATE_DELTA, RESUME or REPLICA_ACK to the
 * engine.  Returns 1 when it must wait for its query's DEPLOY (node_hold). */
int node_data_frame(node *n, cs *s, const wire_msg *m);
void node_hold(cs *s, const wire_frame *f);
void node_held_timeouts(node *n);
/* Redeployments whose RESUMEs did not all come in time: replay now. */
void node_resume_timeouts(node *n);
void node_tasks_free(node *n); /* the deployed queries and their origins */

/* ---------------------------------------------------------------- standby.c */

void standby_send_term(cs *to, uint64_t term, int kind, const char *name, const char *addr);
void standby_term_frame(node *n, cs *s, const wire_msg *m);
/* A standby's copy of the active coordinator's catalog. */
void standby_catalog_frame(node *n, const wire_msg *m);
void standby_tick(node *n);

#endif
