/*
 * client_int.h (internal to the cluster client: client.c and
 * client_ingest.c): the client's state and what client_ingest.c calls of
 * client.c.  The contract is in cluster.h.
 *
 * The two files are layers: client.c is the connection (handshake,
 * failover, results, statements), client_ingest.c the ingest session on
 * top of it (chunks kept until acknowledged, resent after a failover or a
 * move to the stream's home).  client.c calls nothing of client_ingest.c;
 * it only sets the fields the ingest reads (RES_ACKED frees the chunks
 * acknowledged, RES_HOME and RES_RESEND set go_home and resend).
 */
#ifndef CLUSTER_CLIENT_INT_H
#define CLUSTER_CLIENT_INT_H

#include "cluster/node.h"

#define FAILOVER_MS 30000               /* how long to look for a serving coordinator */
#define KEEP_MS 60000                   /* a subscription's rows kept for attaching again */
#define FAILOVER_DEAD_MS 2000           /* silence of the coordinator that starts a failover */
#define FAILOVER_CONNECT_MS 1000        /* connect and handshake, per address, while failing over */
#define HOME_RETRY_MS 100               /* a home that could not be reached: ask the coordinator again after this */

typedef struct cres {
    uint64_t req;
    exec_out out;
    int ncols;
    char **names;
    sql_type *types;
    char *name;         /* a subscription's query (RES_NAME): it can attach again */
    int64_t wm;         /* the sink's watermark of its last rows (RES_WM) */
    rowtab rows;        /* the rows it got (by row_hash, count: how often), for attaching again */
    struct cres *next;
} cres;

/* An ingest chunk not yet acknowledged. */
typedef struct chunk {
    struct chunk *next;
    uint64_t seq, line0;
    int last, end;
    size_t len;
    unsigned char data[];
} chunk;

struct clu_client {
    uv_loop_t loop;
    int loop_ok;
    net_ctx *net;
    net_conn *c;
    auth_secret secret;
    int ready, closed, why;
    char close_msg[300];
    uint64_t next_req;
    /* the request in flight */
    uint64_t cur;
    int cur_done, cur_rc;
    char cur_msg[1024];
    exec_out cur_out;
    const clu_ingest_opts *ing;
    exec_ingest_stats ing_st;
    int writable;
    cres *results;
    batch rb;
    uv_timer_t timer;
    /* failover */
    char addrs[1024];
    unsigned timeout_ms;
    int (*interrupted)(void);
    int active;         /* the coordinator announced its term on this connection */
    int at;             /* the index in addrs of the address connected to */
    uint64_t term;
    int failovers;
    /* the ingest session in flight */
    const char *ing_stream;
    uint64_t session, next_seq, lines_sent;
    int resend;          /* RES_RESEND came: the stream's home moved (a copy of its log took over) */
    chunk *unacked, *unacked_tail;
    size_t unacked_bytes;
    /* an ingest straight to the stream's home */
    int may_direct;      /* this ingest asks for it (no result is open) */
    int go_home;         /* RES_HOME came: move to home_addr */
    char home_addr[128], home_name[WIRE_NAME_MAX + 1];
    int away;            /* the connection is to a home, not to the coordinator */
    uint64_t lost_at;    /* the home was lost at (mono ns), until a chunk is acknowledged again */
};

/* client.c */
void cl_spin(clu_client *c, unsigned ms); /* run the loop once, waking at least every ms */
int cl_send_wait(clu_client *c, uint8_t type, uint16_t flags, const void *p, size_t len, xerr *err);
int cl_failover(clu_client *c, xerr *err);
int cl_back_to_coord(clu_client *c, xerr *err);
int cl_connect_home(clu_client *c, xerr *err);
int cl_ready_for_request(clu_client *c, xerr *err);

#endif
