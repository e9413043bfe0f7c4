/*
 * net: authenticated, framed connections over libuv.  Internal header of the
 * cluster module; the daemon, the coordinator and `ares-sql --connect` build
 * on it.  docs/protocol.md describes what goes over the wire.
 *
 * Threading: everything runs on the one uv loop given to net_ctx_new; no
 * locks, no calls from other threads.  Nothing blocks the loop.
 *
 * Objects and ownership:
 *   net_ctx       configuration shared by listeners and connections (our name,
 *                 role, a copy of the secret, limits, the log function).
 *   net_listener  a listening socket; accepted connections get its handlers.
 *   net_conn      one TCP connection.  The layer owns it: it is freed after
 *                 its uv handles have closed, never inside a callback.  The
 *                 owner's pointer stays valid until on_close has returned.
 *
 * Life of a connection: TCP connect/accept -> handshake (HELLO, mutual
 * HMAC challenge-response; see auth.h) -> on_ready -> frames both ways ->
 * on_close (exactly once for every connection the owner has seen: outgoing
 * ones from net_connect, accepted ones once on_ready ran).  Before on_ready the
 * owner sees no frame, and only HELLO, AUTH_* and ERROR frames are accepted from
 * the peer; anything else closes the connection.  HEARTBEAT frames are
 * consumed here; BYE closes the connection in order.
 *
 * Closing: net_close (orderly: BYE, flush, close) and net_abort (now) may be
 * called from any callback, including the connection's own.  The close takes
 * effect after the current callback: no further on_frame is delivered, and
 * the memory lives until on_close.  A peer that breaks the protocol gets an
 * ERROR frame and is closed; the event is logged; other connections go on.
 *
 * Backpressure, send side: net_send refuses with XE_BUSY once the bytes
 * queued on the connection (written to libuv but not yet on the socket, plus
 * frames held by the send delay) reach send_hwm; on_writable fires once they
 * drain to send_hwm/2.  Receive side: net_pause stops reading the socket
 * (uv_read_stop), so the kernel buffers fill and TCP pushes back on the
 * sender; net_resume starts again, first delivering frames that were already
 * read.  While paused the dead-peer timer is suspended.
 *
 * Failure detection: each ready connection sends a HEARTBEAT every
 * heartbeat_ms unless bytes are already queued (they prove we live), and
 * closes with NET_CLOSE_DEAD once nothing has come from the peer for dead_ms
 * (client_dead_ms for a client peer).  The same silence limit holds during
 * the handshake of a connection we made: a peer whose kernel accepted the
 * TCP connection but that sends nothing for dead_ms (a stopped process) is
 * closed with NET_CLOSE_DEAD, not waited for until the handshake deadline.
 * And an address whose last connection from us died of silence or never
 * answered gets at most dead_ms, not handshake_ms, to answer the next
 * net_connect, until a connection to it succeeds again: a peer that is cut
 * off or stopped does not hold every reconnect (and the frames waiting for
 * it) for seconds.  Bytes waiting unread in the socket end a silence:
 * after our own loop was blocked (a long batch, a replay, a commit, a
 * SIGSTOP), the bytes that arrived meanwhile are read before anyone is
 * declared dead.  A loop that goes more than dead_ms/2
 * without polling logs a warning, because its own heartbeats were late too:
 * a peer's heartbeats cannot be sent while its loop is blocked, so a node
 * busy for longer than dead_ms looks dead to the others.
 *
 * Memory bound per connection (both directions together):
 *   NET_READ_CHUNK read buffer (64 KiB)
 *   + decoder reassembly <= max_frame (<= WIRE_MAX_PREAUTH before auth)
 *   + send queue < send_hwm + one frame (<= max_frame + 16) + NET_CTL_SLACK
 *   + ~1 KiB of bookkeeping.
 * With the defaults (max_frame 1 MiB, send_hwm 4 MiB) that is under 6.2 MiB.
 */
#ifndef CLUSTER_NET_H
#define CLUSTER_NET_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/base.h"
#include "cluster/auth.h"
#include "cluster/wire.h"

#define NET_READ_CHUNK (64u * 1024)
#define NET_DEFAULT_HWM (4u * 1024 * 1024)
#define NET_DEFAULT_MAX_FRAME (1u * 1024 * 1024) /* payload bytes; up to WIRE_MAX_PAYLOAD */
/* Failure detection (docs/operations.md, "Failure detection"): a heartbeat
 * every 100 ms on a connection that sends nothing else, a node peer silent
 * for 800 ms is dead.  A client may sit in a slow write to its terminal, so
 * a client peer gets the longer limit. */
#define NET_DEFAULT_HEARTBEAT_MS 100
#define NET_DEFAULT_DEAD_MS 800
#define NET_DEFAULT_CLIENT_DEAD_MS 5000
#define NET_DEFAULT_HANDSHAKE_MS 5000
#define NET_DEFAULT_MAX_CONNS 1024
/* How many silent addresses net_connect remembers ("Failure detection" above). */
#define NET_SILENT_ADDRS 64
/* net_send_ctl may go this far past send_hwm, for small control frames. */
#define NET_CTL_SLACK (64u * 1024)
#define NET_CTL_MAX 512 /* largest payload net_send_ctl accepts */
/* An orderly close waits at most this long for queued bytes to drain. */
#define NET_FLUSH_MS 2000

