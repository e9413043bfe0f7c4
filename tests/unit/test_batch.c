/* Unit tests for exec/batch.c (values, batches, encodings) and exec/fmt_*.c (format.h)
 * (CSV and JSON-lines decoders, timestamps, value printing, encoders). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "exec/batch.h"
#include "exec/format.h"
#include "parser/parser.h"

#include <time.h>

#include "tests/unit/batch_ref.h"

/* ------------------------------------------------------------------ helpers */

static uint64_t rng_state = 88172645463325252ULL;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* A random value; TEXT bytes come from a small alphabet with NULs so that
 * prefixes and escapes are common. */
static val random_val(batch *arena, int type)
{
    static const char alpha[] = {'a', 'b', '\0', '\xff', '\x01', 'z'};
    switch (type) {
    case TY_NULL: return val_null();
    case TY_BOOL: return val_int(TY_BOOL, (int64_t)(rnd() & 1));
    case TY_DOUBLE: {
        static const double special[] = {0.0, -0.0, 1.0, -1.0, 0.5, 1e300, -1e300, INFINITY, -INFINITY,
                                         9007199254740993.0, 4.9e-324, 3.0};
        if (rnd() % 3 == 0) return val_double(special[rnd() % 12]);
        return val_double((double)(int64_t)(rnd() % 2001 - 1000) / 8.0);
    }
    case TY_TEXT: {
        char buf[8];
        size_t n = rnd() % 6;
        for (size_t i = 0; i < n; i++) buf[i] = alpha[rnd() % sizeof alpha];
        val v;
        assert_int_equal(batch_put_text(arena, &v, buf, n), 0);
        return v;
    }
    default: {
        static const int64_t special[] = {0, 1, -1, INT64_MIN, INT64_MAX, 1700000000000LL, -86400000LL};
        if (rnd() % 3 == 0) return val_int((sql_type)type, special[rnd() % 7]);
        return val_int((sql_type)type, (int64_t)(rnd() % 2001) - 1000);
    }
    }
}

static int sign(int x) { return (x > 0) - (x < 0); }

/* ------------------------------------------------------------------ batches */

static void test_batch_growth_and_arena_stability(void **state)
{
    (void)state;
    batch b;
    assert_int_equal(batch_init(&b, 2, 1), 0);
    const char *ptrs[5000];
    for (int r = 0; r < 5000; r++) {
        char s[32];
        int n = snprintf(s, sizeof s, "row-%d", r);
        val *row = batch_add_row(&b);
        assert_non_null(row);
        row[0] = val_int(TY_BIGINT, r);
        assert_int_equal(batch_put_text(&b, &row[1], s, (size_t)n), 0);
        ptrs[r] = row[1].s;
    }
    assert_int_equal(b.nrows, 5000);
    assert_true(b.cap >= 5000);
    for (int r = 0; r < 5000; r++) {
        char s[32];
        snprintf(s, sizeof s, "row-%d", r);
        const val *row = batch_row(&b, r);
        assert_int_equal(row[0].i, r);
        assert_ptr_equal(row[1].s, ptrs[r]); /* the arena never moved */
        assert_string_equal(row[1].s, s);    /* and the copies are NUL-terminated */
    }
    /* A string bigger than any block. */
    static char big[100000];
    memset(big, 'x', sizeof big);
    val *row = batch_add_row(&b);
    assert_int_equal(batch_put_text(&b, &row[1], big, sizeof big), 0);
    assert_int_equal(row[1].len, sizeof big);
    assert_memory_equal(row[1].s, big, sizeof big);
    assert_string_equal(batch_row(&b, 0)[1].s, "row-0");
    batch_fini(&b);
    batch_fini(&b); /* a finished batch can be finished again */
}

static void test_batch_reset_reuses_memory(void **state)
{
    (void)state;
    batch b;
    assert_int_equal(batch_init(&b, 1, 4), 0);
    for (int round = 0; round < 20; round++) {
        for (int r = 0; r < 3000; r++) {
            val v;
            assert_int_equal(batch_put_text(&b, &v, "some text of twenty", 19), 0);
            assert_int_equal(batch_append_row(&b, &v), 0);
        }
        assert_int_equal(b.nrows, 3000);
        batch_reset(&b);
        assert_int_equal(b.nrows, 0);
        assert_int_equal(b.arena_bytes, 0);
    }
    /* After a few rounds the steady state allocates nothing: v and the single
     * block stay where they are. */
    val *v0 = b.v;
    struct batch_blk *k0 = b.blk;
    for (int round = 0; round < 5; round++) {
        for (int r = 0; r < 3000; r++) {
            val v = val_text("some text of twenty", 19);
            assert_int_equal(batch_append_row(&b, &v), 0);
        }
        batch_reset(&b);
        assert_ptr_equal(b.v, v0);
        assert_ptr_equal(b.blk, k0);
    }
    batch_fini(&b);
}

static void test_batch_append_own_row(void **state)
{
    (void)state;
    batch b;
    assert_int_equal(batch_init(&b, 2, 1), 0);
    val row[2] = {val_int(TY_INT, 7), val_text("seven", 5)};
    assert_int_equal(batch_append_row(&b, row), 0);
    /* Appending a row of b to b itself while b->v grows. */
    for (int i = 0; i < 100; i++) assert_int_equal(batch_append_row(&b, batch_row(&b, i)), 0);
    assert_int_equal(b.nrows, 101);
    assert_int_equal(batch_row(&b, 100)[0].i, 7);
    assert_memory_equal(batch_row(&b, 100)[1].s, "seven", 5);
    batch_fini(&b);
}

/* ------------------------------------------------------------------ comparison and hashing */

static void test_val_compare_numeric(void **state)
{
    (void)state;
    val i3 = val_int(TY_INT, 3), b3 = val_int(TY_BIGINT, 3), d3 = val_double(3.0), d35 = val_double(3.5);
    val ts = val_int(TY_TIMESTAMP, 3), nul = val_null(), t = val_text("a", 1), f = val_int(TY_BOOL, 0);
    assert_int_equal(val_compare(&i3, &b3), 0);
    assert_int_equal(val_compare(&b3, &d3), 0);
    assert_int_equal(val_compare(&ts, &d3), 0);
    assert_true(val_equal(&i3, &d3));
    assert_true(val_hash(&i3, 1) == val_hash(&b3, 1));
    assert_true(val_hash(&i3, 1) == val_hash(&d3, 1));
    assert_true(val_compare(&b3, &d35) < 0 && val_compare(&d35, &b3) > 0);
    assert_true(val_compare(&nul, &f) < 0 && val_compare(&f, &i3) < 0 && val_compare(&i3, &t) < 0);
    assert_true(val_equal(&nul, &nul));
    /* Exact int64/double comparison where a cast to double would round. */
    val big = val_int(TY_BIGINT, 9007199254740993LL), dbig = val_double(9007199254740992.0);
    assert_true(val_compare(&big, &dbig) > 0);
    assert_false(val_equal(&big, &dbig));
    val imax = val_int(TY_BIGINT, INT64_MAX), d63 = val_double(9223372036854775808.0);
    assert_true(val_compare(&imax, &d63) < 0);
    val imin = val_int(TY_BIGINT, INT64_MIN), dm63 = val_double(-9223372036854775808.0);
    assert_int_equal(val_compare(&imin, &dm63), 0);
    assert_true(val_hash(&imin, 0) == val_hash(&dm63, 0));
    /* -0.0 == 0.0 == 0, NaN above +inf and equal to itself. */
    val nz = val_double(-0.0), pz = val_double(0.0), z = val_int(TY_INT, 0);
    assert_true(val_equal(&nz, &pz) && val_equal(&nz, &z));
    assert_true(val_hash(&nz, 5) == val_hash(&z, 5));
    val nan = val_double(NAN), inf = val_double(INFINITY);
    assert_true(val_compare(&inf, &nan) < 0 && val_compare(&imax, &nan) < 0);
    assert_true(val_equal(&nan, &nan));
    /* Text: bytewise, prefix first. */
    val ab = val_text("ab", 2), abc = val_text("abc", 3), ab0 = val_text("ab\0", 3);
    assert_true(val_compare(&ab, &abc) < 0 && val_compare(&ab, &ab0) < 0 && val_compare(&ab0, &abc) < 0);
    assert_true(val_hash(&ab, 0) != val_hash(&abc, 0));
}

static void test_val_hash_equal_values(void **state)
{
    (void)state;
    batch arena;
    assert_int_equal(batch_init(&arena, 1, 1), 0);
    static const int types[] = {TY_NULL, TY_BOOL, TY_INT, TY_BIGINT, TY_DOUBLE, TY_TEXT, TY_TIMESTAMP};
    for (int i = 0; i < 20000; i++) {
        val a = random_val(&arena, types[rnd() % 7]), b = random_val(&arena, types[rnd() % 7]);
        int c = val_compare(&a, &b);
        assert_int_equal(sign(c), -sign(val_compare(&b, &a)));
        assert_int_equal(val_equal(&a, &b), c == 0);
        if (c == 0) assert_true(val_hash(&a, 42) == val_hash(&b, 42));
    }
    batch_fini(&arena);
}

/* ------------------------------------------------------------------ batch encoding */

static void assert_batches_equal(const batch *a, const batch *b)
{
    assert_int_equal(a->ncols, b->ncols);
    assert_int_equal(a->nrows, b->nrows);
    for (int r = 0; r < a->nrows; r++) {
        for (int c = 0; c < a->ncols; c++) {
            const val *x = &batch_row(a, r)[c], *y = &batch_row(b, r)[c];
            assert_int_equal(x->type, y->type);
            if (x->type == TY_DOUBLE) assert_memory_equal(&x->d, &y->d, 8); /* bit-exact */
            else if (x->type == TY_TEXT) {
                assert_int_equal(x->len, y->len);
                assert_memory_equal(x->s, y->s, x->len);
            } else if (x->type != TY_NULL) assert_true(x->i == y->i);
        }
    }
}

