/*
 * batch.c: run-time values, batches of tuples, and their two byte encodings.
 *
 * A batch owns a row-major array of values and a chain of arena blocks for
 * TEXT bytes.  Blocks never move, so a TEXT pointer stays valid until
 * batch_reset or batch_fini.  A new block is at least twice the largest block
 * so far, and reset keeps only the largest one: after a few rounds the largest
 * block holds a whole batch's text and the steady state allocates nothing.
 *
 * Values compare in one total order (val_compare): NULL < BOOL < numbers <
 * TEXT.  INT, BIGINT, DOUBLE, TIMESTAMP and INTERVAL are one family and
 * compare exactly by value (an int64 against a double without rounding); NaN
 * sorts after every other number and equals itself; -0.0 equals 0.0.
 * val_equal is val_compare == 0, and val_hash agrees with it: integers and
 * integral doubles in int64 range hash by their int64 value, so INT 3, BIGINT 3
 * and DOUBLE 3.0 are equal and hash equal.
 *
 * batch_encode format (version 1; all integers big-endian):
 *   0xAB, version, varint ncols, varint nrows,
 *   nrows*ncols values, row-major, each a tag byte and a payload:
 *     0 NULL, 1 FALSE, 2 TRUE              no payload
 *     3 INT, 4 BIGINT, 7 TIMESTAMP, 8 INTERVAL
 *                                          zigzag varint of the difference to
 *                                          the previous integer in the column
 *                                          (0 before the first), so timestamps
 *                                          cost two or three bytes
 *     5 DOUBLE                             8 bytes, IEEE bits
 *     6 TEXT                               varint length, bytes
 *   CRC32C of everything before it, 4 bytes.
 * (A batch without columns holds at most 65536 rows, so that a few bytes
 * cannot ask for billions of empty rows.)
 *
 * batch_encode format version 2, by column, for batches of up to 65536 rows
 * (every stream log record): 0xAB, 2, varint ncols, varint nrows, then per
 * column a mode byte and
 *   0 tagged      nrows values as in version 1 (NULLs, TEXT, BOOL, mixed types)
 *   1 int         type byte, zigzag varint min, width w (0..64), nrows
 *                 values - min packed in w bits each
 *   2 int delta   type byte, zigzag varint first, zigzag varint min
 *                 difference, w, the nrows - 1 differences to the value
 *                 before less that minimum, packed (time in order: 0 - 2 bits)
 *   3 decimal     DOUBLEs that are all m / 10^s exactly (the same bits back)
 *                 for one scale s <= 6: s, zigzag varint min m, w, m - min packed
 *   4 double      nrows x 8 bytes, IEEE bits
 *   CRC32C of everything before it, 4 bytes.
 * Packed values are little-endian bit strings of (nrows * w + 7) / 8 bytes.
 * The schema fixes the type of a column, so a column costs no tag per value:
 * a log row (ts, k among 10,000, a price) takes about 4 bytes instead of 14.
 * batch_decode reads both versions; it checks the magic and the CRC first,
 * then every length, and never reads past the end.
 *
 * Key encoding (val_key_encode): per value a tag byte (type + 1, so NULL's tag
 * sorts first), then BOOL one byte, integer types 8 bytes big-endian with the
 * sign bit flipped, DOUBLE its bits made order-preserving (negative: all bits
 * flipped; otherwise the sign bit set; -0.0 is stored as 0.0 and every NaN as
 * one NaN above +inf), TEXT its bytes with 0x00 escaped as 0x00 0xFF and
 * terminated by 0x00 0x01, so that a prefix sorts before its extensions.
 */
#include "exec/batch.h"

#include <emmintrin.h> /* SSE2: part of x86-64 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct batch_blk {
    struct batch_blk *next;
    size_t size, used;
    char data[];
};

enum { BLK_MIN = 4096, DEFAULT_ROWS = 16, BATCH_MAX_COLS = 65535, MAX_EMPTY_ROWS = 65536 };
enum { ENC_MAGIC = 0xAB, ENC_VERSION = 1, ENC_VERSION_COLS = 2 };

/* ------------------------------------------------------------------ batches */

int batch_init(batch *b, int ncols, int cap_rows)
{
    memset(b, 0, sizeof *b);
    if (ncols < 0 || ncols > BATCH_MAX_COLS) return XE_INVAL;
    if (cap_rows <= 0) cap_rows = DEFAULT_ROWS;
    size_t nv = (size_t)cap_rows * (size_t)ncols;
    b->v = malloc((nv ? nv : 1) * sizeof *b->v);
    if (!b->v) return XE_NOMEM;
    b->ncols = ncols;
    b->cap = cap_rows;
    return 0;
}

static void free_blocks(struct batch_blk *k)
{
    while (k) {
        struct batch_blk *next = k->next;
        free(k);
        k = next;
    }
}

void batch_fini(batch *b)
{
    if (!b) return;
    free(b->v);
    free_blocks(b->blk);
    memset(b, 0, sizeof *b);
}

void batch_reset(batch *b)
{
    b->nrows = 0;
    b->arena_bytes = 0;
    if (!b->blk) return;
    struct batch_blk *big = b->blk, *k;
    for (k = b->blk->next; k; k = k->next)
        if (k->size > big->size) big = k;
    for (k = b->blk; k;) {
        struct batch_blk *next = k->next;
        if (k != big) free(k);
        k = next;
    }
    big->next = NULL;
    big->used = 0;
    b->blk = big;
}

int batch_set_ncols(batch *b, int ncols)
{
    if (ncols < 0 || ncols > BATCH_MAX_COLS) return XE_INVAL;
    batch_reset(b);
    if (ncols == b->ncols && b->v) return 0;
    /* Keep the memory: as many rows as the values fit (at least one). */
    size_t have = (size_t)b->cap * (size_t)b->ncols;
    size_t rows = ncols ? have / (size_t)ncols : (size_t)b->cap;
    if (rows == 0) rows = ncols <= DEFAULT_ROWS ? DEFAULT_ROWS : 1;
    if (rows > INT_MAX / 2) rows = INT_MAX / 2;
    size_t nv = rows * (size_t)ncols;
    val *v = realloc(b->v, (nv ? nv : 1) * sizeof *v);
    if (!v) return XE_NOMEM;
    b->v = v;
    b->cap = (int)rows;
    b->ncols = ncols;
    return 0;
}

/* Room for `more` rows past nrows; b->v may move. */
static int grow_rows(batch *b, int more)
{
    if (more <= b->cap - b->nrows && b->v) return 0;
    if (more > INT_MAX / 2 - b->nrows) return XE_NOMEM;
    size_t want = (size_t)b->nrows + (size_t)more;
    size_t cap = b->cap > 0 ? (size_t)b->cap : DEFAULT_ROWS;
    while (cap < want) cap *= 2;
    if (cap > INT_MAX / 2) cap = INT_MAX / 2;
    size_t nv = cap * (size_t)b->ncols;
    val *v = realloc(b->v, (nv ? nv : 1) * sizeof *v);
    if (!v) return XE_NOMEM;
    b->v = v;
    b->cap = (int)cap;
    return 0;
}