typedef struct net_ctx net_ctx;
typedef struct net_listener net_listener;
typedef struct net_conn net_conn;

/* base's log levels (base_log_level_name names them) */
enum net_log_level {
    NET_LOG_DEBUG = BASE_LOG_DEBUG,
    NET_LOG_INFO = BASE_LOG_INFO,
    NET_LOG_WARN = BASE_LOG_WARN,
    NET_LOG_ERROR = BASE_LOG_ERROR
};
/* A log sink.  peer is "ip:port" plus " name" once known, or NULL for
 * messages about no connection (a listener).  msg has no newline. */
typedef void (*net_log_fn)(void *ud, int level, const char *peer, const char *msg);
/* The default sink: "2024-05-01T12:00:00.123Z net WARN [127.0.0.1:40312 n2] msg" on stderr. */
void net_log_stderr(void *ud, int level, const char *peer, const char *msg);

/* Why a connection closed (on_close's `why`). */
enum net_close_why {
    NET_CLOSE_LOCAL = 0, /* net_close / net_abort / net_ctx_free by the owner */
    NET_CLOSE_PEER,      /* the peer said BYE or closed its end */
    NET_CLOSE_IO,        /* socket error, connection refused or reset */
    NET_CLOSE_TIMEOUT,   /* connect or handshake not done in time */
    NET_CLOSE_DEAD,      /* nothing received for dead_ms */
    NET_CLOSE_PROTO,     /* the peer broke the protocol (bad frame, wrong order) */
    NET_CLOSE_AUTH,      /* the secret proof failed, either way */
    NET_CLOSE_VERSION,   /* no common wire version */
    NET_CLOSE_LIMIT,     /* too many connections */
};
const char *net_close_name(int why);

typedef struct net_config {
    const char *name;          /* our name in HELLO (required, wire_name_ok) */
    uint8_t role;              /* enum wire_role (required) */
    const auth_secret *secret; /* required; copied */
    unsigned heartbeat_ms;     /* heartbeat period; 0 = default */
    unsigned dead_ms;          /* peer declared dead after this silence; 0 = default.
                                  Must exceed 2 * heartbeat_ms.  Detection lands within
                                  [dead_ms, dead_ms + 2 * heartbeat_ms) on a loop that is
                                  not blocked. */
    unsigned client_dead_ms;   /* the same for a peer whose role is client; 0 = default */
    unsigned handshake_ms;     /* accepted connections must authenticate within; 0 = default */
    size_t send_hwm;           /* send-queue high-water mark in bytes; 0 = default */
    uint32_t max_frame;        /* largest payload after auth; 0 = default */
    unsigned max_conns;        /* open connections (all states) per ctx; 0 = default */
    unsigned send_delay_ms;    /* initial net_set_send_delay_ms of every connection (tests) */
    int sock_buf;              /* SO_SNDBUF/SO_RCVBUF for each connection (the kernel doubles
                                  it); 0 = kernel default.  Bounds kernel-side buffering. */
    net_log_fn log;            /* NULL = net_log_stderr */
    void *log_ud;
    int log_level;             /* least level logged; default NET_LOG_DEBUG (0) logs all */
} net_config;

/* The owner's callbacks; any may be NULL.  ud is the owner's pointer. */
typedef struct net_handlers {
    /* Handshake done: net_peer_name/role/version are valid, net_send works. */
    void (*on_ready)(net_conn *c, void *ud);
    /* One frame (never HELLO, AUTH_*, HEARTBEAT or BYE).  f->payload is valid
     * during the call only.  May call net_send, net_pause, net_close, ... */
    void (*on_frame)(net_conn *c, const wire_frame *f, void *ud);
    /* The send queue drained to send_hwm/2 after net_send said XE_BUSY. */
    void (*on_writable)(net_conn *c, void *ud);
    /* Last call for c.  why: enum net_close_why; msg says more.  c is freed
     * when this returns; it may no longer be used. */
    void (*on_close)(net_conn *c, int why, const char *msg, void *ud);
} net_handlers;

/* A context on loop.  cfg and the strings it points at are copied.
 * XE_INVAL for a bad name, role, secret or limit (dead_ms <= 2 * heartbeat_ms). */
int net_ctx_new(uv_loop_t *loop, const net_config *cfg, net_ctx **out, xerr *e);
/* Close every listener and connection (on_close runs for each, why LOCAL)
 * and free ctx once the last handle has closed: keep running the loop until
 * uv_run returns.  NULL ok.  Safe from a callback (nothing is freed before
 * it returns); ctx must not be used afterwards. */