static void random_batch(batch *b, int ncols, int nrows)
{
    static const int types[] = {TY_NULL, TY_BOOL, TY_INT, TY_BIGINT, TY_DOUBLE, TY_TEXT, TY_TIMESTAMP, TY_INTERVAL};
    assert_int_equal(batch_set_ncols(b, ncols), 0);
    for (int r = 0; r < nrows; r++) {
        val *row = batch_add_row(b);
        assert_non_null(row);
        for (int c = 0; c < ncols; c++) {
            int t = rnd() % 4 == 0 ? (int)(rnd() % 8) : types[(c % 7) + 1];
            row[c] = random_val(b, t); /* TEXT goes straight into b's arena */
        }
    }
}

static void test_batch_encode_roundtrip(void **state)
{
    (void)state;
    batch a, b;
    sbuf s;
    sbuf_init(&s);
    assert_int_equal(batch_init(&a, 1, 1), 0);
    memset(&b, 0, sizeof b); /* decoding into a zeroed batch works too */
    for (int i = 0; i < 300; i++) {
        int ncols = (int)(rnd() % 9), nrows = (int)(rnd() % 40);
        if (i == 7) ncols = 100; /* wider than the stack scratch */
        random_batch(&a, ncols, nrows);
        sbuf_reset(&s);
        assert_int_equal(batch_encode(&a, &s), 0);
        xerr e;
        assert_int_equal(batch_decode(s.p, s.len, &b, &e), 0);
        assert_batches_equal(&a, &b);
    }
    /* Timestamps cost little: delta coding. */
    assert_int_equal(batch_set_ncols(&a, 1), 0);
    for (int r = 0; r < 1000; r++) {
        val v = val_int(TY_TIMESTAMP, 1700000000000LL + r * 10);
        assert_int_equal(batch_append_row(&a, &v), 0);
    }
    sbuf_reset(&s);
    assert_int_equal(batch_encode(&a, &s), 0);
    assert_true(s.len < 1000 * 3 + 20);
    batch_fini(&a);
    batch_fini(&b);
    sbuf_fini(&s);
}

/* Version 2 packs columns of one type: integers by frame of reference or by
 * differences, doubles that are short decimals as scaled integers.  Every
 * shape comes back bit for bit. */
static void test_batch_encode_columns(void **state)
{
    (void)state;
    static const double odd[] = {0.1 + 0.2, -0.0, 1e300, -1e-300, 5e-324, 1.0 / 3, 123456789.123456789};
    batch a, b;
    sbuf s;
    sbuf_init(&s);
    assert_int_equal(batch_init(&a, 1, 1), 0);
    memset(&b, 0, sizeof b);
    xerr e;
    for (int i = 0; i < 400; i++) {
        int nrows = i % 50 == 0 ? 70000 : (int)(rnd() % 1500), ncols = 1 + (int)(rnd() % 5);
        if (i % 50 == 1) nrows = 1;
        if (i % 50 == 2) nrows = 0;
        assert_int_equal(batch_set_ncols(&a, ncols), 0);
        int kind[8];
        for (int c = 0; c < ncols; c++) kind[c] = (int)(rnd() % 8);
        int64_t t = (int64_t)(rnd() % (1ULL << 40)) - (1LL << 39);
        for (int r = 0; r < nrows; r++) {
            val *row = batch_add_row(&a);
            assert_non_null(row);
            for (int c = 0; c < ncols; c++) {
                switch (kind[c]) {
                case 0: t += (int64_t)(rnd() % 3); row[c] = val_int(TY_TIMESTAMP, t); break; /* in time order */
                case 1: row[c] = val_int(TY_BIGINT, (int64_t)(rnd() % 10000)); break;
                case 2: row[c] = val_int(TY_INT, r % 2 ? INT64_MIN : INT64_MAX); break; /* 64 bits wide */
                case 3: row[c] = val_double((double)((int64_t)(rnd() % 200001) - 100000) / 100.0); break;
                case 4: row[c] = val_double((double)(int64_t)(rnd() % 1000) / 1000000.0); break;
                case 5: row[c] = val_double(odd[rnd() % 7]); break; /* not decimals: raw */
                case 6: row[c] = val_double(r == nrows / 2 ? NAN : 2.5); break;
                default: row[c] = r % 7 ? val_int(TY_INTERVAL, 42) : val_null(); break; /* tagged */
                }
            }
        }
        sbuf_reset(&s);
        assert_int_equal(batch_encode(&a, &s), 0);
        assert_int_equal(batch_decode(s.p, s.len, &b, &e), 0);
        assert_batches_equal(&a, &b);
        batch_reset(&a);
    }
    /* the stream log's case: time in order, a key among 10,000, a price */
    assert_int_equal(batch_set_ncols(&a, 3), 0);
    for (int r = 0; r < 1024; r++) {
        val *row = batch_add_row(&a);
        row[0] = val_int(TY_TIMESTAMP, 1700000000000LL + r / 100);
        row[1] = val_int(TY_BIGINT, (int64_t)(rnd() % 10000));
        row[2] = val_double((double)((int64_t)(rnd() % 200001) - 100000) / 100.0);
    }
    sbuf_reset(&s);
    assert_int_equal(batch_encode(&a, &s), 0);
    assert_true(s.len < 1024 * 9 / 2);
    /* A valid CRC over a nonsense version 2 header is caught by the bounds
     * checks: too many rows, too wide, an unknown scale or mode, short data. */
    static const unsigned char bad[][10] = {
        {0xAB, 2, 1, 0xff, 0xff, 0x7f, 1, 3, 0, 1},   /* rows beyond the cap */
        {0xAB, 2, 1, 8, 1, 3, 0, 65, 0, 0},           /* width 65 */
        {0xAB, 2, 1, 8, 3, 7, 0, 8, 0, 0},            /* scale 7 */
        {0xAB, 2, 1, 8, 9, 0, 0, 0, 0, 0},            /* unknown mode */
        {0xAB, 2, 1, 8, 1, 3, 0, 9, 0, 0},            /* 8 values of 9 bits in 2 bytes */
        {0xAB, 2, 1, 8, 1, 1, 0, 1, 0, 0},            /* BOOL is not packed */
        {0xAB, 2, 1, 8, 4, 0, 0, 0, 0, 0},            /* 8 raw doubles in 4 bytes */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsigned char m[14];
        memcpy(m, bad[i], 10);
        be32_put(m + 10, crc32c(0, m, 10));
        assert_int_equal(batch_decode(m, sizeof m, &b, &e), XE_CORRUPT);
        assert_int_equal(b.nrows, 0);
    }
    batch_fini(&a);
    batch_fini(&b);
    sbuf_fini(&s);
}

/* One random column value of a given shape (see test_batch_encode_same_bytes). */
static val shaped_val(batch *arena, int shape, int r, int n, int64_t *t, int64_t k0, int scale)
{
    static const double odd[] = {0.1 + 0.2, -0.0, 1e300, -1e-300, 5e-324, 1.0 / 3, INFINITY, -INFINITY, NAN};
    static const double p10[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7};
    static const int ints[] = {TY_INT, TY_BIGINT, TY_TIMESTAMP, TY_INTERVAL};
    int it = ints[(k0 & 0x7fffffff) % 4];
    switch (shape) {
    case 0: *t += (int64_t)(rnd() % 3); return val_int(TY_TIMESTAMP, *t); /* in time order */
    case 1: *t += (int64_t)(rnd() % (1ULL << (k0 & 31))); return val_int(it, *t); /* in order, steps of some width */
    case 2: *t -= (int64_t)(rnd() % 5); return val_int(it, *t); /* falling */
    case 3: return val_int(it, k0 + (int64_t)(rnd() % (1ULL << (k0 & 31)))); /* a key of some width */
    case 4: return val_int(it, (int64_t)rnd()); /* 64 bits wide */
    case 5: return val_int(it, r % 2 ? INT64_MIN : INT64_MAX);
    case 6: return val_int(it, k0); /* all equal */
    case 7: return val_int(it, r % 3 ? INT64_MAX - (int64_t)(rnd() % 4) : INT64_MIN + (int64_t)(rnd() % 4)); /* wraps */
    case 8: return val_double((double)((int64_t)(rnd() % 200001) - 100000) / 100.0); /* a price */
    case 9: return val_double((double)((int64_t)(rnd() % (1ULL << (k0 & 31))) - (k0 & 1023)) / p10[scale]);
    case 10: return val_double((double)(int64_t)(rnd() >> (rnd() % 64)) / p10[scale]); /* int32 and beyond */
    case 11: return val_double(r == n / 2 ? odd[rnd() % 9] : (double)(int64_t)(rnd() % 1000) / 10.0); /* one odd */
    case 12: return val_double(odd[rnd() % 9]);
    case 13: return val_double((double)k0 / p10[scale]); /* all equal */
    case 14: return val_double(r % 2 ? 2147483647.0 : -2147483648.0); /* the int32 ends */
    case 15: return val_double(r % 5 ? (double)(int64_t)(rnd() % 100) / 10.0 : (double)(int64_t)(rnd() % 100) / 1000.0); /* scales mix */
    case 16: return r == n - 1 && n > 1 ? val_null() : val_int(it, (int64_t)(rnd() % 100)); /* a NULL last */
    case 17: return r == n - 1 && n > 1 ? val_int(TY_BIGINT, 1) : val_double(1.5); /* a stray type last */
    case 18: return rnd() % 2 ? val_int(TY_INT, (int64_t)(rnd() % 100)) : val_int(TY_BIGINT, (int64_t)(rnd() % 100));
    case 19: { /* rising in steps that wrap past INT64_MAX midway: the differences look in order */
        uint64_t u = (uint64_t)INT64_MAX - (uint64_t)n + (uint64_t)r * 2 + (uint64_t)(rnd() % 2);
        int64_t x;
        memcpy(&x, &u, 8);
        return val_int(it, x);
    }
    case 20: { /* steps of 2^61: wrapping differences too wide to sum safely */
        uint64_t u = (uint64_t)r << 61;
        int64_t x;
        memcpy(&x, &u, 8);
        return val_int(it, x);
    }
    case 21: return val_int(it, r < 40 ? r : (int64_t)(rnd() % 1000)); /* in order at first only */
    case 22: return val_int(it, r < n / 2 ? INT64_MAX : INT64_MIN + 3); /* one wrapping step up */
    default: return random_val(arena, (int)(rnd() % 8)); /* tagged: NULL, BOOL, TEXT, anything */
    }
}

/* The encoder's bytes are exactly those of the straightforward encoder of
 * batch_ref.h (logs of old and new builds are read by both and compared
 * between replicas), over many shapes of columns and batch sizes. */