int batch_reserve(batch *b, int rows)
{
    return rows < 0 ? XE_INVAL : grow_rows(b, rows);
}

val *batch_add_row(batch *b)
{
    if (grow_rows(b, 1) < 0) return NULL;
    val *r = batch_row(b, b->nrows++);
    memset(r, 0, (size_t)b->ncols * sizeof *r);
    return r;
}

void *batch_arena_alloc(batch *b, size_t n)
{
    struct batch_blk *k = b->blk;
    if (k) {
        size_t at = (k->used + 7) & ~(size_t)7;
        if (at <= k->size && n <= k->size - at) {
            k->used = at + n;
            b->arena_bytes += n;
            return k->data + at;
        }
    }
    /* A new block: at least twice the largest so far, and big enough. */
    size_t size = BLK_MIN;
    for (struct batch_blk *o = b->blk; o; o = o->next)
        if (o->size >= size) size = o->size * 2;
    if (n > SIZE_MAX / 2 - sizeof *k) return NULL;
    if (size < n) size = n;
    k = malloc(sizeof *k + size);
    if (!k) return NULL;
    k->size = size;
    k->used = n;
    k->next = b->blk;
    b->blk = k;
    b->arena_bytes += n;
    return k->data;
}

int batch_put_text(batch *b, val *dst, const char *s, size_t n)
{
    if (n > UINT32_MAX - 1) return XE_INVAL;
    char *p = batch_arena_alloc(b, n + 1);
    if (!p) return XE_NOMEM;
    if (n) memcpy(p, s, n);
    p[n] = '\0';
    *dst = val_text(p, (uint32_t)n);
    return 0;
}

int batch_put_val(batch *b, val *dst, const val *src)
{
    if (src->type == TY_TEXT) return batch_put_text(b, dst, src->s, src->len);
    *dst = *src;
    return 0;
}

int batch_append_row(batch *b, const val *row)
{
    /* The row may live in b->v itself, which growing can move. */
    size_t off = SIZE_MAX;
    if (b->v && row >= b->v && row < b->v + (size_t)b->nrows * (size_t)b->ncols)
        off = (size_t)(row - b->v);
    if (grow_rows(b, 1) < 0) return XE_NOMEM;
    if (off != SIZE_MAX) row = b->v + off;
    val *dst = batch_row(b, b->nrows);
    for (int c = 0; c < b->ncols; c++) {
        if (batch_put_val(b, &dst[c], &row[c]) < 0) return XE_NOMEM;
    }
    b->nrows++;
    return 0;
}

/* ------------------------------------------------------------------ comparison */

enum { FAM_NULL, FAM_BOOL, FAM_NUM, FAM_TEXT };

static int family(uint8_t t)
{
    switch (t) {
    case TY_NULL: return FAM_NULL;
    case TY_BOOL: return FAM_BOOL;
    case TY_TEXT: return FAM_TEXT;
    default: return FAM_NUM;
    }
}

static int cmp_i64(int64_t a, int64_t b) { return (a > b) - (a < b); }

/* Exact comparison of an int64 with a double; NaN is above everything. */
static int cmp_i64_double(int64_t i, double d)
{
    if (isnan(d)) return -1;
    if (d >= 9223372036854775808.0) return -1;
    if (d < -9223372036854775808.0) return 1;
    int64_t t = (int64_t)d; /* in range, truncates toward zero */
    if (i != t) return i < t ? -1 : 1;
    double frac = d - (double)t; /* exact: d and t are within one ulp range */
    return frac > 0 ? -1 : frac < 0 ? 1 : 0;
}

static int cmp_double(double a, double b)
{
    int na = isnan(a), nb = isnan(b);
    if (na || nb) return na - nb;
    return (a > b) - (a < b);
}

int val_compare(const val *a, const val *b)
{
    int fa = family(a->type), fb = family(b->type);
    if (fa != fb) return fa < fb ? -1 : 1;
    switch (fa) {
    case FAM_NULL: return 0;
    case FAM_BOOL: return cmp_i64(a->i != 0, b->i != 0);
    case FAM_TEXT: {
        uint32_t n = a->len < b->len ? a->len : b->len;
        int c = n ? memcmp(a->s, b->s, n) : 0;
        if (c) return c < 0 ? -1 : 1;
        return (a->len > b->len) - (a->len < b->len);
    }
    default:
        if (a->type == TY_DOUBLE && b->type == TY_DOUBLE) return cmp_double(a->d, b->d);
        if (a->type == TY_DOUBLE) return -cmp_i64_double(b->i, a->d);
        if (b->type == TY_DOUBLE) return cmp_i64_double(a->i, b->d);
        return cmp_i64(a->i, b->i);
    }
}

int val_equal(const val *a, const val *b)
{
    if (a->type == b->type) {
        switch (a->type) {
        case TY_NULL: return 1;
        case TY_TEXT: return a->len == b->len && (a->len == 0 || memcmp(a->s, b->s, a->len) == 0);
        case TY_DOUBLE: return cmp_double(a->d, b->d) == 0;
        case TY_BOOL: return (a->i != 0) == (b->i != 0);
        default: return a->i == b->i;
        }
    }
    return val_compare(a, b) == 0;
}

static uint64_t hash_int(int64_t i, uint64_t seed)
{
    return hash64_mix(seed ^ hash64_mix((uint64_t)i + 0x9e3779b97f4a7c15ULL));
}

uint64_t val_hash(const val *v, uint64_t seed)
{
    switch (v->type) {
    case TY_NULL: return hash64_mix(seed ^ 0x6e756c6c6e756c6cULL);
    case TY_BOOL: return hash64_mix(seed ^ (v->i ? 0x74727565ULL : 0x66616c7365ULL) ^ 0xb001b001ULL);
    case TY_TEXT: return hash64(v->s, v->len, seed ^ 0x7465787474657874ULL);
    case TY_DOUBLE: {
        double d = v->d;
        if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == floor(d))
            return hash_int((int64_t)d, seed); /* integral: equal to that integer */
        uint64_t bits;
        if (isnan(d)) bits = 0x7ff8000000000000ULL;
        else memcpy(&bits, &d, 8);
        return hash64_mix(seed ^ hash64_mix(bits ^ 0xd0b1ed0b1ed0b1eULL));
    }
    default: return hash_int(v->i, seed);
    }
}

/* ------------------------------------------------------------------ batch encoding */

static int is_int_type(int t)
{
    return t == TY_INT || t == TY_BIGINT || t == TY_TIMESTAMP || t == TY_INTERVAL;
}

/* Per-column scratch for the delta coding: on the stack for narrow batches. */
typedef struct prev_ints {
    int64_t small[64];
    int64_t *v;
} prev_ints;

