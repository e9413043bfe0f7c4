/*
 * batch.h: run-time values and batches of tuples.  Part of exec's public
 * interface: exec.h includes it, and cluster/ and cli/ use batches (rows of
 * results, rows on the wire, batch_encode and batch_decode).
 *
 * A batch is one contiguous array of values, row-major (nrows x ncols), plus
 * one string arena that TEXT values point into.  Operators append into batches
 * they own and reset them between uses; the arrays only grow, so the steady
 * state allocates nothing per tuple.
 *
 * A TEXT value's `s` points into the arena of the batch that holds it (or into
 * any storage that outlives the use, such as a literal in a compiled program).
 * Copying a row into another batch copies its strings into that batch's arena
 * (batch_append_row).  The arena is a chain of blocks that never move, so a
 * pointer into it stays valid until batch_reset/batch_fini; reset keeps the
 * first (largest) block, so steady state allocates nothing.
 */
#ifndef EXEC_BATCH_H
#define EXEC_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/base.h"

typedef struct val {
    uint8_t type;  /* sql_type; TY_NULL means SQL NULL */
    uint8_t pad[3];
    uint32_t len;  /* TEXT length in bytes */
    union {
        int64_t i; /* BOOL, INT, BIGINT, TIMESTAMP, INTERVAL */
        double d;  /* DOUBLE */
        const char *s;
    };
} val;

/* Built field by field: `val v = {0}` and then fields makes GCC assemble the
 * value on the stack and copy it out with one 16-byte load, which the store
 * buffer cannot forward (a stall of a dozen cycles per value); this way each
 * half is one store wherever the value goes. */
#define VAL_HEAD_(v, t) ((v).type = (uint8_t)(t), (v).pad[0] = (v).pad[1] = (v).pad[2] = 0, (v).len = 0)
static inline val val_null(void) { val v; VAL_HEAD_(v, TY_NULL); v.i = 0; return v; }
static inline val val_int(sql_type t, int64_t i) { val v; VAL_HEAD_(v, t); v.i = i; return v; }
static inline val val_double(double d) { val v; VAL_HEAD_(v, TY_DOUBLE); v.d = d; return v; }
static inline val val_text(const char *s, uint32_t len) { val v; VAL_HEAD_(v, TY_TEXT); v.len = len; v.s = s; return v; }
static inline int val_is_null(const val *v) { return v->type == TY_NULL; }

typedef struct batch {
    int ncols;
    int nrows, cap;   /* rows in use, rows allocated */
    val *v;           /* nrows * ncols values */
    struct batch_blk *blk; /* arena blocks, newest first; TEXT bytes */
    size_t arena_bytes;    /* bytes used in all blocks */
} batch;

int batch_init(batch *b, int ncols, int cap_rows);
void batch_fini(batch *b);
void batch_reset(batch *b); /* nrows = 0, arena emptied; keeps memory */

static inline val *batch_row(const batch *b, int r) { return b->v + (size_t)r * (size_t)b->ncols; }

/* Append one row of ncols values; TEXT values are copied into b's arena.
 * Returns 0 or XE_NOMEM. */
int batch_append_row(batch *b, const val *row);

/* Start a row in place: returns a pointer to ncols values that the caller
 * fills (TEXT through batch_put_text).  NULL when memory runs out. */
val *batch_add_row(batch *b);
/* batch_add_row for a caller that sets every value of the row: the values
 * are not cleared first. */
static inline val *batch_add_row_raw(batch *b)
{
    if (b->nrows < b->cap && b->v) return batch_row(b, b->nrows++);
    return batch_add_row(b);
}
/* Copy s[0..n) into b's arena and store it in *dst as TEXT. */
int batch_put_text(batch *b, val *dst, const char *s, size_t n);

/* Additions (batch.c). */
/* Change the column count; also resets the batch.  XE_INVAL, XE_NOMEM. */
int batch_set_ncols(batch *b, int ncols);
/* Make room for `rows` more rows so that the next `rows` batch_add_row calls
 * do not move b->v. */
int batch_reserve(batch *b, int rows);
/* n bytes, 8-aligned, from b's arena; valid until reset/fini.  NULL when out of memory. */
void *batch_arena_alloc(batch *b, size_t n);
/* *dst = *src, copying TEXT bytes into b's arena.  Text copied by
 * batch_put_text/batch_put_val/batch_append_row is also NUL-terminated. */
int batch_put_val(batch *b, val *dst, const val *src);

/* Value helpers. */
int val_compare(const val *a, const val *b); /* total order: NULL first, numbers by value, text bytewise */
int val_equal(const val *a, const val *b);   /* NULL equals NULL here (grouping semantics) */
uint64_t val_hash(const val *v, uint64_t seed);

/* Serialisation of a batch for stream logs and the wire:
 * a compact, self-describing, versioned byte format with a CRC32C.
 * batch_decode checks every length and fails with XE_CORRUPT rather than
 * reading past the end. */
int batch_encode(const batch *b, sbuf *out);
int batch_decode(const void *p, size_t n, batch *b, xerr *err);
/* (batch_decode: b must be initialised or zeroed; it is reset and takes the
 * encoded column count.  XE_CORRUPT, XE_VERSION, XE_NOMEM; b is empty on error.) */
/* The row count of a batch_encode buffer, read from its header without
 * decoding it or checking its CRC (-1 when it is not one): what a hook's
 * sender counts. */
int64_t batch_peek_rows(const void *p, size_t n);

/* Order-preserving key encoding of values (for LMDB keys and hash-table keys):
 * memcmp order of encodings equals val_compare order for values of one type. */
int val_key_encode(const val *vals, int n, sbuf *out);
/* The same encoding of one value that is not TEXT, into k (VAL_KEY_MAX
 * bytes): returns its length, or 0 for TEXT and unknown types.  Inline: the
 * aggregate encodes a group key per row with it. */
enum { VAL_KEY_MAX = 9 };
static inline uint64_t val_key_double_bits(double d)
{
    uint64_t bits;
    if (d != d) return 0x7ff8000000000000ULL ^ 0x8000000000000000ULL; /* every NaN is one key */
    if (d == 0) d = 0.0; /* -0.0 and 0.0 are one key */
    memcpy(&bits, &d, 8);
    return (bits & 0x8000000000000000ULL) ? ~bits : bits ^ 0x8000000000000000ULL;
}
static inline size_t val_key_put(const val *v, unsigned char *k)
{
    if (v->type > TY_INTERVAL || v->type == TY_TEXT) return 0;
    k[0] = (unsigned char)(v->type + 1);
    switch (v->type) {
    case TY_NULL: return 1;
    case TY_BOOL: k[1] = v->i != 0; return 2;
    case TY_DOUBLE: be64_put(k + 1, val_key_double_bits(v->d)); return 9;
    default: be64_put(k + 1, (uint64_t)v->i ^ 0x8000000000000000ULL); return 9;
    }
}
/* Decodes nvals values (TEXT bytes go into arena_owner's arena) and returns the
 * number of bytes they took (>= 0), so a key may carry more after them; or
 * XE_CORRUPT, XE_INVAL (TEXT without an arena), XE_NOMEM. */
int val_key_decode(const void *p, size_t n, val *vals, int nvals, batch *arena_owner, xerr *err);

#endif