static void test_batch_encode_same_bytes(void **state)
{
    (void)state;
    batch a, b;
    sbuf s, ref;
    sbuf_init(&s);
    sbuf_init(&ref);
    assert_int_equal(batch_init(&a, 1, 1), 0);
    memset(&b, 0, sizeof b);
    xerr e;
    for (int i = 0; i < 3000; i++) {
        int nrows = i % 3 == 0 ? 1 + (int)(rnd() % 1024) : i % 3 == 1 ? 1 + (int)(rnd() % 20) : (int)(rnd() % 2100);
        if (i % 500 == 0) nrows = 20000 + (int)(rnd() % 45537); /* up to 65536: version 2 */
        int ncols = 1 + (int)(rnd() % 6);
        assert_int_equal(batch_set_ncols(&a, ncols), 0);
        int shape[8], scale[8];
        int64_t t[8], k0[8];
        for (int c = 0; c < ncols; c++) {
            shape[c] = (int)(rnd() % 24);
            scale[c] = (int)(rnd() % 8);
            k0[c] = (int64_t)rnd() >> (rnd() % 64);
            t[c] = (int64_t)(rnd() % (1ULL << 41)) - (1LL << 40);
        }
        for (int r = 0; r < nrows; r++) {
            val *row = batch_add_row(&a);
            assert_non_null(row);
            for (int c = 0; c < ncols; c++) row[c] = shaped_val(&a, shape[c], r, nrows, &t[c], k0[c], scale[c]);
        }
        sbuf_reset(&s);
        sbuf_reset(&ref);
        assert_int_equal(batch_encode(&a, &s), 0);
        assert_int_equal(ref_encode_v2(&a, &ref), 0);
        if (s.len != ref.len || memcmp(s.p, ref.p, s.len) != 0) {
            fprintf(stderr, "batch %d: %d rows, shapes", i, nrows);
            for (int c = 0; c < ncols; c++) fprintf(stderr, " %d/%d", shape[c], scale[c]);
            fprintf(stderr, ": %zu bytes, the reference %zu\n", s.len, ref.len);
            fail();
        }
        assert_int_equal(batch_decode(s.p, s.len, &b, &e), 0);
        assert_batches_equal(&a, &b);
        batch_reset(&a);
    }
    batch_fini(&a);
    batch_fini(&b);
    sbuf_fini(&s);
    sbuf_fini(&ref);
}

static void test_batch_decode_corruption(void **state)
{
    (void)state;
    batch a, b;
    sbuf s;
    sbuf_init(&s);
    assert_int_equal(batch_init(&a, 1, 1), 0);
    assert_int_equal(batch_init(&b, 1, 1), 0);
    random_batch(&a, 4, 30);
    assert_int_equal(batch_encode(&a, &s), 0);
    xerr e;
    /* Every truncation fails cleanly. */
    for (size_t n = 0; n < s.len; n++) {
        unsigned char *copy = malloc(n ? n : 1); /* exact size so ASan sees overreads */
        memcpy(copy, s.p, n);
        assert_int_equal(batch_decode(copy, n, &b, &e), XE_CORRUPT);
        assert_int_equal(b.nrows, 0);
        free(copy);
    }
    /* Every single-bit flip is caught (CRC32C detects all of them). */
    for (size_t i = 0; i < s.len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            s.p[i] ^= (char)(1 << bit);
            assert_int_equal(batch_decode(s.p, s.len, &b, &e), XE_CORRUPT);
            s.p[i] ^= (char)(1 << bit);
        }
    }
    assert_int_equal(batch_decode(s.p, s.len, &b, &e), 0);
    assert_batches_equal(&a, &b);
    /* A valid CRC over nonsense is still caught by the bounds checks. */
    unsigned char evil[] = {0xAB, 1, 2, 0x7f, 7, 0xff, 0xff, 0xff, 0xff, 0x0f, 'x', 0, 0, 0, 0};
    be32_put(evil + sizeof evil - 4, crc32c(0, evil, sizeof evil - 4));
    assert_int_equal(batch_decode(evil, sizeof evil, &b, &e), XE_CORRUPT);
    unsigned char ver[] = {0xAB, 9, 0, 0, 0, 0, 0, 0};
    be32_put(ver + 4, crc32c(0, ver, 4));
    assert_int_equal(batch_decode(ver, sizeof ver, &b, &e), XE_VERSION);
    batch_fini(&a);
    batch_fini(&b);
    sbuf_fini(&s);
}

/* ------------------------------------------------------------------ key encoding */

static int memcmp_keys(const sbuf *a, const sbuf *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->p, b->p, n);
    if (c) return sign(c);
    return (a->len > b->len) - (a->len < b->len);
}

static void test_key_order(void **state)
{
    (void)state;
    static const int types[] = {TY_BOOL, TY_INT, TY_BIGINT, TY_DOUBLE, TY_TEXT, TY_TIMESTAMP, TY_INTERVAL};
    batch arena, out;
    assert_int_equal(batch_init(&arena, 1, 1), 0);
    assert_int_equal(batch_init(&out, 1, 1), 0);
    sbuf ka, kb;
    sbuf_init(&ka);
    sbuf_init(&kb);
    for (int i = 0; i < 50000; i++) {
        if (i % 1000 == 0) batch_reset(&arena);
        int t = types[rnd() % 7];
        /* Two-column keys: (value or NULL of type t, a BIGINT), so that the
         * composition of keys is checked too. */
        val a[2], b[2];
        a[0] = rnd() % 8 ? random_val(&arena, t) : val_null();
        b[0] = rnd() % 8 ? random_val(&arena, t) : val_null();
        a[1] = random_val(&arena, TY_BIGINT);
        b[1] = random_val(&arena, TY_BIGINT);
        int want = val_compare(&a[0], &b[0]);
        if (want == 0) want = val_compare(&a[1], &b[1]);
        sbuf_reset(&ka);
        sbuf_reset(&kb);
        assert_int_equal(val_key_encode(a, 2, &ka), 0);
        assert_int_equal(val_key_encode(b, 2, &kb), 0);
        if (sign(want) != memcmp_keys(&ka, &kb)) {
            fprintf(stderr, "type %d: compare %d, memcmp %d\n", t, want, memcmp_keys(&ka, &kb));
            fail();
        }
        /* And back. */
        val d[3];
        xerr e;
        assert_int_equal(val_key_decode(ka.p, ka.len, d, 2, &out, &e), (int)ka.len);
        assert_int_equal(d[0].type, a[0].type);
        assert_int_equal(val_compare(&d[0], &a[0]), 0);
        assert_int_equal(val_compare(&d[1], &a[1]), 0);
        /* Truncated keys fail cleanly. */
        for (size_t n = 0; n < ka.len; n++) {
            int rc = val_key_decode(ka.p, n, d, 2, &out, &e);
            assert_true(rc == XE_CORRUPT);
        }
        assert_true(val_key_decode(ka.p, ka.len, d, 3, &out, &e) == XE_CORRUPT);
        if (i % 500 == 0) batch_reset(&out);
    }
    sbuf_fini(&ka);
    sbuf_fini(&kb);
    batch_fini(&arena);
    batch_fini(&out);
}


/* ------------------------------------------------------------------ timestamps and numbers as text */

static int64_t ts(const char *s)
{
    int64_t ms = INT64_MIN;
    if (fmt_parse_timestamp(s, strlen(s), &ms) != 0) {
        fprintf(stderr, "did not parse: %s\n", s);
        fail();
    }
    return ms;
}

static int ts_bad(const char *s)
{
    int64_t ms;
    return fmt_parse_timestamp(s, strlen(s), &ms) == XE_INPUT;
}

static void test_timestamps(void **state)
{
    (void)state;
    assert_true(ts("2023-11-14T22:13:20Z") == 1700000000000LL);
    assert_true(ts("2023-11-14T22:13:20.000Z") == 1700000000000LL);
    assert_true(ts("2023-11-14 22:13:20.5") == 1700000000500LL);
    assert_true(ts("2023-11-14t22:13:20.123456789z") == 1700000000123LL);
    assert_true(ts(" 2023-11-14T22:13:20Z ") == 1700000000000LL);
    assert_true(ts("2023-11-14T23:13:20+01:00") == 1700000000000LL);
    assert_true(ts("2023-11-14T23:13:20+0100") == 1700000000000LL);
    assert_true(ts("2023-11-14T23:13:20+01") == 1700000000000LL);
    assert_true(ts("2023-11-14T17:13:20-05:00") == 1700000000000LL);
    assert_true(ts("2023-11-15T03:43:20+05:30") == 1700000000000LL);
    assert_true(ts("2023-11-14T22:13") == 1700000000000LL - 20000);
    assert_true(ts("2023-11-14") == 1700000000000LL - (22 * 3600 + 13 * 60 + 20) * 1000LL);
    assert_true(ts("1700000000000") == 1700000000000LL);
    assert_true(ts("-86400000") == -86400000LL);
    /* Leap years and dates before 1970. */
    assert_true(ts("2024-02-29T00:00:00Z") == 1709164800000LL);
    assert_true(ts("2000-02-29T00:00:00Z") == 951782400000LL);
    assert_true(ts("1969-12-31T23:59:59.999Z") == -1);
    assert_true(ts("1900-01-01T00:00:00Z") == -2208988800000LL);
    assert_true(ts("1600-02-29T00:00:00Z") == -11670998400000LL);
    assert_true(ts("0000-01-01T00:00:00Z") == -62167219200000LL);
    assert_true(ts("9999-12-31T23:59:59.999Z") == 253402300799999LL);
    const char *bad[] = {"", "abc", "2023-02-29", "1900-02-29", "2023-13-01", "2023-00-10", "2023-11-31",
                         "2023-11-14T24:00", "2023-11-14T22:60", "2023-11-14T22:13:61", "2023-11-14T22:13:20Zjunk",
                         "2023-11-14T22:13:20.", "2023-1-14", "2023-11-14T", "2023-11-14T22", "2023-11-14T22:13:20+",
                         "2023-11-14T22:13:20+05:", "2023-11-14T22:13:20+24:00", "99999999999999999999",
                         "2023-11-14T22:13:20.1234567890Z", "-", "2023-11-14X22:13"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (!ts_bad(bad[i])) {
            fprintf(stderr, "accepted: '%s'\n", bad[i]);
            fail();
        }
    }
    /* Printing. */
    char buf[FMT_TS_BUF];
    fmt_timestamp(1700000000000LL, buf);
    assert_string_equal(buf, "2023-11-14T22:13:20.000Z");
    fmt_timestamp(-1, buf);
    assert_string_equal(buf, "1969-12-31T23:59:59.999Z");
    fmt_timestamp(951782400123LL, buf);
    assert_string_equal(buf, "2000-02-29T00:00:00.123Z");
    fmt_timestamp(INT64_MIN, buf); /* no crash, no overflow */
    fmt_timestamp(INT64_MAX, buf);
    /* Against the C library over random dates, and print/parse round trips. */
    for (int i = 0; i < 20000; i++) {
        struct tm tm = {0};
        tm.tm_year = (int)(rnd() % 10000) - 1900;
        tm.tm_mon = (int)(rnd() % 12);
        tm.tm_mday = 1 + (int)(rnd() % 28);
        tm.tm_hour = (int)(rnd() % 24);
        tm.tm_min = (int)(rnd() % 60);
        tm.tm_sec = (int)(rnd() % 60);
        char s[64];
        snprintf(s, sizeof s, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                 tm.tm_hour, tm.tm_min, tm.tm_sec);
        int64_t want = (int64_t)timegm(&tm) * 1000;
        assert_true(ts(s) == want);
        int64_t ms = want + (int64_t)(rnd() % 1000);
        fmt_timestamp(ms, buf);
        assert_true(ts(buf) == ms);
    }
}

