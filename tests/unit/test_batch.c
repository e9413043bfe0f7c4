/* Unit tests for exec/batch.c (values, batches, encodings) and exec/format.c
 * (CSV and JSON-lines decoders, timestamps, value printing, encoders). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "exec/batch.h"
#include "parser/parser.h"

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
        cmocka_unit_test(test_batch_decode_corruption),
        cmocka_unit_test(test_key_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