static int prev_init(prev_ints *p, int ncols)
{
    p->v = p->small;
    if (ncols > 64 && !(p->v = calloc((size_t)ncols, sizeof *p->v))) return XE_NOMEM;
    if (ncols <= 64) memset(p->small, 0, sizeof p->small);
    return 0;
}

static void prev_fini(prev_ints *p)
{
    if (p->v != p->small) free(p->v);
}

enum { ENC_MAX_VAL = 11 }; /* a tag and a 10-byte varint (TEXT bytes come on top) */

/* One value as a tag and its payload (room checked by the caller); prev:
 * the column's last integer, for the delta. */
static unsigned char *put_tagged(unsigned char *p, const val *v, int64_t *prev)
{
    switch (v->type) {
    case TY_NULL: *p++ = 0; break;
    case TY_BOOL: *p++ = v->i ? 2 : 1; break;
    case TY_DOUBLE: {
        uint64_t bits;
        memcpy(&bits, &v->d, 8);
        *p++ = TY_DOUBLE + 1;
        be64_put(p, bits);
        p += 8;
        break;
    }
    case TY_TEXT:
        *p++ = TY_TEXT + 1;
        p = varint_put(p, v->len);
        if (v->len) memcpy(p, v->s, v->len);
        p += v->len;
        break;
    default:
        *p++ = (unsigned char)(v->type + 1);
        p = varint_put(p, zigzag((uint64_t)v->i - (uint64_t)*prev));
        *prev = v->i;
        break;
    }
    return p;
}

/* An encoding from out[start] on ends: its CRC after it, or (rc < 0) out
 * cut back to start. */
static int encoding_end(sbuf *out, size_t start, int rc)
{
    if (rc == 0) {
        unsigned char crc[4];
        be32_put(crc, crc32c(0, out->p + start, out->len - start));
        rc = sbuf_add(out, crc, 4);
    }
    if (rc < 0) {
        out->len = start;
        if (out->p) out->p[start] = '\0';
    }
    return rc;
}

/* Tags on the wire: 0 NULL, 1 FALSE, 2 TRUE, then type + 1 for INT..INTERVAL.
 * Values are written straight into out's reserved room, one row at a time:
 * a stream log record costs about a byte copy per byte. */
static int encode_v1(const batch *b, sbuf *out)
{
    size_t start = out->len;
    prev_ints prev;
    int rc = prev_init(&prev, b->ncols);
    if (rc < 0) return rc;
    size_t row_max = (size_t)b->ncols * ENC_MAX_VAL;
    rc = sbuf_reserve(out, 2 + 2 * 10 + 4);
    if (rc == 0) {
        unsigned char *p = (unsigned char *)out->p + out->len;
        *p++ = ENC_MAGIC;
        *p++ = ENC_VERSION;
        p = varint_put(p, (uint64_t)b->ncols);
        p = varint_put(p, (uint64_t)b->nrows);
        out->len = (size_t)((char *)p - out->p);
    }
    /* room for every row up front; TEXT reserves more as it comes.  p and
     * lim are out's write position and end, kept in locals (out->p may
     * alias anything, so the compiler would reload them for each byte) */
    if (rc == 0 && (size_t)b->nrows <= SIZE_MAX / 2 / (row_max + 1)) rc = sbuf_reserve(out, (size_t)b->nrows * row_max);
    unsigned char *p = (unsigned char *)out->p + out->len, *lim = (unsigned char *)out->p + out->cap;
    for (int r = 0; rc == 0 && r < b->nrows; r++) {
        const val *row = batch_row(b, r);
        if ((size_t)(lim - p) <= row_max) {
            out->len = (size_t)((char *)p - out->p);
            if ((rc = sbuf_reserve(out, row_max)) < 0) break;
            p = (unsigned char *)out->p + out->len;
            lim = (unsigned char *)out->p + out->cap;
        }
        for (int c = 0; c < b->ncols; c++) {
            const val *v = &row[c];
            if (v->type > TY_INTERVAL) {
                rc = XE_INVAL;
                break;
            }
            if (v->type == TY_TEXT) {
                out->len = (size_t)((char *)p - out->p);
                if ((rc = sbuf_reserve(out, v->len + row_max)) < 0) break;
                p = (unsigned char *)out->p + out->len;
                lim = (unsigned char *)out->p + out->cap;
            }
            p = put_tagged(p, v, &prev.v[c]);
        }
    }
    if (rc == 0) out->len = (size_t)((char *)p - out->p);
    prev_fini(&prev);
    return encoding_end(out, start, rc);
}

/* ------------------------------------------------------------------ version 2: by column */

/* Bit packing: n values v[i] - base of w bits (0..64), little-endian bit
 * order, in (n * w + 7) / 8 bytes. */
__extension__ typedef unsigned __int128 u128;

static size_t packed_size(size_t n, int w) { return (n * (size_t)w + 7) / 8; }

static unsigned char *bits_pack(unsigned char *p, const uint64_t *v, int n, int w, uint64_t base)
{
    if (w == 0) return p;
    if (w == 64) {
        for (int i = 0; i < n; i++, p += 8) {
            uint64_t x = v[i] - base;
            memcpy(p, &x, 8); /* x86 and every other target we build on are little-endian */
        }
        return p;
    }
    uint64_t acc = 0, mask = (1ULL << w) - 1;
    int have = 0;
    for (int i = 0; i < n; i++) {
        uint64_t x = (v[i] - base) & mask;
        acc |= x << have;
        have += w;
        if (have >= 64) {
            memcpy(p, &acc, 8);
            p += 8;
            have -= 64;
            acc = have ? x >> (w - have) : 0;
        }
    }
    for (; have > 0; have -= 8) {
        *p++ = (unsigned char)acc;
        acc >>= 8;
    }
    return p;
}

/* The n values of w bits packed in p[0..packed_size(n, w)) into out. */
static void bits_unpack(const unsigned char *p, size_t n, int w, uint64_t *out)
{
    if (w == 0) {
        memset(out, 0, n * sizeof *out);
        return;
    }
    size_t nb = packed_size(n, w), at = 0;
    uint64_t mask = w == 64 ? ~0ULL : (1ULL << w) - 1;
    u128 acc = 0;
    int have = 0;
    for (size_t i = 0; i < n; i++) {
        while (have < w) {
            uint64_t x = 0;
            size_t k = nb - at < 8 ? nb - at : 8;
            memcpy(&x, p + at, k);
            at += k;
            acc |= (u128)x << have;
            have += (int)k * 8;
        }
        out[i] = (uint64_t)acc & mask;
        acc = w == 64 ? acc >> 64 : acc >> w;
        have -= w;
    }
}

static int bit_width(uint64_t range) { return range ? 64 - __builtin_clzll(range) : 0; }

enum { COL_TAGGED, COL_INT, COL_INT_DELTA, COL_DEC, COL_RAW_DOUBLE };
enum { DEC_MAX_SCALE = 6 };
static const double pow10_tab[DEC_MAX_SCALE + 1] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6};

