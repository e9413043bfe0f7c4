/*
 * cluster: the public face of the cluster module.  Two things use it:
 * cluster/node_main.c (the ares-node daemon) and cli/ (ares-sql --connect).
 * Everything else in cluster/ (wire, auth, net, the node runtime and the
 * coordinator) is internal; docs/protocol.md describes the bytes and
 * docs/operations.md how to run a cluster.
 *
 * A node is one process with one engine (exec/) and one libuv loop that runs
 * the engine, every socket and every timer: nothing here takes a lock.  The
 * node that runs with `coordinator` set also keeps the cluster catalog, the
 * membership, places queries and serves clients.
 *
 * A client is a blocking API over a private libuv loop: each call runs that
 * loop until its answer has arrived, so a command-line program can use it
 * like the embedded engine.  Results arrive through exec_out (exec/exec.h),
 * the same callbacks the embedded engine calls, so the shell prints remote
 * rows with the same printer.
 */
#ifndef CLUSTER_H
#define CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "exec/exec.h"

/* ------------------------------------------------------------------ the node */

typedef struct node_config {
    const char *name;        /* node name: 1..64 bytes of [A-Za-z0-9._:-] */
    const char *domain;      /* failure domain label (rack, zone), same alphabet */
    const char *listen;      /* "host:port" to listen on; host defaults to 127.0.0.1 */
    const char *data_dir;    /* the node's LMDB environment */
    const char *join;        /* "host:port" of the coordinator (required unless coordinator) */
    int coordinator;         /* this node keeps the catalog and serves clients */
    int slots;               /* tasks this node accepts (default 16) */
    double speed;            /* capacity the game is told, in CPUs; 0 = measured (base_cpu_capacity:
                                its cgroup quota, else its CPUs) */
    double throttle;         /* test knob: < 1 sleeps (1/throttle - 1) x each batch's time (0 = off) */
    const char *secret_file; /* the cluster secret (required) */
    unsigned link_delay_ms;  /* test only: delay frames to nodes of other domains */
    unsigned heartbeat_ms;   /* heartbeat period on idle connections; 0 = 100 */
    unsigned dead_ms;        /* a node silent this long is dead; 0 = 800; > 2 * heartbeat_ms */
    int verbose;             /* log debug lines too */
} node_config;

/* A coordinator deposed by a newer term (its standby took over while it was
 * cut off or down) steps down: node_run returns NODE_RUN_REJOIN, and the
 * caller runs it again as a standby coordinator (coordinator = 1, join =
 * rejoin.join, listen = rejoin.listen: the address it had). */
#define NODE_RUN_REJOIN 1
typedef struct node_rejoin {
    char join[512];          /* the active coordinator's address, then others to try */
    char listen[128];
} node_rejoin;

/* Run a node until SIGINT or SIGTERM (or a fatal error at start-up).
 * Returns 0 after an orderly stop, NODE_RUN_REJOIN (rejoin filled in) when
 * deposed, or a negative code with err set. */
int node_run(const node_config *cfg, node_rejoin *rejoin, xerr *err);

/* ------------------------------------------------------------------ the client */

typedef struct clu_client clu_client;

typedef struct clu_client_opts {
    const char *addrs;       /* "host:port[,host:port...]": tried in order */
    const char *secret_file; /* the cluster secret (required) */
    const char *name;        /* our name in HELLO; NULL = "ares-sql" */
    unsigned timeout_ms;     /* connect and handshake, per address; 0 = 5000 */
    int (*interrupted)(void); /* may be NULL; nonzero ends a failover's search at once (Ctrl-C) */
} clu_client_opts;

/* Connect and authenticate.  XE_AUTH when the coordinator refused our
 * secret, XE_IO when no address answered; err says which and why. */
int clu_client_open(const clu_client_opts *o, clu_client **out, xerr *err);
/* Close the connection; open results end (their end callback runs).  NULL ok. */
void clu_client_free(clu_client *c);

/* Run the statements of sql on the coordinator and wait for them to finish.
 * Notices and results go to out.  A push query (bare SELECT) and SUBSCRIBE
 * leave their result open: rows keep arriving, during this and later calls,
 * until the query ends (its inputs ended) and out's end callback runs; so out
 * and what it points to must stay valid until then or until clu_client_free.
 * Returns 0, or a negative code with err set (the coordinator's error for a
 * failed statement, XE_IO when the connection was lost). */
int clu_client_exec(clu_client *c, const char *sql, const exec_out *out, xerr *err);

typedef struct clu_ingest_opts {
    fmt_kind format;        /* FMT_CSV or FMT_JSON, when format_set */
    int format_set;         /* else the stream's own format (its WITH format, else CSV) */
    fmt_header header;      /* CSV header handling */
    char delim;             /* CSV: 0 means the stream's */
    const char *null_string; /* CSV: NULL means the stream's */
    int end_of_stream;      /* at the end of the input the stream ends (--end) */
    fmt_reject_fn *on_reject; /* the first FMT_KEEP_REJECTS rejections, in order */
    fmt_reject_fn *on_notice; /* news that rejects nothing (a header column ignored); line 0 */
    void *ctx;
    int (*stop)(void *ctx); /* polled while reading; non-zero cuts the input short */
} clu_ingest_opts;

/* Feed everything read from fd to stream (through the coordinator to the
 * stream's home node) and wait until the home node has taken it all.
 * st gets the home node's counts.  0; XE_BUSY when o->stop cut the input
 * short (the stream then does not end); or a negative code with err set. */
int clu_client_ingest(clu_client *c, const char *stream, int fd, const clu_ingest_opts *o,
                      exec_ingest_stats *st, xerr *err);

/* Serve the connection (heartbeats, rows of open results) for up to
 * timeout_ms.  0, or XE_IO once the connection is lost. */
int clu_client_poll(clu_client *c, int timeout_ms, xerr *err);

/* Results still open (push queries and subscriptions). */
int clu_client_open_results(const clu_client *c);
/* Stop every open push query and subscription (CANCEL): the coordinator
 * ends them, and their end callbacks run once the rows already on their
 * way are in (at most timeout_ms; then they end here).  0, or XE_IO. */
int clu_client_cancel(clu_client *c, int timeout_ms, xerr *err);
/* The client's private loop, for a caller that sleeps on its backend fd
 * (uv_backend_fd, uv_backend_timeout) and then calls clu_client_poll(c, 0). */
struct uv_loop_s *clu_client_loop(clu_client *c);

#endif