/* fmt_double against what it stands in for: "%.15g", "%.16g", "%.17g",
 * the first that reads back. */
static void check_double(double d)
{
    char want[64], got[FMT_DOUBLE_BUF];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(want, sizeof want, "%.*g", prec, d);
        if (strtod(want, NULL) == d) break;
    }
    if (isnan(d)) strcpy(want, "NaN");
    else if (isinf(d)) strcpy(want, d > 0 ? "Infinity" : "-Infinity");
    size_t n = fmt_double(d, got);
    if (strcmp(got, want) != 0 || n != strlen(want)) {
        uint64_t bits;
        memcpy(&bits, &d, 8);
        print_error("fmt_double(%a = 0x%016llx): '%s', printf '%s'\n", d, (unsigned long long)bits, got, want);
        fail();
    }
}

static void test_double_text(void **state)
{
    (void)state;
    char buf[FMT_DOUBLE_BUF];
    struct { double d; const char *s; } cases[] = {
        {2.5 + 3.5, "6"}, {2.5, "2.5"}, {0.1, "0.1"}, {0.1 + 0.2, "0.30000000000000004"}, {1e21, "1e+21"},
        {-0.0, "-0"}, {100, "100"}, {1.0 / 3, "0.3333333333333333"}, {123456789012345678.0, "1.2345678901234568e+17"},
        {5e-324, "4.94065645841247e-324"}, {NAN, "NaN"}, {INFINITY, "Infinity"}, {-INFINITY, "-Infinity"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fmt_double(cases[i].d, buf);
        assert_string_equal(buf, cases[i].s);
    }
    /* Every other case against the printf loop fmt_double stands in for. */
    for (int i = 0; i < 1000; i++) {
        check_double((double)i / 1000);
        check_double(-(double)i);
    }
    for (int e = -1074; e <= 1023; e++) { /* powers of two and their neighbours: uneven ulps */
        double p = ldexp(1, e);
        check_double(p);
        check_double(-nextafter(p, 0));
        check_double(nextafter(p, INFINITY));
    }
    for (int e = -30; e <= 30; e++) { /* powers of ten and their neighbours: where X changes */
        double p = pow(10, e);
        for (int k = -3; k <= 3; k++) {
            double x = p;
            for (int j = 0; j < (k < 0 ? -k : k); j++) x = nextafter(x, k < 0 ? 0 : INFINITY);
            check_double(x);
            check_double(-x);
        }
        check_double(p * 0.9999999999999999);
        check_double(p * 0.99999999999999999);
        check_double(p - p / 1e15);
        check_double(p - p / 1e16);
    }
    double specials[] = {0.0, -0.0, NAN, -NAN, INFINITY, -INFINITY, DBL_MIN, -DBL_MIN, DBL_MAX, DBL_TRUE_MIN,
                         nextafter(DBL_MIN, 0), 1e15, 999999999999999.0, 999999999999999.9, 9999999999999998.0,
                         1e-4, 9.99999999999999e-5, 0.99999999999999994, 0.30000000000000004, 9007199254740993.0};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) check_double(specials[i]);
    const char *env = getenv("ARES_DOUBLE_CHECKS");
    long n = env ? atol(env) : 250000; /* per kind below; ARES_DOUBLE_CHECKS=3000000 for a long run */
    for (long i = 0; i < n; i++) {
        uint64_t bits = rnd();
        double d;
        memcpy(&d, &bits, 8);
        check_double(d);                                          /* random bit patterns */
        bits = (bits & 0x800fffffffffffffull) | (uint64_t)(1009 + rnd() % 64) << 52;
        memcpy(&d, &bits, 8);
        check_double(d);                                          /* the same, where the fast paths work */
        int64_t c = (int64_t)(rnd() % 2000000001) - 1000000000;
        int k = 1 + (int)(rnd() % 3);
        check_double((double)c / (k == 1 ? 10.0 : k == 2 ? 100.0 : 1000.0)); /* 1-3 decimals */
        double sum = 0;
        for (int j = 1 + (int)(rnd() % 20); j > 0; j--)
            sum += (double)((int64_t)(rnd() % 200001) - 100000) / 100.0;
        check_double(sum);                                        /* sums of cents, like SUM(v) */
        check_double((double)(int64_t)(rnd() >> (rnd() % 64)) * (rnd() & 1 ? 1 : -1)); /* integers */
        check_double((double)(int64_t)(rnd() % 100000000000000ull) / 1000.0);
        check_double(ldexp((double)(rnd() >> 11), -(int)(rnd() % 120)));  /* small and tiny */
        check_double(ldexp((double)(rnd() >> 11), (int)(rnd() % 60)));    /* large */
    }
}

static void test_parse_value(void **state)
{
    (void)state;
    val v;
    char why[200];
#define OK(t, s) assert_int_equal(fmt_parse_value(t, s, strlen(s), 1, &v, why, sizeof why), 0)
#define BAD(t, s, msg)                                                                 \
    do {                                                                               \
        assert_int_equal(fmt_parse_value(t, s, strlen(s), 1, &v, why, sizeof why), XE_INPUT); \
        assert_string_equal(why, msg);                                                 \
    } while (0)
    OK(TY_BIGINT, "9223372036854775807");
    assert_true(v.i == INT64_MAX && v.type == TY_BIGINT);
    OK(TY_BIGINT, "-9223372036854775808");
    assert_true(v.i == INT64_MIN);
    OK(TY_INT, " +42 ");
    assert_true(v.i == 42 && v.type == TY_INT);
    BAD(TY_BIGINT, "9223372036854775808", "'9223372036854775808' is out of range for BIGINT");
    BAD(TY_BIGINT, "1.5", "'1.5' is not a BIGINT");
    BAD(TY_INT, "12abc", "'12abc' is not an INT");
    BAD(TY_INT, "1.0", "'1.0' is not an INT"); /* issue 16: not "a INT" */
    BAD(TY_BIGINT, "-", "'-' is not a BIGINT");
    OK(TY_DOUBLE, "2.5");
    assert_true(v.d == 2.5);
    OK(TY_DOUBLE, "-1e-3");
    assert_true(v.d == -1e-3);
    OK(TY_DOUBLE, "1e-400"); /* underflow to zero is fine */
    BAD(TY_DOUBLE, "abc", "'abc' is not a DOUBLE");
    BAD(TY_DOUBLE, "1.5x", "'1.5x' is not a DOUBLE");
    BAD(TY_DOUBLE, "nan", "'nan' is not a DOUBLE");
    BAD(TY_DOUBLE, "-Infinity", "'-Infinity' is not a DOUBLE");
    BAD(TY_DOUBLE, "1e999", "'1e999' is out of range for DOUBLE");
    const char *yes[] = {"true", "TRUE", "t", "Yes", "1", "on"}, *no[] = {"false", "F", "no", "0", "off", "N"};
    for (int i = 0; i < 6; i++) {
        OK(TY_BOOL, yes[i]);
        assert_true(v.type == TY_BOOL && v.i == 1);
        OK(TY_BOOL, no[i]);
        assert_true(v.type == TY_BOOL && v.i == 0);
    }
    BAD(TY_BOOL, "maybe", "'maybe' is not a BOOLEAN");
    OK(TY_TIMESTAMP, "2023-11-14T22:13:20Z");
    assert_true(v.type == TY_TIMESTAMP && v.i == 1700000000000LL);
    BAD(TY_TIMESTAMP, "yesterday", "'yesterday' is not a TIMESTAMP");
    BAD(TY_TIMESTAMP, "253402300800000", "'253402300800000' is out of range for TIMESTAMP");
    OK(TY_TIMESTAMP, "253402300799999");
    OK(TY_TIMESTAMP, "-62167219200000");
    BAD(TY_TIMESTAMP, "-62167219200001", "'-62167219200001' is out of range for TIMESTAMP");
    OK(TY_TEXT, " keep spaces ");
    assert_int_equal(v.len, 13);
    OK(TY_TEXT, "");
    assert_int_equal(v.type, TY_NULL);
    assert_int_equal(fmt_parse_value(TY_TEXT, "", 0, 0, &v, why, sizeof why), 0);
    assert_true(v.type == TY_TEXT && v.len == 0);
    OK(TY_DOUBLE, "  ");
    assert_int_equal(v.type, TY_NULL);
    BAD(TY_BIGINT, "\x01\x02 a very long value that goes on and on and on and on", "'\\x01\\x02 a very long value that goes on and on...' is not a BIGINT");
#undef OK
#undef BAD
}

/* ------------------------------------------------------------------ decoders */

static const char *const names3[] = {"id", "name", "price"};
static const sql_type types3[] = {TY_BIGINT, TY_TEXT, TY_DOUBLE};
static const fmt_schema schema3 = {3, names3, types3};

