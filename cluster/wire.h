/*
 * wire: the Ares cluster wire protocol, frames and message payloads.
 * Internal header of the cluster module; docs/protocol.md is the reference.
 *
 * A frame is a 16-byte header followed by `length` payload bytes:
 *
 *   off  size  field
 *   0    4     magic "ARES" (0x41 0x52 0x45 0x53)
 *   4    1     version  (wire protocol version, negotiated in HELLO)
 *   5    1     type     (enum wire_type)
 *   6    2     flags    (big-endian, meaning per type; WIRE_F_LAST)
 *   8    4     length   (big-endian, payload bytes only)
 *   12   4     CRC32C   (big-endian, over bytes 0..11 then the payload)
 *
 * All integers on the wire are big-endian.  Strings are a u16 length then
 * bytes, blobs a u32 length then bytes; neither is NUL-terminated.  The
 * message types and their payloads are written once, in wire.def.
 *
 * This file is pure: no sockets, no allocation except the decoder's frame
 * buffer and the caller's sbuf.  Views (wire_str, wire_frame.payload) borrow
 * the bytes they point at; copy what must outlive the callback or buffer.
 * Nothing here is thread-aware: one decoder belongs to one connection.
 */
#ifndef CLUSTER_WIRE_H
#define CLUSTER_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

#define WIRE_MAGIC 0x41524553u /* "ARES" */
#define WIRE_HDR_SIZE 16
/* Oldest and newest wire versions this build speaks. */
#define WIRE_FMT_STREAM 255 /* ingest.format: the stream's own format */
#define WIRE_VERSION_MIN 1
#define WIRE_VERSION_MAX 1
/* Hard ceiling on a whole frame (header + payload): 16 MiB.  A decoder may be
 * set lower, never higher.  Larger things (snapshots) go in chunks. */
#define WIRE_MAX_FRAME (16u * 1024 * 1024)
#define WIRE_MAX_PAYLOAD (WIRE_MAX_FRAME - WIRE_HDR_SIZE)
/* Payload ceiling before authentication completes: an unauthenticated peer
 * cannot make us buffer more than this. */
#define WIRE_MAX_PREAUTH 4096u
/* Node and client names in HELLO/JOIN: 1..64 bytes of [A-Za-z0-9._:-]. */
#define WIRE_NAME_MAX 64
#define WIRE_NONCE_SIZE 32
#define WIRE_MAC_SIZE 32

/* Frame flags.  Only WIRE_F_LAST has a meaning today (last chunk of a
 * RESULT or SNAPSHOT sequence); the decoder passes flags through unchecked. */
#define WIRE_F_LAST 0x0001u
/* UNDEPLOY: keep the tasks' state for the redeployment that follows. */
#define WIRE_F_KEEP 0x0002u
/* JOIN: a standby coordinator (it runs no tasks; it gets CATALOG frames). */
#define WIRE_F_STANDBY 0x0004u
/* QUERY: the client fails over to another coordinator; a push query it
 * starts is kept (in the catalog, and for a while after its connection is
 * lost) so that it can attach again (ATTACH). */
#define WIRE_F_FAILOVER 0x0008u
/* INGEST: the client can send this ingest straight to the stream's home
 * (the coordinator may answer RES_HOME with the home's address instead of
 * forwarding it; docs/architecture.md, "Ingest straight to the home"). */
#define WIRE_F_DIRECT 0x0010u

/* CATALOG ops.  A dump (BEGIN, PUTs, END) replaces the standby's copy. */
enum wire_catalog_op { WIRE_CAT_PUT = 1, WIRE_CAT_DEL = 2, WIRE_CAT_BEGIN = 3, WIRE_CAT_END = 4 };
/* TERM kinds. */
enum wire_term_kind {
    WIRE_TERM_ANNOUNCE = 1, /* coordinator -> node: I am the active coordinator of this term */
    WIRE_TERM_ASK = 2,      /* standby -> node: I take over as this term (name, addr: mine) */
    WIRE_TERM_GRANT = 3,    /* node -> standby: granted (it lost the active too) */
    WIRE_TERM_REFUSE = 4,   /* node -> standby: refused (it still hears the active, or a higher term) */
};