/* d as m / 10^s exactly (the same bits back, so -0.0 and NaN never are). */
static int dec_of(double d, int s, int64_t *m)
{
    double x = d * pow10_tab[s];
    int in = x > -4503599627370496.0 && x < 4503599627370496.0; /* |x| < 2^52, and not NaN */
    /* rounded half away from zero, without a branch on the sign (random
     * signs would mispredict half the time) */
    int64_t r = in ? (int64_t)(x + copysign(0.5, x)) : 0;
    double back = (double)r / pow10_tab[s];
    uint64_t a, b;
    memcpy(&a, &back, 8);
    memcpy(&b, &d, 8);
    *m = r;
    return in & (a == b);
}

/* The encoder below reads each column where it lies in the batch, with no
 * copy of the column in between.  The fast path assumes what a stream
 * log's columns are (a TIMESTAMP in order, a key, a price): every value
 * of a column has one type, so each pass is one tight loop whose type
 * check is a branch never taken, and other shapes cost more but come out
 * the same:
 *   - an integer column computes the extremes its coding needs and usually
 *     no others: a column in order has its minimum and maximum at its ends,
 *     and a sample of the differences usually shows that they are wider
 *     than the values (a key), so that their extremes are not needed;
 *   - the decimal check runs on two doubles at a time (SSE2), with the
 *     scaled values as int32, and falls back to the exact scalar check for
 *     anything else;
 *   - widths 1 to 32 are packed eight values at a time by code made for
 *     that width (eight values of w bits are w bytes), with constant shifts.
 * The bytes are those of the straightforward encoder (the unit test keeps
 * it and compares); only the work to find them differs. */

/* A column of a batch, read in place: value r is at at + r * stride. */
typedef struct col_ref {
    const unsigned char *at;
    size_t stride;
} col_ref;

static inline const val *col_val(col_ref k, int r) { return (const val *)(k.at + (size_t)r * k.stride); }

/* Whether every value of the column has type t. */
static int col_all_type(col_ref k, int n, int t)
{
    for (int r = 0; r < n; r++)
        if (col_val(k, r)->type != t) return 0;
    return 1;
}

static inline void min_max(int64_t x, int64_t *lo, int64_t *hi)
{
    *lo = x < *lo ? x : *lo;
    *hi = x > *hi ? x : *hi;
}

/* The extremes of a column of integers of type t (n >= 1), or 0 when not
 * every value has type t.  Two rows a turn, for fewer loop instructions. */
static int scan_ints(col_ref k, int n, unsigned char t, int64_t *mn, int64_t *mx)
{
    const unsigned char *q = k.at, *end = k.at + (size_t)n * k.stride;
    int64_t lo = ((const val *)q)->i, hi = lo;
    if (n & 1) q += k.stride; /* row 0 is in lo and hi already */
    for (; q != end; q += 2 * k.stride) {
        const val *v0 = (const val *)q, *v1 = (const val *)(q + k.stride);
        if (v0->type != t || v1->type != t) return 0;
        min_max(v0->i, &lo, &hi);
        min_max(v1->i, &lo, &hi);
    }
    *mn = lo, *mx = hi;
    return ((const val *)k.at)->type == t;
}

/* The same for the differences between neighbours (n >= 2), which wrap
 * around as the decoder's sums do.  Each difference loads both its values
 * rather than carry one over in a register: fewer instructions. */
static inline int64_t delta_at(const unsigned char *q, size_t stride)
{
    return (int64_t)((uint64_t)((const val *)q)->i - (uint64_t)((const val *)(q - stride))->i);
}

static int scan_deltas(col_ref k, int n, unsigned char t, int64_t *dmn, int64_t *dmx)
{
    const unsigned char *q = k.at + k.stride, *end = k.at + (size_t)n * k.stride;
    int64_t lo = delta_at(q, k.stride), hi = lo;
    if ((n - 1) & 1) q += k.stride;
    for (; q != end; q += 2 * k.stride) {
        const val *v0 = (const val *)q, *v1 = (const val *)(q + k.stride);
        if (v0->type != t || v1->type != t) return 0;
        min_max(delta_at(q, k.stride), &lo, &hi);
        min_max(delta_at(q + k.stride, k.stride), &lo, &hi);
    }
    *dmn = lo, *dmx = hi;
    return ((const val *)k.at)->type == t && ((const val *)(k.at + k.stride))->type == t;
}

/* ---- packing from the batch */

/* Where the values to pack come from, less base: a column's integers
 * (PK_VALUES), the differences between neighbours (PK_DELTAS: value r is
 * x[r + 1] - x[r]), scaled decimals in m32 (PK_M32), or decimals
 * recomputed from a column's doubles at scale `scale` (PK_DEC, rare). */
enum { PK_VALUES, PK_DELTAS, PK_M32, PK_DEC };
typedef struct pack_src {
    col_ref col;
    const int32_t *m32;
    int scale;
    uint64_t base;
} pack_src;

/* Value i from s's position on; kind is a constant where it matters. */
static inline __attribute__((always_inline)) uint64_t pack_get(const pack_src *s, int kind, int i)
{
    switch (kind) {
    case PK_VALUES: return (uint64_t)col_val(s->col, i)->i - s->base;
    case PK_DELTAS: return (uint64_t)col_val(s->col, i + 1)->i - (uint64_t)col_val(s->col, i)->i - s->base;
    case PK_M32: return (uint64_t)(int64_t)s->m32[i] - s->base;
    default: {
        int64_t m;
        dec_of(col_val(s->col, i)->d, s->scale, &m);
        return (uint64_t)m - s->base;
    }
    }
}

static inline void pack_skip(pack_src *s, int kind, int i)
{
    if (kind == PK_M32) s->m32 += i;
    else s->col.at += (size_t)i * s->col.stride;
}

/* Eight values of W bits (W a constant, 1..32; every value below 2^W) as
 * W bytes at p.  Whole words are stored: up to 7 bytes past p + W are
 * written too (PACK_SLACK). */
static inline __attribute__((always_inline)) void pack8(unsigned char *p, const uint64_t *u, const int W)
{
    uint64_t acc = 0;
    int have = 0;
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        acc |= u[i] << have;
        have += W;
        if (have >= 64) {
            memcpy(p, &acc, 8);
            p += 8;
            have -= 64;
            acc = have ? u[i] >> (W - have) : 0;
        }
    }
    if (have) memcpy(p, &acc, 8);
}

/* The first n / 8 * 8 values of s, W bits each.  All eight values of a
 * group are loaded before anything is stored, so that the stores (which
 * may alias anything) cost no reloads. */
static inline __attribute__((always_inline)) unsigned char *pack_groups(unsigned char *p, pack_src s, int kind, int n,
                                                                        const int W)
{
    for (int r = 0; r + 8 <= n; r += 8, p += W) {
        uint64_t u[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) u[i] = pack_get(&s, kind, i);
        pack8(p, u, W);
        pack_skip(&s, kind, 8);
    }
    return p;
}