static const char *const names5[] = {"id", "name", "price", "ok", "ts"};
static const sql_type types5[] = {TY_BIGINT, TY_TEXT, TY_DOUBLE, TY_BOOL, TY_TIMESTAMP};
static const fmt_schema schema5 = {5, names5, types5};

/* Decode `in` in chunks cut at the given offsets (sorted, may be empty). */
static int decode_cuts(fmt_decoder *d, const char *in, size_t n, const size_t *cuts, int ncuts, batch *out)
{
    size_t at = 0;
    xerr e;
    for (int i = 0; i <= ncuts; i++) {
        size_t to = i < ncuts ? cuts[i] : n;
        int rc = fmt_decode(d, in + at, to - at, out, &e);
        if (rc < 0) return rc;
        at = to;
    }
    return fmt_decode_finish(d, out, &e);
}

static fmt_decoder *decode_str(fmt_kind k, const fmt_schema *s, const fmt_dec_opts *o, const char *in, batch *out)
{
    fmt_decoder *d;
    assert_int_equal(fmt_decoder_new(k, s, o, &d), 0);
    assert_int_equal(batch_set_ncols(out, s->ncols), 0);
    assert_int_equal(decode_cuts(d, in, strlen(in), NULL, 0, out), 0);
    return d;
}

/* The rows of a batch as one string, through the CSV encoder. */
static char *as_csv(const fmt_schema *s, const batch *b)
{
    fmt_encoder *e;
    fmt_enc_opts o = {.no_header = 1};
    sbuf out;
    sbuf_init(&out);
    assert_int_equal(fmt_encoder_new(FMT_CSV, s, &o, &e), 0);
    assert_int_equal(fmt_encode(e, b, &out), 0);
    assert_int_equal(fmt_encode_finish(e, &out), 0);
    fmt_encoder_free(e);
    if (!out.p) sbuf_addc(&out, 0), out.len = 0;
    return sbuf_steal(&out);
}

static void assert_rejects(const fmt_decoder *d, const char *want)
{
    sbuf s;
    sbuf_init(&s);
    assert_int_equal(fmt_rejects_print(fmt_decoder_rejects(d), &s), 0);
    if (strcmp(s.p ? s.p : "", want) != 0) {
        fprintf(stderr, "rejects:\n%s\nwanted:\n%s\n", s.p ? s.p : "", want);
        fail();
    }
    sbuf_fini(&s);
}

static void test_csv_basic(void **state)
{
    (void)state;
    batch b;
    assert_int_equal(batch_init(&b, 5, 4), 0);
    const char *in = "id,name,price,ok,ts\r\n"
                     "1,apple,2.5,true,2023-11-14T22:13:20Z\r\n"
                     "2,\"pe,ar\",3.5,f,1700000000001\n"
                     "\n"
                     "3,\"say \"\"hi\"\"\",,,\n"
                     "4,\"\",  7 ,1,2023-11-14 22:13:20.5+00:00\n"
                     "5,, 1e3 ,no,";
    fmt_decoder *d = decode_str(FMT_CSV, &schema5, NULL, in, &b);
    assert_int_equal(b.nrows, 5);
    char *csv = as_csv(&schema5, &b);
    assert_string_equal(csv, "1,apple,2.5,true,2023-11-14T22:13:20.000Z\n"
                             "2,\"pe,ar\",3.5,false,2023-11-14T22:13:20.001Z\n"
                             "3,\"say \"\"hi\"\"\",,,\n"
                             "4,\"\",7,true,2023-11-14T22:13:20.500Z\n"
                             "5,,1000,false,\n");
    free(csv);
    assert_int_equal(batch_row(&b, 3)[1].type, TY_TEXT); /* "" is the empty string */
    assert_int_equal(batch_row(&b, 4)[1].type, TY_NULL); /* nothing is NULL */
    fmt_dec_stats st = fmt_decoder_stats(d);
    assert_true(st.lines == 7 && st.rows == 5 && st.rejected == 0);
    fmt_decoder_free(d);
    batch_fini(&b);
}

/* Every way of cutting the input in two (and byte by byte) gives the same rows
 * and the same rejections. */
static void check_every_split(fmt_kind k, const fmt_schema *s, const char *in)
{
    batch one, two;
    assert_int_equal(batch_init(&one, s->ncols, 1), 0);
    assert_int_equal(batch_init(&two, s->ncols, 1), 0);
    fmt_dec_opts o = {.keep_rejects = 100};
    fmt_decoder *d = decode_str(k, s, &o, in, &one);
    char *want = as_csv(s, &one);
    sbuf wr;
    sbuf_init(&wr);
    fmt_rejects_print(fmt_decoder_rejects(d), &wr);
    fmt_decoder_free(d);
    size_t n = strlen(in);
    size_t every[4096];
    assert_true(n < 4096);
    for (size_t i = 0; i < n; i++) every[i] = i;
    for (size_t cut = 0; cut <= n + 1; cut++) {
        assert_int_equal(fmt_decoder_new(k, s, &o, &d), 0);
        batch_reset(&two);
        if (cut <= n) assert_int_equal(decode_cuts(d, in, n, &cut, 1, &two), 0);
        else assert_int_equal(decode_cuts(d, in, n, every, (int)n, &two), 0);
        char *got = as_csv(s, &two);
        assert_string_equal(got, want);
        free(got);
        assert_rejects(d, wr.p ? wr.p : "");
        fmt_decoder_free(d);
    }
    free(want);
    sbuf_fini(&wr);
    batch_fini(&one);
    batch_fini(&two);
}

static void test_csv_splits(void **state)
{
    (void)state;
    check_every_split(FMT_CSV, &schema5,
                      "ID,Name,Price,OK,TS\r\n1,apple,2.5,true,2023-11-14T22:13:20Z\r\n2,\"pe,\"\"ar\",3.5,f,17\n"
                      "bad,x,1,1,1\n3,\"\",,,\n4,\"unterminated,1,1,1\n5,x,1,1,2023-02-29\n6,x,1,1");
    check_every_split(FMT_CSV, &schema3, "1,a,1\n\n2,b,2\r\n3,\"c\r\nd\",3\n");
    check_every_split(FMT_CSV, &schema3, "1,\"two\n\nlines\"\"\n\",1\r\n2,\"x\ny\"z,1\n3,b,3\n4,\"open\n5,c,5");
}

/* RFC 4180: a quoted field may hold line ends; its record goes on over the
 * lines, and rejections name the line it started on. */
static void test_csv_multiline(void **state)
{
    (void)state;
    batch b;
    assert_int_equal(batch_init(&b, 3, 4), 0);
    fmt_dec_opts o = {.keep_rejects = 100};
    fmt_decoder *d = decode_str(FMT_CSV, &schema3, &o,
                                "id,name,price\n"
                                "1,\"first\nsecond\",1\n"       /* lines 2-3 */
                                "2,\"crlf\r\n\r\nkept\",2\r\n" /* lines 4-6 */
                                "3,\"a\n\"x,3\n"                /* lines 7-8: bad after the quote */
                                "4,b,oops\n"                      /* line 9 */
                                "5,\"\"\"\n\"\"\",5\n",           /* lines 10-11: quotes at both ends */
                                &b);
    assert_int_equal(b.nrows, 3);
    assert_int_equal(batch_row(&b, 0)[1].len, 12);
    assert_memory_equal(batch_row(&b, 0)[1].s, "first\nsecond", 12);
    assert_memory_equal(batch_row(&b, 1)[1].s, "crlf\r\n\r\nkept", 12);
    assert_memory_equal(batch_row(&b, 2)[1].s, "\"\n\"", 3);
    assert_rejects(d, "line 7: field 2: unexpected 'x' after a closing quote\n"
                      "line 9: column 'price': 'oops' is not a DOUBLE\n");
    fmt_dec_stats st = fmt_decoder_stats(d);
    assert_true(st.lines == 11 && st.rows == 3 && st.rejected == 2);
    fmt_decoder_free(d);
    /* A quote that never closes costs at most max_line bytes, then the
     * lines after it are records again. */
    fmt_dec_opts small = {.max_line = 20, .keep_rejects = 100};
    d = decode_str(FMT_CSV, &schema3, &small, "1,\"open,1\n2,b,2\n3,c,3\n4,d,4\n5,e,5\n", &b);
    assert_rejects(d, "line 1: field 2: unterminated quoted field (not closed within 20 bytes; lines 1 to 3)\n");
    assert_int_equal(b.nrows, 2); /* lines 4 and 5 */
    assert_int_equal(batch_row(&b, 0)[0].i, 4);
    fmt_decoder_free(d);
    /* What is pending: an unfinished line, or record. */
    assert_int_equal(fmt_decoder_new(FMT_CSV, &schema3, NULL, &d), 0);
    xerr e;
    assert_int_equal(fmt_decode(d, "1,a,1\n2,\"b\n", 11, &b, &e), 0);
    assert_int_equal(fmt_decoder_pending(d), 5);
    assert_int_equal(fmt_decode(d, "c\",2\n3,", 7, &b, &e), 0);
    assert_int_equal(fmt_decoder_pending(d), 2);
    fmt_decoder_free(d);
    batch_fini(&b);
}