/* The message types, numbered as in wire.def. */
enum wire_type {
#define WIRE_MSG(name, num, body, codec, dir, note, fields) WIRE_##name = num,
#define WIRE_SAME(name, num, body, dir, note) WIRE_##name = num,
#define WIRE_NONE(name, num, dir, note) WIRE_##name = num,
#include "cluster/wire.def"
    WIRE_TYPE_MAX = WIRE_DERIVE
};

#define WIRE_LOGSHADOW_FED 1

/* Roles announced in HELLO. */
enum wire_role { WIRE_ROLE_NODE = 1, WIRE_ROLE_COORDINATOR = 2, WIRE_ROLE_CLIENT = 3 };

/* Name of a type ("HELLO"), or "?" for an unknown one. */
const char *wire_type_name(int type);
const char *wire_role_name(int role);
/* 1 if name is a valid node/client name (see WIRE_NAME_MAX). */
int wire_name_ok(const char *p, size_t n);

/* ------------------------------------------------------------------ frames */

/* A decoded frame.  payload borrows the decoder's or the input's bytes and is
 * valid only during the callback that receives it. */
typedef struct wire_frame {
    uint8_t version, type;
    uint16_t flags;
    uint32_t length;
    const unsigned char *payload;
} wire_frame;

/* Write one whole frame (header + payload) to the end of out. */
int wire_encode(sbuf *out, uint8_t version, uint8_t type, uint16_t flags, const void *payload,
                size_t len);
/* Fill a 16-byte header for a payload that follows it (computes the CRC). */
void wire_header_put(unsigned char hdr[WIRE_HDR_SIZE], uint8_t version, uint8_t type,
                     uint16_t flags, const void *payload, uint32_t len);

/* Why a decoder stopped.  Each maps to a base error code (wire_err_code). */
enum wire_err {
    WIRE_OK = 0,
    WIRE_EMAGIC,   /* XE_PROTO: not our protocol */
    WIRE_EVERSION, /* XE_VERSION: version outside the range or not the negotiated one */
    WIRE_ETYPE,    /* XE_PROTO: unknown type */
    WIRE_ETOOBIG,  /* XE_PROTO: length above the decoder's maximum */
    WIRE_ECRC,     /* XE_CORRUPT: checksum mismatch */
    WIRE_ETRUNC,   /* XE_PROTO: input ended inside a frame (wire_dec_finish) */
    WIRE_ECALLER,  /* the frame callback returned an error */
};
int wire_err_code(int wire_err);

/* Incremental decoder.  It lives on the connection; feed it whatever the
 * socket produced (a frame split anywhere, several frames per chunk).  It
 * checks magic, version, type and length as soon as the header is complete,
 * before buffering any payload, then the CRC once the payload is in.  After
 * an error it stays failed: every later feed returns the same error. */
typedef struct wire_dec {
    unsigned char hdr[WIRE_HDR_SIZE];
    size_t hdr_got;       /* header bytes collected */
    uint32_t length;      /* payload length of the current frame, once hdr complete */
    unsigned char *buf;   /* payload reassembly (owned), only for split frames */
    size_t buf_got, buf_cap;
    uint32_t max_payload; /* limit on length; <= WIRE_MAX_PAYLOAD */
    uint8_t vmin, vmax;   /* accepted header versions */
    int err;              /* enum wire_err, sticky */
    uint64_t frames;      /* frames emitted */
} wire_dec;

/* The frame callback: 0 to go on, WIRE_STOP to return from wire_dec_feed
 * right after this frame (the caller pauses), or a negative code to fail. */
#define WIRE_STOP 1
typedef int (*wire_frame_cb)(void *ud, const wire_frame *f);