enum { PACK_FIXED_MAX = 32, PACK_SLACK = 16 };

#define PACK_W4(W) \
    case W: return pack_groups(p, s, kind, n, W); \
    case W + 1: return pack_groups(p, s, kind, n, W + 1); \
    case W + 2: return pack_groups(p, s, kind, n, W + 2); \
    case W + 3: return pack_groups(p, s, kind, n, W + 3);
#define PACK_WIDTHS PACK_W4(1) PACK_W4(5) PACK_W4(9) PACK_W4(13) PACK_W4(17) PACK_W4(21) PACK_W4(25) PACK_W4(29)

static unsigned char *pack_groups_values(unsigned char *p, pack_src s, int n, int w)
{
    const int kind = PK_VALUES;
    switch (w) { PACK_WIDTHS }
    return p;
}

static unsigned char *pack_groups_deltas(unsigned char *p, pack_src s, int n, int w)
{
    const int kind = PK_DELTAS;
    switch (w) { PACK_WIDTHS }
    return p;
}

static unsigned char *pack_groups_m32(unsigned char *p, pack_src s, int n, int w)
{
    const int kind = PK_M32;
    switch (w) { PACK_WIDTHS }
    return p;
}

/* n values of s in w bits each (0..64), as bits_pack packs them. */
static unsigned char *pack_column(unsigned char *p, pack_src s, int kind, int n, int w)
{
    int r = 0;
    if (w >= 1 && w <= PACK_FIXED_MAX && kind != PK_DEC) {
        r = n / 8 * 8;
        p = kind == PK_VALUES ? pack_groups_values(p, s, r, w)
            : kind == PK_DELTAS ? pack_groups_deltas(p, s, r, w)
                                : pack_groups_m32(p, s, r, w);
        pack_skip(&s, kind, r);
    }
    /* The rest (and other widths), 64 values at a time: 64 values of w bits
     * end on a byte, so bits_pack can go on where the last one stopped. */
    uint64_t u[64];
    while (r < n) {
        int k = n - r < 64 ? n - r : 64;
        for (int i = 0; i < k; i++) u[i] = pack_get(&s, kind, i);
        p = bits_pack(p, u, k, w, 0);
        pack_skip(&s, kind, k);
        r += k;
    }
    return p;
}

/* ---- integer columns */

/* One column of integers of type `type`: frame of reference, or of the
 * differences between neighbours when those are narrower (timestamps);
 * NULL when not every value has that type. */
static unsigned char *put_int_column(unsigned char *p, col_ref k, int n, int type)
{
    /* The differences among the first values: a column in order shows
     * there, and so does one whose differences are too wide to matter. */
    int64_t smn = INT64_MAX, smx = INT64_MIN;
    for (int r = 1; r < n && r <= 32; r++) {
        int64_t d = (int64_t)((uint64_t)col_val(k, r)->i - (uint64_t)col_val(k, r - 1)->i);
        smn = d < smn ? d : smn;
        smx = d > smx ? d : smx;
    }
    int64_t x0 = col_val(k, 0)->i, xn = col_val(k, n - 1)->i, mn, mx, dmn = 0, dmx = INT64_MAX;
    int w, dw = 64; /* dw: 64 until the differences are scanned; then FOR wins as it would */
    if (n > 1 && smn >= 0) {
        if (!scan_deltas(k, n, type, &dmn, &dmx)) return NULL;
        dw = bit_width((uint64_t)dmx - (uint64_t)dmn);
        /* Non-decreasing: differences >= 0 that cannot have wrapped (n
         * of them sum to less than 2^63) and the last value not below the
         * first.  Then the ends are the extremes. */
        if (dmn >= 0 && dmx <= INT64_MAX >> 16 && xn >= x0) mn = x0, mx = xn;
        else scan_ints(k, n, type, &mn, &mx);
        w = bit_width((uint64_t)mx - (uint64_t)mn);
    } else {
        if (!scan_ints(k, n, type, &mn, &mx)) return NULL;
        w = bit_width((uint64_t)mx - (uint64_t)mn);
        /* the sample's range bounds the differences' from below */
        if (n > 1 && bit_width((uint64_t)smx - (uint64_t)smn) < w) {
            scan_deltas(k, n, type, &dmn, &dmx);
            dw = bit_width((uint64_t)dmx - (uint64_t)dmn);
        }
    }
    pack_src s = {.col = k};
    if (dw < w) {
        *p++ = COL_INT_DELTA;
        *p++ = (unsigned char)type;
        p = varint_put(p, zigzag((uint64_t)x0));
        p = varint_put(p, zigzag((uint64_t)dmn));
        *p++ = (unsigned char)dw;
        s.base = (uint64_t)dmn;
        return pack_column(p, s, PK_DELTAS, n - 1, dw);
    }
    *p++ = COL_INT;
    *p++ = (unsigned char)type;
    p = varint_put(p, zigzag((uint64_t)mn));
    *p++ = (unsigned char)w;
    s.base = (uint64_t)mn;
    return pack_column(p, s, PK_VALUES, n, w);
}

/* ---- double columns */

/* The scale guessed from the first values: the largest any of them needs
 * (taken in order, never lowered), or -1 when one is no decimal. */
static int dec_scale_guess(col_ref k, int n)
{
    int s = 0;
    int64_t m;
    for (int r = 0; r < n && r < 16; r++) {
        while (s <= DEC_MAX_SCALE && !dec_of(col_val(k, r)->d, s, &m)) s++;
        if (s > DEC_MAX_SCALE) return -1;
    }
    return s;
}

/* The smallest scale from s on at which every value is a decimal, or -1. */
static int dec_scale_from(col_ref k, int n, int s)
{
    for (; s <= DEC_MAX_SCALE; s++) {
        int ok = 1;
        int64_t m;
        for (int r = 0; r < n; r++) ok &= dec_of(col_val(k, r)->d, s, &m); /* no early exit: the divisions overlap */
        if (ok) return s;
    }
    return -1;
}

/* dec_of at scale s for two doubles at once (SSE2, so with m as int32).
 * m is rounded to nearest (cvtpd2dq), where dec_of rounds half away from
 * zero: they differ only on x within a rounding of a half, where neither
 * m / 10^s gives d back.  When it does, x = d * 10^s is within 2^-21 of
 * m (|m| < 2^31), so dec_of finds the same m.  cvtpd2dq gives INT32_MIN
 * for anything out of range and for NaN. */