/* null_string (PostgreSQL COPY's NULL) and other delimiters. */
static void test_csv_null_delim(void **state)
{
    (void)state;
    batch b;
    assert_int_equal(batch_init(&b, 3, 4), 0);
    fmt_dec_opts o = {.null_string = "NULL"};
    fmt_decoder *d = decode_str(FMT_CSV, &schema3, &o, "1,NULL,NULL\n2,\"NULL\", NULL \n3,,\n NULL ,x,1\n", &b);
    assert_int_equal(b.nrows, 4);
    assert_int_equal(batch_row(&b, 0)[1].type, TY_NULL);
    assert_int_equal(batch_row(&b, 0)[2].type, TY_NULL);
    assert_int_equal(batch_row(&b, 1)[1].type, TY_TEXT); /* quoted: the text */
    assert_int_equal(batch_row(&b, 1)[2].type, TY_NULL); /* spaces around it, not TEXT */
    assert_int_equal(batch_row(&b, 2)[1].type, TY_TEXT); /* empty: the empty string, as PostgreSQL */
    assert_int_equal(batch_row(&b, 2)[1].len, 0);
    assert_int_equal(batch_row(&b, 2)[2].type, TY_NULL);
    assert_int_equal(batch_row(&b, 3)[0].type, TY_NULL);
    assert_rejects(d, "");
    fmt_decoder_free(d);
    /* Without it, NULL is text, and not a number. */
    d = decode_str(FMT_CSV, &schema3, NULL, "1,NULL,NULL\n", &b);
    assert_int_equal(b.nrows, 0);
    assert_rejects(d, "line 1: column 'price': 'NULL' is not a DOUBLE\n");
    fmt_decoder_free(d);
    /* Tab and ';' as delimiters, with a header; a ',' is then data. */
    fmt_dec_opts tab = {.delim = '\t'};
    d = decode_str(FMT_CSV, &schema3, &tab, "name\tid\na,b\t1\n\"t\tx\"\t2\n", &b);
    char *csv = as_csv(&schema3, &b);
    assert_string_equal(csv, "1,\"a,b\",\n2,t\tx,\n");
    free(csv);
    fmt_decoder_free(d);
    fmt_dec_opts semi = {.delim = ';', .null_string = ""};
    d = decode_str(FMT_CSV, &schema3, &semi, "1;;2,5\n", &b);
    assert_rejects(d, "line 1: column 'price': '2,5' is not a DOUBLE\n");
    fmt_decoder_free(d);
    d = decode_str(FMT_CSV, &schema3, &semi, "1;;2.5\n", &b);
    assert_int_equal(batch_row(&b, 0)[1].type, TY_NULL); /* '' as the null string: empty is NULL */
    fmt_decoder_free(d);
    fmt_dec_opts bad = {.delim = '"'};
    assert_int_equal(fmt_decoder_new(FMT_CSV, &schema3, &bad, &d), XE_INVAL);
    batch_fini(&b);
}

/* A decoder saved between two chunks and loaded into a new one goes on
 * exactly as the first would: the header's column order, the unfinished
 * line, the line numbers of rejections (a shadow home taking over an
 * ingest).  Every split point of the input is tried. */
static void test_decoder_save_load(void **state)
{
    (void)state;
    static const char *in[] = {"price,ID\n2.5,1\n,2\nbad,3\n4.5,4\n7,7",
                               "{\"id\":1,\"price\":2}\n{\"id\":\"x\"}\n{\"id\":3}\n",
                               "id,name\n1,\"a\n\nb\"\n2,\"c\r\nd\"\"\"\n3,x\n4,\"y\nz"};
    static const fmt_kind kinds[] = {FMT_CSV, FMT_JSON, FMT_CSV};
    for (int k = 0; k < 3; k++) {
        batch whole, parts;
        assert_int_equal(batch_init(&whole, 3, 4), 0);
        assert_int_equal(batch_init(&parts, 3, 4), 0);
        fmt_decoder *d = decode_str(kinds[k], &schema3, NULL, in[k], &whole);
        xerr e;
        assert_int_equal(fmt_decode_finish(d, &whole, &e), 0);
        char *want = as_csv(&schema3, &whole);
        sbuf rej;
        sbuf_init(&rej);
        fmt_rejects_print(fmt_decoder_rejects(d), &rej);
        fmt_dec_stats ws = fmt_decoder_stats(d);
        fmt_decoder_free(d);
        for (size_t cut = 0; cut <= strlen(in[k]); cut++) {
            batch_reset(&parts);
            fmt_decoder *a, *b;
            assert_int_equal(fmt_decoder_new(kinds[k], &schema3, NULL, &a), 0);
            assert_int_equal(fmt_decode(a, in[k], cut, &parts, &e), 0);
            sbuf saved;
            sbuf_init(&saved);
            assert_int_equal(fmt_decoder_save(a, &saved), 0);
            fmt_decoder_free(a);
            assert_int_equal(fmt_decoder_new(kinds[k], &schema3, NULL, &b), 0);
            assert_int_equal(fmt_decoder_load(b, saved.p, saved.len, &e), 0);
            assert_int_equal(fmt_decode(b, in[k] + cut, strlen(in[k]) - cut, &parts, &e), 0);
            assert_int_equal(fmt_decode_finish(b, &parts, &e), 0);
            char *got = as_csv(&schema3, &parts);
            assert_string_equal(got, want);
            free(got);
            fmt_dec_stats gs = fmt_decoder_stats(b);
            assert_int_equal(gs.lines, ws.lines);
            assert_int_equal(gs.rows, ws.rows);
            assert_int_equal(gs.rejected, ws.rejected);
            /* the rejections after the cut carry the same line numbers */
            sbuf r2;
            sbuf_init(&r2);
            fmt_rejects_print(fmt_decoder_rejects(b), &r2);
            if (r2.len) assert_non_null(strstr(rej.p, r2.p));
            sbuf_fini(&r2);
            /* a state of another kind, or cut short, is refused */
            fmt_decoder *c;
            assert_int_equal(fmt_decoder_new(kinds[k] == FMT_CSV ? FMT_JSON : FMT_CSV, &schema3, NULL, &c), 0);
            assert_int_equal(fmt_decoder_load(c, saved.p, saved.len, &e), XE_CORRUPT);
            assert_int_equal(fmt_decoder_load(c, saved.p, 10, &e), XE_CORRUPT);
            fmt_decoder_free(c);
            sbuf_fini(&saved);
            fmt_decoder_free(b);
        }
        free(want);
        sbuf_fini(&rej);
        batch_fini(&whole);
        batch_fini(&parts);
    }
}

static sbuf notes;
static void note(void *ctx, int64_t line, const char *msg)
{
    assert_true(line > 0);
    sbuf_printf(ctx, "%s\n", msg);
}

static void test_csv_header(void **state)
{
    (void)state;
    sbuf_init(&notes);
    batch b;
    assert_int_equal(batch_init(&b, 3, 4), 0);
    /* Reordered, with a column left out: it is NULL. */
    fmt_decoder *d = decode_str(FMT_CSV, &schema3, NULL, "PRICE,id\n2.5,1\n,2\n", &b);
    char *csv = as_csv(&schema3, &b);
    assert_string_equal(csv, "1,,2.5\n2,,\n");
    free(csv);
    assert_rejects(d, "");
    fmt_decoder_free(d);
    /* Without a header line the first line is data. */
    d = decode_str(FMT_CSV, &schema3, NULL, "1,a,2.5\n", &b);
    assert_int_equal(b.nrows, 1);
    fmt_decoder_free(d);
    /* Told there is no header: the names are data, and rejected. */
    fmt_dec_opts no = {.header = FMT_HEADER_NO};
    d = decode_str(FMT_CSV, &schema3, &no, "id,name,price\n1,a,2\n", &b);
    assert_int_equal(b.nrows, 1);
    assert_rejects(d, "line 1: column 'id': 'id' is not a BIGINT\n");
    fmt_decoder_free(d);
    /* A header that names more columns than not, in auto mode: a header;
     * the field that names none is ignored, with one notice. */
    notes.len = 0;
    fmt_dec_opts on = {.on_notice = note, .ctx = &notes};
    d = decode_str(FMT_CSV, &schema3, &on, "id,name,prce\n1,a,2\n3,b,4\n", &b);
    csv = as_csv(&schema3, &b);
    assert_string_equal(csv, "1,a,\n3,b,\n");
    free(csv);
    assert_rejects(d, "");
    assert_string_equal(notes.p, "line 1: header: 'prce' (did you mean 'price'?) names no column of the stream; ignored\n");
    fmt_decoder_free(d);
    /* An extra column, names after ", " and another order. */
    notes.len = 0;
    d = decode_str(FMT_CSV, &schema3, &on, "price, extra , ID,name\n2.5,x,1,y\n", &b);
    csv = as_csv(&schema3, &b);
    assert_string_equal(csv, "1,y,2.5\n");
    free(csv);
    assert_rejects(d, "");
    assert_string_equal(notes.p, "line 1: header: 'extra' names no column of the stream; ignored\n");
    fmt_decoder_free(d);
    /* Told there is a header: one known name is enough. */
    notes.len = 0;
    fmt_dec_opts yon = {.header = FMT_HEADER_YES, .on_notice = note, .ctx = &notes};
    d = decode_str(FMT_CSV, &schema3, &yon, "more,id,xyz,w,v\na,1,b,c,d\n", &b);
    csv = as_csv(&schema3, &b);
    assert_string_equal(csv, "1,,\n");
    free(csv);
    assert_string_equal(notes.p, "line 1: header: 'more', 'xyz', 'w', 'v' name no column of the stream; ignored\n");
    fmt_decoder_free(d);
    /* Half of the names unknown: data, rejected with a hint. */
    d = decode_str(FMT_CSV, &schema3, NULL, "id,prce\n1,a,2\n", &b);
    assert_int_equal(b.nrows, 1);
    assert_rejects(d, "line 1: expected 3 columns, got 2 (if this is a header, 'prce' is not a column; --header "
                      "reads it as one)\n");
    fmt_decoder_free(d);
    /* Required header with an unknown column: ignored too; with no known
     * one: fatal, with a suggestion. */
    fmt_dec_opts yes = {.header = FMT_HEADER_YES};
    d = decode_str(FMT_CSV, &schema3, &yes, "prce,id\n2,1\n", &b);
    csv = as_csv(&schema3, &b);
    assert_string_equal(csv, "1,,\n");
    free(csv);
    fmt_decoder_free(d);
    assert_int_equal(fmt_decoder_new(FMT_CSV, &schema3, &yes, &d), 0);
    xerr e;
    const char *in = "prce,nme\n1,a,2\n";
    assert_int_equal(fmt_decode(d, in, strlen(in), &b, &e), XE_INPUT);
    assert_string_equal(e.msg, "line 1: header: 'prce' is not a column (did you mean 'price'?)");
    assert_int_equal(fmt_decode(d, "1,a,2\n", 6, &b, &e), XE_INPUT);
    assert_int_equal(fmt_decode_finish(d, &b, &e), XE_INPUT);
    fmt_decoder_free(d);
    /* A header without the event time column (time_col) is fatal. */
    fmt_dec_opts need = {.time_col = 1};
    assert_int_equal(fmt_decoder_new(FMT_CSV, &schema3, &need, &d), 0);
    in = "name,price\nx,1\n";
    assert_int_equal(fmt_decode(d, in, strlen(in), &b, &e), XE_INPUT);
    assert_string_equal(e.msg, "line 1: header has no column 'id' (the stream's event time)");
    fmt_decoder_free(d);
    assert_int_equal(fmt_decoder_new(FMT_CSV, &schema3, &yes, &d), 0);
    assert_int_equal(fmt_decode(d, "id,ID\n", 6, &b, &e), XE_INPUT);
    assert_string_equal(e.msg, "line 1: header names column 'ID' twice");
    fmt_decoder_free(d);
    /* A BOM before the header; a header alone gives no rows. */
    d = decode_str(FMT_CSV, &schema3, &yes, "\xef\xbb\xbfname\r\n", &b);
    assert_int_equal(b.nrows, 0);
    assert_rejects(d, "");
    /* finish starts a new input: header detection and line numbers again. */
    assert_int_equal(fmt_decode(d, "name\nx\ny,z\n", 11, &b, &e), 0);
    assert_int_equal(fmt_decode_finish(d, &b, &e), 0);
    assert_int_equal(b.nrows, 1);
    assert_rejects(d, "line 3: expected 1 column, got 2\n");
    fmt_decoder_free(d);
    batch_fini(&b);
    sbuf_fini(&notes);
}