void net_ctx_free(net_ctx *ctx);
size_t net_ctx_nconns(const net_ctx *ctx); /* open connections, all states */
unsigned net_ctx_heartbeat_ms(const net_ctx *ctx); /* in effect (defaults applied) */
unsigned net_ctx_dead_ms(const net_ctx *ctx);      /* in effect, for node peers */
/* The role our HELLO announces on connections made from now on (a standby
 * coordinator that takes over becomes WIRE_ROLE_COORDINATOR). */
/* New connections announce ROLE from now on; one past its HELLO keeps (and
 * proves) the role it announced. */
void net_ctx_set_role(net_ctx *ctx, uint8_t role);
/* Log through ctx's sink (for the owner's own lines); c may be NULL. */
void net_log(net_ctx *ctx, net_conn *c, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Listen on host:port.  host NULL means 127.0.0.1 (loopback unless told
 * otherwise; "0.0.0.0" or "::" for all interfaces).  port 0 picks a free
 * one: read it back with net_listener_port.  Numeric addresses and
 * "localhost" only.  Accepted connections start with handlers h and ud. */
int net_listen(net_ctx *ctx, const char *host, int port, const net_handlers *h, void *ud,
               net_listener **out, xerr *e);
int net_listener_port(const net_listener *l);
/* Stop listening; accepted connections are not affected.  Freed later. */
void net_listener_close(net_listener *l);

/* Connect to host:port (numeric or "localhost").  timeout_ms bounds the TCP
 * connect plus the handshake (0 = handshake_ms).  On success *out is the new
 * connection: on_ready or on_close follows, never inside this call. */
int net_connect(net_ctx *ctx, const char *host, int port, unsigned timeout_ms,
                const net_handlers *h, void *ud, net_conn **out, xerr *e);

/* Replace the owner callbacks (e.g. in on_ready of an accepted connection). */
void net_set_handlers(net_conn *c, const net_handlers *h, void *ud);

/* Queue one frame of the given type.  Returns 0; XE_BUSY when the queue is
 * at send_hwm (nothing queued; wait for on_writable); XE_INVAL before
 * on_ready, for a handshake/heartbeat/BYE type or a payload over max_frame;
 * XE_IO once the connection is closing; XE_NOMEM. */
int net_send(net_conn *c, uint8_t type, uint16_t flags, const void *payload, size_t len);
/* Encode and send a typed message (same results, plus wire encode errors). */
int net_send_msg(net_conn *c, const wire_msg *m);
/* For small control frames (ACK, CREDIT, ERROR) that must not wait behind
 * data: payload <= NET_CTL_MAX, allowed up to send_hwm + NET_CTL_SLACK. */
int net_send_ctl(net_conn *c, uint8_t type, uint16_t flags, const void *payload, size_t len);
size_t net_queued(const net_conn *c); /* bytes queued, see above */

void net_pause(net_conn *c);
void net_resume(net_conn *c);
int net_paused(const net_conn *c);
/* How long the peer has been silent (ms): since the last byte we read from
 * it; 0 while paused or while bytes from it wait unread in the socket. */
uint64_t net_silent_ms(const net_conn *c);

/* Orderly close: send BYE(reason), flush (at most NET_FLUSH_MS), close.
 * on_close gets NET_CLOSE_LOCAL.  Idempotent; a no-op once closing. */
void net_close(net_conn *c, const char *reason);
/* Close now; queued frames are dropped.  why and the message reach on_close
 * and the log. */
void net_abort(net_conn *c, int why, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Hold every frame sent from now on for ms before writing it (order is kept;
 * 0 turns it off).  For tests that model cross-domain latency. */
void net_set_send_delay_ms(net_conn *c, unsigned ms);

int net_is_ready(const net_conn *c);
const char *net_peer_name(const net_conn *c); /* "" before the peer's HELLO */
int net_peer_role(const net_conn *c);         /* enum wire_role, 0 before HELLO */
const char *net_peer_addr(const net_conn *c); /* "ip:port" */
uint8_t net_version(const net_conn *c);       /* negotiated; 0 before */
int net_is_initiator(const net_conn *c);

typedef struct net_stats {
    uint64_t frames_in, frames_out, bytes_in, bytes_out;
    uint64_t heartbeats_in, heartbeats_out;
    size_t queued, queued_max; /* now, and the most ever */
    size_t mem;                /* bytes this connection holds allocated now */
} net_stats;
void net_get_stats(const net_conn *c, net_stats *s);
/* The smoothed round trip to the peer, from heartbeats that echo ours
 * (docs/protocol.md, HEARTBEAT); 0 until one has been timed or for NULL. */
uint32_t net_rtt_us(const net_conn *c);
/* The least of the last 32 round trips timed (0 as net_rtt_us): the path's
 * own delay, without the time either end's loop held the heartbeat before
 * it ran (a node at its CPU quota holds it for up to a period), as TCP
 * keeps min_rtt beside its SRTT (RFC 6298; BBR's RTprop).  The nodes
 * report this one in STATS, for the distances of placement. */
uint32_t net_rtt_min_us(const net_conn *c);

#endif