void wire_dec_init(wire_dec *d, uint32_t max_payload); /* 0 = WIRE_MAX_PAYLOAD */
void wire_dec_fini(wire_dec *d);
/* Accept only header versions in [vmin, vmax] (after negotiation: v, v). */
void wire_dec_set_versions(wire_dec *d, uint8_t vmin, uint8_t vmax);
void wire_dec_set_max(wire_dec *d, uint32_t max_payload);
/* Feed n bytes.  Sets *used to the bytes consumed: all n, unless the callback
 * returned WIRE_STOP (then the rest must be fed again later) or an error
 * occurred.  Returns 0, or a negative code with e->msg saying exactly what
 * was wrong (offset, expected and found values). */
int wire_dec_feed(wire_dec *d, const void *p, size_t n, size_t *used, wire_frame_cb cb,
                  void *ud, xerr *e);
/* End of input: an error (WIRE_ETRUNC) if a frame was only partly received. */
int wire_dec_finish(wire_dec *d, xerr *e);
/* 1 if the decoder holds part of a frame. */
int wire_dec_midframe(const wire_dec *d);
/* Bytes the decoder currently holds allocated (for the memory bound). */
size_t wire_dec_mem(const wire_dec *d);

/* ------------------------------------------------------------ payload codec */

/* A borrowed byte string: not NUL-terminated. */
typedef struct wire_str {
    const char *p;
    uint32_t n;
} wire_str;
wire_str wire_str_of(const char *s); /* view of a C string (NULL -> empty) */

/* Payload writer: appends to a caller-owned sbuf; the first failure sticks
 * (XE_NOMEM, or XE_INVAL for an over-long string) and wire_wr_end reports it. */
typedef struct wire_wr {
    sbuf *b;
    int err;
} wire_wr;
void wire_wr_init(wire_wr *w, sbuf *b);
void wire_put_u8(wire_wr *w, uint8_t v);
void wire_put_u16(wire_wr *w, uint16_t v);
void wire_put_u32(wire_wr *w, uint32_t v);
void wire_put_u64(wire_wr *w, uint64_t v);
void wire_put_i64(wire_wr *w, int64_t v);
void wire_put_raw(wire_wr *w, const void *p, size_t n);    /* fixed size, no prefix */
void wire_put_str(wire_wr *w, const char *p, size_t n);    /* u16 length + bytes */
void wire_put_blob(wire_wr *w, const void *p, size_t n);   /* u32 length + bytes */
int wire_wr_end(wire_wr *w, xerr *e);

/* Payload reader with bounds checks.  The first failure sticks: later gets
 * return the same error and zero their outputs, so a decoder can read every
 * field and check once.  Reading past the end is XE_PROTO "truncated". */
typedef struct wire_rd {
    const unsigned char *p;
    size_t len, off;
    int err;
    const char *what; /* the field that failed, for the message */
} wire_rd;
void wire_rd_init(wire_rd *r, const void *p, size_t n);
int wire_get_u8(wire_rd *r, uint8_t *v);
int wire_get_u16(wire_rd *r, uint16_t *v);
int wire_get_u32(wire_rd *r, uint32_t *v);
int wire_get_u64(wire_rd *r, uint64_t *v);
int wire_get_i64(wire_rd *r, int64_t *v);
int wire_get_raw(wire_rd *r, void *dst, size_t n);
int wire_get_str(wire_rd *r, wire_str *s);  /* u16 length prefix */
int wire_get_blob(wire_rd *r, wire_str *s); /* u32 length prefix */
int wire_get_rest(wire_rd *r, wire_str *s); /* everything left */
size_t wire_rd_left(const wire_rd *r);
/* Finish: fails if any get failed or (strict) if bytes are left over. */
int wire_rd_end(wire_rd *r, int strict, xerr *e);

/* ------------------------------------------------------------ messages */

/* Typed payloads, one struct per body of wire.def (wire_hello, wire_join,
 * wire_membership, ...; see there what each field means).  Opaque fields
 * (plan, rows, data) belong to the engine; the wire only frames them.  All
 * views borrow the frame payload. */

/* One MEMBERSHIP entry's state. */
enum wire_member_state { WIRE_MEMBER_UP = 1, WIRE_MEMBER_SUSPECT = 2, WIRE_MEMBER_DEAD = 3,
                         WIRE_MEMBER_LEFT = 4 };