static int ncalls;
static void count_reject(void *ctx, int64_t line, const char *msg)
{
    (void)msg;
    assert_ptr_equal(ctx, &ncalls);
    assert_true(line > 0);
    ncalls++;
}

static void test_csv_rejects(void **state)
{
    (void)state;
    batch b;
    assert_int_equal(batch_init(&b, 3, 4), 0);
    fmt_dec_opts o = {.keep_rejects = 100};
    fmt_decoder *d = decode_str(FMT_CSV, &schema5, &o,
                                "id,name,price,ok,ts\n"
                                "1,a,abc,,\n"
                                "1,a,1\n"
                                "1,\"a\"x,1,,\n"
                                "99999999999999999999,a,1,,\n"
                                "1,a,1,maybe,\n"
                                "1,a,1,,2023-02-30\n"
                                "1,a,1,,,\n"
                                "1,a,1,,\n"
                                "{\"id\":1,\"name\":\"a\"}\n"
                                "1,\"a,1,,\n"
                                "2,b,1,,\n",
                                &b);
    assert_int_equal(b.nrows, 1);
    assert_rejects(d, "line 2: column 'price': 'abc' is not a DOUBLE\n"
                      "line 3: expected 5 columns, got 3\n"
                      "line 4: field 2: unexpected 'x' after a closing quote\n"
                      "line 5: column 'id': '99999999999999999999' is out of range for BIGINT\n"
                      "line 6: column 'ok': 'maybe' is not a BOOLEAN\n"
                      "line 7: column 'ts': '2023-02-30' is not a TIMESTAMP\n"
                      "line 8: expected 5 columns, got 6\n"
                      "line 10: field 2: unexpected ':' after a closing quote; this looks like JSON; the input is "
                      "read as CSV\n"
                      "line 11: field 2: unterminated quoted field (not closed before the end of the input; lines "
                      "11 to 12)\n");
    fmt_decoder_free(d);
    /* The JSON decoder on CSV lines says so too, with the caller's note. */
    fmt_dec_opts jo = {.kind_note = "the stream's format is json"};
    d = decode_str(FMT_JSON, &schema3, &jo, "id,name,price\n{\"id\":1}\n", &b);
    assert_int_equal(b.nrows, 1);
    assert_rejects(d, "line 1: invalid JSON at column 2: '[' or '{' expected near 'id'; this looks like CSV; the "
                      "stream's format is json\n");
    fmt_decoder_free(d);
    /* Keep two, count the rest; the callback sees all. */
    ncalls = 0;
    fmt_dec_opts two = {.keep_rejects = 2, .on_reject = count_reject, .ctx = &ncalls};
    d = decode_str(FMT_CSV, &schema3, &two, "x\ny\nz\n1,a,1\nw", &b);
    assert_int_equal(b.nrows, 1);
    assert_int_equal(ncalls, 4);
    assert_rejects(d, "line 1: expected 3 columns, got 1\nline 2: expected 3 columns, got 1\n"
                      "... and 2 more rejected lines\n");
    assert_int_equal(fmt_decoder_rejects(d)->count, 4);
    fmt_decoder_clear_rejects(d);
    assert_rejects(d, "");
    fmt_decoder_free(d);
    batch_fini(&b);
}

static void test_line_cap(void **state)
{
    (void)state;
    batch b;
    assert_int_equal(batch_init(&b, 3, 4), 0);
    fmt_dec_opts o = {.max_line = 16};
    char in[200];
    snprintf(in, sizeof in, "1,a,1\n2,%s,2\n3,%s,3\n4,b,4\n5,%s", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbb",
             "ccccccccccccccccccccccccccccc");
    for (int k = 0; k < 2; k++) {
        fmt_decoder *d = decode_str(k ? FMT_JSON : FMT_CSV, &schema3, &o, in, &b);
        if (!k) {
            assert_int_equal(b.nrows, 3);
            assert_rejects(d, "line 2: longer than 16 bytes; skipped\nline 5: longer than 16 bytes; skipped\n");
        }
        assert_int_equal(fmt_decoder_stats(d).lines, 5);
        fmt_decoder_free(d);
    }
    check_every_split(FMT_CSV, &schema3, "1,a,1\n2,aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa,2\n3,b,3\n");
    batch_fini(&b);
}

static void test_json_lines(void **state)
{
    (void)state;
    batch b;
    assert_int_equal(batch_init(&b, 5, 4), 0);
    fmt_dec_opts o = {.keep_rejects = 100};
    fmt_decoder *d = decode_str(FMT_JSON, &schema5, &o,
                                "{\"id\":1,\"name\":\"apple\",\"price\":2.5,\"ok\":true,\"ts\":\"2023-11-14T22:13:20Z\"}\n"
                                "{\"ID\":2,\"Name\":\"a\\u0000b\",\"price\":3,\"ts\":1700000000001,\"extra\":[1,2]}\r\n"
                                "  \n"
                                "{\"id\":3.0,\"name\":null,\"price\":-1e-2}\n"
                                "{\"id\":\"4\"}\n"
                                "{\"id\":4.5}\n"
                                "{\"price\":\"x\"}\n"
                                "{\"ok\":1}\n"
                                "{\"ts\":\"2023-02-30\"}\n"
                                "{\"name\":5}\n"
                                "[1,2]\n"
                                "{\"id\":1,}\n"
                                "{\"id\":1} x\n"
                                "{\"id\":99999999999999999999}\n"
                                "{\"ts\":true}\n"
                                "{\"ts\":1e15}\n"
                                "{\"ts\":1.5}\n"
                                "{\"id\": 1e300}",
                                &b);
    assert_int_equal(b.nrows, 3);
    char *csv = as_csv(&schema5, &b);
    assert_string_equal(csv, "1,apple,2.5,true,2023-11-14T22:13:20.000Z\n"
                             "2,a\0b,3,,2023-11-14T22:13:20.001Z\n" /* (compared up to the NUL) */
                             "3,,-0.01,,\n");
    assert_int_equal(batch_row(&b, 1)[1].len, 3);
    assert_memory_equal(batch_row(&b, 1)[1].s, "a\0b", 3);
    free(csv);
    assert_rejects(d, "line 5: column 'id': expected a number, got a string\n"
                      "line 6: column 'id': 4.5 is not a BIGINT\n"
                      "line 7: column 'price': expected a number, got a string\n"
                      "line 8: column 'ok': expected true or false, got a number\n"
                      "line 9: column 'ts': '2023-02-30' is not a TIMESTAMP\n"
                      "line 10: column 'name': expected a string, got a number\n"
                      "line 11: expected a JSON object, got an array\n"
                      "line 12: invalid JSON at column 9: string or '}' expected near '}'\n"
                      "line 13: invalid JSON at column 10: end of file expected near 'x'\n"
                      "line 14: invalid JSON at column 26: too big integer near '99999999999999999999'\n"
                      "line 15: column 'ts': expected a number or an ISO 8601 string, got a boolean\n"
                      "line 16: column 'ts': 1e+15 is out of range for TIMESTAMP\n"
                      "line 17: column 'ts': 1.5 is not a TIMESTAMP\n"
                      "line 18: column 'id': 1e+300 is not a BIGINT\n");
    fmt_decoder_free(d);
    check_every_split(FMT_JSON, &schema5,
                      "{\"id\":1,\"name\":\"apple\",\"price\":2.5,\"ok\":true,\"ts\":\"2023-11-14T22:13:20Z\"}\n"
                      "{\"id\":\"x\"}\r\n{\"name\":\"\\u00e9\\\"\"}\n[\n{\"id\":2}");
    batch_fini(&b);
}

/* ------------------------------------------------------------------ encoders */

static void fill3(batch *b)
{
    assert_int_equal(batch_set_ncols(b, 3), 0);
    val r1[3] = {val_int(TY_BIGINT, 1), val_text("apple", 5), val_double(2.5)};
    val r2[3] = {val_int(TY_BIGINT, 2), val_null(), val_double(2.5 + 3.5 + 4)};
    assert_int_equal(batch_append_row(b, r1), 0);
    assert_int_equal(batch_append_row(b, r2), 0);
}

static char *encode(fmt_kind k, const fmt_schema *s, const fmt_enc_opts *o, const batch *const *bs, int nb)
{
    fmt_encoder *e;
    sbuf out;
    sbuf_init(&out);
    assert_int_equal(fmt_encoder_new(k, s, o, &e), 0);
    for (int i = 0; i < nb; i++) assert_int_equal(fmt_encode(e, bs[i], &out), 0);
    assert_int_equal(fmt_encode_finish(e, &out), 0);
    fmt_encoder_free(e);
    sbuf_addc(&out, 0);
    return sbuf_steal(&out);
}

static void check_encode(fmt_kind k, const fmt_schema *s, const fmt_enc_opts *o, const batch *const *bs, int nb,
                         const char *want)
{
    char *got = encode(k, s, o, bs, nb);
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "got:\n%s\nwanted:\n%s\n", got, want);
        fail();
    }
    free(got);
}