static inline __attribute__((always_inline)) void dec2(const val *v0, const val *v1, __m128d scale, int32_t *m,
                                                       __m128i *same, __m128d *lo, __m128d *hi)
{
    __m128d d = _mm_loadh_pd(_mm_load_sd(&v0->d), &v1->d);
    __m128i mi = _mm_cvtpd_epi32(_mm_mul_pd(d, scale));
    __m128d md = _mm_cvtepi32_pd(mi);
    __m128d back = _mm_div_pd(md, scale);
    *same = _mm_and_si128(*same, _mm_cmpeq_epi32(_mm_castpd_si128(back), _mm_castpd_si128(d)));
    *lo = _mm_min_pd(*lo, md);
    *hi = _mm_max_pd(*hi, md);
    _mm_storel_epi64((__m128i *)m, mi);
}

/* Every value of the column as m / 10^s with m in int32 (into m[0..n],
 * which has room for n + 1), and their extremes: 1.  0 when some value is
 * not such a decimal, or its m is INT32_MIN or beyond: those take the
 * exact way.  -1 when not every value is a DOUBLE. */
static int dec_fast(col_ref k, int n, int s, int32_t *m, int64_t *mn, int64_t *mx)
{
    const __m128d scale = _mm_set1_pd(pow10_tab[s]);
    __m128d lo = _mm_set1_pd(2147483648.0), hi = _mm_set1_pd(-2147483649.0);
    __m128i same = _mm_set1_epi32(-1);
    const unsigned char *q = k.at;
    int r = 0;
    for (; r + 2 <= n; r += 2, q += 2 * k.stride) {
        const val *v0 = (const val *)q, *v1 = (const val *)(q + k.stride);
        if (v0->type != TY_DOUBLE || v1->type != TY_DOUBLE) return -1;
        dec2(v0, v1, scale, m + r, &same, &lo, &hi);
    }
    if (r < n) {
        const val *v0 = (const val *)q;
        if (v0->type != TY_DOUBLE) return -1;
        dec2(v0, v0, scale, m + r, &same, &lo, &hi);
    }
    double l = _mm_cvtsd_f64(_mm_min_sd(lo, _mm_unpackhi_pd(lo, lo)));
    double h = _mm_cvtsd_f64(_mm_max_sd(hi, _mm_unpackhi_pd(hi, hi)));
    if (_mm_movemask_epi8(same) != 0xffff || !(l > -2147483648.0)) return 0;
    *mn = (int64_t)l, *mx = (int64_t)h;
    return 1;
}

/* One column of doubles: as decimals m / 10^s when every value is one with
 * the same small s (prices, readings: what text input gives), else raw;
 * NULL when not every value is a DOUBLE.  m32: room for n + 1. */
static unsigned char *put_double_column(unsigned char *p, col_ref k, int n, int32_t *m32)
{
    int s = dec_scale_guess(k, n);
    int64_t mn, mx;
    pack_src src = {.col = k, .m32 = m32};
    if (s >= 0) {
        int fast = dec_fast(k, n, s, m32, &mn, &mx);
        if (fast < 0) return NULL;
        if (!fast && (s = dec_scale_from(k, n, s)) >= 0) {
            mn = INT64_MAX, mx = INT64_MIN;
            for (int r = 0; r < n; r++) {
                int64_t m;
                dec_of(col_val(k, r)->d, s, &m);
                mn = m < mn ? m : mn;
                mx = m > mx ? m : mx;
            }
        }
        int w = s >= 0 ? bit_width((uint64_t)mx - (uint64_t)mn) : 64;
        if (w < 60) {
            *p++ = COL_DEC;
            *p++ = (unsigned char)s;
            p = varint_put(p, zigzag((uint64_t)mn));
            *p++ = (unsigned char)w;
            src.base = (uint64_t)mn;
            src.scale = s;
            return pack_column(p, src, fast ? PK_M32 : PK_DEC, n, w);
        }
    } else if (!col_all_type(k, n, TY_DOUBLE))
        return NULL;
    *p++ = COL_RAW_DOUBLE;
    for (int r = 0; r < n; r++, p += 8) {
        uint64_t bits;
        memcpy(&bits, &col_val(k, r)->d, 8);
        be64_put(p, bits);
    }
    return p;
}

/* A column in the version 1 value format (tag and payload per value). */
static int put_tagged_column(sbuf *out, unsigned char **pp, const batch *b, int c)
{
    unsigned char *p = *pp;
    int64_t prev = 0;
    for (int r = 0; r < b->nrows; r++) {
        const val *v = &batch_row(b, r)[c];
        out->len = (size_t)((char *)p - out->p);
        size_t need = ENC_MAX_VAL + (v->type == TY_TEXT ? v->len : 0);
        if (sbuf_reserve(out, need)) return XE_NOMEM;
        p = (unsigned char *)out->p + out->len;
        if (v->type > TY_INTERVAL) return XE_INVAL;
        p = put_tagged(p, v, &prev);
    }
    *pp = p;
    return 0;
}

static int encode_v2(const batch *b, sbuf *out)
{
    size_t start = out->len;
    int n = b->nrows;
    /* scratch for a decimal column's scaled values (n + 1 of them) */
    int32_t small[1024 + 1], *m32 = n <= 1024 ? small : NULL;
    /* per column: a mode, a few header bytes, at most 8 bytes a value */
    int rc = sbuf_reserve(out, 2 + 20 + 4 + PACK_SLACK + (size_t)b->ncols * (32 + (size_t)n * 8));
    unsigned char *p = rc ? NULL : (unsigned char *)out->p + out->len;
    if (p) {
        *p++ = ENC_MAGIC;
        *p++ = ENC_VERSION_COLS;
        p = varint_put(p, (uint64_t)b->ncols);
        p = varint_put(p, (uint64_t)n);
    }
    for (int c = 0; rc == 0 && c < b->ncols; c++) {
        col_ref k = {(const unsigned char *)(b->v + c), (size_t)b->ncols * sizeof *b->v};
        int t = n ? b->v[c].type : -1;
        unsigned char *q = NULL;
        if (t == TY_DOUBLE && !m32 && !(m32 = malloc(((size_t)n + 1) * sizeof *m32))) {
            rc = XE_NOMEM;
            break;
        }
        if (t == TY_DOUBLE) q = put_double_column(p, k, n, m32);
        else if (t >= 0 && is_int_type(t)) q = put_int_column(p, k, n, t);
        if (q) {
            p = q;
            continue;
        }
        /* NULLs, TEXT, BOOL, mixed types */
        *p++ = COL_TAGGED;
        if ((rc = put_tagged_column(out, &p, b, c)) == 0) {
            /* TEXT may have moved the buffer: room for the other columns again */
            out->len = (size_t)((char *)p - out->p);
            rc = sbuf_reserve(out, 4 + PACK_SLACK + (size_t)(b->ncols - c) * (32 + (size_t)n * 8));
            p = (unsigned char *)out->p + out->len;
        }
    }
    if (m32 != small) free(m32);
    if (rc == 0) out->len = (size_t)((char *)p - out->p);
    return encoding_end(out, start, rc);
}

/* Version 2 for batches of up to MAX_EMPTY_ROWS rows (every log record and
 * nearly every batch on the wire); version 1 for larger ones, whose row
 * count a few bytes of version 2 could not be trusted with. */