/* RESUME and REPLICA_ACK carry a position per source slot of a query (one
 * per partition of each stream it reads): at most this many. */
#define WIRE_MAX_SRC 16

/* The C type of each kind of wire.def field. */
#define WIRE_C_U8 uint8_t
#define WIRE_C_U16 uint16_t
#define WIRE_C_U32 uint32_t
#define WIRE_C_U64 uint64_t
#define WIRE_C_I64 int64_t
#define WIRE_C_I32 int32_t
#define WIRE_C_STR wire_str
#define WIRE_C_BLOB wire_str
#define WIRE_C_REST wire_str
#define WIRE_C_BYTES unsigned char
#define WIRE_C_U64S uint64_t
#define WIRE_REC(body, fields) typedef struct wire_##body { fields } wire_##body;
#define WIRE_MSG(name, num, body, codec, dir, note, fields) typedef struct wire_##body { fields } wire_##body;
#define WIRE_F(kind, name, doc) WIRE_C_##kind name;
#define WIRE_FA(kind, name, n, doc) WIRE_C_##kind name[n];
#include "cluster/wire.def"

typedef struct wire_msg {
    uint8_t type;
    uint16_t flags;
    union {
#define WIRE_MSG(name, num, body, codec, dir, note, fields) wire_##body body;
#include "cluster/wire.def"
    } u;
} wire_msg;

/* Encode m's payload (not the header) into w. */
void wire_msg_put(wire_wr *w, const wire_msg *m);
/* Decode a frame's payload by its type.  Strict: trailing bytes are an error,
 * and MEMBERSHIP entries are all checked.  Views borrow f->payload. */
int wire_msg_get(const wire_frame *f, wire_msg *m, xerr *e);
/* Append m's payload to out (which the caller owns and frees). */
int wire_msg_payload(sbuf *out, const wire_msg *m, xerr *e);
/* Encode a whole frame of m into out (header with the given version). */
int wire_msg_encode(sbuf *out, uint8_t version, const wire_msg *m, xerr *e);

/* The records of wire.def (MEMBERSHIP entries, STATS peers and replicas):
 * wire_put_<body> and wire_get_<body>, which returns the reader's error. */
#define WIRE_REC(body, fields)                                                                     \
    void wire_put_##body(wire_wr *w, const wire_##body *b);                                        \
    int wire_get_##body(wire_rd *r, wire_##body *b);
#include "cluster/wire.def"

/* A STATS task, written by hand (its destinations vary in number): its
 * query id and global task index, its cumulative counters
 * (engine_task_stats), and ndest x (u64 rows, u64 bytes) it sent to each
 * task of the downstream operator (at most WIRE_STATS_MAX_DEST). */
#define WIRE_STATS_MAX_DEST 4096
typedef struct wire_stats_task {
    uint32_t qid, task;
    int64_t since_ms; /* the node's wall ms its counters started from 0 */
    uint64_t cpu_ns, rows_in, rows_out, bytes_out, state_bytes;
    uint32_t ndest;
    wire_str dest;  /* get: ndest x 16 bytes, read with wire_stats_dest */
    const uint64_t *dest_rows, *dest_bytes; /* put: ndest each */
} wire_stats_task;
void wire_put_stats_task(wire_wr *w, const wire_stats_task *t);
int wire_get_stats_task(wire_rd *r, wire_stats_task *t);
/* Destination i of a task read by wire_get_stats_task. */
void wire_stats_dest(const wire_stats_task *t, uint32_t i, uint64_t *rows, uint64_t *bytes);

/* An ERROR's message for e: "line L, column C: " before e->msg when e has a
 * position (within the QUERY's SQL text), so that the client can point at
 * it; e->msg (or the code's name) alone otherwise. */
void wire_error_text(const xerr *e, int code, char *out, size_t n);
/* The other way: an ERROR's code and message into e, with the position the
 * message starts with, if any, taken off into e->line and e->col. */
int wire_error_parse(xerr *e, int code, const char *msg, size_t n);

#endif