static void test_encoders(void **state)
{
    (void)state;
    batch b, empty, c;
    assert_int_equal(batch_init(&b, 3, 4), 0);
    assert_int_equal(batch_init(&empty, 3, 4), 0);
    assert_int_equal(batch_init(&c, 3, 4), 0);
    fill3(&b);
    const batch *one[] = {&b}, *none[] = {&empty};
    check_encode(FMT_TABLE, &schema3, NULL, one, 1,
                 " id | name  | price\n"
                 "----+-------+-------\n"
                 "  1 | apple |   2.5\n"
                 "  2 | NULL  |    10\n"
                 "(2 rows)\n");
    sbuf t;
    sbuf_init(&t);
    assert_int_equal(fmt_table(&schema3, &b, &t), 0);
    assert_string_equal(t.p, " id | name  | price\n----+-------+-------\n  1 | apple |   2.5\n  2 | NULL  |    10\n(2 rows)\n");
    sbuf_fini(&t);
    check_encode(FMT_TABLE, &schema3, NULL, none, 1, " id | name | price\n----+------+-------\n(0 rows)\n");
    /* Streaming: widths fixed by the first batch; a wider value overflows. */
    val wide[3] = {val_int(TY_BIGINT, 12345), val_text("a\tb", 3), val_double(-0.5)};
    assert_int_equal(batch_append_row(&c, wide), 0);
    const batch *two[] = {&b, &c};
    fmt_enc_opts stream = {.stream = 1};
    check_encode(FMT_TABLE, &schema3, &stream, two, 2,
                 " id | name  | price\n"
                 "----+-------+-------\n"
                 "  1 | apple |   2.5\n"
                 "  2 | NULL  |    10\n"
                 " 12345 | a\\tb  |  -0.5\n"
                 "(3 rows)\n");
    check_encode(FMT_VERTICAL, &schema3, NULL, two, 2,
                 "-[ RECORD 1 ]\n"
                 "id    | 1\n"
                 "name  | apple\n"
                 "price | 2.5\n"
                 "-[ RECORD 2 ]\n"
                 "id    | 2\n"
                 "name  | NULL\n"
                 "price | 10\n"
                 "-[ RECORD 3 ]\n"
                 "id    | 12345\n"
                 "name  | a\\tb\n"
                 "price | -0.5\n");
    check_encode(FMT_CSV, &schema3, NULL, two, 2, "id,name,price\n1,apple,2.5\n2,,10\n12345,a\tb,-0.5\n");
    check_encode(FMT_CSV, &schema3, NULL, none, 1, "id,name,price\n");
    fmt_enc_opts semi = {.delim = ';'};
    batch_reset(&c);
    val tricky[3] = {val_int(TY_BIGINT, 1), val_text("a;\"b\"\n", 6), val_double(1e21)};
    assert_int_equal(batch_append_row(&c, tricky), 0);
    val emptys[3] = {val_null(), val_text("", 0), val_null()};
    assert_int_equal(batch_append_row(&c, emptys), 0);
    const batch *cc[] = {&c};
    check_encode(FMT_CSV, &schema3, &semi, cc, 1, "id;name;price\n1;\"a;\"\"b\"\"\n\";1e+21\n;\"\";\n");
    check_encode(FMT_JSON, &schema3, NULL, cc, 1,
                 "{\"id\":1,\"name\":\"a;\\\"b\\\"\\n\",\"price\":1e+21}\n{\"id\":null,\"name\":\"\",\"price\":null}\n");
    /* JSON: every type, escapes, invalid UTF-8, non-finite doubles. */
    static const char *const n6[] = {"b", "t", "d", "s", "i", "x\"y"};
    static const sql_type t6[] = {TY_BOOL, TY_TIMESTAMP, TY_DOUBLE, TY_TEXT, TY_INTERVAL, TY_INT};
    fmt_schema s6 = {6, n6, t6};
    batch j;
    assert_int_equal(batch_init(&j, 6, 1), 0);
    val r6[6] = {val_int(TY_BOOL, 1), val_int(TY_TIMESTAMP, -1), val_double(NAN),
                 val_text("\x01\xff\xc3\xa9\\/\xe2\x82", 8), val_int(TY_INTERVAL, 5000), val_int(TY_INT, -7)};
    assert_int_equal(batch_append_row(&j, r6), 0);
    const batch *jj[] = {&j};
    check_encode(FMT_JSON, &s6, NULL, jj, 1,
                 "{\"b\":true,\"t\":\"1969-12-31T23:59:59.999Z\",\"d\":null,\"s\":\"\\u0001\xef\xbf\xbd\xc3\xa9\\\\/"
                 "\xef\xbf\xbd\xef\xbf\xbd\",\"i\":5000,\"x\\\"y\":-7}\n");
    check_encode(FMT_TABLE, &s6, NULL, jj, 1,
                 "  b   |            t             |  d  |     s     |  i   | x\"y\n"
                 "------+--------------------------+-----+-----------+------+-----\n"
                 " true | 1969-12-31T23:59:59.999Z | NaN | \\x01\xff\xc3\xa9\\/\xe2\x82 | 5000 |  -7\n"
                 "(1 row)\n");
    batch_fini(&j);
    batch_fini(&b);
    batch_fini(&c);
    batch_fini(&empty);
}

/* CSV rows of integers and doubles (the inline paths of the encoder: below
 * 100, below 10^4, the rest; short and long doubles) against printf. */
static void test_csv_numbers(void **state)
{
    (void)state;
    static const char *const names[] = {"i", "bi", "d"};
    static const sql_type types[] = {TY_INT, TY_BIGINT, TY_DOUBLE};
    fmt_schema s = {3, names, types};
    batch b;
    assert_int_equal(batch_init(&b, 3, 16), 0);
    sbuf want;
    sbuf_init(&want);
    int64_t ints[] = {0, 9, 10, 99, 100, 101, 999, 1000, 1009, 9999, 10000, 123456, -1, -99, -100, -10000,
                      INT64_MAX, INT64_MIN};
    char dbuf[64];
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        for (int k = 0; k < 20; k++) {
            /* neighbours, wrapping at the ends of int64 */
            int64_t x = (int64_t)((uint64_t)ints[i] + (uint64_t)(int64_t)(k < 10 ? k : -k));
            int64_t y = (int64_t)(0 - (uint64_t)x);
            double d = (double)x / 100 + (k & 1 ? 0.1 : 0);
            val row[3] = {val_int(TY_INT, x), val_int(TY_BIGINT, y), val_double(d)};
            assert_int_equal(batch_append_row(&b, row), 0);
            fmt_double(d, dbuf);
            assert_int_equal(sbuf_printf(&want, "%lld,%lld,%s\n", (long long)x, (long long)y, dbuf), 0);
        }
    }
    char *got = as_csv(&s, &b);
    assert_string_equal(got, want.p);
    free(got);
    sbuf_fini(&want);
    batch_fini(&b);
}

/* Random rows survive encode -> decode through CSV and JSON lines. */
static void test_format_roundtrip(void **state)
{
    (void)state;
    static const char *const names[] = {"b", "i", "bi", "d", "s", "ts"};
    static const sql_type types[] = {TY_BOOL, TY_INT, TY_BIGINT, TY_DOUBLE, TY_TEXT, TY_TIMESTAMP};
    fmt_schema s = {6, names, types};
    static const char *const alpha[] = {"a", "b", " ", ",", "\"", "'", "\\", "\t", "\xc3\xa9", "{", "}"};
    batch in, out;
    assert_int_equal(batch_init(&in, 6, 1), 0);
    assert_int_equal(batch_init(&out, 6, 1), 0);
    for (int round = 0; round < 50; round++) {
        batch_reset(&in);
        for (int r = 0; r < 30; r++) {
            val *row = batch_add_row(&in);
            assert_non_null(row);
            for (int c = 0; c < 6; c++) {
                if (rnd() % 6 == 0) continue; /* NULL */
                switch (types[c]) {
                case TY_DOUBLE: {
                    uint64_t bits = rnd();
                    double d;
                    memcpy(&d, &bits, 8);
                    row[c] = val_double(isfinite(d) ? d : 0.25);
                    break;
                }
                case TY_TEXT: {
                    char buf[32] = "";
                    for (size_t k = rnd() % 8; k > 0; k--) strcat(buf, alpha[rnd() % 11]);
                    assert_int_equal(batch_put_text(&in, &row[c], buf, strlen(buf)), 0);
                    break;
                }
                case TY_TIMESTAMP:
                    row[c] = val_int(TY_TIMESTAMP, (int64_t)(rnd() % 253402300800000ULL) - 62167219200000LL);
                    break;
                default: row[c] = random_val(&in, types[c]); break;
                }
            }
        }
        for (int k = 0; k < 2; k++) {
            fmt_kind kind = k ? FMT_JSON : FMT_CSV;
            const batch *bb[] = {&in};
            char *text = encode(kind, &s, NULL, bb, 1);
            batch_reset(&out);
            fmt_decoder *d = decode_str(kind, &s, NULL, text, &out);
            assert_rejects(d, "");
            fmt_decoder_free(d);
            assert_batches_equal(&in, &out);
            free(text);
        }
    }
    batch_fini(&in);
    batch_fini(&out);
}

/* ------------------------------------------------------------------ main */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_growth_and_arena_stability),
        cmocka_unit_test(test_batch_reset_reuses_memory),
        cmocka_unit_test(test_batch_append_own_row),
        cmocka_unit_test(test_val_compare_numeric),
        cmocka_unit_test(test_val_hash_equal_values),
        cmocka_unit_test(test_batch_encode_roundtrip),
        cmocka_unit_test(test_batch_encode_columns),
        cmocka_unit_test(test_batch_encode_same_bytes),
        cmocka_unit_test(test_batch_decode_corruption),
        cmocka_unit_test(test_key_order),
        cmocka_unit_test(test_timestamps),
        cmocka_unit_test(test_double_text),
        cmocka_unit_test(test_parse_value),
        cmocka_unit_test(test_csv_basic),
        cmocka_unit_test(test_csv_splits),
        cmocka_unit_test(test_csv_multiline),
        cmocka_unit_test(test_csv_null_delim),
        cmocka_unit_test(test_csv_header),
        cmocka_unit_test(test_decoder_save_load),
        cmocka_unit_test(test_csv_rejects),
        cmocka_unit_test(test_line_cap),
        cmocka_unit_test(test_json_lines),
        cmocka_unit_test(test_encoders),
        cmocka_unit_test(test_csv_numbers),
        cmocka_unit_test(test_format_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