int batch_encode(const batch *b, sbuf *out)
{
    if (b->ncols == 0 && b->nrows > MAX_EMPTY_ROWS) return XE_INVAL;
    if (b->nrows <= MAX_EMPTY_ROWS) return encode_v2(b, out);
    return encode_v1(b, out);
}

static int corrupt(xerr *err, const char *what, size_t at)
{
    return xerr_set(err, XE_CORRUPT, "corrupt batch: %s at byte %zu", what, at);
}

/* One tagged value at p[*at..end) into v; prev: the column's last integer. */
static int get_tagged(const unsigned char *p, size_t end, size_t *at, val *v, int64_t *prev, batch *b, xerr *err)
{
    *v = val_null();
    if (*at >= end) return corrupt(err, "truncated value", *at);
    unsigned char tag = p[(*at)++];
    uint64_t x;
    if (tag == 0) return 0;
    if (tag == 1 || tag == 2) {
        *v = val_int(TY_BOOL, tag == 2);
    } else if (tag == TY_DOUBLE + 1) {
        if (end - *at < 8) return corrupt(err, "truncated double", *at);
        uint64_t bits = be64_get(p + *at);
        *at += 8;
        v->type = TY_DOUBLE;
        memcpy(&v->d, &bits, 8);
    } else if (tag == TY_TEXT + 1) {
        if (varint_get(p, end, at, &x) < 0 || x > end - *at || x > UINT32_MAX - 1)
            return corrupt(err, "bad text length", *at);
        if (batch_put_text(b, v, (const char *)p + *at, (size_t)x) < 0)
            return xerr_set(err, XE_NOMEM, "out of memory decoding a batch");
        *at += (size_t)x;
    } else if (is_int_type(tag - 1)) {
        if (varint_get(p, end, at, &x) < 0) return corrupt(err, "bad integer", *at);
        uint64_t u = (uint64_t)*prev + unzigzag(x);
        int64_t i;
        memcpy(&i, &u, 8); /* two's complement, without implementation-defined casts */
        *prev = i;
        *v = val_int((sql_type)(tag - 1), i);
    } else
        return corrupt(err, "unknown value tag", *at - 1);
    return 0;
}

/* Header fields of a packed column: a zigzag varint base and a width. */
static int get_base_width(const unsigned char *p, size_t end, size_t *at, size_t n, int64_t *base, int *w, xerr *err)
{
    uint64_t z;
    if (varint_get(p, end, at, &z) < 0) return corrupt(err, "bad column base", *at);
    *base = (int64_t)unzigzag(z);
    if (*at >= end || p[*at] > 64) return corrupt(err, "bad column width", *at);
    *w = p[(*at)++];
    if (packed_size(n, *w) > end - *at) return corrupt(err, "truncated column", *at);
    return 0;
}

static int decode_v2(const unsigned char *p, size_t end, batch *b, xerr *err)
{
    size_t at = 2;
    uint64_t ncols, nrows;
    if (varint_get(p, end, &at, &ncols) < 0 || ncols > BATCH_MAX_COLS) return corrupt(err, "bad column count", at);
    /* packed columns of width 0 take no bytes: the row count is capped instead */
    if (varint_get(p, end, &at, &nrows) < 0 || nrows > MAX_EMPTY_ROWS) return corrupt(err, "bad row count", at);
    if (ncols > end - at) return corrupt(err, "column count beyond the data", at);
    int rc = batch_set_ncols(b, (int)ncols);
    if (rc == 0) rc = grow_rows(b, (int)nrows);
    uint64_t *tmp = rc == 0 ? malloc((nrows ? (size_t)nrows : 1) * sizeof *tmp) : NULL;
    if (rc < 0 || !tmp) return xerr_set(err, XE_NOMEM, "out of memory decoding a batch");
    size_t n = (size_t)nrows;
    for (size_t c = 0; c < ncols && rc == 0; c++) {
        if (at >= end) { rc = corrupt(err, "truncated column", at); break; }
        int mode = p[at++];
        int64_t base = 0, prev = 0;
        int w = 0, type = TY_BIGINT;
        switch (mode) {
        case COL_TAGGED:
            for (size_t r = 0; r < n && rc == 0; r++) rc = get_tagged(p, end, &at, &batch_row(b, (int)r)[c], &prev, b, err);
            break;
        case COL_INT:
        case COL_INT_DELTA: {
            if (at >= end || !is_int_type(p[at])) { rc = corrupt(err, "bad column type", at); break; }
            type = p[at++];
            int64_t first = 0;
            if (mode == COL_INT_DELTA) {
                uint64_t z;
                if (varint_get(p, end, &at, &z) < 0) { rc = corrupt(err, "bad column start", at); break; }
                first = (int64_t)unzigzag(z);
            }
            size_t np = mode == COL_INT_DELTA && n ? n - 1 : n;
            if ((rc = get_base_width(p, end, &at, np, &base, &w, err))) break;
            bits_unpack(p + at, np, w, tmp);
            uint64_t x = (uint64_t)first;
            for (size_t r = 0; r < n; r++) {
                if (mode == COL_INT) x = (uint64_t)base + tmp[r];
                else if (r) x += (uint64_t)base + tmp[r - 1];
                int64_t i;
                memcpy(&i, &x, 8);
                batch_row(b, (int)r)[c] = val_int((sql_type)type, i);
            }
            at += packed_size(np, w);
            break;
        }
        case COL_DEC: {
            if (at >= end || p[at] > DEC_MAX_SCALE) { rc = corrupt(err, "bad decimal scale", at); break; }
            int s = p[at++];
            if ((rc = get_base_width(p, end, &at, n, &base, &w, err))) break;
            bits_unpack(p + at, n, w, tmp);
            for (size_t r = 0; r < n; r++) {
                uint64_t x = (uint64_t)base + tmp[r];
                int64_t m;
                memcpy(&m, &x, 8);
                batch_row(b, (int)r)[c] = val_double((double)m / pow10_tab[s]);
            }
            at += packed_size(n, w);
            break;
        }
        case COL_RAW_DOUBLE:
            if (n > (end - at) / 8) { rc = corrupt(err, "truncated column", at); break; }
            for (size_t r = 0; r < n; r++) {
                uint64_t bits = be64_get(p + at);
                val *v = &batch_row(b, (int)r)[c];
                *v = val_double(0);
                memcpy(&v->d, &bits, 8);
                at += 8;
            }
            break;
        default:
            rc = corrupt(err, "unknown column mode", at - 1);
        }
    }
    free(tmp);
    if (rc == 0 && at != end) rc = corrupt(err, "trailing bytes", at);
    if (rc == 0) b->nrows = (int)n;
    else batch_reset(b);
    return rc;
}

int batch_decode(const void *data, size_t n, batch *b, xerr *err)
{
    const unsigned char *p = data;
    batch_reset(b); /* empty on every error */
    if (n < 8) return corrupt(err, "truncated header", n);
    if (p[0] != ENC_MAGIC) return corrupt(err, "bad magic", (size_t)0);
    size_t end = n - 4;
    if (crc32c(0, p, end) != be32_get(p + end)) return corrupt(err, "checksum mismatch", end);
    if (p[1] == ENC_VERSION_COLS) return decode_v2(p, end, b, err);
    if (p[1] != ENC_VERSION)
        return xerr_set(err, XE_VERSION, "batch format version %d, this build reads %d and %d", p[1], ENC_VERSION,
                        ENC_VERSION_COLS);
    size_t at = 2;
    uint64_t ncols, nrows;
    if (varint_get(p, end, &at, &ncols) < 0 || ncols > BATCH_MAX_COLS) return corrupt(err, "bad column count", at);
    if (varint_get(p, end, &at, &nrows) < 0 || nrows > INT_MAX / 2) return corrupt(err, "bad row count", at);
    /* Every value takes at least one byte: no allocation beyond the input's size. */
    if (ncols && nrows > (end - at) / ncols) return corrupt(err, "row count beyond the data", at);
    if (!ncols && nrows > MAX_EMPTY_ROWS) return corrupt(err, "too many rows without columns", at);
    int rc = batch_set_ncols(b, (int)ncols);
    if (rc == 0) rc = grow_rows(b, (int)nrows);
    if (rc < 0) return xerr_set(err, rc, "out of memory decoding a batch");
    prev_ints prev;
    if (prev_init(&prev, (int)ncols) < 0) return xerr_set(err, XE_NOMEM, "out of memory decoding a batch");
    for (uint64_t r = 0; r < nrows && rc == 0; r++) {
        val *row = batch_row(b, b->nrows);
        for (uint64_t c = 0; c < ncols && rc == 0; c++) rc = get_tagged(p, end, &at, &row[c], &prev.v[c], b, err);
        if (rc == 0) b->nrows++;
    }
    prev_fini(&prev);
    if (rc == 0 && at != end) rc = corrupt(err, "trailing bytes", at);
    if (rc < 0) batch_reset(b);
    return rc;
}

int64_t batch_peek_rows(const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t at = 2;
    if (n < 3 || b[0] != ENC_MAGIC) return -1;
    for (int k = 0; k < 2; k++) {
        uint64_t v = 0;
        int shift = 0;
        for (;;) {
            if (at >= n || shift > 63) return -1;
            unsigned char c = b[at++];
            v |= (uint64_t)(c & 0x7f) << shift;
            if (!(c & 0x80)) break;
            shift += 7;
        }
        if (k == 1) return (int64_t)v;
    }
    return -1;
}

/* ------------------------------------------------------------------ key encoding */

static double double_from_key_bits(uint64_t k)
{
    uint64_t bits = (k & 0x8000000000000000ULL) ? k ^ 0x8000000000000000ULL : ~k;
    double d;
    memcpy(&d, &bits, 8);
    return d;
}

int val_key_encode(const val *vals, int n, sbuf *out)
{
    size_t start = out->len;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        const val *v = &vals[i];
        unsigned char k[VAL_KEY_MAX];
        if (v->type > TY_INTERVAL) { rc = XE_INVAL; break; }
        if (v->type != TY_TEXT) {
            rc = sbuf_add(out, k, val_key_put(v, k));
            continue;
        }
        k[0] = (unsigned char)(v->type + 1);
        rc = sbuf_add(out, k, 1);
        const char *s = v->s, *e = v->len ? v->s + v->len : v->s;
        while (rc == 0 && s < e) {
            const char *z = memchr(s, 0, (size_t)(e - s));
            size_t run = z ? (size_t)(z - s) : (size_t)(e - s);
            rc = sbuf_add(out, s, run);
            if (rc == 0 && z) rc = sbuf_add(out, "\0\xff", 2);
            s += run + (z != NULL);
        }
        if (rc == 0) rc = sbuf_add(out, "\0\x01", 2);
    }
    if (rc < 0) {
        out->len = start;
        if (out->p) out->p[start] = '\0';
    }
    return rc;
}

int val_key_decode(const void *data, size_t n, val *vals, int nvals, batch *arena_owner, xerr *err)
{
    const unsigned char *p = data;
    size_t at = 0;
    for (int i = 0; i < nvals; i++) {
        if (at >= n) return xerr_set(err, XE_CORRUPT, "corrupt key: truncated at value %d", i + 1);
        int type = p[at++] - 1;
        val *v = &vals[i];
        switch (type) {
        case TY_NULL: *v = val_null(); break;
        case TY_BOOL:
            if (at >= n || p[at] > 1) return xerr_set(err, XE_CORRUPT, "corrupt key: bad boolean");
            *v = val_int(TY_BOOL, p[at++]);
            break;
        case TY_DOUBLE:
            if (n - at < 8) return xerr_set(err, XE_CORRUPT, "corrupt key: truncated double");
            *v = val_double(double_from_key_bits(be64_get(p + at)));
            at += 8;
            break;
        case TY_TEXT: {
            if (!arena_owner) return xerr_set(err, XE_INVAL, "decoding a TEXT key needs an arena");
            /* Find the terminator and the unescaped length first. */
            size_t len = 0, j = at;
            for (;;) {
                if (j >= n || (p[j] == 0 && j + 1 >= n))
                    return xerr_set(err, XE_CORRUPT, "corrupt key: unterminated text");
                if (p[j] == 0) {
                    if (p[j + 1] == 0x01) break;
                    if (p[j + 1] != 0xff) return xerr_set(err, XE_CORRUPT, "corrupt key: bad escape in text");
                    j++;
                }
                j++;
                len++;
            }
            if (len > UINT32_MAX - 1) return xerr_set(err, XE_CORRUPT, "corrupt key: text too long");
            char *s = batch_arena_alloc(arena_owner, len + 1);
            if (!s) return xerr_set(err, XE_NOMEM, "out of memory decoding a key");
            size_t o = 0;
            while (o < len) {
                s[o++] = (char)p[at];
                at += p[at] == 0 ? 2 : 1;
            }
            s[len] = '\0';
            at += 2; /* the terminator */
            *v = val_text(s, (uint32_t)len);
            break;
        }
        case TY_INT:
        case TY_BIGINT:
        case TY_TIMESTAMP:
        case TY_INTERVAL: {
            if (n - at < 8) return xerr_set(err, XE_CORRUPT, "corrupt key: truncated integer");
            uint64_t u = be64_get(p + at) ^ 0x8000000000000000ULL;
            int64_t i64;
            memcpy(&i64, &u, 8);
            *v = val_int((sql_type)type, i64);
            at += 8;
            break;
        }
        default: return xerr_set(err, XE_CORRUPT, "corrupt key: unknown type tag %d", type + 1);
        }
    }
    if (at > INT_MAX) return xerr_set(err, XE_CORRUPT, "corrupt key: too long");
    return (int)at;
}
